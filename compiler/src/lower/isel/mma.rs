//! Warp-level matrix instructions: `mma.sync.aligned` on the tensor cores (HMMA, IMMA) and
//! `ldmatrix`/`stmatrix` (LDSM, STSM).
//!
//! | PTX | SASS |
//! |---|---|
//! | `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.….f32 {d×4}, {a×4}, {b×2}, {c×4}` | `HMMA.16816.F32[.BF16] D, A, B, C` |
//! | `mma.sync.aligned.m16n8k8.row.col.f32.{f16,bf16}.….f32 {d×4}, {a×2}, {b}, {c×4}` | `HMMA.1688.F32[.BF16] D, A, B, C` |
//! | `mma… .f16.f16.f16.f16` (f16 accumulators, two registers) | `HMMA.<shape>.F16 D, A, B, C` |
//! | `mma.sync.aligned.m16n8k32.row.col{.satfinite}.s32.{s8,u8}.{s8,u8}.s32` | `IMMA.16832.<A>.<B>[.SAT] D, A.ROW, B.COL, C` |
//! | `mma.sync.aligned.m16n8k16.row.col{.satfinite}.s32.{s8,u8}.{s8,u8}.s32` | `IMMA.16816.<A>.<B>[.SAT] D, A.ROW, B.COL, C` |
//! | `ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}{.shared}.b16 {d…}, [a]` | `LDSM.16.{M88,MT88}[.2,.4] D, [a]` |
//! | `stmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}{.shared}.b16 [a], {s…}` | `STSM.16.{M88,MT88}[.2,.4] [a], S` |
//!
//! Each fragment (`{a0, a1, …}`) is one register tuple in SASS: the elements are gathered into
//! a fresh vector register (copies the register allocator coalesces away) and the results are
//! the words of one. A generic `ldmatrix`/`stmatrix` address is a shared-window address whose
//! low word is the shared address: ptxas uses that word (`zluda/ldmatrix`).

use super::address::{Base, Space, use_, word_of};
use super::{Cx, Dst, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::types::Ty;
use crate::mir::*;

impl Cx<'_> {
    pub(super) fn lower_mma(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        Some(match op.opcode {
            "mma" => self.mma(op),
            "ldmatrix" => self.ldmatrix(op),
            "stmatrix" => self.stmatrix(op),
            _ => return None,
        })
    }

    /// The registers of a fragment `{r0, r1, …}` of `n` 32-bit words, as one tuple.
    pub(super) fn fragment(&mut self, op: &ast::Operand, n: u8) -> Option<Reg> {
        let items: Vec<&ast::Operand> = match op {
            ast::Operand::Vector(items, _) => items.iter().collect(),
            other => vec![other],
        };
        let b32 = Ty::parse("b32").expect("b32");
        let mut vals = Vec::new();
        for it in items {
            let v = self.src(it, b32, 1)?;
            vals.push(self.fit(v, 1));
        }
        if vals.len() != usize::from(n) {
            self.error(
                op.span(),
                format!("this fragment needs {n} registers, not {}", vals.len()),
            );
            return None;
        }
        Some(match vals.as_slice() {
            [Val::Reg(r)] if n == 1 && r.count() == 1 => *r,
            _ => self.pack(&vals, 32, n),
        })
    }

    /// The destinations `{d0, d1, …}` of a fragment of `n` words, all 32-bit registers.
    pub(super) fn fragment_dsts(&mut self, op: &ast::Operand, n: u8) -> Option<Vec<Option<Dst>>> {
        let dsts = self.dst_list(op)?;
        if dsts.len() != usize::from(n) || dsts.iter().flatten().any(|d| d.words != 1) {
            self.error(
                op.span(),
                format!("ptxc cannot lower this destination yet: it needs {n} 32-bit registers"),
            );
            return None;
        }
        Some(dsts)
    }

    /// Emits `inst`, which defines the tuple `t` of `dsts.len()` words, and gives each
    /// destination its word.
    pub(super) fn def_fragment(&mut self, inst: Inst, t: Reg, dsts: Vec<Option<Dst>>) {
        self.emit(inst);
        let guarded = self.guard.is_some();
        for (i, dst) in dsts.into_iter().enumerate() {
            let Some(dst) = dst else { continue };
            let w = word_of(t, i as u8);
            if guarded {
                // The tuple exists only where the guard holds: move under the guard.
                self.emit_def(
                    &dst,
                    Inst::new("MOV", &[], vec![Operand::def(dst.reg()), use_(w)]),
                );
                self.commit(dst);
            } else {
                self.assign_val(dst, Val::Reg(w));
            }
        }
    }

    fn mma(&mut self, op: &PtxOp<'_>) -> bool {
        let [td, ta, tb, tc] = op.types[..] else {
            return false;
        };
        if !(op.has(".row") && op.has(".col")) {
            return false;
        }
        let shape = op.flags.iter().find(|f| f.starts_with(".m")).copied();
        let sat = op.has(".satfinite");
        let (mnemonic, mods, na, nb, nc): (&'static str, Vec<&'static str>, u8, u8, u8) =
            match (shape, td.name, ta.name, tb.name, tc.name) {
                (Some(s @ (".m16n8k16" | ".m16n8k8")), d @ ("f32" | "f16"), a, b, c)
                    if a == b && (a == "f16" || (a == "bf16" && d == "f32")) && c == d && !sat =>
                {
                    let big = s == ".m16n8k16";
                    let acc = if d == "f32" { 4 } else { 2 };
                    let mut mods = vec![if big { "16816" } else { "1688" }];
                    mods.push(if d == "f32" { "F32" } else { "F16" });
                    if a == "bf16" {
                        mods.push("BF16");
                    }
                    let (na, nb) = if big { (4, 2) } else { (2, 1) };
                    ("HMMA", mods, na, nb, acc)
                }
                (
                    Some(s @ (".m16n8k32" | ".m16n8k16")),
                    "s32",
                    a @ ("s8" | "u8"),
                    b @ ("s8" | "u8"),
                    "s32",
                ) => {
                    let big = s == ".m16n8k32";
                    let ty = |t: &str| if t == "s8" { "S8" } else { "U8" };
                    let mut mods = vec![if big { "16832" } else { "16816" }, ty(a), ty(b)];
                    if sat {
                        mods.push("SAT");
                    }
                    let (na, nb) = if big { (4, 2) } else { (2, 1) };
                    ("IMMA", mods, na, nb, 4)
                }
                _ => return false,
            };
        let [d, a, b, c] = op.operands() else {
            return false;
        };
        let (Some(ra), Some(rb), Some(rc)) = (
            self.fragment(a, na),
            self.fragment(b, nb),
            self.fragment(c, nc),
        ) else {
            return true;
        };
        let Some(dsts) = self.fragment_dsts(d, nc) else {
            return true;
        };
        let t = Reg::whole(self.new_vreg(RegClass::Gpr, nc), nc);
        let (oa, ob) = if mnemonic == "IMMA" {
            (use_(ra).with_suffix("ROW"), use_(rb).with_suffix("COL"))
        } else {
            (use_(ra), use_(rb))
        };
        let mut inst = Inst::new(mnemonic, &[], vec![Operand::def(t), oa, ob, use_(rc)]);
        inst.mods = mods;
        self.def_fragment(inst, t, dsts);
        true
    }

    /// The `[a]` of `ldmatrix`/`stmatrix` as a shared memory operand.
    fn matrix_addr(&mut self, op: &PtxOp<'_>, a: &ast::Operand) -> Option<Operand> {
        let addr = self.addr(a)?;
        let what = format!("`{}`", op.ins.opcode.text);
        let space = match Space::of(op.flags) {
            Space::Generic => {
                if let Base::Reg(r) = addr.base {
                    // A generic address of the shared window: its low word.
                    let (reg, off) = self.reg32_off(word_of(r, 0), addr.off);
                    let loc = super::memory::Loc::Shared {
                        reg: Some(reg),
                        off,
                    };
                    return Some(self.mem_operand(&loc));
                }
                Space::Shared
            }
            Space::Shared => Space::Shared,
            _ => return None,
        };
        let loc = self.locate(space, &addr, &what)?;
        if !matches!(loc, super::memory::Loc::Shared { .. }) {
            self.error(
                addr.span,
                format!("ptxc cannot lower {what} of this address yet"),
            );
            return None;
        }
        Some(self.mem_operand(&loc))
    }

    /// `.x1/.x2/.x4` and `.trans` as LDSM/STSM modifiers, with the number of registers.
    fn matrix_mods(op: &PtxOp<'_>) -> Option<(Vec<&'static str>, u8)> {
        if op.ty().map(|t| t.name) != Some("b16") || !op.has(".m8n8") {
            return None;
        }
        let (count, n) = if op.has(".x1") {
            (None, 1)
        } else if op.has(".x2") {
            (Some("2"), 2)
        } else if op.has(".x4") {
            (Some("4"), 4)
        } else {
            return None;
        };
        let mut mods = vec!["16", if op.has(".trans") { "MT88" } else { "M88" }];
        mods.extend(count);
        Some((mods, n))
    }

    fn ldmatrix(&mut self, op: &PtxOp<'_>) -> bool {
        let Some((mods, n)) = Self::matrix_mods(op) else {
            return false;
        };
        let [d, a] = op.operands() else {
            return false;
        };
        let Some(m) = self.matrix_addr(op, a) else {
            return true;
        };
        let Some(dsts) = self.fragment_dsts(d, n) else {
            return true;
        };
        let t = Reg::whole(self.new_vreg(RegClass::Gpr, n), n);
        let mut inst = Inst::new("LDSM", &[], vec![Operand::def(t), m]);
        inst.mods = mods;
        self.def_fragment(inst, t, dsts);
        true
    }

    fn stmatrix(&mut self, op: &PtxOp<'_>) -> bool {
        let Some((mods, n)) = Self::matrix_mods(op) else {
            return false;
        };
        let [a, s] = op.operands() else {
            return false;
        };
        let Some(m) = self.matrix_addr(op, a) else {
            return true;
        };
        let Some(rs) = self.fragment(s, n) else {
            return true;
        };
        let mut inst = Inst::new("STSM", &[], vec![m, use_(rs)]);
        inst.mods = mods;
        self.emit(inst);
        true
    }
}
