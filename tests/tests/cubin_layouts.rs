//! Layout rules the corpora exercise only lightly: several kernels, subroutines, module
//! variables of every kind, textures, parameters with large alignment, cluster directives,
//! external calls, and `-g` builds of them. Each PTX file under `tests/tests/cubin_ptx/` is
//! assembled by ptxas, read into the model and written back; the result must be byte-identical
//! and `cuobjdump -elf` must print the same.

use ptxc_tests::cubin::{first_difference, first_line_difference, relink, tool_outputs};
use ptxc_tests::{Tool, ptxas, tempdir, workspace_root};
use std::path::PathBuf;

fn sources() -> Vec<PathBuf> {
    let dir = workspace_root().join("tests/tests/cubin_ptx");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/tests/cubin_ptx")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    v.sort();
    v
}

#[test]
fn layouts_relink_byte_identical() {
    let dir = tempdir();
    let mut failures = Vec::new();
    let (mut want_files, mut got_files, mut labels) = (Vec::new(), Vec::new(), Vec::new());
    for src in sources() {
        for args in [&[][..], &["-g"][..]] {
            let label = format!("{} {}", src.display(), args.join(" "));
            let Some(res) = ptxas(&src, args) else { return };
            let cubin = res
                .cubin
                .unwrap_or_else(|| panic!("ptxas rejects {label}: {}", res.log));
            match relink(&cubin) {
                Err(e) => failures.push(format!("{label}: {e}")),
                Ok(rebuilt) => {
                    if let Some(d) = first_difference(&cubin, &rebuilt) {
                        failures.push(format!("{label}: not byte-identical: {d}"));
                    }
                    let n = want_files.len();
                    std::fs::create_dir_all(dir.join("w")).expect("mkdir");
                    std::fs::create_dir_all(dir.join("g")).expect("mkdir");
                    let w = dir.join("w").join(format!("{n}.cubin"));
                    let g = dir.join("g").join(format!("{n}.cubin"));
                    std::fs::write(&w, &cubin).expect("write");
                    std::fs::write(&g, &rebuilt).expect("write");
                    want_files.push(w);
                    got_files.push(g);
                    labels.push(label);
                }
            }
        }
    }
    if let (Some(w), Some(g)) = (
        tool_outputs(Tool::Cuobjdump, &["-elf"], &want_files),
        tool_outputs(Tool::Cuobjdump, &["-elf"], &got_files),
    ) {
        for ((a, b), l) in w.iter().zip(&g).zip(&labels) {
            if let Some(d) = first_line_difference(a, b) {
                failures.push(format!("{l}: cuobjdump -elf differs: {d}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
