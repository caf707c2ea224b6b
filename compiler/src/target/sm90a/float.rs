//! Floating-point immediates: nvdisasm's decimal format and exact conversions.
//!
//! nvdisasm prints a float immediate (f32, the high half of an f64, f16, bf16) by converting it
//! to a double and then (learned from `tests/sass-probes/floatfmt.txt`):
//!
//! * `+INF`/`-INF` (followed by a space), `+QNAN`/`-QNAN`/`+SNAN`/`-SNAN` (the payload is not
//!   shown), `0` for +0 and `-0.0` for -0;
//! * `%.20e` when |v| >= 1e9 (`1.00000000000000000000e+09`);
//! * `%.20g` otherwise (`0.5`, `16777216`, `1.175494350822287508e-38`).
//!
//! glibc's `printf` rounds the exact binary value half-to-even; so does [`exact_digits`].

use super::model::FloatFmt;

/// Decimal digits of a positive finite double: `(digits, exp)` with value = digits × 10^exp.
fn exact_digits(x: f64) -> (Vec<u8>, i32) {
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32;
    let f = bits & ((1u64 << 52) - 1);
    let (m, k) = if e == 0 {
        (f, -1074)
    } else {
        (f | (1u64 << 52), e - 1075)
    };
    // Big number in base 1e9, little-endian limbs.
    const BASE: u64 = 1_000_000_000;
    let mut limbs: Vec<u64> = vec![m % BASE, (m / BASE) % BASE, m / BASE / BASE];
    let mul = |limbs: &mut Vec<u64>, by: u64| {
        let mut carry = 0u64;
        for l in limbs.iter_mut() {
            let v = *l * by + carry;
            *l = v % BASE;
            carry = v / BASE;
        }
        while carry > 0 {
            limbs.push(carry % BASE);
            carry /= BASE;
        }
    };
    let exp10 = if k >= 0 {
        let mut k = k;
        while k >= 29 {
            mul(&mut limbs, 1 << 29);
            k -= 29;
        }
        mul(&mut limbs, 1 << k);
        0
    } else {
        let mut n = -k;
        while n >= 12 {
            mul(&mut limbs, 244_140_625); // 5^12
            n -= 12;
        }
        mul(&mut limbs, 5u64.pow(n as u32));
        k
    };
    while limbs.len() > 1 && *limbs.last().unwrap_or(&1) == 0 {
        limbs.pop();
    }
    let mut s = String::new();
    for (i, l) in limbs.iter().rev().enumerate() {
        if i == 0 {
            s.push_str(&l.to_string());
        } else {
            s.push_str(&format!("{l:09}"));
        }
    }
    (s.bytes().map(|b| b - b'0').collect(), exp10)
}

/// Rounds to `p` significant digits (half to even on the exact value). Returns the digits
/// (exactly `p`, zero-padded) and the decimal exponent of the first digit.
fn round_sig(x: f64, p: usize) -> (Vec<u8>, i32) {
    let (mut d, e) = exact_digits(x);
    // Leading digit's exponent.
    let mut lead = d.len() as i32 - 1 + e;
    if d.len() > p {
        let rest = &d[p..];
        let up = match rest[0].cmp(&5) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => rest[1..].iter().any(|&x| x != 0) || d[p - 1] % 2 == 1,
        };
        d.truncate(p);
        if up {
            let mut i = p;
            loop {
                if i == 0 {
                    d.insert(0, 1);
                    d.truncate(p);
                    lead += 1;
                    break;
                }
                i -= 1;
                if d[i] == 9 {
                    d[i] = 0;
                } else {
                    d[i] += 1;
                    break;
                }
            }
        }
    }
    while d.len() < p {
        d.push(0);
    }
    (d, lead)
}

fn exp_suffix(e: i32) -> String {
    if e < 0 {
        format!("e-{:02}", -e)
    } else {
        format!("e+{e:02}")
    }
}

/// C's `%.{p-1}e` for a positive finite value.
fn fmt_e(x: f64, p: usize) -> String {
    let (d, lead) = round_sig(x, p);
    let mut s = String::new();
    s.push((b'0' + d[0]) as char);
    if p > 1 {
        s.push('.');
        for &c in &d[1..] {
            s.push((b'0' + c) as char);
        }
    }
    s + &exp_suffix(lead)
}

/// C's `%.{p}g` for a positive finite value.
fn fmt_g(x: f64, p: usize) -> String {
    let (d, lead) = round_sig(x, p);
    let strip = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if lead < -4 || lead >= p as i32 {
        let mut m = String::new();
        m.push((b'0' + d[0]) as char);
        m.push('.');
        for &c in &d[1..] {
            m.push((b'0' + c) as char);
        }
        strip(m) + &exp_suffix(lead)
    } else if lead >= 0 {
        let int_len = lead as usize + 1;
        let mut s: String = d[..int_len].iter().map(|&c| (b'0' + c) as char).collect();
        s.push('.');
        s.extend(d[int_len..].iter().map(|&c| (b'0' + c) as char));
        strip(s)
    } else {
        let mut s = String::from("0.");
        for _ in 0..(-lead - 1) {
            s.push('0');
        }
        s.extend(d.iter().map(|&c| (b'0' + c) as char));
        strip(s)
    }
}

/// The value, sign and class of an immediate's bits.
enum Class {
    Num(f64),
    Zero,
    Inf,
    QNan,
    SNan,
}

fn classify(fmt: FloatFmt, bits: u64) -> (bool, Class) {
    let (sign, exp, man, ebits, mbits) = match fmt {
        FloatFmt::F32 => (bits >> 31 & 1, bits >> 23 & 0xff, bits & 0x7f_ffff, 8, 23),
        FloatFmt::F64Hi => (bits >> 31 & 1, bits >> 20 & 0x7ff, bits & 0xf_ffff, 11, 20),
        FloatFmt::F16 => (bits >> 15 & 1, bits >> 10 & 0x1f, bits & 0x3ff, 5, 10),
        FloatFmt::BF16 => (bits >> 15 & 1, bits >> 7 & 0xff, bits & 0x7f, 8, 7),
    };
    let emax = (1u64 << ebits) - 1;
    let neg = sign == 1;
    if exp == emax {
        if man == 0 {
            return (neg, Class::Inf);
        }
        return (
            neg,
            if man >> (mbits - 1) & 1 == 1 {
                Class::QNan
            } else {
                Class::SNan
            },
        );
    }
    if exp == 0 && man == 0 {
        return (neg, Class::Zero);
    }
    let v = match fmt {
        FloatFmt::F32 => f64::from(f32::from_bits(bits as u32)),
        FloatFmt::F64Hi => f64::from_bits(bits << 32),
        FloatFmt::F16 | FloatFmt::BF16 => {
            let bias = (1i32 << (ebits - 1)) - 1;
            let (m, e) = if exp == 0 {
                (man as f64, 1 - bias - mbits)
            } else {
                ((man | 1 << mbits) as f64, exp as i32 - bias - mbits)
            };
            m * 2f64.powi(e)
        }
    };
    (neg, Class::Num(v.abs()))
}

/// nvdisasm's text for a float immediate.
pub fn fmt_float(fmt: FloatFmt, bits: u64) -> String {
    let (neg, c) = classify(fmt, bits);
    let sign = if neg { "-" } else { "" };
    match c {
        Class::Inf => format!("{}INF ", if neg { "-" } else { "+" }),
        Class::QNan => format!("{}QNAN ", if neg { "-" } else { "+" }),
        Class::SNan => format!("{}SNAN ", if neg { "-" } else { "+" }),
        Class::Zero => if neg { "-0.0 " } else { "0" }.to_string(),
        Class::Num(v) if v >= 1e9 => format!("{sign}{}", fmt_e(v, 21)),
        Class::Num(v) => format!("{sign}{}", fmt_g(v, 20)),
    }
}

/// Text for a float literal that has no exact format (a value from the builder or the parser):
/// nvdisasm's f32 text when the value is an f32, else the shortest decimal.
pub fn fmt_f64(x: f64) -> String {
    match f64_to_f32_exact(x) {
        Some(b) => fmt_float(FloatFmt::F32, u64::from(b)),
        None => format!("{x}"),
    }
}

/// A NaN literal's class: `(negative, quiet)`.
fn nan_kind(x: f64) -> (bool, bool) {
    let b = x.to_bits();
    (b >> 63 == 1, b >> 51 & 1 == 1)
}

/// The f32 bits of a literal printed with 20 significant digits (or an INF/NaN/0 keyword).
/// NaNs become the canonical `0x7fc00000`/`0xffc00000` (quiet) or `0x7f800001` (signaling).
pub fn f64_to_f32_exact(x: f64) -> Option<u32> {
    if x.is_nan() {
        let (neg, quiet) = nan_kind(x);
        let s = if neg { 0x8000_0000 } else { 0 };
        return Some(s | if quiet { 0x7fc0_0000 } else { 0x7f80_0001 });
    }
    if x.is_infinite() || x == 0.0 {
        return Some((x as f32).to_bits());
    }
    let y = x as f32;
    if !y.is_finite() {
        return None;
    }
    let err = (f64::from(y) - x).abs();
    (err <= (x.abs() * 1e-13).max(1e-70)).then_some(y.to_bits())
}

/// The high 32 bits of a double whose low 32 bits are zero.
pub fn f64hi_exact(x: f64) -> Option<u32> {
    if x.is_nan() {
        let (neg, quiet) = nan_kind(x);
        let s = if neg { 0x8000_0000 } else { 0 };
        return Some(s | if quiet { 0x7ff8_0000 } else { 0x7ff0_0001 });
    }
    let b = x.to_bits();
    (b & 0xffff_ffff == 0).then_some((b >> 32) as u32)
}

/// The f16 bits of a literal (exactly representable up to the printed precision).
pub fn f64_to_f16_exact(x: f64) -> Option<u16> {
    if x.is_nan() {
        let (neg, quiet) = nan_kind(x);
        let s = if neg { 0x8000 } else { 0 };
        return Some(s | if quiet { 0x7e00 } else { 0x7c01 });
    }
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a.is_infinite() {
        return Some(sign | 0x7c00);
    }
    if a == 0.0 {
        return Some(sign);
    }
    // Search the nearest half by its exponent.
    for bits in 1u16..0x7c00 {
        let v = match classify(FloatFmt::F16, u64::from(bits)).1 {
            Class::Num(v) => v,
            _ => continue,
        };
        if (v - a).abs() <= (a * 1e-13).max(1e-70) {
            return Some(sign | bits);
        }
        if v > a * 1.01 {
            break;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f32) -> String {
        fmt_float(FloatFmt::F32, u64::from(x.to_bits()))
    }

    #[test]
    fn formats_like_nvdisasm() {
        // Expected texts are nvdisasm 13.2.51 output (tests/sass-probes/floatfmt.txt).
        assert_eq!(f(1.0), "1");
        assert_eq!(f(16777216.0), "16777216");
        assert_eq!(f(0.1), "0.10000000149011611938");
        assert_eq!(f(1e-4), "9.9999997473787516356e-05");
        assert_eq!(f(1e-3), "0.0010000000474974513054");
        assert_eq!(f(1e9), "1.00000000000000000000e+09");
        assert_eq!(f(999999936.0), "999999936");
        assert_eq!(f(-0.0), "-0.0 ");
        assert_eq!(f(0.0), "0");
        assert_eq!(f(f32::from_bits(0x0080_0000)), "1.175494350822287508e-38");
        assert_eq!(f(f32::from_bits(1)), "1.4012984643248170709e-45");
        assert_eq!(f(3.4028235e38), "3.40282346638528859812e+38");
        assert_eq!(f(f32::INFINITY), "+INF ");
        assert_eq!(fmt_float(FloatFmt::F32, 0xffc0_0000), "-QNAN ");
        assert_eq!(fmt_float(FloatFmt::F32, 0x7f80_0001), "+SNAN ");
        // 1 + 2^-20 needs round-half-even at the 20th digit.
        assert_eq!(
            fmt_float(FloatFmt::F64Hi, 0x3ff0_0001),
            "1.0000009536743164062"
        );
        assert_eq!(fmt_float(FloatFmt::F16, 0x0400), "6.103515625e-05");
        assert_eq!(fmt_float(FloatFmt::F16, 0xc200), "-3");
    }

    #[test]
    fn parses_back() {
        let p = |s: &str| s.parse::<f64>().unwrap();
        assert_eq!(
            f64_to_f32_exact(p("0.10000000149011611938")),
            Some(0x3dcc_cccd)
        );
        assert_eq!(
            f64_to_f32_exact(p("1.175494350822287508e-38")),
            Some(0x0080_0000)
        );
        assert_eq!(f64_to_f32_exact(0.1), None);
        assert_eq!(f64_to_f32_exact(0.1000001), None);
        assert_eq!(f64hi_exact(2.0), Some(0x4000_0000));
        assert_eq!(f64hi_exact(0.1), None);
        assert_eq!(f64_to_f16_exact(6.103515625e-05), Some(0x0400));
        assert_eq!(f64_to_f16_exact(-3.0), Some(0xc200));
    }
}
