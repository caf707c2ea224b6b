//! Output containers: the cubin (ELF) model, writer and reader.
//!
//! * [`model`]: the typed [`Cubin`](model::Cubin) the back end fills.
//! * [`write`]: model → bytes, reproducing ptxas 13.1's layout.
//! * [`read`]: bytes → model (for relinking, diffing and tests).
//! * [`listing`]: a cubin from a SASS listing with header comments (`ptxc asm -o OUT.cubin`).
//! * [`elf`], [`frame`], [`note`]: the ELF64 layer, `.debug_frame` and the `.note.nv.*` notes.
//! * [`sass`]: SASS listings of compiled functions; [`repeats`]: which instructions repeat (each
//!   distinct one is encoded and analysed once).
//! * [`scoreboard`]: control words (stalls, yield, scoreboards, wait masks, reuse).
//! * [`build`]: the cubin model of a compiled module (ptxc's kernels and their records).
//! * [`debug`]: the debug sections of a `-g` build; [`debug_regs`]: the format of ptxas's
//!   register-location sections (read and written, not yet generated).
//!
//! The contract values (constant bank 0, EIATTR codes, ELF constants) live in the
//! `ptxc-runtime-abi` crate (`runtime_abi`).

pub mod build;
pub mod debug;
pub mod debug_regs;
pub mod elf;
pub mod frame;
pub mod listing;
pub mod model;
pub mod note;
pub mod read;
pub mod repeats;
pub mod sass;
pub mod scoreboard;
pub mod write;

pub use model::Cubin;
pub use read::{ReadError, read};
pub use write::{WriteError, write};

/// Writes `model` to `path` through a temporary file and a rename, so that a failure never leaves
/// a partial cubin.
pub fn write_file(path: &std::path::Path, model: &Cubin) -> Result<(), WriteFileError> {
    let bytes = write(model).map_err(WriteFileError::Model)?;
    crate::driver::write_atomically(path, &bytes).map_err(|e| WriteFileError::Io(path.into(), e))
}

/// Why [`write_file`] failed.
#[derive(Debug)]
pub enum WriteFileError {
    Model(WriteError),
    Io(std::path::PathBuf, std::io::Error),
}

impl std::fmt::Display for WriteFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteFileError::Model(e) => e.fmt(f),
            WriteFileError::Io(p, e) => write!(f, "cannot write {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for WriteFileError {}
