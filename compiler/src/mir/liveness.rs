//! Liveness of virtual registers: the classic backward dataflow over the CFG, iterated in
//! post-order to a fixed point. A multi-word register is live while any of its words is.
//!
//! `PHI` arguments are read at the end of their predecessor (not at the `PHI`), so an SSA
//! function gets the textbook live-in sets.

use super::cfg::Cfg;
use super::{BlockId, Function, OpKind, VReg};
/// Live-in and live-out sets of every block, as sorted lists of vreg numbers.
///
/// The sets are sparse: a function of 100k values in 10k blocks has only a few dozen values
/// live across any edge, and dense bit sets would cost blocks × values bits each.
pub struct Liveness {
    pub live_in: Vec<Vec<u32>>,
    pub live_out: Vec<Vec<u32>>,
}

/// Sorts and removes duplicates.
fn normalize(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v.dedup();
    v
}

/// `out = a ∪ b` of two sorted, duplicate-free lists (`out` is cleared first; its buffer is
/// reused, so the dataflow below allocates nothing per visit).
fn union_into(a: &[u32], b: &[u32], out: &mut Vec<u32>) {
    out.clear();
    if a.is_empty() || b.is_empty() {
        out.extend_from_slice(if a.is_empty() { b } else { a });
        return;
    }
    out.reserve(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

/// `out = a \ b` of two sorted, duplicate-free lists (`out` is cleared first).
fn difference_into(a: &[u32], b: &[u32], out: &mut Vec<u32>) {
    out.clear();
    let mut j = 0;
    for &x in a {
        while j < b.len() && b[j] < x {
            j += 1;
        }
        if j == b.len() || b[j] != x {
            out.push(x);
        }
    }
}

/// The most values that may be live across block boundaries for [`Liveness::compute`] to use
/// bit sets (64 words a set; above it a visit of a block costs more than merging sorted lists
/// of the few dozen values usually live).
const DENSE_MAX_VALUES: usize = 4096;

/// The most bytes the bit sets of [`dense`] may take together (six sets per block).
const DENSE_MAX_BYTES: usize = 64 << 20;

/// What each block reads and writes, found by one walk over its instructions.
struct Local {
    /// Read before written in the block (sorted).
    uses: Vec<Vec<u32>>,
    /// Read by `PHI`s of the block's successors along the edge from it (sorted).
    phi_uses: Vec<Vec<u32>>,
    /// Defined by the block's `PHI`s (sorted).
    phi_defs: Vec<Vec<u32>>,
    /// The first block writing each register (`u32::MAX`: none).
    def_block: Vec<u32>,
    /// (block, register) for the other blocks writing a register.
    more_defs: rustc_hash::FxHashSet<(u32, u32)>,
}

/// The dataflow of [`Liveness::compute`] on bit sets over the values that can be live at a
/// block boundary at all (those read before written in some block, or read or defined by a
/// `PHI`), numbered in increasing register order so that the sets read back sorted. `None`
/// when there are more than `limit` such values or the sets would not fit in
/// [`DENSE_MAX_BYTES`]. The same equations, order and fixpoint as the sorted lists, so the
/// same sets; a union is a few word `OR`s instead of a merge of lists (measured in
/// `docs/passes/regalloc.md`, "Liveness").
fn dense(nb: usize, l: &Local, cfg: &Cfg, order: &[BlockId], limit: usize) -> Option<Liveness> {
    // Collect the values once each (a flag per register), giving up as soon as there are too
    // many: a large kernel falls back to the lists without paying for the whole collection.
    let mut seen = vec![false; l.def_block.len()];
    let mut values = Vec::new();
    for &v in l
        .uses
        .iter()
        .chain(&l.phi_uses)
        .chain(&l.phi_defs)
        .flatten()
    {
        if !std::mem::replace(&mut seen[v as usize], true) {
            if values.len() == limit {
                return None;
            }
            values.push(v);
        }
    }
    values.sort_unstable();
    let words = values.len().div_ceil(64).max(1);
    if values.len() > limit || nb.saturating_mul(words).saturating_mul(6 * 8) > DENSE_MAX_BYTES {
        return None;
    }
    const NONE: u32 = u32::MAX;
    let mut number = vec![NONE; l.def_block.len()];
    for (k, &v) in values.iter().enumerate() {
        number[v as usize] = k as u32;
    }
    let sets = |lists: &[Vec<u32>]| {
        let mut bits = vec![0u64; nb * words];
        for (b, list) in lists.iter().enumerate() {
            for &v in list {
                let k = number[v as usize] as usize;
                bits[b * words + k / 64] |= 1 << (k % 64);
            }
        }
        bits
    };
    let uses = sets(&l.uses);
    let phi_uses = sets(&l.phi_uses);
    let phi_defs = sets(&l.phi_defs);
    // written[b]: the values of the numbering that block `b` writes.
    let mut written = vec![0u64; nb * words];
    for (v, &b) in l.def_block.iter().enumerate() {
        if b != NONE && number[v] != NONE {
            let k = number[v] as usize;
            written[b as usize * words + k / 64] |= 1 << (k % 64);
        }
    }
    for &(b, v) in &l.more_defs {
        if number[v as usize] != NONE {
            let k = number[v as usize] as usize;
            written[b as usize * words + k / 64] |= 1 << (k % 64);
        }
    }
    let mut live_in = vec![0u64; nb * words];
    let mut live_out = vec![0u64; nb * words];
    let mut out = vec![0u64; words];
    let mut inn = vec![0u64; words];
    let mut dirty = vec![true; nb];
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order {
            let i = b.0 as usize;
            if !std::mem::take(&mut dirty[i]) {
                continue;
            }
            let at = i * words;
            out.copy_from_slice(&phi_uses[at..at + words]);
            for s in cfg.succs(b) {
                // A successor's PHI definitions are not live into it from here.
                let s = s.0 as usize * words;
                let from = live_in[s..s + words].iter().zip(&phi_defs[s..s + words]);
                for (o, (&li, &pd)) in out.iter_mut().zip(from) {
                    *o |= li & !pd;
                }
            }
            let own = written[at..at + words]
                .iter()
                .zip(&uses[at..at + words])
                .zip(&phi_defs[at..at + words]);
            for ((n, &o), ((&wr, &u), &pd)) in inn.iter_mut().zip(&out).zip(own) {
                *n = (o & !wr) | u | pd;
            }
            if inn[..] != live_in[at..at + words] {
                for p in cfg.preds(b) {
                    dirty[p.0 as usize] = true;
                }
                live_in[at..at + words].copy_from_slice(&inn);
                changed = true;
            }
            live_out[at..at + words].copy_from_slice(&out);
        }
    }
    let lists = |bits: &[u64]| -> Vec<Vec<u32>> {
        bits.chunks(words)
            .map(|set| {
                let mut list = Vec::new();
                for (w, &word) in set.iter().enumerate() {
                    let mut word = word;
                    while word != 0 {
                        list.push(values[w * 64 + word.trailing_zeros() as usize]);
                        word &= word - 1;
                    }
                }
                list
            })
            .collect()
    };
    Some(Liveness {
        live_in: lists(&live_in),
        live_out: lists(&live_out),
    })
}

impl Liveness {
    pub fn compute(f: &Function, cfg: &Cfg) -> Liveness {
        Liveness::compute_with(f, cfg, DENSE_MAX_VALUES)
    }

    /// [`Liveness::compute`], with bit sets when at most `dense_limit` values can be live
    /// across a block boundary (and the sets fit in [`DENSE_MAX_BYTES`]), else sorted lists.
    fn compute_with(f: &Function, cfg: &Cfg, dense_limit: usize) -> Liveness {
        let nb = f.blocks.len();
        // uses[b]: read before written in b.
        let mut uses: Vec<Vec<u32>> = vec![Vec::new(); nb];
        // phi_uses[p]: read by PHIs of p's successors along the edge from p.
        let mut phi_uses: Vec<Vec<u32>> = vec![Vec::new(); nb];
        // phi_defs[b]: defined by b's PHIs.
        let mut phi_defs: Vec<Vec<u32>> = vec![Vec::new(); nb];
        // `defined[v]`, `listed[v]`: the block (numbered from 1) in which `v` was last written,
        // or last added to `uses`; "written earlier in this block" and "already a use of it"
        // without a set per block, so each list gets each register once. One walk over each
        // instruction's registers for its reads and one for its writes (`Inst::for_each_reg`).
        let nv = f.vregs.len();
        let mut defined = vec![0u32; nv];
        let mut listed = vec![0u32; nv];
        // The blocks that write each register: `def_block[v]` the first (`NONE`: none), and
        // `more_defs` (block, register) for the others (a value is mostly written in one block).
        // A membership test for "written in b", where sorted lists per block had to be sorted
        // (a block of straight-line code writes thousands of values, numbered out of order).
        const NONE: u32 = u32::MAX;
        let mut def_block = vec![NONE; nv];
        let mut more_defs: rustc_hash::FxHashSet<(u32, u32)> = rustc_hash::FxHashSet::default();
        // `in_more[v]`: `v` has entries in `more_defs` (the set is asked only about those).
        let mut in_more = vec![false; nv];
        for b in f.block_ids() {
            let i = b.0 as usize;
            let stamp = b.0 + 1;
            for inst in &f.block(b).insts {
                if inst.is_phi() {
                    for o in &inst.ops {
                        if let OpKind::PhiArg(p, r) = o.kind
                            && let (Some(v), Some(slot)) =
                                (r.vreg(), phi_uses.get_mut(p.0 as usize))
                        {
                            slot.push(v.0);
                        }
                    }
                    for d in inst.defs() {
                        if let Some(v) = d.vreg() {
                            phi_defs[i].push(v.0);
                        }
                    }
                } else {
                    inst.for_each_reg(|r| {
                        if let (Some(v), false) = (r.reg.vreg(), r.def) {
                            let v = v.0 as usize;
                            if defined[v] != stamp && listed[v] != stamp {
                                listed[v] = stamp;
                                uses[i].push(v as u32);
                            }
                        }
                    });
                }
                inst.for_each_reg(|r| {
                    if let (Some(v), true) = (r.reg.vreg(), r.def) {
                        let v = v.0 as usize;
                        if defined[v] != stamp {
                            defined[v] = stamp;
                            if def_block[v] == NONE {
                                def_block[v] = b.0;
                            } else {
                                more_defs.insert((b.0, v as u32));
                                in_more[v] = true;
                            }
                        }
                    }
                });
            }
        }
        let uses: Vec<Vec<u32>> = uses.into_iter().map(normalize).collect();
        let phi_uses: Vec<Vec<u32>> = phi_uses.into_iter().map(normalize).collect();
        let phi_defs: Vec<Vec<u32>> = phi_defs.into_iter().map(normalize).collect();
        let order: Vec<BlockId> = cfg.rpo.iter().rev().copied().collect();
        let local = Local {
            uses,
            phi_uses,
            phi_defs,
            def_block,
            more_defs,
        };
        if let Some(live) = dense(nb, &local, cfg, &order, dense_limit) {
            return live;
        }
        let Local {
            uses,
            phi_uses,
            phi_defs,
            def_block,
            more_defs,
        } = local;
        let mut live_in: Vec<Vec<u32>> = vec![Vec::new(); nb];
        let mut live_out: Vec<Vec<u32>> = vec![Vec::new(); nb];
        // Backward dataflow to the least fixpoint. A block is recomputed only when the live-in
        // set of a successor changed since (all blocks at first); the sets are sorted, so
        // unions and differences are linear merges, into four scratch lists that trade places
        // with the stored sets (not a fresh list per union, difference and copy).
        let mut out: Vec<u32> = Vec::new();
        let mut merged: Vec<u32> = Vec::new();
        let mut part: Vec<u32> = Vec::new();
        let mut inn: Vec<u32> = Vec::new();
        let mut dirty = vec![true; nb];
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &order {
                let i = b.0 as usize;
                if !std::mem::take(&mut dirty[i]) {
                    continue;
                }
                out.clear();
                out.extend_from_slice(&phi_uses[i]);
                for s in cfg.succs(b) {
                    // A successor's PHI definitions are not live into it from here.
                    let s = s.0 as usize;
                    if phi_defs[s].is_empty() {
                        union_into(&out, &live_in[s], &mut merged);
                    } else {
                        difference_into(&live_in[s], &phi_defs[s], &mut part);
                        union_into(&out, &part, &mut merged);
                    }
                    std::mem::swap(&mut out, &mut merged);
                }
                // PHI results are defined at the top of the block: live-in as values of the block.
                let written = |v: u32| {
                    def_block[v as usize] == b.0
                        || in_more[v as usize] && more_defs.contains(&(b.0, v))
                };
                part.clear();
                part.extend(out.iter().copied().filter(|&v| !written(v)));
                union_into(&part, &uses[i], &mut merged);
                union_into(&merged, &phi_defs[i], &mut inn);
                if inn != live_in[i] {
                    for p in cfg.preds(b) {
                        dirty[p.0 as usize] = true;
                    }
                    std::mem::swap(&mut live_in[i], &mut inn);
                    changed = true;
                }
                std::mem::swap(&mut live_out[i], &mut out);
            }
        }
        // The sets kept the capacity of the scratch lists they traded with: give back what a
        // set much smaller than the largest one holds on to.
        for set in live_in.iter_mut().chain(live_out.iter_mut()) {
            if set.capacity() > 2 * set.len() + 64 {
                set.shrink_to_fit();
            }
        }
        Liveness { live_in, live_out }
    }

    pub fn is_live_in(&self, b: BlockId, v: VReg) -> bool {
        self.live_in[b.0 as usize].binary_search(&v.0).is_ok()
    }

    pub fn is_live_out(&self, b: BlockId, v: VReg) -> bool {
        self.live_out[b.0 as usize].binary_search(&v.0).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{Inst, Operand, Reg, RegClass};

    /// bb0: a = 1; b = 2 → bb1: c = PHI(bb0: a, bb2: d); ISETP p, c; @p BRA bb3 → bb2: d = c + b;
    /// BRA bb1 → bb3: STG c; EXIT. A loop, a PHI, a value (`b`) live through the loop.
    fn counted_loop() -> (Function, [Reg; 5]) {
        let mut f = Function::new("l", true);
        let [b1, b2, b3] = [(); 3].map(|_| f.new_block(None));
        let [a, b, c, d, p] = [0, 1, 2, 3, 4].map(|k| {
            let class = if k == 4 {
                RegClass::Pred
            } else {
                RegClass::Gpr
            };
            Reg::whole(f.new_vreg(class, 1, None), 1)
        });
        let bra = |t| Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(t))]);
        let mov = |d, k| {
            Inst::new(
                "MOV",
                &[],
                vec![Operand::def(d), Operand::new(OpKind::Int(k))],
            )
        };
        f.block_mut(BlockId(0)).insts = vec![mov(a, 1), mov(b, 2)];
        f.block_mut(BlockId(0)).fallthrough = Some(b1);
        let phi = Inst::new(
            "PHI",
            &[],
            vec![
                Operand::def(c),
                Operand::new(OpKind::PhiArg(BlockId(0), a)),
                Operand::new(OpKind::PhiArg(b2, d)),
            ],
        );
        let setp = Inst::new("ISETP", &[], vec![Operand::def(p), Operand::use_(c)]);
        f.block_mut(b1).insts = vec![phi, setp, bra(b3).guarded(p, false)];
        f.block_mut(b1).fallthrough = Some(b2);
        let add = Inst::new(
            "IADD3",
            &[],
            vec![Operand::def(d), Operand::use_(c), Operand::use_(b)],
        );
        f.block_mut(b2).insts = vec![add, bra(b1)];
        f.block_mut(b3).insts = vec![
            Inst::new("STG", &[], vec![Operand::use_(c)]),
            Inst::new("EXIT", &[], vec![]),
        ];
        (f, [a, b, c, d, p])
    }

    #[test]
    fn bit_sets_and_sorted_lists_agree() {
        let (f, [a, b, c, d, _]) = counted_loop();
        let cfg = Cfg::new(&f);
        let v = |r: Reg| r.vreg().expect("virtual").0;
        let dense = Liveness::compute_with(&f, &cfg, usize::MAX);
        let sparse = Liveness::compute_with(&f, &cfg, 0);
        assert_eq!(dense.live_in, sparse.live_in);
        assert_eq!(dense.live_out, sparse.live_out);
        // `a` flows into the PHI from bb0 only; `b` lives through the loop; `d` back to bb1.
        assert_eq!(dense.live_out[0], vec![v(a), v(b)]);
        assert_eq!(dense.live_in[1], {
            let mut s = vec![v(b), v(c)];
            s.sort();
            s
        });
        assert_eq!(dense.live_out[2], {
            let mut s = vec![v(b), v(d)];
            s.sort();
            s
        });
        assert_eq!(dense.live_in[3], vec![v(c)]);
    }
}
