//! Warp-collective instructions: they read the registers of the whole executing group before
//! writing any. BRA (with `.U.ANY` and `.DIV`), BREAK, SHFL, VOTE, VOTEU, MATCH, REDUX, ELECT,
//! R2UR, and the matrix instructions (in [`super::mma`]).

use super::{Cx, Env, Flow, R, Warp, allow, apply_flow, guard, invalid, op, unimpl};
use crate::program::Decoded;
use ptxc::target::sm90a::{OperandKind, RegFile};

/// Runs a collective instruction for the executing group.
pub(super) fn exec(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    match d.instr.mnemonic {
        "BRA" => bra(d, w, env),
        "BREAK" => brk(d, w, env),
        "SHFL" => shfl(d, w, env),
        "VOTE" | "VOTEU" => vote(d, w, env),
        "MATCH" => matchi(d, w, env),
        "REDUX" => redux(d, w, env),
        "ELECT" => elect(d, w, env),
        "R2UR" => r2ur(d, w, env),
        "LDSM" | "STSM" | "HMMA" | "IMMA" => super::mma::exec(d, w, env),
        _ => unimpl(d, "collective"),
    }
}

/// The lanes of the group, in order.
fn lanes(w: &Warp, group: u32) -> Vec<usize> {
    (0..w.threads.len())
        .filter(|&i| group >> w.threads[i].lane & 1 == 1)
        .collect()
}

/// Evaluates something per thread of the group (guard checked by the caller).
fn with_cx<T>(w: &mut Warp, env: &mut Env, i: usize, f: impl FnOnce(&mut Cx) -> R<T>) -> R<T> {
    let mut cx = Cx {
        t: &mut w.threads[i],
        u: &mut w.u,
        env,
    };
    f(&mut cx)
}

/// Moves every thread of the group to the next instruction.
fn advance(w: &mut Warp, group: u32) {
    for t in &mut w.threads {
        if group >> t.lane & 1 == 1 {
            t.pc += 1;
        }
    }
}

fn bra(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &["U", "ANY", "DIV", "INC", "DEC"])?;
    if d.has("INC") || d.has("DEC") {
        return unimpl(d, "BRA.INC/.DEC");
    }
    let group = env.group;
    let ls = lanes(w, group);
    let n = d.ops.len();
    let OperandKind::Int(target) = op(d, n - 1)?.kind else {
        return invalid(d, "branch target");
    };
    let target = target as u64;
    // Per thread: guard, the condition predicate, and (BRA.U with a UP) the uniform predicate.
    let mut take = Vec::with_capacity(ls.len());
    for &i in &ls {
        let g = guard(d, &w.threads[i], &w.u);
        let c = with_cx(w, env, i, |cx| {
            let mut c = cx.pred(d, op(d, 0)?)?;
            if n == 3 {
                c &= cx.pred(d, op(d, 1)?)?;
            }
            Ok(c)
        })?;
        take.push(g && c);
    }
    if d.has("DIV") {
        let diverged = group != env.live;
        for t in take.iter_mut() {
            *t = *t && diverged;
        }
    }
    if d.has("ANY") {
        let any = take.iter().any(|t| *t);
        take.iter_mut().for_each(|t| *t = any);
    }
    let code_len = env.code_len;
    for (k, &i) in ls.iter().enumerate() {
        let f = if take[k] {
            Flow::Jump(target)
        } else {
            Flow::Next
        };
        apply_flow(&mut w.threads[i], f, code_len)?;
    }
    Ok(())
}

fn brk(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &[])?;
    let group = env.group;
    let b = match op(d, 1)?.kind {
        OperandKind::Reg(r) if r.file == RegFile::Barrier => r.num as usize & 15,
        _ => return invalid(d, "not a convergence barrier"),
    };
    let mut leaving = 0u32;
    for &i in &lanes(w, group) {
        if guard(d, &w.threads[i], &w.u) {
            leaving |= 1 << w.threads[i].lane;
        }
    }
    for t in &mut w.threads {
        t.b[b] &= !leaving;
    }
    advance(w, group);
    Ok(())
}

fn shfl(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &["IDX", "UP", "DOWN", "BFLY"])?;
    let group = env.group;
    let ls = lanes(w, group);
    // Read every source first.
    let mut vals = [0u32; 32];
    let mut have = 0u32;
    for i in 0..w.threads.len() {
        if w.threads[i].state != super::State::Exited {
            let v = with_cx(w, env, i, |cx| cx.src(d, op(d, 2)?))?;
            vals[w.threads[i].lane as usize] = v;
            have |= 1 << w.threads[i].lane;
        }
    }
    let mut writes = Vec::new();
    for &i in &ls {
        if !guard(d, &w.threads[i], &w.u) {
            continue;
        }
        let lane = w.threads[i].lane as i32;
        let (b, c) = with_cx(w, env, i, |cx| {
            Ok((cx.src(d, op(d, 3)?)?, cx.src(d, op(d, 4)?)?))
        })?;
        let bval = (b & 0x1f) as i32;
        let cval = (c & 0x1f) as i32;
        let segmask = ((c >> 8) & 0x1f) as i32;
        let max_lane = (lane & segmask) | (cval & !segmask);
        let min_lane = lane & segmask;
        let (j, pval) = if d.has("UP") {
            let j = lane - bval;
            (j, j >= max_lane)
        } else if d.has("DOWN") {
            let j = lane + bval;
            (j, j <= max_lane)
        } else if d.has("BFLY") {
            let j = lane ^ bval;
            (j, j <= max_lane)
        } else {
            let j = min_lane | (bval & !segmask);
            (j, j <= max_lane)
        };
        let j = if pval { j } else { lane };
        let v = if (0..32).contains(&j) && have >> j & 1 == 1 {
            vals[j as usize]
        } else {
            vals[lane as usize]
        };
        writes.push((i, v, pval));
    }
    for (i, v, p) in writes {
        with_cx(w, env, i, |cx| {
            cx.set_pred(d, op(d, 0)?, p)?;
            cx.set(d, op(d, 1)?, v)
        })?;
    }
    advance(w, group);
    Ok(())
}

fn vote(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &["ALL", "ANY", "EQ"])?;
    let group = env.group;
    let ls = lanes(w, group);
    let mut ballot = 0u32;
    let mut active = 0u32;
    for &i in &ls {
        if !guard(d, &w.threads[i], &w.u) {
            continue;
        }
        active |= 1 << w.threads[i].lane;
        if with_cx(w, env, i, |cx| cx.pred(d, op(d, 2)?))? {
            ballot |= 1 << w.threads[i].lane;
        }
    }
    let p = if d.has("ALL") {
        ballot == active
    } else if d.has("ANY") {
        ballot != 0
    } else {
        ballot == 0 || ballot == active
    };
    let uniform = d.instr.mnemonic == "VOTEU";
    for &i in &ls {
        if !uniform && !guard(d, &w.threads[i], &w.u) {
            continue;
        }
        with_cx(w, env, i, |cx| {
            cx.set(d, op(d, 0)?, ballot)?;
            cx.set_pred(d, op(d, 1)?, p)
        })?;
        if uniform {
            break;
        }
    }
    advance(w, group);
    Ok(())
}

fn matchi(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &["ANY", "ALL", "U64"])?;
    let group = env.group;
    let ls = lanes(w, group);
    let wide = d.has("U64");
    let all = d.has("ALL");
    let vi = if all { 2 } else { 1 };
    let mut vals = Vec::new();
    for &i in &ls {
        if guard(d, &w.threads[i], &w.u) {
            let v = with_cx(w, env, i, |cx| {
                let o = op(d, vi)?;
                if wide {
                    cx.src64(d, o)
                } else {
                    Ok(u64::from(cx.src(d, o)?))
                }
            })?;
            vals.push((i, w.threads[i].lane, v));
        }
    }
    let active: u32 = vals.iter().fold(0, |m, (_, l, _)| m | 1 << l);
    let all_eq = vals.windows(2).all(|p| p[0].2 == p[1].2);
    for &(i, _, v) in &vals {
        let same: u32 = vals
            .iter()
            .filter(|x| x.2 == v)
            .fold(0, |m, (_, l, _)| m | 1 << l);
        with_cx(w, env, i, |cx| {
            if all {
                cx.set_pred(d, op(d, 0)?, all_eq)?;
                cx.set(d, op(d, 1)?, if all_eq { active } else { 0 })
            } else {
                cx.set(d, op(d, 0)?, same)
            }
        })?;
    }
    advance(w, group);
    Ok(())
}

fn redux(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &["OR", "XOR", "SUM", "MIN", "MAX", "S32"])?;
    let group = env.group;
    let ls = lanes(w, group);
    let signed = d.has("S32");
    let mut acc: Option<u32> = None;
    let mut first = None;
    for &i in &ls {
        if !guard(d, &w.threads[i], &w.u) {
            continue;
        }
        first.get_or_insert(i);
        let v = with_cx(w, env, i, |cx| cx.src(d, op(d, 1)?))?;
        acc = Some(match acc {
            None => v,
            Some(a) => {
                if d.has("OR") {
                    a | v
                } else if d.has("XOR") {
                    a ^ v
                } else if d.has("SUM") {
                    a.wrapping_add(v)
                } else if d.has("MIN") {
                    if signed {
                        (a as i32).min(v as i32) as u32
                    } else {
                        a.min(v)
                    }
                } else if d.has("MAX") {
                    if signed {
                        (a as i32).max(v as i32) as u32
                    } else {
                        a.max(v)
                    }
                } else {
                    a & v
                }
            }
        });
    }
    if let (Some(i), Some(v)) = (first, acc) {
        with_cx(w, env, i, |cx| cx.set(d, op(d, 0)?, v))?;
    }
    advance(w, group);
    Ok(())
}

fn elect(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &[])?;
    let group = env.group;
    let ls = lanes(w, group);
    let mut cands = Vec::new();
    for &i in &ls {
        if guard(d, &w.threads[i], &w.u) && with_cx(w, env, i, |cx| cx.pred(d, op(d, 2)?))? {
            cands.push(i);
        }
    }
    let leader = cands.first().map(|&i| w.threads[i].lane);
    for &i in &ls {
        if !guard(d, &w.threads[i], &w.u) {
            continue;
        }
        let me = Some(w.threads[i].lane) == leader;
        with_cx(w, env, i, |cx| {
            cx.set_pred(d, op(d, 0)?, me)?;
            if let Some(l) = leader {
                cx.set(d, op(d, 1)?, l)?;
            }
            Ok(())
        })?;
    }
    advance(w, group);
    Ok(())
}

fn r2ur(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    allow(d, &[])?;
    let group = env.group;
    let ls = lanes(w, group);
    let pd = op(d, 0)?;
    if !matches!(pd.kind, OperandKind::Reg(r) if r.is_zero_or_true()) {
        return unimpl(d, "R2UR with a predicate output");
    }
    // The value of the first thread whose guard passes.
    if let Some(&i) = ls.iter().find(|&&i| guard(d, &w.threads[i], &w.u)) {
        with_cx(w, env, i, |cx| {
            let v = cx.src(d, op(d, 2)?)?;
            cx.set(d, op(d, 1)?, v)
        })?;
    }
    advance(w, group);
    Ok(())
}
