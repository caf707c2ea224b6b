//! Checks of finished machine code, independent of the passes that produced it.
//!
//! * [`hazards`]: `ptxc check CUBIN` — every register access the control words do not protect.

pub mod hazards;

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// `ptxc check CUBIN`
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The sm_90a cubin to check (ptxc's or ptxas's).
    pub input: PathBuf,
}

/// Runs `ptxc check`: prints one line per hazard and `hazards: N`; exit status 1 when N > 0 or
/// the file cannot be read.
pub fn run(args: &CheckArgs) -> ExitCode {
    let bytes = match std::fs::read(&args.input) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("ptxc: error: cannot read '{}': {e}", args.input.display());
            return ExitCode::from(crate::cli::INPUT_ERROR);
        }
    };
    match hazards::check_cubin(&bytes) {
        Ok(h) => {
            print!("{}", hazards::report(&h));
            if h.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(crate::cli::INPUT_ERROR)
            }
        }
        Err(e) => {
            eprintln!("ptxc: error: {}: {e}", args.input.display());
            ExitCode::from(crate::cli::INPUT_ERROR)
        }
    }
}
