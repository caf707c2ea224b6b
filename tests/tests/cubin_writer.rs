//! The writer as the back end will use it: a module built through the model API (kernels,
//! parameters, shared memory, cluster directives, module variables) is written, read back into
//! the same model, and accepted by nvdisasm and cuobjdump. (No GPU was available to this work,
//! so loading by the CUDA driver itself is not tested here.)

use ptxc::emit::listing::{default_unwind, exit_offsets};
use ptxc::emit::model::*;
use ptxc_tests::{Tool, ptxas, run_tool, shared_dir, tempdir};
use runtime_abi::param::ParamSpec;

/// Machine code of `00_abi/simple.ptx` as ptxas compiles it (valid words for the tools).
fn simple_code() -> Option<Vec<u8>> {
    let res = ptxas(&shared_dir().join("notes/probes/00_abi/simple.ptx"), &[])?;
    let m = ptxc::emit::read(&res.cubin.expect("cubin")).expect("read");
    Some(m.functions[0].code.clone())
}

fn module(code: &[u8]) -> Cubin {
    let mut c = Cubin::new();
    let mut a = Function::kernel("store_tid", code.to_vec());
    a.registers = 10;
    a.params = vec![ParamSpec::scalar(8), ParamSpec::scalar(4)];
    a.attrs.exit_offsets = exit_offsets(code);
    a.unwind = default_unwind(code);
    let mut b = a.clone();
    b.name = "store_tid_cluster".into();
    b.params.push(ParamSpec::bytes(8192, 16));
    b.shared = Some(SharedMem::with_user_bytes(2048, 16));
    b.attrs.cta_per_cluster = Some([2, 1, 1]);
    b.attrs.explicit_cluster = true;
    b.attrs.max_threads = Some([128, 1, 1]);
    c.functions = vec![a, b];
    c.variables = vec![
        Variable {
            name: "table".into(),
            space: VarSpace::Global,
            linkage: Linkage::Global,
            size: 16,
            align: 8,
            init: Some((1u8..=16).collect()),
            relocs: Vec::new(),
        },
        Variable {
            name: "scratch".into(),
            space: VarSpace::Global,
            linkage: Linkage::Local,
            size: 256,
            align: 16,
            init: None,
            relocs: Vec::new(),
        },
        Variable {
            name: "coeff".into(),
            space: VarSpace::Const,
            linkage: Linkage::Local,
            size: 4,
            align: 4,
            init: Some(1.5f32.to_le_bytes().to_vec()),
            relocs: Vec::new(),
        },
    ];
    c
}

#[test]
fn model_written_read_back_and_accepted_by_the_tools() {
    let Some(code) = simple_code() else { return };
    let c = module(&code);
    let bytes = ptxc::emit::write(&c).expect("write");
    // Reading gives back the model, up to parameter alignments the cubin does not store (an
    // alignment that puts every parameter at the same offset), and writing that is the same file.
    let back = ptxc::emit::read(&bytes).expect("read back");
    assert_eq!(ptxc::emit::write(&back).expect("rewrite"), bytes);
    let mut c2 = c.clone();
    for (f, g) in c2.functions.iter_mut().zip(&back.functions) {
        f.params.clone_from(&g.params);
    }
    assert_eq!(back, c2);
    // Deterministic.
    assert_eq!(ptxc::emit::write(&c).expect("write"), bytes);
    let dir = tempdir();
    let p = dir.join("m.cubin");
    ptxc::emit::write_file(&p, &c).expect("write_file");
    let Some(elf) = run_tool(Tool::Cuobjdump, &["-elf"], &p) else {
        return;
    };
    for want in [
        ".text.store_tid_cluster",
        "EIATTR_KPARAM_INFO_V2",
        "EIATTR_CTA_PER_CLUSTER",
        ".nv.global.init",
        ".nv.constant3",
        "table",
    ] {
        assert!(elf.contains(want), "{want} missing");
    }
    let Some(sass) = run_tool(Tool::Nvdisasm, &[], &p) else {
        return;
    };
    assert!(sass.contains("store_tid_cluster:"));
    assert!(sass.contains("STG.E"));
    let _ = std::fs::remove_dir_all(&dir);
}
