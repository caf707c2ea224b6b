//! The contract between compiled sm_90a code and the CUDA driver, as typed data.
//!
//! Every value here was read off ptxas 13.1.115 output; each item names its source: a section of
//! `../shared/notes/ptxas-facts.md`, a probe under `../shared/notes/probes/`, or a corpus file. The
//! cubin writer and reader (`ptxc::emit`) take every number from here.
//!
//! * [`cbank0`]: constant bank 0 layout (launch dimensions, cluster shape, stack pointer, the
//!   global memory descriptor, the parameter base 0x210).
//! * [`smem`]: the shared-memory window (user shared memory starts at 0x400).
//! * [`param`]: kernel parameter layout and the KPARAM_INFO / KPARAM_INFO_V2 choice.
//! * [`eiattr`]: every `EIATTR` record ptxas emits for the corpora, typed, with encode/decode and
//!   the record order.
//! * [`compat`]: the `.nv.compat` attributes.
//! * [`elf`]: ELF header values, section types and flags, symbol conventions, `.text` padding.
//! * [`reloc`]: relocation types.
//! * [`note`]: the `.note.nv.tkinfo` / `.note.nv.cuinfo` notes.

pub mod cbank0;
pub mod compat;
pub mod eiattr;
pub mod elf;
pub mod note;
pub mod param;
pub mod reloc;

/// The shared-memory window.
pub mod smem {
    /// The first byte of user shared memory: every kernel's shared variables start here, after 1 KiB
    /// reserved for the system (ptxas-facts §e.5; `.nv.shared.<k>` sizes include it).
    pub const USER_BASE: u32 = 0x400;
    /// Shared-symbol addresses carry the CTA rank in bits 31..24 (`(SR_CgaCtaId << 24) + 0x400 + off`).
    pub const CTA_RANK_SHIFT: u32 = 24;
}
