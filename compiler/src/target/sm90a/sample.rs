//! Random legal words of a form, for property tests against nvdisasm.
//!
//! Every field gets a value from its legal set: registers over their file, predicates with
//! random negation, immediates over their width (biased towards small values and, for floats,
//! towards special values), modifiers from their names, elidable operands often at their
//! default. The control bits are random but always accepted by nvdisasm (stall 1–11, no
//! scoreboards set, random wait mask and yield; reuse flags only on the form's reuse slots).

use super::bits::Field;
use super::form::*;
use super::model::{Ctrl, FloatFmt};

/// splitmix64.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

fn int_value(r: &mut Rng, width: u32) -> u64 {
    let max = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    match r.below(4) {
        0 => r.below(16) & max,
        1 => max.saturating_sub(r.below(16)),
        _ => r.next_u64() & max,
    }
}

fn float_value(r: &mut Rng, fmt: FloatFmt, width: u32) -> u64 {
    let max = (1u64 << width) - 1;
    let specials: &[u64] = match fmt {
        FloatFmt::F32 => &[
            0,
            0x8000_0000,
            0x3f80_0000,
            0xbf80_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0xffc0_0000,
            0x7f80_0001,
            0x3f00_0000,
            0x4e6e_6b28,
            0x4e6e_6b27,
            0x0080_0000,
            1,
        ],
        FloatFmt::F64Hi => &[
            0,
            0x8000_0000,
            0x3ff0_0000,
            0x7ff0_0000,
            0xfff0_0000,
            0x7ff8_0000,
            0x41cd_cd65,
            0x3ff0_0001,
            0x0010_0000,
        ],
        FloatFmt::F16 => &[
            0, 0x8000, 0x3c00, 0x7c00, 0xfc00, 0x7e00, 0x0400, 0x0001, 0xc200,
        ],
        FloatFmt::BF16 => &[0, 0x8000, 0x3f80, 0x7f80, 0xff80, 0x7fc0, 0x0080],
    };
    match r.below(3) {
        0 => r.pick(specials) & max,
        _ => r.next_u64() & max,
    }
}

fn set(w: &mut [u64; 2], f: Field, v: u64) {
    f.set(w, v);
}

fn pick_name(r: &mut Rng, names: Names) -> u64 {
    u64::from(names[r.below(names.len() as u64) as usize].0)
}

/// A register number for a slot covering `n` registers (kept inside the file).
fn gpr_value(r: &mut Rng, n: u8) -> u64 {
    if r.below(8) == 0 {
        return 255;
    }
    let n = u64::from(n.max(1));
    (r.below(255 - n + 1) / n) * n
}

fn term_value(r: &mut Rng, t: &MemTermSpec, has_ur: bool, w: &mut [u64; 2]) {
    let wide = matches!(&t.sfx, Some(SfxSpec { f: None, names }) if names[0].1 == "64");
    let mut rz = false;
    match &t.term {
        TermSpec::Gpr(f) => {
            let v = if t.opt && !t.nz && r.below(4) == 0 {
                255
            } else if wide {
                r.below(127) * 2
            } else {
                r.below(255)
            };
            rz = v == 255;
            set(w, *f, v)
        }
        TermSpec::Ugpr(f) => set(w, *f, if r.below(6) == 0 { 63 } else { r.below(63) }),
        TermSpec::Imm(f) => {
            let v = if r.below(4) == 0 {
                0
            } else {
                int_value(r, f.width())
            };
            set(w, *f, v)
        }
    }
    if let Some(SfxSpec { f: Some(f), names }) = &t.sfx {
        // A scale on a left-out RZ base is not shown without a UR term (so not kept by text).
        let v = if rz && !has_ur {
            names
                .iter()
                .find(|(_, n)| n.is_empty())
                .map(|(v, _)| u64::from(*v))
                .unwrap_or(0)
        } else {
            pick_name(r, names)
        };
        set(w, *f, v);
    }
}

/// A random legal word of form `f`.
pub fn sample(f: &Form, seed: u64) -> [u64; 2] {
    let mut r = Rng::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ f.id as u64);
    let mut w = f.base;
    // Guard.
    set(&mut w, Field::new(12, 3), r.below(8));
    set(&mut w, Field::new(15, 1), u64::from(r.below(4) == 0));
    for m in &f.mods {
        if let ModSpec::Field { f: fl, names } = m {
            let v = pick_name(&mut r, names);
            set(&mut w, *fl, v);
        }
    }
    let mut reuse = 0u8;
    for o in &f.ops {
        let n = match o.regs {
            Regs::N(n) => n,
            Regs::ByMod(..) | Regs::ByField(..) => 4,
        };
        match &o.spec {
            Spec::Gpr(fl) => {
                let mut v = gpr_value(&mut r, n);
                if o.nz && v == 255 {
                    v = 0;
                }
                set(&mut w, *fl, v)
            }
            Spec::Ugpr(fl) => set(
                &mut w,
                *fl,
                if !o.nz && r.below(6) == 0 {
                    63
                } else {
                    let n = u64::from(n.clamp(1, 2));
                    (r.below(63 - n + 1) / n) * n
                },
            ),
            Spec::Pred { f: fl, .. } => set(&mut w, *fl, r.below(8)),
            Spec::Imm { f: fl, .. } => set(&mut w, *fl, int_value(&mut r, fl.width())),
            Spec::Float { f: fl, fmt } => set(&mut w, *fl, float_value(&mut r, *fmt, fl.width())),
            Spec::CBank { bank, off, base } => {
                set(&mut w, *bank, r.below(18));
                set(&mut w, *off, int_value(&mut r, off.width()) & !3);
                if let Some(b) = base {
                    set(&mut w, *b, gpr_value(&mut r, 1));
                }
            }
            Spec::Mem(m) => {
                if let PrefixSpec::Desc(df) = &m.prefix {
                    set(&mut w, *df, r.below(31) * 2);
                }
                let has_ur = m.terms.iter().any(|t| matches!(t.term, TermSpec::Ugpr(_)));
                for t in &m.terms {
                    term_value(&mut r, t, has_ur, &mut w);
                }
            }
            Spec::SReg(fl) => set(&mut w, *fl, r.below(256)),
            Spec::Target { f: fl, reg, .. } => {
                // Keep targets small and non-negative relative to address 0.
                let v = r.below(1 << 12);
                set(&mut w, *fl, v);
                if let Some(rf) = reg {
                    set(&mut w, *rf, gpr_value(&mut r, 2));
                }
            }
            Spec::Bar(fl) => set(&mut w, *fl, r.below(16)),
            Spec::Enum { f: fl, names } => {
                let v = pick_name(&mut r, names);
                set(&mut w, *fl, v)
            }
            Spec::Lit(_) => {}
            Spec::SbSet(fl) => set(&mut w, *fl, r.below(64)),
        }
        for b in [o.neg, o.abs, o.not].into_iter().flatten() {
            set(&mut w, Field::new(b, 1), u64::from(r.coin()));
        }
        for s in &o.sfx {
            if let Some(fl) = s.f {
                let v = pick_name(&mut r, s.names);
                set(&mut w, fl, v);
            }
        }
        // Often take the default of an elidable operand so elision is exercised.
        if let Some(e) = o.elide
            && r.coin()
        {
            o.set_default(&mut w);
            let _ = e;
        }
        // At most one reuse flag: some opcodes reject pairs (IADD3: slots 1 and 2).
        if let Some(s) = o.reuse
            && matches!(o.spec, Spec::Gpr(_))
            && reuse == 0
            && r.below(3) == 0
        {
            reuse |= 1 << s;
        }
    }
    let ctrl = Ctrl {
        stall: 1 + r.below(11) as u8,
        yield_: r.coin(),
        wbar: if f.nowbar || r.coin() {
            7
        } else {
            r.below(7) as u8
        },
        rbar: if f.norbar || r.coin() {
            7
        } else {
            r.below(7) as u8
        },
        wait: if f.nowait { 0 } else { r.below(64) as u8 },
        reuse,
    };
    w[1] = (w[1] & !super::model::CTRL_MASK_HI) | ctrl.to_hi();
    w
}
