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
//! A partial or register mask, a guarded `bar.warp.sync` and a guarded `trap` are refused.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;

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
