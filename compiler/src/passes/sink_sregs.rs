//! `sink-sregs`: the CTA-rank values that instruction selection defines once in the entry
//! block are moved to where ptxas computes them, next to their uses.
//!
//! Instruction selection reads `SR_CgaCtaId` and `SR_SWINHI` once per function and builds the
//! shared base `(SR_CgaCtaId << 24) + 0x400` (`MOV k, 0x400; LEA base, rank, k, 0x18`) once,
//! all at the start of the entry block (`lower/isel/address.rs`), so that one definition
//! dominates every use. ptxas computes them where the PTX asks for them (`mov.u32 %r, smem`,
//! `mov.u32 %r, %cluster_ctarank`, a `.shared::cluster` access), like any other special
//! register read (`S2R SR_TID.X` is where `mov %r, %tid.x` is, in ptxc too). The rule, as the
//! probes of `shared/notes/probes` show it:
//!
//! * **The reads sit in the block of their uses.** When every use is in a block other than the
//!   entry, ptxas reads the registers there: `07_exit/two_exits__*` (the `S2UR SR_CgaCtaId`
//!   and `S2UR SR_SWINHI` follow the `@!P0 BRA` into the block that stores to the peer CTA),
//!   `07_exit/sync_dsmem_ld__{none,maxrank2,reqn2}` (after the join of the `barrier.cluster`
//!   diamond, i.e. after the `BAR.SYNC` of its non-cluster side) and pyptx `fa_ws_pingpong`
//!   (inside the branch of each warp role). The block is the nearest common dominator of the
//!   uses; the pass never moves a read into a loop (it stops at the nearest dominator outside
//!   every cycle), so a value is still computed once.
//! * **In that block the reads come first** (ptxas issues its long-latency `S2R`s early, even
//!   above a cluster barrier: `sync_dsmem_ld__explicit`, one block, has `S2UR SR_CgaCtaId`,
//!   `S2UR SR_SWINHI` before `MEMBAR.ALL.GPU … UCGABAR_WAIT; CCTL.IVALL`).
//! * **The arithmetic on them does not cross a barrier** before its first use: in
//!   `sync_dsmem_ld__explicit` the `ULEA …, 0x18` of the shared base comes after
//!   `UCGABAR_WAIT; CCTL.IVALL`, next to the `UPRMT …0x654` of the `mapa` that uses it. So the
//!   `MOV 0x400; LEA` pair is placed after the last barrier or fence (`BAR`, `UCGABAR_*`,
//!   `MEMBAR`, `ERRBAR`, `CGAERRBAR`, `CCTL`, `FENCE`) that precedes the first use in its block.
//!
//! Everything else stays where selection put it: other entry values (the `c[0x0][0x140]` test
//! of `barrier.cluster`, parameter loads, the global descriptor) and the uniform copies the
//! uniform datapath rematerialises (`S2UR`), which are already selected next to their uses.
//! `tests/tests/cluster_recipes.rs` checks the order on every cluster probe.

use super::Pass;
use crate::mir::cfg::Cfg;
use crate::mir::{BlockId, Function, Inst, OpKind, VReg};

/// `SR_CgaCtaId`, `SR_SWINHI` (`lower::isel::sr`).
const RANK_SREGS: [u8; 2] = [0x88, 0x2f];

pub struct SinkSregs;

/// `S2R d, SR_CgaCtaId` or `S2R d, SR_SWINHI`, defining a virtual register.
fn rank_read(inst: &Inst) -> Option<VReg> {
    if inst.mnemonic != "S2R" || inst.guard.is_some() {
        return None;
    }
    match &inst.ops[..] {
        [d, s] if matches!(s.kind, OpKind::SReg(n) if RANK_SREGS.contains(&n)) => single_def(d),
        _ => None,
    }
}

/// The virtual register an operand defines as a whole (one word).
fn single_def(d: &crate::mir::Operand) -> Option<VReg> {
    match d.kind {
        OpKind::Reg(r) if r.def && r.reg.count() == 1 => r.reg.vreg(),
        _ => None,
    }
}

/// `LEA base, rank, k, 0x18` where `rank` is an entry read of `SR_CgaCtaId`: the shared base.
fn shared_base(inst: &Inst) -> Option<(VReg, VReg, VReg)> {
    if inst.mnemonic != "LEA" || inst.guard.is_some() || !inst.mods.is_empty() {
        return None;
    }
    let [d, a, b, s] = &inst.ops[..] else {
        return None;
    };
    if s.kind != OpKind::Int(0x18) {
        return None;
    }
    let used = |o: &crate::mir::Operand| match o.kind {
        OpKind::Reg(r) if !r.def && r.reg.count() == 1 => r.reg.vreg(),
        _ => None,
    };
    Some((single_def(d)?, used(a)?, used(b)?))
}

/// A barrier or fence: what ptxas does not move the rank arithmetic above.
fn is_barrier(inst: &Inst) -> bool {
    matches!(
        inst.mnemonic,
        "BAR"
            | "UCGABAR_ARV"
            | "UCGABAR_WAIT"
            | "MEMBAR"
            | "ERRBAR"
            | "CGAERRBAR"
            | "CCTL"
            | "FENCE"
    )
}

/// Where a value is used: `(block, index)`; a `PHI` argument counts as a use at the end of
/// its predecessor (index `usize::MAX`).
fn uses_of(f: &Function, v: VReg) -> Vec<(BlockId, usize)> {
    let mut out = Vec::new();
    for b in f.block_ids() {
        for (k, inst) in f.block(b).insts.iter().enumerate() {
            if inst.is_phi() {
                for o in &inst.ops {
                    if let OpKind::PhiArg(p, r) = o.kind
                        && r.vreg() == Some(v)
                    {
                        out.push((p, usize::MAX));
                    }
                }
            } else if inst.uses().any(|r| r.vreg() == Some(v)) {
                out.push((b, k));
            }
        }
    }
    out
}

/// The nearest common dominator of two blocks.
fn common_dominator(cfg: &Cfg, a: BlockId, b: BlockId) -> BlockId {
    let mut cur = a;
    while !cfg.dominates(cur, b) {
        match cfg.idom(cur) {
            Some(d) => cur = d,
            None => return BlockId(0),
        }
    }
    cur
}

/// Whether `b` lies on a cycle (it can reach itself).
fn in_cycle(cfg: &Cfg, b: BlockId) -> bool {
    let mut seen = vec![false; cfg.succs.len()];
    let mut stack: Vec<BlockId> = cfg.succs(b).to_vec();
    while let Some(c) = stack.pop() {
        if c == b {
            return true;
        }
        if !std::mem::replace(&mut seen[c.0 as usize], true) {
            stack.extend_from_slice(cfg.succs(c));
        }
    }
    false
}

/// The block a value used at `uses` goes to: the nearest common dominator of the uses, or the
/// nearest dominator of it that lies on no cycle.
fn target_block(cfg: &Cfg, uses: &[(BlockId, usize)]) -> BlockId {
    let entry = BlockId(0);
    let Some(&(first, _)) = uses.first() else {
        return entry;
    };
    if uses.iter().any(|&(b, _)| !cfg.is_reachable(b)) {
        return entry;
    }
    let mut t = uses
        .iter()
        .fold(first, |t, &(b, _)| common_dominator(cfg, t, b));
    while t != entry && in_cycle(cfg, t) {
        t = cfg.idom(t).unwrap_or(entry);
    }
    t
}

/// The index in `t` after the last barrier that precedes the first use in `t` (0 when none).
fn after_last_barrier(f: &Function, t: BlockId, uses: &[(BlockId, usize)]) -> usize {
    let insts = &f.block(t).insts;
    let first_use = uses
        .iter()
        .filter(|&&(b, _)| b == t)
        .map(|&(_, k)| k.min(insts.len()))
        .min()
        .unwrap_or(insts.len());
    insts[..first_use]
        .iter()
        .rposition(is_barrier)
        .map_or(0, |k| k + 1)
}

/// The index after the `PHI`s at the top of `t`.
fn after_phis(f: &Function, t: BlockId) -> usize {
    f.block(t).insts.iter().take_while(|i| i.is_phi()).count()
}

impl Pass for SinkSregs {
    fn name(&self) -> &'static str {
        "sink-sregs"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        if !f.ssa
            || f.blocks.is_empty()
            || !f
                .block(BlockId(0))
                .insts
                .iter()
                .any(|i| rank_read(i).is_some())
        {
            return Ok(());
        }
        let cfg = Cfg::new(f);
        // The shared base first: it reads the rank, so where it goes decides where the rank
        // read may go.
        sink_shared_base(f, &cfg);
        sink_reads(f, &cfg);
        Ok(())
    }
}

/// Moves the entry's `LEA base, rank, k, 0x18` (with its `MOV k, 0x400` when the LEA is that
/// constant's only reader) to its target block, after the last barrier before its first use.
fn sink_shared_base(f: &mut Function, cfg: &Cfg) {
    let entry = BlockId(0);
    let Some((at, (base, _, k))) = f
        .block(entry)
        .insts
        .iter()
        .enumerate()
        .find_map(|(i, inst)| {
            shared_base(inst)
                .filter(|&(_, rank, _)| is_rank_def(f, rank))
                .map(|lea| (i, lea))
        })
    else {
        return;
    };
    let uses = uses_of(f, base);
    if uses.is_empty() {
        return;
    }
    let t = target_block(cfg, &uses);
    let pos = after_last_barrier(f, t, &uses);
    if t == entry && pos <= at {
        return;
    }
    let mov_at = f.block(entry).insts[..at]
        .iter()
        .position(|i| i.mnemonic == "MOV" && i.guard.is_none() && defines(i, k))
        .filter(|_| uses_of(f, k) == [(entry, at)]);
    let lea = f.block_mut(entry).insts.remove(at);
    let mov = mov_at.map(|m| f.block_mut(entry).insts.remove(m));
    // Removing from the entry shifts the later positions in it.
    let pos = if t == entry {
        pos - 1 - usize::from(mov.is_some())
    } else {
        pos.max(after_phis(f, t))
    };
    let insts = &mut f.block_mut(t).insts;
    insts.insert(pos, lea);
    if let Some(mov) = mov {
        insts.insert(pos, mov);
    }
}

/// Moves each entry read of `SR_CgaCtaId`/`SR_SWINHI` to the top of its target block, in
/// their order.
fn sink_reads(f: &mut Function, cfg: &Cfg) {
    let entry = BlockId(0);
    let mut placed: Vec<BlockId> = Vec::new();
    let mut k = 0;
    while k < f.block(entry).insts.len() {
        let Some(v) = rank_read(&f.block(entry).insts[k]) else {
            k += 1;
            continue;
        };
        let t = target_block(cfg, &uses_of(f, v));
        if t == entry {
            k += 1;
            continue;
        }
        let inst = f.block_mut(entry).insts.remove(k);
        let pos = after_phis(f, t) + placed.iter().filter(|&&b| b == t).count();
        f.block_mut(t).insts.insert(pos, inst);
        placed.push(t);
    }
}

/// Whether `inst` defines `v`.
fn defines(inst: &Inst, v: VReg) -> bool {
    inst.defs().any(|r| r.vreg() == Some(v))
}

/// Whether `v` is defined by an entry read of `SR_CgaCtaId`.
fn is_rank_def(f: &Function, v: VReg) -> bool {
    f.block(BlockId(0))
        .insts
        .iter()
        .any(|i| rank_read(i) == Some(v) && i.ops[1].kind == OpKind::SReg(RANK_SREGS[0]))
}
