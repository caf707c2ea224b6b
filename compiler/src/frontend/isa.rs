//! The PTX instruction table: which modifiers and operands each opcode takes, as data.
//!
//! Each line of [`TABLE`] is one *form* of an opcode:
//!
//! ```text
//! opcode   modifier-groups ... : operands ... [@smNN 'feature'] [!nonsync]
//! ```
//!
//! Modifier groups:
//! * `{.a .b}` optional, at most one of them; `<.a .b>` required, exactly one of them.
//! * `T<u32 s32>` / `T{...}`: the instruction type (required / optional). Further type slots are
//!   `U` and `W` and `X`, matched in the order the types are written (`cvt.f32.u32`: T=f32, U=u32).
//! * `V{.v2 .v4}`: the vector width of the data operand.
//!
//! Operands (positional):
//! * `d:TY` destination register, `d~:TY` one that may be wider than TY (ld/cvt/mov of narrow
//!   types), `d|:pred` a predicate destination that may be a pair `p|q`.
//! * `a:TY` a source register or immediate, `a~:TY` one whose register may be wider (cvt),
//!   `r:TY` a source register only, `i:TY` an immediate.
//! * `p` a source predicate (`!p` allowed, `1`/`0` not), `m` a memory address `[...]`,
//!   `l` a branch target label, `f` a function name or register holding one, `V` the data operand
//!   of ld/st (a vector `{...}` when a `.vN` is given), `_` any operand (not checked).
//! * `?x` an optional trailing operand, `*` any number of further operands.
//!
//! TY is `T`, `U`, `W`, `X` (the type slots), `2T` (twice T's width), or a type name (`u32`,
//! `b64`, `pred`).
//!
//! `@sm90 'mapa'` gates the form: below that target ptxas says
//! "Feature 'mapa' requires .target sm_90 or higher". Forms are tried in order; the first whose
//! type slots fit the written types decides.

use rustc_hash::FxHashSet;
use std::borrow::Cow;
use std::sync::OnceLock;

pub use super::isa_forms::{
    DOTTED_TYPE_NAMES, Form, ModGroup, OperandKind, OperandSpec, TYPE_NAMES, TypeRef, TypeSlot,
};

/// The instruction table. See the module documentation for the notation.
pub const TABLE: &str = include_str!("isa_table.txt");
/// The table, parsed and indexed by opcode at build time ([`OPCODES`], [`OPCODE_FORMS`]).
pub struct Isa {
    /// Every modifier word that appears anywhere in the table (with the dot), built on first use.
    vocabulary: OnceLock<FxHashSet<&'static str>>,
    /// The longest compound opcode, in words (`cp.async.bulk.prefetch.tensor` = 5).
    pub max_opcode_words: usize,
}

impl Isa {
    /// The forms of an opcode (`add`, `cp.async.bulk`), in table order.
    pub fn forms(&self, opcode: &str) -> Option<&[Form]> {
        opcode_index(opcode).map(|k| OPCODE_FORMS[k])
    }

    /// Every opcode of the table.
    pub fn opcodes(&self) -> impl Iterator<Item = &'static str> + '_ {
        OPCODES.iter().map(|(op, _)| *op)
    }

    /// Every modifier word that appears anywhere in the table (with the dot).
    pub fn vocabulary(&self) -> &FxHashSet<&'static str> {
        self.vocabulary.get_or_init(|| {
            let mut words = FxHashSet::default();
            for op in self.opcodes() {
                for f in self.forms(op).unwrap_or_default() {
                    words.extend(f.fixed.iter().copied());
                    for g in f.groups {
                        words.extend(g.alternatives.iter().copied());
                    }
                }
            }
            words
        })
    }

    /// Finds the longest known compound opcode of an instruction (`cp.async.bulk.tensor`) and
    /// returns it with the modifiers that follow it.
    ///
    /// The opcode is borrowed from the instruction unless it spans several words (`cp.async`),
    /// and the modifiers are the instruction's own: the checker and instruction selection split
    /// every instruction, and allocating for it cost four allocations per instruction.
    pub fn split_opcode<'i>(
        &self,
        ins: &'i crate::frontend::ast::Instruction,
    ) -> Option<(Cow<'i, str>, &'i [crate::frontend::ast::Name])> {
        let head = ins.opcode.text.as_str();
        if is_compound_head(head) {
            let words: Vec<&str> = std::iter::once(head)
                .chain(ins.modifiers.iter().map(|m| m.text.as_str()))
                .collect();
            for n in (2..=self.max_opcode_words.min(words.len())).rev() {
                let name = words[..n].concat();
                if opcode_index(&name).is_some() {
                    return Some((Cow::Owned(name), &ins.modifiers[n - 1..]));
                }
            }
        }
        opcode_index(head).map(|_| (Cow::Borrowed(head), &ins.modifiers[..]))
    }

    /// The table.
    pub fn get() -> &'static Isa {
        static ISA: Isa = Isa {
            vocabulary: OnceLock::new(),
            max_opcode_words: MAX_OPCODE_WORDS,
        };
        &ISA
    }
}

// From build.rs: `OPCODES` (each opcode with its lines, sorted by opcode), `OPCODE_FORMS` (the
// forms of `OPCODES[k]`, parsed), `MAX_OPCODE_WORDS`, and the lookups `opcode_index` (an
// opcode's position in `OPCODES`) and `is_compound_head` (`cp` of `cp.async.bulk`).
include!(concat!(env!("OUT_DIR"), "/isa_opcodes.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_type_names_are_the_type_names() {
        let undotted: Vec<&str> = DOTTED_TYPE_NAMES.iter().map(|d| &d[1..]).collect();
        assert_eq!(undotted[..TYPE_NAMES.len()], *TYPE_NAMES);
        assert!(DOTTED_TYPE_NAMES.iter().all(|d| d.starts_with('.')));
    }

    /// `build.rs` indexed the table as a scan of [`TABLE`] does: every line that is not blank or
    /// a comment, trimmed, with its 1-based number, under its first word.
    #[test]
    fn build_time_lines_are_the_table_lines() {
        let scanned: Vec<(&str, usize, &str)> = TABLE
            .lines()
            .enumerate()
            .map(|(k, l)| (k + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
            .map(|(n, l)| (l.split_whitespace().next().unwrap_or_default(), n, l))
            .collect();
        assert!(scanned.len() > 200);
        // The build-time index: every line under its opcode, in table order, opcodes sorted.
        let mut grouped: std::collections::BTreeMap<&str, Vec<(usize, &str)>> = Default::default();
        for (op, n, l) in scanned {
            grouped.entry(op).or_default().push((n, l));
        }
        let index: Vec<(&str, Vec<(usize, &str)>)> =
            OPCODES.iter().map(|(op, ls)| (*op, ls.to_vec())).collect();
        assert_eq!(index, grouped.into_iter().collect::<Vec<_>>());
        let heads: Vec<&str> = OPCODES
            .iter()
            .filter_map(|(op, _)| op.split_once('.').map(|(h, _)| h))
            .collect();
        for (op, _) in OPCODES.iter() {
            let head = op.split('.').next().unwrap_or_default();
            // (Instruction opcodes are single words: the modifiers are separate tokens.)
            assert_eq!(is_compound_head(head), heads.contains(&head), "{head}");
        }
    }

    #[test]
    fn table_parses() {
        let isa = Isa::get();
        assert!(
            isa.opcodes().count() > 100,
            "{} opcodes",
            isa.opcodes().count()
        );
        // The embedded forms are what the parser makes of each line (build.rs ran the same
        // parser; this catches a stale or mis-printed embedding).
        for (k, op) in isa.opcodes().enumerate() {
            let forms = isa.forms(op).unwrap();
            assert!(forms.iter().all(|f| f.opcode == op), "{op}");
            let parsed: Vec<Form> = OPCODES[k]
                .1
                .iter()
                .map(|&(n, line)| super::super::isa_forms::parse_form(n, line).unwrap())
                .collect();
            assert_eq!(format!("{parsed:?}"), format!("{forms:?}"), "{op}");
        }
        assert!(isa.vocabulary().contains(".shared::cluster"));
        let add = isa.forms("add").unwrap();
        assert!(add.iter().any(|f| f.types[0].allowed.contains(&".f32")));
        let mapa = &isa.forms("mapa").unwrap()[0];
        assert_eq!(mapa.gate, Some((90, false, "mapa")));
        assert_eq!(isa.max_opcode_words, 5); // cp.async.bulk.prefetch.tensor
    }
}
