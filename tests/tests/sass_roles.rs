//! Operand roles and latency classes: register counts of the common forms, and a check against
//! ptxas: any instruction ptxas gives a write scoreboard must be variable-latency in the tables.

use ptxc::target::sm90a::tables::all;
use ptxc::target::sm90a::{
    Access, Latency, decode_with_form, ops, parse_instr, parse_listing, r, ur, word_accesses,
};
use ptxc_tests::sass::{listings, sass_probe_ptx};
use ptxc_tests::{accepted_corpus, probes};

fn acc(text: &str) -> Vec<Access> {
    let i = parse_instr(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    i.accesses().unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn has(a: &[Access], reg: &str, count: u8, write: bool) -> bool {
    a.iter()
        .any(|x| x.reg.to_string() == reg && x.count == count && x.write == write)
}

#[test]
fn register_counts_and_roles() {
    let a = acc("IMAD.WIDE.U32 R2, R4, R6, R8");
    assert!(has(&a, "R2", 2, true), "{a:?}");
    assert!(has(&a, "R4", 1, false) && has(&a, "R6", 1, false) && has(&a, "R8", 2, false));
    assert_eq!(a.iter().filter(|x| x.write).count(), 1);

    let a = acc("LDG.E.128 R4, desc[UR6][R2.64+0x10]");
    assert!(has(&a, "R4", 4, true), "{a:?}");
    assert!(has(&a, "UR6", 2, false) && has(&a, "R2", 2, false), "{a:?}");

    let a = acc("STG.E.64 desc[UR4][R2.64], R6");
    assert!(has(&a, "R6", 2, false) && has(&a, "R2", 2, false), "{a:?}");
    assert!(a.iter().all(|x| !x.write), "{a:?}");

    let a = acc("@!P1 IADD3 R5, P0, R2, -R3, RZ");
    assert!(has(&a, "R5", 1, true) && has(&a, "P0", 1, true));
    assert!(has(&a, "P1", 1, false), "guard is read: {a:?}");
    assert!(!a.iter().any(|x| x.reg.to_string() == "RZ"));

    let a = acc("DFMA R10, R6, R8, R6");
    assert!(has(&a, "R10", 2, true) && has(&a, "R6", 2, false) && has(&a, "R8", 2, false));

    let a = acc("LDS.64 R2, [R5+UR4+0x10]");
    assert!(has(&a, "R2", 2, true) && has(&a, "R5", 1, false) && has(&a, "UR4", 1, false));

    let a = acc("ISETP.GE.U32.AND.EX P0, PT, R12, R5, PT, P1");
    assert!(has(&a, "P0", 1, true) && has(&a, "P1", 1, false));

    let a = acc("UIADD3 UR4, UP0, UR5, 0x10, URZ");
    assert!(has(&a, "UR4", 1, true) && has(&a, "UP0", 1, true) && has(&a, "UR5", 1, false));

    let a = acc("SYNCS.EXCH.64 URZ, [UR6], UR4");
    assert!(
        has(&a, "UR4", 2, false) && has(&a, "UR6", 1, false),
        "{a:?}"
    );

    let a = acc("HGMMA.64x128x16.F32 R24, gdesc[UR40], R24, gsb0");
    assert!(
        has(&a, "R24", 64, true) && has(&a, "R24", 64, false),
        "{a:?}"
    );
}

#[test]
fn latency_classes() {
    let lat = |t: &str| parse_instr(t).unwrap().latency().unwrap();
    assert_eq!(lat("IADD3 R1, R2, R3, RZ"), Latency::Fixed);
    assert_eq!(lat("FFMA R1, R2, R3, R4"), Latency::Fixed);
    assert_eq!(lat("LDG.E R1, desc[UR4][R2.64]"), Latency::Variable);
    assert_eq!(lat("S2R R0, SR_TID.X"), Latency::Variable);
    assert_eq!(lat("MUFU.RCP R1, R2"), Latency::Variable);
    assert_eq!(
        ops::ldg(ops::Width::B32, r(1), ur(4), r(2), 0)
            .latency()
            .unwrap(),
        Latency::Variable
    );
}

/// ptxas sets a write scoreboard only on variable-latency instructions: every such instruction
/// in its output for the corpus and the cluster probes must be `Latency::Variable` here.
#[test]
fn write_scoreboards_only_on_variable_latency_forms() {
    let mut files = accepted_corpus();
    files.extend(probes(0..=20));
    files.extend(sass_probe_ptx());
    let Some(ls) = listings(&files) else {
        return;
    };
    let mut wrong = std::collections::BTreeMap::new();
    let mut n = 0;
    for (_, l) in &ls {
        for i in parse_listing(l) {
            let w = i.words.expect("words");
            let wbar = (w[1] >> 46) & 7;
            let (f, _) = decode_with_form(w, i.addr).expect("decodes");
            let (lat, _) = word_accesses(w).expect("decodes");
            assert_eq!(lat, f.latency);
            if wbar != 7 {
                n += 1;
                if f.latency != Latency::Variable {
                    wrong.entry(f.title()).or_insert_with(|| i.text.clone());
                }
            }
        }
    }
    assert!(n > 1000, "only {n} instructions with a write scoreboard");
    assert!(
        wrong.is_empty(),
        "fixed-latency forms with a write scoreboard in ptxas output: {wrong:#?}"
    );
    assert!(all().iter().any(|f| f.latency == Latency::Fixed));
}

/// The control-word rules the scoreboard pass must follow, and role queries that ignore the
/// control word (it may not be final when the pass asks).
#[test]
fn ctrl_rules_and_queries_without_final_ctrl() {
    use ptxc::target::sm90a::{Ctrl, CtrlRules, Width, encode};
    let rules = |t: &str| {
        let i = parse_instr(t).unwrap_or_else(|e| panic!("{t}: {e}"));
        i.ctrl_rules().unwrap_or_else(|e| panic!("{t}: {e}"))
    };
    let all_ok = CtrlRules {
        write_scoreboard: true,
        read_scoreboard: true,
        wait_mask: true,
    };
    assert_eq!(rules("LDG.E R2, desc[UR4][R2.64]"), all_ok);
    assert_eq!(rules("IADD3 R1, R2, R3, RZ"), all_ok);
    let store = rules("STG.E desc[UR4][R2.64], R5");
    assert!(!store.write_scoreboard && store.read_scoreboard && store.wait_mask);
    let bra = rules("BRA 0x40");
    assert!(!bra.write_scoreboard && !bra.read_scoreboard && bra.wait_mask);
    let fence = rules("FENCE.VIEW.ASYNC.S");
    assert!(fence.write_scoreboard && !fence.read_scoreboard);
    assert!(!rules("CCTL.IVALL").read_scoreboard);
    assert!(rules("CCTL.IV [R2]").read_scoreboard);
    assert!(!rules("WARPGROUP.DEPBAR.LE gsb0, 0x0").wait_mask);

    // A store with a write scoreboard: the encoder refuses it, the role queries still answer.
    let mut st = ops::stg(Width::B32, ur(4), r(2), 0, r(5));
    st.ctrl = Ctrl {
        wbar: 0,
        ..Ctrl::default()
    };
    let e = encode(&st).expect_err("STG with a write scoreboard");
    assert!(e.to_string().contains("write scoreboard"), "{e}");
    assert_eq!(st.latency().unwrap(), Latency::Variable);
    assert_eq!(st.accesses().unwrap().len(), 3, "{:?}", st.accesses());
    st.ctrl.wbar = 7;
    st.ctrl.rbar = 0;
    assert!(encode(&st).is_ok());
}
