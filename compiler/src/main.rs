//! The `ptxc` command. See `ptxc --help`, `ptxc::cli` and the README.
//!
//! `main` is the C entry point (`#![no_main]`), not Rust's: Rust's start-up installs a
//! stack-overflow handler, and to size the main thread's guard page it asks glibc for the
//! thread's attributes, which reads and parses `/proc/self/maps` — 120k instructions and a
//! system call, 6% of compiling a small kernel. ptxc needs nothing else from it: `std::env::args`
//! works without it on Linux, SIGPIPE keeps its default action (what `cli::restore_sigpipe`
//! gives other builds), a panic still prints its message and exits with 101, and standard
//! output is flushed before the process ends as a return from Rust's `main` would.
#![no_main]

/// Blocks of up to 256 MiB from size-class lists, the rest from glibc (`ptxc::arena`): a fifth
/// of a small compile's instructions were glibc's `malloc` and `free`.
#[global_allocator]
static ALLOCATOR: ptxc::arena::Arena = ptxc::arena::Arena::new();

#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    ptxc::cli::restore_sigpipe();
    tune_malloc();
    ALLOCATOR.install();
    let code = match std::panic::catch_unwind(|| ptxc::cli::main(std::env::args())) {
        // `ExitCode` does not say its number; find it among the 256 (a few comparisons).
        Ok(code) => (0..=255u8)
            .find(|&k| code == std::process::ExitCode::from(k))
            .map_or(1, i32::from),
        Err(_) => 101,
    };
    // Flush standard output (what a return from Rust's `main` does), then end the process at
    // once: the exit handlers (the dynamic loader's, the allocator's) have nothing to do that the
    // kernel does not do when the process ends.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // SAFETY: nothing below reads memory the allocator gave out.
    unsafe { ALLOCATOR.release_before_exit() };
    // SAFETY: `_exit` ends the process; every file ptxc wrote was closed when it was dropped,
    // and standard output was flushed above (standard error is unbuffered).
    unsafe { libc::_exit(code) }
}

/// glibc's malloc, told to grow the heap in large steps and never to give memory back: a large
/// kernel allocates and frees hundreds of thousands of small values, and by default glibc moves
/// the heap's end (`brk`) and trims it again and again (on the straight-line 16k kernel a fifth
/// of the time was spent in the kernel). The process is short-lived: what it frees is reused or
/// ends with it.
///
/// Measured against mimalloc (2026-12-01, `perf stat -r 100`): mimalloc runs fewer
/// instructions, but on a small kernel it costs 0.3–0.7 ms more CPU per process (its start-up,
/// and transparent huge pages it asks for and the kernel must zero), a third of a small
/// compile; that is why glibc stays.
fn tune_malloc() {
    // SAFETY: `mallopt` only sets allocator parameters; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
    }
}
