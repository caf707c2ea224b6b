//! Clean-up passes: unreachable blocks and dead code.
//!
//! * `remove-unreachable`: drops blocks control never reaches (code after `ret`), renumbering
//!   the rest.
//! * `dce`: deletes instructions whose results are never read and that have no other effect
//!   (loads are kept only if they cannot fault… so they are kept), iterating to a fixed point.

use super::Pass;
use crate::mir::{Function, Reg, VReg, cfg};
use rustc_hash::FxHashSet;

pub struct RemoveUnreachable;

impl Pass for RemoveUnreachable {
    fn name(&self) -> &'static str {
        "remove-unreachable"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        cfg::remove_unreachable(f);
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
            | "FADD"
            | "FMUL"
            | "FFMA"
            | "LDC"
            | "ULDC"
            | "S2R"
            | "S2UR"
            | "LEA"
            | "PRMT"
    )
}

impl Pass for DeadCode {
    fn name(&self) -> &'static str {
        "dce"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        loop {
            let used: FxHashSet<VReg> = f
                .blocks
                .iter()
                .flat_map(|b| b.insts.iter())
                .flat_map(|i| i.uses())
                .filter_map(Reg::vreg)
                .collect();
            let mut changed = false;
            for block in &mut f.blocks {
                block.insts.retain(|inst| {
                    let defs: Vec<Reg> = inst.defs().collect();
                    let dead = is_pure(inst.mnemonic)
                        && !defs.is_empty()
                        && defs.iter().all(|d| match d.vreg() {
                            Some(v) => !used.contains(&v),
                            // Physical results (PT) are discarded anyway.
                            None => true,
                        })
                        && defs.iter().any(|d| d.vreg().is_some());
                    changed |= dead;
                    !dead
                });
            }
            if !changed {
                break;
            }
        }
        Ok(())
    }
}
