//! Forms: floating point (FADD, FMUL, FFMA, FSETP, FSEL, FMNMX, MUFU, FCHK, FRND, DADD, DMUL,
//! DFMA, DSETP, HADD2, HMUL2, HFMA2, HFMA2.MMA, HSET2, HMNMX2).
//!
//! Source modifiers: A `-` 72, `|x|` 73; B at [39:32] `-` 63, `|x|` 62; C at [71:64] `-` 75,
//! `|x|` 74 (fp16 ALU: C `-` 84, `|x|` 83; swizzles A [75:74], B [61:60], C [82:81]).
//! Evidence: the bit-flip survey (`tests/sass-probes/survey.txt`) and the files in `.ev`.

use super::int::{B, aluform};
use super::*;

/// FTZ (bit 80) and FMZ (bit 76) are one field: both set prints INVALID3.
fn ftz_fmz() -> (Field, Names) {
    (
        Field::split((80, 1), (76, 1)),
        &[(0, ""), (1, "FTZ"), (2, "FMZ")],
    )
}

fn fa() -> OpSpec {
    gpr(24).reuse(0).neg(72).abs(73)
}

/// A float B source in the [39:32] slot (or its immediate/UR/cbank variants).
fn fb(b: B, fmt: FloatFmt) -> OpSpec {
    match b {
        B::R => gpr(32).reuse(1).neg(63).abs(62),
        B::I => fimm(32, 32, fmt),
        B::U => ugpr(32).neg(63).abs(62),
        B::C => cbank().neg(63).abs(62),
    }
}

/// FADD: its second source is encoded in the C slot when it is not a register.
fn fadd(b: B) -> Form {
    let (code, src) = match b {
        B::R => (0x221, gpr(32).reuse(2).neg(63).abs(62)),
        B::I => (0x421, fimm(32, 32, FloatFmt::F32)),
        B::U => (0xe21, ugpr(32).neg(63).abs(62)),
        B::C => (0x621, cbank().neg(63).abs(62)),
    };
    let f = form("FADD", code)
        .ev("pyptx/fa_ws_pingpong_sm90a, probes/04_dsmem_ldst/atom_add_f32; survey FADD 0x221/0x421/0xe21");
    let f = if b == B::U { f.hide(91, 1, 1) } else { f };
    f.flag(80, "FTZ")
        .mf(78, 2, RND)
        .flag(77, "SAT")
        .op(gpr(16).def())
        .op(fa())
        .op(src)
}

const FMUL_SCALE: Names = &[
    (1, "D8"),
    (2, "D4"),
    (3, "D2"),
    (4, ""),
    (5, "M2"),
    (6, "M4"),
    (7, "M8"),
];

fn fmul(b: B) -> Form {
    let (ff, fz) = ftz_fmz();
    aluform("FMUL", 0x020, b)
        .ev("pyptx/fa_ws_pingpong_sm90a; survey FMUL 0x220/0x820/0xc20")
        .mf2(ff, fz)
        .mf(84, 3, FMUL_SCALE)
        .mf(78, 2, RND)
        .flag(77, "SAT")
        .op(gpr(16).def())
        .op(fa())
        .op(fb(b, FloatFmt::F32))
}

/// FFMA/DFMA sources: which slots hold B and C.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fm {
    Rrr,
    Rir,
    Rur,
    Rri,
    Rru,
}

fn fma(name: &'static str, fam: u16, m: Fm, fmt: FloatFmt, n: u8) -> Form {
    let bits = match m {
        Fm::Rrr => 0x200,
        Fm::Rir => 0x800,
        Fm::Rur => 0xc00,
        Fm::Rri => 0x400,
        Fm::Rru => 0xe00,
    };
    let mut f = form(name, fam | bits).ev(if fam == 0x023 {
        "pyptx/fa_ws_pingpong_sm90a; survey FFMA 0x223/0x423/0x823/0xc23"
    } else {
        "zluda/rcp_f64; survey DFMA 0x22b/0x42b"
    });
    if matches!(m, Fm::Rur | Fm::Rru) {
        f = f.hide(91, 1, 1);
    }
    if fam == 0x023 {
        let (ff, fz) = ftz_fmz();
        f = f.mf2(ff, fz).mf(78, 2, RND).flag(77, "SAT");
    } else {
        f = f.mf(78, 2, RND);
    }
    f = f.op(gpr(16).def().n(n)).op(fa().n(n));
    let c64 = |slot: u8| gpr(64).reuse(slot).neg(75).abs(74).n(n);
    match m {
        Fm::Rrr => f.op(gpr(32).reuse(1).neg(63).abs(62).n(n)).op(c64(2)),
        Fm::Rir => f.op(fimm(32, 32, fmt)).op(c64(2)),
        Fm::Rur => f.op(ugpr(32).neg(63).abs(62).n(n)).op(c64(2)),
        Fm::Rri => f.op(c64(1)).op(fimm(32, 32, fmt)),
        Fm::Rru => f.op(c64(1)).op(ugpr(32).neg(63).abs(62).n(n)),
    }
}

fn fsetp(b: B) -> Form {
    aluform("FSETP", 0x00b, b)
        .ev("pyptx/fa_ws_pingpong_sm90a; survey FSETP 0x20b/0x80b")
        .mf(76, 4, FCMP)
        .flag(80, "FTZ")
        .mf(74, 2, BOP)
        .op(pred(81).def())
        .op(pred(84).def())
        .op(fa())
        .op(fb(b, FloatFmt::F32))
        .op(preds(87))
}

fn fsel(b: B) -> Form {
    aluform("FSEL", 0x008, b)
        .ev("pyptx/fa_ws_pingpong_sm90a; survey FSEL 0x208/0x808")
        .flag(80, "FTZ")
        .op(gpr(16).def())
        .op(fa())
        .op(fb(b, FloatFmt::F32))
        .op(preds(87))
}

fn fmnmx(b: B) -> Form {
    aluform("FMNMX", 0x009, b)
        .ev("pyptx/fa_ws_pingpong_sm90a; survey FMNMX 0x209/0x809")
        .flag(80, "FTZ")
        .flag(81, "NAN")
        .flag(82, "XORSIGN")
        .op(gpr(16).def())
        .op(fa())
        .op(fb(b, FloatFmt::F32))
        .op(preds(87))
}

const MUFU_OP: Names = &[
    (0, "COS"),
    (1, "SIN"),
    (2, "EX2"),
    (3, "LG2"),
    (4, "RCP"),
    (5, "RSQ"),
    (6, "RCP64H"),
    (7, "RSQ64H"),
    (8, "SQRT"),
    (9, "TANH"),
];

const MUFU_64H: Names = &[(6, "RCP64H"), (7, "RSQ64H")];
const MUFU_32: Names = &[
    (0, "COS"),
    (1, "SIN"),
    (2, "EX2"),
    (3, "LG2"),
    (4, "RCP"),
    (5, "RSQ"),
    (8, "SQRT"),
    (9, "TANH"),
];

/// MUFU: `half` adds the .F16/.BF16 field (not with RCP64H/RSQ64H); the immediate of RCP64H
/// and RSQ64H is the high half of a double.
fn mufu(b: B, ops: Names, half: bool) -> Form {
    let f = form("MUFU", 0x108 | b.form_bits())
        .ev("pyptx/fa_ws_pingpong_sm90a, zluda/div_ftz; survey MUFU 0x308/0x908")
        .var()
        .mf(74, 4, ops);
    let f = if half {
        f.mf(72, 2, &[(0, ""), (1, "F16"), (2, "BF16")])
    } else {
        f
    };
    let f = if b == B::U { f.hide(91, 1, 1) } else { f };
    let src = match b {
        B::R => gpr(32).neg(63).abs(62),
        _ if ops == MUFU_64H => fb(b, FloatFmt::F64Hi),
        _ => fb(b, FloatFmt::F32),
    };
    f.op(gpr(16).def()).op(src)
}

fn frnd() -> Form {
    form("FRND", 0x307)
        .ev("zluda/cvt_rni, zluda/cvt_rzi; survey FRND 0x307 (bits [77:75], [86:84] are the f32 types)")
        .var()
        .flag(80, "FTZ")
        .mf(78, 2, &[(0, ""), (1, "FLOOR"), (2, "CEIL"), (3, "TRUNC")])
        .hide(75, 3, 2)
        .hide(84, 3, 2)
        .op(gpr(16).def())
        .op(gpr(32).neg(63).abs(62))
}

fn dadd(b: B) -> Form {
    // The second source sits in the C slot ([71:64]) as a register, or at [63:32].
    let (code, src) = match b {
        B::R => (0x229, gpr(64).reuse(2).neg(75).abs(74).n(2)),
        B::I => (0x429, fimm(32, 32, FloatFmt::F64Hi)),
        B::U => (0xe29, ugpr(32).neg(63).abs(62).n(2)),
        B::C => (0x629, cbank().neg(63).abs(62)),
    };
    let f = form("DADD", code).ev("zluda/rsqrt, kernels/fp_math; survey DADD 0x229/0x429");
    let f = if b == B::U { f.hide(91, 1, 1) } else { f };
    f.var()
        .mf(78, 2, RND)
        .op(gpr(16).def().n(2))
        .op(fa().n(2))
        .op(src)
}

fn dmul(b: B) -> Form {
    let src = match b {
        B::R => gpr(32).reuse(1).neg(63).abs(62).n(2),
        B::I => fimm(32, 32, FloatFmt::F64Hi),
        B::U => ugpr(32).neg(63).abs(62).n(2),
        B::C => cbank().neg(63).abs(62),
    };
    aluform("DMUL", 0x028, b)
        .ev("zluda/rcp_f64; survey DMUL 0x228/0x828")
        .var()
        .mf(78, 2, RND)
        .op(gpr(16).def().n(2))
        .op(fa().n(2))
        .op(src)
}

fn dsetp(b: B) -> Form {
    let (code, src) = match b {
        B::R => (0x22a, gpr(32).neg(63).abs(62).n(2)),
        B::I => (0x42a, fimm(32, 32, FloatFmt::F64Hi)),
        B::U => (0xe2a, ugpr(32).neg(63).abs(62).n(2)),
        B::C => (0x62a, cbank().neg(63).abs(62)),
    };
    let f = form("DSETP", code).ev("zluda/rcp_f64; survey DSETP 0x22a/0x42a");
    let f = if b == B::U { f.hide(91, 1, 1) } else { f };
    f.var()
        .mf(76, 4, DCMP)
        .mf(74, 2, BOP)
        .op(pred(81).def())
        .op(pred(84).def())
        .op(fa().n(2))
        .op(src)
        .op(preds(87))
}

/// DSETP's comparison names: as FSETP's, but 0 is MIN and 15 is MAX.
const DCMP: Names = &[
    (0, "MIN"),
    (1, "LT"),
    (2, "EQ"),
    (3, "LE"),
    (4, "GT"),
    (5, "NE"),
    (6, "GE"),
    (7, "NUM"),
    (8, "NAN"),
    (9, "LTU"),
    (10, "EQU"),
    (11, "LEU"),
    (12, "GTU"),
    (13, "NEU"),
    (14, "GEU"),
    (15, "MAX"),
];

const SWZ: Names = &[(0, ""), (2, "H0_H0"), (3, "H1_H1")];
const SWZ_B: Names = &[(0, ""), (1, "F32"), (2, "H0_H0"), (3, "H1_H1")];

fn ha() -> OpSpec {
    gpr(24).reuse(0).neg(72).abs(73).sfx(74, 2, SWZ)
}
fn hb() -> OpSpec {
    gpr(32).reuse(1).neg(63).abs(62).sfx(60, 2, SWZ_B)
}

/// F32 (78) and BF16_V2 (85) are one field: both set is invalid.
fn f32_bf16() -> (Field, Names) {
    (
        Field::split((78, 1), (85, 1)),
        &[(0, ""), (1, "F32"), (2, "BF16_V2")],
    )
}

/// HADD2 (0x230) and HMUL2 (0x232). HADD2.F32 (F32 output, bit 78) is a form of its own: its A
/// has no `|x|` (bit 73 is ignored) and no reuse slot (kernels/half_precision; survey HADD2
/// 0x230; tests/sass-probes/ptx/f16 shows `HADD2 R5, -|R5|, ...` without .F32).
fn hadd2(name: &'static str, fam: u16, f32: bool) -> Form {
    // HADD2's second source uses reuse slot 2 (kernels/half_precision: `R0.reuse.H0_H0` with
    // control reuse bit 124), like FADD's.
    let b = if fam == 0x230 {
        OpSpec {
            reuse: Some(2),
            ..hb_noswzf32()
        }
    } else {
        gpr(32).reuse(1).neg(63).abs(62).sfx(60, 2, SWZ)
    };
    let f = form(name, fam).ev(if fam == 0x230 {
        "kernels/half_precision, tests/sass-probes/ptx/f16; survey HADD2 0x230"
    } else {
        "tests/sass-probes/ptx/f16 (mul.f16x2); layout shared with HADD2 (survey HADD2 0x230)"
    });
    let f = if f32 {
        f.m("F32").hide(78, 1, 1)
    } else {
        f.flag(85, "BF16_V2")
    };
    let a = if f32 {
        gpr(24).neg(72).sfx(74, 2, SWZ)
    } else {
        ha()
    };
    f.flag(80, "FTZ")
        .flag(77, "SAT")
        .op(gpr(16).def())
        .op(a)
        .op(b)
}

fn hfma2() -> Form {
    let (ff, fz) = ftz_fmz();
    let (tf, tn) = f32_bf16();
    form("HFMA2", 0x231)
        .ev("kernels/half_precision; survey HFMA2 0x231")
        .mf2(tf, tn)
        .mf2(ff, fz)
        .flag(77, "SAT")
        .op(gpr(16).def())
        .op(ha())
        .op(hb())
        .op(gpr(64).reuse(2).neg(84).abs(83).sfx(81, 2, SWZ))
}

/// HFMA2.MMA with the immediate pair in the B slot ([63:48], [47:32]) and C at [71:64].
fn hfma2_mma_bimm(fmt: FloatFmt) -> Form {
    let (ff, fz) = ftz_fmz();
    let f = form("HFMA2", 0x835)
        .ev("tests/sass-probes/ptx/f16 (fma.rn.f16x2 with a constant 1.0 pair)")
        .m("MMA");
    let f = if fmt == FloatFmt::BF16 {
        f.m("BF16_V2").hide(85, 1, 1)
    } else {
        f
    };
    f.mf2(ff, fz)
        .flag(77, "SAT")
        .op(gpr(16).def())
        .op(gpr(24).reuse(0).neg(72).abs(73))
        .op(fimm(48, 16, fmt))
        .op(fimm(32, 16, fmt))
        .op(gpr(64).reuse(2).neg(84).abs(83))
}

fn hsetp2() -> Form {
    form("HSETP2", 0x234)
        .ev("tests/sass-probes/ptx/f16 (setp.lt.f16x2); NAK's layout (bf16 65, set op [70:69], H_AND 71) checked by the property test")
        .mf(64, 2, &[(0, ""), (2, "BF16_V2")])
        .mf(76, 4, FCMP)
        .flag(71, "H_AND")
        .flag(80, "FTZ")
        .mf(69, 2, BOP)
        .op(pred(81).def())
        .op(pred(84).def())
        .op(ha())
        .op(hb_noswzf32())
        .op(preds(87))
}

fn hfma2_mma(imm: Option<FloatFmt>) -> Form {
    let (ff, fz) = ftz_fmz();
    let f = match imm {
        None => form("HFMA2", 0x235).ev("zluda/fma_bf16x2; survey HFMA2 0x235"),
        Some(_) => form("HFMA2", 0x435)
            .ev("pyptx/mbarrier_full (HFMA2.MMA R0, -RZ, RZ, 0, 6.1e-05 is ptxas's MOV of a constant); survey HFMA2 0x435"),
    };
    let f = f.m("MMA");
    let f = match imm {
        Some(FloatFmt::BF16) => f.m("BF16_V2").hide(85, 1, 1),
        Some(_) => f,
        None => f.flag(85, "BF16_V2"),
    };
    let f = f
        .mf2(ff, fz)
        .flag(77, "SAT")
        .op(gpr(16).def())
        .op(gpr(24).reuse(0).neg(72).abs(73));
    match imm {
        None => f
            .op(gpr(32).reuse(1).neg(63).abs(62))
            .op(gpr(64).reuse(2).neg(84).abs(83)),
        Some(fmt) => f
            .op(gpr(64).reuse(1).neg(84).abs(83))
            .op(fimm(48, 16, fmt))
            .op(fimm(32, 16, fmt)),
    }
}

fn hb_noswzf32() -> OpSpec {
    gpr(32).reuse(1).neg(63).abs(62).sfx(60, 2, SWZ)
}

fn hb_noreuse() -> OpSpec {
    gpr(32).neg(63).abs(62).sfx(60, 2, SWZ)
}

fn hset2() -> Form {
    form("HSET2", 0x233)
        .ev("zluda/set_f16, zluda/set_bf16; survey HSET2 0x233")
        .mf(64, 2, &[(0, ""), (2, "BF16_V2")])
        .flag(71, "BF")
        .mf(76, 4, FCMP)
        .flag(80, "FTZ")
        .mf(69, 2, BOP)
        .op(gpr(16).def())
        .op(ha())
        .op(hb_noreuse())
        .op(preds(87))
}

fn hmnmx2() -> Form {
    form("HMNMX2", 0x240)
        .ev("zluda/fmax, zluda/fmin; survey HMNMX2 0x240")
        .flag(85, "BF16_V2")
        .flag(80, "FTZ")
        .flag(81, "NAN")
        .flag(82, "XORSIGN")
        .op(gpr(16).def())
        .op(ha())
        .op(hb_noswzf32())
        .op(preds(87))
}

pub(super) fn forms() -> Vec<Form> {
    let mut v = Vec::new();
    for b in [B::R, B::I, B::U, B::C] {
        v.push(fadd(b));
        v.push(fmul(b));
        v.push(fsetp(b));
        v.push(fsel(b));
        v.push(fmnmx(b));
        v.push(dadd(b));
        v.push(dmul(b));
        v.push(dsetp(b));
    }
    for m in [Fm::Rrr, Fm::Rir, Fm::Rur, Fm::Rri, Fm::Rru] {
        v.push(fma("FFMA", 0x023, m, FloatFmt::F32, 1));
        v.push(fma("DFMA", 0x02b, m, FloatFmt::F64Hi, 2));
    }
    let _ = MUFU_OP;
    for b in [B::R, B::U] {
        v.push(mufu(b, MUFU_32, true));
        v.push(mufu(b, MUFU_64H, false));
    }
    v.push(mufu(B::I, MUFU_32, false));
    v.push(mufu(B::I, MUFU_64H, false));
    v.push(
        form("FCHK", 0x302)
            .ev("zluda/div_ftz; survey FCHK 0x302")
            .var()
            .op(pred(81).def())
            .op(gpr(24).neg(72).abs(73))
            .op(gpr(32).neg(63).abs(62)),
    );
    v.push(frnd());
    v.push(hadd2("HADD2", 0x230, false));
    v.push(hadd2("HADD2", 0x230, true));
    v.push(hadd2("HMUL2", 0x232, false));
    v.push(hfma2());
    v.push(hfma2_mma(None));
    v.push(hfma2_mma(Some(FloatFmt::F16)));
    v.push(hfma2_mma(Some(FloatFmt::BF16)));
    v.push(hset2());
    v.push(hsetp2());
    v.push(hfma2_mma_bimm(FloatFmt::F16));
    v.push(hfma2_mma_bimm(FloatFmt::BF16));
    v.push(hmnmx2());
    v
}
