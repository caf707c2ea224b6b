//! The contract between compiled sm_90a code and the CUDA driver.
//!
//! Every value here was read off ptxas 13.1.115 output; `../shared/notes/ptxas-facts.md` §c
//! holds the evidence. This crate grows with the cubin writer.

/// Constant bank 0 (`c[0x0][...]`) as ptxas 13.1 lays it out for sm_90a (ptxas-facts §c.1).
pub mod cbank0 {
    /// `%ntid.x/y/z` at 0x0, 0x4, 0x8.
    pub const NTID: u32 = 0x0;
    /// `%nctaid.x/y/z` at 0xc, 0x10, 0x14.
    pub const NCTAID: u32 = 0xc;
    /// The first kernel parameter.
    pub const PARAM_BASE: u32 = 0x210;
}
