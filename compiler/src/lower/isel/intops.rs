//! Integer recipes beyond add/mul: min/max/abs/neg, sad, mul24/mad24, bit counting and
//! searching (popc, clz, brev, bfind), bit fields (bfe, bfi, szext, bmsk), prmt and dp4a/dp2a.
//! Each follows ptxas's SASS for the same PTX (probed with the provisioned ptxas 13.1).

use super::arith::{df, im, npt, only, pt, ptd, rz, signed, u, wd};
use super::{Cx, Val};
use crate::frontend::ast;
use crate::frontend::types::{Kind, Ty};
use crate::mir::*;

impl Cx<'_> {
    /// `min`/`max`: `VIMNMX[.U32|.U16x2|.S16x2][.RELU] d, a, b, PT` (min) or `!PT` (max); 64-bit
    /// values compare with an `ISETP … .EX` pair and select word by word. Floats: `float.rs`.
    pub(super) fn minmax(
        &mut self,
        ins: &ast::Instruction,
        max: bool,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [t] = types else { return false };
        if t.is_float() {
            return self.float_minmax(ins, *t, max, flags);
        }
        if !t.is_integer_like() || !only(flags, &[".relu"]) {
            return false;
        }
        let relu = flags.contains(&".relu");
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, *t)) else {
            return true;
        };
        let sg = signed(*t);
        let sel = if max { npt() } else { pt() };
        if t.bits() == 64 {
            if relu {
                return false;
            }
            let (ra, rb) = (self.a_reg64(va), self.a_reg64(vb));
            let cmp = if max { "GT" } else { "LT" };
            let p = self.a_cmp64(
                cmp,
                sg,
                u(wd(ra, 0)),
                u(wd(ra, 1)),
                u(wd(rb, 0)),
                u(wd(rb, 1)),
            );
            let Some(dst) = self.dst(d) else { return false };
            for w in 0..2 {
                self.a_fin_w(&dst, w, "SEL", &[], [u(wd(ra, w)), u(wd(rb, w)), u(p)]);
            }
            self.commit(dst);
            return true;
        }
        let mut mods: Vec<&'static str> = Vec::new();
        let (va, vb) = match t.name {
            "u16x2" => {
                mods.push("U16x2");
                (va, vb)
            }
            "s16x2" => {
                mods.push("S16x2");
                (va, vb)
            }
            _ => {
                if !sg {
                    mods.push("U32");
                }
                (self.a_ext(va, t.bits(), sg), self.a_ext(vb, t.bits(), sg))
            }
        };
        if relu {
            if !sg {
                return false;
            }
            mods.push("RELU");
        }
        let (va, vb) = if matches!(va, Val::Imm(_)) {
            (vb, va)
        } else {
            (va, vb)
        };
        let ra = self.a_reg(va);
        let ob = self.a_op(vb);
        let Some(dst) = self.dst(d) else { return false };
        self.a_fin(&dst, "VIMNMX", &mods, [u(ra), ob, sel]);
        self.commit(dst);
        true
    }

    /// Word `w` of a value as an operand.
    pub(super) fn a_wop(&mut self, v: Val, w: u8) -> Operand {
        let x = self.word(v, w);
        self.a_op(x)
    }

    /// A 64-bit comparison `{alo,ahi} cmp {blo,bhi}`: the low words unsigned, then the high
    /// words with the signedness and `.EX` (ptxas's `ISETP … ; ISETP … .EX`).
    pub(super) fn a_cmp64(
        &mut self,
        cmp: &'static str,
        sg: bool,
        alo: Operand,
        ahi: Operand,
        blo: Operand,
        bhi: Operand,
    ) -> Reg {
        // Like ptxas, chain only NE, LT and GT; EQ, GE and LE are the second output of those.
        let (canon, flip) = match cmp {
            "EQ" => ("NE", true),
            "GE" => ("LT", true),
            "LE" => ("GT", true),
            other => (other, false),
        };
        let lo = self.a_mkp("ISETP", &[canon, "U32", "AND"], vec![alo, blo, pt()]);
        let hm: &[&'static str] = if sg {
            &[canon, "AND", "EX"]
        } else {
            &[canon, "U32", "AND", "EX"]
        };
        let p = self.a_tmpp();
        let defs = if flip { [ptd(), df(p)] } else { [df(p), ptd()] };
        let mut ops = defs.to_vec();
        ops.extend([ahi, bhi, pt(), u(lo)]);
        self.a_put("ISETP", hm, ops);
        p
    }

    /// `abs`/`neg`: integers here (IABS; `IADD3 d, -a, RZ, RZ`; 64-bit with carries), floats in
    /// `float.rs`.
    pub(super) fn abs_neg(
        &mut self,
        ins: &ast::Instruction,
        neg: bool,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [t] = types else { return false };
        if t.is_float() {
            return self.float_abs_neg(ins, *t, neg, flags);
        }
        if !t.is_integer_like() || !flags.is_empty() {
            return false;
        }
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        let Some(va) = self.a_src(a, *t) else {
            return true;
        };
        if t.bits() == 64 {
            let ra = self.a_reg64(va);
            let c = self.a_tmpp();
            let nlo = self.a_tmp();
            self.a_put(
                "IADD3",
                &[],
                vec![df(nlo), df(c), rz(), u(wd(ra, 0)).negated(), rz()],
            );
            let Some(dst) = self.dst(d) else { return false };
            if neg {
                self.a_fin_w(&dst, 0, "MOV", &[], [u(nlo)]);
                self.a_fin_w(
                    &dst,
                    1,
                    "IADD3",
                    &["X"],
                    [rz(), u(wd(ra, 1)).inverted(), rz(), u(c), npt()],
                );
            } else {
                let nhi = self.a_mk(
                    "IADD3",
                    &["X"],
                    [rz(), u(wd(ra, 1)).inverted(), rz(), u(c), npt()],
                );
                let p = self.a_mkp("ISETP", &["LT", "AND"], vec![u(wd(ra, 1)), rz(), pt()]);
                self.a_fin_w(&dst, 0, "SEL", &[], [u(nlo), u(wd(ra, 0)), u(p)]);
                self.a_fin_w(&dst, 1, "SEL", &[], [u(nhi), u(wd(ra, 1)), u(p)]);
            }
            self.commit(dst);
            return true;
        }
        if neg {
            let ra = self.a_reg(va);
            let Some(dst) = self.dst(d) else { return false };
            self.a_fin(&dst, "IADD3", &[], [u(ra).negated(), rz(), rz()]);
            self.commit(dst);
        } else {
            let e = self.a_ext(va, t.bits(), true);
            let ra = self.a_reg(e);
            let Some(dst) = self.dst(d) else { return false };
            self.a_fin(&dst, "IABS", &[], [u(ra)]);
            self.commit(dst);
        }
        true
    }

    /// `sad d, a, b, c` = c + |a − b|: `max − min + c` with two VIMNMX and an IADD3 (ptxas uses
    /// VABSDIFF, which the encoder lacks); 64-bit values select between a − b and b − a.
    pub(super) fn sad(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        if !t.is_integer_like() {
            return false;
        }
        let (Some(va), Some(vb), Some(vc)) =
            (self.a_src(a, *t), self.a_src(b, *t), self.a_src(c, *t))
        else {
            return true;
        };
        let sg = signed(*t);
        if t.bits() == 64 {
            let (ra, rb, rc) = (self.a_reg64(va), self.a_reg64(vb), self.a_reg64(vc));
            let ge = self.a_cmp64(
                "GE",
                sg,
                u(wd(ra, 0)),
                u(wd(ra, 1)),
                u(wd(rb, 0)),
                u(wd(rb, 1)),
            );
            let diff = |cx: &mut Self, x: Reg, y: Reg| {
                let p = cx.a_tmpp();
                let lo = cx.a_tmp();
                cx.a_put(
                    "IADD3",
                    &[],
                    vec![df(lo), df(p), u(wd(x, 0)), u(wd(y, 0)).negated(), rz()],
                );
                let hi = cx.a_mk(
                    "IADD3",
                    &["X"],
                    [u(wd(x, 1)), u(wd(y, 1)).inverted(), rz(), u(p), npt()],
                );
                (lo, hi)
            };
            let (l1, h1) = diff(self, ra, rb);
            let (l2, h2) = diff(self, rb, ra);
            let lo = self.a_sel(u(l1), u(l2), u(ge));
            let hi = self.a_sel(u(h1), u(h2), u(ge));
            let Some(dst) = self.dst(d) else { return false };
            let p = self.a_tmpp();
            self.a_fin_w(&dst, 0, "IADD3", &[], [df(p), u(wd(rc, 0)), u(lo), rz()]);
            self.a_fin_w(
                &dst,
                1,
                "IADD3",
                &["X"],
                [u(wd(rc, 1)), u(hi), rz(), u(p), npt()],
            );
            self.commit(dst);
            return true;
        }
        let n = t.bits();
        let (ea, eb) = (self.a_ext(va, n, sg), self.a_ext(vb, n, sg));
        let (ea, eb) = if matches!(ea, Val::Imm(_)) {
            (eb, ea)
        } else {
            (ea, eb)
        };
        let ra = self.a_reg(ea);
        let ob = self.a_op(eb);
        let m: &[&'static str] = if sg { &[] } else { &["U32"] };
        let mx = self.a_mk("VIMNMX", m, [u(ra), ob.clone(), npt()]);
        let mn = self.a_mk("VIMNMX", m, [u(ra), ob, pt()]);
        let oc = self.a_op(vc);
        let Some(dst) = self.dst(d) else { return false };
        // IADD3's immediate must be B: max + c − min.
        self.a_fin(&dst, "IADD3", &[], [u(mx), oc, u(mn).negated()]);
        self.commit(dst);
        true
    }

    /// `mul24`/`mad24`: the operands cut to 24 bits (`PRMT 0x7210` / `SGXT 0x18`), then IMAD;
    /// `.hi` is bits 16..47 of the 48-bit product (`IMAD.WIDE` + `SHF.R.U64 … 0x10`).
    pub(super) fn mul24(
        &mut self,
        ins: &ast::Instruction,
        mad: bool,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [t] = types else { return false };
        if t.bits() != 32 || !t.is_integer_like() || !only(flags, &[".lo", ".hi"]) {
            return false;
        }
        let hi = flags.contains(&".hi");
        let ops = &ins.operands[..];
        if ops.len() != if mad { 4 } else { 3 } {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(&ops[1], *t), self.a_src(&ops[2], *t)) else {
            return true;
        };
        let vc = if mad {
            match self.a_src(&ops[3], *t) {
                Some(v) => Some(v),
                None => return true,
            }
        } else {
            None
        };
        let sg = signed(*t);
        let cut = |cx: &mut Self, v: Val| -> Reg {
            match v {
                Val::Imm(i) => {
                    let x = super::arith::extend_imm(i, 24, sg) & 0xffff_ffff;
                    cx.a_reg(Val::Imm(x))
                }
                other => {
                    let r = cx.a_reg(other);
                    if sg {
                        cx.a_mk("SGXT", &[], [u(r), im(24)])
                    } else {
                        cx.a_mk("PRMT", &[], [u(r), im(0x7210), rz()])
                    }
                }
            }
        };
        let ra = cut(self, va);
        let rb = cut(self, vb);
        let oc = match vc {
            Some(v) => self.a_op(v),
            None => rz(),
        };
        let Some(dst) = self.dst(&ops[0]) else {
            return false;
        };
        if hi {
            let m: &[&'static str] = if sg { &["WIDE"] } else { &["WIDE", "U32"] };
            let w = self.a_mk64("IMAD", m, [u(ra), u(rb), super::arith::rz64()]);
            if mad {
                let h = self.a_mk("SHF", &["R", "U64"], [u(wd(w, 0)), im(16), u(wd(w, 1))]);
                self.a_fin(&dst, "IADD3", &[], [u(h), oc, rz()]);
            } else {
                self.a_fin(
                    &dst,
                    "SHF",
                    &["R", "U64"],
                    [u(wd(w, 0)), im(16), u(wd(w, 1))],
                );
            }
        } else {
            let oc = match oc.kind {
                OpKind::Int(_) => {
                    let r = self.a_mk("MOV", &[], [oc]);
                    u(r)
                }
                _ => oc,
            };
            self.a_fin(&dst, "IMAD", &[], [u(ra), u(rb), oc]);
        }
        self.commit(dst);
        true
    }

    /// `popc` (POPC; 64-bit: both words added), `clz` (`31 − FLO.U32`; 64-bit: the FLO of the
    /// high word or else of the low one), `brev` (BREV; 64-bit: words swapped).
    pub(super) fn bitcount(&mut self, ins: &ast::Instruction, opcode: &str, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        if !matches!(t.bits(), 32 | 64) {
            return false;
        }
        let Some(va) = self.a_src(a, *t) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let w64 = t.bits() == 64;
        match (opcode, w64) {
            ("popc", false) => {
                let r = self.a_reg(va);
                self.a_fin(&dst, "POPC", &[], [u(r)]);
            }
            ("popc", true) => {
                let r = self.a_reg64(va);
                let x = self.a_mk("POPC", &[], [u(wd(r, 0))]);
                let y = self.a_mk("POPC", &[], [u(wd(r, 1))]);
                self.a_fin(&dst, "IADD3", &[], [u(x), u(y), rz()]);
            }
            ("clz", false) => {
                let r = self.a_reg(va);
                let f = self.a_mk("FLO", &["U32"], [u(r)]);
                self.a_fin(&dst, "IADD3", &[], [u(f).negated(), im(0x1f), rz()]);
            }
            ("clz", true) => {
                let r = self.a_reg64(va);
                let p = self.a_mkp(
                    "ISETP",
                    &["NE", "U32", "AND"],
                    vec![u(wd(r, 1)), rz(), pt()],
                );
                let s = self.a_sel(u(wd(r, 0)), u(wd(r, 1)), u(p).inverted());
                let f = self.a_mk("FLO", &["U32"], [u(s)]);
                let x = self.a_mk("IADD3", &[], [u(f).negated(), im(0x1f), rz()]);
                let y = self.a_mk("IADD3", &[], [u(f).negated(), im(0x3f), rz()]);
                self.a_fin(&dst, "SEL", &[], [u(x), u(y), u(p)]);
            }
            ("brev", false) => {
                let r = self.a_reg(va);
                self.a_fin(&dst, "BREV", &[], [u(r)]);
            }
            ("brev", true) => {
                let r = self.a_reg64(va);
                self.a_fin_w(&dst, 0, "BREV", &[], [u(wd(r, 1))]);
                self.a_fin_w(&dst, 1, "BREV", &[], [u(wd(r, 0))]);
            }
            _ => return false,
        }
        self.commit(dst);
        true
    }

    /// `bfind[.shiftamt]`: `FLO[.U32][.SH]`. 64-bit (branch-free, where ptxas branches): the FLO
    /// of the high word + 32 if it found a bit, else the FLO of the low word (complemented for
    /// a negative signed value); `.shiftamt` is then `63 − position`.
    pub(super) fn bfind(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [t] = types else { return false };
        let [d, a] = &ins.operands[..] else {
            return false;
        };
        if !only(flags, &[".shiftamt"]) || !matches!(t.bits(), 32 | 64) || !t.is_integer_like() {
            return false;
        }
        let sh = flags.contains(&".shiftamt");
        let sg = signed(*t);
        let Some(va) = self.a_src(a, *t) else {
            return true;
        };
        if t.bits() == 32 {
            let r = self.a_reg(va);
            let Some(dst) = self.dst(d) else { return false };
            let mods: &[&'static str] = match (sg, sh) {
                (false, false) => &["U32"],
                (false, true) => &["U32", "SH"],
                (true, false) => &[],
                (true, true) => &["SH"],
            };
            self.a_fin(&dst, "FLO", mods, [u(r)]);
            self.commit(dst);
            return true;
        }
        let r = self.a_reg64(va);
        let (lo, hi) = (wd(r, 0), wd(r, 1));
        let fh = self.a_mk("FLO", if sg { &[] } else { &["U32"] }, [u(hi)]);
        let found = self.a_mkp("ISETP", &["NE", "U32", "AND"], vec![u(fh), im(-1), pt()]);
        let lo_src = if sg {
            let s = self.a_mk("SHF", &["R", "S32", "HI"], [rz(), im(31), u(hi)]);
            self.a_lop(u(lo), u(s), 0x3c)
        } else {
            lo
        };
        let fl = self.a_mk("FLO", &["U32"], [u(lo_src)]);
        let h32 = self.a_mk("IADD3", &[], [u(fh), im(32), rz()]);
        let Some(dst) = self.dst(d) else { return false };
        if sh {
            let pos = self.a_sel(u(h32), u(fl), u(found));
            let any = self.a_mkp("ISETP", &["NE", "U32", "AND"], vec![u(pos), im(-1), pt()]);
            let s = self.a_mk("IADD3", &[], [u(pos).negated(), im(63), rz()]);
            self.a_fin(&dst, "SEL", &[], [u(s), im(0xffff_ffff), u(any)]);
        } else {
            self.a_fin(&dst, "SEL", &[], [u(h32), u(fl), u(found)]);
        }
        self.commit(dst);
        true
    }

    /// `bfe`: 32-bit as ptxas (`SHF.R.{U32,S32}.HI t, RZ, pos, a; SGXT[.U32] d, t, len`, with
    /// pos and len cut to their low bytes by PRMT when in registers). 64-bit: the shifted value
    /// masked (unsigned) or sign-extended by a left/right shift pair (signed).
    pub(super) fn bfe(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        if !matches!(t.bits(), 32 | 64) || !t.is_integer_like() {
            return false;
        }
        let u32t = super::arith::ty("u32");
        let (Some(va), Some(vb), Some(vc)) =
            (self.a_src(a, *t), self.a_src(b, u32t), self.a_src(c, u32t))
        else {
            return true;
        };
        let sg = signed(*t);
        // pos and len: their low bytes.
        let (pos, len) = match (vb, vc) {
            (Val::Imm(p), Val::Imm(l)) => (Val::Imm(p & 0xff), Val::Imm(l & 0xff)),
            _ => {
                let rb = self.a_reg(vb);
                let rc = self.a_reg(vc);
                let both = self.a_mk("PRMT", &[], [u(rc), im(0x7604), u(rb)]);
                let p = self.a_mk("PRMT", &[], [rz(), im(0x4), u(both)]);
                let l = self.a_mk("PRMT", &[], [rz(), im(0x5), u(both)]);
                (Val::Reg(p), Val::Reg(l))
            }
        };
        let (opos, olen) = (self.a_op(pos), self.a_op(len));
        if t.bits() == 32 {
            let ra = self.a_reg(va);
            let Some(dst) = self.dst(d) else { return false };
            if matches!(len, Val::Imm(0)) {
                self.a_fin(&dst, "MOV", &[], [im(0)]);
            } else {
                let m: &[&'static str] = if sg {
                    &["R", "S32", "HI"]
                } else {
                    &["R", "U32", "HI"]
                };
                let opos = match pos {
                    Val::Imm(p) => im(p.min(if sg { 31 } else { 32 })),
                    _ => opos,
                };
                let s = self.a_mk("SHF", m, [rz(), opos, u(ra)]);
                self.a_fin(&dst, "SGXT", if sg { &[] } else { &["U32"] }, [u(s), olen]);
            }
            self.commit(dst);
            return true;
        }
        let ra = self.a_reg64(va);
        let (lo, hi) = (wd(ra, 0), wd(ra, 1));
        // x = a >> pos (64-bit; SHF clamps the amount).
        let rm: &[&'static str] = if sg { &["R", "S64"] } else { &["R", "U64"] };
        let hm: &[&'static str] = if sg {
            &["R", "S32", "HI"]
        } else {
            &["R", "U32", "HI"]
        };
        let xl = self.a_mk("SHF", rm, [u(lo), opos.clone(), u(hi)]);
        let xh = self.a_mk("SHF", hm, [rz(), opos, u(hi)]);
        let Some(dst) = self.dst(d) else { return false };
        if sg {
            // len clamped to 64; s = 64 − len; d = (x << s) >>s s (len 0 → s = 64 → 0).
            let lr = self.a_reg(len);
            let l = self.a_mk("VIMNMX", &["U32"], [u(lr), im(64), pt()]);
            let s = self.a_mk("IADD3", &[], [u(l).negated(), im(64), rz()]);
            let yl = self.a_mk("SHF", &["L", "U32"], [u(xl), u(s), rz()]);
            let yh = self.a_mk("SHF", &["L", "U64", "HI"], [u(xl), u(s), u(xh)]);
            self.a_fin_w(&dst, 0, "SHF", &["R", "S64"], [u(yl), u(s), u(yh)]);
            self.a_fin_w(&dst, 1, "SHF", &["R", "S32", "HI"], [rz(), u(s), u(yh)]);
        } else {
            // mask = (1 << len) − 1 in 64 bits (len ≥ 64 → all ones).
            let one = self.a_mk("MOV", &[], [im(1)]);
            let lr = self.a_reg(len);
            let ml = self.a_mk("SHF", &["L", "U32"], [u(one), u(lr), rz()]);
            let mh = self.a_mk("SHF", &["L", "U64", "HI"], [u(one), u(lr), rz()]);
            let c = self.a_tmpp();
            let m0 = self.a_tmp();
            self.a_put("IADD3", &[], vec![df(m0), df(c), u(ml), im(-1), rz()]);
            let m1 = self.a_mk("IADD3", &["X"], [u(mh), im(-1), rz(), u(c), npt()]);
            self.a_fin_w(
                &dst,
                0,
                "LOP3",
                &["LUT"],
                [u(xl), u(m0), rz(), im(0xc0), npt()],
            );
            self.a_fin_w(
                &dst,
                1,
                "LOP3",
                &["LUT"],
                [u(xh), u(m1), rz(), im(0xc0), npt()],
            );
        }
        self.commit(dst);
        true
    }

    /// `bfi d, a, b, pos, len`: a's low len bits inserted into b at pos. 32-bit as ptxas:
    /// `SHF.L.U32 t, a, pos; BMSK m, pos, len; LOP3 d, t, m, b, 0xe2` (m ? t : b); with constant
    /// pos and len the mask is an immediate. 64-bit: the mask and the shifted value in 64 bits.
    pub(super) fn bfi(&mut self, ins: &ast::Instruction, types: &[Ty]) -> bool {
        let [t] = types else { return false };
        let [d, a, b, c, e] = &ins.operands[..] else {
            return false;
        };
        if !matches!(t.bits(), 32 | 64) {
            return false;
        }
        let u32t = super::arith::ty("u32");
        let (Some(va), Some(vb), Some(vc), Some(ve)) = (
            self.a_src(a, *t),
            self.a_src(b, *t),
            self.a_src(c, u32t),
            self.a_src(e, u32t),
        ) else {
            return true;
        };
        if t.bits() == 32 {
            let ra = self.a_reg(va);
            let rb = self.a_reg(vb);
            let Some(dst) = self.dst(d) else { return false };
            if let (Val::Imm(p), Val::Imm(l)) = (vc, ve) {
                let (p, l) = (p & 0xff, l & 0xff);
                let mask = if p >= 32 {
                    0
                } else {
                    (super::arith::low_mask(l.min(32) as u32) << p) & 0xffff_ffff
                };
                let s = self.a_mk("SHF", &["L", "U32"], [u(ra), im(p.min(32)), rz()]);
                self.a_fin(
                    &dst,
                    "LOP3",
                    &["LUT"],
                    [u(s), im(mask as i64), u(rb), im(0xe2), npt()],
                );
            } else {
                let rc = self.a_reg(vc);
                let re = self.a_reg(ve);
                let both = self.a_mk("PRMT", &[], [u(re), im(0x7604), u(rc)]);
                let p = self.a_mk("PRMT", &[], [rz(), im(0x4), u(both)]);
                let l = self.a_mk("PRMT", &[], [rz(), im(0x5), u(both)]);
                let s = self.a_mk("SHF", &["L", "U32"], [u(ra), u(p), rz()]);
                let m = self.a_mk("BMSK", &[], [u(p), u(l)]);
                self.a_fin(&dst, "LOP3", &["LUT"], [u(s), u(m), u(rb), im(0xe2), npt()]);
            }
            self.commit(dst);
            return true;
        }
        let ra = self.a_reg64(va);
        let rb = self.a_reg64(vb);
        let (p, l) = match (vc, ve) {
            (Val::Imm(p), Val::Imm(l)) => (Val::Imm(p & 0xff), Val::Imm(l & 0xff)),
            _ => {
                let rc = self.a_reg(vc);
                let re = self.a_reg(ve);
                let p = self.a_lop(u(rc), im(0xff), 0xc0);
                let l = self.a_lop(u(re), im(0xff), 0xc0);
                (Val::Reg(p), Val::Reg(l))
            }
        };
        let (op, ol) = (self.a_op(p), self.a_op(l));
        // m = ((1 << len) − 1) << pos, t = a << pos (64-bit shifts clamp their amounts).
        let one = self.a_mk("MOV", &[], [im(1)]);
        let ml = self.a_mk("SHF", &["L", "U32"], [u(one), ol.clone(), rz()]);
        let mh = self.a_mk("SHF", &["L", "U64", "HI"], [u(one), ol, rz()]);
        let c = self.a_tmpp();
        let k0 = self.a_tmp();
        self.a_put("IADD3", &[], vec![df(k0), df(c), u(ml), im(-1), rz()]);
        let k1 = self.a_mk("IADD3", &["X"], [u(mh), im(-1), rz(), u(c), npt()]);
        let m0 = self.a_mk("SHF", &["L", "U32"], [u(k0), op.clone(), rz()]);
        let m1 = self.a_mk("SHF", &["L", "U64", "HI"], [u(k0), op.clone(), u(k1)]);
        let t0 = self.a_mk("SHF", &["L", "U32"], [u(wd(ra, 0)), op.clone(), rz()]);
        let t1 = self.a_mk("SHF", &["L", "U64", "HI"], [u(wd(ra, 0)), op, u(wd(ra, 1))]);
        let Some(dst) = self.dst(d) else { return false };
        self.a_fin_w(
            &dst,
            0,
            "LOP3",
            &["LUT"],
            [u(t0), u(m0), u(wd(rb, 0)), im(0xe2), npt()],
        );
        self.a_fin_w(
            &dst,
            1,
            "LOP3",
            &["LUT"],
            [u(t1), u(m1), u(wd(rb, 1)), im(0xe2), npt()],
        );
        self.commit(dst);
        true
    }

    /// `szext.{clamp,wrap}.{u32,s32} d, a, b` → `SGXT[.W][.U32] d, a, b`.
    pub(super) fn szext(&mut self, ins: &ast::Instruction, types: &[Ty], flags: &[&str]) -> bool {
        let [t] = types else { return false };
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let wrap = flags.contains(&".wrap");
        if !(wrap || flags.contains(&".clamp")) || t.bits() != 32 {
            return false;
        }
        let (Some(va), Some(vb)) = (self.a_src(a, *t), self.a_src(b, super::arith::ty("u32")))
        else {
            return true;
        };
        let ra = self.a_reg(va);
        let ob = self.a_op(vb);
        let Some(dst) = self.dst(d) else { return false };
        let mods: &[&'static str] = match (wrap, signed(*t)) {
            (true, true) => &["W"],
            (true, false) => &["W", "U32"],
            (false, true) => &[],
            (false, false) => &["U32"],
        };
        self.a_fin(&dst, "SGXT", mods, [u(ra), ob]);
        self.commit(dst);
        true
    }

    /// `bmsk.{clamp,wrap}.b32 d, a, b` → `BMSK[.W] d, a, b`.
    pub(super) fn bmsk(&mut self, ins: &ast::Instruction, flags: &[&str]) -> bool {
        let [d, a, b] = &ins.operands[..] else {
            return false;
        };
        let wrap = flags.contains(&".wrap");
        if !(wrap || flags.contains(&".clamp")) {
            return false;
        }
        let t = super::arith::ty("u32");
        let (Some(va), Some(vb)) = (self.a_src(a, t), self.a_src(b, t)) else {
            return true;
        };
        let ra = self.a_reg(va);
        let ob = self.a_op(vb);
        let Some(dst) = self.dst(d) else { return false };
        self.a_fin(&dst, "BMSK", if wrap { &["W"] } else { &[] }, [u(ra), ob]);
        self.commit(dst);
        true
    }

    /// `prmt.b32[.mode] d, a, b, c` → `PRMT[.MODE] d, a, c, b` (the selector in the middle).
    pub(super) fn prmt(&mut self, ins: &ast::Instruction, flags: &[&str]) -> bool {
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        let mode: &[&'static str] = match flags {
            [] => &[],
            [".f4e"] => &["F4E"],
            [".b4e"] => &["B4E"],
            [".rc8"] => &["RC8"],
            [".ecl"] => &["ECL"],
            [".ecr"] => &["ECR"],
            [".rc16"] => &["RC16"],
            _ => return false,
        };
        let t = super::arith::ty("b32");
        let (Some(va), Some(vb), Some(vc)) = (self.a_src(a, t), self.a_src(b, t), self.a_src(c, t))
        else {
            return true;
        };
        let ra = self.a_reg(va);
        let rb = self.a_reg(vb);
        let oc = match vc {
            Val::Imm(s) if mode.is_empty() => im(s & 0xffff),
            other => self.a_op(other),
        };
        let Some(dst) = self.dst(d) else { return false };
        self.a_fin(&dst, "PRMT", mode, [u(ra), oc, u(rb)]);
        self.commit(dst);
        true
    }

    /// `dp4a.atype.btype d, a, b, c` → `IDP.4A.{U8,S8}.{U8,S8} d, a, b, c`; `dp2a.{lo,hi}` →
    /// `IDP.2A.{LO,HI}.{U16,S16}.{U8,S8}`.
    pub(super) fn dp(
        &mut self,
        ins: &ast::Instruction,
        two: bool,
        types: &[Ty],
        flags: &[&str],
    ) -> bool {
        let [ta, tb] = types else { return false };
        let [d, a, b, c] = &ins.operands[..] else {
            return false;
        };
        let s = |t: &Ty| t.kind() == Kind::Signed;
        let mut mods: Vec<&'static str> = Vec::new();
        if two {
            mods.push("2A");
            match flags {
                [".lo"] => mods.push("LO"),
                [".hi"] => mods.push("HI"),
                _ => return false,
            }
            mods.push(if s(ta) { "S16" } else { "U16" });
        } else {
            if !flags.is_empty() {
                return false;
            }
            mods.push("4A");
            mods.push(if s(ta) { "S8" } else { "U8" });
        }
        mods.push(if s(tb) { "S8" } else { "U8" });
        let (Some(va), Some(vb), Some(vc)) =
            (self.a_src(a, *ta), self.a_src(b, *tb), self.a_src(c, *ta))
        else {
            return true;
        };
        let ra = self.a_reg(va);
        let ob = self.a_op(vb);
        let rc = self.a_reg(vc);
        let Some(dst) = self.dst(d) else { return false };
        self.a_fin(&dst, "IDP", &mods, [u(ra), ob, u(rc)]);
        self.commit(dst);
        let _ = ptd;
        true
    }
}
