//! The machine: launch set-up, CTAs, warps and threads, the SIMT scheduler, and the operand
//! helpers the instruction semantics use. The semantics live in the submodules.

mod alu;
mod collective;
mod control;
mod float;
mod memory;
mod mma;

use crate::SimError;
use crate::cubin::Kernel;
use crate::mem::{self, Bank, Global, Shared, Sparse};
use crate::program::{Decoded, Program};
use ptxc::target::sm90a::form::{MemSpec, PrefixSpec, Spec, TermSpec};
use ptxc::target::sm90a::{FloatFmt, Operand, OperandKind, Reg, RegFile};
use std::collections::{BTreeMap, BTreeSet};

/// Bank-0 offsets beyond those of `ptxc_runtime_abi::cbank0` (ptxas-facts.md §c): the local
/// window (`cvta.local`), the initial stack pointer, `%dynamic_smem_size`, the global memory
/// descriptor of `desc[UR][…]` addresses.
const CB0_LOCAL_WINDOW: usize = 0x20;
const CB0_STACK: usize = 0x28;
const CB0_DYNAMIC_SMEM: usize = 0x2c;
const CB0_GLOBAL_DESC: usize = 0x208;

/// How to launch a kernel.
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes (after the static shared data).
    pub dynamic_shared: u32,
    /// The parameter bytes, written to `c[0x0][0x210]` on.
    pub params: Vec<u8>,
    /// The most warp instructions the launch may execute.
    pub max_steps: u64,
}

impl LaunchConfig {
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> LaunchConfig {
        LaunchConfig {
            grid,
            block,
            dynamic_shared: 0,
            params: Vec::new(),
            max_steps: 5_000_000,
        }
    }
    /// Parameters that are all 64-bit values (pointers), each naturally aligned.
    pub fn params_u64(mut self, ps: &[u64]) -> LaunchConfig {
        self.params = ps.iter().flat_map(|p| p.to_le_bytes()).collect();
        self
    }
    pub fn dynamic_shared(mut self, n: u32) -> LaunchConfig {
        self.dynamic_shared = n;
        self
    }
}

/// What a launch did.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Warp instructions issued (one per group execution).
    pub warp_instructions: u64,
    /// Thread instructions executed (guards passed).
    pub thread_instructions: u64,
    /// Instructions that are approximations on the GPU and were executed (`MUFU.SIN`, …).
    pub approximations: BTreeSet<String>,
}

/// A device: global memory that launches read and write.
#[derive(Clone, Debug, Default)]
pub struct Device {
    pub global: Global,
}

/// What a thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Run,
    Exited,
    /// At a `BSYNC` on this barrier.
    Bsync(u8),
    /// At a `WARPSYNC` with this mask.
    Warpsync(u32),
    /// At a CTA barrier.
    Bar(BarWait),
}

/// A CTA-barrier arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BarWait {
    pub id: u32,
    /// The expected thread count, when given.
    pub count: Option<u32>,
    /// The reduction and this thread's predicate.
    pub red: Option<(Red, bool)>,
}

/// A barrier reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Red {
    Popc,
    And,
    Or,
}

/// One thread.
#[derive(Clone, Debug)]
pub(crate) struct Thread {
    pub r: Vec<u32>,
    /// P0–P6 in bits 0–6; bit 7 (PT) always set.
    pub p: u8,
    pub b: [u32; 16],
    /// Instruction index.
    pub pc: usize,
    pub state: State,
    pub tid: [u32; 3],
    pub lane: u32,
    /// The warp's index in the CTA.
    pub warp: u32,
    pub local: Sparse,
    /// Return addresses of `CALL` without `.NOINC`.
    pub ret_stack: Vec<u64>,
    /// The last CTA-barrier reduction (`B2R.RESULT`).
    pub bar_result: u32,
}

/// The uniform registers of a warp.
#[derive(Clone, Debug)]
pub(crate) struct WarpRegs {
    pub ur: [u32; 64],
    /// UP0–UP6 in bits 0–6; bit 7 (UPT) always set.
    pub up: u8,
}

pub(crate) struct Warp {
    pub threads: Vec<Thread>,
    pub u: WarpRegs,
    pub id: u32,
    /// Consecutive issues of the lowest-PC group while other groups could run.
    pub starve: u32,
}

/// After this many consecutive issues of the lowest-PC group while another group of the same
/// warp could run, the next group gets one issue (the GPU's independent thread scheduling
/// guarantees every thread progress: a thread spinning on a flag another one sets must not hang).
const STARVE_LIMIT: u32 = 20_000;

/// What the launch looks like from inside (special registers).
#[derive(Clone, Debug)]
pub(crate) struct LaunchInfo {
    pub ntid: [u32; 3],
    pub ctaid: [u32; 3],
    pub shared_size: u32,
}

/// Everything an instruction can touch besides the registers.
pub(crate) struct Env<'a> {
    pub global: &'a mut Global,
    pub shared: &'a mut Shared,
    pub banks: &'a BTreeMap<u32, Bank>,
    pub info: &'a LaunchInfo,
    pub stats: &'a mut Stats,
    pub clock: u64,
    /// The mask of the executing group.
    pub group: u32,
    /// Every non-exited lane of the warp.
    pub live: u32,
    pub code_len: usize,
}

/// What a thread does after an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Next,
    Jump(u64),
    Exit,
    Block(State),
}

/// The registers an instruction of one thread sees.
pub(crate) struct Cx<'a, 'b> {
    pub t: &'a mut Thread,
    pub u: &'a mut WarpRegs,
    pub env: &'a mut Env<'b>,
}

pub(crate) type R<T> = Result<T, SimError>;

pub(crate) fn unimpl<T>(d: &Decoded, what: &str) -> R<T> {
    Err(SimError::Unimplemented(format!("{} ({what})", d.text)))
}

pub(crate) fn invalid<T>(d: &Decoded, what: &str) -> R<T> {
    Err(SimError::Invalid(format!("{}: {what}", d.text)))
}

/// Fails unless every modifier of `d` is in `allowed`.
pub(crate) fn allow(d: &Decoded, allowed: &[&str]) -> R<()> {
    for m in d.mods() {
        if !allowed.contains(m) {
            return unimpl(d, &format!("modifier .{m}"));
        }
    }
    Ok(())
}

pub(crate) fn op(d: &Decoded, i: usize) -> R<&Operand> {
    match d.ops.get(i) {
        Some(o) => Ok(o),
        None => invalid(d, &format!("no operand {i}")),
    }
}

impl Cx<'_, '_> {
    pub fn reg(&self, r: Reg) -> u32 {
        let n = r.num as usize;
        match r.file {
            RegFile::Gpr => {
                if n == 255 {
                    0
                } else {
                    self.t.r[n]
                }
            }
            RegFile::Ugpr => {
                if n >= 63 {
                    0
                } else {
                    self.u.ur[n]
                }
            }
            RegFile::Pred => u32::from(self.t.p >> (n & 7) & 1),
            RegFile::UPred => u32::from(self.u.up >> (n & 7) & 1),
            RegFile::Barrier => self.t.b[n & 15],
        }
    }

    pub fn set_reg(&mut self, r: Reg, v: u32) {
        let n = r.num as usize;
        match r.file {
            RegFile::Gpr => {
                if n < 255 {
                    self.t.r[n] = v;
                }
            }
            RegFile::Ugpr => {
                if n < 63 {
                    self.u.ur[n] = v;
                }
            }
            RegFile::Pred => {
                if n < 7 {
                    self.t.p = (self.t.p & !(1 << n)) | (u8::from(v != 0) << n);
                }
            }
            RegFile::UPred => {
                if n < 7 {
                    self.u.up = (self.u.up & !(1 << n)) | (u8::from(v != 0) << n);
                }
            }
            RegFile::Barrier => self.t.b[n & 15] = v,
        }
    }

    /// The `i`-th register after `r` (pairs, quads); RZ/URZ stay zero.
    pub fn nth(r: Reg, i: u8) -> Reg {
        if r.is_zero_or_true() {
            r
        } else {
            Reg {
                file: r.file,
                num: r.num.wrapping_add(i),
            }
        }
    }

    fn cbank(&self, d: &Decoded, o: &Operand, n: usize) -> R<Vec<u8>> {
        let OperandKind::CBank(c) = &o.kind else {
            return invalid(d, "not a constant-bank operand");
        };
        let mut off = c.offset;
        if let Some(b) = c.base {
            off = off.wrapping_add(i64::from(self.reg(b)));
        }
        let Some(bank) = self.env.banks.get(&c.bank) else {
            return Err(SimError::Memory(format!(
                "constant bank {} is not defined",
                c.bank
            )));
        };
        let mut buf = vec![0u8; n];
        bank.read(c.bank, off, &mut buf)?;
        Ok(buf)
    }

    /// The raw 32 bits of a source operand (no modifier applied).
    pub fn src(&self, d: &Decoded, o: &Operand) -> R<u32> {
        match &o.kind {
            OperandKind::Reg(r) => Ok(self.reg(*r)),
            OperandKind::Int(v) => Ok(*v as u32),
            OperandKind::FloatBits(FloatFmt::F64Hi, b) => Ok(*b as u32),
            OperandKind::FloatBits(_, b) => Ok(*b as u32),
            OperandKind::CBank(_) => {
                let b = self.cbank(d, o, 4)?;
                Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            _ => invalid(d, &format!("operand {o:?} is not a 32-bit source")),
        }
    }

    /// The raw 64 bits of a source operand: a register pair, a constant, or an immediate
    /// (an `F64Hi` float immediate is the high word; an integer immediate is sign-extended).
    pub fn src64(&self, d: &Decoded, o: &Operand) -> R<u64> {
        match &o.kind {
            OperandKind::Reg(r) => {
                let lo = self.reg(*r);
                let hi = self.reg(Self::nth(*r, 1));
                Ok(u64::from(lo) | u64::from(hi) << 32)
            }
            OperandKind::Int(v) => Ok(*v as u64),
            OperandKind::FloatBits(FloatFmt::F64Hi, b) => Ok(*b << 32),
            OperandKind::CBank(_) => {
                let b = self.cbank(d, o, 8)?;
                Ok(u64::from_le_bytes([
                    b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                ]))
            }
            _ => invalid(d, &format!("operand {o:?} is not a 64-bit source")),
        }
    }

    /// A constant-bank operand of any width.
    pub fn cbank_bytes(&self, d: &Decoded, o: &Operand, n: usize) -> R<Vec<u8>> {
        self.cbank(d, o, n)
    }

    /// A predicate operand, with its `!`.
    pub fn pred(&self, d: &Decoded, o: &Operand) -> R<bool> {
        match &o.kind {
            OperandKind::Reg(r) if matches!(r.file, RegFile::Pred | RegFile::UPred) => {
                Ok((self.reg(*r) != 0) != o.not)
            }
            _ => invalid(d, &format!("operand {o:?} is not a predicate")),
        }
    }

    /// The destination register of an operand.
    pub fn dreg(d: &Decoded, o: &Operand) -> R<Reg> {
        match &o.kind {
            OperandKind::Reg(r) => Ok(*r),
            _ => invalid(d, &format!("operand {o:?} is not a register")),
        }
    }

    pub fn set(&mut self, d: &Decoded, o: &Operand, v: u32) -> R<()> {
        let r = Self::dreg(d, o)?;
        self.set_reg(r, v);
        Ok(())
    }

    pub fn set64(&mut self, d: &Decoded, o: &Operand, v: u64) -> R<()> {
        let r = Self::dreg(d, o)?;
        self.set_reg(r, v as u32);
        self.set_reg(Self::nth(r, 1), (v >> 32) as u32);
        Ok(())
    }

    /// Writes `vals` to consecutive registers from `o`.
    pub fn set_n(&mut self, d: &Decoded, o: &Operand, vals: &[u32]) -> R<()> {
        let r = Self::dreg(d, o)?;
        for (i, v) in vals.iter().enumerate() {
            self.set_reg(Self::nth(r, i as u8), *v);
        }
        Ok(())
    }

    /// Reads `n` consecutive registers from `o`.
    pub fn get_n(&self, d: &Decoded, o: &Operand, n: usize) -> R<Vec<u32>> {
        let r = Self::dreg(d, o)?;
        Ok((0..n).map(|i| self.reg(Self::nth(r, i as u8))).collect())
    }

    pub fn set_pred(&mut self, d: &Decoded, o: &Operand, v: bool) -> R<()> {
        let r = Self::dreg(d, o)?;
        self.set_reg(r, u32::from(v));
        Ok(())
    }

    /// The address of a memory operand (slot `i`). `wide`: a UR term is a 64-bit pair and a
    /// register term without suffix follows the form's register count. Returns the address
    /// and whether a descriptor prefix was present.
    pub fn address(&self, d: &Decoded, i: usize, wide: bool) -> R<u64> {
        let spec = match d.form.ops.get(i).map(|o| &o.spec) {
            Some(Spec::Mem(m)) => m,
            _ => return invalid(d, &format!("operand {i} is not a memory operand")),
        };
        self.mem_address(d, spec, wide)
    }

    fn mem_address(&self, d: &Decoded, m: &MemSpec, wide: bool) -> R<u64> {
        let w = &d.words;
        let mut a: u64 = 0;
        if let PrefixSpec::GDesc = m.prefix {
            return unimpl(d, "gdesc address");
        }
        for t in &m.terms {
            let sfx = match &t.sfx {
                None => None,
                Some(s) => match s.f {
                    None => Some(s.names[0].1),
                    Some(f) => {
                        let v = f.get(w) as u32;
                        match s.names.iter().find(|(k, _)| *k == v) {
                            Some((_, "")) | None => None,
                            Some((_, n)) => Some(*n),
                        }
                    }
                },
            };
            let v: u64 = match &t.term {
                TermSpec::Gpr(f) => {
                    let r = ptxc::target::sm90a::r(f.get(w) as u8);
                    let lo = u64::from(self.reg(r));
                    let val = match sfx {
                        Some("U32") => lo,
                        Some("64") => lo | u64::from(self.reg(Self::nth(r, 1))) << 32,
                        Some("X4") => lo << 2,
                        Some("X8") => lo << 3,
                        Some("X16") => lo << 4,
                        None if t.regs == 2 => lo | u64::from(self.reg(Self::nth(r, 1))) << 32,
                        None => lo,
                        Some(s) => return unimpl(d, &format!("address suffix .{s}")),
                    };
                    if !wide && val > 0xffff_ffff && t.regs == 2 {
                        return invalid(d, "64-bit register in a 32-bit address");
                    }
                    val
                }
                TermSpec::Ugpr(f) => {
                    let r = ptxc::target::sm90a::ur(f.get(w) as u8);
                    let lo = u64::from(self.reg(r));
                    if wide {
                        lo | u64::from(self.reg(Self::nth(r, 1))) << 32
                    } else {
                        lo
                    }
                }
                TermSpec::Imm(f) => {
                    let width = f.width();
                    let raw = f.get(w);
                    if width < 64 && raw >> (width - 1) & 1 == 1 {
                        raw | (!0u64 << width)
                    } else {
                        raw
                    }
                }
            };
            a = a.wrapping_add(v);
        }
        if !wide {
            a &= 0xffff_ffff;
        }
        Ok(a)
    }
}

/// How an instruction is executed for a group.
enum Class {
    /// Evaluated for each thread under its guard.
    Thread,
    /// Evaluated once for the group (uniform datapath, UP guard).
    Uniform,
    /// Warp-collective: reads the whole group.
    Collective,
}

fn class(d: &Decoded) -> Class {
    match d.instr.mnemonic {
        "SHFL" | "VOTE" | "VOTEU" | "MATCH" | "REDUX" | "ELECT" | "R2UR" | "BRA" | "BREAK"
        | "LDSM" | "STSM" | "HMMA" | "IMMA" => Class::Collective,
        _ if d.form.uguard => Class::Uniform,
        _ => Class::Thread,
    }
}

impl Device {
    pub fn new() -> Device {
        Device {
            global: Global::new(),
        }
    }

    /// Runs a kernel to completion.
    pub fn launch(&mut self, k: &Kernel, cfg: &LaunchConfig) -> Result<Stats, SimError> {
        let bad = |m: String| Err(SimError::Launch(m));
        let threads = cfg.block.iter().map(|&x| u64::from(x)).product::<u64>();
        if threads == 0 || threads > 1024 {
            return bad(format!("{threads} threads per block (1 to 1024)"));
        }
        if cfg.grid.contains(&0) {
            return bad("empty grid".into());
        }
        let ctas = cfg.grid.iter().map(|&x| u64::from(x)).product::<u64>();
        if ctas > 65536 {
            return bad(format!("{ctas} CTAs is more than this simulator runs"));
        }
        let shared_size = u64::from(k.shared_static) + u64::from(cfg.dynamic_shared);
        if shared_size > 0x40_0000 {
            return bad(format!("{shared_size} bytes of shared memory"));
        }
        let prog = Program::decode(&k.code);

        // Globals of the module.
        let mut gaddr = Vec::new();
        // Each section is zero-padded to whole 4 KiB pages: the GPU lets a kernel read past the
        // end of a variable (ZLUDA's `ldmatrix` does), and so does this.
        for g in &k.globals {
            let mut data = g.data.clone();
            data.resize(data.len().div_ceil(0x1000).max(1) * 0x1000, 0);
            gaddr.push(self.global.alloc(&g.section, data));
        }
        // Constant banks.
        let mut banks: BTreeMap<u32, Bank> = BTreeMap::new();
        for (n, data) in &k.banks {
            // Bank 0 in the cubin is only a template the driver fills: the launch defines it.
            if *n != 0 {
                banks.entry(*n).or_default().set(0, data);
            }
        }
        for r in &k.relocs {
            let Some(base) = gaddr.get(r.global) else {
                return bad("relocation to a missing global".into());
            };
            let v = base.wrapping_add(r.value as u64);
            let b = banks.entry(r.bank).or_default();
            if r.size == 4 {
                b.set_u32(r.offset, v as u32);
            } else {
                b.set_u64(r.offset, v);
            }
        }
        // Bank 0 as the driver fills it (ptxas-facts.md §c).
        use runtime_abi::cbank0;
        let b0 = banks.entry(0).or_default();
        for (i, v) in cfg.block.iter().enumerate() {
            b0.set_u32(cbank0::NTID as usize + 4 * i, *v);
        }
        for (i, v) in cfg.grid.iter().enumerate() {
            b0.set_u32(cbank0::NCTAID as usize + 4 * i, *v);
        }
        b0.set_u64(CB0_LOCAL_WINDOW, mem::LOCAL_WINDOW);
        b0.set_u32(CB0_STACK, mem::STACK_TOP);
        b0.set_u32(CB0_DYNAMIC_SMEM, cfg.dynamic_shared);
        // The global memory descriptor: its value does not matter for address arithmetic.
        b0.set_u64(CB0_GLOBAL_DESC, 0);
        b0.set(cbank0::PARAM_BASE as usize, &cfg.params);

        let mut stats = Stats::default();
        let mut budget = cfg.max_steps;
        for z in 0..cfg.grid[2] {
            for y in 0..cfg.grid[1] {
                for x in 0..cfg.grid[0] {
                    let info = LaunchInfo {
                        ntid: cfg.block,
                        ctaid: [x, y, z],
                        shared_size: shared_size as u32,
                    };
                    run_cta(
                        &prog,
                        &mut self.global,
                        &banks,
                        &info,
                        &mut stats,
                        &mut budget,
                        cfg.max_steps,
                    )?;
                }
            }
        }
        Ok(stats)
    }
}

fn new_thread(tid: [u32; 3], n: u32) -> Thread {
    let mut r = vec![0u32; 256];
    r[255] = 0;
    Thread {
        r,
        p: 0x80,
        b: [0; 16],
        pc: 0,
        state: State::Run,
        tid,
        lane: n % 32,
        warp: n / 32,
        local: Sparse::default(),
        ret_stack: Vec::new(),
        bar_result: 0,
    }
}

fn run_cta(
    prog: &Program,
    global: &mut Global,
    banks: &BTreeMap<u32, Bank>,
    info: &LaunchInfo,
    stats: &mut Stats,
    budget: &mut u64,
    max_steps: u64,
) -> R<()> {
    let mut shared = Shared {
        data: vec![0u8; info.shared_size as usize],
    };
    let [bx, by, bz] = info.ntid;
    let mut warps: Vec<Warp> = Vec::new();
    let mut n = 0u32;
    for z in 0..bz {
        for y in 0..by {
            for x in 0..bx {
                if n.is_multiple_of(32) {
                    warps.push(Warp {
                        threads: Vec::new(),
                        u: WarpRegs {
                            ur: [0; 64],
                            up: 0x80,
                        },
                        id: n / 32,
                        starve: 0,
                    });
                }
                if let Some(w) = warps.last_mut() {
                    w.threads.push(new_thread([x, y, z], n));
                }
                n += 1;
            }
        }
    }
    let mut clock = 0u64;
    loop {
        let mut progress = false;
        for w in &mut warps {
            let mut env = Env {
                global,
                shared: &mut shared,
                banks,
                info,
                stats,
                clock,
                group: 0,
                live: 0,
                code_len: prog.insts.len(),
            };
            let steps = run_warp(w, prog, &mut env, budget, max_steps)?;
            clock = env.clock;
            progress |= steps > 0;
        }
        if release_cta_barriers(&mut warps) {
            progress = true;
        }
        let all_done = warps
            .iter()
            .all(|w| w.threads.iter().all(|t| t.state == State::Exited));
        if all_done {
            return Ok(());
        }
        if !progress {
            return Err(SimError::Deadlock(describe(&warps, prog)));
        }
    }
}

fn describe(warps: &[Warp], prog: &Program) -> String {
    let mut parts = Vec::new();
    for w in warps {
        for t in &w.threads {
            if t.state != State::Exited {
                let at = prog
                    .insts
                    .get(t.pc)
                    .and_then(|i| i.decoded.as_ref().ok())
                    .map(|d| d.instr.to_string())
                    .unwrap_or_default();
                parts.push(format!(
                    "warp {} lane {} at /*{:04x}*/ {at}: {:?}",
                    w.id,
                    t.lane,
                    t.pc * 16,
                    t.state
                ));
            }
        }
    }
    parts.truncate(8);
    parts.join("; ")
}

/// Opens the CTA barriers that every expected thread has reached. Without a thread count a
/// barrier waits for every non-exited thread of the CTA; with one, arrivals count in whole warps
/// as on the GPU (the exited and absent lanes of a warp that arrives count as arrived).
fn release_cta_barriers(warps: &mut [Warp]) -> bool {
    let live: u32 = warps
        .iter()
        .flat_map(|w| &w.threads)
        .filter(|t| t.state != State::Exited)
        .count() as u32;
    // Per barrier: (threads waiting, thread count, warp-granular arrivals).
    let mut waiting: BTreeMap<u32, (u32, Option<u32>, u32)> = BTreeMap::new();
    for w in warps.iter() {
        let live_in_warp = w
            .threads
            .iter()
            .filter(|t| t.state != State::Exited)
            .count() as u32;
        let mut here: BTreeMap<u32, (u32, Option<u32>)> = BTreeMap::new();
        for t in &w.threads {
            if let State::Bar(b) = t.state {
                let e = here.entry(b.id).or_insert((0, b.count));
                e.0 += 1;
                if b.count.is_some() {
                    e.1 = b.count;
                }
            }
        }
        for (id, (n, count)) in here {
            let e = waiting.entry(id).or_insert((0, None, 0));
            e.0 += n;
            if count.is_some() {
                e.1 = count;
            }
            e.2 += n + (32 - live_in_warp);
        }
    }
    let mut released = false;
    for (id, (n, count, warp_arrivals)) in waiting {
        let open = match count {
            None => n >= live,
            Some(k) => warp_arrivals >= k,
        };
        if !open {
            continue;
        }
        // Reduce and release.
        let (mut and, mut or, mut popc) = (true, false, 0u32);
        let mut red = None;
        for t in warps.iter().flat_map(|w| &w.threads) {
            if let State::Bar(b) = t.state
                && b.id == id
                && let Some((r, p)) = b.red
            {
                red = Some(r);
                and &= p;
                or |= p;
                popc += u32::from(p);
            }
        }
        for t in warps.iter_mut().flat_map(|w| &mut w.threads) {
            if let State::Bar(b) = t.state
                && b.id == id
            {
                t.bar_result = match red {
                    Some(Red::And) => u32::from(and),
                    Some(Red::Or) => u32::from(or),
                    Some(Red::Popc) => popc,
                    None => 0,
                };
                t.state = State::Run;
                t.pc += 1;
            }
        }
        released = true;
    }
    released
}

/// How many instructions a warp issues before the next warp's turn: warps interleave, so a
/// warp waiting on a flag in memory that another warp sets does not hang.
const SLICE: u64 = 1000;

/// Runs a warp until none of its threads can run or its time slice is over; returns the
/// instructions issued.
fn run_warp(
    w: &mut Warp,
    prog: &Program,
    env: &mut Env,
    budget: &mut u64,
    max_steps: u64,
) -> R<u64> {
    let mut steps = 0u64;
    loop {
        release_warp_syncs(w);
        if steps >= SLICE {
            return Ok(steps);
        }
        let mut pc = usize::MAX;
        for t in &w.threads {
            if t.state == State::Run && t.pc < pc {
                pc = t.pc;
            }
        }
        if pc == usize::MAX {
            return Ok(steps);
        }
        let next = w
            .threads
            .iter()
            .filter(|t| t.state == State::Run && t.pc > pc)
            .map(|t| t.pc)
            .min();
        match next {
            Some(other) => {
                w.starve += 1;
                if w.starve > STARVE_LIMIT {
                    w.starve = 0;
                    pc = other;
                }
            }
            None => w.starve = 0,
        }
        if *budget == 0 {
            return Err(SimError::StepLimit(max_steps));
        }
        *budget -= 1;
        steps += 1;
        env.clock += 1;
        env.stats.warp_instructions += 1;
        let mut group = 0u32;
        let mut live = 0u32;
        for t in &w.threads {
            if t.state == State::Run && t.pc == pc {
                group |= 1 << t.lane;
            }
            if t.state != State::Exited {
                live |= 1 << t.lane;
            }
        }
        env.group = group;
        env.live = live;
        let Some(inst) = prog.insts.get(pc) else {
            return Err(SimError::Trap(format!(
                "execution reached /*{:04x}*/, past the end of the code",
                pc * 16
            )));
        };
        let d = match &inst.decoded {
            Ok(d) => d,
            Err(e) => {
                return Err(SimError::At {
                    addr: inst.addr,
                    instr: format!("0x{:016x} 0x{:016x}", inst.words[0], inst.words[1]),
                    error: Box::new(SimError::Invalid(e.clone())),
                });
            }
        };
        let res = match class(d) {
            Class::Collective => collective::exec(d, w, env),
            Class::Uniform => exec_uniform(d, w, env),
            Class::Thread => exec_threads(d, w, env),
        };
        if let Err(e) = res {
            return Err(SimError::At {
                addr: inst.addr,
                instr: d.instr.to_string(),
                error: Box::new(e),
            });
        }
    }
}

/// Releases the threads of a `BSYNC` or `WARPSYNC` whose partners have all arrived.
fn release_warp_syncs(w: &mut Warp) {
    let n = w.threads.len();
    let exists: u32 = if n >= 32 { !0 } else { (1u32 << n) - 1 };
    for i in 0..n {
        let (state, pc) = (w.threads[i].state, w.threads[i].pc);
        let mask = match state {
            State::Bsync(b) => w.threads[i].b[b as usize & 15] | 1 << w.threads[i].lane,
            State::Warpsync(m) => m | 1 << w.threads[i].lane,
            _ => continue,
        } & exists;
        let ready = w.threads.iter().all(|t| {
            mask >> t.lane & 1 == 0 || t.state == State::Exited || (t.state == state && t.pc == pc)
        });
        if ready {
            for t in &mut w.threads {
                if mask >> t.lane & 1 == 1 && t.state == state && t.pc == pc {
                    t.state = State::Run;
                    t.pc += 1;
                }
            }
        }
    }
}

/// The guard of a per-thread instruction.
fn guard(d: &Decoded, t: &Thread, u: &WarpRegs) -> bool {
    let g = d.instr.guard;
    let n = g.pred.num & 7;
    let v = match g.pred.file {
        RegFile::UPred => u.up >> n & 1 == 1,
        _ => t.p >> n & 1 == 1,
    };
    v != g.neg
}

pub(crate) fn apply_flow(t: &mut Thread, f: Flow, code_len: usize) -> R<()> {
    match f {
        Flow::Next => t.pc += 1,
        Flow::Jump(a) => {
            if a % 16 != 0 || (a / 16) as usize >= code_len {
                return Err(SimError::Trap(format!(
                    "branch to 0x{a:x}, outside the code"
                )));
            }
            t.pc = (a / 16) as usize;
        }
        Flow::Exit => t.state = State::Exited,
        Flow::Block(s) => t.state = s,
    }
    Ok(())
}

fn exec_threads(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    let group = env.group;
    for t in &mut w.threads {
        if group >> t.lane & 1 == 0 {
            continue;
        }
        if !guard(d, t, &w.u) {
            t.pc += 1;
            continue;
        }
        env.stats.thread_instructions += 1;
        let mut cx = Cx {
            t,
            u: &mut w.u,
            env,
        };
        let f = exec_one(d, &mut cx)?;
        let code_len = cx.env.code_len;
        apply_flow(cx.t, f, code_len)?;
    }
    Ok(())
}

fn exec_uniform(d: &Decoded, w: &mut Warp, env: &mut Env) -> R<()> {
    let group = env.group;
    let Some(first) = w.threads.iter().position(|t| group >> t.lane & 1 == 1) else {
        return Ok(());
    };
    let pass = guard(d, &w.threads[first], &w.u);
    let mut flow = Flow::Next;
    if pass {
        env.stats.thread_instructions += 1;
        let mut cx = Cx {
            t: &mut w.threads[first],
            u: &mut w.u,
            env,
        };
        flow = exec_one(d, &mut cx)?;
    }
    let code_len = env.code_len;
    for t in &mut w.threads {
        if group >> t.lane & 1 == 1 {
            apply_flow(t, flow, code_len)?;
        }
    }
    Ok(())
}

/// One instruction for one thread (or once, for a uniform instruction).
fn exec_one(d: &Decoded, cx: &mut Cx) -> R<Flow> {
    let m = d.instr.mnemonic;
    // The uniform-datapath twins share the vector semantics.
    let base = match m {
        "UIADD3" | "UIMAD" | "UPRMT" | "ULOP3" | "USHF" | "UISETP" | "USEL" | "USGXT" | "ULEA"
        | "UFLO" | "UPOPC" | "UMOV" | "ULDC" => &m[1..],
        _ => m,
    };
    if let Some(f) = alu::exec(base, d, cx)? {
        return Ok(f);
    }
    if let Some(f) = float::exec(base, d, cx)? {
        return Ok(f);
    }
    if let Some(f) = memory::exec(base, d, cx)? {
        return Ok(f);
    }
    if let Some(f) = control::exec(base, d, cx)? {
        return Ok(f);
    }
    unimpl(d, "no semantics for this instruction")
}
