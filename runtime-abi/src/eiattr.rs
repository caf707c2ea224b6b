//! `EIATTR` records: the entries of the `.nv.info` and `.nv.info.<function>` sections through which
//! a cubin tells the driver what a kernel needs.
//!
//! A record is `format byte, attribute code, payload`:
//!
//! | format (`EIFMT_*`) | byte | payload |
//! |---|---|---|
//! | `NVAL` | 1 | none (two zero bytes) |
//! | `BVAL` | 2 | one byte, then a zero byte |
//! | `HVAL` | 3 | a little-endian u16 |
//! | `SVAL` | 4 | a little-endian u16 length, then that many bytes |
//!
//! Every attribute below was seen in ptxas 13.1.115 output for the project's corpora; [`ATTRS`]
//! names the file that shows each (under `shared/`), and the names are cuobjdump 13.2's.
//! [`Record`] is the typed form; `Record::decode(&Record::encode(r))` is `r`, and
//! `encode(decode(bytes))` is `bytes` for any well-formed section, because shapes this module
//! does not know are kept as [`Record::Other`].

use std::fmt;

/// How a record's payload is stored (`EIFMT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Format {
    Nval = 1,
    Bval = 2,
    Hval = 3,
    Sval = 4,
}

impl Format {
    pub fn from_byte(b: u8) -> Option<Format> {
        match b {
            1 => Some(Format::Nval),
            2 => Some(Format::Bval),
            3 => Some(Format::Hval),
            4 => Some(Format::Sval),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Nval => "EIFMT_NVAL",
            Format::Bval => "EIFMT_BVAL",
            Format::Hval => "EIFMT_HVAL",
            Format::Sval => "EIFMT_SVAL",
        }
    }
}

/// Attribute codes (`EIATTR_*`) ptxas 13.1 emits for the corpora.
pub mod code {
    pub const MAX_THREADS: u8 = 0x05;
    pub const PARAM_CBANK: u8 = 0x0a;
    pub const EXTERNS: u8 = 0x0f;
    pub const REQNTID: u8 = 0x10;
    pub const FRAME_SIZE: u8 = 0x11;
    pub const MIN_STACK_SIZE: u8 = 0x12;
    pub const BINDLESS_TEXTURE_BANK: u8 = 0x15;
    pub const BINDLESS_SURFACE_BANK: u8 = 0x16;
    pub const KPARAM_INFO: u8 = 0x17;
    pub const CBANK_PARAM_SIZE: u8 = 0x19;
    pub const MAXREG_COUNT: u8 = 0x1b;
    pub const EXIT_INSTR_OFFSETS: u8 = 0x1c;
    pub const CRS_STACK_SIZE: u8 = 0x1e;
    pub const COOP_GROUP_INSTR_OFFSETS: u8 = 0x28;
    pub const COOP_GROUP_MASK_REGIDS: u8 = 0x29;
    pub const REGCOUNT: u8 = 0x2f;
    pub const INT_WARP_WIDE_INSTR_OFFSETS: u8 = 0x31;
    pub const SHARED_SCRATCH: u8 = 0x32;
    pub const SW_WAR: u8 = 0x36;
    pub const CUDA_API_VERSION: u8 = 0x37;
    pub const NUM_MBARRIERS: u8 = 0x38;
    pub const MBARRIER_INSTR_OFFSETS: u8 = 0x39;
    pub const CTA_PER_CLUSTER: u8 = 0x3d;
    pub const EXPLICIT_CLUSTER: u8 = 0x3e;
    pub const MAX_CLUSTER_RANK: u8 = 0x3f;
    pub const INSTR_REG_MAP: u8 = 0x40;
    pub const RESERVED_SMEM_USED: u8 = 0x41;
    pub const KPARAM_INFO_V2: u8 = 0x45;
    pub const SYSCALL_OFFSETS: u8 = 0x46;
    pub const NUM_BARRIERS: u8 = 0x4c;
    pub const SPARSE_MMA_MASK: u8 = 0x50;
    pub const GEN_ERRBAR_AT_EXIT: u8 = 0x53;
    pub const REG_RECONFIG: u8 = 0x54;
    pub const ANNOTATIONS: u8 = 0x55;
    pub const MERCURY_ISA_VERSION: u8 = 0x5f;
}

/// Where a record lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The module-wide `.nv.info` (records name their function by symbol index).
    Module,
    /// A function's `.nv.info.<name>`.
    Function,
}

/// What is known about one attribute code.
#[derive(Clone, Copy, Debug)]
pub struct AttrInfo {
    pub code: u8,
    /// cuobjdump 13.2's name.
    pub name: &'static str,
    pub format: Format,
    pub scope: Scope,
    /// A corpus or probe file (under `shared/`) whose ptxas cubin has the record.
    pub source: &'static str,
}

macro_rules! attrs {
    ($(($code:ident, $fmt:ident, $scope:ident, $src:expr)),* $(,)?) => {
        /// Every attribute ptxas 13.1 emits for the corpora, in code order.
        pub const ATTRS: &[AttrInfo] = &[$(AttrInfo {
            code: code::$code,
            name: concat!("EIATTR_", stringify!($code)),
            format: Format::$fmt,
            scope: Scope::$scope,
            source: $src,
        }),*];
    };
}

const CLUSTER: &str = "notes/probes/00_abi/cluster_kernel.ptx";

attrs![
    (MAX_THREADS, Sval, Function, CLUSTER),
    (PARAM_CBANK, Sval, Function, CLUSTER),
    (EXTERNS, Sval, Function, "corpus/zluda/sm90a/assertfail.ptx"),
    (
        REQNTID,
        Sval,
        Function,
        "notes/probes/01_cluster_directives/reqn8_reqntid.ptx"
    ),
    (FRAME_SIZE, Sval, Module, CLUSTER),
    (MIN_STACK_SIZE, Sval, Module, CLUSTER),
    (
        BINDLESS_TEXTURE_BANK,
        Bval,
        Function,
        "corpus/zluda/sm90a/tex_read_1d_float.ptx"
    ),
    (
        BINDLESS_SURFACE_BANK,
        Bval,
        Function,
        "corpus/zluda/sm90a/tex_read_1d_float.ptx"
    ),
    (KPARAM_INFO, Sval, Function, CLUSTER),
    (CBANK_PARAM_SIZE, Hval, Function, CLUSTER),
    (MAXREG_COUNT, Hval, Function, CLUSTER),
    (EXIT_INSTR_OFFSETS, Sval, Function, CLUSTER),
    (
        CRS_STACK_SIZE,
        Sval,
        Function,
        "notes/probes/04_dsmem_ldst/atom_add_f32.ptx"
    ),
    (
        COOP_GROUP_INSTR_OFFSETS,
        Sval,
        Function,
        "notes/probes/06_barrier_cluster/arrive__none.ptx"
    ),
    (
        COOP_GROUP_MASK_REGIDS,
        Sval,
        Function,
        "notes/probes/06_barrier_cluster/arrive__none.ptx"
    ),
    (REGCOUNT, Sval, Module, CLUSTER),
    (INT_WARP_WIDE_INSTR_OFFSETS, Sval, Function, CLUSTER),
    (
        SHARED_SCRATCH,
        Sval,
        Function,
        "notes/probes/11_stack_spill/spill_smemprag.ptx"
    ),
    (SW_WAR, Sval, Function, CLUSTER),
    (CUDA_API_VERSION, Sval, Function, CLUSTER),
    (NUM_MBARRIERS, Hval, Function, CLUSTER),
    (MBARRIER_INSTR_OFFSETS, Sval, Function, CLUSTER),
    (CTA_PER_CLUSTER, Sval, Function, CLUSTER),
    (EXPLICIT_CLUSTER, Nval, Function, CLUSTER),
    (
        MAX_CLUSTER_RANK,
        Sval,
        Function,
        "notes/probes/01_cluster_directives/explicit_maxrank4.ptx"
    ),
    (
        INSTR_REG_MAP,
        Sval,
        Function,
        "notes/probes/09_mbarrier/cp_async_mbarrier_arrive_noinc.ptx"
    ),
    (
        RESERVED_SMEM_USED,
        Nval,
        Function,
        "notes/probes/02_cluster_sregs/x_reserved_smem_offset_begin.ptx"
    ),
    (
        KPARAM_INFO_V2,
        Sval,
        Function,
        "notes/probes/00_abi/params.ptx"
    ),
    (
        SYSCALL_OFFSETS,
        Sval,
        Function,
        "corpus/zluda/sm90a/assertfail.ptx"
    ),
    (NUM_BARRIERS, Bval, Function, CLUSTER),
    (SPARSE_MMA_MASK, Hval, Function, CLUSTER),
    (
        GEN_ERRBAR_AT_EXIT,
        Nval,
        Module,
        "corpus/zluda/sm90a/_Z9vectorAddPKfS0_Pfi.ptx"
    ),
    (
        REG_RECONFIG,
        Nval,
        Function,
        "corpus/pyptx/pyptx__fa_ws_pingpong_sm90a.ptx"
    ),
    (
        ANNOTATIONS,
        Sval,
        Function,
        "notes/probes/11_stack_spill/spill.ptx"
    ),
    (MERCURY_ISA_VERSION, Hval, Function, CLUSTER),
];

/// What is known about `code`.
pub fn attr_info(code: u8) -> Option<&'static AttrInfo> {
    ATTRS.iter().find(|a| a.code == code)
}

/// cuobjdump's name of `code`, or `EIATTR_0x..`.
pub fn attr_name(code: u8) -> String {
    attr_info(code)
        .map(|a| a.name.to_string())
        .unwrap_or_else(|| format!("EIATTR_{code:#04x}"))
}

/// One `EIATTR_KPARAM_INFO` / `_V2` record: where a kernel parameter lives.
///
/// `KPARAM_INFO` (12 bytes): `index u32`, `ordinal u16 | offset u16 << 16`, then
/// `log_align [7:0] | space [11:8] | cbank [16:12] | not_cbank [17] | size [31:18]`.
/// `KPARAM_INFO_V2` (12 bytes): `index u32`, `ordinal | offset << 16`, `size u32`, with no
/// alignment/space/cbank fields; ptxas uses it for blocks above 4352 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KParamInfo {
    /// Always 0 in ptxas output.
    pub index: u32,
    pub ordinal: u16,
    pub offset: u16,
    pub size: u32,
    /// `Pointee's logAlignment` (V1 only).
    pub log_align: u8,
    /// `Space` (V1 only; 4 for `.ptr .global`).
    pub space: u8,
    /// `cbank` (V1 only; 0x1f).
    pub cbank: u8,
    /// Bit 17 (V1 only): clear means `Parameter Space : CBANK`.
    pub not_cbank: bool,
}

/// One `EIATTR_MBARRIER_INSTR_OFFSETS` entry (16 bytes): an instruction that touches an mbarrier,
/// and how it addresses it, as cuobjdump prints it (`0x12f0 : Instruction Kind : MBARRIER_INIT
/// (R255 + UR8 + 40960) Stride : MBARRIER_STRIDE_X4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MbarrierInstr {
    /// Code offset of the instruction.
    pub offset: u32,
    /// The vector register of the address (0xff = RZ).
    pub reg: u32,
    /// The immediate part of the address.
    pub imm: u32,
    /// Instruction kind (0 init, 1 arrive, … 8 inval, 0xa try_wait.parity …): bits [7:0].
    pub kind: u8,
    /// Stride code, bits [15:8] (1 = `MBARRIER_STRIDE_X4`).
    pub stride: u8,
    /// The uniform register of the address, bits [23:16].
    pub ureg: u8,
    /// Bits [31:24] (always 0 seen).
    pub high: u8,
}

/// One `EIATTR_ANNOTATIONS` entry (8 bytes): `kind u32` (1 = `SpillRefill`), `offset u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Annotation {
    pub kind: u32,
    pub offset: u32,
}

/// A typed EIATTR record.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Record {
    // ---- module `.nv.info` (the function is a symbol-table index) ----
    /// `EIATTR_REGCOUNT` (0x2f, SVAL 8): registers per thread.
    RegCount { function: u32, registers: u32 },
    /// `EIATTR_FRAME_SIZE` (0x11, SVAL 8): bytes of local-memory frame.
    FrameSize { function: u32, bytes: u32 },
    /// `EIATTR_MIN_STACK_SIZE` (0x12, SVAL 8): kernels only.
    MinStackSize { function: u32, bytes: u32 },
    /// `EIATTR_GEN_ERRBAR_AT_EXIT` (0x53, NVAL): after each function's FRAME_SIZE in debug builds.
    GenErrbarAtExit,

    // ---- `.nv.info.<function>` ----
    /// `EIATTR_CUDA_API_VERSION` (0x37, SVAL 4): 0x83 = CUDA 13.1.
    CudaApiVersion(u32),
    /// `EIATTR_KPARAM_INFO` (0x17, SVAL 12), one per parameter, last parameter first.
    KParamInfo(KParamInfo),
    /// `EIATTR_KPARAM_INFO_V2` (0x45, SVAL 12), for blocks above 4352 bytes.
    KParamInfoV2(KParamInfo),
    /// `EIATTR_MAX_CLUSTER_RANK` (0x3f, SVAL 4): `.maxclusterrank`.
    MaxClusterRank(u32),
    /// `EIATTR_EXPLICIT_CLUSTER` (0x3e, NVAL): `.explicitcluster`.
    ExplicitCluster,
    /// `EIATTR_CTA_PER_CLUSTER` (0x3d, SVAL 12): `.reqnctapercluster` (missing dimensions 1).
    CtaPerCluster([u32; 3]),
    /// `EIATTR_RESERVED_SMEM_USED` (0x41, NVAL): the kernel reads `%reserved_smem_offset_*`.
    ReservedSmemUsed,
    /// `EIATTR_SPARSE_MMA_MASK` (0x50, HVAL).
    SparseMmaMask(u16),
    /// `EIATTR_MAXREG_COUNT` (0x1b, HVAL): `.maxnreg`, 0xff without.
    MaxRegCount(u16),
    /// `EIATTR_EXTERNS` (0x0f, SVAL): symbol indices of external functions called.
    Externs(Vec<u32>),
    /// `EIATTR_NUM_BARRIERS` (0x4c, BVAL): named barriers used.
    NumBarriers(u8),
    /// `EIATTR_ANNOTATIONS` (0x55, SVAL): e.g. spill/refill instruction offsets.
    Annotations(Vec<Annotation>),
    /// `EIATTR_MERCURY_ISA_VERSION` (0x5f, HVAL): `major << 8 | minor`, 1.1 on sm_90a.
    MercuryIsaVersion { major: u8, minor: u8 },
    /// `EIATTR_INT_WARP_WIDE_INSTR_OFFSETS` (0x31, SVAL): offsets of warp-wide instructions.
    IntWarpWideInstrOffsets(Vec<u32>),
    /// `EIATTR_COOP_GROUP_MASK_REGIDS` (0x29, SVAL).
    CoopGroupMaskRegids(Vec<u32>),
    /// `EIATTR_COOP_GROUP_INSTR_OFFSETS` (0x28, SVAL).
    CoopGroupInstrOffsets(Vec<u32>),
    /// `EIATTR_INSTR_REG_MAP` (0x40, SVAL): words as ptxas writes them (`offset, regs, mask`).
    InstrRegMap(Vec<u32>),
    /// `EIATTR_SYSCALL_OFFSETS` (0x46, SVAL): offsets of syscall (`__assertfail`, vprintf) calls.
    SyscallOffsets(Vec<u32>),
    /// `EIATTR_REG_RECONFIG` (0x54, NVAL): the kernel uses `setmaxnreg`.
    RegReconfig,
    /// `EIATTR_MBARRIER_INSTR_OFFSETS` (0x39, SVAL 16 × n).
    MbarrierInstrOffsets(Vec<MbarrierInstr>),
    /// `EIATTR_NUM_MBARRIERS` (0x38, HVAL).
    NumMbarriers(u16),
    /// `EIATTR_EXIT_INSTR_OFFSETS` (0x1c, SVAL): offsets of every EXIT.
    ExitInstrOffsets(Vec<u32>),
    /// `EIATTR_MAX_THREADS` (0x05, SVAL 12): `.maxntid`.
    MaxThreads([u32; 3]),
    /// `EIATTR_REQNTID` (0x10, SVAL 12): `.reqntid`.
    ReqNtid([u32; 3]),
    /// `EIATTR_CRS_STACK_SIZE` (0x1e, SVAL 4).
    CrsStackSize(u32),
    /// `EIATTR_SHARED_SCRATCH` (0x32, SVAL 8): shared memory used for spilling.
    SharedScratch { offset: u32, size: u32 },
    /// `EIATTR_CBANK_PARAM_SIZE` (0x19, HVAL): parameter block bytes.
    CbankParamSize(u16),
    /// `EIATTR_PARAM_CBANK` (0x0a, SVAL 8): `.nv.constant0.<k>`'s section symbol, then
    /// `size << 16 | 0x210`.
    ParamCbank {
        section_symbol: u32,
        offset: u16,
        size: u16,
    },
    /// `EIATTR_SW_WAR` (0x36, SVAL 4): software workaround mask (8 on sm_90a).
    SwWar(u32),
    /// `EIATTR_BINDLESS_TEXTURE_BANK` (0x15, BVAL).
    BindlessTextureBank(u8),
    /// `EIATTR_BINDLESS_SURFACE_BANK` (0x16, BVAL).
    BindlessSurfaceBank(u8),
    /// Any record this module has no typed form for, or whose payload has an unexpected shape:
    /// kept byte for byte.
    Other {
        format: u8,
        attr: u8,
        payload: Vec<u8>,
    },
}

/// A malformed `.nv.info` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the section.
    pub at: usize,
    pub what: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed EIATTR record at +{:#x}: {}",
            self.at, self.what
        )
    }
}

impl std::error::Error for DecodeError {}

fn words(p: &[u8]) -> Option<Vec<u32>> {
    if !p.len().is_multiple_of(4) {
        return None;
    }
    Some(
        p.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

fn words_n<const N: usize>(p: &[u8]) -> Option<[u32; N]> {
    let w = words(p)?;
    w.try_into().ok()
}

fn put_words(out: &mut Vec<u8>, w: &[u32]) {
    for x in w {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

impl KParamInfo {
    fn decode_v1(p: &[u8]) -> Option<KParamInfo> {
        let [index, w1, w2] = words_n::<3>(p)?;
        Some(KParamInfo {
            index,
            ordinal: w1 as u16,
            offset: (w1 >> 16) as u16,
            log_align: w2 as u8,
            space: ((w2 >> 8) & 0xf) as u8,
            cbank: ((w2 >> 12) & 0x1f) as u8,
            not_cbank: (w2 >> 17) & 1 == 1,
            size: w2 >> 18,
        })
    }

    fn encode_v1(&self) -> [u32; 3] {
        [
            self.index,
            u32::from(self.ordinal) | u32::from(self.offset) << 16,
            u32::from(self.log_align)
                | u32::from(self.space & 0xf) << 8
                | u32::from(self.cbank & 0x1f) << 12
                | u32::from(self.not_cbank) << 17
                | (self.size & 0x3fff) << 18,
        ]
    }

    fn decode_v2(p: &[u8]) -> Option<KParamInfo> {
        let [index, w1, size] = words_n::<3>(p)?;
        Some(KParamInfo {
            index,
            ordinal: w1 as u16,
            offset: (w1 >> 16) as u16,
            size,
            log_align: 0,
            space: 0,
            cbank: 0,
            not_cbank: false,
        })
    }

    fn encode_v2(&self) -> [u32; 3] {
        [
            self.index,
            u32::from(self.ordinal) | u32::from(self.offset) << 16,
            self.size,
        ]
    }

    /// Whether the V1 encoding holds every field (a size above 0x3fff does not fit).
    pub fn fits_v1(&self) -> bool {
        self.size <= 0x3fff && self.space <= 0xf && self.cbank <= 0x1f
    }
}

impl MbarrierInstr {
    fn from_words(w: [u32; 4]) -> MbarrierInstr {
        MbarrierInstr {
            offset: w[0],
            reg: w[1],
            imm: w[2],
            kind: w[3] as u8,
            stride: (w[3] >> 8) as u8,
            ureg: (w[3] >> 16) as u8,
            high: (w[3] >> 24) as u8,
        }
    }

    fn to_words(self) -> [u32; 4] {
        [
            self.offset,
            self.reg,
            self.imm,
            u32::from(self.kind)
                | u32::from(self.stride) << 8
                | u32::from(self.ureg) << 16
                | u32::from(self.high) << 24,
        ]
    }
}

impl Record {
    /// The attribute code.
    pub fn attr(&self) -> u8 {
        use code::*;
        match self {
            Record::RegCount { .. } => REGCOUNT,
            Record::FrameSize { .. } => FRAME_SIZE,
            Record::MinStackSize { .. } => MIN_STACK_SIZE,
            Record::GenErrbarAtExit => GEN_ERRBAR_AT_EXIT,
            Record::CudaApiVersion(_) => CUDA_API_VERSION,
            Record::KParamInfo(_) => KPARAM_INFO,
            Record::KParamInfoV2(_) => KPARAM_INFO_V2,
            Record::MaxClusterRank(_) => MAX_CLUSTER_RANK,
            Record::ExplicitCluster => EXPLICIT_CLUSTER,
            Record::CtaPerCluster(_) => CTA_PER_CLUSTER,
            Record::ReservedSmemUsed => RESERVED_SMEM_USED,
            Record::SparseMmaMask(_) => SPARSE_MMA_MASK,
            Record::MaxRegCount(_) => MAXREG_COUNT,
            Record::Externs(_) => EXTERNS,
            Record::NumBarriers(_) => NUM_BARRIERS,
            Record::Annotations(_) => ANNOTATIONS,
            Record::MercuryIsaVersion { .. } => MERCURY_ISA_VERSION,
            Record::IntWarpWideInstrOffsets(_) => INT_WARP_WIDE_INSTR_OFFSETS,
            Record::CoopGroupMaskRegids(_) => COOP_GROUP_MASK_REGIDS,
            Record::CoopGroupInstrOffsets(_) => COOP_GROUP_INSTR_OFFSETS,
            Record::InstrRegMap(_) => INSTR_REG_MAP,
            Record::SyscallOffsets(_) => SYSCALL_OFFSETS,
            Record::RegReconfig => REG_RECONFIG,
            Record::MbarrierInstrOffsets(_) => MBARRIER_INSTR_OFFSETS,
            Record::NumMbarriers(_) => NUM_MBARRIERS,
            Record::ExitInstrOffsets(_) => EXIT_INSTR_OFFSETS,
            Record::MaxThreads(_) => MAX_THREADS,
            Record::ReqNtid(_) => REQNTID,
            Record::CrsStackSize(_) => CRS_STACK_SIZE,
            Record::SharedScratch { .. } => SHARED_SCRATCH,
            Record::CbankParamSize(_) => CBANK_PARAM_SIZE,
            Record::ParamCbank { .. } => PARAM_CBANK,
            Record::SwWar(_) => SW_WAR,
            Record::BindlessTextureBank(_) => BINDLESS_TEXTURE_BANK,
            Record::BindlessSurfaceBank(_) => BINDLESS_SURFACE_BANK,
            Record::Other { attr, .. } => *attr,
        }
    }

    /// Appends the record's bytes.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let attr = self.attr();
        let nval = |out: &mut Vec<u8>| out.extend_from_slice(&[Format::Nval as u8, attr, 0, 0]);
        let bval =
            |out: &mut Vec<u8>, v: u8| out.extend_from_slice(&[Format::Bval as u8, attr, v, 0]);
        let hval = |out: &mut Vec<u8>, v: u16| {
            out.extend_from_slice(&[Format::Hval as u8, attr]);
            out.extend_from_slice(&v.to_le_bytes());
        };
        let sval = |out: &mut Vec<u8>, w: &[u32]| {
            out.extend_from_slice(&[Format::Sval as u8, attr]);
            out.extend_from_slice(&((w.len() * 4) as u16).to_le_bytes());
            put_words(out, w);
        };
        match self {
            Record::RegCount {
                function,
                registers,
            } => sval(out, &[*function, *registers]),
            Record::FrameSize { function, bytes } | Record::MinStackSize { function, bytes } => {
                sval(out, &[*function, *bytes])
            }
            Record::GenErrbarAtExit
            | Record::ExplicitCluster
            | Record::ReservedSmemUsed
            | Record::RegReconfig => nval(out),
            Record::CudaApiVersion(v)
            | Record::MaxClusterRank(v)
            | Record::CrsStackSize(v)
            | Record::SwWar(v) => sval(out, &[*v]),
            Record::KParamInfo(k) => sval(out, &k.encode_v1()),
            Record::KParamInfoV2(k) => sval(out, &k.encode_v2()),
            Record::CtaPerCluster(v) | Record::MaxThreads(v) | Record::ReqNtid(v) => sval(out, v),
            Record::SparseMmaMask(v) | Record::MaxRegCount(v) | Record::NumMbarriers(v) => {
                hval(out, *v)
            }
            Record::CbankParamSize(v) => hval(out, *v),
            Record::Externs(w)
            | Record::IntWarpWideInstrOffsets(w)
            | Record::CoopGroupMaskRegids(w)
            | Record::CoopGroupInstrOffsets(w)
            | Record::InstrRegMap(w)
            | Record::SyscallOffsets(w)
            | Record::ExitInstrOffsets(w) => sval(out, w),
            Record::NumBarriers(v)
            | Record::BindlessTextureBank(v)
            | Record::BindlessSurfaceBank(v) => bval(out, *v),
            Record::Annotations(a) => {
                let w: Vec<u32> = a.iter().flat_map(|a| [a.kind, a.offset]).collect();
                sval(out, &w)
            }
            Record::MercuryIsaVersion { major, minor } => {
                hval(out, u16::from(*major) << 8 | u16::from(*minor))
            }
            Record::MbarrierInstrOffsets(m) => {
                let w: Vec<u32> = m.iter().flat_map(|m| m.to_words()).collect();
                sval(out, &w)
            }
            Record::SharedScratch { offset, size } => sval(out, &[*offset, *size]),
            Record::ParamCbank {
                section_symbol,
                offset,
                size,
            } => sval(
                out,
                &[*section_symbol, u32::from(*offset) | u32::from(*size) << 16],
            ),
            Record::Other {
                format,
                attr,
                payload,
            } => {
                out.extend_from_slice(&[*format, *attr]);
                if *format == Format::Sval as u8 {
                    out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
                }
                out.extend_from_slice(payload);
            }
        }
    }

    /// The record's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode_into(&mut v);
        v
    }

    /// Decodes one record from the start of `bytes`; returns it and its length.
    pub fn decode(bytes: &[u8]) -> Result<(Record, usize), DecodeError> {
        let err = |what: String| DecodeError { at: 0, what };
        if bytes.len() < 4 {
            return Err(err(format!("{} bytes left, a record needs 4", bytes.len())));
        }
        let (fmt_byte, attr) = (bytes[0], bytes[1]);
        let format = Format::from_byte(fmt_byte)
            .ok_or_else(|| err(format!("unknown format byte {fmt_byte:#x}")))?;
        let (payload, len) = match format {
            Format::Sval => {
                let n = usize::from(u16::from_le_bytes([bytes[2], bytes[3]]));
                if bytes.len() < 4 + n {
                    return Err(err(format!(
                        "{} (attribute {attr:#x}) declares {n} bytes, {} left",
                        format.name(),
                        bytes.len() - 4
                    )));
                }
                (&bytes[4..4 + n], 4 + n)
            }
            _ => (&bytes[2..4], 4),
        };
        let other = || Record::Other {
            format: fmt_byte,
            attr,
            payload: payload.to_vec(),
        };
        let expected = attr_info(attr).map(|a| a.format);
        if expected != Some(format) {
            return Ok((other(), len));
        }
        let h = u16::from_le_bytes([payload[0], *payload.get(1).unwrap_or(&0)]);
        use code::*;
        let rec = match format {
            Format::Nval => match (attr, h) {
                (GEN_ERRBAR_AT_EXIT, 0) => Some(Record::GenErrbarAtExit),
                (EXPLICIT_CLUSTER, 0) => Some(Record::ExplicitCluster),
                (RESERVED_SMEM_USED, 0) => Some(Record::ReservedSmemUsed),
                (REG_RECONFIG, 0) => Some(Record::RegReconfig),
                _ => None,
            },
            Format::Bval => match (attr, payload[1]) {
                (NUM_BARRIERS, 0) => Some(Record::NumBarriers(payload[0])),
                (BINDLESS_TEXTURE_BANK, 0) => Some(Record::BindlessTextureBank(payload[0])),
                (BINDLESS_SURFACE_BANK, 0) => Some(Record::BindlessSurfaceBank(payload[0])),
                _ => None,
            },
            Format::Hval => match attr {
                SPARSE_MMA_MASK => Some(Record::SparseMmaMask(h)),
                MAXREG_COUNT => Some(Record::MaxRegCount(h)),
                NUM_MBARRIERS => Some(Record::NumMbarriers(h)),
                CBANK_PARAM_SIZE => Some(Record::CbankParamSize(h)),
                MERCURY_ISA_VERSION => Some(Record::MercuryIsaVersion {
                    major: (h >> 8) as u8,
                    minor: h as u8,
                }),
                _ => None,
            },
            Format::Sval => decode_sval(attr, payload),
        };
        Ok((rec.unwrap_or_else(other), len))
    }

    /// Decodes a whole `.nv.info*` section.
    pub fn decode_all(section: &[u8]) -> Result<Vec<Record>, DecodeError> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < section.len() {
            let (r, n) = Record::decode(&section[at..]).map_err(|e| DecodeError {
                at: at + e.at,
                what: e.what,
            })?;
            out.push(r);
            at += n;
        }
        Ok(out)
    }

    /// Encodes a list of records into section bytes.
    pub fn encode_all(records: &[Record]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            r.encode_into(&mut out);
        }
        out
    }
}

fn decode_sval(attr: u8, p: &[u8]) -> Option<Record> {
    use code::*;
    Some(match attr {
        REGCOUNT => {
            let [function, registers] = words_n::<2>(p)?;
            Record::RegCount {
                function,
                registers,
            }
        }
        FRAME_SIZE => {
            let [function, bytes] = words_n::<2>(p)?;
            Record::FrameSize { function, bytes }
        }
        MIN_STACK_SIZE => {
            let [function, bytes] = words_n::<2>(p)?;
            Record::MinStackSize { function, bytes }
        }
        CUDA_API_VERSION => Record::CudaApiVersion(words_n::<1>(p)?[0]),
        MAX_CLUSTER_RANK => Record::MaxClusterRank(words_n::<1>(p)?[0]),
        CRS_STACK_SIZE => Record::CrsStackSize(words_n::<1>(p)?[0]),
        SW_WAR => Record::SwWar(words_n::<1>(p)?[0]),
        KPARAM_INFO => Record::KParamInfo(KParamInfo::decode_v1(p)?),
        KPARAM_INFO_V2 => Record::KParamInfoV2(KParamInfo::decode_v2(p)?),
        CTA_PER_CLUSTER => Record::CtaPerCluster(words_n::<3>(p)?),
        MAX_THREADS => Record::MaxThreads(words_n::<3>(p)?),
        REQNTID => Record::ReqNtid(words_n::<3>(p)?),
        EXTERNS => Record::Externs(words(p)?),
        INT_WARP_WIDE_INSTR_OFFSETS => Record::IntWarpWideInstrOffsets(words(p)?),
        COOP_GROUP_MASK_REGIDS => Record::CoopGroupMaskRegids(words(p)?),
        COOP_GROUP_INSTR_OFFSETS => Record::CoopGroupInstrOffsets(words(p)?),
        INSTR_REG_MAP => Record::InstrRegMap(words(p)?),
        SYSCALL_OFFSETS => Record::SyscallOffsets(words(p)?),
        EXIT_INSTR_OFFSETS => Record::ExitInstrOffsets(words(p)?),
        ANNOTATIONS => {
            let w = words(p)?;
            if w.len() % 2 != 0 {
                return None;
            }
            Record::Annotations(
                w.chunks_exact(2)
                    .map(|c| Annotation {
                        kind: c[0],
                        offset: c[1],
                    })
                    .collect(),
            )
        }
        MBARRIER_INSTR_OFFSETS => {
            let w = words(p)?;
            if w.len() % 4 != 0 {
                return None;
            }
            Record::MbarrierInstrOffsets(
                w.chunks_exact(4)
                    .map(|c| MbarrierInstr::from_words([c[0], c[1], c[2], c[3]]))
                    .collect(),
            )
        }
        SHARED_SCRATCH => {
            let [offset, size] = words_n::<2>(p)?;
            Record::SharedScratch { offset, size }
        }
        PARAM_CBANK => {
            let [section_symbol, w] = words_n::<2>(p)?;
            Record::ParamCbank {
                section_symbol,
                offset: w as u16,
                size: (w >> 16) as u16,
            }
        }
        _ => return None,
    })
}

/// The per-function record order ptxas 13.1 follows (`.nv.info.<function>`). Measured over every
/// cubin of the corpora: no two records ever appear in the opposite order. Records of one kind
/// stay together in the order they are given.
pub const FUNCTION_ORDER: &[u8] = &[
    code::CUDA_API_VERSION,
    code::KPARAM_INFO,
    code::MAX_CLUSTER_RANK,
    code::EXPLICIT_CLUSTER,
    code::CTA_PER_CLUSTER,
    code::RESERVED_SMEM_USED,
    code::KPARAM_INFO_V2,
    code::SPARSE_MMA_MASK,
    code::MAXREG_COUNT,
    code::EXTERNS,
    code::NUM_BARRIERS,
    code::ANNOTATIONS,
    code::MERCURY_ISA_VERSION,
    code::INT_WARP_WIDE_INSTR_OFFSETS,
    code::COOP_GROUP_MASK_REGIDS,
    code::COOP_GROUP_INSTR_OFFSETS,
    code::INSTR_REG_MAP,
    code::SYSCALL_OFFSETS,
    code::REG_RECONFIG,
    code::MBARRIER_INSTR_OFFSETS,
    code::NUM_MBARRIERS,
    code::EXIT_INSTR_OFFSETS,
    code::MAX_THREADS,
    code::REQNTID,
    code::CRS_STACK_SIZE,
    code::SHARED_SCRATCH,
    code::CBANK_PARAM_SIZE,
    code::PARAM_CBANK,
    code::SW_WAR,
    code::BINDLESS_TEXTURE_BANK,
    code::BINDLESS_SURFACE_BANK,
];

/// The position of `attr` in [`FUNCTION_ORDER`] (unknown codes sort last).
pub fn function_order_rank(attr: u8) -> usize {
    FUNCTION_ORDER
        .iter()
        .position(|&a| a == attr)
        .unwrap_or(FUNCTION_ORDER.len())
}

/// `EIATTR_CUDA_API_VERSION` written by ptxas 13.1: 0x83 (131).
pub const CUDA_API_VERSION_13_1: u32 = 0x83;
/// `EIATTR_SW_WAR` on every sm_90a function: 8.
pub const SW_WAR_SM90: u32 = 8;
/// `EIATTR_MAXREG_COUNT` without `.maxnreg`: 0xff.
pub const MAXREG_DEFAULT: u16 = 0xff;
/// `EIATTR_MERCURY_ISA_VERSION` on sm_90a: 1.1.
pub const MERCURY_ISA_SM90: (u8, u8) = (1, 1);

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Record> {
        let k = KParamInfo {
            index: 0,
            ordinal: 3,
            offset: 0x18,
            size: 0x80,
            log_align: 4,
            space: 4,
            cbank: 0x1f,
            not_cbank: false,
        };
        vec![
            Record::RegCount {
                function: 9,
                registers: 40,
            },
            Record::FrameSize {
                function: 9,
                bytes: 0x118,
            },
            Record::MinStackSize {
                function: 9,
                bytes: 0,
            },
            Record::GenErrbarAtExit,
            Record::CudaApiVersion(CUDA_API_VERSION_13_1),
            Record::KParamInfo(k),
            Record::KParamInfoV2(KParamInfo {
                log_align: 0,
                space: 0,
                cbank: 0,
                size: 0x2000,
                ..k
            }),
            Record::MaxClusterRank(4),
            Record::ExplicitCluster,
            Record::CtaPerCluster([2, 1, 1]),
            Record::ReservedSmemUsed,
            Record::SparseMmaMask(0),
            Record::MaxRegCount(MAXREG_DEFAULT),
            Record::Externs(vec![10]),
            Record::NumBarriers(1),
            Record::Annotations(vec![Annotation {
                kind: 1,
                offset: 0x1f0,
            }]),
            Record::MercuryIsaVersion { major: 1, minor: 1 },
            Record::IntWarpWideInstrOffsets(vec![0x180, 0x190]),
            Record::CoopGroupMaskRegids(vec![u32::MAX]),
            Record::CoopGroupInstrOffsets(vec![0xd0]),
            Record::InstrRegMap(vec![0x40, 0x103, u32::MAX]),
            Record::SyscallOffsets(vec![0xf0]),
            Record::RegReconfig,
            Record::MbarrierInstrOffsets(vec![MbarrierInstr {
                offset: 0x12f0,
                reg: 0xff,
                imm: 0xa000,
                kind: 0,
                stride: 1,
                ureg: 8,
                high: 0,
            }]),
            Record::NumMbarriers(1),
            Record::ExitInstrOffsets(vec![0x70]),
            Record::MaxThreads([128, 1, 1]),
            Record::ReqNtid([128, 1, 1]),
            Record::CrsStackSize(0),
            Record::SharedScratch {
                offset: 0,
                size: 40320,
            },
            Record::CbankParamSize(0xc),
            Record::ParamCbank {
                section_symbol: 9,
                offset: 0x210,
                size: 0xc,
            },
            Record::SwWar(SW_WAR_SM90),
            Record::BindlessTextureBank(0),
            Record::BindlessSurfaceBank(0),
        ]
    }

    #[test]
    fn every_typed_record_round_trips_with_its_table_format() {
        let recs = samples();
        for r in &recs {
            let b = r.encode();
            let info = attr_info(r.attr()).expect("attribute in the table");
            assert_eq!(b[0], info.format as u8, "{r:?}");
            assert_eq!(b[1], info.code);
            let (back, n) = Record::decode(&b).unwrap();
            assert_eq!(n, b.len());
            assert_eq!(&back, r);
        }
        let all = Record::encode_all(&recs);
        assert_eq!(Record::decode_all(&all).unwrap(), recs);
        // Every attribute in the table has a sample.
        for a in ATTRS {
            assert!(recs.iter().any(|r| r.attr() == a.code), "{}", a.name);
        }
    }

    #[test]
    fn unknown_shapes_are_kept_verbatim() {
        for bytes in [
            vec![4u8, 0x2f, 4, 0, 1, 2, 3, 4], // REGCOUNT with 4 bytes instead of 8
            vec![3, 0x77, 0x34, 0x12],         // unknown HVAL code
            vec![1, 0x3e, 1, 0],               // EXPLICIT_CLUSTER with a non-zero value
            vec![2, 0x4c, 1, 9],               // BVAL with a non-zero pad byte
            vec![4, 0x1c, 3, 0, 1, 2, 3],      // offsets that are not whole words
        ] {
            let (r, n) = Record::decode(&bytes).unwrap();
            assert!(matches!(r, Record::Other { .. }), "{r:?}");
            assert_eq!(n, bytes.len());
            assert_eq!(r.encode(), bytes);
        }
    }

    #[test]
    fn malformed_sections_are_errors() {
        assert!(Record::decode_all(&[4, 0x1c, 8, 0, 1]).is_err());
        assert!(Record::decode_all(&[9, 0x1c, 0, 0]).is_err());
        assert!(Record::decode_all(&[4, 0x1c]).is_err());
        assert_eq!(Record::decode_all(&[]).unwrap(), vec![]);
    }

    #[test]
    fn function_order_is_total_over_the_table() {
        for a in ATTRS.iter().filter(|a| a.scope == Scope::Function) {
            assert!(FUNCTION_ORDER.contains(&a.code), "{}", a.name);
        }
    }
}
