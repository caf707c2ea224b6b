//! Malformed PTX: every case must exit with status 1 and print `FILE:LINE:COL: error: …` with the
//! source line and a caret, at the line and column this table asserts; no output file is left.

use ptxc_tests::{ptxc_bin, tempdir};
use std::process::Command;

/// A kernel whose body is line 7; `%r`, `%rd`, `%p`, `%f`, `%u` register families and a
/// `.global` variable `g` are declared.
fn kernel(body: &str) -> String {
    format!(
        ".version 8.7\n.target sm_90a\n.address_size 64\n.global .u32 g;\n.visible .entry k(.param .u64 p)\n{{\n{body}\nret;\n}}\n"
    )
    .replace(
        "{\n",
        "{\n.reg .b32 %r<9>; .reg .b64 %rd<9>; .reg .pred %p<4>; .reg .f32 %f<4>; .reg .u32 %u<4>;\n",
    )
}

/// (name, source, line, column, a piece of the message)
fn cases() -> Vec<(&'static str, String, usize, usize, &'static str)> {
    let k = kernel;
    let hdr = ".version 8.7\n.target sm_90a\n.address_size 64\n";
    vec![
        ("empty file", String::new(), 1, 1, "empty PTX module"),
        (
            "only a comment",
            "// nothing here\n".into(),
            1,
            1,
            "empty PTX module",
        ),
        (
            "truncated file",
            format!("{hdr}.visible .entry k()\n{{\nret;\n"),
            6,
            5,
            "not closed",
        ),
        (
            "unknown opcode",
            k("foo.u32 %r1, %r2;"),
            8,
            1,
            "Not a name of any known instruction: 'foo'",
        ),
        (
            "unknown modifier",
            k("add.u33 %r1, %r2, %r3;"),
            8,
            4,
            "Unknown modifier '.u33'",
        ),
        (
            "modifier not for this type",
            k("add.rn.u32 %r1, %r2, %r3;"),
            8,
            4,
            "Modifier '.rn' does not apply to '.u32' type",
        ),
        (
            "sat on unsigned",
            k("add.sat.u32 %r1, %r2, %r3;"),
            8,
            4,
            "Modifier '.sat' does not apply",
        ),
        (
            "too few operands",
            k("add.u32 %r1, %r2;"),
            8,
            14,
            "takes 3 operand(s), but 2 are given",
        ),
        (
            "too many operands",
            k("mov.u32 %r1, %r2, %r3;"),
            8,
            19,
            "takes 2 operand(s), but 3 are given",
        ),
        (
            "wrong register type",
            k("add.f32 %f1, %u2, %f2;"),
            8,
            14,
            "operand 2 must be .f32, but `%u2` is a .u32 register",
        ),
        (
            "register too narrow",
            k("ld.global.u64 %r1, [%rd2];"),
            8,
            15,
            "operand 1 must be .u64",
        ),
        (
            "integer literal for a float",
            k("add.f32 %f1, %f2, 1;"),
            8,
            19,
            "an integer literal `1` cannot be a .f32 operand",
        ),
        (
            "undefined register",
            k("add.u32 %r1, %r2, %q1;"),
            8,
            19,
            "Unknown symbol '%q1'",
        ),
        (
            "register family out of range",
            k("add.u32 %r1, %r2, %r9;"),
            8,
            19,
            "Unknown symbol '%r9'",
        ),
        (
            "undefined label",
            k("bra L_missing;"),
            8,
            5,
            "Unknown symbol 'L_missing'",
        ),
        (
            "duplicate label",
            k("L1:\nL1:"),
            9,
            1,
            "Duplicate definition of label 'L1'",
        ),
        (
            "duplicate register",
            k(".reg .b32 %x;\n.reg .b32 %x;"),
            9,
            11,
            "Duplicate definition of '%x'",
        ),
        (
            "missing semicolon",
            k("mov.u32 %r1, %r2\nmov.u32 %r3, %r4;"),
            8,
            17,
            "expected `;` before identifier `mov`",
        ),
        (
            "unknown directive",
            format!("{hdr}.foo 1;\n"),
            4,
            1,
            "unknown directive `.foo`",
        ),
        (
            "unknown function directive",
            format!("{hdr}.visible .entry k() .maxthreads 4\n{{\nret;\n}}\n"),
            4,
            21,
            "unknown directive `.maxthreads`",
        ),
        (
            "immediate out of range",
            k("add.u32 %r1, %r2, 0x1FFFFFFFFFFFFFFFFF;"),
            8,
            19,
            "Constant overflow",
        ),
        (
            "float literal out of range",
            k("mov.f32 %f1, 1e999;"),
            8,
            14,
            "Constant overflow",
        ),
        (
            "non-ASCII byte",
            k("mov.u32 %r1, é;"),
            8,
            14,
            "non-ASCII character",
        ),
        (
            "stray character",
            k("mov.u32 %r1, `;"),
            8,
            14,
            "unexpected character '`'",
        ),
        (
            "unterminated block comment",
            k("/* never closed"),
            8,
            1,
            "unterminated block comment",
        ),
        (
            "unterminated string",
            format!("{hdr}.file 1 \"abc\n"),
            4,
            9,
            "unterminated string literal",
        ),
        (
            "unterminated block",
            k("{ mov.u32 %r1, %r2;"),
            10,
            2,
            "not closed",
        ),
        (
            "missing .version",
            ".target sm_90a\n.address_size 64\n".into(),
            1,
            1,
            "missing `.version`",
        ),
        (
            "missing .target",
            ".version 8.7\n.address_size 64\n".into(),
            2,
            1,
            "missing `.target`",
        ),
        (
            "unsupported .version",
            ".version 9.2\n.target sm_90a\n".into(),
            1,
            10,
            "Unsupported .version 9.2",
        ),
        (
            "target above -arch",
            ".version 8.8\n.target sm_100a\n".into(),
            2,
            9,
            "higher than the -arch given",
        ),
        (
            "target needs newer PTX",
            ".version 7.0\n.target sm_90a\n".into(),
            2,
            9,
            "PTX .version 7.0 does not support .target sm_90a",
        ),
        (
            "32-bit addressing",
            ".version 8.7\n.target sm_90a\n.address_size 32\n".into(),
            3,
            1,
            "32-bit addressing",
        ),
        (
            "cluster feature below sm_90",
            k("mapa.shared::cluster.u32 %r1, %r2, %r3;").replace("sm_90a", "sm_80"),
            8,
            1,
            "Feature 'mapa' requires .target sm_90 or higher",
        ),
        (
            "cluster sreg below sm_90",
            k("mov.u32 %r1, %cluster_ctarank;").replace("sm_90a", "sm_80"),
            8,
            14,
            "Feature '%cluster_ctarank' requires .target sm_90",
        ),
        (
            "conflicting cluster directives",
            format!(
                "{hdr}.visible .entry k()\n.reqnctapercluster 2\n.maxclusterrank 8\n{{\nret;\n}}\n"
            ),
            6,
            1,
            "Conflicting directives: .reqnctapercluster and .maxclusterrank",
        ),
        (
            "guard is not a predicate",
            k("@%r1 bra L;\nL:"),
            8,
            2,
            "Predicate expression expected",
        ),
        (
            "state space mismatch",
            k("ld.shared.u32 %r1, [g];"),
            8,
            21,
            "State space mismatch",
        ),
        (
            "two state spaces",
            k("ld.global.shared.u32 %r1, [%rd1];"),
            8,
            10,
            "Unexpected number of state spaces",
        ),
        (
            "vector size mismatch",
            k("ld.global.v2.u32 {%r1}, [%rd1];"),
            8,
            18,
            "Argument vector size mismatch",
        ),
        (
            "vote without .sync",
            k("vote.ballot.b32 %r1, %p1;"),
            8,
            1,
            "without '.sync'",
        ),
        (
            "cvt needs rounding",
            k("cvt.f32.u32 %f1, %r2;"),
            8,
            1,
            "Rounding modifier required",
        ),
        (
            "barrier number out of range",
            k("bar.sync 16;"),
            8,
            10,
            "Barrier number '16' out of range",
        ),
        (
            "incomplete non-extern array",
            format!("{hdr}.global .b32 arr[];\n"),
            4,
            14,
            "Non-external variable 'arr' has incomplete type",
        ),
        (
            "noreturn on an entry",
            format!("{hdr}.visible .entry k() .noreturn\n{{\nret;\n}}\n"),
            4,
            21,
            "`.noreturn` applies only to .func",
        ),
        (
            "entry directive on a func",
            format!("{hdr}.func f() .maxntid 32\n{{\nret;\n}}\n"),
            4,
            11,
            "applies only to .entry functions",
        ),
        (
            "bad special register component",
            k("mov.u32 %r1, %tid.q;"),
            8,
            18,
            "has no component `.q`",
        ),
        (
            "vector special register whole",
            k("mov.u32 %r1, %tid;"),
            8,
            14,
            "`%tid` is a vector",
        ),
        (
            "entry parameter incomplete array",
            format!("{hdr}.visible .entry k(.param .b8 a[])\n{{\nret;\n}}\n"),
            4,
            30,
            "cannot be an incomplete array",
        ),
        (
            "call of an undefined function",
            k("call nowhere;"),
            8,
            6,
            "Unknown symbol 'nowhere'",
        ),
    ]
}

#[test]
fn malformed_inputs_give_located_diagnostics() {
    let dir = tempdir();
    let cases = cases();
    assert!(cases.len() >= 30, "the issue asks for at least 30 cases");
    let mut failures = Vec::new();
    for (i, (name, src, line, col, msg)) in cases.iter().enumerate() {
        let input = dir.join(format!("case{i}.ptx"));
        let output = dir.join(format!("case{i}.out"));
        std::fs::write(&input, src).unwrap();
        let out = Command::new(ptxc_bin!())
            .arg(&input)
            .args(["--emit", "ast", "-o"])
            .arg(&output)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let header = format!("{}:{line}:{col}: error: ", input.display());
        let first_error = stderr
            .lines()
            .find(|l| l.contains(": error: "))
            .unwrap_or("");
        let ok = out.status.code() == Some(1)
            && first_error.starts_with(&header)
            && first_error.contains(msg)
            && stderr.lines().nth(1).is_some_and(|l| l.contains(" | "))
            && stderr.lines().nth(2).is_some_and(|l| l.contains('^'))
            && !output.exists();
        if !ok {
            failures.push(format!(
                "{name}: exit {:?}, wanted `{header}…{msg}`, got:\n{stderr}",
                out.status.code()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn exit_codes_and_standard_input() {
    let run = |args: &[&str], stdin: Option<&str>| {
        use std::io::Write as _;
        let mut child = Command::new(ptxc_bin!())
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(s) = stdin {
            child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
        }
        drop(child.stdin.take());
        child.wait_with_output().unwrap()
    };
    let ok = ".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n";
    let out = run(&["-arch", "sm_90a", "-", "--emit", "ast"], Some(ok));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Entry k"));
    let out = run(&["-", "--emit", "ast"], Some("bogus"));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("<stdin>:1:1: error: "));
    assert_eq!(run(&["--version"], None).status.code(), Some(0));
    assert_eq!(run(&["-h"], None).status.code(), Some(0));
    assert_eq!(
        run(&["--no-such-flag", "x.ptx"], None).status.code(),
        Some(2)
    );
    assert_eq!(run(&[], None).status.code(), Some(2));
    assert_eq!(
        run(&["-arch", "sm_80", "x.ptx"], None).status.code(),
        Some(2)
    );
    let missing = run(&["/nonexistent/x.ptx"], None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read"));
}

#[test]
fn readme_sample_command_works() {
    // The README's first command: the cluster sample through the frontend.
    let sample = ptxc_tests::workspace_root().join("samples/cluster_exchange.ptx");
    let out = Command::new(ptxc_bin!())
        .args(["-arch", "sm_90a"])
        .arg(&sample)
        .args(["--emit", "ast"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ast = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Entry cluster_exchange .visible",
        "Directive .reqnctapercluster 2, 1, 1",
        "Instr mov.u32 %r5, %cluster_ctarank",
        "Instr mapa.shared::cluster.u32 %r8, %r4, %r7",
        "Instr ld.shared::cluster.u32 %r9, [%r8]",
        "Instr barrier.cluster.wait.acquire.aligned",
    ] {
        assert!(ast.contains(needle), "`{needle}` missing from:\n{ast}");
    }
    // The README's command writes a cubin with the kernel and its cluster records.
    let dir = tempdir();
    let cubin = dir.join("out.cubin");
    let out = Command::new(ptxc_bin!())
        .args(["-arch", "sm_90a"])
        .arg(&sample)
        .arg("-o")
        .arg(&cubin)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let model = ptxc::emit::read(&std::fs::read(&cubin).unwrap()).unwrap();
    assert_eq!(model.functions.len(), 1);
    let k = &model.functions[0];
    assert_eq!(k.name, "cluster_exchange");
    assert_eq!(k.attrs.cta_per_cluster, Some([2, 1, 1]));
    assert!(k.attrs.explicit_cluster);
    assert!(!k.attrs.exit_offsets.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn output_to_a_special_file_writes_through_it() {
    // `-o /dev/null` must not rename a temporary file over the device node. Checked on a FIFO
    // of our own (never on the machine's /dev/null): the output goes through the pipe, and the
    // path is still a FIFO afterwards.
    use std::os::unix::fs::FileTypeExt;
    let dir = tempdir();
    let fifo = dir.join("out.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(&fifo).unwrap())
    };
    let sample = ptxc_tests::workspace_root().join("samples/cluster_exchange.ptx");
    let out = Command::new(ptxc_bin!())
        .args(["-arch", "sm_90a"])
        .arg(&sample)
        .args(["--emit", "ast", "-o"])
        .arg(&fifo)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Checked before joining the reader, which would wait forever on a replaced FIFO.
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "the FIFO was replaced by {kind:?}");
    let text = reader.join().unwrap();
    assert!(text.contains("Entry cluster_exchange"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_closed_output_pipe_ends_ptxc_quietly() {
    // `ptxc … | head`: once the reader is gone, ptxc must stop without a panic message (Rust
    // ignores SIGPIPE unless the binary restores it). The AST of this file is ~220 KB, more than
    // a pipe holds.
    use std::os::unix::process::ExitStatusExt;
    let big = ptxc_tests::shared_dir().join("corpus/pyptx/pyptx__fa_ws_pingpong_sm90a.ptx");
    let mut child = Command::new(ptxc_bin!())
        .args(["-arch", "sm_90a"])
        .arg(&big)
        .args(["--emit", "ast"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(13), "{:?}: {stderr}", out.status);
}
