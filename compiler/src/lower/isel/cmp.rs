//! Comparison and selection: setp (every type, the bool-op forms and `p|q` pairs), set, selp,
//! slct, testp.
//!
//! `XSETP.CMP.BOP P, Q, a, b, c` computes `P = (a cmp b) BOP c` and `Q = !(a cmp b) BOP c`,
//! which is exactly PTX's `setp.cmp.bop p|q, a, b, c`. 64-bit integers compare their low words
//! unsigned and chain the high words with `.EX`; like ptxas only NE/LT/GT are chained (EQ, GE
//! and LE take the second output of NE, LT and GT). Half-precision scalars compare with HSET2
//! (the encoder has no HSETP2) and test the mask with ISETP.

use super::arith::{df, fimm, im, only, pt, ptd, rz, signed, u, wd};
use super::{Cx, Val};
use crate::frontend::ast;
use crate::frontend::types::{Kind, Ty};
use crate::mir::*;

/// The SASS comparison for a PTX one, for integers.
fn icmp(m: &str) -> Option<(&'static str, bool)> {
    // (name, forces unsigned)
    let name = super::cmp_name(m)?;
    Some(match m {
        ".eq" | ".ne" | ".lt" | ".le" | ".gt" | ".ge" => (name, false),
        ".lo" => ("LT", true),
        ".ls" => ("LE", true),
        ".hi" => ("GT", true),
        ".hs" => ("GE", true),
        _ => return None,
    })
}

/// The SASS comparison for a PTX one, for floats.
fn fcmp(m: &str) -> Option<&'static str> {
    Some(match m {
        ".eq" => "EQ",
        ".ne" => "NE",
        ".lt" => "LT",
        ".le" => "LE",
        ".gt" => "GT",
        ".ge" => "GE",
        ".equ" => "EQU",
        ".neu" => "NEU",
        ".ltu" => "LTU",
        ".leu" => "LEU",
        ".gtu" => "GTU",
        ".geu" => "GEU",
        ".num" => "NUM",
        ".nan" => "NAN",
        _ => return None,
    })
}

/// The comparison with its operands swapped.
pub(super) fn swapped(c: &'static str) -> &'static str {
    match c {
        "LT" => "GT",
        "GT" => "LT",
        "LE" => "GE",
        "GE" => "LE",
        "LTU" => "GTU",
        "GTU" => "LTU",
        "LEU" => "GEU",
        "GEU" => "LEU",
        other => other,
    }
}

fn bop_name(m: &str) -> Option<&'static str> {
    Some(match m {
        ".and" => "AND",
        ".or" => "OR",
        ".xor" => "XOR",
        _ => return None,
    })
}

/// A parsed comparison: the PTX relation and bool-op modifiers.
pub(super) struct CmpSpec<'f> {
    pub rel: &'f str,
    pub bop: &'static str,
    pub ftz: bool,
}

impl<'f> CmpSpec<'f> {
    /// The comparison, bool op and `.ftz` of setp/set modifiers (`None` if something else is
    /// there).
    pub fn parse(flags: &[&'f str]) -> Option<CmpSpec<'f>> {
        let mut rel = None;
        let mut bop = "AND";
        let mut ftz = false;
        let mut has_bop = false;
        for f in flags {
            if let Some(b) = bop_name(f) {
                if has_bop {
                    return None;
                }
                bop = b;
                has_bop = true;
            } else if *f == ".ftz" {
                ftz = true;
            } else if rel.is_none() && (icmp(f).is_some() || fcmp(f).is_some()) {
                rel = Some(*f);
            } else {
                return None;
            }
        }
        Some(CmpSpec {
            rel: rel?,
            bop,
            ftz,
        })
    }
}

impl Cx<'_> {
    /// Compares `a` and `b` of type `t`: returns `(p, q)` with `p = (a rel b) BOP c` and
    /// `q = !(a rel b) BOP c` (for f16x2/bf16x2: the low and high halves' results). Without
    /// `want_q` the second output is PT (predicates are scarce) and q must not be used. `None`:
    /// the type or relation is not supported.
    pub(super) fn a_compare2(
        &mut self,
        t: Ty,
        spec: &CmpSpec<'_>,
        c: Operand,
        va: Val,
        vb: Val,
        want_q: bool,
    ) -> Option<(Reg, Reg)> {
        let bop = spec.bop;
        let p = self.a_tmpp();
        let q = if want_q {
            self.a_tmpp()
        } else {
            Reg::phys(PReg::PT)
        };
        if t.is_integer_like() {
            if spec.ftz {
                return None;
            }
            let (cmp, force_u) = icmp(spec.rel)?;
            let uns = force_u || t.kind() != Kind::Signed;
            let n = t.bits();
            if n == 64 {
                // Canonical NE/LT/GT; EQ/GE/LE read the second output.
                let (canon, flip) = match cmp {
                    "EQ" => ("NE", true),
                    "GE" => ("LT", true),
                    "LE" => ("GT", true),
                    other => (other, false),
                };
                let (alo, ahi) = (self.a_wop(va, 0), self.a_wop(va, 1));
                let (blo, bhi) = (self.a_wop(vb, 0), self.a_wop(vb, 1));
                let (alo, ahi, blo, bhi, canon) =
                    if matches!(va, Val::Imm(_)) && !matches!(vb, Val::Imm(_)) {
                        (blo, bhi, alo, ahi, swapped(canon))
                    } else {
                        let ra = self.a_reg64(va);
                        (u(wd(ra, 0)), u(wd(ra, 1)), blo, bhi, canon)
                    };
                let _ = (alo.clone(), ahi.clone());
                let alo = self.a_regop(alo);
                let ahi = self.a_regop(ahi);
                let lo = self.a_mkp("ISETP", &[canon, "U32", "AND"], vec![alo, blo, pt()]);
                let mut hm: Vec<&'static str> = vec![canon];
                if uns {
                    hm.push("U32");
                }
                hm.extend([bop, "EX"]);
                let (d0, d1) = if flip { (q, p) } else { (p, q) };
                self.a_put("ISETP", &hm, vec![df(d0), df(d1), ahi, bhi, c, u(lo)]);
                return Some((p, q));
            }
            if n > 64 {
                return None;
            }
            let va = self.a_ext(va, n, !uns);
            let vb = self.a_ext(vb, n, !uns);
            let (va, vb, cmp) = if matches!(va, Val::Imm(_)) && !matches!(vb, Val::Imm(_)) {
                (vb, va, swapped(cmp))
            } else {
                (va, vb, cmp)
            };
            let ra = self.a_reg(va);
            let ob = self.a_op(vb);
            let mut m: Vec<&'static str> = vec![cmp];
            if uns {
                m.push("U32");
            }
            m.push(bop);
            self.a_put("ISETP", &m, vec![df(p), df(q), u(ra), ob, c]);
            return Some((p, q));
        }
        let cmp = fcmp(spec.rel)?;
        match t.name {
            "f32" => {
                let (va, vb, cmp) = if !matches!(va, Val::Reg(_)) && matches!(vb, Val::Reg(_)) {
                    (vb, va, swapped(cmp))
                } else {
                    (va, vb, cmp)
                };
                let ra = self.a_reg(va);
                let ob = self.a_fop(vb);
                let mut m: Vec<&'static str> = vec![cmp];
                if spec.ftz {
                    m.push("FTZ");
                }
                m.push(bop);
                self.a_put("FSETP", &m, vec![df(p), df(q), u(ra), ob, c]);
            }
            "f64" => {
                if spec.ftz {
                    return None;
                }
                let (va, vb, cmp) = if !matches!(va, Val::Reg(_)) && matches!(vb, Val::Reg(_)) {
                    (vb, va, swapped(cmp))
                } else {
                    (va, vb, cmp)
                };
                let ra = self.a_reg64(va);
                let ob = self.a_dop(vb);
                self.a_put("DSETP", &[cmp, bop], vec![df(p), df(q), u(ra), ob, c]);
            }
            "f16" | "bf16" | "f16x2" | "bf16x2" => {
                let ra = self.a_reg(va);
                let rb = self.a_reg(vb);
                let x2 = t.name.ends_with("x2");
                let mut m: Vec<&'static str> = Vec::new();
                if t.name.starts_with("bf") {
                    m.push("BF16_V2");
                }
                m.push(cmp);
                if spec.ftz {
                    m.push("FTZ");
                }
                m.push("AND");
                let (oa, ob) = if x2 {
                    (u(ra), u(rb))
                } else {
                    (u(ra).with_suffix("H0_H0"), u(rb).with_suffix("H0_H0"))
                };
                let mask = self.a_mk("HSET2", &m, [oa, ob, pt()]);
                if x2 {
                    let lo = self.a_lop(u(mask), im(0xffff), 0xc0);
                    self.a_put(
                        "ISETP",
                        &["NE", "U32", bop],
                        vec![df(p), ptd(), u(lo), rz(), c.clone()],
                    );
                    self.a_put(
                        "ISETP",
                        &["GE", "U32", bop],
                        vec![df(q), ptd(), u(mask), im(0x10000), c],
                    );
                } else {
                    self.a_put(
                        "ISETP",
                        &["NE", "U32", bop],
                        vec![df(p), df(q), u(mask), rz(), c],
                    );
                }
            }
            _ => return None,
        }
        Some((p, q))
    }

    /// A register operand (an immediate moved into a register).
    fn a_regop(&mut self, o: Operand) -> Operand {
        match o.kind {
            OpKind::Int(_) | OpKind::Float(..) => {
                let r = self.a_mk("MOV", &[], [o]);
                u(r)
            }
            _ => o,
        }
    }

    /// An f32 operand: register, f32 immediate (an integer immediate is taken as its bits).
    pub(super) fn a_fop(&mut self, v: Val) -> Operand {
        match v {
            Val::F32(b) => fimm(b),
            Val::Imm(i) => {
                let r = self.a_reg(Val::Imm(i));
                u(r)
            }
            Val::F64(b) => fimm((f64::from_bits(b) as f32).to_bits()),
            other => self.a_op(other),
        }
    }

    /// An f64 operand: a register pair, or an immediate whose low word is zero (`F64Hi`).
    pub(super) fn a_dop(&mut self, v: Val) -> Operand {
        match v {
            Val::F64(b) if b & 0xffff_ffff == 0 => {
                Operand::new(OpKind::Float(FloatFmt::F64Hi, b >> 32))
            }
            Val::F32(b) => {
                let x = f64::from(f32::from_bits(b)).to_bits();
                self.a_dop(Val::F64(x))
            }
            Val::Reg(r) if r.count() == 2 => u(r),
            other => {
                let r = self.to_reg(other, 2);
                u(r)
            }
        }
    }

    /// The `c` operand of a bool-op comparison (PT without one).
    fn a_bop_src(&mut self, ops: &[ast::Operand], has_bop: bool) -> Option<Operand> {
        if !has_bop {
            return Some(pt());
        }
        let (r, neg) = self.a_pred_src(ops.get(3)?)?;
        Some(if neg { u(r).inverted() } else { u(r) })
    }

    /// `setp.cmp[.bop][.ftz].type p[|q], a, b[, c]`.
    pub(super) fn setp(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [t] = types else { return false };
        let Some(spec) = CmpSpec::parse(flags) else {
            return false;
        };
        let has_bop = flags.iter().any(|f| bop_name(f).is_some());
        let ops = &ins.operands[..];
        if ops.len() != if has_bop { 4 } else { 3 } {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(&ops[1], *t), self.a_src(&ops[2], *t)) else {
            return true;
        };
        let Some(c) = self.a_bop_src(ops, has_bop) else {
            return false;
        };
        let x2 = t.name.ends_with("x2") && t.is_float();
        let pair = matches!(ops[0], ast::Operand::Pair(..));
        let Some((p, q)) = self.a_compare2(*t, &spec, c, va, vb, pair) else {
            return false;
        };
        match &ops[0] {
            ast::Operand::Pair(pair, _) => {
                let (first, second) = (&pair.0, &pair.1);
                if let Some(e) = first
                    && let Some(dst) = self.dst(&ast::Operand::Expr(e.clone()))
                {
                    self.a_finish(dst, p);
                }
                let Some(dst) = self.dst(&ast::Operand::Expr(second.clone())) else {
                    return false;
                };
                self.a_finish(dst, q);
            }
            d => {
                if x2 {
                    return false;
                }
                let Some(dst) = self.dst(d) else { return false };
                self.a_finish(dst, p);
            }
        }
        true
    }

    /// `set.cmp[.bop][.ftz].dtype.stype d, a, b[, c]`: the predicate, then `SEL d, RZ, 1.0 or
    /// 0xffffffff, !P`. f16/bf16 sources: HSET2 writes the mask (`.BF`: 1.0) directly.
    pub(super) fn set_op(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [dt, st] = types else { return false };
        let Some(spec) = CmpSpec::parse(flags) else {
            return false;
        };
        let has_bop = flags.iter().any(|f| bop_name(f).is_some());
        let ops = &ins.operands[..];
        if ops.len() != if has_bop { 4 } else { 3 } {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(&ops[1], *st), self.a_src(&ops[2], *st)) else {
            return true;
        };
        let Some(c) = self.a_bop_src(ops, has_bop) else {
            return false;
        };
        let half = matches!(st.name, "f16" | "bf16" | "f16x2" | "bf16x2");
        if half {
            let Some(cmp) = fcmp(spec.rel) else {
                return false;
            };
            let x2 = st.name.ends_with("x2");
            let to_half = dt.name == st.name || (dt.name == "f16x2" && st.name == "f16x2");
            if !(dt.is_integer_like() && dt.bits() == 32 || x2 && to_half) {
                return false;
            }
            let ra = self.a_reg(va);
            let rb = self.a_reg(vb);
            let mut m: Vec<&'static str> = Vec::new();
            if st.name.starts_with("bf") {
                m.push("BF16_V2");
            }
            if to_half {
                m.push("BF");
            }
            m.push(cmp);
            if spec.ftz {
                m.push("FTZ");
            }
            m.push(spec.bop);
            let (oa, ob) = if x2 {
                (u(ra), u(rb))
            } else {
                (u(ra).with_suffix("H0_H0"), u(rb).with_suffix("H0_H0"))
            };
            let Some(dst) = self.dst(&ops[0]) else {
                return false;
            };
            if x2 {
                self.a_fin(&dst, "HSET2", &m, [oa, ob, c]);
            } else {
                let h = self.a_mk("HSET2", &m, [oa, ob, c]);
                self.a_fin(&dst, "PRMT", &[], [u(h), im(0x9910), rz()]);
            }
            self.commit(dst);
            return true;
        }
        let Some((p, _)) = self.a_compare2(*st, &spec, c, va, vb, false) else {
            return false;
        };
        let one = match dt.name {
            "f32" => 0x3f80_0000,
            "u32" | "s32" | "b32" => 0xffff_ffff,
            _ => return false,
        };
        let Some(dst) = self.dst(&ops[0]) else {
            return false;
        };
        self.a_fin(&dst, "SEL", &[], [rz(), im(one), u(p).inverted()]);
        self.commit(dst);
        true
    }

    /// `selp.type d, a, b, c`: `SEL d, a, b, c` word by word.
    pub(super) fn selp(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, *t)) else {
            return true;
        };
        let Some((p, neg)) = self.a_pred_src(c) else {
            return false;
        };
        self.a_select(d, *t, va, vb, p, neg)
    }

    /// `d = p ? a : b` for a value of type t.
    fn a_select(&mut self, d: &ast::Operand, t: Ty, va: Val, vb: Val, p: Reg, neg: bool) -> bool {
        let Some(dst) = self.dst(d) else { return false };
        let words = dst.reg().count();
        let f64ish = t.bits() == 64;
        for w in 0..words {
            let (x, y) = if f64ish || words == 2 {
                (self.word(va, w), self.word(vb, w))
            } else {
                (va, vb)
            };
            let x = float_bits(x);
            let y = float_bits(y);
            // SEL's first source is a register: an immediate goes second (the predicate
            // inverted), and a zero first is RZ (ptxas: `selp 1, 0, p` → `SEL R, RZ, 0x1, !P`).
            let zero = |v: Val| matches!(v, Val::Imm(0));
            let (x, y, n) = if matches!(x, Val::Imm(_)) && !matches!(y, Val::Imm(_))
                || matches!(x, Val::Imm(_)) && !zero(x) && zero(y)
            {
                (y, x, !neg)
            } else {
                (x, y, neg)
            };
            let rx = if zero(x) {
                Reg::phys(PReg::RZ)
            } else {
                self.a_reg(x)
            };
            let oy = self.a_op(y);
            let op = if n { u(p).inverted() } else { u(p) };
            self.a_fin_w(&dst, w, "SEL", &[], [u(rx), oy, op]);
        }
        self.commit(dst);
        true
    }

    /// `slct.dtype.{s32,f32} d, a, b, c`: `d = c >= 0 ? a : b`.
    pub(super) fn slct(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [dt, ct] = types else { return false };
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        if !only(flags, &[".ftz"]) {
            return false;
        }
        let (Some(va), Some(vb), Some(vc)) =
            (self.a_src(a, *dt), self.a_src(b, *dt), self.a_src(c, *ct))
        else {
            return true;
        };
        let p = match ct.name {
            "s32" => {
                let rc = self.a_reg(vc);
                self.a_mkp("ISETP", &["GE", "AND"], vec![u(rc), rz(), pt()])
            }
            "f32" => {
                let rc = self.a_reg(vc);
                let m: &[&'static str] = if flags.contains(&".ftz") {
                    &["GE", "FTZ", "AND"]
                } else {
                    &["GE", "AND"]
                };
                self.a_mkp("FSETP", m, vec![u(rc), rz(), pt()])
            }
            _ => return false,
        };
        self.a_select(d, *dt, va, vb, p, false)
    }

    /// `testp.op.{f32,f64} p, a`, on the bits (as ptxas): `t = |a|` by masking the sign, then
    /// unsigned comparisons against the infinity and smallest-normal patterns (zero counts as
    /// normal, as in ptxas's lowering).
    pub(super) fn testp(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [t] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        let [op] = flags else { return false };
        let Some(va) = self.a_src(a, *t) else {
            return true;
        };
        let p = match t.name {
            "f32" => {
                let ra = self.a_reg(va);
                let m = self.a_lop(u(ra), im(0x7fff_ffff), 0xc0);
                let cmp = |cx: &mut Self, c: &'static str, v: i64| {
                    cx.a_mkp("ISETP", &[c, "U32", "AND"], vec![u(m), im(v), pt()])
                };
                match *op {
                    ".finite" => cmp(self, "LT", 0x7f80_0000),
                    ".infinite" => cmp(self, "EQ", 0x7f80_0000),
                    ".number" => cmp(self, "LE", 0x7f80_0000),
                    ".notanumber" => cmp(self, "GT", 0x7f80_0000),
                    ".normal" => {
                        let inf = cmp(self, "GE", 0x7f80_0000);
                        let n = self.a_mkp(
                            "ISETP",
                            &["GE", "U32", "AND"],
                            vec![u(m), im(0x80_0000), u(inf).inverted()],
                        );
                        self.a_mkp("ISETP", &["EQ", "U32", "OR"], vec![u(m), rz(), u(n)])
                    }
                    ".subnormal" => {
                        let s = self.a_mk("IADD3", &[], [u(m), im(-1), rz()]);
                        self.a_mkp(
                            "ISETP",
                            &["LT", "U32", "AND"],
                            vec![u(s), im(0x7f_ffff), pt()],
                        )
                    }
                    _ => return false,
                }
            }
            "f64" => {
                let ra = self.a_reg64(va);
                let lo = wd(ra, 0);
                let m = self.a_lop(u(wd(ra, 1)), im(0x7fff_ffff), 0xc0);
                let u64t = super::arith::ty("u64");
                let tv = {
                    let t2 = self.a_tmp64();
                    self.a_put("COPY", &[], vec![df(wd(t2, 0)), u(lo)]);
                    self.a_put("COPY", &[], vec![df(wd(t2, 1)), u(m)]);
                    Val::Reg(t2)
                };
                let cmp = |cx: &mut Self, rel: &'static str, k: i64| -> Option<Reg> {
                    let spec = CmpSpec {
                        rel,
                        bop: "AND",
                        ftz: false,
                    };
                    cx.a_compare2(u64t, &spec, pt(), tv, Val::Imm(k), false)
                        .map(|x| x.0)
                };
                const INF: i64 = 0x7ff0_0000_0000_0000;
                const MIN_NORMAL: i64 = 0x0010_0000_0000_0000;
                let r = match *op {
                    ".finite" => cmp(self, ".lo", INF),
                    ".infinite" => cmp(self, ".eq", INF),
                    ".number" => cmp(self, ".ls", INF),
                    ".notanumber" => cmp(self, ".hi", INF),
                    ".normal" => {
                        let (Some(x), Some(y), Some(z)) = (
                            cmp(self, ".hs", MIN_NORMAL),
                            cmp(self, ".lo", INF),
                            cmp(self, ".eq", 0),
                        ) else {
                            return false;
                        };
                        // (x && y) || z
                        Some(self.a_mkp("PLOP3", &["LUT"], vec![u(x), u(y), u(z), im(0xea), im(0)]))
                    }
                    ".subnormal" => {
                        let (Some(x), Some(y)) =
                            (cmp(self, ".lo", MIN_NORMAL), cmp(self, ".ne", 0))
                        else {
                            return false;
                        };
                        Some(self.a_mkp("PLOP3", &["LUT"], vec![u(x), u(y), pt(), im(0x80), im(0)]))
                    }
                    _ => None,
                };
                match r {
                    Some(r) => r,
                    None => return false,
                }
            }
            _ => return false,
        };
        let Some(dst) = self.dst(d) else { return false };
        self.a_finish(dst, p);
        true
    }
}

/// A float immediate as its integer bits (for SEL and moves).
fn float_bits(v: Val) -> Val {
    match v {
        Val::F32(b) => Val::Imm(i64::from(b)),
        other => other,
    }
}

#[allow(dead_code)]
fn is_signed(t: Ty) -> bool {
    signed(t)
}
