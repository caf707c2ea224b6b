//! Constructors for common instructions, for the back end.
//!
//! Each returns an [`Instr`] with no guard, default control bits and address 0; chain
//! `.guard(..)`, `.ctrl(..)` and `.at(..)` as needed. Operands are anything that converts into an
//! [`Operand`] (registers convert directly; immediates are [`imm`]/[`fimm`]).

use super::model::*;

/// Access widths of loads and stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    U8,
    S8,
    U16,
    S16,
    B32,
    B64,
    B128,
}

impl Width {
    fn mods(self) -> &'static [&'static str] {
        match self {
            Width::U8 => &["U8"],
            Width::S8 => &["S8"],
            Width::U16 => &["U16"],
            Width::S16 => &["S16"],
            Width::B32 => &[],
            Width::B64 => &["64"],
            Width::B128 => &["128"],
        }
    }
}

fn ops<const N: usize>(o: [Operand; N]) -> Vec<Operand> {
    o.into()
}

/// `IADD3 d, a, b, c`.
pub fn iadd3(d: Reg, a: impl Into<Operand>, b: impl Into<Operand>, c: impl Into<Operand>) -> Instr {
    Instr::new("IADD3", &[], ops([d.into(), a.into(), b.into(), c.into()]))
}
/// `IMAD d, a, b, c` (signed; use [`imad_u32`] for `.U32`).
pub fn imad(d: Reg, a: impl Into<Operand>, b: impl Into<Operand>, c: impl Into<Operand>) -> Instr {
    Instr::new("IMAD", &[], ops([d.into(), a.into(), b.into(), c.into()]))
}
/// `IMAD.U32 d, a, b, c`.
pub fn imad_u32(
    d: Reg,
    a: impl Into<Operand>,
    b: impl Into<Operand>,
    c: impl Into<Operand>,
) -> Instr {
    Instr::new(
        "IMAD",
        &["U32"],
        ops([d.into(), a.into(), b.into(), c.into()]),
    )
}
/// `IMAD.WIDE(.U32) d, a, b, c` (d and c are register pairs).
pub fn imad_wide(d: Reg, a: Reg, b: impl Into<Operand>, c: Reg, unsigned: bool) -> Instr {
    let m: &[&'static str] = if unsigned {
        &["WIDE", "U32"]
    } else {
        &["WIDE"]
    };
    Instr::new("IMAD", m, ops([d.into(), a.into(), b.into(), c.into()]))
}
/// `MOV d, src` (register, UR or 32-bit immediate).
pub fn mov(d: Reg, src: impl Into<Operand>) -> Instr {
    Instr::new("MOV", &[], ops([d.into(), src.into()]))
}
/// `LOP3.LUT d, a, b, c, lut, !PT`.
pub fn lop3(
    d: Reg,
    a: impl Into<Operand>,
    b: impl Into<Operand>,
    c: impl Into<Operand>,
    lut: u8,
) -> Instr {
    Instr::new(
        "LOP3",
        &["LUT"],
        ops([
            d.into(),
            a.into(),
            b.into(),
            c.into(),
            imm(i64::from(lut)),
            Operand::from(PT).bnot(),
        ]),
    )
}
/// Integer comparisons of ISETP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Eq,
    Le,
    Gt,
    Ne,
    Ge,
}
impl Cmp {
    fn name(self) -> &'static str {
        match self {
            Cmp::Lt => "LT",
            Cmp::Eq => "EQ",
            Cmp::Le => "LE",
            Cmp::Gt => "GT",
            Cmp::Ne => "NE",
            Cmp::Ge => "GE",
        }
    }
}
/// `ISETP.<cmp>[.U32].AND p, PT, a, b, PT`.
pub fn isetp(
    cmp: Cmp,
    unsigned: bool,
    p: Reg,
    a: impl Into<Operand>,
    b: impl Into<Operand>,
) -> Instr {
    let mut m = vec![cmp.name()];
    if unsigned {
        m.push("U32");
    }
    m.push("AND");
    Instr::new(
        "ISETP",
        &m,
        ops([p.into(), PT.into(), a.into(), b.into(), PT.into()]),
    )
}
/// `FADD d, a, b`.
pub fn fadd(d: Reg, a: impl Into<Operand>, b: impl Into<Operand>) -> Instr {
    Instr::new("FADD", &[], ops([d.into(), a.into(), b.into()]))
}
/// `FMUL d, a, b`.
pub fn fmul(d: Reg, a: impl Into<Operand>, b: impl Into<Operand>) -> Instr {
    Instr::new("FMUL", &[], ops([d.into(), a.into(), b.into()]))
}
/// `FFMA d, a, b, c`.
pub fn ffma(d: Reg, a: impl Into<Operand>, b: impl Into<Operand>, c: impl Into<Operand>) -> Instr {
    Instr::new("FFMA", &[], ops([d.into(), a.into(), b.into(), c.into()]))
}
/// `LDG.E[.w] d, desc[URdesc][Ra.64+off]`.
pub fn ldg(w: Width, d: Reg, desc: Reg, a: Reg, off: i64) -> Instr {
    let mut m = vec!["E"];
    m.extend_from_slice(w.mods());
    Instr::new("LDG", &m, ops([d.into(), desc_addr(desc, a, off)]))
}
/// `STG.E[.w] desc[URdesc][Ra.64+off], src`.
pub fn stg(w: Width, desc: Reg, a: Reg, off: i64, src: Reg) -> Instr {
    let mut m = vec!["E"];
    m.extend_from_slice(w.mods());
    Instr::new("STG", &m, ops([desc_addr(desc, a, off), src.into()]))
}
/// `LDS[.w] d, [Ra+off]`.
pub fn lds(w: Width, d: Reg, a: Reg, off: i64) -> Instr {
    Instr::new("LDS", w.mods(), ops([d.into(), addr(a, off)]))
}
/// `STS[.w] [Ra+off], src`.
pub fn sts(w: Width, a: Reg, off: i64, src: Reg) -> Instr {
    Instr::new("STS", w.mods(), ops([addr(a, off), src.into()]))
}
/// `LDC[.64] d, c[bank][offset]`.
pub fn ldc(wide: bool, d: Reg, bank: u32, offset: i64) -> Instr {
    let m: &[&'static str] = if wide { &["64"] } else { &[] };
    Instr::new("LDC", m, ops([d.into(), cbank(bank, offset)]))
}
/// `ULDC[.64] d, c[bank][offset]`.
pub fn uldc(wide: bool, d: Reg, bank: u32, offset: i64) -> Instr {
    let m: &[&'static str] = if wide { &["64"] } else { &[] };
    Instr::new("ULDC", m, ops([d.into(), cbank(bank, offset)]))
}
/// `S2R d, SR_<n>` (e.g. 0x21 = SR_TID.X, 0x88 = SR_CgaCtaId).
pub fn s2r(d: Reg, sr: u8) -> Instr {
    Instr::new("S2R", &[], ops([d.into(), sreg(sr)]))
}
/// `S2UR d, SR_<n>`.
pub fn s2ur(d: Reg, sr: u8) -> Instr {
    Instr::new("S2UR", &[], ops([d.into(), sreg(sr)]))
}
/// `BRA target` (absolute address; encoded relative to the instruction's `addr`).
pub fn bra(target_addr: u64) -> Instr {
    Instr::new("BRA", &[], ops([target(target_addr)]))
}
/// `EXIT`.
pub fn exit() -> Instr {
    Instr::new("EXIT", &[], Vec::new())
}
/// `NOP`.
pub fn nop() -> Instr {
    Instr::new("NOP", &[], Vec::new())
}
/// `BAR.SYNC.DEFER_BLOCKING id`.
pub fn bar_sync(id: u8) -> Instr {
    Instr::new(
        "BAR",
        &["SYNC", "DEFER_BLOCKING"],
        ops([imm(i64::from(id))]),
    )
}
