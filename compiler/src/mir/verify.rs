//! The MIR verifier, run after every pass in debug builds and tests (the pass manager calls it).
//!
//! It checks:
//! * the CFG is well formed: branch targets and fallthroughs name existing blocks; nothing but
//!   terminators follows a terminator; a block that may fall off its end has a fallthrough, and
//!   one that ends in an unconditional branch or exit has none; `PHI`s come first in a block and
//!   have exactly one argument per predecessor;
//! * registers are well formed: a virtual register slice stays inside the register, a physical
//!   one inside its file; guards are predicates; `PHI` and `COPY` keep class and width;
//! * in SSA form, every word of every virtual register is defined exactly once and every use is
//!   dominated by the definitions of the words it reads (a `PHI` argument by the end of its
//!   predecessor).

use super::cfg::Cfg;
use super::*;

/// One violated invariant, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    pub function: String,
    pub block: Option<BlockId>,
    pub inst: Option<usize>,
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.function)?;
        if let Some(b) = self.block {
            write!(f, ":{b}")?;
        }
        if let Some(i) = self.inst {
            write!(f, ":{i}")?;
        }
        write!(f, ": {}", self.message)
    }
}

struct Verifier<'f> {
    f: &'f Function,
    errors: Vec<VerifyError>,
}

impl Verifier<'_> {
    fn err(&mut self, block: Option<BlockId>, inst: Option<usize>, message: String) {
        self.errors.push(VerifyError {
            function: self.f.name.clone(),
            block,
            inst,
            message,
        });
    }
}

/// Checks every invariant of `f`; returns all violations found.
pub fn verify(f: &Function) -> Result<(), Vec<VerifyError>> {
    let mut v = Verifier {
        f,
        errors: Vec::new(),
    };
    if f.blocks.is_empty() {
        v.err(None, None, "a function needs at least one block".into());
        return Err(v.errors);
    }
    let nblocks = f.blocks.len() as u32;
    let mut dangling = false;
    for b in f.block_ids() {
        let block = f.block(b);
        let mut seen_terminator = false;
        let mut seen_non_phi = false;
        for (i, inst) in block.insts.iter().enumerate() {
            if seen_terminator && !inst.is_terminator() {
                v.err(Some(b), Some(i), format!("`{inst}` follows a terminator"));
            }
            if inst.is_terminator() {
                seen_terminator = true;
            }
            if inst.is_phi() && seen_non_phi {
                v.err(Some(b), Some(i), "a PHI after a non-PHI instruction".into());
            }
            if !inst.is_phi() {
                seen_non_phi = true;
            }
            for t in inst.targets() {
                if t.0 >= nblocks {
                    dangling = true;
                    v.err(Some(b), Some(i), format!("branch to missing block {t}"));
                }
            }
            check_regs(&mut v, b, i, inst);
        }
        let ends_unconditionally = block
            .insts
            .last()
            .is_some_and(|i| i.is_terminator() && i.guard.is_none() && i.mnemonic != "BRX");
        match (ends_unconditionally, block.fallthrough) {
            (true, Some(t)) => v.err(
                Some(b),
                None,
                format!(
                    "ends with an unconditional `{}` but falls through to {t}",
                    block.insts.last().map_or("", |i| i.mnemonic)
                ),
            ),
            (false, None) => v.err(
                Some(b),
                None,
                "may fall off its end but has no fallthrough".into(),
            ),
            (_, Some(t)) if t.0 >= nblocks => {
                dangling = true;
                v.err(Some(b), None, format!("falls through to missing block {t}"))
            }
            _ => {}
        }
    }
    // Dominance needs a CFG whose edges all land on blocks.
    if dangling {
        return Err(v.errors);
    }
    let cfg = Cfg::new(f);
    check_phis(&mut v, &cfg);
    if f.ssa {
        check_ssa(&mut v, &cfg);
    }
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

fn check_regs(v: &mut Verifier<'_>, b: BlockId, i: usize, inst: &Inst) {
    let f = v.f;
    for r in inst.regs() {
        match r.reg {
            Reg::Virt { vreg, first, count } => {
                let Some(info) = f.vregs.get(vreg.0 as usize) else {
                    v.err(
                        Some(b),
                        Some(i),
                        format!("`{inst}` names {vreg}, which does not exist"),
                    );
                    continue;
                };
                if count == 0 || first + count > info.words {
                    v.err(
                        Some(b),
                        Some(i),
                        format!(
                            "`{inst}` uses words {first}..{} of {vreg}, which has {}",
                            first + count,
                            info.words
                        ),
                    );
                }
            }
            Reg::Phys { reg, count } => {
                if count == 0
                    || (!reg.is_zero()
                        && u32::from(reg.num) + u32::from(count) > reg.class.allocatable())
                {
                    v.err(
                        Some(b),
                        Some(i),
                        format!("`{inst}`: {count} registers from {reg} leave the file"),
                    );
                }
            }
        }
    }
    if let Some(g) = inst.guard {
        let class = reg_class(f, g.pred);
        if !matches!(class, Some(RegClass::Pred | RegClass::UPred)) {
            v.err(
                Some(b),
                Some(i),
                format!("the guard of `{inst}` is not a predicate"),
            );
        }
    }
    if matches!(inst.mnemonic, "PHI" | "COPY") {
        // The operands, not the guard: a guarded COPY (a predicated side of a branch,
        // `passes/reconverge.rs`) reads its predicate too.
        let regs: Vec<RegRef> = inst.ops.iter().flat_map(Operand::regs).collect();
        if let Some(def) = regs.iter().find(|r| r.def) {
            for u in regs.iter().filter(|r| !r.def) {
                let (dc, uc) = (reg_class(f, def.reg), reg_class(f, u.reg));
                let class_ok = dc == uc
                    || (dc == Some(RegClass::Gpr) && uc == Some(RegClass::Ugpr))
                    || u.reg == Reg::phys(PReg::RZ);
                if !class_ok || def.reg.count() != u.reg.count() {
                    v.err(
                        Some(b),
                        Some(i),
                        format!("`{inst}` mixes register classes or widths"),
                    );
                }
            }
        }
    }
}

fn reg_class(f: &Function, r: Reg) -> Option<RegClass> {
    match r {
        Reg::Virt { vreg, .. } => f.vregs.get(vreg.0 as usize).map(|i| i.class),
        Reg::Phys { reg, .. } => Some(reg.class),
    }
}

fn check_phis(v: &mut Verifier<'_>, cfg: &Cfg) {
    let f = v.f;
    for b in f.block_ids() {
        if !cfg.is_reachable(b) {
            continue;
        }
        let mut preds: Vec<BlockId> = cfg
            .preds(b)
            .iter()
            .copied()
            .filter(|p| cfg.is_reachable(*p))
            .collect();
        preds.sort();
        preds.dedup();
        for (i, inst) in f
            .block(b)
            .insts
            .iter()
            .enumerate()
            .filter(|(_, i)| i.is_phi())
        {
            for o in &inst.ops {
                if let OpKind::PhiArg(p, _) = o.kind
                    && p.0 as usize >= f.blocks.len()
                {
                    v.err(
                        Some(b),
                        Some(i),
                        format!("`{inst}` names the missing block {p}"),
                    );
                }
            }
            let mut args: Vec<BlockId> = inst
                .ops
                .iter()
                .filter_map(|o| match o.kind {
                    OpKind::PhiArg(p, _) => Some(p),
                    _ => None,
                })
                .filter(|p| cfg.is_reachable(*p))
                .collect();
            args.sort();
            if args != preds {
                v.err(
                    Some(b),
                    Some(i),
                    format!(
                        "`{inst}` has arguments for {args:?}, but the predecessors are {preds:?}"
                    ),
                );
            }
        }
    }
}

fn check_ssa(v: &mut Verifier<'_>, cfg: &Cfg) {
    let f = v.f;
    // Where each word of each vreg is defined: (block, instruction index).
    let mut def_at: Vec<Vec<Option<(BlockId, usize)>>> = f
        .vregs
        .iter()
        .map(|i| vec![None; usize::from(i.words)])
        .collect();
    for b in f.block_ids() {
        for (i, inst) in f.block(b).insts.iter().enumerate() {
            for d in inst.defs() {
                let Reg::Virt { vreg, first, count } = d else {
                    continue;
                };
                let Some(words) = def_at.get_mut(vreg.0 as usize) else {
                    continue;
                };
                for w in first..first + count {
                    match words.get_mut(usize::from(w)) {
                        Some(slot @ None) => *slot = Some((b, i)),
                        Some(Some(_)) => v.err(
                            Some(b),
                            Some(i),
                            format!("word {w} of {vreg} is defined more than once (SSA)"),
                        ),
                        None => {}
                    }
                }
            }
        }
    }
    for b in f.block_ids() {
        if !cfg.is_reachable(b) {
            continue;
        }
        for (i, inst) in f.block(b).insts.iter().enumerate() {
            // A PHI reads each argument at the end of the matching predecessor.
            let mut uses: Vec<(Reg, BlockId, usize)> = Vec::new();
            for o in &inst.ops {
                match o.kind {
                    OpKind::PhiArg(p, r) => {
                        if let Some(pred) = f.blocks.get(p.0 as usize) {
                            uses.push((r, p, pred.insts.len()));
                        }
                    }
                    _ => uses.extend(o.regs().filter(|r| !r.def).map(|r| (r.reg, b, i))),
                }
            }
            if let Some(g) = inst.guard {
                uses.push((g.pred, b, i));
            }
            for (reg, ub, ui) in uses {
                let Reg::Virt { vreg, first, count } = reg else {
                    continue;
                };
                let Some(words) = def_at.get(vreg.0 as usize) else {
                    continue;
                };
                for w in first..first + count {
                    match words.get(usize::from(w)).copied().flatten() {
                        None => {
                            v.err(
                                Some(b),
                                Some(i),
                                format!("`{inst}` uses word {w} of {vreg}, which is never defined"),
                            );
                            break;
                        }
                        Some((db, di)) => {
                            let ok = if db == ub {
                                di < ui
                            } else {
                                cfg.dominates(db, ub)
                            };
                            if !ok {
                                v.err(
                                    Some(b),
                                    Some(i),
                                    format!("`{inst}` uses {vreg}, whose definition in {db} does not dominate the use"),
                                );
                                break;
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(f: &mut Function) -> VReg {
        f.new_vreg(RegClass::Gpr, 1, None)
    }

    #[test]
    fn accepts_a_well_formed_function() {
        let mut f = Function::new("ok", true);
        let a = r(&mut f);
        let b = r(&mut f);
        let bb = &mut f.blocks[0].insts;
        bb.push(Inst::new(
            "MOV",
            &[],
            vec![Operand::def(Reg::whole(a, 1)), Operand::imm(1)],
        ));
        bb.push(Inst::new(
            "IADD3",
            &[],
            vec![
                Operand::def(Reg::whole(b, 1)),
                Operand::use_(Reg::whole(a, 1)),
                Operand::imm(2),
                Operand::use_(Reg::phys(PReg::RZ)),
            ],
        ));
        bb.push(Inst::new("EXIT", &[], vec![]));
        assert_eq!(verify(&f), Ok(()));
    }

    #[test]
    fn rejects_use_before_def_double_def_and_bad_slices() {
        let mut f = Function::new("bad", true);
        let a = r(&mut f);
        let wide = f.new_vreg(RegClass::Gpr, 2, None);
        let bb = &mut f.blocks[0].insts;
        bb.push(Inst::new(
            "IADD3",
            &[],
            vec![
                Operand::def(Reg::whole(a, 1)),
                Operand::use_(Reg::whole(a, 1)),
                Operand::imm(2),
                Operand::use_(Reg::phys(PReg::RZ)),
            ],
        ));
        bb.push(Inst::new(
            "MOV",
            &[],
            vec![Operand::def(Reg::whole(a, 1)), Operand::imm(1)],
        ));
        bb.push(Inst::new(
            "MOV",
            &[],
            vec![
                Operand::def(Reg::Virt {
                    vreg: wide,
                    first: 1,
                    count: 2,
                }),
                Operand::imm(1),
            ],
        ));
        let errs = verify(&f).unwrap_err();
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert!(
            text.iter().any(|e| e.contains("does not dominate")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|e| e.contains("more than once")),
            "{text:?}"
        );
        assert!(text.iter().any(|e| e.contains("words 1..3")), "{text:?}");
        assert!(
            text.iter().any(|e| e.contains("no fallthrough")),
            "{text:?}"
        );
    }

    #[test]
    fn rejects_phi_that_does_not_match_predecessors() {
        let mut f = Function::new("phi", true);
        let a = r(&mut f);
        let b1 = f.new_block(None);
        f.blocks[0].insts.push(Inst::new(
            "MOV",
            &[],
            vec![Operand::def(Reg::whole(a, 1)), Operand::imm(1)],
        ));
        f.blocks[0].fallthrough = Some(b1);
        let c = r(&mut f);
        let phi = Inst::new(
            "PHI",
            &[],
            vec![
                Operand::def(Reg::whole(c, 1)),
                Operand::new(OpKind::PhiArg(BlockId(7), Reg::whole(a, 1))),
            ],
        );
        f.block_mut(b1).insts.push(phi);
        f.block_mut(b1).insts.push(Inst::new("EXIT", &[], vec![]));
        let errs = verify(&f).unwrap_err();
        assert!(
            errs.iter().any(|e| e.message.contains("predecessors")),
            "{errs:?}"
        );
    }
}
