//! Build steps: the PTX grammar (lalrpop); the sm_90a latency tables turned into Rust statics,
//! the PTX instruction table split into lines, and the SASS form tables built by their DSL and
//! written as Rust constants (so the compiler does not build or parse any of them at start-up).

use std::fmt::Write as _;
use std::path::Path;

/// The latency tables' rows and parsers, shared with the compiler.
#[allow(dead_code)]
#[path = "src/target/sm90a/latency/tables.rs"]
mod tables;

// The SASS encoding model and the form DSL, shared with the compiler (`src/target/sm90a/`).
#[allow(dead_code)]
#[path = "src/target/sm90a/bits.rs"]
mod bits;
#[allow(dead_code)]
#[path = "src/target/sm90a/form.rs"]
mod form;
#[allow(dead_code)]
#[path = "src/target/sm90a/forms/mod.rs"]
mod forms;
// (`to_hi(&self)` is public API in the compiler, where clippy leaves its name alone.)
#[allow(dead_code, clippy::wrong_self_convention)]
#[path = "src/target/sm90a/model.rs"]
mod model;
/// Writes the forms as Rust.
#[path = "build/sass_forms.rs"]
mod sass_forms;
// The PTX instruction table's forms and their parser, shared with the compiler.
#[allow(dead_code)]
#[path = "src/frontend/isa_forms.rs"]
mod isa_forms;
/// Writes the parsed PTX forms as Rust.
#[path = "build/isa_forms.rs"]
mod isa_forms_code;

fn main() {
    lalrpop::Configuration::new()
        .use_cargo_dir_conventions()
        .emit_rerun_directives(true)
        .process()
        .expect("lalrpop grammar");
    latency_tables();
    isa_opcodes();
    sass_forms();
    // The `ptxc` executable is linked as a fixed-address (non-PIE) executable: a PIE's ~10 000
    // pointer relocations in its static tables are applied at every start-up, writing (and so
    // copying) their pages — measurable on small files, where start-up is most of the time.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=ptxc=-no-pie");
        static_c_runtime();
    }
}

/// Links the `ptxc` executable statically with the C runtime (glibc), where its static archives
/// are installed: no dynamic loader runs at start-up (it mapped `libc.so.6` and `libgcc_s.so.1`
/// and bound ~110 symbols: 0.19M instructions and ~35 page faults of a small compile), and only
/// the parts of glibc ptxc uses are mapped. Measured 2026-12-01 on `zluda/vector.ptx`, 400
/// alternating runs: 1.83 → 1.42 ms CPU per process (callgrind 1.41M → 1.23M instructions, 138 →
/// 105 page faults); output identical on every corpus file.
///
/// Rust links the standard library against `-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc` after
/// `-Bdynamic`, and Cargo can make only a whole build `crt-static` (which proc-macro crates
/// refuse without `--target`). So the binary alone gets a search directory of its own, searched
/// before the system's, holding links to the static archives under those names (`libgcc_s.a`
/// is `libgcc_eh.a`, the static unwinder), and the compiler driver's `-static`. Where the C
/// compiler does not find every archive (no `libc.a`: glibc's static package not installed) the
/// binary stays dynamic. The library and the tests are not affected.
fn static_c_runtime() {
    if std::env::var("CARGO_CFG_TARGET_ENV").as_deref() != Ok("gnu") {
        return;
    }
    println!("cargo:rerun-if-env-changed=CC");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let dir = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("static-c-runtime");
    let _ = std::fs::remove_dir_all(&dir);
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let archives = [
        ("libc.a", "libc.a"),
        ("libm.a", "libm.a"),
        ("libpthread.a", "libpthread.a"),
        ("libdl.a", "libdl.a"),
        ("librt.a", "librt.a"),
        ("libutil.a", "libutil.a"),
        ("libgcc_s.a", "libgcc_eh.a"),
    ];
    for (name, archive) in archives {
        // `cc -print-file-name=X` prints X's path where the driver finds it, else X itself.
        let found = std::process::Command::new(&cc)
            .arg(format!("-print-file-name={archive}"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let Some(path) = found.filter(|p| Path::new(p).is_absolute() && Path::new(p).is_file())
        else {
            return;
        };
        #[cfg(unix)]
        let linked = std::os::unix::fs::symlink(&path, dir.join(name));
        #[cfg(not(unix))]
        let linked = std::fs::copy(&path, dir.join(name));
        if linked.is_err() {
            return;
        }
    }
    println!("cargo:rustc-link-arg-bin=ptxc=-L{}", dir.display());
    println!("cargo:rustc-link-arg-bin=ptxc=-static");
}

/// `isa_opcodes.rs`: the form lines of the PTX instruction table (`src/frontend/isa_table.txt`)
/// grouped by opcode, sorted by opcode (`isa.rs` looks opcodes up by binary search), as
/// `(line number, line)`: every line that is neither blank nor a `#` comment, trimmed, its opcode
/// the first word; `OPCODE_FORMS`, each opcode's forms as `isa_forms::parse_form` reads its
/// lines (so the compiler parses no table line at run time); and `MAX_OPCODE_WORDS`, the longest
/// compound opcode in words.
fn isa_opcodes() {
    const PATH: &str = "src/frontend/isa_table.txt";
    let text = read(PATH);
    let mut by_opcode: std::collections::BTreeMap<&str, Vec<(usize, &str)>> = Default::default();
    for (idx, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let opcode = line.split_whitespace().next().unwrap_or_default();
        by_opcode.entry(opcode).or_default().push((idx + 1, line));
    }
    let mut opcodes = format!(
        "/// Each opcode with its `(line number, line)`s, sorted by opcode.\n\
         static OPCODES: [(&str, &[(usize, &str)]); {}] = [\n",
        by_opcode.len()
    );
    for (op, lines) in &by_opcode {
        let _ = writeln!(opcodes, "    ({op:?}, &{lines:?}),");
    }
    let _ = writeln!(
        opcodes,
        "];\n/// The forms of `OPCODES[k]`, parsed.\nstatic OPCODE_FORMS: [&[Form]; {}] = [",
        by_opcode.len()
    );
    for lines in by_opcode.values() {
        let forms: Vec<isa_forms::Form> = lines
            .iter()
            .map(|&(n, line)| {
                isa_forms::parse_form(n, line).unwrap_or_else(|e| panic!("{PATH}: {e}"))
            })
            .collect();
        let _ = writeln!(opcodes, "    {},", isa_forms_code::forms_literal(&forms));
    }
    // Lookups as `match`es (compiled to a switch on the length and compares): an opcode's
    // position in `OPCODES`, and the first words of the compound opcodes (`cp` of `cp.async`).
    opcodes.push_str("];\n/// The position of an opcode in [`OPCODES`].\n");
    opcodes.push_str("fn opcode_index(opcode: &str) -> Option<usize> {\n    match opcode {\n");
    for (k, op) in by_opcode.keys().enumerate() {
        let _ = writeln!(opcodes, "        {op:?} => Some({k}),");
    }
    opcodes.push_str("        _ => None,\n    }\n}\n");
    let heads: std::collections::BTreeSet<&str> = by_opcode
        .keys()
        .filter_map(|k| k.split_once('.').map(|(h, _)| h))
        .collect();
    let heads: Vec<String> = heads.iter().map(|h| format!("{h:?}")).collect();
    let _ = write!(
        opcodes,
        "/// Whether `head` is the first word of a compound opcode (`cp` of `cp.async.bulk`).\n\
         fn is_compound_head(head: &str) -> bool {{\n    matches!(head, {})\n}}\n",
        heads.join(" | ")
    );
    let words = by_opcode
        .keys()
        .map(|k| k.split('.').count())
        .max()
        .unwrap_or(1);
    let _ = writeln!(
        opcodes,
        "/// The longest compound opcode, in words.\nconst MAX_OPCODE_WORDS: usize = {words};"
    );
    let dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    let write = |name: &str, text: &str| {
        let dest = Path::new(&dir).join(name);
        std::fs::write(&dest, text).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
    };
    write("isa_opcodes.rs", &opcodes);
}

/// Reads a table file for the lifetime of the build script (the rows borrow from it).
fn read(path: &str) -> &'static str {
    println!("cargo:rerun-if-changed={path}");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Box::leak(text.into_boxed_str())
}

/// `$OUT_DIR/latency_tables.rs`: `OPCODES`, `RAW` and `ISSUE` (the rows), `MAX_LATENCY`, and the
/// indexes as functions `by_mnemonic`, `name_id` (a name's number is its position in the
/// index's name list), `raw_index` and `issue_index` (key → row).
fn latency_tables() {
    const DIR: &str = "src/target/sm90a/latency";
    println!("cargo:rerun-if-changed={DIR}/tables.rs");
    let mut opcodes = tables::parse_opcodes(read(&format!("{DIR}/opcodes.csv")))
        .unwrap_or_else(|e| panic!("{e}"));
    let raw = tables::parse_rows(read(&format!("{DIR}/raw.csv")), "raw.csv", true)
        .unwrap_or_else(|e| panic!("{e}"));
    let issue = tables::parse_rows(read(&format!("{DIR}/issue.csv")), "issue.csv", false)
        .unwrap_or_else(|e| panic!("{e}"));
    let ix = tables::index(&mut opcodes, &raw, &issue).unwrap_or_else(|e| panic!("{e}"));

    let mut out = String::from("// Generated by build.rs from the latency CSVs. Do not edit.\n\n");
    let _ = writeln!(out, "pub static OPCODES: [OpClass; {}] = [", opcodes.len());
    for o in &opcodes {
        let _ = writeln!(
            out,
            "    OpClass {{ opcode: {:?}, class: {:?}, pipe: {:?}, kind: Kind::{:?}, \
             queue: {:?}, read_queue: {:?}, source: {:?}, ids: {:?} }},",
            o.opcode, o.class, o.pipe, o.kind, o.queue, o.read_queue, o.source, o.ids
        );
    }
    out.push_str("];\n\n");
    for (name, rows) in [("RAW", &raw), ("ISSUE", &issue)] {
        let _ = writeln!(out, "pub static {name}: [Row; {}] = [", rows.len());
        for r in rows.iter() {
            let _ = writeln!(
                out,
                "    Row {{ line: {}, first: {:?}, second: {:?}, operand: {:?}, cycles: {}, \
                 samples: {}, source: {:?} }},",
                r.line, r.first, r.second, r.operand, r.cycles, r.samples, r.source
            );
        }
        out.push_str("];\n\n");
    }
    let _ = writeln!(out, "pub const MAX_LATENCY: u8 = {};\n", ix.max_latency);

    // The indexes as `match` functions: compiled into comparisons, so that a process builds no
    // hash table before its first lookup.
    out.push_str("/// Mnemonic → its rows of `OPCODES`.\n");
    out.push_str("pub fn by_mnemonic(m: &str) -> Option<&'static [usize]> {\n    match m {\n");
    for (m, rows) in &ix.by_mnemonic {
        let _ = writeln!(out, "        {m:?} => Some(&{rows:?}),");
    }
    out.push_str("        _ => None,\n    }\n}\n\n");
    out.push_str("/// The number of a class, pipe or operand name.\n");
    out.push_str("pub fn name_id(n: &str) -> Option<u32> {\n    match n {\n");
    for (k, n) in ix.names.iter().enumerate() {
        let _ = writeln!(out, "        {n:?} => Some({k}),");
    }
    out.push_str("        _ => None,\n    }\n}\n\n");
    for (name, index, what) in [
        ("raw_index", &ix.raw, "`raw_key` → row of `RAW`"),
        ("issue_index", &ix.issue, "`issue_key` → row of `ISSUE`"),
    ] {
        let _ = writeln!(
            out,
            "/// {what}.\npub fn {name}(key: u64) -> Option<usize> {{\n    match key {{"
        );
        for (key, row) in index {
            let _ = writeln!(out, "        {key:#x} => Some({row}),");
        }
        out.push_str("        _ => None,\n    }\n}\n\n");
    }
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("latency_tables.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}

/// `$OUT_DIR/sass_forms.rs`: every SASS form as a static (`FORMS`) and the index by mnemonic.
fn sass_forms() {
    // (The build script is rebuilt, and so rerun, when any module it includes changes.)
    let text = sass_forms::generate(&forms::build());
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("sass_forms.rs");
    std::fs::write(&dest, text).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}
