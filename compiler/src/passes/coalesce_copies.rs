//! `coalesce-copies`: values joined by a copy share one virtual register when their live
//! ranges do not meet (Chaitin's aggressive coalescing, word by word).
//!
//! Leaving SSA form puts a `COPY` on every edge into a `PHI`, and a warpgroup matrix multiply
//! takes its accumulator through a copy (`out-of-ssa`). The allocator's intervals have no holes,
//! so a value carried round a loop — read early in the body, written again at its end — covers
//! the whole loop, and the copies around it cannot share its register: pyptx `matmul_tma_v35`
//! kept each of its two 32-word accumulators three times over (the loop-carried scalars, the
//! tuple copied into the `QGMMA`, the tuple it wrote) and used 226 registers where ptxas uses
//! 112. This pass merges such values before allocation, from the real liveness (which has the
//! holes), so the copies become `MOV R, R` and vanish.
//!
//! **Rule.** An unguarded `COPY`/`MOV`/`UMOV` `d ← s` between general or uniform registers of
//! one file joins the virtual register of `d` and that of `s`: the smaller is renamed into the
//! larger at the offset that makes the two operands the same words (a scalar becomes word `i`
//! of the tuple it is copied into; two tuples of one width copied word for word in place become
//! one), provided the offset keeps the smaller one naturally aligned and the two *interfere* on
//! no word. Two words interfere when one is written where the other is live afterwards, except
//! by a copy of the other (Chaitin's rule, correct out of SSA form). A guarded write, and the
//! accumulator write of a `QGMMA`/`HGMMA`, also read the words they write: where the guard is
//! false the old value stays, and the tensor core reads the accumulator in place.
//!
//! Values whose allocator intervals do not overlap are left apart: the allocator's copy
//! preference already gives them one register, and joined their interval would also cover what
//! lies between them. Precoloured values (`Function::fixed`) are left alone. Each round computes the liveness per
//! word, finds the copies whose values do not interfere, and merges those that touch disjoint
//! words (a value is renamed at most once per round and a renamed value receives nothing), so
//! every merge of a round was checked against the state it applies to; rounds repeat until none
//! merges.

use super::Pass;
use crate::mir::cfg::Cfg;
use crate::mir::{Function, Inst, OpKind, Reg, RegClass, VReg};
use rustc_hash::FxHashMap;

pub struct CoalesceCopies;

/// At most this many rounds (a chain of copies needs one round per link; the pyptx kernels
/// need four).
const MAX_ROUNDS: usize = 16;

/// The largest liveness this pass computes, in 64-bit words of one bit set per block (2 MB).
/// The real kernels need at most 33 864 (pyptx `fa_ws_pingpong`; the `matmul_tma` kernels
/// 891–1 302); the generated 10k loop kernel needs 1 029 924, and under the former limit of
/// 1 << 20 this pass ran 286M of its 532M instructions (callgrind, 2026-12-02), while the 16k
/// loop kernel (2 631 877) was already left alone.
const MAX_LIVENESS_WORDS: usize = 1 << 18;

impl Pass for CoalesceCopies {
    fn name(&self) -> &'static str {
        "coalesce-copies"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        if f.ssa {
            return Ok(());
        }
        for _ in 0..MAX_ROUNDS {
            if !round(f) {
                break;
            }
        }
        remove_self_copies(f);
        Ok(())
    }
}

/// A candidate merge: `src` renamed into `dst` with its word `j` becoming `dst`'s word
/// `offset + j`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Merge {
    src: VReg,
    dst: VReg,
    offset: u8,
}

/// The (destination, source) operands of a plain register copy: an unguarded `COPY`, `MOV` or
/// `UMOV` of one virtual register into another of the same file and width, without modifiers.
fn copy_operands(inst: &Inst) -> Option<(Reg, Reg)> {
    if inst.guard.is_some()
        || !matches!(inst.mnemonic, "COPY" | "MOV" | "UMOV")
        || !inst.mods.is_empty()
    {
        return None;
    }
    let [d, s] = &inst.ops[..] else { return None };
    let plain = |o: &crate::mir::Operand| !o.neg && !o.abs && !o.not && o.suffix.is_empty();
    if !plain(d) || !plain(s) {
        return None;
    }
    match (&d.kind, &s.kind) {
        (OpKind::Reg(d), OpKind::Reg(s))
            if d.def && !s.def && d.reg.count() == s.reg.count() && d.reg.vreg().is_some() =>
        {
            s.reg.vreg()?;
            Some((d.reg, s.reg))
        }
        _ => None,
    }
}

/// Whether `inst` reads the words it writes: a guarded write keeps the old value where the
/// guard is false; a tensor-core multiply updates its accumulator in place.
fn writes_in_place(inst: &Inst) -> bool {
    inst.guard.is_some() || matches!(inst.mnemonic, "QGMMA" | "HGMMA")
}

/// The merge a copy between `d` and `s` asks for, if the two may share registers at all.
fn merge_of(f: &Function, d: Reg, s: Reg) -> Option<Merge> {
    let (
        Reg::Virt {
            vreg: dv,
            first: df,
            ..
        },
        Reg::Virt {
            vreg: sv,
            first: sf,
            ..
        },
    ) = (d, s)
    else {
        return None;
    };
    if dv == sv {
        return None;
    }
    let (di, si) = (f.vreg(dv), f.vreg(sv));
    if di.class != si.class || !matches!(di.class, RegClass::Gpr | RegClass::Ugpr) {
        return None;
    }
    if f.fixed.iter().any(|(v, _)| *v == dv || *v == sv) {
        return None;
    }
    // The smaller value goes into the larger (the destination when they are equal).
    let (src, sfirst, dst, dfirst) = if si.words <= di.words {
        (sv, sf, dv, df)
    } else {
        (dv, df, sv, sf)
    };
    let (sw, dw) = (f.vreg(src).words, f.vreg(dst).words);
    let offset = dfirst.checked_sub(sfirst)?;
    let align = sw.next_power_of_two();
    if offset + sw > dw || !offset.is_multiple_of(align) {
        return None;
    }
    Some(Merge { src, dst, offset })
}

/// One round: liveness, candidates, interference, merges. Whether anything merged.
fn round(f: &mut Function) -> bool {
    // Candidates, each with the copies that ask for it.
    let mut merges: Vec<Merge> = Vec::new();
    let mut index: FxHashMap<Merge, usize> = FxHashMap::default();
    for b in &f.blocks {
        for inst in &b.insts {
            if let Some((d, s)) = copy_operands(inst)
                && let Some(m) = merge_of(f, d, s)
            {
                index.entry(m).or_insert_with(|| {
                    merges.push(m);
                    merges.len() - 1
                });
            }
        }
    }
    if merges.is_empty() {
        return false;
    }
    // Word numbering: word `w` of vreg `v` is bit `base[v] + w`.
    let mut base = Vec::with_capacity(f.vregs.len() + 1);
    let mut total = 0usize;
    for v in &f.vregs {
        base.push(total);
        total += v.words as usize;
    }
    // The liveness is a bit set per block: skip functions where it would be large (the
    // generated kernels of thousands of loops), which have few values live at once anyway.
    if f.blocks.len().saturating_mul(total.div_ceil(64)) > MAX_LIVENESS_WORDS {
        return false;
    }
    let (interferes, spans) = interference(f, &merges, &base, total);
    // Pick: a value renamed at most once per round, a renamed value receives nothing, and the
    // words one value receives from different values do not overlap.
    let mut renamed: FxHashMap<VReg, (VReg, u8)> = FxHashMap::default();
    let mut receives: FxHashMap<VReg, Vec<(u8, u8)>> = FxHashMap::default();
    for (m, bad) in merges.iter().zip(&interferes) {
        // Values whose intervals do not overlap (one ends at the copy where the other begins)
        // already share a register through the allocator's copy preference; joined, their
        // interval would also cover what lies between them (ZLUDA `ldmatrix`: 16 registers
        // instead of 15).
        let (s, d) = (spans[m.src.0 as usize], spans[m.dst.0 as usize]);
        if *bad
            || s.0 > d.1
            || d.0 > s.1
            || renamed.contains_key(&m.src)
            || renamed.contains_key(&m.dst)
            || receives.contains_key(&m.src)
        {
            continue;
        }
        let sw = f.vreg(m.src).words;
        let taken = receives.entry(m.dst).or_default();
        if taken
            .iter()
            .any(|&(o, w)| m.offset < o + w && o < m.offset + sw)
        {
            continue;
        }
        taken.push((m.offset, sw));
        renamed.insert(m.src, (m.dst, m.offset));
    }
    if renamed.is_empty() {
        return false;
    }
    let rename = |r: &mut Reg| {
        if let Reg::Virt { vreg, first, .. } = r
            && let Some(&(to, offset)) = renamed.get(vreg)
        {
            *vreg = to;
            *first += offset;
        }
    };
    for b in &mut f.blocks {
        for inst in &mut b.insts {
            inst.for_each_reg_mut(rename);
        }
    }
    true
}

/// For each candidate merge, whether its two values interfere on some word; for each vreg its
/// interval as the allocator numbers it outside `setmaxnreg` kernels (layout order, reads at
/// `2k`, writes at `2k + 1`, live-in from the block's first point, live-out to its last;
/// `(MAX, 0)` when it appears nowhere).
fn interference(
    f: &Function,
    merges: &[Merge],
    base: &[usize],
    total: usize,
) -> (Vec<bool>, Vec<(u32, u32)>) {
    let words = |r: Reg| -> Option<std::ops::Range<usize>> {
        match r {
            Reg::Virt { vreg, first, count } => {
                let b = base[vreg.0 as usize] + first as usize;
                Some(b..b + count as usize)
            }
            Reg::Phys { .. } => None,
        }
    };
    let cfg = Cfg::new(f);
    let nb = f.blocks.len();
    let wlen = total.div_ceil(64);
    // Per block: words read before written (gen) and words written unconditionally (kill).
    let mut gen_ = vec![vec![0u64; wlen]; nb];
    let mut kill = vec![vec![0u64; wlen]; nb];
    for (bi, b) in f.blocks.iter().enumerate() {
        let (g, k) = (&mut gen_[bi], &mut kill[bi]);
        for inst in b.insts.iter().rev() {
            let in_place = writes_in_place(inst);
            // A register's words as one range of bits (a wgmma accumulator is 64 words), and
            // the instruction's registers by `for_each_reg`: each a bit at a time through the
            // chained `regs` iterator, this pass was a quarter of compiling pyptx
            // `matmul_tma_v34` (callgrind: 15.7M instructions of 58.4M).
            if !in_place {
                inst.for_each_reg(|r| {
                    if let (true, Some(ws)) = (r.def, words(r.reg)) {
                        set_words(k, ws.clone());
                        clear_words(g, ws);
                    }
                });
            }
            inst.for_each_reg(|r| {
                if (!r.def || in_place)
                    && let Some(ws) = words(r.reg)
                {
                    set_words(g, ws);
                }
            });
        }
    }
    // live_in = gen ∪ (live_out − kill), to the least fixpoint.
    let mut live_in = vec![vec![0u64; wlen]; nb];
    let mut live_out = vec![vec![0u64; wlen]; nb];
    let mut changed = true;
    // Scratch sets, reused for every block of every iteration.
    let (mut out, mut inn) = (vec![0u64; wlen], vec![0u64; wlen]);
    while changed {
        changed = false;
        for &b in cfg.rpo.iter().rev() {
            let i = b.0 as usize;
            out.fill(0);
            for s in cfg.succs(b) {
                for (o, x) in out.iter_mut().zip(&live_in[s.0 as usize]) {
                    *o |= x;
                }
            }
            for (k, x) in inn.iter_mut().enumerate() {
                *x = gen_[i][k] | (out[k] & !kill[i][k]);
            }
            live_out[i].copy_from_slice(&out);
            if inn != live_in[i] {
                live_in[i].copy_from_slice(&inn);
                changed = true;
            }
        }
    }
    // The candidates each vreg takes part in.
    let mut of: FxHashMap<VReg, Vec<usize>> = FxHashMap::default();
    for (k, m) in merges.iter().enumerate() {
        of.entry(m.src).or_default().push(k);
        of.entry(m.dst).or_default().push(k);
    }
    let mut bad = vec![false; merges.len()];
    let is_live = |live: &[u64], w: usize| (live[w / 64] >> (w % 64)) & 1 == 1;
    let mut owner = vec![0u32; total];
    for (v, &w0) in base.iter().enumerate() {
        owner[w0..w0 + f.vregs[v].words as usize].fill(v as u32);
    }
    let mut spans = vec![(u32::MAX, 0u32); f.vregs.len()];
    let mut widen = |v: usize, p: u32| {
        let s = &mut spans[v];
        *s = (s.0.min(p), s.1.max(p));
    };
    let mut start = 0u32;
    let mut first_point = Vec::with_capacity(nb);
    for b in &f.blocks {
        first_point.push(start);
        start += 2 * b.insts.len() as u32;
    }
    for (bi, b) in f.blocks.iter().enumerate() {
        let (lo, hi) = (
            first_point[bi],
            (first_point[bi] + 2 * b.insts.len() as u32).saturating_sub(1),
        );
        for (set, p) in [(&live_in[bi], lo), (&live_out[bi], hi)] {
            for (k, &bits) in set.iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let w = k * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    widen(owner[w] as usize, p);
                }
            }
        }
        for (k, inst) in b.insts.iter().enumerate() {
            let p = lo + 2 * k as u32;
            inst.for_each_reg(|r| {
                if let Some(v) = r.reg.vreg() {
                    widen(v.0 as usize, if r.def { p + 1 } else { p });
                }
            });
        }
    }
    // The destinations of one instruction, in `Inst::defs` order (a list reused for all).
    let mut defs: Vec<Reg> = Vec::new();
    for (bi, b) in f.blocks.iter().enumerate() {
        let mut live = live_out[bi].clone();
        for inst in b.insts.iter().rev() {
            let copy = copy_operands(inst);
            let in_place = writes_in_place(inst);
            defs.clear();
            inst.for_each_reg(|r| {
                if r.def {
                    defs.push(r.reg);
                }
            });
            for d in &defs {
                let Reg::Virt { vreg, first, count } = *d else {
                    continue;
                };
                let Some(ks) = of.get(&vreg) else { continue };
                for &k in ks {
                    let m = merges[k];
                    if bad[k] {
                        continue;
                    }
                    let sw = f.vreg(m.src).words;
                    for w in first..first + count {
                        // The partner of word `w` of `vreg` under this merge.
                        let (pv, pw) = if vreg == m.src {
                            (m.dst, m.offset + w)
                        } else if (m.offset..m.offset + sw).contains(&w) {
                            (m.src, w - m.offset)
                        } else {
                            continue;
                        };
                        let pbit = base[pv.0 as usize] + pw as usize;
                        // A copy of the partner into this word does not interfere.
                        let copied = copy.is_some_and(|(cd, cs)| match (cd, cs) {
                            (
                                Reg::Virt {
                                    vreg: dv,
                                    first: df,
                                    ..
                                },
                                Reg::Virt {
                                    vreg: sv,
                                    first: sf,
                                    ..
                                },
                            ) => dv == vreg && sv == pv && w >= df && pw >= sf && w - df == pw - sf,
                            _ => false,
                        });
                        let written_too = defs
                            .iter()
                            .any(|e| words(*e).is_some_and(|r| r.contains(&pbit)) && e != d);
                        if (is_live(&live, pbit) && !copied) || written_too {
                            bad[k] = true;
                            break;
                        }
                    }
                }
            }
            if !in_place {
                for ws in defs.iter().filter_map(|d| words(*d)) {
                    clear_words(&mut live, ws);
                }
            }
            inst.for_each_reg(|r| {
                if (!r.def || in_place)
                    && let Some(ws) = words(r.reg)
                {
                    set_words(&mut live, ws);
                }
            });
        }
    }
    (bad, spans)
}

/// Removes the unguarded copies of a register into itself that merging left.
fn remove_self_copies(f: &mut Function) {
    for b in &mut f.blocks {
        b.insts
            .retain(|inst| !copy_operands(inst).is_some_and(|(d, s)| d == s));
    }
}

/// The bits of `ws` that fall in the 64-bit word `k` of a bit set, as a mask.
fn chunk_mask(ws: &std::ops::Range<usize>, k: usize) -> u64 {
    let lo = ws.start.max(k * 64) - k * 64;
    let hi = ws.end.min(k * 64 + 64) - k * 64;
    if hi - lo == 64 {
        u64::MAX
    } else {
        ((1u64 << (hi - lo)) - 1) << lo
    }
}

/// Marks words `ws` in a bit set of 32-bit register words, 64 at a time.
fn set_words(bits: &mut [u64], ws: std::ops::Range<usize>) {
    if ws.is_empty() {
        return;
    }
    let first = ws.start / 64;
    for (k, b) in (first..).zip(&mut bits[first..=(ws.end - 1) / 64]) {
        *b |= chunk_mask(&ws, k);
    }
}

/// Clears words `ws` in a bit set of 32-bit register words, 64 at a time.
fn clear_words(bits: &mut [u64], ws: std::ops::Range<usize>) {
    if ws.is_empty() {
        return;
    }
    let first = ws.start / 64;
    for (k, b) in (first..).zip(&mut bits[first..=(ws.end - 1) / 64]) {
        *b &= !chunk_mask(&ws, k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `set_words`/`clear_words` change exactly the bits of the range, 64 at a time, as
    /// the bit-by-bit loops they replaced did: ranges inside one 64-bit word, ending on a word
    /// boundary, spanning several words (a 64-word accumulator at an odd offset), and empty.
    #[test]
    fn sisel2_word_ranges_match_bit_by_bit() {
        let empty = std::ops::Range { start: 70, end: 70 };
        let ranges = [
            0..1,
            3..9,
            60..64,
            63..65,
            64..128,
            5..133,
            empty,
            0..192,
            127..128,
        ];
        for r in ranges {
            let mut set = vec![0u64; 3];
            let mut cleared = vec![u64::MAX; 3];
            set_words(&mut set, r.clone());
            clear_words(&mut cleared, r.clone());
            for w in 0..192 {
                let inside = r.contains(&w);
                assert_eq!(
                    (set[w / 64] >> (w % 64)) & 1 == 1,
                    inside,
                    "set {r:?} bit {w}"
                );
                assert_eq!(
                    (cleared[w / 64] >> (w % 64)) & 1 == 0,
                    inside,
                    "clear {r:?} bit {w}"
                );
            }
        }
    }
}
