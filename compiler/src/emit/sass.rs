//! From allocated MIR to encoded SASS: block layout, branch targets, the conversion of each MIR
//! instruction to the [`sm90a`] model, control words, encoding, and the padding ptxas puts after
//! a function (`BRA self` then `NOP`s to a multiple of 128 bytes, plus 128 more).
//!
//! Control words come from the scoreboard pass ([`scoreboard`], `docs/passes/scoreboard.md`),
//! run on the laid-out instruction stream: stall counts from the measured latency model,
//! scoreboards for variable-latency results and sources, wait masks, yield and reuse flags. The
//! hazard checker ([`crate::check::hazards`]) verifies the result independently.

use crate::emit::{repeats, scoreboard};
use crate::mir::{self, Function, OpKind, RegClass};
use crate::target::sm90a::{self as sass, Ctrl, Instr};
use std::collections::BTreeMap;

/// One encoded function.
#[derive(Clone, Debug, Default)]
pub struct EncodedFunction {
    pub name: String,
    pub instrs: Vec<Instr>,
    pub words: Vec<[u64; 2]>,
    /// Byte offsets of the `EXIT` instructions (EIATTR_EXIT_INSTR_OFFSETS).
    pub exit_offsets: Vec<u32>,
    /// Byte offsets of the `NOP`s that stand for `bar.warp.sync -1` (the scheduler's and the
    /// padding's NOPs are not MIR instructions): EIATTR_COOP_GROUP_INSTR_OFFSETS.
    pub warpsync_offsets: Vec<u32>,
    /// Byte offsets of the mbarrier instructions whose `EIATTR_MBARRIER_INSTR_OFFSETS`
    /// description instruction selection set ([`mir::Inst::mbarrier`]).
    pub mbarrier_records: Vec<(u32, mir::MbarrierRecord)>,
    /// Byte offsets of the warp-wide instructions of warp-aggregated atomics
    /// ([`mir::Inst::warp_wide`]): EIATTR_INT_WARP_WIDE_INSTR_OFFSETS.
    pub warp_wide_offsets: Vec<u32>,
    /// Byte offsets of the subroutines' saves and restores of the registers their callers keep
    /// ([`mir::Inst::frame_save`]): not spill code.
    pub frame_save_offsets: Vec<u32>,
    /// Instructions before the padding.
    pub code_len: usize,
    /// The subroutines linked after the kernel's code (`lower/link.rs`): name and byte offset.
    pub subroutines: Vec<(String, u32)>,
    /// Relocations left in the code, in code order: a debug build's `CALL.ABS` to a `.func`
    /// in a section of its own and the two `MOV`s of its return address
    /// (`lower/isel/call.rs`).
    pub relocs: Vec<crate::emit::model::Reloc>,
    /// Why each instruction got its control word (`--explain-ctrl`).
    pub why: Vec<scoreboard::Why>,
    /// For each instruction, where its PTX instruction starts in the source ([`mir::Inst::src`];
    /// `None` for what passes and layout added, and for the padding).
    pub srcs: Vec<Option<u32>>,
}

impl EncodedFunction {
    /// The `.text` bytes: the words, little-endian, low word first.
    pub fn bytes(&self) -> Vec<u8> {
        words_bytes(&self.words)
    }
}

/// Instruction words as `.text` bytes: each word little-endian, low half first. One copy into
/// a buffer of the final size (collecting a nested `flat_map` byte by byte cost 39
/// instructions a byte: 5.0M of the 311M of compiling the straight-line 16k kernel).
pub fn words_bytes(words: &[[u64; 2]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(words.len() * 16);
    for w in words {
        out.extend_from_slice(&w[0].to_le_bytes());
        out.extend_from_slice(&w[1].to_le_bytes());
    }
    out
}

fn reg(r: mir::Reg) -> Result<sass::Reg, String> {
    match r {
        mir::Reg::Phys { reg, .. } => {
            let file = match reg.class {
                RegClass::Gpr => sass::RegFile::Gpr,
                RegClass::Ugpr => sass::RegFile::Ugpr,
                RegClass::Pred => sass::RegFile::Pred,
                RegClass::UPred => sass::RegFile::UPred,
            };
            Ok(sass::Reg { file, num: reg.num })
        }
        mir::Reg::Virt { vreg, .. } => Err(format!("{vreg} was never allocated a register")),
    }
}

fn operand(o: &mir::Operand, block_addr: &[u64]) -> Result<sass::Operand, String> {
    use sass::OperandKind as K;
    let kind = match &o.kind {
        OpKind::Reg(r) => K::Reg(reg(r.reg)?),
        OpKind::Int(v) => K::Int(*v),
        OpKind::Float(fmt, bits) => {
            let fmt = match fmt {
                mir::FloatFmt::F32 => sass::FloatFmt::F32,
                mir::FloatFmt::F64Hi => sass::FloatFmt::F64Hi,
                mir::FloatFmt::F16 => sass::FloatFmt::F16,
                mir::FloatFmt::BF16 => sass::FloatFmt::BF16,
            };
            K::FloatBits(fmt, *bits)
        }
        OpKind::CBank { bank, base, offset } => K::CBank(sass::CBank {
            bank: *bank,
            base: base.map(reg).transpose()?,
            offset: *offset,
        }),
        OpKind::Mem { prefix, terms } => {
            let prefix = match prefix {
                mir::MemPrefix::None => sass::MemPrefix::None,
                mir::MemPrefix::Desc(r) => sass::MemPrefix::Desc(reg(*r)?),
                mir::MemPrefix::GDesc => sass::MemPrefix::GDesc,
            };
            let terms = terms
                .iter()
                .map(|t| match t {
                    mir::MemTerm::Reg(r, s) => reg(*r).map(|r| sass::MemTerm::Reg(r, *s)),
                    mir::MemTerm::Imm(v) => Ok(sass::MemTerm::Imm(*v)),
                })
                .collect::<Result<Vec<_>, String>>()?;
            K::Mem(sass::Mem { prefix, terms })
        }
        OpKind::SReg(n) => K::SReg(*n),
        OpKind::Barrier(b) => K::Reg(sass::Reg {
            file: sass::RegFile::Barrier,
            num: *b,
        }),
        OpKind::Sym(name) => K::Sym(name),
        OpKind::SbSet(m) => K::SbSet(*m),
        OpKind::Block(b) => K::Int(block_addr[b.0 as usize] as i64),
        OpKind::Func(name) | OpKind::FuncAddr(name) => {
            return Err(format!(
                "a call to `{name}` needs a relocation ptxc cannot emit yet"
            ));
        }
        OpKind::PhiArg(..) | OpKind::Prior(_) => return Err("SSA operands reached emission".into()),
    };
    let mut out = sass::Operand::new(kind);
    out.neg = o.neg;
    out.abs = o.abs;
    out.not = o.not;
    // Most operands have no suffix: no call to clone an empty list (0.5M of the 171.5M
    // instructions of compiling the straight-line 16k kernel).
    if !o.suffix.is_empty() {
        out.suffix = o.suffix.to_vec();
    }
    Ok(out)
}

/// A control word that sets nothing and stalls one cycle: what instructions carry until the
/// scoreboard pass has run.
const PLAIN: Ctrl = Ctrl {
    stall: 1,
    yield_: false,
    wbar: 7,
    rbar: 7,
    wait: 0,
    reuse: 0,
};

/// How many times layout is redone to insert `NOP`s for waits longer than 15 cycles.
const MAX_RELAYOUTS: usize = 8;

/// Lays out, converts and encodes an allocated function; control words come from the
/// scoreboard pass ([`scoreboard`]). A wait longer than the 15 cycles a stall count can hold
/// becomes `NOP`s (each stalls up to 15) after the instruction, or before it when it transfers
/// control (the wait is for the branch target), and the function is laid out again with them.
/// A wait for a tensor-core result (HMMA/IMMA) longer than 11 cycles becomes ptxas's
/// `@!UPT UIADD3 URZ, URZ, URZ, URZ` instead, each stalling up to 11.
pub fn encode_function(f: &Function) -> Result<EncodedFunction, String> {
    encode_function_with(f, scoreboard::Options::default())
}

/// [`encode_function`] with the scoreboard pass's options (`serial` under `-g`).
pub fn encode_function_with(
    f: &Function,
    opts: scoreboard::Options,
) -> Result<EncodedFunction, String> {
    // (block, position in the block) → NOPs before that instruction.
    // The NOPs of a wait for a tensor-core result are ptxas's `@!UPT UIADD3 URZ, URZ, URZ, URZ`.
    let mut nops: BTreeMap<(usize, usize), (u32, bool)> = BTreeMap::new();
    for _ in 0..MAX_RELAYOUTS {
        let LaidOut {
            code: mut out,
            origin,
            same,
        } = lay_out(f, &nops)?;
        debug_assert!(
            repeats::shares_only_equals(&out.instrs, &same),
            "`{}`: layout shares an instruction with one it does not equal",
            f.name
        );
        // Each instruction is encoded once: the scoreboard pass reads the operand fields, and
        // the control word is written into the same word afterwards. An instruction equal to an
        // earlier one but for its address takes that one's encoding and analysis ([`repeats`]:
        // layout found them on the MIR).
        let mut encoded: Vec<sass::Encoded> = Vec::with_capacity(out.instrs.len());
        for (k, i) in out.instrs.iter().enumerate() {
            let e = if same[k] < k {
                encoded[same[k]]
            } else {
                sass::Encoded::new(i).map_err(|e| format!("`{}`: `{i}`: {e}", f.name))?
            };
            encoded.push(e);
        }
        let nodes = scoreboard::analyze_encoded_sharing(&out.instrs, &encoded, Some(&same));
        let assigned = scoreboard::assign_nodes_sharing(&out.instrs, &nodes, opts, Some(&same));
        let mut more = false;
        for (k, w) in assigned.why.iter().enumerate() {
            if w.extra > 0
                && let Some((bi, ii, nop)) = origin[k]
            {
                let node = &nodes[k];
                let key = if nop || node.flow != scoreboard::Flow::Next || scoreboard::drains(node)
                {
                    (bi, ii)
                } else {
                    (bi, ii + 1)
                };
                let e = nops.entry(key).or_default();
                e.0 += w.nops;
                e.1 |= w.tensor_nops;
                more = true;
            }
        }
        if more {
            continue;
        }
        for (i, c) in out.instrs.iter_mut().zip(&assigned.ctrl) {
            i.ctrl = *c;
        }
        out.why = assigned.why;
        // The nodes are freed before the words are made, so that the words can take their
        // memory instead of new pages.
        drop(nodes);
        drop(same);
        out.words.reserve_exact(out.instrs.len());
        for (i, e) in out.instrs.iter().zip(&encoded) {
            out.words.push(
                e.with_ctrl(i)
                    .map_err(|e| format!("cannot encode `{i}` in `{}`: {e}", f.name))?,
            );
        }
        return Ok(out);
    }
    Err(format!(
        "`{}`: the scoreboard pass still asks for more NOPs after {MAX_RELAYOUTS} layouts",
        f.name
    ))
}

/// A QGMMA/HGMMA writes its accumulators asynchronously, and an HGMMA with A in registers
/// reads them asynchronously too: ptxc follows each with `WARPGROUP.DEPBAR.LE gsb0, 0x0`
/// (`lower/isel/wgmma.rs`), and nothing may read or write the accumulators, or write A, in
/// between (a copy or spill the register allocator placed there would see the old values or
/// change the input). An error names the function otherwise.
fn check_gmma_waits(f: &Function) -> Result<(), String> {
    let gpr_range = |r: mir::Reg| match r {
        mir::Reg::Phys { reg, count } if reg.class == RegClass::Gpr && !reg.is_zero() => {
            Some(u32::from(reg.num)..u32::from(reg.num) + u32::from(count))
        }
        _ => None,
    };
    let meets =
        |a: &std::ops::Range<u32>, b: &std::ops::Range<u32>| a.start < b.end && b.start < a.end;
    for b in &f.blocks {
        for (i, inst) in b.insts.iter().enumerate() {
            if !matches!(inst.mnemonic, "QGMMA" | "HGMMA") {
                continue;
            }
            let Some(acc) = inst.defs().next().and_then(gpr_range) else {
                return Err(format!(
                    "`{}`: a {} without allocated accumulators",
                    f.name, inst.mnemonic
                ));
            };
            // A in registers: the GPR operand after D.
            let a = inst.ops.get(1).and_then(|o| match o.kind {
                OpKind::Reg(r) if !r.def => gpr_range(r.reg),
                _ => None,
            });
            let mut waited = false;
            for next in &b.insts[i + 1..] {
                if next.mnemonic == "WARPGROUP" && next.mods.first() == Some(&"DEPBAR") {
                    waited = true;
                    break;
                }
                let clash = next.ops.iter().flat_map(|o| o.regs()).any(|r| {
                    gpr_range(r.reg).is_some_and(|g| {
                        meets(&g, &acc) || (r.def && a.as_ref().is_some_and(|a| meets(&g, a)))
                    })
                });
                if clash {
                    break;
                }
            }
            if !waited {
                return Err(format!(
                    "`{}`: ptxc cannot yet keep the accumulators of a wgmma in place until its wait",
                    f.name
                ));
            }
        }
    }
    Ok(())
}

/// ptxas's `NOP` for a wait on a tensor-core result: `@!UPT UIADD3 URZ, URZ, URZ, URZ`.
///
/// This and [`ret_through`] are built, not parsed: the parser interns every name of the form
/// tables on its first use, 1.27M of the 2.44M instructions of compiling `zluda/vector` (a
/// kernel with a subroutine) before; the tests check that they equal the parsed text.
fn tensor_nop() -> Instr {
    let urz = sass::Operand::new(sass::OperandKind::Reg(sass::URZ));
    Instr::new("UIADD3", &[], vec![urz; 4]).guard(sass::Guard {
        pred: sass::UPT,
        neg: true,
    })
}

/// A subroutine's return (`lower/isel/call.rs`): through the return address register `R{num}`,
/// to its value plus 0, `RET.REL.NODEC R{num} 0x0`.
fn ret_through(num: u8, abs: bool) -> Instr {
    let reg = sass::Reg {
        file: sass::RegFile::Gpr,
        num,
    };
    let target = sass::Operand::new(sass::OperandKind::RegTarget(reg, 0));
    let mods: &[&'static str] = if abs {
        &["ABS", "NODEC"]
    } else {
        &["REL", "NODEC"]
    };
    Instr::new("RET", mods, vec![target])
}

/// The callee of a `CALL.ABS` to a `.func` in a section of its own (debug builds): its first
/// operand names it (a call out of the module names the register with the address).
fn absolute_callee(mi: &mir::Inst) -> Option<&str> {
    match mi.ops.first().map(|o| &o.kind) {
        Some(OpKind::Func(name)) if mi.mnemonic == "CALL" && mi.mods.contains(&"ABS") => Some(name),
        _ => None,
    }
}

/// Whether every copy of `mi` converts alike, without side effects: not a `RET` (built from
/// its operand), a `CALL.ABS` (a relocation), nor an `LEPC` or a `MOV` of a return address
/// (patched after layout).
fn converted_alike(mi: &mir::Inst) -> bool {
    match mi.mnemonic {
        "RET" | "LEPC" => false,
        "CALL" => absolute_callee(mi).is_none(),
        "MOV" => !matches!(mi.ops.get(1).map(|o| &o.kind), Some(OpKind::Func(_))),
        _ => true,
    }
}

/// The half of an absolute return address a `MOV` writes (`Some(0)` low, `Some(32)` high),
/// if it is one (`lower/isel/call.rs`, `pass_absolute_return_address`).
fn absolute_return_half(mi: &mir::Inst) -> Option<i64> {
    match (
        mi.ops.get(1).map(|o| &o.kind),
        mi.ops.get(2).map(|o| &o.kind),
    ) {
        (Some(OpKind::Func(_)), Some(OpKind::Int(shift))) if mi.mnemonic == "MOV" => Some(*shift),
        _ => None,
    }
}

/// A laid-out function ([`lay_out`]).
struct LaidOut {
    /// The function: words not yet encoded, control words plain.
    code: EncodedFunction,
    /// For each instruction, where it comes from: `(block, index, false)` for an instruction of
    /// the block, `(block, index, true)` for a NOP inserted before that position; the padding
    /// has none.
    origin: Vec<Option<(usize, usize, bool)>>,
    /// For each instruction, the first instruction equal to it but for the address, as
    /// [`repeats::first_equal`] gives it (itself when there is none, and for an instruction
    /// whose encoding depends on its address); found on the MIR ([`repeats::MirRepeats`]).
    same: Vec<usize>,
}

/// Lays out and converts a function, with `nops` NOPs before the given positions `(block,
/// index)` (index = the block's length: after its last instruction).
fn lay_out(f: &Function, nops: &BTreeMap<(usize, usize), (u32, bool)>) -> Result<LaidOut, String> {
    check_gmma_waits(f)?;
    // Layout: blocks in order; a fallthrough to a block that does not follow becomes a branch.
    let mut starts = vec![0u64; f.blocks.len()];
    let mut n = 0u64;
    let mut extra_branch = vec![None; f.blocks.len()];
    for (bi, b) in f.blocks.iter().enumerate() {
        starts[bi] = n * 16;
        n += b.insts.len() as u64;
        if let Some(t) = b.fallthrough
            && t.0 as usize != bi + 1
        {
            extra_branch[bi] = Some(t);
            n += 1;
        }
        n += nops
            .range((bi, 0)..(bi + 1, 0))
            .map(|(_, c)| u64::from(c.0))
            .sum::<u64>();
    }
    // The instructions, the branch after the code and the padding (below), in vectors of their
    // final size.
    let total = n as usize + 8 + runtime_abi::elf::TEXT_PAD_EXTRA / 16;
    let mut out = EncodedFunction {
        name: f.name.clone(),
        instrs: Vec::with_capacity(total),
        srcs: Vec::with_capacity(total),
        ..EncodedFunction::default()
    };
    let mut origin = Vec::with_capacity(total);
    let mut same = Vec::with_capacity(total);
    let mut repeats = repeats::MirRepeats::default();
    // The first inserted NOP of each kind (plain, tensor-core), which the later ones share.
    let mut first_nop: [Option<usize>; 2] = [None, None];
    // The instructions that take the return address of the `CALL` after them (below): `LEPC`,
    // and the `MOV` of a subroutine call's return address.
    let mut return_address_takers: Vec<usize> = Vec::new();
    for (bi, b) in f.blocks.iter().enumerate() {
        // The block's instructions and the branch added after it, if any (borrowed: copying
        // every instruction was 1.5% of compiling the straight-line 16k kernel).
        let extra = extra_branch[bi]
            .map(|t| mir::Inst::new("BRA", &[], vec![mir::Operand::new(OpKind::Block(t))]));
        let count = b.insts.len() + usize::from(extra.is_some());
        let mut nops_at =
            |ii: usize, out: &mut EncodedFunction, origin: &mut Vec<_>, same: &mut Vec<usize>| {
                let (count, tensor) = nops.get(&(bi, ii)).copied().unwrap_or((0, false));
                for _ in 0..count {
                    let mut nop = if tensor {
                        tensor_nop()
                    } else {
                        Instr::new("NOP", &[], vec![])
                    };
                    let k = out.instrs.len();
                    nop.addr = k as u64 * 16;
                    nop.ctrl = PLAIN;
                    out.instrs.push(nop);
                    out.srcs.push(None);
                    origin.push(Some((bi, ii, true)));
                    same.push(*first_nop[usize::from(tensor)].get_or_insert(k));
                }
            };
        for (ii, mi) in b.insts.iter().chain(extra.as_ref()).enumerate() {
            nops_at(ii, &mut out, &mut origin, &mut same);
            if mi.is_pseudo() {
                return Err(format!("`{mi}` reached emission in `{}`", f.name));
            }
            // A call out of the function names only the register with the callee's address;
            // its other MIR operands are the arguments, the return address and the results
            // the calling convention passes in fixed registers (`lower/isel/call.rs`).
            let printed = if mi.mnemonic == "CALL" {
                &mi.ops[..1]
            } else {
                &mi.ops[..]
            };
            let k = out.instrs.len();
            // A repeat of an earlier instruction is copied from it. Not the branch added after
            // the block (it is not in `f`), nor what layout converts with side effects below.
            let earlier = if ii < b.insts.len() && converted_alike(mi) {
                repeats.earlier(&b.insts[ii], k)
            } else {
                None
            };
            same.push(earlier.filter(|e| e.shared).map_or(k, |e| e.at));
            let mut i = if let Some(e) = earlier {
                out.instrs[e.at].clone()
            } else if mi.mnemonic == "RET" {
                // A subroutine's return (`lower/isel/call.rs`): through the return address
                // register, to its value plus 0.
                let num = match mi.ops.first().map(|o| &o.kind) {
                    Some(OpKind::Reg(mir::RegRef {
                        reg: mir::Reg::Phys { reg, .. },
                        ..
                    })) => reg.num,
                    _ => return Err(format!("`{}`: a RET without its return address", f.name)),
                };
                ret_through(num, mi.mods.contains(&"ABS"))
            } else if let Some(callee) = absolute_callee(mi) {
                // `CALL.ABS.NOINC 0x0`, relocated to the callee's address.
                out.relocs.push(crate::emit::model::Reloc {
                    offset: out.instrs.len() as u64 * 16,
                    ty: runtime_abi::reloc::R_CUDA_ABS55_16_34,
                    symbol: callee.to_string(),
                    addend: 0,
                });
                Instr::new("CALL", &["ABS", "NOINC"], vec![sass::target(0)])
            } else if mi.mnemonic == "MOV"
                && matches!(mi.ops.get(1).map(|o| &o.kind), Some(OpKind::Func(_)))
            {
                // The return address of the CALL after it, patched below.
                return_address_takers.push(out.instrs.len());
                let d = operand(&mi.ops[0], &starts)?;
                Instr::new("MOV", &[], vec![d, sass::target(0)])
            } else {
                if mi.mnemonic == "LEPC" {
                    return_address_takers.push(out.instrs.len());
                }
                let mut ops = printed
                    .iter()
                    .map(|o| operand(o, &starts))
                    .collect::<Result<Vec<_>, _>>()?;
                // A QGMMA/HGMMA that accumulates in place has no C operand in MIR (so that the
                // register allocator cannot give it registers of its own): C is D, after the
                // descriptors, and after A when A is in registers (`lower/isel/wgmma.rs`).
                let is_gpr = |o: Option<&mir::Operand>| {
                    matches!(o.map(|o| &o.kind),
                        Some(OpKind::Reg(mir::RegRef { reg: mir::Reg::Phys { reg, .. }, .. }))
                            if reg.class == RegClass::Gpr)
                };
                let c_at = if is_gpr(mi.ops.get(1)) { 3 } else { 2 };
                if matches!(mi.mnemonic, "QGMMA" | "HGMMA")
                    && !is_gpr(mi.ops.get(c_at))
                    && let Some(d) = ops.first().cloned()
                {
                    ops.insert(c_at, d);
                }
                Instr::new(mi.mnemonic, &mi.mods, ops)
            };
            if let Some(g) = mi.guard {
                i.guard = sass::Guard {
                    pred: reg(g.pred)?,
                    neg: g.neg,
                };
            }
            i.addr = out.instrs.len() as u64 * 16;
            i.ctrl = PLAIN;
            if i.mnemonic == "EXIT" {
                out.exit_offsets.push(i.addr as u32);
            }
            if i.mnemonic == "NOP" {
                out.warpsync_offsets.push(i.addr as u32);
            }
            if let Some(r) = mi.mbarrier {
                out.mbarrier_records.push((i.addr as u32, r));
            }
            if mi.warp_wide {
                out.warp_wide_offsets.push(i.addr as u32);
            }
            if mi.frame_save {
                out.frame_save_offsets.push(i.addr as u32);
            }
            out.instrs.push(i);
            out.srcs.push(mi.src.map(crate::mir::SrcPos::offset));
            origin.push(Some((bi, ii, false)));
        }
        nops_at(count, &mut out, &mut origin, &mut same);
    }
    for (entry, name, _) in &f.subroutines {
        out.subroutines
            .push((name.clone(), starts[entry.0 as usize] as u32));
    }
    // `LEPC` (and the `MOV` of a subroutine call's return address) takes the return address of
    // the `CALL` after it: the instruction that follows. (Listed while laying out: looking for
    // them in the laid-out code afterwards cost 0.3M of the 171.5M instructions of compiling
    // the straight-line 16k kernel.)
    for k in return_address_takers {
        let Some(call) = (k + 1..out.instrs.len()).find(|&j| out.instrs[j].mnemonic == "CALL")
        else {
            return Err(format!("`{}`: an LEPC without a CALL after it", f.name));
        };
        let ret = (call as u64 + 1) * 16;
        let (bi, ii, _) = origin.get(k).copied().flatten().unwrap_or_default();
        if out.instrs[k].mnemonic == "MOV"
            && let Some(shift) = f.blocks[bi].insts.get(ii).and_then(absolute_return_half)
        {
            // A half of an absolute return address: 0 in the code, relocated to the
            // function's address plus the return offset.
            let ty = if shift == 0 {
                runtime_abi::reloc::R_CUDA_ABS32_LO_32
            } else {
                runtime_abi::reloc::R_CUDA_ABS32_HI_32
            };
            out.relocs.push(crate::emit::model::Reloc {
                offset: k as u64 * 16,
                ty,
                symbol: f.name.clone(),
                addend: ret as i64,
            });
            continue;
        }
        if let Some(o) = out.instrs[k].operands.get_mut(1) {
            *o = sass::target(ret);
        }
    }
    out.relocs.sort_by_key(|r| r.offset);
    out.code_len = out.instrs.len();
    // ptxas ends every function with `BRA self`, then NOPs up to a 128-byte boundary plus another
    // 128 bytes (runtime_abi::elf::TEXT_PAD_EXTRA; what the cubin writer appends).
    let here = out.instrs.len() as u64 * 16;
    let mut pad = Instr::new("BRA", &[], vec![sass::target(here)]);
    pad.addr = here;
    out.instrs.push(pad);
    out.srcs.push(None);
    origin.push(None);
    same.push(out.instrs.len() - 1);
    let padded = out.instrs.len().next_multiple_of(8) + runtime_abi::elf::TEXT_PAD_EXTRA / 16;
    let first_pad_nop = out.instrs.len();
    while out.instrs.len() < padded {
        let mut nop = Instr::new("NOP", &[], vec![]);
        nop.addr = out.instrs.len() as u64 * 16;
        out.instrs.push(nop);
        out.srcs.push(None);
        origin.push(None);
        same.push(first_pad_nop);
    }
    Ok(LaidOut {
        code: out,
        origin,
        same,
    })
}

/// The listing of an encoded function in nvdisasm's syntax, each instruction decoded back from
/// its words (so the text is what the bits say).
pub fn listing(e: &EncodedFunction) -> Result<String, String> {
    let mut s = format!("\tFunction : {}\n", e.name);
    for (k, w) in e.words.iter().enumerate() {
        let i = sass::print::word_text(*w, k as u64 * 16)
            .map_err(|err| format!("cannot decode word {k}: {err}"))?;
        s.push_str(&format!(
            "        /*{:04x}*/                   {i} ;\n",
            k * 16
        ));
    }
    Ok(s)
}

/// The listing with each instruction's control word (`--ctrl`), and with `explain`, what each
/// wait and stall is for (`--explain-ctrl`): `// SB2 for 0x0120 LDG.E (result)` names the
/// instructions whose results (or source reads) a waited scoreboard covers; `stall: …` the
/// producer or rule that set the stall count.
pub fn listing_ctrl(e: &EncodedFunction, explain: bool) -> Result<String, String> {
    let mut s = format!("\tFunction : {}\n", e.name);
    let decoded: Vec<Instr> = e
        .words
        .iter()
        .enumerate()
        .map(|(k, w)| {
            sass::decode_at(*w, k as u64 * 16)
                .map_err(|err| format!("cannot decode word {k}: {err}"))
        })
        .collect::<Result<_, _>>()?;
    for (k, i) in decoded.iter().enumerate() {
        s.push_str(&format!(
            "        /*{:04x}*/ {}  {i} ;",
            k * 16,
            scoreboard::ctrl_text(&i.ctrl)
        ));
        if explain && let Some(why) = e.why.get(k) {
            let mut parts = Vec::new();
            for (sb, evs) in &why.waits {
                let list: Vec<String> = evs
                    .iter()
                    .map(|(p, read)| {
                        let m = decoded.get(*p).map_or("?", |i| i.mnemonic);
                        format!(
                            "0x{:04x} {m} ({})",
                            p * 16,
                            if *read { "sources read" } else { "result" }
                        )
                    })
                    .collect();
                parts.push(format!("wait SB{sb} for {}", list.join(", ")));
            }
            if !why.stall.is_empty() {
                parts.push(format!(
                    "stall {}: {}",
                    i.ctrl.stall,
                    addresses(&why.stall.to_string())
                ));
            }
            if !parts.is_empty() {
                s.push_str("    // ");
                s.push_str(&parts.join("; "));
            }
        }
        s.push('\n');
    }
    Ok(s)
}

/// `#12` (an instruction index in the pass's reasons) → `0x00c0` (its address).
fn addresses(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(p) = rest.find('#') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        match after[..digits].parse::<u64>() {
            Ok(k) => out.push_str(&format!("0x{:04x}", k * 16)),
            Err(_) => out.push('#'),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_instructions_equal_their_text() {
        let parsed = |t: &str| sass::parse_instr(t).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(tensor_nop(), parsed("@!UPT UIADD3 URZ, URZ, URZ, URZ"));
        for num in [0u8, 2, 17, 254] {
            assert_eq!(
                ret_through(num, false),
                parsed(&format!("RET.REL.NODEC R{num} 0x0"))
            );
            assert_eq!(
                ret_through(num, true),
                parsed(&format!("RET.ABS.NODEC R{num} 0x0"))
            );
        }
        assert_eq!(
            sass::encode(&ret_through(2, false)).unwrap(),
            sass::encode(&parsed("RET.REL.NODEC R2 0x0")).unwrap()
        );
        // ptxas -g: `RET.ABS.NODEC R20 0x0` is 0x0000000014007950 (probe /tmp/g.ptx, `f`).
        assert_eq!(
            sass::encode(&ret_through(20, true)).unwrap()[0],
            0x0000_0000_1400_7950
        );
    }
}
