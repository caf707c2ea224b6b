//! `ptxc diff` end to end: the summary line per kernel, JSON, and the errors for a missing ptxas
//! and for input ptxc rejects.

use ptxc_tests::{Tool, ptxc_bin, require, workspace_root};
use std::process::Command;

#[test]
fn diff_command() {
    let Some(ptxas) = require(Tool::Ptxas, "ptxc diff") else {
        return;
    };
    let sample = workspace_root().join("samples/vector_add.ptx");
    let out = Command::new(ptxc_bin!())
        .args(["diff", "-arch", "sm_90a"])
        .arg(&sample)
        .arg("--ptxas")
        .arg(&ptxas)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap();
    let re_ok = last.starts_with("diff: vector_add ")
        && last.contains(" ptxas=20 instrs regs=")
        && last.ends_with("/12");
    assert!(re_ok, "summary line: {last}");
    assert!(!stdout.contains('\x1b'), "colour when not on a terminal");
    assert!(stdout.contains("== vector_add: ptxc "));

    let json = Command::new(ptxc_bin!())
        .args(["diff", "--json", "--color"])
        .arg(&sample)
        .output()
        .unwrap();
    let j = String::from_utf8_lossy(&json.stdout);
    assert!(
        j.starts_with("{\"kernels\":[{\"name\":\"vector_add\",\"class\":\""),
        "{j}"
    );
    assert!(j.contains("\"ptxas_instrs\":20,") && j.contains("\"ptxas_regs\":12,"));

    let missing = Command::new(ptxc_bin!())
        .args(["diff", "--ptxas", "/nonexistent/ptxas"])
        .arg(&sample)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--ptxas /nonexistent/ptxas"));

    // Input both compilers reject: ptxas's error, exit 1, no panic.
    let dir = ptxc_tests::tempdir();
    let bad = dir.join("bad.ptx");
    std::fs::write(
        &bad,
        ".version 8.7\n.target sm_90a\n.address_size 64\nnonsense\n",
    )
    .unwrap();
    let o = Command::new(ptxc_bin!())
        .arg("diff")
        .arg(&bad)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ptxc diff: error:"));
}
