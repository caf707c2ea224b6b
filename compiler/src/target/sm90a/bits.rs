//! Bit fields of a 128-bit instruction.
//!
//! An instruction is stored as two little-endian 64-bit words; *instruction bit i* is bit `i` of
//! the low word for `i < 64` and bit `i - 64` of the high word otherwise (the numbering of
//! `shared/notes/ptxas-facts.md` §0).

/// A field of up to two bit ranges. The value is `bits(lo) | bits(hi) << lo.width`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// (first bit, width) of the low part.
    pub lo: (u8, u8),
    /// (first bit, width) of the high part; width 0 when the field is one range.
    pub hi: (u8, u8),
}

impl Field {
    /// The bits `pos .. pos + width`.
    pub const fn new(pos: u8, width: u8) -> Field {
        Field {
            lo: (pos, width),
            hi: (0, 0),
        }
    }

    /// A field split in two ranges: `lo` holds the low bits of the value.
    pub const fn split(lo: (u8, u8), hi: (u8, u8)) -> Field {
        Field { lo, hi }
    }

    /// Total width in bits.
    pub const fn width(&self) -> u32 {
        self.lo.1 as u32 + self.hi.1 as u32
    }

    /// The largest value the field holds.
    pub const fn max(&self) -> u64 {
        if self.width() >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width()) - 1
        }
    }

    /// The field's bits as a mask over the two words.
    pub fn mask(&self) -> [u64; 2] {
        let range = |(pos, w): (u8, u8)| -> u128 {
            match w {
                0 => 0,
                128.. => !0,
                _ => ((1u128 << w) - 1) << pos,
            }
        };
        let m = range(self.lo) | range(self.hi);
        [m as u64, (m >> 64) as u64]
    }

    /// Reads the field.
    #[inline]
    pub fn get(&self, w: &[u64; 2]) -> u64 {
        let lo = get_bits(w, self.lo.0, self.lo.1);
        if self.hi.1 == 0 {
            lo
        } else {
            lo | get_bits(w, self.hi.0, self.hi.1) << self.lo.1
        }
    }

    /// Writes the field (the value is truncated to the field's width).
    #[inline]
    pub fn set(&self, w: &mut [u64; 2], v: u64) {
        set_bits(w, self.lo.0, self.lo.1, v);
        if self.hi.1 != 0 {
            set_bits(w, self.hi.0, self.hi.1, v >> self.lo.1);
        }
    }

    /// Reads the field and sign-extends it.
    pub fn get_signed(&self, w: &[u64; 2]) -> i64 {
        sign_extend(self.get(w), self.width())
    }
}

/// Sign-extends the low `width` bits of `v`.
pub fn sign_extend(v: u64, width: u32) -> i64 {
    if width == 0 || width >= 64 {
        return v as i64;
    }
    let shift = 64 - width;
    ((v << shift) as i64) >> shift
}

/// `n` low bits set (`n` ≤ 64).
fn low_mask(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// The two words as one 128-bit number (instruction bit `i` is its bit `i`).
fn joined(w: &[u64; 2]) -> u128 {
    u128::from(w[0]) | u128::from(w[1]) << 64
}

/// Reads `width` bits (at most 64) starting at instruction bit `pos`.
///
/// One shift of the 128-bit instruction: a loop over the parts of the range in each word was
/// 85 instructions a field, and fields are read and written for every operand the encoder,
/// the decoder and the scoreboard pass look at.
#[inline]
pub fn get_bits(w: &[u64; 2], pos: u8, width: u8) -> u64 {
    let pos = u32::from(pos);
    if pos >= 128 || width == 0 {
        return 0;
    }
    let n = u32::from(width).min(128 - pos).min(64);
    // A field inside one word (all but a few) is read from that word: a shift of the 128-bit
    // number costs several instructions more.
    if pos + n <= 64 {
        return (w[0] >> pos) & low_mask(n);
    }
    if pos >= 64 {
        return (w[1] >> (pos - 64)) & low_mask(n);
    }
    ((joined(w) >> pos) as u64) & low_mask(n)
}

/// Writes `width` bits starting at instruction bit `pos` (bits of the field above the value's
/// 64 are cleared; bits past 128 do not exist).
#[inline]
pub fn set_bits(w: &mut [u64; 2], pos: u8, width: u8, v: u64) {
    let pos = u32::from(pos);
    if pos >= 128 || width == 0 {
        return;
    }
    let n = (u32::from(width)).min(128 - pos);
    // A field inside one word (all but a few) is written in that word, as in [`get_bits`]
    // (the 128-bit masks were 2.2M of the 238M instructions of compiling the straight-line 16k
    // kernel).
    if pos + n <= 64 {
        let mask = low_mask(n) << pos;
        w[0] = (w[0] & !mask) | ((v << pos) & mask);
        return;
    }
    if pos >= 64 {
        let mask = low_mask(n) << (pos - 64);
        w[1] = (w[1] & !mask) | ((v << (pos - 64)) & mask);
        return;
    }
    let mask = if n >= 128 { !0u128 } else { (1u128 << n) - 1 } << pos;
    let all = (joined(w) & !mask) | ((u128::from(v) << pos) & mask);
    *w = [all as u64, (all >> 64) as u64];
}

/// The instruction bits that differ between `a` and `b`, as inclusive ranges `[hi:lo]`.
pub fn diff_ranges(a: &[u64; 2], b: &[u64; 2]) -> Vec<(u8, u8)> {
    let mut out: Vec<(u8, u8)> = Vec::new();
    for bit in 0..128u8 {
        let x = (a[(bit / 64) as usize] ^ b[(bit / 64) as usize]) >> (bit % 64) & 1;
        if x == 1 {
            match out.last_mut() {
                Some((_, hi)) if *hi + 1 == bit => *hi = bit,
                _ => out.push((bit, bit)),
            }
        }
    }
    out
}

/// Formats bit ranges as `[23:16], [75]`.
pub fn fmt_ranges(r: &[(u8, u8)]) -> String {
    r.iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                format!("[{lo}]")
            } else {
                format!("[{hi}:{lo}]")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one bit at a time (what `get_bits`/`set_bits` must equal).
    fn get_bitwise(w: &[u64; 2], pos: u8, width: u8) -> u64 {
        let mut v = 0u64;
        for i in 0..u32::from(width).min(64) {
            let b = u32::from(pos) + i;
            if b < 128 {
                v |= ((w[(b / 64) as usize] >> (b % 64)) & 1) << i;
            }
        }
        v
    }

    fn set_bitwise(w: &mut [u64; 2], pos: u8, width: u8, v: u64) {
        for i in 0..u32::from(width) {
            let b = u32::from(pos) + i;
            if b >= 128 {
                break;
            }
            let m = 1u64 << (b % 64);
            if i < 64 && (v >> i) & 1 == 1 {
                w[(b / 64) as usize] |= m;
            } else {
                w[(b / 64) as usize] &= !m;
            }
        }
    }

    #[test]
    fn word_level_bits_equal_the_bitwise_definition() {
        let words = [
            [0u64, 0],
            [u64::MAX, u64::MAX],
            [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210],
        ];
        let values = [0u64, u64::MAX, 0x5555_5555_5555_5555, 0x8000_0000_0000_0001];
        for pos in 0..128u8 {
            for width in 0..=80u8 {
                for w0 in words {
                    if width <= 64 {
                        assert_eq!(get_bits(&w0, pos, width), get_bitwise(&w0, pos, width));
                    }
                    for v in values {
                        let (mut a, mut b) = (w0, w0);
                        set_bits(&mut a, pos, width, v);
                        set_bitwise(&mut b, pos, width, v);
                        assert_eq!(a, b, "pos {pos} width {width} v {v:#x}");
                    }
                }
            }
        }
    }

    #[test]
    fn fields_round_trip() {
        let f = Field::split((16, 8), (34, 48));
        let mut w = [0u64; 2];
        f.set(&mut w, 0x0123_4567_89ab_cdef & f.max());
        assert_eq!(f.get(&w), 0x0123_4567_89ab_cdef & f.max());
        assert_eq!(w[0] & 0xffff, 0);
        let g = Field::new(60, 8);
        let mut w = [0u64; 2];
        g.set(&mut w, 0xa5);
        assert_eq!(w, [0x5 << 60, 0xa]);
        assert_eq!(g.get(&w), 0xa5);
        assert_eq!(g.get_signed(&w), -0x5b);
    }

    #[test]
    fn diff() {
        let a = [0u64, 0];
        let b = [0xff0000, 1 << 11];
        assert_eq!(diff_ranges(&a, &b), vec![(16, 23), (75, 75)]);
        assert_eq!(fmt_ranges(&diff_ranges(&a, &b)), "[23:16], [75]");
    }
}
