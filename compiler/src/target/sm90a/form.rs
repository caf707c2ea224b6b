//! What a form is: fixed bits, modifier fields and operand fields.
//!
//! A [`Form`] is one encoding of one mnemonic: the 12-bit opcode and every bit that is not a
//! field are fixed (`base` under `mask`); each modifier ([`ModSpec`]) and operand ([`OpSpec`])
//! names the bit fields it lives in. Encoding ORs field values into `base`; decoding checks
//! `word & mask == base` and extracts the fields. The tables themselves are in `forms/`.

use super::bits::Field;
use super::model::FloatFmt;
use std::fmt;
use std::ops::Deref;

/// A list inside a form (modifiers, operands, suffixes, memory terms): a vector while the DSL
/// builds the tables (`forms/`), a static slice in the tables the build script embeds
/// (`tables.rs`). Both read as a slice.
#[derive(Clone)]
pub enum List<T: 'static> {
    Static(&'static [T]),
    Built(Vec<T>),
}

impl<T: Clone> List<T> {
    /// An empty list with room for `n` items.
    pub fn with_capacity(n: usize) -> List<T> {
        List::Built(Vec::with_capacity(n))
    }
    /// Appends an item (a static list is copied into a vector first).
    pub fn push(&mut self, t: T) {
        match self {
            List::Built(v) => v.push(t),
            List::Static(s) => {
                let mut v = s.to_vec();
                v.push(t);
                *self = List::Built(v);
            }
        }
    }
}

impl<T> Deref for List<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            List::Static(s) => s,
            List::Built(v) => v,
        }
    }
}

impl<'a, T> IntoIterator for &'a List<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T> From<Vec<T>> for List<T> {
    fn from(v: Vec<T>) -> List<T> {
        List::Built(v)
    }
}

/// Printed as the slice, whichever way the list is held (so that the embedded tables and the
/// DSL's print alike).
impl<T: fmt::Debug> fmt::Debug for List<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A value → name map of a modifier or suffix field. An empty name means "printed as nothing".
pub type Names = &'static [(u32, &'static str)];

/// How an integer immediate is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImmFmt {
    /// As an unsigned hex number (`0xffffffff`).
    UHex,
    /// Sign-extended, as `-0x1` when negative.
    SHex,
}

/// A term of a memory operand.
#[derive(Clone, Debug)]
pub enum TermSpec {
    Gpr(Field),
    Ugpr(Field),
    /// A signed byte offset.
    Imm(Field),
}

/// A memory-operand term with its printing rule.
#[derive(Clone, Debug)]
pub struct MemTermSpec {
    pub term: TermSpec,
    /// The register suffix (`.64`, `.U32`, `.X4`), fixed or from a field.
    pub sfx: Option<SfxSpec>,
    /// Omitted when RZ/URZ/0 (unless every term is omitted: then the first is printed).
    pub opt: bool,
    /// How many consecutive registers the term reads (for `.64` addresses: 2).
    pub regs: u8,
    /// RZ is not allowed (nvdisasm prints `???255`).
    pub nz: bool,
}

/// The address prefix of a memory operand.
#[derive(Clone, Debug)]
pub enum PrefixSpec {
    None,
    /// `desc[URx]` with the UR in this field.
    Desc(Field),
    /// `gdesc[...]`.
    GDesc,
}

/// A memory operand: prefix and terms, printed `[t0+t1+t2]`.
#[derive(Clone, Debug)]
pub struct MemSpec {
    pub prefix: PrefixSpec,
    pub terms: List<MemTermSpec>,
    /// An offset printed alone (the register left out) is printed unsigned, as an absolute
    /// address (LDS/STS/LDL/STL/ATOMS without a UR: `[0xfffffb]`); elsewhere it stays signed.
    pub abs_imm: bool,
}

/// What kind of operand a slot holds and where its value lives.
#[derive(Clone, Debug)]
pub enum Spec {
    /// A general register (8-bit number, 255 = RZ).
    Gpr(Field),
    /// A uniform register (6-bit number on sm_90a, 63 = URZ).
    Ugpr(Field),
    /// A predicate (`uniform`: UP0–UPT); its negation bit is [`OpSpec::not`]. With `inv` the
    /// field holds 7 − number (0 = PT), as in the trailing predicates of HMMA/IMMA/GMMA.
    Pred { f: Field, uniform: bool, inv: bool },
    /// An integer immediate.
    Imm { f: Field, fmt: ImmFmt },
    /// A floating-point immediate.
    Float { f: Field, fmt: FloatFmt },
    /// `c[bank][base+offset]`; `base` is a GPR field when the form has one.
    CBank {
        bank: Field,
        off: Field,
        base: Option<Field>,
    },
    /// A memory operand.
    Mem(MemSpec),
    /// A special register number.
    SReg(Field),
    /// A branch target: `addr + 16 + value*scale` when `rel`, else `value*scale`. With `reg`, a
    /// register printed before it (`R2 0x0`).
    Target {
        f: Field,
        scale: u32,
        rel: bool,
        reg: Option<Field>,
    },
    /// A convergence barrier B0–B15.
    Bar(Field),
    /// A keyword chosen by a field (`2D`, `gsb0`, `SB0`, …).
    Enum { f: Field, names: Names },
    /// A keyword that is always there (`UPR`).
    Lit(&'static str),
    /// A scoreboard set `{5,...,0}`.
    SbSet(Field),
}

/// A suffix after an operand (`.H1_H1`, `.64`): from a field, or fixed (`f == None`, printed
/// `names[0].1`).
#[derive(Clone, Debug)]
pub struct SfxSpec {
    pub f: Option<Field>,
    pub names: Names,
}

/// When an operand is left out of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elide {
    /// The raw value that is not printed (for predicates: number | not << 3).
    pub value: u64,
    /// Only when the next operand is left out too (nvdisasm drops trailing PTs).
    pub with_next: bool,
}

/// Whether an operand is read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Written by the instruction.
    Def,
    /// Read by the instruction.
    Use,
    /// Read and written (e.g. a register pair that is accumulated into).
    DefUse,
}

/// How many consecutive registers a register operand covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regs {
    N(u8),
    /// Chosen by a modifier: `(mod index, table of (raw value, count))`; values not listed → 1.
    ByMod(usize, &'static [(u32, u8)]),
    /// Chosen by the raw value of a field of the word (an operand's field, such as a texture's
    /// dimension or channel mask): `(field, table of (raw value, count))`; values not listed → 1.
    ByField(Field, &'static [(u32, u8)]),
}

/// One operand slot of a form.
#[derive(Clone, Debug)]
pub struct OpSpec {
    pub spec: Spec,
    /// Bit printed as `-x`.
    pub neg: Option<u8>,
    /// Bit printed as `|x|`.
    pub abs: Option<u8>,
    /// Bit printed as `~x` / `!P`.
    pub not: Option<u8>,
    /// The reuse slot (control bit 122 + slot) shown as `.reuse`.
    pub reuse: Option<u8>,
    pub sfx: List<SfxSpec>,
    pub elide: Option<Elide>,
    pub role: Role,
    pub regs: Regs,
    /// The zero register is not allowed in this slot (nvdisasm prints it as `???63`).
    pub nz: bool,
}

/// A modifier of a form, in print order.
#[derive(Clone, Debug)]
pub enum ModSpec {
    /// Always printed (`LUT`, `WIDE`, `MMA`).
    Fixed(&'static str),
    /// Chosen by a field.
    Field { f: Field, names: Names },
    /// Printed when a condition on the operands holds (`IMAD.MOV`, `IMAD.SHL`); carries no bits.
    Alias { name: &'static str, when: AliasCond },
}

/// The operand conditions under which nvdisasm prints an alias modifier (IMAD's; evidence:
/// `tests/sass-probes/imad_alias.txt`). Operand slots: 1 = A, 2 = B, 3 = C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AliasCond {
    /// `IMAD.MOV` with register or immediate B and register C: A or B is RZ.
    MovRr,
    /// `IMAD.MOV` with immediate B: A is RZ, B is 0, or B is 1 and C is RZ.
    MovRi,
    /// `IMAD.IADD`: A is not RZ, B is 1, C is not RZ.
    Iadd,
    /// `IMAD.SHL`: A is not RZ, C is RZ, B a power of two from 2 to 2^30 other than 2^16.
    Shl,
}

impl AliasCond {
    /// Whether the condition holds for an instruction's raw operand values.
    pub fn holds(self, v: &Vals) -> bool {
        const RZ: u64 = 255;
        let pow2_shift =
            |b: u64| (2..=0x4000_0000).contains(&b) && b.is_power_of_two() && b != 0x1_0000;
        match self {
            AliasCond::MovRr => v.ops[1] == RZ || v.ops[2] == RZ,
            AliasCond::MovRi => {
                v.ops[1] == RZ || v.ops[2] == 0 || (v.ops[2] == 1 && v.ops[3] == RZ)
            }
            AliasCond::Iadd => v.ops[1] != RZ && v.ops[2] == 1 && v.ops[3] != RZ,
            AliasCond::Shl => v.ops[1] != RZ && v.ops[3] == RZ && pow2_shift(v.ops[2]),
        }
    }
}

/// Raw field values of an instruction being encoded or decoded, for alias conditions.
#[derive(Clone, Debug, Default)]
pub struct Vals {
    /// Per operand slot: the main field's raw value (register number, immediate bits, …).
    pub ops: Vec<u64>,
    /// Per modifier: the field's raw value (0 for fixed modifiers and aliases).
    pub mods: Vec<u64>,
}

/// Fixed- or variable-latency: whether results are tracked with a scoreboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Latency {
    /// The result is ready after a fixed number of cycles (stall counts cover it).
    Fixed,
    /// The result arrives after a variable time: consumers wait on a scoreboard.
    Variable,
}

/// One encoding of one mnemonic.
#[derive(Clone, Debug)]
pub struct Form {
    /// Index in [`super::tables::all`].
    pub id: usize,
    pub mnemonic: &'static str,
    /// Bits [11:0].
    pub opcode: u16,
    /// The fixed bits (opcode, hidden fields, ptxas's constant bits).
    pub base: [u64; 2],
    /// Which bits are fixed; computed from the fields.
    pub mask: [u64; 2],
    pub mods: List<ModSpec>,
    pub ops: List<OpSpec>,
    /// The guard predicate is a uniform predicate (`@UP0`).
    pub uguard: bool,
    /// The control word must have an empty wait mask (nvdisasm rejects others).
    pub nowait: bool,
    /// The control word must not set a write scoreboard (nvdisasm rejects one): the form writes
    /// no register a scoreboard could track (stores, branches, barriers).
    /// Evidence: `tests/sass-probes/ctrlscan.txt`.
    pub nowbar: bool,
    /// The control word must not set a read scoreboard (branches, `DEPBAR`, `FENCE`, GMMA…).
    pub norbar: bool,
    pub latency: Latency,
    /// The table file the form is in (`int`, `memory`, …).
    pub family: &'static str,
    /// What proved the encoding: a probe or corpus file, or a bit-flip experiment.
    pub evidence: &'static str,
}

impl Form {
    /// The mnemonic with its fixed modifiers (`IMAD.WIDE`), for messages and listings.
    pub fn title(&self) -> String {
        let mut s = self.mnemonic.to_string();
        for m in &self.mods {
            match m {
                ModSpec::Fixed(t) => {
                    s.push('.');
                    s.push_str(t);
                }
                ModSpec::Field { names, .. } => {
                    let alts: Vec<&str> = names.iter().map(|(_, n)| *n).collect();
                    if alts.len() > 8 {
                        s.push_str(&format!(
                            ".{{{}|{}|…|{} ({} values)}}",
                            alts[0],
                            alts[1],
                            alts[alts.len() - 1],
                            alts.len()
                        ));
                    } else {
                        s.push_str(&format!(".{{{}}}", alts.join("|")));
                    }
                }
                ModSpec::Alias { name, .. } => s.push_str(&format!("[.{name}]")),
            }
        }
        s
    }

    /// All field bits of the form (modifiers and operands), as a mask.
    pub fn field_mask(&self) -> [u64; 2] {
        let mut m = [0u64, 0u64];
        let mut add = |f: &Field| {
            let fm = f.mask();
            m[0] |= fm[0];
            m[1] |= fm[1];
        };
        for md in &self.mods {
            if let ModSpec::Field { f, .. } = md {
                add(f);
            }
        }
        for o in &self.ops {
            o.for_each_field(|f| add(&f));
        }
        m
    }
}

impl OpSpec {
    /// Calls `v` with every field the operand slot uses.
    pub fn for_each_field(&self, mut v: impl FnMut(Field)) {
        match &self.spec {
            Spec::Gpr(f) | Spec::Ugpr(f) | Spec::SReg(f) | Spec::Bar(f) | Spec::SbSet(f) => v(*f),
            Spec::Pred { f, .. } | Spec::Imm { f, .. } | Spec::Float { f, .. } => v(*f),
            Spec::Enum { f, .. } => v(*f),
            Spec::CBank { bank, off, base } => {
                v(*bank);
                v(*off);
                if let Some(b) = base {
                    v(*b);
                }
            }
            Spec::Mem(m) => {
                if let PrefixSpec::Desc(f) = &m.prefix {
                    v(*f);
                }
                for t in &m.terms {
                    match &t.term {
                        TermSpec::Gpr(f) | TermSpec::Ugpr(f) | TermSpec::Imm(f) => v(*f),
                    }
                    if let Some(SfxSpec { f: Some(f), .. }) = &t.sfx {
                        v(*f);
                    }
                }
            }
            Spec::Target { f, reg, .. } => {
                v(*f);
                if let Some(r) = reg {
                    v(*r);
                }
            }
            Spec::Lit(_) => {}
        }
        for b in [self.neg, self.abs, self.not].into_iter().flatten() {
            v(Field::new(b, 1));
        }
        for s in &self.sfx {
            if let Some(f) = s.f {
                v(f);
            }
        }
    }

    /// The main field (whose value alias conditions and elision look at).
    pub fn main_field(&self) -> Option<Field> {
        match &self.spec {
            Spec::Gpr(f)
            | Spec::Ugpr(f)
            | Spec::SReg(f)
            | Spec::Bar(f)
            | Spec::SbSet(f)
            | Spec::Pred { f, .. }
            | Spec::Imm { f, .. }
            | Spec::Float { f, .. }
            | Spec::Enum { f, .. }
            | Spec::Target { f, .. } => Some(*f),
            Spec::CBank { .. } | Spec::Mem(_) | Spec::Lit(_) => None,
        }
    }

    /// The value used for elision: the main field, with the not bit above a predicate number.
    pub fn elide_value(&self, w: &[u64; 2]) -> u64 {
        let v = self.main_field().map(|f| f.get(w)).unwrap_or(0);
        match (&self.spec, self.not) {
            (Spec::Pred { .. }, Some(nb)) => v | (Field::new(nb, 1).get(w) << 3),
            _ => v,
        }
    }

    /// Sets the fields of an elided operand to its default.
    pub fn set_default(&self, w: &mut [u64; 2]) {
        if let Some(e) = self.elide {
            if let Some(f) = self.main_field() {
                f.set(w, e.value);
            }
            if let (Spec::Pred { .. }, Some(nb)) = (&self.spec, self.not) {
                Field::new(nb, 1).set(w, e.value >> 3);
            }
        }
    }
}
