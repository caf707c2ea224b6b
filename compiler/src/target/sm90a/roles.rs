//! Operand roles and latency: which registers an instruction reads and writes, and whether its
//! results are tracked by a scoreboard. The scoreboard pass and the hazard checker read these.

use super::bits::Field;
use super::decode::{DecodeError, decode_with_form};
use super::encode::{EncodeError, encode_with_form};
use super::form::*;
use super::model::*;

/// One register access: `count` consecutive registers from `reg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    pub reg: Reg,
    pub count: u8,
    /// Written (a destination); otherwise read.
    pub write: bool,
}

fn regs_of(f: &Form, rg: Regs, w: &[u64; 2]) -> u8 {
    match rg {
        Regs::N(n) => n,
        Regs::ByMod(i, t) => match f.mods.get(i) {
            Some(ModSpec::Field { f: fl, .. }) => {
                let v = fl.get(w) as u32;
                t.iter()
                    .find(|(k, _)| *k == v)
                    .map(|(_, n)| *n)
                    .unwrap_or(1)
            }
            _ => 1,
        },
        Regs::ByField(fl, t) => {
            let v = fl.get(w) as u32;
            t.iter()
                .find(|(k, _)| *k == v)
                .map(|(_, n)| *n)
                .unwrap_or(1)
        }
    }
}

fn push(out: &mut Vec<Access>, reg: Reg, count: u8, role: Role) {
    if reg.is_zero_or_true() || count == 0 {
        return;
    }
    match role {
        Role::Def => out.push(Access {
            reg,
            count,
            write: true,
        }),
        Role::Use => out.push(Access {
            reg,
            count,
            write: false,
        }),
        Role::DefUse => {
            out.push(Access {
                reg,
                count,
                write: false,
            });
            out.push(Access {
                reg,
                count,
                write: true,
            });
        }
    }
}

/// The register accesses of an encoded instruction of form `f` (reads first, in operand order,
/// then the guard). Zero registers and PT are left out.
pub fn accesses_of(f: &Form, w: &[u64; 2]) -> Vec<Access> {
    // Room for a use and a def of every operand and the guard: one allocation.
    let mut out = Vec::with_capacity(2 * f.ops.len() + 1);
    accesses_into(f, w, &mut out);
    out
}

/// [`accesses_of`] into a buffer the caller reuses (cleared first): the scoreboard pass asks
/// for every instruction of a function, and an allocation each was 0.9M of the 241M
/// instructions of compiling the straight-line 16k kernel.
pub fn accesses_into(f: &Form, w: &[u64; 2], out: &mut Vec<Access>) {
    out.clear();
    for o in &f.ops {
        let n = regs_of(f, o.regs, w);
        match &o.spec {
            Spec::Gpr(fl) => push(out, r(fl.get(w) as u8), n, o.role),
            Spec::Ugpr(fl) => push(out, ur(fl.get(w) as u8), n, o.role),
            Spec::Pred {
                f: fl,
                uniform,
                inv,
            } => {
                let v = fl.get(w) as u8;
                let v = if *inv { 7 - v } else { v };
                push(out, if *uniform { up(v) } else { p(v) }, 1, o.role)
            }
            Spec::Bar(fl) => push(out, b(fl.get(w) as u8), 1, o.role),
            Spec::CBank { base: Some(bf), .. } => push(out, r(bf.get(w) as u8), 1, Role::Use),
            Spec::Target { reg: Some(rf), .. } => push(out, r(rf.get(w) as u8), 2, Role::Use),
            Spec::Mem(m) => {
                if let PrefixSpec::Desc(df) = &m.prefix {
                    push(out, ur(df.get(w) as u8), 2, Role::Use);
                }
                for t in &m.terms {
                    match &t.term {
                        TermSpec::Gpr(fl) => push(out, r(fl.get(w) as u8), t.regs, Role::Use),
                        TermSpec::Ugpr(fl) => push(out, ur(fl.get(w) as u8), t.regs, Role::Use),
                        TermSpec::Imm(_) => {}
                    }
                }
            }
            _ => {}
        }
    }
    let g = Field::new(12, 3).get(w) as u8;
    push(out, if f.uguard { up(g) } else { p(g) }, 1, Role::Use);
    out.sort_by_key(|a| a.write);
}

/// The register accesses of an instruction word (for a hazard checker reading a cubin).
pub fn word_accesses(w: [u64; 2]) -> Result<(Latency, Vec<Access>), DecodeError> {
    let (f, _) = decode_with_form(w, 0)?;
    Ok((f.latency, accesses_of(f, &w)))
}

/// What the control word of an instruction may hold besides stall, bit 109 and reuse flags
/// (nvdisasm rejects the others; evidence `tests/sass-probes/ctrlscan.txt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CtrlRules {
    /// A write scoreboard ([112:110] ≠ 7): not on stores, branches, barriers…
    pub write_scoreboard: bool,
    /// A read scoreboard ([115:113] ≠ 7): not on branches, DEPBAR, FENCE, GMMA…
    pub read_scoreboard: bool,
    /// A wait mask ([121:116] ≠ 0): not on WARPGROUP.DEPBAR.
    pub wait_mask: bool,
}

impl CtrlRules {
    /// The rules of a form.
    pub fn of(f: &Form) -> CtrlRules {
        CtrlRules {
            write_scoreboard: !f.nowbar,
            read_scoreboard: !f.norbar,
            wait_mask: !f.nowait,
        }
    }
}

impl Instr {
    /// The form and word of the instruction with neutral control bits: the role queries do not
    /// depend on the control word (which may not be final yet).
    fn form_word(&self) -> Result<(&'static Form, [u64; 2]), EncodeError> {
        let mut i = self.clone();
        i.ctrl = Ctrl::default();
        encode_with_form(&i)
    }
    /// The registers the instruction reads and writes, with how many consecutive registers each
    /// access covers (`.64` = 2, `.128` = 4, `IMAD.WIDE` destination = 2).
    pub fn accesses(&self) -> Result<Vec<Access>, EncodeError> {
        let (f, w) = self.form_word()?;
        Ok(accesses_of(f, &w))
    }
    /// Which scoreboards and wait mask the control word may set (the encoder refuses the
    /// others).
    pub fn ctrl_rules(&self) -> Result<CtrlRules, EncodeError> {
        Ok(CtrlRules::of(self.form_word()?.0))
    }
    /// Registers written.
    pub fn defs(&self) -> Result<Vec<Access>, EncodeError> {
        Ok(self.accesses()?.into_iter().filter(|a| a.write).collect())
    }
    /// Registers read.
    pub fn uses(&self) -> Result<Vec<Access>, EncodeError> {
        Ok(self.accesses()?.into_iter().filter(|a| !a.write).collect())
    }
    /// Fixed or variable latency.
    pub fn latency(&self) -> Result<Latency, EncodeError> {
        Ok(self.form_word()?.0.latency)
    }
}
