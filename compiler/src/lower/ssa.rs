//! SSA construction while lowering, after Braun, Buchwald, Hack, Leißa, Mallon and Zwinkau,
//! "Simple and Efficient Construction of Static Single Assignment Form" (CC 2013).
//!
//! Every PTX register is a *variable*. Lowering a block records the vreg that holds each
//! variable's current value there ([`SsaBuilder::write`]); a read ([`SsaBuilder::read`]) looks
//! in the block, then in its predecessors, placing a `PHI` where control merges. A block is
//! *sealed* once all its predecessors are known to be lowered; until then a read places an
//! incomplete `PHI` whose arguments are filled in when the block is sealed. A variable read on a
//! path where it was never written gets an `UNDEF`. Trivial `PHI`s (all arguments the same value)
//! are removed at the end ([`SsaBuilder::finish`]).

use crate::mir::{BlockId, Function, Inst, OpKind, Operand, Reg, RegClass, VReg};
use rustc_hash::{FxHashMap, FxHashSet};

/// A PTX register being put into SSA form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub u32);

/// The shape of a variable's values.
#[derive(Clone, Debug)]
pub struct VarInfo {
    pub class: RegClass,
    pub words: u8,
    /// The PTX register's name, shared with every value made of it ([`crate::mir::VRegInfo`]'s
    /// hint).
    pub name: std::sync::Arc<str>,
}

pub struct SsaBuilder {
    pub vars: Vec<VarInfo>,
    /// Each variable's latest write, by variable: the block and the value
    /// ([`NO_WRITE`] for none yet). Nearly every read is of a variable written earlier in the
    /// block being lowered, and every write is, so both go here first; `current` gets a
    /// variable's value in a block when the variable is next written in another block, and
    /// what a read finds in other blocks ([`SsaBuilder::remember`]). On a block of straight-line
    /// code a read or a write is then an index and a compare instead of a hash probe.
    latest: Vec<(BlockId, VReg)>,
    /// The value of each variable at the current point of each block, except where
    /// `latest` holds a newer one (its block's entry here may be stale).
    current: FxHashMap<(Var, BlockId), VReg>,
    incomplete: FxHashMap<BlockId, Vec<(Var, VReg)>>,
    /// Whether each block is sealed, by block number: a read asks at every block it walks
    /// through, and an index costs less than the hash-set probe it replaced (with `phis_in`
    /// a vector too, loop_16000: `select` 128.5M → 124.5M).
    sealed: Vec<bool>,
    /// The predecessors of every block, known before lowering starts (blocks made by
    /// instruction selection add theirs as they are made).
    pub preds: Vec<Vec<BlockId>>,
    /// The PHIs placed so far: vreg → (block, variable, how many PHIs that block had before).
    phis: FxHashMap<VReg, (BlockId, Var, u32)>,
    /// How many PHIs each block got, by block number.
    phis_in: Vec<u32>,
    /// The `UNDEF`s placed (reads in blocks without predecessors).
    undefs: FxHashSet<VReg>,
}

/// A [`SsaBuilder::latest`] slot of a variable not written yet.
const NO_WRITE: (BlockId, VReg) = (BlockId(u32::MAX), VReg(u32::MAX));

impl SsaBuilder {
    pub fn new(nblocks: usize) -> SsaBuilder {
        SsaBuilder {
            vars: Vec::new(),
            latest: Vec::new(),
            current: FxHashMap::default(),
            incomplete: FxHashMap::default(),
            sealed: vec![false; nblocks],
            preds: vec![Vec::new(); nblocks],
            phis: FxHashMap::default(),
            phis_in: Vec::new(),
            undefs: FxHashSet::default(),
        }
    }

    pub fn new_var(&mut self, info: VarInfo) -> Var {
        self.vars.push(info);
        self.latest.push(NO_WRITE);
        Var(self.vars.len() as u32 - 1)
    }

    pub fn var(&self, v: Var) -> &VarInfo {
        &self.vars[v.0 as usize]
    }

    /// Makes room for a block created during lowering.
    pub fn add_block(&mut self, b: BlockId, preds: Vec<BlockId>) {
        let i = b.0 as usize;
        if self.preds.len() <= i {
            self.preds.resize(i + 1, Vec::new());
        }
        self.preds[i] = preds;
    }

    pub fn add_pred(&mut self, b: BlockId, pred: BlockId) {
        let i = b.0 as usize;
        if self.preds.len() <= i {
            self.preds.resize(i + 1, Vec::new());
        }
        if !self.preds[i].contains(&pred) {
            self.preds[i].push(pred);
        }
    }

    #[inline]
    pub fn write(&mut self, var: Var, block: BlockId, value: VReg) {
        let slot = &mut self.latest[var.0 as usize];
        let (last_block, last_value) = *slot;
        *slot = (block, value);
        if last_block != block && last_block != NO_WRITE.0 {
            self.current.insert((var, last_block), last_value);
        }
    }

    /// The value `var` was last given in `block` itself, if it was written there.
    #[inline]
    pub fn current_in(&self, var: Var, block: BlockId) -> Option<VReg> {
        match self.latest[var.0 as usize] {
            (b, v) if b == block => Some(v),
            _ => self.current.get(&(var, block)).copied(),
        }
    }

    /// The vreg that holds `var` at the current point of `block`. Always inlined: the reads of
    /// a loop recurse through it (`read_recursive`, `fill_phi`), and as a call it cost
    /// loop_16000 about 2M instructions more than the map probe it was before `latest`.
    #[inline(always)]
    pub fn read(&mut self, f: &mut Function, var: Var, block: BlockId) -> VReg {
        if let Some(v) = self.current_in(var, block) {
            return v;
        }
        self.read_recursive(f, var, block)
    }

    fn new_value(&self, f: &mut Function, var: Var) -> VReg {
        let info = self.var(var);
        f.new_vreg(info.class, info.words, Some(info.name.clone()))
    }

    /// A read of a variable not written in `block` (yet): out of line, so that
    /// [`SsaBuilder::read`]'s common case (a value of the block) is a map probe inlined into
    /// its callers; inlined, this made every read save and restore registers (16k
    /// straight-line kernel: 19 of the 58 instructions of a read).
    #[inline(never)]
    fn read_recursive(&mut self, f: &mut Function, var: Var, block: BlockId) -> VReg {
        // Only the number of predecessors and the first are needed: no copy of the list.
        let (npreds, first) = match self.preds.get(block.0 as usize) {
            Some(p) => (p.len(), p.first().copied()),
            None => (0, None),
        };
        let value = if !self.is_sealed(block) {
            let phi = self.place_phi(f, var, block);
            self.incomplete.entry(block).or_default().push((var, phi));
            phi
        } else if let (1, Some(p)) = (npreds, first) {
            self.read(f, var, p)
        } else if npreds == 0 {
            self.undef(f, var, block)
        } else {
            let phi = self.place_phi(f, var, block);
            self.remember(var, block, phi);
            self.fill_phi(f, var, phi, block);
            phi
        };
        self.remember(var, block, value);
        value
    }

    /// Records what a read found for `var` in `block`, where it was not written: in `current`,
    /// so that it does not push the variable's latest write out of `latest` (a loop's reads
    /// walk many blocks, and with the answers written to `latest` every step moved the slot's
    /// value into `current`: loop_16000 went from 375.8M to 380.6M instructions).
    fn remember(&mut self, var: Var, block: BlockId, value: VReg) {
        let slot = &mut self.latest[var.0 as usize];
        if slot.0 == block {
            slot.1 = value;
        } else {
            self.current.insert((var, block), value);
        }
    }

    /// An `UNDEF` at the start of `block` (reads of never-written registers).
    fn undef(&mut self, f: &mut Function, var: Var, block: BlockId) -> VReg {
        let v = self.new_value(f, var);
        let words = self.var(var).words;
        let at = f
            .block(block)
            .insts
            .iter()
            .take_while(|i| i.is_phi())
            .count();
        f.block_mut(block).insts.insert(
            at,
            Inst::new("UNDEF", &[], vec![Operand::def(Reg::whole(v, words))]),
        );
        self.undefs.insert(v);
        v
    }

    fn place_phi(&mut self, f: &mut Function, var: Var, block: BlockId) -> VReg {
        let v = self.new_value(f, var);
        let words = self.var(var).words;
        // Room for an argument per predecessor, which `fill_phi` adds: a list made for the
        // result alone was grown once per PHI (callgrind, 1000 loops of 16 instructions: 9.0M
        // instructions of 468.9M in the reallocations).
        let npreds = self.preds.get(block.0 as usize).map_or(0, Vec::len);
        let mut ops = Vec::with_capacity(1 + npreds);
        ops.push(Operand::def(Reg::whole(v, words)));
        f.block_mut(block)
            .insts
            .insert(0, Inst::new("PHI", &[], ops));
        let i = block.0 as usize;
        if self.phis_in.len() <= i {
            self.phis_in.resize(i + 1, 0);
        }
        let n = &mut self.phis_in[i];
        self.phis.insert(v, (block, var, *n));
        *n += 1;
        v
    }

    /// Where the PHI defining `v` is in its block. Each PHI is placed at the front, so the one
    /// placed `k`-th of `n` sits at `n - 1 - k` unless something was inserted before it since;
    /// that position is tried first and the block searched otherwise (a loop header holds a
    /// PHI per variable, and filling each by a search from the front took 7% of compiling a
    /// loop-heavy kernel).
    fn phi_index(&self, f: &Function, v: VReg) -> Option<usize> {
        let (block, _, k) = *self.phis.get(&v)?;
        let insts = &f.block(block).insts;
        let defines = |i: &Inst| i.is_phi() && i.defs().next().and_then(Reg::vreg) == Some(v);
        let n = self.phis_in.get(block.0 as usize).copied().unwrap_or(0);
        let hint = n.checked_sub(k + 1).map(|h| h as usize);
        match hint {
            Some(h) if insts.get(h).is_some_and(defines) => Some(h),
            _ => insts.iter().position(defines),
        }
    }

    fn fill_phi(&mut self, f: &mut Function, var: Var, phi: VReg, block: BlockId) {
        let words = self.var(var).words;
        // By index: reading does not change the predecessor lists, so none is copied.
        let n = self.preds[block.0 as usize].len();
        let mut args = Vec::with_capacity(n);
        for k in 0..n {
            let p = self.preds[block.0 as usize][k];
            let v = self.read(f, var, p);
            args.push(Operand::new(OpKind::PhiArg(p, Reg::whole(v, words))));
        }
        let at = self
            .phi_index(f, phi)
            .expect("the PHI placed for this variable");
        f.block_mut(block).insts[at].ops.extend(args);
    }

    /// Declares that every predecessor of `block` is lowered.
    pub fn seal(&mut self, f: &mut Function, block: BlockId) {
        let i = block.0 as usize;
        if self.sealed.len() <= i {
            self.sealed.resize(i + 1, false);
        }
        if std::mem::replace(&mut self.sealed[i], true) {
            return;
        }
        for (var, phi) in self.incomplete.remove(&block).unwrap_or_default() {
            self.fill_phi(f, var, phi, block);
        }
    }

    /// When `v` is a PHI of a sealed block whose arguments are all one value (or `UNDEF`),
    /// that value. An
    /// argument that is itself such a PHI counts as the values it merges, so that a group of
    /// PHIs that only pass one value around (a variable read after a loop that never writes
    /// it: the join's PHI reads the loop header's, which reads itself) is that value.
    pub fn trivial_phi_value(&self, f: &Function, v: VReg) -> Option<VReg> {
        let mut work = vec![v];
        let mut seen = vec![v];
        let mut same = None;
        while let Some(p) = work.pop() {
            let (block, _, _) = *self.phis.get(&p)?;
            if !self.is_sealed(block) {
                return None;
            }
            let phi = &f.block(block).insts[self.phi_index(f, p)?];
            for o in &phi.ops {
                if let OpKind::PhiArg(_, r) = o.kind {
                    let a = r.vreg()?;
                    // An `UNDEF` (the value on a path from a block without predecessors) may
                    // be taken to be any value, so it agrees with the others.
                    if seen.contains(&a) || Some(a) == same || self.undefs.contains(&a) {
                        continue;
                    }
                    let is_live_phi = self.phi_index(f, a).is_some();
                    if is_live_phi && seen.len() < 64 {
                        seen.push(a);
                        work.push(a);
                        continue;
                    }
                    if same.is_some() {
                        return None;
                    }
                    same = Some(a);
                }
            }
        }
        same
    }

    /// For a PHI `v` that may belong to a loop still being lowered: its block, its variable and
    /// the one value `x` that reaches it so far, if there is one. The values that reach a PHI
    /// are its arguments once its block is sealed, else the variable's values at the end of the
    /// predecessors lowered so far; an argument that is itself a PHI of the variable counts as
    /// the values that reach it, so that a block laid out before the loop header that loops
    /// back to it (pyptx `fa_ws_pingpong`'s `$L__BB0_21`, which reads the shared-window base
    /// and falls into the header `$L__BB0_2`) does not hide `x`. Only a guess: the caller must
    /// check with [`SsaBuilder::resolves_to`] once every block is sealed.
    pub fn loop_phi_candidate(&self, f: &Function, v: VReg) -> Option<(BlockId, Var, VReg)> {
        let (block, var, _) = *self.phis.get(&v)?;
        let mut work = vec![v];
        let mut seen = vec![v];
        let mut same = None;
        while let Some(p) = work.pop() {
            let (b, _, _) = *self.phis.get(&p)?;
            let mut args = Vec::new();
            if self.is_sealed(b) {
                let phi = &f.block(b).insts[self.phi_index(f, p)?];
                for o in &phi.ops {
                    if let OpKind::PhiArg(_, r) = o.kind {
                        args.push(r.vreg()?);
                    }
                }
            } else {
                let preds = self.preds.get(b.0 as usize)?;
                args.extend(preds.iter().filter_map(|&q| self.settled(var, q)));
            }
            for a in args {
                if seen.contains(&a) || Some(a) == same || self.undefs.contains(&a) {
                    continue;
                }
                if self.phis.get(&a).is_some_and(|&(_, av, _)| av == var) {
                    if seen.len() >= 64 {
                        return None;
                    }
                    seen.push(a);
                    work.push(a);
                    continue;
                }
                if same.is_some() {
                    return None;
                }
                same = Some(a);
            }
        }
        same.map(|x| (block, var, x))
    }

    /// The variable a PHI was placed for.
    pub fn phi_var(&self, v: VReg) -> Option<Var> {
        self.phis.get(&v).map(|&(_, var, _)| var)
    }

    /// Reads the variable of the PHI `v` in each sealed predecessor of its block, placing the
    /// PHIs a read there needs, so that [`SsaBuilder::loop_phi_candidate`] sees the value that
    /// enters a loop through a merge (pyptx `matmul_tma_v33`'s `$L__BB0_2`, reached from the
    /// entry and from an unreachable block after `bra.uni`). A read in a sealed block is what
    /// lowering that block would do first, so it changes no value.
    pub fn read_into_phi(&mut self, f: &mut Function, v: VReg) {
        let Some(&(block, var, _)) = self.phis.get(&v) else {
            return;
        };
        if self.is_sealed(block) {
            return;
        }
        let preds = self
            .preds
            .get(block.0 as usize)
            .cloned()
            .unwrap_or_default();
        for q in preds {
            if self.is_sealed(q) {
                self.read(f, var, q);
            }
        }
    }

    /// The value of `var` at the end of `block` when it is already known there without placing
    /// a PHI: written in the block, or in the chain of single predecessors of sealed blocks.
    pub fn settled(&self, var: Var, block: BlockId) -> Option<VReg> {
        let mut b = block;
        for _ in 0..64 {
            if let Some(v) = self.current_in(var, b) {
                return Some(v);
            }
            if !self.is_sealed(b) {
                return None;
            }
            match self.preds.get(b.0 as usize).map(Vec::as_slice) {
                Some([p]) => b = *p,
                _ => return None,
            }
        }
        None
    }

    /// Whether `v` is `x`, directly or through a chain of trivial PHIs (all blocks sealed).
    pub fn resolves_to(&self, f: &Function, v: VReg, x: VReg) -> bool {
        let mut cur = v;
        for _ in 0..64 {
            if cur == x {
                return true;
            }
            match self.trivial_phi_value(f, cur) {
                Some(n) => cur = n,
                None => return false,
            }
        }
        false
    }

    pub fn is_sealed(&self, block: BlockId) -> bool {
        self.sealed.get(block.0 as usize).copied().unwrap_or(false)
    }

    /// Removes trivial PHIs (every argument the same value, or the PHI itself) until none is
    /// left, renaming their uses.
    pub fn finish(&mut self, f: &mut Function) {
        crate::mir::phi::remove_trivial_phis(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::verify::verify;

    /// A loop: bb0 -> bb1 (header) -> bb2 (body) -> bb1; bb1 -> bb3. `x` is written in bb0 and
    /// bb2 and read in bb1 and bb3: one PHI in the header, none elsewhere.
    #[test]
    fn loop_gets_one_phi() {
        let mut f = Function::new("loop", true);
        let (b1, b2, b3) = (f.new_block(None), f.new_block(None), f.new_block(None));
        let mut s = SsaBuilder::new(4);
        s.preds = vec![vec![], vec![BlockId(0), b2], vec![b1], vec![b1]];
        let x = s.new_var(VarInfo {
            class: RegClass::Gpr,
            words: 1,
            name: "%x".into(),
        });
        let p = f.new_vreg(RegClass::Pred, 1, None);
        // bb0: x = 0
        s.seal(&mut f, BlockId(0));
        let v0 = f.new_vreg(RegClass::Gpr, 1, None);
        f.blocks[0].insts.push(Inst::new(
            "MOV",
            &[],
            vec![Operand::def(Reg::whole(v0, 1)), Operand::imm(0)],
        ));
        f.blocks[0].insts.push(Inst::new(
            "ISETP",
            &[],
            vec![Operand::def(Reg::whole(p, 1))],
        ));
        f.blocks[0].fallthrough = Some(b1);
        s.write(x, BlockId(0), v0);
        // bb1: branch on x (header, not sealed yet: the latch bb2 is not lowered)
        let xh = s.read(&mut f, x, b1);
        f.block_mut(b1).insts.push(Inst::new(
            "ISETP",
            &[],
            vec![Operand::use_(Reg::whole(xh, 1))],
        ));
        f.block_mut(b1).insts.push(
            Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(b3))])
                .guarded(Reg::whole(p, 1), false),
        );
        f.block_mut(b1).fallthrough = Some(b2);
        // bb2: x = x + 1
        s.seal(&mut f, b2);
        let xb = s.read(&mut f, x, b2);
        let v1 = f.new_vreg(RegClass::Gpr, 1, None);
        f.block_mut(b2).insts.push(Inst::new(
            "IADD3",
            &[],
            vec![
                Operand::def(Reg::whole(v1, 1)),
                Operand::use_(Reg::whole(xb, 1)),
                Operand::imm(1),
            ],
        ));
        f.block_mut(b2)
            .insts
            .push(Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(b1))]));
        s.write(x, b2, v1);
        s.seal(&mut f, b1);
        // bb3: use x
        s.seal(&mut f, b3);
        let xe = s.read(&mut f, x, b3);
        f.block_mut(b3).insts.push(Inst::new(
            "STG",
            &[],
            vec![Operand::use_(Reg::whole(xe, 1))],
        ));
        f.block_mut(b3).insts.push(Inst::new("EXIT", &[], vec![]));
        s.finish(&mut f);
        let phis: usize = f
            .blocks
            .iter()
            .map(|b| b.insts.iter().filter(|i| i.is_phi()).count())
            .sum();
        assert_eq!(phis, 1, "{f}");
        assert!(f.block(b1).insts[0].is_phi());
        assert_eq!(xe, xh);
        verify(&f).unwrap_or_else(|e| panic!("{e:?}\n{f}"));
    }
}
