//! The `ptxc` command, built inside this crate so that integration tests can run it
//! (`ptxc_bin!()`); identical to `compiler/src/main.rs`.

fn main() -> std::process::ExitCode {
    ptxc::cli::restore_sigpipe();
    ptxc::cli::main(std::env::args())
}
