//! Trivial `PHI`s: a `PHI` whose arguments are all one value (or the `PHI` itself) is that value.
//!
//! SSA construction (`lower::ssa`) removes them when it finishes; `remove-unreachable` runs the
//! same clean-up again, since dropping an unreachable predecessor (an empty block lowering left
//! after a `bra.uni`, say) removes `PHI` arguments and can make a `PHI` trivial — and with it
//! every `PHI` that merged it with its own argument.

use super::{Function, OpKind, Reg, VReg};

/// Removes trivial `PHI`s until none is left, renaming their uses. Returns whether any went.
pub fn remove_trivial_phis(f: &mut Function) -> bool {
    // Nothing to do without a `PHI` (a cheap look, before the walks below).
    if !f.blocks.iter().any(|b| b.insts.iter().any(|i| i.is_phi())) {
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
    loop {
        let mut changed = false;
        for block in &mut f.blocks {
            block.insts.retain(|inst| {
                if !inst.is_phi() {
                    return true;
                }
                let Some(me) = inst.defs().next().and_then(Reg::vreg) else {
                    return true;
                };
                let mut same: Option<VReg> = None;
                for o in &inst.ops {
                    if let OpKind::PhiArg(_, r) = o.kind {
                        let v = resolve(&alias, r.vreg().expect("virtual PHI argument"));
                        if v == me || Some(v) == same {
                            continue;
                        }
                        if same.is_some() {
                            return true;
                        }
                        same = Some(v);
                    }
                }
                match same {
                    Some(v) => {
                        if alias.len() <= me.0 as usize {
                            alias.resize(me.0 as usize + 1, NONE);
                        }
                        alias[me.0 as usize] = v.0;
                        any = true;
                        changed = true;
                        false
                    }
                    // A PHI only of itself: unreachable in practice; keep it.
                    None => true,
                }
            });
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
            for op in &mut inst.ops {
                for r in op.regs_mut() {
                    if let Reg::Virt { vreg, .. } = r {
                        *vreg = resolve(&alias, *vreg);
                    }
                }
            }
            if let Some(g) = &mut inst.guard
                && let Reg::Virt { vreg, .. } = &mut g.pred
            {
                *vreg = resolve(&alias, *vreg);
            }
        }
    }
    true
}
