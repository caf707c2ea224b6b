//! A kernel's code, decoded once with ptxc's sm_90a instruction model.
//!
//! nvdisasm's text leaves out operands at their default (a trailing `PT`, an `RZ` address
//! term…). The simulator wants every operand slot of the form in a fixed place: slot `i` of
//! [`Decoded::ops`] is always slot `i` of the form, in nvdisasm's printing order (which is the
//! semantic order: destination, sources, predicates). The decoder keeps left-out operands
//! (marked hidden); for an instruction built without them they are restored from the form.

use ptxc::target::sm90a::form::{Form, ImmFmt, Spec};
use ptxc::target::sm90a::{Instr, Operand, OperandKind, b as breg, decode_with_form, p, r, up, ur};

/// One decoded instruction.
#[derive(Clone, Debug)]
pub struct Decoded {
    pub instr: Instr,
    pub form: &'static Form,
    /// Every operand slot of the form, left-out ones restored.
    pub ops: Vec<Operand>,
    /// The mnemonic with its modifiers (`IADD3.X`), for messages.
    pub text: String,
    /// The instruction words.
    pub words: [u64; 2],
}

impl Decoded {
    /// Whether the instruction has modifier `m`.
    pub fn has(&self, m: &str) -> bool {
        self.instr.mods.contains(&m)
    }
    pub fn mods(&self) -> &[&'static str] {
        &self.instr.mods
    }
}

/// One instruction slot of the code.
#[derive(Clone, Debug)]
pub struct Inst {
    pub addr: u64,
    pub words: [u64; 2],
    /// The decoded instruction, or why the word does not decode.
    pub decoded: Result<Decoded, String>,
}

/// Decoded code.
#[derive(Clone, Debug)]
pub struct Program {
    pub insts: Vec<Inst>,
}

impl Program {
    pub fn decode(code: &[[u64; 2]]) -> Program {
        let insts = code
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let addr = i as u64 * 16;
                Inst {
                    addr,
                    words: *w,
                    decoded: decode_one(*w, addr),
                }
            })
            .collect();
        Program { insts }
    }
}

fn decode_one(w: [u64; 2], addr: u64) -> Result<Decoded, String> {
    let (form, instr) = decode_with_form(w, addr).map_err(|e| e.to_string())?;
    let ops = full_operands(form, &w, &instr)?;
    let text = instr.opcode_text();
    Ok(Decoded {
        instr,
        form,
        ops,
        text,
        words: w,
    })
}

/// The operands of every slot, in form order, with the left-out ones put back.
fn full_operands(f: &Form, w: &[u64; 2], instr: &Instr) -> Result<Vec<Operand>, String> {
    let n = f.ops.len();
    // The decoder keeps left-out operands (marked hidden): every slot is there.
    if instr.operands.len() == n {
        return Ok(instr.operands.clone());
    }
    let mut elided = vec![false; n];
    for i in (0..n).rev() {
        if let Some(e) = f.ops[i].elide {
            let v = f.ops[i].elide_value(w);
            let next_ok = !e.with_next || (i + 1 < n && elided[i + 1]);
            elided[i] = v == e.value && next_ok;
        }
    }
    let mut given = instr.operands.iter();
    let mut out = Vec::with_capacity(n);
    for (i, o) in f.ops.iter().enumerate() {
        if !elided[i] {
            out.push(
                given
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("{}: fewer operands than slots", instr.opcode_text()))?,
            );
            continue;
        }
        let v = o.elide.map(|e| e.value).unwrap_or(0);
        let kind = match &o.spec {
            Spec::Gpr(_) => OperandKind::Reg(r(v as u8)),
            Spec::Ugpr(_) => OperandKind::Reg(ur(v as u8)),
            Spec::Pred { uniform, inv, .. } => {
                let num = if *inv {
                    7 - (v & 7) as u8
                } else {
                    (v & 7) as u8
                };
                OperandKind::Reg(if *uniform { up(num) } else { p(num) })
            }
            Spec::Imm { fmt, f: fl } => OperandKind::Int(match fmt {
                ImmFmt::UHex => v as i64,
                ImmFmt::SHex => {
                    let bits = fl.width();
                    if bits < 64 && v >> (bits - 1) & 1 == 1 {
                        (v | (!0u64 << bits)) as i64
                    } else {
                        v as i64
                    }
                }
            }),
            Spec::Float { fmt, .. } => OperandKind::FloatBits(*fmt, v),
            Spec::SReg(_) => OperandKind::SReg(v as u8),
            Spec::Bar(_) => OperandKind::Reg(breg(v as u8)),
            Spec::SbSet(_) => OperandKind::SbSet(v as u8),
            other => {
                return Err(format!(
                    "{}: left-out operand of kind {other:?} cannot be restored",
                    instr.opcode_text()
                ));
            }
        };
        let mut op = Operand::new(kind);
        if let Spec::Pred { .. } = o.spec {
            op.not = v >> 3 & 1 == 1;
        }
        out.push(op);
    }
    Ok(out)
}
