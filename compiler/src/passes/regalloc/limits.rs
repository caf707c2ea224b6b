//! Register limits per `setmaxnreg` region: how many general registers a warp owns at each
//! point of a function that reconfigures its registers.
//!
//! `setmaxnreg.dec N` (`USETMAXREG.DEALLOC.CTAPOOL N`) gives the registers above `N` back to
//! the CTA's pool, and `setmaxnreg.inc N` (`USETMAXREG.TRY_ALLOC.CTAPOOL UP, N`, retried until
//! `UP` is true; `lower/isel/async_copy.rs`) takes registers up to `N`. A warp starts with the
//! launch allocation, the kernel's `.maxnreg`. The limit at a point is a forward dataflow over
//! the CFG: a `USETMAXREG` sets it to its `N` for what follows; at a join it is the smallest
//! limit of the predecessors (so a `TRY_ALLOC` retry loop keeps the limit from before the
//! `inc` at its head, and a warp that may arrive from either side of a `dec` is held to the
//! `dec`).
//!
//! The allocator gives each value a register below the smallest limit where the value is
//! defined, read or live ([`vreg_caps`]): a value live across a `dec` must fit under the
//! lower limit, and one defined after an `inc` may use the registers it gained. ptxas does the
//! same: in pyptx `fa_ws_pingpong` (`.maxnreg 168`) its producer warps use only `R0`–`R4`
//! after `setmaxnreg.dec 40`, its consumer warpgroups up to `R201` after
//! `setmaxnreg.inc 232`, and the kernel's register count (`EIATTR_REGCOUNT`, `-v` "Used 168
//! registers") is the launch allocation, `.maxnreg`, not the most any region uses
//! (`emit/build.rs`; probe `tests/sass-probes/ptx/setmaxnreg.ptx`).

use crate::mir::cfg::Cfg;
use crate::mir::liveness::Liveness;
use crate::mir::{Function, Inst, OpKind, Reg, RegClass};
use rustc_hash::FxHashSet;

/// The general-register limit `inst` sets for the instructions after it, if it is a
/// `USETMAXREG` (`DEALLOC N` or `TRY_ALLOC UP, N`).
pub fn set_by(inst: &Inst) -> Option<u32> {
    if inst.mnemonic != "USETMAXREG" {
        return None;
    }
    inst.ops.iter().find_map(|o| match o.kind {
        OpKind::Int(n) => u32::try_from(n).ok(),
        _ => None,
    })
}

/// Whether `f` reconfigures its registers anywhere.
pub fn has_setmaxnreg(f: &Function) -> bool {
    f.blocks
        .iter()
        .any(|b| b.insts.iter().any(|i| i.mnemonic == "USETMAXREG"))
}

/// The limit in force at the entry of every block (registers a warp owns, as `setmaxnreg`
/// counts them): `launch` at the function's entry, the smallest predecessor's limit at a join.
pub fn block_entry_limits(f: &Function, cfg: &Cfg, launch: u32) -> Vec<u32> {
    let nb = f.blocks.len();
    let mut entry: Vec<Option<u32>> = vec![None; nb];
    entry[0] = Some(launch);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in &cfg.rpo {
            let Some(mut limit) = entry[b.0 as usize] else {
                continue;
            };
            for inst in &f.block(b).insts {
                limit = set_by(inst).unwrap_or(limit);
            }
            for &s in cfg.succs(b) {
                let slot = &mut entry[s.0 as usize];
                let new = slot.map_or(limit, |old| old.min(limit));
                if *slot != Some(new) {
                    *slot = Some(new);
                    changed = true;
                }
            }
        }
    }
    entry.into_iter().map(|l| l.unwrap_or(launch)).collect()
}

/// Per vreg, the smallest limit in force where it is defined, read or live (`u32::MAX` for a
/// vreg that never appears or is not a general register), or `None` when `f` has no
/// `USETMAXREG` (the launch limit holds everywhere).
pub fn vreg_caps(f: &Function, cfg: &Cfg, live: &Liveness, launch: u32) -> Option<Vec<u32>> {
    if !has_setmaxnreg(f) {
        return None;
    }
    let entry = block_entry_limits(f, cfg, launch);
    let mut cap = vec![u32::MAX; f.vregs.len()];
    let gpr = |r: &Reg| r.vreg().filter(|v| f.vreg(*v).class == RegClass::Gpr);
    let lower = |v: u32, limit: u32, cap: &mut Vec<u32>| {
        let c = &mut cap[v as usize];
        *c = (*c).min(limit);
    };
    for b in f.block_ids() {
        let bi = b.0 as usize;
        let insts = &f.block(b).insts;
        if !insts.iter().any(|i| set_by(i).is_some()) {
            // One limit for the whole block: everything live or mentioned in it is held to it.
            let limit = entry[bi];
            for &v in live.live_in[bi].iter().chain(&live.live_out[bi]) {
                lower(v, limit, &mut cap);
            }
            for r in insts.iter().flat_map(Inst::regs) {
                if let Some(v) = gpr(&r.reg) {
                    lower(v.0, limit, &mut cap);
                }
            }
            continue;
        }
        // The limit before each instruction, then a backward walk with the live set: a value
        // live after an instruction is held to the limit after it (a `dec` included), the
        // values an instruction reads or writes to the limit before it.
        let mut before = Vec::with_capacity(insts.len());
        let mut limit = entry[bi];
        for inst in insts {
            before.push(limit);
            limit = set_by(inst).unwrap_or(limit);
        }
        let mut live_now: FxHashSet<u32> = live.live_out[bi].iter().copied().collect();
        for (k, inst) in insts.iter().enumerate().rev() {
            let after = set_by(inst).unwrap_or(before[k]);
            for &v in &live_now {
                lower(v, after, &mut cap);
            }
            for r in inst.regs() {
                if let Some(v) = gpr(&r.reg) {
                    lower(v.0, before[k], &mut cap);
                }
            }
            // A definition of every word, unguarded and not reading the value, ends its
            // liveness above the instruction.
            for d in inst.defs() {
                if let Reg::Virt { vreg, first, count } = d
                    && first == 0
                    && count == f.vreg(vreg).words
                    && inst.guard.is_none()
                    && !inst.uses().any(|u| u.vreg() == Some(vreg))
                {
                    live_now.remove(&vreg.0);
                }
            }
            for u in inst.uses() {
                if let Some(v) = u.vreg() {
                    live_now.insert(v.0);
                }
            }
        }
        for &v in &live.live_in[bi] {
            lower(v, entry[bi], &mut cap);
        }
    }
    // Only general registers are limited.
    for (v, c) in cap.iter_mut().enumerate() {
        if f.vregs[v].class != RegClass::Gpr {
            *c = u32::MAX;
        }
    }
    Some(cap)
}
