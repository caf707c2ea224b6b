//! Test support for the cubin writer and reader: relinking (read → write), describing where two
//! cubins differ, and running the reference tools on many cubins at once.

use crate::{Tool, require, tempdir};
use ptxc::emit::elf::Elf;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Reads a cubin into the model and writes it back.
pub fn relink(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let model = ptxc::emit::read(bytes).map_err(|e| e.to_string())?;
    ptxc::emit::write(&model).map_err(|e| e.to_string())
}

/// Where two cubins first differ, by section; `None` when they are byte-identical.
pub fn first_difference(want: &[u8], got: &[u8]) -> Option<String> {
    if want == got {
        return None;
    }
    let (a, b) = match (Elf::parse(want), Elf::parse(got)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) => return Some(format!("reference does not parse: {e}")),
        (_, Err(e)) => return Some(format!("rebuilt cubin does not parse: {e}")),
    };
    if a.names != b.names {
        let i = a
            .names
            .iter()
            .zip(&b.names)
            .position(|(x, y)| x != y)
            .unwrap_or(a.names.len().min(b.names.len()));
        return Some(format!(
            "section lists differ at index {i}: want {:?}, got {:?}",
            a.names.get(i),
            b.names.get(i)
        ));
    }
    for i in 0..a.sections.len() {
        let (x, y) = (
            a.section_data(i).unwrap_or(&[]),
            b.section_data(i).unwrap_or(&[]),
        );
        if x != y && a.names[i] == ".symtab" {
            let (sa, sb) = (
                a.symbols(i).unwrap_or_default(),
                b.symbols(i).unwrap_or_default(),
            );
            let name = |e: &Elf, s: &ptxc::emit::elf::Symbol| {
                let t = e
                    .find(".strtab")
                    .and_then(|k| e.section_data(k).ok())
                    .unwrap_or(&[]);
                ptxc::emit::elf::str_at(t, s.name, "").unwrap_or_default()
            };
            let k = sa
                .iter()
                .zip(&sb)
                .position(|(p, q)| p != q)
                .unwrap_or(sa.len().min(sb.len()));
            return Some(format!(
                ".symtab: symbol {k} differs ({} / {} symbols): want {:?} {:?}, got {:?} {:?}",
                sa.len(),
                sb.len(),
                sa.get(k).map(|s| name(&a, s)),
                sa.get(k),
                sb.get(k).map(|s| name(&b, s)),
                sb.get(k)
            ));
        }
        if x != y {
            let at = x
                .iter()
                .zip(y)
                .position(|(p, q)| p != q)
                .unwrap_or(x.len().min(y.len()));
            return Some(format!(
                "{}: contents differ at +{at:#x} (sizes {:#x} / {:#x}): want {:02x?}, got {:02x?}",
                a.names[i],
                x.len(),
                y.len(),
                &x[at..(at + 16).min(x.len())],
                &y[at..(at + 16).min(y.len())]
            ));
        }
        if a.sections[i] != b.sections[i] {
            return Some(format!(
                "{}: headers differ: want {:?}, got {:?}",
                a.names[i], a.sections[i], b.sections[i]
            ));
        }
    }
    if a.header != b.header {
        return Some(format!(
            "ELF headers differ: want {:?}, got {:?}",
            a.header, b.header
        ));
    }
    if a.phdrs != b.phdrs {
        return Some(format!(
            "program headers differ: want {:?}, got {:?}",
            a.phdrs, b.phdrs
        ));
    }
    let at = want.iter().zip(got).position(|(p, q)| p != q).unwrap_or(0);
    Some(format!(
        "bytes differ at {at:#x} (sizes {:#x} / {:#x})",
        want.len(),
        got.len()
    ))
}

/// Runs `tool args FILE` for each file in one process per batch (the tools accept several
/// files), returning each file's output. nvdisasm takes one file per run, so it runs per file
/// in parallel threads. Returns `None` when the reference tools are skipped.
pub fn tool_outputs(tool: Tool, args: &[&str], files: &[PathBuf]) -> Option<Vec<String>> {
    let path = require(tool, "running a reference tool")?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 4);
    let chunks: Vec<Vec<(usize, PathBuf)>> = (0..threads)
        .map(|t| {
            files
                .iter()
                .enumerate()
                .filter(|(i, _)| i % threads == t)
                .map(|(i, p)| (i, p.clone()))
                .collect()
        })
        .collect();
    let mut out = vec![String::new(); files.len()];
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let path = path.clone();
                s.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|(i, f)| (i, run_one(&path, args, &f)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (i, o) in h.join().expect("tool thread") {
                out[i] = o;
            }
        }
    });
    Some(out)
}

/// Runs a tool once; the output is stdout, or `ERROR: ` and stderr when it fails (so that a
/// failure on the rebuilt file is a difference, not a panic).
fn run_one(tool: &Path, args: &[&str], file: &Path) -> String {
    match Command::new(tool).args(args).arg(file).output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => format!(
            "ERROR ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => format!("ERROR: cannot run {}: {e}", tool.display()),
    }
}

/// The first line where two tool outputs differ, with context.
pub fn first_line_difference(want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let i = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    Some(format!(
        "line {}: want {:?}, got {:?}",
        i + 1,
        a.get(i).unwrap_or(&"<end>"),
        b.get(i).unwrap_or(&"<end>")
    ))
}

/// Writes `bytes` under a fresh temporary directory as `name` and returns the path.
pub fn temp_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write temporary file");
    p
}

/// A fresh temporary directory (re-exported for the cubin tests).
pub fn scratch() -> PathBuf {
    tempdir()
}
