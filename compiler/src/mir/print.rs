//! The text form of MIR (`--emit mir`, `--print-after`): SASS syntax with virtual registers.
//!
//! ```text
//! function vector_add (entry, SSA)
//!   %0: R.64 %rd1   %1: UR.64 …
//! bb0:
//!     IMAD.WIDE %5, %4, 0x4, %2
//!     LDG.E %6, desc[%1][%5.64]
//!     @%7 BRA bb2
//!   -> bb1
//! ```
//! A virtual register is `%N`; one word of a multi-word register is `%N.w1`, a slice
//! `%N.w0:2`; `.64`/`.U32` after a memory register are the operand suffixes nvdisasm shows.

use super::*;
use std::fmt::Write as _;

impl fmt::Display for Reg {
    /// `%N` for a reference that starts at word 0 (the whole register, or its first word);
    /// `%N.wK` for word K alone; `%N.wK:C` for C words from word K.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Reg::Virt { vreg, first: 0, .. } => write!(f, "{vreg}"),
            Reg::Virt {
                vreg,
                first,
                count: 1,
            } => write!(f, "{vreg}.w{first}"),
            Reg::Virt { vreg, first, count } => write!(f, "{vreg}.w{first}:{count}"),
            Reg::Phys { reg, .. } => write!(f, "{reg}"),
        }
    }
}

fn hex(v: i64) -> String {
    if v < 0 {
        format!("-0x{:x}", v.unsigned_abs())
    } else {
        format!("0x{v:x}")
    }
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        if self.neg {
            s.push('-');
        }
        if self.not {
            s.push('!');
        }
        if self.abs {
            s.push('|');
        }
        match &self.kind {
            OpKind::Reg(r) => {
                let _ = write!(s, "{}", r.reg);
            }
            OpKind::Int(v) => s.push_str(&hex(*v)),
            OpKind::Float(fmt, bits) => {
                let _ = match fmt {
                    FloatFmt::F32 => write!(s, "{}", f32::from_bits(*bits as u32)),
                    FloatFmt::F64Hi => write!(s, "{}", f64::from_bits(*bits << 32)),
                    FloatFmt::F16 | FloatFmt::BF16 => write!(s, "0x{bits:x}"),
                };
            }
            OpKind::CBank { bank, base, offset } => {
                let _ = match base {
                    Some(b) => write!(s, "c[{}][{}+{}]", hex(i64::from(*bank)), b, hex(*offset)),
                    None => write!(s, "c[{}][{}]", hex(i64::from(*bank)), hex(*offset)),
                };
            }
            OpKind::Mem { prefix, terms } => {
                match prefix {
                    MemPrefix::Desc(r) => {
                        let _ = write!(s, "desc[{r}]");
                    }
                    MemPrefix::GDesc => s.push_str("gdesc"),
                    MemPrefix::None => {}
                }
                s.push('[');
                for (i, t) in terms.iter().enumerate() {
                    if i > 0 {
                        s.push('+');
                    }
                    let _ = match t {
                        MemTerm::Reg(r, suffix) => write!(
                            s,
                            "{r}{}",
                            suffix.map(|x| format!(".{x}")).unwrap_or_default()
                        ),
                        MemTerm::Imm(v) => write!(s, "{}", hex(*v)),
                    };
                }
                s.push(']');
            }
            OpKind::SReg(n) => match crate::target::sm90a::print::SR_NAMES.get(usize::from(*n)) {
                Some(name) => s.push_str(name),
                None => {
                    let _ = write!(s, "SR_{n:#x}");
                }
            },
            OpKind::Block(b) => {
                let _ = write!(s, "{b}");
            }
            OpKind::Func(name) => s.push_str(name),
            OpKind::FuncAddr(name) => s.push_str(name),
            OpKind::PhiArg(b, r) => {
                let _ = write!(s, "[{b}: {r}]");
            }
            OpKind::Sym(name) => s.push_str(name),
            OpKind::Barrier(b) => {
                let _ = write!(s, "B{b}");
            }
            OpKind::SbSet(m) => {
                let sbs: Vec<String> = (0..6)
                    .rev()
                    .filter(|i| m >> i & 1 == 1)
                    .map(|i| i.to_string())
                    .collect();
                let _ = write!(s, "{{{}}}", sbs.join(","));
            }
            OpKind::Prior(r) => {
                let _ = write!(s, "{{prior {r}}}");
            }
        }
        if self.abs {
            s.push('|');
        }
        for x in &self.suffix {
            let _ = write!(s, ".{x}");
        }
        f.write_str(&s)
    }
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(g) = self.guard {
            write!(f, "@{}{} ", if g.neg { "!" } else { "" }, g.pred)?;
        }
        f.write_str(self.mnemonic)?;
        for m in &self.mods {
            write!(f, ".{m}")?;
        }
        for (i, o) in self.ops.iter().enumerate() {
            write!(f, "{}{o}", if i == 0 { " " } else { ", " })?;
        }
        if self.divergent {
            f.write_str("  ; divergent")?;
        }
        Ok(())
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "function {} ({}{})",
            self.name,
            if self.is_entry { "entry" } else { "func" },
            if self.ssa { ", SSA" } else { "" }
        )?;
        for (i, v) in self.vregs.iter().enumerate() {
            let width = if v.words > 1 {
                format!(".{}", 32 * u32::from(v.words))
            } else {
                String::new()
            };
            write!(f, "  %{i}: {}{width}", v.class.prefix())?;
            if let Some(h) = &v.hint {
                write!(f, " {h}")?;
            }
            writeln!(f)?;
        }
        for b in self.block_ids() {
            let block = self.block(b);
            write!(f, "{b}:")?;
            if let Some(l) = &block.label {
                write!(f, "  ; {l}")?;
            }
            writeln!(f)?;
            for i in &block.insts {
                writeln!(f, "    {i}")?;
            }
            if let Some(t) = block.fallthrough {
                writeln!(f, "  -> {t}")?;
            }
        }
        Ok(())
    }
}
