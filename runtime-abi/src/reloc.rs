//! CUDA relocation types (`R_CUDA_*`, the low 32 bits of `r_info`) that ptxas 13.1 leaves in
//! sm_90a cubins of the corpora. Names are cuobjdump 13.2's.

/// 64-bit address: `.debug_frame` function addresses, `.nv.constant4` global addresses, DWARF.
pub const R_CUDA_64: u32 = 2;
/// A 64-bit generic address in a constant initializer (`.const .u64 p = g;`).
pub const R_CUDA_G64: u32 = 4;
/// A texture/surface/sampler header index in `.nv.constant0.<k>`
/// (`corpus/zluda/sm90a/tex_read_1d_float.ptx`).
pub const R_CUDA_TEX_HEADER_INDEX: u32 = 6;
/// A surface header index in `.nv.constant0.<k>` (seen in `-g` builds).
pub const R_CUDA_SURF_HEADER_INDEX: u32 = 0x34;
/// The low 32 bits of an absolute address in an instruction's 32-bit immediate.
pub const R_CUDA_ABS32_LO_32: u32 = 0x38;
/// The high 32 bits of an absolute address in an instruction's 32-bit immediate.
pub const R_CUDA_ABS32_HI_32: u32 = 0x39;
/// A call target (`CALL.ABS.NOINC`): bits 16..=34 of the instruction
/// (`corpus/zluda/sm90a/_Z9vectorAddPKfS0_Pfi.ptx`).
pub const R_CUDA_ABS55_16_34: u32 = 0x4b;

/// cuobjdump's name of a relocation type.
pub fn name(ty: u32) -> String {
    match ty {
        0 => "R_CUDA_NONE".into(),
        R_CUDA_64 => "R_CUDA_64".into(),
        R_CUDA_G64 => "R_CUDA_G64".into(),
        R_CUDA_TEX_HEADER_INDEX => "R_CUDA_TEX_HEADER_INDEX".into(),
        R_CUDA_SURF_HEADER_INDEX => "R_CUDA_SURF_HEADER_INDEX".into(),
        R_CUDA_ABS32_LO_32 => "R_CUDA_ABS32_LO_32".into(),
        R_CUDA_ABS32_HI_32 => "R_CUDA_ABS32_HI_32".into(),
        R_CUDA_ABS55_16_34 => "R_CUDA_ABS55_16_34".into(),
        t => format!("R_CUDA_{t:#x}"),
    }
}
