//! Writes the parsed PTX instruction table (`isa_forms::parse_form` on every line) as Rust
//! constants, for `$OUT_DIR/isa_opcodes.rs` (included by `src/frontend/isa.rs`).

use crate::isa_forms::{Form, OperandKind, TypeRef};
use std::fmt::Write;

/// The forms of one opcode as a slice literal `&[Form { … }, …]`.
pub fn forms_literal(forms: &[Form]) -> String {
    let mut o = String::from("&[");
    for f in forms {
        let _ = write!(o, "Form {{ opcode: {:?}, types: &[", f.opcode);
        for t in f.types {
            let _ = write!(
                o,
                "TypeSlot {{ slot: {:?}, required: {}, allowed: &{:?} }}, ",
                t.slot, t.required, t.allowed
            );
        }
        let _ = write!(o, "], fixed: &{:?}, groups: &[", f.fixed);
        for g in f.groups {
            let _ = write!(
                o,
                "ModGroup {{ required: {}, vector: {}, alternatives: &{:?} }}, ",
                g.required, g.vector, g.alternatives
            );
        }
        o.push_str("], operands: &[");
        for op in f.operands {
            let kind = match &op.kind {
                OperandKind::Dest { ty, relaxed, pair } => format!(
                    "OperandKind::Dest {{ ty: {}, relaxed: {relaxed}, pair: {pair} }}",
                    type_ref(ty)
                ),
                OperandKind::Value(t) => format!("OperandKind::Value({})", type_ref(t)),
                OperandKind::WideValue(t) => format!("OperandKind::WideValue({})", type_ref(t)),
                OperandKind::Register(t) => format!("OperandKind::Register({})", type_ref(t)),
                OperandKind::Immediate(t) => format!("OperandKind::Immediate({})", type_ref(t)),
                other => format!("OperandKind::{other:?}"),
            };
            let _ = write!(
                o,
                "OperandSpec {{ kind: {kind}, optional: {} }}, ",
                op.optional
            );
        }
        let _ = write!(
            o,
            "], variadic: {}, gate: {:?}, nonsync: {}, line: {} }}, ",
            f.variadic, f.gate, f.nonsync, f.line
        );
    }
    o.push(']');
    o
}

fn type_ref(t: &TypeRef) -> String {
    match t {
        TypeRef::Slot(c) => format!("TypeRef::Slot({c:?})"),
        TypeRef::Double(c) => format!("TypeRef::Double({c:?})"),
        TypeRef::Fixed(n) => format!("TypeRef::Fixed({n:?})"),
    }
}
