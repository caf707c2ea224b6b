//! Instruction semantics and the execution model, checked on hand-written SASS (assembled with
//! ptxc's own sm_90a encoder). Each program stores its results through the first parameter,
//! `c[0x0][0x210]`; labels are `name:` lines and `%name` references.

use ptxc::target::sm90a::{encode, parse_instr};
use ptxc_sim::{Device, Kernel, LaunchConfig, SimError};
use std::collections::HashMap;

/// Assembles SASS lines (one instruction each, `name:` labels, `%name` label references).
fn asm(src: &str) -> Vec<[u64; 2]> {
    let lines: Vec<&str> = src
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .collect();
    let mut labels = HashMap::new();
    let mut n = 0u64;
    for l in &lines {
        if let Some(name) = l.strip_suffix(':') {
            labels.insert(name.to_string(), n * 16);
        } else {
            n += 1;
        }
    }
    let mut words = Vec::new();
    for l in &lines {
        if l.ends_with(':') {
            continue;
        }
        let mut text = l.to_string();
        for (name, addr) in &labels {
            text = text.replace(&format!("%{name}"), &format!("0x{addr:x}"));
        }
        let mut i = parse_instr(&text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        i.addr = words.len() as u64 * 16;
        words.push(encode(&i).unwrap_or_else(|e| panic!("{text}: {e}")));
    }
    words
}

/// Runs `src` with `threads` threads (one CTA) and returns `out` bytes of the output buffer
/// (parameter 0); parameter 1 points at `input`.
fn run_with(src: &str, threads: u32, out: usize, input: &[u8]) -> Result<Vec<u8>, SimError> {
    let k = Kernel::from_words("k", &asm(src), 0x400 + 256);
    let mut dev = Device::new();
    let o = dev.global.alloc("out", vec![0; out]);
    let i = dev.global.alloc("in", input.to_vec());
    let mut cfg = LaunchConfig::new([1, 1, 1], [threads, 1, 1])
        .params_u64(&[o, i])
        .dynamic_shared(256);
    cfg.max_steps = 100_000;
    dev.launch(&k, &cfg)?;
    Ok(dev
        .global
        .region(o)
        .map(|r| r.data.clone())
        .unwrap_or_default())
}

fn run(src: &str, threads: u32, out: usize) -> Vec<u8> {
    run_with(src, threads, out, &[0; 4]).unwrap_or_else(|e| panic!("{e}"))
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The prologue: R2:R3 = output, R0 = %tid.x, UR4:UR5 = descriptor.
const PRO: &str = "
    LDC R1, c[0x0][0x28]
    LDC.64 R2, c[0x0][0x210]
    S2R R0, SR_TID.X
    ULDC.64 UR4, c[0x0][0x208]
";

/// Stores R10 of every thread to out[tid].
const STORE_R10: &str = "
    IMAD.WIDE.U32 R2, R0, 0x4, R2
    STG.E desc[UR4][R2.64], R10
    EXIT
";

fn one(body: &str) -> Vec<u32> {
    words(&run(&format!("{PRO}{body}"), 1, 128))
}

#[test]
fn add_with_carry_chains() {
    // 64-bit x - 1 as ptxas writes it (the immediate's high word is -1 too).
    let r = one("
        MOV R4, 0x0
        MOV R5, 0x1
        IADD3 R6, P0, R4, -0x1, RZ
        IADD3.X R7, R5, -0x1, RZ, P0, !PT
        STG.E.64 desc[UR4][R2.64], R6
        // Three-way carries: 0xffffffff * 3 = 0x2_fffffffd.
        MOV R8, 0xffffffff
        IADD3 R10, P1, P2, R8, R8, R8
        IADD3.X R11, RZ, RZ, RZ, P1, P2
        STG.E.64 desc[UR4][R2.64+0x8], R10
        // Subtraction borrow: 3 - 5.
        MOV R11, 0x3
        IADD3 R12, P0, R11, -0x5, RZ
        SEL R13, RZ, 0x1, !P0
        STG.E.64 desc[UR4][R2.64+0x10], R12
        EXIT
    ");
    assert_eq!(&r[0..2], &[0xffff_ffff, 0]);
    assert_eq!(&r[2..4], &[0xffff_fffd, 2]);
    assert_eq!(&r[4..6], &[0xffff_fffe, 0], "3 - 5 borrows: no carry out");
}

#[test]
fn imad_forms() {
    let r = one("
        MOV R4, 0xfffffffe                // -2
        MOV R5, 0x3
        IMAD.WIDE R6, R4, R5, RZ          // -6 as s64
        STG.E.64 desc[UR4][R2.64], R6
        IMAD.WIDE.U32 R8, R4, R5, RZ      // 0x2_fffffffa
        STG.E.64 desc[UR4][R2.64+0x8], R8
        IMAD.HI.U32 R10, R4, R5, RZ       // 2
        IMAD.HI R11, R4, R5, RZ           // -1
        STG.E.64 desc[UR4][R2.64+0x10], R10
        // IMAD.HI adds a register pair: {lo = 0, hi = 7} adds 7 to the high word.
        MOV R12, RZ
        MOV R13, 0x7
        IMAD.HI.U32 R14, R4, R5, R12
        IMAD R15, R4, R5, -R5            // -2*3 - 3
        STG.E.64 desc[UR4][R2.64+0x18], R14
        EXIT
    ");
    assert_eq!(&r[0..2], &[(-6i32) as u32, u32::MAX]);
    assert_eq!(&r[2..4], &[0xffff_fffa, 2]);
    assert_eq!(&r[4..6], &[2, u32::MAX]);
    assert_eq!(&r[6..8], &[9, (-9i32) as u32]);
}

/// ptxas's unsigned division (from ZLUDA's `rem`): correct only if I2F.RP, MUFU.RCP, F2I and
/// IMAD.HI with its register-pair addend behave as modelled.
#[test]
fn ptxas_integer_division_sequence() {
    let src = format!(
        "{PRO}
        LDC.64 R20, c[0x0][0x218]
        IMAD.WIDE.U32 R20, R0, 0x8, R20
        LDG.E R9, desc[UR4][R20.64]        // x
        LDG.E R8, desc[UR4][R20.64+0x4]    // y
        I2F.U32.RP R6, R8
        IMAD.MOV R3, RZ, RZ, -R8
        MUFU.RCP R6, R6
        VIADD R4, R6, 0xffffffe
        F2I.FTZ.U32.TRUNC.NTZ R5, R4
        IMAD.MOV.U32 R4, RZ, RZ, RZ
        IMAD.MOV R7, RZ, RZ, -R5
        IMAD R7, R7, R8, RZ
        IMAD.HI.U32 R5, R5, R7, R4
        IMAD.HI.U32 R5, R5, R9, RZ        // q estimate
        IMAD R10, R5, R3, R9               // r = x - q*y
        ISETP.GE.U32.AND P0, PT, R10, R8, PT
        @P0 IADD3 R10, R10, -R8, RZ
        @P0 VIADD R5, R5, 0x1
        ISETP.GE.U32.AND P0, PT, R10, R8, PT
        @P0 VIADD R5, R5, 0x1
        MOV R10, R5
        LDC.64 R2, c[0x0][0x210]
        {STORE_R10}"
    );
    let mut input = Vec::new();
    let mut seed = 0x243f_6a88_85a3_08d3u64;
    let mut pairs = Vec::new();
    for i in 0..256u32 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let x = seed as u32;
        let y = match i % 4 {
            0 => (seed >> 32) as u32 | 1,
            1 => ((seed >> 40) as u32 % 1000) + 1,
            2 => 1 + i,
            _ => u32::MAX - i,
        };
        pairs.push((x, y));
        input.extend(x.to_le_bytes());
        input.extend(y.to_le_bytes());
    }
    let k = Kernel::from_words("k", &asm(&src), 0x400);
    let mut dev = Device::new();
    let o = dev.global.alloc("out", vec![0; 1024]);
    let i = dev.global.alloc("in", input);
    let cfg = LaunchConfig::new([1, 1, 1], [256, 1, 1]).params_u64(&[o, i]);
    dev.launch(&k, &cfg).unwrap();
    let q = words(&dev.global.region(o).unwrap().data);
    for (n, (x, y)) in pairs.iter().enumerate() {
        assert_eq!(q[n], x / y, "{x} / {y}");
    }
}

#[test]
fn lea_shf_prmt_lop3() {
    let r = one("
        MOV R4, 0x80000001
        MOV R5, 0x1
        LEA R6, P0, R4, R4, 0x1            // 0x80000001*2 + 0x80000001, carry
        LEA.HI.X R7, R4, R5, R5, 0x1, P0   // 1 + hi({1:0x80000001} << 1) + 1
        STG.E.64 desc[UR4][R2.64], R6
        MOV R8, 0x12345678
        MOV R9, 0x9abcdef0
        SHF.L.U32.HI R10, R8, 0x2c, R9     // clamp 44 -> 32: R8
        SHF.R.U32 R11, R8, 0x4, R9         // funnel: 0x01234567 | 0x0 << 28
        STG.E.64 desc[UR4][R2.64+0x8], R10
        SHF.R.S32.HI R12, RZ, 0x1f, R9     // sign
        SHF.L.W.U32.HI R13, R8, 0x24, R9   // wrap 36 -> 4
        STG.E.64 desc[UR4][R2.64+0x10], R12
        PRMT R14, R8, 0x3210, R9           // identity
        PRMT R15, R8, 0x8f74, R9           // b4 = R9.b0, b7 = R9.b3, sign of b7, sign of R8.b0
        STG.E.64 desc[UR4][R2.64+0x18], R14
        LOP3.LUT R16, R8, R9, RZ, 0x3c, !PT    // xor
        LOP3.LUT P1, R17, R8, 0xf, RZ, 0xc0, !PT
        SEL R17, RZ, 0x1, !P1
        STG.E.64 desc[UR4][R2.64+0x20], R16
        EXIT
    ");
    assert_eq!(r[0], 0x8000_0003);
    assert_eq!(r[1], 1 + 3, "no carry from the low part");
    assert_eq!(r[2], 0x1234_5678);
    assert_eq!(r[3], 0x0123_4567);
    assert_eq!(r[4], u32::MAX);
    assert_eq!(r[5], (0x9abc_def0u32 << 4) | (0x1234_5678 >> 28));
    assert_eq!(r[6], 0x1234_5678);
    assert_eq!(r[7], 0x00ff_9af0, "bytes f0 9a ff 00");
    assert_eq!(r[8], 0x1234_5678 ^ 0x9abc_def0);
    assert_eq!(r[9], 1);
}

#[test]
fn isetp_extended_compare() {
    // 64-bit signed compares of {lo, hi} pairs, as ptxas chains them.
    let r = one("
        MOV R4, 0x5
        MOV R5, 0xffffffff        // a = -4294967291
        MOV R6, 0x7
        MOV R7, 0xffffffff        // b = -4294967289
        ISETP.LT.U32.AND P0, PT, R4, R6, PT
        ISETP.LT.AND.EX P0, PT, R5, R7, PT, P0
        SEL R8, RZ, 0x1, !P0      // a < b: 1
        ISETP.GE.U32.AND P1, PT, R4, R6, PT
        ISETP.GE.AND.EX P1, PT, R5, R7, PT, P1
        SEL R9, RZ, 0x1, !P1      // a >= b: 0
        STG.E.64 desc[UR4][R2.64], R8
        ISETP.EQ.U32.AND P2, PT, R4, R4, PT
        ISETP.EQ.AND.EX P2, PT, R5, R5, PT, P2
        SEL R10, RZ, 0x1, !P2
        ISETP.GT.U32.AND P3, PT, R4, R6, PT
        ISETP.GT.U32.AND.EX P3, PT, R7, R5, PT, P3  // unsigned hi equal: low says no
        SEL R11, RZ, 0x1, !P3
        STG.E.64 desc[UR4][R2.64+0x8], R10
        EXIT
    ");
    assert_eq!(&r[0..4], &[1, 0, 1, 0]);
}

#[test]
fn float_rounding_modes() {
    let r = one("
        MOV R4, 0x3f800000          // 1.0
        MOV R5, 0x33800000          // 2^-24: half an ulp of 1.0
        FADD R6, R4, R5             // ties to even: 1.0
        FADD.RP R7, R4, R5          // 1.0 + ulp
        STG.E.64 desc[UR4][R2.64], R6
        FADD.RM R8, -R4, -R5        // -(1.0 + ulp)
        FADD.RZ R9, -R4, -R5        // -1.0
        STG.E.64 desc[UR4][R2.64+0x8], R8
        MOV R12, 0x00000001         // the smallest subnormal
        FADD R13, R12, R12
        FADD.FTZ R14, R12, R12
        FMUL R15, R4, 0.5
        STG.E.128 desc[UR4][R2.64+0x10], R12
        MOV R16, 0x7f7fffff         // FLT_MAX
        FFMA.RZ R17, R16, 2, RZ     // overflow toward zero: FLT_MAX
        FFMA R18, R16, 2, RZ        // +inf
        FADD R19, R18, -R18         // inf - inf: canonical NaN
        STG.E.128 desc[UR4][R2.64+0x20], R16
        EXIT
    ");
    assert_eq!(r[0], 0x3f80_0000);
    assert_eq!(r[1], 0x3f80_0001);
    assert_eq!(r[2], 0xbf80_0001);
    assert_eq!(r[3], 0xbf80_0000);
    assert_eq!(&r[5..8], &[2, 0, 0x3f00_0000]);
    assert_eq!(&r[9..12], &[0x7f7f_ffff, 0x7f80_0000, 0x7fff_ffff]);
}

#[test]
fn doubles_and_conversions() {
    let r = one("
        MOV R4, 0x0
        MOV R5, 0x3ff00000          // 1.0
        DADD R6, R4, 2.5
        STG.E.64 desc[UR4][R2.64], R6       // 3.5
        DFMA.RZ R8, R4, -3, R4              // 1 - 3 = -2
        STG.E.64 desc[UR4][R2.64+0x8], R8
        F2I.S64.F64.TRUNC R10, R8
        STG.E.64 desc[UR4][R2.64+0x10], R10
        MOV R12, 0xbfc00000                 // -1.5
        F2I.FLOOR R13, R12
        F2I.U32.TRUNC R14, R12              // saturates to 0
        F2I R15, R12                        // nearest even: -2
        STG.E.128 desc[UR4][R2.64+0x20], R12
        MOV R16, 0x1000001                  // 2^24 + 1
        I2F.RP R17, R16
        I2F R18, R16
        I2F.F64 R20, R16
        STG.E.128 desc[UR4][R2.64+0x30], R16
        STG.E.64 desc[UR4][R2.64+0x40], R20
        EXIT
    ");
    assert_eq!(f64::from_bits(u64::from(r[0]) | u64::from(r[1]) << 32), 3.5);
    assert_eq!(
        f64::from_bits(u64::from(r[2]) | u64::from(r[3]) << 32),
        -2.0
    );
    assert_eq!((u64::from(r[4]) | u64::from(r[5]) << 32) as i64, -2);
    assert_eq!(&r[9..12], &[(-2i32) as u32, 0, (-2i32) as u32]);
    assert_eq!(f32::from_bits(r[13]), 16_777_218.0);
    assert_eq!(f32::from_bits(r[14]), 16_777_216.0);
    assert_eq!(
        f64::from_bits(u64::from(r[16]) | u64::from(r[17]) << 32),
        16_777_217.0
    );
}

#[test]
fn packed_halves() {
    let r = one("
        MOV R4, 0x40003c00          // {lo 1.0, hi 2.0}
        MOV R5, 0x42004400          // {lo 4.0, hi 3.0}
        HADD2 R8, R4, R5            // {5.0, 5.0}
        HFMA2 R9, R4, R5.H1_H1, -RZ // {3.0, 6.0}
        HFMA2.MMA R10, -RZ, RZ, 1.875, 0   // 0x3f800000
        HSET2.BF.GT.AND R11, R5, R4, PT     // {1.0, 1.0}
        STG.E.128 desc[UR4][R2.64], R8
        MOV R14, 0x3f800000
        MOV R15, 0x40000000
        F2FP.F16.F32.PACK_AB R12, R14, R15      // {lo 2.0, hi 1.0}
        F2FP.BF16.F32.PACK_AB R13, RZ, R14      // {lo bf16 1.0}
        STG.E.64 desc[UR4][R2.64+0x10], R12
        EXIT
    ");
    assert_eq!(r[0], 0x4500_4500);
    assert_eq!(r[1], 0x4600_4200);
    assert_eq!(r[2], 0x3f80_0000);
    assert_eq!(r[3], 0x3c00_3c00);
    assert_eq!(r[4], 0x3c00_4000);
    assert_eq!(r[5], 0x0000_3f80);
}

/// if/else divergence reconverging at a BSYNC, and per-thread loop trip counts.
#[test]
fn divergence_and_reconvergence() {
    let src = format!(
        "{PRO}
        BSSY B0, %join
        LOP3.LUT P0, RZ, R0, 0x1, RZ, 0xc0, !PT
        @!P0 BRA %even
        MOV R10, 0x100
        BRA %sync
    even:
        MOV R10, 0x200
    sync:
        BSYNC B0
    join:
        // R11 = sum of 0..tid
        MOV R11, RZ
        MOV R12, RZ
    loop:
        ISETP.GE.U32.AND P1, PT, R12, R0, PT
        @P1 BRA %done
        VIADD R12, R12, 0x1
        IADD3 R11, R11, R12, RZ
        BRA %loop
    done:
        IADD3 R10, R10, R11, RZ
        // All threads together again: a ballot sees the whole warp.
        VOTE.ANY R13, PT, PT
        IADD3 R10, R10, R13, RZ
        {STORE_R10}"
    );
    let r = words(&run(&src, 40, 160));
    for (t, v) in r.iter().enumerate() {
        let t = t as u32;
        let base = if t % 2 == 1 { 0x100 } else { 0x200 };
        let ballot = if t < 32 { u32::MAX } else { 0xff };
        let want = (base + t * (t + 1) / 2).wrapping_add(ballot);
        assert_eq!(*v, want, "thread {t}");
    }
}

/// WARPSYNC waits for the threads of its mask to arrive or exit (ZLUDA's vote_all_sub).
#[test]
fn warpsync_waits_for_exits() {
    let src = format!(
        "{PRO}
        S2R R5, SR_LANEID
        IMAD.WIDE.U32 R2, R0, 0x4, R2
        MOV R10, 0x7
        ISETP.NE.U32.AND P1, PT, R5, RZ, PT
        @!P1 BRA %out
        WARPSYNC.ALL
        VOTE.ANY R10, PT, PT
    out:
        STG.E desc[UR4][R2.64], R10
        EXIT
    "
    );
    let r = words(&run(&src, 32, 128));
    assert_eq!(r[0], 7);
    assert!(r[1..].iter().all(|&v| v == 0xffff_fffe));
}

/// SHFL reads every source before writing; out-of-range lanes keep their own value.
#[test]
fn shuffles() {
    let src = format!(
        "{PRO}
        SHFL.DOWN P0, R10, R0, 0x1, 0x1f
        @!P0 IADD3 R10, R10, 0x1000, RZ
        SHFL.BFLY PT, R11, R10, 0x3, 0x1f
        SHFL.IDX PT, R12, R0, R0, 0x1f     // idx = own lane
        IADD3 R10, R11, R12, RZ
        {STORE_R10}"
    );
    let r = words(&run(&src, 32, 128));
    let down = |l: u32| if l < 31 { l + 1 } else { 31 + 0x1000 };
    for l in 0..32u32 {
        assert_eq!(r[l as usize], down(l ^ 3) + l, "lane {l}");
    }
}

/// A CTA barrier orders shared-memory traffic between warps.
#[test]
fn cta_barrier_between_warps() {
    let src = format!(
        "{PRO}
        S2UR UR6, SR_CgaCtaId
        UMOV UR7, 0x400
        ULEA UR6, UR6, UR7, 0x18
        LEA R4, R0, UR6, 0x2
        STS [R4], R0
        BAR.SYNC.DEFER_BLOCKING 0x0
        // read the neighbour written by another warp: (tid + 32) % 64
        VIADD R5, R0, 0x20
        LOP3.LUT R5, R5, 0x3f, RZ, 0xc0, !PT
        LEA R6, R5, UR6, 0x2
        LDS R10, [R6]
        {STORE_R10}"
    );
    let r = words(&run(&src, 64, 256));
    for t in 0..64u32 {
        assert_eq!(r[t as usize], (t + 32) % 64);
    }
}

/// Local memory through R1 and through the generic window; shared memory through SR_SWINHI.
#[test]
fn local_and_generic_addresses() {
    let r = one("
        VIADD R1, R1, 0xfffffff8
        MOV R4, 0x11
        STL [R1], R4
        LDC R6, c[0x0][0x20]
        LDC R7, c[0x0][0x24]
        IADD3 R6, P0, R1, R6, RZ
        IADD3.X R7, RZ, R7, RZ, P0, !PT
        LD.E R8, desc[UR4][R6.64]          // generic read of the local slot
        S2R R11, SR_SWINHI
        MOV R10, 0x400
        ST.E desc[UR4][R10.64], R8         // generic write into shared at 0x400
        LDS R12, [R10]
        STG.E desc[UR4][R2.64], R12
        EXIT
    ");
    assert_eq!(r[0], 0x11);
}

#[test]
fn atomics() {
    let r = one("
        MOV R4, 0x5
        STG.E desc[UR4][R2.64+0x20], R4
        MOV R5, 0x3
        ATOMG.E.ADD.STRONG.GPU PT, R6, desc[UR4][R2.64+0x20], R5   // 5 -> 8, old 5
        ATOMG.E.INC.STRONG.GPU PT, R7, desc[UR4][R2.64+0x20], R4   // 8 >= 5 -> 0
        MOV R8, RZ
        MOV R9, 0x9
        ATOM.E.CAS.STRONG.GPU PT, R10, [R2+0x20], R8, R9           // 0 -> 9
        MOV R12, 0xfffffff0
        ATOMG.E.MAX.S32.STRONG.GPU PT, R11, desc[UR4][R2.64+0x20], R12  // stays 9
        STG.E.64 desc[UR4][R2.64], R6
        STG.E.64 desc[UR4][R2.64+0x8], R10
        EXIT
    ");
    assert_eq!(&r[0..4], &[5, 8, 0, 9]);
    assert_eq!(r[8], 9);
}

#[test]
fn errors_are_reported_not_guessed() {
    // An instruction whose semantics is missing.
    let e = run_with(&format!("{PRO} BAR.ARV 0x1, 0x20\n EXIT"), 1, 4, &[]).unwrap_err();
    assert!(matches!(e.root(), SimError::Unimplemented(_)), "{e}");
    // Memory outside every buffer.
    let e = run_with(
        &format!("{PRO} STG.E desc[UR4][R2.64+0x1000], R0\n EXIT"),
        1,
        4,
        &[],
    )
    .unwrap_err();
    assert!(matches!(e.root(), SimError::Memory(_)), "{e}");
    // A constant the launch did not define.
    let e = run_with(&format!("{PRO} LDC R4, c[0x0][0x140]\n EXIT"), 1, 4, &[]).unwrap_err();
    assert!(matches!(e.root(), SimError::Memory(_)), "{e}");
    // An endless loop.
    let e = run_with("L: \n BRA %L", 1, 4, &[]).unwrap_err();
    assert!(matches!(e, SimError::StepLimit(_)), "{e}");
    // A BSYNC whose partners never come.
    let e = run_with(
        &format!(
            "{PRO}
            BSSY B0, %end
            ISETP.NE.AND P0, PT, R0, RZ, PT
            @P0 BRA %spin
            BSYNC B0
        end:
            EXIT
        spin:
            BAR.SYNC.DEFER_BLOCKING 0x0
            EXIT"
        ),
        2,
        4,
        &[],
    )
    .unwrap_err();
    assert!(matches!(e.root(), SimError::Deadlock(_)), "{e}");
    // Falling off the end of the code.
    let e = run_with("NOP", 1, 4, &[]).unwrap_err();
    assert!(matches!(e.root(), SimError::Trap(_)), "{e}");
}

/// Arbitrary words never panic the simulator: each launch ends with a result or an error.
#[test]
fn random_code_never_panics() {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    // Real instruction words, with random fields, so that most of them decode.
    let seeds = asm(&format!(
        "{PRO}
        IADD3 R4, R0, 0x1, RZ
        LDG.E R5, desc[UR4][R2.64]
        STS [R4], R5
        FFMA R6, R5, R4, R0
        SHFL.IDX PT, R7, R0, R4, 0x1f
        ISETP.GE.AND P0, PT, R4, R5, PT
        @P0 BRA 0x20
        BSYNC B1
        ATOMS.ADD R8, [R4], R5
        EXIT"
    ));
    for _ in 0..3000 {
        let n = 1 + (next() % 12) as usize;
        let mut code = Vec::new();
        for _ in 0..n {
            let base = seeds[(next() % seeds.len() as u64) as usize];
            let flip = next() & next();
            let w = if next() % 4 == 0 {
                [next(), next()]
            } else {
                [
                    base[0] ^ (flip & 0xffff_ffff_ffff_0000),
                    base[1] ^ (next() & 0xff_ffff),
                ]
            };
            code.push(w);
        }
        let k = Kernel::from_words("fuzz", &code, 0x400);
        let mut dev = Device::new();
        let o = dev.global.alloc("out", vec![0; 64]);
        let mut cfg =
            LaunchConfig::new([1, 1, 1], [1 + (next() % 40) as u32, 1, 1]).params_u64(&[o, o]);
        cfg.max_steps = 2000;
        let _ = dev.launch(&k, &cfg);
    }
}

/// A thread spinning on a flag that a thread of the same warp at a higher PC sets: independent
/// thread scheduling lets the setter run.
#[test]
fn spin_wait_in_one_warp_makes_progress() {
    let src = format!(
        "{PRO}
        S2UR UR6, SR_CgaCtaId
        UMOV UR7, 0x400
        ULEA UR6, UR6, UR7, 0x18
        ISETP.NE.AND P0, PT, R0, RZ, PT
        @P0 BRA %setter
    spin:
        LDS R5, [UR6]
        ISETP.EQ.AND P1, PT, R5, RZ, PT
        @P1 BRA %spin
        MOV R10, R5
        BRA %store
    setter:
        MOV R5, 0x2a
        STS [UR6], R5
        MOV R10, 0x1
    store:
        {STORE_R10}"
    );
    let r = words(&run(&src, 2, 8));
    assert_eq!(r, [42, 1]);
}

/// A barrier with a thread count counts whole warps: 40 threads fill two warps of 64.
#[test]
fn counted_barrier_counts_warps() {
    let src = format!(
        "{PRO}
        MOV R10, 0x5
        BAR.SYNC.DEFER_BLOCKING 0x0, 0x40
        {STORE_R10}"
    );
    let r = words(&run(&src, 40, 160));
    assert!(r.iter().all(|&v| v == 5));
}

/// UP2UR/UR2UP save and restore the uniform predicates.
#[test]
fn uniform_predicate_save_restore() {
    let r = one("
        UISETP.EQ.U32.AND UP0, UPT, URZ, URZ, UPT
        UISETP.NE.U32.AND UP1, UPT, URZ, URZ, UPT
        UP2UR.B3 UR8, UPR, URZ, 0xff
        UISETP.NE.U32.AND UP0, UPT, URZ, URZ, UPT
        UR2UP UPR, UR8.B3, 0xff
        USEL UR9, URZ, 0x1, UP0
        USEL UR10, URZ, 0x1, UP1
        MOV R10, UR8
        MOV R11, UR9
        STG.E.64 desc[UR4][R2.64], R10
        MOV R10, UR10
        STG.E desc[UR4][R2.64+0x8], R10
        EXIT
    ");
    assert_eq!(&r[0..3], &[0x0100_0000, 0, 1]);
}

/// Warps interleave: warp 0 spins on a flag in global memory that warp 1 sets.
#[test]
fn spin_wait_across_warps() {
    let src = format!(
        "{PRO}
        ISETP.NE.AND P0, PT, R0, RZ, PT
        ISETP.NE.AND P2, PT, R0, 0x20, PT
        @!P0 BRA %spin
        @!P2 BRA %setter
        MOV R10, RZ
        BRA %store
    spin:
        LDG.E.STRONG.GPU R5, desc[UR4][R2.64+0x100]
        ISETP.EQ.AND P1, PT, R5, RZ, PT
        @P1 BRA %spin
        MOV R10, R5
        BRA %store
    setter:
        MOV R10, 0x2a
        STG.E.STRONG.GPU desc[UR4][R2.64+0x100], R10
    store:
        {STORE_R10}"
    );
    let r = words(&run(&src, 64, 260));
    assert_eq!(r[0], 42);
    assert_eq!(r[32], 42);
}
