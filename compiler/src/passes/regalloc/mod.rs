//! `regalloc`: linear-scan register allocation (Poletto and Sarkar) with spilling to local
//! memory, after `out-of-ssa`.
//!
//! 1. **Intervals.** Instructions are numbered in layout order (reads at `2k`, writes at
//!    `2k+1`). A virtual register's interval is the smallest range covering every point where
//!    it is live (from the liveness dataflow), its definitions and its uses: one range, no
//!    holes, so intervals overlap whenever the values might be live together. When that scan
//!    spills, the allocation is made again with *lifetime holes* ([`live_ranges`]): a
//!    register whose holder is dead wherever a new value lives is lent to it ([`Overlap`]),
//!    and the allocation with fewer spill bytes is kept ([`allocate`]).
//! 2. **Scan.** Per register file, intervals in order of start; an interval takes the lowest
//!    free register (an aligned pair or quad for multi-word values), preferring the register of
//!    a value it is copied from or to, so the copy disappears. `R1` is never given out: it is
//!    the stack pointer.
//! 3. **Spill.** When no register is free, a tuple first tries to move active values out of an
//!    aligned window ([`Relocation::make_window`]); else the value of least spill weight (uses
//!    per point of its interval), the new one or an active one, goes to a stack slot (a spill
//!    temporary or accumulator evicts active values, least weight first, until it fits): each
//!    definition is followed by an `STL` of the
//!    words it writes and each use preceded by an `LDL` of the words it reads, into a fresh
//!    short-lived register ([`spill`]); then the scan runs again. The frame grows by the slot;
//!    `R1` is lowered by the frame size in the prologue. Spill temporaries and wgmma
//!    accumulators are never spilled ([`unspillable`]). A value computed from constants alone
//!    (`LDC` of a parameter, `S2R SR_TID.X`, `MOV` of an immediate, the shared window's base)
//!    is instead recomputed before each use and gets no slot ([`remat`]). Occurrences inside
//!    loops weigh [`LOOP_WEIGHT`] times more per level of nesting.
//! 4. **Calls** (`lower/isel/call.rs`). Precoloured values ([`Function::fixed`]: arguments,
//!    results, the return address) get their register; no other value may take a register
//!    while a precoloured value lives in it, and a value live across a `CALL` (live after it,
//!    not only inside its interval) may not sit in a register the callee may overwrite:
//!    [`call_clobbers`], or for one of ptxas's slow paths exactly the registers its allocated
//!    body writes ([`call_clobber_set`]).
//! 5. **`setmaxnreg`** ([`limits`]). Each general-register value stays below the smallest
//!    register limit in force where it is defined, read or live (`.maxnreg` at the entry, `N`
//!    after a `setmaxnreg … N`, the smallest at a join); blocks are then numbered in reverse
//!    post-order, and large tuples may straddle a 64-register boundary when nothing else fits.
//! 6. **Rewrite.** Virtual registers become physical ones; `COPY`s become `MOV`s (or vanish
//!    when source and destination coincide); `UNDEF`s vanish.
//!
//! [`checker`] verifies every allocation symbolically (in tests and debug builds), in the
//! manner of regalloc2's checker.

pub mod checker;
pub mod interference;
pub mod limits;
pub mod remat;

use super::Pass;
use crate::mir::cfg::Cfg;
use crate::mir::liveness::Liveness;
use crate::mir::{
    BlockId, Function, Inst, MemPrefix, MemTerm, OpKind, Operand, PReg, Reg, RegClass, RegSet, VReg,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::Reverse;

pub struct RegAlloc;

impl Pass for RegAlloc {
    fn name(&self) -> &'static str {
        "regalloc"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        let result = allocate(f)?;
        // The checker runs in debug builds and tests, and in every build when the allocation
        // spilled: spill code is where allocation bugs have hidden (in pyptx `matmul_tma_v33`
        // it found 64-bit values written a word at a time and stored whole after each word,
        // which release builds had compiled to wrong code), and functions that spill are rare.
        // So are functions under `setmaxnreg`, whose per-region limits the checker also checks.
        if cfg!(debug_assertions)
            || result.spill_bytes > 0
            || result.shared_in_holes
            || limits::has_setmaxnreg(f)
            || std::env::var_os("PTXC_CHECK_REGALLOC").is_some()
        {
            checker::check(f, &result).map_err(|e| format!("the allocation is wrong: {e}"))?;
        }
        rewrite(f, &result);
        Ok(())
    }
}

/// The outcome of allocation on a function whose spill code has been inserted.
#[derive(Clone, Debug, Default)]
pub struct Allocation {
    /// The first physical register of every vreg (`None`: the vreg never appears).
    pub assignment: Vec<Option<PReg>>,
    /// Spill temporaries → the vreg whose value they carry and the word of it that is their
    /// word 0 (for the checker).
    pub alias: FxHashMap<VReg, (VReg, u8)>,
    /// Bytes of spill slots added to the frame.
    pub spill_bytes: u32,
    /// Slot offset (from R1) of every spilled vreg.
    pub slots: FxHashMap<VReg, u32>,
    /// Under `.pragma "enable_smem_spilling"`: the register holding this lane's first
    /// shared-memory slot ([`smem_base`]); its slots are at `+0x80·k`.
    pub smem_base: Option<VReg>,
    /// The value the per-warp row size multiplies (patched as slots are added).
    pub smem_row: Option<VReg>,
    /// Slot index of every value spilled to shared memory.
    pub smem_slots: FxHashMap<VReg, u32>,
    /// Whether the allocation lends registers across lifetime holes ([`allocate`]); the
    /// checker then runs in every build.
    pub shared_in_holes: bool,
}

/// The highest general register index a function may use under its budget: ptxas reports
/// "highest R used + 3" registers (`ptxas -v` on the probes), so `.maxnreg 32` leaves R0–R29.
fn gpr_limit(f: &Function) -> u32 {
    usable(f.max_regs)
}

/// The general registers ptxc gives out under a limit of `n` (`.maxnreg`, or a `setmaxnreg`
/// count; [`limits`]): `R0`–`R(n-3)`, as for `.maxnreg`. ptxas stays below that too in the
/// `setmaxnreg` regions of pyptx `fa_ws_pingpong` (at most `R4` under 40, `R201` under 232).
fn usable(n: u32) -> u32 {
    n.clamp(4, 255).saturating_sub(2)
}

#[derive(Clone, Copy, Debug)]
struct Interval {
    vreg: VReg,
    start: u32,
    end: u32,
}

/// Allocates registers, inserting spill code into `f` as needed.
///
/// The first scan uses one interval per value, without holes: most functions spill nothing
/// and are done. When it spills, the allocation is made twice from the function as it was,
/// once as before and once with lifetime holes ([`live_ranges`]: a register whose holder is
/// dead wherever a new value lives is lent to it), and the one with fewer spill bytes is kept
/// (the one without holes on a tie), so functions that do not spill are unchanged. When the
/// one with holes spills nothing, the other is not made.
pub fn allocate(f: &mut Function) -> Result<Allocation, String> {
    let victims = match scan(f, false)? {
        Ok(assignment) => {
            return Ok(Allocation {
                assignment,
                ..Allocation::default()
            });
        }
        Err(victims) => victims,
    };
    let mut with_holes = f.clone();
    let holed = allocate_from(&mut with_holes, true, None);
    let cost = |a: &Allocation| a.spill_bytes as usize + 4 * a.smem_slots.len();
    let plain = match &holed {
        Ok(h) if cost(h) == 0 => Err(String::new()),
        _ => allocate_from(f, false, Some(victims)),
    };
    match (plain, holed) {
        (Ok(p), Ok(h)) if cost(&h) >= cost(&p) => Ok(p),
        (_, Ok(mut h)) => {
            *f = with_holes;
            h.shared_in_holes = true;
            Ok(h)
        }
        (plain, Err(_)) => plain,
    }
}

/// The scan-and-spill rounds: scans `f` (with holes or without), spills the values a scan
/// chose, and scans again until everything has a register. `first`: the victims of a scan
/// already made.
fn allocate_from(
    f: &mut Function,
    holes: bool,
    mut first: Option<Vec<VReg>>,
) -> Result<Allocation, String> {
    let mut alloc = Allocation::default();
    for _round in 0..64 {
        let scanned = match first.take() {
            Some(victims) => Err(victims),
            None => scan(f, holes)?,
        };
        match scanned {
            Ok(assignment) => {
                alloc.assignment = assignment;
                return Ok(alloc);
            }
            Err(victims) => spill(f, &victims, &mut alloc),
        }
    }
    Err(format!("`{}`: spilling did not converge", f.name))
}

/// The order in which blocks are numbered for the intervals: layout order, or under
/// `setmaxnreg` reverse post-order (then the unreachable blocks). Any order is sound (an
/// interval covers every point its value is live at in the numbering); a warp-specialized
/// kernel's layout interleaves its roles' regions (pyptx `fa_ws_pingpong` lays the tail of a
/// consumer region, which reads the 64-register accumulator, before the loop header that all
/// roles pass), so layout intervals would keep values of one region live across the others.
fn numbering(f: &Function, cfg: &Cfg, setmaxnreg: bool) -> Vec<BlockId> {
    if !setmaxnreg {
        return f.block_ids().collect();
    }
    let mut order = cfg.rpo.clone();
    order.extend(f.block_ids().filter(|&b| !cfg.is_reachable(b)));
    order
}

fn intervals(f: &Function, live: &Liveness, order: &[BlockId]) -> Vec<Option<Interval>> {
    let mut iv: Vec<Option<Interval>> = vec![None; f.vregs.len()];
    let mut pos = 0u32;
    for &b in order {
        let start = pos;
        let n = f.block(b).insts.len() as u32;
        let end = start + 2 * n + 1;
        for &v in &live.live_in[b.0 as usize] {
            touch(&mut iv, VReg(v), start);
        }
        for &v in &live.live_out[b.0 as usize] {
            touch(&mut iv, VReg(v), end);
        }
        for (k, inst) in f.block(b).insts.iter().enumerate() {
            // Reads at `at`, writes at `at + 1`.
            let at = start + 2 * k as u32;
            inst.for_each_reg(|r| {
                if let Some(v) = r.reg.vreg() {
                    touch(&mut iv, v, at + u32::from(r.def));
                }
            });
        }
        pos = end + 1;
    }
    iv
}

/// Widens `v`'s interval in `iv` to cover point `at` (or starts it there).
#[inline(always)]
fn touch(iv: &mut [Option<Interval>], v: VReg, at: u32) {
    match &mut iv[v.0 as usize] {
        Some(i) => {
            i.start = i.start.min(at);
            i.end = i.end.max(at);
        }
        slot => {
            *slot = Some(Interval {
                vreg: v,
                start: at,
                end: at,
            })
        }
    }
}

/// [`intervals`] and the liveness of a function of one block with no successor and no `PHI`,
/// from one walk over its instructions (the dataflow's walk was 1.7M of the 7.6M instructions
/// of `scan` on `straight_16000.ptx`, callgrind). Nothing is live out of the block, and a value
/// is live into it when it is read before it is written (an instruction reads before it
/// writes): when its first point is a read (an even one, the block starting at 0). Such an
/// interval starts at the block's start, 0, as [`intervals`] makes it from the live-in set.
fn straight_line_intervals(f: &Function) -> (Liveness, Vec<Option<Interval>>) {
    let mut iv: Vec<Option<Interval>> = vec![None; f.vregs.len()];
    for (k, inst) in f.blocks[0].insts.iter().enumerate() {
        let at = 2 * k as u32;
        inst.for_each_reg(|r| {
            if let Some(v) = r.reg.vreg() {
                touch(&mut iv, v, at + u32::from(r.def));
            }
        });
    }
    let mut live_in = Vec::new();
    for i in iv.iter_mut().flatten() {
        if i.start % 2 == 0 {
            live_in.push(i.vreg.0);
            i.start = 0;
        }
    }
    let live = Liveness {
        live_in: vec![live_in],
        live_out: vec![Vec::new()],
    };
    (live, iv)
}

/// Each value's live ranges in the numbering of `order` (sorted, disjoint, adjacent ones
/// merged): per block, from the block's start if the value is live in (else its first
/// occurrence) to the block's end if it is live out (else its last occurrence). A range
/// inside a block has no holes; the holes are the stretches of the numbering where the value
/// is dead (another role's region, the other side of a branch). Its hull is [`intervals`].
fn live_ranges(f: &Function, live: &Liveness, order: &[BlockId]) -> Vec<Vec<(u32, u32)>> {
    let mut ranges: Vec<Vec<(u32, u32)>> = vec![Vec::new(); f.vregs.len()];
    // The range of each value in the current block, and the values touched in it.
    let mut here: Vec<Option<(u32, u32)>> = vec![None; f.vregs.len()];
    let mut touched: Vec<u32> = Vec::new();
    let mut pos = 0u32;
    for &b in order {
        let start = pos;
        let n = f.block(b).insts.len() as u32;
        let end = start + 2 * n + 1;
        let mut touch = |v: u32, lo: u32, hi: u32| match &mut here[v as usize] {
            Some(r) => {
                r.0 = r.0.min(lo);
                r.1 = r.1.max(hi);
            }
            slot => {
                *slot = Some((lo, hi));
                touched.push(v);
            }
        };
        for &v in &live.live_in[b.0 as usize] {
            touch(v, start, start);
        }
        for &v in &live.live_out[b.0 as usize] {
            touch(v, end, end);
        }
        for (k, inst) in f.block(b).insts.iter().enumerate() {
            let at = start + 2 * k as u32;
            inst.for_each_reg(|r| {
                if let Some(v) = r.reg.vreg() {
                    let p = at + u32::from(r.def);
                    touch(v.0, p, p);
                }
            });
        }
        for v in touched.drain(..) {
            let (lo, hi) = here[v as usize].take().expect("touched");
            let list = &mut ranges[v as usize];
            match list.last_mut() {
                Some(last) if last.1 + 1 >= lo => last.1 = last.1.max(hi),
                _ => list.push((lo, hi)),
            }
        }
        pos = end + 1;
    }
    ranges
}

/// The registers a `CALL` to a function ptxc did not compile may overwrite, per register file:
/// `R0`–`R15` and `R20`/`R21` (arguments, results and scratch, the return address), `UR0`–`UR35`,
/// every predicate. Measured with ptxas 13.1 on kernels that keep many values live across a
/// call to `vprintf` (`tests/sass-probes/ptx/calls.ptx`; `docs/passes/lowering.md`, "Calls out
/// of the module"; re-checked by `tests/tests/isel_control.rs`): ptxas keeps them in `R2`, `R16`–`R19`
/// and `R22` up, in `UR36` up, and saves predicates to general registers (`P2R`); it never
/// keeps one in `R0`, `R3`–`R15`, `R20`, `R21`, `UR4`–`UR35` or `P0`–`P6`. ptxc also leaves out
/// `R2`, which ptxas uses once but whose preservation no document states.
pub fn call_clobbers(class: RegClass, r: usize) -> bool {
    match class {
        RegClass::Gpr => r <= 15 || r == 20 || r == 21,
        RegClass::Ugpr => r <= 35,
        RegClass::Pred | RegClass::UPred => true,
    }
}

/// The predicates a call to one of ptxas's slow paths (`lower/slow_path.rs`) whose body is
/// not allocated yet is taken to overwrite: P0–P3 (the slow paths need at most three at a
/// time; ptxas's division uses P0–P2).
pub const SLOW_PATH_PREDICATES: usize = 4;

/// Whether a call to one of ptxas's slow paths whose registers are not known
/// ([`Function::callee_writes`]; only where a pipeline stops before allocating the slow paths,
/// as `--dot interference` does) may overwrite register `r` of `class`: the general registers
/// of [`call_clobbers`] and the predicates below [`SLOW_PATH_PREDICATES`]; no uniform register
/// (the slow paths compute per thread). Every allocation that reaches machine code uses the
/// slow path's own set instead ([`call_clobber_set`]).
pub fn slow_path_clobbers(class: RegClass, r: usize) -> bool {
    match class {
        RegClass::Pred => r < SLOW_PATH_PREDICATES,
        RegClass::Ugpr | RegClass::UPred => false,
        RegClass::Gpr => call_clobbers(class, r),
    }
}

/// The slow path `call` calls (`lower/slow_path.rs`), if it calls one.
pub fn slow_path_callee(call: &crate::mir::Inst) -> Option<&str> {
    call.ops.iter().find_map(|o| match &o.kind {
        crate::mir::OpKind::Func(n) if crate::lower::slow_path::kind(n).is_some() => {
            Some(n.as_str())
        }
        _ => None,
    })
}

/// Whether `call` is a call to one of ptxas's slow paths (`lower/slow_path.rs`).
pub fn calls_slow_path(call: &crate::mir::Inst) -> bool {
    slow_path_callee(call).is_some()
}

/// What a call to a caller-saved subroutine ([`Function::caller_saved`]) whose body is
/// allocated overwrites, if `call` is one: the registers the body writes
/// ([`Function::callee_writes`]).
pub fn known_callee_writes(f: &Function, call: &Inst) -> Option<RegSet> {
    call.ops.iter().find_map(|o| match &o.kind {
        OpKind::Func(n) => f
            .callee_writes
            .iter()
            .find(|(c, _)| c == n)
            .map(|&(_, set)| set),
        _ => None,
    })
}

/// The registers the `CALL` `call` of `f` may overwrite. A call to a caller-saved subroutine
/// whose allocated body is known ([`known_callee_writes`]: a slow path, or a module subroutine
/// neither recursive nor address-taken) overwrites exactly the registers the body writes —
/// its own return-address and result registers among them; the arguments it does not write
/// keep their values. Any other slow-path call overwrites [`slow_path_clobbers`], any other
/// call [`call_clobbers`] (a pipeline that stops before allocating, as `--dot interference`
/// does, knows no body; `driver::lower_with` allocates every caller-saved subroutine before
/// its callers).
pub fn call_clobber_set(f: &Function, call: &Inst) -> RegSet {
    if let Some(set) = known_callee_writes(f, call) {
        return set;
    }
    match slow_path_callee(call) {
        Some(_) => RegSet::from_fn(slow_path_clobbers),
        None => RegSet::from_fn(call_clobbers),
    }
}

/// The registers a function writes once allocated (what a call to it overwrites, when it saves
/// nothing): every register an instruction defines, and what each of its own calls may
/// overwrite ([`call_clobber_set`]), except the stack pointer R1 (a frame is closed before
/// `RET`) and the zero and true registers.
pub fn written_registers(f: &Function) -> RegSet {
    let mut set = RegSet::default();
    for i in f.blocks.iter().flat_map(|b| &b.insts) {
        if i.mnemonic == "CALL" {
            set = set.union(call_clobber_set(f, i));
        }
        for d in i.defs() {
            if let Reg::Phys { reg, count } = d {
                for n in reg.num..reg.num.saturating_add(count) {
                    set.insert(reg.class, n.into());
                }
            }
        }
    }
    RegSet::from_fn(|class, r| {
        let sp = class == RegClass::Gpr && r == 1;
        set.contains(class, r) && !sp && r != usize::from(class.zero())
    })
}

/// A `CALL`: its position (`2k`, the read point, blocks numbered in `order`), the registers it
/// may overwrite ([`call_clobber_set`]), whether it may overwrite every predicate (a call that
/// is not to a slow path: ptxc cannot keep a predicate across it), and the values live across
/// it (sorted vreg numbers).
///
/// Only those values must avoid the clobbered registers. An interval has no holes, so it may
/// span a call its value is dead at: the operand of a slow path is read on the fast path laid
/// out after the call (zluda `sqrt_rn_ftz`: `MUFU.RSQ R, a` before the branch, `FMUL.FTZ …, a,
/// R` after the call), and the call may overwrite it there.
struct CallPoint {
    pos: u32,
    clobbers: RegSet,
    general: bool,
    live: Vec<u32>,
}

impl CallPoint {
    /// Whether the value `v`, whose interval is `i`, lives across the call.
    fn crossed_by(&self, i: &Interval) -> bool {
        i.start <= self.pos && i.end > self.pos + 1 && self.live.binary_search(&i.vreg.0).is_ok()
    }
}

fn call_points(f: &Function, live: &Liveness, order: &[BlockId]) -> Vec<CallPoint> {
    let mut out = Vec::new();
    let mut pos = 0u32;
    for &b in order {
        let block = f.block(b);
        let calls: Vec<usize> = (0..block.insts.len())
            .filter(|&k| block.insts[k].mnemonic == "CALL")
            .collect();
        if !calls.is_empty() {
            // Backward from the block's end: the values live after each CALL, less its results.
            // A definition kills its value only when unguarded and whole (else the value's
            // other words, or its old value, may still be read).
            let mut now: FxHashSet<u32> = live.live_out[b.0 as usize].iter().copied().collect();
            let mut found = Vec::new();
            for (k, i) in block.insts.iter().enumerate().rev() {
                let defs: Vec<u32> = i.defs().filter_map(|r| r.vreg()).map(|v| v.0).collect();
                if i.mnemonic == "CALL" {
                    let mut after: Vec<u32> =
                        now.iter().copied().filter(|v| !defs.contains(v)).collect();
                    after.sort_unstable();
                    found.push(CallPoint {
                        pos: pos + 2 * k as u32,
                        clobbers: call_clobber_set(f, i),
                        general: !calls_slow_path(i) && known_callee_writes(f, i).is_none(),
                        live: after,
                    });
                }
                for r in i.defs() {
                    if let Reg::Virt { vreg, first, count } = r
                        && i.guard.is_none()
                        && first == 0
                        && count == f.vreg(vreg).words
                    {
                        now.remove(&vreg.0);
                    }
                }
                now.extend(i.uses().filter_map(|r| r.vreg()).map(|v| v.0));
            }
            found.reverse();
            out.extend(found);
        }
        pos += 2 * block.insts.len() as u32 + 2;
    }
    out
}

/// Copy hints: the vregs a COPY connects, both ways.
fn hints(f: &Function) -> FxHashMap<VReg, Vec<VReg>> {
    let mut h: FxHashMap<VReg, Vec<VReg>> = FxHashMap::default();
    for b in &f.blocks {
        for i in &b.insts {
            if i.mnemonic != "COPY" {
                continue;
            }
            let d = i.defs().next().and_then(Reg::vreg);
            let s = i.uses().next().and_then(|r| r.vreg());
            if let (Some(d), Some(s)) = (d, s) {
                h.entry(d).or_default().push(s);
                h.entry(s).or_default().push(d);
            }
        }
    }
    h
}

/// One pass of the scan; `Ok(Err(..))` names the vregs to spill; `Err` is a limit ptxc has.
#[allow(clippy::type_complexity)]
fn scan(f: &Function, holes: bool) -> Result<Result<Vec<Option<PReg>>, Vec<VReg>>, String> {
    let cfg = Cfg::new(f);
    // Straight-line code (one block, no successor, out of SSA form): the intervals and the
    // live-in set come from one walk, without the liveness dataflow's own walk.
    let straight = f.blocks.len() == 1 && cfg.succs[0].is_empty() && !f.ssa;
    let (live, straight_iv) = if straight {
        let (live, iv) = straight_line_intervals(f);
        (live, Some(iv))
    } else {
        (Liveness::compute(f, &cfg), None)
    };
    // Under `setmaxnreg`, each general register value's bound: the registers below the
    // smallest limit where it lives (`limits`), the largest limit bounding the file.
    let caps = limits::vreg_caps(f, &cfg, &live, f.max_regs);
    let order = numbering(f, &cfg, caps.is_some());
    let iv = straight_iv.unwrap_or_else(|| intervals(f, &live, &order));
    let calls = call_points(f, &live, &order);
    let overlap = Overlap {
        iv: &iv,
        ranges: if holes {
            live_ranges(f, &live, &order)
        } else {
            Vec::new()
        },
    };
    drop(live);
    let hints = hints(f);
    let pinned = unspillable(f);
    // Spill weights: the instructions that name a value per point of its interval. A value
    // read a few times over a long interval (a kernel parameter's address held from the entry
    // to the end) is the cheapest to spill; a short one read often (in a loop) the dearest.
    // An occurrence inside a loop counts `LOOP_WEIGHT` times per level of nesting (up to four),
    // so a value read in a loop weighs more than one read as often outside it.
    // The counts are made at the first spill choice: most functions spill nothing, and finding
    // the loops asks the dominator tree once per edge (loop_16000: 130M instructions).
    let occurrences: std::cell::OnceCell<Vec<u64>> = std::cell::OnceCell::new();
    let weight = |v: VReg| -> u64 {
        let occurrences = occurrences.get_or_init(|| {
            let depth = loop_depths(&cfg);
            let mut occurrences: Vec<u64> = vec![0; f.vregs.len()];
            for (block, &d) in f.blocks.iter().zip(&depth) {
                let w = LOOP_WEIGHT.pow(d.min(4));
                for i in &block.insts {
                    for r in i.regs() {
                        if let Some(v) = r.reg.vreg() {
                            occurrences[v.0 as usize] += w;
                        }
                    }
                }
            }
            occurrences
        });
        let i = iv[v.0 as usize].expect("an allocated value has an interval");
        occurrences[v.0 as usize] * 1_000_000 / u64::from(i.end - i.start + 1)
    };
    let mut assignment: Vec<Option<PReg>> = vec![None; f.vregs.len()];
    // Precoloured values, with their intervals.
    let fixed: Vec<(Interval, PReg, usize)> = f
        .fixed
        .iter()
        .filter_map(|&(v, p)| iv[v.0 as usize].map(|i| (i, p, usize::from(f.vreg(v).words))))
        .collect();
    for &(i, p, _) in &fixed {
        assignment[i.vreg.0 as usize] = Some(p);
    }
    let mut victims = Vec::new();
    // The intervals of each register file, in one walk over the values (not one per file).
    let class_index = |class: RegClass| match class {
        RegClass::Gpr => 0,
        RegClass::Ugpr => 1,
        RegClass::Pred => 2,
        RegClass::UPred => 3,
    };
    let mut sizes = [0; 4];
    for i in iv.iter().flatten() {
        sizes[class_index(f.vreg(i.vreg).class)] += 1;
    }
    let mut by_class = sizes.map(Vec::with_capacity);
    for i in iv.iter().flatten() {
        by_class[class_index(f.vreg(i.vreg).class)].push(*i);
    }
    for class in [
        RegClass::Gpr,
        RegClass::Ugpr,
        RegClass::Pred,
        RegClass::UPred,
    ] {
        let limit = match (class, &caps) {
            (RegClass::Gpr, Some(caps)) => caps
                .iter()
                .filter(|&&c| c != u32::MAX)
                .map(|&c| usable(c))
                .chain([gpr_limit(f)])
                .max()
                .unwrap_or(0),
            (RegClass::Gpr, None) => gpr_limit(f),
            (other, _) => other.allocatable(),
        } as usize;
        let mut list = std::mem::take(&mut by_class[class_index(class)]);
        list.sort_by_key(|i| (i.start, i.vreg.0));
        // owner[r]: the interval end and vreg holding register r; `free` the registers no
        // interval holds (R1, the stack pointer, never is); `active` the intervals holding
        // registers, by end, to expire them in order.
        let mut owner: Vec<Vec<(u32, VReg)>> = vec![Vec::new(); limit];
        let mut free = FreeSet::new(limit, class);
        let last_point = list.iter().map(|i| i.end).max().unwrap_or(0);
        let mut active = Expiry::new(last_point, list.len());
        let mut expired = Vec::new();
        // last_end[r]: the end of the last interval that held register r and expired (values
        // evicted to the stack do not count: they leave the register for their whole life).
        // A value may move into r only if r has been free since it started ([`relocate`]).
        let mut last_end: Vec<Option<u32>> = vec![None; limit];
        for cur in list {
            active.expire_before(cur.start, &mut expired);
            for &(end, v, base) in &expired {
                let words = usize::from(f.vreg(VReg(v)).words);
                for (r, slot) in owner.iter_mut().enumerate().skip(base).take(words) {
                    if let Some(k) = slot.iter().position(|&h| h == (end, VReg(v))) {
                        slot.swap_remove(k);
                        if slot.is_empty() {
                            free.insert(r);
                        }
                        last_end[r] = Some(end);
                    }
                }
            }
            let words = usize::from(f.vreg(cur.vreg).words);
            // The registers below `cap` are the ones this value may take (`setmaxnreg`).
            let hw_cap = caps.as_ref().map_or(u32::MAX, |c| c[cur.vreg.0 as usize]);
            let cap = if hw_cap == u32::MAX {
                limit
            } else {
                (usable(hw_cap) as usize).min(limit)
            };
            if words > cap {
                // ptxas instead ignores every `setmaxnreg` of such a kernel (info C7507,
                // "'setmaxnreg' ignored to maintain minimum register requirements": a 64-register
                // wgmma accumulator after `setmaxnreg.dec 40`).
                return Err(format!(
                    "ptxc cannot allocate a {words}-register value in `{}` where `setmaxnreg` \
                     leaves {hw_cap} registers ({cap} that ptxc gives out; ptxas would ignore \
                     the kernel's `setmaxnreg`)",
                    f.name
                ));
            }
            let align = match words {
                w if w >= 8 => 8,
                w if w >= 3 => 4,
                w => w,
            };
            if let Some(p) = f.fixed_reg(cur.vreg) {
                // A precoloured value: no other value was let into its registers while it lives.
                let base = usize::from(p.num);
                if !(base..base + words).all(|r| free.contains(r)) {
                    return Err(format!(
                        "internal error in `{}`: {p} is taken where a call needs it",
                        f.name
                    ));
                }
                for (r, slot) in owner[base..base + words].iter_mut().enumerate() {
                    slot.push((cur.end, cur.vreg));
                    free.remove(base + r);
                }
                active.push(cur.end, cur.vreg.0, base);
                continue;
            }
            // Registers this value may not take: those of precoloured values living at the same
            // time, and the ones a call it lives across may overwrite.
            let crossed = || calls.iter().filter(|c| c.crossed_by(&cur));
            let crosses = crossed().next().is_some();
            // The registers any call it lives across may overwrite (a slow path's: those its
            // body writes).
            let clobbered = crossed().fold(RegSet::default(), |s, c| s.union(c.clobbers));
            let only_slow_paths = crossed().all(|c| !c.general);
            if crosses && matches!(class, RegClass::Pred | RegClass::UPred) && !only_slow_paths {
                return Err(format!(
                    "ptxc cannot keep a predicate live across a call yet (`{}`; ptxas saves them \
                     in general registers with P2R)",
                    f.name
                ));
            }
            // The registers an interval may not take: at or above its cap, those a call it
            // lives across may overwrite, those of precoloured values living at the same time.
            let blocked_for = |it: &Interval, r: usize| {
                let hw = caps.as_ref().map_or(u32::MAX, |c| c[it.vreg.0 as usize]);
                let its_cap = if hw == u32::MAX {
                    limit
                } else {
                    (usable(hw) as usize).min(limit)
                };
                r >= its_cap
                    || calls
                        .iter()
                        .any(|c| c.crossed_by(it) && c.clobbers.contains(class, r))
                    || fixed.iter().any(|&(i, p, w)| {
                        p.class == class
                            && (usize::from(p.num)..usize::from(p.num) + w).contains(&r)
                            && i.start <= it.end
                            && it.start <= i.end
                    })
            };
            let blocked = |r: usize| {
                r >= cap
                    || (crosses && clobbered.contains(class, r))
                    || fixed.iter().any(|&(i, p, w)| {
                        p.class == class
                            && (usize::from(p.num)..usize::from(p.num) + w).contains(&r)
                            && i.start <= cur.end
                            && cur.start <= i.end
                    })
            };
            let restricted = crosses || !fixed.is_empty() || cap < limit;
            let avail = |free: &FreeSet| {
                if !restricted {
                    return None;
                }
                let mut a = FreeSet { bits: free.bits };
                for r in 0..limit {
                    if blocked(r) {
                        a.remove(r);
                    }
                }
                Some(a)
            };
            let first_fit = |free: &FreeSet| match avail(free) {
                Some(a) => a.first_fit(words),
                None => free.first_fit(words),
            };
            let free_at = |base: usize, free: &FreeSet| {
                base.is_multiple_of(align)
                    && base + words <= limit
                    && (base..base + words).all(|r| free.contains(r) && !blocked(r))
            };
            // The registers this value may share: the free ones and, with holes, those whose
            // holders are all dead wherever this value lives.
            let mut open = overlap.open(&owner, &free, cur.vreg);
            let preferred = hints.get(&cur.vreg).into_iter().flatten().find_map(|h| {
                assignment[h.0 as usize]
                    .filter(|p| p.class == class)
                    .map(|p| usize::from(p.num))
                    .filter(|&b| free_at(b, &open))
            });
            let mut chosen = preferred.or_else(|| first_fit(&open));
            if chosen.is_none() && class != RegClass::Gpr {
                return Err(format!(
                    "ptxc cannot spill {} registers yet (`{}` needs more than {limit} live at once)",
                    class.prefix(),
                    f.name
                ));
            }
            // No register: spill the current value, unless it is itself a spill temporary
            // (those live for one instruction); then evict the active values that end last
            // until its registers are free.
            let evictable = |v: &VReg| !pinned.contains(v) && f.fixed_reg(*v).is_none();
            // Enough registers are free but not `words` of them in a row: move active values
            // out of a window instead of spilling (tried again after each eviction below).
            let make_window = |owner: &mut Vec<_>,
                               free: &mut FreeSet,
                               open: &FreeSet,
                               assignment: &mut Vec<_>,
                               active: &mut _| {
                if words == 1 {
                    return None;
                }
                Relocation {
                    class,
                    limit,
                    owner,
                    free,
                    last_end: &last_end,
                    assignment,
                    active,
                    overlap: &overlap,
                }
                .make_window(
                    f,
                    &iv,
                    &pinned,
                    cur.vreg,
                    open,
                    words,
                    align,
                    &blocked,
                    &blocked_for,
                )
            };
            if chosen.is_none() {
                chosen = make_window(&mut owner, &mut free, &open, &mut assignment, &mut active);
            }
            if chosen.is_none() && !pinned.contains(&cur.vreg) {
                // Spill whichever is cheaper: this value, or an active one of lower spill weight
                // whose registers it fits in.
                let mine = weight(cur.vreg);
                let mut cheaper: Vec<(u64, Reverse<u32>, VReg)> = owner[..cap]
                    .iter()
                    .flatten()
                    .filter(|(_, v)| evictable(v) && overlap.intersects(*v, cur.vreg))
                    .map(|&(end, v)| (weight(v), Reverse(end), v))
                    .filter(|c| c.0 < mine)
                    .collect();
                cheaper.sort_unstable();
                cheaper.dedup();
                for (_, _, v) in cheaper {
                    let Some(p) = assignment[v.0 as usize] else {
                        continue;
                    };
                    let mut without = FreeSet { bits: open.bits };
                    let at = usize::from(p.num);
                    let span = at..at + usize::from(f.vreg(v).words);
                    for (holders, r) in owner[span.clone()].iter().zip(span) {
                        if holders
                            .iter()
                            .all(|&(_, o)| o == v || !overlap.intersects(o, cur.vreg))
                        {
                            without.insert(r);
                        }
                    }
                    if let Some(b) = first_fit(&without) {
                        release(&mut owner, &mut free, v);
                        assignment[v.0 as usize] = None;
                        victims.push(v);
                        chosen = Some(b);
                        break;
                    }
                }
                if chosen.is_none() {
                    victims.push(cur.vreg);
                    continue;
                }
            }
            while chosen.is_none() {
                // The active value of the lowest spill weight (of those, the one that ends last).
                let victim = owner[..cap]
                    .iter()
                    .flatten()
                    .filter(|(_, v)| evictable(v) && overlap.intersects(*v, cur.vreg))
                    .min_by_key(|&&(end, v)| (weight(v), Reverse(end), v.0))
                    .copied();
                let Some((_, v)) = victim else {
                    return Err(format!(
                        "`{}`: more spill temporaries live at once than registers",
                        f.name
                    ));
                };
                release(&mut owner, &mut free, v);
                assignment[v.0 as usize] = None;
                victims.push(v);
                open = overlap.open(&owner, &free, cur.vreg);
                chosen = first_fit(&open).or_else(|| {
                    make_window(&mut owner, &mut free, &open, &mut assignment, &mut active)
                });
            }
            let base = chosen.expect("a register was freed");
            for (r, slot) in owner[base..base + words].iter_mut().enumerate() {
                slot.push((cur.end, cur.vreg));
                free.remove(base + r);
            }
            active.push(cur.end, cur.vreg.0, base);
            assignment[cur.vreg.0 as usize] = Some(PReg {
                class,
                num: base as u8,
            });
        }
    }
    if !victims.is_empty() {
        return Ok(Err(dedup(victims)));
    }
    Ok(Ok(assignment))
}

/// How much more an occurrence of a value inside a loop weighs than one outside, per level of
/// nesting. pyptx `fa_ws_pingpong` (with rematerialisation): a 392-byte frame with 1 (loops
/// ignored), 376 with 2, 4 or 8, 384 with 16; no other file of `tests/compare-binaries.sh` spills.
const LOOP_WEIGHT: u64 = 4;

/// The loop depth of every block: how many natural loops (a back edge `b → h` where `h`
/// dominates `b`, with the blocks that reach `b` without passing `h`) contain it. Loops with
/// the same header count once.
fn loop_depths(cfg: &Cfg) -> Vec<u32> {
    let n = cfg.succs.len();
    let mut bodies: FxHashMap<BlockId, Vec<bool>> = FxHashMap::default();
    for b in (0..n as u32).map(BlockId) {
        if !cfg.is_reachable(b) {
            continue;
        }
        for &h in cfg.succs(b) {
            if !cfg.dominates(h, b) {
                continue;
            }
            let body = bodies.entry(h).or_insert_with(|| vec![false; n]);
            body[h.0 as usize] = true;
            let mut stack = vec![b];
            while let Some(x) = stack.pop() {
                if !std::mem::replace(&mut body[x.0 as usize], true) {
                    stack.extend(
                        cfg.preds(x)
                            .iter()
                            .copied()
                            .filter(|&p| cfg.is_reachable(p)),
                    );
                }
            }
        }
    }
    let mut depth = vec![0u32; n];
    for body in bodies.values() {
        for (d, &inside) in depth.iter_mut().zip(body) {
            *d += u32::from(inside);
        }
    }
    depth
}

/// The scan's state that [`Relocation::make_window`] changes.
struct Relocation<'a> {
    class: RegClass,
    limit: usize,
    owner: &'a mut Vec<Vec<(u32, VReg)>>,
    free: &'a mut FreeSet,
    last_end: &'a [Option<u32>],
    assignment: &'a mut Vec<Option<PReg>>,
    active: &'a mut Expiry,
    overlap: &'a Overlap<'a>,
}

impl Relocation<'_> {
    /// Frees an aligned window of `words` registers by moving the active values in it to other
    /// free registers, when enough registers are free in all but fragmented (pyptx
    /// `fa_ws_pingpong`: a 64-word wgmma accumulator with 64 registers free, 15 of them at
    /// `R113`–`R127` and the rest scattered). A value moves for its whole interval, so it may
    /// only take registers no expired value held since it started (`last_end`), and that are
    /// not blocked for it (its `setmaxnreg` cap, calls it crosses, precoloured values). The
    /// windows are tried by the fewest words to move; spill temporaries, accumulators and
    /// precoloured values never move. Returns the window's base, or `None` (nothing changed).
    #[allow(clippy::too_many_arguments)]
    fn make_window(
        &mut self,
        f: &Function,
        iv: &[Option<Interval>],
        pinned: &FxHashSet<VReg>,
        cur: VReg,
        open: &FreeSet,
        words: usize,
        align: usize,
        blocked: &dyn Fn(usize) -> bool,
        blocked_for: &dyn Fn(&Interval, usize) -> bool,
    ) -> Option<usize> {
        let limit = self.limit;
        let overlap = self.overlap;
        let free_regs = (0..limit)
            .filter(|&r| open.contains(r) && !blocked(r))
            .count();
        if free_regs < words || words > limit {
            return None;
        }
        let mut windows: Vec<(usize, usize, Vec<VReg>)> = Vec::new();
        'window: for base in (0..=limit - words).step_by(align) {
            let mut occupants: Vec<VReg> = Vec::new();
            let mut moved = 0;
            for r in base..base + words {
                if blocked(r) {
                    continue 'window;
                }
                if self.owner[r].is_empty() && !self.free.contains(r) {
                    continue 'window;
                }
                // Only the holders that live where `cur` does must move (with holes, a value
                // dead wherever `cur` lives keeps its register and shares it).
                for &(_, v) in &self.owner[r] {
                    if !overlap.intersects(v, cur) {
                        continue;
                    }
                    if occupants.last() == Some(&v) || occupants.contains(&v) {
                        continue;
                    }
                    let Some(p) = self.assignment[v.0 as usize] else {
                        continue 'window;
                    };
                    let w = usize::from(f.vreg(v).words);
                    let at = usize::from(p.num);
                    if pinned.contains(&v)
                        || f.fixed_reg(v).is_some()
                        || at < base
                        || at + w > base + words
                    {
                        continue 'window;
                    }
                    moved += w;
                    occupants.push(v);
                }
            }
            windows.push((moved, base, occupants));
        }
        windows.sort_by_key(|w| (w.0, w.1));
        for (_, base, mut occupants) in windows {
            // Plan on the registers outside the window not yet planned for; widest values
            // first. A value may go to a free register or (with holes) to one whose holders
            // are all dead wherever it lives.
            let mut tmp = FreeSet { bits: [!0; 4] };
            for r in base..base + words {
                tmp.remove(r);
            }
            occupants.sort_by_key(|v| (Reverse(f.vreg(*v).words), v.0));
            let mut plan: Vec<(VReg, usize)> = Vec::new();
            for &v in &occupants {
                let it = iv[v.0 as usize].expect("an active value has an interval");
                let w = usize::from(f.vreg(v).words);
                let a = match w {
                    w if w >= 8 => 8,
                    w if w >= 3 => 4,
                    w => w,
                };
                let to = (0..limit.saturating_sub(w - 1)).step_by(a).find(|&b| {
                    (b..b + w).all(|r| {
                        tmp.contains(r)
                            && (self.free.contains(r)
                                || !self.owner[r].is_empty()
                                    && self.owner[r].iter().all(|&(_, h)| {
                                        !occupants.contains(&h) && !overlap.intersects(h, v)
                                    }))
                            && !blocked_for(&it, r)
                            && self.last_end[r].is_none_or(|e| e < it.start)
                    })
                });
                let Some(to) = to else {
                    break;
                };
                for r in to..to + w {
                    tmp.remove(r);
                }
                plan.push((v, to));
            }
            if plan.len() < occupants.len() {
                continue;
            }
            for (v, to) in plan {
                let w = usize::from(f.vreg(v).words);
                let from = usize::from(self.assignment[v.0 as usize].expect("active").num);
                let k = self.owner[from]
                    .iter()
                    .position(|&(_, o)| o == v)
                    .expect("an active value owns its registers");
                let entry = self.owner[from][k];
                for r in from..from + w {
                    self.owner[r].retain(|&(_, o)| o != v);
                    if self.owner[r].is_empty() {
                        self.free.insert(r);
                    }
                }
                for r in to..to + w {
                    self.owner[r].push(entry);
                    self.free.remove(r);
                }
                self.assignment[v.0 as usize] = Some(PReg {
                    class: self.class,
                    num: to as u8,
                });
                // The entry under the old base finds no register of its own when it expires.
                self.active.push(entry.0, v.0, to);
            }
            return Some(base);
        }
        None
    }
}

/// Whether two values may not share a register. Without holes, their intervals overlap
/// (two values the scan compares are both unexpired, so they always do); with holes
/// ([`live_ranges`]), some range of one overlaps some range of the other.
struct Overlap<'a> {
    iv: &'a [Option<Interval>],
    /// Every value's live ranges; empty without holes.
    ranges: Vec<Vec<(u32, u32)>>,
}

impl Overlap<'_> {
    fn intersects(&self, a: VReg, b: VReg) -> bool {
        if self.ranges.is_empty() {
            let (Some(x), Some(y)) = (self.iv[a.0 as usize], self.iv[b.0 as usize]) else {
                return false;
            };
            return x.start <= y.end && y.start <= x.end;
        }
        let (x, y) = (&self.ranges[a.0 as usize], &self.ranges[b.0 as usize]);
        // Skip the ranges of each that end before the other starts, then walk both in order.
        let (Some(xs), Some(ys)) = (x.first(), y.first()) else {
            return false;
        };
        let mut i = x.partition_point(|r| r.1 < ys.0);
        let mut j = y.partition_point(|r| r.1 < xs.0);
        while i < x.len() && j < y.len() {
            let (p, q) = (x[i], y[j]);
            if p.0 <= q.1 && q.0 <= p.1 {
                return true;
            }
            if p.1 < q.1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        false
    }

    /// The registers `cur` may take as far as other values go: the free ones and, with
    /// holes, those whose holders all are dead wherever `cur` lives (a register lent while
    /// its holder is in a hole).
    fn open(&self, owner: &[Vec<(u32, VReg)>], free: &FreeSet, cur: VReg) -> FreeSet {
        let mut open = FreeSet { bits: free.bits };
        if self.ranges.is_empty() {
            return open;
        }
        // A tuple's holder repeats over its registers: remember the last answer.
        let mut last: Option<(VReg, bool)> = None;
        for (r, holders) in owner.iter().enumerate() {
            if holders.is_empty() {
                continue;
            }
            let shareable = holders.iter().all(|&(_, h)| {
                let dead = match last {
                    Some((v, d)) if v == h => d,
                    _ => !self.intersects(h, cur),
                };
                last = Some((h, dead));
                dead
            });
            if shareable {
                open.insert(r);
            }
        }
        open
    }
}

/// The scan's active intervals, to expire them in order of end point (then vreg, then base
/// register) as the scan's start point passes their ends: a bucket queue, a list per end point
/// threaded through one vector, since end points are small numbers (the numbering's points). A
/// `BinaryHeap` of `(end, vreg, base)` cost 157 instructions a removal (callgrind,
/// `straight_16000.ptx`: 0.94M of the scan's 5.7M). A value moved out of a window is pushed
/// again under its new base; the entry under the old one expires with it and finds no register
/// of its own.
struct Expiry {
    /// `first[p]`: one more than the index of the latest entry ending at point `p` (0: none,
    /// so that the list starts as zeroed memory).
    first: Vec<u32>,
    /// `(vreg, base, one more than the index of the next entry ending at the same point)`.
    entries: Vec<(u32, usize, u32)>,
    /// The points before `next` are expired.
    next: u32,
    /// Entries not yet expired.
    pending: usize,
}

impl Expiry {
    /// For `intervals` intervals ending at most at `last_point`.
    fn new(last_point: u32, intervals: usize) -> Expiry {
        Expiry {
            first: vec![0; last_point as usize + 1],
            entries: Vec::with_capacity(intervals),
            next: 0,
            pending: 0,
        }
    }

    fn push(&mut self, end: u32, vreg: u32, base: usize) {
        debug_assert!(end >= self.next, "an interval ends before the scan's point");
        let slot = &mut self.first[end as usize];
        self.entries.push((vreg, base, *slot));
        *slot = self.entries.len() as u32;
        self.pending += 1;
    }

    /// The entries ending before `start`, as `(end, vreg, base)` into `out` (cleared first), in
    /// increasing order.
    fn expire_before(&mut self, start: u32, out: &mut Vec<(u32, u32, usize)>) {
        out.clear();
        while self.next < start {
            if self.pending == 0 {
                // Nothing can end in the points left: later pushes end at `start` or after.
                self.next = start;
                break;
            }
            let end = self.next;
            let at = out.len();
            let mut e = std::mem::take(&mut self.first[end as usize]);
            while e != 0 {
                let (vreg, base, next) = self.entries[e as usize - 1];
                out.push((end, vreg, base));
                e = next;
            }
            self.pending -= out.len() - at;
            out[at..].sort_unstable();
            self.next += 1;
        }
    }
}

/// Takes `v` off every register it holds; a register left with no holder is free again.
fn release(owner: &mut [Vec<(u32, VReg)>], free: &mut FreeSet, v: VReg) {
    for (r, slot) in owner.iter_mut().enumerate() {
        if let Some(k) = slot.iter().position(|&(_, o)| o == v) {
            slot.swap_remove(k);
            if slot.is_empty() {
                free.insert(r);
            }
        }
    }
}

/// A set of register numbers below 256 as bits, with an aligned first-fit search.
struct FreeSet {
    bits: [u64; 4],
}

impl FreeSet {
    /// Registers `0..limit` of `class` free, except R1 (the stack pointer) and UR0–UR3: ptxas
    /// never allocates those (none of the 248 golden listings of `tests/golden/ptxas` names
    /// one; the descriptor is `ULDC.64 UR4, c[0x0][0x208]`), and starting at UR4 keeps ptxc's
    /// uniform registers named as ptxas's.
    fn new(limit: usize, class: RegClass) -> FreeSet {
        let mut s = FreeSet { bits: [0; 4] };
        for r in 0..limit {
            let reserved = match class {
                RegClass::Gpr => r == 1,
                RegClass::Ugpr => r < 4,
                _ => false,
            };
            if !reserved {
                s.insert(r);
            }
        }
        s
    }
    fn insert(&mut self, r: usize) {
        self.bits[r / 64] |= 1 << (r % 64);
    }
    fn remove(&mut self, r: usize) {
        self.bits[r / 64] &= !(1 << (r % 64));
    }
    fn contains(&self, r: usize) -> bool {
        r < 256 && self.bits[r / 64] >> (r % 64) & 1 == 1
    }
    /// The lowest base of `words` free registers aligned as ptxc aligns tuples (pairs at even
    /// numbers, three to seven words at multiples of 4, eight and more at multiples of 8). An aligned group never straddles two
    /// 64-bit words, so each word is searched on its own.
    fn first_fit(&self, words: usize) -> Option<usize> {
        let (align_mask, n) = match words {
            1 => (u64::MAX, 1),
            2 => (0x5555_5555_5555_5555, 2),
            // Eight words and more (GMMA accumulators) at multiples of 8, as ptxas places them
            // (every QGMMA/HGMMA accumulator in the pyptx corpus starts at R24, R56, R88, …).
            w if w >= 8 => (0x0101_0101_0101_0101, w),
            w => (0x1111_1111_1111_1111, w),
        };
        for (i, &w) in self.bits.iter().enumerate() {
            let mut m = w & align_mask;
            for k in 1..n {
                m &= w >> k;
            }
            if m != 0 {
                return Some(64 * i + m.trailing_zeros() as usize);
            }
        }
        // Then across a 64-register boundary (ptxas's accumulators at R24–R87 in pyptx
        // `fa_ws_pingpong`): only when no block fits within one word, so allocations that
        // found one are unchanged.
        if n >= 8 {
            return (0..=256 - n)
                .step_by(8)
                .find(|&base| (base..base + n).all(|r| self.contains(r)));
        }
        None
    }
}

fn dedup(mut v: Vec<VReg>) -> Vec<VReg> {
    v.sort();
    v.dedup();
    v
}

/// The values that must stay in registers:
///
/// * spill temporaries (hint `spill`), which live for one instruction;
/// * the shared-memory spill base and the values it is computed from ([`smem_base`]);
/// * the accumulators of the tensor-core instructions that update them in place
///   (`QGMMA`/`HGMMA`, `lower/isel/wgmma.rs`). Out of SSA form such an instruction only
///   *defines* its tuple (the prior value became a `COPY` before it), so a reload before it
///   would not be inserted, and a store after it would read registers the tensor core writes
///   until `WARPGROUP.DEPBAR` (`emit::sass` refuses anything there). The values they are
///   copied from and to spill instead.
fn unspillable(f: &Function) -> FxHashSet<VReg> {
    let mut out: FxHashSet<VReg> = (0..f.vregs.len() as u32)
        .map(VReg)
        .filter(|&v| matches!(f.vreg(v).hint.as_deref(), Some("spill" | SMEM_BASE_HINT)))
        .collect();
    for i in f.blocks.iter().flat_map(|b| &b.insts) {
        if matches!(i.mnemonic, "QGMMA" | "HGMMA") {
            out.extend(i.regs().filter_map(|r| r.reg.vreg()));
        }
    }
    out
}

/// Moves each of `victims` to a stack slot: every definition stores, every use reloads.
///
/// Only the words an instruction touches move: a 64-bit value is often written one word at a
/// time (`IADD3` the low word, `IADD3.X` the high word), and storing the whole pair after each
/// would store a word the instruction never wrote over the one an earlier store saved (pyptx
/// `matmul_tma_v33`, refused by the checker: `STL.64 [R1+0x90]` read the high word from a
/// register that held another value). Each instruction gets its own temporary covering the
/// words it touches (one word, an aligned pair or quad, or the whole value); the words it reads
/// are loaded before it and the words it writes stored after it, as naturally aligned
/// `LDL`/`STL` of 32, 64 or 128 bits (a 32-word accumulator takes eight `.128`s). A guarded
/// definition stores under the same guard: when the guard is false the slot keeps the old
/// value, which an unguarded store of the temporary would overwrite.
///
/// All victims of a round move in one walk over the function (a walk per victim was
/// quadratic: pyptx `fa_ws_pingpong` spills hundreds of values of a 9k-instruction kernel).
/// The result is the one victim-by-victim spilling gives: slots are laid out and temporaries
/// numbered victim by victim (all of the first victim's, in program order, then the
/// second's), and an instruction touching several victims gets the first victim's loads
/// outermost, `LDL v1; LDL v2; inst; STL v2; STL v1`.
fn spill(f: &mut Function, victims: &[VReg], alloc: &mut Allocation) {
    // Per victim: its slot offset, the value (and word) it stands for (a victim never is a
    // spill temporary itself, but it is looked up), and the temporaries of its instructions.
    struct Victim {
        v: VReg,
        offset: u32,
        /// In a shared-memory slot (`offset` from [`Allocation::smem_base`]), not on the stack.
        shared: bool,
        original: VReg,
        shift0: u8,
        temps: Vec<(VReg, u8)>,
        next: usize,
        /// Recomputed before each use instead of stored and reloaded ([`remat`]): the
        /// instructions, inputs first. Its definition is deleted; it has no slot.
        recipe: Option<Vec<Inst>>,
    }
    let defs = remat::Defs::new(f);
    let mut index: Vec<u32> = vec![u32::MAX; f.vregs.len()];
    let mut vs: Vec<Victim> = Vec::with_capacity(victims.len());
    for (k, &v) in victims.iter().enumerate() {
        let bytes = 4 * u32::from(f.vreg(v).words);
        let recipe = if alloc.alias.contains_key(&v) {
            None
        } else {
            remat::recipe(f, &defs, v)
        };
        let shared = if recipe.is_some() {
            None
        } else {
            smem_slot(f, alloc, v)
        };
        let offset = if recipe.is_some() {
            0
        } else if let Some(slot) = shared {
            0x80 * slot
        } else {
            // Aligned for the widest access (a `.128` at a multiple of 16 bytes).
            let align = bytes.next_power_of_two().min(16);
            let offset = (f.frame_bytes + alloc.spill_bytes).next_multiple_of(align);
            alloc.spill_bytes = offset + bytes - f.frame_bytes;
            alloc.slots.insert(v, offset);
            offset
        };
        let (original, shift0) = alloc.alias.get(&v).copied().unwrap_or((v, 0));
        index[v.0 as usize] = k as u32;
        vs.push(Victim {
            v,
            offset,
            shared: shared.is_some(),
            original,
            shift0,
            temps: Vec::new(),
            next: 0,
            recipe,
        });
    }
    // The definitions of rematerialised values, deleted (each defines that value alone).
    let mut recomputed = vec![false; f.vregs.len()];
    for vic in vs.iter().filter(|vic| vic.recipe.is_some()) {
        recomputed[vic.v.0 as usize] = true;
    }
    let remat_def = |inst: &Inst| {
        inst.defs()
            .any(|d| d.vreg().is_some_and(|v| recomputed[v.0 as usize]))
    };
    let smem_base = alloc.smem_base;
    let slot = |off: u32| {
        Operand::new(OpKind::Mem {
            prefix: MemPrefix::None,
            terms: vec![
                MemTerm::Reg(
                    Reg::phys(PReg {
                        class: RegClass::Gpr,
                        num: 1,
                    }),
                    None,
                ),
                MemTerm::Imm(i64::from(off)),
            ],
        })
    };
    let shared_slot = |off: u32| {
        let base = smem_base.expect("a shared slot has a base");
        Operand::new(OpKind::Mem {
            prefix: MemPrefix::None,
            terms: vec![
                MemTerm::Reg(Reg::whole(base, 1), None),
                MemTerm::Imm(i64::from(off)),
            ],
        })
    };
    let words: Vec<usize> = victims
        .iter()
        .map(|&v| usize::from(f.vreg(v).words))
        .collect();
    // The victims an instruction touches, in victim order, with the words it reads and writes.
    let touches = |inst: &Inst| -> Vec<(usize, Vec<bool>, Vec<bool>)> {
        let mut out: Vec<(usize, Vec<bool>, Vec<bool>)> = Vec::new();
        for r in inst.regs() {
            if let Reg::Virt { vreg, first, count } = r.reg
                && let Some(&k) = index.get(vreg.0 as usize)
                && k != u32::MAX
            {
                let k = k as usize;
                let pos = match out.iter().position(|t| t.0 == k) {
                    Some(pos) => pos,
                    None => {
                        out.push((k, vec![false; words[k]], vec![false; words[k]]));
                        out.len() - 1
                    }
                };
                let mask = if r.def {
                    &mut out[pos].2
                } else {
                    &mut out[pos].1
                };
                mask[usize::from(first)..usize::from(first + count)].fill(true);
            }
        }
        out.sort_by_key(|t| t.0);
        out
    };
    // First walk: the temporaries, numbered victim by victim in program order.
    let mut spans: Vec<Vec<(u8, u8)>> = vec![Vec::new(); vs.len()];
    for inst in f.blocks.iter().flat_map(|b| &b.insts) {
        let t = touches(inst);
        if t.is_empty() || inst.mnemonic == "UNDEF" || remat_def(inst) {
            continue;
        }
        for (k, reads, writes) in t {
            if vs[k].recipe.is_some() {
                // A recomputation defines the whole value.
                spans[k].push((0, words[k] as u8));
                continue;
            }
            let touched: Vec<bool> = reads.iter().zip(&writes).map(|(a, b)| *a || *b).collect();
            spans[k].push(temp_span(&touched));
        }
    }
    for (vic, spans) in vs.iter_mut().zip(&spans) {
        for &(base, n) in spans {
            let temp = f.new_vreg(RegClass::Gpr, n, Some("spill".into()));
            alloc.alias.insert(temp, (vic.original, vic.shift0 + base));
            vic.temps.push((temp, base));
        }
    }
    // Second walk: rename, load before and store after.
    for bi in 0..f.blocks.len() {
        let insts = std::mem::take(&mut f.blocks[bi].insts);
        let mut out = Vec::with_capacity(insts.len() + 4);
        for mut inst in insts {
            let t = touches(&inst);
            if t.is_empty() {
                out.push(inst);
                continue;
            }
            if inst.mnemonic == "UNDEF" || remat_def(&inst) {
                continue;
            }
            // A guard the instruction itself redefines cannot guard the store after it: load
            // the words it writes first instead, so the store puts back the old value when the
            // write does not happen.
            let guard = inst.guard;
            let guard_redefined =
                guard.is_some_and(|g| inst.defs().any(|d| d.vreg().is_some() && d == g.pred));
            let mut stores: Vec<Inst> = Vec::new();
            for (k, mut reads, writes) in t {
                let vic = &mut vs[k];
                if guard_redefined {
                    for (r, w) in reads.iter_mut().zip(&writes) {
                        *r |= *w;
                    }
                }
                let (temp, base) = vic.temps[vic.next];
                vic.next += 1;
                rename(&mut inst, vic.v, temp, base);
                if let Some(recipe) = &vic.recipe {
                    out.extend(remat::instantiate(f, recipe, vic.v, temp));
                    continue;
                }
                let part = |first: u8, count: u8| Reg::Virt {
                    vreg: temp,
                    first: first - base,
                    count,
                };
                if vic.shared {
                    // One word: `LDS t, [base+0x80·k]` before, `STS [base+0x80·k], t` after.
                    if reads[0] {
                        out.push(Inst::new(
                            "LDS",
                            &[],
                            vec![Operand::def(part(0, 1)), shared_slot(vic.offset)],
                        ));
                    }
                    if writes[0] {
                        let mut st = Inst::new(
                            "STS",
                            &[],
                            vec![shared_slot(vic.offset), Operand::use_(part(0, 1))],
                        );
                        if !guard_redefined {
                            st.guard = guard;
                        }
                        stores.insert(0, st);
                    }
                    continue;
                }
                for (first, count) in aligned_runs(&reads) {
                    out.push(Inst::new(
                        "LDL",
                        access_width(count),
                        vec![
                            Operand::def(part(first, count)),
                            slot(vic.offset + 4 * u32::from(first)),
                        ],
                    ));
                }
                // This victim's stores come after those of the victims after it.
                let mut mine = Vec::new();
                for (first, count) in aligned_runs(&writes) {
                    let mut st = Inst::new(
                        "STL",
                        access_width(count),
                        vec![
                            slot(vic.offset + 4 * u32::from(first)),
                            Operand::use_(part(first, count)),
                        ],
                    );
                    if !guard_redefined {
                        st.guard = guard;
                    }
                    mine.push(st);
                }
                stores.splice(0..0, mine);
            }
            out.push(inst);
            out.extend(stores);
        }
        f.blocks[bi].insts = out;
    }
    // The inputs of the recomputed values (the `S2R SR_CgaCtaId` and `MOV 0x400` of a shared
    // base) are dead where nothing else reads them: their definitions go too.
    let members: FxHashSet<VReg> = vs
        .iter()
        .filter_map(|vic| vic.recipe.as_ref())
        .flat_map(|r| r.iter().flat_map(|i| i.defs().filter_map(|d| d.vreg())))
        .filter(|v| !recomputed[v.0 as usize])
        .collect();
    let mut inputs = members.clone();
    while !inputs.is_empty() {
        for i in f.blocks.iter().flat_map(|b| &b.insts) {
            for u in i.uses() {
                if let Some(v) = u.vreg() {
                    inputs.remove(&v);
                }
            }
        }
        if inputs.is_empty() {
            break;
        }
        let mut next = FxHashSet::default();
        for b in &mut f.blocks {
            b.insts.retain(|i| {
                let dead = i.defs().next().is_some()
                    && i.defs()
                        .all(|d| d.vreg().is_some_and(|v| inputs.contains(&v)));
                if dead {
                    next.extend(
                        i.uses()
                            .filter_map(|u| u.vreg())
                            .filter(|v| members.contains(v)),
                    );
                }
                !dead
            });
        }
        inputs = next;
    }
}

/// The hint of the shared-memory spill base and the values it is computed from.
const SMEM_BASE_HINT: &str = "%smem_spill_base";

/// The shared memory ptxas lets the spill area of a kernel take: 47 KiB (the 48 KiB of static
/// shared memory less the reserved 1 KiB). Its rows per warp are `48128 / (128 · warps)`
/// (ptxas: 5 slots for 63 and 64 warps, 7 for 50, 8 for 42, 10 for 36, 11 for 32).
const SMEM_SPILL_BUDGET: u32 = 48128;

/// A shared-memory slot for the victim `v`, if the kernel spills to shared memory
/// (`.pragma "enable_smem_spilling"`), `v` is one general register and a slot is left; the
/// base register is built on the first. Slots are numbered from 0 in spill order.
fn smem_slot(f: &mut Function, alloc: &mut Allocation, v: VReg) -> Option<u32> {
    let area = f.smem_spill?;
    let info = f.vreg(v);
    if info.words != 1 || info.class != RegClass::Gpr {
        return None;
    }
    if area.slots >= SMEM_SPILL_BUDGET / (128 * area.warps.max(1)) {
        return None;
    }
    if alloc.smem_base.is_none() {
        smem_base(f, alloc, area.start);
    }
    let slot = area.slots;
    alloc.smem_slots.insert(v, slot);
    f.smem_spill = Some(crate::mir::SmemSpill {
        slots: slot + 1,
        ..area
    });
    // The row of a warp is as long as its slots: patch the multiplier.
    let row = alloc.smem_row.expect("built with the base");
    if let Some(imad) = f.blocks[0]
        .insts
        .iter_mut()
        .find(|i| i.defs().any(|d| d.vreg() == Some(row)))
    {
        imad.ops[2] = Operand::imm(i64::from(0x80 * (slot + 1)));
    }
    Some(slot)
}

/// Builds the lane's shared spill base at the top of the entry block, as ptxas does
/// (`11_stack_spill/spill_smemprag`):
///
/// ```text
/// S2R ty, SR_TID.Y; LDC ny, c[0x0][0x4]; S2R tz, SR_TID.Z; S2R rank, SR_CgaCtaId
/// IMAD.U32 a, ny, tz, ty; S2R tx, SR_TID.X; LDC nx, c[0x0][RZ]; IMAD.U32 t, a, nx, tx
/// SHF.R.U32.HI warp, RZ, 0x5, t; LOP3.LUT lane, t, 0x1f, RZ, 0xc0, !PT
/// LEA l, lane, start, 0x2; IMAD.U32 o, warp, row, l; LEA base, rank, o, 0x18
/// ```
///
/// that is `rank << 24 | start + 4·lane + row·warp` for the linear thread index `t`, where a
/// row is `0x80` bytes per slot: slot `k` of a lane is at `base + 0x80·k`, the 32 lanes of a
/// warp side by side.
fn smem_base(f: &mut Function, alloc: &mut Allocation, start: u32) {
    let mut new = || Reg::whole(f.new_vreg(RegClass::Gpr, 1, Some(SMEM_BASE_HINT.into())), 1);
    let [ty, ny, tz, rank, a, tx, nx, t, warp, lane, l, o, base] = std::array::from_fn(|_| new());
    let rz = || Operand::use_(Reg::phys(PReg::RZ));
    let u = Operand::use_;
    let d = Operand::def;
    let s2r = |r, n| Inst::new("S2R", &[], vec![d(r), Operand::new(OpKind::SReg(n))]);
    let ldc = |r, off| {
        Inst::new(
            "LDC",
            &[],
            vec![
                d(r),
                Operand::new(OpKind::CBank {
                    bank: 0,
                    base: None,
                    offset: off,
                }),
            ],
        )
    };
    let code = vec![
        s2r(ty, 0x22),
        ldc(ny, 0x4),
        s2r(tz, 0x23),
        s2r(rank, 0x88),
        Inst::new("IMAD", &["U32"], vec![d(a), u(ny), u(tz), u(ty)]),
        s2r(tx, 0x21),
        ldc(nx, 0x0),
        Inst::new("IMAD", &["U32"], vec![d(t), u(a), u(nx), u(tx)]),
        Inst::new(
            "SHF",
            &["R", "U32", "HI"],
            vec![d(warp), rz(), Operand::imm(5), u(t)],
        ),
        Inst::new(
            "LOP3",
            &["LUT"],
            vec![
                d(lane),
                u(t),
                Operand::imm(0x1f),
                rz(),
                Operand::imm(0xc0),
                Operand::use_(Reg::phys(PReg::PT)).inverted(),
            ],
        ),
        Inst::new(
            "LEA",
            &[],
            vec![
                d(l),
                u(lane),
                Operand::imm(i64::from(start)),
                Operand::imm(2),
            ],
        ),
        Inst::new(
            "IMAD",
            &["U32"],
            vec![d(o), u(warp), Operand::imm(0x80), u(l)],
        ),
        Inst::new("LEA", &[], vec![d(base), u(rank), u(o), Operand::imm(0x18)]),
    ];
    f.blocks[0].insts.splice(0..0, code);
    alloc.smem_base = base.vreg();
    alloc.smem_row = o.vreg();
}

/// The words a spill temporary covers, as `(first, count)`, for an instruction touching the
/// words `touched` of a spilled value: the smallest aligned one word, pair or quad holding them
/// all (aligned within the value as the value is in the register file, so the instruction's
/// 64- and 128-bit operands stay aligned), else the whole value.
fn temp_span(touched: &[bool]) -> (u8, u8) {
    let lo = touched.iter().position(|&t| t).unwrap_or(0);
    let hi = touched.iter().rposition(|&t| t).unwrap_or(0);
    for n in [1, 2, 4] {
        if n <= touched.len() && lo / n == hi / n {
            return ((lo - lo % n) as u8, n as u8);
        }
    }
    (0, touched.len() as u8)
}

/// The words marked in `mask` as naturally aligned runs `(first, count)` of 4, 2 or 1 words
/// (the `.128`, `.64` and 32-bit local accesses), largest first.
fn aligned_runs(mask: &[bool]) -> Vec<(u8, u8)> {
    let mut out = Vec::new();
    let mut w = 0;
    while w < mask.len() {
        if !mask[w] {
            w += 1;
            continue;
        }
        let n = [4, 2, 1]
            .into_iter()
            .find(|&n| w % n == 0 && w + n <= mask.len() && mask[w..w + n].iter().all(|&m| m))
            .expect("one word always fits");
        out.push((w as u8, n as u8));
        w += n;
    }
    out
}

/// The width modifier of a local load or store of `words` words.
fn access_width(words: u8) -> &'static [&'static str] {
    match words {
        1 => &[],
        2 => &["64"],
        _ => &["128"],
    }
}

/// Renames `from` to `to` in `inst`, whose word 0 is word `base` of `from`.
fn rename(inst: &mut Inst, from: VReg, to: VReg, base: u8) {
    for o in &mut inst.ops {
        for r in o.regs_mut() {
            if let Reg::Virt { vreg, first, .. } = r
                && *vreg == from
            {
                *vreg = to;
                *first -= base;
            }
        }
    }
    if let Some(g) = &mut inst.guard
        && let Reg::Virt { vreg, first, .. } = &mut g.pred
        && *vreg == from
    {
        *vreg = to;
        *first -= base;
    }
}

/// The physical register for a register operand under `a`.
pub fn physical(a: &[Option<PReg>], r: Reg) -> Reg {
    match r {
        Reg::Virt { vreg, first, count } => {
            let base = a[vreg.0 as usize].unwrap_or_else(|| panic!("{vreg} has no register"));
            Reg::Phys {
                reg: PReg {
                    class: base.class,
                    num: base.num + first,
                },
                count,
            }
        }
        phys => phys,
    }
}

/// Replaces virtual registers by physical ones, turns COPYs into moves and drops UNDEFs; grows
/// the frame by the spill slots and opens it in the prologue.
fn rewrite(f: &mut Function, alloc: &Allocation) {
    let a = &alloc.assignment;
    for block in &mut f.blocks {
        // Registers in place; the block is rebuilt only where a `COPY` or `UNDEF` changes its
        // instructions (most blocks have none, and moving every instruction cost more than
        // renaming them).
        let mut pseudo = false;
        for inst in &mut block.insts {
            if inst.mnemonic == "UNDEF" {
                pseudo = true;
                continue;
            }
            inst.for_each_reg_mut(|r| *r = physical(a, *r));
            pseudo |= inst.mnemonic == "COPY";
        }
        if !pseudo {
            continue;
        }
        let insts = std::mem::take(&mut block.insts);
        for inst in insts {
            match inst.mnemonic {
                "UNDEF" => {}
                "COPY" => block.insts.extend(lower_copy(&inst)),
                _ => block.insts.push(inst),
            }
        }
    }
    f.frame_bytes += alloc.spill_bytes;
    f.vregs.clear();
    f.fixed.clear();
}

/// A physical register-to-register copy as SASS moves (none when source and destination are
/// the same registers).
fn lower_copy(copy: &Inst) -> Vec<Inst> {
    let d = copy.defs().next().expect("COPY defines");
    let s = copy.uses().next().expect("COPY reads");
    let (Reg::Phys { reg: dr, count }, Reg::Phys { reg: sr, .. }) = (d, s) else {
        unreachable!("copies are physical after rewriting")
    };
    if dr == sr {
        return Vec::new();
    }
    let mut out = Vec::new();
    for w in 0..count {
        let dw = Reg::phys(PReg {
            num: dr.num + w,
            ..dr
        });
        let sw = if sr.is_zero() {
            Reg::phys(sr)
        } else {
            Reg::phys(PReg {
                num: sr.num + w,
                ..sr
            })
        };
        let mv = match dr.class {
            RegClass::Gpr => Inst::new("MOV", &[], vec![Operand::def(dw), Operand::use_(sw)]),
            RegClass::Ugpr => Inst::new("UMOV", &[], vec![Operand::def(dw), Operand::use_(sw)]),
            RegClass::Pred => Inst::new(
                "PLOP3",
                &["LUT"],
                vec![
                    Operand::def(dw),
                    Operand::def(Reg::phys(PReg::PT)),
                    Operand::use_(sw),
                    Operand::use_(Reg::phys(PReg::PT)),
                    Operand::use_(Reg::phys(PReg::PT)),
                    Operand::imm(0x80),
                    Operand::imm(0),
                ],
            ),
            RegClass::UPred => Inst::new(
                "UPLOP3",
                &["LUT"],
                vec![
                    Operand::def(dw),
                    Operand::def(Reg::phys(PReg::UPT)),
                    Operand::use_(sw),
                    Operand::use_(Reg::phys(PReg::UPT)),
                    Operand::use_(Reg::phys(PReg::UPT)),
                    Operand::imm(0x80),
                    Operand::imm(0),
                ],
            ),
        };
        let mut mv = mv;
        mv.guard = copy.guard;
        out.push(mv);
    }
    out
}

/// The highest general register a function uses after allocation (for REGCOUNT).
pub fn max_gpr(f: &Function) -> Option<u8> {
    f.blocks
        .iter()
        .flat_map(|b| b.insts.iter())
        .flat_map(|i| i.regs())
        .filter_map(|r| match r.reg {
            Reg::Phys { reg, count } if reg.class == RegClass::Gpr && !reg.is_zero() => {
                Some(reg.num + count - 1)
            }
            _ => None,
        })
        .max()
}

/// The entry block of a function (for prologue insertion by later stages).
pub const ENTRY: BlockId = BlockId(0);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{MemPrefix, MemTerm};

    /// `n` values loaded, then all summed in reverse order: `n` live at once.
    fn pressure(n: usize, max_regs: u32) -> Function {
        let mut f = Function::new("p", true);
        f.max_regs = max_regs;
        f.ssa = false;
        let addr = f.new_vreg(RegClass::Gpr, 2, None);
        let desc = f.new_vreg(RegClass::Ugpr, 2, None);
        let mut insts = vec![
            Inst::new(
                "LDC",
                &["64"],
                vec![
                    Operand::def(Reg::whole(addr, 2)),
                    Operand::new(OpKind::CBank {
                        bank: 0,
                        base: None,
                        offset: 0x210,
                    }),
                ],
            ),
            Inst::new(
                "ULDC",
                &["64"],
                vec![
                    Operand::def(Reg::whole(desc, 2)),
                    Operand::new(OpKind::CBank {
                        bank: 0,
                        base: None,
                        offset: 0x208,
                    }),
                ],
            ),
        ];
        let mem = |off: i64| {
            Operand::new(OpKind::Mem {
                prefix: MemPrefix::Desc(Reg::whole(desc, 2)),
                terms: vec![
                    MemTerm::Reg(Reg::whole(addr, 2), Some("64")),
                    MemTerm::Imm(off),
                ],
            })
        };
        let vals: Vec<VReg> = (0..n).map(|_| f.new_vreg(RegClass::Gpr, 1, None)).collect();
        for (i, v) in vals.iter().enumerate() {
            insts.push(Inst::new(
                "LDG",
                &["E"],
                vec![Operand::def(Reg::whole(*v, 1)), mem(4 * i as i64)],
            ));
        }
        let mut acc = vals[n - 1];
        for v in vals.iter().rev().skip(1) {
            let s = f.new_vreg(RegClass::Gpr, 1, None);
            insts.push(Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(Reg::whole(s, 1)),
                    Operand::use_(Reg::whole(acc, 1)),
                    Operand::use_(Reg::whole(*v, 1)),
                    Operand::use_(Reg::phys(PReg::RZ)),
                ],
            ));
            acc = s;
        }
        insts.push(Inst::new(
            "STG",
            &["E"],
            vec![mem(0), Operand::use_(Reg::whole(acc, 1))],
        ));
        insts.push(Inst::new("EXIT", &[], vec![]));
        f.blocks[0].insts = insts;
        f
    }

    /// Straight-line code takes its intervals and live-in set from one walk
    /// (`straight_line_intervals`); they must be those of the liveness dataflow: a value read
    /// before any write (`early`, then written under a guard), and one read and written by the
    /// same instruction (`acc`), are live in and start at 0; the others start where written.
    #[test]
    fn straight_line_intervals_are_the_dataflows() {
        let mut f = pressure(6, 255);
        let gpr = |f: &mut Function| Reg::whole(f.new_vreg(RegClass::Gpr, 1, None), 1);
        let (early, x, acc) = (gpr(&mut f), gpr(&mut f), gpr(&mut f));
        let p = Reg::whole(f.new_vreg(RegClass::Pred, 1, None), 1);
        let add = |d: Reg, a: Reg| {
            Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(d),
                    Operand::use_(a),
                    Operand::use_(Reg::phys(PReg::RZ)),
                    Operand::use_(Reg::phys(PReg::RZ)),
                ],
            )
        };
        let extra = [
            add(x, early),
            Inst::new("ISETP", &[], vec![Operand::def(p), Operand::use_(x)]),
            add(early, x).guarded(p, false),
            add(acc, acc),
            Inst::new(
                "STG",
                &["E"],
                vec![Operand::use_(early), Operand::use_(acc)],
            ),
        ];
        f.blocks[0].insts.splice(2..2, extra);
        let cfg = Cfg::new(&f);
        let live = Liveness::compute(&f, &cfg);
        let slow = intervals(&f, &live, &[BlockId(0)]);
        let (fast_live, fast) = straight_line_intervals(&f);
        assert_eq!(fast_live.live_in, live.live_in);
        assert_eq!(fast_live.live_out, live.live_out);
        let points = |iv: &[Option<Interval>]| -> Vec<Option<(u32, u32, u32)>> {
            iv.iter()
                .map(|i| i.map(|i| (i.vreg.0, i.start, i.end)))
                .collect()
        };
        assert_eq!(points(&fast), points(&slow));
        let vreg = |r: Reg| r.vreg().expect("virtual").0;
        assert_eq!(live.live_in[0], vec![vreg(early), vreg(acc)]);
    }

    #[test]
    fn fits_without_spilling() {
        let mut f = pressure(40, 255);
        let a = allocate(&mut f).unwrap();
        assert_eq!(a.spill_bytes, 0);
        checker::check(&f, &a).unwrap();
        // R1 (the stack pointer) is never handed out.
        assert!(
            a.assignment
                .iter()
                .flatten()
                .all(|p| !(p.class == RegClass::Gpr && p.num == 1))
        );
    }

    #[test]
    fn smem_spilling_fills_shared_slots_first_and_the_checker_agrees() {
        // `.pragma "enable_smem_spilling"` with 63 warps: 5 shared slots per warp (47 KiB /
        // (63 · 128)), then the stack.
        let mut f = pressure(60, 32);
        f.smem_spill = Some(crate::mir::SmemSpill {
            start: 0x400,
            warps: 63,
            slots: 0,
        });
        let a = allocate(&mut f).unwrap();
        checker::check(&f, &a).unwrap();
        assert_eq!(f.smem_spill.unwrap().slots, 5);
        assert_eq!(a.smem_slots.len(), 5);
        assert!(a.spill_bytes > 0, "the rest spills to the stack");
        let insts = &f.blocks[0].insts;
        let count = |m: &str| insts.iter().filter(|i| i.mnemonic == m).count();
        assert!(count("STS") >= 5 && count("LDS") >= 5);
        // The row of a warp is 5 slots of 0x80 bytes.
        assert!(insts.iter().any(
            |i| i.mnemonic == "IMAD" && i.ops.get(2).is_some_and(|o| *o == Operand::imm(0x280))
        ));
        // A reload from another slot is caught.
        let mut broken = f.clone();
        let lds = broken.blocks[0]
            .insts
            .iter_mut()
            .find(|i| i.mnemonic == "LDS")
            .unwrap();
        for o in &mut lds.ops {
            if let OpKind::Mem { terms, .. } = &mut o.kind
                && let Some(MemTerm::Imm(off)) = terms.last_mut()
            {
                *off ^= 0x80;
            }
        }
        assert!(checker::check(&broken, &a).is_err());
    }

    /// The instructions that define `v` in `f`.
    fn defining(f: &Function, v: VReg) -> usize {
        f.blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| i.defs().any(|d| d.vreg() == Some(v)))
            .count()
    }

    #[test]
    fn spilled_entry_values_are_recomputed_at_their_use_not_reloaded() {
        // Sixty loads live at once under `.maxnreg 32`, and two entry values read only at the
        // end: `SR_TID.X`, and a shared window's base (`S2R SR_CgaCtaId; MOV 0x400; LEA`).
        let mut f = pressure(60, 32);
        let sr = |name: &str| {
            let n = crate::target::sm90a::print::SR_NAMES
                .iter()
                .position(|n| *n == name)
                .unwrap();
            Operand::new(OpKind::SReg(n as u8))
        };
        let [tid, rank, k, base, sum, total] =
            std::array::from_fn(|_| f.new_vreg(RegClass::Gpr, 1, None));
        let w = |v| Reg::whole(v, 1);
        let insts = &mut f.blocks[0].insts;
        insts.splice(
            0..0,
            [
                Inst::new("S2R", &[], vec![Operand::def(w(tid)), sr("SR_TID.X")]),
                Inst::new("S2R", &[], vec![Operand::def(w(rank)), sr("SR_CgaCtaId")]),
                Inst::new("MOV", &[], vec![Operand::def(w(k)), Operand::imm(0x400)]),
                Inst::new(
                    "LEA",
                    &[],
                    vec![
                        Operand::def(w(base)),
                        Operand::use_(w(rank)),
                        Operand::use_(w(k)),
                        Operand::imm(0x18),
                    ],
                ),
            ],
        );
        let stg = insts.iter().position(|i| i.mnemonic == "STG").unwrap();
        let OpKind::Reg(acc) = insts[stg].ops[1].kind else {
            panic!("STG stores a register")
        };
        let add = |d, a, b| {
            Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(w(d)),
                    Operand::use_(a),
                    Operand::use_(w(b)),
                    Operand::use_(Reg::phys(PReg::RZ)),
                ],
            )
        };
        insts.splice(stg..stg, [add(sum, acc.reg, tid), add(total, w(sum), base)]);
        insts[stg + 2].ops[1] = Operand::use_(w(total));
        let a = allocate(&mut f).unwrap();
        checker::check(&f, &a).unwrap();
        assert!(a.spill_bytes > 0, "the loads still spill");
        for v in [tid, base] {
            assert!(!a.slots.contains_key(&v), "{v} has a stack slot");
            assert_eq!(defining(&f, v), 0, "{v}'s own definition is deleted");
        }
        let insts = &f.blocks[0].insts;
        let at = |m: &str| {
            insts
                .iter()
                .enumerate()
                .filter(|(_, i)| i.mnemonic == m)
                .map(|(n, _)| n)
                .collect::<Vec<_>>()
        };
        // Recomputed right before the additions that read them, not at the top.
        let (s2r, mov, lea) = (at("S2R"), at("MOV"), at("LEA"));
        assert_eq!(
            (s2r.len(), mov.len(), lea.len()),
            (2, 1, 1),
            "{s2r:?} {mov:?} {lea:?}"
        );
        let first_add = insts
            .iter()
            .position(|i| {
                i.mnemonic == "IADD3"
                    && i.uses().any(|u| {
                        u.vreg()
                            .is_some_and(|v| a.alias.get(&v).is_some_and(|o| o.0 == tid))
                    })
            })
            .expect("the addition reads a recomputed SR_TID.X");
        assert_eq!(s2r[0], first_add - 1);
        assert!(s2r[1] < lea[0] && mov[0] < lea[0] && lea[0] > first_add);
        // And each use of the address reads the recomputed temporary, not a reload.
        assert!(
            !insts.iter().any(|i| i.mnemonic == "LDL"
                && i.defs().any(|d| d
                    .vreg()
                    .and_then(|t| a.alias.get(&t))
                    .is_some_and(|o| o.0 == tid || o.0 == base))),
            "an entry value is reloaded"
        );
    }

    #[test]
    fn loop_depth_counts_the_loops_around_a_block() {
        // bb0 → bb1 (outer head) → bb2 (inner loop on itself) → bb3 (back to bb1) → bb4.
        let mut f = Function::new("loops", true);
        let b: Vec<BlockId> = (0..4).map(|_| f.new_block(None)).collect();
        let p0 = Reg::phys(PReg {
            class: RegClass::Pred,
            num: 0,
        });
        let bra = |t: BlockId| {
            Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(t))]).guarded(p0, false)
        };
        f.block_mut(ENTRY).fallthrough = Some(b[0]);
        f.block_mut(b[0]).fallthrough = Some(b[1]);
        f.block_mut(b[1]).insts.push(bra(b[1]));
        f.block_mut(b[1]).fallthrough = Some(b[2]);
        f.block_mut(b[2]).insts.push(bra(b[0]));
        f.block_mut(b[2]).fallthrough = Some(b[3]);
        f.block_mut(b[3]).insts.push(Inst::new("EXIT", &[], vec![]));
        assert_eq!(loop_depths(&Cfg::new(&f)), vec![0, 1, 2, 1, 0]);
    }

    #[test]
    fn spills_under_maxnreg_and_the_checker_agrees() {
        let mut f = pressure(60, 32);
        let a = allocate(&mut f).unwrap();
        assert!(
            a.spill_bytes > 0,
            "60 live values in 30 registers must spill"
        );
        checker::check(&f, &a).unwrap();
        let highest = a
            .assignment
            .iter()
            .flatten()
            .filter(|p| p.class == RegClass::Gpr)
            .map(|p| p.num)
            .max()
            .unwrap();
        assert!(
            u32::from(highest) + 3 <= 32,
            "R{highest} breaks .maxnreg 32"
        );
        let stl = f.blocks[0]
            .insts
            .iter()
            .filter(|i| i.mnemonic == "STL")
            .count();
        assert!(stl > 0);
    }

    /// `n` values loaded, a call out of the function with one precoloured argument (R4) and
    /// result (R4), then every value read: the values live across the call avoid the registers
    /// the callee may overwrite, the precoloured ones get theirs.
    fn across_a_call(n: usize) -> (Function, VReg, VReg) {
        let mut f = pressure(n, 255);
        let insts = std::mem::take(&mut f.blocks[0].insts);
        let split = insts.iter().position(|i| i.mnemonic == "IADD3").unwrap();
        let arg = f.new_vreg(RegClass::Gpr, 1, None);
        let ret = f.new_vreg(RegClass::Gpr, 1, None);
        let target = f.new_vreg(RegClass::Gpr, 2, None);
        f.fixed.push((
            arg,
            PReg {
                class: RegClass::Gpr,
                num: 4,
            },
        ));
        f.fixed.push((
            ret,
            PReg {
                class: RegClass::Gpr,
                num: 4,
            },
        ));
        let first = insts[2].defs().next().unwrap();
        let mut out: Vec<Inst> = insts[..split].to_vec();
        out.push(Inst::new(
            "LDC",
            &["64"],
            vec![
                Operand::def(Reg::whole(target, 2)),
                Operand::new(OpKind::CBank {
                    bank: 4,
                    base: None,
                    offset: 0,
                }),
            ],
        ));
        out.push(Inst::new(
            "COPY",
            &[],
            vec![Operand::def(Reg::whole(arg, 1)), Operand::use_(first)],
        ));
        out.push(Inst::new(
            "CALL",
            &["ABS", "NOINC"],
            vec![
                Operand::use_(Reg::whole(target, 2)),
                Operand::use_(Reg::whole(arg, 1)),
                Operand::def(Reg::whole(ret, 1)),
            ],
        ));
        out.extend(insts[split..].iter().cloned());
        // The result is read by the store at the end.
        let st = out
            .iter_mut()
            .rev()
            .find(|i| i.mnemonic == "IADD3")
            .unwrap();
        st.ops[3] = Operand::use_(Reg::whole(ret, 1));
        f.blocks[0].insts = out;
        (f, arg, ret)
    }

    #[test]
    fn values_live_across_a_call_avoid_the_callers_registers() {
        let (mut f, arg, ret) = across_a_call(24);
        let a = allocate(&mut f).unwrap();
        checker::check(&f, &a).unwrap();
        assert_eq!(a.assignment[arg.0 as usize].map(|p| p.num), Some(4));
        assert_eq!(a.assignment[ret.0 as usize].map(|p| p.num), Some(4));
        let loaded: Vec<u8> = f.blocks[0]
            .insts
            .iter()
            .filter(|i| i.mnemonic == "LDG")
            .filter_map(|i| i.defs().next()?.vreg())
            .map(|v| a.assignment[v.0 as usize].unwrap().num)
            .collect();
        assert_eq!(loaded.len(), 24);
        // Every loaded value is summed after the call: all live across it.
        for r in &loaded {
            assert!(!call_clobbers(RegClass::Gpr, usize::from(*r)), "R{r}");
        }
        // The descriptor (a uniform pair read after the call) sits at UR36 or above.
        let desc = f.blocks[0].insts[1].defs().next().unwrap().vreg().unwrap();
        assert!(a.assignment[desc.0 as usize].unwrap().num >= 36);
    }

    #[test]
    fn the_checker_catches_a_value_the_call_overwrites() {
        let (mut f, _, _) = across_a_call(4);
        let mut a = allocate(&mut f).unwrap();
        // Put a value live across the call into R8, which the callee may overwrite.
        let v = f.blocks[0]
            .insts
            .iter()
            .filter(|i| i.mnemonic == "LDG")
            .nth(2)
            .and_then(|i| i.defs().next()?.vreg())
            .unwrap();
        a.assignment[v.0 as usize] = Some(PReg {
            class: RegClass::Gpr,
            num: 8,
        });
        assert!(checker::check(&f, &a).is_err());
    }

    #[test]
    fn the_checker_catches_a_clobbered_value() {
        let mut f = pressure(8, 255);
        let mut a = allocate(&mut f).unwrap();
        // Give two of the loaded values (live at the same time) the same register.
        let (x, y) = (VReg(2), VReg(3));
        a.assignment[y.0 as usize] = a.assignment[x.0 as usize];
        let err = checker::check(&f, &a).unwrap_err();
        assert!(err.contains("reads"), "{err}");
    }

    #[test]
    fn the_checker_catches_a_reload_from_the_wrong_slot() {
        let mut f = pressure(60, 32);
        let a = allocate(&mut f).unwrap();
        // Point the first reload at another slot.
        let ldl = f.blocks[0]
            .insts
            .iter_mut()
            .find(|i| i.mnemonic == "LDL")
            .unwrap();
        for o in &mut ldl.ops {
            if let OpKind::Mem { terms, .. } = &mut o.kind {
                if let Some(MemTerm::Imm(off)) = terms.last_mut() {
                    *off += 4;
                } else {
                    terms.push(MemTerm::Imm(4));
                }
            }
        }
        assert!(checker::check(&f, &a).is_err());
    }

    /// `n` pairs, each written one word at a time (`MOV lo; MOV hi`), then word 0 of every
    /// other pair rewritten under `@P0`, then every pair stored: `2n` registers live at once.
    fn pairs(n: usize, max_regs: u32) -> Function {
        let mut f = pressure(2, max_regs);
        let mut insts: Vec<Inst> = f.blocks[0].insts[..2].to_vec();
        let (addr, desc) = match (insts[0].defs().next(), insts[1].defs().next()) {
            (Some(a), Some(d)) => (a, d),
            _ => unreachable!(),
        };
        let p = f.new_vreg(RegClass::Pred, 1, None);
        insts.push(Inst::new(
            "ISETP",
            &["LT", "U32", "AND"],
            vec![
                Operand::def(Reg::whole(p, 1)),
                Operand::def(Reg::phys(PReg::PT)),
                Operand::use_(Reg::phys(PReg::RZ)),
                Operand::imm(1),
                Operand::use_(Reg::phys(PReg::PT)),
            ],
        ));
        let vals: Vec<VReg> = (0..n).map(|_| f.new_vreg(RegClass::Gpr, 2, None)).collect();
        let mov = |d: Reg, k: i64| Inst::new("MOV", &[], vec![Operand::def(d), Operand::imm(k)]);
        for (i, v) in vals.iter().enumerate() {
            insts.push(mov(Reg::word(*v, 0), 2 * i as i64));
            insts.push(mov(Reg::word(*v, 1), 2 * i as i64 + 1));
        }
        for v in vals.iter().step_by(2) {
            insts.push(mov(Reg::word(*v, 0), -1).guarded(Reg::whole(p, 1), false));
        }
        for (i, v) in vals.iter().enumerate().rev() {
            insts.push(Inst::new(
                "STG",
                &["E", "64"],
                vec![
                    Operand::new(OpKind::Mem {
                        prefix: MemPrefix::Desc(desc),
                        terms: vec![MemTerm::Reg(addr, Some("64")), MemTerm::Imm(8 * i as i64)],
                    }),
                    Operand::use_(Reg::whole(*v, 2)),
                ],
            ));
        }
        insts.push(Inst::new("EXIT", &[], vec![]));
        f.blocks[0].insts = insts;
        f
    }

    #[test]
    fn a_pair_written_a_word_at_a_time_spills_word_by_word() {
        let mut f = pairs(24, 32);
        let a = allocate(&mut f).unwrap();
        assert!(a.spill_bytes > 0, "48 words in 30 registers must spill");
        // Before: each MOV was followed by an `STL.64` of the whole pair, one word of which
        // the MOV never wrote.
        checker::check(&f, &a).unwrap();
        let insts = &f.blocks[0].insts;
        for (k, st) in insts
            .iter()
            .enumerate()
            .filter(|(_, i)| i.mnemonic == "STL")
        {
            let def = &insts[k - 1];
            assert_eq!(st.mods.is_empty(), def.mnemonic == "MOV", "{def} / {st}");
            // A store after a guarded definition is guarded the same way.
            assert_eq!(st.guard, def.guard, "{def} / {st}");
        }
        assert!(
            insts
                .iter()
                .any(|i| i.mnemonic == "STL" && i.guard.is_some())
        );
    }

    #[test]
    fn spill_temporaries_cover_the_words_touched() {
        let mask = |m: &[u8]| m.iter().map(|&b| b == 1).collect::<Vec<bool>>();
        assert_eq!(temp_span(&mask(&[0, 1])), (1, 1));
        assert_eq!(temp_span(&mask(&[1, 1])), (0, 2));
        assert_eq!(temp_span(&mask(&[0, 1, 1, 0])), (0, 4));
        assert_eq!(temp_span(&mask(&[0, 0, 1, 1, 0, 0, 0, 0])), (2, 2));
        assert_eq!(temp_span(&mask(&[0, 0, 0, 1, 1, 0, 0, 0])), (0, 8));
        assert_eq!(temp_span(&mask(&[1, 0, 1])), (0, 3));
        assert_eq!(
            aligned_runs(&mask(&[1, 1, 1, 1, 1, 1, 1, 1])),
            vec![(0, 4), (4, 4)]
        );
        assert_eq!(
            aligned_runs(&mask(&[0, 1, 1, 1, 1, 1, 0, 1])),
            vec![(1, 1), (2, 2), (4, 2), (7, 1)]
        );
        assert_eq!(aligned_runs(&mask(&[1, 1, 1])), vec![(0, 2), (2, 1)]);
    }

    /// A diamond laid out `entry, then, else, join`: `a` is read on the `then` side, `b1` and
    /// `b2` on the `else` side, and `then` defines three values read together with `a`. The
    /// intervals of `b1` and `b2` run from the entry to the `else` block, over `then`, where
    /// they are dead.
    fn diamond(max_regs: u32) -> (Function, [VReg; 6]) {
        let mut f = Function::new("diamond", true);
        f.max_regs = max_regs;
        f.ssa = false;
        let (then, other, join) = (f.new_block(None), f.new_block(None), f.new_block(None));
        let v: [VReg; 6] = std::array::from_fn(|_| f.new_vreg(RegClass::Gpr, 1, None));
        let [a, b1, b2, c1, c2, c3] = v;
        let one = |m: &'static str, r: Operand| Inst::new(m, &[], vec![r, Operand::imm(1)]);
        let p0 = Reg::phys(PReg {
            class: RegClass::Pred,
            num: 0,
        });
        let bra = |t: BlockId| Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(t))]);
        let entry = &mut f.block_mut(ENTRY).insts;
        for x in [b1, b2, a] {
            entry.push(one("DEF", Operand::def(Reg::whole(x, 1))));
        }
        entry.push(bra(other).guarded(p0, false));
        f.block_mut(ENTRY).fallthrough = Some(then);
        let side = &mut f.block_mut(then).insts;
        for x in [c1, c2, c3] {
            side.push(one("DEF", Operand::def(Reg::whole(x, 1))));
        }
        for x in [a, c1, c2, c3] {
            side.push(one("READ", Operand::use_(Reg::whole(x, 1))));
        }
        side.push(bra(join));
        for x in [b1, b2] {
            let read = one("READ", Operand::use_(Reg::whole(x, 1)));
            f.block_mut(other).insts.push(read);
        }
        f.block_mut(other).fallthrough = Some(join);
        f.block_mut(join).insts.push(Inst::new("EXIT", &[], vec![]));
        (f, v)
    }

    #[test]
    fn a_value_in_a_hole_lends_its_register() {
        // Without holes `c1` cannot take `b1`'s or `b2`'s register; with holes the values of
        // the `then` side take them, since `b1` and `b2` are dead there.
        let (f, [_, b1, b2, c1, c2, c3]) = diamond(255);
        let reg = |a: &[Option<PReg>], v: VReg| a[v.0 as usize].unwrap().num;
        let plain = scan(&f, false).unwrap().unwrap();
        let holed = scan(&f, true).unwrap().unwrap();
        let (bs_plain, bs_holed) = (
            [reg(&plain, b1), reg(&plain, b2)],
            [reg(&holed, b1), reg(&holed, b2)],
        );
        assert!(
            [c1, c2, c3]
                .iter()
                .all(|&c| !bs_plain.contains(&reg(&plain, c))),
            "{plain:?}"
        );
        assert!(bs_holed.contains(&reg(&holed, c1)), "{holed:?}");
        assert!(bs_holed.contains(&reg(&holed, c2)), "{holed:?}");
        for assignment in [plain, holed] {
            let a = Allocation {
                assignment,
                ..Allocation::default()
            };
            checker::check(&f, &a).unwrap();
        }
        // The live ranges: `b1` from its definition to the end of the entry block, and in the
        // `else` block; nothing in `then`.
        let cfg = Cfg::new(&f);
        let live = Liveness::compute(&f, &cfg);
        let ranges = live_ranges(&f, &live, &numbering(&f, &cfg, false));
        assert_eq!(
            ranges[b1.0 as usize].len(),
            2,
            "{:?}",
            ranges[b1.0 as usize]
        );
    }

    #[test]
    fn a_function_that_spills_without_holes_fits_with_them() {
        // Under `.maxnreg 7` (R0, R2-R4): `a` and the three values of the `then` side fit, but
        // not with `b1` and `b2` held over `then` as well.
        let (mut f, _) = diamond(7);
        assert!(scan(&f, false).unwrap().is_err(), "the plain scan spills");
        let a = allocate(&mut f).unwrap();
        assert_eq!(a.spill_bytes, 0);
        assert!(a.shared_in_holes);
        checker::check(&f, &a).unwrap();
    }

    #[test]
    fn a_fragmented_file_makes_room_for_a_tuple_by_moving_values() {
        // Under `.maxnreg 32` (R0-R29): twenty values take R0, R2-R20; the ten defined at even
        // positions die, leaving R0, R3, R5, ..., R19 and R21-R29 free but no eight aligned
        // registers in a row below R30. The 8-word tuple then takes R16-R23 once the three
        // values still there move to R24 and up (never used, so free over their whole lives);
        // before, the tuple spilled.
        let mut f = pressure(2, 32);
        let mut insts: Vec<Inst> = f.blocks[0].insts[..2].to_vec();
        let vals: Vec<VReg> = (0..20)
            .map(|_| f.new_vreg(RegClass::Gpr, 1, None))
            .collect();
        let tuple = f.new_vreg(RegClass::Gpr, 8, None);
        let one = |m: &'static str, r: Operand| Inst::new(m, &[], vec![r, Operand::imm(1)]);
        for v in &vals {
            insts.push(one("DEF", Operand::def(Reg::whole(*v, 1))));
        }
        for v in vals.iter().step_by(2) {
            insts.push(one("READ", Operand::use_(Reg::whole(*v, 1))));
        }
        insts.push(one("WIDE", Operand::def(Reg::whole(tuple, 8))));
        insts.push(one("READ", Operand::use_(Reg::whole(tuple, 8))));
        for v in vals.iter().skip(1).step_by(2) {
            insts.push(one("READ", Operand::use_(Reg::whole(*v, 1))));
        }
        insts.push(Inst::new("EXIT", &[], vec![]));
        f.blocks[0].insts = insts;
        let a = allocate(&mut f).unwrap();
        checker::check(&f, &a).unwrap();
        assert_eq!(a.spill_bytes, 0, "nothing spills");
        assert_eq!(a.assignment[tuple.0 as usize].map(|p| p.num), Some(16));
        let odd: Vec<u8> = vals
            .iter()
            .skip(1)
            .step_by(2)
            .map(|v| a.assignment[v.0 as usize].unwrap().num)
            .collect();
        assert!(odd.iter().all(|&r| !(16..24).contains(&r)), "{odd:?}");
    }

    /// An 8-word tuple (a small wgmma accumulator) spilled moves as two `.128` accesses per
    /// definition and per use (before, one `STL.128` stored only its first four words).
    #[test]
    fn a_wide_tuple_spills_as_aligned_quads() {
        let mut f = pressure(2, 32);
        let mut insts: Vec<Inst> = f.blocks[0].insts[..2].to_vec();
        let tuples: Vec<VReg> = (0..4).map(|_| f.new_vreg(RegClass::Gpr, 8, None)).collect();
        for t in &tuples {
            insts.push(Inst::new(
                "WIDE",
                &[],
                vec![Operand::def(Reg::whole(*t, 8)), Operand::imm(1)],
            ));
        }
        for t in tuples.iter().rev() {
            insts.push(Inst::new(
                "READ",
                &[],
                vec![Operand::use_(Reg::whole(*t, 8))],
            ));
        }
        insts.push(Inst::new("EXIT", &[], vec![]));
        f.blocks[0].insts = insts;
        let a = allocate(&mut f).unwrap();
        checker::check(&f, &a).unwrap();
        let insts = &f.blocks[0].insts;
        let count = |m: &str| {
            insts
                .iter()
                .filter(|i| i.mnemonic == m && i.mods == ["128"])
                .count()
        };
        let spilled = a.slots.len();
        assert!(spilled > 0, "four 8-word tuples in R0-R29 must spill");
        assert_eq!(count("STL"), 2 * spilled);
        assert_eq!(count("LDL"), 2 * spilled);
        assert!(
            insts
                .iter()
                .all(|i| !matches!(i.mnemonic, "STL" | "LDL") || i.mods == ["128"])
        );
    }
}
