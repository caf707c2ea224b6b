//! Calls between functions in debug builds (`-g`; `compiler/src/lower/isel/call.rs`,
//! `lower/link.rs`, `emit/sass.rs`; `docs/cubin.md`, "Functions of their own"), against
//! ptxas's cubin for the same PTX:
//!
//! * every `.func` with a body keeps its own section and every call to one is
//!   `CALL.ABS.NOINC 0x0` (a recursive call `CALL.REL.NOINC` to offset 0), the return address
//!   in R20:R21 from two `MOV`s, the callee returning with `RET.ABS.NODEC R20 0x0`;
//! * `.rela.text.<f>` holds, per call, `R_CUDA_ABS55_16_34 <callee>` (not for a recursive
//!   call) and `R_CUDA_ABS32_HI_32`/`_LO_32 <caller> + return offset` on the two `MOV`s, in
//!   ptxas's order, against the same symbols; the addends are the offsets after ptxc's CALLs;
//! * `.nv.callgraph` has ptxas's edges (caller → callee by name, a recursive `.func` to
//!   itself), and no `$kernel$func` subroutine copy is left;
//! * nvdisasm decodes the cubin as `ptxc --emit sass` lists it, and the hazard check passes.

use ptxc::emit::model::{Cubin, Function};
use ptxc_tests::cubin::temp_file;
use ptxc_tests::{Tool, ptxas, require, run_tool, tempdir, workspace_root};
use runtime_abi::reloc::{R_CUDA_ABS32_HI_32, R_CUDA_ABS32_LO_32, R_CUDA_ABS55_16_34};

/// ptxc's pipeline with `-g`: the cubin and `--emit sass`'s listing.
fn compile_g(src: &ptxc::diag::SourceFile) -> (Vec<u8>, String) {
    use ptxc::driver;
    let fail = |d: Vec<ptxc::diag::Diagnostic>| -> ! {
        panic!(
            "{}",
            d.iter()
                .map(|d| src.render(d))
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    let checked =
        driver::frontend(src, ptxc::frontend::check::Arch::SM90A).unwrap_or_else(|d| fail(d));
    let opts = ptxc::passes::Options {
        verify: true,
        device_debug: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).unwrap_or_else(|d| fail(d));
    let encoded = driver::encode(&lowered).unwrap_or_else(|d| fail(d));
    let build = ptxc::emit::build::BuildOptions {
        device_debug: true,
        ..Default::default()
    };
    let cubin = driver::cubin(&checked, &lowered, &encoded, &build)
        .unwrap_or_else(|d| fail(d))
        .1;
    let listing = encoded
        .iter()
        .map(|e| ptxc::emit::sass::listing(e).unwrap())
        .collect::<String>();
    (cubin, listing)
}

/// The calls of `f` to the module's functions (`R_CUDA_ABS55_16_34`), in list order, and
/// the number of return addresses of those and of recursive calls: the `R_CUDA_ABS32_LO_32`
/// and `_HI_32` pairs against `f` but those of calls out of the module (ptxas -g relocates
/// `vprintf`'s call too; ptxc calls it through `.nv.constant4` with `LEPC`, as in optimized
/// builds).
fn call_relocs(c: &Cubin, f: &Function) -> (Vec<String>, usize) {
    let module = |s: &str| c.functions.iter().any(|g| g.name == s);
    let calls: Vec<String> = f
        .relocs
        .iter()
        .filter(|r| r.ty == R_CUDA_ABS55_16_34 && module(&r.symbol))
        .map(|r| r.symbol.clone())
        .collect();
    let external = f
        .relocs
        .iter()
        .filter(|r| r.ty == R_CUDA_ABS55_16_34 && !module(&r.symbol))
        .count();
    let halves = f
        .relocs
        .iter()
        .filter(|r| matches!(r.ty, R_CUDA_ABS32_LO_32 | R_CUDA_ABS32_HI_32) && r.symbol == f.name)
        .count();
    (calls, halves - 2 * external)
}

fn function<'a>(c: &'a Cubin, name: &str) -> &'a Function {
    c.functions
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no function `{name}`"))
}

/// The instruction text at byte offset `at` of an nvdisasm listing of one function.
fn words(code: &[u8]) -> Vec<[u64; 2]> {
    code.chunks_exact(16)
        .map(|c| {
            [
                u64::from_le_bytes(c[..8].try_into().unwrap()),
                u64::from_le_bytes(c[8..].try_into().unwrap()),
            ]
        })
        .collect()
}

fn check(path: &std::path::Path, recursive: &[&str]) {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let Some(reference) = ptxas(path, &["-g"]) else {
        return;
    };
    let theirs = reference.cubin.expect("ptxas -g compiles the probe");
    let text = std::fs::read_to_string(path).unwrap();
    let src = ptxc::diag::SourceFile::new(path.display().to_string(), text);
    let (ours, listing) = compile_g(&src);
    let want = ptxc::emit::read(&theirs).unwrap();
    let got = ptxc::emit::read(&ours).unwrap();
    let names = |c: &Cubin| {
        c.functions
            .iter()
            .map(|f| f.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&want), names(&got), "{name}: sections");
    let mut calls = 0;
    for w in &want.functions {
        let g = function(&got, &w.name);
        assert_eq!(
            call_relocs(&want, w),
            call_relocs(&got, g),
            "{name}: relocations of `.text.{}` against functions",
            w.name
        );
        assert_eq!(
            w.callees, g.callees,
            "{name}: call-graph edges of {}",
            w.name
        );
        assert!(
            g.subroutines.iter().all(|s| !s.name.starts_with('$')),
            "{name}: `{}` keeps a copy of a `.func`",
            g.name
        );
        // Each return address is the offset after the next CALL of ptxc's code.
        let code = words(&g.code);
        for r in g.relocs.iter().filter(|r| {
            matches!(r.ty, R_CUDA_ABS32_LO_32 | R_CUDA_ABS32_HI_32) && r.symbol == g.name
        }) {
            let at = (r.offset / 16) as usize;
            let call = (at..code.len())
                .find(|&k| {
                    ptxc::target::sm90a::decode_at(code[k], k as u64 * 16)
                        .is_ok_and(|i| i.mnemonic == "CALL")
                })
                .expect("a CALL after the return address");
            assert_eq!(
                r.addend,
                (call as i64 + 1) * 16,
                "{name}: the return address at {:#x} in {}",
                r.offset,
                g.name
            );
            calls += usize::from(r.ty == R_CUDA_ABS32_LO_32);
        }
        let abs = g
            .relocs
            .iter()
            .filter(|r| r.ty == R_CUDA_ABS55_16_34)
            .count();
        assert!(abs <= calls, "{name}: a CALL.ABS without a return address");
    }
    for f in recursive {
        assert!(
            function(&got, f).callees.iter().any(|c| c == f),
            "{name}: `{f}` calls itself"
        );
    }
    assert!(calls > 0, "{name}: no call was checked");
    // The cubin decodes as the listing says, and is free of hazards.
    if require(Tool::Nvdisasm, "nvdisasm").is_some() {
        let dir = tempdir();
        let p = temp_file(&dir, &format!("{name}.cubin"), &ours);
        let text = run_tool(Tool::Nvdisasm, &["-c", "-hex"], &p).expect("nvdisasm");
        // Instructions per function: nvdisasm's `.text.<f>:` sections, the listing's
        // `Function : <f>` blocks.
        let per_function = |text: &str, header: &dyn Fn(&str) -> Option<String>| {
            let mut out: Vec<(String, Vec<String>)> = Vec::new();
            for l in text.lines() {
                if let Some(f) = header(l.trim()) {
                    out.push((f, Vec::new()));
                } else if let Some((_, rest)) = l.trim().split_once("*/")
                    && l.trim().starts_with("/*")
                    && let Some(cur) = out.last_mut()
                {
                    let ins = rest.split("/*").next().unwrap_or("");
                    let ins = ins.trim().trim_end_matches(';').trim();
                    if !ins.is_empty() {
                        cur.1
                            .push(ins.split_whitespace().collect::<Vec<_>>().join(" "));
                    }
                }
            }
            out.sort();
            out
        };
        let decoded = per_function(&text, &|l| {
            l.strip_prefix(".text.")
                .and_then(|r| r.strip_suffix(':'))
                .map(str::to_string)
        });
        let listed = per_function(&listing, &|l| {
            l.strip_prefix("Function : ").map(str::to_string)
        });
        // nvdisasm names relocated operands (`32@lo((k + .L_x_0@srel))`, `` `(f) ``) and
        // branch targets (`` `(.L_x_7) ``) where the listing has the number.
        let same = |d: &str, l: &str| {
            d.replace(" ;", ";") == l.replace(" ;", ";")
                || (d.starts_with("MOV R2") && d.contains("32@") && l.ends_with(", 0x0"))
                || d.split_once("`(").is_some_and(|(head, _)| {
                    l.strip_prefix(head).is_some_and(|t| {
                        t.trim_start_matches("0x")
                            .chars()
                            .all(|c| c.is_ascii_hexdigit())
                    })
                })
        };
        assert_eq!(
            decoded.iter().map(|f| &f.0).collect::<Vec<_>>(),
            listed.iter().map(|f| &f.0).collect::<Vec<_>>(),
            "{name}: functions"
        );
        for ((f, d), (_, l)) in decoded.iter().zip(&listed) {
            assert_eq!(d.len(), l.len(), "{name}: instruction count of {f}");
            for (d, l) in d.iter().zip(l) {
                assert!(same(d, l), "{name}: {f}: nvdisasm `{d}`, listing `{l}`");
            }
        }
        let decoded: Vec<&String> = decoded.iter().flat_map(|f| &f.1).collect();
        assert!(
            decoded.iter().any(|d| d.starts_with("RET.ABS.NODEC R20")),
            "{name}: no RET.ABS"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    let h = ptxc::check::hazards::check_cubin(&ours).unwrap();
    assert!(h.is_empty(), "{name}: hazards {h:?}");
}

/// A kernel calling a local `.func` (`debug_funcs.ptx`: `k` → `called`).
#[test]
fn debug_call_to_local_func_follows_ptxas() {
    check(
        &workspace_root().join("tests/tests/cubin_ptx/debug_funcs.ptx"),
        &[],
    );
}

/// Two `.func`s, one recursive (`CALL.REL.NOINC` to itself, no `R_CUDA_ABS55_16_34`), and a
/// call out of the module (`vprintf`, whose relocations are not compared: ptxc calls it
/// through `.nv.constant4` as in optimized builds, ptxas -g with `R_CUDA_ABS55_16_34`).
#[test]
fn debug_recursive_calls_follow_ptxas() {
    check(
        &workspace_root().join("tests/kernels/device_calls.ptx"),
        &["_Z4polyfi"],
    );
}
