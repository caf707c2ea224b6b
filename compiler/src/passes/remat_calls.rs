//! `remat-calls`: a constant-bank load whose value is needed after a `CALL` is loaded again
//! after the call instead of being kept across it.
//!
//! A value live after a `CALL` must sit in a register the callee does not write
//! ([regalloc](../../../docs/passes/regalloc.md): `call_clobbers`, `call_clobber_set`), which
//! pushes it above everything the callee touches and raises the kernel's register count. ptxas
//! keeps only what it cannot recompute: a kernel parameter read with `LDC` from the constant
//! bank is read again where it is needed after the call (`cuobjdump -sass` of ptxas 13.1,
//! `-arch sm_90a`):
//!
//! * zluda `call`: the output address `LDC.64 R4, c[0x0][0x218]` right after
//!   `CALL.REL.NOINC`, not before it; 10 registers.
//! * zluda `div_noftz`, `div_ftz`, `sqrt_rn_ftz`, `rcp_f64`, `rsqrt`: the output address is
//!   loaded at the join after the slow path's call (`@!P0 BRA` jumps to the `LDC.64 R4,
//!   c[0x0][0x218]` that precedes the store), on both paths.
//! * ptxas keeps the global memory descriptor (`ULDC.64 UR4, c[0x0][0x208]`) in UR4 across
//!   the call: a uniform register, outside what its subroutines write. So only loads into the
//!   general registers are reloaded here.
//!
//! The rule, on SSA form: a value defined by an unguarded `LDC d, c[b][imm]` (no register in
//! the address) is *crossing* a `CALL` where it is live just after it. Its uses after such a
//! call read a copy of the load instead: in the call's block, a copy right after the `CALL`;
//! in a block the value reaches from such a call while live (a join after a slow path, a later
//! block), a copy at the top of the block, or right after a later `CALL` in it. A block keeps
//! one copy until its next call. `PHI` arguments keep the original value. The original load,
//! if nothing reads it any more, is deleted (`dce`). Under `-g` the pass does not run (the
//! pipeline leaves it out, as ptxas's debug code keeps values where the PTX has them).

use super::Pass;
use crate::mir::cfg::Cfg;
use crate::mir::liveness::Liveness;
use crate::mir::{BlockId, Function, Inst, OpKind, RegClass, VReg};

pub struct RematCalls;

/// `LDC d, c[bank][imm]` defining a general virtual register as a whole: a load that reads
/// the same value wherever it runs.
fn reloadable(f: &Function, inst: &Inst) -> Option<VReg> {
    if inst.mnemonic != "LDC" || inst.guard.is_some() {
        return None;
    }
    let [d, s] = &inst.ops[..] else {
        return None;
    };
    if !matches!(s.kind, OpKind::CBank { base: None, .. }) {
        return None;
    }
    let OpKind::Reg(r) = d.kind else {
        return None;
    };
    let v = r.reg.vreg()?;
    let info = f.vreg(v);
    (r.def
        && info.class == RegClass::Gpr
        && r.reg.count() == info.words
        && !f.fixed.iter().any(|&(x, _)| x == v))
    .then_some(v)
}

fn is_call(inst: &Inst) -> bool {
    inst.mnemonic == "CALL"
}

/// A call to a recursive or address-taken subroutine (one not caller-saved: its name is not in
/// [`Function::callee_writes`]). A function with one is left alone: the scoreboard pass does
/// not yet see the reads such a callee leaves in flight at its `RET` (its restore `BMOV.32 B0,
/// R0`) when the caller writes that register soon after the return
/// (`tests/kernels/device_calls.ptx`: a reloaded `LDC R0` without a wait on the `BMOV`'s read
/// scoreboard, found by the `hazards` test).
fn calls_saving_subroutine(f: &Function, inst: &Inst) -> bool {
    is_call(inst)
        && !is_external_call(inst)
        && inst.ops.iter().any(
            |o| matches!(&o.kind, OpKind::Func(n) if !f.callee_writes.iter().any(|(c, _)| c == n)),
        )
}

/// A call out of the module (`CALL.ABS` through the register its first operand names,
/// `lower/isel/call.rs`); a `CALL.ABS` naming its callee first calls a `.func` of the module
/// in a section of its own (debug builds), which saves registers as a subroutine does.
fn is_external_call(inst: &Inst) -> bool {
    inst.mods.contains(&"ABS")
        && !matches!(inst.ops.first().map(|o| &o.kind), Some(OpKind::Func(_)))
}

/// Whether `inst` reads `v` (a `PHI` argument does not count: it is read in the predecessor).
fn reads(inst: &Inst, v: VReg) -> bool {
    !inst.is_phi() && inst.uses().any(|r| r.vreg() == Some(v))
}

impl Pass for RematCalls {
    fn name(&self) -> &'static str {
        "remat-calls"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        let insts = || f.blocks.iter().flat_map(|b| &b.insts);
        if !f.ssa || !insts().any(is_call) || insts().any(|i| calls_saving_subroutine(f, i)) {
            return Ok(());
        }
        let cfg = Cfg::new(f);
        let live = Liveness::compute(f, &cfg);
        // The candidates with the block and index of their load.
        let mut loads: Vec<(VReg, BlockId, usize)> = Vec::new();
        for b in f.block_ids() {
            for (k, inst) in f.block(b).insts.iter().enumerate() {
                if let Some(v) = reloadable(f, inst) {
                    loads.push((v, b, k));
                }
            }
        }
        let mut changed = false;
        for (v, def_block, def_at) in loads {
            changed |= reload_after_calls(f, &cfg, &live, v, def_block, def_at);
        }
        if changed {
            super::cleanup::DeadCode.run(f)?;
        }
        Ok(())
    }
}

/// Reloads `v` (loaded at `def_at` in `def_block`) for its uses after the calls it would
/// cross. Returns whether anything changed.
fn reload_after_calls(
    f: &mut Function,
    cfg: &Cfg,
    live: &Liveness,
    v: VReg,
    def_block: BlockId,
    def_at: usize,
) -> bool {
    // The calls `v` is live after: in its block after its load, or in a block it is live into,
    // with a read after the call in the same block or `v` live out of it.
    let crossing = |f: &Function, b: BlockId, k: usize| {
        (b != def_block || k > def_at)
            && (b == def_block || live.is_live_in(b, v))
            && (live.is_live_out(b, v) || f.block(b).insts[k + 1..].iter().any(|i| reads(i, v)))
    };
    let mut call_blocks: Vec<BlockId> = Vec::new();
    for b in f.block_ids() {
        if !cfg.is_reachable(b) {
            continue;
        }
        let insts = &f.block(b).insts;
        if (0..insts.len()).any(|k| is_call(&insts[k]) && crossing(f, b, k)) {
            call_blocks.push(b);
        }
    }
    if call_blocks.is_empty() {
        return false;
    }
    // The blocks `v` reaches live from such a call: its value there may have crossed it.
    let mut tainted = vec![false; f.blocks.len()];
    let mut stack: Vec<BlockId> = Vec::new();
    for &c in &call_blocks {
        if live.is_live_out(c, v) {
            stack.extend_from_slice(cfg.succs(c));
        }
    }
    while let Some(b) = stack.pop() {
        if b == def_block || !live.is_live_in(b, v) || tainted[b.0 as usize] {
            continue;
        }
        tainted[b.0 as usize] = true;
        stack.extend_from_slice(cfg.succs(b));
    }
    let load = f.block(def_block).insts[def_at].clone();
    let info = f.vreg(v).clone();
    let mut changed = false;
    for b in f.block_ids().collect::<Vec<_>>() {
        if !tainted[b.0 as usize] && !call_blocks.contains(&b) {
            continue;
        }
        let start = if b == def_block { def_at + 1 } else { 0 };
        // Where a copy goes (`Some(index)`) before the next read, and the copy in use.
        let top = f.block(b).insts.iter().take_while(|i| i.is_phi()).count();
        let mut slot: Option<usize> = tainted[b.0 as usize].then_some(top.max(start));
        let mut copy: Option<VReg> = None;
        let mut inserts: Vec<(usize, VReg)> = Vec::new();
        let n = f.block(b).insts.len();
        for k in start..n {
            if reads(&f.block(b).insts[k], v) {
                if copy.is_none()
                    && let Some(at) = slot
                {
                    let c = f.new_vreg(info.class, info.words, info.hint.clone());
                    inserts.push((at, c));
                    copy = Some(c);
                }
                if let Some(c) = copy {
                    for o in &mut f.block_mut(b).insts[k].ops {
                        for r in o.regs_mut() {
                            if let crate::mir::Reg::Virt { vreg, .. } = r
                                && *vreg == v
                            {
                                *vreg = c;
                            }
                        }
                    }
                    changed = true;
                }
            }
            if is_call(&f.block(b).insts[k]) {
                slot = Some(k + 1);
                copy = None;
            }
        }
        for &(at, c) in inserts.iter().rev() {
            let mut inst = load.clone();
            inst.src = None;
            for o in &mut inst.ops {
                for r in o.regs_mut() {
                    if let crate::mir::Reg::Virt { vreg, .. } = r {
                        *vreg = c;
                    }
                }
            }
            f.block_mut(b).insts.insert(at, inst);
        }
    }
    changed
}
