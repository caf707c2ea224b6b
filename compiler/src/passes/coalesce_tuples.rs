//! `coalesce-tuples`: no copies into and out of register tuples.
//!
//! Vector instructions read and write aligned tuples of registers (`LDG.E.128 R4` writes
//! R4–R7; `TEX` reads its coordinates from consecutive registers). Instruction selection
//! builds a tuple from scalar values with one `COPY` per word and takes a vector result apart
//! with one `MOV` per word; the register allocator works on whole virtual registers, so it
//! cannot give a scalar the register of a tuple's word while the tuple lives, and each of
//! those copies would survive as a `MOV`. ptxas has none of them. Two rewrites, in SSA form:
//!
//! * **Into a tuple.** `x = OP …; …; COPY t.i ← x`, where that `COPY` is `x`'s only use and
//!   both are in one block with nothing in between touching `t`: `OP` writes `t.i` directly
//!   (`LDC R4, c[0x0][0x218]` straight into the coordinate tuple of a `TEX`).
//! * **Out of a tuple.** `x = MOV/COPY t.i` where word `i` of `t` has exactly one definition:
//!   `x` and `t.i` hold the same value everywhere `x` is read, so the reads use `t.i` and the
//!   copy goes. (`PHI` arguments keep `x`: out-of-SSA expects whole registers there.)
//!
//! Example (`tex_read_2d_float`, before → after): `LDC R0, c[0x0][0x218]; COPY R4 ← R0` becomes
//! `LDC R4, c[0x0][0x218]`, and `MOV R8, R5; … STG.E.128 [R2.64], R12` (after a copy of each
//! word into the store's tuple) becomes `STG.E.128 [R2.64], R4`.
//!
//! Invariant (checked by the verifier after the pass): the function stays in SSA form, every
//! use is still dominated by its definition.

use super::Pass;
use crate::mir::{Function, OpKind, Reg};

pub struct CoalesceTuples;

/// How far apart (in instructions) a definition and its copy into a tuple may be.
const WINDOW: usize = 64;

impl Pass for CoalesceTuples {
    fn name(&self) -> &'static str {
        "coalesce-tuples"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        if !f.ssa {
            return Ok(());
        }
        // Both rewrites start from a `COPY` or `MOV`; without one there is nothing to do and
        // no need for the walk over every operand (`straight_16000.ptx` has none here: the
        // pass took 1.65M instructions, callgrind).
        let copies = f
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .any(|i| matches!(i.mnemonic, "COPY" | "MOV"));
        if !copies {
            return Ok(());
        }
        let mut counts = Counts::of(f);
        into_tuples(f, &mut counts);
        out_of_tuples(f, &counts);
        Ok(())
    }
}

/// What the two rewrites ask about the registers, from one walk over the operands (a walk
/// each cost as much again in large kernels: the operands lie all over the heap).
struct Counts {
    /// The reads of each virtual register (as before `into_tuples`).
    uses: Vec<u32>,
    /// The definitions covering each of the first four words of each register (saturating),
    /// kept current by `into_tuples`.
    word_defs: Vec<[u8; 4]>,
    /// Read by a `PHI`.
    in_phi: Vec<bool>,
}

impl Counts {
    fn of(f: &Function) -> Counts {
        let nv = f.vregs.len();
        let mut c = Counts {
            uses: vec![0; nv],
            word_defs: vec![[0; 4]; nv],
            in_phi: vec![false; nv],
        };
        for i in f.blocks.iter().flat_map(|b| &b.insts) {
            let phi = i.is_phi();
            i.for_each_reg(|r| match (r.reg, r.def) {
                (Reg::Virt { vreg, first, count }, true) => {
                    for w in first..(first + count).min(4) {
                        let n = &mut c.word_defs[vreg.0 as usize][usize::from(w)];
                        *n = n.saturating_add(1);
                    }
                }
                (Reg::Virt { vreg, .. }, false) => {
                    c.uses[vreg.0 as usize] += 1;
                    if phi {
                        c.in_phi[vreg.0 as usize] = true;
                    }
                }
                _ => {}
            });
        }
        c
    }
}

/// A single-word `COPY dst ← src` between virtual registers, unguarded: `(dst, src)`.
fn word_copy(i: &crate::mir::Inst) -> Option<(Reg, Reg)> {
    if !matches!(i.mnemonic, "COPY" | "MOV") || i.guard.is_some() || i.ops.len() != 2 {
        return None;
    }
    let (OpKind::Reg(d), OpKind::Reg(s)) = (&i.ops[0].kind, &i.ops[1].kind) else {
        return None;
    };
    let (o, s_op) = (&i.ops[0], &i.ops[1]);
    if !d.def || s.def || o.neg || o.abs || s_op.neg || s_op.abs || s_op.not {
        return None;
    }
    match (d.reg, s.reg) {
        (d @ Reg::Virt { count: 1, .. }, s @ Reg::Virt { count: 1, .. }) => Some((d, s)),
        _ => None,
    }
}

fn into_tuples(f: &mut Function, counts: &mut Counts) {
    let uses = &counts.uses;
    for b in 0..f.blocks.len() {
        let mut k = 0;
        while k < f.blocks[b].insts.len() {
            let inst = &f.blocks[b].insts[k];
            let Some((dst, src)) = (inst.mnemonic == "COPY").then(|| word_copy(inst)).flatten()
            else {
                k += 1;
                continue;
            };
            let (
                Reg::Virt { vreg: t, .. },
                Reg::Virt {
                    vreg: x, first: 0, ..
                },
            ) = (dst, src)
            else {
                k += 1;
                continue;
            };
            let (ti, xi) = (f.vreg(t), f.vreg(x));
            if ti.words < 2
                || xi.words != 1
                || ti.class != xi.class
                || uses[x.0 as usize] != 1
                || f.fixed_reg(t).is_some()
            {
                k += 1;
                continue;
            }
            // The definition of `x`: earlier in this block, unguarded, defining only `x`.
            let insts = &f.blocks[b].insts;
            let lo = k.saturating_sub(WINDOW);
            let found = (lo..k)
                .rev()
                .find(|&j| insts[j].defs().any(|r| r.vreg() == Some(x)));
            let Some(j) = found else {
                k += 1;
                continue;
            };
            let def = &insts[j];
            let ok = !def.is_phi()
                && def.guard.is_none()
                && def.defs().count() == 1
                && !def.ops.iter().any(|o| matches!(o.kind, OpKind::Prior(_)))
                && insts[j + 1..k]
                    .iter()
                    .all(|i| !i.regs().any(|r| r.reg.vreg() == Some(t)));
            if !ok {
                k += 1;
                continue;
            }
            for op in &mut f.blocks[b].insts[j].ops {
                if let OpKind::Reg(r) = &mut op.kind
                    && r.def
                {
                    r.reg = dst;
                }
            }
            // `x` lost its definition; the word of `t` has one still (the copy's, moved).
            let n = &mut counts.word_defs[x.0 as usize][0];
            *n = n.saturating_sub(1);
            f.blocks[b].insts.remove(k);
        }
    }
}

fn out_of_tuples(f: &mut Function, counts: &Counts) {
    let nv = f.vregs.len();
    let (word_defs, in_phi) = (&counts.word_defs, &counts.in_phi);
    // Precoloured values (call arguments and results) stay where the convention puts them.
    let fixed: Vec<crate::mir::VReg> = f.fixed.iter().map(|(v, _)| *v).collect();
    let shape: Vec<(crate::mir::RegClass, u8)> =
        f.vregs.iter().map(|v| (v.class, v.words)).collect();
    // x → t.i for every copy out of a tuple word with a single definition.
    let mut replace: Vec<Option<Reg>> = vec![None; nv];
    let mut replaced = false;
    for b in &mut f.blocks {
        b.insts.retain(|i| {
            let Some((
                Reg::Virt {
                    vreg: x, first: 0, ..
                },
                s @ Reg::Virt { vreg: t, first, .. },
            )) = word_copy(i)
            else {
                return true;
            };
            let (xi, ti) = (x.0 as usize, t.0 as usize);
            let single = word_defs[xi][0] == 1
                && first < 4
                && word_defs[ti][usize::from(first)] == 1
                && !in_phi[xi];
            // Only copies *out of* a tuple, within one register file: a whole one-word source
            // is the allocator's business, and `MOV R, UR` crosses files.
            if !single
                || fixed.contains(&x)
                || fixed.contains(&t)
                || x == t
                || shape[xi].1 != 1
                || shape[ti].1 < 2
                || shape[ti].0 != shape[xi].0
            {
                return true;
            }
            replace[xi] = Some(s);
            replaced = true;
            false
        });
    }
    // No copy went: no read to rename (the common case, and a walk over every operand).
    if !replaced {
        return;
    }
    // Chains (`x = t.1`, `y = x`) resolve to the first tuple.
    let resolve = |mut r: Reg, replace: &[Option<Reg>]| {
        for _ in 0..8 {
            match r {
                Reg::Virt {
                    vreg,
                    first: 0,
                    count: 1,
                } => match replace[vreg.0 as usize] {
                    Some(s) => r = s,
                    None => break,
                },
                _ => break,
            }
        }
        r
    };
    for b in &mut f.blocks {
        for i in &mut b.insts {
            for op in &mut i.ops {
                let is_def = matches!(&op.kind, OpKind::Reg(r) if r.def);
                if is_def {
                    continue;
                }
                for r in op.regs_mut() {
                    *r = resolve(*r, &replace);
                }
            }
            if let Some(g) = &mut i.guard {
                g.pred = resolve(g.pred, &replace);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{Inst, Operand, RegClass};

    /// Both rewrites in one run, on the counts of one walk: the `MOV`s into `x` and `y` write
    /// the words of the pair `t` (their copies go), and then `z = MOV t.1` goes too, its reader
    /// reading `t.1`: word 1 of `t` still has one definition after the first rewrite moved it.
    #[test]
    fn into_then_out_of_a_tuple() {
        let mut f = Function::new("t", true);
        let gpr =
            |f: &mut Function, words| Reg::whole(f.new_vreg(RegClass::Gpr, words, None), words);
        let (x, y, z, t) = (
            gpr(&mut f, 1),
            gpr(&mut f, 1),
            gpr(&mut f, 1),
            gpr(&mut f, 2),
        );
        let Reg::Virt { vreg: tv, .. } = t else {
            unreachable!()
        };
        let word = |k| Reg::word(tv, k);
        let mov = |d, k| {
            Inst::new(
                "MOV",
                &[],
                vec![Operand::def(d), Operand::new(OpKind::Int(k))],
            )
        };
        let copy = |m, d, s| Inst::new(m, &[], vec![Operand::def(d), Operand::use_(s)]);
        f.blocks[0].insts = vec![
            mov(x, 1),
            mov(y, 2),
            copy("COPY", word(0), x),
            copy("COPY", word(1), y),
            copy("MOV", z, word(1)),
            Inst::new("STG", &[], vec![Operand::use_(t)]),
            Inst::new("STG", &[], vec![Operand::use_(z)]),
            Inst::new("EXIT", &[], vec![]),
        ];
        CoalesceTuples.run(&mut f).unwrap();
        let text = f.to_string();
        let insts = &f.blocks[0].insts;
        let left: Vec<&str> = insts.iter().map(|i| i.mnemonic).collect();
        assert_eq!(left, ["MOV", "MOV", "STG", "STG", "EXIT"], "{text}");
        assert_eq!(insts[0].defs().next(), Some(word(0)), "{text}");
        assert_eq!(insts[1].defs().next(), Some(word(1)), "{text}");
        assert_eq!(insts[3].uses().next(), Some(word(1)), "{text}");
        crate::mir::verify::verify(&f).unwrap_or_else(|e| panic!("{e:?}\n{f}"));
    }
}
