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
//!
//! Not every divergent branch gets a barrier; before the regions, three steps decide as ptxas
//! does (`docs/passes/reconverge.md` has the probes): [`branch_around_warpsyncs`] turns a
//! guarded warp-synchronous instruction into a branch around `WARPSYNC` and it,
//! [`refine_divergence`] clears the divergence of branches whose predicate a whole-function
//! analysis finds uniform (a loop counted by a parameter), and [`if_convert`] predicates
//! divergent regions of at most [`IF_CONVERT_MAX`] instructions a side.

use super::Pass;
use crate::mir::cfg::{Cfg, reorder};
use crate::mir::{BlockId, Function, Guard, Inst, OpKind, Operand, Reg, RegClass};
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
        refine_divergence(f);
        if_convert(f);
        let regions = find_regions(f);
        if !regions.is_empty() {
            insert_barriers(f, regions)?;
        }
        if f.setmaxnreg {
            drop_converged_warpsyncs(f);
        }
        Ok(())
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

/// Which branches instruction selection called divergent really are, by a divergence analysis
/// of the whole function: instruction selection looks at one value's definitions and cannot
/// see through a loop's back edge, so a loop counted by a parameter (`for (i = 0; i < n; i++)`)
/// looked divergent and got a `BSSY`/`BSYNC` around it, where ptxas knows the counter is the
/// same in every thread and puts none (`tests/kernels/debug_line_info.ptx`,
/// `matmul_tiled.ptx`). A loop whose trip count differs between threads keeps its barrier, as
/// ptxas's does (probe `loop_plain` in `docs/passes/reconverge.md`).
///
/// A register is divergent when an instruction writes it that
/// * is not a pure computation known to give every thread the same result from the same
///   operands (loads, warp and thread-index reads, anything not listed in [`uniform_op`]),
/// * reads a divergent register or is guarded by one, or
/// * sits in the region of a divergent branch (threads that took different paths see
///   different values after the join; a loop with a divergent exit holds its own body).
///
/// Branches start uniform and become divergent as their predicates do, until nothing changes
/// (a worklist over the users of each register; regions are added once). Only branches
/// instruction selection marked can lose the mark.
fn refine_divergence(f: &mut Function) {
    let branches = guarded_branches(f, |i| i.divergent);
    if branches.is_empty() {
        return;
    }
    for (&(b, k), d) in branches.iter().zip(divergent_branches(f, &branches, &[])) {
        f.block_mut(b).insts[k].divergent = d;
    }
}

/// The guarded `BRA`s `keep` accepts, as (block, index).
fn guarded_branches(f: &Function, keep: impl Fn(&Inst) -> bool) -> Vec<(BlockId, usize)> {
    f.block_ids()
        .flat_map(|b| {
            f.block(b)
                .insts
                .iter()
                .enumerate()
                .filter(|(_, i)| i.mnemonic == "BRA" && i.guard.is_some() && keep(i))
                .map(move |(k, _)| (b, k))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Which of `branches` are divergent by the analysis of [`refine_divergence`], the regions of
/// the divergent ones making what they compute divergent in turn. `converged_loads` (sorted)
/// are `LDS`s known to run with the warp converged: one from a uniform address reads one
/// value for the whole warp.
fn divergent_branches(
    f: &Function,
    branches: &[(BlockId, usize)],
    converged_loads: &[(BlockId, usize)],
) -> Vec<bool> {
    // The CFG and the post-dominators are wanted only once a branch turns out divergent: a
    // function whose loops all count uniformly needs neither (`loop_16000`: 6.5M of the 20M
    // instructions of this analysis, callgrind).
    let mut graph: Option<(Cfg, Vec<Option<BlockId>>)> = None;
    // Instruction `k` of block `b` is number `first[b] + k` of the function.
    let mut first = Vec::with_capacity(f.blocks.len() + 1);
    first.push(0usize);
    for b in &f.blocks {
        first.push(first.last().copied().unwrap_or(0) + b.insts.len());
    }
    let ni = first[f.blocks.len()];
    // The instructions reading each register, in order: `users[start[v]..start[v + 1]]`, one
    // vector for all registers (a `Vec` per register was an allocation per value).
    let nv = f.vregs.len();
    let mut start = vec![0usize; nv + 1];
    for i in f.blocks.iter().flat_map(|b| &b.insts) {
        i.for_each_reg(|r| {
            if let (Some(v), false) = (r.reg.vreg(), r.def) {
                start[v.0 as usize + 1] += 1;
            }
        });
    }
    for v in 0..nv {
        start[v + 1] += start[v];
    }
    let mut users = vec![(BlockId(0), 0usize); start[nv]];
    let mut next = start.clone();
    let mut work: Vec<(BlockId, usize)> = Vec::with_capacity(ni);
    for b in f.block_ids() {
        for (k, i) in f.block(b).insts.iter().enumerate() {
            i.for_each_reg(|r| {
                if let (Some(v), false) = (r.reg.vreg(), r.def) {
                    users[next[v.0 as usize]] = (b, k);
                    next[v.0 as usize] += 1;
                }
            });
            work.push((b, k));
        }
    }
    // Popped in program order: a definition is mostly looked at before its readers, which
    // are then still waiting when it turns divergent (popped last to first, the readers had
    // gone and came back: twice the visits).
    work.reverse();
    let users = |v: usize| &users[start[v]..start[v + 1]];
    // `queued`: the instructions on the work list. One waiting there is not pushed again when
    // another of its operands turns divergent (the analysis only grows, so when it is looked
    // at does not change the result; an instruction was looked at once per divergent operand).
    let mut queued = FixedBitSet::with_capacity(ni);
    queued.insert_range(..);
    let mut divergent = FixedBitSet::with_capacity(f.vregs.len());
    let mut in_region = FixedBitSet::with_capacity(f.blocks.len());
    let mut branch_divergent = vec![false; branches.len()];
    loop {
        while let Some((b, k)) = work.pop() {
            queued.set(first[b.0 as usize] + k, false);
            let i = &f.block(b).insts[k];
            let converged_load = converged_loads.binary_search(&(b, k)).is_ok();
            if !in_region.contains(b.0 as usize) && !diverges(f, i, &divergent, converged_load) {
                continue;
            }
            for d in i.defs() {
                if let Some(v) = d.vreg()
                    && !divergent.put(v.0 as usize)
                {
                    for &(ub, uk) in users(v.0 as usize) {
                        if !queued.put(first[ub.0 as usize] + uk) {
                            work.push((ub, uk));
                        }
                    }
                }
            }
        }
        let mut changed = false;
        for (n, &(b, k)) in branches.iter().enumerate() {
            let guard = f.block(b).insts[k].guard.expect("guarded");
            if branch_divergent[n] || is_uniform(f, guard.pred, &divergent) {
                continue;
            }
            branch_divergent[n] = true;
            changed = true;
            let (cfg, ipdom) = graph.get_or_insert_with(|| {
                let cfg = Cfg::new(f);
                let ipdom = post_dominators(f, &cfg);
                (cfg, ipdom)
            });
            let Some(join) = ipdom[b.0 as usize] else {
                // The paths never meet: each side's threads compute among themselves.
                continue;
            };
            for &s in cfg.succs(b) {
                for x in reachable_before(f.blocks.len(), |b| cfg.succs(b), s, join).ones() {
                    if !in_region.put(x) {
                        let x = BlockId(x as u32);
                        for k in 0..f.block(x).insts.len() {
                            if !queued.put(first[x.0 as usize] + k) {
                                work.push((x, k));
                            }
                        }
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    branch_divergent
}

/// Whether `r` holds the same value in every thread (by the analysis so far).
fn is_uniform(f: &Function, r: Reg, divergent: &FixedBitSet) -> bool {
    match r {
        Reg::Virt { vreg, .. } => {
            matches!(f.vreg(vreg).class, RegClass::Ugpr | RegClass::UPred)
                || !divergent.contains(vreg.0 as usize)
        }
        Reg::Phys { reg, .. } => {
            reg.is_zero() || matches!(reg.class, RegClass::Ugpr | RegClass::UPred)
        }
    }
}

/// Whether `i` may give different threads different results (see [`refine_divergence`]).
fn diverges(f: &Function, i: &Inst, divergent: &FixedBitSet, converged_load: bool) -> bool {
    if i.guard.is_some_and(|g| !is_uniform(f, g.pred, divergent)) {
        return true;
    }
    if converged_load && i.mnemonic == "LDS" {
        return i.uses().any(|r| !is_uniform(f, r, divergent));
    }
    if reads_one_lane(i) {
        return false;
    }
    // The uniform datapath computes one value for the warp.
    if i.defs().all(|d| match d {
        Reg::Virt { vreg, .. } => matches!(f.vreg(vreg).class, RegClass::Ugpr | RegClass::UPred),
        Reg::Phys { reg, .. } => matches!(reg.class, RegClass::Ugpr | RegClass::UPred),
    }) {
        return false;
    }
    if !uniform_op(i) {
        return true;
    }
    i.ops.iter().any(|o| match &o.kind {
        OpKind::Reg(r) if !r.def => !is_uniform(f, r.reg, divergent),
        OpKind::Mem { .. } | OpKind::CBank { base: Some(_), .. } | OpKind::Prior(_) => true,
        _ => false,
    })
}

/// `SHFL.IDX d, a, lane, 0x1f` with a constant `lane`: every thread reads `a` of the same lane,
/// so `d` (and the in-range predicate) is warp-uniform whatever `a` is. ptxas branches on it with
/// no `BSSY` (probes `shfl_idx_lane0`, `shfl_idx_lane5`, `shfl_idx_partial` of
/// [`examples/reconverge/shfl_uniform.ptx`](../../../docs/passes/examples/reconverge/shfl_uniform.ptx);
/// pyptx `fa_ws_pingpong` branches on the warp index read from lane 0), but not with a register
/// lane, a clamp other than 31 (`0xf`) or a segment mask (`0x101f`), nor on `SHFL.BFLY`.
fn reads_one_lane(i: &Inst) -> bool {
    i.mnemonic == "SHFL"
        && i.mods == ["IDX"]
        && matches!(
            i.ops.as_slice(),
            [_, _, _, lane, clamp]
                if matches!(lane.kind, OpKind::Int(_)) && matches!(clamp.kind, OpKind::Int(0x1f))
        )
}

/// Pure computations whose result depends only on their operands (the vector instructions
/// instruction selection knows uniform twins of, `lower/isel/uniform.rs`, and `COPY`); `S2R`
/// only of the block's coordinates (`SR_CTAID.*`, …), not of the thread's.
fn uniform_op(i: &Inst) -> bool {
    match i.mnemonic {
        "COPY" | "LDC" | "MOV" | "IADD3" | "VIADD" | "LEA" | "SHF" | "LOP3" | "IMAD" | "PRMT"
        | "SEL" | "ISETP" | "PLOP3" => true,
        "S2R" => i
            .ops
            .iter()
            .any(|o| matches!(o.kind, OpKind::SReg(n) if matches!(n, 0x25..=0x27 | 0x2f | 0x88))),
        _ => false,
    }
}

/// The most instructions ptxas predicates on one side of a divergent branch (probes `k1`–`k32`,
/// `d1`–`d9_9` in `docs/passes/reconverge.md`: a skipped block of 8 `IMAD`s is predicated,
/// of 9 bracketed; an if/else of 7 + 7 predicated, 8 + 1 bracketed: the `then` side's branch
/// over the `else` side counts).
const IF_CONVERT_MAX: usize = 8;

/// Small divergent branch regions become predicated code instead of a `BSSY`/`BSYNC` region,
/// as ptxas does (`tests/kernels/warp_reduce.ptx`: `@!P0 LDC.64; @!P0 IMAD.WIDE; @!P0 LDG`
/// where the PTX branches over a bounds-checked load):
///
/// ```text
///   @p BRA join              @!p LDG R2, [R4]      (the skipped side, under !p)
///      LDG R2, [R4]     →     …
///   join: …                  join: …
/// ```
///
/// A side is a block whose only predecessor is the branch block and only successor the join
/// (or nothing: the branch goes straight to the join), without branches, barriers, warp-wide
/// or uniform-datapath instructions, and with at most [`IF_CONVERT_MAX`] instructions (copies
/// not counted; the fall-through side of an if/else counts its branch too). Pure instructions
/// that write only temporaries of their side run unguarded (the other threads never read
/// them); the others take the side's guard. A guarded write of a value with no definition
/// outside the sides would make it live from the function's entry; a `COPY d, t` right after
/// it is folded into it (`@!p LDG d`), else the region keeps its barrier.
fn if_convert(f: &mut Function) {
    if !has_divergent_branch(f) {
        return;
    }
    let cfg = Cfg::new(f);
    let ipdom = post_dominators(f, &cfg);
    // How many instructions write and read each register.
    let mut defs_of = vec![0u32; f.vregs.len()];
    let mut uses_of = vec![0u32; f.vregs.len()];
    for b in &f.blocks {
        for i in &b.insts {
            for d in i.defs() {
                if let Some(v) = d.vreg() {
                    defs_of[v.0 as usize] += 1;
                }
            }
            for u in i.uses() {
                if let Some(v) = u.vreg() {
                    uses_of[v.0 as usize] += 1;
                }
            }
        }
    }
    let counts = (defs_of.as_slice(), uses_of.as_slice());
    let mut changed = false;
    for b in f.block_ids().collect::<Vec<_>>() {
        if !cfg.is_reachable(b) {
            continue;
        }
        let Some(join) = ipdom[b.0 as usize] else {
            continue;
        };
        let insts = &f.block(b).insts;
        let Some(k) = insts
            .iter()
            .position(|i| i.mnemonic == "BRA" && i.divergent && i.guard.is_some())
        else {
            continue;
        };
        let guard = insts[k].guard.expect("guarded");
        let Some(taken) = insts[k].targets().next() else {
            continue;
        };
        let not_taken = match &insts[k + 1..] {
            [] => f.block(b).fallthrough,
            [bra] if bra.mnemonic == "BRA" && bra.guard.is_none() => bra.targets().next(),
            _ => None,
        };
        let Some(not_taken) = not_taken else { continue };
        if taken == not_taken || guard.pred.vreg().is_none() {
            continue;
        }
        let (Some(fall), Some(jump)) = (
            side(f, &cfg, b, not_taken, join),
            side(f, &cfg, b, taken, join),
        ) else {
            continue;
        };
        let size = |s: &[Inst]| s.iter().filter(|i| i.mnemonic != "COPY").count();
        // Only a side with code of its own costs the fall-through side a branch: out-of-SSA's
        // `COPY`s on an empty PTX side are not code (`k8` of examples/reconverge/if_convert.ptx).
        let fall_cost = size(&fall) + usize::from(size(&jump) > 0);
        if fall_cost > IF_CONVERT_MAX || size(&jump) > IF_CONVERT_MAX {
            continue;
        }
        let not = Guard {
            pred: guard.pred,
            neg: !guard.neg,
        };
        let (Some(fall), Some(jump)) =
            (predicate(fall, not, counts), predicate(jump, guard, counts))
        else {
            continue;
        };
        let block = f.block_mut(b);
        block.insts.truncate(k);
        block.insts.extend(fall);
        block.insts.extend(jump);
        block.fallthrough = Some(join);
        changed = true;
    }
    if changed {
        crate::mir::cfg::remove_unreachable(f);
    }
}

/// The instructions of one side of the branch in `b` that goes to `to` (empty when `to` is the
/// join), when the side can be predicated.
fn side(f: &Function, cfg: &Cfg, b: BlockId, to: BlockId, join: BlockId) -> Option<Vec<Inst>> {
    if to == join {
        return Some(Vec::new());
    }
    if cfg.preds(to) != [b] || cfg.succs(to) != [join] {
        return None;
    }
    let mut insts = f.block(to).insts.clone();
    if insts
        .last()
        .is_some_and(|i| i.mnemonic == "BRA" && i.guard.is_none())
    {
        insts.pop();
    }
    insts.iter().all(predicable).then_some(insts)
}

/// Whether `i` can run under a guard in place of a branch around it.
fn predicable(i: &Inst) -> bool {
    let unpredicable = i.mnemonic.starts_with('U')
        || matches!(
            i.mnemonic,
            "BAR"
                | "BSSY"
                | "BSYNC"
                | "WARPSYNC"
                | "CALL"
                | "RET"
                | "EXIT"
                | "BRA"
                | "BRX"
                | "JMP"
                | "JMX"
                | "SHFL"
                | "VOTE"
                | "MATCH"
                | "REDUX"
                | "ELECT"
                | "WARPGROUP"
                | "HGMMA"
                | "QGMMA"
                | "SYNCS"
                | "ARRIVES"
                | "MEMBAR"
                | "ERRBAR"
                | "CGAERRBAR"
                | "CCTL"
                | "FENCE"
                | "DEPBAR"
                | "LDGDEPBAR"
                | "NANOSLEEP"
                | "BPT"
                | "S2UR"
                | "R2UR"
                | "LEPC"
                | "NOP"
                | "PHI"
                | "BMOV"
        );
    !unpredicable
        && i.guard.is_none()
        && i.mbarrier.is_none()
        && !i.warp_wide
        && !i.frame_save
        && i.defs().all(|d| match d {
            Reg::Virt { .. } => true,
            Reg::Phys { reg, .. } => reg.is_zero(),
        })
}

/// One side's instructions under `guard` (see [`if_convert`]); `None` when a guarded write
/// would be the only definition of its value.
fn predicate(
    side: Vec<Inst>,
    guard: Guard,
    (defs_of, uses_of): (&[u32], &[u32]),
) -> Option<Vec<Inst>> {
    let mut here = vec![0u32; 0];
    let count_here = |v: usize, here: &mut Vec<u32>| {
        if here.len() <= v {
            here.resize(v + 1, 0);
        }
        here[v] += 1;
    };
    for i in &side {
        for d in i.defs() {
            if let Some(v) = d.vreg() {
                count_here(v.0 as usize, &mut here);
            }
        }
    }
    // Whether every definition of `v` is on this side.
    let local = |v: usize, here: &Vec<u32>| here.get(v).copied().unwrap_or(0) == defs_of[v];
    if side.iter().any(|i| {
        i.defs()
            .any(|d| d.vreg().is_some() && d.vreg() == guard.pred.vreg())
    }) {
        return None;
    }
    let mut out: Vec<Inst> = Vec::with_capacity(side.len());
    let mut k = 0;
    while k < side.len() {
        let mut i = side[k].clone();
        k += 1;
        let temps_only = i
            .defs()
            .all(|d| d.vreg().is_some_and(|v| local(v.0 as usize, &here)));
        let reg_base = i
            .ops
            .iter()
            .any(|o| matches!(o.kind, OpKind::CBank { base: Some(_), .. }));
        if uniform_op(&i) && !reg_base && temps_only && i.defs().all(|d| d.vreg().is_some()) {
            out.push(i);
            continue;
        }
        let mut dangling: Vec<Reg> = i
            .defs()
            .filter(|d| d.vreg().is_some_and(|v| local(v.0 as usize, &here)))
            .collect();
        if !dangling.is_empty() {
            // `X t; COPY d, t` with `t` written once and read only there: `X d`.
            let [t] = dangling[..] else { return None };
            let next = side.get(k)?;
            let (
                Some(Operand {
                    kind: OpKind::Reg(d),
                    ..
                }),
                Some(Operand {
                    kind: OpKind::Reg(s),
                    ..
                }),
            ) = (next.ops.first(), next.ops.get(1))
            else {
                return None;
            };
            if next.mnemonic != "COPY"
                || s.reg != t
                || defs_of[t.vreg()?.0 as usize] != 1
                || uses_of[t.vreg()?.0 as usize] != 1
                || d.reg.count() != t.count()
                || d.reg.vreg().is_none_or(|v| local(v.0 as usize, &here))
            {
                return None;
            }
            for o in &mut i.ops {
                if let OpKind::Reg(r) = &mut o.kind
                    && r.def
                    && r.reg == t
                {
                    r.reg = d.reg;
                }
            }
            k += 1;
            dangling.clear();
        }
        i.guard = Some(guard);
        out.push(i);
    }
    Some(out)
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

/// Whether some block ends in a divergent conditional branch: the only thing [`if_convert`]
/// and [`find_regions`] look for, checked before they build the CFG and its post-dominators
/// (straight-line code has none, and then the pass costs a walk over the mnemonics).
fn has_divergent_branch(f: &Function) -> bool {
    f.blocks.iter().any(|b| {
        b.insts
            .iter()
            .any(|i| i.mnemonic == "BRA" && i.divergent && i.guard.is_some())
    })
}

fn find_regions(f: &Function) -> Vec<Region> {
    if !has_divergent_branch(f) {
        return Vec::new();
    }
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

/// The `WARPSYNC.ALL` before each `USETMAXREG` (`lower/isel/async_copy.rs`) goes where the warp
/// is provably converged, as ptxas drops it (pyptx `fa_ws_pingpong`, probes in
/// [`examples/reconverge/setmaxnreg_converged.ptx`](../../../docs/passes/examples/reconverge/setmaxnreg_converged.ptx)):
/// a block that a branch jumps to or a `BSSY` names keeps a `NOP` in its place, any other
/// loses it.
///
/// "Converged" is a forward must-analysis over the blocks, starting converged at a kernel's
/// entry (a subroutine's callers may have split the warp):
///
/// * a guarded `BRA` that is not provably uniform makes both successors non-converged — every
///   guarded branch is a candidate of the divergence analysis here, not only those instruction
///   selection marked (`under_guard`'s branches around per-thread-guarded code are not);
/// * `BSSY Bk` remembers the state, `BSYNC Bk` restores it (the threads that passed the `BSSY`
///   meet again there);
/// * an unguarded `BAR.SYNC` or `WARPSYNC.ALL` makes the warp converged;
/// * `CALL`, an indirect branch and anything else that leaves the function's control flow make
///   it unknown (non-converged); a guarded `EXIT` changes nothing (exited threads leave the
///   warp).
///
/// Blocks meet with "and" (converged only when every predecessor is), iterated from
/// "converged" everywhere to the greatest fixed point, so a loop whose entry and back edges
/// are converged is.
fn drop_converged_warpsyncs(f: &mut Function) {
    let all = guarded_branches(f, |_| true);
    let cfg = Cfg::new(f);
    // Each round proves the `LDS`s that run converged by the branches the round before found
    // uniform, which may make more branches uniform; every round's facts rest on proven ones.
    let mut loads: Vec<(BlockId, usize)> = Vec::new();
    let mut warpsyncs = Vec::new();
    for _ in 0..8 {
        let (w, l) = converged_points(f, &cfg, &all, &loads);
        warpsyncs = w;
        if l == loads {
            break;
        }
        loads = l;
    }
    let n = f.blocks.len();
    let targets: FixedBitSet = {
        let mut t = FixedBitSet::with_capacity(n);
        for blk in &f.blocks {
            for i in &blk.insts {
                for o in &i.ops {
                    if let OpKind::Block(x) = o.kind {
                        t.insert(x.0 as usize);
                    }
                }
            }
        }
        t
    };
    // Back to front, so that removing one keeps the indices of the others in the block.
    for &(b, k) in warpsyncs.iter().rev() {
        if k == 0 && targets.contains(b.0 as usize) {
            f.block_mut(b).insts[k] = Inst::new("NOP", &[], vec![]);
        } else {
            f.block_mut(b).insts.remove(k);
        }
    }
}

/// The analysis of [`drop_converged_warpsyncs`] with the `LDS`s `loads` (sorted) known to run
/// converged: the `WARPSYNC.ALL`s before a `USETMAXREG` and the `LDS`s that run with the warp
/// converged, each as (block, index) in order.
#[allow(clippy::type_complexity)]
fn converged_points(
    f: &Function,
    cfg: &Cfg,
    all: &[(BlockId, usize)],
    loads: &[(BlockId, usize)],
) -> (Vec<(BlockId, usize)>, Vec<(BlockId, usize)>) {
    let divergent = divergent_branches(f, all, loads);
    let n = f.blocks.len();
    let mut divergent_at = vec![false; n];
    for (&(b, _), d) in all.iter().zip(&divergent) {
        divergent_at[b.0 as usize] |= *d;
    }
    /// Converged, and converged at each barrier's `BSSY` (bit k for `Bk`).
    #[derive(Clone, Copy, PartialEq)]
    struct State {
        converged: bool,
        at_bssy: u16,
    }
    let top = State {
        converged: true,
        at_bssy: u16::MAX,
    };
    let barrier = |i: &Inst| {
        i.ops.iter().find_map(|o| match o.kind {
            OpKind::Barrier(k) if usize::from(k) < BARRIERS => Some(k),
            _ => None,
        })
    };
    // The state after each instruction of `b` from the state at its start, and whether each
    // `WARPSYNC.ALL` before a `USETMAXREG` runs converged.
    let step = |b: BlockId,
                mut s: State,
                found: &mut Vec<(BlockId, usize)>,
                lds: &mut Vec<(BlockId, usize)>| {
        let insts = &f.block(b).insts;
        for (k, i) in insts.iter().enumerate() {
            match i.mnemonic {
                "LDS" if s.converged => lds.push((b, k)),
                "BSSY" => {
                    if let Some(bar) = barrier(i) {
                        s.at_bssy &= !(1 << bar);
                        s.at_bssy |= u16::from(s.converged) << bar;
                    }
                }
                "BSYNC" => {
                    s.converged = barrier(i).is_some_and(|bar| s.at_bssy & (1 << bar) != 0);
                }
                "BAR" if i.guard.is_none() && i.mods.first() == Some(&"SYNC") => {
                    s.converged = true;
                }
                "WARPSYNC" if i.guard.is_none() && i.mods == ["ALL"] => {
                    if s.converged && insts.get(k + 1).is_some_and(|n| n.mnemonic == "USETMAXREG") {
                        found.push((b, k));
                    }
                    s.converged = true;
                }
                m if m.starts_with("CALL") || m == "BRX" || m == "JMX" || m == "RET" => {
                    s.converged = false;
                }
                _ => {}
            }
        }
        s
    };
    let mut at_start = vec![top; n];
    at_start[0] = State {
        converged: f.is_entry,
        at_bssy: 0,
    };
    let mut found = Vec::new();
    let mut changed = true;
    while changed {
        changed = false;
        for b in f.block_ids() {
            if !cfg.is_reachable(b) {
                continue;
            }
            let mut out = step(b, at_start[b.0 as usize], &mut Vec::new(), &mut Vec::new());
            if divergent_at[b.0 as usize] {
                out.converged = false;
            }
            for &s in cfg.succs(b) {
                let into = &mut at_start[s.0 as usize];
                let met = State {
                    converged: into.converged && out.converged,
                    at_bssy: into.at_bssy & out.at_bssy,
                };
                if met != *into {
                    *into = met;
                    changed = true;
                }
            }
        }
    }
    let mut lds = Vec::new();
    for b in f.block_ids() {
        if cfg.is_reachable(b) {
            step(b, at_start[b.0 as usize], &mut found, &mut lds);
        }
    }
    (found, lds)
}
