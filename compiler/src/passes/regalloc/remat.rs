//! Rematerialisation: a spilled value that a few instructions can compute again from nothing
//! but constants is recomputed before each use instead of stored and reloaded.
//!
//! A value qualifies when it has one definition, unguarded, that defines nothing else, and that
//! definition is
//!
//! * a *leaf*: `LDC` from a constant bank at a fixed address (kernel parameters: the bank does
//!   not change while the kernel runs), `S2R` of a special register that is fixed for the
//!   thread (`SR_TID.*`, `SR_CTAID.*`, `SR_LANEID`, `SR_CgaCtaId`, `SR_SWINHI`, the lane
//!   masks), or `MOV` of an immediate; or
//! * plain arithmetic (`LEA`, `LOP3`, `SHF`, `IADD3`, `IMAD`, `SEL` without a predicate) on
//!   immediates, constant-bank operands and values that qualify themselves,
//!
//! with [`MAX_RECIPE`] instructions at most in all (the shared window's base, `S2R
//! SR_CgaCtaId; MOV 0x400; LEA …, 0x18`, takes three). The recipe's inner values get fresh
//! temporaries; the last instruction defines the use's spill temporary.
//!
//! ptxas reloads parameters the same way (13.1, pyptx `fa_ws_pingpong`, `cuobjdump -sass`;
//! no stack frame): `LDC Rn, c[0x0][0x518]` (`%r601`) at `0x0080`, `0x3f40`, `0xa410` and
//! `0xd2f0`, `LDC R5, c[0x0][0x210]` at `0x02c0` and `0x6780`, `LDC.64 c[0x0][0x218]` once per
//! consumer (`0x5ba0`, `0xbcb0`), instead of holding each from the entry. It reads `SR_TID.X`
//! only once there (`S2R R0` at `0x0010`) and keeps it; ptxc recomputes it too when it spills
//! it (an `S2R` costs no memory traffic, a reload an `LDL` and the `STL` before).

use crate::mir::{Function, Inst, OpKind, Reg, RegClass, VReg};
use crate::target::sm90a::print::SR_NAMES;

/// The most instructions a recomputation may take.
pub const MAX_RECIPE: usize = 3;

/// Special registers whose value never changes for a thread.
const FIXED_SREGS: &[&str] = &[
    "SR_TID.X",
    "SR_TID.Y",
    "SR_TID.Z",
    "SR_CTAID.X",
    "SR_CTAID.Y",
    "SR_CTAID.Z",
    "SR_LANEID",
    "SR_CgaCtaId",
    "SR_SWINHI",
    "SR_EQMASK",
    "SR_LTMASK",
    "SR_LEMASK",
    "SR_GTMASK",
    "SR_GEMASK",
];

/// Arithmetic without side effects whose result depends only on its operands.
const PURE_ALU: &[&str] = &["LEA", "LOP3", "SHF", "IADD3", "IMAD", "SEL"];

/// The only definition of every value: `(block, index)`, or `None` where a value has none or
/// several.
pub struct Defs {
    site: Vec<Option<(u32, u32)>>,
}

impl Defs {
    pub fn new(f: &Function) -> Defs {
        // 0: none seen, 1: one (in `site`), 2: several.
        let mut count = vec![0u8; f.vregs.len()];
        let mut site = vec![None; f.vregs.len()];
        for (bi, b) in f.blocks.iter().enumerate() {
            for (ii, i) in b.insts.iter().enumerate() {
                for d in i.defs() {
                    if let Some(v) = d.vreg() {
                        let c = &mut count[v.0 as usize];
                        *c = (*c + 1).min(2);
                        site[v.0 as usize] = Some((bi as u32, ii as u32));
                    }
                }
            }
        }
        for (s, c) in site.iter_mut().zip(&count) {
            if *c != 1 {
                *s = None;
            }
        }
        Defs { site }
    }

    fn def<'f>(&self, f: &'f Function, v: VReg) -> Option<&'f Inst> {
        let (b, i) = self.site.get(v.0 as usize).copied().flatten()?;
        Some(&f.blocks[b as usize].insts[i as usize])
    }
}

/// The instructions that compute `v` again, inputs first, as they stand in `f` (they still
/// name the original values; [`instantiate`] renames them).
pub fn recipe(f: &Function, defs: &Defs, v: VReg) -> Option<Vec<Inst>> {
    let mut out = Vec::new();
    build(f, defs, v, &mut out).then_some(out)
}

fn build(f: &Function, defs: &Defs, v: VReg, out: &mut Vec<Inst>) -> bool {
    if out.len() >= MAX_RECIPE || f.vreg(v).class != RegClass::Gpr {
        return false;
    }
    let Some(def) = defs.def(f, v) else {
        return false;
    };
    // One unguarded definition of the whole value and of nothing else.
    let whole = Reg::Virt {
        vreg: v,
        first: 0,
        count: f.vreg(v).words,
    };
    if def.guard.is_some() || def.defs().ne(std::iter::once(whole)) {
        return false;
    }
    let no_reg_inputs = def
        .uses()
        .all(|u| matches!(u, Reg::Phys { reg, .. } if reg.is_zero()));
    let leaf = match def.mnemonic {
        "LDC" => {
            no_reg_inputs
                && def
                    .ops
                    .iter()
                    .any(|o| matches!(o.kind, OpKind::CBank { base: None, .. }))
        }
        "S2R" => {
            no_reg_inputs
                && def.ops.iter().any(|o| {
                    matches!(o.kind, OpKind::SReg(n) if FIXED_SREGS.contains(&SR_NAMES[n as usize]))
                })
        }
        "MOV" => {
            no_reg_inputs
                && def
                    .ops
                    .iter()
                    .any(|o| matches!(o.kind, OpKind::Int(_) | OpKind::Float(..)))
        }
        _ => false,
    };
    if leaf {
        out.push(def.clone());
        return true;
    }
    if !PURE_ALU.contains(&def.mnemonic) {
        return false;
    }
    // Operands: registers (recomputed first), immediates, fixed constant-bank words.
    for o in &def.ops {
        match &o.kind {
            OpKind::Reg(r) if r.def => {}
            OpKind::Reg(r) => match r.reg {
                Reg::Phys { reg, .. } if reg.is_zero() => {}
                Reg::Virt { vreg, .. } => {
                    if out.iter().any(|i| i.defs().any(|d| d.vreg() == Some(vreg))) {
                        continue;
                    }
                    if !build(f, defs, vreg, out) {
                        return false;
                    }
                }
                Reg::Phys { .. } => return false,
            },
            OpKind::Int(_) | OpKind::Float(..) | OpKind::CBank { base: None, .. } => {}
            _ => return false,
        }
    }
    if out.len() >= MAX_RECIPE {
        return false;
    }
    out.push(def.clone());
    true
}

/// The recipe for one use: every value the recipe defines gets a fresh spill temporary (the
/// last, `v` itself, gets `temp`), and the inputs are renamed to match.
pub fn instantiate(f: &mut Function, recipe: &[Inst], v: VReg, temp: VReg) -> Vec<Inst> {
    let mut renamed: Vec<(VReg, VReg)> = Vec::with_capacity(recipe.len());
    let mut out = Vec::with_capacity(recipe.len());
    for inst in recipe {
        let mut inst = inst.clone();
        inst.src = None;
        let d = inst
            .defs()
            .next()
            .and_then(|d| d.vreg())
            .expect("a recipe instruction defines a value");
        let to = if d == v {
            temp
        } else {
            let words = f.vreg(d).words;
            f.new_vreg(RegClass::Gpr, words, Some("spill".into()))
        };
        renamed.push((d, to));
        inst.for_each_reg_mut(|r| {
            if let Reg::Virt { vreg, .. } = r
                && let Some(&(_, to)) = renamed.iter().find(|(from, _)| from == vreg)
            {
                *vreg = to;
            }
        });
        out.push(inst);
    }
    out
}
