//! Warp-level matrix instructions, end to end (frontend → lower → encode): `mma.sync.aligned`
//! (HMMA, IMMA), `ldmatrix` (LDSM) and `stmatrix` (STSM).
//!
//! 1. **Recipes**: a snippet with every shape and type ptxc lowers must give these instructions
//!    with ptxas's modifiers (read off ptxas's output for the same snippet, and checked against
//!    live ptxas when the reference tools are there).
//! 2. **Tensor waits**: a reader of an HMMA result waits 23 cycles, which ptxas pads with
//!    `@!UPT UIADD3 URZ, URZ, URZ, URZ` stalling at most 11 each (`HMMA` S11, NOP S11, NOP S01
//!    in `zluda/mma_m16n8k16_f32_bf16_bf16_f32`).
//! 3. **Diagnostics**: shapes ptxc does not lower stay clear errors.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::emit::sass::EncodedFunction;
use ptxc::frontend::check::Arch;
use ptxc_tests::{cuobjdump_sass, ptxas, tempdir};

fn compile(text: &str) -> Result<Vec<EncodedFunction>, String> {
    let src = SourceFile::new("snippet.ptx".to_string(), text.to_string());
    let checked = driver::frontend(&src, Arch::SM90A).map_err(|d| src.render(&d[0]))?;
    let opts = ptxc::passes::Options {
        verify: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).map_err(|d| src.render(&d[0]))?;
    driver::encode(&lowered).map_err(|d| src.render(&d[0]))
}

const SNIPPET: &str = r#"
.version 8.7
.target sm_90a
.address_size 64
.shared .align 16 .b32 sm[256];
.visible .entry k(.param .u64 out)
{
    .reg .b32 a<4>, b<2>, c<4>, d<4>, e<4>, f<4>, g<4>, h<4>, x<4>, y<4>;
    .reg .u64 p;
    .reg .u32 s;
    ld.param.u64 p, [out];
    mov.u32 a0, %tid.x;
    add.u32 a1, a0, 1; add.u32 a2, a0, 2; add.u32 a3, a0, 3;
    add.u32 b0, a0, 4; add.u32 b1, a0, 5;
    add.u32 c0, a0, 6; add.u32 c1, a0, 7; add.u32 c2, a0, 8; add.u32 c3, a0, 9;
    mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {d0, d1}, {a0, a1, a2, a3}, {b0, b1}, {c0, c1};
    mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {e0, e1, e2, e3}, {a0, a1}, {b0}, {c0, c1, c2, c3};
    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {f0, f1, f2, f3}, {a0, a1, a2, a3}, {b0, b1}, {c0, c1, c2, c3};
    mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.s8.s32 {g0, g1, g2, g3}, {a0, a1, a2, a3}, {b0, b1}, {c0, c1, c2, c3};
    mma.sync.aligned.m16n8k16.row.col.s32.u8.u8.s32 {h0, h1, h2, h3}, {a0, a1}, {b0}, {c0, c1, c2, c3};
    mov.u32 s, sm;
    mad.lo.u32 s, a0, 16, s;
    ldmatrix.sync.aligned.m8n8.x1.shared.b16 {x0}, [s];
    ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {y0, y1, y2, y3}, [s+16];
    stmatrix.sync.aligned.m8n8.x4.shared.b16 [s], {d0, d1, e0, e1};
    stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [s+32], {g0, h1};
    stmatrix.sync.aligned.m8n8.x1.shared.b16 [s+64], {x0};
    st.v4.u32 [p], {e0, e1, e2, e3};
    st.v4.u32 [p+16], {g0, g1, g2, g3};
    st.v4.u32 [p+32], {h0, h1, h2, h3};
    st.v4.u32 [p+48], {y0, y1, y2, y3};
    st.v4.u32 [p+64], {f0, f1, f2, f3};
    st.v2.u32 [p+80], {d0, d1};
    st.u32 [p+88], x0;
    ret;
}
"#;

/// ptxas's matrix instructions for [`SNIPPET`], without registers, sorted.
const KEYS: &[&str] = &[
    "HMMA.16816.F16",
    "HMMA.16816.F32",
    "HMMA.1688.F32.BF16",
    "IMMA.16816.U8.U8",
    "IMMA.16832.U8.S8.SAT",
    "LDSM.16.M88",
    "LDSM.16.MT88.4",
    "STSM.16.M88",
    "STSM.16.M88.4",
    "STSM.16.MT88.2",
];

fn is_matrix(op: &str) -> bool {
    ["HMMA", "IMMA", "LDSM", "STSM"]
        .iter()
        .any(|m| op.split('.').next() == Some(*m))
}

/// The sorted opcodes (mnemonic and modifiers) of the matrix instructions of a listing.
fn matrix_ops<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = lines
        .filter_map(|l| l.split_whitespace().next())
        .filter(|op| is_matrix(op))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn matrix_recipes_match_ptxas() {
    let fns = compile(SNIPPET).unwrap_or_else(|e| panic!("ptxc: {e}"));
    let lines = ptxc_tests::listing_lines(&fns[0]);
    let ours = matrix_ops(lines.iter().map(String::as_str));
    assert_eq!(ours, KEYS, "ptxc's matrix instructions");
    // Tuples: the mma operands are register tuples; `.ROW`/`.COL` on IMMA's A and B.
    assert!(
        lines.iter().any(|l| l.starts_with("IMMA.16832.U8.S8.SAT")
            && l.contains(".ROW, R")
            && l.contains(".COL, R")),
        "{lines:#?}"
    );

    let dir = tempdir();
    let path = dir.join("snippet.ptx");
    std::fs::write(&path, SNIPPET).unwrap();
    let Some(cubin) = ptxas(&path, &[]).and_then(|r| r.cubin) else {
        println!("isel-mma: ptxas comparison skipped (no reference tools)");
        return;
    };
    let Some(text) = cuobjdump_sass(&cubin) else {
        return;
    };
    let theirs = matrix_ops(text.lines().filter_map(|l| {
        let rest = l.trim().strip_prefix("/*")?;
        let (addr, body) = rest.split_once("*/")?;
        addr.chars()
            .all(|c| c.is_ascii_hexdigit())
            .then_some(body.trim())
    }));
    assert_eq!(theirs, KEYS, "ptxas's matrix instructions");
    println!("isel-mma: {} matrix instructions as ptxas's", KEYS.len());
}

#[test]
fn tensor_waits_are_padded_like_ptxas() {
    let path =
        ptxc_tests::shared_dir().join("corpus/zluda/sm90a/mma_m16n8k16_f32_bf16_bf16_f32.ptx");
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!("isel-mma: {} not found, skipped", path.display());
        return;
    };
    let fns = compile(&text).unwrap_or_else(|e| panic!("ptxc: {e}"));
    let f = &fns[0];
    let lines = ptxc_tests::listing_lines(f);
    let k = lines
        .iter()
        .position(|l| l.starts_with("HMMA"))
        .expect("an HMMA");
    // The first reader of the result (the stores) waits the 23 cycles of an HMMA result, with
    // at most 11 stall cycles per instruction (ptxas: `HMMA` S11, `NOP` S11, `NOP` S01 when the
    // reader follows at once; here the coalesced address arithmetic fills part of the wait).
    let reader = (k + 1..lines.len())
        .find(|&i| lines[i].starts_with("ST"))
        .expect("a store of the result");
    let stalls: Vec<(String, u8)> = (k..reader)
        .map(|i| (lines[i].clone(), f.instrs[i].ctrl.stall))
        .collect();
    let waited: u32 = stalls.iter().map(|(_, s)| u32::from(*s)).sum();
    assert!(waited >= 23, "{stalls:#?}");
    assert!(stalls.iter().all(|(_, s)| *s <= 11), "{stalls:#?}");
    for (l, _) in &stalls[1..] {
        assert!(
            !l.starts_with("@!UPT UIADD3") || waited < 23 + 11,
            "NOPs beyond the wait: {stalls:#?}"
        );
    }

    // A reader right after the HMMA: ptxas's `HMMA` S11, `NOP` S11, `NOP` S01.
    let fns = compile(IMMEDIATE_READER).unwrap_or_else(|e| panic!("ptxc: {e}"));
    let f = &fns[0];
    let lines = ptxc_tests::listing_lines(f);
    let k = lines.iter().position(|l| l.starts_with("HMMA")).unwrap();
    let stalls: Vec<(String, u8)> = (k..k + 3)
        .map(|i| (lines[i].clone(), f.instrs[i].ctrl.stall))
        .collect();
    assert_eq!(
        stalls.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
        [11, 11, 1],
        "{stalls:#?}"
    );
    for (l, _) in &stalls[1..] {
        assert_eq!(l, "@!UPT UIADD3 URZ, URZ, URZ, URZ");
    }
    assert!(lines[k + 3].starts_with("FADD"), "{lines:#?}");
}

/// An HMMA whose result is read by the next instruction.
const IMMEDIATE_READER: &str = ".version 8.7
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %a<4>, %b<2>;
    .reg .f32 %c<4>, %d<4>, %s;
    .reg .u64 %rd;
    ld.param.u64 %rd, [out];
    mov.b32 %a0, 1; mov.b32 %a1, 2; mov.b32 %a2, 3; mov.b32 %a3, 4;
    mov.b32 %b0, 5; mov.b32 %b1, 6;
    mov.f32 %c0, 0f3F800000; mov.f32 %c1, 0f3F800000;
    mov.f32 %c2, 0f3F800000; mov.f32 %c3, 0f3F800000;
    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%d0, %d1, %d2, %d3}, {%a0, %a1, %a2, %a3}, {%b0, %b1}, {%c0, %c1, %c2, %c3};
    add.f32 %s, %d0, %d1;
    st.global.f32 [%rd], %s;
    ret;
}
";

#[test]
fn unsupported_matrix_shapes_are_clear_errors() {
    let text = SNIPPET.replace(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16",
    );
    let err = compile(&text).expect_err("mixed accumulator types are not lowered");
    assert!(err.contains("ptxc cannot lower `mma"), "{err}");
}

/// `stmatrix` then `ldmatrix` through shared memory: lane `l` stores `l` (both halves) plus
/// `0x20` per register, transposed; the load reads it back untransposed (and the other way for
/// `.x2`). The expected words follow the PTX ISA's fragment layout; ptxc's and (when the tools
/// are there) ptxas's cubins must give them on the simulator.
const ROUND_TRIP: &str = r#"
.version 8.7
.target sm_90a
.address_size 64
.shared .align 16 .b32 sm[512];
.visible .entry st(.param .u64 out)
{
    .reg .b32 a<4>, x<4>, y<4>;
    .reg .u64 p, q;
    .reg .u32 s, t;
    ld.param.u64 p, [out];
    mov.u32 a0, %tid.x;
    mul.lo.u32 a0, a0, 65537;
    add.u32 a1, a0, 0x00200020; add.u32 a2, a0, 0x00400040; add.u32 a3, a0, 0x00600060;
    mov.u32 s, sm;
    mov.u32 t, %tid.x;
    mad.lo.u32 s, t, 16, s;
    stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [s], {a0, a1, a2, a3};
    bar.warp.sync -1;
    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {x0, x1, x2, x3}, [s];
    stmatrix.sync.aligned.m8n8.x2.shared.b16 [s+1024], {a2, a3};
    bar.warp.sync -1;
    ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {y0, y1}, [s+1024];
    mul.wide.u32 q, t, 32;
    add.u64 p, p, q;
    st.v4.u32 [p], {x0, x1, x2, x3};
    st.v2.u32 [p+16], {y0, y1};
    ret;
}
"#;

/// The words [`ROUND_TRIP`] writes: 8 per lane (6 used).
#[allow(clippy::needless_range_loop)] // the indices are the fragment layout's
fn round_trip_expected() -> Vec<u8> {
    // Register m of lane l holds l + 0x20 m in both halves.
    let held = |l: usize, m: usize| (l + 0x20 * m) as u16;
    // Transposed store: lane l's halves are elements (2 (l % 4) + h, l / 4) of matrix m.
    let mut t = [[[0u16; 8]; 8]; 4];
    // Plain store (matrices 2 and 3 as the .x2's 0 and 1): elements (l / 4, 2 (l % 4) + h).
    let mut p = [[[0u16; 8]; 8]; 2];
    for l in 0..32 {
        for m in 0..4 {
            for h in 0..2 {
                t[m][2 * (l % 4) + h][l / 4] = held(l, m);
            }
        }
        for m in 0..2 {
            for h in 0..2 {
                p[m][l / 4][2 * (l % 4) + h] = held(l, m + 2);
            }
        }
    }
    let mut out = Vec::new();
    for l in 0..32 {
        let mut words = [0u32; 8];
        for m in 0..4 {
            let (r, c) = (l / 4, 2 * (l % 4));
            words[m] = u32::from(t[m][r][c]) | u32::from(t[m][r][c + 1]) << 16;
        }
        for m in 0..2 {
            let (c, r) = (l / 4, 2 * (l % 4));
            words[4 + m] = u32::from(p[m][r][c]) | u32::from(p[m][r + 1][c]) << 16;
        }
        out.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    }
    out
}

fn simulate(cubin: &[u8]) -> Vec<u8> {
    use ptxc_sim::{Device, Kernel, LaunchConfig};
    let kernel = Kernel::from_cubin(cubin, "st").expect("the cubin loads");
    let mut dev = Device::new();
    let out = dev.global.alloc("out", vec![0u8; 0x2000]);
    let cfg = LaunchConfig::new([1, 1, 1], [32, 1, 1]).params_u64(&[out]);
    dev.launch(&kernel, &cfg).expect("the kernel runs");
    let mut data = dev
        .global
        .region(out)
        .map(|r| r.data.clone())
        .unwrap_or_default();
    data.truncate(32 * 32);
    data
}

#[test]
fn stmatrix_ldmatrix_round_trip_on_the_simulator() {
    let src = SourceFile::new("round_trip.ptx".to_string(), ROUND_TRIP.to_string());
    let checked = driver::frontend(&src, Arch::SM90A).expect("frontend");
    let opts = ptxc::passes::Options::new();
    let (lowered, _) = driver::lower(&checked, &opts).expect("lowering");
    let funcs = driver::encode(&lowered).expect("encoding");
    let build = ptxc::emit::build::BuildOptions::default();
    let (_, cubin) = driver::cubin(&checked, &lowered, &funcs, &build).expect("cubin");
    let want = round_trip_expected();
    assert_eq!(simulate(&cubin), want, "ptxc's cubin");
    let dir = tempdir();
    let path = dir.join("round_trip.ptx");
    std::fs::write(&path, ROUND_TRIP).unwrap();
    if let Some(cubin) = ptxas(&path, &[]).and_then(|r| r.cubin) {
        assert_eq!(simulate(&cubin), want, "ptxas's cubin");
        println!("isel-mma: stmatrix/ldmatrix round trip: ptxc's and ptxas's cubins as expected");
    }
}
