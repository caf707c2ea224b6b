//! Coverage-guided fuzzing of the PTX frontend: any bytes, parsed and checked, must never panic,
//! and every diagnostic must point inside the input. Run with `just fuzz` (cargo-fuzz, nightly);
//! seed it from the corpora with `just fuzz-seed`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptxc::diag::SourceFile;
use ptxc::frontend::check::Arch;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let src = SourceFile::new("fuzz.ptx", text);
    if let Err(diags) = ptxc::driver::frontend(&src, Arch::SM90A) {
        for d in &diags {
            assert!(d.span.end as usize <= src.text.len() + 1);
            let _ = src.render(d);
        }
    }
});
