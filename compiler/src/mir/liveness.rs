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

/// `a ∪ b` of two sorted, duplicate-free lists.
fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
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
    out
}

/// `a \ b` of two sorted, duplicate-free lists.
fn difference(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for &x in a {
        while j < b.len() && b[j] < x {
            j += 1;
        }
        if j == b.len() || b[j] != x {
            out.push(x);
        }
    }
    out
}

impl Liveness {
    pub fn compute(f: &Function, cfg: &Cfg) -> Liveness {
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
        let mut live_in: Vec<Vec<u32>> = vec![Vec::new(); nb];
        let mut live_out: Vec<Vec<u32>> = vec![Vec::new(); nb];
        let order: Vec<BlockId> = cfg.rpo.iter().rev().copied().collect();
        // Backward dataflow to the least fixpoint. A block is recomputed only when the live-in
        // set of a successor changed since (all blocks at first); the sets are sorted, so
        // unions and differences are linear merges.
        let mut dirty = vec![true; nb];
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &order {
                let i = b.0 as usize;
                if !std::mem::take(&mut dirty[i]) {
                    continue;
                }
                let mut out = phi_uses[i].clone();
                for s in cfg.succs(b) {
                    // A successor's PHI definitions are not live into it from here.
                    let s = s.0 as usize;
                    out = union(&out, &difference(&live_in[s], &phi_defs[s]));
                }
                // PHI results are defined at the top of the block: live-in as values of the block.
                let written = |v: u32| {
                    def_block[v as usize] == b.0
                        || in_more[v as usize] && more_defs.contains(&(b.0, v))
                };
                let not_written: Vec<u32> = out.iter().copied().filter(|&v| !written(v)).collect();
                let inn = union(&union(&not_written, &uses[i]), &phi_defs[i]);
                if inn != live_in[i] {
                    for p in cfg.preds(b) {
                        dirty[p.0 as usize] = true;
                    }
                    live_in[i] = inn;
                    changed = true;
                }
                live_out[i] = out;
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
