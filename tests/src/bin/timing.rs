//! Whole-process timing of ptxc (release build) against ptxas on the same files: the corpus
//! files both compile, and generated straight-line and looping kernels of 1k to 100k
//! instructions (`ptxc::bench_kernels`). Each measurement is the median wall time of several
//! runs, the two compilers alternating; the load average and the processor model are printed
//! with the results.
//!
//! ```text
//! cargo build --release -p ptxc
//! cargo run --release -p ptxc-tests --bin timing -- [--runs N] [--sizes 1000,10000,...]
//!     [--shapes straight,loop] [--no-corpus] [--no-generated] [--ptxc PATH] [--write DIR]
//!     [--emit cubin|sass] [--no-copy]
//! ```
//!
//! ptxc runs from a copy of the binary in the scratch directory (`--no-copy`: from where it
//! is). The linker (lld) writes the binary through a shared mapping, which leaves it in the page
//! cache in 4 KB pages, and every process then maps its code a few pages per page fault; a
//! copy (what `cargo install`, `cp`, or reading the file back from disk gives, and how ptxas's
//! binary, unpacked from its wheel, sits in the cache) is cached in large folios the kernel maps
//! many pages at a time. Measured 2026-12-01 on `zluda/vector.ptx`, the same bytes: 160 page
//! faults and 2.12 ms CPU per process as lld left them, 139 and 1.73 ms copied (400
//! alternating runs). The difference is the file's place in the page cache, not ptxc.
//!
//! `--write DIR` only writes the generated kernels (`straight_N.ptx`, `loop_N.ptx`) to DIR, for
//! profiling.
//!
//! Besides wall time, each run's CPU time (user + system, from `wait4`'s resource usage) is
//! measured: on a loaded machine the wall time mostly measures waiting for a core, the CPU time
//! what the compiler itself spent.
//!
//! ptxc runs as `ptxc -arch sm_90a F -o OUT.cubin` and ptxas as `ptxas -arch sm_90a F -o
//! OUT.cubin`: both do the same job, PTX to a cubin, outputs in a scratch directory.
//! `--emit sass` times ptxc writing its nvdisasm-style listing instead (what the figures before
//! 2026-12-01 measured: the listing decodes every word again, and a few kernels whose cubin
//! records ptxc cannot write yet still list).

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
    /// What ptxc writes: `cubin` (the default, like ptxas) or `sass` (its listing).
    emit: String,
    /// Run ptxc from where it is instead of from a copy (see the module documentation).
    no_copy: bool,
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
        emit: "cubin".into(),
        no_copy: false,
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
            "--no-copy" => o.no_copy = true,
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
            "--emit" => {
                o.emit = val()?;
                if o.emit != "cubin" && o.emit != "sass" {
                    return Err(format!("--emit: {} (cubin or sass)", o.emit));
                }
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

/// The processor model and the number of processors (`/proc/cpuinfo`).
fn machine() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split(':').nth(1))
        .map_or("?", str::trim);
    let n = info.lines().filter(|l| l.starts_with("processor")).count();
    format!("{model}, {n} processors")
}

/// Wall and CPU time (user + system) of one run in seconds, or the tool's error.
/// Runs `cmd` once; its standard error goes to `errfile` (a file, not a pipe: a compiler that
/// writes more than a pipe holds before exiting would otherwise block forever).
fn time_once(cmd: &mut Command, errfile: &Path) -> Result<(f64, f64), String> {
    let err = std::fs::File::create(errfile).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut status = 0;
    // SAFETY: `rusage` is plain data that wait4 fills in; the child is ours and not yet reaped.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    let wall = t.elapsed().as_secs_f64();
    if pid < 0 {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let cpu = tv(ru.ru_utime) + tv(ru.ru_stime);
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let err = std::fs::read_to_string(errfile).unwrap_or_default();
        return Err(err.lines().next().unwrap_or("failed").to_string());
    }
    Ok((wall, cpu))
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

/// Median wall and CPU times of ptxc and ptxas for one file.
struct Times {
    ptxc: f64,
    ptxas: f64,
    ptxc_cpu: f64,
    ptxas_cpu: f64,
}

fn measure(o: &Opts, ptxas: &Path, file: &Path, scratch: &Path) -> Result<Times, String> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..o.runs {
        a.push(
            time_once(
                Command::new(&o.ptxc)
                    .args(["-arch", "sm_90a"])
                    .arg(file)
                    .args(["--emit", &o.emit, "-o"])
                    .arg(scratch.join(format!("ptxc.{}", o.emit))),
                &scratch.join("ptxc.err"),
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
                &scratch.join("ptxas.err"),
            )
            .map_err(|e| format!("ptxas: {e}"))?,
        );
    }
    let (ac, bc) = (
        a.iter().map(|t: &(f64, f64)| t.1).collect(),
        b.iter().map(|t: &(f64, f64)| t.1).collect(),
    );
    Ok(Times {
        ptxc: median(a.iter().map(|t| t.0).collect()),
        ptxas: median(b.iter().map(|t| t.0).collect()),
        ptxc_cpu: median(ac),
        ptxas_cpu: median(bc),
    })
}

fn main() -> ExitCode {
    let mut o = match parse_args() {
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
    let shown = o.ptxc.display().to_string();
    if !o.no_copy {
        let copy = scratch.join("ptxc");
        if let Err(e) = std::fs::copy(&o.ptxc, &copy) {
            eprintln!("timing: cannot copy {shown}: {e}");
            return ExitCode::from(1);
        }
        o.ptxc = copy;
    }
    println!(
        "timing: ptxc {}{} vs ptxas {}; median of {} runs; load average {}",
        shown,
        if o.no_copy { "" } else { " (run from a copy)" },
        ptxc_reftools::version_line(&ptxas).unwrap_or_default(),
        o.runs,
        load()
    );
    // Sessions may run on different hosts, and wall times are only comparable on one.
    println!("timing: machine: {}", machine());
    if o.corpus {
        let mut ratios = Vec::new();
        let mut cpu_ratios = Vec::new();
        let (mut ta, mut tb) = (Vec::new(), Vec::new());
        let mut skipped = 0;
        for f in ptxc_tests::accepted_corpus() {
            match measure(&o, &ptxas, &f, &scratch) {
                Ok(t) => {
                    ratios.push(t.ptxas / t.ptxc);
                    cpu_ratios.push(t.ptxas_cpu / t.ptxc_cpu.max(1e-6));
                    ta.push(t.ptxc);
                    tb.push(t.ptxas);
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
            println!(
                "timing: corpus: CPU time ratio ptxas/ptxc median {:.1}x",
                median(cpu_ratios)
            );
        }
    }
    if o.generated {
        println!(
            "timing: {:<9} {:>7} {:>9} {:>9} {:>7} {:>11} {:>11} {:>7} {:>11} {:>11}",
            "kernel",
            "instrs",
            "ptxc ms",
            "ptxas ms",
            "ratio",
            "ptxc cpu",
            "ptxas cpu",
            "cpu rat",
            "ptxc us/in",
            "ptxas us/in"
        );
        for &shape in &o.shapes {
            for &n in &o.sizes {
                let file = scratch.join(format!("{}_{n}.ptx", shape.name()));
                if let Err(e) = std::fs::write(&file, generate(shape, n)) {
                    eprintln!("timing: cannot write {}: {e}", file.display());
                    return ExitCode::from(1);
                }
                match measure(&o, &ptxas, &file, &scratch) {
                    Ok(t) => println!(
                        "timing: {:<9} {n:>7} {:>9.1} {:>9.1} {:>6.1}x {:>11.1} {:>11.1} {:>6.1}x {:>11.2} {:>11.2}",
                        shape.name(),
                        t.ptxc * 1e3,
                        t.ptxas * 1e3,
                        t.ptxas / t.ptxc,
                        t.ptxc_cpu * 1e3,
                        t.ptxas_cpu * 1e3,
                        t.ptxas_cpu / t.ptxc_cpu.max(1e-6),
                        t.ptxc_cpu * 1e6 / n as f64,
                        t.ptxas_cpu * 1e6 / n as f64
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
