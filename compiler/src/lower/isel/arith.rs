//! Integer and float arithmetic, comparison, selection, logic and shifts.

use super::cmp_name;
use super::{Cx, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::types::{Kind, Ty};
use crate::mir::*;

impl Cx<'_> {
    /// The arithmetic family: integer, float, half and conversion opcodes.
    pub(super) fn lower_arith(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        let (ins, types, flags) = (op.ins, &op.types[..], &op.flags[..]);
        Some(match op.opcode {
            "add" | "sub" => self.add_sub(ins, op.opcode, types, flags),
            "mul" => self.mul(ins, types, flags),
            "mad" => self.mad(ins, types, flags),
            "setp" => self.setp(ins, types, flags),
            "selp" => self.selp(ins, types),
            "and" | "or" | "xor" => self.logic(ins, op.opcode, types),
            "not" => self.not(ins, types),
            "shl" | "shr" => self.shift(ins, op.opcode, types),
            "mul24" | "mad24" | "sad" | "div" | "rem" | "abs" | "neg" | "min" | "max" | "popc"
            | "clz" | "bfind" | "fns" | "brev" | "bfe" | "bfi" | "szext" | "bmsk" | "dp4a"
            | "dp2a" | "addc" | "subc" | "madc" | "fma" | "testp" | "copysign" | "rcp" | "sqrt"
            | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" | "tanh" | "set" | "slct" | "cnot"
            | "lop3" | "shf" | "prmt" | "cvt" | "vadd" | "vsub" | "vabsdiff" | "vmin" | "vmax"
            | "vshl" | "vshr" => false,
            _ => return None,
        })
    }

    pub(super) fn add_sub(
        &mut self,
        ins: &ast::Instruction,
        opcode: &str,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [ty] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let sub = opcode == "sub";
        if !ty.is_integer_like() || flags.iter().any(|f| matches!(*f, ".cc" | ".sat")) {
            return self.float_add(ins, *ty, sub, flags);
        }
        let (Some(va), Some(vb)) = (self.val(a, *ty), self.val(b, *ty)) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let ra = self.to_reg(va, dst.words);
        let opb = |cx: &Cx<'_>, w: u8| {
            let o = cx.operand(cx.word(vb, w));
            if sub { o.negated() } else { o }
        };
        if dst.words == 2 {
            let carry = self.new_vreg(RegClass::Pred, 1);
            let lo = opb(self, 0);
            let hi = opb(self, 1);
            let (alo, ahi) = (self.word(Val::Reg(ra), 0), self.word(Val::Reg(ra), 1));
            let (alo, ahi) = (self.operand(alo), self.operand(ahi));
            self.emit_def(
                &dst,
                Inst::new(
                    "IADD3",
                    &[],
                    vec![
                        Operand::def(dst.word(0)),
                        Operand::def(Reg::whole(carry, 1)),
                        alo,
                        lo,
                        Operand::use_(Reg::phys(PReg::RZ)),
                    ],
                ),
            );
            self.emit_def(
                &dst,
                Inst::new(
                    "IADD3",
                    &["X"],
                    vec![
                        Operand::def(dst.word(1)),
                        ahi,
                        hi,
                        Operand::use_(Reg::phys(PReg::RZ)),
                        Operand::use_(Reg::whole(carry, 1)),
                        Operand::use_(Reg::phys(PReg::PT)).inverted(),
                    ],
                ),
            );
        } else {
            let b = opb(self, 0);
            self.emit_def(
                &dst,
                Inst::new(
                    "IADD3",
                    &[],
                    vec![
                        Operand::def(dst.reg()),
                        Operand::use_(ra),
                        b,
                        Operand::use_(Reg::phys(PReg::RZ)),
                    ],
                ),
            );
        }
        self.commit(dst);
        true
    }

    pub(super) fn float_add(
        &mut self,
        ins: &ast::Instruction,
        ty: Ty,
        sub: bool,
        flags: &[&str],
    ) -> bool {
        if ty.name != "f32" || flags.contains(&".sat") {
            return false;
        }
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.val(a, ty), self.val(b, ty)) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let ra = self.to_reg(va, 1);
        let mut ob = self.operand(vb);
        if sub {
            ob = ob.negated();
        }
        let mut mods: Vec<&'static str> = Vec::new();
        if flags.contains(&".ftz") {
            mods.push("FTZ");
        }
        for (p, m) in [(".rz", "RZ"), (".rm", "RM"), (".rp", "RP")] {
            if flags.contains(&p) {
                mods.push(m);
            }
        }
        self.emit_def(
            &dst,
            Inst::new(
                "FADD",
                &mods,
                vec![Operand::def(dst.reg()), Operand::use_(ra), ob],
            ),
        );
        self.commit(dst);
        true
    }

    pub(super) fn mul(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [ty] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        if !ty.is_integer_like() || ty.bits() != 32 {
            return false;
        }
        let (Some(va), Some(vb)) = (self.val(a, *ty), self.val(b, *ty)) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let ra = self.to_reg(va, 1);
        let ob = self.operand(vb);
        let signed = ty.kind() == Kind::Signed;
        let zero = if dst.words == 2 {
            Reg::Phys {
                reg: PReg::RZ,
                count: 1,
            }
        } else {
            Reg::phys(PReg::RZ)
        };
        let mods: &[&'static str] = if flags.contains(&".wide") {
            if signed { &["WIDE"] } else { &["WIDE", "U32"] }
        } else if flags.contains(&".hi") {
            if signed { &["HI"] } else { &["HI", "U32"] }
        } else {
            &[]
        };
        self.emit_def(
            &dst,
            Inst::new(
                "IMAD",
                mods,
                vec![
                    Operand::def(dst.reg()),
                    Operand::use_(ra),
                    ob,
                    Operand::use_(zero),
                ],
            ),
        );
        self.commit(dst);
        true
    }

    pub(super) fn mad(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [ty] = types else { return false };
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        if !ty.is_integer_like()
            || ty.bits() != 32
            || flags.contains(&".hi")
            || flags.contains(&".cc")
        {
            return false;
        }
        let wide = flags.contains(&".wide");
        let cty = if wide {
            ty.doubled().unwrap_or(*ty)
        } else {
            *ty
        };
        let (Some(va), Some(vb), Some(vc)) = (self.val(a, *ty), self.val(b, *ty), self.val(c, cty))
        else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let ra = self.to_reg(va, 1);
        let ob = self.operand(vb);
        let rc = self.to_reg(vc, dst.words);
        let signed = ty.kind() == Kind::Signed;
        let mods: &[&'static str] = if wide {
            if signed { &["WIDE"] } else { &["WIDE", "U32"] }
        } else {
            &[]
        };
        self.emit_def(
            &dst,
            Inst::new(
                "IMAD",
                mods,
                vec![
                    Operand::def(dst.reg()),
                    Operand::use_(ra),
                    ob,
                    Operand::use_(rc),
                ],
            ),
        );
        self.commit(dst);
        true
    }

    pub(super) fn setp(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [ty] = types else { return false };
        if ins.operands.len() != 3 || !ty.is_integer_like() {
            return false;
        }
        let Some(cmp) = flags.iter().find_map(|f| cmp_name(f)) else {
            return false;
        };
        let unsigned = ty.kind() != Kind::Signed
            || matches!(*flags.first().unwrap_or(&""), ".lo" | ".ls" | ".hi" | ".hs");
        let (d, a, b) = (&ins.operands[0], &ins.operands[1], &ins.operands[2]);
        if matches!(d, ast::Operand::Pair(..)) {
            return false;
        }
        let (Some(va), Some(vb)) = (self.val(a, *ty), self.val(b, *ty)) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let words = ty.bits().div_ceil(32) as u8;
        let ra = self.to_reg(va, words);
        let pt = Operand::use_(Reg::phys(PReg::PT));
        let mut mods: Vec<&'static str> = vec![cmp];
        if unsigned && (cmp != "EQ" && cmp != "NE" || words == 2) {
            mods.push("U32");
        }
        mods.push("AND");
        if words == 2 {
            let lo = self.new_vreg(RegClass::Pred, 1);
            let (alo, ahi) = (
                self.operand(self.word(Val::Reg(ra), 0)),
                self.operand(self.word(Val::Reg(ra), 1)),
            );
            let (blo, bhi) = (
                self.operand(self.word(vb, 0)),
                self.operand(self.word(vb, 1)),
            );
            // The low words compare unsigned; the high words with the type's signedness.
            let mut lo_mods = vec![cmp, "U32", "AND"];
            if cmp == "EQ" || cmp == "NE" {
                lo_mods = vec![cmp, "U32", "AND"];
            }
            self.emit_unguarded(Inst::new(
                "ISETP",
                &lo_mods,
                vec![
                    Operand::def(Reg::whole(lo, 1)),
                    Operand::def(Reg::phys(PReg::PT)),
                    alo,
                    blo,
                    pt.clone(),
                ],
            ));
            let mut hi_mods: Vec<&'static str> = vec![cmp];
            if ty.kind() != Kind::Signed {
                hi_mods.push("U32");
            }
            hi_mods.extend(["AND", "EX"]);
            self.emit_def(
                &dst,
                Inst::new(
                    "ISETP",
                    &hi_mods,
                    vec![
                        Operand::def(dst.reg()),
                        Operand::def(Reg::phys(PReg::PT)),
                        ahi,
                        bhi,
                        pt,
                        Operand::use_(Reg::whole(lo, 1)),
                    ],
                ),
            );
        } else {
            let ob = self.operand(vb);
            self.emit_def(
                &dst,
                Inst::new(
                    "ISETP",
                    &mods,
                    vec![
                        Operand::def(dst.reg()),
                        Operand::def(Reg::phys(PReg::PT)),
                        Operand::use_(ra),
                        ob,
                        pt,
                    ],
                ),
            );
        }
        self.commit(dst);
        true
    }

    pub(super) fn selp(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [ty] = types else { return false };
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.val(a, *ty), self.val(b, *ty)) else {
            return true;
        };
        let p = match c {
            ast::Operand::Expr(e) => match e.as_name().and_then(|n| self.lookup_reg(&n.text)) {
                Some((var, _)) => self.read_var(var),
                None => return false,
            },
            _ => return false,
        };
        let Some(dst) = self.dst(d) else { return false };
        for w in 0..dst.words {
            let ra = self.to_reg(self.word(va, w), 1);
            let ob = self.operand(self.word(vb, w));
            let out = if dst.words == 1 {
                dst.reg()
            } else {
                dst.word(w)
            };
            self.emit_def(
                &dst,
                Inst::new(
                    "SEL",
                    &[],
                    vec![Operand::def(out), Operand::use_(ra), ob, Operand::use_(p)],
                ),
            );
        }
        self.commit(dst);
        true
    }

    pub(super) fn logic(&mut self, ins: &ast::Instruction, opcode: &str, types: &[Ty]) -> bool {
        let [ty] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let lut: i64 = match opcode {
            "and" => 0xc0,
            "or" => 0xfc,
            _ => 0x3c,
        };
        let (Some(va), Some(vb)) = (self.val(a, *ty), self.val(b, *ty)) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        if ty.is_pred() {
            let (Val::Reg(pa), Val::Reg(pb)) = (va, vb) else {
                return false;
            };
            self.emit_def(
                &dst,
                Inst::new(
                    "PLOP3",
                    &["LUT"],
                    vec![
                        Operand::def(dst.reg()),
                        Operand::def(Reg::phys(PReg::PT)),
                        Operand::use_(pa),
                        Operand::use_(pb),
                        Operand::use_(Reg::phys(PReg::PT)),
                        Operand::imm(lut),
                        Operand::imm(0),
                    ],
                ),
            );
        } else {
            for w in 0..dst.words {
                let ra = self.to_reg(self.word(va, w), 1);
                let ob = self.operand(self.word(vb, w));
                let out = if dst.words == 1 {
                    dst.reg()
                } else {
                    dst.word(w)
                };
                self.emit_def(
                    &dst,
                    Inst::new(
                        "LOP3",
                        &["LUT"],
                        vec![
                            Operand::def(out),
                            Operand::use_(ra),
                            ob,
                            Operand::use_(Reg::phys(PReg::RZ)),
                            Operand::imm(lut),
                            Operand::use_(Reg::phys(PReg::PT)).inverted(),
                        ],
                    ),
                );
            }
        }
        self.commit(dst);
        true
    }

    pub(super) fn not(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [ty] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        let Some(va) = self.val(a, *ty) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        if ty.is_pred() {
            let Val::Reg(pa) = va else { return false };
            self.emit_def(
                &dst,
                Inst::new(
                    "PLOP3",
                    &["LUT"],
                    vec![
                        Operand::def(dst.reg()),
                        Operand::def(Reg::phys(PReg::PT)),
                        Operand::use_(pa),
                        Operand::use_(Reg::phys(PReg::PT)),
                        Operand::use_(Reg::phys(PReg::PT)),
                        Operand::imm(0x0f),
                        Operand::imm(0),
                    ],
                ),
            );
        } else {
            for w in 0..dst.words {
                let ra = self.to_reg(self.word(va, w), 1);
                let out = if dst.words == 1 {
                    dst.reg()
                } else {
                    dst.word(w)
                };
                self.emit_def(
                    &dst,
                    Inst::new(
                        "LOP3",
                        &["LUT"],
                        vec![
                            Operand::def(out),
                            Operand::use_(Reg::phys(PReg::RZ)),
                            Operand::use_(ra),
                            Operand::use_(Reg::phys(PReg::RZ)),
                            Operand::imm(0x33),
                            Operand::use_(Reg::phys(PReg::PT)).inverted(),
                        ],
                    ),
                );
            }
        }
        self.commit(dst);
        true
    }

    pub(super) fn shift(&mut self, ins: &ast::Instruction, opcode: &str, types: &[Ty]) -> bool {
        let [ty] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        if ty.bits() != 32 {
            return false;
        }
        let u32_ty = Ty::parse("u32").expect("u32");
        let (Some(va), Some(vb)) = (self.val(a, *ty), self.val(b, u32_ty)) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let ra = self.to_reg(va, 1);
        let ob = self.operand(vb);
        let rz = Operand::use_(Reg::phys(PReg::RZ));
        let inst = if opcode == "shl" {
            Inst::new(
                "SHF",
                &["L", "U32"],
                vec![Operand::def(dst.reg()), Operand::use_(ra), ob, rz],
            )
        } else {
            let mods: &[&'static str] = if ty.kind() == Kind::Signed {
                &["R", "S32", "HI"]
            } else {
                &["R", "U32", "HI"]
            };
            Inst::new(
                "SHF",
                mods,
                vec![Operand::def(dst.reg()), rz, ob, Operand::use_(ra)],
            )
        };
        self.emit_def(&dst, inst);
        self.commit(dst);
        true
    }
}
