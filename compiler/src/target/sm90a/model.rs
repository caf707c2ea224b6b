//! The instruction model: registers, operands, the control word and [`Instr`].
//!
//! An [`Instr`] is form-independent: a mnemonic, its modifiers and its operands, the way
//! nvdisasm writes them. The form tables (`forms/`) say how each combination is encoded.
//! [`encode`](super::encode()) binds an `Instr` to its form, [`decode`](super::decode()) produces the
//! canonical `Instr` for a word (with nvdisasm's aliases and elisions), and `Display` prints the
//! canonical text of whatever the instruction encodes to.

use std::fmt;

/// A register file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegFile {
    /// R0–R254, RZ = 255.
    Gpr,
    /// UR0–UR62, URZ = 63 on sm_90a.
    Ugpr,
    /// P0–P6, PT = 7.
    Pred,
    /// UP0–UP6, UPT = 7.
    UPred,
    /// Convergence barriers B0–B15.
    Barrier,
}

/// A register: file and number. Zero/true registers are ordinary numbers (RZ = 255, URZ = 63,
/// PT = UPT = 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg {
    pub file: RegFile,
    pub num: u8,
}

/// The zero register.
pub const RZ: Reg = Reg {
    file: RegFile::Gpr,
    num: 255,
};
/// The uniform zero register (63 on sm_90a).
pub const URZ: Reg = Reg {
    file: RegFile::Ugpr,
    num: 63,
};
/// The true predicate.
pub const PT: Reg = Reg {
    file: RegFile::Pred,
    num: 7,
};
/// The true uniform predicate.
pub const UPT: Reg = Reg {
    file: RegFile::UPred,
    num: 7,
};

/// `R<n>` (255 is RZ).
pub const fn r(n: u8) -> Reg {
    Reg {
        file: RegFile::Gpr,
        num: n,
    }
}
/// `UR<n>` (63 is URZ).
pub const fn ur(n: u8) -> Reg {
    Reg {
        file: RegFile::Ugpr,
        num: n,
    }
}
/// `P<n>` (7 is PT).
pub const fn p(n: u8) -> Reg {
    Reg {
        file: RegFile::Pred,
        num: n,
    }
}
/// `UP<n>` (7 is UPT).
pub const fn up(n: u8) -> Reg {
    Reg {
        file: RegFile::UPred,
        num: n,
    }
}
/// Convergence barrier `B<n>`.
pub const fn b(n: u8) -> Reg {
    Reg {
        file: RegFile::Barrier,
        num: n,
    }
}

impl Reg {
    /// Whether this is RZ/URZ/PT/UPT.
    pub fn is_zero_or_true(&self) -> bool {
        match self.file {
            RegFile::Gpr => self.num == 255,
            RegFile::Ugpr => self.num == 63,
            RegFile::Pred | RegFile::UPred => self.num == 7,
            RegFile::Barrier => false,
        }
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.file {
            RegFile::Gpr if self.num == 255 => f.write_str("RZ"),
            RegFile::Gpr => write!(f, "R{}", self.num),
            RegFile::Ugpr if self.num == 63 => f.write_str("URZ"),
            RegFile::Ugpr => write!(f, "UR{}", self.num),
            RegFile::Pred if self.num == 7 => f.write_str("PT"),
            RegFile::Pred => write!(f, "P{}", self.num),
            RegFile::UPred if self.num == 7 => f.write_str("UPT"),
            RegFile::UPred => write!(f, "UP{}", self.num),
            RegFile::Barrier => write!(f, "B{}", self.num),
        }
    }
}

/// The guard predicate `@P0` / `@!UP1`; `PT` (not negated) is no guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    pub pred: Reg,
    pub neg: bool,
}

impl Guard {
    /// No guard (`@PT`).
    pub const ALWAYS: Guard = Guard {
        pred: PT,
        neg: false,
    };
    /// `@P<n>` or `@UP<n>` for a predicate register.
    pub fn on(pred: Reg) -> Guard {
        Guard { pred, neg: false }
    }
    /// `@!P<n>`.
    pub fn not(pred: Reg) -> Guard {
        Guard { pred, neg: true }
    }
    /// Whether the guard is absent (PT or UPT, not negated).
    pub fn is_always(&self) -> bool {
        !self.neg && self.pred.num == 7
    }
}

impl Default for Guard {
    fn default() -> Self {
        Guard::ALWAYS
    }
}

/// The scheduling control bits [125:105] (ptxas-facts.md §b).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ctrl {
    /// Stall cycles, bits [108:105].
    pub stall: u8,
    /// Bit 109, the "yield" bit of ptxas-facts.md §b. ptxas sets it on almost every
    /// instruction; nvdisasm rejects it with stall 0 or >= 12 and shows `.reuse` flags only when
    /// it is set.
    pub yield_: bool,
    /// Write scoreboard, bits [112:110]; 7 = none.
    pub wbar: u8,
    /// Read scoreboard, bits [115:113]; 7 = none.
    pub rbar: u8,
    /// Scoreboards to wait on, bits [121:116] (bit i = SB i).
    pub wait: u8,
    /// Operand reuse flags, bits [125:122] (bit i = reuse slot i).
    pub reuse: u8,
}

impl Default for Ctrl {
    /// Stall 1, no scoreboards, no wait, no reuse: always accepted by nvdisasm.
    fn default() -> Self {
        Ctrl {
            stall: 1,
            yield_: false,
            wbar: 7,
            rbar: 7,
            wait: 0,
            reuse: 0,
        }
    }
}

/// Bits [125:105] of the instruction: the control fields.
pub const CTRL_MASK_HI: u64 = 0x1f_ffff << 41;

impl Ctrl {
    /// Reads the control fields from the high word.
    pub fn from_hi(hi: u64) -> Ctrl {
        Ctrl {
            stall: ((hi >> 41) & 0xf) as u8,
            yield_: (hi >> 45) & 1 == 1,
            wbar: ((hi >> 46) & 7) as u8,
            rbar: ((hi >> 49) & 7) as u8,
            wait: ((hi >> 52) & 0x3f) as u8,
            reuse: ((hi >> 58) & 0xf) as u8,
        }
    }
    /// The control fields placed in a high word (other bits zero).
    pub fn to_hi(&self) -> u64 {
        (u64::from(self.stall) & 0xf) << 41
            | u64::from(self.yield_) << 45
            | (u64::from(self.wbar) & 7) << 46
            | (u64::from(self.rbar) & 7) << 49
            | (u64::from(self.wait) & 0x3f) << 52
            | (u64::from(self.reuse) & 0xf) << 58
    }
}

/// An immediate floating-point value as stored in an instruction field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatFmt {
    /// An IEEE single.
    F32,
    /// The high 32 bits of an IEEE double (DADD/DMUL/DFMA/DSETP immediates).
    F64Hi,
    /// An IEEE half.
    F16,
    /// A bfloat16.
    BF16,
}

/// What an operand is, before its modifiers.
#[derive(Clone, Debug, PartialEq)]
pub enum OperandKind {
    /// A register of any file.
    Reg(Reg),
    /// An integer: an immediate (printed in hex), a branch target (absolute address).
    Int(i64),
    /// A floating-point literal from text (`1.5`, `+INF`, `-QNAN`); NaNs are canonical.
    Float(f64),
    /// A floating-point immediate with its exact bits (what `decode` produces).
    FloatBits(FloatFmt, u64),
    /// A constant-bank operand `c[bank][base+offset]`.
    CBank(CBank),
    /// A memory operand `[...]`, `desc[URx][...]`, `gdesc[URx]`.
    Mem(Mem),
    /// A special register by number (`SR_TID.X` = 0x21); printed with its nvdisasm name.
    SReg(u8),
    /// A keyword operand (`UPR`, `gsb0`, `2D`, `SB0`, …).
    Sym(&'static str),
    /// A scoreboard set `{5,4,3,2,1,0}` (bit i = SB i).
    SbSet(u8),
    /// A register and a branch target printed together: `RET.REL.NODEC R2 0x0`.
    RegTarget(Reg, i64),
}

/// A constant-bank reference `c[bank][base+offset]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CBank {
    pub bank: u32,
    /// A register added to the offset (`c[0x0][R2+0x210]`).
    pub base: Option<Reg>,
    pub offset: i64,
}

/// What precedes the brackets of a memory operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemPrefix {
    None,
    /// `desc[URx][...]`: a memory descriptor in a uniform register pair.
    Desc(Reg),
    /// `gdesc[URx]`: a GMMA matrix descriptor.
    GDesc,
}

/// A term of a memory address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemTerm {
    /// A register, with its width/extension suffix (`.64`, `.U32`, `.X4`, …).
    Reg(Reg, Option<&'static str>),
    /// An offset.
    Imm(i64),
}

/// A memory operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mem {
    pub prefix: MemPrefix,
    pub terms: Vec<MemTerm>,
}

/// An operand with its modifiers, as nvdisasm prints it: `-|R5|.reuse.H1_H1`.
#[derive(Debug, PartialEq)]
pub struct Operand {
    pub kind: OperandKind,
    /// `-x`.
    pub neg: bool,
    /// `|x|`.
    pub abs: bool,
    /// `~R` (bitwise not) or `!P` (predicate not).
    pub not: bool,
    /// `.reuse`: the operand reuse flag of its slot (also in [`Ctrl::reuse`]).
    pub reuse: bool,
    /// Suffixes printed after `.reuse`: `H0_H0`, `64`, `B3`, `ROW`, `tnspB`, …
    pub suffix: Vec<&'static str>,
    /// An operand nvdisasm leaves out (a default such as an unused PT predicate output).
    /// [`decode`](super::decode()) keeps such operands, marked hidden, so that encoding the
    /// decoded instruction gives back the same word; `Display` skips them.
    pub hidden: bool,
}

/// As derived, with the common case first: a register operand without suffixes is copied
/// field by field, where the derived clone matched on the kind and cloned the empty suffix list
/// (layout copies every repeated instruction, `emit/sass.rs`: 1.38M of the 130.4M instructions
/// of compiling the straight-line 16k kernel went to cloning operands). Every other operand is
/// cloned out of line ([`Operand::clone_other`]), so that the common case has no call and no
/// saved registers and is inlined into the copy of an operand list (the function with both
/// cases was 54 instructions a register operand: 5.1M on the straight-line 64k kernel).
impl Clone for Operand {
    #[inline]
    fn clone(&self) -> Operand {
        match self.kind {
            OperandKind::Reg(r) if self.suffix.is_empty() => Operand {
                kind: OperandKind::Reg(r),
                neg: self.neg,
                abs: self.abs,
                not: self.not,
                reuse: self.reuse,
                suffix: Vec::new(),
                hidden: self.hidden,
            },
            _ => self.clone_other(),
        }
    }
}

impl Operand {
    /// [`Operand::clone`] of any operand.
    #[inline(never)]
    fn clone_other(&self) -> Operand {
        Operand {
            kind: match &self.kind {
                OperandKind::Reg(r) => OperandKind::Reg(*r),
                other => other.clone(),
            },
            neg: self.neg,
            abs: self.abs,
            not: self.not,
            reuse: self.reuse,
            suffix: if self.suffix.is_empty() {
                Vec::new()
            } else {
                self.suffix.clone()
            },
            hidden: self.hidden,
        }
    }
}

impl Operand {
    pub fn new(kind: OperandKind) -> Operand {
        Operand {
            kind,
            neg: false,
            abs: false,
            not: false,
            reuse: false,
            suffix: Vec::new(),
            hidden: false,
        }
    }
    /// Negated (`-x`; `~x` for the bitwise-not forms is [`Operand::bnot`]).
    pub fn negate(mut self) -> Operand {
        self.neg = true;
        self
    }
    /// Absolute value `|x|`.
    pub fn abs(mut self) -> Operand {
        self.abs = true;
        self
    }
    /// Bitwise not `~R` / predicate not `!P`.
    pub fn bnot(mut self) -> Operand {
        self.not = true;
        self
    }
    /// The `.reuse` flag.
    pub fn reuse(mut self) -> Operand {
        self.reuse = true;
        self
    }
    /// Adds a suffix (`.H1_H1`, `.64`, …). The name must be one the form tables know.
    pub fn sfx(mut self, s: &'static str) -> Operand {
        self.suffix.push(s);
        self
    }
    /// The register, when the operand is one.
    pub fn as_reg(&self) -> Option<Reg> {
        match self.kind {
            OperandKind::Reg(r) => Some(r),
            _ => None,
        }
    }
}

impl From<Reg> for Operand {
    fn from(r: Reg) -> Operand {
        Operand::new(OperandKind::Reg(r))
    }
}

/// An integer immediate operand (printed as hex).
pub fn imm(v: i64) -> Operand {
    Operand::new(OperandKind::Int(v))
}
/// A float immediate from a value (converted to the form's format when encoded).
pub fn fimm(v: f64) -> Operand {
    Operand::new(OperandKind::Float(v))
}
/// A float immediate with exact bits.
pub fn fbits(fmt: FloatFmt, bits: u64) -> Operand {
    Operand::new(OperandKind::FloatBits(fmt, bits))
}
/// A branch target (absolute address).
pub fn target(addr: u64) -> Operand {
    Operand::new(OperandKind::Int(addr as i64))
}
/// A special register by number.
pub fn sreg(n: u8) -> Operand {
    Operand::new(OperandKind::SReg(n))
}
/// `c[bank][offset]`.
pub fn cbank(bank: u32, offset: i64) -> Operand {
    Operand::new(OperandKind::CBank(CBank {
        bank,
        base: None,
        offset,
    }))
}
/// `c[bank][base+offset]`.
pub fn cbank_reg(bank: u32, base: Reg, offset: i64) -> Operand {
    Operand::new(OperandKind::CBank(CBank {
        bank,
        base: Some(base),
        offset,
    }))
}
/// A memory operand from terms.
pub fn mem(prefix: MemPrefix, terms: Vec<MemTerm>) -> Operand {
    Operand::new(OperandKind::Mem(Mem { prefix, terms }))
}
/// `[Ra+off]` (32-bit register address, e.g. shared or local memory).
pub fn addr(base: Reg, off: i64) -> Operand {
    let mut t = vec![MemTerm::Reg(base, None)];
    if off != 0 {
        t.push(MemTerm::Imm(off));
    }
    mem(MemPrefix::None, t)
}
/// `desc[URd][Ra.64+off]` (global memory through a descriptor).
pub fn desc_addr(desc: Reg, base: Reg, off: i64) -> Operand {
    let mut t = vec![MemTerm::Reg(base, Some("64"))];
    if off != 0 {
        t.push(MemTerm::Imm(off));
    }
    mem(MemPrefix::Desc(desc), t)
}
/// `[URa+off]` (uniform address, e.g. LDS/STS/SYNCS).
pub fn uaddr(base: Reg, off: i64) -> Operand {
    let mut t = vec![MemTerm::Reg(base, None)];
    if off != 0 {
        t.push(MemTerm::Imm(off));
    }
    mem(MemPrefix::None, t)
}
/// A keyword operand such as `UPR` or `gsb0`; the name must be one the form tables know.
pub fn sym(s: &'static str) -> Operand {
    Operand::new(OperandKind::Sym(s))
}

/// One machine instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Instr {
    /// The address the instruction sits at; branch targets are encoded relative to it.
    pub addr: u64,
    pub guard: Guard,
    /// The mnemonic (`IADD3`, `LDG`, …), without modifiers.
    pub mnemonic: &'static str,
    /// The modifiers as dot-separated tokens, in nvdisasm's order (`E`, `STRONG`, `GPU`).
    pub mods: Vec<&'static str>,
    pub operands: Vec<Operand>,
    pub ctrl: Ctrl,
}

impl Instr {
    /// An instruction with no guard, default control bits and address 0. The mnemonic and the
    /// modifiers must be names the form tables know (they are `&'static str`).
    pub fn new(mnemonic: &'static str, mods: &[&'static str], operands: Vec<Operand>) -> Instr {
        Instr {
            addr: 0,
            guard: Guard::ALWAYS,
            mnemonic,
            mods: mods.to_vec(),
            operands,
            ctrl: Ctrl::default(),
        }
    }
    /// Sets the guard predicate.
    pub fn guard(mut self, g: Guard) -> Instr {
        self.guard = g;
        self
    }
    /// Sets the control bits.
    pub fn ctrl(mut self, c: Ctrl) -> Instr {
        self.ctrl = c;
        self
    }
    /// Sets the address.
    pub fn at(mut self, addr: u64) -> Instr {
        self.addr = addr;
        self
    }
    /// `MNEMONIC.MOD.MOD`.
    pub fn opcode_text(&self) -> String {
        let mut s = self.mnemonic.to_string();
        for m in &self.mods {
            s.push('.');
            s.push_str(m);
        }
        s
    }
}
