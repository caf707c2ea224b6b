//! Examples per form, in the style of Cranelift's emit tests: `docs/sass/examples.md` lists, for
//! every form of the tables, an instruction as (address, text, low word, high word) taken from
//! real tool output — ptxas's listing of a corpus or probe file when the form occurs there, else
//! a sampled word as `nvdisasm -b SM90a` prints it. The test checks each row in both directions
//! (text → words and words → text) and that every form has a row.
//!
//! Regenerate after changing the tables (needs the reference tools):
//! `PTXC_BLESS=1 cargo test -p ptxc-tests --test sass_examples`.

use ptxc::target::sm90a::sample::sample;
use ptxc::target::sm90a::tables::all;
use ptxc::target::sm90a::{Ctrl, decode_with_form, encode, parse_instr, parse_listing};
use ptxc_tests::sass::{listings, nvdisasm_words, sass_probe_ptx};
use ptxc_tests::{accepted_corpus, probes, workspace_root};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn table_path() -> PathBuf {
    workspace_root()
        .join("docs")
        .join("sass")
        .join("examples.md")
}

struct Row {
    addr: u64,
    text: String,
    words: [u64; 2],
    source: String,
}

fn parse_rows(md: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    for l in md.lines() {
        // Split at `|` but not at `\|` (an escaped bar inside a cell).
        let mut cells: Vec<String> = vec![String::new()];
        let mut chars = l.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&'|') => {
                    chars.next();
                    if let Some(s) = cells.last_mut() {
                        s.push('|');
                    }
                }
                '|' => cells.push(String::new()),
                c => {
                    if let Some(s) = cells.last_mut() {
                        s.push(c);
                    }
                }
            }
        }
        let cells: Vec<&str> = cells.iter().map(|s| s.trim()).collect();
        // | `0x0010` | `TEXT` | `0x..` | `0x..` | source |
        if cells.len() < 6 || !cells[1].starts_with("`0x") {
            continue;
        }
        let un = |c: &str| c.trim_matches('`').to_string();
        let hex = |c: &str| u64::from_str_radix(un(c).trim_start_matches("0x"), 16).expect("hex");
        rows.push(Row {
            addr: hex(cells[1]),
            text: un(cells[2]),
            words: [hex(cells[3]), hex(cells[4])],
            source: cells[5].to_string(),
        });
    }
    rows
}

#[test]
fn examples_encode_and_print_exactly() {
    if std::env::var_os("PTXC_BLESS").is_some() {
        bless();
    }
    let md = std::fs::read_to_string(table_path()).expect("docs/sass/examples.md");
    let rows = parse_rows(&md);
    assert!(rows.len() >= all().len(), "only {} rows", rows.len());
    let mut covered = std::collections::BTreeSet::new();
    let mut bad = Vec::new();
    for r in &rows {
        match decode_with_form(r.words, r.addr) {
            Ok((f, d)) => {
                covered.insert(f.id);
                if d.to_string() != r.text {
                    bad.push(format!("{}: decodes to `{d}`", r.text));
                }
            }
            Err(e) => bad.push(format!("{}: {e}", r.text)),
        }
        match parse_instr(&r.text) {
            Ok(mut i) => {
                i.addr = r.addr;
                i.ctrl = Ctrl::from_hi(r.words[1]);
                match encode(&i) {
                    Ok(w) if w == r.words => {}
                    Ok(w) => bad.push(format!(
                        "{} ({}): encodes to 0x{:016x} 0x{:016x}",
                        r.text, r.source, w[0], w[1]
                    )),
                    Err(e) => bad.push(format!("{}: {e}", r.text)),
                }
            }
            Err(e) => bad.push(format!("{}: {e}", r.text)),
        }
    }
    assert!(
        bad.is_empty(),
        "{} bad rows:\n{}",
        bad.len(),
        bad.join("\n")
    );
    let missing: Vec<String> = all()
        .iter()
        .filter(|f| !covered.contains(&f.id))
        .map(|f| format!("#{} {} (0x{:03x})", f.id, f.title(), f.opcode))
        .collect();
    assert!(
        missing.is_empty(),
        "forms without an example (regenerate with PTXC_BLESS=1):\n{}",
        missing.join("\n")
    );
}

fn bless() {
    let mut files = accepted_corpus();
    files.extend(probes(0..=20));
    files.extend(sass_probe_ptx());
    let Some(ls) = listings(&files) else {
        panic!("PTXC_BLESS needs the reference tools");
    };
    let root = ptxc_tests::shared_dir();
    let ws = workspace_root();
    // Up to two listed examples per form, from ptxas output.
    let mut by_form: BTreeMap<usize, Vec<Row>> = BTreeMap::new();
    for (file, l) in &ls {
        let src = file
            .strip_prefix(&root)
            .or_else(|_| file.strip_prefix(&ws))
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned();
        for i in parse_listing(l) {
            let w = i.words.expect("words");
            let (f, _) = decode_with_form(w, i.addr).expect("corpus decodes");
            let v = by_form.entry(f.id).or_default();
            if v.len() < 2 && v.iter().all(|r| r.text != i.text) {
                v.push(Row {
                    addr: i.addr,
                    text: i.text.clone(),
                    words: w,
                    source: format!("ptxas: {src}"),
                });
            }
        }
    }
    // Sampled words for the others, as nvdisasm prints them.
    let missing: Vec<usize> = all()
        .iter()
        .filter(|f| !by_form.contains_key(&f.id))
        .map(|f| f.id)
        .collect();
    // Several samples per form; the first whose nvdisasm text assembles back to the same word
    // (a text that leaves out a PT output of two could name either slot).
    const TRIES: u64 = 16;
    let mut words = Vec::new();
    for &id in &missing {
        for k in 0..TRIES {
            words.push(sample(&all()[id], 7 + k));
        }
    }
    let texts = nvdisasm_words(&words).expect("nvdisasm");
    for (m, &id) in missing.iter().enumerate() {
        let pick = (0..TRIES as usize).find_map(|k| {
            let i = m * TRIES as usize + k;
            let t = texts[i].as_ref().ok()?;
            let mut p = parse_instr(t).ok()?;
            p.addr = 16 * i as u64;
            p.ctrl = Ctrl::from_hi(words[i][1]);
            (encode(&p).ok()? == words[i]).then(|| (i, t.clone()))
        });
        let (i, t) = pick.unwrap_or_else(|| panic!("no usable sample of form {id}"));
        by_form.entry(id).or_default().push(Row {
            addr: 16 * i as u64,
            text: t,
            words: words[i],
            source: "nvdisasm -b SM90a (sampled word)".into(),
        });
    }
    let mut md = String::from(
        "# SASS examples per form (sm_90a)\n\n\
         Generated by `PTXC_BLESS=1 cargo test -p ptxc-tests --test sass_examples` from real \
         tool output: the `cuobjdump -sass` listing of ptxas 13.1.115's output for the corpus \
         and cluster probes, or, for forms ptxas did not emit there, a sampled word as \
         `nvdisasm -b SM90a` (13.2.51) prints it. The test re-encodes every text (with the \
         control bits of the high word) and decodes every word. Addresses matter for branch \
         targets, which are absolute.\n",
    );
    let mut family = "";
    for f in all() {
        if f.family != family {
            family = f.family;
            md.push_str(&format!(
                "\n## {family} (`compiler/src/target/sm90a/forms/{family}.rs`)\n"
            ));
        }
        md.push_str(&format!(
            "\n### {} — opcode 0x{:03x}\n\nEvidence: {}\n\n| address | text | low word | high word | source |\n|---|---|---|---|---|\n",
            f.title().replace('|', "\\|"),
            f.opcode,
            f.evidence
        ));
        for r in by_form.get(&f.id).into_iter().flatten() {
            md.push_str(&format!(
                "| `0x{:04x}` | `{}` | `0x{:016x}` | `0x{:016x}` | {} |\n",
                r.addr,
                r.text.replace('|', "\\|"),
                r.words[0],
                r.words[1],
                r.source
            ));
        }
    }
    std::fs::write(table_path(), md).expect("write docs/sass/examples.md");
}
