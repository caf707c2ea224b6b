//! Tensor maps, TMA copies, mbarriers on per-thread addresses and fp8/f16/bf16 wgmma, end to
//! end (frontend → lower → encode), on the probes `tests/sass-probes/ptx/{tensormap,
//! mbarrier_vector,wgmma,hgmma}.ptx`:
//!
//! 1. ptxc's instructions of each construct are the recipe read off ptxas's output for the
//!    probe (listed below, with the normalisation of [`norm`]);
//! 2. when the reference tools are there, ptxas's instructions of the same kinds are the same
//!    set (ptxas schedules, merges and pipelines differently, so sets are compared, not
//!    sequences; ptxc's extra serialisation of wgmma is left out).

use ptxc::diag::SourceFile;
use ptxc_tests::{cuobjdump_sass, ptxas, workspace_root};
use std::collections::BTreeSet;

fn probe(name: &str) -> (std::path::PathBuf, String) {
    let p = workspace_root().join("tests/sass-probes/ptx").join(name);
    let text = std::fs::read_to_string(&p).expect("the probe exists");
    (p, text)
}

/// ptxc's instruction texts of every kernel of the probe.
fn ptxc_lines(name: &str, text: &str) -> Vec<String> {
    let src = SourceFile::new(name.to_string(), text.to_string());
    let (encoded, _, _) = ptxc_tests::compile_pipeline(&src)
        .unwrap_or_else(|d| panic!("{name}: {}", src.render(&d[0])));
    encoded.iter().flat_map(ptxc_tests::listing_lines).collect()
}

/// ptxas's instruction texts (`None` without the reference tools).
fn ptxas_lines(path: &std::path::Path) -> Option<Vec<String>> {
    let cubin = ptxas(path, &[])?.cubin.expect("ptxas accepts the probe");
    let listing = cuobjdump_sass(&cubin)?;
    Some(
        listing
            .lines()
            .filter_map(|l| l.split("*/").nth(1))
            .map(|l| l.split(';').next().unwrap_or("").trim().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
    )
}

/// An instruction with register numbers dropped and memory bases left out (`LDS R0,
/// [UR4+0x8]` → `LDS R, [+0x8]`), guards and `gsb0` dropped; `None` unless its mnemonic is in
/// `keep`.
fn norm(line: &str, keep: &[&str]) -> Option<String> {
    let line = match line.strip_prefix('@') {
        Some(r) => r.split_once(' ')?.1,
        None => line,
    };
    let (mn, ops) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
    if !keep.contains(&mn.split('.').next().unwrap_or(mn)) {
        return None;
    }
    let ops: Vec<String> = ops
        .split(", ")
        .map(str::trim)
        .filter(|o| !o.is_empty() && *o != "gsb0")
        .map(|o| {
            if let (Some(a), Some(b)) = (o.find('['), o.rfind(']')) {
                let offsets: Vec<&str> = o[a + 1..b]
                    .split('+')
                    .filter(|t| t.starts_with("0x") || t.starts_with("-0x"))
                    .collect();
                let inner = if offsets.is_empty() {
                    String::new()
                } else {
                    format!("+{}", offsets.join("+"))
                };
                format!("{}[{inner}]{}", &o[..a], &o[b + 1..])
            } else {
                let bare = o.trim_start_matches(['!', '-']);
                let is_reg = ["UR", "UP", "R", "P"].iter().any(|p| {
                    bare.strip_prefix(p)
                        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                });
                if is_reg {
                    o.trim_end_matches(|c: char| c.is_ascii_digit()).to_string()
                } else {
                    o.to_string()
                }
            }
        })
        .collect();
    Some(format!("{mn} {}", ops.join(", ")).trim().to_string())
}

fn set(lines: &[String], keep: &[&str]) -> BTreeSet<String> {
    lines.iter().filter_map(|l| norm(l, keep)).collect()
}

fn check(file: &str, keep: &[&str], want: &[&str]) {
    let (path, text) = probe(file);
    let ours = set(&ptxc_lines(file, &text), keep);
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    assert_eq!(ours, want, "{file}: ptxc's instructions");
    if let Some(theirs) = ptxas_lines(&path) {
        assert_eq!(set(&theirs, keep), want, "{file}: ptxas's instructions");
    }
}

#[test]
fn norm_drops_registers_and_bases() {
    let k = ["LDS", "LOP3", "SYNCS", "QGMMA"];
    assert_eq!(norm("LDS R0, [UR4+0x8]", &k).unwrap(), "LDS R, [+0x8]");
    assert_eq!(
        norm("@P1 LDS R12, [R8+0x1c]", &k).unwrap(),
        "LDS R, [+0x1c]"
    );
    assert_eq!(
        norm("LOP3.LUT R10, R4, 0x480, R11, 0xd8, !PT", &k).unwrap(),
        "LOP3.LUT R, R, 0x480, R, 0xd8, !PT"
    );
    assert_eq!(
        norm("SYNCS.CCTL.IV [R0+URZ]", &k).unwrap(),
        "SYNCS.CCTL.IV []"
    );
    assert_eq!(
        norm(
            "QGMMA.64x64x32.F32.E5M2.E5M2 R24, gdesc[UR4], R24, UP0, gsb0",
            &k
        )
        .unwrap(),
        "QGMMA.64x64x32.F32.E5M2.E5M2 R, gdesc[], R, UP"
    );
}

/// `replace_consts`: each field's word, mask and value, ptxas's 0xd8 form for constants
/// (probe: `rank … 4` → `LOP3.LUT R0, R0, 0x40, R3, 0xd8, !PT` with R3 = 0x70), swizzle also
/// clearing bit 22.
#[test]
fn tensormap_replace_with_constants() {
    let (_, text) = probe("tensormap.ptx");
    let only = text
        .split(".visible .entry")
        .find(|k| k.starts_with(" replace_consts"))
        .expect("the kernel");
    let head = text.split(".visible .entry").next().expect("the header");
    let file = format!("{head}.visible .entry{only}");
    let dir = ptxc_tests::tempdir();
    let path = dir.join("replace_consts.ptx");
    std::fs::write(&path, &file).unwrap();
    let keep = ["LOP3", "STS"];
    let want: BTreeSet<String> = [
        "LOP3.LUT R, R, 0x40, R, 0xd8, !PT",
        "LOP3.LUT R, R, 0x60000, R, 0xd8, !PT",
        "LOP3.LUT R, R, 0x80, R, 0xd8, !PT",
        "LOP3.LUT R, R, 0x480, R, 0xd8, !PT",
        "LOP3.LUT R, R, 0x1000, R, 0xd8, !PT",
        "LOP3.LUT R, R, 0x6000, R, 0xd8, !PT",
        "LOP3.LUT R, R, 0x400000, RZ, 0xb8, !PT",
        "LOP3.LUT R, R, 0x6000, RZ, 0xb8, !PT",
        "LOP3.LUT R, R, 0x8000, R, 0xd8, !PT",
        "STS [+0x8], R",
        "STS [+0xb8], R",
        "STS [+0x128], R",
        "STS [+0x1b4], R",
        "STS [+0x208], R",
        "STS [+0x288], R",
        "STS [+0x308], R",
        "STS [+0x388], R",
        "STS [+0x408], R",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let ours = set(&ptxc_lines("replace_consts.ptx", &file), &keep);
    assert_eq!(ours, want, "ptxc");
    if let Some(theirs) = ptxas_lines(&path) {
        assert_eq!(set(&theirs, &keep), want, "ptxas");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Publishing and using a tensor map: the per-lane copy, the acquire, TMA load and store.
#[test]
fn tensormap_publish_and_tma_copies() {
    check(
        "tensormap.ptx",
        &[
            "ATOMG",
            "DEPBAR",
            "UTMACCTL",
            "UTMACMDFLUSH",
            "UTMALDG",
            "UTMASTG",
            "ELECT",
        ],
        &[
            "ATOMG.E.EXCH.STRONG.GPU PT, RZ, [], R",
            "DEPBAR {5,4,3,2,1,0}",
            "DEPBAR.LE SB0, 0x0",
            "ELECT P, URZ, PT",
            "UTMACCTL.IV []",
            "UTMACMDFLUSH",
            "UTMALDG.2D [], []",
            "UTMASTG.2D [], []",
        ],
    );
}

/// mbarrier operations on a per-thread address: `[R+URZ]`.
#[test]
fn mbarrier_on_a_per_thread_address() {
    check(
        "mbarrier_vector.ptx",
        &["SYNCS"],
        &[
            "SYNCS.ARRIVE.TRANS64 RZ, [], R",
            "SYNCS.ARRIVE.TRANS64.A1T0 R, [], RZ",
            "SYNCS.CCTL.IV []",
            "SYNCS.PHASECHK.TRANS64.TRYWAIT P, [], R",
        ],
    );
}

/// fp8 wgmma: QGMMA with the scale-d predicate, negated inputs, a zero accumulator.
#[test]
fn wgmma_fp8_is_qgmma() {
    let keep = ["QGMMA"];
    let want = [
        "QGMMA.64x32x32.F32.E4M3.E5M2 R, gdesc[].negA, RZ, !UPT",
        "QGMMA.64x64x32.F32.E5M2.E5M2 R, gdesc[], R, UP",
        "QGMMA.64x64x32.F32.E5M2.E5M2 R, gdesc[].negB, R",
    ];
    check("wgmma.ptx", &keep, &want);
    // Every QGMMA is waited for before anything else runs (ptxc serializes).
    let (_, text) = probe("wgmma.ptx");
    let lines = ptxc_lines("wgmma.ptx", &text);
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("QGMMA") {
            assert!(l.ends_with("gsb0"), "{l}");
            assert_eq!(lines[i + 1], "WARPGROUP.DEPBAR.LE gsb0, 0x0");
            assert_eq!(lines[i - 1], "WARPGROUP.ARRIVE");
        }
    }
}

/// f16/bf16 wgmma: HGMMA with A from a descriptor or from registers, the scale-d predicate,
/// negated and transposed inputs, an f16 accumulator set to zero (probe
/// `tests/sass-probes/ptx/hgmma.ptx`; ptxas 13.1: `HGMMA.64x64x16.F32 R24, R60,
/// gdesc[UR4].tnspB, R24, UP0`, `HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8].negA.tnspA, R24`, …).
#[test]
fn wgmma_f16_is_hgmma() {
    let keep = ["HGMMA"];
    let want = [
        "HGMMA.64x64x16.F16 R, gdesc[], RZ, !UPT",
        "HGMMA.64x64x16.F32 R, gdesc[], R, UP",
        "HGMMA.64x64x16.F32 R, gdesc[].negB.tnspB, R",
        "HGMMA.64x64x16.F32 R, R, gdesc[].tnspB, R, UP",
        "HGMMA.64x64x16.F32.BF16 R, -R, gdesc[].negB, R",
        "HGMMA.64x64x16.F32.BF16 R, gdesc[].negA.tnspA, R",
    ];
    check("hgmma.ptx", &keep, &want);
    // Every HGMMA is waited for before anything else runs (ptxc serializes); A in registers
    // is a tuple of four.
    let (_, text) = probe("hgmma.ptx");
    let lines = ptxc_lines("hgmma.ptx", &text);
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("HGMMA") {
            assert!(l.ends_with("gsb0"), "{l}");
            assert_eq!(lines[i + 1], "WARPGROUP.DEPBAR.LE gsb0, 0x0");
            assert_eq!(lines[i - 1], "WARPGROUP.ARRIVE");
        }
    }
}

/// An mbarrier ring indexed by a loop counter (pyptx/fa_ws_pingpong's producer loop): `EXTRA`
/// goes before the loop, `BODY` after the arrive on the ring's current barrier.
const RING: &str = r".version 8.7
.target sm_90a
.address_size 64

.visible .entry ring(.param .u32 n)
{
  .reg .b32 %r<20>; .reg .pred %p<4>;
  .shared .align 8 .b64 bars[2];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, bars;
EXTRA
  mbarrier.init.shared.b64 [%r2], 1;
  mbarrier.init.shared.b64 [%r2+8], 1;
  mov.b32 %r3, 0;
  mov.b32 %r4, 0;
$L_loop:
  and.b32 %r5, %r3, 1;
  shl.b32 %r6, %r5, 3;
  add.s32 %r7, %r2, %r6;
  mbarrier.arrive.expect_tx.shared.b64 _, [%r7], 16;
BODY
  ret;
}
";

/// The ring of [`RING`] with a counter every thread increments: the counter is warp-uniform,
/// and ptxc keeps it in a uniform register through the loop (`UIADD3 UR…, 0x1`, the ring's
/// address `[UR]`), as ptxas does (`ULEA UR7, UR5, UR6, 0x3; SYNCS.ARRIVE.TRANS64 RZ, [UR7],
/// R3`); the phase stays in a general register, as in ptxas's code
/// (`lower/isel/loop_uniform.rs`).
#[test]
fn mbarrier_ring_in_a_loop_is_uniform() {
    let text = &RING.replace("EXTRA\n", "").replace(
        "BODY",
        "  {
  .reg .pred complete;
  waitLoop:
  mbarrier.try_wait.parity.shared.b64 complete, [%r7], %r4;
  @!complete bra.uni waitLoop;
  }
  xor.b32 %r4, %r4, %r5;
  add.s32 %r3, %r3, 1;
  setp.lt.s32 %p1, %r3, %r1;
  @%p1 bra $L_loop;",
    );
    let lines = ptxc_lines("ring.ptx", text);
    let on_ring: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("SYNCS.ARRIVE") || l.contains("TRYWAIT"))
        .collect();
    // One arrive and two waits: the spin loop's first `TRYWAIT` is peeled into line, the
    // retry loop after the last block (`passes/peel_wait.rs`, as ptxas does).
    let count = |op: &str| on_ring.iter().filter(|l| l.contains(op)).count();
    assert_eq!(
        (count("SYNCS.ARRIVE"), count("TRYWAIT")),
        (1, 2),
        "{lines:#?}"
    );
    for l in &on_ring {
        assert!(l.contains(", [UR") && !l.contains("+URZ]"), "{l}");
    }
    // The counter's increment is uniform, no `R2UR` copies it, and the phase stays per thread.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("UIADD3 UR") && l.ends_with(", 0x1, URZ")),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.contains("R2UR")), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("LOP3.LUT R") && l.contains("0x3c")),
        "{lines:#?}"
    );
    // The loop's compare reads the counter's uniform register itself, its operands exchanged
    // (ptxas: `ISETP.LE.AND P0, PT, R4, UR4, PT` on the same loop in
    // `docs/passes/examples/shfl_broadcast.ptx`), not a `MOV R, UR` copy
    // (`lower/isel/ur_operands.rs`).
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ISETP.GT.AND P") && l.contains(", UR")),
        "{lines:#?}"
    );
}

/// The ring of [`RING`] in the branch of a `shfl.sync.idx` broadcast of the warp's number
/// (pyptx `fa_ws_pingpong`'s warp-specialised roles): every thread of the warp takes the same
/// way, so the counter is still warp-uniform and kept in a uniform register, as ptxas 13.1
/// does on `docs/passes/examples/shfl_broadcast.ptx` (`UIADD3 UR4, UR4, 0x1, URZ; ULEA UR7,
/// UR5, UR6, 0x3; SYNCS.ARRIVE.TRANS64 RZ, [UR7], R3`). A partial member mask, a lane from
/// `%tid` or a split warp (`c` = `0x1c1f`) make the branch divergent again, and the ring's
/// address per thread (`[R+URZ]`).
#[test]
fn mbarrier_ring_under_a_shfl_broadcast_branch_is_uniform() {
    let text =
        std::fs::read_to_string(workspace_root().join("docs/passes/examples/shfl_broadcast.ptx"))
            .expect("the probe exists");
    let shfl = "shfl.sync.idx.b32 %r11, %r10, 0, 31, -1;";
    assert!(text.contains(shfl));
    let arrive = |lines: &[String]| -> String {
        let a: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains("SYNCS.ARRIVE"))
            .collect();
        assert_eq!(a.len(), 1, "{lines:#?}");
        a[0].clone()
    };
    let lines = ptxc_lines("shfl_broadcast.ptx", &text);
    let a = arrive(&lines);
    assert!(a.contains(", [UR") && !a.contains("+URZ]"), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("UIADD3 UR") && l.ends_with(", 0x1, URZ")),
        "{lines:#?}"
    );
    if let Some(reference) =
        ptxas_lines(&workspace_root().join("docs/passes/examples/shfl_broadcast.ptx"))
    {
        let a = arrive(&reference);
        assert!(
            a.contains(", [UR") && !a.contains("+URZ]"),
            "{reference:#?}"
        );
    }
    for other in [
        "shfl.sync.idx.b32 %r11, %r10, 0, 31, 0xffff;",
        "shfl.sync.idx.b32 %r11, %r10, %r9, 31, -1;",
        "shfl.sync.idx.b32 %r11, %r10, 0, 0x1c1f, -1;",
    ] {
        let lines = ptxc_lines("shfl_other.ptx", &text.replace(shfl, other));
        assert!(arrive(&lines).contains("+URZ]"), "{other}\n{lines:#?}");
    }
}

/// pyptx `matmul_tma_v33`: the per-thread reads of its uniform twins (pipeline stages, the
/// phase flip) read the `UR` as an ALU operand (`IADD3 R, R, UR, RZ`, `LOP3.LUT R, R, UR, RZ,
/// 0x3c`) where ptxc used to copy it with `MOV R, UR` first (12 copies, 1 136 instructions;
/// `lower/isel/ur_operands.rs`). ptxas 13.1 has no `MOV R, UR` and no `R2UR` there.
#[test]
fn matmul_tma_v33_reads_uniform_twins_as_operands() {
    let path = ptxc_tests::shared_dir().join("corpus/pyptx/pyptx__matmul_tma_v33_sm90a.ptx");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("note: {} is not there; skipped", path.display());
        return;
    };
    let lines = ptxc_lines("matmul_tma_v33.ptx", &text);
    let count = |f: &dyn Fn(&String) -> bool| lines.iter().filter(|l| f(l)).count();
    let copies = count(&|l| l.starts_with("MOV R") && l.contains(", UR"));
    let r2ur = count(&|l| l.contains("R2UR"));
    // The five copies left are of constant twins read in blocks sealed after the read.
    assert!(copies <= 5, "{copies} MOV R, UR\n{lines:#?}");
    assert!(r2ur <= 15, "{r2ur} R2UR");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("LOP3.LUT R") && l.contains(", UR") && l.contains("0x3c")),
        "{lines:#?}"
    );
    assert!(
        count(&|l| l.starts_with("IADD3 R") && l.contains(", UR") && l.ends_with(", RZ")) >= 3,
        "{lines:#?}"
    );
    if let Some(reference) = ptxas_lines(&path) {
        assert!(
            !reference
                .iter()
                .any(|l| l.starts_with("MOV R") && l.contains(", UR"))
        );
        assert!(!reference.iter().any(|l| l.contains("R2UR")));
    }
}

/// The ring of [`RING`] with the counter's increment skipped by
/// some threads (a branch on `%tid`): the counter differs between threads after it, so it is
/// not kept in a uniform register and the ring's address stays per thread (`[R+URZ]`).
#[test]
fn mbarrier_ring_with_a_divergent_counter_is_per_thread() {
    let text = &RING.replace("EXTRA", "  mov.u32 %r9, %tid.x;").replace(
        "BODY",
        "  setp.lt.u32 %p2, %r9, 16;
  @%p2 bra $L_skip;
  add.s32 %r3, %r3, 1;
$L_skip:
  add.s32 %r4, %r4, 1;
  setp.lt.s32 %p1, %r4, %r1;
  @%p1 bra $L_loop;",
    );
    let lines = ptxc_lines("ring_divergent.ptx", text);
    let arrive: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("SYNCS.ARRIVE"))
        .collect();
    assert_eq!(arrive.len(), 1, "{lines:#?}");
    assert!(arrive[0].contains("+URZ]"), "{lines:#?}");
}

/// What ptxc still refuses stays a clear error.
#[test]
fn unsupported_forms_are_errors() {
    let head = ".version 8.7\n.target sm_90a\n.address_size 64\n";
    let k = |body: &str| {
        format!(
            "{head}.visible .entry k(.param .u64 p)\n{{\n.reg .b64 %rd<4>;\n.reg .b32 %r<4>;\n\
             .reg .f32 %f<40>;\nld.param.u64 %rd1, [p];\n{body}\nret;\n}}\n"
        )
    };
    let err = |text: String| {
        let src = SourceFile::new("k.ptx".to_string(), text);
        match ptxc_tests::compile_pipeline(&src) {
            Ok(_) => panic!("ptxc accepted it"),
            Err(d) => src.render(&d[0]),
        }
    };
    let e = err(k(
        "tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd1;",
    ));
    assert!(e.contains("tensormap.replace"), "{e}");
    let e = err(k("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 \
         {%f0,%f1,%f2,%f3}, %rd1, %rd1, 1, 1, 1;"));
    assert!(e.contains("wgmma.mma_async"), "{e}");
    let e = err(k("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 \
         {%f0,%f1,%f2,%f3}, %rd1, %rd1, 1, 1, 1, 2, 0;"));
    assert!(e.contains("0 or 1"), "{e}");
    // An accumulator larger than the kernel's register budget.
    let f32s: Vec<String> = (0..32).map(|i| format!("%f{i}")).collect();
    let e = err(k(&format!(
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{{}}}, %rd1, %rd1, 0, 1, 1, 0, 0;",
        f32s.join(",")
    ))
    .replace("(.param .u64 p)\n", "(.param .u64 p)\n.maxnreg 32\n"));
    assert!(e.contains("32 accumulator registers do not fit"), "{e}");
}

/// A TMA copy under a guard that holds in at most one thread — an `elect.sync` predicate, or
/// its `and` with others — is issued once, without the ELECT loop or a branch (probes of
/// `docs/passes/examples/reconverge/tma_elect.ptx`, the matmul kernels' `@%p53
/// cp.async.bulk.tensor`; ptxas 13.1): the elected predicate alone guards nothing
/// (`elect_only`: `UTMALDG.2D` unguarded), an `and` with it is `VOTEU.ANY UPn, P` and `@UPn`
/// on the copy (`elect_and`, `elect_and_store`), and a coordinate that differs between threads
/// is the one thread's, `@P R2UR` (`elect_and_tid_coord`). The `elect.sync` itself is
/// `ELECT P, URZ, PT` (its lane number is unused), and `elect_only` has none (dead code).
#[test]
fn tma_copy_under_an_elect_guard_is_issued_once() {
    let path = workspace_root().join("docs/passes/examples/reconverge/tma_elect.ptx");
    let text = std::fs::read_to_string(&path).expect("the probe exists");
    let src = SourceFile::new("tma_elect.ptx".to_string(), text);
    let (encoded, _, _) = ptxc_tests::compile_pipeline(&src)
        .unwrap_or_else(|d| panic!("tma_elect.ptx: {}", src.render(&d[0])));
    let mut seen = 0;
    for f in &encoded {
        let lines = ptxc_tests::listing_lines(f);
        let has = |pat: &str| lines.iter().any(|l| l.contains(pat));
        let copy = if f.name == "elect_and_store" {
            "UTMASTG.2D"
        } else {
            "UTMALDG.2D"
        };
        let name = &f.name;
        // No ELECT loop: the only ELECT is the PTX's, and no guarded branch at all.
        assert!(!has("BRA.U.ANY"), "{name}: an ELECT loop\n{lines:#?}");
        assert!(
            !lines
                .iter()
                .any(|l| l.starts_with('@') && l.contains(" BRA")),
            "{name}: a branch around the copy\n{lines:#?}"
        );
        // ptxas drops the ELECT of `elect_only` (its predicate guarded only the copy, issued
        // once anyway) and writes the unused lane number of the others to URZ.
        let elects: Vec<&String> = lines.iter().filter(|l| l.contains("ELECT")).collect();
        assert_eq!(
            elects.len(),
            usize::from(name != "elect_only"),
            "{name}\n{lines:#?}"
        );
        assert!(
            elects.iter().all(|l| l.contains(", URZ, PT")),
            "{name}: the lane number is unused\n{lines:#?}"
        );
        let issue = lines
            .iter()
            .find(|l| l.contains(copy))
            .unwrap_or_else(|| panic!("{name}: no {copy}\n{lines:#?}"));
        if name == "elect_only" {
            assert!(!issue.starts_with('@'), "{name}: {issue}");
            assert!(!has("VOTEU"), "{name}\n{lines:#?}");
        } else {
            assert!(issue.starts_with("@UP"), "{name}: {issue}");
            assert!(has("VOTEU.ANY UP"), "{name}\n{lines:#?}");
        }
        assert_eq!(
            has("R2UR"),
            name == "elect_and_tid_coord",
            "{name}\n{lines:#?}"
        );
        if name == "elect_and_tid_coord" {
            assert!(
                lines
                    .iter()
                    .filter(|l| l.contains("R2UR"))
                    .all(|l| l.starts_with("@P")),
                "{name}: the one thread's coordinate\n{lines:#?}"
            );
        }
        seen += 1;
    }
    assert_eq!(seen, 4);
}

/// `fence.proxy.tensormap::generic.acquire` on a warp-uniform address is one `UTMACCTL.IV`,
/// whatever the guard; only a per-thread address needs the ELECT/R2UR loop (probes `acq_*` of
/// `docs/passes/examples/reconverge/tensormap.ptx`, ptxas 13.1: a parameter plus a `%ctaid`
/// offset under `tid < 32`, `tid == 0` or no guard issues once; a `%tid`-derived address loops).
#[test]
fn tensormap_acquire_of_a_uniform_address_is_issued_once() {
    let path = workspace_root().join("docs/passes/examples/reconverge/tensormap.ptx");
    let text = std::fs::read_to_string(&path).expect("the probe exists");
    let src = SourceFile::new("tensormap.ptx".to_string(), text);
    let (encoded, _, _) = ptxc_tests::compile_pipeline(&src)
        .unwrap_or_else(|d| panic!("tensormap.ptx: {}", src.render(&d[0])));
    let mut seen = 0;
    for f in encoded.iter().filter(|f| f.name.starts_with("acq_")) {
        let lines = ptxc_tests::listing_lines(f);
        let count = |pat: &str| lines.iter().filter(|l| l.contains(pat)).count();
        let name = &f.name;
        assert_eq!(count("UTMACCTL.IV [UR"), 1, "{name}\n{lines:#?}");
        let per_thread = name == "acq_eq0_tid";
        assert_eq!(count("BRA.U.ANY") == 1, per_thread, "{name}\n{lines:#?}");
        assert_eq!(count("ELECT") == 1, per_thread, "{name}\n{lines:#?}");
        assert_eq!(count("R2UR") > 0, per_thread, "{name}\n{lines:#?}");
        seen += 1;
    }
    assert_eq!(seen, 4);
}

/// A kernel whose wgmma descriptors are built from the shared window's base in the loop's body,
/// with a block laid out before the loop header that loops back to it (the shape of pyptx
/// `fa_ws_pingpong`: `$L__BB0_21` before `$L__BB0_2`). `DESC_STEP` in the descriptor's
/// address makes the second kernel's descriptor change from one iteration to the next.
const DESC_LOOP: &str = r".version 8.7
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 smem[];
.visible .entry NAME(.param .u64 out)
{
  .reg .b32 %r<80>; .reg .b64 %rd<10>; .reg .b16 %rs<4>; .reg .pred %p<3>;
  mov.b32 %r1, smem;
  mov.b32 %r2, 0;
  bra.uni L2;
L21:
  add.s32 %r5, %r1, 64;
  st.shared.u32 [%r5], %r10;
  add.s32 %r2, %r2, 1;
L2:
  ld.shared.b8 %rs1, [%r1+196684];
  setp.eq.b16 %p1, %rs1, 0;
  @%p1 bra DONE;
  shl.b32 %r7, %r2, DESC_STEP;
  add.s32 %r8, %r1, %r7;
  add.s32 %r3, %r8, 147456;
  bfe.u32 %r4, %r3, 4, 14;
  cvt.u64.u32 %rd1, %r4;
  or.b64 %rd2, %rd1, 4611686293338849280;
  bfe.u32 %r6, %r1, 4, 14;
  cvt.u64.u32 %rd3, %r6;
  or.b64 %rd4, %rd3, 4611686293372403712;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%r10,%r11,%r12,%r13,%r14,%r15,%r16,%r17,%r18,%r19,%r20,%r21,%r22,%r23,%r24,%r25,%r26,%r27,%r28,%r29,%r30,%r31,%r32,%r33,%r34,%r35,%r36,%r37,%r38,%r39,%r40,%r41}, %rd2, %rd4, 0, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  bra.uni L21;
DONE:
  ld.param.u64 %rd5, [out];
  st.global.u32 [%rd5], %r2;
  ret;
}
";

/// wgmma descriptors built in the loop from values set before it (the shared window's base)
/// are computed in the uniform datapath (`USHF`, `USGXT.U32`, `ULOP3` into the `gdesc` pair),
/// as ptxas 13.1 does for this probe (`USGXT.U32 UR4, UR4, 0xe; ULOP3.LUT UR4, UR4, 0x2000000,
/// …`, no `R2UR`): selection assumes the loop's PHI of the base is the value from before the
/// loop and checks it once the loop is lowered. A descriptor the loop changes (shifted by the
/// loop counter) falls back to the `R2UR`s of per-thread registers, after that check fails.
#[test]
fn wgmma_descriptors_set_before_a_loop_are_uniform() {
    // Loop-invariant: the A descriptor's address is the base plus 0.
    let invariant = DESC_LOOP
        .replace("NAME", "invariant")
        .replace("shl.b32 %r7, %r2, DESC_STEP;", "mov.b32 %r7, 0;");
    let lines = ptxc_lines("desc_loop.ptx", &invariant);
    let has = |l: &[String], pat: &str| l.iter().any(|x| x.contains(pat));
    assert!(!has(&lines, "R2UR"), "{lines:#?}");
    assert!(has(&lines, "USGXT.U32"), "{lines:#?}");
    assert!(!has(&lines, " SGXT"), "the vector copy is dead\n{lines:#?}");
    assert!(has(&lines, "HGMMA.64x64x16.F32"), "{lines:#?}");
    let dir = std::env::temp_dir().join(format!("ptxc-desc-loop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("desc_loop.ptx");
    std::fs::write(&path, &invariant).expect("write the probe");
    if let Some(reference) = ptxas_lines(&path) {
        assert!(!has(&reference, "R2UR"), "{reference:#?}");
        assert!(has(&reference, "USGXT.U32"), "{reference:#?}");
    }

    // The A descriptor's address moves by 16 KiB an iteration; the B descriptor stays uniform.
    let varying = DESC_LOOP
        .replace("NAME", "varying")
        .replace("DESC_STEP", "14");
    let lines = ptxc_lines("desc_loop.ptx", &varying);
    assert!(has(&lines, "R2UR"), "{lines:#?}");
    assert!(has(&lines, "HGMMA.64x64x16.F32"), "{lines:#?}");
}

/// Copies from shared to global memory whose operands are warp-uniform are issued once for the
/// warp, with no `ELECT` loop, as ptxas 13.1 does (`tests/sass-probes/ptx/bulk_store.ptx`): the
/// threads would store the same bytes to the same place. Under a `%tid` guard the copy runs if
/// any thread has it (`VOTEU`); a `%tid`-dependent operand keeps a loop (ptxas's rounds are per
/// distinct value, `R2UR P1, …`; ptxc's per thread, with `ELECT`).
#[test]
fn bulk_stores_of_uniform_operands_are_issued_once() {
    let (path, text) = probe("bulk_store.ptx");
    let src = SourceFile::new("bulk_store.ptx".to_string(), text);
    let (encoded, _, _) = ptxc_tests::compile_pipeline(&src)
        .unwrap_or_else(|d| panic!("bulk_store.ptx: {}", src.render(&d[0])));
    let copy = |l: &String| l.contains("UBLKCP") || l.contains("UTMASTG");
    let theirs = ptxas(&path, &[]).map(|out| {
        let cubin = out.cubin.expect("ptxas accepts the probe");
        cuobjdump_sass(&cubin).expect("cuobjdump reads ptxas's cubin")
    });
    let mut seen = 0;
    for f in &encoded {
        let lines = ptxc_tests::listing_lines(f);
        let name = &f.name;
        let count = |pat: &str| lines.iter().filter(|l| l.contains(pat)).count();
        let per_thread = name.contains("_tid_");
        let guarded = name.ends_with("tid0");
        assert_eq!(
            lines.iter().filter(|l| copy(l)).count(),
            1,
            "{name}\n{lines:#?}"
        );
        assert_eq!(
            count("BRA.U.ANY"),
            usize::from(per_thread),
            "{name}\n{lines:#?}"
        );
        assert_eq!(
            count("ELECT"),
            usize::from(per_thread),
            "{name}\n{lines:#?}"
        );
        assert_eq!(count("VOTEU"), usize::from(guarded), "{name}\n{lines:#?}");
        if let Some(listing) = &theirs {
            // ptxas's listing of this kernel: from its `Function :` line to the next.
            let body: Vec<&str> = listing
                .split("Function : ")
                .find(|part| part.starts_with(&format!("{name}\n")))
                .unwrap_or_else(|| panic!("ptxas has {name}"))
                .lines()
                .collect();
            let has = |pat: &str| body.iter().filter(|l| l.contains(pat)).count();
            assert_eq!(has("BRA.U.ANY"), usize::from(per_thread), "ptxas {name}");
            assert_eq!(has("UBLKCP") + has("UTMASTG"), 1, "ptxas {name}");
            assert_eq!(has("VOTEU") > 0, guarded, "ptxas {name}");
        }
        seen += 1;
    }
    assert_eq!(seen, 8);
}
