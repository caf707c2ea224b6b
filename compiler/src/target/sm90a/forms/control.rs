//! Forms: control flow and system (BRA, EXIT, CALL, RET, BSSY, BSYNC, BREAK, WARPSYNC,
//! ENDCOLLECTIVE, BAR,
//! NOP, NANOSLEEP, BPT, DEPBAR, LEPC, BMOV, B2R, S2R, CS2R).
//!
//! Branch offsets are in 4-byte units and relative to the next instruction: target = address +
//! 16 + offset × 4, the offset in [23:16] ∪ [81:34] (BRA, CALL, RET) or [63:34] (BSSY)
//! (`tests/sass-probes/targets.txt`). The optional predicate at [89:87] (negation 90) is printed
//! first and left out when it is PT.

use super::*;

/// The branch offset field [23:16] ∪ [81:34].
fn br_field() -> Field {
    Field::split((16, 8), (34, 48))
}

fn cond() -> OpSpec {
    preds(87).opt(PT7)
}

/// BRA and BRA.DIV/.INC/.DEC (opcode 0x947), BRA.U(.ANY) with a vector predicate.
fn bra(kind: &'static str) -> Form {
    let f = form("BRA", 0x947)
        .ev("pyptx/fa_ws_pingpong_sm90a, probes/16_tma_elect (BRA.U.ANY); survey BRA 0x947; targets.txt");
    let f = match kind {
        "U" => f.m("U").hide(32, 1, 1).flag(84, "ANY"),
        "DIV" => f.m("DIV").hide(33, 1, 1),
        _ => f.mf(85, 2, &[(0, ""), (1, "INC"), (2, "DEC")]),
    };
    f.op(cond()).op(rel_target(br_field()))
}

pub(super) fn forms() -> Vec<Form> {
    let mut v = vec![
        bra(""),
        bra("U"),
        bra("DIV"),
        // BRA.U with a uniform predicate operand (opcode 0x547): UP [26:24], negation 27.
        form("BRA", 0x547)
            .ev("probes/05_fences/fence_proxy_alias; survey BRA 0x547")
            .m("U")
            .hide(32, 1, 1)
            .hide(91, 1, 1)
            .flag(84, "ANY")
            .op(cond())
            .op(upred(24).not(27))
            .op(rel_target(br_field())),
        form("EXIT", 0x94d)
            .ev("pyptx/fa_ws_pingpong_sm90a, probes/07_exit; survey EXIT 0x94d")
            .mf(84, 2, &[(0, ""), (1, "KEEPREFCOUNT"), (2, "PREEMPTED")])
            .flag(86, "NO_ATEXIT")
            .op(cond()),
        form("BSSY", 0x945)
            .ev("pyptx/matmul_tma_v33_sm90a; survey BSSY 0x945; targets.txt (offset [63:34])")
            .op(cond())
            .op(bar(16).def())
            .op(rel_target(Field::new(34, 30))),
        form("BSYNC", 0x941)
            .ev("pyptx/matmul_tma_v33_sm90a; survey BSYNC 0x941")
            .op(cond())
            .op(bar(16)),
        form("BREAK", 0x942)
            .ev("pyptx/matmul_tma_v33_sm90a; survey BREAK 0x942")
            .op(cond())
            .op(bar(16).du()),
        form("WARPSYNC", 0x348)
            .ev("zluda/redux_sync_add_u32_partial; survey WARPSYNC 0x348")
            .flag(85, "EXCLUSIVE")
            .op(cond())
            .op(gpr(24)),
        form("WARPSYNC", 0x948)
            .ev("pyptx/matmul_tma_v33_sm90a; survey WARPSYNC 0x948")
            .m("ALL")
            .op(cond()),
        // The -O0/-g form of a warp-synchronous instruction: `WARPSYNC.COLLECTIVE R, target`
        // (bit 86; no EXCLUSIVE: bit 85 is rejected), the instruction, then `ENDCOLLECTIVE`;
        // the target is the instruction after the `ENDCOLLECTIVE` (branch offset [23:16] ∪
        // [81:34]). Scoreboards rejected as for WARPSYNC.
        form("WARPSYNC", 0x348)
            .ev("zluda/shfl_sync_bfly_b32_pred (ptxas -g); tests/sass-probes/debugforms.txt")
            .m("COLLECTIVE")
            .hide(86, 1, 1)
            .op(cond())
            .op(gpr(24))
            .op(rel_target(br_field())),
        form("WARPSYNC", 0x948)
            .ev("pyptx/intrinsics-sm90__test_barrier_cluster (ptxas -g); tests/sass-probes/debugforms.txt")
            .m("COLLECTIVE")
            .m("ALL")
            .hide(86, 1, 1)
            .op(cond())
            .op(rel_target(br_field())),
        form("ENDCOLLECTIVE", 0x91b)
            .ev("zluda/shfl_sync_bfly_b32_pred (ptxas -g); tests/sass-probes/debugforms.txt")
            .op(cond()),
        form("CALL", 0x944)
            .ev("zluda/call; survey CALL 0x944; targets.txt")
            .m("REL")
            .mf(86, 1, &[(0, ""), (1, "NOINC")])
            .op(cond())
            .op(rel_target(br_field())),
        form("CALL", 0x943)
            .ev("zluda/_Z9vectorAddPKfS0_Pfi (vprintf); survey CALL 0x943; targets.txt")
            .m("ABS")
            .mf(86, 1, &[(0, ""), (1, "NOINC")])
            .op(cond())
            .op(OpSpec {
                spec: Spec::Target {
                    f: Field::split((16, 8), (34, 47)),
                    scale: 4,
                    rel: false,
                    reg: None,
                },
                ..gpr(0)
            }),
        form("CALL", 0x343)
            .ev("zluda/assertfail; survey CALL 0x343 (the target added to the register is printed when non-zero)")
            .m("ABS")
            .mf(86, 1, &[(0, ""), (1, "NOINC")])
            .op(cond())
            .op(gpr(24).n(2)),
        form("LEPC", 0x94e)
            .ev("zluda/assertfail; survey LEPC 0x94e; targets.txt (offset [81:24] in bytes)")
            .op(gpr(16).def().n(2))
            .op(OpSpec {
                spec: Spec::Target {
                    f: Field::new(24, 58),
                    scale: 1,
                    rel: true,
                    reg: None,
                },
                ..gpr(0)
            }),
        form("NOP", 0x918).ev("pyptx/fa_ws_pingpong_sm90a; survey NOP 0x918"),
        form("YIELD", 0x946)
            .ev("tests/sass-probes/opscan.txt (bare opcode 0x946); condition [89:87]/90 as BRA, checked by the property test")
            .op(cond()),
        form("KILL", 0x95b)
            .ev("tests/sass-probes/opscan.txt (bare opcode 0x95b); condition [89:87]/90 as EXIT, checked by the property test")
            .op(cond()),
        form("NANOSLEEP", 0x95d)
            .ev("zluda/nanosleep, probes/09_mbarrier (NANOSLEEP.SYNCS); survey NANOSLEEP 0x95d")
            .flag(86, "RAND")
            .flag(85, "WARP")
            .flag(84, "SYNCS")
            .op(cond())
            .op(uimm(32, 32)),
        form("NANOSLEEP", 0x35d)
            .ev("tests/sass-probes/ptx/misc (nanosleep.u32 with a register)")
            .flag(86, "RAND")
            .flag(85, "WARP")
            .flag(84, "SYNCS")
            .op(cond())
            .op(gpr(32)),
        form("BPT", 0x95c)
            .ev("zluda/_Z9vectorAddPKfS0_Pfi; survey BPT 0x95c")
            .m("TRAP")
            .hide(84, 2, 3)
            .op(uimm(34, 3).opt(0)),
        form("DEPBAR", 0x91a)
            .ev("pyptx/fa_ws_pingpong_sm90a; survey DEPBAR 0x91a; tests/sass-probes/addrforms.txt")
            .op(sbset(32).opt(0)),
        form("DEPBAR", 0x91a)
            .ev("pyptx/fa_ws_pingpong_sm90a, probes/16_tma_elect (DEPBAR.LE SB0, 0x0); tests/sass-probes/addrforms.txt (SB [46:44], count [43:38])")
            .m("LE")
            .hide(47, 1, 1)
            .op(enm(
                44,
                3,
                &[
                    (0, "SB0"),
                    (1, "SB1"),
                    (2, "SB2"),
                    (3, "SB3"),
                    (4, "SB4"),
                    (5, "SB5"),
                ],
            ))
            .op(uimm(38, 6))
            .op(sbset(32).opt(0)),
        form("BMOV", 0x355)
            .ev("kernels/device_calls; NAK-documented layout (B [27:24], .CLEAR 84) checked by the property test")
            .var()
            .m("32")
            .flag(84, "CLEAR")
            .op(gpr(16).def())
            .op(bar(24)),
        form("BMOV", 0x356)
            .ev("kernels/device_calls; layout B [27:24], R [39:32], checked by the property test")
            .m("32")
            .op(bar(24).def())
            .op(gpr(32)),
        form("B2R", 0x31c)
            .ev("zluda/bar_red_and_pred; survey B2R 0x31c")
            .var()
            .m("RESULT")
            .hide(78, 1, 1)
            .op(gpr(16).def())
            .op(pred(81).def().opt(PT7)),
        form("S2R", 0x919)
            .ev("pyptx/fa_ws_pingpong_sm90a, probes/02_cluster_sregs (SR_CgaCtaId = 0x88, SR_SWINHI = 0x2f); survey S2R 0x919; probes/13_control_word/srscan.SM90a.txt")
            .var()
            .op(gpr(16).def())
            .op(sreg(72)),
        form("CS2R", 0x805)
            .ev("pyptx/matmul_tma_v33_sm90a, probes/02_cluster_sregs (%clock, %globaltimer); survey CS2R 0x805")
            .mf(80, 1, &[(0, "32"), (1, "")])
            .op(gpr(16).def().nby(0, &[(1, 2)]))
            .op(sreg(72)),
    ];
    // RET.REL / RET.ABS: the register holds the return address; the printed target is
    // `addr + 16 + off*4` (REL) or `off*4` (ABS).
    for (abs, name) in [(false, "REL"), (true, "ABS")] {
        v.push(
            form("RET", 0x950)
                .ev("zluda/_Z9vectorAddPKfS0_Pfi; survey RET 0x950; targets.txt")
                .m(name)
                .hide(85, 1, u64::from(abs))
                .mf(86, 1, &[(0, ""), (1, "NODEC")])
                .op(cond())
                .op(OpSpec {
                    spec: Spec::Target {
                        f: br_field(),
                        scale: 4,
                        rel: !abs,
                        reg: Some(Field::new(24, 8)),
                    },
                    ..gpr(0)
                }),
        );
    }
    // BAR: barrier id [57:54] (or a register [39:32]), thread count [53:42] (printed when not 0,
    // or a register [39:32]). With both in registers there is one register field, printed
    // twice (ptxas packs `count << 16 | id`). Opcodes from the `BARS` probe of
    // `tests/tests/isel_control.rs` (ptxas 13.1): 0xb1d immediate id and count, 0x51d register
    // id, 0x91d register count, 0x31d both.
    let bar_id = || uimm(54, 4);
    let count = || uimm(42, 12).opt(0);
    for (reg_id, reg_count, code) in [
        (false, false, 0xb1d),
        (true, false, 0x51d),
        (false, true, 0x91d),
        (true, true, 0x31d),
    ] {
        let id = if reg_id { gpr(32) } else { bar_id() };
        let (count, arv_count) = if reg_count && !reg_id {
            // nvdisasm leaves out a count register that is RZ, except after `BAR.ARV`.
            (gpr(32).opt(RZ_), gpr(32))
        } else if reg_count {
            (gpr(32), gpr(32))
        } else {
            (count(), uimm(42, 12))
        };
        let ev = if reg_count {
            "tests/tests/isel_control.rs BARS (BAR.SYNC 0x2, R4 = 0x91d; BAR.ARV R9, R9 = 0x31d)"
        } else {
            "pyptx/fa_ws_pingpong_sm90a, zluda/bar_sync; survey BAR 0xb1d/0x51d"
        };
        v.push(
            form("BAR", code)
                .ev(ev)
                .m("SYNC")
                .flag(80, "DEFER_BLOCKING")
                .op(id.clone())
                .op(count.clone()),
        );
        v.push(
            form("BAR", code)
                .ev("pyptx/fa_ws_pingpong_sm90a; survey BAR 0xb1d (mode [78:77]: SYNC 0, ARV 1, RED 2)")
                .m("ARV")
                .hide(77, 2, 1)
                .op(id.clone())
                .op(arv_count),
        );
        v.push(
            form("BAR", code)
                .ev("zluda/bar_red_and_pred; survey BAR 0xb1d (RED op [75:74])")
                .m("RED")
                .hide(77, 2, 2)
                .mf(74, 2, &[(0, "POPC"), (1, "AND"), (2, "OR")])
                .flag(80, "DEFER_BLOCKING")
                .op(id)
                .op(count)
                .op(preds(87)),
        );
    }
    v
}
