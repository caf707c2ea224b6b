//! The arithmetic family of instruction selection, end to end: PTX snippets through the whole
//! pipeline (`frontend` → `lower` → `encode`), compared with the SASS ptxas makes of the same
//! snippet; the coverage of the corpora's arithmetic instructions; and every SASS form the
//! recipes emit decoding with nvdisasm to the listed text.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc_tests::{Tool, accepted_corpus, own_kernels, probes, require, tempdir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles PTX text to encoded SASS (verifier and allocation checker on).
fn compile_text(name: &str, text: &str) -> Result<Vec<ptxc::emit::sass::EncodedFunction>, String> {
    let src = SourceFile::new(name.to_string(), text.to_string());
    let checked = driver::frontend(&src, Arch::SM90A).map_err(|d| src.render(&d[0]))?;
    let opts = ptxc::passes::Options {
        verify: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).map_err(|d| {
        d.iter()
            .map(|d| src.render(d))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    driver::encode(&lowered).map_err(|d| src.render(&d[0]))
}

/// Our listing of a function: one instruction text per line, without the padding.
fn our_lines(f: &ptxc::emit::sass::EncodedFunction) -> Vec<String> {
    ptxc::emit::sass::listing(f)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| {
            l.split_once("*/")
                .map(|(_, t)| t.trim().trim_end_matches(';').trim().to_string())
        })
        .take(f.code_len)
        .collect()
}

/// nvdisasm's text for raw words (`None` with its error when it rejects them).
fn nvdisasm_lines(nvdisasm: &Path, words: &[[u64; 2]]) -> Result<Vec<String>, String> {
    let dir = tempdir();
    let raw = dir.join("code.bin");
    let bytes: Vec<u8> = words
        .iter()
        .flat_map(|w| w.iter().flat_map(|x| x.to_le_bytes()))
        .collect();
    std::fs::write(&raw, bytes).unwrap();
    let out = Command::new(nvdisasm)
        .args(["-b", "SM90a", "-c"])
        .arg(&raw)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let body = l.trim().strip_prefix("/*")?.split_once("*/")?.1.trim();
            Some(body.trim_end_matches(';').trim().to_string())
        })
        .filter(|l| !l.is_empty())
        .collect())
}

/// The files of the coverage measure: the accepted corpus, the project's kernels, probes 0–20.
fn coverage_files() -> Vec<PathBuf> {
    let mut files = accepted_corpus();
    files.extend(own_kernels());
    files.extend(probes(0..=20));
    files
}

/// Debugging aid: `ISEL_ARITH_FILES=list.txt cargo test -p ptxc-tests --test isel_arith --
/// --ignored each_file_disassembles` checks the files named in the list one by one and names
/// each one nvdisasm disagrees with.
#[test]
#[ignore]
fn each_file_disassembles() {
    let Some(nvdisasm) = require(Tool::Nvdisasm, "isel-arith e2e") else {
        return;
    };
    let files: Vec<PathBuf> = match std::env::var("ISEL_ARITH_FILES") {
        Ok(list) => std::fs::read_to_string(list)
            .unwrap()
            .lines()
            .map(PathBuf::from)
            .collect(),
        Err(_) => coverage_files(),
    };
    let mut bad = 0;
    let mut n = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let Ok(functions) = compile_text(&path.display().to_string(), &text) else {
            continue;
        };
        n += 1;
        for f in &functions {
            let ours = our_lines(f);
            match nvdisasm_lines(&nvdisasm, &f.words[..f.code_len]) {
                Err(e) => {
                    bad += 1;
                    println!(
                        "{}: nvdisasm: {}",
                        path.display(),
                        e.lines().next().unwrap_or("")
                    );
                    let addr = e.split("address 0x").nth(1).and_then(|s| {
                        usize::from_str_radix(s.trim().split_whitespace().next().unwrap_or(""), 16)
                            .ok()
                    });
                    if let Some(a) = addr {
                        println!("    at: {}", ours.get(a / 16).map_or("?", String::as_str));
                    }
                }
                Ok(theirs) if theirs != ours => {
                    bad += 1;
                    let i = ours
                        .iter()
                        .zip(&theirs)
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    println!(
                        "{}: ptxc `{}` vs nvdisasm `{}`",
                        path.display(),
                        ours.get(i).map_or("", String::as_str),
                        theirs.get(i).map_or("", String::as_str)
                    );
                }
                Ok(_) => {}
            }
        }
    }
    println!("each-file: {n} compiled, {bad} disagree");
    assert_eq!(bad, 0);
}
