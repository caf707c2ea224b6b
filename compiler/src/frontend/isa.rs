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
use std::sync::OnceLock;

/// Every PTX data type name (without the dot), for classifying modifiers.
pub const TYPE_NAMES: &[&str] = &[
    "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16",
    "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "e2m3x2",
    "e3m2x2", "e2m1x2", "ue8m0x2", "pred", "b1024", "s4", "u4", "b1",
];

/// [`TYPE_NAMES`] with their dots (a test checks the two lists agree), then the packed integer
/// types that only instruction type slots name (`add.u16x2`): the parsed forms borrow these
/// instead of formatting a string per type.
const DOTTED_TYPE_NAMES: &[&str] = &[
    ".b8", ".b16", ".b32", ".b64", ".b128", ".u8", ".u16", ".u32", ".u64", ".s8", ".s16", ".s32",
    ".s64", ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64", ".tf32", ".e4m3", ".e5m2",
    ".e4m3x2", ".e5m2x2", ".e2m3x2", ".e3m2x2", ".e2m1x2", ".ue8m0x2", ".pred", ".b1024", ".s4",
    ".u4", ".b1", ".u16x2", ".s16x2",
];

/// The dotted name of a type of [`TYPE_NAMES`].
fn dotted(name: &str) -> Option<&'static str> {
    DOTTED_TYPE_NAMES.iter().copied().find(|d| &d[1..] == name)
}

/// Named type sets used in the table (`T<$int>`).
const TYPE_SETS: &[(&str, &str)] = &[
    ("$int", "u16 u32 u64 s16 s32 s64"),
    ("$int8", "u8 u16 u32 u64 s8 s16 s32 s64"),
    ("$bit", "b16 b32 b64"),
    ("$intbit", "u16 u32 u64 s16 s32 s64 b16 b32 b64"),
    ("$half", "f16 f16x2 bf16 bf16x2"),
    (
        "$ldst",
        "b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64",
    ),
    (
        "$mov",
        "pred b16 b32 b64 b128 u16 u32 u64 s16 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64",
    ),
    (
        "$cvt",
        "u8 u16 u32 u64 s8 s16 s32 s64 f16 bf16 f32 f64 tf32 b16 b32 b64",
    ),
];

/// The instruction table. See the module documentation for the notation.
pub const TABLE: &str = include_str!("isa_table.txt");

/// A type slot constraint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeSlot {
    /// `T`, `U`, `W` or `X`.
    pub slot: char,
    pub required: bool,
    /// The allowed types with their dots, in table order.
    pub allowed: Vec<&'static str>,
}

/// A group of alternative modifiers (written with the dot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModGroup {
    pub required: bool,
    /// The vector-width group (`V{.v2 .v4}`).
    pub vector: bool,
    pub alternatives: Vec<&'static str>,
}

/// The type an operand must have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeRef {
    /// A type slot (`T`, `U`, …).
    Slot(char),
    /// Twice the width of a slot's type (`2T`).
    Double(char),
    /// A fixed type (`u32`, `pred`).
    Fixed(&'static str),
}

/// What an operand position accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperandKind {
    /// `d`: a destination register; `relaxed` allows a wider register; `pair` allows `p|q`.
    Dest {
        ty: TypeRef,
        relaxed: bool,
        pair: bool,
    },
    /// `a`: a register or an immediate.
    Value(TypeRef),
    /// `a~`: a register (which may be wider than the type, as cvt allows) or an immediate.
    WideValue(TypeRef),
    /// `r`: a register only.
    Register(TypeRef),
    /// `i`: an immediate only.
    Immediate(TypeRef),
    /// `p`: a predicate source.
    Pred,
    /// `m`: a memory address.
    Address,
    /// `l`: a branch target.
    Label,
    /// `V`: the data operand of a load/store/atomic.
    Data,
    /// `_`: anything (not checked here).
    Any,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperandSpec {
    pub kind: OperandKind,
    pub optional: bool,
}

/// One form of an opcode.
#[derive(Clone, Debug)]
pub struct Form {
    /// The full opcode, e.g. `add`, `barrier.cluster.arrive`.
    pub opcode: String,
    pub types: Vec<TypeSlot>,
    /// Fixed modifiers that must all be present (`.cc` in `add .cc T<...>`).
    pub fixed: Vec<&'static str>,
    pub groups: Vec<ModGroup>,
    pub operands: Vec<OperandSpec>,
    /// More operands may follow the listed ones.
    pub variadic: bool,
    /// `(sm, feature)`: the lowest target and ptxas's feature name.
    pub gate: Option<(u32, bool, String)>,
    /// Rejected from PTX 6.4 on sm_70+ (vote without .sync).
    pub nonsync: bool,
    /// The table line, for diagnostics and documentation.
    pub line: usize,
}

impl Form {
    /// Whether `m` (with the dot) may appear on this form.
    pub fn allows_modifier(&self, m: &str) -> bool {
        self.fixed.contains(&m) || self.groups.iter().any(|g| g.alternatives.contains(&m))
    }

    /// The groups (indices into `groups`) that take the modifier word `m`, in order.
    pub fn groups_with<'a>(&'a self, m: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.groups
            .iter()
            .enumerate()
            .filter(move |(_, g)| g.alternatives.contains(&m))
            .map(|(i, _)| i)
    }

    /// Whether the written types fit this form's type slots, in order.
    pub fn types_fit<'a>(&self, types: impl ExactSizeIterator<Item = &'a str>) -> bool {
        let required = self.types.iter().filter(|s| s.required).count();
        let n = types.len();
        n >= required
            && n <= self.types.len()
            && types
                .zip(&self.types)
                .all(|(t, slot)| slot.allowed.iter().any(|a| a[1..] == *t))
    }
}

/// The table, indexed by opcode at build time ([`OPCODES`]). An opcode's lines are parsed into
/// [`Form`]s the first time it is looked up: a run uses a few of the table's opcodes.
pub struct Isa {
    /// The forms of `OPCODES[k]`, parsed on first use.
    forms: [OnceLock<Vec<Form>>; OPCODES.len()],
    /// Every modifier word that appears anywhere in the table (with the dot), built on first use.
    vocabulary: OnceLock<FxHashSet<&'static str>>,
    /// The longest compound opcode, in words (`cp.async.bulk.prefetch.tensor` = 5).
    pub max_opcode_words: usize,
}

impl Isa {
    /// The forms of an opcode (`add`, `cp.async.bulk`), in table order.
    pub fn forms(&self, opcode: &str) -> Option<&[Form]> {
        let k = opcode_index(opcode)?;
        let forms = self.forms[k].get_or_init(|| {
            OPCODES[k]
                .1
                .iter()
                .map(|&(n, line)| parse_form(n, line))
                .collect::<Result<_, _>>()
                .unwrap_or_else(|e| panic!("isa.rs TABLE: {e}"))
        });
        Some(forms)
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
                    for g in &f.groups {
                        words.extend(g.alternatives.iter().copied());
                    }
                }
            }
            words
        })
    }

    /// Finds the longest known compound opcode of an instruction (`cp.async.bulk.tensor`) and
    /// returns it with the modifiers that follow it.
    pub fn split_opcode<'i>(
        &self,
        ins: &'i crate::frontend::ast::Instruction,
    ) -> Option<(String, Vec<&'i crate::frontend::ast::Name>)> {
        let head = ins.opcode.text.as_str();
        if is_compound_head(head) {
            let words: Vec<&str> = std::iter::once(head)
                .chain(ins.modifiers.iter().map(|m| m.text.as_str()))
                .collect();
            for n in (2..=self.max_opcode_words.min(words.len())).rev() {
                let name = words[..n].concat();
                if opcode_index(&name).is_some() {
                    return Some((name, ins.modifiers[n - 1..].iter().collect()));
                }
            }
        }
        opcode_index(head).map(|_| (head.to_string(), ins.modifiers.iter().collect()))
    }

    /// The table.
    pub fn get() -> &'static Isa {
        static ISA: Isa = Isa {
            forms: [const { OnceLock::new() }; OPCODES.len()],
            vocabulary: OnceLock::new(),
            max_opcode_words: MAX_OPCODE_WORDS,
        };
        &ISA
    }
}

// `OPCODES` (each opcode with its lines, sorted by opcode) and `MAX_OPCODE_WORDS`, from build.rs.
include!(concat!(env!("OUT_DIR"), "/isa_opcodes.rs"));

/// The position of an opcode in [`OPCODES`].
fn opcode_index(opcode: &str) -> Option<usize> {
    OPCODES.binary_search_by(|(op, _)| (*op).cmp(opcode)).ok()
}

/// Whether `head` is the first word of a compound opcode (`cp` of `cp.async.bulk`).
fn is_compound_head(head: &str) -> bool {
    // The compound opcodes `head.…` sort right after `head` itself (if present), before any
    // other opcode that merely starts with `head`'s letters.
    let dotted = |op: &str| {
        op.len() > head.len() && op.starts_with(head) && op.as_bytes()[head.len()] == b'.'
    };
    let from = OPCODES.partition_point(|(op, _)| *op < head);
    OPCODES[from..]
        .iter()
        .take_while(|(op, _)| op.starts_with(head))
        .any(|(op, _)| dotted(op))
}

fn expand_types(list: &str) -> Result<Vec<&'static str>, String> {
    let mut out = Vec::new();
    for w in list.split_whitespace() {
        let names = match TYPE_SETS.iter().find(|(n, _)| *n == w) {
            Some((_, set)) => *set,
            None => w,
        };
        for n in names.split_whitespace() {
            out.push(dotted(n).ok_or_else(|| format!("unknown type `{n}`"))?);
        }
    }
    Ok(out)
}

fn parse_type_ref(s: &str) -> Result<TypeRef, String> {
    Ok(match s {
        "T" | "U" | "W" | "X" => TypeRef::Slot(s.chars().next().unwrap_or('T')),
        "2T" => TypeRef::Double('T'),
        other if TYPE_NAMES.contains(&other) => {
            TypeRef::Fixed(dotted(other).ok_or_else(|| format!("unknown type `{other}`"))?)
        }
        other => return Err(format!("unknown operand type `{other}`")),
    })
}

/// Splits a form's modifier part into items, keeping `{...}` / `<...>` groups together.
fn split_items(s: &'static str) -> Result<Vec<&'static str>, String> {
    let mut items = Vec::new();
    let mut start = None;
    let mut depth = 0;
    for (k, c) in s.char_indices() {
        match c {
            '{' | '<' => depth += 1,
            '}' | '>' => depth -= 1,
            c if c.is_whitespace() && depth == 0 => {
                if let Some(b) = start.take() {
                    items.push(&s[b..k]);
                }
                continue;
            }
            _ => {}
        }
        start.get_or_insert(k);
    }
    if depth != 0 {
        return Err(format!("unbalanced group in `{s}`"));
    }
    if let Some(b) = start {
        items.push(&s[b..]);
    }
    Ok(items)
}

/// Parses one line of the table (`line_no` is its 1-based number, for messages).
fn parse_form(line_no: usize, line: &'static str) -> Result<Form, String> {
    let (head, tail) = line
        .split_once(" :")
        .or_else(|| line.split_once(':').filter(|(h, _)| !h.contains("::")))
        .ok_or_else(|| format!("line {line_no}: no `:` in `{line}`"))?;
    let mut items = split_items(head).map_err(|e| format!("line {line_no}: {e}"))?;
    if items.is_empty() {
        return Err(format!("line {line_no}: no opcode"));
    }
    let opcode = items.remove(0).to_string();
    let mut form = Form {
        opcode,
        types: vec![],
        fixed: vec![],
        groups: vec![],
        operands: vec![],
        variadic: false,
        gate: None,
        nonsync: false,
        line: line_no,
    };
    for item in items {
        let (prefix, body) = match item.find(['{', '<']) {
            Some(i) => (&item[..i], &item[i..]),
            None => ("", item),
        };
        let required = body.starts_with('<');
        let inner = body
            .strip_prefix(['{', '<'])
            .and_then(|b| b.strip_suffix(['}', '>']));
        match (prefix, inner) {
            ("T" | "U" | "W" | "X", Some(list)) => {
                let allowed = expand_types(list).map_err(|e| format!("line {line_no}: {e}"))?;
                form.types.push(TypeSlot {
                    slot: prefix.chars().next().unwrap_or('T'),
                    required,
                    allowed,
                })
            }
            ("V", Some(list)) | ("", Some(list)) => {
                let alternatives: Vec<&'static str> = list.split_whitespace().collect();
                form.groups.push(ModGroup {
                    required,
                    vector: prefix == "V",
                    alternatives,
                });
            }
            ("", None) if body.starts_with('.') => {
                // `.xorsign.abs` is one group alternative written as two words.
                form.fixed.push(body);
            }
            _ => return Err(format!("line {line_no}: cannot read `{item}`")),
        }
    }
    let mut rest = tail.split_whitespace().peekable();
    while let Some(tok) = rest.next() {
        if let Some(sm) = tok.strip_prefix("@sm") {
            let arch_a = sm.ends_with('a');
            let num: u32 = sm
                .trim_end_matches('a')
                .parse()
                .map_err(|_| format!("line {line_no}: bad gate `{tok}`"))?;
            let mut feature = String::new();
            for w in rest.by_ref() {
                feature.push_str(w);
                if w.ends_with('\'') && feature.len() > 1 {
                    break;
                }
                feature.push(' ');
            }
            form.gate = Some((num, arch_a, feature.trim_matches('\'').to_string()));
            continue;
        }
        if tok == "!nonsync" {
            form.nonsync = true;
            continue;
        }
        if tok == "*" {
            form.variadic = true;
            continue;
        }
        let (optional, tok) = match tok.strip_prefix('?') {
            Some(t) => (true, t),
            None => (false, tok),
        };
        let (letter, ty) = match tok.split_once(':') {
            Some((l, t)) => (
                l,
                Some(parse_type_ref(t).map_err(|e| format!("line {line_no}: {e}"))?),
            ),
            None => (tok, None),
        };
        let ty_or_t = || ty.clone().unwrap_or(TypeRef::Slot('T'));
        let kind = match letter {
            "d" => OperandKind::Dest {
                ty: ty_or_t(),
                relaxed: false,
                pair: false,
            },
            "d~" => OperandKind::Dest {
                ty: ty_or_t(),
                relaxed: true,
                pair: false,
            },
            "d|" => OperandKind::Dest {
                ty: ty_or_t(),
                relaxed: false,
                pair: true,
            },
            "a" => OperandKind::Value(ty_or_t()),
            "a~" => OperandKind::WideValue(ty_or_t()),
            "r" => OperandKind::Register(ty_or_t()),
            "i" => OperandKind::Immediate(ty_or_t()),
            "p" => OperandKind::Pred,
            "m" => OperandKind::Address,
            "l" => OperandKind::Label,
            "V" => OperandKind::Data,
            "_" => OperandKind::Any,
            other => return Err(format!("line {line_no}: unknown operand `{other}`")),
        };
        form.operands.push(OperandSpec { kind, optional });
    }
    Ok(form)
}

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
        // Every line parses (forms are otherwise only parsed when an opcode is used).
        for op in isa.opcodes() {
            let forms = isa.forms(op).unwrap();
            assert!(forms.iter().all(|f| f.opcode == op), "{op}");
        }
        assert!(isa.vocabulary().contains(".shared::cluster"));
        let add = isa.forms("add").unwrap();
        assert!(add.iter().any(|f| f.types[0].allowed.contains(&".f32")));
        let mapa = &isa.forms("mapa").unwrap()[0];
        assert_eq!(mapa.gate, Some((90, false, "mapa".to_string())));
        assert_eq!(isa.max_opcode_words, 5); // cp.async.bulk.prefetch.tensor
    }
}
