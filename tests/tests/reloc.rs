//! Addresses of module variables: ptxas loads a `.global` variable's address from a slot of
//! the compiler's constant bank (`LDC.64 R2, c[0x4][RZ]`) that `.rela.nv.constant4` relocates
//! (`R_CUDA_64 foobar`), with the slots in PTX declaration order; `.const` data is read from
//! `c[0x3][offset]`. ptxc's cubins must carry the same relocations and variable sections.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::emit::model::{Cubin, VarSpace};
use ptxc::frontend::check::Arch;
use ptxc_tests::{ptxas, shared_dir};
use std::path::Path;

/// PTX → (ptxc's listing text, the cubin model read back from ptxc's bytes).
fn compile(name: &str, text: &str) -> (String, Cubin) {
    ptxc_tests::compile_to_cubin(name, text).unwrap_or_else(|e| panic!("{e}"))
}

/// `.rela.nv.constant4` as (offset, type, symbol, addend).
fn bank4_relocs(c: &Cubin) -> Vec<(u64, u32, String, i64)> {
    c.bank4
        .iter()
        .flat_map(|b| &b.relocs)
        .map(|r| (r.offset, r.ty, r.symbol.clone(), r.addend))
        .collect()
}

fn corpus(name: &str) -> (std::path::PathBuf, String) {
    let p = shared_dir().join("corpus/zluda/sm90a").join(name);
    let t = std::fs::read_to_string(&p).expect("corpus file");
    (p, t)
}

/// ptxas's cubin model for a PTX file, when ptxas is installed.
fn ptxas_model(p: &Path) -> Option<Cubin> {
    let res = ptxas(p, &[])?;
    Some(ptxc::emit::read(&res.cubin?).expect("read ptxas cubin"))
}

#[test]
fn global_array_address_comes_from_a_relocated_bank4_slot() {
    let (p, text) = corpus("global_array.ptx");
    let (listing, c) = compile("global_array.ptx", &text);
    assert!(
        listing.contains("LDC.64 R2, c[0x4][RZ] ;"),
        "no LDC.64 of the address slot:\n{listing}"
    );
    let r64 = runtime_abi::reloc::R_CUDA_64;
    assert_eq!(bank4_relocs(&c), vec![(0, r64, "foobar".into(), 0)]);
    assert_eq!(c.bank4.as_ref().map(|b| b.data.len()), Some(8));
    let v = c.variables.iter().find(|v| v.name == "foobar").unwrap();
    assert_eq!(v.space, VarSpace::Global);
    assert_eq!(v.size, 16);
    assert_eq!(
        v.init.as_deref(),
        Some(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..])
    );
    if let Some(want) = ptxas_model(&p) {
        assert_eq!(bank4_relocs(&want), bank4_relocs(&c));
        assert_eq!(want.variables, c.variables);
    }
}

#[test]
fn f32_initializer_and_const_bank_reads_match_ptxas() {
    for name in ["global_array_f32.ptx", "const.ptx"] {
        let (p, text) = corpus(name);
        let (_, c) = compile(name, &text);
        if let Some(want) = ptxas_model(&p) {
            assert_eq!(bank4_relocs(&want), bank4_relocs(&c), "{name}");
            assert_eq!(want.variables, c.variables, "{name}");
        }
    }
    let (listing, c) = compile("const.ptx", &corpus("const.ptx").1);
    for k in ["c[0x3][RZ]", "c[0x3][0x2]", "c[0x3][0x4]", "c[0x3][0x6]"] {
        assert!(listing.contains(k), "no {k}:\n{listing}");
    }
    let v = c
        .variables
        .iter()
        .find(|v| v.name == "constparams")
        .unwrap();
    assert_eq!(v.init.as_deref(), Some(&[10, 0, 20, 0, 30, 0, 40, 0][..]));
}

const TWO: &str = r#".version 8.7
.target sm_90a
.address_size 64

.global .s32 a[4] = {1, 2, 3, 4};
.global .align 8 .u64 b = 7;
.global .f32 z[2];

.visible .entry two(.param .u64 output)
{
	.reg .u64 p, q, o;
	.reg .u32 t, u, v;
	ld.param.u64 o, [output];
	mov.u64 p, b;
	mov.u64 q, a;
	ld.global.u32 t, [p];
	ld.global.u32 u, [q+4];
	ld.global.u32 v, [a+8];
	add.u32 t, t, u;
	add.u32 t, t, v;
	st.global.u32 [o], t;
	mov.u64 p, z;
	st.global.u32 [p], t;
	ret;
}
"#;

#[test]
fn slots_follow_declaration_order_and_direct_symbol_accesses_work() {
    let (listing, c) = compile("two.ptx", TWO);
    let r64 = runtime_abi::reloc::R_CUDA_64;
    assert_eq!(
        bank4_relocs(&c),
        vec![
            (0, r64, "a".into(), 0),
            (8, r64, "b".into(), 0),
            (16, r64, "z".into(), 0)
        ]
    );
    assert!(listing.contains("c[0x4][0x10]"), "{listing}");
    assert!(listing.contains(".64+0x8]"), "ld [a+8]: {listing}");
    let z = c.variables.iter().find(|v| v.name == "z").unwrap();
    assert_eq!(z.init, None, "zero-initialized .global is NOBITS");
    let dir = ptxc_tests::tempdir();
    let p = dir.join("two.ptx");
    std::fs::write(&p, TWO).unwrap();
    if let Some(want) = ptxas_model(&p) {
        assert_eq!(bank4_relocs(&want), bank4_relocs(&c));
        assert_eq!(want.variables, c.variables);
    }
}

/// A `.const` variable's address is its offset in `.nv.constant3`, with no relocation: `mov.u64
/// %rd, x` is that number, and an initializer naming `.const` variables holds their offsets
/// (ptxas: `constparams = {x, y}` → 0x0, 0x8).
#[test]
fn const_addresses_are_bank3_offsets() {
    let (p, text) = corpus("const_ident.ptx");
    let (listing, c) = compile("const_ident.ptx", &text);
    assert!(c.bank4.is_none(), "no address slots");
    let v = c
        .variables
        .iter()
        .find(|v| v.name == "constparams")
        .unwrap();
    assert_eq!(
        v.init.as_deref(),
        Some(&[0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0][..])
    );
    assert!(listing.contains("MOV R6, 0x8 ;"), "{listing}");
    if let Some(want) = ptxas_model(&p) {
        assert_eq!(want.variables, c.variables);
        assert_eq!(bank4_relocs(&want), bank4_relocs(&c));
    }
}

/// The address of a `.func` (`mov.u64 %rd, foobar`) is the offset of its subroutine in the
/// kernel's section, as ptxas writes it (`MOV R7, 0xa0`, no relocation): `lower/link.rs`.
#[test]
fn function_addresses_are_section_offsets() {
    let name = "func_ptr.ptx";
    let (_, text) = corpus(name);
    let src = SourceFile::new(name.to_string(), text);
    let checked = driver::frontend(&src, Arch::SM90A).expect("frontend");
    let (lowered, _) = driver::lower(&checked, &ptxc::passes::Options::new()).expect("lowers");
    let encoded = driver::encode(&lowered).expect("encode");
    let (_, bytes) = driver::cubin(
        &checked,
        &lowered,
        &encoded,
        &ptxc::emit::build::BuildOptions::default(),
    )
    .expect("compiles");
    let c = ptxc::emit::read::read(&bytes).expect("the cubin reads");
    let f = &c.functions[0];
    assert_eq!(f.subroutines.len(), 1);
    assert_eq!(f.subroutines[0].name, "$func_ptr$foobar");
    assert!(f.relocs.is_empty(), "{:?}", f.relocs);
    let off = format!(", {:#x}", f.subroutines[0].offset);
    let listing = ptxc_tests::listing_lines(&encoded[0]);
    assert!(
        listing
            .iter()
            .any(|l| l.contains("MOV R") && l.contains(&off)),
        "{listing:?}"
    );
}
