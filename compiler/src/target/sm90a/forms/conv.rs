//! Forms: conversions (F2I, F2F, I2F, I2FP, F2FP, I2IP).
//!
//! Type fields: destination size [76:75] (0 = 8, 1 = 16, 2 = 32, 3 = 64 bits) with the
//! destination's signedness at 72 (F2I) and the source size [85:84] with its signedness at 74
//! (I2F); rounding [79:78]. Evidence: survey F2I 0x305/0x311, F2F 0x310, I2F 0x306/0x312/0x906,
//! I2FP 0x245/0xc45, F2FP 0x23e/0xc3e, I2IP 0x239 (`tests/sass-probes/survey.txt`).

use super::int::B;
use super::*;

/// F2I destination types, `signed | size << 1` with the sign at 72 and the size at [76:75].
const F2I_DST32: Names = &[
    (0, "U8"),
    (1, "S8"),
    (2, "U16"),
    (3, "S16"),
    (4, "U32"),
    (5, ""),
];
const F2I_DST64: Names = &[(6, "U64"), (7, "S64")];
const F2I_RND: Names = &[(0, ""), (1, "FLOOR"), (2, "CEIL"), (3, "TRUNC")];
const DST_REGS: &[(u32, u8)] = &[(6, 2), (7, 2)];

/// F2I: `wide` selects opcode 0x311 (a 64-bit side), `src64` an F64 source.
fn f2i(wide: bool, src64: bool, dst: Names) -> Form {
    let f = form("F2I", if wide { 0x311 } else { 0x305 })
        .ev("zluda/bar_red_and_pred, zluda/cvt_rzi, kernels/fp_math, kernels/saxpy_grid_stride; survey F2I 0x305/0x311")
        .var()
        .flag(80, "FTZ")
        .mf2(Field::split((72, 1), (75, 2)), dst);
    let f = if src64 {
        f.m("F64").hide(84, 3, 3)
    } else {
        f.hide(84, 3, 2)
    };
    f.mf(78, 2, F2I_RND)
        .flag(77, "NTZ")
        .op(gpr(16).def().nby(1, DST_REGS))
        .op(gpr(32).neg(63).abs(62).n(if src64 { 2 } else { 1 }))
}

/// F2F between fixed types: (dst name, dst size, src name, src size, opcode).
fn f2f(dst: &'static str, ds: u64, src: &'static str, ss: u64, code: u16) -> Form {
    let n = |s: u64| if s == 3 { 2 } else { 1 };
    form("F2F", code)
        .ev("zluda/cvt_f64_f32, zluda/cvt_f32_f64; survey F2F 0x310")
        .var()
        .flag(80, "FTZ")
        .m(dst)
        .m(src)
        .mf(78, 2, RND)
        .hide(75, 2, ds)
        .hide(84, 2, ss)
        .op(gpr(16).def().n(n(ds)))
        .op(gpr(32).neg(63).abs(62).n(n(ss)))
}

const I2F_SRC32: Names = &[
    (0, "U8"),
    (1, "S8"),
    (2, "U16"),
    (3, "S16"),
    (4, "U32"),
    (5, ""),
];

/// I2F with a 32-bit or narrower source (0x306/0x906/0xd06) or a 64-bit one (0x312).
fn i2f(b: B, src64: bool, dst64: bool, signed: bool) -> Form {
    let code = if src64 || dst64 {
        0x112 | b.form_bits()
    } else {
        0x106 | b.form_bits()
    };
    let mut f = form("I2F", code)
        .ev("zluda/rem, zluda/bar_red_and_pred, kernels/saxpy_grid_stride, kernels/cluster_inline_ptx; survey I2F 0x306/0x312/0x906/0xd06")
        .var();
    if b == B::U {
        f = f.hide(91, 1, 1);
    }
    if dst64 {
        f = f.m("F64").hide(75, 2, 3);
    } else {
        f = f.hide(75, 3, 2);
    }
    if src64 {
        f = f.mf(74, 1, &[(0, "U64"), (1, "S64")]).hide(84, 2, 3);
    } else if b == B::I {
        // The immediate form takes 32-bit sources only; `signed` picks S32 (a signed immediate).
        f = if signed {
            f.hide(74, 1, 1).hide(84, 2, 2)
        } else {
            f.m("U32").hide(84, 2, 2)
        };
    } else {
        f = f.mf2(Field::split((74, 1), (84, 2)), I2F_SRC32);
    }
    let src = match b {
        B::R => gpr(32).n(if src64 { 2 } else { 1 }),
        B::U => ugpr(32),
        _ if signed => simm(32, 32),
        _ => uimm(32, 32),
    };
    f.mf(78, 2, RND)
        .op(gpr(16).def().n(if dst64 { 2 } else { 1 }))
        .op(src)
}

fn i2fp(b: B) -> Form {
    let f = form("I2FP", 0x045 | b.form_bits())
        .ev("pyptx/fa_ws_pingpong_sm90a, probes/02_cluster_sregs/cluster_ctaid_x; survey I2FP 0x245/0xc45");
    let f = if b == B::U { f.hide(91, 1, 1) } else { f };
    f.m("F32")
        .mf(74, 1, &[(0, "U32"), (1, "S32")])
        .hide(75, 3, 2)
        .hide(84, 3, 2)
        .op(gpr(16).def())
        .op(match b {
            B::U => ugpr(32),
            _ => gpr(32).reuse(1),
        })
}

/// F2FP destination formats: bit 76 | bit 87 << 1.
const F2FP_DST: Names = &[(0, "F16"), (1, "BF16"), (2, "E5M2"), (3, "E4M3")];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pack {
    Ab,
    AbMergeC,
}

fn f2fp(b: B, p: Pack) -> Form {
    let f = form("F2FP", 0x03e | b.form_bits())
        .ev("pyptx/fa_ws_pingpong_sm90a, kernels/half_precision, zluda/cvt_e4m3; survey F2FP 0x23e/0xc3e");
    let f = if b == B::U { f.hide(91, 1, 1) } else { f };
    let f = f
        .flag(77, "SATFINITE")
        .flag(75, "RELU")
        .mf2(Field::split((76, 1), (87, 1)), F2FP_DST)
        .m("F32");
    let f = match p {
        Pack::Ab => f.m("PACK_AB").hide(64, 8, RZ_),
        Pack::AbMergeC => f.m("PACK_AB_MERGE_C").hide(78, 1, 1).hide(90, 1, 1),
    };
    let f = f.op(gpr(16).def()).op(gpr(24).reuse(0)).op(match b {
        B::U => ugpr(32),
        _ => gpr(32).reuse(1),
    });
    match p {
        Pack::Ab => f,
        Pack::AbMergeC => f.op(gpr(64).reuse(2).sfx(72, 1, &[(0, ""), (1, "H1")])),
    }
}

fn f2fp_unpack() -> Form {
    form("F2FP", 0x23e)
        .ev("zluda/cvt_e4m3_f16 family (F2FP.F16.E4M3.UNPACK_B); corpus words 0x020006ff / 0x020004ff")
        .m("F16")
        .mf(73, 2, &[(2, "E5M2"), (3, "E4M3")])
        .m("UNPACK_B")
        .hide(89, 1, 1)
        .hide(24, 8, RZ_)
        .hide(64, 8, RZ_)
        .op(gpr(16).def())
        .op(gpr(32).reuse(1))
}

fn i2ip() -> Form {
    form("I2IP", 0x239)
        .ev("zluda/cvt_pack; survey I2IP 0x239")
        .mf(75, 3, &[(0, "U8"), (2, "S8"), (4, "U16"), (6, "S16")])
        .m("S32")
        .flag(74, "SAT")
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(gpr(32).reuse(1))
        .op(gpr(64).reuse(2).sfx(72, 1, &[(0, ""), (1, "H1")]))
}

pub(super) fn forms() -> Vec<Form> {
    let mut v = vec![
        f2i(false, false, F2I_DST32),
        f2i(true, false, F2I_DST64),
        f2i(true, true, &[(4, "U32"), (5, ""), (6, "U64"), (7, "S64")]),
        f2f("F64", 3, "F32", 2, 0x310),
        f2f("F32", 2, "F64", 3, 0x310),
        f2f("F16", 1, "F32", 2, 0x304),
        f2f("F32", 2, "F16", 1, 0x304),
        // To bf16: size field [76:75] 0 and bit 77 set (nvdisasm rejects the word with bit 77
        // clear or bit 76 set); ptxas -g's `cvt.rn.bf16.f32` (tests/sass-probes/debugforms.txt).
        f2f("BF16", 0, "F32", 2, 0x304)
            .ev("zluda/uint_to_fp_bf16 (ptxas -g); tests/sass-probes/debugforms.txt")
            .hide(77, 1, 1),
        f2fp_unpack(),
        i2ip(),
    ];
    for b in [B::R, B::U] {
        v.push(i2f(b, false, false, false));
    }
    v.push(i2f(B::I, false, false, false));
    v.push(i2f(B::I, false, false, true));
    v.push(i2f(B::R, true, false, false));
    v.push(i2f(B::R, true, true, false));
    v.push(i2f(B::R, false, true, false));
    for b in [B::R, B::U] {
        v.push(i2fp(b));
        v.push(f2fp(b, Pack::Ab));
        v.push(f2fp(b, Pack::AbMergeC));
    }
    v
}
