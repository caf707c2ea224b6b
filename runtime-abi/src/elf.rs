//! ELF constants of an sm_90a cubin (CUDA ELF ABI version 8), as ptxas 13.1 writes them.
//!
//! Source: `shared/notes/ptxas-facts.md` §c.4 and every corpus cubin (the relink test checks each
//! value against ptxas output).

/// `EI_CLASS`: ELF64.
pub const ELFCLASS64: u8 = 2;
/// `EI_DATA`: little-endian.
pub const ELFDATA2LSB: u8 = 1;
/// `EI_VERSION` and `e_version`.
pub const EV_CURRENT: u8 = 1;
/// `EI_OSABI`: CUDA (0x41 since ABI version 8; earlier cubins used 0x33).
pub const ELFOSABI_CUDA: u8 = 0x41;
/// `EI_ABIVERSION`: 8.
pub const ELFABIVERSION_CUDA: u8 = 8;
/// `e_machine`: EM_CUDA (190).
pub const EM_CUDA: u16 = 190;
/// `e_type`: an executable (whole-program) cubin.
pub const ET_EXEC: u16 = 2;
/// `e_type`: a relocatable cubin (`ptxas -c`).
pub const ET_REL: u16 = 1;

/// `e_flags` bits 15..8: the SM number (0x5a = 90).
pub const EF_CUDA_SM_SHIFT: u32 = 8;
/// `e_flags` bits 7..0 on sm_90a: 0x04 (0x02 on sm_100a).
pub const EF_CUDA_SM90_LOW: u32 = 0x04;
/// `e_flags` bits 31..24: 0x06 without debug information, 0x09 with `-lineinfo`, 0x0b with `-g`,
/// 0x0e for a `.target …, debug` module compiled without `-g` (the bits depend on the debug
/// options; their individual meaning is not documented).
pub const EF_CUDA_INFO_SHIFT: u32 = 24;
/// `e_flags` of an sm_90a cubin without debug information: 0x6005a04. cuobjdump prints
/// `EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)` (the "accelerators" part
/// comes from `.nv.compat`, the virtual SM from `.note.nv.cuinfo`).
pub const E_FLAGS_SM90A: u32 = 0x0600_5a04;

/// `e_flags` for an SM number and the section index of `.note.nv.cuinfo`, which is what the top
/// byte holds: 1261 of 1261 ptxas cubins (the cached reference builds of the corpora, kernels
/// and probes, optimized, `-lineinfo`, `-g` and `.target …, debug`), e.g. 0x06 in a cubin
/// without debug sections (`.shstrtab`, `.strtab`, `.symtab`, `.debug_frame`,
/// `.note.nv.tkinfo`, then `.note.nv.cuinfo`). cuobjdump refuses a cubin where it is not
/// ("Invalid ELF").
pub const fn e_flags(sm: u8, cuinfo_index: u8) -> u32 {
    (cuinfo_index as u32) << EF_CUDA_INFO_SHIFT | (sm as u32) << EF_CUDA_SM_SHIFT | EF_CUDA_SM90_LOW
}

/// `e_flags` top byte values of common layouts (the index of `.note.nv.cuinfo`).
pub mod info_byte {
    /// No debug sections but `.debug_frame`.
    pub const NONE: u8 = 0x06;
    /// The `.debug_frame`, `.debug_line`, `.nv_debug_line_sass`, `.nv_debug_ptx_txt` of
    /// `-lineinfo`.
    pub const LINE_INFO: u8 = 0x09;
    /// A `-g` build without PTX `.section` blocks.
    pub const DEVICE_DEBUG: u8 = 0x0b;
    /// A debug build with three PTX `.section` blocks (`vectorAdd_kernel64.ptx`); the reader
    /// takes it for a `.target …, debug` module (see `emit::read`).
    pub const DEBUG_TARGET: u8 = 0x0e;
}

// ---- section types ----
pub const SHT_NULL: u32 = 0;
pub const SHT_PROGBITS: u32 = 1;
pub const SHT_SYMTAB: u32 = 2;
pub const SHT_STRTAB: u32 = 3;
pub const SHT_RELA: u32 = 4;
pub const SHT_NOTE: u32 = 7;
pub const SHT_NOBITS: u32 = 8;
pub const SHT_REL: u32 = 9;
/// `.nv.info` and `.nv.info.<function>` (cuobjdump: CUDA_INFO).
pub const SHT_CUDA_INFO: u32 = 0x7000_0000;
/// `.nv.callgraph` (CUDA_CALLGRAPH).
pub const SHT_CUDA_CALLGRAPH: u32 = 0x7000_0001;
/// `.nv.compat` (CUDA_COMPAT_INFO).
pub const SHT_CUDA_COMPAT_INFO: u32 = 0x7000_0086;

// ---- section flags ----
pub const SHF_WRITE: u64 = 0x1;
pub const SHF_ALLOC: u64 = 0x2;
pub const SHF_EXECINSTR: u64 = 0x4;
pub const SHF_INFO_LINK: u64 = 0x40;
/// On `.note.nv.cuinfo` (0x1000040 with SHF_INFO_LINK).
pub const SHF_NV_CUINFO: u64 = 0x0100_0000;
/// On `.note.nv.tkinfo` (0x2000000).
pub const SHF_NV_TKINFO: u64 = 0x0200_0000;

// ---- symbols ----
pub const STB_LOCAL: u8 = 0;
pub const STB_GLOBAL: u8 = 1;
pub const STB_WEAK: u8 = 2;
pub const STT_NOTYPE: u8 = 0;
pub const STT_OBJECT: u8 = 1;
pub const STT_FUNC: u8 = 2;
pub const STT_SECTION: u8 = 3;
/// A texture reference (`.global .texref`): `st_info` 0x1a.
pub const STT_CUDA_TEXTURE: u8 = 10;
/// A surface reference (`.global .surfref`): `st_info` 0x1c (probed: ptxas 13.1 on a module
/// declaring `.texref t0; .surfref s0; .samplerref sm0;` writes 0x1a, 0x1c, 0x1b).
pub const STT_CUDA_SURFACE: u8 = 12;
/// A sampler reference (`.global .samplerref`): `st_info` 0x1b.
pub const STT_CUDA_SAMPLER: u8 = 11;
/// `st_other` of a kernel entry (`.entry`): STO_CUDA_ENTRY.
pub const STO_CUDA_ENTRY: u8 = 0x10;
/// `st_other` of `__nv_reservedSMEM_offset_0_alias` (0xa0).
pub const STO_NV_RESERVED_ALIAS: u8 = 0xa0;
/// `st_other` STV_INTERNAL: the nameless symbol ptxas leaves for an `.extern .shared` array.
pub const STV_INTERNAL: u8 = 1;

/// The symbol every cubin has, for the reserved shared memory window (UND, WEAK OBJECT, size 4).
pub const RESERVED_SMEM_SYMBOL: &str = ".nv.reservedSmem.offset0";
/// A second reserved symbol (UND, WEAK OBJECT, size 4, value 0x400) ptxas adds when code uses
/// the reserved shared-memory capacity (remote mbarrier arrives,
/// `notes/probes/09_mbarrier/arrive_remote_count.ptx`).
pub const RESERVED_SMEM_CAP_SYMBOL: &str = ".nv.reservedSmem.cap";
/// Its alias, defined in `.nv.shared.reserved.0` (WEAK NOTYPE, `st_other` 0xa0).
pub const RESERVED_SMEM_ALIAS: &str = "__nv_reservedSMEM_offset_0_alias";
/// The NOBITS section of the reserved shared memory window.
pub const RESERVED_SMEM_SECTION: &str = ".nv.shared.reserved.0";
/// In `-g` builds: the NOBITS section holding `.extern .shared` symbols (0x400 bytes), whose name
/// ptxas creates in place of the reserved window's.
pub const DEBUG_SHARED_SECTION: &str = ".nv_debug.shared";

/// Alignment of `.text.<function>`.
pub const TEXT_ALIGN: u64 = 128;
/// ptxas ends every `.text` with `BRA` to itself, then NOPs up to a multiple of 128 bytes plus
/// another 128 bytes (`shared/notes/ptxas-facts.md` §c.4; measured over the corpora).
pub const TEXT_PAD_EXTRA: usize = 128;
/// The `BRA` to itself ptxas appends (low word, high word).
pub const BRA_SELF: [u64; 2] = [0xffff_fffc_00fc_7947, 0x000f_c000_0383_ffff];
/// The padding `NOP` (low word, high word).
pub const NOP: [u64; 2] = [0x0000_0000_0000_7918, 0x000f_c000_0000_0000];

// ---- program headers ----
pub const PT_LOAD: u32 = 1;
pub const PT_PHDR: u32 = 6;
pub const PF_X: u32 = 1;
pub const PF_W: u32 = 2;
pub const PF_R: u32 = 4;

/// Sizes of the ELF64 structures.
pub const EHDR_SIZE: u64 = 64;
pub const SHDR_SIZE: u64 = 64;
pub const PHDR_SIZE: u64 = 56;
pub const SYM_SIZE: u64 = 24;
pub const RELA_SIZE: u64 = 24;
pub const REL_SIZE: u64 = 16;
