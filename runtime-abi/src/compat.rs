//! `.nv.compat` (section type 0x70000086): the compatibility attributes (`EICOMPAT_ATTR_*`) the
//! driver checks before loading a cubin. Records have the EIATTR layout (format byte, attribute
//! code, payload; see [`crate::eiattr`]).
//!
//! ptxas 13.1 writes the same five records, in this order, into every sm_90a cubin of the
//! corpora (`shared/notes/ptxas-facts.md` §c.4); only `ISA_CLASS` and `INST_TENSORMAP_V1` vary:
//!
//! | code | name | format | sm_90a value |
//! |---|---|---|---|
//! | 0x09 | `EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET` | BVAL | 1 for `sm_90a`, 0 for `sm_90` |
//! | 0x02 | `EICOMPAT_ATTR_ISA_CLASS` | BVAL | 1; 2 or 4 when the code uses newer instruction classes (e.g. wgmma, setmaxnreg) |
//! | 0x07 | `EICOMPAT_ATTR_MERCURY_ISA_MAJOR_MINOR_VERSION` | HVAL | 0x0101 (1.1) |
//! | 0x03 | `EICOMPAT_ATTR_INST_TENSORMAP_V1` | BVAL | 0; 1 or 3 when the code uses tensor-map instructions |
//! | 0x0b | `EICOMPAT_ATTR_CAN_FASTPATH_FINALIZE` | SVAL 8 | 0, 0 |

use crate::eiattr::{Format, Record};

pub const CUDA_ACCELERATOR_TARGET: u8 = 0x09;
pub const ISA_CLASS: u8 = 0x02;
pub const MERCURY_ISA_MAJOR_MINOR_VERSION: u8 = 0x07;
pub const INST_TENSORMAP_V1: u8 = 0x03;
pub const CAN_FASTPATH_FINALIZE: u8 = 0x0b;

/// cuobjdump's name of an `.nv.compat` attribute.
pub fn attr_name(code: u8) -> String {
    match code {
        CUDA_ACCELERATOR_TARGET => "EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET".into(),
        ISA_CLASS => "EICOMPAT_ATTR_ISA_CLASS".into(),
        MERCURY_ISA_MAJOR_MINOR_VERSION => "EICOMPAT_ATTR_MERCURY_ISA_MAJOR_MINOR_VERSION".into(),
        INST_TENSORMAP_V1 => "EICOMPAT_ATTR_INST_TENSORMAP_V1".into(),
        CAN_FASTPATH_FINALIZE => "EICOMPAT_ATTR_CAN_FASTPATH_FINALIZE".into(),
        c => format!("EICOMPAT_ATTR_{c:#04x}"),
    }
}

/// The typed `.nv.compat` content.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Compat {
    /// 1: the code uses arch-specific (`sm_90a`) features and runs only on that chip.
    pub accelerator_target: u8,
    pub isa_class: u8,
    /// (major, minor): (1, 1) on sm_90a.
    pub mercury_isa: (u8, u8),
    pub inst_tensormap_v1: u8,
    pub can_fastpath_finalize: [u32; 2],
}

impl Default for Compat {
    /// What ptxas writes for an ordinary sm_90a kernel.
    fn default() -> Compat {
        Compat {
            accelerator_target: 1,
            isa_class: 1,
            mercury_isa: (1, 1),
            inst_tensormap_v1: 0,
            can_fastpath_finalize: [0, 0],
        }
    }
}

fn rec(format: Format, attr: u8, payload: Vec<u8>) -> Record {
    Record::Other {
        format: format as u8,
        attr,
        payload,
    }
}

impl Compat {
    /// The section content.
    pub fn encode(&self) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&self.can_fastpath_finalize[0].to_le_bytes());
        f.extend_from_slice(&self.can_fastpath_finalize[1].to_le_bytes());
        Record::encode_all(&[
            rec(
                Format::Bval,
                CUDA_ACCELERATOR_TARGET,
                vec![self.accelerator_target, 0],
            ),
            rec(Format::Bval, ISA_CLASS, vec![self.isa_class, 0]),
            rec(
                Format::Hval,
                MERCURY_ISA_MAJOR_MINOR_VERSION,
                vec![self.mercury_isa.1, self.mercury_isa.0],
            ),
            rec(
                Format::Bval,
                INST_TENSORMAP_V1,
                vec![self.inst_tensormap_v1, 0],
            ),
            rec(Format::Sval, CAN_FASTPATH_FINALIZE, f),
        ])
    }

    /// Decodes the section; `None` when it is not the five records in ptxas's order and shape
    /// (the caller keeps such a section as raw bytes).
    pub fn decode(bytes: &[u8]) -> Option<Compat> {
        let recs = Record::decode_all(bytes).ok()?;
        let payload = |i: usize, fmt: Format, attr: u8| -> Option<Vec<u8>> {
            match recs.get(i)? {
                Record::Other {
                    format,
                    attr: a,
                    payload,
                } if *format == fmt as u8 && *a == attr => Some(payload.clone()),
                _ => None,
            }
        };
        if recs.len() != 5 {
            return None;
        }
        let acc = payload(0, Format::Bval, CUDA_ACCELERATOR_TARGET)?;
        let isa = payload(1, Format::Bval, ISA_CLASS)?;
        let mer = payload(2, Format::Hval, MERCURY_ISA_MAJOR_MINOR_VERSION)?;
        let tm = payload(3, Format::Bval, INST_TENSORMAP_V1)?;
        let ff = payload(4, Format::Sval, CAN_FASTPATH_FINALIZE)?;
        if acc[1] != 0 || isa[1] != 0 || tm[1] != 0 || ff.len() != 8 {
            return None;
        }
        let c = Compat {
            accelerator_target: acc[0],
            isa_class: isa[0],
            mercury_isa: (mer[1], mer[0]),
            inst_tensormap_v1: tm[0],
            can_fastpath_finalize: [
                u32::from_le_bytes([ff[0], ff[1], ff[2], ff[3]]),
                u32::from_le_bytes([ff[4], ff[5], ff[6], ff[7]]),
            ],
        };
        (c.encode() == bytes).then_some(c)
    }
}
