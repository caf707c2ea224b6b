//! The `.note.nv.*` notes ptxas 13.1 writes into every cubin. Both have the owner
//! `"NVIDIA Corp"` and 4-byte alignment. Layouts as cuobjdump 13.2 decodes them.
//!
//! * `.note.nv.tkinfo` (type 2000, "NVIDIA CUDA Toolkit Information"): a u32 note version (2),
//!   then five u32 offsets into the string area that follows them (object file name, tool name,
//!   tool version, tool branch, tool command-line arguments), then the NUL-terminated strings.
//!   ptxas 13.1 writes an empty object name, `ptxas`, `Cuda compilation tools, release 13.1,
//!   V13.1.115`, `Build cuda_13.1.r13.1/compiler.37061995_0` and its options (`-arch sm_90a `).
//! * `.note.nv.cuinfo` (type 1000, "NVIDIA CUDA Information"): u16 note version (2), u16 virtual SM
//!   (90), u32 toolkit version (131 = 13.1). Its `sh_link` is the tkinfo section, its `sh_info`
//!   the `.nv.compat` section.

/// The note owner.
pub const OWNER: &str = "NVIDIA Corp";
/// `n_type` of `.note.nv.cuinfo`.
pub const NT_CUDA_INFO: u32 = 1000;
/// `n_type` of `.note.nv.tkinfo`.
pub const NT_CUDA_TOOLKIT_INFO: u32 = 2000;
/// The note version of both notes.
pub const NOTE_VERSION: u32 = 2;
/// Toolkit version ptxas 13.1 records (major * 10 + minor).
pub const TOOLKIT_13_1: u32 = 131;

/// ptxas 13.1.115's tool strings.
pub const PTXAS_TOOL_NAME: &str = "ptxas";
pub const PTXAS_TOOL_VERSION: &str = "Cuda compilation tools, release 13.1, V13.1.115";
pub const PTXAS_TOOL_BRANCH: &str = "Build cuda_13.1.r13.1/compiler.37061995_0";
