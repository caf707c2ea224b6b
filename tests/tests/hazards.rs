//! The hazard checker (`ptxc check`, `ptxc::check::hazards`) against real code:
//!
//! * every ptxas cubin of the corpora, the project's kernels and the probes has 0 hazards (this
//!   validates the latency model the checker shares with the scoreboard pass: ptxas's code is
//!   correct, so a latency above what ptxas leaves would show here);
//! * ptxc's encoded code for every file it compiles has 0 hazards (the scoreboard pass is
//!   correct by an independent check);
//! * a listing with a deliberately removed wait, or a shortened stall, is reported.

use ptxc::check::hazards::{self, Hazard};
use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc_tests::{accepted_corpus, own_kernels, probes, ptxas, workspace_root};
use std::path::{Path, PathBuf};

fn files() -> Vec<PathBuf> {
    let mut files = accepted_corpus();
    files.extend(own_kernels());
    files.extend(probes(0..=20));
    files
}

fn compile(path: &Path) -> Result<Vec<ptxc::emit::sass::EncodedFunction>, String> {
    compile_all(path).map(|(_, _, encoded)| encoded)
}

/// The checked module, the lowered one and the encoded functions (what a cubin is built from).
fn compile_all(
    path: &Path,
) -> Result<
    (
        driver::Checked,
        ptxc::lower::Lowered,
        Vec<ptxc::emit::sass::EncodedFunction>,
    ),
    String,
> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let src = SourceFile::new(path.display().to_string(), text);
    let checked = driver::frontend(&src, Arch::SM90A).map_err(|d| src.render(&d[0]))?;
    let opts = ptxc::passes::Options::new();
    let (lowered, _) = driver::lower(&checked, &opts).map_err(|d| src.render(&d[0]))?;
    let encoded = driver::encode(&lowered).map_err(|d| src.render(&d[0]))?;
    Ok((checked, lowered, encoded))
}

fn show(what: &str, bad: &[(PathBuf, Vec<Hazard>)]) -> String {
    let n: usize = bad.iter().map(|(_, h)| h.len()).sum();
    let mut s = format!("{what}: {n} hazards in {} files\n", bad.len());
    for (p, h) in bad.iter().take(10) {
        s.push_str(&format!("== {}\n", p.display()));
        for x in h.iter().take(5) {
            s.push_str(&format!("  {x}\n"));
        }
    }
    s
}

#[test]
fn ptxas_cubins_have_no_hazards() {
    let mut checked = 0;
    let mut functions = 0;
    let mut bad = Vec::new();
    for path in files() {
        let Some(r) = ptxas(&path, &[]) else {
            return; // reference tools skipped
        };
        let Some(cubin) = r.cubin else { continue };
        let h = hazards::check_cubin(&cubin).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        checked += 1;
        functions += ptxc::emit::read(&cubin).map_or(0, |c| c.functions.len());
        if !h.is_empty() {
            bad.push((path, h));
        }
    }
    println!("hazards: ptxas cubins checked: {checked} files, {functions} functions");
    assert!(checked > 500, "too few cubins: {checked}");
    assert!(bad.is_empty(), "{}", show("ptxas", &bad));
}

#[test]
fn ptxc_code_has_no_hazards() {
    let mut compiled = 0;
    let mut instrs = 0;
    let mut bad = Vec::new();
    for path in files() {
        let Ok(funcs) = compile(&path) else { continue };
        compiled += 1;
        let mut h = Vec::new();
        for f in &funcs {
            instrs += f.words.len();
            h.extend(
                hazards::check_function(&f.name, &f.words)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            );
        }
        if !h.is_empty() {
            bad.push((path, h));
        }
    }
    println!("hazards: ptxc code checked: {compiled} files, {instrs} instructions");
    assert!(compiled > 100, "too few files compile: {compiled}");
    assert!(bad.is_empty(), "{}", show("ptxc", &bad));
}

/// The same through the bytes users get: every cubin ptxc writes (the file `ptxc -o` would
/// produce), read back by the checker as it reads ptxas's, has 0 hazards.
#[test]
fn ptxc_cubins_have_no_hazards() {
    let mut written = 0;
    let mut functions = 0;
    let mut bad = Vec::new();
    for path in files() {
        let Ok((checked, lowered, encoded)) = compile_all(&path) else {
            continue;
        };
        let build = ptxc::emit::build::BuildOptions {
            device_debug: false,
            tool_options: "-arch sm_90a".into(),
        };
        let Ok((_, cubin)) = driver::cubin(&checked, &lowered, &encoded, &build) else {
            continue;
        };
        written += 1;
        functions += encoded.len();
        let h = hazards::check_cubin(&cubin).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if !h.is_empty() {
            bad.push((path, h));
        }
    }
    println!("hazards: ptxc cubins checked: {written} files, {functions} functions");
    assert!(written > 100, "too few cubins: {written}");
    assert!(bad.is_empty(), "{}", show("ptxc cubin", &bad));
}

/// Removing any one wait that the pass put in ptxc's code for the sample kernels, where the
/// waited scoreboard covers a result the instruction reads, makes the checker report that read.
#[test]
fn removed_waits_are_reported() {
    let mut removed = 0;
    for name in ["vector_add.ptx", "cluster_exchange.ptx"] {
        let path = workspace_root().join("samples").join(name);
        let funcs = compile(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        for f in &funcs {
            assert!(
                hazards::check_function(&f.name, &f.words)
                    .unwrap()
                    .is_empty()
            );
            for (k, why) in f.why.iter().enumerate() {
                let reads_a_result = why.waits.iter().any(|(_, evs)| evs.iter().any(|e| !e.1));
                if !reads_a_result {
                    continue;
                }
                let mut words = f.words.clone();
                words[k][1] &= !(0x3f_u64 << (116 - 64)); // the wait mask, bits 121:116
                let h = hazards::check_function(&f.name, &words).unwrap();
                assert!(
                    h.iter().any(|x| x.addr == k as u64 * 16),
                    "{name}+0x{:04x}: no hazard reported without its wait\n{}",
                    k * 16,
                    hazards::report(&h)
                );
                removed += 1;
            }
        }
    }
    assert!(removed >= 5, "only {removed} waits tried");
}

/// `ptxc check` on a cubin: the report format and the exit status.
#[test]
fn check_command_reports_and_exits() {
    let path = workspace_root().join("samples").join("vector_add.ptx");
    let Some(r) = ptxas(&path, &[]) else { return };
    let cubin = r.cubin.expect("ptxas compiles the sample");
    let dir = ptxc_tests::tempdir();
    let good = dir.join("good.cubin");
    std::fs::write(&good, &cubin).unwrap();
    let bin = ptxc_tests::ptxc_bin!();
    let o = std::process::Command::new(&bin)
        .arg("check")
        .arg(&good)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "hazards: 0\n");
    // Clear every wait mask in the code: some read is then unprotected.
    let model = ptxc::emit::read(&cubin).unwrap();
    let code = &model.functions[0].code;
    let start = cubin
        .windows(code.len())
        .position(|w| w == code.as_slice())
        .expect("the code is in the file");
    let mut broken = cubin.clone();
    for k in (0..code.len()).step_by(16) {
        let at = start + k + 8;
        let mut hi = u64::from_le_bytes(broken[at..at + 8].try_into().unwrap());
        hi &= !(0x3f_u64 << (116 - 64));
        broken[at..at + 8].copy_from_slice(&hi.to_le_bytes());
    }
    let bad = dir.join("bad.cubin");
    std::fs::write(&bad, &broken).unwrap();
    let o = std::process::Command::new(&bin)
        .arg("check")
        .arg(&bad)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("RAW on R"), "{out}");
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("hazards: ") && last != "hazards: 0",
        "{out}"
    );
    // Not a cubin: a diagnostic, exit 1, no panic.
    let junk = dir.join("junk.cubin");
    std::fs::write(&junk, b"not an ELF").unwrap();
    let o = std::process::Command::new(&bin)
        .arg("check")
        .arg(&junk)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("error"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--emit sass --ctrl` shows the encoded control words; `--explain-ctrl` names the producers.
#[test]
fn ctrl_listing_shows_the_encoded_control_words() {
    let path = workspace_root().join("samples").join("vector_add.ptx");
    let funcs = compile(&path).expect("the sample compiles");
    let run = |flag: &str| {
        let o = std::process::Command::new(ptxc_tests::ptxc_bin!())
            .args(["--emit", "sass", flag])
            .arg(&path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let listing = run("--ctrl");
    let shown: Vec<&str> = listing
        .lines()
        .filter_map(|l| {
            l.split_once("*/ ")
                .map(|(_, r)| r.split("  ").next().unwrap_or(""))
        })
        .collect();
    let words: Vec<String> = funcs[0]
        .words
        .iter()
        .map(|w| {
            let i = ptxc::target::sm90a::decode(*w).unwrap();
            ptxc::emit::scoreboard::ctrl_text(&i.ctrl)
        })
        .collect();
    assert_eq!(shown, words);
    assert!(shown.iter().any(|c| c.contains(":W3:")), "{listing}");
    let explained = run("--explain-ctrl");
    let fadd = explained
        .lines()
        .find(|l| l.contains("FADD"))
        .expect("the FADD line");
    // The FADD reads both loads' results: its wait names both, by address.
    let loads: Vec<String> = explained
        .lines()
        .filter(|l| l.contains(" LDG."))
        .filter_map(|l| l.split("/*").nth(1)?.split("*/").next().map(str::to_string))
        .collect();
    assert_eq!(loads.len(), 2, "{explained}");
    for a in &loads {
        assert!(
            fadd.contains("wait SB") && fadd.contains(&format!("0x{a} LDG (result)")),
            "{fadd}"
        );
    }
}

/// `--explain-ctrl` gives the rule that set a stall: an `ERRBAR` before a `CGAERRBAR` stalls 0
/// because the two issue together (a later line once overwrote the rule with the generic
/// reason).
#[test]
fn explained_stall_names_the_errbar_rule() {
    let dir = ptxc_tests::tempdir();
    let path = dir.join("errbar.ptx");
    std::fs::write(
        &path,
        ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k() {\n fence.acq_rel.cluster;\n ret;\n}\n",
    )
    .unwrap();
    let o = std::process::Command::new(ptxc_tests::ptxc_bin!())
        .args(["-arch", "sm_90a", "--emit", "sass", "--explain-ctrl"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let errbar = text
        .lines()
        .find(|l| l.contains(" ERRBAR ;"))
        .expect("the ERRBAR line");
    assert!(
        errbar.contains(":S00]") && errbar.contains("issues together with the CGAERRBAR"),
        "{errbar}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
