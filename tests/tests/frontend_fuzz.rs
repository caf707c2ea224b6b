//! Property tests of the frontend: near-valid PTX never makes it panic, and every diagnostic it
//! gives points inside the file and renders. Two generators: random edits of real PTX (corpus
//! files and the project's kernels), and random instructions built from the instruction table.
//! The bounded run here is part of `cargo test`; `just fuzz` runs the cargo-fuzz target for longer.

use proptest::prelude::*;
use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc::frontend::isa::Isa;
use std::sync::OnceLock;

/// Seed files: a spread of real PTX (small and large, cluster and plain).
fn seeds() -> &'static Vec<String> {
    static SEEDS: OnceLock<Vec<String>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut files: Vec<std::path::PathBuf> = ptxc_tests::own_kernels();
        files.extend(ptxc_tests::accepted_corpus().into_iter().step_by(9));
        files
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .filter(|s| s.len() < 60_000)
            .collect()
    })
}

/// Runs the frontend and checks the invariants; returns whether it accepted the input.
fn frontend_holds(text: &str) -> Result<bool, TestCaseError> {
    // The fast path's tree (folded instruction lines) is the grammar's own.
    prop_assert!(
        ptxc::frontend::parse(text).ok() == ptxc::frontend::parse_plain(text).ok(),
        "the fast and plain parses differ"
    );
    let src = SourceFile::new("fuzz.ptx", text);
    match driver::frontend(&src, Arch::SM90A) {
        Ok(_) => Ok(true),
        Err(diags) => {
            prop_assert!(
                diags.iter().any(|d| d.is_error()),
                "rejected without an error"
            );
            for d in &diags {
                prop_assert!(d.span.start <= d.span.end && d.span.end as usize <= text.len() + 1);
                let shown = src.render(d);
                prop_assert!(shown.starts_with("fuzz.ptx:"), "{shown}");
            }
            Ok(false)
        }
    }
}

#[derive(Clone, Debug)]
enum Edit {
    Delete(usize, usize),
    Duplicate(usize, usize),
    Insert(usize, &'static str),
    Truncate(usize),
    InsertByte(usize, u8),
}

const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    ";",
    ",",
    "[",
    "]",
    "(",
    ")",
    "|",
    "_",
    "@",
    "!",
    "%r1",
    "%rd1",
    "%p1",
    ".reg",
    ".b32",
    ".u64",
    ".global",
    ".shared::cluster",
    ".v4",
    ".entry",
    ".func",
    "0x7fffffffffffffffff",
    "1e999",
    "0f3F800000",
    "-",
    "+4",
    "mov.u32",
    "ld.global.u32",
    "bra",
    "$L__BB0_1:",
    "\"",
    "/*",
    "//",
    ".maxntid 1,2,3",
    ".reqnctapercluster 2",
    ".maxclusterrank 4",
    "%cluster_ctarank",
    "mapa",
    "\u{e9}",
];

fn edit_strategy() -> impl Strategy<Value = Edit> {
    let pos = any::<prop::sample::Index>();
    prop_oneof![
        (pos.clone(), 1usize..40).prop_map(|(p, n)| Edit::Delete(p.index(1 << 20), n)),
        (pos.clone(), 1usize..40).prop_map(|(p, n)| Edit::Duplicate(p.index(1 << 20), n)),
        (pos.clone(), prop::sample::select(FRAGMENTS))
            .prop_map(|(p, f)| Edit::Insert(p.index(1 << 20), f)),
        pos.clone().prop_map(|p| Edit::Truncate(p.index(1 << 20))),
        (pos, any::<u8>()).prop_map(|(p, b)| Edit::InsertByte(p.index(1 << 20), b)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for e in edits {
        let len = bytes.len().max(1);
        match *e {
            Edit::Delete(p, n) => {
                let p = p % len;
                let end = (p + n).min(bytes.len());
                bytes.drain(p.min(end)..end);
            }
            Edit::Duplicate(p, n) => {
                let p = p % len;
                let end = (p + n).min(bytes.len());
                let piece = bytes[p.min(end)..end].to_vec();
                bytes.splice(end..end, piece);
            }
            Edit::Insert(p, f) => {
                let p = (p % len).min(bytes.len());
                bytes.splice(p..p, f.bytes());
            }
            Edit::Truncate(p) => bytes.truncate(p % len),
            Edit::InsertByte(p, b) => {
                let p = (p % len).min(bytes.len());
                bytes.insert(p, b);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A random instruction from the table: an opcode, some of its (and other) modifiers, operands.
fn instruction_strategy() -> impl Strategy<Value = String> {
    let isa = Isa::get();
    let mut opcodes: Vec<&'static str> = isa.opcodes().collect();
    opcodes.sort_unstable();
    let mut vocab: Vec<&'static str> = isa.vocabulary().iter().copied().collect();
    vocab.sort_unstable();
    let types = [
        ".u32", ".s32", ".b32", ".u64", ".f32", ".f64", ".pred", ".b16", ".f16x2", ".b64",
    ];
    let operands = [
        "%r1",
        "%r2",
        "%rd1",
        "%rd2",
        "%p1",
        "%f1",
        "%fd1",
        "%h1",
        "1",
        "-1",
        "0x10",
        "0f3F800000",
        "[%rd1]",
        "[%rd1+8]",
        "[%r1]",
        "[g]",
        "[g+4]",
        "{%r1, %r2}",
        "{%r1, %r2, %r3, %r4}",
        "%tid.x",
        "%cluster_ctarank",
        "L",
        "_",
        "%p1|%p2",
        "!%p1",
        "(%r1)",
        "g",
    ];
    (
        prop::sample::select(opcodes),
        prop::collection::vec(prop::sample::select(vocab), 0..4),
        prop::collection::vec(prop::sample::select(types.to_vec()), 0..3),
        prop::collection::vec(prop::sample::select(operands.to_vec()), 0..6),
        any::<bool>(),
    )
        .prop_map(|(op, mods, tys, ops, guard)| {
            format!(
                "{}{op}{}{} {};",
                if guard { "@%p3 " } else { "" },
                mods.concat(),
                tys.concat(),
                ops.join(", ")
            )
        })
}

fn kernel_around(instrs: &[String]) -> String {
    format!(
        ".version 8.7\n.target sm_90a\n.address_size 64\n.global .align 4 .b32 g[4];\n\
         .visible .entry k(.param .u64 p)\n{{\n\
         .reg .b32 %r<5>; .reg .b64 %rd<3>; .reg .pred %p<4>; .reg .f32 %f<2>; .reg .f64 %fd<2>; .reg .b16 %h<2>;\n\
         {}\nL:\nret;\n}}\n",
        instrs.join("\n")
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn edited_real_ptx_never_panics(seed in any::<prop::sample::Index>(), edits in prop::collection::vec(edit_strategy(), 1..6)) {
        let seeds = seeds();
        prop_assume!(!seeds.is_empty());
        let text = apply(&seeds[seed.index(seeds.len())], &edits);
        frontend_holds(&text)?;
    }

    #[test]
    fn random_table_instructions_never_panic(instrs in prop::collection::vec(instruction_strategy(), 1..8)) {
        frontend_holds(&kernel_around(&instrs))?;
    }
}

#[test]
fn unedited_seeds_are_accepted() {
    for s in seeds() {
        assert!(frontend_holds(s).unwrap(), "a seed file is rejected");
    }
}
