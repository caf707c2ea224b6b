//! A symbolic checker for register allocation, in the manner of regalloc2's: it does not trust
//! the allocator's reasoning, only its result.
//!
//! The checker runs the allocated function abstractly. Its state says, for every physical
//! register word and every stack-slot word, which *values* it may hold — a value being "word
//! `w` of virtual register `v`" (spill temporaries count as the register they stand for).
//! At block entries the states of the predecessors are intersected (a value survives a merge
//! only if it is there on every path), iterated to a fixed point. Then every read of `v` must
//! find `v` in the register the allocation gave `v`:
//!
//! * a definition of `v` puts `v` (only) into its register and removes older copies of `v`
//!   everywhere, stack slots included;
//! * `COPY d <- s` gives `d`'s register whatever `s`'s register holds, plus `d`;
//! * `STL [R1+o], v` gives the slot what `v`'s register holds; `LDL t, [R1+o]` gives `t`'s
//!   register what the slot holds — and nothing more, so a reload from the wrong slot is caught
//!   at the next read of `t`. A shared-memory spill slot (`STS`/`LDS [base+0x80·k]`,
//!   `.pragma "enable_smem_spilling"`) is a slot of its own.
//!
//! Under `setmaxnreg` ([`super::limits`]) a `USETMAXREG` with `N` empties the general registers
//! from `N` up (a `dec` gives them back to the pool; an `inc` brings fresh ones), and no
//! instruction may touch a general register at or above the limit in force where it runs.

use super::Allocation;
use crate::mir::cfg::Cfg;
use crate::mir::{Function, Inst, MemTerm, OpKind, PReg, Reg, RegClass, VReg};
use rustc_hash::{FxHashMap, FxHashSet};

/// A place that holds a 32-bit word: a register word or a stack-slot word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Place {
    Reg(RegClass, u8),
    Slot(u32),
}

type Value = (VReg, u8);

/// The first slot word of the shared-memory spill slots, after every stack word.
const SHARED_SLOTS: u32 = 1 << 30;

/// What every place may hold, with the inverse (the places that may hold each value), so that
/// a definition removes the older copies of its value from the few places that hold one
/// instead of from every register and slot word (pyptx `fa_ws_pingpong`, with 17 KB of spill
/// slots, spent half of its compile time there).
#[derive(Clone, Debug, Default)]
struct State {
    held: FxHashMap<Place, FxHashSet<Value>>,
    /// `at[v]` lists `p` exactly when `held[p]` holds `v`.
    at: FxHashMap<Value, Vec<Place>>,
}

/// States are equal when they hold the same (the inverse follows).
impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        self.held == other.held
    }
}

impl State {
    fn get(&self, place: &Place) -> Option<&FxHashSet<Value>> {
        self.held.get(place)
    }

    /// Makes `set` what `place` holds.
    fn insert(&mut self, place: Place, set: FxHashSet<Value>) {
        for v in &set {
            self.at.entry(*v).or_default().push(place);
        }
        if let Some(old) = self.held.insert(place, set) {
            for v in old {
                self.forget(v, place);
            }
        }
    }

    /// Removes `place` from the places of `v` (once: a set holds `v` at most once), and `v`
    /// from the inverse when no place holds it: a state copies its inverse at every block,
    /// and empty lists of dead values made it grow with the function (1.5 GB on the 16k loop
    /// kernel of `timing` under `PTXC_CHECK_REGALLOC`, against 64 MB without the inverse).
    fn forget(&mut self, v: Value, place: Place) {
        if let Some(places) = self.at.get_mut(&v)
            && let Some(k) = places.iter().position(|&p| p == place)
        {
            places.swap_remove(k);
            if places.is_empty() {
                self.at.remove(&v);
            }
        }
    }

    /// Keeps only the places for which `keep` holds.
    fn retain(&mut self, mut keep: impl FnMut(&Place) -> bool) {
        let gone: Vec<Place> = self.held.keys().filter(|p| !keep(p)).copied().collect();
        for place in gone {
            if let Some(old) = self.held.remove(&place) {
                for v in old {
                    self.forget(v, place);
                }
            }
        }
    }

    /// Removes `v` from every place that holds it.
    fn kill_value(&mut self, v: Value) {
        for place in self.at.remove(&v).unwrap_or_default() {
            if let Some(set) = self.held.get_mut(&place) {
                set.remove(&v);
            }
        }
    }
}

fn meet(a: &State, b: &State) -> State {
    let mut out = State::default();
    for (k, va) in &a.held {
        if let Some(vb) = b.held.get(k) {
            let both: FxHashSet<Value> = va.intersection(vb).copied().collect();
            if !both.is_empty() {
                out.insert(*k, both);
            }
        }
    }
    out
}

struct Checker<'a> {
    f: &'a Function,
    alloc: &'a Allocation,
}

impl Checker<'_> {
    /// The value word `w` of `v` stands for (a spill temporary: a word of the spilled value).
    fn orig(&self, v: VReg, w: u8) -> Value {
        match self.alloc.alias.get(&v) {
            Some(&(o, base)) => (o, base + w),
            None => (v, w),
        }
    }

    /// The places of the words `first..first+count` of `r`.
    fn places(&self, r: Reg) -> Vec<(Place, Option<Value>)> {
        match r {
            Reg::Virt { vreg, first, count } => {
                let Some(base) = self.alloc.assignment[vreg.0 as usize] else {
                    return Vec::new();
                };
                (first..first + count)
                    .map(|w| {
                        (
                            Place::Reg(base.class, base.num + w),
                            Some(self.orig(vreg, w)),
                        )
                    })
                    .collect()
            }
            Reg::Phys { reg, count } if !reg.is_zero() => (0..count)
                .map(|w| (Place::Reg(reg.class, reg.num + w), None))
                .collect(),
            Reg::Phys { .. } => Vec::new(),
        }
    }

    /// The slot word an `STL`/`LDL` (`[R1+off]`) or a shared-memory spill's `STS`/`LDS`
    /// (`[base+0x80·k]`, [`super::smem_base`]; numbered after every stack word) names.
    fn slot(&self, inst: &Inst) -> Option<u32> {
        if matches!(inst.mnemonic, "STS" | "LDS") {
            let base = self.alloc.smem_base?;
            return inst.ops.iter().find_map(|o| match &o.kind {
                OpKind::Mem { terms, .. } => match terms.as_slice() {
                    [MemTerm::Reg(r, None), MemTerm::Imm(off)] if r.vreg() == Some(base) => {
                        Some(SHARED_SLOTS + *off as u32 / 0x80)
                    }
                    _ => None,
                },
                _ => None,
            });
        }
        inst.ops.iter().find_map(|o| match &o.kind {
            OpKind::Mem { terms, .. } => match terms.as_slice() {
                [
                    MemTerm::Reg(
                        Reg::Phys {
                            reg:
                                PReg {
                                    class: RegClass::Gpr,
                                    num: 1,
                                },
                            ..
                        },
                        None,
                    ),
                    MemTerm::Imm(off),
                ] => Some(*off as u32 / 4),
                [
                    MemTerm::Reg(
                        Reg::Phys {
                            reg:
                                PReg {
                                    class: RegClass::Gpr,
                                    num: 1,
                                },
                            ..
                        },
                        None,
                    ),
                ] => Some(0),
                _ => None,
            },
            _ => None,
        })
    }

    /// Checks that every register `inst` reads holds the value it names.
    fn check_reads(&self, state: &State, inst: &Inst) -> Result<(), String> {
        for u in inst.uses() {
            for (place, value) in self.places(u) {
                let Some(value) = value else { continue };
                if !state.get(&place).is_some_and(|s| s.contains(&value)) {
                    let mut held: Vec<String> = state
                        .get(&place)
                        .map(|s| s.iter().map(|(v, w)| format!("{v}.w{w}")).collect())
                        .unwrap_or_default();
                    held.sort();
                    return Err(format!(
                        "`{inst}` reads {}.w{} from {place:?}, which holds [{}]",
                        value.0,
                        value.1,
                        held.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks that `inst` touches no general register at or above `limit`, the number of
    /// registers `setmaxnreg` leaves the warp where `inst` runs.
    fn check_limit(&self, inst: &Inst, limit: u32) -> Result<(), String> {
        for r in inst.regs() {
            for (place, _) in self.places(r.reg) {
                if let Place::Reg(RegClass::Gpr, n) = place
                    && u32::from(n) >= limit
                {
                    return Err(format!(
                        "`{inst}` uses R{n} where `setmaxnreg` leaves {limit} registers"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Applies the effect of `inst` to `state`.
    fn apply(&self, state: &mut State, inst: &Inst) {
        match inst.mnemonic {
            "COPY" => {
                let (d, s) = (
                    inst.defs().next().expect("COPY defines"),
                    inst.uses().next().expect("COPY reads"),
                );
                let (dp, sp) = (self.places(d), self.places(s));
                let held: Vec<FxHashSet<Value>> = (0..dp.len())
                    .map(|w| {
                        sp.get(w)
                            .and_then(|(p, _)| state.get(p))
                            .cloned()
                            .unwrap_or_default()
                    })
                    .collect();
                for (_, v) in &dp {
                    if let Some(v) = v {
                        state.kill_value(*v);
                    }
                }
                for ((place, v), mut set) in dp.into_iter().zip(held) {
                    set.extend(v);
                    state.insert(place, set);
                }
            }
            "STL" | "STS" if self.slot(inst).is_some() => {
                // The stored value is the last operand (`[R1+o], v` / `[base+o], v`); the
                // guard, which `uses` lists last, is not.
                let Some(s) = inst.ops.last().and_then(|o| match o.kind {
                    OpKind::Reg(r) if !r.def && r.reg.vreg().is_some() => Some(r.reg),
                    _ => None,
                }) else {
                    return;
                };
                let Some(slot) = self.slot(inst) else { return };
                for (w, (place, _)) in self.places(s).into_iter().enumerate() {
                    let held = state.get(&place).cloned().unwrap_or_default();
                    state.insert(Place::Slot(slot + w as u32), held);
                }
            }
            // A reload into a spill temporary (an LDL of the program's own `.local` data
            // defines an ordinary value).
            "LDL" | "LDS"
                if self.slot(inst).is_some()
                    && inst
                        .defs()
                        .next()
                        .and_then(|d| d.vreg())
                        .is_some_and(|v| self.alloc.alias.contains_key(&v)) =>
            {
                let d = inst.defs().next().expect("LDL defines");
                let slot = self.slot(inst).expect("checked");
                for (w, (place, _)) in self.places(d).into_iter().enumerate() {
                    let held = state
                        .get(&Place::Slot(slot + w as u32))
                        .cloned()
                        .unwrap_or_default();
                    state.insert(place, held);
                }
            }
            _ => {
                if let Some(n) = super::limits::set_by(inst) {
                    state.retain(|place| match *place {
                        Place::Reg(RegClass::Gpr, r) => u32::from(r) < n,
                        _ => true,
                    });
                }
                // A call may overwrite every register of the calling convention's clobber set,
                // a slow path's only the registers its body writes
                // ([`super::call_clobber_set`]); the callee's results are the call's
                // definitions, applied next.
                if inst.mnemonic == "CALL" {
                    let clobbers = super::call_clobber_set(self.f, inst);
                    state.retain(|place| match *place {
                        Place::Reg(class, r) => !clobbers.contains(class, usize::from(r)),
                        Place::Slot(_) => true,
                    });
                }
                for d in inst.defs() {
                    for (place, v) in self.places(d) {
                        if let Some(v) = v {
                            state.kill_value(v);
                        }
                        state.insert(place, v.into_iter().collect());
                    }
                }
            }
        }
    }
}

/// Checks `alloc` for `f` (the function with its spill code, before rewriting).
pub fn check(f: &Function, alloc: &Allocation) -> Result<(), String> {
    let c = Checker { f, alloc };
    let cfg = Cfg::new(f);
    let nb = f.blocks.len();
    let mut entry: Vec<Option<State>> = vec![None; nb];
    entry[0] = Some(State::default());
    // Rounds in reverse post-order, each visiting only the blocks whose entry state changed
    // since their last visit (a block whose entry is unchanged would send its successors what
    // they already have; visiting every block in every round cost pyptx `fa_ws_pingpong` a
    // third of its checking time in state copies).
    let mut dirty = vec![false; nb];
    dirty[0] = true;
    let mut changed = true;
    let mut rounds = 0;
    while changed {
        changed = false;
        rounds += 1;
        if rounds > 4 * nb + 10 {
            return Err("the checker's dataflow does not settle".into());
        }
        for &b in &cfg.rpo {
            if !std::mem::take(&mut dirty[b.0 as usize]) {
                continue;
            }
            let Some(mut state) = entry[b.0 as usize].clone() else {
                continue;
            };
            for inst in &f.block(b).insts {
                // Reads are checked in the final pass; here only effects propagate.
                c.apply(&mut state, inst);
            }
            for &s in cfg.succs(b) {
                let si = s.0 as usize;
                let new = match &entry[si] {
                    None => state.clone(),
                    Some(old) => meet(old, &state),
                };
                if entry[si].as_ref() != Some(&new) {
                    entry[si] = Some(new);
                    dirty[si] = true;
                    changed = true;
                }
            }
        }
    }
    let limits = super::limits::has_setmaxnreg(f)
        .then(|| super::limits::block_entry_limits(f, &cfg, f.max_regs));
    for &b in &cfg.rpo {
        let mut state = entry[b.0 as usize].take().unwrap_or_default();
        let mut limit = limits.as_ref().map(|l| l[b.0 as usize]);
        for inst in &f.block(b).insts {
            c.check_reads(&state, inst)
                .map_err(|e| format!("{b}: {e}"))?;
            if let Some(n) = limit {
                c.check_limit(inst, n).map_err(|e| format!("{b}: {e}"))?;
                limit = super::limits::set_by(inst).or(limit);
            }
            c.apply(&mut state, inst);
        }
    }
    Ok(())
}
