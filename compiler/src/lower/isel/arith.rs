//! The arithmetic family: the dispatcher, the helpers every arithmetic recipe shares, and the
//! integer recipes for add/sub (with `.sat` and the `.cc` carry chains), mul/mad in every width,
//! logic, shifts and funnel shifts.
//!
//! The other recipes of the family live beside this file: `intops.rs` (min/max/abs/neg, bit
//! operations, prmt, dp4a, sad, mul24), `cmp.rs` (setp/set/selp/slct/testp), `float.rs` (float
//! and half arithmetic, the approximate functions), `fdiv.rs` (IEEE division, reciprocal and
//! square root), `idiv.rs` (integer division) and `convert.rs` (cvt).
//!
//! Conventions. 8- and 16-bit values live in 32-bit registers whose upper bits are undefined:
//! a recipe whose result depends on them extends first ([`Cx::a_ext`]: `LOP3 & 0xff[ff]` or
//! `PRMT 0x8880/0x9910`, as ptxas does). Temporaries are computed unguarded; the instruction
//! that writes the destination carries the PTX guard (and reads the old value, see
//! [`Cx::emit_def`]). The PTX carry flag `CC.CF` is an SSA variable of predicate class
//! (`%cc.cf`), so carry chains across blocks get PHIs like any register; it holds the hardware
//! carry of `a + ~b + 1` after a subtraction, which is what `subc`/`addc` read (ZLUDA's
//! `subc_cc_s32` test: a borrow leaves `CC.CF` = 0).

use super::{Cx, Dst, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::types::{Kind, Ty};
use crate::lower::ssa::{Var, VarInfo};
use crate::mir::*;

// ----------------------------------------------------------------------------------------------
// Operand shorthands

pub(super) fn rz() -> Operand {
    Operand::use_(Reg::phys(PReg::RZ))
}

/// RZ as a 64-bit operand (`RZ` of `IMAD.WIDE`'s addend, `DADD`'s zero).
pub(super) fn rz64() -> Operand {
    Operand::use_(Reg::Phys {
        reg: PReg::RZ,
        count: 2,
    })
}

pub(super) fn pt() -> Operand {
    Operand::use_(Reg::phys(PReg::PT))
}

/// `(a, k)` when one factor of a 64-bit product is a constant below 2^32 (the other, `a`, is
/// not a constant).
fn u32_factor(a: Val, b: Val) -> Option<(Val, i64)> {
    match (a, b) {
        (x @ Val::Reg(_), Val::Imm(k)) | (Val::Imm(k), x @ Val::Reg(_))
            if (0..=0xffff_ffff).contains(&k) =>
        {
            Some((x, k))
        }
        _ => None,
    }
}

pub(super) fn npt() -> Operand {
    pt().inverted()
}

/// `RZ` as a discarded register destination.
pub(super) fn rzd() -> Operand {
    Operand::def(Reg::phys(PReg::RZ))
}

/// Whether every modifier is one of `allowed` (a recipe must not drop a modifier it ignores).
pub(super) fn only(flags: &[&str], allowed: &[&str]) -> bool {
    flags.iter().all(|f| allowed.contains(f))
}

/// `PT` as a discarded predicate destination.
pub(super) fn ptd() -> Operand {
    Operand::def(Reg::phys(PReg::PT))
}

pub(super) fn u(r: Reg) -> Operand {
    Operand::use_(r)
}

pub(super) fn df(r: Reg) -> Operand {
    Operand::def(r)
}

/// `first` then `rest`, in one allocation (`vec![first]` and `extend` would grow it). The
/// recipes pass `rest` as an array: a `vec!` of it was an allocation and a free more per
/// machine instruction. Inlined, so that the array is built in place, not copied into the call.
#[inline(always)]
pub(super) fn with_first(first: Operand, rest: impl IntoIterator<Item = Operand>) -> Vec<Operand> {
    let rest = rest.into_iter();
    let mut ops = Vec::with_capacity(1 + rest.size_hint().0);
    ops.push(first);
    // One push per operand: `extend` of an array's iterator cost three times as much here.
    for o in rest {
        ops.push(o);
    }
    ops
}

pub(super) fn im(v: i64) -> Operand {
    Operand::imm(v)
}

/// An f32 immediate by its bits.
pub(super) fn fimm(bits: u32) -> Operand {
    Operand::new(OpKind::Float(FloatFmt::F32, u64::from(bits)))
}

/// Word `i` of a (two-word) register; a one-word register is its own word 0.
pub(super) fn wd(r: Reg, i: u8) -> Reg {
    match r {
        Reg::Virt { vreg, first, count } if count > 1 => Reg::word(vreg, first + i),
        Reg::Phys { reg, count } if count > 1 && !reg.is_zero() => Reg::phys(PReg {
            num: reg.num + i,
            ..reg
        }),
        Reg::Phys { reg, .. } => Reg::phys(reg),
        other => other,
    }
}

/// The rounding modifier of a float instruction (`.rn` is the default and prints nothing).
pub(super) fn rnd(flags: &[&str]) -> Option<&'static str> {
    flags.iter().find_map(|f| match *f {
        ".rz" => Some("RZ"),
        ".rm" => Some("RM"),
        ".rp" => Some("RP"),
        _ => None,
    })
}

pub(super) fn signed(ty: Ty) -> bool {
    ty.kind() == Kind::Signed
}

pub(super) fn ty(name: &str) -> Ty {
    Ty::parse(name).expect("a PTX type name")
}

/// The name of the SSA variable that models `CC.CF`.
const CC_NAME: &str = "%cc.cf";

/// The mask of the low `n` bits (n ≤ 64).
pub(super) fn low_mask(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// Sign- or zero-extends the low `n` bits of `v`.
pub(super) fn extend_imm(v: i64, n: u32, signed: bool) -> i64 {
    if n >= 64 {
        return v;
    }
    let m = low_mask(n) as i64;
    let x = v & m;
    if signed && n > 0 && (x >> (n - 1)) & 1 == 1 {
        x | !m
    } else {
        x
    }
}

/// The arithmetic family's opcodes, grouped as [`Cx::lower_arith`] dispatches on them. Found once
/// per distinct opcode text, where [`super::OpcodeMemo`] sorts it ([`ArithOp::of`]): matched on
/// the opcode's text for every instruction, the dispatch cost about 150 instructions per
/// instruction (its `match` compares the text with the arms' strings one by one; callgrind,
/// straight-line 64k: `lower_arith` 5.6M self and 4.1M in `slice::cmp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ArithOp {
    /// `add` | `sub`
    AddSub,
    /// `addc` | `subc`
    AddcSubc,
    /// `mul`
    Mul,
    /// `mad` | `madc`
    Mad,
    /// `mul24` | `mad24`
    Mul24,
    /// `sad`
    Sad,
    /// `setp`
    Setp,
    /// `set`
    Set,
    /// `selp`
    Selp,
    /// `slct`
    Slct,
    /// `testp`
    Testp,
    /// `and` | `or` | `xor`
    Logic,
    /// `not`
    Not,
    /// `cnot`
    Cnot,
    /// `lop3`
    Lop3,
    /// `shl` | `shr`
    Shift,
    /// `shf`
    Shf,
    /// `min` | `max`
    MinMax,
    /// `abs` | `neg`
    AbsNeg,
    /// `popc` | `clz` | `brev`
    BitCount,
    /// `bfind`
    Bfind,
    /// `bfe`
    Bfe,
    /// `bfi`
    Bfi,
    /// `szext`
    Szext,
    /// `bmsk`
    Bmsk,
    /// `prmt`
    Prmt,
    /// `dp4a` | `dp2a`
    Dp,
    /// `fma`
    Fma,
    /// `copysign`
    Copysign,
    /// `div` | `rem`
    DivRem,
    /// `rcp` | `sqrt` | `rsqrt`
    RcpSqrt,
    /// `sin` | `cos` | `lg2` | `ex2` | `tanh`
    Mufu,
    /// `cvt`
    Cvt,
    /// `vshl` | `vshr`
    VShift,
    /// Opcodes of the family ptxc does not lower yet (`vadd`, `fns`, …).
    Refused,
}

impl ArithOp {
    /// The group of an opcode of the family; `None` for the opcodes of other families.
    pub(super) fn of(opcode: &str) -> Option<ArithOp> {
        Some(match opcode {
            "add" | "sub" => ArithOp::AddSub,
            "addc" | "subc" => ArithOp::AddcSubc,
            "mul" => ArithOp::Mul,
            "mad" | "madc" => ArithOp::Mad,
            "mul24" | "mad24" => ArithOp::Mul24,
            "sad" => ArithOp::Sad,
            "setp" => ArithOp::Setp,
            "set" => ArithOp::Set,
            "selp" => ArithOp::Selp,
            "slct" => ArithOp::Slct,
            "testp" => ArithOp::Testp,
            "and" | "or" | "xor" => ArithOp::Logic,
            "not" => ArithOp::Not,
            "cnot" => ArithOp::Cnot,
            "lop3" => ArithOp::Lop3,
            "shl" | "shr" => ArithOp::Shift,
            "shf" => ArithOp::Shf,
            "min" | "max" => ArithOp::MinMax,
            "abs" | "neg" => ArithOp::AbsNeg,
            "popc" | "clz" | "brev" => ArithOp::BitCount,
            "bfind" => ArithOp::Bfind,
            "bfe" => ArithOp::Bfe,
            "bfi" => ArithOp::Bfi,
            "szext" => ArithOp::Szext,
            "bmsk" => ArithOp::Bmsk,
            "prmt" => ArithOp::Prmt,
            "dp4a" | "dp2a" => ArithOp::Dp,
            "fma" => ArithOp::Fma,
            "copysign" => ArithOp::Copysign,
            "div" | "rem" => ArithOp::DivRem,
            "rcp" | "sqrt" | "rsqrt" => ArithOp::RcpSqrt,
            "sin" | "cos" | "lg2" | "ex2" | "tanh" => ArithOp::Mufu,
            "cvt" => ArithOp::Cvt,
            "vshl" | "vshr" => ArithOp::VShift,
            "fns" | "vadd" | "vsub" | "vabsdiff" | "vmin" | "vmax" => ArithOp::Refused,
            _ => return None,
        })
    }
}

impl Cx<'_> {
    // ------------------------------------------------------------------------------------------
    // Temporaries and emission

    pub(super) fn a_tmp(&mut self) -> Reg {
        Reg::whole(self.new_vreg(RegClass::Gpr, 1), 1)
    }

    pub(super) fn a_tmp64(&mut self) -> Reg {
        Reg::whole(self.new_vreg(RegClass::Gpr, 2), 2)
    }

    pub(super) fn a_tmpp(&mut self) -> Reg {
        Reg::whole(self.new_vreg(RegClass::Pred, 1), 1)
    }

    /// Appends an instruction, not under the PTX guard.
    pub(super) fn a_put(&mut self, mn: &'static str, mods: &[&'static str], ops: Vec<Operand>) {
        self.emit_unguarded(Inst::new(mn, mods, ops));
    }

    /// `mn` into a fresh 32-bit temporary.
    pub(super) fn a_mk(
        &mut self,
        mn: &'static str,
        mods: &[&'static str],
        srcs: impl IntoIterator<Item = Operand>,
    ) -> Reg {
        let t = self.a_tmp();
        self.a_put(mn, mods, with_first(df(t), srcs));
        t
    }

    /// `LOP3.LUT d, a, b, RZ, lut, !PT`: a logic operation of two sources, with the lookup
    /// table of three inputs whose third is zero (`0xc0` a AND b, `0xfc` a OR b, `0x3c` a XOR b).
    pub(super) fn a_lop(&mut self, a: Operand, b: Operand, lut: i64) -> Reg {
        self.a_mk("LOP3", &["LUT"], [a, b, rz(), im(lut), npt()])
    }

    /// `mn` into a fresh 64-bit temporary.
    pub(super) fn a_mk64(
        &mut self,
        mn: &'static str,
        mods: &[&'static str],
        srcs: impl IntoIterator<Item = Operand>,
    ) -> Reg {
        let t = self.a_tmp64();
        self.a_put(mn, mods, with_first(df(t), srcs));
        t
    }

    /// A comparison-like instruction into a fresh predicate (`XSETP P, PT, …`).
    pub(super) fn a_mkp(
        &mut self,
        mn: &'static str,
        mods: &[&'static str],
        srcs: Vec<Operand>,
    ) -> Reg {
        let p = self.a_tmpp();
        let mut ops = vec![df(p), ptd()];
        ops.extend(srcs);
        self.a_put(mn, mods, ops);
        p
    }

    /// `@[!]p new = mn(srcs)`, keeping `old` where the predicate is false.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn a_mk_if(
        &mut self,
        p: Reg,
        neg: bool,
        old: Reg,
        mn: &'static str,
        mods: &[&'static str],
        srcs: Vec<Operand>,
    ) -> Reg {
        let words = old.count();
        let t = if words == 2 {
            self.a_tmp64()
        } else {
            self.a_tmp()
        };
        let mut ops = vec![df(t)];
        ops.extend(srcs);
        ops.push(Operand::new(OpKind::Prior(old)));
        self.emit_unguarded(Inst::new(mn, mods, ops).guarded(p, neg));
        t
    }

    /// `SEL d, a, b, p` into a fresh temporary.
    pub(super) fn a_sel(&mut self, a: Operand, b: Operand, p: Operand) -> Reg {
        self.a_mk("SEL", &[], [a, b, p])
    }

    /// A register holding a 32-bit value (immediates are moved into one).
    pub(super) fn a_reg(&mut self, v: Val) -> Reg {
        match v {
            Val::Reg(r) => wd(r, 0),
            Val::Imm(i) => self.a_mk("MOV", &[], [im(i & 0xffff_ffff)]),
            Val::F64(b) => self.a_mk("MOV", &[], [im((b & 0xffff_ffff) as i64)]),
            other => self.to_reg(other, 1),
        }
    }

    /// A register pair holding a 64-bit value.
    pub(super) fn a_reg64(&mut self, v: Val) -> Reg {
        match v {
            Val::Reg(r) if r.count() == 2 => r,
            Val::Reg(r) => {
                // A 32-bit register read as 64 bits (only cvt allows it): zero-extend.
                let t = self.a_tmp64();
                self.a_put("COPY", &[], vec![df(wd(t, 0)), u(r)]);
                self.a_put("MOV", &[], vec![df(wd(t, 1)), im(0)]);
                t
            }
            other => self.to_reg(other, 2),
        }
    }

    /// A SASS operand for a 32-bit value (float immediates of doubles go to registers first,
    /// since `Val::F64` operands would lose their low word).
    pub(super) fn a_op(&mut self, v: Val) -> Operand {
        match v {
            Val::Imm(i) => im(i & 0xffff_ffff),
            Val::F64(_) => {
                let r = self.a_reg(v);
                u(r)
            }
            Val::Reg(r) => u(wd(r, 0)),
            other => self.operand(other),
        }
    }

    /// A source operand of type `ty`; integer immediates are reduced to the type's width.
    pub(super) fn a_src(&mut self, op: &ast::Operand, t: Ty) -> Option<Val> {
        let v = self.val(op, t)?;
        Some(match v {
            Val::Imm(i) if t.bits() < 64 && t.is_integer_like() => {
                Val::Imm(extend_imm(i, t.bits(), false))
            }
            other => other,
        })
    }

    /// Extends the low `n` bits of a value to 32 bits (`n` < 32), as ptxas does: `LOP3.LUT R,
    /// R, 0xff[ff], RZ, 0xc0` for zero-, `PRMT R, R, 0x8880/0x9910, RZ` for sign-extension.
    pub(super) fn a_ext(&mut self, v: Val, n: u32, signed: bool) -> Val {
        if n >= 32 {
            return v;
        }
        match v {
            Val::Imm(i) => Val::Imm(extend_imm(i, n, signed) & 0xffff_ffff),
            Val::Reg(r) => {
                let r = wd(r, 0);
                let t = match (n, signed) {
                    (8, true) => self.a_mk("PRMT", &[], [u(r), im(0x8880), rz()]),
                    (16, true) => self.a_mk("PRMT", &[], [u(r), im(0x9910), rz()]),
                    (_, true) => self.a_mk("SGXT", &[], [u(r), im(i64::from(n))]),
                    (_, false) => self.a_lop(u(r), im(low_mask(n) as i64), 0xc0),
                };
                Val::Reg(t)
            }
            other => other,
        }
    }

    // ------------------------------------------------------------------------------------------
    // Destinations

    /// Emits `mn d, srcs…` defining the whole destination.
    pub(super) fn a_fin(
        &mut self,
        dst: &Dst,
        mn: &'static str,
        mods: &[&'static str],
        srcs: impl IntoIterator<Item = Operand>,
    ) {
        let ops = with_first(df(dst.reg()), srcs);
        self.emit_def(dst, Inst::new(mn, mods, ops));
    }

    /// Emits `mn d.word, srcs…` defining one word of a 64-bit destination.
    pub(super) fn a_fin_w(
        &mut self,
        dst: &Dst,
        w: u8,
        mn: &'static str,
        mods: &[&'static str],
        srcs: impl IntoIterator<Item = Operand>,
    ) {
        let ops = with_first(
            df(if dst.reg().count() == 1 {
                dst.reg()
            } else {
                dst.word(w)
            }),
            srcs,
        );
        self.emit_def(dst, Inst::new(mn, mods, ops));
    }

    /// Makes a computed value the destination's: a rename when the instruction is unguarded,
    /// a guarded move otherwise.
    pub(super) fn a_finish(&mut self, dst: Dst, r: Reg) {
        let words = dst.reg().count();
        let whole = matches!(r, Reg::Virt { first: 0, count, .. } if count == words);
        if self.guard.is_none() && whole {
            let v = r.vreg().expect("virtual");
            self.assign(dst, v);
            return;
        }
        let class = self.f.vreg(dst.vreg).class;
        if class == RegClass::Pred {
            let src = if r.count() == 1 { r } else { wd(r, 0) };
            self.a_fin(
                &dst,
                "PLOP3",
                &["LUT"],
                [ptd(), u(src), pt(), pt(), im(0x80), im(0)],
            );
        } else if self.guard.is_none() {
            // A word of a wider register (or a physical one): a copy the allocator may fold.
            for w in 0..words {
                let src = if words == 1 { wd(r, 0) } else { wd(r, w) };
                self.a_put(
                    "COPY",
                    &[],
                    vec![df(if words == 1 { dst.reg() } else { dst.word(w) }), u(src)],
                );
            }
        } else {
            for w in 0..words {
                let src = if words == 1 { wd(r, 0) } else { wd(r, w) };
                self.a_fin_w(&dst, w, "MOV", &[], [u(src)]);
            }
        }
        if !(self.guard.is_none() && whole) {
            self.commit(dst);
        }
    }

    /// The destination register's declared width in bits (a `cvt.u8.u32` into a `.b32`
    /// register extends to 32 bits).
    pub(super) fn a_dst_bits(&self, op: &ast::Operand) -> Option<u32> {
        let ast::Operand::Expr(e) = op else {
            return None;
        };
        let name = e.as_name()?;
        self.lookup_reg(&name.text).map(|(_, t)| t.bits())
    }

    /// A predicate source: a predicate register, possibly negated (`!%p`), or a constant.
    pub(super) fn a_pred_src(&mut self, op: &ast::Operand) -> Option<(Reg, bool)> {
        let (e, neg) = match op {
            ast::Operand::Expr(e) => (e, false),
            ast::Operand::Not(e, _) => (&**e, true),
            _ => return None,
        };
        if let Some(name) = e.as_name()
            && let Some((var, t)) = self.lookup_reg(&name.text)
            && t.is_pred()
        {
            return Some((self.read_var(var), neg));
        }
        if let Some(v) = crate::frontend::check::eval_const(e) {
            // A constant predicate: PT or !PT.
            return Some((Reg::phys(PReg::PT), (v == 0) != neg));
        }
        None
    }

    /// The SSA variable of the carry flag `CC.CF`.
    pub(super) fn a_cc(&mut self) -> Var {
        if let Some(i) = self.ssa.vars.iter().rposition(|v| &*v.name == CC_NAME) {
            return Var(i as u32);
        }
        self.ssa.new_var(VarInfo {
            class: RegClass::Pred,
            words: 1,
            name: CC_NAME.into(),
        })
    }

    fn a_cc_read(&mut self) -> Reg {
        let v = self.a_cc();
        self.read_var(v)
    }

    /// Makes `p` the new value of `CC.CF` (under the PTX guard: the old value where it is false).
    fn a_cc_write(&mut self, p: Reg) {
        let v = self.a_cc();
        let p = if let Some((g, neg)) = self.guard {
            let old = self.read_var(v);
            let n = self.a_tmpp();
            self.emit_unguarded(
                Inst::new(
                    "PLOP3",
                    &["LUT"],
                    vec![
                        df(n),
                        ptd(),
                        u(p),
                        pt(),
                        pt(),
                        im(0x80),
                        im(0),
                        Operand::new(OpKind::Prior(old)),
                    ],
                )
                .guarded(g, neg),
            );
            n
        } else {
            p
        };
        let vreg = p.vreg().expect("virtual");
        self.ssa.write(v, self.cur, vreg);
    }

    // ------------------------------------------------------------------------------------------
    // The dispatcher

    /// The arithmetic family: integer, float, half and conversion opcodes.
    pub(super) fn lower_arith(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        let (ins, types, flags) = (op.ins, op.types, op.flags);
        Some(match op.arith? {
            ArithOp::AddSub => self.add_sub(ins, op.opcode, types, flags),
            ArithOp::AddcSubc => self.addc_subc(ins, op.opcode == "subc", types, flags),
            ArithOp::Mul => self.mul(ins, types, flags),
            ArithOp::Mad => self.mad(ins, op.opcode == "madc", types, flags),
            ArithOp::Mul24 => self.mul24(ins, op.opcode == "mad24", types, flags),
            ArithOp::Sad => self.sad(ins, types),
            ArithOp::Setp => self.setp(ins, types, flags),
            ArithOp::Set => self.set_op(ins, types, flags),
            ArithOp::Selp => self.selp(ins, types),
            ArithOp::Slct => self.slct(ins, types, flags),
            ArithOp::Testp => self.testp(ins, types, flags),
            ArithOp::Logic => self.logic(ins, op.opcode, types),
            ArithOp::Not => self.not(ins, types),
            ArithOp::Cnot => self.cnot(ins, types),
            ArithOp::Lop3 => self.lop3(ins, types, flags),
            ArithOp::Shift => self.shift(ins, op.opcode, types),
            ArithOp::Shf => self.shf(ins, flags),
            ArithOp::MinMax => self.minmax(ins, op.opcode == "max", types, flags),
            ArithOp::AbsNeg => self.abs_neg(ins, op.opcode == "neg", types, flags),
            ArithOp::BitCount => self.bitcount(ins, op.opcode, types),
            ArithOp::Bfind => self.bfind(ins, types, flags),
            ArithOp::Bfe => self.bfe(ins, types),
            ArithOp::Bfi => self.bfi(ins, types),
            ArithOp::Szext => self.szext(ins, types, flags),
            ArithOp::Bmsk => self.bmsk(ins, flags),
            ArithOp::Prmt => self.prmt(ins, flags),
            ArithOp::Dp => self.dp(ins, op.opcode == "dp2a", types, flags),
            ArithOp::Fma => self.ffma(ins, types, flags),
            ArithOp::Copysign => self.copysign(ins, types),
            ArithOp::DivRem => self.div_rem(ins, op.opcode == "rem", types, flags),
            ArithOp::RcpSqrt => self.rcp_sqrt(ins, op.opcode, types, flags),
            ArithOp::Mufu => self.mufu_fn(ins, op.opcode, types, flags),
            ArithOp::Cvt => self.cvt_op(ins, types, flags),
            ArithOp::VShift => self.vshift(ins, op.opcode == "vshl", types, flags),
            ArithOp::Refused => false,
        })
    }

    // ------------------------------------------------------------------------------------------
    // add / sub

    pub(super) fn add_sub(
        &mut self,
        ins: &ast::Instruction,
        opcode: &str,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [t] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let sub = opcode == "sub";
        if !t.is_integer_like() {
            return self.float_add(ins, *t, sub, flags);
        }
        if t.bits() > 64 || t.bits() < 8 {
            return false;
        }
        let cc = flags.contains(&".cc");
        let sat = flags.contains(&".sat");
        if !only(flags, &[".cc", ".sat"]) || (cc && sat) {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, *t)) else {
            return true;
        };
        if sat {
            if t.name != "s32" {
                return false;
            }
            return self.add_sat(d, va, vb, sub);
        }
        let Some(dst) = self.dst(d) else { return false };
        if t.bits() == 64 {
            // IADD3 lo, P, a.lo, ±b.lo, RZ; IADD3.X hi, a.hi, b.hi|~b.hi, RZ, P, !PT.
            let carry = self.a_tmpp();
            let (alo, blo) = self.a_add_ops(self.word(va, 0), self.word(vb, 0), sub, false);
            let (ahi, bhi) = self.a_add_ops(self.word(va, 1), self.word(vb, 1), sub, true);
            self.a_fin_w(&dst, 0, "IADD3", &[], [df(carry), alo, blo, rz()]);
            if cc {
                let out = self.a_tmpp();
                self.a_fin_w(
                    &dst,
                    1,
                    "IADD3",
                    &["X"],
                    [df(out), ahi, bhi, rz(), u(carry), npt()],
                );
                self.commit(dst);
                self.a_cc_write(out);
            } else {
                self.a_fin_w(&dst, 1, "IADD3", &["X"], [ahi, bhi, rz(), u(carry), npt()]);
                self.commit(dst);
            }
            return true;
        }
        let (oa, ob) = self.a_add_ops(va, vb, sub, false);
        if cc {
            let out = self.a_tmpp();
            self.a_fin(&dst, "IADD3", &[], [df(out), oa, ob, rz()]);
            self.commit(dst);
            self.a_cc_write(out);
        } else {
            self.a_fin(&dst, "IADD3", &[], [oa, ob, rz()]);
            self.commit(dst);
        }
        true
    }

    /// The A and B operands of `a ± b` for IADD3: A must be a register, an immediate goes to B;
    /// subtraction negates B (`-b`), or complements it in the high word of a carry chain (`~b`,
    /// with `x` set).
    fn a_add_ops(&mut self, va: Val, vb: Val, sub: bool, x: bool) -> (Operand, Operand) {
        let negate = |o: Operand| {
            if !sub {
                o
            } else if x {
                o.inverted()
            } else {
                o.negated()
            }
        };
        match (va, vb) {
            (Val::Imm(ia), Val::Reg(rb)) => {
                // imm ± b = ±b + imm.
                let b = negate(u(wd(rb, 0)));
                (b, im(ia & 0xffff_ffff))
            }
            (_, Val::Imm(ib)) => {
                let ra = self.a_reg(va);
                let b = if !sub {
                    im(ib & 0xffff_ffff)
                } else if x {
                    im(!ib & 0xffff_ffff)
                } else {
                    im((ib.wrapping_neg()) & 0xffff_ffff)
                };
                (u(ra), b)
            }
            _ => {
                let ra = self.a_reg(va);
                let rb = self.a_reg(vb);
                (u(ra), negate(u(rb)))
            }
        }
    }

    /// `add.sat.s32`/`sub.sat.s32`, as ptxas: the wrapped sum, then the overflow cases from the
    /// sign bits of a, b and the sum (`PLOP3` on `.SIGN`), clamped with two `SEL`s.
    fn add_sat(&mut self, d: &ast::Operand, va: Val, vb: Val, sub: bool) -> bool {
        let ra = self.a_reg(va);
        let rb = self.a_reg(vb);
        let s = if sub {
            self.a_mk("IADD3", &[], [u(ra), u(rb).negated(), rz()])
        } else {
            self.a_mk("IADD3", &[], [u(ra), u(rb), rz()])
        };
        // LUT index = a·4 + b·2 + s. Add: positive overflow when a, b ≥ 0 > s (index 1), negative
        // when a, b < 0 ≤ s (index 6). Sub: a ≥ 0 > b, s < 0 (index 3); a < 0 ≤ b, s ≥ 0 (index 4).
        let (pos, negl) = if sub { (0x8, 0x10) } else { (0x2, 0x40) };
        let sign = |r: Reg| u(r).with_suffix("SIGN");
        let p0 = self.a_mkp(
            "PLOP3",
            &["LUT"],
            vec![sign(ra), sign(rb), sign(s), im(pos), im(0)],
        );
        let p1 = self.a_mkp(
            "PLOP3",
            &["LUT"],
            vec![sign(ra), sign(rb), sign(s), im(negl), im(0)],
        );
        let Some(dst) = self.dst(d) else { return false };
        let t = self.a_sel(u(s), im(0x7fff_ffff), u(p0).inverted());
        self.a_fin(&dst, "SEL", &[], [u(t), im(0x8000_0000), u(p1).inverted()]);
        self.commit(dst);
        true
    }

    /// `addc`/`subc` (`.cc` optional): `IADD3.X d, a, b|~b, RZ, CF, !PT`.
    fn addc_subc(
        &mut self,
        ins: &ast::Instruction,
        sub: bool,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [t] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        if !t.is_integer_like() || (t.bits() != 32 && t.bits() != 64) || !only(flags, &[".cc"]) {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, *t)) else {
            return true;
        };
        let cin = self.a_cc_read();
        let cc = flags.contains(&".cc");
        let Some(dst) = self.dst(d) else { return false };
        let words = if t.bits() == 64 { 2 } else { 1 };
        let mut carry = cin;
        for w in 0..words {
            let (oa, ob) = self.a_add_ops(self.word(va, w), self.word(vb, w), sub, true);
            let last = w + 1 == words;
            if last && !cc {
                self.a_fin_w(&dst, w, "IADD3", &["X"], [oa, ob, rz(), u(carry), npt()]);
            } else {
                let out = self.a_tmpp();
                self.a_fin_w(
                    &dst,
                    w,
                    "IADD3",
                    &["X"],
                    [df(out), oa, ob, rz(), u(carry), npt()],
                );
                carry = out;
            }
        }
        self.commit(dst);
        if cc {
            self.a_cc_write(carry);
        }
        true
    }

    // ------------------------------------------------------------------------------------------
    // mul / mad

    /// The A and B operands of a product for IMAD: A a register, an immediate in B.
    fn a_mul_ops(&mut self, va: Val, vb: Val) -> (Reg, Operand) {
        match (va, vb) {
            (Val::Imm(_), Val::Reg(_)) => {
                let rb = self.a_reg(vb);
                (rb, self.a_op(va))
            }
            _ => {
                let ra = self.a_reg(va);
                (ra, self.a_op(vb))
            }
        }
    }

    pub(super) fn mul(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [t] = types else { return false };
        if !t.is_integer_like() {
            return self.float_mul(ins, *t, flags);
        }
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, *t)) else {
            return true;
        };
        let sg = signed(*t);
        let hi = flags.contains(&".hi");
        let wide = flags.contains(&".wide");
        if !only(flags, &[".lo", ".hi", ".wide"]) {
            return false;
        }
        match t.bits() {
            32 => {
                let (ra, ob) = self.a_mul_ops(va, vb);
                let Some(dst) = self.dst(d) else { return false };
                let mods: &[&'static str] = match (wide, hi, sg) {
                    (true, _, true) => &["WIDE"],
                    (true, _, false) => &["WIDE", "U32"],
                    (_, true, true) => &["HI"],
                    (_, true, false) => &["HI", "U32"],
                    _ => &[],
                };
                let c = if wide { rz64() } else { rz() };
                self.a_fin(&dst, "IMAD", mods, [u(ra), ob, c]);
                self.commit(dst);
            }
            16 | 8 if !hi && !wide => {
                let (ra, ob) = self.a_mul_ops(va, vb);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "IMAD", &[], [u(ra), ob, rz()]);
                self.commit(dst);
            }
            16 => {
                // Extend both, multiply in 32 bits; .hi takes bits 16..31.
                let ea = self.a_ext(va, 16, sg);
                let eb = self.a_ext(vb, 16, sg);
                let (ra, ob) = self.a_mul_ops(ea, eb);
                let Some(dst) = self.dst(d) else { return false };
                if wide {
                    self.a_fin(&dst, "IMAD", &[], [u(ra), ob, rz()]);
                } else {
                    let p = self.a_mk("IMAD", &[], [u(ra), ob, rz()]);
                    let m: &[&'static str] = if sg {
                        &["R", "S32", "HI"]
                    } else {
                        &["R", "U32", "HI"]
                    };
                    self.a_fin(&dst, "SHF", m, [rz(), im(16), u(p)]);
                }
                self.commit(dst);
            }
            64 if !wide
                && !hi
                && let Some((x, k)) = u32_factor(va, vb) =>
            {
                // By a 32-bit constant: `IMAD.WIDE.U32 d, a.lo, k, RZ`, plus `a.hi·k` into the
                // high word unless a.hi is known to be zero (a zero-extended 32-bit value, the
                // `cvt.u64.u32` + `mul.lo.u64` of address arithmetic): ptxas's one instruction.
                let ra = self.a_reg64(x);
                let Some(dst) = self.dst(d) else { return false };
                if self.high_word_is_zero(ra) {
                    // The 32-bit value itself, so that the zero extension goes unused.
                    let lo = self.word_copied_from(ra, 0).unwrap_or(wd(ra, 0));
                    self.a_fin(&dst, "IMAD", &["WIDE", "U32"], [u(lo), im(k), rz64()]);
                } else {
                    let h = self.a_mk("IMAD", &[], [u(wd(ra, 1)), im(k), rz()]);
                    let w = self.a_mk64("IMAD", &["WIDE", "U32"], [u(wd(ra, 0)), im(k), rz64()]);
                    self.a_fin_w(&dst, 0, "MOV", &[], [u(wd(w, 0))]);
                    self.a_fin_w(&dst, 1, "IADD3", &[], [u(wd(w, 1)), u(h), rz()]);
                }
                self.commit(dst);
            }
            64 if !wide => {
                let ra = self.a_reg64(va);
                let rb = self.a_reg64(vb);
                let Some(dst) = self.dst(d) else { return false };
                if hi {
                    let r = self.mul_hi64(ra, rb, sg);
                    self.a_finish(dst, r);
                } else {
                    self.mul_lo64(&dst, ra, rb, None);
                    self.commit(dst);
                }
            }
            _ => return false,
        }
        true
    }

    /// The unguarded `MOV`/`COPY` of this block (looking back a few instructions) that defines
    /// word `w` of a 64-bit register, as its source operand.
    fn word_source(&self, r: Reg, w: u8) -> Option<&OpKind> {
        let Reg::Virt {
            vreg,
            first: 0,
            count: 2,
        } = r
        else {
            return None;
        };
        let word = Reg::word(vreg, w);
        let insts = &self.f.block(self.cur).insts;
        for i in insts.iter().rev().take(64) {
            if !i.defs().any(|d| d.vreg() == Some(vreg)) {
                continue;
            }
            let OpKind::Reg(d) = &i.ops[0].kind else {
                return None;
            };
            if d.reg != word {
                continue;
            }
            let plain = i.guard.is_none() && i.ops.len() == 2;
            return (plain && matches!(i.mnemonic, "MOV" | "COPY")).then_some(&i.ops[1].kind);
        }
        None
    }

    /// Whether the high word of a 64-bit register was set to zero in this block (a zero
    /// extension: `MOV r.w1, 0x0` or a copy of `RZ`).
    fn high_word_is_zero(&self, r: Reg) -> bool {
        match self.word_source(r, 1) {
            Some(OpKind::Int(0)) => true,
            Some(OpKind::Reg(s)) => s.reg == Reg::phys(PReg::RZ),
            _ => false,
        }
    }

    /// The 32-bit register word `w` of a 64-bit register was copied from in this block.
    fn word_copied_from(&self, r: Reg, w: u8) -> Option<Reg> {
        match self.word_source(r, w) {
            Some(OpKind::Reg(s)) if s.reg.count() == 1 && s.reg.vreg().is_some() => Some(s.reg),
            _ => None,
        }
    }

    /// The low 64 bits of `a·b (+ c)`, as ptxas: the cross products in 32-bit IMADs, the low
    /// product (plus c) in an `IMAD.WIDE.U32`, the cross sum added to its high word.
    fn mul_lo64(&mut self, dst: &Dst, ra: Reg, rb: Reg, c: Option<Reg>) {
        let t1 = self.a_mk("IMAD", &[], [u(wd(ra, 1)), u(wd(rb, 0)), rz()]);
        let t2 = self.a_mk("IMAD", &[], [u(wd(ra, 0)), u(wd(rb, 1)), u(t1)]);
        let cc = c.map_or(rz64(), u);
        let w = self.a_mk64("IMAD", &["WIDE", "U32"], [u(wd(ra, 0)), u(wd(rb, 0)), cc]);
        self.a_fin_w(dst, 0, "MOV", &[], [u(wd(w, 0))]);
        self.a_fin_w(dst, 1, "IADD3", &[], [u(wd(w, 1)), u(t2), rz()]);
    }

    /// The high 64 bits of the 128-bit product (ptxas's sequence: the partial products with
    /// `IMAD.WIDE.U32` and carry-outs; for signed operands the unsigned high part is corrected by
    /// subtracting b where a < 0 and a where b < 0).
    pub(super) fn mul_hi64(&mut self, ra: Reg, rb: Reg, sg: bool) -> Reg {
        let (a0, a1, b0, b1) = (wd(ra, 0), wd(ra, 1), wd(rb, 0), wd(rb, 1));
        // m = a1·b0 (64 bits); n = a0·b1 + m with carry-out P0.
        let m = self.a_mk64("IMAD", &["WIDE", "U32"], [u(a1), u(b0), rz64()]);
        let p0 = self.a_tmpp();
        let n = self.a_tmp64();
        self.a_put(
            "IMAD",
            &["WIDE", "U32"],
            vec![df(n), df(p0), u(a0), u(b1), u(m)],
        );
        let l = self.a_mk64("IMAD", &["WIDE", "U32"], [u(a0), u(b0), rz64()]);
        // k = {n.hi, carry}: the part of the middle sum above bit 64.
        let k = self.a_tmp64();
        self.a_put("COPY", &[], vec![df(wd(k, 0)), u(wd(n, 1))]);
        self.a_put(
            "IADD3",
            &["X"],
            vec![df(wd(k, 1)), rz(), rz(), rz(), u(p0), npt()],
        );
        // The carry of l.hi + n.lo, then a1·b1 + k + carry.
        let p1 = self.a_tmpp();
        self.a_put(
            "IADD3",
            &[],
            vec![rzd(), df(p1), u(wd(l, 1)), u(wd(n, 0)), rz()],
        );
        let h = self.a_mk64("IMAD", &["WIDE", "U32", "X"], [u(a1), u(b1), u(k), u(p1)]);
        if !sg {
            return h;
        }
        // Signed: h -= (a < 0 ? b : 0) + (b < 0 ? a : 0), in 64 bits.
        let mut h = h;
        for (x, y) in [(ra, rb), (rb, ra)] {
            let neg = self.a_mkp("ISETP", &["LT", "AND"], vec![u(wd(x, 1)), rz(), pt()]);
            let c = self.a_tmpp();
            let lo = self.a_tmp();
            self.a_put(
                "IADD3",
                &[],
                vec![df(lo), df(c), u(wd(h, 0)), u(wd(y, 0)).negated(), rz()],
            );
            let hi = self.a_mk(
                "IADD3",
                &["X"],
                [u(wd(h, 1)), u(wd(y, 1)).inverted(), rz(), u(c), npt()],
            );
            let n = self.a_tmp64();
            self.a_put("SEL", &[], vec![df(wd(n, 0)), u(lo), u(wd(h, 0)), u(neg)]);
            self.a_put("SEL", &[], vec![df(wd(n, 1)), u(hi), u(wd(h, 1)), u(neg)]);
            h = n;
        }
        h
    }

    pub(super) fn mad(
        &mut self,
        ins: &ast::Instruction,
        carry_in: bool,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [t] = types else { return false };
        if !t.is_integer_like() {
            if carry_in {
                return false;
            }
            return self.ffma(ins, types, flags);
        }
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        let sg = signed(*t);
        let hi = flags.contains(&".hi");
        let wide = flags.contains(&".wide");
        let cc = flags.contains(&".cc");
        if !only(flags, &[".lo", ".hi", ".wide", ".cc"]) {
            return false;
        }
        let cty = if wide { t.doubled().unwrap_or(*t) } else { *t };
        let (Some(va), Some(vb), Some(vc)) =
            (self.a_src(a, *t), self.a_src(b, *t), self.a_src(c, cty))
        else {
            return true;
        };
        if (carry_in || cc) && (t.bits() != 32 || wide) {
            return false;
        }
        match t.bits() {
            32 if carry_in || cc => {
                // The product, then the carry-chain add (ptxas: IMAD + IADD3 / IMAD.X).
                let (ra, ob) = self.a_mul_ops(va, vb);
                let pm: &[&'static str] = match (hi, sg) {
                    (true, true) => &["HI"],
                    (true, false) => &["HI", "U32"],
                    _ => &[],
                };
                let p = self.a_mk("IMAD", pm, [u(ra), ob, rz()]);
                let rc = self.a_reg(vc);
                let Some(dst) = self.dst(d) else { return false };
                let out = cc.then(|| self.a_tmpp());
                let mut ops = Vec::new();
                if let Some(o) = out {
                    ops.push(df(o));
                }
                ops.extend([u(p), u(rc), rz()]);
                if carry_in {
                    let cin = self.a_cc_read();
                    ops.extend([u(cin), npt()]);
                    self.a_fin(&dst, "IADD3", &["X"], ops);
                } else {
                    self.a_fin(&dst, "IADD3", &[], ops);
                }
                self.commit(dst);
                if let Some(o) = out {
                    self.a_cc_write(o);
                }
            }
            32 => {
                let (ra, ob) = self.a_mul_ops(va, vb);
                if hi {
                    // hi(a·b) + c.
                    let m: &[&'static str] = if sg { &["HI"] } else { &["HI", "U32"] };
                    let p = self.a_mk("IMAD", m, [u(ra), ob, rz()]);
                    let oc = self.a_op(vc);
                    let Some(dst) = self.dst(d) else { return false };
                    self.a_fin(&dst, "IADD3", &[], [u(p), oc, rz()]);
                    self.commit(dst);
                } else {
                    // An immediate addend goes in C when B is a register (form 2, `IMAD R0,
                    // R5, R5, 0x3`: ptxas on docs/passes/examples/reconverge/if_convert.ptx);
                    // else C is a register.
                    let oc = match vc {
                        Val::Imm(i) if !wide && matches!(ob.kind, OpKind::Reg(_)) => {
                            im(i & 0xffff_ffff)
                        }
                        _ if wide => u(self.a_reg64(vc)),
                        _ => u(self.a_reg(vc)),
                    };
                    let Some(dst) = self.dst(d) else { return false };
                    let m: &[&'static str] = match (wide, sg) {
                        (true, true) => &["WIDE"],
                        (true, false) => &["WIDE", "U32"],
                        _ => &[],
                    };
                    self.a_fin(&dst, "IMAD", m, [u(ra), ob, oc]);
                    self.commit(dst);
                }
            }
            16 | 8 if !hi && !wide => {
                let (ra, ob) = self.a_mul_ops(va, vb);
                let rc = self.a_reg(vc);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "IMAD", &[], [u(ra), ob, u(rc)]);
                self.commit(dst);
            }
            16 => {
                let ea = self.a_ext(va, 16, sg);
                let eb = self.a_ext(vb, 16, sg);
                let (ra, ob) = self.a_mul_ops(ea, eb);
                let rc = self.a_reg(vc);
                let Some(dst) = self.dst(d) else { return false };
                if wide {
                    self.a_fin(&dst, "IMAD", &[], [u(ra), ob, u(rc)]);
                } else {
                    let p = self.a_mk("IMAD", &[], [u(ra), ob, rz()]);
                    let m: &[&'static str] = if sg {
                        &["R", "S32", "HI"]
                    } else {
                        &["R", "U32", "HI"]
                    };
                    let h = self.a_mk("SHF", m, [rz(), im(16), u(p)]);
                    self.a_fin(&dst, "IADD3", &[], [u(h), u(rc), rz()]);
                }
                self.commit(dst);
            }
            64 if !wide => {
                let ra = self.a_reg64(va);
                let rb = self.a_reg64(vb);
                let rc = self.a_reg64(vc);
                let Some(dst) = self.dst(d) else { return false };
                if hi {
                    let h = self.mul_hi64(ra, rb, sg);
                    let p = self.a_tmpp();
                    self.a_fin_w(
                        &dst,
                        0,
                        "IADD3",
                        &[],
                        [df(p), u(wd(h, 0)), u(wd(rc, 0)), rz()],
                    );
                    self.a_fin_w(
                        &dst,
                        1,
                        "IADD3",
                        &["X"],
                        [u(wd(h, 1)), u(wd(rc, 1)), rz(), u(p), npt()],
                    );
                } else {
                    self.mul_lo64(&dst, ra, rb, Some(rc));
                }
                self.commit(dst);
            }
            _ => return false,
        }
        true
    }

    // ------------------------------------------------------------------------------------------
    // Logic

    pub(super) fn logic(&mut self, ins: &ast::Instruction, opcode: &str, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let lut: i64 = match opcode {
            "and" => 0xc0,
            "or" => 0xfc,
            _ => 0x3c,
        };
        if t.is_pred() {
            let (Some((pa, na)), Some((pb, nb))) = (self.a_pred_src(a), self.a_pred_src(b)) else {
                return false;
            };
            let Some(dst) = self.dst(d) else { return false };
            let oa = if na { u(pa).inverted() } else { u(pa) };
            let ob = if nb { u(pb).inverted() } else { u(pb) };
            // PLOP3's LUT over (A, B, C=PT): index a·4 + b·2 + 1.
            let lut = match opcode {
                "and" => 0x80,
                "or" => 0xa8,
                _ => 0x28,
            };
            self.a_fin(
                &dst,
                "PLOP3",
                &["LUT"],
                [ptd(), oa, ob, pt(), im(lut), im(0)],
            );
            self.commit(dst);
            return true;
        }
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, *t)) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let words = dst.reg().count();
        for w in 0..words {
            let (x, y) = (self.word(va, w), self.word(vb, w));
            let (x, y) = if matches!(x, Val::Imm(_)) {
                (y, x)
            } else {
                (x, y)
            };
            let ra = self.a_reg(x);
            let ob = self.a_op(y);
            self.a_fin_w(&dst, w, "LOP3", &["LUT"], [u(ra), ob, rz(), im(lut), npt()]);
        }
        self.commit(dst);
        true
    }

    pub(super) fn not(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        if t.is_pred() {
            let Some((pa, na)) = self.a_pred_src(a) else {
                return false;
            };
            let Some(dst) = self.dst(d) else { return false };
            let oa = if na { u(pa).inverted() } else { u(pa) };
            self.a_fin(
                &dst,
                "PLOP3",
                &["LUT"],
                [ptd(), oa, pt(), pt(), im(0x0f), im(0)],
            );
            self.commit(dst);
            return true;
        }
        let Some(va) = self.a_src(a, *t) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let words = dst.reg().count();
        for w in 0..words {
            let x = self.word(va, w);
            let ox = self.a_op(x);
            self.a_fin_w(&dst, w, "LOP3", &["LUT"], [rz(), ox, rz(), im(0x33), npt()]);
        }
        self.commit(dst);
        true
    }

    /// `cnot`: `d = a == 0 ? 1 : 0` (ISETP.EQ + SEL).
    fn cnot(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        let Some(va) = self.a_src(a, *t) else {
            return true;
        };
        let p = self.a_is_zero(va, t.bits());
        let Some(dst) = self.dst(d) else { return false };
        if t.bits() == 64 {
            self.a_fin_w(&dst, 0, "SEL", &[], [rz(), im(1), u(p).inverted()]);
            self.a_fin_w(&dst, 1, "MOV", &[], [im(0)]);
        } else {
            self.a_fin(&dst, "SEL", &[], [rz(), im(1), u(p).inverted()]);
        }
        self.commit(dst);
        true
    }

    /// A predicate: the low `n` bits of `v` are all zero.
    pub(super) fn a_is_zero(&mut self, v: Val, n: u32) -> Reg {
        if n == 64 {
            let lo = self.a_reg(self.word(v, 0));
            let hi = self.a_reg(self.word(v, 1));
            return self.a_cmp64("EQ", false, u(lo), u(hi), rz(), rz());
        }
        let e = self.a_ext(v, n, false);
        let r = self.a_reg(e);
        self.a_mkp("ISETP", &["EQ", "U32", "AND"], vec![u(r), rz(), pt()])
    }

    /// `lop3.b32 d, a, b, c, lut` → `LOP3.LUT d, a, b, c, lut, !PT`.
    fn lop3(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [t] = types else { return false };
        if t.bits() != 32 || !flags.is_empty() {
            return false;
        }
        let [d, a, b, c, l] = &ins.operands[..] else {
            return false;
        };
        let ast::Operand::Expr(le) = l else {
            return false;
        };
        let Some(lut) = crate::frontend::check::eval_const(le) else {
            return false;
        };
        let (Some(va), Some(vb), Some(vc)) =
            (self.a_src(a, *t), self.a_src(b, *t), self.a_src(c, *t))
        else {
            return true;
        };
        let ra = self.a_reg(va);
        let ob = self.a_op(vb);
        let rc = self.a_reg(vc);
        let Some(dst) = self.dst(d) else { return false };
        self.a_fin(
            &dst,
            "LOP3",
            &["LUT"],
            [u(ra), ob, u(rc), im((lut as i64) & 0xff), npt()],
        );
        self.commit(dst);
        true
    }

    // ------------------------------------------------------------------------------------------
    // Shifts

    pub(super) fn shift(&mut self, ins: &ast::Instruction, opcode: &str, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let n = t.bits();
        if !matches!(n, 16 | 32 | 64) {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, ty("u32"))) else {
            return true;
        };
        let left = opcode == "shl";
        let sg = signed(*t) && !left;
        let r_mods: &[&'static str] = if sg {
            &["R", "S32", "HI"]
        } else {
            &["R", "U32", "HI"]
        };
        if n == 64 {
            let ra = self.a_reg64(va);
            let Some(dst) = self.dst(d) else { return false };
            let (lo, hi) = (wd(ra, 0), wd(ra, 1));
            match vb {
                Val::Imm(s) if s >= 32 => {
                    // Whole-word shifts.
                    let s = s.min(64);
                    if left {
                        self.a_fin_w(&dst, 0, "MOV", &[], [im(0)]);
                        if s >= 64 {
                            self.a_fin_w(&dst, 1, "MOV", &[], [im(0)]);
                        } else {
                            self.a_fin_w(&dst, 1, "SHF", &["L", "U32"], [u(lo), im(s - 32), rz()]);
                        }
                    } else if sg {
                        let s = (s - 32).min(31);
                        self.a_fin_w(&dst, 0, "SHF", &["R", "S32", "HI"], [rz(), im(s), u(hi)]);
                        self.a_fin_w(&dst, 1, "SHF", &["R", "S32", "HI"], [rz(), im(31), u(hi)]);
                    } else {
                        if s >= 64 {
                            self.a_fin_w(&dst, 0, "MOV", &[], [im(0)]);
                        } else {
                            self.a_fin_w(
                                &dst,
                                0,
                                "SHF",
                                &["R", "U32", "HI"],
                                [rz(), im(s - 32), u(hi)],
                            );
                        }
                        self.a_fin_w(&dst, 1, "MOV", &[], [im(0)]);
                    }
                }
                _ => {
                    let ob = match vb {
                        Val::Imm(s) => im(s),
                        other => {
                            let r = self.a_reg(other);
                            u(r)
                        }
                    };
                    if left {
                        self.a_fin_w(&dst, 0, "SHF", &["L", "U32"], [u(lo), ob.clone(), rz()]);
                        self.a_fin_w(&dst, 1, "SHF", &["L", "U64", "HI"], [u(lo), ob, u(hi)]);
                    } else {
                        let m: &[&'static str] = if sg { &["R", "S64"] } else { &["R", "U64"] };
                        self.a_fin_w(&dst, 0, "SHF", m, [u(lo), ob.clone(), u(hi)]);
                        self.a_fin_w(&dst, 1, "SHF", r_mods, [rz(), ob, u(hi)]);
                    }
                }
            }
            self.commit(dst);
            return true;
        }
        // 16 bits: a right shift extends first; a register amount is clamped to 0xffff as
        // ptxas does (VIMNMX.U32).
        let va = if n == 16 && !left {
            self.a_ext(va, 16, sg)
        } else {
            va
        };
        let ob = match vb {
            Val::Imm(s) => {
                let s = s.min(32);
                if sg { im(s.min(31)) } else { im(s) }
            }
            other => {
                let r = self.a_reg(other);
                if n == 16 {
                    let c = self.a_mk("VIMNMX", &["U32"], [u(r), im(0xffff), pt()]);
                    u(c)
                } else {
                    u(r)
                }
            }
        };
        let ra = self.a_reg(va);
        let Some(dst) = self.dst(d) else { return false };
        if left {
            self.a_fin(&dst, "SHF", &["L", "U32"], [u(ra), ob, rz()]);
        } else {
            self.a_fin(&dst, "SHF", r_mods, [rz(), ob, u(ra)]);
        }
        self.commit(dst);
        true
    }

    /// `shf.{l,r}.{wrap,clamp}.b32 d, a, b, c`: the funnel `b:a` shifted by c →
    /// `SHF.L[.W].U32.HI d, a, c, b` (upper word) / `SHF.R[.W].U32 d, a, c, b` (lower word).
    fn shf(&mut self, ins: &ast::Instruction, flags: &[&str]) -> bool {
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        let left = flags.contains(&".l");
        let wrap = flags.contains(&".wrap");
        if !(left || flags.contains(&".r")) || !(wrap || flags.contains(&".clamp")) {
            return false;
        }
        let t = ty("b32");
        let (Some(va), Some(vb), Some(vc)) = (self.a_src(a, t), self.a_src(b, t), self.a_src(c, t))
        else {
            return true;
        };
        let ra = self.a_reg(va);
        let rb = self.a_reg(vb);
        let oc = self.a_op(vc);
        let Some(dst) = self.dst(d) else { return false };
        let mods: &[&'static str] = match (left, wrap) {
            (true, true) => &["L", "W", "U32", "HI"],
            (true, false) => &["L", "U32", "HI"],
            (false, true) => &["R", "W", "U32"],
            (false, false) => &["R", "U32"],
        };
        self.a_fin(&dst, "SHF", mods, [u(ra), oc, u(rb)]);
        self.commit(dst);
        true
    }

    /// `vshl`/`vshr.dtype.atype.u32{.clamp,.wrap}[.add] d, a, b[, c]` on whole 32-bit
    /// registers (no byte/half selectors, no `.sat`): the amount clamped to 32 (VIMNMX.U32) or
    /// wrapped (& 31), the shift, then `+ c`.
    fn vshift(&mut self, ins: &ast::Instruction, left: bool, types: &[Ty], flags: &[&str]) -> bool {
        let [dt, at, bt] = types else { return false };
        if dt.bits() != 32
            || at.bits() != 32
            || bt.name != "u32"
            || !only(flags, &[".clamp", ".wrap", ".add"])
        {
            return false;
        }
        let wrap = flags.contains(&".wrap");
        if wrap == flags.contains(&".clamp") {
            return false;
        }
        let add = flags.contains(&".add");
        let ops = &ins.operands[..];
        if ops.len() != if add { 4 } else { 3 } {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(&ops[1], *at), self.a_src(&ops[2], *bt)) else {
            return true;
        };
        let vc = if add {
            match self.a_src(&ops[3], *dt) {
                Some(v) => Some(v),
                None => return true,
            }
        } else {
            None
        };
        let ra = self.a_reg(va);
        let amt = match vb {
            Val::Imm(i) => im(if wrap { i & 31 } else { i.min(32) }),
            other => {
                let rb = self.a_reg(other);
                let t = if wrap {
                    self.a_lop(u(rb), im(31), 0xc0)
                } else {
                    self.a_mk("VIMNMX", &["U32"], [u(rb), im(32), pt()])
                };
                u(t)
            }
        };
        let sh = if left {
            self.a_mk("SHF", &["L", "U32"], [u(ra), amt, rz()])
        } else {
            let m: &[&'static str] = if signed(*at) {
                &["R", "S32", "HI"]
            } else {
                &["R", "U32", "HI"]
            };
            self.a_mk("SHF", m, [rz(), amt, u(ra)])
        };
        let Some(dst) = self.dst(&ops[0]) else {
            return false;
        };
        match vc {
            Some(c) => {
                let oc = self.a_op(c);
                self.a_fin(&dst, "IADD3", &[], [u(sh), oc, rz()]);
                self.commit(dst);
            }
            None => self.a_finish(dst, sh),
        }
        true
    }
}
