//! The pass manager: the MIR pipeline in one place, with the verifier after every pass (in
//! debug builds and tests), `--print-after-all`, `--print-after=PASS` and `--time-passes`.
//!
//! Each pass is one file in this directory and one line in [`PIPELINE`].

pub mod cleanup;
pub mod coalesce_copies;
pub mod coalesce_tuples;
pub mod early_exit;
pub mod exit_bookend;
pub mod out_of_ssa;
pub mod peel_wait;
pub mod prologue;
pub mod reconverge;
pub mod regalloc;
pub mod remat_calls;
pub mod schedule;
pub mod sink_sregs;

use crate::mir::{Function, verify::verify};
use std::time::{Duration, Instant};

/// A transformation of one MIR function. An `Err` is an internal error (a compiler bug or a
/// limit of ptxc), reported as a diagnostic, never a panic.
pub trait Pass {
    /// The name `--print-after` takes.
    fn name(&self) -> &'static str;
    fn run(&self, f: &mut Function) -> Result<(), String>;
}

/// The MIR pipeline, in order. Instruction selection (`lower::isel`) builds the MIR these run
/// on.
pub const PIPELINE: &[&dyn Pass] = &[
    &cleanup::RemoveUnreachable,
    &cleanup::DeadCode,
    &sink_sregs::SinkSregs,
    &remat_calls::RematCalls,
    &coalesce_tuples::CoalesceTuples,
    &schedule::Schedule,
    &early_exit::EarlyExit,
    &out_of_ssa::OutOfSsa,
    &peel_wait::PeelWait,
    &reconverge::Reconverge,
    &coalesce_copies::CoalesceCopies,
    &regalloc::RegAlloc,
    &prologue::Prologue,
];

/// The pipeline `opts` asks for: [`PIPELINE`]; under `-g` without `early-exit` (`ptxas -g`
/// keeps the branch to the kernel's one `EXIT`: `@P0 BRA` in `vector_add`) nor `peel-wait`
/// (`ptxas -g` keeps a `try_wait` loop as written: 09_mbarrier/try_wait_loop) nor
/// `remat-calls` (debug code keeps values where the PTX has them), and with `exit-bookend`.
pub fn pipeline(opts: &Options) -> Vec<&'static dyn Pass> {
    let mut passes = PIPELINE.to_vec();
    if !opts.schedule || opts.device_debug {
        passes.retain(|p| p.name() != "schedule");
    }
    if opts.device_debug {
        passes.retain(|p| !matches!(p.name(), "early-exit" | "peel-wait" | "remat-calls"));
        passes.push(&exit_bookend::ExitBookend);
    }
    passes
}

/// The pipeline `opts` asks for, up to and including the pass named `name` (`isel`: none, the
/// MIR instruction selection made); `None` when no pass of that pipeline has the name.
pub fn pipeline_through(opts: &Options, name: &str) -> Option<Vec<&'static dyn Pass>> {
    let mut passes = pipeline(opts);
    if name == "isel" {
        passes.clear();
        return Some(passes);
    }
    let at = passes.iter().position(|p| p.name() == name)?;
    passes.truncate(at + 1);
    Some(passes)
}

/// The names `--print-after` and `--dot-after` take under `opts`: `isel`, then the passes.
pub fn pass_names(opts: &Options) -> Vec<&'static str> {
    std::iter::once("isel")
        .chain(pipeline(opts).iter().map(|p| p.name()))
        .collect()
}

/// How to run the pipeline.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Run the verifier after every pass (on by default in debug builds).
    pub verify: bool,
    pub print_after_all: bool,
    /// Pass names after which to print the MIR (`isel` for the input).
    pub print_after: Vec<String>,
    pub time_passes: bool,
    /// `-g`: debug code, with ptxas's exit bookend.
    pub device_debug: bool,
    /// `--schedule`: run the list scheduler (`schedule.rs`). Off by default: instruction
    /// selection already emits most recipes in ptxas's order, which the scheduler does not
    /// keep.
    pub schedule: bool,
}

impl Options {
    pub fn new() -> Options {
        Options {
            verify: cfg!(debug_assertions),
            ..Options::default()
        }
    }

    fn wants_print(&self, pass: &str) -> bool {
        self.print_after_all || self.print_after.iter().any(|p| p == pass)
    }
}

/// What running the pipeline produced besides the MIR: the requested dumps and timings.
#[derive(Debug, Default)]
pub struct Report {
    pub dumps: String,
    pub timings: Vec<(&'static str, Duration)>,
}

/// A verifier failure: a compiler bug, reported with the pass that caused it.
#[derive(Debug)]
pub struct PassError {
    pub pass: &'static str,
    pub function: String,
    pub errors: Vec<String>,
}

impl std::fmt::Display for PassError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A limit of ptxc a pass states itself (`ptxc cannot keep a predicate live across a
        // call yet`) is not a compiler bug: say it as it is.
        if let [e] = &self.errors[..]
            && e.starts_with("ptxc cannot")
        {
            return writeln!(f, "{e}");
        }
        writeln!(
            f,
            "internal error: the MIR of `{}` is invalid after `{}`:",
            self.function, self.pass
        )?;
        for e in &self.errors {
            writeln!(f, "  {e}")?;
        }
        Ok(())
    }
}

/// Runs `passes` over `f`, verifying and printing as `opts` asks.
pub fn run(
    f: &mut Function,
    passes: &[&dyn Pass],
    opts: &Options,
    report: &mut Report,
) -> Result<(), PassError> {
    check(f, "isel", opts, report)?;
    for pass in passes {
        let t = Instant::now();
        pass.run(f).map_err(|e| PassError {
            pass: pass.name(),
            function: f.name.clone(),
            errors: vec![e],
        })?;
        let dt = t.elapsed();
        if opts.time_passes {
            match report.timings.iter_mut().find(|(n, _)| *n == pass.name()) {
                Some((_, d)) => *d += dt,
                None => report.timings.push((pass.name(), dt)),
            }
        }
        check(f, pass.name(), opts, report)?;
    }
    Ok(())
}

fn check(
    f: &Function,
    pass: &'static str,
    opts: &Options,
    report: &mut Report,
) -> Result<(), PassError> {
    if opts.wants_print(pass) {
        // Printed at once, so that the dump before a failing pass is there to read.
        eprint!("; after {pass}\n{f}\n");
        report.dumps.push_str(&format!("; after {pass}\n{f}\n"));
    }
    if opts.verify {
        verify(f).map_err(|errs| PassError {
            pass,
            function: f.name.clone(),
            errors: errs.iter().map(ToString::to_string).collect(),
        })?;
    }
    Ok(())
}
