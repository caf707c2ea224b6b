//! The arithmetic family of instruction selection, end to end: PTX snippets through the whole
//! pipeline (`frontend` → `lower` → `encode`), compared with the SASS ptxas makes of the same
//! snippet; the coverage of the corpora's arithmetic instructions; and every SASS form the
//! recipes emit decoding with nvdisasm to the listed text.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc_tests::{Tool, accepted_corpus, own_kernels, probes, require, tempdir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles PTX text to encoded SASS (verifier and allocation checker on).
fn compile_text(name: &str, text: &str) -> Result<Vec<ptxc::emit::sass::EncodedFunction>, String> {
    let src = SourceFile::new(name.to_string(), text.to_string());
    let checked = driver::frontend(&src, Arch::SM90A).map_err(|d| src.render(&d[0]))?;
    let opts = ptxc::passes::Options {
        verify: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).map_err(|d| {
        d.iter()
            .map(|d| src.render(d))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    driver::encode(&lowered).map_err(|d| src.render(&d[0]))
}

/// Our listing of a function: one instruction text per line, without the padding.
fn our_lines(f: &ptxc::emit::sass::EncodedFunction) -> Vec<String> {
    ptxc_tests::listing_lines(f)
}

/// nvdisasm's text for raw words (`None` with its error when it rejects them).
fn nvdisasm_lines(nvdisasm: &Path, words: &[[u64; 2]]) -> Result<Vec<String>, String> {
    let dir = tempdir();
    let raw = dir.join("code.bin");
    let bytes: Vec<u8> = words
        .iter()
        .flat_map(|w| w.iter().flat_map(|x| x.to_le_bytes()))
        .collect();
    std::fs::write(&raw, bytes).unwrap();
    let out = Command::new(nvdisasm)
        .args(["-b", "SM90a", "-c"])
        .arg(&raw)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let body = l.trim().strip_prefix("/*")?.split_once("*/")?.1.trim();
            Some(body.trim_end_matches(';').trim().to_string())
        })
        .filter(|l| !l.is_empty())
        .collect())
}

/// The files of the coverage measure: the accepted corpus, the project's kernels, probes 0–20.
fn coverage_files() -> Vec<PathBuf> {
    let mut files = accepted_corpus();
    files.extend(own_kernels());
    files.extend(probes(0..=20));
    files
}

/// Debugging aid: `ISEL_ARITH_FILES=list.txt cargo test -p ptxc-tests --test isel_arith --
/// --ignored each_file_disassembles` checks the files named in the list one by one and names
/// each one nvdisasm disagrees with.
#[test]
#[ignore]
fn each_file_disassembles() {
    let Some(nvdisasm) = require(Tool::Nvdisasm, "isel-arith e2e") else {
        return;
    };
    let files: Vec<PathBuf> = match std::env::var("ISEL_ARITH_FILES") {
        Ok(list) => std::fs::read_to_string(list)
            .unwrap()
            .lines()
            .map(PathBuf::from)
            .collect(),
        Err(_) => coverage_files(),
    };
    let mut bad = 0;
    let mut n = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let Ok(functions) = compile_text(&path.display().to_string(), &text) else {
            continue;
        };
        n += 1;
        for f in &functions {
            let ours = our_lines(f);
            match nvdisasm_lines(&nvdisasm, &f.words[..f.code_len]) {
                Err(e) => {
                    bad += 1;
                    println!(
                        "{}: nvdisasm: {}",
                        path.display(),
                        e.lines().next().unwrap_or("")
                    );
                    let addr = e.split("address 0x").nth(1).and_then(|s| {
                        usize::from_str_radix(s.split_whitespace().next().unwrap_or(""), 16).ok()
                    });
                    if let Some(a) = addr {
                        println!("    at: {}", ours.get(a / 16).map_or("?", String::as_str));
                    }
                }
                Ok(theirs) if theirs != ours => {
                    bad += 1;
                    let i = ours
                        .iter()
                        .zip(&theirs)
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    println!(
                        "{}: ptxc `{}` vs nvdisasm `{}`",
                        path.display(),
                        ours.get(i).map_or("", String::as_str),
                        theirs.get(i).map_or("", String::as_str)
                    );
                }
                Ok(_) => {}
            }
        }
    }
    println!("each-file: {n} compiled, {bad} disagree");
    assert_eq!(bad, 0);
}

// ---------------------------------------------------------------------------------------------
// Coverage

const ARITH: &[&str] = &[
    "add", "sub", "mul", "mad", "setp", "selp", "and", "or", "xor", "not", "shl", "shr", "mul24",
    "mad24", "sad", "div", "rem", "abs", "neg", "min", "max", "popc", "clz", "bfind", "fns",
    "brev", "bfe", "bfi", "szext", "bmsk", "dp4a", "dp2a", "addc", "subc", "madc", "fma", "testp",
    "copysign", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "set", "slct", "cnot",
    "lop3", "shf", "prmt", "cvt", "vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr",
];

fn instructions(b: &ptxc::frontend::ast::Block, out: &mut Vec<ptxc::frontend::ast::Instruction>) {
    use ptxc::frontend::ast::Stmt;
    for s in &b.stmts {
        match s {
            Stmt::Instr(i) => out.push((**i).clone()),
            Stmt::Block(b) => instructions(b, out),
            _ => {}
        }
    }
}

/// For one file: the arithmetic instructions (their full opcodes) and whether each lowered.
fn file_coverage(path: &Path) -> Vec<(String, bool)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let src = SourceFile::new(path.display().to_string(), text.clone());
    let Ok(checked) = driver::frontend(&src, Arch::SM90A) else {
        return Vec::new();
    };
    let mut ins = Vec::new();
    for item in &checked.module.items {
        if let ptxc::frontend::ast::Item::Function(f) = item
            && let Some(b) = &f.body
        {
            instructions(b, &mut ins);
        }
    }
    let arith: Vec<&ptxc::frontend::ast::Instruction> = ins
        .iter()
        .filter(|i| ARITH.contains(&i.opcode.text.as_str()))
        .collect();
    if arith.is_empty() {
        return Vec::new();
    }
    let opts = ptxc::passes::Options {
        verify: true,
        ..ptxc::passes::Options::new()
    };
    let diags: Vec<ptxc::diag::Diagnostic> = match driver::lower(&checked, &opts) {
        Ok((lowered, _)) => match driver::encode(&lowered) {
            Ok(_) => Vec::new(),
            Err(d) => d,
        },
        Err(d) => d,
    };
    // An error with no place (a pass or the encoder failed) counts against every instruction.
    let internal = diags.iter().find(|d| d.span.start == 0 && d.span.end == 0);
    if let Some(d) = internal {
        println!(
            "{}: {}",
            path.display(),
            d.message.lines().next().unwrap_or("")
        );
    }
    arith
        .iter()
        .map(|i| {
            let full: String = std::iter::once(i.opcode.text.clone())
                .chain(i.modifiers.iter().map(|m| m.text.clone()))
                .collect();
            let failed = internal.is_some()
                || diags
                    .iter()
                    .any(|d| d.span.start >= i.span.start && d.span.end <= i.span.end);
            (full, !failed)
        })
        .collect()
}

/// The lowest coverage this branch reached; the test fails below it.
const COVERAGE_FLOOR: usize = 4897;

#[test]
fn corpus_arithmetic_coverage() {
    let files = coverage_files();
    if files.is_empty() {
        println!("isel-arith: no corpus files found");
        return;
    }
    let mut total = 0;
    let mut lowered = 0;
    let mut missing: std::collections::BTreeMap<String, usize> = Default::default();
    for f in &files {
        for (op, ok) in file_coverage(f) {
            total += 1;
            if ok {
                lowered += 1;
            } else {
                *missing.entry(op).or_default() += 1;
            }
        }
    }
    println!("isel-arith: {lowered}/{total} arithmetic instructions of the corpora lower");
    for (op, n) in &missing {
        println!("    not lowered: {op} ×{n}");
    }
    assert!(
        lowered >= COVERAGE_FLOOR,
        "coverage regressed: {lowered} < {COVERAGE_FLOOR}"
    );
}

// ---------------------------------------------------------------------------------------------
// Snippets against ptxas

const HEADER: &str = ".version 8.7\n.target sm_90a\n.address_size 64\n";

/// A kernel around a snippet: typed registers loaded from the input buffer, the snippet, and
/// whatever it stores to the output buffer.
fn kernel_fn(name: &str, body: &str) -> String {
    format!(
        ".visible .entry k_{name}(.param .u64 pin, .param .u64 pout)\n{{\n\
         .reg .b64 %in, %out;\n.reg .b32 %r<20>;\n.reg .b64 %rd<20>;\n.reg .b16 %h<20>;\n\
         .reg .f32 %f<20>;\n.reg .f64 %fd<20>;\n.reg .pred %p<10>;\n\
         ld.param.u64 %in, [pin];\nld.param.u64 %out, [pout];\n\
         ld.global.u32 %r1, [%in];\nld.global.u32 %r2, [%in+4];\nld.global.u32 %r3, [%in+8];\n\
         ld.global.u64 %rd1, [%in+16];\nld.global.u64 %rd2, [%in+24];\nld.global.u64 %rd3, [%in+32];\n\
         ld.global.f32 %f1, [%in+40];\nld.global.f32 %f2, [%in+44];\nld.global.f32 %f3, [%in+48];\n\
         ld.global.f64 %fd1, [%in+56];\nld.global.f64 %fd2, [%in+64];\nld.global.f64 %fd3, [%in+72];\n\
         ld.global.u16 %h1, [%in+80];\nld.global.u16 %h2, [%in+82];\nld.global.u16 %h3, [%in+84];\n\
         setp.ne.u32 %p1, %r3, 0;\n\
         {body}\nret;\n}}\n"
    )
}

fn kernel(name: &str, body: &str) -> String {
    format!("{HEADER}{}", kernel_fn(name, body))
}

/// The mnemonics with modifiers of a listing, without the loads, stores, constant loads and the
/// kernel's frame: what the snippet itself became.
fn opcode_seq<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    lines
        .filter(|l| !l.starts_with("MOV R1, c[0x0][0x28]"))
        .filter_map(|l| {
            let l = l.trim();
            let l = if l.starts_with('@') {
                l.split_once(' ').map_or(l, |x| x.1)
            } else {
                l
            };
            let op = l.split_whitespace().next()?.to_string();
            let base = op.split('.').next().unwrap_or("");
            (!matches!(
                base,
                "LDG" | "STG" | "LDC" | "ULDC" | "EXIT" | "BRA" | "NOP" | "S2R"
            ))
            .then_some(op)
        })
        .collect()
}

/// ptxas's opcode sequence for every snippet, from one module of all the snippet kernels
/// (one ptxas and one cuobjdump run); empty without the reference tools.
fn ptxas_seqs(snippets: &[Snippet]) -> std::collections::HashMap<String, Vec<String>> {
    let mut out = std::collections::HashMap::new();
    let mut ptx = HEADER.to_string();
    for s in snippets {
        ptx.push_str(&kernel_fn(s.name, s.body));
    }
    let dir = tempdir();
    let path = dir.join("snippets.ptx");
    std::fs::write(&path, &ptx).unwrap();
    let r = ptxc_tests::ptxas(&path, &[]);
    let _ = std::fs::remove_dir_all(&dir);
    let Some(cubin) = r.and_then(|r| r.cubin) else {
        return out;
    };
    let Some(sass) = ptxc_tests::cuobjdump_sass(&cubin) else {
        return out;
    };
    let mut cur: Option<String> = None;
    let mut lines: Vec<String> = Vec::new();
    let mut flush = |cur: &Option<String>, lines: &mut Vec<String>| {
        if let Some(name) = cur {
            out.insert(name.clone(), opcode_seq(lines.iter().map(String::as_str)));
        }
        lines.clear();
    };
    for l in sass.lines() {
        if let Some(name) = l.trim().strip_prefix("Function : k_") {
            flush(&cur, &mut lines);
            cur = Some(name.trim().to_string());
            continue;
        }
        if let Some(body) = l.trim().strip_prefix("/*").and_then(|x| x.split_once("*/")) {
            let body = body
                .1
                .trim()
                .split("/*")
                .next()
                .unwrap_or("")
                .trim()
                .trim_end_matches(';')
                .trim();
            if !body.is_empty() {
                lines.push(body.to_string());
            }
        }
    }
    flush(&cur, &mut lines);
    out
}

struct Snippet {
    name: &'static str,
    body: &'static str,
    /// ptxc's opcode sequence (derived from ptxas's for the same snippet).
    want: &'static [&'static str],
}

macro_rules! snip {
    ($name:literal, $body:literal, [$($w:literal),* $(,)?]) => {
        Snippet { name: $name, body: $body, want: &[$($w),*] }
    };
}

/// The snippets: one or a few instructions each, per recipe family.
const SNIPPETS: &[Snippet] = &[
    snip!(
        "add_s32",
        "add.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["IADD3"]
    ),
    snip!(
        "sub_imm",
        "sub.s32 %r4, %r1, 5; st.global.u32 [%out], %r4;",
        ["IADD3"]
    ),
    snip!(
        "add_s64",
        "add.s64 %rd4, %rd1, %rd2; st.global.u64 [%out], %rd4;",
        ["IADD3", "IADD3.X"]
    ),
    snip!(
        "sub_u64",
        "sub.u64 %rd4, %rd1, %rd2; st.global.u64 [%out], %rd4;",
        ["IADD3", "IADD3.X"]
    ),
    snip!(
        "add_sat_s32",
        "add.sat.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["IADD3", "PLOP3.LUT", "PLOP3.LUT", "SEL", "SEL"]
    ),
    snip!(
        "sub_sat_s32",
        "sub.sat.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["IADD3", "PLOP3.LUT", "PLOP3.LUT", "SEL", "SEL"]
    ),
    snip!(
        "add_cc_chain",
        "add.cc.u32 %r4, %r1, %r2; addc.cc.u32 %r5, %r2, %r3; addc.u32 %r6, %r3, %r1; st.global.u32 [%out], %r4; st.global.u32 [%out+4], %r5; st.global.u32 [%out+8], %r6;",
        ["IADD3", "IADD3.X", "IADD3.X"]
    ),
    snip!(
        "sub_cc_chain",
        "sub.cc.u32 %r4, %r1, %r2; subc.cc.u32 %r5, %r2, %r3; subc.u32 %r6, %r3, %r1; st.global.u32 [%out], %r4; st.global.u32 [%out+4], %r5; st.global.u32 [%out+8], %r6;",
        ["IADD3", "IADD3.X", "IADD3.X"]
    ),
    snip!(
        "mad_cc_chain",
        "mad.lo.cc.u32 %r4, %r1, %r2, %r3; madc.lo.cc.u32 %r5, %r1, %r3, %r2; madc.lo.u32 %r6, %r2, %r3, %r1; st.global.u32 [%out], %r4; st.global.u32 [%out+4], %r5; st.global.u32 [%out+8], %r6;",
        ["IMAD", "IADD3", "IMAD", "IADD3.X", "IMAD", "IADD3.X"]
    ),
    snip!(
        "mul_lo_s32",
        "mul.lo.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["IMAD"]
    ),
    snip!(
        "mul_hi_u32",
        "mul.hi.u32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["IMAD.HI.U32"]
    ),
    snip!(
        "mul_hi_s32",
        "mul.hi.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["IMAD.HI"]
    ),
    snip!(
        "mul_wide_s32",
        "mul.wide.s32 %rd4, %r1, %r2; st.global.u64 [%out], %rd4;",
        ["IMAD.WIDE"]
    ),
    snip!(
        "mul_wide_u32_imm",
        "mul.wide.u32 %rd4, %r1, 12; st.global.u64 [%out], %rd4;",
        ["IMAD.WIDE.U32"]
    ),
    snip!(
        "mad_wide_u32",
        "mad.wide.u32 %rd4, %r1, %r2, %rd1; st.global.u64 [%out], %rd4;",
        ["IMAD.WIDE.U32"]
    ),
    snip!(
        "mad_lo_s32",
        "mad.lo.s32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["IMAD"]
    ),
    snip!(
        "mad_hi_s32",
        "mad.hi.s32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["IMAD.HI", "IADD3"]
    ),
    snip!(
        "mul_lo_u64",
        "mul.lo.u64 %rd4, %rd1, %rd2; st.global.u64 [%out], %rd4;",
        ["IMAD", "IMAD", "IMAD.WIDE.U32", "IADD3"]
    ),
    snip!(
        "mad_lo_u64",
        "mad.lo.u64 %rd4, %rd1, %rd2, %rd3; st.global.u64 [%out], %rd4;",
        ["IMAD", "IMAD", "IMAD.WIDE.U32", "IADD3"]
    ),
    snip!(
        "mul_hi_u64",
        "mul.hi.u64 %rd4, %rd1, %rd2; st.global.u64 [%out], %rd4;",
        [
            "IMAD.WIDE.U32",
            "IMAD.WIDE.U32",
            "IMAD.WIDE.U32",
            "MOV",
            "IADD3.X",
            "IADD3",
            "IMAD.WIDE.U32.X"
        ]
    ),
    snip!(
        "mul_hi_s64",
        "mul.hi.s64 %rd4, %rd1, %rd2; st.global.u64 [%out], %rd4;",
        [
            "IMAD.WIDE.U32",
            "IMAD.WIDE.U32",
            "IMAD.WIDE.U32",
            "MOV",
            "IADD3.X",
            "IADD3",
            "IMAD.WIDE.U32.X",
            "ISETP.LT.AND",
            "IADD3",
            "IADD3.X",
            "SEL",
            "SEL",
            "ISETP.LT.AND",
            "IADD3",
            "IADD3.X",
            "SEL",
            "SEL"
        ]
    ),
    snip!(
        "mul_lo_u16",
        "mul.lo.u16 %h4, %h1, %h2; st.global.u16 [%out], %h4;",
        ["IMAD"]
    ),
    snip!(
        "mul_wide_s16",
        "cvt.u16.u32 %h4, %r1; cvt.u16.u32 %h5, %r2; mul.wide.s16 %r4, %h4, %h5; st.global.u32 [%out], %r4;",
        ["PRMT", "PRMT", "IMAD"]
    ),
    snip!(
        "mul24_lo_u32",
        "mul24.lo.u32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["PRMT", "PRMT", "IMAD"]
    ),
    snip!(
        "mul24_hi_s32",
        "mul24.hi.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["SGXT", "SGXT", "IMAD.WIDE", "SHF.R.U64"]
    ),
    snip!(
        "sad_u32",
        "sad.u32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["VIMNMX.U32", "VIMNMX.U32", "IADD3"]
    ),
    snip!(
        "min_s32",
        "min.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["VIMNMX"]
    ),
    snip!(
        "max_u32",
        "max.u32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["VIMNMX.U32"]
    ),
    snip!(
        "max_imm",
        "max.s32 %r4, %r1, 5; st.global.u32 [%out], %r4;",
        ["VIMNMX"]
    ),
    snip!(
        "max_relu",
        "max.relu.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["VIMNMX.RELU"]
    ),
    snip!(
        "min_u16x2",
        "min.u16x2 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["VIMNMX.U16x2"]
    ),
    snip!(
        "min_u64",
        "min.u64 %rd4, %rd1, %rd2; st.global.u64 [%out], %rd4;",
        ["ISETP.LT.U32.AND", "ISETP.LT.U32.AND.EX", "SEL", "SEL"]
    ),
    snip!(
        "max_s64",
        "max.s64 %rd4, %rd1, %rd2; st.global.u64 [%out], %rd4;",
        ["ISETP.GT.U32.AND", "ISETP.GT.AND.EX", "SEL", "SEL"]
    ),
    snip!(
        "abs_s32",
        "abs.s32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["IABS"]
    ),
    snip!(
        "abs_s64",
        "abs.s64 %rd4, %rd1; st.global.u64 [%out], %rd4;",
        ["IADD3", "IADD3.X", "ISETP.LT.AND", "SEL", "SEL"]
    ),
    snip!(
        "neg_s32",
        "neg.s32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["IADD3"]
    ),
    snip!(
        "neg_s64",
        "neg.s64 %rd4, %rd1; st.global.u64 [%out], %rd4;",
        ["IADD3", "MOV", "IADD3.X"]
    ),
    snip!(
        "popc_b32",
        "popc.b32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["POPC"]
    ),
    snip!(
        "popc_b64",
        "popc.b64 %r4, %rd1; st.global.u32 [%out], %r4;",
        ["POPC", "POPC", "IADD3"]
    ),
    snip!(
        "clz_b32",
        "clz.b32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["FLO.U32", "IADD3"]
    ),
    snip!(
        "clz_b64",
        "clz.b64 %r4, %rd1; st.global.u32 [%out], %r4;",
        [
            "ISETP.NE.U32.AND",
            "SEL",
            "FLO.U32",
            "IADD3",
            "IADD3",
            "SEL"
        ]
    ),
    snip!(
        "bfind_u32",
        "bfind.u32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["FLO.U32"]
    ),
    snip!(
        "bfind_s32",
        "bfind.s32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["FLO"]
    ),
    snip!(
        "bfind_shiftamt",
        "bfind.shiftamt.u32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["FLO.U32.SH"]
    ),
    snip!(
        "brev_b32",
        "brev.b32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["BREV"]
    ),
    snip!(
        "brev_b64",
        "brev.b64 %rd4, %rd1; st.global.u64 [%out], %rd4;",
        ["BREV", "BREV"]
    ),
    snip!(
        "bfe_u32",
        "bfe.u32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["PRMT", "PRMT", "PRMT", "SHF.R.U32.HI", "SGXT.U32"]
    ),
    snip!(
        "bfe_s32",
        "bfe.s32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["PRMT", "PRMT", "PRMT", "SHF.R.S32.HI", "SGXT"]
    ),
    snip!(
        "bfe_u32_imm",
        "bfe.u32 %r4, %r1, 8, 4; st.global.u32 [%out], %r4;",
        ["SHF.R.U32.HI", "SGXT.U32"]
    ),
    snip!(
        "bfe_s32_imm",
        "bfe.s32 %r4, %r1, 8, 4; st.global.u32 [%out], %r4;",
        ["SHF.R.S32.HI", "SGXT"]
    ),
    snip!(
        "bfi_b32",
        "bfi.b32 %r4, %r1, %r2, %r3, %r3; st.global.u32 [%out], %r4;",
        ["PRMT", "PRMT", "PRMT", "SHF.L.U32", "BMSK", "LOP3.LUT"]
    ),
    snip!(
        "bfi_b32_imm",
        "bfi.b32 %r4, %r1, %r2, 8, 4; st.global.u32 [%out], %r4;",
        ["SHF.L.U32", "LOP3.LUT"]
    ),
    snip!(
        "szext",
        "szext.wrap.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["SGXT.W"]
    ),
    snip!(
        "bmsk",
        "bmsk.clamp.b32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["BMSK"]
    ),
    snip!(
        "prmt",
        "prmt.b32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["PRMT"]
    ),
    snip!(
        "prmt_imm",
        "prmt.b32 %r4, %r1, %r2, 0x3210; st.global.u32 [%out], %r4;",
        ["PRMT"]
    ),
    snip!(
        "prmt_f4e",
        "prmt.b32.f4e %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["PRMT.F4E"]
    ),
    snip!(
        "dp4a",
        "dp4a.s32.u32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["IDP.4A.S8.U8"]
    ),
    snip!(
        "dp2a",
        "dp2a.hi.s32.s32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["IDP.2A.HI.S16.S8"]
    ),
    snip!(
        "and_b32",
        "and.b32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["LOP3.LUT"]
    ),
    snip!(
        "or_b64",
        "or.b64 %rd4, %rd1, %rd2; st.global.u64 [%out], %rd4;",
        ["LOP3.LUT", "LOP3.LUT"]
    ),
    snip!(
        "xor_imm",
        "xor.b32 %r4, %r1, 0xff; st.global.u32 [%out], %r4;",
        ["LOP3.LUT"]
    ),
    snip!(
        "not_b32",
        "not.b32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["LOP3.LUT"]
    ),
    snip!(
        "lop3",
        "lop3.b32 %r4, %r1, %r2, %r3, 0x96; st.global.u32 [%out], %r4;",
        ["LOP3.LUT"]
    ),
    snip!(
        "shl_b32",
        "shl.b32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["SHF.L.U32"]
    ),
    snip!(
        "shr_s32",
        "shr.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["SHF.R.S32.HI"]
    ),
    snip!(
        "shl_b32_imm",
        "shl.b32 %r4, %r1, 3; st.global.u32 [%out], %r4;",
        ["SHF.L.U32"]
    ),
    snip!(
        "shl_b64",
        "shl.b64 %rd4, %rd1, %r2; st.global.u64 [%out], %rd4;",
        ["SHF.L.U32", "SHF.L.U64.HI"]
    ),
    snip!(
        "shr_u64",
        "shr.u64 %rd4, %rd1, %r2; st.global.u64 [%out], %rd4;",
        ["SHF.R.U64", "SHF.R.U32.HI"]
    ),
    snip!(
        "shr_s64",
        "shr.s64 %rd4, %rd1, %r2; st.global.u64 [%out], %rd4;",
        ["SHF.R.S64", "SHF.R.S32.HI"]
    ),
    snip!(
        "shr_u64_imm",
        "shr.u64 %rd4, %rd1, 5; st.global.u64 [%out], %rd4;",
        ["SHF.R.U64", "SHF.R.U32.HI"]
    ),
    snip!(
        "shr_s64_imm37",
        "shr.s64 %rd4, %rd1, 37; st.global.u64 [%out], %rd4;",
        ["SHF.R.S32.HI", "SHF.R.S32.HI"]
    ),
    snip!(
        "shf_l_wrap",
        "shf.l.wrap.b32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["SHF.L.W.U32.HI"]
    ),
    snip!(
        "shf_r_clamp",
        "shf.r.clamp.b32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["SHF.R.U32"]
    ),
    snip!(
        "setp_selp",
        "setp.lt.s32 %p2, %r1, %r2; selp.u32 %r4, %r1, %r2, %p2; st.global.u32 [%out], %r4;",
        ["ISETP.LT.AND", "SEL"]
    ),
    snip!(
        "setp_u64",
        "setp.lt.u64 %p2, %rd1, %rd2; selp.u32 %r4, %r1, %r2, %p2; st.global.u32 [%out], %r4;",
        ["ISETP.LT.U32.AND", "ISETP.LT.U32.AND.EX", "SEL"]
    ),
    snip!(
        "setp_eq_s64",
        "setp.eq.s64 %p2, %rd1, %rd2; selp.u32 %r4, %r1, %r2, %p2; st.global.u32 [%out], %r4;",
        ["ISETP.NE.U32.AND", "ISETP.NE.AND.EX", "SEL"]
    ),
    snip!(
        "setp_bool",
        "setp.lt.and.u32 %p2, %r1, %r2, %p1; selp.u32 %r4, %r1, %r2, %p2; st.global.u32 [%out], %r4;",
        ["ISETP.NE.U32.AND", "ISETP.LT.U32.AND", "SEL"]
    ),
    snip!(
        "setp_f32",
        "setp.gtu.f32 %p2, %f1, %f2; selp.f32 %f4, %f1, %f2, %p2; st.global.f32 [%out], %f4;",
        ["FSETP.GTU.AND", "SEL"]
    ),
    snip!(
        "setp_f64",
        "setp.ge.f64 %p2, %fd1, %fd2; selp.f64 %fd4, %fd1, %fd2, %p2; st.global.f64 [%out], %fd4;",
        ["DSETP.GE.AND", "SEL", "SEL"]
    ),
    snip!(
        "set_u32",
        "set.lt.u32.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["ISETP.LT.AND", "SEL"]
    ),
    snip!(
        "selp_b64_imm",
        "selp.b64 %rd4, %rd1, 5, %p1; st.global.u64 [%out], %rd4;",
        ["ISETP.NE.U32.AND", "SEL", "SEL"]
    ),
    snip!(
        "and_pred",
        "setp.lt.s32 %p2, %r1, %r2; and.pred %p3, %p1, %p2; selp.u32 %r4, %r1, %r2, %p3; st.global.u32 [%out], %r4;",
        ["ISETP.NE.U32.AND", "ISETP.LT.AND", "PLOP3.LUT", "SEL"]
    ),
    snip!(
        "testp_normal",
        "testp.normal.f32 %p2, %f1; selp.u32 %r4, %r1, %r2, %p2; st.global.u32 [%out], %r4;",
        [
            "LOP3.LUT",
            "ISETP.GE.U32.AND",
            "ISETP.GE.U32.AND",
            "ISETP.EQ.U32.OR",
            "SEL"
        ]
    ),
    snip!(
        "add_f32",
        "add.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
        ["FADD"]
    ),
    snip!(
        "add_rz_ftz_sat",
        "add.rz.ftz.sat.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
        ["FADD.FTZ.RZ.SAT"]
    ),
    snip!(
        "sub_f32_imm",
        "sub.f32 %f4, 0f3F800000, %f1; st.global.f32 [%out], %f4;",
        ["FADD"]
    ),
    snip!(
        "mul_f32_imm",
        "mul.f32 %f4, %f1, 0f3F000000; st.global.f32 [%out], %f4;",
        ["FMUL"]
    ),
    snip!(
        "fma_rn_f32",
        "fma.rn.f32 %f4, %f1, %f2, %f3; st.global.f32 [%out], %f4;",
        ["FFMA"]
    ),
    snip!(
        "fma_rm_sat",
        "fma.rm.sat.f32 %f4, %f1, %f2, %f3; st.global.f32 [%out], %f4;",
        ["FFMA.RM.SAT"]
    ),
    snip!(
        "add_f64",
        "add.rm.f64 %fd4, %fd1, %fd2; st.global.f64 [%out], %fd4;",
        ["DADD.RM"]
    ),
    snip!(
        "mul_f64",
        "mul.rz.f64 %fd4, %fd1, %fd2; st.global.f64 [%out], %fd4;",
        ["DMUL.RZ"]
    ),
    snip!(
        "fma_f64",
        "fma.rn.f64 %fd4, %fd1, %fd2, %fd3; st.global.f64 [%out], %fd4;",
        ["DFMA"]
    ),
    snip!(
        "abs_f32",
        "abs.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FADD"]
    ),
    snip!(
        "neg_ftz_f32",
        "neg.ftz.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FADD.FTZ"]
    ),
    snip!(
        "neg_f64",
        "neg.f64 %fd4, %fd1; st.global.f64 [%out], %fd4;",
        ["DADD"]
    ),
    snip!(
        "min_f32",
        "min.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
        ["FMNMX"]
    ),
    snip!(
        "max_nan_f32",
        "max.NaN.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
        ["FMNMX.NAN"]
    ),
    snip!(
        "copysign_f32",
        "copysign.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
        ["LOP3.LUT"]
    ),
    snip!(
        "add_f16",
        "add.f16 %h4, %h1, %h2; st.global.u16 [%out], %h4;",
        ["HADD2"]
    ),
    snip!(
        "sub_bf16",
        "sub.bf16 %h4, %h1, %h2; st.global.u16 [%out], %h4;",
        ["HADD2.BF16_V2"]
    ),
    snip!(
        "fma_f16",
        "fma.rn.f16 %h4, %h1, %h2, %h3; st.global.u16 [%out], %h4;",
        ["HFMA2"]
    ),
    snip!(
        "max_f16",
        "max.f16 %h4, %h1, %h2; st.global.u16 [%out], %h4;",
        ["HMNMX2"]
    ),
    snip!(
        "min_nan_f16",
        "min.NaN.f16 %h4, %h1, %h2; st.global.u16 [%out], %h4;",
        ["HMNMX2.NAN"]
    ),
    snip!(
        "max_bf16x2",
        "max.bf16x2 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        ["HMNMX2.BF16_V2"]
    ),
    snip!(
        "sin",
        "sin.approx.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FMUL.RZ", "MUFU.SIN"]
    ),
    snip!(
        "cos",
        "cos.approx.ftz.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FMUL.RZ", "MUFU.COS"]
    ),
    snip!(
        "ex2",
        "ex2.approx.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FSETP.GEU.AND", "FMUL", "MUFU.EX2", "FMUL"]
    ),
    snip!(
        "ex2_ftz",
        "ex2.approx.ftz.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["MUFU.EX2"]
    ),
    snip!(
        "lg2",
        "lg2.approx.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FSETP.GEU.AND", "FMUL", "MUFU.LG2", "FADD"]
    ),
    snip!(
        "tanh",
        "tanh.approx.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["MUFU.TANH"]
    ),
    snip!(
        "ex2_f16",
        "ex2.approx.f16 %h4, %h1; st.global.u16 [%out], %h4;",
        ["MUFU.EX2.F16"]
    ),
    snip!(
        "rcp_approx",
        "rcp.approx.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        [
            "MOV",
            "FSETP.GEU.AND",
            "FSETP.GT.AND",
            "FSEL",
            "FSEL",
            "FMUL",
            "MUFU.RCP",
            "FMUL"
        ]
    ),
    snip!(
        "rcp_approx_ftz",
        "rcp.approx.ftz.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["MUFU.RCP"]
    ),
    snip!(
        "sqrt_approx",
        "sqrt.approx.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FSETP.GEU.AND", "FMUL", "MUFU.SQRT", "FMUL"]
    ),
    snip!(
        "rsqrt_approx",
        "rsqrt.approx.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FSETP.GEU.AND", "FMUL", "MUFU.RSQ", "FMUL"]
    ),
    snip!(
        "rcp_approx_ftz_f64",
        "rcp.approx.ftz.f64 %fd4, %fd1; st.global.f64 [%out], %fd4;",
        ["MOV", "MUFU.RCP64H"]
    ),
    snip!(
        "div_approx",
        "div.approx.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
        ["FSETP.GEU.AND", "FMUL", "FMUL", "MUFU.RCP", "FMUL"]
    ),
    snip!(
        "div_approx_ftz",
        "div.approx.ftz.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
        ["MUFU.RCP", "FMUL.FTZ"]
    ),
    snip!(
        "div_full",
        "div.full.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
        [
            "FSETP.GT.AND",
            "FMUL",
            "FMUL",
            "FSETP.GEU.AND",
            "FMUL",
            "FMUL",
            "MUFU.RCP",
            "FMUL"
        ]
    ),
    snip!(
        "div_full_ftz",
        "div.full.ftz.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
        [
            "FSETP.GT.FTZ.AND",
            "FMUL.FTZ",
            "FMUL.FTZ",
            "MUFU.RCP",
            "FMUL.FTZ"
        ]
    ),
    snip!(
        "div_u32",
        "div.u32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        [
            "I2F.U32.RP",
            "IADD3",
            "ISETP.NE.U32.AND",
            "MUFU.RCP",
            "IADD3",
            "F2I.FTZ.U32.TRUNC.NTZ",
            "IMAD",
            "IMAD.HI.U32",
            "IADD3",
            "IMAD.HI.U32",
            "IADD3",
            "IMAD",
            "ISETP.GE.U32.AND",
            "IADD3",
            "IADD3",
            "ISETP.GE.U32.AND",
            "IADD3",
            "LOP3.LUT"
        ]
    ),
    snip!(
        "div_s32",
        "div.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        [
            "IABS",
            "I2F.RP",
            "IABS",
            "IADD3",
            "LOP3.LUT",
            "ISETP.GE.AND",
            "MUFU.RCP",
            "IADD3",
            "F2I.FTZ.U32.TRUNC.NTZ",
            "IMAD",
            "IMAD.HI.U32",
            "IADD3",
            "IMAD.HI.U32",
            "IMAD",
            "ISETP.GT.U32.AND",
            "IADD3",
            "ISETP.NE.AND",
            "IADD3",
            "ISETP.GE.U32.AND",
            "IADD3",
            "IADD3",
            "LOP3.LUT"
        ]
    ),
    snip!(
        "rem_u32",
        "rem.u32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        [
            "I2F.U32.RP",
            "IADD3",
            "ISETP.NE.U32.AND",
            "MUFU.RCP",
            "IADD3",
            "F2I.FTZ.U32.TRUNC.NTZ",
            "IMAD",
            "IMAD.HI.U32",
            "IADD3",
            "IMAD.HI.U32",
            "IADD3",
            "IMAD",
            "ISETP.GE.U32.AND",
            "IADD3",
            "ISETP.GE.U32.AND",
            "IADD3",
            "LOP3.LUT"
        ]
    ),
    snip!(
        "rem_s32",
        "rem.s32 %r4, %r1, %r2; st.global.u32 [%out], %r4;",
        [
            "IABS",
            "I2F.RP",
            "IABS",
            "IADD3",
            "ISETP.GE.AND",
            "MUFU.RCP",
            "IADD3",
            "F2I.FTZ.U32.TRUNC.NTZ",
            "IMAD",
            "IMAD.HI.U32",
            "IADD3",
            "IMAD.HI.U32",
            "IMAD",
            "ISETP.GT.U32.AND",
            "IADD3",
            "ISETP.NE.AND",
            "ISETP.GT.U32.AND",
            "IADD3",
            "IADD3",
            "LOP3.LUT"
        ]
    ),
    snip!(
        "cvt_u64_u32",
        "cvt.u64.u32 %rd4, %r1; st.global.u64 [%out], %rd4;",
        ["MOV"]
    ),
    snip!(
        "cvt_s64_s32",
        "cvt.s64.s32 %rd4, %r1; st.global.u64 [%out], %rd4;",
        ["SHF.R.S32.HI"]
    ),
    snip!(
        "cvt_u32_u16",
        "cvt.u16.u32 %h4, %r1; cvt.u32.u16 %r4, %h4; st.global.u32 [%out], %r4;",
        ["LOP3.LUT"]
    ),
    snip!(
        "cvt_s32_s8",
        "cvt.s32.s8 %r4, %r1; st.global.u32 [%out], %r4;",
        ["PRMT"]
    ),
    snip!(
        "cvt_u8_u32",
        "cvt.u8.u32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["LOP3.LUT"]
    ),
    snip!(
        "cvt_sat_u32_s32",
        "cvt.sat.u32.s32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["VIMNMX"]
    ),
    snip!(
        "cvt_sat_u16_u32",
        "cvt.sat.u16.u32 %r4, %r1; st.global.u32 [%out], %r4;",
        ["VIMNMX.U32"]
    ),
    snip!(
        "cvt_rn_f32_s32",
        "cvt.rn.f32.s32 %f4, %r1; st.global.f32 [%out], %f4;",
        ["I2FP.F32.S32"]
    ),
    snip!(
        "cvt_rz_f32_u32",
        "cvt.rz.f32.u32 %f4, %r1; st.global.f32 [%out], %f4;",
        ["I2F.U32.RZ"]
    ),
    snip!(
        "cvt_rn_f32_s64",
        "cvt.rn.f32.s64 %f4, %rd1; st.global.f32 [%out], %f4;",
        ["I2F.S64"]
    ),
    snip!(
        "cvt_f64_s32",
        "cvt.rn.f64.s32 %fd4, %r1; st.global.f64 [%out], %fd4;",
        ["I2F.F64"]
    ),
    snip!(
        "cvt_f64_u64",
        "cvt.rn.f64.u64 %fd4, %rd1; st.global.f64 [%out], %fd4;",
        ["I2F.F64.U64"]
    ),
    snip!(
        "cvt_rzi_s32_f32",
        "cvt.rzi.s32.f32 %r4, %f1; st.global.u32 [%out], %r4;",
        ["F2I.TRUNC.NTZ"]
    ),
    snip!(
        "cvt_rni_u16_f32",
        "cvt.rni.u16.f32 %h4, %f1; st.global.u16 [%out], %h4;",
        ["F2I.U16.NTZ"]
    ),
    snip!(
        "cvt_rpi_ftz",
        "cvt.rpi.ftz.s32.f32 %r4, %f1; st.global.u32 [%out], %r4;",
        ["F2I.FTZ.CEIL.NTZ"]
    ),
    snip!(
        "cvt_rzi_s64_f32",
        "cvt.rzi.s64.f32 %rd4, %f1; st.global.u64 [%out], %rd4;",
        ["F2I.S64.TRUNC"]
    ),
    snip!(
        "cvt_rzi_u64_f64",
        "cvt.rzi.u64.f64 %rd4, %fd1; st.global.u64 [%out], %rd4;",
        ["F2I.U64.F64.TRUNC"]
    ),
    snip!(
        "cvt_rmi_u32_f64",
        "cvt.rmi.u32.f64 %r4, %fd1; st.global.u32 [%out], %r4;",
        ["F2I.U32.F64.FLOOR"]
    ),
    snip!(
        "cvt_f64_f32",
        "cvt.f64.f32 %fd4, %f1; st.global.f64 [%out], %fd4;",
        ["F2F.F64.F32"]
    ),
    snip!(
        "cvt_f32_f64",
        "cvt.rn.f32.f64 %f4, %fd1; st.global.f32 [%out], %f4;",
        ["F2F.F32.F64"]
    ),
    snip!(
        "cvt_rni_f32",
        "cvt.rni.f32.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FRND"]
    ),
    snip!(
        "cvt_rzi_ftz_f32",
        "cvt.rzi.ftz.f32.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FRND.FTZ.TRUNC"]
    ),
    snip!(
        "cvt_sat_f32",
        "cvt.sat.f32.f32 %f4, %f1; st.global.f32 [%out], %f4;",
        ["FADD.SAT"]
    ),
    snip!(
        "cvt_f32_f16",
        "cvt.f32.f16 %f4, %h1; st.global.f32 [%out], %f4;",
        ["HADD2.F32"]
    ),
    snip!(
        "cvt_f32_bf16",
        "cvt.f32.bf16 %f4, %h1; st.global.f32 [%out], %f4;",
        ["SHF.L.U32"]
    ),
    snip!(
        "cvt_f16_f32",
        "cvt.rn.f16.f32 %h4, %f1; st.global.u16 [%out], %h4;",
        ["F2FP.F16.F32.PACK_AB"]
    ),
    snip!(
        "cvt_bf16_f32",
        "cvt.rn.bf16.f32 %h4, %f1; st.global.u16 [%out], %h4;",
        ["F2FP.BF16.F32.PACK_AB"]
    ),
    snip!(
        "cvt_f16x2",
        "cvt.rn.f16x2.f32 %r4, %f1, %f2; st.global.u32 [%out], %r4;",
        ["F2FP.F16.F32.PACK_AB"]
    ),
    snip!(
        "cvt_relu_f16x2",
        "cvt.rn.relu.f16x2.f32 %r4, %f1, %f2; st.global.u32 [%out], %r4;",
        ["F2FP.RELU.F16.F32.PACK_AB"]
    ),
    snip!(
        "cvt_e4m3x2",
        "cvt.rn.satfinite.e4m3x2.f32 %h4, %f1, %f2; st.global.u16 [%out], %h4;",
        ["F2FP.SATFINITE.E4M3.F32.PACK_AB_MERGE_C"]
    ),
    snip!(
        "cvt_f16x2_e4m3x2",
        "cvt.rn.f16x2.e4m3x2 %r4, %h1; st.global.u32 [%out], %r4;",
        ["F2FP.F16.E4M3.UNPACK_B"]
    ),
    snip!(
        "cvt_pack",
        "cvt.pack.sat.s8.s32.b32 %r4, %r1, %r2, %r3; st.global.u32 [%out], %r4;",
        ["I2IP.S8.S32.SAT"]
    ),
];

#[test]
fn snippets_match_ptxas() {
    let mut exact = 0;
    let mut compared = 0;
    let mut failures = Vec::new();
    let reference = ptxas_seqs(SNIPPETS);
    for s in SNIPPETS {
        let ptx = kernel(s.name, s.body);
        let functions = match compile_text(s.name, &ptx) {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{}: {e}", s.name));
                continue;
            }
        };
        let lines = our_lines(&functions[0]);
        let ours = opcode_seq(lines.iter().map(String::as_str));
        if std::env::var_os("ISEL_ARITH_SHOW").is_some() {
            println!("{}: ptxc {:?}", s.name, ours);
        }
        if ours != s.want {
            failures.push(format!(
                "{}: ptxc {:?}, expected {:?}",
                s.name, ours, s.want
            ));
        }
        if let Some(theirs) = reference.get(s.name) {
            compared += 1;
            if *theirs == ours {
                exact += 1;
            } else if std::env::var_os("ISEL_ARITH_SHOW").is_some() {
                println!("{}: ptxas {:?}", s.name, theirs);
            }
        }
    }
    println!(
        "isel-arith: {exact}/{compared} snippets match ptxas's opcode sequence exactly ({} snippets)",
        SNIPPETS.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The IEEE division and square root with their inline slow paths: each encodes, and the fast
/// path is ptxas's (MUFU.RCP + FCHK + four FFMAs; IADD3 + MUFU.RSQ + ISETP).
#[test]
fn ieee_div_sqrt_paths() {
    for (name, body, head) in [
        (
            "div_rn",
            "div.rn.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
            &["MUFU.RCP", "FCHK", "FFMA", "FFMA", "FFMA", "FFMA", "FFMA"][..],
        ),
        (
            "div_rn_ftz",
            "div.rn.ftz.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
            &["MUFU.RCP", "FCHK", "FFMA", "FFMA", "FFMA", "FFMA", "FFMA"][..],
        ),
        (
            "sqrt_rn",
            "sqrt.rn.f32 %f4, %f1; st.global.f32 [%out], %f4;",
            &["IADD3", "MUFU.RSQ", "ISETP.GT.U32.AND"][..],
        ),
        (
            "sqrt_rn_ftz_guarded",
            "@%p1 sqrt.rn.ftz.f32 %f1, %f1; st.global.f32 [%out], %f1;",
            &["IADD3", "MUFU.RSQ", "ISETP.GT.U32.AND"][..],
        ),
    ] {
        let f = compile_text(name, &kernel(name, body)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let lines = our_lines(&f[0]);
        let seq = opcode_seq(lines.iter().map(String::as_str));
        let head: Vec<String> = head.iter().map(|s| s.to_string()).collect();
        assert!(
            seq.windows(head.len()).any(|w| w == head.as_slice()),
            "{name}: {seq:?}"
        );
        // The slow path is there: branches and the special-value tests.
        assert!(
            lines.iter().filter(|l| l.contains("BRA")).count() >= 3,
            "{name}: {lines:?}"
        );
        if let Some(nvdisasm) = require(Tool::Nvdisasm, "isel-arith div/sqrt") {
            let theirs = nvdisasm_lines(&nvdisasm, &f[0].words[..f[0].code_len]).unwrap();
            assert_eq!(theirs, lines, "{name}");
        }
    }
}

/// The slow paths of div.rn.f32 and sqrt.rn.f32 are ptxas's subroutines (`lower/slow_path.rs`):
/// one per kind, shared by the kernel's call sites, after its `EXIT`, reached with
/// `CALL.REL.NOINC` and left with `RET.REL.NODEC`, named `$__internal_<n>_$<name>` in name order,
/// and the kernel has `EIATTR_CRS_STACK_SIZE` — as in ptxas's cubin of the same kernel.
#[test]
fn ieee_slow_paths_are_subroutines() {
    use ptxc::emit::model::Linkage::Weak;
    let name = "slow_paths";
    let text = kernel(
        name,
        "div.rn.f32 %f4, %f1, %f2; div.rn.f32 %f5, %f4, %f3; sqrt.rn.f32 %f6, %f5; \
         st.global.f32 [%out], %f6; st.global.f32 [%out+4], %f4;",
    );
    let want = [
        "$__internal_0_$__cuda_sm20_sqrt_rn_f32_slowpath",
        "$__internal_1_$__cuda_sm3x_div_rn_noftz_f32_slowpath",
    ];
    // ptxas: the shape this follows.
    let dir = tempdir();
    let path = dir.join("slow_paths.ptx");
    std::fs::write(&path, &text).unwrap();
    if let Some(res) = ptxc_tests::ptxas(&path, &[]) {
        let cubin = ptxc::emit::read::read(res.cubin.as_ref().expect("ptxas compiles it"))
            .expect("ptxas's cubin reads");
        let f = &cubin.functions[0];
        let names: Vec<&str> = f.subroutines.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, want, "ptxas");
        assert!(f.subroutines.iter().all(|s| s.linkage == Weak), "ptxas");
        assert_eq!(f.attrs.crs_stack_size, Some(0), "ptxas");
    }
    // ptxc.
    let (cubin, encoded) = ptxc_cubin_verified(name, &text);
    let f = &cubin.functions[0];
    let names: Vec<&str> = f.subroutines.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, want, "ptxc");
    assert!(f.subroutines.iter().all(|s| s.linkage == Weak), "ptxc");
    assert_eq!(f.attrs.crs_stack_size, Some(0), "ptxc");
    let lines = our_lines(&encoded[0]);
    let offsets: Vec<u64> = f.subroutines.iter().map(|s| s.offset).collect();
    // The kernel's code ends with EXIT; each subroutine with its RET.
    let first = (offsets[0] / 16) as usize;
    assert!(lines[first - 1].starts_with("EXIT"), "{lines:?}");
    let calls: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("CALL.REL.NOINC"))
        .collect();
    assert_eq!(calls.len(), 3, "{lines:?}");
    for (call, target) in calls.iter().zip([offsets[1], offsets[1], offsets[0]]) {
        assert_eq!(**call, format!("CALL.REL.NOINC {target:#x}"), "{lines:?}");
    }
    let rets: Vec<usize> = (0..lines.len())
        .filter(|&k| lines[k].starts_with("RET.REL.NODEC R2 0x0"))
        .collect();
    assert_eq!(rets.len(), 2, "{lines:?}");
    assert!(rets[0] < (offsets[1] / 16) as usize && rets[1] > (offsets[1] / 16) as usize);
    if let Some(nvdisasm) = require(Tool::Nvdisasm, "isel-arith slow paths") {
        let theirs = nvdisasm_lines(&nvdisasm, &encoded[0].words[..encoded[0].code_len]).unwrap();
        assert_eq!(theirs, lines);
    }
}

/// A call to a slow path overwrites only the registers its allocated body writes
/// (`passes/regalloc`, `call_clobber_set`), with the return address in R2:R3, so the kernels
/// that call one no longer report 24 registers or more (R20:R21, and every value kept across
/// the call above R15). Each kernel's `-v` count is held to what it is now, and stays at least
/// ptxas's (`docs/passes/lowering.md`, "Slow paths as subroutines", has the table and what
/// ptxas's subroutines write).
#[test]
fn slow_path_calls_overwrite_only_what_the_slow_path_writes() {
    let dir = ptxc_tests::shared_dir().join("corpus/zluda/sm90a");
    let own = ptxc_tests::workspace_root().join("tests");
    let probe = own.join("sass-probes/ptx/rcp_f64.ptx");
    // (file, kernel, ptxc's count now, ptxas's)
    let cases = [
        (dir.join("div_ftz.ptx"), "div_ftz", 18, 14),
        (dir.join("div_noftz.ptx"), "div_noftz", 21, 16),
        (dir.join("rcp_f64.ptx"), "rcp_f64", 22, 16),
        (dir.join("rsqrt.ptx"), "rsqrt", 18, 12),
        (dir.join("sqrt_rn_ftz.ptx"), "sqrt_rn_ftz", 12, 8),
        (own.join("kernels/fp_math.ptx"), "fp_math", 32, 20),
        (probe.clone(), "rcp_rn_f64", 18, 12),
        (probe, "rcp_rz_f64", 22, 16),
    ];
    for (path, kernel, ours, theirs) in cases {
        let text = std::fs::read_to_string(&path).unwrap();
        let (cubin, encoded) = ptxc_cubin_verified(kernel, &text);
        let f = cubin
            .functions
            .iter()
            .find(|f| f.name == kernel)
            .unwrap_or_else(|| panic!("{kernel}"));
        assert!(f.registers <= ours, "{kernel}: {} registers", f.registers);
        let e = encoded.iter().find(|e| e.name == kernel).unwrap();
        let lines = our_lines(e);
        assert!(
            lines.iter().any(|l| l.starts_with("RET.REL.NODEC R2 0x0")),
            "{kernel}: {lines:?}"
        );
        if let Some(res) = ptxc_tests::ptxas(&path, &[]) {
            let c = ptxc::emit::read::read(res.cubin.as_ref().expect("ptxas compiles it")).unwrap();
            let g = c.functions.iter().find(|g| g.name == kernel).unwrap();
            assert_eq!(g.registers, theirs, "ptxas: {kernel}");
        }
    }
}

/// The f64 slow paths too: `rcp.rn.f64` and `rsqrt.approx.f64` call theirs from the fast
/// path's fall-through, `rcp.{rm,rp,rz}.f64` call one for the whole operation; the names,
/// their order and numbering, and the calls are ptxas's.
#[test]
fn f64_slow_paths_are_subroutines() {
    let name = "f64_slow_paths";
    let text = kernel(
        name,
        "rcp.rn.f64 %fd4, %fd1; rsqrt.approx.f64 %fd5, %fd2; rcp.rz.f64 %fd6, %fd3; \
         rcp.rm.f64 %fd7, %fd1; rcp.rp.f64 %fd8, %fd2; \
         st.global.f64 [%out], %fd4; st.global.f64 [%out+8], %fd5; \
         st.global.f64 [%out+16], %fd6; st.global.f64 [%out+24], %fd7; \
         st.global.f64 [%out+32], %fd8;",
    );
    let want = [
        "$__internal_0_$__cuda_sm20_dblrcp_rn_slowpath_v3",
        "$__internal_1_$__cuda_sm20_drsqrt_f64_slowpath_v2",
        "$__internal_2_$__cuda_sm20_rcp_rd_f64",
        "$__internal_3_$__cuda_sm20_rcp_ru_f64",
        "$__internal_4_$__cuda_sm20_rcp_rz_f64",
    ];
    let path = tempdir().join("f64_slow_paths.ptx");
    std::fs::write(&path, &text).unwrap();
    if let Some(res) = ptxc_tests::ptxas(&path, &[]) {
        let cubin = ptxc::emit::read::read(res.cubin.as_ref().expect("ptxas compiles it"))
            .expect("ptxas's cubin reads");
        let f = &cubin.functions[0];
        let names: Vec<&str> = f.subroutines.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, want, "ptxas");
        assert_eq!(f.attrs.crs_stack_size, Some(0), "ptxas");
    }
    let (cubin, encoded) = ptxc_cubin_verified(name, &text);
    let f = &cubin.functions[0];
    let names: Vec<&str> = f.subroutines.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, want, "ptxc");
    assert_eq!(f.attrs.crs_stack_size, Some(0), "ptxc");
    let lines = our_lines(&encoded[0]);
    let count = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count();
    assert_eq!(count("CALL.REL.NOINC"), 5, "{lines:?}");
    assert_eq!(count("RET.REL.NODEC R2 0x0"), 5, "{lines:?}");
}

// ---------------------------------------------------------------------------------------------
// A small SASS interpreter, to run what the recipes emit on many inputs and compare the results
// with Rust's arithmetic. It knows the integer instructions (and the few float conversions the
// integer division uses) with the semantics ptxas's own code relies on; MUFU.RCP is modelled as
// the correctly rounded reciprocal, optionally one ulp off (the hardware is within one ulp).

mod sim {
    use ptxc::target::sm90a::{Instr, MemPrefix, MemTerm, Operand, OperandKind, RegFile};
    use std::collections::HashMap;

    pub struct Machine {
        pub r: [u32; 256],
        pub p: [bool; 8],
        pub ur: [u32; 64],
        pub cbank: HashMap<i64, u32>,
        pub mem: HashMap<u64, u8>,
        /// Added to every MUFU.RCP result's bits (−1, 0, 1).
        pub rcp_ulp: i32,
        /// What FCHK answers: `None` models it as "the fast path is safe for normal operands
        /// whose exponents are far from the limits"; `Some(v)` forces v.
        pub fchk: Option<bool>,
    }

    impl Machine {
        pub fn new() -> Machine {
            Machine {
                r: [0; 256],
                p: [false; 8],
                ur: [0; 64],
                cbank: HashMap::new(),
                mem: HashMap::new(),
                rcp_ulp: 0,
                fchk: None,
            }
        }

        fn reg(&self, o: &Operand, w: u8) -> u32 {
            match &o.kind {
                OperandKind::Reg(r) => match r.file {
                    RegFile::Gpr if r.num == 255 => 0,
                    RegFile::Gpr => self.r[(r.num + w) as usize],
                    RegFile::Ugpr if r.num == 63 => 0,
                    RegFile::Ugpr => self.ur[(r.num + w) as usize],
                    _ => panic!("not a register: {o:?}"),
                },
                OperandKind::Int(v) => {
                    if w == 0 {
                        *v as u32
                    } else {
                        0
                    }
                }
                OperandKind::FloatBits(ptxc::target::sm90a::FloatFmt::F64Hi, b) => {
                    if w == 0 {
                        0
                    } else {
                        *b as u32
                    }
                }
                OperandKind::FloatBits(_, b) => *b as u32,
                OperandKind::CBank(c) => self.cbank[&(c.offset + 4 * i64::from(w))],
                _ => panic!("unsupported operand {o:?}"),
            }
        }

        /// A 32-bit source with `~` applied (and `-` as two's complement when `neg_int`).
        fn s32(&self, o: &Operand) -> u32 {
            let mut v = self.reg(o, 0);
            if o.not {
                v = !v;
            }
            if o.neg {
                v = v.wrapping_neg();
            }
            v
        }

        fn s64(&self, o: &Operand) -> u64 {
            u64::from(self.reg(o, 0)) | (u64::from(self.reg(o, 1)) << 32)
        }

        fn pred(&self, o: &Operand) -> bool {
            let OperandKind::Reg(r) = &o.kind else {
                panic!("not a predicate: {o:?}")
            };
            let v = if r.num == 7 {
                true
            } else {
                self.p[r.num as usize]
            };
            v != o.not
        }

        fn set_r(&mut self, o: &Operand, w: u8, v: u32) {
            if let OperandKind::Reg(r) = &o.kind {
                match r.file {
                    RegFile::Gpr if r.num != 255 => self.r[(r.num + w) as usize] = v,
                    RegFile::Ugpr if r.num != 63 => self.ur[(r.num + w) as usize] = v,
                    _ => {}
                }
            }
        }

        fn set_p(&mut self, o: &Operand, v: bool) {
            if let OperandKind::Reg(r) = &o.kind
                && r.file == RegFile::Pred
                && r.num != 7
            {
                self.p[r.num as usize] = v;
            }
        }

        fn addr(&self, o: &Operand) -> u64 {
            let OperandKind::Mem(m) = &o.kind else {
                panic!("not memory: {o:?}")
            };
            let _ = matches!(m.prefix, MemPrefix::Desc(_));
            let mut a = 0u64;
            for t in &m.terms {
                match t {
                    MemTerm::Reg(r, sfx) => {
                        let op = Operand::new(OperandKind::Reg(*r));
                        a = a.wrapping_add(if *sfx == Some("64") {
                            self.s64(&op)
                        } else {
                            u64::from(self.reg(&op, 0))
                        });
                    }
                    MemTerm::Imm(v) => a = a.wrapping_add(*v as u64),
                }
            }
            a
        }

        pub fn load(&self, a: u64, n: usize) -> u64 {
            (0..n).fold(0u64, |acc, i| {
                acc | (u64::from(*self.mem.get(&(a + i as u64)).unwrap_or(&0)) << (8 * i))
            })
        }

        pub fn store(&mut self, a: u64, n: usize, v: u64) {
            for i in 0..n {
                self.mem.insert(a + i as u64, (v >> (8 * i)) as u8);
            }
        }

        /// Runs from the first instruction to EXIT.
        pub fn run(&mut self, code: &[Instr]) -> Result<(), String> {
            let mut pc = 0usize;
            let mut steps = 0;
            while pc < code.len() {
                steps += 1;
                if steps > 100_000 {
                    return Err("no EXIT".into());
                }
                let i = &code[pc];
                pc += 1;
                let g = &i.guard;
                let gv = if g.pred.num == 7 {
                    true
                } else {
                    self.p[g.pred.num as usize]
                } != g.neg;
                if !gv {
                    continue;
                }
                if i.mnemonic == "EXIT" {
                    return Ok(());
                }
                if i.mnemonic == "BRA" || i.mnemonic == "CALL" {
                    let OperandKind::Int(t) = i.operands.last().unwrap().kind else {
                        return Err(i.mnemonic.into());
                    };
                    pc = (t as u64 / 16) as usize;
                    continue;
                }
                if i.mnemonic == "RET" {
                    // `RET.REL.NODEC Rn 0x0`: back to the section offset in Rn.
                    let OperandKind::RegTarget(r, _) = i.operands[0].kind else {
                        return Err("RET".into());
                    };
                    pc = (self.r[r.num as usize] / 16) as usize;
                    continue;
                }
                self.exec(i).map_err(|e| format!("{i}: {e}"))?;
                if std::env::var_os("ISEL_ARITH_TRACE").is_some() {
                    let vals: Vec<String> = i
                        .operands
                        .iter()
                        .take(2)
                        .map(|o| match &o.kind {
                            OperandKind::Reg(r) if r.file == RegFile::Gpr && r.num < 255 => {
                                format!("R{}={:#x}", r.num, self.r[r.num as usize])
                            }
                            OperandKind::Reg(r) if r.file == RegFile::Pred && r.num < 7 => {
                                format!("P{}={}", r.num, self.p[r.num as usize])
                            }
                            _ => String::new(),
                        })
                        .collect();
                    eprintln!("{i}    {}", vals.join(" "));
                }
            }
            Err("fell off the end".into())
        }

        fn exec(&mut self, i: &Instr) -> Result<(), String> {
            let o = &i.operands;
            let m = |s: &str| i.mods.contains(&s);
            match i.mnemonic {
                "NOP" => {}
                "MOV" | "UMOV" => {
                    let v = self.reg(&o[1], 0);
                    self.set_r(&o[0], 0, v);
                }
                "LDC" | "ULDC" => {
                    let n: u8 = if m("64") { 2 } else { 1 };
                    for w in 0..n {
                        let v = self.reg(&o[1], w);
                        self.set_r(&o[0], w, v);
                    }
                }
                "LDG" | "STG" => {
                    let n: usize = if m("64") {
                        8
                    } else if m("U16") || m("S16") {
                        2
                    } else if m("U8") || m("S8") {
                        1
                    } else if m("128") {
                        16
                    } else {
                        4
                    };
                    if i.mnemonic == "LDG" {
                        let a = self.addr(&o[1]);
                        for w in 0..n.div_ceil(4) {
                            let v = self.load(a + 4 * w as u64, n.min(4)) as u32;
                            self.set_r(&o[0], w as u8, v);
                        }
                    } else {
                        let a = self.addr(&o[0]);
                        for w in 0..n.div_ceil(4) {
                            let v = self.reg(&o[1], w as u8);
                            self.store(a + 4 * w as u64, n.min(4), u64::from(v));
                        }
                    }
                }
                "IADD3" => {
                    // IADD3 d, [P, [P]], a, b, c [, Pin, Pin2] (.X: carries in)
                    let defs = o
                        .iter()
                        .skip(1)
                        .take_while(
                            |x| matches!(&x.kind, OperandKind::Reg(r) if r.file == RegFile::Pred),
                        )
                        .count();
                    let s = &o[1 + defs..];
                    // `-x` is `~x + 1` inside the sum, so it carries like a subtraction.
                    let term = |x: &Operand, me: &Self| {
                        let v = me.reg(x, 0);
                        if x.neg {
                            u64::from(!v) + 1
                        } else if x.not {
                            u64::from(!v)
                        } else {
                            u64::from(v)
                        }
                    };
                    let mut sum = term(&s[0], self) + term(&s[1], self) + term(&s[2], self);
                    if m("X") {
                        sum += u64::from(self.pred(&s[3])) + u64::from(self.pred(&s[4]));
                    }
                    self.set_r(&o[0], 0, sum as u32);
                    if defs >= 1 {
                        self.set_p(&o[1], sum >> 32 & 1 == 1);
                    }
                    if defs >= 2 {
                        self.set_p(&o[2], sum >> 33 & 1 == 1);
                    }
                }
                "IMAD" => {
                    let wide = m("WIDE");
                    let hi = m("HI");
                    let has_p = wide || hi;
                    let pd = has_p
                        && matches!(&o[1].kind, OperandKind::Reg(r) if r.file == RegFile::Pred);
                    let s = &o[if pd { 2 } else { 1 }..];
                    let sg = !m("U32");
                    let (a, b) = (self.reg(&s[0], 0), self.s32(&s[1]));
                    let prod: i128 = if sg && (wide || hi) {
                        i128::from(a as i32) * i128::from(b as i32)
                    } else {
                        i128::from(a) * i128::from(b)
                    };
                    let c: i128 = if wide || hi {
                        let c = self.s64(&s[2]);
                        let c = if s[2].neg {
                            c.wrapping_neg()
                        } else if s[2].not {
                            !c
                        } else {
                            c
                        };
                        if sg && wide {
                            i128::from(c as i64)
                        } else {
                            i128::from(c)
                        }
                    } else {
                        i128::from(self.s32(&s[2]))
                    };
                    let mut sum = prod + c;
                    if m("X") {
                        sum += i128::from(self.pred(&s[3]));
                    }
                    let sum = sum as u128;
                    if wide {
                        self.set_r(&o[0], 0, sum as u32);
                        self.set_r(&o[0], 1, (sum >> 32) as u32);
                        if pd {
                            self.set_p(&o[1], (sum >> 64) & 1 == 1);
                        }
                    } else if hi {
                        self.set_r(&o[0], 0, (sum >> 32) as u32);
                        if pd {
                            self.set_p(&o[1], (sum >> 64) & 1 == 1);
                        }
                    } else {
                        self.set_r(&o[0], 0, sum as u32);
                    }
                }
                "ISETP" => {
                    let (a, b) = (self.s32(&o[2]), self.s32(&o[3]));
                    let c = self.pred(&o[4]);
                    let sg = !m("U32");
                    let ex = m("EX");
                    let (a, b) = if sg {
                        (i64::from(a as i32), i64::from(b as i32))
                    } else {
                        (i64::from(a), i64::from(b))
                    };
                    let lo = if ex { self.pred(&o[5]) } else { false };
                    let r = if ex {
                        // The high words compare; equal high words defer to the low words' result.
                        match i.mods[0] {
                            "EQ" => a == b && lo,
                            "NE" => a != b || lo,
                            "LT" => a < b || (a == b && lo),
                            "GT" => a > b || (a == b && lo),
                            "LE" => a < b || (a == b && lo),
                            "GE" => a > b || (a == b && lo),
                            x => return Err(format!("ISETP.{x}.EX")),
                        }
                    } else {
                        match i.mods[0] {
                            "EQ" => a == b,
                            "NE" => a != b,
                            "LT" => a < b,
                            "GT" => a > b,
                            "LE" => a <= b,
                            "GE" => a >= b,
                            x => return Err(format!("ISETP.{x}")),
                        }
                    };
                    let bop = |x: bool| {
                        if m("OR") {
                            x || c
                        } else if m("XOR") {
                            x ^ c
                        } else {
                            x && c
                        }
                    };
                    self.set_p(&o[0], bop(r));
                    self.set_p(&o[1], bop(!r));
                }
                "SEL" => {
                    let v = if self.pred(&o[3]) {
                        self.s32(&o[1])
                    } else {
                        self.s32(&o[2])
                    };
                    self.set_r(&o[0], 0, v);
                }
                "LOP3" => {
                    let pd = matches!(&o[0].kind, OperandKind::Reg(r) if r.file == RegFile::Pred);
                    let s = if pd { &o[1..] } else { &o[..] };
                    let (a, b, c) = (self.s32(&s[1]), self.s32(&s[2]), self.s32(&s[3]));
                    let OperandKind::Int(lut) = s[4].kind else {
                        return Err("LUT".into());
                    };
                    let mut v = 0u32;
                    for k in 0..32 {
                        let idx = ((a >> k) & 1) << 2 | ((b >> k) & 1) << 1 | ((c >> k) & 1);
                        v |= (((lut as u32) >> idx) & 1) << k;
                    }
                    self.set_r(&s[0], 0, v);
                    if pd {
                        self.set_p(&o[0], v != 0);
                    }
                }
                "PLOP3" => {
                    let sign = o[2].suffix.contains(&"SIGN");
                    let bit = |x: &Operand, me: &Self| {
                        if sign {
                            me.reg(x, 0) >> 31 == 1
                        } else {
                            me.pred(x)
                        }
                    };
                    let (a, b, c) = (bit(&o[2], self), bit(&o[3], self), bit(&o[4], self));
                    let OperandKind::Int(lut) = o[5].kind else {
                        return Err("LUT".into());
                    };
                    let idx = (u32::from(a) << 2) | (u32::from(b) << 1) | u32::from(c);
                    self.set_p(&o[0], (lut >> idx) & 1 == 1);
                }
                "SHF" => {
                    let (lo, sh, hi) = (self.reg(&o[1], 0), self.s32(&o[2]), self.reg(&o[3], 0));
                    let wrap = m("W");
                    let left = m("L");
                    let sg = m("S32") || m("S64");
                    let is64 = m("U64") || m("S64");
                    let amt = if wrap {
                        sh & 31
                    } else {
                        sh.min(if is64 { 64 } else { 32 })
                    };
                    let v = (u64::from(hi) << 32) | u64::from(lo);
                    let r = if left {
                        let x = if amt >= 64 { 0 } else { v << amt };
                        if m("HI") { (x >> 32) as u32 } else { x as u32 }
                    } else {
                        let x: u64 = if sg {
                            let sv = if is64 {
                                v as i64
                            } else {
                                i64::from(hi as i32) << 32 | i64::from(lo)
                            };
                            (sv >> amt.min(63)) as u64
                        } else if amt >= 64 {
                            0
                        } else if is64 || !m("HI") {
                            v >> amt
                        } else {
                            u64::from(hi) >> amt.min(63)
                        };
                        if m("HI") {
                            if sg {
                                (i64::from(hi as i32) >> amt.min(63)) as u32
                            } else {
                                x as u32
                            }
                        } else {
                            x as u32
                        }
                    };
                    self.set_r(&o[0], 0, r);
                }
                "PRMT" => {
                    if !i.mods.is_empty() {
                        return Err("PRMT mode".into());
                    }
                    let (a, s, c) = (self.reg(&o[1], 0), self.s32(&o[2]), self.reg(&o[3], 0));
                    let bytes = (u64::from(c) << 32) | u64::from(a);
                    let mut v = 0u32;
                    for k in 0..4 {
                        let sel = (s >> (4 * k)) & 0xf;
                        let byte = ((bytes >> (8 * (sel & 7))) & 0xff) as u32;
                        let byte = if sel & 8 != 0 {
                            if byte & 0x80 != 0 { 0xff } else { 0 }
                        } else {
                            byte
                        };
                        v |= byte << (8 * k);
                    }
                    self.set_r(&o[0], 0, v);
                }
                "IABS" => {
                    let v = (self.s32(&o[1]) as i32).wrapping_abs() as u32;
                    self.set_r(&o[0], 0, v);
                }
                "POPC" => {
                    let v = self.s32(&o[1]).count_ones();
                    self.set_r(&o[0], 0, v);
                }
                "BREV" => {
                    let v = self.s32(&o[1]).reverse_bits();
                    self.set_r(&o[0], 0, v);
                }
                "FLO" => {
                    let x = self.s32(&o[o.len() - 1]);
                    let x = if !m("U32") && (x as i32) < 0 { !x } else { x };
                    let pos = if x == 0 {
                        u32::MAX
                    } else {
                        31 - x.leading_zeros()
                    };
                    let v = if m("SH") && pos != u32::MAX {
                        31 - pos
                    } else {
                        pos
                    };
                    self.set_r(&o[0], 0, v);
                }
                "SGXT" => {
                    let (a, n) = (self.reg(&o[1], 0), self.s32(&o[2]));
                    let n = if m("W") { n & 31 } else { n.min(32) };
                    let v = if n == 0 {
                        0
                    } else if n >= 32 {
                        a
                    } else if m("U32") {
                        a & ((1u32 << n) - 1)
                    } else {
                        (((a << (32 - n)) as i32) >> (32 - n)) as u32
                    };
                    self.set_r(&o[0], 0, v);
                }
                "BMSK" => {
                    let (p, n) = (self.reg(&o[1], 0), self.s32(&o[2]));
                    let (p, n) = if m("W") {
                        (p & 31, n & 31)
                    } else {
                        (p.min(32), n.min(32))
                    };
                    let mask = if n >= 32 { u64::MAX } else { (1u64 << n) - 1 };
                    let v = ((mask << p) & 0xffff_ffff) as u32;
                    self.set_r(&o[0], 0, v);
                }
                "VIMNMX" => {
                    let (a, b) = (self.reg(&o[1], 0), self.s32(&o[2]));
                    let min = self.pred(&o[3]);
                    let v = if m("U32") {
                        if min { a.min(b) } else { a.max(b) }
                    } else {
                        let (a, b) = (a as i32, b as i32);
                        let r = if min { a.min(b) } else { a.max(b) };
                        (if m("RELU") { r.max(0) } else { r }) as u32
                    };
                    self.set_r(&o[0], 0, v);
                }
                "LEA" => {
                    let (a, b) = (self.s32(&o[1]), self.s32(&o[2]));
                    let OperandKind::Int(s) = o[3].kind else {
                        return Err("LEA".into());
                    };
                    self.set_r(&o[0], 0, (a << s).wrapping_add(b));
                }
                "I2F" => {
                    let rnd = ["RM", "RP", "RZ"]
                        .into_iter()
                        .find(|r| m(r))
                        .unwrap_or("RN");
                    let v: f64 = if m("U64") {
                        return {
                            let x = self.s64(&o[1]);
                            self.set_r(&o[0], 0, round_u64(x, false, rnd));
                            Ok(())
                        };
                    } else if m("S64") {
                        let x = self.s64(&o[1]) as i64;
                        let r = round_u64(x.unsigned_abs(), x < 0, rnd);
                        self.set_r(&o[0], 0, r);
                        return Ok(());
                    } else if m("U32") {
                        f64::from(self.reg(&o[1], 0))
                    } else {
                        f64::from(self.reg(&o[1], 0) as i32)
                    };
                    let r = round_u64(v.abs() as u64, v < 0.0, rnd);
                    self.set_r(&o[0], 0, r);
                }
                "F2I" => {
                    let x = f32::from_bits(self.reg(&o[1], 0));
                    let t = if m("TRUNC") {
                        x.trunc()
                    } else if m("FLOOR") {
                        x.floor()
                    } else if m("CEIL") {
                        x.ceil()
                    } else {
                        x.round_ties_even()
                    };
                    if m("U64") {
                        let v = if x.is_nan() { 0 } else { t as u64 };
                        self.set_r(&o[0], 0, v as u32);
                        self.set_r(&o[0], 1, (v >> 32) as u32);
                    } else if m("U32") {
                        let v = if x.is_nan() { 0 } else { t as u32 };
                        self.set_r(&o[0], 0, v);
                    } else {
                        let v = if x.is_nan() { 0 } else { t as i32 };
                        self.set_r(&o[0], 0, v as u32);
                    }
                }
                "MUFU" if m("RCP") => {
                    let x = f32::from_bits(self.reg(&o[1], 0));
                    let r = (1.0f64 / f64::from(x)) as f32;
                    let bits = if r.is_finite() && r != 0.0 {
                        (r.to_bits() as i64 + i64::from(self.rcp_ulp)) as u32
                    } else {
                        r.to_bits()
                    };
                    self.set_r(&o[0], 0, bits);
                }
                "FADD" | "FMUL" | "FFMA" => {
                    let ftz = m("FTZ");
                    let f = |x: &Operand, me: &Self| fsrc(me.reg(x, 0), x, ftz);
                    let rnd = ["RM", "RP", "RZ"]
                        .into_iter()
                        .find(|r| m(r))
                        .unwrap_or("RN");
                    let exact = match i.mnemonic {
                        "FADD" => f(&o[1], self) + f(&o[2], self),
                        "FMUL" => f(&o[1], self) * f(&o[2], self),
                        _ => f(&o[1], self).mul_add(f(&o[2], self), f(&o[3], self)),
                    };
                    let mut r = round_f32(exact, rnd);
                    if m("SAT") {
                        r = if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) };
                    }
                    if ftz && r.is_subnormal() {
                        r = if r < 0.0 { -0.0 } else { 0.0 };
                    }
                    self.set_r(&o[0], 0, r.to_bits());
                }
                "FSETP" => {
                    let ftz = m("FTZ");
                    let (a, b) = (
                        fsrc(self.reg(&o[2], 0), &o[2], ftz),
                        fsrc(self.reg(&o[3], 0), &o[3], ftz),
                    );
                    let c = self.pred(&o[4]);
                    let un = a.is_nan() || b.is_nan();
                    let r = match i.mods[0] {
                        "EQ" => a == b,
                        "NE" => !un && a != b,
                        "LT" => a < b,
                        "LE" => a <= b,
                        "GT" => a > b,
                        "GE" => a >= b,
                        "EQU" => un || a == b,
                        "NEU" => un || a != b,
                        "LTU" => un || a < b,
                        "LEU" => un || a <= b,
                        "GTU" => un || a > b,
                        "GEU" => un || a >= b,
                        "NUM" => !un,
                        "NAN" => un,
                        x => return Err(format!("FSETP.{x}")),
                    };
                    let bop = |x: bool| {
                        if m("OR") {
                            x || c
                        } else if m("XOR") {
                            x ^ c
                        } else {
                            x && c
                        }
                    };
                    self.set_p(&o[0], bop(r));
                    self.set_p(&o[1], bop(!r));
                }
                "FCHK" => {
                    let (a, b) = (
                        f32::from_bits(self.reg(&o[1], 0)),
                        f32::from_bits(self.reg(&o[2], 0)),
                    );
                    let v = self.fchk.unwrap_or_else(|| {
                        let e = |x: f32| ((x.to_bits() >> 23) & 0xff) as i32;
                        !(a.is_normal()
                            && b.is_normal()
                            && (e(a) - e(b)).abs() < 100
                            && (30..220).contains(&e(a))
                            && (30..220).contains(&e(b)))
                    });
                    self.set_p(&o[0], v);
                }
                "MUFU" if m("RSQ") => {
                    let x = f32::from_bits(self.reg(&o[1], 0));
                    let r = (1.0f64 / f64::from(x).sqrt()) as f32;
                    let bits = if r.is_finite() && r != 0.0 {
                        (r.to_bits() as i64 + i64::from(self.rcp_ulp)) as u32
                    } else {
                        r.to_bits()
                    };
                    self.set_r(&o[0], 0, bits);
                }
                "DFMA" | "DMUL" | "DADD" => {
                    if i.mods.iter().any(|x| matches!(*x, "RZ" | "RM" | "RP")) {
                        return Err("directed f64 rounding".into());
                    }
                    let f = |x: &Operand, me: &Self| {
                        let mut v = f64::from_bits(me.s64(x));
                        if x.abs {
                            v = v.abs();
                        }
                        if x.neg {
                            v = -v;
                        }
                        v
                    };
                    let r = match i.mnemonic {
                        "DFMA" => f(&o[1], self).mul_add(f(&o[2], self), f(&o[3], self)),
                        "DMUL" => f(&o[1], self) * f(&o[2], self),
                        _ => f(&o[1], self) + f(&o[2], self),
                    };
                    self.set_r(&o[0], 0, r.to_bits() as u32);
                    self.set_r(&o[0], 1, (r.to_bits() >> 32) as u32);
                }
                "DSETP" => {
                    let f = |x: &Operand, me: &Self| {
                        let mut v = f64::from_bits(me.s64(x));
                        if x.abs {
                            v = v.abs();
                        }
                        if x.neg {
                            v = -v;
                        }
                        v
                    };
                    let (a, b) = (f(&o[2], self), f(&o[3], self));
                    let c = self.pred(&o[4]);
                    let un = a.is_nan() || b.is_nan();
                    let r = match i.mods[0] {
                        "EQ" => a == b,
                        "NE" => !un && a != b,
                        "LT" => a < b,
                        "GT" => a > b,
                        "GE" => a >= b,
                        "LE" => a <= b,
                        "GTU" => un || a > b,
                        "GEU" => un || a >= b,
                        "NEU" => un || a != b,
                        "NAN" => un,
                        x => return Err(format!("DSETP.{x}")),
                    };
                    let bop = |x: bool| {
                        if m("OR") {
                            x || c
                        } else if m("XOR") {
                            x ^ c
                        } else {
                            x && c
                        }
                    };
                    self.set_p(&o[0], bop(r));
                    self.set_p(&o[1], bop(!r));
                }
                "MUFU" if m("RSQ64H") => {
                    let x = f64::from_bits(u64::from(self.reg(&o[1], 0)) << 32);
                    let r = 1.0 / x.sqrt();
                    let h = ((r.to_bits() >> 32) as i64 + i64::from(self.rcp_ulp)) as u32;
                    self.set_r(
                        &o[0],
                        0,
                        if r.is_finite() && r != 0.0 {
                            h
                        } else {
                            (r.to_bits() >> 32) as u32
                        },
                    );
                }
                "MUFU" if m("RCP64H") => {
                    let x = f64::from_bits(u64::from(self.reg(&o[1], 0)) << 32);
                    let r = 1.0 / x;
                    let h = ((r.to_bits() >> 32) as i64 + i64::from(self.rcp_ulp)) as u32;
                    self.set_r(
                        &o[0],
                        0,
                        if r.is_finite() && r != 0.0 {
                            h
                        } else {
                            (r.to_bits() >> 32) as u32
                        },
                    );
                }
                other => return Err(format!("the simulator does not know {other}")),
            }
            Ok(())
        }
    }

    /// A float source with its modifiers (FTZ flushes subnormals).
    fn fsrc(bits: u32, o: &Operand, ftz: bool) -> f64 {
        let mut x = f32::from_bits(bits);
        if ftz && x.is_subnormal() {
            x = if x < 0.0 { -0.0 } else { 0.0 };
        }
        if o.abs {
            x = x.abs();
        }
        if o.neg {
            x = -x;
        }
        f64::from(x)
    }

    /// An f64 rounded to f32 in a rounding mode.
    fn round_f32(x: f64, rnd: &str) -> f32 {
        let r = x as f32;
        if r.is_nan() || f64::from(r) == x {
            return r;
        }
        let up = |r: f32| {
            if r == f32::INFINITY {
                r
            } else if r == 0.0 {
                f32::from_bits(1)
            } else if r > 0.0 {
                f32::from_bits(r.to_bits() + 1)
            } else {
                f32::from_bits(r.to_bits() - 1)
            }
        };
        let down = |r: f32| -up(-r);
        match rnd {
            "RZ" if f64::from(r).abs() > x.abs() => {
                if r > 0.0 {
                    down(r)
                } else {
                    up(r)
                }
            }
            "RM" if f64::from(r) > x => down(r),
            "RP" if f64::from(r) < x => up(r),
            _ => r,
        }
    }

    /// A magnitude (with a sign) rounded to f32 in a mode: the bits.
    fn round_u64(x: u64, neg: bool, rnd: &str) -> u32 {
        if x == 0 {
            return if neg { 0x8000_0000 } else { 0 };
        }
        let lz = x.leading_zeros();
        let e = 63 - lz; // x in [2^e, 2^(e+1))
        let (mut mant, rest, half) = if e <= 23 {
            (x << (23 - e), 0u64, false)
        } else {
            let sh = e - 23;
            let rest = x & ((1u64 << sh) - 1);
            (x >> sh, rest, rest == 1u64 << (sh - 1))
        };
        let mut exp = e + 127;
        let up = match rnd {
            "RZ" => false,
            "RP" => rest != 0 && !neg,
            "RM" => rest != 0 && neg,
            _ => {
                let sh = e.saturating_sub(23);
                rest != 0 && (rest > (1u64 << sh.max(1)) / 2 || (half && mant & 1 == 1))
            }
        };
        if up {
            mant += 1;
            if mant == 1 << 24 {
                mant >>= 1;
                exp += 1;
            }
        }
        (u32::from(neg) << 31) | (exp << 23) | (mant as u32 & 0x7f_ffff)
    }
}

/// Runs a compiled kernel `k(pin, pout)` in the simulator on an input buffer; returns the
/// output buffer's first `n` bytes.
fn simulate(
    f: &ptxc::emit::sass::EncodedFunction,
    input: &[u8],
    n: usize,
    rcp_ulp: i32,
) -> Result<Vec<u8>, String> {
    let mut m = sim::Machine::new();
    m.rcp_ulp = rcp_ulp;
    let (pin, pout) = (0x1000_0000u64, 0x2000_0000u64);
    for (off, v) in [(0x210, pin), (0x218, pout), (0x208, 0), (0x28, 0x00ff_0000)] {
        m.cbank.insert(off, v as u32);
        m.cbank.insert(off + 4, (v >> 32) as u32);
    }
    for (i, b) in input.iter().enumerate() {
        m.mem.insert(pin + i as u64, *b);
    }
    m.run(&f.instrs)?;
    Ok((0..n).map(|i| m.load(pout + i as u64, 1) as u8).collect())
}

/// A deterministic stream of test values, edge cases first.
fn values64(n: usize) -> Vec<u64> {
    let mut v: Vec<u64> = vec![
        0,
        1,
        2,
        3,
        7,
        10,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        0x1_0000_0000,
        0x1_0000_0001,
        u64::MAX,
        u64::MAX - 1,
        1 << 63,
        (1 << 63) - 1,
        0xdead_beef_1234_5678,
        1 << 52,
        12345678901234,
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Mix magnitudes: shift right by a varying amount.
        v.push(x >> (x % 61));
    }
    v
}

#[test]
#[allow(clippy::manual_checked_ops)]
fn integer_division_is_exact_in_the_simulator() {
    let ptx = kernel(
        "idiv",
        "div.u64 %rd4, %rd1, %rd2; rem.u64 %rd5, %rd1, %rd2; div.s64 %rd6, %rd1, %rd2; rem.s64 %rd7, %rd1, %rd2;\
         div.u32 %r4, %r1, %r2; rem.u32 %r5, %r1, %r2; div.s32 %r6, %r1, %r2; rem.s32 %r7, %r1, %r2;\
         mul.hi.u64 %rd8, %rd1, %rd2; mul.hi.s64 %rd9, %rd1, %rd2; mul.lo.u64 %rd10, %rd1, %rd2;\
         st.global.u64 [%out], %rd4; st.global.u64 [%out+8], %rd5; st.global.u64 [%out+16], %rd6; st.global.u64 [%out+24], %rd7;\
         st.global.u32 [%out+32], %r4; st.global.u32 [%out+36], %r5; st.global.u32 [%out+40], %r6; st.global.u32 [%out+44], %r7;\
         st.global.u64 [%out+48], %rd8; st.global.u64 [%out+56], %rd9; st.global.u64 [%out+64], %rd10;",
    );
    let f = compile_text("idiv", &ptx).unwrap();
    let vals = values64(60);
    let mut checked = 0;
    for (k, &a) in vals.iter().enumerate() {
        for &b in vals.iter().skip(k % 7).step_by(3) {
            let (a32, b32) = (
                a as u32 ^ (b >> 40) as u32,
                b as u32 | ((a >> 50) as u32 & 1),
            );
            let mut input = vec![0u8; 88];
            input[0..4].copy_from_slice(&a32.to_le_bytes());
            input[4..8].copy_from_slice(&b32.to_le_bytes());
            input[8..12].copy_from_slice(&1u32.to_le_bytes());
            input[16..24].copy_from_slice(&a.to_le_bytes());
            input[24..32].copy_from_slice(&b.to_le_bytes());
            for ulp in [0, -1, 1] {
                let out = simulate(&f[0], &input, 72, ulp).unwrap();
                let g64 = |o: usize| u64::from_le_bytes(out[o..o + 8].try_into().unwrap());
                let g32 = |o: usize| u32::from_le_bytes(out[o..o + 4].try_into().unwrap());
                let ctx = format!("a={a:#x} b={b:#x} a32={a32:#x} b32={b32:#x} ulp={ulp}");
                if b != 0 {
                    assert_eq!(g64(0), a / b, "div.u64 {ctx}");
                    assert_eq!(g64(8), a % b, "rem.u64 {ctx}");
                    let (sa, sb) = (a as i64, b as i64);
                    if !(sa == i64::MIN && sb == -1) {
                        assert_eq!(g64(16) as i64, sa / sb, "div.s64 {ctx}");
                        assert_eq!(g64(24) as i64, sa % sb, "rem.s64 {ctx}");
                    }
                } else {
                    assert_eq!(g64(0), u64::MAX, "div.u64 by 0 {ctx}");
                }
                if b32 != 0 {
                    assert_eq!(g32(32), a32 / b32, "div.u32 {ctx}");
                    assert_eq!(g32(36), a32 % b32, "rem.u32 {ctx}");
                    let (sa, sb) = (a32 as i32, b32 as i32);
                    if !(sa == i32::MIN && sb == -1) {
                        assert_eq!(g32(40) as i32, sa / sb, "div.s32 {ctx}");
                        assert_eq!(g32(44) as i32, sa % sb, "rem.s32 {ctx}");
                    }
                }
                assert_eq!(
                    g64(48),
                    ((u128::from(a) * u128::from(b)) >> 64) as u64,
                    "mul.hi.u64 {ctx}"
                );
                assert_eq!(
                    g64(56),
                    ((i128::from(a as i64) * i128::from(b as i64)) >> 64) as u64,
                    "mul.hi.s64 {ctx}"
                );
                assert_eq!(g64(64), a.wrapping_mul(b), "mul.lo.u64 {ctx}");
                checked += 1;
            }
        }
    }
    println!("isel-arith: integer division and 64-bit products checked on {checked} inputs");
}

#[test]
#[ignore]
fn trace_one() {
    let body = std::env::var("ISEL_ARITH_BODY").unwrap();
    let input: Vec<u8> = std::env::var("ISEL_ARITH_INPUT")
        .unwrap()
        .split(',')
        .map(|x| u8::from_str_radix(x.trim(), 16).unwrap())
        .collect();
    let f = compile_text("t", &kernel("t", &body)).unwrap();
    let out = simulate(&f[0], &input, 16, 0).unwrap();
    println!("{out:02x?}");
}

/// The integer recipes on many inputs, in the simulator, against Rust's arithmetic.
#[test]
fn integer_recipes_match_rust() {
    // (PTX computing %r4 / %rd4 from %r1 %r2 %r3 %rd1 %rd2, Rust reference, 64-bit result)
    type F = fn(u32, u32, u32, u64, u64) -> u64;
    let cases: &[(&str, F, bool)] = &[
        (
            "add.sat.s32 %r4, %r1, %r2;",
            |a, b, _, _, _| (a as i32).saturating_add(b as i32) as u32 as u64,
            false,
        ),
        (
            "sub.sat.s32 %r4, %r1, %r2;",
            |a, b, _, _, _| (a as i32).saturating_sub(b as i32) as u32 as u64,
            false,
        ),
        (
            "add.s64 %rd4, %rd1, %rd2;",
            |_, _, _, x, y| x.wrapping_add(y),
            true,
        ),
        (
            "sub.s64 %rd4, %rd1, %rd2;",
            |_, _, _, x, y| x.wrapping_sub(y),
            true,
        ),
        (
            "sub.s64 %rd4, 7, %rd2;",
            |_, _, _, _, y| 7u64.wrapping_sub(y),
            true,
        ),
        (
            "add.cc.u32 %r5, %r1, %r2; addc.cc.u32 %r6, %r2, %r3; addc.u32 %r7, 0, 0; cvt.u64.u32 %rd5, %r6; cvt.u64.u32 %rd6, %r7; shl.b64 %rd6, %rd6, 32; or.b64 %rd4, %rd5, %rd6;",
            |a, b, c, _, _| {
                let s1 = u64::from(a) + u64::from(b);
                let s2 = u64::from(b) + u64::from(c) + (s1 >> 32);
                (s2 & 0xffff_ffff) | ((s2 >> 32) << 32)
            },
            true,
        ),
        (
            "sub.cc.u32 %r5, %r1, %r2; subc.cc.u32 %r6, %r2, %r3; addc.u32 %r7, 0, 0; cvt.u64.u32 %rd5, %r6; cvt.u64.u32 %rd6, %r7; shl.b64 %rd6, %rd6, 32; or.b64 %rd4, %rd5, %rd6;",
            |a, b, c, _, _| {
                let c1 = u64::from(a >= b);
                let d = u64::from(b) + u64::from(!c) + c1;
                (d & 0xffff_ffff) | ((d >> 32) << 32)
            },
            true,
        ),
        (
            "mad.lo.cc.u32 %r5, %r1, %r2, %r3; madc.hi.u32 %r6, %r1, %r2, %r3; cvt.u64.u32 %rd5, %r5; cvt.u64.u32 %rd6, %r6; shl.b64 %rd6, %rd6, 32; or.b64 %rd4, %rd5, %rd6;",
            |a, b, c, _, _| {
                let p = u64::from(a) * u64::from(b);
                let lo = (p & 0xffff_ffff) + u64::from(c);
                let hi = (p >> 32) + u64::from(c) + (lo >> 32);
                (lo & 0xffff_ffff) | ((hi & 0xffff_ffff) << 32)
            },
            true,
        ),
        (
            "mul.wide.s32 %rd4, %r1, %r2;",
            |a, b, _, _, _| (i64::from(a as i32) * i64::from(b as i32)) as u64,
            true,
        ),
        (
            "mad.wide.u32 %rd4, %r1, %r2, %rd1;",
            |a, b, _, x, _| (u64::from(a) * u64::from(b)).wrapping_add(x),
            true,
        ),
        (
            "mad.hi.s32 %r4, %r1, %r2, %r3;",
            |a, b, c, _, _| {
                (((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32).wrapping_add(c) as u64
            },
            false,
        ),
        (
            "mad.lo.u64 %rd4, %rd1, %rd2, %rd1;",
            |_, _, _, x, y| x.wrapping_mul(y).wrapping_add(x),
            true,
        ),
        (
            "mad.hi.u64 %rd4, %rd1, %rd2, %rd1;",
            |_, _, _, x, y| (((u128::from(x) * u128::from(y)) >> 64) as u64).wrapping_add(x),
            true,
        ),
        (
            "cvt.u16.u32 %h4, %r1; cvt.u16.u32 %h5, %r2; mul.hi.s16 %h6, %h4, %h5; cvt.s32.s16 %r4, %h6;",
            |a, b, _, _, _| {
                (((i32::from(a as i16) * i32::from(b as i16)) >> 16) as i16) as i32 as u32 as u64
            },
            false,
        ),
        (
            "cvt.u16.u32 %h4, %r1; cvt.u16.u32 %h5, %r2; mul.wide.u16 %r4, %h4, %h5;",
            |a, b, _, _, _| u64::from(u32::from(a as u16) * u32::from(b as u16)),
            false,
        ),
        (
            "mul24.lo.s32 %r4, %r1, %r2;",
            |a, b, _, _, _| {
                let s = |x: u32| ((x << 8) as i32) >> 8;
                (s(a).wrapping_mul(s(b))) as u32 as u64
            },
            false,
        ),
        (
            "mul24.hi.u32 %r4, %r1, %r2;",
            |a, b, _, _, _| {
                ((u64::from(a & 0xff_ffff) * u64::from(b & 0xff_ffff)) >> 16) & 0xffff_ffff
            },
            false,
        ),
        (
            "mul24.hi.s32 %r4, %r1, %r2;",
            |a, b, _, _, _| {
                let s = |x: u32| i64::from(((x << 8) as i32) >> 8);
                (((s(a) * s(b)) >> 16) as u32) as u64
            },
            false,
        ),
        (
            "sad.s32 %r4, %r1, %r2, %r3;",
            |a, b, c, _, _| c.wrapping_add((a as i32).abs_diff(b as i32)) as u64,
            false,
        ),
        (
            "sad.u32 %r4, %r1, %r2, %r3;",
            |a, b, c, _, _| c.wrapping_add(a.abs_diff(b)) as u64,
            false,
        ),
        (
            "sad.u64 %rd4, %rd1, %rd2, %rd1;",
            |_, _, _, x, y| x.wrapping_add(x.abs_diff(y)),
            true,
        ),
        (
            "min.s32 %r4, %r1, %r2;",
            |a, b, _, _, _| (a as i32).min(b as i32) as u32 as u64,
            false,
        ),
        (
            "max.u32 %r4, %r1, 1000;",
            |a, _, _, _, _| a.max(1000) as u64,
            false,
        ),
        (
            "min.s64 %rd4, %rd1, %rd2;",
            |_, _, _, x, y| (x as i64).min(y as i64) as u64,
            true,
        ),
        ("max.u64 %rd4, %rd1, %rd2;", |_, _, _, x, y| x.max(y), true),
        (
            "max.relu.s32 %r4, %r1, %r2;",
            |a, b, _, _, _| (a as i32).max(b as i32).max(0) as u32 as u64,
            false,
        ),
        (
            "cvt.u16.u32 %h4, %r1; cvt.u16.u32 %h5, %r2; max.s16 %h6, %h4, %h5; cvt.s32.s16 %r4, %h6;",
            |a, b, _, _, _| (a as i16).max(b as i16) as i32 as u32 as u64,
            false,
        ),
        (
            "abs.s64 %rd4, %rd1;",
            |_, _, _, x, _| (x as i64).wrapping_abs() as u64,
            true,
        ),
        (
            "neg.s64 %rd4, %rd1;",
            |_, _, _, x, _| (x as i64).wrapping_neg() as u64,
            true,
        ),
        (
            "cvt.u16.u32 %h4, %r1; abs.s16 %h5, %h4; cvt.u32.u16 %r4, %h5;",
            |a, _, _, _, _| u64::from((a as i16).wrapping_abs() as u16),
            false,
        ),
        (
            "popc.b64 %r4, %rd1;",
            |_, _, _, x, _| u64::from(x.count_ones()),
            false,
        ),
        (
            "clz.b32 %r4, %r1;",
            |a, _, _, _, _| u64::from(a.leading_zeros()),
            false,
        ),
        (
            "clz.b64 %r4, %rd1;",
            |_, _, _, x, _| u64::from(x.leading_zeros()),
            false,
        ),
        (
            "bfind.u64 %r4, %rd1;",
            |_, _, _, x, _| {
                if x == 0 {
                    0xffff_ffff
                } else {
                    u64::from(63 - x.leading_zeros())
                }
            },
            false,
        ),
        (
            "bfind.s64 %r4, %rd1;",
            |_, _, _, x, _| {
                let y = if (x as i64) < 0 { !x } else { x };
                if y == 0 {
                    0xffff_ffff
                } else {
                    u64::from(63 - y.leading_zeros())
                }
            },
            false,
        ),
        (
            "bfind.shiftamt.u64 %r4, %rd1;",
            |_, _, _, x, _| {
                if x == 0 {
                    0xffff_ffff
                } else {
                    u64::from(x.leading_zeros())
                }
            },
            false,
        ),
        (
            "bfind.s32 %r4, %r1;",
            |a, _, _, _, _| {
                let y = if (a as i32) < 0 { !a } else { a };
                if y == 0 {
                    0xffff_ffff
                } else {
                    u64::from(31 - y.leading_zeros())
                }
            },
            false,
        ),
        (
            "brev.b64 %rd4, %rd1;",
            |_, _, _, x, _| x.reverse_bits(),
            true,
        ),
        (
            "bfe.u32 %r4, %r1, %r2, %r3;",
            |a, b, c, _, _| u64::from(bfe(u64::from(a), b & 0xff, c & 0xff, 32, false) as u32),
            false,
        ),
        (
            "bfe.s32 %r4, %r1, %r2, %r3;",
            |a, b, c, _, _| u64::from(bfe(u64::from(a), b & 0xff, c & 0xff, 32, true) as u32),
            false,
        ),
        (
            "bfe.s32 %r4, %r1, 27, 9;",
            |a, _, _, _, _| u64::from(bfe(u64::from(a), 27, 9, 32, true) as u32),
            false,
        ),
        (
            "bfe.u64 %rd4, %rd1, %r2, %r3;",
            |_, b, c, x, _| bfe(x, b & 0xff, c & 0xff, 64, false),
            true,
        ),
        (
            "bfe.s64 %rd4, %rd1, %r2, %r3;",
            |_, b, c, x, _| bfe(x, b & 0xff, c & 0xff, 64, true),
            true,
        ),
        (
            "bfi.b32 %r4, %r1, %r2, %r3, %r3;",
            |a, b, c, _, _| bfi(u64::from(a), u64::from(b), c & 0xff, c & 0xff, 32) & 0xffff_ffff,
            false,
        ),
        (
            "bfi.b32 %r4, %r1, %r2, 28, 8;",
            |a, b, _, _, _| bfi(u64::from(a), u64::from(b), 28, 8, 32) & 0xffff_ffff,
            false,
        ),
        (
            "bfi.b64 %rd4, %rd1, %rd2, %r3, %r2;",
            |_, b, c, x, y| bfi(x, y, c & 0xff, b & 0xff, 64),
            true,
        ),
        (
            "shl.b64 %rd4, %rd1, %r2;",
            |_, b, _, x, _| if b >= 64 { 0 } else { x << b },
            true,
        ),
        (
            "shr.s64 %rd4, %rd1, %r2;",
            |_, b, _, x, _| ((x as i64) >> b.min(63)) as u64,
            true,
        ),
        (
            "shr.u64 %rd4, %rd1, %r2;",
            |_, b, _, x, _| if b >= 64 { 0 } else { x >> b },
            true,
        ),
        (
            "shr.s64 %rd4, %rd1, 40;",
            |_, _, _, x, _| ((x as i64) >> 40) as u64,
            true,
        ),
        ("shl.b64 %rd4, %rd1, 33;", |_, _, _, x, _| x << 33, true),
        (
            "shr.s32 %r4, %r1, %r2;",
            |a, b, _, _, _| ((a as i32) >> b.min(31)) as u32 as u64,
            false,
        ),
        (
            "shl.b32 %r4, %r1, %r2;",
            |a, b, _, _, _| if b >= 32 { 0 } else { u64::from(a << b) },
            false,
        ),
        (
            "cvt.u16.u32 %h4, %r1; shr.s16 %h5, %h4, %r2; cvt.s32.s16 %r4, %h5;",
            |a, b, _, _, _| (((a as i16) >> b.min(15)) as i32) as u32 as u64,
            false,
        ),
        (
            "shf.l.wrap.b32 %r4, %r1, %r2, %r3;",
            |a, b, c, _, _| {
                ((((u64::from(b) << 32) | u64::from(a)) << (c & 31)) >> 32) & 0xffff_ffff
            },
            false,
        ),
        (
            "shf.r.clamp.b32 %r4, %r1, %r2, %r3;",
            |a, b, c, _, _| (((u64::from(b) << 32) | u64::from(a)) >> c.min(32)) & 0xffff_ffff,
            false,
        ),
        (
            "prmt.b32 %r4, %r1, %r2, %r3;",
            |a, b, c, _, _| u64::from(prmt(a, b, c)),
            false,
        ),
        (
            "vshr.u32.u32.u32.clamp.add %r4, %r1, %r2, %r3;",
            |a, b, c, _, _| u64::from((if b >= 32 { 0 } else { a >> b }).wrapping_add(c)),
            false,
        ),
        (
            "vshl.u32.u32.u32.wrap %r4, %r1, %r2;",
            |a, b, _, _, _| u64::from(a << (b & 31)),
            false,
        ),
        (
            "cnot.b32 %r4, %r1;",
            |a, _, _, _, _| u64::from(a == 0),
            false,
        ),
        ("not.b64 %rd4, %rd1;", |_, _, _, x, _| !x, true),
        (
            "lop3.b32 %r4, %r1, %r2, %r3, 0xe8;",
            |a, b, c, _, _| u64::from((a & b) | (a & c) | (b & c)),
            false,
        ),
        (
            "szext.clamp.s32 %r4, %r1, %r2;",
            |a, b, _, _, _| {
                let n = b.min(32);
                if n == 0 {
                    0
                } else if n == 32 {
                    u64::from(a)
                } else {
                    u64::from((((a << (32 - n)) as i32) >> (32 - n)) as u32)
                }
            },
            false,
        ),
        ("cvt.u64.u32 %rd4, %r1;", |a, _, _, _, _| u64::from(a), true),
        (
            "cvt.s64.s16 %rd4, %r1;",
            |a, _, _, _, _| i64::from(a as i16) as u64,
            true,
        ),
        (
            "cvt.u8.u32 %r4, %r1;",
            |a, _, _, _, _| u64::from(a as u8),
            false,
        ),
        (
            "cvt.s8.s32 %r4, %r1;",
            |a, _, _, _, _| u64::from(a as i8 as i32 as u32),
            false,
        ),
        (
            "cvt.sat.u8.s32 %r4, %r1;",
            |a, _, _, _, _| u64::from((a as i32).clamp(0, 255) as u32),
            false,
        ),
        (
            "cvt.sat.s16.u32 %r4, %r1;",
            |a, _, _, _, _| u64::from(a.min(0x7fff)),
            false,
        ),
        (
            "cvt.sat.s32.s64 %r4, %rd1;",
            |_, _, _, x, _| {
                u64::from((x as i64).clamp(i32::MIN.into(), i32::MAX.into()) as i32 as u32)
            },
            false,
        ),
        (
            "cvt.sat.u32.s64 %r4, %rd1;",
            |_, _, _, x, _| u64::from((x as i64).clamp(0, u32::MAX.into()) as u32),
            false,
        ),
        (
            "cvt.sat.u64.s64 %rd4, %rd1;",
            |_, _, _, x, _| (x as i64).max(0) as u64,
            true,
        ),
        (
            "cvt.sat.s64.u64 %rd4, %rd1;",
            |_, _, _, x, _| x.min(i64::MAX as u64),
            true,
        ),
        (
            "cvt.sat.u64.s32 %rd4, %r1;",
            |a, _, _, _, _| (a as i32).max(0) as u64,
            true,
        ),
        (
            "setp.lt.s64 %p2, %rd1, %rd2; selp.u32 %r4, 1, 0, %p2;",
            |_, _, _, x, y| u64::from((x as i64) < (y as i64)),
            false,
        ),
        (
            "setp.le.u64 %p2, %rd1, %rd2; selp.u32 %r4, 1, 0, %p2;",
            |_, _, _, x, y| u64::from(x <= y),
            false,
        ),
        (
            "setp.ge.s64 %p2, %rd1, %rd2; selp.u32 %r4, 1, 0, %p2;",
            |_, _, _, x, y| u64::from((x as i64) >= (y as i64)),
            false,
        ),
        (
            "setp.gt.u64 %p2, %rd1, %rd2; selp.u32 %r4, 1, 0, %p2;",
            |_, _, _, x, y| u64::from(x > y),
            false,
        ),
        (
            "setp.eq.s64 %p2, %rd1, %rd1; selp.u32 %r4, 1, 0, %p2;",
            |_, _, _, _, _| 1,
            false,
        ),
        (
            "setp.ne.s64 %p2, %rd1, %rd2; selp.u32 %r4, 1, 0, %p2;",
            |_, _, _, x, y| u64::from(x != y),
            false,
        ),
        (
            "setp.hi.u32 %p2|%p3, %r1, %r2; selp.u32 %r5, 1, 0, %p2; selp.u32 %r6, 2, 0, %p3; add.u32 %r4, %r5, %r6;",
            |a, b, _, _, _| if a > b { 1 } else { 2 },
            false,
        ),
        (
            "setp.lt.or.s32 %p2, %r1, %r2, %p1; selp.u32 %r4, 1, 0, %p2;",
            |a, b, c, _, _| u64::from((a as i32) < (b as i32) || c != 0),
            false,
        ),
        (
            "setp.ge.xor.s64 %p2|%p3, %rd1, %rd2, %p1; selp.u32 %r5, 1, 0, %p2; selp.u32 %r6, 2, 0, %p3; add.u32 %r4, %r5, %r6;",
            |_, _, c, x, y| {
                let t = (x as i64) >= (y as i64);
                let p = c != 0;
                u64::from(t ^ p) + 2 * u64::from(!t ^ p)
            },
            false,
        ),
        (
            "cvt.u16.u32 %h4, %r1; cvt.u16.u32 %h5, %r2; setp.lt.s16 %p2, %h4, %h5; selp.u32 %r4, 1, 0, %p2;",
            |a, b, _, _, _| u64::from((a as i16) < (b as i16)),
            false,
        ),
        (
            "set.gt.u32.u32 %r4, %r1, %r2;",
            |a, b, _, _, _| if a > b { 0xffff_ffff } else { 0 },
            false,
        ),
        (
            "@%p1 add.s32 %r1, %r1, 5; mov.b32 %r4, %r1;",
            |a, _, c, _, _| u64::from(if c != 0 { a.wrapping_add(5) } else { a }),
            false,
        ),
        (
            "@!%p1 mul.lo.u64 %rd1, %rd1, %rd2; mov.b64 %rd4, %rd1;",
            |_, _, c, x, y| if c == 0 { x.wrapping_mul(y) } else { x },
            true,
        ),
        (
            "@%p1 div.u32 %r1, %r1, %r2; mov.b32 %r4, %r1;",
            |a, b, c, _, _| {
                u64::from(if c != 0 {
                    a.checked_div(b).unwrap_or(u32::MAX)
                } else {
                    a
                })
            },
            false,
        ),
    ];
    let vals = values64(24);
    let mut ptx = String::new();
    for (k, (body, _, wide)) in cases.iter().enumerate() {
        let st = if *wide {
            "st.global.u64 [%out], %rd4;"
        } else {
            "st.global.u32 [%out], %r4;"
        };
        ptx.push_str(&kernel_fn(&format!("c{k}"), &format!("{body} {st}")));
    }
    let mut failures = Vec::new();
    let mut checked = 0;
    for (k, (body, reference, wide)) in cases.iter().enumerate() {
        let text = format!(
            "{HEADER}{}",
            kernel_fn(
                &format!("c{k}"),
                &format!(
                    "{body} {}",
                    if *wide {
                        "st.global.u64 [%out], %rd4;"
                    } else {
                        "st.global.u32 [%out], %r4;"
                    }
                )
            )
        );
        let f = match compile_text(body, &text) {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{body}: {e}"));
                continue;
            }
        };
        'inputs: for (i, &x) in vals.iter().enumerate() {
            for (j, &y) in vals.iter().enumerate() {
                let a = x as u32 ^ (y >> 33) as u32;
                let b = (y as u32) % if j % 3 == 0 { 70 } else { u32::MAX };
                let c = ((x >> 32) as u32).wrapping_add(y as u32)
                    % if i % 2 == 0 { 70 } else { u32::MAX };
                let mut input = vec![0u8; 88];
                input[0..4].copy_from_slice(&a.to_le_bytes());
                input[4..8].copy_from_slice(&b.to_le_bytes());
                input[8..12].copy_from_slice(&c.to_le_bytes());
                input[16..24].copy_from_slice(&x.to_le_bytes());
                input[24..32].copy_from_slice(&y.to_le_bytes());
                let out = match simulate(&f[0], &input, 8, 0) {
                    Ok(o) => o,
                    Err(e) => {
                        failures.push(format!("{body}: {e}"));
                        break 'inputs;
                    }
                };
                let got = if *wide {
                    u64::from_le_bytes(out[..8].try_into().unwrap())
                } else {
                    u64::from(u32::from_le_bytes(out[..4].try_into().unwrap()))
                };
                let want = reference(a, b, c, x, y);
                if got != want {
                    failures.push(format!("{body}: a={a:#x} b={b:#x} c={c:#x} x={x:#x} y={y:#x}: got {got:#x}, want {want:#x}"));
                    break 'inputs;
                }
                checked += 1;
            }
        }
    }
    let _ = ptx;
    println!(
        "isel-arith: {} integer recipes checked in the simulator on {checked} inputs",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// PTX's bfe on an n-bit value.
fn bfe(a: u64, pos: u32, len: u32, n: u32, signed: bool) -> u64 {
    let msb = n - 1;
    let sbit = if !signed || len == 0 {
        0
    } else {
        (a >> (pos + len - 1).min(msb)) & 1
    };
    let mut d = 0u64;
    for i in 0..n {
        let bit = if i < len && pos + i <= msb {
            (a >> (pos + i)) & 1
        } else {
            sbit
        };
        d |= bit << i;
    }
    d
}

/// PTX's bfi on n-bit values.
fn bfi(a: u64, b: u64, pos: u32, len: u32, n: u32) -> u64 {
    let mut f = b;
    for i in 0..len {
        if pos + i < n {
            f = (f & !(1u64 << (pos + i))) | (((a >> i) & 1) << (pos + i));
        }
    }
    f
}

/// PTX's prmt (default mode).
fn prmt(a: u32, b: u32, c: u32) -> u32 {
    let bytes = (u64::from(b) << 32) | u64::from(a);
    let mut d = 0u32;
    for k in 0..4 {
        let s = (c >> (4 * k)) & 0xf;
        let mut byte = ((bytes >> (8 * (s & 7))) & 0xff) as u32;
        if s & 8 != 0 {
            byte = if byte & 0x80 != 0 { 0xff } else { 0 };
        }
        d |= byte << (8 * k);
    }
    d
}

/// f32 test values: edge cases (zeros, subnormals, extremes, infinities, NaN), then a spread.
fn values_f32(n: usize) -> Vec<f32> {
    let mut v: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        3.0,
        0.1,
        1e-40,
        -1e-42,
        f32::MIN_POSITIVE,
        1.1754942e-38,
        f32::MAX,
        -f32::MAX,
        1e38,
        3e-39,
        1e-30,
        1e30,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        2.0f32.powi(-126) * 1.5,
        7.0e-45,
    ];
    let mut x: u32 = 0x1234_5678;
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let f = f32::from_bits(x);
        if !f.is_nan() {
            v.push(f);
        }
    }
    v
}

/// div.rn.f32 and sqrt.rn.f32 (with and without .ftz) are correctly rounded in the simulator,
/// through the fast path where the modelled FCHK allows and through the slow path always.
#[test]
fn ieee_div_sqrt_are_correctly_rounded_in_the_simulator() {
    let flush = |x: f32| {
        if x.is_subnormal() {
            if x < 0.0 { -0.0 } else { 0.0 }
        } else {
            x
        }
    };
    let same = |g: f32, w: f32| (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, body, ftz) in [
        (
            "div",
            "div.rn.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
            false,
        ),
        (
            "div_ftz",
            "div.rn.ftz.f32 %f4, %f1, %f2; st.global.f32 [%out], %f4;",
            true,
        ),
        (
            "sqrt",
            "sqrt.rn.f32 %f4, %f1; st.global.f32 [%out], %f4;",
            false,
        ),
        (
            "sqrt_ftz",
            "sqrt.rn.ftz.f32 %f4, %f1; st.global.f32 [%out], %f4;",
            true,
        ),
    ] {
        let f = compile_text(name, &kernel(name, body)).unwrap();
        let vals = values_f32(80);
        let divide = name.starts_with("div");
        for (i, &a) in vals.iter().enumerate() {
            let bs: Vec<f32> = if divide {
                vals.iter().copied().skip(i % 5).step_by(2).collect()
            } else {
                vec![1.0]
            };
            for &b in &bs {
                let (fa, fb) = if ftz { (flush(a), flush(b)) } else { (a, b) };
                let mut want = if divide {
                    ((f64::from(fa)) / f64::from(fb)) as f32
                } else {
                    f64::from(fa).sqrt() as f32
                };
                if ftz {
                    want = flush(want);
                }
                let mut input = vec![0u8; 88];
                input[40..44].copy_from_slice(&a.to_le_bytes());
                input[44..48].copy_from_slice(&b.to_le_bytes());
                for fchk in [None, Some(true)] {
                    for ulp in [0, 1, -1] {
                        let mut m = sim::Machine::new();
                        m.rcp_ulp = ulp;
                        m.fchk = fchk;
                        let got = match simulate_with(&f[0], &input, 4, m) {
                            Ok(o) => f32::from_le_bytes(o[..4].try_into().unwrap()),
                            Err(e) => {
                                failures.push(format!("{name}: {e}"));
                                continue;
                            }
                        };
                        checked += 1;
                        if !same(got, want) && failures.len() < 20 {
                            failures.push(format!("{name}({a:e} [{:#x}], {b:e} [{:#x}]) fchk={fchk:?} ulp={ulp}: got {got:e} [{:#x}], want {want:e} [{:#x}]", a.to_bits(), b.to_bits(), got.to_bits(), want.to_bits()));
                        }
                    }
                }
            }
        }
    }
    println!("isel-arith: IEEE division and square root checked on {checked} inputs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// [`simulate`] with a prepared machine.
fn simulate_with(
    f: &ptxc::emit::sass::EncodedFunction,
    input: &[u8],
    n: usize,
    mut m: sim::Machine,
) -> Result<Vec<u8>, String> {
    let (pin, pout) = (0x1000_0000u64, 0x2000_0000u64);
    for (off, v) in [(0x210, pin), (0x218, pout), (0x208, 0), (0x28, 0x00ff_0000)] {
        m.cbank.insert(off, v as u32);
        m.cbank.insert(off + 4, (v >> 32) as u32);
    }
    for (i, b) in input.iter().enumerate() {
        m.mem.insert(pin + i as u64, *b);
    }
    m.run(&f.instrs)?;
    Ok((0..n).map(|i| m.load(pout + i as u64, 1) as u8).collect())
}

/// rcp.rn.f64 is correctly rounded in the simulator (fast and slow paths).
#[test]
fn rcp_rn_f64_is_correctly_rounded_in_the_simulator() {
    let f = compile_text(
        "drcp",
        &kernel("drcp", "rcp.rn.f64 %fd4, %fd1; st.global.f64 [%out], %fd4;"),
    )
    .unwrap();
    let mut vals: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0,
        -3.0,
        0.1,
        f64::MIN_POSITIVE,
        5e-324,
        -1e-310,
        2.2e-308,
        f64::MAX,
        -f64::MAX,
        1e308,
        4e307,
        1e-300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        3.0e-320,
        1.5,
    ];
    let mut x: u64 = 0x0123_4567_89ab_cdef;
    while vals.len() < 3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        vals.push(f64::from_bits(x));
    }
    let mut failures = Vec::new();
    for &a in &vals {
        let want = 1.0 / a;
        let mut input = vec![0u8; 88];
        input[56..64].copy_from_slice(&a.to_le_bytes());
        for ulp in [0, 1, -1] {
            let mut m = sim::Machine::new();
            m.rcp_ulp = ulp;
            let out = simulate_with(&f[0], &input, 8, m).unwrap();
            let got = f64::from_le_bytes(out[..8].try_into().unwrap());
            if !((got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits())
                && failures.len() < 10
            {
                failures.push(format!(
                    "rcp({a:e} [{:#x}]) ulp={ulp}: got {got:e}, want {want:e}",
                    a.to_bits()
                ));
            }
        }
    }
    println!(
        "isel-arith: rcp.rn.f64 checked on {} inputs",
        vals.len() * 3
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// rsqrt.approx.f64 in the simulator: within 2^-50 relative of 1/√a, and the special values.
#[test]
fn rsqrt_approx_f64_in_the_simulator() {
    let f = compile_text(
        "drsq",
        &kernel(
            "drsq",
            "rsqrt.approx.f64 %fd4, %fd1; st.global.f64 [%out], %fd4;",
        ),
    )
    .unwrap();
    let mut vals: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0,
        4.0,
        -3.0,
        0.1,
        f64::MIN_POSITIVE,
        5e-324,
        1e-310,
        f64::MAX,
        1e-300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let mut x: u64 = 0x0fed_cba9_8765_4321;
    while vals.len() < 2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        vals.push(f64::from_bits(x & !(1 << 63)));
    }
    for &a in &vals {
        let mut input = vec![0u8; 88];
        input[56..64].copy_from_slice(&a.to_le_bytes());
        let out = simulate_with(&f[0], &input, 8, sim::Machine::new()).unwrap();
        let got = f64::from_le_bytes(out[..8].try_into().unwrap());
        let want = 1.0 / a.sqrt();
        let ok = if want.is_nan() {
            got.is_nan()
        } else if want.is_infinite() || want == 0.0 {
            got.to_bits() == want.to_bits()
        } else {
            ((got - want) / want).abs() < 2f64.powi(-50)
        };
        assert!(ok, "rsqrt({a:e}): got {got:e}, want {want:e}");
    }
}

/// Float immediates that must go to registers (`cvt.rn.f16x2.f32 d, 1.0, 2.0`) are moved as their
/// bits: this was an internal error (`MOV R0, 1`: a float operand in MOV's immediate slot).
#[test]
fn float_immediates_move_as_bits() {
    let text = kernel(
        "f16x2_imm",
        "cvt.rn.f16x2.f32 %r1, 0f3F800000, 0f40000000;\nst.global.u32 [%rd1], %r1;",
    );
    let fns = compile_text("f16x2_imm", &text).unwrap_or_else(|e| panic!("{e}"));
    let lines = our_lines(&fns[0]);
    assert!(
        lines.iter().any(|l| l.ends_with(", 0x3f800000")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.ends_with(", 0x40000000")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("F2FP.F16.F32.PACK_AB")),
        "{lines:#?}"
    );
}

/// ptxc's cubin of `text` and its encoded functions, with the MIR verifier after every pass.
fn ptxc_cubin_verified(
    name: &str,
    text: &str,
) -> (
    ptxc::emit::model::Cubin,
    Vec<ptxc::emit::sass::EncodedFunction>,
) {
    let src = SourceFile::new(name.to_string(), text.to_string());
    let (encoded, built, _) = ptxc_tests::compile_pipeline(&src).unwrap();
    (built.cubin, encoded)
}
