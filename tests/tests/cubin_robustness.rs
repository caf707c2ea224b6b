//! Bad input never panics: truncated and corrupted cubins give an error (or a model the writer
//! handles), and models the writer cannot express give an error.

use ptxc::emit::model::*;
use ptxc_tests::{ptxas, shared_dir, tempdir};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn must_not_panic(label: &str, bytes: &[u8]) {
    let r = std::panic::catch_unwind(|| {
        if let Ok(m) = ptxc::emit::read(bytes) {
            let _ = ptxc::emit::write(&m);
        }
    });
    assert!(r.is_ok(), "reader or writer panicked on {label}");
}

#[test]
fn corrupted_cubins_do_not_panic() {
    let mut inputs = Vec::new();
    for rel in [
        "notes/probes/00_abi/simple.ptx",
        "notes/probes/00_abi/cluster_kernel.ptx",
        "corpus/zluda/sm90a/tex_read_1d_float.ptx",
        "corpus/zluda/sm90a/call_rnd.ptx",
        "corpus/zluda/sm90a/global_array.ptx",
    ] {
        let Some(res) = ptxas(&shared_dir().join(rel), &[]) else {
            return;
        };
        inputs.push((rel, res.cubin.expect("ptxas cubin")));
    }
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (rel, cubin) in &inputs {
        // Every truncation length on an 8-byte grid, and the empty file.
        for n in (0..cubin.len()).step_by(8) {
            must_not_panic(&format!("{rel} truncated to {n}"), &cubin[..n]);
        }
        // Random byte and word corruption.
        for k in 0..2000 {
            let mut b = cubin.clone();
            for _ in 0..(1 + k % 4) {
                let at = (rng.next() % b.len() as u64) as usize;
                b[at] = rng.next() as u8;
                if k % 3 == 0 && at + 8 <= b.len() {
                    b[at..at + 8].copy_from_slice(&rng.next().to_le_bytes());
                }
            }
            must_not_panic(&format!("{rel} corruption {k}"), &b);
        }
    }
    std::panic::set_hook(prev);
    for junk in [
        &b""[..],
        b"\x7fELF",
        b"not an elf at all",
        &[0x7f, b'E', b'L', b'F', 2, 1, 1, 0x41, 8],
    ] {
        assert!(ptxc::emit::read(junk).is_err());
    }
}

#[test]
fn writer_rejects_models_it_cannot_express() {
    let mut c = Cubin::new();
    c.functions.push(Function::kernel("k", vec![0; 15]));
    assert!(
        ptxc::emit::write(&c)
            .unwrap_err()
            .to_string()
            .contains("16-byte")
    );
    let mut c = Cubin::new();
    let mut k = Function::kernel("k", vec![0; 32]);
    k.relocs.push(Reloc {
        offset: 0,
        ty: runtime_abi::reloc::R_CUDA_ABS32_LO_32,
        symbol: "nowhere".into(),
        addend: 0,
    });
    c.functions.push(k);
    assert!(
        ptxc::emit::write(&c)
            .unwrap_err()
            .to_string()
            .contains("nowhere")
    );
    let mut c = Cubin::new();
    let mut k = Function::kernel("k", vec![0; 32]);
    k.params.push(runtime_abi::param::ParamSpec::bytes(4, 3));
    c.functions.push(k);
    assert!(ptxc::emit::write(&c).is_err());
    let mut c = Cubin::new();
    c.functions.push(Function::kernel("k", vec![0; 32]));
    c.functions.push(Function::kernel("k", vec![0; 32]));
    assert!(
        ptxc::emit::write(&c)
            .unwrap_err()
            .to_string()
            .contains("twice")
    );
}

#[test]
fn write_file_is_atomic() {
    let dir = tempdir();
    let mut c = Cubin::new();
    c.functions.push(Function::kernel("k", vec![0; 16]));
    let target = dir.join("out.cubin");
    ptxc::emit::write_file(&target, &c).expect("write");
    let bytes = std::fs::read(&target).expect("read");
    assert_eq!(bytes, ptxc::emit::write(&c).expect("write"));
    // A model error leaves the old file untouched and no temporary behind.
    let mut bad = c.clone();
    bad.functions[0].code.push(0);
    assert!(ptxc::emit::write_file(&target, &bad).is_err());
    assert_eq!(std::fs::read(&target).expect("read"), bytes);
    // An unwritable path is an error and leaves nothing.
    let missing = dir.join("no/such/dir/out.cubin");
    assert!(ptxc::emit::write_file(&missing, &c).is_err());
    let left: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
    assert_eq!(left.len(), 1, "only out.cubin remains");
    let _ = std::fs::remove_dir_all(&dir);
}
