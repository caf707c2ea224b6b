//! The debug sections of a debug build (`-g`, or a `.target …, debug` module): what ptxas
//! 13.1 writes, generated for ptxc's code.
//!
//! * `.debug_frame`: the debug CIE (every register but R1 and RZ undefined, [`debug_cie`]).
//! * `.debug_line`: the source lines of the `.loc` directives, at ptxc's instructions.
//! * `.nv_debug_line_sass`: the PTX line of every instruction, a line program over
//!   `.nv_debug_ptx_txt`.
//! * `.nv_debug_ptx_txt`: the PTX text, one NUL-terminated line per source line.
//! * the `.section` blocks of the PTX (`.debug_abbrev` first, then PTX order, empty ones
//!   dropped), with PTX labels relocated to the addresses of ptxc's instructions.
//!
//! Each layout rule is recorded with the probe that shows it in `docs/cubin.md` ("Debug
//! sections"). Not generated: `.nv_debug_info_reg_sass` and `.nv_debug_info_reg_type` (where
//! each PTX register lives); a debugger gets line tables and frames but no PTX variables. Their
//! format is known and read/written by [`super::debug_regs`]; what is missing is the content:
//! ptxc's MIR does not record which PTX register a value came from, so after allocation nothing
//! says which SASS register holds `%r1` at a given address.

use super::frame::{sleb, uleb};
use super::model::*;
use super::sass::EncodedFunction;
use crate::diag::Diagnostic;
use crate::frontend::ast::{self, BinOp, Expr, Item, SectionItem, SectionValue, Span, Stmt};
use crate::frontend::check::eval_const;
use runtime_abi::reloc::R_CUDA_64;

/// One compiled kernel, as the debug sections see it.
pub struct DebugFunction<'a> {
    pub ast: &'a ast::Function,
    pub encoded: &'a EncodedFunction,
    /// The `.text` size with ptxas's padding.
    pub text_size: u64,
    /// The constant-bank offset of each parameter (what a parameter name means in a
    /// `.section` block: `.b64 k_param_0` is `0x210`).
    pub param_offsets: Vec<u32>,
    /// A `.func` of its own (debug builds, `lower::link`): its frame bytes, what the CFA is
    /// above its stack pointer once the frame is open; its `.local` variables are at the bottom
    /// of the frame (`passes/prologue.rs`). `None` for a kernel.
    pub device_frame: Option<u32>,
}

fn err(span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(span, msg.into())
}

/// The CIE ptxas writes in debug builds: `DW_CFA_def_cfa R1, 0`, `DW_CFA_same_value RZ`, then
/// `DW_CFA_undefined` for every other register in ptxas's numbering but R1, which is
/// `DW_CFA_same_value` in its place (measured: the same 325 `undefined` in every debug cubin, `tests/kernels/debug_line_info.ptx`,
/// `vectorAdd_kernel64.ptx`, `tests/sass-probes/ptx/debug_loc.ptx` with and without `-g`).
pub fn debug_cie() -> Cie {
    let mut ops = vec![
        CfaOp::DefCfa {
            reg: DWARF_R1,
            offset: 0,
        },
        CfaOp::SameValue(DWARF_RZ),
    ];
    let undefined = [
        0x900_0000..=0x900_0000,
        0x900_0002..=0x900_0006,
        0xb00_0004..=0xb00_003d,
        0x100_0000..=0x100_0000,
        0x200_0000..=0x200_0000,
        0x200_0002..=0x200_0006,
        0x500_0000..=0x500_0000,
    ];
    ops.extend(undefined.into_iter().flatten().map(CfaOp::Undefined));
    // R1 keeps its value; R2…R254 are undefined.
    ops.push(CfaOp::SameValue(DWARF_R1));
    ops.extend((0x500_0002..=0x500_00fe).map(CfaOp::Undefined));
    Cie {
        code_align: 4,
        data_align: -4,
        return_register: DWARF_NO_RA,
        ops,
    }
}

/// Line numbers of byte offsets in the source.
struct Lines {
    starts: Vec<u32>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i as u32 + 1),
        );
        Lines { starts }
    }

    /// 1-based line of a byte offset.
    fn line(&self, at: u32) -> u32 {
        self.starts.partition_point(|&s| s <= at) as u32
    }
}

/// `.nv_debug_ptx_txt`: every source line without its leading white space (inner tabs and
/// trailing blanks kept), NUL terminated; comment lines, `.loc` and `.file` lines and the data lines of
/// `.section` blocks but `.b16` ones are empty, a comment after code stays (`debug_line_info.ptx`: 8 comment
/// lines give 8 NULs before `.version 9.1`, the 98 data lines of its `.debug_loc` 98 NULs
/// between `{` and `}`; `samples/vector_add.ptx` with `-g`: `.param .u32 vector_add_param_3
/// // int n`). Measured byte-identical on every project kernel and sample, and the first 60
/// ZLUDA files, with `-g`.
pub fn ptx_text(source: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(source.len());
    let mut in_section = false;
    // Blank lines at the end are left out (`tests/kernels/vector_add.ptx` ends in `}\n\n`:
    // the section ends with `}\0`).
    let lines: Vec<&str> = source.lines().collect();
    let n = lines.len()
        - lines
            .iter()
            .rev()
            .take_while(|l| l.trim().is_empty())
            .count();
    // A directive by its whole first word: `.local` is not `.loc`.
    let directive = |t: &str, d: &str| {
        t.strip_prefix(d)
            .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
    };
    for raw in &lines[..n] {
        let t = raw.trim();
        // ptxas keeps a line's trailing blanks (`tests/kernels/device_calls.ptx`:
        // `call.uni (retval0), ` keeps its space).
        let line = raw.trim_start().trim_end_matches(['\r', '\n']);
        let kept = if t.starts_with("//") || directive(t, ".loc") || directive(t, ".file") {
            ""
        } else if t.starts_with(".section") {
            in_section = true;
            t
        } else if in_section {
            if t.starts_with('}') {
                in_section = false;
                t
            } else if t.starts_with('{') {
                t
            } else if directive(t, ".b16") {
                // ptxas keeps the `.b16` data lines, and only those (zluda
                // `_Z9vectorAddPKfS0_Pfi.ptx`: `.b16 421` … in `.debug_info`; its `.b8`,
                // `.b32` and `.b64` lines are empty).
                line
            } else {
                ""
            }
        } else {
            line
        };
        out.extend_from_slice(kept.as_bytes());
        out.push(0);
    }
    out
}

/// A row of a line program: an address and a (file, line).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Row {
    addr: u64,
    file: u32,
    line: u32,
}

/// One line-program sequence as ptxas writes it: `DW_LNE_set_address` (relocated to the
/// function), `DW_LNS_set_file`, then per row `DW_LNS_set_file` when the file changes, and a
/// special opcode where the address advance is non-zero and one fits, else
/// `DW_LNS_advance_line` (when the line changes), `DW_LNS_advance_pc` (when the address does)
/// and `DW_LNS_copy`; the sequence ends with `DW_LNS_advance_pc` to the end of the padded
/// `.text` and `DW_LNE_end_sequence` (every row of `debug_line_info.ptx`, `debug_loc.ptx` and
/// `vectorAdd_kernel64.ptx`: the special opcodes are 0xf0–0xf4, one instruction on).
fn sequence(out: &mut Vec<u8>, relocs: &mut Vec<Reloc>, func: &str, rows: &[Row], end: u64) {
    const LINE_BASE: i64 = -5;
    const LINE_RANGE: i64 = 14;
    const OPCODE_BASE: i64 = 10;
    out.extend_from_slice(&[0, 9, 2]);
    relocs.push(Reloc {
        offset: out.len() as u64,
        ty: R_CUDA_64,
        symbol: func.to_string(),
        addend: 0,
    });
    out.extend_from_slice(&0u64.to_le_bytes());
    let first_file = rows.first().map_or(1, |r| r.file);
    out.push(4);
    uleb(out, u64::from(first_file));
    let (mut addr, mut file, mut line) = (0u64, first_file, 1i64);
    for r in rows {
        if r.file != file {
            out.push(4);
            uleb(out, u64::from(r.file));
            file = r.file;
        }
        let dl = i64::from(r.line) - line;
        let da = (r.addr - addr) as i64;
        let special = (dl - LINE_BASE) + LINE_RANGE * da + OPCODE_BASE;
        if da > 0 && (LINE_BASE..LINE_BASE + LINE_RANGE).contains(&dl) && special <= 255 {
            out.push(special as u8);
        } else {
            if dl != 0 {
                out.push(3);
                sleb(out, dl);
            }
            if da != 0 {
                out.push(2);
                uleb(out, da as u64);
            }
            out.push(1);
        }
        addr = r.addr;
        line = i64::from(r.line);
    }
    if end > addr {
        out.push(2);
        uleb(out, end - addr);
    }
    out.extend_from_slice(&[0, 1, 1]);
}

/// A DWARF 2 line-number program: the header (minimum instruction length 1, `is_stmt`, line
/// base −5, line range 14, opcode base 10, ptxas's values), then the sequences.
fn line_program(dirs: &[String], files: &[(String, u64, u64, u64)], body: &[u8]) -> Vec<u8> {
    let mut head = vec![1, 1, 0xfb, 14, 10, 0, 1, 1, 1, 1, 0, 0, 0, 1];
    for d in dirs {
        head.extend_from_slice(d.as_bytes());
        head.push(0);
    }
    head.push(0);
    for (name, dir, mtime, size) in files {
        head.extend_from_slice(name.as_bytes());
        head.push(0);
        uleb(&mut head, *dir);
        uleb(&mut head, *mtime);
        uleb(&mut head, *size);
    }
    head.push(0);
    let mut out = Vec::with_capacity(10 + head.len() + body.len());
    out.extend_from_slice(&((2 + 4 + head.len() + body.len()) as u32).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&(head.len() as u32).to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(body);
    out
}

/// Rows for one function: where the value `key` gives for an instruction changes. An
/// instruction without a source position (added by a pass) belongs to the instruction before
/// it; those before the first positioned one get `lead`.
fn rows_of(
    enc: &EncodedFunction,
    lead: Option<(u32, u32)>,
    key: impl Fn(u32) -> Option<(u32, u32)>,
) -> Vec<Row> {
    let n = enc.code_len.min(enc.srcs.len());
    let mut rows: Vec<Row> = Vec::new();
    let mut cur = lead;
    for (i, src) in enc.srcs[..n].iter().enumerate() {
        if let Some(k) = src.and_then(&key) {
            cur = Some(k);
        }
        let Some((file, line)) = cur else { continue };
        if rows.last().is_none_or(|r| (r.file, r.line) != (file, line)) {
            rows.push(Row {
                addr: i as u64 * 16,
                file,
                line,
            });
        }
    }
    rows
}

/// The `.loc` directives of the module, by position.
fn locs(m: &ast::Module) -> Vec<(u32, u32, u32)> {
    fn walk(stmts: &[Stmt], out: &mut Vec<(u32, u32, u32)>) {
        for s in stmts {
            match s {
                Stmt::Loc(d) => {
                    let file = d.args.first().and_then(eval_const);
                    let line = d.args.get(1).and_then(eval_const);
                    if let (Some(f), Some(l)) = (file, line) {
                        out.push((d.span.start, f as u32, l as u32));
                    }
                }
                Stmt::Block(b) => walk(&b.stmts, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for item in &m.items {
        if let Item::Function(f) = item
            && let Some(b) = &f.body
        {
            walk(&b.stmts, &mut out);
        }
    }
    out.sort_unstable();
    out
}

/// The labels of a function body, with their positions.
fn labels(stmts: &[Stmt], out: &mut Vec<(String, u32)>) {
    for s in stmts {
        match s {
            Stmt::Label(n) => out.push((n.text.to_string(), n.span.start)),
            Stmt::Block(b) => labels(&b.stmts, out),
            _ => {}
        }
    }
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

/// Builds the debug sections.
pub fn sections(
    module: &ast::Module,
    source: &str,
    funcs: &[DebugFunction<'_>],
) -> Result<Vec<DebugSection>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let lines = Lines::new(source);
    let locs = locs(module);
    // `.file` directives: the file table in index order; a path is split at its last `/` into
    // a directory (numbered in order of first use) and a name; the time stamp and size are the
    // directive's, else the file's (`stat`), else 0 (`debug_loc.ptx`: `/nonexistent/dir/probe.cu`
    // → dir 1, 0, 0; `probe_inc.h`, 1700000000, 42 → dir 0; `debug_line_info.ptx`: the .cu's
    // mtime and size).
    let mut file_items: Vec<(i128, &ast::FileDirective)> = module
        .items
        .iter()
        .filter_map(|i| match i {
            Item::File(f) => eval_const(&f.index).map(|k| (k, &**f)),
            _ => None,
        })
        .collect();
    file_items.sort_by_key(|(k, _)| *k);
    let mut dirs: Vec<String> = Vec::new();
    let mut files = Vec::new();
    let mut file_pos = std::collections::HashMap::new();
    for (k, f) in &file_items {
        let path = unquote(&f.path.text);
        let (dir, name) = match path.rfind('/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => ("", path),
        };
        let dir_index = if dir.is_empty() {
            0
        } else if let Some(i) = dirs.iter().position(|d| d == dir) {
            i as u64 + 1
        } else {
            dirs.push(dir.to_string());
            dirs.len() as u64
        };
        let (mtime, size) = match (
            f.rest.first().and_then(eval_const),
            f.rest.get(1).and_then(eval_const),
        ) {
            (Some(t), Some(s)) => (t as u64, s as u64),
            _ => std::fs::metadata(path)
                .ok()
                .map(|m| {
                    let t = m
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_secs());
                    (t, m.len())
                })
                .unwrap_or((0, 0)),
        };
        files.push((name.to_string(), dir_index, mtime, size));
        file_pos.insert(*k, files.len() as u32);
    }
    let loc_of = |src: u32| -> Option<(u32, u32)> {
        let i = locs.partition_point(|l| l.0 < src);
        let (_, f, l) = *locs.get(i.checked_sub(1)?)?;
        Some((*file_pos.get(&i128::from(f))?, l))
    };

    let mut line_body = Vec::new();
    let mut line_relocs = Vec::new();
    let mut sass_body = Vec::new();
    let mut sass_relocs = Vec::new();
    for f in funcs {
        let name = &f.ast.name.text;
        // `.debug_line`: the `.loc` in force at each instruction; the code before the first
        // instruction with one (the prologue) belongs to the first row.
        let first = f.encoded.srcs.iter().flatten().find_map(|s| loc_of(*s));
        // Without `.loc` there is no sequence (`ptxas -g samples/vector_add.ptx`: the header
        // alone, and no `.rel(a).debug_line` names).
        let rows = rows_of(f.encoded, first, loc_of);
        if !rows.is_empty() {
            let mut b = Vec::new();
            let mut r = Vec::new();
            sequence(&mut b, &mut r, name, &rows, f.text_size);
            for mut x in r {
                x.offset += line_body.len() as u64;
                line_relocs.push(x);
            }
            line_body.extend_from_slice(&b);
        }
        // `.nv_debug_line_sass`: the PTX line of each instruction, file 0; the prologue belongs
        // to the line of the body's `{` (`debug_loc.ptx`: line 11 at 0, line 16 at 0x20).
        let brace = source
            .get(f.ast.span.start as usize..)
            .and_then(|s| s.find('{'))
            .map(|i| lines.line(f.ast.span.start + i as u32));
        let rows = rows_of(f.encoded, brace.map(|l| (0, l)), |s| {
            Some((0, lines.line(s)))
        });
        let mut b = Vec::new();
        let mut r = Vec::new();
        sequence(&mut b, &mut r, name, &rows, f.text_size);
        for mut x in r {
            x.offset += sass_body.len() as u64;
            sass_relocs.push(x);
        }
        sass_body.extend_from_slice(&b);
    }
    let line_rel_names = if line_relocs.is_empty() {
        RelNames::None
    } else {
        RelNames::RelAndRela
    };
    let mut sections = vec![
        DebugSection {
            name: ".debug_line".into(),
            data: DataBlock {
                data: line_program(&dirs, &files, &line_body),
                align: 1,
                relocs: shift(line_relocs, 10 + header_len(&dirs, &files)),
            },
            rel_names: line_rel_names,
        },
        DebugSection {
            name: ".nv_debug_line_sass".into(),
            data: DataBlock {
                data: line_program(&[], &[], &sass_body),
                align: 1,
                relocs: shift(sass_relocs, 10 + header_len(&[], &[])),
            },
            rel_names: RelNames::RelAndRela,
        },
        DebugSection {
            name: ".nv_debug_ptx_txt".into(),
            data: DataBlock {
                data: ptx_text(source),
                align: 1,
                relocs: Vec::new(),
            },
            rel_names: RelNames::None,
        },
    ];

    // The PTX's `.section` blocks: `.debug_abbrev` first, then PTX order; empty blocks are
    // dropped (`vectorAdd_kernel64.ptx`: info, abbrev, ranges {}, pubnames → abbrev, info,
    // pubnames). A `.debug_info` without `.debug_abbrev` is dropped, as ptxas does ("skipping
    // .debug_info section due to missing .debug_abbrev section").
    let blocks: Vec<(&ast::Name, &[SectionItem], Span)> = module
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Section { name, items, span } => Some((name, items.as_slice(), *span)),
            _ => None,
        })
        .collect();
    let has_abbrev = blocks.iter().any(|b| b.0.text == ".debug_abbrev");
    let mut ordered: Vec<_> = blocks
        .iter()
        .filter(|b| b.0.text == ".debug_abbrev")
        .chain(blocks.iter().filter(|b| b.0.text != ".debug_abbrev"))
        .collect();
    if !has_abbrev {
        ordered.retain(|b| b.0.text != ".debug_info");
    }
    // Labels of the kernels: name → (function, address).
    let mut label_addr = std::collections::HashMap::new();
    let mut params = std::collections::HashMap::new();
    for f in funcs {
        let mut ls = Vec::new();
        if let Some(b) = &f.ast.body {
            labels(&b.stmts, &mut ls);
        }
        let n = f.encoded.code_len.min(f.encoded.srcs.len());
        for (l, at) in ls {
            // The first instruction (in address order) of a PTX instruction after the label;
            // after the last one, the end of the padded `.text` (`$L__func_end0` → 0x500 in
            // `debug_line_info.ptx`).
            let addr = f.encoded.srcs[..n]
                .iter()
                .position(|s| s.is_some_and(|s| s >= at))
                .map_or(f.text_size, |i| i as u64 * 16);
            label_addr.insert(l, (f.ast.name.text.to_string(), addr));
        }
        for (p, off) in f.ast.params.iter().flatten().zip(&f.param_offsets) {
            params.insert(p.decl.name.text.to_string(), *off);
        }
    }
    // The `.local` variables of the compiled functions: name → offset from the CFA (`None`
    // for a kernel's: its frame is not described yet).
    let mut frame_vars = std::collections::HashMap::new();
    for f in funcs {
        let Some(b) = &f.ast.body else {
            continue;
        };
        let mut off = 0u32;
        for st in &b.stmts {
            if let Stmt::Var(v) = st
                && v.space == ast::Space::Local
            {
                for d in &v.decls {
                    let (size, align) = crate::lower::object_layout(&v.attrs, d);
                    let at = off.next_multiple_of(align.max(1));
                    off = at + size;
                    let from_cfa = f.device_frame.map(|frame| i64::from(at) - i64::from(frame));
                    frame_vars.insert(d.name.text.to_string(), from_cfa);
                }
            }
        }
    }
    // Labels and `.local` variables (the `__local_depotN` of a `-g` module) of the functions
    // that are not kernels (inlined into them): why a debug section cannot name them.
    let mut other_labels = std::collections::HashMap::new();
    for item in &module.items {
        if let Item::Function(f) = item
            && let Some(b) = &f.body
            && !funcs
                .iter()
                .any(|k| k.ast.name.text == f.name.text && k.ast.kind == f.kind)
        {
            let f = &f.name.text;
            let mut ls = Vec::new();
            labels(&b.stmts, &mut ls);
            for (l, _) in ls {
                other_labels.insert(
                    l,
                    format!(
                        ": it is a label of `.func {f}`, which ptxc inlines or drops (ptxas \
                         compiles it as a function of its own)"
                    ),
                );
            }
            for st in &b.stmts {
                if let Stmt::Var(v) = st
                    && v.space == ast::Space::Local
                {
                    for d in &v.decls {
                        other_labels.insert(
                            d.name.text.to_string(),
                            format!(
                                ": it is a `.local` variable of `.func {f}`, which ptxc inlines \
                                 or drops (ptxas compiles it as a function of its own, with \
                                 the variable in its stack frame)"
                            ),
                        );
                    }
                }
            }
        }
    }
    for (name, items, span) in ordered {
        let mut data = Vec::new();
        let mut relocs = Vec::new();
        // Where the last item was `.b8 3` (`DW_OP_addr`), the start of its byte.
        let mut op_addr: Option<usize> = None;
        for item in items.iter() {
            let SectionItem::Data { ty, values } = item else {
                diags.push(err(
                    *span,
                    format!(
                        "ptxc cannot write a label inside the debug section `{}` yet",
                        name.text
                    ),
                ));
                continue;
            };
            let width = match ty.text.as_str() {
                ".b8" | ".u8" | ".s8" => 1,
                ".b16" | ".u16" | ".s16" => 2,
                ".b32" | ".u32" | ".s32" => 4,
                ".b64" | ".u64" | ".s64" => 8,
                t => {
                    diags.push(err(
                        ty.span,
                        format!("ptxc cannot write `{t}` data in a debug section"),
                    ));
                    continue;
                }
            };
            for v in values {
                let last_op_addr = op_addr.take();
                let value: Option<u64> = match v {
                    // Offsets into other debug sections stay unrelocated in an executable
                    // cubin (`.b32 .debug_abbrev` is 0, `.debug_loc+133` is 133).
                    SectionValue::SectionRef(_, k) => {
                        Some(k.as_ref().and_then(eval_const).unwrap_or(0) as u64)
                    }
                    SectionValue::Expr(e) => {
                        if let Some(c) = eval_const(e) {
                            Some(c as u64)
                        } else {
                            let (n, k) = match e {
                                Expr::Binary { op, lhs, rhs, .. } => {
                                    let k = eval_const(rhs).unwrap_or(0);
                                    let k = if *op == BinOp::Sub { -k } else { k };
                                    (lhs.as_name(), k)
                                }
                                e => (e.as_name(), 0),
                            };
                            let n = n.map(|n| n.text.as_str()).unwrap_or("");
                            if let Some((func, addr)) = label_addr.get(n) {
                                if width != 8 {
                                    diags.push(err(
                                        e.span(),
                                        format!("ptxc cannot write the address of `{n}` in {width} bytes"),
                                    ));
                                    continue;
                                }
                                let addend = (*addr as i128 + k) as i64;
                                relocs.push(Reloc {
                                    offset: data.len() as u64,
                                    ty: R_CUDA_64,
                                    symbol: func.clone(),
                                    addend,
                                });
                                Some(addend as u64)
                            } else if let Some(off) = params.get(n) {
                                // A kernel parameter: its constant-bank offset, unrelocated
                                // (`.b64 debug_kernel_param_0` → 0x210).
                                Some((i128::from(*off) + k) as u64)
                            } else if let Some(at) = frame_vars.get(n) {
                                // A `.local` variable of a `.func` of its own. After
                                // `DW_OP_addr` (`.b8 3`) ptxas rewrites the operation to
                                // `DW_OP_fbreg` (0x91) with the variable's offset from the
                                // CFA, padded with `DW_OP_nop` (0x96) to the nine bytes
                                // (zluda `_Z9vectorAddPKfS0_Pfi.ptx`: `__local_depot0` of
                                // `cudaMalloc`, an 8-byte frame: `91 78 96 96 96 96 96 96 96`);
                                // a bare `.b64` is 0, a kernel's too (`.b64 __local_depotN`
                                // in a probe's `.debug_info`, `docs/cubin.md`).
                                match (last_op_addr, width, at) {
                                    (Some(_), _, None) => {
                                        diags.push(err(
                                            e.span(),
                                            format!("ptxc cannot write the location of `{n}` yet: it is a `.local` variable of a kernel, whose frame ptxc does not describe"),
                                        ));
                                        continue;
                                    }
                                    (Some(op), 8, Some(at)) => {
                                        let mut loc = Vec::new();
                                        sleb(&mut loc, *at + k as i64);
                                        if loc.len() > 8 {
                                            diags.push(err(
                                                e.span(),
                                                format!("the frame offset of `{n}` does not fit the nine bytes of its `DW_OP_addr`"),
                                            ));
                                            continue;
                                        }
                                        loc.resize(8, 0x96);
                                        data[op] = 0x91;
                                        data.extend_from_slice(&loc);
                                        continue;
                                    }
                                    _ => Some(0),
                                }
                            } else {
                                let why = other_labels.get(n).map_or("", String::as_str);
                                diags.push(err(
                                    e.span(),
                                    format!(
                                        "ptxc cannot write a debug section that refers to `{n}` yet{why}"
                                    ),
                                ));
                                None
                            }
                        }
                    }
                };
                if let Some(v) = value {
                    if width == 1 && v == 3 {
                        op_addr = Some(data.len());
                    }
                    data.extend_from_slice(&v.to_le_bytes()[..width]);
                }
            }
        }
        if data.is_empty() {
            continue;
        }
        // The relocation-section names ptxas creates: `.rel` and `.rela` for `.debug_loc`,
        // `.rela` for `.debug_info` and `.debug_pubnames` (also without relocations), none for
        // the others (`debug_line_info.ptx`, `vectorAdd_kernel64.ptx`).
        let rel_names = match name.text.as_str() {
            ".debug_loc" => RelNames::RelAndRela,
            ".debug_info" | ".debug_pubnames" => RelNames::RelaOnly,
            _ if !relocs.is_empty() => RelNames::RelaOnly,
            _ => RelNames::None,
        };
        sections.push(DebugSection {
            name: name.text.to_string(),
            data: DataBlock {
                data,
                align: 1,
                relocs,
            },
            rel_names,
        });
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    Ok(sections)
}

fn header_len(dirs: &[String], files: &[(String, u64, u64, u64)]) -> usize {
    line_program(dirs, files, &[]).len() - 10
}

fn shift(mut relocs: Vec<Reloc>, by: usize) -> Vec<Reloc> {
    for r in &mut relocs {
        r.offset += by as u64;
    }
    relocs
}
