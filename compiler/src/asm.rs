//! `ptxc asm`: assemble a SASS listing (the format of `cuobjdump -sass`) into machine code.
//!
//! Placeholder until the SASS encoder lands: it reports that it cannot assemble yet.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// `ptxc asm [-arch sm_90a] IN.sass [--check] [-o OUT]`
#[derive(Debug, Args)]
pub struct AsmArgs {
    /// The SASS listing to assemble (`-` for standard input).
    pub input: PathBuf,
    /// Target architecture; sm_90a is the only one.
    #[arg(
        long = "gpu-name",
        visible_alias = "arch",
        value_name = "ARCH",
        default_value = "sm_90a"
    )]
    pub arch: String,
    /// Re-encode every instruction and compare it with the listed words.
    #[arg(long)]
    pub check: bool,
    /// Where to write the encoded instructions (raw 16-byte words).
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: &AsmArgs) -> ExitCode {
    eprintln!(
        "ptxc asm: error: the SASS assembler is not implemented yet (input {})",
        args.input.display()
    );
    ExitCode::from(crate::cli::INPUT_ERROR)
}
