//! Special registers: `%tid`, `%ctaid`, `%ntid`, `%laneid`, the cluster registers, … as
//! `S2R`/`S2UR` of an `SR_*` register or `LDC` from constant bank 0 (ptxas-facts.md §a.3.2).

use super::{Cx, cb, sr};
use crate::frontend::ast::Name;
use crate::mir::{Inst, OpKind, Operand, Reg, RegClass};

impl Cx<'_> {
    /// Reads a special register into a fresh register.
    pub(super) fn sreg(&mut self, name: &Name, component: Option<&Name>) -> Option<Reg> {
        let comp = component.map(|c| match c.text.as_str() {
            ".y" => 1,
            ".z" => 2,
            ".w" => 3,
            _ => 0,
        });
        let d = self.new_vreg(RegClass::Gpr, 1);
        let dr = Reg::whole(d, 1);
        let s2r = |n: u8| {
            Inst::new(
                "S2R",
                &[],
                vec![Operand::def(dr), Operand::new(OpKind::SReg(n))],
            )
        };
        let ldc = |off: i64| {
            Inst::new(
                "LDC",
                &[],
                vec![
                    Operand::def(dr),
                    Operand::new(OpKind::CBank {
                        bank: 0,
                        base: None,
                        offset: off,
                    }),
                ],
            )
        };
        let inst = match (name.text.as_str(), comp) {
            ("%tid", Some(c)) if c < 3 => s2r(sr::TID_X + c as u8),
            ("%ctaid", Some(c)) if c < 3 => s2r(sr::CTAID_X + c as u8),
            ("%ntid", Some(c)) if c < 3 => ldc(cb::NTID + 4 * c),
            ("%nctaid", Some(c)) if c < 3 => ldc(cb::NCTAID + 4 * c),
            ("%laneid", None) => s2r(sr::LANEID),
            ("%cluster_ctarank", None) => s2r(sr::CGA_CTA_ID),
            ("%cluster_nctarank", None) => ldc(0x188),
            ("%cluster_nctaid", Some(c)) if c < 3 => ldc(0x144 + 4 * c),
            ("%nclusterid", Some(c)) if c < 3 => ldc(0x15c + 4 * c),
            _ => {
                self.error(
                    name.span,
                    format!("ptxc cannot read the special register `{}` yet", name.text),
                );
                return None;
            }
        };
        self.emit_unguarded(inst);
        Some(dr)
    }
}
