//! Data movement: `mov`, `ld`, `st`, `cvta`.

use super::{Cx, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::ast::Expr;
use crate::frontend::check::eval_const;
use crate::frontend::types::{Kind, Ty};
use crate::lower::Sym;
use crate::mir::*;

impl Cx<'_> {
    /// The memory family: moves, loads and stores in every state space, address conversion,
    /// atomics and reductions, and the warp-level data exchange (shfl, vote, match, redux).
    pub(super) fn lower_memory(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        let (ins, types, flags) = (op.ins, &op.types[..], &op.flags[..]);
        Some(match op.opcode {
            "mov" => self.mov(ins, types),
            "ld" => self.ld(ins, types, flags),
            "st" => self.st(ins, types, flags),
            "cvta" => self.cvta(ins, types, flags),
            "ldu" | "isspacep" | "prefetch" | "prefetchu" | "discard" | "applypriority"
            | "createpolicy" | "atom" | "red" | "shfl" | "vote" | "match" | "redux"
            | "activemask" => false,
            _ => return None,
        })
    }

    pub(super) fn mov(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [ty] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        let Some(v) = self.val(a, *ty) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        match v {
            // A register copy in SSA form is a rename; under a guard it is a real move.
            Val::Reg(r) if dst.prior.is_none() && r.count() == dst.words => {
                let vreg = r.vreg().expect("virtual");
                self.ssa.write(dst.var, self.cur, vreg);
                return true;
            }
            _ if dst.words == 2 => {
                for w in 0..2 {
                    let src = self.word(v, w);
                    let op = self.operand(src);
                    self.emit_def(
                        &dst,
                        Inst::new("MOV", &[], vec![Operand::def(dst.word(w)), op]),
                    );
                }
            }
            _ => {
                let op = self.operand(v);
                self.emit_def(
                    &dst,
                    Inst::new("MOV", &[], vec![Operand::def(dst.reg()), op]),
                );
            }
        }
        self.commit(dst);
        true
    }

    /// The state space named by the modifiers.
    pub(super) fn space<'f>(flags: &[&'f str]) -> Option<&'f str> {
        flags.iter().copied().find(|f| {
            matches!(
                *f,
                ".global"
                    | ".shared"
                    | ".shared::cta"
                    | ".shared::cluster"
                    | ".local"
                    | ".param"
                    | ".const"
            )
        })
    }

    /// The SASS width modifier of a load/store of `ty` (`U8`, `S16`, ``, `64`, `128`).
    pub(super) fn width_mod(ty: Ty, vector: u32) -> Option<&'static str> {
        let bits = ty.bits() * vector;
        Some(match (bits, ty.kind()) {
            (8, Kind::Signed) => "S8",
            (8, _) => "U8",
            (16, Kind::Signed) => "S16",
            (16, _) => "U16",
            (32, _) => "",
            (64, _) => "64",
            (128, _) => "128",
            _ => return None,
        })
    }

    /// `[reg]`, `[reg+imm]` as (base register, offset).
    pub(super) fn address(&mut self, op: &ast::Operand) -> Option<(Option<Reg>, Option<Sym>, i64)> {
        let ast::Operand::Address(parts, span) = op else {
            return None;
        };
        let [ast::Operand::Expr(e)] = &parts[..] else {
            self.error(*span, "ptxc cannot lower this address yet");
            return None;
        };
        let (name, offset) = match e {
            Expr::Name {
                name,
                component: None,
            } => (Some(name), 0),
            Expr::Binary {
                op: ast::BinOp::Add,
                lhs,
                rhs,
                ..
            } => match (lhs.as_name(), eval_const(rhs)) {
                (Some(n), Some(k)) => (Some(n), k as i64),
                _ => (None, 0),
            },
            Expr::Binary {
                op: ast::BinOp::Sub,
                lhs,
                rhs,
                ..
            } => match (lhs.as_name(), eval_const(rhs)) {
                (Some(n), Some(k)) => (Some(n), -(k as i64)),
                _ => (None, 0),
            },
            other => match eval_const(other) {
                Some(k) => return Some((None, None, k as i64)),
                None => (None, 0),
            },
        };
        let Some(name) = name else {
            self.error(e.span(), "ptxc cannot lower this address yet");
            return None;
        };
        if let Some((var, _)) = self.lookup_reg(&name.text) {
            let r = self.read_var(var);
            return Some((Some(r), None, offset));
        }
        match self.sym(&name.text) {
            Some(sym) => Some((None, Some(sym), offset)),
            None => {
                self.error(
                    name.span,
                    format!("ptxc cannot address `{}` yet", name.text),
                );
                None
            }
        }
    }

    pub(super) fn ld(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [ty] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        if flags.iter().any(|f| f.starts_with(".v")) {
            return false;
        }
        let Some((base, sym, off)) = self.address(a) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let Some(width) = Self::width_mod(*ty, 1) else {
            return false;
        };
        let mods: Vec<&'static str> = if width.is_empty() {
            vec![]
        } else {
            vec![width]
        };
        match (Self::space(flags), base, sym) {
            // Kernel parameters are in constant bank 0.
            (Some(".param"), None, Some(Sym::Param { cbank_offset, .. })) => {
                let mut m = mods.clone();
                m.retain(|x| !x.is_empty());
                let inst = Inst::new(
                    "LDC",
                    &[],
                    vec![
                        Operand::def(dst.reg()),
                        Operand::new(OpKind::CBank {
                            bank: 0,
                            base: None,
                            offset: i64::from(cbank_offset) + off,
                        }),
                    ],
                );
                let mut inst = inst;
                inst.mods = m;
                self.emit_def(&dst, inst);
            }
            (space @ (None | Some(".global")), Some(b), None) => {
                let desc = self.global_desc();
                let mut m = vec!["E"];
                m.extend(mods.iter().copied().filter(|x| !x.is_empty()));
                let mut terms = vec![MemTerm::Reg(b, Some("64"))];
                if off != 0 {
                    terms.push(MemTerm::Imm(off));
                }
                let mn = if space == Some(".global") {
                    "LDG"
                } else {
                    "LD"
                };
                let inst = Inst::new(
                    mn,
                    &m,
                    vec![
                        Operand::def(dst.reg()),
                        Operand::new(OpKind::Mem {
                            prefix: MemPrefix::Desc(desc),
                            terms,
                        }),
                    ],
                );
                self.emit_def(&dst, inst);
            }
            _ => return false,
        }
        self.commit(dst);
        true
    }

    pub(super) fn st(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [ty] = types else { return false };
        let [a, v] = &ins.operands[..] else {
            return false;
        };
        if flags.iter().any(|f| f.starts_with(".v")) {
            return false;
        }
        let Some((base, _sym, off)) = self.address(a) else {
            return true;
        };
        let Some(val) = self.val(v, *ty) else {
            return true;
        };
        let words = ty.bits().div_ceil(32) as u8;
        let r = self.to_reg(val, words);
        let Some(width) = Self::width_mod(*ty, 1) else {
            return false;
        };
        match (Self::space(flags), base) {
            (space @ (None | Some(".global")), Some(b)) => {
                let desc = self.global_desc();
                let mut m = vec!["E"];
                if !width.is_empty() {
                    m.push(width);
                }
                let mut terms = vec![MemTerm::Reg(b, Some("64"))];
                if off != 0 {
                    terms.push(MemTerm::Imm(off));
                }
                let mn = if space == Some(".global") {
                    "STG"
                } else {
                    "ST"
                };
                self.emit(Inst::new(
                    mn,
                    &m,
                    vec![
                        Operand::new(OpKind::Mem {
                            prefix: MemPrefix::Desc(desc),
                            terms,
                        }),
                        Operand::use_(r),
                    ],
                ));
                true
            }
            _ => false,
        }
    }

    pub(super) fn cvta(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [ty] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        // Global addresses are generic addresses on sm_90: cvta to or from .global is a copy.
        if Self::space(flags) != Some(".global") {
            return false;
        }
        let Some(v) = self.val(a, *ty) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        match v {
            Val::Reg(r) if dst.prior.is_none() && r.count() == dst.words => {
                self.ssa
                    .write(dst.var, self.cur, r.vreg().expect("virtual"));
            }
            _ => return false,
        }
        true
    }
}
