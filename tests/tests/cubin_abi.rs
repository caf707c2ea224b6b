//! The runtime-abi tables checked against ptxas and cuobjdump at test time: every EIATTR kind's
//! code, format and typed encoder against the cubin of the file `ATTRS` names as its source, and
//! the parameter layout (natural alignment, `.align`, pointers, blocks above 4 KiB and the
//! KPARAM_INFO / KPARAM_INFO_V2 choice) against the records ptxas writes for generated kernels.

use ptxc::emit::elf::Elf;
use ptxc_tests::{Tool, ptxas, run_tool, shared_dir, tempdir};
use runtime_abi::eiattr::{ATTRS, KParamInfo, Record, attr_name};
use runtime_abi::param::{self, ParamSpec, Pointee, PtrSpace};
use std::collections::BTreeMap;
use std::path::Path;

/// The `.nv.info*` sections of a cubin: name → raw bytes.
fn nv_info(cubin: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let elf = Elf::parse(cubin).expect("ptxas cubin parses");
    let mut out = BTreeMap::new();
    for (i, n) in elf.names.iter().enumerate() {
        if n.starts_with(".nv.info") {
            out.insert(n.clone(), elf.section_data(i).expect("data").to_vec());
        }
    }
    out
}

/// cuobjdump -elf's attribute names per `.nv.info*` section, in order.
fn cuobjdump_attr_names(cubin: &[u8]) -> Option<BTreeMap<String, Vec<String>>> {
    let dir = tempdir();
    let p = dir.join("x.cubin");
    std::fs::write(&p, cubin).expect("write");
    let text = run_tool(Tool::Cuobjdump, &["-elf"], &p)?;
    let _ = std::fs::remove_dir_all(&dir);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if line.starts_with(".nv.info") {
            cur = Some(line.trim().to_string());
            out.entry(line.trim().to_string()).or_default();
        } else if line.starts_with('.') {
            cur = None;
        } else if let (Some(c), Some(a)) = (&cur, line.trim().strip_prefix("Attribute:")) {
            out.get_mut(c).expect("section").push(a.trim().to_string());
        }
    }
    Some(out)
}

#[test]
fn every_eiattr_kind_matches_ptxas_and_cuobjdump() {
    let mut checked = 0;
    for info in ATTRS {
        let src = shared_dir().join(info.source);
        let Some(res) = ptxas(&src, &[]) else { return };
        let cubin = res
            .cubin
            .unwrap_or_else(|| panic!("ptxas rejects {}", src.display()));
        let Some(names) = cuobjdump_attr_names(&cubin) else {
            return;
        };
        let mut seen = 0;
        for (sec, raw) in nv_info(&cubin) {
            let recs = Record::decode_all(&raw).unwrap_or_else(|e| panic!("{sec}: {e}"));
            assert_eq!(Record::encode_all(&recs), raw, "{sec} of {}", src.display());
            let ours: Vec<String> = recs.iter().map(|r| attr_name(r.attr())).collect();
            assert_eq!(
                ours,
                names[&sec],
                "attribute names of {sec} in {}",
                src.display()
            );
            for r in recs.iter().filter(|r| r.attr() == info.code) {
                assert!(
                    !matches!(r, Record::Other { .. }),
                    "{}: no typed decoding in {}: {r:?}",
                    info.name,
                    src.display()
                );
                assert_eq!(r.encode()[0], info.format as u8, "{}", info.name);
                seen += 1;
            }
        }
        assert!(seen > 0, "{} not found in {}", info.name, src.display());
        checked += 1;
    }
    println!("EIATTR kinds checked against ptxas: {checked}");
}

/// A kernel with the given `.param` declarations.
fn kernel_with(params: &[&str]) -> String {
    let decl: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(i, p)| match p.find('[') {
            // `.align 16 .b8 [8192]`: the name goes before the brackets.
            Some(b) => format!(".param {}p{i}{}", &p[..b], &p[b..]),
            None => format!(".param {p} p{i}"),
        })
        .collect();
    format!(
        ".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k({})\n{{\n  ret;\n}}\n",
        decl.join(", ")
    )
}

fn assemble(dir: &Path, name: &str, ptx: &str) -> Option<Vec<u8>> {
    let p = dir.join(format!("{name}.ptx"));
    std::fs::write(&p, ptx).expect("write ptx");
    let res = ptxas(&p, &[])?;
    Some(
        res.cubin
            .unwrap_or_else(|| panic!("ptxas rejects {name}: {}\n{ptx}", res.log)),
    )
}

#[test]
fn parameter_layout_matches_ptxas() {
    let g = |s, a| Pointee::ptr(s, a);
    // (PTX declarations, the same parameters as ParamSpecs)
    let big = |n| ParamSpec::bytes(n, 4);
    let cases: Vec<(&str, Vec<&str>, Vec<ParamSpec>)> = vec![
        (
            "scalars",
            vec![".u64", ".u8", ".u16", ".u32", ".f64", ".b16", ".s8"],
            [8, 1, 2, 4, 8, 2, 1].map(ParamSpec::scalar).to_vec(),
        ),
        (
            "over_4k",
            vec![".u64", ".u8", ".align 16 .b8 [8192]", ".u32"],
            vec![
                ParamSpec::scalar(8),
                ParamSpec::scalar(1),
                ParamSpec::bytes(8192, 16),
                ParamSpec::scalar(4),
            ],
        ),
        (
            "exactly_legacy_limit",
            vec![".u64", ".align 4 .b8 [4344]"],
            vec![ParamSpec::scalar(8), big(4344)],
        ),
        (
            "one_past_legacy_limit",
            vec![".u64", ".align 4 .b8 [4345]"],
            vec![ParamSpec::scalar(8), big(4345)],
        ),
        (
            "bank_alignment",
            vec![
                ".f32",
                ".u64",
                ".u32",
                ".u32",
                ".align 64 .b8 [128]",
                ".u32",
            ],
            vec![
                ParamSpec::scalar(4),
                ParamSpec::scalar(8),
                ParamSpec::scalar(4),
                ParamSpec::scalar(4),
                ParamSpec::bytes(128, 64),
                ParamSpec::scalar(4),
            ],
        ),
        (
            "pointers",
            vec![
                ".u64 .ptr .global .align 16",
                ".u64 .ptr .shared .align 8",
                ".u64 .ptr .const .align 4",
                ".u64 .ptr .local .align 2",
                ".u64 .ptr .align 32",
                ".u64 .ptr .global",
            ],
            vec![
                ParamSpec {
                    pointee: g(PtrSpace::Global, Some(16)),
                    ..ParamSpec::scalar(8)
                },
                ParamSpec {
                    pointee: g(PtrSpace::Shared, Some(8)),
                    ..ParamSpec::scalar(8)
                },
                ParamSpec {
                    pointee: g(PtrSpace::Const, Some(4)),
                    ..ParamSpec::scalar(8)
                },
                ParamSpec {
                    pointee: g(PtrSpace::Local, Some(2)),
                    ..ParamSpec::scalar(8)
                },
                ParamSpec {
                    pointee: g(PtrSpace::Generic, Some(32)),
                    ..ParamSpec::scalar(8)
                },
                ParamSpec {
                    pointee: g(PtrSpace::Global, None),
                    ..ParamSpec::scalar(8)
                },
            ],
        ),
        ("none", vec![], vec![]),
        (
            "many",
            [".u32", ".u16", ".u8", ".u64"].repeat(10),
            [4, 2, 1, 8]
                .repeat(10)
                .into_iter()
                .map(ParamSpec::scalar)
                .collect(),
        ),
    ];
    let dir = tempdir();
    for (name, decls, specs) in cases {
        let Some(cubin) = assemble(&dir, name, &kernel_with(&decls)) else {
            return;
        };
        let layout = param::layout(&specs).expect("layout");
        let info = nv_info(&cubin);
        let recs = Record::decode_all(&info[".nv.info.k"]).expect("records");
        let mut v1: Vec<KParamInfo> = Vec::new();
        let mut v2: Vec<KParamInfo> = Vec::new();
        let mut cbank_size = None;
        for r in &recs {
            match r {
                Record::KParamInfo(k) => v1.push(*k),
                Record::KParamInfoV2(k) => v2.push(*k),
                Record::CbankParamSize(s) => cbank_size = Some(u32::from(*s)),
                _ => {}
            }
        }
        assert_eq!(
            !v2.is_empty(),
            layout.uses_kparam_info_v2(),
            "{name}: KPARAM_INFO kind"
        );
        let mut got = if v2.is_empty() { v1 } else { v2 };
        got.reverse(); // ptxas writes the last parameter first
        assert_eq!(got.len(), layout.slots.len(), "{name}: parameter count");
        for (k, s) in got.iter().zip(&layout.slots) {
            assert_eq!(
                u32::from(k.offset),
                s.offset,
                "{name}: offset of parameter {}",
                s.ordinal
            );
            assert_eq!(k.size, s.size, "{name}: size of parameter {}", s.ordinal);
            assert_eq!(k.ordinal, s.ordinal, "{name}");
            if !layout.uses_kparam_info_v2() {
                assert_eq!(
                    (k.space, k.log_align),
                    (s.pointee.space, s.pointee.log_align),
                    "{name}: pointee of parameter {}",
                    s.ordinal
                );
                assert_eq!(k.cbank, param::KPARAM_CBANK);
            }
        }
        assert_eq!(
            cbank_size,
            (!specs.is_empty()).then_some(layout.size),
            "{name}: CBANK_PARAM_SIZE"
        );
        let elf = Elf::parse(&cubin).expect("parse");
        let c0 = elf.find(".nv.constant0.k").expect("constant bank 0");
        assert_eq!(
            elf.sections[c0].size,
            u64::from(layout.constant0_size()),
            "{name}: .nv.constant0 size"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compat_section_decodes_and_names_match() {
    let src = shared_dir().join("notes/probes/00_abi/simple.ptx");
    let Some(res) = ptxas(&src, &[]) else { return };
    let cubin = res.cubin.expect("cubin");
    let elf = Elf::parse(&cubin).expect("parse");
    let raw = elf
        .section_data(elf.find(".nv.compat").expect(".nv.compat"))
        .expect("data");
    let c = runtime_abi::compat::Compat::decode(raw).expect("ptxas's .nv.compat decodes");
    assert_eq!(c, runtime_abi::compat::Compat::default());
    assert_eq!(c.encode(), raw);
    let dir = tempdir();
    let p = dir.join("x.cubin");
    std::fs::write(&p, &cubin).expect("write");
    let Some(text) = run_tool(Tool::Cuobjdump, &["-elf"], &p) else {
        return;
    };
    let after = text
        .split("\n.nv.compat\n")
        .nth(1)
        .expect(".nv.compat in cuobjdump -elf");
    let names: Vec<&str> = after
        .lines()
        .take_while(|l| !l.starts_with('.'))
        .filter_map(|l| l.trim().strip_prefix("Attribute:"))
        .map(str::trim)
        .collect();
    let ours: Vec<String> = [
        runtime_abi::compat::CUDA_ACCELERATOR_TARGET,
        runtime_abi::compat::ISA_CLASS,
        runtime_abi::compat::MERCURY_ISA_MAJOR_MINOR_VERSION,
        runtime_abi::compat::INST_TENSORMAP_V1,
        runtime_abi::compat::CAN_FASTPATH_FINALIZE,
    ]
    .map(runtime_abi::compat::attr_name)
    .to_vec();
    assert_eq!(names, ours);
    let _ = std::fs::remove_dir_all(&dir);
}

/// ptxc's code reads `.align 64` parameters where the driver puts them: at a multiple of 64 in
/// constant bank 0, whose parameter block starts at 0x210 (ptxas 13.1: the first `.align 64 .b8
/// [128]` parameter at offset 0x30, its word 1 read from `c[0x0][0x244]`; the second at 0xf0,
/// its word 2 from `c[0x0][0x308]`; pyptx `fa_ws_pingpong`'s tensor maps likewise).
#[test]
fn aligned_parameters_are_read_where_the_driver_puts_them() {
    use ptxc::diag::SourceFile;
    use ptxc::driver;
    use ptxc::frontend::check::Arch;
    let text = ".version 8.7\n.target sm_90a\n.address_size 64\n\
                .visible .entry a(.param .align 64 .b8 t[128], .param .u32 n, \
                .param .align 64 .b8 u[128], .param .u64 p)\n{\n\
                .reg .b32 %r<4>; .reg .b64 %rd<3>;\n\
                ld.param.u32 %r1, [t+4]; ld.param.u32 %r2, [u+8]; ld.param.u64 %rd1, [p];\n\
                add.u32 %r1, %r1, %r2; st.global.u32 [%rd1], %r1;\nret;\n}\n";
    let src = SourceFile::new("a.ptx".to_string(), text.to_string());
    let checked = driver::frontend(&src, Arch::SM90A).unwrap();
    let (lowered, _) = driver::lower(&checked, &ptxc::passes::Options::new()).unwrap();
    let encoded = driver::encode(&lowered).unwrap();
    let (built, _) = driver::cubin(&checked, &lowered, &encoded, &Default::default())
        .expect("the parameter offsets agree with the driver's");
    let listing = ptxc_tests::listing_lines(&encoded[0]).join("\n");
    for bank in ["c[0x0][0x244]", "c[0x0][0x308]"] {
        assert!(listing.contains(bank), "{bank} in\n{listing}");
    }
    let layout = param::layout(&built.cubin.functions[0].params).unwrap();
    let offsets: Vec<Option<u32>> = (0..4).map(|i| layout.bank_offset(i)).collect();
    assert_eq!(offsets, [0x240, 0x2c0, 0x300, 0x380].map(Some));
}
