//! Per-thread control instructions and special registers: EXIT, CALL, RET, BSSY, BSYNC,
//! WARPSYNC, ENDCOLLECTIVE, BMOV, BAR, B2R, S2R, S2UR, CS2R, LEPC, NOP, NANOSLEEP, BPT.

use super::{BarWait, Cx, Flow, R, Red, State, allow, invalid, op, unimpl};
use crate::SimError;
use crate::mem;
use crate::program::Decoded;
use ptxc::target::sm90a::OperandKind;
use ptxc::target::sm90a::print::SR_NAMES;

/// Executes `m` if it is a control instruction.
pub(super) fn exec(m: &str, d: &Decoded, cx: &mut Cx) -> R<Option<Flow>> {
    let f = match m {
        "NOP" | "NANOSLEEP" | "YIELD" => Flow::Next,
        "EXIT" => {
            allow(d, &[])?;
            Flow::Exit
        }
        "BPT" => {
            return Err(SimError::Trap(format!(
                "{} executed by thread {:?}",
                d.instr, cx.t.tid
            )));
        }
        "BSSY" => {
            allow(d, &[])?;
            // [pred?, Bd, target]
            let b = barrier(d, op(d, 1)?)?;
            cx.t.b[b] = cx.env.group;
            Flow::Next
        }
        "BSYNC" => {
            allow(d, &[])?;
            let b = barrier(d, op(d, 1)?)?;
            Flow::Block(State::Bsync(b as u8))
        }
        // `WARPSYNC.COLLECTIVE mask, after` (ptxas -O0/-g) opens the collective region that
        // `ENDCOLLECTIVE` closes. Modelled as a `WARPSYNC` of the mask that falls through into
        // the region: PTX requires every thread of a `.sync` instruction's membermask to
        // execute it, so once they have synchronized the region runs once for all of them
        // (`after`, the instruction after `ENDCOLLECTIVE`, is not needed).
        "ENDCOLLECTIVE" => {
            allow(d, &[])?;
            Flow::Next
        }
        "WARPSYNC" => {
            allow(d, &["ALL", "COLLECTIVE"])?;
            let mask = if d.has("ALL") {
                u32::MAX
            } else {
                cx.src(d, op(d, 1)?)?
            };
            Flow::Block(State::Warpsync(mask))
        }
        "BMOV" => {
            allow(d, &["32", "CLEAR"])?;
            let dst = op(d, 0)?;
            let src = op(d, 1)?;
            match (&dst.kind, &src.kind) {
                (OperandKind::Reg(rd), OperandKind::Reg(rs))
                    if rs.file == ptxc::target::sm90a::RegFile::Barrier =>
                {
                    let v = cx.t.b[rs.num as usize & 15];
                    if d.has("CLEAR") {
                        cx.t.b[rs.num as usize & 15] = 0;
                    }
                    cx.set_reg(*rd, v);
                }
                (OperandKind::Reg(rd), _) if rd.file == ptxc::target::sm90a::RegFile::Barrier => {
                    let v = cx.src(d, src)?;
                    cx.t.b[rd.num as usize & 15] = v;
                }
                _ => return invalid(d, "BMOV operands"),
            }
            Flow::Next
        }
        "CALL" => {
            allow(d, &["REL", "ABS", "NOINC"])?;
            let t = op(d, 1)?;
            let target = match t.kind {
                OperandKind::Int(a) => a as u64,
                OperandKind::Reg(_) => cx.src64(d, t)?,
                _ => return invalid(d, "call target"),
            };
            if !d.has("NOINC") {
                cx.t.ret_stack.push((cx.t.pc as u64 + 1) * 16);
            }
            Flow::Jump(target)
        }
        "RET" => {
            allow(d, &["REL", "ABS", "NODEC"])?;
            if d.has("NODEC") {
                let OperandKind::RegTarget(r, t) = op(d, 1)?.kind else {
                    return invalid(d, "return target");
                };
                let base = u64::from(cx.reg(r)) | u64::from(cx.reg(Cx::nth(r, 1))) << 32;
                Flow::Jump(base.wrapping_add(t as u64))
            } else {
                match cx.t.ret_stack.pop() {
                    Some(a) => Flow::Jump(a),
                    None => return Err(SimError::Trap("RET with an empty call stack".into())),
                }
            }
        }
        "LEPC" => {
            allow(d, &[])?;
            let OperandKind::Int(t) = op(d, 1)?.kind else {
                return invalid(d, "LEPC target");
            };
            cx.set64(d, op(d, 0)?, t as u64)?;
            Flow::Next
        }
        "BAR" => bar(d, cx)?,
        "B2R" => {
            allow(d, &["RESULT"])?;
            let v = cx.t.bar_result;
            cx.set(d, op(d, 0)?, v)?;
            cx.set_pred(d, op(d, 1)?, v != 0)?;
            Flow::Next
        }
        "S2R" | "S2UR" => {
            allow(d, &[])?;
            let v = sreg(d, cx, op(d, 1)?)?;
            cx.set(d, op(d, 0)?, v)?;
            Flow::Next
        }
        "CS2R" => {
            allow(d, &["32"])?;
            let s = op(d, 1)?;
            if d.has("32") {
                let v = sreg(d, cx, s)?;
                cx.set(d, op(d, 0)?, v)?;
            } else {
                let OperandKind::SReg(n) = s.kind else {
                    return invalid(d, "special register");
                };
                let v = match SR_NAMES.get(n as usize).copied() {
                    Some("SRZ") => 0,
                    Some("SR_CLOCKLO") | Some("SR_GLOBALTIMERLO") => cx.env.clock,
                    _ => return unimpl(d, "64-bit special register"),
                };
                cx.set64(d, op(d, 0)?, v)?;
            }
            Flow::Next
        }
        _ => return Ok(None),
    };
    Ok(Some(f))
}

fn barrier(d: &Decoded, o: &ptxc::target::sm90a::Operand) -> R<usize> {
    match o.kind {
        OperandKind::Reg(r) if r.file == ptxc::target::sm90a::RegFile::Barrier => {
            Ok(r.num as usize & 15)
        }
        _ => invalid(d, "not a convergence barrier"),
    }
}

fn bar(d: &Decoded, cx: &mut Cx) -> R<Flow> {
    allow(d, &["SYNC", "DEFER_BLOCKING", "RED", "POPC", "AND", "OR"])?;
    let id = cx.src(d, op(d, 0)?)? & 0xf;
    let count = match d.ops.get(1) {
        Some(o) => match o.kind {
            OperandKind::Int(0) => None,
            OperandKind::Int(n) => Some(n as u32),
            _ => Some(cx.src(d, o)?),
        },
        None => None,
    };
    let red = if d.has("RED") {
        let p = cx.pred(d, op(d, 2)?)?;
        let r = if d.has("POPC") {
            Red::Popc
        } else if d.has("AND") {
            Red::And
        } else {
            Red::Or
        };
        Some((r, p))
    } else if d.has("SYNC") {
        None
    } else {
        return unimpl(d, "barrier arrive without wait");
    };
    Ok(Flow::Block(State::Bar(BarWait { id, count, red })))
}

fn sreg(d: &Decoded, cx: &Cx, o: &ptxc::target::sm90a::Operand) -> R<u32> {
    let OperandKind::SReg(n) = o.kind else {
        return invalid(d, "not a special register");
    };
    let name = SR_NAMES.get(n as usize).copied().unwrap_or("?");
    let lane = cx.t.lane;
    let info = cx.env.info;
    let le = if lane == 31 {
        u32::MAX
    } else {
        (2u32 << lane) - 1
    };
    Ok(match name {
        "SR_LANEID" => lane,
        "SR_TID.X" => cx.t.tid[0],
        "SR_TID.Y" => cx.t.tid[1],
        "SR_TID.Z" => cx.t.tid[2],
        "SR_CTAID.X" => info.ctaid[0],
        "SR_CTAID.Y" => info.ctaid[1],
        "SR_CTAID.Z" => info.ctaid[2],
        "SR_CgaCtaId" => 0,
        "SR_SWINHI" => (mem::SHARED_WINDOW >> 32) as u32,
        "SR_SWINLO" => mem::SHARED_WINDOW as u32,
        "SR_LMEMHIOFF" => 0,
        "SR_EQMASK" => 1 << lane,
        "SR_LTMASK" => (1u32 << lane) - 1,
        "SR_LEMASK" => le,
        "SR_GTMASK" => !le,
        "SR_GEMASK" => !((1u32 << lane) - 1),
        "SR_VIRTUALSMID" => 0,
        "SR_VIRTID" => cx.t.warp << 8,
        // %nwarpid: 64 warps per SM.
        "SR_VIRTCFG" => 64 << 8,
        "SR_SMEMSZ" => info.shared_size,
        "SR_CLOCKLO" | "SR_GLOBALTIMERLO" => cx.env.clock as u32,
        "SR_CLOCKHI" | "SR_GLOBALTIMERHI" => (cx.env.clock >> 32) as u32,
        "SRZ" => 0,
        _ => return unimpl(d, &format!("special register {name}")),
    })
}
