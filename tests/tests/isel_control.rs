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
        let (encoded, built, _) = ptxc_tests::compile_pipeline(&src).unwrap();
        let lines = ptxc_tests::listing_lines(&encoded[0]);
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

/// A warp-specialized kernel (`.maxnreg 168`, 256 threads): the producer warpgroup
/// `setmaxnreg.dec 40` and works on a few values, the consumer warpgroup `setmaxnreg.inc 232`
/// and runs a wgmma with a 64-register accumulator. ptxas 13.1 compiles it with the
/// accumulator at R24–R87, only R0–R5 after the `dec`, and reports the launch allocation,
/// "Used 168 registers". ptxc gives each region its own limit (`passes/regalloc/limits.rs`):
/// it compiles, reports 168, and uses no register of 38 or more after the `dec`. With the
/// wgmma after the `dec` instead, ptxas ignores `setmaxnreg` (info C7507) and ptxc refuses
/// clearly.
fn warp_specialized(maxnreg: u32, wgmma_after_dec: bool) -> String {
    let acc: Vec<String> = (0..64).map(|i| format!("%f{i}")).collect();
    let wgmma = format!(
        "wgmma.fence.sync.aligned;\n\
         wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{{}}}, %rd2, %rd3, 0, 1, 1, 0, 0;\n\
         wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n\
         st.global.v4.f32 [%rd1+16], {{%f0, %f1, %f2, %f3}};\n\
         st.global.v4.f32 [%rd1+32], {{%f60, %f61, %f62, %f63}};\n",
        acc.join(", ")
    );
    let producer = "ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd1+64];\n\
                    add.u32 %r2, %r2, %r1;\nmul.lo.u32 %r3, %r3, %r1;\n\
                    st.global.v4.u32 [%rd1+64], {%r2, %r3, %r4, %r5};\n";
    let (after_dec, after_inc) = if wgmma_after_dec {
        (wgmma.as_str(), producer)
    } else {
        (producer, wgmma.as_str())
    };
    format!(
        ".version 8.7\n.target sm_90a\n.address_size 64\n\
         .visible .entry ws(.param .u64 p, .param .u64 da, .param .u64 db) .maxntid 256 \
         .maxnreg {maxnreg}\n{{\n\
         .reg .b64 %rd<4>; .reg .b32 %r<8>; .reg .f32 %f<64>; .reg .pred %p<2>;\n\
         ld.param.u64 %rd1, [p]; ld.param.u64 %rd2, [da]; ld.param.u64 %rd3, [db];\n\
         mov.u32 %r1, %tid.x; setp.lt.u32 %p1, %r1, 128;\n@%p1 bra CONSUMER;\n\
         setmaxnreg.dec.sync.aligned.u32 40;\n{after_dec}bra DONE;\n\
         CONSUMER:\nsetmaxnreg.inc.sync.aligned.u32 232;\n{after_inc}\
         DONE:\nret;\n}}\n"
    )
}

/// The general registers an instruction text names (`R24`, not `RZ`).
fn gprs(line: &str) -> Vec<u32> {
    line.split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|w| w.strip_prefix('R')?.parse().ok())
        .collect()
}

/// The instructions after the `USETMAXREG.DEALLOC` up to the end of its region (the next
/// `EXIT`, `BRA` or `USETMAXREG`).
fn dec_region(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .skip_while(|l| !l.starts_with("USETMAXREG.DEALLOC"))
        .skip(1)
        .take_while(|l| !(l.contains("EXIT") || l.contains("BRA") || l.contains("USETMAXREG")))
        .cloned()
        .collect()
}

#[test]
fn setmaxnreg_regions_have_their_own_register_limits() {
    let compile = |text: &str| {
        let src = SourceFile::new("ws.ptx".to_string(), text.to_string());
        let checked = driver::frontend(&src, Arch::SM90A).unwrap();
        let opts = ptxc::passes::Options {
            verify: true,
            ..ptxc::passes::Options::new()
        };
        let (lowered, _) = driver::lower(&checked, &opts).map_err(|d| format!("{d:?}"))?;
        let encoded = driver::encode(&lowered).map_err(|d| format!("{d:?}"))?;
        let lines = ptxc_tests::listing_lines(&encoded[0]);
        let (built, _) = driver::cubin(&checked, &lowered, &encoded, &Default::default())
            .map_err(|d| format!("{d:?}"))?;
        Ok::<_, String>((lines, built.cubin.functions[0].clone()))
    };
    let text = warp_specialized(168, false);
    let (lines, f) = compile(&text).expect("the warp-specialized kernel compiles");
    assert_eq!(
        f.registers, 168,
        "the launch allocation, as ptxas reports it"
    );
    assert!(f.attrs.reg_reconfig);
    assert_eq!(f.frame_size, 0, "no spill: {}", lines.join("\n"));
    let hgmma = lines
        .iter()
        .find(|l| l.starts_with("HGMMA"))
        .expect("HGMMA");
    let acc = gprs(hgmma)[0];
    assert!(acc + 64 <= 230, "the accumulator fits under 232: {hgmma}");
    let dec = dec_region(&lines);
    assert!(dec.iter().any(|l| l.starts_with("STG")), "{dec:?}");
    for l in &dec {
        assert!(gprs(l).iter().all(|&r| r < 38), "after `dec 40`: {l}");
    }
    // ptxas: the same limits, and "Used 168 registers".
    let dir = ptxc_tests::tempdir();
    let path = dir.join("ws.ptx");
    std::fs::write(&path, &text).unwrap();
    if let Some(r) = ptxas(&path, &["-v"]) {
        assert!(r.log.contains("Used 168 registers"), "{}", r.log);
        let sass = cuobjdump_sass(&r.cubin.expect("ptxas compiles it")).unwrap();
        let theirs: Vec<String> = sass
            .lines()
            .filter_map(|l| {
                let (_, body) = l.trim().strip_prefix("/*")?.split_once("*/")?;
                Some(body.split(';').next().unwrap_or("").trim().to_string())
            })
            .collect();
        let dec = dec_region(&theirs);
        assert!(dec.iter().any(|l| l.starts_with("STG")), "ptxas: {dec:?}");
        assert!(
            dec.iter().all(|l| gprs(l).iter().all(|&r| r < 38)),
            "ptxas: {dec:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    // The accumulator after the `dec`: a clear refusal.
    let err = compile(&warp_specialized(168, true)).unwrap_err();
    assert!(
        err.contains("ptxc cannot allocate a 64-register value")
            && err.contains("leaves 40 registers"),
        "{err}"
    );
    // pyptx `fa_ws_pingpong` (`.maxnreg 168`, producer `dec 40`, consumers `inc 232` with
    // 64-register accumulators, `dec 120` between rounds): compiles, ptxas's count.
    let path = ptxc_tests::shared_dir().join("corpus/pyptx/pyptx__fa_ws_pingpong_sm90a.ptx");
    let (_, f) = compile(&std::fs::read_to_string(path).unwrap()).expect("fa_ws_pingpong");
    assert_eq!(f.registers, 168);
    assert!(f.attrs.reg_reconfig);
}

/// A kernel that calls the driver's `vprintf` with a format string and a local argument buffer,
/// keeping `%r1` live across the call (the pattern nvcc emits for `printf`).
const PRINTF: &str = ".version 8.7
.target sm_90a
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf (.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.global .align 1 .b8 $str[4] = {37, 100, 10, 0};
.visible .entry pf(.param .u64 out)
{
	.local .align 8 .b8 __local_depot0[8];
	.reg .b64 %SP; .reg .b64 %SPL;
	.reg .b32 %r<4>; .reg .b64 %rd<8>;
	mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	add.u64 %rd2, %SP, 0;
	add.u64 %rd3, %SPL, 0;
	st.local.u32 [%rd3], %r1;
	mov.u64 %rd4, $str;
	cvta.global.u64 %rd5, %rd4;
	{
	.param .b64 param0; st.param.b64 [param0+0], %rd5;
	.param .b64 param1; st.param.b64 [param1+0], %rd2;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	ld.param.b32 %r2, [retval0+0];
	}
	cvta.to.global.u64 %rd6, %rd1;
	add.u32 %r3, %r2, %r1;
	st.global.u32 [%rd6], %r3;
	ret;
}
";

/// Registers written by an instruction line (its first operand), words of `.64` included.
fn written(line: &str) -> Vec<String> {
    let Some((op, rest)) = line.split_once(' ') else {
        return Vec::new();
    };
    let first = rest.split(',').next().unwrap_or("").trim();
    let Some(n) = first.strip_prefix('R').and_then(|n| n.parse::<u32>().ok()) else {
        return Vec::new();
    };
    let wide = op.contains(".64") || op.starts_with("IMAD.WIDE") || op.starts_with("LEPC");
    let mut v = vec![format!("R{n}")];
    if wide {
        v.push(format!("R{}", n + 1));
    }
    v
}

/// ptxas's calling convention for a call out of the module (`vprintf`, `__assertfail`), as
/// ptxc implements it (`lower/isel/call.rs`, `docs/passes/lowering.md` "Calls"): the callee's
/// address from a relocated `.nv.constant4` slot, arguments in R4:R5 and R6:R7, the return
/// address in R20:R21 (`LEPC`), `CALL.ABS.NOINC`; the result in R4; a value live across the
/// call outside the caller-saved registers; EIATTR_EXTERNS, EIATTR_SYSCALL_OFFSETS (the CALL)
/// and a `.nv.callgraph` edge. ptxas's own code for the same PTX has the same shape.
#[test]
fn external_calls_follow_ptxas_abi() {
    let src = SourceFile::new("pf.ptx".to_string(), PRINTF.to_string());
    let (encoded, built, _) = ptxc_tests::compile_pipeline(&src)
        .map_err(|d| src.render(&d[0]))
        .unwrap();
    let lines = ptxc_tests::listing_lines(&encoded[0]);
    let call = lines
        .iter()
        .position(|l| l == "CALL.ABS.NOINC R2" || l.starts_with("CALL.ABS.NOINC R"))
        .unwrap_or_else(|| panic!("no CALL.ABS.NOINC in {lines:#?}"));
    assert!(
        lines[call - 1].starts_with("LEPC R20, "),
        "{}",
        lines[call - 1]
    );
    // The LEPC's return address is the instruction after the CALL.
    let ret = format!("LEPC R20, {:#x}", (call + 1) * 16);
    assert_eq!(lines[call - 1], ret);
    let target = lines[call].rsplit(' ').next().unwrap().to_string();
    let loads = lines[..call]
        .iter()
        .find(|l| l.starts_with(&format!("LDC.64 {target}, c[0x4][R")))
        .unwrap_or_else(|| panic!("the callee's address is not loaded from c[0x4]: {lines:#?}"));
    assert!(loads.ends_with(']'), "{loads}");
    // Both arguments were written into R4–R7 before the call.
    let before: Vec<String> = lines[..call].iter().flat_map(|l| written(l)).collect();
    for r in ["R4", "R5", "R6", "R7"] {
        assert!(before.contains(&r.to_string()), "{r} not set: {lines:#?}");
    }
    // The output address is loaded again right after the call, as ptxas does (`LDC.64 R2,
    // c[0x0][0x210]`; `passes/remat_calls.rs`), not kept across it. The result is read from
    // R4, and `%r1` (the thread index) from a register the callee keeps (R16 and up).
    assert!(
        lines[call + 1].starts_with("LDC.64 R") && lines[call + 1].ends_with("c[0x0][0x210]"),
        "{}",
        lines[call + 1]
    );
    let after = &lines[call + 2];
    assert!(
        after.starts_with("IADD3 ") && after.contains("R4"),
        "{after}"
    );
    let s2r = lines.iter().find(|l| l.starts_with("S2R ")).unwrap();
    let tid: u32 = written(s2r)[0][1..].parse().unwrap();
    assert!(tid >= 16 && tid != 20 && tid != 21, "{s2r}");

    let f = &built.cubin.functions[0];
    assert_eq!(f.attrs.externs, ["vprintf"]);
    assert_eq!(f.callees, ["vprintf"]);
    assert_eq!(f.attrs.syscall_offsets, [(call * 16) as u32]);
    assert_eq!(f.resolved, ptxc::emit::model::Resolved::NamesOnly);
    assert!(
        built
            .cubin
            .externs
            .iter()
            .any(|e| e.name == "vprintf" && e.kind == ptxc::emit::model::ExternKind::Function)
    );
    // `.nv.constant4`: vprintf (declared first) at slot 0, `$str` at slot 8, both R_CUDA_64.
    let bank4 = built.cubin.bank4.as_ref().expect(".nv.constant4");
    let relocs: Vec<(u64, &str, u32)> = bank4
        .relocs
        .iter()
        .map(|r| (r.offset, r.symbol.as_str(), r.ty))
        .collect();
    assert!(
        relocs.contains(&(0, "vprintf", runtime_abi::reloc::R_CUDA_64)),
        "{relocs:?}"
    );
    assert!(
        relocs.contains(&(8, "$str", runtime_abi::reloc::R_CUDA_64)),
        "{relocs:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "MOV R0, 0x0" || l.ends_with(", 0x0"))
    );

    // ptxas's code for the same PTX: the same convention.
    let dir = ptxc_tests::tempdir();
    let path = dir.join("pf.ptx");
    std::fs::write(&path, PRINTF).unwrap();
    let Some(res) = ptxas(&path, &[]) else { return };
    let sass = cuobjdump_sass(res.cubin.as_ref().expect("ptxas compiles it")).unwrap();
    let theirs: Vec<String> = sass
        .lines()
        .filter_map(|l| l.split_once("*/").map(|(_, t)| t))
        .map(|t| t.split(';').next().unwrap_or("").trim().to_string())
        .filter(|t| !t.is_empty() && !t.starts_with("/*"))
        .collect();
    let call = theirs
        .iter()
        .position(|l| l.starts_with("CALL.ABS.NOINC R"))
        .expect("ptxas calls through a register");
    assert!(theirs[call - 1].starts_with("LEPC R20, "));
    let before: Vec<String> = theirs[..call].iter().flat_map(|l| written(l)).collect();
    for r in ["R4", "R5", "R6", "R7"] {
        assert!(
            before.contains(&r.to_string()),
            "ptxas: {r} not set: {theirs:#?}"
        );
    }
    assert!(
        theirs
            .iter()
            .any(|l| l.starts_with("LDC.64 R") && l.contains("c[0x4][R"))
    );
}

#[test]
fn external_call_limits_name_themselves() {
    // A guarded call and a predicate live across a call are refused with their reason.
    let guarded = ".version 8.7
.target sm_90a
.address_size 64
.extern .func __assertfail (.param .b64 a);
.visible .entry k(.param .u64 p)
{
	.reg .u64 %rd; .reg .pred %p;
	ld.param.u64 %rd, [p];
	setp.eq.u64 %p, %rd, 0;
	{
	.param .b64 param0; st.param.b64 [param0+0], %rd;
	@%p call.uni __assertfail, (param0);
	}
	ret;
}
";
    let src = SourceFile::new("g.ptx".to_string(), guarded.to_string());
    let err = ptxc_tests::compile_pipeline(&src)
        .map(|_| ())
        .map_err(|d| src.render(&d[0]))
        .expect_err("guarded call");
    assert!(err.contains("guarded call of `__assertfail`"), "{err}");

    // A predicate live across a call (ptxas saves it with P2R; ptxc does not yet).
    let pred = guarded.replace(
        "@%p call.uni __assertfail, (param0);\n\t}\n\tret;",
        "call.uni __assertfail, (param0);\n\t}\n\t@%p st.global.u64 [%rd], %rd;\n\tret;",
    );
    assert_ne!(pred, guarded);
    let src = SourceFile::new("p.ptx".to_string(), pred);
    let err = ptxc_tests::compile_pipeline(&src)
        .map(|_| ())
        .map_err(|d| src.render(&d[0]))
        .expect_err("predicate across a call");
    assert!(
        err.contains("ptxc cannot keep a predicate live across a call yet")
            && !err.contains("internal error"),
        "{err}"
    );
}

/// ptxas's clobber set, measured on the probes of `tests/sass-probes/ptx/calls.ptx` (values
/// live across a call to `vprintf`): every register ptxas reads after the `CALL` before writing
/// it (a value that lived across the call) is one ptxc's allocator also keeps across calls
/// ([`ptxc::passes::regalloc::call_clobbers`]), except the result (R4, R5), the stack pointer
/// R1, and R2, which ptxas keeps across the call but ptxc conservatively does not.
#[test]
fn ptxas_keeps_values_across_calls_only_where_ptxc_may() {
    use ptxc::mir::RegClass;
    use ptxc::target::sm90a::{self as sass, RegFile};
    let path = ptxc_tests::workspace_root().join("tests/sass-probes/ptx/calls.ptx");
    let Some(res) = ptxas(&path, &[]) else { return };
    let cubin = ptxc::emit::read::read(res.cubin.as_ref().expect("ptxas compiles the probes"))
        .expect("ptxas's cubin reads");
    let mut kernels = 0;
    let mut kept = std::collections::BTreeSet::new();
    for f in &cubin.functions {
        let words: Vec<[u64; 2]> = f
            .code
            .chunks(16)
            .map(|c| {
                [
                    u64::from_le_bytes(c[..8].try_into().unwrap()),
                    u64::from_le_bytes(c[8..].try_into().unwrap()),
                ]
            })
            .collect();
        // ptxc's tables lack `P2R` (ptxas's predicate saves before the call): only the code
        // after the call must decode.
        let decoded: Vec<Option<sass::Instr>> = words
            .iter()
            .enumerate()
            .map(|(k, w)| sass::decode_at(*w, k as u64 * 16).ok())
            .collect();
        let Some(call) = decoded
            .iter()
            .position(|i| i.as_ref().is_some_and(|i| i.mnemonic == "CALL"))
        else {
            continue;
        };
        kernels += 1;
        let mut written = std::collections::BTreeSet::new();
        for (k, i) in decoded.iter().enumerate().skip(call + 1) {
            let i = i.as_ref().expect("the code after the call decodes");
            if i.mnemonic == "EXIT" {
                break;
            }
            let (_, accesses) = sass::roles::word_accesses(words[k]).unwrap();
            for a in accesses.iter().filter(|a| !a.write) {
                for n in a.reg.num..a.reg.num.saturating_add(a.count) {
                    let class = match a.reg.file {
                        RegFile::Gpr if n != 255 => RegClass::Gpr,
                        RegFile::Ugpr if n != 63 => RegClass::Ugpr,
                        RegFile::Pred if n != 7 => RegClass::Pred,
                        _ => continue,
                    };
                    if !written.contains(&(a.reg.file, n)) {
                        kept.insert((a.reg.file, n));
                        let allowed = class == RegClass::Gpr && matches!(n, 1 | 2 | 4 | 5);
                        assert!(
                            allowed || !ptxc::passes::regalloc::call_clobbers(class, n.into()),
                            "{}: ptxas keeps {:?} {n} across the call: {}",
                            f.name,
                            a.reg.file,
                            i
                        );
                    }
                }
            }
            for a in accesses.iter().filter(|a| a.write) {
                for n in a.reg.num..a.reg.num.saturating_add(a.count) {
                    written.insert((a.reg.file, n));
                }
            }
        }
    }
    assert_eq!(kernels, 6, "the probes' kernels with a call");
    // The probes do exercise the callee-saved registers: R16 and up, UR36 and up.
    assert!(kept.contains(&(RegFile::Gpr, 16)), "{kept:?}");
    assert!(
        kept.iter().any(|&(f, n)| f == RegFile::Gpr && n > 40),
        "{kept:?}"
    );
    assert!(kept.contains(&(RegFile::Ugpr, 36)), "{kept:?}");
}

/// ptxas's code for `.func`s the module defines (`tests/sass-probes/ptx/funcs.ptx`, whose header
/// lists the facts): every called function becomes a subroutine after the calling kernel's code
/// in the kernel's own section, reached by `CALL.REL.NOINC` and left by `RET.REL.NODEC`.
#[test]
fn ptxas_calls_module_funcs_as_subroutines() {
    use ptxc::target::sm90a as sass;
    let path = ptxc_tests::workspace_root().join("tests/sass-probes/ptx/funcs.ptx");
    let Some(res) = ptxas(&path, &[]) else { return };
    let cubin = ptxc::emit::read::read(res.cubin.as_ref().expect("ptxas compiles the probes"))
        .expect("ptxas's cubin reads");
    let listing = |f: &ptxc::emit::model::Function| -> Vec<String> {
        f.code
            .chunks(16)
            .enumerate()
            .map(|(k, c)| {
                let w = [
                    u64::from_le_bytes(c[..8].try_into().unwrap()),
                    u64::from_le_bytes(c[8..].try_into().unwrap()),
                ];
                sass::decode_at(w, k as u64 * 16)
                    .map(|i| i.to_string())
                    .unwrap_or_else(|e| panic!("{}: {e}", f.name))
            })
            .collect()
    };
    let func = |name: &str| {
        cubin
            .functions
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no kernel {name}"))
    };
    let has = |l: &[String], s: &str| l.iter().any(|i| i.contains(s));
    // One copy of `mix` in each calling kernel, right after the kernel's EXIT.
    for (kernel, ra) in [("k_fact", "R20"), ("k_mix", "R2"), ("k_mix2", "R4")] {
        let f = func(kernel);
        let l = listing(f);
        let callee = kernel.strip_prefix("k_").unwrap().trim_end_matches('2');
        assert_eq!(f.subroutines.len(), 1, "{kernel}");
        let sub = &f.subroutines[0];
        assert_eq!(sub.name, format!("${kernel}${callee}"));
        let at = (sub.offset / 16) as usize;
        assert!(l[at - 1].starts_with("EXIT"), "{kernel}: {}", l[at - 1]);
        let call = l
            .iter()
            .position(|i| i.starts_with("CALL.REL.NOINC"))
            .unwrap();
        assert!(
            l[call].contains(&format!("{:#x}", sub.offset)),
            "{kernel}: {}",
            l[call]
        );
        // The return address: the offset after the CALL, moved into the callee's register.
        let ret_to = format!("MOV {ra}, {:#x}", (call + 1) * 16);
        assert!(has(&l[..call], &ret_to), "{kernel}: no `{ret_to}`");
        assert!(
            l[at..]
                .iter()
                .any(|i| i.starts_with(&format!("RET.REL.NODEC {ra} "))),
            "{kernel}"
        );
        // No relocation for the PC-relative call.
        assert!(f.relocs.is_empty(), "{kernel}: {:?}", f.relocs);
        assert_eq!(f.attrs.crs_stack_size, Some(0), "{kernel}");
    }
    // The recursive callee: a frame, its return address and the registers it overwrites saved,
    // the convergence barrier saved around its BSSY.
    let l = listing(func("k_fact"));
    for s in [
        "IADD3 R1, R1, -0x10, RZ",
        "STL [R1+0xc], R21",
        "STL [R1+0x8], R20",
        "BMOV.32.CLEAR R2, B6",
        "BMOV.32 B6, R2",
        "LDL R20, [R1+0x8]",
        "VIADD R1, R1, 0x10",
    ] {
        assert!(has(&l, s), "k_fact: no `{s}`");
    }
}

/// The byte offsets of a listing's `STS`/`LDS` addresses (`[R0+0x18]` → 0x18), sorted.
fn shared_offsets(lines: &[String]) -> Vec<u32> {
    let mut out: Vec<u32> = lines
        .iter()
        .filter(|l| l.starts_with("STS") || l.starts_with("LDS"))
        .filter_map(|l| {
            let inside = l.split('[').nth(1)?.split(']').next()?;
            Some(
                inside
                    .split('+')
                    .find_map(|p| u32::from_str_radix(p.trim().strip_prefix("0x")?, 16).ok())
                    .unwrap_or(0),
            )
        })
        .collect();
    out.sort_unstable();
    out
}

/// A `.func` that declares `.shared` (zluda `shared_unify_local`) or addresses the module's is
/// a subroutine whose copy in each kernel addresses that kernel's window, where ptxas puts the
/// variables (`tests/sass-probes/ptx/func_shared.ptx`, whose header lists the facts): the
/// kernel's own first, then the module's in declaration order with the function's among them,
/// then the dynamic array. Before, ptxc inlined such a function, and a subroutine addressing a
/// module variable used offsets from the start of the window, over the kernel's own variables.
#[test]
fn func_shared_variables_lie_where_ptxas_puts_them() {
    let path = ptxc_tests::workspace_root().join("tests/sass-probes/ptx/func_shared.ptx");
    let text = std::fs::read_to_string(&path).unwrap();
    let src = SourceFile::new(path.display().to_string(), text);
    let (encoded, _, _) = ptxc_tests::compile_pipeline(&src)
        .map_err(|d| src.render(&d[0]))
        .unwrap();
    // ptxas's offsets (cuobjdump -sass of ptxas 13.1's cubin, in the probe's header).
    let want = [
        ("k1", vec![0x0, 0x10, 0x18, 0x1c, 0x38]),
        ("k2", vec![0xc, 0x20, 0x28, 0x2c, 0x48]),
    ];
    for (kernel, offsets) in &want {
        let f = encoded.iter().find(|f| f.name == *kernel).unwrap();
        let lines = ptxc_tests::listing_lines(f);
        assert!(
            lines.iter().any(|l| l.starts_with("CALL.REL.NOINC")),
            "{kernel}: {lines:?}"
        );
        assert_eq!(&shared_offsets(&lines), offsets, "{kernel}: {lines:?}");
    }
    let Some(res) = ptxas(&path, &[]) else { return };
    let sass = cuobjdump_sass(res.cubin.as_ref().expect("ptxas compiles the probe")).unwrap();
    for (kernel, offsets) in &want {
        let body: Vec<String> = sass
            .split("Function : ")
            .find(|s| s.starts_with(kernel) && s[kernel.len()..].starts_with(char::is_whitespace))
            .unwrap()
            .lines()
            .filter_map(|l| Some(l.split("*/").nth(1)?.trim().to_string()))
            .collect();
        assert_eq!(
            &shared_offsets(&body),
            offsets,
            "ptxas's {kernel}: {body:?}"
        );
    }
}

/// The calling convention of the module's subroutines passes vectors of up to four registers
/// (zluda `mma_m16n8k32_s32_s8_s8_s32`'s `.v4 .u16`) and predicates, as 0 or 1 in a register
/// (`multiple_return`'s `.pred` result), and a caller keeps a predicate live across a call in a
/// general register (`SEL` before, `ISETP.NE` after): the functions stay subroutines.
#[test]
fn subroutines_take_vectors_and_predicates() {
    let text = ".version 8.7
.target sm_90a
.address_size 64
.func (.reg .u32 a, .reg .pred b) f(.reg .v4 .u16 v, .reg .pred q)
{
    .reg .u32 t;
    cvt.u32.u16 a, v.y;
    cvt.u32.u16 t, v.w;
    @q add.u32 a, a, t;
    setp.gt.u32 b, a, 100;
    ret;
}
.visible .entry k(.param .u64 input)
{
    .reg .u64 p; .reg .u32 r, i; .reg .u16 h; .reg .pred keep, res, lp;
    .reg .v4 .u16 v;
    ld.param.u64 p, [input];
    ld.u32 r, [p];
    setp.eq.u32 keep, r, 5;
    cvt.u16.u32 h, r;
    mov.v4.u16 v, {h, h, h, h};
    mov.u32 i, 0;
LOOP:
    call (r, res), f, (v, keep);
    add.u32 i, i, 1;
    setp.lt.u32 lp, i, 4;
    @lp bra LOOP;
    st.u32 [p], r;
    @keep st.u32 [p+4], 123;
    @res st.u32 [p+8], 7;
    ret;
}
";
    let src = SourceFile::new("v.ptx".to_string(), text.to_string());
    let checked = driver::frontend(&src, Arch::SM90A).unwrap();
    assert!(ptxc::lower::inline::unpassable(&checked.module).is_empty());
    let (encoded, _, _) = ptxc_tests::compile_pipeline(&src)
        .map_err(|d| src.render(&d[0]))
        .unwrap();
    let lines = ptxc_tests::listing_lines(&encoded[0]);
    let has = |s: &str| lines.iter().any(|l| l.starts_with(s));
    assert!(has("CALL.REL.NOINC") && has("RET.REL.NODEC"), "{lines:?}");
    // The predicate argument and result, and `keep` saved across the call.
    assert!(has("SEL R") && has("ISETP.NE.U32.AND P"), "{lines:?}");
}

/// Which `.func`s are inlined because the convention cannot pass their calls is decided on the
/// syntax tree (`lower::inline::unpassable`), so any error of a subroutine is reported rather
/// than hidden by compiling the module again with inlining.
#[test]
fn unpassable_calls_are_decided_before_lowering() {
    let module = |funcs: &str, body: &str| {
        format!(
            ".version 8.7\n.target sm_90a\n.address_size 64\n{funcs}\n\
             .visible .entry k(.param .u64 a)\n{{\n.reg .u32 %r<8>;\n.reg .u64 %rd;\n\
             .reg .pred %p;\n{body}\nret;\n}}\n"
        )
    };
    let unpassable = |text: String| -> Vec<String> {
        let src = SourceFile::new("u.ptx".to_string(), text);
        let checked = driver::frontend(&src, Arch::SM90A)
            .map_err(|d| src.render(&d[0]))
            .unwrap();
        let mut out: Vec<String> = ptxc::lower::inline::unpassable(&checked.module)
            .into_iter()
            .collect();
        out.sort();
        out
    };
    // A `.param` array, and a part of a `.param` scalar.
    let arr = ".func (.reg .b32 r) arr(.param .align 4 .b8 x[8]) { ld.param.b32 r, [x+4]; ret; }";
    let part = ".func (.reg .b32 r) part(.param .b64 x) { ld.param.b32 r, [x+4]; ret; }";
    // Thirteen registers of arguments (R4–R16).
    let many = ".func (.reg .b32 r) many(.reg .b64 a, .reg .b64 b, .reg .b64 c, .reg .b64 d, \
                .reg .b64 e, .reg .b64 f, .reg .b32 g) { mov.b32 r, g; ret; }";
    // Fine: twelve registers, a vector, a predicate.
    let ok = ".func (.reg .b32 r, .reg .pred q) ok(.reg .v4 .b32 v, .reg .b64 a, .reg .b64 b, \
              .reg .b32 c, .reg .pred p) { mov.b32 r, c; mov.pred q, p; ret; }";
    // Guarded calls, and a `.shared` variable of an inner block.
    let guarded = ".func (.reg .b32 r) guarded(.reg .b32 x) { mov.b32 r, x; ret; }";
    let inner = ".func (.reg .b32 r) inner(.reg .b32 x) { { .shared .b32 s; st.shared.b32 [s], x; \
                 ld.shared.b32 r, [s]; } ret; }";
    let text = module(
        &[arr, part, many, ok, guarded, inner].join("\n"),
        ".reg .v4 .b32 %v;\n\
         { .param .align 4 .b8 x[8]; call (%r1), arr, (x); }\n\
         { .param .b64 y; call (%r1), part, (y); }\n\
         call (%r1), many, (%rd, %rd, %rd, %rd, %rd, %rd, %r2);\n\
         call (%r1, %p), ok, (%v, %rd, %rd, %r2, %p);\n\
         setp.eq.u32 %p, %r1, 0;\n\
         @%p call (%r1), guarded, (%r2);\n\
         call (%r1), inner, (%r2);",
    );
    assert_eq!(
        unpassable(text),
        ["arr", "guarded", "inner", "many", "part"]
    );
}

/// A branch on a 64-bit value built word by word from `%tid.x` (`cvt.u64.u32` is `MOV hi, 0x0`
/// then `MOV lo, R`) is divergent. (The uniformity test looked only at the first word's
/// instruction, `MOV hi, 0x0`, and took the branch for uniform: the store ran unguarded on the
/// fall-through path with no reconvergence before the `bar.sync`.) The skipped block is one
/// store, so it is predicated, as ptxas does (`ptxas -arch sm_90a` of this kernel:
/// `@!P0 STG.E desc[UR4][R2.64], R5`, no BSSY; `docs/passes/reconverge.md`): the store carries
/// the branch's negated predicate and no branch is left.
#[test]
fn a_branch_on_a_64_bit_thread_index_reconverges() {
    let (lines, _) = compile(
        ".reg .u64 %rd<4>;\n\
         mov.u32 %r1, %tid.x;\n\
         cvt.u64.u32 %rd1, %r1;\n\
         ld.param.u64 %rd2, [a];\n\
         setp.ge.u64 %p, %rd1, %rd2;\n\
         @%p bra DONE;\n\
         st.global.u32 [%rd2], %r1;\n\
         DONE:\n\
         bar.sync 0;\n\
         ret;",
    )
    .unwrap();
    let text = lines.join("\n");
    let stores: Vec<&String> = lines.iter().filter(|l| l.contains("STG")).collect();
    assert_eq!(stores.len(), 1, "{text}");
    assert!(stores[0].starts_with("@!P"), "{text}");
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with('@') && l.contains("BRA")),
        "{text}"
    );
}

/// Calls to subroutines that are neither recursive nor address-taken are caller-saved, as
/// ptxas's whole-program allocation makes them (`docs/passes/lowering.md`, "Caller-saved
/// subroutines"): the return address in R2:R3, nothing saved, and a call overwrites only what
/// the callee writes, so the kernels' register counts approach ptxas's (all were 24, from the
/// return address in R20:R21). `-v` prints ptxas's `Function properties` lines for each
/// subroutine a kernel calls; a recursive one keeps the fixed convention and counts its saves
/// as spill bytes, as ptxas's `-v` does.
#[test]
fn caller_saved_subroutines_cost_what_the_callee_writes() {
    let root = ptxc_tests::workspace_root();
    let zluda = ptxc_tests::shared_dir().join("corpus/zluda/sm90a");
    // (file, most registers ptxc may use (ptxas's count in the comment), a subroutine line)
    let cases = [
        (zluda.join("call.ptx"), 12, "incr"),                    // 10
        (zluda.join("multiple_return.ptx"), 10, "do_something"), // 8
        (zluda.join("shared_unify_local.ptx"), 16, "set_shared_temp1"), // 11
        (zluda.join("mma_m16n8k32_s32_s8_s8_s32.ptx"), 38, "pack_u8"), // 23
        (root.join("tests/sass-probes/ptx/funcs.ptx"), 18, "mix"), // 12, 10
    ];
    for (path, most, sub) in cases {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let src = SourceFile::new(path.display().to_string(), text);
        let (encoded, built, _) =
            ptxc_tests::compile_pipeline(&src).unwrap_or_else(|d| panic!("{}", src.render(&d[0])));
        let report = ptxc::emit::build::verbose_report(&built, "sm_90a", 0.0);
        for k in built.kernels.iter().filter(|k| k.name != "k_fact") {
            assert!(
                k.registers <= most,
                "{}: {}\n{report}",
                path.display(),
                k.name
            );
        }
        assert!(
            report.contains(&format!(
                "ptxc info    : Function properties for {sub}\n    0 bytes stack frame, 0 \
                 bytes spill stores, 0 bytes spill loads\n"
            )),
            "{report}"
        );
        // A caller-saved subroutine returns through R2.
        let lines: Vec<String> = encoded.iter().flat_map(ptxc_tests::listing_lines).collect();
        assert!(
            lines.iter().any(|l| l.starts_with("RET.REL.NODEC R2 ")),
            "{}: {lines:?}",
            path.display()
        );
    }
    // The recursive `fact` keeps the fixed convention: R20:R21, its saves counted as ptxas
    // counts them (16 bytes frame, 16 bytes of stores and of loads).
    let path = root.join("tests/sass-probes/ptx/funcs.ptx");
    let src = SourceFile::new("funcs.ptx", std::fs::read_to_string(&path).unwrap());
    let (_, built, _) =
        ptxc_tests::compile_pipeline(&src).unwrap_or_else(|d| panic!("{}", src.render(&d[0])));
    let report = ptxc::emit::build::verbose_report(&built, "sm_90a", 0.0);
    assert!(
        report.contains(
            "ptxc info    : Function properties for fact\n    16 bytes stack frame, 16 bytes \
             spill stores, 16 bytes spill loads\n"
        ),
        "{report}"
    );
}
