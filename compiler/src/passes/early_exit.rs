//! `early-exit`: a branch to a block that only exits becomes the exit itself.
//!
//! PTX compilers end a kernel with one `ret` and send early leavers there
//! (`@%p1 bra $L__BB0_2; … $L__BB0_2: ret;`). ptxas does not branch to that `EXIT`: it exits
//! where the branch was — `ISETP.GE.AND P0, …; @P0 EXIT` in every bounds-checked kernel of the
//! corpora (`vector_add`: ptxas's first branch is `@P0 EXIT`). Besides saving the branch, this
//! removes a divergent branch whose paths only meet at the kernel's end, so `reconverge` puts
//! no `BSSY`/`BSYNC` around it — threads that exit leave the warp and need no reconvergence.
//!
//! The rewrite: `[@p] BRA b`, where `b` holds nothing but an unguarded `EXIT`, becomes
//! `[@p] EXIT` (when `p` is a per-thread predicate, which `EXIT` takes; a uniform `UP` guard is
//! left alone). The exit block, if nothing reaches it any more, is removed.

use super::Pass;
use crate::mir::{BlockId, Function, Inst, OpKind, Reg, RegClass, cfg};

pub struct EarlyExit;

/// Whether `b` does nothing but exit.
fn only_exits(f: &Function, b: BlockId) -> bool {
    match &f.block(b).insts[..] {
        [exit] => exit.mnemonic == "EXIT" && exit.guard.is_none() && exit.ops.is_empty(),
        _ => false,
    }
}

/// Whether an `EXIT` can take `inst`'s guard: none, or a per-thread predicate.
fn exit_takes_guard(f: &Function, inst: &Inst) -> bool {
    match inst.guard.map(|g| g.pred) {
        None => true,
        Some(Reg::Virt { vreg, .. }) => f.vreg(vreg).class == RegClass::Pred,
        Some(Reg::Phys { reg, .. }) => reg.class == RegClass::Pred,
    }
}

impl Pass for EarlyExit {
    fn name(&self) -> &'static str {
        "early-exit"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        let mut changed = false;
        for b in f.block_ids().collect::<Vec<_>>() {
            for k in 0..f.block(b).insts.len() {
                let inst = &f.block(b).insts[k];
                if inst.mnemonic != "BRA" || !exit_takes_guard(f, inst) {
                    continue;
                }
                let [op] = &inst.ops[..] else { continue };
                let OpKind::Block(target) = op.kind else {
                    continue;
                };
                if target == b || !only_exits(f, target) {
                    continue;
                }
                let mut exit = Inst::new("EXIT", &[], vec![]);
                exit.guard = inst.guard;
                f.block_mut(b).insts[k] = exit;
                changed = true;
            }
        }
        // Exit blocks nothing branches to any more go; in SSA form dropping them can leave
        // trivial PHIs behind, which go too.
        if changed && cfg::remove_unreachable(f) && f.ssa {
            crate::mir::phi::remove_trivial_phis(f);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{Operand, PReg};

    fn bra(t: BlockId) -> Inst {
        Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(t))])
    }

    /// bb0: `@p BRA bb2`, falls into bb1 (work, falls into bb2); bb2: EXIT.
    #[test]
    fn guarded_branch_to_the_exit_block_becomes_a_guarded_exit() {
        let mut f = Function::new("k", true);
        let (b1, b2) = (f.new_block(None), f.new_block(None));
        let p = Reg::whole(f.new_vreg(RegClass::Pred, 1, None), 1);
        f.blocks[0].insts = vec![
            Inst::new("ISETP", &[], vec![Operand::def(p)]),
            bra(b2).guarded(p, true),
        ];
        f.blocks[0].fallthrough = Some(b1);
        f.block_mut(b1).insts = vec![Inst::new("STG", &[], vec![])];
        f.block_mut(b1).fallthrough = Some(b2);
        f.block_mut(b2).insts = vec![Inst::new("EXIT", &[], vec![])];
        EarlyExit.run(&mut f).unwrap();
        let last = f.blocks[0].insts.last().unwrap();
        assert_eq!(last.mnemonic, "EXIT", "{f}");
        assert_eq!(last.guard.map(|g| (g.pred, g.neg)), Some((p, true)));
        // bb2 is still reached by bb1's fall-through, so it stays.
        assert_eq!(f.blocks.len(), 3, "{f}");
        crate::mir::verify::verify(&f).unwrap_or_else(|e| panic!("{e:?}\n{f}"));
    }

    /// A uniform guard stays a branch, and so does a branch to a block that does more.
    #[test]
    fn uniform_guards_and_busy_blocks_are_left_alone() {
        let mut f = Function::new("k", true);
        let (b1, b2) = (f.new_block(None), f.new_block(None));
        let up = Reg::phys(PReg {
            class: RegClass::UPred,
            num: 0,
        });
        f.blocks[0].insts = vec![bra(b2).guarded(up, false)];
        f.blocks[0].fallthrough = Some(b1);
        f.block_mut(b1).insts = vec![bra(b2)];
        f.block_mut(b2).insts = vec![
            Inst::new("STG", &[], vec![]),
            Inst::new("EXIT", &[], vec![]),
        ];
        let before = f.to_string();
        EarlyExit.run(&mut f).unwrap();
        assert_eq!(f.to_string(), before);
    }
}
