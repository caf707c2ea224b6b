//! Generated PTX kernels of a chosen size, for benchmarks (`compiler/benches/stages.rs`, the
//! timing tool `cargo run --release -p ptxc-tests --bin timing`). Deterministic: the same size
//! gives the same text.
//!
//! * [`straight_line`]: one basic block of `n` instructions — loads, integer and float
//!   arithmetic, stores — over a working set of 24 registers per kind.
//! * [`looping`]: the same instructions in small counted loops of 16 instructions each, so the
//!   control-flow graph has `n / 16` loops (data-flow passes iterate over back edges).

use std::fmt::Write as _;

/// Which shape of kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    StraightLine,
    Looping,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::StraightLine => "straight",
            Shape::Looping => "loop",
        }
    }
}

fn header(s: &mut String, name: &str) {
    let _ = write!(
        s,
        ".version 8.7\n.target sm_90a\n.address_size 64\n\n\
         .visible .entry {name}(\n\t.param .u64 {name}_param_0,\n\t.param .u64 {name}_param_1\n)\n\
         .maxntid 256, 1, 1\n{{\n\
         \t.reg .pred \t%p<4>;\n\t.reg .b32 \t%r<32>;\n\t.reg .f32 \t%f<32>;\n\t.reg .b64 \t%rd<8>;\n\n\
         \tld.param.u64 \t%rd1, [{name}_param_0];\n\tld.param.u64 \t%rd2, [{name}_param_1];\n\
         \tcvta.to.global.u64 \t%rd3, %rd1;\n\tcvta.to.global.u64 \t%rd4, %rd2;\n\
         \tmov.u32 \t%r1, %tid.x;\n\tmul.wide.u32 \t%rd5, %r1, 4;\n\
         \tadd.s64 \t%rd6, %rd3, %rd5;\n\tadd.s64 \t%rd7, %rd4, %rd5;\n"
    );
    for k in 2..26 {
        let _ = writeln!(s, "\tld.global.f32 \t%f{k}, [%rd6+{}];", 4 * k);
    }
    for k in 2..26 {
        let _ = writeln!(s, "\tadd.s32 \t%r{k}, %r1, {k};");
    }
}

/// The `i`-th body instruction: float and integer arithmetic over %f2..%f25 and %r2..%r25,
/// with a store every 8th instruction (so that nothing is dead).
fn body(s: &mut String, i: usize) {
    let a = 2 + i % 24;
    let b = 2 + (i * 7 + 3) % 24;
    let c = 2 + (i * 13 + 5) % 24;
    let _ = match i % 8 {
        0 => writeln!(s, "\tfma.rn.f32 \t%f{a}, %f{b}, %f{c}, %f{a};"),
        1 => writeln!(s, "\tadd.s32 \t%r{a}, %r{b}, %r{c};"),
        2 => writeln!(s, "\tmul.f32 \t%f{b}, %f{a}, %f{c};"),
        3 => writeln!(s, "\txor.b32 \t%r{b}, %r{a}, {i};"),
        4 => writeln!(s, "\tadd.f32 \t%f{c}, %f{a}, %f{b};"),
        5 => writeln!(s, "\tmad.lo.s32 \t%r{c}, %r{a}, %r{b}, %r{c};"),
        6 => writeln!(s, "\tcvt.rn.f32.s32 \t%f{a}, %r{b};"),
        _ => writeln!(s, "\tst.global.f32 \t[%rd7+{}], %f{a};", 4 * (i % 1024)),
    };
}

fn footer(s: &mut String) {
    for k in 2..26 {
        let _ = writeln!(s, "\tst.global.f32 \t[%rd7+{}], %f{k};", 4096 + 4 * k);
        let _ = writeln!(s, "\tst.global.u32 \t[%rd7+{}], %r{k};", 8192 + 4 * k);
    }
    s.push_str("\tret;\n\n}\n");
}

/// A kernel of `n` body instructions in one basic block.
pub fn straight_line(n: usize) -> String {
    let mut s = String::with_capacity(n * 40 + 4096);
    header(&mut s, "straight");
    for i in 0..n {
        body(&mut s, i);
    }
    footer(&mut s);
    s
}

/// A kernel of about `n` body instructions in loops of 16: 13 arithmetic instructions, the
/// counter update, its test and the backward branch; each loop runs four times.
pub fn looping(n: usize) -> String {
    let mut s = String::with_capacity(n * 40 + 4096);
    header(&mut s, "loops");
    let mut i = 0;
    let mut l = 0;
    while i < n {
        let _ = writeln!(s, "\tmov.u32 \t%r26, 0;\n$L__loop{l}:");
        for _ in 0..13 {
            body(&mut s, i);
            i += 1;
        }
        let _ = writeln!(
            s,
            "\tadd.s32 \t%r26, %r26, 1;\n\tsetp.lt.u32 \t%p1, %r26, 4;\n\t@%p1 bra \t$L__loop{l};"
        );
        i += 3;
        l += 1;
    }
    footer(&mut s);
    s
}

/// The kernel of `shape` with about `n` instructions.
pub fn generate(shape: Shape, n: usize) -> String {
    match shape {
        Shape::StraightLine => straight_line(n),
        Shape::Looping => looping(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_determinism() {
        let s = straight_line(1000);
        // 1000 body lines plus the fixed prologue/epilogue.
        let instrs = s
            .lines()
            .filter(|l| l.starts_with('\t') && l.ends_with(';'))
            .count();
        assert!((1000..1200).contains(&instrs), "{instrs}");
        assert_eq!(s, straight_line(1000));
        let l = looping(1000);
        assert_eq!(l.matches("bra").count(), 1000usize.div_ceil(16));
    }

    #[test]
    fn generated_kernels_compile() {
        for shape in [Shape::StraightLine, Shape::Looping] {
            let text = generate(shape, 200);
            let src = crate::diag::SourceFile::new("gen.ptx", text);
            let checked = crate::driver::frontend(&src, crate::frontend::check::Arch::SM90A)
                .unwrap_or_else(|d| panic!("{}", src.render(&d[0])));
            let opts = crate::passes::Options {
                verify: true,
                ..crate::passes::Options::new()
            };
            let (lowered, _) = crate::driver::lower(&checked, &opts)
                .unwrap_or_else(|d| panic!("{}", src.render(&d[0])));
            let enc = crate::driver::encode(&lowered).unwrap_or_else(|d| panic!("{:?}", d));
            assert!(enc[0].code_len > 200, "{shape:?}: {}", enc[0].code_len);
        }
    }
}
