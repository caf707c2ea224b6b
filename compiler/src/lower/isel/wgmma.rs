//! Warpgroup matrix multiply (`wgmma.*`): fp8 inputs as QGMMA, f16/bf16 inputs as HGMMA, with
//! ptxas 13.1's instructions (probes `tests/sass-probes/ptx/wgmma.ptx` and `hgmma.ptx`,
//! pyptx/matmul_tma_v35_sm90a):
//!
//! | PTX | SASS |
//! |---|---|
//! | `wgmma.fence.sync.aligned` | `WARPGROUP.ARRIVE` |
//! | `wgmma.mma_async.sync.aligned.m64nNk32.{f32,f16}.{e4m3,e5m2}.{e4m3,e5m2} {d…}, a, b, p, ±1, ±1` | `WARPGROUP.ARRIVE; QGMMA.64xNx32.<D>.<A>.<B> D, gdesc[UR], D[, UP], gsb0; WARPGROUP.DEPBAR.LE gsb0, 0x0` |
//! | `wgmma.mma_async.sync.aligned.m64nNk16.{f32,f16}.f16.f16 {d…}, a, b, p, ±1, ±1, tA, tB` | `… HGMMA.64xNx16.<D> D, gdesc[UR][.negA][.negB][.tnspA][.tnspB], D[, UP], gsb0 …` (bf16: `.BF16` after `<D>`) |
//! | `wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16 {d…}, {a0,a1,a2,a3}, b, p, ±1, ±1, tB` | `… HGMMA.64xNx16.F32 D, [-]R, gdesc[UR][.negB][.tnspB], D[, UP], gsb0 …` |
//! | `wgmma.commit_group.sync.aligned` | nothing (the group's last GMMA carries `gsb0`) |
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

/// The GMMA shape modifiers `64xNxK` for N = 8, 16, …, 256 (index N/8 − 1).
macro_rules! gmma_shapes {
    ($k:literal) => {
        gmma_shapes!(@ $k; 8 16 24 32 40 48 56 64 72 80 88 96 104 112 120 128 136 144 152 160
            168 176 184 192 200 208 216 224 232 240 248 256)
    };
    (@ $k:literal; $($n:literal)*) => {
        [$(concat!("64x", $n, "x", $k)),*]
    };
}

/// The shape modifier `64xNxK` (N a multiple of 8 up to 256; K 16 or 32).
fn gmma_shape(n: u32, k: u32) -> Option<&'static str> {
    const K16: [&str; 32] = gmma_shapes!(16);
    const K32: [&str; 32] = gmma_shapes!(32);
    let table = match k {
        16 => &K16,
        32 => &K32,
        _ => return None,
    };
    (n.is_multiple_of(8) && (8..=256).contains(&n)).then(|| table[(n / 8 - 1) as usize])
}

/// What a `wgmma.mma_async` becomes: QGMMA (fp8 inputs, K = 32) or HGMMA (f16/bf16 inputs,
/// K = 16), with the modifiers that name its input types.
struct Gmma {
    mnemonic: &'static str,
    k: u32,
    input_mods: Vec<&'static str>,
}

impl Gmma {
    fn of(a: &str, b: &str) -> Option<Gmma> {
        let fp8 = |t: &str| match t {
            "e4m3" => Some("E4M3"),
            "e5m2" => Some("E5M2"),
            _ => None,
        };
        if let (Some(a), Some(b)) = (fp8(a), fp8(b)) {
            return Some(Gmma {
                mnemonic: "QGMMA",
                k: 32,
                input_mods: vec![a, b],
            });
        }
        // HGMMA names bf16 inputs `.BF16` and f16 inputs not at all (probe
        // `tests/sass-probes/ptx/hgmma.ptx`: `HGMMA.64x64x16.F32` for `.f32.f16.f16`,
        // `HGMMA.64x64x16.F32.BF16` for `.f32.bf16.bf16`).
        match (a, b) {
            ("f16", "f16") => Some(Gmma {
                mnemonic: "HGMMA",
                k: 16,
                input_mods: vec![],
            }),
            ("bf16", "bf16") => Some(Gmma {
                mnemonic: "HGMMA",
                k: 16,
                input_mods: vec!["BF16"],
            }),
            _ => None,
        }
    }
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
        // PTX requires the descriptor to be warp-uniform, so a loop-header PHI of it (a
        // descriptor built before the loop, read in it) may be assumed to be its value from
        // before the loop, checked once the loop is lowered (selection runs again without the
        // assumption when it is wrong).
        self.assume_loop_phis = true;
        let u = self.uniform_pair(r);
        self.assume_loop_phis = false;
        if u.is_some() {
            return u;
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
        let v = p.vreg()?;
        // Through a PHI whose arguments are all one value (a loop header's, placed while the
        // loop was being lowered: pyptx `fa_ws_pingpong`'s scale-d `%p5`, set before the loop).
        let v = if self.def_of.contains(v) {
            v
        } else {
            self.ssa.trivial_phi_value(self.f, v)?
        };
        let def = self.def_of.inst(v)?;
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

    /// `imm-trans-a`/`imm-trans-b`: whether the matrix is transposed.
    fn wgmma_transposed(&mut self, v: &ast::Operand) -> Option<bool> {
        let k = match v {
            ast::Operand::Expr(e) => crate::frontend::check::eval_const(e),
            _ => None,
        };
        match k {
            Some(0) => Some(false),
            Some(1) => Some(true),
            _ => {
                self.error(v.span(), "ptxc expects 0 or 1 here");
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
        let Some(gmma) = Gmma::of(ta.name, tb.name) else {
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
            .and_then(|s| s.strip_suffix(if gmma.k == 16 { "k16" } else { "k32" }))
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
        // The register allocator keeps the code before any `setmaxnreg` within `.maxnreg`, less
        // R0/R1-style overhead of two (`passes/regalloc`'s `gpr_limit`), and each `setmaxnreg`
        // region within its own limit (`passes/regalloc/limits.rs`). ptxas wants the launch
        // allocation to hold the accumulator even where an `inc` gives more: a 64-register
        // accumulator after `setmaxnreg.inc 232` in a kernel of `.maxnreg 64` is its error
        // C7602 "Insufficient registers (64) to compile instruction", while `.maxnreg 168`
        // compiles (pyptx `fa_ws_pingpong`; `tests/tests/isel_control.rs`).
        let budget = self.f.max_regs.saturating_sub(2);
        if words > budget {
            self.error(
                op.ins.span,
                format!(
                    "ptxc cannot yet lower this wgmma: its {words} accumulator registers do not fit in the {} registers the kernel may use (`.maxnreg`)",
                    self.f.max_regs
                ),
            );
            return true;
        }
        let words = words as u8;
        let Some(shape_mod) = gmma_shape(n, gmma.k) else {
            return false;
        };
        // Operands: `d, a-desc, b-desc, scale-d, ±1, ±1` (fp8); f16/bf16 add `imm-trans-a,
        // imm-trans-b`, or with A in registers `d, {a0, a1, a2, a3}, b-desc, scale-d, ±1, ±1,
        // imm-trans-b`.
        let ops = op.operands();
        let a_in_regs = matches!(ops.get(1), Some(ast::Operand::Vector(..)));
        let (d, a, b, scale_d, sa, sb, trans_a, trans_b) = match (gmma.k, a_in_regs, ops) {
            (32, false, [d, a, b, sd, sa, sb]) => (d, a, b, sd, sa, sb, None, None),
            (16, false, [d, a, b, sd, sa, sb, ta, tb]) => (d, a, b, sd, sa, sb, Some(ta), Some(tb)),
            (16, true, [d, a, b, sd, sa, sb, tb]) => (d, a, b, sd, sa, sb, None, Some(tb)),
            _ => return false,
        };
        let Some(neg_a) = self.wgmma_negated(sa) else {
            return true;
        };
        let Some(neg_b) = self.wgmma_negated(sb) else {
            return true;
        };
        let mut transposed = [false; 2];
        for (t, v) in transposed.iter_mut().zip([trans_a, trans_b]) {
            if let Some(v) = v {
                let Some(k) = self.wgmma_transposed(v) else {
                    return true;
                };
                *t = k;
            }
        }
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
        // A in registers: a tuple of four words (`HGMMA … R60, gdesc[UR4].tnspB, …`, probe
        // kernel `rega`); negated, it is printed `-R56`.
        let a_regs = if a_in_regs {
            match self.fragment(a, 4) {
                Some(r) => Some(r),
                None => return true,
            }
        } else {
            None
        };
        let da = match a_regs {
            Some(_) => None,
            None => match self.uniform_desc(a) {
                Some(r) => Some(r),
                None => return true,
            },
        };
        let Some(db) = self.uniform_desc(b) else {
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
        // `gdesc[URx]` reads URx..URx+3, the B descriptor in the second pair, also when A is
        // in registers (probe kernel `rega`: `gdesc[UR4]` with the B descriptor in UR6:UR7 and
        // UR4:UR5 holding something else); ptxc fills the unused pair with B's descriptor too.
        let descs = self.ur_tuple(&[da.unwrap_or(db), db]);
        let mut gdesc = Operand::new(OpKind::Mem {
            prefix: MemPrefix::GDesc,
            terms: vec![MemTerm::Reg(descs, None)],
        });
        if neg_a && a_regs.is_none() {
            gdesc = gdesc.with_suffix("negA");
        }
        if neg_b {
            gdesc = gdesc.with_suffix("negB");
        }
        if transposed[0] {
            gdesc = gdesc.with_suffix("tnspA");
        }
        if transposed[1] {
            gdesc = gdesc.with_suffix("tnspB");
        }
        let t = Reg::whole(self.new_vreg(RegClass::Gpr, words), words);
        let mut ops = vec![Operand::def(t)];
        if let Some(r) = a_regs {
            ops.push(if neg_a { use_(r).negated() } else { use_(r) });
        }
        ops.push(gdesc);
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
        let mut inst = Inst::new(gmma.mnemonic, &[], ops);
        inst.mods = [shape_mod, d_ty]
            .into_iter()
            .chain(gmma.input_mods)
            .collect();
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
