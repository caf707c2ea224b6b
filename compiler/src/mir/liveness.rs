//! Liveness of virtual registers: the classic backward dataflow over the CFG, iterated in
//! post-order to a fixed point. A multi-word register is live while any of its words is.
//!
//! `PHI` arguments are read at the end of their predecessor (not at the `PHI`), so an SSA
//! function gets the textbook live-in sets.

use super::cfg::Cfg;
use super::{BlockId, Function, OpKind, VReg};
use fixedbitset::FixedBitSet;

/// Live-in and live-out sets of every block, as bit sets over vreg numbers.
pub struct Liveness {
    pub live_in: Vec<FixedBitSet>,
    pub live_out: Vec<FixedBitSet>,
}

impl Liveness {
    pub fn compute(f: &Function, cfg: &Cfg) -> Liveness {
        let n = f.vregs.len();
        let nb = f.blocks.len();
        // uses[b]: read before written in b; defs[b]: written in b.
        let mut uses = vec![FixedBitSet::with_capacity(n); nb];
        let mut defs = vec![FixedBitSet::with_capacity(n); nb];
        // phi_uses[p]: read by PHIs of p's successors along the edge from p.
        let mut phi_uses = vec![FixedBitSet::with_capacity(n); nb];
        for b in f.block_ids() {
            let (u, d) = (&mut uses[b.0 as usize], &mut defs[b.0 as usize]);
            for inst in &f.block(b).insts {
                if inst.is_phi() {
                    for o in &inst.ops {
                        if let OpKind::PhiArg(p, r) = o.kind
                            && let (Some(v), Some(slot)) =
                                (r.vreg(), phi_uses.get_mut(p.0 as usize))
                        {
                            slot.insert(v.0 as usize);
                        }
                    }
                } else {
                    for r in inst.uses() {
                        if let Some(v) = r.vreg()
                            && !d.contains(v.0 as usize)
                        {
                            u.insert(v.0 as usize);
                        }
                    }
                }
                for r in inst.defs() {
                    if let Some(v) = r.vreg() {
                        d.insert(v.0 as usize);
                    }
                }
            }
        }
        let mut live_in = vec![FixedBitSet::with_capacity(n); nb];
        let mut live_out = vec![FixedBitSet::with_capacity(n); nb];
        let order: Vec<BlockId> = cfg.rpo.iter().rev().copied().collect();
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &order {
                let i = b.0 as usize;
                let mut out = phi_uses[i].clone();
                for s in cfg.succs(b) {
                    // A successor's PHI definitions are not live into it from here.
                    let mut s_in = live_in[s.0 as usize].clone();
                    for inst in f.block(*s).insts.iter().take_while(|i| i.is_phi()) {
                        for d in inst.defs() {
                            if let Some(v) = d.vreg() {
                                s_in.set(v.0 as usize, false);
                            }
                        }
                    }
                    out.union_with(&s_in);
                }
                let mut inn = out.clone();
                inn.difference_with(&defs[i]);
                inn.union_with(&uses[i]);
                // PHI results are defined at the top of the block: live-in as values of the block.
                for inst in f.block(b).insts.iter().take_while(|i| i.is_phi()) {
                    for d in inst.defs() {
                        if let Some(v) = d.vreg() {
                            inn.insert(v.0 as usize);
                        }
                    }
                }
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
        self.live_in[b.0 as usize].contains(v.0 as usize)
    }

    pub fn is_live_out(&self, b: BlockId, v: VReg) -> bool {
        self.live_out[b.0 as usize].contains(v.0 as usize)
    }
}
