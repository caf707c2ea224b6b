//! Tensor maps (TMA descriptors) edited in shared memory and published to global memory, with
//! the recipes ptxas 13.1 uses (probe `tests/sass-probes/ptx/tensormap.ptx`, checked by
//! `tests/tests/isel_tma.rs`):
//!
//! | PTX | SASS |
//! |---|---|
//! | `tensormap.replace.tile.global_address.shared::cta.b1024.b64 [a], v` | `STS.64 [a], v` |
//! | `tensormap.replace.tile.global_dim… [a], i, v` | `STS [a+0x20+4i], v-1` |
//! | `tensormap.replace.tile.<bit field>… [a], (i,) v` | `LDS t, [a+w]; LOP3.LUT t, t, mask, v<<s, 0xb8; STS [a+w], t` |
//! | `tensormap.replace.tile.global_stride… [a], i, v` | `STS [a+0xc+4i], v>>4` and the bit field of `v>>36` |
//! | `tensormap.cp_fenceproxy.global.shared::cta….sync.aligned [g], [s], 128` | `S2R lane; LDS t, [s+4·lane]; ATOMG.E.EXCH.STRONG.GPU PT, RZ, [g+4·lane], t` |
//! | `fence.proxy.tensormap::generic.acquire.* [g], 128` | `DEPBAR {5,4,3,2,1,0}; UTMACCTL.IV [UR g]; UTMACMDFLUSH` |
//!
//! The bit fields of the 128-byte tensor map, as ptxas writes them (word offset, first bit,
//! width, and what is stored):
//!
//! | field | word | bits | stored |
//! |---|---|---|---|
//! | `rank` | 0x8 | 4..7 | `v` |
//! | `elemtype` | 0x8 | 7..11 | `v` |
//! | `interleave_layout` | 0x8 | 11..13 | `v` |
//! | `swizzle_mode` | 0x8 | 13..15 | `v`, and bit 22 cleared |
//! | `fill_mode` | 0x8 | 15 | `v` |
//! | `global_stride[i]` (high part) | 0x1c | 4i..4i+4 | `v >> 36` |
//! | `element_stride[i]` | 0x34 | 3i..3i+3 | `v - 1` |
//! | `box_dim[i]` | byte 0x37+i | 8 bits | `v - 1` |
//!
//! A constant value is folded into the mask form ptxas uses: `MOV m, mask;
//! LOP3.LUT t, t, field, m, 0xd8` (`LOP3.LUT t, t, mask, RZ, 0xb8` for 0).

use super::address::{Base, Space, rz, use_, word_of};
use super::memory::Loc;
use super::{Cx, PtxOp, Val};
use crate::frontend::ast;
use crate::frontend::types::Ty;
use crate::mir::{Inst, MemPrefix, MemTerm, OpKind, Operand, PReg, Reg, RegClass};

/// A bit field of one 32-bit word of the tensor map.
#[derive(Clone, Copy)]
struct BitField {
    /// Byte offset of the word.
    word: i64,
    shift: u32,
    width: u32,
    /// Added to the value before it is stored (`-1` for sizes and strides).
    bias: i64,
}

impl BitField {
    fn mask(self) -> i64 {
        (((1u64 << self.width) - 1) << self.shift) as i64
    }
}

impl Cx<'_> {
    /// The tensor-map family.
    pub(super) fn lower_tensormap(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        Some(match op.opcode {
            "tensormap.replace" => self.tensormap_replace(op),
            "tensormap.cp_fenceproxy" => self.tensormap_cp_fenceproxy(op),
            "fence" if op.has(".proxy") && op.has(".tensormap::generic") && op.has(".acquire") => {
                self.tensormap_acquire(op)
            }
            _ => return None,
        })
    }

    /// The `[a]` of a tensor map in shared memory, as a location (`[R+off]`).
    fn tensormap_loc(&mut self, op: &PtxOp<'_>, a: &ast::Operand) -> Option<Loc> {
        let addr = self.addr(a)?;
        let what = format!("`{}`", op.ins.opcode.text);
        let loc = self.locate(Space::Shared, &addr, &what)?;
        if !matches!(loc, Loc::Shared { .. }) {
            self.error(
                addr.span,
                format!("ptxc cannot lower {what} of this address yet"),
            );
            return None;
        }
        Some(loc)
    }

    fn shared_at(&mut self, loc: &Loc, byte: i64) -> Operand {
        let Loc::Shared { reg, off } = loc else {
            unreachable!("tensor maps are in shared memory")
        };
        self.mem_operand(&Loc::Shared {
            reg: *reg,
            off: off + byte,
        })
    }

    /// An ordinal operand (`0x1` in `box_dim [a], 0x1, v`): ptxas requires a constant.
    fn ordinal(&mut self, op: &ast::Operand, max: i64) -> Option<i64> {
        let k = match op {
            ast::Operand::Expr(e) => crate::frontend::check::eval_const(e).map(|k| k as i64),
            _ => None,
        };
        match k {
            Some(k) if (0..=max).contains(&k) => Some(k),
            _ => {
                self.error(
                    op.span(),
                    format!(
                        "ptxc cannot lower a tensor-map ordinal other than a constant 0..={max}"
                    ),
                );
                None
            }
        }
    }

    /// `LDS t, [w]; LOP3.LUT t, t, mask, v<<s, 0xb8; STS [w], t` (or the constant forms).
    fn replace_bits(&mut self, loc: &Loc, f: BitField, v: Val) {
        let mem = self.shared_at(loc, f.word);
        let old = self.gpr();
        self.emit(Inst::new("LDS", &[], vec![Operand::def(old), mem.clone()]));
        let new = self.gpr();
        let lop = |d: Reg, a: Reg, b: Operand, c: Operand, lut: i64| {
            Inst::new(
                "LOP3",
                &["LUT"],
                vec![
                    Operand::def(d),
                    use_(a),
                    b,
                    c,
                    Operand::imm(lut),
                    Operand::use_(Reg::phys(PReg::PT)).inverted(),
                ],
            )
        };
        match self.const_of(v) {
            Some(k) => {
                let field = ((k + f.bias) << f.shift) & f.mask() & 0xffff_ffff;
                if field == 0 {
                    // (mask & RZ) | (~mask & old)
                    self.emit(lop(new, old, Operand::imm(f.mask()), rz(), 0xb8));
                } else {
                    // (m & field) | (~m & old), the mask in a register (probe: `rank … 4`
                    // → `MOV R3, 0x70; LOP3.LUT R0, R0, 0x40, R3, 0xd8, !PT`).
                    let m = self.gpr();
                    self.emit_unguarded(Inst::new(
                        "MOV",
                        &[],
                        vec![Operand::def(m), Operand::imm(f.mask())],
                    ));
                    self.emit(lop(new, old, Operand::imm(field), use_(m), 0xd8));
                }
            }
            None => {
                let r = word_of(self.to_reg(v, 1), 0);
                let biased = if f.bias != 0 {
                    let d = self.gpr();
                    self.emit_unguarded(Inst::new(
                        "IADD3",
                        &[],
                        vec![
                            Operand::def(d),
                            use_(r),
                            Operand::imm(f.bias & 0xffff_ffff),
                            rz(),
                        ],
                    ));
                    d
                } else {
                    r
                };
                let shifted = if f.shift != 0 {
                    let d = self.gpr();
                    self.emit_unguarded(Inst::new(
                        "SHF",
                        &["L", "U32"],
                        vec![
                            Operand::def(d),
                            use_(biased),
                            Operand::imm(i64::from(f.shift)),
                            rz(),
                        ],
                    ));
                    d
                } else {
                    biased
                };
                // (mask & shifted) | (~mask & old)
                self.emit(lop(new, old, Operand::imm(f.mask()), use_(shifted), 0xb8));
            }
        }
        self.emit(Inst::new("STS", &[], vec![mem, use_(new)]));
    }

    /// `tensormap.replace.tile.<field>.shared::cta.b1024.<b32|b64> [a], (ordinal,) value`.
    fn tensormap_replace(&mut self, op: &PtxOp<'_>) -> bool {
        if !op.has(".tile") || !op.has(".shared::cta") {
            return false;
        }
        let b32 = Ty::parse("b32").expect("b32");
        let b64 = Ty::parse("b64").expect("b64");
        let ops = op.operands();
        let field = [
            ".global_address",
            ".rank",
            ".box_dim",
            ".global_dim",
            ".global_stride",
            ".element_stride",
            ".elemtype",
            ".interleave_layout",
            ".swizzle_mode",
            ".fill_mode",
        ]
        .into_iter()
        .find(|f| op.has(f));
        let Some(field) = field else { return false };
        let indexed = matches!(
            field,
            ".box_dim" | ".global_dim" | ".global_stride" | ".element_stride"
        );
        let (a, ord, v) = match (indexed, ops) {
            (true, [a, i, v]) => (a, Some(i), v),
            (false, [a, v]) => (a, None, v),
            _ => return false,
        };
        let Some(loc) = self.tensormap_loc(op, a) else {
            return true;
        };
        let max = if field == ".global_stride" { 3 } else { 4 };
        let i = match ord {
            Some(o) => match self.ordinal(o, max) {
                Some(i) => i,
                None => return true,
            },
            None => 0,
        };
        let wide = matches!(field, ".global_address" | ".global_stride");
        let Some(v) = self.val(v, if wide { b64 } else { b32 }) else {
            return true;
        };
        let bits = |word: i64, shift: u32, width: u32, bias: i64| BitField {
            word,
            shift,
            width,
            bias,
        };
        match field {
            ".global_address" => {
                // probe: `STS.64 [UR4], R2` (and `[UR4+0x80]` for `[%rd3+128]`).
                let r = self.to_reg(v, 2);
                let mem = self.shared_at(&loc, 0);
                self.emit(Inst::new("STS", &["64"], vec![mem, use_(r)]));
            }
            ".global_dim" => {
                // probe: `IADD3 R0, R0, -0x1, RZ; STS [UR4+0x20], R0` (0x30 for ordinal 4).
                let r = match self.const_of(v) {
                    Some(k) => self.to_reg(Val::Imm((k - 1) & 0xffff_ffff), 1),
                    None => {
                        let r = word_of(self.to_reg(v, 1), 0);
                        let d = self.gpr();
                        self.emit_unguarded(Inst::new(
                            "IADD3",
                            &[],
                            vec![Operand::def(d), use_(r), Operand::imm(0xffff_ffff), rz()],
                        ));
                        d
                    }
                };
                let mem = self.shared_at(&loc, 0x20 + 4 * i);
                self.emit(Inst::new("STS", &[], vec![mem, use_(r)]));
            }
            ".global_stride" => {
                // probe: `SHF.R.U64 lo, v.lo, 0x4, v.hi; STS [UR4+0xc+4i], lo;
                // SHF.R.U32.HI hi, RZ, 0x4, v.hi` and `hi` into bits 4i..4i+4 of word 0x1c.
                let r = self.to_reg(v, 2);
                let lo = self.gpr();
                self.emit_unguarded(Inst::new(
                    "SHF",
                    &["R", "U64"],
                    vec![
                        Operand::def(lo),
                        use_(word_of(r, 0)),
                        Operand::imm(4),
                        use_(word_of(r, 1)),
                    ],
                ));
                let hi = self.gpr();
                self.emit_unguarded(Inst::new(
                    "SHF",
                    &["R", "U32", "HI"],
                    vec![Operand::def(hi), rz(), Operand::imm(4), use_(word_of(r, 1))],
                ));
                let mem = self.shared_at(&loc, 0xc + 4 * i);
                self.emit(Inst::new("STS", &[], vec![mem, use_(lo)]));
                self.replace_bits(&loc, bits(0x1c, 4 * i as u32, 4, 0), Val::Reg(hi));
            }
            ".box_dim" => {
                // probe: ordinal 0 → bits 24..32 of word 0x34, 1 → bits 0..8 of 0x38, …
                let byte = 0x37 + i;
                let f = bits(byte & !3, 8 * (byte & 3) as u32, 8, -1);
                self.replace_bits(&loc, f, v);
            }
            ".element_stride" => {
                // probe: ordinal 0 → mask 0x7, 1 → 0x38, 4 → 0x7000 of word 0x34.
                self.replace_bits(&loc, bits(0x34, 3 * i as u32, 3, -1), v);
            }
            ".rank" => self.replace_bits(&loc, bits(0x8, 4, 3, 0), v),
            ".elemtype" => self.replace_bits(&loc, bits(0x8, 7, 4, 0), v),
            ".interleave_layout" => self.replace_bits(&loc, bits(0x8, 11, 2, 0), v),
            ".swizzle_mode" => {
                self.replace_bits(&loc, bits(0x8, 13, 2, 0), v);
                // ptxas clears bit 22 of the word with every swizzle mode (probe: modes 0–3
                // all end in `LOP3.LUT R0, R0, 0x400000, RZ, 0xb8, !PT`).
                self.replace_bits(&loc, bits(0x8, 22, 1, 0), Val::Imm(0));
            }
            ".fill_mode" => self.replace_bits(&loc, bits(0x8, 15, 1, 0), v),
            _ => return false,
        }
        true
    }

    /// Whether the size operand `n` of `what` is the constant 128 (a tensor map's size, the only
    /// one PTX allows today); an error naming `what` otherwise.
    fn tensormap_size_128(&mut self, n: &ast::Operand, what: &str) -> bool {
        let size = match n {
            ast::Operand::Expr(e) => crate::frontend::check::eval_const(e),
            _ => None,
        };
        if size != Some(128) {
            self.error(
                n.span(),
                format!("ptxc cannot lower `{what}` of a size other than 128"),
            );
        }
        size == Some(128)
    }

    /// `tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.<scope>
    /// .sync.aligned [g], [s], 128`: each lane copies one word (probe, every scope alike):
    ///
    /// ```text
    /// S2R R0, SR_LANEID; IMAD.SHL.U32 R0, R0, 0x4, RZ; LDS R5, [R0+UR4]
    /// IADD3 R2, P0, R0, UR4, RZ; IADD3.X R3, RZ, UR5, RZ, P0, !PT
    /// ATOMG.E.EXCH.STRONG.GPU PT, RZ, [R2], R5
    /// ```
    fn tensormap_cp_fenceproxy(&mut self, op: &PtxOp<'_>) -> bool {
        let [g, s, n] = op.operands() else {
            return false;
        };
        if !self.tensormap_size_128(n, "tensormap.cp_fenceproxy") {
            return true;
        }
        let Some(gaddr) = self.addr(g) else {
            return true;
        };
        let what = format!("`{}`", op.ins.opcode.text);
        let Some(gloc) = self.locate(Space::Global, &gaddr, &what) else {
            return true;
        };
        let Loc::Desc {
            reg: greg,
            off: goff,
            ..
        } = gloc
        else {
            return false;
        };
        let Some(sloc) = self.tensormap_loc(op, s) else {
            return true;
        };
        let lane = self.gpr();
        self.emit_unguarded(Inst::new(
            "S2R",
            &[],
            vec![
                Operand::def(lane),
                Operand::new(OpKind::SReg(super::sr::LANEID)),
            ],
        ));
        let four = self.gpr();
        self.emit_unguarded(Inst::new(
            "SHF",
            &["L", "U32"],
            vec![Operand::def(four), use_(lane), Operand::imm(2), rz()],
        ));
        let Loc::Shared {
            reg: sreg,
            off: soff,
        } = sloc
        else {
            return false;
        };
        let sword = match sreg {
            Some(r) => {
                let d = self.gpr();
                self.emit_unguarded(Inst::new(
                    "IADD3",
                    &[],
                    vec![Operand::def(d), use_(four), use_(r), rz()],
                ));
                d
            }
            None => four,
        };
        let word = self.gpr();
        let mem = self.mem_operand(&Loc::Shared {
            reg: Some(sword),
            off: soff,
        });
        self.emit(Inst::new("LDS", &[], vec![Operand::def(word), mem]));
        // The global word address: g + off + 4·lane.
        let base = if goff != 0 {
            self.add64(greg, goff)
        } else {
            greg
        };
        let d = self.new_vreg(RegClass::Gpr, 2);
        let carry = self.pred();
        self.emit_unguarded(Inst::new(
            "IADD3",
            &[],
            vec![
                Operand::def(Reg::word(d, 0)),
                Operand::def(carry),
                use_(four),
                use_(word_of(base, 0)),
                rz(),
            ],
        ));
        self.emit_unguarded(Inst::new(
            "IADD3",
            &["X"],
            vec![
                Operand::def(Reg::word(d, 1)),
                rz(),
                use_(word_of(base, 1)),
                rz(),
                use_(carry),
                Operand::use_(Reg::phys(PReg::PT)).inverted(),
            ],
        ));
        let gmem = Operand::new(OpKind::Mem {
            prefix: MemPrefix::None,
            terms: vec![MemTerm::Reg(Reg::whole(d, 2), None)],
        });
        // Under a per-thread guard ptxas branches around the copy and waits for the whole warp
        // right before it: `@P0 BRA after; …; WARPSYNC.ALL; ATOMG` (probes
        // `docs/passes/examples/reconverge/tensormap.ptx`).
        self.warpsync_all_if_guarded();
        self.emit(Inst::new(
            "ATOMG",
            &["E", "EXCH", "STRONG", "GPU"],
            vec![
                Operand::def(Reg::phys(PReg::PT)),
                Operand::def(Reg::phys(PReg::RZ)),
                gmem,
                use_(word),
            ],
        ));
        true
    }

    /// `fence.proxy.tensormap::generic.acquire.<scope> [g], 128` (probe, every scope alike):
    /// `DEPBAR {5,4,3,2,1,0}; UTMACCTL.IV [UR]; UTMACMDFLUSH; NOP`, the address in uniform
    /// registers (once per distinct address when it differs between threads).
    fn tensormap_acquire(&mut self, op: &PtxOp<'_>) -> bool {
        let [g, n] = op.operands() else {
            return false;
        };
        if !self.tensormap_size_128(n, "fence.proxy.tensormap::generic.acquire") {
            return true;
        }
        let Some(a) = self.addr(g) else {
            return true;
        };
        let addr = match a.base {
            Base::Reg(r) if r.count() == 2 && a.off == 0 => r,
            Base::Reg(r) if r.count() == 2 => self.add64(r, a.off),
            _ => {
                self.error(
                    a.span,
                    "ptxc cannot lower `fence.proxy.tensormap` of an address other than a 64-bit register yet",
                );
                return true;
            }
        };
        self.under_guard(move |cx| {
            cx.emit(Inst::new(
                "DEPBAR",
                &[],
                vec![Operand::new(OpKind::SbSet(0x3f))],
            ));
            // One invalidation per distinct address: the ELECT loop only when the address is
            // not provably warp-uniform, whatever the guard (probes `acq_*` of
            // `docs/passes/examples/reconverge/tensormap.ptx`: a parameter, or a parameter plus
            // a `%ctaid` offset built word by word, issue once under `tid < 32` and `tid == 0`;
            // only a `%tid`-derived address loops).
            match cx.uniform_pair(addr).or_else(|| cx.uniform_of(addr)) {
                Some(u) => cx.emit(Inst::new("UTMACCTL", &["IV"], vec![Self::ur_mem(u)])),
                None => cx.per_thread_uniform_loop(vec![addr], |cx, u| {
                    cx.emit(Inst::new("UTMACCTL", &["IV"], vec![Self::ur_mem(u[0])]));
                }),
            }
            cx.emit(Inst::new("UTMACMDFLUSH", &[], vec![]));
            // ptxas waits for the flush on a `NOP` of its own (probes `acqst`, `acqbar`: `NOP`
            // with wait mask 0x8 before the `STG` or `BAR.SYNC`; every `UTMACCTL.IV` of the
            // corpora's listings is followed so).
            cx.emit(Inst::new("NOP", &[], vec![]));
        });
        true
    }
}
