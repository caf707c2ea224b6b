//! Memory instructions: loads and stores of every space (LDG/STG global, LD/ST generic,
//! LDS/STS shared, LDL/STL local, LDC/ULDC constant), atomics and reductions (ATOM, ATOMG,
//! ATOMS, REDG), the asynchronous copy LDGSTS (done at once), and the ordering instructions,
//! which have no effect in a functional simulator (every access is visible at once).

use super::{Cx, Flow, R, allow, op, unimpl};
use crate::SimError;
use crate::fp::{self, Pack, Round};
use crate::mem::{self, Space};
use crate::program::Decoded;

/// Modifiers of memory instructions that only concern caching, ordering and scope.
const ORDERING: &[&str] = &[
    "E", "EF", "EL", "LU", "EU", "NA", "LTC64B", "LTC128B", "LTC256B", "CONSTANT", "PRIVATE",
    "CTA", "STRONG", "SM", "GPU", "SYS", "MMIO", "VC", "BYPASS",
];

fn allow_mem(d: &Decoded, extra: &[&str]) -> R<()> {
    let mut ok: Vec<&str> = ORDERING.to_vec();
    ok.extend_from_slice(extra);
    allow(d, &ok)
}

const WIDTHS: &[&str] = &["U8", "S8", "U16", "S16", "64", "128"];

/// The access size in bytes and whether a narrow load sign-extends.
fn width(d: &Decoded) -> (usize, bool) {
    if d.has("U8") {
        (1, false)
    } else if d.has("S8") {
        (1, true)
    } else if d.has("U16") {
        (2, false)
    } else if d.has("S16") {
        (2, true)
    } else if d.has("64") {
        (8, false)
    } else if d.has("128") {
        (16, false)
    } else {
        (4, false)
    }
}

/// Executes `m` if it is a memory instruction.
pub(super) fn exec(m: &str, d: &Decoded, cx: &mut Cx) -> R<Option<Flow>> {
    match m {
        "LDG" => load(d, cx, Space::Global, true, 1)?,
        "LD" => load(d, cx, Space::Global, false, 0)?,
        "LDS" => load(d, cx, Space::Shared, true, 0)?,
        "LDL" => load(d, cx, Space::Local, true, 0)?,
        "STG" => store(d, cx, Some(Space::Global))?,
        "ST" => store(d, cx, None)?,
        "STS" => store(d, cx, Some(Space::Shared))?,
        "STL" => store(d, cx, Some(Space::Local))?,
        "LDC" => ldc(d, cx)?,
        "ATOM" | "ATOMG" | "ATOMS" | "REDG" => atom(m, d, cx)?,
        "LDGSTS" => ldgsts(d, cx)?,
        "QSPC" => qspc(d, cx)?,
        "LDGDEPBAR" | "DEPBAR" | "MEMBAR" | "ERRBAR" | "CGAERRBAR" | "CCTL" | "FENCE" => {
            // Ordering only.
        }
        _ => return Ok(None),
    }
    Ok(Some(Flow::Next))
}

fn check_align(addr: u64, n: usize) -> R<()> {
    if !addr.is_multiple_of(n as u64) {
        return Err(SimError::Memory(format!(
            "misaligned access of {n} bytes at 0x{addr:x}"
        )));
    }
    Ok(())
}

/// Reads `n` bytes. `space` Global with `generic` resolves the generic window.
pub(super) fn read(cx: &mut Cx, space: Space, generic: bool, addr: u64, n: usize) -> R<Vec<u8>> {
    check_align(addr, n)?;
    read_raw(cx, space, generic, addr, n)
}

/// Reads without the alignment check.
fn read_raw(cx: &mut Cx, space: Space, generic: bool, addr: u64, n: usize) -> R<Vec<u8>> {
    let (space, addr) = if generic {
        mem::resolve_generic(addr)
    } else {
        (space, addr)
    };
    let mut buf = vec![0u8; n];
    match space {
        Space::Global => cx.env.global.read(addr, &mut buf)?,
        Space::Shared => cx.env.shared.read(addr, &mut buf)?,
        Space::Local => {
            mem::local_check(addr, n)?;
            cx.t.local.read(addr, &mut buf);
        }
    }
    Ok(buf)
}

pub(super) fn write(cx: &mut Cx, space: Space, generic: bool, addr: u64, data: &[u8]) -> R<()> {
    check_align(addr, data.len())?;
    let (space, addr) = if generic {
        mem::resolve_generic(addr)
    } else {
        (space, addr)
    };
    match space {
        Space::Global => cx.env.global.write(addr, data),
        Space::Shared => cx.env.shared.write(addr, data),
        Space::Local => {
            mem::local_check(addr, data.len())?;
            cx.t.local.write(addr, data);
            Ok(())
        }
    }
}

fn to_words(b: &[u8], signed: bool) -> Vec<u32> {
    match b.len() {
        1 => vec![if signed {
            b[0] as i8 as i32 as u32
        } else {
            u32::from(b[0])
        }],
        2 => {
            let v = u16::from_le_bytes([b[0], b[1]]);
            vec![if signed {
                v as i16 as i32 as u32
            } else {
                u32::from(v)
            }]
        }
        _ => b
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    }
}

fn from_words(w: &[u32], n: usize) -> Vec<u8> {
    let mut out: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
    out.truncate(n);
    out
}

/// A load: destination at slot `dst`, address at `dst + 1`.
fn load(d: &Decoded, cx: &mut Cx, space: Space, fixed: bool, dst: usize) -> R<()> {
    let mut ok = WIDTHS.to_vec();
    ok.push("ZFILL");
    allow_mem(d, &ok)?;
    if d.has("ZFILL") {
        return unimpl(d, "load with .ZFILL");
    }
    if dst == 1 {
        let pd = op(d, 0)?;
        if !matches!(pd.kind, ptxc::target::sm90a::OperandKind::Reg(r) if r.is_zero_or_true()) {
            return unimpl(d, "load with a predicate output");
        }
    }
    let (n, signed) = width(d);
    let wide = matches!(d.instr.mnemonic, "LDG" | "LD");
    let addr = cx.address(d, dst + 1, wide)?;
    let bytes = read(cx, space, !fixed, addr, n)?;
    let words = to_words(&bytes, signed);
    cx.set_n(d, op(d, dst)?, &words)
}

/// A store: address at slot 0, data at slot 1. `space` None: generic.
fn store(d: &Decoded, cx: &mut Cx, space: Option<Space>) -> R<()> {
    allow_mem(d, WIDTHS)?;
    let (n, _) = width(d);
    let wide = matches!(d.instr.mnemonic, "STG" | "ST");
    let addr = cx.address(d, 0, wide)?;
    let words = cx.get_n(d, op(d, 1)?, n.div_ceil(4))?;
    let data = from_words(&words, n);
    write(
        cx,
        space.unwrap_or(Space::Global),
        space.is_none(),
        addr,
        &data,
    )
}

fn ldc(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["U8", "S8", "U16", "S16", "64"])?;
    let (n, signed) = width(d);
    let bytes = cx.cbank_bytes(d, op(d, 1)?, n)?;
    let words = to_words(&bytes, signed);
    cx.set_n(d, op(d, 0)?, &words)
}

/// The atomic operation of an instruction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum AOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    And,
    Or,
    Xor,
    Exch,
    Cas,
    Cast,
}

fn atom(m: &str, d: &Decoded, cx: &mut Cx) -> R<()> {
    let ops: &[(&str, AOp)] = &[
        ("ADD", AOp::Add),
        ("SAFEADD", AOp::Add),
        ("MIN", AOp::Min),
        ("MAX", AOp::Max),
        ("INC", AOp::Inc),
        ("DEC", AOp::Dec),
        ("AND", AOp::And),
        ("OR", AOp::Or),
        ("XOR", AOp::Xor),
        ("EXCH", AOp::Exch),
        ("CAS", AOp::Cas),
        ("CAST", AOp::Cast),
    ];
    allow_mem(
        d,
        &[
            "ADD", "SAFEADD", "MIN", "MAX", "INC", "DEC", "AND", "OR", "XOR", "EXCH", "CAS",
            "CAST", "SPIN", "S32", "64", "S64", "F32", "F64", "FTZ", "RN",
        ],
    )?;
    let Some(&(_, aop)) = ops.iter().find(|(n, _)| d.has(n)) else {
        return unimpl(d, "atomic operation");
    };
    for t in [
        "F16x2", "F16x4", "F16x8", "BF16x2", "BF16x4", "BF16x8", "F32x2", "F32x4", "128",
    ] {
        if d.has(t) {
            return unimpl(d, &format!("atomic on .{t}"));
        }
    }
    let float = d.has("F32") || d.has("F64");
    let n: usize = if d.has("64") || d.has("S64") || d.has("F64") {
        8
    } else {
        4
    };
    let signed = d.has("S32") || d.has("S64");
    // Operand layout: ATOM/ATOMG [pd, d, addr, b, (c)]; ATOMS [d, addr, b, (c)]; REDG [addr, b].
    let (pd, dst, ai) = match m {
        "ATOM" | "ATOMG" => (Some(0), Some(1), 2),
        "ATOMS" => (None, Some(0), 1),
        _ => (None, None, 0),
    };
    let (space, generic, wide) = match m {
        "ATOM" => (Space::Global, true, true),
        "ATOMG" | "REDG" => (Space::Global, false, true),
        _ => (Space::Shared, false, false),
    };
    let addr = cx.address(d, ai, wide)?;
    let words = n / 4;
    let b = cx.get_n(d, op(d, ai + 1)?, words)?;
    let get = |v: &[u32]| -> u64 {
        if v.len() == 2 {
            u64::from(v[0]) | u64::from(v[1]) << 32
        } else {
            u64::from(v[0])
        }
    };
    let b = get(&b);
    let c = if matches!(aop, AOp::Cas | AOp::Cast) {
        get(&cx.get_n(d, op(d, ai + 2)?, words)?)
    } else {
        0
    };
    let old_b = read(cx, space, generic, addr, n)?;
    let mut ob = [0u8; 8];
    ob[..n].copy_from_slice(&old_b);
    let old = u64::from_le_bytes(ob);
    let mask = if n == 8 { u64::MAX } else { 0xffff_ffff };
    let sext = |v: u64| -> i64 {
        if n == 8 {
            v as i64
        } else {
            i64::from(v as u32 as i32)
        }
    };
    let (new, result) = if float {
        if !matches!(aop, AOp::Add | AOp::Min | AOp::Max) {
            return unimpl(d, "float atomic");
        }
        let ftz = d.has("FTZ");
        let (f, fa, fb) = if n == 8 {
            (fp::F64, fp::u64v(old), fp::u64v(b))
        } else {
            (fp::F32, fp::u32v(old as u32, ftz), fp::u32v(b as u32, ftz))
        };
        let v = match aop {
            AOp::Add => fp::add(fa, fb, Round::Rn),
            AOp::Min => fp::minmax(fa, fb, false, false),
            _ => fp::minmax(fa, fb, true, false),
        };
        (fp::pack(v, f, Pack::new(Round::Rn, ftz)), old)
    } else {
        let new = match aop {
            AOp::Add => old.wrapping_add(b) & mask,
            AOp::Min => {
                if signed {
                    (sext(old).min(sext(b)) as u64) & mask
                } else {
                    old.min(b)
                }
            }
            AOp::Max => {
                if signed {
                    (sext(old).max(sext(b)) as u64) & mask
                } else {
                    old.max(b)
                }
            }
            AOp::Inc => {
                if old >= b {
                    0
                } else {
                    old + 1
                }
            }
            AOp::Dec => {
                if old == 0 || old > b {
                    b
                } else {
                    old - 1
                }
            }
            AOp::And => old & b,
            AOp::Or => old | b,
            AOp::Xor => old ^ b,
            AOp::Exch => b,
            AOp::Cas | AOp::Cast => {
                if old == b {
                    c
                } else {
                    old
                }
            }
        };
        let result = if aop == AOp::Cast {
            u64::from(old == b)
        } else {
            old
        };
        (new, result)
    };
    write(cx, space, generic, addr, &new.to_le_bytes()[..n])?;
    if let Some(di) = dst {
        let o = op(d, di)?;
        if n == 8 && aop != AOp::Cast {
            cx.set64(d, o, result)?;
        } else {
            cx.set(d, o, result as u32)?;
        }
    }
    if let Some(pi) = pd {
        // The generic float atomics of ptxas's DSMEM fallback report whether they were done;
        // here they always are.
        cx.set_pred(d, op(d, pi)?, true)?;
    }
    Ok(())
}

/// LDGSTS: the copy from global to shared memory, done at once. With `.ZFILL` the low bits of
/// the source address give the number of trailing bytes to zero (ptxas encodes
/// `cp.async … cp-size, src-size` as the source address plus `cp-size − src-size`). A false
/// source predicate (the last operand: `!PT` for a src-size of 0, `P` = `n ≠ 0` for a register
/// src-size) reads nothing and zeroes all `cp-size` bytes.
fn ldgsts(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow_mem(d, &["64", "128", "ZFILL"])?;
    let n: usize = if d.has("128") {
        16
    } else if d.has("64") {
        8
    } else {
        4
    };
    let dst = cx.address(d, 0, false)?;
    let src = cx.address(d, 1, true)?;
    let (src, mut zero) = if d.has("ZFILL") {
        let k = (src % n as u64) as usize;
        (src - k as u64, k)
    } else {
        (src, 0)
    };
    if let Some(p) = d.ops.get(2)
        && !cx.pred(d, p)?
    {
        zero = n;
    }
    check_align(src, n)?;
    let mut data = vec![0u8; n];
    if zero < n {
        let part = read_raw(cx, Space::Global, false, src, n - zero)?;
        data[..n - zero].copy_from_slice(&part);
    }
    write(cx, Space::Shared, false, dst, &data)
}

/// QSPC.E.{G,S,D} Pd, RZ, [a]: whether a generic address is global, in the own CTA's shared
/// memory, or in a cluster's (distributed) shared memory.
fn qspc(d: &Decoded, cx: &mut Cx) -> R<()> {
    allow(d, &["E", "G", "S", "D"])?;
    let rd = op(d, 1)?;
    if !matches!(rd.kind, ptxc::target::sm90a::OperandKind::Reg(r) if r.is_zero_or_true()) {
        return unimpl(d, "QSPC with a register result");
    }
    let a = cx.address(d, 2, true)?;
    let (space, off) = mem::resolve_generic(a);
    let r = if d.has("G") {
        space == Space::Global
    } else if d.has("S") {
        space == Space::Shared && off >> 24 == 0
    } else {
        space == Space::Shared
    };
    cx.set_pred(d, op(d, 0)?, r)
}
