//! `trap`, `nanosleep.u32` and `bar.warp.sync -1`, end to end (frontend → lower → encode →
//! cubin model): the SASS and the EIATTR records ptxas 13.1 writes for the same PTX on sm_90a.
//!
//! ptxas's output (probes under `-arch sm_90a`):
//! * `trap; ret;` → `BPT.TRAP 0x1`, then the `BRA self` padding: no `EXIT` (and no
//!   EIATTR_EXIT_INSTR_OFFSETS): BPT.TRAP ends the thread.
//! * `nanosleep.u32 1;` → `NANOSLEEP 0x1`; with a register, `NANOSLEEP R0`.
//! * `bar.warp.sync -1;` → `NOP`, the driver's placeholder, listed in
//!   EIATTR_COOP_GROUP_INSTR_OFFSETS with 0xffffffff in EIATTR_COOP_GROUP_MASK_REGIDS.
//!
//! * CTA barriers: `bar.sync`/`barrier.sync`/`bar.arrive` → `BAR.SYNC.DEFER_BLOCKING` /
//!   `BAR.ARV` with the id and thread count as immediates or registers (both registers: one
//!   register `count << 16 | id & 0xf` named twice); `bar.red.popc.u32` and
//!   `bar.red.{and,or}.pred` → `BAR.RED.… ; B2R.RESULT`. A register id reserves all 16
//!   barriers (EIATTR_NUM_BARRIERS 0x10).
//!
//! A partial or register mask, a guarded `bar.warp.sync` and a guarded `trap` are refused.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc_tests::{cuobjdump_sass, ptxas};

/// Compiles one kernel: its instruction texts (no padding) and its cubin function model.
fn compile(body: &str) -> Result<(Vec<String>, ptxc::emit::model::Function), String> {
    let text = format!(
        ".version 8.7\n.target sm_90a\n.address_size 64\n\
         .visible .entry k(.param .u64 a, .param .u32 n)\n{{\n\
         .reg .u32 %r<4>;\n.reg .pred %p;\n{body}\n}}\n"
    );
    let src = SourceFile::new("k.ptx".to_string(), text);
    let (encoded, built, _) = ptxc_tests::compile_pipeline(&src).map_err(|d| src.render(&d[0]))?;
    let lines = ptxc_tests::listing_lines(&encoded[0]);
    let func = built
        .cubin
        .functions
        .into_iter()
        .find(|g| g.name == "k")
        .expect("the kernel is in the cubin");
    Ok((lines, func))
}

#[test]
fn trap_is_bpt_trap_and_ends_the_thread() {
    let (sass, f) = compile("trap;\nret;").unwrap();
    assert_eq!(sass, ["LDC R1, c[0x0][0x28]", "BPT.TRAP 0x1"]);
    assert!(
        f.attrs.exit_offsets.is_empty(),
        "{:?}",
        f.attrs.exit_offsets
    );
    assert!(f.attrs.coop_group_offsets.is_empty());
}

#[test]
fn nanosleep_immediate_and_register() {
    let (sass, f) = compile("nanosleep.u32 1;\nret;").unwrap();
    assert_eq!(sass, ["LDC R1, c[0x0][0x28]", "NANOSLEEP 0x1", "EXIT"]);
    assert_eq!(f.attrs.exit_offsets, [0x20]);
    assert!(f.attrs.coop_group_offsets.is_empty());

    let (sass, _) = compile("ld.param.u32 %r1, [n];\nnanosleep.u32 %r1;\nret;").unwrap();
    assert_eq!(
        sass,
        [
            "LDC R1, c[0x0][0x28]",
            "LDC R0, c[0x0][0x218]",
            "NANOSLEEP R0",
            "EXIT"
        ]
    );
}

#[test]
fn bar_warp_sync_full_mask_is_a_recorded_nop() {
    let (sass, f) = compile("bar.warp.sync -1;\nret;").unwrap();
    assert_eq!(sass, ["LDC R1, c[0x0][0x28]", "NOP", "EXIT"]);
    assert_eq!(f.attrs.coop_group_offsets, [0x10]);
    assert_eq!(f.attrs.coop_group_mask_regids, [u32::MAX]);
    assert_eq!(f.attrs.exit_offsets, [0x20]);

    let (_, f) = compile("bar.warp.sync 0xffffffff;\nbar.warp.sync -1;\nret;").unwrap();
    assert_eq!(f.attrs.coop_group_offsets, [0x10, 0x20]);
    assert_eq!(f.attrs.coop_group_mask_regids, [u32::MAX, u32::MAX]);
}

#[test]
fn refused_forms_name_themselves() {
    for (body, want) in [
        (
            "ld.param.u32 %r1, [n];\nbar.warp.sync %r1;\nret;",
            "`bar.warp.sync` with a mask other than -1",
        ),
        ("bar.warp.sync 0xff;\nret;", "with a mask other than -1"),
        (
            "ld.param.u32 %r1, [n];\nsetp.eq.u32 %p, %r1, 0;\n@%p bar.warp.sync -1;\nret;",
            "guarded `bar.warp.sync`",
        ),
        (
            "ld.param.u32 %r1, [n];\nsetp.eq.u32 %p, %r1, 0;\n@%p trap;\nret;",
            "guarded `trap`",
        ),
    ] {
        let err = compile(body).expect_err(body);
        assert!(err.contains(want), "{body}: {err}");
    }
}

/// The barrier probe: every operand shape of `bar.sync`, `bar.arrive` and `bar.red`.
const BARS: &str = "mov.u32 %r2, %tid.x;
ld.param.u32 %r1, [n];
bar.sync 1, 64;
bar.sync %r1;
bar.sync %r1, 128;
bar.sync 2, %r1;
barrier.sync 3;
barrier.sync.aligned 4;
bar.arrive 5, 64;
bar.arrive %r1, %r1;
setp.lt.u32 %p, %r2, 7;
bar.red.popc.u32 %r3, 6, %p;
bar.red.popc.u32 %r0, 6, 96, !%p;
add.u32 %r3, %r3, %r0;
bar.red.or.pred %p, 7, %p;
selp.u32 %r0, 1, 0, %p;
add.u32 %r3, %r3, %r0;
bar.red.and.pred %p, %r1, !%p;
selp.u32 %r0, 2, 0, %p;
add.u32 %r3, %r3, %r0;
ld.param.u64 %rd, [a];
st.global.u32 [%rd], %r3;
ret;";

/// The barrier instructions of a listing: mnemonic and modifiers, then the operands with
/// registers and predicates renamed (`BAR.RED.POPC.DEFER_BLOCKING 0x6, 0x60, P`).
fn barrier_shapes<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    lines
        .filter(|l| l.starts_with("BAR") || l.starts_with("B2R"))
        .map(|l| {
            l.split(' ')
                .map(|w| {
                    let t = w.trim_end_matches(',');
                    let bare = t.trim_start_matches('!');
                    let renamed = if bare.len() > 1
                        && (bare.starts_with('R') || bare.starts_with('P'))
                        && bare[1..].bytes().all(|b| b.is_ascii_digit())
                    {
                        &bare[..1]
                    } else {
                        bare
                    };
                    format!("{renamed}{}", if t.len() < w.len() { "," } else { "" })
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn barriers_take_immediates_and_registers_as_ptxas_does() {
    let body = BARS;
    let (sass, f) = compile(&format!(".reg .u64 %rd;\n{body}")).unwrap();
    let got = barrier_shapes(sass.iter().map(String::as_str));
    assert_eq!(
        got,
        [
            "BAR.SYNC.DEFER_BLOCKING 0x1, 0x40",
            "BAR.SYNC.DEFER_BLOCKING R",
            "BAR.SYNC.DEFER_BLOCKING R, 0x80",
            "BAR.SYNC.DEFER_BLOCKING 0x2, R",
            "BAR.SYNC.DEFER_BLOCKING 0x3",
            "BAR.SYNC.DEFER_BLOCKING 0x4",
            "BAR.ARV 0x5, 0x40",
            "BAR.ARV R, R",
            "BAR.RED.POPC.DEFER_BLOCKING 0x6, P",
            "B2R.RESULT R",
            "BAR.RED.POPC.DEFER_BLOCKING 0x6, 0x60, P",
            "B2R.RESULT R",
            "BAR.RED.OR.DEFER_BLOCKING 0x7, P",
            "B2R.RESULT RZ, P",
            "BAR.RED.AND.DEFER_BLOCKING R, P",
            "B2R.RESULT RZ, P",
        ]
    );
    // The packed register of `bar.arrive %r, %r`.
    let arv = sass
        .iter()
        .position(|l| l.starts_with("BAR.ARV R"))
        .unwrap();
    assert!(sass[arv - 2].starts_with("SHF.L.U32") && sass[arv - 2].contains(", 0x10, RZ"));
    assert!(sass[arv - 1].starts_with("LOP3.LUT") && sass[arv - 1].contains(", 0xf, "));
    assert_eq!(
        f.attrs.num_barriers,
        Some(16),
        "a register id reserves all 16 barriers"
    );

    // ptxas makes the same barrier instructions of the same PTX.
    let text = format!(
        ".version 8.7\n.target sm_90a\n.address_size 64\n\
         .visible .entry k(.param .u64 a, .param .u32 n)\n{{\n\
         .reg .u32 %r<4>;\n.reg .pred %p;\n.reg .u64 %rd;\n{body}\n}}\n"
    );
    let dir = ptxc_tests::tempdir();
    let p = dir.join("bars.ptx");
    std::fs::write(&p, text).unwrap();
    if let Some(res) = ptxas(&p, &[]) {
        let cubin = res.cubin.expect("ptxas accepts the probe");
        let listing = cuobjdump_sass(&cubin).expect("cuobjdump");
        let theirs: Vec<&str> = listing
            .lines()
            .filter_map(|l| l.split("*/").nth(1))
            .map(|l| l.split(';').next().unwrap_or("").trim())
            .collect();
        assert_eq!(barrier_shapes(theirs.into_iter()), got);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn mbarrier_pending_count_reads_the_state_as_ptxas_does() {
    // ptxas: `0x100000 - ((state.hi >> 11) & 0xfffff)`.
    let (sass, _) = compile(
        ".reg .u64 %rd;\nld.param.u64 %rd, [a];\n\
         mbarrier.pending_count.b64 %r1, %rd;\nst.global.u32 [%rd], %r1;\nret;",
    )
    .unwrap();
    let tail: Vec<&str> = sass
        .iter()
        .map(String::as_str)
        .skip_while(|l| !l.starts_with("SHF"))
        .take(3)
        .collect();
    assert_eq!(
        tail,
        [
            "SHF.R.U32.HI R0, RZ, 0xb, R3",
            "LOP3.LUT R0, R0, 0xfffff, RZ, 0x40, !PT",
            "IADD3 R0, -R0, 0x100000, RZ",
        ],
        "{sass:?}"
    );
}

/// `setmaxnreg` in a kernel with `.maxnreg 128` (probe `tests/sass-probes/ptx/setmaxnreg.ptx`):
/// ptxas 13.1 turns `inc 232` into the loop `WARPSYNC.ALL; USETMAXREG.TRY_ALLOC.CTAPOOL UP0,
/// 0xe8; PLOP3.LUT P0, PT, PT, PT, UP0, 0x80, 0x0; @!P0 BRA back` and `dec 40` into
/// `WARPSYNC.ALL; USETMAXREG.DEALLOC.CTAPOOL 0x28`, writes EIATTR_REG_RECONFIG and reports the
/// `.maxnreg` value as the register count. Without `.maxnreg` it ignores `setmaxnreg`
/// (warning C7508), and so does ptxc.
#[test]
fn setmaxnreg_recipes_match_ptxas() {
    let body = |maxnreg: &str| {
        format!(
            ".version 8.7\n.target sm_90a\n.address_size 64\n\
             .visible .entry k(.param .u64 pout) .maxntid 128 {maxnreg}\n{{\n\
             .reg .u64 %rd<8>; .reg .b32 %r<8>; .reg .pred %p<3>;\n\
             ld.param.u64 %rd1, [pout]; mov.u32 %r1, %tid.x; setp.lt.u32 %p1, %r1, 64;\n\
             @%p1 bra L1;\nsetmaxnreg.inc.sync.aligned.u32 232;\n\
             st.global.u32 [%rd1], %r1;\nbra L2;\n\
             L1:\nsetmaxnreg.dec.sync.aligned.u32 40;\nst.global.u32 [%rd1+4], %r1;\n\
             L2:\nret;\n}}\n"
        )
    };
    let expect = [
        "WARPSYNC.ALL",
        "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8",
        "PLOP3.LUT P0, PT, PT, PT, UP0, 0x80, 0x0",
        "@!P0 BRA",
        "WARPSYNC.ALL",
        "USETMAXREG.DEALLOC.CTAPOOL 0x28",
    ];
    let part = |lines: &[String]| -> Vec<String> {
        // The loop's branch is the one right after the PLOP3.
        lines
            .iter()
            .enumerate()
            .filter(|(k, l)| {
                l.starts_with("WARPSYNC")
                    || l.starts_with("USETMAXREG")
                    || l.starts_with("PLOP3")
                    || (l.starts_with("@!P0 BRA") && *k > 0 && lines[k - 1].starts_with("PLOP3"))
            })
            .map(|(_, l)| {
                if l.starts_with("@!P0 BRA") {
                    "@!P0 BRA".to_string()
                } else {
                    l.clone()
                }
            })
            .collect()
    };
    for (maxnreg, with) in [(".maxnreg 128", true), ("", false)] {
        let text = body(maxnreg);
        let src = SourceFile::new("k.ptx".to_string(), text.clone());
        let checked = driver::frontend(&src, Arch::SM90A).unwrap();
        let opts = ptxc::passes::Options {
            verify: true,
            ..ptxc::passes::Options::new()
        };
        let (lowered, _) = driver::lower(&checked, &opts).unwrap();
        let encoded = driver::encode(&lowered).unwrap();
        let lines = ptxc_tests::listing_lines(&encoded[0]);
        let (built, _) = driver::cubin(&checked, &lowered, &encoded, &Default::default()).unwrap();
        let f = &built.cubin.functions[0];
        let ours = part(&lines);
        if with {
            assert_eq!(ours, expect, "{}", lines.join("\n"));
            assert!(f.attrs.reg_reconfig);
            assert_eq!(f.registers, 128);
            // The instruction after the DEALLOC waits on its scoreboard.
            let k = encoded[0]
                .instrs
                .iter()
                .position(|i| i.mnemonic == "USETMAXREG" && i.mods.contains(&"DEALLOC"))
                .expect("DEALLOC");
            let sb = encoded[0].instrs[k].ctrl.wbar;
            assert!(sb < 6, "DEALLOC sets a scoreboard");
            assert!(
                encoded[0].instrs[k + 1].ctrl.wait >> sb & 1 == 1,
                "the next instruction waits for the DEALLOC"
            );
        } else {
            assert!(
                ours.iter().all(|l| !l.starts_with("USETMAXREG")),
                "{lines:?}"
            );
            assert!(!f.attrs.reg_reconfig);
        }
        // The same with live ptxas.
        let dir = ptxc_tests::tempdir();
        let path = dir.join("k.ptx");
        std::fs::write(&path, &text).unwrap();
        if let Some(cubin) = ptxas(&path, &[]).and_then(|r| r.cubin)
            && let Some(sass) = cuobjdump_sass(&cubin)
        {
            let theirs: Vec<String> = sass
                .lines()
                .filter_map(|l| {
                    let rest = l.trim().strip_prefix("/*")?;
                    let (addr, body) = rest.split_once("*/")?;
                    addr.chars()
                        .all(|c| c.is_ascii_hexdigit())
                        .then(|| body.split(';').next().unwrap_or("").trim().to_string())
                })
                .collect();
            let theirs = part(&theirs);
            if with {
                assert_eq!(theirs, expect, "ptxas");
            } else {
                assert!(theirs.is_empty(), "ptxas: {theirs:?}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
