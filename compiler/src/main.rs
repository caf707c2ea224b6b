//! The `ptxc` command. See `ptxc --help`, `ptxc::cli` and the README.

fn main() -> std::process::ExitCode {
    ptxc::cli::restore_sigpipe();
    ptxc::cli::main(std::env::args())
}
