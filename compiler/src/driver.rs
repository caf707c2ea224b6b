//! The compilation pipeline, in one place. Each stage is a function call here; the stages
//! themselves live in their own modules.

use crate::diag::{Diagnostic, SourceFile};
use crate::frontend::{self, ast::Module, check::Arch, check::ModuleInfo};
use std::io::Write as _;
use std::path::Path;

/// A parsed and checked PTX module.
#[derive(Debug)]
pub struct Checked {
    pub module: Module,
    pub info: ModuleInfo,
    /// The PTX text (debug builds copy it into `.nv_debug_ptx_txt`), shared with the
    /// [`SourceFile`] it came from (a large module's text is megabytes).
    pub source: std::sync::Arc<crate::diag::SourceText>,
    /// Warnings found along the way.
    pub warnings: Vec<Diagnostic>,
}

/// Stage 1, the frontend: parse, then check. On failure returns every diagnostic found.
pub fn frontend(src: &SourceFile, arch: Arch) -> Result<Checked, Vec<Diagnostic>> {
    let mut module = frontend::parse(&src.text).map_err(|d| vec![d])?;
    hoist_function_globals(&mut module);
    let (info, warnings) = frontend::check::check(&module, arch)?;
    Ok(Checked {
        module,
        info,
        source: std::sync::Arc::clone(&src.text),
        warnings,
    })
}

/// Moves the `.global` variables declared in a function body (`zluda/cp_async`'s `.global
/// .b32 from[4] = {…}`) to module scope, just before their function, so that lowering and the
/// cubin writer treat them as any module variable. Only names that no module variable and no
/// other function's variable use are moved; the others stay where they are (and lowering
/// reports that it cannot address them). ptxas names such a variable `$__from__N` in the
/// cubin; ptxc keeps its PTX name (a local symbol either way).
///
/// The `.shared` variables a `.func` declares at the top of its body (zluda
/// `shared_unify_local`'s `shared_mod`) move the same way: ptxas lays them out in the window of
/// each kernel that calls the function, among the module's `.shared` variables in declaration
/// order, after the kernel's own (probe in `docs/passes/lowering.md`, "Calls to module
/// functions"), which is where a module variable goes; the function, compiled as a subroutine,
/// then addresses them as any module variable.
fn hoist_function_globals(m: &mut Module) {
    use crate::frontend::ast::{FunctionKind, Item, Space, Stmt};
    use rustc_hash::FxHashMap;
    // The spaces moved out of a function of this kind.
    fn hoisted(kind: FunctionKind, space: Space) -> bool {
        space == Space::Global || (space == Space::Shared && kind == FunctionKind::Func)
    }
    fn collect<'a>(kind: FunctionKind, stmts: &'a [Stmt], out: &mut Vec<&'a str>) {
        for s in stmts {
            match s {
                Stmt::Var(v) if hoisted(kind, v.space) => {
                    out.extend(v.decls.iter().map(|d| d.name.text.as_str()));
                }
                Stmt::Block(b) => collect(kind, &b.stmts, out),
                _ => {}
            }
        }
    }
    let mut count: FxHashMap<String, usize> = FxHashMap::default();
    for item in &m.items {
        match item {
            Item::Var(v) => {
                for d in &v.decls {
                    *count.entry(d.name.text.to_string()).or_default() += 2;
                }
            }
            Item::Function(f) => {
                let mut names = Vec::new();
                if let Some(b) = &f.body {
                    collect(f.kind, &b.stmts, &mut names);
                }
                for n in names {
                    *count.entry(n.to_string()).or_default() += 1;
                }
            }
            _ => {}
        }
    }
    if count.values().all(|&c| c != 1) {
        return;
    }
    let items = std::mem::take(&mut m.items);
    for mut item in items {
        if let Item::Function(f) = &mut item
            && let Some(b) = &mut f.body
        {
            let kind = f.kind;
            // Only the function's top-level statements (a nested block's variable is scoped
            // to the block).
            let stmts = std::mem::take(&mut b.stmts);
            for s in stmts {
                match s {
                    Stmt::Var(v)
                        if hoisted(kind, v.space)
                            && v.decls
                                .iter()
                                .all(|d| count.get(d.name.text.as_str()) == Some(&1)) =>
                    {
                        m.items.push(Item::Var(v));
                    }
                    s => b.stmts.push(s),
                }
            }
        }
        m.items.push(item);
    }
}

/// Stage 2, lowering and the MIR pipeline: PTX → MIR (instruction selection, SSA), then the
/// passes of [`crate::passes::PIPELINE`]. Dumps and timings asked for in `opts` come back in
/// the report. A `.target …, debug` module is compiled as with `-g`, as ptxas does (its cubin
/// has the exit bookend and `EIATTR_GEN_ERRBAR_AT_EXIT`; `tests/kernels/debug_line_info.ptx`).
pub fn lower(
    checked: &Checked,
    opts: &crate::passes::Options,
) -> Result<(crate::lower::Lowered, crate::passes::Report), Vec<Diagnostic>> {
    if checked.info.debug && !opts.device_debug {
        let opts = crate::passes::Options {
            device_debug: true,
            ..opts.clone()
        };
        return lower_with(checked, &opts, &crate::passes::pipeline(&opts));
    }
    lower_with(checked, opts, &crate::passes::pipeline(opts))
}

/// Stage 2 with the given `passes` (a prefix of the pipeline, for `--dot`).
///
/// Every `.func` a kernel calls is compiled as a subroutine, as ptxas does, except those whose
/// calls the calling convention cannot pass (`lower::inline::unpassable`, decided on the
/// syntax tree), which are inlined; any error is reported as it is.
pub fn lower_with(
    checked: &Checked,
    opts: &crate::passes::Options,
    passes: &[&dyn crate::passes::Pass],
) -> Result<(crate::lower::Lowered, crate::passes::Report), Vec<Diagnostic>> {
    let mut lowered = crate::lower::lower_module_with(checked, true, opts.device_debug)?;
    lowered.device_debug = opts.device_debug;
    let mut report = crate::passes::Report::default();
    let run = |f: &mut crate::mir::Function, report: &mut crate::passes::Report| {
        crate::passes::run(f, passes, opts, report)
            // Reported at the function's name.
            .map_err(|e| vec![Diagnostic::error(f.span, e.to_string())])
    };
    // Caller-saved subroutines first (`Function::caller_saved`: ptxas's slow paths and the
    // module's subroutines but the recursive and address-taken ones), each after those it
    // calls: once allocated, the registers each writes (its calls' included) are all a call
    // to it overwrites (`passes/regalloc`, `call_clobber_set`), which its callers'
    // allocation needs. A subroutine lowered for several `.shared` layouts counts the
    // registers of every copy. They call no one recursively, so an order exists; the
    // subroutines with the fixed convention and the kernels follow.
    let allocates = passes.iter().any(|p| p.name() == "regalloc");
    let mut callee_writes: Vec<(String, crate::mir::RegSet)> = Vec::new();
    let mut pending: Vec<usize> = (0..lowered.subroutines.len())
        .filter(|&k| lowered.subroutines[k].caller_saved)
        .collect();
    while !pending.is_empty() {
        let waits = |k: usize, pending: &[usize], subs: &[crate::mir::Function]| {
            let f = &subs[k];
            f.blocks
                .iter()
                .flat_map(|b| &b.insts)
                .filter(|i| i.mnemonic == "CALL")
                .flat_map(|i| &i.ops)
                .any(|o| match &o.kind {
                    crate::mir::OpKind::Func(n) => pending
                        .iter()
                        .any(|&j| j != k && subs[j].name == *n && *n != f.name),
                    _ => false,
                })
        };
        let Some(at) =
            (0..pending.len()).find(|&p| !waits(pending[p], &pending, &lowered.subroutines))
        else {
            return Err(vec![Diagnostic::error(
                crate::frontend::ast::Span::default(),
                "internal error: caller-saved subroutines call each other in a cycle".to_string(),
            )]);
        };
        let k = pending.remove(at);
        let f = &mut lowered.subroutines[k];
        f.callee_writes = callee_writes.clone();
        run(f, &mut report)?;
        if allocates {
            let set = crate::passes::regalloc::written_registers(f);
            match callee_writes.iter_mut().find(|(n, _)| *n == f.name) {
                Some((_, s)) => *s = s.union(set),
                None => callee_writes.push((f.name.clone(), set)),
            }
        }
    }
    for f in lowered
        .module
        .functions
        .iter_mut()
        .chain(lowered.subroutines.iter_mut().filter(|f| !f.caller_saved))
    {
        f.callee_writes = callee_writes.clone();
        run(f, &mut report)?;
    }
    // Subroutines join the kernels that call them once registers are allocated.
    if passes.iter().any(|p| p.name() == "prologue") {
        crate::lower::link::link(&mut lowered).map_err(|e| {
            vec![Diagnostic::error(
                crate::frontend::ast::Span::default(),
                format!("internal error: {e}"),
            )]
        })?;
    }
    Ok((lowered, report))
}

/// `--dot cfg`: the control-flow graph of every function after the pass `after` (`isel` for
/// the pipeline's input), as DOT, one `digraph` per function in module order.
pub fn dot_cfg(
    checked: &Checked,
    opts: &crate::passes::Options,
    after: &str,
) -> Result<String, Vec<Diagnostic>> {
    let passes = crate::passes::pipeline_through(opts, after).ok_or_else(|| {
        vec![Diagnostic::error(
            crate::frontend::ast::Span::default(),
            format!("unknown pass '{after}'"),
        )]
    })?;
    let (lowered, _) = lower_with(checked, opts, &passes)?;
    Ok(lowered
        .module
        .functions
        .iter()
        .map(crate::mir::dot::cfg)
        .collect())
}

/// `--dot interference`: the register allocator's interference graph of every function, with
/// the registers the allocation gave, as DOT, one `graph` per function in module order. The
/// pipeline runs up to the allocator, which then allocates (inserting any spill code) without
/// rewriting.
pub fn dot_interference(
    checked: &Checked,
    opts: &crate::passes::Options,
) -> Result<String, Vec<Diagnostic>> {
    use crate::passes::regalloc;
    let mut passes = crate::passes::pipeline(opts);
    let at = passes
        .iter()
        .position(|p| p.name() == "regalloc")
        .expect("the pipeline allocates registers");
    passes.truncate(at);
    let (mut lowered, _) = lower_with(checked, opts, &passes)?;
    let mut text = String::new();
    for f in &mut lowered.module.functions {
        let alloc = regalloc::allocate(f).map_err(|e| {
            vec![Diagnostic::error(
                crate::frontend::ast::Span::default(),
                format!("internal error: {e}"),
            )]
        })?;
        text.push_str(&regalloc::interference::to_dot(f, &alloc));
    }
    Ok(text)
}

/// Stage 3, emission: every function laid out, converted to SASS and encoded. Debug code
/// (`-g`) gets ptxas's serial control words.
pub fn encode(
    lowered: &crate::lower::Lowered,
) -> Result<Vec<crate::emit::sass::EncodedFunction>, Vec<Diagnostic>> {
    let opts = crate::emit::scoreboard::Options {
        serial: lowered.device_debug,
    };
    lowered
        .module
        .functions
        .iter()
        .map(|f| {
            // A function that cannot be emitted is reported at its name.
            crate::emit::sass::encode_function_with(f, opts)
                .map_err(|e| vec![Diagnostic::error(f.span, format!("internal error: {e}"))])
        })
        .collect()
}

/// Stage 4, the cubin: the model of the compiled module ([`crate::emit::build`]), then the
/// bytes ptxas's layout gives it.
pub fn cubin(
    checked: &Checked,
    lowered: &crate::lower::Lowered,
    encoded: &[crate::emit::sass::EncodedFunction],
    opts: &crate::emit::build::BuildOptions,
) -> Result<(crate::emit::build::Built, Vec<u8>), Vec<Diagnostic>> {
    let built = crate::emit::build::build(checked, lowered, encoded, opts)?;
    let bytes = crate::emit::write(&built.cubin).map_err(|e| {
        vec![Diagnostic::error(
            crate::frontend::ast::Span::default(),
            format!("internal error: the cubin writer refused the module: {e}"),
        )]
    })?;
    Ok((built, bytes))
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// failure never leaves a partial file behind.
///
/// A `path` that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO) is
/// written in place: renaming over it would replace the device node with a regular file (which
/// once turned this machine's `/dev/null` into a file that collected every process's output).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
        && !meta.is_dir()
    {
        let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
        return f.write_all(bytes);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        // No `fsync`: the rename is what keeps a failed or interrupted compile from leaving a
        // partial file; durability across power loss is not a compiler's job (ptxas does not
        // sync either), and the sync cost ~4% of a small compile.
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
