//! End to end, as far as SASS: every corpus file, probe and project kernel that ptxc can lower
//! compiles to encoded SASS whose words `nvdisasm -b SM90a` decodes to exactly the text of
//! `ptxc --emit sass`. Prints how many files compile.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc_tests::{Tool, corpus, own_kernels, probes, require, tempdir};
use std::path::PathBuf;
use std::process::Command;

fn compile(path: &std::path::Path) -> Result<Vec<ptxc::emit::sass::EncodedFunction>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let src = SourceFile::new(path.display().to_string(), text);
    let checked = driver::frontend(&src, Arch::SM90A).map_err(|d| src.render(&d[0]))?;
    let opts = ptxc::passes::Options {
        verify: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).map_err(|d| src.render(&d[0]))?;
    driver::encode(&lowered).map_err(|d| src.render(&d[0]))
}

/// nvdisasm's text for raw words, one instruction per line, without addresses and `;`.
fn nvdisasm_lines(nvdisasm: &std::path::Path, words: &[[u64; 2]]) -> Vec<String> {
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
    assert!(
        out.status.success(),
        "nvdisasm: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let body = l.strip_prefix("/*")?.split_once("*/")?.1.trim();
            Some(body.trim_end_matches(';').trim().to_string())
        })
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn compiled_code_disassembles_as_listed() {
    let Some(nvdisasm) = require(Tool::Nvdisasm, "e2e SASS check") else {
        return;
    };
    let mut files: Vec<PathBuf> = corpus()
        .into_iter()
        .filter(|f| f.accepted)
        .map(|f| f.path)
        .collect();
    files.extend(own_kernels());
    files.extend(probes(0..=20));
    let total = files.len();
    let mut compiled = 0;
    let mut mismatches = Vec::new();
    for path in &files {
        let Ok(functions) = compile(path) else {
            continue;
        };
        compiled += 1;
        for f in &functions {
            let ours: Vec<String> = ptxc::emit::sass::listing(f)
                .unwrap()
                .lines()
                .skip(1)
                .filter_map(|l| {
                    l.split_once("*/")
                        .map(|(_, t)| t.trim().trim_end_matches(';').trim().to_string())
                })
                .collect();
            let theirs = nvdisasm_lines(&nvdisasm, &f.words);
            if ours != theirs {
                let first = ours
                    .iter()
                    .zip(&theirs)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                mismatches.push(format!(
                    "{} `{}`: instruction {first}: ptxc `{}` vs nvdisasm `{}`",
                    path.display(),
                    f.name,
                    ours.get(first).map_or("", String::as_str),
                    theirs.get(first).map_or("", String::as_str)
                ));
            }
        }
    }
    println!(
        "e2e-sass: {compiled}/{total} files compile to SASS; {} listing mismatches",
        mismatches.len()
    );
    assert!(compiled > 0);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
