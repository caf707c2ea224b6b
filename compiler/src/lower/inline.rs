//! Calls to module functions, on the syntax tree, before a kernel is planned.
//!
//! As ptxas does, every `.func` a kernel calls is compiled as a subroutine ([`subroutines`],
//! [`subroutine_body`]) and the calls stay calls (`CALL.REL`, `lower/isel/call.rs`). The
//! functions whose calls the calling convention cannot pass ([`unpassable`], decided here,
//! before anything is lowered) are inlined instead: every direct call to one is replaced by the
//! callee's body, which gives the same results. The call
//!
//! ```ptx
//! { .param .b32 param0; st.param.b32 [param0], %r1;
//!   .param .b32 retval0;
//!   call.uni (retval0), f, (param0);
//!   ld.param.b32 %r2, [retval0]; }
//! ```
//!
//! becomes a block holding f's body with every name f declares renamed apart
//! (`%x` → `%x__in3__`, family members `%r5` → `%r__in3__5`, labels likewise), its `ret` a
//! branch to a label after the body, and its parameters bound to the call's arguments:
//!
//! * a `.param` parameter *is* the caller's argument: the callee's `ld.param [a]` reads the
//!   caller's `param0`. Parameters declared inside a body (the arguments and return slots of
//!   call sites) become `.local` variables, and `ld.param`/`st.param` on them `ld.local`/
//!   `st.local` — so byte offsets (`[param0+4]`) and arrays work unchanged.
//! * a `.reg` parameter (`.func (.reg .b32 r) f (.reg .b32 a)`) is a register: the call moves the
//!   argument into it before the body and the result out after it.
//!
//! A call to a function the module declares but does not define (`.extern .func vprintf`,
//! `__assertfail`) stays a call: [`Inliner::extern_call`] turns its `.param` argument and return
//! slots into registers (`st.param [param0+0], %x` → `mov param0, %x`), and instruction
//! selection passes them in the registers of ptxas's calling convention
//! (`lower/isel/call.rs`).
//!
//! Recursive and address-taken functions are never inlined: [`subroutines`] finds them, and
//! they are compiled as functions of their own ([`subroutine_body`]) that calls reach with
//! `CALL.REL` (`lower/isel/call.rs`, `lower/link.rs`). Indirect calls (through a register and a
//! prototype) are errors that name the call.

use crate::diag::Diagnostic;
use crate::frontend::ast::*;
use crate::frontend::check::BodyFacts;
use rustc_hash::{FxHashMap, FxHashSet};

/// How deep calls may nest when inlined.
const MAX_DEPTH: usize = 32;

/// Returns `kernel` with every call inlined (borrowed unchanged when it has no call and no
/// `.param` variable, which saves copying a large body). `facts` are the checker's findings
/// about the body ([`crate::frontend::check::ModuleInfo::bodies`]); without them the body is
/// walked to find out.
pub fn inline_calls<'k>(
    kernel: &'k Function,
    module: &Module,
    subroutines: &FxHashSet<String>,
    facts: Option<BodyFacts>,
) -> Result<std::borrow::Cow<'k, Function>, Vec<Diagnostic>> {
    let rewrite = match facts {
        Some(f) => f.calls || f.param_vars,
        None => kernel
            .body
            .as_ref()
            .is_some_and(|b| needs_rewrite(&b.stmts)),
    };
    if !rewrite {
        return Ok(std::borrow::Cow::Borrowed(kernel));
    }
    let funcs: FxHashMap<&str, &Function> = module
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Function(f) if f.body.is_some() => Some((f.name.text.as_str(), &**f)),
            _ => None,
        })
        .collect();
    let mut externs: FxHashSet<&str> = module
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Function(f)
                if f.body.is_none()
                    && f.kind == FunctionKind::Func
                    && !funcs.contains_key(f.name.text.as_str()) =>
            {
                Some(f.name.text.as_str())
            }
            _ => None,
        })
        .collect();
    // Subroutines are called like external functions (`lower/isel/call.rs`: CALL.REL).
    externs.extend(subroutines.iter().map(String::as_str));
    let mut inl = Inliner {
        funcs,
        externs,
        next: 0,
        diags: Vec::new(),
        stack: vec![kernel.name.text.to_string()],
    };
    let mut out = kernel.clone();
    if let Some(body) = &mut out.body {
        let params = body_params(&body.stmts);
        inl.block(&mut body.stmts, 0, &params);
    }
    if inl.diags.is_empty() {
        Ok(std::borrow::Cow::Owned(out))
    } else {
        Err(inl.diags)
    }
}

/// The module's `.func`s that ptxc compiles as subroutines (`CALL.REL`/`RET.REL`) instead of
/// inlining: the recursive ones, on a cycle of direct calls (`tests/kernels/device_calls.ptx`),
/// and those whose address is taken (zluda `func_ptr`), which cannot be inlined; with
/// `every_called`, also every other `.func` some function calls, as ptxas does
/// (`tests/sass-probes/ptx/funcs.ptx`: ptxas never inlines), except the ones whose calls the
/// calling convention cannot pass ([`unpassable`]), which are inlined and give the same
/// results. Without `every_called` ptxc inlines all but the recursive and address-taken ones.
pub fn subroutines(module: &Module, every_called: bool) -> FxHashSet<String> {
    let funcs: FxHashMap<&str, &Function> = module
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Function(f) if f.body.is_some() && f.kind == FunctionKind::Func => {
                Some((f.name.text.as_str(), &**f))
            }
            _ => None,
        })
        .collect();
    fn callees<'a>(stmts: &'a [Stmt], out: &mut Vec<&'a str>) {
        for s in stmts {
            match s {
                Stmt::Instr(i) if i.opcode.text == "call" => {
                    out.extend(call_target(i).map(|n| n.text.as_str()));
                }
                Stmt::Block(b) => callees(&b.stmts, out),
                _ => {}
            }
        }
    }
    let edges: FxHashMap<&str, Vec<&str>> = funcs
        .iter()
        .map(|(n, f)| {
            let mut out = Vec::new();
            callees(&f.body.as_ref().expect("a definition").stmts, &mut out);
            out.retain(|c| funcs.contains_key(c));
            (*n, out)
        })
        .collect();
    let mut out = FxHashSet::default();
    if funcs.is_empty() {
        return out;
    }
    if every_called {
        // Called from a kernel or from a function (a function no kernel reaches is not
        // lowered at all).
        let mut called = Vec::new();
        for i in &module.items {
            if let Item::Function(f) = i
                && let Some(b) = &f.body
            {
                callees(&b.stmts, &mut called);
            }
        }
        let inlined = unpassable(module);
        called.retain(|c| funcs.contains_key(c) && !inlined.contains(*c));
        out.extend(
            called
                .into_iter()
                .filter(|c| funcs.contains_key(c))
                .map(str::to_string),
        );
    }
    // A function whose address is taken (zluda `func_ptr`: `mov.u64 %rd, foobar`) needs code of
    // its own, at an address.
    for i in &module.items {
        if let Item::Function(f) = i
            && let Some(b) = &f.body
        {
            let mut named = Vec::new();
            address_taken(&b.stmts, &|n| funcs.contains_key(n), &mut named);
            out.extend(named.into_iter().map(str::to_string));
        }
    }
    for &start in funcs.keys() {
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        let mut work: Vec<&str> = edges[start].clone();
        while let Some(n) = work.pop() {
            if n == start {
                out.insert(start.to_string());
                break;
            }
            if seen.insert(n) {
                work.extend(edges[n].iter().copied());
            }
        }
    }
    out
}

/// The module's `.func`s whose calls the calling convention of subroutines
/// (`lower/isel/call.rs`, `convention_slot`) cannot pass, decided on the syntax tree before
/// anything is lowered: [`subroutines`] inlines them, so that a call to one still works, and
/// every other error of a subroutine is a real one. A function is in the set when
///
/// * a parameter or result is a `.param` array or vector (`.param .align 8 .b8 x[16]`), or
///   its body reads or writes a `.param` parameter other than whole and at offset 0
///   (`ld.param.b32 %r, [x+4]`): they are passed in registers, one value each;
/// * a parameter or result cannot go in registers (more than four of them), or its parameters
///   or its results need registers past R15 (ptxas's stack arguments);
/// * a call to it is guarded (`@%p call f`);
/// * its body declares a `.shared` variable that `driver::hoist_function_globals` left in it
///   (a name used elsewhere too, or a variable of an inner block): the kernel that inlines it
///   lays it out.
///
/// A predicate live across a call is no reason: the caller saves it (`isel/call.rs`,
/// `save_predicates`).
pub fn unpassable(module: &Module) -> FxHashSet<String> {
    use super::isel::call::{FIRST_ARG, LAST_ARG, convention_slot};
    fn declares_shared(stmts: &[Stmt]) -> bool {
        stmts.iter().any(|s| match s {
            Stmt::Var(v) => v.space == Space::Shared,
            Stmt::Block(b) => declares_shared(&b.stmts),
            _ => false,
        })
    }
    // Whether a parameter list fits R4–R15, each value in its slot.
    fn fits(list: &Option<Vec<ParamDecl>>) -> bool {
        let mut next = FIRST_ARG;
        for p in list.iter().flatten() {
            let vector = p.attrs.iter().find_map(|a| {
                a.word
                    .text
                    .strip_prefix(".v")
                    .and_then(|n| n.parse::<u8>().ok())
            });
            if p.space == Space::Param && (vector.is_some() || !p.decl.dims.is_empty()) {
                return false;
            }
            let Some(ty) = p
                .attrs
                .iter()
                .find_map(|a| crate::frontend::types::Ty::parse(&a.word.text))
            else {
                return false;
            };
            let (class, words) = super::reg_shape(ty);
            let Some((words, align)) = convention_slot(class, words * vector.unwrap_or(1)) else {
                return false;
            };
            next = next.next_multiple_of(align) + words;
            if next > LAST_ARG + 1 {
                return false;
            }
        }
        true
    }
    // Whether every `ld.param`/`st.param` of a `.param` parameter is whole and at offset 0.
    fn whole_accesses(stmts: &[Stmt], names: &[&str]) -> bool {
        stmts.iter().all(|s| match s {
            Stmt::Block(b) => whole_accesses(&b.stmts, names),
            Stmt::Instr(ins) if ins.opcode.text == "ld" || ins.opcode.text == "st" => {
                let op = ins.opcode.text.as_str();
                let addr = if op == "ld" {
                    ins.operands.get(1)
                } else {
                    ins.operands.first()
                };
                match addr.and_then(addressed) {
                    Some(n) if names.contains(&n) => param_access(s, op, n),
                    _ => true,
                }
            }
            _ => true,
        })
    }
    fn guarded_calls(stmts: &[Stmt], out: &mut FxHashSet<String>) {
        for s in stmts {
            match s {
                Stmt::Instr(i) if i.opcode.text == "call" && i.guard.is_some() => {
                    out.extend(call_target(i).map(|n| n.text.to_string()));
                }
                Stmt::Block(b) => guarded_calls(&b.stmts, out),
                _ => {}
            }
        }
    }
    let mut out = FxHashSet::default();
    for item in &module.items {
        let Item::Function(f) = item else { continue };
        let Some(body) = &f.body else { continue };
        guarded_calls(&body.stmts, &mut out);
        if f.kind != FunctionKind::Func {
            continue;
        }
        let params: Vec<&str> = [&f.params, &f.returns]
            .into_iter()
            .flatten()
            .flatten()
            .filter(|p| p.space == Space::Param)
            .map(|p| p.decl.name.text.as_str())
            .collect();
        if !fits(&f.params)
            || !fits(&f.returns)
            || !whole_accesses(&body.stmts, &params)
            || declares_shared(&body.stmts)
        {
            out.insert(f.name.text.to_string());
        }
    }
    out
}

/// The functions (names for which `is_func` holds) used as operands of instructions other than
/// `call`, in order of mention: their addresses are taken.
fn address_taken<'a>(stmts: &'a [Stmt], is_func: &dyn Fn(&str) -> bool, out: &mut Vec<&'a str>) {
    operand_names(stmts, false, is_func, out);
}

/// The names for which `wanted` holds that instructions name in their operands (`sym`,
/// `[sym+4]`, `sym+8`, a `call`'s argument list), in order of mention, repeats included;
/// `call` instructions only when `with_calls`. Every operand of every instruction is visited,
/// so nothing is copied.
pub(super) fn operand_names<'a>(
    stmts: &'a [Stmt],
    with_calls: bool,
    wanted: &dyn Fn(&str) -> bool,
    out: &mut Vec<&'a str>,
) {
    fn expr<'a>(e: &'a Expr, wanted: &dyn Fn(&str) -> bool, out: &mut Vec<&'a str>) {
        match e {
            Expr::Name { name, .. } if wanted(&name.text) => out.push(&name.text),
            Expr::Binary { lhs, rhs, .. } => {
                expr(lhs, wanted, out);
                expr(rhs, wanted, out);
            }
            _ => {}
        }
    }
    fn operand<'a>(o: &'a Operand, wanted: &dyn Fn(&str) -> bool, out: &mut Vec<&'a str>) {
        match o {
            Operand::Expr(e) => expr(e, wanted, out),
            Operand::List(items, _) | Operand::Address(items, _) => {
                items.iter().for_each(|i| operand(i, wanted, out));
            }
            _ => {}
        }
    }
    for s in stmts {
        match s {
            Stmt::Instr(i) if with_calls || i.opcode.text != "call" => {
                i.operands.iter().for_each(|o| operand(o, wanted, out));
            }
            Stmt::Block(b) => operand_names(&b.stmts, with_calls, wanted, out),
            _ => {}
        }
    }
}

/// Whether a body has a `call` instruction (to a module function or out of the module).
pub(super) fn has_call(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Instr(i) => i.opcode.text == "call",
        Stmt::Block(b) => has_call(&b.stmts),
        _ => false,
    })
}

/// The subroutines a kernel or subroutine calls directly or takes the address of, in order of
/// first mention.
pub fn called_subroutines(f: &Function, subroutines: &FxHashSet<String>) -> Vec<String> {
    fn walk(stmts: &[Stmt], subs: &FxHashSet<String>, out: &mut Vec<String>) {
        for s in stmts {
            match s {
                Stmt::Instr(i) if i.opcode.text == "call" => {
                    if let Some(n) = call_target(i)
                        && subs.contains(n.text.as_str())
                        && !out.iter().any(|s| s.as_str() == n.text.as_str())
                    {
                        out.push(n.text.to_string());
                    }
                }
                Stmt::Block(b) => walk(&b.stmts, subs, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    if let Some(b) = &f.body {
        walk(&b.stmts, subroutines, &mut out);
        let mut named = Vec::new();
        address_taken(&b.stmts, &|n| subroutines.contains(n), &mut named);
        for n in named {
            if !out.iter().any(|o| o == n) {
                out.push(n.to_string());
            }
        }
    }
    out
}

/// A subroutine's definition made ready to be lowered as a function of its own: its `.param`
/// parameters and results become registers (`.reg` of the same type), and the body's scalar
/// `ld.param`/`st.param` of them `mov`s, so that instruction selection passes them in the
/// registers of the calling convention (`lower/isel/call.rs`). Calls in the body are inlined or
/// kept as [`inline_calls`] does for a kernel.
pub fn subroutine_body(
    f: &Function,
    module: &Module,
    subroutines: &FxHashSet<String>,
) -> Result<Function, Vec<Diagnostic>> {
    let mut out = f.clone();
    let mut names: Vec<String> = Vec::new();
    let mut diags = Vec::new();
    for list in [&mut out.params, &mut out.returns] {
        for p in list.iter_mut().flatten() {
            if p.space == Space::Param {
                if !p.decl.dims.is_empty() || p.attrs.iter().any(|a| a.word.text.starts_with(".v"))
                {
                    diags.push(Diagnostic::error(
                        p.span,
                        format!(
                            "ptxc cannot pass the array or vector parameter `{}` of the \
                             subroutine `{}` yet",
                            p.decl.name.text, f.name.text
                        ),
                    ));
                    continue;
                }
                p.space = Space::Reg;
                names.push(p.decl.name.text.to_string());
            }
        }
    }
    fn rewrite(stmts: &mut [Stmt], names: &[String], diags: &mut Vec<Diagnostic>) {
        for s in stmts.iter_mut() {
            if let Stmt::Block(b) = s {
                rewrite(&mut b.stmts, names, diags);
                continue;
            }
            let Stmt::Instr(ins) = &*s else { continue };
            let op = ins.opcode.text.to_string();
            let op = op.as_str();
            if !(op == "ld" || op == "st")
                || ins.modifiers.first().is_none_or(|m| m.text != ".param")
            {
                continue;
            }
            let addr = if op == "ld" {
                ins.operands.get(1)
            } else {
                ins.operands.first()
            };
            let Some(name) = addr.and_then(addressed).map(str::to_string) else {
                continue;
            };
            if !names.contains(&name) {
                continue;
            }
            if !param_access(s, op, &name) {
                diags.push(Diagnostic::error(
                    ins.span,
                    format!(
                        "ptxc cannot lower this `{op}.param` of `{name}` in a subroutine yet: \
                         only whole scalar accesses at offset 0 are supported"
                    ),
                ));
                continue;
            }
            let Stmt::Instr(ins) = s else { continue };
            ins.opcode.text = "mov".into();
            ins.modifiers.retain(|m| m.text != ".param");
            let reg = Operand::Expr(Expr::Name {
                name: Name {
                    text: name.into(),
                    span: ins.span,
                },
                component: None,
            });
            if op == "ld" {
                ins.operands[1] = reg;
            } else {
                ins.operands[0] = reg;
            }
        }
    }
    if let Some(b) = &mut out.body {
        rewrite(&mut b.stmts, &names, &mut diags);
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let lowered = inline_calls(&out, module, subroutines, None)?.into_owned();
    Ok(lowered)
}

/// Whether a body has anything [`Inliner::block`] rewrites: a `call` or a `.param` variable.
fn needs_rewrite(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Var(v) => v.space == Space::Param,
        Stmt::Block(b) => needs_rewrite(&b.stmts),
        Stmt::Instr(ins) => ins.opcode.text == "call",
        _ => false,
    })
}

struct Inliner<'m> {
    funcs: FxHashMap<&'m str, &'m Function>,
    /// Functions declared without a body (`.extern .func vprintf`): called, not inlined.
    externs: FxHashSet<&'m str>,
    next: usize,
    diags: Vec<Diagnostic>,
    stack: Vec<String>,
}

/// The `.param` variables declared anywhere in a body (call-site arguments and return slots).
fn body_params(stmts: &[Stmt]) -> FxHashSet<String> {
    let mut out = FxHashSet::default();
    for s in stmts {
        match s {
            Stmt::Var(v) if v.space == Space::Param => {
                out.extend(v.decls.iter().map(|d| d.name.text.to_string()));
            }
            Stmt::Block(b) => out.extend(body_params(&b.stmts)),
            _ => {}
        }
    }
    out
}

/// The callee of a direct `call`.
fn call_target(call: &Instruction) -> Option<&Name> {
    let mut ops = call.operands.iter();
    let mut first = ops.next();
    if let Some(Operand::List(..)) = first {
        first = ops.next();
    }
    match first {
        Some(Operand::Expr(e)) => e.as_name(),
        _ => None,
    }
}

/// The return and argument names of a direct `call`.
fn call_lists(call: &Instruction) -> (Vec<Name>, Vec<Name>) {
    let names = |o: &Operand| match o {
        Operand::List(items, _) => items
            .iter()
            .filter_map(|i| match i {
                Operand::Expr(e) => e.as_name().cloned(),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    match &call.operands[..] {
        [r @ Operand::List(..), _, a @ Operand::List(..), ..] => (names(r), names(a)),
        [r @ Operand::List(..), _] => (names(r), Vec::new()),
        [_, a @ Operand::List(..), ..] => (Vec::new(), names(a)),
        _ => (Vec::new(), Vec::new()),
    }
}

/// Whether `s` is a scalar `ld.param`/`st.param` (`op`) of the whole slot `name` at offset 0.
fn param_access(s: &Stmt, op: &str, name: &str) -> bool {
    let Stmt::Instr(ins) = s else { return false };
    if ins.opcode.text != op
        || ins.guard.is_some()
        || ins.modifiers.first().is_none_or(|m| m.text != ".param")
        || ins.modifiers.iter().any(|m| m.text.starts_with(".v"))
        || ins.operands.len() != 2
    {
        return false;
    }
    let addr = if op == "ld" {
        &ins.operands[1]
    } else {
        &ins.operands[0]
    };
    let Operand::Address(parts, _) = addr else {
        return false;
    };
    match parts.as_slice() {
        [Operand::Expr(Expr::Name { name: n, .. })] => n.text == name,
        [
            Operand::Expr(Expr::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
                ..
            }),
        ] => {
            lhs.as_name().is_some_and(|n| n.text == name)
                && crate::frontend::check::eval_const(rhs) == Some(0)
        }
        _ => false,
    }
}

/// The name of the object an address operand `[name(+off)]` names.
fn addressed(op: &Operand) -> Option<&str> {
    let Operand::Address(parts, _) = op else {
        return None;
    };
    match parts.first()? {
        Operand::Expr(Expr::Name { name, .. }) => Some(&name.text),
        Operand::Expr(Expr::Binary { lhs, .. }) => lhs.as_name().map(|n| n.text.as_str()),
        _ => None,
    }
}

impl Inliner<'_> {
    /// Rewrites a body in place: `.param` locals become `.local`, calls are expanded.
    fn block(&mut self, stmts: &mut [Stmt], depth: usize, params: &FxHashSet<String>) {
        self.extern_calls(stmts);
        let mut i = 0;
        while i < stmts.len() {
            match &mut stmts[i] {
                Stmt::Var(v) if v.space == Space::Param => v.space = Space::Local,
                Stmt::Block(b) => self.block(&mut b.stmts, depth, params),
                Stmt::Instr(ins) => {
                    let op = ins.opcode.text.as_str();
                    if (op == "ld" || op == "st")
                        && ins.modifiers.first().is_some_and(|m| m.text == ".param")
                    {
                        let addr = if op == "ld" {
                            ins.operands.get(1)
                        } else {
                            ins.operands.first()
                        };
                        if addr.and_then(addressed).is_some_and(|n| params.contains(n)) {
                            ins.modifiers[0].text = ".local".into();
                        }
                    }
                    if op == "call" && !self.is_extern_call(ins) {
                        let ins = ins.clone();
                        if let Some(expanded) = self.expand(&ins, depth, params) {
                            stmts[i] = Stmt::Block(Box::new(expanded));
                        }
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// The callee of a direct call, when the module declares it without a body.
    fn is_extern_call(&self, call: &Instruction) -> bool {
        call_target(call).is_some_and(|n| self.externs.contains(n.text.as_str()))
    }

    /// Rewrites every call to an external function among `stmts`: its argument and return
    /// `.param` slots, declared in the same block, become registers of the slot's type, the
    /// `st.param` into a slot a `mov` into the register, the `ld.param` out of one a `mov` out
    /// of it, and the call names the registers. A slot must be stored (loaded) once, whole,
    /// at offset 0; anything else (aggregates, vectors, partial stores) is an error.
    fn extern_calls(&mut self, stmts: &mut [Stmt]) {
        let calls: Vec<usize> = (0..stmts.len())
            .filter(|&i| {
                matches!(&stmts[i], Stmt::Instr(ins)
                    if ins.opcode.text == "call" && self.is_extern_call(ins))
            })
            .collect();
        if calls.is_empty() {
            return;
        }
        for &ci in &calls {
            let Stmt::Instr(call) = &stmts[ci] else {
                continue;
            };
            let call = call.clone();
            let name = call_target(&call)
                .map(|n| n.text.to_string())
                .unwrap_or_default();
            if call.guard.is_some() {
                self.error(
                    call.span,
                    format!("ptxc cannot lower a guarded call of `{name}` yet"),
                );
                continue;
            }
            let (rets, args) = call_lists(&call);
            // A `.reg` parameter of a module function (`.func (.reg .f32 r) f (.reg .f32 a)`,
            // called `call (%f2), f, (%f1)`) is passed as the register it names.
            let by_reg: Vec<bool> = match self.funcs.get(name.as_str()) {
                Some(f) => f
                    .returns
                    .iter()
                    .flatten()
                    .chain(f.params.iter().flatten())
                    .map(|p| p.space == Space::Reg)
                    .collect(),
                None => Vec::new(),
            };
            let slots: Vec<(&Name, bool)> = rets
                .iter()
                .map(|n| (n, false))
                .chain(args.iter().map(|n| (n, true)))
                .enumerate()
                .filter(|(k, _)| !by_reg.get(*k).copied().unwrap_or(false))
                .map(|(_, s)| s)
                .collect();
            for (slot, is_arg) in slots {
                let found = if is_arg {
                    (0..ci)
                        .rev()
                        .find(|&j| param_access(&stmts[j], "st", &slot.text))
                } else {
                    (ci + 1..stmts.len()).find(|&j| param_access(&stmts[j], "ld", &slot.text))
                };
                let declared = (0..stmts.len()).find(|&j| {
                    matches!(&stmts[j], Stmt::Var(v) if v.space == Space::Param
                        && v.decls.len() == 1 && v.decls[0].name.text == slot.text
                        && v.decls[0].dims.is_empty())
                });
                let Some(decl_at) = declared else {
                    self.error(
                        slot.span,
                        format!(
                            "ptxc cannot pass `{}` to `{name}` yet: only scalar `.param` \
                             slots declared next to the call are supported",
                            slot.text
                        ),
                    );
                    continue;
                };
                if let Stmt::Var(v) = &mut stmts[decl_at] {
                    v.space = Space::Reg;
                }
                let Some(j) = found else {
                    // A result nobody reads, or an argument never stored: the register stays
                    // undefined, which the callee may not read (ptxas passes whatever is there).
                    continue;
                };
                let Stmt::Instr(acc) = &mut stmts[j] else {
                    continue;
                };
                acc.opcode.text = "mov".into();
                acc.modifiers.retain(|m| m.text != ".param");
                let reg = Operand::Expr(Expr::Name {
                    name: slot.clone(),
                    component: None,
                });
                if is_arg {
                    acc.operands[0] = reg;
                } else {
                    acc.operands[1] = reg;
                }
            }
        }
    }

    fn error(&mut self, span: Span, msg: String) {
        self.diags.push(Diagnostic::error(span, msg));
    }

    /// The block that replaces one call.
    fn expand(
        &mut self,
        call: &Instruction,
        depth: usize,
        params_visible: &FxHashSet<String>,
    ) -> Option<Block> {
        let mut ops = call.operands.iter();
        let mut first = ops.next();
        let mut rets: Vec<Expr> = Vec::new();
        if let Some(Operand::List(items, _)) = first {
            rets = items
                .iter()
                .filter_map(|o| {
                    if let Operand::Expr(e) = o {
                        Some(e.clone())
                    } else {
                        None
                    }
                })
                .collect();
            first = ops.next();
        }
        let Some(Operand::Expr(target)) = first else {
            self.error(call.span, "ptxc cannot lower this `call` yet".into());
            return None;
        };
        let args: Vec<Expr> = match ops.next() {
            Some(Operand::List(items, _)) => items
                .iter()
                .filter_map(|o| {
                    if let Operand::Expr(e) = o {
                        Some(e.clone())
                    } else {
                        None
                    }
                })
                .collect(),
            _ => Vec::new(),
        };
        if ops.next().is_some() {
            self.error(
                call.span,
                "ptxc cannot lower indirect calls (through a prototype) yet".into(),
            );
            return None;
        }
        let Some(name) = target.as_name() else {
            self.error(target.span(), "ptxc cannot lower indirect calls yet".into());
            return None;
        };
        let Some(callee) = self.funcs.get(name.text.as_str()).copied() else {
            self.error(
                name.span,
                format!("ptxc cannot call `{}` yet: it is not defined in this module (system calls such as vprintf need the driver's ABI)", name.text),
            );
            return None;
        };
        if self.stack.iter().any(|s| s.as_str() == name.text.as_str()) || depth >= MAX_DEPTH {
            self.error(
                name.span,
                format!(
                    "ptxc cannot inline the call of `{}`: calls nest deeper than {MAX_DEPTH}",
                    name.text
                ),
            );
            return None;
        }
        if call.guard.is_some() {
            self.error(call.span, "ptxc cannot lower a guarded `call` yet".into());
            return None;
        }
        self.next += 1;
        let tag = format!("__in{}__", self.next);
        let mut r = Renamer {
            tag: tag.clone(),
            map: FxHashMap::default(),
            families: Vec::new(),
        };
        let mut stmts: Vec<Stmt> = Vec::new();
        let params = callee.params.as_deref().unwrap_or_default();
        let returns = callee.returns.as_deref().unwrap_or_default();
        if params.len() != args.len() || returns.len() != rets.len() {
            self.error(
                call.span,
                format!(
                    "`{}` takes {} argument(s) and {} result(s)",
                    name.text,
                    params.len(),
                    returns.len()
                ),
            );
            return None;
        }
        // Bind the parameters.
        let mut after: Vec<Stmt> = Vec::new();
        for (p, a) in params.iter().zip(&args) {
            bind(&mut r, &mut stmts, p, a, true, call.span);
        }
        for (p, a) in returns.iter().zip(&rets) {
            bind(&mut r, &mut after, p, a, false, call.span);
        }
        r.collect(&callee.body.as_ref().expect("a definition").stmts);
        let ret_label = format!("$Lret{tag}");
        let mut body = callee.body.as_ref().expect("a definition").stmts.clone();
        r.stmts(&mut body, &ret_label);
        // `.param` accesses in the body name the caller's argument slots (renamed) or the
        // callee's own call sites' slots: all are local memory now.
        let mut visible = params_visible.clone();
        visible.extend(body_params(&body));
        self.stack.push(name.text.to_string());
        self.block(&mut body, depth + 1, &visible);
        self.stack.pop();
        stmts.push(Stmt::Block(Box::new(Block {
            stmts: body,
            span: call.span,
        })));
        stmts.push(Stmt::Label(Box::new(Name {
            text: ret_label.into(),
            span: call.span,
        })));
        stmts.extend(after);
        Some(Block {
            stmts,
            span: call.span,
        })
    }
}

/// Binds one parameter: a `.param` parameter is renamed to the caller's argument; a `.reg`
/// parameter is declared and moved into (arguments) or out of (results).
fn bind(r: &mut Renamer, out: &mut Vec<Stmt>, p: &ParamDecl, arg: &Expr, input: bool, span: Span) {
    let pname = p.decl.name.text.to_string();
    if p.space == Space::Param
        && let Some(a) = arg.as_name()
    {
        r.map.insert(pname, a.text.to_string());
        return;
    }
    let new = format!("{pname}{}", r.tag);
    r.map.insert(pname, new.clone());
    let ty = p
        .attrs
        .iter()
        .find(|a| crate::frontend::types::Ty::parse(&a.word.text).is_some());
    let Some(ty) = ty else { return };
    // `.b8` arrays cannot be registers: keep them as local memory with the same shape.
    let space = if p.space == Space::Param {
        Space::Local
    } else {
        Space::Reg
    };
    out.push(Stmt::Var(Box::new(VarDecl {
        linkage: vec![],
        space,
        space_span: span,
        attrs: p.attrs.clone(),
        decls: vec![Declarator {
            name: Name {
                text: new.clone().into(),
                span,
            },
            range: None,
            dims: p.decl.dims.clone(),
            init: None,
            span,
        }],
        span,
    })));
    if space == Space::Reg {
        let (dst, src) = if input {
            (
                Expr::Name {
                    name: Name {
                        text: new.into(),
                        span,
                    },
                    component: None,
                },
                arg.clone(),
            )
        } else {
            (
                arg.clone(),
                Expr::Name {
                    name: Name {
                        text: new.into(),
                        span,
                    },
                    component: None,
                },
            )
        };
        // A vector parameter (`.reg .v2 .u32 input`) moves as a vector (`mov.v2.u32`): a
        // scalar `mov.u32` would copy one element and drop the rest.
        let mut modifiers: Vec<Name> = p
            .attrs
            .iter()
            .filter(|a| matches!(a.word.text.trim_start_matches('.'), "v2" | "v4" | "v8"))
            .map(|a| Name {
                text: a.word.text.clone(),
                span,
            })
            .collect();
        modifiers.push(Name {
            text: ty.word.text.clone(),
            span,
        });
        out.push(Stmt::Instr(Box::new(Instruction {
            guard: None,
            opcode: Name {
                text: "mov".into(),
                span,
            },
            modifiers,
            operands: vec![Operand::Expr(dst), Operand::Expr(src)],
            span,
        })));
    }
}

/// Renames what a callee declares apart from everything else.
struct Renamer {
    tag: String,
    map: FxHashMap<String, String>,
    /// Register families `%r<N>`: (prefix, new prefix).
    families: Vec<(String, String)>,
}

impl Renamer {
    /// Finds every name the body declares (registers, labels, variables).
    fn collect(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            match s {
                Stmt::Var(v) => {
                    for d in &v.decls {
                        if d.range.is_some() {
                            let p = d.name.text.to_string();
                            self.families.push((p.clone(), format!("{p}{}", self.tag)));
                        } else {
                            self.map
                                .entry(d.name.text.to_string())
                                .or_insert_with(|| format!("{}{}", d.name.text, self.tag));
                        }
                    }
                }
                Stmt::Label(n) => {
                    self.map
                        .insert(n.text.to_string(), format!("{}{}", n.text, self.tag));
                }
                Stmt::Block(b) => self.collect(&b.stmts),
                Stmt::CallPrototype(p) => {
                    self.map.insert(
                        p.name.text.to_string(),
                        format!("{}{}", p.name.text, self.tag),
                    );
                }
                Stmt::Targets(t) => {
                    self.map.insert(
                        t.name.text.to_string(),
                        format!("{}{}", t.name.text, self.tag),
                    );
                }
                _ => {}
            }
        }
    }

    fn name(&self, n: &mut Name) {
        if let Some(new) = self.map.get(n.text.as_str()) {
            n.text = new.clone().into();
            return;
        }
        let digits = n.text.len() - n.text.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            let (prefix, num) = n.text.split_at(n.text.len() - digits);
            if let Some((_, new)) = self.families.iter().find(|(p, _)| p == prefix) {
                n.text = format!("{new}{num}").into();
            }
        }
    }

    fn expr(&self, e: &mut Expr) {
        match e {
            Expr::Name { name, .. } => self.name(name),
            Expr::Unary { arg, .. } => self.expr(arg),
            Expr::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            Expr::Cond {
                cond, then, other, ..
            } => {
                self.expr(cond);
                self.expr(then);
                self.expr(other);
            }
            Expr::Call { args, .. } => args.iter_mut().for_each(|a| self.expr(a)),
            Expr::Lit { .. } => {}
        }
    }

    fn operand(&self, o: &mut Operand) {
        match o {
            Operand::Expr(e) => self.expr(e),
            Operand::Not(e, _) => self.expr(e),
            Operand::Address(v, _) | Operand::Vector(v, _) | Operand::List(v, _) => {
                v.iter_mut().for_each(|x| self.operand(x))
            }
            Operand::Pair(p, _) => {
                if let Some(a) = &mut p.0 {
                    self.expr(a);
                }
                self.expr(&mut p.1);
            }
            Operand::Sink(_) => {}
        }
    }

    /// Renames a body and turns its `ret`s into branches to `ret_label`.
    fn stmts(&self, stmts: &mut [Stmt], ret_label: &str) {
        for s in stmts {
            match s {
                Stmt::Var(v) => {
                    for d in &mut v.decls {
                        if d.range.is_some() {
                            if let Some((_, new)) =
                                self.families.iter().find(|(p, _)| *p == d.name.text)
                            {
                                d.name.text = new.clone().into();
                            }
                        } else {
                            self.name(&mut d.name);
                        }
                    }
                }
                Stmt::Label(n) => self.name(n),
                Stmt::Block(b) => self.stmts(&mut b.stmts, ret_label),
                Stmt::Instr(ins) => {
                    if let Some(g) = &mut ins.guard {
                        self.name(&mut g.pred);
                    }
                    ins.operands.iter_mut().for_each(|o| self.operand(o));
                    if ins.opcode.text == "ret" {
                        let span = ins.opcode.span;
                        ins.opcode.text = "bra".into();
                        ins.modifiers.clear();
                        ins.operands = vec![Operand::Expr(Expr::Name {
                            name: Name {
                                text: ret_label.into(),
                                span,
                            },
                            component: None,
                        })];
                    }
                }
                Stmt::CallPrototype(p) => self.name(&mut p.name),
                Stmt::Targets(t) => {
                    self.name(&mut t.name);
                    t.targets.iter_mut().for_each(|n| self.name(n));
                }
                Stmt::Pragma(_) | Stmt::Loc(_) => {}
            }
        }
    }
}
