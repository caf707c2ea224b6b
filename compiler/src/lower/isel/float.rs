//! Float and half arithmetic: add/sub/mul/fma/mad (f32 with every rounding mode, `.ftz`,
//! `.sat`; f64; f16/bf16 scalars and pairs), min/max (`.NaN`), abs/neg, copysign, the MUFU
//! functions (sin, cos, lg2, ex2, tanh) and the approximate reciprocal, square root and
//! division, each as ptxas lowers it.

use super::arith::{df, fimm, im, npt, only, pt, rnd, rz, rz64, u, wd};
use super::{Cx, Val};
use crate::frontend::ast;
use crate::frontend::types::Ty;
use crate::mir::*;

/// f32 constants ptxas uses.
pub(super) mod k {
    /// 2^-126, the smallest normal f32 (printed 1.175494350822287508e-38).
    pub const MIN_NORMAL: u32 = 0x0080_0000;
    /// 2^126 (printed 8.50705917302346158658e+37).
    pub const TWO_126: u32 = 0x7e80_0000;
    /// 2^24.
    pub const TWO_24: u32 = 0x4b80_0000;
    pub const QUARTER: u32 = 0x3e80_0000;
    pub const HALF: u32 = 0x3f00_0000;
    pub const ONE: u32 = 0x3f80_0000;
    /// 2^-12.
    pub const TWO_M12: u32 = 0x3980_0000;
    /// 2^12.
    pub const TWO_12: u32 = 0x4580_0000;
    pub const MINUS_24: u32 = 0xc1c0_0000;
    pub const MINUS_126: u32 = 0xc2fc_0000;
    /// 1/(2π) as ptxas rounds it (0.15915493667125701904).
    pub const INV_2PI: u32 = 0x3e22_f983;
}

fn half_kind(t: Ty) -> Option<(bool, bool)> {
    // (bf16, x2)
    match t.name {
        "f16" => Some((false, false)),
        "f16x2" => Some((false, true)),
        "bf16" => Some((true, false)),
        "bf16x2" => Some((true, true)),
        _ => None,
    }
}

impl Cx<'_> {
    /// The FTZ/rounding/SAT modifiers of an f32 instruction in nvdisasm's order.
    fn f32_mods(flags: &[&str], allow_sat: bool) -> Option<Vec<&'static str>> {
        if !only(
            flags,
            &[".ftz", ".rn", ".rz", ".rm", ".rp", ".sat", ".approx"],
        ) {
            return None;
        }
        if flags.contains(&".sat") && !allow_sat {
            return None;
        }
        let mut m = Vec::new();
        if flags.contains(&".ftz") {
            m.push("FTZ");
        }
        if let Some(r) = rnd(flags) {
            m.push(r);
        }
        if flags.contains(&".sat") {
            m.push("SAT");
        }
        Some(m)
    }

    /// A 32-bit float source in a register, the other as an operand: `(reg, operand, swapped)`.
    fn a_fops(&mut self, va: Val, vb: Val) -> (Reg, Operand, bool) {
        if !matches!(va, Val::Reg(_)) && matches!(vb, Val::Reg(_)) {
            let rb = self.a_reg(vb);
            let oa = self.a_fop(va);
            (rb, oa, true)
        } else {
            let ra = self.a_reg(va);
            let ob = self.a_fop(vb);
            (ra, ob, false)
        }
    }

    /// Negates a float operand (for immediates, by flipping the sign bit).
    fn fneg(o: Operand) -> Operand {
        match o.kind {
            OpKind::Float(FloatFmt::F32, b) => fimm((b as u32) ^ 0x8000_0000),
            OpKind::Float(FloatFmt::F64Hi, b) => {
                Operand::new(OpKind::Float(FloatFmt::F64Hi, b ^ 0x8000_0000))
            }
            _ => o.negated(),
        }
    }

    /// `add`/`sub` on floats: FADD, DADD, HADD2.
    pub(super) fn float_add(
        &mut self,
        ins: &ast::Instruction,
        t: Ty,
        sub: bool,
        flags: &[&str],
    ) -> bool {
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.a_src(a, t), self.a_src(b, t)) else {
            return true;
        };
        match t.name {
            "f32" => {
                let Some(mods) = Self::f32_mods(flags, true) else {
                    return false;
                };
                let (ra, ob, swapped) = self.a_fops(va, vb);
                let Some(dst) = self.dst(d) else { return false };
                // a − b = a + (−b); b − a with a swapped in: −b + a.
                let (x, y) = match (sub, swapped) {
                    (false, _) => (u(ra), ob),
                    (true, false) => (u(ra), Self::fneg(ob)),
                    (true, true) => (u(ra).negated(), ob),
                };
                self.a_fin(&dst, "FADD", &mods, [x, y]);
                self.commit(dst);
            }
            "f64" => {
                if !only(flags, &[".rn", ".rz", ".rm", ".rp"]) {
                    return false;
                }
                let m: Vec<&'static str> = rnd(flags).into_iter().collect();
                let (va, vb, swapped) = if !matches!(va, Val::Reg(_)) && matches!(vb, Val::Reg(_)) {
                    (vb, va, true)
                } else {
                    (va, vb, false)
                };
                let ra = self.a_reg64(va);
                let ob = self.a_dop(vb);
                let Some(dst) = self.dst(d) else { return false };
                let (x, y) = match (sub, swapped) {
                    (false, _) => (u(ra), ob),
                    (true, false) => (u(ra), Self::fneg(ob)),
                    (true, true) => (u(ra).negated(), ob),
                };
                self.a_fin(&dst, "DADD", &m, [x, y]);
                self.commit(dst);
            }
            _ => {
                let Some((bf, x2)) = half_kind(t) else {
                    return false;
                };
                let Some(mods) = Self::half_mods(flags, bf) else {
                    return false;
                };
                let ra = self.a_reg(va);
                let rb = self.a_reg(vb);
                let (oa, ob) = Self::half_ops(ra, rb, x2);
                let ob = if sub { ob.negated() } else { ob };
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "HADD2", &mods, [oa, ob]);
                self.commit(dst);
            }
        }
        true
    }

    /// HADD2/HMUL2/HFMA2 modifiers: `.BF16_V2`, `.FTZ`, `.SAT` (only `.rn` rounding exists).
    fn half_mods(flags: &[&str], bf: bool) -> Option<Vec<&'static str>> {
        if !only(flags, &[".rn", ".ftz", ".sat"]) {
            return None;
        }
        let mut m = Vec::new();
        if bf {
            m.push("BF16_V2");
        }
        if flags.contains(&".ftz") {
            m.push("FTZ");
        }
        if flags.contains(&".sat") {
            m.push("SAT");
        }
        Some(m)
    }

    /// Half operands: scalars read their low half in both lanes (`.H0_H0`).
    fn half_ops(ra: Reg, rb: Reg, x2: bool) -> (Operand, Operand) {
        if x2 {
            (u(ra), u(rb))
        } else {
            (u(ra).with_suffix("H0_H0"), u(rb).with_suffix("H0_H0"))
        }
    }

    /// `mul` on floats: FMUL, DMUL, HMUL2.
    pub(super) fn float_mul(&mut self, ins: &ast::Instruction, t: Ty, flags: &[&str]) -> bool {
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.a_src(a, t), self.a_src(b, t)) else {
            return true;
        };
        match t.name {
            "f32" => {
                let Some(mods) = Self::f32_mods(flags, true) else {
                    return false;
                };
                let (ra, ob, _) = self.a_fops(va, vb);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "FMUL", &mods, [u(ra), ob]);
                self.commit(dst);
            }
            "f64" => {
                if !only(flags, &[".rn", ".rz", ".rm", ".rp"]) {
                    return false;
                }
                let m: Vec<&'static str> = rnd(flags).into_iter().collect();
                let (va, vb) = if !matches!(va, Val::Reg(_)) {
                    (vb, va)
                } else {
                    (va, vb)
                };
                let ra = self.a_reg64(va);
                let ob = self.a_dop(vb);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "DMUL", &m, [u(ra), ob]);
                self.commit(dst);
            }
            _ => {
                let Some((bf, x2)) = half_kind(t) else {
                    return false;
                };
                let Some(mods) = Self::half_mods(flags, bf) else {
                    return false;
                };
                let ra = self.a_reg(va);
                let rb = self.a_reg(vb);
                let (oa, ob) = Self::half_ops(ra, rb, x2);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "HMUL2", &mods, [oa, ob]);
                self.commit(dst);
            }
        }
        true
    }

    /// `fma` (and float `mad`): FFMA, DFMA, HFMA2 (`.relu`: then `HMNMX2.NAN` with zero).
    pub(super) fn ffma(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [t] = types else { return false };
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb), Some(vc)) =
            (self.a_src(a, *t), self.a_src(b, *t), self.a_src(c, *t))
        else {
            return true;
        };
        match t.name {
            "f32" => {
                let Some(mods) = Self::f32_mods(flags, true) else {
                    return false;
                };
                // A must be a register; an immediate goes to B, or to C when B is a register.
                let (va, vb) = if !matches!(va, Val::Reg(_)) {
                    (vb, va)
                } else {
                    (va, vb)
                };
                let ra = self.a_reg(va);
                let (ob, oc) = match (vb, vc) {
                    (Val::Reg(_), Val::Reg(_)) => {
                        let (rb, rc) = (self.a_reg(vb), self.a_reg(vc));
                        (u(rb), u(rc))
                    }
                    (Val::Reg(_), _) => {
                        let rb = self.a_reg(vb);
                        (u(rb), self.a_fop(vc))
                    }
                    _ => {
                        let ob = self.a_fop(vb);
                        let rc = self.a_reg(vc);
                        (ob, u(rc))
                    }
                };
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "FFMA", &mods, [u(ra), ob, oc]);
                self.commit(dst);
            }
            "f64" => {
                if !only(flags, &[".rn", ".rz", ".rm", ".rp"]) {
                    return false;
                }
                let m: Vec<&'static str> = rnd(flags).into_iter().collect();
                let (va, vb) = if !matches!(va, Val::Reg(_)) {
                    (vb, va)
                } else {
                    (va, vb)
                };
                let ra = self.a_reg64(va);
                let (ob, oc) = match (vb, vc) {
                    (Val::Reg(_), Val::Reg(_)) => (u(self.a_reg64(vb)), u(self.a_reg64(vc))),
                    (Val::Reg(_), _) => {
                        let rb = self.a_reg64(vb);
                        (u(rb), self.a_dop(vc))
                    }
                    _ => {
                        let ob = self.a_dop(vb);
                        let rc = self.a_reg64(vc);
                        (ob, u(rc))
                    }
                };
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "DFMA", &m, [u(ra), ob, oc]);
                self.commit(dst);
            }
            _ => {
                let Some((bf, x2)) = half_kind(*t) else {
                    return false;
                };
                let relu = flags.contains(&".relu");
                let rest: Vec<&str> = flags.iter().copied().filter(|f| *f != ".relu").collect();
                let Some(mods) = Self::half_mods(&rest, bf) else {
                    return false;
                };
                if relu && flags.contains(&".sat") {
                    return false;
                }
                let ra = self.a_reg(va);
                let rb = self.a_reg(vb);
                let rc = self.a_reg(vc);
                let (oa, ob) = Self::half_ops(ra, rb, x2);
                let oc = if x2 {
                    u(rc)
                } else {
                    u(rc).with_suffix("H0_H0")
                };
                let Some(dst) = self.dst(d) else { return false };
                if relu {
                    let r = self.a_mk("HFMA2", &mods, [oa, ob, oc]);
                    let mut mm: Vec<&'static str> = Vec::new();
                    if bf {
                        mm.push("BF16_V2");
                    }
                    mm.push("NAN");
                    self.a_fin(&dst, "HMNMX2", &mm, [u(r), rz(), npt()]);
                } else {
                    self.a_fin(&dst, "HFMA2", &mods, [oa, ob, oc]);
                }
                self.commit(dst);
            }
        }
        true
    }

    /// Float `min`/`max`: `FMNMX[.FTZ][.NAN] d, a, b, PT|!PT`; halves `HMNMX2`; f64 (whose DSETP
    /// .MIN/.MAX the encoder lacks): select on `a < b or b is NaN`, OR/AND the high words of equal
    /// operands (so min(−0, +0) = −0), and a quieted b when both are NaN (ptxas's result).
    pub(super) fn float_minmax(
        &mut self,
        ins: &ast::Instruction,
        t: Ty,
        max: bool,
        flags: &[&str],
    ) -> bool {
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        if !only(flags, &[".ftz", ".NaN"]) {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(a, t), self.a_src(b, t)) else {
            return true;
        };
        let sel = if max { npt() } else { pt() };
        let mut m: Vec<&'static str> = Vec::new();
        match t.name {
            "f32" => {
                if flags.contains(&".ftz") {
                    m.push("FTZ");
                }
                if flags.contains(&".NaN") {
                    m.push("NAN");
                }
                let (ra, ob, _) = self.a_fops(va, vb);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "FMNMX", &m, [u(ra), ob, sel]);
                self.commit(dst);
            }
            "f64" => {
                if !flags.is_empty() {
                    return false;
                }
                let ra = self.a_reg64(va);
                let rb = self.a_reg64(vb);
                let cmp = if max { "GT" } else { "LT" };
                let bnan = self.a_mkp("DSETP", &["NAN", "AND"], vec![u(rb), u(rb), pt()]);
                let pick_a = self.a_mkp("DSETP", &[cmp, "OR"], vec![u(ra), u(rb), u(bnan)]);
                let both = self.a_mkp("DSETP", &["NAN", "AND"], vec![u(ra), u(ra), u(bnan)]);
                let eq = self.a_mkp("DSETP", &["EQ", "AND"], vec![u(ra), u(rb), pt()]);
                let h1 = self.a_sel(u(wd(ra, 1)), u(wd(rb, 1)), u(pick_a));
                let lut = if max { 0xc0 } else { 0xfc };
                let hz = self.a_mk(
                    "LOP3",
                    &["LUT"],
                    [u(wd(ra, 1)), u(wd(rb, 1)), rz(), im(lut), npt()],
                );
                let h2 = self.a_sel(u(hz), u(h1), u(eq));
                let qb = self.a_lop(u(wd(rb, 1)), im(0x80000), 0xfc);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin_w(&dst, 0, "SEL", &[], [u(wd(ra, 0)), u(wd(rb, 0)), u(pick_a)]);
                self.a_fin_w(&dst, 1, "SEL", &[], [u(qb), u(h2), u(both)]);
                self.commit(dst);
            }
            _ => {
                let Some((bf, x2)) = half_kind(t) else {
                    return false;
                };
                if bf {
                    m.push("BF16_V2");
                }
                if flags.contains(&".ftz") {
                    m.push("FTZ");
                }
                if flags.contains(&".NaN") {
                    m.push("NAN");
                }
                let ra = self.a_reg(va);
                let rb = self.a_reg(vb);
                let (oa, ob) = Self::half_ops(ra, rb, x2);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(&dst, "HMNMX2", &m, [oa, ob, sel]);
                self.commit(dst);
            }
        }
        true
    }

    /// Float `abs`/`neg`: `FADD d, |a|, -RZ` / `FADD d, -a, -RZ` (as ptxas), f64 `DADD d, -RZ,
    /// |a|`; halves by their sign bits (LOP3), or HADD2.FTZ with `.ftz`.
    pub(super) fn float_abs_neg(
        &mut self,
        ins: &ast::Instruction,
        t: Ty,
        neg: bool,
        flags: &[&str],
    ) -> bool {
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        if !only(flags, &[".ftz"]) {
            return false;
        }
        let ftz = flags.contains(&".ftz");
        let Some(va) = self.a_src(a, t) else {
            return true;
        };
        match t.name {
            "f32" => {
                let ra = self.a_reg(va);
                let Some(dst) = self.dst(d) else { return false };
                let x = if neg {
                    u(ra).negated()
                } else {
                    super::arith::u(ra).abs_()
                };
                self.a_fin(
                    &dst,
                    "FADD",
                    if ftz { &["FTZ"] } else { &[] },
                    [x, rz().negated()],
                );
                self.commit(dst);
            }
            "f64" => {
                if ftz {
                    return false;
                }
                let ra = self.a_reg64(va);
                let Some(dst) = self.dst(d) else { return false };
                let x = if neg { u(ra).negated() } else { u(ra).abs_() };
                self.a_fin(&dst, "DADD", &[], [rz64().negated(), x]);
                self.commit(dst);
            }
            _ => {
                let Some((bf, x2)) = half_kind(t) else {
                    return false;
                };
                let ra = self.a_reg(va);
                let Some(dst) = self.dst(d) else { return false };
                if ftz {
                    if bf {
                        return false;
                    }
                    let x = if neg { u(ra).negated() } else { u(ra).abs_() };
                    let (x, z) = if x2 {
                        (x, rz().negated())
                    } else {
                        (x.with_suffix("H0_H0"), rz().negated().with_suffix("H0_H0"))
                    };
                    self.a_fin(&dst, "HADD2", &["FTZ"], [x, z]);
                } else {
                    let sign: i64 = if x2 { 0x8000_8000 } else { 0x8000 };
                    if neg {
                        self.a_fin(
                            &dst,
                            "LOP3",
                            &["LUT"],
                            [u(ra), im(sign), rz(), im(0x3c), npt()],
                        );
                    } else {
                        self.a_fin(
                            &dst,
                            "LOP3",
                            &["LUT"],
                            [u(ra), im(!sign & 0xffff_ffff), rz(), im(0xc0), npt()],
                        );
                    }
                }
                self.commit(dst);
            }
        }
        true
    }

    /// `copysign d, a, b`: b with a's sign bit, `LOP3.LUT d, b, 0x80000000, a, 0xb8` (on the
    /// high word for f64) — LUT 0xb8 is `B ? C : A`, so the sign bit (B) comes from C = a and
    /// the rest from A = b, as ptxas writes it (ZLUDA's `copysign` checks the result).
    pub(super) fn copysign(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, *t)) else {
            return true;
        };
        match t.name {
            "f32" => {
                let ra = self.a_reg(va);
                let rb = self.a_reg(vb);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin(
                    &dst,
                    "LOP3",
                    &["LUT"],
                    [u(rb), im(0x8000_0000), u(ra), im(0xb8), npt()],
                );
                self.commit(dst);
            }
            "f64" => {
                let ra = self.a_reg64(va);
                let rb = self.a_reg64(vb);
                let Some(dst) = self.dst(d) else { return false };
                self.a_fin_w(&dst, 0, "MOV", &[], [u(wd(rb, 0))]);
                self.a_fin_w(
                    &dst,
                    1,
                    "LOP3",
                    &["LUT"],
                    [u(wd(rb, 1)), im(0x8000_0000), u(wd(ra, 1)), im(0xb8), npt()],
                );
                self.commit(dst);
            }
            _ => return false,
        }
        true
    }

    /// `FMUL d, a, imm` into a fresh temporary.
    pub(super) fn a_fmul_imm(&mut self, mods: &[&'static str], a: Reg, bits: u32) -> Reg {
        self.a_mk("FMUL", mods, [u(a), fimm(bits)])
    }

    /// `@[!]p x' = x · imm`.
    pub(super) fn a_fmul_if(
        &mut self,
        p: Reg,
        neg: bool,
        x: Reg,
        mods: &[&'static str],
        bits: u32,
    ) -> Reg {
        self.a_mk_if(p, neg, x, "FMUL", mods, vec![u(x), fimm(bits)])
    }

    /// sin, cos, lg2, ex2, tanh (`.approx`), as ptxas: sin/cos scale by 1/2π (`FMUL.RZ`) before
    /// MUFU; without `.ftz` lg2 and ex2 rescale subnormal inputs/results around the MUFU; half
    /// types use `MUFU.*.F16/.BF16` on each half.
    pub(super) fn mufu_fn(
        &mut self,
        ins: &ast::Instruction,
        opcode: &str,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [t] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        if !flags.contains(&".approx") || !only(flags, &[".approx", ".ftz"]) {
            return false;
        }
        let ftz = flags.contains(&".ftz");
        let Some(va) = self.a_src(a, *t) else {
            return true;
        };
        let op: &'static str = match opcode {
            "sin" => "SIN",
            "cos" => "COS",
            "lg2" => "LG2",
            "ex2" => "EX2",
            _ => "TANH",
        };
        if t.name != "f32" {
            let Some((bf, x2)) = half_kind(*t) else {
                return false;
            };
            if !matches!(op, "EX2" | "TANH") {
                return false;
            }
            let ra = self.a_reg(va);
            let fmt = if bf { "BF16" } else { "F16" };
            let Some(dst) = self.dst(d) else { return false };
            if x2 {
                let lo = self.a_mk("MUFU", &[op, fmt], [u(ra)]);
                let h = self.a_mk("SHF", &["R", "U32", "HI"], [rz(), im(16), u(ra)]);
                let hi = self.a_mk("MUFU", &[op, fmt], [u(h)]);
                self.a_fin(&dst, "PRMT", &[], [u(lo), im(0x5410), u(hi)]);
            } else {
                self.a_fin(&dst, "MUFU", &[op, fmt], [u(ra)]);
            }
            self.commit(dst);
            return true;
        }
        let ra = self.a_reg(va);
        let r = match op {
            "SIN" | "COS" => {
                let s = self.a_fmul_imm(&["RZ"], ra, k::INV_2PI);
                self.a_mk("MUFU", &[op], [u(s)])
            }
            "TANH" => self.a_mk("MUFU", &[op], [u(ra)]),
            "EX2" if ftz => self.a_mk("MUFU", &[op], [u(ra)]),
            "EX2" => {
                // Results below 2^-126: halve the input, square the result.
                let p = self.a_mkp(
                    "FSETP",
                    &["GEU", "AND"],
                    vec![u(ra), fimm(k::MINUS_126), pt()],
                );
                let x = self.a_fmul_if(p, true, ra, &[], k::HALF);
                let r = self.a_mk("MUFU", &[op], [u(x)]);
                self.a_mk_if(p, true, r, "FMUL", &[], vec![u(r), u(r)])
            }
            "LG2" if ftz => self.a_mk("MUFU", &[op], [u(ra)]),
            _ => {
                // Subnormal inputs: scale by 2^24, subtract 24.
                let p = self.a_mkp(
                    "FSETP",
                    &["GEU", "AND"],
                    vec![u(ra).abs_(), fimm(k::MIN_NORMAL), pt()],
                );
                let x = self.a_fmul_if(p, true, ra, &[], k::TWO_24);
                let r = self.a_mk("MUFU", &[op], [u(x)]);
                self.a_mk_if(p, true, r, "FADD", &[], vec![u(r), fimm(k::MINUS_24)])
            }
        };
        let Some(dst) = self.dst(d) else { return false };
        self.a_finish(dst, r);
        true
    }

    /// `rcp`/`sqrt`/`rsqrt`: `.approx` here, as ptxas (MUFU.RCP/SQRT/RSQ, with the operand scaled
    /// out of the subnormal range without `.ftz`); IEEE-rounded forms in `fdiv.rs`.
    pub(super) fn rcp_sqrt(
        &mut self,
        ins: &ast::Instruction,
        opcode: &str,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [t] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        if !flags.contains(&".approx") {
            return self.ieee_rcp_sqrt(ins, opcode, *t, flags);
        }
        if !only(flags, &[".approx", ".ftz"]) {
            return false;
        }
        let ftz = flags.contains(&".ftz");
        let Some(va) = self.a_src(a, *t) else {
            return true;
        };
        if t.name == "f64" {
            if !ftz {
                return self.ieee_rcp_sqrt(ins, opcode, *t, flags);
            }
            // rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64: MUFU on the high word, low word zero.
            let op = match opcode {
                "rcp" => "RCP64H",
                "rsqrt" => "RSQ64H",
                _ => return false,
            };
            let ra = self.a_reg64(va);
            let Some(dst) = self.dst(d) else { return false };
            self.a_fin_w(&dst, 0, "MOV", &[], [im(0)]);
            self.a_fin_w(&dst, 1, "MUFU", &[op], [u(wd(ra, 1))]);
            self.commit(dst);
            return true;
        }
        if t.name != "f32" {
            return false;
        }
        let ra = self.a_reg(va);
        let op = match opcode {
            "rcp" => "RCP",
            "sqrt" => "SQRT",
            _ => "RSQ",
        };
        let r = if ftz {
            self.a_mk("MUFU", &[op], [u(ra)])
        } else if op == "RCP" {
            // s = |a| < 2^-126 ? 2^24 : 1, then 0.25 when |a| > 2^126; rcp(a·s)·s.
            let big = self.a_mk("MOV", &[], [im(i64::from(k::TWO_24))]);
            let norm = self.a_mkp(
                "FSETP",
                &["GEU", "AND"],
                vec![u(ra).abs_(), fimm(k::MIN_NORMAL), pt()],
            );
            let huge = self.a_mkp(
                "FSETP",
                &["GT", "AND"],
                vec![u(ra).abs_(), fimm(k::TWO_126), pt()],
            );
            let s1 = self.a_mk("FSEL", &[], [u(big), fimm(k::ONE), u(norm).inverted()]);
            let s = self.a_mk("FSEL", &[], [u(s1), fimm(k::QUARTER), u(huge).inverted()]);
            let x = self.a_mk("FMUL", &[], [u(ra), u(s)]);
            let r = self.a_mk("MUFU", &["RCP"], [u(x)]);
            self.a_mk("FMUL", &[], [u(s), u(r)])
        } else {
            let p = self.a_mkp(
                "FSETP",
                &["GEU", "AND"],
                vec![u(ra).abs_(), fimm(k::MIN_NORMAL), pt()],
            );
            let x = self.a_fmul_if(p, true, ra, &[], k::TWO_24);
            let r = self.a_mk("MUFU", &[op], [u(x)]);
            let back = if op == "SQRT" { k::TWO_M12 } else { k::TWO_12 };
            self.a_fmul_if(p, true, r, &[], back)
        };
        let Some(dst) = self.dst(d) else { return false };
        self.a_finish(dst, r);
        true
    }

    /// `div` dispatch: integers (`idiv.rs`), `.approx` and `.full` f32 here, `.rn` and f64 in
    /// `fdiv.rs`.
    pub(super) fn div_rem(
        &mut self,
        ins: &ast::Instruction,
        rem: bool,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [t] = types else { return false };
        if t.is_integer_like() {
            return self.int_div_rem(ins, rem, *t, flags);
        }
        if rem {
            return false;
        }
        let approx = flags.contains(&".approx");
        let full = flags.contains(&".full");
        if !(approx || full) || t.name != "f32" {
            return self.ieee_div(ins, *t, flags);
        }
        if !only(flags, &[".approx", ".full", ".ftz"]) {
            return false;
        }
        let ftz = flags.contains(&".ftz");
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, *t)) else {
            return true;
        };
        let ra = self.a_reg(va);
        let rb = self.a_reg(vb);
        let fz: &[&'static str] = if ftz { &["FTZ"] } else { &[] };
        let (mut x, mut y) = (ra, rb);
        if full {
            // |b| > 2^126: scale both by 1/4 so that rcp(b) stays normal.
            let m: &[&'static str] = if ftz {
                &["GT", "FTZ", "AND"]
            } else {
                &["GT", "AND"]
            };
            let huge = self.a_mkp("FSETP", m, vec![u(y).abs_(), fimm(k::TWO_126), pt()]);
            y = self.a_fmul_if(huge, false, y, fz, k::QUARTER);
            x = self.a_fmul_if(huge, false, x, fz, k::QUARTER);
        }
        if !ftz {
            // Subnormal b: scale both by 2^24.
            let norm = self.a_mkp(
                "FSETP",
                &["GEU", "AND"],
                vec![u(y).abs_(), fimm(k::MIN_NORMAL), pt()],
            );
            y = self.a_fmul_if(norm, true, y, &[], k::TWO_24);
            x = self.a_fmul_if(norm, true, x, &[], k::TWO_24);
        }
        let r = self.a_mk("MUFU", &["RCP"], [u(y)]);
        let Some(dst) = self.dst(d) else { return false };
        self.a_fin(&dst, "FMUL", fz, [u(r), u(x)]);
        self.commit(dst);
        let _ = df;
        true
    }
}

/// `|x|` on an operand.
pub(super) trait AbsOp {
    fn abs_(self) -> Operand;
}

impl AbsOp for Operand {
    fn abs_(mut self) -> Operand {
        self.abs = true;
        self
    }
}
