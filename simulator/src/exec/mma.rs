//! Warp-wide matrix instructions, with the fragment layouts of the PTX ISA (`mma.m16n8k16`,
//! `mma.m16n8k32`, `ldmatrix`): HMMA.16816 (f16/bf16 inputs, f32 or f16 accumulators),
//! HMMA.1688, IMMA.16816/16832 (8-bit integers), LDSM.16.{M88,MT88}.{1,2,4} and its inverse
//! STSM (`stmatrix`). They need the
//! whole warp (32 threads) converged.
//!
//! HMMA accumulates exactly and rounds once; the GPU's tensor cores round their internal sums
//! in an unspecified way, so results agree with the hardware when the sums are exact (as in
//! ZLUDA's tests) and may differ in the last bit otherwise.

use super::memory::{read, write};
use super::{Cx, Env, R, Warp, allow, guard, invalid, op, unimpl};
use crate::fp::{self, Pack, Round, Val};
use crate::mem::Space;
use crate::program::Decoded;
use ptxc::target::sm90a::OperandKind;

pub(super) fn exec(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    let group = env.group;
    if w.threads.len() != 32 || group != u32::MAX {
        return unimpl(d, "matrix instruction without the full warp converged");
    }
    for t in &w.threads {
        if !guard(d, t, &w.u) {
            return unimpl(d, "matrix instruction under a divergent guard");
        }
    }
    match d.instr.mnemonic {
        "LDSM" => ldsm(d, w, env)?,
        "STSM" => stsm(d, w, env)?,
        "HMMA" => hmma(d, w, env)?,
        _ => imma(d, w, env)?,
    }
    for t in &mut w.threads {
        t.pc += 1;
    }
    Ok(())
}

fn cx_of<'a, 'b>(w: &'a mut Warp, env: &'a mut Env<'b>, lane: usize) -> Cx<'a, 'b> {
    Cx {
        t: &mut w.threads[lane],
        u: &mut w.u,
        env,
    }
}

/// Reads `n` registers from operand `i` of every lane.
fn regs(d: &Decoded, w: &mut Warp, env: &mut Env, i: usize, n: usize) -> R<Vec<Vec<u32>>> {
    let mut out = Vec::with_capacity(32);
    for l in 0..32 {
        let cx = cx_of(w, env, l);
        out.push(cx.get_n(d, op(d, i)?, n)?);
    }
    Ok(out)
}

fn write_regs(d: &Decoded, w: &mut Warp, env: &mut Env, vals: &[Vec<u32>]) -> R<()> {
    for (l, v) in vals.iter().enumerate() {
        let mut cx = cx_of(w, env, l);
        cx.set_n(d, op(d, 0)?, v)?;
    }
    Ok(())
}

fn check_trailing_pred(d: &Decoded) -> R<()> {
    if let Some(o) = d.ops.get(4)
        && let OperandKind::Reg(r) = o.kind
        && (!r.is_zero_or_true() || o.not)
    {
        return unimpl(d, "matrix instruction with a predicate operand");
    }
    Ok(())
}

fn ldsm(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    let (count, trans) = matrix_shape(d)?;
    // Row addresses from threads 0 .. 8*count.
    let mut rows = vec![[0u16; 8]; 8 * count];
    for (l, row) in rows.iter_mut().enumerate() {
        let mut cx = cx_of(w, env, l);
        let a = cx.address(d, 1, false)?;
        let b = read(&mut cx, Space::Shared, false, a, 16)?;
        for (k, e) in row.iter_mut().enumerate() {
            *e = u16::from_le_bytes([b[2 * k], b[2 * k + 1]]);
        }
    }
    let mut out = vec![Vec::new(); 32];
    for (lane, o) in out.iter_mut().enumerate() {
        for m in 0..count {
            let mat = &rows[8 * m..8 * m + 8];
            let (e0, e1) = if trans {
                let c = lane / 4;
                let r = (lane % 4) * 2;
                (mat[r][c], mat[r + 1][c])
            } else {
                let r = lane / 4;
                let c = (lane % 4) * 2;
                (mat[r][c], mat[r][c + 1])
            };
            o.push(u32::from(e0) | u32::from(e1) << 16);
        }
    }
    write_regs(d, w, env, &out)
}

/// `.1/.2/.4` and `MT88` of LDSM/STSM.
fn matrix_shape(d: &Decoded) -> R<(usize, bool)> {
    allow(d, &["16", "M88", "MT88", "2", "4"])?;
    let count = if d.has("4") {
        4
    } else if d.has("2") {
        2
    } else {
        1
    };
    Ok((count, d.has("MT88")))
}

/// STSM: the inverse of LDSM. Lane `l`'s register `m` holds two elements of matrix `m` (row
/// `l / 4`, columns `2 (l % 4)` and `+1`; transposed with MT88); threads `8m .. 8m + 8` give the
/// addresses of matrix `m`'s rows.
fn stsm(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    let (count, trans) = matrix_shape(d)?;
    let src = regs(d, w, env, 1, count)?;
    let mut rows = vec![[0u16; 8]; 8 * count];
    for (lane, vals) in src.iter().enumerate() {
        for (m, v) in vals.iter().enumerate() {
            let (e0, e1) = (*v as u16, (*v >> 16) as u16);
            let mat = &mut rows[8 * m..8 * m + 8];
            if trans {
                let c = lane / 4;
                let r = (lane % 4) * 2;
                mat[r][c] = e0;
                mat[r + 1][c] = e1;
            } else {
                let r = lane / 4;
                let c = (lane % 4) * 2;
                mat[r][c] = e0;
                mat[r][c + 1] = e1;
            }
        }
    }
    for (l, row) in rows.iter().enumerate() {
        let mut cx = cx_of(w, env, l);
        let a = cx.address(d, 0, false)?;
        let bytes: Vec<u8> = row.iter().flat_map(|e| e.to_le_bytes()).collect();
        write(&mut cx, Space::Shared, false, a, &bytes)?;
    }
    Ok(())
}

fn half(v: u32, hi: bool) -> u64 {
    u64::from(if hi { v >> 16 } else { v & 0xffff })
}

fn hmma(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &["16816", "1688", "F16", "F32", "BF16"])?;
    check_trailing_pred(d)?;
    let k = if d.has("16816") { 16 } else { 8 };
    let bf = d.has("BF16");
    let f32acc = d.has("F32");
    let infmt = if bf { fp::BF16 } else { fp::F16 };
    let (na, nb) = if k == 16 { (4, 2) } else { (2, 1) };
    let nc = if f32acc { 4 } else { 2 };
    let ra = regs(d, w, env, 1, na)?;
    let rb = regs(d, w, env, 2, nb)?;
    let rc = regs(d, w, env, 3, nc)?;
    // Unpack A (16 x k), B (k x 8), C (16 x 8).
    let mut a = vec![vec![Val::Zero(false); k]; 16];
    let mut b = vec![vec![Val::Zero(false); 8]; k];
    let mut c = vec![vec![Val::Zero(false); 8]; 16];
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        for (ri, reg) in ra[lane].iter().enumerate() {
            let row = g + 8 * (ri & 1);
            let col = t * 2 + 8 * (ri >> 1);
            for e in 0..2 {
                a[row][col + e] = fp::unpack(half(*reg, e == 1), infmt, false);
            }
        }
        for (ri, reg) in rb[lane].iter().enumerate() {
            for e in 0..2 {
                b[t * 2 + 8 * ri + e][g] = fp::unpack(half(*reg, e == 1), infmt, false);
            }
        }
        for e in 0..4 {
            let row = g + 8 * (e >> 1);
            let col = t * 2 + (e & 1);
            c[row][col] = if f32acc {
                fp::u32v(rc[lane][e], false)
            } else {
                fp::unpack(half(rc[lane][e >> 1], e & 1 == 1), fp::F16, false)
            };
        }
    }
    let mut out = vec![vec![0u32; nc]; 32];
    for (lane, o) in out.iter_mut().enumerate() {
        let (g, t) = (lane / 4, lane % 4);
        for e in 0..4 {
            let row = g + 8 * (e >> 1);
            let col = t * 2 + (e & 1);
            let mut acc = c[row][col];
            for (kk, brow) in b.iter().enumerate() {
                acc = fp::add(acc, fp::mul(a[row][kk], brow[col]), Round::Rn);
            }
            if f32acc {
                o[e] = fp::f32_bits(acc, Pack::RN);
            } else {
                let h = fp::pack(acc, fp::F16, Pack::RN) as u32;
                o[e >> 1] |= h << (16 * (e & 1));
            }
        }
    }
    write_regs(d, w, env, &out)
}

fn imma(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &["16816", "16832", "U8", "S8"])?;
    check_trailing_pred(d)?;
    let mods = d.mods();
    let sa = mods.get(1) == Some(&"S8");
    let sb = mods.get(2) == Some(&"S8");
    let k = if d.has("16832") { 32 } else { 16 };
    let (na, nb) = if k == 32 { (4, 2) } else { (2, 1) };
    let ra = regs(d, w, env, 1, na)?;
    let rb = regs(d, w, env, 2, nb)?;
    let rc = regs(d, w, env, 3, 4)?;
    for (o, want) in [(1, "ROW"), (2, "COL")] {
        let s = &op(d, o)?.suffix;
        if !(s.is_empty() || s == &[want]) {
            return invalid(d, "operand layout");
        }
    }
    let byte = |v: u32, i: usize, s: bool| -> i64 {
        let x = (v >> (8 * i)) as u8;
        if s { i64::from(x as i8) } else { i64::from(x) }
    };
    let mut a = vec![vec![0i64; k]; 16];
    let mut b = vec![vec![0i64; 8]; k];
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        for (ri, reg) in ra[lane].iter().enumerate() {
            let row = g + 8 * (ri & 1);
            let col = t * 4 + 16 * (ri >> 1);
            for e in 0..4 {
                a[row][col + e] = byte(*reg, e, sa);
            }
        }
        for (ri, reg) in rb[lane].iter().enumerate() {
            for e in 0..4 {
                b[t * 4 + 16 * ri + e][g] = byte(*reg, e, sb);
            }
        }
    }
    let mut out = vec![vec![0u32; 4]; 32];
    for (lane, o) in out.iter_mut().enumerate() {
        let (g, t) = (lane / 4, lane % 4);
        for e in 0..4 {
            let row = g + 8 * (e >> 1);
            let col = t * 2 + (e & 1);
            let mut acc = i64::from(rc[lane][e] as i32);
            for (kk, brow) in b.iter().enumerate() {
                acc += a[row][kk] * brow[col];
            }
            o[e] = acc as u32;
        }
    }
    write_regs(d, w, env, &out)
}
