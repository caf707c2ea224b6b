//! The hazard checker: reads an sm_90a function's machine words — ptxc's or ptxas's — and
//! reports every register access that its control words do not protect.
//!
//! It is independent of the scoreboard pass ([`crate::emit::scoreboard`]): it decodes the words
//! itself, builds its own control-flow graph and follows the control words as the hardware
//! would, sharing with the pass only the measured latency tables of
//! [`crate::target::sm90a::latency`] (which opcodes are variable-latency, and the
//! read-after-write latencies of fixed-latency producers). What it checks, at every
//! instruction, on every path into it:
//!
//! * **RAW, variable latency**: a register read (source, address, guard) whose last writer is a
//!   variable-latency instruction must have been covered by a wait on that writer's write
//!   scoreboard (wait mask bits, or `DEPBAR`); a writer that set no scoreboard is a hazard.
//! * **RAW, fixed latency**: the stall cycles from the writer's issue to the reader's issue
//!   must reach the `raw.csv` latency of the pair. Across blocks the smallest distance over all
//!   paths counts.
//! * **WAW**: a register written while an earlier variable-latency write to it is still
//!   pending (not waited on).
//! * **WAR**: a register written while a variable-latency instruction that reads it (a store's
//!   data, an address) may not have read it yet: the writer must wait on the reader's read
//!   scoreboard (or its write scoreboard, since results land after sources are read).
//!
//! A wait on a scoreboard completes everything pending on it (the counter reaches zero).
//! `DEPBAR.LE SBn, 0x0` and `DEPBAR {…}` are waits; `DEPBAR.LE SBn, k` with `k > 0` is taken to
//! complete nothing (conservative). Calls and returns wait for nothing: a `CALL` flows into its
//! target and on to the next instruction, a `RET` to the instruction after every `CALL` of the
//! function (a subroutine in the same section is checked with its callers). The queue rules of
//! `opcodes.csv` apply: a result lands after the instruction's own sources are read, and a queue
//! member completes the earlier members of its queue in the same straight-line block.

// Instruction indices relate several per-instruction tables; index loops say that best.
#![allow(clippy::needless_range_loop)]

use crate::target::sm90a::latency::{self, OpClass, Operand};
use crate::target::sm90a::{Instr, OperandKind, RegFile, decode_at};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One 32-bit register, predicate or convergence barrier.
type Unit = (RegFile, u8);

/// What kind of dependence was not protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HazardKind {
    /// Read after a write.
    Raw,
    /// Write after a pending write.
    Waw,
    /// Write before a pending read.
    War,
}

/// One unprotected access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hazard {
    pub function: String,
    /// Byte offset of the instruction in the function.
    pub addr: u64,
    pub instr: String,
    /// The register, as SASS spells it (`R4`, `UP0`).
    pub reg: String,
    pub kind: HazardKind,
    /// Byte offset and text of the producer (or the pending reader for WAR).
    pub producer_addr: u64,
    pub producer: String,
    /// What was missing.
    pub why: String,
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            HazardKind::Raw => "RAW",
            HazardKind::Waw => "WAW",
            HazardKind::War => "WAR",
        };
        write!(
            f,
            "{}+0x{:04x}: {kind} on {}: `{}` after `{}` at 0x{:04x}: {}",
            self.function,
            self.addr,
            self.reg,
            self.instr,
            self.producer,
            self.producer_addr,
            self.why
        )
    }
}

fn reg_name(u: Unit) -> String {
    let p = match u.0 {
        RegFile::Gpr => "R",
        RegFile::Ugpr => "UR",
        RegFile::Pred => "P",
        RegFile::UPred => "UP",
        RegFile::Barrier => "B",
    };
    format!("{p}{}", u.1)
}

/// What the checker knows of one instruction.
struct Info {
    instr: Instr,
    class: OpClass,
    variable: bool,
    /// Registers read, with the operand kind for the latency lookup.
    reads: Vec<(Unit, Operand)>,
    writes: Vec<Unit>,
    /// Scoreboards the instruction waits on before issuing.
    waits: u8,
    succs: Vec<usize>,
}

fn units(reg: crate::target::sm90a::Reg, count: u8) -> impl Iterator<Item = Unit> {
    (0..count).map(move |k| (reg.file, reg.num.wrapping_add(k)))
}

/// The scoreboards a `DEPBAR` waits for, from its text.
fn depbar_waits(i: &Instr) -> u8 {
    let text = i.to_string();
    let mut mask = 0u8;
    if let Some(list) = text.split('{').nth(1).and_then(|r| r.split('}').next()) {
        for n in list.split(',') {
            if let Ok(b) = n.trim().parse::<u8>()
                && b < 6
            {
                mask |= 1 << b;
            }
        }
    } else if let Some(rest) = text.split("SB").nth(1) {
        let mut it = rest.split(',');
        let sb = it.next().and_then(|s| s.trim().parse::<u8>().ok());
        let count = it
            .next()
            .map(|s| s.trim().trim_end_matches(';').trim())
            .and_then(|s| i64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
        if let (Some(sb), Some(0)) = (sb, count)
            && sb < 6
        {
            mask |= 1 << sb;
        }
    }
    mask
}

fn branch_target(i: &Instr) -> Option<u64> {
    // `CALL.ABS.NOINC 0x0` calls another section (relocated): no target here.
    if i.mnemonic == "CALL" && i.mods.contains(&"ABS") {
        return None;
    }
    i.operands.iter().rev().find_map(|o| match o.kind {
        OperandKind::Int(v) if v >= 0 => Some(v as u64),
        _ => None,
    })
}

fn decode_function(words: &[[u64; 2]]) -> Result<Vec<Info>, String> {
    let m = latency::model();
    let n = words.len();
    let mut out = Vec::with_capacity(n);
    for (k, w) in words.iter().enumerate() {
        let addr = k as u64 * 16;
        let instr = decode_at(*w, addr).map_err(|e| format!("word at 0x{addr:04x}: {e}"))?;
        let acc = instr
            .accesses()
            .map_err(|e| format!("`{instr}` at 0x{addr:04x}: {e}"))?;
        let guard =
            (!instr.guard.is_always()).then_some((instr.guard.pred.file, instr.guard.pred.num));
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for a in &acc {
            for u in units(a.reg, a.count) {
                if a.write {
                    writes.push(u);
                } else {
                    let op = if Some(u) == guard {
                        Operand::Guard
                    } else {
                        Operand::File(u.0)
                    };
                    reads.push((u, op));
                }
            }
        }
        let class = m.class_of(&instr);
        let variable = class.kind.is_variable();
        if variable && instr.mnemonic == "ATOM" {
            // ptxas reads the predicate result of a generic ATOM without a wait (probes
            // 04_dsmem_ldst/atom_add_f32, red_add_f32, atom_add_u64): it is not tracked.
            writes.retain(|u: &Unit| !matches!(u.0, RegFile::Pred | RegFile::UPred));
        }
        if variable && instr.mnemonic == "BMOV" {
            // Nor does it wait before reading a convergence barrier that `BMOV.32 Bn, R` wrote
            // (tests/kernels/device_calls.ptx: a recursive call's epilogue restores B6, the
            // caller's BSYNC B6 follows the RET).
            writes.retain(|u: &Unit| u.0 != RegFile::Barrier);
        }
        let mut waits = instr.ctrl.wait;
        if instr.mnemonic == "DEPBAR" {
            waits |= depbar_waits(&instr);
        }
        // Successors.
        let conditional = !instr.guard.is_always()
            || instr.operands.iter().any(|o| {
                o.as_reg().is_some_and(|r| {
                    matches!(r.file, RegFile::Pred | RegFile::UPred) && !r.is_zero_or_true()
                })
            });
        let target = branch_target(&instr)
            .filter(|t| t % 16 == 0 && (*t / 16) < n as u64)
            .map(|t| (t / 16) as usize);
        let next = (k + 1 < n).then_some(k + 1);
        let succs: Vec<usize> = match instr.mnemonic {
            "BRA" | "JMP" => {
                let mut s: Vec<usize> = target.into_iter().collect();
                if conditional {
                    s.extend(next);
                }
                s
            }
            "CALL" => target.into_iter().chain(next).collect(),
            "EXIT" | "RET" | "KILL" => {
                if conditional {
                    next.into_iter().collect()
                } else {
                    Vec::new()
                }
            }
            "BRX" | "JMX" => Vec::new(),
            _ => next.into_iter().collect(),
        };
        out.push(Info {
            instr,
            class,
            variable,
            reads,
            writes,
            waits,
            succs,
        });
    }
    // A RET returns to the instruction after each CALL whose subroutine reaches it (walking
    // the subroutine, a nested CALL continues after itself).
    let mut ret_edges: Vec<(usize, usize)> = Vec::new();
    for (k, i) in out.iter().enumerate() {
        if i.instr.mnemonic != "CALL" || k + 1 >= n {
            continue;
        }
        let Some(&t) = i.succs.iter().find(|&&s| s != k + 1) else {
            continue;
        };
        let mut seen = vec![false; n];
        let mut stack = vec![t];
        while let Some(x) = stack.pop() {
            if std::mem::replace(&mut seen[x], true) {
                continue;
            }
            match out[x].instr.mnemonic {
                "RET" => ret_edges.push((x, k + 1)),
                "CALL" => stack.extend((x + 1 < n).then_some(x + 1)),
                _ => stack.extend(out[x].succs.iter().copied()),
            }
        }
    }
    for (r, to) in ret_edges {
        out[r].succs.push(to);
        out[r].succs.sort_unstable();
        out[r].succs.dedup();
    }
    Ok(out)
}

/// A pending variable-latency event: `(instruction, true)` for the release of its sources,
/// `(instruction, false)` for its results.
type Event = (usize, bool);

/// What is in flight before an instruction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    /// Variable-latency events not known complete, with the registers they cover.
    events: BTreeMap<Event, BTreeSet<Unit>>,
    /// Fixed-latency results: register → (producer → cycles since its issue, the smallest over
    /// the paths).
    fixed: BTreeMap<Unit, BTreeMap<usize, i64>>,
}

fn sb(v: u8) -> Option<u8> {
    (v < 6).then_some(v)
}

impl State {
    fn merge(&mut self, o: &State) -> bool {
        let before = self.clone();
        for (e, s) in &o.events {
            self.events.entry(*e).or_default().extend(s.iter().copied());
        }
        for (u, s) in &o.fixed {
            let slot = self.fixed.entry(*u).or_default();
            for (p, d) in s {
                let e = slot.entry(*p).or_insert(*d);
                *e = (*e).min(*d);
            }
        }
        *self != before
    }
}

/// The events a wait on `mask` completes, closed under the in-order rules of `opcodes.csv`:
/// results land after the instruction's own sources are read; a queue member's results (or
/// source release) complete the earlier members' of the same queue in the same block.
fn completed(code: &[Info], block: &[usize], st: &State, mask: u8) -> BTreeSet<Event> {
    let on = |s: Option<u8>| s.is_some_and(|b| mask >> b & 1 == 1);
    let mut work: Vec<Event> = st
        .events
        .keys()
        .copied()
        .filter(|&(k, read)| {
            // An instruction's write scoreboard is released when it completes, after its
            // sources were read: a wait on it also ends the read event, even when the
            // instruction writes no register and so has no write event to follow (an `ATOMG`
            // to `RZ` whose completion a barrier waits for).
            let c = &code[k].instr.ctrl;
            on(sb(c.wbar)) || (read && on(sb(c.rbar)))
        })
        .collect();
    let mut done: BTreeSet<Event> = BTreeSet::new();
    while let Some((q, read)) = work.pop() {
        if !done.insert((q, read)) {
            continue;
        }
        let cq = &code[q].class;
        let mut also: Vec<Event> = Vec::new();
        if !read {
            also.push((q, true));
            if let Some(queue) = &cq.queue {
                also.extend(st.events.keys().copied().filter(|&(p, r)| {
                    !r && p < q
                        && block[p] == block[q]
                        && code[p].class.queue.as_ref() == Some(queue)
                }));
            }
        }
        if let Some(queue) = &cq.read_queue {
            also.extend(st.events.keys().copied().filter(|&(p, r)| {
                r && p < q
                    && block[p] == block[q]
                    && code[p].class.read_queue.as_ref() == Some(queue)
            }));
        }
        work.extend(also.into_iter().filter(|e| !done.contains(e)));
    }
    done.retain(|e| st.events.contains_key(e));
    done
}

/// A hazard found at an instruction: (instruction, register, kind, producer, why).
type Found = (usize, Unit, HazardKind, usize, String);

/// Runs one instruction on the state; pushes hazards when `out` is given.
fn step(
    k: usize,
    code: &[Info],
    block: &[usize],
    horizon: i64,
    st: &mut State,
    mut out: Option<&mut Vec<Found>>,
) {
    let m = latency::model();
    let i = &code[k];
    // Waits.
    if i.waits != 0 {
        for e in completed(code, block, st, i.waits) {
            st.events.remove(&e);
        }
    }
    let missing = |p: usize, read: bool| -> String {
        let c = &code[p].instr.ctrl;
        match (read, sb(c.rbar), sb(c.wbar)) {
            (true, Some(b), _) => format!("no wait on SB{b} (its read scoreboard)"),
            (_, _, Some(b)) => format!("no wait on SB{b}"),
            (true, None, None) => "the reader sets no scoreboard".to_string(),
            (false, _, None) => "the producer sets no write scoreboard".to_string(),
        }
    };
    // Reads.
    for &(u, op) in &i.reads {
        for (&(p, read), regs) in &st.events {
            if !read
                && p != k
                && regs.contains(&u)
                && let Some(o) = out.as_deref_mut()
            {
                o.push((k, u, HazardKind::Raw, p, missing(p, false)));
            }
        }
        if let Some(ps) = st.fixed.get(&u) {
            for (&p, &d) in ps {
                let lat = i64::from(m.raw_latency_floor(&code[p].class, &i.class, op));
                if d < lat
                    && let Some(o) = out.as_deref_mut()
                {
                    o.push((
                        k,
                        u,
                        HazardKind::Raw,
                        p,
                        format!("{d} cycles after it, latency {lat}"),
                    ));
                }
            }
        }
    }
    // Writes.
    for &u in &i.writes {
        let mut emptied = Vec::new();
        for (&(p, read), regs) in st.events.iter_mut() {
            if p == k || !regs.contains(&u) {
                continue;
            }
            // A variable-latency result of the same source-read queue lands after the earlier
            // member has read its sources.
            let same_queue = read
                && i.variable
                && i.class.read_queue.is_some()
                && i.class.read_queue == code[p].class.read_queue;
            if !same_queue && let Some(o) = out.as_deref_mut() {
                let kind = if read {
                    HazardKind::War
                } else {
                    HazardKind::Waw
                };
                o.push((k, u, kind, p, missing(p, read)));
            }
            regs.remove(&u);
            if regs.is_empty() {
                emptied.push((p, read));
            }
        }
        for e in emptied {
            st.events.remove(&e);
        }
        st.fixed.remove(&u);
    }
    // Own effects.
    if i.variable {
        if !i.writes.is_empty() {
            st.events
                .entry((k, false))
                .or_default()
                .extend(i.writes.iter().copied());
        }
        // Vector registers are read late (uniform registers and predicates at issue).
        let late: BTreeSet<Unit> = i
            .reads
            .iter()
            .map(|(u, _)| *u)
            .filter(|u| u.0 == RegFile::Gpr)
            .collect();
        if !late.is_empty() {
            st.events.entry((k, true)).or_default().extend(late);
        }
    } else {
        for &u in &i.writes {
            st.fixed.entry(u).or_default().insert(k, 0);
        }
    }
    // Time passes.
    let stall = i64::from(i.instr.ctrl.stall);
    for s in st.fixed.values_mut() {
        for d in s.values_mut() {
            *d += stall;
        }
        s.retain(|_, d| *d < horizon);
    }
    st.fixed.retain(|_, s| !s.is_empty());
}

/// Straight-line blocks: the block number of every instruction (a new block starts at a
/// branch target and after any instruction that does not simply fall through).
fn blocks(code: &[Info]) -> Vec<usize> {
    let n = code.len();
    let mut leader = vec![false; n + 1];
    for (k, i) in code.iter().enumerate() {
        let plain = i.succs.len() == 1 && i.succs[0] == k + 1;
        if !plain {
            leader[k + 1] = true;
            for &s in &i.succs {
                leader[s] = true;
            }
        }
        if matches!(i.instr.mnemonic, "BSSY" | "BRA" | "JMP" | "CALL")
            && let Some(t) = branch_target(&i.instr)
            && t % 16 == 0
            && ((t / 16) as usize) < n
        {
            leader[(t / 16) as usize] = true;
        }
    }
    let mut out = Vec::with_capacity(n);
    let mut b = 0;
    for k in 0..n {
        if k > 0 && leader[k] {
            b += 1;
        }
        out.push(b);
    }
    out
}

/// Checks one function's words (its `.text` section, padding included). Returns the hazards
/// in address order; an error when a word does not decode.
pub fn check_function(name: &str, words: &[[u64; 2]]) -> Result<Vec<Hazard>, String> {
    let code = decode_function(words).map_err(|e| format!("{name}: {e}"))?;
    let n = code.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let horizon = i64::from(latency::model().max_latency()) + 1;
    let block = blocks(&code);
    // Forward dataflow over instructions (each is its own node: simple and exact).
    let mut input: Vec<Option<State>> = vec![None; n];
    input[0] = Some(State::default());
    // Every instruction no edge reaches (a subroutine entered by an indirect call) starts clean.
    let mut reached = vec![false; n];
    reached[0] = true;
    for i in &code {
        for &s in &i.succs {
            reached[s] = true;
        }
    }
    for k in 0..n {
        if !reached[k] {
            input[k] = Some(State::default());
        }
    }
    let mut work: BTreeSet<usize> = (0..n).collect();
    let mut steps = 0usize;
    while let Some(k) = work.pop_first() {
        steps += 1;
        if steps > 200 * n + 10_000 {
            return Err(format!("{name}: the hazard dataflow does not settle"));
        }
        let Some(mut st) = input[k].clone() else {
            continue;
        };
        step(k, &code, &block, horizon, &mut st, None);
        for &s in &code[k].succs {
            let changed = match &mut input[s] {
                Some(x) => x.merge(&st),
                slot @ None => {
                    *slot = Some(st.clone());
                    true
                }
            };
            if changed {
                work.insert(s);
            }
        }
    }
    let mut raw = Vec::new();
    for k in 0..n {
        if let Some(mut st) = input[k].clone() {
            step(k, &code, &block, horizon, &mut st, Some(&mut raw));
        }
    }
    let mut out: Vec<Hazard> = raw
        .into_iter()
        .map(|(k, u, kind, p, why)| Hazard {
            function: name.to_string(),
            addr: k as u64 * 16,
            instr: code[k].instr.to_string(),
            reg: reg_name(u),
            kind,
            producer_addr: p as u64 * 16,
            producer: code[p].instr.to_string(),
            why,
        })
        .collect();
    out.sort_by(|a, b| {
        (a.addr, &a.reg, a.kind, a.producer_addr).cmp(&(b.addr, &b.reg, b.kind, b.producer_addr))
    });
    out.dedup();
    Ok(out)
}

/// Checks every function of a cubin.
pub fn check_cubin(bytes: &[u8]) -> Result<Vec<Hazard>, String> {
    let cubin = crate::emit::read(bytes).map_err(|e| e.to_string())?;
    if cubin.sm != 90 {
        return Err(format!(
            "the cubin is for sm_{}; the checker knows sm_90a",
            cubin.sm
        ));
    }
    let mut out = Vec::new();
    for f in &cubin.functions {
        if f.code.len() % 16 != 0 {
            return Err(format!(
                "{}: code size {} is not a multiple of 16",
                f.name,
                f.code.len()
            ));
        }
        let words: Vec<[u64; 2]> = f
            .code
            .chunks_exact(16)
            .map(|c| {
                let lo = u64::from_le_bytes(c[..8].try_into().unwrap_or_default());
                let hi = u64::from_le_bytes(c[8..].try_into().unwrap_or_default());
                [lo, hi]
            })
            .collect();
        out.extend(check_function(&f.name, &words)?);
    }
    Ok(out)
}

/// The report `ptxc check` prints: one line per hazard, then `hazards: N`.
pub fn report(hazards: &[Hazard]) -> String {
    let mut s = String::new();
    for h in hazards {
        s.push_str(&h.to_string());
        s.push('\n');
    }
    s.push_str(&format!("hazards: {}\n", hazards.len()));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::sm90a::{Ctrl, encode, parse_instr};

    fn words(lines: &[(&str, Ctrl)]) -> Vec<[u64; 2]> {
        lines
            .iter()
            .enumerate()
            .map(|(k, (t, c))| {
                let mut i = parse_instr(t).unwrap_or_else(|e| panic!("{t}: {e}"));
                i.addr = k as u64 * 16;
                i.ctrl = *c;
                encode(&i).unwrap_or_else(|e| panic!("{t}: {e}"))
            })
            .collect()
    }

    fn ctrl(stall: u8, wbar: u8, rbar: u8, wait: u8) -> Ctrl {
        Ctrl {
            stall,
            yield_: false,
            wbar,
            rbar,
            wait,
            reuse: 0,
        }
    }

    #[test]
    fn missing_wait_and_short_stall_are_reported() {
        let ok = words(&[
            ("S2R R0, SR_TID.X", ctrl(1, 0, 7, 0)),
            ("IADD3 R2, R0, 0x1, RZ", ctrl(5, 7, 7, 1)),
            ("IADD3 R3, R2, 0x1, RZ", ctrl(1, 7, 7, 0)),
            ("EXIT", ctrl(5, 7, 7, 0)),
        ]);
        assert_eq!(check_function("k", &ok).unwrap(), vec![]);
        // The wait on SB0 removed.
        let bad = words(&[
            ("S2R R0, SR_TID.X", ctrl(1, 0, 7, 0)),
            ("IADD3 R2, R0, 0x1, RZ", ctrl(5, 7, 7, 0)),
            ("IADD3 R3, R2, 0x1, RZ", ctrl(1, 7, 7, 0)),
            ("EXIT", ctrl(5, 7, 7, 0)),
        ]);
        let h = check_function("k", &bad).unwrap();
        assert_eq!(h.len(), 1, "{}", report(&h));
        assert_eq!((h[0].addr, h[0].reg.as_str()), (0x10, "R0"));
        assert!(h[0].why.contains("SB0"), "{}", h[0]);
        // Too short a stall for a fixed-latency producer.
        let short = words(&[
            ("S2R R0, SR_TID.X", ctrl(1, 0, 7, 0)),
            ("IADD3 R2, R0, 0x1, RZ", ctrl(1, 7, 7, 1)),
            ("IADD3 R3, R2, 0x1, RZ", ctrl(1, 7, 7, 0)),
            ("EXIT", ctrl(5, 7, 7, 0)),
        ]);
        let h = check_function("k", &short).unwrap();
        assert_eq!(h.len(), 1, "{}", report(&h));
        assert_eq!((h[0].addr, h[0].reg.as_str()), (0x20, "R2"));
        assert!(report(&h).ends_with("hazards: 1\n"));
    }
}
