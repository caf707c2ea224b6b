//! Lowering: the checked PTX syntax tree → MIR in SSA form, one function at a time.
//!
//! Two phases per function:
//!
//! 1. **Plan** ([`plan`]): walk the body (nested `{ }` blocks are scopes), give every PTX
//!    register a [`Var`], split the instructions into basic blocks at labels and after
//!    branches, and find every block's successors — so the predecessors of each block are known
//!    before any code is selected.
//! 2. **Select** ([`isel`]): lower the blocks in layout order. PTX registers become SSA values
//!    on the fly ([`ssa`]); a block is sealed as soon as all its predecessors are lowered.
//!    Instruction selection may split a block (a runtime test, a slow path); the successors of
//!    the planned block then hang off the last block of the split.
//!
//! PTX that ptxc cannot lower yet is an error naming the instruction, at its line.

pub mod inline;
pub mod isel;
pub mod link;
pub mod slow_path;
pub mod ssa;

use crate::diag::Diagnostic;
use crate::driver::Checked;
use crate::frontend::ast::{self, Declarator, Expr, FunctionKind, Item, Space, Stmt};
use crate::frontend::check::eval_const;
use crate::frontend::types::Ty;
use crate::mir::{self, BlockId, Function, RegClass};
use rustc_hash::{FxHashMap, FxHashSet};
use ssa::{SsaBuilder, Var, VarInfo};

/// Where a named memory object lives, as instruction selection sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Sym {
    /// A kernel parameter at this offset in constant bank 0.
    Param { cbank_offset: u32, size: u32 },
    /// A parameter or return value of a `.func`, or a `.param` declared in a body (call
    /// arguments): ptxc cannot lower these yet.
    FuncParam,
    /// A `.shared` variable at this offset from the start of the CTA's shared window (user data
    /// starts at 0x400).
    Shared { offset: u32 },
    /// A `.local` variable at this offset in the thread's stack frame.
    Local { offset: u32 },
    /// A module-scope `.global` or `.const` variable. `const_offset`: where a `.const`
    /// variable sits in `.nv.constant3` (`c[0x3]`), laid out as the cubin writer does (by
    /// decreasing alignment, PTX order among equals); 0 for `.global`.
    Global {
        name: String,
        space: Space,
        const_offset: u32,
    },
    /// A function, as a call target or a value.
    Func(String),
    /// A `.global .texref`/`.surfref`/`.samplerref`: an opaque handle the driver binds. On
    /// sm_90 a kernel reads it from a header slot in constant bank 0 ([`FrameInfo::header_slots`]).
    Opaque { name: String, kind: OpaqueKind },
}

/// What an opaque module variable is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpaqueKind {
    Texture,
    Surface,
    Sampler,
}

impl OpaqueKind {
    /// The kind of a variable with these attributes (`.texref`, `.surfref`, `.samplerref`).
    pub fn of(attrs: &[ast::Attr]) -> Option<OpaqueKind> {
        attrs.iter().find_map(|a| match a.word.text.as_str() {
            ".texref" => Some(OpaqueKind::Texture),
            ".surfref" => Some(OpaqueKind::Surface),
            ".samplerref" => Some(OpaqueKind::Sampler),
            _ => None,
        })
    }
}

/// The layout decisions for one function that the cubin writer needs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameInfo {
    /// Bytes of parameters in constant bank 0 (from 0x210).
    pub param_bytes: u32,
    /// Bytes of static `.shared` memory, beyond the reserved 1 KiB.
    pub shared_bytes: u32,
    /// The part of [`FrameInfo::shared_bytes`] the function's own `.shared` variables take,
    /// before the module's: where the module's variables start in its window, so the layout a
    /// subroutine it calls must be lowered with (`lower_module`).
    pub own_shared_bytes: u32,
    /// For a kernel that calls subroutines, the module's sized `.shared` variables its window
    /// keeps ([`SharedWindow::kept`]); the subroutines it calls are lowered with the same.
    pub kept_shared: Option<Vec<String>>,
    /// Bytes of `.local` memory per thread.
    pub local_bytes: u32,
    /// The window ends with unsized `.extern .shared` arrays (dynamic shared memory).
    pub dynamic_shared: bool,
    /// The largest alignment of the `.shared` variables laid out in the window (the
    /// function's own, the module's it keeps, the `.extern` arrays as declared): the
    /// alignment of its `.nv.shared` section.
    pub shared_align: u32,
    /// The texture references the kernel reads, in order of first use: slot `i` is the 4-byte
    /// word at `align4(0x210 + param_bytes) + 4*i` of constant bank 0, which the driver fills
    /// with the texture's header index (`R_CUDA_TEX_HEADER_INDEX`). Probed: a kernel that reads
    /// `t1` then `t0` has `t1` in slot 0 whatever the declaration order.
    pub header_slots: Vec<String>,
}

impl FrameInfo {
    /// The constant-bank-0 offset of header slot `i`.
    pub fn header_slot_offset(&self, i: usize) -> u32 {
        (PARAM_BASE + self.param_bytes).next_multiple_of(4) + 4 * i as u32
    }
}

/// Where the module's `.shared` variables lie in a function's window: after `base` bytes of the
/// kernel's own variables and, when `kept` is given, only those in it (declaration order kept).
/// A subroutine is lowered once per window of the kernels that reach it.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct SharedWindow {
    pub base: u32,
    /// The module's sized variables the kernel names or a function it reaches names
    /// ([`kept_shared`]); `None`: every one, or, for a kernel without calls, those its body
    /// names ([`plan_at`]).
    pub kept: Option<Vec<String>>,
}

/// The user shared-memory base: the first 1 KiB of every CTA's window is reserved
/// (`.nv.shared.reserved.0`; ptxas-facts.md §a.3.3).
pub const SHARED_BASE: u32 = 0x400;
/// The first kernel parameter in constant bank 0 (ptxas-facts.md §c.1).
pub const PARAM_BASE: u32 = 0x210;

/// The MIR of a module and what the cubin writer needs about each function.
#[derive(Debug, Default)]
pub struct Lowered {
    pub module: mir::Module,
    pub frames: Vec<FrameInfo>,
    /// Debug code (`-g`): emission gives it ptxas's serial control words
    /// ([`crate::emit::scoreboard::Options::serial`]). Set by [`crate::driver::lower`].
    pub device_debug: bool,
    /// `.nv.constant4`: the `.global` variables whose 64-bit addresses the code loads from
    /// `c[0x4][8*i]` (`LDC.64`), in order of first use; the cubin relocates slot `i` to
    /// variable `i` (`R_CUDA_64`), as ptxas does.
    pub bank4: Vec<String>,
    /// The module's called `.func`s compiled as subroutines (`inline::subroutines`), in
    /// module order; `crate::lower::link` appends them to the kernels that call them once the
    /// pipeline has run on them.
    pub subroutines: Vec<Function>,
    /// For each of [`Lowered::subroutines`], the kernels it serves: those whose own `.shared`
    /// variables take this many bytes ([`FrameInfo::own_shared_bytes`]), since the module's
    /// `.shared` variables it addresses lie after them; `None` for every kernel (ptxas's slow
    /// paths). A subroutine reached from kernels with different layouts is lowered once per
    /// layout.
    pub subroutine_layouts: Vec<Option<SharedWindow>>,
    /// Debug builds: every `.func` with a body, in module order, with its frame. ptxas compiles
    /// each as a function of its own, in its own `.text.<name>` section, called or not
    /// (`docs/cubin.md`, "Functions of their own"); `crate::lower::link` makes one from its
    /// subroutine, so the labels a debug section names have an address.
    pub own_sections: Vec<(String, FrameInfo)>,
}

/// Lowers every function with a body, with the subroutines of
/// `inline::subroutines(…, every_called)`: with `every_called`, every called `.func` is a
/// subroutine, as in ptxas's code, but those whose calls the convention cannot pass
/// (`inline::unpassable`); else only the recursive and address-taken ones, the others inlined.
pub fn lower_module(checked: &Checked, every_called: bool) -> Result<Lowered, Vec<Diagnostic>> {
    lower_module_with(checked, every_called, checked.info.debug)
}

/// [`lower_module`], where `own_sections` (a debug build: `-g` or `.target …, debug`) also
/// lowers every `.func` with a body as a subroutine, called or not, and lists it in
/// [`Lowered::own_sections`].
pub fn lower_module_with(
    checked: &Checked,
    every_called: bool,
    own_sections: bool,
) -> Result<Lowered, Vec<Diagnostic>> {
    let mut out = Lowered::default();
    let mut diags = Vec::new();
    let globals = module_symbols(&checked.module);
    let subs = inline::subroutines(&checked.module, every_called);
    // The subroutines some kernel reaches, found while lowering the kernels, each with the
    // layout of the reaching kernel's `.shared` window (where the module's variables start).
    let mut reached: Vec<(String, SharedWindow)> = Vec::new();
    // A debug build compiles every `.func` with a body (`ptxas -g`: a local `.func` no one
    // calls gets its `.text.<name>` too; tests/tests/cubin_ptx/debug_funcs.ptx).
    let own: Vec<String> = if own_sections {
        checked
            .module
            .items
            .iter()
            .filter_map(|it| match it {
                Item::Function(f) if f.body.is_some() && f.kind == FunctionKind::Func => {
                    Some(f.name.text.to_string())
                }
                _ => None,
            })
            .collect()
    } else {
        Vec::new()
    };
    // The subroutines called with the fixed convention (`isel/call.rs`): the recursive and
    // address-taken ones, and in a debug build every `.func` (ptxas's `-g` code keeps the
    // ABI). The others are caller-saved ([`Function::caller_saved`]).
    let fixed: FxHashSet<String> = if own_sections {
        subs.iter().chain(&own).cloned().collect()
    } else {
        inline::subroutines(&checked.module, false)
    };
    // The `.func`s called with `CALL.ABS` in their own sections (debug builds, `isel/call.rs`).
    let abs: FxHashSet<String> = own.iter().cloned().collect();
    // Their `.shared` layout is a kernel-less one: the module's variables from offset 0.
    reached.extend(own.iter().map(|n| (n.clone(), SharedWindow::default())));
    for item in &checked.module.items {
        // Kernels; calls to `.func`s are inlined into them (`inline.rs`), except to the
        // recursive ones, which are lowered below as subroutines.
        let Item::Function(f) = item else { continue };
        if f.body.is_none() || f.kind != FunctionKind::Entry {
            continue;
        }
        let kernel = f;
        let facts = checked.info.bodies.get(f.name.text.as_str()).copied();
        let f = match inline::inline_calls(f, &checked.module, &subs, facts) {
            Ok(f) => f,
            Err(mut d) => {
                diags.append(&mut d);
                continue;
            }
        };
        let window = SharedWindow {
            base: 0,
            kept: kept_shared(&f, &checked.module, &globals),
        };
        let lowered =
            lower_function_at(&f, &globals, &mut out.bank4, (&subs, &fixed, &abs), &window);
        let layout = SharedWindow {
            base: lowered
                .as_ref()
                .map_or(0, |(_, frame)| frame.own_shared_bytes),
            kept: window.kept,
        };
        note_reached(&mut reached, kernel, &subs, &layout);
        note_reached(&mut reached, &f, &subs, &layout);
        match lowered {
            Ok((mf, frame)) => {
                out.module.functions.push(mf);
                out.frames.push(frame);
            }
            Err(mut d) => diags.append(&mut d),
        }
    }
    // Subroutines, in module order (ptxas's order in the section, `device_calls.ptx`), each
    // lowered once: its code is position-independent and copied into every kernel that calls
    // it (`link.rs`).
    let mut i = 0;
    while i < reached.len() {
        let (name, layout) = reached[i].clone();
        i += 1;
        let Some(f) = checked.module.items.iter().find_map(|it| match it {
            Item::Function(f) if f.body.is_some() && f.name.text == name => Some(f),
            _ => None,
        }) else {
            continue;
        };
        let f = match inline::subroutine_body(f, &checked.module, &subs) {
            Ok(f) => f,
            Err(mut d) => {
                diags.append(&mut d);
                continue;
            }
        };
        note_reached(&mut reached, &f, &subs, &layout);
        match lower_function_at(&f, &globals, &mut out.bank4, (&subs, &fixed, &abs), &layout) {
            Ok((mf, frame)) => {
                if own.contains(&name) && !out.own_sections.iter().any(|(n, _)| *n == name) {
                    out.own_sections.push((name, frame));
                }
                out.subroutines.push(mf);
                out.subroutine_layouts.push(Some(layout));
            }
            Err(mut d) => diags.append(&mut d),
        }
    }
    // ptxas's slow paths the code calls (`slow_path.rs`), each lowered once.
    let mut slow: Vec<usize> = out
        .module
        .functions
        .iter()
        .chain(&out.subroutines)
        .flat_map(|f| f.blocks.iter().flat_map(|b| &b.insts))
        .filter(|i| i.mnemonic == "CALL")
        .flat_map(|i| &i.ops)
        .filter_map(|o| match &o.kind {
            mir::OpKind::Func(n) => slow_path::kind(n),
            _ => None,
        })
        .collect();
    slow.sort_unstable();
    slow.dedup();
    for k in slow {
        let s = &slow_path::SLOW_PATHS[k];
        let f = match slow_path::function(s) {
            Ok(f) => f,
            Err(e) => {
                diags.push(Diagnostic::error(
                    ast::Span::default(),
                    format!("internal error: {e}"),
                ));
                continue;
            }
        };
        let none = FxHashMap::default();
        let no_subs = FxHashSet::default();
        match lower_function(&f, &none, &mut out.bank4, &no_subs, &no_subs) {
            Ok((mf, _)) => {
                out.subroutines.push(mf);
                out.subroutine_layouts.push(None);
            }
            Err(mut d) => diags.append(&mut d),
        }
    }
    // The module's subroutines in module order, then the slow paths in ptxas's order.
    let rank = |n: &str| {
        checked
            .module
            .items
            .iter()
            .position(|it| matches!(it, Item::Function(f) if f.name.text == n))
    };
    let mut subroutines: Vec<(Function, Option<SharedWindow>)> =
        std::mem::take(&mut out.subroutines)
            .into_iter()
            .zip(std::mem::take(&mut out.subroutine_layouts))
            .collect();
    subroutines.sort_by(|(f, layout), (g, other)| {
        (
            rank(&f.name).unwrap_or(usize::MAX),
            slow_path::kind(&f.name),
            layout,
        )
            .cmp(&(
                rank(&g.name).unwrap_or(usize::MAX),
                slow_path::kind(&g.name),
                other,
            ))
    });
    (out.subroutines, out.subroutine_layouts) = subroutines.into_iter().unzip();
    if diags.is_empty() {
        order_bank4(&checked.module, &mut out);
        Ok(out)
    } else {
        Err(diags)
    }
}

/// Adds the subroutines `f` calls or takes the address of to `reached`, each once per
/// `.shared` layout (of the kernel that reaches them), in order of first mention.
fn note_reached(
    reached: &mut Vec<(String, SharedWindow)>,
    f: &ast::Function,
    subs: &FxHashSet<String>,
    layout: &SharedWindow,
) {
    // Without subroutines there is nothing to find, and no need to walk every operand.
    if subs.is_empty() {
        return;
    }
    for c in inline::called_subroutines(f, subs) {
        let c = (c, layout.clone());
        if !reached.contains(&c) {
            reached.push(c);
        }
    }
}

/// ptxas orders the `.nv.constant4` address slots by the variables' PTX declaration order, not
/// by first use (`.global a[4]; .global b;` with `b` used first: `c[0x4][0x0]` is `a`). Isel
/// numbered them by first use; this renumbers the slots and the `LDC c[0x4][…]` that read them.
fn order_bank4(m: &ast::Module, out: &mut Lowered) {
    // Functions called through the bank (`lower/isel/call.rs`) count at their declaration:
    // `tests/kernels/device_calls.ptx` declares `vprintf`, then `$str`, and ptxas gives
    // `vprintf` slot 0 and `$str` slot 8.
    let decl: Vec<&str> = m
        .items
        .iter()
        .flat_map(|i| match i {
            Item::Var(v) => v.decls.iter().map(|d| d.name.text.as_str()).collect(),
            Item::Function(f) => vec![f.name.text.as_str()],
            _ => Vec::new(),
        })
        .collect();
    let rank = |n: &str| decl.iter().position(|d| *d == n).unwrap_or(usize::MAX);
    let mut sorted = out.bank4.clone();
    sorted.sort_by_key(|n| rank(n));
    if sorted == out.bank4 {
        return;
    }
    let new_slot: Vec<i64> = out
        .bank4
        .iter()
        .map(|n| 8 * sorted.iter().position(|s| s == n).unwrap_or(0) as i64)
        .collect();
    for f in &mut out.module.functions {
        // A call's `LDC.64 R, c[0x4][R0]` takes the slot from `MOV R0, slot` (in SSA form).
        let mut slot_regs: Vec<mir::VReg> = Vec::new();
        for b in &f.blocks {
            for i in &b.insts {
                for o in &i.ops {
                    if let mir::OpKind::CBank {
                        bank: 4,
                        base: Some(r),
                        ..
                    } = &o.kind
                        && let Some(v) = r.vreg()
                    {
                        slot_regs.push(v);
                    }
                }
            }
        }
        for b in &mut f.blocks {
            for i in &mut b.insts {
                if i.mnemonic == "MOV"
                    && i.defs()
                        .next()
                        .and_then(|r| r.vreg())
                        .is_some_and(|v| slot_regs.contains(&v))
                    && let Some(mir::OpKind::Int(offset)) = i.ops.get_mut(1).map(|o| &mut o.kind)
                    && *offset % 8 == 0
                    && let Some(k) = new_slot.get((*offset / 8) as usize)
                {
                    *offset = *k;
                    continue;
                }
                for o in &mut i.ops {
                    if let mir::OpKind::CBank {
                        bank: 4,
                        base: None,
                        offset,
                    } = &mut o.kind
                        && *offset % 8 == 0
                        && let Some(k) = new_slot.get((*offset / 8) as usize)
                    {
                        *offset = *k;
                    }
                }
            }
        }
    }
    out.bank4 = sorted;
}

/// Module-scope variables and functions.
pub(crate) fn module_symbols(m: &ast::Module) -> FxHashMap<String, (Sym, Decl)> {
    let mut out = FxHashMap::default();
    // `.nv.constant3`: the `.const` variables by decreasing alignment, each at its alignment
    // (`emit::write::var_offset`).
    let mut consts: Vec<(&str, u32, u32)> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) if v.space == Space::Const => Some(v),
            _ => None,
        })
        .flat_map(|v| {
            v.decls.iter().map(|d| {
                let (size, align) = object_layout(&v.attrs, d);
                (d.name.text.as_str(), size, align.max(1))
            })
        })
        .collect();
    consts.sort_by_key(|c| std::cmp::Reverse(c.2));
    let mut const_offsets = FxHashMap::default();
    let mut end = 0u32;
    for (name, size, align) in consts {
        let off = end.next_multiple_of(align);
        const_offsets.entry(name).or_insert(off);
        end = off + size;
    }
    for item in &m.items {
        match item {
            Item::Var(v) => {
                for d in &v.decls {
                    let sym = match v.space {
                        Space::Shared => Sym::Shared { offset: u32::MAX },
                        _ if let Some(kind) = OpaqueKind::of(&v.attrs) => Sym::Opaque {
                            name: d.name.text.to_string(),
                            kind,
                        },
                        space => Sym::Global {
                            name: d.name.text.to_string(),
                            space,
                            const_offset: if space == Space::Const {
                                const_offsets
                                    .get(d.name.text.as_str())
                                    .copied()
                                    .unwrap_or(0)
                            } else {
                                0
                            },
                        },
                    };
                    out.insert(
                        d.name.text.to_string(),
                        (sym, Decl(v.attrs.clone(), d.clone())),
                    );
                }
            }
            Item::Function(f) => {
                out.insert(
                    f.name.text.to_string(),
                    (
                        Sym::Func(f.name.text.to_string()),
                        Decl(
                            vec![],
                            Declarator {
                                name: f.name.clone(),
                                range: None,
                                dims: vec![],
                                init: None,
                                span: f.span,
                            },
                        ),
                    ),
                );
            }
            _ => {}
        }
    }
    out
}

/// The declaration behind a module symbol (attributes and declarator), for layout.
#[derive(Clone, Debug)]
pub struct Decl(pub Vec<ast::Attr>, pub Declarator);

/// The size and alignment of a declared object: type size × array elements, `.align` or the
/// type's natural alignment. The `.align` of a `.ptr` parameter (`.param .u64 .ptr .global
/// .align 1 p`) is the pointee's: the parameter itself keeps its natural alignment (the driver
/// puts such a `.u64` after three `.u32`s at 0x238, not 0x234: pyptx/matmul_tma_v35_sm90a).
pub fn object_layout(attrs: &[ast::Attr], d: &Declarator) -> (u32, u32) {
    let mut ty_bytes = 0;
    let mut align = None;
    let mut vector = 1;
    let pointer = attrs.iter().any(|a| a.word.text == ".ptr");
    for a in attrs {
        if let Some(t) = Ty::parse(&a.word.text) {
            ty_bytes = t.bits().div_ceil(8).max(1);
        } else if a.word.text == ".align" && !pointer {
            align = a.value.as_ref().and_then(eval_const).map(|v| v as u32);
        } else if let Some(n) = a
            .word
            .text
            .strip_prefix(".v")
            .and_then(|n| n.parse::<u32>().ok())
        {
            vector = n;
        }
    }
    let elem = ty_bytes * vector;
    let mut count: u32 = 1;
    for dim in &d.dims {
        match dim.as_ref().and_then(eval_const) {
            Some(n) => count = count.saturating_mul(n as u32),
            None => {
                // `[]` with an initializer: the initializer's length.
                count = match &d.init {
                    Some(ast::Init::List(items, _)) => items.len() as u32,
                    _ => 0,
                };
            }
        }
    }
    (elem.saturating_mul(count), align.unwrap_or(elem.max(1)))
}

/// The register class and width of a PTX register type.
pub fn reg_shape(ty: Ty) -> (RegClass, u8) {
    if ty.is_pred() {
        (RegClass::Pred, 1)
    } else {
        (RegClass::Gpr, ty.bits().div_ceil(32).max(1) as u8)
    }
}

/// A scope of a function body.
#[derive(Default)]
pub struct Scope {
    parent: Option<usize>,
    regs: FxHashMap<String, (Var, Ty)>,
    /// `%r<100>`: (prefix, first var, count, type).
    families: Vec<(String, u32, u32, Ty)>,
    labels: FxHashMap<String, BlockId>,
    syms: FxHashMap<String, Sym>,
}

/// A planned basic block: its PTX instructions and successors.
#[derive(Default)]
pub struct PlannedBlock<'a> {
    pub label: Option<String>,
    pub instrs: Vec<(&'a ast::Instruction, usize)>,
    pub succs: Vec<BlockId>,
    pub fallthrough: Option<BlockId>,
    /// The guard the block's unguarded instructions run under, other than its `mov`s, set where
    /// [`predicate_uniform_regions`] replaced the branch around the block.
    pub guard: Option<ast::Guard>,
}

/// The plan of one function.
pub struct Plan<'a> {
    scopes: Vec<Scope>,
    pub blocks: Vec<PlannedBlock<'a>>,
    /// The order in which the walk entered the blocks: the layout order.
    order: Vec<BlockId>,
    ssa: SsaBuilder,
    frame: FrameInfo,
    diags: Vec<Diagnostic>,
    /// The kernel carries `.explicitcluster`.
    explicit_cluster: bool,
    /// The module's `.nv.constant4` address table (see [`Lowered::bank4`]), lent to the
    /// function being lowered.
    bank4: Vec<String>,
    /// The module's functions compiled as subroutines: calls to them are `CALL.REL`.
    subroutines: FxHashSet<String>,
    /// Those of them called with the fixed convention (return address in R20:R21, the callee
    /// saves what callers keep); calls to the others are caller-saved (`isel/call.rs`).
    fixed_convention: FxHashSet<String>,
    /// The `.func`s called with `CALL.ABS` (debug builds: [`Lowered::own_sections`]).
    abs_calls: FxHashSet<String>,
    /// A subroutine's parameters and results, in order: the registers of the calling
    /// convention (`isel/call.rs`).
    sub_params: Vec<ast::Name>,
    sub_results: Vec<ast::Name>,
    /// Loop-header PHIs `(block, variable)` that selection must not take to be their value
    /// from before the loop (`isel/uniform.rs`, `uniform_loop_phi`): an earlier attempt found
    /// that the loop changes them.
    refused_loop_phis: FxHashSet<(u32, u32)>,
    /// The loop-header PHIs whose assumption selection found wrong (the attempt is refused
    /// with an error and is retried without them).
    failed_loop_phis: Vec<(u32, u32)>,
}

impl Plan<'_> {
    fn label(&self, s: usize, name: &str) -> Option<BlockId> {
        PlanView {
            scopes: &self.scopes,
        }
        .label(s, name)
    }
}

/// Name resolution through a chain of scopes (read-only, so that instruction selection can
/// resolve while it holds the rest of the plan mutably).
pub struct PlanView<'p> {
    pub scopes: &'p [Scope],
}

impl PlanView<'_> {
    /// A register name in scope `s`: a declared register or a member of a `%r<N>` family.
    pub fn reg(&self, mut s: usize, name: &str) -> Option<(Var, Ty)> {
        loop {
            let scope = &self.scopes[s];
            // Most kernels declare families only: no hash of the name then.
            if !scope.regs.is_empty()
                && let Some(r) = scope.regs.get(name)
            {
                return Some(*r);
            }
            // `%r12`: the family `%r`, member 12. Bytes, not chars: every operand of every
            // instruction comes here.
            let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
            if digits > 0 && !scope.families.is_empty() {
                let (prefix, num) = name.split_at(name.len() - digits);
                let n = num.bytes().try_fold(0u32, |n, d| {
                    n.checked_mul(10)?.checked_add(u32::from(d - b'0'))
                });
                if let Some(n) = n {
                    // A byte loop: prefixes are a few bytes, shorter than a `memcmp` call.
                    for (p, first, count, ty) in &scope.families {
                        if p.len() == prefix.len() && p.bytes().eq(prefix.bytes()) && n < *count {
                            return Some((Var(first + n), *ty));
                        }
                    }
                }
            }
            s = scope.parent?;
        }
    }

    pub fn label(&self, mut s: usize, name: &str) -> Option<BlockId> {
        loop {
            if let Some(b) = self.scopes[s].labels.get(name) {
                return Some(*b);
            }
            s = self.scopes[s].parent?;
        }
    }

    pub fn sym(&self, mut s: usize, name: &str) -> Option<Sym> {
        loop {
            if let Some(b) = self.scopes[s].syms.get(name) {
                return Some(b.clone());
            }
            s = self.scopes[s].parent?;
        }
    }
}

/// Phase 1: scopes, variables, blocks and successors.
pub fn plan<'a>(f: &'a ast::Function, globals: &FxHashMap<String, (Sym, Decl)>) -> Plan<'a> {
    plan_at(f, globals, &SharedWindow::default())
}

/// The module's sized `.shared` variables a kernel that calls functions keeps: those named by
/// its body or by a function it reaches (calls or takes the address of), transitively, as
/// ptxas does. Probe (ptxas 13.1): `.shared a[4], b[8], c[16]; .shared .align 8 d[32]` (b32),
/// `f` naming `c` and calling `g`, `g` naming `d`; kernel `k1` names `a` and calls `f`: `a`
/// at 0x0, `c` at 0x10, `d` at 0x50, a 0x4d0-byte section; `k2` names `b` and calls `g`: `b`
/// at 0x0, `d` at 0x20, 0x4a0 bytes; `k3` names `a` and calls nothing: 0x410 bytes. `None` for
/// a kernel without calls ([`plan_at`] finds its names) or a module without sized `.shared`
/// variables.
fn kept_shared(
    kernel: &ast::Function,
    module: &ast::Module,
    globals: &FxHashMap<String, (Sym, Decl)>,
) -> Option<Vec<String>> {
    let body = kernel.body.as_ref()?;
    let is_static = |n: &str| {
        matches!(globals.get(n), Some((Sym::Shared { .. }, decl))
            if object_layout(&decl.0, &decl.1).0 > 0)
    };
    // The module's variables first: walking a large body for a `call` costs a cache miss per
    // instruction.
    if !globals.keys().any(|n| is_static(n)) || !inline::has_call(&body.stmts) {
        return None;
    }
    let functions: FxHashMap<&str, &ast::Function> = module
        .items
        .iter()
        .filter_map(|it| match it {
            Item::Function(f) if f.body.is_some() => Some((f.name.text.as_str(), &**f)),
            _ => None,
        })
        .collect();
    let mut kept: FxHashSet<&str> = FxHashSet::default();
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let mut work: Vec<&[Stmt]> = vec![&body.stmts];
    while let Some(stmts) = work.pop() {
        let mut names = Vec::new();
        inline::operand_names(stmts, true, &|_| true, &mut names);
        for n in names {
            if is_static(n) {
                kept.insert(n);
            } else if let Some(f) = functions.get(n)
                && seen.insert(n)
            {
                work.push(&f.body.as_ref().expect("a definition").stmts);
            }
        }
    }
    let mut kept: Vec<String> = kept.into_iter().map(str::to_string).collect();
    kept.sort_unstable();
    Some(kept)
}

/// [`plan`], with the module's `.shared` variables laid out in `window` (a subroutine's: after
/// the calling kernel's own variables, [`FrameInfo::own_shared_bytes`], those it keeps).
fn plan_at<'a>(
    f: &'a ast::Function,
    globals: &FxHashMap<String, (Sym, Decl)>,
    window: &SharedWindow,
) -> Plan<'a> {
    let shared_base = window.base;
    let mut p = Plan {
        scopes: vec![Scope::default()],
        blocks: vec![PlannedBlock::default()],
        order: vec![BlockId(0)],
        ssa: SsaBuilder::new(0),
        frame: FrameInfo::default(),
        diags: Vec::new(),
        explicit_cluster: f
            .directives
            .iter()
            .any(|d| d.name.text == ".explicitcluster"),
        bank4: Vec::new(),
        subroutines: FxHashSet::default(),
        fixed_convention: FxHashSet::default(),
        abs_calls: FxHashSet::default(),
        sub_params: Vec::new(),
        sub_results: Vec::new(),
        refused_loop_phis: FxHashSet::default(),
        failed_loop_phis: Vec::new(),
    };
    // Module scope: globals and functions. Module-level `.shared` variables are placed once the
    // body's own `.shared` variables are (below), as ptxas lays out a kernel's window: the
    // kernel's variables first, then the module's, each in declaration order, then the
    // unsized `.extern .shared` arrays (dynamic shared memory) after all static ones — probe:
    // `.shared a[3]; .extern dyn[] (.align 8); .shared c[2]` and in the kernel `b[5]; d[1]`
    // give b 0x0, d 0x14, a 0x18, c 0x24, dyn 0x30.
    let mut module_shared: Vec<(String, u32, u32)> = Vec::new();
    let mut names: Vec<(&String, &(Sym, Decl))> = globals.iter().collect();
    names.sort_by_key(|(_, (_, s))| s.1.span.start);
    for (name, (sym, decl)) in names {
        if let Sym::Shared { .. } = sym {
            let (size, align) = object_layout(&decl.0, &decl.1);
            module_shared.push((name.clone(), size, align));
        }
        p.scopes[0].syms.insert(name.clone(), sym.clone());
    }
    // Parameters: entry parameters live in constant bank 0, in order, each at a multiple of its
    // alignment *in the bank* (the block starts at 0x210, a multiple of 16 only): pyptx
    // `fa_ws_pingpong`'s `.param .align 64 .b8 param_4[128]` after 0x18 bytes is at offset 0x30,
    // c[0x0][0x240] (ptxas's EIATTR_KPARAM_INFO; `runtime_abi::param::layout`).
    let params = Scope {
        parent: Some(0),
        ..Scope::default()
    };
    p.scopes.push(params);
    let mut offset = 0u32;
    for prm in f.params.iter().flatten() {
        let (size, align) = object_layout(&prm.attrs, &prm.decl);
        match (f.kind, prm.space) {
            (FunctionKind::Entry, _) => {
                offset = (PARAM_BASE + offset).next_multiple_of(align.max(1)) - PARAM_BASE;
                p.scopes[1].syms.insert(
                    prm.decl.name.text.to_string(),
                    Sym::Param {
                        cbank_offset: PARAM_BASE + offset,
                        size,
                    },
                );
                offset += size;
            }
            (FunctionKind::Func, Space::Reg) => declare_regs(&mut p, 1, &prm.attrs, &prm.decl),
            (FunctionKind::Func, _) => {
                p.scopes[1]
                    .syms
                    .insert(prm.decl.name.text.to_string(), Sym::FuncParam);
            }
        }
    }
    for r in f.returns.iter().flatten() {
        if r.space == Space::Reg {
            // A subroutine's results (`inline::subroutine_body`), returned in registers.
            declare_regs(&mut p, 1, &r.attrs, &r.decl);
            continue;
        }
        p.scopes[1]
            .syms
            .insert(r.decl.name.text.to_string(), Sym::FuncParam);
    }
    p.frame.param_bytes = offset;
    let body = f.body.as_ref().expect("a definition");
    let mut cur = BlockId(0);
    plan_block(&mut p, &body.stmts, 1, &mut cur);
    // A subroutine's window starts with its kernel's own variables (a subroutine declares
    // none: `driver::hoist_function_globals` moved them to the module, or it is inlined).
    p.frame.shared_bytes += shared_base;
    p.frame.own_shared_bytes = p.frame.shared_bytes;
    // The module's `.shared` variables after the kernel's; unsized (dynamic) arrays last.
    let (mut statics, dynamic): (Vec<_>, Vec<_>) = module_shared
        .into_iter()
        .partition(|(_, size, _)| *size > 0);
    // A kernel keeps only the module's sized variables its instructions name, still in
    // declaration order, as ptxas does (probe `.shared a; .shared b[1024]; .shared c` with a
    // kernel naming c then b, b's address unused: b at 0x0, c at 0x400, a dropped, a
    // 0x804-byte `.nv.shared`; one naming none has no section; the same under `-g`). Its own
    // variables and the unsized `.extern` arrays stay. A kernel with a `call` keeps those it
    // or a function it reaches names ([`kept_shared`]), and its subroutines are lowered with
    // the same window ([`Lowered::subroutine_layouts`]).
    if let Some(kept) = &window.kept {
        statics.retain(|(name, _, _)| kept.contains(name));
        p.frame.kept_shared = Some(kept.clone());
    } else if !statics.is_empty()
        && f.kind == FunctionKind::Entry
        && shared_base == 0
        && !inline::has_call(&body.stmts)
    {
        let mut named = Vec::new();
        let is_static = |n: &str| statics.iter().any(|(s, _, _)| s == n);
        inline::operand_names(&body.stmts, true, &is_static, &mut named);
        let named: FxHashSet<&str> = named.into_iter().collect();
        statics.retain(|(name, _, _)| named.contains(name.as_str()));
    }
    let mut next = p.frame.shared_bytes;
    let n_static = statics.len();
    p.frame.dynamic_shared = !dynamic.is_empty();
    for (k, (name, size, align)) in statics.iter().chain(dynamic.iter()).enumerate() {
        p.frame.shared_align = p.frame.shared_align.max(*align);
        // Dynamic shared memory starts 16-byte aligned (ptxas: `shared_unify_local`'s 8 static
        // bytes give a 0x410-byte `.nv.shared` section and the extern array at 0x410).
        let align = if k >= n_static {
            (*align).max(16)
        } else {
            *align
        };
        next = next.next_multiple_of(align.max(1));
        p.scopes[0].syms.insert(
            name.clone(),
            Sym::Shared {
                offset: SHARED_BASE + next,
            },
        );
        next += size;
    }
    p.frame.shared_bytes = statics
        .iter()
        .fold(p.frame.shared_bytes, |n, (_, size, align)| {
            n.next_multiple_of((*align).max(1)) + size
        });
    into_layout_order(&mut p);
    predicate_uniform_regions(&mut p);
    // Predecessors.
    p.ssa.preds = vec![Vec::new(); p.blocks.len()];
    for (i, b) in p.blocks.iter().enumerate() {
        let from = BlockId(i as u32);
        for s in b.succs.iter().chain(b.fallthrough.iter()) {
            let preds = &mut p.ssa.preds[s.0 as usize];
            if !preds.contains(&from) {
                preds.push(from);
            }
        }
    }
    p
}

/// Renumbers the blocks so that their numbers follow the source order (label blocks are made
/// when their scope opens, before the blocks that precede them in the text).
fn into_layout_order(p: &mut Plan<'_>) {
    let mut new_of = vec![u32::MAX; p.blocks.len()];
    for (new, old) in p.order.iter().enumerate() {
        if new_of[old.0 as usize] == u32::MAX {
            new_of[old.0 as usize] = new as u32;
        }
    }
    // Blocks never entered (none in practice) go last.
    let unentered = new_of.iter_mut().filter(|s| **s == u32::MAX);
    for (next, slot) in (p.order.len() as u32..).zip(unentered) {
        *slot = next;
    }
    let map = |b: BlockId| BlockId(new_of[b.0 as usize]);
    for scope in &mut p.scopes {
        for b in scope.labels.values_mut() {
            *b = map(*b);
        }
    }
    let mut blocks: Vec<(u32, PlannedBlock<'_>)> = std::mem::take(&mut p.blocks)
        .into_iter()
        .enumerate()
        .map(|(i, mut b)| {
            b.succs = b.succs.iter().map(|s| map(*s)).collect();
            b.fallthrough = b.fallthrough.map(map);
            (new_of[i], b)
        })
        .collect();
    blocks.sort_by_key(|(n, _)| *n);
    p.blocks = blocks.into_iter().map(|(_, b)| b).collect();
}

/// Replaces a divergent branch around a block of `mbarrier.init`s by predication, as ptxas does:
/// `@p bra L; mbarrier.init …; L:` runs the block under `@!p`, so that the `SYNCS.EXCH` of each
/// `mbarrier.init` takes the uniform guard `VOTEU.ALL UPn, p` … `@!UPn` (`isel/uniform.rs`,
/// `Cx::uniform_guard`) instead of a branch with a convergence barrier. ptxas:
/// `tests/kernels/mbarrier_bulk_copy.ptx` (`VOTEU.ALL UP0, P0` at 0x70 and 0xc0, `@!UP0
/// SYNCS.EXCH.64`, both VOTEUs in `EIATTR_INT_WARP_WIDE_INSTR_OFFSETS`) and the probe
/// `notes/probes/00_abi/cluster_kernel` (`VOTEU.ALL UP0, P1` … `@!UP0 SYNCS.EXCH.64`).
///
/// The block must be reached only by falling through from the branch, fall through to `L`, and
/// hold only unguarded `mbarrier.init`s (one at least), `fence.mbarrier_init`s and `mov`s, in the
/// branch's scope. The `mov`s run unguarded (speculated), which is why each must write a register
/// that nothing outside the block names: the value the block computes is then used only inside it.
fn predicate_uniform_regions(p: &mut Plan<'_>) {
    // The opcode with its modifiers (`mbarrier.init.shared::cta.b64`).
    let spelled = |i: &ast::Instruction| {
        i.modifiers
            .iter()
            .fold(i.opcode.text.to_string(), |s, m| s + m.text.as_str())
    };
    fn names_in<'a>(blocks: &[PlannedBlock<'a>]) -> FxHashMap<&'a str, u32> {
        let mut uses = FxHashMap::default();
        for b in blocks {
            for &(ins, _) in &b.instrs {
                isel::count_names_of(ins, &mut uses);
            }
        }
        uses
    }
    let mut all: Option<FxHashMap<&str, u32>> = None;
    for a in 0..p.blocks.len() {
        let Some(&(bra, scope)) = p.blocks[a].instrs.last() else {
            continue;
        };
        let (Some(g), [target]) = (&bra.guard, p.blocks[a].succs.as_slice()) else {
            continue;
        };
        let Some(f) = p.blocks[a].fallthrough else {
            continue;
        };
        let region = &p.blocks[f.0 as usize];
        let convertible = bra.opcode.text == "bra"
            && !bra.modifiers.iter().any(|m| m.text == ".uni")
            && f != *target
            && region.label.is_none()
            && region.succs.is_empty()
            && region.fallthrough == Some(*target)
            && region.instrs.iter().all(|(i, s)| {
                // In the branch's scope, so that the guard names the same predicate.
                *s == scope
                    && i.guard.is_none()
                    && (i.opcode.text == "mov"
                        || ["mbarrier.init", "fence.mbarrier_init"]
                            .iter()
                            .any(|o| spelled(i).starts_with(o)))
            })
            && region
                .instrs
                .iter()
                .any(|(i, _)| spelled(i).starts_with("mbarrier.init"));
        if !convertible {
            continue;
        }
        // Every `mov`'s destination is named only inside the block (and is not the guard).
        let inside = names_in(std::slice::from_ref(region));
        let all = all.get_or_insert_with(|| names_in(&p.blocks));
        let private = region.instrs.iter().all(|(i, _)| {
            i.opcode.text != "mov"
                || match i.operands.first() {
                    Some(ast::Operand::Expr(Expr::Name { name, .. })) => {
                        name.text != g.pred.text
                            && inside.get(name.text.as_str()) == all.get(name.text.as_str())
                    }
                    _ => false,
                }
        });
        if !private {
            continue;
        }
        let guard = ast::Guard {
            negated: !g.negated,
            ..(**g).clone()
        };
        p.blocks[a].instrs.pop();
        p.blocks[a].succs.clear();
        p.blocks[f.0 as usize].guard = Some(guard);
    }
}

fn ends_unconditionally(b: &PlannedBlock<'_>) -> bool {
    b.instrs.last().is_some_and(|(i, _)| {
        i.guard.is_none()
            && matches!(
                i.opcode.text.as_str(),
                "bra" | "ret" | "exit" | "trap" | "brx"
            )
    })
}

fn declare_regs(p: &mut Plan<'_>, scope: usize, attrs: &[ast::Attr], d: &Declarator) {
    let Some(ty) = attrs.iter().find_map(|a| Ty::parse(&a.word.text)) else {
        return;
    };
    let vector = attrs
        .iter()
        .find_map(|a| {
            a.word
                .text
                .strip_prefix(".v")
                .and_then(|n| n.parse::<u32>().ok())
        })
        .unwrap_or(1);
    let (class, words) = reg_shape(ty);
    match d.range.as_ref().and_then(eval_const) {
        Some(n) => {
            let first = p.ssa.vars.len() as u32;
            for i in 0..n as u32 {
                p.ssa.new_var(VarInfo {
                    class,
                    words: words * vector as u8,
                    name: format!("{}{i}", d.name.text).into(),
                });
            }
            p.scopes[scope]
                .families
                .push((d.name.text.to_string(), first, n as u32, ty));
        }
        None => {
            // A vector register `.reg .v4 .f32 %v` is one variable of 4 × the element words.
            let var = p.ssa.new_var(VarInfo {
                class,
                words: words * vector as u8,
                name: d.name.text.as_str().into(),
            });
            p.scopes[scope]
                .regs
                .insert(d.name.text.to_string(), (var, ty));
        }
    }
}

fn plan_block<'a>(p: &mut Plan<'a>, stmts: &'a [Stmt], parent: usize, cur: &mut BlockId) {
    let scope = p.scopes.len();
    p.scopes.push(Scope {
        parent: Some(parent),
        ..Scope::default()
    });
    // Labels are visible in their whole block: give each a block first.
    for s in stmts {
        if let Stmt::Label(n) = s {
            p.blocks.push(PlannedBlock {
                label: Some(n.text.to_string()),
                ..PlannedBlock::default()
            });
            let id = BlockId(p.blocks.len() as u32 - 1);
            p.scopes[scope].labels.insert(n.text.to_string(), id);
        }
    }
    for s in stmts {
        match s {
            Stmt::Var(v) => match v.space {
                Space::Reg => {
                    for d in &v.decls {
                        declare_regs(p, scope, &v.attrs, d);
                    }
                }
                Space::Shared => {
                    for d in &v.decls {
                        let (size, align) = object_layout(&v.attrs, d);
                        let off = p.frame.shared_bytes.next_multiple_of(align.max(1));
                        p.frame.shared_bytes = off + size;
                        p.frame.shared_align = p.frame.shared_align.max(align);
                        p.scopes[scope].syms.insert(
                            d.name.text.to_string(),
                            Sym::Shared {
                                offset: SHARED_BASE + off,
                            },
                        );
                    }
                }
                Space::Local => {
                    for d in &v.decls {
                        let (size, align) = object_layout(&v.attrs, d);
                        let off = p.frame.local_bytes.next_multiple_of(align.max(1));
                        p.frame.local_bytes = off + size;
                        p.scopes[scope]
                            .syms
                            .insert(d.name.text.to_string(), Sym::Local { offset: off });
                    }
                }
                Space::Param => {
                    for d in &v.decls {
                        p.scopes[scope]
                            .syms
                            .insert(d.name.text.to_string(), Sym::FuncParam);
                    }
                }
                _ => {}
            },
            Stmt::Label(n) => {
                let id = p.scopes[scope].labels[n.text.as_str()];
                let here = &mut p.blocks[cur.0 as usize];
                if !ends_unconditionally(here) {
                    here.fallthrough = Some(id);
                }
                *cur = id;
                p.order.push(id);
            }
            Stmt::Instr(i) => {
                p.blocks[cur.0 as usize].instrs.push((i, scope));
                let op = i.opcode.text.as_str();
                let ends = matches!(op, "bra" | "ret" | "exit" | "trap" | "brx");
                if !ends {
                    continue;
                }
                if op == "bra"
                    && let Some(target) = i
                        .operands
                        .first()
                        .and_then(|o| match o {
                            ast::Operand::Expr(e) => e.as_name(),
                            _ => None,
                        })
                        .and_then(|n| p.label(scope, &n.text))
                {
                    p.blocks[cur.0 as usize].succs.push(target);
                }
                // A new block follows; a guarded branch or exit falls through to it.
                p.blocks.push(PlannedBlock::default());
                let next = BlockId(p.blocks.len() as u32 - 1);
                if i.guard.is_some() {
                    p.blocks[cur.0 as usize].fallthrough = Some(next);
                }
                *cur = next;
                p.order.push(next);
            }
            Stmt::Block(b) => plan_block(p, &b.stmts, scope, cur),
            Stmt::Pragma(_) | Stmt::Loc(_) | Stmt::CallPrototype(_) | Stmt::Targets(_) => {}
        }
    }
}

/// Lowers one function: plan, then select block by block. Selection takes a loop-header PHI
/// that feeds an mbarrier address to be its value from before the loop when it cannot see the
/// back edges yet (`isel/uniform.rs`); when the loop turns out to change it (a ring of
/// mbarriers indexed by the iteration, pyptx/fa_ws_pingpong), the function is selected again
/// without that assumption, and the address is a per-thread one (`[R+URZ]`).
pub fn lower_function(
    f: &ast::Function,
    globals: &FxHashMap<String, (Sym, Decl)>,
    bank4: &mut Vec<String>,
    subroutines: &FxHashSet<String>,
    fixed: &FxHashSet<String>,
) -> Result<(Function, FrameInfo), Vec<Diagnostic>> {
    lower_function_at(
        f,
        globals,
        bank4,
        (subroutines, fixed, &FxHashSet::default()),
        &SharedWindow::default(),
    )
}

/// The `.func`s a function calls as subroutines, those of them with the fixed convention, and
/// those called with `CALL.ABS` in sections of their own (debug builds).
type CallSets<'a> = (
    &'a FxHashSet<String>,
    &'a FxHashSet<String>,
    &'a FxHashSet<String>,
);

/// [`lower_function`] with the module's `.shared` variables in `window` ([`plan_at`]).
fn lower_function_at(
    f: &ast::Function,
    globals: &FxHashMap<String, (Sym, Decl)>,
    bank4: &mut Vec<String>,
    calls: CallSets<'_>,
    window: &SharedWindow,
) -> Result<(Function, FrameInfo), Vec<Diagnostic>> {
    let mut refused = FxHashSet::default();
    loop {
        let mut table = bank4.clone();
        match lower_function_once(f, globals, &mut table, calls, &refused, window) {
            Ok(r) => {
                *bank4 = table;
                return Ok(r);
            }
            Err((diags, failed)) => {
                let before = refused.len();
                refused.extend(failed);
                if refused.len() == before {
                    *bank4 = table;
                    return Err(diags);
                }
            }
        }
    }
}

/// The shared-memory spill area of a kernel that asks for one with `.pragma
/// "enable_smem_spilling";` (PTX 9.0; in its body or among its directives; any other pragma
/// string changes nothing, as with ptxas). The area starts after the static `.shared` data,
/// 16-byte aligned (ptxas: 200 bytes of variables put it at `0x4d0`), and has a row per warp
/// of the CTA: `.maxntid`/`.reqntid` give their warps; without them, as many warps as one SM
/// holds under the register budget, `min(64, 64512 / (32 × .maxnreg))` (ptxas under `.maxnreg`
/// 24, 32, 40, 48, 56: 64, 63, 50, 42, 36 rows; `docs/passes/regalloc.md`). A kernel with
/// dynamic shared memory spills to local memory only: its `.extern .shared` arrays start where
/// the area would.
fn smem_spill(f: &ast::Function, frame: &FrameInfo, max_regs: u32) -> Option<mir::SmemSpill> {
    let is_pragma = |d: &ast::Directive| {
        d.name.text == ".pragma"
            && d.strings
                .iter()
                .any(|s| s.text.trim_matches('"') == "enable_smem_spilling")
    };
    let in_body = f.body.as_ref().is_some_and(|b| {
        b.stmts
            .iter()
            .any(|s| matches!(s, Stmt::Pragma(d) if is_pragma(d)))
    });
    if f.kind != FunctionKind::Entry
        || frame.dynamic_shared
        || !(in_body || f.directives.iter().any(is_pragma))
    {
        return None;
    }
    let threads = f
        .directives
        .iter()
        .find(|d| matches!(d.name.text.as_ref(), ".maxntid" | ".reqntid"))
        .map(|d| {
            d.args
                .iter()
                .map(|a| const_value(a).unwrap_or(1).clamp(1, 1024) as u32)
                .product::<u32>()
        });
    let warps = match threads {
        Some(n) => n.div_ceil(32).clamp(1, 32),
        None => (64512 / (32 * max_regs.max(1))).clamp(1, 64),
    };
    Some(mir::SmemSpill {
        start: (SHARED_BASE + frame.shared_bytes).next_multiple_of(16),
        warps,
        slots: 0,
    })
}

/// One attempt of [`lower_function`], with the loop-header PHIs selection must not assume; on
/// failure the diagnostics and the assumptions found wrong.
#[allow(clippy::type_complexity)]
fn lower_function_once(
    f: &ast::Function,
    globals: &FxHashMap<String, (Sym, Decl)>,
    bank4: &mut Vec<String>,
    (subroutines, fixed, abs): CallSets<'_>,
    refused: &FxHashSet<(u32, u32)>,
    window: &SharedWindow,
) -> Result<(Function, FrameInfo), (Vec<Diagnostic>, Vec<(u32, u32)>)> {
    let mut plan = plan_at(f, globals, window);
    plan.refused_loop_phis = refused.clone();
    plan.bank4 = std::mem::take(bank4);
    plan.subroutines = subroutines.clone();
    plan.fixed_convention = fixed.clone();
    plan.abs_calls = abs.clone();
    if f.kind == FunctionKind::Func {
        let names = |l: &Option<Vec<ast::ParamDecl>>| -> Vec<ast::Name> {
            l.iter().flatten().map(|p| p.decl.name.clone()).collect()
        };
        plan.sub_params = names(&f.params);
        plan.sub_results = names(&f.returns);
    }
    let mut mf = Function::new(f.name.text.to_string(), f.kind == FunctionKind::Entry);
    mf.span = f.name.span;
    mf.caller_saved = f.kind == FunctionKind::Func && !fixed.contains(f.name.text.as_str());
    // `.maxnreg N` bounds the registers (values above 255 are ignored, as ptxas does).
    if let Some(n) = f
        .directives
        .iter()
        .find(|d| d.name.text == ".maxnreg")
        .and_then(|d| d.args.first())
        .and_then(const_value)
        .filter(|n| (1..=255).contains(n))
    {
        mf.max_regs = n as u32;
        // `.maxnreg` is the launch allocation; each `setmaxnreg` changes the limit for the code
        // after it, which the register allocator follows region by region
        // (`passes/regalloc/limits.rs`). The count ptxas reports stays the `.maxnreg` value
        // (`emit/build.rs`).
        mf.setmaxnreg = body_has_setmaxnreg(f);
    }
    for b in plan.blocks.iter().skip(1) {
        mf.new_block(b.label.clone());
    }
    mf.blocks[0].label = plan.blocks[0].label.clone();
    mf.frame_bytes = plan.frame.local_bytes;
    mf.smem_spill = smem_spill(f, &plan.frame, mf.max_regs);
    isel::select(&mut plan, &mut mf);
    *bank4 = std::mem::take(&mut plan.bank4);
    if !plan.diags.is_empty() {
        return Err((plan.diags, plan.failed_loop_phis));
    }
    Ok((mf, plan.frame))
}

/// Whether a function uses `setmaxnreg` anywhere.
fn body_has_setmaxnreg(f: &ast::Function) -> bool {
    fn any(stmts: &[ast::Stmt]) -> bool {
        stmts.iter().any(|s| match s {
            ast::Stmt::Instr(i) => i.opcode.text == "setmaxnreg",
            ast::Stmt::Block(b) => any(&b.stmts),
            _ => false,
        })
    }
    f.body.as_ref().is_some_and(|b| any(&b.stmts))
}

/// A constant expression's value.
pub fn const_value(e: &Expr) -> Option<i64> {
    eval_const(e).map(|v| v as i64)
}
