//! The command line. ptxc takes ptxas's spellings where ptxas has the option (`-arch sm_90a`,
//! `-o`, `-v`, `-g`, `-O3`, `--gpu-name`, `--output-file`), so it can stand in for ptxas in a
//! build. Exit codes: 0 success, 1 an error in the input, 2 a usage error.

use crate::diag::{Diagnostic, SourceFile};
use crate::driver;
use crate::frontend::check::Arch;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::Read as _;
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status for an error in the input (diagnostics were printed).
pub const INPUT_ERROR: u8 = 1;
/// Exit status for a usage error.
pub const USAGE_ERROR: u8 = 2;

/// What to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// A cubin (the default).
    Cubin,
    /// The parsed and checked syntax tree.
    Ast,
    /// The machine IR after the last pass run.
    Mir,
    /// The SASS listing, in nvdisasm's syntax, decoded from the encoded words.
    Sass,
}

/// A graph `--dot` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DotGraph {
    /// The MIR control-flow graph: a box per basic block with its instructions.
    Cfg,
    /// The register allocator's interference graph, with the registers it gave.
    Interference,
}

/// ptxc: a PTX-to-SASS compiler for NVIDIA Hopper (sm_90a).
#[derive(Debug, Parser)]
#[command(
    name = "ptxc",
    version = concat!(env!("CARGO_PKG_VERSION"), " (PTX ISA up to 9.1; target sm_90a)"),
    about = "ptxc: compile PTX to Hopper (sm_90a) SASS, the way ptxas does",
    after_help = "ptxas-style spellings are accepted: -arch sm_90a, -o out.cubin, -v, -g, -O3.\n\
                  Use `-` as INPUT to read standard input.",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub compile: CompileArgs,
}

/// The tools besides compiling.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Assemble a SASS listing (cuobjdump -sass format) into machine code.
    Asm(crate::asm::AsmArgs),
    /// Check an sm_90a cubin's control words: every register read not covered by a scoreboard
    /// wait or enough stall cycles; ends with `hazards: N` (exit 1 when N > 0).
    Check(crate::check::CheckArgs),
    /// Compile with ptxc and with ptxas, and compare the code kernel by kernel.
    Diff(DiffArgs),
}

/// When to colour the side-by-side diff.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    /// When standard output is a terminal.
    Auto,
    Always,
    Never,
}

/// `ptxc diff [-arch sm_90a] IN.ptx [--ptxas PATH] [--json] [--color WHEN]`
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The PTX file to compile with both compilers.
    pub input: PathBuf,
    /// Target architecture; sm_90a (sm_90 gives the same code).
    #[arg(
        long = "gpu-name",
        visible_alias = "arch",
        value_name = "ARCH",
        default_value = "sm_90a"
    )]
    pub arch: String,
    /// The ptxas to compare with (default: $PTXAS, else the provisioned pinned ptxas).
    #[arg(long, value_name = "PATH")]
    pub ptxas: Option<PathBuf>,
    /// Print the comparison as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Colour the differing rows: auto (on a terminal), always, never; `--color` alone means
    /// always.
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto",
          num_args = 0..=1, require_equals = true, default_missing_value = "always")]
    pub color: ColorWhen,
}

/// `ptxc [OPTIONS] INPUT`: compile PTX.
#[derive(Debug, Args)]
pub struct CompileArgs {
    /// The PTX file to compile (`-` for standard input).
    #[arg(required = true)]
    pub input: Option<PathBuf>,

    /// Target architecture (ptxas: -arch). ptxc generates code for sm_90a; sm_90 is accepted and
    /// gives the same code, as with ptxas.
    #[arg(
        long = "gpu-name",
        visible_alias = "arch",
        value_name = "ARCH",
        default_value = "sm_90a"
    )]
    pub arch: String,

    /// Output file (ptxas' default is elf.o).
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// What to produce.
    #[arg(long, value_enum, default_value = "cubin")]
    pub emit: Emit,

    /// Print a graph of every function as Graphviz DOT instead of compiling: `cfg` (the MIR
    /// control-flow graph after the last pass, or after --dot-after) or `interference` (the
    /// register allocator's interference graph). `| dot -Tsvg > g.svg` draws it.
    #[arg(long, value_enum, value_name = "GRAPH", conflicts_with = "emit")]
    pub dot: Option<DotGraph>,

    /// With --dot cfg: draw the CFG after this pass (the names --print-after takes; default:
    /// after the last).
    #[arg(long, value_name = "PASS", requires = "dot")]
    pub dot_after: Option<String>,

    /// With --emit sass: show each instruction's control word (`[B------:R-:W0:Y:S04]`: wait
    /// mask, read and write scoreboards, yield, stall).
    #[arg(long)]
    pub ctrl: bool,

    /// With --emit sass: show the control words and, after each instruction, which producers its
    /// waits and stall are for.
    #[arg(long)]
    pub explain_ctrl: bool,

    /// Print resource usage, like ptxas -v.
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Generate debug code (ptxas -g): no optimisation, exit bookends.
    #[arg(short = 'g', long = "device-debug")]
    pub device_debug: bool,

    /// Print the MIR after every pass (to standard error).
    #[arg(long)]
    pub print_after_all: bool,

    /// Print the MIR after the named pass (`isel` for the input of the pipeline); repeatable.
    #[arg(long, value_name = "PASS")]
    pub print_after: Vec<String>,

    /// Report the time each pass took (to standard error).
    #[arg(long)]
    pub time_passes: bool,

    /// Reorder each block by critical-path list scheduling (the `schedule` pass; off by
    /// default, see docs/passes/schedule.md).
    #[arg(long)]
    pub schedule: bool,

    /// Optimisation level 0-3 (ptxas -O).
    #[arg(short = 'O', long = "opt-level", value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: u8,
}

/// Rewrites ptxas's single-dash long options (`-arch sm_90a`, `-arch=sm_90a`) into the
/// double-dash form clap understands.
pub fn normalize_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    const LONGS: [&str; 6] = [
        "arch",
        "gpu-name",
        "output-file",
        "verbose",
        "device-debug",
        "opt-level",
    ];
    args.into_iter()
        .map(|a| {
            if let Some(rest) = a.strip_prefix('-')
                && !rest.starts_with('-')
            {
                let name = rest.split_once('=').map_or(rest, |(name, _)| name);
                if LONGS.contains(&name) {
                    return format!("-{a}");
                }
            }
            a
        })
        .collect()
}

/// The arguments of a plain compile, read without clap: one input file and any of `--gpu-name
/// ARCH` (`-arch ARCH`), `-o FILE` (`--output-file FILE`), `--emit KIND`, `-v`, `-g` and
/// `-O0`–`-O3`, each at most once, values not empty and not starting with `-` — the command lines a build or the
/// timing tool runs. `None` for anything else, which clap parses (and reports on).
///
/// Why: building clap's command and matching against it took 0.19M of the 1.93M instructions
/// of compiling `zluda/vector.ptx` as a process (callgrind, 2026-12-01). A test checks that
/// clap reads every command line this accepts the same way.
pub fn plain_compile_args(args: &[String]) -> Option<CompileArgs> {
    let mut compile = CompileArgs {
        input: None,
        arch: "sm_90a".into(),
        output: None,
        emit: Emit::Cubin,
        dot: None,
        dot_after: None,
        ctrl: false,
        explain_ctrl: false,
        verbose: false,
        device_debug: false,
        print_after_all: false,
        print_after: Vec::new(),
        time_passes: false,
        schedule: false,
        opt_level: 3,
    };
    let (mut arch, mut emit, mut opt) = (false, false, false);
    let mut args = args.iter().skip(1);
    while let Some(a) = args.next() {
        // `--name=value` or `--name value`.
        let (name, inline) = match a.split_once('=') {
            Some((name, v)) if a.starts_with("--") => (name, Some(v)),
            _ => (a.as_str(), None),
        };
        let mut value = || {
            inline
                .or_else(|| args.next().map(String::as_str))
                .filter(|v| !v.is_empty() && !v.starts_with('-'))
                .map(String::from)
        };
        let flag = inline.is_none();
        match name {
            "--gpu-name" | "--arch" if !arch => {
                arch = true;
                compile.arch = value()?;
            }
            "-o" | "--output-file" if compile.output.is_none() => {
                compile.output = Some(PathBuf::from(value()?));
            }
            "-v" | "--verbose" if flag && !compile.verbose => compile.verbose = true,
            "-g" | "--device-debug" if flag && !compile.device_debug => compile.device_debug = true,
            "--emit" if !emit => {
                emit = true;
                compile.emit = match value()?.as_str() {
                    "cubin" => Emit::Cubin,
                    "ast" => Emit::Ast,
                    "mir" => Emit::Mir,
                    "sass" => Emit::Sass,
                    _ => return None,
                };
            }
            "-O0" | "-O1" | "-O2" | "-O3" if !opt => {
                opt = true;
                compile.opt_level = a.as_bytes()[2] - b'0';
            }
            // Subcommand names (and clap's `help`) as the input are clap's to read.
            "asm" | "check" | "diff" | "help" => return None,
            _ if a.is_empty() || a.starts_with('-') || compile.input.is_some() => return None,
            _ => compile.input = Some(PathBuf::from(a)),
        }
    }
    compile.input.is_some().then_some(compile)
}

/// Runs the `ptxc` command with `args` (including the program name).
pub fn main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args = normalize_args(args);
    let cli = match plain_compile_args(&args) {
        Some(compile) => Cli {
            command: None,
            compile,
        },
        None => match Cli::try_parse_from(args) {
            Ok(cli) => cli,
            Err(e) => {
                let code = if e.use_stderr() { USAGE_ERROR } else { 0 };
                let _ = e.print();
                return ExitCode::from(code);
            }
        },
    };
    match &cli.command {
        Some(Command::Asm(args)) => crate::asm::run(args),
        Some(Command::Check(args)) => crate::check::run(args),
        Some(Command::Diff(args)) => diff(args),
        None => compile(&cli.compile),
    }
}

/// Parses `--gpu-name`; ptxc generates code for sm_90a and sm_90 (the same code, as ptxas).
pub fn parse_arch(arch: &str) -> Result<Arch, ExitCode> {
    match Arch::parse(arch) {
        Some(a) if a.sm == 90 => Ok(a),
        _ => {
            eprintln!(
                "ptxc: error: unsupported architecture '{arch}': ptxc generates code for sm_90a (and sm_90)"
            );
            Err(ExitCode::from(USAGE_ERROR))
        }
    }
}

/// The pipeline options the compile arguments ask for.
fn pass_options(args: &CompileArgs) -> crate::passes::Options {
    crate::passes::Options {
        print_after_all: args.print_after_all,
        print_after: args.print_after.clone(),
        time_passes: args.time_passes,
        device_debug: args.device_debug,
        schedule: args.schedule,
        ..crate::passes::Options::new()
    }
}

fn compile(args: &CompileArgs) -> ExitCode {
    let arch = match parse_arch(&args.arch) {
        Ok(a) => a,
        Err(code) => return code,
    };
    if let Some(after) = &args.dot_after {
        let names = crate::passes::pass_names(&pass_options(args));
        if args.dot != Some(DotGraph::Cfg) {
            eprintln!("ptxc: error: --dot-after is for --dot cfg");
            return ExitCode::from(USAGE_ERROR);
        }
        if !names.contains(&after.as_str()) {
            eprintln!(
                "ptxc: error: unknown pass '{after}' for --dot-after (passes: {})",
                names.join(", ")
            );
            return ExitCode::from(USAGE_ERROR);
        }
    }
    let input = args.input.clone().unwrap_or_else(|| PathBuf::from("-"));
    let src = match read_source(&input) {
        Ok(src) => src,
        Err(msg) => {
            eprintln!("ptxc: error: {msg}");
            return ExitCode::from(INPUT_ERROR);
        }
    };
    // A large module touches tens of megabytes of fresh memory; have the second core map it
    // ahead of the compilation (`arena::populate_ahead`).
    if src.text.len() >= crate::arena::POPULATE_MIN_SOURCE {
        crate::arena::populate_ahead();
    }
    // The module, its MIR and its code are never freed: `main` exits right after. Freeing the
    // many small allocations of a large module took several percent of a compilation (clang's
    // `-cc1` skips it the same way, `-disable-free`). `cli::main` is only for a process's main.
    let checked = match driver::frontend(&src, arch) {
        Ok(c) => ManuallyDrop::new(c),
        Err(diags) => {
            report(&src, &diags);
            return ExitCode::from(INPUT_ERROR);
        }
    };
    report(&src, &checked.warnings);
    if let Some(graph) = args.dot {
        let opts = pass_options(args);
        let text = match graph {
            DotGraph::Cfg => {
                let last = crate::passes::pass_names(&opts)
                    .last()
                    .copied()
                    .unwrap_or("isel");
                driver::dot_cfg(&checked, &opts, args.dot_after.as_deref().unwrap_or(last))
            }
            DotGraph::Interference => driver::dot_interference(&checked, &opts),
        };
        return match text {
            Ok(text) => emit_text(args.output.as_ref(), &text),
            Err(diags) => {
                report(&src, &diags);
                ExitCode::from(INPUT_ERROR)
            }
        };
    }
    match args.emit {
        Emit::Ast => {
            let text = crate::frontend::print::print_ast(&checked.module, &src);
            emit_text(args.output.as_ref(), &text)
        }
        Emit::Mir | Emit::Sass | Emit::Cubin => {
            let started = std::time::Instant::now();
            let opts = pass_options(args);
            let (lowered, timings) = match driver::lower(&checked, &opts) {
                Ok((lowered, report)) => (ManuallyDrop::new(lowered), report.timings),
                Err(diags) => {
                    report(&src, &diags);
                    return ExitCode::from(INPUT_ERROR);
                }
            };
            for (pass, t) in &timings {
                eprintln!(
                    "ptxc: time-passes: {pass:<20} {:>10.3} ms",
                    t.as_secs_f64() * 1e3
                );
            }
            if args.emit == Emit::Mir {
                let text: String = lowered
                    .module
                    .functions
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                return emit_text(args.output.as_ref(), &text);
            }
            let encoded = match driver::encode(&lowered) {
                Ok(e) => ManuallyDrop::new(e),
                Err(diags) => {
                    report(&src, &diags);
                    return ExitCode::from(INPUT_ERROR);
                }
            };
            if args.emit == Emit::Cubin {
                return write_cubin(args, &src, &checked, &lowered, &encoded, started);
            }
            let mut text = String::new();
            for e in encoded.iter() {
                let l = if args.ctrl || args.explain_ctrl {
                    crate::emit::sass::listing_ctrl(e, args.explain_ctrl)
                } else {
                    crate::emit::sass::listing(e)
                };
                match l {
                    Ok(l) => text.push_str(&l),
                    Err(err) => {
                        eprintln!("ptxc: internal error: {err}");
                        return ExitCode::from(INPUT_ERROR);
                    }
                }
            }
            emit_text(args.output.as_ref(), &text)
        }
    }
}

/// `ptxc diff`: ptxc in-process, ptxas and cuobjdump through the reference-tool locator.
fn diff(args: &DiffArgs) -> ExitCode {
    use crate::diff;
    use std::io::IsTerminal as _;
    let arch = match parse_arch(&args.arch) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let src = match read_source(&args.input) {
        Ok(src) => src,
        Err(msg) => {
            eprintln!("ptxc diff: error: {msg}");
            return ExitCode::from(INPUT_ERROR);
        }
    };
    let locate = |tool: ptxc_reftools::Tool| {
        ptxc_reftools::find(tool).map_err(|e| {
            eprintln!("ptxc diff: error: cannot find {tool}: {e}");
            ExitCode::from(INPUT_ERROR)
        })
    };
    let ptxas = match &args.ptxas {
        Some(p) if p.is_file() => p.clone(),
        Some(p) => {
            eprintln!("ptxc diff: error: --ptxas {}: no such file", p.display());
            return ExitCode::from(USAGE_ERROR);
        }
        None => match locate(ptxc_reftools::Tool::Ptxas) {
            Ok(p) => p,
            Err(code) => return code,
        },
    };
    let cuobjdump = match locate(ptxc_reftools::Tool::Cuobjdump) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (theirs, _) = match diff::ptxas_listings(&ptxas, &cuobjdump, &args.input) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ptxc diff: error: {e}");
            return ExitCode::from(INPUT_ERROR);
        }
    };
    let (ours, failed) = match diff::ptxc_listings(&src, arch) {
        Ok(l) => (l, false),
        Err(diags) => {
            report(&src, &diags);
            (Vec::new(), true)
        }
    };
    let diffs = diff::compare(ours, theirs);
    let text = if args.json {
        diff::to_json(&diffs)
    } else {
        let color = match args.color {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => std::io::stdout().is_terminal(),
        };
        let mut text: String = diffs.iter().map(|d| diff::side_by_side(d, color)).collect();
        for d in &diffs {
            text.push_str(&d.summary());
            text.push('\n');
        }
        text
    };
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    if failed {
        ExitCode::from(INPUT_ERROR)
    } else {
        ExitCode::SUCCESS
    }
}

/// Restores the default action for SIGPIPE; call first thing in a binary's `main`.
///
/// Rust programs ignore SIGPIPE, so `ptxc … --emit sass | head` would make the next `print!`
/// panic on the closed pipe. A command-line tool should end quietly instead, as `cat` does.
pub fn restore_sigpipe() {
    // SAFETY: `signal` with SIG_DFL for SIGPIPE installs no handler; called from `main` before
    // any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// ptxas's output file when `-o` is not given.
pub const DEFAULT_OUTPUT: &str = "elf.o";

/// Builds the cubin of a compiled module and writes it (atomically) to `-o` or `elf.o`; `-v`
/// prints ptxas's resource lines to standard error.
fn write_cubin(
    args: &CompileArgs,
    src: &SourceFile,
    checked: &driver::Checked,
    lowered: &crate::lower::Lowered,
    encoded: &[crate::emit::sass::EncodedFunction],
    started: std::time::Instant,
) -> ExitCode {
    let opts = crate::emit::build::BuildOptions {
        device_debug: args.device_debug,
        tool_options: format!("-arch {}", args.arch),
    };
    let (built, bytes) = match driver::cubin(checked, lowered, encoded, &opts) {
        Ok(r) => r,
        Err(diags) => {
            report(src, &diags);
            return ExitCode::from(INPUT_ERROR);
        }
    };
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_OUTPUT));
    if let Err(e) = driver::write_atomically(&path, &bytes) {
        eprintln!("ptxc: error: cannot write '{}': {e}", path.display());
        return ExitCode::from(INPUT_ERROR);
    }
    if args.verbose {
        let ms = started.elapsed().as_secs_f64() * 1e3;
        eprint!(
            "{}",
            crate::emit::build::verbose_report(&built, &args.arch, ms)
        );
    }
    ExitCode::SUCCESS
}

/// Reads a source file, or standard input for `-`. Bytes that are not UTF-8 are kept visible
/// (lossily decoded) so that the lexer reports the first odd character with its position.
pub fn read_source(input: &std::path::Path) -> Result<SourceFile, String> {
    let mut bytes = Vec::new();
    let name = if input.as_os_str() == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        "<stdin>".to_string()
    } else {
        let cannot = |e: std::io::Error| format!("cannot read '{}': {e}", input.display());
        let mut file = std::fs::File::open(input).map_err(cannot)?;
        let meta = file.metadata().map_err(cannot)?;
        if meta.is_file()
            && let Some(text) = crate::diag::SourceText::map(&file, meta.len())
        {
            crate::diag::catch_truncation();
            return Ok(SourceFile::from_text(input.display().to_string(), text));
        }
        bytes.reserve_exact(meta.len() as usize);
        file.read_to_end(&mut bytes).map_err(cannot)?;
        input.display().to_string()
    };
    // Valid UTF-8 (every real PTX file) becomes the text without a copy; only other bytes are
    // decoded lossily.
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(SourceFile::new(name, text))
}

/// Prints diagnostics to standard error.
pub fn report(src: &SourceFile, diags: &[Diagnostic]) {
    for d in diags {
        eprint!("{}", src.render(d));
    }
}

/// Writes a text result to `output` (atomically) or to standard output.
pub fn emit_text(output: Option<&PathBuf>, text: &str) -> ExitCode {
    match output {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_spellings() {
        let args = normalize_args(
            ["ptxc", "-arch", "sm_90a", "-O3", "x.ptx", "-o", "y"].map(String::from),
        );
        let cli = Cli::try_parse_from(args).unwrap().compile;
        assert_eq!(cli.arch, "sm_90a");
        assert_eq!(cli.opt_level, 3);
        assert_eq!(cli.output.unwrap(), PathBuf::from("y"));
        let args = normalize_args(["ptxc", "-arch=sm_90", "x.ptx"].map(String::from));
        assert_eq!(Cli::try_parse_from(args).unwrap().compile.arch, "sm_90");
    }

    /// Every command line the clap-free reading accepts, clap reads the same way; the others
    /// are left to clap.
    #[test]
    fn plain_compile_args_agree_with_clap() {
        let accepted = [
            "ptxc x.ptx",
            "ptxc -arch sm_90a x.ptx -o y.cubin",
            "ptxc -arch=sm_90 x.ptx",
            "ptxc --gpu-name sm_90a -o y x.ptx -v",
            "ptxc x.ptx --output-file y -g -O0",
            "ptxc -O3 --arch sm_80 x.ptx --verbose --device-debug",
            "ptxc -output-file=y x.ptx",
            "ptxc -arch sm_90a x.ptx --emit cubin -o y",
            "ptxc x.ptx --emit sass",
            "ptxc --emit ast x.ptx",
            "ptxc --emit mir x.ptx -v",
            "ptxc --gpu-name=sm_90a x.ptx --output-file=y --emit=sass",
        ];
        let refused = [
            "ptxc",
            "ptxc -o y",
            "ptxc x.ptx z.ptx",
            "ptxc - -o y",
            "ptxc x.ptx -o",
            "ptxc x.ptx -o -v",
            "ptxc x.ptx -o y -o z",
            "ptxc x.ptx -v -v",
            "ptxc x.ptx -O4",
            "ptxc x.ptx -O 3",
            "ptxc x.ptx --emit=",
            "ptxc x.ptx --output-file=",
            "ptxc x.ptx --verbose=1",
            "ptxc x.ptx --device-debug=true",
            "ptxc x.ptx --arch=sm_90a --gpu-name sm_90",
            "ptxc x.ptx --emit Sass",
            "ptxc x.ptx --emit elf",
            "ptxc x.ptx --emit sass --emit cubin",
            "ptxc x.ptx --emit sass --ctrl",
            "ptxc x.ptx --dot cfg",
            "ptxc -arch sm_90a -arch sm_90 x.ptx",
            "ptxc asm x.sass",
            "ptxc check x.cubin",
            "ptxc diff x.ptx",
            "ptxc help",
            "ptxc -- x.ptx",
            "ptxc --help",
            "ptxc -h",
            "ptxc --version",
        ];
        let args = |line: &str| normalize_args(line.split(' ').map(String::from));
        for line in accepted {
            let fast = plain_compile_args(&args(line)).unwrap_or_else(|| panic!("{line}"));
            let clap = Cli::try_parse_from(args(line)).unwrap();
            assert!(clap.command.is_none(), "{line}");
            assert_eq!(format!("{fast:?}"), format!("{:?}", clap.compile), "{line}");
        }
        for line in refused {
            assert!(plain_compile_args(&args(line)).is_none(), "{line}");
        }
        // An empty value or input is clap's to refuse.
        let empty = ["ptxc".into(), String::new()];
        assert!(plain_compile_args(&empty).is_none());
        let empty_out = ["ptxc", "x.ptx", "-o", ""].map(String::from);
        assert!(plain_compile_args(&empty_out).is_none());
    }

    #[test]
    fn dot_values() {
        let parse = |v: &str| Cli::try_parse_from(["ptxc", "x.ptx", "--dot", v]);
        assert_eq!(parse("cfg").unwrap().compile.dot, Some(DotGraph::Cfg));
        assert_eq!(
            parse("interference").unwrap().compile.dot,
            Some(DotGraph::Interference)
        );
        let err = parse("callgraph").unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
        assert!(err.use_stderr(), "a usage error (exit 2)");
        let names = crate::passes::pass_names(&crate::passes::Options::new());
        assert_eq!(names.first(), Some(&"isel"));
        assert!(names.contains(&"regalloc"));
        let through = crate::passes::pipeline_through(&crate::passes::Options::new(), "regalloc");
        assert_eq!(through.unwrap().last().unwrap().name(), "regalloc");
        assert!(crate::passes::pipeline_through(&crate::passes::Options::new(), "nope").is_none());
    }
}
