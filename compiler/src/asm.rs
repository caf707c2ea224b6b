//! `ptxc asm`: assemble a SASS listing (the format of `cuobjdump -sass` or `nvdisasm -hex`) into
//! machine code, or check that re-encoding reproduces the listed words.
//!
//! Each instruction's text is parsed into the model ([`crate::target::sm90a::Instr`]) and
//! encoded with the form tables; the control bits come from the listed high word, since the text
//! does not show them. Listings with several functions (`Function : name` headers) are accepted.
//! `-o OUT.cubin` writes a cubin: each function's assembled words, described by the listing's
//! header comments (`// .kernel NAME`, `// .param …`; see [`crate::emit::listing`]). Any other
//! output name gets the raw words, all instructions in order.

use crate::emit::scoreboard::{self, Agreement};
use crate::target::sm90a::bits::{diff_ranges, fmt_ranges};
use crate::target::sm90a::{Instr, encode, listed_instr, parse_listing};
use clap::Args;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

/// `ptxc asm [-arch sm_90a] IN.sass [--check] [-o OUT]`
#[derive(Debug, Args)]
pub struct AsmArgs {
    /// The SASS listing to assemble (`-` for standard input).
    pub input: PathBuf,
    /// Target architecture; sm_90a is the only one.
    #[arg(
        long = "gpu-name",
        visible_alias = "arch",
        value_name = "ARCH",
        default_value = "sm_90a"
    )]
    pub arch: String,
    /// Re-encode every instruction, compare it with the listed words, print each mismatch and
    /// end with `asm-check: N/M instructions bit-exact`; exit 0 only when all are.
    #[arg(long)]
    pub check: bool,
    /// Where to write the result: a cubin when FILE ends in `.cubin` (the listing's header
    /// comments describe each kernel, see `emit::listing`), otherwise the encoded instructions
    /// as raw 16-byte words (as `nvdisasm -b SM90a` reads them).
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Recompute every control word with ptxc's scoreboard pass and compare it with the listed
    /// one: ends with `ctrl-agreement: N/M instructions identical` and per-field figures.
    #[arg(long, conflicts_with_all = ["check", "output"])]
    pub recompute_ctrl: bool,
    /// With --recompute-ctrl: print every instruction whose control word differs (every
    /// instruction when the environment variable PTXC_CTRL_ALL is set), with what set ptxc's
    /// stall.
    #[arg(long, requires = "recompute_ctrl")]
    pub show_diffs: bool,
    /// With --recompute-ctrl: the listing is of debug code (ptxas -g, or `.target sm_90a,
    /// debug`), whose control words follow ptxas's serial scheme. Without it, a listing where
    /// most instructions wait on SB0 and SB1 and stall 15 is taken as debug code (with a note).
    #[arg(long, requires = "recompute_ctrl")]
    pub debug_code: bool,
}

/// Whether a listing looks like ptxas's debug code (`-g`): at least half of its instructions
/// (the padding left out) carry the serial scheme's `[B01----:…:S15]`, which optimised code
/// never has in bulk.
pub fn looks_serial(src: &str) -> bool {
    let (mut n, mut serial) = (0usize, 0usize);
    for l in parse_listing(src) {
        if l.words.is_none() {
            continue;
        }
        let Ok(i) = listed_instr(&l) else { continue };
        if i.mnemonic == "NOP" || i.mnemonic == "BRA" && i.ctrl.stall == 0 {
            continue;
        }
        n += 1;
        if i.ctrl.stall == 15 && i.ctrl.wait == 0b11 {
            serial += 1;
        }
    }
    n > 0 && serial * 2 >= n
}

/// The result of `--recompute-ctrl` on a listing: the agreement and, when asked, the
/// differing instructions.
pub fn recompute_ctrl(
    src: &str,
    show: bool,
    opts: scoreboard::Options,
) -> Result<(Agreement, String), String> {
    let listing = parse_listing(src);
    if listing.is_empty() {
        return Err("no instructions found (expected `/*0000*/ TEXT ; /* 0x... */` lines)".into());
    }
    // Functions in listing order.
    let mut funcs: Vec<(String, Vec<Instr>)> = Vec::new();
    for l in &listing {
        if l.words.is_none() {
            return Err(format!(
                "line {}: `{}` has no encoding words: the listed control bits are needed",
                l.line, l.text
            ));
        }
        let mut i = listed_instr(l).map_err(|e| format!("line {}: `{}`: {e}", l.line, l.text))?;
        for o in &mut i.operands {
            o.reuse = false;
        }
        match funcs.last_mut() {
            Some((name, v)) if *name == l.function => v.push(i),
            _ => funcs.push((l.function.clone(), vec![i])),
        }
    }
    let mut total = Agreement::default();
    let mut diffs = String::new();
    for (name, code) in &funcs {
        let nodes = scoreboard::analyze(code).map_err(|e| format!("{name}: {e}"))?;
        let ours = scoreboard::assign_nodes(code, &nodes, opts);
        for (k, ((i, c), node)) in code.iter().zip(&ours.ctrl).zip(&nodes).enumerate() {
            total.add(c, &i.ctrl, node.padding);
            if show && (*c != i.ctrl || std::env::var_os("PTXC_CTRL_ALL").is_some()) {
                diffs.push_str(&format!(
                    "{name}+0x{:04x}: ptxas {} ptxc {}  {i}    ({})\n",
                    i.addr,
                    scoreboard::ctrl_text(&i.ctrl),
                    scoreboard::ctrl_text(c),
                    ours.why[k].stall,
                ));
            }
        }
    }
    Ok((total, diffs))
}

fn read_input(p: &PathBuf) -> std::io::Result<String> {
    if p.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        Ok(s)
    } else {
        std::fs::read_to_string(p)
    }
}

/// Runs `ptxc asm`.
pub fn run(args: &AsmArgs) -> ExitCode {
    if args.arch != "sm_90a" && args.arch != "sm_90" {
        eprintln!(
            "ptxc asm: error: unsupported architecture `{}` (only sm_90a)",
            args.arch
        );
        return ExitCode::from(crate::cli::USAGE_ERROR);
    }
    let src = match read_input(&args.input) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ptxc asm: error: cannot read {}: {e}", args.input.display());
            return ExitCode::from(crate::cli::INPUT_ERROR);
        }
    };
    if args.recompute_ctrl {
        let serial = args.debug_code || looks_serial(&src);
        if serial && !args.debug_code {
            eprintln!(
                "ptxc asm: note: {} looks like debug code (ptxas -g): recomputing with the \
                 serial scheme (--debug-code)",
                args.input.display()
            );
        }
        let opts = scoreboard::Options { serial };
        return match recompute_ctrl(&src, args.show_diffs, opts) {
            Ok((a, diffs)) => {
                print!("{diffs}{}", a.report());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ptxc asm: error: {}: {e}", args.input.display());
                ExitCode::from(crate::cli::INPUT_ERROR)
            }
        };
    }
    let listing = parse_listing(&src);
    if listing.is_empty() {
        eprintln!(
            "ptxc asm: error: {}: no instructions found (expected `/*0000*/ TEXT ; /* 0x... */` lines)",
            args.input.display()
        );
        return ExitCode::from(crate::cli::INPUT_ERROR);
    }
    let mut out = std::io::stdout().lock();
    let mut exact = 0usize;
    let mut words: Vec<u8> = Vec::new();
    let mut errors = 0usize;
    for l in &listing {
        let place = if l.function.is_empty() {
            format!("0x{:04x}", l.addr)
        } else {
            format!("{}+0x{:04x}", l.function, l.addr)
        };
        let encoded = listed_instr(l)
            .map_err(|e| e.to_string())
            .and_then(|i| encode(&i).map_err(|e| e.to_string()));
        match (&encoded, l.words) {
            (Ok(w), Some(lw)) if *w == lw => exact += 1,
            (Ok(w), Some(lw)) => {
                if args.check {
                    let _ = writeln!(
                        out,
                        "{place}: {}\n    expected 0x{:016x} 0x{:016x}\n    produced 0x{:016x} 0x{:016x}\n    differing bits: {}",
                        l.text,
                        lw[0],
                        lw[1],
                        w[0],
                        w[1],
                        fmt_ranges(&diff_ranges(&lw, w))
                    );
                }
            }
            (Ok(_), None) => {
                if args.check {
                    let _ = writeln!(
                        out,
                        "{place}: {}\n    error: the listing has no encoding words for this instruction",
                        l.text
                    );
                }
            }
            (Err(e), _) => {
                errors += 1;
                if args.check || args.output.is_some() {
                    let _ = writeln!(out, "{place}: {}\n    error: {e}", l.text);
                }
            }
        }
        if let Ok(w) = encoded {
            if l.words.is_none() && !args.check && args.output.is_some() {
                errors += 1;
                let _ = writeln!(
                    out,
                    "{place}: {}\n    error: no control bits: the listing has no encoding words",
                    l.text
                );
            }
            words.extend_from_slice(&w[0].to_le_bytes());
            words.extend_from_slice(&w[1].to_le_bytes());
        }
    }
    let total = listing.len();
    if args.check {
        let _ = writeln!(out, "asm-check: {exact}/{total} instructions bit-exact");
    }
    if let Some(o) = &args.output {
        if errors > 0 {
            eprintln!(
                "ptxc asm: error: {errors} instruction(s) could not be assembled; no output written"
            );
            return ExitCode::from(crate::cli::INPUT_ERROR);
        }
        let bytes = if o.extension().is_some_and(|x| x == "cubin") {
            match cubin(&src, &listing, &words) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("ptxc asm: error: {}: {e}", args.input.display());
                    return ExitCode::from(crate::cli::INPUT_ERROR);
                }
            }
        } else {
            words.clone()
        };
        if let Err(e) = crate::driver::write_atomically(o, &bytes) {
            eprintln!("ptxc asm: error: cannot write {}: {e}", o.display());
            return ExitCode::from(crate::cli::INPUT_ERROR);
        }
    }
    if !args.check && args.output.is_none() {
        // Print the re-encoded listing.
        for (l, chunk) in listing.iter().zip(words.chunks(16)) {
            let lo = u64::from_le_bytes(chunk[..8].try_into().unwrap_or_default());
            let hi = u64::from_le_bytes(chunk[8..].try_into().unwrap_or_default());
            let _ = writeln!(
                out,
                "/*{:04x}*/ {} ; /* 0x{lo:016x} */ /* 0x{hi:016x} */",
                l.addr, l.text
            );
        }
        if errors > 0 {
            return ExitCode::from(crate::cli::INPUT_ERROR);
        }
    }
    if args.check && exact != total {
        return ExitCode::from(crate::cli::INPUT_ERROR);
    }
    ExitCode::SUCCESS
}

/// A cubin from an assembled listing: the functions (`Function : name` blocks) with the words
/// ptxc assembled, described by the listing's header comments ([`crate::emit::listing`]).
fn cubin(
    src: &str,
    listing: &[crate::target::sm90a::ListedInstr],
    words: &[u8],
) -> Result<Vec<u8>, crate::emit::listing::ListingError> {
    use crate::emit::listing::{self, ListedFunction, ListingError};
    let header = listing::parse_header(src)?;
    // Names and registers from the listing; the code is what was assembled.
    let mut functions: Vec<ListedFunction> = listing::parse_code(src)?;
    for f in &mut functions {
        f.code.clear();
    }
    for (l, w) in listing.iter().zip(words.chunks_exact(16)) {
        let Some(f) = functions.iter_mut().find(|f| f.name == l.function) else {
            return Err(ListingError {
                line: l.line,
                message: "an instruction outside any `Function :` block".into(),
            });
        };
        f.code.extend_from_slice(w);
    }
    for f in &mut functions {
        if let Some(code) = crate::emit::read::strip_padding(&f.code) {
            f.code = code;
        }
    }
    if functions.is_empty() {
        return Err(ListingError {
            line: 0,
            message: "the listing has no `Function :` block".into(),
        });
    }
    let model = listing::build(&header, &functions, &[])?;
    crate::emit::write(&model).map_err(|e| ListingError {
        line: 0,
        message: e.to_string(),
    })
}
