//! Texture fetches (`tex.{1d,2d,3d}.v4`), end to end: the fetch instruction, where its handle
//! comes from, and the cubin records, against ptxas 13.1 on the 24 `tex_read_*` kernels of the
//! ZLUDA corpus (texture references and texture objects; float and integer coordinates).
//!
//! What ptxas does (read from its output; see `compiler/src/lower/isel/texture.rs`):
//! * float coordinates → `TEX.LL … 2D|3D` with a level of −32.0 (1D becomes 2D with `y = 0`);
//!   integer coordinates → `TLD.LZ … 1D|2D|3D`;
//! * the handle's low word in a uniform register (`ULDC UR, c[0x0][…]`), the high word `URZ`;
//! * a texture reference is read from a header slot after the parameters, relocated by
//!   `R_CUDA_TEX_HEADER_INDEX` and announced by EIATTR_BINDLESS_TEXTURE_BANK/SURFACE_BANK;
//!   slots are numbered in order of first use in the kernel.

use ptxc::emit::model::{Cubin, ExternKind};
use ptxc_tests::{cuobjdump_sass, ptxas, shared_dir};
use std::path::{Path, PathBuf};

/// PTX → (ptxc's listing, the cubin model read back from ptxc's bytes), or the first error.
fn compile(name: &str, text: &str) -> Result<(String, Cubin), String> {
    ptxc_tests::compile_to_cubin(name, text)
}

fn tex_files() -> Vec<PathBuf> {
    let dir = shared_dir().join("corpus/zluda/sm90a");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("tex_read_") && n.ends_with(".ptx"))
        })
        .collect();
    v.sort();
    v
}

/// The fetch instructions of a listing, registers renamed (`TEX.LL R, R, R, R, UR, 0x0, 2D`),
/// and the constant-bank words read into uniform registers (the handle), in order.
fn fetches(listing: &str) -> (Vec<String>, Vec<String>) {
    let mut tex = Vec::new();
    let mut handles = Vec::new();
    for line in listing.lines() {
        let Some(text) = line
            .split("*/")
            .nth(1)
            .and_then(|s| s.split(';').next())
            .map(str::trim)
        else {
            continue;
        };
        if text.starts_with("TEX") || text.starts_with("TLD") {
            let renamed: String = text
                .split(", ")
                .map(|o| {
                    let o = o.trim();
                    let word = o.rsplit(' ').next().unwrap_or(o);
                    let reg = |p: &str| {
                        word.strip_prefix(p)
                            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                    };
                    let renamed = if reg("UR") {
                        "UR"
                    } else if reg("R") {
                        "R"
                    } else {
                        word
                    };
                    o.replace(word, renamed)
                })
                .collect::<Vec<_>>()
                .join(", ");
            tex.push(renamed);
        } else if text.starts_with("ULDC UR") && !text.contains("0x208") {
            handles.push(text.split(", ").nth(1).unwrap_or("").to_string());
        }
    }
    (tex, handles)
}

/// A function's texture header slots and its bindless texture and surface bank records.
type Slots = (String, Vec<Option<String>>, Option<u8>, Option<u8>);

/// The header slots of each function, by name.
fn slots(c: &Cubin) -> Vec<Slots> {
    let mut v: Vec<_> = c
        .functions
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                f.bank0_slots
                    .iter()
                    .map(|s| s.as_ref().map(|s| s.symbol.clone()))
                    .collect(),
                f.attrs.bindless_texture_bank,
                f.attrs.bindless_surface_bank,
            )
        })
        .collect();
    v.sort();
    v
}

fn externs(c: &Cubin) -> Vec<(String, ExternKind)> {
    c.externs.iter().map(|e| (e.name.clone(), e.kind)).collect()
}

fn ptxas_side(p: &Path) -> Option<(String, Cubin)> {
    let cubin = ptxas(p, &[])?.cubin.expect("ptxas accepts the file");
    let listing = cuobjdump_sass(&cubin)?;
    Some((listing, ptxc::emit::read(&cubin).expect("read ptxas cubin")))
}

#[test]
fn corpus_texture_fetches_match_ptxas() {
    let files = tex_files();
    assert_eq!(
        files.len(),
        24,
        "the ZLUDA corpus has 24 tex_read_* kernels"
    );
    let mut compared = 0;
    for p in &files {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(p).unwrap();
        let (listing, c) = compile(&name, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (tex, handles) = fetches(&listing);
        assert_eq!(tex.len(), 1, "{name}: one fetch\n{listing}");
        let texobj = name.contains("texobj");
        let s = slots(&c);
        if texobj {
            assert!(
                s.iter().all(|f| f.1.is_empty() && f.2.is_none()),
                "{name}: {s:?}"
            );
            assert!(c.externs.is_empty(), "{name}");
        } else {
            assert_eq!(s[0].1, vec![Some("tex".to_string())], "{name}");
            assert_eq!((s[0].2, s[0].3), (Some(0), Some(0)), "{name}");
            assert_eq!(externs(&c), vec![("tex".into(), ExternKind::Texture)]);
        }
        let Some((want_listing, want)) = ptxas_side(p) else {
            continue;
        };
        assert_eq!(fetches(&want_listing), (tex, handles), "{name}");
        assert_eq!(slots(&want), s, "{name}");
        assert_eq!(externs(&want), externs(&c), "{name}");
        compared += 1;
    }
    println!(
        "texture: {compared}/{} kernels compared with ptxas",
        files.len()
    );
}

const TWO_REFS: &str = r#".version 8.7
.target sm_90a
.address_size 64
.global .texref t0;
.global .surfref s0;
.global .texref t1;
.visible .entry one(.param .u64 out, .param .f32 x)
{
    .reg .u64 %rd1; .reg .f32 %fx, %f<4>;
    ld.param.u64 %rd1, [out];
    ld.param.f32 %fx, [x];
    tex.1d.v4.f32.f32 {%f0, %f1, %f2, %f3}, [t1, {%fx}];
    st.global.v4.f32 [%rd1], {%f0, %f1, %f2, %f3};
    ret;
}
.visible .entry two(.param .u64 out, .param .u32 x)
{
    .reg .u64 %rd1; .reg .u32 %ix; .reg .f32 %f<8>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %ix, [x];
    tex.1d.v4.f32.s32 {%f0, %f1, %f2, %f3}, [t1, {%ix}];
    tex.1d.v4.f32.s32 {%f4, %f5, %f6, %f7}, [t0, {%ix}];
    add.f32 %f0, %f0, %f4;
    st.global.v4.f32 [%rd1], {%f0, %f1, %f2, %f3};
    ret;
}
.visible .entry none(.param .u64 out)
{
    .reg .u64 %rd1;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], 1;
    ret;
}
"#;

#[test]
fn header_slots_follow_first_use_and_every_reference_is_a_symbol() {
    let (listing, c) = compile("two_refs.ptx", TWO_REFS).unwrap();
    let s = slots(&c);
    let t = |n: &str| Some(n.to_string());
    assert_eq!(
        s,
        vec![
            ("none".into(), vec![], None, None),
            ("one".into(), vec![t("t1")], Some(0), Some(0)),
            ("two".into(), vec![t("t1"), t("t0")], Some(0), Some(0)),
        ]
    );
    assert_eq!(
        externs(&c),
        vec![
            ("t0".into(), ExternKind::Texture),
            ("s0".into(), ExternKind::Surface),
            ("t1".into(), ExternKind::Texture),
        ]
    );
    // `two`: params end at 0x21c; t1 in the first slot, t0 in the second.
    assert!(listing.contains("c[0x0][0x21c]") && listing.contains("c[0x0][0x220]"));
    let dir = ptxc_tests::tempdir();
    let p = dir.join("two_refs.ptx");
    std::fs::write(&p, TWO_REFS).unwrap();
    if let Some((_, want)) = ptxas_side(&p) {
        assert_eq!(slots(&want), s);
        assert_eq!(externs(&want), externs(&c));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unsupported_texture_forms_are_named_errors() {
    let module = |target: &str, decl: &str, body: &str| {
        format!(
            ".version 8.7\n.target sm_90a{target}\n.address_size 64\n{decl}\n\
             .visible .entry k(.param .u64 out, .param .f32 x)\n{{\n\
             .reg .u64 %rd1; .reg .f32 %fx, %f<4>;\n\
             ld.param.u64 %rd1, [out];\nld.param.f32 %fx, [x];\n{body}\n\
             st.global.v4.f32 [%rd1], {{%f0, %f1, %f2, %f3}};\nret;\n}}\n"
        )
    };
    let cases = [
        (
            module(
                "",
                ".global .texref t;",
                "tex.level.1d.v4.f32.f32 {%f0, %f1, %f2, %f3}, [t, {%fx}], %fx;",
            ),
            "cannot lower `tex.level",
        ),
        (
            module(
                "",
                ".global .texref t;",
                "tex.a1d.v4.f32.f32 {%f0, %f1, %f2, %f3}, [t, {%fx, %fx}];",
            ),
            "cannot lower `tex.a1d",
        ),
        (
            module(
                "",
                ".global .surfref s;",
                "tex.1d.v4.f32.f32 {%f0, %f1, %f2, %f3}, [s, {%fx}];",
            ),
            "`s` is not a texture reference",
        ),
        (
            module(
                ", texmode_independent",
                ".global .texref t;",
                "mov.f32 %f0, %fx;\nmov.f32 %f1, %fx;\nmov.f32 %f2, %fx;\nmov.f32 %f3, %fx;",
            ),
            "texmode_independent",
        ),
    ];
    for (text, want) in cases {
        let e = compile("k.ptx", &text).expect_err(want);
        assert!(e.contains(want), "expected `{want}` in:\n{e}");
        assert!(e.contains("k.ptx:"), "no location:\n{e}");
    }
}
