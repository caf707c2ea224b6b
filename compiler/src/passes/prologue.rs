//! `prologue`: what every kernel starts with, after register allocation.
//!
//! ptxas begins every entry with `LDC R1, c[0x0][0x28]` — the initial stack pointer from
//! constant bank 0 (ptxas-facts.md §c.1) — and, when the function has a stack frame (`.local`
//! data or spill slots), `IADD3 R1, R1, -frame, RZ` to open it (`11_stack_spill/spill`:
//! `IADD3 R1, R1, -0x118, RZ` for a 280-byte frame). Frames are 8-byte aligned.
//!
//! A subroutine (`lower/inline.rs`, `subroutines`) instead keeps what its callers keep across
//! a call, as ptxas's recursive `fact` does (`tests/sass-probes/ptx/funcs.ptx`): it lowers R1 by
//! its frame, stores there every register it writes that a caller may keep across a call (all
//! but [`call_clobbers`]) and every convergence barrier its `BSSY`s use (`BMOV.32.CLEAR R0, Bn`
//! then `STL`), and before each `RET` loads them back and raises R1 again. Its frame is its
//! `.local` data and spill slots, then the saved registers.
//!
//! A caller-saved subroutine (`Function::caller_saved`: ptxas's slow paths,
//! `lower/slow_path.rs`, and every module subroutine but the recursive and address-taken ones)
//! saves no register, as ptxas's do: its callers know what it writes
//! (`regalloc::call_clobber_set`) and keep nothing there across the call. It still saves the
//! convergence barriers its `BSSY`s use. A subroutine with the fixed convention that calls a
//! caller-saved one saves, besides the registers it writes, those the callee writes.

use super::Pass;
use crate::mir::{Function, Inst, MemPrefix, MemTerm, OpKind, Operand, PReg, Reg, RegClass};
use crate::passes::regalloc::call_clobbers;

pub struct Prologue;

/// The stack pointer, R1.
pub const SP: PReg = PReg {
    class: RegClass::Gpr,
    num: 1,
};

impl Pass for Prologue {
    fn name(&self) -> &'static str {
        "prologue"
    }

    fn run(&self, f: &mut Function) -> Result<(), String> {
        if !f.is_entry {
            return subroutine_frame(f);
        }
        f.frame_bytes = f.frame_bytes.next_multiple_of(8);
        let mut pro = vec![Inst::new(
            "LDC",
            &[],
            vec![
                Operand::def(Reg::phys(SP)),
                Operand::new(OpKind::CBank {
                    bank: 0,
                    base: None,
                    offset: 0x28,
                }),
            ],
        )];
        if f.frame_bytes > 0 {
            pro.push(Inst::new(
                "IADD3",
                &[],
                vec![
                    Operand::def(Reg::phys(SP)),
                    Operand::use_(Reg::phys(SP)),
                    Operand::imm(-i64::from(f.frame_bytes)),
                    Operand::use_(Reg::phys(PReg::RZ)),
                ],
            ));
        }
        f.blocks[0].insts.splice(0..0, pro);
        Ok(())
    }
}

fn sp_slot(off: u32) -> Operand {
    Operand::new(OpKind::Mem {
        prefix: MemPrefix::None,
        terms: vec![
            MemTerm::Reg(Reg::phys(SP), None),
            MemTerm::Imm(i64::from(off)),
        ],
    })
}

fn gpr(num: u8) -> Reg {
    Reg::phys(PReg {
        class: RegClass::Gpr,
        num,
    })
}

/// The frame of a subroutine: saves at entry, restores before every `RET`.
fn subroutine_frame(f: &mut Function) -> Result<(), String> {
    let mut saved: Vec<u8> = Vec::new();
    let mut barriers: Vec<u8> = Vec::new();
    let caller_saved = f.caller_saved;
    for i in f.blocks.iter().flat_map(|b| &b.insts) {
        // The registers the instruction writes: its definitions, and for a call to a
        // caller-saved subroutine, what that writes.
        let mut written: Vec<(RegClass, u8)> = Vec::new();
        for r in i.defs() {
            let crate::mir::Reg::Phys { reg, count } = r else {
                return Err(format!("`{}`: a virtual register after allocation", f.name));
            };
            written.extend((reg.num..reg.num.saturating_add(count)).map(|n| (reg.class, n)));
        }
        if i.mnemonic == "CALL"
            && (crate::passes::regalloc::calls_slow_path(i)
                || crate::passes::regalloc::known_callee_writes(f, i).is_some())
        {
            let set = crate::passes::regalloc::call_clobber_set(f, i);
            for class in [
                RegClass::Gpr,
                RegClass::Ugpr,
                RegClass::Pred,
                RegClass::UPred,
            ] {
                written.extend(set.of(class).map(|n| (class, n as u8)));
            }
        }
        for (class, n) in written {
            if caller_saved {
                continue;
            }
            match class {
                RegClass::Gpr
                    if n != 1
                        && n != 255
                        && !call_clobbers(class, n.into())
                        && !saved.contains(&n) =>
                {
                    saved.push(n);
                }
                RegClass::Ugpr if n != 63 && !call_clobbers(class, n.into()) => {
                    return Err(format!(
                        "ptxc cannot save the uniform register UR{n} in the subroutine `{}` \
                             yet",
                        f.name
                    ));
                }
                _ => {}
            }
        }
        if i.mnemonic == "BSSY" {
            for o in &i.ops {
                if let OpKind::Barrier(b) = o.kind
                    && !barriers.contains(&b)
                {
                    barriers.push(b);
                }
            }
        }
    }
    saved.sort_unstable();
    barriers.sort_unstable();
    let base = f.frame_bytes.next_multiple_of(8);
    let frame = (base + 4 * (saved.len() + barriers.len()) as u32).next_multiple_of(8);
    f.frame_bytes = frame;
    if frame == 0 {
        return Ok(());
    }
    let slots: Vec<(u8, u32)> = saved
        .iter()
        .enumerate()
        .map(|(k, &r)| (r, base + 4 * k as u32))
        .collect();
    let bar_slots: Vec<(u8, u32)> = barriers
        .iter()
        .enumerate()
        .map(|(k, &b)| (b, base + 4 * (saved.len() + k) as u32))
        .collect();
    let adjust = |by: i64| {
        Inst::new(
            "IADD3",
            &[],
            vec![
                Operand::def(Reg::phys(SP)),
                Operand::use_(Reg::phys(SP)),
                Operand::imm(by),
                Operand::use_(Reg::phys(PReg::RZ)),
            ],
        )
    };
    // R0 carries the barriers: no argument, result or return address lives in it at the
    // entry or at a RET (`lower/isel/call.rs`).
    let mut pro = vec![adjust(-i64::from(frame))];
    for &(r, off) in &slots {
        pro.push(Inst::new("STL", &[], vec![sp_slot(off), Operand::use_(gpr(r))]).frame_save());
    }
    for &(b, off) in &bar_slots {
        pro.push(Inst::new(
            "BMOV",
            &["32", "CLEAR"],
            vec![Operand::def(gpr(0)), Operand::new(OpKind::Barrier(b))],
        ));
        pro.push(Inst::new("STL", &[], vec![sp_slot(off), Operand::use_(gpr(0))]).frame_save());
    }
    let mut epi = Vec::new();
    for &(b, off) in &bar_slots {
        epi.push(Inst::new("LDL", &[], vec![Operand::def(gpr(0)), sp_slot(off)]).frame_save());
        epi.push(Inst::new(
            "BMOV",
            &["32"],
            vec![Operand::new(OpKind::Barrier(b)), Operand::use_(gpr(0))],
        ));
    }
    for &(r, off) in &slots {
        epi.push(Inst::new("LDL", &[], vec![Operand::def(gpr(r)), sp_slot(off)]).frame_save());
    }
    epi.push(adjust(i64::from(frame)));
    for b in &mut f.blocks {
        let mut k = 0;
        while k < b.insts.len() {
            if b.insts[k].mnemonic == "RET" {
                if b.insts[k].guard.is_some() {
                    return Err(format!(
                        "ptxc cannot restore the frame of `{}` before a guarded RET yet",
                        f.name
                    ));
                }
                b.insts.splice(k..k, epi.iter().cloned());
                k += epi.len();
            }
            k += 1;
        }
    }
    f.blocks[0].insts.splice(0..0, pro);
    Ok(())
}
