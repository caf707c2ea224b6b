//! Loading a kernel from a cubin (an ELF64 file) with the `object` crate: the code of
//! `.text.<kernel>`, the constant banks (`.nv.constant<N>[.<kernel>]`), the global variables
//! (`.nv.global.init`, `.nv.global`) with the relocations that put their addresses into constant
//! banks, and the static shared-memory size (`.nv.shared.<kernel>`, the reserved 1 KiB included).

use crate::SimError;
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};
use std::collections::BTreeMap;

/// `R_CUDA_32`: a 32-bit absolute address.
const R_CUDA_32: u32 = 1;
/// `R_CUDA_64`: a 64-bit absolute address.
const R_CUDA_64: u32 = 2;

/// The largest global-variable section loaded (64 MiB).
const MAX_GLOBAL_SECTION: u64 = 1 << 26;

/// A global variable section that a launch allocates in global memory.
#[derive(Clone, Debug)]
pub struct GlobalData {
    pub section: String,
    pub data: Vec<u8>,
}

/// A relocation to apply to a constant bank once the globals have addresses.
#[derive(Clone, Debug)]
pub struct BankReloc {
    pub bank: u32,
    pub offset: usize,
    /// 4 or 8 bytes.
    pub size: usize,
    /// Index into [`Kernel::globals`].
    pub global: usize,
    /// Symbol value plus addend.
    pub value: i64,
}

/// A kernel ready to launch.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    /// The code, one instruction (two little-endian words) each, from address 0.
    pub code: Vec<[u64; 2]>,
    /// Initial contents of the constant banks (bank 0: the kernel's `.nv.constant0`, which
    /// the launch completes with the driver's values and the parameters).
    pub banks: BTreeMap<u32, Vec<u8>>,
    pub globals: Vec<GlobalData>,
    pub relocs: Vec<BankReloc>,
    /// Static shared memory in bytes, the reserved first 1 KiB included.
    pub shared_static: u32,
}

impl Kernel {
    /// A kernel from raw code words (ptxc's `EncodedFunction::words`), with no globals and
    /// `shared_static` bytes of static shared memory (at least the reserved 0x400).
    pub fn from_words(name: &str, words: &[[u64; 2]], shared_static: u32) -> Kernel {
        Kernel {
            name: name.to_string(),
            code: words.to_vec(),
            banks: BTreeMap::new(),
            globals: Vec::new(),
            relocs: Vec::new(),
            shared_static: shared_static.max(0x400),
        }
    }

    /// Loads kernel `name` from a cubin.
    pub fn from_cubin(bytes: &[u8], name: &str) -> Result<Kernel, SimError> {
        let bad = |m: String| SimError::Load(m);
        let file = object::File::parse(bytes).map_err(|e| bad(format!("not an ELF file: {e}")))?;
        let text_name = format!(".text.{name}");
        let text = file
            .section_by_name(&text_name)
            .ok_or_else(|| bad(format!("no section {text_name}: no kernel `{name}`")))?;
        let tb = text.data().map_err(|e| bad(format!("{text_name}: {e}")))?;
        if tb.len() % 16 != 0 {
            return Err(bad(format!(
                "{text_name}: {} bytes, not a whole number of instructions",
                tb.len()
            )));
        }
        let code: Vec<[u64; 2]> = tb
            .chunks_exact(16)
            .map(|c| {
                let lo = u64::from_le_bytes(c[0..8].try_into().unwrap_or_default());
                let hi = u64::from_le_bytes(c[8..16].try_into().unwrap_or_default());
                [lo, hi]
            })
            .collect();
        if let Some((r_off, r)) = text.relocations().next() {
            let t = match r.flags() {
                RelocationFlags::Elf { r_type } => r_type.0,
                _ => 0,
            };
            return Err(bad(format!(
                "{text_name}: relocation of type {t} at 0x{r_off:x} (calls to other functions or \
                 unresolved symbols are not supported)"
            )));
        }

        // Global variable sections.
        let mut globals = Vec::new();
        let mut global_of_section = BTreeMap::new();
        for s in file.sections() {
            let Ok(sname) = s.name() else { continue };
            if sname == ".nv.global.init" || sname == ".nv.global" {
                if s.size() > MAX_GLOBAL_SECTION {
                    return Err(bad(format!(
                        "{sname}: {} bytes of global variables is more than this simulator holds",
                        s.size()
                    )));
                }
                let data = if sname == ".nv.global" {
                    vec![0u8; s.size() as usize]
                } else {
                    s.data().map_err(|e| bad(format!("{sname}: {e}")))?.to_vec()
                };
                global_of_section.insert(s.index().0, globals.len());
                globals.push(GlobalData {
                    section: sname.to_string(),
                    data,
                });
            }
        }

        // Constant banks and their relocations.
        let mut banks = BTreeMap::new();
        let mut relocs = Vec::new();
        let mut shared_static = 0x400u32;
        for s in file.sections() {
            let Ok(sname) = s.name() else { continue };
            if let Some(rest) = sname.strip_prefix(".nv.constant") {
                let (num, owner) = match rest.split_once('.') {
                    Some((n, o)) => (n, Some(o)),
                    None => (rest, None),
                };
                let Ok(bank) = num.parse::<u32>() else {
                    continue;
                };
                if owner.is_some_and(|o| o != name) {
                    continue;
                }
                let data = s.data().map_err(|e| bad(format!("{sname}: {e}")))?.to_vec();
                banks.insert(bank, data);
                for (off, r) in s.relocations() {
                    let r_type = match r.flags() {
                        RelocationFlags::Elf { r_type } => r_type.0,
                        _ => 0,
                    };
                    let size = match r_type {
                        R_CUDA_32 => 4,
                        R_CUDA_64 => 8,
                        t => {
                            return Err(bad(format!(
                                "{sname}: relocation of type {t} at 0x{off:x} is not supported \
                                 (textures, surfaces?)"
                            )));
                        }
                    };
                    let RelocationTarget::Symbol(si) = r.target() else {
                        return Err(bad(format!(
                            "{sname}: relocation at 0x{off:x} without symbol"
                        )));
                    };
                    let sym = file
                        .symbol_by_index(si)
                        .map_err(|e| bad(format!("{sname}: {e}")))?;
                    let Some(global) = sym
                        .section_index()
                        .and_then(|i| global_of_section.get(&i.0).copied())
                    else {
                        return Err(bad(format!(
                            "{sname}: relocation at 0x{off:x} to `{}`, which is not a global variable",
                            sym.name().unwrap_or("?")
                        )));
                    };
                    if off.saturating_add(size as u64) > s.size() {
                        return Err(bad(format!(
                            "{sname}: relocation at 0x{off:x} is outside the section"
                        )));
                    }
                    relocs.push(BankReloc {
                        bank,
                        offset: off as usize,
                        size,
                        global,
                        value: (sym.address() as i64).wrapping_add(r.addend()),
                    });
                }
            } else if sname == format!(".nv.shared.{name}") {
                shared_static = shared_static.max(s.size().min(u64::from(u32::MAX)) as u32);
            }
        }
        Ok(Kernel {
            name: name.to_string(),
            code,
            banks,
            globals,
            relocs,
            shared_static,
        })
    }

    /// The kernels (`.text.<name>` sections) of a cubin.
    pub fn names(bytes: &[u8]) -> Result<Vec<String>, SimError> {
        let file = object::File::parse(bytes)
            .map_err(|e| SimError::Load(format!("not an ELF file: {e}")))?;
        Ok(file
            .sections()
            .filter_map(|s| {
                s.name()
                    .ok()
                    .and_then(|n| n.strip_prefix(".text."))
                    .map(str::to_string)
            })
            .collect())
    }
}
