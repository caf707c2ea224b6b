//! From allocated MIR to encoded SASS: block layout, branch targets, the conversion of each MIR
//! instruction to the [`sm90a`] model, control words, encoding, and the padding ptxas puts after
//! a function (`BRA self` then `NOP`s to a multiple of 128 bytes, plus 128 more).
//!
//! Control words here are *conservative* until the scoreboard pass exists: every
//! variable-latency instruction sets scoreboard 0 when it writes registers and scoreboard 1 when
//! it reads them, every instruction waits on both, and every fixed-latency instruction that
//! writes a register stalls 15 cycles — longer than any fixed latency — so no instruction can
//! read a register before its producer has written it. Correct, and slow.

use crate::mir::{self, Function, OpKind, RegClass};
use crate::target::sm90a::{self as sass, Ctrl, Instr, Latency};

/// One encoded function.
#[derive(Clone, Debug, Default)]
pub struct EncodedFunction {
    pub name: String,
    pub instrs: Vec<Instr>,
    pub words: Vec<[u64; 2]>,
    /// Byte offsets of the `EXIT` instructions (EIATTR_EXIT_INSTR_OFFSETS).
    pub exit_offsets: Vec<u32>,
    /// Instructions before the padding.
    pub code_len: usize,
}

impl EncodedFunction {
    /// The `.text` bytes: the words, little-endian, low word first.
    pub fn bytes(&self) -> Vec<u8> {
        self.words
            .iter()
            .flat_map(|w| w.iter().flat_map(|x| x.to_le_bytes()))
            .collect()
    }
}

fn reg(r: mir::Reg) -> Result<sass::Reg, String> {
    match r {
        mir::Reg::Phys { reg, .. } => {
            let file = match reg.class {
                RegClass::Gpr => sass::RegFile::Gpr,
                RegClass::Ugpr => sass::RegFile::Ugpr,
                RegClass::Pred => sass::RegFile::Pred,
                RegClass::UPred => sass::RegFile::UPred,
            };
            Ok(sass::Reg { file, num: reg.num })
        }
        mir::Reg::Virt { vreg, .. } => Err(format!("{vreg} was never allocated a register")),
    }
}

fn operand(o: &mir::Operand, block_addr: &[u64]) -> Result<sass::Operand, String> {
    use sass::OperandKind as K;
    let kind = match &o.kind {
        OpKind::Reg(r) => K::Reg(reg(r.reg)?),
        OpKind::Int(v) => K::Int(*v),
        OpKind::Float(fmt, bits) => {
            let fmt = match fmt {
                mir::FloatFmt::F32 => sass::FloatFmt::F32,
                mir::FloatFmt::F64Hi => sass::FloatFmt::F64Hi,
                mir::FloatFmt::F16 => sass::FloatFmt::F16,
                mir::FloatFmt::BF16 => sass::FloatFmt::BF16,
            };
            K::FloatBits(fmt, *bits)
        }
        OpKind::CBank { bank, base, offset } => K::CBank(sass::CBank {
            bank: *bank,
            base: base.map(reg).transpose()?,
            offset: *offset,
        }),
        OpKind::Mem { prefix, terms } => {
            let prefix = match prefix {
                mir::MemPrefix::None => sass::MemPrefix::None,
                mir::MemPrefix::Desc(r) => sass::MemPrefix::Desc(reg(*r)?),
            };
            let terms = terms
                .iter()
                .map(|t| match t {
                    mir::MemTerm::Reg(r, s) => reg(*r).map(|r| sass::MemTerm::Reg(r, *s)),
                    mir::MemTerm::Imm(v) => Ok(sass::MemTerm::Imm(*v)),
                })
                .collect::<Result<Vec<_>, String>>()?;
            K::Mem(sass::Mem { prefix, terms })
        }
        OpKind::SReg(n) => K::SReg(*n),
        OpKind::Barrier(b) => K::Reg(sass::Reg {
            file: sass::RegFile::Barrier,
            num: *b,
        }),
        OpKind::Sym(name) => K::Sym(name),
        OpKind::Block(b) => K::Int(block_addr[b.0 as usize] as i64),
        OpKind::Func(name) => {
            return Err(format!(
                "a call to `{name}` needs a relocation ptxc cannot emit yet"
            ));
        }
        OpKind::PhiArg(..) | OpKind::Prior(_) => return Err("SSA operands reached emission".into()),
    };
    let mut out = sass::Operand::new(kind);
    out.neg = o.neg;
    out.abs = o.abs;
    out.not = o.not;
    out.suffix = o.suffix.clone();
    Ok(out)
}

/// The conservative control word for an instruction (see the module documentation).
fn conservative_ctrl(i: &Instr) -> Result<Ctrl, String> {
    let latency = i.latency().map_err(|e| format!("`{i}`: {e}"))?;
    let writes = i
        .operands
        .first()
        .is_some_and(|o| o.as_reg().is_some_and(|r| !r.is_zero_or_true()))
        && !matches!(
            i.mnemonic,
            "ST" | "STG" | "STS" | "STL" | "RED" | "REDG" | "EXIT" | "BRA"
        );
    let store_like = matches!(
        i.mnemonic,
        "ST" | "STG" | "STS" | "STL" | "RED" | "REDG" | "EXIT" | "BRA"
    );
    let mut c = Ctrl {
        stall: 1,
        yield_: false,
        wbar: 7,
        rbar: 7,
        wait: 0b11,
        reuse: 0,
    };
    match latency {
        Latency::Variable => {
            if writes && !store_like {
                c.wbar = 0;
            }
            // Instructions without operands read no register and must not set a read
            // scoreboard: nvdisasm rejects `CCTL.IVALL` and `FENCE.VIEW.ASYNC.S` words that do
            // (ptxas: `CCTL.IVALL` … `03ffe80002000000`, rb = 7). Nor must EXIT.
            if i.mnemonic != "EXIT" && !i.operands.is_empty() {
                c.rbar = 1;
            }
        }
        Latency::Fixed => {
            if writes {
                c.stall = 15;
            }
        }
    }
    Ok(c)
}

/// Lays out, converts and encodes an allocated function.
pub fn encode_function(f: &Function) -> Result<EncodedFunction, String> {
    // Layout: blocks in order; a fallthrough to a block that does not follow becomes a branch.
    let mut starts = vec![0u64; f.blocks.len()];
    let mut n = 0u64;
    let mut extra_branch = vec![None; f.blocks.len()];
    for (bi, b) in f.blocks.iter().enumerate() {
        starts[bi] = n * 16;
        n += b.insts.len() as u64;
        if let Some(t) = b.fallthrough
            && t.0 as usize != bi + 1
        {
            extra_branch[bi] = Some(t);
            n += 1;
        }
    }
    let mut out = EncodedFunction {
        name: f.name.clone(),
        ..EncodedFunction::default()
    };
    for (bi, b) in f.blocks.iter().enumerate() {
        let mut insts: Vec<mir::Inst> = b.insts.clone();
        if let Some(t) = extra_branch[bi] {
            insts.push(mir::Inst::new(
                "BRA",
                &[],
                vec![mir::Operand::new(OpKind::Block(t))],
            ));
        }
        for mi in &insts {
            if mi.is_pseudo() {
                return Err(format!("`{mi}` reached emission in `{}`", f.name));
            }
            let ops = mi
                .ops
                .iter()
                .map(|o| operand(o, &starts))
                .collect::<Result<Vec<_>, _>>()?;
            let mut i = Instr::new(mi.mnemonic, &mi.mods, ops);
            if let Some(g) = mi.guard {
                i.guard = sass::Guard {
                    pred: reg(g.pred)?,
                    neg: g.neg,
                };
            }
            i.addr = out.instrs.len() as u64 * 16;
            i.ctrl = conservative_ctrl(&i)?;
            if i.mnemonic == "EXIT" {
                out.exit_offsets.push(i.addr as u32);
            }
            out.instrs.push(i);
        }
    }
    out.code_len = out.instrs.len();
    // ptxas ends every function with `BRA self`, then NOPs up to a 128-byte boundary plus another
    // 128 bytes (runtime_abi::elf::TEXT_PAD_EXTRA; what the cubin writer appends).
    let here = out.instrs.len() as u64 * 16;
    let mut pad = Instr::new("BRA", &[], vec![sass::target(here)]);
    pad.addr = here;
    pad.ctrl = Ctrl {
        stall: 0,
        yield_: false,
        wbar: 7,
        rbar: 7,
        wait: 0,
        reuse: 0,
    };
    out.instrs.push(pad);
    let padded = out.instrs.len().next_multiple_of(8) + runtime_abi::elf::TEXT_PAD_EXTRA / 16;
    while out.instrs.len() < padded {
        let mut nop = Instr::new("NOP", &[], vec![]);
        nop.addr = out.instrs.len() as u64 * 16;
        nop.ctrl = Ctrl {
            stall: 0,
            yield_: false,
            wbar: 7,
            rbar: 7,
            wait: 0,
            reuse: 0,
        };
        out.instrs.push(nop);
    }
    for i in &out.instrs {
        out.words.push(
            sass::encode(i).map_err(|e| format!("cannot encode `{i}` in `{}`: {e}", f.name))?,
        );
    }
    Ok(out)
}

/// The listing of an encoded function in nvdisasm's syntax, each instruction decoded back from
/// its words (so the text is what the bits say).
pub fn listing(e: &EncodedFunction) -> Result<String, String> {
    let mut s = format!("\tFunction : {}\n", e.name);
    for (k, w) in e.words.iter().enumerate() {
        let i = sass::decode_at(*w, k as u64 * 16)
            .map_err(|err| format!("cannot decode word {k}: {err}"))?;
        s.push_str(&format!(
            "        /*{:04x}*/                   {i} ;\n",
            k * 16
        ));
    }
    Ok(s)
}
