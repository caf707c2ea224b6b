//! ptxc: a PTX-to-SASS compiler for NVIDIA Hopper (sm_90a).
//!
//! The pipeline, front to back (see `docs/ARCHITECTURE.md`):
//!
//! 1. [`frontend`]: PTX text → tokens (logos) → AST (lalrpop) → checked module.

pub mod arena;
pub mod asm;
pub mod bench_kernels;
pub mod check;
pub mod cli;
pub mod diag;
pub mod diff;
pub mod driver;
pub mod emit;
pub mod frontend;
pub mod lower;
pub mod mir;
pub mod passes;
pub mod target;
