//! Criterion benchmarks of each pipeline stage — parse, check, lower (instruction selection and
//! SSA), passes (the MIR pipeline), encode — on a corpus file and on generated straight-line and
//! looping kernels (`ptxc::bench_kernels`). `cargo bench -p ptxc --bench stages`.
//!
//! The corpus file is ZLUDA's `div_noftz` (the largest code ptxc makes of a corpus file), read from `../shared/corpus`
//! (`PTXC_SHARED` overrides); it is left out when the corpus is not there.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ptxc::bench_kernels::{Shape, generate};
use ptxc::diag::SourceFile;
use ptxc::frontend::{self, check::Arch};
use std::hint::black_box;
use std::path::PathBuf;

fn corpus_file() -> Option<(String, String)> {
    let shared = std::env::var_os("PTXC_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let path = shared.join("corpus/zluda/sm90a/div_noftz.ptx");
    let text = std::fs::read_to_string(&path).ok()?;
    Some(("zluda-div_noftz".into(), text))
}

fn stages(c: &mut Criterion, name: &str, text: &str) {
    let src = SourceFile::new(name, text);
    let opts = ptxc::passes::Options {
        verify: false,
        ..ptxc::passes::Options::new()
    };
    let Ok(checked) = ptxc::driver::frontend(&src, Arch::SM90A) else {
        eprintln!("stages: {name} does not check; skipped");
        return;
    };
    let Ok(lowered) = ptxc::lower::lower_module(&checked, true) else {
        eprintln!("stages: {name} does not lower; skipped");
        return;
    };
    let Ok((done, _)) = ptxc::driver::lower(&checked, &opts) else {
        eprintln!("stages: {name} fails in the passes; skipped");
        return;
    };
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("parse", |b| {
        b.iter(|| frontend::parse(black_box(text)).unwrap())
    });
    g.bench_function("check", |b| {
        b.iter(|| frontend::check::check(black_box(&checked.module), Arch::SM90A).unwrap())
    });
    g.bench_function("lower", |b| {
        b.iter(|| ptxc::lower::lower_module(black_box(&checked), true).unwrap())
    });
    g.bench_function("passes", |b| {
        b.iter_batched(
            || lowered.module.functions.clone(),
            |mut fs| {
                let mut report = ptxc::passes::Report::default();
                for f in &mut fs {
                    ptxc::passes::run(f, &ptxc::passes::pipeline(&opts), &opts, &mut report)
                        .unwrap();
                }
                fs
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("encode", |b| {
        b.iter(|| ptxc::driver::encode(black_box(&done)).unwrap())
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    if let Some((name, text)) = corpus_file() {
        stages(c, &name, &text);
    }
    for (shape, n) in [(Shape::StraightLine, 10_000), (Shape::Looping, 2_000)] {
        stages(c, &format!("{}-{n}", shape.name()), &generate(shape, n));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
