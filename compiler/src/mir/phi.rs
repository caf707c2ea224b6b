//! Trivial `PHI`s: a `PHI` whose arguments are all one value (or the `PHI` itself) is that value.
//!
//! SSA construction (`lower::ssa`) removes them when it finishes; `remove-unreachable` runs the
//! same clean-up again, since dropping an unreachable predecessor (an empty block lowering left
//! after a `bra.uni`, say) removes `PHI` arguments and can make a `PHI` trivial — and with it
//! every `PHI` that merged it with its own argument.

use super::{Function, OpKind, Reg, VReg};

/// Removes trivial `PHI`s until none is left, renaming their uses. Returns whether any went.
pub fn remove_trivial_phis(f: &mut Function) -> bool {
    // Per block, the end of the span that holds its `PHI`s (one past the last; 0: none). Only
    // that span is walked again in the rounds below (none is added here), and the block's
    // instructions are moved only when a `PHI` in it goes: a `retain` over every instruction
    // of each block with a `PHI`, in every round, was 7.3M of this function's 13.1M
    // (callgrind, `gen/loop_16000`, the call from `lower::ssa`).
    let mut phi_end: Vec<usize> = f
        .blocks
        .iter()
        .map(|b| {
            b.insts
                .iter()
                .rposition(|i| i.is_phi())
                .map_or(0, |k| k + 1)
        })
        .collect();
    if phi_end.iter().all(|&e| e == 0) {
        return false;
    }
    // The value each removed `PHI` stands for, by vreg number (`NONE`: not removed): a table,
    // not a hash map, since every register of the function is looked up in it once more
    // below (callgrind, 1000 loops of 16 instructions: 25.0M instructions of 468.9M in this
    // function with the map).
    const NONE: u32 = u32::MAX;
    let mut alias: Vec<u32> = vec![NONE; f.vregs.len()];
    let mut any = false;
    fn resolve(alias: &[u32], mut v: VReg) -> VReg {
        while let Some(&n) = alias.get(v.0 as usize)
            && n != NONE
        {
            v = VReg(n);
        }
        v
    }
    // The trivial `PHI` a block loses in this round, by index (reused between blocks).
    let mut doomed: Vec<usize> = Vec::new();
    loop {
        let mut changed = false;
        for (block, end) in f.blocks.iter_mut().zip(&mut phi_end) {
            if *end == 0 {
                continue;
            }
            doomed.clear();
            for (k, inst) in block.insts[..*end].iter().enumerate() {
                if !inst.is_phi() {
                    continue;
                }
                // The first register written (`Inst::defs().next()`, without the iterator).
                let first_def = inst.ops.iter().find_map(|o| match o.kind {
                    OpKind::Reg(r) if r.def => Some(r.reg),
                    _ => None,
                });
                let Some(me) = first_def.and_then(Reg::vreg) else {
                    continue;
                };
                let mut same: Option<VReg> = None;
                let mut trivial = true;
                for o in &inst.ops {
                    if let OpKind::PhiArg(_, r) = o.kind {
                        let v = resolve(&alias, r.vreg().expect("virtual PHI argument"));
                        if v == me || Some(v) == same {
                            continue;
                        }
                        if same.is_some() {
                            trivial = false;
                            break;
                        }
                        same = Some(v);
                    }
                }
                // `same` is `None` for a PHI only of itself: unreachable in practice; keep it.
                if let (true, Some(v)) = (trivial, same) {
                    if alias.len() <= me.0 as usize {
                        alias.resize(me.0 as usize + 1, NONE);
                    }
                    alias[me.0 as usize] = v.0;
                    doomed.push(k);
                }
            }
            if doomed.is_empty() {
                continue;
            }
            any = true;
            changed = true;
            let mut k = 0;
            let mut next = doomed.iter().copied().peekable();
            block.insts.retain(|_| {
                let dies = next.next_if_eq(&k).is_some();
                k += 1;
                !dies
            });
            *end = block
                .insts
                .iter()
                .rposition(|i| i.is_phi())
                .map_or(0, |k| k + 1);
        }
        if !changed {
            break;
        }
    }
    if !any {
        return false;
    }
    for block in &mut f.blocks {
        for inst in &mut block.insts {
            // Operands, then the guard.
            inst.for_each_reg_mut(|r| {
                if let Reg::Virt { vreg, .. } = r {
                    *vreg = resolve(&alias, *vreg);
                }
            });
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{BlockId, Inst, Operand, RegClass};

    /// A chain of trivial `PHI`s through three blocks (each merges the one before with
    /// itself, as SSA construction leaves a value carried unchanged round loops) goes, and
    /// every use — an operand, a guard — reads the value from before the chain; a `PHI` of two
    /// values stays, reading the renamed values. bb2 holds no `PHI` and keeps its instruction.
    #[test]
    fn sisel2_trivial_phi_chains_go_and_uses_are_renamed() {
        let mut f = Function::new("chain", true);
        for _ in 0..4 {
            f.new_block(None);
        }
        let gpr = |f: &mut Function| Reg::whole(f.new_vreg(RegClass::Gpr, 1, None), 1);
        let (x, y, p1, p3, p4, keep) = (
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
        );
        let pred = Reg::whole(f.new_vreg(RegClass::Pred, 1, None), 1);
        let pp1 = Reg::whole(f.new_vreg(RegClass::Pred, 1, None), 1);
        let phi = |d: Reg, args: &[(u32, Reg)]| {
            let mut ops = vec![Operand::def(d)];
            ops.extend(
                args.iter()
                    .map(|&(b, r)| Operand::new(OpKind::PhiArg(BlockId(b), r))),
            );
            Inst::new("PHI", &[], ops)
        };
        f.blocks[0].insts = vec![
            Inst::new("S2R", &[], vec![Operand::def(x)]),
            Inst::new("S2R", &[], vec![Operand::def(y)]),
            Inst::new("ISETP", &[], vec![Operand::def(pred), Operand::use_(x)]),
        ];
        // bb1: p1 = φ(x, p1); pp1 = φ(pred, pred)
        f.blocks[1].insts = vec![
            phi(p1, &[(0, x), (1, p1)]),
            phi(pp1, &[(0, pred), (1, pred)]),
        ];
        f.blocks[2].insts = vec![Inst::new("NOP", &[], vec![])];
        // bb3: p3 = φ(p1, p3), then bb4: p4 = φ(p3, p4), keep = φ(p4, y)
        f.blocks[3].insts = vec![phi(p3, &[(2, p1), (3, p3)])];
        f.blocks[4].insts = vec![
            phi(p4, &[(3, p3), (4, p4)]),
            phi(keep, &[(3, p4), (4, y)]),
            Inst::new("STG", &[], vec![Operand::use_(p4), Operand::use_(keep)]).guarded(pp1, false),
        ];
        assert!(remove_trivial_phis(&mut f));
        let phis: Vec<&Inst> = f
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| i.is_phi())
            .collect();
        assert_eq!(phis.len(), 1, "{f}");
        let args: Vec<Reg> = phis[0]
            .ops
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::PhiArg(_, r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(args, vec![x, y], "{f}");
        assert_eq!(f.blocks[2].insts.len(), 1);
        let stg = f.blocks[4].insts.last().expect("the store");
        assert_eq!(stg.uses().collect::<Vec<_>>(), vec![x, keep, pred], "{f}");
        // Nothing trivial is left: a second run changes nothing.
        assert!(!remove_trivial_phis(&mut f));
    }
}
