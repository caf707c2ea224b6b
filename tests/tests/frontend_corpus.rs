//! The frontend against ptxas on real PTX: every corpus file, every probe and every kernel of the
//! project. ptxc must accept exactly what ptxas accepts (its verdict is taken live from the
//! provisioned ptxas, cached), and reject what ptxas rejects for a real error.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc_tests::{corpus, own_kernels, probes, ptxas};
use std::path::PathBuf;

/// ptxas verdicts that say nothing about the input.
const PTXAS_CRASHES: &[&str] = &[
    // ptxas 13.1 dies with SIGSEGV (ZLUDA notes "This segfaults NV compiler"); the PTX is valid.
    "implicit_param.ptx",
];

struct Verdict {
    path: PathBuf,
    ptxas_ok: bool,
    ptxas_line: Option<usize>,
    ptxc_ok: bool,
    ptxc_line: Option<usize>,
    ptxc_first: String,
}

fn first_ptxas_error_line(log: &str) -> Option<usize> {
    log.lines()
        .filter(|l| l.contains("error") || l.contains("fatal"))
        .find_map(|l| {
            l.split(", line ")
                .nth(1)?
                .split(';')
                .next()?
                .trim()
                .parse()
                .ok()
        })
}

fn judge(files: Vec<PathBuf>) -> Option<Vec<Verdict>> {
    let chunks: Vec<Vec<PathBuf>> = files
        .chunks(files.len().div_ceil(2).max(1))
        .map(<[_]>::to_vec)
        .collect();
    let results: Vec<Option<Vec<Verdict>>> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    let mut out = Vec::new();
                    for path in chunk {
                        let r = ptxas(&path, &[])?;
                        let text =
                            String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                        let src = SourceFile::new(path.display().to_string(), text);
                        let (ptxc_ok, ptxc_line, ptxc_first) =
                            match driver::frontend(&src, Arch::SM90A) {
                                Ok(_) => (true, None, String::new()),
                                Err(ds) => {
                                    let d = ds.iter().find(|d| d.is_error()).expect("an error");
                                    (false, Some(src.line_col(d.span.start).0), src.render(d))
                                }
                            };
                        out.push(Verdict {
                            ptxas_ok: r.cubin.is_some(),
                            ptxas_line: first_ptxas_error_line(&r.log),
                            path,
                            ptxc_ok,
                            ptxc_line,
                            ptxc_first,
                        });
                    }
                    Some(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect()
    });
    let mut all = Vec::new();
    for r in results {
        all.extend(r?);
    }
    Some(all)
}

fn check_agreement(what: &str, files: Vec<PathBuf>) {
    let Some(verdicts) = judge(files) else { return };
    let crash = |v: &Verdict| PTXAS_CRASHES.iter().any(|c| v.path.ends_with(c));
    let accepted: Vec<&Verdict> = verdicts.iter().filter(|v| v.ptxas_ok).collect();
    let rejected: Vec<&Verdict> = verdicts
        .iter()
        .filter(|v| !v.ptxas_ok && !crash(v))
        .collect();
    let parsed = accepted.iter().filter(|v| v.ptxc_ok).count();
    let also_rejected = rejected.iter().filter(|v| !v.ptxc_ok).count();
    let same_line = rejected
        .iter()
        .filter(|v| v.ptxas_line.is_some() && v.ptxas_line == v.ptxc_line)
        .count();
    let with_line = rejected.iter().filter(|v| v.ptxas_line.is_some()).count();
    println!(
        "frontend {what}: ptxas accepts {}: ptxc parses and checks {parsed}; ptxas rejects {}: ptxc rejects {also_rejected} \
         (same first error line in {same_line} of the {with_line} where ptxas gives one); {} ptxas crash(es) excluded",
        accepted.len(),
        rejected.len(),
        verdicts.iter().filter(|v| crash(v)).count()
    );
    let mut wrong = Vec::new();
    for v in accepted.iter().filter(|v| !v.ptxc_ok) {
        wrong.push(format!(
            "ptxas accepts, ptxc rejects {}:\n{}",
            v.path.display(),
            v.ptxc_first
        ));
    }
    for v in rejected.iter().filter(|v| v.ptxc_ok) {
        wrong.push(format!("ptxas rejects, ptxc accepts {}", v.path.display()));
    }
    assert!(
        wrong.is_empty(),
        "{} disagreement(s):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn corpus_agrees_with_ptxas() {
    let files: Vec<PathBuf> = corpus().into_iter().map(|f| f.path).collect();
    assert!(
        files.len() >= 270,
        "the corpora are missing ({} files)",
        files.len()
    );
    check_agreement("corpus", files);
}

#[test]
fn probes_agree_with_ptxas() {
    let files = probes(0..=20);
    assert!(
        files.len() >= 500,
        "the probes are missing ({} files)",
        files.len()
    );
    check_agreement("probes", files);
}

#[test]
fn own_kernels_agree_with_ptxas() {
    let files = own_kernels();
    assert!(
        files.len() >= 10,
        "tests/kernels holds {} PTX files",
        files.len()
    );
    check_agreement("own kernels", files);
}

#[test]
fn manifest_verdicts_match_live_ptxas() {
    // The corpus manifests were written with the same ptxas; a mismatch means the provisioned
    // toolchain is not the pinned one.
    for f in corpus() {
        if PTXAS_CRASHES.iter().any(|c| f.path.ends_with(c)) {
            continue;
        }
        let Some(r) = ptxas(&f.path, &[]) else { return };
        assert_eq!(
            r.cubin.is_some(),
            f.accepted,
            "{}: manifest says {:?}",
            f.path.display(),
            f.ptxas_error
        );
    }
}

/// The fast path (`simple_instr::fold` over the chained tokens) builds the same syntax tree as
/// the grammar on the plain tokens, for every corpus file, probe and project kernel; the
/// hand-scanned chained tokens are the ones logos gives.
#[test]
fn fast_and_plain_parses_build_the_same_tree() {
    let mut files: Vec<PathBuf> = corpus().into_iter().map(|f| f.path).collect();
    files.extend(probes(0..=20));
    files.extend(own_kernels());
    let mut compared = 0;
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        assert!(
            ptxc::frontend::lexer::tokenize_chained(&text)
                == ptxc::frontend::lexer::tokenize_chained_logos(&text),
            "{}: the chained tokens differ from logos's",
            path.display()
        );
        let fast = ptxc::frontend::parse(&text);
        let plain = ptxc::frontend::parse_plain(&text);
        assert_eq!(fast.is_ok(), plain.is_ok(), "{}", path.display());
        if let (Ok(fast), Ok(plain)) = (fast, plain) {
            assert!(fast == plain, "{}: the trees differ", path.display());
            compared += 1;
        }
    }
    assert!(compared >= 300, "only {compared} files parsed");
}
