//! `exit-bookend` (only under `-g`): the debug exit sequence before every `EXIT`.
//!
//! `ptxas -g` precedes every kernel exit — cluster kernel or not, early exits included — with
//! `MEMBAR.SC.VC; ERRBAR; CGAERRBAR`, and a predicated `@P0 EXIT` gets the predicate on all
//! four instructions (ptxas-facts.md §a.3.7, probes `07_exit/*.g.sass`). Optimised code never
//! does this: a plain `EXIT` ends it (fact 27).

use super::Pass;
use crate::mir::{Function, Inst};

pub struct ExitBookend;

impl Pass for ExitBookend {
    fn name(&self) -> &'static str {
        "exit-bookend"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        for block in &mut f.blocks {
            let mut out = Vec::with_capacity(block.insts.len() + 3);
            for inst in block.insts.drain(..) {
                if inst.mnemonic == "EXIT" {
                    for (mnemonic, mods) in [
                        ("MEMBAR", &["SC", "VC"][..]),
                        ("ERRBAR", &[][..]),
                        ("CGAERRBAR", &[][..]),
                    ] {
                        let mut bookend = Inst::new(mnemonic, mods, vec![]);
                        bookend.guard = inst.guard;
                        // The bookend belongs to the EXIT's PTX instruction in the line
                        // tables (ptxas: `ret` at line 7 of `debug_line_info.ptx` starts at
                        // its MEMBAR).
                        bookend.src = inst.src;
                        out.push(bookend);
                    }
                }
                out.push(inst);
            }
            block.insts = out;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{Operand, PReg, Reg};

    #[test]
    fn every_exit_gets_the_bookend_with_its_guard() {
        let mut f = Function::new("k", true);
        let p0 = Reg::phys(PReg {
            class: crate::mir::RegClass::Pred,
            num: 0,
        });
        let b = &mut f.blocks[0];
        b.insts
            .push(Inst::new("EXIT", &[], vec![]).guarded(p0, true));
        b.insts.push(Inst::new("MOV", &[], vec![Operand::imm(0)]));
        b.insts.push(Inst::new("EXIT", &[], vec![]));
        ExitBookend.run(&mut f).unwrap();
        let names: Vec<_> = f.blocks[0].insts.iter().map(|i| i.mnemonic).collect();
        assert_eq!(
            names,
            [
                "MEMBAR",
                "ERRBAR",
                "CGAERRBAR",
                "EXIT",
                "MOV",
                "MEMBAR",
                "ERRBAR",
                "CGAERRBAR",
                "EXIT"
            ]
        );
        assert!(
            f.blocks[0].insts[..4]
                .iter()
                .all(|i| i.guard == f.blocks[0].insts[3].guard)
        );
        assert!(f.blocks[0].insts[5].guard.is_none());
    }
}
