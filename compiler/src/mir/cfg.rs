//! The control-flow graph of a MIR function, as a petgraph graph whose node `i` is block `i`,
//! with reverse post-order, predecessors and dominators (Cooper, Harvey and Kennedy's
//! algorithm, petgraph's `simple_fast`).

use super::{BlockId, Function, OpKind};
use petgraph::algo::dominators::{self, Dominators};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::DfsPostOrder;
use std::cell::OnceCell;

/// The CFG of one function, computed from its blocks' branches and fallthroughs.
pub struct Cfg {
    pub graph: DiGraph<BlockId, ()>,
    /// Blocks reachable from the entry, in reverse post-order.
    pub rpo: Vec<BlockId>,
    /// `rpo_index[b]`: the position of `b` in `rpo` (`usize::MAX` when unreachable).
    pub rpo_index: Vec<usize>,
    pub preds: Vec<Vec<BlockId>>,
    pub succs: Vec<Vec<BlockId>>,
    /// Computed on the first question about dominance: most passes that build a CFG want only
    /// its edges and order, and the dominators were most of its cost (callgrind, `loop_16000`:
    /// 31M of the 37M of `Cfg::new`).
    doms: OnceCell<Dominators<NodeIndex>>,
}

fn node(b: BlockId) -> NodeIndex {
    NodeIndex::new(b.0 as usize)
}

impl Cfg {
    pub fn new(f: &Function) -> Cfg {
        let mut graph = DiGraph::with_capacity(f.blocks.len(), f.blocks.len() * 2);
        for b in f.block_ids() {
            graph.add_node(b);
        }
        let mut succs = vec![Vec::new(); f.blocks.len()];
        let mut preds = vec![Vec::new(); f.blocks.len()];
        for b in f.block_ids() {
            // `Function::successors`, without a list of its own per block.
            let out: &mut Vec<BlockId> = &mut succs[b.0 as usize];
            let block = f.block(b);
            // Plain loops rather than `flat_map(Inst::targets)`: every instruction is asked,
            // and the chained adapters cost about twice as much per instruction (callgrind,
            // `straight_16000.ptx`: the two CFGs built on its 16k instructions, 0.99M).
            for inst in &block.insts {
                for o in &inst.ops {
                    if let OpKind::Block(t) = o.kind
                        && inst.is_terminator()
                    {
                        out.push(t);
                    }
                }
            }
            out.extend(block.fallthrough);
            out.dedup();
            out.retain(|s| (s.0 as usize) < f.blocks.len());
            for &s in out.iter() {
                graph.add_edge(node(b), node(s), ());
                preds[s.0 as usize].push(b);
            }
        }
        let mut post = Vec::new();
        if !f.blocks.is_empty() {
            let mut dfs = DfsPostOrder::new(&graph, node(BlockId(0)));
            while let Some(n) = dfs.next(&graph) {
                post.push(BlockId(n.index() as u32));
            }
        }
        post.reverse();
        let mut rpo_index = vec![usize::MAX; f.blocks.len()];
        for (i, b) in post.iter().enumerate() {
            rpo_index[b.0 as usize] = i;
        }
        Cfg {
            graph,
            rpo: post,
            rpo_index,
            preds,
            succs,
            doms: OnceCell::new(),
        }
    }

    fn doms(&self) -> &Dominators<NodeIndex> {
        self.doms
            .get_or_init(|| dominators::simple_fast(&self.graph, node(BlockId(0))))
    }

    pub fn is_reachable(&self, b: BlockId) -> bool {
        self.rpo_index
            .get(b.0 as usize)
            .is_some_and(|&i| i != usize::MAX)
    }

    /// The immediate dominator of `b` (none for the entry and unreachable blocks).
    pub fn idom(&self, b: BlockId) -> Option<BlockId> {
        self.doms()
            .immediate_dominator(node(b))
            .map(|n| BlockId(n.index() as u32))
    }

    /// Whether `a` dominates `b` (every block dominates itself).
    pub fn dominates(&self, a: BlockId, b: BlockId) -> bool {
        if !self.is_reachable(b) {
            return true;
        }
        let mut cur = Some(b);
        while let Some(c) = cur {
            if c == a {
                return true;
            }
            cur = self.idom(c);
        }
        false
    }

    pub fn preds(&self, b: BlockId) -> &[BlockId] {
        &self.preds[b.0 as usize]
    }

    pub fn succs(&self, b: BlockId) -> &[BlockId] {
        &self.succs[b.0 as usize]
    }
}

/// Puts the blocks in the layout `order` (a permutation of all block numbers), renumbering
/// every reference. Fallthroughs keep their targets (emission adds a branch where the target no
/// longer follows).
pub fn reorder(f: &mut Function, order: &[BlockId]) {
    debug_assert_eq!(order.len(), f.blocks.len());
    let mut new_of = vec![BlockId(0); f.blocks.len()];
    for (new, old) in order.iter().enumerate() {
        new_of[old.0 as usize] = BlockId(new as u32);
    }
    let mut old_blocks: Vec<Option<super::Block>> = std::mem::take(&mut f.blocks)
        .into_iter()
        .map(Some)
        .collect();
    for old in order {
        let mut block = old_blocks[old.0 as usize].take().expect("each block once");
        block.fallthrough = block.fallthrough.map(|t| new_of[t.0 as usize]);
        for inst in &mut block.insts {
            for o in &mut inst.ops {
                match &mut o.kind {
                    OpKind::Block(t) | OpKind::PhiArg(t, _) => *t = new_of[t.0 as usize],
                    _ => {}
                }
            }
        }
        f.blocks.push(block);
    }
}

/// Removes the blocks control can never reach (code after an unconditional branch or exit),
/// renumbering the others in order; `PHI` arguments from removed blocks go too.
pub fn remove_unreachable(f: &mut Function) -> bool {
    let cfg = Cfg::new(f);
    if f.block_ids().all(|b| cfg.is_reachable(b)) {
        return false;
    }
    // The usual case: the unreachable blocks all follow the reachable ones (the empty block
    // after a kernel's last `ret`). Then no block is renumbered and nothing reachable branches
    // to a removed block; only `PHI`s lose arguments. (Renumbering looked at every operand of
    // every instruction.)
    let kept = f.block_ids().filter(|&b| cfg.is_reachable(b)).count();
    if f.block_ids().take(kept).all(|b| cfg.is_reachable(b)) {
        f.blocks.truncate(kept);
        // A block's `PHI`s come first (the verifier checks it), so only that span is looked at.
        for block in &mut f.blocks {
            for inst in block.insts.iter_mut().take_while(|i| i.is_phi()) {
                inst.ops.retain(|o| match o.kind {
                    OpKind::PhiArg(p, _) => (p.0 as usize) < kept,
                    _ => true,
                });
            }
        }
        return true;
    }
    let mut new_of = vec![None; f.blocks.len()];
    let mut next = 0u32;
    for b in f.block_ids() {
        if cfg.is_reachable(b) {
            new_of[b.0 as usize] = Some(BlockId(next));
            next += 1;
        }
    }
    let blocks = std::mem::take(&mut f.blocks);
    for (i, mut block) in blocks.into_iter().enumerate() {
        if new_of[i].is_none() {
            continue;
        }
        block.fallthrough = block.fallthrough.and_then(|t| new_of[t.0 as usize]);
        for inst in &mut block.insts {
            // Only branches and `PHI`s name blocks; the others are left as they are.
            if !inst
                .ops
                .iter()
                .any(|o| matches!(o.kind, OpKind::Block(_) | OpKind::PhiArg(..)))
            {
                continue;
            }
            inst.ops.retain(|o| match o.kind {
                OpKind::PhiArg(p, _) => new_of[p.0 as usize].is_some(),
                _ => true,
            });
            for o in &mut inst.ops {
                match &mut o.kind {
                    OpKind::Block(t) | OpKind::PhiArg(t, _) => {
                        *t = new_of[t.0 as usize]
                            .expect("a reachable block's successor is reachable")
                    }
                    _ => {}
                }
            }
        }
        f.blocks.push(block);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{Inst, OpKind, Operand};

    /// bb0 -> bb1 -> bb3, bb0 -> bb2 -> bb3 (a diamond).
    fn diamond() -> Function {
        let mut f = Function::new("d", true);
        let b1 = f.new_block(None);
        let b2 = f.new_block(None);
        let b3 = f.new_block(None);
        f.block_mut(BlockId(0)).insts.push(Inst::new(
            "BRA",
            &[],
            vec![Operand::new(OpKind::Block(b2))],
        ));
        f.block_mut(BlockId(0)).fallthrough = Some(b1);
        f.block_mut(b1)
            .insts
            .push(Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(b3))]));
        f.block_mut(b2).fallthrough = Some(b3);
        f.block_mut(b3).insts.push(Inst::new("EXIT", &[], vec![]));
        f
    }

    #[test]
    fn diamond_dominators() {
        let f = diamond();
        let cfg = Cfg::new(&f);
        assert_eq!(cfg.rpo.first(), Some(&BlockId(0)));
        assert_eq!(cfg.rpo.last(), Some(&BlockId(3)));
        assert_eq!(cfg.idom(BlockId(3)), Some(BlockId(0)));
        assert!(cfg.dominates(BlockId(0), BlockId(2)));
        assert!(!cfg.dominates(BlockId(1), BlockId(3)));
        assert_eq!(cfg.preds(BlockId(3)).len(), 2);
    }
}
