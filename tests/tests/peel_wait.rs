//! `passes/peel_wait.rs` against ptxas, kernel by kernel: the probes of
//! `docs/passes/peel-wait.md` (`docs/passes/examples/peel_wait/*.ptx`), the wait loops of
//! `shared/notes/probes/09_mbarrier` and the project kernel `mbarrier_bulk_copy`. For every
//! kernel ptxc's code must have ptxas's sequence of mbarrier waits (`SYNCS.PHASECHK…`,
//! `NANOSLEEP`, `CCTL`): two copies of the wait where ptxas peels the loop, one where it does
//! not.

use ptxc_tests::sass::{paired_functions, ptx_files_in};
use std::path::PathBuf;

/// The opcodes of the wait instructions in a listing's lines, in order.
fn waits<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    lines
        .filter_map(|l| {
            let l = l.trim();
            let l = if l.starts_with('@') {
                l.split_once(' ')?.1.trim()
            } else {
                l
            };
            let opcode = l.split_whitespace().next()?;
            ["SYNCS", "NANOSLEEP", "CCTL"]
                .iter()
                .any(|m| opcode.split('.').next() == Some(m))
                .then(|| opcode.to_string())
        })
        .collect()
}

fn probes() -> Vec<PathBuf> {
    let root = ptxc_tests::workspace_root();
    let mut v = ptx_files_in(&root.join("docs/passes/examples/peel_wait"));
    assert!(!v.is_empty(), "docs/passes/examples/peel_wait");
    let mbarrier = root.join("../shared/notes/probes/09_mbarrier");
    for name in [
        "try_wait_loop",
        "try_wait_parity_loop",
        "try_wait_parity_acquire_cluster",
        "try_wait_suspend",
        "test_wait",
        "try_wait",
    ] {
        v.push(mbarrier.join(format!("{name}.ptx")));
    }
    v.push(root.join("tests/kernels/mbarrier_bulk_copy.ptx"));
    v
}

#[test]
fn wait_loops_are_peeled_where_ptxas_peels_them() {
    let (mut kernels, mut peeled) = (0, 0);
    let mut differ = Vec::new();
    for path in probes() {
        if !path.exists() {
            continue; // shared/ is not there
        }
        let Some(functions) = paired_functions(&path) else {
            return; // the reference tools are skipped (never in CI)
        };
        for f in functions {
            let w = waits(f.ptxas.iter().map(String::as_str));
            let got = waits(f.ptxc.iter().map(String::as_str));
            kernels += 1;
            peeled += usize::from(w.iter().filter(|o| o.contains("TRYWAIT")).count() > 1);
            if got != w {
                differ.push(format!(
                    "{} `{}`:\n  ptxas {w:?}\n  ptxc  {got:?}",
                    path.file_name().unwrap().to_string_lossy(),
                    f.name
                ));
            }
        }
    }
    println!(
        "peel-wait: {} of {kernels} kernels wait as ptxas's ({peeled} peeled by ptxas)",
        kernels - differ.len()
    );
    // The 18 kernels of docs/passes/examples/peel_wait and the shared mbarrier probes.
    assert!(kernels >= 18, "only {kernels} kernels");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
