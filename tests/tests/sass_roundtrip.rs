//! The corpus round trip: every instruction ptxas 13.1 emits for the accepted corpus, the cluster
//! probes (`shared/notes/probes` 00–20) and the project's kernels is re-encoded bit-exactly by
//! `ptxc asm --check`, decodes to nvdisasm's text, and `ptxc asm -o` writes the listed words.

use ptxc::target::sm90a::{decode_at, parse_listing};
use ptxc_tests::sass::{listings, sass_probe_ptx};
use ptxc_tests::{accepted_corpus, own_kernels, probes, ptxc_bin, tempdir};
use std::path::PathBuf;
use std::process::Command;

/// Checks a set of PTX files; returns the number of instructions checked.
fn check_set(what: &str, files: Vec<PathBuf>) -> Option<usize> {
    let ls = listings(&files)?;
    let mut all = String::new();
    for (_, l) in &ls {
        all.push_str(l);
        all.push('\n');
    }
    let listed = parse_listing(&all);
    let m = listed.len();
    eprintln!("{what}: {} files, {m} instructions", ls.len());

    // The printer: decoding the listed words gives the listed text.
    let mut bad = Vec::new();
    for l in &listed {
        let w = l.words.expect("cuobjdump lists both words");
        match decode_at(w, l.addr) {
            Ok(i) if i.to_string() == l.text => {}
            Ok(i) => bad.push(format!(
                "{} +0x{:x}: listed `{}`, printed `{i}`",
                l.function, l.addr, l.text
            )),
            Err(e) => bad.push(format!("{} +0x{:x}: `{}`: {e}", l.function, l.addr, l.text)),
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: {} instructions print differently:\n{}",
        bad.len(),
        bad[..bad.len().min(30)].join("\n")
    );

    // The assembler, through the command line.
    let dir = tempdir();
    let input = dir.join("all.sass");
    std::fs::write(&input, &all).expect("write listing");
    let o = Command::new(ptxc_bin!())
        .args(["asm", "--check"])
        .arg(&input)
        .output()
        .expect("run ptxc asm --check");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let last = stdout.lines().last().unwrap_or("").to_string();
    assert_eq!(
        last,
        format!("asm-check: {m}/{m} instructions bit-exact"),
        "{what}: ptxc asm --check:\n{}",
        &stdout[..stdout.len().min(6000)]
    );
    assert!(
        o.status.success(),
        "{what}: ptxc asm --check exit status {}",
        o.status
    );

    // `-o`: the raw words are the listed words, in order.
    let raw = dir.join("all.bin");
    let o = Command::new(ptxc_bin!())
        .args(["asm", "-arch", "sm_90a"])
        .arg(&input)
        .arg("-o")
        .arg(&raw)
        .output()
        .expect("run ptxc asm -o");
    assert!(
        o.status.success(),
        "{what}: ptxc asm -o: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let bytes = std::fs::read(&raw).expect("read raw output");
    let mut want = Vec::new();
    for l in &listed {
        let w = l.words.unwrap_or_default();
        want.extend_from_slice(&w[0].to_le_bytes());
        want.extend_from_slice(&w[1].to_le_bytes());
    }
    assert!(bytes == want, "{what}: ptxc asm -o wrote different words");
    let _ = std::fs::remove_dir_all(&dir);
    Some(m)
}

#[test]
fn corpus_ptxas_output_reencodes_bit_exactly() {
    let files = accepted_corpus();
    assert!(
        files.len() > 200,
        "the accepted corpus has {} files",
        files.len()
    );
    if let Some(m) = check_set("corpus", files) {
        assert!(m > 10_000, "only {m} instructions");
    }
}

#[test]
fn cluster_probe_ptxas_output_reencodes_bit_exactly() {
    let files = probes(0..=20);
    assert!(files.len() > 500, "{} probe files", files.len());
    if let Some(m) = check_set("probes 00-20", files) {
        assert!(m > 10_000, "only {m} instructions");
    }
}

#[test]
fn encoding_probe_ptxas_output_reencodes_bit_exactly() {
    let files = sass_probe_ptx();
    assert!(files.len() >= 3, "{} encoding probes", files.len());
    check_set("tests/sass-probes/ptx", files);
}

#[test]
fn own_kernels_ptxas_output_reencodes_bit_exactly() {
    let files = own_kernels();
    if files.is_empty() {
        eprintln!("no kernels under tests/kernels yet");
        return;
    }
    check_set("own kernels", files);
}
