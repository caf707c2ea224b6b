//! Control words under `-g` (`ptxas --device-debug`): ptxas's serial scheme
//! (`scoreboard::serial_ctrl`, `docs/passes/scoreboard.md` "Under -g").
//!
//! * `ptxas_g_control_words_recomputed`: the corpora (ZLUDA + pyptx) compiled with `ptxas -g`,
//!   every control word recomputed with the serial scheme (`ptxc asm --recompute-ctrl
//!   --debug-code`) and compared with ptxas's, per field. Every listing must be readable by the
//!   SASS parser (the -g-only forms `WARPSYNC.COLLECTIVE`, `ENDCOLLECTIVE` and `F2F.BF16.F32`
//!   included: 23 listings were left out before the tables had them).
//!   `PTXC_CTRL_DIFFS=FILE` writes every differing instruction to FILE.
//! * `ptxc_g_code_has_no_hazards`: ptxc's own `-g` code (which uses the serial scheme) passes
//!   the hazard checker, and its control words are the serial scheme's.

use ptxc::asm::recompute_ctrl;
use ptxc::check::hazards;
use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::emit::scoreboard::{self, Agreement, Options};
use ptxc::frontend::check::Arch;
use ptxc_tests::sass::listings_with;
use ptxc_tests::{accepted_corpus, own_kernels, probes};
use std::path::Path;

const SERIAL: Options = Options { serial: true };

#[test]
fn ptxas_g_control_words_recomputed() {
    let t = std::time::Instant::now();
    let files = accepted_corpus();
    let Some(ls) = listings_with(&files, &["-g"]) else {
        return; // reference tools skipped
    };
    let mut total = Agreement::default();
    let mut diffs = String::new();
    let mut unreadable = Vec::new();
    let mut read = 0;
    for (path, text) in &ls {
        if ptxc::target::sm90a::parse_listing(text).is_empty() {
            continue; // a module without kernels
        }
        match recompute_ctrl(text, true, SERIAL) {
            Ok((a, d)) => {
                read += 1;
                total.merge(&a);
                if !d.is_empty() {
                    diffs.push_str(&format!("== {}\n{d}", path.display()));
                }
            }
            Err(e) => unreadable.push(format!("{}: {e}", path.display())),
        }
    }
    println!(
        "== corpora (ZLUDA + pyptx) under ptxas -g: {} files, {read} listings read, {} not \
         readable by the SASS parser\n{}",
        files.len(),
        unreadable.len(),
        total.report()
    );
    for u in &unreadable {
        println!("  not read: {u}");
    }
    println!("(debug-ctrl test: {:.1} s)", t.elapsed().as_secs_f64());
    if let Some(p) = std::env::var_os("PTXC_CTRL_DIFFS") {
        std::fs::write(p, &diffs).expect("write the differences");
    }
    assert!(
        total.total > 10_000,
        "too few instructions: {}",
        total.total
    );
    // Floors: the figures measured (every control word identical on all 243 listings, none
    // unreadable). Keep them there.
    assert_eq!(total.identical, total.total, "{}\n{diffs}", total.report());
    assert!(read >= 243, "only {read} listings read");
    assert!(unreadable.is_empty(), "{}", unreadable.join("\n"));
}

fn compile_g(path: &Path) -> Option<Vec<ptxc::emit::sass::EncodedFunction>> {
    let text = std::fs::read_to_string(path).ok()?;
    let src = SourceFile::new(path.display().to_string(), text);
    let checked = driver::frontend(&src, Arch::SM90A).ok()?;
    let opts = ptxc::passes::Options {
        device_debug: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).ok()?;
    driver::encode(&lowered).ok()
}

#[test]
fn ptxc_g_code_has_no_hazards() {
    let mut files = accepted_corpus();
    files.extend(own_kernels());
    files.extend(probes(0..=20));
    let mut compiled = 0;
    let mut instrs = 0;
    let mut bad = Vec::new();
    for path in &files {
        let Some(funcs) = compile_g(path) else {
            continue;
        };
        compiled += 1;
        for f in &funcs {
            instrs += f.words.len();
            let h = hazards::check_function(&f.name, &f.words)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if !h.is_empty() {
                bad.push(format!(
                    "{} {}:\n{}",
                    path.display(),
                    f.name,
                    hazards::report(&h)
                ));
            }
            // The control words are the serial scheme's.
            let nodes = scoreboard::analyze(&f.instrs).unwrap();
            for (k, (i, node)) in f.instrs.iter().zip(&nodes).enumerate() {
                assert_eq!(
                    i.ctrl,
                    scoreboard::serial_ctrl(i, node),
                    "{} {}+0x{:04x}: `{i}`",
                    path.display(),
                    f.name,
                    k * 16
                );
            }
        }
    }
    println!("hazards: ptxc -g code checked: {compiled} files, {instrs} instructions");
    assert!(compiled > 100, "too few files compile: {compiled}");
    assert!(
        bad.is_empty(),
        "{} functions:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
