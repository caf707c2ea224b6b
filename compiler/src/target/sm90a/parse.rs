//! Parsing nvdisasm/cuobjdump SASS text into [`Instr`]s, and reading `cuobjdump -sass`
//! listings.

use super::model::*;
use super::print::{SR_NAMES, sreg_number};
use super::tables::tables;
use std::fmt;

/// A syntax error in SASS text; the message names the opcode, modifier or operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

fn err<T>(s: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(s.into()))
}

/// Parses one instruction (`@!P0 IADD3 R1, R2, -R3, RZ ;`). The control bits are the default
/// ones (the text does not show them); `.reuse` flags are kept on the operands.
pub fn parse_instr(text: &str) -> Result<Instr, ParseError> {
    let mut s = text.trim();
    if let Some(x) = s.strip_suffix(';') {
        s = x.trim_end();
    }
    if s.is_empty() {
        return err("empty instruction");
    }
    let mut guard = Guard::ALWAYS;
    if let Some(rest) = s.strip_prefix('@') {
        let (g, r) = split_ws(rest);
        let (neg, name) = match g.strip_prefix('!') {
            Some(n) => (true, n),
            None => (false, g),
        };
        let pred = match parse_reg(name) {
            Some(r) if matches!(r.file, RegFile::Pred | RegFile::UPred) => r,
            _ => return err(format!("bad guard predicate `@{g}`")),
        };
        guard = Guard { pred, neg };
        s = r.trim_start();
    }
    let (op, rest) = split_ws(s);
    let t = tables();
    let mut toks = op.split('.');
    let mn = toks.next().unwrap_or("");
    let mnemonic = match t.intern(mn).filter(|m| !t.by_name(m).is_empty()) {
        Some(m) => m,
        None => return err(format!("unknown opcode `{mn}`")),
    };
    let mut mods = Vec::new();
    for m in toks {
        match t.intern(m) {
            Some(x) => mods.push(x),
            None => return err(format!("`{op}`: unknown modifier `.{m}`")),
        }
    }
    let mut operands = Vec::new();
    let rest = rest.trim();
    if !rest.is_empty() {
        for (k, part) in split_top(rest, ',').into_iter().enumerate() {
            let o = parse_operand(part.trim()).map_err(|e| {
                ParseError(format!("`{op}`: operand {} `{}`: {e}", k + 1, part.trim()))
            })?;
            operands.push(o);
        }
    }
    Ok(Instr {
        addr: 0,
        guard,
        mnemonic,
        mods,
        operands,
        ctrl: Ctrl::default(),
    })
}

fn split_ws(s: &str) -> (&str, &str) {
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// Splits at `sep` outside brackets and braces.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '{' | '(' => depth += 1,
            ']' | '}' | ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// `R5`, `RZ`, `UR4`, `URZ`, `P0`, `PT`, `UP1`, `UPT`, `B3`.
pub fn parse_reg(s: &str) -> Option<Reg> {
    let num = |d: &str, max: u32| -> Option<u8> {
        if d.is_empty()
            || !d.bytes().all(|b| b.is_ascii_digit())
            || (d.len() > 1 && d.starts_with('0'))
        {
            return None;
        }
        d.parse::<u32>().ok().filter(|n| *n <= max).map(|n| n as u8)
    };
    match s {
        "RZ" => return Some(RZ),
        "URZ" => return Some(URZ),
        "PT" => return Some(PT),
        "UPT" => return Some(UPT),
        _ => {}
    }
    if let Some(d) = s.strip_prefix("UR") {
        return num(d, 62).map(ur);
    }
    if let Some(d) = s.strip_prefix("UP") {
        return num(d, 6).map(up);
    }
    if let Some(d) = s.strip_prefix('R') {
        return num(d, 254).map(r);
    }
    if let Some(d) = s.strip_prefix('P') {
        return num(d, 6).map(p);
    }
    if let Some(d) = s.strip_prefix('B') {
        return num(d, 15).map(b);
    }
    None
}

/// A hex integer (`0x1f`, `-0x80`).
fn parse_hex(s: &str) -> Option<i64> {
    let (neg, d) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let h = d.strip_prefix("0x")?;
    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let v = u64::from_str_radix(h, 16).ok()?;
    if neg {
        if v > 1 << 63 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        Some(v as i64)
    }
}

/// A decimal float literal or `+INF`, `-QNAN`, … (nvdisasm's float syntax).
fn parse_float(s: &str) -> Option<f64> {
    let (neg, d) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = match d {
        "INF" => f64::INFINITY,
        "QNAN" => f64::NAN,
        "SNAN" => f64::from_bits(0x7ff0_0000_0000_0001),
        _ => {
            let ok = !d.is_empty()
                && d.as_bytes()[0].is_ascii_digit()
                && d.bytes().all(|b| {
                    b.is_ascii_digit() || b == b'.' || b == b'e' || b == b'+' || b == b'-'
                });
            if !ok {
                return None;
            }
            d.parse::<f64>().ok()?
        }
    };
    Some(if neg {
        f64::from_bits(v.to_bits() ^ (1 << 63))
    } else {
        v
    })
}

fn intern_sfx(s: &str) -> Result<&'static str, String> {
    tables()
        .intern(s)
        .ok_or_else(|| format!("unknown suffix `.{s}`"))
}

/// A register with an optional suffix inside an address (`R2.64`, `RZ.U32`).
fn parse_mem_reg(s: &str) -> Result<MemTerm, String> {
    let (name, sfx) = match s.split_once('.') {
        Some((n, x)) => (n, Some(intern_sfx(x)?)),
        None => (s, None),
    };
    match parse_reg(name) {
        Some(r) if matches!(r.file, RegFile::Gpr | RegFile::Ugpr) => Ok(MemTerm::Reg(r, sfx)),
        _ => Err(format!("bad address term `{s}`")),
    }
}

fn parse_terms(inner: &str) -> Result<Vec<MemTerm>, String> {
    let mut terms = Vec::new();
    for part in inner.split('+') {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!("empty term in `[{inner}]`"));
        }
        match parse_hex(part) {
            Some(v) => terms.push(MemTerm::Imm(v)),
            None => terms.push(parse_mem_reg(part)?),
        }
    }
    Ok(terms)
}

/// `[...]` at the start of `s`: returns the inside and the rest.
fn bracket(s: &str) -> Result<(&str, &str), String> {
    let body = s.strip_prefix('[').ok_or("expected `[`")?;
    let end = body.find(']').ok_or("missing `]`")?;
    Ok((&body[..end], &body[end + 1..]))
}

/// Parses one operand.
pub fn parse_operand(s: &str) -> Result<Operand, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty operand".into());
    }
    // `R2 0x0`: a register and a target.
    if let Some((a, b)) = s.split_once(char::is_whitespace) {
        let reg = parse_reg(a).ok_or_else(|| format!("unexpected text `{s}`"))?;
        let t = parse_hex(b.trim()).ok_or_else(|| format!("unexpected text `{s}`"))?;
        return Ok(Operand::new(OperandKind::RegTarget(reg, t)));
    }
    if let Some(v) = parse_hex(s) {
        return Ok(imm(v));
    }
    if let Some(v) = parse_float(s) {
        return Ok(fimm(v));
    }
    let mut t = s;
    let mut neg = false;
    let mut not = false;
    let mut abs = false;
    if let Some(x) = t.strip_prefix('-') {
        neg = true;
        t = x;
    }
    if let Some(x) = t.strip_prefix('~').or_else(|| t.strip_prefix('!')) {
        not = true;
        t = x;
    }
    let (core, rest): (&str, &str);
    if let Some(x) = t.strip_prefix('|') {
        abs = true;
        let end = x.find('|').ok_or("missing closing `|`")?;
        core = &x[..end];
        rest = &x[end + 1..];
    } else {
        let end = core_end(t)?;
        core = &t[..end];
        rest = &t[end..];
    }
    let kind = parse_core(core)?;
    let mut o = Operand::new(kind);
    o.neg = neg;
    o.not = not;
    o.abs = abs;
    if !rest.is_empty() {
        let sfx = rest
            .strip_prefix('.')
            .ok_or_else(|| format!("unexpected `{rest}`"))?;
        for x in sfx.split('.') {
            if x == "reuse" {
                o.reuse = true;
            } else {
                o.suffix.push(intern_sfx(x)?);
            }
        }
    }
    Ok(o)
}

/// Where the core of an operand ends (its suffixes start).
fn core_end(t: &str) -> Result<usize, String> {
    // Bracketed cores: c[..][..], desc[..][..], gdesc[..], [..], {..}.
    let closing = |s: &str, start: usize, groups: usize| -> Result<usize, String> {
        let mut i = start;
        for _ in 0..groups {
            let rel = s[i..].find(']').ok_or("missing `]`")?;
            i += rel + 1;
        }
        Ok(i)
    };
    if t.starts_with("c[") || t.starts_with("cx[") {
        let st = t.find('[').unwrap_or(0);
        return closing(t, st, 2);
    }
    if t.starts_with("desc[") {
        return closing(t, 0, 2);
    }
    if t.starts_with("gdesc[") || t.starts_with('[') {
        return closing(t, 0, 1);
    }
    if t.starts_with('{') {
        return Ok(t.find('}').ok_or("missing `}`")? + 1);
    }
    // Special registers: the longest name that is a prefix followed by `.`/end.
    let mut best = 0;
    for n in SR_NAMES.iter() {
        if t.starts_with(n) && n.len() > best {
            let after = &t[n.len()..];
            if after.is_empty() || after.starts_with('.') {
                best = n.len();
            }
        }
    }
    if best > 0 {
        return Ok(best);
    }
    Ok(t.find('.').unwrap_or(t.len()))
}

fn parse_core(c: &str) -> Result<OperandKind, String> {
    if let Some(r) = parse_reg(c) {
        return Ok(OperandKind::Reg(r));
    }
    if let Some(n) = sreg_number(c) {
        return Ok(OperandKind::SReg(n));
    }
    if let Some(x) = c.strip_prefix('c')
        && x.starts_with('[')
    {
        {
            let (bank, rest) = bracket(x)?;
            let (inner, tail) = bracket(rest)?;
            if !tail.is_empty() {
                return Err(format!("unexpected `{tail}`"));
            }
            let bank = parse_hex(bank)
                .filter(|b| *b >= 0)
                .ok_or_else(|| format!("bad constant bank `{bank}`"))?
                as u32;
            let mut base = None;
            let mut offset = 0;
            for t in parse_terms(inner)? {
                match t {
                    MemTerm::Reg(r, None) if r.file == RegFile::Gpr && base.is_none() => {
                        base = Some(r)
                    }
                    MemTerm::Imm(v) => offset = v,
                    _ => return Err(format!("bad constant-bank address `{inner}`")),
                }
            }
            return Ok(OperandKind::CBank(CBank { bank, base, offset }));
        }
    }
    if let Some(x) = c.strip_prefix("desc") {
        let (d, rest) = bracket(x)?;
        let desc = match parse_reg(d) {
            Some(r) if r.file == RegFile::Ugpr => r,
            _ => return Err(format!("bad descriptor `{d}`")),
        };
        let (inner, tail) = bracket(rest)?;
        if !tail.is_empty() {
            return Err(format!("unexpected `{tail}`"));
        }
        return Ok(OperandKind::Mem(Mem {
            prefix: MemPrefix::Desc(desc),
            terms: parse_terms(inner)?,
        }));
    }
    if let Some(x) = c.strip_prefix("gdesc") {
        let (inner, tail) = bracket(x)?;
        if !tail.is_empty() {
            return Err(format!("unexpected `{tail}`"));
        }
        return Ok(OperandKind::Mem(Mem {
            prefix: MemPrefix::GDesc,
            terms: parse_terms(inner)?,
        }));
    }
    if c.starts_with('[') {
        let (inner, tail) = bracket(c)?;
        if !tail.is_empty() {
            return Err(format!("unexpected `{tail}`"));
        }
        return Ok(OperandKind::Mem(Mem {
            prefix: MemPrefix::None,
            terms: parse_terms(inner)?,
        }));
    }
    if let Some(x) = c.strip_prefix('{') {
        let body = x.strip_suffix('}').ok_or("missing `}`")?;
        let mut m = 0u8;
        if !body.trim().is_empty() {
            for d in body.split(',') {
                let n: u8 = d
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n < 6)
                    .ok_or_else(|| format!("bad scoreboard `{d}`"))?;
                m |= 1 << n;
            }
        }
        return Ok(OperandKind::SbSet(m));
    }
    match tables().intern(c) {
        Some(s) if !c.is_empty() => Ok(OperandKind::Sym(s)),
        _ => Err(format!("unknown operand `{c}`")),
    }
}

/// One instruction of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedInstr {
    /// The function (`Function : name`), empty before the first header.
    pub function: String,
    /// The address printed before the instruction.
    pub addr: u64,
    /// The instruction text without the final `;`.
    pub text: String,
    /// The two words, when the listing has them.
    pub words: Option<[u64; 2]>,
    /// 1-based line number of the instruction.
    pub line: usize,
}

/// A `/* 0x0123456789abcdef */` comment: the word.
fn word_comment(s: &str) -> Option<u64> {
    let s = s.trim();
    let body = s.strip_prefix("/*")?.strip_suffix("*/")?.trim();
    let h = body.strip_prefix("0x")?;
    if h.len() != 16 {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

/// Reads a `cuobjdump -sass` (or `nvdisasm -hex`) listing: instruction lines
/// `/*0040*/  TEXT ;  /* 0xLOW */` followed by a line `/* 0xHIGH */`. Header lines
/// (`code for sm_90a`, `Function : name`, `.headerflags`, …) are skipped.
pub fn parse_listing(src: &str) -> Vec<ListedInstr> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    let mut func = String::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(k) = l.find("Function :") {
            func = l[k + "Function :".len()..].trim().to_string();
            i += 1;
            continue;
        }
        let t = l.trim_start();
        let parsed = (|| {
            let rest = t.strip_prefix("/*")?;
            let end = rest.find("*/")?;
            let a = &rest[..end];
            if a.is_empty() || !a.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let addr = u64::from_str_radix(a, 16).ok()?;
            let body = &rest[end + 2..];
            let (text, tail) = match body.find(';') {
                Some(k) => (&body[..k], &body[k + 1..]),
                None => match body.find("/*") {
                    Some(k) => (&body[..k], &body[k..]),
                    None => (body, ""),
                },
            };
            Some((addr, text.trim().to_string(), word_comment(tail)))
        })();
        if let Some((addr, text, lo)) = parsed {
            let hi = lines.get(i + 1).and_then(|n| word_comment(n));
            let words = match (lo, hi) {
                (Some(lo), Some(hi)) => Some([lo, hi]),
                _ => None,
            };
            out.push(ListedInstr {
                function: func.clone(),
                addr,
                text,
                words,
                line: i + 1,
            });
            i += if hi.is_some() { 2 } else { 1 };
            continue;
        }
        i += 1;
    }
    out
}

/// Parses a listed instruction into an [`Instr`] at its address, with the control bits of the
/// listed high word when there is one.
pub fn listed_instr(l: &ListedInstr) -> Result<Instr, ParseError> {
    let mut i = parse_instr(&l.text)?;
    i.addr = l.addr;
    if let Some(w) = l.words {
        i.ctrl = Ctrl::from_hi(w[1]);
    }
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_listing() {
        let src = "\n\tcode for sm_90a\n\t\tFunction : k\n\t.headerflags\t@\"EF_CUDA_SM90\"\n        /*0000*/                   LDC R1, c[0x0][0x28] ;                                /* 0x00000a00ff017b82 */\n                                                                                         /* 0x000ff00000000800 */\n        /*0010*/              @!P0 BRA 0x90 ;        /* 0x0000000000148947 */\n                                                     /* 0x000fea0003800000 */\n";
        let l = parse_listing(src);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].function, "k");
        assert_eq!(l[0].text, "LDC R1, c[0x0][0x28]");
        assert_eq!(l[0].words, Some([0x00000a00ff017b82, 0x000ff00000000800]));
        assert_eq!(l[1].addr, 0x10);
        assert_eq!(l[1].text, "@!P0 BRA 0x90");
    }

    #[test]
    fn operands() {
        let o = parse_operand("-|R4|.reuse").unwrap();
        assert!(o.neg && o.abs && o.reuse);
        assert_eq!(o.as_reg(), Some(r(4)));
        assert_eq!(
            parse_operand("-0x80").unwrap().kind,
            OperandKind::Int(-0x80)
        );
        assert_eq!(
            parse_operand("SR_TID.X").unwrap().kind,
            OperandKind::SReg(0x21)
        );
        assert_eq!(
            parse_operand("SR_CgaCtaId").unwrap().kind,
            OperandKind::SReg(0x88)
        );
        assert_eq!(
            parse_operand("R2 0x0").unwrap().kind,
            OperandKind::RegTarget(r(2), 0)
        );
        assert!(parse_operand("R300").is_err());
        assert!(parse_operand("c[0x0][").is_err());
        assert_eq!(
            parse_operand("{5,4,3,2,1,0}").unwrap().kind,
            OperandKind::SbSet(0x3f)
        );
        match parse_operand("desc[UR4][R2.64+-0x8]").unwrap().kind {
            OperandKind::Mem(m) => {
                assert_eq!(m.prefix, MemPrefix::Desc(ur(4)));
                assert_eq!(
                    m.terms,
                    vec![MemTerm::Reg(r(2), Some("64")), MemTerm::Imm(-8)]
                );
            }
            k => panic!("{k:?}"),
        }
    }
}
