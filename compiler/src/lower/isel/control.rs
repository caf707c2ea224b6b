//! Control flow and barriers: `bra`, `ret`/`exit`, `trap`, `bar`, `bar.warp.sync`, `nanosleep`.

use super::{Cx, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::check::eval_const;
use crate::lower::PlanView;
use crate::mir::*;

impl Cx<'_> {
    /// Control flow, calls and CTA barriers.
    pub(super) fn lower_control(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        let ins = op.ins;
        Some(match op.opcode {
            "bra" => self.bra(ins),
            "ret" | "exit" => self.ret(ins),
            "bar" | "barrier" => self.bar(ins, &op.flags),
            "trap" => self.trap(ins),
            "nanosleep" => self.nanosleep(op),
            "bar.warp.sync" => self.bar_warp_sync(ins),
            "brx.idx" | "call" | "brkpt" | "pmevent" => false,
            _ => return None,
        })
    }

    pub(super) fn bra(&mut self, ins: &ast::Instruction) -> bool {
        let Some(ast::Operand::Expr(e)) = ins.operands.first() else {
            return false;
        };
        let Some(name) = e.as_name() else {
            return false;
        };
        let target = PlanView {
            scopes: self.scopes,
        }
        .label(self.scope, &name.text);
        let Some(target) = target else {
            self.error(name.span, format!("unknown label `{}`", name.text));
            return true;
        };
        let mut inst = Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(target))]);
        // `bra.uni` promises a uniform branch; otherwise it is divergent unless the predicate is
        // provably the same for every thread.
        if let Some((p, _)) = self.guard {
            let uni = ins.modifiers.iter().any(|m| m.text == ".uni");
            inst.divergent = !uni && !self.is_uniform(p);
        }
        self.emit(inst);
        true
    }

    pub(super) fn ret(&mut self, ins: &ast::Instruction) -> bool {
        if !self.f.is_entry && ins.opcode.text == "ret" {
            self.emit(Inst::new("RET", &["REL", "NODEC"], vec![]));
        } else {
            self.emit(Inst::new("EXIT", &[], vec![]));
        }
        true
    }

    pub(super) fn bar(&mut self, ins: &ast::Instruction, flags: &[&str]) -> bool {
        if !(flags.contains(&".sync") || flags.is_empty() && ins.opcode.text == "barrier") {
            return false;
        }
        let id = match ins.operands.first() {
            Some(ast::Operand::Expr(e)) => match eval_const(e) {
                Some(v) => v as i64,
                None => return false,
            },
            None => 0,
            _ => return false,
        };
        if ins.operands.len() > 1 {
            return false;
        }
        self.emit(Inst::new(
            "BAR",
            &["SYNC", "DEFER_BLOCKING"],
            vec![Operand::imm(id)],
        ));
        true
    }

    /// `trap`: `BPT.TRAP 0x1`, which ends the thread, so it ends its block (ptxas emits no
    /// `EXIT` after it; a `ret` that follows is unreachable).
    pub(super) fn trap(&mut self, ins: &ast::Instruction) -> bool {
        if self.guard.is_some() {
            // ptxas branches around an unpredicated BPT.TRAP (`@P0 BRA next`); ptxc does not
            // split the block for that yet.
            self.error(
                ins.opcode.span,
                "ptxc cannot lower a guarded `trap` yet (ptxas branches around BPT.TRAP)",
            );
            return true;
        }
        self.emit(Inst::new("BPT", &["TRAP"], vec![Operand::imm(1)]));
        true
    }

    /// `nanosleep.u32 t`: `NANOSLEEP t` (an immediate or a register).
    pub(super) fn nanosleep(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(u32_ty) = op.ty().filter(|t| t.name == "u32") else {
            return false;
        };
        if !op.flags.is_empty() {
            return false;
        }
        let [t] = op.operands() else {
            return false;
        };
        let Some(v) = self.val(t, u32_ty) else {
            return true;
        };
        let t = match v {
            Val::Imm(i) => Operand::imm(i & 0xffff_ffff),
            other => {
                let r = self.to_reg(other, 1);
                Operand::use_(r)
            }
        };
        self.emit(Inst::new("NANOSLEEP", &[], vec![t]));
        true
    }

    /// `bar.warp.sync -1`: ptxas emits a `NOP` that the driver may patch, listed in
    /// EIATTR_COOP_GROUP_INSTR_OFFSETS with the mask 0xffffffff in
    /// EIATTR_COOP_GROUP_MASK_REGIDS (emit/build.rs). A partial or register mask is refused:
    /// ptxas loads it into a register and records that register's id, which ptxc cannot yet.
    pub(super) fn bar_warp_sync(&mut self, ins: &ast::Instruction) -> bool {
        let full = match ins.operands[..] {
            [ast::Operand::Expr(ref e)] => eval_const(e).is_some_and(|v| v as u32 == u32::MAX),
            _ => false,
        };
        if self.guard.is_some() {
            self.error(ins.span, "ptxc cannot lower a guarded `bar.warp.sync` yet");
            return true;
        }
        if !full {
            self.error(
                ins.span,
                "ptxc cannot lower `bar.warp.sync` with a mask other than -1 yet (ptxas records \
                 the mask register in EIATTR_COOP_GROUP_MASK_REGIDS)",
            );
            return true;
        }
        self.emit(Inst::new("NOP", &[], vec![]));
        true
    }
}
