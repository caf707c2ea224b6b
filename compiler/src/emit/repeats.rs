//! Repeated instructions: which instructions of a function equal an earlier one but for their
//! address, so that the emit stage encodes each distinct instruction once and the scoreboard
//! pass analyses its operands once (`emit/sass.rs`, [`super::scoreboard::analyze_encoded`]).
//!
//! A large kernel repeats few distinct instructions: the straight-line 16k kernel of
//! `target/gen` (the timing tool's `--write`) has 8 121 instructions of which 509 differ (as listed, without their
//! addresses), the loop kernel 15 121 of which 3 389 differ. Encoding an instruction (finding
//! its form and binding every operand) cost about 1 500 machine instructions, finding it in a
//! hash map about 100.
//!
//! Two instructions are equal when their mnemonic, modifiers, guard, operands and control
//! bits are: an encoding depends on nothing else but the address, and the address only enters
//! through a branch target ([`Spec::Target`](crate::target::sm90a::form::Spec::Target)), so an
//! instruction whose mnemonic has such a form is never shared.
//!
//! The comparison is on a key of 64-bit words that spells the instruction out ([`key`]): every
//! list is preceded by its length and every variant by a tag, so equal keys mean equal
//! instructions. Names are `&'static str` and enter by address and length: the same text at two
//! addresses only costs a second entry. Floating-point immediates enter by their bits (`0.0`
//! and `-0.0` encode differently). Building, hashing and finding the keys costs about 550
//! machine instructions an instruction (4.5M on the straight-line 16k kernel, about what
//! hashing and comparing the instructions field by field cost; `docs/passes/scoreboard.md`,
//! "Cost").
//!
//! Layout (`emit/sass.rs`) finds the repeats earlier, on the MIR ([`MirRepeats`]), and copies a
//! repeat's converted instruction instead of converting it again; [`first_equal`] is the
//! definition, for any instruction stream, against which debug builds check layout's table
//! ([`shares_only_equals`]).

use crate::mir;
use crate::target::sm90a::{
    Instr, MemPrefix, MemTerm, Operand, OperandKind, Reg, encode::encoding_reads_address,
};
use rustc_hash::FxHashMap as HashMap;
use std::hash::{Hash, Hasher};

/// Repeated MIR instructions, found while laying out (`emit/sass.rs`, `lay_out`) so that a
/// repeat is not converted to the [`Instr`] model again (its operands rebuilt one by one) but
/// copied from the first, and so that [`first_equal`] need not spell out and hash every
/// converted instruction. Two MIR instructions with equal mnemonic, modifiers, guard and
/// operands convert to equal instructions, so they share as [`first_equal`] would have them
/// share; MIR that differs but converts to the same SASS (rare) is merely not shared.
///
/// On the straight-line 16k kernel: converting an instruction cost about 650 machine
/// instructions and [`first_equal`] about 550; hashing and comparing the MIR instruction costs
/// about 430 and copying the first one's conversion about 390 (`docs/passes/scoreboard.md`,
/// "Cost", seventh round).
#[derive(Default)]
pub struct MirRepeats<'f> {
    /// Hash of an instruction ([`mir_hash`]) → the distinct instructions with that hash.
    seen: HashMap<u64, Vec<Seen<'f>>>,
}

/// The first instruction of a kind: where it was laid out, and whether its encoding may be
/// shared (not when it depends on the address: a branch target).
#[derive(Clone, Copy)]
pub struct Seen<'f> {
    inst: &'f mir::Inst,
    pub at: usize,
    pub shared: bool,
}

impl<'f> MirRepeats<'f> {
    /// The first instruction equal to `mi` seen before, if any; otherwise `mi`, laid out at
    /// `at`, becomes the first of its kind.
    pub fn earlier(&mut self, mi: &'f mir::Inst, at: usize) -> Option<Seen<'f>> {
        let bucket = self.seen.entry(mir_hash(mi)).or_default();
        if let Some(s) = bucket.iter().find(|s| same_mir(s.inst, mi)) {
            return Some(*s);
        }
        bucket.push(Seen {
            inst: mi,
            at,
            shared: !encoding_reads_address(mi.mnemonic),
        });
        None
    }
}

/// Whether two MIR instructions convert to the same SASS instruction: all but the fields that
/// only feed side tables (`src`, `mbarrier`, `warp_wide`, …).
fn same_mir(a: &mir::Inst, b: &mir::Inst) -> bool {
    same_name(a.mnemonic, b.mnemonic)
        && a.guard == b.guard
        && a.mods.len() == b.mods.len()
        && a.mods.iter().zip(&b.mods).all(|(x, y)| same_name(x, y))
        && a.ops.len() == b.ops.len()
        && a.ops.iter().zip(&b.ops).all(|(x, y)| same_operand(x, y))
}

/// As the derived comparison, with the common case first: two register operands compare their
/// registers in place, where the derived comparison called a function for the kinds (1.2M of
/// the 129.2M instructions of compiling the straight-line 16k kernel).
fn same_operand(a: &mir::Operand, b: &mir::Operand) -> bool {
    let kinds = match (&a.kind, &b.kind) {
        (mir::OpKind::Reg(x), mir::OpKind::Reg(y)) => x == y,
        (x, y) => x == y,
    };
    kinds && a.neg == b.neg && a.abs == b.abs && a.not == b.not && a.suffix == b.suffix
}

/// Names compared by address first: selection writes each name from one table or literal.
fn same_name(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// A hash of the fields [`same_mir`] compares (some of them only in part: equal hashes are
/// confirmed by comparing).
fn mir_hash(mi: &mir::Inst) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    // The mnemonic by address: the same text elsewhere only costs a comparison.
    (mi.mnemonic.as_ptr() as usize).hash(&mut h);
    mi.mods.len().hash(&mut h);
    if let Some(g) = mi.guard {
        g.pred.hash(&mut h);
        g.neg.hash(&mut h);
    }
    mi.ops.len().hash(&mut h);
    for o in &mi.ops {
        std::mem::discriminant(&o.kind).hash(&mut h);
        match &o.kind {
            mir::OpKind::Reg(r) => r.hash(&mut h),
            mir::OpKind::Int(v) => v.hash(&mut h),
            mir::OpKind::Float(_, bits) => bits.hash(&mut h),
            mir::OpKind::CBank { offset, .. } => offset.hash(&mut h),
            // Branches differ by their targets (every branch of a function in one bucket made
            // the loop 16k kernel's layout quadratic: 76M instructions more).
            mir::OpKind::Block(b) => b.hash(&mut h),
            mir::OpKind::SReg(n) | mir::OpKind::Barrier(n) | mir::OpKind::SbSet(n) => {
                n.hash(&mut h)
            }
            mir::OpKind::Sym(s) => (s.as_ptr() as usize).hash(&mut h),
            // Memory operands of one base register differ by their offsets.
            mir::OpKind::Mem { terms, .. } => {
                for t in terms {
                    match t {
                        mir::MemTerm::Reg(r, _) => r.hash(&mut h),
                        mir::MemTerm::Imm(v) => v.hash(&mut h),
                    }
                }
            }
            _ => {}
        }
    }
    h.finish()
}

/// For each instruction of `code`, the index of the first instruction equal to it but for the
/// address (itself when there is none before it, and always for an instruction whose encoding
/// depends on its address).
pub fn first_equal(code: &[Instr]) -> Vec<usize> {
    // The first instruction of each distinct key, and whether it may be shared at all.
    let mut first: HashMap<Box<[u64]>, (usize, bool)> = HashMap::default();
    let mut out = Vec::with_capacity(code.len());
    let mut k_buf = Vec::new();
    for (k, i) in code.iter().enumerate() {
        key(i, &mut k_buf);
        let (at, shared) = match first.get(&k_buf[..]) {
            Some(&v) => v,
            None => {
                let v = (k, !encoding_reads_address(i.mnemonic));
                first.insert(k_buf.as_slice().into(), v);
                v
            }
        };
        out.push(if shared { at } else { k });
    }
    out
}

/// Whether `same` shares only what [`first_equal`] would: each instruction names itself or an
/// earlier one equal to it but for the address, whose encoding does not depend on the address.
/// Layout's table ([`MirRepeats`]) may share less (MIR that differs but converts alike), never
/// more; `emit/sass.rs` checks it in debug builds.
pub fn shares_only_equals(code: &[Instr], same: &[usize]) -> bool {
    let first = first_equal(code);
    same.len() == code.len()
        && same
            .iter()
            .enumerate()
            .all(|(k, &s)| s == k || (s < k && first[s] == first[k]))
}

/// A name as two words: its address and length.
fn name(key: &mut Vec<u64>, s: &'static str) {
    key.push(s.as_ptr() as u64);
    key.push(s.len() as u64);
}

/// A register as one word.
fn reg_bits(r: Reg) -> u64 {
    (r.file as u64) << 8 | u64::from(r.num)
}

/// The words of `i` but for its address, into `key` (cleared first).
fn key(i: &Instr, key: &mut Vec<u64>) {
    key.clear();
    name(key, i.mnemonic);
    key.push(i.mods.len() as u64);
    for &m in &i.mods {
        name(key, m);
    }
    let c = i.ctrl;
    key.push(reg_bits(i.guard.pred) | u64::from(i.guard.neg) << 16);
    key.push(
        u64::from(c.stall)
            | u64::from(c.yield_) << 8
            | u64::from(c.wbar) << 16
            | u64::from(c.rbar) << 24
            | u64::from(c.wait) << 32
            | u64::from(c.reuse) << 40,
    );
    key.push(i.operands.len() as u64);
    for o in &i.operands {
        operand(key, o);
    }
}

/// One operand: a word with its kind, flags and suffix count, the kind's values, the suffixes.
fn operand(key: &mut Vec<u64>, o: &Operand) {
    let tag: u64 = match o.kind {
        OperandKind::Reg(_) => 0,
        OperandKind::Int(_) => 1,
        OperandKind::Float(_) => 2,
        OperandKind::FloatBits(..) => 3,
        OperandKind::CBank(_) => 4,
        OperandKind::Mem(_) => 5,
        OperandKind::SReg(_) => 6,
        OperandKind::Sym(_) => 7,
        OperandKind::SbSet(_) => 8,
        OperandKind::RegTarget(..) => 9,
    };
    let flags = u64::from(o.neg)
        | u64::from(o.abs) << 1
        | u64::from(o.not) << 2
        | u64::from(o.reuse) << 3
        | u64::from(o.hidden) << 4;
    key.push(tag | flags << 8 | (o.suffix.len() as u64) << 16);
    match &o.kind {
        OperandKind::Reg(r) => key.push(reg_bits(*r)),
        OperandKind::Int(v) => key.push(*v as u64),
        OperandKind::Float(f) => key.push(f.to_bits()),
        OperandKind::FloatBits(fmt, b) => {
            key.push(*fmt as u64);
            key.push(*b);
        }
        OperandKind::CBank(c) => {
            key.push(u64::from(c.bank) | c.base.map_or(0, |r| 1 << 32 | reg_bits(r) << 40));
            key.push(c.offset as u64);
        }
        OperandKind::Mem(m) => {
            key.push(match m.prefix {
                MemPrefix::None => 0,
                MemPrefix::Desc(r) => 1 | reg_bits(r) << 8,
                MemPrefix::GDesc => 2,
            });
            key.push(m.terms.len() as u64);
            for t in &m.terms {
                match t {
                    MemTerm::Reg(r, None) => key.push(reg_bits(*r)),
                    MemTerm::Reg(r, Some(s)) => {
                        key.push(1 << 32 | reg_bits(*r));
                        name(key, s);
                    }
                    MemTerm::Imm(v) => {
                        key.push(2 << 32);
                        key.push(*v as u64);
                    }
                }
            }
        }
        OperandKind::SReg(n) | OperandKind::SbSet(n) => key.push(u64::from(*n)),
        OperandKind::Sym(s) => name(key, s),
        OperandKind::RegTarget(r, t) => {
            key.push(reg_bits(*r));
            key.push(*t as u64);
        }
    }
    for &s in &o.suffix {
        name(key, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::scoreboard::tests::code;
    use crate::target::sm90a::parse_instr;

    #[test]
    fn equal_instructions_but_for_the_address_share() {
        let c = code(&[
            "FFMA R5, R4, R3, R5",
            "FFMA R5, R4, R3, R6",
            "FFMA R5, R4, R3, R5",
            "FFMA R5, -R4, R3, R5",
            "FFMA R5, R4, R3, R6",
            "FFMA R5, -R4, R3, R5",
        ]);
        assert_eq!(first_equal(&c), vec![0, 1, 0, 3, 1, 3]);
        assert!(shares_only_equals(&c, &[0, 1, 0, 3, 1, 3]));
        assert!(
            shares_only_equals(&c, &[0, 1, 2, 3, 4, 5]),
            "sharing nothing is sound"
        );
        assert!(!shares_only_equals(&c, &[0, 0, 0, 3, 1, 3]), "1 is not 0");
        assert!(!shares_only_equals(&c, &[0, 1, 0, 3, 1]), "one entry short");
    }

    #[test]
    fn zero_and_negative_zero_differ() {
        let fadd = |imm: f64| {
            let mut i = parse_instr("FADD R1, R2, R3").unwrap();
            i.operands[2] = Operand::new(OperandKind::Float(imm));
            i
        };
        let c = vec![fadd(0.0), fadd(-0.0), fadd(0.0), fadd(-0.0)];
        assert_eq!(first_equal(&c), vec![0, 1, 0, 1]);
    }

    #[test]
    fn branches_never_share() {
        let c = code(&["BRA 0x40", "BRA 0x40", "EXIT", "EXIT"]);
        assert_eq!(first_equal(&c), vec![0, 1, 2, 2]);
    }
}
