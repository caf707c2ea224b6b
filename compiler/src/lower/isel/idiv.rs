//! Integer division and remainder, as ptxas lowers them: an estimate of 2^32/b from the f32
//! reciprocal (`I2F.U32.RP`, `MUFU.RCP`, `+0x0ffffffe`, `F2I.FTZ.U32.TRUNC.NTZ`), one Newton
//! step in integers, the quotient `hi(x·a)`, then at most two corrections. Division by zero
//! gives ptxas's results (quotient all ones; remainder all ones for unsigned, ~b for signed).

use super::arith::{df, im, npt, only, pt, rz, signed, u};
use super::{Cx, Val};
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
        if !only(flags, &[]) || t.bits() > 32 {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(a, t), self.a_src(b, t)) else {
            return true;
        };
        let sg = signed(t);
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
        let r = self.a_mk("MUFU", &["RCP"], vec![u(fb)]);
        let r2 = self.a_mk("IADD3", &[], vec![u(r), im(0x0fff_fffe), rz()]);
        let x = self.a_mk("F2I", &["FTZ", "U32", "TRUNC", "NTZ"], vec![u(r2)]);
        let t = self.a_mk("IMAD", &[], vec![nb, u(x), rz()]);
        let h = self.a_mk("IMAD", &["HI", "U32"], vec![u(x), u(t), rz()]);
        self.a_mk("IADD3", &[], vec![u(x), u(h), rz()])
    }

    /// Unsigned 32-bit a / b or a % b.
    fn udiv32(&mut self, a: Reg, b: Reg, rem: bool) -> Reg {
        let fb = self.a_mk("I2F", &["U32", "RP"], vec![u(b)]);
        let nb = self.a_mk("IADD3", &[], vec![rz(), u(b).negated(), rz()]);
        let nz = self.a_mkp("ISETP", &["NE", "U32", "AND"], vec![u(b), rz(), pt()]);
        let x = self.recip32(fb, u(nb));
        let q = self.a_mk("IMAD", &["HI", "U32"], vec![u(x), u(a), rz()]);
        let nq = self.a_mk("IADD3", &[], vec![u(q).negated(), rz(), rz()]);
        let r = self.a_mk("IMAD", &[], vec![u(b), u(nq), u(a)]);
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
        let ab = self.a_mk("IABS", &[], vec![u(b)]);
        let fb = self.a_mk("I2F", &["RP"], vec![u(ab)]);
        let aa = self.a_mk("IABS", &[], vec![u(a)]);
        let nb = self.a_mk("IADD3", &[], vec![u(ab).negated(), rz(), rz()]);
        let pos = if rem {
            self.a_mkp("ISETP", &["GE", "AND"], vec![u(a), rz(), pt()])
        } else {
            let s = self.a_mk("LOP3", &["LUT"], vec![u(a), u(b), rz(), im(0x3c), npt()]);
            self.a_mkp("ISETP", &["GE", "AND"], vec![u(s), rz(), pt()])
        };
        let x = self.recip32(fb, u(nb));
        let q = self.a_mk("IMAD", &["HI", "U32"], vec![u(x), u(aa), rz()]);
        let r = self.a_mk("IMAD", &[], vec![u(q), u(nb), u(aa)]);
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
}

#[allow(dead_code)]
fn unused(_: Val) -> Operand {
    df(Reg::phys(PReg::RZ))
}
