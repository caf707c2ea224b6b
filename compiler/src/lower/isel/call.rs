//! Calls to functions the module declares but does not define (`vprintf`, `__assertfail`), with
//! ptxas's calling convention (measured with ptxas 13.1; `docs/passes/lowering.md`, "Calls"):
//!
//! ```text
//! MOV R0, 0x0 ;                  the callee's slot in `.nv.constant4` (`R_CUDA_64 vprintf`)
//! LDC.64 R2, c[0x4][R0] ;        its address
//! IMAD.U32 R4, RZ, RZ, UR4 ;     arguments from R4 up, 64-bit ones at even registers
//! …
//! LEPC R20, 0x100 ;              the return address in R20:R21
//! CALL.ABS.NOINC R2 ;
//! ```
//!
//! The result comes back in R4 (R4:R5). Arguments, result and return address are precoloured
//! values ([`crate::mir::Function::fixed`]); the register allocator keeps values live across the
//! call out of the registers the callee may overwrite
//! ([`crate::passes::regalloc::call_clobbers`]).

use super::Cx;
use crate::frontend::ast;
use crate::mir::*;

/// The first argument and result register (`R4`): `__assertfail`'s five arguments are in
/// R4:R5, R6:R7, R8, R10:R11, R12:R13 (`zluda/assertfail`).
pub(in crate::lower) const FIRST_ARG: u8 = 4;
/// Arguments past R15 go on the stack in ptxas's convention, which ptxc does not implement.
pub(in crate::lower) const LAST_ARG: u8 = 15;
/// The return address register pair `LEPC` writes (`LEPC R20, …`), and that of a call to a
/// subroutine with the fixed convention.
const RETURN_ADDRESS: u8 = 20;
/// The return address register pair of a caller-saved call ([`Function::caller_saved`]: ptxas's
/// slow paths, `lower/slow_path.rs`, and the module's subroutines but the recursive and
/// address-taken ones): R2:R3, below the operands and result (R4 up), so that neither side
/// of the call needs a register as high as R20 (whose use alone makes a kernel report 24
/// registers). ptxas chooses per callee; its subroutines return through R2, R4 or R0
/// (`RET.REL.NODEC R4 0x0` in zluda `div_noftz`, `MOV R2, R4; RET.REL.NODEC R2 0x0` in
/// `sqrt_rn_ftz`, `MOV R2, R0; RET.REL.NODEC R2 0x0` in `call`'s `incr`).
const CALLER_SAVED_RETURN_ADDRESS: u8 = 2;

/// How a value of `class` and `words` registers travels in the calling convention of the
/// module's subroutines ([`Cx::call_subroutine`]): the number of consecutive registers it takes
/// from R4 up, and the alignment of its first one. Scalars of one or two registers and vectors
/// of up to four (`.reg .v4 .u16`, one element per register, zluda
/// `mma_m16n8k32_s32_s8_s8_s32`) go as they are, at a multiple of their size rounded up to a
/// power of two; a predicate goes as a 32-bit 0 or 1 (zluda `multiple_return`'s `.pred` result).
/// ptxas has no convention to copy for either: it packs a `.v4 .u16` argument into two
/// registers with a per-callee convention, folds a constant predicate result into the caller,
/// crashes on a non-constant one (`C7907`) and rejects predicate results in ABI compilation
/// (`docs/passes/lowering.md`, "Calls to module functions"). `None` for what cannot go in
/// registers.
pub(in crate::lower) fn convention_slot(class: RegClass, words: u8) -> Option<(u8, u8)> {
    match class {
        RegClass::Gpr | RegClass::Ugpr if (1..=4).contains(&words) => {
            Some((words, words.next_power_of_two()))
        }
        RegClass::Pred => Some((1, 1)),
        _ => None,
    }
}

/// `SEL dst, RZ, 0x1, !p`: the predicate `p` as a 32-bit 0 or 1, how a predicate crosses a call.
fn predicate_to_gpr(dst: VReg, p: Reg) -> Inst {
    Inst::new(
        "SEL",
        &[],
        vec![
            Operand::def(Reg::whole(dst, 1)),
            Operand::use_(Reg::phys(PReg::RZ)),
            Operand::imm(1),
            Operand::use_(p).inverted(),
        ],
    )
}

/// `ISETP.NE.U32.AND dst, PT, src, RZ, PT`: the 0 or 1 in `src` back as a predicate.
fn gpr_to_predicate(dst: VReg, src: VReg) -> Inst {
    Inst::new(
        "ISETP",
        &["NE", "U32", "AND"],
        vec![
            Operand::def(Reg::whole(dst, 1)),
            Operand::def(Reg::phys(PReg::PT)),
            Operand::use_(Reg::whole(src, 1)),
            Operand::use_(Reg::phys(PReg::RZ)),
            Operand::use_(Reg::phys(PReg::PT)),
        ],
    )
}

fn gpr(num: u8) -> PReg {
    PReg {
        class: RegClass::Gpr,
        num,
    }
}

impl Cx<'_> {
    /// A new value of `words` registers, precoloured to start at `R{at}` (an argument, a result
    /// or a return address of the calling convention).
    fn fixed_gpr(&mut self, words: u8, at: u8) -> VReg {
        let v = self.new_vreg(RegClass::Gpr, words);
        self.f.fixed.push((v, gpr(at)));
        v
    }

    /// `value` copied into registers precoloured to start at `R{at}`.
    fn copy_to_fixed(&mut self, value: Reg, at: u8) -> VReg {
        let words = value.count();
        let v = self.fixed_gpr(words, at);
        self.emit_unguarded(Inst::new(
            "COPY",
            &[],
            vec![Operand::def(Reg::whole(v, words)), Operand::use_(value)],
        ));
        v
    }

    /// `call (ret), f, (args)` to an external function, after `inline.rs` turned its `.param`
    /// slots into registers.
    pub(super) fn call(&mut self, ins: &ast::Instruction) -> bool {
        let names = |o: &ast::Operand| -> Vec<ast::Name> {
            match o {
                ast::Operand::List(items, _) => items
                    .iter()
                    .filter_map(|i| match i {
                        ast::Operand::Expr(e) => e.as_name().cloned(),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            }
        };
        let (rets, target, args) = match &ins.operands[..] {
            [
                r @ ast::Operand::List(..),
                ast::Operand::Expr(t),
                a @ ast::Operand::List(..),
            ] => (names(r), t, names(a)),
            [r @ ast::Operand::List(..), ast::Operand::Expr(t)] => (names(r), t, Vec::new()),
            [ast::Operand::Expr(t), a @ ast::Operand::List(..)] => (Vec::new(), t, names(a)),
            [ast::Operand::Expr(t)] => (Vec::new(), t, Vec::new()),
            _ => {
                self.error(ins.span, "ptxc cannot lower this `call` yet");
                return true;
            }
        };
        let Some(callee) = target.as_name() else {
            self.error(target.span(), "ptxc cannot lower indirect calls yet");
            return true;
        };
        if self.guard.is_some() {
            self.error(ins.span, "ptxc cannot lower a guarded `call` yet");
            return true;
        }
        let internal = self.subroutines.contains(callee.text.as_str());
        if internal {
            return self.call_subroutine(&callee.text, &rets, &args);
        }
        // The callee's address, from its relocated slot of the compiler's constant bank,
        // indexed by a register as ptxas does.
        let slot = self.bank4_slot(&callee.text);
        let off = self.new_vreg(RegClass::Gpr, 1);
        self.emit_unguarded(Inst::new(
            "MOV",
            &[],
            vec![
                Operand::def(Reg::whole(off, 1)),
                Operand::imm(8 * slot as i64),
            ],
        ));
        let addr = self.new_vreg(RegClass::Gpr, 2);
        self.emit_unguarded(Inst::new(
            "LDC",
            &["64"],
            vec![
                Operand::def(Reg::whole(addr, 2)),
                Operand::new(OpKind::CBank {
                    bank: 4,
                    base: Some(Reg::whole(off, 1)),
                    offset: 0,
                }),
            ],
        ));
        let mut implicit = Vec::new();
        let mut next = FIRST_ARG;
        for a in &args {
            let Some((var, _)) = self.var(a) else {
                return true;
            };
            let value = self.read_var(var);
            let words = value.count();
            let class = value.vreg().map_or(RegClass::Gpr, |v| self.f.vreg(v).class);
            if !matches!(class, RegClass::Gpr | RegClass::Ugpr) || words > 2 {
                self.error(
                    a.span,
                    format!("ptxc cannot pass `{}` to `{}` yet", a.text, callee.text),
                );
                return true;
            }
            next = next.next_multiple_of(words);
            if next + words - 1 > LAST_ARG {
                self.error(
                    a.span,
                    format!(
                        "ptxc cannot pass `{}` to `{}`: arguments past R{LAST_ARG} go on the \
                         stack, which ptxc does not implement",
                        a.text, callee.text
                    ),
                );
                return true;
            }
            let p = self.copy_to_fixed(value, next);
            implicit.push(Operand::use_(Reg::whole(p, words)));
            next += words;
        }
        let ra = self.fixed_gpr(2, RETURN_ADDRESS);
        // The return address is patched in at emission: the instruction after the CALL.
        self.emit_unguarded(Inst::new(
            "LEPC",
            &[],
            vec![Operand::def(Reg::whole(ra, 2)), Operand::imm(0)],
        ));
        implicit.push(Operand::use_(Reg::whole(ra, 2)));
        let mut results = Vec::new();
        let mut next = FIRST_ARG;
        for r in &rets {
            let op = ast::Operand::Expr(ast::Expr::Name {
                name: r.clone(),
                component: None,
            });
            let Some(dst) = self.dst(&op) else {
                return true;
            };
            let words = self.f.vreg(dst.vreg).words;
            if self.f.vreg(dst.vreg).class != RegClass::Gpr || words > 2 {
                self.error(
                    r.span,
                    format!("ptxc cannot take `{}` from `{}` yet", r.text, callee.text),
                );
                return true;
            }
            next = next.next_multiple_of(words);
            let v = self.fixed_gpr(words, next);
            implicit.push(Operand::def(Reg::whole(v, words)));
            results.push((dst, v, words));
            next += words;
        }
        // The callee's name rides along (unprinted) for the cubin's records.
        let mut ops = vec![
            Operand::use_(Reg::whole(addr, 2)),
            Operand::new(OpKind::Func(callee.text.to_string())),
        ];
        ops.extend(implicit);
        self.emit_unguarded(Inst::new("CALL", &["ABS", "NOINC"], ops));
        self.copy_results(results);
        true
    }

    /// Copies each result out of the precoloured register the call returned it in.
    fn copy_results(&mut self, results: Vec<(super::Dst, VReg, u8)>) {
        for (dst, v, words) in results {
            self.copy_in(dst, v, words);
        }
    }

    /// Makes `dst` the value that arrived in the precoloured `v` (`words` registers): a copy, or
    /// for a predicate, which travels as 0 or 1 ([`convention_slot`]), `ISETP.NE.U32.AND dst,
    /// PT, v, RZ, PT`.
    fn copy_in(&mut self, dst: super::Dst, v: VReg, words: u8) {
        if self.f.vreg(dst.vreg).class == RegClass::Pred {
            self.emit_unguarded(gpr_to_predicate(dst.vreg, v));
        } else {
            self.emit_unguarded(Inst::new(
                "COPY",
                &[],
                vec![
                    Operand::def(Reg::whole(dst.vreg, words)),
                    Operand::use_(Reg::whole(v, words)),
                ],
            ));
        }
        self.commit(dst);
    }

    /// `value` copied into the precoloured registers from `R{at}` that carry it: as it is, or
    /// for a predicate as 0 or 1 (`SEL t, RZ, 0x1, !P`).
    fn pass_value(&mut self, value: Reg, at: u8) -> VReg {
        let is_pred = value
            .vreg()
            .is_some_and(|v| self.f.vreg(v).class == RegClass::Pred);
        if !is_pred {
            return self.copy_to_fixed(value, at);
        }
        let v = self.fixed_gpr(1, at);
        self.emit_unguarded(predicate_to_gpr(v, value));
        v
    }

    /// Passes `args` in the registers of the calling convention (from R4, each at a multiple of
    /// its size, [`convention_slot`]): the precoloured values a call reads. `None` after an
    /// error.
    fn pass_arguments(&mut self, callee: &str, args: &[ast::Name]) -> Option<Vec<Operand>> {
        let mut implicit = Vec::new();
        let mut next = FIRST_ARG;
        for a in args {
            let (var, _) = self.var(a)?;
            let value = self.read_var(var);
            let class = value.vreg().map_or(RegClass::Gpr, |v| self.f.vreg(v).class);
            let Some((words, align)) = convention_slot(class, value.count()) else {
                self.error(
                    a.span,
                    format!("ptxc cannot pass `{}` to `{callee}` yet", a.text),
                );
                return None;
            };
            next = next.next_multiple_of(align);
            if next + words - 1 > LAST_ARG {
                self.error(
                    a.span,
                    format!(
                        "ptxc cannot pass `{}` to `{callee}`: arguments past R{LAST_ARG} go on \
                         the stack, which ptxc does not implement",
                        a.text
                    ),
                );
                return None;
            }
            let p = self.pass_value(value, next);
            implicit.push(Operand::use_(Reg::whole(p, words)));
            next += words;
        }
        Some(implicit)
    }

    /// A call to a subroutine of the module (`inline::subroutines`), with the fixed convention
    /// ptxas gives functions it cannot specialise (an address-taken `.func`, zluda `func_ptr`;
    /// `tests/sass-probes/ptx/funcs.ptx`): arguments and results from R4, the return address —
    /// the section offset of the instruction after the `CALL` — in R20:R21:
    ///
    /// ```text
    /// MOV R20, 0x160 ;         patched at emission, as LEPC's target
    /// MOV R21, RZ ;
    /// CALL.REL.NOINC 0x2b0 ;   the callee's copy in this kernel's section (`lower/link.rs`)
    /// ```
    ///
    /// The callee preserves every register the caller may keep across a call
    /// ([`crate::passes::regalloc::call_clobbers`]; `passes/prologue.rs` saves them).
    ///
    /// A caller-saved callee ([`Function::caller_saved`]: neither recursive nor address-taken)
    /// gets its return address in R2:R3 instead and saves nothing: the call overwrites what
    /// its allocated body writes ([`crate::passes::regalloc::call_clobber_set`]), ptxas's
    /// whole-program way (`docs/passes/lowering.md`, "Caller-saved subroutines").
    fn call_subroutine(&mut self, callee: &str, rets: &[ast::Name], args: &[ast::Name]) -> bool {
        let Some(mut implicit) = self.pass_arguments(callee, args) else {
            return true;
        };
        let abs = self.abs_calls.contains(callee);
        implicit.push(if abs {
            self.pass_absolute_return_address(callee)
        } else {
            self.pass_return_address(callee)
        });
        let Some(results) = self.take_results(callee, rets, &mut implicit) else {
            return true;
        };
        let saved = self.save_predicates();
        let mut ops = vec![Operand::new(OpKind::Func(callee.to_string()))];
        ops.extend(implicit);
        // ptxas calls its own function PC-relatively (`CALL.REL.NOINC` to offset 0, the
        // return address still absolute: `tests/kernels/device_calls.ptx`, `_Z4polyfi`).
        let mods: &[&'static str] = if abs && callee != self.f.name {
            &["ABS", "NOINC"]
        } else {
            &["REL", "NOINC"]
        };
        self.emit_unguarded(Inst::new("CALL", mods, ops));
        self.restore_predicates(saved);
        self.copy_results(results);
        true
    }

    /// The predicate registers in scope, each copied to a general register as 0 or 1 (`SEL t,
    /// RZ, 0x1, !P`) before a call to a subroutine, which may overwrite every predicate
    /// ([`crate::passes::regalloc::call_clobbers`]); the general register lives across the
    /// call where the predicate could not. [`Cx::restore_predicates`] turns them back after the
    /// call; a predicate nobody reads after the call leaves both dead, and `dce` deletes them.
    /// ptxas saves a predicate live across a call with `P2R` into a register it keeps
    /// (`docs/passes/lowering.md`, "Calls out of the module").
    fn save_predicates(&mut self) -> Vec<(super::Var, VReg)> {
        let mut vars = Vec::new();
        let mut s = Some(self.scope);
        while let Some(i) = s {
            let scope = &self.scopes[i];
            vars.extend(scope.regs.values().map(|(v, _)| *v));
            for (_, first, count, _) in &scope.families {
                vars.extend((*first..first + count).map(super::Var));
            }
            s = scope.parent;
        }
        vars.retain(|&v| self.ssa.var(v).class == RegClass::Pred && self.ssa.var(v).words == 1);
        vars.sort_unstable_by_key(|v| v.0);
        vars.dedup();
        let mut saved = Vec::new();
        for var in vars {
            let p = self.read_var(var);
            let t = self.new_vreg(RegClass::Gpr, 1);
            self.emit_unguarded(predicate_to_gpr(t, p));
            saved.push((var, t));
        }
        saved
    }

    /// After a call: each predicate [`Cx::save_predicates`] saved, from its general register
    /// (`ISETP.NE.U32.AND P, PT, t, RZ, PT`).
    fn restore_predicates(&mut self, saved: Vec<(super::Var, VReg)>) {
        for (var, t) in saved {
            let name = self.ssa.var(var).name.clone();
            let p = self.f.new_vreg(RegClass::Pred, 1, Some(name));
            self.emit_unguarded(gpr_to_predicate(p, t));
            self.ssa.write(var, self.cur, p);
        }
    }

    /// The register pair of the return address of a call to `callee`: R2:R3 for a caller-saved
    /// one, else R20:R21.
    fn return_address(&self, callee: &str) -> u8 {
        if crate::lower::slow_path::kind(callee).is_some()
            || !self.fixed_convention.contains(callee)
        {
            CALLER_SAVED_RETURN_ADDRESS
        } else {
            RETURN_ADDRESS
        }
    }

    /// The return address of a `CALL.REL` to `callee` ([`Cx::return_address`]): a MOV whose operand names
    /// the callee (emission puts there the offset of the instruction after the CALL that
    /// follows it, `emit/sass.rs`) and a zero high word. Returns the CALL's use of the pair.
    fn pass_return_address(&mut self, callee: &str) -> Operand {
        let lo = self.new_vreg(RegClass::Gpr, 1);
        self.emit_unguarded(Inst::new(
            "MOV",
            &[],
            vec![
                Operand::def(Reg::whole(lo, 1)),
                Operand::new(OpKind::Func(callee.to_string())),
            ],
        ));
        let pair = self.pair(super::Val::Reg(Reg::whole(lo, 1)), super::Val::Imm(0));
        let ra = self.fixed_gpr(2, self.return_address(callee));
        self.emit_unguarded(Inst::new(
            "COPY",
            &[],
            vec![Operand::def(Reg::whole(ra, 2)), Operand::use_(pair)],
        ));
        Operand::use_(Reg::whole(ra, 2))
    }

    /// The return address of a `CALL.ABS` to `callee`, a `.func` in a section of its own
    /// (debug builds): the absolute address of the instruction after the CALL, in R20:R21,
    /// as ptxas writes it (`ptxas -g`, `docs/cubin.md`, "Functions of their own"):
    ///
    /// ```text
    /// MOV R20, 0x0 ;          R_CUDA_ABS32_LO_32 <caller> + return offset
    /// MOV R21, 0x0 ;          R_CUDA_ABS32_HI_32 <caller> + return offset
    /// CALL.ABS.NOINC 0x0 ;    R_CUDA_ABS55_16_34 <callee>
    /// ```
    ///
    /// Each MOV names the callee and, as a third operand, the shift of its half (0 or 32);
    /// emission writes 0 and the relocation (`emit/sass.rs`).
    fn pass_absolute_return_address(&mut self, callee: &str) -> Operand {
        let half = |cx: &mut Self, shift: i64| {
            let v = cx.new_vreg(RegClass::Gpr, 1);
            cx.emit_unguarded(Inst::new(
                "MOV",
                &[],
                vec![
                    Operand::def(Reg::whole(v, 1)),
                    Operand::new(OpKind::Func(callee.to_string())),
                    Operand::imm(shift),
                ],
            ));
            v
        };
        let lo = half(self, 0);
        let hi = half(self, 32);
        let pair = self.pair(
            super::Val::Reg(Reg::whole(lo, 1)),
            super::Val::Reg(Reg::whole(hi, 1)),
        );
        let ra = self.fixed_gpr(2, RETURN_ADDRESS);
        self.emit_unguarded(Inst::new(
            "COPY",
            &[],
            vec![Operand::def(Reg::whole(ra, 2)), Operand::use_(pair)],
        ));
        Operand::use_(Reg::whole(ra, 2))
    }

    /// The register pair this subroutine's return address arrives in.
    fn own_return_address(&self) -> u8 {
        if self.f.caller_saved {
            CALLER_SAVED_RETURN_ADDRESS
        } else {
            RETURN_ADDRESS
        }
    }

    /// Whether this function is one of ptxas's slow paths (`lower/slow_path.rs`): its IEEE
    /// recipe is then selected as the slow part only, the body of the subroutine.
    pub(super) fn is_slow_path_body(&self) -> bool {
        !self.f.is_entry && crate::lower::slow_path::kind(&self.f.name).is_some()
    }

    /// A call to ptxas's slow path `callee` (`lower/slow_path.rs`) with the convention of
    /// [`Cx::call_subroutine`] and the return address in R2:R3
    /// ([`CALLER_SAVED_RETURN_ADDRESS`]): `args` from R4, the result (of `words` registers) back
    /// from R4:
    ///
    /// ```text
    /// MOV R4, R0 ;             the operands
    /// MOV R5, R6 ;
    /// MOV R2, 0x1a0 ;          the return address, patched at emission
    /// MOV R3, RZ ;
    /// CALL.REL.NOINC 0x2c0 ;   the slow path's copy in this kernel's section
    /// MOV R7, R4 ;             the result
    /// ```
    ///
    /// The call overwrites only the registers the slow path's allocated body writes
    /// ([`crate::passes::regalloc::call_clobber_set`]), so the caller's other values stay in
    /// their registers across it.
    pub(super) fn call_slow_path(&mut self, callee: &str, args: &[Reg], words: u8) -> Reg {
        let mut implicit = Vec::new();
        let mut next = FIRST_ARG;
        for &a in args {
            let n = a.count();
            next = next.next_multiple_of(n);
            let p = self.copy_to_fixed(a, next);
            implicit.push(Operand::use_(Reg::whole(p, n)));
            next += n;
        }
        implicit.push(self.pass_return_address(callee));
        let result = self.fixed_gpr(words, FIRST_ARG);
        implicit.push(Operand::def(Reg::whole(result, words)));
        let mut ops = vec![Operand::new(OpKind::Func(callee.to_string()))];
        ops.extend(implicit);
        self.emit_unguarded(Inst::new("CALL", &["REL", "NOINC"], ops));
        let out = self.new_vreg(RegClass::Gpr, words);
        self.emit_unguarded(Inst::new(
            "COPY",
            &[],
            vec![
                Operand::def(Reg::whole(out, words)),
                Operand::use_(Reg::whole(result, words)),
            ],
        ));
        Reg::whole(out, words)
    }

    /// The precoloured results of a call (from R4), added to its operands as definitions.
    fn take_results(
        &mut self,
        callee: &str,
        rets: &[ast::Name],
        implicit: &mut Vec<Operand>,
    ) -> Option<Vec<(super::Dst, VReg, u8)>> {
        let mut results = Vec::new();
        let mut next = FIRST_ARG;
        for r in rets {
            let op = ast::Operand::Expr(ast::Expr::Name {
                name: r.clone(),
                component: None,
            });
            let dst = self.dst(&op)?;
            let info = self.f.vreg(dst.vreg);
            let Some((words, align)) = convention_slot(info.class, info.words) else {
                self.error(
                    r.span,
                    format!("ptxc cannot take `{}` from `{callee}` yet", r.text),
                );
                return None;
            };
            next = next.next_multiple_of(align);
            if next + words - 1 > LAST_ARG {
                self.error(
                    r.span,
                    format!("ptxc cannot take `{}` from `{callee}` yet", r.text),
                );
                return None;
            }
            let v = self.fixed_gpr(words, next);
            implicit.push(Operand::def(Reg::whole(v, words)));
            results.push((dst, v, words));
            next += words;
        }
        Some(results)
    }

    /// The start of a subroutine: its parameters arrive in R4 up, its return address in
    /// R20:R21, or R2:R3 if it is caller-saved (the convention of [`Cx::call_subroutine`]). `UNDEF`s of the precoloured
    /// registers stand for the values the caller put there; they are copied into the
    /// parameters' variables.
    pub(super) fn subroutine_entry(&mut self, params: &[ast::Name]) {
        let mut incoming = Vec::new();
        let mut next = FIRST_ARG;
        for p in params {
            let op = ast::Operand::Expr(ast::Expr::Name {
                name: p.clone(),
                component: None,
            });
            let Some(dst) = self.dst(&op) else { return };
            let info = self.f.vreg(dst.vreg);
            let Some((words, align)) = convention_slot(info.class, info.words) else {
                self.error(
                    p.span,
                    format!(
                        "ptxc cannot take the parameter `{}` in registers yet",
                        p.text
                    ),
                );
                return;
            };
            next = next.next_multiple_of(align);
            if next + words - 1 > LAST_ARG {
                self.error(
                    p.span,
                    format!(
                        "ptxc cannot take the parameter `{}`: parameters past R{LAST_ARG} go on \
                         the stack, which ptxc does not implement",
                        p.text
                    ),
                );
                return;
            }
            let v = self.fixed_gpr(words, next);
            incoming.push((dst, v, words));
            next += words;
        }
        let ra_in = self.fixed_gpr(2, self.own_return_address());
        for &(_, v, words) in &incoming {
            self.emit_unguarded(Inst::new(
                "UNDEF",
                &[],
                vec![Operand::def(Reg::whole(v, words))],
            ));
        }
        self.emit_unguarded(Inst::new(
            "UNDEF",
            &[],
            vec![Operand::def(Reg::whole(ra_in, 2))],
        ));
        let ra = self.new_vreg(RegClass::Gpr, 2);
        self.emit_unguarded(Inst::new(
            "COPY",
            &[],
            vec![
                Operand::def(Reg::whole(ra, 2)),
                Operand::use_(Reg::whole(ra_in, 2)),
            ],
        ));
        self.return_address = Some(ra);
        for (dst, v, words) in incoming {
            self.copy_in(dst, v, words);
        }
    }

    /// `ret` in a subroutine: the results to R4 up, the return address back to the pair it
    /// arrived in, then `RET.REL.NODEC R20 0x0` (or `R2`; the `RET` reads them all).
    pub(super) fn subroutine_return(&mut self) {
        let Some(ra) = self.return_address else {
            return;
        };
        let mut ops = Vec::new();
        let mut next = FIRST_ARG;
        for r in self.sub_results.clone() {
            let Some((var, _)) = self.var(&r) else { return };
            let value = self.read_var(var);
            let class = value.vreg().map_or(RegClass::Gpr, |v| self.f.vreg(v).class);
            let Some((words, align)) = convention_slot(class, value.count()) else {
                self.error(
                    r.span,
                    format!("ptxc cannot return `{}` in registers yet", r.text),
                );
                return;
            };
            next = next.next_multiple_of(align);
            let v = self.pass_value(value, next);
            ops.push(Operand::use_(Reg::whole(v, words)));
            next += words;
        }
        let out = self.fixed_gpr(2, self.own_return_address());
        self.emit_unguarded(Inst::new(
            "COPY",
            &[],
            vec![
                Operand::def(Reg::whole(out, 2)),
                Operand::use_(Reg::whole(ra, 2)),
            ],
        ));
        ops.insert(0, Operand::use_(Reg::whole(out, 2)));
        // A `.func` in a section of its own returns to the absolute address its `CALL.ABS`
        // passed (`RET.ABS.NODEC R20 0x0`, ptxas -g).
        let mods: &[&'static str] = if self.abs_calls.contains(self.f.name.as_str()) {
            &["ABS", "NODEC"]
        } else {
            &["REL", "NODEC"]
        };
        self.emit_unguarded(Inst::new("RET", mods, ops));
    }
}
