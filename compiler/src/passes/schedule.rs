//! `schedule`: list scheduling within each block, before register allocation.
//!
//! Instruction selection emits instructions in PTX order. A load whose result is needed soon
//! then stalls its reader for the whole load latency, while independent work that could have
//! hidden it waits below. This pass reorders each block by **critical-path list scheduling**:
//!
//! 1. **Dependence graph** (per block, in SSA form): a read depends on the definitions of its
//!    register before it in the block (read after write); a definition of a multi-word register
//!    also follows earlier reads and definitions of it (tuples are defined word by word).
//!    Memory and side effects are ordered conservatively: stores, atomics, barriers, fences,
//!    warp-synchronous and control instructions keep their order among themselves and with
//!    every load; loads may pass loads. Fences and barriers (`MEMBAR`, `ERRBAR`, `CGAERRBAR`,
//!    `CCTL`, `BAR`, `UCGABAR_*`, …) are full barriers: nothing crosses them.
//! 2. **Heights**: the longest latency path from an instruction to the end of the block, with
//!    the latency model of the scoreboard pass (`latency/raw.csv`) for fixed-latency producers
//!    and a nominal latency for variable-latency ones (loads, `S2R`, `LDC`, textures).
//! 3. **List scheduling**, cycle by cycle: among the instructions whose operands are ready, the
//!    highest first (ties: PTX order); when none is ready, the one ready soonest. A reader of a
//!    variable-latency result counts as ready right away (its scoreboard wait covers the
//!    latency, as in ptxas's output, where a loaded pointer is used by the next instruction). Long loads
//!    therefore issue early and their address arithmetic with them, and leaves that only feed
//!    the end of the block (a store's address, the global descriptor) sink towards their use —
//!    the order ptxas's output shows (`tex_read_2d_float`: `TEX` before the `LDC.64` of the
//!    output pointer).
//!
//! `PHI`s stay first and the terminator last. Predicates are scheduled within the predicate
//! file: an instruction that defines one is held back while the block's live predicates would
//! exceed the registers left (ptxc cannot spill `P`; integer division code once needed more
//! than 7). The pass runs with `--schedule` only (not by default, and never under `-g`, where
//! ptxas keeps PTX order): instruction selection already emits most recipes in ptxas's own
//! order, which the scheduler does not keep.
//!
//! Invariant: each block holds the same instructions, every read still follows its definition
//! (the verifier checks dominance after the pass), and the relative order of side effects is
//! unchanged.

use super::Pass;
use crate::mir::{Function, Inst, Reg};
use crate::target::sm90a::latency::{self, Kind, Model, Operand as LatOperand};
use crate::target::sm90a::model::RegFile;
use rustc_hash::FxHashMap;

pub struct Schedule;

/// Blocks longer than this are left in PTX order (the graph is quadratic in the worst case).
const MAX_BLOCK: usize = 4096;

impl Pass for Schedule {
    fn name(&self) -> &'static str {
        "schedule"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        if !f.ssa {
            return Ok(());
        }
        let m = latency::model();
        // The blocks that read each predicate register (scheduling keeps them).
        let mut readers: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
        for (b, block) in f.blocks.iter().enumerate() {
            for i in &block.insts {
                for r in i.uses() {
                    if let Some(v) = r.vreg()
                        && matches!(
                            f.vreg(v).class,
                            crate::mir::RegClass::Pred | crate::mir::RegClass::UPred
                        )
                    {
                        let bs = readers.entry(v.0).or_default();
                        if bs.last() != Some(&b) {
                            bs.push(b);
                        }
                    }
                }
            }
        }
        for b in 0..f.blocks.len() {
            let insts = std::mem::take(&mut f.blocks[b].insts);
            f.blocks[b].insts = schedule_block(f, m, insts, b, &readers);
        }
        Ok(())
    }
}

/// How an instruction touches memory and the machine state, for ordering.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Only its registers: free to move.
    Pure,
    /// Reads memory: may pass other loads, not side effects.
    Load,
    /// Writes memory, synchronises or has another effect: keeps its place among effects.
    Side,
}

fn effect(i: &Inst) -> Effect {
    match i.mnemonic {
        "PHI" | "COPY" | "UNDEF" | "MOV" | "IADD3" | "IMAD" | "ISETP" | "SEL" | "LOP3"
        | "PLOP3" | "SHF" | "FADD" | "FMUL" | "FFMA" | "LEA" | "PRMT" | "IABS" | "IMNMX"
        | "FMNMX" | "FSETP" | "FSEL" | "DADD" | "DMUL" | "DFMA" | "DSETP" | "HADD2" | "HMUL2"
        | "HFMA2" | "HSETP2" | "HMNMX2" | "F2F" | "F2I" | "I2F" | "I2FP" | "F2FP" | "FRND"
        | "MUFU" | "POPC" | "FLO" | "BREV" | "BMSK" | "SGXT" | "VIADD" | "IDP" | "FCHK" | "LDC"
        | "ULDC" | "UMOV" | "UIADD3" | "UIMAD" | "ULEA" | "USHF" | "ULOP3" | "UPRMT" | "USEL"
        | "UISETP" | "UPLOP3" | "R2UR" | "S2UR" | "P2R" | "R2P" | "HMMA" | "IMMA" => Effect::Pure,
        // `S2R` of the clock or of `SR_LANEID`-like values is pure too, but `%clock` must stay
        // where the program reads it.
        "S2R" => {
            if i.ops.iter().any(
                |o| matches!(o.kind, crate::mir::OpKind::SReg(n) if (0x50..=0x53).contains(&n)),
            ) {
                Effect::Side
            } else {
                Effect::Pure
            }
        }
        "LDG" | "LD" | "LDS" | "LDL" | "LDSM" | "TEX" | "TLD" => Effect::Load,
        _ => Effect::Side,
    }
}

/// The predicates of a block, for scheduling within the predicate files.
struct PredPressure {
    /// The predicate registers each body instruction defines.
    defs: Vec<Vec<u32>>,
    /// The predicate registers each body instruction reads (each once).
    reads: Vec<Vec<u32>>,
    /// Reads left per predicate register, in the body.
    uses: FxHashMap<u32, usize>,
    /// Predicates defined in the body and read nowhere else (they die at their last read).
    local: rustc_hash::FxHashSet<u32>,
    /// How many block-defined predicates may be live at once.
    budget: usize,
}

impl PredPressure {
    fn new(
        f: &Function,
        insts: &[Inst],
        start: usize,
        end: usize,
        block: usize,
        readers: &FxHashMap<u32, Vec<usize>>,
    ) -> PredPressure {
        use crate::mir::RegClass;
        let is_pred = |r: Reg| {
            r.vreg()
                .is_some_and(|v| matches!(f.vreg(v).class, RegClass::Pred | RegClass::UPred))
        };
        let mut defs = Vec::new();
        let mut reads = Vec::new();
        let mut uses: FxHashMap<u32, usize> = FxHashMap::default();
        let mut defined = rustc_hash::FxHashSet::default();
        for i in &insts[start..end] {
            let regs: Vec<_> = i.regs().collect();
            let d: Vec<u32> = regs
                .iter()
                .filter(|r| r.def && is_pred(r.reg))
                .filter_map(|r| r.reg.vreg().map(|v| v.0))
                .collect();
            let mut u: Vec<u32> = regs
                .iter()
                .filter(|r| !r.def && is_pred(r.reg))
                .filter_map(|r| r.reg.vreg().map(|v| v.0))
                .collect();
            u.sort_unstable();
            u.dedup();
            for &v in &u {
                *uses.entry(v).or_default() += 1;
            }
            defined.extend(d.iter().copied());
            defs.push(d);
            reads.push(u);
        }
        // Read outside the body (its terminator or PHIs, another block): live to the end.
        let local = defined
            .iter()
            .copied()
            .filter(|v| {
                let in_other_block = readers
                    .get(v)
                    .is_some_and(|bs| bs.iter().any(|&x| x != block));
                let reads = |i: &Inst| i.uses().any(|r| r.vreg().map(|x| x.0) == Some(*v));
                !in_other_block && !insts[..start].iter().chain(&insts[end..]).any(reads)
            })
            .collect();
        // Predicates live into the block take registers too.
        let live_in = reads
            .iter()
            .flatten()
            .filter(|v| !defined.contains(v))
            .collect::<rustc_hash::FxHashSet<_>>()
            .len();
        PredPressure {
            defs,
            reads,
            uses,
            local,
            budget: 6usize.saturating_sub(live_in).max(1),
        }
    }
}

/// Synchronisation instructions: full scheduling barriers.
fn is_sync(i: &Inst) -> bool {
    matches!(
        i.mnemonic,
        "MEMBAR"
            | "ERRBAR"
            | "CGAERRBAR"
            | "CCTL"
            | "FENCE"
            | "BAR"
            | "UCGABAR_ARV"
            | "UCGABAR_WAIT"
            | "WARPSYNC"
            | "NANOSLEEP"
            | "DEPBAR"
            | "LDGDEPBAR"
            | "BPT"
            | "CALL"
            | "LEPC"
            | "BSSY"
            | "BSYNC"
            | "YIELD"
    )
}

/// A nominal latency for a variable-latency producer (the scoreboard wait covers the real
/// one; this only ranks the paths).
fn nominal(class: &latency::OpClass) -> i64 {
    match class.kind {
        Kind::Long => 24,
        Kind::Var => 12,
        _ => 4,
    }
}

fn file_of(f: &Function, r: Reg) -> RegFile {
    use crate::mir::RegClass;
    let class = match r {
        Reg::Virt { vreg, .. } => f.vreg(vreg).class,
        Reg::Phys { reg, .. } => reg.class,
    };
    match class {
        RegClass::Gpr => RegFile::Gpr,
        RegClass::Ugpr => RegFile::Ugpr,
        RegClass::Pred => RegFile::Pred,
        RegClass::UPred => RegFile::UPred,
    }
}

fn schedule_block(
    f: &Function,
    m: &Model,
    insts: Vec<Inst>,
    block: usize,
    readers: &FxHashMap<u32, Vec<usize>>,
) -> Vec<Inst> {
    let n = insts.len();
    // PHIs first, then the body, then the terminator(s): only the body moves.
    let start = insts.iter().take_while(|i| i.is_phi()).count();
    let mut end = n;
    while end > start && (insts[end - 1].is_terminator() || insts[end - 1].mnemonic == "BSYNC") {
        end -= 1;
    }
    let body = end - start;
    if !(3..=MAX_BLOCK).contains(&body) {
        return insts;
    }
    let classes: Vec<Option<&latency::OpClass>> = insts[start..end]
        .iter()
        .map(|i| m.lookup(i.mnemonic, &i.mods))
        .collect();
    // Edges: preds[k] = (producer, latency).
    let mut preds: Vec<Vec<(usize, i64)>> = vec![Vec::new(); body];
    let mut last_def: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    let mut uses_of: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    let mut last_side: Option<usize> = None;
    let mut loads_since_side: Vec<usize> = Vec::new();
    let mut last_sync: Option<usize> = None;
    let mut since_sync: Vec<usize> = Vec::new();
    for k in 0..body {
        let i = &insts[start + k];
        let regs: Vec<_> = i.regs().collect();
        for r in regs.iter().filter(|r| !r.def) {
            let Some(v) = r.reg.vreg() else { continue };
            for &p in last_def.get(&v.0).into_iter().flatten() {
                let lat = match classes[p] {
                    Some(c) if c.kind.is_variable() => nominal(c),
                    Some(c) => match classes[k] {
                        Some(cc) => {
                            i64::from(m.raw_latency(c, cc, LatOperand::File(file_of(f, r.reg))))
                        }
                        None => 6,
                    },
                    None => 6,
                };
                preds[k].push((p, lat.max(1)));
            }
        }
        for r in regs.iter().filter(|r| r.def) {
            let Some(v) = r.reg.vreg() else { continue };
            // A later definition of (another word of) the register: after earlier reads and
            // definitions of it.
            for &p in uses_of.get(&v.0).into_iter().flatten() {
                preds[k].push((p, 0));
            }
            for &p in last_def.get(&v.0).into_iter().flatten() {
                preds[k].push((p, 1));
            }
        }
        for r in &regs {
            let Some(v) = r.reg.vreg() else { continue };
            if r.def {
                last_def.entry(v.0).or_default().push(k);
            } else {
                uses_of.entry(v.0).or_default().push(k);
            }
        }
        // Synchronisation (fences, barriers, `CCTL`): nothing moves across it in either
        // direction (ptxas computes an address before the `MEMBAR … CGAERRBAR` of a release and
        // the arrive after it: probes/09_mbarrier/arrive_release_cluster).
        if is_sync(i) {
            preds[k].extend(since_sync.iter().map(|&p| (p, 1)));
            since_sync.clear();
            last_sync = Some(k);
        } else {
            if let Some(s) = last_sync {
                preds[k].push((s, 1));
            }
            since_sync.push(k);
        }
        match effect(i) {
            Effect::Pure => {}
            Effect::Load => {
                if let Some(s) = last_side {
                    preds[k].push((s, 1));
                }
                loads_since_side.push(k);
            }
            Effect::Side => {
                if let Some(s) = last_side {
                    preds[k].push((s, 1));
                }
                for &l in &loads_since_side {
                    preds[k].push((l, 1));
                }
                loads_since_side.clear();
                last_side = Some(k);
            }
        }
    }
    // Heights: the longest path to the end of the block.
    let mut succs: Vec<Vec<(usize, i64)>> = vec![Vec::new(); body];
    for (k, ps) in preds.iter().enumerate() {
        for &(p, lat) in ps {
            succs[p].push((k, lat));
        }
    }
    let mut height = vec![0i64; body];
    for k in (0..body).rev() {
        let own = match classes[k] {
            Some(c) if c.kind.is_variable() => nominal(c),
            _ => 1,
        };
        height[k] = succs[k]
            .iter()
            .map(|&(s, lat)| lat + height[s])
            .max()
            .unwrap_or(own)
            .max(own);
    }
    // Predicate pressure: ptxc cannot spill predicates (7 `P`, 7 `UP`), so a predicate is
    // defined early only while the block's live predicates stay within the file.
    let pressure = PredPressure::new(f, &insts, start, end, block, readers);
    let mut live_p = 0usize;
    let mut uses_left = pressure.uses.clone();
    // List scheduling.
    let mut waiting: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut avail = vec![0i64; body];
    let mut ready: Vec<usize> = (0..body).filter(|&k| waiting[k] == 0).collect();
    let mut order = Vec::with_capacity(body);
    let mut cycle = 0i64;
    while !ready.is_empty() {
        let now: Vec<usize> = ready
            .iter()
            .copied()
            .filter(|&k| avail[k] <= cycle)
            .collect();
        // Candidates that keep the live predicates within the budget, if any do.
        let fits = |k: &usize| live_p + pressure.defs[*k].len() <= pressure.budget;
        let now_fit: Vec<usize> = now.iter().copied().filter(fits).collect();
        let ready_fit: Vec<usize> = ready.iter().copied().filter(fits).collect();
        let pick = if !now_fit.is_empty() {
            *now_fit
                .iter()
                .min_by_key(|&&k| (-height[k], k))
                .expect("non-empty")
        } else if !ready_fit.is_empty() {
            // Nothing is ready yet: the one ready soonest (highest, then first, among equals).
            *ready_fit
                .iter()
                .min_by_key(|&&k| (avail[k], -height[k], k))
                .expect("non-empty")
        } else {
            // Every candidate defines a predicate over the budget: the first in PTX order
            // (the order isel chose, which allocation accepted).
            *ready.iter().min().expect("non-empty")
        };
        ready.retain(|&k| k != pick);
        // A local predicate nothing reads is dead at once.
        live_p += pressure.defs[pick]
            .iter()
            .filter(|v| uses_left.get(v).copied().unwrap_or(0) > 0 || !pressure.local.contains(v))
            .count();
        for &v in &pressure.reads[pick] {
            let left = uses_left.get_mut(&v).expect("counted");
            *left -= 1;
            if *left == 0 && pressure.local.contains(&v) {
                live_p = live_p.saturating_sub(1);
            }
        }
        let t = cycle.max(avail[pick]);
        cycle = t + 1;
        order.push(pick);
        // A variable-latency result is waited for through a scoreboard: its reader may issue
        // next (ptxas: `LDC.64 R2, …; ULDC.64 UR4, …; LD.E R0, [R2.64]`, the loaded pointer
        // used at once), and the height alone ranks the long paths first.
        let variable = classes[pick].is_some_and(|c| c.kind.is_variable());
        for &(s, lat) in &succs[pick] {
            let lat = if variable { 1 } else { lat };
            avail[s] = avail[s].max(t + lat);
            waiting[s] -= 1;
            if waiting[s] == 0 {
                ready.push(s);
            }
        }
    }
    debug_assert_eq!(order.len(), body, "the dependence graph is acyclic");
    if order.len() != body {
        return insts;
    }
    let mut slots: Vec<Option<Inst>> = insts.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n);
    out.extend(slots[..start].iter_mut().map(|s| s.take().expect("phi")));
    out.extend(
        order
            .iter()
            .map(|&k| slots[start + k].take().expect("body")),
    );
    out.extend(
        slots[end..]
            .iter_mut()
            .map(|s| s.take().expect("terminator")),
    );
    out
}
