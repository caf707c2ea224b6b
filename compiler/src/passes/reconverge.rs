//! `reconverge`: brackets divergent control flow with convergence barriers, as ptxas does.
//!
//! When a branch's condition may differ between the threads of a warp, the warp splits. On
//! Volta and later the two halves run independently and nothing makes them meet again, so ptxas
//! opens a convergence barrier before the split and waits on it where the paths join:
//!
//! ```text
//!       BSSY B0, join          ; the threads here will meet again at `join`
//!  @!P0 BRA else
//!       …
//!       BSYNC B0               ; wait for every thread that passed the BSSY
//! join: …
//! ```
//!
//! The join is the branch block's immediate post-dominator (computed on the reverse CFG with a
//! virtual exit; a branch whose paths only meet at the exit needs no barrier: exited threads
//! leave the warp). The *region* is every block reachable from the branch without passing the
//! join. Each region gets a `BSYNC` block laid out just before the join, through which every
//! region edge into the join is redirected, and a `BSSY` where control enters the region —
//! before the branch, or in a new preheader when the branch sits in a loop of the region.
//! Nested regions use barriers `B0`, `B1`, … by nesting depth. Runs after `out-of-ssa`, so
//! redirecting edges needs no PHI surgery.

use super::Pass;
use crate::mir::cfg::{Cfg, reorder};
use crate::mir::{BlockId, Function, Inst, OpKind, Operand, Reg};
use fixedbitset::FixedBitSet;
use petgraph::algo::dominators;
use petgraph::graph::{DiGraph, NodeIndex};

pub struct Reconverge;

/// B0–B15.
const BARRIERS: usize = 16;

impl Pass for Reconverge {
    fn name(&self) -> &'static str {
        "reconverge"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        branch_around_warpsyncs(f);
        let regions = find_regions(f);
        if regions.is_empty() {
            return Ok(());
        }
        insert_barriers(f, regions)
    }
}

/// Guarded warp-synchronous instructions become a branch around them, as ptxas compiles them
/// (zluda `vote_all`, `redux_sync_add_u32_partial`, probes in `docs/passes/reconverge.md`):
///
/// ```text
///   @p WARPSYNC R0             @!p BRA after
///   @p REDUX.SUM UR6, R7   →       WARPSYNC R0
///   @p MOV R5, UR6                 REDUX.SUM UR6, R7
///                                  MOV R5, UR6
///                            after: …
/// ```
///
/// Instruction selection put the `WARPSYNC` of the membermask under the guard right before the
/// instruction (`lower/isel/warp.rs`); the region is it and the instructions after it under the
/// same guard, up to one that writes the guard's register. The branch is divergent (bracketed
/// by `BSSY`/`BSYNC` below) when the guard may differ between threads and the mask is not the
/// whole warp: ptxas puts no barrier around `WARPSYNC.ALL`, which itself waits for the warp
/// (`vote_all_sub`, probe `full_pred`).
fn branch_around_warpsyncs(f: &mut Function) {
    let mut b = 0;
    while b < f.blocks.len() {
        let id = BlockId(b as u32);
        b += 1;
        let Some(at) = f
            .block(id)
            .insts
            .iter()
            .position(|i| i.mnemonic == "WARPSYNC" && i.guard.is_some())
        else {
            continue;
        };
        let insts = &f.block(id).insts;
        let guard = insts[at].guard.expect("guarded");
        // The `COPY d, old` that out-of-SSA put before a guarded definition of `d` (the value
        // of `d` where the guard is false) moves up before the region: it must run on both
        // paths. It can when the region so far neither reads nor writes what it touches.
        let mut hoisted: Vec<usize> = Vec::new();
        let mut end = at;
        while end < insts.len() && !insts[end].is_terminator() {
            let i = &insts[end];
            if i.guard.is_none() && i.mnemonic == "COPY" {
                let touches = |r: Reg| {
                    insts[at..end]
                        .iter()
                        .flat_map(|g| g.ops.iter().flat_map(Operand::regs))
                        .any(|x| x.reg.vreg().is_some() && x.reg.vreg() == r.vreg())
                };
                if i.ops.iter().flat_map(Operand::regs).any(|x| touches(x.reg)) {
                    break;
                }
                hoisted.push(end);
                end += 1;
                continue;
            }
            if i.guard != Some(guard) {
                break;
            }
            end += 1;
            if i.defs()
                .any(|d| d.vreg().is_some() && d.vreg() == guard.pred.vreg())
            {
                break;
            }
        }
        // Trailing copies belong after the region.
        while hoisted.last() == Some(&(end - 1)) {
            hoisted.pop();
            end -= 1;
        }
        let divergent = insts[at].divergent && insts[at].mods != ["ALL"];
        let region = f.new_block(None);
        let after = f.new_block(None);
        let block = f.block_mut(id);
        let rest: Vec<Inst> = block.insts.drain(end..).collect();
        let body: Vec<Inst> = block.insts.drain(at..).collect();
        for k in hoisted {
            let copy = body[k - at].clone();
            block.insts.push(copy);
        }
        let mut body: Vec<Inst> = body
            .into_iter()
            .filter(|i| !(i.guard.is_none() && i.mnemonic == "COPY"))
            .collect();
        for i in &mut body {
            i.guard = None;
            i.divergent = false;
        }
        let mut bra = Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(after))])
            .guarded(guard.pred, !guard.neg);
        bra.divergent = divergent;
        block.insts.push(bra);
        let fallthrough = block.fallthrough.replace(region);
        f.block_mut(region).insts = body;
        f.block_mut(region).fallthrough = Some(after);
        f.block_mut(after).insts = rest;
        f.block_mut(after).fallthrough = fallthrough;
        // Lay the two new blocks out after the split one.
        let n = f.blocks.len();
        let order: Vec<BlockId> = (0..n - 2)
            .flat_map(|k| {
                let k = BlockId(k as u32);
                if k == id {
                    vec![k, region, after]
                } else {
                    vec![k]
                }
            })
            .collect();
        reorder(f, &order);
    }
}

/// A divergent branch and the blocks until its paths meet.
struct Region {
    branch: BlockId,
    join: BlockId,
    blocks: FixedBitSet,
}

/// Immediate post-dominators (`None`: the virtual exit).
fn post_dominators(f: &Function, cfg: &Cfg) -> Vec<Option<BlockId>> {
    let n = f.blocks.len();
    let mut rev: DiGraph<(), ()> = DiGraph::with_capacity(n + 1, n * 2);
    for _ in 0..=n {
        rev.add_node(());
    }
    let exit = NodeIndex::new(n);
    for b in f.block_ids() {
        let succs = cfg.succs(b);
        if succs.is_empty() {
            rev.add_edge(exit, NodeIndex::new(b.0 as usize), ());
        }
        for s in succs {
            rev.add_edge(
                NodeIndex::new(s.0 as usize),
                NodeIndex::new(b.0 as usize),
                (),
            );
        }
    }
    let doms = dominators::simple_fast(&rev, exit);
    (0..n)
        .map(|i| {
            doms.immediate_dominator(NodeIndex::new(i))
                .filter(|d| d.index() < n)
                .map(|d| BlockId(d.index() as u32))
        })
        .collect()
}

fn find_regions(f: &Function) -> Vec<Region> {
    let cfg = Cfg::new(f);
    let ipdom = post_dominators(f, &cfg);
    let mut out = Vec::new();
    for b in f.block_ids() {
        if !cfg.is_reachable(b) {
            continue;
        }
        let divergent = f
            .block(b)
            .insts
            .iter()
            .any(|i| i.mnemonic == "BRA" && i.divergent && i.guard.is_some());
        if !divergent {
            continue;
        }
        let Some(join) = ipdom[b.0 as usize] else {
            continue;
        };
        out.push(Region {
            branch: b,
            join,
            blocks: region_blocks(f, &cfg, b, join),
        });
    }
    // Inner regions first.
    out.sort_by_key(|r| (r.blocks.count_ones(..), r.branch));
    out
}

/// Blocks reachable from `from` without passing `join`.
fn region_blocks(f: &Function, cfg: &Cfg, from: BlockId, join: BlockId) -> FixedBitSet {
    reachable_before(f.blocks.len(), |b| cfg.succs(b), from, join)
}

/// Blocks reachable from `from` without passing `join`, over the successor lists `succs`.
fn reachable_before<'a>(
    n: usize,
    succs: impl Fn(BlockId) -> &'a [BlockId],
    from: BlockId,
    join: BlockId,
) -> FixedBitSet {
    let mut seen = FixedBitSet::with_capacity(n);
    let mut stack = vec![from];
    while let Some(b) = stack.pop() {
        if b == join || seen.contains(b.0 as usize) {
            continue;
        }
        seen.insert(b.0 as usize);
        stack.extend(succs(b).iter().copied());
    }
    seen
}

/// Successor and predecessor lists kept up to date as blocks are added and edges redirected
/// (rebuilding the whole [`Cfg`] per region made the pass quadratic in the number of divergent
/// branches). The lists hold what [`Function::successors`] gives, predecessors once per edge.
struct Adjacency {
    succs: Vec<Vec<BlockId>>,
    preds: Vec<Vec<BlockId>>,
}

impl Adjacency {
    fn new(f: &Function) -> Adjacency {
        let cfg = Cfg::new(f);
        Adjacency {
            succs: f.block_ids().map(|b| cfg.succs(b).to_vec()).collect(),
            preds: f.block_ids().map(|b| cfg.preds(b).to_vec()).collect(),
        }
    }

    /// Re-reads the edges out of `touched` blocks (new or redirected) from the function.
    fn update(&mut self, f: &Function, touched: &[BlockId]) {
        let n = f.blocks.len();
        self.succs.resize(n, Vec::new());
        self.preds.resize(n, Vec::new());
        let mut done = FixedBitSet::with_capacity(n);
        for &t in touched {
            if done.put(t.0 as usize) {
                continue;
            }
            for s in std::mem::take(&mut self.succs[t.0 as usize]) {
                let p = &mut self.preds[s.0 as usize];
                if let Some(k) = p.iter().position(|&x| x == t) {
                    p.remove(k);
                }
            }
            let new: Vec<BlockId> = f
                .successors(t)
                .into_iter()
                .filter(|s| (s.0 as usize) < n)
                .collect();
            for &s in &new {
                self.preds[s.0 as usize].push(t);
            }
            self.succs[t.0 as usize] = new;
        }
    }
}

fn retarget(f: &mut Function, from: BlockId, old: BlockId, new: BlockId) {
    let block = f.block_mut(from);
    if block.fallthrough == Some(old) {
        block.fallthrough = Some(new);
    }
    for inst in &mut block.insts {
        for o in &mut inst.ops {
            if o.kind == OpKind::Block(old) {
                o.kind = OpKind::Block(new);
            }
        }
    }
}

fn insert_barriers(f: &mut Function, regions: Vec<Region>) -> Result<(), String> {
    // Layout wishes: new block → the block it goes right before.
    let mut before: Vec<(BlockId, BlockId)> = Vec::new();
    let sizes: Vec<usize> = regions.iter().map(|r| r.blocks.count_ones(..)).collect();
    // A region's depth: how many larger regions hold its branch. Counted from the larger
    // regions' blocks (one region per branch block), not by testing every pair of regions,
    // which was quadratic in the number of divergent branches.
    let mut region_of: Vec<Option<usize>> = vec![None; f.blocks.len()];
    for (i, r) in regions.iter().enumerate() {
        region_of[r.branch.0 as usize] = Some(i);
    }
    let mut depths: Vec<usize> = vec![0; regions.len()];
    for (j, o) in regions.iter().enumerate() {
        for x in o.blocks.ones() {
            if let Some(i) = region_of.get(x).copied().flatten()
                && i != j
                && sizes[j] > sizes[i]
            {
                depths[i] += 1;
            }
        }
    }
    let mut adj = Adjacency::new(f);
    for (r, depth) in regions.iter().zip(depths) {
        if depth >= BARRIERS {
            return Err(format!(
                "`{}`: divergent branches nest deeper than {BARRIERS}",
                f.name
            ));
        }
        let bar = Operand::new(OpKind::Barrier(depth as u8));
        // The region as it is now (inner regions may have added blocks to it).
        let blocks = reachable_before(
            f.blocks.len(),
            |b| adj.succs[b.0 as usize].as_slice(),
            r.branch,
            r.join,
        );
        let mut touched = Vec::new();
        // BSYNC block before the join; every region edge into the join goes through it.
        let sync = f.new_block(None);
        f.block_mut(sync)
            .insts
            .push(Inst::new("BSYNC", &[], vec![bar.clone()]));
        f.block_mut(sync).fallthrough = Some(r.join);
        touched.push(sync);
        for x in blocks.ones() {
            let x = BlockId(x as u32);
            if adj.succs[x.0 as usize].contains(&r.join) {
                retarget(f, x, r.join, sync);
                touched.push(x);
            }
        }
        before.push((sync, r.join));
        // The BSSY names where the threads continue after the BSYNC: the block after the sync
        // block, known once all regions are in place (below).
        let bssy = Inst::new(
            "BSSY",
            &[],
            vec![bar.clone(), Operand::new(OpKind::Block(sync))],
        );
        // Where control enters the region.
        let entries: Vec<BlockId> = blocks
            .ones()
            .map(|x| BlockId(x as u32))
            .filter(|&x| {
                x == BlockId(0)
                    || adj.preds[x.0 as usize]
                        .iter()
                        .any(|p| !blocks.contains(p.0 as usize))
            })
            .collect();
        for e in entries {
            let loops_back = adj.preds[e.0 as usize]
                .iter()
                .any(|p| blocks.contains(p.0 as usize));
            if e == r.branch && !loops_back {
                let insts = &mut f.block_mut(e).insts;
                let at = insts
                    .iter()
                    .position(|i| i.mnemonic == "BRA" && i.divergent)
                    .unwrap_or(insts.len());
                insts.insert(at, bssy.clone());
            } else {
                let pre = f.new_block(None);
                f.block_mut(pre).insts.push(bssy.clone());
                f.block_mut(pre).fallthrough = Some(e);
                touched.push(pre);
                let outside: Vec<BlockId> = adj.preds[e.0 as usize]
                    .iter()
                    .copied()
                    .filter(|p| !blocks.contains(p.0 as usize))
                    .collect();
                for p in outside {
                    retarget(f, p, e, pre);
                    touched.push(p);
                }
                before.push((pre, e));
            }
        }
        adj.update(f, &touched);
    }
    // Each BSSY names its sync block so far: make it the block after the BSYNC.
    let after_sync: Vec<Option<BlockId>> = f.blocks.iter().map(|b| b.fallthrough).collect();
    for block in &mut f.blocks {
        for inst in block.insts.iter_mut().filter(|i| i.mnemonic == "BSSY") {
            for o in &mut inst.ops {
                if let OpKind::Block(s) = o.kind
                    && let Some(next) = after_sync[s.0 as usize]
                {
                    o.kind = OpKind::Block(next);
                }
            }
        }
    }
    // Lay the new blocks out just before the blocks they lead into.
    let n = f.blocks.len();
    let mut is_new = FixedBitSet::with_capacity(n);
    // For each block, the new blocks that go right before it, in the order they were made.
    let mut goes_before: Vec<Vec<BlockId>> = vec![Vec::new(); n];
    for &(new, target) in &before {
        is_new.insert(new.0 as usize);
        goes_before[target.0 as usize].push(new);
    }
    let mut order = Vec::with_capacity(n);
    let mut placed = FixedBitSet::with_capacity(n);
    for b in f.block_ids() {
        if is_new.contains(b.0 as usize) {
            continue;
        }
        push_with_predecessors(&mut order, &mut placed, &goes_before, b);
        order.push(b);
    }
    reorder(f, &order);
    Ok(())
}

/// Pushes the new blocks that go before `b` (and, recursively, those before them).
fn push_with_predecessors(
    order: &mut Vec<BlockId>,
    placed: &mut FixedBitSet,
    goes_before: &[Vec<BlockId>],
    b: BlockId,
) {
    for &n in &goes_before[b.0 as usize] {
        if !placed.contains(n.0 as usize) {
            push_with_predecessors(order, placed, goes_before, n);
            placed.insert(n.0 as usize);
            order.push(n);
        }
    }
}
