//! `-g` exit bookend (ptxas-facts.md §a.3.7): under `-g`, ptxas precedes every EXIT with
//! `MEMBAR.SC.VC; ERRBAR; CGAERRBAR`, carrying the EXIT's predicate; without `-g` an EXIT is
//! plain. ptxc must do the same, on every file of the exit probes and samples it compiles.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc_tests::{cuobjdump_sass, probes, ptxas, workspace_root};
use std::path::{Path, PathBuf};

/// The instruction texts of a listing (`/*0010*/  TEXT ;` lines), without addresses.
fn texts(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|l| {
            let body = l.trim().strip_prefix("/*")?.split_once("*/")?.1;
            let body = body.split("/*").next()?.trim().trim_end_matches(';').trim();
            Some(body.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// For every EXIT: whether the three instructions before it are the bookend with its guard.
fn exits(texts: &[String]) -> Vec<bool> {
    texts
        .iter()
        .enumerate()
        .filter(|(_, t)| t.ends_with("EXIT"))
        .map(|(i, t)| {
            let guard = t.strip_suffix("EXIT").unwrap_or("").trim();
            let with = |m: &str| {
                if guard.is_empty() {
                    m.to_string()
                } else {
                    format!("{guard} {m}")
                }
            };
            i >= 3
                && texts[i - 3] == with("MEMBAR.SC.VC")
                && texts[i - 2] == with("ERRBAR")
                && texts[i - 1] == with("CGAERRBAR")
        })
        .collect()
}

fn ptxc_texts(path: &Path, debug: bool) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let src = SourceFile::new(path.display().to_string(), text);
    let checked = driver::frontend(&src, Arch::SM90A).ok()?;
    let opts = ptxc::passes::Options {
        verify: true,
        device_debug: debug,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).ok()?;
    let encoded = driver::encode(&lowered).ok()?;
    let mut out = Vec::new();
    for f in &encoded {
        out.extend(texts(&ptxc::emit::sass::listing(f).ok()?));
    }
    Some(out)
}

fn files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = probes(7..=7)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    for s in std::fs::read_dir(workspace_root().join("samples")).unwrap() {
        files.push(s.unwrap().path());
    }
    files.sort();
    files
}

#[test]
fn every_exit_has_the_debug_bookend_under_g_and_none_without() {
    let (mut compiled, mut exits_seen) = (0, 0);
    for path in files() {
        let Some(debug) = ptxc_texts(&path, true) else {
            continue;
        };
        let plain = ptxc_texts(&path, false).expect("compiles with -g but not without");
        let ours = exits(&debug);
        assert!(!ours.is_empty(), "{}: no EXIT", path.display());
        assert!(
            ours.iter().all(|&b| b),
            "{}: an EXIT without the bookend under -g:\n{}",
            path.display(),
            debug.join("\n")
        );
        assert!(
            !plain.iter().any(|t| t.contains("MEMBAR.SC.VC")),
            "{}: bookend without -g",
            path.display()
        );
        // ptxas -g bookends every EXIT too, so the recipe ptxc follows is the live one.
        if let Some(res) = ptxas(&path, &["-g"]) {
            let cubin = res.cubin.expect("ptxas -g accepts the file");
            let theirs = exits(&texts(&cuobjdump_sass(&cubin).expect("cuobjdump")));
            assert!(
                !theirs.is_empty() && theirs.iter().all(|&b| b),
                "{}",
                path.display()
            );
        }
        compiled += 1;
        exits_seen += ours.len();
    }
    println!("debug-exit: {compiled} files, {exits_seen} exits bookended");
    assert!(compiled >= 2, "too few files compile: {compiled}");
}
