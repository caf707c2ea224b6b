//! `.pragma "enable_smem_spilling"` (docs/passes/regalloc.md, "Spilling to shared memory"):
//! on the three probes of `11_stack_spill` and two variants of the first (a 200-byte `.shared`
//! variable before the area; `.maxnreg 56`), ptxc builds the per-lane slot address with
//! ptxas's area start and row size, and its cubin reserves what ptxas's does: the same
//! `.nv.shared` section (size and alignment), the same `EIATTR_SHARED_SCRATCH`, the same `-v`
//! smem count. Which values go to shared memory is ptxas's own choice and is not compared.

use ptxc_tests::{compile_to_cubin, cuobjdump_sass, ptxas, shared_dir, tempdir};
use std::path::Path;

/// The immediates of the slot-address code in a listing: the area start of `LEA l, lane,
/// START, 0x2` and the row size of `IMAD.U32 o, warp, ROW, l`.
fn slot_recipe(listing: &str) -> (Option<String>, Option<String>) {
    let operands = |l: &str, op: &str| -> Option<Vec<String>> {
        let body = l.split_once("*/")?.1.split("/*").next()?.trim();
        let rest = body.strip_prefix(op)?.trim().trim_end_matches(';').trim();
        Some(rest.split(", ").map(str::to_string).collect())
    };
    let mut start = None;
    let mut row = None;
    for l in listing.lines() {
        if let Some(ops) = operands(l, "LEA ")
            && ops.len() == 4
            && ops[2].starts_with("0x")
            && ops[3] == "0x2"
        {
            start.get_or_insert(ops[2].clone());
        }
        if let Some(ops) = operands(l, "IMAD.U32 ")
            && ops.len() == 4
            && ops[2].starts_with("0x")
        {
            row.get_or_insert(ops[2].clone());
        }
    }
    (start, row)
}

/// `N bytes smem` of a `-v` report, 0 when absent.
fn smem(log: &str) -> u64 {
    log.lines()
        .filter_map(|l| l.strip_suffix(" bytes smem"))
        .filter_map(|l| l.rsplit(", ").next()?.parse().ok())
        .next()
        .unwrap_or(0)
}

fn compare(name: &str, path: &Path, text: &str) {
    let Some(theirs) = ptxas(path, &["-v"]) else {
        return;
    };
    let cubin = theirs.cubin.expect("ptxas compiles the probe");
    let their_model = ptxc::emit::read(&cubin).expect("ptxas's cubin reads");
    let their_sass = cuobjdump_sass(&cubin).expect("cuobjdump");
    let (listing, ours) = compile_to_cubin(name, text).unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (&ours.functions[0], &their_model.functions[0]);
    assert_eq!(
        a.shared.as_ref().map(|s| (s.size, s.align)),
        b.shared.as_ref().map(|s| (s.size, s.align)),
        "{name}: .nv.shared section"
    );
    assert_eq!(
        a.attrs.shared_scratch, b.attrs.shared_scratch,
        "{name}: EIATTR_SHARED_SCRATCH"
    );
    assert!(
        b.attrs.shared_scratch.is_some(),
        "{name}: ptxas spills to shared"
    );
    assert_eq!(
        slot_recipe(&listing),
        slot_recipe(&their_sass),
        "{name}: area start and row size"
    );
    let src = ptxc::diag::SourceFile::new(name.to_string(), text.to_string());
    let (_, built, _) = ptxc_tests::compile_pipeline(&src).expect("compiles");
    let report = ptxc::emit::build::verbose_report(&built, "sm_90a", 0.0);
    assert_eq!(smem(&report), smem(&theirs.log), "{name}: -v smem");
}

#[test]
fn smem_spilling_reserves_and_addresses_what_ptxas_does() {
    let dir = shared_dir().join("notes/probes/11_stack_spill");
    let base = dir.join("spill_smemprag.ptx");
    let Ok(text) = std::fs::read_to_string(&base) else {
        return;
    };
    for probe in [
        "spill_smemprag.ptx",
        "spill__explicit_smemprag.ptx",
        "spill__reqn2_smemprag.ptx",
    ] {
        let path = dir.join(probe);
        let text = std::fs::read_to_string(&path).expect("probe");
        compare(probe, &path, &text);
    }
    let with_var = text
        .replace(
            ".reg .pred %p<2>;",
            ".reg .pred %p<2>;\n    .shared .align 4 .b8 buf[200];\n    .reg .b32 %sa;",
        )
        .replace(
            "    ret;",
            "    mov.u32 %sa, buf;\n    st.shared.u32 [%sa], %r1;\n    ret;",
        );
    let wider = text.replace(".maxnreg 32", ".maxnreg 56");
    let work = tempdir();
    for (name, text) in [("with_var.ptx", with_var), ("maxnreg56.ptx", wider)] {
        let path = work.join(name);
        std::fs::write(&path, &text).expect("write variant");
        compare(name, &path, &text);
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// A kernel that does not spill builds no base and reserves nothing, pragma or not (ptxas: the
/// probe without `.maxnreg` uses 70 registers, no `SR_CgaCtaId`, no area).
#[test]
fn no_pressure_no_area() {
    let text = r#".version 9.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
{
    .pragma "enable_smem_spilling";
    .reg .b64 %rd<3>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [p];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.u32 %r1, [%rd2];
    st.global.u32 [%rd2+4], %r1;
    ret;
}
"#;
    let (listing, cubin) = compile_to_cubin("k.ptx", text).unwrap_or_else(|e| panic!("{e}"));
    assert!(!listing.contains("SR_CgaCtaId"), "{listing}");
    assert!(cubin.functions[0].attrs.shared_scratch.is_none());
    assert!(cubin.functions[0].shared.is_none());
}
