//! Clean-up passes: unreachable blocks and dead code.
//!
//! * `remove-unreachable`: drops blocks control never reaches (code after `ret`), renumbering
//!   the rest, then the `PHI`s that losing those predecessors made trivial.
//! * `dce`: deletes instructions whose results are never read and that have no other effect
//!   (loads are kept only if they cannot fault… so they are kept), iterating to a fixed point
//!   (in one backward walk where no register is read before it is written).

use super::Pass;
use crate::mir::{Function, OpKind, Operand, PReg, Reg, cfg};

pub struct RemoveUnreachable;

impl Pass for RemoveUnreachable {
    fn name(&self) -> &'static str {
        "remove-unreachable"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        // Dropping a predecessor drops its PHI arguments, which can leave a PHI with one
        // value: it, and any PHI that merged it with that value, goes too.
        if cfg::remove_unreachable(f) && f.ssa {
            crate::mir::phi::remove_trivial_phis(f);
        }
        Ok(())
    }
}

pub struct DeadCode;

/// Instructions with no effect but their register results.
fn is_pure(mnemonic: &str) -> bool {
    matches!(
        mnemonic,
        "PHI"
            | "COPY"
            | "UNDEF"
            | "MOV"
            | "IADD3"
            | "IMAD"
            | "ISETP"
            | "SEL"
            | "LOP3"
            | "PLOP3"
            | "SHF"
            | "SGXT"
            | "FADD"
            | "FMUL"
            | "FFMA"
            | "LDC"
            | "ULDC"
            | "S2R"
            | "S2UR"
            | "LEA"
            | "PRMT"
            // Tensor-core MMAs (no effect but their results; a dead one must go, since the
            // reads of its results are what keep later writes off its source registers).
            | "HMMA"
            | "IMMA"
            // Its results are all it makes: an `elect.sync` whose predicate only guarded a
            // TMA copy that isel issues once anyway goes, as in ptxas (`elect_only` of
            // docs/passes/examples/reconverge/tma_elect.ptx has no ELECT).
            | "ELECT"
    )
}

impl Pass for DeadCode {
    fn name(&self) -> &'static str {
        "dce"
    }

    /// Deletes the dead instructions, found in one walk ([`remove_dead_walking_backward`]) or,
    /// where that cannot answer, by a worklist ([`remove_dead_by_worklist`]).
    fn run(&self, f: &mut Function) -> Result<(), String> {
        if !remove_dead_walking_backward(f) {
            remove_dead_by_worklist(f);
        }
        Ok(())
    }
}

/// Deletes the instructions `doomed` names as (block, index), in program order, and gives each
/// live `ELECT` of `live_elects` (block, index) whose lane number nobody reads `URZ` for it:
/// `uses[v]` is how many times the instructions that stay read the virtual register `v`.
fn delete(
    f: &mut Function,
    doomed: impl Iterator<Item = (u32, u32)>,
    live_elects: impl Iterator<Item = (u32, u32)>,
    uses: &[u32],
) {
    // A live `ELECT` (its predicate is read) whose lane number nobody reads writes it to
    // `URZ`, as ptxas does (`ELECT P1, URZ, PT` for `elect.sync %r|%p` with `%r` unused,
    // pyptx matmul_tma_v33–v35), so it takes no uniform register.
    for (b, k) in live_elects {
        let inst = &mut f.blocks[b as usize].insts[k as usize];
        if let Some(op) = inst.ops.get_mut(1)
            && let OpKind::Reg(r) = &op.kind
            && r.def
            && r.reg.vreg().is_some_and(|v| uses[v.0 as usize] == 0)
        {
            *op = Operand::def(Reg::phys(PReg::URZ));
        }
    }
    let mut doomed = doomed.peekable();
    for (b, block) in f.blocks.iter_mut().enumerate() {
        let b = b as u32;
        if doomed.peek().is_none_or(|&(db, _)| db != b) {
            continue;
        }
        let mut k = 0;
        block.insts.retain(|_| {
            let dies = doomed.next_if_eq(&(b, k)).is_some();
            k += 1;
            !dies
        });
    }
}

/// A virtual register number marked as a result (in the per-instruction register lists).
const RESULT: u32 = 1 << 31;

/// Removes dead code found in one walk over the instructions, last to first, when every
/// register is read only after (in layout order) every instruction that writes it, as in
/// straight-line SSA code and in branches without loops: then all the reads of an
/// instruction's results come later in the walk's input, so they are known, and final, when
/// the walk reaches it. A pure instruction dies when no instruction that stays reads any of its
/// virtual results; the reads of one that stays are counted. The answer is the worklist's
/// ([`remove_dead_by_worklist`]: with no read before a write, nothing it kills brings back
/// anything earlier), without the worklist and its lists of candidates and definitions
/// (straight-line 64k: `dce` 22.2M → 20.9M instructions, the whole process 446.8M →
/// 445.1M, callgrind, 2026-12-07; scratch memory 3.4 MB → 0.3 MB there, though the peak RSS
/// did not move).
///
/// Returns `false`, having changed nothing, when some register is read at or before an
/// instruction that writes it (a `PHI` of a loop, a value written a word at a time and read
/// between the words, code out of SSA form), for the worklist to answer. A `PHI` reading from a
/// block laid out at or after its own is seen before the walk; anything else as the walk meets
/// it.
fn remove_dead_walking_backward(f: &mut Function) -> bool {
    for (b, block) in f.blocks.iter().enumerate() {
        for phi in block.insts.iter().take_while(|i| i.is_phi()) {
            if phi
                .ops
                .iter()
                .any(|o| matches!(o.kind, OpKind::PhiArg(p, _) if p.0 as usize >= b))
            {
                return false;
            }
        }
    }
    let nv = f.vregs.len();
    let mut uses = vec![0u32; nv];
    // `written[v]`: an instruction the walk has passed writes `v`; a read of `v` after that
    // (earlier in layout, or by the writer itself) breaks the walk's premise.
    let mut written = vec![false; nv];
    let mut dead = Vec::new();
    let mut live_elects = Vec::new();
    // The current instruction's virtual registers, results marked with `RESULT`.
    let mut regs: Vec<u32> = Vec::new();
    for (b, block) in f.blocks.iter().enumerate().rev() {
        for (k, inst) in block.insts.iter().enumerate().rev() {
            if !is_pure(inst.mnemonic) {
                // It stays: its reads count. A read of a register that an instruction the
                // walk has passed writes (or this one, in an earlier operand) breaks the
                // premise. One this instruction writes in a later operand is harmless: the
                // instruction stays anyway, and earlier writers see the read counted.
                let mut premise_holds = true;
                inst.for_each_reg(|r| {
                    if let Some(v) = r.reg.vreg() {
                        let v = v.0 as usize;
                        if r.def {
                            written[v] = true;
                        } else {
                            premise_holds &= !written[v];
                            uses[v] += 1;
                        }
                    }
                });
                if !premise_holds {
                    return false;
                }
                continue;
            }
            regs.clear();
            inst.for_each_reg(|r| {
                if let Some(v) = r.reg.vreg() {
                    regs.push(if r.def { v.0 | RESULT } else { v.0 });
                }
            });
            // Only a pure instruction writing a virtual register can die (a physical result,
            // `PT`, is discarded anyway).
            let mut writes_virtual = false;
            let mut results_read = false;
            for &r in regs.iter().filter(|&&r| r & RESULT != 0) {
                let v = (r & !RESULT) as usize;
                writes_virtual = true;
                results_read |= uses[v] != 0;
                written[v] = true;
            }
            let dies = writes_virtual && !results_read;
            for &r in regs.iter().filter(|&&r| r & RESULT == 0) {
                if written[r as usize] {
                    return false;
                }
                if !dies {
                    uses[r as usize] += 1;
                }
            }
            if dies {
                dead.push((b as u32, k as u32));
            } else if inst.mnemonic == "ELECT" {
                live_elects.push((b as u32, k as u32));
            }
        }
    }
    // Both lists were made last to first.
    delete(f, dead.into_iter().rev(), live_elects.into_iter(), &uses);
    true
}

/// Removes dead code found by a worklist over use counts, for any function: an instruction dies when
/// it is pure and no result is used; its death lowers the counts of what it reads, and a
/// register whose count drops to zero puts its definitions back on the list. Linear in the
/// size of the function.
///
/// Only a pure instruction writing a virtual register can die (a *candidate*). One walk over
/// the instructions counts the reads and copies each candidate's virtual registers into one
/// flat list; the worklist then reads that list, not the instructions, whose operands lie all
/// over the heap (measured in `docs/passes/dce.md`).
fn remove_dead_by_worklist(f: &mut Function) {
    let nv = f.vregs.len();
    let n = f.num_insts();
    let mut uses = vec![0u32; nv];
    // Candidate `c` is instruction `place[c]` (block, index; in program order); its
    // virtual registers are `regs[at[c]..at[c + 1]]`, results marked with `RESULT`.
    let mut place: Vec<(u32, u32)> = Vec::with_capacity(n);
    let mut at: Vec<u32> = Vec::with_capacity(n + 1);
    at.push(0);
    // Three virtual registers per instruction: two made the list grow (a copy) on
    // `straight_16000.ptx`.
    let mut regs: Vec<u32> = Vec::with_capacity(3 * n);
    // The candidates writing each register, as (candidate, next): a list per register
    // threaded through one vector (`first_def[v]`, then each entry's `next`).
    const NONE: u32 = u32::MAX;
    let mut first_def = vec![NONE; nv];
    let mut defs: Vec<(u32, u32)> = Vec::with_capacity(n);
    // The candidates that are `ELECT`s (for the lane number rule).
    let mut elects: Vec<u32> = Vec::new();
    for (b, block) in f.blocks.iter().enumerate() {
        for (k, inst) in block.insts.iter().enumerate() {
            if !is_pure(inst.mnemonic) {
                inst.for_each_reg(|r| {
                    if let (Some(v), false) = (r.reg.vreg(), r.def) {
                        uses[v.0 as usize] += 1;
                    }
                });
                continue;
            }
            let c = place.len() as u32;
            let mut writes_virtual = false;
            inst.for_each_reg(|r| {
                let Some(v) = r.reg.vreg() else {
                    return;
                };
                if r.def {
                    regs.push(v.0 | RESULT);
                    defs.push((c, first_def[v.0 as usize]));
                    first_def[v.0 as usize] = (defs.len() - 1) as u32;
                    writes_virtual = true;
                } else {
                    uses[v.0 as usize] += 1;
                    regs.push(v.0);
                }
            });
            if !writes_virtual {
                // It stays (physical results, `PT`, are discarded anyway); its reads count.
                regs.truncate(at[at.len() - 1] as usize);
                continue;
            }
            if inst.mnemonic == "ELECT" {
                elects.push(c);
            }
            place.push((b as u32, k as u32));
            at.push(regs.len() as u32);
        }
    }
    let mut dead = vec![false; place.len()];
    // Popped last to first: a dead chain mostly dies in one sweep.
    let mut work: Vec<u32> = (0..place.len() as u32).collect();
    while let Some(c) = work.pop() {
        let c = c as usize;
        if dead[c] {
            continue;
        }
        let own = &regs[at[c] as usize..at[c + 1] as usize];
        if own
            .iter()
            .any(|&r| r & RESULT != 0 && uses[(r & !RESULT) as usize] != 0)
        {
            continue;
        }
        dead[c] = true;
        for &r in own.iter().filter(|&&r| r & RESULT == 0) {
            let count = &mut uses[r as usize];
            *count -= 1;
            if *count == 0 {
                let mut d = first_def[r as usize];
                while d != NONE {
                    let (def, next) = defs[d as usize];
                    work.push(def);
                    d = next;
                }
            }
        }
    }
    let live_elects = elects
        .iter()
        .filter(|&&c| !dead[c as usize])
        .map(|&c| place[c as usize]);
    let doomed = place
        .iter()
        .zip(&dead)
        .filter_map(|(&bk, &d)| d.then_some(bk));
    delete(f, doomed, live_elects, &uses);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{BlockId, Inst, OpKind, Operand, Reg, RegClass};

    /// The shape lowering gives an if/else: bb0 branches to bb3 or falls into bb1, which jumps
    /// to bb4; bb2 is the empty block after that jump (unreachable) and falls into bb3. SSA
    /// construction saw bb2 as a predecessor of bb3, so bb3 merges `x` with an UNDEF and bb4
    /// merges bb1's `x` with bb3's PHI. Without bb2 both PHIs are trivial and must go.
    #[test]
    fn unreachable_predecessor_leaves_no_trivial_phi() {
        let mut f = Function::new("if_else", true);
        let b: Vec<BlockId> = (0..4).map(|_| f.new_block(None)).collect();
        let (b1, b2, b3, b4) = (b[0], b[1], b[2], b[3]);
        let gpr = |f: &mut Function| Reg::whole(f.new_vreg(RegClass::Gpr, 1, None), 1);
        let (x, u, px, y, j) = (
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
            gpr(&mut f),
        );
        let p = Reg::whole(f.new_vreg(RegClass::Pred, 1, None), 1);
        let bra = |t: BlockId| Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(t))]);
        let phi = |d: Reg, args: &[(BlockId, Reg)]| {
            let mut ops = vec![Operand::def(d)];
            ops.extend(
                args.iter()
                    .map(|&(b, r)| Operand::new(OpKind::PhiArg(b, r))),
            );
            Inst::new("PHI", &[], ops)
        };
        f.blocks[0].insts = vec![
            Inst::new("S2R", &[], vec![Operand::def(x)]),
            Inst::new("ISETP", &[], vec![Operand::def(p), Operand::use_(x)]),
            bra(b3).guarded(p, false),
        ];
        f.blocks[0].fallthrough = Some(b1);
        f.block_mut(b1).insts = vec![bra(b4)];
        f.block_mut(b2).insts = vec![Inst::new("UNDEF", &[], vec![Operand::def(u)])];
        f.block_mut(b2).fallthrough = Some(b3);
        f.block_mut(b3).insts = vec![
            phi(px, &[(BlockId(0), x), (b2, u)]),
            Inst::new("SHF", &[], vec![Operand::def(y), Operand::use_(px)]),
        ];
        f.block_mut(b3).fallthrough = Some(b4);
        f.block_mut(b4).insts = vec![
            phi(j, &[(b1, x), (b3, px)]),
            Inst::new("STG", &[], vec![Operand::use_(j)]),
            Inst::new("EXIT", &[], vec![]),
        ];
        RemoveUnreachable.run(&mut f).unwrap();
        let text = f.to_string();
        assert_eq!(f.blocks.len(), 4, "{text}");
        assert!(!text.contains("PHI"), "trivial PHIs left:\n{text}");
        // Every use of the PHIs now reads `x` itself.
        let reads_x = f
            .blocks
            .iter()
            .flat_map(|b| b.insts.iter())
            .filter(|i| i.mnemonic == "SHF" || i.mnemonic == "STG")
            .all(|i| i.uses().next() == Some(x));
        assert!(reads_x, "{text}");
        crate::mir::verify::verify(&f).unwrap_or_else(|e| panic!("{e:?}\n{f}"));
    }

    /// The backward walk, where it answers, deletes exactly what the worklist deletes: on the
    /// MIR that `dce` receives (after `remove-unreachable`) for a generated straight-line
    /// kernel (where the walk must answer), a looping one (where its `PHI`s send it to the
    /// worklist) and every project kernel in `tests/kernels`.
    #[test]
    fn the_backward_walk_deletes_what_the_worklist_deletes() {
        use crate::bench_kernels::{Shape, generate};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kernels");
        let mut inputs = vec![
            ("straight".to_string(), generate(Shape::StraightLine, 600)),
            ("loop".to_string(), generate(Shape::Looping, 600)),
        ];
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("tests/kernels")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
            .collect();
        files.sort();
        for p in files {
            inputs.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
        let (mut walked, mut generated) = (0, 0);
        for (name, text) in inputs {
            let is_generated = name == "straight" || name == "loop";
            let src = crate::diag::SourceFile::new(name.clone(), text);
            let opts = crate::passes::Options::new();
            let lowered = crate::driver::frontend(&src, crate::frontend::check::Arch::SM90A)
                .and_then(|checked| {
                    crate::driver::lower_with(&checked, &opts, &[&RemoveUnreachable])
                });
            let Ok((lowered, _)) = lowered else {
                // A project kernel ptxc rejects is another test's business.
                assert!(!is_generated, "{name} lowers");
                continue;
            };
            generated += usize::from(is_generated);
            for f in lowered.module.functions.iter().chain(&lowered.subroutines) {
                let (mut by_walk, mut by_worklist) = (f.clone(), f.clone());
                let answered = remove_dead_walking_backward(&mut by_walk);
                if answered {
                    walked += 1;
                    remove_dead_by_worklist(&mut by_worklist);
                    assert_eq!(by_walk, by_worklist, "{name}: `{}`", f.name);
                } else {
                    assert_eq!(
                        &by_walk, f,
                        "{name}: `{}` changed by a refused walk",
                        f.name
                    );
                }
                if name == "straight" {
                    assert!(answered, "the walk answers for straight-line code");
                    assert!(by_walk.num_insts() < f.num_insts(), "it deletes dead code");
                }
                if name == "loop" {
                    assert!(!answered, "a loop's PHIs send the walk to the worklist");
                }
            }
        }
        assert_eq!(generated, 2, "both generated kernels were compared");
        assert!(walked > 10, "the walk answered for {walked} functions");
    }

    /// A value written a word at a time whose second writer reads the first word keeps both
    /// writers, though nothing else reads it: the worklist counts the second writer's read.
    /// The backward walk would kill both, so it refuses such a function (changing nothing)
    /// and the worklist answers.
    #[test]
    fn a_read_before_a_write_is_left_to_the_worklist() {
        let mut f = Function::new("dce", true);
        let x = Reg::whole(f.new_vreg(RegClass::Gpr, 1, None), 1);
        let pair = f.new_vreg(RegClass::Gpr, 2, None);
        f.blocks[0].insts = vec![
            Inst::new("S2R", &[], vec![Operand::def(x)]),
            Inst::new(
                "MOV",
                &[],
                vec![Operand::def(Reg::word(pair, 0)), Operand::use_(x)],
            ),
            Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(Reg::word(pair, 1)),
                    Operand::use_(Reg::word(pair, 0)),
                ],
            ),
            Inst::new("EXIT", &[], vec![]),
        ];
        let before = f.clone();
        assert!(!remove_dead_walking_backward(&mut f));
        assert_eq!(f, before);
        DeadCode.run(&mut f).unwrap();
        assert_eq!(f, before, "{f}");
    }

    /// A dead chain dies whole (`%c` reads `%b` twice, `%b` reads `%a`), across blocks;
    /// what a store reads stays, and so does a pure instruction writing only a physical
    /// register; a live `ELECT` whose lane number is unread writes `URZ`.
    #[test]
    fn dead_chains_die_whole() {
        let mut f = Function::new("dce", true);
        let b1 = f.new_block(None);
        let gpr = |f: &mut Function| Reg::whole(f.new_vreg(RegClass::Gpr, 1, None), 1);
        let (a, b, c, kept) = (gpr(&mut f), gpr(&mut f), gpr(&mut f), gpr(&mut f));
        let lane = Reg::whole(f.new_vreg(RegClass::Ugpr, 1, None), 1);
        let p = Reg::whole(f.new_vreg(RegClass::Pred, 1, None), 1);
        let op = |m: &'static str, d: Reg, s: &[Reg]| {
            let mut ops = vec![Operand::def(d)];
            ops.extend(s.iter().map(|&r| Operand::use_(r)));
            Inst::new(m, &[], ops)
        };
        f.blocks[0].insts = vec![
            Inst::new("S2R", &[], vec![Operand::def(a)]),
            op("IADD3", b, &[a]),
            op("MOV", kept, &[a]),
            Inst::new("ELECT", &[], vec![Operand::def(p), Operand::def(lane)]),
            op("ISETP", Reg::phys(PReg::PT), &[kept]),
        ];
        f.blocks[0].fallthrough = Some(b1);
        f.block_mut(b1).insts = vec![
            op("IADD3", c, &[b, b]),
            Inst::new("STG", &[], vec![Operand::use_(kept)]).guarded(p, false),
            Inst::new("EXIT", &[], vec![]),
        ];
        DeadCode.run(&mut f).unwrap();
        let text = f.to_string();
        let left: Vec<Vec<&str>> = f
            .blocks
            .iter()
            .map(|b| b.insts.iter().map(|i| i.mnemonic).collect())
            .collect();
        assert_eq!(
            left,
            [vec!["S2R", "MOV", "ELECT", "ISETP"], vec!["STG", "EXIT"]],
            "{text}"
        );
        let elect = &f.blocks[0].insts[2];
        assert!(
            matches!(elect.ops[1].kind, OpKind::Reg(r) if r.reg == Reg::phys(PReg::URZ)),
            "{text}"
        );
    }
}
