//! Constant bank 0 (`c[0x0][...]`): what the driver writes there before a launch, as ptxas 13.1
//! reads it on sm_90a.
//!
//! Source of every value: `shared/notes/ptxas-facts.md` §c.1 (how ptxas uses the value), with the
//! probe named beside it under `shared/notes/probes/`. No value here was observed at run time (no
//! GPU was available when they were established); the meaning is the one the generated code
//! gives them.

/// One field of constant bank 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in bank 0.
    pub offset: u32,
    /// Width in bytes.
    pub size: u32,
    /// What ptxas uses it for.
    pub meaning: &'static str,
    /// The probe that shows it.
    pub source: &'static str,
}

/// `%ntid.x/y/z`: 3 × u32 at 0x0, 0x4, 0x8.
pub const NTID: u32 = 0x0;
/// `%nctaid.x/y/z`: 3 × u32 at 0xc, 0x10, 0x14.
pub const NCTAID: u32 = 0xc;
/// The local-memory window base (64-bit): `cvta.local` adds it to the stack pointer.
pub const LOCAL_WINDOW: u32 = 0x20;
/// The initial stack pointer: every kernel starts with `LDC R1, c[0x0][0x28]`.
pub const STACK_INIT: u32 = 0x28;
/// `%dynamic_smem_size`.
pub const DYNAMIC_SMEM_SIZE: u32 = 0x2c;
/// `%gridid` (64-bit).
pub const GRIDID: u32 = 0x30;
/// `%envreg0..31`: u32 each, from 0x40.
pub const ENVREG: u32 = 0x40;
/// `%reserved_smem_offset_end`.
pub const RESERVED_SMEM_OFFSET_END: u32 = 0x68;
/// `%nsmid`.
pub const NSMID: u32 = 0x10c;
/// Subtracted from `SR_SMEMSZ` for `%total_smem_size`.
pub const TOTAL_SMEM_ADJUST: u32 = 0x114;
/// `%aggr_smem_size = min(SR_SMEMSZ, c[0x13c])`.
pub const AGGR_SMEM_SIZE: u32 = 0x13c;
/// The explicit-cluster flag: `%is_explicit_cluster = (c[0x140] == 1)`; barrier.cluster without
/// `.explicitcluster` branches on it.
pub const EXPLICIT_CLUSTER: u32 = 0x140;
/// `%cluster_nctaid.x/y/z` (the cluster shape): 3 × u32 at 0x144, 0x148, 0x14c.
pub const CLUSTER_SHAPE: u32 = 0x144;
/// Float reciprocals of the cluster shape (x, y, z) at 0x150, 0x154, 0x158, used to compute
/// `%clusterid` and `%cluster_ctaid`.
pub const CLUSTER_SHAPE_RCP: u32 = 0x150;
/// `%nclusterid.x/y/z`: 3 × u32 at 0x15c, 0x160, 0x164.
pub const NCLUSTERID: u32 = 0x15c;
/// `%cluster_nctarank`.
pub const CLUSTER_NCTARANK: u32 = 0x188;
/// Bit 0 selects `MEMBAR.SC.GPU` (set) or `MEMBAR.SC.SYS` (clear) for `fence.proxy.alias`.
pub const FENCE_PROXY_ALIAS_SCOPE: u32 = 0x18c;
/// The global memory descriptor (64-bit): `ULDC.64 UR4, c[0x0][0x208]`, used as `desc[UR4]` by
/// every global load, store and atomic.
pub const GLOBAL_MEM_DESC: u32 = 0x208;
/// The first kernel parameter. `.nv.constant0.<kernel>` is `PARAM_BASE + parameter bytes` long.
pub const PARAM_BASE: u32 = 0x210;

/// Every field above, for documentation and tests.
pub const FIELDS: &[Field] = &[
    Field {
        offset: NTID,
        size: 12,
        meaning: "%ntid.x/y/z",
        source: "02_cluster_sregs",
    },
    Field {
        offset: NCTAID,
        size: 12,
        meaning: "%nctaid.x/y/z",
        source: "02_cluster_sregs",
    },
    Field {
        offset: LOCAL_WINDOW,
        size: 8,
        meaning: "local window base (cvta.local)",
        source: "11_stack_spill/cvta_local.ptx",
    },
    Field {
        offset: STACK_INIT,
        size: 4,
        meaning: "initial stack pointer (LDC R1)",
        source: "00_abi/simple.ptx",
    },
    Field {
        offset: DYNAMIC_SMEM_SIZE,
        size: 4,
        meaning: "%dynamic_smem_size",
        source: "02_cluster_sregs",
    },
    Field {
        offset: GRIDID,
        size: 8,
        meaning: "%gridid",
        source: "02_cluster_sregs",
    },
    Field {
        offset: ENVREG,
        size: 128,
        meaning: "%envreg0..31",
        source: "02_cluster_sregs",
    },
    Field {
        offset: RESERVED_SMEM_OFFSET_END,
        size: 4,
        meaning: "%reserved_smem_offset_end",
        source: "02_cluster_sregs",
    },
    Field {
        offset: NSMID,
        size: 4,
        meaning: "%nsmid",
        source: "02_cluster_sregs",
    },
    Field {
        offset: TOTAL_SMEM_ADJUST,
        size: 4,
        meaning: "%total_smem_size = SR_SMEMSZ - c[0x114]",
        source: "02_cluster_sregs",
    },
    Field {
        offset: AGGR_SMEM_SIZE,
        size: 4,
        meaning: "%aggr_smem_size = min(SR_SMEMSZ, c[0x13c])",
        source: "02_cluster_sregs",
    },
    Field {
        offset: EXPLICIT_CLUSTER,
        size: 4,
        meaning: "explicit-cluster flag (== 1)",
        source: "06_barrier_cluster, 02_cluster_sregs",
    },
    Field {
        offset: CLUSTER_SHAPE,
        size: 12,
        meaning: "%cluster_nctaid.x/y/z",
        source: "02_cluster_sregs",
    },
    Field {
        offset: CLUSTER_SHAPE_RCP,
        size: 12,
        meaning: "float reciprocals of the cluster shape",
        source: "02_cluster_sregs",
    },
    Field {
        offset: NCLUSTERID,
        size: 12,
        meaning: "%nclusterid.x/y/z",
        source: "02_cluster_sregs",
    },
    Field {
        offset: CLUSTER_NCTARANK,
        size: 4,
        meaning: "%cluster_nctarank",
        source: "02_cluster_sregs",
    },
    Field {
        offset: FENCE_PROXY_ALIAS_SCOPE,
        size: 4,
        meaning: "fence.proxy.alias scope bit",
        source: "05_fences/fence_proxy_alias.ptx",
    },
    Field {
        offset: GLOBAL_MEM_DESC,
        size: 8,
        meaning: "global memory descriptor",
        source: "00_abi/simple.ptx",
    },
    Field {
        offset: PARAM_BASE,
        size: 0,
        meaning: "first kernel parameter",
        source: "00_abi/params.ptx",
    },
];

/// The field that contains `offset`, if any.
pub fn field_at(offset: u32) -> Option<&'static Field> {
    FIELDS
        .iter()
        .find(|f| offset >= f.offset && offset < f.offset + f.size.max(1))
}
