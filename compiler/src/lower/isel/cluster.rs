//! Hopper's cluster and asynchronous features, with the recipes ptxas really uses
//! (ptxas-facts.md §a and §e). Where a seed document and ptxas disagree, ptxas wins:
//!
//! * `mapa` is `PRMT d, rank, 0x654, addr` — byte 3 of a shared address is the CTA rank
//!   (seed 000 has an `S2R SR_SWINHI` in the 32-bit form; ptxas reads none).
//! * `getctarank` is `SHF.L.U64.HI d, a, 0x8, RZ`, i.e. `a >> 24`.
//! * `barrier.cluster.arrive/wait` are `UCGABAR_ARV`/`UCGABAR_WAIT` (+ `CCTL.IVALL`), but unless
//!   the kernel has `.explicitcluster` both sit behind a run-time test of `c[0x0][0x140] == 1`;
//!   without it the arrive is a placeholder `NOP` and the wait is `BAR.SYNC 0` (§e.1).
//! * Every release at GPU/cluster/SYS scope is `MEMBAR…; ERRBAR; CGAERRBAR`, every acquire ends
//!   in `CCTL.IVALL`, `.cluster` scope is `.GPU` (§e.2–4); `fence.mbarrier_init` emits nothing.
//! * `elect.sync` is `ELECT P, UR, PT` — the member mask is not encoded (§e.11).
//! * `mbarrier.*` are `SYNCS.*` on a uniform address (§a.3.9).

use super::{Cx, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::types::Ty;
use crate::lower::Sym;
use crate::mir::{Inst, MbarrierRecord, MemPrefix, MemTerm, OpKind, Operand, PReg, Reg, RegClass};

/// `c[0x0][0x140]`: 1 when the kernel was launched as an explicit cluster (§c.1).
const EXPLICIT_CLUSTER_FLAG: i64 = 0x140;

impl Cx<'_> {
    /// The cluster/async family.
    pub(super) fn lower_cluster(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        Some(match op.opcode {
            "mapa" => self.mapa(op),
            "getctarank" => self.getctarank(op),
            "barrier.cluster.arrive" => self.cluster_arrive(op),
            "barrier.cluster.wait" => self.cluster_wait(op),
            "fence" | "membar" => self.fence(op),
            "elect" => self.elect(op),
            "mbarrier.init" => self.mbarrier_init(op),
            "mbarrier.arrive"
            | "mbarrier.arrive_drop"
            | "mbarrier.expect_tx"
            | "mbarrier.complete_tx" => self.mbarrier_arrive(op),
            "mbarrier.test_wait" | "mbarrier.try_wait" => self.mbarrier_wait(op),
            "mbarrier.inval" => self.mbarrier_inval(op),
            "cp.async.bulk" => self.bulk_copy(op),
            "cp.async.bulk.tensor" => self.tensor_copy(op),
            "cp.async.bulk.commit_group" => {
                self.under_guard(|cx| cx.emit(Inst::new("UTMACMDFLUSH", &[], vec![])));
                true
            }
            "cp.async.bulk.wait_group" => self.bulk_wait(op),
            "multimem.ld_reduce" => self.multimem_ld_reduce(op),
            "multimem.red" => self.multimem_red(op),
            "multimem.st" => self.multimem_st(op),
            "mbarrier.pending_count" => self.mbarrier_pending_count(op),
            "griddepcontrol" => false,
            o if o.starts_with("cp.")
                || o.starts_with("multimem.")
                || o.starts_with("tensormap.")
                || o.starts_with("wgmma.")
                || matches!(
                    o,
                    "stmatrix" | "ldmatrix" | "movmatrix" | "mma" | "red.async" | "st.async"
                ) =>
            {
                false
            }
            _ => return None,
        })
    }

    fn pt() -> Operand {
        Operand::use_(Reg::phys(PReg::PT))
    }

    fn rz() -> Operand {
        Operand::use_(Reg::phys(PReg::RZ))
    }

    /// `MEMBAR.<sem>.<scope>`, then `ERRBAR; CGAERRBAR` for scopes beyond the CTA.
    fn membar(&mut self, sem: &'static str, scope: &'static str) {
        self.emit(Inst::new("MEMBAR", &[sem, scope], vec![]));
        if scope != "CTA" {
            self.emit(Inst::new("ERRBAR", &[], vec![]));
            self.emit(Inst::new("CGAERRBAR", &[], vec![]));
        }
    }

    fn cctl_ivall(&mut self) {
        self.emit(Inst::new("CCTL", &["IVALL"], vec![]));
    }

    /// The SASS scope of a PTX scope modifier (`.cluster` is `.GPU`: SASS has no cluster scope).
    fn sass_scope(op: &PtxOp<'_>) -> Option<&'static str> {
        if op.has(".cta") {
            Some("CTA")
        } else if op.has(".cluster") || op.has(".gpu") || op.has(".gl") {
            Some("GPU")
        } else if op.has(".sys") {
            Some("SYS")
        } else {
            None
        }
    }

    fn fence(&mut self, op: &PtxOp<'_>) -> bool {
        if op.has(".mbarrier_init") {
            // ptxas emits nothing for fence.mbarrier_init.release.cluster (§a.3.5).
            return true;
        }
        if op.has(".proxy") {
            if op.has(".async") {
                if op.has(".global") {
                    self.emit(Inst::new("FENCE", &["VIEW", "ASYNC", "G"], vec![]));
                } else {
                    let scope = if op.has(".shared::cta") { "CTA" } else { "GPU" };
                    self.emit(Inst::new("MEMBAR", &["ALL", scope], vec![]));
                    self.emit(Inst::new("FENCE", &["VIEW", "ASYNC", "S"], vec![]));
                }
                return true;
            }
            if op.flags.iter().any(|f| f.starts_with(".tensormap::")) && op.has(".release") {
                self.membar("ALL", "GPU");
                return true;
            }
            return false;
        }
        let scope = match (op.opcode, Self::sass_scope(op)) {
            (_, Some(s)) => s,
            ("membar", None) => return false,
            ("fence", None) => "GPU",
            _ => return false,
        };
        let sc = op.has(".sc") || op.opcode == "membar";
        match () {
            // fence.acquire.* is only the invalidation; fence.release.* only the barrier.
            _ if op.has(".acquire") => {
                if scope != "CTA" {
                    self.cctl_ivall();
                }
            }
            _ if op.has(".release") => {
                self.membar("ALL", scope);
            }
            _ => {
                self.membar(if sc { "SC" } else { "ALL" }, scope);
                if scope != "CTA" {
                    self.cctl_ivall();
                }
            }
        }
        true
    }

    /// The predicate "this launch is an explicit cluster" (`c[0x0][0x140] == 1`), computed once
    /// in the entry block.
    fn explicit_cluster_pred(&mut self) -> Reg {
        if let Some(p) = self.cluster_flag {
            return Reg::whole(p, 1);
        }
        let flag = self.new_vreg(RegClass::Gpr, 1);
        let p = self.new_vreg(RegClass::Pred, 1);
        self.entry_value(Inst::new(
            "LDC",
            &[],
            vec![
                Operand::def(Reg::whole(flag, 1)),
                Operand::new(OpKind::CBank {
                    bank: 0,
                    base: None,
                    offset: EXPLICIT_CLUSTER_FLAG,
                }),
            ],
        ));
        self.entry_value(Inst::new(
            "ISETP",
            &["EQ", "U32", "AND"],
            vec![
                Operand::def(Reg::whole(p, 1)),
                Operand::def(Reg::phys(PReg::PT)),
                Operand::use_(Reg::whole(flag, 1)),
                Operand::imm(1),
                Self::pt(),
            ],
        ));
        self.cluster_flag = Some(p);
        Reg::whole(p, 1)
    }

    /// Runs `then` where the PTX guard holds, as a branch around it (`@!P BRA join; then;
    /// join:`), as ptxas does for instructions whose SASS is uniform-only or a loop (`@P0 BRA`
    /// around `UTMACMDFLUSH`, `DEPBAR.LE SB0` and the ELECT loop of a TMA copy in
    /// pyptx/matmul_tma_v35_sm90a and `tests/sass-probes/ptx/tensormap.ptx`). Without a guard,
    /// `then` runs in the current block.
    pub(super) fn under_guard(&mut self, then: impl FnOnce(&mut Self)) {
        let Some((p, neg)) = self.guard.take() else {
            then(self);
            return;
        };
        let head = self.cur;
        let t = self.fresh_block();
        self.f.block_mut(head).fallthrough = Some(t);
        self.add_edge(head, t);
        self.switch_to(t, true);
        then(self);
        // The join is made last so that it is laid out after the blocks `then` made; the
        // branch to it ends `head`, which `then` no longer writes to.
        let last = self.cur;
        let join = self.fresh_block();
        self.f
            .block_mut(head)
            .insts
            .push(Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(join))]).guarded(p, !neg));
        self.add_edge(head, join);
        self.f.block_mut(last).fallthrough = Some(join);
        self.add_edge(last, join);
        self.switch_to(join, true);
        self.guard = Some((p, neg));
    }

    /// `if (explicit cluster) { then } [else { other }]`, as ptxas lays it out.
    fn if_explicit_cluster<T: FnOnce(&mut Self), E: FnOnce(&mut Self)>(
        &mut self,
        then: T,
        other: Option<E>,
    ) {
        let p = self.explicit_cluster_pred();
        let head = self.cur;
        // Blocks are laid out in the order they are made: then, else, join.
        let t = self.fresh_block();
        let e = other.as_ref().map(|_| self.fresh_block());
        let join = self.fresh_block();
        match other {
            None => {
                // @!P BRA join; then; join:
                self.emit_unguarded(
                    Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(join))]).guarded(p, true),
                );
                self.f.block_mut(head).fallthrough = Some(t);
                self.add_edge(head, t);
                self.add_edge(head, join);
                self.switch_to(t, true);
                then(self);
                let last = self.cur;
                self.f.block_mut(last).fallthrough = Some(join);
                self.add_edge(last, join);
                self.switch_to(join, true);
            }
            Some(other) => {
                // @!P BRA else; then; BRA join; else: other; join:
                let e = e.expect("made above");
                self.emit_unguarded(
                    Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(e))]).guarded(p, true),
                );
                self.f.block_mut(head).fallthrough = Some(t);
                self.add_edge(head, t);
                self.add_edge(head, e);
                self.switch_to(t, true);
                then(self);
                let last = self.cur;
                self.emit_unguarded(Inst::new(
                    "BRA",
                    &[],
                    vec![Operand::new(OpKind::Block(join))],
                ));
                self.add_edge(last, join);
                self.switch_to(e, true);
                other(self);
                let last = self.cur;
                self.f.block_mut(last).fallthrough = Some(join);
                self.add_edge(last, join);
                self.switch_to(join, true);
            }
        }
    }

    fn cluster_arrive(&mut self, op: &PtxOp<'_>) -> bool {
        if self.guard.is_some() {
            return false;
        }
        // A plain arrive has release semantics (§a.1 #23).
        let release = !op.has(".relaxed");
        let arrive = move |cx: &mut Self| {
            if release {
                cx.membar("ALL", "GPU");
            }
            cx.emit(Inst::new("UCGABAR_ARV", &[], vec![]));
        };
        if self.explicit_cluster {
            arrive(self);
        } else {
            // Not launched as a cluster: a `NOP` the driver may patch, listed in
            // EIATTR_COOP_GROUP_INSTR_OFFSETS with the full mask (as for `bar.warp.sync -1`;
            // probes 06_barrier_cluster/arrive*__none: `@!P0 BRA nop; MEMBAR…; UCGABAR_ARV;
            // BRA join; nop: NOP`, COOP_GROUP 0xd0 / 0xffffffff; the wait has none).
            let placeholder = |cx: &mut Self| cx.emit(Inst::new("NOP", &[], vec![]));
            self.if_explicit_cluster(arrive, Some(placeholder));
        }
        true
    }

    fn cluster_wait(&mut self, op: &PtxOp<'_>) -> bool {
        let _ = op;
        if self.guard.is_some() {
            return false;
        }
        let wait = |cx: &mut Self| {
            cx.emit(Inst::new("UCGABAR_WAIT", &[], vec![]));
            cx.cctl_ivall();
        };
        if self.explicit_cluster {
            wait(self);
        } else {
            // Not launched as a cluster: the CTA is its own cluster, and the wait is `bar.sync 0`.
            let fallback = |cx: &mut Self| {
                cx.emit(Inst::new(
                    "BAR",
                    &["SYNC", "DEFER_BLOCKING"],
                    vec![Operand::imm(0)],
                ));
            };
            self.if_explicit_cluster(wait, Some(fallback));
        }
        true
    }

    fn elect(&mut self, op: &PtxOp<'_>) -> bool {
        let [d, _mask] = op.operands() else {
            return false;
        };
        let ast::Operand::Pair(pair, _) = d else {
            return false;
        };
        let (value, pred) = &**pair;
        let p = self.new_vreg(RegClass::Pred, 1);
        let lane = self.new_vreg(RegClass::Ugpr, 1);
        let keep_lane = value.is_some();
        self.emit(Inst::new(
            "ELECT",
            &[],
            vec![
                Operand::def(Reg::whole(p, 1)),
                Operand::def(if keep_lane {
                    Reg::whole(lane, 1)
                } else {
                    Reg::phys(PReg::URZ)
                }),
                Self::pt(),
            ],
        ));
        if let Some(v) = value {
            let Some(dst) = self.dst(&ast::Operand::Expr(v.clone())) else {
                return false;
            };
            self.emit_def(
                &dst,
                Inst::new(
                    "MOV",
                    &[],
                    vec![Operand::def(dst.reg()), Operand::use_(Reg::whole(lane, 1))],
                ),
            );
            self.commit(dst);
        }
        let Some(pdst) = self.dst(&ast::Operand::Expr(pred.clone())) else {
            return false;
        };
        if pdst.prior.is_some() {
            return false;
        }
        self.assign(pdst, p);
        true
    }

    /// `mapa[.shared::cluster].u32/u64 d, a, rank`: the address `a` with byte 3 replaced by the
    /// rank (`PRMT d, rank, 0x654, a`).
    fn mapa(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let [d, a, rank] = op.operands() else {
            return false;
        };
        let u32t = Ty::parse("u32").expect("u32");
        let (Some(va), Some(vr)) = (self.val(a, ty), self.val(rank, u32t)) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let rr = self.to_reg(vr, 1);
        let lo = self.to_reg(self.word(va, 0), 1);
        let out_lo = if dst.words == 2 {
            dst.word(0)
        } else {
            dst.reg()
        };
        self.emit_def(
            &dst,
            Inst::new(
                "PRMT",
                &[],
                vec![
                    Operand::def(out_lo),
                    Operand::use_(rr),
                    Operand::imm(0x654),
                    Operand::use_(lo),
                ],
            ),
        );
        if dst.words == 2 {
            // A generic address keeps its aperture (high word); a .shared::cluster u64 has 0.
            let hi = if op.has(".shared::cluster") {
                Val::Imm(0)
            } else {
                self.word(va, 1)
            };
            let src = self.operand(hi);
            self.emit_def(
                &dst,
                Inst::new("MOV", &[], vec![Operand::def(dst.word(1)), src]),
            );
        }
        self.commit(dst);
        true
    }

    /// `getctarank d, a`: the rank in byte 3 of the (low word of the) address.
    fn getctarank(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let [d, a] = op.operands() else { return false };
        let Some(va) = self.val(a, ty) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        let lo = self.to_reg(self.word(va, 0), 1);
        self.emit_def(
            &dst,
            Inst::new(
                "SHF",
                &["L", "U64", "HI"],
                vec![
                    Operand::def(dst.reg()),
                    Operand::use_(lo),
                    Operand::imm(8),
                    Self::rz(),
                ],
            ),
        );
        self.commit(dst);
        true
    }

    /// The uniform address of an mbarrier operand `[bar]`, `[bar+8]`, `[%r]`, `[%rd]`: a shared
    /// address with the own CTA rank in byte 3, or the low word of a generic address (§a.1 #32).
    fn mbarrier_address(&mut self, a: &ast::Operand) -> Option<Reg> {
        self.shared_address(a, true)
    }

    /// The memory operand of an mbarrier operation (other than `init`): `[UR]` when the address
    /// is provably warp-uniform, else `[R+URZ(+imm)]` as ptxas does for an address that differs
    /// between threads (probe `tests/sass-probes/ptx/mbarrier_vector.ptx`:
    /// `SYNCS.PHASECHK.TRANS64.TRYWAIT PT, [R0+URZ], R3`, `SYNCS.ARRIVE.TRANS64 RZ, [R0+URZ], R3`,
    /// `SYNCS.CCTL.IV [R0+URZ]`).
    fn mbarrier_operand(&mut self, a: &ast::Operand) -> Option<Operand> {
        let before = self.diags.len();
        if let Some(u) = self.mbarrier_address(a) {
            return Some(Self::ur_mem(u));
        }
        // Only the "differs between threads" refusal falls back to the vector form.
        if self.diags.len() == before + 1
            && self.diags[before]
                .message
                .contains("differs between threads")
        {
            self.diags.pop();
            return self.vector_shared_address(a);
        }
        None
    }

    /// The parts of an mbarrier address operand `[name]` or `[name+imm]`; an error for any other
    /// shape.
    fn name_plus_offset<'a>(&mut self, a: &'a ast::Operand) -> Option<(&'a ast::Name, i64)> {
        let ast::Operand::Address(parts, span) = a else {
            return None;
        };
        let [ast::Operand::Expr(e)] = &parts[..] else {
            return None;
        };
        match e {
            ast::Expr::Name {
                name,
                component: None,
            } => Some((name, 0)),
            ast::Expr::Binary {
                op: ast::BinOp::Add,
                lhs,
                rhs,
                ..
            } => Some((
                lhs.as_name()?,
                crate::frontend::check::eval_const(rhs)? as i64,
            )),
            _ => {
                self.error(*span, "ptxc cannot lower this mbarrier address yet");
                None
            }
        }
    }

    /// A shared address operand: in a uniform register when the value is warp-uniform;
    /// otherwise an error when `uniform` is required, else the vector register holding it.
    fn shared_address(&mut self, a: &ast::Operand, uniform: bool) -> Option<Reg> {
        let (name, off) = self.name_plus_offset(a)?;
        let ast::Operand::Address(_, span) = a else {
            return None;
        };
        let base = if let Some(Sym::Shared { offset }) = self.sym(&name.text) {
            self.shared_address_uniform(i64::from(offset))
        } else if let Some((var, _)) = self.lookup_reg(&name.text) {
            let r = self.read_var(var);
            let lo = match r {
                Reg::Virt { vreg, first, count } if count > 1 => Reg::Virt {
                    vreg,
                    first,
                    count: 1,
                },
                other => other,
            };
            self.assume_loop_phis = uniform;
            // A 64-bit (generic) address is rebuilt whole in a uniform pair, of which the
            // operation reads the low word (§a.1 #32): ptxas keeps the high word's `S2UR
            // SR_SWINHI` and its `UMOV` (`09_mbarrier/arrive_generic`,
            // `arrive_remote_u64addr`), and so does ptxc (`UMOV` is not on the dead-code
            // pass's list of pure instructions).
            let pair = if uniform && r.count() == 2 {
                self.uniform_pair(r)
            } else {
                None
            };
            let u = match pair {
                Some(p) => Some(super::address::word_of(p, 0)),
                None => self.uniform_of(lo),
            };
            self.assume_loop_phis = false;
            match u {
                Some(u) => u,
                None if !uniform && off == 0 => return Some(lo),
                None => {
                    self.error(*span, "ptxc cannot yet lower an mbarrier operation whose address differs between threads");
                    return None;
                }
            }
        } else {
            self.error(
                name.span,
                format!("ptxc cannot address `{}` here yet", name.text),
            );
            return None;
        };
        if off == 0 {
            return Some(base);
        }
        let d = self.new_vreg(RegClass::Ugpr, 1);
        self.emit_unguarded(Inst::new(
            "UIADD3",
            &[],
            vec![
                Operand::def(Reg::whole(d, 1)),
                Operand::use_(base),
                Operand::imm(off),
                Operand::use_(Reg::phys(PReg::URZ)),
            ],
        ));
        Some(Reg::whole(d, 1))
    }

    /// `(SR_CgaCtaId << 24) + offset` in uniform registers (`S2UR; UMOV; ULEA …, 0x18`).
    pub(super) fn shared_address_uniform(&mut self, offset: i64) -> Reg {
        let rank = self.new_vreg(RegClass::Ugpr, 1);
        let base = self.new_vreg(RegClass::Ugpr, 1);
        let addr = self.new_vreg(RegClass::Ugpr, 1);
        self.emit_unguarded(Inst::new(
            "S2UR",
            &[],
            vec![
                Operand::def(Reg::whole(rank, 1)),
                Operand::new(OpKind::SReg(super::sr::CGA_CTA_ID)),
            ],
        ));
        self.emit_unguarded(Inst::new(
            "UMOV",
            &[],
            vec![Operand::def(Reg::whole(base, 1)), Operand::imm(offset)],
        ));
        self.emit_unguarded(Inst::new(
            "ULEA",
            &[],
            vec![
                Operand::def(Reg::whole(addr, 1)),
                Operand::use_(Reg::whole(rank, 1)),
                Operand::use_(Reg::whole(base, 1)),
                Operand::imm(0x18),
            ],
        ));
        Reg::whole(addr, 1)
    }

    pub(super) fn ur_mem(addr: Reg) -> Operand {
        Operand::new(OpKind::Mem {
            prefix: MemPrefix::None,
            terms: vec![MemTerm::Reg(addr, None)],
        })
    }

    /// `mbarrier.init [bar], n`: the 64-bit state {lo: (2^20 − n) << 1, hi: (2^20 − n) << 11}
    /// written with `SYNCS.EXCH.64 URZ, [UR], UR` (§a.3.9).
    fn mbarrier_init(&mut self, op: &PtxOp<'_>) -> bool {
        let [a, n] = op.operands() else { return false };
        let u32t = Ty::parse("u32").expect("u32");
        let Some(vn) = self.val(n, u32t) else {
            return true;
        };
        let Some(addr) = self.mbarrier_address(a) else {
            return true;
        };
        let count = match vn {
            Val::Imm(k) => {
                let d = self.new_vreg(RegClass::Ugpr, 1);
                self.emit_unguarded(Inst::new(
                    "UMOV",
                    &[],
                    vec![Operand::def(Reg::whole(d, 1)), Operand::imm(k)],
                ));
                Reg::whole(d, 1)
            }
            Val::Reg(r) => match self.uniform_of(r) {
                Some(u) => u,
                None => {
                    self.error(op.ins.span, "ptxc cannot yet lower mbarrier.init with a count that differs between threads");
                    return true;
                }
            },
            _ => return false,
        };
        let t = self.new_vreg(RegClass::Ugpr, 1);
        let state = self.new_vreg(RegClass::Ugpr, 2);
        let urz = || Operand::use_(Reg::phys(PReg::URZ));
        // SYNCS.EXCH and the uniform instructions that make its state take only a uniform
        // guard: under a PTX guard, `VOTEU` and `@UP`, as ptxas does (`Cx::uniform_guard`).
        let guard = self.uniform_guard();
        let emit = |cx: &mut Self, inst: Inst| {
            cx.emit_unguarded(match guard {
                Some((p, neg)) => inst.guarded(p, neg),
                None => inst,
            })
        };
        emit(
            self,
            Inst::new(
                "UIADD3",
                &[],
                vec![
                    Operand::def(Reg::whole(t, 1)),
                    Operand::use_(count).negated(),
                    Operand::imm(0x10_0000),
                    urz(),
                ],
            ),
        );
        for (word, shift) in [(1, 0xb), (0, 0x1)] {
            emit(
                self,
                Inst::new(
                    "USHF",
                    &["L", "U32"],
                    vec![
                        Operand::def(Reg::word(state, word)),
                        Operand::use_(Reg::whole(t, 1)),
                        Operand::imm(shift),
                        urz(),
                    ],
                ),
            );
        }
        let record = Self::mbarrier_record(op);
        emit(
            self,
            Inst::new(
                "SYNCS",
                &["EXCH", "64"],
                vec![
                    Operand::def(Reg::phys(PReg::URZ)),
                    Self::ur_mem(addr),
                    Operand::use_(Reg::whole(state, 2)),
                ],
            )
            .mbarrier(record),
        );
        true
    }

    /// What ptxas records in `EIATTR_MBARRIER_INSTR_OFFSETS` for the `SYNCS` of an mbarrier
    /// operation: the entry kind follows the PTX operation, not the SASS (probes/09_mbarrier and
    /// ptxas 13.1 runs; the whole rule is at `emit::build::mbarrier_entry`).
    fn mbarrier_record(op: &PtxOp<'_>) -> Option<MbarrierRecord> {
        let parity = op.has(".parity");
        let no_complete = op.has(".noComplete");
        Some(MbarrierRecord::Kind(match op.opcode {
            "mbarrier.init" => 0,
            "mbarrier.arrive" | "mbarrier.arrive_drop" if op.has(".expect_tx") => {
                return Some(MbarrierRecord::NoEntry);
            }
            "mbarrier.arrive" if no_complete => 2,
            "mbarrier.arrive" => 1,
            "mbarrier.arrive_drop" if no_complete => 4,
            "mbarrier.arrive_drop" => 3,
            "mbarrier.test_wait" if parity => 6,
            "mbarrier.test_wait" => 5,
            // 7: `cp.async.mbarrier.arrive`, which ptxc does not lower.
            "mbarrier.inval" => 8,
            "mbarrier.try_wait" if parity => 0xa,
            "mbarrier.try_wait" => 9,
            "mbarrier.expect_tx" => 0xb,
            "mbarrier.complete_tx" => 0xc,
            // Anything else is left without a description: the cubin writer refuses it.
            _ => return None,
        }))
    }

    /// `mbarrier.arrive/arrive_drop/expect_tx/complete_tx` → `SYNCS.ARRIVE.TRANS64.*`.
    fn mbarrier_arrive(&mut self, op: &PtxOp<'_>) -> bool {
        let ops = op.operands();
        let kind = op.opcode;
        // (state destination, address, count/tx operand)
        let (dst_op, a, cnt) = match (kind, ops) {
            ("mbarrier.expect_tx" | "mbarrier.complete_tx", [a, c]) => (None, a, Some(c)),
            (_, [d, a]) => (Some(d), a, None),
            (_, [d, a, c]) => (Some(d), a, Some(c)),
            _ => return false,
        };
        if op.has(".noComplete") {
            // ptxas: `SYNCS.ARRIVE.TRANS64.TMASK…` from a register address; not modelled.
            return false;
        }
        let remote = op.has(".shared::cluster");
        let release_cluster = op.has(".release") && op.has(".cluster");
        let u32t = Ty::parse("u32").expect("u32");
        let count = match cnt {
            Some(c) => match self.val(c, u32t) {
                Some(v) => Some(self.to_reg(v, 1)),
                None => return true,
            },
            None => None,
        };
        let Some(addr) = self.mbarrier_operand(a) else {
            return true;
        };
        if release_cluster {
            // A release at cluster scope: two MEMBARs (§e.3).
            self.emit(Inst::new("MEMBAR", &["ALL", "CTA"], vec![]));
            self.membar("ALL", "GPU");
        }
        let expect = op.has(".expect_tx");
        let mut mods: Vec<&'static str> = vec!["ARRIVE", "TRANS64"];
        let sink = match dst_op {
            None => true,
            Some(ast::Operand::Sink(_)) => true,
            Some(_) => remote,
        };
        if sink && (remote || kind == "mbarrier.expect_tx" || kind == "mbarrier.complete_tx") {
            mods.push("RED");
        }
        if kind == "mbarrier.arrive_drop" {
            mods.push("OPTOUT");
        }
        match (kind, expect, count.is_some()) {
            ("mbarrier.expect_tx", _, _) => mods.push("A0TR"),
            ("mbarrier.complete_tx", _, _) => mods.push("A0TX"),
            (_, true, _) => {}
            (_, false, true) => mods.push("ART0"),
            (_, false, false) => mods.push("A1T0"),
        }
        let value = count.map_or(Self::rz(), Operand::use_);
        let dst = match dst_op {
            Some(d @ ast::Operand::Expr(_)) => self.dst(d),
            _ => None,
        };
        let out = match &dst {
            Some(d) => Operand::def(d.reg()),
            None => Operand::def(Reg::phys(PReg::RZ)),
        };
        let inst =
            Inst::new("SYNCS", &mods, vec![out, addr, value]).mbarrier(Self::mbarrier_record(op));
        match dst {
            Some(d) => {
                self.emit_def(&d, inst);
                self.commit(d);
            }
            None => self.emit(inst),
        }
        true
    }

    /// `mbarrier.test_wait/try_wait[.parity] p, [bar], state|parity` →
    /// `SYNCS.PHASECHK.TRANS64[.TRYWAIT] P, [UR], R`; a parity is shifted to bit 31 first;
    /// `.acquire` at cluster/GPU scope adds `@P CCTL.IVALL`.
    fn mbarrier_wait(&mut self, op: &PtxOp<'_>) -> bool {
        let ops = op.operands();
        let (d, a, s, hint) = match ops {
            [d, a, s] => (d, a, s, None),
            [d, a, s, h] if op.opcode == "mbarrier.try_wait" => (d, a, s, Some(h)),
            _ => return false,
        };
        let parity = op.has(".parity");
        let ty = if parity {
            Ty::parse("u32")
        } else {
            Ty::parse("b64")
        }
        .expect("type");
        let Some(vs) = self.val(s, ty) else {
            return true;
        };
        let addr = match hint {
            // A suspend-time hint: the address in a vector register (`[R+URZ+imm]`).
            Some(_) => match self.vector_shared_address(a) {
                Some(m) => m,
                None => return true,
            },
            None => match self.mbarrier_operand(a) {
                Some(m) => m,
                None => return true,
            },
        };
        let phase = if parity {
            let r = self.to_reg(vs, 1);
            let t = self.new_vreg(RegClass::Gpr, 1);
            self.emit_unguarded(Inst::new(
                "SHF",
                &["L", "U32"],
                vec![
                    Operand::def(Reg::whole(t, 1)),
                    Operand::use_(r),
                    Operand::imm(0x1f),
                    Self::rz(),
                ],
            ));
            Reg::whole(t, 1)
        } else {
            // The phase bit of a state is in its high word.
            let r = self.to_reg(vs, 2);
            match r {
                Reg::Virt { vreg, .. } => Reg::word(vreg, 1),
                other => other,
            }
        };
        let Some(dst) = self.dst(d) else { return false };
        let mut mods: Vec<&'static str> = vec!["PHASECHK", "TRANS64"];
        if op.opcode == "mbarrier.try_wait" {
            mods.push("TRYWAIT");
        }
        if let Some(h) = hint {
            if self.guard.is_some() {
                return false;
            }
            let u32t = Ty::parse("u32").expect("u32");
            let Some(vh) = self.val(h, u32t) else {
                return true;
            };
            let sleep = match vh {
                Val::Imm(k) => Operand::imm(k & 0xffff_ffff),
                other => Operand::use_(self.to_reg(other, 1)),
            };
            self.try_wait_suspend(op, dst, &mods, addr, phase, sleep);
            return true;
        }
        self.emit_def(
            &dst,
            Inst::new(
                "SYNCS",
                &mods,
                vec![Operand::def(dst.reg()), addr, Operand::use_(phase)],
            )
            .mbarrier(Self::mbarrier_record(op)),
        );
        let p = dst.reg();
        self.commit(dst);
        if op.has(".acquire") && matches!(Self::sass_scope(op), Some("GPU" | "SYS")) {
            self.emit(Inst::new("CCTL", &["IVALL"], vec![]).guarded(p, false));
        }
        true
    }

    /// `mbarrier.try_wait… p, [bar], state|parity, hint`, as ptxas 13.1 lowers it
    /// (09_mbarrier/try_wait_suspend; a register hint and `[bar+8]` probed the same way):
    ///
    /// ```text
    ///       SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R0+URZ], R5   ; the mbarrier record
    ///  @!P0 NANOSLEEP.SYNCS hint                              ; 0x3e8 or a register
    ///  @!P0 SYNCS.PHASECHK.TRANS64 P0, [R0+URZ], R5           ; no record
    /// ```
    /// The address is in a vector register even when it is warp-uniform.
    fn try_wait_suspend(
        &mut self,
        op: &PtxOp<'_>,
        dst: super::Dst,
        mods: &[&'static str],
        addr: Operand,
        phase: Reg,
        sleep: Operand,
    ) {
        let first = self.new_vreg(RegClass::Pred, 1);
        let p1 = Reg::whole(first, 1);
        self.emit_unguarded(
            Inst::new(
                "SYNCS",
                mods,
                vec![Operand::def(p1), addr.clone(), Operand::use_(phase)],
            )
            .mbarrier(Self::mbarrier_record(op)),
        );
        self.emit_unguarded(Inst::new("NANOSLEEP", &["SYNCS"], vec![sleep]).guarded(p1, true));
        let second = self.new_vreg(RegClass::Pred, 1);
        let mut check = Inst::new(
            "SYNCS",
            &["PHASECHK", "TRANS64"],
            vec![
                Operand::def(Reg::whole(second, 1)),
                addr,
                Operand::use_(phase),
            ],
        )
        .mbarrier(Some(MbarrierRecord::NoEntry))
        .guarded(p1, true);
        check.ops.push(Operand::new(OpKind::Prior(p1)));
        self.emit_unguarded(check);
        self.assign(dst, second);
    }

    /// A shared address operand in a vector register, as `[R+URZ+imm]`: a symbol's address
    /// (`S2R SR_CgaCtaId; MOV; LEA`), or the (low word of the) register.
    fn vector_shared_address(&mut self, a: &ast::Operand) -> Option<Operand> {
        let (name, off) = self.name_plus_offset(a)?;
        let base = if let Some(Sym::Shared { offset }) = self.sym(&name.text) {
            self.shared_sym_addr(offset, 0)
        } else if let Some((var, _)) = self.lookup_reg(&name.text) {
            let r = self.read_var(var);
            match r {
                Reg::Virt { vreg, first, .. } => Reg::Virt {
                    vreg,
                    first,
                    count: 1,
                },
                other => other,
            }
        } else {
            self.error(
                name.span,
                format!("ptxc cannot address `{}` here yet", name.text),
            );
            return None;
        };
        let mut terms = vec![
            MemTerm::Reg(base, None),
            MemTerm::Reg(Reg::phys(PReg::URZ), None),
        ];
        if off != 0 {
            terms.push(MemTerm::Imm(off));
        }
        Some(Operand::new(OpKind::Mem {
            prefix: MemPrefix::None,
            terms,
        }))
    }

    /// `mbarrier.pending_count.b64 d, state`: the pending arrivals, read from the state's
    /// high word as ptxas does (probe: `0x100000 - ((hi >> 11) & 0xfffff)`,
    /// `SHF.R.U32.HI; LOP3.LUT …, 0xfffff, RZ, 0x40; IADD3 d, -t, 0x100000, RZ`).
    fn mbarrier_pending_count(&mut self, op: &PtxOp<'_>) -> bool {
        let [d, s] = op.operands() else { return false };
        let Some(b64) = Ty::parse("b64") else {
            return false;
        };
        let Some(v) = self.src(s, b64, 2) else {
            return true;
        };
        let v = self.fit(v, 2);
        let state = self.reg_of(v, 2);
        let hi = super::address::word_of(state, 1);
        let shifted = self.gpr();
        self.emit(Inst::new(
            "SHF",
            &["R", "U32", "HI"],
            vec![
                Operand::def(shifted),
                Self::rz(),
                Operand::imm(0xb),
                Operand::use_(hi),
            ],
        ));
        let count = self.gpr();
        self.emit(Inst::new(
            "LOP3",
            &["LUT"],
            vec![
                Operand::def(count),
                Operand::use_(shifted),
                Operand::imm(0xfffff),
                Self::rz(),
                Operand::imm(0x40),
                Self::pt().inverted(),
            ],
        ));
        let Some(dst) = self.dst(d) else { return false };
        self.emit_def(
            &dst,
            Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(dst.reg()),
                    Operand::use_(count).negated(),
                    Operand::imm(0x100000),
                    Self::rz(),
                ],
            ),
        );
        self.commit(dst);
        true
    }

    fn mbarrier_inval(&mut self, op: &PtxOp<'_>) -> bool {
        let [a] = op.operands() else { return false };
        let Some(addr) = self.mbarrier_operand(a) else {
            return true;
        };
        self.emit(
            Inst::new("SYNCS", &["CCTL", "IV"], vec![addr]).mbarrier(Self::mbarrier_record(op)),
        );
        true
    }

    /// The SASS type modifiers of a multimem operation (12_multimem: every accepted op × type).
    fn multimem_type(ty: Ty, vector: bool, acc: bool, red: bool) -> Option<Vec<&'static str>> {
        let float = |t: &'static str, ftz: bool| -> Vec<&'static str> {
            let mut v = vec![t];
            if ftz && red {
                v.push("FTZ");
            }
            v.push("RN");
            v
        };
        Some(match (ty.name, vector, acc) {
            ("f16x2", true, true) => vec!["F16x8", "RN"],
            ("f32", true, _) => float("F32x4", true),
            ("f32", false, _) => float("F32", true),
            ("f64", false, _) => float("F64", false),
            ("f16x2", false, _) => float("F16x2", false),
            ("bf16x2", false, _) => float("BF16x2", false),
            ("u32" | "b32", false, _) => {
                if red {
                    vec![]
                } else {
                    vec!["32"]
                }
            }
            ("s32", false, _) => vec!["S32"],
            ("u64" | "b64", false, _) => vec!["64"],
            ("s64", false, _) => vec!["S64"],
            _ => return None,
        })
    }

    fn multimem_op(op: &PtxOp<'_>) -> Option<&'static str> {
        [
            (".add", "ADD"),
            (".min", "MIN"),
            (".max", "MAX"),
            (".and", "AND"),
            (".or", "OR"),
            (".xor", "XOR"),
        ]
        .into_iter()
        .find(|(p, _)| op.has(p))
        .map(|(_, s)| s)
    }

    /// The scope of a multimem reduction or store (`.sys` by default for red; §a.3.10).
    fn multimem_scope(op: &PtxOp<'_>, default: Option<&'static str>) -> Option<&'static str> {
        match Self::sass_scope(op) {
            Some("CTA") => Some("SM"),
            Some(s) => Some(s),
            None => default,
        }
    }

    /// A 64-bit global address in a uniform register pair, for `[RZ.U32+UR]`.
    fn uniform_address(&mut self, a: &ast::Operand) -> Option<Reg> {
        let ast::Operand::Address(parts, span) = a else {
            return None;
        };
        let [ast::Operand::Expr(e)] = &parts[..] else {
            return None;
        };
        let Some(name) = e.as_name() else {
            self.error(*span, "ptxc cannot lower this multimem address yet");
            return None;
        };
        let (var, _) = self.lookup_reg(&name.text)?;
        let r = self.read_var(var);
        let u = self.uniform_of(r);
        if u.is_none() {
            self.error(*span, "ptxc cannot yet lower multimem.ld_reduce from an address that differs between threads");
        }
        u
    }

    /// `multimem.ld_reduce` → `LDGMC.E.<op>.<type>.STRONG.SYS Rd, [RZ.U32+UR]` — always
    /// STRONG.SYS whatever the PTX semantics say; `.acquire` adds `CCTL.IVALL`.
    fn multimem_ld_reduce(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let [d, a] = op.operands() else { return false };
        let acc = op.has(".acc::f32");
        let vector = op.flags.iter().any(|f| f.starts_with(".v"));
        let (Some(red_op), Some(tmods)) = (
            Self::multimem_op(op),
            Self::multimem_type(ty, vector, acc, false),
        ) else {
            return false;
        };
        let Some(addr) = self.uniform_address(a) else {
            return true;
        };
        let mut mods: Vec<&'static str> = vec!["E", if acc { "F32ADD" } else { red_op }];
        mods.extend(tmods);
        mods.extend(["STRONG", "SYS"]);
        let mem = Operand::new(OpKind::Mem {
            prefix: MemPrefix::None,
            terms: vec![
                MemTerm::Reg(Reg::phys(PReg::RZ), Some("U32")),
                MemTerm::Reg(addr, None),
            ],
        });
        if vector {
            // A vector destination `{a, b, c, d}`: load into a tuple, then split it.
            let ast::Operand::Vector(items, _) = d else {
                return false;
            };
            let words = items.len() as u8;
            let t = self.new_vreg(RegClass::Gpr, words);
            self.emit(Inst::new(
                "LDGMC",
                &mods,
                vec![Operand::def(Reg::whole(t, words)), mem],
            ));
            for (w, it) in items.iter().enumerate() {
                let Some(dst) = self.dst(it) else { continue };
                self.emit_def(
                    &dst,
                    Inst::new(
                        "MOV",
                        &[],
                        vec![
                            Operand::def(dst.reg()),
                            Operand::use_(Reg::word(t, w as u8)),
                        ],
                    ),
                );
                self.commit(dst);
            }
        } else {
            let Some(dst) = self.dst(d) else { return false };
            self.emit_def(
                &dst,
                Inst::new("LDGMC", &mods, vec![Operand::def(dst.reg()), mem]),
            );
            self.commit(dst);
        }
        if op.has(".acquire") {
            self.cctl_ivall();
        }
        true
    }

    /// A global address `[%rd]`/`[%rd+off]` as `desc[UR][R.64+off]`.
    fn desc_address(&mut self, a: &ast::Operand) -> Option<Operand> {
        let ast::Operand::Address(parts, span) = a else {
            return None;
        };
        let [ast::Operand::Expr(e)] = &parts[..] else {
            return None;
        };
        let (name, off) = match e {
            ast::Expr::Name {
                name,
                component: None,
            } => (name, 0),
            ast::Expr::Binary {
                op: ast::BinOp::Add,
                lhs,
                rhs,
                ..
            } => (
                lhs.as_name()?,
                crate::frontend::check::eval_const(rhs)? as i64,
            ),
            _ => {
                self.error(*span, "ptxc cannot lower this address yet");
                return None;
            }
        };
        let (var, _) = self.lookup_reg(&name.text)?;
        let base = self.read_var(var);
        let desc = self.global_desc();
        let mut terms = vec![MemTerm::Reg(base, Some("64"))];
        if off != 0 {
            terms.push(MemTerm::Imm(off));
        }
        Some(Operand::new(OpKind::Mem {
            prefix: MemPrefix::Desc(desc),
            terms,
        }))
    }

    /// The value operand of a reduction or store: a register, or a vector `{…}` gathered into a
    /// register tuple.
    fn data_reg(&mut self, v: &ast::Operand, ty: Ty) -> Option<Reg> {
        match v {
            ast::Operand::Vector(items, _) => {
                let words = items.len() as u8 * ty.bits().div_ceil(32) as u8;
                let t = self.new_vreg(RegClass::Gpr, words);
                for (w, it) in items.iter().enumerate() {
                    let val = self.val(it, ty)?;
                    let src = self.operand(val);
                    self.emit_unguarded(Inst::new(
                        "MOV",
                        &[],
                        vec![Operand::def(Reg::word(t, w as u8)), src],
                    ));
                }
                Some(Reg::whole(t, words))
            }
            other => {
                let val = self.val(other, ty)?;
                Some(self.to_reg(val, ty.bits().div_ceil(32) as u8))
            }
        }
    }

    /// `multimem.red` → `REDG.E.<op>[.<type>].STRONG.<scope>` (SYS by default). ptxas
    /// warp-aggregates the 32-bit integer forms; ptxc issues one reduction per thread, which is
    /// the same operation.
    fn multimem_red(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let [a, v] = op.operands() else { return false };
        let vector = op.flags.iter().any(|f| f.starts_with(".v"));
        let (Some(red_op), Some(tmods)) = (
            Self::multimem_op(op),
            Self::multimem_type(ty, vector, false, true),
        ) else {
            return false;
        };
        let scope = Self::multimem_scope(op, Some("SYS")).expect("a default");
        let Some(value) = self.data_reg(v, ty) else {
            return true;
        };
        let Some(mem) = self.desc_address(a) else {
            return true;
        };
        if op.has(".release") {
            self.membar("ALL", if scope == "SM" { "CTA" } else { scope });
        }
        let mut mods: Vec<&'static str> = vec!["E", red_op];
        mods.extend(tmods);
        mods.extend(["STRONG", scope]);
        self.emit(Inst::new("REDG", &mods, vec![mem, Operand::use_(value)]));
        true
    }

    /// `multimem.st` is an ordinary `STG` (weak by default; `.relaxed`/`.release` are STRONG).
    fn multimem_st(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let [a, v] = op.operands() else { return false };
        let Some(value) = self.data_reg(v, ty) else {
            return true;
        };
        let Some(mem) = self.desc_address(a) else {
            return true;
        };
        let strong = op.has(".relaxed") || op.has(".release");
        let scope = Self::multimem_scope(op, Some("SYS")).expect("a default");
        if op.has(".release") {
            self.membar("ALL", if scope == "SM" { "CTA" } else { scope });
        }
        let mut mods: Vec<&'static str> = vec!["E"];
        match value.count() {
            2 => mods.push("64"),
            4 => mods.push("128"),
            _ => {}
        }
        if strong {
            mods.extend(["STRONG", scope]);
        }
        self.emit(Inst::new("STG", &mods, vec![mem, Operand::use_(value)]));
        true
    }
    /// `cp.async.bulk.wait_group[.read] N` → `DEPBAR.LE SB0, N`, then `CCTL.IVALL` unless only
    /// the reads of the source must be complete (16_tma_elect/bulk_s2g).
    fn bulk_wait(&mut self, op: &PtxOp<'_>) -> bool {
        let [n] = op.operands() else { return false };
        let ast::Operand::Expr(e) = n else {
            return false;
        };
        let Some(k) = crate::frontend::check::eval_const(e) else {
            return false;
        };
        let read = op.has(".read");
        self.under_guard(|cx| {
            cx.emit(Inst::new(
                "DEPBAR",
                &["LE"],
                vec![Operand::new(OpKind::Sym("SB0")), Operand::imm(k as i64)],
            ));
            if !read {
                cx.cctl_ivall();
            }
        });
        true
    }

    /// A 64-bit generic/global address operand (`[%rd]`) as a register pair.
    pub(super) fn global_operand(&mut self, a: &ast::Operand) -> Option<Reg> {
        let ast::Operand::Address(parts, span) = a else {
            return None;
        };
        let ast::Operand::Expr(e) = parts.first()? else {
            return None;
        };
        let Some(name) = e.as_name() else {
            self.error(*span, "ptxc cannot lower this address yet");
            return None;
        };
        let Some((var, _)) = self.lookup_reg(&name.text) else {
            self.error(
                name.span,
                format!("ptxc cannot address `{}` here yet", name.text),
            );
            return None;
        };
        Some(self.read_var(var))
    }

    /// Runs `issue` once per active thread, as ptxas does for TMA and bulk copies
    /// (16_tma_elect): an `ELECT` picks one waiting thread per round, its per-thread operands go
    /// to uniform registers with `R2UR`, the uniform instruction issues, and the loop repeats
    /// while any thread waits.
    ///
    /// ```text
    ///       PLOP3.LUT P0, PT, PT, PT, PT, 0x80, 0x0      ; P0: this thread still waits
    /// loop: PLOP3.LUT P1, PT, PT, PT, PT, 0x8, 0x0       ; (ptxas: at the end of the round)
    ///       @P0 ELECT P1, URZ, PT                        ; P1: the elected thread
    ///       @P1 R2UR URx, Rx …                           ; its operands
    ///       PLOP3.LUT P0, PT, P0, P1, PT, 0x20, 0x0      ; it stops waiting
    ///       <issue>
    ///   @P0 BRA.U.ANY loop
    /// ```
    /// `operands` are the values the instruction needs in uniform registers: a uniform value is
    /// computed once before the loop; the others are moved in each round.
    pub(super) fn per_thread_uniform_loop(
        &mut self,
        operands: Vec<Reg>,
        issue: impl FnOnce(&mut Self, Vec<Reg>),
    ) {
        let resolved: Vec<Result<Reg, Reg>> = operands
            .into_iter()
            .map(|r| {
                // A 64-bit value built word by word (a tensor map's address, parameter plus
                // offset: `IADD3`/`IADD3.X`) is rebuilt as a uniform pair when it can be.
                self.uniform_pair(r).or_else(|| self.uniform_of(r)).ok_or(r)
            })
            .collect();
        let pred_var = |cx: &mut Self, name: &str| {
            cx.ssa.new_var(crate::lower::ssa::VarInfo {
                class: RegClass::Pred,
                words: 1,
                name: name.into(),
            })
        };
        let wait_var = pred_var(self, "elect.wait");
        let pt = || Operand::use_(Reg::phys(PReg::PT));
        let plop = |d: Reg, a: Operand, lut: i64| {
            Inst::new(
                "PLOP3",
                &["LUT"],
                vec![
                    Operand::def(d),
                    Operand::def(Reg::phys(PReg::PT)),
                    a,
                    pt(),
                    pt(),
                    Operand::imm(lut),
                    Operand::imm(0),
                ],
            )
        };
        let w0 = self.new_vreg(RegClass::Pred, 1);
        self.emit_unguarded(plop(Reg::whole(w0, 1), pt(), 0x80));
        self.ssa.write(wait_var, self.cur, w0);
        let (head, after) = self.open_self_loop();
        let wait = self.ssa.read(self.f, wait_var, head);
        // No thread is elected before the ELECT (ptxas clears P1 at the end of each round
        // instead; clearing it at the start needs no PHI, one predicate less in the loop).
        let elected_before = self.new_vreg(RegClass::Pred, 1);
        self.emit_unguarded(plop(Reg::whole(elected_before, 1), pt(), 0x8));
        let elected = self.new_vreg(RegClass::Pred, 1);
        self.emit_unguarded(
            Inst::new(
                "ELECT",
                &[],
                vec![
                    Operand::def(Reg::whole(elected, 1)),
                    Operand::def(Reg::phys(PReg::URZ)),
                    pt(),
                    Operand::new(OpKind::Prior(Reg::whole(elected_before, 1))),
                ],
            )
            .guarded(Reg::whole(wait, 1), false),
        );
        let on_elected = Reg::whole(elected, 1);
        let mut uniform = Vec::new();
        for r in resolved {
            match r {
                Ok(u) => uniform.push(u),
                Err(v) => {
                    let u = self.r2ur_if(v, on_elected);
                    uniform.push(u);
                }
            }
        }
        // wait & !elected (ptxas: `@P1 PLOP3.LUT P0, PT, P1, PT, PT, 0x8, 0x0`; one value
        // without a prior, so `wait` dies here and the loop needs one predicate less).
        let wait2 = self.new_vreg(RegClass::Pred, 1);
        self.emit_unguarded(Inst::new(
            "PLOP3",
            &["LUT"],
            vec![
                Operand::def(Reg::whole(wait2, 1)),
                Operand::def(Reg::phys(PReg::PT)),
                Operand::use_(Reg::whole(wait, 1)),
                Operand::use_(on_elected),
                pt(),
                Operand::imm(0x20),
                Operand::imm(0),
            ],
        ));
        issue(self, uniform);
        self.ssa.write(wait_var, self.cur, wait2);
        self.emit_unguarded(
            Inst::new(
                "BRA",
                &["U", "ANY"],
                vec![Operand::new(OpKind::Block(head))],
            )
            .guarded(Reg::whole(wait2, 1), false),
        );
        let last = self.cur;
        self.f.block_mut(last).fallthrough = Some(after);
        self.seal(head);
        self.switch_to(after, true);
    }

    /// Issues a TMA copy (`issue`, given its operands in uniform registers) once per active
    /// thread that passes the PTX guard, with ptxas's recipes for a guard that holds in at most
    /// one thread (probes of `docs/passes/examples/reconverge/tma_elect.ptx`, pyptx
    /// `matmul_tma_v33`–`_v35`, `fa_ws_pingpong`):
    ///
    /// * `@p`, `p` the predicate of an `elect.sync` in the same block (exactly one thread): the
    ///   copy once, unguarded (`elect_only`).
    /// * `@p`, `p` the `and` of such a predicate with others (at most one thread): `VOTEU.ANY
    ///   UPn, p` and `@UPn` on the copy, no loop, no branch (`elect_and`; the matmul kernels'
    ///   `@%p53 cp.async.bulk.tensor`, `%p53 = tid < 32 && k > 63 && elected`).
    /// * otherwise a branch around the `ELECT` loop of [`Cx::per_thread_uniform_loop`].
    ///
    /// In the first two, an operand ptxc does not prove warp-uniform is moved with `@p R2UR`
    /// (the one thread's value, as one round of the loop moves the elected thread's; ptxas
    /// proves the matmul loop's operands uniform and needs none, `elect_and_tid_coord` after
    /// its early exit has a plain `R2UR`).
    pub(super) fn issue_per_thread(
        &mut self,
        operands: Vec<Reg>,
        issue: impl FnOnce(&mut Self, Vec<Reg>),
    ) {
        let elected = match self.guard {
            Some((p, false)) => self.elected_pred(p),
            _ => None,
        };
        if let (Some(exactly_one), Some((p, _))) = (elected, self.guard) {
            let mut uniform = Vec::with_capacity(operands.len());
            for r in operands {
                let u = match self.uniform_pair(r).or_else(|| self.uniform_of(r)) {
                    Some(u) => u,
                    // The one thread's value (`@p R2UR`), as a round of the ELECT loop moves
                    // the elected thread's.
                    None => self.r2ur_if(r, p),
                };
                uniform.push(u);
            }
            let saved = self.guard;
            self.guard = if exactly_one {
                None
            } else {
                self.uniform_guard()
            };
            issue(self, uniform);
            self.guard = saved;
            return;
        }
        self.under_guard(move |cx| cx.per_thread_uniform_loop(operands, issue));
    }

    /// Issues a copy from shared to global memory (`issue`, given its operands in uniform
    /// registers) once for the warp when every operand is warp-uniform, as ptxas does: the
    /// threads would store the same bytes to the same place, so one copy does what their 32
    /// do. Under a PTX guard the copy runs when any thread has it (`VOTEU.ANY`, or `VOTEU.ALL`
    /// of the guard for `@!p`). Probes (ptxas 13.1, `cp.async.bulk.global.shared::cta
    /// .bulk_group` and `cp.async.bulk.tensor.1d.global.shared::cta.bulk_group`):
    ///
    /// * operands uniform, no guard: one `UBLKCP.G.S` / `UTMASTG.1D`, no `ELECT`;
    /// * the same under `@p`, `p = tid == 0`: `VOTEU.ALL UP0, !p; @!UP0 UBLKCP.G.S`;
    /// * in a loop of four: four `UBLKCP.G.S`, none in a loop of its own;
    /// * a `%tid`-dependent source or destination: a loop, which ptxas builds with
    ///   `@P0 R2UR P1, UR7, R0` (one round per distinct value); ptxc keeps the `ELECT` loop of
    ///   [`Cx::issue_per_thread`] there (one round per thread: the same stores, more rounds).
    ///
    /// Copies from global to shared memory complete on an mbarrier, where each thread's copy
    /// counts; they keep the per-thread recipes.
    pub(super) fn issue_store_once(
        &mut self,
        operands: Vec<Reg>,
        issue: impl FnOnce(&mut Self, Vec<Reg>),
    ) {
        let mut uniform = Vec::with_capacity(operands.len());
        for &r in &operands {
            match self.uniform_pair(r).or_else(|| self.uniform_of(r)) {
                Some(u) => uniform.push(u),
                None => return self.issue_per_thread(operands, issue),
            }
        }
        let saved = self.guard;
        self.guard = self.uniform_guard();
        issue(self, uniform);
        self.guard = saved;
    }

    /// `@p R2UR u, r` for each word of `r`: the value of the thread that has `p` (at most one
    /// does) in a fresh uniform register.
    fn r2ur_if(&mut self, r: Reg, p: Reg) -> Reg {
        let words = r.count();
        let u = self.new_vreg(RegClass::Ugpr, words);
        for w in 0..words {
            let src = match r {
                Reg::Virt { vreg, first, .. } => Reg::word(vreg, first + w),
                other => other,
            };
            self.emit_unguarded(
                Inst::new(
                    "R2UR",
                    &[],
                    vec![Operand::def(Reg::word(u, w)), Operand::use_(src)],
                )
                .guarded(p, false),
            );
        }
        Reg::whole(u, words)
    }

    /// Whether a predicate holds in at most one thread of the warp: `Some(true)` for the
    /// predicate of an unguarded `ELECT` in the current block (exactly one active thread has
    /// it), `Some(false)` for an `and` (`PLOP3.LUT 0x80`, `ISETP….AND`) with such a predicate
    /// among its inputs, not negated; `None` when not known.
    fn elected_pred(&self, p: Reg) -> Option<bool> {
        fn walk(cx: &Cx<'_>, p: Reg, depth: u32) -> Option<bool> {
            let v = p.vreg()?;
            let def = cx.def_of.inst(v)?;
            if depth > 8
                || def.guard.is_some()
                || def.ops.iter().any(|o| matches!(o.kind, OpKind::Prior(_)))
            {
                return None;
            }
            let first_def = def.defs().next()?;
            if first_def.vreg() != Some(v) {
                return None;
            }
            match def.mnemonic {
                "ELECT" => {
                    let here = cx.f.block(cx.cur).insts.iter().any(|i| {
                        i.mnemonic == "ELECT" && i.defs().next().and_then(|d| d.vreg()) == Some(v)
                    });
                    Some(here)
                }
                "PLOP3"
                    if def
                        .ops
                        .get(5)
                        .is_some_and(|o| matches!(o.kind, OpKind::Int(0x80))) =>
                {
                    let ins = def.ops.iter().skip(2).take(3);
                    ins.filter_map(|o| match &o.kind {
                        OpKind::Reg(rr) if !rr.def && !o.not => walk(cx, rr.reg, depth + 1),
                        _ => None,
                    })
                    .next()
                    .map(|_| false)
                }
                "ISETP" | "FSETP" if def.mods.contains(&"AND") => {
                    let last = def.ops.iter().rev().find_map(|o| match &o.kind {
                        OpKind::Reg(rr) if !rr.def => Some((rr.reg, o.not)),
                        _ => None,
                    })?;
                    let is_pred = last
                        .0
                        .vreg()
                        .is_some_and(|x| cx.f.vreg(x).class == RegClass::Pred);
                    if is_pred && !last.1 {
                        walk(cx, last.0, depth + 1).map(|_| false)
                    } else {
                        None
                    }
                }
                _ => None,
            }
        }
        walk(self, p, 0)
    }

    /// Packs uniform 32-bit values into one consecutive uniform tuple (the `[UR4]` operand of
    /// UBLKCP/UTMALDG names UR4, UR5, … at once).
    pub(super) fn ur_tuple(&mut self, parts: &[Reg]) -> Reg {
        let words: u8 = parts.iter().map(|p| p.count()).sum();
        let t = self.new_vreg(RegClass::Ugpr, words);
        let mut w = 0;
        for p in parts {
            for k in 0..p.count() {
                let src = match *p {
                    Reg::Virt { vreg, first, .. } => Reg::word(vreg, first + k),
                    other => other,
                };
                self.emit_unguarded(Inst::new(
                    "UMOV",
                    &[],
                    vec![Operand::def(Reg::word(t, w)), Operand::use_(src)],
                ));
                w += 1;
            }
        }
        Reg::whole(t, words)
    }

    fn ur_mem1(r: Reg) -> Operand {
        Operand::new(OpKind::Mem {
            prefix: MemPrefix::None,
            terms: vec![MemTerm::Reg(r, None)],
        })
    }

    /// The value of `v` when it is a constant: an immediate, or a register whose only
    /// definition moved an immediate into it (`mov.u32 %r7, 1024`; ptxas propagates it).
    pub(super) fn const_of(&self, v: Val) -> Option<i64> {
        match v {
            Val::Imm(k) => Some(k),
            Val::Reg(Reg::Virt {
                vreg,
                first: 0,
                count: 1,
            }) if self.f.vreg(vreg).words == 1 => {
                let def = self.def_of.inst(vreg)?;
                match (def.mnemonic, &def.ops[..]) {
                    ("MOV", [_, k]) if def.guard.is_none() => match k.kind {
                        OpKind::Int(k) => Some(k),
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `cp.async.bulk` (non-tensor): `UBLKCP.S.G [dst|mbar], [src], bytes/16` (global → shared,
    /// completing on the mbarrier; once per active thread) or `UBLKCP.G.S [dst], [src],
    /// bytes/16` (shared → global, `.bulk_group`; once for the warp when its operands are
    /// warp-uniform, [`Cx::issue_store_once`]).
    fn bulk_copy(&mut self, op: &PtxOp<'_>) -> bool {
        let ops = op.operands();
        let to_shared = matches!(
            op.flags.first(),
            Some(&".shared::cluster" | &".shared::cta")
        );
        if to_shared && self.guard.is_some() {
            return false;
        }
        let u32t = Ty::parse("u32").expect("u32");
        let (dst, src, size, mbar) = match (to_shared, ops) {
            (true, [d, s, n, m]) => (d, s, n, Some(m)),
            (false, [d, s, n]) => (d, s, n, None),
            _ => return false,
        };
        let Some(vsize) = self.val(size, u32t) else {
            return true;
        };
        let size_reg = match self.const_of(vsize) {
            Some(bytes) => {
                let units = self.new_vreg(RegClass::Ugpr, 1);
                self.emit_unguarded(Inst::new(
                    "UMOV",
                    &[],
                    vec![Operand::def(Reg::whole(units, 1)), Operand::imm(bytes / 16)],
                ));
                Reg::whole(units, 1)
            }
            None => {
                // A size in a register: its 16-byte units in the low half-word,
                // `SHF.R.U32.HI t, RZ, 0x4, n; PRMT u, t, 0x5410, RZ` (uniform twins when `n`
                // is warp-uniform; else the units go to a uniform register with the others).
                let n = self.to_reg(vsize, 1);
                let t = self.new_vreg(RegClass::Gpr, 1);
                self.emit_unguarded(Inst::new(
                    "SHF",
                    &["R", "U32", "HI"],
                    vec![
                        Operand::def(Reg::whole(t, 1)),
                        Self::rz(),
                        Operand::imm(4),
                        Operand::use_(n),
                    ],
                ));
                let u = self.new_vreg(RegClass::Gpr, 1);
                self.emit_unguarded(Inst::new(
                    "PRMT",
                    &[],
                    vec![
                        Operand::def(Reg::whole(u, 1)),
                        Operand::use_(Reg::whole(t, 1)),
                        Operand::imm(0x5410),
                        Self::rz(),
                    ],
                ));
                Reg::whole(u, 1)
            }
        };
        if to_shared {
            let Some(d) = self.shared_address(dst, false) else {
                return true;
            };
            let Some(s) = self.global_operand(src) else {
                return true;
            };
            let Some(m) = mbar.and_then(|m| self.shared_address(m, false)) else {
                return true;
            };
            self.per_thread_uniform_loop(vec![d, m, s, size_reg], move |cx, u| {
                let pair = cx.ur_tuple(&u[0..2]);
                cx.emit(Inst::new(
                    "UBLKCP",
                    &["S", "G"],
                    vec![
                        Self::ur_mem1(pair),
                        Self::ur_mem1(u[2]),
                        Operand::use_(u[3]),
                    ],
                ));
            });
        } else {
            let Some(d) = self.global_operand(dst) else {
                return true;
            };
            let Some(s) = self.shared_address(src, false) else {
                return true;
            };
            self.issue_store_once(vec![d, s, size_reg], move |cx, u| {
                cx.emit(Inst::new(
                    "UBLKCP",
                    &["G", "S"],
                    vec![
                        Self::ur_mem1(u[0]),
                        Self::ur_mem1(u[1]),
                        Operand::use_(u[2]),
                    ],
                ));
            });
        }
        true
    }

    /// `cp.async.bulk.tensor.{1,2}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    /// [dst], [tmap, {c…}], [mbar][, mask]` → `UTMALDG.<n>D[.MULTICAST] [dst|mbar|c…], [tmap]
    /// [, mask<<16]`, once per active thread (16_tma_elect).
    fn tensor_copy(&mut self, op: &PtxOp<'_>) -> bool {
        let dim: &'static str = match op.flags.first() {
            Some(&".1d") => "1D",
            Some(&".2d") => "2D",
            _ => return false,
        };
        if op.has(".im2col") {
            return false;
        }
        if op.has(".global") && op.has(".shared::cta") && op.has(".bulk_group") {
            return self.tensor_store(op, dim);
        }
        if !op.has(".shared::cluster") || !op.has(".mbarrier::complete_tx::bytes") {
            return false;
        }
        let multicast = op.has(".multicast::cluster");
        let (dst, tsrc, mbar, mask) = match (multicast, op.operands()) {
            (false, [d, t, m]) => (d, t, m, None),
            (true, [d, t, m, k]) => (d, t, m, Some(k)),
            _ => return false,
        };
        let ast::Operand::Address(tparts, _) = tsrc else {
            return false;
        };
        let [_, ast::Operand::Vector(coords, _)] = &tparts[..] else {
            return false;
        };
        let s32 = Ty::parse("s32").expect("s32");
        let Some(d) = self.shared_address(dst, false) else {
            return true;
        };
        let Some(m) = self.shared_address(mbar, false) else {
            return true;
        };
        let mut regs = vec![d, m];
        for c in coords {
            let Some(v) = self.val(c, s32) else {
                return true;
            };
            regs.push(self.to_reg(v, 1));
        }
        let Some(t) = self.global_operand(tsrc) else {
            return true;
        };
        regs.push(t);
        let mask = match mask {
            Some(k) => {
                let Some(v) = self.val(k, Ty::parse("u16").expect("u16")) else {
                    return true;
                };
                let r = self.to_reg(v, 1);
                match self.uniform_of(r) {
                    Some(u) => Some(u),
                    None => {
                        self.error(
                            k.span(),
                            "ptxc cannot yet lower a multicast mask that differs between threads",
                        );
                        return true;
                    }
                }
            }
            None => None,
        };
        let n = coords.len();
        self.issue_per_thread(regs, move |cx, u| {
            let tuple = cx.ur_tuple(&u[0..2 + n]);
            let mut ops = vec![Self::ur_mem1(tuple), Self::ur_mem1(u[2 + n])];
            let mut mods = vec![dim];
            if let Some(k) = mask {
                // The CTA mask rides in the upper half-word of a uniform register.
                let shifted = cx.new_vreg(RegClass::Ugpr, 1);
                cx.emit_unguarded(Inst::new(
                    "USHF",
                    &["L", "U32"],
                    vec![
                        Operand::def(Reg::whole(shifted, 1)),
                        Operand::use_(k),
                        Operand::imm(16),
                        Operand::use_(Reg::phys(PReg::URZ)),
                    ],
                ));
                ops.push(Operand::use_(Reg::whole(shifted, 1)));
                mods.push("MULTICAST");
            }
            cx.emit(Inst::new("UTMALDG", &mods, ops));
        });
        true
    }

    /// `cp.async.bulk.tensor.{1,2}d.global.shared::cta.bulk_group [tmap, {c…}], [src]` →
    /// `UTMASTG.<n>D [src|c…], [tmap]` (probe `tests/sass-probes/ptx/tensormap.ptx`:
    /// `UMOV UR5, UR6; UMOV UR6, UR7; UTMASTG.2D [UR4], [UR8]`), once for the warp when its
    /// operands are warp-uniform ([`Cx::issue_store_once`]).
    fn tensor_store(&mut self, op: &PtxOp<'_>, dim: &'static str) -> bool {
        let [tdst, src] = op.operands() else {
            return false;
        };
        let ast::Operand::Address(tparts, _) = tdst else {
            return false;
        };
        let [_, ast::Operand::Vector(coords, _)] = &tparts[..] else {
            return false;
        };
        let s32 = Ty::parse("s32").expect("s32");
        let Some(s) = self.shared_address(src, false) else {
            return true;
        };
        let mut regs = vec![s];
        for c in coords {
            let Some(v) = self.val(c, s32) else {
                return true;
            };
            regs.push(self.to_reg(v, 1));
        }
        let Some(t) = self.global_operand(tdst) else {
            return true;
        };
        regs.push(t);
        let n = coords.len();
        self.issue_store_once(regs, move |cx, u| {
            let tuple = cx.ur_tuple(&u[0..1 + n]);
            let ops = vec![Self::ur_mem1(tuple), Self::ur_mem1(u[1 + n])];
            cx.emit(Inst::new("UTMASTG", &[dim], ops));
        });
        true
    }
}
