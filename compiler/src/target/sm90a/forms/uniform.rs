//! Forms: the uniform datapath (UMOV, ULDC, S2UR, UIADD3, UIMAD, ULEA, UPRMT, ULOP3, USHF,
//! UISETP, USEL, UPLOP3, UFLO, UPOPC, USGXT, VOTEU, R2UR, UP2UR, UR2UP, USETMAXREG).
//!
//! Uniform ALU forms use the vector layout with uniform registers (6-bit numbers, URZ = 63),
//! uniform predicates, and bit 91 set. Evidence: the bit-flip survey sections of each opcode
//! (`tests/sass-probes/survey.txt`) and the files in `.ev`.

use super::*;

/// Uniform B sources: register or immediate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum U {
    R,
    I,
}

fn uform(name: &'static str, fam: u16, u: U) -> Form {
    form(name, fam | if u == U::R { 0x200 } else { 0x800 })
        .hide(91, 1, 1)
        .uguard()
}

fn ub(u: U, imm: OpSpec) -> OpSpec {
    match u {
        U::R => ugpr(32),
        U::I => imm,
    }
}

const SIGNED_U32: Names = &[(0, "U32"), (1, "")];

fn uiadd3(u: U, x: bool, wide: bool) -> Form {
    let f = uform("UIADD3", if wide { 0x097 } else { 0x090 }, u)
        .ev("pyptx/fa_ws_pingpong_sm90a, pyptx/matmul_tma_v33_sm90a (.64); survey UIADD3 0x290/0x297/0x890/0x897");
    let n = if wide { 2 } else { 1 };
    let f = if wide { f.m("64") } else { f };
    let f = if x { f.m("X").hide(74, 1, 1) } else { f };
    let (a, b, c) = if x {
        (
            ugpr(24).not(72).n(n),
            match u {
                U::R => ugpr(32).not(63).n(n),
                U::I => simm(32, 32),
            },
            ugpr(64).not(75).n(n),
        )
    } else {
        (
            ugpr(24).neg(72).n(n),
            match u {
                U::R => ugpr(32).neg(63).n(n),
                U::I => simm(32, 32),
            },
            ugpr(64).neg(75).n(n),
        )
    };
    let f = f
        .op(ugpr(16).def().n(n))
        .op(upred(81).def().opt(PT7))
        .op(upred(84).def().opt(PT7))
        .op(a)
        .op(b)
        .op(c);
    if x {
        f.op(upreds(87)).op(upreds(77))
    } else {
        f.hide(77, 4, NOT_PT).hide(87, 4, NOT_PT)
    }
}

fn uimad(u: U, wide: bool) -> Form {
    let f = uform("UIMAD", if wide { 0x0a5 } else { 0x0a4 }, u)
        .ev("pyptx/fa_ws_pingpong_sm90a, pyptx/matmul_tma_v33_sm90a, probes/04_dsmem_ldst/atom_add_u64; survey UIMAD 0x2a4/0x8a4/0x2a5/0x8a5");
    let f = if wide { f.m("WIDE") } else { f };
    let n = if wide { 2 } else { 1 };
    let f = f.mf(73, 1, SIGNED_U32).op(ugpr(16).def().n(n));
    let f = if wide {
        f.op(upred(81).def().opt(PT7))
    } else {
        f.hide(81, 3, 7)
    };
    f.op(ugpr(24))
        .op(ub(u, simm(32, 32)))
        .op(ugpr(64).neg(75).n(n))
        .hide(87, 4, NOT_PT)
}

fn ulea(hi: bool, sx32: bool, x: bool) -> Form {
    let mut f = uform("ULEA", 0x091, U::R)
        .ev("pyptx/fa_ws_pingpong_sm90a, probes/10_shared_addr; survey ULEA 0x291");
    if hi {
        f = f.m("HI").hide(80, 1, 1);
    }
    if x {
        f = f.m("X").hide(74, 1, 1);
    }
    if sx32 {
        f = f.m("SX32").hide(73, 1, 1);
    }
    let (a, b) = if x {
        (ugpr(24).not(72), ugpr(32).not(63))
    } else {
        (ugpr(24).neg(72), ugpr(32).neg(63))
    };
    f = f
        .op(ugpr(16).def())
        .op(upred(81).def().opt(PT7))
        .op(a)
        .op(b);
    if hi && !sx32 {
        f = f.op(ugpr(64));
    } else {
        f = f.hide(64, 8, URZ_);
    }
    f = f.op(uimm(75, 5));
    if x {
        f.op(upreds(87))
    } else {
        f.hide(87, 4, NOT_PT)
    }
}

fn uprmt(u: U) -> Form {
    uform("UPRMT", 0x096, u)
        .ev("zluda/vshr_clamp, probes/09_mbarrier/arrive_remote; survey UPRMT 0x896")
        .op(ugpr(16).def())
        .op(ugpr(24))
        .op(ub(u, uimm(32, 32)))
        .op(ugpr(64))
}

fn ulop3(u: U) -> Form {
    uform("ULOP3", 0x092, u)
        .ev("pyptx/fa_ws_pingpong_sm90a, probes/05_fences/fence_proxy_alias; survey ULOP3 0x292/0x892")
        .m("LUT")
        .flag(80, "PAND")
        .op(upred(81).def().opt(PT7))
        .op(ugpr(16).def())
        .op(ugpr(24))
        .op(ub(u, uimm(32, 32)))
        .op(ugpr(64))
        .op(uimm(72, 8))
        .op(upreds(87))
}

const SHF_TYPE: Names = &[(0, "S64"), (1, "U64"), (2, "S32"), (3, "U32")];

fn ushf(u: U) -> Form {
    uform("USHF", 0x099, u)
        .ev("pyptx/fa_ws_pingpong_sm90a; survey USHF 0x899")
        .mf(76, 1, &[(0, "L"), (1, "R")])
        .flag(75, "W")
        .mf(73, 2, SHF_TYPE)
        .flag(80, "HI")
        .op(ugpr(16).def())
        .op(ugpr(24))
        .op(ub(u, uimm(32, 32)))
        .op(ugpr(64))
}

fn uisetp(u: U, ex: bool) -> Form {
    let mut f = uform("UISETP", 0x08c, u)
        .ev("pyptx/fa_ws_pingpong_sm90a; survey UISETP 0x28c/0x88c")
        .mf(76, 3, ICMP)
        .mf(73, 1, SIGNED_U32)
        .mf(74, 2, BOP);
    if ex {
        f = f.m("EX").hide(72, 1, 1);
    }
    f = f
        .op(upred(81).def())
        .op(upred(84).def())
        .op(ugpr(24))
        .op(ub(u, simm(32, 32)))
        .op(upreds(87));
    if ex {
        f.op(upreds(68))
    } else {
        f.hide(68, 4, PT7)
    }
}

fn usel(u: U) -> Form {
    uform("USEL", 0x087, u)
        .ev("pyptx/matmul_tma_v33_sm90a, pyptx/fa_ws_pingpong_sm90a; survey USEL 0x287/0x887")
        .op(ugpr(16).def())
        .op(ugpr(24))
        .op(ub(u, uimm(32, 32)))
        .op(upreds(87))
}

fn usgxt(u: U) -> Form {
    uform("USGXT", 0x09a, u)
        .ev("pyptx/fa_ws_pingpong_sm90a; survey USGXT 0x89a")
        .flag(75, "W")
        .mf(73, 1, SIGNED_U32)
        .op(ugpr(16).def())
        .op(ugpr(24))
        .op(ub(u, uimm(32, 32)))
}

const LD_SIZE: Names = &[
    (0, "U8"),
    (1, "S8"),
    (2, "U16"),
    (3, "S16"),
    (4, ""),
    (5, "64"),
];
const LD_SIZE_REGS: &[(u32, u8)] = &[(5, 2)];

pub(super) fn forms() -> Vec<Form> {
    let mut v = vec![
        form("UMOV", 0x882)
            .ev("pyptx/fa_ws_pingpong_sm90a; survey UMOV 0x882")
            .uguard()
            .op(ugpr(16).def())
            .op(uimm(32, 32)),
        form("UMOV", 0xc82)
            .ev("pyptx/fa_ws_pingpong_sm90a; survey UMOV 0xc82")
            .uguard()
            .hide(91, 1, 1)
            .op(ugpr(16).def())
            .op(ugpr(32)),
        form("ULDC", 0xab9)
            .ev("pyptx/fa_ws_pingpong_sm90a (ULDC, ULDC.64), kernels (ULDC.U8/.U16); survey ULDC 0xab9")
            .uguard()
            .mf(73, 3, LD_SIZE)
            .op(ugpr(16).def().nby(0, LD_SIZE_REGS))
            .op(cbank()),
        form("S2UR", 0x9c3)
            .ev("pyptx/fa_ws_pingpong_sm90a, probes/02_cluster_sregs (SR_CgaCtaId 0x88, SR_SWINHI 0x2f); survey S2UR 0x9c3")
            .uguard()
            .var()
            .op(ugpr(16).def())
            .op(sreg(72)),
        form("UFLO", 0x2bd)
            .ev("probes/04_dsmem_ldst/red_add_u32; survey UFLO 0x2bd")
            .uguard()
            .hide(91, 1, 1)
            .mf(73, 1, SIGNED_U32)
            .flag(74, "SH")
            .op(ugpr(16).def())
            .op(upred(81).def().opt(PT7))
            .op(ugpr(32).not(63)),
        form("UPOPC", 0x2bf)
            .ev("zluda/atom_add; survey UPOPC 0x2bf")
            .uguard()
            .hide(91, 1, 1)
            .op(ugpr(16).def())
            .op(ugpr(32).not(63)),
        // UPLOP3: PLOP3's predicate layout (form 0x81c in int.rs) on uniform predicates, with a
        // uniform guard. No ptxas output in the corpora or probes holds one; the evidence is
        // nvdisasm: survey PLOP3 0x81c words with the opcode set to 0x89c decode as
        // `@UP1 UPLOP3.LUT UP0, UPT, UP1, UPT, UPT, 0x8, 0x0`; bit 67 (PLOP3's "C is uniform")
        // does not change the text, and with bit 91 set nvdisasm rejects the word.
        form("UPLOP3", 0x89c)
            .ev("nvdisasm -b SM90a on survey PLOP3 0x81c words with opcode 0x89c")
            .uguard()
            .m("LUT")
            .hide(67, 1, 0)
            .op(upred(81).def())
            .op(upred(84).def())
            .op(upreds(87))
            .op(upreds(77))
            .op(upreds(68))
            .op(super::int::plop3_lut0())
            .op(uimm(16, 8)),
        form("VOTEU", 0x886)
            .ev("pyptx/fa_ws_pingpong_sm90a, zluda/atom_add; survey VOTEU 0x886")
            .mf(72, 2, &[(0, "ALL"), (1, "ANY"), (2, "EQ")])
            .op(ugpr(16).def().opt(URZ_))
            .op(upred(81).def())
            .op(preds(87)),
        form("R2UR", 0x2ca)
            .ev("pyptx/fa_ws_pingpong_sm90a, probes/16_tma_elect; survey R2UR 0x2ca")
            .var()
            .op(pred(81).def().opt(PT7))
            .op(ugpr(16).def())
            .op(gpr(24).reuse(0)),
        form("R2UR", 0x2ca)
            .ev("survey R2UR 0x2ca (.OR, bit 84, always prints its predicate output)")
            .var()
            .m("OR")
            .hide(84, 1, 1)
            .op(pred(81).def())
            .op(ugpr(16).def())
            .op(gpr(24).reuse(0)),
        form("UP2UR", 0x883)
            .ev("probes/05_fences/fence_proxy_alias; survey UP2UR 0x883")
            .uguard()
            .hide(91, 1, 1)
            .mf(76, 2, &[(0, ""), (1, "B1"), (2, "B2"), (3, "B3")])
            .op(ugpr(16).def())
            .op(lit("UPR"))
            .op(ugpr(24))
            .op(uimm(32, 32)),
        form("UR2UP", 0x884)
            .ev("probes/05_fences/fence_proxy_alias; survey UR2UP 0x884")
            .uguard()
            .hide(91, 1, 1)
            .op(lit("UPR"))
            .op(ugpr(24).sfx(76, 2, &[(0, ""), (1, "B1"), (2, "B2"), (3, "B3")]))
            .op(uimm(32, 32).opt(0xff)),
        form("USETMAXREG", 0x9c8)
            .ev("pyptx/fa_ws_pingpong_sm90a; survey USETMAXREG 0x9c8")
            .uguard()
            .var()
            .hide(91, 1, 1)
            .m("DEALLOC")
            .hide(72, 2, 1)
            .m("CTAPOOL")
            .hide(74, 1, 1)
            .hide(81, 3, 7)
            .op(uimm(32, 10)),
        form("USETMAXREG", 0x9c8)
            .ev("pyptx/fa_ws_pingpong_sm90a; survey USETMAXREG 0x9c8")
            .uguard()
            .var()
            .hide(91, 1, 1)
            .m("TRY_ALLOC")
            .hide(72, 2, 2)
            .m("CTAPOOL")
            .hide(74, 1, 1)
            .op(upred(81).def())
            .op(uimm(32, 10)),
    ];
    for u in [U::R, U::I] {
        for (x, wide) in [(false, false), (true, false), (false, true), (true, true)] {
            v.push(uiadd3(u, x, wide));
        }
        v.push(uimad(u, false));
        v.push(uimad(u, true));
        v.push(uprmt(u));
        v.push(ulop3(u));
        v.push(ushf(u));
        v.push(uisetp(u, false));
        v.push(uisetp(u, true));
        v.push(usel(u));
        v.push(usgxt(u));
    }
    for (hi, sx) in [(false, false), (true, false), (true, true)] {
        v.push(ulea(hi, sx, false));
        v.push(ulea(hi, sx, true));
    }
    v
}
