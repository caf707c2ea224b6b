//! Floating-point instructions: FADD/FMUL/FFMA/FSETP/FMNMX/FRND/MUFU/FCHK, DADD/DMUL/DFMA/
//! DSETP, the packed half instructions (HADD2/HMUL2/HFMA2/HSET2/HMNMX2, f16 and bf16), and the
//! conversions (F2I, F2F, I2F, I2FP, F2FP).

use super::alu::bop;
use super::{Cx, Flow, R, allow, invalid, op, unimpl};
use crate::fp::{self, Cmp, Fmt, Pack, Round, Val};
use crate::program::Decoded;
use ptxc::target::sm90a::{Operand, OperandKind};

/// Executes `m` if it is a floating-point instruction.
pub(super) fn exec(m: &str, d: &Decoded, cx: &mut Cx) -> R<Option<Flow>> {
    match m {
        "FADD" | "FMUL" | "FFMA" => f32_arith(m, d, cx)?,
        "FSETP" => fsetp(d, cx)?,
        "FMNMX" => fmnmx(d, cx)?,
        "FRND" => frnd(d, cx)?,
        "MUFU" => mufu(d, cx)?,
        "FCHK" => fchk(d, cx)?,
        "DADD" | "DMUL" | "DFMA" => f64_arith(m, d, cx)?,
        "DSETP" => dsetp(d, cx)?,
        "HADD2" | "HMUL2" | "HFMA2" => h2_arith(m, d, cx)?,
        "HSET2" => hset2(d, cx)?,
        "HMNMX2" => hmnmx2(d, cx)?,
        "F2I" => f2i(d, cx)?,
        "F2F" => f2f(d, cx)?,
        "I2F" => i2f(d, cx)?,
        "I2FP" => i2fp(d, cx)?,
        "F2FP" => f2fp(d, cx)?,
        _ => return Ok(None),
    }
    Ok(Some(Flow::Next))
}

fn round_of(d: &Decoded) -> Round {
    if d.has("RZ") || d.has("TRUNC") {
        Round::Rz
    } else if d.has("RM") || d.has("FLOOR") {
        Round::Rm
    } else if d.has("RP") || d.has("CEIL") {
        Round::Rp
    } else {
        Round::Rn
    }
}

/// Applies `|x|` then `-x`.
fn modify(v: Val, o: &Operand) -> Val {
    let v = if o.abs { v.abs() } else { v };
    if o.neg { v.negate() } else { v }
}

/// An f32 source with its modifiers (subnormals flushed with `ftz`).
fn f32src(cx: &Cx, d: &Decoded, o: &Operand, ftz: bool) -> R<Val> {
    let bits = cx.src(d, o)?;
    Ok(modify(fp::u32v(bits, ftz), o))
}

fn f64src(cx: &Cx, d: &Decoded, o: &Operand) -> R<Val> {
    let bits = cx.src64(d, o)?;
    Ok(modify(fp::u64v(bits), o))
}

/// `.SAT`: clamp to [0, 1], NaN to +0.
fn saturate(v: Val) -> Val {
    match v {
        Val::Nan => Val::Zero(false),
        _ => {
            if fp::compare(v, Val::Zero(false)) != Cmp::Gt {
                Val::Zero(false)
            } else if fp::compare(v, fp::from_f64(1.0)) == Cmp::Gt {
                fp::from_f64(1.0)
            } else {
                v
            }
        }
    }
}

fn f32_arith(m: &str, d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(
        d,
        &[
            "FTZ", "FMZ", "RM", "RP", "RZ", "SAT", "D2", "D4", "D8", "M2", "M4", "M8",
        ],
    )?;
    for s in ["D2", "D4", "D8", "M2", "M4", "M8"] {
        if d.has(s) {
            return unimpl(d, "FMUL scaling");
        }
    }
    let ftz = d.has("FTZ") || d.has("FMZ");
    let r = round_of(d);
    let a = f32src(cx, d, op(d, 1)?, ftz)?;
    let b = f32src(cx, d, op(d, 2)?, ftz)?;
    let fmz = |x: Val, y: Val| -> bool {
        d.has("FMZ") && (matches!(x, Val::Zero(_)) || matches!(y, Val::Zero(_)))
    };
    let v = match m {
        "FADD" => fp::add(a, b, r),
        "FMUL" => {
            if fmz(a, b) {
                Val::Zero(a.neg() != b.neg())
            } else {
                fp::mul(a, b)
            }
        }
        _ => {
            let c = f32src(cx, d, op(d, 3)?, ftz)?;
            if fmz(a, b) {
                fp::add(Val::Zero(a.neg() != b.neg()), c, r)
            } else {
                fp::fma(a, b, c, r)
            }
        }
    };
    let v = if d.has("SAT") { saturate(v) } else { v };
    let bits = fp::f32_bits(v, Pack::new(r, ftz));
    cx.set(d, op(d, 0)?, bits)
}

/// A floating-point comparison by name (`LT`, `GEU`, `NAN`, …).
fn fcmp(d: &Decoded, c: Cmp) -> R<bool> {
    let unord = c == Cmp::Unordered;
    for (name, f) in [
        ("F", false),
        ("T", true),
        ("LT", c == Cmp::Lt),
        ("EQ", c == Cmp::Eq),
        ("LE", c == Cmp::Lt || c == Cmp::Eq),
        ("GT", c == Cmp::Gt),
        ("NE", c == Cmp::Lt || c == Cmp::Gt),
        ("GE", c == Cmp::Gt || c == Cmp::Eq),
        ("NUM", !unord),
        ("NAN", unord),
        ("LTU", unord || c == Cmp::Lt),
        ("EQU", unord || c == Cmp::Eq),
        ("LEU", unord || c == Cmp::Lt || c == Cmp::Eq),
        ("GTU", unord || c == Cmp::Gt),
        ("NEU", unord || c != Cmp::Eq),
        ("GEU", unord || c == Cmp::Gt || c == Cmp::Eq),
    ] {
        if d.has(name) {
            return Ok(f);
        }
    }
    unimpl(d, "comparison")
}

const FCMPS: [&str; 16] = [
    "F", "T", "LT", "EQ", "LE", "GT", "NE", "GE", "NUM", "NAN", "LTU", "EQU", "LEU", "GTU", "NEU",
    "GEU",
];

fn fsetp(d: &Decoded, cx: &mut Cx) -> R<()> {
    let mut ok: Vec<&str> = FCMPS.to_vec();
    ok.extend(["FTZ", "AND", "OR", "XOR"]);
    allow(d, &ok)?;
    let ftz = d.has("FTZ");
    let a = f32src(cx, d, op(d, 2)?, ftz)?;
    let b = f32src(cx, d, op(d, 3)?, ftz)?;
    let pin = cx.pred(d, op(d, 4)?)?;
    let r = fcmp(d, fp::compare(a, b))?;
    let (p1, p2) = (bop(d, r, pin)?, bop(d, !r, pin)?);
    cx.set_pred(d, op(d, 0)?, p1)?;
    cx.set_pred(d, op(d, 1)?, p2)
}

fn fmnmx(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["FTZ", "NAN"])?;
    let ftz = d.has("FTZ");
    let a = f32src(cx, d, op(d, 1)?, ftz)?;
    let b = f32src(cx, d, op(d, 2)?, ftz)?;
    let min = cx.pred(d, op(d, 3)?)?;
    let v = fp::minmax(a, b, !min, d.has("NAN"));
    cx.set(d, op(d, 0)?, fp::f32_bits(v, Pack::new(Round::Rn, ftz)))
}

fn frnd(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["FTZ", "FLOOR", "CEIL", "TRUNC"])?;
    let ftz = d.has("FTZ");
    let a = f32src(cx, d, op(d, 1)?, ftz)?;
    let v = fp::round_to_int(a, round_of(d));
    cx.set(d, op(d, 0)?, fp::f32_bits(v, Pack::new(Round::Rn, ftz)))
}

fn mufu(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(
        d,
        &[
            "COS", "SIN", "EX2", "LG2", "RCP", "RSQ", "RCP64H", "RSQ64H", "SQRT", "TANH",
        ],
    )?;
    let name = d.mods().first().copied().unwrap_or("");
    cx.env.stats.approximations.insert(format!("MUFU.{name}"));
    let o = op(d, 1)?;
    if name == "RCP64H" || name == "RSQ64H" {
        // The operand is the high word of an f64 whose low word is taken as zero; the result
        // is the high word of the approximation.
        let hi = cx.src(d, o)?;
        let x = modify(fp::u64v(u64::from(hi) << 32), o);
        let x = fp::to_f64(x);
        let y = if name == "RCP64H" {
            1.0 / x
        } else {
            1.0 / x.sqrt()
        };
        let bits = if y.is_nan() {
            0x7fff_ffff_ffff_ffff
        } else {
            y.to_bits()
        };
        return cx.set(d, op(d, 0)?, (bits >> 32) as u32);
    }
    let x = fp::to_f64(f32src(cx, d, o, false)?);
    let y = match name {
        "RCP" => 1.0 / x,
        "RSQ" => 1.0 / x.sqrt(),
        "SQRT" => x.sqrt(),
        "EX2" => x.exp2(),
        "LG2" => x.log2(),
        "SIN" => (x * std::f64::consts::TAU).sin(),
        "COS" => (x * std::f64::consts::TAU).cos(),
        "TANH" => x.tanh(),
        _ => return unimpl(d, "MUFU function"),
    };
    let bits = fp::f32_bits(fp::from_f64(y), Pack::RN);
    cx.set(d, op(d, 0)?, bits)
}

/// FCHK: whether the fast division `a / b` might be inaccurate. Conservative: every pair that
/// is not comfortably inside the normal range takes the slow path (which computes the same
/// correctly rounded quotient).
fn fchk(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["DIVIDE"])?;
    let a = cx.src(d, op(d, 1)?)?;
    let b = cx.src(d, op(d, 2)?)?;
    let (ao, bo) = (op(d, 1)?, op(d, 2)?);
    if ao.neg || ao.abs || bo.neg || bo.abs {
        return unimpl(d, "FCHK with operand modifiers");
    }
    let ea = (a >> 23 & 0xff) as i32 - 127;
    let eb = (b >> 23 & 0xff) as i32 - 127;
    let normal = |e: i32| (-100..=100).contains(&e);
    let fast = normal(ea) && normal(eb) && (ea - eb).abs() <= 100;
    cx.set_pred(d, op(d, 0)?, !fast)
}

fn f64_arith(m: &str, d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["RM", "RP", "RZ"])?;
    let r = round_of(d);
    let a = f64src(cx, d, op(d, 1)?)?;
    let b = f64src(cx, d, op(d, 2)?)?;
    let v = match m {
        "DADD" => fp::add(a, b, r),
        "DMUL" => fp::mul(a, b),
        _ => fp::fma(a, b, f64src(cx, d, op(d, 3)?)?, r),
    };
    cx.set64(d, op(d, 0)?, fp::f64_bits(v, Pack::new(r, false)))
}

fn dsetp(d: &Decoded, cx: &mut Cx) -> R<()> {
    let mut ok: Vec<&str> = FCMPS.to_vec();
    ok.extend(["AND", "OR", "XOR"]);
    allow(d, &ok)?;
    let a = f64src(cx, d, op(d, 2)?)?;
    let b = f64src(cx, d, op(d, 3)?)?;
    let pin = cx.pred(d, op(d, 4)?)?;
    let r = fcmp(d, fp::compare(a, b))?;
    let (p1, p2) = (bop(d, r, pin)?, bop(d, !r, pin)?);
    cx.set_pred(d, op(d, 0)?, p1)?;
    cx.set_pred(d, op(d, 1)?, p2)
}

// ---------------------------------------------------------------------------------------------
// Packed halves.

fn hfmt(d: &Decoded) -> Fmt {
    if d.has("BF16_V2") { fp::BF16 } else { fp::F16 }
}

/// The two lanes (low, high) of a packed-half source, after its swizzle suffix and modifiers.
fn h2src(cx: &Cx, d: &Decoded, o: &Operand, f: Fmt, ftz: bool) -> R<[Val; 2]> {
    let bits = cx.src(d, o)?;
    let lanes = match o.suffix.first().copied() {
        None => [bits & 0xffff, bits >> 16],
        Some("H0_H0") => [bits & 0xffff, bits & 0xffff],
        Some("H1_H1") => [bits >> 16, bits >> 16],
        Some("F32") => {
            let v = modify(fp::u32v(bits, ftz), o);
            return Ok([v, v]);
        }
        Some(s) => return unimpl(d, &format!("operand swizzle .{s}")),
    };
    Ok(lanes.map(|l| modify(fp::unpack(u64::from(l), f, ftz), o)))
}

fn pack2(v: [u64; 2]) -> u32 {
    (v[0] as u32 & 0xffff) | (v[1] as u32) << 16
}

fn h2_arith(m: &str, d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["BF16_V2", "F32", "FTZ", "FMZ", "SAT", "MMA"])?;
    if d.has("F32") {
        return unimpl(d, "packed-half arithmetic with an f32 result");
    }
    if d.has("FMZ") {
        return unimpl(d, "packed-half .FMZ");
    }
    let f = hfmt(d);
    let ftz = d.has("FTZ");
    let a = h2src(cx, d, op(d, 1)?, f, ftz)?;
    let b = h2src(cx, d, op(d, 2)?, f, ftz)?;
    let c: [Val; 2] = if m == "HFMA2" {
        if d.ops.len() == 5 {
            // HFMA2.MMA with two immediates: the first printed is the high half.
            let hi = cx.src(d, op(d, 3)?)?;
            let lo = cx.src(d, op(d, 4)?)?;
            [
                fp::unpack(u64::from(lo), f, ftz),
                fp::unpack(u64::from(hi), f, ftz),
            ]
        } else {
            h2src(cx, d, op(d, 3)?, f, ftz)?
        }
    } else {
        [Val::Zero(true), Val::Zero(true)]
    };
    let mut out = [0u64; 2];
    for i in 0..2 {
        let v = match m {
            "HADD2" => fp::add(a[i], b[i], Round::Rn),
            "HMUL2" => fp::mul(a[i], b[i]),
            _ => fp::fma(a[i], b[i], c[i], Round::Rn),
        };
        let v = if d.has("SAT") { saturate(v) } else { v };
        out[i] = fp::pack(v, f, Pack::new(Round::Rn, ftz));
    }
    cx.set(d, op(d, 0)?, pack2(out))
}

fn hset2(d: &Decoded, cx: &mut Cx) -> R<()> {
    let mut ok: Vec<&str> = FCMPS.to_vec();
    ok.extend(["BF16_V2", "BF", "FTZ", "AND", "OR", "XOR"]);
    allow(d, &ok)?;
    let f = hfmt(d);
    let ftz = d.has("FTZ");
    let a = h2src(cx, d, op(d, 1)?, f, ftz)?;
    let b = h2src(cx, d, op(d, 2)?, f, ftz)?;
    let pin = cx.pred(d, op(d, 3)?)?;
    let one = fp::pack(fp::from_f64(1.0), f, Pack::RN);
    let mut out = [0u64; 2];
    for i in 0..2 {
        let r = bop(d, fcmp(d, fp::compare(a[i], b[i]))?, pin)?;
        out[i] = match (r, d.has("BF")) {
            (true, true) => one,
            (true, false) => 0xffff,
            (false, _) => 0,
        };
    }
    cx.set(d, op(d, 0)?, pack2(out))
}

fn hmnmx2(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["BF16_V2", "FTZ", "NAN"])?;
    let f = hfmt(d);
    let ftz = d.has("FTZ");
    let a = h2src(cx, d, op(d, 1)?, f, ftz)?;
    let b = h2src(cx, d, op(d, 2)?, f, ftz)?;
    let min = cx.pred(d, op(d, 3)?)?;
    let mut out = [0u64; 2];
    for i in 0..2 {
        let v = fp::minmax(a[i], b[i], !min, d.has("NAN"));
        out[i] = fp::pack(v, f, Pack::new(Round::Rn, ftz));
    }
    cx.set(d, op(d, 0)?, pack2(out))
}

// ---------------------------------------------------------------------------------------------
// Conversions.

fn f2i(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(
        d,
        &[
            "FTZ", "U8", "S8", "U16", "S16", "U32", "S32", "U64", "S64", "F64", "FLOOR", "CEIL",
            "TRUNC", "NTZ",
        ],
    )?;
    let ftz = d.has("FTZ");
    let o = op(d, 1)?;
    let v = if d.has("F64") {
        f64src(cx, d, o)?
    } else {
        f32src(cx, d, o, ftz)?
    };
    let (signed, bits) = if d.has("U8") {
        (false, 8)
    } else if d.has("S8") {
        (true, 8)
    } else if d.has("U16") {
        (false, 16)
    } else if d.has("S16") {
        (true, 16)
    } else if d.has("U32") {
        (false, 32)
    } else if d.has("U64") {
        (false, 64)
    } else if d.has("S64") {
        (true, 64)
    } else {
        (true, 32)
    };
    let r = fp::to_int(v, round_of(d), signed, bits);
    if bits == 64 {
        cx.set64(d, op(d, 0)?, r)
    } else {
        // Narrow results are sign- or zero-extended to 32 bits.
        let r = if signed && bits < 32 {
            ((r << (64 - bits)) as i64 >> (64 - bits)) as u32
        } else {
            r as u32
        };
        cx.set(d, op(d, 0)?, r)
    }
}

fn f2f(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["FTZ", "F64", "F32", "F16", "BF16", "RM", "RP", "RZ"])?;
    let ftz = d.has("FTZ");
    let mods = d.mods();
    let types: Vec<&str> = mods
        .iter()
        .copied()
        .filter(|m| matches!(*m, "F64" | "F32" | "F16" | "BF16"))
        .collect();
    let (dst, srct) = match types.as_slice() {
        [a, b] => (*a, *b),
        _ => return invalid(d, "conversion types"),
    };
    let o = op(d, 1)?;
    let v = match srct {
        "F64" => f64src(cx, d, o)?,
        "F32" => f32src(cx, d, o, ftz)?,
        _ => {
            let bits = cx.src(d, o)?;
            modify(fp::unpack(u64::from(bits & 0xffff), fp::F16, ftz), o)
        }
    };
    let p = Pack::new(round_of(d), ftz);
    match dst {
        "F64" => cx.set64(d, op(d, 0)?, fp::pack(v, fp::F64, p)),
        "F32" => cx.set(d, op(d, 0)?, fp::pack(v, fp::F32, p) as u32),
        // `F2F.BF16.F32` (ptxas -g's `cvt.rn.bf16.f32`): the bf16 in the low half, as F16.
        "BF16" => cx.set(d, op(d, 0)?, fp::pack(v, fp::BF16, p) as u32),
        _ => cx.set(d, op(d, 0)?, fp::pack(v, fp::F16, p) as u32),
    }
}

fn i2f(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(
        d,
        &[
            "F64", "U8", "S8", "U16", "S16", "U32", "S32", "U64", "S64", "RM", "RP", "RZ",
        ],
    )?;
    let o = op(d, 1)?;
    let x: i128 = if d.has("U64") || d.has("S64") {
        let v = cx.src64(d, o)?;
        if d.has("S64") {
            i128::from(v as i64)
        } else {
            i128::from(v)
        }
    } else {
        let v = cx.src(d, o)?;
        if d.has("U8") {
            i128::from(v as u8)
        } else if d.has("S8") {
            i128::from(v as u8 as i8)
        } else if d.has("U16") {
            i128::from(v as u16)
        } else if d.has("S16") {
            i128::from(v as u16 as i16)
        } else if d.has("U32") {
            i128::from(v)
        } else {
            i128::from(v as i32)
        }
    };
    let v = Val::from_i128(x);
    let p = Pack::new(round_of(d), false);
    if d.has("F64") {
        cx.set64(d, op(d, 0)?, fp::pack(v, fp::F64, p))
    } else {
        cx.set(d, op(d, 0)?, fp::pack(v, fp::F32, p) as u32)
    }
}

fn i2fp(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["F32", "U32", "S32", "RM", "RP", "RZ"])?;
    let a = cx.src(d, op(d, 1)?)?;
    let x = if d.has("U32") {
        i128::from(a)
    } else {
        i128::from(a as i32)
    };
    let bits = fp::pack(Val::from_i128(x), fp::F32, Pack::new(round_of(d), false));
    cx.set(d, op(d, 0)?, bits as u32)
}

fn f2fp(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(
        d,
        &[
            "SATFINITE",
            "RELU",
            "F16",
            "BF16",
            "E5M2",
            "E4M3",
            "F32",
            "PACK_AB",
            "PACK_AB_MERGE_C",
            "UNPACK_B",
        ],
    )?;
    if d.has("UNPACK_B") {
        // Two FP8 values in the low bytes become an f16x2 (exact).
        let f = if d.has("E4M3") { fp::E4M3 } else { fp::E5M2 };
        let a = cx.src(d, op(d, 1)?)?;
        let lo = fp::pack(fp::unpack(u64::from(a & 0xff), f, false), fp::F16, Pack::RN);
        let hi = fp::pack(
            fp::unpack(u64::from(a >> 8 & 0xff), f, false),
            fp::F16,
            Pack::RN,
        );
        return cx.set(d, op(d, 0)?, pack2([lo, hi]));
    }
    let (f, bits) = if d.has("F16") {
        (fp::F16, 16)
    } else if d.has("BF16") {
        (fp::BF16, 16)
    } else if d.has("E4M3") {
        (fp::E4M3, 8)
    } else {
        (fp::E5M2, 8)
    };
    let p = Pack {
        round: Round::Rn,
        ftz: false,
        satfinite: d.has("SATFINITE"),
    };
    let conv = |v: Val| -> u32 {
        let v = if d.has("RELU") && !v.is_nan() && v.neg() {
            Val::Zero(false)
        } else {
            v
        };
        fp::pack(v, f, p) as u32
    };
    let a = conv(f32src(cx, d, op(d, 1)?, false)?);
    let b = conv(f32src(cx, d, op(d, 2)?, false)?);
    let packed = a << bits | b;
    let r = if d.has("PACK_AB_MERGE_C") {
        let co = op(d, 3)?;
        if !co.suffix.is_empty() {
            return unimpl(d, "merging into the high half");
        }
        match co.kind {
            OperandKind::Reg(r) if r.is_zero_or_true() => packed,
            _ => return unimpl(d, "merging with a non-zero register"),
        }
    } else {
        packed
    };
    cx.set(d, op(d, 0)?, r)
}
