//! Control flow and barriers: `bra`, `ret`/`exit`, `bar`.

use super::{Cx, PtxOp};
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
            "brx.idx" | "call" | "trap" | "brkpt" | "bar.warp.sync" | "nanosleep" | "pmevent" => {
                false
            }
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
}
