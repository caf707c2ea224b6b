//! The cubin reader: ELF bytes → [`Cubin`]. Everything the writer derives is checked rather than
//! stored; anything the model cannot express is an error that names it, never a panic.

use super::elf::{Elf, Rela, Symbol, str_at};
use super::frame::{self, Entry};
use super::model::*;
use super::note;
use runtime_abi::compat::Compat;
use runtime_abi::eiattr::{KParamInfo, Record};
use runtime_abi::elf::*;
use runtime_abi::param::{self, ParamSpec, Pointee};
use std::collections::HashMap;
use std::fmt;

/// Why a cubin could not be read into the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError(pub String);

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cubin: {}", self.0)
    }
}

impl std::error::Error for ReadError {}

impl From<super::elf::ElfError> for ReadError {
    fn from(e: super::elf::ElfError) -> ReadError {
        ReadError(e.0)
    }
}

type Result<T> = std::result::Result<T, ReadError>;

fn bail<T>(msg: impl Into<String>) -> Result<T> {
    Err(ReadError(msg.into()))
}

/// The ptxas padding of a `.text` section: `BRA` to itself, then NOPs to a multiple of 128
/// bytes, plus 128 more.
pub fn padded_len(code_len: usize) -> usize {
    (code_len + 16).next_multiple_of(TEXT_ALIGN as usize) + TEXT_PAD_EXTRA
}

/// Appends ptxas's `.text` padding to `code`.
pub fn pad_text(code: &[u8]) -> Vec<u8> {
    let n = padded_len(code.len());
    let mut out = Vec::with_capacity(n);
    out.extend_from_slice(code);
    let word = |out: &mut Vec<u8>, w: [u64; 2]| {
        out.extend_from_slice(&w[0].to_le_bytes());
        out.extend_from_slice(&w[1].to_le_bytes());
    };
    word(&mut out, BRA_SELF);
    while out.len() < n {
        word(&mut out, NOP);
    }
    out
}

/// Strips ptxas's `.text` padding; `None` when the section does not end in it.
pub fn strip_padding(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(16) {
        return None;
    }
    let word = |i: usize| -> [u64; 2] {
        let b = &text[i * 16..i * 16 + 16];
        [
            u64::from_le_bytes(b[..8].try_into().expect("8")),
            u64::from_le_bytes(b[8..].try_into().expect("8")),
        ]
    };
    let mut k = text.len() / 16;
    while k > 0 && word(k - 1) == NOP {
        k -= 1;
    }
    if k == 0 || word(k - 1) != BRA_SELF {
        return None;
    }
    let code = text[..(k - 1) * 16].to_vec();
    (pad_text(&code) == text).then_some(code)
}

struct Ctx<'a> {
    elf: Elf<'a>,
    syms: Vec<Symbol>,
    sym_names: Vec<String>,
}

impl Ctx<'_> {
    fn sym_name(&self, i: u32) -> Result<&str> {
        self.sym_names
            .get(i as usize)
            .map(|s| s.as_str())
            .ok_or_else(|| ReadError(format!("symbol index {i} out of range")))
    }

    /// The relocations of the section `.rela<name>` / `.rel<name>`, if present.
    fn relocs_for(&self, name: &str) -> Result<Option<Vec<Rela>>> {
        let rela = format!(".rela{name}");
        let rel = format!(".rel{name}");
        if self.elf.find(&rel).is_some() {
            return bail(format!("{rel}: REL relocation sections are not supported"));
        }
        match self.elf.find(&rela) {
            Some(i) => Ok(Some(self.elf.relocations(i)?)),
            None => Ok(None),
        }
    }

    /// Converts ELF relocations (in ptxas's order, which is reverse creation order) to model
    /// relocations in creation order.
    fn model_relocs(&self, rs: &[Rela]) -> Result<Vec<Reloc>> {
        rs.iter()
            .rev()
            .map(|r| {
                Ok(Reloc {
                    offset: r.offset,
                    ty: r.ty,
                    symbol: self.sym_name(r.sym)?.to_string(),
                    addend: r.addend,
                })
            })
            .collect()
    }
}

fn dim3(v: [u32; 3]) -> [u32; 3] {
    v
}

/// Reads a cubin.
pub fn read(bytes: &[u8]) -> Result<Cubin> {
    let elf = Elf::parse(bytes)?;
    let h = &elf.header;
    if h.ident[7] != ELFOSABI_CUDA || h.ident[8] != ELFABIVERSION_CUDA {
        return bail(format!(
            "OS/ABI {:#x}, ABI version {}: only CUDA ELF ABI version 8 (0x41, 8) is supported",
            h.ident[7], h.ident[8]
        ));
    }
    if h.e_machine != EM_CUDA {
        return bail(format!("e_machine {} is not EM_CUDA (190)", h.e_machine));
    }
    if h.e_flags & 0x00ff_00ff != EF_CUDA_SM90_LOW {
        return bail(format!("e_flags {:#x}: unsupported layout", h.e_flags));
    }
    let sm = (h.e_flags >> EF_CUDA_SM_SHIFT) as u8;
    let elf_info_byte = (h.e_flags >> EF_CUDA_INFO_SHIFT) as u8;
    let relocatable = match h.e_type {
        ET_EXEC => false,
        ET_REL => true,
        t => return bail(format!("e_type {t} is neither ET_EXEC nor ET_REL")),
    };

    let symtab = elf
        .find(".symtab")
        .ok_or_else(|| ReadError("no .symtab".into()))?;
    let strtab = elf
        .find(".strtab")
        .ok_or_else(|| ReadError("no .strtab".into()))?;
    let syms = elf.symbols(symtab)?;
    let strs = elf.section_data(strtab)?;
    let sym_names = syms
        .iter()
        .enumerate()
        .map(|(i, s)| str_at(strs, s.name, &format!("name of symbol {i}")))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let cx = Ctx {
        elf,
        syms,
        sym_names,
    };
    let elf = &cx.elf;
    let names = &elf.names;

    let shstr_names: std::collections::HashSet<String> = elf
        .section_data(usize::from(elf.header.e_shstrndx))?
        .split(|&b| b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    let has_name = |n: &str| shstr_names.contains(n);
    let data_of = |name: &str| -> Result<Option<&[u8]>> {
        match elf.find(name) {
            Some(i) => Ok(Some(elf.section_data(i)?)),
            None => Ok(None),
        }
    };

    // ---- notes, compat ----
    let tool = note::decode_tkinfo(
        data_of(".note.nv.tkinfo")?.ok_or_else(|| ReadError("no .note.nv.tkinfo".into()))?,
    )
    .map_err(ReadError)?;
    let cuda = note::decode_cuinfo(
        data_of(".note.nv.cuinfo")?.ok_or_else(|| ReadError("no .note.nv.cuinfo".into()))?,
    )
    .map_err(ReadError)?;
    let compat_bytes = data_of(".nv.compat")?.ok_or_else(|| ReadError("no .nv.compat".into()))?;
    let compat = Compat::decode(compat_bytes)
        .ok_or_else(|| ReadError(".nv.compat: records not in ptxas's form".into()))?;

    // The top byte of e_flags is the index of `.note.nv.cuinfo` (runtime_abi::elf::e_flags),
    // which the writer derives.
    if elf.find(".note.nv.cuinfo") != Some(usize::from(elf_info_byte)) {
        return bail(format!(
            "e_flags top byte {elf_info_byte:#x} is not the index of .note.nv.cuinfo"
        ));
    }
    // A debug build is taken for a `.target …, debug` module when that index is 0x0e (the
    // probes that tell the two apart have this layout; the writer only differs in the symbols
    // of shared variables).
    let build = if elf.find(RESERVED_SMEM_SECTION).is_some() {
        Build::Optimized
    } else if elf_info_byte == info_byte::DEBUG_TARGET {
        Build::DebugTarget
    } else {
        Build::DeviceDebug
    };

    // ---- functions, in section (processing) order ----
    let mut funcs: Vec<Function> = Vec::new();
    let mut text_index: Vec<usize> = Vec::new();
    let mut func_of_sym: HashMap<u32, (usize, Option<usize>)> = HashMap::new();
    for (si, name) in names.iter().enumerate() {
        let Some(fname) = name.strip_prefix(".text.") else {
            continue;
        };
        let text = elf.section_data(si)?;
        let code = strip_padding(text).ok_or_else(|| {
            ReadError(format!(
                "{name}: does not end in ptxas's BRA-to-self and NOP padding"
            ))
        })?;
        let mut main = None;
        let mut subs: Vec<(u64, u32)> = Vec::new();
        for (k, s) in cx.syms.iter().enumerate() {
            if usize::from(s.shndx) != si || s.kind() != STT_FUNC {
                continue;
            }
            if s.value == 0 && cx.sym_names[k] == fname {
                main = Some(k as u32);
            } else {
                subs.push((s.value, k as u32));
            }
        }
        let Some(main) = main else {
            return bail(format!("{name}: no function symbol {fname} at offset 0"));
        };
        let ms = &cx.syms[main as usize];
        if ms.size != text.len() as u64 {
            return bail(format!(
                "{name}: symbol size {:#x} is not the section size",
                ms.size
            ));
        }
        let kind = if ms.other & STO_CUDA_ENTRY != 0 {
            FunctionKind::Kernel
        } else {
            FunctionKind::Device
        };
        if ms.other & !STO_CUDA_ENTRY != 0 {
            return bail(format!("{fname}: unexpected st_other {:#x}", ms.other));
        }
        let linkage = Linkage::from_bind(ms.bind())
            .ok_or_else(|| ReadError(format!("{fname}: binding {}", ms.bind())))?;
        subs.sort();
        let fi = funcs.len();
        func_of_sym.insert(main, (fi, None));
        let mut subroutines = Vec::new();
        for (n, &(off, k)) in subs.iter().enumerate() {
            let s = &cx.syms[k as usize];
            let end = subs.get(n + 1).map(|x| x.0).unwrap_or(text.len() as u64);
            if s.size != end - off || s.other != 0 {
                return bail(format!(
                    "{name}: subroutine {} does not run to the next one",
                    cx.sym_names[k as usize]
                ));
            }
            func_of_sym.insert(k, (fi, Some(n)));
            subroutines.push(Subroutine {
                name: cx.sym_names[k as usize].clone(),
                linkage: Linkage::from_bind(s.bind())
                    .ok_or_else(|| ReadError(format!("binding {}", s.bind())))?,
                offset: off,
                frame_size: 0,
                unwind: Unwind {
                    cie: Cie::standard(),
                    ops: Vec::new(),
                },
            });
        }
        let mut f = Function::kernel(fname, code);
        f.kind = kind;
        f.linkage = linkage;
        f.attrs = FunctionAttrs::device();
        f.attrs.cuda_api_version = None;
        f.attrs.sparse_mma_mask = None;
        f.attrs.mercury_isa = None;
        f.attrs.sw_war = None;
        f.subroutines = subroutines;
        funcs.push(f);
        text_index.push(si);
    }

    // ---- module .nv.info ----
    let mut gen_errbar = false;
    if let Some(d) = data_of(".nv.info")? {
        let recs = Record::decode_all(d).map_err(|e| ReadError(format!(".nv.info: {e}")))?;
        for r in recs {
            let target = |sym: u32| -> Result<(usize, Option<usize>)> {
                func_of_sym
                    .get(&sym)
                    .copied()
                    .ok_or_else(|| ReadError(format!(".nv.info: symbol {sym} is not a function")))
            };
            match r {
                Record::RegCount {
                    function,
                    registers,
                } => match target(function)? {
                    (f, None) => funcs[f].registers = registers,
                    _ => return bail(".nv.info: REGCOUNT of a subroutine"),
                },
                Record::FrameSize { function, bytes } => match target(function)? {
                    (f, None) => funcs[f].frame_size = bytes,
                    (f, Some(s)) => funcs[f].subroutines[s].frame_size = bytes,
                },
                Record::MinStackSize { function, bytes } => match target(function)? {
                    (f, None) => funcs[f].min_stack_size = bytes,
                    _ => return bail(".nv.info: MIN_STACK_SIZE of a subroutine"),
                },
                Record::GenErrbarAtExit => gen_errbar = true,
                Record::MercuryIsaVersion { .. } if funcs.is_empty() => {}
                r => return bail(format!(".nv.info: unexpected record {r:?}")),
            }
        }
    } else {
        return bail("no .nv.info");
    }

    // ---- per-function .nv.info.<f>, shared, relocations, constant bank 0 ----
    for (fi, f) in funcs.iter_mut().enumerate() {
        let name = f.name.clone();
        let info = data_of(&format!(".nv.info.{name}"))?
            .ok_or_else(|| ReadError(format!("no .nv.info.{name}")))?;
        let recs =
            Record::decode_all(info).map_err(|e| ReadError(format!(".nv.info.{name}: {e}")))?;
        let mut kparams: Vec<(KParamInfo, bool)> = Vec::new();
        let mut cbank_size = None;
        let mut param_cbank = None;
        let a = &mut f.attrs;
        for r in recs {
            match r {
                Record::CudaApiVersion(v) => a.cuda_api_version = Some(v),
                Record::KParamInfo(k) => kparams.push((k, false)),
                Record::KParamInfoV2(k) => kparams.push((k, true)),
                Record::MaxClusterRank(v) => a.max_cluster_rank = Some(v),
                Record::ExplicitCluster => a.explicit_cluster = true,
                Record::CtaPerCluster(v) => a.cta_per_cluster = Some(dim3(v)),
                Record::ReservedSmemUsed => a.reserved_smem_used = true,
                Record::SparseMmaMask(v) => a.sparse_mma_mask = Some(v),
                Record::MaxRegCount(v) => a.maxreg_count = Some(v),
                Record::Externs(v) => {
                    for s in v {
                        a.externs.push(cx.sym_name(s)?.to_string());
                    }
                }
                Record::NumBarriers(v) => a.num_barriers = Some(v),
                Record::Annotations(v) => a.annotations = v,
                Record::MercuryIsaVersion { major, minor } => a.mercury_isa = Some((major, minor)),
                Record::IntWarpWideInstrOffsets(v) => a.warp_wide_offsets = v,
                Record::CoopGroupMaskRegids(v) => a.coop_group_mask_regids = v,
                Record::CoopGroupInstrOffsets(v) => a.coop_group_offsets = v,
                Record::InstrRegMap(v) => a.instr_reg_map = v,
                Record::SyscallOffsets(v) => a.syscall_offsets = v,
                Record::RegReconfig => a.reg_reconfig = true,
                Record::MbarrierInstrOffsets(v) => a.mbarrier_instrs = v,
                Record::NumMbarriers(v) => a.num_mbarriers = Some(v),
                Record::ExitInstrOffsets(v) => a.exit_offsets = v,
                Record::MaxThreads(v) => a.max_threads = Some(v),
                Record::ReqNtid(v) => a.reqntid = Some(v),
                Record::CrsStackSize(v) => a.crs_stack_size = Some(v),
                Record::SharedScratch { offset, size } => a.shared_scratch = Some((offset, size)),
                Record::CbankParamSize(v) => cbank_size = Some(v),
                Record::ParamCbank {
                    section_symbol,
                    offset,
                    size,
                } => param_cbank = Some((section_symbol, offset, size)),
                Record::SwWar(v) => a.sw_war = Some(v),
                Record::BindlessTextureBank(v) => a.bindless_texture_bank = Some(v),
                Record::BindlessSurfaceBank(v) => a.bindless_surface_bank = Some(v),
                r @ (Record::RegCount { .. }
                | Record::FrameSize { .. }
                | Record::MinStackSize { .. }
                | Record::GenErrbarAtExit) => {
                    return bail(format!(".nv.info.{name}: module record {r:?}"));
                }
                r @ Record::Other { .. } => a.other.push(r),
            }
        }
        // Parameters: records come last parameter first.
        kparams.reverse();
        let v2 = kparams.first().map(|k| k.1).unwrap_or(false);
        if kparams.iter().any(|k| k.1 != v2) {
            return bail(format!("{name}: KPARAM_INFO and KPARAM_INFO_V2 mixed"));
        }
        let mut end = 0u32;
        for (i, (k, _)) in kparams.iter().enumerate() {
            if usize::from(k.ordinal) != i || k.index != 0 {
                return bail(format!("{name}: parameter records out of order"));
            }
            if !v2 && (k.cbank != runtime_abi::param::KPARAM_CBANK || k.not_cbank) {
                return bail(format!("{name}: parameter {i} is not in constant bank 0"));
            }
            let align = param::infer_align(end, u32::from(k.offset), k.size).ok_or_else(|| {
                ReadError(format!(
                    "{name}: parameter {i} offset does not follow layout"
                ))
            })?;
            f.params.push(ParamSpec {
                size: k.size,
                align,
                pointee: Pointee {
                    space: k.space,
                    log_align: k.log_align,
                },
            });
            end = u32::from(k.offset) + k.size;
        }
        let layout = param::layout(&f.params).map_err(|e| ReadError(format!("{name}: {e}")))?;
        if !f.params.is_empty() && layout.uses_kparam_info_v2() != v2 {
            return bail(format!(
                "{name}: KPARAM_INFO kind does not follow the 4352-byte rule"
            ));
        }
        let const0 = format!(".nv.constant0.{name}");
        let c0 = elf.find(&const0);
        match (f.kind, c0) {
            (FunctionKind::Kernel, Some(ci)) => {
                let data = elf.section_data(ci)?;
                // Texture header slots after the parameters.
                let slots_at = u64::from((PARAM_BASE_U32 + layout.size).next_multiple_of(4));
                if let Some(rs) = cx.relocs_for(&const0)? {
                    let nslots = (data.len() as u64).saturating_sub(slots_at) / 4;
                    f.bank0_slots = vec![None; nslots as usize];
                    for r in rs.iter().rev() {
                        let k = r.offset.checked_sub(slots_at).map(|d| d / 4);
                        let ok = matches!(
                            r.ty,
                            runtime_abi::reloc::R_CUDA_TEX_HEADER_INDEX
                                | runtime_abi::reloc::R_CUDA_SURF_HEADER_INDEX
                        ) && r.addend == 0
                            && r.offset >= slots_at
                            && (r.offset - slots_at).is_multiple_of(4);
                        match k {
                            Some(k) if ok && (k as usize) < f.bank0_slots.len() => {
                                if f.bank0_slots[k as usize].is_some() {
                                    return bail(format!("{const0}: slot {k} relocated twice"));
                                }
                                f.bank0_slots[k as usize] = Some(HeaderSlot {
                                    symbol: cx.sym_name(r.sym)?.to_string(),
                                    reloc: r.ty,
                                });
                            }
                            _ => return bail(format!("{const0}: unexpected relocation {r:?}")),
                        }
                    }
                    // ptxas writes the relocations newest first, in slot order.
                    let written: Vec<u64> = rs.iter().map(|r| r.offset).collect();
                    let mut sorted = written.clone();
                    sorted.sort_by(|a, b| b.cmp(a));
                    if written != sorted {
                        return bail(format!("{const0}: relocations not in slot order"));
                    }
                }
                let want = if f.bank0_slots.is_empty() {
                    u64::from(layout.constant0_size())
                } else {
                    slots_at + 4 * f.bank0_slots.len() as u64
                };
                if data.len() as u64 != want || data.iter().any(|&b| b != 0) {
                    return bail(format!("{const0}: not {want:#x} zero bytes"));
                }
                let expect_cbank = (!f.params.is_empty()).then_some(layout.size as u16);
                if cbank_size != expect_cbank {
                    return bail(format!(
                        "{name}: CBANK_PARAM_SIZE {cbank_size:?} does not match the parameters"
                    ));
                }
                match param_cbank {
                    None if f.params.is_empty() => {}
                    Some((sym, off, size))
                        if usize::from(cx.syms.get(sym as usize).map(|s| s.shndx).unwrap_or(0))
                            == ci
                            && u32::from(off) == PARAM_BASE_U32
                            && size == layout.size as u16 => {}
                    p => return bail(format!("{name}: PARAM_CBANK {p:?} does not match")),
                }
            }
            (FunctionKind::Device, None) => {
                if !kparams.is_empty() || cbank_size.is_some() || param_cbank.is_some() {
                    return bail(format!("{name}: parameter records on a device function"));
                }
            }
            (FunctionKind::Kernel, None) => return bail(format!("kernel {name} has no {const0}")),
            (FunctionKind::Device, Some(_)) => {
                return bail(format!("device function {name} has {const0}"));
            }
        }
        if let Some(si) = elf.find(&format!(".nv.shared.{name}")) {
            let s = &elf.sections[si];
            f.shared = Some(SharedMem {
                size: s.size,
                align: s.addralign,
            });
            for (k, sy) in cx.syms.iter().enumerate() {
                if usize::from(sy.shndx) == si && sy.kind() == STT_OBJECT {
                    f.shared_vars.push(SharedVar {
                        name: cx.sym_names[k].clone(),
                        linkage: Linkage::from_bind(sy.bind())
                            .ok_or_else(|| ReadError(format!("binding {}", sy.bind())))?,
                        offset: sy.value,
                        size: sy.size,
                    });
                }
            }
        }
        match cx.relocs_for(&format!(".text.{name}"))? {
            Some(rs) if rs.is_empty() => f.resolved = Resolved::EmptySection,
            Some(rs) => f.relocs = cx.model_relocs(&rs)?,
            None if has_name(&format!(".rela.text.{name}")) => f.resolved = Resolved::NamesOnly,
            None => {}
        }
        let _ = fi;
    }

    // ---- the nameless internal symbol: it belongs to the function whose section symbol
    // precedes it ----
    let erased: Vec<usize> = cx
        .syms
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(k, s)| cx.sym_names[*k].is_empty() && s.other == STV_INTERNAL && s.info == 0)
        .map(|(k, _)| k)
        .collect();
    match erased.as_slice() {
        [] => {}
        [k] => {
            let owner = cx.syms[..*k]
                .iter()
                .enumerate()
                .rev()
                .find_map(|(j, s)| {
                    (s.info == STT_SECTION)
                        .then(|| names.get(usize::from(s.shndx)))
                        .flatten()
                        .and_then(|n| n.strip_prefix(".text."))
                        .and_then(|n| funcs.iter().position(|f| f.name == n))
                        .filter(|_| j > 0)
                })
                .or_else(|| (!funcs.is_empty()).then_some(0))
                .ok_or_else(|| ReadError("nameless internal symbol without functions".into()))?;
            funcs[owner].erased_symbol = Some(erased_name_len(strs).ok_or_else(|| {
                ReadError("nameless internal symbol, but no zeroed name in .strtab".into())
            })?);
        }
        _ => return bail("more than one nameless internal symbol"),
    }

    // ---- call graph ----
    if let Some(d) = data_of(".nv.callgraph")? {
        if !d.len().is_multiple_of(8) {
            return bail(".nv.callgraph: size is not a multiple of 8");
        }
        let pairs: Vec<(u32, u32)> = d
            .chunks_exact(8)
            .map(|c| {
                (
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                    u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
                )
            })
            .collect();
        let n = pairs.len();
        if n < 4
            || pairs[0] != (0, u32::MAX)
            || pairs[n - 3..] != [(0, u32::MAX - 1), (0, u32::MAX - 2), (0, u32::MAX - 3)]
        {
            return bail(".nv.callgraph: not in ptxas's form");
        }
        for &(caller, callee) in &pairs[1..n - 3] {
            let Some(&(fi, None)) = func_of_sym.get(&caller) else {
                return bail(format!(".nv.callgraph: caller {caller} is not a function"));
            };
            funcs[fi].callees.push(cx.sym_name(callee)?.to_string());
        }
    } else {
        return bail("no .nv.callgraph");
    }

    // ---- .debug_frame ----
    if let Some(di) = elf.find(".debug_frame") {
        let d = elf.section_data(di)?;
        let rs = cx.relocs_for(".debug_frame")?.unwrap_or_default();
        let relocated: Vec<usize> = rs.iter().map(|r| r.offset as usize).collect();
        let entries = frame::decode(d, &relocated).map_err(ReadError)?;
        let mut cie_at: HashMap<usize, Cie> = HashMap::new();
        let mut seen = 0;
        for e in entries {
            match e {
                Entry::Cie { offset, cie } => {
                    cie_at.insert(offset, cie);
                }
                Entry::Fde {
                    cie_offset,
                    loc_at,
                    location,
                    range,
                    ops,
                    ..
                } => {
                    let r = rs
                        .iter()
                        .find(|r| r.offset as usize == loc_at)
                        .ok_or_else(|| ReadError(format!("FDE at {loc_at:#x} not relocated")))?;
                    if location != r.addend as u64 || r.ty != runtime_abi::reloc::R_CUDA_64 {
                        return bail("FDE location not in ptxas's form");
                    }
                    let &(fi, sub) = func_of_sym.get(&r.sym).ok_or_else(|| {
                        ReadError(format!("FDE for symbol {} which is no function", r.sym))
                    })?;
                    let cie = cie_at
                        .get(&(cie_offset as usize))
                        .cloned()
                        .ok_or_else(|| ReadError("FDE without CIE".into()))?;
                    let f = &mut funcs[fi];
                    let sub = match sub {
                        None => f
                            .subroutines
                            .iter()
                            .position(|s| s.offset == r.addend as u64)
                            .filter(|_| r.addend != 0),
                        s => s,
                    };
                    let u = Unwind { cie, ops };
                    match sub {
                        None if r.addend == 0 => f.unwind = u,
                        Some(s) => f.subroutines[s].unwind = u,
                        None => return bail("FDE location names no subroutine"),
                    }
                    let _ = range;
                    seen += 1;
                }
            }
        }
        let want: usize = funcs.iter().map(|f| 1 + f.subroutines.len()).sum();
        if seen != want {
            return bail(format!(".debug_frame: {seen} FDEs for {want} functions"));
        }
    } else {
        return bail("no .debug_frame");
    }

    // ---- module variables ----
    let variables = read_variables(&cx)?;
    let const_relocs_present = elf.find(".rela.nv.constant3").is_some();

    // ---- .extern .shared symbols of -g builds ----
    let mut extern_shared = Vec::new();
    if let Some(si) = elf.find(DEBUG_SHARED_SECTION) {
        let sh = &elf.sections[si];
        if sh.size != u64::from(runtime_abi::smem::USER_BASE) {
            return bail(format!("{DEBUG_SHARED_SECTION}: size {:#x}", sh.size));
        }
        for (k, sy) in cx.syms.iter().enumerate() {
            if usize::from(sy.shndx) == si && sy.kind() == STT_OBJECT {
                extern_shared.push(ExternShared {
                    name: cx.sym_names[k].clone(),
                    linkage: Linkage::from_bind(sy.bind())
                        .ok_or_else(|| ReadError(format!("binding {}", sy.bind())))?,
                    value: sy.value,
                    align: sh.addralign,
                });
            }
        }
    }

    // ---- compiler constant bank ----
    let bank4 = match elf.find(".nv.constant4") {
        Some(si) => Some(DataBlock {
            data: elf.section_data(si)?.to_vec(),
            align: elf.sections[si].addralign,
            relocs: cx.model_relocs(&cx.relocs_for(".nv.constant4")?.unwrap_or_default())?,
        }),
        None => None,
    };

    // ---- externs ----
    let mut externs = Vec::new();
    let mut reserved_smem_cap = None;
    for (k, s) in cx.syms.iter().enumerate().skip(1) {
        if s.shndx != 0 || cx.sym_names[k].is_empty() || cx.sym_names[k] == RESERVED_SMEM_SYMBOL {
            continue;
        }
        if cx.sym_names[k] == RESERVED_SMEM_CAP_SYMBOL {
            reserved_smem_cap = Some(s.value);
            continue;
        }
        let kind = match s.kind() {
            STT_FUNC => ExternKind::Function,
            STT_CUDA_TEXTURE => ExternKind::Texture,
            STT_CUDA_SURFACE => ExternKind::Surface,
            STT_CUDA_SAMPLER => ExternKind::Sampler,
            t => return bail(format!("undefined symbol {} of type {t}", cx.sym_names[k])),
        };
        externs.push(Extern {
            name: cx.sym_names[k].clone(),
            kind,
        });
    }

    // ---- debug sections ----
    let mut debug_sections = Vec::new();
    for (si, name) in names.iter().enumerate() {
        if name == ".debug_frame"
            || !(name.starts_with(".debug_") || name.starts_with(".nv_debug_"))
        {
            continue;
        }
        let rel_names = if has_name(&format!(".rel{name}")) {
            RelNames::RelAndRela
        } else if has_name(&format!(".rela{name}")) {
            RelNames::RelaOnly
        } else {
            RelNames::None
        };
        debug_sections.push(DebugSection {
            name: name.clone(),
            data: DataBlock {
                data: elf.section_data(si)?.to_vec(),
                align: elf.sections[si].addralign,
                relocs: cx.model_relocs(&cx.relocs_for(name)?.unwrap_or_default())?,
            },
            rel_names,
        });
    }

    // ---- every section accounted for ----
    for name in names.iter().skip(1) {
        let n = name.strip_prefix(".rela").unwrap_or(name);
        let known = matches!(
            n,
            ".shstrtab"
                | ".strtab"
                | ".symtab"
                | ".note.nv.tkinfo"
                | ".note.nv.cuinfo"
                | ".nv.info"
                | ".nv.compat"
                | ".nv.callgraph"
                | ".nv.constant3"
                | ".nv.constant4"
                | ".nv.global"
                | ".nv.global.init"
                | RESERVED_SMEM_SECTION
                | DEBUG_SHARED_SECTION
        ) || n.starts_with(".text.")
            || n.starts_with(".nv.info.")
            || n.starts_with(".nv.shared.")
            || n.starts_with(".nv.constant0.")
            || n.starts_with(".debug_")
            || n.starts_with(".nv_debug_");
        if !known {
            return bail(format!("section {name} is not part of the model"));
        }
    }

    if !build.is_debug() {
        funcs.reverse();
    }
    let c = Cubin {
        sm,
        relocatable,
        build,
        tool,
        cuda,
        compat,
        functions: funcs,
        variables,
        bank4,
        externs,
        debug_sections,
        gen_errbar_at_exit: gen_errbar,
        reserved_smem_cap,
        const_addresses_resolved: has_name(".rela.nv.constant.user") && !const_relocs_present,
        module_shared_vars: has_name(DEBUG_SHARED_SECTION),
        extern_shared,
    };
    Ok(c)
}

/// The variables of `.nv.global.init`, `.nv.global` and `.nv.constant3`, in a PTX order
/// reconstructed from symbol creation order, with alignments that reproduce ptxas's placement
/// (decreasing alignment, PTX order among equals).
fn read_variables(cx: &Ctx<'_>) -> Result<Vec<Variable>> {
    let elf = &cx.elf;
    let sections: Vec<(usize, &str, VarSpace, bool)> = [
        (".nv.global.init", VarSpace::Global, true),
        (".nv.global", VarSpace::Global, false),
        (".nv.constant3", VarSpace::Const, true),
    ]
    .into_iter()
    .filter_map(|(n, sp, init)| elf.find(n).map(|i| (i, n, sp, init)))
    .collect();
    if elf.find(".rela.nv.global.init").is_some() {
        return bail(".rela.nv.global.init: relocated global initializers are not in the model");
    }
    let is_var =
        |s: &Symbol| s.kind() == STT_OBJECT && sections.iter().any(|x| x.0 == usize::from(s.shndx));
    // PTX order: walk the symbols; a global variable's symbol comes late, so it is placed where
    // its section was created.
    let mut order: Vec<usize> = Vec::new();
    for (k, s) in cx.syms.iter().enumerate() {
        if s.info == STT_SECTION && sections.iter().any(|x| x.0 == usize::from(s.shndx)) {
            let mut globals: Vec<(u64, usize)> = cx
                .syms
                .iter()
                .enumerate()
                .filter(|(_, g)| is_var(g) && g.shndx == s.shndx && g.bind() == STB_GLOBAL)
                .map(|(j, g)| (g.value, j))
                .collect();
            globals.sort();
            order.extend(globals.into_iter().map(|g| g.1));
        } else if is_var(s) && s.bind() != STB_GLOBAL {
            order.push(k);
        }
    }
    let pos = |k: usize| order.iter().position(|&o| o == k).unwrap_or(usize::MAX);
    let mut aligns: HashMap<usize, u64> = HashMap::new();
    let mut inits: HashMap<usize, Option<Vec<u8>>> = HashMap::new();
    let mut relocs: HashMap<usize, Vec<Reloc>> = HashMap::new();
    for &(si, sec, _, init) in &sections {
        let data = elf.section_data(si)?;
        let sec_align = elf.sections[si].addralign.max(1);
        let mut vars: Vec<(u64, usize)> = cx
            .syms
            .iter()
            .enumerate()
            .filter(|(_, s)| is_var(s) && usize::from(s.shndx) == si)
            .map(|(k, s)| (s.value, k))
            .collect();
        vars.sort();
        let mut end = 0u64;
        let mut prev: Option<(usize, u64)> = None;
        for &(off, k) in &vars {
            let s = &cx.syms[k];
            let align = match prev {
                None if off == 0 => sec_align,
                None => return bail(format!("{sec}: first variable not at offset 0")),
                Some((pk, pa)) => {
                    let cap = if pos(pk) < pos(k) { pa } else { pa / 2 };
                    (0..64)
                        .map(|b| 1u64 << b)
                        .take_while(|&p| p <= cap)
                        .filter(|&p| off.is_multiple_of(p) && end.next_multiple_of(p) == off)
                        .max()
                        .ok_or_else(|| {
                            ReadError(format!(
                                "{sec}: variable {} is not where ptxas's layout puts it",
                                cx.sym_names[k]
                            ))
                        })?
                }
            };
            aligns.insert(k, align);
            let init_bytes = if init {
                let b = data
                    .get(off as usize..(off + s.size) as usize)
                    .ok_or_else(|| ReadError(format!("{sec}: variable outside section")))?;
                Some(b.to_vec())
            } else {
                None
            };
            inits.insert(k, init_bytes);
            end = off + s.size;
            prev = Some((k, align));
        }
        if sec == ".nv.constant3"
            && let Some(rs) = cx.relocs_for(sec)?
        {
            for r in cx.model_relocs(&rs)? {
                let owner = vars
                    .iter()
                    .find(|&&(o, k)| r.offset >= o && r.offset < o + cx.syms[k].size)
                    .ok_or_else(|| ReadError(format!("{sec}: relocation outside variables")))?;
                relocs.entry(owner.1).or_default().push(Reloc {
                    offset: r.offset - owner.0,
                    ..r
                });
            }
        }
    }
    let mut out = Vec::new();
    for k in order {
        let s = &cx.syms[k];
        let &(_, _, space, _) = sections
            .iter()
            .find(|x| x.0 == usize::from(s.shndx))
            .expect("variable section");
        out.push(Variable {
            name: cx.sym_names[k].clone(),
            space,
            linkage: Linkage::from_bind(s.bind())
                .ok_or_else(|| ReadError(format!("binding {}", s.bind())))?,
            size: s.size,
            align: aligns[&k],
            init: inits.remove(&k).flatten(),
            relocs: relocs.remove(&k).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// The length of the name ptxas zeroed in `.strtab`: the first run of NULs longer than a
/// terminator that does not follow a renamed section name (`.nv.constant3`/`4`, `.nv.constant0.*`).
fn erased_name_len(strtab: &[u8]) -> Option<usize> {
    let mut i = 1;
    while i < strtab.len() {
        if strtab[i] != 0 {
            i += 1;
            continue;
        }
        // strtab[i] terminates the string that starts after the previous NUL.
        let start = strtab[..i]
            .iter()
            .rposition(|&b| b == 0)
            .map(|p| p + 1)
            .unwrap_or(0);
        let prev = &strtab[start..i];
        let mut j = i + 1;
        while j < strtab.len() && strtab[j] == 0 {
            j += 1;
        }
        let renamed = if prev == b".nv.constant3" {
            4
        } else if prev == b".nv.constant4" {
            3
        } else if prev.starts_with(b".nv.constant0.") {
            26
        } else {
            0
        };
        let zeros = (j - i - 1).saturating_sub(renamed);
        if zeros >= 2 && j < strtab.len() {
            return Some(zeros - 1);
        }
        i = j.max(i + 1);
    }
    None
}

const PARAM_BASE_U32: u32 = runtime_abi::cbank0::PARAM_BASE;
