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
    let checked = driver::frontend(&src, Arch::SM90A).map_err(|d| src.render(&d[0]))?;
    let opts = ptxc::passes::Options {
        verify: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).map_err(|d| src.render(&d[0]))?;
    let encoded = driver::encode(&lowered).map_err(|d| src.render(&d[0]))?;
    let f = &encoded[0];
    let lines = ptxc_tests::listing_lines(f);
    let (built, _) = driver::cubin(&checked, &lowered, &encoded, &Default::default())
        .map_err(|d| src.render(&d[0]))?;
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
