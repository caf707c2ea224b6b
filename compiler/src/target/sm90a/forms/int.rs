//! Forms: integer and logic (IADD3, IMAD, LEA, LOP3, PLOP3, SHF, PRMT, SEL, ISETP, IABS, POPC,
//! FLO, BREV, SGXT, BMSK, VIADD, VIMNMX, MOV, IDP).
//!
//! The common ALU layout (bits [11:9] pick where the second and third sources come from):
//! destination [23:16], A [31:24] (reuse slot 0), B [39:32] (slot 1) or a 32-bit immediate
//! [63:32] or a UR [37:32] (with bit 91 set) or `c[bank][off]` (bank [58:54], offset [53:38]),
//! C [71:64] (slot 2). When C is the immediate/UR (forms 2 and 7), B moves to [71:64].
//! Evidence for every form here: the bit-flip survey (`tests/sass-probes/survey.txt`, one section
//! per mnemonic and 12-bit opcode) plus the probe/corpus file named in `.ev`.

use super::*;

/// Where the B source of an ALU form comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum B {
    /// Register at [39:32]; form 1.
    R,
    /// 32-bit immediate at [63:32]; form 4.
    I,
    /// Uniform register at [37:32], bit 91 set; form 6.
    U,
    /// Constant bank; form 5.
    C,
}

impl B {
    pub(crate) fn form_bits(self) -> u16 {
        match self {
            B::R => 0x200,
            B::I => 0x800,
            B::U => 0xc00,
            B::C => 0xa00,
        }
    }
}

/// PLOP3's (and UPLOP3's) first lookup table, split: [66:64] | [76:72] << 3.
pub(crate) fn plop3_lut0() -> OpSpec {
    OpSpec {
        spec: Spec::Imm {
            f: Field::split((64, 3), (72, 5)),
            fmt: ImmFmt::UHex,
        },
        ..uimm(64, 3)
    }
}

/// The B operand for a variant; `imm` builds the immediate slot, `neg`/`abs` are the modifier
/// bits of register/UR/cbank sources (63/62 in the common layout).
pub(crate) fn bsrc(b: B, imm: OpSpec, neg: Option<u8>, abs: Option<u8>) -> OpSpec {
    let mut o = match b {
        B::R => gpr(32).reuse(1),
        B::I => return imm,
        B::U => ugpr(32),
        B::C => cbank(),
    };
    o.neg = neg;
    o.abs = abs;
    o
}

/// A form with the B-variant's opcode bits and bit 91 for UR sources.
pub(crate) fn aluform(name: &'static str, fam: u16, b: B) -> Form {
    let f = form(name, fam | b.form_bits());
    if b == B::U { f.hide(91, 1, 1) } else { f }
}

const SIGNED_U32: Names = &[(0, "U32"), (1, "")];

fn iadd3(b: B, x: bool) -> Form {
    let f = aluform("IADD3", 0x010, b)
        .ev("pyptx/fa_ws_pingpong_sm90a, zluda/add; survey IADD3 0x210/0x810/0xc10");
    let (a, bb, c) = if x {
        (
            gpr(24).reuse(0).not(72),
            bsrc(b, simm(32, 32), Some(63), None),
            gpr(64).reuse(2).not(75),
        )
    } else {
        (
            gpr(24).reuse(0).neg(72),
            bsrc(b, simm(32, 32), Some(63), None),
            gpr(64).reuse(2).neg(75),
        )
    };
    let bb = if x && b != B::I {
        OpSpec {
            neg: None,
            not: Some(63),
            ..bb
        }
    } else {
        bb
    };
    let f = if x { f.m("X").hide(74, 1, 1) } else { f };
    let f = f
        .op(gpr(16).def())
        .op(pred(81).def().opt(PT7))
        .op(pred(84).def().opt(PT7))
        .op(a)
        .op(bb)
        .op(c);
    if x {
        f.op(preds(87)).op(preds(77))
    } else {
        f.hide(77, 4, NOT_PT).hide(87, 4, NOT_PT)
    }
}

/// IMAD-family sources: which slots hold B and C.
#[derive(Clone, Copy, PartialEq, Eq)]
enum M {
    /// B reg [39:32], C reg [71:64]: form 1.
    Rrr,
    /// B imm [63:32]: form 4.
    Rir,
    /// B UR [37:32]: form 6.
    Rur,
    /// B reg [71:64], C imm [63:32]: form 2.
    Rri,
    /// B reg [71:64], C UR [37:32]: form 7.
    Rru,
}

/// IMAD, IMAD.WIDE, IMAD.HI (fam 0x24, 0x25, 0x27), optionally `.X`.
fn imad(fam: u16, m: M, x: bool) -> Form {
    let bits = match m {
        M::Rrr => 0x200,
        M::Rir => 0x800,
        M::Rur => 0xc00,
        M::Rri => 0x400,
        M::Rru => 0xe00,
    };
    let wide = fam == 0x25;
    let hi = fam == 0x27;
    let mut f = form("IMAD", fam | bits).ev(match fam {
        0x24 => "pyptx/matmul_tma_v33_sm90a (IMAD.MOV.U32, IMAD.SHL.U32, IMAD.X); alias rules: tests/sass-probes/imad_alias.txt; survey IMAD 0x224/0x424/0x824/0xc24/0xe24",
        0x25 => "zluda/mad_wide, pyptx/matmul_tma_v34_sm90a; survey IMAD 0x225/0x825/0xc25",
        _ => "zluda/bar_red_and_pred, pyptx/fa_ws_pingpong_sm90a; survey IMAD 0x227/0x827",
    });
    if m == M::Rur || m == M::Rru {
        f = f.hide(91, 1, 1);
    }
    if wide {
        f = f.m("WIDE");
    }
    if hi {
        f = f.m("HI");
    }
    if fam == 0x24 && !x {
        // nvdisasm's aliases (tests/sass-probes/imad_alias.txt): the product is zero → MOV;
        // B = 1 → IADD; B a power of two and C = RZ → SHL. Only with a register or immediate C.
        match m {
            M::Rrr | M::Rri => {
                f = f.alias("MOV", AliasCond::MovRr);
            }
            M::Rir => {
                f = f
                    .alias("MOV", AliasCond::MovRi)
                    .alias("IADD", AliasCond::Iadd)
                    .alias("SHL", AliasCond::Shl);
            }
            _ => {}
        }
    }
    f = f.mf(73, 1, SIGNED_U32);
    if x {
        f = f.m("X").hide(74, 1, 1);
    }
    let d = gpr(16).def().n(if wide { 2 } else { 1 });
    f = f.op(d);
    if wide || hi {
        f = f.op(pred(81).def().opt(PT7));
    } else {
        f = f.hide(81, 3, 7);
    }
    let c_reg = |slot: u8| {
        let o = gpr(64).reuse(slot).n(if wide { 2 } else { 1 });
        if x { o.not(75) } else { o.neg(75) }
    };
    f = f.op(gpr(24).reuse(0));
    match m {
        M::Rrr => f = f.op(gpr(32).reuse(1)).op(c_reg(2)),
        M::Rir => f = f.op(simm(32, 32)).op(c_reg(2)),
        M::Rur => f = f.op(ugpr(32)).op(c_reg(2)),
        M::Rri => f = f.op(gpr(64).reuse(1)).op(simm(32, 32)),
        M::Rru => {
            let c = ugpr(32);
            f = f
                .op(gpr(64).reuse(1))
                .op(if x { c.not(63) } else { c.neg(63) })
        }
    }
    if x {
        f.op(preds(87))
    } else {
        f.hide(87, 4, NOT_PT)
    }
}

/// LEA / LEA.HI / LEA.HI.SX32, with or without .X.
fn lea(b: B, hi: bool, sx32: bool, x: bool) -> Form {
    let mut f = aluform("LEA", 0x011, b).ev(
        "pyptx/fa_ws_pingpong_sm90a (LEA, LEA.HI, LEA.HI.X.SX32), zluda/div_noftz; survey LEA 0x211/0x811/0xc11",
    );
    if hi {
        f = f.m("HI").hide(80, 1, 1);
    }
    if x {
        f = f.m("X").hide(74, 1, 1);
    }
    if sx32 {
        f = f.m("SX32").hide(73, 1, 1);
    }
    let a = gpr(24).reuse(0);
    let a = if x { a.not(72) } else { a.neg(72) };
    let bb = match b {
        B::I => uimm(32, 32),
        _ => {
            let o = bsrc(b, uimm(32, 32), None, None);
            if x { o.not(63) } else { o.neg(63) }
        }
    };
    f = f.op(gpr(16).def()).op(pred(81).def().opt(PT7)).op(a).op(bb);
    if hi && !sx32 {
        f = f.op(gpr(64).reuse(2));
    } else {
        f = f.hide(64, 8, RZ_);
    }
    f = f.op(uimm(75, 5));
    if x {
        f.op(preds(87))
    } else {
        f.hide(87, 4, NOT_PT)
    }
}

fn lop3(b: B) -> Form {
    aluform("LOP3", 0x012, b)
        .ev("pyptx/fa_ws_pingpong_sm90a, pyptx/matmul_tma_v33_sm90a; survey LOP3 0x212/0x812/0xc12")
        .m("LUT")
        .flag(80, "PAND")
        .op(pred(81).def().opt(PT7))
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, uimm(32, 32), None, None))
        .op(gpr(64).reuse(2))
        .op(uimm(72, 8))
        .op(preds(87))
}

const SHF_TYPE: Names = &[(0, "S64"), (1, "U64"), (2, "S32"), (3, "U32")];

fn shf(b: B) -> Form {
    aluform("SHF", 0x019, b)
        .ev("zluda/bfe, zluda/vshr_clamp, pyptx/fa_ws_pingpong_sm90a; survey SHF 0x219/0x819/0xc19")
        .mf(76, 1, &[(0, "L"), (1, "R")])
        .flag(75, "W")
        .mf(73, 2, SHF_TYPE)
        .flag(80, "HI")
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, uimm(32, 32), None, None))
        .op(gpr(64).reuse(2))
}

const PRMT_MODE: Names = &[
    (0, ""),
    (1, "F4E"),
    (2, "B4E"),
    (3, "RC8"),
    (4, "ECL"),
    (5, "ECR"),
    (6, "RC16"),
];

fn prmt(b: B) -> Form {
    aluform("PRMT", 0x016, b)
        .ev("zluda/prmt_slow, zluda/bfe, probes/03_mapa_getctarank; survey PRMT 0x216/0x816")
        .mf(72, 3, PRMT_MODE)
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, uimm(32, 32), None, None))
        .op(gpr(64).reuse(2))
}

fn sel(b: B) -> Form {
    aluform("SEL", 0x007, b)
        .ev("zluda/cvt_sat_s_u, pyptx/fa_ws_pingpong_sm90a; survey SEL 0x207/0x807")
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, uimm(32, 32), None, None))
        .op(preds(87))
}

fn isetp(b: B, ex: bool) -> Form {
    let mut f = aluform("ISETP", 0x00c, b)
        .ev("pyptx/fa_ws_pingpong_sm90a (.EX: zluda/setp_gt_s64 family); survey ISETP 0x20c/0x80c/0xc0c")
        .mf(76, 3, ICMP)
        .mf(73, 1, SIGNED_U32)
        .mf(74, 2, BOP);
    if ex {
        f = f.m("EX").hide(72, 1, 1);
    }
    f = f
        .op(pred(81).def())
        .op(pred(84).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, simm(32, 32), None, None))
        .op(preds(87));
    if ex {
        f.op(preds(68))
    } else {
        f.hide(68, 4, PT7)
    }
}

/// A one-source ALU form: destination, then B (register/UR/imm) with a `~` bit at 63.
fn unary(name: &'static str, fam: u16, b: B, not: bool, ev: &'static str) -> Form {
    let src = bsrc(b, uimm(32, 32), None, None);
    let src = if not && b != B::I { src.not(63) } else { src };
    aluform(name, fam, b).ev(ev).op(gpr(16).def()).op(src)
}

fn flo(b: B) -> Form {
    let src = OpSpec {
        reuse: None,
        ..bsrc(b, uimm(32, 32), None, None)
    };
    let src = if b != B::I { src.not(63) } else { src };
    // Opcode family 0x100: forms 0x300 (R), 0xd00 (UR), 0x900 (imm).
    form("FLO", 0x100 | b.form_bits())
        .ev("zluda/bfind_shiftamt, zluda/atom_add; survey FLO 0x300/0xd00")
        .var()
        .mf(73, 1, SIGNED_U32)
        .flag(74, "SH")
        .op(gpr(16).def())
        .op(pred(81).def().opt(PT7))
        .op(src)
        .hide(91, 1, u64::from(b == B::U))
}

fn sgxt(b: B) -> Form {
    aluform("SGXT", 0x01a, b)
        .ev("zluda/bfe, pyptx/matmul_tma_v33_sm90a; survey SGXT 0x21a/0x81a")
        .flag(75, "W")
        .mf(73, 1, SIGNED_U32)
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, uimm(32, 32), None, None))
}

fn bmsk(b: B) -> Form {
    aluform("BMSK", 0x01b, b)
        .ev("zluda/bfi; survey BMSK 0x21b")
        .flag(75, "W")
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, uimm(32, 32), None, None))
}

fn viadd(b: B) -> Form {
    aluform("VIADD", 0x036, b)
        .ev("pyptx/matmul_tma_v33_sm90a, pyptx/matmul_tma_v35_sm90a; survey VIADD 0x836/0xc36")
        .flag(73, "16x2")
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, uimm(32, 32), Some(63), None))
}

const VIMNMX_TYPE: Names = &[(0, "U32"), (1, ""), (2, "U16x2"), (3, "S16x2")];

fn vimnmx(b: B) -> Form {
    aluform("VIMNMX", 0x048, b)
        .ev("zluda/max, kernels/device_calls, probes/02_cluster_sregs/x_aggr_smem_size; survey VIMNMX 0x248/0x848/0xc48")
        .mf(72, 2, VIMNMX_TYPE)
        .flag(76, "RELU")
        .hide(81, 6, 0x3f)
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, simm(32, 32), None, None))
        .op(preds(87))
}

fn mov(b: B) -> Form {
    aluform("MOV", 0x002, b)
        .ev("pyptx/fa_ws_pingpong_sm90a; survey MOV 0x202/0x802/0xc02 (bits [75:72] = lane mask, printed unless 0xf)")
        .op(gpr(16).def())
        .op(bsrc(b, uimm(32, 32), None, None))
        .op(uimm(72, 4).opt(0xf))
}

const U8S8: Names = &[(0, "U8"), (1, "S8")];
const U16S16: Names = &[(0, "U16"), (1, "S16")];

fn idp(b: B, two: bool) -> Form {
    let f = aluform("IDP", 0x026, b).ev("zluda/dp2a, zluda/dp4a; survey IDP 0x226");
    let f = if two {
        f.m("2A")
            .hide(76, 1, 1)
            .mf(77, 1, &[(0, "LO"), (1, "HI")])
            .mf(73, 1, U16S16)
    } else {
        f.m("4A").mf(73, 1, U8S8)
    };
    f.mf(74, 1, U8S8)
        .op(gpr(16).def())
        .op(gpr(24).reuse(0))
        .op(bsrc(b, uimm(32, 32), None, None))
        .op(gpr(64).reuse(2).neg(75))
}

const ALL_B: [B; 3] = [B::R, B::I, B::U];

pub(super) fn forms() -> Vec<Form> {
    let mut v = Vec::new();
    for b in [B::R, B::I, B::U, B::C] {
        v.push(iadd3(b, false));
        v.push(iadd3(b, true));
    }
    for fam in [0x24, 0x25, 0x27] {
        for m in [M::Rrr, M::Rir, M::Rur, M::Rri, M::Rru] {
            // IMAD.WIDE/IMAD.HI have no immediate-C form (survey: 0x425/0x427 do not decode).
            if m == M::Rri && fam != 0x24 {
                continue;
            }
            v.push(imad(fam, m, false));
            v.push(imad(fam, m, true));
        }
    }
    for b in ALL_B {
        for (hi, sx) in [(false, false), (true, false), (true, true)] {
            v.push(lea(b, hi, sx, false));
            v.push(lea(b, hi, sx, true));
        }
        v.push(lop3(b));
        v.push(shf(b));
        v.push(prmt(b));
        v.push(sel(b));
        v.push(isetp(b, false));
        v.push(isetp(b, true));
        v.push(sgxt(b));
        v.push(bmsk(b));
        v.push(vimnmx(b));
        v.push(mov(b));
        if b != B::I {
            v.push(idp(b, false));
            v.push(idp(b, true));
        }
    }
    v.push(lop3(B::C));
    v.push(isetp(B::C, false));
    for b in [B::R, B::U] {
        v.push(unary(
            "IABS",
            0x013,
            b,
            false,
            "zluda/abs; survey IABS 0x213",
        ));
        v.push(
            form("POPC", 0x109 | b.form_bits())
                .ev("zluda/atom_add; survey POPC 0x309")
                .var()
                .hide(91, 1, u64::from(b == B::U))
                .op(gpr(16).def())
                .op(OpSpec {
                    reuse: None,
                    ..bsrc(b, uimm(32, 32), None, None).not(63)
                }),
        );
        v.push(
            form("BREV", 0x101 | b.form_bits())
                .ev("zluda/brev; survey BREV 0x301")
                .var()
                .hide(91, 1, u64::from(b == B::U))
                .op(gpr(16).def())
                .op(OpSpec {
                    reuse: None,
                    ..bsrc(b, uimm(32, 32), None, None)
                }),
        );
        v.push(flo(b));
    }
    for b in [B::I, B::U, B::R] {
        v.push(viadd(b));
    }
    // PLOP3 with predicate sources: A [89:87]/90, B [79:77]/80, C [70:68]/71 (bit 67: C is a
    // uniform predicate); LUT0 = [66:64] | [76:72] << 3, LUT1 = [23:16].
    for uc in [false, true] {
        let c = if uc { upreds(68) } else { preds(68) };
        v.push(
            form("PLOP3", 0x81c)
                .ev("pyptx/fa_ws_pingpong_sm90a, probes/16_tma_elect; survey PLOP3 0x81c")
                .m("LUT")
                .hide(67, 1, u64::from(uc))
                .op(pred(81).def())
                .op(pred(84).def())
                .op(preds(87))
                .op(preds(77))
                .op(c)
                .op(plop3_lut0())
                .op(uimm(16, 8)),
        );
    }
    // PLOP3 on the sign bits of registers (opcode 0x21f).
    v.push(
        form("PLOP3", 0x21f)
            .ev("zluda/add_s32_sat; survey PLOP3 0x21f")
            .m("LUT")
            .op(pred(81).def())
            .op(pred(84).def())
            .op(gpr(24).reuse(0).sfx_fixed("SIGN"))
            .op(gpr(32).reuse(1).sfx_fixed("SIGN"))
            .op(gpr(64).reuse(2).sfx_fixed("SIGN"))
            .op(uimm(72, 8))
            .op(uimm(16, 8)),
    );
    v
}
