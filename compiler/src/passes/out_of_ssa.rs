//! `out-of-ssa`: leaves SSA form before register allocation.
//!
//! 1. Critical edges (from a block with several successors to a block with several
//!    predecessors) that enter a block with `PHI`s are split with a new block, so that the
//!    copies placed for an edge run only on that edge (the "lost copy" problem).
//! 2. Every `PHI` becomes copies at the end of each predecessor. The copies of one edge have
//!    parallel semantics, so they go through fresh temporaries first (the "swap" problem);
//!    the allocator's move coalescing usually makes the extra moves disappear.
//! 3. A guarded instruction's `{prior v}` operand becomes `COPY d <- v` before it: the
//!    destination starts with the old value and the instruction overwrites it where the guard
//!    holds.

use super::Pass;
use crate::mir::cfg::Cfg;
use crate::mir::{BlockId, Function, Inst, OpKind, Operand, Reg};

pub struct OutOfSsa;

impl Pass for OutOfSsa {
    fn name(&self) -> &'static str {
        "out-of-ssa"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        split_critical_edges(f);
        eliminate_phis(f);
        expand_priors(f);
        f.ssa = false;
        Ok(())
    }
}

fn has_phis(f: &Function, b: BlockId) -> bool {
    f.block(b).insts.first().is_some_and(Inst::is_phi)
}

fn split_critical_edges(f: &mut Function) {
    let cfg = Cfg::new(f);
    let mut edges = Vec::new();
    for b in f.block_ids() {
        if cfg.succs(b).len() < 2 {
            continue;
        }
        for &s in cfg.succs(b) {
            if cfg.preds(s).len() > 1 && has_phis(f, s) {
                edges.push((b, s));
            }
        }
    }
    for (from, to) in edges {
        let mid = f.new_block(None);
        f.block_mut(mid)
            .insts
            .push(Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(to))]));
        let block = f.block_mut(from);
        if block.fallthrough == Some(to) {
            block.fallthrough = Some(mid);
        } else {
            for inst in &mut block.insts {
                for o in &mut inst.ops {
                    if o.kind == OpKind::Block(to) {
                        o.kind = OpKind::Block(mid);
                    }
                }
            }
        }
        for inst in f.block_mut(to).insts.iter_mut().take_while(|i| i.is_phi()) {
            for o in &mut inst.ops {
                if let OpKind::PhiArg(p, _) = &mut o.kind
                    && *p == from
                {
                    *p = mid;
                }
            }
        }
    }
}

fn eliminate_phis(f: &mut Function) {
    // (predecessor, destination, source) for every PHI argument.
    let mut copies: Vec<(BlockId, Reg, Reg)> = Vec::new();
    for block in &mut f.blocks {
        let nphi = block.insts.iter().take_while(|i| i.is_phi()).count();
        for phi in block.insts.drain(..nphi) {
            let dst = phi.defs().next().expect("a PHI defines its value");
            for o in &phi.ops {
                if let OpKind::PhiArg(p, src) = o.kind {
                    copies.push((p, dst, src));
                }
            }
        }
    }
    let mut by_pred: Vec<Vec<(Reg, Reg)>> = vec![Vec::new(); f.blocks.len()];
    for (p, d, s) in copies {
        by_pred[p.0 as usize].push((d, s));
    }
    for (i, group) in by_pred.into_iter().enumerate() {
        if group.is_empty() {
            continue;
        }
        let mut seq = Vec::new();
        if group.len() == 1 {
            let (d, s) = group[0];
            seq.push(copy(d, s));
        } else {
            // Parallel copy: all sources into temporaries, then the temporaries into place.
            let mut temps = Vec::new();
            for (d, s) in &group {
                let vreg = d.vreg().expect("a virtual PHI result");
                let info = f.vreg(vreg).clone();
                let t = f.new_vreg(info.class, info.words, None);
                let t = Reg::whole(t, info.words);
                seq.push(copy(t, *s));
                temps.push((*d, t));
            }
            for (d, t) in temps {
                seq.push(copy(d, t));
            }
        }
        let insts = &mut f.blocks[i].insts;
        let at = insts
            .iter()
            .position(Inst::is_terminator)
            .unwrap_or(insts.len());
        insts.splice(at..at, seq);
    }
}

fn copy(d: Reg, s: Reg) -> Inst {
    Inst::new("COPY", &[], vec![Operand::def(d), Operand::use_(s)])
}

fn expand_priors(f: &mut Function) {
    for block in &mut f.blocks {
        let mut out = Vec::with_capacity(block.insts.len());
        for mut inst in std::mem::take(&mut block.insts) {
            let priors: Vec<Reg> = inst
                .ops
                .iter()
                .filter_map(|o| match o.kind {
                    OpKind::Prior(r) => Some(r),
                    _ => None,
                })
                .collect();
            if !priors.is_empty() {
                inst.ops.retain(|o| !matches!(o.kind, OpKind::Prior(_)));
                // The prior values are the old values of the instruction's virtual
                // destinations, in order (physical ones, `PT`/`RZ`, are discarded results).
                let dests: Vec<Reg> = inst.defs().filter(|d| d.vreg().is_some()).collect();
                for (prior, dest) in priors.iter().zip(dests) {
                    let whole = match dest {
                        Reg::Virt { vreg, .. } => Reg::whole(vreg, prior.count()),
                        other => other,
                    };
                    // Several instructions may write one multi-word destination (one word
                    // each): copy the prior value only before the first of them.
                    let already = out
                        .iter()
                        .any(|i: &Inst| i.mnemonic == "COPY" && i.defs().next() == Some(whole));
                    if !already {
                        out.push(copy(whole, *prior));
                    }
                }
            }
            out.push(inst);
        }
        block.insts = out;
    }
}
