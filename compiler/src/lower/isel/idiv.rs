//! Integer division and remainder, as ptxas lowers them: an estimate of 2^32/b from the f32
//! reciprocal (`I2F.U32.RP`, `MUFU.RCP`, `+0x0ffffffe`, `F2I.FTZ.U32.TRUNC.NTZ`), one Newton
//! step in integers, the quotient `hi(x·a)`, then at most two corrections. Division by zero
//! gives ptxas's results (quotient all ones; remainder all ones for unsigned, ~b for signed).

use super::Cx;
use super::arith::{df, im, npt, only, pt, rz, signed, u, wd};
use crate::frontend::ast;
use crate::frontend::types::Ty;
use crate::mir::*;

impl Cx<'_> {
    pub(super) fn int_div_rem(
        &mut self,
        ins: &ast::Instruction,
        rem: bool,
        t: Ty,
        flags: &[&str],
    ) -> bool {
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        if !only(flags, &[]) || t.bits() > 64 {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(a, t), self.a_src(b, t)) else {
            return true;
        };
        let sg = signed(t);
        if t.bits() == 64 {
            let ra = self.a_reg64(va);
            let rb = self.a_reg64(vb);
            let r = if sg {
                self.sdiv64(ra, rb, rem)
            } else {
                self.udiv64(ra, rb, rem)
            };
            let Some(dst) = self.dst(d) else { return false };
            self.a_finish(dst, r);
            return true;
        }
        let va = self.a_ext(va, t.bits(), sg);
        let vb = self.a_ext(vb, t.bits(), sg);
        let ra = self.a_reg(va);
        let rb = self.a_reg(vb);
        let r = if sg {
            self.sdiv32(ra, rb, rem)
        } else {
            self.udiv32(ra, rb, rem)
        };
        let Some(dst) = self.dst(d) else { return false };
        self.a_finish(dst, r);
        true
    }

    /// x ≈ 2^32 / b (from below) refined by one Newton step: `x + hi(x · (−b·x))`. `fb` is b as
    /// a float rounded up (`I2F[.U32].RP`), `nb` is −b.
    fn recip32(&mut self, fb: Reg, nb: Operand) -> Reg {
        let r = self.a_mk("MUFU", &["RCP"], [u(fb)]);
        let r2 = self.a_mk("IADD3", &[], [u(r), im(0x0fff_fffe), rz()]);
        let x = self.a_mk("F2I", &["FTZ", "U32", "TRUNC", "NTZ"], [u(r2)]);
        let t = self.a_mk("IMAD", &[], [nb, u(x), rz()]);
        let h = self.a_mk("IMAD", &["HI", "U32"], [u(x), u(t), rz()]);
        self.a_mk("IADD3", &[], [u(x), u(h), rz()])
    }

    /// Unsigned 32-bit a / b or a % b.
    fn udiv32(&mut self, a: Reg, b: Reg, rem: bool) -> Reg {
        let fb = self.a_mk("I2F", &["U32", "RP"], [u(b)]);
        let nb = self.a_mk("IADD3", &[], [rz(), u(b).negated(), rz()]);
        let nz = self.a_mkp("ISETP", &["NE", "U32", "AND"], vec![u(b), rz(), pt()]);
        let x = self.recip32(fb, u(nb));
        let q = self.a_mk("IMAD", &["HI", "U32"], [u(x), u(a), rz()]);
        let nq = self.a_mk("IADD3", &[], [u(q).negated(), rz(), rz()]);
        let r = self.a_mk("IMAD", &[], [u(b), u(nq), u(a)]);
        let p0 = self.a_mkp("ISETP", &["GE", "U32", "AND"], vec![u(r), u(b), pt()]);
        let r1 = self.a_mk_if(p0, false, r, "IADD3", &[], vec![u(r), u(b).negated(), rz()]);
        let res = if rem {
            let p1 = self.a_mkp("ISETP", &["GE", "U32", "AND"], vec![u(r1), u(b), pt()]);
            self.a_mk_if(
                p1,
                false,
                r1,
                "IADD3",
                &[],
                vec![u(r1), u(b).negated(), rz()],
            )
        } else {
            let q1 = self.a_mk_if(p0, false, q, "IADD3", &[], vec![u(q), im(1), rz()]);
            let p1 = self.a_mkp("ISETP", &["GE", "U32", "AND"], vec![u(r1), u(b), pt()]);
            self.a_mk_if(p1, false, q1, "IADD3", &[], vec![u(q1), im(1), rz()])
        };
        self.a_mk_if(
            nz,
            true,
            res,
            "LOP3",
            &["LUT"],
            vec![rz(), u(b), rz(), im(0x33), npt()],
        )
    }

    /// Signed 32-bit a / b or a % b: the unsigned algorithm on |a|, |b|, then the sign (the
    /// quotient's is a^b's, the remainder's a's).
    fn sdiv32(&mut self, a: Reg, b: Reg, rem: bool) -> Reg {
        let ab = self.a_mk("IABS", &[], [u(b)]);
        let fb = self.a_mk("I2F", &["RP"], [u(ab)]);
        let aa = self.a_mk("IABS", &[], [u(a)]);
        let nb = self.a_mk("IADD3", &[], [u(ab).negated(), rz(), rz()]);
        let pos = if rem {
            self.a_mkp("ISETP", &["GE", "AND"], vec![u(a), rz(), pt()])
        } else {
            let s = self.a_lop(u(a), u(b), 0x3c);
            self.a_mkp("ISETP", &["GE", "AND"], vec![u(s), rz(), pt()])
        };
        let x = self.recip32(fb, u(nb));
        let q = self.a_mk("IMAD", &["HI", "U32"], [u(x), u(aa), rz()]);
        let r = self.a_mk("IMAD", &[], [u(q), u(nb), u(aa)]);
        let gt = self.a_mkp("ISETP", &["GT", "U32", "AND"], vec![u(ab), u(r), pt()]);
        let r1 = self.a_mk_if(gt, true, r, "IADD3", &[], vec![u(r), u(ab).negated(), rz()]);
        let nz = self.a_mkp("ISETP", &["NE", "AND"], vec![u(b), rz(), pt()]);
        let res = if rem {
            let gt2 = self.a_mkp("ISETP", &["GT", "U32", "AND"], vec![u(ab), u(r1), pt()]);
            self.a_mk_if(
                gt2,
                true,
                r1,
                "IADD3",
                &[],
                vec![u(r1), u(ab).negated(), rz()],
            )
        } else {
            let q1 = self.a_mk_if(gt, true, q, "IADD3", &[], vec![u(q), im(1), rz()]);
            let ge = self.a_mkp("ISETP", &["GE", "U32", "AND"], vec![u(r1), u(ab), pt()]);
            self.a_mk_if(ge, false, q1, "IADD3", &[], vec![u(q1), im(1), rz()])
        };
        let signed_res = self.a_mk_if(
            pos,
            true,
            res,
            "IADD3",
            &[],
            vec![u(res).negated(), rz(), rz()],
        );
        self.a_mk_if(
            nz,
            true,
            signed_res,
            "LOP3",
            &["LUT"],
            vec![rz(), u(b), rz(), im(0x33), npt()],
        )
    }

    // ------------------------------------------------------------------------------------------
    // 64 bits

    /// A 64-bit temporary from two words.
    fn pair_of(&mut self, lo: Operand, hi: Operand) -> Reg {
        let t = self.a_tmp64();
        self.a_put("MOV", &[], vec![df(wd(t, 0)), lo]);
        self.a_put("MOV", &[], vec![df(wd(t, 1)), hi]);
        t
    }

    /// x + y (64-bit).
    fn add64_reg(&mut self, x: Reg, y: Reg) -> Reg {
        let c = self.a_tmpp();
        let t = self.a_tmp64();
        self.a_put(
            "IADD3",
            &[],
            vec![df(wd(t, 0)), df(c), u(wd(x, 0)), u(wd(y, 0)), rz()],
        );
        self.a_put(
            "IADD3",
            &["X"],
            vec![df(wd(t, 1)), u(wd(x, 1)), u(wd(y, 1)), rz(), u(c), npt()],
        );
        t
    }

    /// x − y (64-bit).
    fn sub64(&mut self, x: Operand, xh: Operand, y: Reg) -> Reg {
        let c = self.a_tmpp();
        let t = self.a_tmp64();
        self.a_put(
            "IADD3",
            &[],
            vec![df(wd(t, 0)), df(c), x, u(wd(y, 0)).negated(), rz()],
        );
        self.a_put(
            "IADD3",
            &["X"],
            vec![df(wd(t, 1)), xh, u(wd(y, 1)).inverted(), rz(), u(c), npt()],
        );
        t
    }

    /// x + 1 (64-bit).
    fn inc64(&mut self, x: Reg) -> Reg {
        let c = self.a_tmpp();
        let t = self.a_tmp64();
        self.a_put(
            "IADD3",
            &[],
            vec![df(wd(t, 0)), df(c), u(wd(x, 0)), im(1), rz()],
        );
        self.a_put(
            "IADD3",
            &["X"],
            vec![df(wd(t, 1)), u(wd(x, 1)), rz(), rz(), u(c), npt()],
        );
        t
    }

    /// p ? x : y (64-bit).
    fn sel64(&mut self, x: Reg, y: Reg, p: Operand) -> Reg {
        let t = self.a_tmp64();
        self.a_put(
            "SEL",
            &[],
            vec![df(wd(t, 0)), u(wd(x, 0)), u(wd(y, 0)), p.clone()],
        );
        self.a_put("SEL", &[], vec![df(wd(t, 1)), u(wd(x, 1)), u(wd(y, 1)), p]);
        t
    }

    /// The low 64 bits of x·y.
    fn mullo64(&mut self, x: Reg, y: Reg) -> Reg {
        let t1 = self.a_mk("IMAD", &[], [u(wd(x, 1)), u(wd(y, 0)), rz()]);
        let t2 = self.a_mk("IMAD", &[], [u(wd(x, 0)), u(wd(y, 1)), u(t1)]);
        let w = self.a_mk64(
            "IMAD",
            &["WIDE", "U32"],
            [u(wd(x, 0)), u(wd(y, 0)), super::arith::rz64()],
        );
        let hi = self.a_mk("IADD3", &[], [u(wd(w, 1)), u(t2), rz()]);
        let t = self.a_tmp64();
        self.a_put("COPY", &[], vec![df(wd(t, 0)), u(wd(w, 0))]);
        self.a_put("COPY", &[], vec![df(wd(t, 1)), u(hi)]);
        t
    }

    /// Unsigned 64-bit a / b or a % b, as ptxas's subroutine computes it: x ≈ 2^64/b from the
    /// f32 reciprocal (`I2F.U64.RP`, `MUFU.RCP`, `+0x1ffffffe`, `F2I.U64.TRUNC`: from below), two
    /// Newton steps `x += hi(x·(−b·x))`, `q = hi(a·x)`, then two corrections. b = 0 gives an
    /// all-ones quotient and a remainder of a.
    fn udiv64(&mut self, a: Reg, b: Reg, rem: bool) -> Reg {
        let f = self.a_mk("I2F", &["U64", "RP"], [u(b)]);
        let r = self.a_mk("MUFU", &["RCP"], [u(f)]);
        let r2 = self.a_mk("IADD3", &[], [u(r), im(0x1fff_fffe), rz()]);
        let mut x = self.a_mk64("F2I", &["U64", "TRUNC"], [u(r2)]);
        for _ in 0..2 {
            let m = self.mullo64(x, b);
            let n = self.sub64(rz(), rz(), m);
            let h = self.mul_hi64(x, n, false);
            x = self.add64_reg(x, h);
        }
        let mut q = self.mul_hi64(a, x, false);
        let qb = self.mullo64(q, b);
        let mut rr = self.sub64(u(wd(a, 0)), u(wd(a, 1)), qb);
        for _ in 0..2 {
            let ge = self.a_cmp64(
                "GE",
                false,
                u(wd(rr, 0)),
                u(wd(rr, 1)),
                u(wd(b, 0)),
                u(wd(b, 1)),
            );
            let q1 = self.inc64(q);
            let r1 = self.sub64(u(wd(rr, 0)), u(wd(rr, 1)), b);
            q = self.sel64(q1, q, u(ge));
            rr = self.sel64(r1, rr, u(ge));
        }
        if rem {
            return rr;
        }
        let bz = self.a_cmp64("EQ", false, u(wd(b, 0)), u(wd(b, 1)), rz(), rz());
        let ones = self.pair_of(im(0xffff_ffff), im(0xffff_ffff));
        self.sel64(ones, q, u(bz))
    }

    /// −x (64-bit) where p, else x.
    fn neg64_if(&mut self, x: Reg, p: Operand) -> Reg {
        let n = self.sub64(rz(), rz(), x);
        self.sel64(n, x, p)
    }

    /// Signed 64-bit a / b or a % b: the unsigned division of |a| and |b|, then the sign (a^b's
    /// for the quotient, a's for the remainder). b = 0 gives an unspecified value, as PTX allows.
    fn sdiv64(&mut self, a: Reg, b: Reg, rem: bool) -> Reg {
        let an = self.a_mkp("ISETP", &["LT", "AND"], vec![u(wd(a, 1)), rz(), pt()]);
        let bn = self.a_mkp("ISETP", &["LT", "AND"], vec![u(wd(b, 1)), rz(), pt()]);
        let aa = self.neg64_if(a, u(an));
        let ab = self.neg64_if(b, u(bn));
        let r = self.udiv64(aa, ab, rem);
        if rem {
            return self.neg64_if(r, u(an));
        }
        let s = self.a_lop(u(wd(a, 1)), u(wd(b, 1)), 0x3c);
        let neg = self.a_mkp("ISETP", &["LT", "AND"], vec![u(s), rz(), pt()]);
        self.neg64_if(r, u(neg))
    }
}
