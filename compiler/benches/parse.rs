//! Frontend throughput on a large generated PTX file: lexing + parsing, and the whole frontend
//! (parse + semantic check). `cargo bench -p ptxc --bench parse`; the README quotes the MB/s.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptxc::diag::SourceFile;
use ptxc::frontend::{self, check::Arch};
use std::fmt::Write as _;
use std::hint::black_box;

/// A straight-line kernel of `n` instruction groups in the style nvcc emits: loads, integer and
/// float arithmetic, predicates, branches, stores.
pub fn generate(n: usize) -> String {
    let mut s = String::from(
        ".version 8.7\n.target sm_90a\n.address_size 64\n\n\
         .visible .entry big(\n\t.param .u64 big_param_0,\n\t.param .u64 big_param_1\n)\n.maxntid 256, 1, 1\n{\n\
         \t.reg .pred \t%p<8>;\n\t.reg .b32 \t%r<64>;\n\t.reg .f32 \t%f<64>;\n\t.reg .b64 \t%rd<64>;\n\n\
         \tld.param.u64 \t%rd1, [big_param_0];\n\tld.param.u64 \t%rd2, [big_param_1];\n\
         \tcvta.to.global.u64 \t%rd3, %rd1;\n\tmov.u32 \t%r1, %tid.x;\n",
    );
    for i in 0..n {
        let (a, b, c) = (i % 60 + 2, (i * 7) % 60 + 2, (i * 13) % 60 + 2);
        let _ = write!(
            s,
            "$L__BB0_{i}:\n\
             \tmul.wide.u32 \t%rd{a}, %r{b}, 4;\n\
             \tadd.s64 \t%rd{b}, %rd3, %rd{a};\n\
             \tld.global.nc.f32 \t%f{a}, [%rd{b}+16];\n\
             \tfma.rn.f32 \t%f{c}, %f{a}, %f{b}, 0f3F800000;\n\
             \tadd.s32 \t%r{c}, %r{a}, -{i};\n\
             \tsetp.lt.u32 \t%p{}, %r{c}, 1024;\n\
             \t@%p{} bra \t$L__BB0_{i};\n\
             \tst.global.f32 \t[%rd{b}], %f{c};\n",
            i % 7 + 1,
            i % 7 + 1
        );
    }
    s.push_str("\tret;\n\n}\n");
    s
}

fn bench(c: &mut Criterion) {
    let text = generate(20_000);
    let mut g = c.benchmark_group("frontend");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(20);
    g.bench_function("parse", |b| {
        b.iter(|| frontend::parse(black_box(&text)).unwrap())
    });
    g.bench_function("parse+check", |b| {
        b.iter(|| {
            let src = SourceFile::new("big.ptx", text.as_str());
            ptxc::driver::frontend(black_box(&src), Arch::SM90A).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
