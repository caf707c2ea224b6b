//! The debug sections of ptxc's cubins (`-g`, `.target …, debug`; `compiler/src/emit/debug.rs`)
//! against ptxas's for the same PTX:
//!
//! * `cuobjdump -elf` accepts ptxc's cubin;
//! * `nvdisasm -g` prints the same source lines: per instruction where the two instruction
//!   streams agree, else the same set of (file, line) pairs;
//! * `.nv_debug_ptx_txt`, the `.debug_line` header (directories, files with time stamps and
//!   sizes) and the CIE of `.debug_frame` are ptxas's bytes;
//! * the PTX's `.section` blocks are ptxas's bytes where nothing is relocated, and relocate the
//!   same places against the same symbols (the addends are addresses in ptxc's code).
//!
//! Prints what is byte-identical per file.

use ptxc::emit::model::{Cubin, DebugSection};
use ptxc_tests::cubin::temp_file;
use ptxc_tests::{Tool, ptxas, require, run_tool, shared_dir, tempdir, workspace_root};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn files() -> Vec<PathBuf> {
    let root = workspace_root();
    let zluda = shared_dir().join("corpus/zluda/sm90a");
    vec![
        root.join("tests/kernels/debug_line_info.ptx"),
        root.join("tests/sass-probes/ptx/debug_loc.ptx"),
        zluda.join("vectorAdd_kernel64.ptx"),
        zluda.join("_Z9vectorAddPKfS0_Pfi.ptx"),
    ]
}

/// `nvdisasm -g`: each instruction (text without address) with the `//## File "f", line n` in
/// force.
fn annotated(listing: &str) -> Vec<(String, Option<(String, u32)>)> {
    let mut cur = None;
    let mut out = Vec::new();
    for l in listing.lines() {
        let t = l.trim();
        if let Some(rest) = t.strip_prefix("//## File \"") {
            let (file, line) = rest
                .split_once("\", line ")
                .expect("an nvdisasm line annotation");
            let line = line.split_whitespace().next().unwrap().parse().unwrap();
            cur = Some((file.to_string(), line));
        } else if let Some((_, ins)) = t.split_once("*/")
            && t.starts_with("/*")
        {
            let ins = ins.trim().trim_end_matches(';').trim();
            if ins.starts_with("NOP") || ins.starts_with(".") {
                continue;
            }
            out.push((ins.to_string(), cur.clone()));
        }
    }
    out
}

fn section<'a>(c: &'a Cubin, name: &str) -> Option<&'a DebugSection> {
    c.debug_sections.iter().find(|d| d.name == name)
}

/// Bytes equal outside the relocated 8-byte fields, and the same fields relocated against the
/// same symbols.
fn same_outside_relocs(want: &DebugSection, got: &DebugSection) -> Result<(), String> {
    let sites = |d: &DebugSection| -> Vec<(u64, String)> {
        d.data
            .relocs
            .iter()
            .map(|r| (r.offset, r.symbol.clone()))
            .collect()
    };
    if sites(want) != sites(got) {
        return Err(format!(
            "relocated fields differ: ptxas {:?}, ptxc {:?}",
            sites(want),
            sites(got)
        ));
    }
    if want.data.data.len() != got.data.data.len() {
        return Err("sizes differ".into());
    }
    let masked: BTreeSet<usize> = want
        .data
        .relocs
        .iter()
        .flat_map(|r| r.offset as usize..r.offset as usize + 8)
        .collect();
    for (i, (a, b)) in want.data.data.iter().zip(&got.data.data).enumerate() {
        if a != b && !masked.contains(&i) {
            return Err(format!("byte {i:#x}: ptxas {a:#04x}, ptxc {b:#04x}"));
        }
    }
    Ok(())
}

/// The header of a line program after its length: version, header length, parameters, the
/// directory and file tables.
fn line_header(d: &DebugSection) -> &[u8] {
    let b = &d.data.data;
    let len = u32::from_le_bytes(b[6..10].try_into().unwrap()) as usize;
    &b[4..10 + len]
}

#[test]
fn debug_sections_follow_ptxas() {
    let (Some(_), Some(_)) = (
        require(Tool::Nvdisasm, "nvdisasm -g"),
        require(Tool::Cuobjdump, "cuobjdump -elf"),
    ) else {
        return;
    };
    let dir = tempdir();
    let mut report = Vec::new();
    for path in files() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(reference) = ptxas(&path, &[]) else {
            return;
        };
        let theirs = reference
            .cubin
            .unwrap_or_else(|| panic!("ptxas refuses {name}: {}", reference.log));
        let text = std::fs::read_to_string(&path).unwrap();
        let src = ptxc::diag::SourceFile::new(path.display().to_string(), text);
        let (_, _, ours) = ptxc_tests::compile_pipeline(&src)
            .unwrap_or_else(|d| panic!("ptxc refuses {name}: {}", src.render(&d[0])));
        let ours_path = temp_file(&dir, &format!("ptxc-{name}.cubin"), &ours);
        let theirs_path = temp_file(&dir, &format!("ptxas-{name}.cubin"), &theirs);
        run_tool(Tool::Cuobjdump, &["-elf"], &ours_path).expect("cuobjdump -elf");

        // Source lines, as nvdisasm reads them from .debug_line.
        let a = annotated(&run_tool(Tool::Nvdisasm, &["-g", "-c"], &theirs_path).unwrap());
        let b = annotated(&run_tool(Tool::Nvdisasm, &["-g", "-c"], &ours_path).unwrap());
        let same_code = a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.0 == y.0);
        if same_code {
            assert_eq!(a, b, "{name}: source lines per instruction");
        } else {
            let lines = |v: &[(String, Option<(String, u32)>)]| -> BTreeSet<(String, u32)> {
                v.iter().filter_map(|x| x.1.clone()).collect()
            };
            let (la, lb) = (lines(&a), lines(&b));
            if la != lb {
                // A `.func`'s opening `.loc` (`.loc 2 85 1` before `func_begin2`) covers only
                // its `ld.param`s, which are ptxas's MOVs and nothing in ptxc's code (the
                // arguments are already in R4…): ptxc's lines are ptxas's less those
                // (`_Z9vectorAddPKfS0_Pfi.ptx`: 7 of 21).
                assert!(lb.is_subset(&la), "{name}: the set of source lines");
                let missing: Vec<String> = la
                    .difference(&lb)
                    .map(|(f, l)| format!("{f}:{l}"))
                    .collect();
                report.push(format!(
                    "  {name}: lines only in ptxas's code: {}",
                    missing.join(" ")
                ));
            }
            assert!(
                b.iter().all(|x| x.1.is_some()),
                "{name}: every instruction of ptxc's has a source line"
            );
        }

        let want = ptxc::emit::read(&theirs).unwrap();
        let got = ptxc::emit::read(&ours).unwrap();
        let mut same = Vec::new();
        let mut differ = Vec::new();
        for d in &want.debug_sections {
            let Some(g) = section(&got, &d.name) else {
                differ.push(format!("{} (not written)", d.name));
                continue;
            };
            if g.data == d.data {
                same.push(d.name.clone());
                continue;
            }
            match d.name.as_str() {
                ".nv_debug_ptx_txt" => panic!("{name}: .nv_debug_ptx_txt differs"),
                ".debug_line" => {
                    assert_eq!(line_header(d), line_header(g), "{name}: .debug_line header");
                    differ.push(format!("{} (program: other code)", d.name));
                }
                ".nv_debug_line_sass" => {
                    assert_eq!(
                        line_header(d),
                        line_header(g),
                        "{name}: .nv_debug_line_sass header"
                    );
                    differ.push(format!("{} (program: other code)", d.name));
                }
                n if n.starts_with(".debug_") => {
                    same_outside_relocs(d, g).unwrap_or_else(|e| panic!("{name}: {n}: {e}"));
                    differ.push(format!("{n} (relocated addresses: other code)"));
                }
                n => differ.push(n.to_string()),
            }
        }
        for (f, g) in want.functions.iter().zip(&got.functions) {
            assert_eq!(f.name, g.name, "{name}: function order");
            if f.kind == ptxc::emit::model::FunctionKind::Kernel {
                assert_eq!(f.unwind.cie, g.unwind.cie, "{name}: the debug CIE");
                continue;
            }
            // A `.func` of its own: ptxas's CIE but for R2, which ptxas's ABI keeps and ptxc's
            // subroutines do not (`emit::build::device_unwind`).
            let r2 = ptxc::emit::model::DWARF_R1 + 1;
            let mut want_cie = f.unwind.cie.clone();
            for op in &mut want_cie.ops {
                if *op == ptxc::emit::model::CfaOp::SameValue(r2) {
                    *op = ptxc::emit::model::CfaOp::Undefined(r2);
                }
            }
            assert_eq!(want_cie, g.unwind.cie, "{name}: the CIE of `{}`", f.name);
        }
        report.push(format!(
            "  {name}: identical {}; differ {}",
            same.join(" "),
            differ.join(", ")
        ));
    }
    println!("debug-sections: ptxc vs ptxas\n{}", report.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// What ptxc still refuses in debug builds is an error naming it: the location
/// (`DW_OP_addr __local_depotN`) of a kernel's `.local` variable, whose frame ptxc does not
/// describe. A `.func`'s is `DW_OP_fbreg` (`_Z9vectorAddPKfS0_Pfi.ptx` above), and a bare
/// `.b64` of either is 0, as ptxas writes (docs/cubin.md, "Functions of their own").
#[test]
fn debug_sections_refuse_kernel_local_locations() {
    let text = "\
.version 8.7
.target sm_90a, debug
.address_size 64
.visible .entry k()
{
	.local .align 8 .b8 __local_depot0[8];
	ret;
}
.section .debug_abbrev { .b8 0 }
.section .debug_info {
.b64 __local_depot0
.b8 3
.b64 __local_depot0
}
";
    let src = ptxc::diag::SourceFile::new("kernel_depot.ptx".to_string(), text.to_string());
    let Err(d) = ptxc_tests::compile_pipeline(&src) else {
        panic!(
            "ptxc now writes the location of a kernel's `.local` variable: test it against ptxas"
        );
    };
    assert_eq!(d.len(), 1, "only the DW_OP_addr operand is refused");
    let msg = src.render(&d[0]);
    assert!(
        msg.contains("`__local_depot0`") && msg.contains(":13:"),
        "{msg}"
    );
}

/// ptxc's pipeline with `-g`.
fn compile_g(src: &ptxc::diag::SourceFile) -> Result<Vec<u8>, Vec<ptxc::diag::Diagnostic>> {
    use ptxc::driver;
    let checked = driver::frontend(src, ptxc::frontend::check::Arch::SM90A)?;
    let opts = ptxc::passes::Options {
        verify: true,
        device_debug: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts)?;
    let encoded = driver::encode(&lowered)?;
    let build = ptxc::emit::build::BuildOptions {
        device_debug: true,
        ..Default::default()
    };
    Ok(driver::cubin(&checked, &lowered, &encoded, &build)?.1)
}

/// `-g` on every project kernel and sample ptxc compiles: cuobjdump accepts the cubin,
/// `.nv_debug_ptx_txt` is ptxas's, and so is `.debug_line` for a module without `.loc` (the
/// header alone).
#[test]
fn device_debug_builds_of_project_kernels() {
    if require(Tool::Cuobjdump, "cuobjdump -elf").is_none() {
        return;
    }
    let dir = tempdir();
    let (mut compiled, mut ptx_txt, mut lines) = (0, 0, 0);
    for path in ptxc_tests::own_kernels() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(reference) = ptxas(&path, &["-g"]) else {
            return;
        };
        let Some(theirs) = reference.cubin else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let has_loc = text.contains(".loc");
        let src = ptxc::diag::SourceFile::new(path.display().to_string(), text);
        let Ok(ours) = compile_g(&src) else {
            continue;
        };
        compiled += 1;
        let ours_path = temp_file(&dir, &format!("g-{name}.cubin"), &ours);
        run_tool(Tool::Cuobjdump, &["-elf"], &ours_path).expect("cuobjdump -elf");
        let want = ptxc::emit::read(&theirs).unwrap();
        let got = ptxc::emit::read(&ours).unwrap();
        let txt = |c: &Cubin| section(c, ".nv_debug_ptx_txt").map(|d| d.data.clone());
        assert_eq!(txt(&want), txt(&got), "{name}: .nv_debug_ptx_txt");
        ptx_txt += 1;
        if !has_loc {
            assert_eq!(
                section(&want, ".debug_line"),
                section(&got, ".debug_line"),
                "{name}: .debug_line without .loc"
            );
            lines += 1;
        }
    }
    println!(
        "debug-sections -g: {compiled} project kernels compiled, cuobjdump accepts all, \
         .nv_debug_ptx_txt identical {ptx_txt}, .debug_line identical {lines} (all without .loc)"
    );
    // Measured: all 14 (`device_calls.ptx`, with a recursive call, since subroutines).
    assert!(
        compiled >= 14,
        "only {compiled} project kernels compiled with -g"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `.nv_debug_info_reg_sass` and `.nv_debug_info_reg_type` (`compiler/src/emit/debug_regs.rs`):
/// ptxas's sections read back and are written again byte for byte, and agree with
/// `cuobjdump -elf`'s decoding of them; one block per function in
/// `.text` order; the probe's type bytes are those of the declared PTX types; the register
/// named for `one_reg`'s `%r1` is the one ptxas's code writes the thread index to.
#[test]
fn ptxas_register_sections_read_back_exactly() {
    use ptxc::emit::debug_regs::{self, RegFile, RegType};
    let root = workspace_root();
    let mut inputs = files();
    inputs.push(root.join("tests/sass-probes/ptx/debug_regs.ptx"));
    inputs.push(root.join("tests/kernels/device_calls.ptx"));
    // The type bytes of `.u8`, `.f16x2`, `.v2` and `.v4` registers.
    let zluda = shared_dir().join("corpus/zluda/sm90a");
    for f in ["tid", "cvt_f16x2_f32", "vector", "vector4"] {
        inputs.push(zluda.join(format!("{f}.ptx")));
    }
    let mut report = Vec::new();
    for path in inputs {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(reference) = ptxas(&path, &["-g"]) else {
            return;
        };
        let cubin = reference
            .cubin
            .unwrap_or_else(|| panic!("ptxas refuses {name}: {}", reference.log));
        let model = ptxc::emit::read(&cubin).unwrap();
        let data = |n: &str| {
            section(&model, n)
                .unwrap_or_else(|| panic!("{name}: ptxas writes no {n}"))
                .data
                .data
                .clone()
        };
        let (sass, types) = (
            data(".nv_debug_info_reg_sass"),
            data(".nv_debug_info_reg_type"),
        );
        let regs = debug_regs::read(&sass, &types).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            debug_regs::write(&regs),
            (sass, types),
            "{name}: written again"
        );
        // cuobjdump's own decoding of the two sections.
        let dir = tempdir();
        let path = temp_file(&dir, &format!("ptxas-{name}.cubin"), &cubin);
        let elf = run_tool(Tool::Cuobjdump, &["-elf"], &path).expect("cuobjdump -elf");
        let _ = std::fs::remove_dir_all(&dir);
        let printed = |sec: &str| -> Vec<String> {
            let at = elf
                .find(&format!(".section {sec}\n"))
                .unwrap_or_else(|| panic!("{name}: cuobjdump prints no {sec}"));
            let body = &elf[at..];
            let body = &body[body.find('\n').unwrap() + 1..];
            let end = body.find("\n\n").unwrap_or(body.len());
            body[..end].lines().map(|l| l.trim().to_string()).collect()
        };
        let (mut want_sass, mut want_types) = (Vec::new(), Vec::new());
        for f in &regs {
            for out in [&mut want_sass, &mut want_types] {
                out.push(format!("Function Name: {}", f.function));
                out.push(format!("Total entry: {:x}", f.locations.len()));
            }
            for l in &f.locations {
                want_sass.push(format!(
                    "(reg: {}) {:#x}, {:#x}, {:#x}",
                    l.name,
                    l.file.dwarf(l.reg),
                    l.start,
                    l.end
                ));
                want_types.push(type_name(l.ty));
            }
        }
        assert_eq!(
            printed(".nv_debug_info_reg_sass"),
            want_sass,
            "{name}: cuobjdump -elf"
        );
        assert_eq!(
            printed(".nv_debug_info_reg_type"),
            want_types,
            "{name}: cuobjdump -elf"
        );

        let functions: Vec<&str> = regs.iter().map(|f| f.function.as_str()).collect();
        let text: Vec<&str> = model.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(functions, text, "{name}: one block per function");
        for f in &regs {
            let keys: Vec<_> = f
                .locations
                .iter()
                .map(|l| (l.file.code(), l.reg, l.start))
                .collect();
            assert!(keys.is_sorted(), "{name}: {}: record order", f.function);
        }
        report.push(format!(
            "  {name}: {} records",
            regs.iter().map(|f| f.locations.len()).sum::<usize>()
        ));

        if name != "debug_regs.ptx" {
            continue;
        }
        let typed = regs.iter().find(|f| f.function == "typed").unwrap();
        let declared = [
            ("%p1", RegType::PRED),
            ("%rs1", RegType::B16),
            ("%h1", RegType::U16),
            ("%hs1", RegType::S16),
            ("%r1", RegType::B32),
            ("%u1", RegType::U32),
            ("%s1", RegType::S32),
            ("%f1", RegType::F32),
            ("%rd1", RegType::B64),
            ("%ud1", RegType::U64),
            ("%sd1", RegType::S64),
            ("%fd1", RegType::F64),
            ("%hf1", RegType::F16),
        ];
        for (reg, ty) in declared {
            let tys: BTreeSet<u8> = typed
                .locations
                .iter()
                .filter(|l| l.name == reg)
                .map(|l| l.ty)
                .collect();
            assert_eq!(tys, BTreeSet::from([ty]), "typed: the type of {reg}");
        }
        for l in &typed.locations {
            let file = match l.ty {
                RegType::PRED => vec![RegFile::Pred],
                RegType::B16 | RegType::U16 | RegType::S16 => vec![RegFile::Half],
                _ => vec![RegFile::Reg, RegFile::Half],
            };
            assert!(file.contains(&l.file), "typed: {l:?}");
            let wide = matches!(
                l.ty,
                RegType::B64 | RegType::U64 | RegType::S64 | RegType::F64
            );
            assert!(l.part < 1 + wide as u32, "typed: {l:?}");
        }
        let listing = ptxc_tests::cuobjdump_sass(&cubin).unwrap();
        let one_reg = listing
            .split("Function : ")
            .find(|f| f.starts_with("one_reg"))
            .unwrap();
        let tid = one_reg
            .lines()
            .find_map(|l| {
                let (_, rest) = l.split_once("S2R R")?;
                rest.split_once(", SR_TID.X")?.0.parse::<u32>().ok()
            })
            .expect("one_reg: S2R Rn, SR_TID.X");
        let r1: Vec<_> = regs[0]
            .locations
            .iter()
            .filter(|l| l.name == "%r1")
            .collect();
        assert!(!r1.is_empty(), "one_reg: a record for %r1");
        for l in r1 {
            assert_eq!((l.file, l.reg, l.ty), (RegFile::Reg, tid, RegType::B32));
        }
    }
    println!("ptxas register sections\n{}", report.join("\n"));
}

/// How `cuobjdump -elf` names a `.nv_debug_info_reg_type` byte (`.v2 .u32` for 0x46).
fn type_name(ty: u8) -> String {
    const SCALAR: [&str; 17] = [
        "?b8", ".b16", ".b32", ".b64", ".u8", ".u16", ".u32", ".u64", "?s8", ".s16", ".s32",
        ".s64", ".f16", ".f16x2", ".f32", ".f64", ".pred",
    ];
    let scalar = SCALAR.get((ty & 0x3f) as usize).copied().unwrap_or("?");
    match ty & 0xc0 {
        0 => scalar.to_string(),
        0x40 => format!(".v2 {scalar}"),
        0x80 => format!(".v4 {scalar}"),
        _ => format!("? {scalar}"),
    }
}
