//! Whole-process timing of ptxc (release build) against ptxas on the same files: the corpus
//! files both compile, and generated straight-line and looping kernels of 1k to 100k
//! instructions (`ptxc::bench_kernels`). Each measurement is the median wall time of several
//! runs, the two compilers alternating; the load average is printed with the results.
//!
//! ```text
//! cargo build --release -p ptxc
//! cargo run --release -p ptxc-tests --bin timing -- [--runs N] [--sizes 1000,10000,...]
//!     [--shapes straight,loop] [--no-corpus] [--no-generated] [--ptxc PATH] [--write DIR]
//! ```
//!
//! `--write DIR` only writes the generated kernels (`straight_N.ptx`, `loop_N.ptx`) to DIR, for
//! profiling.
//!
//! ptxc runs as `ptxc -arch sm_90a F --emit sass -o OUT` (its whole pipeline, listing
//! included) and ptxas as `ptxas -arch sm_90a F -o OUT.cubin`, outputs in a scratch directory.

use ptxc::bench_kernels::{Shape, generate};
use ptxc_reftools::Tool;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

struct Opts {
    runs: usize,
    sizes: Vec<usize>,
    corpus: bool,
    generated: bool,
    ptxc: PathBuf,
    write: Option<PathBuf>,
    shapes: Vec<Shape>,
}

fn parse_args() -> Result<Opts, String> {
    let root = ptxc_tests::workspace_root();
    let mut o = Opts {
        runs: 3,
        sizes: vec![1_000, 10_000, 16_000, 64_000, 100_000],
        corpus: true,
        generated: true,
        ptxc: root.join("target").join("release").join("ptxc"),
        write: None,
        shapes: vec![Shape::StraightLine, Shape::Looping],
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--runs" => o.runs = val()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--sizes" => {
                o.sizes = val()?
                    .split(',')
                    .map(|s| s.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--sizes: {e}"))?
            }
            "--ptxc" => o.ptxc = PathBuf::from(val()?),
            "--write" => o.write = Some(PathBuf::from(val()?)),
            "--shapes" => {
                o.shapes = val()?
                    .split(',')
                    .map(|s| match s.trim() {
                        "straight" => Ok(Shape::StraightLine),
                        "loop" => Ok(Shape::Looping),
                        other => Err(format!("--shapes: unknown shape {other}")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--no-corpus" => o.corpus = false,
            "--no-generated" => o.generated = false,
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if o.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    Ok(o)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Wall time of one run in seconds, or the tool's error.
fn time_once(cmd: &mut Command) -> Result<f64, String> {
    let t = Instant::now();
    let out = cmd.output().map_err(|e| e.to_string())?;
    let dt = t.elapsed().as_secs_f64();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().next().unwrap_or("failed").to_string());
    }
    Ok(dt)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median times (ptxc, ptxas) for one file.
fn measure(o: &Opts, ptxas: &Path, file: &Path, scratch: &Path) -> Result<(f64, f64), String> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..o.runs {
        a.push(
            time_once(
                Command::new(&o.ptxc)
                    .args(["-arch", "sm_90a"])
                    .arg(file)
                    .args(["--emit", "sass", "-o"])
                    .arg(scratch.join("ptxc.sass")),
            )
            .map_err(|e| format!("ptxc: {e}"))?,
        );
        b.push(
            time_once(
                Command::new(ptxas)
                    .args(["-arch", "sm_90a"])
                    .arg(file)
                    .arg("-o")
                    .arg(scratch.join("ptxas.cubin")),
            )
            .map_err(|e| format!("ptxas: {e}"))?,
        );
    }
    Ok((median(a), median(b)))
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("timing: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = &o.write {
        for &shape in &o.shapes {
            for &n in &o.sizes {
                let file = dir.join(format!("{}_{n}.ptx", shape.name()));
                if let Err(e) = std::fs::create_dir_all(dir)
                    .and_then(|_| std::fs::write(&file, generate(shape, n)))
                {
                    eprintln!("timing: cannot write {}: {e}", file.display());
                    return ExitCode::from(1);
                }
                println!("timing: wrote {}", file.display());
            }
        }
        return ExitCode::SUCCESS;
    }
    if !o.ptxc.is_file() {
        eprintln!(
            "timing: no ptxc at {} (build it with `cargo build --release -p ptxc`, or pass --ptxc)",
            o.ptxc.display()
        );
        return ExitCode::from(2);
    }
    let ptxas = match ptxc_reftools::find(Tool::Ptxas) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("timing: cannot find ptxas: {e}");
            return ExitCode::from(1);
        }
    };
    let scratch = ptxc_tests::tempdir();
    println!(
        "timing: ptxc {} vs ptxas {}; median of {} runs; load average {}",
        o.ptxc.display(),
        ptxc_reftools::version_line(&ptxas).unwrap_or_default(),
        o.runs,
        load()
    );
    if o.corpus {
        let mut ratios = Vec::new();
        let (mut ta, mut tb) = (Vec::new(), Vec::new());
        let mut skipped = 0;
        for f in ptxc_tests::accepted_corpus() {
            match measure(&o, &ptxas, &f, &scratch) {
                Ok((a, b)) => {
                    ratios.push(b / a);
                    ta.push(a);
                    tb.push(b);
                }
                Err(_) => skipped += 1,
            }
        }
        if ratios.is_empty() {
            println!("timing: corpus: no file compiled by both");
        } else {
            let (sa, sb): (f64, f64) = (ta.iter().sum(), tb.iter().sum());
            let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let max = ratios.iter().copied().fold(0.0, f64::max);
            println!(
                "timing: corpus: {} files ({skipped} skipped: ptxc cannot compile them yet): \
                 median ptxc {:.1} ms, ptxas {:.1} ms; ratio ptxas/ptxc median {:.1}x \
                 (min {:.1}x, max {:.1}x; total {:.2} s vs {:.2} s = {:.1}x)",
                ratios.len(),
                median(ta.clone()) * 1e3,
                median(tb.clone()) * 1e3,
                median(ratios.clone()),
                min,
                max,
                sa,
                sb,
                sb / sa
            );
        }
    }
    if o.generated {
        println!(
            "timing: {:<9} {:>7} {:>11} {:>11} {:>8} {:>13} {:>13}",
            "kernel", "instrs", "ptxc ms", "ptxas ms", "ratio", "ptxc us/ins", "ptxas us/ins"
        );
        for &shape in &o.shapes {
            for &n in &o.sizes {
                let file = scratch.join(format!("{}_{n}.ptx", shape.name()));
                if let Err(e) = std::fs::write(&file, generate(shape, n)) {
                    eprintln!("timing: cannot write {}: {e}", file.display());
                    return ExitCode::from(1);
                }
                match measure(&o, &ptxas, &file, &scratch) {
                    Ok((a, b)) => println!(
                        "timing: {:<9} {n:>7} {:>11.1} {:>11.1} {:>7.1}x {:>13.2} {:>13.2}",
                        shape.name(),
                        a * 1e3,
                        b * 1e3,
                        b / a,
                        a * 1e6 / n as f64,
                        b * 1e6 / n as f64
                    ),
                    Err(e) => println!("timing: {:<9} {n:>7} failed: {e}", shape.name()),
                }
            }
        }
    }
    println!("timing: load average at the end {}", load());
    let _ = std::fs::remove_dir_all(&scratch);
    ExitCode::SUCCESS
}
