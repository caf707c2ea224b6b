//! `ptxc-sim CUBIN KERNEL [options]`: runs one kernel of a cubin on the simulator. With a
//! `.ptx` file instead of a cubin, the kernel is compiled by ptxc first (`ptxc::driver`).
//!
//! Parameters are given in order, each naturally aligned from `c[0x0][0x210]`:
//! `--input FILE` (a global buffer holding the file, its address passed), `--output N` (a
//! zeroed N-byte buffer, printed in hex after the launch), `--u32 V` and `--u64 V` (values).
//! `--block X[,Y[,Z]]`, `--grid X[,Y[,Z]]` and `--shared N` (dynamic shared bytes) shape the
//! launch.

use ptxc_sim::{Device, Kernel, LaunchConfig};
use std::process::ExitCode;

const USAGE: &str = "usage: ptxc-sim CUBIN|PTX KERNEL [--block X,Y,Z] [--grid X,Y,Z] \
                     [--shared N] [--input FILE | --output N | --u32 V | --u64 V]...";

/// Compiles `kernel` of a PTX file with ptxc.
fn compile_ptx(path: &str, kernel: &str) -> Result<Kernel, String> {
    use ptxc::diag::SourceFile;
    use ptxc::driver;
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let src = SourceFile::new(path.to_string(), text);
    let render =
        |d: Vec<ptxc::diag::Diagnostic>| d.first().map(|d| src.render(d)).unwrap_or_default();
    let checked = driver::frontend(&src, ptxc::frontend::check::Arch::SM90A).map_err(render)?;
    let (lowered, _) = driver::lower(&checked, &ptxc::passes::Options::new()).map_err(render)?;
    let funcs = driver::encode(&lowered).map_err(render)?;
    let i = funcs
        .iter()
        .position(|f| f.name == kernel)
        .ok_or_else(|| format!("no kernel `{kernel}` in {path}"))?;
    let shared = lowered.frames.get(i).map_or(0, |f| f.shared_bytes);
    Ok(Kernel::from_words(kernel, &funcs[i].words, 0x400 + shared))
}

fn parse_num(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("not a number: `{s}`"))
}

fn parse_dim(s: &str) -> Result<[u32; 3], String> {
    let mut d = [1u32; 3];
    for (i, p) in s.split(',').enumerate() {
        if i >= 3 {
            return Err(format!("more than three dimensions: `{s}`"));
        }
        d[i] = u32::try_from(parse_num(p)?).map_err(|_| format!("too large: `{p}`"))?;
    }
    Ok(d)
}

fn align(params: &mut Vec<u8>, n: usize) {
    while !params.len().is_multiple_of(n) {
        params.push(0);
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let [cubin, kernel, rest @ ..] = args else {
        return Err(USAGE.to_string());
    };
    let k = if cubin.ends_with(".ptx") {
        compile_ptx(cubin, kernel)?
    } else {
        let bytes = std::fs::read(cubin).map_err(|e| format!("cannot read {cubin}: {e}"))?;
        Kernel::from_cubin(&bytes, kernel).map_err(|e| e.to_string())?
    };
    let mut dev = Device::new();
    let mut cfg = LaunchConfig::new([1, 1, 1], [1, 1, 1]);
    let mut params = Vec::new();
    let mut outputs = Vec::new();
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let val = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--block" => cfg.block = parse_dim(val)?,
            "--grid" => cfg.grid = parse_dim(val)?,
            "--shared" => {
                cfg.dynamic_shared =
                    u32::try_from(parse_num(val)?).map_err(|_| "--shared: too large")?
            }
            "--input" => {
                let data = std::fs::read(val).map_err(|e| format!("cannot read {val}: {e}"))?;
                let a = dev.global.alloc(val, data);
                align(&mut params, 8);
                params.extend(a.to_le_bytes());
            }
            "--output" => {
                let n = usize::try_from(parse_num(val)?).map_err(|_| "--output: too large")?;
                let a = dev.global.alloc("output", vec![0; n]);
                outputs.push(a);
                align(&mut params, 8);
                params.extend(a.to_le_bytes());
            }
            "--u32" => {
                let v = u32::try_from(parse_num(val)?).map_err(|_| "--u32: too large")?;
                align(&mut params, 4);
                params.extend(v.to_le_bytes());
            }
            "--u64" => {
                align(&mut params, 8);
                params.extend(parse_num(val)?.to_le_bytes());
            }
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    cfg.params = params;
    let stats = dev.launch(&k, &cfg).map_err(|e| e.to_string())?;
    for a in outputs {
        let data = dev
            .global
            .region(a)
            .map(|r| r.data.clone())
            .unwrap_or_default();
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        println!("{hex}");
    }
    eprintln!(
        "ptxc-sim: {} warp instructions, {} thread instructions{}",
        stats.warp_instructions,
        stats.thread_instructions,
        if stats.approximations.is_empty() {
            String::new()
        } else {
            format!(
                "; approximations: {}",
                stats
                    .approximations
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ptxc-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
