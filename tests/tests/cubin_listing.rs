//! Cubins from SASS listings (`ptxc::emit::listing`): a `cuobjdump -sass` listing of a ptxas
//! kernel plus header comments is rebuilt into a cubin that nvdisasm and cuobjdump accept and
//! that disassembles like the original.

use ptxc::emit::listing::{self, cubin_from_listing, parse_header};
use ptxc::emit::model::ToolInfo;
use ptxc_tests::cubin::first_difference;
use ptxc_tests::{Tool, ptxas, run_tool, shared_dir, tempdir};

fn probe(rel: &str) -> Option<Vec<u8>> {
    let p = shared_dir().join("notes/probes").join(rel);
    let res = ptxas(&p, &[])?;
    Some(
        res.cubin
            .unwrap_or_else(|| panic!("ptxas rejects {rel}: {}", res.log)),
    )
}

fn tool_on(tool: Tool, args: &[&str], bytes: &[u8]) -> Option<String> {
    let dir = tempdir();
    let p = dir.join("x.cubin");
    std::fs::write(&p, bytes).expect("write");
    let out = run_tool(tool, args, &p);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[test]
fn simple_kernel_listing_rebuilds_ptxas_cubin_byte_for_byte() {
    let Some(cubin) = probe("00_abi/simple.ptx") else {
        return;
    };
    let Some(sass) = tool_on(Tool::Cuobjdump, &["-sass"], &cubin) else {
        return;
    };
    let text = format!("// .kernel simple\n// .param u64\n// .param u32\n// .regs 10\n{sass}");
    let header = parse_header(&text).expect("header");
    let code = listing::parse_code(&text).expect("code");
    let mut model = listing::build(&header, &code, &[]).expect("model");
    // With ptxas's identification the cubin is ptxas's, byte for byte.
    model.tool = ToolInfo::ptxas_13_1("-arch sm_90a ");
    let rebuilt = ptxc::emit::write(&model).expect("write");
    assert_eq!(first_difference(&cubin, &rebuilt), None);
    // And as ptxc writes it: the tools accept it and see the same code.
    let ours = cubin_from_listing(&text).expect("cubin");
    let (Some(a), Some(b)) = (
        tool_on(Tool::Nvdisasm, &["-c", "-hex"], &cubin),
        tool_on(Tool::Nvdisasm, &["-c", "-hex"], &ours),
    ) else {
        return;
    };
    assert_eq!(a, b);
    assert!(tool_on(Tool::Cuobjdump, &["-elf"], &ours).is_some());
}

#[test]
fn cluster_kernel_listing_disassembles_identically() {
    let Some(cubin) = probe("00_abi/cluster_kernel.ptx") else {
        return;
    };
    let Some(sass) = tool_on(Tool::Cuobjdump, &["-sass"], &cubin) else {
        return;
    };
    let header = "// .kernel cluster_kernel\n// .param u64\n// .param u64\n// .param u32\n\
                  // .regs 12\n// .shared 0x810 align 16\n// .maxntid 128\n\
                  // .reqnctapercluster 2,1,1\n// .explicitcluster\n// .barriers 1\n";
    let ours = cubin_from_listing(&format!("{header}{sass}")).expect("cubin");
    for args in [&["-c", "-hex"][..], &[][..]] {
        let tool = if args.is_empty() {
            Tool::Cuobjdump
        } else {
            Tool::Nvdisasm
        };
        let args: &[&str] = if args.is_empty() { &["-sass"] } else { args };
        let (Some(a), Some(b)) = (tool_on(tool, args, &cubin), tool_on(tool, args, &ours)) else {
            return;
        };
        assert_eq!(a, b, "{tool} {args:?}");
    }
    let Some(elf) = tool_on(Tool::Cuobjdump, &["-elf"], &ours) else {
        return;
    };
    for want in [
        "EIATTR_CTA_PER_CLUSTER",
        "EIATTR_EXPLICIT_CLUSTER",
        "EIATTR_MAX_THREADS",
        "EIATTR_NUM_BARRIERS",
        "EIATTR_EXIT_INSTR_OFFSETS",
        ".nv.shared.cluster_kernel",
    ] {
        assert!(elf.contains(want), "{want} missing from cuobjdump -elf");
    }
}

#[test]
fn large_parameter_block_from_listing() {
    let Some(cubin) = probe("00_abi/params.ptx") else {
        return;
    };
    let Some(sass) = tool_on(Tool::Cuobjdump, &["-sass"], &cubin) else {
        return;
    };
    let header = "// .kernel params\n// .param u64\n// .param u8\n// .param u16\n// .param u32\n\
                  // .param f64\n// .param b8[8192] align 16\n// .param u32\n";
    let ours = cubin_from_listing(&format!("{header}{sass}")).expect("cubin");
    let model = ptxc::emit::read(&ours).expect("reads back");
    assert_eq!(model.functions[0].params.len(), 7);
    let Some(elf) = tool_on(Tool::Cuobjdump, &["-elf"], &ours) else {
        return;
    };
    assert!(elf.contains("EIATTR_KPARAM_INFO_V2"));
    assert!(elf.contains("0x2024"), "CBANK_PARAM_SIZE 0x2024");
    let (Some(a), Some(b)) = (
        tool_on(Tool::Nvdisasm, &["-c", "-hex"], &cubin),
        tool_on(Tool::Nvdisasm, &["-c", "-hex"], &ours),
    ) else {
        return;
    };
    assert_eq!(a, b);
}

#[test]
fn bad_listings_are_errors() {
    for (text, want) in [
        ("// .param u32\n", "before any .kernel"),
        (
            "// .kernel k\n// .frobnicate 1\n",
            "unknown header directive",
        ),
        ("// .kernel k\n// .param q7\n", "unknown parameter type"),
        ("nothing here\n", "no `Function :` block"),
        (
            "Function : k\n /*0000*/ NOP ; /* 0x0000000000007918 */\n",
            "odd number of instruction words",
        ),
        (
            "// .kernel k\nFunction : j\n /*0000*/ EXIT ; /* 0x000000000000794d */\n /* 0x000fea0003800000 */\n",
            "no such function",
        ),
    ] {
        let e = cubin_from_listing(text).expect_err(text);
        assert!(e.to_string().contains(want), "{text:?}: {e}");
    }
}

/// `ptxc asm IN.sass -o OUT.cubin` assembles the listing and writes the cubin `emit::listing`
/// builds from its header: the same bytes as from the listed words (the assembler reproduces
/// them). `-o OUT.bin` still writes the raw words; a bad header writes nothing.
#[test]
fn asm_command_writes_cubins_and_raw_words() {
    let Some(cubin) = probe("00_abi/simple.ptx") else {
        return;
    };
    let Some(sass) = tool_on(Tool::Cuobjdump, &["-sass"], &cubin) else {
        return;
    };
    let text = format!("// .kernel simple\n// .param u64\n// .param u32\n// .regs 10\n{sass}");
    let dir = tempdir();
    let input = dir.join("simple.sass");
    std::fs::write(&input, &text).unwrap();
    let asm = |out: &str| {
        std::process::Command::new(ptxc_tests::ptxc_bin!())
            .arg("asm")
            .arg(&input)
            .arg("-o")
            .arg(dir.join(out))
            .output()
            .expect("run ptxc asm")
    };
    let o = asm("simple.cubin");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let written = std::fs::read(dir.join("simple.cubin")).unwrap();
    assert_eq!(written, cubin_from_listing(&text).expect("cubin"));
    let model = ptxc::emit::read(&written).expect("read back");
    assert_eq!(model.functions[0].name, "simple");
    assert_eq!(model.functions[0].params.len(), 2);
    assert!(tool_on(Tool::Cuobjdump, &["-elf"], &written).is_some());

    let o = asm("simple.bin");
    assert!(o.status.success());
    let raw = std::fs::read(dir.join("simple.bin")).unwrap();
    let text_section = ptxc::emit::elf::Elf::parse(&cubin)
        .ok()
        .and_then(|e| {
            let i = e.find(".text.simple")?;
            e.section_data(i).ok().map(<[u8]>::to_vec)
        })
        .expect(".text.simple");
    assert_eq!(raw, text_section, "raw words are the listed instructions");

    std::fs::write(&input, format!("// .param u64\n{sass}")).unwrap();
    let o = asm("bad.cubin");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains(".param before any .kernel"));
    assert!(!dir.join("bad.cubin").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
