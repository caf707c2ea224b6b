//! Warp-level data exchange: `shfl.sync`, `vote(.sync)`, `match.sync`, `redux.sync`,
//! `activemask`.
//!
//! ptxas encodes no membermask: `shfl.sync … 0xffff` and `vote.sync … %r` give the same
//! SHFL/VOTE as `-1` (the mask is evaluated into a dead register at most).
//!
//! A *guarded* warp-synchronous instruction is different: ptxas branches around it and waits
//! for the membermask first, `@!p BRA after; WARPSYNC.ALL` (mask -1) or `MOV R, mask;
//! WARPSYNC R` (any other mask, in a `BSSY`/`BSYNC` region), then the instruction unguarded
//! (zluda `vote_all`, `redux_sync_add_u32_partial`; probe in `docs/passes/reconverge.md`).
//! Instruction selection emits the `WARPSYNC` under the guard right before the instruction;
//! `reconverge` makes the branch.
//!
//! | PTX | SASS |
//! |---|---|
//! | `shfl.sync.<mode>.b32 d\|p, a, b, c, m` | `SHFL.<IDX,UP,DOWN,BFLY> P, d, a, b, c` (`c = 0` as `RZ`) |
//! | `vote.sync.all/any/uni.pred d, p, m` | `VOTE.ALL/ANY/EQ Pd, p` |
//! | `vote.sync.ballot.b32 d, p, m` | `VOTE.ANY Rd, PT, p` |
//! | `match.any.sync.b32/b64 d, a, m` | `MATCH.ANY[.U64] d, a` |
//! | `match.all.sync.b32/b64 d\|p, a, m` | `MATCH.ALL P, d, a` |
//! | `redux.sync.<op>.<ty> d, a, m` | `REDUX[.SUM/MIN/MAX/OR/XOR][.S32] UR, a; MOV d, UR` |
//! | `activemask.b32 d` | `VOTE.ANY d, PT, PT` |

use super::address::{pt, use_};
use super::{Cx, Dst, PtxOp};
use crate::frontend::ast;
use crate::frontend::check::eval_const;
use crate::frontend::types::{Kind, Ty};
use crate::mir::*;

impl Cx<'_> {
    /// Under a per-thread guard, the `WARPSYNC` of `mask` that `reconverge` turns into a branch
    /// around the warp-synchronous instruction emitted next (see the module documentation). Its
    /// `divergent` flag says whether the guard may differ between the warp's threads.
    fn warpsync_if_guarded(&mut self, mask: Option<&ast::Operand>) {
        let (Some((pred, _)), Some(mask)) = (self.guard, mask) else {
            return;
        };
        let Reg::Virt { vreg, .. } = pred else { return };
        if self.f.vreg(vreg).class != RegClass::Pred {
            return;
        }
        let Some(v) = self.src(mask, Ty::parse("b32").expect("b32"), 1) else {
            return;
        };
        let mut inst = match v {
            super::Val::Imm(k) if k as u32 == u32::MAX => Inst::new("WARPSYNC", &["ALL"], vec![]),
            other => {
                let r = self.to_reg(other, 1);
                Inst::new("WARPSYNC", &[], vec![use_(r)])
            }
        };
        inst.divergent = !self.is_uniform(pred);
        self.emit(inst);
    }

    /// Under a per-thread guard, `WARPSYNC.ALL` before a `.sync.aligned` instruction of the
    /// whole warp that is not a data exchange (`tensormap.cp_fenceproxy`): `reconverge` turns it
    /// into `@!p BRA after; WARPSYNC.ALL; …`, with no `BSSY`, as for a full membermask.
    pub(super) fn warpsync_all_if_guarded(&mut self) {
        let Some((pred @ Reg::Virt { vreg, .. }, _)) = self.guard else {
            return;
        };
        if self.f.vreg(vreg).class != RegClass::Pred {
            return;
        }
        let mut inst = Inst::new("WARPSYNC", &["ALL"], vec![]);
        inst.divergent = !self.is_uniform(pred);
        self.emit(inst);
    }

    /// The destinations of `d|p` (either may be missing), or of a plain `d`.
    fn dst_pair(&mut self, op: &ast::Operand) -> Option<(Option<Dst>, Option<Dst>)> {
        match op {
            ast::Operand::Pair(pair, _) => {
                let (d, p) = &**pair;
                let d = match d {
                    Some(e) => Some(self.dst(&ast::Operand::Expr(e.clone()))?),
                    None => None,
                };
                let p = self.dst(&ast::Operand::Expr(p.clone()))?;
                Some((d, Some(p)))
            }
            ast::Operand::Sink(_) => Some((None, None)),
            other => Some((Some(self.dst(other)?), None)),
        }
    }

    /// A predicate source (`p`, `!p`, or an immediate).
    pub(super) fn pred_src(&mut self, op: &ast::Operand) -> Option<Operand> {
        let (e, not) = match op {
            ast::Operand::Expr(e) => (e, false),
            ast::Operand::Not(e, _) => (&**e, true),
            other => {
                self.error(other.span(), "expected a predicate");
                return None;
            }
        };
        if let Some(k) = eval_const(e) {
            let o = pt();
            return Some(if (k != 0) != not { o } else { o.inverted() });
        }
        let Some(name) = e.as_name() else {
            self.error(e.span(), "expected a predicate");
            return None;
        };
        let (var, _) = self.var(name)?;
        let r = self.read_var(var);
        let o = use_(r);
        Some(if not { o.inverted() } else { o })
    }

    fn commit_all(&mut self, dsts: Vec<Dst>) {
        for d in dsts {
            self.commit(d);
        }
    }

    pub(super) fn shfl(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let mode = match op.flags.iter().find_map(|f| match *f {
            ".idx" => Some("IDX"),
            ".up" => Some("UP"),
            ".down" => Some("DOWN"),
            ".bfly" => Some("BFLY"),
            _ => None,
        }) {
            Some(m) => m,
            None => return false,
        };
        let (d, a, b, c) = match op.operands() {
            [d, a, b, c, ..] => (d, a, b, c),
            _ => return false,
        };
        let (Some(va), Some(vb), Some(vc)) =
            (self.src(a, ty, 1), self.src(b, ty, 1), self.src(c, ty, 1))
        else {
            return true;
        };
        let ra = self.reg_of(va, 1);
        let lane = match vb {
            super::Val::Imm(k) if (0..32).contains(&k) => Operand::imm(k),
            other => {
                let r = self.reg_of(other, 1);
                use_(r)
            }
        };
        let clamp = match vc {
            super::Val::Imm(0) => use_(Reg::phys(PReg::RZ)),
            super::Val::Imm(k) if (0..0x2000).contains(&k) => Operand::imm(k),
            other => {
                let r = self.reg_of(other, 1);
                use_(r)
            }
        };
        let Some((dd, dp)) = self.dst_pair(d) else {
            return false;
        };
        let dr = dd.as_ref().map_or(Reg::phys(PReg::RZ), Dst::reg);
        let pr = dp.as_ref().map_or(Reg::phys(PReg::PT), Dst::reg);
        self.warpsync_if_guarded(op.operands().get(4));
        let inst = Inst::new(
            "SHFL",
            &[mode],
            vec![Operand::def(pr), Operand::def(dr), use_(ra), lane, clamp],
        );
        let dsts: Vec<Dst> = dd.into_iter().chain(dp).collect();
        let refs: Vec<&Dst> = dsts.iter().collect();
        self.emit_defs(&refs, inst);
        self.commit_all(dsts);
        true
    }

    pub(super) fn vote(&mut self, op: &PtxOp<'_>) -> bool {
        let mode = match op.flags.iter().find_map(|f| match *f {
            ".all" => Some("ALL"),
            ".any" => Some("ANY"),
            ".uni" => Some("EQ"),
            ".ballot" => Some("BALLOT"),
            _ => None,
        }) {
            Some(m) => m,
            None => return false,
        };
        let (d, p) = match op.operands() {
            [d, p, ..] => (d, p),
            _ => return false,
        };
        let Some(src) = self.pred_src(p) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        self.warpsync_if_guarded(op.operands().get(2));
        let inst = if mode == "BALLOT" {
            Inst::new(
                "VOTE",
                &["ANY"],
                vec![
                    Operand::def(dst.reg()),
                    Operand::def(Reg::phys(PReg::PT)),
                    src,
                ],
            )
        } else {
            Inst::new(
                "VOTE",
                &[mode],
                vec![
                    Operand::def(Reg::phys(PReg::RZ)),
                    Operand::def(dst.reg()),
                    src,
                ],
            )
        };
        self.emit_def(&dst, inst);
        self.commit(dst);
        true
    }

    pub(super) fn match_sync(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let all = op.has(".all");
        let (d, a) = match op.operands() {
            [d, a, ..] => (d, a),
            _ => return false,
        };
        let words = ty.bits().div_ceil(32) as u8;
        let Some(va) = self.src(a, ty, words) else {
            return true;
        };
        let va = self.fit(va, words);
        let ra = self.reg_of(va, words);
        let Some((dd, dp)) = self.dst_pair(d) else {
            return false;
        };
        if !all && dp.is_some() {
            return false;
        }
        let dr = dd.as_ref().map_or(Reg::phys(PReg::RZ), Dst::reg);
        let mut mods: Vec<&'static str> = vec![if all { "ALL" } else { "ANY" }];
        if words == 2 {
            mods.push("U64");
        }
        self.warpsync_if_guarded(op.operands().get(2));
        let mut ops = Vec::new();
        if all {
            let pr = dp.as_ref().map_or(Reg::phys(PReg::PT), Dst::reg);
            ops.push(Operand::def(pr));
        }
        ops.push(Operand::def(dr));
        ops.push(use_(ra));
        let mut inst = Inst::new("MATCH", &[], ops);
        inst.mods = mods;
        let dsts: Vec<Dst> = dd.into_iter().chain(dp).collect();
        let refs: Vec<&Dst> = dsts.iter().collect();
        self.emit_defs(&refs, inst);
        self.commit_all(dsts);
        true
    }

    pub(super) fn redux(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        if ty.bits() != 32 || ty.kind() == Kind::Float {
            return false;
        }
        let kind = match op.flags.iter().find_map(|f| match *f {
            ".add" => Some("SUM"),
            ".min" => Some("MIN"),
            ".max" => Some("MAX"),
            ".and" => Some(""),
            ".or" => Some("OR"),
            ".xor" => Some("XOR"),
            _ => None,
        }) {
            Some(k) => k,
            None => return false,
        };
        let (d, a) = match op.operands() {
            [d, a, ..] => (d, a),
            _ => return false,
        };
        let Some(va) = self.src(a, ty, 1) else {
            return true;
        };
        let ra = self.reg_of(va, 1);
        let Some(dst) = self.dst(d) else { return false };
        let u = Reg::whole(self.new_vreg(RegClass::Ugpr, 1), 1);
        let mut mods: Vec<&'static str> = Vec::new();
        if !kind.is_empty() {
            mods.push(kind);
        }
        if ty.kind() == Kind::Signed && matches!(kind, "SUM" | "MIN" | "MAX") {
            mods.push("S32");
        }
        let mut inst = Inst::new("REDUX", &[], vec![Operand::def(u), use_(ra)]);
        inst.mods = mods;
        self.warpsync_if_guarded(op.operands().get(2));
        self.emit(inst);
        self.emit_def(
            &dst,
            Inst::new("MOV", &[], vec![Operand::def(dst.reg()), use_(u)]),
        );
        self.commit(dst);
        true
    }

    pub(super) fn activemask(&mut self, op: &PtxOp<'_>) -> bool {
        let [d] = op.operands() else {
            return false;
        };
        let Some(dst) = self.dst(d) else { return false };
        self.emit_def(
            &dst,
            Inst::new(
                "VOTE",
                &["ANY"],
                vec![
                    Operand::def(dst.reg()),
                    Operand::def(Reg::phys(PReg::PT)),
                    pt(),
                ],
            ),
        );
        self.commit(dst);
        true
    }
}
