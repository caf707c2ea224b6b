//! `.debug_frame`: DWARF call-frame information as ptxas writes it (64-bit DWARF format,
//! version 3, one CIE before every FDE, each entry padded with `DW_CFA_nop` to a multiple of
//! 8 bytes).

use super::model::{CfaOp, Cie};

const DW_CFA_ADVANCE_LOC: u8 = 0x40;
const DW_CFA_OFFSET: u8 = 0x80;
const DW_CFA_NOP: u8 = 0x00;
const DW_CFA_ADVANCE_LOC4: u8 = 0x04;
const DW_CFA_OFFSET_EXTENDED: u8 = 0x05;
const DW_CFA_RESTORE_EXTENDED: u8 = 0x06;
const DW_CFA_UNDEFINED: u8 = 0x07;
const DW_CFA_RESTORE: u8 = 0xc0;
const DW_CFA_SAME_VALUE: u8 = 0x08;
const DW_CFA_REGISTER: u8 = 0x09;
const DW_CFA_REMEMBER_STATE: u8 = 0x0a;
const DW_CFA_RESTORE_STATE: u8 = 0x0b;
const DW_CFA_DEF_CFA: u8 = 0x0c;
const DW_CFA_DEF_CFA_REGISTER: u8 = 0x0d;
const DW_CFA_DEF_CFA_OFFSET: u8 = 0x0e;
const DW_CFA_EXPRESSION: u8 = 0x10;
const DW_CFA_VAL_EXPRESSION: u8 = 0x16;

pub fn uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

pub fn sleb(out: &mut Vec<u8>, mut v: i64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if (v == 0 && b & 0x40 == 0) || (v == -1 && b & 0x40 != 0) {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let x = *self
            .b
            .get(self.at)
            .ok_or_else(|| format!("call-frame program ends early at +{:#x}", self.at))?;
        self.at += 1;
        Ok(x)
    }
    fn uleb(&mut self) -> Result<u64, String> {
        let mut r = 0u64;
        let mut shift = 0;
        loop {
            let x = self.byte()?;
            if shift >= 64 {
                return Err("LEB128 value too long".into());
            }
            r |= u64::from(x & 0x7f) << shift;
            shift += 7;
            if x & 0x80 == 0 {
                return Ok(r);
            }
        }
    }
    fn sleb(&mut self) -> Result<i64, String> {
        let mut r = 0i64;
        let mut shift = 0;
        loop {
            let x = self.byte()?;
            if shift >= 64 {
                return Err("LEB128 value too long".into());
            }
            r |= i64::from(x & 0x7f) << shift;
            shift += 7;
            if x & 0x80 == 0 {
                if shift < 64 && x & 0x40 != 0 {
                    r |= -1i64 << shift;
                }
                return Ok(r);
            }
        }
    }
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.at + n > self.b.len() {
            return Err("call-frame block runs past its entry".into());
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, String> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
}

/// Encodes call-frame instructions. `code_align` converts `AdvanceLoc4` byte distances.
/// Returns the bytes and, for each `ValExpression` with a relocated address, the byte offset of
/// the address in the output.
pub fn encode_ops(ops: &[CfaOp], code_align: u64, out: &mut Vec<u8>) -> Vec<usize> {
    let mut addrs = Vec::new();
    for op in ops {
        match op {
            CfaOp::AdvanceLoc4(bytes) => {
                out.push(DW_CFA_ADVANCE_LOC4);
                out.extend_from_slice(&((bytes / code_align.max(1)) as u32).to_le_bytes());
            }
            CfaOp::AdvanceLoc(d) => out.push(DW_CFA_ADVANCE_LOC | (d & 0x3f)),
            CfaOp::DefCfa { reg, offset } => {
                out.push(DW_CFA_DEF_CFA);
                uleb(out, *reg);
                uleb(out, *offset);
            }
            CfaOp::DefCfaOffset(o) => {
                out.push(DW_CFA_DEF_CFA_OFFSET);
                uleb(out, *o);
            }
            CfaOp::DefCfaRegister(r) => {
                out.push(DW_CFA_DEF_CFA_REGISTER);
                uleb(out, *r);
            }
            CfaOp::SameValue(r) => {
                out.push(DW_CFA_SAME_VALUE);
                uleb(out, *r);
            }
            CfaOp::Undefined(r) => {
                out.push(DW_CFA_UNDEFINED);
                uleb(out, *r);
            }
            CfaOp::Offset { reg, offset } => {
                if *reg < 64 {
                    out.push(DW_CFA_OFFSET | *reg as u8);
                } else {
                    out.push(DW_CFA_OFFSET_EXTENDED);
                    uleb(out, *reg);
                }
                uleb(out, *offset);
            }
            CfaOp::Register { reg, to } => {
                out.push(DW_CFA_REGISTER);
                uleb(out, *reg);
                uleb(out, *to);
            }
            CfaOp::ValExpression { reg, expr, addr_at } => {
                out.push(DW_CFA_VAL_EXPRESSION);
                uleb(out, *reg);
                uleb(out, expr.len() as u64);
                if let Some(a) = addr_at {
                    addrs.push(out.len() + a);
                }
                out.extend_from_slice(expr);
            }
            CfaOp::Expression { reg, expr } => {
                out.push(DW_CFA_EXPRESSION);
                uleb(out, *reg);
                uleb(out, expr.len() as u64);
                out.extend_from_slice(expr);
            }
            CfaOp::Restore(r) => {
                if *r < 64 {
                    out.push(DW_CFA_RESTORE | *r as u8);
                } else {
                    out.push(DW_CFA_RESTORE_EXTENDED);
                    uleb(out, *r);
                }
            }
            CfaOp::RememberState => out.push(DW_CFA_REMEMBER_STATE),
            CfaOp::RestoreState => out.push(DW_CFA_RESTORE_STATE),
            CfaOp::Nop => out.push(DW_CFA_NOP),
        }
    }
    addrs
}

/// Decodes call-frame instructions; trailing `DW_CFA_nop`s (padding) are dropped. `relocated`
/// holds offsets (relative to `b`) of relocated addresses, which mark `ValExpression::addr_at`.
pub fn decode_ops(b: &[u8], code_align: u64, relocated: &[usize]) -> Result<Vec<CfaOp>, String> {
    let mut c = Cursor { b, at: 0 };
    let mut ops = Vec::new();
    while c.at < b.len() {
        let op = c.byte()?;
        let x = match op {
            DW_CFA_NOP => CfaOp::Nop,
            DW_CFA_ADVANCE_LOC4 => CfaOp::AdvanceLoc4(u64::from(c.u32()?) * code_align.max(1)),
            DW_CFA_DEF_CFA => CfaOp::DefCfa {
                reg: c.uleb()?,
                offset: c.uleb()?,
            },
            DW_CFA_DEF_CFA_OFFSET => CfaOp::DefCfaOffset(c.uleb()?),
            DW_CFA_DEF_CFA_REGISTER => CfaOp::DefCfaRegister(c.uleb()?),
            DW_CFA_SAME_VALUE => CfaOp::SameValue(c.uleb()?),
            DW_CFA_UNDEFINED => CfaOp::Undefined(c.uleb()?),
            DW_CFA_RESTORE_EXTENDED => CfaOp::Restore(c.uleb()?),
            DW_CFA_OFFSET_EXTENDED => CfaOp::Offset {
                reg: c.uleb()?,
                offset: c.uleb()?,
            },
            DW_CFA_REGISTER => CfaOp::Register {
                reg: c.uleb()?,
                to: c.uleb()?,
            },
            DW_CFA_VAL_EXPRESSION | DW_CFA_EXPRESSION => {
                let reg = c.uleb()?;
                let n = c.uleb()? as usize;
                let start = c.at;
                let expr = c.take(n)?.to_vec();
                if op == DW_CFA_EXPRESSION {
                    CfaOp::Expression { reg, expr }
                } else {
                    let addr_at = relocated
                        .iter()
                        .find(|&&r| r >= start && r < start + n)
                        .map(|&r| r - start);
                    CfaOp::ValExpression { reg, expr, addr_at }
                }
            }
            DW_CFA_REMEMBER_STATE => CfaOp::RememberState,
            DW_CFA_RESTORE_STATE => CfaOp::RestoreState,
            _ if op & 0xc0 == DW_CFA_ADVANCE_LOC => CfaOp::AdvanceLoc(op & 0x3f),
            _ if op & 0xc0 == DW_CFA_RESTORE => CfaOp::Restore(u64::from(op & 0x3f)),
            _ if op & 0xc0 == DW_CFA_OFFSET => CfaOp::Offset {
                reg: u64::from(op & 0x3f),
                offset: c.uleb()?,
            },
            _ => return Err(format!("unsupported call-frame instruction {op:#04x}")),
        };
        ops.push(x);
    }
    while ops.last() == Some(&CfaOp::Nop) {
        ops.pop();
    }
    Ok(ops)
}

/// One entry of `.debug_frame` being written.
pub struct EncodedEntry {
    pub bytes: Vec<u8>,
    /// Offsets (within `bytes`) of 64-bit fields to relocate.
    pub relocs: Vec<usize>,
}

fn finish_entry(body: Vec<u8>) -> Vec<u8> {
    // 64-bit DWARF: 0xffffffff, u64 length, body; padded to a multiple of 8 with DW_CFA_nop.
    let total = (12 + body.len()).next_multiple_of(8);
    let len = (total - 12) as u64;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&0xffff_ffffu32.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&body);
    out.resize(total, DW_CFA_NOP);
    out
}

/// Encodes a CIE.
pub fn encode_cie(cie: &Cie) -> EncodedEntry {
    let mut body = Vec::new();
    body.extend_from_slice(&u64::MAX.to_le_bytes());
    body.push(3); // version
    body.push(0); // augmentation ""
    uleb(&mut body, cie.code_align);
    sleb(&mut body, cie.data_align);
    uleb(&mut body, cie.return_register);
    let addrs = encode_ops(&cie.ops, cie.code_align, &mut body);
    EncodedEntry {
        bytes: finish_entry(body),
        relocs: addrs.into_iter().map(|a| a + 12).collect(),
    }
}

/// Encodes an FDE whose CIE is at `cie_offset`. The initial location is relocated against the
/// section's function; ptxas also writes the offset itself in place (non-zero for subroutines).
pub fn encode_fde(
    cie_offset: u64,
    location: u64,
    range: u64,
    code_align: u64,
    ops: &[CfaOp],
) -> EncodedEntry {
    let mut body = Vec::new();
    body.extend_from_slice(&cie_offset.to_le_bytes());
    body.extend_from_slice(&location.to_le_bytes());
    body.extend_from_slice(&range.to_le_bytes());
    encode_ops(ops, code_align, &mut body);
    EncodedEntry {
        bytes: finish_entry(body),
        relocs: vec![12 + 8],
    }
}

/// A decoded `.debug_frame` entry.
#[derive(Clone, Debug)]
pub enum Entry {
    Cie {
        offset: usize,
        cie: Cie,
    },
    Fde {
        offset: usize,
        cie_offset: u64,
        /// Offset in the section of the relocated initial location.
        loc_at: usize,
        location: u64,
        range: u64,
        ops: Vec<CfaOp>,
    },
}

/// Decodes `.debug_frame`; `relocated` are the section offsets with relocations.
pub fn decode(section: &[u8], relocated: &[usize]) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut cies: Vec<(usize, u64)> = Vec::new();
    while at < section.len() {
        let mut c = Cursor { b: section, at };
        if c.u32()? != 0xffff_ffff {
            return Err(format!(
                ".debug_frame entry at {at:#x} is not in the 64-bit DWARF format"
            ));
        }
        let len = u64::from_le_bytes(c.take(8)?.try_into().expect("8 bytes"));
        let body_start = at + 12;
        let end = body_start
            .checked_add(len as usize)
            .filter(|&e| e <= section.len())
            .ok_or_else(|| format!(".debug_frame entry at {at:#x} runs past the section"))?;
        let body = &section[body_start..end];
        if body.len() < 8 {
            return Err(format!(".debug_frame entry at {at:#x} is too short"));
        }
        let id = u64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
        let rel: Vec<usize> = relocated
            .iter()
            .filter(|&&r| r >= body_start && r < end)
            .map(|&r| r - body_start)
            .collect();
        if id == u64::MAX {
            let mut c = Cursor { b: body, at: 8 };
            let version = c.byte()?;
            if version != 3 {
                return Err(format!("CIE at {at:#x}: version {version}, expected 3"));
            }
            if c.byte()? != 0 {
                return Err(format!("CIE at {at:#x}: augmentation not supported"));
            }
            let code_align = c.uleb()?;
            let data_align = c.sleb()?;
            let return_register = c.uleb()?;
            let ops_at = c.at;
            let rel_ops: Vec<usize> = rel.iter().filter_map(|&r| r.checked_sub(ops_at)).collect();
            let ops = decode_ops(&body[ops_at..], code_align, &rel_ops)?;
            cies.push((at, code_align));
            out.push(Entry::Cie {
                offset: at,
                cie: Cie {
                    code_align,
                    data_align,
                    return_register,
                    ops,
                },
            });
        } else {
            if body.len() < 24 {
                return Err(format!("FDE at {at:#x} is too short"));
            }
            let code_align = cies
                .iter()
                .find(|c| c.0 as u64 == id)
                .map(|c| c.1)
                .ok_or_else(|| format!("FDE at {at:#x} points to no CIE ({id:#x})"))?;
            let location = u64::from_le_bytes(body[8..16].try_into().expect("8 bytes"));
            let range = u64::from_le_bytes(body[16..24].try_into().expect("8 bytes"));
            let ops = decode_ops(&body[24..], code_align, &[])?;
            out.push(Entry::Fde {
                offset: at,
                cie_offset: id,
                loc_at: body_start + 8,
                location,
                range,
                ops,
            });
        }
        at = end;
    }
    Ok(out)
}
