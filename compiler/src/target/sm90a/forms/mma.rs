//! Forms: tensor cores (HMMA, IMMA, HGMMA, QGMMA, WARPGROUP).
//!
//! Evidence: survey HMMA 0x23c, IMMA 0x237, HGMMA 0x9f0/0xdf0, QGMMA 0x9f3
//! (`tests/sass-probes/survey.txt`) and the corpus files in `.ev`. GMMA shapes: N = (field + 1)
//! × 8 with the field at [57:53]; bit 58 selects K = 8 for 16-bit inputs.

use super::*;

/// `64xNxK` names for the GMMA shape field [58:53] (bit 58: the halved K), N = 8, 16, …, 256
/// in field values 0–31, as literals (formatting them at start-up cost a twentieth of a small
/// compilation).
macro_rules! gmma_shapes {
    ($k:literal $(, $k2:literal)?) => {
        gmma_shapes!(@ $k $(, $k2)?;
            0 8, 1 16, 2 24, 3 32, 4 40, 5 48, 6 56, 7 64, 8 72, 9 80, 10 88, 11 96, 12 104,
            13 112, 14 120, 15 128, 16 136, 17 144, 18 152, 19 160, 20 168, 21 176, 22 184,
            23 192, 24 200, 25 208, 26 216, 27 224, 28 232, 29 240, 30 248, 31 256)
    };
    (@ $k:literal; $($v:literal $n:literal),*) => {
        &[$(($v, concat!("64x", $n, "x", $k))),*]
    };
    (@ $k:literal, $k2:literal; $($v:literal $n:literal),*) => {
        &[$(($v, concat!("64x", $n, "x", $k)), ($v | 32, concat!("64x", $n, "x", $k2))),*]
    };
}

/// Accumulator registers per thread for F32 accumulation: N/2.
const GMMA_REGS: [(u32, u8); 64] = {
    let mut v = [(0u32, 0u8); 64];
    let mut n = 0;
    while n < 64 {
        v[n] = (n as u32, (((n % 32) + 1) * 4) as u8);
        n += 1;
    }
    v
};

fn gmma_regs() -> &'static [(u32, u8)] {
    &GMMA_REGS
}

/// The uniform register of `gdesc[URx]`: the GMMA reads the A and B descriptors, 64 bits each,
/// from URx..URx+3 (`UMOV UR4 … UR7` before each GMMA in ptxas's listings, e.g.
/// pyptx/matmul_tma_v35). All four count as read, so that the hazard checker and the scoreboard
/// pass see every one of them (with A from registers ptxas leaves B's descriptor in URx+2:URx+3;
/// counting all four is conservative).
fn gdesc_ur(pos: u8) -> MemTermSpec {
    MemTermSpec {
        regs: 4,
        ..t_u(pos)
    }
}

fn gdesc_sfx(o: OpSpec, a: bool) -> OpSpec {
    let o = if a {
        o.sfx(72, 1, &[(0, ""), (1, "negA")])
    } else {
        o
    };
    let o = o.sfx(63, 1, &[(0, ""), (1, "negB")]);
    let o = if a {
        o.sfx(61, 1, &[(0, ""), (1, "tnspA")])
    } else {
        o
    };
    o.sfx(62, 1, &[(0, ""), (1, "tnspB")])
}

fn hgmma(reg_a: bool) -> Form {
    let f = form("HGMMA", if reg_a { 0xdf0 } else { 0x9f0 })
        .ev("pyptx/fa_ws_pingpong_sm90a (wgmma.mma_async); survey HGMMA 0x9f0/0xdf0")
        .var()
        .hide(91, 1, 1)
        .mf(53, 6, gmma_shapes!(16, 8))
        .mf(75, 1, &[(0, "F16"), (1, "F32")])
        .mf(76, 2, &[(0, ""), (1, "BF16"), (2, "TF32")])
        .op(gpr(16).du().nby(0, gmma_regs()));
    let f = if reg_a {
        f.op(gpr(24).neg(72).n(4)).op(gdesc_sfx(
            memop(PrefixSpec::GDesc, vec![gdesc_ur(32)]),
            false,
        ))
    } else {
        f.op(gdesc_sfx(
            memop(PrefixSpec::GDesc, vec![gdesc_ur(24)]),
            true,
        ))
    };
    f.op(gpr(64).nby(0, gmma_regs()))
        .op(upreds(87).inv().opt(0))
        .op(enm(84, 3, &[(0, "gsb0")]).opt(7))
}

fn qgmma() -> Form {
    form("QGMMA", 0x9f3)
        .ev("pyptx/matmul_tma_v33_sm90a (fp8 wgmma); survey QGMMA 0x9f3")
        .var()
        .hide(91, 1, 1)
        .mf(53, 5, gmma_shapes!(32))
        .mf(75, 1, &[(0, "F16"), (1, "F32")])
        .mf(76, 1, &[(0, "E4M3"), (1, "E5M2")])
        .mf(77, 1, &[(0, "E4M3"), (1, "E5M2")])
        .op(gpr(16).du().nby(0, gmma_regs()))
        .op(memop(PrefixSpec::GDesc, vec![gdesc_ur(24)])
            .sfx(72, 1, &[(0, ""), (1, "negA")])
            .sfx(63, 1, &[(0, ""), (1, "negB")]))
        .op(gpr(64).nby(0, gmma_regs()))
        .op(upreds(87).inv().opt(0))
        .op(enm(84, 3, &[(0, "gsb0")]).opt(7))
}

pub(super) fn forms() -> Vec<Form> {
    vec![
        form("HMMA", 0x23c)
            .ev("zluda/mma_m16n8k16_f32_bf16_bf16_f32, zluda/mma_*; survey HMMA 0x23c")
            .var()
            .mf(75, 1, &[(0, "1688"), (1, "16816")])
            .mf(76, 1, &[(0, "F16"), (1, "F32")])
            .mf(82, 1, &[(0, ""), (1, "BF16")])
            .op(gpr(16).def().nby(1, &[(0, 2), (1, 4)]))
            .op(gpr(24).reuse(0).nby(0, &[(0, 2), (1, 4)]))
            .op(gpr(32).reuse(1).nby(0, &[(0, 1), (1, 2)]))
            .op(gpr(64).nby(1, &[(0, 2), (1, 4)]))
            .op(upreds(87).inv().opt(0)),
        form("IMMA", 0x237)
            .ev("zluda/mma_m16n8k32_s32_s8_s8_s32; survey IMMA 0x237 (.ROW/.COL fixed at 73/74)")
            .var()
            .hide(74, 1, 1)
            .hide(86, 1, 1)
            .mf(75, 1, &[(0, "16816"), (1, "16832")])
            .mf(76, 2, &[(0, "U8"), (1, "S8")])
            .mf(78, 2, &[(0, "U8"), (1, "S8")])
            .flag(82, "SAT")
            .op(gpr(16).def().n(4))
            .op(gpr(24).reuse(0).sfx_fixed("ROW").n(2))
            .op(gpr(32).reuse(1).sfx_fixed("COL"))
            .op(gpr(64).n(4))
            .op(upreds(87).inv().opt(0)),
        hgmma(false),
        hgmma(true),
        qgmma(),
        form("WARPGROUP", 0x9c5)
            .ev("pyptx/fa_ws_pingpong_sm90a (wgmma.fence); tests/sass-probes/syncsfields.txt")
            .m("ARRIVE"),
        form("WARPGROUP", 0x9c5)
            .ev("pyptx/fa_ws_pingpong_sm90a (wgmma.wait_group); tests/sass-probes/syncsfields.txt (count [74:72], gsb [86:84])")
            .var()
            .no_wait()
            .m("DEPBAR")
            .m("LE")
            .hide(80, 1, 1)
            .hide(47, 1, 1)
            .op(enm(84, 3, &[(0, "gsb0")]))
            .op(uimm(72, 3)),
    ]
}
