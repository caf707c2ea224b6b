//! `out-of-ssa`: leaves SSA form before register allocation.
//!
//! 1. Critical edges (from a block with several successors to a block with several
//!    predecessors) that enter a block with `PHI`s are split with a new block, so that the
//!    copies placed for an edge run only on that edge (the "lost copy" problem).
//! 2. Every `PHI` becomes copies at the end of each predecessor. The copies of one edge have
//!    parallel semantics: they are ordered so that no copy overwrites a value another still
//!    reads, and a cycle goes through one temporary (the "swap" problem).
//! 3. A guarded instruction's `{prior v}` operand becomes `COPY d <- v` before it: the
//!    destination starts with the old value and the instruction overwrites it where the guard
//!    holds. (A warpgroup matrix multiply's accumulator input is a `{prior}` too; its copy goes
//!    before the `WARPGROUP.ARRIVE` in front of it.)

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
    // Only edges into a block with `PHI`s are split: without any, no CFG to build.
    if !f.block_ids().any(|b| has_phis(f, b)) {
        return;
    }
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
    let mut placed: Vec<(BlockId, BlockId)> = Vec::new();
    for (from, to) in edges {
        let mid = f.new_block(None);
        placed.push((from, mid));
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
    // Lay each new block out right after the block it leaves, so that live ranges stay short.
    // (Indexed by block: a search of `placed` per block was quadratic, 10× the time from 16k
    // to 64k instructions of counted loops.)
    if !placed.is_empty() {
        let n = f.blocks.len();
        let mut order = Vec::with_capacity(n);
        let mut is_new = vec![false; n];
        let mut after: Vec<Vec<BlockId>> = vec![Vec::new(); n];
        for &(from, mid) in &placed {
            is_new[mid.0 as usize] = true;
            after[from.0 as usize].push(mid);
        }
        for b in f.block_ids() {
            if is_new[b.0 as usize] {
                continue;
            }
            order.push(b);
            order.extend(after[b.0 as usize].iter().copied());
        }
        crate::mir::cfg::reorder(f, &order);
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
        let seq = sequentialize(f, group);
        let insts = &mut f.blocks[i].insts;
        let at = insts
            .iter()
            .position(Inst::is_terminator)
            .unwrap_or(insts.len());
        insts.splice(at..at, seq);
    }
}

/// Orders a parallel copy `(dst, src)…` into sequential copies: a copy goes first when its
/// destination is no other pending copy's source; a cycle (`a <- b, b <- a`) is broken by
/// moving one source into a temporary.
fn sequentialize(f: &mut Function, mut pending: Vec<(Reg, Reg)>) -> Vec<Inst> {
    pending.retain(|(d, s)| d != s);
    let mut out = Vec::new();
    while !pending.is_empty() {
        let ready = pending.iter().position(|(d, _)| {
            !pending
                .iter()
                .any(|(_, s)| s.vreg().is_some() && s.vreg() == d.vreg())
        });
        match ready {
            Some(i) => {
                let (d, s) = pending.remove(i);
                out.push(copy(d, s));
            }
            None => {
                // Every destination is still read: save one source, then read the copy.
                let (_, s) = pending[0];
                let vreg = s.vreg().expect("a cycle is made of virtual registers");
                let info = f.vreg(vreg).clone();
                let t = Reg::whole(f.new_vreg(info.class, info.words, None), info.words);
                out.push(copy(t, s));
                for (_, src) in pending.iter_mut() {
                    if src.vreg() == Some(vreg) {
                        *src = t;
                    }
                }
            }
        }
    }
    out
}

fn copy(d: Reg, s: Reg) -> Inst {
    Inst::new("COPY", &[], vec![Operand::def(d), Operand::use_(s)])
}

/// Whether `inst` is a warpgroup matrix multiply (`QGMMA`, `HGMMA`) right after its
/// `WARPGROUP.ARRIVE` (`wgmma.fence`, `lower/isel/wgmma.rs`). PTX requires that fence between
/// any register write and the `wgmma.mma_async` reading that register, and ptxas keeps every
/// vector register write before it: in every GMMA of the ptxas listings in `tests/golden/ptxas`
/// only uniform-datapath instructions (`UMOV`, `UIADD3`, `USHF`) come between the two. So the copy
/// that gives the accumulator its prior value goes before the fence, and with it any reload the
/// register allocator inserts for that copy (pyptx `matmul_tma_v34`, whose accumulators spill).
fn follows_its_fence(inst: &Inst, before: &[Inst]) -> bool {
    matches!(inst.mnemonic, "QGMMA" | "HGMMA")
        && before
            .last()
            .is_some_and(|i| i.mnemonic == "WARPGROUP" && i.mods.first() == Some(&"ARRIVE"))
}

fn expand_priors(f: &mut Function) {
    for block in &mut f.blocks {
        // A block without `{prior}` operands stays as it is (rebuilding it moved every
        // instruction).
        let has_prior = |i: &Inst| i.ops.iter().any(|o| matches!(o.kind, OpKind::Prior(_)));
        if !block.insts.iter().any(has_prior) {
            continue;
        }
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
                        // The accumulator of a tensor-core instruction is written before the
                        // `WARPGROUP.ARRIVE` that precedes it, not between the two (below).
                        let at = out.len() - usize::from(follows_its_fence(&inst, &out));
                        out.insert(at, copy(whole, *prior));
                    }
                    // `@!p INST d, Prior(p)`: after the copy the guard may read `d` (the same
                    // value), so that `p` dies at the copy and `d` can take its register
                    // (`@!P0 SYNCS.PHASECHK.TRANS64 P0, …`: 09_mbarrier/try_wait_suspend).
                    if let Some(g) = inst.guard.as_mut()
                        && g.pred == *prior
                        && whole.count() == 1
                    {
                        g.pred = whole;
                    }
                }
            }
            out.push(inst);
        }
        block.insts = out;
    }
}
