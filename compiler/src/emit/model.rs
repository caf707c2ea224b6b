//! The typed cubin model: what a compiled PTX module is, as the driver sees it.
//!
//! The back end fills a [`Cubin`]; [`crate::emit::write`] turns it into the bytes ptxas would
//! write (section, symbol and string order, alignment, `.text` padding, the EIATTR record order,
//! program headers and relocation order are all derived there). [`crate::emit::read`] turns a
//! cubin back into this model, so that `write(read(x)) == x` for ptxas output.

use runtime_abi::compat::Compat;
use runtime_abi::eiattr::{Annotation, MbarrierInstr, Record};
use runtime_abi::param::ParamSpec;

/// A whole cubin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cubin {
    /// The SM number: 90.
    pub sm: u8,
    /// `ET_EXEC` (whole program, ptxas's default) or `ET_REL` (`ptxas -c`).
    pub relocatable: bool,
    /// Optimized or debug build; decides function order and the reserved-shared-memory and
    /// debug symbols.
    pub build: Build,
    /// `.note.nv.tkinfo`.
    pub tool: ToolInfo,
    /// `.note.nv.cuinfo`.
    pub cuda: CudaInfo,
    /// `.nv.compat`.
    pub compat: Compat,
    /// Functions with code, in PTX definition order. Each gets its own `.text.<name>`.
    pub functions: Vec<Function>,
    /// Module-scope variables (`.global`, `.const`), in PTX order.
    pub variables: Vec<Variable>,
    /// The compiler's constant bank (`c[0x4]`, `.nv.constant4`): 64-bit addresses of globals and
    /// external functions the code loads, and other constants.
    pub bank4: Option<DataBlock>,
    /// Symbols the module refers to but does not define (texture references, external functions
    /// such as `__assertfail`), in the order ptxas creates them.
    pub externs: Vec<Extern>,
    /// Debug sections (`.debug_*`, `.nv_debug_*`), in file order (`.debug_frame` is built from
    /// [`Function::unwind`] and is not listed here).
    pub debug_sections: Vec<DebugSection>,
    /// `EIATTR_GEN_ERRBAR_AT_EXIT` after every function's frame size (`ptxas -g`: an ERRBAR
    /// sequence precedes each EXIT).
    pub gen_errbar_at_exit: bool,
    /// The value of ptxas's `.nv.reservedSmem.cap` symbol (0x400), present when code uses the
    /// reserved shared-memory capacity (remote mbarrier arrives).
    pub reserved_smem_cap: Option<u64>,
    /// The module declares module-scope `.shared` variables: a `-g` build then names
    /// `.nv_debug.shared`, the section for those no kernel claims.
    pub module_shared_vars: bool,
    /// `.extern .shared` arrays. Their symbols appear only in `-g` builds, in the
    /// `.nv_debug.shared` section.
    pub extern_shared: Vec<ExternShared>,
    /// `.const` initializers held addresses (`.const .u64 p = x;`) that ptxas resolved; the
    /// relocation section is gone but its names (`.rel(a).nv.constant.user`) remain.
    pub const_addresses_resolved: bool,
}

/// How the module was compiled, as far as the cubin layout depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// The default: functions are emitted in reverse PTX order, with the reserved shared-memory
    /// window `.nv.shared.reserved.0` and its alias symbol.
    Optimized,
    /// `ptxas -g`: functions in PTX order, no reserved window section; shared variables keep
    /// their symbols and `.extern .shared` arrays live in `.nv_debug.shared`.
    DeviceDebug,
    /// A `.target …, debug` module compiled without `-g`: functions in PTX order, no reserved
    /// window section.
    DebugTarget,
}

impl Build {
    pub fn is_debug(self) -> bool {
        self != Build::Optimized
    }
}

/// `.note.nv.tkinfo`: which tool made the cubin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolInfo {
    pub object_name: String,
    pub tool_name: String,
    pub tool_version: String,
    pub tool_branch: String,
    pub tool_options: String,
}

impl ToolInfo {
    /// What ptxas 13.1.115 writes for `ptxas -arch sm_90a`.
    pub fn ptxas_13_1(options: &str) -> ToolInfo {
        use runtime_abi::note::*;
        ToolInfo {
            object_name: String::new(),
            tool_name: PTXAS_TOOL_NAME.into(),
            tool_version: PTXAS_TOOL_VERSION.into(),
            tool_branch: PTXAS_TOOL_BRANCH.into(),
            tool_options: options.into(),
        }
    }

    /// ptxc's own identification.
    pub fn ptxc(options: &str) -> ToolInfo {
        ToolInfo {
            object_name: String::new(),
            tool_name: "ptxc".into(),
            tool_version: concat!("ptxc ", env!("CARGO_PKG_VERSION")).into(),
            tool_branch: String::new(),
            tool_options: options.into(),
        }
    }
}

/// `.note.nv.cuinfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaInfo {
    /// The virtual architecture (90).
    pub virtual_sm: u16,
    /// Toolkit version, major * 10 + minor (131).
    pub toolkit: u32,
}

impl Default for CudaInfo {
    fn default() -> CudaInfo {
        CudaInfo {
            virtual_sm: 90,
            toolkit: runtime_abi::note::TOOLKIT_13_1,
        }
    }
}

/// Kernel (`.entry`) or device function (`.func`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    Kernel,
    Device,
}

/// Symbol binding of a function or variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    /// `.visible` (STB_GLOBAL).
    Global,
    /// `.weak` (STB_WEAK).
    Weak,
    /// Neither (STB_LOCAL).
    Local,
}

impl Linkage {
    pub fn bind(self) -> u8 {
        match self {
            Linkage::Global => runtime_abi::elf::STB_GLOBAL,
            Linkage::Weak => runtime_abi::elf::STB_WEAK,
            Linkage::Local => runtime_abi::elf::STB_LOCAL,
        }
    }
    pub fn from_bind(b: u8) -> Option<Linkage> {
        match b {
            runtime_abi::elf::STB_GLOBAL => Some(Linkage::Global),
            runtime_abi::elf::STB_WEAK => Some(Linkage::Weak),
            runtime_abi::elf::STB_LOCAL => Some(Linkage::Local),
            _ => None,
        }
    }
}

/// A function with its own `.text.<name>` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub kind: FunctionKind,
    pub linkage: Linkage,
    /// Machine code of the function and its subroutines, without the `BRA`-to-self and `NOP`
    /// padding ptxas appends (the writer adds it).
    pub code: Vec<u8>,
    /// Registers per thread (`EIATTR_REGCOUNT`).
    pub registers: u32,
    /// Local-memory frame bytes (`EIATTR_FRAME_SIZE`).
    pub frame_size: u32,
    /// `EIATTR_MIN_STACK_SIZE` (kernels).
    pub min_stack_size: u32,
    /// Kernel parameters in PTX order (kernels).
    pub params: Vec<ParamSpec>,
    /// The `.nv.info.<name>` attributes.
    pub attrs: FunctionAttrs,
    /// `.nv.shared.<name>`: bytes of shared memory (including the 1 KiB reserved window when the
    /// kernel has shared variables) and alignment.
    pub shared: Option<SharedMem>,
    /// Called functions emitted as subroutines inside this `.text` (ptxas names them
    /// `$<kernel>$<callee>`), in code order.
    pub subroutines: Vec<Subroutine>,
    /// Relocations left in the code (`.rela.text.<name>`), in code order.
    pub relocs: Vec<Reloc>,
    /// Relocations ptxas resolved itself.
    pub resolved: Resolved,
    /// Shared variables of the function, with offsets in `.nv.shared.<name>` (after the reserved
    /// 1 KiB). ptxas keeps their symbols only in `-g` builds.
    pub shared_vars: Vec<SharedVar>,
    /// Functions in other sections this one calls (`.nv.callgraph` edges), by symbol name.
    pub callees: Vec<String>,
    /// Texture/surface/sampler header slots in `.nv.constant0.<name>`, 4 bytes each, after the
    /// parameters (at the next 4-byte boundary). Slot `i` belongs to the module's `i`-th
    /// texture/surface number, so unused slots are `None`.
    pub bank0_slots: Vec<Option<HeaderSlot>>,
    /// When this function's code refers to an internal shared-memory symbol (shared variables,
    /// the reserved window), ptxas resolves the reference, keeps the symbol nameless
    /// (`STV_INTERNAL`) and zeroes its name in `.strtab`: the length of that name (20; 22 for
    /// `%reserved_smem_offset_begin`). At most one function of a module has it: the first one
    /// ptxas processes that makes the reference.
    pub erased_symbol: Option<usize>,
    /// Unwind information for `.debug_frame`.
    pub unwind: Unwind,
}

/// What is left of code relocations ptxas resolved itself (calls to subroutines in the same
/// section, shared-memory addresses, constant-bank addresses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Resolved {
    /// The code had no relocations.
    #[default]
    None,
    /// An empty `.rela.text.<name>` remains (calls, shared memory).
    EmptySection,
    /// The section was dropped; only its names remain in the string tables (calls through
    /// `.nv.constant4`, e.g. `__assertfail`).
    NamesOnly,
}

/// `.nv.shared.<name>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedMem {
    /// The section size: the reserved 1 KiB window (0x400) plus the kernel's shared bytes.
    pub size: u64,
    pub align: u64,
}

impl SharedMem {
    /// A kernel's shared memory as ptxas sizes it: the 1 KiB reserved window, then `bytes` of
    /// shared variables (the section is at least 16-byte aligned when it holds any).
    pub fn with_user_bytes(bytes: u64, align: u64) -> SharedMem {
        SharedMem {
            size: u64::from(runtime_abi::smem::USER_BASE) + bytes,
            align: align.max(1),
        }
    }
}

/// A texture/surface header slot in constant bank 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderSlot {
    /// The `.texref`/`.surfref`/`.samplerref` symbol.
    pub symbol: String,
    /// `R_CUDA_TEX_HEADER_INDEX` or `R_CUDA_SURF_HEADER_INDEX`.
    pub reloc: u32,
}

/// A shared variable's symbol (`-g` builds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedVar {
    pub name: String,
    pub linkage: Linkage,
    pub offset: u64,
    pub size: u64,
}

/// An `.extern .shared` array (dynamic shared memory) in a `-g` build: a symbol in
/// `.nv_debug.shared` (NOBITS, 0x400 bytes) whose value is where dynamic shared memory starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternShared {
    pub name: String,
    pub linkage: Linkage,
    pub value: u64,
    pub align: u64,
}

/// A subroutine inside a function's `.text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subroutine {
    /// The symbol name (`$kernel$callee`, or an internal name such as
    /// `$__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath`).
    pub name: String,
    pub linkage: Linkage,
    /// Offset in the function's code. The subroutine runs to the next one, or to the end of the
    /// padded section.
    pub offset: u64,
    /// `EIATTR_FRAME_SIZE`.
    pub frame_size: u32,
    pub unwind: Unwind,
}

/// A relocation in code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reloc {
    /// Byte offset in the function's code.
    pub offset: u64,
    /// `R_CUDA_*` type.
    pub ty: u32,
    /// The symbol: a function, variable or extern name.
    pub symbol: String,
    pub addend: i64,
}

/// The per-function `EIATTR` records. `None`/empty means "no record". The writer emits them in
/// ptxas's order ([`runtime_abi::eiattr::FUNCTION_ORDER`]); parameter records
/// (`KPARAM_INFO`, `CBANK_PARAM_SIZE`, `PARAM_CBANK`) come from [`Function::params`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionAttrs {
    pub cuda_api_version: Option<u32>,
    pub max_cluster_rank: Option<u32>,
    pub explicit_cluster: bool,
    pub cta_per_cluster: Option<[u32; 3]>,
    pub reserved_smem_used: bool,
    pub sparse_mma_mask: Option<u16>,
    pub maxreg_count: Option<u16>,
    /// External functions called (`EIATTR_EXTERNS`), by symbol name.
    pub externs: Vec<String>,
    pub num_barriers: Option<u8>,
    pub annotations: Vec<Annotation>,
    pub mercury_isa: Option<(u8, u8)>,
    pub warp_wide_offsets: Vec<u32>,
    pub coop_group_mask_regids: Vec<u32>,
    pub coop_group_offsets: Vec<u32>,
    pub instr_reg_map: Vec<u32>,
    pub syscall_offsets: Vec<u32>,
    pub reg_reconfig: bool,
    pub mbarrier_instrs: Vec<MbarrierInstr>,
    pub num_mbarriers: Option<u16>,
    pub exit_offsets: Vec<u32>,
    pub max_threads: Option<[u32; 3]>,
    pub reqntid: Option<[u32; 3]>,
    pub crs_stack_size: Option<u32>,
    pub shared_scratch: Option<(u32, u32)>,
    pub sw_war: Option<u32>,
    pub bindless_texture_bank: Option<u8>,
    pub bindless_surface_bank: Option<u8>,
    /// Records with no typed field here (kept in place of a gap; empty for the corpora).
    pub other: Vec<Record>,
}

impl FunctionAttrs {
    /// What ptxas 13.1 writes for every sm_90a kernel: CUDA API version 0x83, SPARSE_MMA_MASK 0,
    /// MAXREG_COUNT 0xff, MERCURY_ISA_VERSION 1.1, SW_WAR 8.
    pub fn kernel() -> FunctionAttrs {
        use runtime_abi::eiattr::*;
        FunctionAttrs {
            maxreg_count: Some(MAXREG_DEFAULT),
            ..FunctionAttrs::device()
        }
    }

    /// What ptxas 13.1 writes for every sm_90a device function compiled on its own.
    pub fn device() -> FunctionAttrs {
        use runtime_abi::eiattr::*;
        FunctionAttrs {
            cuda_api_version: Some(CUDA_API_VERSION_13_1),
            max_cluster_rank: None,
            explicit_cluster: false,
            cta_per_cluster: None,
            reserved_smem_used: false,
            sparse_mma_mask: Some(0),
            maxreg_count: None,
            externs: Vec::new(),
            num_barriers: None,
            annotations: Vec::new(),
            mercury_isa: Some(MERCURY_ISA_SM90),
            warp_wide_offsets: Vec::new(),
            coop_group_mask_regids: Vec::new(),
            coop_group_offsets: Vec::new(),
            instr_reg_map: Vec::new(),
            syscall_offsets: Vec::new(),
            reg_reconfig: false,
            mbarrier_instrs: Vec::new(),
            num_mbarriers: None,
            exit_offsets: Vec::new(),
            max_threads: None,
            reqntid: None,
            crs_stack_size: None,
            shared_scratch: None,
            sw_war: Some(SW_WAR_SM90),
            bindless_texture_bank: None,
            bindless_surface_bank: None,
            other: Vec::new(),
        }
    }
}

/// Unwind information: one CIE and one FDE in `.debug_frame`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unwind {
    pub cie: Cie,
    /// The FDE's call-frame instructions (without the trailing `DW_CFA_nop` padding).
    pub ops: Vec<CfaOp>,
}

/// A DWARF Common Information Entry as ptxas writes it (64-bit DWARF, version 3, no
/// augmentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cie {
    pub code_align: u64,
    pub data_align: i64,
    pub return_register: u64,
    pub ops: Vec<CfaOp>,
}

/// R1, the stack pointer, in ptxas's DWARF register numbering.
pub const DWARF_R1: u64 = 0x500_0001;
/// R255 (RZ) in ptxas's numbering.
pub const DWARF_RZ: u64 = 0x500_00ff;
/// ptxas's "no return register" (CIE of a kernel): 0xffffffff.
pub const DWARF_NO_RA: u64 = 0xffff_ffff;

impl Cie {
    /// The CIE of every function without a return address: `DW_CFA_def_cfa R1, 0;
    /// DW_CFA_same_value R255; DW_CFA_same_value R1`.
    pub fn standard() -> Cie {
        Cie {
            code_align: 4,
            data_align: -4,
            return_register: DWARF_NO_RA,
            ops: vec![
                CfaOp::DefCfa {
                    reg: DWARF_R1,
                    offset: 0,
                },
                CfaOp::SameValue(DWARF_RZ),
                CfaOp::SameValue(DWARF_R1),
            ],
        }
    }
}

/// A DWARF call-frame instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CfaOp {
    /// `DW_CFA_advance_loc4` by this many bytes of code (a multiple of the code alignment).
    AdvanceLoc4(u64),
    /// `DW_CFA_advance_loc` (delta in code-alignment units, < 64).
    AdvanceLoc(u8),
    DefCfa {
        reg: u64,
        offset: u64,
    },
    DefCfaOffset(u64),
    DefCfaRegister(u64),
    SameValue(u64),
    Undefined(u64),
    /// `DW_CFA_offset` (reg < 64) or `DW_CFA_offset_extended`.
    Offset {
        reg: u64,
        offset: u64,
    },
    Register {
        reg: u64,
        to: u64,
    },
    /// `DW_CFA_val_expression`; `addr_at` is the byte offset in `expr` of a `DW_OP_addr` operand
    /// that is relocated (`R_CUDA_64`) to the address of the section's function.
    ValExpression {
        reg: u64,
        expr: Vec<u8>,
        addr_at: Option<usize>,
    },
    Expression {
        reg: u64,
        expr: Vec<u8>,
    },
    /// `DW_CFA_restore` (reg < 64) or `DW_CFA_restore_extended`.
    Restore(u64),
    RememberState,
    RestoreState,
    Nop,
}

/// A module-scope variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    pub name: String,
    pub space: VarSpace,
    pub linkage: Linkage,
    pub size: u64,
    pub align: u64,
    /// Initial bytes (`.nv.global.init` / `.nv.constant3`); `None` for a zero-initialized
    /// `.global` (`.nv.global`, NOBITS). ptxas places a section's variables by decreasing
    /// alignment (PTX order among equals), each at its alignment.
    pub init: Option<Vec<u8>>,
    /// Relocations in the initializer (offsets relative to the variable), e.g. the generic
    /// addresses in `.const .u64 p[2] = {g, h};` (`R_CUDA_G64`).
    pub relocs: Vec<Reloc>,
}

/// Where a module variable lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarSpace {
    /// `.global`: `.nv.global.init` when initialized, `.nv.global` otherwise.
    Global,
    /// `.const`: `.nv.constant3`.
    Const,
}

/// Bytes with relocations (the compiler constant bank, debug sections).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataBlock {
    pub data: Vec<u8>,
    pub align: u64,
    pub relocs: Vec<Reloc>,
}

/// An undefined symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extern {
    pub name: String,
    pub kind: ExternKind,
}

/// What an undefined symbol is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExternKind {
    /// An external function (`__assertfail`, `vprintf`): GLOBAL FUNC.
    Function,
    /// `.global .texref` (STT_CUDA_TEXTURE).
    Texture,
    /// `.global .surfref` (STT_CUDA_SURFACE).
    Surface,
    /// `.global .samplerref` (STT_CUDA_SAMPLER).
    Sampler,
}

/// A debug section: DWARF (`.debug_line`, `.debug_info`, …) or NVIDIA's (`.nv_debug_line_sass`,
/// `.nv_debug_ptx_txt`, …). The contents are produced by the debug-information generator; the
/// writer places them and their relocations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebugSection {
    pub name: String,
    pub data: DataBlock,
    /// Which relocation-section names ptxas creates for it (a relocation section exists only
    /// when relocations remain).
    pub rel_names: RelNames,
}

/// The names ptxas gives a debug section's relocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelNames {
    /// No relocations.
    None,
    /// `.rel.X` and `.rela.X`: sections ptxas generates (`.debug_line`, `.nv_debug_line_sass`).
    RelAndRela,
    /// `.rela.X` only: DWARF sections copied from the PTX (`.debug_info`, `.debug_pubnames`).
    RelaOnly,
}

impl Function {
    /// A kernel with ptxas's default attributes and nothing else.
    pub fn kernel(name: &str, code: Vec<u8>) -> Function {
        Function {
            name: name.into(),
            kind: FunctionKind::Kernel,
            linkage: Linkage::Global,
            code,
            registers: 0,
            frame_size: 0,
            min_stack_size: 0,
            params: Vec::new(),
            attrs: FunctionAttrs::kernel(),
            shared: None,
            subroutines: Vec::new(),
            relocs: Vec::new(),
            resolved: Resolved::None,
            callees: Vec::new(),
            shared_vars: Vec::new(),
            bank0_slots: Vec::new(),
            erased_symbol: None,
            unwind: Unwind {
                cie: Cie::standard(),
                ops: Vec::new(),
            },
        }
    }
}

impl Cubin {
    /// An empty sm_90a module as ptxas 13.1 would describe it, identified as ptxc's output.
    pub fn new() -> Cubin {
        Cubin {
            sm: 90,
            relocatable: false,
            build: Build::Optimized,
            tool: ToolInfo::ptxc("-arch sm_90a"),
            cuda: CudaInfo::default(),
            compat: Compat::default(),
            functions: Vec::new(),
            variables: Vec::new(),
            bank4: None,
            externs: Vec::new(),
            debug_sections: Vec::new(),
            gen_errbar_at_exit: false,
            reserved_smem_cap: None,
            const_addresses_resolved: false,
            module_shared_vars: false,
            extern_shared: Vec::new(),
        }
    }
}

impl Default for Cubin {
    fn default() -> Cubin {
        Cubin::new()
    }
}
