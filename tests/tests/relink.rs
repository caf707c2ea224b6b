//! The re-link test: every cubin ptxas makes from the corpora, the project's own kernels and the
//! probes (some with `-g`) is read into the cubin model and written back by ptxc's writer; the
//! rebuilt file must disassemble identically (`nvdisasm`) and dump identically
//! (`cuobjdump -elf`). The test prints how many rebuilt files are byte-identical.

use ptxc_tests::cubin::{first_difference, first_line_difference, relink, tool_outputs};
use ptxc_tests::{Tool, accepted_corpus, own_kernels, probes, ptxas, tempdir};
use std::path::PathBuf;

/// How many byte-identical rebuilt files nvdisasm also checks.
const NVDISASM_SAMPLE: usize = 12;

/// The probes assembled with `-g` as well (07_exit has `.g` listings of these).
const DEBUG_PROBES: &[&str] = &[
    "07_exit/exit_instr__none.ptx",
    "07_exit/plain__explicit.ptx",
    "07_exit/plain__none.ptx",
    "07_exit/two_exits__none.ptx",
    "07_exit/two_exits__reqn2.ptx",
    "07_exit/dsmem_st__reqn2.ptx",
    "00_abi/cluster_kernel.ptx",
    "09_mbarrier/try_wait_loop.ptx",
];

struct Input {
    label: String,
    ptx: PathBuf,
    args: Vec<&'static str>,
}

fn inputs() -> Vec<Input> {
    let mut v = Vec::new();
    for p in accepted_corpus()
        .into_iter()
        .chain(own_kernels())
        .chain(probes(0..=20))
    {
        v.push(Input {
            label: p.display().to_string(),
            ptx: p,
            args: vec![],
        });
    }
    let root = ptxc_tests::shared_dir().join("notes").join("probes");
    for d in DEBUG_PROBES {
        let p = root.join(d);
        for args in [vec!["-g"], vec!["-lineinfo"]] {
            v.push(Input {
                label: format!("{} {}", p.display(), args.join(" ")),
                ptx: p.clone(),
                args,
            });
        }
    }
    v
}

/// Assembles every input with ptxas (cached), a few at a time.
fn assemble(inputs: &[Input]) -> Option<Vec<Option<Vec<u8>>>> {
    let threads = 4;
    let mut out: Vec<Option<Vec<u8>>> = vec![None; inputs.len()];
    let mut skipped = false;
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut r = Vec::new();
                    for (i, inp) in inputs.iter().enumerate().filter(|(i, _)| i % threads == t) {
                        match ptxas(&inp.ptx, &inp.args) {
                            Some(res) => r.push((i, res.cubin, false)),
                            None => r.push((i, None, true)),
                        }
                    }
                    r
                })
            })
            .collect();
        for h in hs {
            for (i, c, skip) in h.join().expect("ptxas thread") {
                out[i] = c;
                skipped |= skip;
            }
        }
    });
    (!skipped).then_some(out)
}

#[test]
fn relink_every_ptxas_cubin() {
    let inputs = inputs();
    let Some(cubins) = assemble(&inputs) else {
        return;
    };
    let dir = tempdir();
    let (want_dir, got_dir) = (dir.join("want"), dir.join("got"));
    std::fs::create_dir_all(&want_dir).expect("mkdir");
    std::fs::create_dir_all(&got_dir).expect("mkdir");
    let mut want_files = Vec::new();
    let mut got_files = Vec::new();
    let mut labels = Vec::new();
    let mut failures = Vec::new();
    let mut identical = 0;
    let mut same_bytes = Vec::new();
    let mut total = 0;
    let verbose = std::env::var_os("PTXC_RELINK_VERBOSE").is_some();
    for (inp, cubin) in inputs.iter().zip(&cubins) {
        let Some(cubin) = cubin else { continue };
        total += 1;
        let n = want_files.len();
        let rebuilt = match relink(cubin) {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("{}: {e}", inp.label));
                continue;
            }
        };
        let diff = first_difference(cubin, &rebuilt);
        match &diff {
            None => identical += 1,
            Some(d) if verbose => eprintln!("not byte-identical: {}: {d}", inp.label),
            Some(_) => {}
        }
        same_bytes.push(diff.is_none());
        let w = want_dir.join(format!("{n}.cubin"));
        let g = got_dir.join(format!("{n}.cubin"));
        std::fs::write(&w, cubin).expect("write");
        std::fs::write(&g, &rebuilt).expect("write");
        want_files.push(w);
        got_files.push(g);
        labels.push(inp.label.clone());
    }
    println!("relink: {identical}/{total} byte-identical");
    eprintln!("relink: {identical}/{total} byte-identical");
    if std::env::var_os("PTXC_RELINK_NO_TOOLS").is_none() {
        // cuobjdump -elf is fast: every file. nvdisasm takes about half a second per file, so it
        // runs on every rebuilt file that is not byte-identical (a deterministic tool gives the
        // same text for the same bytes) and on a sample of the others, to keep the test quick.
        let mut counts = Vec::new();
        for (tool, args) in [(Tool::Cuobjdump, vec!["-elf"]), (Tool::Nvdisasm, vec![])] {
            let pick: Vec<usize> = (0..want_files.len())
                .filter(|&i| {
                    tool == Tool::Cuobjdump
                        || !same_bytes[i]
                        || i % (want_files.len() / NVDISASM_SAMPLE).max(1) == 0
                })
                .collect();
            let w: Vec<PathBuf> = pick.iter().map(|&i| want_files[i].clone()).collect();
            let g: Vec<PathBuf> = pick.iter().map(|&i| got_files[i].clone()).collect();
            let (Some(want), Some(got)) =
                (tool_outputs(tool, &args, &w), tool_outputs(tool, &args, &g))
            else {
                return;
            };
            let mut same = same_bytes.iter().filter(|&&b| b).count();
            for ((k, wo), go) in pick.iter().zip(&want).zip(&got) {
                let i = *k;
                assert!(
                    !wo.starts_with("ERROR"),
                    "{tool} rejects ptxas's cubin for {}: {wo}",
                    labels[i]
                );
                match first_line_difference(wo, go) {
                    None if !same_bytes[i] => same += 1,
                    None => {}
                    Some(d) if same_bytes[i] => {
                        panic!("{tool} is not deterministic on {}: {d}", labels[i])
                    }
                    Some(d) => {
                        failures.push(format!("{}: {tool} {args:?} differs: {d}", labels[i]))
                    }
                }
            }
            counts.push(format!("{tool} identical {same}/{}", want_files.len()));
        }
        println!("relink: {}", counts.join(", "));
        eprintln!("relink: {}", counts.join(", "));
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {total} cubins do not relink:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
