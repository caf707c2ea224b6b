//! The `ptxc` command, built inside this crate so that integration tests can run it
//! (`ptxc_bin!()`): the same `ptxc::cli::main` as `compiler/src/main.rs`, behind Rust's own
//! entry point (the real binary also skips Rust's start-up, serves small allocations itself
//! (`ptxc::arena`) and is linked statically with glibc, which changes its speed and nothing it
//! prints or writes).

fn main() -> std::process::ExitCode {
    ptxc::cli::restore_sigpipe();
    ptxc::cli::main(std::env::args())
}
