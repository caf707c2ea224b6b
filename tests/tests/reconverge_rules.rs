//! The reconvergence rules of `passes/reconverge.rs` against ptxas, kernel by kernel.
//!
//! `docs/passes/examples/reconverge/*.ptx` are the probes `docs/passes/reconverge.md` derives
//! its rules from: `@p bra` over 1–32 instructions, if/else of every size around the limit,
//! loops counted by `%tid.x` and by a parameter, guarded warp-synchronous instructions with
//! full, partial and register masks, and `setmaxnreg` where the warp is converged or not. For
//! every kernel, ptxc's code must bracket with `BSSY`/`BSYNC` exactly when ptxas's does, wait
//! with `WARPSYNC` exactly when ptxas's does, and leave a divergent branch exactly when ptxas's
//! does (a predicated region has none).

use ptxc_tests::sass::{paired_functions, ptx_files_in};
use std::path::PathBuf;

/// What decides a kernel's shape: does it have a convergence barrier, a `WARPSYNC`, a guarded
/// branch (other than the end-of-code `BRA` to itself)?
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Shape {
    bssy: bool,
    warpsync: bool,
    guarded_branch: bool,
}

fn shape<'a>(lines: impl Iterator<Item = &'a str>) -> Shape {
    let mut s = Shape {
        bssy: false,
        warpsync: false,
        guarded_branch: false,
    };
    for l in lines {
        let l = l.trim();
        s.bssy |= l.contains("BSSY");
        s.warpsync |= l.contains("WARPSYNC");
        s.guarded_branch |= l.starts_with('@') && l.contains(" BRA");
    }
    s
}

fn probes() -> Vec<PathBuf> {
    let v = ptx_files_in(&ptxc_tests::workspace_root().join("docs/passes/examples/reconverge"));
    assert!(!v.is_empty(), "docs/passes/examples/reconverge");
    v
}

#[test]
fn bssy_warpsync_and_predication_as_ptxas_decides() {
    let mut kernels = 0;
    let mut differ = Vec::new();
    for path in probes() {
        let Some(functions) = paired_functions(&path) else {
            return; // the reference tools are skipped (never in CI)
        };
        for f in functions {
            let w = shape(f.ptxas.iter().map(String::as_str));
            let got = shape(f.ptxc.iter().map(String::as_str));
            kernels += 1;
            if got != w {
                differ.push(format!(
                    "{} `{}`: ptxas {w:?}, ptxc {got:?}",
                    path.file_name().unwrap().to_string_lossy(),
                    f.name
                ));
            }
        }
    }
    println!(
        "reconverge-rules: {} of {kernels} probe kernels shaped as ptxas's",
        kernels - differ.len()
    );
    // Enough probes to mean something (64 today: skip sizes, if/else pairs, loops, warp syncs,
    // uniform shuffles, tensor-map copies, `setmaxnreg` with and without its `WARPSYNC`).
    assert!(kernels >= 64, "only {kernels} probe kernels");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
