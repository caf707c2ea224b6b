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
            "bar" | "barrier" => self.bar(ins, op.flags),
            "trap" => self.trap(ins),
            "nanosleep" => self.nanosleep(op),
            "bar.warp.sync" => self.bar_warp_sync(ins),
            "call" => self.call(ins),
            "brx.idx" | "brkpt" | "pmevent" => false,
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
            if self.guard.is_some() {
                self.error(
                    ins.span,
                    "ptxc cannot lower a guarded `ret` in a subroutine yet",
                );
                return true;
            }
            self.subroutine_return();
        } else {
            self.emit(Inst::new("EXIT", &[], vec![]));
        }
        true
    }

    /// CTA barriers (ptxas 13.1, `tests/tests/isel_control.rs`):
    ///
    /// * `bar.sync a{, b}` / `barrier.sync{.aligned} a{, b}` → `BAR.SYNC.DEFER_BLOCKING a{, b}`;
    /// * `bar.arrive a, b` → `BAR.ARV a, b`;
    /// * `bar.red.popc.u32 d, a{, b}, {!}c` → `BAR.RED.POPC.DEFER_BLOCKING a{, b}, {!}c;
    ///   B2R.RESULT d`, and `bar.red.{and,or}.pred p, …` → `BAR.RED.AND|OR…; B2R.RESULT RZ, p`.
    ///
    /// The barrier id and the thread count are immediates or registers; when both are
    /// registers ptxas packs them into one, `count << 16 | id & 0xf`, passed twice.
    pub(super) fn bar(&mut self, ins: &ast::Instruction, flags: &[&str]) -> bool {
        let known = |f: &&str| {
            matches!(
                *f,
                ".sync" | ".arrive" | ".red" | ".aligned" | ".cta" | ".popc" | ".and" | ".or"
            )
        };
        if !flags.iter().all(known) {
            return false;
        }
        let mode = if flags.contains(&".red") {
            "RED"
        } else if flags.contains(&".arrive") {
            "ARV"
        } else if flags.contains(&".sync") || ins.opcode.text == "barrier" && flags.is_empty() {
            "SYNC"
        } else {
            return false;
        };
        let red_op = ["POPC", "AND", "OR"]
            .into_iter()
            .find(|o| flags.contains(&format!(".{}", o.to_lowercase()).as_str()));
        let ops = &ins.operands[..];
        // (destination, id, count, predicate)
        let (dst, id, count, cond) = match (mode, ops) {
            ("SYNC", [a]) => (None, a, None, None),
            ("SYNC", [a, b]) | ("ARV", [a, b]) => (None, a, Some(b), None),
            ("RED", [d, a, c]) => (Some(d), a, None, Some(c)),
            ("RED", [d, a, b, c]) => (Some(d), a, Some(b), Some(c)),
            _ => return false,
        };
        if (mode == "RED") != red_op.is_some() {
            return false;
        }
        let Some(u32_ty) = crate::frontend::types::Ty::parse("u32") else {
            return false;
        };
        let Some(idv) = self.val(id, u32_ty) else {
            return true;
        };
        let countv = match count {
            Some(c) => match self.val(c, u32_ty) {
                Some(v) => Some(v),
                None => return true,
            },
            None => None,
        };
        let mut operands = match (idv, countv) {
            (Val::Imm(i), c) => {
                let mut v = vec![Operand::imm(i & 0xf)];
                v.extend(c.map(|c| self.bar_count(c)));
                v
            }
            (i, None) => vec![Operand::use_(self.to_reg(i, 1))],
            (i, Some(Val::Imm(c))) => {
                vec![Operand::use_(self.to_reg(i, 1)), Operand::imm(c & 0xfff)]
            }
            (i, Some(c)) => {
                // Both in registers: one register `count << 16 | id & 0xf`, named twice.
                let (ri, rc) = (self.to_reg(i, 1), self.to_reg(c, 1));
                let shifted = self.gpr();
                self.emit(Inst::new(
                    "SHF",
                    &["L", "U32"],
                    vec![
                        Operand::def(shifted),
                        Operand::use_(rc),
                        Operand::imm(0x10),
                        Operand::use_(Reg::phys(PReg::RZ)),
                    ],
                ));
                let packed = self.gpr();
                self.emit(Inst::new(
                    "LOP3",
                    &["LUT"],
                    vec![
                        Operand::def(packed),
                        Operand::use_(shifted),
                        Operand::imm(0xf),
                        Operand::use_(ri),
                        Operand::imm(0xf8),
                        Operand::use_(Reg::phys(PReg::PT)).inverted(),
                    ],
                ));
                vec![Operand::use_(packed), Operand::use_(packed)]
            }
        };
        match mode {
            "SYNC" => self.emit(Inst::new("BAR", &["SYNC", "DEFER_BLOCKING"], operands)),
            "ARV" => self.emit(Inst::new("BAR", &["ARV"], operands)),
            _ => {
                let (Some(d), Some(c), Some(op)) = (dst, cond, red_op) else {
                    return false;
                };
                let Some(p) = self.pred_src(c) else {
                    return true;
                };
                operands.push(p);
                self.emit(Inst::new("BAR", &["RED", op, "DEFER_BLOCKING"], operands));
                let Some(dst) = self.dst(d) else {
                    return false;
                };
                let result = if op == "POPC" {
                    vec![Operand::def(dst.reg())]
                } else {
                    vec![Operand::def(Reg::phys(PReg::RZ)), Operand::def(dst.reg())]
                };
                self.emit_def(&dst, Inst::new("B2R", &["RESULT"], result));
                self.commit(dst);
            }
        }
        true
    }

    /// A barrier's thread count operand (an immediate, or a register).
    fn bar_count(&mut self, c: Val) -> Operand {
        match c {
            Val::Imm(c) => Operand::imm(c & 0xfff),
            other => Operand::use_(self.to_reg(other, 1)),
        }
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
