//! Warpgroup matrix multiply (`wgmma.*`) on fp8 inputs, as QGMMA, with ptxas 13.1's
//! instructions (probe `tests/sass-probes/ptx/wgmma.ptx`, pyptx/matmul_tma_v35_sm90a):
//!
//! | PTX | SASS |
//! |---|---|
//! | `wgmma.fence.sync.aligned` | `WARPGROUP.ARRIVE` |
//! | `wgmma.mma_async.sync.aligned.m64nNk32.{f32,f16}.{e4m3,e5m2}.{e4m3,e5m2} {d…}, a, b, p, ±1, ±1` | `WARPGROUP.ARRIVE; QGMMA.64xNx32.<D>.<A>.<B> D, gdesc[UR], D[, UP], gsb0; WARPGROUP.DEPBAR.LE gsb0, 0x0` |
//! | `wgmma.commit_group.sync.aligned` | nothing (the group's last QGMMA carries `gsb0`) |
//! | `wgmma.wait_group.sync.aligned N` | `WARPGROUP.DEPBAR.LE gsb0, N` |
//!
//! **ptxc serializes every wgmma**, as ptxas does when other instructions touch the
//! accumulators between a wgmma and its wait (probe: `QGMMA … gsb0; WARPGROUP.DEPBAR.LE gsb0,
//! 0x0; FADD R24, R24, 1; WARPGROUP.ARRIVE; QGMMA …`, ptxas info C7514/C7517): the register
//! allocator may place copies of the accumulators anywhere, which is only safe when no QGMMA is
//! in flight. ptxas pipelines consecutive QGMMAs (one `gsb0` per commit group) when nothing
//! else reads their registers; ptxc does not yet.
//!
//! The accumulator is updated in place (`QGMMA R24, gdesc[UR4], R24`): the MIR instruction
//! defines the tuple with the input tuple as its prior value and leaves the C operand out; the
//! emitter repeats D as C (`emit::sass`). With scale-d a constant 0, C is `RZ` and the
//! predicate `!UPT` (probe). `gdesc[URx]` names four uniform registers: the A descriptor, then
//! the B descriptor. PTX requires both descriptors to be the same in every thread of the
//! warpgroup, so a descriptor ptxc cannot prove warp-uniform is moved with one `R2UR`.

use super::address::{use_, word_of};
use super::{Cx, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::types::Ty;
use crate::mir::{Inst, MemPrefix, MemTerm, OpKind, Operand, PReg, Reg, RegClass};

/// The QGMMA shape modifier `64xNx32` (N a multiple of 8 up to 256).
fn qgmma_shape(n: u32) -> Option<&'static str> {
    const SHAPES: [&str; 32] = [
        "64x8x32",
        "64x16x32",
        "64x24x32",
        "64x32x32",
        "64x40x32",
        "64x48x32",
        "64x56x32",
        "64x64x32",
        "64x72x32",
        "64x80x32",
        "64x88x32",
        "64x96x32",
        "64x104x32",
        "64x112x32",
        "64x120x32",
        "64x128x32",
        "64x136x32",
        "64x144x32",
        "64x152x32",
        "64x160x32",
        "64x168x32",
        "64x176x32",
        "64x184x32",
        "64x192x32",
        "64x200x32",
        "64x208x32",
        "64x216x32",
        "64x224x32",
        "64x232x32",
        "64x240x32",
        "64x248x32",
        "64x256x32",
    ];
    (n.is_multiple_of(8) && (8..=256).contains(&n)).then(|| SHAPES[(n / 8 - 1) as usize])
}

impl Cx<'_> {
    /// The `wgmma.*` family.
    pub(super) fn lower_wgmma(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        if !op.opcode.starts_with("wgmma.") {
            return None;
        }
        if self.guard.is_some() {
            // `.sync.aligned`: every thread of the warpgroup executes it; ptxc does not lower a
            // guarded one.
            return Some(false);
        }
        Some(match op.opcode {
            "wgmma.fence" => {
                self.warpgroup_arrive();
                true
            }
            "wgmma.commit_group" => true,
            "wgmma.wait_group" => self.wgmma_wait(op),
            "wgmma.mma_async" => self.wgmma_mma_async(op),
            _ => false,
        })
    }

    /// `WARPGROUP.ARRIVE`, unless the instruction before it is one.
    fn warpgroup_arrive(&mut self) {
        let last = self.f.block(self.cur).insts.last();
        if last.is_some_and(|i| i.mnemonic == "WARPGROUP" && i.mods == ["ARRIVE"]) {
            return;
        }
        self.emit(Inst::new("WARPGROUP", &["ARRIVE"], vec![]));
    }

    fn warpgroup_depbar(&mut self, n: i64) {
        self.emit(Inst::new(
            "WARPGROUP",
            &["DEPBAR", "LE"],
            vec![Operand::new(OpKind::Sym("gsb0")), Operand::imm(n)],
        ));
    }

    fn wgmma_wait(&mut self, op: &PtxOp<'_>) -> bool {
        let [n] = op.operands() else { return false };
        let k = match n {
            ast::Operand::Expr(e) => crate::frontend::check::eval_const(e),
            _ => None,
        };
        let Some(k) = k.filter(|k| (0..8).contains(k)) else {
            return false;
        };
        self.warpgroup_depbar(k as i64);
        true
    }

    /// A 64-bit descriptor in a uniform register pair.
    fn uniform_desc(&mut self, v: &ast::Operand) -> Option<Reg> {
        let b64 = Ty::parse("b64").expect("b64");
        let v = self.val(v, b64)?;
        let r = self.to_reg(v, 2);
        if let Some(u) = self.uniform_of(r) {
            return Some(u);
        }
        let u = self.new_vreg(RegClass::Ugpr, 2);
        for w in 0..2 {
            self.emit(Inst::new(
                "R2UR",
                &[],
                vec![Operand::def(Reg::word(u, w)), use_(word_of(r, w))],
            ));
        }
        Some(Reg::whole(u, 2))
    }

    /// The value of a predicate that is a constant: `PT`, or a `PLOP3.LUT` of `PT`s only
    /// (`mov.pred %p78, -1`): bit 7 of its table.
    fn const_pred(&self, p: Reg) -> Option<bool> {
        if p == Reg::phys(PReg::PT) {
            return Some(true);
        }
        let def = self.def_of.get(&p.vreg()?)?;
        if def.mnemonic != "PLOP3" || def.guard.is_some() {
            return None;
        }
        let mut ins = def
            .ops
            .iter()
            .filter(|o| !matches!(o.kind, OpKind::Reg(r) if r.def));
        let srcs: Vec<&Operand> = ins.by_ref().take(3).collect();
        let all_pt = srcs.len() == 3
            && srcs.iter().all(|o| {
                !o.not && matches!(o.kind, OpKind::Reg(r) if r.reg == Reg::phys(PReg::PT))
            });
        let lut = match ins.next().map(|o| &o.kind) {
            Some(OpKind::Int(l)) => *l,
            _ => return None,
        };
        all_pt.then_some(lut >> 7 & 1 == 1)
    }

    /// `±1` of `imm-scale-a`/`imm-scale-b`: whether the matrix is negated.
    fn wgmma_negated(&mut self, v: &ast::Operand) -> Option<bool> {
        let k = match v {
            ast::Operand::Expr(e) => crate::frontend::check::eval_const(e),
            _ => None,
        };
        match k {
            Some(1) => Some(false),
            Some(-1) => Some(true),
            _ => {
                self.error(v.span(), "ptxc expects 1 or -1 here");
                None
            }
        }
    }

    fn wgmma_mma_async(&mut self, op: &PtxOp<'_>) -> bool {
        if op.has(".sp") || op.has(".satfinite") {
            return false;
        }
        let [td, ta, tb] = op.types[..] else {
            return false;
        };
        let fp8 = |t: &str| match t {
            "e4m3" => Some("E4M3"),
            "e5m2" => Some("E5M2"),
            _ => None,
        };
        let (Some(a_ty), Some(b_ty)) = (fp8(ta.name), fp8(tb.name)) else {
            return false;
        };
        let (d_ty, per_8) = match td.name {
            "f32" => ("F32", 4),
            "f16" => ("F16", 2),
            _ => return false,
        };
        let Some(shape) = op.flags.iter().find(|f| f.starts_with(".m64n")) else {
            return false;
        };
        let Some(n) = shape
            .strip_prefix(".m64n")
            .and_then(|s| s.strip_suffix("k32"))
            .and_then(|s| s.parse::<u32>().ok())
        else {
            return false;
        };
        // Accumulator registers per thread: N/2 (f32) or N/4 (f16). The register allocator
        // places a tuple within 64 registers.
        let words = n / 8 * per_8;
        if words > 64 {
            return false;
        }
        let words = words as u8;
        let Some(shape_mod) = qgmma_shape(n) else {
            return false;
        };
        let [d, a, b, scale_d, sa, sb] = op.operands() else {
            return false;
        };
        let Some(neg_a) = self.wgmma_negated(sa) else {
            return true;
        };
        let Some(neg_b) = self.wgmma_negated(sb) else {
            return true;
        };
        // scale-d: a constant, or a predicate in a uniform predicate register.
        let pred = Ty::parse("pred").expect("pred");
        let Some(sd) = self.val(scale_d, pred) else {
            return true;
        };
        let sd = match sd {
            Val::Reg(p) => match self.const_pred(p) {
                Some(k) => Val::Imm(i64::from(k)),
                None => Val::Reg(p),
            },
            other => other,
        };
        let accumulate: Option<Reg> = match sd {
            Val::Imm(0) => None,
            Val::Imm(_) => Some(Reg::phys(PReg::UPT)),
            Val::Reg(p) => match self.uniform_of(p) {
                Some(u) => Some(u),
                None => {
                    self.error(
                        scale_d.span(),
                        "ptxc cannot yet lower a wgmma scale-d predicate that is not provably warp-uniform",
                    );
                    return true;
                }
            },
            _ => return false,
        };
        let (Some(da), Some(db)) = (self.uniform_desc(a), self.uniform_desc(b)) else {
            return true;
        };
        let input = match accumulate {
            Some(_) => match self.fragment(d, words) {
                Some(r) => Some(r),
                None => return true,
            },
            None => None,
        };
        let Some(dsts) = self.fragment_dsts(d, words) else {
            return true;
        };
        let descs = self.ur_tuple(&[da, db]);
        let mut gdesc = Operand::new(OpKind::Mem {
            prefix: MemPrefix::GDesc,
            terms: vec![MemTerm::Reg(descs, None)],
        });
        if neg_a {
            gdesc = gdesc.with_suffix("negA");
        }
        if neg_b {
            gdesc = gdesc.with_suffix("negB");
        }
        let t = Reg::whole(self.new_vreg(RegClass::Gpr, words), words);
        let mut ops = vec![Operand::def(t), gdesc];
        match (accumulate, input) {
            (Some(p), Some(c)) => {
                // C is D (the emitter repeats it); the prior value of D is the input.
                if p != Reg::phys(PReg::UPT) {
                    ops.push(use_(p));
                }
                ops.push(Operand::new(OpKind::Sym("gsb0")));
                ops.push(Operand::new(OpKind::Prior(c)));
            }
            _ => {
                ops.push(Operand::use_(Reg::phys(PReg::RZ)));
                ops.push(Operand::use_(Reg::phys(PReg::UPT)).inverted());
                ops.push(Operand::new(OpKind::Sym("gsb0")));
            }
        }
        let mut inst = Inst::new("QGMMA", &[], ops);
        inst.mods = vec![shape_mod, d_ty, a_ty, b_ty];
        self.warpgroup_arrive();
        self.emit(inst);
        // The wait comes before anything reads the results (the copies into the PTX registers
        // included); `emit::sass` checks that nothing lands between the two.
        self.warpgroup_depbar(0);
        for (i, dst) in dsts.into_iter().enumerate() {
            if let Some(dst) = dst {
                self.assign_val(dst, Val::Reg(word_of(t, i as u8)));
            }
        }
        true
    }
}
