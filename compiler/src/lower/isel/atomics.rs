//! Atomics and reductions: `atom`, `red` in every space.
//!
//! | space | SASS (ptxas's, where the encoder has it) |
//! |---|---|
//! | `.global` | `ATOMG.E.<op>.STRONG.<scope> PT, d, desc[UR][R.64]`, `REDG.E.<op>` for `red`; float adds as the generic `ATOM.E.ADD.F32.FTZ.RN` (the encoder has no `ATOMG.E.ADD.F32`), `cas` as `ATOM.E.CAS [R.64]` (no `ATOMG.E.CAS` form) |
//! | `.shared` | `ATOMS.<op> d, [R]` (written `[R+URZ]`: the encoder's only `ATOMS.<op>` form), `ATOMS.CAS`; float and most 64-bit operations as a `LDS`/`ATOMS.CAST.SPIN` compare-and-swap loop, as ptxas does |
//! | generic | `ATOM.E.<op>.STRONG.GPU PT, d, desc[UR][R.64]` |
//! | `.shared::cluster` | `ATOM.E.<op>.STRONG.GPU PT, d, [R]` through `{addr32, SR_SWINHI}` |
//!
//! Float and 64-bit atomics on generic and `.shared::cluster` addresses use ptxas's fast path
//! and fallback (ptxas-facts.md §a.3.4): `ATOM.E.<op> P0, …`; where `P0` says it failed, a
//! `QSPC.E.S` test chooses a `LDS`/`ATOMS.CAST.SPIN` loop on the own CTA's shared memory,
//! `QSPC.E.D` a `LD.E`/`ATOM.E.CAST.SPIN` loop on a peer's, and anything else a plain
//! `LD.E`/`ST.E`. Only the windows where the hardware lacks the operation are tested
//! ([`Cx::fallback_windows`]: both for a float add, the own CTA's for a 64-bit integer
//! operation, none for a 64-bit `exch`/`cas`). `QSPC [R]` tests the whole 64-bit address.
//!
//! `.release` adds `MEMBAR…; ERRBAR; CGAERRBAR` before, `.acquire` `CCTL.IVALL` after.
//!
//! ## Warp aggregation
//!
//! ptxas (at `-O1` and up; `-O0` never) aggregates a 32-bit integer atomic on a warp-uniform
//! `.global`, generic or `.shared` address across the active threads of the warp (§e.7): one
//! elected thread performs one atomic for all of them. What it does, from
//! `tests/sass-probes/warp_aggregation.ptx`:
//!
//! | PTX | ptxas |
//! |---|---|
//! | `red` or `atom` with an unused result, `.add/.min/.max/.and/.or/.xor` `.u32/.s32/.b32` | `VOTEU.ANY UR, UPT, PT`; `UFLO.U32` (the leader); `REDUX.<op> UR, v` + `MOV` (add of a uniform `v`: `UPOPC` + `IMAD v, count`; of 1: `POPC R, UR`; of `k`: `POPC` + `IMAD …, k`); `ISETP.EQ.U32 P, laneid, leader`; `@P RED/ATOM/ATOMS … RZ` |
//! | `atom.add.{u32,s32}` with a used result and a warp-uniform operand (immediate, parameter, load from a uniform address) | `VOTEU.ANY`; `FLO.U32 R, UR` (the leader); the total as above; `@P ATOM old`; `POPC(SR_LTMASK & mask)` (the lane's rank); `SHFL.IDX PT, d, old, leader, 0x1f`; `d + rank * v` |
//! | `atom.add.{u32,s32}` with a used result and a per-thread operand | `VOTE.ANY R, PT, PT`; a full warp (`== -1`): an inclusive `SHFL.UP` prefix sum (1, 2, 4, 8, 16), lane 31 does `ATOM old` with the warp's total, each thread adds its exclusive prefix (`SHFL.UP` by 1) to `SHFL.IDX` of lane 31's `old`; a partial warp: one atomic per thread (`atom_add_scan`) |
//! | not aggregated | `atom` with a used result of any other operation, `exch`, `inc`, `dec`, `cas`, 64-bit and float types, per-thread addresses, `-O0` |
//!
//! `EIATTR_INT_WARP_WIDE_INSTR_OFFSETS` lists the `VOTEU`, `VOTE`, `REDUX` and `SHFL` of the
//! sequence ([`Inst::warp_wide`]). Not done by ptxc (each keeps one atomic per thread, which is
//! correct): guarded atomics (`@p atom`, `atom_add_u32_guard`), `.shared::cluster` addresses. ptxas
//! guards the `.release`/`.acquire` fences of an aggregated atomic with the leader's predicate;
//! ptxc keeps them in every thread (stronger, not wrong).

use super::address::{Space, pt, rz, use_, word_of};
use super::memory::{Loc, Order, Scope, Sem, split_mods, vec_len};
use super::{Cx, Dst, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::types::{Kind, Ty};
use crate::mir::*;

/// An atomic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

impl AOp {
    fn of(flags: &[&str]) -> Option<AOp> {
        flags.iter().find_map(|f| {
            Some(match *f {
                ".add" => AOp::Add,
                ".min" => AOp::Min,
                ".max" => AOp::Max,
                ".inc" => AOp::Inc,
                ".dec" => AOp::Dec,
                ".and" => AOp::And,
                ".or" => AOp::Or,
                ".xor" => AOp::Xor,
                ".exch" => AOp::Exch,
                ".cas" => AOp::Cas,
                _ => return None,
            })
        })
    }

    fn name(self) -> &'static str {
        match self {
            AOp::Add => "ADD",
            AOp::Min => "MIN",
            AOp::Max => "MAX",
            AOp::Inc => "INC",
            AOp::Dec => "DEC",
            AOp::And => "AND",
            AOp::Or => "OR",
            AOp::Xor => "XOR",
            AOp::Exch => "EXCH",
            AOp::Cas => "CAS",
        }
    }
}

/// The data type of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AType {
    U32,
    S32,
    U64,
    S64,
    F32,
    F64,
}

impl AType {
    fn of(ty: Ty) -> Option<AType> {
        Some(match (ty.bits(), ty.kind()) {
            (32, Kind::Float) => AType::F32,
            (64, Kind::Float) => AType::F64,
            (32, Kind::Signed) => AType::S32,
            (32, Kind::Unsigned | Kind::Bits) => AType::U32,
            (64, Kind::Signed) => AType::S64,
            (64, Kind::Unsigned | Kind::Bits) => AType::U64,
            _ => return None,
        })
    }

    fn words(self) -> u8 {
        match self {
            AType::U32 | AType::S32 | AType::F32 => 1,
            _ => 2,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, AType::F32 | AType::F64)
    }

    /// The type modifier of an integer ATOM/ATOMG/REDG/ATOMS.
    fn int_mod(self, op: AOp) -> &'static str {
        match self {
            AType::S32 if matches!(op, AOp::Min | AOp::Max | AOp::Add) => "S32",
            AType::U64 => "64",
            AType::S64 if matches!(op, AOp::Min | AOp::Max) => "S64",
            AType::S64 => "64",
            _ => "",
        }
    }

    fn float_mod(self) -> &'static str {
        if self == AType::F32 {
            "F32.FTZ.RN"
        } else {
            "F64.RN"
        }
    }
}

/// What an atomic needs to be lowered.
struct Atomic {
    op: AOp,
    ty: AType,
    sem: Sem,
    /// The operand (`b`) and, for `cas`, the new value (`c`).
    b: Reg,
    c: Option<Reg>,
}

impl Cx<'_> {
    pub(super) fn atom(&mut self, op: &PtxOp<'_>) -> bool {
        let red = op.opcode == "red";
        let Some(ty) = op.ty() else { return false };
        if vec_len(op.flags) > 1 {
            return false;
        }
        let (Some(aop), Some(aty)) = (AOp::of(op.flags), AType::of(ty)) else {
            return false;
        };
        if aty.is_float() && aop != AOp::Add {
            return false;
        }
        let ops = op.operands();
        let cas = aop == AOp::Cas;
        let (d, a, b, c) = match (red, cas, ops) {
            (true, false, [a, b, ..]) => (None, a, b, None),
            (false, false, [d, a, b, ..]) => (Some(d), a, b, None),
            (false, true, [d, a, b, c, ..]) => (Some(d), a, b, Some(c)),
            _ => return false,
        };
        let space = Space::of(op.flags);
        if matches!(space, Space::Local | Space::Param | Space::Const) {
            return false;
        }
        let mut sem = Sem::of(op.flags, Scope::Gpu);
        if sem.order == Order::Weak {
            sem.order = Order::Relaxed;
        }
        let words = aty.words();
        let Some(addr) = self.addr(a) else {
            return true;
        };
        let Some(vb) = self.src(b, ty, words) else {
            return true;
        };
        let vb = self.fit(vb, words);
        let vc = match c {
            Some(c) => match self.src(c, ty, words) {
                Some(v) => {
                    let v = self.fit(v, words);
                    Some(self.reg_of(v, words))
                }
                None => return true,
            },
            None => None,
        };
        let what = format!("`{}`", op.ins.opcode.text);
        let Some(loc) = self.locate(space, &addr, &what) else {
            return true;
        };
        // An `atom` whose result nothing reads is a reduction to ptxas (`atom_min_unused` in
        // tests/sass-probes/warp_aggregation.ptx becomes `REDG.E.MIN`).
        let unused = match d {
            None | Some(ast::Operand::Sink(_)) => true,
            Some(ast::Operand::Expr(e)) => {
                e.as_name().is_some_and(|n| self.name_uses(&n.text) == 1)
            }
            Some(_) => false,
        };
        let aggregate = self.aggregation(aop, aty, unused, &loc, vb);
        let b = self.reg_of(vb, words);
        let dst = match d {
            None | Some(ast::Operand::Sink(_)) => None,
            Some(_) if aggregate == Some(Aggregate::Reduce) => None,
            Some(d) => match self.dst(d) {
                Some(dst) => Some(dst),
                None => return false,
            },
        };
        let at = Atomic {
            op: aop,
            ty: aty,
            sem,
            b,
            c: vc,
        };
        if sem.releases() {
            self.release_fence(sem.scope);
        }
        let ok = match aggregate {
            Some(how) => self.atom_aggregated(how, &at, &loc, vb, dst),
            None => self.atom_one(&at, &loc, dst),
        };
        if ok && sem.acquires() {
            self.acquire_fence(sem.scope);
        }
        ok
    }

    /// One atomic per thread, by its space.
    fn atom_one(&mut self, at: &Atomic, loc: &Loc, dst: Option<Dst>) -> bool {
        match loc {
            Loc::Desc { global: true, .. } => self.atom_global(at, loc, dst),
            Loc::Shared { .. } => self.atom_shared(at, loc, dst),
            Loc::Desc { global: false, .. } | Loc::Pair { .. } => self.atom_generic(at, loc, dst),
            _ => false,
        }
    }

    /// The result register of an atomic: the destination, or RZ when there is none.
    fn result_reg(dst: Option<&Dst>) -> Reg {
        dst.map_or(Reg::phys(PReg::RZ), Dst::reg)
    }

    fn finish_atomic(&mut self, dst: Option<Dst>, inst: Inst) {
        match dst {
            Some(d) => {
                self.emit_def(&d, inst);
                self.commit(d);
            }
            None => self.emit(inst),
        }
    }

    /// The plain memory operand (`[R+off]`) of a 64-bit register pair.
    fn plain_mem(reg: Reg, off: i64) -> Operand {
        Operand::new(OpKind::Mem {
            prefix: MemPrefix::None,
            terms: std::iter::once(MemTerm::Reg(reg, None))
                .chain((off != 0).then_some(MemTerm::Imm(off)))
                .collect(),
        })
    }

    fn atom_global(&mut self, at: &Atomic, loc: &Loc, dst: Option<Dst>) -> bool {
        let Loc::Desc { reg, off, .. } = *loc else {
            return false;
        };
        let strong = at.sem.strong().unwrap_or("STRONG.GPU");
        let d = Self::result_reg(dst.as_ref());
        let inst = if at.op == AOp::Cas {
            let Some(c) = at.c else { return false };
            let mut i = Inst::new(
                "ATOM",
                &[],
                vec![
                    Operand::def(Reg::phys(PReg::PT)),
                    Operand::def(d),
                    Self::plain_mem(reg, off),
                    use_(at.b),
                    use_(c),
                ],
            );
            i.mods = split_mods(["E", "CAS", at.ty.int_mod(at.op), strong]);
            i
        } else if dst.is_none() {
            let m = self.mem_operand(loc);
            let ty = if at.ty.is_float() {
                at.ty.float_mod()
            } else {
                at.ty.int_mod(at.op)
            };
            if at.op == AOp::Exch {
                return false;
            }
            let mut i = Inst::new("REDG", &[], vec![m, use_(at.b)]);
            i.mods = split_mods(["E", at.op.name(), ty, strong]);
            i
        } else {
            let m = self.mem_operand(loc);
            let (mn, ty) = if at.ty.is_float() {
                ("ATOM", at.ty.float_mod())
            } else {
                ("ATOMG", at.ty.int_mod(at.op))
            };
            let mut i = Inst::new(
                mn,
                &[],
                vec![
                    Operand::def(Reg::phys(PReg::PT)),
                    Operand::def(d),
                    m,
                    use_(at.b),
                ],
            );
            i.mods = split_mods(["E", at.op.name(), ty, strong]);
            i
        };
        self.finish_atomic(dst, inst);
        true
    }

    /// Whether a shared-memory atomic has a native ATOMS form.
    fn atoms_native(at: &Atomic) -> bool {
        match at.ty {
            AType::U32 | AType::S32 => true,
            AType::U64 | AType::S64 => matches!(at.op, AOp::Exch | AOp::Cas),
            _ => false,
        }
    }

    fn atom_shared(&mut self, at: &Atomic, loc: &Loc, dst: Option<Dst>) -> bool {
        let Loc::Shared { reg, off } = *loc else {
            return false;
        };
        let base = match reg {
            Some(r) => r,
            None => self.to_reg(Val::Imm(0), 1),
        };
        if !Self::atoms_native(at) {
            return self.atom_cas_loop_shared(at, base, off, dst);
        }
        let d = Self::result_reg(dst.as_ref());
        let ty = at.ty.int_mod(at.op);
        let ty = if ty == "S32" && at.op == AOp::Add {
            ""
        } else {
            ty
        };
        let inst = if at.op == AOp::Cas {
            let Some(c) = at.c else { return false };
            let mut i = Inst::new(
                "ATOMS",
                &[],
                vec![
                    Operand::def(d),
                    Operand::new(OpKind::Mem {
                        prefix: MemPrefix::None,
                        terms: std::iter::once(MemTerm::Reg(base, None))
                            .chain((off != 0).then_some(MemTerm::Imm(off)))
                            .collect(),
                    }),
                    use_(at.b),
                    use_(c),
                ],
            );
            i.mods = split_mods(["CAS", ty]);
            i
        } else {
            let mut i = Inst::new(
                "ATOMS",
                &[],
                vec![
                    Operand::def(d),
                    Operand::new(OpKind::Mem {
                        prefix: MemPrefix::None,
                        terms: [
                            Some(MemTerm::Reg(base, None)),
                            Some(MemTerm::Reg(Reg::phys(PReg::URZ), None)),
                            (off != 0).then_some(MemTerm::Imm(off)),
                        ]
                        .into_iter()
                        .flatten()
                        .collect(),
                    }),
                    use_(at.b),
                ],
            );
            i.mods = split_mods([at.op.name(), ty]);
            i
        };
        self.finish_atomic(dst, inst);
        true
    }

    /// Whether a generic/cluster atomic is a single ATOM (integer 32-bit operations and
    /// 32-bit CAS) or needs the fast path and fallback.
    fn atom_single(at: &Atomic) -> bool {
        matches!(at.ty, AType::U32 | AType::S32)
    }

    fn atom_generic(&mut self, at: &Atomic, loc: &Loc, dst: Option<Dst>) -> bool {
        let (reg, off) = match *loc {
            Loc::Desc { reg, off, .. } | Loc::Pair { reg, off } => (reg, off),
            _ => return false,
        };
        let strong = at.sem.strong().unwrap_or("STRONG.GPU");
        // The encoder has float ATOMs only with a descriptor; the descriptor form reaches
        // shared-window addresses too (ptxas's `LD.E desc[UR][R.64]` of a generic shared
        // address, `10_shared_addr/ld_generic_of_shared_sym`).
        let mem = if at.ty.is_float() {
            self.mem_operand(&Loc::Desc {
                global: false,
                reg,
                off,
            })
        } else if at.op == AOp::Cas || matches!(loc, Loc::Pair { .. }) {
            Self::plain_mem(reg, off)
        } else {
            self.mem_operand(loc)
        };
        let ty = if at.ty.is_float() {
            at.ty.float_mod()
        } else {
            at.ty.int_mod(at.op)
        };
        let mut mods: Vec<&'static str> = vec!["E", at.op.name(), ty, strong];
        mods.retain(|m| !m.is_empty());
        let single = Self::atom_single(at);
        if single {
            let d = Self::result_reg(dst.as_ref());
            let mut ops = vec![
                Operand::def(Reg::phys(PReg::PT)),
                Operand::def(d),
                mem,
                use_(at.b),
            ];
            if at.op == AOp::Cas {
                let Some(c) = at.c else { return false };
                ops.push(use_(c));
            }
            let mut i = Inst::new("ATOM", &[], ops);
            i.mods = split_mods(mods.clone());
            self.finish_atomic(dst, i);
            return true;
        }
        // The fast path with its fallback: a block structure.
        let saved_guard = self.guard.take();
        let dst = dst.map(|d| self.undo_prior(d));
        let (test_own, test_peer) = Self::fallback_windows(at);
        // The blocks, in layout order: [body], [s_chk, s_loop], [d_chk, d_loop], other, done.
        let body = saved_guard.map(|_| self.new_block());
        let own = test_own.then(|| (self.new_block(), self.new_block()));
        let peer = test_peer.then(|| (self.new_block(), self.new_block()));
        let other = self.new_block();
        let done = self.new_block();
        let mut made: Vec<BlockId> = body.into_iter().collect();
        made.extend(own.iter().chain(peer.iter()).flat_map(|&(c, l)| [c, l]));
        made.extend([other, done]);
        let mut into_done: Vec<(BlockId, VReg)> = Vec::new();
        if let (Some((p, neg)), Some(body)) = (saved_guard, body) {
            // Under a guard, skip the whole sequence where it is false.
            self.branch_to(done, Some((p, !neg)));
            self.fallthrough_to(body);
            self.switch_to(body, false);
        }
        let words = at.ty.words();
        let fast = self.new_vreg(RegClass::Gpr, words);
        let ok = self.pred();
        let mut ops = vec![
            Operand::def(ok),
            Operand::def(Reg::whole(fast, words)),
            mem,
            use_(at.b),
        ];
        if at.op == AOp::Cas {
            match at.c {
                Some(c) => ops.push(use_(c)),
                None => {
                    self.guard = saved_guard;
                    return false;
                }
            }
        }
        let mut i = Inst::new("ATOM", &[], ops);
        i.mods = split_mods(mods.clone());
        self.emit(i);
        self.branch_to(done, Some((ok, false)));
        into_done.push((self.cur, fast));
        // The tests go in order, each falling back to the next: the own CTA's shared memory,
        // a peer CTA's, then anything else.
        let after_own = peer.map_or(other, |(chk, _)| chk);
        if let Some((chk, lp)) = own {
            // [s_chk] Is the address in the own CTA's shared memory?
            self.fallthrough_to(chk);
            self.switch_to(chk, false);
            let ps = self.qspc("S", reg, off);
            self.branch_to(after_own, Some((ps, true)));
            self.fallthrough_to(lp);
            // [s_loop] LDS/ATOMS.CAST.SPIN.
            self.switch_to(lp, false);
            let vs = self.cas_loop(at, CasMem::Shared(word_of(reg, 0), off));
            self.fallthrough_to(done);
            into_done.push((self.cur, vs));
        } else {
            self.fallthrough_to(after_own);
        }
        if let Some((chk, lp)) = peer {
            // [d_chk] A peer CTA's shared memory?
            self.switch_to(chk, false);
            let pd = self.qspc("D", reg, off);
            self.branch_to(other, Some((pd, true)));
            self.fallthrough_to(lp);
            // [d_loop] LD.E/ATOM.E.CAST.SPIN.
            self.switch_to(lp, false);
            let vd = self.cas_loop(at, CasMem::Generic(reg, off));
            self.fallthrough_to(done);
            into_done.push((self.cur, vd));
        }
        // [other] Anything else (local memory, private to the thread): read-modify-write.
        self.switch_to(other, false);
        let vo = self.plain_rmw(at, reg, off);
        self.fallthrough_to(done);
        into_done.push((self.cur, vo));
        // [done] The merge.
        self.finish_blocks(&made, done, dst, &into_done);
        self.guard = saved_guard;
        true
    }

    /// Which windows the fallback of a failed `ATOM.E` tests, `(own CTA's shared memory, a peer
    /// CTA's)`: those where the hardware lacks the operation, so that `ATOM.E` can fail there
    /// (ptxas, `04_dsmem_ldst/atom_add_{f32,u64}` and the generic and `.shared::cluster`
    /// probes of docs/passes/lowering.md#atomics-on-generic-addresses). A float add has
    /// neither `ATOMS` nor a DSMEM form: both windows, each with its compare-and-swap loop. A
    /// 64-bit integer `add/min/max/and/or/xor` works on a peer's shared memory but has no
    /// `ATOMS` form: only the own CTA's window. A 64-bit `exch`/`cas` works in both: no test,
    /// only the plain read-modify-write (local memory).
    fn fallback_windows(at: &Atomic) -> (bool, bool) {
        if at.ty.is_float() {
            (true, true)
        } else if matches!(at.op, AOp::Exch | AOp::Cas) {
            (false, false)
        } else {
            (true, false)
        }
    }

    /// Seals the blocks a sequence made, continues in `done` and gives `dst` the value each
    /// path into `done` computed (the guard-skip path keeps the old value).
    fn finish_blocks(
        &mut self,
        made: &[BlockId],
        done: BlockId,
        dst: Option<Dst>,
        into_done: &[(BlockId, VReg)],
    ) {
        if let Some(dst) = &dst {
            for (from, v) in into_done {
                self.ssa.write(dst.var, *from, *v);
            }
        }
        for b in made {
            if !self.ssa.is_sealed(*b) {
                self.ssa.seal(self.f, *b);
            }
        }
        self.switch_to(done, false);
    }

    /// A destination taken without its prior value (sequences that branch around themselves
    /// merge the old value through SSA instead).
    fn undo_prior(&mut self, mut d: Dst) -> Dst {
        d.prior = None;
        d
    }

    /// `QSPC.E.<kind> P, RZ, [R+off]`: whether the whole 64-bit generic address `reg + off`
    /// (a register pair) is in the own CTA's (`S`) or a peer CTA's (`D`) shared window, as
    /// ptxas tests an address in registers (`QSPC.E.S P0, RZ, [R2]`; for a warp-uniform
    /// address it writes `[RZ.U32+UR4]`, and ptxc keeps the `ATOM.E`'s register pair).
    fn qspc(&mut self, kind: &'static str, reg: Reg, off: i64) -> Reg {
        let q = self.pred();
        self.emit_unguarded(Inst::new(
            "QSPC",
            &["E", kind],
            vec![
                Operand::def(q),
                Operand::def(Reg::phys(PReg::RZ)),
                Self::plain_mem(reg, off),
            ],
        ));
        q
    }

    // ------------------------------------------------------------------------------------------
    // Blocks made by instruction selection

    /// A new block, laid out after the planned block being lowered; linked by the caller.
    pub(super) fn new_block(&mut self) -> BlockId {
        self.fresh_block()
    }

    /// Ends the current block with `[@p] BRA target` (recording the edge). A branch on a
    /// per-thread predicate is divergent: the `reconverge` pass brackets it as ptxas does
    /// (`BSSY B0 … BSYNC B0` around the compare-and-swap loops).
    pub(super) fn branch_to(&mut self, target: BlockId, guard: Option<(Reg, bool)>) {
        let mut i = Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(target))]);
        if let Some((p, neg)) = guard {
            i = i.guarded(p, neg);
            i.divergent = !self.is_uniform(p);
        }
        self.f.block_mut(self.cur).insts.push(i);
        self.add_edge(self.cur, target);
    }

    /// Makes the current block fall through to `next` (recording the edge).
    pub(super) fn fallthrough_to(&mut self, next: BlockId) {
        let cur = self.cur;
        self.f.block_mut(cur).fallthrough = Some(next);
        self.add_edge(cur, next);
    }

    // ------------------------------------------------------------------------------------------
    // Compare-and-swap loops

    /// `new = op(old, b)` for a read-modify-write emulation.
    fn rmw_value(&mut self, at: &Atomic, old: Reg) -> Reg {
        let words = at.ty.words();
        let n = self.new_vreg(RegClass::Gpr, words);
        let nw = |w: u8| {
            if words == 1 {
                Reg::whole(n, 1)
            } else {
                Reg::word(n, w)
            }
        };
        let b = at.b;
        match (at.op, at.ty) {
            (AOp::Add, AType::F32) => self.emit_unguarded(Inst::new(
                "FADD",
                &[],
                vec![Operand::def(nw(0)), use_(old), use_(b)],
            )),
            (AOp::Add, AType::F64) => self.emit_unguarded(Inst::new(
                "DADD",
                &[],
                vec![Operand::def(Reg::whole(n, 2)), use_(old), use_(b)],
            )),
            (AOp::Add, _) if words == 1 => self.emit_unguarded(Inst::new(
                "IADD3",
                &[],
                vec![Operand::def(nw(0)), use_(old), use_(b), rz()],
            )),
            (AOp::Add, _) => {
                let c = self.pred();
                self.emit_unguarded(Inst::new(
                    "IADD3",
                    &[],
                    vec![
                        Operand::def(nw(0)),
                        Operand::def(c),
                        use_(word_of(old, 0)),
                        use_(word_of(b, 0)),
                        rz(),
                    ],
                ));
                self.emit_unguarded(Inst::new(
                    "IADD3",
                    &["X"],
                    vec![
                        Operand::def(nw(1)),
                        use_(word_of(old, 1)),
                        use_(word_of(b, 1)),
                        rz(),
                        use_(c),
                        pt().inverted(),
                    ],
                ));
            }
            (AOp::And | AOp::Or | AOp::Xor, _) => {
                let lut = match at.op {
                    AOp::And => 0xc0,
                    AOp::Or => 0xfc,
                    _ => 0x3c,
                };
                for w in 0..words {
                    self.emit_unguarded(Inst::new(
                        "LOP3",
                        &["LUT"],
                        vec![
                            Operand::def(nw(w)),
                            use_(word_of(old, w)),
                            use_(word_of(b, w)),
                            rz(),
                            Operand::imm(lut),
                            pt().inverted(),
                        ],
                    ));
                }
            }
            (AOp::Exch, _) => {
                for w in 0..words {
                    self.set_word(nw(w), Val::Reg(word_of(b, w)));
                }
            }
            (AOp::Min | AOp::Max | AOp::Cas, _) => {
                // min/max: keep old where old is already on the right side of b; cas: take c
                // where old == b.
                let signed = matches!(at.ty, AType::S32 | AType::S64);
                let cmp = match at.op {
                    AOp::Min => "LT",
                    AOp::Max => "GT",
                    _ => "EQ",
                };
                let p = self.pred();
                let lo_mods: Vec<&'static str> = if words == 2 || !signed {
                    vec![cmp, "U32", "AND"]
                } else {
                    vec![cmp, "AND"]
                };
                let mut i = Inst::new(
                    "ISETP",
                    &[],
                    vec![
                        Operand::def(p),
                        Operand::def(Reg::phys(PReg::PT)),
                        use_(word_of(old, 0)),
                        use_(word_of(b, 0)),
                        pt(),
                    ],
                );
                i.mods = lo_mods;
                self.emit_unguarded(i);
                let p = if words == 2 {
                    let q = self.pred();
                    let mut m: Vec<&'static str> = vec![cmp];
                    if !signed || at.op == AOp::Cas {
                        m.push("U32");
                    }
                    m.extend(["AND", "EX"]);
                    let mut i = Inst::new(
                        "ISETP",
                        &[],
                        vec![
                            Operand::def(q),
                            Operand::def(Reg::phys(PReg::PT)),
                            use_(word_of(old, 1)),
                            use_(word_of(b, 1)),
                            pt(),
                            use_(p),
                        ],
                    );
                    i.mods = m;
                    self.emit_unguarded(i);
                    q
                } else {
                    p
                };
                let (yes, no) = match at.op {
                    AOp::Cas => (at.c.unwrap_or(b), old),
                    _ => (old, b),
                };
                for w in 0..words {
                    self.emit_unguarded(Inst::new(
                        "SEL",
                        &[],
                        vec![
                            Operand::def(nw(w)),
                            use_(word_of(yes, w)),
                            use_(word_of(no, w)),
                            use_(p),
                        ],
                    ));
                }
            }
            (AOp::Inc | AOp::Dec, _) => {
                // inc: old >= b ? 0 : old + 1; dec: (old == 0 || old > b) ? b : old - 1
                // (32-bit only reaches here through a generic fallback).
                let p = self.pred();
                let t = self.gpr();
                if at.op == AOp::Inc {
                    self.emit_unguarded(Inst::new(
                        "ISETP",
                        &["GE", "U32", "AND"],
                        vec![
                            Operand::def(p),
                            Operand::def(Reg::phys(PReg::PT)),
                            use_(word_of(old, 0)),
                            use_(word_of(b, 0)),
                            pt(),
                        ],
                    ));
                    self.emit_unguarded(Inst::new(
                        "IADD3",
                        &[],
                        vec![
                            Operand::def(t),
                            use_(word_of(old, 0)),
                            Operand::imm(1),
                            rz(),
                        ],
                    ));
                    self.emit_unguarded(Inst::new(
                        "SEL",
                        &[],
                        vec![Operand::def(nw(0)), rz(), use_(t), use_(p)],
                    ));
                } else {
                    let z = self.pred();
                    self.emit_unguarded(Inst::new(
                        "ISETP",
                        &["GT", "U32", "AND"],
                        vec![
                            Operand::def(p),
                            Operand::def(Reg::phys(PReg::PT)),
                            use_(word_of(old, 0)),
                            use_(word_of(b, 0)),
                            pt(),
                        ],
                    ));
                    self.emit_unguarded(Inst::new(
                        "ISETP",
                        &["EQ", "OR"],
                        vec![
                            Operand::def(z),
                            Operand::def(Reg::phys(PReg::PT)),
                            use_(word_of(old, 0)),
                            rz(),
                            use_(p),
                        ],
                    ));
                    self.emit_unguarded(Inst::new(
                        "IADD3",
                        &[],
                        vec![
                            Operand::def(t),
                            use_(word_of(old, 0)),
                            Operand::imm(-1),
                            rz(),
                        ],
                    ));
                    self.emit_unguarded(Inst::new(
                        "SEL",
                        &[],
                        vec![Operand::def(nw(0)), use_(word_of(b, 0)), use_(t), use_(z)],
                    ));
                }
            }
        }
        Reg::whole(n, words)
    }

    /// A compare-and-swap loop in block `head` (the current block): load, compute, `CAST.SPIN`,
    /// retry until it succeeds. Returns the old value. Control continues in the current block
    /// after the loop's back branch (the caller links it onwards).
    fn cas_loop(&mut self, at: &Atomic, m: CasMem) -> VReg {
        let head = self.cur;
        let words = at.ty.words();
        let w64 = words == 2;
        let old = self.new_vreg(RegClass::Gpr, words);
        let old_r = Reg::whole(old, words);
        let size: &'static str = if w64 { "64" } else { "" };
        let st = self.new_vreg(RegClass::Gpr, words);
        let st_r = Reg::whole(st, words);
        match m {
            CasMem::Shared(lo, off) => {
                let mem = Operand::new(OpKind::Mem {
                    prefix: MemPrefix::None,
                    terms: std::iter::once(MemTerm::Reg(lo, None))
                        .chain((off != 0).then_some(MemTerm::Imm(off)))
                        .collect(),
                });
                let mut ld = Inst::new("LDS", &[], vec![Operand::def(old_r), mem.clone()]);
                if w64 {
                    ld.mods = split_mods(["64"]);
                }
                self.emit_unguarded(ld);
                let new = self.rmw_value(at, old_r);
                let mut cas = Inst::new(
                    "ATOMS",
                    &[],
                    vec![Operand::def(st_r), mem, use_(old_r), use_(new)],
                );
                cas.mods = split_mods(["CAST.SPIN", size]);
                self.emit_unguarded(cas);
            }
            CasMem::Generic(reg, off) => {
                let mem = Self::plain_mem(reg, off);
                let mut ld = Inst::new("LD", &[], vec![Operand::def(old_r), mem.clone()]);
                ld.mods = split_mods(["E", size]);
                self.emit_unguarded(ld);
                let new = self.rmw_value(at, old_r);
                let mut cas = Inst::new(
                    "ATOM",
                    &[],
                    vec![
                        Operand::def(Reg::phys(PReg::PT)),
                        Operand::def(st_r),
                        mem,
                        use_(old_r),
                        use_(new),
                    ],
                );
                cas.mods = split_mods(["E", "CAST.SPIN", size]);
                self.emit_unguarded(cas);
            }
        }
        let p = self.pred();
        self.emit_unguarded(Inst::new(
            "ISETP",
            &["EQ", "U32", "AND"],
            vec![
                Operand::def(p),
                Operand::def(Reg::phys(PReg::PT)),
                use_(word_of(st_r, 0)),
                Operand::imm(1),
                pt(),
            ],
        ));
        let p = if w64 {
            let q = self.pred();
            self.emit_unguarded(Inst::new(
                "ISETP",
                &["EQ", "U32", "AND", "EX"],
                vec![
                    Operand::def(q),
                    Operand::def(Reg::phys(PReg::PT)),
                    use_(word_of(st_r, 1)),
                    rz(),
                    pt(),
                    use_(p),
                ],
            ));
            q
        } else {
            p
        };
        self.branch_to(head, Some((p, true)));
        old
    }

    /// `old = LD.E [a]; ST.E [a], op(old, b)`: the fallback for addresses that are neither
    /// global nor shared (local memory is private to the thread).
    fn plain_rmw(&mut self, at: &Atomic, reg: Reg, off: i64) -> VReg {
        let words = at.ty.words();
        let size: &'static str = if words == 2 { "64" } else { "" };
        let old = self.new_vreg(RegClass::Gpr, words);
        let old_r = Reg::whole(old, words);
        let mut ld = Inst::new(
            "LD",
            &[],
            vec![Operand::def(old_r), Self::plain_mem(reg, off)],
        );
        ld.mods = split_mods(["E", size]);
        self.emit_unguarded(ld);
        let new = self.rmw_value(at, old_r);
        let mut st = Inst::new("ST", &[], vec![Self::plain_mem(reg, off), use_(new)]);
        st.mods = split_mods(["E", size]);
        self.emit_unguarded(st);
        old
    }

    /// A shared-memory atomic without an ATOMS form: a compare-and-swap loop
    /// (`atoms_f32`: `LDS; FADD; ATOMS.CAST.SPIN; ISETP.EQ.U32 1; @!P BRA`).
    fn atom_cas_loop_shared(&mut self, at: &Atomic, base: Reg, off: i64, dst: Option<Dst>) -> bool {
        let saved_guard = self.guard.take();
        let dst = dst.map(|d| self.undo_prior(d));
        let head = self.new_block();
        let done = self.new_block();
        if let Some((p, neg)) = saved_guard {
            self.branch_to(done, Some((p, !neg)));
        }
        self.fallthrough_to(head);
        self.switch_to(head, false);
        let v = self.cas_loop(at, CasMem::Shared(base, off));
        self.fallthrough_to(done);
        let from = self.cur;
        self.finish_blocks(&[head, done], done, dst, &[(from, v)]);
        self.guard = saved_guard;
        true
    }
}

/// The memory a compare-and-swap loop works on.
#[derive(Clone, Copy)]
enum CasMem {
    /// A shared-window address (`LDS`/`ATOMS`).
    Shared(Reg, i64),
    /// A generic 64-bit address (`LD.E`/`ATOM.E`).
    Generic(Reg, i64),
}

/// How an atomic is aggregated across the warp (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aggregate {
    /// No result is used: the leader applies the warp's combined operand.
    Reduce,
    /// `atom.add` with a used result and a warp-uniform operand: the leader adds operand ×
    /// active threads, and each thread's result is the old value plus operand × its rank.
    FetchAdd,
    /// `atom.add` with a used result and a per-thread operand: in a full warp, a `SHFL.UP`
    /// prefix sum, one atomic by lane 31 and each thread's exclusive prefix added to the old
    /// value; in a partial warp, one atomic per thread.
    FetchAddScan,
}

impl Cx<'_> {
    /// Whether (and how) ptxas aggregates this atomic across the warp.
    fn aggregation(
        &self,
        op: AOp,
        ty: AType,
        unused: bool,
        loc: &Loc,
        vb: Val,
    ) -> Option<Aggregate> {
        if self.guard.is_some() || !matches!(ty, AType::U32 | AType::S32) {
            return None;
        }
        let uniform_addr = match loc {
            Loc::Desc { reg, .. } => self.is_uniform_every_def(*reg),
            Loc::Shared { reg, .. } => reg.is_none_or(|r| self.is_uniform_every_def(r)),
            _ => false,
        };
        if !uniform_addr {
            return None;
        }
        use AOp::*;
        if unused && matches!(op, Add | Min | Max | And | Or | Xor) {
            return Some(Aggregate::Reduce);
        }
        match op {
            Add if self.same_in_warp(vb) => Some(Aggregate::FetchAdd),
            Add => Some(Aggregate::FetchAddScan),
            _ => None,
        }
    }

    /// Whether every thread of the warp has the same `v`: an immediate, a warp-uniform value,
    /// or a load from a warp-uniform address in the current block — every thread that reaches
    /// the atomic executed that load in the same instruction (ptxas takes such a value as
    /// uniform: zluda `atom_add`, `atom_add_u32_ldval` in the probe).
    fn same_in_warp(&self, v: Val) -> bool {
        match v {
            Val::Imm(_) | Val::CBank(_) => true,
            Val::Reg(r) => self.is_uniform_every_def(r) || self.uniform_load_here(r),
            Val::F32(_) | Val::F64(_) => false,
        }
    }

    fn uniform_load_here(&self, r: Reg) -> bool {
        let Reg::Virt { vreg, .. } = r else {
            return false;
        };
        let Some(def) = self.def_of.inst(vreg) else {
            return false;
        };
        if def.guard.is_some() || !matches!(def.mnemonic, "LD" | "LDG" | "LDS") {
            return false;
        }
        let here = self
            .f
            .block(self.cur)
            .insts
            .iter()
            .any(|i| i.mnemonic == def.mnemonic && i.defs().any(|d| d.vreg() == Some(vreg)));
        here && def.ops.iter().all(|o| match &o.kind {
            OpKind::Mem { terms, .. } => terms.iter().all(|t| match t {
                MemTerm::Reg(r, _) => self.is_uniform_every_def(*r),
                _ => true,
            }),
            OpKind::Reg(rr) if !rr.def => self.is_uniform_every_def(rr.reg),
            _ => true,
        })
    }

    /// `mn d, srcs` into a fresh register of `class`.
    fn agg_mk(
        &mut self,
        class: RegClass,
        mn: &'static str,
        mods: &[&'static str],
        srcs: Vec<Operand>,
    ) -> Reg {
        let d = Reg::whole(self.new_vreg(class, 1), 1);
        let mut ops = vec![Operand::def(d)];
        ops.extend(srcs);
        self.emit_unguarded(Inst::new(mn, mods, ops));
        d
    }

    /// `S2R d, SR_n`.
    fn agg_s2r(&mut self, n: u8) -> Reg {
        self.agg_mk(
            RegClass::Gpr,
            "S2R",
            &[],
            vec![Operand::new(OpKind::SReg(n))],
        )
    }

    /// The operand times the number of active threads (`mask`), as ptxas computes it: `POPC`
    /// for 1, `POPC` + `IMAD` for another immediate, `UPOPC` + `IMAD` for a register
    /// (`red_add_u32_imm`, `red_add_u32_imm3`, `red_add_u32_uni` in the probe).
    fn agg_times_count(&mut self, mask: Reg, vb: Val, v: Reg) -> Reg {
        match vb {
            Val::Imm(k) => {
                let n = self.agg_mk(RegClass::Gpr, "POPC", &[], vec![use_(mask)]);
                if k & 0xffff_ffff == 1 {
                    return n;
                }
                self.agg_mk(
                    RegClass::Gpr,
                    "IMAD",
                    &[],
                    vec![use_(n), Operand::imm(k & 0xffff_ffff), rz()],
                )
            }
            _ => {
                let n = self.agg_mk(RegClass::Ugpr, "UPOPC", &[], vec![use_(mask)]);
                self.agg_mk(RegClass::Gpr, "IMAD", &[], vec![use_(v), use_(n), rz()])
            }
        }
    }

    /// A warp-aggregated atomic (module documentation; `tests/sass-probes/warp_aggregation.ptx`).
    fn atom_aggregated(
        &mut self,
        how: Aggregate,
        at: &Atomic,
        loc: &Loc,
        vb: Val,
        dst: Option<Dst>,
    ) -> bool {
        // The address of a shared atomic in a register before anything is guarded.
        let loc = match *loc {
            Loc::Shared { reg: None, off } => Loc::Shared {
                reg: Some(self.to_reg(Val::Imm(0), 1)),
                off,
            },
            ref l => l.clone(),
        };
        if how == Aggregate::FetchAddScan {
            return match dst {
                Some(dst) => self.atom_add_scan(at, &loc, dst),
                None => false,
            };
        }
        let mask = Reg::whole(self.new_vreg(RegClass::Ugpr, 1), 1);
        self.emit_unguarded(
            Inst::new(
                "VOTEU",
                &["ANY"],
                vec![Operand::def(mask), Operand::def(Reg::phys(PReg::UPT)), pt()],
            )
            .warp_wide(),
        );
        let lane = self.agg_s2r(super::sr::LANEID);
        let cmp = ["EQ", "U32", "AND"];
        let ptd = || Operand::def(Reg::phys(PReg::PT));
        match how {
            Aggregate::Reduce => {
                let leader = self.agg_mk(RegClass::Ugpr, "UFLO", &["U32"], vec![use_(mask)]);
                let operand = if at.op == AOp::Add && self.same_in_warp(vb) {
                    self.agg_times_count(mask, vb, at.b)
                } else {
                    // `red_*_tid` in the probe: REDUX.SUM/MIN/MAX (S32 for signed sum, min,
                    // max), plain REDUX for AND, REDUX.OR, REDUX.XOR.
                    let mut mods: Vec<&'static str> = match at.op {
                        AOp::Add => vec!["SUM"],
                        AOp::Min => vec!["MIN"],
                        AOp::Max => vec!["MAX"],
                        AOp::Or => vec!["OR"],
                        AOp::Xor => vec!["XOR"],
                        _ => vec![],
                    };
                    if at.ty == AType::S32 && matches!(at.op, AOp::Add | AOp::Min | AOp::Max) {
                        mods.push("S32");
                    }
                    let u = Reg::whole(self.new_vreg(RegClass::Ugpr, 1), 1);
                    let mut r = Inst::new("REDUX", &[], vec![Operand::def(u), use_(at.b)]);
                    r.mods = mods;
                    self.emit_unguarded(r.warp_wide());
                    self.agg_mk(RegClass::Gpr, "MOV", &[], vec![use_(u)])
                };
                let p = Reg::whole(self.new_vreg(RegClass::Pred, 1), 1);
                self.emit_unguarded(Inst::new(
                    "ISETP",
                    &cmp,
                    vec![Operand::def(p), ptd(), use_(lane), use_(leader), pt()],
                ));
                let one = Atomic {
                    b: operand,
                    c: None,
                    ..*at
                };
                self.guard = Some((p, false));
                let ok = self.atom_one(&one, &loc, None);
                self.guard = None;
                ok
            }
            Aggregate::FetchAddScan => false,
            Aggregate::FetchAdd => {
                let Some(dst) = dst else { return false };
                let leader = self.agg_mk(RegClass::Gpr, "FLO", &["U32"], vec![use_(mask)]);
                let total = self.agg_times_count(mask, vb, at.b);
                let p = Reg::whole(self.new_vreg(RegClass::Pred, 1), 1);
                self.emit_unguarded(Inst::new(
                    "ISETP",
                    &cmp,
                    vec![Operand::def(p), ptd(), use_(leader), use_(lane), pt()],
                ));
                let var = self.ssa.new_var(crate::lower::ssa::VarInfo {
                    class: RegClass::Gpr,
                    words: 1,
                    name: "aggregate.old".into(),
                });
                let old = Dst {
                    var,
                    vreg: self.new_vreg(RegClass::Gpr, 1),
                    words: 1,
                    prior: None,
                };
                let old_reg = old.reg();
                let one = Atomic {
                    b: total,
                    c: None,
                    ..*at
                };
                self.guard = Some((p, false));
                let ok = self.atom_one(&one, &loc, Some(old));
                self.guard = None;
                if !ok {
                    return false;
                }
                let lt = self.agg_s2r(super::sr::LTMASK);
                let below = self.agg_mk(
                    RegClass::Gpr,
                    "LOP3",
                    &["LUT"],
                    vec![
                        use_(lt),
                        use_(mask),
                        rz(),
                        Operand::imm(0xc0),
                        super::arith::npt(),
                    ],
                );
                let rank = self.agg_mk(RegClass::Gpr, "POPC", &[], vec![use_(below)]);
                let base = self.gpr();
                self.emit_unguarded(
                    Inst::new(
                        "SHFL",
                        &["IDX"],
                        vec![
                            ptd(),
                            Operand::def(base),
                            use_(old_reg),
                            use_(leader),
                            Operand::imm(0x1f),
                        ],
                    )
                    .warp_wide(),
                );
                // `IMAD.IADD d, base, 0x1, rank` for 1, `IMAD d, rank, v, base` otherwise
                // (`atom_add_u32_imm`, `atom_add_u32_imm3`, `atom_add_u32_uni`).
                let ops = match vb {
                    Val::Imm(k) if k & 0xffff_ffff == 1 => {
                        vec![use_(base), Operand::imm(1), use_(rank)]
                    }
                    Val::Imm(k) => vec![use_(rank), Operand::imm(k & 0xffff_ffff), use_(base)],
                    _ => vec![use_(rank), use_(at.b), use_(base)],
                };
                let mut all = vec![Operand::def(dst.reg())];
                all.extend(ops);
                self.emit_def(&dst, Inst::new("IMAD", &[], all));
                self.commit(dst);
                true
            }
        }
    }

    /// A destination for a value only this sequence uses (the old value an atomic returns).
    fn agg_temp_dst(&mut self, name: &str) -> Dst {
        let var = self.ssa.new_var(crate::lower::ssa::VarInfo {
            class: RegClass::Gpr,
            words: 1,
            name: name.into(),
        });
        Dst {
            var,
            vreg: self.new_vreg(RegClass::Gpr, 1),
            words: 1,
            prior: None,
        }
    }

    /// `SHFL.<mode> p, d, x, lane, c` (a warp-wide instruction of the sequence): `d` and the
    /// predicate that says the source lane was in range (`PT` for `IDX`, as ptxas writes it).
    fn agg_shfl(&mut self, mode: &'static str, x: Reg, lane: Operand, c: Operand) -> (Reg, Reg) {
        let d = self.gpr();
        let p = if mode == "IDX" {
            Reg::phys(PReg::PT)
        } else {
            self.pred()
        };
        self.emit_unguarded(
            Inst::new(
                "SHFL",
                &[mode],
                vec![Operand::def(p), Operand::def(d), use_(x), lane, c],
            )
            .warp_wide(),
        );
        (d, p)
    }

    /// ptxas's `atom.add` with a per-thread operand and a used result (`atom_add_u32_tid` in
    /// tests/sass-probes/warp_aggregation.ptx):
    ///
    /// ```text
    ///       VOTE.ANY R0, PT, PT ; ISETP.EQ.U32.AND P0, PT, R0, -0x1, PT
    ///  @!P0 ATOMG old, [a], v ; @!P0 BRA join           ; a partial warp: one atomic each
    ///       SHFL.UP P0, t, x, 0x1, RZ ; @P0 x += t       ; … 0x2, 0x4, 0x8, 0x10: inclusive sums
    ///       ISETP.EQ.U32.AND P1, PT, laneid, 0x1f, PT ; @P1 ATOMG old, [a], x
    ///       SHFL.UP P0, e, x, 0x1, RZ ; SHFL.IDX PT, d, old, 0x1f, 0x1f ; @P0 d += e
    /// join:
    /// ```
    ///
    /// The branch is on a warp-uniform predicate (all active threads see the same mask), so it
    /// needs no reconvergence; ptxas lists the VOTE and the SHFLs as warp-wide instructions.
    fn atom_add_scan(&mut self, at: &Atomic, loc: &Loc, dst: Dst) -> bool {
        let dst = self.undo_prior(dst);
        let active = self.gpr();
        self.emit_unguarded(
            Inst::new(
                "VOTE",
                &["ANY"],
                vec![
                    Operand::def(active),
                    Operand::def(Reg::phys(PReg::PT)),
                    pt(),
                ],
            )
            .warp_wide(),
        );
        let full = self.pred();
        self.emit_unguarded(Inst::new(
            "ISETP",
            &["EQ", "U32", "AND"],
            vec![
                Operand::def(full),
                Operand::def(Reg::phys(PReg::PT)),
                use_(active),
                Operand::imm(0xffff_ffff),
                pt(),
            ],
        ));
        // [cur] `@full BRA scan`, [each] one atomic per thread, `BRA join`, [scan], [join]: no
        // edge is critical, so the merge needs no block of copies. (ptxas guards the per-thread
        // atomic and its branch to `join` with `!full` instead: one instruction less.)
        let each_block = self.new_block();
        let scan = self.new_block();
        let join = self.new_block();
        self.branch_to(scan, Some((full, false)));
        if let Some(b) = self.f.block_mut(self.cur).insts.last_mut() {
            b.divergent = false;
        }
        self.fallthrough_to(each_block);
        self.switch_to(each_block, false);
        self.seal(each_block);
        let each = self.agg_temp_dst("aggregate.each");
        let each_v = each.vreg;
        if !self.atom_one(at, loc, Some(each)) {
            return false;
        }
        self.branch_to(join, None);
        let partial = self.cur;
        self.switch_to(scan, false);
        self.seal(scan);
        let mut x = at.b;
        for step in [1, 2, 4, 8, 16] {
            let (t, inr) = self.agg_shfl("UP", x, Operand::imm(step), rz());
            x = self.a_mk_if(inr, false, x, "IADD3", &[], vec![use_(x), use_(t), rz()]);
        }
        let lane = self.agg_s2r(super::sr::LANEID);
        let last = self.pred();
        self.emit_unguarded(Inst::new(
            "ISETP",
            &["EQ", "U32", "AND"],
            vec![
                Operand::def(last),
                Operand::def(Reg::phys(PReg::PT)),
                use_(lane),
                Operand::imm(0x1f),
                pt(),
            ],
        ));
        let old = self.agg_temp_dst("aggregate.old");
        let old_reg = old.reg();
        let total = Atomic {
            b: x,
            c: None,
            ..*at
        };
        self.guard = Some((last, false));
        let ok = self.atom_one(&total, loc, Some(old));
        self.guard = None;
        if !ok {
            return false;
        }
        let (before, has) = self.agg_shfl("UP", x, Operand::imm(1), rz());
        let (base, _) = self.agg_shfl("IDX", old_reg, Operand::imm(0x1f), Operand::imm(0x1f));
        let r = self.a_mk_if(
            has,
            false,
            base,
            "IADD3",
            &[],
            vec![use_(base), use_(before), rz()],
        );
        self.fallthrough_to(join);
        let r = r.vreg().expect("a virtual register");
        let from_scan = self.cur;
        self.finish_blocks(
            &[each_block, scan, join],
            join,
            Some(dst),
            &[(partial, each_v), (from_scan, r)],
        );
        true
    }
}
