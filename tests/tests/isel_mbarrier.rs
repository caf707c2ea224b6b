//! mbarrier and bulk-copy shapes lowered as ptxas 13.1 lowers them on sm_90a, end to end
//! (frontend → lower → encode → cubin model): the mbarrier-relevant instruction sequence of
//! each kernel equals ptxas's for the same PTX (checked against ptxas itself when the
//! reference tools are present), and the EIATTR_MBARRIER_INSTR_OFFSETS kinds follow.
//!
//! * `mbarrier.try_wait[.parity]… p, [bar], s, hint` (09_mbarrier/try_wait_suspend):
//!   `SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R0+URZ], R; @!P0 NANOSLEEP.SYNCS hint;
//!   @!P0 SYNCS.PHASECHK.TRANS64 P0, [R0+URZ], R`, the address in a vector register, an
//!   entry on the TRYWAIT only.
//! * `mbarrier.arrive` on a generic address `cvta.shared.u64` made, and `mapa.u64` of it
//!   (09_mbarrier/arrive_generic, arrive_remote_u64addr): the low word, in uniform registers.
//! * `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes` with the size in a
//!   register: `USHF.R.U32.HI UR, URZ, 0x4, UR; UPRMT UR, UR, 0x5410, URZ` (a warp-uniform
//!   size), or `SHF.R.U32.HI; PRMT` and an `R2UR` in the ELECT loop (a per-thread size); a
//!   register holding a constant (`mov.u32 %r7, 1024`) is the constant (`UMOV UR, 0x40`).

use ptxc::diag::SourceFile;
use ptxc_tests::{cuobjdump_sass, ptxas};

const HEAD: &str = ".version 8.8\n.target sm_90a\n.address_size 64\n\
    .shared .align 8 .b64 bar[2];\n.shared .align 128 .b8 buf[1024];\n";

fn kernel(body: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 p, .param .u32 n, .param .u64 phase)\n{{\n\
         .reg .b64 %rd<12>;\n.reg .b32 %r<12>;\n.reg .pred %p<4>;\n\
         ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nld.param.u64 %rd9, [phase];\n\
         cvta.to.global.u64 %rd2, %rd1;\n{body}\nret;\n}}\n"
    )
}

/// ptxc's instruction texts (no padding) and mbarrier entry kinds of the kernel.
fn compile(text: &str) -> Result<(Vec<String>, Vec<u8>), String> {
    let src = SourceFile::new("k.ptx".to_string(), text.to_string());
    let (encoded, built, _) = ptxc_tests::compile_pipeline(&src).map_err(|d| src.render(&d[0]))?;
    let lines = ptxc_tests::listing_lines(&encoded[0]);
    let f = built
        .cubin
        .functions
        .into_iter()
        .find(|g| g.name == "k")
        .expect("the kernel is in the cubin");
    let kinds = f.attrs.mbarrier_instrs.iter().map(|m| m.kind).collect();
    Ok((lines, kinds))
}

/// ptxas's instruction texts for the same PTX (`None` without the reference tools).
fn ptxas_lines(text: &str, name: &str) -> Option<Vec<String>> {
    let dir = ptxc_tests::tempdir();
    let p = dir.join(format!("{name}.ptx"));
    std::fs::write(&p, text).unwrap();
    let res = ptxas(&p, &[]);
    let _ = std::fs::remove_dir_all(&dir);
    let cubin = res?.cubin.expect("ptxas accepts the kernel");
    let listing = cuobjdump_sass(&cubin)?;
    Some(
        listing
            .lines()
            .filter_map(|l| l.split("*/").nth(1))
            .map(|l| l.split(';').next().unwrap_or("").trim().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
    )
}

/// The instructions `keep` selects, as `mnemonic.mods` plus the operands `operands` picks
/// (register numbers differ between ptxc and ptxas; the guard is kept).
fn shape(lines: &[String], keep: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| {
            let (guard, rest) = match l.strip_prefix('@') {
                Some(r) => {
                    let (g, rest) = r.split_once(' ')?;
                    (format!("@{} ", g.trim_end_matches(char::is_numeric)), rest)
                }
                None => (String::new(), l.as_str()),
            };
            let (mn, ops) = rest.trim().split_once(' ').unwrap_or((rest.trim(), ""));
            let base = mn.split('.').next().unwrap_or(mn);
            if !keep.contains(&base) {
                return None;
            }
            // Register numbers dropped (`R4` → `R`, `[UR6+0x8]` → `[UR+0x8]`), immediates kept.
            let ops: Vec<String> = ops
                .split(", ")
                .filter(|o| !o.is_empty())
                .map(|o| {
                    let mut out = String::new();
                    let mut in_reg = false;
                    for c in o.trim().chars() {
                        if c.is_ascii_digit() && in_reg {
                            continue;
                        }
                        in_reg = matches!(c, 'R' | 'P');
                        out.push(c);
                    }
                    out
                })
                .collect();
            Some(
                format!("{guard}{mn} {}", ops.join(", "))
                    .trim_end()
                    .to_string(),
            )
        })
        .collect()
}

fn check(name: &str, body: &str, keep: &[&str], want: &[&str], kinds: &[u8]) {
    let text = kernel(body);
    let (lines, got_kinds) = compile(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let got = shape(&lines, keep);
    assert_eq!(got, want, "{name}: ptxc\n{}", lines.join("\n"));
    assert_eq!(got_kinds, kinds, "{name}: mbarrier entry kinds");
    if let Some(theirs) = ptxas_lines(&text, name) {
        assert_eq!(
            shape(&theirs, keep),
            want,
            "{name}: ptxas\n{}",
            theirs.join("\n")
        );
    }
}

#[test]
fn try_wait_with_a_suspend_hint_sleeps_and_checks_again() {
    let keep = ["SYNCS", "NANOSLEEP", "SEL"];
    check(
        "suspend_imm",
        "mov.u32 %r2, bar;\n\
         mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], %r1, 500;\n\
         selp.u32 %r3, 1, 0, %p1;\nst.global.u32 [%rd2], %r3;",
        &keep,
        &[
            "SYNCS.PHASECHK.TRANS64.TRYWAIT P, [R+URZ], R",
            "@!P NANOSLEEP.SYNCS 0x1f4",
            "@!P SYNCS.PHASECHK.TRANS64 P, [R+URZ], R",
            "SEL R, RZ, 0x1, !P",
        ],
        &[0xa],
    );
    // A state (not a parity), `[bar+8]` and the hint in a register.
    check(
        "suspend_reg",
        "mbarrier.try_wait.shared::cta.b64 %p1, [bar+8], %rd9, %r1;\n\
         selp.u32 %r3, 1, 0, %p1;\nst.global.u32 [%rd2], %r3;",
        &keep,
        &[
            "SYNCS.PHASECHK.TRANS64.TRYWAIT P, [R+URZ+0x8], R",
            "@!P NANOSLEEP.SYNCS R",
            "@!P SYNCS.PHASECHK.TRANS64 P, [R+URZ+0x8], R",
            "SEL R, RZ, 0x1, !P",
        ],
        &[9],
    );
}

#[test]
fn arrive_on_a_generic_address_uses_its_low_word() {
    let keep = ["SYNCS", "ULEA", "UPRMT", "MEMBAR", "ERRBAR", "CGAERRBAR"];
    check(
        "arrive_generic",
        "mov.u64 %rd5, bar;\ncvta.shared.u64 %rd6, %rd5;\n\
         mbarrier.arrive.b64 %rd3, [%rd6];\nst.global.u64 [%rd2], %rd3;",
        &keep,
        &[
            "ULEA UR, UR, UR, 0x18",
            "SYNCS.ARRIVE.TRANS64.A1T0 R, [UR], RZ",
        ],
        &[1],
    );
    check(
        "arrive_remote_u64",
        "mov.u64 %rd5, bar;\ncvta.shared.u64 %rd6, %rd5;\nmapa.u64 %rd7, %rd6, %r1;\n\
         mbarrier.arrive.release.cluster.b64 %rd3, [%rd7];\nst.global.u64 [%rd2], %rd3;",
        &keep,
        &[
            "ULEA UR, UR, UR, 0x18",
            "UPRMT UR, UR, 0x654, UR",
            "MEMBAR.ALL.CTA",
            "MEMBAR.ALL.GPU",
            "ERRBAR",
            "CGAERRBAR",
            "SYNCS.ARRIVE.TRANS64.A1T0 R, [UR], RZ",
        ],
        &[1],
    );
}

#[test]
fn bulk_copy_of_a_register_size_counts_16_byte_units() {
    let keep = [
        "USHF", "UPRMT", "SHF", "PRMT", "UMOV", "UBLKCP", "ELECT", "R2UR",
    ];
    // A warp-uniform size: the uniform datapath.
    let (lines, kinds) = compile(&kernel(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], %r1, [bar];",
    ))
    .unwrap();
    let got = shape(&lines, &keep);
    let units = [
        "USHF.R.U32.HI UR, URZ, 0x4, UR",
        "UPRMT UR, UR, 0x5410, URZ",
    ];
    let at = got
        .windows(2)
        .position(|w| w == units)
        .unwrap_or_else(|| panic!("{got:?}"));
    let copy = got
        .iter()
        .position(|l| l.starts_with("UBLKCP.S.G"))
        .unwrap();
    let elect = got.iter().position(|l| l.contains("ELECT")).unwrap();
    assert!(at < elect && elect < copy, "{got:?}");
    assert!(kinds.is_empty(), "a bulk copy has no mbarrier entry");
    let text = kernel(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], %r1, [bar];",
    );
    if let Some(theirs) = ptxas_lines(&text, "bulk_uniform") {
        let t = shape(&theirs, &keep);
        assert!(t.windows(2).any(|w| w == units), "{t:?}");
    }

    // A per-thread size: vector SHF/PRMT, then R2UR in the ELECT loop.
    let body = "mov.u32 %r2, %tid.x;\nshl.b32 %r3, %r2, 4;\n\
         cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], %r3, [bar];";
    let (lines, _) = compile(&kernel(body)).unwrap();
    let keep = ["SHF", "PRMT", "ELECT", "R2UR", "UBLKCP"];
    let want = [
        "SHF.R.U32.HI R, RZ, 0x4, R",
        "PRMT R, R, 0x5410, RZ",
        "@P ELECT P, URZ, PT",
        "@P R2UR UR, R",
        "UBLKCP.S.G [UR], [UR], UR",
    ];
    let got: Vec<String> = shape(&lines, &keep)
        .into_iter()
        .filter(|l| !l.starts_with("SHF.L"))
        .collect();
    assert_eq!(got, want, "{}", lines.join("\n"));
    if let Some(theirs) = ptxas_lines(&kernel(body), "bulk_thread") {
        let t: Vec<String> = shape(&theirs, &keep);
        assert_eq!(t, want);
    }

    // A register holding a constant is the constant.
    let body = "mov.u32 %r7, 1024;\n\
         cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], %r7, [bar];";
    let (lines, _) = compile(&kernel(body)).unwrap();
    let got = shape(&lines, &["UMOV", "USHF", "UBLKCP"]);
    assert!(got.iter().any(|l| l == "UMOV UR, 0x40"), "{got:?}");
    assert!(!got.iter().any(|l| l.starts_with("USHF")), "{got:?}");
}

/// A loop-invariant register address of a `try_wait` loop (`mov.u32 %r12, bar` before the
/// loop) is warp-uniform: ptxc assumes the loop header's PHI is the value entering it and
/// checks that once the loop is lowered; when the loop changes the address (a ring of
/// mbarriers, as in pyptx `fa_ws_pingpong`), the function is lowered again with the address per
/// thread (`[R+URZ]`).
#[test]
fn a_loop_invariant_register_address_is_uniform() {
    let body = "mov.u32 %r4, bar;\nLOOP:\n\
         mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], %r1;\n\
         @!%p1 bra LOOP;\nst.global.u32 [%rd2], 1;";
    let (lines, kinds) = compile(&kernel(body)).unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR")),
        "{}",
        lines.join("\n")
    );
    // One record per copy of the wait: `peel-wait` peels the loop, as ptxas does.
    assert_eq!(kinds, [0xa, 0xa]);
    let body = "mov.u32 %r4, bar;\nLOOP:\n\
         mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], %r1;\n\
         add.u32 %r4, %r4, 8;\n@!%p1 bra LOOP;\nst.global.u32 [%rd2], 1;";
    let (lines, _) = compile(&kernel(body)).unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R") && l.contains("+URZ]")),
        "{}",
        lines.join("\n")
    );
}

/// `mbarrier.init` under a per-thread predicate — a guard, or a branch around a block of it —
/// runs once for the warp under a uniform guard made by `VOTEU`, with no branch and no
/// convergence barrier, as ptxas does (docs/passes/lowering.md, "Uniform predication"); the
/// `VOTEU`s are listed in EIATTR_INT_WARP_WIDE_INSTR_OFFSETS.
#[test]
fn init_under_a_thread_predicate_takes_a_voteu_guard() {
    let cases = [
        (
            "init_guarded",
            "mov.u32 %r2, %tid.x;\nsetp.eq.u32 %p1, %r2, 0;\n\
             @%p1 mbarrier.init.shared::cta.b64 [bar], 1;\nbar.sync 0;",
        ),
        (
            "init_branched",
            "mov.u32 %r2, %tid.x;\nsetp.ne.u32 %p1, %r2, 0;\n@%p1 bra SKIP;\n\
             mov.u32 %r3, bar;\nmbarrier.init.shared::cta.b64 [%r3], 1;\n\
             fence.mbarrier_init.release.cluster;\nSKIP:\nbar.sync 0;",
        ),
    ];
    for (name, body) in cases {
        let text = kernel(body);
        let src = SourceFile::new("k.ptx".to_string(), text.clone());
        let (encoded, built, _) = ptxc_tests::compile_pipeline(&src)
            .unwrap_or_else(|d| panic!("{name}: {}", src.render(&d[0])));
        let ours = ptxc_tests::listing_lines(&encoded[0]);
        let f = built
            .cubin
            .functions
            .iter()
            .find(|g| g.name == "k")
            .unwrap();
        let votes: Vec<u32> = ours
            .iter()
            .enumerate()
            .filter(|(_, l)| l.starts_with("VOTEU."))
            .map(|(i, _)| 16 * i as u32)
            .collect();
        assert_eq!(
            f.attrs.warp_wide_offsets, votes,
            "{name}: the VOTEUs are recorded"
        );
        let mut listings = vec![("ptxc", ours)];
        listings.extend(ptxas_lines(&text, name).map(|l| ("ptxas", l)));
        for (who, lines) in listings {
            let has = |p: &dyn Fn(&String) -> bool| lines.iter().any(p);
            assert!(
                has(&|l| l.starts_with("VOTEU."))
                    && has(&|l| l.starts_with("@")
                        && l.contains("UP")
                        && l.contains("SYNCS.EXCH.64"))
                    && !has(&|l| l.starts_with("BSSY")),
                "{name}: {who}\n{}",
                lines.join("\n")
            );
        }
    }
}
