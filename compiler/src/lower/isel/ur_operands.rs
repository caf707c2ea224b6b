//! Uniform registers read directly as an ALU operand, instead of a `MOV R, UR` copy.
//!
//! A register kept in a uniform twin (`loop_uniform.rs`) is read by per-thread instructions
//! through a copy, `MOV R, UR` ([`super::Cx::read_var`]). ptxas reads the `UR` itself in the
//! slot of the vector instruction that takes one (the B source of the common ALU layout, bit
//! 91; `compiler/src/target/sm90a/forms/int.rs`), and computes a value derived from it in the
//! uniform datapath first: pyptx `matmul_tma_v33` (ptxas 13.1, `cuobjdump -sass`) flips its
//! mbarrier phase with `USEL UR10, URZ, 0x1, !UP0; LOP3.LUT R114, R114, UR10, RZ, 0x3c, !PT`
//! and compares with `ISETP.LE.AND P0, PT, R142, UR4, PT`; `LEA R4, R0, UR8, 0x2` and
//! `IMAD.X R3, RZ, RZ, UR7, P1` in the same listing.
//!
//! [`Cx::read_ur_operands`] runs on each instruction selection emits in a function that has
//! twins: a source of `IADD3`, `ISETP`, `LOP3`, `SEL`, `LEA` or `IMAD` whose value is computed
//! from twins only (and immediates, through instructions with a uniform form:
//! [`Cx::is_uniform`]) is rebuilt in the uniform datapath ([`Cx::uniform_of`]) and read as the
//! B operand; the per-thread copy and the computation after it are then dead (`dce`). Other
//! warp-uniform values (parameters, constants) are left as they are: their `c[0x0][…]` and
//! immediate forms are what ptxas uses for them.

use super::Cx;
use crate::mir::{Inst, OpKind, Reg, RegClass, VReg};

/// The operand positions (indices into `ops`) of an instruction's sources, in order: the
/// operands that are not written and not a guarded definition's prior value.
fn sources(inst: &Inst) -> Vec<usize> {
    inst.ops
        .iter()
        .enumerate()
        .filter(|(_, o)| match &o.kind {
            OpKind::Reg(r) => !r.def,
            OpKind::Prior(_) => false,
            _ => true,
        })
        .map(|(i, _)| i)
        .collect()
}

/// Whether the mnemonic (with these modifiers) has a form with a `UR` B source, and whether
/// its first two sources may be exchanged (an `IADD3` sum, an `IMAD` product, an `ISETP`
/// comparison with its condition mirrored).
fn ur_b_form(inst: &Inst) -> Option<bool> {
    if inst.mods.contains(&"X") || inst.mods.contains(&"EX") {
        return None;
    }
    match inst.mnemonic {
        "IADD3" => Some(true),
        // `IMAD` with `.WIDE`/`.HI` also has the `UR` B form (survey 0xc25, 0xc27); the
        // factors are two words of one width, so they may be exchanged too.
        "IMAD" => Some(true),
        "ISETP" => Some(true),
        "LOP3" | "SEL" | "LEA" => Some(false),
        _ => None,
    }
}

/// Exchanges an instruction's first two sources (at `a` and `b`); an `ISETP` compares the
/// other way round (`a < b` is `b > a`).
fn exchange(inst: &mut Inst, a: usize, b: usize) {
    inst.ops.swap(a, b);
    if inst.mnemonic == "ISETP"
        && let Some(c) = inst.mods.first_mut()
    {
        *c = super::cmp::swapped(c);
    }
}

impl Cx<'_> {
    /// Reads one source of `inst` from a uniform register where its value is computed from
    /// uniform twins and `inst` has the `UR` form (the module's comment). Emits the uniform
    /// computation before `inst`.
    pub(super) fn read_ur_operands(&mut self, inst: &mut Inst) {
        let Some(commutes) = ur_b_form(inst) else {
            return;
        };
        let srcs = sources(inst);
        if srcs.len() < 2 {
            return;
        }
        let (a, b) = (srcs[0], srcs[1]);
        let swapped = if self.twin_derived_operand(&inst.ops[b].kind) {
            false
        } else if commutes
            && self.twin_derived_operand(&inst.ops[a].kind)
            && matches!(inst.ops[b].kind, OpKind::Reg(_))
            && !inst.ops[a].abs
            && !inst.ops[b].abs
            && !(inst.mnemonic == "IMAD" && (inst.ops[a].neg || inst.ops[b].neg))
        {
            exchange(inst, a, b);
            true
        } else {
            return;
        };
        let OpKind::Reg(r) = inst.ops[b].kind else {
            return;
        };
        if let Some(u) = self.uniform_of(r.reg) {
            inst.ops[b].kind = OpKind::Reg(crate::mir::RegRef { reg: u, def: false });
        } else if swapped {
            // Not rebuilt after all: the operands back where they were.
            exchange(inst, a, b);
        }
    }

    /// Whether an operand is a one-word general register whose value is computed from uniform
    /// twins ([`Cx::twin_derived`]) and provably uniform ([`Cx::is_uniform`]).
    fn twin_derived_operand(&self, kind: &OpKind) -> bool {
        let OpKind::Reg(r) = kind else {
            return false;
        };
        let Reg::Virt {
            vreg,
            first: 0,
            count: 1,
        } = r.reg
        else {
            return false;
        };
        let info = self.f.vreg(vreg);
        info.class == RegClass::Gpr
            && info.words == 1
            && self.twin_derived(vreg, 0)
            && self.is_uniform(r.reg)
    }

    /// Whether `v`'s definition reads a uniform register, directly or through the definitions
    /// of the values it reads (the `MOV R, UR` of a twin's read at the bottom).
    fn twin_derived(&self, v: VReg, depth: u32) -> bool {
        if depth > 16 {
            return false;
        }
        let Some(def) = self.def_of.inst(v) else {
            return false;
        };
        def.ops.iter().any(|o| match &o.kind {
            OpKind::Reg(r) if !r.def => r.reg.vreg().is_some_and(|s| {
                self.f.vreg(s).class == RegClass::Ugpr || self.twin_derived(s, depth + 1)
            }),
            _ => false,
        })
    }
}
