//! `peel-wait`: the first `mbarrier.try_wait` of a spin loop runs before the loop, and the
//! loop moves out of line, as ptxas does.
//!
//! A PTX wait loop (`LOOP: mbarrier.try_wait… p, [bar], phase; @!p bra LOOP;`) is, after
//! instruction selection and `out-of-ssa`, one block that computes the barrier's address and
//! phase and waits. ptxas 13.1 (at `-O2` and `-O3`, not under `-O0`, `-O1` or `-g`) compiles
//! it as one wait in line and a retry loop after the function's last block
//! (`shared/notes/probes/09_mbarrier/try_wait_loop`; `docs/passes/peel-wait.md` has the
//! other probes and the corpus kernels):
//!
//! ```text
//!  LOOP: ULEA UR4, …                          ULEA UR4, …
//!        SYNCS….TRYWAIT P0, [UR4], R5         SYNCS….TRYWAIT P0, [UR4], R5
//!   @!P0 BRA LOOP                       @!P0 BRA retry
//!  cont: …                              cont: …
//!                              →              EXIT
//!                                      retry: SYNCS….TRYWAIT P0, [UR4], R5
//!                                        @!P0 BRA retry
//!                                             BRA cont
//! ```
//!
//! The loop block is split at its `SYNCS.PHASECHK.TRANS64.TRYWAIT`: what comes before it
//! (the address and phase, pure and loop-invariant) runs once; the wait and what decides the
//! branch from it (the suspend-time hint's `@!P0 NANOSLEEP.SYNCS; @!P0 SYNCS.PHASECHK`, a
//! `SEL`/`ISETP` of the predicate) is copied into the retry block, which branches to itself
//! while the wait fails and then to the block after the loop. Neither branch gets a
//! convergence barrier: ptxas brackets none of them (it takes the result of a `SYNCS.PHASECHK`
//! to be the same in the whole warp). The loop `@p bra DONE; bra LOOP; DONE:` (CUTLASS's
//! `ClusterBarrier::wait`) is first turned into the same shape.
//!
//! Only that shape is peeled, as in ptxas: a `test_wait` loop, or one that does other work
//! (a counter), stays as written. Runs after `out-of-ssa` (the copies share the registers of
//! the original, so no `PHI` is needed where the two paths meet) and before `reconverge`.

use super::Pass;
use crate::mir::{BlockId, Function, Inst, OpKind, Reg, VReg, cfg};
use crate::target::sm90a::print::SR_NAMES;

pub struct PeelWait;

impl Pass for PeelWait {
    fn name(&self) -> &'static str {
        "peel-wait"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        let mut removed_a_block = false;
        for b in f.block_ids().collect::<Vec<_>>() {
            let Some(shape) = wait_loop(f, b) else {
                continue;
            };
            if let Some(back) = shape.back_block {
                // `@p BRA cont` + a block `BRA b` → `@!p BRA b`, falling through to `cont`.
                let last = f.block_mut(b).insts.last_mut().expect("a branch");
                let guard = last.guard.as_mut().expect("a guarded branch");
                guard.neg = !guard.neg;
                last.ops[0].kind = OpKind::Block(b);
                f.block_mut(b).fallthrough = Some(shape.cont);
                f.block_mut(back).insts.clear();
                f.block_mut(back).fallthrough = None;
                removed_a_block = true;
            }
            peel(f, b, shape.wait, shape.cont);
        }
        if removed_a_block {
            cfg::remove_unreachable(f);
        }
        Ok(())
    }
}

/// A wait loop found by [`wait_loop`].
struct Shape {
    /// The index of the `SYNCS….TRYWAIT` in the loop block.
    wait: usize,
    /// Where control goes when the wait succeeds.
    cont: BlockId,
    /// The block `BRA b` of the loop `@p BRA cont; BRA b`, which goes.
    back_block: Option<BlockId>,
}

/// Whether block `b` is a wait loop ptxas peels: `[pure, loop-invariant code]
/// SYNCS.PHASECHK.TRANS64.TRYWAIT p …; [what decides the branch from p]; @c BRA b`, falling
/// through to the block after the loop; or the same ending `@c BRA cont` and falling through
/// to a block that only branches back to `b`.
fn wait_loop(f: &Function, b: BlockId) -> Option<Shape> {
    let block = f.block(b);
    let branch = block.insts.last()?;
    if branch.mnemonic != "BRA"
        || !branch.mods.is_empty()
        || branch.guard.is_none()
        || branch.ops.len() != 1
    {
        return None;
    }
    let OpKind::Block(target) = branch.ops[0].kind else {
        return None;
    };
    let next = block.fallthrough?;
    let (cont, back_block) = if target == b {
        (next, None)
    } else {
        // `@p BRA cont` falling into `BRA b`, which nothing else reaches.
        let back = f.block(next);
        let [bra] = &back.insts[..] else { return None };
        if bra.mnemonic != "BRA"
            || bra.guard.is_some()
            || bra.ops.first().map(|o| &o.kind) != Some(&OpKind::Block(b))
            || f.block_ids()
                .any(|x| x != b && f.successors(x).contains(&next))
        {
            return None;
        }
        (target, Some(next))
    };
    if cont == b {
        return None;
    }
    let insts = &block.insts[..block.insts.len() - 1];
    let wait = insts.iter().position(is_try_wait)?;
    let (before, after) = (&insts[..wait], &insts[wait..]);
    // What runs before the wait must give the same values on every trip: pure, and reading
    // only registers that nothing in the block writes, or that an earlier instruction before
    // the wait wrote (and nothing else in the block writes again).
    let written_in_block = |r: Reg, except: usize| {
        block.insts.iter().enumerate().any(|(k, i)| {
            k != except && i.defs().any(|d| d.vreg().is_some() && d.vreg() == r.vreg())
        })
    };
    for (k, i) in before.iter().enumerate() {
        if !pure(i) {
            return None;
        }
        for u in i.uses() {
            let Some(v) = u.vreg() else { continue };
            let defs: Vec<usize> = (0..block.insts.len())
                .filter(|&j| block.insts[j].defs().any(|d| d.vreg() == Some(v)))
                .collect();
            if !(defs.is_empty() || defs.len() == 1 && defs[0] < k) {
                return None;
            }
        }
        if i.defs()
            .any(|d| !discarded(d) && (d.vreg().is_none() || written_in_block(d, k)))
        {
            return None;
        }
    }
    // From the wait on: the wait, the suspend-time hint's sleep and second check, the
    // `@P0 CCTL.IVALL` of an `.acquire.cluster` wait (09_mbarrier/
    // try_wait_parity_acquire_cluster: ptxas peels it with the wait), and pure instructions
    // whose results the rest of the loop reads (what turns the wait's predicate into the
    // branch's condition); a counter or other work is not peeled (ptxas does not).
    for (k, i) in after.iter().enumerate().skip(1) {
        let recipe = i.mnemonic == "NANOSLEEP"
            || is_phase_check(i)
            || i.mnemonic == "CCTL" && i.mods == ["IVALL"];
        if !recipe && !pure(i) {
            return None;
        }
        let read_later = i.defs().all(|d| {
            discarded(d)
                || after[k + 1..]
                    .iter()
                    .chain(std::iter::once(branch))
                    .any(|j| j.uses().any(|u| u.vreg().is_some() && u.vreg() == d.vreg()))
        });
        if !recipe && !read_later {
            return None;
        }
    }
    Some(Shape {
        wait,
        cont,
        back_block,
    })
}

/// A write to `RZ`, `PT`, `URZ` or `UPT`, which keeps nothing (`ISETP p, PT, …`).
fn discarded(r: Reg) -> bool {
    matches!(r, Reg::Phys { reg, .. } if reg.is_zero())
}

/// `SYNCS.PHASECHK.TRANS64.TRYWAIT` (`mbarrier.try_wait[.parity]`).
fn is_try_wait(i: &Inst) -> bool {
    is_phase_check(i) && i.mods.contains(&"TRYWAIT")
}

/// `SYNCS.PHASECHK…` (`mbarrier.test_wait`/`try_wait`).
fn is_phase_check(i: &Inst) -> bool {
    i.mnemonic == "SYNCS" && i.mods.first() == Some(&"PHASECHK")
}

/// Instructions whose results depend only on their operands: the integer and predicate
/// arithmetic instruction selection builds mbarrier addresses and phases with, constant-bank
/// loads, and special-register reads other than the clocks.
fn pure(i: &Inst) -> bool {
    match i.mnemonic {
        "COPY" | "MOV" | "UMOV" | "IADD3" | "UIADD3" | "VIADD" | "LEA" | "ULEA" | "SHF"
        | "USHF" | "LOP3" | "ULOP3" | "IMAD" | "UIMAD" | "PRMT" | "UPRMT" | "SEL" | "USEL"
        | "ISETP" | "UISETP" | "PLOP3" | "UPLOP3" | "LDC" | "ULDC" | "R2UR" => true,
        "S2R" | "S2UR" => i.ops.iter().all(|o| match o.kind {
            OpKind::SReg(n) => {
                let name = SR_NAMES[n as usize];
                !name.contains("CLOCK") && !name.contains("TIMER")
            }
            _ => true,
        }),
        _ => false,
    }
}

/// Splits the wait loop `b` at its wait (index `wait`): `b` keeps what comes before the wait
/// and the wait ([`first_try`]) and branches to a new block at the end of the function, which
/// repeats the wait and what follows it, loops on itself and then falls through (a `BRA`, as
/// it is not adjacent) to `cont`.
fn peel(f: &mut Function, b: BlockId, wait: usize, cont: BlockId) {
    let retry = f.new_block(None);
    let mut insts = f.block(b).insts[wait..].to_vec();
    let branch = insts.last_mut().expect("the loop branch");
    branch.ops[0].kind = OpKind::Block(retry);
    branch.divergent = false;
    let first = first_try(f, b, &insts);
    rename_locals(f, b, &mut insts);
    let block = f.block_mut(b);
    block.insts.truncate(wait);
    block.insts.extend(first);
    let block = f.block_mut(retry);
    block.insts = insts;
    block.fallthrough = Some(cont);
}

/// Gives the values the retry block's `insts` compute and nothing after the loop reads (the
/// wait's predicate, a `SEL`/`ISETP` of it) registers of their own. The allocator's intervals
/// have no holes (`docs/passes/regalloc.md`), so a register shared with the loop block would
/// be live from there to the retry block at the end of the function: pyptx `matmul_tma_v34`
/// then needs more than the 7 predicate registers.
fn rename_locals(f: &mut Function, b: BlockId, insts: &mut [Inst]) {
    let mut renamed: Vec<(VReg, VReg)> = Vec::new();
    for i in insts.iter() {
        for d in i.defs() {
            let Some(v) = d.vreg() else { continue };
            // Only a value the block writes before it reads it (not one carried around).
            let first = insts
                .iter()
                .position(|j| j.regs().any(|r| r.reg.vreg() == Some(v)));
            let read_first = first.is_some_and(|k| insts[k].uses().any(|u| u.vreg() == Some(v)));
            if renamed.iter().any(|(old, _)| *old == v) || read_first || read_elsewhere(f, b, v) {
                continue;
            }
            let info = f.vreg(v).clone();
            renamed.push((v, f.new_vreg(info.class, info.words, info.hint)));
        }
    }
    let rename = |r: &mut Reg| {
        if let Reg::Virt { vreg, .. } = r
            && let Some((_, new)) = renamed.iter().find(|(old, _)| old == vreg)
        {
            *vreg = *new;
        }
    };
    for i in insts {
        if let Some(g) = &mut i.guard {
            rename(&mut g.pred);
        }
        for o in &mut i.ops {
            o.regs_mut().for_each(rename);
        }
    }
}

/// Whether a block other than `b` reads `v`.
fn read_elsewhere(f: &Function, b: BlockId, v: VReg) -> bool {
    f.block_ids().filter(|&x| x != b).any(|x| {
        f.block(x)
            .insts
            .iter()
            .any(|i| i.uses().any(|u| u.vreg() == Some(v)))
    })
}

/// The wait that runs before the loop, from the retry block's `insts`. With a suspend-time
/// hint ptxas leaves the sleep and the second check out of it: `SYNCS….TRYWAIT P0; @!P0 BRA
/// retry` (09_mbarrier/try_wait_suspend), which is exact, as they run only where the wait
/// failed and the retry block runs them. So: the `COPY`s of the wait's predicate into a
/// register the rest of the function does not read are forwarded to the branch, the
/// `NANOSLEEP` and `SYNCS.PHASECHK` under the failed wait dropped, provided what is left is
/// `SYNCS….TRYWAIT p; @!p BRA retry`; otherwise it is all of `insts`.
fn first_try(f: &Function, b: BlockId, insts: &[Inst]) -> Vec<Inst> {
    let Some(wait_pred) = insts[0].defs().next() else {
        return insts.to_vec();
    };
    let Some(p) = wait_pred.vreg() else {
        return insts.to_vec();
    };
    let read_elsewhere = |v: VReg| read_elsewhere(f, b, v);
    let mut copies_of_p: Vec<VReg> = Vec::new();
    let mut out: Vec<Inst> = vec![insts[0].clone()];
    for i in &insts[1..] {
        let mut i = i.clone();
        if let Some(g) = &mut i.guard
            && g.pred.vreg().is_some_and(|v| copies_of_p.contains(&v))
        {
            g.pred = wait_pred;
        }
        if let [d, s] = &i.ops[..]
            && let (OpKind::Reg(d), OpKind::Reg(s)) = (&d.kind, &s.kind)
            && i.mnemonic == "COPY"
            && i.guard.is_none()
            && s.reg == wait_pred
            && let Some(d) = d.reg.vreg()
            && !read_elsewhere(d)
        {
            copies_of_p.push(d);
            continue;
        }
        let under_failed_wait = i.guard.is_some_and(|g| g.neg && g.pred == wait_pred);
        if under_failed_wait
            && (i.mnemonic == "NANOSLEEP" || is_phase_check(&i) && !is_try_wait(&i))
            && i.defs()
                .all(|d| d.vreg().is_some_and(|v| !read_elsewhere(v)))
        {
            continue;
        }
        if i.defs().any(|d| d.vreg() == Some(p)) {
            return insts.to_vec();
        }
        copies_of_p.retain(|&v| !i.defs().any(|d| d.vreg() == Some(v)));
        if i.uses()
            .any(|u| u.vreg().is_some_and(|v| copies_of_p.contains(&v)))
        {
            return insts.to_vec();
        }
        out.push(i);
    }
    let branch = out.last().expect("the loop branch");
    if out.len() != 2 || !branch.guard.is_some_and(|g| g.neg && g.pred == wait_pred) {
        return insts.to_vec();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{Guard, MemPrefix, MemTerm, Operand, RegClass};

    /// bb0 falls into bb1: `ULEA addr; SYNCS….TRYWAIT p, [addr], phase; @!p BRA bb1`, which
    /// falls into bb2: `EXIT`.
    fn spin_loop(extra_in_loop: Option<Inst>) -> Function {
        let mut f = Function::new("k", true);
        let phase = f.new_vreg(RegClass::Gpr, 1, None);
        let addr = f.new_vreg(RegClass::Ugpr, 1, None);
        let p = f.new_vreg(RegClass::Pred, 1, None);
        let l = f.new_block(None);
        let exit = f.new_block(None);
        f.block_mut(BlockId(0)).insts = vec![Inst::new(
            "MOV",
            &[],
            vec![Operand::def(Reg::whole(phase, 1)), Operand::imm(0)],
        )];
        f.block_mut(BlockId(0)).fallthrough = Some(l);
        let mut body = vec![Inst::new(
            "ULEA",
            &[],
            vec![Operand::def(Reg::whole(addr, 1)), Operand::imm(0x400)],
        )];
        body.extend(extra_in_loop);
        body.push(Inst::new(
            "SYNCS",
            &["PHASECHK", "TRANS64", "TRYWAIT"],
            vec![
                Operand::def(Reg::whole(p, 1)),
                Operand::new(OpKind::Mem {
                    prefix: MemPrefix::None,
                    terms: vec![MemTerm::Reg(Reg::whole(addr, 1), None)],
                }),
                Operand::use_(Reg::whole(phase, 1)),
            ],
        ));
        let mut bra = Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(l))]);
        bra.guard = Some(Guard {
            pred: Reg::whole(p, 1),
            neg: true,
        });
        bra.divergent = true;
        body.push(bra);
        f.block_mut(l).insts = body;
        f.block_mut(l).fallthrough = Some(exit);
        f.block_mut(exit).insts = vec![Inst::new("EXIT", &[], vec![])];
        f.ssa = false;
        f
    }

    #[test]
    fn a_spin_loop_is_peeled_and_its_retry_goes_last() {
        let mut f = spin_loop(None);
        PeelWait.run(&mut f).unwrap();
        assert_eq!(f.blocks.len(), 4);
        let retry = BlockId(3);
        let l = f.block(BlockId(1));
        assert_eq!(l.insts.len(), 3);
        assert_eq!(l.insts[2].ops[0].kind, OpKind::Block(retry));
        assert!(!l.insts[2].divergent);
        let r = f.block(retry);
        assert_eq!(r.insts.len(), 2);
        assert!(is_try_wait(&r.insts[0]));
        assert_eq!(r.insts[1].ops[0].kind, OpKind::Block(retry));
        assert_eq!(r.fallthrough, Some(BlockId(2)));
        crate::mir::verify::verify(&f).unwrap();
    }

    #[test]
    fn a_loop_that_counts_is_not_peeled() {
        let mut f = spin_loop(None);
        let n = f.new_vreg(RegClass::Gpr, 1, None);
        let count = Inst::new(
            "IADD3",
            &[],
            vec![
                Operand::def(Reg::whole(n, 1)),
                Operand::use_(Reg::whole(n, 1)),
                Operand::imm(1),
            ],
        );
        f.block_mut(BlockId(1)).insts.insert(1, count);
        let before = f.clone();
        PeelWait.run(&mut f).unwrap();
        assert_eq!(f, before);
    }

    #[test]
    fn a_store_in_the_loop_is_not_peeled() {
        let mut f = spin_loop(Some(Inst::new("STS", &[], vec![])));
        let before = f.clone();
        PeelWait.run(&mut f).unwrap();
        assert_eq!(f, before);
    }
}
