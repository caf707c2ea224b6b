//! Special registers: `%tid`, `%ctaid`, `%ntid`, `%laneid`, the cluster registers, … as
//! `S2R`/`CS2R` of an `SR_*` register, `LDC` from constant bank 0, or ptxas's short sequences
//! (ptxas-facts.md §a.3.2, §c.1; `02_cluster_sregs`).
//!
//! | PTX | SASS |
//! |---|---|
//! | `%tid.*`, `%ctaid.*`, `%laneid`, `%smid`, `%lanemask_*` | `S2R SR_TID.*`, `SR_CTAID.*`, `SR_LANEID`, `SR_VIRTUALSMID`, `SR_{EQ,LT,LE,GT,GE}MASK` |
//! | `%ntid.*`, `%nctaid.*`, `%nsmid`, `%gridid`, `%dynamic_smem_size`, `%envregN`, `%reserved_smem_offset_end` | `LDC c[0x0][0x0/0xc/0x10c/0x30(.64)/0x2c/0x40+4N/0x68]` |
//! | `%warpid` / `%nwarpid` | `S2R SR_VIRTID` / `SR_VIRTCFG`; `SHF.R.U32.HI 0x8`; `SGXT.U32 7` / `8` |
//! | `%clock`, `%clock_hi`, `%clock64`, `%globaltimer(_lo/_hi)`, `%pmN` | `CS2R(.32) SR_CLOCKLO/HI`, `SR_GLOBALTIMERLO/HI`, `SR_PMn` |
//! | `%total_smem_size` / `%aggr_smem_size` | `SR_SMEMSZ − c[0x114]` / `min(SR_SMEMSZ, c[0x13c])` |
//! | `%reserved_smem_offset_begin` / `_cap` | `0` / `0x400` |
//! | `%cluster_ctarank` | `S2R SR_CgaCtaId` |
//! | `%cluster_nctarank`, `%cluster_nctaid.*`, `%nclusterid.*` | `LDC c[0x0][0x188]`, `c[0x144..]`, `c[0x15c..]` |
//! | `%clusterid.*` | `I2FP.F32.U32 ctaid; FMUL c[0x150+4i]; F2I.U32.TRUNC.NTZ` (the driver's reciprocal) |
//! | `%cluster_ctaid.*` | the same quotient `q`, then `ctaid − q·%cluster_nctaid` (`IADD3 −q; IMAD`) |
//! | `%is_explicit_cluster` | `c[0x0][0x140] == 1` (`LDC; ISETP.EQ`), never folded |
//! | `.w` components | `0` |

use super::{Cx, cb, sr};
use crate::frontend::ast::Name;
use crate::mir::{Inst, OpKind, Operand, PReg, Reg, RegClass};

/// More `SR_*` numbers (nvdisasm's table).
mod srn {
    pub const VIRTCFG: u8 = 0x02;
    pub const VIRTID: u8 = 0x03;
    pub const SMEMSZ: u8 = 0x32;
    pub const EQMASK: u8 = 0x38;
    pub const VIRTUALSMID: u8 = 0x43;
    pub const CLOCKLO: u8 = 0x50;
    pub const GLOBALTIMERLO: u8 = 0x52;
    pub const PM0: u8 = 0x64;
}

/// Constant bank 0 offsets (ptxas-facts.md §c.1).
mod cbo {
    pub const GRIDID: i64 = 0x30;
    pub const DYNAMIC_SMEM: i64 = 0x2c;
    pub const ENVREG: i64 = 0x40;
    pub const RESERVED_SMEM_END: i64 = 0x68;
    pub const NSMID: i64 = 0x10c;
    pub const TOTAL_SMEM_SUB: i64 = 0x114;
    pub const AGGR_SMEM: i64 = 0x13c;
    pub const EXPLICIT_CLUSTER: i64 = 0x140;
    pub const CLUSTER_NCTAID: i64 = 0x144;
    pub const CLUSTER_RECIP: i64 = 0x150;
    pub const NCLUSTERID: i64 = 0x15c;
    pub const CLUSTER_NCTARANK: i64 = 0x188;
}

fn cbank(off: i64) -> Operand {
    Operand::new(OpKind::CBank {
        bank: 0,
        base: None,
        offset: off,
    })
}

fn rz() -> Operand {
    Operand::use_(Reg::phys(PReg::RZ))
}

impl Cx<'_> {
    /// Reads a special register into a fresh register (64-bit registers into a pair,
    /// `%is_explicit_cluster` into a predicate).
    pub(super) fn sreg(&mut self, name: &Name, component: Option<&Name>) -> Option<Reg> {
        let comp: Option<u8> = match component.map(|c| c.text.as_str()) {
            None => None,
            Some(".x") => Some(0),
            Some(".y") => Some(1),
            Some(".z") => Some(2),
            Some(".w") => Some(3),
            Some(_) => {
                self.error(name.span, format!("`{}` has no such component", name.text));
                return None;
            }
        };
        let n = name.text.as_str();
        let xyz = |c: Option<u8>| c.filter(|c| *c < 3).map(i64::from);
        let vector = matches!(
            n,
            "%tid"
                | "%ntid"
                | "%ctaid"
                | "%nctaid"
                | "%clusterid"
                | "%nclusterid"
                | "%cluster_ctaid"
                | "%cluster_nctaid"
        );
        if vector && comp == Some(3) {
            // The `.w` components are 0.
            return Some(self.imm_reg(0));
        }
        if vector != comp.is_some() {
            self.error(
                name.span,
                format!("ptxc cannot read the special register `{n}` this way"),
            );
            return None;
        }
        let r = match n {
            "%tid" => self.s2r(sr::TID_X + comp?),
            "%ctaid" => self.s2r(sr::CTAID_X + comp?),
            "%ntid" => self.ldc(cb::NTID + 4 * xyz(comp)?, 1),
            "%nctaid" => self.ldc(cb::NCTAID + 4 * xyz(comp)?, 1),
            "%laneid" => self.s2r(sr::LANEID),
            "%warpid" => self.virt_field(srn::VIRTID, 7),
            "%nwarpid" => self.virt_field(srn::VIRTCFG, 8),
            "%smid" => self.s2r(srn::VIRTUALSMID),
            "%nsmid" => self.ldc(cbo::NSMID, 1),
            "%gridid" => self.ldc(cbo::GRIDID, 2),
            "%lanemask_eq" => self.s2r(srn::EQMASK),
            "%lanemask_lt" => self.s2r(srn::EQMASK + 1),
            "%lanemask_le" => self.s2r(srn::EQMASK + 2),
            "%lanemask_gt" => self.s2r(srn::EQMASK + 3),
            "%lanemask_ge" => self.s2r(srn::EQMASK + 4),
            "%clock" => self.cs2r(srn::CLOCKLO, 1),
            "%clock_hi" => self.cs2r(srn::CLOCKLO + 1, 1),
            "%clock64" => self.cs2r(srn::CLOCKLO, 2),
            "%globaltimer" => self.cs2r(srn::GLOBALTIMERLO, 2),
            "%globaltimer_lo" => self.cs2r(srn::GLOBALTIMERLO, 1),
            "%globaltimer_hi" => self.cs2r(srn::GLOBALTIMERLO + 1, 1),
            "%dynamic_smem_size" => self.ldc(cbo::DYNAMIC_SMEM, 1),
            "%total_smem_size" => {
                let s = self.s2r(srn::SMEMSZ);
                let d = self.gpr();
                self.emit_unguarded(Inst::new(
                    "IADD3",
                    &[],
                    vec![
                        Operand::def(d),
                        Operand::use_(s),
                        cbank(cbo::TOTAL_SMEM_SUB).negated(),
                        rz(),
                    ],
                ));
                d
            }
            "%aggr_smem_size" => {
                let s = self.s2r(srn::SMEMSZ);
                let c = self.ldc(cbo::AGGR_SMEM, 1);
                let d = self.gpr();
                self.emit_unguarded(Inst::new(
                    "VIMNMX",
                    &["U32"],
                    vec![
                        Operand::def(d),
                        Operand::use_(s),
                        Operand::use_(c),
                        Operand::use_(Reg::phys(PReg::PT)),
                    ],
                ));
                d
            }
            "%reserved_smem_offset_begin" => self.imm_reg(0),
            "%reserved_smem_offset_cap" => self.imm_reg(0x400),
            "%reserved_smem_offset_end" => self.ldc(cbo::RESERVED_SMEM_END, 1),
            "%cluster_ctarank" => self.cga_cta_id(),
            "%cluster_nctarank" => self.ldc(cbo::CLUSTER_NCTARANK, 1),
            "%cluster_nctaid" => self.ldc(cbo::CLUSTER_NCTAID + 4 * xyz(comp)?, 1),
            "%nclusterid" => self.ldc(cbo::NCLUSTERID + 4 * xyz(comp)?, 1),
            "%clusterid" => {
                let c = comp?;
                let ctaid = self.s2r(sr::CTAID_X + c);
                self.cluster_quotient(ctaid, c)
            }
            "%cluster_ctaid" => {
                let c = comp?;
                let ctaid = self.s2r(sr::CTAID_X + c);
                let q = self.cluster_quotient(ctaid, c);
                let n = self.ldc(cbo::CLUSTER_NCTAID + 4 * i64::from(c), 1);
                let neg = self.gpr();
                self.emit_unguarded(Inst::new(
                    "IADD3",
                    &[],
                    vec![Operand::def(neg), Operand::use_(q).negated(), rz(), rz()],
                ));
                let d = self.gpr();
                self.emit_unguarded(Inst::new(
                    "IMAD",
                    &[],
                    vec![
                        Operand::def(d),
                        Operand::use_(n),
                        Operand::use_(neg),
                        Operand::use_(ctaid),
                    ],
                ));
                d
            }
            "%is_explicit_cluster" => {
                let v = self.ldc(cbo::EXPLICIT_CLUSTER, 1);
                let p = self.pred();
                self.emit_unguarded(Inst::new(
                    "ISETP",
                    &["EQ", "AND"],
                    vec![
                        Operand::def(p),
                        Operand::def(Reg::phys(PReg::PT)),
                        Operand::use_(v),
                        Operand::imm(1),
                        Operand::use_(Reg::phys(PReg::PT)),
                    ],
                ));
                p
            }
            _ => {
                if let Some(k) = n
                    .strip_prefix("%envreg")
                    .and_then(|k| k.parse::<i64>().ok())
                    && (0..32).contains(&k)
                {
                    self.ldc(cbo::ENVREG + 4 * k, 1)
                } else if let Some(k) = n.strip_prefix("%pm").and_then(|k| k.parse::<u8>().ok())
                    && k < 8
                {
                    self.cs2r(srn::PM0 + 2 * k, 1)
                } else {
                    self.error(
                        name.span,
                        format!("ptxc cannot read the special register `{n}` yet"),
                    );
                    return None;
                }
            }
        };
        Some(r)
    }

    fn s2r(&mut self, n: u8) -> Reg {
        let d = self.gpr();
        self.emit_unguarded(Inst::new(
            "S2R",
            &[],
            vec![Operand::def(d), Operand::new(OpKind::SReg(n))],
        ));
        d
    }

    fn cs2r(&mut self, n: u8, words: u8) -> Reg {
        let d = Reg::whole(self.new_vreg(RegClass::Gpr, words), words);
        self.emit_unguarded(Inst::new(
            "CS2R",
            if words == 1 { &["32"] } else { &[] },
            vec![Operand::def(d), Operand::new(OpKind::SReg(n))],
        ));
        d
    }

    fn ldc(&mut self, off: i64, words: u8) -> Reg {
        let d = Reg::whole(self.new_vreg(RegClass::Gpr, words), words);
        self.emit_unguarded(Inst::new(
            "LDC",
            if words == 2 { &["64"] } else { &[] },
            vec![Operand::def(d), cbank(off)],
        ));
        d
    }

    fn imm_reg(&mut self, k: i64) -> Reg {
        let d = self.gpr();
        self.emit_unguarded(Inst::new(
            "MOV",
            &[],
            vec![Operand::def(d), Operand::imm(k)],
        ));
        d
    }

    /// `(SR >> 8) & ((1 << bits) - 1)`: `%warpid` (7 bits of SR_VIRTID), `%nwarpid` (8 of
    /// SR_VIRTCFG).
    fn virt_field(&mut self, n: u8, bits: i64) -> Reg {
        let s = self.s2r(n);
        let t = self.gpr();
        self.emit_unguarded(Inst::new(
            "SHF",
            &["R", "U32", "HI"],
            vec![Operand::def(t), rz(), Operand::imm(8), Operand::use_(s)],
        ));
        let d = self.gpr();
        self.emit_unguarded(Inst::new(
            "SGXT",
            &["U32"],
            vec![Operand::def(d), Operand::use_(t), Operand::imm(bits)],
        ));
        d
    }

    /// `ctaid / cluster_nctaid` as ptxas computes it: `F2I.U32.TRUNC.NTZ(I2FP(ctaid) ×
    /// c[0x150+4i])`, the reciprocal the driver writes.
    fn cluster_quotient(&mut self, ctaid: Reg, c: u8) -> Reg {
        let f = self.gpr();
        self.emit_unguarded(Inst::new(
            "I2FP",
            &["F32", "U32"],
            vec![Operand::def(f), Operand::use_(ctaid)],
        ));
        let m = self.gpr();
        self.emit_unguarded(Inst::new(
            "FMUL",
            &[],
            vec![
                Operand::def(m),
                Operand::use_(f),
                cbank(cbo::CLUSTER_RECIP + 4 * i64::from(c)),
            ],
        ));
        let q = self.gpr();
        self.emit_unguarded(Inst::new(
            "F2I",
            &["U32", "TRUNC", "NTZ"],
            vec![Operand::def(q), Operand::use_(m)],
        ));
        q
    }
}
