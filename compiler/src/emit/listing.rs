//! Cubins from SASS listings: the part of `ptxc asm IN.sass -o OUT.cubin` that does not need the
//! instruction encoder.
//!
//! A listing in `cuobjdump -sass` form carries each function's name and instruction words but
//! not what the driver needs besides (parameters, register count, shared memory, cluster
//! directives). Those come from **header comments** the listing may carry; cuobjdump and
//! nvdisasm ignore them. A header line is `//` followed by a directive; directives after
//! `// .kernel NAME` describe that kernel (the listing's `Function : NAME` block):
//!
//! ```text
//! // .kernel simple
//! // .param u64                 scalars: u8 u16 u32 u64 s8 … f32 f64 b8 b16 b32 b64
//! // .param u32
//! // .param b8[256] align 16    a byte array with its alignment
//! // .param ptr global align 16 a .ptr parameter (global|shared|const|local|generic)
//! // .regs 10                   registers per thread (default: highest R register + 3)
//! // .frame 0                   local-memory frame bytes
//! // .shared 1024 align 16      user shared memory (ptxas adds the reserved 1 KiB window)
//! // .maxntid 128,1,1
//! // .reqntid 128,1,1
//! // .maxnreg 64
//! // .reqnctapercluster 2,1,1
//! // .maxclusterrank 8
//! // .explicitcluster
//! // .barriers 1                named barriers used
//! // .device                    a device function instead of a kernel
//! ```
//!
//! Functions without a `.kernel` header are kernels without parameters. EXIT offsets come from
//! the code (EXIT has opcode 0x94d in bits 11:0), and the unwind entry is ptxas's usual one for a
//! kernel without a frame. [`parse_code`] takes the instruction words from a listing (the hex
//! comments `/* 0x… */`, low word first); the SASS encoder will supply them instead.

use super::model::*;
use runtime_abi::param::{ParamSpec, Pointee, PtrSpace};
use std::fmt;

/// A listing that cannot be turned into a cubin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListingError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ListingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, self.message)
        } else {
            f.write_str(&self.message)
        }
    }
}

impl std::error::Error for ListingError {}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, ListingError> {
    Err(ListingError {
        line,
        message: message.into(),
    })
}

/// What a header says about one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionHeader {
    pub name: String,
    pub kind: FunctionKind,
    pub params: Vec<ParamSpec>,
    pub registers: Option<u32>,
    pub frame_size: u32,
    /// User shared bytes and alignment.
    pub shared: Option<(u64, u64)>,
    pub max_threads: Option<[u32; 3]>,
    pub reqntid: Option<[u32; 3]>,
    pub maxnreg: Option<u16>,
    pub cta_per_cluster: Option<[u32; 3]>,
    pub max_cluster_rank: Option<u32>,
    pub explicit_cluster: bool,
    pub barriers: Option<u8>,
}

impl FunctionHeader {
    pub fn kernel(name: &str) -> FunctionHeader {
        FunctionHeader {
            name: name.into(),
            kind: FunctionKind::Kernel,
            params: Vec::new(),
            registers: None,
            frame_size: 0,
            shared: None,
            max_threads: None,
            reqntid: None,
            maxnreg: None,
            cta_per_cluster: None,
            max_cluster_rank: None,
            explicit_cluster: false,
            barriers: None,
        }
    }
}

/// The header of a listing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub functions: Vec<FunctionHeader>,
}

fn parse_dims(line: usize, s: &str) -> Result<[u32; 3], ListingError> {
    let v: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .collect();
    if v.is_empty() || v.len() > 3 {
        return err(line, format!("expected 1 to 3 dimensions, got {s:?}"));
    }
    let mut d = [1u32; 3];
    for (i, x) in v.iter().enumerate() {
        d[i] = parse_num(line, x)? as u32;
    }
    Ok(d)
}

fn parse_num(line: usize, s: &str) -> Result<u64, ListingError> {
    let s = s.trim();
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.or_else(|_| err(line, format!("not a number: {s:?}")))
}

fn parse_param(line: usize, words: &[&str]) -> Result<ParamSpec, ListingError> {
    let Some((&ty, rest)) = words.split_first() else {
        return err(line, ".param needs a type");
    };
    let align_of = |rest: &[&str]| -> Result<Option<u32>, ListingError> {
        match rest {
            [] => Ok(None),
            ["align", a] => Ok(Some(parse_num(line, a)? as u32)),
            _ => err(line, format!("unexpected {:?}", rest.join(" "))),
        }
    };
    if ty == "ptr" {
        let (space, rest) = match rest.split_first() {
            Some((&"global", r)) => (PtrSpace::Global, r),
            Some((&"shared", r)) => (PtrSpace::Shared, r),
            Some((&"const", r)) => (PtrSpace::Const, r),
            Some((&"local", r)) => (PtrSpace::Local, r),
            Some((&"generic", r)) => (PtrSpace::Generic, r),
            _ => (PtrSpace::Generic, rest),
        };
        return Ok(ParamSpec {
            pointee: Pointee::ptr(space, align_of(rest)?),
            ..ParamSpec::scalar(8)
        });
    }
    if let Some((base, n)) = ty.split_once('[') {
        let n = parse_num(line, n.trim_end_matches(']'))?;
        let elem = scalar_size(base).ok_or(ListingError {
            line,
            message: format!("unknown element type {base:?}"),
        })?;
        let align = align_of(rest)?.unwrap_or(elem);
        return Ok(ParamSpec::bytes(elem * n as u32, align));
    }
    let size = scalar_size(ty).ok_or(ListingError {
        line,
        message: format!("unknown parameter type {ty:?}"),
    })?;
    if !rest.is_empty() {
        return Ok(ParamSpec::bytes(size, align_of(rest)?.unwrap_or(size)));
    }
    Ok(ParamSpec::scalar(size))
}

fn scalar_size(t: &str) -> Option<u32> {
    let t = t.trim_start_matches('.');
    let bits: u32 = t.get(1..)?.parse().ok()?;
    matches!(t.as_bytes().first()?, b'u' | b's' | b'b' | b'f')
        .then_some(bits / 8)
        .filter(|&b| matches!(b, 1 | 2 | 4 | 8))
}

/// Parses the header comments of a listing.
pub fn parse_header(text: &str) -> Result<Header, ListingError> {
    let mut h = Header::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let Some(rest) = raw.trim().strip_prefix("//") else {
            continue;
        };
        let rest = rest.trim();
        if !rest.starts_with('.') {
            continue;
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        let (dir, args) = (words[0], &words[1..]);
        let arg = args.join(" ");
        if dir == ".kernel" {
            let [name] = args else {
                return err(line, ".kernel takes one name");
            };
            h.functions.push(FunctionHeader::kernel(name));
            continue;
        }
        let Some(f) = h.functions.last_mut() else {
            return err(line, format!("{dir} before any .kernel"));
        };
        match dir {
            ".device" => f.kind = FunctionKind::Device,
            ".param" => f.params.push(parse_param(line, args)?),
            ".regs" => f.registers = Some(parse_num(line, &arg)? as u32),
            ".frame" => f.frame_size = parse_num(line, &arg)? as u32,
            ".shared" => {
                let (n, align) = match args {
                    [n] => (parse_num(line, n)?, 16),
                    [n, "align", a] => (parse_num(line, n)?, parse_num(line, a)?),
                    _ => return err(line, ".shared BYTES [align A]"),
                };
                f.shared = Some((n, align));
            }
            ".maxntid" => f.max_threads = Some(parse_dims(line, &arg)?),
            ".reqntid" => f.reqntid = Some(parse_dims(line, &arg)?),
            ".maxnreg" => f.maxnreg = Some(parse_num(line, &arg)? as u16),
            ".reqnctapercluster" => f.cta_per_cluster = Some(parse_dims(line, &arg)?),
            ".maxclusterrank" => f.max_cluster_rank = Some(parse_num(line, &arg)? as u32),
            ".explicitcluster" => f.explicit_cluster = true,
            ".barriers" => f.barriers = Some(parse_num(line, &arg)? as u8),
            _ => return err(line, format!("unknown header directive {dir}")),
        }
    }
    Ok(h)
}

/// One function's code from a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedFunction {
    pub name: String,
    /// Instruction words, 16 bytes each (ptxas's trailing padding removed).
    pub code: Vec<u8>,
    /// The highest `R<n>` register the instruction text names, if any.
    pub max_register: Option<u32>,
}

/// Takes every function's instruction words from a `cuobjdump -sass` / `nvdisasm -hex` listing.
pub fn parse_code(text: &str) -> Result<Vec<ListedFunction>, ListingError> {
    let mut out: Vec<ListedFunction> = Vec::new();
    let mut words: Vec<u64> = Vec::new();
    let mut first_word_line = 0;
    let finish = |out: &mut Vec<ListedFunction>, words: &mut Vec<u64>, line: usize| {
        if let Some(f) = out.last_mut() {
            if !words.len().is_multiple_of(2) {
                return err(line, format!("{}: odd number of instruction words", f.name));
            }
            let mut code = Vec::with_capacity(words.len() * 8);
            for w in words.iter() {
                code.extend_from_slice(&w.to_le_bytes());
            }
            f.code = super::read::strip_padding(&code).unwrap_or(code);
        }
        words.clear();
        Ok(())
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if let Some(name) = t.strip_prefix("Function :") {
            finish(&mut out, &mut words, first_word_line)?;
            out.push(ListedFunction {
                name: name.trim().to_string(),
                code: Vec::new(),
                max_register: None,
            });
            continue;
        }
        // Instruction text: note registers.
        if let Some(f) = out.last_mut()
            && let Some(p) = t.find("*/")
            && t.starts_with("/*")
        {
            let body = &t[p + 2..];
            let body = body.split("/*").next().unwrap_or("");
            for tok in body.split(|c: char| !c.is_ascii_alphanumeric()) {
                if let Some(n) = tok.strip_prefix('R').and_then(|n| n.parse::<u32>().ok())
                    && n < 255
                {
                    f.max_register = Some(f.max_register.map_or(n, |m| m.max(n)));
                }
            }
        }
        let mut rest = t;
        while let Some(p) = rest.find("/* 0x") {
            let hex: String = rest[p + 5..]
                .chars()
                .take_while(|c| c.is_ascii_hexdigit())
                .collect();
            if hex.len() == 16 {
                if out.is_empty() {
                    return err(line, "instruction words before any `Function :` line");
                }
                if words.is_empty() {
                    first_word_line = line;
                }
                words.push(u64::from_str_radix(&hex, 16).expect("16 hex digits"));
            }
            rest = &rest[p + 5 + hex.len()..];
        }
    }
    finish(&mut out, &mut words, first_word_line)?;
    Ok(out)
}

/// Code offsets of the EXIT instructions (opcode 0x94d in bits 11:0 of the low word).
pub fn exit_offsets(code: &[u8]) -> Vec<u32> {
    code.chunks_exact(16)
        .enumerate()
        .filter(|(_, w)| u16::from_le_bytes([w[0], w[1]]) & 0xfff == 0x94d)
        .map(|(i, _)| (i * 16) as u32)
        .collect()
}

/// ptxas's unwind entry for a kernel without a local frame: advance to the last EXIT, one
/// instruction further, `DW_CFA_def_cfa R1, 0` (the most common FDE in the corpora).
pub fn default_unwind(code: &[u8]) -> Unwind {
    let last = exit_offsets(code).last().copied().map(u64::from);
    let ops = match last {
        Some(e) => vec![
            CfaOp::AdvanceLoc4(e),
            CfaOp::AdvanceLoc4(16),
            CfaOp::DefCfa {
                reg: DWARF_R1,
                offset: 0,
            },
        ],
        None => Vec::new(),
    };
    Unwind {
        cie: Cie::standard(),
        ops,
    }
}

/// Builds the cubin model from a header, each function's code, and the relocations left in the
/// code (by function name, offsets relative to the function).
pub fn build(
    header: &Header,
    code: &[ListedFunction],
    relocs: &[(String, Vec<Reloc>)],
) -> Result<Cubin, ListingError> {
    let mut c = Cubin::new();
    for h in &header.functions {
        if !code.iter().any(|f| f.name == h.name) {
            return err(
                0,
                format!(
                    "header describes {} but the listing has no such function",
                    h.name
                ),
            );
        }
    }
    for f in code {
        let h = header
            .functions
            .iter()
            .find(|h| h.name == f.name)
            .cloned()
            .unwrap_or_else(|| FunctionHeader::kernel(&f.name));
        if f.code.is_empty() {
            return err(0, format!("{}: no instructions", f.name));
        }
        let mut func = Function::kernel(&f.name, f.code.clone());
        func.kind = h.kind;
        if h.kind == FunctionKind::Device {
            func.attrs = FunctionAttrs::device();
        }
        func.registers = h
            .registers
            .unwrap_or_else(|| f.max_register.map_or(2, |m| m + 3));
        func.frame_size = h.frame_size;
        func.params = h.params.clone();
        func.attrs.exit_offsets = exit_offsets(&f.code);
        func.attrs.max_threads = h.max_threads;
        func.attrs.reqntid = h.reqntid;
        if let Some(n) = h.maxnreg {
            func.attrs.maxreg_count = Some(n);
        }
        func.attrs.cta_per_cluster = h.cta_per_cluster;
        func.attrs.max_cluster_rank = h.max_cluster_rank;
        func.attrs.explicit_cluster = h.explicit_cluster;
        func.attrs.num_barriers = h.barriers;
        func.shared = h.shared.map(|(n, a)| SharedMem::with_user_bytes(n, a));
        func.unwind = default_unwind(&f.code);
        if let Some((_, rs)) = relocs.iter().find(|(n, _)| *n == f.name) {
            func.relocs = rs.clone();
        }
        c.functions.push(func);
    }
    Ok(c)
}

/// A complete cubin from a listing with header comments, taking the code words from the
/// listing's hex comments.
pub fn cubin_from_listing(text: &str) -> Result<Vec<u8>, ListingError> {
    let header = parse_header(text)?;
    let code = parse_code(text)?;
    if code.is_empty() {
        return err(0, "the listing has no `Function :` block");
    }
    let model = build(&header, &code, &[])?;
    super::write(&model).map_err(|e| ListingError {
        line: 0,
        message: e.to_string(),
    })
}
