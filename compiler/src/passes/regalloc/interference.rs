//! The interference graph of a function about to be rewritten by the allocator (`ptxc --dot
//! interference`).
//!
//! The allocator is a linear scan over intervals and keeps no graph, so the graph is built
//! from the same liveness dataflow ([`Liveness`]) in the textbook (Chaitin) way: walking each
//! block backwards from its live-out set, a definition interferes with every other register of
//! its class live after the instruction, and with the other definitions of the instruction.
//! A `COPY`'s destination does not interfere with its source (they hold the same value).
//! Liveness is tracked per word, so a 64-bit value written one word at a time is live from its
//! first write. Every edge joins two values whose intervals overlap, so the allocator's
//! assignment colours this graph: adjacent values never share a register.

use crate::mir::cfg::Cfg;
use crate::mir::dot::{escape, quoted};
use crate::mir::liveness::Liveness;
use crate::mir::{Function, PReg, Reg, VReg};
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The interference edges of `f` (a function with virtual registers, out of SSA), each as
/// `(lower, higher)` vreg, sorted.
pub fn edges(f: &Function) -> Vec<(VReg, VReg)> {
    let cfg = Cfg::new(f);
    let live = Liveness::compute(f, &cfg);
    let words = |v: VReg| f.vreg(v).words;
    let mask_of = |r: Reg| -> u8 {
        match r {
            Reg::Virt { first, count, .. } => (((1u16 << count) - 1) << first) as u8,
            Reg::Phys { .. } => 0,
        }
    };
    let mut edges = BTreeSet::new();
    let mut add = |a: VReg, b: VReg| {
        if a != b && f.vreg(a).class == f.vreg(b).class {
            edges.insert((a.min(b), a.max(b)));
        }
    };
    for b in f.block_ids() {
        // The words of each live vreg.
        let mut now: FxHashMap<VReg, u8> = live.live_out[b.0 as usize]
            .iter()
            .map(|&v| {
                let v = VReg(v);
                (v, ((1u16 << words(v)) - 1) as u8)
            })
            .collect();
        for inst in f.block(b).insts.iter().rev() {
            let defs: Vec<Reg> = inst.defs().filter(|r| r.vreg().is_some()).collect();
            let copy_src = (inst.mnemonic == "COPY")
                .then(|| inst.uses().next().and_then(|r| r.vreg()))
                .flatten();
            let mut live_now: Vec<VReg> = now.keys().copied().collect();
            live_now.sort();
            for d in &defs {
                let d = d.vreg().expect("filtered");
                for &l in &live_now {
                    if Some(l) != copy_src {
                        add(d, l);
                    }
                }
                for e in &defs {
                    add(d, e.vreg().expect("filtered"));
                }
            }
            for d in &defs {
                let v = d.vreg().expect("filtered");
                if let Some(m) = now.get_mut(&v) {
                    *m &= !mask_of(*d);
                    if *m == 0 {
                        now.remove(&v);
                    }
                }
            }
            if inst.is_phi() {
                continue;
            }
            for u in inst.uses() {
                if let Some(v) = u.vreg() {
                    *now.entry(v).or_insert(0) |= mask_of(u);
                }
            }
        }
    }
    edges.into_iter().collect()
}

/// The registers a vreg of `words` words assigned `base` occupies, as the assembler names
/// them: `R4`, `R4:R5`, `R8:R11`.
fn reg_range(base: PReg, words: u8) -> String {
    if words <= 1 {
        return base.to_string();
    }
    let last = PReg {
        num: base.num + words - 1,
        ..base
    };
    format!("{base}:{last}")
}

/// The interference graph as a DOT `graph` named after the function: one node `vN` per virtual
/// register that the allocation placed (label: `%N`, class and width, its PTX name, and the
/// physical registers it got, or its stack slot when spilled), one undirected edge per
/// interference. `f` is the function the allocation was made for (spill code inserted, not yet
/// rewritten).
pub fn to_dot(f: &Function, alloc: &super::Allocation) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "graph {} {{", quoted(&f.name));
    s.push_str("  node [shape=ellipse, fontname=\"monospace\"];\n");
    for (i, info) in f.vregs.iter().enumerate() {
        let v = VReg(i as u32);
        let place = match (
            alloc.assignment.get(i).copied().flatten(),
            alloc.slots.get(&v),
        ) {
            (Some(p), _) => reg_range(p, info.words),
            (None, Some(off)) => format!("spilled [R1+{off:#x}]"),
            (None, None) => continue,
        };
        let width = if info.words > 1 {
            format!(".{}", 32 * u32::from(info.words))
        } else {
            String::new()
        };
        let mut label = format!("{v} {}{width}", info.class.prefix());
        if let Some(h) = &info.hint {
            let _ = write!(label, " {h}");
        }
        // Two centred lines: the value, then where it lives.
        let _ = writeln!(
            s,
            "  v{i} [label=\"{}\\n{}\"];",
            escape(&label),
            escape(&place)
        );
    }
    for (a, b) in edges(f) {
        let _ = writeln!(s, "  v{} -- v{};", a.0, b.0);
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{Inst, OpKind, Operand, RegClass};

    /// `%0 = 1; %1 = 2; %2 = %0 + %1; %3 = COPY %2; use %3`, all one word, plus a predicate.
    fn small() -> Function {
        let mut f = Function::new("small", true);
        f.ssa = false;
        let v: Vec<VReg> = (0..4).map(|_| f.new_vreg(RegClass::Gpr, 1, None)).collect();
        let p = f.new_vreg(RegClass::Pred, 1, Some("%p1".into()));
        let w = |v: VReg| Reg::whole(v, 1);
        f.blocks[0].insts = vec![
            Inst::new("MOV", &[], vec![Operand::def(w(v[0])), Operand::imm(1)]),
            Inst::new("MOV", &[], vec![Operand::def(w(v[1])), Operand::imm(2)]),
            Inst::new(
                "ISETP",
                &["LT", "U32", "AND"],
                vec![
                    Operand::def(w(p)),
                    Operand::def(Reg::phys(PReg::PT)),
                    Operand::use_(w(v[0])),
                    Operand::use_(w(v[1])),
                    Operand::use_(Reg::phys(PReg::PT)),
                ],
            ),
            Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(w(v[2])),
                    Operand::use_(w(v[0])),
                    Operand::use_(w(v[1])),
                    Operand::use_(Reg::phys(PReg::RZ)),
                ],
            ),
            Inst::new(
                "COPY",
                &[],
                vec![Operand::def(w(v[3])), Operand::use_(w(v[2]))],
            ),
            Inst::new(
                "STG",
                &["E"],
                vec![
                    Operand::new(OpKind::Mem {
                        prefix: crate::mir::MemPrefix::None,
                        terms: vec![crate::mir::MemTerm::Imm(0)],
                    }),
                    Operand::use_(w(v[3])),
                ],
            )
            .guarded(w(p), false),
            Inst::new("EXIT", &[], vec![]),
        ];
        f
    }

    #[test]
    fn edges_of_a_straight_line() {
        let f = small();
        // %0 and %1 live together; %2 is defined as both die; the copy joins nothing; the
        // predicate is another class.
        assert_eq!(edges(&f), vec![(VReg(0), VReg(1))]);
    }

    #[test]
    fn the_allocation_colours_the_graph_and_the_dot_names_it() {
        let mut f = small();
        let a = super::super::allocate(&mut f).unwrap();
        for (x, y) in edges(&f) {
            assert_ne!(a.assignment[x.0 as usize], a.assignment[y.0 as usize]);
        }
        let text = to_dot(&f, &a);
        assert!(text.starts_with("graph \"small\" {\n"), "{text}");
        assert!(text.ends_with("}\n"));
        assert!(text.contains("  v0 -- v1;\n"), "{text}");
        assert!(text.contains("v4 [label=\"%4 P %p1\\nP0\"];"), "{text}");
        assert_eq!(text.matches(" [label=").count(), 5);
    }

    #[test]
    fn ranges_of_wide_values() {
        let r4 = PReg {
            class: RegClass::Gpr,
            num: 4,
        };
        assert_eq!(reg_range(r4, 1), "R4");
        assert_eq!(reg_range(r4, 2), "R4:R5");
        assert_eq!(reg_range(r4, 4), "R4:R7");
    }
}
