//! `rcp.rz.f64`, `rcp.rm.f64`, `rcp.rp.f64`: the f64 reciprocal with a directed rounding, as
//! ptxas computes it (probe `tests/sass-probes/ptx/rcp_f64.ptx`, kernels `rcp_{rz,rm,rp}_f64`;
//! also `corpus/zluda/sm90a/rcp_f64.ptx`). ptxas calls one subroutine for the whole operation,
//! and so does ptxc (`lower/slow_path.rs`: `__cuda_sm20_rcp_{rz,rd,ru}_f64`); this is its body,
//! with the same arithmetic, so that every input gives ptxas's bits (`tests/tests/sim_zluda.rs` compares the two on the simulator). There is no
//! `.ftz` form (ptxas rejects `rcp.rz.ftz.f64`); `.rn` is `fdiv.rs`'s `drcp_rn`.
//!
//! The addresses below are those of the probe's `rcp_rm_f64` listing (`rcp_rz_f64` is the same
//! up to 0x390).

use super::arith::{df, im, npt, pt, rz, rz64, u, wd};
use super::float::AbsOp;
use crate::mir::*;

/// A directed rounding of `rcp.f64`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Directed {
    Rz,
    Rm,
    Rp,
}

impl Directed {
    /// The PTX modifier's rounding.
    pub(super) fn from_flag(flag: &str) -> Option<Directed> {
        match flag {
            ".rz" => Some(Directed::Rz),
            ".rm" => Some(Directed::Rm),
            ".rp" => Some(Directed::Rp),
            _ => None,
        }
    }

    /// DFMA's rounding modifier.
    fn sass(self) -> &'static str {
        match self {
            Directed::Rz => "RZ",
            Directed::Rm => "RM",
            Directed::Rp => "RP",
        }
    }
}

/// An f64 immediate given by its high word (the low word zero).
fn dimm(hi: u64) -> Operand {
    Operand::new(OpKind::Float(FloatFmt::F64Hi, hi))
}

/// 1.0 as an f64 immediate.
const ONE: u64 = 0x3ff0_0000;
/// +inf's high word.
const INF: u64 = 0x7ff0_0000;
/// 2^54 (printed 1.80143985094819840000e+16): the scale of a subnormal operand.
const TWO_54: u64 = 0x4350_0000;

impl super::Cx<'_> {
    /// The biased exponent of an f64 from its high word: `(hi << 1) >> 21` (ptxas:
    /// `IMAD.SHL.U32 R, hi, 0x2, RZ; SHF.R.U32.HI R, RZ, 0x15, R`, 0x0b0/0x0e0 and 0x350/0x360).
    fn d_exponent(&mut self, hi: Reg) -> Reg {
        let t = self.a_mk("SHF", &["L", "U32"], [u(hi), im(1), rz()]);
        self.a_mk("SHF", &["R", "U32", "HI"], [rz(), im(0x15), u(t)])
    }

    /// 1/a rounded toward zero, −inf or +inf (ptxas's subroutine, probe `rcp_f64.ptx`):
    ///
    /// * exponent 0 or 2047 (0x0f0–0x110): a NaN is quieted (`hi | 0x80000`), ±inf gives ±0,
    ///   ±0 gives ±inf, a subnormal is scaled by 2^54 (0x120–0x250);
    /// * m = x·2^(1023 − e), e the operand's exponent field and x the operand (scaled by 2^54
    ///   if subnormal), so m ∈ [1, 2) for a normal operand (0x270–0x2a0); the seed is
    ///   `{1, MUFU.RCP64H(m.hi)}`, refined by DFMA steps, the last in the rounding mode
    ///   (0x2b0–0x340), giving q ≈ 1/m;
    /// * `E` = exp(q) − e (+ 54 if scaled): when `E + 1023` is a normal exponent field it
    ///   replaces q's (0x350–0x3d0); otherwise the result overflows or is subnormal, rounded by
    ///   hand ([`Self::drcp_out`]).
    pub(super) fn drcp_directed(&mut self, a: Reg, mode: Directed) -> Reg {
        // ptxas calls one subroutine for the whole operation (`lower/slow_path.rs`); this is its
        // body.
        if !self.is_slow_path_body() {
            let name = match mode {
                Directed::Rz => "__cuda_sm20_rcp_rz_f64",
                Directed::Rm => "__cuda_sm20_rcp_rd_f64",
                Directed::Rp => "__cuda_sm20_rcp_ru_f64",
            };
            return self.call_slow_path(name, &[a], 2);
        }
        let res = self.f_var64("rcp");
        let x = self.f_var64("rcp.x");
        let scale = self.f_var("rcp.scale");
        let (lo, hi) = (wd(a, 0), wd(a, 1));
        let ea = self.d_exponent(hi);
        let t = self.a_mk("IADD3", &[], [u(ea), im(-1), rz()]);
        let special = self.a_mkp("ISETP", &["GT", "U32", "AND"], vec![u(t), im(0x7fd), pt()]);
        let [nan_chk, inf_chk, zero_chk, sub, normal, main, out, join] = self.f_blocks::<8>();
        self.f_br_if(special, true, normal, nan_chk);
        // NaN: quieted (0x120–0x150).
        let _ = nan_chk;
        let nan = self.a_mkp("DSETP", &["GTU", "AND"], vec![u(a).abs_(), dimm(INF), pt()]);
        let qh = self.a_lop(u(hi), im(0x8_0000), 0xfc);
        let v = self.f_pair(u(lo), u(qh));
        self.f_set(res, v);
        self.f_br_if(nan, false, join, inf_chk);
        // ±inf → ±0 (0x160–0x190).
        let _ = inf_chk;
        let notinf = self.a_mkp("DSETP", &["NEU", "AND"], vec![u(a).abs_(), dimm(INF), pt()]);
        let sign = self.a_lop(u(hi), im(0x8000_0000), 0xc0);
        let v = self.f_pair(im(0), u(sign));
        self.f_set(res, v);
        self.f_br_if(notinf, true, join, zero_chk);
        // ±0 → ±inf (0x1a0–0x1e0).
        let _ = zero_chk;
        let nonzero = self.a_mkp("DSETP", &["NEU", "AND"], vec![u(a), rz64(), pt()]);
        let ih = self.a_lop(u(sign), im(0x7ff0_0000), 0xfc);
        let v = self.f_pair(im(0), u(ih));
        self.f_set(res, v);
        self.f_br_if(nonzero, true, join, sub);
        // Subnormal: a·2^54, the result's exponent 54 more (0x1f0–0x250; the test of t ≥ 0 is
        // ptxas's, and false for every operand that gets here).
        let _ = sub;
        let ge = self.a_mkp("ISETP", &["GE", "AND"], vec![u(t), rz(), pt()]);
        let scaled = self.a_mk_if(ge, true, a, "DMUL", &[], vec![u(a), dimm(TWO_54)]);
        let sc = self.a_mk("SEL", &[], [rz(), im(0x36), u(ge)]);
        self.f_set(x, scaled);
        self.f_set(scale, sc);
        self.f_br(main);
        // A normal operand (0x260).
        self.f_start(normal, false);
        self.f_set(x, a);
        let zero = self.a_mk("MOV", &[], [im(0)]);
        self.f_set(scale, zero);
        self.f_start(main, true);
        // m = x with its exponent replaced by 1023's (0x270–0x2a0).
        let xv = self.f_get(x);
        let sc = self.f_get(scale);
        let k = self.a_mk("IADD3", &[], [u(ea), im(-0x3ff), rz()]);
        let mh = self.a_mk("IMAD", &[], [u(k), im(-0x10_0000), u(wd(xv, 1))]);
        let m = self.f_pair(u(wd(xv, 0)), u(mh));
        // Seed and Newton steps (0x2b0–0x340).
        let rh = self.a_mk("MUFU", &["RCP64H"], [u(mh)]);
        let r0 = self.f_pair(im(1), u(rh));
        let e = self.a_mk64("DFMA", &[], [u(m).negated(), u(r0), dimm(ONE)]);
        let r1 = self.a_mk64("DFMA", &[], [u(r0), u(e), u(r0)]);
        let ee = self.a_mk64("DMUL", &[], [u(e), u(e)]);
        let r2 = self.a_mk64("DFMA", &[], [u(r1), u(ee), u(r1)]);
        let e3 = self.a_mk64("DFMA", &[], [u(m).negated(), u(r2), dimm(ONE)]);
        let r3 = self.a_mk64("DFMA", &[], [u(e), u(r2), u(r0)]);
        let y = self.a_mk64("DFMA", &[], [u(r2), u(e3), u(r2)]);
        let e4 = self.a_mk64("DFMA", &[], [u(m).negated(), u(r3), dimm(ONE)]);
        let q = self.a_mk64("DFMA", &[mode.sass()], [u(y), u(e4), u(r3)]);
        // E = scale + exp(q) − exp(a) (0x350–0x390); a normal result gets q's mantissa with
        // the exponent E + 1023 (0x3a0–0x3d0).
        let (ql, qh) = (wd(q, 0), wd(q, 1));
        let eq = self.d_exponent(qh);
        let big_e = self.a_mk("IADD3", &[], [u(sc), u(eq), u(ea).negated()]);
        let t2 = self.a_mk("IADD3", &[], [u(big_e), im(0x3fe), rz()]);
        let outside = self.a_mkp("ISETP", &["GT", "U32", "AND"], vec![u(t2), im(0x7fd), pt()]);
        let n = self.a_mk("IADD3", &[], [u(big_e), im(0x3ff), u(eq).negated()]);
        let nh = self.a_mk("IMAD", &[], [u(n), im(0x10_0000), u(qh)]);
        let v = self.f_pair(u(ql), u(nh));
        self.f_set(res, v);
        self.f_br_if(outside, true, join, out);
        let _ = out;
        let v = self.drcp_out(mode, big_e, q, y, e4, r3);
        self.f_set(res, v);
        self.f_start(join, true);
        self.f_get(res)
    }

    /// The result when its exponent `e` is not a normal one (ptxas 0x3e0–0x5f0 for `.rm`/`.rp`,
    /// 0x3e0–0x490 for `.rz`), without branches: ptxas branches between the three cases, here
    /// each is computed and one selected (the same values; nothing here has side effects).
    ///
    /// * `e > 1023`: overflow — the largest finite value or infinity, as the rounding and the
    ///   sign say (`.rz`: `0x7fefffff_ffffffff`; `.rm`: −inf or +max; `.rp`: −max or +inf);
    /// * `e < −1076` (below −0x434): zero, or for `.rm` of a negative and `.rp` of a positive
    ///   result the smallest subnormal;
    /// * otherwise a subnormal: the mantissa of `DFMA.RZ(y, e4, r3)` (for `.rz`, `q` itself)
    ///   with its implicit bit, shifted right by `−e − 1022`; for `.rm`/`.rp` one unit is added
    ///   to the magnitude of a negative/positive result when the value was inexact — bits
    ///   shifted out, or `q` differs from the DFMA in the opposite direction.
    ///
    /// The sign is q's.
    fn drcp_out(&mut self, mode: Directed, e: Reg, q: Reg, y: Reg, e4: Reg, r3: Reg) -> Reg {
        let qh = wd(q, 1);
        let big = self.a_mkp("ISETP", &["GT", "AND"], vec![u(e), im(0x3ff), pt()]);
        let ok = self.a_mkp("ISETP", &["GE", "AND"], vec![u(e), im(-0x434), pt()]);
        let sign = self.a_lop(u(qh), im(0x8000_0000), 0xc0);
        // z: q truncated (for .rz, q).
        let z = if mode == Directed::Rz {
            q
        } else {
            self.a_mk64("DFMA", &["RZ"], [u(y), u(e4), u(r3)])
        };
        let (zl, zh) = (wd(z, 0), wd(z, 1));
        let mant = self.a_lop(u(zh), im(0xf_ffff), 0xc0);
        let mant = self.a_lop(u(mant), im(0x10_0000), 0xfc);
        let sh = self.a_mk("IADD3", &[], [u(e).negated(), im(-0x3fe), rz()]);
        let sl = self.a_mk("SHF", &["R", "S64"], [u(zl), u(sh), u(mant)]);
        let shh = self.a_mk("SHF", &["R", "S32", "HI"], [rz(), u(sh), u(mant)]);
        let (sub_l, sub_h, tiny_l, tiny_h, big_l, big_h);
        if mode == Directed::Rz {
            // 0x3e0–0x480: overflow to the largest finite value, zero below the subnormals.
            (sub_l, sub_h) = (sl, shh);
            let zero = self.a_mk("MOV", &[], [im(0)]);
            (tiny_l, tiny_h) = (zero, zero);
            big_l = self.a_mk("MOV", &[], [im(0xffff_ffff)]);
            big_h = self.a_mk("MOV", &[], [im(0x7fef_ffff)]);
        } else {
            let neg = self.a_mkp("ISETP", &["NE", "AND"], vec![u(sign), rz(), pt()]);
            // Whether the rounding moves a result of this sign away from zero (0x460: `.rm`
            // negative, `.rp` positive).
            let away = if mode == Directed::Rm {
                self.a_mk("SEL", &[], [rz(), im(1), u(neg).inverted()])
            } else {
                self.a_mk("SEL", &[], [rz(), im(1), u(neg)])
            };
            // Overflow (0x3e0–0x440): .rm {0xffffffff, 0x7fefffff} or −inf; .rp +inf or
            // {0xffffffff, 0xffefffff}.
            if mode == Directed::Rm {
                big_l = self.a_mk("SEL", &[], [rz(), im(0xffff_ffff), u(neg)]);
                let ninf = self.a_mk("MOV", &[], [im(0xfff0_0000)]);
                big_h = self.a_mk("SEL", &[], [u(ninf), im(0x7fef_ffff), u(neg)]);
            } else {
                big_l = self.a_mk("SEL", &[], [rz(), im(0xffff_ffff), u(neg).inverted()]);
                let nmax = self.a_mk("MOV", &[], [im(0xffef_ffff)]);
                big_h = self.a_mk("SEL", &[], [u(nmax), im(0x7ff0_0000), u(neg)]);
            }
            // Below the subnormals (0x450–0x490): {away, sign}.
            (tiny_l, tiny_h) = (away, sign);
            // Inexact (0x4a0–0x530): bits shifted out ({mant, z.lo} << (e + 0x43e) ≠ 0), or
            // q ≠ the DFMA rounded the other way.
            let other = if mode == Directed::Rm { "RP" } else { "RM" };
            let o = self.a_mk64("DFMA", &[other], [u(y), u(e4), u(r3)]);
            let s2 = self.a_mk("IADD3", &[], [u(e), im(0x43e), rz()]);
            let l = self.a_mk("SHF", &["L", "U32"], [u(zl), u(s2), rz()]);
            let h = self.a_mk("SHF", &["L", "U64", "HI"], [u(zl), u(s2), u(mant)]);
            let p_lo = self.a_mkp("ISETP", &["NE", "U32", "AND"], vec![u(l), rz(), pt()]);
            let p_hi = self.a_mkp(
                "ISETP",
                &["NE", "AND", "EX"],
                vec![u(h), rz(), pt(), u(p_lo)],
            );
            let inexact = self.a_mkp("DSETP", &["NE", "OR"], vec![u(q), u(o), u(p_hi)]);
            let bit = self.a_mk("SEL", &[], [rz(), im(1), u(inexact).inverted()]);
            let bump = self.a_lop(u(away), u(bit), 0xc0);
            // The shifted mantissa plus the bump (0x540–0x5f0).
            let carry = self.a_tmpp();
            let il = self.a_tmp();
            self.a_put("IADD3", &[], vec![df(il), df(carry), u(sl), im(1), rz()]);
            let ih = self.a_mk("IADD3", &["X"], [u(shh), rz(), rz(), u(carry), npt()]);
            let keep = self.a_mkp("ISETP", &["EQ", "AND"], vec![u(bump), rz(), pt()]);
            sub_l = self.a_mk("SEL", &[], [u(sl), u(il), u(keep)]);
            sub_h = self.a_mk("SEL", &[], [u(shh), u(ih), u(keep)]);
        }
        // Select the case, then q's sign (0x490: `LOP3.LUT R7, R7, 0x80000000, R5, 0xf8`).
        let cl = self.a_mk("SEL", &[], [u(sub_l), u(tiny_l), u(ok)]);
        let ch = self.a_mk("SEL", &[], [u(sub_h), u(tiny_h), u(ok)]);
        let rl = self.a_mk("SEL", &[], [u(big_l), u(cl), u(big)]);
        let rh = self.a_mk("SEL", &[], [u(big_h), u(ch), u(big)]);
        let sh = self.a_mk(
            "LOP3",
            &["LUT"],
            [u(rh), im(0x8000_0000), u(qh), im(0xf8), npt()],
        );
        self.f_pair(u(rl), u(sh))
    }
}
