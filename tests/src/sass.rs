//! Test support for the SASS encoder, printer and assembler: batched `nvdisasm -b SM90a` runs on
//! raw words, and cached `cuobjdump -sass` listings of ptxas output.

use crate::{Tool, ptxas, require, tempdir, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What nvdisasm printed for one word: the text (`Ok`) or its error (`Err`).
pub type Disasm = Result<String, String>;

/// Writes words as a raw file (two little-endian u64 per instruction).
pub fn write_raw(path: &Path, words: &[[u64; 2]]) {
    let mut bytes = Vec::with_capacity(words.len() * 16);
    for w in words {
        bytes.extend_from_slice(&w[0].to_le_bytes());
        bytes.extend_from_slice(&w[1].to_le_bytes());
    }
    std::fs::write(path, bytes).expect("write raw words");
}

/// The instruction texts of an nvdisasm/cuobjdump listing, by address (`/*0040*/ TEXT ;`).
fn listing_texts(out: &str) -> Vec<(u64, String)> {
    let mut v = Vec::new();
    for l in out.lines() {
        let t = l.trim_start();
        let Some(rest) = t.strip_prefix("/*") else {
            continue;
        };
        let Some(end) = rest.find("*/") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(&rest[..end], 16) else {
            continue;
        };
        let body = &rest[end + 2..];
        let text = match body.rfind(';') {
            Some(k) => &body[..k],
            None => body,
        };
        v.push((addr, text.trim().to_string()));
    }
    v
}

const NOP: [u64; 2] = [0x0000_0000_0000_7918, 0x000f_c000_0000_0000];

/// Disassembles words with `nvdisasm -b SM90a -c`, word i at address 16·i. A word nvdisasm
/// rejects is reported as `Err` (and replaced by a NOP so the others keep their addresses).
/// `None` when the reference tools are skipped.
pub fn nvdisasm_words(words: &[[u64; 2]]) -> Option<Vec<Disasm>> {
    let tool = require(Tool::Nvdisasm, "disassembling raw SASS words")?;
    let dir = tempdir();
    let path = dir.join("words.bin");
    let mut words = words.to_vec();
    let mut errors: Vec<Option<String>> = vec![None; words.len()];
    let result = loop {
        write_raw(&path, &words);
        let o = Command::new(&tool)
            .args(["-b", "SM90a", "-c"])
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()));
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        if o.status.success() {
            let texts = listing_texts(&String::from_utf8_lossy(&o.stdout));
            let mut out: Vec<Disasm> = vec![Err("not printed".into()); words.len()];
            for (addr, t) in texts {
                let i = (addr / 16) as usize;
                if i < out.len() {
                    out[i] = Ok(t);
                }
            }
            for (i, e) in errors.iter().enumerate() {
                if let Some(e) = e {
                    out[i] = Err(e.clone());
                }
            }
            break out;
        }
        // `... at address 0x00000010`: replace that word by a NOP and retry.
        let addr = stderr
            .split("at address 0x")
            .nth(1)
            .and_then(|s| u64::from_str_radix(s.split_whitespace().next()?, 16).ok());
        match addr {
            Some(a) if ((a / 16) as usize) < words.len() && errors[(a / 16) as usize].is_none() => {
                let i = (a / 16) as usize;
                errors[i] = Some(stderr.lines().next().unwrap_or("").trim().to_string());
                words[i] = NOP;
            }
            _ => panic!("nvdisasm failed without an address: {stderr}"),
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    Some(result)
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `cuobjdump -sass` of a cubin, cached under `target/ref-cache/` by the cubin's content.
pub fn cuobjdump_sass_cached(cubin: &[u8]) -> Option<String> {
    let tool = require(Tool::Cuobjdump, "listing SASS with cuobjdump")?;
    let dir = workspace_root().join("target").join("ref-cache");
    let _ = std::fs::create_dir_all(&dir);
    let key = dir.join(format!("{:016x}-{}.sass", fnv(cubin), cubin.len()));
    if let Ok(s) = std::fs::read_to_string(&key) {
        return Some(s);
    }
    let tmp = tempdir();
    let p = tmp.join("x.cubin");
    std::fs::write(&p, cubin).expect("write cubin");
    let o = Command::new(&tool)
        .arg("-sass")
        .arg(&p)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()));
    assert!(
        o.status.success(),
        "cuobjdump -sass failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = String::from_utf8_lossy(&o.stdout).into_owned();
    let part = key.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&part, &s).is_ok() {
        let _ = std::fs::rename(&part, &key);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Some(s)
}

/// The `cuobjdump -sass` listing of what ptxas makes of a PTX file, or `None` when ptxas
/// rejects it (or the tools are skipped).
pub fn ptxas_listing(ptx: &Path) -> Option<String> {
    ptxas_listing_with(ptx, &[])
}

/// [`ptxas_listing`] with extra ptxas arguments (`-g`).
pub fn ptxas_listing_with(ptx: &Path, extra: &[&str]) -> Option<String> {
    let r = ptxas(ptx, extra)?;
    let cubin = r.cubin?;
    cuobjdump_sass_cached(&cubin)
}

/// The encoding probes of `tests/sass-probes/ptx/` (forms the corpus does not exercise).
pub fn sass_probe_ptx() -> Vec<PathBuf> {
    ptx_files_in(
        &workspace_root()
            .join("tests")
            .join("sass-probes")
            .join("ptx"),
    )
}

/// The `.ptx` files of one folder, sorted by name (none when the folder is missing).
pub fn ptx_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// One function compiled by both compilers.
pub struct PairedFunction {
    pub name: String,
    /// ptxas's instruction texts ([`listing_functions`]).
    pub ptxas: Vec<String>,
    /// ptxc's listing lines ([`crate::listing_lines`]).
    pub ptxc: Vec<String>,
}

/// One PTX file compiled by both compilers, per function of ptxc's code. `None` when the
/// reference tools are skipped; panics when ptxc fails or ptxas has no such function.
pub fn paired_functions(path: &Path) -> Option<Vec<PairedFunction>> {
    let listing = ptxas_listing(path)?;
    let theirs = listing_functions(&listing);
    let text = std::fs::read_to_string(path).expect("a PTX file");
    let src = ptxc::diag::SourceFile::new(path.display().to_string(), text);
    let (encoded, _, _) =
        crate::compile_pipeline(&src).unwrap_or_else(|d| panic!("{}", src.render(&d[0])));
    Some(
        encoded
            .iter()
            .map(|f| {
                let Some((_, code)) = theirs.iter().find(|(n, _)| *n == f.name) else {
                    panic!("{}: ptxas has no function `{}`", path.display(), f.name);
                };
                let code = code.iter().map(|t| t.to_string()).collect();
                PairedFunction {
                    name: f.name.clone(),
                    ptxas: code,
                    ptxc: crate::listing_lines(f),
                }
            })
            .collect(),
    )
}

/// Each function of a `cuobjdump -sass` listing with its instructions' text (what comes
/// between the address comment and the `;`), in listing order.
pub fn listing_functions(listing: &str) -> Vec<(String, Vec<&str>)> {
    listing
        .split("Function : ")
        .skip(1)
        .map(|b| {
            let (name, body) = b.split_once('\n').unwrap_or((b, ""));
            let code = body
                .lines()
                .filter_map(|l| {
                    let (_, rest) = l.split_once("*/")?;
                    let (text, _) = rest.split_once(';')?;
                    Some(text)
                })
                .collect();
            (name.trim().to_string(), code)
        })
        .collect()
}

/// Listings for a set of PTX files: `(file, listing)` for each one ptxas accepts.
/// `None` when the tools are skipped.
pub fn listings(files: &[PathBuf]) -> Option<Vec<(PathBuf, String)>> {
    listings_with(files, &[])
}

/// [`listings`] with extra ptxas arguments (`-g`).
pub fn listings_with(files: &[PathBuf], extra: &[&str]) -> Option<Vec<(PathBuf, String)>> {
    require(Tool::Ptxas, "assembling with ptxas")?;
    require(Tool::Cuobjdump, "listing SASS with cuobjdump")?;
    // Two workers: CI has two cores, and the results are cached after the first run.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<String>>> =
        files.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= files.len() {
                        break;
                    }
                    let l = ptxas_listing_with(&files[i], extra);
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = l;
                }
            });
        }
    });
    Some(
        files
            .iter()
            .zip(results)
            .filter_map(|(f, r)| {
                r.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .map(|l| (f.clone(), l))
            })
            .collect(),
    )
}
