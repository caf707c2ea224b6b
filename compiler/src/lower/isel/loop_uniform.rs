//! Warp-uniform PTX registers that are written more than once: loop-carried pipeline stages,
//! mbarrier phases and trip counters, kept in uniform registers through the loop.
//!
//! A value written once is rebuilt in the uniform datapath at each use that must be uniform
//! ([`super::Cx::uniform_of`] follows its definition). A register written in a loop and before
//! it is a `PHI` in SSA form, which that rebuilding cannot follow while the loop's back edge is
//! not lowered yet: its uses would read a general register and copy it with `R2UR` at each use
//! (`@P R2UR` before every `UTMALDG` of pyptx `matmul_tma_v33`). ptxas keeps such a register in
//! `UR` through the loop (`UIADD3 UR5, UR5, 0x1` / `UISETP.GT` / `USEL` / `ULEA UR12, UR5, UR9,
//! 0x3` feeding `SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR12]` in the same kernel).
//!
//! [`shadowed_vars`] finds, before selection, the 32-bit registers whose every definition is
//! computed from warp-uniform values only (immediates, symbols, `ld.param`, `%ctaid`, other
//! such registers), unguarded, outside any region that a divergent branch makes some threads
//! skip. Selection then gives each a uniform twin variable (`Cx::shadow`): after each
//! instruction that writes the register, the value is rebuilt in `UR` and written to the twin;
//! each read of the register reads the twin (a `MOV R, UR` for per-thread uses, the `UR` itself
//! where the operand must be uniform). The per-thread computation is left without readers and
//! `dce` deletes it. When the rebuilding fails for a register, selection is redone without it
//! (`lower_function`).

use super::super::ssa::Var;
use super::super::{PlanView, PlannedBlock};
use crate::frontend::ast::{self, Expr};
use rustc_hash::FxHashSet;

/// Functions with more planned blocks are not analysed (the post-dominator sets are
/// quadratic at worst); their loop-carried registers stay per-thread.
const MAX_BLOCKS: usize = 4096;

/// The function's warp-uniform registers ([`uniform_vars`]) that feed an operand ptxc wants in
/// uniform registers ([`feeds_uniform_operand`]), and those of them to keep in uniform
/// registers: one 32-bit word (`is_word`), written by two instructions or more.
///
/// Only those feeding such an operand: ptxas chooses the uniform datapath by the consumer
/// (ptxas-facts.md §e.13), and a counter that only feeds per-thread work and the loop's compare
/// gains nothing from `UR` (each per-thread read would be a `MOV R, UR`). ptxas 13.1 on the
/// probes: the ring counter of `mbarrier_ring_in_a_loop_is_uniform` (`tests/tests/isel_tma.rs`)
/// and pyptx `matmul_tma_v33`'s stages (they also address `cp.async.bulk.tensor`) are in `UR`;
/// in `docs/passes/examples/loop_uniform.ptx`, where the stage also addresses a per-thread
/// `ld.shared`, ptxas keeps it in `R` (`SEL R3, R3, RZ, !P1`, `TRYWAIT P2, [R11+URZ]`) and
/// ptxc does not follow it there (`UISETP`/`USEL`, `TRYWAIT P0, [UR7]`).
pub(super) fn shadowed_vars(
    scopes: &PlanView<'_>,
    blocks: &[PlannedBlock<'_>],
    is_word: impl Fn(Var) -> bool,
) -> (FxHashSet<Var>, Vec<Var>) {
    // Most functions have no such consumer; skip the analyses (they cost 8% of a
    // 16 000-instruction straight-line kernel's compile).
    let consumers = blocks
        .iter()
        .flat_map(|b| &b.instrs)
        .any(|(ins, _)| matches!(&*ins.opcode.text, "cp" | "wgmma" | "mbarrier"));
    if !consumers {
        return (FxHashSet::default(), Vec::new());
    }
    let defs = definitions(scopes, blocks);
    let uniform = uniform_vars(scopes, blocks, &defs);
    let wanted = feeds_uniform_operand(scopes, blocks, &defs, &uniform);
    let mut shadowed: Vec<Var> = wanted
        .iter()
        .copied()
        .filter(|v| is_word(*v) && defs.iter().filter(|d| d.var == *v).count() >= 2)
        .collect();
    shadowed.sort();
    (wanted, shadowed)
}

/// The registers in `uniform` whose value reaches, through the definitions of other such
/// registers, a register operand of an instruction whose operands ptxc selects in uniform
/// registers: the bulk copies (`cp.async.bulk*`: `UBLKCP`, `UTMALDG`), the wgmma descriptors
/// and the mbarrier addresses.
fn feeds_uniform_operand(
    scopes: &PlanView<'_>,
    blocks: &[PlannedBlock<'_>],
    defs: &[Def<'_>],
    uniform: &FxHashSet<Var>,
) -> FxHashSet<Var> {
    fn names(o: &ast::Operand, out: &mut Vec<String>) {
        fn expr(e: &Expr, out: &mut Vec<String>) {
            match e {
                Expr::Name { name, .. } => out.push(name.text.to_string()),
                Expr::Unary { arg, .. } => expr(arg, out),
                Expr::Binary { lhs, rhs, .. } => {
                    expr(lhs, out);
                    expr(rhs, out);
                }
                _ => {}
            }
        }
        match o {
            ast::Operand::Expr(e) => expr(e, out),
            ast::Operand::Not(e, _) => expr(e, out),
            ast::Operand::Address(v, _) | ast::Operand::Vector(v, _) | ast::Operand::List(v, _) => {
                v.iter().for_each(|o| names(o, out))
            }
            _ => {}
        }
    }
    let mut wanted = FxHashSet::default();
    let mut work = Vec::new();
    for block in blocks {
        for &(ins, scope) in &block.instrs {
            // The opcode with its modifiers (`cp` `.async` `.bulk` …).
            let mut op = ins.opcode.text.to_string();
            ins.modifiers.iter().for_each(|m| op.push_str(&m.text));
            if !(op.starts_with("cp.async.bulk")
                || op.starts_with("wgmma.mma_async")
                || op.starts_with("mbarrier"))
            {
                continue;
            }
            // An mbarrier's address, not its phase or count (`TRYWAIT P0, [UR12], R109`); a
            // wgmma's two descriptors; every operand of a bulk copy.
            let mut used = Vec::new();
            for (k, o) in ins.operands.iter().enumerate() {
                let take = if op.starts_with("mbarrier") {
                    matches!(o, ast::Operand::Address(..))
                } else if op.starts_with("wgmma") {
                    matches!(k, 1 | 2)
                } else {
                    true
                };
                if take {
                    names(o, &mut used);
                }
            }
            for n in used {
                if let Some((v, _)) = scopes.reg(scope, &n)
                    && uniform.contains(&v)
                    && wanted.insert(v)
                {
                    work.push(v);
                }
            }
        }
    }
    while let Some(v) = work.pop() {
        for d in defs.iter().filter(|d| d.var == v) {
            let mut used = Vec::new();
            d.ins
                .operands
                .iter()
                .skip(1)
                .for_each(|o| names(o, &mut used));
            for n in used {
                if let Some((s, _)) = scopes.reg(d.scope, &n)
                    && uniform.contains(&s)
                    && wanted.insert(s)
                {
                    work.push(s);
                }
            }
        }
    }
    wanted
}

/// One instruction's write of one register.
struct Def<'a> {
    var: Var,
    block: usize,
    ins: &'a ast::Instruction,
    scope: usize,
}

/// Every register an instruction may write: the names in its first operand (PTX puts each
/// destination there: `d`, `p|q`, `{a, b}`, `(r)`). An instruction whose first operand is a
/// source (`bar.sync %r1`) counts as writing it too, which only makes the analysis refuse more.
fn definitions<'a>(scopes: &PlanView<'_>, blocks: &'a [PlannedBlock<'a>]) -> Vec<Def<'a>> {
    fn names<'e>(o: &'e ast::Operand, out: &mut Vec<&'e str>) {
        match o {
            ast::Operand::Expr(e) => {
                if let Some(n) = e.as_name() {
                    out.push(&n.text);
                }
            }
            ast::Operand::Pair(p, _) => {
                if let Some(n) = p.0.as_ref().and_then(Expr::as_name) {
                    out.push(&n.text);
                }
                if let Some(n) = p.1.as_name() {
                    out.push(&n.text);
                }
            }
            ast::Operand::Vector(v, _) | ast::Operand::List(v, _) => {
                v.iter().for_each(|o| names(o, out));
            }
            _ => {}
        }
    }
    let mut defs = Vec::new();
    for (b, block) in blocks.iter().enumerate() {
        for &(ins, scope) in &block.instrs {
            let mut written = Vec::new();
            if let Some(first) = ins.operands.first() {
                names(first, &mut written);
            }
            for n in written {
                if let Some((var, _)) = scopes.reg(scope, n) {
                    defs.push(Def {
                        var,
                        block: b,
                        ins,
                        scope,
                    });
                }
            }
        }
    }
    defs
}

/// The registers whose value is the same in every active thread of a warp wherever it is read:
/// the largest set such that each definition of a member is unguarded, outside the planned
/// blocks a divergent branch governs ([`divergent_blocks`]), not in a block run under a guard
/// (`predicate_uniform_regions`), and an integer operation ptxc can rebuild in the uniform
/// datapath whose register sources are members. Found by removing members until none breaks
/// the rule (each removal can only make more branches divergent).
fn uniform_vars(
    scopes: &PlanView<'_>,
    blocks: &[PlannedBlock<'_>],
    defs: &[Def<'_>],
) -> FxHashSet<Var> {
    if blocks.len() > MAX_BLOCKS
        || blocks
            .iter()
            .flat_map(|b| &b.instrs)
            .any(|(i, _)| i.opcode.text == "brx")
    {
        return FxHashSet::default();
    }
    let mut uniform: FxHashSet<Var> = defs.iter().map(|d| d.var).collect();
    let ipdom = post_dominators(blocks);
    loop {
        let divergent = divergent_blocks(scopes, blocks, &ipdom, &uniform);
        let before = uniform.len();
        for d in defs {
            if uniform.contains(&d.var)
                && (divergent[d.block]
                    || blocks[d.block].guard.is_some()
                    || !uniform_def(scopes, d, &uniform))
            {
                uniform.remove(&d.var);
            }
        }
        if uniform.len() == before {
            return uniform;
        }
    }
}

/// Whether an instruction computes its destination from warp-uniform values only (the
/// registers in `uniform`), with an operation that has a uniform-datapath form.
fn uniform_def(scopes: &PlanView<'_>, d: &Def<'_>, uniform: &FxHashSet<Var>) -> bool {
    let ins = d.ins;
    let op = ins.opcode.text.as_str();
    // One destination, written whole (`Cx::write_shadows` looks only there): not the words of
    // `mov.b64 {%r1, %r2}, %rd1`; `setp p|q` writes two predicates, which are never twinned.
    let one_dst = match ins.operands.first() {
        Some(ast::Operand::Expr(_)) => true,
        Some(ast::Operand::Pair(..)) => op == "setp",
        _ => false,
    };
    if ins.guard.is_some() || !one_dst {
        return false;
    }
    let mods: Vec<&str> = ins.modifiers.iter().map(|m| m.text.as_str()).collect();
    if op == "shfl" {
        return shfl_broadcast(scopes, d, &mods, uniform);
    }
    let int_type = |m: &str| {
        matches!(
            m,
            ".s32"
                | ".u32"
                | ".b32"
                | ".s64"
                | ".u64"
                | ".b64"
                | ".s16"
                | ".u16"
                | ".b16"
                | ".pred"
        )
    };
    let compare = |m: &str| {
        matches!(
            m,
            ".eq" | ".ne" | ".lt" | ".le" | ".gt" | ".ge" | ".lo" | ".ls" | ".hi" | ".hs"
        )
    };
    let ok_mods = match op {
        // Not `min`/`max`: `IMNMX` has no uniform twin here.
        "mov" | "add" | "sub" | "shl" | "shr" | "and" | "or" | "xor" | "not" | "selp" => {
            mods.iter().all(|m| int_type(m))
        }
        "mul" | "mad" => mods.contains(&".lo") && mods.iter().all(|m| *m == ".lo" || int_type(m)),
        "setp" => mods.iter().all(|m| int_type(m) || compare(m)),
        "ld" => mods.contains(&".param") && mods.iter().all(|m| *m == ".param" || int_type(m)),
        _ => false,
    };
    if !ok_mods {
        return false;
    }
    let reg_ok = |name: &str| match scopes.reg(d.scope, name) {
        Some((v, _)) => uniform.contains(&v),
        // A special register: only the CTA's coordinates are the same in every thread.
        None if name.starts_with('%') => name == "%ctaid",
        // A symbol: an address fixed at compile or launch time.
        None => true,
    };
    fn expr_ok(e: &Expr, reg_ok: &dyn Fn(&str) -> bool) -> bool {
        match e {
            Expr::Name { name, .. } => reg_ok(&name.text),
            Expr::Lit { .. } => true,
            Expr::Unary { arg, .. } => expr_ok(arg, reg_ok),
            Expr::Binary { lhs, rhs, .. } => expr_ok(lhs, reg_ok) && expr_ok(rhs, reg_ok),
            Expr::Cond { .. } | Expr::Call { .. } => false,
        }
    }
    ins.operands.iter().skip(1).all(|o| match o {
        ast::Operand::Expr(e) => expr_ok(e, &reg_ok),
        ast::Operand::Not(e, _) => expr_ok(e, &reg_ok),
        // `ld.param d, [name+imm]`: the parameter's name, no register.
        ast::Operand::Address(a, _) if op == "ld" => a.iter().all(|o| match o {
            ast::Operand::Expr(e) => expr_ok(e, &|n: &str| scopes.reg(d.scope, n).is_none()),
            _ => false,
        }),
        _ => false,
    })
}

/// Whether a `shfl.sync.idx.b32 d, a, lane, c, mask` broadcasts one thread's `a` to the whole
/// warp: every thread takes part (`mask` is the constant `0xffffffff`), the warp is one segment
/// (`c`'s segment mask, bits 12:8, is zero: `c` is `31`) and `lane` is an immediate or a
/// register in `uniform`. Its value is then the same in every thread whatever `a` is
/// (pyptx `fa_ws_pingpong`: `shfl.sync.idx.b32 %r3, %r2, 0, 31, -1` of `%tid.x >> 5`, the
/// warp's number, whose branch `setp.lt.u32 %p1, %r3, 4; @%p1 bra` splits the kernel's
/// warp-specialised roles). ptxas 13.1 keeps a loop counter under such a branch in `UR`
/// (`docs/passes/examples/shfl_broadcast.ptx`: `UIADD3 UR4, UR4, 0x1, URZ; ULEA UR7, UR5,
/// UR6, 0x3; SYNCS.ARRIVE.TRANS64 RZ, [UR7], R3` after `SHFL.IDX PT, R0, R0, RZ, 0x1f;
/// ISETP.GE.U32.AND P0, PT, R0, 0x4, PT; @!P0 EXIT`). The value itself has no uniform-datapath
/// form (no `USHFL`): a twin that needs it fails to be rebuilt and is refused
/// (`Cx::write_shadows`); what it gives here is the branches on it that are not divergent.
fn shfl_broadcast(
    scopes: &PlanView<'_>,
    d: &Def<'_>,
    mods: &[&str],
    uniform: &FxHashSet<Var>,
) -> bool {
    let konst = |o: &ast::Operand| match o {
        ast::Operand::Expr(e) => crate::frontend::check::eval_const(e),
        _ => None,
    };
    let [_, _, lane, c, mask] = &d.ins.operands[..] else {
        return false;
    };
    let lane_ok = match lane {
        ast::Operand::Expr(Expr::Name { name, .. }) => scopes
            .reg(d.scope, &name.text)
            .is_some_and(|(v, _)| uniform.contains(&v)),
        o => konst(o).is_some(),
    };
    mods.contains(&".sync")
        && mods.contains(&".idx")
        && lane_ok
        && konst(c).is_some_and(|c| (c >> 8) & 0x1f == 0)
        && konst(mask).is_some_and(|m| m & 0xffff_ffff == 0xffff_ffff)
}

/// The successors of a planned block; a block that leaves the function has none.
fn successors<'b>(b: &'b PlannedBlock<'_>) -> impl Iterator<Item = usize> + 'b {
    b.succs
        .iter()
        .chain(b.fallthrough.iter())
        .map(|s| s.0 as usize)
}

/// The immediate post-dominator of each planned block (`Some(n)`: the virtual exit, for `n`
/// blocks), or `None` for a block from which no path leaves the function. Cooper, Harvey and
/// Kennedy's iterative algorithm on the reversed CFG.
fn post_dominators(blocks: &[PlannedBlock<'_>]) -> Vec<Option<usize>> {
    let n = blocks.len();
    let exit = n;
    let succs = |b: usize| -> Vec<usize> {
        let s: Vec<usize> = successors(&blocks[b]).collect();
        if s.is_empty() { vec![exit] } else { s }
    };
    let mut preds = vec![Vec::new(); n + 1];
    for b in 0..n {
        for s in succs(b) {
            preds[s].push(b);
        }
    }
    // Postorder of the reversed CFG from the exit.
    let mut post = vec![usize::MAX; n + 1];
    let mut order = Vec::with_capacity(n + 1);
    let mut seen = vec![false; n + 1];
    let mut stack = vec![(exit, 0usize)];
    seen[exit] = true;
    while let Some(&mut (x, ref mut i)) = stack.last_mut() {
        if let Some(&p) = preds[x].get(*i) {
            *i += 1;
            if !seen[p] {
                seen[p] = true;
                stack.push((p, 0));
            }
        } else {
            post[x] = order.len();
            order.push(x);
            stack.pop();
        }
    }
    let mut ipdom: Vec<Option<usize>> = vec![None; n + 1];
    ipdom[exit] = Some(exit);
    let mut changed = true;
    while changed {
        changed = false;
        for &x in order.iter().rev().skip(1) {
            let mut new: Option<usize> = None;
            for s in succs(x) {
                if ipdom[s].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => s,
                    Some(mut a) => {
                        let mut b = s;
                        while a != b {
                            while post[a] < post[b] {
                                a = ipdom[a].expect("processed");
                            }
                            while post[b] < post[a] {
                                b = ipdom[b].expect("processed");
                            }
                        }
                        a
                    }
                });
            }
            if new.is_some() && ipdom[x] != new {
                ipdom[x] = new;
                changed = true;
            }
        }
    }
    ipdom.truncate(n);
    ipdom
}

/// The planned blocks that only some threads of a warp may run: those reached from a divergent
/// conditional branch (a guarded `bra` without `.uni` whose predicate is not in `uniform`)
/// before its immediate post-dominator, where the threads meet again.
fn divergent_blocks(
    scopes: &PlanView<'_>,
    blocks: &[PlannedBlock<'_>],
    ipdom: &[Option<usize>],
    uniform: &FxHashSet<Var>,
) -> Vec<bool> {
    let n = blocks.len();
    let mut divergent = vec![false; n];
    for (b, block) in blocks.iter().enumerate() {
        let Some(&(last, scope)) = block.instrs.last() else {
            continue;
        };
        let Some(g) = &last.guard else {
            continue;
        };
        if last.opcode.text != "bra"
            || last.modifiers.iter().any(|m| m.text == ".uni")
            || scopes
                .reg(scope, &g.pred.text)
                .is_some_and(|(v, _)| uniform.contains(&v))
        {
            continue;
        }
        let stop = ipdom[b];
        let mut work: Vec<usize> = successors(block).collect();
        let mut seen = vec![false; n];
        while let Some(x) = work.pop() {
            if Some(x) == stop || seen[x] {
                continue;
            }
            seen[x] = true;
            divergent[x] = true;
            work.extend(successors(&blocks[x]));
        }
    }
    divergent
}
