//! `ptxc-sim`: a functional CPU simulator of NVIDIA Hopper (sm_90a) SASS.
//!
//! ptxc has no GPU to test on, so correctness is tested differentially: a kernel is compiled by
//! NVIDIA's ptxas and by ptxc, both cubins run here on the same inputs, and the outputs are
//! compared with each other and with known-good results.
//!
//! # Use
//!
//! ```no_run
//! use ptxc_sim::{Device, Kernel, LaunchConfig};
//! let cubin = std::fs::read("add.cubin").unwrap();
//! let kernel = Kernel::from_cubin(&cubin, "add").unwrap();
//! let mut dev = Device::new();
//! let input = dev.global.alloc("input", 1u64.to_le_bytes().to_vec());
//! let output = dev.global.alloc("output", vec![0; 8]);
//! let cfg = LaunchConfig::new([1, 1, 1], [1, 1, 1]).params_u64(&[input, output]);
//! dev.launch(&kernel, &cfg).unwrap();
//! assert_eq!(dev.global.region(output).unwrap().data, 2u64.to_le_bytes());
//! ```
//!
//! # The execution model
//!
//! * **Decoding.** The code is decoded once with ptxc's own sm_90a model
//!   (`ptxc::target::sm90a::decode`); every operand slot of the instruction's form is kept, the
//!   ones nvdisasm leaves out included ([`program`]). A word that does not decode is an error
//!   only if it is executed.
//! * **Functional, in order.** The control word (stall counts, scoreboards, yield, reuse) is
//!   ignored: each instruction completes before the next starts, so results never depend on
//!   timing. `DEPBAR`, `MEMBAR`, `NOP`, `ERRBAR`, … have no effect.
//! * **Threads and warps.** A CTA's threads are grouped in warps of 32 in `%tid` order
//!   (x fastest). A thread has R0–R254 (RZ reads 0), P0–P6 (PT reads true), the convergence
//!   barriers B0–B15, its own PC and its own local memory; a warp has UR0–UR62 (URZ) and
//!   UP0–UP6 (UPT).
//! * **SIMT.** A warp issues one instruction at a time for the group of its runnable threads
//!   that are at the lowest PC, so divergent paths run one after the other and threads meet
//!   again when they reach the same PC. (If the lowest group keeps the warp for 20 000 issues
//!   while another group could run, the next group gets an issue: independent thread scheduling
//!   guarantees progress to a thread that another thread of its warp is waiting for.)
//!   Per-thread instructions are evaluated thread by thread, in lane order, each under its own
//!   guard predicate; uniform-datapath instructions (`U*`, guarded by a `UP`) run once for the
//!   group. Warp-collective instructions (`SHFL`, `VOTE`, `VOTEU`, `MATCH`, `REDUX`, `ELECT`,
//!   `R2UR`, `BRA.U.ANY`, `BRA.DIV`, `BREAK`, `LDSM`, `STSM`, `HMMA`, `IMMA`) read the registers of the
//!   whole group before writing any.
//! * **Synchronisation.** `BSSY Bx` records the executing group's mask in Bx; `BSYNC Bx` waits
//!   until every thread of that mask has arrived at the same `BSYNC` or exited; `BREAK` removes
//!   threads from a barrier. `WARPSYNC mask` waits until every non-exited thread of the mask is
//!   at the same `WARPSYNC`. `BAR.SYNC` and `BAR.RED` are CTA barriers: a barrier without a
//!   thread count opens when every non-exited thread of the CTA has arrived, one with a count
//!   when that many threads have, counted in whole warps as on the GPU; `B2R.RESULT` reads the
//!   reduction. The warps of a CTA take turns, 1000 instructions at a time or until blocked, so
//!   a warp waiting on memory another warp writes makes progress; the CTAs of a grid run one
//!   after the other. A state where no thread can run is reported as a deadlock, and a step
//!   budget ([`LaunchConfig::max_steps`]) bounds every launch.
//! * **Memory.** See [`mem`]: global buffers at fake 64-bit addresses, constant banks from the
//!   cubin and the launch (bank 0: `%ntid` at 0x0, `%nctaid` at 0xc, the local window at 0x20,
//!   the stack pointer at 0x28, the dynamic shared size at 0x2c, the global descriptor at 0x208,
//!   parameters from 0x210), shared memory with the CTA rank in address bits \[31:24\], per-thread
//!   local memory through R1, and generic addresses that map onto all three. Reading a constant
//!   the launch did not define, or memory outside every buffer, is an error.
//! * **Arithmetic.** Integer instructions are exact. Floating-point instructions round exactly
//!   as IEEE 754 says in the instruction's mode, with `.FTZ` flushing, through the soft-float
//!   code in [`fp`]; NaN results are the GPU's canonical NaN. `MUFU` (`RCP`, `RSQ`, `SQRT`,
//!   `EX2`, `LG2`, `SIN`, `COS`, `TANH`, `RCP64H`, `RSQ64H`) is an *approximation* on the GPU;
//!   here it is the correctly rounded function, and each use is recorded in
//!   [`Stats::approximations`] so that a comparison can apply a tolerance. `FCHK` is
//!   conservative (it sends every operand pair that is not comfortably in range to the slow
//!   path, which computes the same IEEE result).
//! * **Never a guess.** An instruction, modifier or operand shape whose semantics is not
//!   implemented stops the launch with [`SimError::Unimplemented`]; nothing panics on any input.

pub mod cubin;
mod exec;
pub mod fp;
pub mod mem;
pub mod program;

pub use cubin::Kernel;
pub use exec::{Device, LaunchConfig, Stats};

use std::fmt;

/// Why a load or a launch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The cubin cannot be loaded.
    Load(String),
    /// The launch configuration is invalid.
    Launch(String),
    /// An access outside the defined memory.
    Memory(String),
    /// An instruction, modifier or operand form whose semantics the simulator does not have.
    Unimplemented(String),
    /// An instruction that cannot execute as encoded (a word that does not decode, an
    /// operand of the wrong kind).
    Invalid(String),
    /// `BPT.TRAP` or a branch outside the code.
    Trap(String),
    /// No thread can make progress.
    Deadlock(String),
    /// The step budget ran out (an endless loop?).
    StepLimit(u64),
    /// An error while executing the instruction at `addr`.
    At {
        addr: u64,
        instr: String,
        error: Box<SimError>,
    },
}

impl SimError {
    /// The innermost error (without the instruction context).
    pub fn root(&self) -> &SimError {
        match self {
            SimError::At { error, .. } => error.root(),
            e => e,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Load(m) => write!(f, "cannot load: {m}"),
            SimError::Launch(m) => write!(f, "invalid launch: {m}"),
            SimError::Memory(m) => write!(f, "memory: {m}"),
            SimError::Unimplemented(m) => write!(f, "not implemented: {m}"),
            SimError::Invalid(m) => write!(f, "invalid: {m}"),
            SimError::Trap(m) => write!(f, "trap: {m}"),
            SimError::Deadlock(m) => write!(f, "deadlock: {m}"),
            SimError::StepLimit(n) => write!(f, "step limit of {n} warp instructions reached"),
            SimError::At { addr, instr, error } => write!(f, "/*{addr:04x}*/ {instr}: {error}"),
        }
    }
}

impl std::error::Error for SimError {}
