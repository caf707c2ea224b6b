//! Forms: memory (LDG, STG, LD, ST, LDS, STS, LDL, STL, LDC, ATOM, ATOMG, ATOMS, REDG, QSPC,
//! CCTL, MEMBAR, FENCE, LDSM, STSM, LDGSTS, LDGDEPBAR, TEX, TLD).
//!
//! Address forms of the global/generic memory instructions (bits 76, 90, 91 for LD/ST/LDG/STG;
//! 71, 70, 91 for ATOM/ATOMG/REDG, whose data register takes [39:32]):
//! `desc[URd][Ra.64+off]` (descriptor form), `[Ra.64+URb+off]`, `[Ra.U32+URb+off]`, and
//! `[Ra+off]` (bit 91 clear: no UR, a 32-bit offset). Field tables: `tests/sass-probes/memfields.txt`
//! (every value of the scope [80:77], eviction [86:84], L2-prefetch [69:68] and size [75:73] fields
//! decoded by nvdisasm); other bits: the survey (`tests/sass-probes/survey.txt`).

use super::*;

/// Loads: the memory-ordering/scope field [80:77] (ptxas-facts.md a.1 #17).
pub(crate) const SEM_LD: Names = &[
    (0, ""),
    (1, "CONSTANT.PRIVATE"),
    (2, "CONSTANT.CTA"),
    (3, "CONSTANT.CTA.PRIVATE"),
    (4, "CONSTANT"),
    (5, "STRONG.SM"),
    (6, "STRONG.GPU.PRIVATE"),
    (7, "STRONG.GPU"),
    (8, "MMIO.GPU"),
    (9, "CONSTANT.SM"),
    (10, "STRONG.SYS"),
    (11, "CONSTANT.SM.PRIVATE"),
    (12, "MMIO.SYS"),
    (13, "CONSTANT.VC"),
    (14, "CONSTANT.VC.PRIVATE"),
    (15, "CONSTANT.GPU"),
];
/// Stores, atomics and reductions: as for loads, but 4 is STRONG.SM.PRIVATE.
pub(crate) const SEM_ST: Names = &[
    (0, ""),
    (1, "CONSTANT.PRIVATE"),
    (2, "CONSTANT.CTA"),
    (3, "CONSTANT.CTA.PRIVATE"),
    (4, "STRONG.SM.PRIVATE"),
    (5, "STRONG.SM"),
    (6, "STRONG.GPU.PRIVATE"),
    (7, "STRONG.GPU"),
    (8, "MMIO.GPU"),
    (9, "CONSTANT.SM"),
    (10, "STRONG.SYS"),
    (11, "CONSTANT.SM.PRIVATE"),
    (12, "MMIO.SYS"),
    (13, "CONSTANT.VC"),
    (14, "CONSTANT.VC.PRIVATE"),
    (15, "CONSTANT.GPU"),
];
/// Eviction priority [86:84].
pub(crate) const EVICT: Names = &[
    (0, "EF"),
    (1, ""),
    (2, "EL"),
    (3, "LU"),
    (4, "EU"),
    (5, "NA"),
];
/// L2 prefetch [69:68] (loads).
const LTC: Names = &[(0, ""), (1, "LTC64B"), (2, "LTC128B"), (3, "LTC256B")];
/// Access size [75:73].
pub(crate) const SIZE: Names = &[
    (0, "U8"),
    (1, "S8"),
    (2, "U16"),
    (3, "S16"),
    (4, ""),
    (5, "64"),
    (6, "128"),
];
pub(crate) const SIZE_REGS: &[(u32, u8)] = &[(5, 2), (6, 4)];

/// Integer atomic operations [90:87].
const ATOM_OP: Names = &[
    (0, "ADD"),
    (1, "MIN"),
    (2, "MAX"),
    (3, "INC"),
    (4, "DEC"),
    (5, "AND"),
    (6, "OR"),
    (7, "XOR"),
    (8, "EXCH"),
];
const ATOMG_OP: Names = &[
    (0, "ADD"),
    (1, "MIN"),
    (2, "MAX"),
    (3, "INC"),
    (4, "DEC"),
    (5, "AND"),
    (6, "OR"),
    (7, "XOR"),
    (8, "EXCH"),
    (9, "SAFEADD"),
];
/// Reduction operations [89:87] (REDG; bit 90 is set).
const RED_OP: Names = &[
    (0, "ADD"),
    (1, "MIN"),
    (2, "MAX"),
    (3, "INC"),
    (4, "DEC"),
    (5, "AND"),
    (6, "OR"),
    (7, "XOR"),
];
/// Integer atomic types [75:73].
const ATOM_TYPE: Names = &[(0, ""), (1, "S32"), (2, "64"), (3, "S64"), (4, "128")];
const ATOM_TYPE_REGS: &[(u32, u8)] = &[(2, 2), (3, 2), (4, 4)];
/// Float atomic types: [76:73] | bit 87 << 4.
const ATOMF_TYPE: Names = &[
    (0, "F16x2.RN"),
    (1, "F16x4.RN"),
    (2, "F16x8.RN"),
    (3, "BF16x2.RN"),
    (4, "BF16x4.RN"),
    (5, "BF16x8.RN"),
    (9, "F32.FTZ.RN"),
    (10, "F32x2.FTZ.RN"),
    (11, "F32x4.FTZ.RN"),
    (12, "F32.RN"),
    (13, "F32x2.RN"),
    (14, "F32x4.RN"),
    (15, "F64.RN"),
];
const ATOMF_REGS: &[(u32, u8)] = &[
    (1, 2),
    (2, 4),
    (4, 2),
    (5, 4),
    (10, 2),
    (11, 4),
    (13, 2),
    (14, 4),
    (15, 2),
];
/// Float atomic operations [89:88].
const ATOMF_OP: Names = &[(0, "ADD"), (1, "MIN"), (2, "MAX")];

/// Global/generic address forms.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum A {
    /// `desc[UR][R.64+off]`.
    Desc,
    /// `[R.64+UR+off]`.
    Ur64,
    /// `[R.U32+UR+off]`.
    Ur32,
    /// `[R+off]` (32-bit offset, no UR).
    Plain,
}

/// The address operand of LD/ST/LDG/STG (UR at [37:32] for loads, [69:64] for stores, whose
/// data register takes [39:32]).
fn addr_ldst(a: A, upos: u8) -> OpSpec {
    match a {
        A::Desc => memop(
            PrefixSpec::Desc(Field::new(upos, 6)),
            vec![t_r(24).sfx("64"), t_i(40, 24)],
        ),
        A::Ur64 => memop(
            PrefixSpec::None,
            vec![t_r(24).sfx("64").nz(), t_u(upos), t_i(40, 24)],
        ),
        A::Ur32 => memop(
            PrefixSpec::None,
            vec![t_r(24).sfx("U32"), t_u(upos), t_i(40, 24)],
        ),
        A::Plain => {
            let mut r = t_r(24);
            r.regs = 2;
            memop(PrefixSpec::None, vec![r, t_i(32, 32)])
        }
    }
}

/// The address operand of ATOM/ATOMG/REDG (UR at [69:64]).
fn addr_atom(a: A) -> OpSpec {
    match a {
        A::Desc => memop(
            PrefixSpec::Desc(Field::new(64, 6)),
            vec![t_r(24).sfx("64"), t_i(40, 24)],
        ),
        A::Ur64 => memop(
            PrefixSpec::None,
            vec![t_r(24).sfx("64").nz(), t_u(64), t_i(40, 24)],
        ),
        A::Ur32 => memop(
            PrefixSpec::None,
            vec![t_r(24).sfx("U32"), t_u(64), t_i(40, 24)],
        ),
        A::Plain => {
            let mut r = t_r(24);
            r.regs = 2;
            memop(PrefixSpec::None, vec![r, t_i(40, 24)])
        }
    }
}

/// The address-form bits of LD/ST/LDG/STG: (76 desc, 90 64-bit, 91 UR).
fn ldst_bits(f: Form, a: A) -> Form {
    match a {
        A::Desc => f.hide(76, 1, 1).hide(90, 1, 1).hide(91, 1, 1),
        A::Ur64 => f.hide(90, 1, 1).hide(91, 1, 1),
        A::Ur32 => f.hide(91, 1, 1),
        A::Plain => f,
    }
}

/// The address-form bits of ATOM/ATOMG/REDG: (71 desc, 70 64-bit, 91 UR).
fn atom_bits(f: Form, a: A) -> Form {
    match a {
        A::Desc => f.hide(71, 1, 1).hide(70, 1, 1).hide(91, 1, 1),
        A::Ur64 => f.hide(70, 1, 1).hide(91, 1, 1),
        A::Ur32 => f.hide(91, 1, 1),
        A::Plain => f,
    }
}

fn ldg(a: A) -> Form {
    // Base mod indexes: 0 E, 1 eviction, 2 LTC, 3 size, 4 scope.
    let f = form("LDG", 0x981)
        .ev("zluda/add_non_coherent, pyptx/fa_ws_pingpong_sm90a; survey LDG 0x981; memfields.txt")
        .var()
        .m("E")
        .hide(72, 1, 1)
        .mf(84, 3, EVICT)
        .mf(68, 2, LTC)
        .mf(73, 3, SIZE)
        .mf(77, 4, SEM_LD)
        .op(pred(81).def().opt(PT7))
        .op(gpr(16).def().nby(3, SIZE_REGS))
        .op(addr_ldst(a, 32));
    ldst_bits(f, a)
}

fn ld(a: A) -> Form {
    let f = form("LD", 0x980)
        .ev("zluda/_Z9vectorAddPKfS0_Pfi, probes/04_dsmem_ldst; survey LD 0x980; memfields.txt")
        .var()
        .m("E")
        .hide(72, 1, 1)
        .mf(84, 3, EVICT)
        .mf(68, 2, LTC)
        .mf(73, 3, SIZE)
        .mf(77, 4, SEM_LD)
        .op(gpr(16).def().nby(3, SIZE_REGS))
        .op(addr_ldst(a, 32));
    ldst_bits(f, a)
}

fn st(name: &'static str, code: u16, a: A) -> Form {
    let f = form(name, code)
        .ev(if name == "STG" {
            "pyptx/fa_ws_pingpong_sm90a; survey STG 0x986; memfields.txt"
        } else {
            "zluda/_Z9vectorAddPKfS0_Pfi, probes/04_dsmem_ldst; survey ST 0x385/0x985; memfields.txt"
        })
        .var()
        .m("E")
        .hide(72, 1, 1)
        .mf(84, 3, EVICT)
        .mf(73, 3, SIZE)
        .mf(77, 4, SEM_ST)
        .op(addr_ldst(a, 64));
    let data = if a == A::Plain { gpr(64) } else { gpr(32) };
    ldst_bits(f, a).op(data.nby(2, SIZE_REGS))
}

/// ATOM/ATOMG with an integer operation.
fn atom(name: &'static str, code: u16, a: A, ops: Names) -> Form {
    let f = form(name, code)
        .ev(if name == "ATOM" {
            "zluda/atom_inc, probes/04_dsmem_ldst; survey ATOM 0x38a/0x98a; memfields.txt"
        } else {
            "zluda/atom_inc, pyptx/matmul_tma_v33_sm90a; survey ATOMG 0x3a8/0x9a8; memfields.txt"
        })
        .var()
        .m("E")
        .hide(72, 1, 1)
        .mf(87, 4, ops)
        .mf(84, 3, EVICT)
        .mf(73, 3, ATOM_TYPE)
        .mf(77, 4, SEM_ST)
        .op(pred(81).def())
        .op(gpr(16).def().nby(3, ATOM_TYPE_REGS))
        .op(addr_atom(a))
        .op(gpr(32).nby(3, ATOM_TYPE_REGS));
    atom_bits(f, a)
}

/// ATOM/ATOMG with a float operation (opcodes 0x9a2/0x9a3; type [76:73] | 87 << 4,
/// operation [89:88]).
fn atomf(name: &'static str, code: u16, a: A) -> Form {
    let f = form(name, code)
        .ev("probes/04_dsmem_ldst/atom_add_f32, tests/sass-probes/ptx/atomics; survey ATOM 0x9a2; memfields.txt")
        .var()
        .m("E")
        .hide(72, 1, 1)
        .mf(88, 2, ATOMF_OP)
        .mf(84, 3, EVICT)
        .mf2(Field::split((73, 4), (87, 1)), ATOMF_TYPE)
        .mf(77, 4, SEM_ST)
        .op(pred(81).def())
        .op(gpr(16).def().nby(3, ATOMF_REGS))
        .op(addr_atom(a))
        .op(gpr(32).nby(3, ATOMF_REGS));
    atom_bits(f, a)
}

/// ATOM.CAS / ATOMG.CAS (opcodes 0x38b/0x3a9, plain address; compare [39:32], value [71:64]).
fn atom_cas(name: &'static str, code: u16, kinds: Names) -> Form {
    form(name, code)
        .ev("zluda/atom_cas, zluda/atom_add_float (CAST.SPIN), tests/sass-probes/ptx/atomics (ATOMG.E.CAS); survey ATOM 0x38b")
        .var()
        .m("E")
        .hide(72, 1, 1)
        .mf(87, 2, kinds)
        .mf(84, 3, EVICT)
        .mf(73, 3, &[(0, ""), (1, "S32"), (2, "64"), (4, "128")])
        .mf(77, 4, SEM_ST)
        .op(pred(81).def())
        .op(gpr(16).def().nby(4, ATOM_TYPE_REGS))
        .op(addr_atom(A::Plain))
        .op(gpr(32).nby(4, ATOM_TYPE_REGS))
        .op(gpr(64).nby(4, ATOM_TYPE_REGS))
}

fn redg(a: A) -> Form {
    let f = form("REDG", 0x98e)
        .ev("probes/12_multimem/red_*, probes/19_scope_global; survey REDG 0x98e; memfields.txt; opfield.txt (op [89:87], bit 90 set)")
        .var()
        .m("E")
        .hide(72, 1, 1)
        .mf(87, 3, RED_OP)
        .hide(90, 1, 1)
        .mf(84, 3, EVICT)
        .mf(73, 3, &[(0, ""), (1, "S32"), (2, "64"), (3, "S64")])
        .mf(77, 4, SEM_ST)
        .op(addr_atom(a))
        .op(gpr(32).nby(3, ATOM_TYPE_REGS));
    red_bits(f, a)
}

/// REDG's address-form bits: 71 descriptor, 91 UR; the register is always `.64` (bit 90, which
/// the other memory instructions use for `.64`/`.U32`, is always set in REDG).
fn red_bits(f: Form, a: A) -> Form {
    match a {
        A::Desc => f.hide(71, 1, 1).hide(91, 1, 1),
        _ => f.hide(91, 1, 1),
    }
}

fn redgf(a: A) -> Form {
    let f = form("REDG", 0x9a6)
        .ev("probes/12_multimem/red_add_f32 family; survey REDG 0x9a6; memfields.txt")
        .var()
        .m("E")
        .hide(72, 1, 1)
        .mf(88, 2, ATOMF_OP)
        .hide(90, 1, 1)
        .mf(84, 3, EVICT)
        .mf2(Field::split((73, 4), (87, 1)), ATOMF_TYPE)
        .mf(77, 4, SEM_ST)
        .op(addr_atom(a))
        .op(gpr(32).nby(3, ATOMF_REGS));
    red_bits(f, a)
}

/// Shared-memory address: `[Ra+URb+off]` (bit 91 set) or `[Ra+off]`; `.X4/.X8` scale [79:78].
fn addr_shared(ur: bool, upos: u8) -> OpSpec {
    let r = t_r(24)
        .opt()
        .sfxf(78, 2, &[(0, ""), (1, "X4"), (2, "X8"), (3, "X16")]);
    if ur {
        memop(PrefixSpec::None, vec![r, t_u(upos), t_i(40, 24)])
    } else {
        memop_abs(vec![r, t_i(40, 24)])
    }
}

fn lds(ur: bool) -> Form {
    form("LDS", 0x984)
        .ev("pyptx/fa_ws_pingpong_sm90a; survey LDS 0x984; memfields.txt; tests/sass-probes/addrforms.txt")
        .var()
        .hide(91, 1, u64::from(ur))
        .mf(73, 3, SIZE)
        .op(gpr(16).def().nby(0, SIZE_REGS))
        .op(addr_shared(ur, 32))
}

fn sts(ur: bool) -> Form {
    form("STS", if ur { 0x988 } else { 0x388 })
        .ev("pyptx/fa_ws_pingpong_sm90a, pyptx/matmul_tma_v33_sm90a; survey STS 0x388/0x988")
        .var()
        .hide(91, 1, u64::from(ur))
        .mf(73, 3, SIZE)
        .op(addr_shared(ur, 64))
        .op(gpr(32).nby(0, SIZE_REGS))
}

fn ldl(ur: bool) -> Form {
    let m = if ur {
        memop(PrefixSpec::None, vec![t_r(24).opt(), t_u(32), t_i(40, 24)])
    } else {
        memop_abs(vec![t_r(24).opt(), t_i(40, 24)])
    };
    form("LDL", 0x983)
        .ev("zluda/_Z9vectorAddPKfS0_Pfi (spills); survey LDL 0x983; memfields.txt")
        .var()
        .hide(91, 1, u64::from(ur))
        .mf(84, 3, EVICT)
        .mf(73, 3, SIZE)
        .op(gpr(16).def().nby(1, SIZE_REGS))
        .op(m)
}

fn stl() -> Form {
    form("STL", 0x387)
        .ev("zluda/_Z9vectorAddPKfS0_Pfi (spills); survey STL 0x387; memfields.txt")
        .var()
        .mf(84, 3, EVICT)
        .mf(73, 3, SIZE)
        .op(memop_abs(vec![t_r(24).opt(), t_i(40, 24)]))
        .op(gpr(32).nby(1, SIZE_REGS))
}

const LDC_SIZE: Names = &[
    (0, "U8"),
    (1, "S8"),
    (2, "U16"),
    (3, "S16"),
    (4, ""),
    (5, "64"),
];

fn ldc() -> Form {
    form("LDC", 0xb82)
        .ev("pyptx/fa_ws_pingpong_sm90a (LDC, LDC.64, c[0x0][R+off], c[0x0][RZ]); survey LDC 0xb82; memfields.txt")
        .var()
        .mf(73, 3, LDC_SIZE)
        .mf(78, 2, &[(0, ""), (1, "IL"), (2, "IS"), (3, "ISL")])
        .op(gpr(16).def().nby(0, SIZE_REGS))
        .op(OpSpec {
            spec: Spec::CBank {
                bank: Field::new(54, 5),
                off: Field::new(38, 16),
                base: Some(Field::new(24, 8)),
            },
            ..cbank()
        })
}

const CCTL_ADDR_OP: Names = &[
    (0, "PF1"),
    (1, "PF2"),
    (2, "WB"),
    (3, "IV"),
    (5, "RS"),
    (9, "PML2"),
    (10, "DML2"),
    (11, "RML2"),
];
const CCTL_ALL_OP: Names = &[(4, "IVALL"), (6, "IVALLP"), (7, "WBALL"), (8, "WBALLP")];

fn cctl(addr: bool) -> Form {
    let f = form("CCTL", 0x98f)
        .ev("pyptx/intrinsics-sm90/test_barrier_cluster, probes/05_fences (CCTL.IVALL after every acquire); survey CCTL 0x98f; tests/sass-probes/addrforms.txt (op values)")
        .var()
        .mf(78, 2, &[(0, ""), (1, "U"), (2, "C")]);
    if addr {
        f.mf(87, 4, CCTL_ADDR_OP)
            .op(memop(PrefixSpec::None, vec![t_r(24), t_i(32, 32)]))
    } else {
        f.mf(87, 4, CCTL_ALL_OP).hide(24, 8, RZ_)
    }
}

const MEMBAR_SCOPE: Names = &[(0, "CTA"), (1, "SM"), (2, "GPU"), (3, "SYS"), (5, "VC")];

pub(super) fn forms() -> Vec<Form> {
    let mut v = Vec::new();
    for a in [A::Desc, A::Ur64, A::Ur32, A::Plain] {
        // LDG/STG have no plain `[R+off]` form (survey: bit 91 clear does not decode).
        if a != A::Plain {
            v.push(ldg(a));
            v.push(st("STG", 0x986, a));
        }
        v.push(ld(a));
        v.push(st("ST", if a == A::Plain { 0x385 } else { 0x985 }, a));
        let (ac, gc) = if a == A::Plain {
            (0x38a, 0x3a8)
        } else {
            (0x98a, 0x9a8)
        };
        v.push(atom("ATOM", ac, a, ATOM_OP));
        v.push(atom("ATOMG", gc, a, ATOMG_OP));
        if a != A::Plain {
            v.push(atomf("ATOM", 0x9a2, a));
            v.push(atomf("ATOMG", 0x9a3, a));
        }
        if a == A::Desc || a == A::Ur64 {
            v.push(redg(a));
            v.push(redgf(a));
        }
    }
    v.push(atom_cas(
        "ATOM",
        0x38b,
        &[(0, "CAS"), (1, "CAST"), (3, "CAST.SPIN")],
    ));
    // ATOMG has no CAST (bits 88:87 are not printed).
    v.push(atom_cas("ATOMG", 0x3a9, &[(0, "CAS")]));
    for ur in [true, false] {
        v.push(lds(ur));
        v.push(sts(ur));
        v.push(ldl(ur));
    }
    v.push(stl());
    v.push(ldc());
    v.push(cctl(false));
    v.push(cctl(true));
    v.push(
        form("MEMBAR", 0x992)
            .ev("pyptx/fa_ws_pingpong_sm90a, probes/05_fences, probes/07_exit (MEMBAR.SC.VC); survey MEMBAR 0x992; ptxas-facts.md a.3.5 (scope [78:76], .ALL bit 79)")
            .var()
            .mf(79, 1, &[(0, "SC"), (1, "ALL")])
            .mf(76, 3, MEMBAR_SCOPE),
    );
    v.push(
        form("FENCE", 0x3c6)
            .ev("pyptx/fa_ws_pingpong_sm90a, probes/05_fences (fence.proxy.async); survey FENCE 0x3c6")
            .var()
            .m("VIEW")
            .m("ASYNC")
            .mf(72, 1, &[(0, "S"), (1, "G")]),
    );
    v.push(
        form("LDGDEPBAR", 0x9af)
            .ev("zluda/cp_async; survey LDGDEPBAR 0x9af")
            .var(),
    );
    // QSPC: which space a generic address is in (P ← address in .S shared / .D DSMEM / .G global).
    v.push(
        form("QSPC", 0x9aa)
            .ev("probes/04_dsmem_ldst/atom_add_f32 (isspacep fallback), probes/10_shared_addr; survey QSPC 0x9aa")
            .var()
            .m("E")
            .hide(72, 1, 1)
            .hide(91, 1, 1)
            .mf(73, 2, &[(0, "G"), (2, "S"), (3, "D")])
            .op(pred(81).def())
            .op(gpr(16).def())
            .op(memop(
                PrefixSpec::None,
                vec![t_r(24).sfx("U32"), t_u(32), t_i(40, 24)],
            )),
    );
    // ATOMS: shared-memory atomics.
    v.push(
        form("ATOMS", 0x98c)
            .ev("zluda/atom_add, probes/04_dsmem_ldst; survey ATOMS 0x98c; memfields.txt")
            .var()
            .hide(91, 1, 1)
            .mf(87, 4, ATOM_OP)
            .mf(73, 3, &[(0, ""), (1, "S32"), (2, "64"), (4, "128")])
            .op(gpr(16).def().nby(1, ATOM_TYPE_REGS))
            .op(memop(
                PrefixSpec::None,
                vec![
                    t_r(24)
                        .opt()
                        .sfxf(78, 2, &[(0, ""), (1, "X4"), (2, "X8"), (3, "X16")]),
                    t_u(64),
                    t_i(40, 24),
                ],
            ))
            .op(gpr(32).nby(1, ATOM_TYPE_REGS)),
    );
    v.push(
        form("ATOMS", 0x38c)
            .ev("tests/sass-probes/ptx/atomics (atom.shared with a register address); memfields.txt")
            .var()
            .mf(87, 4, ATOM_OP)
            .mf(73, 3, &[(0, ""), (1, "S32"), (2, "64"), (4, "128")])
            .op(gpr(16).def().nby(1, ATOM_TYPE_REGS))
            .op(memop_abs(vec![
                t_r(24)
                    .opt()
                    .sfxf(78, 2, &[(0, ""), (1, "X4"), (2, "X8"), (3, "X16")]),
                t_i(40, 24),
            ]))
            .op(gpr(32).nby(1, ATOM_TYPE_REGS)),
    );
    v.push(
        form("QSPC", 0x3aa)
            .ev("tests/sass-probes/ptx/atomics (isspacep fallback with a register address)")
            .var()
            .m("E")
            .hide(72, 1, 1)
            .mf(73, 2, &[(0, "G"), (2, "S"), (3, "D")])
            .op(pred(81).def())
            .op(gpr(16).def())
            .op(memop(
                PrefixSpec::None,
                vec![
                    {
                        let mut r = t_r(24);
                        r.regs = 2;
                        r
                    },
                    t_i(40, 24),
                ],
            )),
    );
    v.push(
        form("ATOMS", 0xf8c)
            .ev("kernels/histogram_atomics (atomicAdd(&smem, 1) → ATOMS.POPC.INC.32); survey ATOMS 0xf8c")
            .var()
            .hide(91, 1, 1)
            .hide(88, 1, 1)
            .hide(90, 1, 1)
            .mf(87, 1, &[(1, "POPC.INC")])
            .mf(73, 3, &[(0, "32")])
            .op(gpr(16).def())
            .op(memop(
                PrefixSpec::None,
                vec![
                    t_r(24)
                        .opt()
                        .sfxf(78, 2, &[(0, ""), (1, "X4"), (2, "X8"), (3, "X16")]),
                    t_u(64),
                    t_i(40, 24),
                ],
            )),
    );
    v.push(
        form("ATOMS", 0x38d)
            .ev("zluda/atom_add_float, probes/04_dsmem_ldst (CAST.SPIN loops); survey ATOMS 0x38d")
            .var()
            .mf(87, 2, &[(0, "CAS"), (1, "CAST"), (3, "CAST.SPIN")])
            .mf(73, 3, &[(0, ""), (2, "64")])
            .op(gpr(16).def().nby(1, ATOM_TYPE_REGS))
            .op(memop_abs(vec![
                t_r(24)
                    .opt()
                    .sfxf(78, 2, &[(0, ""), (1, "X4"), (2, "X8"), (3, "X16")]),
                t_i(40, 24),
            ]))
            .op(gpr(32).nby(1, ATOM_TYPE_REGS))
            .op(gpr(64).nby(1, ATOM_TYPE_REGS)),
    );
    // LDSM/STSM: matrix loads/stores from shared memory.
    {
        let ur = false;
        v.push(
            form("LDSM", 0x83b)
                .ev("zluda/ldmatrix; survey LDSM 0x83b")
                .var()
                .hide(91, 1, u64::from(ur))
                .m("16")
                .mf(78, 2, &[(0, "M88"), (1, "MT88"), (3, "M832")])
                .mf(72, 2, &[(0, ""), (1, "2"), (2, "4")])
                .op(gpr(16).def().nby(2, &[(1, 2), (2, 4)]))
                .op(memop(PrefixSpec::None, vec![t_r(24).opt(), t_i(40, 24)])),
        );
        v.push(
            form("STSM", 0x844)
                .ev("pyptx/fa_ws_pingpong_sm90a; survey STSM 0x844")
                .var()
                .hide(91, 1, u64::from(ur))
                .m("16")
                .mf(78, 1, &[(0, "M88"), (1, "MT88")])
                .mf(72, 2, &[(0, ""), (1, "2"), (2, "4")])
                .op(memop(PrefixSpec::None, vec![t_r(24).opt(), t_i(40, 24)]))
                .op(gpr(32).nby(2, &[(1, 2), (2, 4)])),
        );
    }
    // LDGSTS: asynchronous global → shared copy.
    v.push(
        form("LDGSTS", 0xfae)
            .ev("zluda/cp_async; survey LDGSTS 0xfae; tests/sass-probes/ptx/cp_async.ptx (the source predicate [90:87]: `!PT` for src-size 0, `P0` for a register src-size)")
            .var()
            .m("E")
            .hide(70, 1, 1)
            .mf(81, 1, &[(0, "BYPASS"), (1, "")])
            .mf(84, 3, EVICT)
            .mf(71, 2, &[(0, ""), (1, "LTC64B"), (2, "LTC128B")])
            .mf(73, 3, &[(4, ""), (5, "64"), (6, "128")])
            .flag(82, "ZFILL")
            .mf(77, 4, LDGSTS_SEM)
            .hide(76, 1, 1)
            .hide(91, 1, 1)
            .op(memop(PrefixSpec::None, vec![t_r(16).opt(), t_i(44, 20)]))
            .op(memop(
                PrefixSpec::Desc(Field::new(64, 6)),
                vec![t_r(24).sfx("64"), t_i(32, 12)],
            ))
            .op(preds(87).opt(PT7)),
    );
    v.extend(tex_forms());
    v
}

/// LDGSTS's ordering field [80:77] (tests/sass-probes/memfields.txt).
const LDGSTS_SEM: Names = &[
    (0, ""),
    (1, "CONSTANT.PRIVATE"),
    (2, "CONSTANT.CTA"),
    (3, "CONSTANT.CTA.PRIVATE"),
    (4, "CONSTANT"),
    (5, "MMIO.CTA"),
    (6, "GPU.PRIVATE"),
    (7, "MMIO.CTA.PRIVATE"),
    (8, "MMIO.SM"),
    (9, "CONSTANT.SM"),
    (10, "MMIO.VC"),
    (11, "CONSTANT.SM.PRIVATE"),
    (12, "MMIO.GPU"),
    (13, "CONSTANT.VC"),
    (14, "CONSTANT.VC.PRIVATE"),
    (15, "CONSTANT.GPU"),
];

const TEX_DIM: Names = &[
    (0, "1D"),
    (1, "2D"),
    (2, "3D"),
    (3, "CUBE"),
    (4, "ARRAY_1D"),
    (5, "ARRAY_2D"),
    (7, "ARRAY_CUBE"),
];

/// Registers of a texture's coordinate operand (`Ra`, bits [31:24]) by dimension (bits
/// [63:61]): `x`, `x y`, `x y z`. In ptxas's code of `zluda/tex_read_3d_float`
/// (`tex.3d.v4.f32.f32 … [tex, {%fx, %fy, %fz, %fz}]`) the coordinates are loaded into `R4`, `R5`,
/// `R6` and `TEX.LL R6, R4, R4, R7, UR4, 0x0, 3D` names only `R4` (the level is `R7`); in
/// `zluda/tex_read_2d_float_s32coord` `LDC R4`, `LDC R5` then `TLD.LZ R6, R4, R4, UR4, 0x0, 2D`,
/// whose `LDC R5` ptxas waits for at the `TLD` (`B0`, with `LDC R4`). Other dimensions: one
/// register (not measured).
const TEX_COORDS: &[(u32, u8)] = &[(0, 1), (1, 2), (2, 3)];

/// Registers of each destination of a texture read by channel mask (bits [75:72]): with all
/// four channels, `Rd` ([23:16]) holds channels 0–1 and `Rd2` ([71:64]) channels 2–3: after
/// `TEX.LL R6, R4, …` (mask 0xf) ptxas stores `STG.E.128 … R4` (`R4`..`R7`) waiting only on
/// the texture's scoreboard (`zluda/tex_read_*`, 16 of 16). Other masks: one register each (not
/// measured).
const TEX_PAIR: &[(u32, u8)] = &[(0xf, 2)];

fn tex_forms() -> Vec<Form> {
    // TEX/TLD with a bindless handle in a UR; destinations [71:64] and [23:16].
    let tex = form("TEX", 0xf60)
        .ev("zluda/tex_read_*; survey TEX 0xf60")
        .var()
        .hide(91, 1, 1)
        .mf(87, 3, &[(0, ""), (1, "LZ"), (2, "LB"), (3, "LL")])
        .mf(84, 3, EVICT)
        .flag(90, "NODEP")
        .op(pred(81).def().opt(PT7))
        .op(gpr(64).def().nfield(72, 4, TEX_PAIR))
        .op(gpr(16).def().nfield(72, 4, TEX_PAIR))
        .op(gpr(24).nz().nfield(61, 3, TEX_COORDS))
        .op(gpr(32).opt(RZ_))
        .op(ugpr(40).nz())
        .op(uimm(46, 8))
        .op(enm(61, 3, TEX_DIM))
        .op(uimm(72, 4).opt(0xf));
    let tld = form("TLD", 0xf66)
        .ev("zluda/tex_read_*_s32coord; survey TLD 0xf66")
        .var()
        .hide(91, 1, 1)
        .hide(32, 8, RZ_)
        .mf(87, 3, &[(1, "LZ"), (3, "LL")])
        .mf(84, 3, EVICT)
        .flag(90, "NODEP")
        .op(pred(81).def().opt(PT7))
        .op(gpr(64).def().nfield(72, 4, TEX_PAIR))
        .op(gpr(16).def().nfield(72, 4, TEX_PAIR))
        .op(gpr(24).nz().nfield(61, 3, TEX_COORDS))
        .op(ugpr(40).nz())
        .op(uimm(46, 8))
        .op(enm(
            61,
            3,
            &[
                (0, "1D"),
                (1, "2D"),
                (2, "3D"),
                (4, "ARRAY_1D"),
                (5, "ARRAY_2D"),
            ],
        ))
        .op(uimm(72, 4).opt(0xf));
    vec![tex, tld]
}
