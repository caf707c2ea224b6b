//! `cp.async` (sm_80's asynchronous global → shared copy) and its groups, with ptxas 13.1's
//! recipes (probes in `tests/sass-probes/ptx/cp_async.ptx`):
//!
//! * `cp.async.{ca,cg}.shared.global [d], [s], N` → `LDGSTS.E[.BYPASS][.64|.128] [Rd+off],
//!   desc[UR][Rs.64+off]` (`.cg` is `.BYPASS`; `.L2::64B`/`.L2::128B` are `.LTC64B`/`.LTC128B`).
//!   The global offset field is 12 bits signed; larger offsets go into the register.
//! * The first `LDGSTS` of every block is preceded by three `@!PT LDS RZ, [RZ]`, instructions
//!   that never run.
//! * With a constant src-size `k < N` (zero fill): `.ZFILL`, with `N − k` added to the global
//!   address (the low bits of a size-aligned address count the bytes to zero); `k = 0` is the
//!   plain copy with a last operand `!PT` (nothing is read); `k = N` is the plain copy.
//! * With a register src-size `n`: `z = (N − n) & (N − 1)`, the address (with its offset) plus
//!   `z`, and the predicate operand `n ≠ 0`: `LDGSTS…ZFILL [..], desc[..][R.64], P`.
//! * `cp.async.commit_group` → `LDGDEPBAR` (it counts a group on SB0);
//!   `cp.async.wait_group N` → `DEPBAR.LE SB0, N`; `cp.async.wait_all` → both, with `N = 0`.
//!   The scoreboard pass gives `LDGDEPBAR` SB0 and keeps SB0 free for it
//!   (`emit/scoreboard.rs`).

use super::address::{Space, pt, rz, use_, word_of};
use super::memory::Loc;
use super::{Cx, PtxOp};
use crate::frontend::ast;
use crate::frontend::types::Ty;
use crate::mir::{Guard, Inst, OpKind, Operand, PReg, Reg, RegClass};

/// The 12-bit signed global offset of `LDGSTS`.
fn fits_imm12(v: i64) -> bool {
    (-0x800..0x800).contains(&v)
}

impl Cx<'_> {
    /// The `cp.async` family (not the bulk copies, which are in `cluster.rs`).
    pub(super) fn lower_async_copy(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        Some(match op.opcode {
            "cp.async" => self.cp_async(op),
            "cp.async.commit_group" => {
                self.emit(Inst::new("LDGDEPBAR", &[], vec![]));
                true
            }
            "cp.async.wait_group" => {
                let [n] = op.operands() else {
                    return Some(false);
                };
                let ast::Operand::Expr(e) = n else {
                    return Some(false);
                };
                let Some(k) =
                    crate::frontend::check::eval_const(e).and_then(|k| i64::try_from(k).ok())
                else {
                    return Some(false);
                };
                if !(0..64).contains(&k) {
                    return Some(false);
                }
                self.depbar_sb0(k);
                true
            }
            "cp.async.wait_all" => {
                self.emit(Inst::new("LDGDEPBAR", &[], vec![]));
                self.depbar_sb0(0);
                true
            }
            "setmaxnreg" => self.setmaxnreg(op),
            _ => return None,
        })
    }

    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 N` (probes `tests/sass-probes/ptx/setmaxnreg.ptx`,
    /// `pyptx/fa_ws_pingpong_sm90a`):
    ///
    /// * `dec` → `WARPSYNC.ALL; USETMAXREG.DEALLOC.CTAPOOL N`;
    /// * `inc` → a loop until the pool grants the registers: `L: WARPSYNC.ALL;
    ///   USETMAXREG.TRY_ALLOC.CTAPOOL UP0, N; PLOP3.LUT P0, PT, PT, PT, UP0, 0x80, 0x0;
    ///   @!P0 BRA L`.
    ///
    /// ptxas writes a `NOP` for the `WARPSYNC.ALL` where it knows the warp converged, or
    /// nothing (`fa_ws_pingpong`, after a `shfl.sync`-uniform branch, after `BAR.SYNC`); the
    /// `reconverge` pass does the same where it proves the warp converged
    /// (`drop_converged_warpsyncs`).
    /// Without `.maxnreg` ptxas ignores `setmaxnreg` (warning C7508: the register count at
    /// entry is unknown) and so does ptxc.
    fn setmaxnreg(&mut self, op: &PtxOp<'_>) -> bool {
        let [n] = op.operands() else { return false };
        let ast::Operand::Expr(e) = n else {
            return false;
        };
        let Some(n) = crate::frontend::check::eval_const(e).and_then(|k| i64::try_from(k).ok())
        else {
            return false;
        };
        if !(24..=256).contains(&n) || n % 8 != 0 {
            self.error(
                e.span(),
                format!("`setmaxnreg` needs a multiple of 8 in 24..=256, not {n}"),
            );
            return true;
        }
        if self.guard.is_some() {
            self.error(
                op.ins.opcode.span,
                "ptxc cannot lower a guarded `setmaxnreg` yet",
            );
            return true;
        }
        if !self.f.setmaxnreg {
            return true;
        }
        let warpsync = || Inst::new("WARPSYNC", &["ALL"], vec![]);
        if op.has(".dec") {
            self.emit(warpsync());
            self.emit(Inst::new(
                "USETMAXREG",
                &["DEALLOC", "CTAPOOL"],
                vec![Operand::imm(n)],
            ));
            return true;
        }
        let (head, after) = self.open_self_loop();
        self.emit(warpsync());
        let up = self.new_vreg(RegClass::UPred, 1);
        self.emit(Inst::new(
            "USETMAXREG",
            &["TRY_ALLOC", "CTAPOOL"],
            vec![Operand::def(Reg::whole(up, 1)), Operand::imm(n)],
        ));
        let p = self.pred();
        self.emit(Inst::new(
            "PLOP3",
            &["LUT"],
            vec![
                Operand::def(p),
                Operand::def(Reg::phys(PReg::PT)),
                pt(),
                pt(),
                use_(Reg::whole(up, 1)),
                Operand::imm(0x80),
                Operand::imm(0),
            ],
        ));
        self.emit(Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(head))]).guarded(p, true));
        self.f.block_mut(head).fallthrough = Some(after);
        self.seal(head);
        self.switch_to(after, true);
        true
    }

    /// `DEPBAR.LE SB0, k`: at most `k` LDGDEPBAR groups still in flight.
    fn depbar_sb0(&mut self, k: i64) {
        self.emit(Inst::new(
            "DEPBAR",
            &["LE"],
            vec![Operand::new(OpKind::Sym("SB0")), Operand::imm(k)],
        ));
    }

    /// `cp.async.{ca,cg}.shared{::cta}.global [d], [s], cp-size{, src-size}`.
    fn cp_async(&mut self, op: &PtxOp<'_>) -> bool {
        let what = format!("`{}`", op.ins.opcode.text);
        let span = op.ins.opcode.span;
        if op.has(".L2::cache_hint") || op.has(".L2::256B") {
            self.error(
                span,
                format!(
                    "ptxc cannot lower `cp.async` with {} yet",
                    if op.has(".L2::cache_hint") {
                        "`.L2::cache_hint`"
                    } else {
                        "`.L2::256B`"
                    }
                ),
            );
            return true;
        }
        let (d, s, size, src_size) = match op.operands() {
            [d, s, n] => (d, s, n, None),
            [d, s, n, k] => (d, s, n, Some(k)),
            _ => return false,
        };
        let ast::Operand::Expr(e) = size else {
            return false;
        };
        let Some(n) = crate::frontend::check::eval_const(e).and_then(|k| i64::try_from(k).ok())
        else {
            return false;
        };
        let bypass = op.has(".cg");
        let size_mod = match (n, bypass) {
            (4, false) => None,
            (8, false) => Some("64"),
            (16, _) => Some("128"),
            _ => {
                self.error(
                    span,
                    format!(
                        "`cp.async{}` cannot copy {n} bytes",
                        if bypass { ".cg" } else { ".ca" }
                    ),
                );
                return true;
            }
        };
        // The zero fill: a constant or a register src-size.
        enum Fill {
            None,
            All,
            Bytes(i64),
            Reg(Reg),
        }
        let fill = match src_size {
            None => Fill::None,
            Some(ast::Operand::Expr(e)) => {
                match crate::frontend::check::eval_const(e).map(|k| k as i64) {
                    Some(k) if k >= n => Fill::None,
                    Some(0) => Fill::All,
                    Some(k) if k > 0 => Fill::Bytes(n - k),
                    Some(_) => return false,
                    None => {
                        if self.lookup_reg_ty(e) == Some(true) {
                            self.error(
                                e.span(),
                                "ptxc cannot lower `cp.async` with an ignore-src predicate yet",
                            );
                            return true;
                        }
                        match self.src(src_size.unwrap(), Ty::parse("u32").expect("u32"), 1) {
                            Some(v) => Fill::Reg(self.to_reg(v, 1)),
                            None => return true,
                        }
                    }
                }
            }
            Some(_) => return false,
        };
        // The shared destination.
        let Some(da) = self.addr(d) else { return true };
        let Some(dloc) = self.locate(Space::Shared, &da, &what) else {
            return true;
        };
        let Loc::Shared {
            reg: dreg,
            off: doff,
        } = dloc
        else {
            self.error(da.span, format!("{what} needs a shared destination"));
            return true;
        };
        // The global source.
        let Some(sa) = self.addr(s) else { return true };
        let Some(sloc) = self.locate(Space::Global, &sa, &what) else {
            return true;
        };
        let Loc::Desc {
            reg: mut sreg,
            off: mut soff,
            ..
        } = sloc
        else {
            self.error(sa.span, format!("{what} needs a global source"));
            return true;
        };
        let mut pred: Option<Operand> = None;
        let mut zfill = false;
        match fill {
            Fill::None => {}
            Fill::All => pred = Some(pt().inverted()),
            Fill::Bytes(z) => {
                soff += z;
                zfill = true;
            }
            Fill::Reg(k) => {
                zfill = true;
                // z = (N − n) & (N − 1); p = n ≠ 0.
                let t = self.gpr();
                self.emit_unguarded(Inst::new(
                    "IADD3",
                    &[],
                    vec![Operand::def(t), use_(k).negated(), Operand::imm(n), rz()],
                ));
                let z = self.gpr();
                self.emit_unguarded(Inst::new(
                    "LOP3",
                    &["LUT"],
                    vec![
                        Operand::def(z),
                        use_(t),
                        Operand::imm(n - 1),
                        rz(),
                        Operand::imm(0xc0),
                        pt().inverted(),
                    ],
                ));
                let p = self.pred();
                self.emit_unguarded(Inst::new(
                    "ISETP",
                    &["NE", "U32", "AND"],
                    vec![
                        Operand::def(p),
                        Operand::def(Reg::phys(PReg::PT)),
                        use_(k),
                        rz(),
                        pt(),
                    ],
                ));
                sreg = self.add64_zext(sreg, soff, z);
                soff = 0;
                pred = Some(use_(p));
            }
        }
        if !fits_imm12(soff) {
            sreg = self.add64(sreg, soff);
            soff = 0;
        }
        // Three loads that never run before the first LDGSTS of a block (ptxas does this).
        if !self
            .f
            .block(self.cur)
            .insts
            .iter()
            .any(|i| i.mnemonic == "LDGSTS")
        {
            for _ in 0..3 {
                let mut lds = Inst::new(
                    "LDS",
                    &[],
                    vec![
                        Operand::def(Reg::phys(PReg::RZ)),
                        self.mem_operand(&Loc::Shared {
                            reg: Some(Reg::phys(PReg::RZ)),
                            off: 0,
                        }),
                    ],
                );
                lds.guard = Some(Guard {
                    pred: Reg::phys(PReg::PT),
                    neg: true,
                });
                self.emit_unguarded(lds);
            }
        }
        let mut mods: Vec<&'static str> = vec!["E"];
        if bypass {
            mods.push("BYPASS");
        }
        if op.has(".L2::64B") {
            mods.push("LTC64B");
        } else if op.has(".L2::128B") {
            mods.push("LTC128B");
        }
        mods.extend(size_mod);
        if zfill {
            mods.push("ZFILL");
        }
        let dst = self.mem_operand(&Loc::Shared {
            reg: dreg,
            off: doff,
        });
        let src = self.mem_operand(&Loc::Desc {
            global: true,
            reg: sreg,
            off: soff,
        });
        let mut ops = vec![dst, src];
        ops.extend(pred);
        self.emit(Inst::new("LDGSTS", &mods, ops));
        true
    }

    /// Whether an operand expression names a predicate register (`Some(true)`), another
    /// register (`Some(false)`), or no register.
    fn lookup_reg_ty(&self, e: &ast::Expr) -> Option<bool> {
        let name = e.as_name()?;
        let (_, ty) = self.lookup_reg(&name.text)?;
        Some(ty.is_pred())
    }

    /// `r + off + zext(z)` for a 64-bit register, as ptxas computes it: `IADD3 t, P1, r.lo,
    /// off, RZ` (when `off ≠ 0`), `IADD3 d.lo, P2, z, t, RZ`, `IADD3.X d.hi, RZ, RZ, r.hi, P2,
    /// P1`.
    fn add64_zext(&mut self, r: Reg, off: i64, z: Reg) -> Reg {
        let d = self.new_vreg(RegClass::Gpr, 2);
        let (lo, c1) = if off != 0 {
            let t = self.gpr();
            let c1 = self.pred();
            self.emit_unguarded(Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(t),
                    Operand::def(c1),
                    use_(word_of(r, 0)),
                    Operand::imm(off & 0xffff_ffff),
                    rz(),
                ],
            ));
            (t, Some((c1, off >> 32 & 0xffff_ffff)))
        } else {
            (word_of(r, 0), None)
        };
        let c2 = self.pred();
        self.emit_unguarded(Inst::new(
            "IADD3",
            &[],
            vec![
                Operand::def(Reg::word(d, 0)),
                Operand::def(c2),
                use_(z),
                use_(lo),
                rz(),
            ],
        ));
        let hi_imm = c1.map_or(0, |(_, h)| h);
        let c1_op = c1.map_or(pt().inverted(), |(c, _)| use_(c));
        let b = if hi_imm != 0 {
            Operand::imm(hi_imm)
        } else {
            rz()
        };
        self.emit_unguarded(Inst::new(
            "IADD3",
            &["X"],
            vec![
                Operand::def(Reg::word(d, 1)),
                rz(),
                b,
                use_(word_of(r, 1)),
                use_(c2),
                c1_op,
            ],
        ));
        Reg::whole(d, 2)
    }
}
