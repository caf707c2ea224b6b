//! The scoreboard pass: computes every instruction's control word (stall, yield, write and read
//! scoreboards, wait mask, reuse flags) on the final, laid-out instruction stream of a function.
//!
//! It works on [`Instr`]s at their addresses, so it runs the same on ptxc's output and on an
//! instruction stream read back from a ptxas listing (`ptxc asm --recompute-ctrl`). The latency
//! figures come from the data tables of [`crate::target::sm90a::latency`]. `docs/passes/scoreboard.md`
//! explains the pass with examples; in short:
//!
//! 1. **Blocks and edges** from branch targets (`BRA`, `CALL`, `BSSY` targets start blocks;
//!    `BRA`/`EXIT`/`RET`/`CALL`/`BSYNC`/`WARPSYNC`/`BREAK` end them).
//! 2. **Dependencies** by a forward dataflow over the CFG. A variable-latency instruction starts
//!    a *write event* (its results land later) and, if it reads registers, a *read event* (its
//!    sources are released later). The state is the set of pending events with the registers
//!    they cover; at a merge the states are united (conservative). An instruction *needs* the
//!    pending write events of the registers it reads (RAW) or writes (WAW) and the pending read
//!    events of the registers it writes (WAR); a `CALL` out of the function needs everything;
//!    what is pending at a `RET` flows to the instructions after the calls. A needed event
//!    is complete afterwards. Events of one in-order queue (`opcodes.csv`) complete in order, so
//!    waiting for a later one completes the earlier ones of the same block.
//! 3. **Scoreboard allocation, numbered as ptxas does.** Events needed at the same set of
//!    instructions form one group (one scoreboard counter covers them all). A group holds its
//!    scoreboard in layout order, from the issue of its first event to its first wait after
//!    it (to the end of its block when it is waited only before, around a loop). Groups are
//!    coloured in layout order of their first issue with the lowest free scoreboard: write
//!    events of `long` opcodes (global/local memory, textures) search SB2..SB5, everything
//!    else SB0..SB5 (SB1..SB5 in a function that counts on SB0: `LDGDEPBAR`, `UTMACMDFLUSH`).
//!    **When no scoreboard is free** the group joins the scoreboard of the most recently
//!    started active group in its range. Any colouring is correct (the waits are recomputed
//!    from it, and a wait on a shared counter waits for both groups); this one agrees most
//!    with ptxas's numbering.
//! 4. **Wait masks**: a second dataflow with the colours: an instruction waits on the
//!    scoreboards of the events it needs that are still pending; waiting on SBn completes every
//!    pending event on SBn.
//! 5. **Stalls**: the issue cycle of each instruction in its block is the earliest cycle that
//!    respects (a) the read-after-write latency of every fixed-latency producer of a register it
//!    reads (`raw.csv`, also from predecessor blocks through a dataflow of ready times), (b) the
//!    issue distance from every earlier instruction of the block (`issue.csv`: pipe throughput,
//!    branch resolution, the 6-cycle `UCGABAR_ARV` → reader spacing). The stall of an
//!    instruction is the distance to the next one, clamped to 1..=15; a longer gap is reported
//!    so that the caller can insert `NOP`s. When the first instruction of a block must wait for
//!    a result of a predecessor, the wait becomes extra stall at the end of every predecessor.
//! 6. **Yield** (bit 109), by ptxas's rules: never with stall 0 or >= 12; always on stall 1 and on
//!    variable-latency instructions; on fixed-latency ones, clear for a stall of 3 or more, or
//!    when 12 cycles have passed since the last clear bit (the warp must offer to switch at
//!    least every 12 cycles).
//! 7. **Reuse**: an operand's reuse flag is set when the next instruction that reads the same
//!    operand slot reads the same register, with nothing in between that writes it.
//!
//! Stores and `EXIT` never get a write scoreboard (nvdisasm rejects it); `EXIT` gets no read
//! scoreboard either.

// The pass walks instruction indices of blocks and relates several per-instruction tables; index
// loops say that best.
#![allow(clippy::needless_range_loop)]

use crate::target::sm90a::latency::{self, Kind, OpClass, Operand};
use crate::target::sm90a::{Ctrl, Encoded, Instr, OperandKind, Reg, RegFile};
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// One 32-bit register (or predicate, or convergence barrier).
pub type Unit = (RegFile, u8);

/// The registers an instruction reads or writes, inline (more than 8 go to the heap): a vector
/// each for the reads, the writes and the reuse slots were up to three allocations an
/// instruction (with the access buffer reused, `analyze_encoded` went from 11.9M to 9.4M
/// instructions on the straight-line 16k kernel).
pub type Units = SmallVec<[Unit; 8]>;

/// How control leaves an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// To the next instruction.
    Next,
    /// To the target only.
    Jump,
    /// To the target or the next instruction.
    Branch,
    /// Nowhere (an unguarded `EXIT`/`RET`, an indirect jump).
    Stop,
    /// A call: to the target, and back to the next instruction.
    Call,
}

/// What the pass and its users need to know about one instruction.
#[derive(Clone, Debug)]
pub struct Node {
    /// A row of the embedded latency model, or a default class made once for the process
    /// ([`static_class`]): a reference, where the class itself is 120 bytes (a node was 264
    /// bytes with it, and the nodes of the straight-line 64k kernel 9% of its page faults).
    pub class: &'static OpClass,
    /// Registers read (operands, addresses, guard), one entry per 32-bit unit.
    pub reads: Units,
    pub writes: Units,
    /// The guard predicate, when there is one.
    pub guard: Option<Unit>,
    pub flow: Flow,
    /// Index of the branch/call target, if it is inside the function.
    pub target: Option<u32>,
    /// `BSSY`'s reconvergence point (starts a block, but is not an edge).
    pub reconverge: Option<u32>,
    /// Registers in reuse slots: (slot, register) for GPR operands that have a slot.
    pub slots: SmallVec<[(u8, Unit); 4]>,
    /// Part of the padding after the code (`BRA` to itself, then `NOP`s).
    pub padding: bool,
    /// A memory-ordering instruction whose completion the next instruction waits for, with no
    /// register to track ([`next_waits`]): `Some(true)` for a read event (a read scoreboard),
    /// `Some(false)` for a write event.
    pub next_waits: Option<bool>,
    /// A memory operation with no register result whose completion the next barrier waits
    /// for, through a write scoreboard without registers ([`completion_of`]).
    pub completion: bool,
    /// An instruction that waits for the pending completions ([`completion_of`]).
    pub awaits_completions: bool,
    /// A `RET.ABS`: the return of a `.func` in a section of its own (debug builds,
    /// `lower/isel/call.rs`) to a caller that knows nothing of what is in flight here, so it
    /// waits for everything ([`waits_all`]).
    pub returns_out: bool,
}

fn units(reg: Reg, count: u8) -> impl Iterator<Item = Unit> {
    (0..count).map(move |k| (reg.file, reg.num.wrapping_add(k)))
}

fn flow_of(i: &Instr) -> Flow {
    let pred_operand = i.operands.iter().any(|o| {
        o.as_reg().is_some_and(|r| {
            matches!(r.file, RegFile::Pred | RegFile::UPred) && !r.is_zero_or_true()
        })
    });
    let conditional = !i.guard.is_always() || pred_operand;
    match i.mnemonic {
        "BRA" | "JMP" => {
            if conditional {
                Flow::Branch
            } else {
                Flow::Jump
            }
        }
        "EXIT" | "RET" | "KILL" | "BRX" | "JMX" => {
            if conditional && !matches!(i.mnemonic, "BRX" | "JMX") {
                Flow::Next
            } else {
                Flow::Stop
            }
        }
        "CALL" => Flow::Call,
        _ => Flow::Next,
    }
}

/// The consumer name `raw.csv` uses for "the instruction after a branch": every fixed-latency
/// result of a block must be written back before it issues.
pub const AFTER_BRANCH: &str = "after-branch";

/// Whether the instruction after this one (at the branch target or the return point) must find
/// every fixed-latency result of the block written back (`raw.csv` rows `X,after-branch,F`).
pub fn drains(node: &Node) -> bool {
    matches!(
        node.class.class,
        "BRA" | "BRX" | "JMP" | "JMX" | "CALL" | "RET" | "BSYNC" | "BREAK" | "WARPSYNC"
    )
}

/// Whether an instruction ends a basic block.
fn ends_block(i: &Instr) -> bool {
    matches!(
        i.mnemonic,
        "BRA"
            | "JMP"
            | "BRX"
            | "JMX"
            | "EXIT"
            | "RET"
            | "KILL"
            | "CALL"
            | "BSYNC"
            | "WARPSYNC"
            | "BREAK"
            | "BPT"
            | "BSSY"
    )
}

fn target_addr(i: &Instr) -> Option<u64> {
    // `CALL.ABS.NOINC 0x0` calls another section (relocated): no target here.
    if !matches!(i.mnemonic, "BRA" | "JMP" | "CALL" | "BSSY")
        || (i.mnemonic == "CALL" && i.mods.contains(&"ABS"))
    {
        return None;
    }
    i.operands.iter().rev().find_map(|o| match o.kind {
        OperandKind::Int(v) if v >= 0 => Some(v as u64),
        _ => None,
    })
}

/// Analyses a function's instructions (at their addresses).
pub fn analyze(code: &[Instr]) -> Result<Vec<Node>, String> {
    let encoded = code
        .iter()
        .map(|i| Encoded::new(i).map_err(|e| format!("`{i}`: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(analyze_encoded(code, &encoded))
}

/// [`analyze`] of instructions already encoded (`encoded[k]` is `code[k]`'s).
pub fn analyze_encoded(code: &[Instr], encoded: &[Encoded]) -> Vec<Node> {
    analyze_encoded_sharing(code, encoded, None)
}

/// [`analyze_encoded`], where `same[k]` names an earlier instruction equal to instruction `k`
/// but for its address ([`crate::emit::repeats::first_equal`]): its node is copied, with what
/// depends on the position (the padding and what the next instruction waits for) worked out
/// again. The registers, class and flow of an instruction depend on nothing else (a branch
/// target is never shared).
pub fn analyze_encoded_sharing(
    code: &[Instr],
    encoded: &[Encoded],
    same: Option<&[usize]>,
) -> Vec<Node> {
    let m = latency::model();
    // The instruction at a branch target's address: a binary search when the addresses
    // increase (as laid out), else a map (a listing read back may be in any order).
    let increasing = code.windows(2).all(|w| w[0].addr < w[1].addr);
    let by_addr: HashMap<u64, usize> = if increasing {
        HashMap::default()
    } else {
        code.iter().enumerate().map(|(k, i)| (i.addr, k)).collect()
    };
    let at_addr = |a: u64| {
        if increasing {
            code.binary_search_by_key(&a, |i| i.addr).ok()
        } else {
            by_addr.get(&a).copied()
        }
    };
    // Padding: a BRA to itself followed only by NOPs, at the end.
    let mut pad_start = code.len();
    while pad_start > 0 && code[pad_start - 1].mnemonic == "NOP" {
        pad_start -= 1;
    }
    if pad_start > 0 {
        let b = &code[pad_start - 1];
        if b.mnemonic == "BRA" && target_addr(b) == Some(b.addr) && b.guard.is_always() {
            pad_start -= 1;
        } else {
            pad_start = code.len();
        }
    }
    let mut out: Vec<Node> = Vec::with_capacity(code.len());
    let mut classes = ClassCache::default();
    // One buffer for the accesses of every instruction.
    let mut acc = Vec::new();
    for (k, (i, e)) in code.iter().zip(encoded).enumerate() {
        if let Some(j) = same.map(|same| same[k]).filter(|&j| j < k) {
            // Field by field, the register lists copied as slices (`Node::clone` copies them
            // an item at a time: 2.5M of the 45M instructions of the emit stage on the
            // straight-line 16k kernel).
            let from = &out[j];
            let node = Node {
                class: from.class,
                reads: Units::from_slice(&from.reads),
                writes: Units::from_slice(&from.writes),
                guard: from.guard,
                flow: from.flow,
                target: from.target,
                reconverge: from.reconverge,
                slots: SmallVec::from_slice(&from.slots),
                padding: k >= pad_start,
                next_waits: next_waits(i, code.get(k + 1)),
                completion: from.completion,
                awaits_completions: from.awaits_completions,
                returns_out: from.returns_out,
            };
            out.push(node);
            continue;
        }
        let (form, w) = (e.form, e.word);
        crate::target::sm90a::roles::accesses_into(form, &w, &mut acc);
        let guard = (!i.guard.is_always()).then_some((i.guard.pred.file, i.guard.pred.num));
        let mut reads = Units::new();
        let mut writes = Units::new();
        for a in &acc {
            for u in units(a.reg, a.count) {
                if a.write {
                    writes.push(u);
                } else if Some(u) != guard || !reads.contains(&u) {
                    reads.push(u);
                }
            }
        }
        let mut slots = SmallVec::new();
        for (o, spec) in i.operands.iter().zip(form_slots(form, i)) {
            if let (Some(slot), Some(r)) = (spec, o.as_reg())
                && r.file == RegFile::Gpr
                && !r.is_zero_or_true()
            {
                slots.push((slot, (r.file, r.num)));
            }
        }
        let target = target_addr(i).and_then(at_addr).map(|t| t as u32);
        let flow = flow_of(i);
        let completion = completion_of(i, &writes);
        out.push(Node {
            class: classes.class_of(m, i),
            reads,
            writes,
            guard,
            flow,
            target: if i.mnemonic == "BSSY" { None } else { target },
            reconverge: if i.mnemonic == "BSSY" { target } else { None },
            slots,
            padding: k >= pad_start,
            next_waits: next_waits(i, code.get(k + 1)),
            completion,
            awaits_completions: awaits_completions(i),
            returns_out: i.mnemonic == "RET" && i.mods.contains(&"ABS"),
        });
    }
    out
}

/// Memory-ordering instructions that ptxas makes the next instruction wait for, through a
/// scoreboard without registers (counted over the ptxas listings of the corpora, the probes and
/// the project's kernels, `docs/passes/scoreboard.md`):
///
/// * `MEMBAR.*.CTA` sets a read scoreboard that the next instruction waits on (25 of 25: before
///   `FENCE.VIEW.ASYNC.S`, `MEMBAR.ALL.GPU`, `NOP`, `STG`); `MEMBAR.*.GPU`/`.SYS` set none
///   (95 of 95);
/// * `FENCE.VIEW.ASYNC` sets a write scoreboard that a next `BAR` or `SYNCS` waits on (10 of
///   10); before a store or `EXIT` it sets none (5 of 5);
/// * `UTMACMDFLUSH` sets a read scoreboard that the next instruction waits on (8 of 8, a `NOP`
///   after `UTMACCTL.IV`), except before `DEPBAR`/`BRA`, where it releases on SB0 for
///   `DEPBAR.LE SB0, N` ([`assign_nodes`]).
fn next_waits(i: &Instr, next: Option<&Instr>) -> Option<bool> {
    let next = next?;
    match i.mnemonic {
        "MEMBAR" if i.mods.contains(&"CTA") => Some(true),
        "FENCE"
            if i.mods.contains(&"VIEW")
                && i.mods.contains(&"ASYNC")
                && matches!(next.mnemonic, "BAR" | "SYNCS") =>
        {
            Some(false)
        }
        "UTMACMDFLUSH" if !matches!(next.mnemonic, "DEPBAR" | "BRA") => Some(true),
        _ => None,
    }
}

/// Memory operations with no register result that ptxas still gives a write scoreboard, which
/// the next barrier waits on (counted over the ptxas listings of the corpora, the probes and
/// the project's kernels, `docs/passes/scoreboard.md`): `SYNCS.EXCH.64 URZ` (`mbarrier.init`),
/// `SYNCS.CCTL.IV` (`mbarrier.inval`) and an `ATOMG` whose result is `RZ`/`PT`
/// (`atom.global.exch` with the result unused). The event covers no register:
/// [`awaits_completions`] says which instructions wait for it. When nothing waits (the
/// function exits first) it gets no scoreboard, as in ptxas (`k_inval`, `k_init`).
fn completion_of(i: &Instr, writes: &[Unit]) -> bool {
    match i.mnemonic {
        "SYNCS" => i.mods.contains(&"EXCH") || i.mods.contains(&"CCTL"),
        "ATOMG" => writes.is_empty(),
        _ => false,
    }
}

/// The instructions that wait for pending [`completion_of`] events: a CTA barrier (`BAR.SYNC`
/// after `SYNCS.EXCH.64`/`ATOMG`: 27 of 27 in `pyptx/matmul_tma_*` and
/// `pyptx/fa_ws_pingpong`), the cluster barrier `UCGABAR_ARV`, an mbarrier operation other
/// than an init (`SYNCS.ARRIVE.TRANS64` after `SYNCS.EXCH.64` in `mbarrier_test`; a
/// `SYNCS.CCTL.IV` waits for the one before it in `fa_ws_pingpong`) and a matrix store `STSM`
/// (after `SYNCS.CCTL.IV` in `matmul_tma_v34`/`v35`).
fn awaits_completions(i: &Instr) -> bool {
    match i.mnemonic {
        "BAR" | "UCGABAR_ARV" | "STSM" => true,
        "SYNCS" => !i.mods.contains(&"EXCH"),
        _ => false,
    }
}

/// The reuse slot of each operand of `i` (in operand order), from its form.
fn form_slots<'f>(
    form: &'f crate::target::sm90a::Form,
    i: &Instr,
) -> impl Iterator<Item = Option<u8>> + 'f {
    // The form's operand specs include hidden operands; the instruction's operands line up with
    // the specs one to one when the instruction was decoded, and with the visible ones when it
    // was parsed. Match by position among specs, skipping specs whose operand is elided when the
    // counts differ (and no slots when neither count fits). Nothing is collected: two vectors
    // per instruction were 1% of the pass.
    let all = form.ops.len() == i.operands.len();
    let visible = !all && form.ops.iter().filter(|o| o.elide.is_none()).count() == i.operands.len();
    form.ops
        .iter()
        .filter(move |o| all || o.elide.is_none())
        .map(move |o| if all || visible { o.reuse } else { None })
}

/// Names compared by address first: the same `&'static str` (a table's, an instruction
/// selection literal) is equal without comparing its bytes.
fn same_name(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

fn same_names(a: &[&str], b: &[&str]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_name(x, y))
}

/// [`latency::Model::class_of`] remembered for the few distinct opcodes of a function: the
/// model's lookup tries several keys of the mnemonic and modifiers for each instruction (3.9M
/// of the 311M instructions of compiling the straight-line 16k kernel), and a function repeats a
/// handful of them. Only rows of `opcodes.csv` are remembered (the default for an opcode the
/// table does not name comes from the instruction's form).
#[derive(Default)]
struct ClassCache<'a> {
    seen: Vec<(&'static str, &'a [&'static str], &'static OpClass)>,
}

impl<'a> ClassCache<'a> {
    /// The most classes remembered (searched in order: a function that uses more of them looks
    /// the others up each time).
    const MAX: usize = 32;

    fn class_of(&mut self, m: &'static latency::Model, i: &'a Instr) -> &'static OpClass {
        if let Some(at) = self
            .seen
            .iter()
            .position(|(mn, mods, _)| same_name(mn, i.mnemonic) && same_names(mods, &i.mods))
        {
            let c = self.seen[at].2;
            // A hit moves one place towards the front (each key is remembered once): the
            // classes a function repeats gather where the search starts.
            if at > 0 {
                self.seen.swap(at, at - 1);
            }
            return c;
        }
        match m.lookup(i.mnemonic, &i.mods) {
            Some(c) => {
                if self.seen.len() < Self::MAX {
                    self.seen.push((i.mnemonic, &i.mods, c));
                }
                c
            }
            None => static_class(m, i),
        }
    }
}

/// An instruction's class as a reference that lives as long as the process: the row of the
/// embedded model, or for an opcode that `opcodes.csv` does not name, the default class
/// ([`latency::Model::class_of`]), made once for the process and kept (the default depends only
/// on the mnemonic and the form's latency class: a handful of them).
fn static_class(m: &'static latency::Model, i: &Instr) -> &'static OpClass {
    if let Some(c) = m.lookup(i.mnemonic, &i.mods) {
        return c;
    }
    static MADE: std::sync::Mutex<Vec<&'static OpClass>> = std::sync::Mutex::new(Vec::new());
    let class = m.class_of(i);
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&c) = made.iter().find(|c| ***c == class) {
        return c;
    }
    let c: &'static OpClass = Box::leak(Box::new(class));
    made.push(c);
    c
}

/// Basic blocks: `(start, end)` index ranges, and the successors of each block.
#[derive(Clone, Debug)]
pub struct Cfg {
    pub blocks: Vec<(usize, usize)>,
    pub succs: Vec<Vec<usize>>,
    pub preds: Vec<Vec<usize>>,
    /// Block of each instruction.
    pub block_of: Vec<usize>,
    /// Blocks control returns to from a `RET`: those after a `CALL` into the function.
    pub returns_to: Vec<usize>,
}

/// Builds the CFG of a function from its nodes.
pub fn cfg(nodes: &[Node]) -> Cfg {
    let n = nodes.len();
    let mut leader = vec![false; n + 1];
    if n > 0 {
        leader[0] = true;
    }
    for (k, node) in nodes.iter().enumerate() {
        if let Some(t) = node.target.or(node.reconverge).map(|t| t as usize) {
            leader[t] = true;
        }
        if let Some(t) = node.reconverge.map(|t| t as usize) {
            leader[t] = true;
        }
        if node.flow != Flow::Next || matches!(node.class.pipe, "branch" | "conv") {
            leader[k + 1] = true;
        }
    }
    let _ = ends_block;
    let mut blocks = Vec::new();
    let mut start = 0;
    for k in 1..=n {
        if leader[k] || k == n {
            if start < k {
                blocks.push((start, k));
            }
            start = k;
        }
    }
    let mut block_of = vec![0; n];
    for (b, &(s, e)) in blocks.iter().enumerate() {
        for x in block_of.iter_mut().take(e).skip(s) {
            *x = b;
        }
    }
    let mut succs = vec![Vec::new(); blocks.len()];
    for (b, &(_, e)) in blocks.iter().enumerate() {
        let last = &nodes[e - 1];
        let next = (e < n).then(|| block_of[e]);
        let mut s = Vec::new();
        match last.flow {
            Flow::Next | Flow::Call => s.extend(next),
            Flow::Jump => s.extend(last.target.map(|t| block_of[t as usize])),
            Flow::Branch => {
                s.extend(last.target.map(|t| block_of[t as usize]));
                s.extend(next);
            }
            Flow::Stop => {}
        }
        if last.flow == Flow::Call
            && let Some(t) = last.target
        {
            // The callee starts with whatever the caller has in flight.
            s.push(block_of[t as usize]);
        }
        s.dedup();
        succs[b] = s;
    }
    let mut preds = vec![Vec::new(); blocks.len()];
    for (b, s) in succs.iter().enumerate() {
        for &t in s {
            preds[t].push(b);
        }
    }
    let mut returns_to: Vec<usize> = nodes
        .iter()
        .enumerate()
        .filter(|(k, n)| n.flow == Flow::Call && n.target.is_some() && k + 1 < nodes.len())
        .map(|(k, _)| block_of[k + 1])
        .collect();
    returns_to.sort_unstable();
    returns_to.dedup();
    Cfg {
        blocks,
        succs,
        preds,
        block_of,
        returns_to,
    }
}

/// Reverse post-order of the blocks reachable from block 0, then the unreachable ones (called
/// subroutines, dead code) in layout order.
#[inline(never)] // once a function: kept apart in profiles
fn rpo(cfg: &Cfg) -> Vec<usize> {
    let nb = cfg.blocks.len();
    let mut seen = vec![false; nb];
    let mut post = Vec::new();
    let mut roots: Vec<usize> = (0..nb).collect();
    roots.retain(|&b| b == 0 || cfg.preds[b].is_empty());
    for r in roots {
        if seen[r] {
            continue;
        }
        let mut stack = vec![(r, 0usize)];
        seen[r] = true;
        while let Some((b, k)) = stack.pop() {
            if k < cfg.succs[b].len() {
                stack.push((b, k + 1));
                let s = cfg.succs[b][k];
                if !seen[s] {
                    seen[s] = true;
                    stack.push((s, 0));
                }
            } else {
                post.push(b);
            }
        }
    }
    for (b, s) in seen.iter().enumerate() {
        if !s {
            post.insert(0, b);
        }
    }
    post.reverse();
    post
}

// ---------------------------------------------------------------------------------------------
// Scoreboard events

/// An event: the write (results landed) or read (sources released) of a variable-latency
/// instruction. Encoded as `2 * index + (read as u32)`.
type Ev = u32;

fn ev_w(i: usize) -> Ev {
    (2 * i) as Ev
}
fn ev_r(i: usize) -> Ev {
    (2 * i + 1) as Ev
}
fn ev_instr(e: Ev) -> usize {
    (e / 2) as usize
}
fn ev_is_read(e: Ev) -> bool {
    e % 2 == 1
}

/// A pending event and the registers it still covers: their signature ([`signature`]), and the
/// set itself as an index into [`Events::sets`]. The sets are never changed in place (a merge
/// that adds registers makes a new one), so an entry is 24 bytes to copy: with the set inline
/// (a `UnitSet`, 40 bytes with the event) every event an instruction started cloned a
/// `SmallVec`, and dropping or moving entries copied them (with the appending
/// [`State::insert`] and the retiring loop of [`Events::add_own_events`], `assign_nodes` went
/// from 20.0M to 18.7M instructions on the straight-line 16k kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    ev: Ev,
    regs: u32,
    sig: u64,
    /// A rule lets the event be needed without a shared register ([`Info::needed_by_rule`]).
    by_rule: bool,
}

/// Pending events, sorted by event. A sorted vector, not a map: the state holds a handful of
/// events (7.5 on average over the generated straight-line kernel of 8 120 instructions), and
/// straight-line code only ever appends to it.
#[derive(Clone, Debug, Default)]
struct State(Vec<Pending>);

impl State {
    /// Sets the registers of `p.ev`, adding the event if it is not pending.
    fn insert(&mut self, p: Pending) {
        // Straight-line code only appends.
        if self.0.last().is_none_or(|last| last.ev < p.ev) {
            self.0.push(p);
            return;
        }
        match self.0.binary_search_by_key(&p.ev, |x| x.ev) {
            Ok(at) => self.0[at] = p,
            Err(at) => self.0.insert(at, p),
        }
    }
    fn keys(&self) -> impl Iterator<Item = Ev> + '_ {
        self.0.iter().map(|x| x.ev)
    }
}

/// A small ordered set of registers: the few an event covers (measured on the generated
/// straight-line and loop kernels: 8 pending events of under 2 registers each on average). A
/// sorted inline vector does what a `BTreeSet` did here without an allocation per event.
///
/// It also keeps a 64-bit signature of its registers ([`signature`]): two sets whose
/// signatures share no bit share no register, which rejects most pending events in one `AND`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnitSet(SmallVec<[Unit; 8]>, u64);

/// The signature bit of a register: its file and index folded into 0..64.
fn signature_bit(u: &Unit) -> u64 {
    1 << ((u.1 as u32 + 37 * u.0 as u32) % 64)
}

/// The union of the signature bits of some registers.
fn signature<'a>(units: impl IntoIterator<Item = &'a Unit>) -> u64 {
    units.into_iter().fold(0, |s, u| s | signature_bit(u))
}

impl UnitSet {
    pub fn insert(&mut self, u: Unit) -> bool {
        match self.0.binary_search(&u) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, u);
                self.1 |= signature_bit(&u);
                true
            }
        }
    }
    /// Whether the set may hold a register of the signature `sig` (false: it certainly
    /// holds none).
    pub fn meets(&self, sig: u64) -> bool {
        self.1 & sig != 0
    }
    pub fn contains(&self, u: &Unit) -> bool {
        self.0.binary_search(u).is_ok()
    }
    pub fn iter(&self) -> std::slice::Iter<'_, Unit> {
        self.0.iter()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    pub fn is_subset(&self, other: &UnitSet) -> bool {
        // A register whose signature bit `other` lacks is certainly not in `other`. Then one
        // walk over both sorted lists, not a binary search per register: the retiring test of
        // [`Events::add_own_events`] cost 200 instructions a call that way (3.2M on the
        // straight-line 64k kernel).
        let mut rest = other.0.iter();
        self.1 & !other.1 == 0 && self.0.iter().all(|u| rest.any(|v| v == u))
    }
}

impl FromIterator<Unit> for UnitSet {
    fn from_iter<I: IntoIterator<Item = Unit>>(it: I) -> UnitSet {
        let mut v: SmallVec<[Unit; 8]> = it.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        let sig = signature(&v);
        UnitSet(v, sig)
    }
}

impl<'a> IntoIterator for &'a UnitSet {
    type Item = &'a Unit;
    type IntoIter = std::slice::Iter<'a, Unit>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Unites `from` into `into`: whether a register was added, and whether anything was (an event
/// of `from` without registers is added without counting as a change). A union that adds
/// registers to an event's set is a new set in `sets`. (A set is empty exactly when its
/// signature is 0.)
fn merge(into: &mut State, from: &State, sets: &mut Vec<UnitSet>) -> (bool, bool) {
    // The first merge into a block (the only one for a block with one predecessor) copies.
    if into.0.is_empty() {
        into.0.clone_from(&from.0);
        let changed = from.0.iter().any(|p| p.sig != 0);
        return (changed, !from.0.is_empty());
    }
    let mut changed = false;
    let mut modified = false;
    for p in &from.0 {
        match into.0.binary_search_by_key(&p.ev, |x| x.ev) {
            Ok(at) => {
                let slot = &mut into.0[at];
                if slot.regs == p.regs || sets[slot.regs as usize] == sets[p.regs as usize] {
                    continue;
                }
                let mut union = sets[slot.regs as usize].clone();
                let mut added = false;
                for r in &sets[p.regs as usize] {
                    added |= union.insert(*r);
                }
                if added {
                    changed = true;
                    slot.sig = union.1;
                    slot.regs = sets.len() as u32;
                    sets.push(union);
                }
            }
            Err(at) => {
                changed |= p.sig != 0;
                modified = true;
                into.0.insert(at, *p);
            }
        }
    }
    (changed, changed || modified)
}

/// The control word of the padding after the code (`BRA` to itself, `NOP`s) and of anything
/// else that waits for nothing, sets nothing and stalls 0: `[B------:R-:W-:-:S00]`.
const PADDING: Ctrl = Ctrl {
    stall: 0,
    yield_: false,
    wbar: 7,
    rbar: 7,
    wait: 0,
    reuse: 0,
};

/// Whether an instruction waits for everything in flight: `RET.ABS`, and a `CALL` whose callee
/// is not in the function (its reads are unknown). A `CALL` to a subroutine of the function reads
/// the registers live into the subroutine ([`call_reads`]).
fn waits_all(node: &Node) -> bool {
    (node.flow == Flow::Call && node.target.is_none()) || node.returns_out
}

/// The blocks a block's pending events flow to: its successors, and for a `RET` the blocks
/// after the calls into the function (what the subroutine leaves in flight is still in flight
/// when the caller continues; ptxas's `RET` waits for nothing).
fn event_succs<'a>(nodes: &[Node], g: &'a Cfg, b: usize) -> impl Iterator<Item = &'a usize> {
    let (_, e) = g.blocks[b];
    let ret = nodes[e - 1].class.class == "RET";
    g.succs[b]
        .iter()
        .chain(g.returns_to.iter().filter(move |_| ret))
}

/// Whether a call in `nodes` targets code inside the function (what [`call_reads`] patches).
#[inline(never)] // once a function: kept apart in profiles
fn has_local_calls(nodes: &[Node]) -> bool {
    nodes
        .iter()
        .any(|n| n.flow == Flow::Call && n.target.is_some())
}

/// Adds to every `CALL` with a target in the function the registers live at its target (what
/// the callee reads before writing), by a backward liveness over the CFG in which `RET` ends a
/// path and a `CALL` reads what its callee reads; and, as written by the `CALL`, every register
/// the callee writes: a `CALL` waits for the pending reads of those (ptxas: `STS.64 [UR4], R2`
/// `R0`, then `CALL.REL.NOINC` `B0` into a subroutine whose `LDS.64 R2` overwrites `R2`, in
/// `zluda/extern_shared_call`; the corpora gained 13 identical control words, the kernels 1).
pub fn call_reads(nodes: &mut [Node], g: &Cfg) {
    if !has_local_calls(nodes) {
        return;
    }
    let nb = g.blocks.len();
    let mut live_in: Vec<BTreeSet<Unit>> = vec![BTreeSet::new(); nb];
    for _ in 0..100 {
        let mut changed = false;
        for b in (0..nb).rev() {
            let (s, e) = g.blocks[b];
            let mut live: BTreeSet<Unit> = BTreeSet::new();
            let last = &nodes[e - 1];
            for &t in &g.succs[b] {
                // The callee edge does not carry the caller's continuation liveness.
                if last.flow == Flow::Call
                    && last.target.map(|x| g.block_of[x as usize]) == Some(t)
                    && Some(t) != (e < nodes.len()).then(|| g.block_of[e])
                {
                    continue;
                }
                live.extend(live_in[t].iter().copied());
            }
            for k in (s..e).rev() {
                let n = &nodes[k];
                for w in &n.writes {
                    live.remove(w);
                }
                live.extend(n.reads.iter().copied());
                if n.flow == Flow::Call
                    && let Some(t) = n.target
                {
                    live.extend(live_in[g.block_of[t as usize]].iter().copied());
                }
            }
            if live != live_in[b] {
                live_in[b] = live;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // What each subroutine writes: every register written in the blocks reachable from its
    // entry (a `RET` ends a path).
    let clobbers = |t: usize| -> BTreeSet<Unit> {
        let mut seen = vec![false; nb];
        let mut todo = vec![g.block_of[t]];
        let mut out = BTreeSet::new();
        while let Some(b) = todo.pop() {
            if std::mem::replace(&mut seen[b], true) {
                continue;
            }
            let (s, e) = g.blocks[b];
            for n in &nodes[s..e] {
                out.extend(n.writes.iter().copied());
            }
            todo.extend(g.succs[b].iter().copied());
        }
        out
    };
    let calls: Vec<(usize, usize)> = nodes
        .iter()
        .enumerate()
        .filter_map(|(k, n)| (n.flow == Flow::Call).then_some((k, n.target? as usize)))
        .collect();
    let written: Vec<BTreeSet<Unit>> = calls.iter().map(|&(_, t)| clobbers(t)).collect();
    for ((k, t), written) in calls.into_iter().zip(written) {
        let n = &mut nodes[k];
        for u in &live_in[g.block_of[t]] {
            if !n.reads.contains(u) {
                n.reads.push(*u);
            }
        }
        for u in written {
            if !n.writes.contains(&u) {
                n.writes.push(u);
            }
        }
    }
}

/// `USETMAXREG.DEALLOC` (`setmaxnreg.dec`): it has no result, but ptxas gives it a write
/// scoreboard and the next instruction waits on it (`[B------:R-:W0:-:S00]` then `B0`, probe
/// `tests/sass-probes/ptx/setmaxnreg.ptx` and `pyptx/fa_ws_pingpong_sm90a`): nothing runs
/// until the registers are given back. Its write event is needed by every instruction.
fn dealloc(node: &Node) -> bool {
    node.class.class == "USETMAXREG" && node.writes.is_empty()
}

/// Whether an instruction starts events, and which.
fn own_events(_k: usize, node: &Node) -> (bool, bool) {
    if !node.class.kind.is_variable() || node.padding {
        return (false, false);
    }
    if let Some(read) = node.next_waits {
        return (!read, read);
    }
    let store_like = node.writes.is_empty() && !dealloc(node) && !node.completion;
    (!store_like, !node.reads.is_empty())
}

/// Whether an instruction reads its uniform registers after it issues, so that a later writer
/// of one waits on its read scoreboard: the TMA unit's instructions (`UTMALDG`, `UTMASTG`,
/// `UTMACCTL`, `UBLKCP`) and `SYNCS` (`SYNCS.EXCH.64 URZ, [UR8+0xa008], UR16` then
/// `UIADD3 UR16` waits on its read scoreboard in `pyptx/matmul_tma_v33`).
fn reads_uniform_late(node: &Node) -> bool {
    node.class.class == "SYNCS" && node.completion
}

/// The TMA unit's copies and cache controls (`UTMALDG`, `UTMASTG`, `UBLKCP`, `UTMACCTL`) always
/// get a read scoreboard from ptxas, waited on or not (52 of 52 in the listings of the corpora,
/// probes and kernels), and `EXIT` waits for it (`UBLKCP.S.G` … `EXIT` waits `B0` in the bulk
/// copy probes; `UTMASTG.2D` … `EXIT` in `pyptx/matmul_tma_*`): the function may not end
/// before the unit has read the operands.
fn releases_always(node: &Node) -> bool {
    node.class.pipe == "tma" && node.class.class != "UTMACMDFLUSH"
}

/// No in-order queue, or no scoreboard (in [`Info`] and the dense colour tables).
const NONE: u8 = u8::MAX;

/// What the event dataflow asks of an instruction at every step, worked out once per function
/// ([`Events::new`]) instead of at each of the six walks over the function: the flags of the
/// rules, the in-order queues as small numbers instead of names, register signatures, and the
/// register sets of the instruction's own events.
#[derive(Clone, Debug)]
struct Info {
    /// Signatures of the registers written, and of those read or written.
    w_sig: u64,
    rw_sig: u64,
    /// A rule lets it need an event without sharing a register with it: `dealloc`, `exit`,
    /// `awaits_completions` ([`Events::hits`]).
    needs_by_rule: bool,
    /// [`waits_all`], [`dealloc`], `EXIT`, [`Node::awaits_completions`].
    waits_all: bool,
    dealloc: bool,
    exit: bool,
    awaits_completions: bool,
    /// As the instruction of a pending event: [`Node::next_waits`] is set,
    /// [`Node::completion`], [`releases_always`].
    next_waits: bool,
    completion: bool,
    releases_always: bool,
    /// The in-order queue of its results, of its source releases, and the queue by which waits
    /// on its source release reduce (`NONE` for `STS`: ptxas waits on each store, [`step`]).
    queue: u8,
    read_queue: u8,
    release_queue: u8,
    /// The registers of its own write and read events, when it starts them: indices into
    /// [`Events::sets`] (`NO_SET` for none). Most instructions start no event, and an
    /// `Option<UnitSet>` each made an `Info` 136 bytes instead of 40 (3.6% of the page faults
    /// of the straight-line 64k kernel).
    own_write: u32,
    own_read: u32,
    /// Its read event retires the older ones of its read queue that it covers.
    retires: bool,
    /// A rule lets its events be needed without a shared register: `next_waits`,
    /// `completion`, `dealloc`, `releases_always`.
    needed_by_rule: bool,
}

/// No register set ([`Info::own_write`], [`Info::own_read`]).
const NO_SET: u32 = u32::MAX;

/// Bits of [`Events::flags`], one byte per pending event during a step.
const HIT: u8 = 1; // the instruction needs the event (before the reductions)
const NEED: u8 = 2; // it waits for it
const DONE: u8 = 4; // it is complete after the instruction

/// The event dataflow of a function: the per-instruction facts and the scratch space of
/// [`Events::step`], reused from step to step (a step allocates nothing).
struct Events<'a> {
    nodes: &'a [Node],
    block_of: &'a [usize],
    info: Vec<Info>,
    /// The register sets of pending events ([`Pending::regs`]): first those of the events
    /// instructions start ([`Info::own_write`], [`Info::own_read`]), then the unions merges
    /// make.
    sets: Vec<UnitSet>,
    flags: Vec<u8>,
    /// The last needed event of each in-order queue: (queue, read event, block, instruction).
    last: Vec<(u8, bool, usize, usize)>,
    /// The events the last step needed, in order.
    needed: Vec<Ev>,
}

impl<'a> Events<'a> {
    /// The facts of every instruction; `same` as for [`assign_nodes_sharing`].
    #[inline(never)] // once a function: kept apart in profiles
    fn new(nodes: &'a [Node], block_of: &'a [usize], same: Option<&[usize]>) -> Events<'a> {
        let mut names: Vec<&str> = Vec::new();
        let mut id = |q: Option<&'static str>| -> u8 {
            let Some(q) = q else { return NONE };
            match names.iter().position(|n| *n == q) {
                Some(p) => p as u8,
                None => {
                    names.push(q);
                    (names.len() - 1) as u8
                }
            }
        };
        let mut own_sets: Vec<UnitSet> = Vec::new();
        let mut keep = |set: UnitSet| -> u32 {
            own_sets.push(set);
            (own_sets.len() - 1) as u32
        };
        let mut info: Vec<Info> = Vec::with_capacity(nodes.len());
        for (k, node) in nodes.iter().enumerate() {
            // An instruction equal to an earlier one has its facts, and shares its register
            // sets, unless its position changed the events it starts (the padding, what the
            // next instruction waits for).
            if let Some(j) = same.map(|same| same[k]).filter(|&j| j < k)
                && nodes[j].padding == node.padding
                && nodes[j].next_waits == node.next_waits
            {
                info.push(info[j].clone());
                continue;
            }
            info.push({
                let (w, r) = own_events(k, node);
                let late_uniform = reads_uniform_late(node);
                // Only for an instruction that starts a read event (most start none).
                let regs: UnitSet = if r {
                    node.reads
                        .iter()
                        .copied()
                        .filter(|u| u.0 == RegFile::Gpr || (late_uniform && u.0 == RegFile::Ugpr))
                        .collect()
                } else {
                    UnitSet::default()
                };
                let (own_read, retires) = if !r {
                    (NO_SET, false)
                } else if node.next_waits == Some(true)
                    || (regs.is_empty() && releases_always(node))
                {
                    (keep(regs), false)
                } else if !regs.is_empty() {
                    (keep(regs), node.class.read_queue.is_some())
                } else {
                    (NO_SET, false)
                };
                let read_queue = id(node.class.read_queue);
                let w_sig = signature(&node.writes);
                let rw_sig = w_sig | signature(&node.reads);
                let (dealloc, exit) = (dealloc(node), node.class.class == "EXIT");
                Info {
                    needs_by_rule: dealloc || exit || node.awaits_completions,
                    needed_by_rule: node.next_waits.is_some()
                        || node.completion
                        || dealloc
                        || releases_always(node),
                    w_sig,
                    rw_sig,
                    waits_all: waits_all(node),
                    dealloc,
                    exit,
                    awaits_completions: node.awaits_completions,
                    next_waits: node.next_waits.is_some(),
                    completion: node.completion,
                    releases_always: releases_always(node),
                    queue: id(node.class.queue),
                    read_queue,
                    release_queue: if node.class.class == "STS" {
                        NONE
                    } else {
                        read_queue
                    },
                    own_write: if w {
                        keep(node.writes.iter().copied().collect())
                    } else {
                        NO_SET
                    },
                    own_read,
                    retires,
                }
            });
        }
        Events {
            nodes,
            block_of,
            info,
            sets: own_sets,
            flags: Vec::new(),
            last: Vec::new(),
            needed: Vec::new(),
        }
    }

    /// Whether instruction `k` needs the pending event `p`.
    ///
    /// Most pending events share no register with most instructions: when no rule applies to
    /// either side, the signatures alone say no, without the call of [`Events::hits_by_rules`]
    /// (the dataflow asks this 22 times an instruction on the straight-line kernels). The test
    /// reads only the pending entry and `k`'s facts, not those of the event's instruction.
    #[inline]
    fn hits(&self, k: usize, p: &Pending) -> bool {
        let me = &self.info[k];
        if !me.needs_by_rule && !p.by_rule && p.sig & me.rw_sig == 0 {
            return false;
        }
        self.hits_by_rules(k, p.ev, &self.sets[p.regs as usize])
    }

    /// [`Events::hits`], every rule spelled out.
    #[inline(never)]
    fn hits_by_rules(&self, k: usize, e: Ev, regs: &UnitSet) -> bool {
        let node = &self.nodes[k];
        let me = &self.info[k];
        let of = &self.info[ev_instr(e)];
        if of.next_waits {
            ev_instr(e) + 1 == k
        } else if me.dealloc && ev_is_read(e) {
            // Registers are given back: every pending read of a vector register completes
            // first (`USETMAXREG.DEALLOC` waits on the read scoreboard of the `STS.64 … R4`
            // before it in `pyptx/fa_ws_pingpong`; a pending `LDC R1` result is not waited).
            regs.iter().any(|r| r.0 == RegFile::Gpr)
        } else if !ev_is_read(e) && of.completion {
            me.awaits_completions
                || (regs.meets(me.w_sig) && regs.iter().any(|r| node.writes.contains(r)))
        } else if ev_is_read(e) {
            (regs.meets(me.w_sig) && node.writes.iter().any(|r| regs.contains(r)))
                || (me.exit && of.releases_always)
        } else if of.dealloc {
            true
        } else {
            regs.meets(me.rw_sig)
                && node
                    .reads
                    .iter()
                    .chain(&node.writes)
                    .any(|r| regs.contains(r))
        }
    }

    /// The in-order queue by which waits on `e` reduce.
    fn queue_of(&self, e: Ev) -> u8 {
        let i = &self.info[ev_instr(e)];
        if ev_is_read(e) {
            i.release_queue
        } else {
            i.queue
        }
    }

    /// The last needed instruction of `e`'s queue in `e`'s block, when one was needed.
    fn last_of_queue(&self, e: Ev) -> Option<usize> {
        let q = self.queue_of(e);
        if q == NONE {
            return None;
        }
        let b = self.block_of[ev_instr(e)];
        self.last
            .iter()
            .find(|x| x.0 == q && x.1 == ev_is_read(e) && x.2 == b)
            .map(|x| x.3)
    }

    /// One step of the event dataflow: puts the events `k` needs (reduced by in-order
    /// completion) in `self.needed`, updates the state, and returns the scoreboards waited on
    /// (with `colour`, the scoreboard of each event or `NONE`: waiting on one completes every
    /// pending event on it).
    fn step(&mut self, k: usize, state: &mut State, colour: Option<&[u8]>) -> u8 {
        let m = state.0.len();
        self.needed.clear();
        let all = self.info[k].waits_all;
        let first = if all {
            Some(0)
        } else {
            // [`Events::hits`] with `k`'s facts read once, not at every pending event.
            let me = &self.info[k];
            let (by_rule, rw_sig) = (me.needs_by_rule, me.rw_sig);
            state.0.iter().position(|p| {
                (by_rule || p.by_rule || p.sig & rw_sig != 0)
                    && self.hits_by_rules(k, p.ev, &self.sets[p.regs as usize])
            })
        };
        // Most instructions need no pending event: then none completes either.
        let Some(first) = first else {
            self.add_own_events(k, state, colour);
            return 0;
        };
        let mut flags = std::mem::take(&mut self.flags);
        flags.clear();
        flags.resize(m, 0);
        for p in first..m {
            if all || p == first || self.hits(k, &state.0[p]) {
                flags[p] = HIT;
            }
        }
        // Whether the event at `p` is the read event of an instruction whose write event is
        // hit: a write event implies the read event of the same instruction (its sources are
        // read before its results land), and `ev_r(i)` directly follows `ev_w(i)`.
        let write_hit = |flags: &[u8], p: usize| {
            let e = state.0[p].ev;
            ev_is_read(e) && p > 0 && state.0[p - 1].ev == e - 1 && flags[p - 1] & HIT != 0
        };
        for p in 0..m {
            if flags[p] & HIT != 0 && !write_hit(&flags, p) {
                flags[p] |= NEED;
            }
        }
        // In-order queues: of the needed events of one queue in one block, the last one
        // suffices. Not for the source release of a shared-memory store: ptxas waits for each
        // store's read scoreboard, even when a later store's wait would cover it (`@!P4 STS
        // [UR8+0xc], R9` `R3`, `@!P4 STS [UR8+0x1c], R8` `R4`, then `LDC.64 R8` waits
        // `B---34-`, in `pyptx/matmul_tma_v35`; `LDC.64 R8` waits `B3`, then `IMAD.MOV.U32 R3`
        // `B1` for the store of `R3` before them, in `matmul_tma_v33`). Corpora 12 007 → 12 021
        // identical control words (v33 +6, v34 +26, v35 −18), probes +3.
        self.last.clear();
        for p in 0..m {
            let e = state.0[p].ev;
            let q = self.queue_of(e);
            if flags[p] & NEED == 0 || q == NONE {
                continue;
            }
            let (i, read, b) = (ev_instr(e), ev_is_read(e), self.block_of[ev_instr(e)]);
            match self
                .last
                .iter_mut()
                .find(|x| x.0 == q && x.1 == read && x.2 == b)
            {
                Some(x) => x.3 = x.3.max(i),
                None => self.last.push((q, read, b, i)),
            }
        }
        let mut mask = 0u8;
        for p in 0..m {
            let e = state.0[p].ev;
            if flags[p] & NEED == 0 {
                continue;
            }
            if self
                .last_of_queue(e)
                .is_some_and(|last| last != ev_instr(e))
            {
                flags[p] &= !NEED;
                continue;
            }
            self.needed.push(e);
            if let Some(col) = colour
                && col[e as usize] != NONE
            {
                mask |= 1 << col[e as usize];
            }
        }
        // Complete: the needed events, what they imply, and (with colours) everything sharing
        // a waited scoreboard.
        for p in 0..m {
            let e = state.0[p].ev;
            let done = flags[p] & NEED != 0
                || colour.is_some_and(|col| col[e as usize] != NONE && mask >> col[e as usize] & 1 == 1)
                // Read events of an instruction whose write completed.
                || write_hit(&flags, p)
                // Earlier members of a waited in-order queue, in the same block.
                || self.last_of_queue(e).is_some_and(|last| ev_instr(e) <= last);
            if done {
                flags[p] |= DONE;
            }
        }
        // An instruction's sources are released before its results land.
        for p in 0..m {
            let e = state.0[p].ev;
            if flags[p] & DONE != 0 && !ev_is_read(e) && p + 1 < m && state.0[p + 1].ev == e + 1 {
                flags[p + 1] |= DONE;
            }
        }
        // A result lands after its instruction's sources are read, and the LSU reads sources
        // in order: a completed result of an `LDS` also releases the sources of the earlier
        // stores of its block (`STS [UR8+0x34], R2` gets no read scoreboard before `LDS R3,
        // [UR8+0x34]` `W1` and the `LOP3.LUT R3` waiting `B1`, though the `LDS R2` after them
        // overwrites `R2`, at 0x0380 of `pyptx/matmul_tma_v33`; the hazard checker completes
        // them the same way). Not a completed source release alone: ptxas waits on each
        // store's read scoreboard (above). Corpora 11 421 → 11 448 identical control words of
        // 12 112 (optimized code), kernels +10.
        for p in 0..m {
            let e = state.0[p].ev;
            let i = ev_instr(e);
            let q = self.info[i].read_queue;
            if flags[p] & DONE == 0 || ev_is_read(e) || q == NONE {
                continue;
            }
            // Events of earlier instructions come first in the state.
            for x in 0..p {
                let j = ev_instr(state.0[x].ev);
                if ev_is_read(state.0[x].ev)
                    && j < i
                    && self.block_of[j] == self.block_of[i]
                    && self.info[j].read_queue == q
                {
                    flags[x] |= DONE;
                }
            }
        }
        let mut p = 0;
        state.0.retain(|_| {
            p += 1;
            flags[p - 1] & DONE == 0
        });
        self.flags = flags;
        self.add_own_events(k, state, colour);
        mask
    }

    /// The end of [`Events::step`]: the events instruction `k` starts.
    fn add_own_events(&self, k: usize, state: &mut State, colour: Option<&[u8]>) {
        let me = &self.info[k];
        if me.own_write != NO_SET {
            state.insert(self.pending(ev_w(k), me.own_write));
        }
        if me.own_read != NO_SET {
            let regs = &self.sets[me.own_read as usize];
            // Only vector registers are read late; uniform registers and predicates are read at
            // issue, except by the TMA unit and `SYNCS` ([`reads_uniform_late`]).
            if me.retires {
                // A pending read event of the same in-order queue whose registers are all
                // covered by this one was issued before it on every path that brings it here,
                // so it completes first: whatever hits it hits this one too, and waiting for
                // this one is enough. Dropping it keeps the state small (straight-line code
                // issues thousands of loads from one base register, and stores of a few data
                // registers) without making any wait unsafe. Only earlier instructions are
                // dropped, so that in a loop the previous iteration's later events stay as they
                // were.
                let sig = regs.1;
                // `Vec::retain` by hand: the entries are `Copy`, and the loop is half the
                // instructions of `retain`'s (1.7M of the 155.0M of compiling the straight-line
                // 16k kernel, 4 144 calls). The signature test rejects almost every entry, and
                // only it is in the loop: with the whole test inline, the loop kept its values
                // on the stack, 44 instructions an entry (the straight-line 64k kernel's state
                // holds 7 events on average at its 16 000 stores; with the merging
                // `UnitSet::is_subset`, add_own_events 10.2M → 8.9M, callgrind, 2026-12-07).
                let entries = &mut state.0;
                let mut kept = 0;
                for at in 0..entries.len() {
                    let old = entries[at];
                    if old.sig & !sig == 0 && self.retired_by(k, &old, me.own_read, colour) {
                        continue;
                    }
                    entries[kept] = old;
                    kept += 1;
                }
                entries.truncate(kept);
            }
            state.insert(self.pending(ev_r(k), me.own_read));
        }
    }

    /// Whether the read event of instruction `k`, covering the registers of set `regs`,
    /// retires the pending event `old` ([`Events::add_own_events`]), once the signatures
    /// allow it.
    #[inline(never)]
    fn retired_by(&self, k: usize, old: &Pending, regs: u32, colour: Option<&[u8]>) -> bool {
        let e = old.ev;
        ev_is_read(e)
            && ev_instr(e) < k
            && colour.is_none_or(|col| col[e as usize] == NONE)
            && self.info[ev_instr(e)].read_queue == self.info[k].read_queue
            && self.sets[old.regs as usize].is_subset(&self.sets[regs as usize])
    }

    /// The pending event `ev` covering the registers of set `regs`.
    fn pending(&self, ev: Ev, regs: u32) -> Pending {
        Pending {
            ev,
            regs,
            sig: self.sets[regs as usize].1,
            by_rule: self.info[ev_instr(ev)].needed_by_rule,
        }
    }
}

/// What the event dataflow found at each instruction, from the walk of its block with the
/// block's final entry state.
#[derive(Clone, Debug, Default)]
struct Walked {
    /// Per block: `(instruction, event)` for each event an instruction of the block needs, in
    /// layout order, then event order.
    needed: Vec<Vec<(usize, Ev)>>,
    /// Per instruction: the scoreboards it waits on.
    mask: Vec<u8>,
    /// Per block: the pending events before each instruction of the block that `solve` was
    /// asked to look at.
    pending: Vec<Vec<(usize, Vec<Ev>)>>,
}

/// Runs the event dataflow to a fixpoint and returns what it found at each instruction (with
/// the pending events before the instructions `k` with `look[k]`). A block is walked again only
/// when its entry state changed, so the last walk of each block is the one with its final
/// entry state: that walk's results are kept, and no further walk over the function is needed.
fn solve(
    ev: &mut Events,
    g: &Cfg,
    order: &[usize],
    colour: Option<&[u8]>,
    look: &[bool],
) -> Walked {
    let nodes = ev.nodes;
    let nb = g.blocks.len();
    let mut input: Vec<State> = vec![State::default(); nb];
    let mut dirty = vec![true; nb];
    // Entry states that changed since their block's last walk without making it dirty (a
    // merge that adds an event without registers does not count as a change).
    let mut stale = vec![false; nb];
    let mut out = Walked {
        needed: vec![Vec::new(); nb],
        mask: vec![0; nodes.len()],
        pending: vec![Vec::new(); nb],
    };
    let walk = |ev: &mut Events, b: usize, st: &mut State, out: &mut Walked| {
        let (s, e) = g.blocks[b];
        out.needed[b].clear();
        out.pending[b].clear();
        for k in s..e {
            if look.get(k) == Some(&true) {
                out.pending[b].push((k, st.keys().collect()));
            }
            out.mask[k] = ev.step(k, st, colour);
            out.needed[b].extend(ev.needed.iter().map(|&x| (k, x)));
        }
    };
    let mut rounds = 0;
    loop {
        let mut any = false;
        for &b in order {
            if !dirty[b] {
                continue;
            }
            dirty[b] = false;
            stale[b] = false;
            let mut st = input[b].clone();
            walk(ev, b, &mut st, &mut out);
            for &t in event_succs(nodes, g, b) {
                let (changed, modified) = merge(&mut input[t], &st, &mut ev.sets);
                if changed {
                    dirty[t] = true;
                    any = true;
                }
                stale[t] |= modified;
            }
        }
        rounds += 1;
        if !any || rounds > 1000 {
            break;
        }
    }
    for &b in order {
        if stale[b] || dirty[b] {
            let mut st = input[b].clone();
            walk(ev, b, &mut st, &mut out);
        }
    }
    out
}

/// Why an instruction got its control word (for `--explain-ctrl`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Why {
    /// What set the stall count.
    pub stall: StallWhy,
    /// For each waited scoreboard: the instructions (indices) whose events it waits for, with
    /// `r` for a read event.
    pub waits: Vec<(u8, Vec<(usize, bool)>)>,
    /// Cycles beyond the largest stall the next instruction still has to wait.
    pub extra: u32,
    /// The `NOP`s the caller inserts for `extra` (each stalls up to 15 cycles, or up to 11
    /// while waiting for a tensor-core result).
    pub nops: u32,
    /// The wait is for a tensor-core result: the NOPs are `@!UPT UIADD3 URZ, URZ, URZ, URZ`.
    pub tensor_nops: bool,
}

/// What set an instruction's stall count ([`Why::stall`]): the reason, spelled out only when
/// printed (`--explain-ctrl`, `ptxc asm`). Formatting the text for every instruction cost 3.9M
/// of the 311M instructions of compiling the straight-line 16k kernel to a cubin, which never
/// shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StallWhy(Reason);

impl StallWhy {
    /// Whether there is nothing to say (the text is empty).
    pub fn is_empty(&self) -> bool {
        self.0 == Reason::None
    }
}

impl std::fmt::Display for StallWhy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.text())
    }
}

/// The result of the pass for one function.
#[derive(Clone, Debug)]
pub struct Assigned {
    pub ctrl: Vec<Ctrl>,
    pub why: Vec<Why>,
}

/// Which scoreboards a group may use, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Range {
    /// SB0..SB5: short variable-latency results and every source release.
    Low,
    /// SB2..SB5: global, local and generic memory results.
    Long,
    /// SB5 down to SB2: texture results, never shared with other groups.
    Tex,
}

/// Colours event groups: returns the scoreboard of every event that needs one, the wait points
/// of every event, and the event dataflow with these scoreboards when the second pass walked it
/// with the same ones (then [`assign_nodes`] need not walk it again: [`solve`] depends only on
/// the events and the scoreboards, and `look` only adds the pending events it reports).
#[allow(clippy::type_complexity)]
#[inline(never)] // once a function: kept apart in profiles
fn allocate(
    ev: &mut Events,
    g: &Cfg,
    order: &[usize],
    walked: &Walked,
) -> (Vec<u8>, Waits, Option<Walked>) {
    let nodes = ev.nodes;
    // Wait points of every event.
    let mut waits: Waits = BTreeMap::new();
    for &(k, x) in walked.needed.iter().flatten() {
        waits.entry(x).or_default().push(k);
    }
    for w in waits.values_mut() {
        w.sort_unstable();
        w.dedup();
    }
    // Groups: events with the same wait points. Textures keep to their own scoreboards.
    let mut group_of: HashMap<Ev, usize> = HashMap::default();
    let mut groups: Vec<(Vec<Ev>, usize, Range)> = Vec::new(); // events, first issue, range
    // Keyed by the wait points themselves, borrowed from `waits` (a copy of each was an
    // allocation per event).
    let mut by_key: HashMap<(&[usize], bool), usize> = HashMap::default();
    // In event order, which is the order of (instruction, read event).
    for (e, w) in &waits {
        let key: &[usize] = w;
        let class = &nodes[ev_instr(*e)].class;
        let range = if ev_is_read(*e) {
            Range::Low
        } else if class.pipe == "tex" {
            Range::Tex
        } else if class.kind == Kind::Long {
            Range::Long
        } else {
            Range::Low
        };
        let gi = *by_key.entry((key, range == Range::Tex)).or_insert_with(|| {
            groups.push((Vec::new(), ev_instr(*e), range));
            groups.len() - 1
        });
        groups[gi].0.push(*e);
        // A group with a long write event searches SB2..SB5.
        if range == Range::Long {
            groups[gi].2 = Range::Long;
        }
        group_of.insert(*e, gi);
    }
    // Each group's interval in layout order, as ptxas allocates: from its first issue to its
    // first wait after that issue (the wait frees the scoreboard for the instructions after
    // it, whatever other paths still hold). A group waited only before its issue in layout
    // order (carried around a loop, or waited after a branch back) holds its scoreboard to the
    // end of its block. Colouring by live ranges over the CFG instead (a group interferes with
    // everything pending at the same time on any path) agreed less: 90.3 % of the corpora's
    // control words against 90.6 %.
    merge_store_releases(nodes, g, &waits, &mut groups, &mut group_of);
    // A TMA instruction's read event nothing waits for still takes a scoreboard, to the end of
    // its block ([`releases_always`]).
    for (k, node) in nodes.iter().enumerate() {
        if releases_always(node) && !node.padding && !waits.contains_key(&ev_r(k)) {
            groups.push((vec![ev_r(k)], k, Range::Low));
            group_of.insert(ev_r(k), groups.len() - 1);
        }
    }
    let ng = groups.len();
    let end_of: Vec<usize> = (0..ng)
        .map(|gi| {
            let start = groups[gi].1;
            groups[gi]
                .0
                .iter()
                .filter_map(|e| waits.get(e))
                .filter_map(|w| first_from(w, start + 1))
                .min()
                .map(|w| {
                    if groups[gi]
                        .0
                        .iter()
                        .all(|e| ev_is_read(*e) && releases_always(&nodes[ev_instr(*e)]))
                    {
                        w.min(g.blocks[g.block_of[start]].1)
                    } else {
                        w
                    }
                })
                .unwrap_or(g.blocks[g.block_of[start]].1)
        })
        .collect();
    // Greedy colouring in layout order of first issue (optimal for interval graphs).
    // `LDGDEPBAR` counts `cp.async` groups on SB0 (`DEPBAR.LE SB0, N` waits for them), and
    // `UTMACMDFLUSH` releases on SB0 what `DEPBAR.LE SB0, N` waits for: as ptxas does, nothing
    // else uses SB0 in such a function.
    let sb0_reserved = nodes
        .iter()
        .any(|n| matches!(n.class.class, "LDGDEPBAR" | "UTMACMDFLUSH"));
    let low_start = u8::from(sb0_reserved);
    // Two passes: the first colours by layout intervals alone; the second also keeps a group
    // off the scoreboards that are still busy, on some path, where the group is first waited
    // on ([`busy_at_first_wait`], measured with the first pass's colours).
    let first_wait: Vec<Option<usize>> = groups
        .iter()
        .map(|(evs, _, _)| {
            evs.iter()
                .filter_map(|e| waits.get(e).and_then(|w| first_from(w, ev_instr(*e) + 1)))
                .min()
        })
        .collect();
    let mut busy_at_wait: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); ng];
    let mut colour_of_group: Vec<Option<u8>> = vec![None; ng];
    // The first pass's scoreboards and the second pass's walk with them.
    let mut walked_with: Option<(Vec<u8>, Walked)> = None;
    for pass in 0..2 {
        if pass == 1 {
            let colour = colour_map(nodes.len(), &group_of, &colour_of_group);
            let mut look = vec![false; nodes.len()];
            for w in first_wait.iter().flatten() {
                look[*w] = true;
            }
            let coloured = solve(ev, g, order, Some(&colour), &look);
            busy_at_wait = busy_at_first_wait(&coloured, &first_wait, &group_of);
            walked_with = Some((colour, coloured));
        }
        let mut idx: Vec<usize> = (0..ng).collect();
        idx.sort_by_key(|&gi| (groups[gi].1, groups[gi].0.first().map(|e| ev_is_read(*e))));
        colour_of_group = vec![None; ng];
        // Groups holding a scoreboard: (end, group).
        let mut active: Vec<(usize, usize)> = Vec::new();
        for gi in idx {
            if groups[gi].0.is_empty() {
                continue; // merged into another group
            }
            let start = groups[gi].1;
            active.retain(|&(end, _)| end > start);
            // A memory load whose first wait is a `CALL` (an argument the callee reads) counts
            // down from SB5: 127 of 127 such `LDG`/`LD` groups in the ptxas listings of the
            // corpora, probes and kernels are on SB5 (`LDG.E.64 R2` `W5` … `CALL.REL.NOINC` `B5`
            // in `zluda/call`; four `LD.E` `W5` before the `CALL` in `zluda/call_rnd`).
            let into_call = end_of[gi] < nodes.len() && nodes[end_of[gi]].flow == Flow::Call;
            let range: &[u8] = match groups[gi].2 {
                Range::Low => &SB_UP[usize::from(low_start)..],
                Range::Long if into_call => &SB_DOWN[..4],
                Range::Long => &SB_UP[2..],
                Range::Tex => &SB_DOWN[..4],
            };
            // Sets of scoreboards as bit masks (bit `c` = SB`c`), not two `BTreeSet`s and a
            // `Vec` of the range for every group (with the inline wait lists, `allocate` less
            // its walk 1.65M → 1.41M on the straight-line 64k kernel, callgrind, 2026-12-07).
            let set_of = |groups: &mut dyn Iterator<Item = usize>| {
                groups
                    .filter_map(|o| colour_of_group[o])
                    .fold(0u8, |set, c| set | 1 << c)
            };
            let used = set_of(&mut active.iter().map(|&(_, o)| o));
            // Of the free scoreboards, the first not busy where the group is first waited on:
            // `STS.64 [UR8], R8` / `STS [UR8+0x8], R2` take `R5` at 0x0300 of
            // `pyptx/matmul_tma_v33`, with SB1 and SB3 free in layout order but still held, on
            // the path that skips their block, by the stores at 0x0270 and 0x0280 when the
            // `LDS R2` at the join (0x0360) waits on the group.
            let busy = set_of(&mut busy_at_wait[gi].iter().copied());
            let free = |set: u8, c: u8| set >> c & 1 == 0;
            let pick = range
                .iter()
                .find(|&&c| free(used, c) && free(busy, c))
                .or_else(|| range.iter().find(|&&c| free(used, c)));
            let c = match pick {
                Some(c) => *c,
                None => {
                    // Share with the most recently started active group in range.
                    active
                        .iter()
                        .filter(|&&(_, o)| colour_of_group[o].is_some_and(|c| range.contains(&c)))
                        .max_by_key(|&&(_, o)| groups[o].1)
                        .and_then(|&(_, o)| colour_of_group[o])
                        .unwrap_or(range[range.len() - 1])
                }
            };
            colour_of_group[gi] = Some(c);
            active.push((end_of[gi], gi));
        }
    }
    let colour = colour_map(nodes.len(), &group_of, &colour_of_group);
    let walked = walked_with.and_then(|(used, w)| (used == colour).then_some(w));
    (colour, waits, walked)
}

/// The scoreboards in the orders the ranges try them ([`Range`]): up from SB0, down from SB5.
const SB_UP: [u8; 6] = [0, 1, 2, 3, 4, 5];
const SB_DOWN: [u8; 6] = [5, 4, 3, 2, 1, 0];

/// The wait points of every event that is waited on: the instructions that wait for it, in
/// layout order, each once. Inline vectors, not `BTreeSet`s: most events are waited on once,
/// and a set's node was an allocation of 100 bytes per event.
type Waits = BTreeMap<Ev, SmallVec<[usize; 2]>>;

/// The first of the sorted wait points `w` at `from` or after.
fn first_from(w: &[usize], from: usize) -> Option<usize> {
    w[w.partition_point(|&x| x < from)..].first().copied()
}

/// The scoreboard of every event, from its group's: a table indexed by event (of a function of
/// `n` instructions), `NONE` for an event without one.
fn colour_map(n: usize, group_of: &HashMap<Ev, usize>, colour_of_group: &[Option<u8>]) -> Vec<u8> {
    let mut colour = vec![NONE; 2 * n];
    for (e, gi) in group_of {
        if let Some(c) = colour_of_group[*gi] {
            colour[*e as usize] = c;
        }
    }
    colour
}

/// For each group, the other groups with an event still pending, on some path, at the group's
/// first wait (`first_wait`), by the event dataflow with the scoreboards `colour` (a wait on a
/// scoreboard completes every event on it). ptxas keeps a group off their scoreboards, so that
/// the wait at a join does not also wait for what another path left in flight.
fn busy_at_first_wait(
    coloured: &Walked,
    first_wait: &[Option<usize>],
    group_of: &HashMap<Ev, usize>,
) -> Vec<BTreeSet<usize>> {
    let mut at: HashMap<usize, Vec<usize>> = HashMap::default(); // wait point → groups
    for (gi, w) in first_wait.iter().enumerate() {
        if let Some(w) = w {
            at.entry(*w).or_default().push(gi);
        }
    }
    let mut busy = vec![BTreeSet::new(); first_wait.len()];
    for (k, pending) in coloured.pending.iter().flatten() {
        if let Some(gs) = at.get(k) {
            for x in pending {
                if let Some(&o) = group_of.get(x) {
                    for &gi in gs {
                        if o != gi {
                            busy[gi].insert(o);
                        }
                    }
                }
            }
        }
    }
    busy
}

/// Shared-memory stores of one block release their sources on one scoreboard: the read event
/// of an `STS` joins the group of the previous `STS` of its block when nothing waited on that
/// group in between. The LSU reads the sources of its instructions in order, so a wait for the
/// later store covers the earlier one. ptxas does this: of the 130 pairs of consecutive `STS`
/// with read scoreboards in one block of the corpora's listings, 116 share the scoreboard
/// (`@!P4 STS [UR8+0x1c], R7` / `[UR8+0x20], R5` / `[UR8+0x24], R6`, all `R4`, in
/// `pyptx/matmul_tma_v33`). Not when the previous group is first waited on in this block or
/// the next ([`first_wait_near`]): corpora 11 937 → 12 007 identical control words.
fn merge_store_releases(
    nodes: &[Node],
    g: &Cfg,
    waits: &Waits,
    groups: &mut [(Vec<Ev>, usize, Range)],
    group_of: &mut HashMap<Ev, usize>,
) {
    let mut prev: Option<usize> = None; // the previous store's instruction
    for k in 0..nodes.len() {
        if nodes[k].class.class != "STS" || !waits.contains_key(&ev_r(k)) {
            continue;
        }
        if let Some(p) = prev
            && g.block_of[p] == g.block_of[k]
            && let (Some(&gp), Some(&gk)) = (group_of.get(&ev_r(p)), group_of.get(&ev_r(k)))
            && gp != gk
        {
            // No wait on the previous store's group between it and this store.
            let waited_between = groups[gp]
                .0
                .iter()
                .filter_map(|e| waits.get(e))
                .any(|w| first_from(w, p + 1).is_some_and(|x| x <= k));
            if !waited_between && !first_wait_near(g, waits, &groups[gp].0, k) {
                let moved = std::mem::take(&mut groups[gk].0);
                for e in &moved {
                    group_of.insert(*e, gp);
                }
                groups[gp].0.extend(moved);
                groups[gp].1 = groups[gp].1.min(groups[gk].1);
                if groups[gk].2 == Range::Long {
                    groups[gp].2 = Range::Long;
                }
            }
        }
        prev = Some(k);
    }
}

/// Whether the first wait on a group of read events (each member's first wait after its
/// issue, in layout order) is in the block of instruction `k` or in a successor of that block.
/// ptxas does not let a store share the scoreboard of a group it would then be waited with so
/// soon: `@!P4 STS [UR8+0x38], R3` / `[UR8+0xc], R8` / `[UR8+0x1c], R7` take `R1`, `R3`, `R4`
/// (their first waits, `IMAD.MOV.U32 R3` at 0x02f0 and `LDC.64 R8` at 0x02e0, are in the next
/// block), and `[UR8+0x20], R5` / `[UR8+0x24], R6` join `R4`, first waited at 0x0580
/// (`pyptx/matmul_tma_v33`; the same in v34 and v35).
fn first_wait_near(g: &Cfg, waits: &Waits, group: &[Ev], k: usize) -> bool {
    let first = group
        .iter()
        .filter_map(|e| waits.get(e).and_then(|w| first_from(w, ev_instr(*e) + 1)))
        .min();
    first.is_some_and(|w| {
        let b = g.block_of[k];
        g.block_of[w] == b || g.succs[b].contains(&g.block_of[w])
    })
}

/// Ready times of fixed-latency results at block boundaries: register → (cycles still to wait
/// from the block's first issue cycle, producer index).
type Ready = BTreeMap<Unit, (i64, usize)>;

/// How to compute control words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// ptxas's debug scheme (`ptxas -g`, `.target sm_90a, debug`), see [`serial_ctrl`]: every
    /// instruction waits on SB0 and SB1 and stalls 15 cycles; variable-latency instructions set
    /// SB0 for results and SB1 for sources. Slow and trivially correct.
    pub serial: bool,
}

/// Computes the control words of a function's instructions.
pub fn assign(code: &[Instr]) -> Result<Assigned, String> {
    let nodes = analyze(code)?;
    Ok(assign_nodes(code, &nodes, Options::default()))
}

/// The control word ptxas gives an instruction under `-g` (measured on ptxas's own `-g`
/// listings of the corpora, the probes and the project's kernels; `docs/passes/scoreboard.md`,
/// "Under -g"):
///
/// * every instruction `[B01----:R-:W-:-:S15]`: waits on SB0 and SB1, stalls 15, never
///   yields, never reuses;
/// * variable-latency instructions (loads, `S2R`, `MUFU`, conversions, atomics, `SYNCS`, …) set
///   SB0 for their results and SB1 for their sources: `[B01----:R1:W0:-:S15]`. Atomics and
///   `SYNCS` set SB0 even when the result is `RZ`/`PT` or absent; stores, reductions, TMA and
///   `ARRIVES` (no result) set only SB1;
/// * `MEMBAR` and `BAR` set SB1 (`[B01----:R1:W-:-:S15]`), except the `MEMBAR.SC.VC` of the
///   exit bookend, which waits for nothing and stalls 0 (`[B------:R-:W-:-:S00]`);
/// * `CCTL.IVALL` sets nothing; `FENCE.VIEW.ASYNC` sets SB0 only (`[B01----:R-:W0:-:S15]`);
/// * `ERRBAR`, `HMMA` and `IMMA` stall 0 (`[B01----:R-:W-:-:S00]`);
/// * `EXIT` sets nothing;
/// * `WARPGROUP.DEPBAR` waits for nothing (`[B------:R-:W-:-:S15]`);
/// * an instruction that never executes (`@!PT LDS RZ, [RZ]`, the padding before a fence)
///   gets `[B------:R-:W-:Y:S01]`;
/// * the padding after the code (`BRA` to itself, `NOP`s) gets `[B------:R-:W-:-:S00]`.
pub fn serial_ctrl(i: &Instr, node: &Node) -> Ctrl {
    if node.padding {
        return PADDING;
    }
    if i.guard.neg && i.guard.pred.num == 7 {
        return Ctrl {
            stall: 1,
            yield_: true,
            ..PADDING
        };
    }
    let mut c = Ctrl {
        stall: 15,
        wait: 0b11,
        ..PADDING
    };
    let reads_regs = node.reads.iter().any(|u| Some(*u) != node.guard);
    match i.mnemonic {
        "MEMBAR" if i.mods.contains(&"VC") => return PADDING,
        "MEMBAR" | "BAR" => c.rbar = 1,
        "ERRBAR" | "HMMA" | "IMMA" => c.stall = 0,
        "EXIT" => {}
        // `WARPGROUP.DEPBAR` takes no wait mask (nvdisasm rejects one:
        // tests/sass-probes/ctrlrules.txt): ptxas -g gives it `[B------:R-:W-:-:S15]`
        // (pyptx/fa_ws_pingpong_sm90a under -g, 87 of them).
        "WARPGROUP" if i.mods.contains(&"DEPBAR") => c.wait = 0,
        "FENCE" if !reads_regs => c.wbar = 0,
        "CCTL" if !reads_regs => {}
        // ptxas -g: `LDGSTS` and `LDGDEPBAR` are `[B01----:R1:W0:-:S15]` (probe
        // tests/sass-probes/ptx/cp_async.ptx under -g); `LDGDEPBAR` must count its group on
        // SB0 for `DEPBAR.LE SB0, N`.
        "ATOM" | "ATOMS" | "ATOMG" | "SYNCS" | "LDGSTS" | "LDGDEPBAR" => {
            c.wbar = 0;
            c.rbar = 1;
        }
        // `USETMAXREG.DEALLOC`: the next instruction waits for it (as in the scheduled scheme).
        "USETMAXREG" => c.wbar = 0,
        // A subroutine's barrier save and restore (passes/prologue.rs): `BMOV R, B` has no read
        // scoreboard and `BMOV B, R` no write scoreboard (their forms, `forms/mod.rs`).
        "BMOV" => {
            let barrier = |u: &Unit| u.0 == RegFile::Barrier;
            if !node.writes.iter().all(barrier) {
                c.wbar = 0;
            }
            if !node.reads.iter().all(barrier) {
                c.rbar = 1;
            }
        }
        _ if node.class.kind.is_variable() => {
            if !node.writes.is_empty() {
                c.wbar = 0;
            }
            c.rbar = 1;
        }
        _ => {}
    }
    c
}

/// The serial scheme of [`Options::serial`]: [`serial_ctrl`] for each instruction.
fn assign_serial(code: &[Instr], nodes: &[Node]) -> Assigned {
    let ctrl = code
        .iter()
        .zip(nodes)
        .map(|(i, n)| serial_ctrl(i, n))
        .collect();
    let why = nodes
        .iter()
        .map(|_| Why {
            stall: StallWhy(Reason::Text("serial (debug) scheme")),
            ..Why::default()
        })
        .collect();
    Assigned { ctrl, why }
}

/// [`assign`] on analysed nodes.
pub fn assign_nodes(code: &[Instr], nodes: &[Node], opts: Options) -> Assigned {
    assign_nodes_sharing(code, nodes, opts, None)
}

/// [`assign_nodes`], where `same[k]` names an earlier instruction equal to instruction `k` but
/// for its address ([`crate::emit::repeats::first_equal`], as for
/// [`analyze_encoded_sharing`]): the per-instruction facts of the dataflow and the timing are
/// copied from it instead of worked out again.
pub fn assign_nodes_sharing(
    code: &[Instr],
    nodes: &[Node],
    opts: Options,
    same: Option<&[usize]>,
) -> Assigned {
    if opts.serial {
        return assign_serial(code, nodes);
    }
    let n = nodes.len();
    let m = latency::model();
    let mut why: Vec<Why> = std::iter::repeat_with(Why::default).take(n).collect();
    let mut ctrl = vec![
        Ctrl {
            stall: 1,
            yield_: true,
            wbar: 7,
            rbar: 7,
            wait: 0,
            reuse: 0,
        };
        n
    ];
    if n == 0 {
        return Assigned { ctrl, why };
    }
    let g = cfg(nodes);
    let order = rpo(&g);
    // Copied only for [`call_reads`] to patch (a copy of every node of a function without
    // calls was 1% of a large kernel's compile).
    let patched: std::borrow::Cow<[Node]> = if has_local_calls(nodes) {
        let mut patched = nodes.to_vec();
        call_reads(&mut patched, &g);
        std::borrow::Cow::Owned(patched)
    } else {
        std::borrow::Cow::Borrowed(nodes)
    };
    let nodes = &patched[..];
    // Patched `CALL`s differ from equal ones elsewhere: nothing is shared then (calls are
    // never shared anyway, but this keeps the rule simple).
    let same = same.filter(|_| matches!(patched, std::borrow::Cow::Borrowed(_)));

    // Scoreboards.
    let mut events = Events::new(nodes, &g.block_of, same);
    let first_walk = solve(&mut events, &g, &order, None, &[]);
    let (colour, _, coloured) = allocate(&mut events, &g, &order, &first_walk);
    drop(first_walk);
    // The walk with the final scoreboards, unless `allocate` already made it (the second
    // colouring pass usually keeps the first pass's scoreboards: one walk of three saved).
    let walked = match coloured {
        Some(w) => w,
        None => solve(&mut events, &g, &order, Some(&colour), &[]),
    };
    // What is freed here (the first walk, the per-instruction facts of the dataflow) serves the
    // timing's vectors below instead of new pages.
    drop(events);
    for k in 0..n {
        ctrl[k].wait |= walked.mask[k];
    }
    for &(k, ev) in walked.needed.iter().flatten() {
        let c = colour[ev as usize];
        if c == NONE {
            continue;
        }
        let p = ev_instr(ev);
        match why[k].waits.iter_mut().find(|(sb, _)| *sb == c) {
            Some((_, v)) => v.push((p, ev_is_read(ev))),
            None => why[k].waits.push((c, vec![(p, ev_is_read(ev))])),
        }
    }
    drop(walked);
    for (e, &c) in colour.iter().enumerate() {
        let k = ev_instr(e as Ev);
        if c == NONE {
            continue;
        }
        if ev_is_read(e as Ev) {
            ctrl[k].rbar = c;
        } else {
            ctrl[k].wbar = c;
        }
    }
    for (k, node) in nodes.iter().enumerate() {
        // nvdisasm's rules: no write scoreboard on stores and EXIT, no read scoreboard on EXIT.
        if (node.writes.is_empty()
            && !dealloc(node)
            && !node.completion
            && node.next_waits != Some(false))
            || node.class.class == "EXIT"
        {
            ctrl[k].wbar = 7;
        }
        // `UTMACMDFLUSH` before `DEPBAR.LE SB0, N` (or a branch to it) releases on SB0, which
        // the `DEPBAR` counts (13 of 13 in the ptxas listings; SB0 is reserved for it).
        if node.class.class == "UTMACMDFLUSH" && node.next_waits.is_none() {
            ctrl[k].rbar = 0;
        }
        if node.class.class == "EXIT" {
            ctrl[k].rbar = 7;
        }
        // `BMOV.32 Bn, R` (a subroutine's barrier restore, passes/prologue.rs) cannot set a
        // write scoreboard (its form has none, `forms/mod.rs`); ptxas covers its result with
        // stalls (issue.csv `BMOV,RET`).
        if node.class.class == "BMOV"
            && !node.writes.is_empty()
            && node.writes.iter().all(|u| u.0 == RegFile::Barrier)
        {
            ctrl[k].wbar = 7;
        }
        // `LDGDEPBAR` closes a group of `LDGSTS` copies and counts it on SB0, which
        // `DEPBAR.LE SB0, N` waits for (it has no registers to track).
        if node.class.class == "LDGDEPBAR" {
            ctrl[k].wbar = 0;
        }
        why[k].waits.sort();
    }

    // An instruction that waits on a scoreboard the instruction just before it set issues at
    // least 2 cycles after it ([`SB_SET_TO_WAIT`]).
    let waits_on_prev: Vec<bool> = (0..n)
        .map(|k| {
            k > 0
                && !dealloc(&nodes[k - 1])
                && why[k]
                    .waits
                    .iter()
                    .any(|(_, ps)| ps.iter().any(|&(p, _)| p == k - 1))
        })
        .collect();
    // A block that falls through into a join (a block that other blocks branch to) drains its
    // results as a branch does.
    let falls_into_join: Vec<bool> = (0..g.blocks.len())
        .map(|b| {
            let (_, e) = g.blocks[b];
            e < n
                && nodes[e - 1].flow == Flow::Next
                && !drains(&nodes[e - 1])
                && g.preds[g.block_of[e]].len() > 1
        })
        .collect();
    // Stalls: issue times per block, with ready times flowing between blocks.
    // Ready times flow along the edges (not into a callee); a block whose first instruction
    // must wait for a result of a predecessor gets the wait as extra stall at the end of every
    // predecessor (`pad`), and the rounds repeat until nothing changes.
    let nb = g.blocks.len();
    let mut outs: Vec<Ready> = vec![Ready::new(); nb];
    let mut pad = vec![0i64; nb];
    let mut issue = vec![0i64; n + 1];
    let mut reason: Vec<Reason> = vec![Reason::None; n];
    let mut memo = Memo::new(m, code, nodes, same);
    // The entry (ready times, pad) each block was last timed with: a block whose entry did not
    // change is not timed again (its results would be the same).
    let mut timed_with: Vec<Option<(Ready, i64)>> = vec![None; nb];
    let mut gap_after = vec![1i64; n];
    let mut cap = vec![15i64; n];
    let mut writers = LastWriters::new();
    for _round in 0..64 {
        let mut changed = false;
        for &b in &order {
            let (s, e) = g.blocks[b];
            let mut ready_in = Ready::new();
            for &p in &g.preds[b] {
                let (_, pe) = g.blocks[p];
                if nodes[pe - 1].flow == Flow::Call {
                    continue;
                }
                for (u, (left, x)) in &outs[p] {
                    let slot = ready_in.entry(*u).or_insert((i64::MIN, *x));
                    if *left > slot.0 {
                        *slot = (*left, *x);
                    }
                }
            }
            if timed_with[b].as_ref() != Some(&(ready_in.clone(), pad[b])) {
                let out = time_block(
                    code,
                    nodes,
                    &mut memo,
                    s,
                    e,
                    &ready_in,
                    pad[b],
                    falls_into_join[b],
                    &waits_on_prev,
                    &mut issue,
                    &mut reason,
                    &mut gap_after,
                    &mut cap,
                    &mut writers,
                );
                timed_with[b] = Some((ready_in, pad[b]));
                if out != outs[b] {
                    outs[b] = out;
                    changed = true;
                }
            }
            if issue[s] > 0 {
                for &p in &g.preds[b] {
                    let (_, pe) = g.blocks[p];
                    if nodes[pe - 1].flow == Flow::Call {
                        continue;
                    }
                    pad[p] += issue[s];
                }
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for k in 0..n {
        let (s, e) = g.blocks[g.block_of[k]];
        let _ = s;
        let gap = if k + 1 < e {
            issue[k + 1] - issue[k]
        } else {
            gap_after[k]
        };
        let gap = gap.max(1);
        let cap = cap[k];
        if gap > cap {
            why[k].extra = (gap - cap) as u32;
            why[k].nops = why[k].extra.div_ceil(cap as u32);
            why[k].tensor_nops = cap == 11;
        }
        ctrl[k].stall = gap.min(cap) as u8;
        why[k].stall = StallWhy(reason[k]);
        // `USETMAXREG.DEALLOC` stalls 0: the next instruction waits on its scoreboard anyway
        // (`[B------:R-:W1:-:S00]`, 5 of 5 in `pyptx/fa_ws_pingpong` and the setmaxnreg probe).
        // `ERRBAR` issues together with the `CGAERRBAR` after it: stall 0 (80 of 80 pairs in
        // the listings of the corpora, probes and kernels, `[B------:R-:W-:-:S00]`).
        if nodes[k].class.class == "ERRBAR" && k + 1 < n && nodes[k + 1].class.class == "CGAERRBAR"
        {
            ctrl[k].stall = 0;
            why[k].stall = StallWhy(Reason::Text("issues together with the CGAERRBAR after it"));
        }
        if dealloc(&nodes[k]) && k + 1 < n && ctrl[k + 1].wait >> ctrl[k].wbar & 1 == 1 {
            ctrl[k].stall = 0;
            why[k].stall = StallWhy(Reason::Text(
                "the next instruction waits for the registers to be given back",
            ));
        }
    }

    // Padding: BRA self and NOPs with stall 0.
    for (k, node) in nodes.iter().enumerate() {
        if node.padding {
            ctrl[k] = PADDING;
            why[k].stall = StallWhy(Reason::Text("padding"));
        }
    }

    // Yield.
    let tensor_capped: Vec<bool> = (0..n)
        .map(|k| cap[k] == 11 && ctrl[k].stall == 11)
        .collect();
    yield_bits(code, nodes, &g, &tensor_capped, &mut ctrl);

    // Reuse.
    reuse_flags(nodes, &g, &mut ctrl);

    Assigned { ctrl, why }
}

/// Whether an instruction never executes: guarded by `@!PT` (ptxas's `@!PT LDS RZ, [RZ]` before
/// a fence). It takes no pipe slot: ptxas issues the next instruction of the pipe one cycle
/// later (three `@!PT LDS` in a row at stall 1 in `zluda/cp_async`, where every other pair of
/// shared-memory instructions of the corpora, probes and kernels is at least 4 cycles apart).
pub fn never_runs(i: &Instr) -> bool {
    i.guard.neg && i.guard.pred == crate::target::sm90a::PT
}

/// The pseudo-class of "the instruction after a branch".
fn after_branch_class() -> OpClass {
    OpClass {
        opcode: AFTER_BRANCH,
        class: AFTER_BRANCH,
        pipe: AFTER_BRANCH,
        kind: Kind::Ctrl,
        queue: None,
        read_queue: None,
        source: "",
        ids: None,
    }
}

/// The stall after the last instruction of a block (before whatever comes next).
fn block_end_gap(nodes: &[Node], m: &latency::Model, k: usize) -> i64 {
    let node = &nodes[k];
    // The issue table's row for this instruction followed by anything.
    let any = OpClass {
        opcode: "*",
        class: "*",
        pipe: "*",
        kind: Kind::Fixed,
        queue: None,
        read_queue: None,
        source: "",
        ids: None,
    };
    let gap = m.issue_gap(node.class, &any) as i64;
    if k + 1 < nodes.len() {
        gap.max(m.issue_gap(node.class, nodes[k + 1].class) as i64)
    } else {
        gap
    }
}

/// The fewest cycles between an instruction that sets a scoreboard and the next instruction
/// when that one waits on it: over the ptxas listings of the corpora, probes and kernels, 796
/// such adjacent pairs, none 1 cycle apart (462 at 2; the 4 at 0 are `USETMAXREG.DEALLOC`, whose
/// next instruction issues in the same cycle). Before, 35 stalls of 1 (`SYNCS.EXCH.64` then
/// `BAR.SYNC`, `STL` then `LDC`) differed.
const SB_SET_TO_WAIT: i64 = 2;

/// The fewest cycles between a tensor-core MMA and an instruction that overwrites one of its
/// source registers.
const TENSOR_WAR: i64 = 7;

/// A `NOP` the emitter inserted for a wait for a tensor-core result: `@!UPT UIADD3 URZ, URZ,
/// URZ, URZ`, an instruction that never runs.
fn is_wait_nop(i: &Instr) -> bool {
    i.mnemonic == "UIADD3" && i.guard.neg && i.guard.pred == crate::target::sm90a::UPT
}

/// What set an instruction's stall ([`Why::stall`]), spelled out only when printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Reason {
    #[default]
    None,
    /// A fixed text (the padding, the serial scheme, a rule of its own).
    Text(&'static str),
    Next,
    Overwrites(usize),
    IssueDistance(usize),
    WaitsOn(usize),
    Reads(usize),
    ReadsEarlier(usize),
    EndOfBlock,
    WrittenBack(usize),
    NextBlockOverwrites(usize),
    InFlight(i64),
}

impl Reason {
    fn text(self) -> String {
        match self {
            Reason::None => String::new(),
            Reason::Text(t) => t.into(),
            Reason::Next => "the next instruction may issue 1 cycle later".into(),
            Reason::Overwrites(x) => format!("the next instruction overwrites a source of #{x}"),
            Reason::IssueDistance(x) => {
                format!("issue distance of the next instruction from #{x}")
            }
            Reason::WaitsOn(x) => {
                format!("the next instruction waits on a scoreboard set by #{x}")
            }
            Reason::Reads(p) => format!("the next instruction reads a result of #{p}"),
            Reason::ReadsEarlier(p) => {
                format!("the next instruction reads a result of #{p} (earlier block)")
            }
            Reason::EndOfBlock => "end of block (issue distance to any next instruction)".into(),
            Reason::WrittenBack(p) => {
                format!("results of #{p} written back before the branch target")
            }
            Reason::NextBlockOverwrites(x) => {
                format!("a next block may overwrite a source of #{x}")
            }
            Reason::InFlight(pad) => format!(
                "a next block's first instruction reads a result still in flight ({pad} cycles)"
            ),
        }
    }
}

/// The latency model's answers for the instructions of one function, remembered in tables
/// indexed by the function's distinct classes: the timing asks for the same few pairs at every
/// instruction, and a table lookup is cheaper than the model's own memo (a thread-local map).
/// What [`time_block`] asks of an instruction for every pair in its issue window, kept
/// together in one record so that the inner loop reads one entry (and checks one bound) per
/// earlier instruction rather than four separate vectors.
#[derive(Clone, Copy)]
struct PairFacts {
    /// Signatures of the registers it reads and writes ([`signature`]: pairs whose
    /// signatures share no bit share no register).
    read_sig: u64,
    write_sig: u64,
    /// Whether it is a tensor-core instruction.
    tensor: bool,
    /// [`never_runs`].
    never: bool,
}

struct Memo<'m> {
    m: &'m latency::Model,
    nodes: &'m [Node],
    /// The number of each instruction's class among the function's distinct classes.
    class: Vec<usize>,
    classes: usize,
    /// `issue.csv` cycles of (first, second) class, when known: `Some(None)` for no row.
    issue: Vec<Option<Option<u8>>>,
    /// [`raw_distance`] of (producer, consumer, operand), when known.
    raw: Vec<Option<i64>>,
    /// Per instruction, what [`time_block`] asks of every pair in its issue window, worked
    /// out once ([`PairFacts`]).
    facts: Vec<PairFacts>,
    /// The most cycles an issue distance or [`TENSOR_WAR`] keeps after an instruction.
    reach: i64,
}

impl<'m> Memo<'m> {
    /// The tables of a function; `same` as for [`assign_nodes_sharing`] (an instruction equal
    /// to an earlier one has its class, signatures and flags).
    #[inline(never)] // once a function: kept apart in profiles
    fn new(
        m: &'m latency::Model,
        code: &[Instr],
        nodes: &'m [Node],
        same: Option<&[usize]>,
    ) -> Memo<'m> {
        // Classes are told apart by the addresses of their names, not by hashing the text
        // (1M of the 311M instructions of compiling the straight-line 16k kernel): the same
        // `opcodes.csv` row always gives the same addresses, and two numbers for one name
        // only cost a second, equal, table entry.
        type Name = (usize, usize);
        let name = |s: &str| -> Name { (s.as_ptr() as usize, s.len()) };
        let mut seen: HashMap<(Name, Name, Kind), usize> = HashMap::default();
        let n = nodes.len();
        let mut class = Vec::with_capacity(n);
        let mut facts: Vec<PairFacts> = Vec::with_capacity(n);
        for (k, node) in nodes.iter().enumerate() {
            if let Some(j) = same.map(|same| same[k]).filter(|&j| j < k) {
                class.push(class[j]);
                facts.push(facts[j]);
                continue;
            }
            let next = seen.len();
            class.push(
                *seen
                    .entry((
                        name(node.class.class),
                        name(node.class.pipe),
                        node.class.kind,
                    ))
                    .or_insert(next),
            );
            facts.push(PairFacts {
                read_sig: signature(&node.reads),
                write_sig: signature(&node.writes),
                tensor: node.class.pipe == "tensor",
                never: never_runs(&code[k]),
            });
        }
        let classes = seen.len();
        Memo {
            m,
            nodes,
            class,
            classes,
            issue: vec![None; classes * classes],
            raw: vec![None; classes * classes * OPERANDS],
            facts,
            reach: m
                .issue
                .iter()
                .map(|r| i64::from(r.cycles))
                .max()
                .unwrap_or(0)
                .max(TENSOR_WAR),
        }
    }

    /// The `issue.csv` distance from instruction `a` to instruction `b` (of class `class_b`),
    /// if a row applies.
    fn issue(&mut self, a: usize, b: usize, class_b: usize) -> Option<u8> {
        let at = self.class[a] * self.classes + class_b;
        *self.issue[at].get_or_insert_with(|| {
            self.m
                .issue_row(self.nodes[a].class, self.nodes[b].class)
                .map(|r| r.cycles)
        })
    }

    /// [`raw_distance`] from producer `p` to consumer `c` through `op`.
    fn raw_distance(&mut self, p: usize, c: usize, op: Operand) -> i64 {
        let o = match op {
            Operand::File(f) => f as usize,
            Operand::Guard => OPERANDS - 1,
        };
        let at = (self.class[p] * self.classes + self.class[c]) * OPERANDS + o;
        *self.raw[at].get_or_insert_with(|| {
            raw_distance(self.m, self.nodes[p].class, self.nodes[c].class, op)
        })
    }
}

/// The operands of [`Operand`]: a register of each of the five files, or the guard.
const OPERANDS: usize = 6;

/// The last instruction of a block to write each register, for [`time_block`]: a table indexed
/// by register (file and number), and the registers written in the block in the order of their
/// first write, by which the table is read out and cleared. It replaced a hash map looked up
/// for every register read: `assign_nodes` went from 20.8M to 20.2M of the 171.5M instructions
/// of compiling the straight-line 16k kernel (`docs/passes/scoreboard.md`, "Cost").
struct LastWriters {
    at: Vec<u32>,
    written: Vec<Unit>,
}

impl LastWriters {
    const NONE: u32 = u32::MAX;

    fn new() -> LastWriters {
        LastWriters {
            at: vec![Self::NONE; (RegFile::Barrier as usize + 1) << 8],
            written: Vec::new(),
        }
    }

    fn index(u: Unit) -> usize {
        (u.0 as usize) << 8 | usize::from(u.1)
    }

    /// Forgets every writer (only the entries written are touched).
    fn clear(&mut self) {
        for u in self.written.drain(..) {
            self.at[Self::index(u)] = Self::NONE;
        }
    }

    fn get(&self, u: Unit) -> Option<usize> {
        let p = self.at[Self::index(u)];
        (p != Self::NONE).then_some(p as usize)
    }

    fn set(&mut self, u: Unit, k: usize) {
        let slot = &mut self.at[Self::index(u)];
        if *slot == Self::NONE {
            self.written.push(u);
        }
        *slot = k as u32;
    }

    /// The registers written and their last writers, in the order of the first writes.
    fn iter(&self) -> impl Iterator<Item = (Unit, usize)> + '_ {
        self.written
            .iter()
            .map(|&u| (u, self.at[Self::index(u)] as usize))
    }
}

/// Issue cycles of the instructions `s..e` of a block (relative to the block's first issue),
/// given the ready times of registers written before the block. Returns the ready times left
/// at the block's end, relative to the cycle after its last instruction.
#[inline(never)] // once a function: kept apart in profiles
#[allow(clippy::too_many_arguments)]
fn time_block(
    code: &[Instr],
    nodes: &[Node],
    memo: &mut Memo,
    s: usize,
    e: usize,
    ready_in: &Ready,
    pad: i64,
    into_join: bool,
    waits_on_prev: &[bool],
    issue: &mut [i64],
    reason: &mut [Reason],
    gap_after: &mut [i64],
    cap: &mut [i64],
    writer: &mut LastWriters,
) -> Ready {
    // Last writer of each register in this block.
    writer.clear();
    const WINDOW: i64 = 24;
    for k in s..e {
        let node = &nodes[k];
        let fk = memo.facts[k];
        let mut t = if k == s { 0 } else { issue[k - 1] + 1 };
        // Whether `t` is set by a tensor-core result (ptxas then stalls at most 11 cycles per
        // instruction, with NOPs for the rest: `zluda/mma_*`).
        let mut tensor_wait = false;
        let mut why = Reason::Next;
        // Issue distances from earlier instructions of the block. The issue times walked as a
        // slice and `k`'s class read once, not indexed at every step (time_block 18.3M →
        // 17.9M on the straight-line 64k kernel, callgrind, 2026-12-07).
        let last = if k > s { issue[k - 1] } else { 0 };
        let class_k = memo.class[k];
        for (x, &issue_x) in (s..k).zip(&issue[s..k]).rev() {
            // Issue times fall going back: once an earlier instruction is so early that neither
            // of the two rules of this loop could move `t` (each waits at most `memo.reach`
            // cycles after it), no earlier one can.
            if last - issue_x > WINDOW || issue_x + memo.reach <= t {
                break;
            }
            // Issue distances are measured between instructions that do not read each other's
            // results; those are governed by the read-after-write latencies below.
            let p = &nodes[x];
            let fx = memo.facts[x];
            // A tensor-core MMA reads its sources after it issues: ptxas overwrites one no
            // sooner than 7 cycles later (`IMMA … R2.COL …` then `IMAD.WIDE.U32 R2, …` in
            // `zluda/mma_m16n8k32_s32_s8_s8_s32`), except by another MMA, whose results come
            // much later (6 cycles, `…_interleave`).
            if fx.tensor
                && !fk.tensor
                && fk.write_sig & fx.read_sig != 0
                && node.writes.iter().any(|u| p.reads.contains(u))
            {
                let at = issue_x + TENSOR_WAR;
                if at > t {
                    t = at;
                    tensor_wait = false;
                    why = Reason::Overwrites(x);
                }
            }
            // A `CALL` keeps its issue distance even from an instruction that writes a register
            // the callee reads (the return address `MOV R0, 0x60`, an argument): ptxas leaves
            // `MOV`/`VIADD`/`IMAD.WIDE` → `CALL` 7 cycles in all 33 such pairs of the listings,
            // where the read-after-write row alone gave 4.
            let reads_result =
                fk.read_sig & fx.write_sig != 0 && node.reads.iter().any(|u| p.writes.contains(u));
            if (reads_result && node.flow != Flow::Call) || fx.never {
                continue;
            }
            if let Some(cycles) = memo.issue(x, k, class_k) {
                let at = issue_x + cycles as i64;
                if at > t {
                    t = at;
                    tensor_wait = false;
                    why = Reason::IssueDistance(x);
                }
            }
        }
        if k > s && waits_on_prev[k] && issue[k - 1] + SB_SET_TO_WAIT > t {
            t = issue[k - 1] + SB_SET_TO_WAIT;
            tensor_wait = false;
            why = Reason::WaitsOn(k - 1);
        }
        // Read-after-write latencies.
        for (r, &u) in node.reads.iter().enumerate() {
            // Each register once.
            if node.reads[..r].contains(&u) {
                continue;
            }
            let op = if Some(u) == node.guard {
                Operand::Guard
            } else {
                Operand::File(u.0)
            };
            // A `CALL` does not keep a variable-latency producer's spacing from the registers
            // the callee reads: it waits on the scoreboard, and ptxas issues it at its issue
            // distance (`LDG.E.64 R2` S01, `MOV R0, 0x60` S07, `CALL.REL.NOINC` waiting on the
            // load in `zluda/call`, `multiple_return`, `rcp_f64`: 8 cycles, where the
            // `lsu,branch` row of a `BRA` gave 11).
            let var_into_call =
                |p: usize| node.flow == Flow::Call && nodes[p].class.kind.is_variable();
            if let Some(p) = writer.get(u) {
                if var_into_call(p) {
                    continue;
                }
                let lat = memo.raw_distance(p, k, op);
                let at = issue[p] + lat;
                if at > t {
                    t = at;
                    tensor_wait = nodes[p].class.pipe == "tensor";
                    why = Reason::Reads(p);
                }
            } else if let Some(&(left, p)) = ready_in.get(&u) {
                if var_into_call(p) {
                    continue;
                }
                // `left` is measured from the block's first issue: the consumer's latency.
                let lat = memo.raw_distance(p, k, op);
                let at = left + lat;
                if at > t {
                    t = at;
                    tensor_wait = nodes[p].class.pipe == "tensor";
                    why = Reason::ReadsEarlier(p);
                }
            }
        }
        issue[k] = t;
        if k > s {
            reason[k - 1] = why;
            let c = if tensor_wait { 11 } else { 15 };
            cap[k - 1] = c;
            // NOPs inserted for the wait take it forward, each as much as it may stall, the
            // instruction before them first (ptxas: `HMMA` S11, `NOP` S11, `NOP` S01).
            let mut j = k;
            while tensor_wait && !is_wait_nop(&code[k]) && j > s + 1 && is_wait_nop(&code[j - 1]) {
                j -= 1;
            }
            if j < k {
                let mut at = issue[j - 1];
                for i in j..k {
                    let left = (k - i) as i64;
                    at = (at + c).min(t - left).max(issue[i]);
                    issue[i] = at;
                    cap[i] = c;
                }
                for i in j - 1..k - 1 {
                    cap[i] = c;
                }
            }
        }
        for &u in &node.writes {
            writer.set(u, k);
        }
    }
    if e > s {
        reason[e - 1] = Reason::EndOfBlock;
    }
    // Ready times at the end: relative issue of the producer, shifted so that 0 is the cycle
    // after the last instruction of the block.
    let m = memo.m;
    let mut end = issue[e - 1] + block_end_gap(nodes, m, e - 1);
    if drains(&nodes[e - 1]) || into_join {
        let after = after_branch_class();
        for (u, p) in writer.iter() {
            if nodes[p].class.kind != Kind::Fixed {
                continue;
            }
            let lat = m.raw_latency(nodes[p].class, &after, Operand::File(u.0)) as i64;
            if issue[p] + lat > end {
                end = issue[p] + lat;
                reason[e - 1] = Reason::WrittenBack(p);
            }
        }
    }
    // A next block may overwrite a tensor-core MMA's sources too: keep the 7 cycles across the
    // block boundary (conservative; ptxas's corpora never end a block that soon after an MMA).
    for x in (s..e).rev() {
        if issue[x] + TENSOR_WAR <= end {
            break;
        }
        if nodes[x].class.pipe == "tensor" {
            end = issue[x] + TENSOR_WAR;
            reason[e - 1] = Reason::NextBlockOverwrites(x);
        }
    }
    if pad > 0 {
        end += pad;
        reason[e - 1] = Reason::InFlight(pad);
    }
    gap_after[e - 1] = end - issue[e - 1];
    // A result whose latency has certainly passed (by the largest latency of the model) cannot
    // delay any reader: it is not carried, which keeps the ready sets as small as the window of
    // recent writes instead of every register ever written.
    let horizon = -i64::from(m.max_latency());
    let mut out = Ready::new();
    for (k, p) in ready_in {
        // Carry registers not rewritten here (`writer` holds every register the block writes).
        if writer.get(*k).is_none() && p.0 - end > horizon {
            out.insert(*k, (p.0 - end, p.1));
        }
    }
    for (u, p) in writer.iter() {
        if issue[p] - end > horizon {
            out.insert(u, (issue[p] - end, p));
        }
    }
    out
}

/// The distance the pass keeps between a producer and a reader of its result: the `raw.csv`
/// latency. For a variable-latency producer the scoreboard wait is what protects the reader; the
/// row only reproduces ptxas's spacing, so it is capped at one stall count (15) and never asks
/// for `NOP`s (`LDG,STS,R,16` is a distance ptxas happened to leave, not a latency).
fn raw_distance(m: &latency::Model, p: &OpClass, c: &OpClass, op: Operand) -> i64 {
    let lat = i64::from(m.raw_latency(p, c, op));
    if p.kind.is_variable() {
        lat.min(15)
    } else {
        lat
    }
}

/// ptxas's yield bit (bit 109), measured over the corpora (99.7% of its bits): clear with stall 0
/// or >= 12 (nvdisasm's rule); set with stall 1 and on variable-latency and control
/// instructions; on a fixed-latency instruction, clear when it stalls 3 cycles or more, and with
/// stall 2 clear when 12 or more cycles have passed since the last instruction with the bit
/// clear (counting from the block's start): ptxas lets the warp scheduler switch at least every
/// 12 cycles.
fn yields_like_alu(node: &Node) -> bool {
    match node.class.kind {
        // Tensor-core MMAs behave like variable-latency instructions here.
        Kind::Fixed => node.class.pipe != "tensor",
        // Of the control instructions, these follow the ALU rule (measured).
        _ => matches!(
            node.class.class,
            "DEPBAR" | "NOP" | "WARPGROUP" | "UCGABAR_WAIT"
        ),
    }
}

#[inline(never)] // once a function: kept apart in profiles
fn yield_bits(code: &[Instr], nodes: &[Node], g: &Cfg, tensor_capped: &[bool], ctrl: &mut [Ctrl]) {
    for &(s, e) in &g.blocks {
        let mut since = 0u32;
        for k in s..e {
            let c = &mut ctrl[k];
            let st = u32::from(c.stall);
            c.yield_ = if st == 0 || st >= 12 {
                false
            } else if st == 1
                || !yields_like_alu(&nodes[k])
                || tensor_capped[k]
                || is_wait_nop(&code[k])
            {
                // ptxas's NOPs of a tensor-core wait yield, and so does the instruction that
                // stalls 11 cycles before them (`zluda/mma_*`).
                true
            } else if st >= 3 {
                false
            } else {
                since + st < 12
            };
            since = if c.yield_ { since + st } else { 0 };
        }
    }
}

/// Operand reuse flags: slot `s` of instruction `k` is flagged when the next instruction in the
/// block that reads slot `s` reads the same register and nothing in between writes it.
/// How far an operand's reuse flag may look past instructions that read a register of the
/// other bank in the same slot: ptxas sets `FSETP.NEU.FTZ.AND P2, PT, R0.reuse, RZ, PT` before
/// `FSETP … R3 …` and `FSETP … R0 …` (`zluda/div_ftz`), `PRMT R0, R2.reuse, …` before
/// `PRMT R7, R7, …` and `PRMT R6, R2, …` (`zluda/vector_extract`), `SHF.R.U32.HI R6, RZ, 0x17,
/// R3.reuse` across two readers of `R0` (`zluda/div_noftz`). Measured over the corpora: a
/// reader of either bank ending the search, 11 894 identical control words; other-bank readers
/// passed within 1, 2, 3 instructions or anywhere in the block: 11 928, 11 935, 11 937, 11 923
/// (kernels 1 216, 1 214, 1 212, 1 212 of 1 408, was 1 218); readers of either bank passed within
/// 2: 11 791.
const REUSE_BANK_WINDOW: usize = 2;

#[inline(never)] // once a function: kept apart in profiles
fn reuse_flags(nodes: &[Node], g: &Cfg, ctrl: &mut [Ctrl]) {
    for &(s, e) in &g.blocks {
        for k in s..e {
            if !ctrl[k].yield_ {
                continue;
            }
            for &(slot, reg) in &nodes[k].slots {
                if nodes[k].writes.contains(&reg) {
                    continue;
                }
                for x in k + 1..e {
                    let other = nodes[x].slots.iter().find(|(sl, _)| *sl == slot);
                    if let Some(&(_, r2)) = other {
                        if r2 == reg {
                            ctrl[k].reuse |= 1 << slot;
                            break;
                        }
                        // The reuse cache keeps one register per slot and bank (even/odd
                        // register numbers): a register of the other bank read in the slot by
                        // the next two instructions leaves the cached one in place.
                        if r2.1 % 2 == reg.1 % 2 || x - k > REUSE_BANK_WINDOW {
                            break;
                        }
                    }
                    if nodes[x].writes.contains(&reg) {
                        break;
                    }
                }
            }
        }
    }
}

/// The control word in the familiar CuAssembler form `[B------:R-:W0:Y:S04]`: waited
/// scoreboards, read scoreboard, write scoreboard, yield (`Y` when bit 109 is set, as in
/// ptxas-facts.md), stall.
pub fn ctrl_text(c: &Ctrl) -> String {
    let mut s = String::from("[B");
    for b in 0..6 {
        if c.wait >> b & 1 == 1 {
            let _ = write!(s, "{b}");
        } else {
            s.push('-');
        }
    }
    let sb = |v: u8| {
        if v == 7 {
            "-".to_string()
        } else {
            v.to_string()
        }
    };
    let _ = write!(
        s,
        ":R{}:W{}:{}:S{:02}]",
        sb(c.rbar),
        sb(c.wbar),
        if c.yield_ { "Y" } else { "-" },
        c.stall
    );
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::target::sm90a::parse_instr;

    /// Instructions parsed from their text, 16 bytes apart from address 0, no reuse flags (also
    /// `emit/repeats.rs`'s tests).
    pub(crate) fn code(lines: &[&str]) -> Vec<Instr> {
        lines
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let mut i = parse_instr(t).unwrap_or_else(|e| panic!("{t}: {e}"));
                i.addr = k as u64 * 16;
                for o in &mut i.operands {
                    o.reuse = false;
                }
                i
            })
            .collect()
    }

    #[test]
    fn ctrl_text_format() {
        let c = Ctrl {
            stall: 4,
            yield_: true,
            wbar: 0,
            rbar: 7,
            wait: 0b100,
            reuse: 0,
        };
        assert_eq!(ctrl_text(&c), "[B--2---:R-:W0:Y:S04]");
    }

    #[test]
    fn load_use_waits_on_the_loads_scoreboard() {
        let c = code(&[
            "LDC.64 R2, c[0x0][0x210]",
            "ULDC.64 UR4, c[0x0][0x208]",
            "LDG.E R5, desc[UR4][R2.64]",
            "IADD3 R5, R5, 0x1, RZ",
            "STG.E desc[UR4][R2.64], R5",
            "EXIT",
        ]);
        let a = assign(&c).unwrap();
        let ldc = a.ctrl[0];
        let ldg = a.ctrl[2];
        assert_ne!(ldc.wbar, 7);
        assert_eq!(a.ctrl[2].wait, 1 << ldc.wbar, "LDG waits for R2");
        assert!((2..6).contains(&ldg.wbar), "global loads use SB2..SB5");
        assert_eq!(a.ctrl[3].wait, 1 << ldg.wbar);
        assert_eq!(a.ctrl[4].wbar, 7, "no write scoreboard on a store");
        assert_eq!(a.ctrl[5].wbar, 7);
        assert_eq!(a.ctrl[5].rbar, 7);
        // IADD3 -> STG: the store waits for the ALU result with stall cycles.
        assert!(a.ctrl[3].stall >= 4, "{:?}", a.ctrl[3]);
    }

    #[test]
    fn war_through_the_read_scoreboard() {
        let c = code(&[
            "LDC.64 R2, c[0x0][0x210]",
            "ULDC.64 UR4, c[0x0][0x208]",
            "MOV R5, 0x1",
            "STG.E desc[UR4][R2.64], R5",
            "MOV R5, 0x2",
            "STG.E desc[UR4][R2.64+0x4], R5",
            "EXIT",
        ]);
        let a = assign(&c).unwrap();
        let rb = a.ctrl[3].rbar;
        assert_ne!(rb, 7, "the store releases R5 through a read scoreboard");
        assert_eq!(
            a.ctrl[4].wait & (1 << rb),
            1 << rb,
            "the MOV waits for the release"
        );
    }

    /// A node and an event-dataflow record exist for every instruction of a function, and on
    /// large kernels first touching their pages is a good part of the emit stage's time: they
    /// stay small (the class by reference, the event register sets aside).
    #[test]
    fn per_instruction_records_stay_small() {
        // 256, 128 and 112 bytes before (2026-12-02).
        assert!(std::mem::size_of::<Node>() <= 128);
        assert!(std::mem::size_of::<Info>() <= 40);
        assert!(std::mem::size_of::<Why>() <= 64);
        assert!(std::mem::size_of::<Pending>() <= 24);
    }

    #[test]
    fn more_than_six_groups_share() {
        let mut lines = vec!["LDC.64 R2, c[0x0][0x210]", "ULDC.64 UR4, c[0x0][0x208]"];
        let loads = [
            "LDG.E R10, desc[UR4][R2.64]",
            "LDG.E R11, desc[UR4][R2.64+0x4]",
            "LDG.E R12, desc[UR4][R2.64+0x8]",
            "LDG.E R13, desc[UR4][R2.64+0xc]",
            "LDG.E R14, desc[UR4][R2.64+0x10]",
            "LDG.E R15, desc[UR4][R2.64+0x14]",
        ];
        let uses = [
            "IADD3 R20, R10, 0x1, RZ",
            "IADD3 R21, R11, 0x1, RZ",
            "IADD3 R22, R12, 0x1, RZ",
            "IADD3 R23, R13, 0x1, RZ",
            "IADD3 R24, R14, 0x1, RZ",
            "IADD3 R25, R15, 0x1, RZ",
        ];
        lines.extend(loads);
        lines.extend(uses);
        lines.push("EXIT");
        let c = code(&lines);
        let a = assign(&c).unwrap();
        // Every load has a scoreboard in SB2..SB5, and every use waits for its load.
        for k in 0..6 {
            let wb = a.ctrl[2 + k].wbar;
            assert!((2..6).contains(&wb), "load {k}: {wb}");
            let waited_before = (2 + 6..=2 + 6 + k).any(|u| a.ctrl[u].wait >> wb & 1 == 1);
            assert!(waited_before, "use {k} not covered");
        }
    }
}

/// How many instructions' recomputed control words agree with given ones, field by field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agreement {
    pub total: usize,
    pub identical: usize,
    pub stall: usize,
    pub yield_: usize,
    pub wbar: usize,
    pub rbar: usize,
    pub wait: usize,
    pub reuse: usize,
    /// The same counts without the padding after the code (`BRA` self and `NOP`s).
    pub code_total: usize,
    pub code_identical: usize,
}

impl Agreement {
    /// Counts one instruction.
    pub fn add(&mut self, ours: &Ctrl, theirs: &Ctrl, padding: bool) {
        let same = ours == theirs;
        self.total += 1;
        self.identical += same as usize;
        self.stall += (ours.stall == theirs.stall) as usize;
        self.yield_ += (ours.yield_ == theirs.yield_) as usize;
        self.wbar += (ours.wbar == theirs.wbar) as usize;
        self.rbar += (ours.rbar == theirs.rbar) as usize;
        self.wait += (ours.wait == theirs.wait) as usize;
        self.reuse += (ours.reuse == theirs.reuse) as usize;
        if !padding {
            self.code_total += 1;
            self.code_identical += same as usize;
        }
    }

    /// Sums two counts.
    pub fn merge(&mut self, o: &Agreement) {
        self.total += o.total;
        self.identical += o.identical;
        self.stall += o.stall;
        self.yield_ += o.yield_;
        self.wbar += o.wbar;
        self.rbar += o.rbar;
        self.wait += o.wait;
        self.reuse += o.reuse;
        self.code_total += o.code_total;
        self.code_identical += o.code_identical;
    }

    /// `ctrl-agreement: N/M instructions identical`, then one line per field.
    pub fn report(&self) -> String {
        let pct = |n: usize, d: usize| {
            if d == 0 {
                100.0
            } else {
                100.0 * n as f64 / d as f64
            }
        };
        let m = self.total;
        let mut s = format!(
            "ctrl-agreement: {}/{} instructions identical ({:.1}%)\n",
            self.identical,
            m,
            pct(self.identical, m)
        );
        for (name, n) in [
            ("stall", self.stall),
            ("yield", self.yield_),
            ("write SB", self.wbar),
            ("read SB", self.rbar),
            ("wait mask", self.wait),
            ("reuse", self.reuse),
        ] {
            let _ = writeln!(s, "  {name:<10} {n}/{m} ({:.1}%)", pct(n, m));
        }
        let _ = writeln!(
            s,
            "  code only (padding left out): {}/{} identical ({:.1}%)",
            self.code_identical,
            self.code_total,
            pct(self.code_identical, self.code_total)
        );
        s
    }
}
