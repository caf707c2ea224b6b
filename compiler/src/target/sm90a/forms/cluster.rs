//! Forms: clusters, mbarriers, TMA and multicast (UCGABAR_ARV/WAIT, ERRBAR, CGAERRBAR, ELECT,
//! SYNCS.*, ARRIVES, LDGMC, UBLKCP, UTMALDG, UTMASTG, UTMACCTL, UTMACMDFLUSH).
//!
//! Evidence: `shared/notes/ptxas-facts.md` §a.3/§f (opcodes, the ERRBAR/CGAERRBAR and
//! UCGABAR_ARV/WAIT selector in [11:9], ELECT's fields, LDGMC's op fields), the cluster probes
//! named in `.ev`, the survey and `tests/sass-probes/syncsfields.txt` (every value of the SYNCS,
//! UTMALDG/UTMASTG and UBLKCP modifier fields).

use super::*;

/// `[Ra+URb+off]` with Ra at [31:24] (left out when RZ), URb at [69:64], off at [63:40].
fn syncs_addr() -> OpSpec {
    memop(PrefixSpec::None, vec![t_r(24).opt(), t_u(64), t_i(40, 24)])
}

const LDGMC_IOP: Names = &[
    (0, "ADD"),
    (1, "MIN"),
    (2, "MAX"),
    (5, "AND"),
    (6, "OR"),
    (7, "XOR"),
];
const LDGMC_ITYPE: Names = &[(0, "32"), (1, "S32"), (2, "64"), (3, "S64")];
const LDGMC_FOP: Names = &[(0, "ADD"), (1, "MIN"), (2, "MAX"), (3, "F32ADD")];
const LDGMC_FTYPE: Names = &[
    (0, "F16x2.RN"),
    (1, "F16x4.RN"),
    (2, "F16x8.RN"),
    (3, "BF16x2.RN"),
    (4, "BF16x4.RN"),
    (5, "BF16x8.RN"),
    (12, "F32.RN"),
    (13, "F32x2.RN"),
    (14, "F32x4.RN"),
];

fn ldgmc_addr(wide: bool) -> OpSpec {
    memop(
        PrefixSpec::None,
        vec![
            if wide {
                t_r(24).sfx("64").nz()
            } else {
                t_r(24).sfx("U32")
            },
            t_u(64),
            t_i(40, 24),
        ],
    )
}

const TMA_DIM: Names = &[(0, "1D"), (1, "2D"), (2, "3D"), (3, "4D"), (4, "5D")];

pub(super) fn forms() -> Vec<Form> {
    let mut v = vec![
        form("UCGABAR_ARV", 0x9c7)
            .ev("pyptx/intrinsics-sm90/test_barrier_cluster, probes/06_barrier_cluster; ptxas-facts.md a.1 #19, #26")
            .uguard()
            .hide(91, 1, 1),
        form("UCGABAR_WAIT", 0xdc7)
            .ev("pyptx/intrinsics-sm90/test_barrier_cluster, probes/06_barrier_cluster; ptxas-facts.md a.1 #19, #26")
            .uguard()
            .hide(91, 1, 1),
        form("ERRBAR", 0x9ab)
            .ev("probes/05_fences; ptxas-facts.md a.1 #22 (ERRBAR 0x9ab)"),
        form("CGAERRBAR", 0x5ab)
            .ev("probes/05_fences; ptxas-facts.md a.1 #22 (CGAERRBAR 0x5ab)"),
        form("ELECT", 0x82f)
            .ev("probes/08_elect, probes/16_tma_elect; ptxas-facts.md a.1 #28 (Pd [83:81], URd [21:16], predicate [89:87]/90); survey ELECT 0x82f")
            .flag(85, "IGNOREKILL")
            .op(pred(81).def())
            .op(ugpr(16).def())
            .op(preds(87)),
        form("SYNCS", 0x5b2)
            .ev("probes/09_mbarrier (mbarrier.init), pyptx/mbarrier_full; survey SYNCS 0x5b2")
            .var()
            .uguard()
            .hide(91, 1, 1)
            .m("EXCH")
            .hide(72, 2, 1)
            .m("64")
            .op(ugpr(16).def().n(2))
            .op(memop(PrefixSpec::None, vec![t_u(24), t_i(40, 24)]))
            .op(ugpr(32).n(2)),
        form("SYNCS", 0x9a7)
            .ev("probes/09_mbarrier (arrive, expect_tx, complete_tx, remote arrive), pyptx/mbarrier_full; survey SYNCS 0x9a7; syncsfields.txt")
            .var()
            .hide(91, 1, 1)
            .m("ARRIVE")
            .m("TRANS64")
            .mf(
                73,
                3,
                &[
                    (0, ""),
                    (1, "TMASK"),
                    (2, "RED"),
                    (4, "OPTOUT"),
                    (5, "TMASK.OPTOUT"),
                    (6, "RED.OPTOUT"),
                ],
            )
            .mf(
                84,
                3,
                &[
                    (0, ""),
                    (1, "A1T0"),
                    (2, "A0T1"),
                    (3, "A0TR"),
                    (4, "A0TX"),
                    (5, "ART0"),
                ],
            )
            .op(gpr(16).def().n(2))
            .op(syncs_addr())
            .op(gpr(32)),
        form("SYNCS", 0x5a7)
            .ev("probes/09_mbarrier (test_wait, try_wait), pyptx/fa_ws_pingpong_sm90a; survey SYNCS 0x5a7; syncsfields.txt")
            .var()
            .hide(91, 1, 1)
            .m("PHASECHK")
            .hide(70, 2, 1)
            .m("TRANS64")
            .flag(72, "TRYWAIT")
            .op(pred(81).def())
            .op(syncs_addr())
            .op(gpr(32)),
        form("SYNCS", 0x9b1)
            .ev("probes/09_mbarrier (mbarrier.inval), pyptx/fa_ws_pingpong_sm90a; survey SYNCS 0x9b1")
            .var()
            .hide(91, 1, 1)
            .m("CCTL")
            .mf(72, 1, &[(0, "IV"), (1, "WB")])
            .op(syncs_addr()),
        form("SYNCS", 0x9b1)
            .ev("survey SYNCS 0x9b1 (bit 91 clear: no address)")
            .var()
            .m("CCTL")
            .m("IVALL"),
        form("ARRIVES", 0x9b0)
            .ev("probes/09_mbarrier/cp_async_mbarrier_arrive; survey ARRIVES 0x9b0")
            .var()
            .hide(91, 1, 1)
            .m("LDGSTSBAR")
            .m("64")
            .hide(73, 3, 5)
            .mf(70, 2, &[(0, ""), (1, "ARVCNT"), (2, "TRANSCNT")])
            .op(syncs_addr()),
        form("UBLKCP", 0x3ba)
            .ev("probes/00_abi/cluster_kernel, probes/16_tma_elect; ptxas-facts.md a.3.11; survey UBLKCP 0x3ba; syncsfields.txt")
            .var()
            .uguard()
            .hide(91, 1, 1)
            .mf(73, 2, &[(0, "G.G"), (1, "S.G"), (2, "G.S"), (3, "S.S")])
            .mf(81, 2, &[(0, ""), (1, "LTC64B"), (2, "LTC128B"), (3, "LTC256B")])
            .flag(83, "SEQUENCED")
            .op(memop(PrefixSpec::None, vec![t_u(32)]).n(2))
            .op(memop(PrefixSpec::None, vec![t_u(24)]))
            .op(ugpr(64)),
        form("UTMACCTL", 0x9b9)
            .ev("pyptx/matmul_tma_v33_sm90a; survey UTMACCTL 0x9b9")
            .uguard()
            .var()
            .hide(91, 1, 1)
            .mf(82, 1, &[(0, "IV"), (1, "PF")])
            .op(memop(PrefixSpec::None, vec![t_u(24)])),
        form("UTMACMDFLUSH", 0x9b7)
            .ev("pyptx/fa_ws_pingpong_sm90a, probes/16_tma_elect; survey UTMACMDFLUSH 0x9b7")
            .uguard()
            .var(),
    ];
    // UTMALDG/UTMASTG: dimension [81:79], IM2COL 82; MULTICAST (opcode 0x3b4, bit 75) adds the
    // CTA mask UR [69:64].
    for mc in [false, true] {
        let f = form("UTMALDG", if mc { 0x3b4 } else { 0x5b4 })
            .ev("pyptx/fa_ws_pingpong_sm90a, probes/16_tma_elect/tensor2d_multicast; survey UTMALDG 0x3b4/0x5b4; syncsfields.txt")
            .var()
            .uguard()
            .hide(91, 1, 1)
            .mf(79, 3, TMA_DIM);
        // Bit 82 (IM2COL) decodes only in the multicast form.
        let f = if mc {
            f.flag(82, "IM2COL").m("MULTICAST").hide(75, 1, 1)
        } else {
            f
        };
        let f = f
            .op(memop(PrefixSpec::None, vec![t_u(32)]))
            .op(memop(PrefixSpec::None, vec![t_u(24)]));
        v.push(if mc { f.op(ugpr(64)) } else { f });
    }
    v.push(
        form("UTMASTG", 0x3b5)
            .ev("pyptx/fa_ws_pingpong_sm90a; survey UTMASTG 0x3b5; syncsfields.txt")
            .var()
            .uguard()
            .hide(91, 1, 1)
            .mf(79, 3, TMA_DIM)
            .flag(82, "IM2COL")
            .op(memop(PrefixSpec::None, vec![t_u(32)]))
            .op(memop(PrefixSpec::None, vec![t_u(24)])),
    );
    // LDGMC: multimem load-reduce (integer 0x9a4: op [89:87], type [75:73]; float 0x9a5: op
    // [89:88], type [76:73] | 87 << 4). Always .STRONG.SYS ([80:77] = 10).
    for wide in [false, true] {
        let f = form("LDGMC", 0x9a4)
            .ev("probes/12_multimem/ldred_*; ptxas-facts.md a.1 #33-34; survey LDGMC 0x9a4; probes/12_multimem/opfield.txt")
            .var()
            .hide(91, 1, 1)
            .hide(70, 1, u64::from(wide))
            .m("E")
            .hide(72, 1, 1)
            .mf(87, 3, LDGMC_IOP)
            .mf(73, 3, LDGMC_ITYPE)
            .m("STRONG.SYS")
            .hide(77, 4, 10)
            .op(gpr(16).def().nby(2, &[(2, 2), (3, 2)]))
            .op(ldgmc_addr(wide));
        v.push(f);
        let f = form("LDGMC", 0x9a5)
            .ev("probes/12_multimem/ldred_*_f*; ptxas-facts.md a.1 #34; survey LDGMC 0x9a5")
            .var()
            .hide(91, 1, 1)
            .hide(70, 1, u64::from(wide))
            .m("E")
            .hide(72, 1, 1)
            .mf(88, 2, LDGMC_FOP)
            .mf2(Field::split((73, 4), (87, 1)), LDGMC_FTYPE)
            .m("STRONG.SYS")
            .hide(77, 4, 10)
            .op(gpr(16)
                .def()
                .nby(2, &[(1, 2), (2, 4), (4, 2), (5, 4), (13, 2), (14, 4)]))
            .op(ldgmc_addr(wide));
        v.push(f);
    }
    v
}
