//! Output containers: the cubin (ELF) model, writer and reader.
//!
//! * [`model`]: the typed [`Cubin`](model::Cubin) the back end fills.
//! * [`write`]: model → bytes, reproducing ptxas 13.1's layout.
//! * [`read`]: bytes → model (for relinking, diffing and tests).
//! * [`elf`], [`frame`], [`note`]: the ELF64 layer, `.debug_frame` and the `.note.nv.*` notes.
//!
//! The contract values (constant bank 0, EIATTR codes, ELF constants) live in the
//! `ptxc-runtime-abi` crate (`runtime_abi`).

pub mod elf;
pub mod frame;
pub mod model;
pub mod note;
pub mod read;
pub mod write;

pub use model::Cubin;
pub use read::{ReadError, read};
pub use write::{WriteError, write};
