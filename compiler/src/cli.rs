//! The command line. ptxc takes ptxas's spellings where ptxas has the option (`-arch sm_90a`,
//! `-o`, `-v`, `-g`, `-O3`, `--gpu-name`, `--output-file`), so it can stand in for ptxas in a
//! build. Exit codes: 0 success, 1 an error in the input, 2 a usage error.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;

/// What to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// A cubin (the default).
    Cubin,
    /// The parsed and checked syntax tree.
    Ast,
}

/// ptxc: a PTX-to-SASS compiler for NVIDIA Hopper (sm_90a).
#[derive(Debug, Parser)]
#[command(
    name = "ptxc",
    version = concat!(env!("CARGO_PKG_VERSION"), " (PTX ISA up to 9.1; target sm_90a)"),
    about = "ptxc: compile PTX to Hopper (sm_90a) SASS, the way ptxas does",
    after_help = "ptxas-style spellings are accepted: -arch sm_90a, -o out.cubin, -v, -g, -O3.\n\
                  Use `-` as INPUT to read standard input."
)]
pub struct Cli {
    /// The PTX file to compile (`-` for standard input).
    pub input: PathBuf,

    /// Target architecture (ptxas: -arch). ptxc generates code for sm_90a; sm_90 is accepted and
    /// gives the same code, as with ptxas.
    #[arg(
        long = "gpu-name",
        visible_alias = "arch",
        value_name = "ARCH",
        default_value = "sm_90a"
    )]
    pub arch: String,

    /// Output file (ptxas' default is elf.o).
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// What to produce.
    #[arg(long, value_enum, default_value = "cubin")]
    pub emit: Emit,

    /// Print resource usage, like ptxas -v.
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Generate debug code (ptxas -g): no optimisation, exit bookends.
    #[arg(short = 'g', long = "device-debug")]
    pub device_debug: bool,

    /// Optimisation level 0-3 (ptxas -O).
    #[arg(short = 'O', long = "opt-level", value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: u8,
}

/// Rewrites ptxas's single-dash long options (`-arch sm_90a`, `-arch=sm_90a`) into the
/// double-dash form clap understands.
pub fn normalize_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .map(|a| {
            for long in [
                "arch",
                "gpu-name",
                "output-file",
                "verbose",
                "device-debug",
                "opt-level",
            ] {
                let single = format!("-{long}");
                if a == single {
                    return format!("--{long}");
                }
                if let Some(v) = a.strip_prefix(&format!("{single}=")) {
                    return format!("--{long}={v}");
                }
            }
            a
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_spellings() {
        let args = normalize_args(
            ["ptxc", "-arch", "sm_90a", "-O3", "x.ptx", "-o", "y"].map(String::from),
        );
        let cli = Cli::try_parse_from(args).unwrap();
        assert_eq!(cli.arch, "sm_90a");
        assert_eq!(cli.opt_level, 3);
        assert_eq!(cli.output.unwrap(), PathBuf::from("y"));
        let args = normalize_args(["ptxc", "-arch=sm_90", "x.ptx"].map(String::from));
        assert_eq!(Cli::try_parse_from(args).unwrap().arch, "sm_90");
    }
}
