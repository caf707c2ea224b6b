//! Graphviz DOT text for MIR (`ptxc --dot cfg`): one `digraph` per function, one box per basic
//! block listing its instructions, one edge per CFG successor.
//!
//! ```text
//! digraph "sum_loop" {
//!   node [shape=box, fontname="monospace"];
//!   bb2 [label="bb2  ; LOOP\l    IADD3 R6, R4, R5, RZ\l    @P0 BRA bb3\l"];
//!   bb2 -> bb3 [label="taken"];
//!   bb2 -> bb4 [label="fallthrough"];
//! }
//! ```
//!
//! Several graphs in one file are valid input for `dot` (it renders each in turn). petgraph's
//! `Dot` writer cannot name its graph, so the text is written here.

use super::cfg::Cfg;
use super::{BlockId, Function};
use std::fmt::Write as _;

/// Escapes `s` for a double-quoted DOT string: `"` and `\` always, and the characters record
/// labels treat specially (`{`, `}`, `<`, `>`, `|`), so a label reads the same whatever the
/// node shape. A line break becomes `\l` (a left-justified line).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '"' | '\\' | '{' | '}' | '<' | '>' | '|' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\l"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// The quoted DOT identifier for a graph or node name.
pub fn quoted(s: &str) -> String {
    format!("\"{}\"", escape(s))
}

/// The label of one edge `from -> to`: `taken` when a branch of `from` names `to`,
/// `fallthrough` when control falls through to it, both when both.
fn edge_label(f: &Function, from: BlockId, to: BlockId) -> &'static str {
    let block = f.block(from);
    let taken = block
        .insts
        .iter()
        .flat_map(super::Inst::targets)
        .any(|t| t == to);
    let falls = block.fallthrough == Some(to);
    match (taken, falls) {
        (true, true) => "taken/fallthrough",
        (true, false) => "taken",
        (false, _) => "fallthrough",
    }
}

/// The control-flow graph of `f` as a DOT `digraph` named after the function: one node per
/// block (`bbN`), labelled with the block's name, its PTX label and its instructions, and one
/// edge per successor in [`Cfg::succs`] order, in block order.
pub fn cfg(f: &Function) -> String {
    let cfg = Cfg::new(f);
    let mut s = String::new();
    let _ = writeln!(s, "digraph {} {{", quoted(&f.name));
    s.push_str("  node [shape=box, fontname=\"monospace\"];\n");
    for b in f.block_ids() {
        let block = f.block(b);
        let mut label = format!("{b}");
        if let Some(l) = &block.label {
            let _ = write!(label, "  ; {l}");
        }
        label.push('\n');
        for inst in &block.insts {
            let _ = writeln!(label, "    {inst}");
        }
        let _ = writeln!(s, "  {b} [label=\"{}\"];", escape(&label));
    }
    for b in f.block_ids() {
        for &t in cfg.succs(b) {
            let _ = writeln!(s, "  {b} -> {t} [label=\"{}\"];", edge_label(f, b, t));
        }
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{Inst, OpKind, Operand, PReg, Reg};

    #[test]
    fn escapes_every_special_character() {
        assert_eq!(escape("plain R1, 0x4"), "plain R1, 0x4");
        assert_eq!(escape(r#"a"b"#), r#"a\"b"#);
        assert_eq!(escape(r"a\b"), r"a\\b");
        assert_eq!(escape("{prior %3}"), r"\{prior %3\}");
        assert_eq!(escape("<x>|y|"), r"\<x\>\|y\|");
        assert_eq!(escape("one\ntwo\n"), r"one\ltwo\l");
        // Escaping never leaves an unescaped quote that would end the string early.
        let e = escape(r#"\"\\""#);
        assert_eq!(e, r#"\\\"\\\\\""#);
        assert_eq!(quoted("f$1"), "\"f$1\"");
    }

    /// bb0: @P0 BRA bb2, falls to bb1; bb1 -> bb2 by a branch; bb2: EXIT.
    fn branchy() -> Function {
        let mut f = Function::new("k\"q", true);
        f.ssa = false;
        let b1 = f.new_block(None);
        let b2 = f.new_block(Some("END".into()));
        let p0 = Reg::phys(PReg {
            class: crate::mir::RegClass::Pred,
            num: 0,
        });
        f.block_mut(BlockId(0))
            .insts
            .push(Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(b2))]).guarded(p0, false));
        f.block_mut(BlockId(0)).fallthrough = Some(b1);
        let mut fabs = Operand::use_(Reg::phys(PReg::RZ));
        fabs.abs = true;
        f.block_mut(b1).insts.push(Inst::new(
            "FADD",
            &[],
            vec![Operand::def(Reg::phys(PReg::RZ)), fabs.clone(), fabs],
        ));
        f.block_mut(b1)
            .insts
            .push(Inst::new("BRA", &[], vec![Operand::new(OpKind::Block(b2))]));
        f.block_mut(b2).insts.push(Inst::new("EXIT", &[], vec![]));
        f
    }

    #[test]
    fn cfg_nodes_edges_and_labels() {
        let text = cfg(&branchy());
        assert!(text.starts_with("digraph \"k\\\"q\" {\n"), "{text}");
        assert!(text.ends_with("}\n"));
        assert!(text.contains("  bb0 -> bb2 [label=\"taken\"];\n"), "{text}");
        assert!(text.contains("  bb0 -> bb1 [label=\"fallthrough\"];\n"));
        assert!(text.contains("  bb1 -> bb2 [label=\"taken\"];\n"));
        assert_eq!(text.matches(" -> ").count(), 3);
        assert!(text.contains("bb2  ; END\\l    EXIT\\l"), "{text}");
        // `|RZ|` is escaped inside the label.
        assert!(text.contains("FADD RZ, \\|RZ\\|, \\|RZ\\|\\l"), "{text}");
    }
}
