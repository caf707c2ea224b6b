//! Kernel parameter layout in constant bank 0, as ptxas 13.1 lays it out for sm_90a.
//!
//! Rules (source: `shared/notes/probes/00_abi/params.ptx` and the parameter-size experiments in
//! `docs/cubin.md`, all checked by the tests against ptxas):
//!
//! * Parameters are placed in PTX order, each at the next constant-bank offset that is a
//!   multiple of its alignment (the natural alignment of a scalar, or the `.align` of a `.b8`
//!   array), starting at [`cbank0::PARAM_BASE`](crate::cbank0::PARAM_BASE) (0x210). The
//!   alignment applies to the bank offset, not to the offset within the block: an `.align 64`
//!   parameter after 0x18 bytes lands at block offset 0x30 (bank 0x240), as in
//!   `corpus/pyptx/pyptx__fa_ws_pingpong_sm90a.ptx`.
//! * The parameter block size (`EIATTR_CBANK_PARAM_SIZE`, and `.nv.constant0.<k>` minus 0x210) is
//!   the end of the last parameter, not rounded up.
//! * Blocks larger than [`LEGACY_LIMIT`] (4352 bytes, the pre-CUDA-12.1 limit of 4 KiB + 256) are
//!   described by `EIATTR_KPARAM_INFO_V2` records; smaller ones by `EIATTR_KPARAM_INFO`.
//!   Measured: 4352 bytes → V1, 4353 bytes → V2.

use crate::cbank0::PARAM_BASE;

/// Parameter blocks up to this many bytes get `EIATTR_KPARAM_INFO`; larger ones
/// `EIATTR_KPARAM_INFO_V2`.
pub const LEGACY_LIMIT: u32 = 4352;

/// The largest parameter block ptxas accepts for sm_90a (CUDA 12.1+: 32764 bytes).
pub const MAX_PARAM_BYTES: u32 = 32764;

/// `EIATTR_KPARAM_INFO`'s `cbank` field: 0x1f for every parameter passed in constant bank 0.
pub const KPARAM_CBANK: u8 = 0x1f;

/// What a `.ptr` parameter points to (`.param .u64 .ptr .global .align N p`): the `Space` and
/// `Pointee's logAlignment` fields of `EIATTR_KPARAM_INFO`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pointee {
    /// The space code ptxas writes (4 for `.ptr .global`, seen in pyptx's Triton kernels).
    pub space: u8,
    /// log2 of the pointee alignment (`.align 1` → 0).
    pub log_align: u8,
}

/// The state space of a `.ptr` parameter, as `EIATTR_KPARAM_INFO` encodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PtrSpace {
    /// `.ptr .align N` without a space (generic): 5.
    Generic,
    /// `.ptr .global`: 4.
    Global,
    /// `.ptr .shared`: 2.
    Shared,
    /// `.ptr .const`: 4, like `.global`.
    Const,
    /// `.ptr .local`: 1.
    Local,
}

impl PtrSpace {
    /// The `Space` code ptxas 13.1 writes (measured with every space, see `tests/tests/cubin_abi.rs`).
    pub fn code(self) -> u8 {
        match self {
            PtrSpace::Generic => 5,
            PtrSpace::Global | PtrSpace::Const => 4,
            PtrSpace::Shared => 2,
            PtrSpace::Local => 1,
        }
    }
}

impl Pointee {
    /// A `.ptr` parameter: `.param .u64 .ptr [space] [.align N] p`.
    pub fn ptr(space: PtrSpace, align: Option<u32>) -> Pointee {
        Pointee {
            space: space.code(),
            log_align: align.map(|a| a.max(1).trailing_zeros() as u8).unwrap_or(0),
        }
    }
}

/// One kernel parameter as the layout needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamSpec {
    /// Size in bytes.
    pub size: u32,
    /// Alignment in bytes (a power of two).
    pub align: u32,
    /// `.ptr` attributes, when given.
    pub pointee: Pointee,
}

impl ParamSpec {
    /// A scalar of `size` bytes (1, 2, 4 or 8) at its natural alignment.
    pub fn scalar(size: u32) -> ParamSpec {
        ParamSpec {
            size,
            align: size.max(1),
            pointee: Pointee::default(),
        }
    }

    /// A `.param .align A .b8 name[N]` array.
    pub fn bytes(size: u32, align: u32) -> ParamSpec {
        ParamSpec {
            size,
            align: align.max(1),
            pointee: Pointee::default(),
        }
    }
}

/// Where one parameter landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamSlot {
    /// PTX position (0-based), `Ordinal` in `EIATTR_KPARAM_INFO`.
    pub ordinal: u16,
    /// Offset from the start of the parameter block (add [`PARAM_BASE`] for the bank offset).
    pub offset: u32,
    pub size: u32,
    pub pointee: Pointee,
}

/// A laid-out parameter block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamLayout {
    pub slots: Vec<ParamSlot>,
    /// The end of the last parameter (0 without parameters).
    pub size: u32,
}

/// Why a parameter list cannot be laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// An alignment that is not a power of two.
    BadAlignment { ordinal: usize, align: u32 },
    /// The block exceeds [`MAX_PARAM_BYTES`] (or a field of the records).
    TooLarge { size: u64 },
    /// More parameters than `EIATTR_KPARAM_INFO` can number.
    TooMany(usize),
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::BadAlignment { ordinal, align } => {
                write!(
                    f,
                    "parameter {ordinal}: alignment {align} is not a power of two"
                )
            }
            LayoutError::TooLarge { size } => write!(
                f,
                "parameter block of {size} bytes exceeds the sm_90a limit of {MAX_PARAM_BYTES}"
            ),
            LayoutError::TooMany(n) => write!(f, "{n} parameters: more than 65535"),
        }
    }
}

impl std::error::Error for LayoutError {}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Lays out parameters in PTX order at their alignment.
pub fn layout(params: &[ParamSpec]) -> Result<ParamLayout, LayoutError> {
    if params.len() > usize::from(u16::MAX) {
        return Err(LayoutError::TooMany(params.len()));
    }
    let mut end: u64 = 0;
    let mut slots = Vec::with_capacity(params.len());
    for (i, p) in params.iter().enumerate() {
        if !p.align.is_power_of_two() {
            return Err(LayoutError::BadAlignment {
                ordinal: i,
                align: p.align,
            });
        }
        let base = u64::from(PARAM_BASE);
        let offset = align_up(base + end, u64::from(p.align)) - base;
        end = offset + u64::from(p.size);
        if end > u64::from(MAX_PARAM_BYTES) {
            return Err(LayoutError::TooLarge { size: end });
        }
        slots.push(ParamSlot {
            ordinal: i as u16,
            offset: offset as u32,
            size: p.size,
            pointee: p.pointee,
        });
    }
    Ok(ParamLayout {
        slots,
        size: end as u32,
    })
}

impl ParamLayout {
    /// Whether ptxas describes this block with `EIATTR_KPARAM_INFO_V2`.
    pub fn uses_kparam_info_v2(&self) -> bool {
        self.size > LEGACY_LIMIT
    }

    /// The size of `.nv.constant0.<kernel>`.
    pub fn constant0_size(&self) -> u32 {
        PARAM_BASE + self.size
    }

    /// The bank-0 offset of parameter `ordinal`.
    pub fn bank_offset(&self, ordinal: usize) -> Option<u32> {
        self.slots.get(ordinal).map(|s| PARAM_BASE + s.offset)
    }
}

/// Infers an alignment that reproduces `offset` (in the parameter block) after a parameter
/// ending at `prev_end`, alignment counted in bank offsets: the natural
/// alignment of `size` when that fits, otherwise the smallest power of two that does. Used by the
/// cubin reader, where alignments are not stored.
pub fn infer_align(prev_end: u32, offset: u32, size: u32) -> Option<u32> {
    if offset < prev_end {
        return None;
    }
    let base = u64::from(PARAM_BASE);
    let fits =
        |a: u32| align_up(base + u64::from(prev_end), u64::from(a)) == base + u64::from(offset);
    let natural = match size {
        1 | 2 | 4 | 8 => size,
        _ => 1,
    };
    if fits(natural) {
        return Some(natural);
    }
    (0..16).map(|s| 1u32 << s).find(|&a| fits(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_pack_at_natural_alignment() {
        let l = layout(&[
            ParamSpec::scalar(8),
            ParamSpec::scalar(1),
            ParamSpec::scalar(2),
            ParamSpec::scalar(4),
            ParamSpec::scalar(8),
        ])
        .unwrap();
        let offs: Vec<u32> = l.slots.iter().map(|s| s.offset).collect();
        assert_eq!(offs, [0, 8, 10, 12, 16]);
        assert_eq!(l.size, 24);
        assert_eq!(l.constant0_size(), PARAM_BASE + 24);
        assert!(!l.uses_kparam_info_v2());
    }

    #[test]
    fn alignment_counts_in_bank_offsets() {
        // 0x210 + 0x18 = 0x228 → the next 64-byte bank offset is 0x240, block offset 0x30.
        let l = layout(&[
            ParamSpec::scalar(4),
            ParamSpec::scalar(8),
            ParamSpec::scalar(4),
            ParamSpec::scalar(4),
            ParamSpec::bytes(128, 64),
        ])
        .unwrap();
        assert_eq!(l.slots[4].offset, 0x30);
        assert_eq!(infer_align(0x18, 0x30, 128), Some(32));
    }

    #[test]
    fn legacy_limit_decides_the_record_kind() {
        let at = |n| {
            layout(&[ParamSpec::bytes(n, 4)])
                .unwrap()
                .uses_kparam_info_v2()
        };
        assert!(!at(LEGACY_LIMIT));
        assert!(at(LEGACY_LIMIT + 1));
    }

    #[test]
    fn errors_instead_of_panics() {
        assert!(matches!(
            layout(&[ParamSpec::bytes(4, 3)]),
            Err(LayoutError::BadAlignment { .. })
        ));
        assert!(matches!(
            layout(&[ParamSpec::bytes(MAX_PARAM_BYTES + 1, 1)]),
            Err(LayoutError::TooLarge { .. })
        ));
        assert_eq!(infer_align(8, 4, 4), None);
    }

    #[test]
    fn pointee_codes() {
        assert_eq!(
            Pointee::ptr(PtrSpace::Global, Some(16)),
            Pointee {
                space: 4,
                log_align: 4
            }
        );
        assert_eq!(Pointee::ptr(PtrSpace::Generic, None).space, 5);
    }
}
