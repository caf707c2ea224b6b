//! `EIATTR_MBARRIER_INSTR_OFFSETS` (0x39) and `EIATTR_NUM_MBARRIERS` (0x38): for every probe and
//! corpus file whose ptxas SASS has `SYNCS`/`ARRIVES` and that ptxc compiles, ptxc's records
//! describe its own code as ptxas's describe ptxas's (the rule: `ptxc::emit::build`,
//! `mbarrier_entry`; docs/cubin.md, "mbarrier records").
//!
//! Where ptxc's `.text` is ptxas's, the records must be equal byte for byte. Elsewhere the code
//! differs (offsets, register allocation, loops ptxas rotates), so the entries are checked
//! against the instructions they sit on: the same (instruction, kind, stride, top byte) set as
//! ptxas's, no mbarrier instruction left without an entry that ptxas gives one, each entry's GPR,
//! uniform register and immediate those of its instruction's address, and NUM_MBARRIERS equal.

use ptxc::emit::model::Function;
use ptxc::target::sm90a::{self as sass, MemTerm, OperandKind, RegFile};
use ptxc_tests::{corpus, probes, ptxas};
use runtime_abi::eiattr::Record;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn instr_at(f: &Function, offset: u32) -> sass::Instr {
    let at = offset as usize;
    let b = &f.code[at..at + 16];
    let lo = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
    let hi = u64::from_le_bytes(b[8..].try_into().expect("8 bytes"));
    sass::decode_at([lo, hi], u64::from(offset)).expect("the instruction decodes")
}

/// `(gpr, imm, ureg)` of the instruction's memory operand, with ptxas's defaults for a missing
/// part (0xff, 0, 0x3f).
fn address(i: &sass::Instr) -> (u32, u32, u8) {
    let m = i
        .operands
        .iter()
        .find_map(|o| match &o.kind {
            OperandKind::Mem(m) => Some(m),
            _ => None,
        })
        .unwrap_or_else(|| panic!("`{i}` has no memory operand"));
    let (mut gpr, mut imm, mut ureg) = (0xff, 0, 0x3f);
    for t in &m.terms {
        match t {
            MemTerm::Reg(r, _) if r.file == RegFile::Gpr => gpr = u32::from(r.num),
            MemTerm::Reg(r, _) if r.file == RegFile::Ugpr => ureg = r.num,
            MemTerm::Imm(v) => imm = *v as u32,
            MemTerm::Reg(..) => panic!("`{i}`: unexpected address register"),
        }
    }
    (gpr, imm, ureg)
}

fn op_name(i: &sass::Instr) -> String {
    std::iter::once(i.mnemonic.to_string())
        .chain(i.mods.iter().map(|m| m.to_string()))
        .collect::<Vec<_>>()
        .join(".")
}

/// The 0x39 and 0x38 records of a function, encoded as the cubin holds them.
fn records(f: &Function) -> (Vec<u8>, Option<Vec<u8>>) {
    let entries = if f.attrs.mbarrier_instrs.is_empty() {
        Vec::new()
    } else {
        Record::MbarrierInstrOffsets(f.attrs.mbarrier_instrs.clone()).encode()
    };
    (
        entries,
        f.attrs
            .num_mbarriers
            .map(|n| Record::NumMbarriers(n).encode()),
    )
}

fn uses_mbarriers(f: &Function) -> bool {
    (0..f.code.len() / 16).any(|k| {
        let m = instr_at(f, (k * 16) as u32).mnemonic;
        m == "SYNCS" || m == "ARRIVES"
    })
}

/// Checks one file; `Ok(true)` when the code (so the records) was byte-identical.
fn check(path: &Path) -> Result<Option<bool>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let Some(res) = ptxas(path, &[]) else {
        return Ok(None);
    };
    let Some(theirs) = res.cubin else {
        return Ok(None);
    };
    let theirs = ptxc::emit::read(&theirs).map_err(|e| format!("{e:?}"))?;
    if !theirs.functions.iter().any(uses_mbarriers) {
        return Ok(None);
    }
    let Ok((_, ours)) = ptxc_tests::compile_to_cubin(&path.display().to_string(), &text) else {
        return Ok(None);
    };
    let mut identical = true;
    for t in theirs.functions.iter().filter(|f| uses_mbarriers(f)) {
        let o = ours
            .functions
            .iter()
            .find(|o| o.name == t.name)
            .ok_or_else(|| format!("`{}`: not in ptxc's cubin", t.name))?;
        let (ours_n, theirs_n) = (o.attrs.num_mbarriers, t.attrs.num_mbarriers);
        if ours_n != theirs_n {
            return Err(format!(
                "`{}`: NUM_MBARRIERS {ours_n:?}, ptxas {theirs_n:?}",
                t.name
            ));
        }
        if o.code == t.code {
            if records(o) != records(t) {
                return Err(format!(
                    "`{}`: same code, records differ: {:x?} vs ptxas {:x?}",
                    t.name,
                    records(o),
                    records(t)
                ));
            }
            continue;
        }
        identical = false;
        // ptxas may copy an instruction (a rotated loop: 09_mbarrier/try_wait_loop has two
        // TRYWAIT entries where ptxc has one), so compare what the entries say, not how many.
        let described = |f: &Function| -> BTreeSet<(String, u8, u8, u8)> {
            f.attrs
                .mbarrier_instrs
                .iter()
                .map(|m| (op_name(&instr_at(f, m.offset)), m.kind, m.stride, m.high))
                .collect()
        };
        let undescribed = |f: &Function| -> BTreeSet<String> {
            (0..f.code.len() / 16)
                .map(|k| (k * 16) as u32)
                .filter(|&at| !f.attrs.mbarrier_instrs.iter().any(|m| m.offset == at))
                .map(|at| instr_at(f, at))
                .filter(|i| i.mnemonic == "SYNCS" || i.mnemonic == "ARRIVES")
                .map(|i| op_name(&i))
                .collect()
        };
        if described(o) != described(t) || !undescribed(o).is_subset(&undescribed(t)) {
            return Err(format!(
                "`{}`: entries on {:?} (none on {:?}); ptxas on {:?} (none on {:?})",
                t.name,
                described(o),
                undescribed(o),
                described(t),
                undescribed(t)
            ));
        }
        for a in &o.attrs.mbarrier_instrs {
            let ia = instr_at(o, a.offset);
            let (gpr, imm, ureg) = address(&ia);
            if (a.reg, a.imm, a.ureg) != (gpr, imm, ureg) {
                return Err(format!(
                    "`{}`: entry {a:x?} does not describe the address of `{ia}`",
                    t.name
                ));
            }
        }
    }
    Ok(Some(identical))
}

#[test]
fn mbarrier_records_match_ptxas() {
    let mut files: Vec<PathBuf> = probes(0..=99);
    files.extend(corpus().into_iter().filter(|f| f.accepted).map(|f| f.path));
    let (mut checked, mut exact) = (0, 0);
    let mut bad = Vec::new();
    for f in &files {
        match check(f) {
            Ok(Some(same)) => {
                checked += 1;
                exact += usize::from(same);
            }
            Ok(None) => {}
            Err(e) => bad.push(format!("{}: {e}", f.display())),
        }
    }
    eprintln!(
        "mbarrier-records: {checked} files with mbarrier instructions compiled, \
         {exact} with ptxas's code and byte-identical records"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(checked >= CHECKED_FLOOR, "{checked} < {CHECKED_FLOOR}");
}

/// Files checked (measured: 47: the 09_mbarrier probes ptxc lowers, their 14_arch_compare
/// copies, 00_abi/cluster_kernel, 15_uniform_datapath/d_addr_of_mbarrier and corpus files such
/// as pyptx mbarrier_full).
const CHECKED_FLOOR: usize = 47;

/// The entry kinds of a kernel, and its NUM_MBARRIERS.
type Kinds = (Vec<u8>, Option<u16>);

/// The kinds that follow the PTX operation rather than the SASS: `test_wait` 5 and
/// `test_wait.parity` 6, `try_wait` 9 and `.parity` 0xa (same `SYNCS.PHASECHK`), and
/// `arrive.expect_tx` with no entry at all.
#[test]
fn entry_kind_follows_the_ptx_operation() {
    let kernel = |body: &str| {
        format!(
            ".version 8.8\n.target sm_90a\n.address_size 64\n.shared .align 8 .b64 bar;\n\
             .visible .entry k(.param .u64 p, .param .u32 c)\n{{\n\
             .reg .b64 %rd<8>; .reg .b32 %r<8>; .reg .pred %p<4>;\n\
             ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [c]; ld.param.u64 %rd2, [p];\n\
             {body}\n\
             selp.u32 %r2, 1, 0, %p1; st.global.u32 [%rd1], %r2;\nret;\n}}\n"
        )
    };
    let kinds = |body: &str| -> Kinds {
        let (_, c) = ptxc_tests::compile_to_cubin("k.ptx", &kernel(body)).expect("compiles");
        let f = &c.functions[0];
        (
            f.attrs.mbarrier_instrs.iter().map(|m| m.kind).collect(),
            f.attrs.num_mbarriers,
        )
    };
    let cases: &[(&str, Kinds)] = &[
        (
            "mbarrier.init.shared::cta.b64 [bar], %r1; setp.eq.u32 %p1, %r1, 0;",
            (vec![0], Some(1)),
        ),
        (
            "mbarrier.test_wait.shared::cta.b64 %p1, [bar], %rd2;",
            (vec![5], Some(0)),
        ),
        (
            "mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], %r1;",
            (vec![6], Some(0)),
        ),
        (
            "mbarrier.try_wait.shared::cta.b64 %p1, [bar], %rd2;",
            (vec![9], Some(0)),
        ),
        (
            "mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], %r1;",
            (vec![0xa], Some(0)),
        ),
        (
            "mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [bar], %r1; \
             st.global.u64 [%rd1], %rd3; setp.eq.u32 %p1, %r1, 0;",
            (vec![], None),
        ),
        (
            "mbarrier.init.shared::cta.b64 [bar], %r1; mbarrier.init.shared::cta.b64 [bar], 2; \
             mbarrier.inval.shared::cta.b64 [bar]; setp.eq.u32 %p1, %r1, 0;",
            (vec![0, 0, 8], Some(2)),
        ),
    ];
    for (body, want) in cases {
        assert_eq!(&kinds(body), want, "{body}");
    }
}
