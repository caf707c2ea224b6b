//! Data movement: `mov` (registers, immediates, special registers, symbol addresses, vector
//! pack/unpack), `ld`/`ldu`/`st` in every state space, `cvta`, `isspacep`, `prefetch`,
//! `createpolicy`, `discard`, `applypriority`. Atomics are in `atomics.rs`, the warp-level
//! exchange in `warp.rs`, addresses in `address.rs`.
//!
//! The SASS of each state space (ptxas-facts.md §a.3.3, §a.3.4, §e; `19_scope_global`):
//!
//! | space | load / store |
//! |---|---|
//! | `.global` | `LDG.E/STG.E desc[UR][R.64+imm]`; `.nc` → `.CONSTANT` |
//! | generic | `LD.E/ST.E desc[UR][R.64+imm]` |
//! | `.shared`, `.shared::cta` | `LDS/STS [R+imm]` (a symbol: the shared base with the CTA rank) |
//! | `.shared::cluster` | generic `LD.E/ST.E [R+imm]` through `{addr32, SR_SWINHI}`, never LDS/STS |
//! | `.local` | `LDL/STL [R1+imm]` or `[R+imm]` |
//! | `.param` (kernel) | `LDC c[0x0][0x210+off]` (`[R+0x210]` from a register) |
//! | `.const` | `LDC c[0x3][R+imm]` |
//!
//! Memory order: `.relaxed/.acquire/.release` at `.cta` → `STRONG.SM`, at `.cluster`/`.gpu`
//! → `STRONG.GPU`, at `.sys` and `.volatile` → `STRONG.SYS`; an acquire beyond the CTA ends in
//! `CCTL.IVALL`, a release starts with `MEMBAR.ALL.{CTA,GPU,SYS}` (+ `ERRBAR; CGAERRBAR` beyond
//! the CTA). Cache operators as ptxas maps them: `.ca`/`.wb` → `STRONG.SM`, `.cg` →
//! `STRONG.GPU`, `.cv`/`.wt` → `STRONG.SYS`, `.cs` → `.EF`, `.lu` → `.LU`.

use super::address::{Addr, Base, Space, pt, rz, use_, word_of};
use super::{Cx, Dst, PtxOp, Val};
use crate::frontend::ast::{self, Expr};
use crate::frontend::check::eval_const;
use crate::frontend::types::{Kind, Ty};
use crate::lower::{PARAM_BASE, SHARED_BASE, Sym};
use crate::mir::*;
use crate::passes::prologue::SP;

/// The memory order of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Order {
    Weak,
    Volatile,
    Relaxed,
    Acquire,
    Release,
    AcqRel,
    Mmio,
}

/// SASS has no cluster scope: `.cluster` is `.gpu` (ptxas-facts.md §e.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    Cta,
    Gpu,
    Sys,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Sem {
    pub order: Order,
    pub scope: Scope,
}

impl Sem {
    /// The order and scope written in the modifiers; `default` is the scope when none is.
    pub(super) fn of(flags: &[&str], default: Scope) -> Sem {
        let mut order = Order::Weak;
        let mut scope = default;
        for f in flags {
            match *f {
                ".volatile" => order = Order::Volatile,
                ".relaxed" => order = Order::Relaxed,
                ".acquire" => order = Order::Acquire,
                ".release" => order = Order::Release,
                ".acq_rel" => order = Order::AcqRel,
                ".mmio" => order = Order::Mmio,
                ".cta" => scope = Scope::Cta,
                ".cluster" | ".gpu" => scope = Scope::Gpu,
                ".sys" => scope = Scope::Sys,
                _ => {}
            }
        }
        if order == Order::Volatile {
            scope = Scope::Sys;
        }
        Sem { order, scope }
    }

    /// The scope field of a strong access (`STRONG.GPU`); `None` for weak accesses.
    pub(super) fn strong(self) -> Option<&'static str> {
        match self.order {
            Order::Weak => None,
            Order::Mmio => Some(if self.scope == Scope::Sys {
                "MMIO.SYS"
            } else {
                "MMIO.GPU"
            }),
            _ => Some(match self.scope {
                Scope::Cta => "STRONG.SM",
                Scope::Gpu => "STRONG.GPU",
                Scope::Sys => "STRONG.SYS",
            }),
        }
    }

    pub(super) fn acquires(self) -> bool {
        matches!(self.order, Order::Acquire | Order::AcqRel)
    }

    pub(super) fn releases(self) -> bool {
        matches!(self.order, Order::Release | Order::AcqRel)
    }
}

/// Where a load or store goes, as a SASS address form.
#[derive(Clone, Debug)]
pub(super) enum Loc {
    /// `desc[UR][R.64+off]`: `LDG`/`STG` (global) or `LD`/`ST` (generic).
    Desc { global: bool, reg: Reg, off: i64 },
    /// `[R+off]` with a generic 64-bit register pair, no descriptor (`.shared::cluster`).
    Pair { reg: Reg, off: i64 },
    /// `[R+off]` / `[off]` in the shared window.
    Shared { reg: Option<Reg>, off: i64 },
    /// `[R+off]` in the local window.
    Local { reg: Reg, off: i64 },
    /// `c[bank][R+off]`.
    CBank {
        bank: u32,
        reg: Option<Reg>,
        off: i64,
    },
}

/// The `.vN` of an instruction (1 without one).
pub(super) fn vec_len(flags: &[&str]) -> u32 {
    flags
        .iter()
        .find_map(|f| f.strip_prefix(".v").and_then(|n| n.parse::<u32>().ok()))
        .unwrap_or(1)
}

/// The SASS size modifier of an access of `bits` bits (`U8`, `S16`, ``, `64`, `128`).
pub(super) fn size_mod(bits: u32, signed: bool) -> Option<&'static str> {
    Some(match (bits, signed) {
        (8, true) => "S8",
        (8, false) => "U8",
        (16, true) => "S16",
        (16, false) => "U16",
        (32, _) => "",
        (64, _) => "64",
        (128, _) => "128",
        _ => return None,
    })
}

/// Modifiers as the encoder takes them: one token each (`STRONG.GPU` → `STRONG`, `GPU`), no
/// empty ones.
pub(super) fn split_mods(parts: impl IntoIterator<Item = &'static str>) -> Vec<&'static str> {
    // Pushed one by one into room for the usual few: collecting the `flat_map` grew the vector
    // from nothing (every load and store comes here).
    let mut mods = Vec::with_capacity(4);
    for p in parts {
        // A byte loop: the parts are a few bytes, shorter than a `memchr` call.
        if p.bytes().any(|b| b == b'.') {
            mods.extend(p.split('.').filter(|m| !m.is_empty()));
        } else if !p.is_empty() {
            mods.push(p);
        }
    }
    mods
}

fn fits_imm24(v: i64) -> bool {
    (-(1 << 23)..(1 << 23)).contains(&v)
}

/// The `PRMT` selector that extracts `bits` bits at bit `pos` of a word, zero- or
/// sign-extended.
pub(super) fn extract_sel(bits: u32, pos: u32, signed: bool) -> i64 {
    match (bits, pos / 8, signed) {
        (16, 0, false) => 0x7710,
        (16, _, false) => 0x7732,
        (16, 0, true) => 0x9910,
        (16, _, true) => 0xbb32,
        (_, k, false) => 0x7770 | i64::from(k),
        (_, k, true) => {
            let n = 8 | i64::from(k);
            (n << 12) | (n << 8) | (n << 4) | i64::from(k)
        }
    }
}

/// An opcode in backquotes for a diagnostic (`` `ld` ``), formatted only when one is made:
/// every load and store names itself to [`Cx::locate`].
struct Quoted<'a>(&'a str);

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.0)
    }
}

impl Cx<'_> {
    /// The memory family: moves, loads and stores in every state space, address conversion,
    /// atomics and reductions, and the warp-level data exchange (shfl, vote, match, redux).
    pub(super) fn lower_memory(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        Some(match op.opcode {
            "mov" => self.mov(op),
            "ld" | "ldu" => self.ld(op),
            "st" => self.st(op),
            "cvta" => self.cvta(op),
            "isspacep" => self.isspacep(op),
            "prefetch" | "prefetchu" | "discard" | "applypriority" => self.cache_hint(op),
            "createpolicy" => self.createpolicy(op),
            "atom" | "red" => self.atom(op),
            "shfl" => self.shfl(op),
            "vote" => self.vote(op),
            "match" => self.match_sync(op),
            "redux" => self.redux(op),
            "activemask" => self.activemask(op),
            _ => return None,
        })
    }

    // ------------------------------------------------------------------------------------------
    // Operand helpers

    /// Whether `r` is the whole of its virtual register.
    pub(super) fn is_whole(&self, r: Reg) -> bool {
        match r {
            Reg::Virt {
                vreg,
                first: 0,
                count,
            } => self.f.vreg(vreg).words == count,
            _ => false,
        }
    }

    /// The destinations of an instruction: a register, a vector register, or `{a, b, …}`
    /// (`_` elements are `None`).
    pub(super) fn dst_list(&mut self, op: &ast::Operand) -> Option<Vec<Option<Dst>>> {
        match op {
            ast::Operand::Vector(items, _) => {
                let mut out = Vec::new();
                for it in items {
                    match it {
                        ast::Operand::Sink(_) => out.push(None),
                        other => out.push(Some(self.dst(other)?)),
                    }
                }
                Some(out)
            }
            ast::Operand::Sink(_) => Some(vec![None]),
            other => Some(vec![Some(self.dst(other)?)]),
        }
    }

    /// A source operand, for the memory family: registers, vector-register elements
    /// (`%v.x`), immediates, special registers and symbol addresses.
    pub(super) fn src(&mut self, op: &ast::Operand, ty: Ty, words: u8) -> Option<Val> {
        let ast::Operand::Expr(e) = op else {
            self.error(op.span(), "ptxc cannot lower this operand yet");
            return None;
        };
        self.src_expr(e, ty, words)
    }

    pub(super) fn src_expr(&mut self, e: &Expr, ty: Ty, words: u8) -> Option<Val> {
        // A vector element (`%v.x`) is read by `expr_val` below.
        if let Some((name, off)) = name_plus_sym(e)
            && self.lookup_reg(&name.text).is_none()
            && !name.text.starts_with('%')
            && name.text != "WARP_SZ"
        {
            return match self.sym(&name.text) {
                Some(sym) => self.sym_value(&sym, &name.text, off, words, e.span()),
                None => {
                    self.error(name.span, format!("unknown symbol `{}`", name.text));
                    None
                }
            };
        }
        // `%r + k`: a register plus a constant (`st.u64 [a], %rd + 1`).
        if let Expr::Binary {
            op: op @ (ast::BinOp::Add | ast::BinOp::Sub),
            lhs,
            rhs,
            ..
        } = e
            && let Some(name) = lhs.as_name()
            && let Some((var, _)) = self.lookup_reg(&name.text)
            && let Some(k) = eval_const(rhs)
        {
            let k = if *op == ast::BinOp::Sub {
                (k as i64).wrapping_neg()
            } else {
                k as i64
            };
            let r = self.read_var(var);
            return Some(Val::Reg(if r.count() == 2 {
                self.add64(r, k)
            } else {
                self.add_imm(r, k)
            }));
        }
        self.expr_val(e, ty)
    }

    /// Emits `inst` defining all of `dsts` (under a guard it also reads their old values).
    /// The priors follow the order of the instruction's virtual destinations (out-of-SSA
    /// pairs them up in that order).
    pub(super) fn emit_defs(&mut self, dsts: &[&Dst], mut inst: Inst) {
        let order: Vec<VReg> = inst.defs().filter_map(|r| r.vreg()).collect();
        let mut priors = Vec::new();
        for v in order {
            if let Some(d) = dsts.iter().find(|d| d.vreg == v)
                && let Some(p) = d.prior
            {
                priors.push(Operand::new(OpKind::Prior(Reg::whole(p, d.words))));
            }
        }
        inst.ops.extend(priors);
        self.emit(inst);
    }

    /// Gives `dst` the value `v` (of `dst`'s width) and commits it: a rename when possible,
    /// otherwise moves.
    pub(super) fn assign_val(&mut self, dst: Dst, v: Val) {
        let class = self.f.vreg(dst.vreg).class;
        if let Val::Reg(r) = v
            && dst.prior.is_none()
            && self.is_whole(r)
            && r.count() == dst.words
            && r.vreg().is_some_and(|x| self.f.vreg(x).class == class)
        {
            self.ssa
                .write(dst.var, self.cur, r.vreg().expect("virtual"));
            return;
        }
        if class == RegClass::Pred {
            let src = match v {
                Val::Reg(r) => use_(r),
                Val::Imm(0) => pt().inverted(),
                _ => pt(),
            };
            self.emit_def(
                &dst,
                Inst::new(
                    "PLOP3",
                    &["LUT"],
                    vec![
                        Operand::def(dst.reg()),
                        Operand::def(Reg::phys(PReg::PT)),
                        src,
                        pt(),
                        pt(),
                        Operand::imm(0x80),
                        Operand::imm(0),
                    ],
                ),
            );
            self.commit(dst);
            return;
        }
        for w in 0..dst.words {
            let src = match v {
                Val::Reg(r) if r.count() > w => use_(word_of(r, w)),
                Val::Reg(_) => rz(),
                Val::F32(b) => Operand::imm(i64::from(b)),
                Val::F64(b) => Operand::imm(((b >> (32 * u32::from(w))) & 0xffff_ffff) as i64),
                Val::Imm(i) if dst.words == 1 => Operand::imm(i & 0xffff_ffff),
                other => {
                    let x = self.word(other, w);
                    self.operand(x)
                }
            };
            let d = if dst.words == 1 {
                dst.reg()
            } else {
                dst.word(w)
            };
            self.emit_def(&dst, Inst::new("MOV", &[], vec![Operand::def(d), src]));
        }
        self.commit(dst);
    }

    /// Gives `dst` one element `e` of a vector instruction's result (`ld.v4`, `tex`). Under a
    /// guard the result exists only where the guard holds, so the element is moved under the
    /// guard; otherwise [`Cx::assign_val`] (a rename when possible).
    pub(super) fn assign_result(&mut self, dst: Dst, e: Val) {
        let e = self.fit(e, dst.words);
        if self.guard.is_none() {
            self.assign_val(dst, e);
            return;
        }
        let Val::Reg(r) = e else { return };
        for w in 0..dst.words {
            let d = if dst.words == 1 {
                dst.reg()
            } else {
                dst.word(w)
            };
            let s = if r.count() > w {
                word_of(r, w)
            } else {
                Reg::phys(PReg::RZ)
            };
            self.emit_def(&dst, Inst::new("MOV", &[], vec![Operand::def(d), use_(s)]));
        }
        self.commit(dst);
    }

    /// A register holding the `words`-word value `v`.
    pub(super) fn reg_of(&mut self, v: Val, words: u8) -> Reg {
        match v {
            Val::Reg(r) => r,
            Val::Imm(0) if words == 1 => Reg::phys(PReg::RZ),
            Val::F32(b) => self.to_reg(Val::Imm(i64::from(b)), 1),
            other => self.to_reg(other, words),
        }
    }

    // ------------------------------------------------------------------------------------------
    // mov

    pub(super) fn mov(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let [d, a] = op.operands() else {
            return false;
        };
        let n = vec_len(op.flags);
        let eb = if ty.is_pred() { 1 } else { ty.bits() };
        let ew = eb.div_ceil(32).max(1) as u8;
        // `mov %v.x, a`: one element of a vector register.
        if let ast::Operand::Expr(Expr::Name {
            name,
            component: Some(c),
        }) = d
        {
            return self.mov_to_element(name, c, a, ty, ew);
        }
        if n > 1 {
            return self.mov_vector(d, a, ty, n, ew);
        }
        // Sources as elements.
        let (srcs, src_bits): (Vec<Val>, u32) = match a {
            ast::Operand::Vector(items, _) => {
                let k = items.len() as u32;
                let bits = eb / k.max(1);
                let sty = Ty::parse(&format!("b{bits}")).unwrap_or(ty);
                let mut v = Vec::new();
                for it in items {
                    let Some(x) = self.src(it, sty, bits.div_ceil(32).max(1) as u8) else {
                        return true;
                    };
                    v.push(x);
                }
                (v, bits)
            }
            other => {
                // A vector register of narrow elements (`.v2.b16`) read as one scalar: pack it.
                if let Some((ety, words)) = self.narrow_vector(other)
                    && words > ew
                {
                    let Some(Val::Reg(r)) = self.src(other, ty, words) else {
                        return true;
                    };
                    let elems: Vec<Val> = (0..words).map(|w| Val::Reg(word_of(r, w))).collect();
                    (elems, ety.bits())
                } else {
                    let Some(x) = self.src(other, ty, ew) else {
                        return true;
                    };
                    (vec![x], eb)
                }
            }
        };
        let Some(dsts) = self.dst_list(d) else {
            return false;
        };
        // A vector register of narrow elements written as one scalar: unpack into it.
        let narrow_dst = match (d, srcs.as_slice()) {
            (ast::Operand::Expr(_), [_]) => self.narrow_vector(d).filter(|(_, w)| *w > ew),
            _ => None,
        };
        if let (Some((ety, words)), [Some(dst)]) = (narrow_dst, dsts.as_slice())
            && dst.words == words
        {
            let v = srcs[0];
            let elems: Vec<Val> = (0..words)
                .map(|w| self.extract(v, ety.bits(), u32::from(w) * ety.bits(), false))
                .collect();
            let dst = dsts.into_iter().next().flatten().expect("checked");
            self.set_elements(dst, &elems, 1);
            return true;
        }
        if srcs.len() == dsts.len() {
            // Element by element (a scalar move is the one-element case).
            for (dst, v) in dsts.into_iter().zip(srcs) {
                if let Some(dst) = dst {
                    let v = self.fit(v, dst.words);
                    self.assign_val(dst, v);
                }
            }
            return true;
        }
        if dsts.len() == 1 {
            let Some(dst) = dsts.into_iter().next().flatten() else {
                return true;
            };
            let v = self.pack(&srcs, src_bits, dst.words);
            self.assign_val(dst, Val::Reg(v));
            return true;
        }
        if srcs.len() == 1 {
            let v = srcs[0];
            let dst_bits = eb / dsts.len() as u32;
            for (i, dst) in dsts.into_iter().enumerate() {
                if let Some(dst) = dst {
                    let e = self.extract(v, dst_bits, i as u32 * dst_bits, false);
                    let e = self.fit(e, dst.words);
                    self.assign_val(dst, e);
                }
            }
            return true;
        }
        false
    }

    /// The element type and words of a vector register of 8/16-bit elements named by `op`.
    fn narrow_vector(&self, op: &ast::Operand) -> Option<(Ty, u8)> {
        let ast::Operand::Expr(e) = op else {
            return None;
        };
        let name = e.as_name()?;
        let (var, ety) = self.lookup_reg(&name.text)?;
        let words = self.ssa.var(var).words;
        (ety.bits() <= 16 && words > 1 && !ety.is_pred()).then_some((ety, words))
    }

    /// Gives `dst` the elements `elems` (`ew` words each), word by word.
    fn set_elements(&mut self, dst: Dst, elems: &[Val], ew: u8) {
        let words = dst.words;
        let v = self.new_vreg(RegClass::Gpr, words);
        for (i, e) in elems.iter().enumerate() {
            for w in 0..ew {
                let k = i as u8 * ew + w;
                if k < words {
                    let x = self.word(*e, w);
                    let d = if words == 1 {
                        Reg::whole(v, 1)
                    } else {
                        Reg::word(v, k)
                    };
                    self.set_word(d, x);
                }
            }
        }
        self.assign_val(dst, Val::Reg(Reg::whole(v, words)));
    }

    /// `mov.vN.T d, a`: element by element between `{…}` lists and vector registers.
    fn mov_vector(&mut self, d: &ast::Operand, a: &ast::Operand, ty: Ty, n: u32, ew: u8) -> bool {
        let total = ew * n as u8;
        let srcs: Vec<Val> = match a {
            ast::Operand::Vector(items, _) => {
                let mut v = Vec::new();
                for it in items {
                    let Some(x) = self.src(it, ty, ew) else {
                        return true;
                    };
                    v.push(self.fit(x, ew));
                }
                v
            }
            other => match self.src(other, ty, total) {
                Some(Val::Reg(r)) if r.count() == total => (0..n as u8)
                    .map(|i| {
                        Val::Reg(if ew == 1 {
                            word_of(r, i)
                        } else {
                            Reg::Virt {
                                vreg: r.vreg().expect("virtual"),
                                first: i * ew,
                                count: ew,
                            }
                        })
                    })
                    .collect(),
                Some(_) => return false,
                None => return true,
            },
        };
        if srcs.len() != n as usize {
            return false;
        }
        let Some(dsts) = self.dst_list(d) else {
            return false;
        };
        match dsts.len() {
            1 => {
                let Some(dst) = dsts.into_iter().next().flatten() else {
                    return true;
                };
                if dst.words != total {
                    return false;
                }
                self.set_elements(dst, &srcs, ew);
            }
            k if k == n as usize => {
                for (dst, v) in dsts.into_iter().zip(srcs) {
                    if let Some(dst) = dst {
                        let v = self.fit(v, dst.words);
                        self.assign_val(dst, v);
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// `mov.T %v.x, a`: a new value of the vector register with one element replaced.
    fn mov_to_element(
        &mut self,
        name: &ast::Name,
        c: &ast::Name,
        a: &ast::Operand,
        ty: Ty,
        ew: u8,
    ) -> bool {
        if self.guard.is_some() {
            return false;
        }
        let Some((var, _)) = self.var(name) else {
            return true;
        };
        let old = self.read_var(var);
        let k = match c.text.as_str() {
            ".x" | ".r" => 0,
            ".y" | ".g" => 1,
            ".z" | ".b" => 2,
            _ => 3,
        } * ew;
        let words = old.count();
        if k + ew > words || self.f.vreg(old.vreg().expect("virtual")).class != RegClass::Gpr {
            self.error(
                c.span,
                format!("`{}` has no element `{}`", name.text, c.text),
            );
            return true;
        }
        let Some(v) = self.src(a, ty, ew) else {
            return true;
        };
        let v = self.fit(v, ew);
        let new = self.new_vreg(RegClass::Gpr, words);
        for w in 0..words {
            let x = if (k..k + ew).contains(&w) {
                self.word(v, w - k)
            } else {
                Val::Reg(word_of(old, w))
            };
            self.set_word(Reg::word(new, w), x);
        }
        self.ssa.write(var, self.cur, new);
        true
    }

    /// `v` widened or narrowed to `words` words (a 32-bit value into a 64-bit register is
    /// zero-extended; a 64-bit one into a 32-bit register keeps its low word).
    pub(super) fn fit(&mut self, v: Val, words: u8) -> Val {
        match v {
            Val::Reg(r) if r.count() > words => Val::Reg(word_of(r, 0)),
            Val::Reg(r) if r.count() < words => Val::Reg(self.pair(Val::Reg(r), Val::Imm(0))),
            other => other,
        }
    }

    /// Packs elements of `bits` bits into a fresh register of `words` words.
    pub(super) fn pack(&mut self, elems: &[Val], bits: u32, words: u8) -> Reg {
        let v = self.new_vreg(RegClass::Gpr, words);
        let per_word = (32 / bits.max(1)).max(1) as usize;
        if bits >= 32 {
            let ew = (bits / 32) as u8;
            for (i, e) in elems.iter().enumerate() {
                for w in 0..ew {
                    let k = i as u8 * ew + w;
                    if k < words {
                        let x = self.word(*e, w);
                        let d = if words == 1 {
                            Reg::whole(v, 1)
                        } else {
                            Reg::word(v, k)
                        };
                        self.set_word(d, x);
                    }
                }
            }
            return Reg::whole(v, words);
        }
        for w in 0..words {
            let part: Vec<Val> = elems
                .iter()
                .skip(w as usize * per_word)
                .take(per_word)
                .copied()
                .collect();
            let d = if words == 1 {
                Reg::whole(v, 1)
            } else {
                Reg::word(v, w)
            };
            let regs: Vec<Reg> = part.iter().map(|e| self.reg_of(*e, 1)).collect();
            let prmt = |cx: &mut Cx<'_>, d: Reg, a: Reg, sel: i64, c: Reg| {
                cx.emit_unguarded(Inst::new(
                    "PRMT",
                    &[],
                    vec![Operand::def(d), use_(a), Operand::imm(sel), use_(c)],
                ));
            };
            let rzr = Reg::phys(PReg::RZ);
            match (bits, regs.as_slice()) {
                (16, [a]) => prmt(self, d, *a, 0x7710, rzr),
                (16, [a, b, ..]) => prmt(self, d, *a, 0x5410, *b),
                (8, rs) => {
                    let g = |i: usize| rs.get(i).copied().unwrap_or(rzr);
                    let lo = self.gpr();
                    prmt(self, lo, g(0), 0x0040, g(1));
                    let hi = self.gpr();
                    prmt(self, hi, g(2), 0x0040, g(3));
                    prmt(self, d, lo, 0x5410, hi);
                }
                _ => self.set_word(d, Val::Imm(0)),
            }
        }
        Reg::whole(v, words)
    }

    /// The element of `bits` bits at bit `pos` of `v`, zero- or sign-extended to its words.
    pub(super) fn extract(&mut self, v: Val, bits: u32, pos: u32, signed: bool) -> Val {
        let w = (pos / 32) as u8;
        match v {
            Val::Reg(r) => {
                if bits >= 32 {
                    let ew = (bits / 32) as u8;
                    if ew == 1 {
                        return Val::Reg(word_of(r, w));
                    }
                    return Val::Reg(Reg::Virt {
                        vreg: r.vreg().expect("virtual"),
                        first: w,
                        count: ew,
                    });
                }
                let d = self.gpr();
                self.emit_unguarded(Inst::new(
                    "PRMT",
                    &[],
                    vec![
                        Operand::def(d),
                        use_(word_of(r, w)),
                        Operand::imm(extract_sel(bits, pos % 32, signed)),
                        rz(),
                    ],
                ));
                Val::Reg(d)
            }
            Val::Imm(i) => {
                let x = (i as u64 >> pos)
                    & if bits >= 64 {
                        u64::MAX
                    } else {
                        (1 << bits) - 1
                    };
                Val::Imm(x as i64)
            }
            Val::F64(b) => Val::Imm(((b >> pos) & ((1u64 << bits.min(63)) - 1)) as i64),
            other => other,
        }
    }

    // ------------------------------------------------------------------------------------------
    // Locations

    /// A 64-bit register plus an offset the address forms can hold (folding large offsets
    /// into the register).
    fn reg64_off(&mut self, r: Reg, off: i64) -> (Reg, i64) {
        if fits_imm24(off) {
            return (r, off);
        }
        (self.add64(r, off), 0)
    }

    /// `r + k` for a 64-bit register, in a fresh pair.
    pub(super) fn add64(&mut self, r: Reg, off: i64) -> Reg {
        let d = self.new_vreg(RegClass::Gpr, 2);
        let carry = self.pred();
        self.emit_unguarded(Inst::new(
            "IADD3",
            &[],
            vec![
                Operand::def(Reg::word(d, 0)),
                Operand::def(carry),
                use_(word_of(r, 0)),
                Operand::imm(off & 0xffff_ffff),
                rz(),
            ],
        ));
        self.emit_unguarded(Inst::new(
            "IADD3",
            &["X"],
            vec![
                Operand::def(Reg::word(d, 1)),
                use_(word_of(r, 1)),
                Operand::imm((off >> 32) & 0xffff_ffff),
                rz(),
                use_(carry),
                pt().inverted(),
            ],
        ));
        Reg::whole(d, 2)
    }

    /// A 32-bit register plus an offset that fits 24 bits.
    pub(super) fn reg32_off(&mut self, r: Reg, off: i64) -> (Reg, i64) {
        if fits_imm24(off) {
            (word_of(r, 0), off)
        } else {
            (self.add_imm(word_of(r, 0), off), 0)
        }
    }

    /// Where an access of `space` at `a` goes; reports an error when ptxc cannot reach it.
    pub(super) fn locate(
        &mut self,
        space: Space,
        a: &Addr,
        what: &dyn std::fmt::Display,
    ) -> Option<Loc> {
        let off = a.off;
        let loc = match (space, &a.base) {
            (Space::Param, Base::Sym(Sym::Param { cbank_offset, .. }, _)) => Loc::CBank {
                bank: 0,
                reg: None,
                off: i64::from(*cbank_offset) + off,
            },
            (Space::Param, Base::Reg(r)) => Loc::CBank {
                bank: 0,
                reg: Some(word_of(*r, 0)),
                off: i64::from(PARAM_BASE) + off,
            },
            (Space::Param, Base::Abs) => Loc::CBank {
                bank: 0,
                reg: None,
                off: i64::from(PARAM_BASE) + off,
            },
            (Space::Const, Base::Reg(r)) => Loc::CBank {
                bank: 3,
                reg: Some(word_of(*r, 0)),
                off,
            },
            (Space::Const, Base::Abs) => Loc::CBank {
                bank: 3,
                reg: None,
                off,
            },
            (
                Space::Shared | Space::SharedCluster | Space::Generic,
                Base::Sym(Sym::Shared { offset }, _),
            ) => {
                // ptxas reaches a shared symbol with LDS/STS even through `.shared::cluster`
                // (`10_shared_addr/ld_shared_cluster_sym`).
                let base = self.shared_base();
                let k = i64::from(*offset) - i64::from(SHARED_BASE) + off;
                let (reg, off) = self.reg32_off(base, k);
                Loc::Shared {
                    reg: Some(reg),
                    off,
                }
            }
            (Space::Shared, Base::Reg(r)) => {
                let (reg, off) = self.reg32_off(*r, off);
                Loc::Shared {
                    reg: Some(reg),
                    off,
                }
            }
            (Space::Shared, Base::Abs) => Loc::Shared { reg: None, off },
            (Space::SharedCluster, Base::Reg(r)) => {
                let (lo, off) = self.reg32_off(*r, off);
                let reg = self.shared_to_generic(lo);
                Loc::Pair { reg, off }
            }
            (Space::SharedCluster, Base::Abs) => {
                let lo = self.to_reg(Val::Imm(off & 0xffff_ffff), 1);
                let reg = self.shared_to_generic(lo);
                Loc::Pair { reg, off: 0 }
            }
            (Space::Local | Space::Generic, Base::Sym(Sym::Local { offset }, _)) => {
                let (reg, off) = self.reg32_off(Reg::phys(SP), i64::from(*offset) + off);
                Loc::Local { reg, off }
            }
            (Space::Local, Base::Reg(r)) => {
                let (reg, off) = self.reg32_off(*r, off);
                Loc::Local { reg, off }
            }
            (Space::Local, Base::Abs) => Loc::Local {
                reg: Reg::phys(PReg::RZ),
                off,
            },
            (Space::Generic, Base::Sym(Sym::Param { cbank_offset, .. }, _)) => Loc::CBank {
                bank: 0,
                reg: None,
                off: i64::from(*cbank_offset) + off,
            },
            (
                Space::Const,
                Base::Sym(
                    Sym::Global {
                        space: ast::Space::Const,
                        const_offset,
                        ..
                    },
                    _,
                ),
            ) => Loc::CBank {
                // ptxas: `ld.const.b16 t, [constparams+2]` → `LDC.U16 R7, c[0x3][0x2]`.
                bank: 3,
                reg: None,
                off: i64::from(*const_offset) + off,
            },
            (
                Space::Global | Space::Generic,
                Base::Sym(
                    sym @ Sym::Global {
                        space: ast::Space::Global,
                        ..
                    },
                    name,
                ),
            ) => {
                // The address from `.nv.constant4` (`LDC.64`), then `desc[UR][R.64+off]`.
                let Some(Val::Reg(r)) = self.sym_value(&sym.clone(), &name.clone(), 0, 2, a.span)
                else {
                    return None;
                };
                let (reg, off) = self.reg64_off(r, off);
                Loc::Desc {
                    global: space == Space::Global,
                    reg,
                    off,
                }
            }
            (Space::Global | Space::Generic, Base::Reg(r)) if r.count() == 2 => {
                let (reg, off) = self.reg64_off(*r, off);
                Loc::Desc {
                    global: space == Space::Global,
                    reg,
                    off,
                }
            }
            (Space::Global | Space::Generic, Base::Reg(_)) => {
                self.error(a.span, format!("{what} needs a 64-bit address register"));
                return None;
            }
            (_, Base::Sym(..)) => {
                self.sym_unsupported(a, what);
                return None;
            }
            (_, Base::Abs) => {
                self.error(
                    a.span,
                    format!("ptxc cannot lower {what} of an absolute address yet"),
                );
                return None;
            }
        };
        Some(loc)
    }

    /// The memory operand of a location (for LD/ST-like instructions).
    pub(super) fn mem_operand(&mut self, loc: &Loc) -> Operand {
        let imm = |off: i64| (off != 0).then_some(MemTerm::Imm(off));
        let (prefix, terms) = match loc {
            Loc::Desc { reg, off, .. } => {
                let desc = self.global_desc();
                let mut t = Vec::with_capacity(2);
                t.push(MemTerm::Reg(*reg, Some("64")));
                t.extend(imm(*off));
                (MemPrefix::Desc(desc), t)
            }
            Loc::Pair { reg, off } | Loc::Local { reg, off } => {
                let mut t = Vec::with_capacity(2);
                t.push(MemTerm::Reg(*reg, None));
                t.extend(imm(*off));
                (MemPrefix::None, t)
            }
            Loc::Shared { reg, off } => {
                let mut t: Vec<MemTerm> = reg.iter().map(|r| MemTerm::Reg(*r, None)).collect();
                if *off != 0 || reg.is_none() {
                    t.push(MemTerm::Imm(*off));
                }
                (MemPrefix::None, t)
            }
            Loc::CBank { .. } => unreachable!("constant-bank locations are not memory operands"),
        };
        Operand::new(OpKind::Mem { prefix, terms })
    }

    // ------------------------------------------------------------------------------------------
    // Fences around strong accesses

    /// The release fence before a store/atomic: `MEMBAR.ALL.CTA`, or `MEMBAR.ALL.{GPU,SYS};
    /// ERRBAR; CGAERRBAR` (ptxas-facts.md §e.3).
    pub(super) fn release_fence(&mut self, scope: Scope) {
        let s = match scope {
            Scope::Cta => "CTA",
            Scope::Gpu => "GPU",
            Scope::Sys => "SYS",
        };
        self.emit(Inst::new("MEMBAR", &["ALL", s], vec![]));
        if scope != Scope::Cta {
            self.emit(Inst::new("ERRBAR", &[], vec![]));
            self.emit(Inst::new("CGAERRBAR", &[], vec![]));
        }
    }

    /// The acquire after a load/atomic beyond the CTA: `CCTL.IVALL` (ptxas-facts.md §e.2).
    pub(super) fn acquire_fence(&mut self, scope: Scope) {
        if scope != Scope::Cta {
            self.emit(Inst::new("CCTL", &["IVALL"], vec![]));
        }
    }

    /// Cache-operator and eviction modifiers: (scope field override, eviction, L2 prefetch).
    fn cache_mods(
        flags: &[&str],
        load: bool,
    ) -> (
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
    ) {
        let mut strong = None;
        let mut evict = None;
        let mut ltc = None;
        for f in flags {
            match *f {
                ".ca" | ".wb" => strong = Some("STRONG.SM"),
                ".cg" => strong = Some("STRONG.GPU"),
                ".cv" | ".wt" => strong = Some("STRONG.SYS"),
                ".cs" => evict = Some("EF"),
                ".lu" => evict = Some("LU"),
                ".L1::evict_first" => evict = Some("EF"),
                ".L1::evict_last" => evict = Some("EL"),
                ".L1::no_allocate" => evict = Some("NA"),
                ".L1::evict_unchanged" => evict = Some("EU"),
                ".L2::64B" if load => ltc = Some("LTC64B"),
                ".L2::128B" if load => ltc = Some("LTC128B"),
                ".L2::256B" if load => ltc = Some("LTC256B"),
                _ => {}
            }
        }
        (strong, evict, ltc)
    }

    /// One load of `bits` bits (`signed` for sign-extending narrow loads) into `d`.
    #[allow(clippy::too_many_arguments)]
    fn load_inst(
        &mut self,
        loc: &Loc,
        bits: u32,
        signed: bool,
        sem: Sem,
        flags: &[&str],
        d: Reg,
        byte_off: i64,
    ) -> Option<Inst> {
        let size = size_mod(bits, signed)?;
        let (cstrong, evict, ltc) = Self::cache_mods(flags, true);
        let nc = flags.contains(&".nc");
        let strong = sem.strong().or(cstrong);
        let loc = shift(loc, byte_off);
        let mut mods: Vec<&'static str> = Vec::new();
        let (mn, ops) = match &loc {
            Loc::CBank { bank, reg, off } => {
                if bits > 64 {
                    return None;
                }
                let mut o = *off;
                let base = reg.filter(|r| *r != Reg::phys(PReg::RZ));
                if !(0..=0xffff).contains(&o) {
                    return None;
                }
                if base.is_none() {
                    o &= 0xffff;
                }
                mods.push(size);
                (
                    "LDC",
                    vec![
                        Operand::def(d),
                        Operand::new(OpKind::CBank {
                            bank: *bank,
                            base,
                            offset: o,
                        }),
                    ],
                )
            }
            Loc::Desc { global, .. } => {
                mods.push("E");
                mods.extend(evict);
                mods.extend(ltc);
                mods.push(size);
                if nc && *global && strong.is_none() {
                    mods.push("CONSTANT");
                } else {
                    mods.extend(strong);
                }
                let m = self.mem_operand(&loc);
                (if *global { "LDG" } else { "LD" }, vec![Operand::def(d), m])
            }
            Loc::Pair { .. } => {
                mods.push("E");
                mods.extend(evict);
                mods.extend(ltc);
                mods.push(size);
                mods.extend(strong);
                let m = self.mem_operand(&loc);
                ("LD", vec![Operand::def(d), m])
            }
            Loc::Shared { .. } => {
                mods.push(size);
                let m = self.mem_operand(&loc);
                ("LDS", vec![Operand::def(d), m])
            }
            Loc::Local { .. } => {
                mods.extend(evict);
                mods.push(size);
                let m = self.mem_operand(&loc);
                ("LDL", vec![Operand::def(d), m])
            }
        };
        let mut inst = Inst::new(mn, &[], ops);
        inst.mods = split_mods(mods);
        Some(inst)
    }

    /// One store of `bits` bits from `v`.
    fn store_inst(
        &mut self,
        loc: &Loc,
        bits: u32,
        sem: Sem,
        flags: &[&str],
        v: Reg,
        byte_off: i64,
    ) -> Option<Inst> {
        let size = size_mod(bits, false)?;
        let (cstrong, evict, _) = Self::cache_mods(flags, false);
        let strong = sem.strong().or(cstrong);
        let loc = shift(loc, byte_off);
        let mut mods: smallvec::SmallVec<[&'static str; 6]> = smallvec::SmallVec::new();
        let mn = match &loc {
            Loc::Desc { global, .. } => {
                mods.push("E");
                mods.extend_from_slice(evict.as_slice());
                mods.push(size);
                mods.extend_from_slice(strong.as_slice());
                if *global { "STG" } else { "ST" }
            }
            Loc::Pair { .. } => {
                mods.push("E");
                mods.extend_from_slice(evict.as_slice());
                mods.push(size);
                mods.extend_from_slice(strong.as_slice());
                "ST"
            }
            Loc::Shared { .. } => {
                mods.push(size);
                "STS"
            }
            Loc::Local { .. } => {
                mods.extend_from_slice(evict.as_slice());
                mods.push(size);
                "STL"
            }
            Loc::CBank { .. } => return None,
        };
        let m = self.mem_operand(&loc);
        let mut inst = Inst::new(mn, &[], vec![m, use_(v)]);
        inst.mods = split_mods(mods);
        Some(inst)
    }

    // ------------------------------------------------------------------------------------------
    // ld / ldu / st

    pub(super) fn ld(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let flags = op.flags;
        let (d, a) = match op.operands() {
            [d, a] | [d, a, _] => (d, a),
            _ => return false,
        };
        let n = vec_len(flags);
        let eb = ty.bits();
        let total = eb * n;
        if ty.is_pred() || !matches!(eb, 8 | 16 | 32 | 64 | 128) || total > 128 {
            return false;
        }
        let signed = ty.kind() == Kind::Signed;
        let space = Space::of(flags);
        let sem = Sem::of(flags, Scope::Sys);
        if sem.releases() {
            return false;
        }
        let Some(addr) = self.addr(a) else {
            return true;
        };
        let what = Quoted(&op.ins.opcode.text);
        let Some(loc) = self.locate(space, &addr, &what) else {
            return true;
        };
        let Some(dsts) = self.dst_list(d) else {
            return false;
        };
        // `ld.v2.u32 %v, [a]` into a vector register (not a `{…}` list): one access straight
        // into the whole register.
        if n > 1
            && let [Some(dst)] = &dsts[..]
        {
            if eb < 32
                || u32::from(dst.words) * 32 != total
                || (matches!(loc, Loc::CBank { .. }) && total > 64)
            {
                self.error(
                    op.ins.span,
                    format!(
                        "ptxc cannot lower {what} of {n} {eb}-bit elements into a vector \
                         register of {} words yet",
                        dst.words
                    ),
                );
                return true;
            }
            let dst = dsts.into_iter().next().flatten().expect("checked");
            let Some(inst) = self.load_inst(&loc, total, false, sem, flags, dst.reg(), 0) else {
                return false;
            };
            self.emit_def(&dst, inst);
            if sem.acquires() {
                self.acquire_fence(sem.scope);
            }
            self.commit(dst);
            return true;
        }
        // A scalar load straight into its register.
        if n == 1
            && let [Some(dst)] = &dsts[..]
            && eb <= 32 * u32::from(dst.words)
            && !(matches!(loc, Loc::CBank { .. }) && eb > 64)
        {
            let dst = dsts.into_iter().next().flatten().expect("checked");
            let words = eb.div_ceil(32) as u8;
            let target = if words == dst.words {
                dst.reg()
            } else if words == 1 {
                dst.word(0)
            } else {
                Reg::Virt {
                    vreg: dst.vreg,
                    first: 0,
                    count: words,
                }
            };
            let Some(inst) = self.load_inst(&loc, eb, signed, sem, flags, target, 0) else {
                return false;
            };
            self.emit_def(&dst, inst);
            if words < dst.words {
                // A narrow load into a wide register: extend into the high word.
                let hi = if signed {
                    Inst::new(
                        "SHF",
                        &["R", "S32", "HI"],
                        vec![
                            Operand::def(dst.word(1)),
                            rz(),
                            Operand::imm(0x1f),
                            use_(dst.word(0)),
                        ],
                    )
                } else {
                    Inst::new("MOV", &[], vec![Operand::def(dst.word(1)), rz()])
                };
                self.emit_def(&dst, hi);
            }
            if sem.acquires() {
                self.acquire_fence(sem.scope);
            }
            self.commit(dst);
            return true;
        }
        // Vectors: one access into a temporary, then the elements.
        let words = total.div_ceil(32) as u8;
        let tmp = self.new_vreg(RegClass::Gpr, words);
        let t = Reg::whole(tmp, words);
        let pieces: Vec<(u32, u8, i64)> = if matches!(loc, Loc::CBank { .. }) && total > 64 {
            vec![(64, 0, 0), (64, 2, 8)]
        } else {
            vec![(total.max(8), 0, 0)]
        };
        for (bits, first, boff) in pieces {
            let part = if words == 1 {
                t
            } else {
                Reg::Virt {
                    vreg: tmp,
                    first,
                    count: bits.div_ceil(32) as u8,
                }
            };
            let Some(inst) = self.load_inst(&loc, bits, false, sem, flags, part, boff) else {
                return false;
            };
            self.emit(inst);
        }
        if sem.acquires() {
            self.acquire_fence(sem.scope);
        }
        for (i, dst) in dsts.into_iter().enumerate() {
            let Some(dst) = dst else { continue };
            let e = self.extract(Val::Reg(t), eb, i as u32 * eb, signed);
            self.assign_result(dst, e);
        }
        true
    }

    /// When `vals` are the words of one tuple in order, each copied out of it unguarded (what a
    /// vector load or a texture fetch leaves: `ld.v4 {a, b, c, d}` then `st.v4 [p], {a, b, c,
    /// d}`), that tuple: the store reads it whole instead of packing copies of its words.
    fn split_tuple(&self, vals: &[Val], words: u8) -> Option<Reg> {
        let mut tuple = None;
        for (i, v) in vals.iter().enumerate() {
            let Val::Reg(r @ Reg::Virt { vreg, .. }) = *v else {
                return None;
            };
            if !self.is_whole(r) || r.count() != 1 {
                return None;
            }
            let def = self.def_of.inst(vreg)?;
            if !matches!(def.mnemonic, "MOV" | "COPY") || def.guard.is_some() || def.ops.len() != 2
            {
                return None;
            }
            let OpKind::Reg(src) = &def.ops[1].kind else {
                return None;
            };
            let Reg::Virt {
                vreg: t,
                first,
                count: 1,
            } = src.reg
            else {
                return None;
            };
            if usize::from(first) != i || tuple.is_some_and(|u| u != t) {
                return None;
            }
            tuple = Some(t);
        }
        let t = tuple?;
        let info = self.f.vreg(t);
        (info.words == words && info.class == RegClass::Gpr).then(|| Reg::whole(t, words))
    }

    pub(super) fn st(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let flags = op.flags;
        let (a, v) = match op.operands() {
            [a, v] | [a, v, _] => (a, v),
            _ => return false,
        };
        let n = vec_len(flags);
        let eb = ty.bits();
        let total = eb * n;
        if ty.is_pred() || !matches!(eb, 8 | 16 | 32 | 64 | 128) || total > 128 {
            return false;
        }
        let space = Space::of(flags);
        if space == Space::Const {
            return false;
        }
        let sem = Sem::of(flags, Scope::Sys);
        if sem.acquires() {
            return false;
        }
        let Some(addr) = self.addr(a) else {
            return true;
        };
        // The data: a register, an immediate, or `{…}`.
        let ew = eb.div_ceil(32) as u8;
        let data: Reg = match v {
            ast::Operand::Vector(items, _) => {
                let sty = ty;
                let mut vals = Vec::new();
                for it in items {
                    let Some(x) = self.src(it, sty, ew) else {
                        return true;
                    };
                    vals.push(self.fit(x, ew));
                }
                let words = total.div_ceil(32) as u8;
                // Registers that are already one contiguous vector need no packing.
                match vals.as_slice() {
                    [Val::Reg(r)] if r.count() == words => *r,
                    _ if eb == 32
                        && let Some(t) = self.split_tuple(&vals, words) =>
                    {
                        t
                    }
                    _ => self.pack(&vals, eb, words),
                }
            }
            other => {
                let Some(x) = self.src(other, ty, ew * n as u8) else {
                    return true;
                };
                let words = total.div_ceil(32) as u8;
                let x = self.fit(x, words);
                self.reg_of(x, words)
            }
        };
        if space == Space::Param {
            self.error(
                addr.span,
                "ptxc cannot lower `st.param` yet: .func parameters need the calling convention",
            );
            return true;
        }
        let what = Quoted(&op.ins.opcode.text);
        let Some(loc) = self.locate(space, &addr, &what) else {
            return true;
        };
        if sem.releases() {
            self.release_fence(sem.scope);
        }
        let Some(inst) = self.store_inst(&loc, total, sem, flags, data, 0) else {
            return false;
        };
        self.emit(inst);
        true
    }

    // ------------------------------------------------------------------------------------------
    // cvta, isspacep

    /// `d = a ± c[0x0][k..k+8]` (64-bit): the window conversions of `.local`, `.const`,
    /// `.param`.
    fn add_window(&mut self, dst: Dst, a: Val, window: i64, sub: bool) {
        let ra = self.reg_of(a, 2);
        let carry = self.pred();
        let lo = Operand::new(OpKind::CBank {
            bank: 0,
            base: None,
            offset: window,
        });
        let hi = Operand::new(OpKind::CBank {
            bank: 0,
            base: None,
            offset: window + 4,
        });
        let (lo, hi) = if sub {
            (lo.negated(), hi.inverted())
        } else {
            (lo, hi)
        };
        let a0 = if ra.count() > 1 { word_of(ra, 0) } else { ra };
        let a1 = if ra.count() > 1 {
            word_of(ra, 1)
        } else {
            Reg::phys(PReg::RZ)
        };
        self.emit_def(
            &dst,
            Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(dst.word(0)),
                    Operand::def(carry),
                    use_(a0),
                    lo,
                    rz(),
                ],
            ),
        );
        self.emit_def(
            &dst,
            Inst::new(
                "IADD3",
                &["X"],
                vec![
                    Operand::def(dst.word(1)),
                    use_(a1),
                    hi,
                    rz(),
                    use_(carry),
                    pt().inverted(),
                ],
            ),
        );
        self.commit(dst);
    }

    pub(super) fn cvta(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(ty) = op.ty() else { return false };
        let [d, a] = op.operands() else {
            return false;
        };
        let to = op.has(".to");
        let space = Space::of(op.flags);
        let words = ty.bits().div_ceil(32) as u8;
        let Some(v) = self.src(a, ty, words) else {
            return true;
        };
        let Some(dst) = self.dst(d) else { return false };
        match (space, to) {
            // Global addresses are generic addresses.
            (Space::Global, _) => self.assign_val(dst, v),
            // A shared address is the low word of its generic address, whose high word is
            // SR_SWINHI (ptxas-facts.md §a.3.3).
            (Space::Shared | Space::SharedCluster, false) => {
                let lo = self.extract(v, 32, 0, false);
                let lo = self.reg_of(lo, 1);
                if dst.words == 1 {
                    self.assign_val(dst, Val::Reg(lo));
                } else {
                    let g = self.shared_to_generic(lo);
                    self.assign_val(dst, Val::Reg(g));
                }
            }
            (Space::Shared | Space::SharedCluster, true) => {
                let lo = self.extract(v, 32, 0, false);
                let lo = self.fit(lo, dst.words);
                self.assign_val(dst, lo);
            }
            (Space::Local | Space::Const | Space::Param, _) if dst.words == 2 => {
                let window = match space {
                    Space::Local => 0x20,
                    Space::Const => 0xd0,
                    _ => 0x198,
                };
                self.add_window(dst, v, window, to);
            }
            _ => return false,
        }
        true
    }

    pub(super) fn isspacep(&mut self, op: &PtxOp<'_>) -> bool {
        let [d, a] = op.operands() else {
            return false;
        };
        let Some(b64) = Ty::parse("b64") else {
            return false;
        };
        let Some(v) = self.src(a, b64, 2) else {
            return true;
        };
        let space = Space::of(op.flags);
        let Some(dst) = self.dst(d) else { return false };
        let r = self.reg_of(v, 2);
        if r.count() != 2 {
            return false;
        }
        match space {
            Space::Shared | Space::SharedCluster => {
                // One QSPC tests the whole 64-bit address, as ptxas does: `[RZ.U32+UR]` with the
                // address in a uniform pair when it is warp-uniform (`10_shared_addr/
                // isspacep_shared`: `ULDC.64 UR4, c[0x0][0x220]; QSPC.E.S P0, RZ,
                // [RZ.U32+UR4]`), else `[R]` with the register pair (a `%tid`-dependent
                // address: `QSPC.E.S P0, RZ, [R2]`, docs/passes/lowering.md#isspacep).
                let mem = match self.uniform_pair(r) {
                    Some(u) => vec![
                        MemTerm::Reg(Reg::phys(PReg::RZ), Some("U32")),
                        MemTerm::Reg(u, None),
                    ],
                    None => vec![MemTerm::Reg(r, None)],
                };
                let kind = if space == Space::Shared { "S" } else { "D" };
                self.emit_def(
                    &dst,
                    Inst::new(
                        "QSPC",
                        &["E", kind],
                        vec![
                            Operand::def(dst.reg()),
                            Operand::def(Reg::phys(PReg::RZ)),
                            Operand::new(OpKind::Mem {
                                prefix: MemPrefix::None,
                                terms: mem,
                            }),
                        ],
                    ),
                );
            }
            Space::Const | Space::Param => {
                // As ptxas: the window bounds from constant bank 0 (`.const` [c[0xd0], c[0xd0]],
                // `.param` [c[0x198], c[0x1a0]]).
                let (lo_off, hi_off) = if space == Space::Const {
                    (0xd0, 0xd0)
                } else {
                    (0x198, 0x1a0)
                };
                let ge = self.cmp64_cbank(r, lo_off, "GE");
                let le = self.cmp64_cbank(r, hi_off, "LE");
                self.emit_def(
                    &dst,
                    Inst::new(
                        "PLOP3",
                        &["LUT"],
                        vec![
                            Operand::def(dst.reg()),
                            Operand::def(Reg::phys(PReg::PT)),
                            use_(ge),
                            use_(le),
                            pt(),
                            Operand::imm(0x80),
                            Operand::imm(0),
                        ],
                    ),
                );
            }
            _ => {
                self.error(
                    op.ins.span,
                    "ptxc cannot lower `isspacep` of this space yet (ptxas: `QSPC.E.G` and a \
                     window compare for `.global`, `QSPC.E.L` for `.local`)",
                );
                return true;
            }
        }
        self.commit(dst);
        true
    }

    /// `r (64-bit) CMP c[0x0][off..off+8]` (unsigned) into a fresh predicate.
    fn cmp64_cbank(&mut self, r: Reg, off: i64, cmp: &'static str) -> Reg {
        let lo = self.pred();
        let c = |k: i64| {
            Operand::new(OpKind::CBank {
                bank: 0,
                base: None,
                offset: k,
            })
        };
        self.emit_unguarded(Inst::new(
            "ISETP",
            &[cmp, "U32", "AND"],
            vec![
                Operand::def(lo),
                Operand::def(Reg::phys(PReg::PT)),
                use_(word_of(r, 0)),
                c(off),
                pt(),
            ],
        ));
        let p = self.pred();
        self.emit_unguarded(Inst::new(
            "ISETP",
            &[cmp, "U32", "AND", "EX"],
            vec![
                Operand::def(p),
                Operand::def(Reg::phys(PReg::PT)),
                use_(word_of(r, 1)),
                c(off + 4),
                pt(),
                use_(lo),
            ],
        ));
        p
    }

    // ------------------------------------------------------------------------------------------
    // Cache control

    /// `prefetch`/`prefetchu`, `discard.global.L2`, `applypriority`: cache hints, lowered to
    /// nothing (no result depends on them; reading discarded data may give its old value).
    /// ptxas emits `CCTL.E.PF1/PF2/PML2/RML2/DML2 [R]`; the encoder has CCTL only without
    /// `.E` (a 32-bit address), which would touch the wrong line.
    pub(super) fn cache_hint(&mut self, op: &PtxOp<'_>) -> bool {
        let Some(a) = op.operands().first() else {
            return false;
        };
        if op.has(".tensormap") {
            return false;
        }
        let _ = self.addr(a);
        true
    }

    /// `createpolicy.fractional.L2::<primary>[.L2::<secondary>].b64 d, fraction`: a constant
    /// cache-policy word (ptxas folds it: `{0, ((code & ~0xf) | (16·fraction − 1)) << 20}`).
    pub(super) fn createpolicy(&mut self, op: &PtxOp<'_>) -> bool {
        if !op.has(".fractional") {
            return false;
        }
        let [d, rest @ ..] = op.operands() else {
            return false;
        };
        let fraction = match rest {
            [] => 1.0,
            [ast::Operand::Expr(Expr::Lit { text, .. })] => match text.parse::<f64>() {
                Ok(f) => f,
                Err(_) => return false,
            },
            [ast::Operand::Expr(e)] => match eval_const(e) {
                Some(k) => k as f64,
                None => return false,
            },
            _ => return false,
        };
        if !(0.0..=1.0).contains(&fraction) || fraction == 0.0 {
            return false;
        }
        let evicts: Vec<&str> = op
            .flags
            .iter()
            .copied()
            .filter(|f| f.starts_with(".L2::evict"))
            .collect();
        // Codes seen: evict_last 0x140, evict_first 0x120 (secondary evict_unchanged).
        let primary = match evicts.first() {
            Some(&".L2::evict_last") => 0x140,
            Some(&".L2::evict_first") => 0x120,
            _ => return false,
        };
        if evicts.len() > 1 && evicts[1] != ".L2::evict_unchanged" {
            return false;
        }
        let frac = ((fraction * 16.0).ceil() as i64 - 1).clamp(0, 15);
        let hi = ((primary & !0xf) | frac) << 20;
        let Some(dst) = self.dst(d) else { return false };
        if dst.words != 2 {
            return false;
        }
        self.assign_val(dst, Val::Imm(hi << 32));
        true
    }
}

/// `name`, `name+k`, `name-k` where `name` could be a symbol.
fn name_plus_sym(e: &Expr) -> Option<(&ast::Name, i64)> {
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
        } => {
            let (n, a) = name_plus_sym(lhs)?;
            Some((n, a.wrapping_add(eval_const(rhs)? as i64)))
        }
        Expr::Binary {
            op: ast::BinOp::Sub,
            lhs,
            rhs,
            ..
        } => {
            let (n, a) = name_plus_sym(lhs)?;
            Some((n, a.wrapping_sub(eval_const(rhs)? as i64)))
        }
        _ => None,
    }
}

/// A location moved by `k` bytes.
fn shift(loc: &Loc, k: i64) -> Loc {
    let mut l = loc.clone();
    match &mut l {
        Loc::Desc { off, .. }
        | Loc::Pair { off, .. }
        | Loc::Shared { off, .. }
        | Loc::Local { off, .. }
        | Loc::CBank { off, .. } => *off += k,
    }
    l
}
