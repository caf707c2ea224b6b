//! The cubin of a compiled module: ptxc's kernels, their parameters, shared memory, directives
//! and the code-derived EIATTR records, as the typed [`Cubin`] model the writer turns into
//! ptxas's ELF layout.
//!
//! Each rule was read off ptxas 13.1's cubins for the same PTX (the corpora, the project's
//! kernels and the probes in `../shared/notes/probes`); `docs/cubin.md` ("What ptxc derives")
//! lists them with their evidence. Records whose values depend on the code are derived from
//! **ptxc's** code, not copied from ptxas: ptxc's instructions sit at other offsets.
//!
//! Debug builds (`-g`, `.target …, debug`) get the debug sections of [`super::debug`], and
//! every `.func` with a body a section of its own ([`device_function`]).
//!
//! What ptxc cannot describe yet is an error naming the feature, never a cubin that is wrong:
//! debug sections that give the location of a kernel's `.local` variable, mbarrier instructions
//! (`EIATTR_MBARRIER_INSTR_OFFSETS`), texture references, module variables initialized with addresses, a
//! parameter whose offset in ptxc's code is not where the driver puts it, and an
//! `.extern .shared` array that ptxc placed inside the kernel's static shared memory.

use super::model::*;
use super::sass::EncodedFunction;
use crate::diag::Diagnostic;
use crate::driver::Checked;
use crate::frontend::ast::{self, FunctionKind as AstKind, Item, Space, Span, Stmt};
use crate::frontend::check::eval_const;
use crate::lower::{Lowered, OpaqueKind, object_layout};
use crate::mir::{self, RegClass};
use crate::target::sm90a::{self as sass, OperandKind};
use runtime_abi::eiattr::{Annotation, CUDA_API_VERSION_13_1, MbarrierInstr};
use runtime_abi::param::{ParamSpec, Pointee, PtrSpace};

/// What `ptxas -v` reports about one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    pub registers: u32,
    /// Named barriers (`EIATTR_NUM_BARRIERS`, 0 without the record).
    pub barriers: u32,
    /// Stack frame bytes (`.local` data and spill slots).
    pub frame: u32,
    /// `-v`'s cumulative stack size: the frame, and in a debug build the deepest chain of
    /// frames of the `.func`s it calls ([`debug_call_stacks`]).
    pub stack: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    /// Static shared bytes beyond the reserved 1 KiB.
    pub shared: u64,
    /// The module's subroutines linked into the kernel (`lower/link.rs`), in layout order,
    /// each as `-v` reports it ([`verbose_report`]); ptxas's slow paths are left out, as
    /// ptxas's report leaves them.
    pub subroutines: Vec<SubroutineInfo>,
}

/// What `ptxas -v` reports about a `.func` a kernel calls: `Function properties for NAME`,
/// then its own frame and, as spill stores and loads, the bytes of the registers it saves and
/// restores (`tests/sass-probes/ptx/funcs.ptx`: `fact`, `16 bytes stack frame, 16 bytes spill
/// stores, 16 bytes spill loads` for its four `STL`s and `LDL`s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubroutineInfo {
    pub name: String,
    pub frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

/// The [`SubroutineInfo`] of each subroutine `lower::link` appended to `mf`: its blocks run
/// from its entry to the next subroutine's (or the end); its saves and restores are the
/// `STL`s and `LDL`s marked [`mir::Inst::frame_save`], four bytes each.
fn subroutine_infos(mf: &mir::Function) -> Vec<SubroutineInfo> {
    let mut entries: Vec<(u32, &str, u32)> = mf
        .subroutines
        .iter()
        .map(|(b, n, frame)| (b.0, n.as_str(), *frame))
        .collect();
    entries.sort_unstable_by_key(|e| e.0);
    let mut out = Vec::new();
    for (k, &(start, name, frame)) in entries.iter().enumerate() {
        let end = entries.get(k + 1).map_or(mf.blocks.len() as u32, |e| e.0);
        if crate::lower::slow_path::kind(name).is_some() {
            continue;
        }
        let count = |m: &str| {
            (start..end)
                .filter_map(|b| mf.blocks.get(b as usize))
                .flat_map(|b| &b.insts)
                .filter(|i| i.frame_save && i.mnemonic == m)
                .count() as u32
        };
        out.push(SubroutineInfo {
            name: name.to_string(),
            frame,
            spill_stores: 4 * count("STL"),
            spill_loads: 4 * count("LDL"),
        });
    }
    out
}

/// A compiled module as a cubin model, with what `-v` prints.
#[derive(Clone, Debug)]
pub struct Built {
    pub cubin: Cubin,
    /// Kernels in PTX order.
    pub kernels: Vec<KernelInfo>,
    /// Bytes of `.global` variables (`ptxc info    : N bytes gmem`).
    pub gmem: u64,
}

/// Options of the build that change the cubin.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// `-g`: debug code and the debug sections ([`super::debug`]); a `.target …, debug`
    /// module gets them without it.
    pub device_debug: bool,
    /// The command line recorded in `.note.nv.tkinfo`.
    pub tool_options: String,
}

fn err(span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(span, msg.into())
}

/// Builds the cubin model of a compiled module.
pub fn build(
    checked: &Checked,
    lowered: &Lowered,
    encoded: &[EncodedFunction],
    opts: &BuildOptions,
) -> Result<Built, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut cubin = Cubin::new();
    if !opts.tool_options.is_empty() {
        cubin.tool = ToolInfo::ptxc(&opts.tool_options);
    }
    let debug = opts.device_debug || checked.info.debug;
    for item in &checked.module.items {
        if let Item::Target { targets, .. } = item
            && let Some(t) = targets.iter().find(|t| t.text == "texmode_independent")
        {
            // ptxas marks such a module (EIATTR_TEXMODE_INDEPENDENT) and initialises its
            // samplers (EIATTR_SAMPLER_INIT); ptxc writes neither yet.
            diags.push(err(
                t.span,
                "ptxc cannot write the cubin of a `texmode_independent` module yet \
                 (EIATTR_TEXMODE_INDEPENDENT and EIATTR_SAMPLER_INIT records)",
            ));
        }
    }
    let (variables, gmem) = module_variables(&checked.module, &mut diags);
    cubin.variables = variables;
    cubin.externs = module_externs(&checked.module);
    let mut kernels = Vec::new();
    for (i, mf) in lowered.module.functions.iter().enumerate() {
        // Kernels, and in a debug build the `.func`s of their own (`lower::link`).
        let kind = if mf.is_entry {
            AstKind::Entry
        } else {
            AstKind::Func
        };
        let Some(af) = checked.module.items.iter().find_map(|it| match it {
            Item::Function(f) if f.name.text == mf.name && f.kind == kind && f.body.is_some() => {
                Some(f)
            }
            _ => None,
        }) else {
            diags.push(err(
                Span::default(),
                format!(
                    "internal error: no PTX entry for compiled function `{}`",
                    mf.name
                ),
            ));
            continue;
        };
        let Some(enc) = encoded.iter().find(|e| e.name == mf.name) else {
            diags.push(err(
                af.span,
                format!("internal error: `{}` was not encoded", mf.name),
            ));
            continue;
        };
        let frame = lowered.frames.get(i).cloned().unwrap_or_default();
        let built = if mf.is_entry {
            kernel(&checked.module, af, mf, enc, &frame, debug).map(|(f, info)| (f, Some(info)))
        } else {
            device_function(&checked.module, af, mf, enc, &frame, debug).map(|f| (f, None))
        };
        match built {
            Ok((f, info)) => {
                for name in &f.attrs.externs {
                    if !cubin.externs.iter().any(|e| e.name == *name) {
                        cubin.externs.push(Extern {
                            name: name.clone(),
                            kind: ExternKind::Function,
                        });
                    }
                }
                cubin.functions.push(f);
                kernels.extend(info);
            }
            Err(mut d) => diags.append(&mut d),
        }
    }
    // PTX definition order: `lower::link` appends the `.func`s of their own after the kernels.
    let rank = |name: &str| {
        checked.module.items.iter().position(
            |it| matches!(it, Item::Function(f) if f.name.text == name && f.body.is_some()),
        )
    };
    // ... with the local `.func`s last (`ptxas -g` on `tests/tests/cubin_ptx/debug_funcs.ptx`:
    // `called`, `uncalled` (local), `v1`, `w1`, `k`, `l2` (local), `v2`, `k2` give the sections
    // v1, w1, k, v2, k2, called, uncalled, l2; zluda `_Z9vectorAddPKfS0_Pfi.ptx`: the local
    // `fabsf` last).
    cubin.functions.sort_by_key(|f| {
        (
            f.kind == FunctionKind::Device && f.linkage == Linkage::Local,
            rank(&f.name),
        )
    });
    if debug {
        debug_call_stacks(lowered, &mut cubin, &mut kernels);
    }
    // ptxas's slow paths are `$__internal_<n>_$<name>`, n counting them over the module in
    // processing order (reverse PTX order, PTX order in a debug build; `lower/slow_path.rs`).
    let mut n = 0;
    let order: Vec<usize> = if debug {
        (0..cubin.functions.len()).collect()
    } else {
        (0..cubin.functions.len()).rev().collect()
    };
    for fi in order {
        for s in &mut cubin.functions[fi].subroutines {
            if crate::lower::slow_path::kind(&s.name).is_some() {
                s.name = crate::lower::slow_path::symbol_name(&s.name, n);
                n += 1;
            }
        }
    }
    if debug && diags.is_empty() {
        debug_build(checked, encoded, &mut cubin, &mut diags);
    }
    if !lowered.bank4.is_empty() {
        // ptxas: `.nv.constant4` holds one zeroed 8-byte slot per address the code loads,
        // relocated by `.rela.nv.constant4` (`R_CUDA_64 <variable>`).
        cubin.bank4 = Some(DataBlock {
            data: vec![0; 8 * lowered.bank4.len()],
            align: 8,
            relocs: lowered
                .bank4
                .iter()
                .enumerate()
                .map(|(i, name)| Reloc {
                    offset: 8 * i as u64,
                    ty: runtime_abi::reloc::R_CUDA_64,
                    symbol: name.clone(),
                    addend: 0,
                })
                .collect(),
        });
    }
    if diags.is_empty() {
        Ok(Built {
            cubin,
            kernels,
            gmem,
        })
    } else {
        Err(diags)
    }
}

/// The stacks of a debug build's kernels, whose calls to `.func`s go to other sections
/// (`CALL.ABS`, `lower/isel/call.rs`): `EIATTR_MIN_STACK_SIZE` is the kernel's frame plus the
/// deepest chain of its callees' frames, or 0xffffffff when a recursive `.func` is reachable
/// (ptxas -g: a kernel with no frame calling a `.func` with a 16-byte one gets 0x10 and `16
/// bytes cumulative stack size`; `tests/kernels/device_calls.ptx`, whose `_Z4polyfi` calls
/// itself, 0xffffffff, "Stack size for entry function 'device_calls' cannot be statically
/// determined", and its own 16 bytes as the cumulative size). `-v` reports every `.func` the
/// kernel reaches after it, in section order.
fn debug_call_stacks(lowered: &Lowered, cubin: &mut Cubin, kernels: &mut [KernelInfo]) {
    let index = |name: &str| cubin.functions.iter().position(|f| f.name == name);
    let callees: Vec<Vec<usize>> = cubin
        .functions
        .iter()
        .map(|f| f.callees.iter().filter_map(|c| index(c)).collect())
        .collect();
    // The deepest stack from function `i`, `None` when a cycle is reachable.
    fn deepest(
        i: usize,
        callees: &[Vec<usize>],
        frames: &[u32],
        on_path: &mut Vec<bool>,
    ) -> Option<u32> {
        if std::mem::replace(&mut on_path[i], true) {
            return None;
        }
        let mut below = 0;
        for &c in &callees[i] {
            below = below.max(deepest(c, callees, frames, on_path)?);
        }
        on_path[i] = false;
        Some(frames[i] + below)
    }
    let frames: Vec<u32> = cubin.functions.iter().map(|f| f.frame_size).collect();
    for ki in 0..cubin.functions.len() {
        if cubin.functions[ki].kind != FunctionKind::Kernel || callees[ki].is_empty() {
            continue;
        }
        let mut on_path = vec![false; frames.len()];
        let stack = deepest(ki, &callees, &frames, &mut on_path);
        cubin.functions[ki].min_stack_size = stack.unwrap_or(u32::MAX);
        let Some(info) = kernels
            .iter_mut()
            .find(|k| k.name == cubin.functions[ki].name)
        else {
            continue;
        };
        info.stack = stack.unwrap_or(info.frame);
        let mut reached = vec![false; frames.len()];
        let mut work = callees[ki].clone();
        while let Some(c) = work.pop() {
            if !std::mem::replace(&mut reached[c], true) {
                work.extend(&callees[c]);
            }
        }
        for (c, g) in cubin.functions.iter().enumerate() {
            if !reached[c] || c == ki || info.subroutines.iter().any(|s| s.name == g.name) {
                continue;
            }
            let Some(mf) = lowered.module.functions.iter().find(|m| m.name == g.name) else {
                continue;
            };
            let saves = |m: &str| {
                mf.blocks
                    .iter()
                    .flat_map(|b| &b.insts)
                    .filter(|i| i.frame_save && i.mnemonic == m)
                    .count() as u32
            };
            info.subroutines.push(SubroutineInfo {
                name: g.name.clone(),
                frame: g.frame_size,
                spill_stores: 4 * saves("STL"),
                spill_loads: 4 * saves("LDL"),
            });
        }
    }
}

/// Makes `cubin` a debug build (`-g`, or a `.target …, debug` module; ptxas's code is the same
/// for both): functions in PTX order, `EIATTR_GEN_ERRBAR_AT_EXIT`, the debug CIE and the
/// debug sections of [`super::debug`].
fn debug_build(
    checked: &Checked,
    encoded: &[EncodedFunction],
    cubin: &mut Cubin,
    diags: &mut Vec<Diagnostic>,
) {
    let mut funcs = Vec::new();
    for f in &cubin.functions {
        let kind = match f.kind {
            FunctionKind::Kernel => AstKind::Entry,
            FunctionKind::Device => AstKind::Func,
        };
        let Some(af) = checked.module.items.iter().find_map(|it| match it {
            Item::Function(a) if a.name.text == f.name && a.kind == kind && a.body.is_some() => {
                Some(a)
            }
            _ => None,
        }) else {
            continue;
        };
        let Some(enc) = encoded.iter().find(|e| e.name == f.name) else {
            continue;
        };
        let param_offsets = match runtime_abi::param::layout(&f.params) {
            Ok(l) => (0..f.params.len())
                .filter_map(|i| l.bank_offset(i))
                .collect(),
            Err(_) => Vec::new(),
        };
        funcs.push(super::debug::DebugFunction {
            ast: af,
            encoded: enc,
            // The encoded function has ptxas's padding, which the writer appends.
            text_size: enc.instrs.len() as u64 * 16,
            param_offsets,
            device_frame: (f.kind == FunctionKind::Device).then_some(f.frame_size),
        });
    }
    match super::debug::sections(&checked.module, &checked.source, &funcs) {
        Ok(sections) => {
            // ptxas's code is `-g` code in both cases.
            cubin.build = Build::DeviceDebug;
            cubin.debug_sections = sections;
        }
        Err(mut d) => diags.append(&mut d),
    }
    cubin.gen_errbar_at_exit = true;
    for f in &mut cubin.functions {
        f.unwind.cie = super::debug::debug_cie();
        if f.kind == FunctionKind::Device
            && let Some(enc) = encoded.iter().find(|e| e.name == f.name)
        {
            f.unwind = device_unwind(enc, f.frame_size);
        }
    }
}

/// The call frame of a `.func` of its own in a debug build. ptxas's CIE names R20 as the
/// return-address register (its `RET.ABS.NODEC R20`; ptxc's subroutines return through R20:R21
/// too), and its FDE moves the CFA to R1 + frame once the frame is open and back to R1 after
/// the last `IADD3 R1, R1, frame` (zluda `_Z9vectorAddPKfS0_Pfi.ptx`, `cudaMalloc`, an 8-byte
/// frame: `advance_loc4 0x10; def_cfa R1, 8; advance_loc4 0x230; def_cfa R1, 0`; functions
/// without a frame: `def_cfa R1, 0` and an advance to the last RET). ptxas also records where it saves registers
/// (`DW_CFA_offset_extended`); ptxc does not (see `docs/cubin.md`).
///
/// The CIE also keeps (`DW_CFA_same_value` where a kernel's has `DW_CFA_undefined`) the
/// registers ptxas's ABI preserves across a call: UR36–UR61, R16–R31, and from R32 on R4–R7 of
/// every eight (R36–R39, R44–R47, …, R252–R254); ptxas's also keeps R2, which ptxc's
/// subroutines do not preserve (`regalloc::call_clobbers`: R0–R15, R20, R21 and UR0–UR35 are
/// the caller's; a subroutine restores R20:R21 before its `RET`).
fn device_unwind(enc: &EncodedFunction, frame: u32) -> Unwind {
    let mut cie = super::debug::debug_cie();
    cie.return_register = DWARF_R1 - 1 + 20;
    let kept = |r: u64| {
        (0xb00_0024..=0xb00_003d).contains(&r)
            || (0x500_0010..=0x500_001f).contains(&r)
            || ((0x500_0020..=0x500_00fe).contains(&r) && (r - 0x500_0000) % 8 >= 4)
    };
    for op in &mut cie.ops {
        if let CfaOp::Undefined(r) = *op
            && kept(r)
        {
            *op = CfaOp::SameValue(r);
        }
    }
    let mut ops = Vec::new();
    // The function's own code: up to the first subroutine appended after it.
    let end = enc
        .subroutines
        .iter()
        .map(|s| s.1 as usize / 16)
        .min()
        .unwrap_or(enc.code_len)
        .min(enc.code_len)
        .min(enc.instrs.len());
    let moves_sp = |i: &sass::Instr, by: i64| {
        i.mnemonic == "IADD3"
            && matches!(
                i.operands.get(..3),
                Some([a, b, c]) if matches!(&a.kind, OperandKind::Reg(r) if r.file == sass::RegFile::Gpr && r.num == 1)
                    && matches!(&b.kind, OperandKind::Reg(r) if r.file == sass::RegFile::Gpr && r.num == 1)
                    && c.kind == OperandKind::Int(by)
            )
    };
    let code = &enc.instrs[..end];
    if frame > 0
        && let Some(open) = code.iter().position(|i| moves_sp(i, -i64::from(frame)))
    {
        let open_at = (open as u64 + 1) * 16;
        ops.push(CfaOp::AdvanceLoc4(open_at));
        ops.push(CfaOp::DefCfa {
            reg: DWARF_R1,
            offset: u64::from(frame),
        });
        if let Some(close) = code.iter().rposition(|i| moves_sp(i, i64::from(frame)))
            && (close as u64 + 1) * 16 > open_at
        {
            ops.push(CfaOp::AdvanceLoc4((close as u64 + 1) * 16 - open_at));
            ops.push(CfaOp::DefCfa {
                reg: DWARF_R1,
                offset: 0,
            });
        }
    } else if let Some(ret) = code.iter().rposition(|i| i.mnemonic == "RET")
        && ret > 0
    {
        // Without a frame: the CFA is R1 from the start to the last RET (ptxas -g: fabsf, RET
        // at 0x40, `def_cfa R1, 0; advance_loc4 0x40`; cudaGetDevice 0xa0, `called` in
        // `debug_funcs.ptx` 0x30; a `.func` that is only `ret` gets no rule, v1, w1).
        ops.push(CfaOp::DefCfa {
            reg: DWARF_R1,
            offset: 0,
        });
        ops.push(CfaOp::AdvanceLoc4(ret as u64 * 16));
    }
    Unwind { cie, ops }
}

/// The texture, surface and sampler references, in PTX order: undefined symbols
/// (`STT_CUDA_TEXTURE` …) that ptxas lists whether or not a kernel uses them.
fn module_externs(m: &ast::Module) -> Vec<Extern> {
    let mut out = Vec::new();
    for item in &m.items {
        let Item::Var(v) = item else { continue };
        let Some(kind) = OpaqueKind::of(&v.attrs) else {
            continue;
        };
        let kind = match kind {
            OpaqueKind::Texture => ExternKind::Texture,
            OpaqueKind::Surface => ExternKind::Surface,
            OpaqueKind::Sampler => ExternKind::Sampler,
        };
        out.extend(v.decls.iter().map(|d| Extern {
            name: d.name.text.to_string(),
            kind,
        }));
    }
    out
}

/// `.global` and `.const` variables, in PTX order, and the `.global` bytes.
fn module_variables(m: &ast::Module, diags: &mut Vec<Diagnostic>) -> (Vec<Variable>, u64) {
    // `.const` variables' addresses (their offsets in `.nv.constant3`), for initializers that
    // name them.
    let const_addrs: rustc_hash::FxHashMap<String, u32> = crate::lower::module_symbols(m)
        .into_iter()
        .filter_map(|(name, (sym, _))| match sym {
            crate::lower::Sym::Global {
                space: Space::Const,
                const_offset,
                ..
            } => Some((name, const_offset)),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    let mut gmem = 0u64;
    for item in &m.items {
        let Item::Var(v) = item else { continue };
        let space = match v.space {
            Space::Global => VarSpace::Global,
            Space::Const => VarSpace::Const,
            _ => continue,
        };
        if OpaqueKind::of(&v.attrs).is_some() {
            // Texture, surface and sampler references are undefined symbols the driver binds
            // (`module_externs`).
            continue;
        }
        // ptxas: "Unresolved extern variable … in whole program compilation, ignoring extern
        // qualifier": an `.extern` variable is defined here.
        let linkage = if v.linkage.iter().any(|(l, _)| *l == ast::Linkage::Weak) {
            Linkage::Weak
        } else if v.linkage.iter().any(|(l, _)| {
            matches!(
                l,
                ast::Linkage::Visible | ast::Linkage::Extern | ast::Linkage::Common
            )
        }) {
            Linkage::Global
        } else {
            Linkage::Local
        };
        for d in &v.decls {
            let (size, align) = object_layout(&v.attrs, d);
            let init = match &d.init {
                None => None,
                Some(i) => match init_bytes(&v.attrs, i, size as usize, &const_addrs) {
                    Some(b) => Some(b),
                    None => {
                        diags.push(err(
                            d.span,
                            format!(
                                "ptxc cannot write the initializer of `{}` yet (.nv.global.init / \
                                 .nv.constant3 data with addresses or this element type)",
                                d.name.text
                            ),
                        ));
                        continue;
                    }
                },
            };
            if space == VarSpace::Global {
                gmem += u64::from(size);
            }
            out.push(Variable {
                name: d.name.text.to_string(),
                space,
                linkage,
                size: u64::from(size),
                align: u64::from(align.max(1)),
                // `.const` data is always present (PROGBITS); an uninitialized `.global` is
                // NOBITS.
                init: init.or_else(|| (space == VarSpace::Const).then(|| vec![0u8; size as usize])),
                relocs: Vec::new(),
            });
        }
    }
    (out, gmem)
}

/// The bytes of a numeric initializer (`= {1}`, `= {0f3f800000}`, `= {10, 20, 30, 40}`):
/// the elements in order, little-endian, the rest of the object zero. `None` for what ptxc
/// cannot encode yet (addresses of symbols, which need `R_CUDA_G64` relocations).
fn init_bytes(
    attrs: &[ast::Attr],
    init: &ast::Init,
    size: usize,
    const_addrs: &rustc_hash::FxHashMap<String, u32>,
) -> Option<Vec<u8>> {
    let ty = attrs.iter().find_map(|a| {
        let t = a.word.text.as_str();
        let (kind, bits) = t.strip_prefix('.').map(|t| t.split_at(1))?;
        let bits: usize = bits.parse().ok()?;
        matches!(kind, "b" | "u" | "s" | "f")
            .then_some((kind == "f", bits))
            .filter(|(_, b)| matches!(b, 8 | 16 | 32 | 64))
    })?;
    let (float, bits) = ty;
    if float && bits < 32 {
        return None;
    }
    fn leaves<'a>(i: &'a ast::Init, out: &mut Vec<&'a ast::Expr>) {
        match i {
            ast::Init::Expr(e) => out.push(e),
            ast::Init::List(l, _) => l.iter().for_each(|i| leaves(i, out)),
        }
    }
    let mut exprs = Vec::new();
    leaves(init, &mut exprs);
    let mut out = Vec::with_capacity(size);
    for e in exprs {
        let word: u64 = match e {
            ast::Expr::Lit {
                kind: ast::LitKind::HexF32,
                text,
                ..
            } => {
                let b = u32::from_str_radix(text.get(2..)?, 16).ok()?;
                match bits {
                    32 if float => u64::from(b),
                    64 if float => f64::from(f32::from_bits(b)).to_bits(),
                    _ => return None,
                }
            }
            ast::Expr::Lit {
                kind: ast::LitKind::HexF64,
                text,
                ..
            } => {
                let b = u64::from_str_radix(text.get(2..)?, 16).ok()?;
                match bits {
                    64 if float => b,
                    32 if float => u64::from((f64::from_bits(b) as f32).to_bits()),
                    _ => return None,
                }
            }
            ast::Expr::Lit {
                kind: ast::LitKind::Float,
                ..
            } => return None,
            // The address of a `.const` variable is a plain number (its offset in the bank);
            // ptxas writes it without a relocation (const_ident: `{x, y}` → 0x0, 0x8).
            e if !float
                && let Some(&a) = e.as_name().and_then(|n| const_addrs.get(n.text.as_str())) =>
            {
                u64::from(a)
            }
            e => {
                let v = eval_const(e)?;
                match bits {
                    32 if float => u64::from((v as f32).to_bits()),
                    64 if float => (v as f64).to_bits(),
                    _ => v as u64,
                }
            }
        };
        out.extend_from_slice(&word.to_le_bytes()[..bits / 8]);
    }
    if out.len() > size {
        return None;
    }
    out.resize(size, 0);
    Some(out)
}

/// The parameters of an entry as the driver sees them, checked against the offsets ptxc's code
/// reads.
fn params(f: &ast::Function) -> Result<Vec<ParamSpec>, Vec<Diagnostic>> {
    let mut specs = Vec::new();
    let mut ptxc_offsets = Vec::new();
    let mut offset = 0u32;
    for p in f.params.iter().flatten() {
        let (size, align) = object_layout(&p.attrs, &p.decl);
        // lower::plan: each parameter at the next multiple of its alignment in the bank.
        let base = crate::lower::PARAM_BASE;
        offset = (base + offset).next_multiple_of(align.max(1)) - base;
        ptxc_offsets.push((offset, p.decl.span, p.decl.name.text.to_string()));
        offset += size;
        let has_align = p.attrs.iter().any(|a| a.word.text == ".align");
        let mut spec = if has_align || !p.decl.dims.is_empty() || !matches!(size, 1 | 2 | 4 | 8) {
            ParamSpec::bytes(size, align)
        } else {
            ParamSpec::scalar(size)
        };
        if p.attrs.iter().any(|a| a.word.text == ".ptr") {
            let space = p.attrs.iter().find_map(|a| match a.word.text.as_str() {
                ".global" => Some(PtrSpace::Global),
                ".shared" => Some(PtrSpace::Shared),
                ".const" => Some(PtrSpace::Const),
                ".local" => Some(PtrSpace::Local),
                _ => None,
            });
            let ptr_align = p
                .attrs
                .iter()
                .find(|a| a.word.text == ".align")
                .and_then(|a| a.value.as_ref())
                .and_then(eval_const)
                .map(|v| v as u32);
            spec = ParamSpec {
                pointee: Pointee::ptr(space.unwrap_or(PtrSpace::Generic), ptr_align),
                ..ParamSpec::scalar(size)
            };
        }
        specs.push(spec);
    }
    let layout = runtime_abi::param::layout(&specs).map_err(|e| {
        vec![err(
            f.name.span,
            format!("parameters of `{}`: {e}", f.name.text),
        )]
    })?;
    let mut diags = Vec::new();
    for (i, (off, span, name)) in ptxc_offsets.iter().enumerate() {
        let driver = layout
            .bank_offset(i)
            .map(|o| o - runtime_abi::cbank0::PARAM_BASE);
        if driver != Some(*off) {
            diags.push(err(
                *span,
                format!(
                    "ptxc's code reads parameter `{name}` at c[0x0][{:#x}] but the driver puts it \
                     at c[0x0][{:#x}]: ptxc cannot lay out this parameter yet",
                    off + runtime_abi::cbank0::PARAM_BASE,
                    driver.unwrap_or(0) + runtime_abi::cbank0::PARAM_BASE
                ),
            ));
        }
    }
    if diags.is_empty() {
        Ok(specs)
    } else {
        Err(diags)
    }
}

fn directive<'a>(f: &'a ast::Function, name: &str) -> Option<&'a ast::Directive> {
    f.directives.iter().find(|d| d.name.text == name)
}

/// `X[, Y[, Z]]` with missing dimensions 1; `None` when any is 0 (ptxas ignores such a
/// directive, ptxas-facts.md §e.19).
fn dims(d: &ast::Directive) -> Option<[u32; 3]> {
    let mut out = [1u32; 3];
    for (i, a) in d.args.iter().take(3).enumerate() {
        out[i] = eval_const(a)? as u32;
    }
    (!out.contains(&0)).then_some(out)
}

/// The shared variables a kernel can see, in the order `lower::plan` lays them out: module
/// scope first (declaration order), then the body's. `(name, size, align, extern, span)`.
fn shared_decls(m: &ast::Module, f: &ast::Function) -> Vec<(String, u32, u32, bool, Span)> {
    let mut out = Vec::new();
    for item in &m.items {
        if let Item::Var(v) = item
            && v.space == Space::Shared
        {
            let ext = v.linkage.iter().any(|(l, _)| *l == ast::Linkage::Extern);
            for d in &v.decls {
                let (size, align) = object_layout(&v.attrs, d);
                out.push((d.name.text.to_string(), size, align, ext, d.span));
            }
        }
    }
    fn walk(stmts: &[Stmt], out: &mut Vec<(String, u32, u32, bool, Span)>) {
        for s in stmts {
            match s {
                Stmt::Var(v) if v.space == Space::Shared => {
                    let ext = v.linkage.iter().any(|(l, _)| *l == ast::Linkage::Extern);
                    for d in &v.decls {
                        let (size, align) = object_layout(&v.attrs, d);
                        out.push((d.name.text.to_string(), size, align, ext, d.span));
                    }
                }
                Stmt::Block(b) => walk(&b.stmts, out),
                _ => {}
            }
        }
    }
    if let Some(b) = &f.body {
        walk(&b.stmts, &mut out);
    }
    out
}

/// Whether a name appears as an operand in the body of `f` or of a function it calls
/// (transitively; `.func` calls are inlined into the kernel).
fn mentions(m: &ast::Module, f: &ast::Function, name: &str) -> bool {
    fn expr(e: &ast::Expr, n: &str) -> bool {
        match e {
            ast::Expr::Name { name, .. } => name.text == n,
            ast::Expr::Lit { .. } => false,
            ast::Expr::Unary { arg, .. } => expr(arg, n),
            ast::Expr::Binary { lhs, rhs, .. } => expr(lhs, n) || expr(rhs, n),
            ast::Expr::Cond {
                cond, then, other, ..
            } => expr(cond, n) || expr(then, n) || expr(other, n),
            ast::Expr::Call { args, .. } => args.iter().any(|a| expr(a, n)),
        }
    }
    fn operand(o: &ast::Operand, n: &str) -> bool {
        match o {
            ast::Operand::Expr(e) => expr(e, n),
            ast::Operand::Not(e, _) => expr(e, n),
            ast::Operand::Address(v, _) | ast::Operand::Vector(v, _) | ast::Operand::List(v, _) => {
                v.iter().any(|o| operand(o, n))
            }
            ast::Operand::Pair(p, _) => p.0.as_ref().is_some_and(|e| expr(e, n)) || expr(&p.1, n),
            ast::Operand::Sink(_) => false,
        }
    }
    fn walk(stmts: &[Stmt], n: &str) -> bool {
        stmts.iter().any(|s| match s {
            Stmt::Instr(i) => i.operands.iter().any(|o| operand(o, n)),
            Stmt::Block(b) => walk(&b.stmts, n),
            _ => false,
        })
    }
    let body = |f: &ast::Function, n: &str| f.body.as_ref().is_some_and(|b| walk(&b.stmts, n));
    let mut seen = vec![f.name.text.to_string()];
    let mut todo = vec![f];
    while let Some(g) = todo.pop() {
        if body(g, name) {
            return true;
        }
        for item in &m.items {
            if let Item::Function(h) = item
                && h.kind == AstKind::Func
                && !seen.iter().any(|s| s.as_str() == h.name.text.as_str())
                && body(g, &h.name.text)
            {
                seen.push(h.name.text.to_string());
                todo.push(h);
            }
        }
    }
    false
}

/// The highest general register the allocation used (pairs and quads included).
fn highest_gpr(f: &mir::Function) -> Option<u32> {
    let mut hi: Option<u32> = None;
    for b in &f.blocks {
        for i in &b.insts {
            // The guard is among the registers (a predicate: never a GPR). Plain loops
            // (`for_each_reg`): the chained iterators of `Inst::regs` cost 1.75M of the 171.5M
            // instructions of compiling the straight-line 16k kernel.
            i.for_each_reg(|r| {
                if let mir::Reg::Phys { reg, count } = r.reg
                    && reg.class == RegClass::Gpr
                    && !reg.is_zero()
                {
                    let top = u32::from(reg.num) + u32::from(count.max(1)) - 1;
                    hi = Some(hi.map_or(top, |h| h.max(top)));
                }
            });
        }
    }
    hi
}

fn is_spill(i: &sass::Instr, local_bytes: u32) -> Option<u32> {
    if !matches!(i.mnemonic, "STL" | "LDL") {
        return None;
    }
    let bytes = if i.mods.contains(&"128") {
        16
    } else if i.mods.contains(&"64") {
        8
    } else {
        4
    };
    i.operands.iter().find_map(|o| match &o.kind {
        OperandKind::Mem(m) => {
            let on_sp = m
                .terms
                .iter()
                .any(|t| matches!(t, sass::MemTerm::Reg(r, _) if r.file == sass::RegFile::Gpr && r.num == 1));
            let off = m
                .terms
                .iter()
                .find_map(|t| match t {
                    sass::MemTerm::Imm(v) => Some(*v),
                    _ => None,
                })
                .unwrap_or(0);
            (on_sp && m.terms.len() <= 2 && off >= i64::from(local_bytes)).then_some(bytes)
        }
        _ => None,
    })
}

/// The `EIATTR_MBARRIER_INSTR_OFFSETS` (0x39) entry of the mbarrier instruction `i`, whose kind
/// instruction selection chose from the PTX operation; `None` for an address shape no probe has
/// shown. The rule, from ptxas 13.1 on every probe whose SASS has `SYNCS`/`ARRIVES`
/// (probes/00_abi/cluster_kernel, 09_mbarrier/*, 14_arch_compare/09_mbarrier__*,
/// 15_uniform_datapath/d_addr_of_mbarrier), on the 50 functions with the record among the cached
/// ptxas cubins of the corpora, kernels and probes, and on ptxas runs written for the purpose
/// (docs/cubin.md, "mbarrier records"):
///
/// * One entry per instruction that carries an mbarrier PTX operation, in code order (a loop
///   that ptxas peels gets one per copy: 09_mbarrier/try_wait_loop). Words:
///   `offset, gpr, imm, kind | stride << 8 | ureg << 16`: the instruction's byte offset; the
///   GPR of the address or 0xff for none (`[R2+UR4+0x10]` → 2); the immediate part of the
///   address (`[UR4+0x8]` → 8); the kind; stride 1 (`MBARRIER_STRIDE_X4`, the only value in
///   the probes and corpora); the uniform register of the address or 0x3f (URZ) for none
///   (09_mbarrier/try_wait_suspend: `[R0+URZ]` → gpr 0, ureg 0x3f); the top byte 0.
/// * The kind follows the PTX operation, not the SASS: `init` 0 (09_mbarrier/init*),
///   `arrive` 1 (arrive, arrive_count, arrive_remote*, arrive_generic*), `arrive.noComplete` 2,
///   `arrive_drop` 3 (arrive_drop), `arrive_drop.noComplete` 4, `test_wait` 5 (test_wait),
///   `test_wait.parity` 6 (test_wait_parity), `cp.async.mbarrier.arrive[.noinc]` 7 (on the NOP
///   before its `ARRIVES`: cp_async_mbarrier_arrive*), `inval` 8 (inval), `try_wait` 9
///   (try_wait, try_wait_loop), `try_wait.parity` 0xa (try_wait_*regaddr,
///   try_wait_parity_loop), `expect_tx` 0xb (expect_tx), `complete_tx` 0xc (complete_tx).
///   Kinds 2 and 4 were measured with ptxas (`mbarrier.arrive[_drop].noComplete`), which ptxc
///   does not lower.
/// * `arrive.expect_tx` and `arrive_drop.expect_tx` get no entry (09_mbarrier/arrive_expect_tx*,
///   the `SYNCS.ARRIVE.TRANS64` at 0x280 of 00_abi/cluster_kernel), nor do the `SYNCS` that
///   ptxas adds itself (the `@!P0 SYNCS.PHASECHK` of a suspend-hint loop: try_wait_suspend).
/// * `EIATTR_NUM_MBARRIERS` (0x38, HVAL) is the number of kind-0 (`init`) entries, 0 without
///   one (arrive: 0; init: 1; two inits of one barrier: 2; three of `[%r]`, `[%r+8]`,
///   `[%r+16]`: 3; all 50 corpus functions agree). Both records come after `INSTR_REG_MAP` and
///   before `EXIT_INSTR_OFFSETS` (runtime_abi::eiattr::FUNCTION_ORDER); a kernel whose only
///   mbarrier instructions have no entry gets neither record (arrive_expect_tx).
fn mbarrier_entry(i: &sass::Instr, kind: u8) -> Option<MbarrierInstr> {
    let mem = i.operands.iter().find_map(|o| match &o.kind {
        OperandKind::Mem(m) => Some(m),
        _ => None,
    })?;
    if mem.prefix != sass::MemPrefix::None {
        return None;
    }
    let (mut reg, mut ureg, mut imm) = (None, None, None);
    for t in &mem.terms {
        match t {
            sass::MemTerm::Reg(r, None) if r.file == sass::RegFile::Gpr && reg.is_none() => {
                reg = Some(u32::from(r.num));
            }
            sass::MemTerm::Reg(r, None) if r.file == sass::RegFile::Ugpr && ureg.is_none() => {
                ureg = Some(r.num);
            }
            sass::MemTerm::Imm(v) if imm.is_none() => imm = Some(u32::try_from(*v).ok()?),
            _ => return None,
        }
    }
    Some(MbarrierInstr {
        offset: i.addr as u32,
        reg: reg.unwrap_or(0xff),
        imm: imm.unwrap_or(0),
        kind,
        stride: 1,
        ureg: ureg.unwrap_or(0x3f),
        high: 0,
    })
}

fn kernel(
    m: &ast::Module,
    af: &ast::Function,
    mf: &mir::Function,
    enc: &EncodedFunction,
    frame: &crate::lower::FrameInfo,
    debug: bool,
) -> Result<(Function, KernelInfo), Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let code_instrs = &enc.instrs[..enc.code_len.min(enc.instrs.len())];
    let code = crate::emit::sass::words_bytes(&enc.words[..enc.code_len.min(enc.words.len())]);
    let mut f = Function::kernel(&af.name.text, code);
    f.linkage = if af.linkage.iter().any(|(l, _)| *l == ast::Linkage::Weak) {
        Linkage::Weak
    } else if af.linkage.iter().any(|(l, _)| *l == ast::Linkage::Visible) {
        Linkage::Global
    } else {
        Linkage::Local
    };
    match params(af) {
        Ok(p) => f.params = p,
        // A `.func`'s parameters are registers, not a constant-bank block.
        Err(_) if af.kind == AstKind::Func => {}
        Err(mut d) => diags.append(&mut d),
    }
    // Registers: ptxas reports the highest R used + 3 (R1 is the stack pointer).
    f.registers = highest_gpr(mf).unwrap_or(1).max(1) + 3;
    f.frame_size = mf.frame_bytes;
    f.min_stack_size = mf.frame_bytes;
    f.attrs.cuda_api_version = Some(CUDA_API_VERSION_13_1);
    f.attrs.exit_offsets = enc.exit_offsets.clone();
    // The VOTEU/REDUX/SHFL of warp-aggregated atomics (`lower/isel/atomics.rs`; probe
    // tests/sass-probes/warp_aggregation.ptx: `red_add_u32_tid` 0x30 0x60 = VOTEU.ANY,
    // REDUX.SUM; `atom_add_u32_uni` 0x20 0x120 = VOTEU.ANY, SHFL.IDX; `red_add_u32_uni` only the
    // VOTEU). They are not the user's warp-synchronous instructions (no COOP_GROUP records).
    f.attrs.warp_wide_offsets = enc.warp_wide_offsets.clone();
    if !frame.header_slots.is_empty() {
        // Texture references: one relocated header slot each after the parameters, and the
        // bindless bank records (bank 0) ptxas writes for a kernel that has them.
        f.bank0_slots = frame
            .header_slots
            .iter()
            .map(|t| {
                Some(HeaderSlot {
                    symbol: t.clone(),
                    reloc: runtime_abi::reloc::R_CUDA_TEX_HEADER_INDEX,
                })
            })
            .collect();
        f.attrs.bindless_texture_bank = Some(0);
        f.attrs.bindless_surface_bank = Some(0);
    }

    // Directives (ptxas-facts.md §a.3.1).
    if let Some(d) = directive(af, ".maxntid") {
        f.attrs.max_threads = dims(d);
    }
    if let Some(d) = directive(af, ".reqntid") {
        f.attrs.reqntid = dims(d);
    }
    if let Some(d) = directive(af, ".reqnctapercluster") {
        f.attrs.cta_per_cluster = dims(d);
    }
    if let Some(n) = directive(af, ".maxclusterrank")
        .and_then(|d| d.args.first())
        .and_then(eval_const)
        .filter(|&n| n > 0)
    {
        f.attrs.max_cluster_rank = Some(n as u32);
    }
    f.attrs.explicit_cluster = directive(af, ".explicitcluster").is_some();
    // `.maxnreg N` (1..=255; ptxas ignores larger values with a warning): MAXREG_COUNT N.
    if let Some(n) = directive(af, ".maxnreg")
        .and_then(|d| d.args.first())
        .and_then(eval_const)
        .filter(|n| (1..=255).contains(n))
    {
        f.attrs.maxreg_count = Some(n as u16);
        // Under `setmaxnreg` the count is the launch allocation, `.maxnreg`, however many
        // registers a region after an `inc` uses (pyptx `fa_ws_pingpong`: "Used 168
        // registers" with `.maxnreg 168`, R201 used after `setmaxnreg.inc 232`; the allocator
        // keeps the code before any `setmaxnreg` within `.maxnreg`, passes/regalloc/limits.rs).
        if mf.setmaxnreg {
            f.registers = n as u32;
        }
    }
    // `.minnctapersm N` with `.maxntid`/`.reqntid`: the register budget that lets N CTAs share
    // an SM: the CTAs' warps spread over the 4 sub-partitions, each with 16384 registers, rounded
    // down to a multiple of 8, at most 255. Measured with ptxas (threads × N → MAXREG_COUNT):
    // 100×3 → 168, 96×5 → 128, 64×7 → 128, 256×4 → 64, 1024×1 → 64, 1024×2 → 32, 33×3 → 255.
    let threads = f.attrs.reqntid.or(f.attrs.max_threads);
    if let (Some(t), Some(n)) = (
        threads,
        directive(af, ".minnctapersm")
            .and_then(|d| d.args.first())
            .and_then(eval_const)
            .filter(|&n| n > 0),
    ) {
        let warps = u64::from(t[0] * t[1] * t[2]).div_ceil(32) * n as u64;
        let per_partition = warps.div_ceil(4).max(1);
        let budget = (16384 / (per_partition * 32) / 8 * 8).min(255) as u16;
        let limit = f.attrs.maxreg_count.map_or(budget, |m| m.min(budget));
        f.attrs.maxreg_count = Some(limit);
        if f.registers > u32::from(limit) {
            diags.push(err(
                af.name.span,
                format!(
                    "ptxc's code for `{}` uses {} registers, more than the {limit} that \
                     .minnctapersm allows; ptxc's register allocator honours only .maxnreg",
                    af.name.text, f.registers
                ),
            ));
        }
    }

    // Code-derived records.
    let mut max_barrier: Option<u32> = None;
    let mut spill_stores = 0;
    let mut spill_loads = 0;
    let mut first_spill = None;
    let mut has_bssy = false;
    let mut mbarrier_instrs = Vec::new();
    let mut calls_at: Vec<u32> = Vec::new();
    let mut has_subroutine_call = false;
    // A guarded warp-synchronous instruction runs after a `WARPSYNC` of its membermask
    // (`passes/reconverge.rs`); ptxas records that mask for it (below) and writes
    // CRS_STACK_SIZE for every WARPSYNC (`vote_all_sub`: none of its BSSYs, a `WARPSYNC.ALL`;
    // probe tests/sass-probes/ptx/setmaxnreg.ptx: two `WARPSYNC.ALL`).
    let mut has_warpsync = false;
    let mut warpsync_mask: Option<u32> = None;
    for i in code_instrs {
        let at = i.addr as u32;
        match i.mnemonic {
            "BAR" => match i.operands.first().map(|o| &o.kind) {
                Some(OperandKind::Int(id)) => {
                    let id = *id as u32;
                    max_barrier = Some(max_barrier.map_or(id, |m| m.max(id)));
                }
                // A barrier named by a register may be any of the 16: ptxas reserves them
                // all (`bar.sync %r` → EIATTR_NUM_BARRIERS 0x10).
                _ => max_barrier = Some(15),
            },
            "BSSY" => has_bssy = true,
            // The user's warp-synchronous instructions (`shfl/vote/match/redux.sync`); ptxas
            // records no entry for `activemask` (`VOTE.ANY R, PT, PT`). ptxc encodes no
            // membermask (lower/isel/warp.rs), so no register holds one: 0xffffffff, as ptxas
            // writes for an immediate full mask.
            // `bar.warp.sync -1`: a NOP placeholder, recorded as ptxas does with the full mask.
            "NOP" if enc.warpsync_offsets.contains(&at) => {
                f.attrs.coop_group_offsets.push(at);
                f.attrs.coop_group_mask_regids.push(u32::MAX);
            }
            "VOTEU" | "VOTE" | "SHFL" | "REDUX" if enc.warp_wide_offsets.contains(&at) => {}
            "SHFL" | "MATCH" | "REDUX" | "VOTE" => {
                let activemask = i.mnemonic == "VOTE"
                    && i.operands.len() == 3
                    && i.operands[1..].iter().all(|o| {
                        matches!(&o.kind, OperandKind::Reg(r) if r.file == sass::RegFile::Pred && r.num == 7 && !o.not)
                    });
                if !activemask {
                    f.attrs.coop_group_offsets.push(at);
                    f.attrs
                        .coop_group_mask_regids
                        .push(warpsync_mask.take().unwrap_or(u32::MAX));
                }
            }
            "SYNCS" | "ARRIVES" => {
                let record = enc
                    .mbarrier_records
                    .iter()
                    .find(|(o, _)| *o == at)
                    .map(|(_, r)| *r);
                match record {
                    Some(mir::MbarrierRecord::NoEntry) => {}
                    Some(mir::MbarrierRecord::Kind(kind)) if mbarrier_entry(i, kind).is_some() => {
                        mbarrier_instrs.extend(mbarrier_entry(i, kind));
                    }
                    _ => diags.push(err(
                        af.name.span,
                        format!(
                            "`{}`: ptxc does not know what ptxas records in \
                             EIATTR_MBARRIER_INSTR_OFFSETS for `{i}` at {at:#x}",
                            af.name.text
                        ),
                    )),
                }
            }
            // `setmaxnreg` (lower/isel/async_copy.rs): ptxas records EIATTR_REG_RECONFIG and
            // reports the `.maxnreg` value as the register count (set above); its
            // `WARPSYNC.ALL` gets no record (probe tests/sass-probes/ptx/setmaxnreg.ptx).
            "USETMAXREG" => f.attrs.reg_reconfig = true,
            "WARPSYNC" if i.mods == ["ALL"] && mf.setmaxnreg => has_warpsync = true,
            // The membermask of the next warp-synchronous instruction: the whole warp
            // (0xffffffff, probe `full_pred`), or its register as 0x5000000 | R (`vote_all`:
            // `WARPSYNC R0` → 0x5000000; probe `reg_mask`: R4 → 0x5000004).
            "WARPSYNC" => {
                has_warpsync = true;
                warpsync_mask = if i.mods == ["ALL"] {
                    Some(u32::MAX)
                } else {
                    i.operands.iter().find_map(|o| match &o.kind {
                        OperandKind::Reg(r) if r.file == sass::RegFile::Gpr => {
                            Some(0x500_0000 | u32::from(r.num))
                        }
                        _ => None,
                    })
                };
            }
            // A call out of the module (`lower/isel/call.rs`): ptxas records the CALL's offset
            // as a system call and the callee among the externs (zluda/assertfail: SYSCALL_OFFSETS
            // 0xf0, EXTERNS __assertfail).
            // A debug build's call to a `.func` in a section of its own (relocated,
            // `lower/isel/call.rs`): no record (ptxas -g, `docs/cubin.md`).
            "CALL"
                if i.mods.contains(&"ABS")
                    && enc.relocs.iter().any(|r| {
                        r.offset == u64::from(at) && r.ty == runtime_abi::reloc::R_CUDA_ABS55_16_34
                    }) => {}
            "CALL" if i.mods.contains(&"ABS") => f.attrs.syscall_offsets.push(at),
            "LEPC" => calls_at.push(at),
            // A call to a subroutine linked into this section and its return
            // (`lower/link.rs`): PC-relative, no record (`tests/sass-probes/ptx/funcs.ptx`).
            "CALL" if i.mods.contains(&"REL") => has_subroutine_call = true,
            "RET" if !mf.subroutines.is_empty() || !mf.is_entry => {}
            "VOTEU" | "CALL" | "RET" => diags.push(err(
                af.name.span,
                format!(
                    "`{}`: ptxc cannot describe `{i}` in the cubin's records yet",
                    af.name.text
                ),
            )),
            _ => {}
        }
        if let Some(bytes) = is_spill(i, frame.local_bytes)
            && !enc.frame_save_offsets.contains(&at)
        {
            if i.mnemonic == "STL" {
                spill_stores += bytes;
            } else {
                spill_loads += bytes;
            }
            first_spill.get_or_insert(at);
        }
    }
    f.attrs.num_barriers = max_barrier.map(|b| (b + 1) as u8);
    // NUM_MBARRIERS: the number of `mbarrier.init` entries, written with the entries and only
    // then (see `mbarrier_entry`).
    if !mbarrier_instrs.is_empty() {
        let inits = mbarrier_instrs.iter().filter(|m| m.kind == 0).count();
        f.attrs.num_mbarriers = Some(inits as u16);
        f.attrs.mbarrier_instrs = mbarrier_instrs;
    }
    // ptxas writes CRS_STACK_SIZE 0 in every kernel whose code has a BSSY (no exception in
    // the corpora and probes).
    // ... and in every kernel with a call to a subroutine (`funcs.ptx`: k_mix has no BSSY).
    if has_bssy || has_subroutine_call || has_warpsync {
        f.attrs.crs_stack_size = Some(0);
    }
    // The subroutines linked after the kernel's code: ptxas's local symbols `$kernel$func`,
    // each with its frame size (`funcs.ptx`).
    for (name, offset) in &enc.subroutines {
        let frame_size = mf
            .subroutines
            .iter()
            .find(|s| s.1 == *name)
            .map_or(0, |s| s.2);
        // A slow path keeps its bare name here, `build` numbers it; its symbol is weak
        // (`lower/slow_path.rs`).
        let (symbol, linkage) = if crate::lower::slow_path::kind(name).is_some() {
            (name.clone(), Linkage::Weak)
        } else {
            (format!("${}${name}", f.name), Linkage::Local)
        };
        f.subroutines.push(Subroutine {
            name: symbol,
            linkage,
            offset: u64::from(*offset),
            frame_size,
            unwind: Unwind {
                cie: Cie::standard(),
                ops: Vec::new(),
            },
        });
    }
    // ptxas marks the first spill instruction (`11_stack_spill`: SpillRefill at the first STL).
    if let Some(at) = first_spill {
        f.attrs.annotations = vec![Annotation {
            kind: 1,
            offset: at,
        }];
    }

    // Shared memory: the reserved 1 KiB and ptxc's layout of the static variables. A kernel
    // that names an `.extern .shared` array gets the section even without static data, at
    // least 16-byte aligned (ptxas: extern_shared, shared_unify_*). In an optimized build an
    // unsized one the module declares counts even when the kernel does not name it (ptxas
    // 13.1, `.shared .align 4 .b32 a[7]; .extern .shared .align 16 .b8 dyn[];`: a kernel naming
    // only `a` gets a 0x420-byte section, 16-aligned, not 0x41c; one naming neither a
    // 0x400-byte section). A debug build reserves it only when named (`-g`: no section, and
    // 0x41c for the kernel naming `a`).
    let decls = shared_decls(m, af);
    let uses_dynamic = decls
        .iter()
        .any(|(name, size, _, ext, _)| *ext && ((*size == 0 && !debug) || mentions(m, af, name)));
    // `lower::plan` lays out the kernel's static variables, then the module's, and only then
    // the unsized `.extern .shared` arrays, as ptxas does, so dynamic shared memory starts after
    // the static data (`frame.shared_bytes`).
    // `.pragma "enable_smem_spilling"`: the spill area follows the static data
    // (`passes/regalloc`); ptxas's section and `-v` smem count it, and EIATTR_SHARED_SCRATCH
    // says how much of it, with the padding before it, is spill space (`spill_smemprag`:
    // 40320 bytes; with 200 bytes of variables, 40328).
    let scratch = mf.smem_spill.filter(|a| a.slots > 0).map(|a| {
        let user = a.start - crate::lower::SHARED_BASE + a.bytes();
        (user, user - frame.shared_bytes)
    });
    let shared_bytes = scratch.map_or(frame.shared_bytes, |(user, _)| user);
    if let Some((_, size)) = scratch {
        f.attrs.shared_scratch = Some((0, size));
    }
    if shared_bytes > 0 || uses_dynamic {
        // The variables `lower::plan` laid out: a kernel drops the module's variables it does
        // not name, and their alignment with them (ptxas: 09_mbarrier `arrive`, 8-byte `bar`
        // kept and 16-byte `buf` dropped, an 8-aligned section).
        let mut align = u64::from(frame.shared_align.max(1));
        if uses_dynamic {
            align = align.max(16);
        }
        // With dynamic shared memory the static part ends on the 16-byte boundary where the
        // dynamic part starts (ptxas: 8 static bytes give a 0x410-byte section).
        let user = if uses_dynamic {
            shared_bytes.next_multiple_of(16)
        } else {
            shared_bytes
        };
        if scratch.is_some() {
            align = align.max(4);
        }
        f.shared = Some(SharedMem::with_user_bytes(u64::from(user), align));
    }
    f.unwind = super::listing::default_unwind(&f.code);
    // A debug build's calls to `.func`s in sections of their own (`CALL.ABS` and the two
    // `MOV`s of its return address, relocated): `.rela.text.<f>` keeps the relocations and
    // `.nv.callgraph` an edge to each callee, in order of first call (ptxas -g, `docs/cubin.md`,
    // "Functions of their own").
    // The callee of each call is the name on the low half of its return address (a recursive
    // call is `CALL.REL` to offset 0 with no relocation, but an edge too: `_Z4polyfi` in
    // `tests/kernels/device_calls.ptx`).
    f.relocs = enc.relocs.clone();
    for i in mf.blocks.iter().flat_map(|b| &b.insts) {
        if let ("MOV", Some(mir::OpKind::Func(callee)), Some(mir::OpKind::Int(0))) = (
            i.mnemonic,
            i.ops.get(1).map(|o| &o.kind),
            i.ops.get(2).map(|o| &o.kind),
        ) && !f.callees.contains(callee)
        {
            f.callees.push(callee.clone());
        }
    }
    let callees = external_callees(mf);
    if !callees.is_empty() {
        // ptxas (zluda/assertfail, a vprintf probe): the callee is an extern of the kernel and
        // an edge of `.nv.callgraph`; the call goes through `.nv.constant4`, so the code keeps
        // no relocation, only the names of `.rela.text.<kernel>`. The unwind information says
        // where the frame is defined for the callee: `DW_CFA_def_cfa R1, 0` at the `LEPC`,
        // then an advance to the last EXIT.
        f.attrs.externs = callees.clone();
        f.callees.extend(callees);
        f.resolved = Resolved::NamesOnly;
        if let (&[lepc], Some(&exit), 0) =
            (&calls_at[..], f.attrs.exit_offsets.last(), f.frame_size)
            && exit > lepc
        {
            f.unwind.ops = vec![
                CfaOp::AdvanceLoc4(u64::from(lepc)),
                CfaOp::DefCfa {
                    reg: DWARF_R1,
                    offset: 0,
                },
                CfaOp::AdvanceLoc4(u64::from(exit - lepc)),
            ];
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let info = KernelInfo {
        name: f.name.clone(),
        registers: f.registers,
        barriers: f.attrs.num_barriers.map_or(0, u32::from),
        frame: f.frame_size,
        stack: f.frame_size,
        spill_stores,
        spill_loads,
        shared: u64::from(shared_bytes),
        subroutines: subroutine_infos(mf),
    };
    Ok((f, info))
}

/// A `.func` compiled as a function of its own (debug builds, `lower::link`): its code, with
/// the subroutines it reaches, in `.text.<name>`, a `FUNC` symbol of its linkage, and the
/// records ptxas writes for every device function of a `-g` build (`FunctionAttrs::device`:
/// `CUDA_API_VERSION`, `SPARSE_MMA_MASK`, `MERCURY_ISA_VERSION`, `SW_WAR`; no parameters,
/// no exit offsets; `REGCOUNT` and `FRAME_SIZE` in `.nv.info`, no `MIN_STACK_SIZE`). Probes:
/// `tests/tests/cubin_ptx/debug_funcs.ptx` with `-g`, zluda `_Z9vectorAddPKfS0_Pfi.ptx`.
fn device_function(
    m: &ast::Module,
    af: &ast::Function,
    mf: &mir::Function,
    enc: &EncodedFunction,
    frame: &crate::lower::FrameInfo,
    debug: bool,
) -> Result<Function, Vec<Diagnostic>> {
    let (mut f, _) = kernel(m, af, mf, enc, frame, debug)?;
    f.kind = FunctionKind::Device;
    f.params = Vec::new();
    f.min_stack_size = 0;
    f.shared = None;
    // A call out of the module keeps its records (unmeasured for a device function: ptxas's
    // own code for one calls through the ABI).
    let (externs, syscalls) = (f.attrs.externs.clone(), f.attrs.syscall_offsets.clone());
    f.attrs = FunctionAttrs::device();
    f.attrs.externs = externs;
    f.attrs.syscall_offsets = syscalls;
    Ok(f)
}

/// The functions a kernel calls through `.nv.constant4` (`LDC.64 R, c[0x4][R]` … `CALL.ABS`),
/// in order of first call.
fn external_callees(mf: &mir::Function) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in mf.blocks.iter().flat_map(|b| &b.insts) {
        // A call naming its callee first calls a `.func` of the module (debug builds).
        if i.mnemonic != "CALL"
            || matches!(i.ops.first().map(|o| &o.kind), Some(mir::OpKind::Func(_)))
        {
            continue;
        }
        for o in &i.ops {
            if let mir::OpKind::Func(name) = &o.kind
                && !out.contains(name)
            {
                out.push(name.clone());
            }
        }
    }
    out
}

/// What `ptxas -v` prints for the module (standard error), in ptxas's wording and layout with
/// `ptxc` in place of `ptxas` (so that `sed s/ptxc/ptxas/` makes the two reports diffable):
///
/// ```text
/// ptxc info    : 0 bytes gmem
/// ptxc info    : Compiling entry function 'k' for 'sm_90a'
/// ptxc info    : Function properties for k
///     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
/// ptxc info    : Used 12 registers, used 0 barriers, 8 bytes cumulative stack size, 16 bytes smem
/// ptxc info    : Compile time = 6.125 ms
/// ```
///
/// ptxas prints `gmem` once, then one block per kernel in its processing order (reverse PTX
/// order; measured on a two-kernel module), each followed by a `Function properties` block
/// for every `.func` the kernel calls, in the order of their code (`funcs.ptx`: `mix` after
/// both `k_mix2` and `k_mix`; `device_calls.ptx`: `_Z4polyfi`, then `_Z6clampiiii`).
/// `compile_ms` is shared out evenly.
pub fn verbose_report(b: &Built, arch: &str, compile_ms: f64) -> String {
    let mut s = format!("ptxc info    : {} bytes gmem\n", b.gmem);
    let each = compile_ms / b.kernels.len().max(1) as f64;
    for k in b.kernels.iter().rev() {
        s.push_str(&format!(
            "ptxc info    : Compiling entry function '{}' for '{arch}'\n",
            k.name
        ));
        function_properties(&mut s, &k.name, k.frame, k.spill_stores, k.spill_loads);
        let mut used = format!(
            "ptxc info    : Used {} registers, used {} barriers",
            k.registers, k.barriers
        );
        if k.stack > 0 {
            used.push_str(&format!(", {} bytes cumulative stack size", k.stack));
        }
        if k.shared > 0 {
            used.push_str(&format!(", {} bytes smem", k.shared));
        }
        s.push_str(&used);
        s.push('\n');
        s.push_str(&format!("ptxc info    : Compile time = {each:.3} ms\n"));
        for sub in &k.subroutines {
            function_properties(
                &mut s,
                &sub.name,
                sub.frame,
                sub.spill_stores,
                sub.spill_loads,
            );
        }
    }
    s
}

/// ptxas's two-line `Function properties` block of one kernel or subroutine.
fn function_properties(s: &mut String, name: &str, frame: u32, stores: u32, loads: u32) {
    s.push_str(&format!(
        "ptxc info    : Function properties for {name}\n    {frame} bytes stack frame, {stores} bytes spill stores, {loads} bytes spill loads\n"
    ));
}
