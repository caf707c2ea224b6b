//! Spilling in the register allocator (`compiler/src/passes/regalloc/mod.rs`), end to end: a
//! kernel under `.maxnreg` keeps more 64-bit values live than it has registers, is compiled
//! with the verifier and the allocation checker on, and is run on the SASS simulator.
//!
//! ptxc writes a 64-bit sum one word at a time (`IADD3 lo` then `IADD3.X hi`), so a spilled pair
//! is defined by two instructions. Before the spill code stored only the words an instruction
//! writes, each of them was followed by an `STL.64` of the whole pair, and the second store put
//! back a high word that was never computed in place of the low word the first had saved: the
//! checker refused the allocation (`STL.64 [R1+0x60], %111` reads `%15.w1` from a register that
//! holds another value), as it refused pyptx `matmul_tma_v33`/`v34`, which release builds
//! compiled to wrong code before the checker ran there.

use ptxc_sim::{Device, Kernel, LaunchConfig};

/// Values `s0`…`s{N-1}`, each computed from the one before and all stored at the end: `N`
/// pairs live at once under `.maxnreg 24` (21 general registers).
const N: usize = 20;
const THREADS: usize = 32;

fn kernel() -> String {
    let mut k = String::from(
        ".version 8.7\n.target sm_90a\n.address_size 64\n\
         .visible .entry k_spill(.param .u64 out) .maxnreg 24\n{\n",
    );
    k += &format!("  .reg .u64 o, t, a, s<{N}>; .reg .b32 r; .reg .pred p;\n");
    k += "  ld.param.u64 o, [out];\n  cvta.to.global.u64 o, o;\n  mov.u32 r, %tid.x;\n\
          cvt.u64.u32 t, r;\n  mul.lo.u64 t, t, 4294967297;\n  setp.lt.u32 p, r, 8;\n";
    k += &format!(
        "  mul.wide.u32 a, r, {};\n  add.u64 o, o, a;\n  add.s64 s0, t, 1;\n",
        8 * N
    );
    for i in 1..N {
        let op = if i % 2 == 1 { "add.s64" } else { "xor.b64" };
        k += &format!("  {op} s{i}, s{}, t;\n", i - 1);
    }
    // Guarded redefinitions: where the guard is false the old value must survive.
    k += "  @p add.s64 s3, s3, 1000;\n";
    k += &format!("  @!p add.s64 s{0}, s{0}, 77;\n", N - 2);
    for i in (0..N).rev() {
        k += &format!("  st.global.u64 [o+{}], s{i};\n", 8 * i);
    }
    k += "  ret;\n}\n";
    k
}

/// What every thread stores, computed here.
fn expected() -> Vec<u8> {
    let mut out = Vec::new();
    for tid in 0..THREADS as u64 {
        let t = tid.wrapping_mul(0x1_0000_0001);
        let mut s = vec![t.wrapping_add(1)];
        for i in 1..N {
            let prev = s[i - 1];
            s.push(if i % 2 == 1 {
                prev.wrapping_add(t)
            } else {
                prev ^ t
            });
        }
        if tid < 8 {
            s[3] = s[3].wrapping_add(1000);
        } else {
            s[N - 2] = s[N - 2].wrapping_add(77);
        }
        out.extend(s.iter().flat_map(|v| v.to_le_bytes()));
    }
    out
}

#[test]
fn spilled_pairs_written_a_word_at_a_time_keep_both_words() {
    let text = kernel();
    let src = ptxc::diag::SourceFile::new("k_spill.ptx", text);
    // The verifier is on, and the allocation checker runs whenever a function spills.
    let (encoded, _, cubin) =
        ptxc_tests::compile_pipeline(&src).unwrap_or_else(|d| panic!("{}", src.render(&d[0])));
    let listing = ptxc::emit::sass::listing(&encoded[0]).expect("listing");
    assert!(
        listing.contains("STL") && listing.contains("LDL"),
        "the kernel must spill:\n{listing}"
    );
    // Each word written on its own is stored on its own.
    assert!(
        listing
            .lines()
            .any(|l| l.contains("STL [R1") && !l.contains("STL.64")),
        "{listing}"
    );
    let k = Kernel::from_cubin(&cubin, "k_spill").expect("the cubin loads");
    let mut dev = Device::new();
    let bytes = THREADS * N * 8;
    let o = dev
        .global
        .alloc("out", vec![0u8; bytes.next_multiple_of(0x1000)]);
    let cfg = LaunchConfig::new([1, 1, 1], [THREADS as u32, 1, 1]).params_u64(&[o]);
    dev.launch(&k, &cfg).expect("the kernel runs");
    let mut got = dev.global.region(o).map(|r| r.data.clone()).unwrap();
    got.truncate(bytes);
    let want = expected();
    for (i, (g, w)) in got.chunks(8).zip(want.chunks(8)).enumerate() {
        assert_eq!(
            g,
            w,
            "thread {} s{}: {:#x} instead of {:#x}",
            i / N,
            i % N,
            u64::from_le_bytes(g.try_into().unwrap()),
            u64::from_le_bytes(w.try_into().unwrap())
        );
    }
}

/// The pyptx matmul kernels keep their fp8 wgmma accumulators (two 32-word tuples) live round
/// the main loop. Leaving SSA form copies each accumulator into the `QGMMA` and out of it, and
/// the loop-carried values cover the whole loop, so without `coalesce-copies`
/// (`passes/coalesce_copies.rs`) every accumulator took its registers three times over:
/// 249 registers and 128 B of spill slots (`matmul_tma_v33`; ptxas: 168, no spill), 220 and
/// 544 B (`_v34`; ptxas 162), 226 (`_v35`; ptxas 112). Ceilings: the counts reached (188,
/// 194 and 139 with coalescing alone; the peeled `mbarrier.try_wait` loops,
/// `passes/peel_wait.rs`, keep their address and phase live to the retry blocks after the
/// last block: 2–4 more; computing the wgmma descriptors in uniform registers, 4 fewer;
/// keeping the loop-carried stages and counters in uniform registers, `isel/loop_uniform.rs`:
/// 184/192/137 → 179/184/129).
#[test]
fn pyptx_matmul_accumulators_share_their_copies_registers() {
    for (name, ceiling) in [
        ("pyptx__matmul_tma_v33_sm90a.ptx", 179),
        ("pyptx__matmul_tma_v34_sm90a.ptx", 184),
        ("pyptx__matmul_tma_v35_sm90a.ptx", 129),
    ] {
        let Some(k) = pyptx_kernel(name) else { return };
        assert_eq!(k.frame, 0, "{name} spills: {k:?}");
        assert!(k.registers <= ceiling, "{name}: {k:?}");
    }
}

/// pyptx `fa_ws_pingpong`: two 64-word HGMMA accumulators found 64 registers free under
/// `setmaxnreg.inc 232` but not in a row, and the scan spilled the active values that end last
/// (the P tile's 32 pairs among them) until a window was free: a 648-byte frame (1 232 B of
/// spill stores, 4 292 B of loads). Moving active values out of a window
/// (`Relocation::make_window`) and spilling by weight (uses per point of the interval) leave
/// 584 B (912 B of stores, 2 100 B of loads); with the Q descriptors (16 registers here) in
/// uniform registers, as ptxas keeps them, 440 B (784 B, 1 692 B); recomputing the entry values
/// (`remat`: the `LDC`s of parameters, `S2R SR_TID.X`, the shared window's base) instead of
/// reloading them, 392 B (740 B, 1 428 B); occurrences in loops weighing 4× per level, 376 B
/// (716 B, 1 372 B). Intervals without holes held each consumer warpgroup's values through
/// the other consumer's region (289 words overlapping at the worst point, 217 live); lending
/// registers across lifetime holes when the plain scan spills leaves no spill at all, as with
/// ptxas.
#[test]
fn pyptx_fa_ws_pingpong_does_not_spill() {
    let name = "pyptx__fa_ws_pingpong_sm90a.ptx";
    let Some(k) = pyptx_kernel(name) else { return };
    assert_eq!(k.frame, 0, "{name}: {k:?}");
    assert_eq!(k.registers, 168, "{name}: {k:?}");
}

/// The first kernel of a pyptx corpus file, compiled (`None`, with a note, when the corpus is
/// not there).
fn pyptx_kernel(name: &str) -> Option<ptxc::emit::build::KernelInfo> {
    let path = ptxc_tests::shared_dir().join("corpus/pyptx").join(name);
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: {} is not there", path.display());
        return None;
    };
    let src = ptxc::diag::SourceFile::new(name, text);
    let (_, built, _) =
        ptxc_tests::compile_pipeline(&src).unwrap_or_else(|d| panic!("{}", src.render(&d[0])));
    built.kernels.into_iter().next()
}
