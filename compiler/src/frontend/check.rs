//! Semantic checks with ptxas's meaning: header directives and target gating, declarations,
//! symbol and label resolution, and every instruction against the table in `isa.rs`
//! (modifiers, types, operand count and operand types).
//!
//! Messages say what is wrong in ptxc's words; where ptxas has a characteristic wording for the
//! same error (e.g. "Feature 'mapa' requires .target sm_90 or higher", "Conflicting directives:
//! .reqnctapercluster and .maxclusterrank cannot both be specified") ptxc uses it.

use super::ast::*;
use super::isa::{Form, Isa, OperandKind, TypeRef};
use super::types::{Kind, Ty, TySet};
use crate::diag::Diagnostic;
use compact_str::CompactString;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::hash::Hasher;
use std::rc::Rc;

/// The `-arch` the module is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arch {
    pub sm: u32,
    /// The architecture-specific `a` variant (sm_90a).
    pub a: bool,
}

impl Arch {
    pub const SM90A: Arch = Arch { sm: 90, a: true };

    /// `sm_90a` → `Arch { sm: 90, a: true }`; also accepts the `f` family suffix.
    pub fn parse(s: &str) -> Option<Arch> {
        let rest = s
            .strip_prefix("sm_")
            .or_else(|| s.strip_prefix("compute_"))?;
        let (digits, suffix) = rest.split_at(
            rest.find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len()),
        );
        let sm = digits.parse().ok()?;
        match suffix {
            "" => Some(Arch { sm, a: false }),
            "a" | "f" => Some(Arch { sm, a: true }),
            _ => None,
        }
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sm_{}{}", self.sm, if self.a { "a" } else { "" })
    }
}

/// What the checker learned about the module header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    pub version: (u32, u32),
    pub target: Arch,
    /// `debug` appeared in `.target`.
    pub debug: bool,
    pub address_size: u32,
    /// What each function body (by the function's name) contains that lowering rewrites
    /// before selection, seen while checking it: lowering then need not walk a large body again
    /// to find out (at 64k instructions, a walk costs a cache miss per instruction).
    pub bodies: HashMap<String, BodyFacts>,
}

/// What a function body contains, for lowering ([`ModuleInfo::bodies`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BodyFacts {
    /// A `call` instruction, anywhere in the body.
    pub calls: bool,
    /// A `.param` variable declared in the body (a call's argument or result).
    pub param_vars: bool,
}

/// The oldest PTX ISA version that knows a target (ptxas: "PTX .version 7.0 does not support
/// .target sm_90a").
fn min_version_for(t: Arch) -> (u32, u32) {
    match (t.sm, t.a) {
        (103, _) => (8, 8),
        (120 | 121, _) => (8, 7),
        (100 | 101 | 110, _) => (8, 6),
        (90, true) => (8, 0),
        (90, false) | (89, _) => (7, 8),
        (87, _) => (7, 4),
        (86, _) => (7, 1),
        (80, _) => (7, 0),
        (75, _) => (6, 3),
        (72, _) => (6, 1),
        (70, _) => (6, 0),
        _ => (1, 0),
    }
}

/// The newest PTX ISA version ptxas 13.1 accepts.
pub const MAX_VERSION: (u32, u32) = (9, 1);

/// A special register: its type, whether it has `.x/.y/.z` components, and its gate.
struct Sreg {
    name: &'static str,
    ty: &'static str,
    components: bool,
    min_sm: u32,
}

const SREGS: &[Sreg] = &[
    Sreg {
        name: "%tid",
        ty: "u32",
        components: true,
        min_sm: 0,
    },
    Sreg {
        name: "%ntid",
        ty: "u32",
        components: true,
        min_sm: 0,
    },
    Sreg {
        name: "%ctaid",
        ty: "u32",
        components: true,
        min_sm: 0,
    },
    Sreg {
        name: "%nctaid",
        ty: "u32",
        components: true,
        min_sm: 0,
    },
    Sreg {
        name: "%laneid",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%warpid",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%nwarpid",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%smid",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%nsmid",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%gridid",
        ty: "u64",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%lanemask_eq",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%lanemask_le",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%lanemask_lt",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%lanemask_ge",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%lanemask_gt",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%clock",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%clock_hi",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%clock64",
        ty: "u64",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%globaltimer",
        ty: "u64",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%globaltimer_lo",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%globaltimer_hi",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%total_smem_size",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%aggr_smem_size",
        ty: "u32",
        components: false,
        min_sm: 90,
    },
    Sreg {
        name: "%dynamic_smem_size",
        ty: "u32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%reserved_smem_offset_begin",
        ty: "b32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%reserved_smem_offset_end",
        ty: "b32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%reserved_smem_offset_cap",
        ty: "b32",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%current_graph_exec",
        ty: "u64",
        components: false,
        min_sm: 0,
    },
    Sreg {
        name: "%is_explicit_cluster",
        ty: "pred",
        components: false,
        min_sm: 90,
    },
    Sreg {
        name: "%clusterid",
        ty: "u32",
        components: true,
        min_sm: 90,
    },
    Sreg {
        name: "%nclusterid",
        ty: "u32",
        components: true,
        min_sm: 90,
    },
    Sreg {
        name: "%cluster_ctaid",
        ty: "u32",
        components: true,
        min_sm: 90,
    },
    Sreg {
        name: "%cluster_nctaid",
        ty: "u32",
        components: true,
        min_sm: 90,
    },
    Sreg {
        name: "%cluster_ctarank",
        ty: "u32",
        components: false,
        min_sm: 90,
    },
    Sreg {
        name: "%cluster_nctarank",
        ty: "u32",
        components: false,
        min_sm: 90,
    },
];

fn find_sreg(name: &str) -> Option<(&'static str, Ty, bool, u32)> {
    if let Some(s) = SREGS.iter().find(|s| s.name == name) {
        return Some((s.name, Ty::parse(s.ty)?, s.components, s.min_sm));
    }
    // Numbered families: %envreg0..31, %pm0..7, %pm0_64..%pm7_64, %reserved_smem_offset_<n>.
    let numbered = |prefix: &str, max: u32| {
        name.strip_prefix(prefix)
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n <= max)
    };
    if numbered("%envreg", 31) {
        return Some(("%envreg", Ty::parse("b32")?, false, 0));
    }
    if numbered("%pm", 7) {
        return Some(("%pm", Ty::parse("u32")?, false, 0));
    }
    if name.starts_with("%pm") && name.ends_with("_64") {
        return Some(("%pm_64", Ty::parse("u64")?, false, 0));
    }
    None
}

/// A register (or register family member) in scope.
#[derive(Clone, Copy, Debug)]
struct RegInfo {
    ty: Ty,
    /// 1 for a scalar; 2/4 for `.reg .v4 .f32 %v`.
    width: u32,
}

/// A variable (or parameter) in scope.
#[derive(Clone, Copy, Debug)]
struct VarInfo {
    space: Space,
    span: Span,
}

#[derive(Clone, Debug)]
struct FuncInfo {
    kind: FunctionKind,
    span: Span,
    defined: bool,
    is_extern: bool,
    params: usize,
    returns: usize,
}

/// One lexical scope of a function body.
#[derive(Default)]
struct Scope {
    regs: HashMap<String, RegInfo>,
    /// `%r<100>`: (prefix, count, info).
    families: Vec<(String, u64, RegInfo)>,
    vars: HashMap<String, VarInfo>,
    /// Labels are block-scoped: inline-asm blocks reuse names like `waitLoop`.
    labels: HashMap<String, Span>,
    /// Call prototypes and `.branchtargets`/`.calltargets` lists.
    target_lists: HashMap<String, Span>,
}

/// What a name in an operand refers to.
#[derive(Clone, Copy, Debug)]
enum Resolved {
    Reg(RegInfo),
    Sreg {
        ty: Ty,
        components: bool,
    },
    Var(VarInfo),
    Func,
    Label,
    /// `WARP_SZ`
    Const,
    Unknown,
}

/// Checks a parsed module. On success returns the header information and any warnings; on
/// failure, every diagnostic found (errors and warnings).
pub fn check(m: &Module, arch: Arch) -> Result<(ModuleInfo, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut c = Checker {
        isa: Isa::get(),
        diags: Vec::new(),
        info: ModuleInfo {
            version: (0, 0),
            target: arch,
            debug: false,
            address_size: 64,
            bodies: HashMap::default(),
        },
        arch,
        globals: HashMap::default(),
        funcs: HashMap::default(),
        called_externs: Vec::new(),
        shapes: ShapeMemo::default(),
    };
    c.module(m);
    if c.info.debug && !m.items.iter().any(|i| matches!(i, Item::Section { .. })) {
        // ptxas refuses a `.target …, debug` module without `.section` blocks (an empty
        // `.section .debug_info {}` is enough; tests/sass-probes/ptx/debug_loc.ptx).
        let span = m
            .items
            .iter()
            .find_map(|i| match i {
                Item::Target { span, .. } => Some(*span),
                _ => None,
            })
            .unwrap_or_default();
        c.diags.push(Diagnostic::error(
            span,
            "Debug information not found in presence of .target debug",
        ));
    }
    if c.diags.iter().any(Diagnostic::is_error) {
        Err(c.diags)
    } else {
        Ok((c.info, c.diags))
    }
}

struct Checker {
    isa: &'static Isa,
    diags: Vec<Diagnostic>,
    info: ModuleInfo,
    arch: Arch,
    globals: HashMap<String, VarInfo>,
    funcs: HashMap<String, FuncInfo>,
    called_externs: Vec<(String, Span)>,
    /// The checked opcode chains (`ld.global.f32`) that gave no diagnostic: a module repeats
    /// a few chains thousands of times, and what the table says of a chain depends on nothing
    /// else but the `.target` and `.version` (a new one of either empties it).
    shapes: ShapeMemo,
}

/// The memo of [`Checker::shapes`]. A chain of at most 15 bytes (`cvt.rn.f32.s32`: nearly
/// every chain of a kernel) is keyed by its text packed into one integer ([`chain_key`]) and
/// looked up first in a small direct-mapped table (one probe), then in a map; a longer chain
/// by [`chain_hash`] and then its text.
///
/// Measured on straight_16000 (16k instructions): the checker runs 1.1M instructions fewer
/// (16.1M → 14.9M) than with every chain looked up by hashing its words and comparing its text.
#[derive(Default)]
struct ShapeMemo {
    recent: [Option<(u128, Rc<Shape>)>; RECENT_SHAPES],
    short: HashMap<u128, Rc<Shape>>,
    long: HashMap<u64, ShapesOfHash>,
}

/// The slots of [`ShapeMemo::recent`] (a power of two; a kernel writes a few dozen chains).
const RECENT_SHAPES: usize = 32;

/// The checked long chains of one [`chain_hash`]: each chain's text and shape.
type ShapesOfHash = Vec<(Box<str>, Rc<Shape>)>;

impl ShapeMemo {
    fn slot(key: u128) -> usize {
        (key_hash(key) >> 56) as usize % RECENT_SHAPES
    }

    /// The shape of `ins`'s chain, if it was checked.
    fn get(&mut self, ins: &Instruction) -> Option<Rc<Shape>> {
        let Some(key) = chain_key(ins) else {
            let same_hash = self.long.get(&chain_hash(ins))?;
            let (_, shape) = same_hash.iter().find(|(text, _)| is_chain_of(text, ins))?;
            return Some(Rc::clone(shape));
        };
        let slot = &mut self.recent[Self::slot(key)];
        if let Some((k, shape)) = slot
            && *k == key
        {
            return Some(Rc::clone(shape));
        }
        let shape = self.short.get(&key)?;
        *slot = Some((key, Rc::clone(shape)));
        Some(Rc::clone(shape))
    }

    fn insert(&mut self, ins: &Instruction, shape: Rc<Shape>) {
        match chain_key(ins) {
            Some(key) => {
                self.recent[Self::slot(key)] = Some((key, Rc::clone(&shape)));
                self.short.insert(key, shape);
            }
            None => {
                let mut text = ins.opcode.text.to_string();
                for m in &ins.modifiers {
                    text.push_str(&m.text);
                }
                let same_hash = self.long.entry(chain_hash(ins)).or_default();
                same_hash.push((text.into_boxed_str(), shape));
            }
        }
    }

    fn clear(&mut self) {
        *self = ShapeMemo::default();
    }
}

/// `ins`'s opcode chain written out (`ld.global.f32`) and packed as [`short_key`] packs a name,
/// if it has at most 15 bytes: each word's bytes are put after the previous words' (one shift
/// and one `or` a word, no copy of the text).
// The opcode is packed before the loop over the modifiers (not as the first word of one loop
// over all words), which spares the chained iterator its state test per word: straight_16000,
// 16k instructions: 3.03M → 2.42M instructions.
fn chain_key(ins: &Instruction) -> Option<u128> {
    /// The bytes of a packed key, without its length byte.
    const TEXT_BYTES: u128 = (1 << 120) - 1;
    let opcode = short_key(&ins.opcode.text)?;
    let mut key = opcode & TEXT_BYTES;
    let mut len = ins.opcode.text.len();
    for m in &ins.modifiers {
        let text = m.text.as_str();
        let at = len;
        len += text.len();
        if len > 15 {
            return None;
        }
        key |= (short_key(text)? & TEXT_BYTES) << (8 * at);
    }
    Some(key | (len as u128) << 120)
}

/// A hash of an instruction's opcode chain, from its words (not joined: hashing the words is
/// cheaper than copying them into one key, and one chain always has the same words).
fn chain_hash(ins: &Instruction) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(ins.opcode.text.as_bytes());
    for m in &ins.modifiers {
        h.write(m.text.as_bytes());
    }
    h.finish()
}

/// Whether `text` is `ins`'s opcode chain written out (`ld.global.f32`).
fn is_chain_of(text: &str, ins: &Instruction) -> bool {
    let Some(mut rest) = text.strip_prefix(ins.opcode.text.as_str()) else {
        return false;
    };
    for m in &ins.modifiers {
        match rest.strip_prefix(m.text.as_str()) {
            Some(r) => rest = r,
            None => return false,
        }
    }
    rest.is_empty()
}

/// What the instruction table says of one opcode chain, and what follows from it alone for
/// the operands: computed once per distinct chain and shared (`Rc`) by every instruction that
/// writes it.
struct Shape {
    /// The instruction's name (`cp.async.bulk` takes three words of the chain).
    form_name: Box<str>,
    /// How many of the modifiers the name took.
    name_words: usize,
    /// The form the modifiers and types select.
    chosen: &'static Form,
    /// Per operand of `chosen`: the type it wants (its type slot or fixed type resolved).
    wants: Box<[Option<Ty>]>,
    /// Per operand of `chosen`: the operands the position accepts without its full check
    /// (see [`Checker::operand_fits`]).
    fast: Box<[FastOperand]>,
    /// The vector width of `.v2`/`.v4`/`.v8`, if written.
    vector: Option<u32>,
    /// The state space the modifiers name (`ld.global`), if exactly one.
    space: Option<Space>,
    /// Whether the first operand is a source (`st`, `red`, …), not a destination.
    is_store: bool,
    /// How many operands of `chosen` are not optional.
    required: usize,
    /// Whether the chain is a `cvt` without the rounding modifier its types need
    /// ([`cvt_needs_rounding`]): each such instruction gets the error.
    cvt_rounding_missing: bool,
    /// Whether the instruction's first operand is a barrier number to check
    /// ([`Checker::barrier_number`]).
    barrier_number: bool,
    /// Which positions of `chosen` the operands are when fewer are written than it lists
    /// (`written[n - required]` for `n` operands): the last optional positions are left out.
    written: Box<[Box<[usize]>]>,
    /// Whether the instruction is a `call` ([`Checker::call`] checks it further).
    is_call: bool,
}

/// The common operands an operand position accepts without a diagnostic, which
/// [`Checker::operand_fits`] recognises without the position's full check (`dest`, `value`,
/// `address`, …): computed once per opcode chain, from the position's kind and type.
#[derive(Clone, Copy, Debug)]
struct FastOperand {
    /// The types of a plain scalar register (`%r1`: a name without a component, declared
    /// without `.v2`/`.v4`) the position accepts: every position kind that takes a register (a
    /// destination, a value, a register, a predicate, the data of a load or store without a
    /// vector width) accepts such a register exactly when its type fits the position's type
    /// ([`Ty::register_fits`], relaxed as the kind says), or always if it has none.
    registers: TySet,
    /// Whether the position accepts an integer literal (`xor.b32 %r2, %r5, 3`) that fits in 64
    /// bits: a value, immediate or predicate position, or the data of a store, whose type (if
    /// any) is an integer, bit-size or predicate type.
    int_literal: bool,
    /// At an address position: the types of a plain scalar register it accepts as an address,
    /// alone or with an integer literal added or subtracted (`[%rd6+8]`), the 32- and 64-bit integer types
    /// (empty at any other position).
    address: TySet,
}

/// The register types an address may be held in: 32- or 64-bit integers and bit sizes.
fn address_registers() -> TySet {
    TySet::matching(|t| t.is_integer_like() && (t.bits() == 32 || t.bits() == 64))
}

/// Per-function state while checking a body.
struct FnCtx {
    scopes: Vec<Scope>,
    /// What each name looked up so far resolves to ([`Checker::resolve`]): a body names the
    /// same few registers thousands of times, and a name's meaning changes only when a
    /// declaration is added or a block is entered or left, which empty this memo.
    resolved: RefCell<ResolvedMemo>,
    /// What the body contains so far ([`ModuleInfo::bodies`]).
    facts: BodyFacts,
}

/// The memo of [`FnCtx::resolved`]. A name of at most 15 bytes (`%rd123`: nearly every name in
/// a body) is keyed by its bytes packed into one integer ([`short_key`]), which hashes and
/// compares in a few instructions, in a table of its own: open addressing with linear probing,
/// in a power-of-two number of slots at most half full, so that a lookup is one hash and
/// nearly always one compare. A longer name is looked up by its text in a map.
///
/// Measured on straight_16000 (56 names, 46k lookups): a 256-slot direct-mapped table in front
/// of a `HashMap` missed 24% of the lookups (two names of one slot evict each other), and each
/// miss cost about 70 instructions in the map.
struct ResolvedMemo {
    /// The slots of the short names (`None`: empty).
    short: Box<[Option<(u128, Resolved)>]>,
    /// How many slots of `short` are taken.
    short_len: usize,
    long: HashMap<CompactString, Resolved>,
}

/// The slots [`ResolvedMemo::short`] starts with (a power of two: a kernel names a few dozen
/// registers; 16 KiB).
const SHORT_SLOTS: usize = 256;

impl Default for ResolvedMemo {
    fn default() -> Self {
        ResolvedMemo {
            short: vec![None; SHORT_SLOTS].into_boxed_slice(),
            short_len: 0,
            long: HashMap::default(),
        }
    }
}

/// A hash of a [`short_key`], whose high bits are well mixed (a multiplicative hash: take the
/// top bits).
fn key_hash(key: u128) -> u64 {
    let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
    folded.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl ResolvedMemo {
    /// The first slot to probe for `key` in a table of `slots` slots (a power of two).
    fn home(key: u128, slots: usize) -> usize {
        (key_hash(key) >> (64 - slots.trailing_zeros())) as usize
    }

    /// What the name with packed key `key` resolves to, if it was resolved.
    // Inlined where it is called (`resolve` and the operand fast path): the fast path reads
    // the entry in place, not a copy of the 40-byte `Resolved`.
    #[inline(always)]
    fn get_short(&self, key: u128) -> Option<&Resolved> {
        let mask = self.short.len() - 1;
        let mut at = Self::home(key, self.short.len());
        loop {
            match &self.short[at] {
                Some((k, r)) if *k == key => return Some(r),
                Some(_) => at = (at + 1) & mask,
                None => return None,
            }
        }
    }

    #[inline(always)]
    fn get(&self, name: &str, key: Option<u128>) -> Option<Resolved> {
        match key {
            Some(k) => self.get_short(k).copied(),
            None => self.long.get(name).copied(),
        }
    }

    /// Remembers a name that is not in the memo yet.
    fn insert(&mut self, name: &str, key: Option<u128>, r: Resolved) {
        let Some(key) = key else {
            self.long.insert(CompactString::new(name), r);
            return;
        };
        if 2 * (self.short_len + 1) > self.short.len() {
            let grown = vec![None; 2 * self.short.len()].into_boxed_slice();
            let old = std::mem::replace(&mut self.short, grown);
            self.short_len = 0;
            for (k, r) in old.iter().flatten() {
                self.put(*k, *r);
            }
        }
        self.put(key, r);
    }

    /// Puts a key that is not in `short` into its first free slot.
    fn put(&mut self, key: u128, r: Resolved) {
        let mask = self.short.len() - 1;
        let mut at = Self::home(key, self.short.len());
        while self.short[at].is_some() {
            at = (at + 1) & mask;
        }
        self.short[at] = Some((key, r));
        self.short_len += 1;
    }

    fn clear(&mut self) {
        if self.short.len() > SHORT_SLOTS {
            // A grown table starts again at its first size: a body declares registers and
            // enters blocks many times, and filling a large table each time would cost more
            // than resolving its few names again.
            self.short = vec![None; SHORT_SLOTS].into_boxed_slice();
        } else if self.short_len > 0 {
            self.short.fill(None);
        }
        self.short_len = 0;
        self.long.clear();
    }
}

/// `name`'s bytes and length packed into one integer (distinct names give distinct keys), if
/// it has at most 15 bytes.
///
/// Byte `i` of the name is byte `i` of the key (little-endian) and byte 15 is the length, as
/// copying the name into a zeroed 16-byte array would give; the bytes are read with two
/// fixed-size loads that may overlap (a copy of a variable length is a `memcpy` call: at 16k
/// straight-line instructions, 46k lookups, it cost about 1.5M instructions).
// Inlined into its callers: it is a few loads and shifts, less than the call (straight_16000:
// 2.6M instructions as a call, for 100k names and chain words).
#[inline(always)]
pub(crate) fn short_key(name: &str) -> Option<u128> {
    // Functions, not closures, so that they can be marked inline (as closures, one call site
    // in the checker was a call).
    #[inline(always)]
    fn load4(b: &[u8], at: usize) -> u64 {
        u64::from(u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
    }
    #[inline(always)]
    fn load8(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
    }
    let b = name.as_bytes();
    let n = b.len();
    // Bytes 0..8 of the key and bytes 8..15.
    let (lo, hi) = match n {
        0 => (0, 0),
        // The first, middle and last byte, each at its place (for one or two bytes, the same
        // byte twice): three loads instead of a loop (`%r1`, `.lo`, `add`: many names and
        // opcode words are this short).
        1..=3 => (
            u64::from(b[0])
                | u64::from(b[n / 2]) << (8 * (n / 2))
                | u64::from(b[n - 1]) << (8 * (n - 1)),
            0,
        ),
        // The second load repeats bytes `n - 4 .. 4` of the first, at the same places.
        4..=7 => (load4(b, 0) | load4(b, n - 4) << (8 * (n - 4)), 0),
        8 => (load8(b, 0), 0),
        // The second load starts with bytes `n - 8 .. 8` of the first, shifted out.
        9..=15 => (load8(b, 0), load8(b, n - 8) >> (8 * (16 - n))),
        _ => return None,
    };
    Some(u128::from(lo) | u128::from(hi) << 64 | (n as u128) << 120)
}

impl FnCtx {
    fn label(&self, name: &str) -> Option<Span> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.labels.get(name).copied())
    }

    fn target_list(&self, name: &str) -> Option<Span> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.target_lists.get(name).copied())
    }

    fn lookup(&self, name: &str) -> Option<Resolved> {
        for scope in self.scopes.iter().rev() {
            if let Some(r) = scope.regs.get(name) {
                return Some(Resolved::Reg(*r));
            }
            if let Some(v) = scope.vars.get(name) {
                return Some(Resolved::Var(*v));
            }
            // Family members: %r<100> declares %r0 … %r99.
            // Bytes, not chars (a byte of a multi-byte character is never an ASCII digit).
            let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                let (prefix, num) = name.split_at(name.len() - digits);
                // `%r01` is not a member of `%r<…>`.
                if (num.len() == 1 || !num.starts_with('0'))
                    && let Ok(n) = num.parse::<u64>()
                {
                    for (p, count, info) in &scope.families {
                        if p == prefix && n < *count {
                            return Some(Resolved::Reg(*info));
                        }
                    }
                }
            }
        }
        None
    }
}

fn expr_names<'e>(e: &'e Expr, out: &mut SmallVec<[&'e Name; 2]>) {
    match e {
        Expr::Name { name, .. } => out.push(name),
        Expr::Lit { .. } => {}
        Expr::Unary { arg, .. } => expr_names(arg, out),
        Expr::Binary { lhs, rhs, .. } => {
            expr_names(lhs, out);
            expr_names(rhs, out);
        }
        Expr::Cond {
            cond, then, other, ..
        } => {
            expr_names(cond, out);
            expr_names(then, out);
            expr_names(other, out);
        }
        Expr::Call { args, .. } => args.iter().for_each(|a| expr_names(a, out)),
    }
}

/// Whether a `cvt` with modifiers `mods` (not types) and types `types` lacks the rounding
/// modifier ptxas requires: a float result of an integer or of a wider float needs `.rn`/`.rz`/…,
/// an integer result of a float needs `.rni`/`.rzi`/… (a `.pack` conversion needs none).
fn cvt_needs_rounding(mods: &[&Name], types: &[(Ty, Span)]) -> bool {
    let has = |w: &str| mods.iter().any(|m| m.text == w);
    if types.len() != 2 || has(".pack") {
        return false;
    }
    let (d, s) = (types[0].0, types[1].0);
    let float_round = [".rn", ".rz", ".rm", ".rp", ".rna", ".rs"]
        .iter()
        .any(|r| has(r));
    let int_round = [".rni", ".rzi", ".rmi", ".rpi"].iter().any(|r| has(r));
    if d.is_float() && s.is_integer_like() {
        !float_round
    } else if d.is_integer_like() && s.is_float() {
        !int_round
    } else if d.is_float() && s.is_float() && d.bits() < s.bits() {
        !float_round
    } else {
        false
    }
}

/// The positions of `chosen` that `n` written operands are, for `n` between the form's
/// `required` operands and all of them: the last optional positions are the missing ones (`bar.red.and.pred p, a,
/// c` leaves out the optional thread count `b`).
fn written_positions(chosen: &Form, required: usize, n: usize) -> Box<[usize]> {
    let max = chosen.operands.len();
    // The first `keep_optional` optional positions stay (none if more are missing than there
    // are optional positions).
    let keep_optional = (max - required).saturating_sub(max - n);
    let mut optional_seen = 0;
    let mut positions = Vec::new();
    for (s, spec) in chosen.operands.iter().enumerate() {
        if spec.optional {
            optional_seen += 1;
            if optional_seen > keep_optional {
                continue;
            }
        }
        positions.push(s);
    }
    positions.truncate(n);
    positions.into_boxed_slice()
}

/// Whether integer literal `text` fits in 64 bits ([`parse_int`] takes it). A decimal literal of
/// up to 19 digits (`8`, `100`: nearly every literal of a kernel) always fits, which is tested
/// without parsing (straight_16000, 4k literals: about 60 instructions fewer each).
fn int_literal_fits(text: &str) -> bool {
    let b = text.as_bytes();
    let short_decimal = (1..=19).contains(&b.len())
        && (b[0] != b'0' || b.len() == 1)
        && b.iter().all(u8::is_ascii_digit);
    short_decimal || parse_int(text).is_some()
}

/// Parses an integer literal (`42`, `0x2a`, `0b101010`, `052`, optional `U`).
pub fn parse_int(text: &str) -> Option<u64> {
    let t = text.trim_end_matches('U');
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// Evaluates a constant integer expression; `None` if it is not one.
pub fn eval_const(e: &Expr) -> Option<i128> {
    Some(match e {
        Expr::Lit {
            kind: LitKind::Int,
            text,
            ..
        } => parse_int(text)? as i128,
        Expr::Name {
            name,
            component: None,
        } if name.text == "WARP_SZ" => 32,
        Expr::Unary { op, arg, .. } => {
            let v = eval_const(arg)?;
            match op {
                UnOp::Neg => -v,
                UnOp::Not => !v,
                UnOp::LogNot => (v == 0) as i128,
            }
        }
        Expr::Binary { op, lhs, rhs, .. } => {
            let (a, b) = (eval_const(lhs)?, eval_const(rhs)?);
            match op {
                BinOp::Add => a.checked_add(b)?,
                BinOp::Sub => a.checked_sub(b)?,
                BinOp::Mul => a.checked_mul(b)?,
                BinOp::Div => a.checked_div(b)?,
                BinOp::Rem => a.checked_rem(b)?,
                BinOp::Shl => a.checked_shl(u32::try_from(b).ok()?)?,
                BinOp::Shr => a.checked_shr(u32::try_from(b).ok()?)?,
                BinOp::And => a & b,
                BinOp::Or => a | b,
                BinOp::Xor => a ^ b,
                BinOp::LogAnd => (a != 0 && b != 0) as i128,
                BinOp::LogOr => (a != 0 || b != 0) as i128,
                BinOp::Eq => (a == b) as i128,
                BinOp::Ne => (a != b) as i128,
                BinOp::Lt => (a < b) as i128,
                BinOp::Le => (a <= b) as i128,
                BinOp::Gt => (a > b) as i128,
                BinOp::Ge => (a >= b) as i128,
            }
        }
        Expr::Cond {
            cond, then, other, ..
        } => {
            if eval_const(cond)? != 0 {
                eval_const(then)?
            } else {
                eval_const(other)?
            }
        }
        _ => return None,
    })
}

/// The state space an instruction's modifiers name, if exactly one is named (`cp.async` names
/// a destination and a source space).
fn instr_space(mods: &[&Name]) -> Option<Space> {
    if mods.iter().filter(|m| is_space(&m.text)).count() != 1 {
        return None;
    }
    mods.iter().find_map(|m| match m.text.as_str() {
        ".global" => Some(Space::Global),
        ".shared" | ".shared::cta" | ".shared::cluster" => Some(Space::Shared),
        ".local" => Some(Space::Local),
        ".param" | ".param::entry" | ".param::func" => Some(Space::Param),
        ".const" => Some(Space::Const),
        _ => None,
    })
}

impl Checker {
    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(span, msg));
    }

    fn warning(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::warning(span, msg));
    }

    /// Reports `feature` when the `.target` is below `sm`.
    fn gate(&mut self, span: Span, sm: u32, needs_a: bool, feature: &str) {
        let t = self.info.target;
        if t.sm < sm {
            self.error(
                span,
                format!("Feature '{feature}' requires .target sm_{sm} or higher"),
            );
        } else if needs_a && !t.a {
            self.error(
                span,
                format!("Instruction '{feature}' not supported on .target '{t}'"),
            );
        }
    }

    // ------------------------------------------------------------------------------------------
    // Module header and items

    fn module(&mut self, m: &Module) {
        let mut items = m.items.iter().peekable();
        // `.version` must come first, then `.target`.
        match items.peek() {
            Some(Item::Version { text }) => {
                self.version(text);
                items.next();
            }
            Some(other) => {
                let span = item_span(other);
                self.error(
                    span,
                    "missing `.version` directive at the start of the file",
                );
            }
            None => {
                self.error(Span::default(), "empty PTX module: expected `.version`");
                return;
            }
        }
        match items.peek() {
            Some(Item::Target { targets, span }) => {
                self.target(targets, *span);
                items.next();
            }
            Some(other) => {
                let span = item_span(other);
                self.error(span, "missing `.target` directive after `.version`");
            }
            None => self.error(
                Span::default(),
                "missing `.target` directive after `.version`",
            ),
        }
        let rest: Vec<&Item> = items.collect();
        // Declare every module-scope symbol first: functions may be used before they appear.
        for item in &rest {
            self.declare_item(item);
        }
        for item in &rest {
            self.item(item);
        }
        let externs = std::mem::take(&mut self.called_externs);
        for (name, span) in externs {
            if self.funcs.get(&name).is_some_and(|f| !f.defined) {
                self.error(
                    span,
                    format!("Unresolved extern function '{name}' (ptxc links whole programs; declare and define it in this module)"),
                );
            }
        }
    }

    fn version(&mut self, text: &Name) {
        let parsed = text
            .text
            .split_once('.')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
        match parsed {
            Some(v) if v <= MAX_VERSION && v >= (1, 0) => {
                self.info.version = v;
                // The gates of the checked chains depend on the version.
                self.shapes.clear();
            }
            Some(_) => self.error(
                text.span,
                format!(
                    "Unsupported .version {}; current version is '{}.{}'",
                    text.text, MAX_VERSION.0, MAX_VERSION.1
                ),
            ),
            None => self.error(text.span, format!("malformed .version `{}`", text.text)),
        }
    }

    fn target(&mut self, targets: &[Name], span: Span) {
        let Some(first) = targets.first() else {
            return self.error(span, "`.target` needs an architecture");
        };
        match Arch::parse(&first.text) {
            Some(t) => {
                if t.sm > self.arch.sm || (t.sm == self.arch.sm && t.a && !self.arch.a) {
                    self.error(
                        first.span,
                        format!(
                            "SM version specified by .target ({}) is higher than the -arch given ({})",
                            first.text, self.arch
                        ),
                    );
                }
                let need = min_version_for(t);
                if self.info.version < need && self.info.version != (0, 0) {
                    self.error(
                        first.span,
                        format!(
                            "PTX .version {}.{} does not support .target {}",
                            self.info.version.0, self.info.version.1, first.text
                        ),
                    );
                }
                self.info.target = t;
                // The gates of the checked chains depend on the target.
                self.shapes.clear();
            }
            None => self.error(first.span, format!("unknown target `{}`", first.text)),
        }
        for opt in &targets[1..] {
            match opt.text.as_str() {
                "debug" => self.info.debug = true,
                "texmode_unified" | "texmode_independent" | "map_f64_to_f32" => {}
                _ => self.error(opt.span, format!("unknown .target option `{}`", opt.text)),
            }
        }
    }

    fn declare_item(&mut self, item: &Item) {
        match item {
            Item::Var(v) => {
                for d in &v.decls {
                    if let Some(prev) = self.globals.get(d.name.text.as_str()) {
                        let prev = prev.span;
                        self.diags.push(
                            Diagnostic::error(
                                d.name.span,
                                format!("Duplicate definition of '{}'", d.name.text),
                            )
                            .with_note(Some(prev), "previous definition is here"),
                        );
                    } else {
                        self.globals.insert(
                            d.name.text.to_string(),
                            VarInfo {
                                space: v.space,
                                span: d.name.span,
                            },
                        );
                    }
                }
            }
            Item::Function(f) => {
                let is_extern = f.linkage.iter().any(|(l, _)| *l == Linkage::Extern);
                let info = FuncInfo {
                    kind: f.kind,
                    span: f.name.span,
                    defined: f.body.is_some(),
                    is_extern,
                    params: f.params.as_ref().map_or(0, Vec::len),
                    returns: f.returns.as_ref().map_or(0, Vec::len),
                };
                match self.funcs.get_mut(f.name.text.as_str()) {
                    Some(prev) if prev.defined && info.defined => {
                        let prev_span = prev.span;
                        self.diags.push(
                            Diagnostic::error(
                                f.name.span,
                                format!("Duplicate definition of function '{}'", f.name.text),
                            )
                            .with_note(Some(prev_span), "previous definition is here"),
                        );
                    }
                    Some(prev) => {
                        if info.defined {
                            prev.defined = true;
                            prev.span = info.span;
                        }
                        prev.is_extern &= info.is_extern;
                    }
                    None => {
                        self.funcs.insert(f.name.text.to_string(), info);
                    }
                }
            }
            Item::Alias { alias, aliasee, .. } => {
                if !self.funcs.contains_key(aliasee.text.as_str()) {
                    self.error(aliasee.span, format!("Unknown symbol '{}'", aliasee.text));
                }
                let _ = alias;
            }
            _ => {}
        }
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Version { text } => self.error(text.span, "`.version` may appear only once, at the start"),
            Item::Target { span, .. } => self.error(*span, "`.target` may appear only once, after `.version`"),
            Item::AddressSize { size, span } => match eval_const(size) {
                Some(64) => self.info.address_size = 64,
                Some(32) => self.error(
                    *span,
                    "32-bit addressing (.address_size 32) is not supported on sm_90 or higher architectures",
                ),
                _ => self.error(size.span(), "`.address_size` must be 32 or 64"),
            },
            Item::Var(v) => self.var_decl(v, None),
            Item::Function(f) => self.function(f),
            Item::File(_) | Item::Section { .. } | Item::Alias { .. } | Item::Pragma { .. } => {}
        }
    }

    // ------------------------------------------------------------------------------------------
    // Declarations

    /// Checks a declaration; inside a function, also enters its names into the innermost scope.
    fn var_decl(&mut self, v: &VarDecl, mut ctx: Option<&mut FnCtx>) {
        let info = self.decl_attrs(&v.attrs, v.space, v.span);
        let is_extern = v.linkage.iter().any(|(l, _)| *l == Linkage::Extern);
        for (l, span) in &v.linkage {
            if v.space == Space::Reg || v.space == Space::Param && ctx.is_some() {
                self.error(
                    *span,
                    format!("`{l}` cannot be applied to a {} declaration", v.space),
                );
            }
        }
        for d in &v.decls {
            if let Some(r) = &d.range {
                match eval_const(r) {
                    Some(n) if n > 0 && v.space == Space::Reg => {}
                    Some(_) if v.space != Space::Reg => self.error(
                        r.span(),
                        "a `<N>` register range is only allowed in `.reg` declarations",
                    ),
                    _ => self.error(r.span(), "a register range `<N>` needs a positive integer"),
                }
            }
            let incomplete = d.dims.iter().any(Option::is_none);
            if incomplete && d.init.is_none() && !is_extern && v.space != Space::Param {
                self.error(
                    d.name.span,
                    format!(
                        "Non-external variable '{}' has incomplete type",
                        d.name.text
                    ),
                );
            }
            for dim in d.dims.iter().flatten() {
                if eval_const(dim).is_none_or(|n| n <= 0) {
                    self.error(
                        dim.span(),
                        "an array size must be a positive integer constant",
                    );
                }
            }
            if let Some(init) = &d.init {
                if !matches!(v.space, Space::Global | Space::Const) {
                    self.error(
                        d.span,
                        format!("variables in {} cannot have initializers", v.space),
                    );
                } else {
                    self.check_init(init, ctx.as_deref());
                }
            }
            if let Some(ctx) = ctx.as_deref_mut() {
                ctx.resolved.get_mut().clear();
                let scope = ctx.scopes.last_mut().expect("a scope");
                let dup = scope.regs.contains_key(d.name.text.as_str())
                    || scope.vars.contains_key(d.name.text.as_str())
                    || scope.families.iter().any(|(p, _, _)| *p == d.name.text);
                if dup {
                    self.error(
                        d.name.span,
                        format!("Duplicate definition of '{}'", d.name.text),
                    );
                    continue;
                }
                if v.space == Space::Reg {
                    let Some((ty, width)) = info else { continue };
                    let reg = RegInfo { ty, width };
                    match d.range.as_ref().and_then(eval_const) {
                        Some(n) => scope
                            .families
                            .push((d.name.text.to_string(), n as u64, reg)),
                        None => {
                            scope.regs.insert(d.name.text.to_string(), reg);
                        }
                    }
                } else {
                    scope.vars.insert(
                        d.name.text.to_string(),
                        VarInfo {
                            space: v.space,
                            span: d.name.span,
                        },
                    );
                }
            }
        }
    }

    /// Checks the attribute words of a declaration; returns its type and vector width.
    fn decl_attrs(&mut self, attrs: &[Attr], space: Space, span: Span) -> Option<(Ty, u32)> {
        let mut ty: Option<Ty> = None;
        let mut width = 1;
        for a in attrs {
            let w = a.word.text.as_str();
            if let Some(t) = Ty::parse(w) {
                if ty.is_some() {
                    self.error(
                        a.word.span,
                        format!("more than one type in a declaration (`{w}`)"),
                    );
                }
                ty = Some(t);
                continue;
            }
            match w {
                ".align" => match a.value.as_ref().and_then(eval_const) {
                    Some(n) if n > 0 && (n & (n - 1)) == 0 => {}
                    _ => self.error(a.word.span, "`.align` needs a power of two"),
                },
                ".v2" | ".v4" | ".v8" => {
                    if ty.is_some() {
                        self.error(
                            a.word.span,
                            format!("vector size `{w}` must come before the type"),
                        );
                    }
                    if w == ".v8" {
                        self.error(a.word.span, "Illegal vector size: 8");
                    }
                    width = w[2..].parse().unwrap_or(1);
                }
                ".ptr" | ".global" | ".shared" | ".const" | ".local" | ".shared::cta"
                | ".shared::cluster" | ".param" => {
                    if space != Space::Param {
                        self.error(a.word.span, format!("`{w}` is only allowed on parameters"));
                    }
                }
                ".attribute" => {
                    for arg in &a.args {
                        if arg.text != ".managed" && arg.text != ".unified" {
                            self.error(
                                arg.span,
                                format!("unknown variable attribute `{}`", arg.text),
                            );
                        }
                    }
                }
                _ => self.error(
                    a.word.span,
                    format!("unknown attribute `{w}` in a {space} declaration"),
                ),
            }
        }
        if ty.is_none() {
            self.error(span, format!("missing type in {space} declaration"));
        }
        ty.map(|t| (t, width))
    }

    fn check_init(&mut self, init: &Init, ctx: Option<&FnCtx>) {
        match init {
            Init::List(items, _) => items.iter().for_each(|i| self.check_init(i, ctx)),
            Init::Expr(e) => {
                let mut names = SmallVec::new();
                expr_names(e, &mut names);
                for n in names {
                    let known = self.globals.contains_key(n.text.as_str())
                        || self.funcs.contains_key(n.text.as_str())
                        || ctx.is_some_and(|c| c.lookup(&n.text).is_some())
                        || n.text == "WARP_SZ";
                    if !known {
                        self.error(n.span, format!("Unknown symbol '{}'", n.text));
                    }
                }
                self.check_literals(e);
            }
        }
    }

    /// Reports integer literals that do not fit in 64 bits and float literals that overflow.
    fn check_literals(&mut self, e: &Expr) {
        match e {
            Expr::Lit {
                kind: LitKind::Int,
                text,
                span,
            } => {
                if !int_literal_fits(text) {
                    self.error(
                        *span,
                        format!("Constant overflow: `{text}` does not fit in 64 bits"),
                    );
                }
            }
            Expr::Lit {
                kind: LitKind::Float,
                text,
                span,
            } => {
                if text.parse::<f64>().map_or(true, |f| f.is_infinite()) {
                    self.error(
                        *span,
                        format!("Constant overflow: `{text}` is out of range for a double"),
                    );
                }
            }
            Expr::Unary { arg, .. } => self.check_literals(arg),
            Expr::Binary { lhs, rhs, .. } => {
                self.check_literals(lhs);
                self.check_literals(rhs);
            }
            Expr::Cond {
                cond, then, other, ..
            } => {
                self.check_literals(cond);
                self.check_literals(then);
                self.check_literals(other);
            }
            Expr::Call { args, .. } => args.iter().for_each(|a| self.check_literals(a)),
            Expr::Name { .. } | Expr::Lit { .. } => {}
        }
    }

    // ------------------------------------------------------------------------------------------
    // Functions

    fn function(&mut self, f: &Function) {
        let is_entry = f.kind == FunctionKind::Entry;
        let mut params = Scope::default();
        for p in f.params.iter().flatten().chain(f.returns.iter().flatten()) {
            self.param(p, is_entry, &mut params);
        }
        if is_entry && f.returns.is_some() {
            self.error(
                f.name.span,
                "an .entry function cannot have return parameters",
            );
        }
        self.directives(f);
        let Some(body) = &f.body else { return };
        let mut ctx = FnCtx {
            scopes: vec![params],
            resolved: RefCell::default(),
            facts: BodyFacts::default(),
        };
        self.enter_block(&body.stmts, &mut ctx);
        self.info.bodies.insert(f.name.text.to_string(), ctx.facts);
    }

    fn param(&mut self, p: &ParamDecl, is_entry: bool, scope: &mut Scope) {
        let info = self.decl_attrs(&p.attrs, p.space, p.span);
        if p.decl.dims.iter().any(Option::is_none) && is_entry {
            self.error(
                p.decl.name.span,
                "Parameter to entry function cannot be an incomplete array.",
            );
        }
        if p.space == Space::Reg && is_entry {
            self.error(p.span, "parameters of an .entry must be in .param space");
        }
        let name = &p.decl.name;
        if name.text == "_" {
            return;
        }
        if scope.regs.contains_key(name.text.as_str())
            || scope.vars.contains_key(name.text.as_str())
        {
            self.error(
                name.span,
                format!("Duplicate definition of '{}'", name.text),
            );
            return;
        }
        match (p.space, info) {
            (Space::Reg, Some((ty, width))) => {
                scope
                    .regs
                    .insert(name.text.to_string(), RegInfo { ty, width });
            }
            _ => {
                scope.vars.insert(
                    name.text.to_string(),
                    VarInfo {
                        space: Space::Param,
                        span: name.span,
                    },
                );
            }
        }
    }

    fn directives(&mut self, f: &Function) {
        let is_entry = f.kind == FunctionKind::Entry;
        let mut seen: HashMap<&str, Span> = HashMap::default();
        for d in &f.directives {
            let name = d.name.text.as_str();
            let (min_args, max_args, entry_only, sm) = match name {
                ".maxntid" | ".reqntid" => (1, 3, true, 0),
                ".minnctapersm" => (1, 1, true, 0),
                ".maxnreg" => (1, 1, false, 0),
                ".maxclusterrank" => (1, 1, true, 90),
                ".reqnctapercluster" => (1, 3, true, 90),
                ".explicitcluster" | ".blocksareclusters" => (0, 0, true, 90),
                ".noreturn" => (0, 0, false, 0),
                ".pragma" => (0, 0, false, 0),
                ".abi_preserve" | ".abi_preserve_control" => (1, 1, false, 0),
                _ => {
                    self.error(d.name.span, format!("unknown directive `{name}`"));
                    continue;
                }
            };
            if entry_only && !is_entry {
                self.error(
                    d.name.span,
                    format!("`{name}` applies only to .entry functions"),
                );
            }
            if name == ".noreturn" && is_entry {
                self.error(d.name.span, "`.noreturn` applies only to .func functions");
            }
            if sm > 0 {
                self.gate(d.name.span, sm, false, name);
            }
            if d.args.len() < min_args || d.args.len() > max_args {
                let want = if min_args == max_args {
                    format!("{min_args}")
                } else {
                    format!("{min_args} to {max_args}")
                };
                self.error(
                    d.span,
                    format!(
                        "`{name}` takes {want} argument(s), but {} were given",
                        d.args.len()
                    ),
                );
            }
            for a in &d.args {
                match eval_const(a) {
                    Some(v) if (0..=u32::MAX as i128).contains(&v) => {}
                    _ => self.error(
                        a.span(),
                        format!("`{name}` needs non-negative integer constants"),
                    ),
                }
            }
            if name == ".maxnreg" && d.args.first().and_then(eval_const).is_some_and(|v| v > 255) {
                self.warning(
                    d.span,
                    format!(
                        "Too many maxnreg specified for entry {}, will be ignored",
                        f.name.text
                    ),
                );
            }
            if name == ".pragma" {
                continue;
            }
            if seen.contains_key(name) && name != ".pragma" {
                self.error(d.name.span, format!("`{name}` is given twice"));
            }
            seen.insert(name, d.name.span);
        }
        if let (Some(_), Some(_)) = (seen.get(".reqnctapercluster"), seen.get(".maxclusterrank")) {
            let second = seen[".reqnctapercluster"].max_by_start(seen[".maxclusterrank"]);
            self.error(
                second,
                "Conflicting directives: .reqnctapercluster and .maxclusterrank cannot both be specified",
            );
        }
        if seen.contains_key(".minnctapersm")
            && !seen.contains_key(".maxntid")
            && !seen.contains_key(".reqntid")
        {
            self.warning(
                seen[".minnctapersm"],
                ".minnctapersm is ignored when neither .maxntid nor .reqntid is specified.",
            );
        }
    }

    /// Opens a scope for a `{ }` block: its labels are visible in the whole block (and the
    /// blocks inside it) before any statement is checked.
    fn enter_block(&mut self, stmts: &[Stmt], ctx: &mut FnCtx) {
        let mut scope = Scope::default();
        for s in stmts {
            match s {
                Stmt::Label(n) => {
                    if let Some(prev) = scope.labels.get(n.text.as_str()) {
                        let prev = *prev;
                        self.diags.push(
                            Diagnostic::error(
                                n.span,
                                format!("Duplicate definition of label '{}'", n.text),
                            )
                            .with_note(Some(prev), "previous definition is here"),
                        );
                    } else {
                        scope.labels.insert(n.text.to_string(), n.span);
                    }
                }
                Stmt::CallPrototype(p) => {
                    scope
                        .target_lists
                        .insert(p.name.text.to_string(), p.name.span);
                }
                Stmt::Targets(t) => {
                    let name = &t.name;
                    scope.target_lists.insert(name.text.to_string(), name.span);
                }
                _ => {}
            }
        }
        ctx.scopes.push(scope);
        ctx.resolved.get_mut().clear();
        self.block(stmts, ctx);
        ctx.scopes.pop();
        ctx.resolved.get_mut().clear();
    }

    fn block(&mut self, stmts: &[Stmt], ctx: &mut FnCtx) {
        for s in stmts {
            match s {
                Stmt::Var(v) => {
                    ctx.facts.param_vars |= v.space == Space::Param;
                    self.var_decl(v, Some(ctx));
                }
                Stmt::Instr(i) => {
                    ctx.facts.calls |= i.opcode.text == "call";
                    self.instruction(i, ctx);
                }
                Stmt::Block(b) => self.enter_block(&b.stmts, ctx),
                Stmt::Targets(t) => {
                    let (kind, targets) = (&t.kind, &t.targets);
                    let branch = match kind.text.as_str() {
                        ".branchtargets" => true,
                        ".calltargets" => false,
                        _ => {
                            self.error(kind.span, format!("unknown directive `{}`", kind.text));
                            continue;
                        }
                    };
                    for t in targets {
                        let ok = if branch {
                            ctx.label(&t.text).is_some()
                        } else {
                            self.funcs.contains_key(t.text.as_str())
                        };
                        if !ok {
                            self.error(t.span, format!("Unknown symbol '{}'", t.text));
                        }
                    }
                }
                Stmt::CallPrototype(p) => {
                    for prm in p.params.iter().chain(p.returns.iter().flatten()) {
                        self.decl_attrs(&prm.attrs, prm.space, prm.span);
                    }
                }
                Stmt::Label(_) | Stmt::Pragma(_) | Stmt::Loc(_) => {}
            }
        }
    }

    // ------------------------------------------------------------------------------------------
    // Instructions

    /// What `name` means in the function's current scopes, remembered in `ctx` (see
    /// [`FnCtx::resolved`]).
    fn resolve(&self, name: &str, ctx: &FnCtx) -> Resolved {
        let key = short_key(name);
        if let Some(r) = ctx.resolved.borrow_mut().get(name, key) {
            return r;
        }
        self.resolve_and_remember(name, key, ctx)
    }

    /// [`Self::resolve`] for a name not in the memo yet (`key`: its [`short_key`]).
    fn resolve_and_remember(&self, name: &str, key: Option<u128>, ctx: &FnCtx) -> Resolved {
        let r = self.resolve_uncached(name, ctx);
        ctx.resolved.borrow_mut().insert(name, key, r);
        r
    }

    /// Whether operand `op`, at a position that accepts `fast` without its full check, is one of
    /// those operands, which is then all there is to check of it. This is the operand fast path
    /// of [`Self::instruction`]: nearly every operand of a kernel is a plain register, an
    /// integer literal or a register-plus-offset address, and the position's full check
    /// (`dest`, `value`, `address`, …) builds its message context and matches the operand and
    /// the position kind again before it gets there. Any other operand (and one that does not
    /// fit) gets the full check, which gives the diagnostics. Measured on straight_16000 (44k
    /// register operands, 2k literals, 2k addresses): the checker 21.6M → 15.0M instructions
    /// with registers only, then 15.2M → 11.8M with the positions' type sets
    /// ([`FastOperand`]), literals and addresses, and the memo read in place.
    #[inline(always)]
    fn operand_fits(&self, op: &Operand, fast: &FastOperand, ctx: &mut FnCtx) -> bool {
        match op {
            Operand::Expr(Expr::Name {
                name,
                component: None,
            }) => self.scalar_register_in(name, fast.registers, ctx),
            Operand::Expr(Expr::Lit {
                kind: LitKind::Int,
                text,
                ..
            }) => fast.int_literal && int_literal_fits(text),
            Operand::Address(parts, _) if !fast.address.is_empty() => match parts.as_slice() {
                [Operand::Expr(base)] => match base {
                    Expr::Name {
                        name,
                        component: None,
                    } => self.scalar_register_in(name, fast.address, ctx),
                    Expr::Binary {
                        op: BinOp::Add | BinOp::Sub,
                        lhs,
                        rhs,
                        ..
                    } => match (&**lhs, &**rhs) {
                        (
                            Expr::Name {
                                name,
                                component: None,
                            },
                            Expr::Lit {
                                kind: LitKind::Int,
                                text,
                                ..
                            },
                        ) => {
                            int_literal_fits(text)
                                && self.scalar_register_in(name, fast.address, ctx)
                        }
                        _ => false,
                    },
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `name` is a scalar register (declared without `.v2`/`.v4`) of one of `types`.
    #[inline(always)]
    fn scalar_register_in(&self, name: &Name, types: TySet, ctx: &mut FnCtx) -> bool {
        let is_one = |r: &Resolved| matches!(r, Resolved::Reg(reg) if reg.width == 1 && types.contains(reg.ty));
        if types.is_empty() {
            return false;
        }
        let key = short_key(&name.text);
        // `ctx` is borrowed mutably here: the memo is read without `RefCell`'s borrow check,
        // and in place.
        let memo = ctx.resolved.get_mut();
        if let Some(k) = key
            && let Some(r) = memo.get_short(k)
        {
            return is_one(r);
        }
        let r = match memo.get(&name.text, key) {
            Some(r) => r,
            None => self.resolve_and_remember(&name.text, key, ctx),
        };
        is_one(&r)
    }

    fn resolve_uncached(&self, name: &str, ctx: &FnCtx) -> Resolved {
        if let Some(r) = ctx.lookup(name) {
            return r;
        }
        if let Some((_, ty, components, _)) = find_sreg(name) {
            return Resolved::Sreg { ty, components };
        }
        if let Some(v) = self.globals.get(name) {
            return Resolved::Var(*v);
        }
        if self.funcs.contains_key(name) {
            return Resolved::Func;
        }
        if ctx.label(name).is_some() || ctx.target_list(name).is_some() {
            return Resolved::Label;
        }
        if name == "WARP_SZ" {
            return Resolved::Const;
        }
        Resolved::Unknown
    }

    fn instruction(&mut self, ins: &Instruction, ctx: &mut FnCtx) {
        if let Some(g) = &ins.guard {
            self.guard(g, ctx);
        }
        let shape = match self.shapes.get(ins) {
            Some(shape) => shape,
            None => {
                let before = self.diags.len();
                let Some(shape) = self.instruction_shape(ins) else {
                    return;
                };
                let shape = Rc::new(shape);
                if self.diags.len() == before {
                    self.shapes.insert(ins, Rc::clone(&shape));
                }
                shape
            }
        };
        if shape.cvt_rounding_missing {
            let span = opcode_span(ins, &ins.modifiers[shape.name_words..]);
            self.error(span, "Rounding modifier required for instruction 'cvt'");
        }
        if shape.barrier_number {
            self.barrier_number(ins);
        }
        // Operands. With every operand written (the common case), operand `i` is position `i`
        // and there is no count to report.
        if ins.operands.len() == shape.fast.len() {
            for (i, (op, fast)) in ins.operands.iter().zip(&shape.fast).enumerate() {
                if !self.operand_fits(op, fast, ctx) {
                    self.operand(op, i, i, &shape, ctx);
                }
            }
        } else if !self.fewer_or_more_operands(ins, &shape, ctx) {
            return;
        }
        if shape.is_call {
            self.call(ins, ctx);
        }
    }

    /// The guard `@p` / `@!p` of an instruction: a predicate register.
    fn guard(&mut self, g: &Guard, ctx: &FnCtx) {
        match self.resolve(&g.pred.text, ctx) {
            Resolved::Reg(r) if r.ty.is_pred() => {}
            Resolved::Sreg { ty, .. } if ty.is_pred() => {}
            Resolved::Unknown => {
                self.error(g.pred.span, format!("Unknown symbol '{}'", g.pred.text))
            }
            _ => self.error(
                g.pred.span,
                format!(
                    "Predicate expression expected: `{}` is not a .pred register",
                    g.pred.text
                ),
            ),
        }
    }

    /// The operands of an instruction that writes fewer or more operands than its form lists:
    /// the count, which operands the written ones are, and extra operands of a variadic form.
    /// `false` after an error that ends the instruction's check.
    fn fewer_or_more_operands(
        &mut self,
        ins: &Instruction,
        shape: &Shape,
        ctx: &mut FnCtx,
    ) -> bool {
        let form_name: &str = &shape.form_name;
        let chosen = shape.chosen;
        let required = shape.required;
        let max = chosen.operands.len();
        let n = ins.operands.len();
        if n < required || (n > max && !chosen.variadic) {
            let want = if required == max {
                format!("{required}")
            } else if chosen.variadic {
                format!("at least {required}")
            } else {
                format!("{required} to {max}")
            };
            let span = if n > max {
                ins.operands[max].span()
            } else {
                let mods = &ins.modifiers[shape.name_words..];
                ins.operands
                    .last()
                    .map_or_else(|| opcode_span(ins, mods), Operand::span)
            };
            self.error(
                span,
                format!(
                    "Arguments mismatch for instruction '{form_name}': it takes {want} operand(s), but {n} {} given",
                    if n == 1 { "is" } else { "are" }
                ),
            );
            return false;
        }
        if n < max {
            let positions = &shape.written[n - required];
            for (i, (op, &s)) in ins.operands.iter().zip(positions).enumerate() {
                if !self.operand_fits(op, &shape.fast[s], ctx) {
                    self.operand(op, i, s, shape, ctx);
                }
            }
            return true;
        }
        for (i, op) in ins.operands[..max].iter().enumerate() {
            if !self.operand_fits(op, &shape.fast[i], ctx) {
                self.operand(op, i, i, shape, ctx);
            }
        }
        for op in &ins.operands[max..] {
            self.any(
                op,
                &OpCheck {
                    opcode: form_name,
                    index: 0,
                    space: shape.space,
                },
                ctx,
            );
        }
        true
    }

    /// The full check of operand `i` of an instruction, at position `s` of its form: the
    /// diagnostics of any operand that [`Self::operand_fits`] does not take.
    fn operand(&mut self, op: &Operand, i: usize, s: usize, shape: &Shape, ctx: &mut FnCtx) {
        let want = shape.wants[s];
        let oc = OpCheck {
            opcode: &shape.form_name,
            index: i,
            space: shape.space,
        };
        match &shape.chosen.operands[s].kind {
            OperandKind::Dest { relaxed, pair, .. } => {
                self.dest(op, want, *relaxed, *pair, &oc, ctx);
            }
            OperandKind::Value(_) => self.value(op, want, true, false, &oc, ctx),
            OperandKind::WideValue(_) => self.value(op, want, true, true, &oc, ctx),
            OperandKind::Register(_) => self.value(op, want, false, false, &oc, ctx),
            OperandKind::Immediate(_) => self.immediate(op),
            OperandKind::Pred => self.pred(op, &oc, ctx),
            OperandKind::Address => self.address(op, &oc, ctx),
            OperandKind::Label => self.label(op, ctx),
            OperandKind::Data => {
                let is_dest = i == 0 && !shape.is_store;
                self.data(op, want, shape.vector, is_dest, &oc, ctx);
            }
            OperandKind::Any => self.any(op, &oc, ctx),
        }
    }

    /// The modifier phase of [`Self::instruction`]: the instruction's name, its types and
    /// modifiers against the table's forms, and the target gates. `None` after an error that
    /// ends the instruction's check.
    fn instruction_shape(&mut self, ins: &Instruction) -> Option<Shape> {
        let Some((form_name, mods)) = self.split_opcode(ins) else {
            let msg = format!("Not a name of any known instruction: '{}'", ins.opcode.text);
            self.error(ins.opcode.span, msg);
            return None;
        };
        let forms = self.isa.forms(&form_name).unwrap_or_default();
        let opcode_span = opcode_span(ins, mods);

        // Types and the other modifiers, in the order written.
        // Per instruction: kept on the stack (an instruction has a handful of modifiers).
        let mut types: SmallVec<[(Ty, Span); 4]> = SmallVec::new();
        let mut others: SmallVec<[&Name; 8]> = SmallVec::new();
        for m in mods {
            if let Some(t) = Ty::parse(&m.text) {
                types.push((t, m.span));
            } else if forms.iter().any(|f| f.allows_modifier(&m.text))
                || self.isa.vocabulary().contains(m.text.as_str())
            {
                // A modifier of this opcode's forms is in the table's vocabulary: asking them
                // first spares building the vocabulary (which parses the whole table).
                others.push(m);
            } else {
                self.error(m.span, format!("Unknown modifier '{}'", m.text));
                return None;
            }
        }

        let type_fits = |f: &Form| f.types_fit(types.iter().map(|(t, _)| t.name));
        let candidates: SmallVec<[&Form; 8]> = forms.iter().filter(|f| type_fits(f)).collect();
        if candidates.is_empty() {
            let written: String = types.iter().map(|(t, _)| t.to_string()).collect();
            let span = types.first().map_or(opcode_span, |(_, s)| *s);
            let mut allowed: Vec<&str> = forms
                .iter()
                .flat_map(|f| {
                    f.types
                        .first()
                        .map(|s| s.allowed)
                        .unwrap_or_default()
                        .iter()
                        .copied()
                })
                .collect();
            allowed.dedup();
            let msg = if types.is_empty() {
                format!("Missing instruction type for '{form_name}'")
            } else {
                format!("Unexpected instruction types specified for '{form_name}': `{written}`")
            };
            let d = Diagnostic::error(span, msg);
            let d = if allowed.is_empty() {
                d.with_note(None, format!("`{form_name}` takes no type"))
            } else {
                d.with_note(
                    None,
                    format!("`{form_name}` takes {}", short_list(&allowed)),
                )
            };
            self.diags.push(d);
            return None;
        }
        let mut chosen = candidates[0];
        let mut problem = self.modifier_problem(chosen, &others, &types, &form_name, forms);
        for f in &candidates[1..] {
            if problem.is_none() {
                break;
            }
            let p = self.modifier_problem(f, &others, &types, &form_name, forms);
            if p.is_none() {
                chosen = f;
                problem = None;
            }
        }
        if let Some((span, msg)) = problem {
            self.error(span, msg);
            return None;
        }
        // Gates.
        if let Some((sm, needs_a, feature)) = &chosen.gate {
            self.gate(opcode_span, *sm, *needs_a, feature);
        }
        for m in &others {
            if m.text.ends_with("::cluster") {
                self.gate(m.span, 90, false, "::cluster");
            } else if m.text == ".cluster" {
                self.gate(m.span, 90, false, ".cluster scope");
            } else if m.text == ".v8" {
                self.gate(m.span, 100, false, "256 bit wide load/store");
            }
        }
        if chosen.nonsync && self.info.target.sm >= 70 && self.info.version >= (6, 4) {
            self.error(
                opcode_span,
                format!(
                    "Instruction '{form_name}' without '.sync' is not supported on .target sm_70 and higher from PTX ISA version 6.4"
                ),
            );
        }
        // The type of slot `c` (`T`, `U`, …): the types are written in the order of the slots.
        let slot_ty = |c: char| -> Option<Ty> {
            chosen
                .types
                .iter()
                .position(|s| s.slot == c)
                .and_then(|i| types.get(i).map(|(t, _)| *t))
        };
        let resolve_ty = |t: &TypeRef| -> Option<Ty> {
            match t {
                TypeRef::Slot(c) => slot_ty(*c),
                TypeRef::Double(c) => slot_ty(*c).and_then(Ty::doubled),
                TypeRef::Fixed(name) => Ty::parse(name),
            }
        };
        let wants: Box<[Option<Ty>]> = chosen
            .operands
            .iter()
            .map(|spec| match &spec.kind {
                OperandKind::Dest { ty, .. }
                | OperandKind::Value(ty)
                | OperandKind::WideValue(ty)
                | OperandKind::Register(ty) => resolve_ty(ty),
                OperandKind::Data => slot_ty('T'),
                _ => None,
            })
            .collect();
        let vector = others
            .iter()
            .find(|m| matches!(m.text.as_str(), ".v2" | ".v4" | ".v8"))
            .and_then(|m| m.text[2..].parse::<u32>().ok());
        let required = chosen.operands.iter().filter(|o| !o.optional).count();
        let max = chosen.operands.len();
        let is_store = matches!(
            form_name.as_ref(),
            "st" | "red" | "multimem.st" | "multimem.red" | "st.async" | "sust"
        );
        // What each position kind's check (`dest`, `value`, `pred`, `data_element`, `address`,
        // …) accepts without a diagnostic, of the operands `operand_fits` recognises.
        let pred = Ty::parse("pred").expect("a type");
        let fast = chosen
            .operands
            .iter()
            .zip(&*wants)
            .map(|(spec, &want)| {
                let registers =
                    |relaxed| want.map_or(TySet::ALL, |w| Ty::registers_fitting(w, relaxed));
                // `literal_mismatch`: an integer literal is a value of these types.
                let int_typed = want.is_none_or(|w| {
                    matches!(
                        w.kind(),
                        Kind::Bits | Kind::Unsigned | Kind::Signed | Kind::Pred
                    )
                });
                let none = FastOperand {
                    registers: TySet::EMPTY,
                    int_literal: false,
                    address: TySet::EMPTY,
                };
                match &spec.kind {
                    OperandKind::Dest { relaxed, .. } => FastOperand {
                        registers: registers(*relaxed),
                        ..none
                    },
                    OperandKind::Value(_) => FastOperand {
                        registers: registers(false),
                        int_literal: int_typed,
                        ..none
                    },
                    OperandKind::WideValue(_) => FastOperand {
                        registers: registers(true),
                        int_literal: int_typed,
                        ..none
                    },
                    OperandKind::Register(_) => FastOperand {
                        registers: registers(false),
                        ..none
                    },
                    OperandKind::Immediate(_) => FastOperand {
                        int_literal: true,
                        ..none
                    },
                    // `pred` takes any integer constant.
                    OperandKind::Pred => FastOperand {
                        registers: Ty::registers_fitting(pred, false),
                        int_literal: true,
                        ..none
                    },
                    // The data of a store is a value; a load's is a destination.
                    OperandKind::Data if vector.is_none() => FastOperand {
                        registers: registers(true),
                        int_literal: is_store && int_typed,
                        ..none
                    },
                    OperandKind::Address => FastOperand {
                        address: address_registers(),
                        ..none
                    },
                    _ => none,
                }
            })
            .collect();
        Some(Shape {
            fast,
            name_words: ins.modifiers.len() - mods.len(),
            chosen,
            wants,
            vector,
            space: instr_space(&others),
            is_store,
            required,
            cvt_rounding_missing: form_name == "cvt" && cvt_needs_rounding(&others, &types),
            barrier_number: matches!(form_name.as_ref(), "bar" | "barrier")
                && !others.iter().any(|m| m.text == ".red"),
            written: (required..max)
                .map(|n| written_positions(chosen, required, n))
                .collect(),
            is_call: form_name == "call",
            form_name: form_name.as_ref().into(),
        })
    }

    fn split_opcode<'i>(
        &self,
        ins: &'i Instruction,
    ) -> Option<(std::borrow::Cow<'i, str>, &'i [Name])> {
        self.isa.split_opcode(ins)
    }

    /// Why `mods` do not fit `form`, if they do not.
    fn modifier_problem(
        &self,
        form: &Form,
        mods: &[&Name],
        types: &[(Ty, Span)],
        opcode: &str,
        all: &[Form],
    ) -> Option<(Span, String)> {
        let mut used: SmallVec<[Option<&Name>; 8]> = smallvec::smallvec![None; form.groups.len()];
        let type_text = || -> String { types.iter().map(|(t, _)| t.to_string()).collect() };
        for m in mods {
            if form.fixed.contains(&m.text.as_str()) {
                continue;
            }
            // The first group that takes the word and is still free; `cp.async.bulk` has two
            // state-space groups (destination, source).
            let mut groups = form.groups_with(m.text.as_str()).peekable();
            let first = groups.peek().copied();
            let free = groups.find(|&i| used[i].is_none());
            let Some(g) = free.or(first) else {
                let elsewhere = all.iter().any(|f| f.allows_modifier(&m.text));
                let msg = if elsewhere && !types.is_empty() {
                    format!(
                        "Modifier '{}' does not apply to '{}' type",
                        m.text,
                        type_text()
                    )
                } else if elsewhere {
                    format!(
                        "Modifier '{}' cannot be combined with the other modifiers of '{opcode}'",
                        m.text
                    )
                } else {
                    format!(
                        "Modifier '{}' is not valid for instruction '{opcode}'",
                        m.text
                    )
                };
                return Some((m.span, msg));
            };
            if let Some(prev) = used[g] {
                let msg = if prev.text == m.text {
                    format!("Modifier '{}' is given twice", m.text)
                } else if is_space(&m.text) {
                    format!(
                        "Unexpected number of state spaces specified in instruction '{opcode}' (`{}` and `{}`)",
                        prev.text, m.text
                    )
                } else {
                    format!(
                        "Conflicting modifiers '{}' and '{}' for instruction '{opcode}'",
                        prev.text, m.text
                    )
                };
                return Some((m.span, msg));
            }
            used[g] = Some(m);
        }
        for f in form.fixed {
            if !mods.iter().any(|m| m.text == *f) {
                let span = mods.last().map_or(Span::default(), |m| m.span);
                return Some((
                    span,
                    format!("'{opcode}' of this kind needs the modifier '{f}'"),
                ));
            }
        }
        for (g, u) in form.groups.iter().zip(&used) {
            if g.required && u.is_none() {
                let span = mods
                    .last()
                    .map(|m| m.span)
                    .or_else(|| types.last().map(|t| t.1));
                return Some((
                    span.unwrap_or_default(),
                    format!("'{opcode}' needs one of {}", short_list(g.alternatives)),
                ));
            }
        }
        None
    }

    /// Checks that no generic table can express: rounding requirements of `cvt`, barrier numbers.
    /// `bar` / `barrier` (without `.red`): a constant barrier number is 0 to 15.
    fn barrier_number(&mut self, ins: &Instruction) {
        if let Some(Operand::Expr(e)) = ins.operands.first()
            && let Some(v) = eval_const(e)
            && !(0..=15).contains(&v)
        {
            self.error(
                e.span(),
                format!("Barrier number '{v}' out of range, expected to be in range [0..15]"),
            );
        }
    }

    fn dest(
        &mut self,
        op: &Operand,
        want: Option<Ty>,
        relaxed: bool,
        allow_pair: bool,
        oc: &OpCheck<'_>,
        ctx: &FnCtx,
    ) {
        match op {
            Operand::Sink(_) => {}
            Operand::Pair(pair, span) => {
                let (a, b) = &**pair;
                if !allow_pair {
                    self.error(
                        *span,
                        format!(
                            "operand {} of '{}' cannot be a pair `a|b`",
                            oc.index + 1,
                            oc.opcode
                        ),
                    );
                    return;
                }
                if let Some(a) = a {
                    self.reg_operand(a, want, relaxed, oc, ctx);
                }
                let pred = Ty::parse("pred");
                self.reg_operand(b, pred, false, oc, ctx);
            }
            Operand::Expr(e) if e.as_name().is_some() || matches!(e, Expr::Name { .. }) => {
                self.reg_operand(e, want, relaxed, oc, ctx);
            }
            Operand::Vector(items, span) if oc.opcode == "mov" => {
                self.packed_vector(items, *span, want, oc, ctx)
            }
            other => self.error(
                other.span(),
                format!(
                    "operand {} of '{}' must be a destination register",
                    oc.index + 1,
                    oc.opcode
                ),
            ),
        }
    }

    /// A `{a, b}` operand of `mov.b64` (pack/unpack): its elements must fill the type exactly.
    fn packed_vector(
        &mut self,
        items: &[Operand],
        span: Span,
        want: Option<Ty>,
        oc: &OpCheck<'_>,
        ctx: &FnCtx,
    ) {
        if want.is_some_and(|w| w.kind() != Kind::Bits) {
            self.error(
                span,
                format!("Argument vector size mismatch for instruction '{}': packing and unpacking need a `.bN` type", oc.opcode),
            );
            return;
        }
        let mut total = 0;
        for it in items {
            match it {
                Operand::Expr(e) => match self.resolve_reg(e, ctx) {
                    Some(r) => total += r.ty.bits() * r.width,
                    None => {
                        // Immediates in a packed vector take the element width; assume it fits.
                        if eval_const(e).is_none() && !matches!(e, Expr::Lit { .. }) {
                            self.value(it, None, true, false, oc, ctx);
                        }
                        total += want.map_or(0, |w| w.bits() / items.len() as u32);
                    }
                },
                Operand::Sink(_) => total += want.map_or(0, |w| w.bits() / items.len() as u32),
                other => self.error(other.span(), "a vector element must be a register"),
            }
        }
        if let Some(w) = want
            && total != w.bits()
        {
            self.error(
                    span,
                    format!(
                        "Argument vector size mismatch for instruction '{}': the elements hold {total} bits, `{w}` needs {}",
                        oc.opcode,
                        w.bits()
                    ),
                );
        }
    }

    fn resolve_reg(&self, e: &Expr, ctx: &FnCtx) -> Option<RegInfo> {
        match e.as_name().map(|n| self.resolve(&n.text, ctx)) {
            Some(Resolved::Reg(r)) => Some(r),
            _ => None,
        }
    }

    /// A register operand (destination or source) of type `want`.
    fn reg_operand(
        &mut self,
        e: &Expr,
        want: Option<Ty>,
        relaxed: bool,
        oc: &OpCheck<'_>,
        ctx: &FnCtx,
    ) {
        let Expr::Name { name, component } = e else {
            self.error(
                e.span(),
                format!(
                    "operand {} of '{}' must be a register",
                    oc.index + 1,
                    oc.opcode
                ),
            );
            return;
        };
        let resolved = self.resolve(&name.text, ctx);
        self.resolved_reg_operand(name, component.as_deref(), resolved, want, relaxed, oc);
    }

    /// [`Self::reg_operand`] once the name is resolved.
    fn resolved_reg_operand(
        &mut self,
        name: &Name,
        component: Option<&Name>,
        resolved: Resolved,
        want: Option<Ty>,
        relaxed: bool,
        oc: &OpCheck<'_>,
    ) {
        match resolved {
            Resolved::Reg(r) => {
                if let Some(c) = component {
                    if r.width == 1
                        || !matches!(
                            c.text.as_str(),
                            ".x" | ".y" | ".z" | ".w" | ".r" | ".g" | ".b" | ".a"
                        )
                    {
                        self.error(
                            c.span,
                            format!("`{}` has no component `{}`", name.text, c.text),
                        );
                    }
                } else if r.width > 1 {
                    // `mov.b64 %rd, v` with `.reg .v2 .u32 v`: the whole vector, packed.
                    let whole = r.ty.bits() * r.width;
                    if oc.opcode != "mov" || want.is_some_and(|w| w.bits() != whole) {
                        self.error(name.span, format!("Argument vector size mismatch for instruction '{}': `{}` is a vector register", oc.opcode, name.text));
                    }
                    return;
                }
                if let Some(w) = want
                    && !Ty::register_fits(r.ty, w, relaxed)
                {
                    self.mismatch(name, r.ty, w, oc);
                }
            }
            Resolved::Unknown => self.error(name.span, format!("Unknown symbol '{}'", name.text)),
            _ => self.error(
                name.span,
                format!(
                    "operand {} of '{}' must be a register, but `{}` is not one",
                    oc.index + 1,
                    oc.opcode,
                    name.text
                ),
            ),
        }
    }

    fn mismatch(&mut self, name: &Name, have: Ty, want: Ty, oc: &OpCheck<'_>) {
        self.error(
            name.span,
            format!(
                "Arguments mismatch for instruction '{}': operand {} must be {want}, but `{}` is a {have} register",
                oc.opcode,
                oc.index + 1,
                name.text
            ),
        );
    }

    /// A source operand: a register, special register, immediate or symbol address.
    fn value(
        &mut self,
        op: &Operand,
        want: Option<Ty>,
        allow_imm: bool,
        relaxed: bool,
        oc: &OpCheck<'_>,
        ctx: &FnCtx,
    ) {
        let e = match op {
            Operand::Expr(e) => e,
            Operand::Not(e, span) => {
                // `!p` is a predicate source.
                if want.is_some_and(|t| !t.is_pred()) {
                    self.error(
                        *span,
                        format!(
                            "`!` negates only predicates (operand {} of '{}')",
                            oc.index + 1,
                            oc.opcode
                        ),
                    );
                }
                return self.value(&Operand::Expr((**e).clone()), want, false, false, oc, ctx);
            }
            Operand::Vector(items, span) if oc.opcode == "mov" => {
                return self.packed_vector(items, *span, want, oc, ctx);
            }
            other => {
                self.error(
                    other.span(),
                    format!(
                        "operand {} of '{}' must be a register or an immediate",
                        oc.index + 1,
                        oc.opcode
                    ),
                );
                return;
            }
        };
        if let Expr::Name { name, component } = e {
            match self.resolve(&name.text, ctx) {
                r @ Resolved::Reg(_) => {
                    return self.resolved_reg_operand(
                        name,
                        component.as_deref(),
                        r,
                        want,
                        relaxed,
                        oc,
                    );
                }
                Resolved::Sreg { ty, components } => {
                    let (_, _, _, min_sm) =
                        find_sreg(&name.text).unwrap_or(("", ty, components, 0));
                    if min_sm > 0 {
                        self.gate(name.span, min_sm, false, &name.text);
                    }
                    match (components, component) {
                        (true, None) => {
                            self.error(
                                name.span,
                                format!("Argument vector size mismatch for instruction '{}': `{}` is a vector; use `{}.x`", oc.opcode, name.text, name.text),
                            );
                            return;
                        }
                        (true, Some(c))
                            if !matches!(c.text.as_str(), ".x" | ".y" | ".z" | ".w") =>
                        {
                            self.error(
                                c.span,
                                format!("`{}` has no component `{}`", name.text, c.text),
                            );
                            return;
                        }
                        (false, Some(c)) => {
                            self.error(c.span, format!("`{}` is not a vector", name.text));
                            return;
                        }
                        _ => {}
                    }
                    if let Some(w) = want
                        && !Ty::register_fits(ty, w, true)
                    {
                        self.mismatch(name, ty, w, oc);
                    }
                    return;
                }
                Resolved::Var(_) | Resolved::Func => {
                    // The address of a variable or function.
                    if !allow_imm || want.is_some_and(|w| !(w.is_integer_like() && w.bits() >= 32))
                    {
                        self.error(
                            name.span,
                            format!(
                                "operand {} of '{}' cannot be the address `{}`",
                                oc.index + 1,
                                oc.opcode,
                                name.text
                            ),
                        );
                    }
                    return;
                }
                Resolved::Const => return,
                Resolved::Label => {
                    self.error(
                        name.span,
                        format!("label `{}` cannot be used as a value", name.text),
                    );
                    return;
                }
                Resolved::Unknown => {
                    self.error(name.span, format!("Unknown symbol '{}'", name.text));
                    return;
                }
            }
        }
        // An immediate or a constant expression (possibly `sym+4`).
        if !allow_imm {
            self.error(
                e.span(),
                format!(
                    "operand {} of '{}' must be a register, not an immediate",
                    oc.index + 1,
                    oc.opcode
                ),
            );
            return;
        }
        self.check_literals(e);
        let mut names = SmallVec::new();
        expr_names(e, &mut names);
        for n in &names {
            if matches!(self.resolve(&n.text, ctx), Resolved::Unknown) {
                self.error(n.span, format!("Unknown symbol '{}'", n.text));
                return;
            }
        }
        if let Some(w) = want
            && let Some(msg) = literal_mismatch(e, w)
        {
            self.error(
                e.span(),
                format!("Arguments mismatch for instruction '{}': {msg}", oc.opcode),
            );
        }
    }

    fn immediate(&mut self, op: &Operand) {
        match op {
            Operand::Expr(e) if eval_const(e).is_some() => self.check_literals(e),
            other => self.error(other.span(), "expected an integer constant"),
        }
    }

    fn pred(&mut self, op: &Operand, oc: &OpCheck<'_>, ctx: &FnCtx) {
        let e = match op {
            Operand::Expr(e) => e,
            Operand::Not(e, _) => e,
            other => {
                self.error(
                    other.span(),
                    format!(
                        "operand {} of '{}' must be a predicate",
                        oc.index + 1,
                        oc.opcode
                    ),
                );
                return;
            }
        };
        // ptxas accepts integer constants as predicates (`vote.sync.all.pred d, 1, m`).
        if eval_const(e).is_some() {
            return;
        }
        match e.as_name().map(|n| (n, self.resolve(&n.text, ctx))) {
            Some((_, Resolved::Reg(r))) if r.ty.is_pred() => {}
            Some((_, Resolved::Sreg { ty, .. })) if ty.is_pred() => {}
            Some((n, Resolved::Unknown)) => {
                self.error(n.span, format!("Unknown symbol '{}'", n.text))
            }
            _ => self.error(
                e.span(),
                format!(
                    "Arguments mismatch for instruction '{}': operand {} must be a .pred register",
                    oc.opcode,
                    oc.index + 1
                ),
            ),
        }
    }

    fn address(&mut self, op: &Operand, oc: &OpCheck<'_>, ctx: &FnCtx) {
        let Operand::Address(parts, span) = op else {
            self.error(
                op.span(),
                format!(
                    "operand {} of '{}' must be an address `[...]`",
                    oc.index + 1,
                    oc.opcode
                ),
            );
            return;
        };
        let Some(Operand::Expr(base)) = parts.first() else {
            self.error(
                *span,
                "an address must start with a register, symbol or constant",
            );
            return;
        };
        self.check_literals(base);
        let mut names = SmallVec::new();
        expr_names(base, &mut names);
        if names.len() > 1 {
            self.error(
                base.span(),
                "an address may name at most one register or symbol",
            );
        }
        for n in &names {
            match self.resolve(&n.text, ctx) {
                Resolved::Reg(r) => {
                    if !(r.ty.is_integer_like() && (r.ty.bits() == 32 || r.ty.bits() == 64)) {
                        self.error(
                            n.span,
                            format!(
                                "an address register must be 32 or 64 bits wide, but `{}` is {}",
                                n.text, r.ty
                            ),
                        );
                    }
                }
                Resolved::Var(v) => {
                    if let Some(space) = oc.space {
                        let compatible =
                            v.space == space || (v.space == Space::Param && space == Space::Param);
                        if !compatible {
                            self.error(
                                n.span,
                                format!(
                                    "State space mismatch between instruction and address in instruction '{}': `{}` is in {}, the instruction accesses {}",
                                    oc.opcode, n.text, v.space, space
                                ),
                            );
                        }
                    }
                }
                Resolved::Func | Resolved::Const => {}
                Resolved::Sreg { .. } => {
                    self.error(n.span, "a special register cannot be an address")
                }
                Resolved::Label => {
                    self.error(n.span, format!("label `{}` cannot be an address", n.text))
                }
                Resolved::Unknown => self.error(n.span, format!("Unknown symbol '{}'", n.text)),
            }
        }
        // `[tex, {coords}]`, `[tex, sampler, {coords}]`: the rest are ordinary operands.
        for p in &parts[1..] {
            self.any(p, oc, ctx);
        }
    }

    fn label(&mut self, op: &Operand, ctx: &FnCtx) {
        match op {
            Operand::Expr(e) => match e.as_name() {
                Some(n) => {
                    if ctx.label(&n.text).is_none() {
                        self.error(
                            n.span,
                            format!(
                                "Unknown symbol '{}': no such label in this function",
                                n.text
                            ),
                        );
                    }
                }
                None => self.error(e.span(), "a branch target must be a label"),
            },
            other => self.error(other.span(), "a branch target must be a label"),
        }
    }

    fn data(
        &mut self,
        op: &Operand,
        want: Option<Ty>,
        vector: Option<u32>,
        is_dest: bool,
        oc: &OpCheck<'_>,
        ctx: &FnCtx,
    ) {
        match (op, vector) {
            (Operand::Vector(items, span), Some(n)) => {
                if items.len() as u32 != n {
                    self.error(
                        *span,
                        format!(
                            "Argument vector size mismatch for instruction '{}': `.v{n}` needs {n} elements, but {} are given",
                            oc.opcode,
                            items.len()
                        ),
                    );
                    return;
                }
                for it in items {
                    self.data_element(it, want, is_dest, oc, ctx);
                }
            }
            // `st.global.b32 [a], { %r1 }`: ptxas takes a one-element vector as a scalar.
            (Operand::Vector(items, _), None) if items.len() == 1 => {
                self.data_element(&items[0], want, is_dest, oc, ctx)
            }
            (Operand::Vector(items, span), None) => self.error(
                *span,
                format!(
                    "Argument vector size mismatch for instruction '{}': a vector of {} elements needs a `.v{}` modifier",
                    oc.opcode,
                    items.len(),
                    items.len()
                ),
            ),
            (Operand::Expr(e), Some(n)) if self.resolve_reg(e, ctx).is_some_and(|r| r.width == n) => {
                // A vector register (`.reg .v2 .u32 v`) used whole.
                let r = self.resolve_reg(e, ctx).expect("checked above");
                if let (Some(w), Some(name)) = (want, e.as_name())
                    && !Ty::register_fits(r.ty, w, true) {
                        self.mismatch(name, r.ty, w, oc);
                    }
            }
            (other, Some(n)) => self.error(
                other.span(),
                format!("Argument vector size mismatch for instruction '{}': `.v{n}` needs a vector operand `{{...}}`", oc.opcode),
            ),
            (other, None) => self.data_element(other, want, is_dest, oc, ctx),
        }
    }

    fn data_element(
        &mut self,
        op: &Operand,
        want: Option<Ty>,
        is_dest: bool,
        oc: &OpCheck<'_>,
        ctx: &FnCtx,
    ) {
        match op {
            Operand::Sink(_) if is_dest => {}
            Operand::Expr(e) if is_dest => self.reg_operand(e, want, true, oc, ctx),
            Operand::Expr(Expr::Name { .. }) => {
                if let Operand::Expr(e) = op
                    && let Some(r) = self.resolve_reg(e, ctx)
                {
                    if let Some(w) = want
                        && !Ty::register_fits(r.ty, w, true)
                        && let Some(n) = e.as_name()
                    {
                        self.mismatch(n, r.ty, w, oc);
                    }
                    return;
                }
                self.value(op, want, true, true, oc, ctx);
            }
            Operand::Expr(_) => self.value(op, want, true, true, oc, ctx),
            other => self.error(
                other.span(),
                format!(
                    "operand {} of '{}' must be a register",
                    oc.index + 1,
                    oc.opcode
                ),
            ),
        }
    }

    /// An operand whose kind the table does not pin down: only its names are resolved.
    fn any(&mut self, op: &Operand, oc: &OpCheck<'_>, ctx: &FnCtx) {
        match op {
            Operand::Expr(e) => self.any_expr(e, ctx),
            Operand::Not(e, _) => self.any_expr(e, ctx),
            Operand::Pair(pair, _) => {
                let (a, b) = &**pair;
                if let Some(a) = a {
                    self.any_expr(a, ctx);
                }
                self.any_expr(b, ctx);
            }
            Operand::Address(..) => self.address(op, oc, ctx),
            Operand::Vector(items, _) | Operand::List(items, _) => {
                for it in items {
                    self.any(it, oc, ctx);
                }
            }
            Operand::Sink(_) => {}
        }
    }

    /// [`Checker::any`] of an expression: its literals checked and its names resolved.
    fn any_expr(&mut self, e: &Expr, ctx: &FnCtx) {
        self.check_literals(e);
        let mut names = SmallVec::new();
        expr_names(e, &mut names);
        for n in names {
            if matches!(self.resolve(&n.text, ctx), Resolved::Unknown) {
                self.error(n.span, format!("Unknown symbol '{}'", n.text));
            }
        }
    }

    /// `call (rets), func, (args)[, prototype]`.
    fn call(&mut self, ins: &Instruction, ctx: &FnCtx) {
        let mut ops = ins.operands.iter();
        let mut first = ops.next();
        let mut rets = 0;
        if let Some(Operand::List(items, _)) = first {
            rets = items.len();
            first = ops.next();
        }
        let Some(Operand::Expr(target)) = first else {
            let span = first.map_or(ins.opcode.span, Operand::span);
            self.error(
                span,
                "`call` needs a function name or a register holding its address",
            );
            return;
        };
        let args = match ops.next() {
            Some(Operand::List(items, _)) => items.len(),
            Some(_) | None => 0,
        };
        let Some(name) = target.as_name() else {
            self.error(target.span(), "`call` needs a function name");
            return;
        };
        match self.resolve(&name.text, ctx) {
            Resolved::Func => {
                if let Some(f) = self.funcs.get(name.text.as_str()).cloned() {
                    if f.kind == FunctionKind::Entry {
                        self.error(
                            name.span,
                            format!("cannot call the .entry function '{}'", name.text),
                        );
                    }
                    if f.params != args || f.returns != rets {
                        self.error(
                            ins.span,
                            format!(
                                "call of '{}' passes {args} argument(s) and {rets} return value(s); it is declared with {} and {}",
                                name.text, f.params, f.returns
                            ),
                        );
                    }
                    if !f.defined && f.is_extern && !SYSCALLS.contains(&name.text.as_str()) {
                        self.called_externs.push((name.text.to_string(), name.span));
                    }
                }
            }
            Resolved::Reg(_)
                // An indirect call needs a prototype or a target list.
                if ins.operands.len() < 3 => {
                    self.error(
                        ins.span,
                        "an indirect `call` needs a prototype or a `.calltargets` list",
                    );
                }
            _ => {}
        }
    }
}

/// Functions the CUDA driver provides to every module ("system calls"): a module may declare
/// them `.extern` and call them without defining them.
const SYSCALLS: &[&str] = &[
    "vprintf",
    "malloc",
    "free",
    "__assertfail",
    "cudaGetParameterBuffer",
    "cudaGetParameterBufferV2",
    "cudaLaunchDevice",
    "cudaLaunchDeviceV2",
    "cudaDeviceSynchronize",
    "cudaDeviceGetAttribute",
    "cudaGetDevice",
    "cudaStreamCreateWithFlags",
    "cudaEventCreateWithFlags",
    "cudaMalloc",
    "cudaFree",
];

/// Operand-position context for messages.
struct OpCheck<'a> {
    opcode: &'a str,
    index: usize,
    space: Option<Space>,
}

fn is_space(m: &str) -> bool {
    matches!(
        m,
        ".global"
            | ".shared"
            | ".shared::cta"
            | ".shared::cluster"
            | ".local"
            | ".param"
            | ".const"
            | ".param::entry"
            | ".param::func"
    )
}

/// Why a literal does not fit type `want` (ptxas: "Arguments mismatch"), if it does not.
fn literal_mismatch(e: &Expr, want: Ty) -> Option<String> {
    // The innermost literal decides: `-1` is an integer, `-1.5` a float.
    let mut e = e;
    while let Expr::Unary { arg, .. } = e {
        e = arg;
    }
    let Expr::Lit { kind, text, .. } = e else {
        return None;
    };
    let k = want.kind();
    let ok = match kind {
        LitKind::Int => matches!(k, Kind::Bits | Kind::Unsigned | Kind::Signed | Kind::Pred),
        // ptxas takes `mov.b64 %rd, 1.5` (the double's bits) but not `mov.u32 %r, 1.5`.
        LitKind::Float => {
            matches!(k, Kind::Float)
                || want.name == "f16"
                || want.name == "bf16"
                || (k == Kind::Bits && want.bits() >= 32)
        }
        LitKind::HexF32 => want.bits() == 32 && matches!(k, Kind::Float | Kind::Bits),
        LitKind::HexF64 => want.bits() == 64 && matches!(k, Kind::Float | Kind::Bits),
    };
    if ok {
        None
    } else {
        let what = match kind {
            LitKind::Int => "an integer literal",
            LitKind::Float => "a floating-point literal",
            LitKind::HexF32 => "a `0f` single-precision literal",
            LitKind::HexF64 => "a `0d` double-precision literal",
        };
        Some(format!("{what} `{text}` cannot be a {want} operand"))
    }
}

fn short_list(items: &[&str]) -> String {
    let mut v: Vec<&str> = items.to_vec();
    v.dedup();
    if v.len() > 8 {
        format!(
            "{}, …",
            v[..8]
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        v.iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn item_span(item: &Item) -> Span {
    match item {
        Item::Version { text } => text.span,
        Item::File(f) => f.span,
        Item::Target { span, .. }
        | Item::AddressSize { span, .. }
        | Item::Section { span, .. }
        | Item::Alias { span, .. }
        | Item::Pragma { span, .. } => *span,
        Item::Var(v) => v.span,
        Item::Function(f) => f.span,
    }
}

trait MaxByStart {
    fn max_by_start(self, other: Span) -> Span;
}

impl MaxByStart for Span {
    fn max_by_start(self, other: Span) -> Span {
        if self.start >= other.start {
            self
        } else {
            other
        }
    }
}

/// The span of an instruction's opcode with the modifiers `mods` (its last ones) written after it.
fn opcode_span(ins: &Instruction, mods: &[Name]) -> Span {
    ins.opcode
        .span
        .to(mods.last().map_or(ins.opcode.span, |m| m.span))
}

#[cfg(test)]
mod tests {
    use super::{chain_key, short_key};
    use crate::frontend::ast::{Instruction, Name, Span};

    /// The key packs the name as a copy into a zeroed 16-byte array would, for every length.
    #[test]
    fn short_key_packs_the_bytes_and_the_length() {
        let text = "%rd123456789abcdefgh";
        for n in 0..=text.len() {
            let name = &text[..n];
            let want = (n <= 15).then(|| {
                let mut packed = [0u8; 16];
                packed[..n].copy_from_slice(name.as_bytes());
                packed[15] = n as u8;
                u128::from_le_bytes(packed)
            });
            assert_eq!(short_key(name), want, "{name:?}");
        }
        // Names that differ in one byte, or only in length (a trailing zero-like byte), differ.
        assert_ne!(short_key("%r1"), short_key("%r1\0"));
        assert_ne!(short_key("%rd12345"), short_key("%rd12346"));
    }

    /// A chain's key is the key of its text written out, whatever its words; longer than 15
    /// bytes, it has none.
    #[test]
    fn chain_key_is_the_short_key_of_the_joined_text() {
        let ins = |words: &[&str]| Instruction {
            guard: None,
            opcode: Name::new(words[0], 0, 0),
            modifiers: words[1..].iter().map(|w| Name::new(w, 0, 0)).collect(),
            operands: Vec::new(),
            span: Span::default(),
        };
        for words in [
            &["ld", ".global", ".f32"][..],
            &["cvt", ".rn", ".f32", ".s32"],
            &["mad", ".lo", ".s32"],
            &["ret"],
            &["a", ".b", ".c", ".d", ".e"],
            &["ld", ".global", ".nc", ".f32"],
            &["st", ".shared::cluster", ".u32"],
        ] {
            let joined = words.concat();
            assert_eq!(chain_key(&ins(words)), short_key(&joined), "{joined}");
        }
        assert_ne!(
            chain_key(&ins(&["add", ".s32"])),
            chain_key(&ins(&["add", ".s3"]))
        );
    }
}
