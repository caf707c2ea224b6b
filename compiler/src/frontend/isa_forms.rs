//! The forms of the PTX instruction table (`isa_table.txt`; the notation is in `isa.rs`): their
//! types and the parser of one table line.
//!
//! The build script parses every line with [`parse_form`] and embeds the forms as static data
//! (`$OUT_DIR/isa_forms.rs`, written by `build/isa_forms.rs`), so that the compiler parses no
//! table line at run time; `isa.rs` checks the embedding against this parser in a test.

/// Every PTX data type name (without the dot), for classifying modifiers.
pub const TYPE_NAMES: &[&str] = &[
    "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16",
    "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "e2m3x2",
    "e3m2x2", "e2m1x2", "ue8m0x2", "pred", "b1024", "s4", "u4", "b1",
];

/// [`TYPE_NAMES`] with their dots (a test checks the two lists agree), then the packed integer
/// types that only instruction type slots name (`add.u16x2`): the parsed forms borrow these
/// instead of formatting a string per type.
pub const DOTTED_TYPE_NAMES: &[&str] = &[
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

/// A type slot constraint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeSlot {
    /// `T`, `U`, `W` or `X`.
    pub slot: char,
    pub required: bool,
    /// The allowed types with their dots, in table order.
    pub allowed: &'static [&'static str],
}

/// A group of alternative modifiers (written with the dot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModGroup {
    pub required: bool,
    /// The vector-width group (`V{.v2 .v4}`).
    pub vector: bool,
    pub alternatives: &'static [&'static str],
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
    pub opcode: &'static str,
    pub types: &'static [TypeSlot],
    /// Fixed modifiers that must all be present (`.cc` in `add .cc T<...>`).
    pub fixed: &'static [&'static str],
    pub groups: &'static [ModGroup],
    pub operands: &'static [OperandSpec],
    /// More operands may follow the listed ones.
    pub variadic: bool,
    /// `(sm, feature)`: the lowest target and ptxas's feature name.
    pub gate: Option<(u32, bool, &'static str)>,
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
                .zip(self.types)
                .all(|(t, slot)| slot.allowed.iter().any(|a| a[1..] == *t))
    }
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

/// Parses one line of the table (`line_no` is its 1-based number, for messages). The form's
/// lists are leaked: this runs in the build script (and in tests), once per line.
pub fn parse_form(line_no: usize, line: &'static str) -> Result<Form, String> {
    let (head, tail) = line
        .split_once(" :")
        .or_else(|| line.split_once(':').filter(|(h, _)| !h.contains("::")))
        .ok_or_else(|| format!("line {line_no}: no `:` in `{line}`"))?;
    let mut items = split_items(head).map_err(|e| format!("line {line_no}: {e}"))?;
    if items.is_empty() {
        return Err(format!("line {line_no}: no opcode"));
    }
    let opcode = items.remove(0);
    let mut form = Parsed {
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
                    allowed: leak(allowed),
                })
            }
            ("V", Some(list)) | ("", Some(list)) => {
                let alternatives: Vec<&'static str> = list.split_whitespace().collect();
                form.groups.push(ModGroup {
                    required,
                    vector: prefix == "V",
                    alternatives: leak(alternatives),
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
    Ok(form.finish())
}

/// A form while its line is parsed.
struct Parsed {
    opcode: &'static str,
    types: Vec<TypeSlot>,
    fixed: Vec<&'static str>,
    groups: Vec<ModGroup>,
    operands: Vec<OperandSpec>,
    variadic: bool,
    gate: Option<(u32, bool, String)>,
    nonsync: bool,
    line: usize,
}

impl Parsed {
    fn finish(self) -> Form {
        Form {
            opcode: self.opcode,
            types: leak(self.types),
            fixed: leak(self.fixed),
            groups: leak(self.groups),
            operands: leak(self.operands),
            variadic: self.variadic,
            gate: self
                .gate
                .map(|(sm, a, feature)| (sm, a, &*Box::leak(feature.into_boxed_str()))),
            nonsync: self.nonsync,
            line: self.line,
        }
    }
}

fn leak<T>(v: Vec<T>) -> &'static [T] {
    Box::leak(v.into_boxed_slice())
}
