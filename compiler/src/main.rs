//! The `ptxc` command. See `ptxc --help` and the README.

use clap::Parser;
use ptxc::cli::{Cli, Emit, normalize_args};
use ptxc::diag::{Diagnostic, SourceFile};
use ptxc::driver;
use ptxc::frontend::check::Arch;
use std::io::Read as _;
use std::process::ExitCode;

/// Exit status for an error in the input (diagnostics were printed).
const INPUT_ERROR: u8 = 1;
/// Exit status for a usage error.
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse_from(normalize_args(std::env::args())) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { USAGE_ERROR } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let arch = match Arch::parse(&cli.arch) {
        Some(a) if a.sm == 90 => a,
        _ => {
            eprintln!(
                "ptxc: error: unsupported architecture '{}': ptxc generates code for sm_90a (and sm_90)",
                cli.arch
            );
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let (name, text) = match read_input(&cli) {
        Ok(x) => x,
        Err(msg) => {
            eprintln!("ptxc: error: {msg}");
            return ExitCode::from(INPUT_ERROR);
        }
    };
    let src = SourceFile::new(name, text);
    let checked = match driver::frontend(&src, arch) {
        Ok(c) => c,
        Err(diags) => {
            report(&src, &diags);
            return ExitCode::from(INPUT_ERROR);
        }
    };
    report(&src, &checked.warnings);
    match cli.emit {
        Emit::Ast => {
            let text = ptxc::frontend::print::print_ast(&checked.module, &src);
            emit_text(&cli, &text)
        }
        Emit::Cubin => {
            eprintln!(
                "ptxc: error: code generation not implemented yet; `{}` parses and checks \
                 (try --emit ast)",
                src.name
            );
            ExitCode::from(INPUT_ERROR)
        }
    }
}

fn read_input(cli: &Cli) -> Result<(String, String), String> {
    let mut bytes = Vec::new();
    let name = if cli.input.as_os_str() == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        "<stdin>".to_string()
    } else {
        bytes = std::fs::read(&cli.input)
            .map_err(|e| format!("cannot read '{}': {e}", cli.input.display()))?;
        cli.input.display().to_string()
    };
    // Non-UTF-8 input is decoded lossily: the lexer then reports the first odd character with
    // its position.
    Ok((name, String::from_utf8_lossy(&bytes).into_owned()))
}

fn report(src: &SourceFile, diags: &[Diagnostic]) {
    for d in diags {
        eprint!("{}", src.render(d));
    }
}

/// Writes a text result to `-o FILE` (atomically) or standard output.
fn emit_text(cli: &Cli, text: &str) -> ExitCode {
    match &cli.output {
        Some(path) => match driver::write_atomically(path, text.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ptxc: error: cannot write '{}': {e}", path.display());
                ExitCode::from(INPUT_ERROR)
            }
        },
        None => {
            print!("{text}");
            ExitCode::SUCCESS
        }
    }
}
