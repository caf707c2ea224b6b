//! Integer and logic instructions (and their uniform twins, which share this code): IADD3,
//! IMAD, LEA, LOP3, PLOP3, SHF, PRMT, SEL, ISETP, IABS, POPC, FLO, BREV, SGXT, BMSK, VIADD,
//! VIMNMX, IMNMX, MOV, IDP, I2IP, P2R-style moves.

use super::{Cx, Flow, R, allow, invalid, op, unimpl};
use crate::program::Decoded;
use ptxc::target::sm90a::{Operand, OperandKind};

/// Executes `m` if it is an integer instruction.
pub(super) fn exec(m: &str, d: &Decoded, cx: &mut Cx) -> R<Option<Flow>> {
    match m {
        "IADD3" => iadd3(d, cx)?,
        "IMAD" => imad(d, cx)?,
        "LEA" => lea(d, cx)?,
        "LOP3" => lop3(d, cx)?,
        "PLOP3" => plop3(d, cx)?,
        "SHF" => shf(d, cx)?,
        "PRMT" => prmt(d, cx)?,
        "SEL" | "FSEL" => sel(d, cx)?,
        "ISETP" => isetp(d, cx)?,
        "IABS" => {
            allow(d, &[])?;
            let a = cx.src(d, op(d, 1)?)? as i32;
            cx.set(d, op(d, 0)?, a.wrapping_abs() as u32)?;
        }
        "POPC" => {
            allow(d, &[])?;
            let o = op(d, 1)?;
            let a = not_if(cx.src(d, o)?, o);
            cx.set(d, op(d, 0)?, a.count_ones())?;
        }
        "BREV" => {
            allow(d, &[])?;
            let a = cx.src(d, op(d, 1)?)?;
            cx.set(d, op(d, 0)?, a.reverse_bits())?;
        }
        "FLO" => flo(d, cx)?,
        "SGXT" => sgxt(d, cx)?,
        "BMSK" => bmsk(d, cx)?,
        "VIADD" => {
            allow(d, &[])?;
            let a = cx.src(d, op(d, 1)?)?;
            let bo = op(d, 2)?;
            let b = neg_if(cx.src(d, bo)?, bo);
            cx.set(d, op(d, 0)?, a.wrapping_add(b))?;
        }
        "VIMNMX" | "IMNMX" => vimnmx(d, cx)?,
        "MOV" => {
            allow(d, &[])?;
            if let Some(mask) = d.ops.get(2) {
                let OperandKind::Int(v) = mask.kind else {
                    return invalid(d, "lane mask");
                };
                if v & 0xf != 0xf {
                    return unimpl(d, "MOV with a partial byte mask");
                }
            }
            let a = cx.src(d, op(d, 1)?)?;
            cx.set(d, op(d, 0)?, a)?;
        }
        "IDP" => idp(d, cx)?,
        "UP2UR" => {
            // UP2UR.Bn URd, UPR, URa, mask: the uniform predicates into byte n of URa.
            allow(d, &["B1", "B2", "B3"])?;
            let sh = byte_sel(d.mods().first().copied());
            let a = cx.src(d, op(d, 2)?)?;
            let mask = imm(d, 3)? as u32 & 0xff;
            let preds = u32::from(cx.u.up & 0x7f);
            cx.set(d, op(d, 0)?, (a & !(mask << sh)) | ((preds & mask) << sh))?;
        }
        "UR2UP" => {
            // UR2UP UPR, URa.Bn, mask: byte n of URa into the uniform predicates.
            allow(d, &[])?;
            let o = op(d, 1)?;
            let sh = byte_sel(o.suffix.first().copied());
            let v = cx.src(d, o)? >> sh;
            let mask = match d.ops.get(2).map(|o| &o.kind) {
                Some(OperandKind::Int(m)) => *m as u32 & 0x7f,
                _ => 0x7f,
            } as u8;
            cx.u.up = (cx.u.up & !mask) | (v as u8 & mask) | 0x80;
        }
        "I2IP" => i2ip(d, cx)?,
        _ => return Ok(None),
    }
    Ok(Some(Flow::Next))
}

/// The bit offset of a `.B1/.B2/.B3` byte selector.
fn byte_sel(s: Option<&str>) -> u32 {
    match s {
        Some("B1") => 8,
        Some("B2") => 16,
        Some("B3") => 24,
        _ => 0,
    }
}

fn neg_if(v: u32, o: &Operand) -> u32 {
    if o.neg { v.wrapping_neg() } else { v }
}

fn not_if(v: u32, o: &Operand) -> u32 {
    if o.not { !v } else { v }
}

/// Operand width for `.64` uniform forms.
fn width(d: &Decoded) -> u32 {
    if d.has("64") { 64 } else { 32 }
}

fn mask(w: u32) -> u128 {
    (1u128 << w) - 1
}

/// Reads an integer source of width `w` as an unsigned value.
fn isrc(cx: &Cx, d: &Decoded, o: &Operand, w: u32) -> R<u128> {
    if w == 64 {
        Ok(u128::from(cx.src64(d, o)?))
    } else {
        Ok(u128::from(cx.src(d, o)?))
    }
}

fn set_w(cx: &mut Cx, d: &Decoded, o: &Operand, w: u32, v: u128) -> R<()> {
    if w == 64 {
        cx.set64(d, o, v as u64)
    } else {
        cx.set(d, o, v as u32)
    }
}

/// Sets the carry-out predicates of a sum with total carry `c` (0, 1 or 2): the first is set
/// for a carry of at least 1, the second for a carry of 2, so that `.X` adding both restores it.
fn set_carries(cx: &mut Cx, d: &Decoded, p0: &Operand, p1: Option<&Operand>, c: u128) -> R<()> {
    cx.set_pred(d, p0, c >= 1)?;
    if let Some(p1) = p1 {
        cx.set_pred(d, p1, c >= 2)?;
    }
    Ok(())
}

fn iadd3(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["X", "64"])?;
    let w = width(d);
    let x = d.has("X");
    let mut sum: u128 = 0;
    for i in 3..6 {
        let o = op(d, i)?;
        let v = isrc(cx, d, o, w)?;
        sum += if x {
            if o.not { !v & mask(w) } else { v }
        } else if o.neg {
            (!v & mask(w)) + 1
        } else {
            v
        };
    }
    if x {
        sum += u128::from(cx.pred(d, op(d, 6)?)?) + u128::from(cx.pred(d, op(d, 7)?)?);
    }
    set_w(cx, d, op(d, 0)?, w, sum & mask(w))?;
    set_carries(cx, d, op(d, 1)?, Some(op(d, 2)?), sum >> w)
}

fn imad(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["MOV", "IADD", "SHL", "U32", "X", "WIDE", "HI"])?;
    let signed = !d.has("U32");
    let x = d.has("X");
    let (wide, hi) = (d.has("WIDE"), d.has("HI"));
    // Operand positions: plain [d, a, b, c, (pin)]; WIDE/HI [d, pd, a, b, c, (pin)].
    let base = if wide || hi { 2 } else { 1 };
    let a = cx.src(d, op(d, base)?)?;
    let b = cx.src(d, op(d, base + 1)?)?;
    let co = op(d, base + 2)?;
    let pin = if x {
        u128::from(cx.pred(d, op(d, base + 3)?)?)
    } else {
        0
    };
    let prod: u64 = if signed {
        (i64::from(a as i32) * i64::from(b as i32)) as u64
    } else {
        u64::from(a) * u64::from(b)
    };
    if wide || hi {
        // C is a register pair (for HI as well: ptxas's division idiom feeds {0, r}).
        let c = match co.kind {
            OperandKind::Int(0) => 0,
            OperandKind::Int(_) if hi => return unimpl(d, "IMAD.HI with an immediate addend"),
            _ => cx.src64(d, co)?,
        };
        let c: u128 = if x {
            if co.not {
                u128::from(!c)
            } else {
                u128::from(c)
            }
        } else if co.neg {
            u128::from(!c) + 1
        } else {
            u128::from(c)
        };
        let sum = u128::from(prod) + c + pin;
        if wide {
            cx.set64(d, op(d, 0)?, sum as u64)?;
        } else {
            cx.set(d, op(d, 0)?, (sum >> 32) as u32)?;
        }
        cx.set_pred(d, op(d, 1)?, sum >> 64 != 0)?;
    } else {
        let c = cx.src(d, co)?;
        let c: u32 = if x { not_if(c, co) } else { neg_if(c, co) };
        let r = (prod as u32).wrapping_add(c).wrapping_add(pin as u32);
        cx.set(d, op(d, 0)?, r)?;
    }
    Ok(())
}

fn lea(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["X", "HI", "SX32"])?;
    let x = d.has("X");
    let hi = d.has("HI");
    let sx = d.has("SX32");
    // [d, pd, a, b, (c if HI and not SX32), shift, (pin if X)]
    let ao = op(d, 2)?;
    let bo = op(d, 3)?;
    let a = cx.src(d, ao)?;
    let b = cx.src(d, bo)?;
    let (c, si) = if hi && !sx {
        (cx.src(d, op(d, 4)?)?, 5)
    } else if sx {
        (((a as i32) >> 31) as u32, 4)
    } else {
        (0, 4)
    };
    let OperandKind::Int(s) = op(d, si)?.kind else {
        return invalid(d, "shift amount");
    };
    let s = (s & 31) as u32;
    if ao.neg || ao.not {
        return unimpl(d, "LEA with a negated shifted operand");
    }
    let shifted: u32 = if hi {
        let v = u64::from(c) << 32 | u64::from(a);
        ((v << s) >> 32) as u32
    } else {
        a << s
    };
    let bt: u64 = if x {
        u64::from(not_if(b, bo))
    } else if bo.neg {
        u64::from(!b) + 1
    } else {
        u64::from(b)
    };
    let pin = if x {
        u64::from(cx.pred(d, op(d, si + 1)?)?)
    } else {
        0
    };
    let sum = u64::from(shifted) + bt + pin;
    cx.set(d, op(d, 0)?, sum as u32)?;
    cx.set_pred(d, op(d, 1)?, sum >> 32 != 0)
}

fn lut3(lut: u32, a: u32, b: u32, c: u32) -> u32 {
    let mut r = 0;
    for i in 0..8 {
        if lut >> i & 1 == 1 {
            let ma = if i & 4 != 0 { a } else { !a };
            let mb = if i & 2 != 0 { b } else { !b };
            let mc = if i & 1 != 0 { c } else { !c };
            r |= ma & mb & mc;
        }
    }
    r
}

fn imm(d: &Decoded, i: usize) -> R<i64> {
    match op(d, i)?.kind {
        OperandKind::Int(v) => Ok(v),
        _ => invalid(d, &format!("operand {i} is not an immediate")),
    }
}

fn lop3(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["LUT"])?;
    // [pd, d, a, b, c, lut, pin]
    let a = cx.src(d, op(d, 2)?)?;
    let b = cx.src(d, op(d, 3)?)?;
    let c = cx.src(d, op(d, 4)?)?;
    let lut = imm(d, 5)? as u32 & 0xff;
    let r = lut3(lut, a, b, c);
    let pd = op(d, 0)?;
    let pd_used = !matches!(pd.kind, OperandKind::Reg(r) if r.is_zero_or_true());
    if pd_used {
        let pin = cx.pred(d, op(d, 6)?)?;
        if pin {
            return unimpl(d, "LOP3 with a true predicate input");
        }
        cx.set_pred(d, pd, r != 0)?;
    }
    cx.set(d, op(d, 1)?, r)
}

fn plop3(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["LUT"])?;
    let srcs: Vec<&Operand> = (2..5).map(|i| op(d, i)).collect::<R<_>>()?;
    let mut v = [false; 3];
    for (k, o) in srcs.iter().enumerate() {
        match o.kind {
            OperandKind::Reg(r)
                if matches!(
                    r.file,
                    ptxc::target::sm90a::RegFile::Pred | ptxc::target::sm90a::RegFile::UPred
                ) =>
            {
                v[k] = cx.pred(d, o)?
            }
            OperandKind::Reg(r) if o.suffix == ["SIGN"] => {
                v[k] = (cx.reg(r) >> 31 == 1) != o.not;
            }
            _ => return invalid(d, "PLOP3 source"),
        }
    }
    let idx = (usize::from(v[0]) << 2) | (usize::from(v[1]) << 1) | usize::from(v[2]);
    let l1 = imm(d, 5)? as u32;
    let l2 = imm(d, 6)? as u32;
    let r1 = l1 >> idx & 1 == 1;
    let r2 = l2 >> idx & 1 == 1;
    cx.set_pred(d, op(d, 0)?, r1)?;
    cx.set_pred(d, op(d, 1)?, r2)
}

fn shf(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["L", "R", "W", "S64", "U64", "S32", "U32", "HI"])?;
    let left = d.has("L");
    let wrap = d.has("W");
    let hi = d.has("HI");
    let signed = d.has("S32") || d.has("S64");
    let w: u32 = if d.has("S64") || d.has("U64") { 64 } else { 32 };
    let a = cx.src(d, op(d, 1)?)?;
    let n = cx.src(d, op(d, 2)?)?;
    let c = cx.src(d, op(d, 3)?)?;
    let n = if wrap { n & (w - 1) } else { n.min(w) };
    let v = u64::from(c) << 32 | u64::from(a);
    let r: u64 = if left {
        ((u128::from(v) << n) & u128::from(u64::MAX)) as u64
    } else if signed {
        ((v as i64) >> n.min(63)) as u64
    } else if n >= 64 {
        0
    } else {
        v >> n
    };
    let out = if hi { (r >> 32) as u32 } else { r as u32 };
    cx.set(d, op(d, 0)?, out)
}

fn prmt(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["F4E", "B4E", "RC8", "ECL", "ECR", "RC16"])?;
    let a = cx.src(d, op(d, 1)?)?;
    let sel = cx.src(d, op(d, 2)?)?;
    let c = cx.src(d, op(d, 3)?)?;
    let bytes = (u64::from(c) << 32 | u64::from(a)).to_le_bytes();
    let s = sel & 3;
    let mut out = [0u8; 4];
    for (i, o) in out.iter_mut().enumerate() {
        let i = i as u32;
        let idx = if d.has("F4E") {
            (s + i) & 7
        } else if d.has("B4E") {
            (s.wrapping_sub(i)) & 7
        } else if d.has("RC8") {
            s
        } else if d.has("ECL") {
            i.max(s)
        } else if d.has("ECR") {
            i.min(s)
        } else if d.has("RC16") {
            2 * (s & 1) + (i & 1)
        } else {
            let nib = sel >> (4 * i) & 0xf;
            let b = bytes[(nib & 7) as usize];
            *o = if nib & 8 != 0 {
                if b & 0x80 != 0 { 0xff } else { 0 }
            } else {
                b
            };
            continue;
        };
        *o = bytes[idx as usize];
    }
    cx.set(d, op(d, 0)?, u32::from_le_bytes(out))
}

fn sel(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &[])?;
    let p = cx.pred(d, op(d, 3)?)?;
    let ao = op(d, 1)?;
    let bo = op(d, 2)?;
    if d.instr.mnemonic == "FSEL" && (ao.neg || ao.abs || bo.neg || bo.abs) {
        return unimpl(d, "FSEL with operand modifiers");
    }
    let v = if p { cx.src(d, ao)? } else { cx.src(d, bo)? };
    cx.set(d, op(d, 0)?, v)
}

/// Combines a comparison with the predicate input (`.AND/.OR/.XOR`).
pub(super) fn bop(d: &Decoded, r: bool, p: bool) -> R<bool> {
    if d.has("AND") {
        Ok(r && p)
    } else if d.has("OR") {
        Ok(r || p)
    } else if d.has("XOR") {
        Ok(r != p)
    } else {
        unimpl(d, "no boolean operation")
    }
}

fn isetp(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(
        d,
        &[
            "F", "LT", "EQ", "LE", "GT", "NE", "GE", "T", "U32", "AND", "OR", "XOR", "EX",
        ],
    )?;
    let unsigned = d.has("U32");
    let a = cx.src(d, op(d, 2)?)?;
    let b = cx.src(d, op(d, 3)?)?;
    let pin = cx.pred(d, op(d, 4)?)?;
    let ord = if unsigned {
        a.cmp(&b)
    } else {
        (a as i32).cmp(&(b as i32))
    };
    use std::cmp::Ordering::*;
    let r = if d.has("EX") {
        let ex = cx.pred(d, op(d, 5)?)?;
        if d.has("LT") || d.has("LE") {
            ord == Less || (ord == Equal && ex)
        } else if d.has("GT") || d.has("GE") {
            ord == Greater || (ord == Equal && ex)
        } else if d.has("EQ") {
            ord == Equal && ex
        } else if d.has("NE") {
            ord != Equal || ex
        } else {
            d.has("T")
        }
    } else if d.has("LT") {
        ord == Less
    } else if d.has("LE") {
        ord != Greater
    } else if d.has("GT") {
        ord == Greater
    } else if d.has("GE") {
        ord != Less
    } else if d.has("EQ") {
        ord == Equal
    } else if d.has("NE") {
        ord != Equal
    } else {
        d.has("T")
    };
    let p1 = bop(d, r, pin)?;
    let p2 = bop(d, !r, pin)?;
    cx.set_pred(d, op(d, 0)?, p1)?;
    cx.set_pred(d, op(d, 1)?, p2)
}

fn flo(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["U32", "SH"])?;
    // [d, pd, a]
    let o = op(d, 2)?;
    let a = not_if(cx.src(d, o)?, o);
    let v = if d.has("U32") {
        a
    } else if (a as i32) < 0 {
        !a
    } else {
        a
    };
    let r = if v == 0 {
        u32::MAX
    } else {
        let pos = 31 - v.leading_zeros();
        if d.has("SH") { 31 - pos } else { pos }
    };
    let pd = op(d, 1)?;
    if !matches!(pd.kind, OperandKind::Reg(r) if r.is_zero_or_true()) {
        return unimpl(d, "FLO with a predicate output");
    }
    cx.set(d, op(d, 0)?, r)
}

fn sgxt(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["W", "U32"])?;
    let a = cx.src(d, op(d, 1)?)?;
    let n = cx.src(d, op(d, 2)?)?;
    let n = if d.has("W") { n & 31 } else { n.min(32) };
    let r = if n == 0 {
        0
    } else if n == 32 {
        a
    } else if d.has("U32") {
        a & ((1u32 << n) - 1)
    } else {
        (((a << (32 - n)) as i32) >> (32 - n)) as u32
    };
    cx.set(d, op(d, 0)?, r)
}

fn bmsk(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["W"])?;
    let a = cx.src(d, op(d, 1)?)?;
    let b = cx.src(d, op(d, 2)?)?;
    let (a, b) = if d.has("W") {
        (a & 31, b & 31)
    } else {
        (a.min(32), b.min(32))
    };
    let m = ((1u64 << b) - 1) << a;
    cx.set(d, op(d, 0)?, m as u32)
}

fn vimnmx(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["U32", "RELU"])?;
    let a = cx.src(d, op(d, 1)?)?;
    let b = cx.src(d, op(d, 2)?)?;
    let min = cx.pred(d, op(d, 3)?)?;
    let r = if d.has("U32") {
        if min { a.min(b) } else { a.max(b) }
    } else {
        let (a, b) = (a as i32, b as i32);
        let mut r = if min { a.min(b) } else { a.max(b) };
        if d.has("RELU") {
            r = r.max(0);
        }
        r as u32
    };
    if d.has("RELU") && d.has("U32") {
        return unimpl(d, "unsigned RELU");
    }
    cx.set(d, op(d, 0)?, r)
}

fn idp(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["4A", "2A", "LO", "HI", "U8", "S8", "U16", "S16"])?;
    let mods = d.mods();
    let a = cx.src(d, op(d, 1)?)?;
    let b = cx.src(d, op(d, 2)?)?;
    let co = op(d, 3)?;
    let c = neg_if(cx.src(d, co)?, co);
    let ext = |v: u32, bits: u32, signed: bool| -> i64 {
        if signed {
            i64::from(((v << (32 - bits)) as i32) >> (32 - bits))
        } else {
            i64::from(v & ((1u32 << (bits - 1)) * 2 - 1))
        }
    };
    let mut acc = i64::from(c as i32);
    if d.has("4A") {
        // IDP.4A.<atype>.<btype>
        let ta = mods.get(1).copied().unwrap_or("");
        let tb = mods.get(2).copied().unwrap_or("");
        for i in 0..4 {
            acc += ext(a >> (8 * i), 8, ta == "S8") * ext(b >> (8 * i), 8, tb == "S8");
        }
    } else {
        // IDP.2A.{LO|HI}.<a: 16-bit>.<b: 8-bit>
        let ta = mods.get(2).copied().unwrap_or("");
        let tb = mods.get(3).copied().unwrap_or("");
        let sel = if d.has("HI") { 2 } else { 0 };
        for i in 0..2 {
            acc += ext(a >> (16 * i), 16, ta == "S16") * ext(b >> (8 * (sel + i)), 8, tb == "S8");
        }
    }
    cx.set(d, op(d, 0)?, acc as u32)
}

fn i2ip(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["U8", "S8", "U16", "S16", "S32", "SAT"])?;
    if !d.has("SAT") {
        return unimpl(d, "I2IP without .SAT");
    }
    let a = cx.src(d, op(d, 1)?)? as i32;
    let b = cx.src(d, op(d, 2)?)? as i32;
    let co = op(d, 3)?;
    if !co.suffix.is_empty() {
        return unimpl(d, "I2IP merging into the high half");
    }
    let c = cx.src(d, co)?;
    let (lo, hi, bits) = if d.has("U8") {
        (0, 255, 8)
    } else if d.has("S8") {
        (-128, 127, 8)
    } else if d.has("U16") {
        (0, 65535, 16)
    } else {
        (-32768, 32767, 16)
    };
    let m = (1u32 << bits) - 1;
    let sa = a.clamp(lo, hi) as u32 & m;
    let sb = b.clamp(lo, hi) as u32 & m;
    let r = if bits == 8 {
        (c & 0xffff) << 16 | sa << 8 | sb
    } else {
        sa << 16 | sb
    };
    cx.set(d, op(d, 0)?, r)
}
