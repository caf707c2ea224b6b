//! Texture fetches: `tex.{1d,2d,3d}.v4.{f32,s32,u32}.{f32,s32}`.
//!
//! On sm_90 every texture is bindless: the instruction takes a texture handle in a uniform
//! register pair, whatever the PTX names.
//!
//! * A texture object (`tex.2d… [%rd, {…}]`, a 64-bit handle) passes its low word:
//!   `ULDC UR4, c[0x0][param]; UMOV UR5, URZ`.
//! * A texture reference (`.global .texref t; … [t, {…}]`) passes the word of a *header slot*
//!   that ptxas appends to the kernel's parameters in constant bank 0 and relocates with
//!   `R_CUDA_TEX_HEADER_INDEX t` (slots in order of first use, [`crate::lower::FrameInfo`]).
//!
//! ptxas's recipes, read from its output for the 24 `tex_read_*` kernels of the ZLUDA corpus:
//!
//! * **Float coordinates** → `TEX.LL Rzw, Rxy, Rcoords, Rlod, UR, 0x0, dim` with a level of
//!   detail of −32.0 (`0xc2000000`, below every mip level: level 0). A 1D fetch becomes a 2D
//!   one with `y = 0`. The three 3D coordinates and the level fill one aligned quad.
//! * **Integer coordinates** → `TLD.LZ Rzw, Rxy, Rcoords, UR, 0x0, dim` (a texel fetch at level
//!   zero), coordinates in consecutive registers.
//! * The four results land in two register pairs: `x, y` in the pair at bits [23:16], `z, w` in
//!   the pair at [71:64]; ptxas puts them in one aligned quad so that a `.v4` store reads it
//!   whole, and so does ptxc.
//! * Variable latency: the results come back on a scoreboard (`latency/opcodes.csv`).
//!
//! ptxas constant-folds the −32.0 with `HFMA2.MMA R, -RZ, RZ, -3, 0` (the same bits); ptxc
//! writes it with `MOV`.

use super::address::word_of;
use super::{Cx, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::types::Ty;
use crate::lower::{OpaqueKind, Sym};
use crate::mir::{Inst, OpKind, Operand, PReg, Reg, RegClass};

/// The level of detail ptxas passes to `TEX.LL` for a plain `tex`: −32.0f.
const LOD_MINUS_32: i64 = 0xc200_0000;

impl Cx<'_> {
    pub(super) fn lower_texture(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        match op.opcode {
            "tex" => Some(self.tex(op)),
            _ => None,
        }
    }

    fn tex(&mut self, op: &PtxOp<'_>) -> bool {
        let ins = op.ins;
        let dims = if op.has(".1d") {
            1
        } else if op.has(".2d") {
            2
        } else if op.has(".3d") {
            3
        } else {
            return false;
        };
        let plain = op
            .flags
            .iter()
            .all(|f| matches!(*f, ".1d" | ".2d" | ".3d" | ".v4"));
        let (Some(&dty), Some(&cty)) = (op.types.first(), op.types.get(1)) else {
            return false;
        };
        if !plain || op.types.len() != 2 || dty.bits() != 32 || ins.operands.len() != 2 {
            // `.level`/`.grad`/`.base`, arrays, cubes, f16 results, offsets, depth compare.
            return false;
        }
        let float_coords = cty.name == "f32";
        let ast::Operand::Address(parts, span) = &ins.operands[1] else {
            return false;
        };
        let [handle_op, ast::Operand::Vector(coords, _)] = &parts[..] else {
            self.error(*span, "expected `[texture, {coordinates}]`");
            return false;
        };
        // A 3D fetch takes a four-element vector whose last element is ignored (PTX ISA).
        let want: &[usize] = if dims == 3 { &[4, 3] } else { &[dims] };
        if !want.contains(&coords.len()) {
            self.error(
                *span,
                format!(
                    "a {dims}D fetch takes {} coordinates, not {}",
                    want[0],
                    coords.len()
                ),
            );
            return false;
        }
        let coords = &coords[..dims];
        let Some(dsts) = self.dst_list(&ins.operands[0]) else {
            return false;
        };
        if dsts.len() != 4 {
            self.error(ins.operands[0].span(), "tex.v4 writes four registers");
            return false;
        }
        let Some(handle) = self.texture_handle(handle_op) else {
            return false;
        };
        let mut vals = Vec::new();
        for c in coords {
            let Some(v) = self.src(c, cty, 1) else {
                return false;
            };
            vals.push(v);
        }

        // The coordinate tuple (and, for TEX.LL, the level of detail).
        let (mnemonic, modifier, dim_name, ra, rb) = if float_coords {
            let lod = Val::Imm(LOD_MINUS_32);
            match dims {
                1 | 2 => {
                    if dims == 1 {
                        vals.push(Val::Imm(0));
                    }
                    let xy = self.tuple(&vals);
                    let l = self.to_reg(lod, 1);
                    ("TEX", "LL", "2D", xy, Some(l))
                }
                _ => {
                    vals.push(lod);
                    let q = self.tuple(&vals);
                    let Reg::Virt { vreg, .. } = q else {
                        return false;
                    };
                    let xyz = Reg::Virt {
                        vreg,
                        first: 0,
                        count: 3,
                    };
                    ("TEX", "LL", "3D", xyz, Some(Reg::word(vreg, 3)))
                }
            }
        } else {
            let r = if dims == 1 {
                self.reg_of(vals[0], 1)
            } else {
                self.tuple(&vals)
            };
            ("TLD", "LZ", ["1D", "2D", "3D"][dims - 1], r, None)
        };

        let out = self.new_vreg(RegClass::Gpr, 4);
        let xy = Reg::Virt {
            vreg: out,
            first: 0,
            count: 2,
        };
        let zw = Reg::Virt {
            vreg: out,
            first: 2,
            count: 2,
        };
        let mut ops = vec![Operand::def(zw), Operand::def(xy), Operand::use_(ra)];
        ops.extend(rb.map(Operand::use_));
        ops.push(Operand::use_(handle));
        ops.push(Operand::imm(0));
        ops.push(Operand::new(OpKind::Sym(dim_name)));
        self.emit(Inst::new(mnemonic, &[modifier], ops));

        let t = Reg::whole(out, 4);
        for (i, dst) in dsts.into_iter().enumerate() {
            let Some(dst) = dst else { continue };
            self.assign_result(dst, Val::Reg(word_of(t, i as u8)));
        }
        true
    }

    /// A fresh aligned tuple holding `vals`, one word each.
    fn tuple(&mut self, vals: &[Val]) -> Reg {
        let words = vals.len() as u8;
        let v = self.new_vreg(RegClass::Gpr, words);
        for (i, x) in vals.iter().enumerate() {
            self.set_word(Reg::word(v, i as u8), *x);
        }
        Reg::whole(v, words)
    }

    /// The texture handle as a uniform pair: the low word of a texture object, or a texture
    /// reference's header slot; the high word is zero.
    fn texture_handle(&mut self, op: &ast::Operand) -> Option<Reg> {
        let ast::Operand::Expr(e) = op else {
            self.error(
                op.span(),
                "expected a texture reference or a 64-bit texture object",
            );
            return None;
        };
        let pair = self.new_vreg(RegClass::Ugpr, 2);
        let lo = Reg::word(pair, 0);
        let name = e.as_name();
        let sym = name.and_then(|n| {
            self.lookup_reg(&n.text)
                .is_none()
                .then(|| self.sym(&n.text))
                .flatten()
        });
        let ldc = |offset: i64| {
            Inst::new(
                "ULDC",
                &[],
                vec![
                    Operand::def(lo),
                    Operand::new(OpKind::CBank {
                        bank: 0,
                        base: None,
                        offset,
                    }),
                ],
            )
        };
        match sym {
            Some(Sym::Opaque {
                name,
                kind: OpaqueKind::Texture,
            }) => {
                let slot = match self.frame.header_slots.iter().position(|s| *s == name) {
                    Some(i) => i,
                    None => {
                        self.frame.header_slots.push(name);
                        self.frame.header_slots.len() - 1
                    }
                };
                let off = self.frame.header_slot_offset(slot);
                self.emit_unguarded(ldc(i64::from(off)));
            }
            Some(Sym::Opaque { name, .. }) => {
                self.error(e.span(), format!("`{name}` is not a texture reference"));
                return None;
            }
            Some(Sym::Param { cbank_offset, .. }) => {
                // `tex [param, …]`: the handle straight from the parameter.
                self.emit_unguarded(ldc(i64::from(cbank_offset)));
            }
            _ => {
                let v = self.src(op, Ty::parse(".u64")?, 2)?;
                match v {
                    Val::CBank(off) => self.emit_unguarded(ldc(off)),
                    Val::Reg(r) => {
                        let low = word_of(r, 0);
                        let Some(u) = self.cbank_word(low).map(ldc).or_else(|| {
                            self.uniform_of(low).map(|u| {
                                Inst::new("UMOV", &[], vec![Operand::def(lo), Operand::use_(u)])
                            })
                        }) else {
                            self.error(
                                e.span(),
                                "ptxc cannot lower `tex` with a texture handle that may differ \
                                 between the threads of a warp yet",
                            );
                            return None;
                        };
                        self.emit_unguarded(u);
                    }
                    _ => {
                        self.error(
                            e.span(),
                            "expected a texture reference or a 64-bit texture object",
                        );
                        return None;
                    }
                }
            }
        }
        self.emit_unguarded(Inst::new(
            "UMOV",
            &[],
            vec![
                Operand::def(Reg::word(pair, 1)),
                Operand::use_(Reg::phys(PReg::URZ)),
            ],
        ));
        Some(Reg::whole(pair, 2))
    }

    /// The constant-bank-0 offset a 32-bit register was loaded from, when it is a word of an
    /// `LDC` of a kernel parameter.
    fn cbank_word(&self, r: Reg) -> Option<i64> {
        let Reg::Virt { vreg, first, .. } = r else {
            return None;
        };
        let def = self.def_of.inst(vreg)?;
        if def.mnemonic != "LDC" {
            return None;
        }
        def.ops.iter().find_map(|o| match o.kind {
            OpKind::CBank {
                bank: 0,
                base: None,
                offset,
            } => Some(offset + 4 * i64::from(first)),
            _ => None,
        })
    }
}
