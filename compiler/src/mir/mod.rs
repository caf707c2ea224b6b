//! The machine IR (MIR): SASS instructions over virtual registers, in basic blocks.
//!
//! A MIR instruction is a SASS instruction as nvdisasm would print it (mnemonic, modifiers,
//! operands), except that its registers may be *virtual*: [`VReg`]s of a register class
//! ([`RegClass`]: R, UR, P, UP) and a width in 32-bit words (a `.b64` PTX register is a 2-word
//! R vreg, allocated to an aligned pair `R2n:R2n+1`). Every register operand says whether it
//! is written or read ([`RegRef::def`]), so liveness needs no knowledge of SASS semantics.
//!
//! Instruction selection produces MIR in SSA form (every word of every vreg defined once —
//! a 64-bit value may be written by two instructions, one per word — and `PHI`s at merges);
//! the verifier (`verify.rs`) checks that defs dominate uses while the function is in SSA form,
//! and that register classes and widths agree at every stage. After register allocation every
//! register is physical and the function converts one-to-one into encodable SASS.
//!
//! Pseudo-instructions (mnemonics that are not SASS) exist only between passes:
//! `PHI` (SSA merge), `COPY` (a move the allocator may coalesce), `UNDEF` (a value with no
//! definition on some path) and `KILL` (end of a live range; none yet).

pub mod cfg;
pub mod dot;
pub mod liveness;
pub mod phi;
pub mod print;
pub mod verify;

use std::fmt;

/// A virtual register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VReg(pub u32);

impl fmt::Display for VReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// The register files of sm_90a.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegClass {
    /// R0–R254 (RZ = 255): per-thread 32-bit registers.
    Gpr,
    /// UR0–UR62 (URZ = 63): warp-uniform 32-bit registers.
    Ugpr,
    /// P0–P6 (PT = 7): per-thread predicates.
    Pred,
    /// UP0–UP6 (UPT = 7): warp-uniform predicates.
    UPred,
}

impl RegClass {
    /// How many allocatable registers the file has (the zero/true register excluded).
    pub fn allocatable(self) -> u32 {
        match self {
            RegClass::Gpr => 255,
            RegClass::Ugpr => 63,
            RegClass::Pred | RegClass::UPred => 7,
        }
    }

    /// The number of the zero (RZ, URZ) or true (PT, UPT) register.
    pub fn zero(self) -> u8 {
        match self {
            RegClass::Gpr => 255,
            RegClass::Ugpr => 63,
            RegClass::Pred | RegClass::UPred => 7,
        }
    }

    /// The assembler prefix (`R`, `UR`, `P`, `UP`).
    pub fn prefix(self) -> &'static str {
        match self {
            RegClass::Gpr => "R",
            RegClass::Ugpr => "UR",
            RegClass::Pred => "P",
            RegClass::UPred => "UP",
        }
    }
}

/// What the allocator and the verifier know about a virtual register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VRegInfo {
    pub class: RegClass,
    /// Width in 32-bit words: 1, 2 (64-bit values, aligned pairs), 3 or 4 (vector tuples).
    pub words: u8,
    /// The PTX register it came from, for dumps. Shared, not copied: every value of a PTX
    /// register (each definition, each `PHI`) names it, and a `String` copy per value was an
    /// allocation per selected instruction (callgrind, 16k straight-line kernel: 1.6M
    /// instructions of 171.5M).
    pub hint: Option<std::sync::Arc<str>>,
}

/// A physical register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PReg {
    pub class: RegClass,
    pub num: u8,
}

impl PReg {
    pub const RZ: PReg = PReg {
        class: RegClass::Gpr,
        num: 255,
    };
    pub const URZ: PReg = PReg {
        class: RegClass::Ugpr,
        num: 63,
    };
    pub const PT: PReg = PReg {
        class: RegClass::Pred,
        num: 7,
    };
    pub const UPT: PReg = PReg {
        class: RegClass::UPred,
        num: 7,
    };

    pub fn is_zero(self) -> bool {
        self.num == self.class.zero()
    }
}

impl fmt::Display for PReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_zero() {
            let name = match self.class {
                RegClass::Gpr => "RZ",
                RegClass::Ugpr => "URZ",
                RegClass::Pred => "PT",
                RegClass::UPred => "UPT",
            };
            f.write_str(name)
        } else {
            write!(f, "{}{}", self.class.prefix(), self.num)
        }
    }
}

/// A register as an operand names it: a virtual register (some of its words) or a physical one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reg {
    /// Words `first .. first + count` of a virtual register.
    Virt { vreg: VReg, first: u8, count: u8 },
    /// `count` consecutive physical registers from `reg` (RZ/URZ/PT/UPT included).
    Phys { reg: PReg, count: u8 },
}

impl Reg {
    /// The whole of a virtual register of `words` words.
    pub fn whole(vreg: VReg, words: u8) -> Reg {
        Reg::Virt {
            vreg,
            first: 0,
            count: words,
        }
    }

    /// One word of a virtual register.
    pub fn word(vreg: VReg, word: u8) -> Reg {
        Reg::Virt {
            vreg,
            first: word,
            count: 1,
        }
    }

    pub fn phys(reg: PReg) -> Reg {
        Reg::Phys { reg, count: 1 }
    }

    pub fn vreg(self) -> Option<VReg> {
        match self {
            Reg::Virt { vreg, .. } => Some(vreg),
            Reg::Phys { .. } => None,
        }
    }

    pub fn count(self) -> u8 {
        match self {
            Reg::Virt { count, .. } | Reg::Phys { count, .. } => count,
        }
    }
}

/// A register operand with its role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegRef {
    pub reg: Reg,
    /// Written by the instruction (otherwise read).
    pub def: bool,
}

/// The prefix of a memory operand (`desc[UR4][...]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MemPrefix {
    None,
    /// `desc[URn]`: the global memory descriptor pair.
    Desc(Reg),
    /// `gdesc[URn]`: GMMA matrix descriptors (the register is a term).
    GDesc,
}

/// One term of a memory operand: a register with its suffix (`R2.64`, `RZ.U32`) or an offset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MemTerm {
    Reg(Reg, Option<&'static str>),
    Imm(i64),
}

/// Floating-point immediate encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatFmt {
    F32,
    /// The high 32 bits of a double (DADD/DMUL/DFMA immediates).
    F64Hi,
    F16,
    BF16,
}

/// What an operand is.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    Reg(RegRef),
    Int(i64),
    Float(FloatFmt, u64),
    /// `c[bank][base + offset]`
    CBank {
        bank: u32,
        base: Option<Reg>,
        offset: i64,
    },
    /// `[...]`, `desc[...][...]`
    Mem {
        prefix: MemPrefix,
        terms: Vec<MemTerm>,
    },
    /// `SR_*`, by number.
    SReg(u8),
    /// A branch target.
    Block(BlockId),
    /// A call target (function symbol).
    Func(String),
    /// The address of a subroutine (`mov.u64 %rd, f`): its offset in the kernel's section, as
    /// ptxas writes it (zluda `func_ptr`: `MOV R7, 0xa0`, no relocation); `lower/link.rs`
    /// replaces it by the subroutine's entry block.
    FuncAddr(String),
    /// The incoming value of a `PHI` from a predecessor.
    PhiArg(BlockId, Reg),
    /// A convergence barrier register `B0`–`B15` (`BSSY`/`BSYNC`).
    Barrier(u8),
    /// A set of scoreboards, bit `i` for `SBi` (`DEPBAR {5,4,3,2,1,0}` is 0x3f).
    SbSet(u8),
    /// A named operand nvdisasm prints as a word (`SB0` of `DEPBAR.LE SB0, 0x0`).
    Sym(&'static str),
    /// The value a guarded instruction's destination keeps where the guard is false (`@p mov
    /// %r, 1` in SSA form reads the old `%r`). Not printed in SASS: leaving SSA form turns it
    /// into a `COPY` into the destination before the instruction.
    Prior(Reg),
}

/// An operand with nvdisasm's decorations.
#[derive(Debug, PartialEq)]
pub struct Operand {
    pub kind: OpKind,
    /// `-x`
    pub neg: bool,
    /// `|x|`
    pub abs: bool,
    /// `!p`, `~r`
    pub not: bool,
    /// `.H0_H0`, `.ROW`, `.negA`, … after the operand.
    pub suffix: Suffixes,
}

/// Every suffix selection puts after an operand ([`Suffixes`] holds indices into it).
static SUFFIX_WORDS: [&str; 8] = [
    "H0_H0", "ROW", "COL", "SIGN", "negA", "negB", "tnspA", "tnspB",
];

/// The suffixes of an operand, in order: up to four, each an index into [`SUFFIX_WORDS`] plus
/// one (0: none). Four bytes where a `Vec<&'static str>` took 24 and made [`Operand`] 64 bytes
/// (40 with this): every instruction's operand list, and every copy selection keeps of one, is
/// that much smaller (callgrind and page faults in `docs/passes/lowering.md`, "Cost of
/// instruction selection"). Almost every operand has none; the most any has is a wgmma
/// descriptor's `negA.negB.tnspA.tnspB`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Suffixes([u8; 4]);

impl Suffixes {
    /// Appends `word`, which must be one of [`SUFFIX_WORDS`] (a new suffix is added there).
    pub fn push(&mut self, word: &'static str) {
        let Some(k) = SUFFIX_WORDS.iter().position(|w| *w == word) else {
            panic!("operand suffix `{word}` is not in mir::SUFFIX_WORDS");
        };
        let n = self.len();
        assert!(n < self.0.len(), "more than four suffixes on one operand");
        self.0[n] = k as u8 + 1;
    }

    pub fn len(&self) -> usize {
        self.0.iter().take_while(|&&k| k != 0).count()
    }

    pub fn is_empty(&self) -> bool {
        self.0[0] == 0
    }

    /// The `i`-th suffix.
    pub fn get(&self, i: usize) -> Option<&'static &'static str> {
        match self.0.get(i) {
            Some(&k) if k != 0 => Some(&SUFFIX_WORDS[usize::from(k) - 1]),
            _ => None,
        }
    }

    pub fn iter(&self) -> SuffixIter {
        SuffixIter {
            suffixes: *self,
            next: 0,
        }
    }

    pub fn contains(&self, word: &&str) -> bool {
        self.iter().any(|w| w == word)
    }

    pub fn to_vec(&self) -> Vec<&'static str> {
        self.iter().copied().collect()
    }
}

/// The iterator of [`Suffixes::iter`].
pub struct SuffixIter {
    suffixes: Suffixes,
    next: usize,
}

impl Iterator for SuffixIter {
    type Item = &'static &'static str;

    fn next(&mut self) -> Option<&'static &'static str> {
        let w = self.suffixes.get(self.next)?;
        self.next += 1;
        Some(w)
    }
}

impl IntoIterator for &Suffixes {
    type Item = &'static &'static str;
    type IntoIter = SuffixIter;

    fn into_iter(self) -> SuffixIter {
        self.iter()
    }
}

impl std::ops::Index<usize> for Suffixes {
    type Output = &'static str;

    fn index(&self, i: usize) -> &&'static str {
        self.get(i).expect("suffix index out of range")
    }
}

/// As a list (`["H0_H0"]`), as the `Vec` it replaced printed.
impl fmt::Debug for Suffixes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// As derived, with the common case first: a register operand is copied field by field,
/// where the derived clone matched on the kind (selection keeps a copy of many instructions,
/// `lower/isel/uniform.rs` `FirstDefs`).
impl Clone for Operand {
    #[inline]
    fn clone(&self) -> Operand {
        Operand {
            kind: match &self.kind {
                OpKind::Reg(r) => OpKind::Reg(*r),
                other => other.clone(),
            },
            neg: self.neg,
            abs: self.abs,
            not: self.not,
            suffix: self.suffix,
        }
    }
}

impl Operand {
    pub fn new(kind: OpKind) -> Operand {
        Operand {
            kind,
            neg: false,
            abs: false,
            not: false,
            suffix: Suffixes::default(),
        }
    }

    pub fn def(reg: Reg) -> Operand {
        Operand::new(OpKind::Reg(RegRef { reg, def: true }))
    }

    pub fn use_(reg: Reg) -> Operand {
        Operand::new(OpKind::Reg(RegRef { reg, def: false }))
    }

    pub fn imm(v: i64) -> Operand {
        Operand::new(OpKind::Int(v))
    }

    pub fn negated(mut self) -> Operand {
        self.neg = true;
        self
    }

    pub fn inverted(mut self) -> Operand {
        self.not = true;
        self
    }

    pub fn with_suffix(mut self, s: &'static str) -> Operand {
        self.suffix.push(s);
        self
    }

    /// Every register the operand mentions, with its role (memory and constant-bank
    /// registers are always read).
    pub fn regs(&self) -> impl Iterator<Item = RegRef> + '_ {
        // No allocation: this runs for every operand in every pass.
        let used = |r: &Reg| RegRef {
            reg: *r,
            def: false,
        };
        let (first, terms): (Option<RegRef>, &[MemTerm]) = match &self.kind {
            OpKind::Reg(r) => (Some(*r), &[]),
            OpKind::CBank { base: Some(b), .. } => (Some(used(b)), &[]),
            OpKind::Mem { prefix, terms } => match prefix {
                MemPrefix::Desc(r) => (Some(used(r)), terms),
                _ => (None, terms),
            },
            OpKind::PhiArg(_, r) | OpKind::Prior(r) => (Some(used(r)), &[]),
            _ => (None, &[]),
        };
        first
            .into_iter()
            .chain(terms.iter().filter_map(move |t| match t {
                MemTerm::Reg(r, _) => Some(used(r)),
                _ => None,
            }))
    }

    /// The registers of the operand, mutably (for renaming and allocation); like
    /// [`Operand::regs`], without allocating.
    pub fn regs_mut(&mut self) -> impl Iterator<Item = &mut Reg> + '_ {
        let (first, terms): (Option<&mut Reg>, &mut [MemTerm]) = match &mut self.kind {
            OpKind::Reg(r) => (Some(&mut r.reg), &mut []),
            OpKind::CBank { base: Some(b), .. } => (Some(b), &mut []),
            OpKind::Mem { prefix, terms } => match prefix {
                MemPrefix::Desc(r) => (Some(r), terms),
                _ => (None, terms),
            },
            OpKind::PhiArg(_, r) | OpKind::Prior(r) => (Some(r), &mut []),
            _ => (None, &mut []),
        };
        first
            .into_iter()
            .chain(terms.iter_mut().filter_map(|t| match t {
                MemTerm::Reg(r, _) => Some(r),
                _ => None,
            }))
    }
}

/// The guard predicate of an instruction: `@P0`, `@!UP1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guard {
    pub pred: Reg,
    pub neg: bool,
}

/// A MIR instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub guard: Option<Guard>,
    /// The SASS mnemonic (`IADD3`) or a pseudo (`PHI`, `COPY`, `UNDEF`).
    pub mnemonic: &'static str,
    /// Modifiers in nvdisasm's order (`E`, `STRONG`, `GPU`).
    pub mods: Vec<&'static str>,
    pub ops: Vec<Operand>,
    /// A conditional branch whose condition may differ between the threads of a warp: the
    /// `reconverge` pass brackets it with `BSSY`/`BSYNC`.
    pub divergent: bool,
    /// For an mbarrier instruction (`SYNCS`, `ARRIVES`): what ptxas records for it in
    /// `EIATTR_MBARRIER_INSTR_OFFSETS`, which depends on the PTX operation (the SASS of
    /// `test_wait` and `test_wait.parity` is the same). Set by instruction selection; `None`
    /// elsewhere, and the cubin writer refuses an mbarrier instruction that has none.
    pub mbarrier: Option<MbarrierRecord>,
    /// One of the warp-wide instructions of a warp-aggregated atomic (`VOTEU`, `REDUX`,
    /// `SHFL`; `lower/isel/atomics.rs`): ptxas lists their offsets in
    /// `EIATTR_INT_WARP_WIDE_INSTR_OFFSETS`, not among the user's warp-synchronous ones.
    pub warp_wide: bool,
    /// A subroutine's save or restore of a register its callers keep (`passes/prologue.rs`):
    /// frame code, not spill code, so no `EIATTR_ANNOTATIONS` SpillRefill for it (ptxas's
    /// `fact` saves R2, R17, R20, R21 and has none: `tests/sass-probes/ptx/funcs.ptx`).
    pub frame_save: bool,
    /// Where the PTX instruction this was selected from starts (byte offset into the source):
    /// the debug line tables (`.debug_line`, `.nv_debug_line_sass`) and the addresses of PTX
    /// labels in debug sections follow it. `None` for what passes add (copies, spill code,
    /// the prologue), which belongs to the instruction before it.
    pub src: Option<SrcPos>,
}

/// A byte offset into the PTX source ([`Inst::src`]), kept as the offset plus one in a
/// `NonZeroU32` so that `Option<SrcPos>` takes four bytes, not eight: with it `Inst` is 88
/// bytes instead of 96 (`docs/passes/lowering.md` has what that saved).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SrcPos(std::num::NonZeroU32);

impl SrcPos {
    /// The position of byte `offset` (at most `u32::MAX - 1`).
    pub fn new(offset: u32) -> SrcPos {
        SrcPos(
            std::num::NonZeroU32::new(offset.wrapping_add(1))
                .expect("a source offset below u32::MAX"),
        )
    }

    /// The byte offset.
    pub fn offset(self) -> u32 {
        self.0.get() - 1
    }
}

/// Printed as the offset, as the `u32` it replaced was.
impl fmt::Debug for SrcPos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.offset(), f)
    }
}

/// What `EIATTR_MBARRIER_INSTR_OFFSETS` says about one mbarrier instruction
/// (`emit::build::mbarrier_entry` has the rule and the probes that show it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MbarrierRecord {
    /// An entry of this kind (0 `init` … 0xc `complete_tx`).
    Kind(u8),
    /// No entry: ptxas records none (`arrive.expect_tx`, `arrive_drop.expect_tx`).
    NoEntry,
}

impl Inst {
    pub fn new(mnemonic: &'static str, mods: &[&'static str], ops: Vec<Operand>) -> Inst {
        Inst {
            divergent: false,
            mbarrier: None,
            warp_wide: false,
            frame_save: false,
            src: None,
            guard: None,
            mnemonic,
            mods: mods.to_vec(),
            ops,
        }
    }

    /// The instruction with its `EIATTR_MBARRIER_INSTR_OFFSETS` description (`None`: unknown).
    pub fn mbarrier(mut self, record: Option<MbarrierRecord>) -> Inst {
        self.mbarrier = record;
        self
    }

    /// The instruction marked as a warp-wide instruction of a warp-aggregated atomic.
    /// The instruction as a subroutine's save or restore ([`Inst::frame_save`]).
    pub fn frame_save(mut self) -> Inst {
        self.frame_save = true;
        self
    }

    pub fn warp_wide(mut self) -> Inst {
        self.warp_wide = true;
        self
    }

    pub fn guarded(mut self, pred: Reg, neg: bool) -> Inst {
        self.guard = Some(Guard { pred, neg });
        self
    }

    pub fn is_phi(&self) -> bool {
        self.mnemonic == "PHI"
    }

    pub fn is_pseudo(&self) -> bool {
        matches!(self.mnemonic, "PHI" | "COPY" | "UNDEF" | "KILL")
    }

    /// Whether control leaves the block after (or instead of) this instruction. `BPT.TRAP`
    /// (`trap`) ends the thread.
    pub fn is_terminator(&self) -> bool {
        matches!(
            self.mnemonic,
            "BRA" | "EXIT" | "RET" | "BRX" | "JMP" | "JMX"
        ) || self.mnemonic == "BPT" && self.mods.contains(&"TRAP")
    }

    /// Every register mentioned, with its role; the guard counts as a use.
    pub fn regs(&self) -> impl Iterator<Item = RegRef> + '_ {
        InstRegs {
            ops: self.ops.iter(),
            terms: [].iter(),
            guard: self.guard,
        }
    }

    /// Calls `f` with every register [`Inst::regs`] yields, in the same order: operands
    /// first, the guard last. The same walk as plain loops, for the passes that visit every
    /// instruction (dead code, selection's bookkeeping): the chained iterators of `regs` cost
    /// several times more per register.
    #[inline]
    pub fn for_each_reg(&self, mut f: impl FnMut(RegRef)) {
        for o in &self.ops {
            match &o.kind {
                OpKind::Reg(r) => f(*r),
                OpKind::CBank { base: Some(b), .. } => f(RegRef {
                    reg: *b,
                    def: false,
                }),
                OpKind::Mem { prefix, terms } => {
                    if let MemPrefix::Desc(r) = prefix {
                        f(RegRef {
                            reg: *r,
                            def: false,
                        });
                    }
                    for t in terms {
                        if let MemTerm::Reg(r, _) = t {
                            f(RegRef {
                                reg: *r,
                                def: false,
                            });
                        }
                    }
                }
                OpKind::PhiArg(_, r) | OpKind::Prior(r) => f(RegRef {
                    reg: *r,
                    def: false,
                }),
                _ => {}
            }
        }
        if let Some(g) = self.guard {
            f(RegRef {
                reg: g.pred,
                def: false,
            });
        }
    }

    /// Calls `f` with every register of the instruction, mutably, in the order of
    /// [`Inst::for_each_reg`] (operands, then the guard): renaming and allocation without the
    /// chained iterators of [`Operand::regs_mut`].
    #[inline]
    pub fn for_each_reg_mut(&mut self, mut f: impl FnMut(&mut Reg)) {
        for o in &mut self.ops {
            match &mut o.kind {
                OpKind::Reg(r) => f(&mut r.reg),
                OpKind::CBank { base: Some(b), .. } => f(b),
                OpKind::Mem { prefix, terms } => {
                    if let MemPrefix::Desc(r) = prefix {
                        f(r);
                    }
                    for t in terms {
                        if let MemTerm::Reg(r, _) = t {
                            f(r);
                        }
                    }
                }
                OpKind::PhiArg(_, r) | OpKind::Prior(r) => f(r),
                _ => {}
            }
        }
        if let Some(g) = &mut self.guard {
            f(&mut g.pred);
        }
    }

    pub fn defs(&self) -> impl Iterator<Item = Reg> + '_ {
        self.regs().filter(|r| r.def).map(|r| r.reg)
    }

    pub fn uses(&self) -> impl Iterator<Item = Reg> + '_ {
        self.regs().filter(|r| !r.def).map(|r| r.reg)
    }

    /// The branch targets named by the instruction.
    /// The branch targets of a terminator (a `BSSY` names a block too, but control does not
    /// go there from it).
    pub fn targets(&self) -> impl Iterator<Item = BlockId> + '_ {
        // The operand kind first: most instructions name no block, and for them the mnemonic
        // comparisons of `is_terminator` are never made (every CFG construction asks every
        // instruction).
        self.ops
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::Block(b) => Some(b),
                _ => None,
            })
            .filter(move |_| self.is_terminator())
    }
}

/// The iterator of [`Inst::regs`]: each operand's registers as [`Operand::regs`] yields them
/// (a memory operand's descriptor, then its terms), then the guard. One flat state machine:
/// every pass walks every instruction's registers, and nested `flat_map`/`chain` adapters
/// cost several times more per register (callgrind, `straight_16000.ptx`: `dce` 21.5M
/// instructions with them).
struct InstRegs<'a> {
    ops: std::slice::Iter<'a, Operand>,
    /// The registers of the memory operand being walked.
    terms: std::slice::Iter<'a, MemTerm>,
    guard: Option<Guard>,
}

impl Iterator for InstRegs<'_> {
    type Item = RegRef;

    #[inline]
    fn next(&mut self) -> Option<RegRef> {
        let used = |r: &Reg| RegRef {
            reg: *r,
            def: false,
        };
        loop {
            for t in self.terms.by_ref() {
                if let MemTerm::Reg(r, _) = t {
                    return Some(used(r));
                }
            }
            let Some(o) = self.ops.next() else {
                return self.guard.take().map(|g| used(&g.pred));
            };
            match &o.kind {
                OpKind::Reg(r) => return Some(*r),
                OpKind::CBank { base: Some(b), .. } => return Some(used(b)),
                OpKind::Mem { prefix, terms } => {
                    self.terms = terms.iter();
                    if let MemPrefix::Desc(r) = prefix {
                        return Some(used(r));
                    }
                }
                OpKind::PhiArg(_, r) | OpKind::Prior(r) => return Some(used(r)),
                _ => {}
            }
        }
    }
}

/// A basic block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bb{}", self.0)
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// The PTX label the block starts at, if any.
    pub label: Option<String>,
    pub insts: Vec<Inst>,
    /// The block control falls through to when its last instruction does not branch
    /// unconditionally (the next block in layout order, made explicit).
    pub fallthrough: Option<BlockId>,
}

/// A function (a kernel or a `.func`) in MIR.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    /// Where the function's name is in the PTX (what a diagnostic about the whole function
    /// points at; the default span for functions made by tests).
    pub span: crate::frontend::ast::Span,
    pub is_entry: bool,
    /// Blocks in layout order; `blocks[0]` is the entry.
    pub blocks: Vec<Block>,
    pub vregs: Vec<VRegInfo>,
    /// Whether the function is in SSA form (each vreg defined once, `PHI`s at merges).
    pub ssa: bool,
    /// The register budget (`.maxnreg`; 255 without one): the allocator keeps the
    /// register count ptxas reports (highest R used + 3) within it.
    pub max_regs: u32,
    /// The kernel reconfigures its registers (`setmaxnreg` with a `.maxnreg`): `setmaxnreg` is
    /// lowered to `USETMAXREG` (without `.maxnreg` ptxas ignores it, and so does ptxc).
    pub setmaxnreg: bool,
    /// Bytes of the thread's stack frame: `.local` data, then spill slots.
    pub frame_bytes: u32,
    /// `.pragma "enable_smem_spilling";` on a kernel: where its spills may go in shared memory
    /// (`passes/regalloc`, "Spilling to shared memory"); `None` spills to local memory only.
    pub smem_spill: Option<SmemSpill>,
    /// Precoloured virtual registers: the values a call passes and returns in the registers of
    /// the calling convention (`lower/isel/call.rs`). The allocator gives each its register and
    /// keeps every other value out of that register while it lives.
    pub fixed: Vec<(VReg, PReg)>,
    /// The subroutines `lower::link` appended to this kernel after its own blocks: their entry
    /// block, name and frame bytes, in layout order.
    pub subroutines: Vec<(BlockId, String, u32)>,
    /// The registers each of ptxas's slow paths (`lower/slow_path.rs`) writes, once its body is
    /// allocated (`driver::lower_with` allocates the slow paths first): a `CALL` to one of them
    /// overwrites only these, so the allocator may keep the caller's values in the others
    /// (`passes/regalloc`, `call_clobber_set`). A call to a slow path missing here is taken to
    /// overwrite the registers of any call.
    pub callee_writes: Vec<(String, RegSet)>,
    /// A subroutine whose callers keep nothing in the registers it writes: it saves none
    /// itself (`passes/prologue.rs`), its return address arrives in R2:R3, and once it is
    /// allocated its callers learn what it writes ([`Function::callee_writes`]). Every
    /// subroutine but the recursive and address-taken ones (and all in a debug build), and
    /// ptxas's slow paths (`lower/isel/call.rs`).
    pub caller_saved: bool,
}

/// A kernel's shared-memory spill area (`.pragma "enable_smem_spilling"`): after the static
/// `.shared` data, one 128-byte row per slot and warp (`passes/regalloc`, "Spilling to shared
/// memory").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SmemSpill {
    /// The shared-window address of the area: the end of the static data, 16-byte aligned
    /// (`0x400` without shared variables).
    pub start: u32,
    /// The warps of a CTA the area has room for: those of `.maxntid`/`.reqntid`, else as many
    /// as the register budget lets one SM hold.
    pub warps: u32,
    /// Slots per warp the allocator used (each one 32-bit word per lane); 0 until it spills.
    pub slots: u32,
}

impl SmemSpill {
    /// The bytes of the area (`EIATTR_SHARED_SCRATCH` adds the padding before it).
    pub fn bytes(&self) -> u32 {
        self.warps * self.slots * 128
    }
}

/// A set of physical registers, one bit per register of each file (the zero and true registers
/// included, though nothing ever puts them in): what a call may overwrite.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegSet {
    gpr: [u64; 4],
    ugpr: u64,
    pred: u8,
    upred: u8,
}

impl RegSet {
    /// The registers `r` of each file for which `member(class, r)` holds.
    pub fn from_fn(member: impl Fn(RegClass, usize) -> bool) -> RegSet {
        let mut s = RegSet::default();
        for class in [
            RegClass::Gpr,
            RegClass::Ugpr,
            RegClass::Pred,
            RegClass::UPred,
        ] {
            for r in 0..=usize::from(class.zero()) {
                if member(class, r) {
                    s.insert(class, r);
                }
            }
        }
        s
    }

    pub fn insert(&mut self, class: RegClass, r: usize) {
        match class {
            RegClass::Gpr => self.gpr[r / 64] |= 1 << (r % 64),
            RegClass::Ugpr => self.ugpr |= 1 << r,
            RegClass::Pred => self.pred |= 1 << r,
            RegClass::UPred => self.upred |= 1 << r,
        }
    }

    pub fn contains(&self, class: RegClass, r: usize) -> bool {
        match class {
            RegClass::Gpr => r < 256 && self.gpr[r / 64] >> (r % 64) & 1 != 0,
            RegClass::Ugpr => r < 64 && self.ugpr >> r & 1 != 0,
            RegClass::Pred => r < 8 && self.pred >> r & 1 != 0,
            RegClass::UPred => r < 8 && self.upred >> r & 1 != 0,
        }
    }

    /// The registers of either set.
    pub fn union(self, o: RegSet) -> RegSet {
        RegSet {
            gpr: std::array::from_fn(|k| self.gpr[k] | o.gpr[k]),
            ugpr: self.ugpr | o.ugpr,
            pred: self.pred | o.pred,
            upred: self.upred | o.upred,
        }
    }

    /// The registers of `class` in the set, in increasing order.
    pub fn of(&self, class: RegClass) -> impl Iterator<Item = usize> + '_ {
        (0..=usize::from(class.zero())).filter(move |&r| self.contains(class, r))
    }
}

impl std::fmt::Display for RegSet {
    /// `R0 R2-R5 P0-P2`: runs of registers, file by file.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for class in [
            RegClass::Gpr,
            RegClass::Ugpr,
            RegClass::Pred,
            RegClass::UPred,
        ] {
            let regs: Vec<usize> = self.of(class).collect();
            let mut k = 0;
            while k < regs.len() {
                let mut end = k;
                while end + 1 < regs.len() && regs[end + 1] == regs[end] + 1 {
                    end += 1;
                }
                let p = class.prefix();
                if !first {
                    f.write_str(" ")?;
                }
                first = false;
                if end == k {
                    write!(f, "{p}{}", regs[k])?;
                } else {
                    write!(f, "{p}{}-{p}{}", regs[k], regs[end])?;
                }
                k = end + 1;
            }
        }
        Ok(())
    }
}

impl Function {
    pub fn new(name: impl Into<String>, is_entry: bool) -> Function {
        Function {
            name: name.into(),
            span: crate::frontend::ast::Span::default(),
            is_entry,
            blocks: vec![Block::default()],
            vregs: Vec::new(),
            ssa: true,
            max_regs: 255,
            setmaxnreg: false,
            frame_bytes: 0,
            smem_spill: None,
            fixed: Vec::new(),
            subroutines: Vec::new(),
            callee_writes: Vec::new(),
            caller_saved: false,
        }
    }

    /// A fresh virtual register.
    pub fn new_vreg(
        &mut self,
        class: RegClass,
        words: u8,
        hint: Option<std::sync::Arc<str>>,
    ) -> VReg {
        self.vregs.push(VRegInfo { class, words, hint });
        VReg(self.vregs.len() as u32 - 1)
    }

    pub fn vreg(&self, v: VReg) -> &VRegInfo {
        &self.vregs[v.0 as usize]
    }

    pub fn new_block(&mut self, label: Option<String>) -> BlockId {
        self.blocks.push(Block {
            label,
            ..Block::default()
        });
        BlockId(self.blocks.len() as u32 - 1)
    }

    pub fn block(&self, b: BlockId) -> &Block {
        &self.blocks[b.0 as usize]
    }

    pub fn block_mut(&mut self, b: BlockId) -> &mut Block {
        &mut self.blocks[b.0 as usize]
    }

    /// The successors of a block: branch targets, then the fallthrough.
    pub fn successors(&self, b: BlockId) -> Vec<BlockId> {
        let block = self.block(b);
        let mut out: Vec<BlockId> = block.insts.iter().flat_map(Inst::targets).collect();
        if let Some(f) = block.fallthrough {
            out.push(f);
        }
        out.dedup();
        out
    }

    pub fn block_ids(&self) -> impl Iterator<Item = BlockId> {
        (0..self.blocks.len() as u32).map(BlockId)
    }

    /// The register a precoloured virtual register must be given ([`Function::fixed`]).
    pub fn fixed_reg(&self, v: VReg) -> Option<PReg> {
        self.fixed.iter().find(|(f, _)| *f == v).map(|(_, p)| *p)
    }

    pub fn num_insts(&self) -> usize {
        self.blocks.iter().map(|b| b.insts.len()).sum()
    }
}

/// A whole module in MIR.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    pub functions: Vec<Function>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written `Operand::clone` copies every field of every kind of operand: the
    /// register fast path, decorations, suffixes, and the kinds that own heap data.
    #[test]
    fn sisel2_operand_clone_copies_every_field() {
        let r = Reg::whole(VReg(7), 2);
        let mut decorated = Operand::use_(r);
        decorated.neg = true;
        decorated.abs = true;
        decorated.not = true;
        decorated.suffix.push("negA");
        decorated.suffix.push("tnspB");
        let operands = [
            Operand::def(r),
            decorated,
            Operand::imm(-5),
            Operand::new(OpKind::Mem {
                prefix: MemPrefix::Desc(Reg::whole(VReg(3), 2)),
                terms: vec![MemTerm::Reg(r, Some("64")), MemTerm::Imm(16)],
            }),
            Operand::new(OpKind::Func("callee".into())),
            Operand::new(OpKind::PhiArg(BlockId(2), r)),
        ];
        for o in &operands {
            assert_eq!(&o.clone(), o);
        }
    }

    /// An operand's suffixes keep their order and print as the list they replaced; the
    /// operand stays 40 bytes (a `Vec` of suffixes made it 64).
    #[test]
    fn sisel3_suffixes_keep_order_and_operand_stays_small() {
        let mut s = Suffixes::default();
        assert!(s.is_empty());
        for w in ["tnspB", "negA", "ROW", "H0_H0"] {
            s.push(w);
        }
        assert_eq!(s.len(), 4);
        assert_eq!(s.to_vec(), ["tnspB", "negA", "ROW", "H0_H0"]);
        assert_eq!(s[1], "negA");
        assert_eq!(s.get(4), None);
        assert!(s.contains(&"ROW") && !s.contains(&"COL"));
        assert_eq!(format!("{s:?}"), r#"["tnspB", "negA", "ROW", "H0_H0"]"#);
        let printed = Operand::use_(Reg::phys(PReg::RZ))
            .with_suffix("negA")
            .with_suffix("negB")
            .to_string();
        assert_eq!(printed, "RZ.negA.negB");
        assert_eq!(std::mem::size_of::<Operand>(), 40);
    }

    /// `Inst` stays 88 bytes: its source position is four bytes with its `None`, and it keeps
    /// the offset it was given (0 included).
    #[test]
    fn sisel4_inst_is_88_bytes_and_src_pos_round_trips() {
        assert_eq!(std::mem::size_of::<Option<SrcPos>>(), 4);
        assert_eq!(std::mem::size_of::<Inst>(), 88);
        for o in [0, 1, 4096, u32::MAX - 1] {
            assert_eq!(SrcPos::new(o).offset(), o);
        }
        assert_eq!(format!("{:?}", Some(SrcPos::new(17))), "Some(17)");
        assert!(SrcPos::new(3) < SrcPos::new(4));
    }
}
