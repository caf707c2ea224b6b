//! Linking subroutines into kernels, after the pass pipeline has run on every function.
//!
//! ptxas places a called `.func` in the `.text.<kernel>` section of each kernel that calls it,
//! right after the kernel's code, one copy per kernel, reached with a PC-relative
//! `CALL.REL.NOINC` and no relocation (`tests/sass-probes/ptx/funcs.ptx`). ptxc does the same
//! with the subroutines it compiles (`inline::subroutines`): their allocated blocks are
//! appended to the kernel's, in module order, and each `CALL.REL` naming a subroutine then
//! targets its entry block. Emission lays the whole out as one function, so the scoreboard
//! pass sees the calls and returns (`emit/scoreboard.rs`, `call_reads`).
//!
//! A subroutine that addresses the module's `.shared` variables was lowered once per layout of
//! the kernels that reach it (`Lowered::subroutine_layouts`): a kernel gets the copy made for
//! its own `.shared` bytes, as ptxas's copy in each kernel addresses that kernel's window.
//!
//! A debug build also gives every `.func` with a body a section of its own
//! ([`Lowered::own_sections`]), as ptxas does: a copy of its subroutine, at offset 0, with the
//! subroutines it reaches appended the same way. Every call to such a `.func` is then a
//! `CALL.ABS.NOINC` to its section, as in ptxas's debug code (selected so in
//! `isel/call.rs`, relocated at emission, `docs/cubin.md`): no copy of it is appended to its
//! callers. The copy in its section was lowered with a kernel-less `.shared` window, so a
//! caller whose window puts the module's `.shared` variables elsewhere, and whose own copy
//! would therefore differ, is refused.

use super::Lowered;
use crate::mir::{BlockId, Function, OpKind};

/// Appends to every kernel the subroutines it reaches and points its calls at them.
pub fn link(lowered: &mut Lowered) -> Result<(), String> {
    let subs = std::mem::take(&mut lowered.subroutines);
    let layouts = std::mem::take(&mut lowered.subroutine_layouts);
    if subs.is_empty() {
        return Ok(());
    }
    for (name, _) in &lowered.own_sections {
        // The copies lowered for the windows of the kernels that reach it must all be the
        // kernel-less one, which the callers reach with `CALL.ABS`.
        let mut copies = subs.iter().filter(|s| s.name == *name);
        if let Some(first) = copies.next()
            && copies.any(|c| c.blocks != first.blocks)
        {
            return Err(format!(
                "ptxc cannot yet compile the debug build of `{name}`: it addresses the \
                 module's `.shared` variables, which lie at different offsets for the kernels \
                 that call it"
            ));
        }
    }
    for (name, frame) in &lowered.own_sections {
        // The copy lowered for a kernel-less `.shared` window (the module's variables from 0).
        let Some(sub) = subs
            .iter()
            .zip(&layouts)
            .find(|(s, l)| {
                s.name == *name
                    && l.as_ref()
                        .is_none_or(|l| *l == super::SharedWindow::default())
            })
            .map(|(s, _)| s)
        else {
            return Err(format!("the `.func` `{name}` was not compiled"));
        };
        lowered.module.functions.push(sub.clone());
        lowered.frames.push(frame.clone());
    }
    for (ki, k) in lowered.module.functions.iter_mut().enumerate() {
        // The `.shared` bytes of the kernel's own variables, where the module's start.
        let window = lowered
            .frames
            .get(ki)
            .map_or_else(super::SharedWindow::default, |f| super::SharedWindow {
                base: f.own_shared_bytes,
                kept: f.kept_shared.clone(),
            });
        // A function of its own calls itself at offset 0.
        let own = (!k.is_entry).then(|| k.name.clone());
        // The subroutines the kernel reaches, through the calls of what it reaches.
        let mut need = vec![false; subs.len()];
        let mut work: Vec<&Function> = vec![&*k];
        while let Some(f) = work.pop() {
            for name in called(f) {
                if own.as_ref() == Some(&name) {
                    continue;
                }
                let Some(j) = subs
                    .iter()
                    .zip(&layouts)
                    .position(|(s, l)| s.name == name && l.as_ref().is_none_or(|l| *l == window))
                else {
                    return Err(format!(
                        "`{}` calls the subroutine `{name}`, which was not compiled",
                        f.name
                    ));
                };
                if !need[j] {
                    need[j] = true;
                    work.push(&subs[j]);
                }
            }
        }
        for (j, sub) in subs.iter().enumerate().filter(|(j, _)| need[*j]) {
            let _ = j;
            let base = k.blocks.len() as u32;
            for b in &sub.blocks {
                let mut b = b.clone();
                b.fallthrough = b.fallthrough.map(|t| BlockId(t.0 + base));
                for i in &mut b.insts {
                    for o in &mut i.ops {
                        if let OpKind::Block(t) = &mut o.kind {
                            t.0 += base;
                        }
                    }
                }
                k.blocks.push(b);
            }
            k.subroutines
                .push((BlockId(base), sub.name.clone(), sub.frame_bytes));
        }
        let mut entries = k.subroutines.clone();
        if let Some(own) = own {
            entries.push((BlockId(0), own, 0));
        }
        for b in &mut k.blocks {
            for i in &mut b.insts {
                for o in &mut i.ops {
                    if let OpKind::FuncAddr(name) = &o.kind
                        && let Some((entry, _, _)) = entries.iter().find(|e| e.1 == *name)
                    {
                        o.kind = OpKind::Block(*entry);
                    }
                }
            }
            for i in b.insts.iter_mut().filter(|i| i.mnemonic == "CALL") {
                for o in &mut i.ops {
                    if let OpKind::Func(name) = &o.kind
                        && let Some((entry, _, _)) = entries.iter().find(|e| e.1 == *name)
                        && i.mods.contains(&"REL")
                    {
                        o.kind = OpKind::Block(*entry);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The subroutines a function calls (`CALL.REL` naming its callee) or takes the address of.
fn called(f: &Function) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in f.blocks.iter().flat_map(|b| &b.insts) {
        let call = i.mnemonic == "CALL" && i.mods.contains(&"REL");
        for o in &i.ops {
            let n = match &o.kind {
                OpKind::Func(n) if call => n,
                OpKind::FuncAddr(n) => n,
                _ => continue,
            };
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}
