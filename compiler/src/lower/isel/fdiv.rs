//! IEEE-rounded f32 division and square root (`div.rn.f32`, `sqrt.rn.f32`, with and without
//! `.ftz`), as ptxas lowers them: a fast path of MUFU plus Newton/FMA steps, and a slow path for
//! the operands the fast path cannot round correctly. As ptxas does, the slow path of `div.rn`
//! and `sqrt.rn` is a subroutine of the kernel (`lower/slow_path.rs`): the fast path branches
//! over a `CALL.REL.NOINC` to it, and the subroutine's body is the same instruction selected in
//! a function with the slow path's name, which emits the slow part only (`fdiv_rn_slow`,
//! `fsqrt_rn_slow`). The same holds for `rcp.rn.f64` (`drcp_rn_slow`) and `rsqrt.approx.f64`
//! (`drsqrt_approx_slow`).
//!
//! Values that merge where the paths join are SSA variables of their own (`%fdiv.*`), so the
//! SSA builder places the PHIs.

use super::arith::{df, fimm, im, npt, only, pt, ptd, rz, rzd, u};
use super::float::AbsOp;
use super::{Cx, Val};
use crate::frontend::ast;
use crate::frontend::types::Ty;
use crate::lower::ssa::{Var, VarInfo};
use crate::mir::*;

/// 2^64 (printed 1.84467440737095516160e+19).
const TWO_64: u32 = 0x5f80_0000;
/// 2^-32 (printed 2.3283064365386962891e-10).
const TWO_M32: u32 = 0x2f80_0000;
const INF: u32 = 0x7f80_0000;
/// The canonical NaN.
const QNAN: i64 = 0x7fff_ffff;

impl Cx<'_> {
    /// A fresh mutable local (an SSA variable) of one 32-bit word.
    pub(super) fn f_var(&mut self, name: &str) -> Var {
        self.ssa.new_var(VarInfo {
            class: RegClass::Gpr,
            words: 1,
            name: format!("%fdiv.{name}").into(),
        })
    }

    pub(super) fn f_set(&mut self, v: Var, r: Reg) {
        let vreg = r.vreg().expect("virtual");
        self.ssa.write(v, self.cur, vreg);
    }

    pub(super) fn f_get(&mut self, v: Var) -> Reg {
        self.read_var(v)
    }

    /// Ends the current block with `@[!]p BRA target`; continues in `next`.
    pub(super) fn f_br_if(&mut self, p: Reg, neg: bool, target: BlockId, next: BlockId) {
        let from = self.cur;
        self.emit_unguarded(
            Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(target))]).guarded(p, neg),
        );
        self.f.block_mut(from).fallthrough = Some(next);
        self.add_edge(from, target);
        self.add_edge(from, next);
        self.switch_to(next, true);
    }

    /// Ends the current block with `BRA target`.
    pub(super) fn f_br(&mut self, target: BlockId) {
        let from = self.cur;
        self.emit_unguarded(Inst::new(
            "BRA",
            &[],
            vec![Operand::new(OpKind::Block(target))],
        ));
        self.f.block_mut(from).fallthrough = None;
        self.add_edge(from, target);
    }

    /// Starts block `b`, which the current block falls into when `fall`.
    pub(super) fn f_start(&mut self, b: BlockId, fall: bool) {
        if fall {
            let from = self.cur;
            self.f.block_mut(from).fallthrough = Some(b);
            self.add_edge(from, b);
        }
        self.switch_to(b, true);
    }

    /// `n` fresh blocks, in layout order.
    pub(super) fn f_blocks<const N: usize>(&mut self) -> [BlockId; N] {
        std::array::from_fn(|_| BlockId(0)).map(|_: BlockId| self.fresh_block())
    }

    /// `div.rn.f32` (the IEEE division; `.ftz` flushes subnormal operands and results).
    pub(super) fn ieee_div(&mut self, ins: &ast::Instruction, t: Ty, flags: &[&str]) -> bool {
        if t.name != "f32" || !flags.contains(&".rn") || !only(flags, &[".rn", ".ftz"]) {
            return false;
        }
        let ftz = flags.contains(&".ftz");
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.a_src(a, t), self.a_src(b, t)) else {
            return true;
        };
        let ra = self.a_reg(va);
        let rb = self.a_reg(vb);
        let res = self.fdiv_rn(ra, rb, ftz);
        let Some(dst) = self.dst(d) else { return false };
        self.a_finish(dst, res);
        let _ = Val::Imm(0);
        true
    }

    /// a / b correctly rounded. Fast path (ptxas): `r = rcp(b)` refined by one Newton step,
    /// `q = a·r`, one residual correction; `FCHK` flags the operands for which that may be
    /// wrong (extreme exponents, zeros, infinities, NaNs, subnormals), which take the slow
    /// path: special values, then the division of the mantissas scaled to [1, 2) with the
    /// exponent put back at the end, rounding by hand into the subnormal range.
    fn fdiv_rn(&mut self, a: Reg, b: Reg, ftz: bool) -> Reg {
        if self.is_slow_path_body() {
            return self.fdiv_rn_slow(a, b, ftz);
        }
        let res = self.f_var("q");
        let r0 = self.a_mk("MUFU", &["RCP"], [u(b)]);
        let chk = self.a_tmpp();
        self.a_put("FCHK", &[], vec![df(chk), u(a), u(b)]);
        let e = self.a_mk("FFMA", &[], [u(b).negated(), u(r0), fimm(0x3f80_0000)]);
        let r = self.a_mk("FFMA", &[], [u(r0), u(e), u(r0)]);
        let q = self.a_mk("FFMA", &[], [u(a), u(r), rz()]);
        let e2 = self.a_mk("FFMA", &[], [u(b).negated(), u(q), u(a)]);
        let q2 = self.a_mk("FFMA", &[], [u(r), u(e2), u(q)]);
        self.f_set(res, q2);
        // The slow path: a call to ptxas's subroutine on the fall-through.
        let [slow, join] = self.f_blocks::<2>();
        self.f_br_if(chk, true, join, slow);
        let name = if ftz {
            "__cuda_sm3x_div_rn_ftz_f32_slowpath"
        } else {
            "__cuda_sm3x_div_rn_noftz_f32_slowpath"
        };
        let v = self.call_slow_path(name, &[a, b], 1);
        self.f_set(res, v);
        self.f_start(join, true);
        self.f_get(res)
    }

    /// The slow path of [`Cx::fdiv_rn`], the body of ptxas's subroutine
    /// (`__cuda_sm3x_div_rn_{ftz,noftz}_f32_slowpath`): special values, then the division of
    /// the mantissas scaled to [1, 2) with the exponent put back at the end, rounding by hand
    /// into the subnormal range.
    fn fdiv_rn_slow(&mut self, a: Reg, b: Reg, ftz: bool) -> Reg {
        let res = self.f_var("q");
        // Layout: the slow path's blocks, then the join.
        let [
            special,
            nan_in,
            both_zero_chk,
            chk_inf,
            chk_zero,
            chk_big,
            prescale,
            normal,
            out_range,
            not_over,
            not_pos,
            subn,
            overflow,
            scale,
            inf_res,
            zero_res,
            nan_res,
            nan_sum,
            join,
        ] = self.f_blocks::<19>();
        // --- exponents
        let eb = {
            let s = self.a_mk("SHF", &["R", "U32", "HI"], [rz(), im(23), u(b)]);
            self.a_lop(u(s), im(0xff), 0xc0)
        };
        let ea = {
            let s = self.a_mk("SHF", &["R", "U32", "HI"], [rz(), im(23), u(a)]);
            self.a_lop(u(s), im(0xff), 0xc0)
        };
        let eb1 = self.a_mk("IADD3", &[], [u(eb), im(-1), rz()]);
        let ea1 = self.a_mk("IADD3", &[], [u(ea), im(-1), rz()]);
        let p = self.a_mkp("ISETP", &["GT", "U32", "AND"], vec![u(eb1), im(0xfd), pt()]);
        let p = self.a_mkp("ISETP", &["GT", "U32", "OR"], vec![u(ea1), im(0xfd), u(p)]);
        // Exponent adjustment of the scaled operands, and the operands themselves.
        let adj = self.f_var("adj");
        let va_ = self.f_var("a");
        let vb_ = self.f_var("b");
        let zero = self.a_mk("MOV", &[], [im(0)]);
        self.f_set(adj, zero);
        self.f_set(va_, a);
        self.f_set(vb_, b);
        self.f_br_if(p, true, normal, special);
        // --- special: NaN operands
        let _ = special;
        let an = self.a_mkp(
            "FSETP",
            &["GTU", "FTZ", "AND"],
            vec![u(a).abs_(), fimm(INF), pt()],
        );
        let an = self.a_mkp(
            "FSETP",
            &["GTU", "FTZ", "OR"],
            vec![u(b).abs_(), fimm(INF), u(an)],
        );
        self.f_br_if(an, false, nan_sum, nan_in);
        let _ = nan_in;
        // Both zero (after flushing when ftz): NaN.
        let nz = if ftz {
            let az = self.a_mkp("FSETP", &["NEU", "FTZ", "AND"], vec![u(a), rz(), pt()]);
            self.a_mkp("FSETP", &["NEU", "FTZ", "OR"], vec![u(b), rz(), u(az)])
        } else {
            let p = self.a_tmpp();
            self.a_put(
                "LOP3",
                &["LUT"],
                vec![df(p), rzd(), u(b), im(0x7fff_ffff), u(a), im(0xc8), npt()],
            );
            p
        };
        self.f_br_if(nz, true, nan_res, both_zero_chk);
        let _ = both_zero_chk;
        // Both infinite: NaN.
        let ainf = self.a_mkp(
            "FSETP",
            &["EQ", "FTZ", "AND"],
            vec![u(a).abs_(), fimm(INF), pt()],
        );
        let both_inf = self.a_mkp(
            "FSETP",
            &["EQ", "FTZ", "AND"],
            vec![u(b).abs_(), fimm(INF), u(ainf)],
        );
        self.f_br_if(both_inf, false, nan_res, chk_inf);
        let _ = chk_inf;
        // b infinite or a zero: a signed zero.
        let binf = self.a_mkp(
            "FSETP",
            &["EQ", "FTZ", "AND"],
            vec![u(b).abs_(), fimm(INF), pt()],
        );
        let az = if ftz {
            self.a_mkp("FSETP", &["EQ", "FTZ", "OR"], vec![u(a), rz(), u(binf)])
        } else {
            let p = self.a_tmpp();
            self.a_put(
                "LOP3",
                &["LUT"],
                vec![df(p), rzd(), u(a), im(0x7fff_ffff), rz(), im(0xc0), npt()],
            );
            self.a_mkp(
                "PLOP3",
                &["LUT"],
                vec![u(p), u(binf), pt(), im(0x8a), im(0)],
            )
        };
        self.f_br_if(az, false, zero_res, chk_zero);
        let _ = chk_zero;
        // a infinite or b zero: a signed infinity.
        let bz = if ftz {
            self.a_mkp("FSETP", &["EQ", "FTZ", "OR"], vec![u(b), rz(), u(ainf)])
        } else {
            let p = self.a_tmpp();
            self.a_put(
                "LOP3",
                &["LUT"],
                vec![df(p), rzd(), u(b), im(0x7fff_ffff), rz(), im(0xc0), npt()],
            );
            self.a_mkp(
                "PLOP3",
                &["LUT"],
                vec![u(p), u(ainf), pt(), im(0x8a), im(0)],
            )
        };
        self.f_br_if(bz, false, inf_res, chk_big);
        let _ = chk_big;
        // Finite non-zero operands with an extreme exponent. Subnormals (without ftz) are
        // scaled by 2^64 and the exponent adjusted; with ftz they are zeros, handled above.
        if !ftz {
            let an = self.a_mkp("ISETP", &["GE", "AND"], vec![u(ea1), rz(), pt()]);
            let bn = self.a_mkp("ISETP", &["GE", "AND"], vec![u(eb1), rz(), pt()]);
            let a2 = self.a_mk_if(an, true, a, "FFMA", &[], vec![u(a), fimm(TWO_64), rz()]);
            let adj1 = self.a_mk_if(an, true, zero, "MOV", &[], vec![im(-64)]);
            let b2 = self.a_mk_if(bn, true, b, "FFMA", &[], vec![u(b), fimm(TWO_64), rz()]);
            let adj2 = self.a_mk_if(bn, true, adj1, "IADD3", &[], vec![u(adj1), im(64), rz()]);
            self.f_set(va_, a2);
            self.f_set(vb_, b2);
            self.f_set(adj, adj2);
        }
        self.f_start(prescale, true);
        self.f_start(normal, true);
        // --- normal: the mantissas in [1, 2).
        let a1 = self.f_get(va_);
        let b1 = self.f_get(vb_);
        let adj_v = self.f_get(adj);
        let sb = self.a_mk("LEA", &[], [u(eb), im(0xc080_0000), im(23)]);
        let ea_u = self.a_mk("IADD3", &[], [u(ea), im(-127), rz()]);
        let bm = self.a_mk("IADD3", &[], [u(b1), u(sb).negated(), rz()]);
        let am = self.a_mk("IMAD", &[], [u(ea_u), im(-0x80_0000), u(a1)]);
        let r = self.a_mk("MUFU", &["RCP"], [u(bm)]);
        let nb = self.a_mk("FADD", &["FTZ"], [u(bm).negated(), rz().negated()]);
        let e = self.a_mk("FFMA", &[], [u(r), u(nb), fimm(0x3f80_0000)]);
        let r2 = self.a_mk("FFMA", &[], [u(r), u(e), u(r)]);
        let q = self.a_mk("FFMA", &[], [u(am), u(r2), rz()]);
        let e2 = self.a_mk("FFMA", &[], [u(nb), u(q), u(am)]);
        let q2 = self.a_mk("FFMA", &[], [u(r2), u(e2), u(q)]);
        let ex = self.a_mk("IADD3", &[], [u(ea_u), im(0x7f), u(eb).negated()]);
        let e3 = self.a_mk("FFMA", &[], [u(nb), u(q2), u(am)]);
        let ex2 = self.a_mk("IADD3", &[], [u(ex), u(adj_v), rz()]);
        let q3 = if ftz {
            self.a_mk("FFMA", &["FTZ"], [u(r2), u(e3), u(q2)])
        } else {
            self.a_mk("FFMA", &[], [u(r2), u(e3), u(q2)])
        };
        // The quotient's biased exponent with the operands' exponents put back.
        let eq = {
            let s = self.a_mk("SHF", &["R", "U32", "HI"], [rz(), im(23), u(q3)]);
            self.a_lop(u(s), im(0xff), 0xc0)
        };
        let ef = self.a_mk("IADD3", &[], [u(eq), u(ex2), rz()]);
        let ef1 = self.a_mk("IADD3", &[], [u(ef), im(-1), rz()]);
        let outr = self.a_mkp("ISETP", &["GE", "U32", "AND"], vec![u(ef1), im(0xfe), pt()]);
        self.f_br_if(outr, true, scale, out_range);
        let _ = out_range;
        let over = self.a_mkp("ISETP", &["GT", "AND"], vec![u(ef), im(0xfe), pt()]);
        self.f_br_if(over, false, overflow, not_over);
        let _ = not_over;
        let sign = self.a_lop(u(q3), im(0x8000_0000), 0xc0);
        if ftz {
            // A subnormal or underflowing result flushes to a signed zero.
            self.f_set(res, sign);
            self.f_br(join);
            self.f_start(not_pos, false);
            self.f_br(join);
            self.f_start(subn, false);
            self.f_br(join);
        } else {
            // Exponent ≥ 1 cannot reach here; below −24 the result rounds to a signed zero.
            self.f_set(res, sign);
            let tiny = self.a_mkp("ISETP", &["LT", "AND"], vec![u(ef), im(-24), pt()]);
            self.f_br_if(tiny, false, join, not_pos);
            let _ = not_pos;
            // Round the shifted mantissa to nearest even by hand: RZ/RM/RP quotients give the
            // truncated mantissa and stickiness.
            let qz = self.a_mk("FFMA", &["RZ"], [u(r2), u(e3), u(q2)]);
            let sh = self.a_mk("IADD3", &[], [u(ef), im(32), rz()]);
            let qm = self.a_mk("FFMA", &["RM"], [u(r2), u(e3), u(q2)]);
            let nzx = self.a_mkp("ISETP", &["NE", "AND"], vec![u(ef), rz(), pt()]);
            let mz = self.a_lop(u(qz), im(0x7f_ffff), 0xc0);
            let qp = self.a_mk("FFMA", &["RP"], [u(r2), u(e3), u(q2)]);
            let nef = self.a_mk("IADD3", &[], [u(ef).negated(), rz(), rz()]);
            let m = self.a_lop(u(mz), im(0x80_0000), 0xfc);
            let inexact = self.a_mkp("FSETP", &["NEU", "FTZ", "AND"], vec![u(qp), u(qm), pt()]);
            let lost = self.a_mk("SHF", &["L", "U32"], [u(m), u(sh), rz()]);
            let amt = self.a_sel(u(nef), rz(), u(nzx));
            let lost_p = self.a_mkp("ISETP", &["NE", "AND"], vec![u(lost), rz(), u(nzx)]);
            let shifted = self.a_mk("SHF", &["R", "U32", "HI"], [rz(), u(amt), u(m)]);
            let sticky = self.a_mkp(
                "PLOP3",
                &["LUT"],
                vec![u(inexact), u(lost_p), pt(), im(0xa8), im(0)],
            );
            let half = self.a_mk("SHF", &["R", "U32", "HI"], [rz(), im(1), u(shifted)]);
            let st = self.a_sel(rz(), im(1), u(sticky).inverted());
            let x = self.a_mk("LOP3", &["LUT"], [u(st), im(1), u(half), im(0xf8), npt()]);
            let x = self.a_lop(u(x), u(shifted), 0xc0);
            let mant = self.a_mk("IADD3", &[], [u(half), u(x), rz()]);
            let v = self.a_lop(u(mant), u(sign), 0xfc);
            self.f_set(res, v);
            self.f_br(join);
            self.f_start(subn, false);
            self.f_br(join);
        }
        // overflow: a signed infinity.
        self.f_start(overflow, false);
        let s = self.a_lop(u(q3), im(0x8000_0000), 0xc0);
        let v = self.a_lop(u(s), im(i64::from(INF)), 0xfc);
        self.f_set(res, v);
        self.f_br(join);
        // scale: the exponent added back.
        self.f_start(scale, false);
        let v = self.a_mk("IMAD", &[], [u(ex2), im(0x80_0000), u(q3)]);
        self.f_set(res, v);
        self.f_br(join);
        // inf_res: ±inf with the sign of a^b.
        self.f_start(inf_res, false);
        let s = self.a_mk(
            "LOP3",
            &["LUT"],
            [u(b), im(0x8000_0000), u(a), im(0x48), npt()],
        );
        let v = self.a_lop(u(s), im(i64::from(INF)), 0xfc);
        self.f_set(res, v);
        self.f_br(join);
        // zero_res: ±0 with the sign of a^b.
        self.f_start(zero_res, false);
        let v = self.a_mk(
            "LOP3",
            &["LUT"],
            [u(b), im(0x8000_0000), u(a), im(0x48), npt()],
        );
        self.f_set(res, v);
        self.f_br(join);
        // nan_res: 0/0, inf/inf.
        self.f_start(nan_res, false);
        let v = self.a_mk("MOV", &[], [im(QNAN)]);
        self.f_set(res, v);
        self.f_br(join);
        // nan_sum: a NaN operand propagates (a + b quiets it).
        self.f_start(nan_sum, false);
        let v = self.a_mk("FADD", &["FTZ"], [u(a), u(b)]);
        self.f_set(res, v);
        self.f_start(join, true);
        let _ = ptd;
        self.f_get(res)
    }

    /// `sqrt.rn.f32`, `rcp.rn.f64` and (`drcp.rs`) `rcp.{rz,rm,rp}.f64` here; the other IEEE
    /// reciprocals and roots are not lowered yet.
    pub(super) fn ieee_rcp_sqrt(
        &mut self,
        ins: &ast::Instruction,
        opcode: &str,
        t: Ty,
        flags: &[&str],
    ) -> bool {
        if opcode == "rsqrt" && t.name == "f64" && flags == [".approx"] {
            let [d, a] = &ins.operands[..] else {
                return false;
            };
            let Some(va) = self.a_src(a, t) else {
                return true;
            };
            let ra = self.a_reg64(va);
            let res = self.drsqrt_approx(ra);
            let Some(dst) = self.dst(d) else { return false };
            self.a_finish(dst, res);
            return true;
        }
        if opcode == "rcp" && t.name == "f64" && flags == [".rn"] {
            let [d, a] = &ins.operands[..] else {
                return false;
            };
            let Some(va) = self.a_src(a, t) else {
                return true;
            };
            let ra = self.a_reg64(va);
            let res = self.drcp_rn(ra);
            let Some(dst) = self.dst(d) else { return false };
            self.a_finish(dst, res);
            return true;
        }
        if opcode == "rcp" && t.name == "f64" && flags.len() == 1 {
            let Some(mode) = super::drcp::Directed::from_flag(flags[0]) else {
                return false;
            };
            let [d, a] = &ins.operands[..] else {
                return false;
            };
            let Some(va) = self.a_src(a, t) else {
                return true;
            };
            let ra = self.a_reg64(va);
            let res = self.drcp_directed(ra, mode);
            let Some(dst) = self.dst(d) else { return false };
            self.a_finish(dst, res);
            return true;
        }
        if opcode != "sqrt"
            || t.name != "f32"
            || !flags.contains(&".rn")
            || !only(flags, &[".rn", ".ftz"])
        {
            return false;
        }
        let ftz = flags.contains(&".ftz");
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        let Some(va) = self.a_src(a, t) else {
            return true;
        };
        let ra = self.a_reg(va);
        let res = self.fsqrt_rn(ra, ftz);
        let Some(dst) = self.dst(d) else { return false };
        self.a_finish(dst, res);
        true
    }

    /// √a correctly rounded (ptxas): for normal a ≥ 2^-101 (`a − 0x0d000000 ≤ 0x727fffff`)
    /// `s = a·rsq(a)`, `h = rsq(a)/2`, `s + (a − s²)·h`; otherwise zeros, negatives (NaN), NaNs,
    /// infinities, and tiny or subnormal values scaled by 2^64 (the root by 2^-32).
    fn fsqrt_rn(&mut self, a: Reg, ftz: bool) -> Reg {
        if self.is_slow_path_body() {
            return self.fsqrt_rn_slow(a, ftz);
        }
        let res = self.f_var("sqrt");
        let t = self.a_mk("IADD3", &[], [u(a), im(-0x0d00_0000), rz()]);
        let r = self.a_mk("MUFU", &["RSQ"], [u(a)]);
        let slow_p = self.a_mkp(
            "ISETP",
            &["GT", "U32", "AND"],
            vec![u(t), im(0x727f_ffff), pt()],
        );
        // ptxas's layout: the call to the slow path on the fall-through, then the fast path.
        let [slow, fast, join] = self.f_blocks::<3>();
        self.f_br_if(slow_p, true, fast, slow);
        let name = if ftz {
            "__cuda_sm20_sqrt_rn_ftz_f32_slowpath"
        } else {
            "__cuda_sm20_sqrt_rn_f32_slowpath"
        };
        let v = self.call_slow_path(name, &[a], 1);
        self.f_set(res, v);
        self.f_br(join);
        self.f_start(fast, false);
        let s = self.a_mk("FMUL", &["FTZ"], [u(a), u(r)]);
        let h = self.a_mk("FMUL", &["FTZ"], [u(r), fimm(0x3f00_0000)]);
        let e = self.a_mk("FFMA", &[], [u(s).negated(), u(s), u(a)]);
        let v = self.a_mk("FFMA", &[], [u(e), u(h), u(s)]);
        self.f_set(res, v);
        self.f_start(join, true);
        self.f_get(res)
    }

    /// The slow path of [`Cx::fsqrt_rn`], the body of ptxas's subroutine
    /// (`__cuda_sm20_sqrt_rn_{,ftz_}f32_slowpath`): zeros, negatives (NaN), NaNs, infinities,
    /// and tiny or subnormal values scaled by 2^64 (the root by 2^-32).
    fn fsqrt_rn_slow(&mut self, a: Reg, ftz: bool) -> Reg {
        let res = self.f_var("sqrt");
        let [neg_chk, nan_chk, inf_chk, tiny, join] = self.f_blocks::<5>();
        // zero: ±0 (with ftz, subnormals flush to ±0).
        let nz = if ftz {
            self.a_mkp("FSETP", &["NEU", "FTZ", "AND"], vec![u(a), rz(), pt()])
        } else {
            let p = self.a_tmpp();
            self.a_put(
                "LOP3",
                &["LUT"],
                vec![df(p), rzd(), u(a), im(0x7fff_ffff), rz(), im(0xc0), npt()],
            );
            p
        };
        let z = if ftz {
            self.a_mk("FMUL", &["FTZ"], [u(a), fimm(0x3f80_0000)])
        } else {
            a
        };
        self.f_set(res, z);
        self.f_br_if(nz, true, join, neg_chk);
        // negative: NaN.
        let _ = neg_chk;
        let nonneg = self.a_mkp("FSETP", &["GEU", "FTZ", "AND"], vec![u(a), rz(), pt()]);
        let q = self.a_mk("MOV", &[], [im(QNAN)]);
        self.f_set(res, q);
        self.f_br_if(nonneg, true, join, nan_chk);
        // NaN: quieted.
        let _ = nan_chk;
        let isnan = self.a_mkp(
            "FSETP",
            &["GTU", "FTZ", "AND"],
            vec![u(a).abs_(), fimm(INF), pt()],
        );
        let qn = self.a_mk("FADD", &["FTZ"], [u(a), fimm(0x3f80_0000)]);
        self.f_set(res, qn);
        self.f_br_if(isnan, false, join, inf_chk);
        // +inf: itself.
        let _ = inf_chk;
        let notinf = self.a_mkp(
            "FSETP",
            &["NEU", "FTZ", "AND"],
            vec![u(a).abs_(), fimm(INF), pt()],
        );
        self.f_set(res, a);
        self.f_br_if(notinf, true, join, tiny);
        // tiny: scale by 2^64, root, scale by 2^-32.
        let _ = tiny;
        let x = if ftz {
            self.a_mk("FMUL", &["FTZ"], [u(a), fimm(TWO_64)])
        } else {
            self.a_mk("FFMA", &[], [u(a), fimm(TWO_64), rz()])
        };
        let r = self.a_mk("MUFU", &["RSQ"], [u(x)]);
        let s = self.a_mk("FMUL", &["FTZ"], [u(x), u(r)]);
        let h = self.a_mk("FMUL", &["FTZ"], [u(r), fimm(0x3f00_0000)]);
        let ns = self.a_mk("FADD", &["FTZ"], [u(s).negated(), rz().negated()]);
        let e = self.a_mk("FFMA", &[], [u(s), u(ns), u(x)]);
        let y = self.a_mk("FFMA", &[], [u(e), u(h), u(s)]);
        let v = self.a_mk("FMUL", &["FTZ"], [u(y), fimm(TWO_M32)]);
        self.f_set(res, v);
        self.f_start(join, true);
        self.f_get(res)
    }

    /// A fresh two-word local.
    pub(super) fn f_var64(&mut self, name: &str) -> Var {
        self.ssa.new_var(VarInfo {
            class: RegClass::Gpr,
            words: 2,
            name: format!("%fdiv.{name}").into(),
        })
    }

    /// A pair {lo, hi} as a fresh 64-bit temporary.
    pub(super) fn f_pair(&mut self, lo: Operand, hi: Operand) -> Reg {
        let t = self.a_tmp64();
        self.a_put("MOV", &[], vec![df(super::arith::wd(t, 0)), lo]);
        self.a_put("MOV", &[], vec![df(super::arith::wd(t, 1)), hi]);
        t
    }

    /// Two Newton steps for 1/a from the estimate r: `e = 1 − a·r; e = e + e²; r = r + r·e`,
    /// then `r = r + r·(1 − a·r)` (ptxas's DFMA sequence).
    fn f_newton64(&mut self, a: Reg, r: Reg) -> Reg {
        let one = Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x3ff0_0000));
        let e = self.a_mk64("DFMA", &[], [u(a).negated(), u(r), one.clone()]);
        let e = self.a_mk64("DFMA", &[], [u(e), u(e), u(e)]);
        let r1 = self.a_mk64("DFMA", &[], [u(r), u(e), u(r)]);
        let e2 = self.a_mk64("DFMA", &[], [u(a).negated(), u(r1), one]);
        self.a_mk64("DFMA", &[], [u(r1), u(e2), u(r1)])
    }

    /// 1/a correctly rounded (ptxas): `MUFU.RCP64H` on the high word (its low word some bits of
    /// a's high word), two Newton steps in DFMA; operands whose exponent is near the limits
    /// (tested on those bits as an f32) take the slow path: NaN (quieted), zero ↔ infinity,
    /// a huge a (scaled by 2^-1022, the reciprocal rescaled and refined once more) and a tiny
    /// or subnormal a (scaled by 2^106).
    fn drcp_rn(&mut self, a: Reg) -> Reg {
        use super::arith::wd;
        if self.is_slow_path_body() {
            return self.drcp_rn_slow(a);
        }
        let res = self.f_var64("rcp");
        let hi = wd(a, 1);
        let rh = self.a_mk("MUFU", &["RCP64H"], [u(hi)]);
        let rl = self.a_mk("IADD3", &[], [u(hi), im(0x30_0402), rz()]);
        let ok = self.a_mkp(
            "FSETP",
            &["GEU", "AND"],
            vec![u(rl).abs_(), fimm(0x0040_0402), pt()],
        );
        let r = self.f_pair(u(rl), u(rh));
        let x = self.f_newton64(a, r);
        self.f_set(res, x);
        // The slow path: a call to ptxas's subroutine on the fall-through.
        let [slow, join] = self.f_blocks::<2>();
        self.f_br_if(ok, false, join, slow);
        let v = self.call_slow_path("__cuda_sm20_dblrcp_rn_slowpath_v3", &[a], 2);
        self.f_set(res, v);
        self.f_start(join, true);
        self.f_get(res)
    }

    /// The slow path of [`Cx::drcp_rn`], the body of ptxas's subroutine
    /// (`__cuda_sm20_dblrcp_rn_slowpath_v3`).
    fn drcp_rn_slow(&mut self, a: Reg) -> Reg {
        use super::arith::wd;
        let res = self.f_var64("rcp");
        let (lo, hi) = (wd(a, 0), wd(a, 1));
        let [not_nan, not_edge, huge, tiny, quiet, edge, join] = self.f_blocks::<7>();
        let t = self.a_lop(u(hi), im(0x7fff_ffff), 0xc0);
        let seed = self.a_mk("IADD3", &[], [u(t), im(-0x10_0000), rz()]);
        let nan = self.a_mkp(
            "DSETP",
            &["GTU", "AND"],
            vec![
                u(a).abs_(),
                Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x7ff0_0000)),
                pt(),
            ],
        );
        self.f_br_if(nan, false, quiet, not_nan);
        let _ = not_nan;
        let t1 = self.a_mk("IADD3", &[], [u(t), im(-1), rz()]);
        let e = self.a_mkp(
            "ISETP",
            &["GE", "U32", "AND"],
            vec![u(t1), im(0x7fef_ffff), pt()],
        );
        self.f_br_if(e, false, edge, not_edge);
        let _ = not_edge;
        let big = self.a_mkp(
            "ISETP",
            &["GE", "U32", "AND"],
            vec![u(t), im(0x100_0001), pt()],
        );
        self.f_br_if(big, true, tiny, huge);
        // huge: a·2^-1022, two steps, rescale, one more step with a.
        let _ = huge;
        let sh = self.a_mk("IADD3", &[], [u(hi), im(-0x3fe0_0000), rz()]);
        let a2 = self.f_pair(u(lo), u(sh));
        let r2h = self.a_mk("MUFU", &["RCP64H"], [u(sh)]);
        let r2 = self.f_pair(u(seed), u(r2h));
        let x2 = self.f_newton64(a2, r2);
        let x3 = self.a_mk64(
            "DMUL",
            &[],
            [
                u(x2),
                Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x0010_0000)),
            ],
        );
        let one = Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x3ff0_0000));
        let e = self.a_mk64("DFMA", &[], [u(a).negated(), u(x3), one]);
        let e = self.a_mk64("DFMA", &[], [u(e), u(e), u(e)]);
        let v = self.a_mk64("DFMA", &[], [u(x3), u(e), u(x3)]);
        self.f_set(res, v);
        self.f_br(join);
        // tiny: a·2^106, two steps, ·2^106.
        self.f_start(tiny, false);
        let a3 = self.a_mk64(
            "DMUL",
            &[],
            [
                u(a),
                Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x4690_0000)),
            ],
        );
        let r3h = self.a_mk("MUFU", &["RCP64H"], [u(wd(a3, 1))]);
        let r3 = self.f_pair(u(seed), u(r3h));
        let x4 = self.f_newton64(a3, r3);
        let v = self.a_mk64(
            "DMUL",
            &[],
            [
                u(x4),
                Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x4690_0000)),
            ],
        );
        self.f_set(res, v);
        self.f_br(join);
        // quiet: a NaN with its quiet bit set.
        self.f_start(quiet, false);
        let qh = self.a_lop(u(hi), im(0x8_0000), 0xfc);
        let v = self.f_pair(u(lo), u(qh));
        self.f_set(res, v);
        self.f_br(join);
        // edge: zero → infinity, infinity → zero (signed): {0, hi ^ 0x7ff00000}.
        self.f_start(edge, false);
        let eh = self.a_lop(u(hi), im(0x7ff0_0000), 0x3c);
        let v = self.f_pair(im(0), u(eh));
        self.f_set(res, v);
        self.f_start(join, true);
        self.f_get(res)
    }

    /// One refinement of r ≈ 1/√a (ptxas): `e = 1 − a·r²`, `r + (r·e)·(3/8·e + 1/2)`.
    fn f_rsq_refine(&mut self, a: Reg, r: Reg) -> Reg {
        let f = |bits: u64| Operand::new(OpKind::Float(FloatFmt::F64Hi, bits));
        let c = self.f_pair(im(0), im(0x3fd8_0000));
        let t = self.a_mk64("DMUL", &[], [u(r), u(r)]);
        let e = self.a_mk64("DFMA", &[], [u(a), u(t).negated(), f(0x3ff0_0000)]);
        let p = self.a_mk64("DFMA", &[], [u(e), u(c), f(0x3fe0_0000)]);
        let v = self.a_mk64("DMUL", &[], [u(r), u(e)]);
        self.a_mk64("DFMA", &[], [u(p), u(v), u(r)])
    }

    /// `rsqrt.approx.f64` without `.ftz` (ptxas): `MUFU.RSQ64H` refined once; exponents 0 and
    /// 2047 take the slow path: ±0 → ±inf, NaN quieted (a + a), negative → NaN, +inf → +0, and
    /// subnormals scaled by 2^54 (the root by 2^27).
    fn drsqrt_approx(&mut self, a: Reg) -> Reg {
        use super::arith::wd;
        if self.is_slow_path_body() {
            return self.drsqrt_approx_slow(a);
        }
        let res = self.f_var64("rsqrt");
        let hi = wd(a, 1);
        let rh = self.a_mk("MUFU", &["RSQ64H"], [u(hi)]);
        let r = self.f_pair(im(0), u(rh));
        let x = self.a_mk("IADD3", &[], [u(hi), im(-0x10_0000), rz()]);
        let special = self.a_mkp(
            "ISETP",
            &["GE", "U32", "AND"],
            vec![u(x), im(0x7fe0_0000), pt()],
        );
        let v = self.f_rsq_refine(a, r);
        self.f_set(res, v);
        // The slow path: a call to ptxas's subroutine on the fall-through.
        let [slow, join] = self.f_blocks::<2>();
        self.f_br_if(special, true, join, slow);
        let v = self.call_slow_path("__cuda_sm20_drsqrt_f64_slowpath_v2", &[a], 2);
        self.f_set(res, v);
        self.f_start(join, true);
        self.f_get(res)
    }

    /// The slow path of [`Cx::drsqrt_approx`], the body of ptxas's subroutine
    /// (`__cuda_sm20_drsqrt_f64_slowpath_v2`).
    fn drsqrt_approx_slow(&mut self, a: Reg) -> Reg {
        use super::arith::wd;
        let res = self.f_var64("rsqrt");
        let hi = wd(a, 1);
        let [not_nan, not_neg, not_inf, sub, zero, join] = self.f_blocks::<6>();
        // zero → a signed infinity.
        let sign = self.a_lop(u(hi), im(0x8000_0000), 0xc0);
        let nz = self.a_mkp(
            "DSETP",
            &["NEU", "AND"],
            vec![u(a), super::arith::rz64(), pt()],
        );
        self.f_br_if(nz, true, zero, not_nan);
        let _ = not_nan;
        let nan = self.a_mkp(
            "DSETP",
            &["GTU", "AND"],
            vec![
                u(a).abs_(),
                Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x7ff0_0000)),
                pt(),
            ],
        );
        let q = self.a_mk64("DADD", &[], [u(a), u(a)]);
        self.f_set(res, q);
        self.f_br_if(nan, false, join, not_neg);
        let _ = not_neg;
        let neg = self.a_mkp("ISETP", &["NE", "AND"], vec![u(sign), rz(), pt()]);
        let n = self.f_pair(im(0), im(0xfff8_0000));
        self.f_set(res, n);
        self.f_br_if(neg, false, join, not_inf);
        let _ = not_inf;
        let inf = self.a_mkp(
            "DSETP",
            &["NEU", "AND"],
            vec![
                u(a).abs_(),
                Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x7ff0_0000)),
                pt(),
            ],
        );
        let z = self.f_pair(im(0), im(0));
        self.f_set(res, z);
        self.f_br_if(inf, true, join, sub);
        // sub: a·2^54, refine, ·2^27.
        let _ = sub;
        let a2 = self.a_mk64(
            "DMUL",
            &[],
            [
                u(a),
                Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x4350_0000)),
            ],
        );
        let r2h = self.a_mk("MUFU", &["RSQ64H"], [u(wd(a2, 1))]);
        let r2 = self.f_pair(im(0), u(r2h));
        let y = self.f_rsq_refine(a2, r2);
        let v = self.a_mk64(
            "DMUL",
            &[],
            [
                u(y),
                Operand::new(OpKind::Float(FloatFmt::F64Hi, 0x41a0_0000)),
            ],
        );
        self.f_set(res, v);
        self.f_br(join);
        // zero: ±inf.
        self.f_start(zero, false);
        let ih = self.a_lop(u(sign), im(0x7ff0_0000), 0xfc);
        let v = self.f_pair(im(0), u(ih));
        self.f_set(res, v);
        self.f_start(join, true);
        self.f_get(res)
    }
}
