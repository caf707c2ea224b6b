//! Forms: warp-level (SHFL, VOTE, MATCH, REDUX).
//!
//! Evidence: survey SHFL 0x389/0x589/0x989/0xf89, VOTE 0x806, MATCH 0x3a1, REDUX 0x3c4
//! (`tests/sass-probes/survey.txt`) and the files in `.ev`.

use super::*;

const SHFL_MODE: Names = &[(0, "IDX"), (1, "UP"), (2, "DOWN"), (3, "BFLY")];

/// SHFL: lane from a register [39:32] or an immediate [57:53]; clamp/mask from a register
/// [71:64] or an immediate [52:40].
fn shfl(lane_imm: bool, c_imm: bool) -> Form {
    let code = match (lane_imm, c_imm) {
        (false, false) => 0x389,
        (false, true) => 0x589,
        (true, false) => 0x989,
        (true, true) => 0xf89,
    };
    form("SHFL", code)
        .ev("pyptx/fa_ws_pingpong_sm90a, zluda/shfl_sync_*; survey SHFL 0x389/0x589/0x989/0xf89")
        .var()
        .mf(58, 2, SHFL_MODE)
        .op(pred(81).def())
        .op(gpr(16).def())
        .op(gpr(24))
        .op(if lane_imm { uimm(53, 5) } else { gpr(32) })
        .op(if c_imm { uimm(40, 13) } else { gpr(64) })
}

pub(super) fn forms() -> Vec<Form> {
    let mut v = Vec::new();
    for l in [false, true] {
        for c in [false, true] {
            v.push(shfl(l, c));
        }
    }
    v.push(
        form("VOTE", 0x806)
            .ev("zluda/activemask, zluda/vote_*; survey VOTE 0x806")
            .mf(72, 2, &[(0, "ALL"), (1, "ANY"), (2, "EQ")])
            .op(gpr(16).def().opt(RZ_))
            .op(pred(81).def())
            .op(preds(87)),
    );
    v.push(
        form("MATCH", 0x3a1)
            .ev("zluda/match_sync; survey MATCH 0x3a1")
            .var()
            .m("ANY")
            .hide(79, 1, 1)
            .flag(73, "U64")
            .hide(81, 3, 7)
            .op(gpr(16).def())
            .op(gpr(24).nby(1, &[(1, 2)])),
    );
    v.push(
        form("MATCH", 0x3a1)
            .ev("zluda/match_sync; survey MATCH 0x3a1 (.ALL has a predicate output)")
            .var()
            .m("ALL")
            .flag(73, "U64")
            .op(pred(81).def())
            .op(gpr(16).def())
            .op(gpr(24).nby(1, &[(1, 2)])),
    );
    v.push(
        form("REDUX", 0x3c4)
            .ev("zluda/redux_sync_*; survey REDUX 0x3c4")
            .var()
            .mf(
                78,
                3,
                &[
                    (0, ""),
                    (1, "OR"),
                    (2, "XOR"),
                    (3, "SUM"),
                    (4, "MIN"),
                    (5, "MAX"),
                ],
            )
            .flag(73, "S32")
            .op(ugpr(16).def())
            .op(gpr(24)),
    );
    v
}
