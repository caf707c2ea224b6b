//! Addresses and the values every address computation shares.
//!
//! * Address operands: `[reg]`, `[reg+imm]`, `[sym+imm]`, `[imm]` ([`Addr`]).
//! * State spaces ([`Space`]) and their windows: a `.shared` address is 32 bits with the CTA's
//!   rank in byte 3; the generic (and `.shared::cluster`) form of it is `{addr32, SR_SWINHI}`
//!   (ptxas-facts.md §a.1 #13, §a.3.3).
//! * Symbol addresses as ptxas builds them: a `.shared` symbol is `(SR_CgaCtaId << 24) + 0x400 +
//!   offset` (`S2R R, SR_CgaCtaId; MOV R0, 0x400; LEA R, R, R0, 0x18`), a `.local` symbol is
//!   `R1 + offset`, a kernel parameter's `.param` address is its offset in the parameter block.
//!   a `.global` variable's address is `LDC.64 c[0x4][8*slot]`, a slot of `.nv.constant4` that
//!   `.rela.nv.constant4` relocates (`R_CUDA_64`), as ptxas does; the address of a `.const`
//!   variable or a function still needs relocations ptxc does not write: an error names them.
//! * Values defined once at the start of the entry block and found again by their hint:
//!   `SR_CgaCtaId`, `SR_SWINHI`, the shared base. The `sink-sregs` pass then moves them next
//!   to their uses, where ptxas computes them (`passes/sink_sregs.rs`).

use super::{Cx, Val, sr};
use crate::frontend::ast::{self, Expr, Span};
use crate::frontend::check::eval_const;
use crate::lower::{PARAM_BASE, SHARED_BASE, Sym};
use crate::mir::*;
use crate::passes::prologue::SP;

/// A PTX state space as instruction selection distinguishes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Space {
    Generic,
    Global,
    /// `.shared` and `.shared::cta`.
    Shared,
    SharedCluster,
    Local,
    Param,
    Const,
}

impl Space {
    /// The space a list of modifiers names (generic when none does).
    pub(super) fn of(flags: &[&str]) -> Space {
        for f in flags {
            match *f {
                ".global" => return Space::Global,
                ".shared" | ".shared::cta" => return Space::Shared,
                ".shared::cluster" => return Space::SharedCluster,
                ".local" => return Space::Local,
                ".param" | ".param::entry" | ".param::func" => return Space::Param,
                ".const" => return Space::Const,
                _ => {}
            }
        }
        Space::Generic
    }
}

/// What an address starts from.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Base {
    /// An absolute address (`[0x100]`).
    Abs,
    /// The value of a PTX register (one or two words).
    Reg(Reg),
    /// A named memory object, with its name for messages.
    Sym(Sym, String),
}

/// A resolved address operand: a base and a byte offset.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Addr {
    pub base: Base,
    pub off: i64,
    pub span: Span,
}

/// `(name, offset)` of `name`, `name+k`, `name-k`, `k+name`.
fn name_plus(e: &Expr) -> Option<(&ast::Name, i64)> {
    match e {
        Expr::Name {
            name,
            component: None,
        } => Some((name, 0)),
        Expr::Binary {
            op: ast::BinOp::Add,
            lhs,
            rhs,
            ..
        } => match (name_plus(lhs), eval_const(rhs)) {
            (Some((n, a)), Some(k)) => Some((n, a.wrapping_add(k as i64))),
            _ => match (eval_const(lhs), name_plus(rhs)) {
                (Some(k), Some((n, a))) => Some((n, a.wrapping_add(k as i64))),
                _ => None,
            },
        },
        Expr::Binary {
            op: ast::BinOp::Sub,
            lhs,
            rhs,
            ..
        } => match (name_plus(lhs), eval_const(rhs)) {
            (Some((n, a)), Some(k)) => Some((n, a.wrapping_sub(k as i64))),
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn rz() -> Operand {
    Operand::use_(Reg::phys(PReg::RZ))
}

pub(super) fn pt() -> Operand {
    Operand::use_(Reg::phys(PReg::PT))
}

pub(super) fn use_(r: Reg) -> Operand {
    Operand::use_(r)
}

/// Word `w` of a register (the register itself when it has one word).
pub(super) fn word_of(r: Reg, w: u8) -> Reg {
    match r {
        Reg::Virt { vreg, first, count } if count > 1 => Reg::Virt {
            vreg,
            first: first + w,
            count: 1,
        },
        other => other,
    }
}

impl Cx<'_> {
    /// Resolves an address operand `[...]`; reports an error (and returns `None`) for what
    /// ptxc cannot address.
    pub(super) fn addr(&mut self, op: &ast::Operand) -> Option<Addr> {
        let ast::Operand::Address(parts, span) = op else {
            self.error(op.span(), "expected an address operand");
            return None;
        };
        let span = *span;
        let [ast::Operand::Expr(e)] = &parts[..] else {
            self.error(span, "ptxc cannot lower this address yet");
            return None;
        };
        if let Some(k) = eval_const(e) {
            return Some(Addr {
                base: Base::Abs,
                off: k as i64,
                span,
            });
        }
        let Some((name, off)) = name_plus(e) else {
            self.error(e.span(), "ptxc cannot lower this address yet");
            return None;
        };
        if let Some((var, _)) = self.lookup_reg(&name.text) {
            let r = self.read_var(var);
            if self.f.vreg(r.vreg().expect("virtual")).class != RegClass::Gpr {
                self.error(name.span, format!("`{}` cannot be an address", name.text));
                return None;
            }
            return Some(Addr {
                base: Base::Reg(r),
                off,
                span,
            });
        }
        match self.sym(&name.text) {
            Some(sym) => Some(Addr {
                base: Base::Sym(sym, name.text.to_string()),
                off,
                span,
            }),
            None => {
                self.error(
                    name.span,
                    format!("ptxc cannot address `{}` yet", name.text),
                );
                None
            }
        }
    }

    /// A value defined once at the start of the entry block, found again by its hint.
    pub(super) fn entry_cached(&self, hint: &str) -> Option<Reg> {
        let insts = &self.f.blocks[0].insts;
        insts[..self.entry_consts.min(insts.len())]
            .iter()
            .filter_map(|i| i.defs().next())
            .find(|d| {
                d.vreg()
                    .is_some_and(|v| self.f.vreg(v).hint.as_deref() == Some(hint))
            })
    }

    /// `S2R R, SR_n` once at the start of the entry block.
    pub(super) fn entry_s2r(&mut self, n: u8, hint: &str) -> Reg {
        if let Some(r) = self.entry_cached(hint) {
            return r;
        }
        let v = self.f.new_vreg(RegClass::Gpr, 1, Some(hint.into()));
        let r = Reg::whole(v, 1);
        // The special-register reads go first, in the order they were asked for (ptxas
        // issues its long-latency S2Rs before the ALU work that uses them).
        let at = self.f.blocks[0].insts[..self.entry_consts]
            .iter()
            .take_while(|i| i.mnemonic == "S2R")
            .count();
        let inst = Inst::new(
            "S2R",
            &[],
            vec![Operand::def(r), Operand::new(OpKind::SReg(n))],
        );
        self.def_of.set(v, &inst, &self.f.vregs);
        self.f.blocks[0].insts.insert(at, inst);
        self.entry_consts += 1;
        r
    }

    /// The CTA's rank in its cluster, `SR_CgaCtaId`.
    pub(super) fn cga_cta_id(&mut self) -> Reg {
        self.entry_s2r(sr::CGA_CTA_ID, "%cga_cta_id")
    }

    /// The high word of the generic shared window, `SR_SWINHI`.
    pub(super) fn swinhi(&mut self) -> Reg {
        self.entry_s2r(sr::SWINHI, "%swinhi")
    }

    /// The address of the first byte of user shared memory with the CTA rank in byte 3:
    /// `(SR_CgaCtaId << 24) + 0x400` (ptxas-facts.md §a.3.3).
    pub(super) fn shared_base(&mut self) -> Reg {
        if let Some(r) = self.entry_cached("%shared_base") {
            return r;
        }
        let rank = self.cga_cta_id();
        let k = self.f.new_vreg(RegClass::Gpr, 1, None);
        self.entry_value(Inst::new(
            "MOV",
            &[],
            vec![
                Operand::def(Reg::whole(k, 1)),
                Operand::imm(i64::from(SHARED_BASE)),
            ],
        ));
        let v = self
            .f
            .new_vreg(RegClass::Gpr, 1, Some("%shared_base".into()));
        let r = Reg::whole(v, 1);
        self.entry_value(Inst::new(
            "LEA",
            &[],
            vec![
                Operand::def(r),
                Operand::use_(rank),
                Operand::use_(Reg::whole(k, 1)),
                Operand::imm(0x18),
            ],
        ));
        r
    }

    /// A fresh one-word GPR.
    pub(super) fn gpr(&mut self) -> Reg {
        Reg::whole(self.new_vreg(RegClass::Gpr, 1), 1)
    }

    /// A fresh predicate.
    pub(super) fn pred(&mut self) -> Reg {
        Reg::whole(self.new_vreg(RegClass::Pred, 1), 1)
    }

    /// `r + k` in a fresh register (`r` itself when `k` is 0).
    pub(super) fn add_imm(&mut self, r: Reg, k: i64) -> Reg {
        if k == 0 {
            return r;
        }
        let d = self.gpr();
        self.emit_unguarded(Inst::new(
            "IADD3",
            &[],
            vec![Operand::def(d), use_(r), Operand::imm(k), rz()],
        ));
        d
    }

    /// Defines one word `d` of a register as `v` (a copy, a zero or an immediate).
    pub(super) fn set_word(&mut self, d: Reg, v: Val) {
        let inst = match v {
            Val::Reg(r) => Inst::new("COPY", &[], vec![Operand::def(d), use_(word_of(r, 0))]),
            Val::Imm(0) => Inst::new("COPY", &[], vec![Operand::def(d), rz()]),
            other => {
                let o = self.operand(self.word(other, 0));
                Inst::new("MOV", &[], vec![Operand::def(d), o])
            }
        };
        self.emit_unguarded(inst);
    }

    /// A fresh register pair `{lo, hi}`.
    pub(super) fn pair(&mut self, lo: Val, hi: Val) -> Reg {
        let v = self.new_vreg(RegClass::Gpr, 2);
        self.set_word(Reg::word(v, 0), lo);
        self.set_word(Reg::word(v, 1), hi);
        Reg::whole(v, 2)
    }

    /// The generic address `{addr32, SR_SWINHI}` of a 32-bit shared(::cluster) address.
    pub(super) fn shared_to_generic(&mut self, lo: Reg) -> Reg {
        let hi = self.swinhi();
        self.pair(Val::Reg(word_of(lo, 0)), Val::Reg(hi))
    }

    /// The 32-bit shared-window address of a `.shared` symbol plus `off` (with the CTA rank).
    pub(super) fn shared_sym_addr(&mut self, offset: u32, off: i64) -> Reg {
        let base = self.shared_base();
        self.add_imm(base, i64::from(offset) - i64::from(SHARED_BASE) + off)
    }

    /// The value of a symbol's address plus `off`, as a `words`-word value: `mov.u32 %r, smem`,
    /// `mov.u64 %rd, arr`. Reports an error for symbols ptxc cannot take the address of yet.
    pub(super) fn sym_value(
        &mut self,
        sym: &Sym,
        name: &str,
        off: i64,
        words: u8,
        span: Span,
    ) -> Option<Val> {
        let lo = match sym {
            Sym::Shared { offset } => Val::Reg(self.shared_sym_addr(*offset, off)),
            Sym::Local { offset } => {
                let k = i64::from(*offset) + off;
                let r = self.gpr();
                let inst = if k == 0 {
                    Inst::new("MOV", &[], vec![Operand::def(r), use_(Reg::phys(SP))])
                } else {
                    Inst::new(
                        "IADD3",
                        &[],
                        vec![Operand::def(r), use_(Reg::phys(SP)), Operand::imm(k), rz()],
                    )
                };
                self.emit_unguarded(inst);
                Val::Reg(r)
            }
            Sym::Param { cbank_offset, .. } => {
                Val::Imm(i64::from(*cbank_offset) - i64::from(PARAM_BASE) + off)
            }
            // A `.const` variable's address in the const state space is its offset in
            // `.nv.constant3` (ptxas folds `mov.u64 %rd, x` to the offset: const_ident).
            Sym::Global {
                space: ast::Space::Const,
                const_offset,
                ..
            } => Val::Imm(i64::from(*const_offset) + off),
            Sym::Global {
                name: var,
                space: ast::Space::Global,
                ..
            } => {
                // ptxas: the address comes from a relocated slot of the compiler's constant bank
                // (`LDC.64 R2, c[0x4][RZ]`, `.rela.nv.constant4`: `R_CUDA_64 foobar`).
                let slot = self.bank4_slot(var);
                let r = self.new_vreg(RegClass::Gpr, 2);
                let r = Reg::whole(r, 2);
                self.emit_unguarded(Inst::new(
                    "LDC",
                    &["64"],
                    vec![
                        Operand::def(r),
                        Operand::new(OpKind::CBank {
                            bank: 4,
                            base: None,
                            offset: 8 * slot as i64,
                        }),
                    ],
                ));
                let r = if off == 0 { r } else { self.add64(r, off) };
                return Some(if words == 2 {
                    Val::Reg(r)
                } else {
                    Val::Reg(word_of(r, 0))
                });
            }
            Sym::Func(_) if self.subroutines.contains(name) => {
                if off != 0 {
                    self.error(
                        span,
                        format!("ptxc cannot lower an offset from the address of `{name}` yet"),
                    );
                    return None;
                }
                let r = self.gpr();
                self.emit_unguarded(Inst::new(
                    "MOV",
                    &[],
                    vec![
                        Operand::def(r),
                        Operand::new(OpKind::FuncAddr(name.to_string())),
                    ],
                ));
                Val::Reg(r)
            }
            Sym::Global { .. } | Sym::Func(_) => {
                self.error(
                    span,
                    format!(
                        "ptxc cannot lower the address of `{name}` yet: it needs a relocation the \
                         cubin writer does not have"
                    ),
                );
                return None;
            }
            Sym::FuncParam => {
                self.error(
                    span,
                    format!("ptxc cannot lower the address of the .func parameter `{name}` yet"),
                );
                return None;
            }
            Sym::Opaque { .. } => {
                self.error(
                    span,
                    format!(
                        "`{name}` is an opaque texture, surface or sampler reference: only                          `tex`, `suld`, `sust` and `txq` take it"
                    ),
                );
                return None;
            }
        };
        Some(match (words, lo) {
            (2, Val::Imm(k)) => Val::Imm(k),
            (2, lo) => Val::Reg(self.pair(lo, Val::Imm(0))),
            (_, lo) => lo,
        })
    }

    /// The error for a symbol a memory instruction cannot reach yet.
    pub(super) fn sym_unsupported(&mut self, a: &Addr, what: &dyn std::fmt::Display) {
        let name = match &a.base {
            Base::Sym(_, n) => n.clone(),
            _ => "this address".into(),
        };
        let why = match &a.base {
            Base::Sym(Sym::Global { .. } | Sym::Func(_), _) => {
                ": it needs a relocation the cubin writer does not have"
            }
            Base::Sym(Sym::FuncParam, _) => ": .func parameters need the calling convention",
            _ => "",
        };
        self.error(
            a.span,
            format!("ptxc cannot lower {what} of `{name}` yet{why}"),
        );
    }
}
