//! The uniform datapath: values the whole warp shares, in `UR`/`UP` registers.
//!
//! Some operands must be uniform — the address of `SYNCS` (mbarrier) and bulk-copy
//! instructions, the `[UR]` form of memory operands. ptxas chooses the uniform datapath "driven
//! by the consumer" (ptxas-facts.md §e.13): a warp-uniform expression that feeds such an operand
//! is computed with `S2UR`/`ULDC`/`UMOV`/`ULEA`/`UIADD3`/… instead of their vector forms.
//!
//! [`Cx::uniform_of`] does this by *rematerialisation*: given a vector value, it follows the
//! instructions that computed it (every vreg's defining instruction is recorded during
//! selection) and, when each of them has a uniform twin and reads only uniform inputs — constant
//! bank words, immediates, uniform special registers (`SR_CTAID.*`, `SR_CgaCtaId`, `SR_SWINHI`)
//! — recomputes the value in uniform registers at the point of use. SSA makes this safe: the
//! inputs are never redefined. When the value is not provably uniform (it depends on
//! `%tid`, a load, a `PHI`…), [`Cx::waterfall`] runs the consumer once per distinct value,
//! with ptxas's `R2UR` peeling loop.

use super::Cx;
use crate::lower::ssa::VarInfo;
use crate::mir::{Inst, OpKind, Operand, PReg, Reg, RegClass, RegRef, VReg, VRegInfo};

/// Special registers with one value per warp (`S2UR` may read them).
fn uniform_sreg(n: u8) -> bool {
    matches!(n, 0x25..=0x27 | 0x2f | 0x88)
}

/// The uniform twin of a vector mnemonic.
fn uniform_mnemonic(m: &str) -> Option<&'static str> {
    Some(match m {
        "S2R" => "S2UR",
        "LDC" => "ULDC",
        "MOV" => "UMOV",
        "IADD3" | "VIADD" => "UIADD3",
        "LEA" => "ULEA",
        "SHF" => "USHF",
        "SGXT" => "USGXT",
        "LOP3" => "ULOP3",
        "IMAD" => "UIMAD",
        "PRMT" => "UPRMT",
        "SEL" => "USEL",
        "ISETP" => "UISETP",
        "PLOP3" => "UPLOP3",
        _ => return None,
    })
}

/// Whether selection keeps a copy of an instruction of this mnemonic as a value's first
/// definition ([`FirstDefs`]): the questions asked of a definition look only at these — the
/// uniform twins above ([`Cx::uniform_of`], [`Cx::is_uniform`]), `MOV` (`const_of`), `LDC`
/// (`cbank_word`), `PLOP3` (`const_pred`), `MOV`/`COPY` (`split_tuple`), `LD`/`LDG`/`LDS`
/// (`uniform_load_here`), `PHI` (`is_uniform_every_def`), `ELECT`/`PLOP3`/`ISETP`/`FSETP`
/// (`elected_pred`), `UMOV` (a twin's constant value, [`Cx::read_var`]) — and each answers
/// "no" for any other mnemonic. A question about another mnemonic must be added here.
fn kept_def(m: &str) -> bool {
    uniform_mnemonic(m).is_some()
        || matches!(
            m,
            "COPY" | "LD" | "LDG" | "LDS" | "PHI" | "ELECT" | "FSETP" | "UMOV"
        )
}

/// Whether only the uniform-datapath questions ([`Cx::uniform_of`], [`Cx::is_uniform`], and
/// `ur_operands.rs`'s `twin_derived`, which is asked together with `is_uniform`) look at a
/// definition of this mnemonic: no other question of [`kept_def`]'s list names it.
fn twin_only(m: &str) -> bool {
    matches!(
        m,
        "IADD3" | "VIADD" | "LEA" | "SHF" | "SGXT" | "LOP3" | "IMAD" | "PRMT" | "SEL"
    )
}

/// What [`FirstDefs::set`] does with a definition, by its mnemonic: [`kept_def`] and
/// [`twin_only`] in one `match` (debug builds check that they agree). Asked separately, they
/// compared most mnemonics (`FFMA`, `I2FP`, `STG`: kept by neither) with 22 strings and the
/// kept ones with up to 31, for every selected instruction (callgrind, straight-line 64k:
/// `FirstDefs::set` 5.1M).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DefRecord {
    /// Not kept ([`kept_def`] is false).
    Other,
    /// Kept ([`kept_def`]), and not only for the uniform questions.
    Kept,
    /// Kept, and only the uniform questions look at it ([`twin_only`]).
    TwinOnly,
}

fn def_record(m: &str) -> DefRecord {
    match m {
        "IADD3" | "VIADD" | "LEA" | "SHF" | "SGXT" | "LOP3" | "IMAD" | "PRMT" | "SEL" => {
            DefRecord::TwinOnly
        }
        "S2R" | "LDC" | "MOV" | "ISETP" | "PLOP3" | "COPY" | "LD" | "LDG" | "LDS" | "PHI"
        | "ELECT" | "FSETP" | "UMOV" => DefRecord::Kept,
        _ => DefRecord::Other,
    }
}

/// The first instruction that defines each virtual register, so that a value can be recomputed
/// in the uniform datapath or recognised (a constant, a parameter word).
///
/// Dense by vreg number, and a copy is kept only of the instructions a question looks at
/// ([`kept_def`]): on a straight-line kernel most values are floating-point arithmetic, and a
/// copy of every defining instruction in a hash map was a fifth of selection's time.
///
/// Nor is a copy kept of an instruction only the uniform questions look at ([`twin_only`]) when
/// it reads a one-word general register that is per-thread for good: one whose first definition
/// has no copy (recorded as [`FirstDef::Other`]), has no uniform twin (a load, a `COPY`) or
/// reads a per-thread special register (`S2R R, SR_TID.X`) — values [`Cx::uniform_of`] and
/// [`Cx::is_uniform`] never rebuild. Such an instruction's values are never uniform either way
/// (both questions need every source uniform, and say no for `Other`), so they too are recorded
/// as `Other`, and so is whatever reads them: on a straight-line kernel, all the integer
/// arithmetic that starts from `%tid.x`. The one difference: [`Cx::uniform_vreg`] used to give
/// up on such a value only at its per-thread source, after making fresh registers for its
/// results (and rebuilding the sources before it); now it gives up at once.
#[derive(Default)]
pub(super) struct FirstDefs {
    /// By vreg number: [`FirstDefs::UNSEEN`], [`FirstDefs::OTHER`] or an index into `kept`.
    slot: Vec<u32>,
    kept: Vec<Inst>,
}

/// What [`FirstDefs`] knows of a value's first definition.
pub(super) enum FirstDef<'a> {
    /// None recorded (a PHI, an `UNDEF`, a value made by SSA construction).
    Unseen,
    /// An instruction whose mnemonic no question looks at ([`kept_def`]).
    Other,
    Inst(&'a Inst),
}

impl FirstDefs {
    const UNSEEN: u32 = u32::MAX;
    const OTHER: u32 = u32::MAX - 1;

    pub(super) fn get(&self, v: VReg) -> FirstDef<'_> {
        match self.slot.get(v.0 as usize).copied() {
            None | Some(Self::UNSEEN) => FirstDef::Unseen,
            Some(Self::OTHER) => FirstDef::Other,
            Some(i) => FirstDef::Inst(&self.kept[i as usize]),
        }
    }

    /// The first definition of `v` when it is one of the kept mnemonics.
    pub(super) fn inst(&self, v: VReg) -> Option<&Inst> {
        match self.get(v) {
            FirstDef::Inst(i) => Some(i),
            _ => None,
        }
    }

    /// Whether a definition of `v` was recorded.
    pub(super) fn contains(&self, v: VReg) -> bool {
        !matches!(self.get(v), FirstDef::Unseen)
    }

    /// Makes room for the first `n` vregs at once (not grown by doubling as they come).
    pub(super) fn reserve(&mut self, n: usize) {
        if self.slot.len() < n {
            self.slot.resize(n, Self::UNSEEN);
        }
    }

    /// Records `inst` as `v`'s definition unless one was recorded before.
    pub(super) fn note(&mut self, v: VReg, inst: &Inst, vregs: &[VRegInfo]) {
        if !self.contains(v) {
            self.set(v, inst, vregs);
        }
    }

    /// Whether `inst` reads a whole one-word general register whose first definition has no
    /// copy, has no uniform twin (a load, a `COPY`; not a `PHI`) or reads a per-thread special
    /// register (`S2R R, SR_TID.X`): a value no uniform question rebuilds ([`twin_only`]).
    fn reads_per_thread(&self, inst: &Inst, vregs: &[VRegInfo]) -> bool {
        inst.ops.iter().any(|o| match o.kind {
            OpKind::Reg(RegRef {
                reg:
                    Reg::Virt {
                        vreg,
                        first: 0,
                        count: 1,
                    },
                def: false,
            }) => {
                let info = &vregs[vreg.0 as usize];
                info.class == RegClass::Gpr
                    && info.words == 1
                    && match self.get(vreg) {
                        FirstDef::Other => true,
                        FirstDef::Inst(d) => {
                            d.mnemonic != "PHI"
                                && (uniform_mnemonic(d.mnemonic).is_none() || reads_thread_sreg(d))
                        }
                        FirstDef::Unseen => false,
                    }
            }
            _ => false,
        })
    }

    /// Records `inst` as `v`'s definition.
    pub(super) fn set(&mut self, v: VReg, inst: &Inst, vregs: &[VRegInfo]) {
        let i = v.0 as usize;
        if self.slot.len() <= i {
            self.slot.resize(i + 1, Self::UNSEEN);
        }
        let record = def_record(inst.mnemonic);
        debug_assert_eq!(
            (record != DefRecord::Other, record == DefRecord::TwinOnly),
            (kept_def(inst.mnemonic), twin_only(inst.mnemonic)),
            "def_record agrees with kept_def and twin_only on {}",
            inst.mnemonic
        );
        self.slot[i] = if record == DefRecord::Kept
            || (record == DefRecord::TwinOnly && !self.reads_per_thread(inst, vregs))
        {
            self.kept.push(inst.clone());
            self.kept.len() as u32 - 1
        } else {
            Self::OTHER
        };
    }
}

impl Cx<'_> {
    /// A uniform register holding the same value as `r`, computed at the current point, or
    /// `None` when the value is not provably warp-uniform.
    pub fn uniform_of(&mut self, r: Reg) -> Option<Reg> {
        match r {
            Reg::Phys { reg, count } if reg == PReg::RZ => Some(Reg::Phys {
                reg: PReg::URZ,
                count,
            }),
            Reg::Phys { reg, count } if reg == PReg::PT => Some(Reg::Phys {
                reg: PReg::UPT,
                count,
            }),
            Reg::Phys { .. } => None,
            Reg::Virt { vreg, first, count } => {
                let class = self.f.vreg(vreg).class;
                if matches!(class, RegClass::Ugpr | RegClass::UPred) {
                    return Some(r);
                }
                if let Some(u) = self.uniform_vreg(vreg, 0) {
                    return Some(Reg::Virt {
                        vreg: u,
                        first,
                        count,
                    });
                }
                if count == 1 && self.f.vreg(vreg).words > 1 {
                    return self.uniform_word(vreg, first, 0);
                }
                None
            }
        }
    }

    /// A 64-bit value in a uniform register pair, computed at the current point, or `None`
    /// (nothing emitted) when it is not provably warp-uniform. A value loaded whole
    /// (`ld.param.u64`) is rebuilt whole (`ULDC.64`); one written word by word (a generic shared
    /// address `{lo, SR_SWINHI}` from `cvta.shared.u64`, `mapa.u64`) is rebuilt word by word and
    /// copied into the pair with two `UMOV`s, as ptxas does (`09_mbarrier/arrive_generic`:
    /// `S2UR UR5, SR_CgaCtaId; UMOV UR4, 0x400; S2UR UR6, SR_SWINHI; ULEA UR4, UR5, UR4, 0x18;
    /// UMOV UR4, UR4; UMOV UR5, UR6`). The `S2UR`s of the rebuilt code go first, in the order
    /// they were asked for: ptxas issues its long-latency special-register reads before the ALU
    /// work (the `SR_SWINHI` read comes before the `ULEA` of the low word).
    pub(super) fn uniform_pair(&mut self, r: Reg) -> Option<Reg> {
        let Reg::Virt {
            vreg,
            first: 0,
            count: 2,
        } = r
        else {
            return None;
        };
        if self.f.vreg(vreg).words != 2 || self.f.vreg(vreg).class != RegClass::Gpr {
            return None;
        }
        let start = self.f.block(self.cur).insts.len();
        let cache = self.uniform_cache.clone();
        let built = match self.uniform_of(r) {
            Some(u) => Some(u),
            None => {
                let lo = self.uniform_of(super::address::word_of(r, 0));
                let hi = lo.and_then(|_| self.uniform_of(super::address::word_of(r, 1)));
                lo.zip(hi).map(|(lo, hi)| {
                    let p = self.new_vreg(RegClass::Ugpr, 2);
                    for (w, src) in [(0, lo), (1, hi)] {
                        self.emit_unguarded(Inst::new(
                            "UMOV",
                            &[],
                            vec![Operand::def(Reg::word(p, w)), Operand::use_(src)],
                        ));
                    }
                    Reg::whole(p, 2)
                })
            }
        };
        let insts = &mut self.f.block_mut(self.cur).insts;
        if built.is_none() {
            // Drop what a partial attempt emitted.
            insts.truncate(start);
            self.uniform_cache = cache;
            return None;
        }
        let (reads, rest): (Vec<Inst>, Vec<Inst>) =
            insts.drain(start..).partition(|i| i.mnemonic == "S2UR");
        insts.extend(reads);
        insts.extend(rest);
        built
    }

    /// The PTX guard as a guard an instruction of the uniform datapath can take, emitted before
    /// it: such an instruction runs once for the warp and reads only a uniform predicate
    /// (`@UP0`). A guard `@p` on a per-thread `p` becomes `VOTEU.ANY UPn, p` and `@UPn` (run if
    /// some active thread has `p`); `@!p` becomes `VOTEU.ALL UPn, p` and `@!UPn` (run unless
    /// every active thread has `p`). ptxas does this for `@p mbarrier.init` (pyptx
    /// matmul_tma_v33/v34/v35, fa_ws_pingpong: `VOTEU.ALL UP3, P4` … `@!UP3 UIADD3` …
    /// `@!UP6 SYNCS.EXCH.64`), and lists each `VOTEU` in `EIATTR_INT_WARP_WIDE_INSTR_OFFSETS`,
    /// hence [`Inst::warp_wide`]. A uniform predicate is its own guard; `None`: no guard.
    pub(super) fn uniform_guard(&mut self) -> Option<(Reg, bool)> {
        let (p, neg) = self.guard?;
        let class = match p {
            Reg::Virt { vreg, .. } => self.f.vreg(vreg).class,
            Reg::Phys { reg, .. } => reg.class,
        };
        if class == RegClass::UPred {
            return Some((p, neg));
        }
        let up = Reg::whole(self.new_vreg(RegClass::UPred, 1), 1);
        self.emit_unguarded(
            Inst::new(
                "VOTEU",
                &[if neg { "ALL" } else { "ANY" }],
                vec![
                    Operand::def(Reg::phys(PReg::URZ)),
                    Operand::def(up),
                    Operand::use_(p),
                ],
            )
            .warp_wide(),
        );
        Some((up, neg))
    }

    /// The value a loop PHI `v` is assumed to hold while its loop is lowered
    /// ([`crate::lower::ssa::SsaBuilder::loop_phi_candidate`]), with the span and the PHI's
    /// (block, variable) that [`Cx::assumed_phis`] records; `None` when assumptions are off or
    /// this PHI's was refused.
    fn assumable_loop_phi(
        &mut self,
        v: VReg,
    ) -> Option<(VReg, crate::frontend::ast::Span, (u32, u32))> {
        if !self.assume_loop_phis && self.uniform_vars.is_empty() {
            return None;
        }
        if self.uniform_vars.contains(&self.ssa.phi_var(v)?) {
            self.ssa.read_into_phi(self.f, v);
        }
        let (b, var, x) = self.ssa.loop_phi_candidate(self.f, v)?;
        if !self.assume_loop_phis && !self.uniform_vars.contains(&var) {
            return None;
        }
        let at = (b.0, var.0);
        if self.refused_loop_phis.contains(&at) {
            return None;
        }
        Some((x, self.cur_span?, at))
    }

    /// A PHI of a loop still being lowered (its back edges are not known yet): when every value
    /// known to enter it is one value `x`, the PHI is taken to be `x` — as it is when the loop
    /// never writes the variable (`mov.u32 %r12, bar` before a `try_wait` loop on `[%r12]`) —
    /// and the assumption is checked once every block is sealed
    /// ([`crate::lower::ssa::SsaBuilder::loop_phi_candidate`] says which values count). Only
    /// where the operand must be uniform (an mbarrier address, a wgmma descriptor:
    /// [`Cx::assume_loop_phis`]), or for a register `loop_uniform.rs` proves warp-uniform
    /// ([`Cx::uniform_vars`]): elsewhere a value that is not provably uniform has a
    /// per-thread fallback. When the assumption was found wrong (the loop changes the
    /// variable), `lower_function` selects the function again with the PHI in
    /// `refused_loop_phis`, and the operand takes its per-thread form.
    fn uniform_loop_phi(&mut self, v: VReg, depth: u32) -> Option<VReg> {
        let (x, span, at) = self.assumable_loop_phi(v)?;
        let u = self.uniform_vreg(x, depth + 1)?;
        self.assumed_phis.push((v, x, span, at));
        self.uniform_cache.insert(v, u);
        Some(u)
    }

    /// [`Cx::uniform_loop_phi`] for one word of a multi-word value written word by word.
    fn uniform_loop_phi_word(&mut self, v: VReg, w: u8, depth: u32) -> Option<Reg> {
        let (x, span, at) = self.assumable_loop_phi(v)?;
        let u = self.uniform_word(x, w, depth + 1)?;
        self.assumed_phis.push((v, x, span, at));
        Some(u)
    }

    /// Remembers the last instruction that wrote each word of a multi-word vreg. Inlined up to
    /// the width test: most definitions are of one-word registers, and as a call the test cost
    /// 31 instructions per selected instruction (callgrind, straight-line 64k: 1.7M).
    #[inline(always)]
    pub(super) fn note_word_def(&mut self, d: Reg, inst: &Inst) {
        if let Reg::Virt { vreg, .. } = d
            && self.f.vreg(vreg).words >= 2
        {
            self.note_multiword_def(d, inst);
        }
    }

    /// [`Cx::note_word_def`] of a word (or words) of a multi-word vreg.
    #[inline(never)]
    fn note_multiword_def(&mut self, d: Reg, inst: &Inst) {
        let Reg::Virt { vreg, first, count } = d else {
            return;
        };
        // Only what `uniform_word` can use: a copy, or an instruction with a uniform twin.
        let usable = inst.mnemonic == "COPY" || uniform_mnemonic(inst.mnemonic).is_some();
        for w in first..first + count {
            let def = (inst.guard.is_none() && count == 1 && usable).then(|| inst.clone());
            self.word_def.insert((vreg, w), def);
        }
    }

    /// One word of a multi-word value that was written on its own (`MOV d.lo, …`): the
    /// uniform twin of the instruction that wrote it, into a fresh one-word uniform register.
    fn uniform_word(&mut self, v: VReg, w: u8, depth: u32) -> Option<Reg> {
        if depth > 16 {
            return None;
        }
        let Some(def) = self.word_def.get(&(v, w)).cloned() else {
            // A PHI whose arguments are all one value (a variable read in a later block)
            // stands for that value; so may a PHI of a loop still being lowered (a 64-bit wgmma
            // descriptor built before the loop, [`Cx::uniform_loop_phi`]).
            if let Some(same) = self.ssa.trivial_phi_value(self.f, v) {
                return self.uniform_word(same, w, depth + 1);
            }
            return self.uniform_loop_phi_word(v, w, depth);
        };
        let def = def?;
        // Besides the word, the instruction may write a carry predicate (the low half of a
        // 64-bit add: `IADD3 lo, P0, a, b, RZ`, then `IADD3.X hi, …, P0, !PT`); it gets a uniform
        // twin too, remembered for the `.X` of the high word.
        let carry = |r: Reg| {
            matches!(r, Reg::Virt { vreg, .. } if vreg != v
                && self.f.vreg(vreg).class == RegClass::Pred && self.f.vreg(vreg).words == 1)
        };
        let extra = def
            .defs()
            .filter(|d| d.vreg() != Some(v))
            .collect::<Vec<_>>();
        if def.defs().filter(|d| d.vreg() == Some(v)).count() != 1
            || extra.len() > 1
            || extra.iter().any(|&d| !carry(d))
            || def.ops.iter().any(|o| matches!(o.kind, OpKind::Prior(_)))
        {
            return None;
        }
        let moved = def.mnemonic == "MOV"
            && def.mods.is_empty()
            && matches!(def.uses().next(), Some(Reg::Virt { .. }));
        if def.mnemonic == "COPY" || moved {
            // A word copied in (`pair`, `set_word`, the low word of `cvt.u64.u32`): the uniform
            // value of its source, not a `UMOV` of it.
            let src = def.uses().next()?;
            return if src.count() == 1 {
                self.uniform_of(src)
            } else {
                None
            };
        }
        let mnemonic = uniform_mnemonic(def.mnemonic)?;
        if reads_thread_sreg(&def) {
            return None;
        }
        let u = self.new_vreg(RegClass::Ugpr, 1);
        let mut ops = Vec::with_capacity(def.ops.len() + 1);
        let mut carried = None;
        for o in &def.ops {
            let mut o = o.clone();
            match &mut o.kind {
                OpKind::Reg(rr) if rr.def && rr.reg.vreg() == Some(v) => rr.reg = Reg::whole(u, 1),
                OpKind::Reg(rr) if rr.def => {
                    let up = self.new_vreg(RegClass::UPred, 1);
                    carried = rr.reg.vreg().map(|c| (c, up));
                    rr.reg = Reg::whole(up, 1);
                }
                OpKind::Reg(rr) => rr.reg = self.uniform_of(rr.reg)?,
                OpKind::CBank { base: Some(_), .. } | OpKind::Mem { .. } => return None,
                // Only `ULDC` reads the constant bank (`IADD3 lo, P0, R, c[0x0][0x198]` has no
                // uniform twin).
                OpKind::CBank { .. } if def.mnemonic != "LDC" => return None,
                _ => {}
            }
            ops.push(o);
        }
        if def.mnemonic == "VIADD" {
            ops.push(Operand::use_(Reg::phys(PReg::URZ)));
        }
        self.emit_unguarded(Inst::new(mnemonic, &def.mods, ops));
        if let Some((c, up)) = carried {
            self.uniform_cache.insert(c, up);
        }
        Some(Reg::whole(u, 1))
    }

    fn uniform_vreg(&mut self, v: VReg, depth: u32) -> Option<VReg> {
        if depth > 16 {
            return None;
        }
        if let Some(u) = self.uniform_cache.get(&v) {
            return Some(*u);
        }
        let def = match self.def_of.get(v) {
            FirstDef::Inst(def) => def.clone(),
            // No uniform twin (`kept_def`).
            FirstDef::Other => return None,
            FirstDef::Unseen => {
                if let Some(u) = self.uniform_loop_phi(v, depth) {
                    return Some(u);
                }
                // A PHI whose arguments are all one value (placed while blocks were unsealed and
                // not yet removed) stands for that value.
                let same = self.ssa.trivial_phi_value(self.f, v)?;
                let u = self.uniform_vreg(same, depth + 1)?;
                self.uniform_cache.insert(v, u);
                return Some(u);
            }
        };
        if def.guard.is_some() || def.ops.iter().any(|o| matches!(o.kind, OpKind::Prior(_))) {
            return None;
        }
        // A multi-word value written piecewise (one instruction per word) is not rebuilt here,
        // nor an instruction that writes such a word besides `v` (the carry of a 64-bit add:
        // [`Cx::uniform_word`] rebuilds it with its word).
        if def
            .defs()
            .any(|d| d.vreg().is_some_and(|x| d.count() < self.f.vreg(x).words))
        {
            return None;
        }
        let mnemonic = uniform_mnemonic(def.mnemonic)?;
        if reads_thread_sreg(&def) {
            return None;
        }
        if def.mnemonic == "LDC"
            && def
                .ops
                .iter()
                .any(|o| matches!(o.kind, OpKind::CBank { base: Some(_), .. }))
        {
            return None;
        }
        let mut ops = Vec::with_capacity(def.ops.len() + 1);
        let mut result = None;
        for o in &def.ops {
            let mut o = o.clone();
            match &mut o.kind {
                OpKind::Reg(rr) if rr.def => {
                    let Reg::Virt { vreg, first, count } = rr.reg else {
                        // A discarded predicate result (PT) becomes UPT.
                        rr.reg = self.uniform_of(rr.reg)?;
                        ops.push(o);
                        continue;
                    };
                    let info = self.f.vreg(vreg).clone();
                    let class = match info.class {
                        RegClass::Gpr => RegClass::Ugpr,
                        RegClass::Pred => RegClass::UPred,
                        other => other,
                    };
                    let u = self.new_vreg(class, info.words);
                    if vreg == v {
                        result = Some(u);
                    } else {
                        self.uniform_cache.insert(vreg, u);
                    }
                    rr.reg = Reg::Virt {
                        vreg: u,
                        first,
                        count,
                    };
                }
                OpKind::Reg(rr) => rr.reg = self.uniform_of(rr.reg)?,
                OpKind::CBank { base: Some(_), .. } | OpKind::Mem { .. } => return None,
                _ => {}
            }
            ops.push(o);
        }
        // VIADD d, a, imm → UIADD3 d, a, imm, URZ.
        if def.mnemonic == "VIADD" {
            ops.push(Operand::use_(Reg::phys(PReg::URZ)));
        }
        let u = result?;
        self.emit_unguarded(Inst::new(mnemonic, &def.mods, ops));
        self.uniform_cache.insert(v, u);
        Some(u)
    }

    /// Whether `r` is provably the same in every thread of the warp (what [`Cx::uniform_of`]
    /// could recompute), without emitting anything.
    pub fn is_uniform(&self, r: Reg) -> bool {
        fn walk(cx: &Cx<'_>, r: Reg, depth: u32) -> bool {
            match r {
                Reg::Phys { reg, .. } => reg.is_zero(),
                Reg::Virt { vreg, .. } => {
                    if matches!(cx.f.vreg(vreg).class, RegClass::Ugpr | RegClass::UPred) {
                        return true;
                    }
                    let def = match cx.def_of.get(vreg) {
                        FirstDef::Inst(def) => def,
                        // No uniform twin (`kept_def`).
                        FirstDef::Other => return false,
                        FirstDef::Unseen => {
                            return cx.ssa.trivial_phi_value(cx.f, vreg).is_some_and(|v| {
                                walk(cx, Reg::whole(v, cx.f.vreg(v).words), depth + 1)
                            });
                        }
                    };
                    if depth > 16 || def.guard.is_some() || uniform_mnemonic(def.mnemonic).is_none()
                    {
                        return false;
                    }
                    // `def_of` keeps the first instruction that writes the value: when it writes
                    // only some of its words (`cvt.u64.u32` of `%tid.x` is `MOV hi, 0x0` then
                    // `MOV lo, R`), the other words come from other instructions, and the value
                    // is not known to be uniform (a `setp.u64` on it is a divergent branch that
                    // needs its BSSY/BSYNC). [`Cx::is_uniform_every_def`] looks at every word.
                    let words = cx.f.vreg(vreg).words;
                    if words > 1
                        && !def.defs().any(|d| {
                            matches!(d, Reg::Virt { vreg: v, first: 0, count }
                                if v == vreg && count == words)
                        })
                    {
                        return false;
                    }
                    if def.mnemonic == "S2R"
                        && !def
                            .ops
                            .iter()
                            .any(|o| matches!(o.kind, OpKind::SReg(n) if uniform_sreg(n)))
                    {
                        return false;
                    }
                    sources_uniform(def, |r| walk(cx, r, depth + 1))
                }
            }
        }
        walk(self, r, 0)
    }

    /// Like [`Cx::is_uniform`], but every instruction that writes a word of a value counts, not
    /// only the first: a 64-bit value built word by word (`cvt.u64.u32` of `%tid.x` is
    /// `MOV hi, 0x0` then `MOV lo, R`) is uniform only if each word is. Warp aggregation
    /// (`atomics.rs`) relies on it for addresses: one thread's atomic stands for the warp's.
    pub fn is_uniform_every_def(&self, r: Reg) -> bool {
        fn walk(cx: &Cx<'_>, r: Reg, depth: u32) -> bool {
            let Reg::Virt { vreg, .. } = r else {
                return matches!(r, Reg::Phys { reg, .. } if reg.is_zero());
            };
            let info = cx.f.vreg(vreg);
            if matches!(info.class, RegClass::Ugpr | RegClass::UPred) {
                return true;
            }
            if depth > 16 {
                return false;
            }
            let mut defs: Vec<&Inst> =
                cx.f.blocks
                    .iter()
                    .flat_map(|b| b.insts.iter())
                    .filter(|i| i.defs().any(|d| d.vreg() == Some(vreg)))
                    .collect();
            // Values placed at the entry (parameters, the descriptor) are not in a block yet.
            if defs.is_empty() {
                match cx.def_of.get(vreg) {
                    FirstDef::Inst(d) => defs.push(d),
                    // No uniform twin (`kept_def`), and not a PHI.
                    FirstDef::Other => return false,
                    FirstDef::Unseen => {}
                }
            }
            // A PHI (placed while reading a variable across blocks) is uniform when it is
            // trivial and its one value is.
            if defs.is_empty() || defs.iter().any(|d| d.mnemonic == "PHI") {
                return cx
                    .ssa
                    .trivial_phi_value(cx.f, vreg)
                    .is_some_and(|v| walk(cx, Reg::whole(v, cx.f.vreg(v).words), depth + 1));
            }
            defs.iter().all(|def| {
                def.guard.is_none()
                    && uniform_mnemonic(def.mnemonic).is_some()
                    && !reads_thread_sreg(def)
                    && sources_uniform(def, |r| walk(cx, r, depth + 1))
            })
        }
        walk(self, r, 0)
    }

    /// Runs `body` with `r` in a uniform register, once per distinct value of `r` among the
    /// active threads: the value itself when it is provably uniform, else ptxas's peeling loop
    /// (`16_tma_elect`, `09_mbarrier` with a register address):
    ///
    /// ```text
    ///       PLOP3.LUT P0, PT, PT, PT, PT, 0x80, 0x0      ; P0: this thread still waits
    /// loop: PLOP3.LUT P1, PT, P1, P0, PT, 0xa2, 0x0      ; P1 |= !P0
    ///   @P0 R2UR P1, UR, R                               ; UR: one waiting thread's R
    ///   @P0 PLOP3.LUT P0, PT, P1, PT, PT, 0x80, 0x0      ; P0 = P1
    ///       <body with UR>
    ///   @P0 BRA.U.ANY loop
    /// ```
    pub fn with_uniform(&mut self, r: Reg, body: impl FnOnce(&mut Self, Reg)) {
        if let Some(u) = self.uniform_of(r) {
            body(self, u);
            return;
        }
        let words = r.count();
        let pred_var = |cx: &mut Self, name: &str| {
            cx.ssa.new_var(VarInfo {
                class: RegClass::Pred,
                words: 1,
                name: name.into(),
            })
        };
        let (p0, p1) = (
            pred_var(self, "waterfall.todo"),
            pred_var(self, "waterfall.match"),
        );
        let pt = || Operand::use_(Reg::phys(PReg::PT));
        let todo0 = self.new_vreg(RegClass::Pred, 1);
        self.emit_unguarded(Inst::new(
            "PLOP3",
            &["LUT"],
            vec![
                Operand::def(Reg::whole(todo0, 1)),
                Operand::def(Reg::phys(PReg::PT)),
                pt(),
                pt(),
                pt(),
                Operand::imm(0x80),
                Operand::imm(0),
            ],
        ));
        self.ssa.write(p0, self.cur, todo0);
        let (head, after) = self.open_self_loop();
        let todo = self.ssa.read(self.f, p0, head);
        let matched_prev = self.ssa.read(self.f, p1, head);
        let m1 = self.new_vreg(RegClass::Pred, 1);
        self.emit_unguarded(Inst::new(
            "PLOP3",
            &["LUT"],
            vec![
                Operand::def(Reg::whole(m1, 1)),
                Operand::def(Reg::phys(PReg::PT)),
                Operand::use_(Reg::whole(matched_prev, 1)),
                Operand::use_(Reg::whole(todo, 1)),
                pt(),
                Operand::imm(0xa2),
                Operand::imm(0),
            ],
        ));
        let m2 = self.new_vreg(RegClass::Pred, 1);
        let u = self.new_vreg(RegClass::Ugpr, words);
        let guard = Reg::whole(todo, 1);
        self.emit_unguarded(
            Inst::new(
                "R2UR",
                &[],
                vec![
                    Operand::def(Reg::whole(m2, 1)),
                    Operand::def(Reg::whole(u, words)),
                    Operand::use_(r),
                    Operand::new(OpKind::Prior(Reg::whole(m1, 1))),
                ],
            )
            .guarded(guard, false),
        );
        let todo2 = self.new_vreg(RegClass::Pred, 1);
        self.emit_unguarded(
            Inst::new(
                "PLOP3",
                &["LUT"],
                vec![
                    Operand::def(Reg::whole(todo2, 1)),
                    Operand::def(Reg::phys(PReg::PT)),
                    Operand::use_(Reg::whole(m2, 1)),
                    pt(),
                    pt(),
                    Operand::imm(0x80),
                    Operand::imm(0),
                    Operand::new(OpKind::Prior(Reg::whole(todo, 1))),
                ],
            )
            .guarded(guard, false),
        );
        self.ssa.write(p1, head, m2);
        self.ssa.write(p0, head, todo2);
        body(self, Reg::whole(u, words));
        self.emit_unguarded(
            Inst::new(
                "BRA",
                &["U", "ANY"],
                vec![Operand::new(OpKind::Block(head))],
            )
            .guarded(Reg::whole(todo2, 1), false),
        );
        let last = self.cur;
        self.f.block_mut(last).fallthrough = Some(after);
        self.seal(head);
        self.switch_to(after, true);
    }
}

/// An `S2R` of a special register that differs between the threads of a warp (`SR_TID.X`), which
/// has no uniform counterpart.
fn reads_thread_sreg(def: &Inst) -> bool {
    def.mnemonic == "S2R"
        && !def
            .ops
            .iter()
            .any(|o| matches!(o.kind, OpKind::SReg(n) if uniform_sreg(n)))
}

/// Whether an instruction's sources are uniform when each register it reads is (`reg_uniform`
/// decides those): no prior value of a guarded definition, no memory, no constant-bank load
/// through a register.
fn sources_uniform(def: &Inst, mut reg_uniform: impl FnMut(Reg) -> bool) -> bool {
    def.ops.iter().all(|o| match &o.kind {
        OpKind::Reg(rr) if !rr.def => reg_uniform(rr.reg),
        OpKind::Prior(_) | OpKind::Mem { .. } | OpKind::CBank { base: Some(_), .. } => false,
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`def_record`] sorts every mnemonic as [`kept_def`] and [`twin_only`] do: those selection
    /// makes, the uniform twins, pseudos, and a few that neither keeps.
    #[test]
    fn sisel_def_record_agrees_with_kept_def_and_twin_only() {
        let mnemonics = [
            "S2R", "LDC", "MOV", "IADD3", "VIADD", "LEA", "SHF", "SGXT", "LOP3", "IMAD", "PRMT",
            "SEL", "ISETP", "PLOP3", "COPY", "LD", "LDG", "LDS", "PHI", "ELECT", "FSETP", "UMOV",
            "UNDEF", "FFMA", "FADD", "FMUL", "I2FP", "STG", "S2UR", "ULDC", "UIADD3", "UISETP",
            "IADD", "LDSM", "MOV32I", "",
        ];
        for m in mnemonics {
            let record = def_record(m);
            assert_eq!(
                (record != DefRecord::Other, record == DefRecord::TwinOnly),
                (kept_def(m), twin_only(m)),
                "{m}"
            );
        }
    }

    fn info(class: RegClass) -> VRegInfo {
        VRegInfo {
            class,
            words: 1,
            hint: None,
        }
    }

    fn s2r(d: u32, sreg: u8) -> Inst {
        Inst::new(
            "S2R",
            &[],
            vec![
                Operand::def(Reg::whole(VReg(d), 1)),
                Operand::new(OpKind::SReg(sreg)),
            ],
        )
    }

    fn iadd3(d: u32, a: u32) -> Inst {
        Inst::new(
            "IADD3",
            &[],
            vec![
                Operand::def(Reg::whole(VReg(d), 1)),
                Operand::use_(Reg::whole(VReg(a), 1)),
                Operand::imm(4),
                Operand::use_(Reg::phys(PReg::RZ)),
            ],
        )
    }

    /// Arithmetic on `%tid.x` keeps no copy (it is never uniform), and neither does what reads
    /// it; arithmetic on `%ctaid.x` (uniform, `SR_CTAID.X` = 0x25) keeps one, and so do the
    /// definitions other questions look at (`MOV`) whatever they read.
    #[test]
    fn sisel3_first_defs_drop_per_thread_arithmetic() {
        let vregs = vec![info(RegClass::Gpr); 6];
        let mut defs = FirstDefs::default();
        defs.reserve(vregs.len());
        defs.set(VReg(0), &s2r(0, 0x21), &vregs);
        defs.set(VReg(1), &s2r(1, 0x25), &vregs);
        defs.note(VReg(2), &iadd3(2, 0), &vregs);
        defs.note(VReg(3), &iadd3(3, 2), &vregs);
        defs.note(VReg(4), &iadd3(4, 1), &vregs);
        let mov = Inst::new(
            "MOV",
            &[],
            vec![
                Operand::def(Reg::whole(VReg(5), 1)),
                Operand::use_(Reg::whole(VReg(3), 1)),
            ],
        );
        defs.note(VReg(5), &mov, &vregs);
        assert!(matches!(defs.get(VReg(0)), FirstDef::Inst(i) if i.mnemonic == "S2R"));
        assert!(matches!(defs.get(VReg(2)), FirstDef::Other));
        assert!(matches!(defs.get(VReg(3)), FirstDef::Other));
        assert!(matches!(defs.get(VReg(4)), FirstDef::Inst(i) if i.mnemonic == "IADD3"));
        assert!(matches!(defs.get(VReg(5)), FirstDef::Inst(i) if i.mnemonic == "MOV"));
        assert_eq!(defs.kept.len(), 4);
    }
}
