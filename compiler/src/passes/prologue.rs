//! `prologue`: what every kernel starts with, after register allocation.
//!
//! ptxas begins every entry with `LDC R1, c[0x0][0x28]` — the initial stack pointer from
//! constant bank 0 (ptxas-facts.md §c.1) — and, when the function has a stack frame (`.local`
//! data or spill slots), `IADD3 R1, R1, -frame, RZ` to open it (`11_stack_spill/spill`:
//! `IADD3 R1, R1, -0x118, RZ` for a 280-byte frame). Frames are 8-byte aligned.

use super::Pass;
use crate::mir::{Function, Inst, OpKind, Operand, PReg, Reg, RegClass};

pub struct Prologue;

/// The stack pointer, R1.
pub const SP: PReg = PReg {
    class: RegClass::Gpr,
    num: 1,
};

impl Pass for Prologue {
    fn name(&self) -> &'static str {
        "prologue"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        if !f.is_entry {
            if f.frame_bytes > 0 {
                return Err(format!(
                    "ptxc cannot give the .func `{}` a stack frame yet",
                    f.name
                ));
            }
            return Ok(());
        }
        f.frame_bytes = f.frame_bytes.next_multiple_of(8);
        let mut pro = vec![Inst::new(
            "LDC",
            &[],
            vec![
                Operand::def(Reg::phys(SP)),
                Operand::new(OpKind::CBank {
                    bank: 0,
                    base: None,
                    offset: 0x28,
                }),
            ],
        )];
        if f.frame_bytes > 0 {
            pro.push(Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(Reg::phys(SP)),
                    Operand::use_(Reg::phys(SP)),
                    Operand::imm(-i64::from(f.frame_bytes)),
                    Operand::use_(Reg::phys(PReg::RZ)),
                ],
            ));
        }
        f.blocks[0].insts.splice(0..0, pro);
        Ok(())
    }
}
