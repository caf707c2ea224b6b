//! The cubin writer: [`Cubin`] → the bytes ptxas 13.1 would write.
//!
//! ptxas builds a cubin by creating sections, symbols and strings as it goes, then sorting the
//! sections into groups. The writer replays that process from the model (see `docs/cubin.md`
//! for each rule and the evidence):
//!
//! 1. Functions are processed in reverse PTX order (PTX order in a debug build).
//! 2. Each creation appends to `.shstrtab` / `.strtab` without sharing strings, and renamed
//!    sections leave NUL padding where the longer original name was (`.nv.constant.pic` →
//!    `.nv.constant4`).
//! 3. Sections are grouped: string and symbol tables, debug sections, notes, `.nv.info*` and
//!    the call graph, relocations, read-only constant banks, code, writable data (PROGBITS before
//!    NOBITS), and the kernels' constant bank 0.
//! 4. Relocation lists are written newest first.

use super::elf::{Header, Image, OutSection, ProgramHeader, Rela, SectionHeader, Symbol};
use super::frame;
use super::model::*;
use super::note;
use super::read::pad_text;
use runtime_abi::eiattr::{KParamInfo, Record, function_order_rank};
use runtime_abi::elf::*;
use runtime_abi::param;
use std::collections::HashMap;
use std::fmt;

/// Why a model cannot be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteError(pub String);

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cubin writer: {}", self.0)
    }
}

impl std::error::Error for WriteError {}

type Result<T> = std::result::Result<T, WriteError>;

fn bail<T>(msg: impl Into<String>) -> Result<T> {
    Err(WriteError(msg.into()))
}

/// A string table built in creation order, without sharing.
#[derive(Default)]
struct StrTab {
    bytes: Vec<u8>,
}

impl StrTab {
    fn new() -> StrTab {
        StrTab { bytes: vec![0] }
    }
    fn add(&mut self, s: &str) -> u32 {
        self.add_padded(s, 0)
    }
    /// A string followed by `extra` NULs (the rest of a longer name it replaced).
    fn add_padded(&mut self, s: &str, extra: usize) -> u32 {
        let off = self.bytes.len() as u32;
        self.bytes.extend_from_slice(s.as_bytes());
        self.bytes.push(0);
        self.bytes.resize(self.bytes.len() + extra, 0);
        off
    }
}

/// Which section a symbol is defined in, before indices are known.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Sec {
    Undef,
    Named(String),
}

#[derive(Clone, Debug)]
struct Sym {
    name: u32,
    info: u8,
    other: u8,
    sec: Sec,
    value: u64,
    size: u64,
    /// The symbol's name (for reference resolution; empty for section symbols).
    key: String,
}

/// Section kinds, in the order ptxas groups them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Tables,
    Debug,
    Notes,
    Info,
    Rela,
    ConstBanks,
    Text,
    DataProgbits,
    DataNobits,
    Constant0,
}

#[derive(Clone, Debug)]
struct PlannedSection {
    name: String,
    group: Group,
    /// Within the relocation group: text relocations, debug, constant banks, debug_frame.
    rank: (u32, u32),
}

fn sec_sym(strtab: &mut StrTab, name: &str) -> Sym {
    Sym {
        name: strtab.add(name),
        info: STT_SECTION, // LOCAL SECTION
        other: 0,
        sec: Sec::Named(name.to_string()),
        value: 0,
        size: 0,
        key: String::new(),
    }
}

struct Writer<'a> {
    c: &'a Cubin,
    /// Processing order (indices into `c.functions`).
    order: Vec<usize>,
    shstr: StrTab,
    strtab: StrTab,
    syms: Vec<Sym>,
    /// Sections in creation order.
    created: Vec<PlannedSection>,
    /// Each function's `.text` with ptxas's padding, moved into its section when it is built.
    texts: Vec<Vec<u8>>,
    /// The length of each of `texts`.
    text_lens: Vec<u64>,
}

/// Writes a cubin.
pub fn write(c: &Cubin) -> Result<Vec<u8>> {
    let mut order: Vec<usize> = (0..c.functions.len()).collect();
    if !c.build.is_debug() {
        order.reverse();
    }
    let texts: Vec<Vec<u8>> = c.functions.iter().map(|f| pad_text(&f.code)).collect();
    let text_lens = texts.iter().map(|t| t.len() as u64).collect();
    let mut w = Writer {
        c,
        order,
        shstr: StrTab::new(),
        strtab: StrTab::new(),
        syms: Vec::new(),
        created: Vec::new(),
        texts,
        text_lens,
    };
    w.validate()?;
    w.simulate();
    w.build()
}

impl<'a> Writer<'a> {
    fn validate(&self) -> Result<()> {
        let c = self.c;
        let ok_align = |a: u64| a <= 1 || (a.is_power_of_two() && a <= 1 << 16);
        for v in &c.variables {
            if !ok_align(v.align) || v.size > u64::from(u32::MAX) {
                return bail(format!(
                    "variable {}: alignment {} / size {}",
                    v.name, v.align, v.size
                ));
            }
            if v.init.as_ref().is_some_and(|b| b.len() as u64 > v.size) {
                return bail(format!(
                    "variable {}: initializer larger than the variable",
                    v.name
                ));
            }
        }
        for f in &c.functions {
            if let Some(sh) = f.shared
                && !ok_align(sh.align)
            {
                return bail(format!("{}: shared alignment {}", f.name, sh.align));
            }
        }
        if let Some(b) = &c.bank4
            && !ok_align(b.align)
        {
            return bail(format!(".nv.constant4 alignment {}", b.align));
        }
        for d in &c.debug_sections {
            if !ok_align(d.data.align) {
                return bail(format!("{}: alignment {}", d.name, d.data.align));
            }
        }
        for e in &c.extern_shared {
            if !ok_align(e.align) {
                return bail(format!("{}: alignment {}", e.name, e.align));
            }
        }
        let mut names = HashMap::new();
        for f in &c.functions {
            if f.name.is_empty() || f.name.contains('\0') {
                return bail(format!("bad function name {:?}", f.name));
            }
            if names.insert(f.name.as_str(), ()).is_some() {
                return bail(format!("function {} defined twice", f.name));
            }
            if !f.code.len().is_multiple_of(16) {
                return bail(format!(
                    "{}: code is {} bytes, not a whole number of 16-byte instructions",
                    f.name,
                    f.code.len()
                ));
            }
            if f.kind == FunctionKind::Device && !f.params.is_empty() {
                return bail(format!(
                    "{}: device functions take no .param block here",
                    f.name
                ));
            }
            let mut prev = 0;
            for s in &f.subroutines {
                if s.offset <= prev && prev != 0
                    || s.offset == 0
                    || s.offset as usize > f.code.len()
                {
                    return bail(format!(
                        "{}: subroutine {} offset out of order",
                        f.name, s.name
                    ));
                }
                prev = s.offset;
            }
            param::layout(&f.params).map_err(|e| WriteError(format!("{}: {e}", f.name)))?;
        }
        Ok(())
    }

    fn create(&mut self, name: &str, group: Group, rank: (u32, u32)) {
        self.created.push(PlannedSection {
            name: name.to_string(),
            group,
            rank,
        });
    }

    fn func(&self, i: usize) -> &'a Function {
        &self.c.functions[i]
    }

    /// Replays ptxas's creation of sections, symbols and strings.
    fn simulate(&mut self) {
        let c = self.c;
        for s in [
            ".shstrtab",
            ".strtab",
            ".symtab",
            ".symtab_shndx",
            ".note.nv.tkinfo",
            ".note.nv.cuinfo",
            ".nv.info",
            ".nv.compat",
        ] {
            self.shstr.add(s);
            self.strtab.add(s);
        }
        self.syms.push(Sym {
            name: 0,
            info: 0,
            other: 0,
            sec: Sec::Undef,
            value: 0,
            size: 0,
            key: String::new(),
        });
        for n in [".note.nv.tkinfo", ".note.nv.cuinfo"] {
            let s = Sym {
                name: self.strtab_offset_of(n),
                ..sec_sym(&mut StrTab::new(), n)
            };
            self.syms.push(s);
        }
        self.create(".shstrtab", Group::Tables, (0, 0));
        self.create(".strtab", Group::Tables, (0, 1));
        self.create(".symtab", Group::Tables, (0, 2));
        self.create(".note.nv.tkinfo", Group::Notes, (0, 0));
        self.create(".note.nv.cuinfo", Group::Notes, (0, 1));
        self.create(".nv.info", Group::Info, (0, 0));
        self.create(".nv.compat", Group::Info, (0, 1));

        let mut early_syms: HashMap<String, ()> = HashMap::new();
        let order = self.order.clone();
        if order.is_empty() {
            self.module_head(false);
            self.module_vars();
        }
        for (i, &fi) in order.iter().enumerate() {
            let f = self.func(fi);
            let kernel = f.kind == FunctionKind::Kernel;
            let text = format!(".text.{}", f.name);
            let info = format!(".nv.info.{}", f.name);
            let shared = format!(".nv.shared.{}", f.name);
            if !kernel && f.linkage != Linkage::Global && !early_syms.contains_key(&f.name) {
                let s = self.func_sym(fi);
                self.syms.push(s);
                early_syms.insert(f.name.clone(), ());
            }
            self.shstr.add(&text);
            let t = sec_sym(&mut self.strtab, &text);
            self.syms.push(t);
            self.create(&text, Group::Text, (0, 0));
            if kernel {
                self.shstr.add(&info);
                self.strtab.add(&info);
                self.shstr.add(&shared);
                self.strtab.add(&shared);
            }
            self.create(&info, Group::Info, (1, 0));
            if let Some(sh) = f.shared {
                // Only a shared section that holds variables beyond the reserved 1 KiB window
                // gets a section symbol.
                if sh.size > u64::from(runtime_abi::smem::USER_BASE) {
                    let s = Sym {
                        name: self.strtab_offset_of(&shared),
                        ..sec_sym(&mut StrTab::new(), &shared)
                    };
                    self.syms.push(s);
                }
                self.create(&shared, Group::DataNobits, (0, 0));
            }
            if i == 0 {
                self.module_head(kernel);
                self.module_vars();
            }
            if !kernel {
                self.shstr.add(&info);
                self.strtab.add(&info);
            }
            // The first function's shared variables come before the internal symbol, later
            // functions' after it.
            if i == 0 {
                self.shared_var_syms(f, &shared);
                self.erased_sym(f);
            } else {
                self.erased_sym(f);
                self.shared_var_syms(f, &shared);
            }
            // Subroutines that are not global get their symbols now.
            for (k, s) in f.subroutines.iter().enumerate() {
                if s.linkage != Linkage::Global {
                    let sym = self.sub_sym(fi, k);
                    self.syms.push(sym);
                }
            }
            // Local functions of other sections referenced by relocations, in section order
            // (ptxas -g, `tests/kernels/device_calls.ptx`: `_Z4polyfi` before `_Z6clampiiii`,
            // which the kernel calls first).
            let mut referenced: Vec<usize> = f
                .relocs
                .iter()
                .filter_map(|r| c.functions.iter().position(|g| g.name == r.symbol))
                .filter(|&gi| c.functions[gi].linkage != Linkage::Global)
                .collect();
            referenced.sort_unstable();
            referenced.dedup();
            for gi in referenced {
                let name = &c.functions[gi].name;
                if !early_syms.contains_key(name) {
                    let s = self.func_sym(gi);
                    self.syms.push(s);
                    early_syms.insert(name.clone(), ());
                }
            }
            if !f.bank0_slots.is_empty() && !c.build.is_debug() {
                // ptxas creates `.nv.constant.entry_image_header_indices.<k>` and its relocation
                // section, then renames them in place to `.nv.constant0.<k>` and
                // `.rela.nv.constant0.<k>` (the rest of the longer name stays as NULs).
                let n = format!(".nv.constant0.{}", f.name);
                let extra = TEX_HEADER_PREFIX.len() - ".nv.constant0.".len();
                self.strtab
                    .add(&format!(".rela{TEX_HEADER_PREFIX}{}", f.name));
                let off = self.strtab.add_padded(&n, extra);
                self.shstr.add_padded(&n, extra);
                self.shstr.add_padded(&format!(".rela{n}"), extra);
                self.syms.push(Sym {
                    name: off,
                    ..sec_sym(&mut StrTab::new(), &n)
                });
                self.create(&n, Group::ConstBanks, (0, 0));
                // The first function's goes before `.rela.debug_frame`, every other one after.
                let rank = if i == 0 { 3 } else { 5 };
                self.create(&format!(".rela{n}"), Group::Rela, (rank, i as u32));
            }
            if !f.relocs.is_empty() || f.resolved != Resolved::None {
                let (a, b) = (format!(".rel{text}"), format!(".rela{text}"));
                // `.rela` is named first when every relocation is against code (calls, return
                // addresses); any relocation against data, or none left, names `.rel` first.
                let code_only = !f.relocs.is_empty()
                    && f.relocs
                        .iter()
                        .all(|r| !c.variables.iter().any(|v| v.name == r.symbol));
                let (first, second) = if code_only { (&b, &a) } else { (&a, &b) };
                self.shstr.add(first);
                self.shstr.add(second);
                self.strtab.add(first);
                self.strtab.add(second);
                if !f.relocs.is_empty() || f.resolved == Resolved::EmptySection {
                    self.create(&b, Group::Rela, (0, 0));
                }
            }
        }
        // Debug sections.
        let any_fde = !c.functions.is_empty();
        self.shstr.add(".debug_frame");
        let df = sec_sym(&mut self.strtab, ".debug_frame");
        self.create(".debug_frame", Group::Debug, (0, 0));
        let mut debug_syms = if any_fde { vec![df] } else { Vec::new() };
        for d in &c.debug_sections {
            self.shstr.add(&d.name);
            let s = sec_sym(&mut self.strtab, &d.name);
            debug_syms.push(s);
            self.create(&d.name, Group::Debug, (1, 0));
            let (a, b) = (format!(".rel{}", d.name), format!(".rela{}", d.name));
            match d.rel_names {
                RelNames::None => {}
                RelNames::RelAndRela => {
                    for n in [&a, &b] {
                        self.shstr.add(n);
                        self.strtab.add(n);
                    }
                }
                RelNames::RelaOnly => {
                    self.shstr.add(&b);
                    self.strtab.add(&b);
                }
            }
            if !d.data.relocs.is_empty() {
                self.create(&b, Group::Rela, (1, 0));
            }
        }
        if let Some(b4) = &c.bank4
            && !b4.relocs.is_empty()
        {
            self.shstr.add(".rel.nv.constant.pic");
            self.shstr.add_padded(".rela.nv.constant4", 3);
            self.strtab.add(".rel.nv.constant.pic");
            self.strtab.add(".rela.nv.constant.pic");
            self.create(".rela.nv.constant4", Group::Rela, (2, 0));
        }
        // `.const` initializers with addresses: `.rela.nv.constant.user`, renamed to
        // `.rela.nv.constant3` when relocations remain.
        let const_relocs = c
            .variables
            .iter()
            .any(|v| v.space == VarSpace::Const && !v.relocs.is_empty());
        if const_relocs || c.const_addresses_resolved {
            self.shstr.add(".rel.nv.constant.user");
            self.strtab.add(".rel.nv.constant.user");
            self.strtab.add(".rela.nv.constant.user");
            if const_relocs {
                self.shstr.add_padded(".rela.nv.constant3", 4);
                self.create(".rela.nv.constant3", Group::Rela, (2, 1));
            } else {
                self.shstr.add(".rela.nv.constant.user");
            }
        }
        // The `.rel` names of texture header slots: the first function's before those of
        // `.debug_frame`, the others after (optimized builds only).
        let tex_rel: Vec<String> = order
            .iter()
            .map(|&fi| self.func(fi))
            .filter(|f| !f.bank0_slots.is_empty() && !c.build.is_debug())
            .map(|f| format!(".rel{TEX_HEADER_PREFIX}{}", f.name))
            .collect();
        let first_tex = order
            .first()
            .is_some_and(|&fi| !self.func(fi).bank0_slots.is_empty());
        let (before, after) = tex_rel.split_at(usize::from(first_tex && !tex_rel.is_empty()));
        for n in before {
            self.shstr.add(n);
            self.strtab.add(n);
        }
        if any_fde {
            self.shstr.add(".rel.debug_frame");
            self.shstr.add(".rela.debug_frame");
            self.strtab.add(".rel.debug_frame");
            self.strtab.add(".rela.debug_frame");
            self.create(".rela.debug_frame", Group::Rela, (4, 0));
        }
        for n in after {
            self.shstr.add(n);
            self.strtab.add(n);
        }
        self.shstr.add(".nv.callgraph");
        let cg = sec_sym(&mut self.strtab, ".nv.callgraph");
        self.create(".nv.callgraph", Group::Info, (2, 0));
        self.shstr.add(".nv.prototype");
        self.strtab.add(".nv.prototype");
        self.syms.extend(debug_syms);
        self.syms.push(cg);
        // Debug builds create the texture-slot banks here, renamed the same way as in optimized
        // builds but without `.rel` names.
        for &fi in &order {
            let f = self.func(fi);
            if f.kind == FunctionKind::Kernel && c.build.is_debug() && !f.bank0_slots.is_empty() {
                // Debug builds create the texture-slot bank here, renamed the same way but
                // without `.rel` names.
                let n = format!(".nv.constant0.{}", f.name);
                let extra = TEX_HEADER_PREFIX.len() - ".nv.constant0.".len();
                self.strtab
                    .add(&format!(".rela{TEX_HEADER_PREFIX}{}", f.name));
                let off = self.strtab.add_padded(&n, extra);
                self.shstr.add_padded(&n, extra);
                self.shstr.add_padded(&format!(".rela{n}"), extra);
                self.syms.push(Sym {
                    name: off,
                    ..sec_sym(&mut StrTab::new(), &n)
                });
                self.create(&n, Group::ConstBanks, (0, 0));
                self.create(&format!(".rela{n}"), Group::Rela, (5, 0));
            }
        }
        // Global functions and their global subroutines; the external symbols follow the
        // first of them.
        let mut externs_done = false;
        for &fi in &order {
            let f = self.func(fi);
            if !early_syms.contains_key(&f.name) {
                let s = self.func_sym(fi);
                self.syms.push(s);
            }
            for (k, s) in f.subroutines.iter().enumerate() {
                if s.linkage == Linkage::Global {
                    let sym = self.sub_sym(fi, k);
                    self.syms.push(sym);
                }
            }
            if !externs_done {
                self.extern_syms();
                externs_done = true;
            }
        }
        // Global variables.
        for (vi, v) in c.variables.iter().enumerate() {
            if v.linkage == Linkage::Global {
                let name = self.strtab.add(&v.name);
                self.syms.push(Sym {
                    name,
                    info: STB_GLOBAL << 4 | STT_OBJECT,
                    other: 0,
                    sec: Sec::Named(var_section(v).to_string()),
                    value: var_offset(c, vi),
                    size: v.size,
                    key: v.name.clone(),
                });
            }
        }
        if c.build == Build::DeviceDebug {
            for e in &c.extern_shared {
                let name = self.strtab.add(&e.name);
                self.syms.push(Sym {
                    name,
                    info: e.linkage.bind() << 4 | STT_OBJECT,
                    other: 0,
                    sec: Sec::Named(DEBUG_SHARED_SECTION.into()),
                    value: e.value,
                    size: 0,
                    key: e.name.clone(),
                });
            }
        }
        if !externs_done {
            self.extern_syms();
        }
        for &fi in &order {
            let f = self.func(fi);
            if f.kind == FunctionKind::Kernel && f.bank0_slots.is_empty() {
                let n = format!(".nv.constant0.{}", f.name);
                self.shstr.add(&n);
                let s = sec_sym(&mut self.strtab, &n);
                self.syms.push(s);
                self.create(&n, Group::Constant0, (0, 0));
            }
        }
    }

    /// Symbols of undefined externals (`__assertfail`, texture references).
    fn extern_syms(&mut self) {
        for e in &self.c.externs {
            let ty = match e.kind {
                ExternKind::Function => STT_FUNC,
                ExternKind::Texture => STT_CUDA_TEXTURE,
                ExternKind::Surface => STT_CUDA_SURFACE,
                ExternKind::Sampler => STT_CUDA_SAMPLER,
            };
            let name = self.strtab.add(&e.name);
            self.syms.push(Sym {
                name,
                info: STB_GLOBAL << 4 | ty,
                other: 0,
                sec: Sec::Undef,
                value: 0,
                size: 0,
                key: e.name.clone(),
            });
        }
    }

    /// The nameless internal symbol, if `f` makes it.
    fn erased_sym(&mut self, f: &Function) {
        if let Some(n) = f.erased_symbol {
            self.strtab.add_padded("", n);
            self.syms.push(Sym {
                name: 0,
                info: 0,
                other: STV_INTERNAL,
                sec: Sec::Undef,
                value: 0,
                size: 0,
                key: String::new(),
            });
        }
    }

    /// Shared-variable symbols: only `-g` builds keep them.
    fn shared_var_syms(&mut self, f: &Function, shared: &str) {
        if self.c.build != Build::DeviceDebug {
            return;
        }
        for v in &f.shared_vars {
            let name = self.strtab.add(&v.name);
            self.syms.push(Sym {
                name,
                info: v.linkage.bind() << 4 | STT_OBJECT,
                other: 0,
                sec: Sec::Named(shared.to_string()),
                value: v.offset,
                size: v.size,
                key: v.name.clone(),
            });
        }
    }

    /// Offset of the last occurrence of `s` in `.strtab`.
    fn strtab_offset_of(&self, s: &str) -> u32 {
        let needle = [s.as_bytes(), b"\0"].concat();
        let b = &self.strtab.bytes;
        (0..b.len().saturating_sub(needle.len() - 1))
            .rev()
            .find(|&i| b[i..].starts_with(&needle) && (i == 0 || b[i - 1] == 0))
            .unwrap_or(0) as u32
    }

    /// The reserved shared-memory symbols and section, created after the first function's
    /// sections.
    fn module_head(&mut self, first_is_kernel: bool) {
        let debug = self.c.build.is_debug();
        let off = self.strtab.add(RESERVED_SMEM_SYMBOL);
        self.syms.push(Sym {
            name: off,
            info: STB_WEAK << 4 | STT_OBJECT,
            other: 0,
            sec: Sec::Undef,
            value: 0,
            size: 4,
            key: RESERVED_SMEM_SYMBOL.into(),
        });
        if !debug {
            self.shstr.add(RESERVED_SMEM_SECTION);
            self.strtab.add(RESERVED_SMEM_SECTION);
            let off = self.strtab.add(RESERVED_SMEM_ALIAS);
            self.syms.push(Sym {
                name: off,
                info: STB_WEAK << 4 | STT_NOTYPE,
                other: STO_NV_RESERVED_ALIAS,
                sec: Sec::Named(RESERVED_SMEM_SECTION.into()),
                value: 0,
                size: 0,
                key: RESERVED_SMEM_ALIAS.into(),
            });
            self.create(RESERVED_SMEM_SECTION, Group::DataNobits, (0, 0));
        }
        let _ = first_is_kernel;
        if self.c.build == Build::DeviceDebug && self.c.module_shared_vars {
            self.shstr.add(DEBUG_SHARED_SECTION);
            self.strtab.add(DEBUG_SHARED_SECTION);
            if !self.c.extern_shared.is_empty() {
                self.create(DEBUG_SHARED_SECTION, Group::DataNobits, (0, 0));
            }
        }
        if let Some(v) = self.c.reserved_smem_cap {
            let off = self.strtab.add(RESERVED_SMEM_CAP_SYMBOL);
            self.syms.push(Sym {
                name: off,
                info: STB_WEAK << 4 | STT_OBJECT,
                other: 0,
                sec: Sec::Undef,
                value: v,
                size: 4,
                key: RESERVED_SMEM_CAP_SYMBOL.into(),
            });
        }
    }

    /// Module variables and the compiler constant bank, created after the reserved window.
    fn module_vars(&mut self) {
        let c = self.c;
        // `.nv.constant4` is created with its first entry: right after that entry's variable,
        // or before the variables when it is an external function.
        let mut bank4_done = c.bank4.is_none();
        let first_bank4_var = c
            .bank4
            .as_ref()
            .and_then(|b| b.relocs.first())
            .and_then(|r| c.variables.iter().position(|v| v.name == r.symbol));
        if first_bank4_var.is_none() && !bank4_done {
            self.bank4_section();
            bank4_done = true;
        }
        let mut done: Vec<&str> = Vec::new();
        for (vi, v) in c.variables.iter().enumerate() {
            let sec = var_section(v);
            if !done.contains(&sec) {
                done.push(sec);
                self.shstr
                    .add_padded(sec, if sec == ".nv.constant3" { 4 } else { 0 });
                let s = sec_sym(&mut self.strtab, sec);
                if sec == ".nv.constant3" {
                    self.strtab.bytes.extend_from_slice(&[0; 4]);
                }
                self.syms.push(s);
                let group = if sec == ".nv.constant3" {
                    Group::ConstBanks
                } else if v.init.is_some() {
                    Group::DataProgbits
                } else {
                    Group::DataNobits
                };
                self.create(sec, group, (0, 0));
            }
            if v.linkage != Linkage::Global {
                let name = self.strtab.add(&v.name);
                let value = var_offset(c, vi);
                self.syms.push(Sym {
                    name,
                    info: v.linkage.bind() << 4 | STT_OBJECT,
                    other: 0,
                    sec: Sec::Named(sec.to_string()),
                    value,
                    size: v.size,
                    key: v.name.clone(),
                });
            }
            if Some(vi) == first_bank4_var && !bank4_done {
                self.bank4_section();
                bank4_done = true;
            }
        }
    }

    fn bank4_section(&mut self) {
        self.shstr.add_padded(".nv.constant4", 3);
        let s = sec_sym(&mut self.strtab, ".nv.constant4");
        self.strtab.bytes.extend_from_slice(&[0; 3]);
        self.syms.push(s);
        self.create(".nv.constant4", Group::ConstBanks, (0, 0));
    }

    fn func_sym(&mut self, fi: usize) -> Sym {
        let f = self.func(fi);
        let name = self.strtab.add(&f.name);
        Sym {
            name,
            info: f.linkage.bind() << 4 | STT_FUNC,
            other: if f.kind == FunctionKind::Kernel {
                STO_CUDA_ENTRY
            } else {
                0
            },
            sec: Sec::Named(format!(".text.{}", f.name)),
            value: 0,
            size: self.text_lens[fi],
            key: f.name.clone(),
        }
    }

    fn sub_sym(&mut self, fi: usize, k: usize) -> Sym {
        let f = self.func(fi);
        let s = &f.subroutines[k];
        let end = f
            .subroutines
            .get(k + 1)
            .map(|n| n.offset)
            .unwrap_or(self.text_lens[fi]);
        let name = self.strtab.add(&s.name);
        Sym {
            name,
            info: s.linkage.bind() << 4 | STT_FUNC,
            other: 0,
            sec: Sec::Named(format!(".text.{}", f.name)),
            value: s.offset,
            size: end - s.offset,
            key: s.name.clone(),
        }
    }

    /// Sorts the created sections into ptxas's groups, fills them and lays the file out.
    fn build(mut self) -> Result<Vec<u8>> {
        let c = self.c;
        let mut texts = std::mem::take(&mut self.texts);
        let mut planned = self.created.clone();
        // Writable data: PROGBITS before NOBITS, each in creation order (stable sort).
        let pos = |p: &PlannedSection| (p.group, p.rank);
        let mut idx: Vec<usize> = (0..planned.len()).collect();
        idx.sort_by_key(|&i| pos(&planned[i]));
        planned = idx.iter().map(|&i| planned[i].clone()).collect();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (i, p) in planned.iter().enumerate() {
            index.insert(p.name.clone(), i + 1);
        }
        let sec_index = |n: &str| -> Result<usize> {
            index
                .get(n)
                .copied()
                .ok_or_else(|| WriteError(format!("internal: no section {n}")))
        };
        // Symbols.
        let mut sym_index: HashMap<String, u32> = HashMap::new();
        let mut sec_sym_index: HashMap<String, u32> = HashMap::new();
        let mut symbols = Vec::new();
        for (k, s) in self.syms.iter().enumerate() {
            let shndx = match &s.sec {
                Sec::Undef => 0,
                Sec::Named(n) => sec_index(n)? as u16,
            };
            if s.info == STT_SECTION
                && let Sec::Named(n) = &s.sec
            {
                sec_sym_index.insert(n.clone(), k as u32);
            }
            if !s.key.is_empty() {
                sym_index.entry(s.key.clone()).or_insert(k as u32);
            }
            symbols.push(Symbol {
                name: s.name,
                info: s.info,
                other: s.other,
                shndx,
                value: s.value,
                size: s.size,
            });
        }
        let sym = |n: &str| -> Result<u32> {
            sym_index
                .get(n)
                .copied()
                .ok_or_else(|| WriteError(format!("relocation or record names unknown symbol {n}")))
        };
        let secsym = |n: &str| -> Result<u32> {
            sec_sym_index
                .get(n)
                .copied()
                .ok_or_else(|| WriteError(format!("internal: no section symbol for {n}")))
        };

        // Section contents.
        let mut out: Vec<OutSection> = vec![OutSection::default()];
        let symtab_i = sec_index(".symtab")? as u32;
        let func_by_name: HashMap<&str, usize> = c
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_str(), i))
            .collect();
        for p in &planned {
            let n = p.name.as_str();
            let mut h = SectionHeader {
                name: 0,
                sh_type: SHT_PROGBITS,
                addralign: 1,
                ..SectionHeader::default()
            };
            let mut data = Vec::new();
            match n {
                ".shstrtab" | ".strtab" => {
                    h.sh_type = SHT_STRTAB;
                }
                ".symtab" => {
                    h.sh_type = SHT_SYMTAB;
                    h.link = sec_index(".strtab")? as u32;
                    // One past the last local symbol.
                    h.info = symbols
                        .iter()
                        .rposition(|s| s.bind() == STB_LOCAL)
                        .map(|i| i + 1)
                        .unwrap_or(0) as u32;
                    h.addralign = 8;
                    h.entsize = SYM_SIZE;
                    for s in &symbols {
                        s.to_bytes(&mut data);
                    }
                }
                ".debug_frame" => {
                    data = self.debug_frame(&sym)?.0;
                }
                ".note.nv.tkinfo" => {
                    h.sh_type = SHT_NOTE;
                    h.flags = SHF_NV_TKINFO;
                    h.addralign = 4;
                    data = note::encode_tkinfo(&c.tool);
                }
                ".note.nv.cuinfo" => {
                    h.sh_type = SHT_NOTE;
                    h.flags = SHF_NV_CUINFO | SHF_INFO_LINK;
                    h.link = sec_index(".note.nv.tkinfo")? as u32;
                    h.info = sec_index(".nv.compat")? as u32;
                    h.addralign = 4;
                    data = note::encode_cuinfo(&c.cuda);
                }
                ".nv.info" => {
                    h.sh_type = SHT_CUDA_INFO;
                    h.link = symtab_i;
                    h.addralign = 4;
                    data = Record::encode_all(&self.module_info(&sym)?);
                }
                ".nv.compat" => {
                    h.sh_type = SHT_CUDA_COMPAT_INFO;
                    h.addralign = 4;
                    data = c.compat.encode();
                }
                ".nv.callgraph" => {
                    h.sh_type = SHT_CUDA_CALLGRAPH;
                    h.link = symtab_i;
                    h.addralign = 4;
                    h.entsize = 8;
                    let mut pairs = vec![(0u32, u32::MAX)];
                    for &fi in &self.order {
                        let f = &c.functions[fi];
                        for callee in &f.callees {
                            pairs.push((sym(&f.name)?, sym(callee)?));
                        }
                    }
                    pairs.extend([(0, u32::MAX - 1), (0, u32::MAX - 2), (0, u32::MAX - 3)]);
                    for (a, b) in pairs {
                        data.extend_from_slice(&a.to_le_bytes());
                        data.extend_from_slice(&b.to_le_bytes());
                    }
                }
                ".nv.constant4" => {
                    let b = c.bank4.as_ref().expect("bank4 planned");
                    h.flags = SHF_ALLOC;
                    h.addralign = b.align;
                    data = b.data.clone();
                }
                ".nv.constant3" | ".nv.global.init" | ".nv.global" => {
                    let (bytes, size, align) = var_section_data(c, n)?;
                    h.addralign = align;
                    h.flags = if n == ".nv.constant3" {
                        SHF_ALLOC
                    } else {
                        SHF_ALLOC | SHF_WRITE
                    };
                    match bytes {
                        None => {
                            h.sh_type = SHT_NOBITS;
                            h.size = size;
                        }
                        Some(b) => data = b,
                    }
                }
                RESERVED_SMEM_SECTION => {
                    h.sh_type = SHT_NOBITS;
                    h.flags = SHF_ALLOC | SHF_WRITE;
                }
                DEBUG_SHARED_SECTION => {
                    h.sh_type = SHT_NOBITS;
                    h.flags = SHF_ALLOC | SHF_WRITE;
                    h.size = u64::from(runtime_abi::smem::USER_BASE);
                    h.addralign = c.extern_shared.iter().map(|e| e.align).max().unwrap_or(1);
                }
                _ => {
                    if let Some(f) = n.strip_prefix(".nv.info.") {
                        let fi = func_by_name[f];
                        h.sh_type = SHT_CUDA_INFO;
                        h.flags = SHF_INFO_LINK;
                        h.link = symtab_i;
                        h.info = sec_index(&format!(".text.{f}"))? as u32;
                        h.addralign = 4;
                        data = Record::encode_all(&self.function_info(fi, &sym, &secsym)?);
                    } else if let Some(f) = n.strip_prefix(".text.") {
                        let fi = func_by_name[f];
                        h.flags = SHF_ALLOC | SHF_EXECINSTR;
                        h.link = symtab_i;
                        h.info = sym(f)?;
                        h.addralign = TEXT_ALIGN;
                        // Each function's text goes into one section: moved, not copied.
                        data = std::mem::take(&mut texts[fi]);
                    } else if let Some(f) = n.strip_prefix(".nv.shared.") {
                        let sh = c.functions[func_by_name[f]].shared.expect("planned");
                        h.sh_type = SHT_NOBITS;
                        h.flags = SHF_ALLOC | SHF_WRITE | SHF_INFO_LINK;
                        h.info = sec_index(&format!(".text.{f}"))? as u32;
                        h.addralign = sh.align;
                        h.size = sh.size;
                    } else if let Some(f) = n.strip_prefix(".nv.constant0.") {
                        let func = &c.functions[func_by_name[f]];
                        h.flags = SHF_ALLOC | SHF_INFO_LINK;
                        h.info = sec_index(&format!(".text.{f}"))? as u32;
                        h.addralign = 4;
                        data = vec![0; constant0_size(func)? as usize];
                    } else if let Some(target) = n.strip_prefix(".rela") {
                        h.sh_type = SHT_RELA;
                        h.flags = SHF_INFO_LINK;
                        h.link = symtab_i;
                        h.info = sec_index(target)? as u32;
                        h.addralign = 8;
                        h.entsize = RELA_SIZE;
                        for r in self.relocations_of(target, &sym)? {
                            r.to_bytes(&mut data);
                        }
                    } else if let Some(d) = c.debug_sections.iter().find(|d| d.name == n) {
                        h.addralign = d.data.align;
                        data = d.data.data.clone();
                    } else {
                        return bail(format!("internal: section {n} has no contents"));
                    }
                }
            }
            // ptxas leaves room after `.shstrtab`: 14 bytes, plus 18 and the name's length for
            // every function (measured on every corpus cubin).
            let pad_after = if n == ".shstrtab" {
                14 + c
                    .functions
                    .iter()
                    .map(|f| 18 + f.name.len() as u64)
                    .sum::<u64>()
            } else {
                0
            };
            out.push(OutSection {
                header: h,
                data,
                pad_after,
            });
        }
        // Names.
        let shstr = &self.shstr.bytes;
        for (i, p) in planned.iter().enumerate() {
            out[i + 1].header.name = find_str(shstr, &p.name)
                .ok_or_else(|| WriteError(format!("internal: {} not in .shstrtab", p.name)))?;
        }
        let shstrndx = sec_index(".shstrtab")?;
        out[shstrndx].data = self.shstr.bytes.clone();
        out[sec_index(".strtab")?].data = self.strtab.bytes.clone();

        let mut ident = [0u8; 16];
        ident[..4].copy_from_slice(b"\x7fELF");
        ident[4] = ELFCLASS64;
        ident[5] = ELFDATA2LSB;
        ident[6] = EV_CURRENT;
        ident[7] = ELFOSABI_CUDA;
        ident[8] = ELFABIVERSION_CUDA;
        let mut img = Image {
            header: Header {
                ident,
                e_type: if c.relocatable { ET_REL } else { ET_EXEC },
                e_machine: EM_CUDA,
                e_version: 1,
                e_entry: 0,
                e_phoff: 0,
                e_shoff: 0,
                // The top byte is the index of `.note.nv.cuinfo` ([`e_flags`]).
                e_flags: e_flags(c.sm, sec_index(".note.nv.cuinfo")? as u8),
                e_ehsize: EHDR_SIZE as u16,
                e_phentsize: PHDR_SIZE as u16,
                e_phnum: 0,
                e_shentsize: SHDR_SIZE as u16,
                e_shnum: 0,
                e_shstrndx: shstrndx as u16,
            },
            sections: out,
            phdrs: Vec::new(),
        };
        // Program headers: PHDR, its LOAD, then one LOAD per allocated group.
        let groups: Vec<(Group, u32)> = vec![
            (Group::ConstBanks, PF_R),
            (Group::Text, PF_R | PF_X),
            (Group::DataProgbits, PF_R | PF_W),
            (Group::Constant0, PF_R),
        ];
        let mut segs: Vec<(Vec<usize>, u32)> = Vec::new();
        if !c.relocatable {
            for (g, flags) in groups {
                let members: Vec<usize> = planned
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| {
                        p.group == g || (g == Group::DataProgbits && p.group == Group::DataNobits)
                    })
                    .map(|(i, _)| i + 1)
                    .collect();
                if !members.is_empty() {
                    segs.push((members, flags));
                }
            }
        }
        let nph = if segs.is_empty() { 0 } else { segs.len() + 2 };
        img.layout(nph).map_err(|e| WriteError(e.0))?;
        if nph > 0 {
            let phsize = PHDR_SIZE * nph as u64;
            let ph = |t| ProgramHeader {
                p_type: t,
                flags: PF_R,
                offset: img.header.e_phoff,
                vaddr: 0,
                paddr: 0,
                filesz: phsize,
                memsz: phsize,
                align: 8,
            };
            img.phdrs.push(ph(PT_PHDR));
            img.phdrs.push(ph(PT_LOAD));
            for (members, flags) in &segs {
                let start = img.sections[members[0]].header.offset;
                let mut file_end = start;
                for &m in members {
                    let h = &img.sections[m].header;
                    let end = if h.sh_type == SHT_NOBITS {
                        h.offset
                    } else {
                        h.offset + h.size
                    };
                    file_end = file_end.max(end);
                }
                let filesz = file_end - start;
                let mut memsz = filesz;
                for &m in members {
                    let h = &img.sections[m].header;
                    if h.sh_type == SHT_NOBITS {
                        memsz = memsz.next_multiple_of(h.addralign.max(1)) + h.size;
                    }
                }
                img.phdrs.push(ProgramHeader {
                    p_type: PT_LOAD,
                    flags: *flags,
                    offset: start,
                    vaddr: 0,
                    paddr: 0,
                    filesz,
                    memsz,
                    align: 8,
                });
            }
        }
        Ok(img.to_bytes())
    }

    /// `.nv.info`: per function (reverse processing order) REGCOUNT, the subroutines' and the
    /// function's FRAME_SIZE; then MIN_STACK_SIZE of every kernel in processing order.
    fn module_info(&self, sym: &dyn Fn(&str) -> Result<u32>) -> Result<Vec<Record>> {
        let c = self.c;
        let mut recs = Vec::new();
        for &fi in self.order.iter().rev() {
            let f = &c.functions[fi];
            let fs = sym(&f.name)?;
            recs.push(Record::RegCount {
                function: fs,
                registers: f.registers,
            });
            for s in f.subroutines.iter().rev() {
                recs.push(Record::FrameSize {
                    function: sym(&s.name)?,
                    bytes: s.frame_size,
                });
                if c.gen_errbar_at_exit {
                    recs.push(Record::GenErrbarAtExit);
                }
            }
            recs.push(Record::FrameSize {
                function: fs,
                bytes: f.frame_size,
            });
            if c.gen_errbar_at_exit {
                recs.push(Record::GenErrbarAtExit);
            }
        }
        for &fi in &self.order {
            let f = &c.functions[fi];
            if f.kind == FunctionKind::Kernel {
                recs.push(Record::MinStackSize {
                    function: sym(&f.name)?,
                    bytes: f.min_stack_size,
                });
            }
        }
        if c.functions.is_empty() {
            let (major, minor) = runtime_abi::eiattr::MERCURY_ISA_SM90;
            recs.push(Record::MercuryIsaVersion { major, minor });
        }
        Ok(recs)
    }

    /// `.nv.info.<function>` in ptxas's record order.
    fn function_info(
        &self,
        fi: usize,
        sym: &dyn Fn(&str) -> Result<u32>,
        secsym: &dyn Fn(&str) -> Result<u32>,
    ) -> Result<Vec<Record>> {
        let f = &self.c.functions[fi];
        let a = &f.attrs;
        let mut recs: Vec<Record> = Vec::new();
        let layout =
            param::layout(&f.params).map_err(|e| WriteError(format!("{}: {e}", f.name)))?;
        let v2 = layout.uses_kparam_info_v2();
        for s in layout.slots.iter().rev() {
            let k = KParamInfo {
                index: 0,
                ordinal: s.ordinal,
                offset: s.offset as u16,
                size: s.size,
                log_align: s.pointee.log_align,
                space: s.pointee.space,
                cbank: runtime_abi::param::KPARAM_CBANK,
                not_cbank: false,
            };
            recs.push(if v2 {
                Record::KParamInfoV2(k)
            } else {
                Record::KParamInfo(k)
            });
        }
        if let Some(v) = a.cuda_api_version {
            recs.push(Record::CudaApiVersion(v));
        }
        if let Some(v) = a.max_cluster_rank {
            recs.push(Record::MaxClusterRank(v));
        }
        if a.explicit_cluster {
            recs.push(Record::ExplicitCluster);
        }
        if let Some(v) = a.cta_per_cluster {
            recs.push(Record::CtaPerCluster(v));
        }
        if a.reserved_smem_used {
            recs.push(Record::ReservedSmemUsed);
        }
        if let Some(v) = a.sparse_mma_mask {
            recs.push(Record::SparseMmaMask(v));
        }
        if let Some(v) = a.maxreg_count {
            recs.push(Record::MaxRegCount(v));
        }
        if !a.externs.is_empty() {
            recs.push(Record::Externs(
                a.externs.iter().map(|e| sym(e)).collect::<Result<_>>()?,
            ));
        }
        if let Some(v) = a.num_barriers {
            recs.push(Record::NumBarriers(v));
        }
        if !a.annotations.is_empty() {
            recs.push(Record::Annotations(a.annotations.clone()));
        }
        if let Some((major, minor)) = a.mercury_isa {
            recs.push(Record::MercuryIsaVersion { major, minor });
        }
        let list = |v: &Vec<u32>, mk: fn(Vec<u32>) -> Record, recs: &mut Vec<Record>| {
            if !v.is_empty() {
                recs.push(mk(v.clone()));
            }
        };
        list(
            &a.warp_wide_offsets,
            Record::IntWarpWideInstrOffsets,
            &mut recs,
        );
        list(
            &a.coop_group_mask_regids,
            Record::CoopGroupMaskRegids,
            &mut recs,
        );
        list(
            &a.coop_group_offsets,
            Record::CoopGroupInstrOffsets,
            &mut recs,
        );
        list(&a.instr_reg_map, Record::InstrRegMap, &mut recs);
        list(&a.syscall_offsets, Record::SyscallOffsets, &mut recs);
        if a.reg_reconfig {
            recs.push(Record::RegReconfig);
        }
        if !a.mbarrier_instrs.is_empty() {
            recs.push(Record::MbarrierInstrOffsets(a.mbarrier_instrs.clone()));
        }
        if let Some(v) = a.num_mbarriers {
            recs.push(Record::NumMbarriers(v));
        }
        list(&a.exit_offsets, Record::ExitInstrOffsets, &mut recs);
        if let Some(v) = a.max_threads {
            recs.push(Record::MaxThreads(v));
        }
        if let Some(v) = a.reqntid {
            recs.push(Record::ReqNtid(v));
        }
        if let Some(v) = a.crs_stack_size {
            recs.push(Record::CrsStackSize(v));
        }
        if let Some((offset, size)) = a.shared_scratch {
            recs.push(Record::SharedScratch { offset, size });
        }
        if !f.params.is_empty() {
            recs.push(Record::CbankParamSize(layout.size as u16));
            recs.push(Record::ParamCbank {
                section_symbol: secsym(&format!(".nv.constant0.{}", f.name))?,
                offset: runtime_abi::cbank0::PARAM_BASE as u16,
                size: layout.size as u16,
            });
        }
        if let Some(v) = a.sw_war {
            recs.push(Record::SwWar(v));
        }
        if let Some(v) = a.bindless_texture_bank {
            recs.push(Record::BindlessTextureBank(v));
        }
        if let Some(v) = a.bindless_surface_bank {
            recs.push(Record::BindlessSurfaceBank(v));
        }
        recs.extend(a.other.iter().cloned());
        // Stable sort into ptxas's order.
        recs.sort_by_key(|r| function_order_rank(r.attr()));
        Ok(recs)
    }

    /// The `.debug_frame` bytes and its relocations (newest first).
    fn debug_frame(&self, sym: &dyn Fn(&str) -> Result<u32>) -> Result<(Vec<u8>, Vec<Rela>)> {
        let c = self.c;
        let mut data = Vec::new();
        let mut relocs: Vec<Rela> = Vec::new();
        for &fi in &self.order {
            let f = &c.functions[fi];
            let fs = sym(&f.name)?;
            let size = self.text_lens[fi];
            let mut cie_relocs = Vec::new();
            let mut fde_relocs = Vec::new();
            let mut entries: Vec<(&Unwind, u64, u64, bool)> = Vec::new();
            let main_end = f.subroutines.first().map(|s| s.offset).unwrap_or(size);
            entries.push((&f.unwind, 0, main_end, true));
            for (k, s) in f.subroutines.iter().enumerate() {
                let end = f.subroutines.get(k + 1).map(|n| n.offset).unwrap_or(size);
                entries.push((&s.unwind, s.offset, end - s.offset, false));
            }
            let mut main_cie = Vec::new();
            for (u, start, range, is_main) in entries {
                let cie_at = data.len() as u64;
                let e = frame::encode_cie(&u.cie);
                for r in &e.relocs {
                    let rel = Rela {
                        offset: cie_at + *r as u64,
                        sym: fs,
                        ty: runtime_abi::reloc::R_CUDA_64,
                        addend: 0,
                    };
                    if is_main {
                        main_cie.push(rel);
                    } else {
                        cie_relocs.push(rel);
                    }
                }
                data.extend_from_slice(&e.bytes);
                let fde_at = data.len() as u64;
                let e = frame::encode_fde(cie_at, start, range, u.cie.code_align, &u.ops);
                fde_relocs.push(Rela {
                    offset: fde_at + e.relocs[0] as u64,
                    sym: fs,
                    ty: runtime_abi::reloc::R_CUDA_64,
                    addend: start as i64,
                });
                data.extend_from_slice(&e.bytes);
            }
            // Creation order: the subroutines' CIEs, the function's own, then the FDEs.
            relocs.extend(cie_relocs);
            relocs.extend(main_cie);
            relocs.extend(fde_relocs);
        }
        relocs.reverse();
        Ok((data, relocs))
    }

    /// The relocations of the section `target`, newest first.
    fn relocations_of(&self, target: &str, sym: &dyn Fn(&str) -> Result<u32>) -> Result<Vec<Rela>> {
        let c = self.c;
        let conv = |rs: &[Reloc]| -> Result<Vec<Rela>> {
            let mut v: Vec<Rela> = rs
                .iter()
                .map(|r| {
                    Ok(Rela {
                        offset: r.offset,
                        sym: sym(&r.symbol)?,
                        ty: r.ty,
                        addend: r.addend,
                    })
                })
                .collect::<Result<_>>()?;
            v.reverse();
            Ok(v)
        };
        if target == ".debug_frame" {
            return Ok(self.debug_frame(sym)?.1);
        }
        if target == ".nv.constant3" {
            let mut rs = Vec::new();
            for (vi, v) in c.variables.iter().enumerate() {
                if v.space == VarSpace::Const {
                    let base = var_offset(c, vi);
                    rs.extend(v.relocs.iter().map(|r| Reloc {
                        offset: base + r.offset,
                        ..r.clone()
                    }));
                }
            }
            return conv(&rs);
        }
        if target == ".nv.constant4" {
            return conv(
                &c.bank4
                    .as_ref()
                    .map(|b| b.relocs.clone())
                    .unwrap_or_default(),
            );
        }
        if let Some(f) = target.strip_prefix(".text.") {
            let func = c
                .functions
                .iter()
                .find(|g| g.name == f)
                .ok_or_else(|| WriteError(format!("internal: {target}")))?;
            return conv(&func.relocs);
        }
        if let Some(f) = target.strip_prefix(".nv.constant0.") {
            let func = c
                .functions
                .iter()
                .find(|g| g.name == f)
                .ok_or_else(|| WriteError(format!("internal: {target}")))?;
            let layout = param::layout(&func.params)
                .map_err(|e| WriteError(format!("{}: {e}", func.name)))?;
            let at = u64::from((runtime_abi::cbank0::PARAM_BASE + layout.size).next_multiple_of(4));
            let rs: Vec<Reloc> = func
                .bank0_slots
                .iter()
                .enumerate()
                .filter_map(|(k, s)| {
                    s.as_ref().map(|s| Reloc {
                        offset: at + 4 * k as u64,
                        ty: s.reloc,
                        symbol: s.symbol.clone(),
                        addend: 0,
                    })
                })
                .collect();
            return conv(&rs);
        }
        if let Some(d) = c.debug_sections.iter().find(|d| d.name == target) {
            return conv(&d.data.relocs);
        }
        bail(format!("internal: relocations for {target}"))
    }
}

/// The name ptxas first gives a kernel's constant bank 0 when it holds texture header slots.
const TEX_HEADER_PREFIX: &str = ".nv.constant.entry_image_header_indices.";

fn find_str(table: &[u8], s: &str) -> Option<u32> {
    let needle = [s.as_bytes(), b"\0"].concat();
    (0..table.len())
        .find(|&i| table[i..].starts_with(&needle) && (i == 0 || table[i - 1] == 0))
        .map(|i| i as u32)
}

fn var_section(v: &Variable) -> &'static str {
    match (v.space, v.init.is_some()) {
        (VarSpace::Const, _) => ".nv.constant3",
        (VarSpace::Global, true) => ".nv.global.init",
        (VarSpace::Global, false) => ".nv.global",
    }
}

/// The offset of variable `vi` in its section: the section's variables sorted by decreasing
/// alignment (model order among equals), each at its alignment.
fn var_offset(c: &Cubin, vi: usize) -> u64 {
    let sec = var_section(&c.variables[vi]);
    let mut members: Vec<usize> = (0..c.variables.len())
        .filter(|&i| var_section(&c.variables[i]) == sec)
        .collect();
    members.sort_by_key(|&i| std::cmp::Reverse(c.variables[i].align));
    let mut end = 0u64;
    for i in members {
        let v = &c.variables[i];
        let off = end.next_multiple_of(v.align.max(1));
        if i == vi {
            return off;
        }
        end = off + v.size;
    }
    0
}

/// A variable section's contents (`None` for NOBITS), size and alignment.
fn var_section_data(c: &Cubin, sec: &str) -> Result<(Option<Vec<u8>>, u64, u64)> {
    let mut size = 0u64;
    let mut align = 1;
    for (vi, v) in c.variables.iter().enumerate() {
        if var_section(v) == sec {
            align = align.max(v.align);
            size = size.max(var_offset(c, vi).saturating_add(v.size));
        }
    }
    if size > u64::from(u32::MAX) {
        return bail(format!("{sec}: {size:#x} bytes of variables"));
    }
    if sec == ".nv.global" {
        return Ok((None, size, align));
    }
    let mut data = vec![0u8; size as usize];
    for (vi, v) in c.variables.iter().enumerate() {
        if var_section(v) != sec {
            continue;
        }
        let off = var_offset(c, vi) as usize;
        if let Some(b) = &v.init {
            let n = b.len().min(v.size as usize);
            data[off..off + n].copy_from_slice(&b[..n]);
        }
    }
    Ok((Some(data), size, align))
}

/// The size of `.nv.constant0.<kernel>`: 0x210 + the parameters, then 4 bytes per texture slot.
pub fn constant0_size(f: &Function) -> Result<u64> {
    let layout = param::layout(&f.params).map_err(|e| WriteError(format!("{}: {e}", f.name)))?;
    if f.bank0_slots.is_empty() {
        Ok(u64::from(layout.constant0_size()))
    } else {
        Ok(
            u64::from((runtime_abi::cbank0::PARAM_BASE + layout.size).next_multiple_of(4))
                + 4 * f.bank0_slots.len() as u64,
        )
    }
}
