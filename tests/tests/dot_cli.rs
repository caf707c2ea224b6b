//! `ptxc --dot cfg` and `ptxc --dot interference` end to end: the binary's DOT text for the
//! cluster sample, a branchy ZLUDA kernel, a loop and a two-entry module, checked for
//! structure (balanced braces outside strings, one graph per function, every edge between
//! declared nodes, one CFG edge per successor of the compiled MIR, adjacent interference nodes
//! in different registers), determinism, `-o`, and usage errors. If Graphviz's `dot` is on the
//! PATH, it must also accept the text.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc_tests::{ptxc_bin, shared_dir, workspace_root};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A counted loop: `bb -> bb` back edge after allocation (through the copy block).
const LOOP: &str = r#".version 8.7
.target sm_90a
.address_size 64

.visible .entry sum_loop(.param .u64 out, .param .u32 n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<5>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, 0;
	mov.u32 %r3, 0;
LOOP:
	add.s32 %r2, %r2, %r3;
	add.s32 %r3, %r3, 1;
	setp.lt.u32 %p1, %r3, %r1;
	@%p1 bra LOOP;
	cvta.to.global.u64 %rd2, %rd1;
	st.global.u32 [%rd2], %r2;
	ret;
}

.visible .entry straight(.param .u64 out)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	st.global.u32 [%rd2], %r1;
	ret;
}
"#;

fn ptxc(args: &[&str], input: &Path) -> std::process::Output {
    Command::new(ptxc_bin!())
        .args(["-arch", "sm_90a"])
        .arg(input)
        .args(args)
        .output()
        .unwrap()
}

fn dot_text(graph: &str, input: &Path) -> String {
    let out = ptxc(&["--dot", graph], input);
    assert!(
        out.status.success(),
        "ptxc --dot {graph} {}: {}",
        input.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One graph of the output: its name, declared nodes (with labels) and edges, in order.
#[derive(Debug, Default)]
struct Graph {
    name: String,
    nodes: BTreeMap<String, String>,
    edges: Vec<(String, String)>,
}

/// Checks that braces balance outside quoted strings (with `\`-escapes inside them) and that
/// no string is left open; returns how many top-level graphs there are.
fn balanced_graphs(text: &str) -> usize {
    let (mut depth, mut graphs, mut in_str, mut esc) = (0i32, 0, false, false);
    for c in text.chars() {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => {
                if depth == 0 {
                    graphs += 1;
                }
                depth += 1;
            }
            '}' => {
                depth -= 1;
                assert!(depth >= 0, "a `}}` closes nothing:\n{text}");
            }
            _ => {}
        }
    }
    assert!(!in_str, "a string is left open:\n{text}");
    assert_eq!(depth, 0, "unbalanced braces:\n{text}");
    graphs
}

/// Parses ptxc's line-per-statement DOT: `kind "name" {`, `ID [label="…"];`, `A -> B …;` or
/// `A -- B;`, `}`.
fn parse(text: &str, kind: &str, arrow: &str) -> Vec<Graph> {
    let mut graphs = Vec::new();
    let mut cur: Option<Graph> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(&format!("{kind} \"")) {
            assert!(cur.is_none(), "nested graph: {line}");
            let name = rest.strip_suffix("\" {").expect("graph header");
            cur = Some(Graph {
                name: name.to_string(),
                ..Graph::default()
            });
            continue;
        }
        let g = cur
            .as_mut()
            .unwrap_or_else(|| panic!("outside a graph: {line}"));
        if line == "}" {
            graphs.push(cur.take().unwrap());
            continue;
        }
        let stmt = line.trim_start();
        assert!(stmt.ends_with(';'), "statement without `;`: {line}");
        if stmt.starts_with("node [") {
            continue;
        }
        if let Some((a, rest)) = stmt.split_once(&format!(" {arrow} ")) {
            let b = rest.split([' ', ';']).next().unwrap();
            g.edges.push((a.to_string(), b.to_string()));
        } else {
            let (id, rest) = stmt.split_once(" [label=\"").expect("node statement");
            let label = rest.strip_suffix("\"];").expect("node label");
            assert!(
                g.nodes.insert(id.to_string(), label.to_string()).is_none(),
                "node {id} declared twice"
            );
        }
    }
    assert!(cur.is_none(), "unterminated graph");
    graphs
}

/// Every function of `path` compiled in-process, with the number of CFG successors of its
/// final MIR.
fn successor_counts(path: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(path).unwrap();
    let src = SourceFile::new(path.display().to_string(), text);
    let checked = driver::frontend(&src, Arch::SM90A).expect("frontend");
    let (lowered, _) = driver::lower(&checked, &ptxc::passes::Options::new()).expect("lower");
    lowered
        .module
        .functions
        .iter()
        .map(|f| {
            let cfg = ptxc::mir::cfg::Cfg::new(f);
            let n = f.block_ids().map(|b| cfg.succs(b).len()).sum();
            (f.name.clone(), n)
        })
        .collect()
}

/// Checks `--dot cfg` on `path` and returns its graphs.
fn check_cfg(path: &Path) -> Vec<Graph> {
    let text = dot_text("cfg", path);
    let graphs = parse(&text, "digraph", "->");
    assert_eq!(balanced_graphs(&text), graphs.len());
    let expected = successor_counts(path);
    assert_eq!(
        graphs.iter().map(|g| g.name.clone()).collect::<Vec<_>>(),
        expected.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        "one digraph per function, in module order"
    );
    for (g, (_, succs)) in graphs.iter().zip(&expected) {
        assert!(!g.nodes.is_empty(), "{}: no blocks", g.name);
        assert_eq!(g.edges.len(), *succs, "{}: edges vs successors", g.name);
        for (a, b) in &g.edges {
            assert!(
                g.nodes.contains_key(a) && g.nodes.contains_key(b),
                "{}: edge {a} -> {b} between undeclared nodes",
                g.name
            );
        }
        for (id, label) in &g.nodes {
            assert!(
                label.starts_with(id.as_str()),
                "{id}: label names its block"
            );
        }
    }
    assert_eq!(text, dot_text("cfg", path), "deterministic");
    graphviz_accepts(&text);
    graphs
}

/// The physical registers a node label gives (`R2:R3` → R2, R3), by file prefix and number.
fn registers(label: &str) -> Vec<(String, u32)> {
    let place = label.rsplit("\\n").next().unwrap();
    if place.starts_with("spilled") {
        return Vec::new();
    }
    let split = |r: &str| {
        let at = r.find(|c: char| c.is_ascii_digit()).expect("numbered");
        (r[..at].to_string(), r[at..].parse::<u32>().unwrap())
    };
    let (first, last) = place.split_once(':').unwrap_or((place, place));
    let ((file, lo), (_, hi)) = (split(first), split(last));
    (lo..=hi).map(|n| (file.clone(), n)).collect()
}

/// Checks `--dot interference` on `path` and returns its graphs.
fn check_interference(path: &Path) -> Vec<Graph> {
    let text = dot_text("interference", path);
    let graphs = parse(&text, "graph", "--");
    assert_eq!(balanced_graphs(&text), graphs.len());
    let names: Vec<String> = successor_counts(path).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        graphs.iter().map(|g| g.name.clone()).collect::<Vec<_>>(),
        names
    );
    for g in &graphs {
        let mut seen = BTreeSet::new();
        for (a, b) in &g.edges {
            assert_ne!(a, b, "{}: self-interference", g.name);
            assert!(seen.insert((a, b)), "{}: edge {a} -- {b} twice", g.name);
            let (ra, rb) = (&g.nodes[a], &g.nodes[b]);
            let shared: Vec<_> = registers(ra)
                .into_iter()
                .filter(|r| registers(rb).contains(r))
                .collect();
            assert!(
                shared.is_empty(),
                "{}: interfering {a} ({ra}) and {b} ({rb}) share {shared:?}",
                g.name
            );
        }
        let mut sorted = g.edges.clone();
        sorted.sort_by_key(|(a, b)| {
            (
                a[1..].parse::<u32>().unwrap(),
                b[1..].parse::<u32>().unwrap(),
            )
        });
        assert_eq!(sorted, g.edges, "{}: edges in sorted order", g.name);
    }
    assert_eq!(text, dot_text("interference", path), "deterministic");
    graphviz_accepts(&text);
    graphs
}

/// Runs `dot -Tsvg` on the text when Graphviz is installed (every graph: `-O` is not needed,
/// `dot` reads them all and writes one SVG each).
fn graphviz_accepts(text: &str) {
    use std::io::Write as _;
    let Ok(mut child) = Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "dot rejects the text: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn loop_module() -> (PathBuf, PathBuf) {
    let dir = ptxc_tests::tempdir();
    let path = dir.join("loop.ptx");
    std::fs::write(&path, LOOP).unwrap();
    (dir, path)
}

#[test]
fn dot_cfg_of_the_cluster_sample() {
    let graphs = check_cfg(&workspace_root().join("samples/cluster_exchange.ptx"));
    assert_eq!(graphs.len(), 1);
    assert_eq!(graphs[0].name, "cluster_exchange");
    let all: String = graphs[0].nodes.values().cloned().collect();
    assert!(all.contains("EXIT"), "instructions in the labels: {all}");
}

#[test]
fn dot_cfg_of_a_zluda_kernel_with_branches() {
    let path = shared_dir().join("corpus/zluda/sm90a/uint_to_fp_bf16.ptx");
    if !path.is_file() {
        eprintln!("skipping: {} is not there", path.display());
        return;
    }
    let graphs = check_cfg(&path);
    assert!(graphs[0].nodes.len() > 1);
    // Branch targets and fallthroughs both appear.
    let text = dot_text("cfg", &path);
    assert!(text.contains("[label=\"taken\"]") && text.contains("[label=\"fallthrough\"]"));
    check_interference(&path);
}

#[test]
fn dot_cfg_of_a_loop_and_a_second_entry() {
    let (dir, path) = loop_module();
    let graphs = check_cfg(&path);
    assert_eq!(graphs.len(), 2);
    let lp = &graphs[0];
    assert_eq!(lp.name, "sum_loop");
    assert!(lp.nodes.len() > 1);
    let num = |id: &str| id[2..].parse::<u32>().unwrap();
    assert!(
        lp.edges.iter().any(|(a, b)| num(b) <= num(a)),
        "a back edge: {:?}",
        lp.edges
    );
    // Before the pipeline, the loop is a self-loop on its header.
    let isel = ptxc(&["--dot", "cfg", "--dot-after", "isel"], &path);
    assert!(isel.status.success());
    let isel = String::from_utf8(isel.stdout).unwrap();
    assert!(isel.contains("PHI"), "{isel}");
    assert!(isel.contains("  bb1 -> bb1 [label=\"taken\"];"), "{isel}");

    // `-o` writes what standard output shows.
    let file = dir.join("cfg.dot");
    let o = ptxc(&["--dot", "cfg", "-o", file.to_str().unwrap()], &path);
    assert!(o.status.success() && o.stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        dot_text("cfg", &path)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dot_interference_of_the_samples() {
    let cluster = check_interference(&workspace_root().join("samples/cluster_exchange.ptx"));
    assert!(cluster[0].nodes.len() > 1 && !cluster[0].edges.is_empty());
    let (dir, path) = loop_module();
    let graphs = check_interference(&path);
    assert_eq!(graphs.len(), 2);
    // Labels carry the class and PTX name, and the register given.
    let labels: Vec<&String> = graphs[0].nodes.values().collect();
    assert!(
        labels.iter().any(|l| l.contains(" R.64 %rd1\\nR")),
        "{labels:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dot_usage_errors() {
    let sample = workspace_root().join("samples/vector_add.ptx");
    for args in [
        &["--dot", "callgraph"][..],
        &["--dot"],
        &["--dot", "cfg", "--dot-after", "no-such-pass"],
        &["--dot", "interference", "--dot-after", "isel"],
        &["--dot-after", "isel"],
        &["--dot", "cfg", "--emit", "sass"],
    ] {
        let o = ptxc(args, &sample);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}
