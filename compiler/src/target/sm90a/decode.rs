//! Decoding: find the form whose fixed bits match, extract its fields, and build the canonical
//! [`Instr`] (nvdisasm's aliases and left-out defaults).

use super::bits::{Field, diff_ranges, fmt_ranges, sign_extend};
use super::encode::vals_of;
use super::form::*;
use super::model::*;
use super::tables::tables;
use std::fmt;

/// Why a word could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// No form has this 12-bit opcode.
    UnknownOpcode { opcode: u16, words: [u64; 2] },
    /// Forms have the opcode, but none matches: the closest one and why.
    NoMatch {
        opcode: u16,
        words: [u64; 2],
        closest: String,
        reason: String,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnknownOpcode { opcode, words } => write!(
                f,
                "no form for opcode 0x{opcode:03x} (0x{:016x} 0x{:016x})",
                words[0], words[1]
            ),
            DecodeError::NoMatch {
                opcode,
                words,
                closest,
                reason,
            } => write!(
                f,
                "opcode 0x{opcode:03x} (0x{:016x} 0x{:016x}): no form matches; closest {closest}: {reason}",
                words[0], words[1]
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes an instruction at address 0.
pub fn decode(w: [u64; 2]) -> Result<Instr, DecodeError> {
    decode_at(w, 0)
}

/// Decodes an instruction at `addr` (branch targets are absolute).
pub fn decode_at(w: [u64; 2], addr: u64) -> Result<Instr, DecodeError> {
    decode_with_form(w, addr).map(|(_, i)| i)
}

/// Decodes an instruction and says which form matched.
pub fn decode_with_form(w: [u64; 2], addr: u64) -> Result<(&'static Form, Instr), DecodeError> {
    let t = tables();
    let opcode = (w[0] & 0xfff) as u16;
    let ids = t.by_opcode(opcode);
    if ids.is_empty() {
        return Err(DecodeError::UnknownOpcode { opcode, words: w });
    }
    let mut closest: Option<(usize, String, String)> = None;
    for &id in ids {
        let f = &t.forms[id];
        let fixed = [w[0] & f.mask[0], w[1] & f.mask[1]];
        if fixed != f.base {
            let d = diff_ranges(&fixed, &f.base);
            let n: usize = d.iter().map(|(a, b)| (b - a) as usize + 1).sum();
            if closest.as_ref().is_none_or(|(m, _, _)| n < *m) {
                closest = Some((
                    n,
                    f.title(),
                    format!("fixed bits {} differ", fmt_ranges(&d)),
                ));
            }
            continue;
        }
        match build(f, &w, addr) {
            Ok(i) => return Ok((f, i)),
            Err(reason) => {
                if closest.as_ref().is_none_or(|(m, _, _)| *m > 0) {
                    closest = Some((0, f.title(), reason));
                }
            }
        }
    }
    let (_, closest, reason) = closest.unwrap_or_default();
    Err(DecodeError::NoMatch {
        opcode,
        words: w,
        closest,
        reason,
    })
}

fn name_of(names: Names, v: u64) -> Option<&'static str> {
    names
        .iter()
        .find(|(k, _)| u64::from(*k) == v)
        .map(|(_, n)| *n)
}

fn push_tokens(out: &mut Vec<&'static str>, name: &'static str) {
    if !name.is_empty() {
        out.extend(name.split('.'));
    }
}

/// Builds the canonical instruction of a form from a word whose fixed bits match.
pub(crate) fn build(f: &Form, w: &[u64; 2], addr: u64) -> Result<Instr, String> {
    let ctrl = Ctrl::from_hi(w[1]);
    let gnum = Field::new(12, 3).get(w) as u8;
    let guard = Guard {
        pred: if f.uguard { up(gnum) } else { p(gnum) },
        neg: Field::new(15, 1).get(w) == 1,
    };
    let modvals: Vec<u64> = f
        .mods
        .iter()
        .map(|m| match m {
            ModSpec::Field { f: fl, .. } => fl.get(w),
            _ => 0,
        })
        .collect();
    let vals = vals_of(f, w, &modvals);
    let mut mods = Vec::new();
    for (m, v) in f.mods.iter().zip(&modvals) {
        match m {
            ModSpec::Fixed(t) => push_tokens(&mut mods, t),
            ModSpec::Field { names, .. } => match name_of(names, *v) {
                Some(n) => push_tokens(&mut mods, n),
                None => return Err(format!("no modifier for value {v} in {names:?}")),
            },
            ModSpec::Alias { name, when } => {
                if when.holds(&vals) {
                    push_tokens(&mut mods, name);
                }
            }
        }
    }
    // Which operands are left out (from the last one, for `with_next`).
    let n = f.ops.len();
    let mut elided = vec![false; n];
    for i in (0..n).rev() {
        if let Some(e) = f.ops[i].elide {
            let v = f.ops[i].elide_value(w);
            let next_ok = !e.with_next || (i + 1 < n && elided[i + 1]);
            elided[i] = v == e.value && next_ok;
        }
    }
    let mut operands = Vec::new();
    for (i, o) in f.ops.iter().enumerate() {
        let mut op = match build_op(o, w, addr, &ctrl) {
            Ok(op) => op,
            // A left-out operand whose value has no name (GMMA's `gsb0` slot holding 7).
            Err(_) if elided[i] => Operand::new(OperandKind::Int(o.elide_value(w) as i64)),
            Err(e) => return Err(e),
        };
        op.hidden = elided[i];
        operands.push(op);
    }
    Ok(Instr {
        addr,
        guard,
        mnemonic: f.mnemonic,
        mods,
        operands,
        ctrl,
    })
}

fn build_op(o: &OpSpec, w: &[u64; 2], addr: u64, ctrl: &Ctrl) -> Result<Operand, String> {
    let bit = |b: Option<u8>| b.is_some_and(|b| Field::new(b, 1).get(w) == 1);
    let kind = match &o.spec {
        Spec::Gpr(f) => OperandKind::Reg(r(f.get(w) as u8)),
        Spec::Ugpr(f) => OperandKind::Reg(ur(f.get(w) as u8)),
        Spec::Pred { f, uniform, inv } => {
            let v = f.get(w) as u8;
            let v = if *inv { 7 - v } else { v };
            OperandKind::Reg(if *uniform { up(v) } else { p(v) })
        }
        Spec::Imm { f, fmt } => OperandKind::Int(match fmt {
            ImmFmt::SHex => f.get_signed(w),
            ImmFmt::UHex => f.get(w) as i64,
        }),
        Spec::Float { f, fmt } => OperandKind::FloatBits(*fmt, f.get(w)),
        Spec::CBank { bank, off, base } => OperandKind::CBank(CBank {
            bank: bank.get(w) as u32,
            base: base.map(|b| r(b.get(w) as u8)),
            offset: off.get_signed(w),
        }),
        Spec::Mem(m) => OperandKind::Mem(build_mem(m, w)?),
        Spec::SReg(f) => OperandKind::SReg(f.get(w) as u8),
        Spec::Target { f, scale, rel, reg } => {
            let v = f.get_signed(w).wrapping_mul(i64::from(*scale));
            let t = if *rel {
                (addr as i64).wrapping_add(16).wrapping_add(v)
            } else {
                v
            };
            match reg {
                Some(rf) => OperandKind::RegTarget(r(rf.get(w) as u8), t),
                None => OperandKind::Int(t),
            }
        }
        Spec::Bar(f) => OperandKind::Reg(b(f.get(w) as u8)),
        Spec::Enum { f, names } => {
            let v = f.get(w);
            match name_of(names, v) {
                Some(n) => OperandKind::Sym(n),
                None => return Err(format!("no keyword for value {v} in {names:?}")),
            }
        }
        Spec::Lit(s) => OperandKind::Sym(s),
        Spec::SbSet(f) => OperandKind::SbSet(f.get(w) as u8),
    };
    let mut suffix = Vec::new();
    for s in &o.sfx {
        let name = match s.f {
            Some(f) => match name_of(s.names, f.get(w)) {
                Some(n) => n,
                None => return Err(format!("no suffix for value {}", f.get(w))),
            },
            None => s.names[0].1,
        };
        if !name.is_empty() {
            suffix.push(name);
        }
    }
    Ok(Operand {
        kind,
        neg: bit(o.neg),
        abs: bit(o.abs),
        not: bit(o.not),
        // nvdisasm shows `.reuse` only when bit 109 is set (without it the warp may switch and
        // the operand cache is not kept); the flag stays in the control bits either way.
        reuse: ctrl.yield_ && o.reuse.is_some_and(|s| ctrl.reuse >> s & 1 == 1),
        suffix,
        hidden: false,
    })
}

fn build_mem(m: &MemSpec, w: &[u64; 2]) -> Result<Mem, String> {
    let prefix = match &m.prefix {
        PrefixSpec::None => MemPrefix::None,
        PrefixSpec::Desc(f) => MemPrefix::Desc(ur(f.get(w) as u8)),
        PrefixSpec::GDesc => MemPrefix::GDesc,
    };
    let mut terms = Vec::new();
    let mut first = None;
    let has_ur = m.terms.iter().any(|t| matches!(t.term, TermSpec::Ugpr(_)));
    for (i, t) in m.terms.iter().enumerate() {
        let sfx = match &t.sfx {
            None => None,
            Some(SfxSpec { f: None, names }) => Some(names[0].1),
            Some(SfxSpec { f: Some(f), names }) => match name_of(names, f.get(w)) {
                Some("") => None,
                Some(n) => Some(n),
                None => return Err(format!("no address suffix for value {}", f.get(w))),
            },
        };
        let (term, zero) = match &t.term {
            TermSpec::Gpr(f) => {
                let v = f.get(w) as u8;
                (MemTerm::Reg(r(v), sfx), v == 255)
            }
            TermSpec::Ugpr(f) => {
                let v = f.get(w) as u8;
                (MemTerm::Reg(ur(v), sfx), v == 63)
            }
            TermSpec::Imm(f) => {
                let v = f.get_signed(w);
                (MemTerm::Imm(v), v == 0)
            }
        };
        if i == 0 {
            first = Some(term.clone());
        }
        // A left-out RZ base keeps its scale only next to a UR (`[RZ.X4+UR4]`).
        let gpr = matches!(t.term, TermSpec::Gpr(_));
        if t.opt && zero && (sfx.is_none() || (gpr && !has_ur)) {
            continue;
        }
        terms.push(term);
    }
    if terms.is_empty() {
        terms.extend(first);
    }
    // An offset printed alone is an absolute address: unsigned (in some forms).
    if m.abs_imm
        && let [MemTerm::Imm(v)] = terms.as_mut_slice()
        && let Some(TermSpec::Imm(f)) = m
            .terms
            .iter()
            .map(|t| &t.term)
            .find(|t| matches!(t, TermSpec::Imm(_)))
    {
        *v = f.get(w) as i64;
    }
    Ok(Mem { prefix, terms })
}

/// The opcode text (`IADD3.X`) of a word, or `?` when it does not decode.
pub fn opcode_text(w: [u64; 2]) -> String {
    decode(w)
        .map(|i| i.opcode_text())
        .unwrap_or_else(|_| "?".to_string())
}

/// The sign-extended value of a field (re-exported helper for tools).
pub fn field_signed(w: &[u64; 2], pos: u8, width: u8) -> i64 {
    sign_extend(Field::new(pos, width).get(w), u32::from(width))
}
