//! Instruction selection: PTX instructions → SASS instructions over virtual registers, with
//! ptxas's idioms (`IADD3`/`IADD3.X` carry chains, `IMAD.WIDE` for `mul.wide`, `LDC` for kernel
//! parameters, `LDG.E … desc[UR][R.64]` with the global descriptor from `c[0x0][0x208]`).
//!
//! The recipes live in one function per PTX opcode family; [`Cx`] holds the state they share
//! and the helpers that turn PTX operands into SASS operands.

mod address;
mod arith;
mod async_copy;
mod atomics;
pub(in crate::lower) mod call;
mod cluster;
mod cmp;
mod control;
mod convert;
mod drcp;
mod fdiv;
mod float;
mod idiv;
mod intops;
mod loop_uniform;
mod memory;
mod mma;
mod sreg;
mod tensormap;
mod texture;
mod uniform;
mod ur_operands;
mod warp;
mod wgmma;

use super::ssa::{SsaBuilder, Var, VarInfo};
use super::{Plan, PlanView, PlannedBlock, Scope, Sym};
use crate::diag::Diagnostic;
use crate::frontend::ast::{self, Expr, LitKind, Name, Span};
use crate::frontend::check::{eval_const, parse_int, short_key};
use crate::frontend::isa::Isa;
use crate::frontend::types::Ty;
use crate::mir::{BlockId, Function, Inst, OpKind, Operand, Reg, RegClass, VReg};

/// Special-register numbers (ptxas-facts.md §a.3.2, §f).
pub mod sr {
    pub const LANEID: u8 = 0x00;
    /// `SR_LTMASK` (nvdisasm's table: `SR_EQMASK` 0x38, then LT, LE, GT, GE).
    pub const LTMASK: u8 = 0x39;
    pub const TID_X: u8 = 0x21;
    pub const CTAID_X: u8 = 0x25;
    pub const SWINHI: u8 = 0x2f;
    pub const CGA_CTA_ID: u8 = 0x88;
}

/// Constant bank 0 offsets of the builtins (ptxas-facts.md §c.1).
pub mod cb {
    pub const NTID: i64 = 0x0;
    pub const NCTAID: i64 = 0xc;
    pub const GLOBAL_DESC: i64 = 0x208;
}

/// Runs instruction selection over the planned blocks of one function.
/// Marks the instructions selection just made for the PTX instruction at `src` with it (see
/// [`Inst::src`]): the tails of the block selection started in and ended in, and the blocks it
/// created. Instructions it put elsewhere (constants hoisted into the entry block) keep none.
fn stamp_source(f: &mut Function, src: u32, before: BlockId, after: BlockId, blocks_before: usize) {
    let n = f.blocks.len();
    let mut stamp = |b: usize| {
        for i in f.blocks[b].insts.iter_mut().rev() {
            if i.src.is_some() {
                break;
            }
            i.src = Some(crate::mir::SrcPos::new(src));
        }
    };
    stamp(before.0 as usize);
    if after != before {
        stamp(after.0 as usize);
    }
    for b in blocks_before..n {
        if b != after.0 as usize {
            stamp(b);
        }
    }
}

/// Counts the names an instruction mentions: its guard's predicate and its operands' names.
pub(crate) fn count_names_of<'a>(
    ins: &'a ast::Instruction,
    uses: &mut rustc_hash::FxHashMap<&'a str, u32>,
) {
    if let Some(g) = &ins.guard {
        *uses.entry(g.pred.text.as_str()).or_default() += 1;
    }
    for o in &ins.operands {
        count_names(o, uses);
    }
}

/// Counts the names an operand mentions (registers, symbols, labels). The keys borrow the
/// source's names: no string is copied.
fn count_names<'a>(o: &'a ast::Operand, uses: &mut rustc_hash::FxHashMap<&'a str, u32>) {
    fn expr<'a>(e: &'a Expr, uses: &mut rustc_hash::FxHashMap<&'a str, u32>) {
        match e {
            Expr::Name { name, .. } => *uses.entry(name.text.as_str()).or_default() += 1,
            Expr::Lit { .. } => {}
            Expr::Unary { arg, .. } => expr(arg, uses),
            Expr::Binary { lhs, rhs, .. } => {
                expr(lhs, uses);
                expr(rhs, uses);
            }
            Expr::Cond {
                cond, then, other, ..
            } => {
                expr(cond, uses);
                expr(then, uses);
                expr(other, uses);
            }
            Expr::Call { args, .. } => args.iter().for_each(|a| expr(a, uses)),
        }
    }
    match o {
        ast::Operand::Expr(e) => expr(e, uses),
        ast::Operand::Not(e, _) => expr(e, uses),
        ast::Operand::Address(v, _) | ast::Operand::Vector(v, _) | ast::Operand::List(v, _) => {
            v.iter().for_each(|o| count_names(o, uses));
        }
        ast::Operand::Pair(p, _) => {
            if let Some(a) = &p.0 {
                expr(a, uses);
            }
            expr(&p.1, uses);
        }
        ast::Operand::Sink(_) => {}
    }
}

pub fn select(plan: &mut Plan<'_>, f: &mut Function) {
    let blocks: Vec<PlannedBlock<'_>> = std::mem::take(&mut plan.blocks);
    let n = blocks.len();
    let mut cx = Cx {
        scopes: &plan.scopes,
        ssa: &mut plan.ssa,
        f,
        diags: &mut plan.diags,
        bank4: &mut plan.bank4,
        frame: &mut plan.frame,
        cur: BlockId(0),
        scope: 0,
        guard: None,
        entry_consts: 0,
        desc: None,
        planned: BlockId(0),
        extra_blocks: Vec::new(),
        def_of: uniform::FirstDefs::default(),
        word_def: rustc_hash::FxHashMap::default(),
        assumed_phis: Vec::new(),
        assume_loop_phis: false,
        refused_loop_phis: &plan.refused_loop_phis,
        failed_loop_phis: &mut plan.failed_loop_phis,
        cur_span: None,
        uniform_cache: rustc_hash::FxHashMap::default(),
        explicit_cluster: plan.explicit_cluster,
        cluster_flag: None,
        subroutines: std::mem::take(&mut plan.subroutines),
        fixed_convention: std::mem::take(&mut plan.fixed_convention),
        abs_calls: std::mem::take(&mut plan.abs_calls),
        return_address: None,
        sub_results: std::mem::take(&mut plan.sub_results),
        blocks: &blocks,
        name_uses: None,
        reg_cache: Default::default(),
        shadow: rustc_hash::FxHashMap::default(),
        uniform_vars: rustc_hash::FxHashSet::default(),
    };
    cx.shadow_uniform_vars();
    let mut filled = vec![false; n];
    let mut opcodes = OpcodeMemo::default();
    // One virtual register or more per PTX instruction: room for them at once (the 16k
    // straight-line kernel makes 22k; growing the table by doubling copied it eleven times).
    let ptx_total: usize = blocks.iter().map(|b| b.instrs.len()).sum();
    cx.f.vregs.reserve(ptx_total + ptx_total / 2);
    cx.def_of.reserve(cx.f.vregs.capacity());
    cx.ssa.seal(cx.f, BlockId(0));
    if !cx.f.is_entry {
        let params = std::mem::take(&mut plan.sub_params);
        // The parameters' scope.
        cx.scope = 1;
        cx.subroutine_entry(&params);
        cx.scope = 0;
    }
    for (i, block) in blocks.iter().enumerate() {
        let id = BlockId(i as u32);
        cx.cur = id;
        cx.planned = id;
        cx.uniform_cache.clear();
        // A predecessor made by selection (numbered from `n`: the last piece of a block it
        // split) is filled with the block it came from.
        if !cx.ssa.is_sealed(id)
            && cx.ssa.preds[i]
                .iter()
                .all(|p| (p.0 as usize) >= n || filled[p.0 as usize])
        {
            cx.ssa.seal(cx.f, id);
        }
        // About one machine instruction per PTX instruction, and a few more (the 16k
        // straight-line kernel: 16 105 PTX, 16 109 SASS): allocated once with an eighth to
        // spare, not grown by doubling (a doubling copies every instruction, 1.5 MB there, and
        // leaves the block up to twice the size it needs).
        let ptx = block.instrs.len();
        cx.f.block_mut(id).insts.reserve(ptx + ptx / 8 + 16);
        for (ins, scope) in &block.instrs {
            cx.scope = *scope;
            let (before, blocks_before) = (cx.cur, cx.f.blocks.len());
            cx.instruction(ins, block.guard.as_ref(), &mut opcodes);
            cx.write_shadows(ins);
            stamp_source(cx.f, ins.span.start, before, cx.cur, blocks_before);
        }
        let exit = cx.cur;
        let tail = &mut cx.f.block_mut(exit);
        tail.fallthrough = block.fallthrough;
        let terminated = tail
            .insts
            .last()
            .is_some_and(|i| i.is_terminator() && i.guard.is_none());
        if block.fallthrough.is_none() && !terminated {
            // Control runs off the end of the function: return.
            if cx.f.is_entry {
                cx.f.block_mut(exit)
                    .insts
                    .push(Inst::new("EXIT", &[], vec![]));
            } else {
                cx.cur = exit;
                cx.subroutine_return();
            }
        }
        if exit != id {
            // Selection split the block: the successors now hang off its last piece.
            for s in block.succs.iter().chain(block.fallthrough.iter()) {
                for p in cx.ssa.preds[s.0 as usize].iter_mut() {
                    if *p == id {
                        *p = exit;
                    }
                }
            }
        }
        filled[i] = true;
        for s in block.succs.iter().chain(block.fallthrough.iter()) {
            let si = s.0 as usize;
            if si < n
                && !cx.ssa.is_sealed(*s)
                && cx.ssa.preds[si]
                    .iter()
                    .all(|p| (p.0 as usize) >= n || filled[p.0 as usize])
            {
                cx.ssa.seal(cx.f, *s);
            }
        }
    }
    for i in 0..cx.f.blocks.len() {
        cx.ssa.seal(cx.f, BlockId(i as u32));
    }
    for (phi, x, span, at) in std::mem::take(&mut cx.assumed_phis) {
        if !cx.ssa.resolves_to(cx.f, phi, x) {
            // `lower_function` selects the function again without this assumption.
            cx.failed_loop_phis.push(at);
            cx.error(
                span,
                "ptxc cannot yet lower an mbarrier operation whose address changes in a loop",
            );
        }
    }
    cx.ssa.finish(cx.f);
    if !cx.f.is_entry {
        hoist_incoming(cx.f);
    }
    // Lay out the blocks selection made right after the planned block they belong to.
    if !cx.extra_blocks.is_empty() {
        let mut order = Vec::with_capacity(cx.f.blocks.len());
        for p in 0..n as u32 {
            order.push(BlockId(p));
            order.extend(
                cx.extra_blocks
                    .iter()
                    .filter(|(anchor, _)| anchor.0 == p)
                    .map(|(_, b)| *b),
            );
        }
        crate::mir::cfg::reorder(cx.f, &order);
    }
}

/// Moves a subroutine's `UNDEF`s of precoloured registers (what arrives in the registers of
/// the calling convention, `call.rs`, `subroutine_entry`) to the very start of its entry
/// block, before the values selection placed there (`entry_value`, `entry_s2r`): those arrive
/// with the call, and the allocator must not give their registers to anything before them
/// (zluda `extern_shared_call`: the shared window's `MOV R2, 0x400` over the return address in
/// R2).
fn hoist_incoming(f: &mut Function) {
    let fixed: Vec<VReg> = f.fixed.iter().map(|&(v, _)| v).collect();
    let incoming = |i: &Inst| {
        i.mnemonic == "UNDEF"
            && i.defs()
                .all(|d| d.vreg().is_some_and(|v| fixed.contains(&v)))
    };
    let insts = std::mem::take(&mut f.blocks[0].insts);
    let (mut first, rest): (Vec<Inst>, Vec<Inst>) = insts.into_iter().partition(incoming);
    first.extend(rest);
    f.blocks[0].insts = first;
}

/// A source operand after resolution: a register, an immediate, or a constant-bank word.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    Reg(Reg),
    Imm(i64),
    /// A float immediate: the bits of an f32 (or of an f64).
    F32(u32),
    F64(u64),
    CBank(i64),
}

/// The state instruction selection shares across recipes.
pub struct Cx<'p> {
    scopes: &'p [Scope],
    ssa: &'p mut SsaBuilder,
    pub f: &'p mut Function,
    diags: &'p mut Vec<Diagnostic>,
    /// The module's `.nv.constant4` address table ([`crate::lower::Lowered::bank4`]).
    bank4: &'p mut Vec<String>,
    /// The function's layout (parameter bytes, texture header slots).
    frame: &'p mut super::FrameInfo,
    /// The block instructions are appended to.
    pub cur: BlockId,
    /// The scope of the PTX instruction being lowered.
    scope: usize,
    /// The guard of the PTX instruction being lowered (resolved).
    guard: Option<(Reg, bool)>,
    /// How many values were placed at the start of the entry block (descriptor, …).
    entry_consts: usize,
    desc: Option<VReg>,
    /// The planned block being lowered; blocks made while lowering it are laid out after it.
    planned: BlockId,
    /// Blocks made during selection, with the planned block they follow in the layout.
    extra_blocks: Vec<(BlockId, BlockId)>,
    /// The instruction that defines each virtual register (first definition), so that a value
    /// can be recomputed in the uniform datapath (`uniform.rs`).
    def_of: uniform::FirstDefs,
    /// The last instruction that wrote each word of a multi-word virtual register (`None` when
    /// it was guarded), so that one word of a value built piecewise (a generic address:
    /// `{lo, SR_SWINHI}`) can be recomputed in the uniform datapath.
    pub(super) word_def: rustc_hash::FxHashMap<(VReg, u8), Option<Inst>>,
    /// PHIs of loop headers taken, while their block was unsealed, to be the value that enters
    /// the loop (`uniform.rs`), with the instruction that relied on it; checked once every
    /// block is sealed.
    /// With the loop header's block and variable.
    pub(super) assumed_phis: Vec<(VReg, VReg, Span, (u32, u32))>,
    /// Loop-header PHIs `(block, variable)` not to assume ([`crate::lower::Plan`]).
    pub(super) refused_loop_phis: &'p rustc_hash::FxHashSet<(u32, u32)>,
    /// The assumptions found wrong, for the next attempt.
    pub(super) failed_loop_phis: &'p mut Vec<(u32, u32)>,
    /// Whether `uniform_of` may make such an assumption (set while resolving an operand that
    /// must be uniform and has no per-thread fallback).
    pub(super) assume_loop_phis: bool,
    /// The span of the PTX instruction being lowered.
    pub(super) cur_span: Option<Span>,
    /// Vector values already recomputed in the uniform datapath (per block).
    pub(super) uniform_cache: rustc_hash::FxHashMap<VReg, VReg>,
    /// The kernel has `.explicitcluster` (cluster barriers need no run-time test).
    pub(super) explicit_cluster: bool,
    /// `c[0x0][0x140] == 1`, once computed.
    pub(super) cluster_flag: Option<VReg>,
    /// The module's functions compiled as subroutines: a call to one is `CALL.REL`.
    pub(super) subroutines: rustc_hash::FxHashSet<String>,
    /// Those called with the fixed convention (`call.rs`); the others are caller-saved.
    pub(super) fixed_convention: rustc_hash::FxHashSet<String>,
    /// Those in sections of their own (debug builds, [`crate::lower::Lowered::own_sections`]):
    /// called with `CALL.ABS` and relocations, and returning with `RET.ABS` (`call.rs`).
    pub(super) abs_calls: rustc_hash::FxHashSet<String>,
    /// In a subroutine: its return address (a copy of what arrived in R20:R21, or R2:R3) and
    /// its results, which every `ret` passes back (`call.rs`).
    pub(super) return_address: Option<VReg>,
    pub(super) sub_results: Vec<Name>,
    /// The function's planned blocks, which [`Cx::name_uses`] counts names in.
    blocks: &'p [PlannedBlock<'p>],
    /// How often each name appears in the function's operands, counted on the first question
    /// ([`Cx::name_uses`]): most functions have no atomic that asks, and counting is a walk
    /// over every operand.
    name_uses: Option<rustc_hash::FxHashMap<&'p str, u32>>,
    /// Register names already resolved, by scope and [`short_key`] (the checker's, which packs
    /// a name without a `memcpy` call): every operand of every
    /// instruction is resolved, most name one of a few registers, and a hit costs a hash of
    /// two integers where the scope walk hashes and compares strings.
    reg_cache: std::cell::RefCell<RegCache>,
    /// Warp-uniform registers written more than once, each with its twin variable of class
    /// `Ugpr` that holds the same value (`loop_uniform.rs`).
    shadow: rustc_hash::FxHashMap<Var, Var>,
    /// The registers `loop_uniform.rs` proves warp-uniform: a loop-header PHI of one of them
    /// may be assumed to be its value from before the loop wherever it is read
    /// ([`Cx::uniform_loop_phi`]), not only where the operand must be uniform.
    pub(super) uniform_vars: rustc_hash::FxHashSet<Var>,
}

/// The block number under which [`Plan::refused_loop_phis`] lists a register that must not be
/// kept in uniform registers ([`Cx::shadow`]): selection failed to rebuild one of its values
/// there.
pub(super) const REFUSED_SHADOW: u32 = u32::MAX;

/// [`Cx::reg_cache`]: `(scope, packed name)` → the register, or `None` (not a register), in a
/// direct-mapped table: a slot holds the last name whose key falls in it, and a name that finds
/// another there walks the scopes again (and takes the slot). A hash map's probe cost about as
/// much as the scope walk it saved (callgrind, 16k straight-line kernel: 107 instructions a
/// lookup); a slot costs a multiply and one compare.
struct RegCache {
    slots: Box<[RegSlot; REG_SLOTS]>,
}

/// The number of [`RegCache`] slots (a power of two): a kernel names a few dozen registers
/// per stretch of code.
const REG_SLOTS: usize = 256;

#[derive(Clone, Copy)]
struct RegSlot {
    /// The scope, `usize::MAX` for an empty slot.
    scope: usize,
    name: u128,
    reg: Option<(Var, Ty)>,
}

impl Default for RegCache {
    fn default() -> Self {
        RegCache {
            slots: Box::new(
                [RegSlot {
                    scope: usize::MAX,
                    name: 0,
                    reg: None,
                }; REG_SLOTS],
            ),
        }
    }
}

impl RegCache {
    /// The slot of `(scope, name)`.
    fn slot(&mut self, scope: usize, name: u128) -> &mut RegSlot {
        let folded = (name as u64) ^ ((name >> 64) as u64) ^ (scope as u64).rotate_left(32);
        let at = folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - REG_SLOTS.trailing_zeros());
        &mut self.slots[at as usize]
    }
}

/// A PTX instruction as the recipes see it: the full opcode (`cp.async.bulk`), its types in
/// order and its other modifiers.
pub struct PtxOp<'i> {
    pub ins: &'i ast::Instruction,
    pub opcode: &'i str,
    /// Borrowed from [`OpcodeMemo`]: not copied for every instruction.
    pub types: &'i [Ty],
    /// Borrowed from the list [`Cx::instruction`] sorts them into: a `SmallVec` of eight
    /// `&str` is 136 bytes, and held here it was copied twice per instruction (callgrind, 16k
    /// straight-line kernel: 32k `memcpy` calls, 0.93M instructions).
    pub flags: &'i [&'i str],
    /// The opcode's group in the arithmetic family (`None`: another family's), found once per
    /// distinct opcode text ([`arith::ArithOp`]).
    arith: Option<arith::ArithOp>,
}

impl PtxOp<'_> {
    /// Whether the modifier (with its dot) was written.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// The single type, for the many opcodes that take exactly one.
    pub fn ty(&self) -> Option<Ty> {
        match self.types[..] {
            [t] => Some(t),
            _ => None,
        }
    }

    pub fn operands(&self) -> &[ast::Operand] {
        &self.ins.operands
    }
}

/// An instruction's opcode and modifiers as [`Cx::instruction`] sorts them, remembered by their
/// text: [`Isa::split_opcode`] (a binary search of the opcode table; for a compound head such as
/// `st`, string concatenations), then [`Ty::parse`] of each modifier, cost about 380
/// instructions per PTX instruction, and a kernel repeats a few opcodes many times.
#[derive(Default)]
pub(super) struct OpcodeMemo {
    /// By the hash of the words: an index into `sorted`. One entry per hash; words whose hash
    /// is taken by other words are sorted again every time (correct, only slower).
    by_hash: rustc_hash::FxHashMap<u64, u32>,
    sorted: Vec<SortedOpcode>,
    /// The words of the instruction being sorted.
    words: WordKeys,
    /// The types of the last instruction sorted without the memo.
    unremembered: Vec<Ty>,
}

/// One remembered opcode-and-modifiers text, sorted.
struct SortedOpcode {
    /// The words as written, as [`short_key`]s: the opcode's head, then each modifier (with its
    /// dot).
    words: Box<[u128]>,
    /// The full opcode (`cp.async.bulk`).
    opcode: Box<str>,
    /// How many modifiers the opcode took (`.async.bulk` of `cp`: 2).
    in_opcode: usize,
    /// The types among the other modifiers, in order.
    types: smallvec::SmallVec<[Ty; 4]>,
    /// Bit `i`: the `i`-th of the other modifiers is a type (not a flag).
    type_bits: u64,
    /// The opcode's group in the arithmetic family.
    arith: Option<arith::ArithOp>,
}

impl SortedOpcode {
    fn matches(&self, words: &WordKeys) -> bool {
        // An integer loop: a slice comparison is a `memcmp` call, longer than a few words.
        let words = &words.keys;
        self.words.len() == words.len() && self.words.iter().zip(words).all(|(a, b)| a == b)
    }
}

/// An instruction's words as [`short_key`]s (the text packed into an integer), with their
/// hash: what [`OpcodeMemo`] finds and compares an instruction's words by. Hashed and compared
/// as text, byte by byte, they cost about 150 instructions per instruction (callgrind,
/// straight-line 64k: 9.6M of `select`'s 133M; with the keys and an inlined [`Cx::lookup_reg`],
/// `select` ran 6.7M fewer, 2026-12-07). Refilled for every instruction, not returned (a
/// returned array of keys was a `memcpy` call per instruction).
#[derive(Default)]
struct WordKeys {
    keys: Vec<u128>,
    hash: u64,
}

impl WordKeys {
    /// Reads `ins`'s words (the opcode's head, then each modifier); `false` when one is longer
    /// than fifteen bytes (`.shared::cluster`), which [`short_key`] does not pack, or there are
    /// more modifiers than [`SortedOpcode::type_bits`] has bits: such words are sorted every
    /// time.
    #[inline]
    fn read(&mut self, ins: &ast::Instruction) -> bool {
        self.keys.clear();
        if ins.modifiers.len() > 64 {
            return false;
        }
        let Some(head) = short_key(&ins.opcode.text) else {
            return false;
        };
        let mut hash = Self::mix(0, head);
        self.keys.push(head);
        for m in &ins.modifiers {
            let Some(k) = short_key(&m.text) else {
                return false;
            };
            hash = Self::mix(hash, k);
            self.keys.push(k);
        }
        self.hash = hash;
        true
    }

    /// `hash` with one more word's key.
    #[inline(always)]
    fn mix(hash: u64, key: u128) -> u64 {
        (hash.rotate_left(5) ^ (key as u64) ^ ((key >> 64) as u64))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

/// What [`OpcodeMemo::sort`] answers: the full opcode, the modifiers after it, their types (the
/// flags among them go into a list the caller owns), and the opcode's group in the arithmetic
/// family.
type Sorted<'a> = (
    std::borrow::Cow<'a, str>,
    &'a [Name],
    &'a [Ty],
    Option<arith::ArithOp>,
);

/// An instruction's flags: its modifiers that are not types, in order.
type Flags<'a> = smallvec::SmallVec<[&'a str; 8]>;

impl OpcodeMemo {
    /// `ins`'s opcode, the modifiers that follow it, and those modifiers' types in order, with
    /// its flags in order in `flags` (emptied first); `None` for an opcode the table does not
    /// know.
    fn sort<'a>(
        &'a mut self,
        ins: &'a ast::Instruction,
        flags: &mut Flags<'a>,
    ) -> Option<Sorted<'a>> {
        if !self.words.read(ins) {
            return self.sort_uncached(ins, flags);
        }
        let at = match self.by_hash.get(&self.words.hash) {
            Some(&i) if self.sorted[i as usize].matches(&self.words) => Some(i as usize),
            Some(_) => None,
            None => {
                let made = Self::make(ins, &self.words)?;
                self.sorted.push(made);
                self.by_hash
                    .insert(self.words.hash, self.sorted.len() as u32 - 1);
                Some(self.sorted.len() - 1)
            }
        };
        let Some(at) = at else {
            return self.sort_uncached(ins, flags);
        };
        let s = &self.sorted[at];
        let mods = &ins.modifiers[s.in_opcode..];
        let opcode: &str = if s.in_opcode == 0 {
            &ins.opcode.text
        } else {
            &s.opcode
        };
        let opcode = std::borrow::Cow::Borrowed(opcode);
        // Pushed one by one: `collect` and `clone` into a `SmallVec` go through its generic
        // `extend`, 60 instructions a call.
        flags.clear();
        for (i, m) in mods.iter().enumerate() {
            if s.type_bits >> i & 1 == 0 {
                flags.push(m.text.as_str());
            }
        }
        Some((opcode, mods, &s.types, s.arith))
    }

    /// Sorts `ins`'s words (`words`) from scratch.
    fn make(ins: &ast::Instruction, words: &WordKeys) -> Option<SortedOpcode> {
        let (opcode, mods) = Isa::get().split_opcode(ins)?;
        let mut types = smallvec::SmallVec::new();
        let mut type_bits = 0u64;
        for (i, m) in mods.iter().enumerate() {
            if let Some(t) = Ty::parse(&m.text) {
                types.push(t);
                type_bits |= 1 << i;
            }
        }
        Some(SortedOpcode {
            words: words.keys.as_slice().into(),
            opcode: Box::from(&*opcode),
            in_opcode: ins.modifiers.len() - mods.len(),
            types,
            type_bits,
            arith: arith::ArithOp::of(&opcode),
        })
    }

    /// [`OpcodeMemo::sort`] without the memo (words it cannot remember).
    fn sort_uncached<'a>(
        &'a mut self,
        ins: &'a ast::Instruction,
        flags: &mut Flags<'a>,
    ) -> Option<Sorted<'a>> {
        let (opcode, mods) = Isa::get().split_opcode(ins)?;
        self.unremembered.clear();
        flags.clear();
        for m in mods {
            match Ty::parse(&m.text) {
                Some(t) => self.unremembered.push(t),
                None => flags.push(m.text.as_str()),
            }
        }
        let arith = arith::ArithOp::of(&opcode);
        Some((opcode, mods, &self.unremembered, arith))
    }
}

/// A destination being written: the variable, its new value, and the value it had (for
/// guarded instructions).
pub struct Dst {
    var: Var,
    pub vreg: VReg,
    words: u8,
    prior: Option<VReg>,
}

impl Dst {
    pub fn reg(&self) -> Reg {
        Reg::whole(self.vreg, self.words)
    }

    pub fn word(&self, w: u8) -> Reg {
        Reg::word(self.vreg, w)
    }
}

pub(super) fn cmp_name(m: &str) -> Option<&'static str> {
    Some(match m {
        ".eq" => "EQ",
        ".ne" => "NE",
        ".lt" | ".lo" => "LT",
        ".le" | ".ls" => "LE",
        ".gt" | ".hi" => "GT",
        ".ge" | ".hs" => "GE",
        _ => return None,
    })
}

impl Cx<'_> {
    /// How often `name` appears in the function's operands: an atomic whose destination
    /// appears once (there) has an unused result (`atomics.rs`).
    pub(super) fn name_uses(&mut self, name: &str) -> u32 {
        let blocks = self.blocks;
        let uses = self.name_uses.get_or_insert_with(|| {
            let mut uses = rustc_hash::FxHashMap::default();
            for b in blocks {
                for (ins, _) in &b.instrs {
                    for o in &ins.operands {
                        count_names(o, &mut uses);
                    }
                }
            }
            uses
        });
        uses.get(name).copied().unwrap_or(0)
    }

    // ------------------------------------------------------------------------------------------
    // Emitting

    /// Appends an instruction to the current block, under the PTX guard if there is one.
    pub fn emit(&mut self, mut inst: Inst) {
        if let Some((pred, neg)) = self.guard
            && inst.guard.is_none()
        {
            inst.guard = Some(crate::mir::Guard { pred, neg });
        }
        self.push(inst);
    }

    /// Appends to the current block, remembering the instruction that defines each vreg.
    fn push(&mut self, mut inst: Inst) {
        if !self.shadow.is_empty() {
            self.read_ur_operands(&mut inst);
        }
        inst.for_each_reg(|r| {
            if r.def {
                if let Some(v) = r.reg.vreg() {
                    self.def_of.note(v, &inst, &self.f.vregs);
                }
                self.note_word_def(r.reg, &inst);
            }
        });
        self.f.block_mut(self.cur).insts.push(inst);
    }

    // ------------------------------------------------------------------------------------------
    // Control flow inside one PTX instruction

    /// A new block, laid out after the planned block being lowered (after the blocks made
    /// before it). Its predecessors are added with [`Cx::add_edge`].
    pub fn fresh_block(&mut self) -> BlockId {
        let b = self.f.new_block(None);
        self.ssa.add_block(b, Vec::new());
        self.extra_blocks.push((self.planned, b));
        b
    }

    /// Opens a loop of one block after the current one: the current block falls through to a
    /// fresh `head`, which loops to itself or exits to a fresh `after`; emission continues in
    /// `head` (not yet sealed: its back edge's values come later). The caller ends `head` with
    /// the back branch and switches to `after`. Returns `(head, after)`.
    pub fn open_self_loop(&mut self) -> (BlockId, BlockId) {
        let pre = self.cur;
        let head = self.fresh_block();
        let after = self.fresh_block();
        self.f.block_mut(pre).fallthrough = Some(head);
        self.add_edge(pre, head);
        self.add_edge(head, head);
        self.add_edge(head, after);
        self.switch_to(head, false);
        (head, after)
    }

    /// Records the CFG edge `from → to` for SSA construction (the branch or fallthrough itself
    /// is emitted by the caller).
    pub fn add_edge(&mut self, from: BlockId, to: BlockId) {
        self.ssa.add_pred(to, from);
    }

    /// Continues lowering in `b`; seals it when `sealed` (all its predecessors are known and
    /// lowered).
    pub fn switch_to(&mut self, b: BlockId, sealed: bool) {
        self.cur = b;
        // Uniform copies made in another block need not dominate this one.
        self.uniform_cache.clear();
        if sealed {
            self.ssa.seal(self.f, b);
        }
    }

    /// Seals a block whose predecessors are now all lowered (a loop header, after its latch).
    pub fn seal(&mut self, b: BlockId) {
        self.ssa.seal(self.f, b);
    }

    /// Appends an instruction that is not under the PTX guard (an address computation whose
    /// result only feeds guarded instructions).
    pub fn emit_unguarded(&mut self, inst: Inst) {
        self.push(inst);
    }

    /// Emits an instruction that defines `dst`: under a guard it also reads `dst`'s old value.
    /// The slot of `name` (a global variable or an external function) in the module's
    /// `.nv.constant4` address table, added on first use.
    pub(super) fn bank4_slot(&mut self, name: &str) -> usize {
        match self.bank4.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.bank4.push(name.to_string());
                self.bank4.len() - 1
            }
        }
    }

    pub fn emit_def(&mut self, dst: &Dst, mut inst: Inst) {
        if let Some(p) = dst.prior {
            inst.ops
                .push(Operand::new(OpKind::Prior(Reg::whole(p, dst.words))));
        }
        self.emit(inst);
    }

    pub fn new_vreg(&mut self, class: RegClass, words: u8) -> VReg {
        self.f.new_vreg(class, words, None)
    }

    pub fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(span, msg));
    }

    pub(super) fn unsupported(&mut self, ins: &ast::Instruction, opcode: &str, mods: &[Name]) {
        let full: String = std::iter::once(opcode.to_string())
            .chain(mods.iter().map(|m| m.text.to_string()))
            .collect();
        self.error(
            ins.opcode
                .span
                .to(mods.last().map_or(ins.opcode.span, |m| m.span)),
            format!("ptxc cannot lower `{full}` yet"),
        );
    }

    /// A value defined once at the start of the entry block (it dominates every use).
    pub(super) fn entry_value(&mut self, inst: Inst) {
        for d in inst.defs() {
            if let Some(v) = d.vreg() {
                self.def_of.note(v, &inst, &self.f.vregs);
            }
            self.note_word_def(d, &inst);
        }
        let at = self.entry_consts;
        self.f.block_mut(BlockId(0)).insts.insert(at, inst);
        self.entry_consts += 1;
    }

    /// The global memory descriptor `desc[UR]` (`ULDC.64 UR, c[0x0][0x208]`), loaded once.
    pub fn global_desc(&mut self) -> Reg {
        if let Some(d) = self.desc {
            return Reg::whole(d, 2);
        }
        let d = self.new_vreg(RegClass::Ugpr, 2);
        self.entry_value(Inst::new(
            "ULDC",
            &["64"],
            vec![
                Operand::def(Reg::whole(d, 2)),
                Operand::new(OpKind::CBank {
                    bank: 0,
                    base: None,
                    offset: cb::GLOBAL_DESC,
                }),
            ],
        ));
        self.desc = Some(d);
        Reg::whole(d, 2)
    }

    // ------------------------------------------------------------------------------------------
    // Operands

    pub(super) fn var(&mut self, name: &Name) -> Option<(Var, Ty)> {
        let r = self.lookup_reg(&name.text);
        if r.is_none() {
            self.not_a_register(name);
        }
        r
    }

    /// [`Cx::var`]'s diagnostic, out of line: formatting it inlined made every destination's
    /// lookup save and restore registers.
    #[cold]
    #[inline(never)]
    fn not_a_register(&mut self, name: &Name) {
        self.error(
            name.span,
            format!("`{}` is not a register ptxc can lower", name.text),
        );
    }

    /// The register `name` names in the current scope. Inlined: every operand of every
    /// instruction asks, and as a call the cache hit spent a quarter of its instructions saving
    /// and restoring registers (callgrind, straight-line 64k: 19 of 74).
    #[inline(always)]
    pub(super) fn lookup_reg(&self, name: &str) -> Option<(Var, Ty)> {
        let Some(key) = short_key(name) else {
            return self.walk_scopes(name);
        };
        let mut cache = self.reg_cache.borrow_mut();
        let slot = cache.slot(self.scope, key);
        if slot.scope != self.scope || slot.name != key {
            *slot = RegSlot {
                scope: self.scope,
                name: key,
                reg: self.walk_scopes(name),
            };
        }
        slot.reg
    }

    /// `name` looked up in the scopes ([`Cx::lookup_reg`] without its cache). Out of line: a
    /// miss is rare, and inlined the walk made every lookup save and restore registers
    /// (callgrind, 16k straight-line kernel: 19 of a lookup's 68 instructions).
    #[inline(never)]
    fn walk_scopes(&self, name: &str) -> Option<(Var, Ty)> {
        let plan_like = PlanView {
            scopes: self.scopes,
        };
        plan_like.reg(self.scope, name)
    }

    pub(super) fn sym(&self, name: &str) -> Option<Sym> {
        let plan_like = PlanView {
            scopes: self.scopes,
        };
        plan_like.sym(self.scope, name)
    }

    /// The current value of a PTX register. A register kept in uniform registers
    /// ([`Cx::shadow`]) is read from its twin, copied into a fresh general register for
    /// per-thread uses (`MOV R, UR`); where the operand must be uniform, [`Cx::uniform_of`]
    /// finds the twin again (the copy is in `uniform_cache`).
    pub fn read_var(&mut self, var: Var) -> Reg {
        // Most kernels keep no register in uniform registers: no hash of `var` then.
        if !self.shadow.is_empty()
            && let Some(&twin) = self.shadow.get(&var)
        {
            return self.read_twin(twin);
        }
        let words = self.ssa.var(var).words;
        let v = self.ssa.read(self.f, var, self.cur);
        Reg::whole(v, words)
    }

    /// [`Cx::read_var`] of a register kept in uniform registers, whose twin is `twin`. Out of
    /// line, so that the common read stays small.
    #[inline(never)]
    fn read_twin(&mut self, twin: Var) -> Reg {
        let u = self.ssa.read(self.f, twin, self.cur);
        let r = self.new_vreg(RegClass::Gpr, 1);
        // A twin whose value here is a constant (`UMOV UR6, 0x80` of `mov.b32 %r598, 128`
        // before the loop) is read as that constant, which the consumer may fold as it
        // folds any register moved from an immediate (`const_of`): pyptx
        // `matmul_tma_v33`'s `tensormap.replace … box_dim …, %r598` becomes one `LOP3.LUT`
        // with the field as an immediate, not `MOV R, UR; IADD3; LOP3.LUT`.
        let src = match self
            .def_of
            .inst(u)
            .map(|d| (d.mnemonic, d.guard.is_none(), &d.ops[..]))
        {
            Some(("UMOV", true, [_, k])) if matches!(k.kind, OpKind::Int(_)) => k.clone(),
            _ => Operand::use_(Reg::whole(u, 1)),
        };
        self.emit_unguarded(Inst::new(
            "MOV",
            &[],
            vec![Operand::def(Reg::whole(r, 1)), src],
        ));
        self.uniform_cache.insert(r, u);
        Reg::whole(r, 1)
    }

    /// Gives each register [`loop_uniform::shadowed_vars`] finds its uniform twin
    /// ([`Cx::shadow`]), except those an earlier attempt refused. Kernels only: a subroutine's
    /// parameters are written by its entry, not by instructions.
    fn shadow_uniform_vars(&mut self) {
        if !self.f.is_entry {
            return;
        }
        let view = PlanView {
            scopes: self.scopes,
        };
        let ssa = &*self.ssa;
        let (uniform, vars) = loop_uniform::shadowed_vars(&view, self.blocks, |v| {
            let info = ssa.var(v);
            info.class == RegClass::Gpr && info.words == 1
        });
        for x in vars {
            if self.refused_loop_phis.contains(&(REFUSED_SHADOW, x.0)) {
                continue;
            }
            let name = format!("{}.u", self.ssa.var(x).name);
            let twin = self.ssa.new_var(VarInfo {
                class: RegClass::Ugpr,
                words: 1,
                name: name.into(),
            });
            self.shadow.insert(x, twin);
        }
        self.uniform_vars = uniform;
    }

    /// After an instruction that writes registers kept in uniform registers: rebuilds each
    /// new value in the uniform datapath and makes it the twin's value. When it cannot be
    /// rebuilt, the attempt fails and `lower_function` selects again without that register.
    fn write_shadows(&mut self, ins: &ast::Instruction) {
        if self.shadow.is_empty() {
            return;
        }
        let Some(ast::Operand::Expr(e)) = ins.operands.first() else {
            return;
        };
        let Some((x, _)) = e.as_name().and_then(|n| self.lookup_reg(&n.text)) else {
            return;
        };
        let Some(&twin) = self.shadow.get(&x) else {
            return;
        };
        let rebuilt = self
            .ssa
            .current_in(x, self.cur)
            .and_then(|w| self.uniform_of(Reg::whole(w, 1)));
        match rebuilt {
            Some(Reg::Virt { vreg, .. }) if self.f.vreg(vreg).class == RegClass::Ugpr => {
                self.ssa.write(twin, self.cur, vreg);
            }
            _ => {
                self.failed_loop_phis.push((REFUSED_SHADOW, x.0));
                self.error(
                    ins.span,
                    "ptxc could not keep this warp-uniform register in uniform registers",
                );
            }
        }
    }

    /// A fresh value for the destination register `op`.
    pub fn dst(&mut self, op: &ast::Operand) -> Option<Dst> {
        let name = match op {
            ast::Operand::Expr(e) => e.as_name()?,
            _ => return None,
        };
        let (var, _) = self.var(name)?;
        let info = self.ssa.var(var);
        let (class, words, name) = (info.class, info.words, info.name.clone());
        let vreg = self.f.new_vreg(class, words, Some(name));
        let prior = self.guard.map(|_| self.ssa.read(self.f, var, self.cur));
        Some(Dst {
            var,
            vreg,
            words,
            prior,
        })
    }

    /// Makes `dst` the variable's current value (after its defining instructions).
    pub fn commit(&mut self, dst: Dst) {
        self.ssa.write(dst.var, self.cur, dst.vreg);
    }

    /// Makes an existing value the destination's current value, with no instruction (a copy in
    /// SSA form is a rename). Only for unguarded instructions.
    pub fn assign(&mut self, dst: Dst, value: VReg) {
        debug_assert!(dst.prior.is_none());
        self.ssa.write(dst.var, self.cur, value);
    }

    /// Resolves a source operand of type `ty`.
    pub fn val(&mut self, op: &ast::Operand, ty: Ty) -> Option<Val> {
        let e = match op {
            ast::Operand::Expr(e) => e,
            other => {
                self.error(other.span(), "ptxc cannot lower this operand yet");
                return None;
            }
        };
        self.expr_val(e, ty)
    }

    pub(super) fn expr_val(&mut self, e: &Expr, ty: Ty) -> Option<Val> {
        // Almost every operand is a plain register: that case first, the others out of line
        // (inlined, they made every call save and restore registers).
        if let Expr::Name {
            name,
            component: None,
        } = e
            && let Some((var, _)) = self.lookup_reg(&name.text)
        {
            return Some(Val::Reg(self.read_var(var)));
        }
        self.other_expr_val(e, ty)
    }

    /// [`Cx::expr_val`] of an operand that is not a plain register.
    #[inline(never)]
    fn other_expr_val(&mut self, e: &Expr, ty: Ty) -> Option<Val> {
        match e {
            Expr::Name { name, component } => {
                if let Some((var, _)) = self.lookup_reg(&name.text) {
                    let r = self.read_var(var);
                    let Some(c) = component else {
                        return Some(Val::Reg(r));
                    };
                    // An element of a vector register (`cvt.u32.u16 d, %v.y`): its word.
                    let k = match c.text.as_str() {
                        ".x" | ".r" => 0,
                        ".y" | ".g" => 1,
                        ".z" | ".b" => 2,
                        _ => 3,
                    };
                    if k >= r.count() {
                        self.error(
                            c.span,
                            format!("`{}` has no element `{}`", name.text, c.text),
                        );
                        return None;
                    }
                    return Some(Val::Reg(address::word_of(r, k)));
                }
                if name.text == "WARP_SZ" {
                    return Some(Val::Imm(32));
                }
                if name.text.starts_with('%') {
                    return self.sreg(name, component.as_deref()).map(Val::Reg);
                }
                self.error(
                    name.span,
                    format!("ptxc cannot take the address of `{}` yet", name.text),
                );
                None
            }
            Expr::Lit { kind, text, span } => self.literal(*kind, text, *span, ty),
            Expr::Unary { .. } | Expr::Binary { .. } => match eval_const(e) {
                Some(v) => Some(Val::Imm(v as i64)),
                None => match e {
                    Expr::Unary {
                        op: ast::UnOp::Neg,
                        arg,
                        ..
                    } if matches!(**arg, Expr::Lit { .. }) => match self.expr_val(arg, ty)? {
                        Val::F32(b) => Some(Val::F32(b ^ 0x8000_0000)),
                        Val::F64(b) => Some(Val::F64(b ^ (1 << 63))),
                        other => Some(other),
                    },
                    _ => {
                        self.error(e.span(), "ptxc cannot lower this expression operand yet");
                        None
                    }
                },
            },
            _ => {
                self.error(e.span(), "ptxc cannot lower this operand yet");
                None
            }
        }
    }

    pub(super) fn literal(&mut self, kind: LitKind, text: &str, span: Span, ty: Ty) -> Option<Val> {
        match kind {
            LitKind::Int => parse_int(text).map(|v| Val::Imm(v as i64)),
            LitKind::HexF32 => u32::from_str_radix(&text[2..], 16).ok().map(Val::F32),
            LitKind::HexF64 => u64::from_str_radix(&text[2..], 16).ok().map(|b| {
                if ty.bits() == 32 {
                    Val::F32((f64::from_bits(b) as f32).to_bits())
                } else {
                    Val::F64(b)
                }
            }),
            LitKind::Float => {
                let v: f64 = text.parse().ok()?;
                Some(if ty.bits() == 64 {
                    Val::F64(v.to_bits())
                } else {
                    Val::F32((v as f32).to_bits())
                })
            }
        }
        .or_else(|| {
            self.error(span, format!("cannot read the literal `{text}`"));
            None
        })
    }

    /// A register holding `v` (immediates are moved into one).
    pub fn to_reg(&mut self, v: Val, words: u8) -> Reg {
        match v {
            Val::Reg(r) => r,
            Val::Imm(i) if words == 2 => {
                let d = self.new_vreg(RegClass::Gpr, 2);
                self.emit_unguarded(Inst::new(
                    "MOV",
                    &[],
                    vec![Operand::def(Reg::word(d, 0)), Operand::imm(i & 0xffff_ffff)],
                ));
                self.emit_unguarded(Inst::new(
                    "MOV",
                    &[],
                    vec![
                        Operand::def(Reg::word(d, 1)),
                        Operand::imm((i >> 32) & 0xffff_ffff),
                    ],
                ));
                Reg::whole(d, 2)
            }
            Val::F64(b) => {
                let d = self.new_vreg(RegClass::Gpr, 2);
                self.emit_unguarded(Inst::new(
                    "MOV",
                    &[],
                    vec![
                        Operand::def(Reg::word(d, 0)),
                        Operand::imm((b & 0xffff_ffff) as i64),
                    ],
                ));
                self.emit_unguarded(Inst::new(
                    "MOV",
                    &[],
                    vec![
                        Operand::def(Reg::word(d, 1)),
                        Operand::imm((b >> 32) as i64),
                    ],
                ));
                Reg::whole(d, 2)
            }
            other => {
                let d = self.new_vreg(RegClass::Gpr, 1);
                // `MOV` takes a float's bits as a 32-bit immediate (`MOV R0, 0x3f800000`).
                let src = match other {
                    Val::F32(b) => Operand::imm(i64::from(b)),
                    other => self.operand(other),
                };
                self.emit_unguarded(Inst::new(
                    "MOV",
                    &[],
                    vec![Operand::def(Reg::whole(d, 1)), src],
                ));
                Reg::whole(d, 1)
            }
        }
    }

    /// A SASS operand for a resolved value.
    pub fn operand(&self, v: Val) -> Operand {
        match v {
            Val::Reg(r) => Operand::use_(r),
            Val::Imm(i) => Operand::imm(i),
            Val::F32(b) => Operand::new(OpKind::Float(crate::mir::FloatFmt::F32, u64::from(b))),
            Val::F64(b) => Operand::new(OpKind::Float(crate::mir::FloatFmt::F64Hi, b >> 32)),
            Val::CBank(off) => Operand::new(OpKind::CBank {
                bank: 0,
                base: None,
                offset: off,
            }),
        }
    }

    /// One 32-bit word of a value (for 64-bit arithmetic done word by word).
    pub fn word(&self, v: Val, w: u8) -> Val {
        match v {
            Val::Reg(Reg::Virt { vreg, first, count }) if count > 1 => {
                Val::Reg(Reg::word(vreg, first + w))
            }
            Val::Reg(r) => Val::Reg(r),
            Val::Imm(i) => Val::Imm(if w == 0 {
                i & 0xffff_ffff
            } else {
                (i >> 32) & 0xffff_ffff
            }),
            Val::F64(b) => Val::Imm(if w == 0 {
                (b & 0xffff_ffff) as i64
            } else {
                (b >> 32) as i64
            }),
            other => other,
        }
    }

    // ------------------------------------------------------------------------------------------
    // The dispatcher

    /// Lowers one PTX instruction; `region` is the guard of a block that runs predicated
    /// instead of branched around (`lower::predicate_uniform_regions`), which every unguarded
    /// instruction of it but its speculated `mov`s takes.
    fn instruction(
        &mut self,
        ins: &ast::Instruction,
        region: Option<&ast::Guard>,
        opcodes: &mut OpcodeMemo,
    ) {
        self.guard = None;
        self.cur_span = Some(ins.span);
        let guard = ins
            .guard
            .as_deref()
            .or(region.filter(|_| ins.opcode.text != "mov"));
        if let Some(g) = guard {
            match self.lookup_reg(&g.pred.text) {
                Some((var, _)) => {
                    let r = self.read_var(var);
                    self.guard = Some((r, g.negated));
                }
                None => {
                    self.error(
                        g.pred.span,
                        format!("ptxc cannot use `{}` as a guard", g.pred.text),
                    );
                    return;
                }
            }
        }
        let mut flags = Flags::new();
        let Some((opcode, mods, types, arith)) = opcodes.sort(ins, &mut flags) else {
            self.error(
                ins.opcode.span,
                format!("unknown instruction `{}`", ins.opcode.text),
            );
            return;
        };
        let op = PtxOp {
            ins,
            opcode: &opcode,
            types,
            flags: &flags,
            arith,
        };
        // Each family says `None` for opcodes that are not its own.
        let done = self
            .lower_arith(&op)
            .or_else(|| self.lower_memory(&op))
            .or_else(|| self.lower_mma(&op))
            .or_else(|| self.lower_async_copy(&op))
            .or_else(|| self.lower_tensormap(&op))
            .or_else(|| self.lower_wgmma(&op))
            .or_else(|| self.lower_cluster(&op))
            .or_else(|| self.lower_texture(&op))
            .or_else(|| self.lower_control(&op))
            .unwrap_or(false);
        if !done
            && !self
                .diags
                .iter()
                .any(|d| d.span.start >= ins.span.start && d.span.end <= ins.span.end)
        {
            self.unsupported(ins, &opcode, mods);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instructions of the first function of `src`.
    fn instructions(src: &str) -> Vec<ast::Instruction> {
        let m = crate::frontend::parse(src).expect("parses");
        let f = m
            .items
            .iter()
            .find_map(|i| match i {
                ast::Item::Function(f) => Some(f),
                _ => None,
            })
            .expect("a function");
        f.body
            .as_ref()
            .expect("a body")
            .stmts
            .iter()
            .filter_map(|s| match s {
                ast::Stmt::Instr(i) => Some((**i).clone()),
                _ => None,
            })
            .collect()
    }

    /// An owned copy of a [`Sorted`] answer, with the flags: opcode, number of modifiers after
    /// it, types, flags, arithmetic group.
    type OwnedSorted = (String, usize, Vec<Ty>, Vec<String>, Option<arith::ArithOp>);

    /// An owned copy of what [`OpcodeMemo::sort`] (or, `uncached`, `sort_uncached`) answers, with
    /// the flags, to compare answers.
    fn sorted(
        memo: &mut OpcodeMemo,
        ins: &ast::Instruction,
        uncached: bool,
    ) -> Option<OwnedSorted> {
        let mut flags = Flags::new();
        let s = if uncached {
            memo.sort_uncached(ins, &mut flags)
        } else {
            memo.sort(ins, &mut flags)
        };
        s.map(|(op, mods, types, arith)| {
            (
                op.into_owned(),
                mods.len(),
                types.to_vec(),
                flags.iter().map(|f| f.to_string()).collect(),
                arith,
            )
        })
    }

    /// The memo answers what sorting from scratch answers: on first sight, when it remembers
    /// the words (the second `add.s32`; `st`, a head that may start a compound opcode), and when another
    /// text holds the hash of the words (sorted again, without the memo).
    #[test]
    fn sisel_opcode_memo_answers_as_sorting_from_scratch() {
        let ins = instructions(
            ".version 8.7\n.target sm_90a\n.address_size 64\n\
             .visible .entry k(.param .u64 p)\n{\n\
             .reg .b32 %r<4>;\n.reg .b64 %rd<3>;\n.reg .f32 %f<3>;\n\
             add.s32 %r1, %r2, %r3;\n\
             add.s32 %r2, %r1, %r3;\n\
             fma.rn.ftz.f32 %f1, %f2, %f2, %f2;\n\
             st.global.v2.f32 [%rd1], {%f1, %f2};\n\
             cvt.rn.f32.s32 %f2, %r1;\n\
             add.s32 %r3, %r1, %r2;\n\
             ld.shared::cluster.u32 %r1, [%r2];\n\
             ret;\n}\n",
        );
        let mut memo = OpcodeMemo::default();
        for i in &ins {
            let fresh = sorted(&mut OpcodeMemo::default(), i, true);
            assert!(fresh.is_some(), "{} is an opcode", i.opcode.text);
            assert_eq!(sorted(&mut memo, i, false), fresh, "{}", i.opcode.text);
        }
        // One entry per distinct text: add.s32, fma, st, cvt, ret; `.shared::cluster` is too long
        // a word to remember ([`WordKeys`]).
        assert_eq!(memo.sorted.len(), 5);
        let fma = sorted(&mut memo, &ins[2], false).expect("sorted");
        assert_eq!(fma.0, "fma");
        assert_eq!(fma.2, vec![Ty::parse(".f32").expect("a type")]);
        assert_eq!(fma.3, vec![".rn", ".ftz"]);
        assert_eq!(fma.4, Some(arith::ArithOp::Fma));
        let st = sorted(&mut memo, &ins[3], false).expect("sorted");
        assert_eq!(st.4, None);
        // Every hash taken by the `ret` entry: the other words do not match it and are sorted
        // again, with the same answers.
        let ret = memo.sorted.len() as u32 - 1;
        for v in memo.by_hash.values_mut() {
            *v = ret;
        }
        for i in &ins {
            let fresh = sorted(&mut OpcodeMemo::default(), i, true);
            assert_eq!(sorted(&mut memo, i, false), fresh, "{}", i.opcode.text);
        }
    }
}
