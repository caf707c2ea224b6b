//! Unknown or malformed SASS gives a clear error naming the opcode, modifier or operand — never
//! a wrong word — and no input makes the parser, encoder, decoder or printer panic.

use ptxc::target::sm90a::sample::{Rng, sample};
use ptxc::target::sm90a::tables::all;
use ptxc::target::sm90a::{Encoded, decode, encode, encode_with_form, parse_instr, parse_listing};
use ptxc_tests::{ptxc_bin, tempdir};
use std::process::Command;

fn enc_err(text: &str) -> String {
    match parse_instr(text) {
        Err(e) => e.to_string(),
        Ok(i) => match encode(&i) {
            Err(e) => e.to_string(),
            Ok(w) => panic!("`{text}` encoded to 0x{:016x} 0x{:016x}", w[0], w[1]),
        },
    }
}

#[test]
fn errors_name_what_is_wrong() {
    let cases: &[(&str, &str)] = &[
        ("FOO R1, R2", "unknown opcode `FOO`"),
        ("IADD3.QQ R1, R2, R3, RZ", "unknown modifier `.QQ`"),
        ("IADD3.LUT R1, R2, R3, RZ", "unknown modifier `.LUT`"),
        (
            "ISETP.GE.AND.U32 P0, PT, R1, R2, PT",
            "unknown modifier `.U32`",
        ),
        ("IADD3 R1, R2, R3", "no form takes 3 operands"),
        (
            "IADD3 R1, R2, R3, R4, R5, R6, R7, R8",
            "no form takes 8 operands",
        ),
        ("IADD3 R1, R2, UR3, UR4", "operand 4 `UR4`"),
        ("IADD3 R1, R256, R3, RZ", "unknown operand `R256`"),
        ("LDG.E R1, [R2]", "operand 2 `[R2]`"),
        ("LDC R1, c[0x0][", "missing `]`"),
        ("MOV R1, 0x100000000", "does not fit in 32 bits"),
        ("FADD R1, R2, 0.1", "not exactly representable"),
        ("BRA 0x3", "not a multiple of 4"),
        ("S2R R1, SR_NOSUCH", "unknown operand `SR_NOSUCH`"),
        (
            "@UP0 IADD3 R1, R2, R3, RZ",
            "guard must be a non-uniform predicate",
        ),
        ("IMAD.MOV.U32 R1, R2, R3, R4", "`.MOV` does not apply"),
        ("LDG.E R1, [RZ.64+UR4]", "operand 2"),
        ("SHFL.IDX PT, R1, R2, 0x20, 0x1f", "does not fit in 5 bits"),
        // A kind mismatch is spelled out only when it is reported (`encode::Unbound::Kind`).
        (
            "IADD3 R1, R2, 0.5, RZ",
            "`IADD3`: operand 3 `0.5`: expected a register, found a float",
        ),
        (
            "MOV R1, P0",
            "`MOV`: operand 2 `P0`: expected a register, found a predicate",
        ),
    ];
    let mut bad = Vec::new();
    for (text, want) in cases {
        let e = enc_err(text);
        if !e.contains(want) {
            bad.push(format!("`{text}`: `{e}` does not mention `{want}`"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn asm_check_reports_unknown_and_wrong_instructions() {
    let listing = "\
\tcode for sm_90a
\t\tFunction : k
        /*0000*/                   IADD3 R1, R2, R3, RZ ;  /* 0x0000000302017210 */
                                                           /* 0x000fe20007ffe0ff */
        /*0010*/                   FROB R1, R2 ;           /* 0x0000000000000000 */
                                                           /* 0x000fe20000000000 */
        /*0020*/                   IADD3.NOPE R1, R2, R3, RZ ; /* 0x0000000302017210 */
                                                           /* 0x000fe20007ffe0ff */
        /*0030*/                   IADD3 R1, R2, R4, RZ ;  /* 0x0000000302017210 */
                                                           /* 0x000fe20007ffe0ff */
        /*0040*/                   EXIT ;                  /* 0x000000000000794d */
                                                           /* 0x000fea0003800000 */
";
    let dir = tempdir();
    let p = dir.join("bad.sass");
    std::fs::write(&p, listing).unwrap();
    let o = Command::new(ptxc_bin!())
        .args(["asm", "--check"])
        .arg(&p)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("unknown opcode `FROB`"), "{out}");
    assert!(out.contains("unknown modifier `.NOPE`"), "{out}");
    assert!(out.contains("k+0x0030: IADD3 R1, R2, R4, RZ"), "{out}");
    assert!(out.contains("differing bits: [34:32]"), "{out}");
    assert!(
        out.trim_end()
            .ends_with("asm-check: 2/5 instructions bit-exact"),
        "{out}"
    );
    // `-o` refuses to write a file with unassemblable instructions.
    let bin = dir.join("out.bin");
    let o = Command::new(ptxc_bin!())
        .args(["asm"])
        .arg(&p)
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(!bin.exists());
    // An unknown architecture is a usage error.
    let o = Command::new(ptxc_bin!())
        .args(["asm", "-arch", "sm_80"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Encoded::new` passes over the forms that do not bind without building their error messages
/// (a quiet search); it must still find the form and word the reported search finds
/// (`encode_with_form`), and fail exactly when that fails.
#[test]
fn quiet_search_finds_the_reported_form() {
    let mut compared = 0;
    for (k, f) in all().iter().enumerate() {
        for seed in 0..4u64 {
            let Ok(i) = decode(sample(f, seed * 7919 + k as u64)) else {
                continue;
            };
            match (Encoded::new(&i), encode_with_form(&i)) {
                (Ok(e), Ok((form, word))) => {
                    assert_eq!(e.form.id, form.id, "`{i}`");
                    assert_eq!(e.word, word, "`{i}`");
                    assert_eq!(e.with_ctrl(&i).ok(), Some(word), "`{i}`");
                    compared += 1;
                }
                (Err(_), Err(_)) => {}
                (e, r) => panic!(
                    "`{i}`: quiet {:?}, reported {:?}",
                    e.map(|e| e.word),
                    r.map(|r| r.1)
                ),
            }
        }
    }
    assert!(compared > 1000, "{compared}");
}

#[test]
fn random_words_never_panic() {
    let mut r = Rng::new(1);
    let mut decoded = 0;
    let forms = all();
    for k in 0..200_000u64 {
        // Random words, and legal words of every form with a few bits flipped (so that the
        // decoder gets past the opcode).
        let w = if k % 4 == 0 {
            [r.next_u64(), r.next_u64()]
        } else {
            let mut w = sample(&forms[(k as usize / 4) % forms.len()], k);
            for _ in 0..r.below(4) {
                let b = r.below(128);
                w[(b / 64) as usize] ^= 1 << (b % 64);
            }
            w
        };
        if let Ok(i) = decode(w) {
            decoded += 1;
            let _ = i.to_string();
            let _ = encode(&i);
            let _ = i.accesses();
        }
    }
    assert!(decoded > 0);
}

#[test]
fn mutated_texts_never_panic() {
    let seeds = [
        "@!P0 IADD3 R1, P0, -R2.reuse, 0x10, RZ",
        "LDG.E.64.CONSTANT R2, desc[UR4][R2.64+0x10]",
        "FFMA.FTZ R5, R8, R9.reuse, -0.16845393180847167969",
        "LDC.64 R2, c[0x0][R2+0x210]",
        "HFMA2.MMA R0, -RZ, RZ, 0, 6.103515625e-05",
        "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR7+0x30000], R2",
        "DEPBAR.LE SB0, 0x0, {5,4,3,2,1,0}",
        "RET.REL.NODEC R2 0x0",
        "HGMMA.64x128x16.F32 R88, R152, gdesc[UR16].tnspB, R88, gsb0",
        "FSETP.GEU.AND P0, PT, |R3|, +INF , PT",
    ];
    let alphabet: Vec<char> = "RUPZ0123456789xabcdef.,[]{}()|+-~!@ _:;cgdesc"
        .chars()
        .collect();
    let mut r = Rng::new(2);
    for i in 0..60_000 {
        let mut s: Vec<char> = seeds[i % seeds.len()].chars().collect();
        for _ in 0..1 + r.below(4) {
            let n = s.len() as u64;
            match r.below(4) {
                0 if n > 0 => {
                    s.remove(r.below(n) as usize);
                }
                1 => s.insert(
                    r.below(n + 1) as usize,
                    alphabet[r.below(alphabet.len() as u64) as usize],
                ),
                2 if n > 1 => {
                    let a = r.below(n) as usize;
                    let b = r.below(n) as usize;
                    s.swap(a, b);
                }
                _ => {
                    let k = r.below(n + 1) as usize;
                    let tail: Vec<char> = s[k..].to_vec();
                    s.extend(tail);
                }
            }
        }
        let t: String = s.into_iter().collect();
        if let Ok(ins) = parse_instr(&t) {
            if let Ok(w) = encode(&ins) {
                // Whatever the parser accepted encodes to a word that decodes.
                assert!(
                    decode(w).is_ok(),
                    "`{t}` → undecodable 0x{:016x} 0x{:016x}",
                    w[0],
                    w[1]
                );
            }
            let _ = ins.to_string();
        }
        let _ = parse_listing(&t);
    }
}
