//! IEEE-rounded division, reciprocal and square root (`div.rn`, `rcp.rn`, `sqrt.rn`, the f64
//! forms), as ptxas lowers them.

use super::Cx;
use crate::frontend::ast;
use crate::frontend::types::Ty;

impl Cx<'_> {
    pub(super) fn ieee_div(&mut self, _ins: &ast::Instruction, _t: Ty, _flags: &[&str]) -> bool {
        false
    }

    pub(super) fn ieee_rcp_sqrt(
        &mut self,
        _ins: &ast::Instruction,
        _opcode: &str,
        _t: Ty,
        _flags: &[&str],
    ) -> bool {
        false
    }
}
