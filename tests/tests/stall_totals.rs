//! Static stall cycles: the sum of the stall counts of every instruction of a kernel (padding
//! left out), ptxc's code against ptxas's, over the corpora (ZLUDA + pyptx) — for the files
//! both compile. The figure measures the whole back end (instruction selection, allocation,
//! the absence of a scheduler, the scoreboard pass); the stall totals of ptxas's own
//! instruction stream recomputed by ptxc's pass (`ptxc asm --recompute-ctrl`) isolate the pass.
//!
//! Printed, with the kernels where ptxc stalls most beyond ptxas; asserted against ceilings
//! (the figures reached, plus a margin) so that a change that makes ptxc's code stall more
//! fails.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::emit::scoreboard;
use ptxc::frontend::check::Arch;
use ptxc::target::sm90a::{Instr, decode_at, listed_instr, parse_listing};
use ptxc_tests::sass::listings;
use ptxc_tests::{accepted_corpus, ptxas};
use std::collections::BTreeMap;
use std::path::Path;

fn compile(path: &Path) -> Option<Vec<ptxc::emit::sass::EncodedFunction>> {
    compile_with(path, false)
}

/// With `schedule`, the list scheduler (`--schedule`) runs too.
fn compile_with(path: &Path, schedule: bool) -> Option<Vec<ptxc::emit::sass::EncodedFunction>> {
    let text = std::fs::read_to_string(path).ok()?;
    let src = SourceFile::new(path.display().to_string(), text);
    let checked = driver::frontend(&src, Arch::SM90A).ok()?;
    let opts = ptxc::passes::Options {
        schedule,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).ok()?;
    driver::encode(&lowered).ok()
}

/// Instructions before the padding (`BRA` to itself, then `NOP`s).
fn code_len(code: &[Instr]) -> usize {
    let mut end = code.len();
    while end > 0 && code[end - 1].mnemonic == "NOP" {
        end -= 1;
    }
    if end > 0 {
        let b = &code[end - 1];
        let to_self = b.operands.iter().any(
            |o| matches!(o.kind, ptxc::target::sm90a::OperandKind::Int(v) if v as u64 == b.addr),
        );
        if b.mnemonic == "BRA" && to_self && b.guard.is_always() {
            return end - 1;
        }
    }
    code.len()
}

fn is_debug_ptx(p: &Path) -> bool {
    std::fs::read_to_string(p).is_ok_and(|s| {
        s.lines()
            .any(|l| l.trim_start().starts_with(".target") && l.contains("debug"))
    })
}

fn stalls(code: &[Instr]) -> u64 {
    code[..code_len(code)]
        .iter()
        .map(|i| u64::from(i.ctrl.stall))
        .sum()
}

fn decode_words(code: &[u8]) -> Vec<Instr> {
    code.chunks_exact(16)
        .enumerate()
        .map(|(k, c)| {
            let lo = u64::from_le_bytes(c[..8].try_into().unwrap());
            let hi = u64::from_le_bytes(c[8..].try_into().unwrap());
            decode_at([lo, hi], k as u64 * 16).expect("ptxas's words decode")
        })
        .collect()
}

/// Per kernel: ptxas's stall cycles, ptxc's, ptxas's instructions, ptxc's.
type Totals = (u64, u64, usize, usize);

#[test]
fn static_stall_cycles_against_ptxas() {
    let files = accepted_corpus();
    // Per kernel: (ptxas stalls, ptxc stalls, ptxas instructions, ptxc instructions).
    let mut per: BTreeMap<String, Totals> = BTreeMap::new();
    for path in &files {
        let Some(r) = ptxas(path, &[]) else { return };
        let Some(cubin) = r.cubin else { continue };
        let Some(ours) = compile(path) else { continue };
        let theirs = ptxc::emit::read(&cubin).expect("ptxas's cubin reads");
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for f in &ours {
            let Some(t) = theirs.functions.iter().find(|x| x.name == f.name) else {
                continue;
            };
            let t = decode_words(&t.code);
            per.insert(
                format!("{file} {}", f.name),
                (
                    stalls(&t),
                    stalls(&f.instrs),
                    code_len(&t),
                    code_len(&f.instrs),
                ),
            );
        }
    }
    let sum = |k: usize| -> u64 {
        per.values()
            .map(|v| match k {
                0 => v.0,
                1 => v.1,
                2 => v.2 as u64,
                _ => v.3 as u64,
            })
            .sum()
    };
    let (ta, tc, na, nc) = (sum(0), sum(1), sum(2), sum(3));
    println!(
        "static stalls over {} kernels both compile: ptxas {ta} cycles ({na} instructions), \
         ptxc {tc} cycles ({nc} instructions): ptxc/ptxas = {:.2}",
        per.len(),
        tc as f64 / ta.max(1) as f64
    );
    // The same kernels with the list scheduler (`--schedule`).
    let (mut sched, mut sched_n, mut sched_kernels) = (0u64, 0usize, 0usize);
    for path in &files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(ours) = compile_with(path, true) else {
            continue;
        };
        for f in &ours {
            if per.contains_key(&format!("{file} {}", f.name)) {
                sched += stalls(&f.instrs);
                sched_n += code_len(&f.instrs);
                sched_kernels += 1;
            }
        }
    }
    println!(
        "static stalls with --schedule over {sched_kernels} of those kernels: ptxc {sched} \
         cycles ({sched_n} instructions): ptxc/ptxas = {:.2}",
        sched as f64 / ta.max(1) as f64
    );
    let mut worst: Vec<(&String, &Totals)> = per.iter().collect();
    worst.sort_by_key(|(k, v)| (std::cmp::Reverse(v.1 as i64 - v.0 as i64), (*k).clone()));
    println!("kernels where ptxc stalls most beyond ptxas (ptxas / ptxc cycles):");
    for (k, v) in worst.iter().take(10) {
        println!("  {k}: {} / {}", v.0, v.1);
    }

    // ptxas's instruction stream, control words recomputed by ptxc's pass.
    let Some(ls) = listings(&files) else { return };
    let (mut listed, mut recomputed) = (0u64, 0u64);
    for (path, text) in &ls {
        if is_debug_ptx(path) {
            continue; // ptxas's serial scheme: every instruction stalls 15
        }
        let mut by_fn: BTreeMap<String, Vec<Instr>> = BTreeMap::new();
        for l in parse_listing(text) {
            by_fn
                .entry(l.function.clone())
                .or_default()
                .push(listed_instr(&l).expect("listed instructions parse"));
        }
        for code in by_fn.values() {
            let Ok(a) = scoreboard::assign(code) else {
                continue;
            };
            let n = code_len(code);
            listed += code[..n]
                .iter()
                .map(|i| u64::from(i.ctrl.stall))
                .sum::<u64>();
            recomputed += a.ctrl[..n].iter().map(|c| u64::from(c.stall)).sum::<u64>();
        }
    }
    println!(
        "ptxas's instruction stream: ptxas's stalls {listed} cycles, recomputed by ptxc's pass \
         {recomputed} cycles ({:.3})",
        recomputed as f64 / listed.max(1) as f64
    );

    assert!(per.len() >= 100, "too few kernels compared: {}", per.len());
    // Ceilings: the figures reached, plus a margin. Lower them as the back end improves.
    let ratio = tc as f64 / ta as f64;
    // Measured 1.18 over 233 kernels (2026-12-01). The pyptx matmul_tma_v35 kernel, which
    // compiles since fp8 wgmma is lowered (`lower/isel/wgmma.rs`), stalls 3 880 cycles against
    // ptxas's 1 816: ptxc serializes its QGMMAs (each waited for at once) where ptxas pipelines
    // them. Without it: 1.05 over 232, as before. (The 1.00 reached earlier
    // came partly from the two `.target …, debug` ZLUDA modules, which ptxc compiled as
    // optimized code against ptxas's serial debug code; both now compile debug code.)
    // Measured 1.51 over 235 kernels since pyptx matmul_tma_v33 and _v34 compile (their 64-bit
    // values spilled a word at a time were refused by the allocation checker): they stall
    // 5 049 and 6 131 cycles against ptxas's 2 012 and 2 074, serialized QGMMAs as in _v35 plus
    // spill code (`LDL` latency; ptxas does not spill them). Every other kernel stalls as
    // before: without the two, 1.18 over 233.
    // Measured 3.07 over 237 kernels since pyptx fa_ws_pingpong compiles (register limits per
    // `setmaxnreg` region): it stalls 51 950 cycles against ptxas's 7 001, serialized HGMMAs
    // plus 17 KB of spill code where ptxas spills nothing. The guard on the other kernels is
    // the ratio without it (1.51 over 236, the figure before).
    let (pa, pc) = per
        .iter()
        .filter(|(k, _)| k.contains("fa_ws_pingpong"))
        .fold((0u64, 0u64), |(a, c), (_, v)| (a + v.0, c + v.1));
    let ratio_others = (tc - pc) as f64 / (ta - pa).max(1) as f64;
    println!(
        "static stalls without pyptx fa_ws_pingpong: ptxc/ptxas = {ratio_others:.2} (it alone: \
         ptxas {pa}, ptxc {pc} cycles)"
    );
    assert!(ratio <= 3.10, "ptxc's code stalls {ratio:.2}x ptxas's");
    assert!(
        ratio_others <= 1.52,
        "without fa_ws_pingpong, ptxc's code stalls {ratio_others:.2}x ptxas's"
    );
    // The scheduler exists to hide latency: with it, fewer stall cycles than without.
    if sched_kernels == per.len() {
        assert!(
            sched < tc,
            "--schedule stalls {sched} cycles, without it {tc}"
        );
    }
    let pass_ratio = recomputed as f64 / listed as f64;
    assert!(
        (0.95..=1.05).contains(&pass_ratio),
        "the pass's stalls on ptxas's stream: {pass_ratio:.3}x ptxas's"
    );
}
