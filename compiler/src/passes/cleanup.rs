//! Clean-up passes: unreachable blocks and dead code.
//!
//! * `remove-unreachable`: drops blocks control never reaches (code after `ret`), renumbering
//!   the rest, then the `PHI`s that losing those predecessors made trivial.
//! * `dce`: deletes instructions whose results are never read and that have no other effect
//!   (loads are kept only if they cannot fault… so they are kept), iterating to a fixed point.

use super::Pass;
use crate::mir::{Function, OpKind, Operand, PReg, Reg, cfg};

pub struct RemoveUnreachable;

impl Pass for RemoveUnreachable {
    fn name(&self) -> &'static str {
        "remove-unreachable"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        // Dropping a predecessor drops its PHI arguments, which can leave a PHI with one
        // value: it, and any PHI that merged it with that value, goes too.
        if cfg::remove_unreachable(f) && f.ssa {
            crate::mir::phi::remove_trivial_phis(f);
        }
        Ok(())
    }
}

pub struct DeadCode;

/// Instructions with no effect but their register results.
fn is_pure(mnemonic: &str) -> bool {
    matches!(
        mnemonic,
        "PHI"
            | "COPY"
            | "UNDEF"
            | "MOV"
            | "IADD3"
            | "IMAD"
            | "ISETP"
            | "SEL"
            | "LOP3"
            | "PLOP3"
            | "SHF"
            | "SGXT"
            | "FADD"
            | "FMUL"
            | "FFMA"
            | "LDC"
            | "ULDC"
            | "S2R"
            | "S2UR"
            | "LEA"
            | "PRMT"
            // Tensor-core MMAs (no effect but their results; a dead one must go, since the
            // reads of its results are what keep later writes off its source registers).
            | "HMMA"
            | "IMMA"
            // Its results are all it makes: an `elect.sync` whose predicate only guarded a
            // TMA copy that isel issues once anyway goes, as in ptxas (`elect_only` of
            // docs/passes/examples/reconverge/tma_elect.ptx has no ELECT).
            | "ELECT"
    )
}

impl Pass for DeadCode {
    fn name(&self) -> &'static str {
        "dce"
    }

    /// A worklist over use counts: an instruction dies when it is pure and no result is used;
    /// its death lowers the counts of what it reads, and a register whose count drops to zero
    /// puts its definitions back on the list. Linear in the size of the function.
    fn run(&self, f: &mut Function) -> Result<(), String> {
        let nv = f.vregs.len();
        let mut uses = vec![0u32; nv];
        // The instructions defining each register, as (block, index): a list per register
        // threaded through one vector (`first_def[v]`, then each entry's `next`), not a vector
        // per register.
        const NONE: u32 = u32::MAX;
        let mut first_def = vec![NONE; nv];
        // Sized for the whole function at once: grown a doubling at a time, these lists were
        // copied a dozen times in large kernels.
        let n = f.num_insts();
        let mut defs: Vec<(usize, usize, u32)> = Vec::with_capacity(n);
        let mut work: Vec<(usize, usize)> = Vec::with_capacity(n);
        // Only pure instructions can die, so only they go on the list and only their
        // definitions are recorded. One walk over each instruction's registers
        // (`Inst::for_each_reg`).
        for (b, block) in f.blocks.iter().enumerate() {
            for (k, inst) in block.insts.iter().enumerate() {
                let pure = is_pure(inst.mnemonic);
                inst.for_each_reg(|r| match (r.reg.vreg(), r.def) {
                    (Some(v), false) => uses[v.0 as usize] += 1,
                    (Some(v), true) if pure => {
                        defs.push((b, k, first_def[v.0 as usize]));
                        first_def[v.0 as usize] = (defs.len() - 1) as u32;
                    }
                    _ => {}
                });
                if pure {
                    work.push((b, k));
                }
            }
        }
        let mut dead: Vec<Vec<bool>> = f
            .blocks
            .iter()
            .map(|b| vec![false; b.insts.len()])
            .collect();
        while let Some((b, k)) = work.pop() {
            if dead[b][k] {
                continue;
            }
            let inst = &f.blocks[b].insts[k];
            // Every instruction on the list is pure. Physical results (PT) are discarded
            // anyway.
            let (mut virt, mut used) = (false, false);
            inst.for_each_reg(|r| {
                if r.def
                    && let Some(v) = r.reg.vreg()
                {
                    virt = true;
                    used |= uses[v.0 as usize] != 0;
                }
            });
            if !virt || used {
                continue;
            }
            dead[b][k] = true;
            inst.for_each_reg(|r| {
                let Some(v) = r.reg.vreg().filter(|_| !r.def) else {
                    return;
                };
                let n = &mut uses[v.0 as usize];
                *n -= 1;
                if *n == 0 {
                    let mut d = first_def[v.0 as usize];
                    while d != NONE {
                        let (db, dk, next) = defs[d as usize];
                        work.push((db, dk));
                        d = next;
                    }
                }
            });
        }
        for (block, dead) in f.blocks.iter_mut().zip(&dead) {
            // A live `ELECT` (its predicate is read) whose lane number nobody reads writes it
            // to `URZ`, as ptxas does (`ELECT P1, URZ, PT` for `elect.sync %r|%p` with `%r`
            // unused, pyptx matmul_tma_v33–v35), so it takes no uniform register.
            for (inst, _) in block.insts.iter_mut().zip(dead).filter(|(_, d)| !**d) {
                if inst.mnemonic != "ELECT" {
                    continue;
                }
                if let Some(op) = inst.ops.get_mut(1)
                    && let OpKind::Reg(r) = &op.kind
                    && r.def
                    && r.reg.vreg().is_some_and(|v| uses[v.0 as usize] == 0)
                {
                    *op = Operand::def(Reg::phys(PReg::URZ));
                }
            }
            if !dead.contains(&true) {
                continue;
            }
            let mut k = 0;
            block.insts.retain(|_| {
                k += 1;
                !dead[k - 1]
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{BlockId, Inst, OpKind, Operand, Reg, RegClass};

    /// The shape lowering gives an if/else: bb0 branches to bb3 or falls into bb1, which jumps
    /// to bb4; bb2 is the empty block after that jump (unreachable) and falls into bb3. SSA
    /// construction saw bb2 as a predecessor of bb3, so bb3 merges `x` with an UNDEF and bb4
    /// merges bb1's `x` with bb3's PHI. Without bb2 both PHIs are trivial and must go.
    #[test]
    fn unreachable_predecessor_leaves_no_trivial_phi() {
        let mut f = Function::new("if_else", true);
        let b: Vec<BlockId> = (0..4).map(|_| f.new_block(None)).collect();
        let (b1, b2, b3, b4) = (b[0], b[1], b[2], b[3]);
        let gpr = |f: &mut Function| Reg::whole(f.new_vreg(RegClass::Gpr, 1, None), 1);
        let (x, u, px, y, j) = (
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
        );
        let p = Reg::whole(f.new_vreg(RegClass::Pred, 1, None), 1);
        let bra = |t: BlockId| Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(t))]);
        let phi = |d: Reg, args: &[(BlockId, Reg)]| {
            let mut ops = vec![Operand::def(d)];
            ops.extend(
                args.iter()
                    .map(|&(b, r)| Operand::new(OpKind::PhiArg(b, r))),
            );
            Inst::new("PHI", &[], ops)
        };
        f.blocks[0].insts = vec![
            Inst::new("S2R", &[], vec![Operand::def(x)]),
            Inst::new("ISETP", &[], vec![Operand::def(p), Operand::use_(x)]),
            bra(b3).guarded(p, false),
        ];
        f.blocks[0].fallthrough = Some(b1);
        f.block_mut(b1).insts = vec![bra(b4)];
        f.block_mut(b2).insts = vec![Inst::new("UNDEF", &[], vec![Operand::def(u)])];
        f.block_mut(b2).fallthrough = Some(b3);
        f.block_mut(b3).insts = vec![
            phi(px, &[(BlockId(0), x), (b2, u)]),
            Inst::new("SHF", &[], vec![Operand::def(y), Operand::use_(px)]),
        ];
        f.block_mut(b3).fallthrough = Some(b4);
        f.block_mut(b4).insts = vec![
            phi(j, &[(b1, x), (b3, px)]),
            Inst::new("STG", &[], vec![Operand::use_(j)]),
            Inst::new("EXIT", &[], vec![]),
        ];
        RemoveUnreachable.run(&mut f).unwrap();
        let text = f.to_string();
        assert_eq!(f.blocks.len(), 4, "{text}");
        assert!(!text.contains("PHI"), "trivial PHIs left:\n{text}");
        // Every use of the PHIs now reads `x` itself.
        let reads_x = f
            .blocks
            .iter()
            .flat_map(|b| b.insts.iter())
            .filter(|i| i.mnemonic == "SHF" || i.mnemonic == "STG")
            .all(|i| i.uses().next() == Some(x));
        assert!(reads_x, "{text}");
        crate::mir::verify::verify(&f).unwrap_or_else(|e| panic!("{e:?}\n{f}"));
    }
}
