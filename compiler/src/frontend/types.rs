//! PTX scalar types and the operand type-compatibility rules of the PTX ISA ("Operand Type
//! Information"), calibrated against ptxas 13.1 (`add.f32` takes a `.b32` register but not a
//! `.u32` one; `add.u32` takes `.s32`/`.b32`; `ld`/`st`/`cvt` data may be wider than the type).

use std::fmt;

/// What family a type belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bits,
    Unsigned,
    Signed,
    Float,
    /// Packed or narrow floats (`.f16x2`, `.bf16`, `.e4m3x2`, …).
    PackedFloat,
    Pred,
    /// Opaque (`.b1024` tensormap objects, `.texref`, …).
    Opaque,
}

/// A PTX scalar type (`.u32`): an index into the type table, with its name, width and family.
#[derive(Clone, Copy, Debug)]
pub struct Ty {
    pub name: &'static str,
    index: u8,
}

// The name is the table row's: two types are equal when their rows are (one byte compare, not
// a string compare; the checker compares types tens of thousands of times in a large kernel).
impl PartialEq for Ty {
    fn eq(&self, other: &Ty) -> bool {
        self.index == other.index
    }
}

impl Eq for Ty {}

impl std::hash::Hash for Ty {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.index.hash(state);
    }
}

const TYPES: &[(&str, u32, Kind)] = &[
    ("b8", 8, Kind::Bits),
    ("b16", 16, Kind::Bits),
    ("b32", 32, Kind::Bits),
    ("b64", 64, Kind::Bits),
    ("b128", 128, Kind::Bits),
    ("u8", 8, Kind::Unsigned),
    ("u16", 16, Kind::Unsigned),
    ("u32", 32, Kind::Unsigned),
    ("u64", 64, Kind::Unsigned),
    ("s8", 8, Kind::Signed),
    ("s16", 16, Kind::Signed),
    ("s32", 32, Kind::Signed),
    ("s64", 64, Kind::Signed),
    ("f16", 16, Kind::PackedFloat),
    ("bf16", 16, Kind::PackedFloat),
    ("f16x2", 32, Kind::PackedFloat),
    ("bf16x2", 32, Kind::PackedFloat),
    ("u16x2", 32, Kind::Unsigned),
    ("s16x2", 32, Kind::Signed),
    ("f32", 32, Kind::Float),
    ("f64", 64, Kind::Float),
    ("tf32", 32, Kind::PackedFloat),
    ("e4m3", 8, Kind::PackedFloat),
    ("e5m2", 8, Kind::PackedFloat),
    ("e4m3x2", 16, Kind::PackedFloat),
    ("e5m2x2", 16, Kind::PackedFloat),
    ("e2m3x2", 16, Kind::PackedFloat),
    ("e3m2x2", 16, Kind::PackedFloat),
    ("e2m1x2", 8, Kind::PackedFloat),
    ("ue8m0x2", 16, Kind::PackedFloat),
    ("s4", 4, Kind::Signed),
    ("u4", 4, Kind::Unsigned),
    ("b1", 1, Kind::Bits),
    ("pred", 1, Kind::Pred),
    ("b1024", 1024, Kind::Opaque),
    ("texref", 64, Kind::Opaque),
    ("samplerref", 64, Kind::Opaque),
    ("surfref", 64, Kind::Opaque),
];

/// The row of [`TYPES`] named `w` (a `match`, which compiles to a few length and byte tests:
/// the checker and instruction selection look types up hundreds of thousands of times in a large
/// kernel; a test checks it against the table).
fn type_index(w: &str) -> Option<u8> {
    Some(match w {
        "b8" => 0,
        "b16" => 1,
        "b32" => 2,
        "b64" => 3,
        "b128" => 4,
        "u8" => 5,
        "u16" => 6,
        "u32" => 7,
        "u64" => 8,
        "s8" => 9,
        "s16" => 10,
        "s32" => 11,
        "s64" => 12,
        "f16" => 13,
        "bf16" => 14,
        "f16x2" => 15,
        "bf16x2" => 16,
        "u16x2" => 17,
        "s16x2" => 18,
        "f32" => 19,
        "f64" => 20,
        "tf32" => 21,
        "e4m3" => 22,
        "e5m2" => 23,
        "e4m3x2" => 24,
        "e5m2x2" => 25,
        "e2m3x2" => 26,
        "e3m2x2" => 27,
        "e2m1x2" => 28,
        "ue8m0x2" => 29,
        "s4" => 30,
        "u4" => 31,
        "b1" => 32,
        "pred" => 33,
        "b1024" => 34,
        "texref" => 35,
        "samplerref" => 36,
        "surfref" => 37,
        _ => return None,
    })
}

impl Ty {
    /// The type named by a modifier (`.u32`) or bare name (`u32`).
    pub fn parse(word: &str) -> Option<Ty> {
        let w = word.strip_prefix('.').unwrap_or(word);
        // Type names are short and start with one of a few letters: a cheap filter first.
        if w.len() > 10 || !w.starts_with(['b', 'u', 's', 'f', 't', 'e', 'p']) {
            return None;
        }
        type_index(w).map(|i| Ty {
            name: TYPES[usize::from(i)].0,
            index: i,
        })
    }

    fn entry(self) -> (u32, Kind) {
        let (_, bits, kind) = TYPES[self.index as usize];
        (bits, kind)
    }

    pub fn bits(self) -> u32 {
        self.entry().0
    }

    pub fn kind(self) -> Kind {
        self.entry().1
    }

    pub fn is_pred(self) -> bool {
        self.kind() == Kind::Pred
    }

    pub fn is_integer_like(self) -> bool {
        matches!(self.kind(), Kind::Bits | Kind::Unsigned | Kind::Signed)
    }

    pub fn is_float(self) -> bool {
        matches!(self.kind(), Kind::Float | Kind::PackedFloat)
    }

    /// The type of the same family at twice the width (`.u32` → `.u64`), for `mul.wide`.
    pub fn doubled(self) -> Option<Ty> {
        let prefix: String = self
            .name
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        Ty::parse(&format!("{prefix}{}", self.bits() * 2))
    }

    /// Whether a register declared with type `reg` may be used where the instruction wants
    /// `want`. `relaxed` is the ld/st/cvt rule: an integer register may be wider than the type.
    #[inline]
    pub fn register_fits(reg: Ty, want: Ty, relaxed: bool) -> bool {
        // The same type (`%f1` of `.f32` in `add.f32`) is the common case: one byte compare
        // where the caller is, without a call.
        reg == want || Ty::other_register_fits(reg, want, relaxed)
    }

    /// The register types that fit `want` ([`Ty::register_fits`] with `relaxed`), as a set.
    pub fn registers_fitting(want: Ty, relaxed: bool) -> TySet {
        TySet::matching(|reg| Ty::register_fits(reg, want, relaxed))
    }

    /// [`Ty::register_fits`] for two different types.
    fn other_register_fits(reg: Ty, want: Ty, relaxed: bool) -> bool {
        let (rb, rk) = reg.entry();
        let (wb, wk) = want.entry();
        if rk == Kind::Pred || wk == Kind::Pred {
            return false;
        }
        // The relaxed ld/st/cvt rule: a wider integer or bit-size register may hold a narrower
        // value of any kind (`ld.global.f32` into a `.b64` register is accepted by ptxas).
        if relaxed && rb > wb && reg.is_integer_like() {
            return true;
        }
        let size_ok = rb == wb;
        if !size_ok {
            return false;
        }
        match wk {
            Kind::Bits | Kind::Opaque => true,
            Kind::Unsigned | Kind::Signed => {
                matches!(rk, Kind::Bits | Kind::Unsigned | Kind::Signed)
            }
            Kind::Float => matches!(rk, Kind::Bits | Kind::Float),
            Kind::PackedFloat => matches!(rk, Kind::Bits | Kind::PackedFloat),
            Kind::Pred => false,
        }
    }
}

/// A set of types: bit `i` stands for row `i` of the type table (38 rows). The checker keeps,
/// per operand position of an opcode chain, the set of register types that fit there
/// ([`Ty::registers_fitting`]): testing a register against it is one shift and one `and`,
/// where [`Ty::register_fits`] compares the two types' families and widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TySet(u64);

impl TySet {
    pub const EMPTY: TySet = TySet(0);
    /// Every type.
    pub const ALL: TySet = TySet((1 << TYPES.len()) - 1);

    /// The types for which `pred` holds.
    pub fn matching(pred: impl Fn(Ty) -> bool) -> TySet {
        let mut set = TySet::EMPTY;
        for (index, (name, _, _)) in TYPES.iter().enumerate() {
            if pred(Ty {
                name,
                index: index as u8,
            }) {
                set.0 |= 1 << index;
            }
        }
        set
    }

    pub fn contains(self, t: Ty) -> bool {
        self.0 >> t.index & 1 != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".{}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_index_matches_the_table() {
        for (k, (name, _, _)) in TYPES.iter().enumerate() {
            assert_eq!(type_index(name), Some(k as u8), "{name}");
            assert_eq!(Ty::parse(&format!(".{name}")).map(|t| t.name), Some(*name));
        }
        for w in ["", "b", "u31", "f32x", "pred2", ".u32", "U32"] {
            assert_eq!(type_index(w), None, "{w}");
        }
    }

    fn t(s: &str) -> Ty {
        Ty::parse(s).unwrap()
    }

    #[test]
    fn compatibility_matches_ptxas() {
        // Calibrated with ptxas 13.1 (see module docs).
        assert!(Ty::register_fits(t("b32"), t("f32"), false));
        assert!(!Ty::register_fits(t("u32"), t("f32"), false));
        assert!(Ty::register_fits(t("s32"), t("u32"), false));
        assert!(!Ty::register_fits(t("f32"), t("u32"), false));
        assert!(!Ty::register_fits(t("b64"), t("u32"), false));
        assert!(Ty::register_fits(t("u64"), t("u32"), true));
        assert!(!Ty::register_fits(t("u32"), t("u64"), true));
        assert!(!Ty::register_fits(t("pred"), t("b32"), false));
        assert!(Ty::register_fits(t("b32"), t("f16x2"), false));
        assert_eq!(t("s32").doubled(), Some(t("s64")));
    }

    #[test]
    fn registers_fitting_is_register_fits_as_a_set() {
        for (want, _, _) in TYPES {
            for relaxed in [false, true] {
                let set = Ty::registers_fitting(t(want), relaxed);
                for (reg, _, _) in TYPES {
                    assert_eq!(
                        set.contains(t(reg)),
                        Ty::register_fits(t(reg), t(want), relaxed),
                        "{reg} for {want}, relaxed {relaxed}"
                    );
                }
            }
        }
        assert!(
            TYPES
                .iter()
                .all(|(name, _, _)| TySet::ALL.contains(t(name)))
        );
    }
}
