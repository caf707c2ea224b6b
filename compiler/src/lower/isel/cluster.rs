//! Hopper's cluster and asynchronous features, with the recipes ptxas really uses
//! (ptxas-facts.md §a and §e): `mapa`, `getctarank`, `barrier.cluster`, fences, `elect.sync`,
//! `mbarrier.*`, bulk and tensor copies, `multimem.*`.

use super::{Cx, PtxOp};

impl Cx<'_> {
    /// The cluster/async family.
    pub(super) fn lower_cluster(&mut self, op: &PtxOp<'_>) -> Option<bool> {
        Some(match op.opcode {
            "mapa"
            | "getctarank"
            | "barrier.cluster.arrive"
            | "barrier.cluster.wait"
            | "fence"
            | "membar"
            | "elect"
            | "griddepcontrol"
            | "setmaxnreg" => false,
            o if o.starts_with("mbarrier.")
                || o.starts_with("cp.")
                || o.starts_with("multimem.")
                || o.starts_with("tensormap.")
                || o.starts_with("wgmma.")
                || matches!(
                    o,
                    "stmatrix" | "ldmatrix" | "movmatrix" | "mma" | "red.async" | "st.async"
                ) =>
            {
                false
            }
            _ => return None,
        })
    }
}
