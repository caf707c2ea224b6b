//! Regenerates ptxas's golden listings in `tests/golden/ptxas/`: for every golden input, the
//! pinned ptxas (`PTXAS` overrides) assembles it and `cuobjdump -sass` lists it; the words and
//! register counts come from the cubin. Each file records the tool versions. Files of inputs
//! that no longer exist are removed.
//!
//! `cargo run -p ptxc-tests --bin golden` (the `golden` recipe of the justfile).

use ptxc::diff;
use ptxc_reftools::Tool;
use ptxc_tests::golden::{self, REGEN_PTXAS};
use std::process::ExitCode;

fn main() -> ExitCode {
    let find = |t: Tool| {
        ptxc_reftools::find(t).map_err(|e| {
            eprintln!("golden: cannot find {t}: {e}");
            ExitCode::from(1)
        })
    };
    let (ptxas, cuobjdump) = match (find(Tool::Ptxas), find(Tool::Cuobjdump)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(c), _) | (_, Err(c)) => return c,
    };
    let version = |p: &std::path::Path| ptxc_reftools::version_line(p).unwrap_or_default();
    let header = format!(
        "# ptxas -arch sm_90a, listed by cuobjdump -sass; regenerate with `{REGEN_PTXAS}`, never edit\n\
         # ptxas: {}\n# cuobjdump: {}\n",
        version(&ptxas),
        version(&cuobjdump)
    );
    let inputs = golden::inputs();
    let dir = golden::golden_dir().join("ptxas");
    let mut keep = std::collections::BTreeSet::new();
    let (mut kernels, mut instrs, mut failed) = (0, 0, 0);
    for input in &inputs {
        let path = input.ptxas_file();
        keep.insert(path.clone());
        match diff::ptxas_listings(&ptxas, &cuobjdump, &input.ptx) {
            Ok((listings, _)) => {
                let mut text = header.clone();
                text.push_str(&format!("# input: {}.ptx\n", input.name));
                diff::write_listings(&mut text, &listings);
                kernels += listings.len();
                instrs += listings.iter().map(|l| l.lines.len()).sum::<usize>();
                if let Some(parent) = path.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                if let Err(e) = ptxc::driver::write_atomically(&path, text.as_bytes()) {
                    eprintln!("golden: cannot write {}: {e}", path.display());
                    return ExitCode::from(1);
                }
            }
            Err(e) => {
                eprintln!("golden: {}: {e}", input.ptx.display());
                failed += 1;
            }
        }
    }
    for stale in golden::sass_files(&dir) {
        if !keep.contains(&stale) {
            let _ = std::fs::remove_file(&stale);
            println!("golden: removed stale {}", stale.display());
        }
    }
    println!(
        "golden: ptxas listings of {} inputs ({kernels} kernels, {instrs} instructions), {} bytes in {}",
        inputs.len() - failed,
        golden::size_of(&dir),
        dir.display()
    );
    if failed > 0 {
        eprintln!("golden: {failed} inputs failed");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
