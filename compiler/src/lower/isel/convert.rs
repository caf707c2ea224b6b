//! `cvt` in every direction, as ptxas lowers it.
//!
//! * Integer ↔ integer: a narrowing is free (the low bits); a widening extends by the *source*
//!   type's signedness (`PRMT 0x8880/0x9910`, `LOP3 & 0xff[ff]`, `SHF.R.S32.HI 0x1f` for the high
//!   word); a result narrower than its destination register is extended to the register by
//!   the *destination* type's signedness (`cvt.u8.u32 %r` → `LOP3 & 0xff`); `.sat` clamps to the
//!   destination's range (VIMNMX, or 64-bit compares and SELs).
//! * Float → integer: `F2I[.FTZ].{type}[.F64].{rnd}[.NTZ]` (saturating, NaN → 0); f16/bf16 are
//!   widened to f32 first (exactly).
//! * Integer → float: `I2FP.F32.{S32,U32}` for `.rn` from 32 bits, `I2F` otherwise; to a half
//!   type through f32 (the double rounding is innocuous: 24 ≥ 2·11 + 2 bits).
//! * Float ↔ float: F2F, FRND for the integer roundings, `F2FP … PACK_AB` for halves and fp8,
//!   `HADD2.F32` and a 16-bit shift to widen f16 and bf16.

use super::arith::{df, im, npt, only, pt, rz, signed, u, wd};
use super::float::AbsOp;
use super::float::k;
use super::{Cx, Val};
use crate::frontend::ast;
use crate::frontend::types::{Kind, Ty};
use crate::mir::*;

/// The value range of an integer type.
fn range(t: Ty) -> (i128, i128) {
    let n = t.bits();
    if signed(t) {
        (-(1i128 << (n - 1)), (1i128 << (n - 1)) - 1)
    } else {
        (0, (1i128 << n) - 1)
    }
}

fn int_rnd(flags: &[&str]) -> Option<&'static str> {
    flags.iter().find_map(|f| match *f {
        ".rni" => Some(""),
        ".rzi" => Some("TRUNC"),
        ".rmi" => Some("FLOOR"),
        ".rpi" => Some("CEIL"),
        _ => None,
    })
}

fn flt_rnd(flags: &[&str]) -> Option<&'static str> {
    flags.iter().find_map(|f| match *f {
        ".rn" => Some(""),
        ".rz" => Some("RZ"),
        ".rm" => Some("RM"),
        ".rp" => Some("RP"),
        _ => None,
    })
}

fn is_int(t: Ty) -> bool {
    matches!(t.kind(), Kind::Bits | Kind::Unsigned | Kind::Signed) && t.bits() <= 64
}

impl Cx<'_> {
    pub(super) fn cvt_op(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        if flags.contains(&".pack") {
            return self.cvt_pack(ins, types, flags);
        }
        let [dt, st] = types else { return false };
        if ins.operands.len() == 3 {
            return self.cvt_pair(ins, *dt, *st, flags);
        }
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        let (dt, st) = (*dt, *st);
        if !only(
            flags,
            &[
                ".rn",
                ".rz",
                ".rm",
                ".rp",
                ".rni",
                ".rzi",
                ".rmi",
                ".rpi",
                ".ftz",
                ".sat",
                ".relu",
                ".satfinite",
            ],
        ) {
            return false;
        }
        let Some(va) = self.val(a, st) else {
            return true;
        };
        let dreg = self.a_dst_bits(d).unwrap_or(dt.bits());
        match (is_int(dt), is_int(st)) {
            (true, true) => {
                if flags.iter().any(|f| *f != ".sat") {
                    return false;
                }
                self.cvt_int(d, dt, st, dreg, flags.contains(&".sat"), va)
            }
            (true, false) => self.cvt_f2i(d, dt, st, flags, va),
            (false, true) => self.cvt_i2f(d, dt, st, flags, va),
            (false, false) => self.cvt_f2f(d, dt, st, flags, va),
        }
    }

    /// The low 32 bits of an integer source of `n` bits, extended to 32 by its signedness.
    fn a_int32(&mut self, v: Val, n: u32, sg: bool) -> Val {
        let w0 = match v {
            Val::Imm(i) => Val::Imm(super::arith::extend_imm(i, n.min(64), sg)),
            other => self.word(other, 0),
        };
        let w0 = match w0 {
            Val::Imm(i) => Val::Imm(i & 0xffff_ffff),
            other => other,
        };
        self.a_ext(w0, n, sg)
    }

    fn cvt_int(&mut self, d: &ast::Operand, dt: Ty, st: Ty, dreg: u32, sat: bool, va: Val) -> bool {
        let (sn, dn) = (st.bits(), dt.bits());
        let (ssg, dsg) = (signed(st), signed(dt));
        let (smin, smax) = range(st);
        let (dmin, dmax) = range(dt);
        let va = match va {
            Val::Imm(i) => Val::Imm(super::arith::extend_imm(i, sn, ssg)),
            Val::F32(b) => Val::Imm(i64::from(b)),
            Val::F64(b) => Val::Imm(b as i64),
            other => other,
        };
        if dn == 64 {
            let Some(dst) = self.dst(d) else { return false };
            if sn == 64 {
                let r = self.a_reg64(va);
                if sat && ssg != dsg {
                    // s64 → u64: negative → 0; u64 → s64: above 2^63−1 → 2^63−1 (the sign bit of
                    // the high word decides both).
                    let neg = self.a_mkp("ISETP", &["LT", "AND"], vec![u(wd(r, 1)), rz(), pt()]);
                    if ssg {
                        self.a_fin_w(&dst, 0, "SEL", &[], [rz(), u(wd(r, 0)), u(neg)]);
                        self.a_fin_w(&dst, 1, "SEL", &[], [rz(), u(wd(r, 1)), u(neg)]);
                    } else {
                        self.a_fin_w(
                            &dst,
                            0,
                            "SEL",
                            &[],
                            [u(wd(r, 0)), im(0xffff_ffff), u(neg).inverted()],
                        );
                        self.a_fin_w(
                            &dst,
                            1,
                            "SEL",
                            &[],
                            [u(wd(r, 1)), im(0x7fff_ffff), u(neg).inverted()],
                        );
                    }
                    self.commit(dst);
                } else {
                    self.a_finish(dst, r);
                }
                return true;
            }
            // Widen a ≤ 32-bit source: extend by its signedness, the high word is the sign or 0.
            let mut lo = self.a_int32(va, sn, ssg);
            if sat && ssg && !dsg {
                let r = self.a_reg(lo);
                lo = Val::Reg(self.a_mk("VIMNMX", &[], [u(r), rz(), npt()]));
            }
            let lo = self.a_reg(lo);
            if ssg && (!sat || dsg) {
                self.a_fin_w(&dst, 1, "SHF", &["R", "S32", "HI"], [rz(), im(31), u(lo)]);
            } else {
                self.a_fin_w(&dst, 1, "MOV", &[], [im(0)]);
            }
            self.a_fin_w(&dst, 0, "MOV", &[], [u(lo)]);
            self.commit(dst);
            return true;
        }
        // A result of ≤ 32 bits.
        let mut v = if sn == 64 {
            if sat && (dmin > smin || dmax < smax) {
                let r = self.a_reg64(va);
                let lo32 = wd(r, 0);
                let u64t = super::arith::ty(if ssg { "s64" } else { "u64" });
                let mut res = Val::Reg(lo32);
                let mut cur = self.a_reg(res);
                if dmax < smax {
                    let spec = super::cmp::CmpSpec {
                        rel: ".gt",
                        bop: "AND",
                        ftz: false,
                    };
                    let Some((p, _)) = self.a_compare2(
                        u64t,
                        &spec,
                        pt(),
                        Val::Reg(r),
                        Val::Imm(dmax as i64),
                        false,
                    ) else {
                        return false;
                    };
                    cur = self.a_sel(u(cur), im((dmax as i64) & 0xffff_ffff), u(p).inverted());
                }
                if dmin > smin {
                    let spec = super::cmp::CmpSpec {
                        rel: ".lt",
                        bop: "AND",
                        ftz: false,
                    };
                    let Some((p, _)) = self.a_compare2(
                        u64t,
                        &spec,
                        pt(),
                        Val::Reg(r),
                        Val::Imm(dmin as i64),
                        false,
                    ) else {
                        return false;
                    };
                    cur = self.a_sel(u(cur), im((dmin as i64) & 0xffff_ffff), u(p).inverted());
                }
                res = Val::Reg(cur);
                res
            } else {
                self.a_int32(va, 32, false)
            }
        } else {
            let x = self.a_int32(va, sn, ssg);
            if sat && (dmin > smin || dmax < smax) {
                let mut r = self.a_reg(x);
                let m: &[&'static str] = if ssg { &[] } else { &["U32"] };
                if dmin > smin {
                    r = self.a_mk("VIMNMX", m, [u(r), im((dmin as i64) & 0xffff_ffff), npt()]);
                }
                if dmax < smax {
                    r = self.a_mk("VIMNMX", m, [u(r), im((dmax as i64) & 0xffff_ffff), pt()]);
                }
                Val::Reg(r)
            } else {
                x
            }
        };
        // Extend to the destination register by the destination's signedness (a saturated
        // value is in the destination's range already).
        let clamped = sat && (dmin > smin || dmax < smax);
        if dn < 32 && dreg > dn && !clamped {
            v = self.a_ext(v, dn, dsg);
        }
        let Some(dst) = self.dst(d) else { return false };
        if dst.reg().count() != 1 {
            return false;
        }
        match v {
            Val::Reg(r) => self.a_finish(dst, r),
            other => {
                let o = self.a_op(other);
                self.a_fin(&dst, "MOV", &[], [o]);
                self.commit(dst);
            }
        }
        true
    }

    /// A half value widened to f32 (exact): `HADD2.F32 d, -RZ, a.H0_H0` for f16, `a << 16` for
    /// bf16.
    pub(super) fn a_half_to_f32(&mut self, r: Reg, bf: bool) -> Reg {
        if bf {
            self.a_mk("SHF", &["L", "U32"], [u(r), im(16), rz()])
        } else {
            self.a_mk(
                "HADD2",
                &["F32"],
                [rz().negated(), u(r).with_suffix("H0_H0")],
            )
        }
    }

    fn cvt_f2i(&mut self, d: &ast::Operand, dt: Ty, st: Ty, flags: &[&str], va: Val) -> bool {
        let Some(r) = int_rnd(flags) else {
            return false;
        };
        if flags
            .iter()
            .any(|f| !matches!(*f, ".rni" | ".rzi" | ".rmi" | ".rpi" | ".ftz" | ".sat"))
        {
            return false;
        }
        let ftz = flags.contains(&".ftz");
        let (src, f64src) = match st.name {
            "f32" => (self.a_reg(va), false),
            "f64" => (self.a_reg64(va), true),
            "f16" | "bf16" => {
                let h = self.a_reg(va);
                (self.a_half_to_f32(h, st.name == "bf16"), false)
            }
            _ => return false,
        };
        let dn = dt.bits();
        let dsg = signed(dt);
        let mut m: Vec<&'static str> = Vec::new();
        if ftz {
            m.push("FTZ");
        }
        let narrow_f64 = f64src && dn < 32;
        let tname: &'static str = match (dn, dsg) {
            (8, false) => "U8",
            (8, true) => "S8",
            (16, false) => "U16",
            (16, true) => "S16",
            (32, false) => "U32",
            (32, true) => "",
            (64, false) => "U64",
            (64, true) => "S64",
            _ => return false,
        };
        if narrow_f64 {
            // The encoder has no F2I.{U,S}{8,16}.F64: convert to 32 bits, then clamp.
            m.push(if dsg { "" } else { "U32" });
        } else {
            m.push(tname);
        }
        if f64src {
            m.push("F64");
        }
        m.push(r);
        if !f64src && dn <= 32 {
            m.push("NTZ");
        }
        m.retain(|s| !s.is_empty());
        let Some(dst) = self.dst(d) else { return false };
        if narrow_f64 {
            let x = self.a_mk("F2I", &m, [u(src)]);
            let (lo, hi) = range(dt);
            let mm: &[&'static str] = if dsg { &[] } else { &["U32"] };
            let y = if dsg {
                self.a_mk("VIMNMX", mm, [u(x), im(lo as i64 & 0xffff_ffff), npt()])
            } else {
                x
            };
            self.a_fin(&dst, "VIMNMX", mm, [u(y), im(hi as i64), pt()]);
        } else {
            self.a_fin(&dst, "F2I", &m, [u(src)]);
        }
        self.commit(dst);
        true
    }

    fn cvt_i2f(&mut self, d: &ast::Operand, dt: Ty, st: Ty, flags: &[&str], va: Val) -> bool {
        let Some(r) = flt_rnd(flags) else {
            return false;
        };
        if flags
            .iter()
            .any(|f| !matches!(*f, ".rn" | ".rz" | ".rm" | ".rp" | ".ftz" | ".sat"))
        {
            return false;
        }
        let sat = flags.contains(&".sat");
        let sn = st.bits();
        let ssg = signed(st);
        let to_f32 = |cx: &mut Self, r: &'static str| -> Option<Reg> {
            Some(if sn == 64 {
                let x = cx.a_reg64(va);
                let mut m: Vec<&'static str> = vec![if ssg { "S64" } else { "U64" }];
                if !r.is_empty() {
                    m.push(r);
                }
                cx.a_mk("I2F", &m, [u(x)])
            } else {
                let x = cx.a_int32(va, sn, ssg);
                let x = cx.a_reg(x);
                let sgn = ssg || sn < 32;
                if r.is_empty() {
                    cx.a_mk("I2FP", &["F32", if sgn { "S32" } else { "U32" }], [u(x)])
                } else {
                    let mut m: Vec<&'static str> = Vec::new();
                    if !sgn {
                        m.push("U32");
                    }
                    m.push(r);
                    cx.a_mk("I2F", &m, [u(x)])
                }
            })
        };
        let res = match dt.name {
            "f32" => {
                let Some(x) = to_f32(self, r) else {
                    return false;
                };
                if sat {
                    self.a_mk("FADD", &["SAT"], [rz(), u(x)])
                } else {
                    x
                }
            }
            "f64" => {
                if sat {
                    return false;
                }
                let t = self.a_tmp64();
                if sn == 64 {
                    let x = self.a_reg64(va);
                    let mut m: Vec<&'static str> = vec!["F64", if ssg { "S64" } else { "U64" }];
                    if !r.is_empty() {
                        m.push(r);
                    }
                    self.a_put("I2F", &m, vec![df(t), u(x)]);
                } else {
                    let x = self.a_int32(va, sn, ssg);
                    let x = self.a_reg(x);
                    let m: &[&'static str] = if ssg || sn < 32 {
                        &["F64"]
                    } else {
                        &["F64", "U32"]
                    };
                    self.a_put("I2F", m, vec![df(t), u(x)]);
                }
                t
            }
            "f16" | "bf16" => {
                if sat {
                    return false;
                }
                let Some(x) = to_f32(self, r) else {
                    return false;
                };
                match self.a_f32_to_half(x, dt.name == "bf16", r, false) {
                    Some(h) => h,
                    None => return false,
                }
            }
            _ => return false,
        };
        let Some(dst) = self.dst(d) else { return false };
        self.a_finish(dst, res);
        true
    }

    /// An f32 rounded to f16/bf16 (in the low half): `F2FP.{F16,BF16}.F32.PACK_AB d, RZ, a` for
    /// `.rn`, `F2F.F16.F32.{RZ,RM,RP}` otherwise (bf16 has only `.rn` here).
    fn a_f32_to_half(&mut self, x: Reg, bf: bool, r: &'static str, relu: bool) -> Option<Reg> {
        if r.is_empty() {
            let mut m: Vec<&'static str> = Vec::new();
            if relu {
                m.push("RELU");
            }
            m.extend([if bf { "BF16" } else { "F16" }, "F32", "PACK_AB"]);
            Some(self.a_mk("F2FP", &m, [rz(), u(x)]))
        } else if !bf && !relu {
            Some(self.a_mk("F2F", &["F16", "F32", r], [u(x)]))
        } else {
            None
        }
    }

    fn cvt_f2f(&mut self, d: &ast::Operand, dt: Ty, st: Ty, flags: &[&str], va: Val) -> bool {
        let ftz = flags.contains(&".ftz");
        let sat = flags.contains(&".sat");
        let relu = flags.contains(&".relu");
        let satfinite = flags.contains(&".satfinite");
        let irnd = int_rnd(flags);
        let frnd = flt_rnd(flags);
        let res: Reg = match (dt.name, st.name) {
            ("f32", "f32") => {
                if relu || satfinite || frnd.is_some() {
                    return false;
                }
                let x = self.a_reg(va);
                let mut r = x;
                if let Some(ir) = irnd {
                    let mut m: Vec<&'static str> = Vec::new();
                    if ftz {
                        m.push("FTZ");
                    }
                    if !ir.is_empty() {
                        m.push(ir);
                    }
                    r = self.a_mk("FRND", &m, [u(r)]);
                }
                if sat || (ftz && irnd.is_none()) {
                    let mut m: Vec<&'static str> = Vec::new();
                    if ftz {
                        m.push("FTZ");
                    }
                    if sat {
                        m.push("SAT");
                    }
                    r = self.a_mk("FADD", &m, [rz(), u(r)]);
                }
                r
            }
            ("f64", "f64") => {
                if relu || satfinite || frnd.is_some() || ftz {
                    return false;
                }
                let x = self.a_reg64(va);
                let mut r = x;
                if let Some(ir) = irnd {
                    r = self.a_drnd(x, ir);
                }
                if sat {
                    // clamp to [0, 1]: max(r, 0) then min(r, 1) with NaN → 0.
                    return false;
                }
                r
            }
            ("f64", "f32") | ("f64", "f16") | ("f64", "bf16") => {
                if relu || satfinite || irnd.is_some() || sat {
                    return false;
                }
                let mut x = self.a_reg(va);
                if st.name != "f32" {
                    x = self.a_half_to_f32(x, st.name == "bf16");
                }
                if ftz {
                    x = self.a_mk("FMUL", &["FTZ"], [u(x), super::arith::fimm(k::ONE)]);
                }
                self.a_mk64("F2F", &["F64", "F32"], [u(x)])
            }
            ("f32", "f64") => {
                if relu || satfinite || irnd.is_some() {
                    return false;
                }
                let r = frnd.unwrap_or("");
                let x = self.a_reg64(va);
                let mut m: Vec<&'static str> = vec!["F32", "F64"];
                if !r.is_empty() {
                    m.push(r);
                }
                let mut y = self.a_mk("F2F", &m, [u(x)]);
                if ftz {
                    let p = self.a_mkp(
                        "FSETP",
                        &["GEU", "AND"],
                        vec![u(y).abs_(), super::arith::fimm(k::MIN_NORMAL), pt()],
                    );
                    y = self.a_fmul_if(p, true, y, &[], k::MIN_NORMAL);
                }
                if sat {
                    y = self.a_mk("FADD", &["SAT"], [rz(), u(y)]);
                }
                y
            }
            ("f32", "f16") | ("f32", "bf16") => {
                if relu || satfinite || irnd.is_some() || sat || ftz {
                    return false;
                }
                let x = self.a_reg(va);
                self.a_half_to_f32(x, st.name == "bf16")
            }
            ("f16", "f32") | ("bf16", "f32") | ("f16", "f64") | ("bf16", "f64") => {
                if satfinite || irnd.is_some() || sat || ftz {
                    return false;
                }
                let r = frnd.unwrap_or("");
                let x = if st.name == "f64" {
                    let x = self.a_reg64(va);
                    let mut m: Vec<&'static str> = vec!["F32", "F64"];
                    if !r.is_empty() {
                        m.push(r);
                    }
                    self.a_mk("F2F", &m, [u(x)])
                } else {
                    self.a_reg(va)
                };
                match self.a_f32_to_half(x, dt.name == "bf16", r, relu) {
                    Some(h) => h,
                    None => return false,
                }
            }
            ("f16", "f16") | ("bf16", "bf16") => {
                if !flags.is_empty() {
                    return false;
                }
                self.a_reg(va)
            }
            ("f16x2", "e4m3x2") | ("f16x2", "e5m2x2") => {
                if !only(flags, &[".rn", ".relu"]) || relu {
                    return false;
                }
                let x = self.a_reg(va);
                let f: &'static str = if st.name == "e4m3x2" { "E4M3" } else { "E5M2" };
                self.a_mk("F2FP", &["F16", f, "UNPACK_B"], [u(x)])
            }
            _ => return false,
        };
        let Some(dst) = self.dst(d) else { return false };
        self.a_finish(dst, res);
        true
    }

    /// f64 rounded to an integral value (the encoder has no FRND.F64): through a 64-bit integer
    /// when |x| < 2^52 (larger values, infinities and NaNs are integral already), with x's sign
    /// kept (so −0.3 rounds to −0).
    fn a_drnd(&mut self, x: Reg, ir: &'static str) -> Reg {
        let big = self.a_mkp(
            "DSETP",
            &["GEU", "AND"],
            vec![
                u(x).abs_(),
                Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x4330_0000)),
                pt(),
            ],
        );
        let mut m: Vec<&'static str> = vec!["S64", "F64"];
        if !ir.is_empty() {
            m.push(ir);
        }
        let i = self.a_mk64("F2I", &m, [u(x)]);
        let f = self.a_mk64("I2F", &["F64", "S64"], [u(i)]);
        let hi = self.a_mk(
            "LOP3",
            &["LUT"],
            [u(wd(x, 1)), im(0x8000_0000), u(wd(f, 1)), im(0xb8), npt()],
        );
        let t = self.a_tmp64();
        self.a_put(
            "SEL",
            &[],
            vec![df(wd(t, 0)), u(wd(x, 0)), u(wd(f, 0)), u(big)],
        );
        self.a_put("SEL", &[], vec![df(wd(t, 1)), u(wd(x, 1)), u(hi), u(big)]);
        t
    }

    /// `cvt.pack.sat.{u8,s8,u16,s16}.s32.b32 d, a, b[, c]` → `I2IP.{type}.S32.SAT d, a, b, c|RZ`;
    /// the f32 pairs (`cvt.rn[.relu|.satfinite].{f16x2,bf16x2,e4m3x2,e5m2x2}.f32 d, a, b`) are
    /// not `.pack` and go through `cvt_pair`.
    fn cvt_pack(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        if !only(flags, &[".pack", ".sat"]) || !flags.contains(&".sat") {
            return false;
        }
        let dt = match types {
            [dt, _, _] | [dt, _] => *dt,
            _ => return false,
        };
        let tn: &'static str = match dt.name {
            "u8" => "U8",
            "s8" => "S8",
            "u16" => "U16",
            "s16" => "S16",
            _ => return false,
        };
        let ops = &ins.operands[..];
        if ops.len() < 3 || ops.len() > 4 {
            return false;
        }
        let t32 = super::arith::ty("s32");
        let (Some(va), Some(vb)) = (self.a_src(&ops[1], t32), self.a_src(&ops[2], t32)) else {
            return true;
        };
        let oc = if ops.len() == 4 {
            match self.a_src(&ops[3], t32) {
                Some(v) => {
                    let r = self.a_reg(v);
                    u(r)
                }
                None => return true,
            }
        } else {
            rz()
        };
        let ra = self.a_reg(va);
        let rb = self.a_reg(vb);
        let Some(dst) = self.dst(&ops[0]) else {
            return false;
        };
        self.a_fin(&dst, "I2IP", &[tn, "S32", "SAT"], [u(ra), u(rb), oc]);
        self.commit(dst);
        true
    }

    /// `cvt.rn[.relu][.satfinite].{f16x2,bf16x2,e4m3x2,e5m2x2}.f32 d, a, b`: a in the high half,
    /// b in the low one: `F2FP[.SATFINITE][.RELU].{F16,BF16}.F32.PACK_AB d, a, b`; fp8 pairs
    /// `F2FP.SATFINITE.{E4M3,E5M2}.F32.PACK_AB_MERGE_C d, a, b, RZ` (ptxas).
    fn cvt_pair(&mut self, ins: &ast::Instruction, dt: Ty, st: Ty, flags: &[&str]) -> bool {
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        if st.name != "f32"
            || !flags.contains(&".rn")
            || !only(flags, &[".rn", ".relu", ".satfinite"])
        {
            return false;
        }
        let relu = flags.contains(&".relu");
        let satfinite = flags.contains(&".satfinite");
        let (fmt, fp8): (&'static str, bool) = match dt.name {
            "f16x2" => ("F16", false),
            "bf16x2" => ("BF16", false),
            "e4m3x2" => ("E4M3", true),
            "e5m2x2" => ("E5M2", true),
            _ => return false,
        };
        if fp8 && !satfinite {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(a, st), self.a_src(b, st)) else {
            return true;
        };
        let ra = self.a_reg(va);
        let rb = self.a_reg(vb);
        let mut m: Vec<&'static str> = Vec::new();
        if satfinite {
            m.push("SATFINITE");
        }
        if relu {
            m.push("RELU");
        }
        m.extend([fmt, "F32"]);
        let Some(dst) = self.dst(d) else { return false };
        if fp8 {
            m.push("PACK_AB_MERGE_C");
            self.a_fin(&dst, "F2FP", &m, [u(ra), u(rb), rz()]);
        } else {
            m.push("PACK_AB");
            self.a_fin(&dst, "F2FP", &m, [u(ra), u(rb)]);
        }
        self.commit(dst);
        true
    }
}
