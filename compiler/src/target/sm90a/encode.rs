//! Encoding: bind an [`Instr`] to a form of its mnemonic and set the fields.

use super::bits::Field;
use super::float::{f64_to_f16_exact, f64_to_f32_exact, f64hi_exact};
use super::form::*;
use super::model::*;
use super::tables::tables;
use std::fmt;

/// Why an instruction could not be encoded. The message names the opcode, modifier or operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// No form has this mnemonic.
    UnknownOpcode(String),
    /// The modifiers fit no form of the mnemonic; `modifier` is the first one that could not
    /// be placed (empty when one is missing).
    UnknownModifier { opcode: String, modifier: String },
    /// An operand fits no form with these modifiers.
    BadOperand {
        opcode: String,
        index: usize,
        operand: String,
        reason: String,
    },
    /// The number of operands fits no form.
    OperandCount { opcode: String, got: usize },
    /// Something else about the instruction (guard file, control bits, an alias that does not
    /// apply).
    Other { opcode: String, reason: String },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::UnknownOpcode(o) => write!(f, "unknown opcode `{o}`"),
            EncodeError::UnknownModifier { opcode, modifier } if modifier.is_empty() => {
                write!(f, "`{opcode}`: the modifiers fit no form of this opcode")
            }
            EncodeError::UnknownModifier { opcode, modifier } => {
                write!(f, "`{opcode}`: unknown modifier `.{modifier}`")
            }
            EncodeError::BadOperand {
                opcode,
                index,
                operand,
                reason,
            } => write!(f, "`{opcode}`: operand {} `{operand}`: {reason}", index + 1),
            EncodeError::OperandCount { opcode, got } => {
                write!(f, "`{opcode}`: no form takes {got} operands")
            }
            EncodeError::Other { opcode, reason } => write!(f, "`{opcode}`: {reason}"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Encodes an instruction. Branch targets are encoded relative to `instr.addr`.
pub fn encode(instr: &Instr) -> Result<[u64; 2], EncodeError> {
    encode_with_form(instr).map(|(_, w)| w)
}

/// Whether an encoding of `mnemonic` may depend on the instruction's address: some form of it
/// has a branch target ([`Spec::Target`], relative to the address). Any other instruction
/// encodes the same wherever it sits ([`crate::emit::repeats`]).
pub fn encoding_reads_address(mnemonic: &str) -> bool {
    let t = tables();
    t.by_name(mnemonic).iter().any(|&id| {
        t.forms[id]
            .ops
            .iter()
            .any(|o| matches!(o.spec, Spec::Target { .. }))
    })
}

/// Encodes an instruction and says which form it used.
pub fn encode_with_form(instr: &Instr) -> Result<(&'static Form, [u64; 2]), EncodeError> {
    let t = tables();
    let ids = t.by_name(instr.mnemonic);
    let opcode = OpcodeText::reported(instr);
    if ids.is_empty() {
        return Err(EncodeError::UnknownOpcode(instr.mnemonic.to_string()));
    }
    // The best failure: deepest progress wins.
    let mut best: Option<(usize, EncodeError)> = None;
    for &id in ids {
        let f = &t.forms[id];
        match bind(f, instr, &opcode) {
            Ok(w) => return Ok((f, w)),
            Err((depth, e)) => {
                if best.as_ref().is_none_or(|(d, _)| depth > *d) {
                    best = Some((depth, e));
                }
            }
        }
    }
    Err(best
        .map(|b| b.1)
        .unwrap_or_else(|| EncodeError::UnknownOpcode(opcode.text())))
}

/// An instruction encoded but for its control bits: what the scoreboard pass reads (the
/// form and the operand fields) and what [`Encoded::with_ctrl`] completes once the pass has
/// chosen the control word, without matching the forms a second time.
#[derive(Clone, Copy, Debug)]
pub struct Encoded {
    pub form: &'static Form,
    /// The word with the instruction's control bits at the time (they do not affect the
    /// operand fields).
    pub word: [u64; 2],
    /// The reuse flags the operands ask for.
    reuse: u8,
    /// Whether `form` is the first form that binds (else the control bits chose it, and
    /// [`Encoded::with_ctrl`] searches again).
    first: bool,
}

impl Encoded {
    /// Encodes `instr` (its control word included): the same form and word as
    /// [`encode_with_form`] gives.
    ///
    /// The form is the first whose modifiers and operands bind. Control bits only decide
    /// between forms when that form refuses them (a yield with stall 0, a scoreboard on a
    /// form that sets none); then the whole search runs again with them, here and in
    /// [`Encoded::with_ctrl`], so the result is always [`encode_with_form`]'s.
    pub fn new(instr: &Instr) -> Result<Encoded, EncodeError> {
        let t = tables();
        // The forms that do not bind are passed over without a word of why: their errors are
        // never shown (the full search below reports the best one when no form fits).
        let quiet = OpcodeText::quiet(instr);
        for &id in t.by_name(instr.mnemonic) {
            let f = &t.forms[id];
            if let Ok((w, reuse)) = bind_fields(f, instr, &quiet) {
                if let Ok(word) = apply_ctrl(f, w, instr.ctrl, reuse, &quiet) {
                    return Ok(Encoded {
                        form: f,
                        word,
                        reuse,
                        first: true,
                    });
                }
                break;
            }
        }
        // No form binds, or the first that binds refuses the control bits: the full search
        // (its error, or a later form).
        let (form, word) = encode_with_form(instr)?;
        let reuse = bind_fields(form, instr, &quiet).map_or(0, |(_, r)| r);
        Ok(Encoded {
            form,
            word,
            reuse,
            first: false,
        })
    }

    /// The final word of `instr` (the instruction this was encoded from, now carrying its
    /// control word): the same as [`encode`] gives.
    pub fn with_ctrl(&self, instr: &Instr) -> Result<[u64; 2], EncodeError> {
        if !self.first {
            return encode(instr);
        }
        apply_ctrl(
            self.form,
            self.word,
            instr.ctrl,
            self.reuse,
            &OpcodeText::reported(instr),
        )
        .or_else(|_| encode(instr))
    }
}

/// The opcode with its modifiers (`LDG.E.64`), for error messages: built only when one is
/// reported (building it for every instruction cost 6% of encoding).
///
/// A `quiet` search builds no message at all (an empty opcode, no operand text, no reason): it
/// only asks whether a form binds. [`Encoded::new`] tries the forms of a mnemonic in order
/// quietly: without the messages of the forms that did not fit, `Encoded::new` went from 14.7M
/// to 8.4M of the 57.0M instructions of the emit stage of `pyptx/fa_ws_pingpong`
/// (`docs/passes/scoreboard.md`, "Cost").
#[derive(Clone, Copy)]
struct OpcodeText<'a> {
    instr: &'a Instr,
    quiet: bool,
}

impl<'a> OpcodeText<'a> {
    fn reported(instr: &'a Instr) -> OpcodeText<'a> {
        OpcodeText {
            instr,
            quiet: false,
        }
    }

    fn quiet(instr: &'a Instr) -> OpcodeText<'a> {
        OpcodeText { instr, quiet: true }
    }

    fn text(&self) -> String {
        if self.quiet {
            String::new()
        } else {
            self.instr.opcode_text()
        }
    }
}

/// The most modifier specs a form may have (`bind` keeps their values on the stack).
const MAX_MODS: usize = 32;

/// Progress measure for error selection: modifiers matched count 1000, each operand 1.
type Fail = (usize, EncodeError);

fn bind(f: &Form, instr: &Instr, opcode: &OpcodeText) -> Result<[u64; 2], Fail> {
    let (w, reuse) = bind_fields(f, instr, opcode)?;
    apply_ctrl(f, w, instr.ctrl, reuse, opcode).map_err(|e| (3000, e))
}

/// Everything of `bind` but the control bits: the word, and the reuse flags the operands ask
/// for (`R2.reuse`).
fn bind_fields(f: &Form, instr: &Instr, opcode: &OpcodeText) -> Result<([u64; 2], u8), Fail> {
    let mut w = f.base;
    // Guard.
    let gfile = if f.uguard {
        RegFile::UPred
    } else {
        RegFile::Pred
    };
    if instr.guard.pred.file != gfile && !instr.guard.is_always() {
        return Err((
            2000,
            EncodeError::Other {
                opcode: opcode.text(),
                reason: format!(
                    "the guard must be a {} predicate, not `{}`",
                    if f.uguard { "uniform" } else { "non-uniform" },
                    instr.guard.pred
                ),
            },
        ));
    }
    if instr.guard.pred.num > 7 {
        return Err((
            2000,
            EncodeError::Other {
                opcode: opcode.text(),
                reason: format!("bad guard predicate {}", instr.guard.pred),
            },
        ));
    }
    Field::new(12, 3).set(&mut w, u64::from(instr.guard.pred.num));
    Field::new(15, 1).set(&mut w, u64::from(instr.guard.neg));

    // Modifiers, on the stack (a test checks that every form fits).
    let mut modvals_buf = [0u64; MAX_MODS];
    let mut alias_buf = [false; MAX_MODS];
    let (modvals, alias_given) = if f.mods.len() <= MAX_MODS {
        (
            &mut modvals_buf[..f.mods.len()],
            &mut alias_buf[..f.mods.len()],
        )
    } else {
        return Err((
            0,
            EncodeError::Other {
                opcode: opcode.text(),
                reason: format!("a form with {} modifier specs", f.mods.len()),
            },
        ));
    };
    let mut maxpos = 0usize;
    let recalled = bound_mods_recalled(f, &instr.mods, modvals, alias_given);
    if !recalled
        && !match_mods(
            &f.mods,
            0,
            &instr.mods,
            0,
            modvals,
            alias_given,
            &mut maxpos,
        )
    {
        let modifier = instr
            .mods
            .get(maxpos)
            .filter(|_| !opcode.quiet)
            .map(|s| s.to_string());
        return Err((
            maxpos,
            EncodeError::UnknownModifier {
                opcode: opcode.text(),
                modifier: modifier.unwrap_or_default(),
            },
        ));
    }
    if !recalled {
        remember_bound_mods(f, &instr.mods, modvals, alias_given);
    }
    for (m, v) in f.mods.iter().zip(modvals.iter()) {
        if let ModSpec::Field { f: fld, .. } = m {
            fld.set(&mut w, *v);
        }
    }

    // Operands.
    let mut reuse = 0u8;
    let mut err: Option<(usize, EncodeError)> = None;
    let mut wt = w;
    if !match_ops(f, 0, instr, 0, &mut wt, &mut reuse, &mut err, opcode) {
        return Err(err.map(|(d, e)| (1000 + d, e)).unwrap_or_else(|| {
            (
                1000,
                EncodeError::OperandCount {
                    opcode: opcode.text(),
                    got: instr.operands.len(),
                },
            )
        }));
    }
    w = wt;

    // Aliases must hold when written.
    let vals = alias_given
        .iter()
        .any(|&a| a)
        .then(|| vals_of(f, &w, modvals));
    for (i, m) in f.mods.iter().enumerate() {
        if let ModSpec::Alias { name, when } = m
            && alias_given[i]
            && let Some(vals) = &vals
            && !when.holds(vals)
        {
            {
                return Err((
                    3000,
                    EncodeError::Other {
                        opcode: opcode.text(),
                        reason: format!("`.{name}` does not apply to these operands"),
                    },
                ));
            }
        }
    }

    Ok((w, reuse))
}

/// Writes the control bits into an encoded word, with the reuse flags the operands ask for,
/// after checking them against the form (yield needs a stall of 1-11; forms that take no wait
/// mask or scoreboard).
fn apply_ctrl(
    f: &Form,
    mut w: [u64; 2],
    ctrl: Ctrl,
    reuse: u8,
    opcode: &OpcodeText,
) -> Result<[u64; 2], EncodeError> {
    let mut ctrl = ctrl;
    ctrl.reuse |= reuse;
    if ctrl.yield_ && (ctrl.stall == 0 || ctrl.stall >= 12) {
        return Err(EncodeError::Other {
            opcode: opcode.text(),
            reason: format!(
                "control bits: bit 109 (yield) needs a stall of 1-11, not {}",
                ctrl.stall
            ),
        });
    }
    if f.nowait && ctrl.wait != 0 {
        return Err(EncodeError::Other {
            opcode: opcode.text(),
            reason: "control bits: this instruction takes no scoreboard wait mask".into(),
        });
    }
    if f.nowbar && ctrl.wbar != 7 {
        return Err(EncodeError::Other {
            opcode: opcode.text(),
            reason: format!(
                "control bits: this instruction sets no write scoreboard (SB{} given)",
                ctrl.wbar
            ),
        });
    }
    if f.norbar && ctrl.rbar != 7 {
        return Err(EncodeError::Other {
            opcode: opcode.text(),
            reason: format!(
                "control bits: this instruction sets no read scoreboard (SB{} given)",
                ctrl.rbar
            ),
        });
    }
    if ctrl.stall > 15 || ctrl.wbar > 7 || ctrl.rbar > 7 || ctrl.wait > 63 || ctrl.reuse > 15 {
        return Err(EncodeError::Other {
            opcode: opcode.text(),
            reason: "control field out of range".into(),
        });
    }
    w[1] = (w[1] & !CTRL_MASK_HI) | ctrl.to_hi();
    Ok(w)
}

/// The raw values alias conditions look at.
pub(crate) fn vals_of(f: &Form, w: &[u64; 2], modvals: &[u64]) -> Vals {
    Vals {
        ops: f
            .ops
            .iter()
            .map(|o| o.main_field().map(|fl| fl.get(w)).unwrap_or(0))
            .collect(),
        mods: modvals.to_vec(),
    }
}

/// Modifiers that bound to a form's modifier specs: the value each spec took and which alias
/// modifiers were given. What [`match_mods`] finds depends on the form and the modifiers alone,
/// and a function repeats a few (opcode, modifiers) pairs thousands of times: matching them
/// again was 6.1M of the 311M instructions of compiling the straight-line 16k kernel (750 an
/// instruction), recalling them costs a search of a few entries.
struct BoundMods {
    form: usize,
    mods: Vec<&'static str>,
    vals: Vec<u64>,
    /// Bit `i`: alias spec `i` was given (`MAX_MODS` specs at most).
    alias: u32,
}

/// The most bindings remembered per thread (searched in order; the first ones stay).
const BOUND_MODS_MAX: usize = 64;

thread_local! {
    static BOUND_MODS: std::cell::RefCell<Vec<BoundMods>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Modifier lists compared token by token, a shared `&'static str` by address first.
fn same_mods(a: &[&'static str], b: &[&'static str]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| std::ptr::eq(*x, *y) || x == y)
}

/// Fills `vals` and `alias` from a remembered binding of `mods` to `f`: whether there was one.
fn bound_mods_recalled(
    f: &Form,
    mods: &[&'static str],
    vals: &mut [u64],
    alias: &mut [bool],
) -> bool {
    BOUND_MODS.with(|memo| {
        let mut memo = memo.borrow_mut();
        let Some(at) = memo
            .iter()
            .position(|b| b.form == f.id && same_mods(&b.mods, mods))
        else {
            return false;
        };
        let b = &memo[at];
        vals.copy_from_slice(&b.vals);
        for (i, a) in alias.iter_mut().enumerate() {
            *a = b.alias >> i & 1 == 1;
        }
        // A hit moves one place towards the front (each binding is remembered once, so the
        // order only decides how soon the search finds it): the few bindings a function repeats
        // gather at the front.
        if at > 0 {
            memo.swap(at, at - 1);
        }
        true
    })
}

/// Remembers the binding [`match_mods`] found for `mods` and `f`, while there is room.
fn remember_bound_mods(f: &Form, mods: &[&'static str], vals: &[u64], alias: &[bool]) {
    BOUND_MODS.with(|memo| {
        let mut memo = memo.borrow_mut();
        if memo.len() >= BOUND_MODS_MAX {
            return;
        }
        memo.push(BoundMods {
            form: f.id,
            mods: mods.to_vec(),
            vals: vals.to_vec(),
            alias: alias
                .iter()
                .enumerate()
                .fold(0, |m, (i, &a)| m | u32::from(a) << i),
        });
    })
}

/// How many dot-separated tokens `name` has (the empty name has none).
fn tok_count(name: &str) -> usize {
    if name.is_empty() {
        0
    } else {
        name.bytes().filter(|&b| b == b'.').count() + 1
    }
}

fn starts_with(toks: &[&'static str], pos: usize, name: &str) -> Option<usize> {
    if name.is_empty() {
        return Some(0);
    }
    // Most names are one token: compare it whole (splitting costs more than the comparison).
    let first = toks.get(pos)?;
    if !name.as_bytes().contains(&b'.') {
        return (*first == name).then_some(1);
    }
    let mut k = 0;
    for t in name.split('.') {
        if toks.get(pos + k) != Some(&t) {
            return None;
        }
        k += 1;
    }
    Some(k)
}

fn match_mods(
    specs: &[ModSpec],
    i: usize,
    toks: &[&'static str],
    pos: usize,
    vals: &mut [u64],
    alias: &mut [bool],
    maxpos: &mut usize,
) -> bool {
    *maxpos = (*maxpos).max(pos);
    if i == specs.len() {
        return pos == toks.len();
    }
    match &specs[i] {
        ModSpec::Fixed(t) => match starts_with(toks, pos, t) {
            Some(k) => match_mods(specs, i + 1, toks, pos + k, vals, alias, maxpos),
            None => false,
        },
        ModSpec::Alias { name, .. } => {
            if let Some(k) = starts_with(toks, pos, name) {
                alias[i] = true;
                if match_mods(specs, i + 1, toks, pos + k, vals, alias, maxpos) {
                    return true;
                }
                alias[i] = false;
            }
            match_mods(specs, i + 1, toks, pos, vals, alias, maxpos)
        }
        ModSpec::Field { names, .. } => {
            // Longest names first (by token count; table order among equals), the empty name
            // last. Usually only one or two names match here: collect those in one pass (a
            // matched name's length is the tokens it took) and try them in that order.
            let mut found = [(0u64, 0usize); 16];
            let mut n_found = 0;
            for (v, n) in names.iter() {
                if let Some(k) = starts_with(toks, pos, n) {
                    if n_found == found.len() {
                        n_found = usize::MAX;
                        break;
                    }
                    found[n_found] = (u64::from(*v), k);
                    n_found += 1;
                }
            }
            if n_found != usize::MAX {
                let found = &mut found[..n_found];
                found.sort_by_key(|&(_, k)| std::cmp::Reverse(k)); // stable
                for &(v, k) in found.iter() {
                    vals[i] = v;
                    if match_mods(specs, i + 1, toks, pos + k, vals, alias, maxpos) {
                        return true;
                    }
                }
                return false;
            }
            let longest = names.iter().map(|(_, n)| tok_count(n)).max().unwrap_or(0);
            for len in (0..=longest).rev() {
                for (v, n) in names.iter().filter(|(_, n)| tok_count(n) == len) {
                    if let Some(k) = starts_with(toks, pos, n) {
                        vals[i] = u64::from(*v);
                        if match_mods(specs, i + 1, toks, pos + k, vals, alias, maxpos) {
                            return true;
                        }
                    }
                }
            }
            false
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn match_ops(
    f: &Form,
    si: usize,
    instr: &Instr,
    oi: usize,
    w: &mut [u64; 2],
    reuse: &mut u8,
    err: &mut Option<(usize, EncodeError)>,
    opcode: &OpcodeText,
) -> bool {
    if si == f.ops.len() {
        if oi == instr.operands.len() {
            return true;
        }
        if err.as_ref().is_none_or(|(d, _)| 2 * oi >= *d) {
            let e = EncodeError::OperandCount {
                opcode: opcode.text(),
                got: instr.operands.len(),
            };
            *err = Some((2 * oi, e));
        }
        return false;
    }
    let spec = &f.ops[si];
    if oi < instr.operands.len() {
        let saved = (*w, *reuse);
        match bind_op(spec, &instr.operands[oi], instr.addr, w) {
            Ok(r) => {
                *reuse |= r;
                if match_ops(f, si + 1, instr, oi + 1, w, reuse, err, opcode) {
                    return true;
                }
            }
            Err(_) if opcode.quiet => {}
            Err(unbound) => {
                let o = &instr.operands[oi];
                let reason = match unbound {
                    Unbound::Kind => {
                        format!(
                            "expected {}, found {}",
                            spec_name(&spec.spec),
                            kind_name(&o.kind)
                        )
                    }
                    Unbound::Other(reason) => reason,
                };
                // A value that has the right kind but not the right range says more than a
                // kind mismatch (of another form) at the same operand.
                let prio = 2 * oi + usize::from(!reason.starts_with("expected "));
                // The message is built only when it is the best so far (most attempts fail on
                // the way to the form that fits, and their messages are never shown).
                if err.as_ref().is_none_or(|(d, _)| prio > *d) {
                    let e = EncodeError::BadOperand {
                        opcode: opcode.text(),
                        index: oi,
                        operand: super::print::operand_text(o),
                        reason,
                    };
                    *err = Some((prio, e));
                }
            }
        }
        (*w, *reuse) = saved;
    }
    if spec.elide.is_some() {
        let saved = *w;
        spec.set_default(w);
        if match_ops(f, si + 1, instr, oi, w, reuse, err, opcode) {
            return true;
        }
        *w = saved;
    } else if oi >= instr.operands.len() && err.as_ref().is_none_or(|(d, _)| 2 * oi > *d) {
        let e = EncodeError::OperandCount {
            opcode: opcode.text(),
            got: instr.operands.len(),
        };
        *err = Some((2 * oi, e));
    }
    false
}

fn fits_signed(v: i64, width: u32) -> bool {
    if width >= 64 {
        return true;
    }
    let lo = -(1i128 << (width - 1));
    let hi = 1i128 << (width - 1);
    (lo..hi).contains(&(v as i128))
}

fn fits_either(v: i64, width: u32) -> bool {
    if width >= 64 {
        return true;
    }
    let lo = -(1i128 << (width - 1));
    let hi = 1i128 << width;
    (lo..hi).contains(&(v as i128))
}

fn kind_name(k: &OperandKind) -> &'static str {
    match k {
        OperandKind::Reg(r) => match r.file {
            RegFile::Gpr => "a register",
            RegFile::Ugpr => "a uniform register",
            RegFile::Pred => "a predicate",
            RegFile::UPred => "a uniform predicate",
            RegFile::Barrier => "a convergence barrier",
        },
        OperandKind::Int(_) => "an integer",
        OperandKind::Float(_) | OperandKind::FloatBits(..) => "a float",
        OperandKind::CBank(_) => "a constant-bank operand",
        OperandKind::Mem(_) => "a memory operand",
        OperandKind::SReg(_) => "a special register",
        OperandKind::Sym(_) => "a keyword",
        OperandKind::SbSet(_) => "a scoreboard set",
        OperandKind::RegTarget(..) => "a register and a target",
    }
}

fn spec_name(s: &Spec) -> &'static str {
    match s {
        Spec::Gpr(_) => "a register",
        Spec::Ugpr(_) => "a uniform register",
        Spec::Pred { uniform: false, .. } => "a predicate",
        Spec::Pred { uniform: true, .. } => "a uniform predicate",
        Spec::Imm { .. } => "an integer immediate",
        Spec::Float { .. } => "a float immediate",
        Spec::CBank { .. } => "a constant-bank operand",
        Spec::Mem(_) => "a memory operand",
        Spec::SReg(_) => "a special register",
        Spec::Target { reg: None, .. } => "a branch target",
        Spec::Target { reg: Some(_), .. } => "a register and a target",
        Spec::Bar(_) => "a convergence barrier",
        Spec::Enum { .. } | Spec::Lit(_) => "a keyword",
        Spec::SbSet(_) => "a scoreboard set",
    }
}

/// Why an operand does not bind to a slot: its kind is not the slot's (the usual failure of a
/// form that does not fit; `match_ops` spells it out, `expected …, found …`, only when it
/// reports it), or the reason.
enum Unbound {
    Kind,
    Other(String),
}

impl From<String> for Unbound {
    fn from(reason: String) -> Unbound {
        Unbound::Other(reason)
    }
}

impl From<&str> for Unbound {
    fn from(reason: &str) -> Unbound {
        Unbound::Other(reason.to_string())
    }
}

/// Binds one operand to a slot; returns the reuse bits it sets.
fn bind_op(spec: &OpSpec, o: &Operand, addr: u64, w: &mut [u64; 2]) -> Result<u8, Unbound> {
    // Modifiers.
    let flag = |want: bool, bit: Option<u8>, what: &str, w: &mut [u64; 2]| -> Result<(), String> {
        match bit {
            Some(b) => {
                Field::new(b, 1).set(w, u64::from(want));
                Ok(())
            }
            None if want => Err(format!("{what} is not allowed here")),
            None => Ok(()),
        }
    };
    let is_num = matches!(
        o.kind,
        OperandKind::Int(_) | OperandKind::Float(_) | OperandKind::FloatBits(..)
    );
    if !is_num {
        flag(o.neg, spec.neg, "`-`", w)?;
    } else if spec.neg.is_some() {
        flag(false, spec.neg, "`-`", w)?;
    }
    flag(o.abs, spec.abs, "`|..|`", w)?;
    flag(o.not, spec.not, "`~`/`!`", w)?;
    let mut reuse = 0u8;
    if o.reuse {
        match spec.reuse {
            Some(s) => reuse |= 1 << s,
            None => return Err("`.reuse` is not allowed here".into()),
        }
    }
    // Suffixes.
    let mut si = 0usize;
    for s in &spec.sfx {
        let given = o.suffix.get(si).copied();
        let hit = given.and_then(|g| s.names.iter().find(|(_, n)| *n == g));
        match (hit, s.f) {
            (Some((v, _)), Some(fl)) => {
                fl.set(w, u64::from(*v));
                si += 1;
            }
            (Some(_), None) => si += 1,
            (None, Some(fl)) => match s.names.iter().find(|(_, n)| n.is_empty()) {
                Some((v, _)) => fl.set(w, u64::from(*v)),
                None => {
                    return Err(format!(
                        "needs a suffix: one of {}",
                        s.names
                            .iter()
                            .map(|(_, n)| format!(".{n}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                    .into());
                }
            },
            (None, None) => return Err(format!("needs the suffix .{}", s.names[0].1).into()),
        }
    }
    if si < o.suffix.len() {
        return Err(format!("unexpected suffix `.{}`", o.suffix[si]).into());
    }

    if spec.nz && o.as_reg().is_some_and(|r| r.is_zero_or_true()) {
        return Err(format!(
            "{} is not allowed here",
            o.as_reg().map(|r| r.to_string()).unwrap_or_default()
        )
        .into());
    }
    match (&spec.spec, &o.kind) {
        (Spec::Gpr(f), OperandKind::Reg(r)) if r.file == RegFile::Gpr => f.set(w, u64::from(r.num)),
        (Spec::Ugpr(f), OperandKind::Reg(r)) if r.file == RegFile::Ugpr => {
            if r.num > 63 {
                return Err("uniform registers are UR0-UR62 and URZ".into());
            }
            f.set(w, u64::from(r.num))
        }
        (Spec::Pred { f, uniform, inv }, OperandKind::Reg(r))
            if r.file
                == (if *uniform {
                    RegFile::UPred
                } else {
                    RegFile::Pred
                }) =>
        {
            if r.num > 7 {
                return Err("predicates are P0-P6 and PT".into());
            }
            f.set(w, u64::from(if *inv { 7 - r.num } else { r.num }))
        }
        (Spec::Bar(f), OperandKind::Reg(r)) if r.file == RegFile::Barrier => {
            if u64::from(r.num) > f.max() {
                return Err("barriers are B0-B15".into());
            }
            f.set(w, u64::from(r.num))
        }
        (Spec::Imm { f, .. }, OperandKind::Int(v)) => {
            let v = if o.neg { v.wrapping_neg() } else { *v };
            if !fits_either(v, f.width()) {
                return Err(format!("does not fit in {} bits", f.width()).into());
            }
            f.set(w, v as u64)
        }
        (Spec::Float { f, fmt }, k) => {
            let bits = match k {
                OperandKind::Float(x) => {
                    let x = if o.neg { -x } else { *x };
                    match fmt {
                        FloatFmt::F32 => f64_to_f32_exact(x).map(u64::from),
                        FloatFmt::F64Hi => f64hi_exact(x).map(u64::from),
                        FloatFmt::F16 => f64_to_f16_exact(x).map(u64::from),
                        FloatFmt::BF16 => f64_to_f32_exact(x)
                            .filter(|b| b & 0xffff == 0)
                            .map(|b| u64::from(b >> 16)),
                    }
                    .ok_or_else(|| format!("{x} is not exactly representable in this format"))?
                }
                OperandKind::FloatBits(g, b) if g == fmt => *b,
                OperandKind::FloatBits(..) => return Err("float format mismatch".into()),
                OperandKind::Int(v) if !o.neg && *v >= 0 && (*v as u64) <= f.max() => *v as u64,
                _ => return Err(Unbound::Kind),
            };
            f.set(w, bits)
        }
        (Spec::CBank { bank, off, base }, OperandKind::CBank(c)) => {
            if u64::from(c.bank) > bank.max() {
                return Err("constant bank out of range".into());
            }
            if !fits_signed(c.offset, off.width()) {
                return Err("constant-bank offset out of range".into());
            }
            bank.set(w, u64::from(c.bank));
            off.set(w, c.offset as u64);
            match (base, c.base) {
                (Some(bf), Some(r)) if r.file == RegFile::Gpr => bf.set(w, u64::from(r.num)),
                (Some(bf), None) => bf.set(w, 255),
                (None, None) => {}
                _ => return Err("this constant-bank operand takes no register".into()),
            }
        }
        (Spec::Mem(ms), OperandKind::Mem(m)) => bind_mem(ms, m, w)?,
        (Spec::SReg(f), OperandKind::SReg(n)) => f.set(w, u64::from(*n)),
        (Spec::Target { f, scale, rel, reg }, k) => {
            let t = match (reg, k) {
                (None, OperandKind::Int(t)) => *t,
                (Some(rf), OperandKind::RegTarget(r, t)) if r.file == RegFile::Gpr => {
                    rf.set(w, u64::from(r.num));
                    *t
                }
                _ => return Err(Unbound::Kind),
            };
            let off = if *rel {
                t.wrapping_sub(addr as i64).wrapping_sub(16)
            } else {
                t
            };
            let s = i64::from(*scale);
            if off % s != 0 {
                return Err(format!("target not a multiple of {scale}").into());
            }
            let v = off / s;
            let ok = fits_signed(v, f.width()) || (!*rel && fits_either(v, f.width()));
            if !ok {
                return Err("branch target out of range".into());
            }
            f.set(w, v as u64);
        }
        (Spec::Enum { f, .. }, OperandKind::Int(v))
            if o.hidden && *v >= 0 && (*v as u64) <= f.max() =>
        {
            f.set(w, *v as u64)
        }
        (Spec::Enum { f, names }, OperandKind::Sym(s)) => {
            match names.iter().find(|(_, n)| n == s) {
                Some((v, _)) => f.set(w, u64::from(*v)),
                None => return Err(format!("`{s}` is not one of the keywords of this slot").into()),
            }
        }
        (Spec::Lit(l), OperandKind::Sym(s)) if l == s => {}
        (Spec::SbSet(f), OperandKind::SbSet(m)) => f.set(w, u64::from(*m)),
        _ => return Err(Unbound::Kind),
    }
    Ok(reuse)
}

/// Binds a memory operand to its slot.
fn bind_mem(ms: &MemSpec, m: &Mem, w: &mut [u64; 2]) -> Result<(), String> {
    match (&ms.prefix, &m.prefix) {
        (PrefixSpec::None, MemPrefix::None) | (PrefixSpec::GDesc, MemPrefix::GDesc) => {}
        (PrefixSpec::Desc(f), MemPrefix::Desc(r)) if r.file == RegFile::Ugpr => {
            f.set(w, u64::from(r.num))
        }
        (PrefixSpec::Desc(_), _) => return Err("expected `desc[URx][...]`".into()),
        (PrefixSpec::GDesc, _) => return Err("expected `gdesc[URx]`".into()),
        (PrefixSpec::None, _) => return Err("this address takes no descriptor".into()),
    }
    if bind_terms(&ms.terms, 0, &m.terms, 0, w) {
        Ok(())
    } else {
        Err("the address terms fit no form of this slot".into())
    }
}

fn bind_terms(
    specs: &[MemTermSpec],
    si: usize,
    terms: &[MemTerm],
    ti: usize,
    w: &mut [u64; 2],
) -> bool {
    if si == specs.len() {
        return ti == terms.len();
    }
    let s = &specs[si];
    if ti < terms.len() {
        let saved = *w;
        if bind_term(s, &terms[ti], w) && bind_terms(specs, si + 1, terms, ti + 1, w) {
            return true;
        }
        *w = saved;
    }
    // Leave the term out: its zero value.
    let (f, zero) = match &s.term {
        TermSpec::Gpr(f) => (f, 255),
        TermSpec::Ugpr(f) => (f, 63),
        TermSpec::Imm(f) => (f, 0),
    };
    let sfx_ok = match &s.sfx {
        Some(SfxSpec { f: Some(_), names }) => names.iter().any(|(_, n)| n.is_empty()),
        Some(SfxSpec { f: None, .. }) => false,
        None => true,
    };
    // Only terms nvdisasm leaves out (RZ/URZ/0) may be missing from the text.
    if s.opt && sfx_ok {
        let saved = *w;
        f.set(w, zero);
        if let Some(SfxSpec { f: Some(sf), names }) = &s.sfx
            && let Some((v, _)) = names.iter().find(|(_, n)| n.is_empty())
        {
            sf.set(w, u64::from(*v));
        }
        if bind_terms(specs, si + 1, terms, ti, w) {
            return true;
        }
        *w = saved;
    }
    false
}

fn bind_term(s: &MemTermSpec, t: &MemTerm, w: &mut [u64; 2]) -> bool {
    let sfx_ok = |given: Option<&'static str>, w: &mut [u64; 2]| -> bool {
        match (&s.sfx, given) {
            (None, None) => true,
            (None, Some(_)) => false,
            (Some(SfxSpec { f: None, names }), g) => g == Some(names[0].1),
            (Some(SfxSpec { f: Some(f), names }), g) => {
                let g = g.unwrap_or("");
                match names.iter().find(|(_, n)| *n == g) {
                    Some((v, _)) => {
                        f.set(w, u64::from(*v));
                        true
                    }
                    None => false,
                }
            }
        }
    };
    match (&s.term, t) {
        (TermSpec::Gpr(f), MemTerm::Reg(r, sx))
            if r.file == RegFile::Gpr && !(s.nz && r.num == 255) =>
        {
            f.set(w, u64::from(r.num));
            sfx_ok(*sx, w)
        }
        (TermSpec::Ugpr(f), MemTerm::Reg(r, sx)) if r.file == RegFile::Ugpr && r.num <= 63 => {
            f.set(w, u64::from(r.num));
            sfx_ok(*sx, w)
        }
        (TermSpec::Imm(f), MemTerm::Imm(v)) if fits_either(*v, f.width()) => {
            f.set(w, *v as u64);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_fits_the_modifier_buffer() {
        let t = tables();
        let most = t.forms.iter().map(|f| f.mods.len()).max().unwrap_or(0);
        assert!(most <= MAX_MODS, "a form has {most} modifier specs");
    }
}
