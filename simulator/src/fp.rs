//! Exact floating-point arithmetic with IEEE 754 rounding, for every format the SASS
//! instructions use: f64, f32, f16, bf16, tf32 and the FP8 formats E4M3 and E5M2.
//!
//! Values are unpacked to `mantissa × 2^exponent` with a `u128` mantissa, the operation is done
//! exactly (or with the bits below the target precision jammed into a sticky bit), and the
//! result is rounded once with [`round_pack`] in one of the four IEEE modes. The host's own
//! floating point is only used for the transcendental approximations of `MUFU`.
//!
//! NaN results are the GPU's canonical NaN of the format (`0x7fffffff` for f32, all ones but the
//! sign for the others, `0x7f` for E4M3), whatever the NaN inputs were.

/// A rounding mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Round {
    /// To nearest, ties to even.
    Rn,
    /// Towards zero.
    Rz,
    /// Towards +∞.
    Rp,
    /// Towards −∞.
    Rm,
}

/// A binary floating-point format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fmt {
    /// Exponent bits.
    pub ebits: u32,
    /// Stored fraction bits.
    pub mbits: u32,
    /// E4M3: no infinities, the all-ones exponent holds normal numbers and `S.1111.111` is NaN.
    pub fn_e4m3: bool,
}

pub const F64: Fmt = Fmt {
    ebits: 11,
    mbits: 52,
    fn_e4m3: false,
};
pub const F32: Fmt = Fmt {
    ebits: 8,
    mbits: 23,
    fn_e4m3: false,
};
pub const F16: Fmt = Fmt {
    ebits: 5,
    mbits: 10,
    fn_e4m3: false,
};
pub const BF16: Fmt = Fmt {
    ebits: 8,
    mbits: 7,
    fn_e4m3: false,
};
pub const E5M2: Fmt = Fmt {
    ebits: 5,
    mbits: 2,
    fn_e4m3: false,
};
pub const E4M3: Fmt = Fmt {
    ebits: 4,
    mbits: 3,
    fn_e4m3: true,
};

impl Fmt {
    pub fn bits(&self) -> u32 {
        1 + self.ebits + self.mbits
    }
    pub fn bias(&self) -> i32 {
        (1 << (self.ebits - 1)) - 1
    }
    fn emax_field(&self) -> u64 {
        (1 << self.ebits) - 1
    }
    pub fn sign_bit(&self) -> u64 {
        1 << (self.ebits + self.mbits)
    }
    /// The canonical NaN the GPU produces.
    pub fn nan(&self) -> u64 {
        if self.fn_e4m3 {
            0x7f
        } else {
            self.sign_bit() - 1
        }
    }
    pub fn inf(&self, neg: bool) -> u64 {
        if self.fn_e4m3 {
            return self.max_finite(neg);
        }
        (u64::from(neg) * self.sign_bit()) | (self.emax_field() << self.mbits)
    }
    pub fn max_finite(&self, neg: bool) -> u64 {
        let s = u64::from(neg) * self.sign_bit();
        if self.fn_e4m3 {
            // S.1111.110 = 448.
            s | 0x7e
        } else {
            s | ((self.emax_field() - 1) << self.mbits) | ((1 << self.mbits) - 1)
        }
    }
    pub fn zero(&self, neg: bool) -> u64 {
        u64::from(neg) * self.sign_bit()
    }
}

/// An unpacked value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val {
    Nan,
    Inf(bool),
    Zero(bool),
    /// `(-1)^neg × mant × 2^exp`, `mant > 0`.
    Fin {
        neg: bool,
        mant: u128,
        exp: i32,
    },
}

impl Val {
    pub fn is_nan(&self) -> bool {
        matches!(self, Val::Nan)
    }
    pub fn neg(&self) -> bool {
        match *self {
            Val::Nan => false,
            Val::Inf(n) | Val::Zero(n) => n,
            Val::Fin { neg, .. } => neg,
        }
    }
    pub fn negate(self) -> Val {
        match self {
            Val::Nan => Val::Nan,
            Val::Inf(n) => Val::Inf(!n),
            Val::Zero(n) => Val::Zero(!n),
            Val::Fin { neg, mant, exp } => Val::Fin {
                neg: !neg,
                mant,
                exp,
            },
        }
    }
    pub fn abs(self) -> Val {
        match self {
            Val::Nan => Val::Nan,
            Val::Inf(_) => Val::Inf(false),
            Val::Zero(_) => Val::Zero(false),
            Val::Fin { mant, exp, .. } => Val::Fin {
                neg: false,
                mant,
                exp,
            },
        }
    }
    /// An exact integer.
    pub fn from_i128(v: i128) -> Val {
        if v == 0 {
            Val::Zero(false)
        } else {
            Val::Fin {
                neg: v < 0,
                mant: v.unsigned_abs(),
                exp: 0,
            }
        }
    }
}

/// Whether the bits hold a subnormal number of the format.
pub fn is_subnormal(bits: u64, f: Fmt) -> bool {
    let e = (bits >> f.mbits) & f.emax_field();
    let m = bits & ((1 << f.mbits) - 1);
    e == 0 && m != 0
}

/// Unpacks the low `f.bits()` bits of `bits`. With `ftz`, subnormals read as zero.
pub fn unpack(bits: u64, f: Fmt, ftz: bool) -> Val {
    let neg = bits & f.sign_bit() != 0;
    let e = (bits >> f.mbits) & f.emax_field();
    let m = bits & ((1 << f.mbits) - 1);
    if f.fn_e4m3 {
        if e == f.emax_field() && m == (1 << f.mbits) - 1 {
            return Val::Nan;
        }
    } else if e == f.emax_field() {
        return if m == 0 { Val::Inf(neg) } else { Val::Nan };
    }
    if e == 0 {
        if m == 0 || ftz {
            return Val::Zero(neg);
        }
        return Val::Fin {
            neg,
            mant: u128::from(m),
            exp: 1 - f.bias() - f.mbits as i32,
        };
    }
    Val::Fin {
        neg,
        mant: u128::from(m | (1 << f.mbits)),
        exp: e as i32 - f.bias() - f.mbits as i32,
    }
}

/// How a result is packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pack {
    pub round: Round,
    /// Subnormal results become a zero of the same sign.
    pub ftz: bool,
    /// Overflow and infinities give the largest finite number (`.SATFINITE`).
    pub satfinite: bool,
}

impl Pack {
    pub fn new(round: Round, ftz: bool) -> Pack {
        Pack {
            round,
            ftz,
            satfinite: false,
        }
    }
    pub const RN: Pack = Pack {
        round: Round::Rn,
        ftz: false,
        satfinite: false,
    };
}

/// Packs a value into the format, rounding once.
pub fn pack(v: Val, f: Fmt, p: Pack) -> u64 {
    match v {
        Val::Nan => f.nan(),
        Val::Inf(n) => {
            if p.satfinite {
                f.max_finite(n)
            } else {
                f.inf(n)
            }
        }
        Val::Zero(n) => f.zero(n),
        Val::Fin { neg, mant, exp } => round_pack(neg, mant, exp, f, p),
    }
}

/// Rounds `(-1)^neg × mant × 2^exp` (`mant > 0`, already exact or with a sticky bit jammed in
/// its least significant bit far below the target precision) into the format.
pub fn round_pack(neg: bool, mant: u128, exp: i32, f: Fmt, p: Pack) -> u64 {
    if mant == 0 {
        return f.zero(neg);
    }
    let msb = 127 - mant.leading_zeros() as i32;
    let e = msb + exp; // value in [2^e, 2^(e+1))
    let emin = 1 - f.bias();
    let lsb_exp = e.max(emin) - f.mbits as i32;
    let shift = i64::from(lsb_exp) - i64::from(exp);
    let (mut q, inexact, inc) = if shift <= 0 {
        // Exact: few bits.
        (mant << (-shift) as u32, false, false)
    } else {
        let (q, cmp_half, inexact) = if shift >= 128 {
            // Everything is below the half-LSB (mant < 2^128 <= 2^(shift-1) unless shift == 128).
            let half_cmp = if shift == 128 {
                mant.cmp(&(1u128 << 127))
            } else {
                std::cmp::Ordering::Less
            };
            (0u128, half_cmp, true)
        } else {
            let s = shift as u32;
            let q = mant >> s;
            let rem = mant & ((1u128 << s) - 1);
            let half = 1u128 << (s - 1);
            (q, rem.cmp(&half), rem != 0)
        };
        let inc = match p.round {
            Round::Rn => {
                cmp_half == std::cmp::Ordering::Greater
                    || (cmp_half == std::cmp::Ordering::Equal && q & 1 == 1)
            }
            Round::Rz => false,
            Round::Rp => !neg && inexact,
            Round::Rm => neg && inexact,
        };
        (q, inexact, inc)
    };
    let _ = inexact;
    if inc {
        q += 1;
    }
    let mut lsb_exp = lsb_exp;
    if q >> (f.mbits + 1) != 0 {
        q >>= 1;
        lsb_exp += 1;
    }
    // Encode.
    let sign = u64::from(neg) * f.sign_bit();
    let overflow = |f: Fmt, p: Pack| -> u64 {
        if p.satfinite || f.fn_e4m3 {
            return f.max_finite(neg);
        }
        match p.round {
            Round::Rn => f.inf(neg),
            Round::Rz => f.max_finite(neg),
            Round::Rp => {
                if neg {
                    f.max_finite(true)
                } else {
                    f.inf(false)
                }
            }
            Round::Rm => {
                if neg {
                    f.inf(true)
                } else {
                    f.max_finite(false)
                }
            }
        }
    };
    if q >> f.mbits == 0 {
        // Subnormal (or zero after rounding).
        if p.ftz || q == 0 {
            return f.zero(neg);
        }
        return sign | q as u64;
    }
    let biased = i64::from(lsb_exp) + i64::from(f.mbits) + i64::from(f.bias());
    let frac = (q as u64) & ((1 << f.mbits) - 1);
    if f.fn_e4m3 {
        if biased > f.emax_field() as i64 || (biased == f.emax_field() as i64 && frac == 0x7) {
            return overflow(f, p);
        }
    } else if biased >= f.emax_field() as i64 {
        return overflow(f, p);
    }
    sign | ((biased as u64) << f.mbits) | frac
}

/// Brings a finite value's mantissa to have its top bit at `TOP` (exactly).
const TOP: u32 = 125;

fn normalize(mant: u128, exp: i32) -> (u128, i32) {
    let msb = 127 - mant.leading_zeros();
    if msb <= TOP {
        (mant << (TOP - msb), exp - (TOP - msb) as i32)
    } else {
        let s = msb - TOP;
        let sticky = mant & ((1u128 << s) - 1) != 0;
        ((mant >> s) | u128::from(sticky), exp + s as i32)
    }
}

/// Exact-with-sticky addition of two finite nonzero values; the result is exact enough to be
/// rounded once to any format of at most 64 significant bits.
fn add_fin(a: (bool, u128, i32), b: (bool, u128, i32)) -> (bool, u128, i32) {
    let (an, am, ae) = a;
    let (bn, bm, be) = b;
    let (am, ae) = normalize(am, ae);
    let (bm, be) = normalize(bm, be);
    // Order by magnitude.
    let ((xn, xm, xe), (yn, ym, ye)) = if (ae, am) >= (be, bm) {
        ((an, am, ae), (bn, bm, be))
    } else {
        ((bn, bm, be), (an, am, ae))
    };
    let d = (xe - ye) as u32;
    let ym = if d == 0 {
        ym
    } else if d >= 127 {
        1 // sticky only
    } else {
        (ym >> d) | u128::from(ym & ((1u128 << d) - 1) != 0)
    };
    if xn == yn {
        (xn, xm + ym, xe)
    } else {
        (xn, xm - ym, xe)
    }
}

fn zero_sum_sign(an: bool, bn: bool, round: Round) -> bool {
    if an == bn { an } else { round == Round::Rm }
}

/// a + b.
pub fn add(a: Val, b: Val, round: Round) -> Val {
    match (a, b) {
        (Val::Nan, _) | (_, Val::Nan) => Val::Nan,
        (Val::Inf(x), Val::Inf(y)) => {
            if x == y {
                Val::Inf(x)
            } else {
                Val::Nan
            }
        }
        (Val::Inf(x), _) | (_, Val::Inf(x)) => Val::Inf(x),
        (Val::Zero(x), Val::Zero(y)) => Val::Zero(zero_sum_sign(x, y, round)),
        (Val::Zero(_), v) | (v, Val::Zero(_)) => v,
        (
            Val::Fin {
                neg: an,
                mant: am,
                exp: ae,
            },
            Val::Fin {
                neg: bn,
                mant: bm,
                exp: be,
            },
        ) => {
            let (n, m, e) = add_fin((an, am, ae), (bn, bm, be));
            if m == 0 {
                Val::Zero(round == Round::Rm)
            } else {
                Val::Fin {
                    neg: n,
                    mant: m,
                    exp: e,
                }
            }
        }
    }
}

/// a × b (exact; the mantissas must be at most 64 bits each, which unpacked values are).
pub fn mul(a: Val, b: Val) -> Val {
    match (a, b) {
        (Val::Nan, _) | (_, Val::Nan) => Val::Nan,
        (Val::Inf(_), Val::Zero(_)) | (Val::Zero(_), Val::Inf(_)) => Val::Nan,
        (Val::Inf(x), v) | (v, Val::Inf(x)) => Val::Inf(x != v.neg()),
        (Val::Zero(x), v) | (v, Val::Zero(x)) => Val::Zero(x != v.neg()),
        (
            Val::Fin {
                neg: an,
                mant: am,
                exp: ae,
            },
            Val::Fin {
                neg: bn,
                mant: bm,
                exp: be,
            },
        ) => {
            let (am, ae) = shrink(am, ae);
            let (bm, be) = shrink(bm, be);
            Val::Fin {
                neg: an != bn,
                mant: am * bm,
                exp: ae + be,
            }
        }
    }
}

/// Drops trailing zero bits and, for mantissas wider than 64 bits, jams the excess (only
/// products of products get there).
fn shrink(m: u128, e: i32) -> (u128, i32) {
    let tz = m.trailing_zeros();
    let (m, e) = (m >> tz, e + tz as i32);
    let bits = 128 - m.leading_zeros();
    if bits <= 64 {
        (m, e)
    } else {
        let s = bits - 64;
        (
            (m >> s) | u128::from(m & ((1u128 << s) - 1) != 0),
            e + s as i32,
        )
    }
}

/// a × b + c with one rounding (the zero-sign rules of IEEE fusedMultiplyAdd).
pub fn fma(a: Val, b: Val, c: Val, round: Round) -> Val {
    let p = mul(a, b);
    match (p, c) {
        (Val::Zero(x), Val::Zero(y)) => Val::Zero(zero_sum_sign(x, y, round)),
        _ => add(p, c, round),
    }
}

/// Rounds a finite value to an integer value in the same representation (FRND).
pub fn round_to_int(v: Val, round: Round) -> Val {
    match v {
        Val::Fin { neg, mant, exp } => {
            if exp >= 0 {
                return v;
            }
            let s = (-exp) as u32;
            let (q, rem_cmp, inexact) = if s >= 128 {
                (0u128, std::cmp::Ordering::Less, true)
            } else {
                let q = mant >> s;
                let rem = mant & ((1u128 << s) - 1);
                (q, rem.cmp(&(1u128 << (s - 1))), rem != 0)
            };
            let inc = match round {
                Round::Rn => {
                    rem_cmp == std::cmp::Ordering::Greater
                        || (rem_cmp == std::cmp::Ordering::Equal && q & 1 == 1)
                }
                Round::Rz => false,
                Round::Rp => !neg && inexact,
                Round::Rm => neg && inexact,
            };
            let q = q + u128::from(inc);
            if q == 0 {
                Val::Zero(neg)
            } else {
                Val::Fin {
                    neg,
                    mant: q,
                    exp: 0,
                }
            }
        }
        other => other,
    }
}

/// Converts to an integer of `bits` bits (signed or not) with the rounding mode, saturating;
/// NaN gives 0 (the GPU's F2I).
pub fn to_int(v: Val, round: Round, signed: bool, bits: u32) -> u64 {
    let (min, max): (i128, i128) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let x: i128 = match round_to_int(v, round) {
        Val::Nan => 0,
        Val::Inf(n) => {
            if n {
                min
            } else {
                max
            }
        }
        Val::Zero(_) => 0,
        Val::Fin { neg, mant, exp } => {
            // exp >= 0 here.
            let big = exp > 126 || (mant >> (126 - exp.min(126)) as u32) != 0;
            if big {
                if neg { min } else { max }
            } else {
                let m = (mant << exp as u32) as i128;
                if neg { -m } else { m }
            }
        }
    };
    let x = x.clamp(min, max);
    (x as u64)
        & if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        }
}

/// IEEE comparison result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Eq,
    Gt,
    Unordered,
}

fn cmp_fin(a: (bool, u128, i32), b: (bool, u128, i32)) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    let (an, am, ae) = a;
    let (bn, bm, be) = b;
    if an != bn {
        return if an { Less } else { Greater };
    }
    let (am, ae) = normalize(am, ae);
    let (bm, be) = normalize(bm, be);
    let mag = (ae, am).cmp(&(be, bm));
    if an { mag.reverse() } else { mag }
}

/// Compares two values (±0 equal).
pub fn compare(a: Val, b: Val) -> Cmp {
    use std::cmp::Ordering::*;
    let key = |v: Val| -> Option<(i8, (bool, u128, i32))> {
        match v {
            Val::Nan => None,
            Val::Inf(n) => Some((if n { -1 } else { 1 }, (false, 0, 0))),
            Val::Zero(_) => Some((0, (false, 0, 0))),
            Val::Fin { neg, mant, exp } => Some((0, (neg, mant, exp))),
        }
    };
    let (Some((ka, fa)), Some((kb, fb))) = (key(a), key(b)) else {
        return Cmp::Unordered;
    };
    let o = if ka != kb {
        ka.cmp(&kb)
    } else if ka != 0 {
        Equal
    } else {
        match (fa.1 == 0, fb.1 == 0) {
            (true, true) => Equal,
            (true, false) => {
                if fb.0 {
                    Greater
                } else {
                    Less
                }
            }
            (false, true) => {
                if fa.0 {
                    Less
                } else {
                    Greater
                }
            }
            (false, false) => cmp_fin(fa, fb),
        }
    };
    match o {
        Less => Cmp::Lt,
        Equal => Cmp::Eq,
        Greater => Cmp::Gt,
    }
}

/// min/max of two values: a NaN operand gives the other one (both NaN: NaN); −0 < +0.
/// With `nan_prop`, any NaN gives NaN.
pub fn minmax(a: Val, b: Val, max: bool, nan_prop: bool) -> Val {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => return Val::Nan,
        (true, false) => return if nan_prop { Val::Nan } else { b },
        (false, true) => return if nan_prop { Val::Nan } else { a },
        _ => {}
    }
    let c = compare(a, b);
    let a_wins = match c {
        Cmp::Lt => !max,
        Cmp::Gt => max,
        // Equal: only the zero signs can differ.
        _ => {
            if max {
                !a.neg()
            } else {
                a.neg()
            }
        }
    };
    if a_wins { a } else { b }
}

// ---------------------------------------------------------------------------------------------
// Convenience wrappers on bit patterns.

pub fn f32_bits(v: Val, p: Pack) -> u32 {
    pack(v, F32, p) as u32
}
pub fn f64_bits(v: Val, p: Pack) -> u64 {
    pack(v, F64, p)
}
pub fn u32v(bits: u32, ftz: bool) -> Val {
    unpack(u64::from(bits), F32, ftz)
}
pub fn u64v(bits: u64) -> Val {
    unpack(bits, F64, false)
}
/// A host f64 as an exact value.
pub fn from_f64(x: f64) -> Val {
    unpack(x.to_bits(), F64, false)
}
/// An exact value rounded to the nearest host f64.
pub fn to_f64(v: Val) -> f64 {
    f64::from_bits(pack(v, F64, Pack::RN))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift*).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        /// Interesting f32 bit patterns: random, small exponents, subnormals, specials.
        fn f32(&mut self) -> u32 {
            let r = self.next();
            match r % 8 {
                0 => [
                    0,
                    0x8000_0000,
                    0x7f80_0000,
                    0xff80_0000,
                    1,
                    0x807f_ffff,
                    0x7f7f_ffff,
                ][(r >> 8) as usize % 7],
                1 => (r >> 16) as u32 & 0x807f_ffff,
                2 => ((r >> 16) as u32 & 0x83ff_ffff) | 0x3c00_0000,
                _ => (r >> 16) as u32,
            }
        }
        fn f64(&mut self) -> u64 {
            let r = self.next();
            match r % 8 {
                0 => [
                    0,
                    1 << 63,
                    0x7ff0 << 48,
                    0xfff0 << 48,
                    1,
                    0x7fef_ffff_ffff_ffff,
                ][(r >> 8) as usize % 6],
                1 => r & 0x800f_ffff_ffff_ffff,
                2 => (r & 0x83ff_ffff_ffff_ffff) | 0x3c00_0000_0000_0000,
                _ => r,
            }
        }
    }

    fn same32(a: u32, b: u32) -> bool {
        a == b || (f32::from_bits(a).is_nan() && f32::from_bits(b).is_nan())
    }
    fn same64(a: u64, b: u64) -> bool {
        a == b || (f64::from_bits(a).is_nan() && f64::from_bits(b).is_nan())
    }

    #[test]
    fn f32_round_to_nearest_matches_the_host() {
        let mut g = Rng(0x1234_5678_9abc_def1);
        for _ in 0..200_000 {
            let (a, b, c) = (g.f32(), g.f32(), g.f32());
            let (x, y, z) = (f32::from_bits(a), f32::from_bits(b), f32::from_bits(c));
            let (va, vb, vc) = (u32v(a, false), u32v(b, false), u32v(c, false));
            let s = f32_bits(add(va, vb, Round::Rn), Pack::RN);
            assert!(same32(s, (x + y).to_bits()), "{x:e} + {y:e}");
            let m = f32_bits(mul(va, vb), Pack::RN);
            assert!(same32(m, (x * y).to_bits()), "{x:e} * {y:e}");
            let f = f32_bits(fma(va, vb, vc, Round::Rn), Pack::RN);
            assert!(
                same32(f, x.mul_add(y, z).to_bits()),
                "fma {x:e} {y:e} {z:e}"
            );
            let d = f32_bits(from_f64(f64::from(x) * 3.0), Pack::RN);
            assert!(same32(d, ((f64::from(x) * 3.0) as f32).to_bits()));
        }
    }

    #[test]
    fn f64_round_to_nearest_matches_the_host() {
        let mut g = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200_000 {
            let (a, b, c) = (g.f64(), g.f64(), g.f64());
            let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
            let (va, vb, vc) = (u64v(a), u64v(b), u64v(c));
            assert!(same64(
                f64_bits(add(va, vb, Round::Rn), Pack::RN),
                (x + y).to_bits()
            ));
            assert!(same64(f64_bits(mul(va, vb), Pack::RN), (x * y).to_bits()));
            assert!(
                same64(
                    f64_bits(fma(va, vb, vc, Round::Rn), Pack::RN),
                    x.mul_add(y, z).to_bits()
                ),
                "fma {x:e} {y:e} {z:e}"
            );
        }
    }

    /// Directed rounding brackets the exact result: RM ≤ RN-result-neighbourhood ≤ RP, and RZ
    /// is one of them; checked against an f64 computation that is exact for f32 sums/products.
    #[test]
    fn f32_directed_rounding_brackets_the_exact_value() {
        let mut g = Rng(42);
        for _ in 0..100_000 {
            let (a, b) = (g.f32(), g.f32());
            let (x, y) = (f32::from_bits(a), f32::from_bits(b));
            let exact = f64::from(x) * f64::from(y); // exact for f32 operands
            if !exact.is_finite() || exact.abs() > f64::from(f32::MAX) {
                continue;
            }
            let (va, vb) = (u32v(a, false), u32v(b, false));
            let dn = f32::from_bits(f32_bits(mul(va, vb), Pack::new(Round::Rm, false)));
            let up = f32::from_bits(f32_bits(mul(va, vb), Pack::new(Round::Rp, false)));
            let z = f32::from_bits(f32_bits(mul(va, vb), Pack::new(Round::Rz, false)));
            assert!(
                f64::from(dn) <= exact && exact <= f64::from(up),
                "{x:e}*{y:e}"
            );
            if f64::from(dn) == exact {
                assert_eq!(dn, up);
            } else {
                assert_eq!(dn.next_up(), up, "{x:e}*{y:e}");
            }
            assert_eq!(z, if exact >= 0.0 { dn } else { up });
        }
    }

    #[test]
    fn half_and_fp8_formats() {
        let h = |x: f64| pack(from_f64(x), F16, Pack::RN);
        assert_eq!(h(1.0), 0x3c00);
        assert_eq!(h(65504.0), 0x7bff);
        assert_eq!(h(65520.0), 0x7c00);
        assert_eq!(h(-2.0f64.powi(-24)), 0x8001);
        assert_eq!(to_f64(unpack(0x3555, F16, false)), 0.333_251_953_125);
        assert_eq!(pack(from_f64(1.0), BF16, Pack::RN), 0x3f80);
        let sat = Pack {
            satfinite: true,
            ..Pack::RN
        };
        assert_eq!(pack(from_f64(1000.0), E4M3, sat), 0x7e);
        assert_eq!(pack(from_f64(448.0), E4M3, Pack::RN), 0x7e);
        assert_eq!(pack(from_f64(1.0), E4M3, Pack::RN), 0x38);
        assert_eq!(pack(from_f64(1.0e6), E5M2, sat), 0x7b);
        assert_eq!(pack(from_f64(1.0), E5M2, Pack::RN), 0x3c);
        assert_eq!(pack(Val::Nan, E4M3, sat), 0x7f);
        assert!(unpack(0x7f, E4M3, false).is_nan());
        assert_eq!(to_f64(unpack(0x7e, E4M3, false)), 448.0);
    }

    #[test]
    fn conversions_to_integers() {
        let v = from_f64(-2.5);
        assert_eq!(to_int(v, Round::Rn, true, 32) as u32 as i32, -2);
        assert_eq!(to_int(v, Round::Rz, true, 32) as u32 as i32, -2);
        assert_eq!(to_int(v, Round::Rm, true, 32) as u32 as i32, -3);
        assert_eq!(to_int(v, Round::Rp, true, 32) as u32 as i32, -2);
        assert_eq!(to_int(v, Round::Rn, false, 32), 0);
        assert_eq!(to_int(from_f64(1e20), Round::Rn, true, 32), 0x7fff_ffff);
        assert_eq!(to_int(Val::Nan, Round::Rn, true, 32), 0);
        assert_eq!(to_int(from_f64(70000.0), Round::Rn, false, 16), 0xffff);
    }

    #[test]
    fn min_max_and_compare() {
        let (pz, nz) = (Val::Zero(false), Val::Zero(true));
        assert_eq!(minmax(pz, nz, false, false), nz);
        assert_eq!(minmax(pz, nz, true, false), pz);
        assert_eq!(minmax(Val::Nan, pz, true, false), pz);
        assert_eq!(minmax(Val::Nan, pz, true, true), Val::Nan);
        assert_eq!(compare(from_f64(1.0), from_f64(2.0)), Cmp::Lt);
        assert_eq!(compare(from_f64(-1.0), from_f64(-2.0)), Cmp::Gt);
        assert_eq!(compare(pz, nz), Cmp::Eq);
        assert_eq!(compare(Val::Nan, nz), Cmp::Unordered);
    }
}
