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

impl Liveness {
    pub fn compute(f: &Function, cfg: &Cfg) -> Liveness {
        let nb = f.blocks.len();
        // uses[b]: read before written in b; defs[b]: written in b.
        let mut uses: Vec<Vec<u32>> = vec![Vec::new(); nb];
        let mut defs: Vec<Vec<u32>> = vec![Vec::new(); nb];
        // phi_uses[p]: read by PHIs of p's successors along the edge from p.
        let mut phi_uses: Vec<Vec<u32>> = vec![Vec::new(); nb];
        // phi_defs[b]: defined by b's PHIs.
        let mut phi_defs: Vec<Vec<u32>> = vec![Vec::new(); nb];
        let mut defined = rustc_hash::FxHashSet::default();
        for b in f.block_ids() {
            let i = b.0 as usize;
            defined.clear();
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
                    for r in inst.uses() {
                        if let Some(v) = r.vreg()
                            && !defined.contains(&v.0)
                        {
                            uses[i].push(v.0);
                        }
                    }
                }
                for r in inst.defs() {
                    if let Some(v) = r.vreg() {
                        defined.insert(v.0);
                        defs[i].push(v.0);
                    }
                }
            }
        }
        let uses: Vec<Vec<u32>> = uses.into_iter().map(normalize).collect();
        let defs: Vec<Vec<u32>> = defs.into_iter().map(normalize).collect();
        let phi_uses: Vec<Vec<u32>> = phi_uses.into_iter().map(normalize).collect();
        let phi_defs: Vec<Vec<u32>> = phi_defs.into_iter().map(normalize).collect();
        let mut live_in: Vec<Vec<u32>> = vec![Vec::new(); nb];
        let mut live_out: Vec<Vec<u32>> = vec![Vec::new(); nb];
        let order: Vec<BlockId> = cfg.rpo.iter().rev().copied().collect();
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &order {
                let i = b.0 as usize;
                let mut out = phi_uses[i].clone();
                for s in cfg.succs(b) {
                    // A successor's PHI definitions are not live into it from here.
                    let s = s.0 as usize;
                    out.extend(
                        live_in[s]
                            .iter()
                            .filter(|v| phi_defs[s].binary_search(v).is_err()),
                    );
                }
                let out = normalize(out);
                let mut inn: Vec<u32> = out
                    .iter()
                    .copied()
                    .filter(|v| defs[i].binary_search(v).is_err())
                    .collect();
                inn.extend_from_slice(&uses[i]);
                // PHI results are defined at the top of the block: live-in as values of the block.
                inn.extend_from_slice(&phi_defs[i]);
                let inn = normalize(inn);
                if inn != live_in[i] || out != live_out[i] {
                    live_in[i] = inn;
                    live_out[i] = out;
                    changed = true;
                }
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
