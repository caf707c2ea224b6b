//! The worked examples in `docs/` are real ptxc output, checked on every test run.
//!
//! A Markdown file marks an example with a comment line and a fenced block right after it:
//!
//! ````text
//! <!-- ptxc-example: samples/vector_add.ptx --emit sass --section=dce -->
//! ```text
//! …what ptxc prints…
//! ```
//! ````
//!
//! The words after `ptxc-example:` are ptxc's arguments (after `-arch sm_90a`; paths relative to
//! the workspace root). Without `--section` the block is ptxc's standard output; with
//! `--section=PASS` it is the MIR dump `--print-after=PASS` writes, from `; after PASS` to the next
//! dump. A block that no longer matches fails the test with a diff; `PTXC_BLESS=1 cargo test -p
//! ptxc-tests --test doc_examples` rewrites the blocks (then read the diff before committing:
//! the prose around an example may need to change with it).

use ptxc_tests::{ptxc_bin, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

const MARKER: &str = "<!-- ptxc-example:";

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

/// What ptxc prints for one example's arguments.
fn run_example(spec: &str) -> Result<String, String> {
    let mut section = None;
    let mut args = vec!["-arch".to_string(), "sm_90a".to_string()];
    for word in spec.split_whitespace() {
        if let Some(pass) = word.strip_prefix("--section=") {
            section = Some(pass.to_string());
            args.push(format!("--print-after={pass}"));
        } else {
            args.push(word.to_string());
        }
    }
    let out = Command::new(ptxc_bin!())
        .current_dir(workspace_root())
        .args(&args)
        .output()
        .map_err(|e| format!("cannot run ptxc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ptxc {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let Some(pass) = section else {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let head = format!("; after {pass}\n");
    let start = stderr
        .find(&head)
        .ok_or_else(|| format!("ptxc printed no `; after {pass}` dump"))?;
    let rest = &stderr[start..];
    let end = rest[head.len()..]
        .find("; after ")
        .map_or(rest.len(), |i| i + head.len());
    Ok(rest[..end].trim_end().to_string() + "\n")
}

/// The examples of one file: (line of the marker, spec, block start line, block end line) with
/// lines as indices into `lines`; the block's content is `lines[start + 1..end]`.
fn examples(path: &Path, lines: &[&str]) -> Vec<(usize, String, usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if let Some(rest) = line.strip_prefix(MARKER) {
            let spec = rest
                .strip_suffix("-->")
                .unwrap_or_else(|| panic!("{}:{}: unterminated marker", path.display(), i + 1))
                .trim()
                .to_string();
            let open = i + 1;
            assert!(
                lines.get(open).is_some_and(|l| l.starts_with("```")),
                "{}:{}: a ptxc-example marker must be followed by a fenced block",
                path.display(),
                i + 1
            );
            let close = (open + 1..lines.len())
                .find(|&k| lines[k].starts_with("```"))
                .unwrap_or_else(|| panic!("{}:{}: unclosed block", path.display(), open + 1));
            out.push((i, spec, open, close));
            i = close;
        }
        i += 1;
    }
    out
}

#[test]
fn worked_examples_in_the_docs_are_current() {
    let bless = std::env::var("PTXC_BLESS").is_ok_and(|v| v == "1");
    let mut files = Vec::new();
    markdown_files(&workspace_root().join("docs"), &mut files);
    files.push(workspace_root().join("samples").join("README.md"));
    let (mut checked, mut stale) = (0, Vec::new());
    for path in files.iter().filter(|p| p.exists()) {
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let found = examples(path, &lines);
        if found.is_empty() {
            continue;
        }
        let mut rebuilt: Vec<String> = Vec::new();
        let mut from = 0;
        for (marker, spec, open, close) in found {
            let want = run_example(&spec).unwrap_or_else(|e| {
                panic!("{}:{}: {e}", path.display(), marker + 1);
            });
            let have: String = lines[open + 1..close]
                .iter()
                .map(|l| format!("{l}\n"))
                .collect();
            checked += 1;
            if have != want {
                stale.push(format!(
                    "{}:{}: `ptxc {spec}` now prints:\n{}",
                    path.display(),
                    marker + 1,
                    pretty_assertions::StrComparison::new(&have, &want)
                ));
            }
            rebuilt.extend(lines[from..=open].iter().map(|l| l.to_string()));
            rebuilt.extend(want.lines().map(str::to_string));
            from = close;
        }
        rebuilt.extend(lines[from..].iter().map(|l| l.to_string()));
        if bless {
            std::fs::write(path, rebuilt.join("\n") + "\n").unwrap();
        }
    }
    println!("doc-examples: {checked} worked examples checked");
    assert!(checked >= 1, "no worked examples found under docs/");
    if !bless {
        assert!(
            stale.is_empty(),
            "{} worked examples are stale (PTXC_BLESS=1 rewrites them):\n{}",
            stale.len(),
            stale.join("\n")
        );
    }
}
