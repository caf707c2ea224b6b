//! The `schedule` pass (critical-path list scheduling within blocks): a load whose result the
//! block needs is not left behind independent arithmetic, side effects keep their order, and
//! under `-g` PTX order is kept. The pass runs with `--schedule` (`Options::schedule`).

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;

/// The listing lines of a one-kernel module (`-g` when `debug`).
fn listing(body: &str, debug: bool) -> Vec<String> {
    let text = format!(
        ".version 8.7\n.target sm_90a\n.address_size 64\n\
         .visible .entry k(.param .u64 a, .param .u64 b, .param .u32 n)\n{{\n\
         .reg .u32 %r<8>;\n.reg .u64 %rd<8>;\n.reg .pred %p;\n{body}\n}}\n"
    );
    let src = SourceFile::new("k.ptx".to_string(), text);
    let checked = driver::frontend(&src, Arch::SM90A).expect("frontend");
    let opts = ptxc::passes::Options {
        verify: true,
        device_debug: debug,
        schedule: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) =
        driver::lower(&checked, &opts).unwrap_or_else(|d| panic!("{}", src.render(&d[0])));
    let encoded = driver::encode(&lowered).expect("encode");
    ptxc_tests::listing_lines(&encoded[0])
}

fn position(lines: &[String], prefix: &str) -> usize {
    lines
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` in {lines:#?}"))
}

const LATE_LOAD: &str = "ld.param.u64 %rd1, [a];
ld.param.u64 %rd2, [b];
ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
mul.lo.s32 %r3, %r2, %r1;
add.s32 %r4, %r3, 7;
xor.b32 %r5, %r4, %r1;
ld.global.u32 %r6, [%rd2];
add.s32 %r7, %r6, %r5;
st.global.u32 [%rd1], %r7;
ret;";

#[test]
fn a_load_issues_before_independent_arithmetic() {
    let lines = listing(LATE_LOAD, false);
    let ldg = position(&lines, "LDG");
    for alu in ["IMAD", "IADD3", "LOP3.LUT"] {
        assert!(
            ldg < position(&lines, alu),
            "{alu} before the LDG: {lines:#?}"
        );
    }
    // In PTX order under -g.
    let lines = listing(LATE_LOAD, true);
    assert!(
        position(&lines, "LOP3.LUT") < position(&lines, "LDG"),
        "{lines:#?}"
    );
}

#[test]
fn side_effects_keep_their_order() {
    // Two stores to possibly the same place, a load between them, a barrier: none may pass
    // another, whatever their heights.
    let lines = listing(
        "ld.param.u64 %rd1, [a];
ld.param.u64 %rd2, [b];
st.global.u32 [%rd1], 1;
ld.global.u32 %r1, [%rd2];
st.global.u32 [%rd1+4], 2;
bar.sync 0;
ld.global.u32 %r2, [%rd1];
add.s32 %r3, %r1, %r2;
st.global.u32 [%rd2], %r3;
ret;",
        false,
    );
    let effects: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.split([' ', '.']).next())
        .filter(|m| matches!(*m, "STG" | "LDG" | "BAR"))
        .collect();
    assert_eq!(
        effects,
        ["STG", "LDG", "STG", "BAR", "LDG", "STG"],
        "{lines:#?}"
    );
}

#[test]
fn predicates_stay_within_the_file() {
    // Integer divisions are full of predicates; hoisting every `ISETP` once needed more than
    // the 7 `P` registers, which ptxc cannot spill.
    let lines = listing(
        "ld.param.u64 %rd1, [a];
ld.param.u64 %rd2, [b];
ld.global.u32 %r1, [%rd1];
ld.global.u32 %r2, [%rd1+4];
ld.global.u64 %rd3, [%rd2];
ld.global.u64 %rd4, [%rd2+8];
div.s32 %r3, %r1, %r2;
rem.u32 %r4, %r1, %r2;
div.u32 %r5, %r2, %r1;
rem.s32 %r6, %r2, %r1;
div.u64 %rd5, %rd3, %rd4;
rem.s64 %rd6, %rd4, %rd3;
add.s32 %r3, %r3, %r4;
add.s32 %r3, %r3, %r5;
add.s32 %r3, %r3, %r6;
st.global.u32 [%rd1], %r3;
add.s64 %rd5, %rd5, %rd6;
st.global.u64 [%rd2], %rd5;
ret;",
        false,
    );
    assert!(
        lines.iter().any(|l| l.starts_with("MUFU.RCP")),
        "{lines:#?}"
    );
}
