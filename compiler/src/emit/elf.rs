//! A small ELF64 little-endian layer: parse a file into headers, sections and symbols with every
//! bound checked, and lay out and serialize an image the way ptxas does (sections in header
//! order at their alignment, then the section headers, then the program headers).

use runtime_abi::elf::*;
use std::fmt;

/// A malformed ELF file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfError(pub String);

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ElfError {}

pub type Result<T> = std::result::Result<T, ElfError>;

fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(ElfError(msg.into()))
}

/// Little-endian reads with bounds checks.
pub(crate) struct Reader<'a> {
    pub data: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn bytes(&self, at: u64, n: u64, what: &str) -> Result<&'a [u8]> {
        let end = at.checked_add(n);
        match end {
            Some(end) if end <= self.data.len() as u64 => Ok(&self.data[at as usize..end as usize]),
            _ => err(format!(
                "{what}: bytes {at:#x}..+{n:#x} lie outside the file ({:#x} bytes)",
                self.data.len()
            )),
        }
    }
    pub fn u8(&self, at: u64, what: &str) -> Result<u8> {
        Ok(self.bytes(at, 1, what)?[0])
    }
    pub fn u16(&self, at: u64, what: &str) -> Result<u16> {
        let b = self.bytes(at, 2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    pub fn u32(&self, at: u64, what: &str) -> Result<u32> {
        let b = self.bytes(at, 4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn u64(&self, at: u64, what: &str) -> Result<u64> {
        let b = self.bytes(at, 8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

/// The ELF header fields ptxas sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub ident: [u8; 16],
    pub e_type: u16,
    pub e_machine: u16,
    pub e_version: u32,
    pub e_entry: u64,
    pub e_phoff: u64,
    pub e_shoff: u64,
    pub e_flags: u32,
    pub e_ehsize: u16,
    pub e_phentsize: u16,
    pub e_phnum: u16,
    pub e_shentsize: u16,
    pub e_shnum: u16,
    pub e_shstrndx: u16,
}

/// A section header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SectionHeader {
    pub name: u32,
    pub sh_type: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub addralign: u64,
    pub entsize: u64,
}

/// A program header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProgramHeader {
    pub p_type: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub paddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub align: u64,
}

/// A symbol-table entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Symbol {
    pub name: u32,
    pub info: u8,
    pub other: u8,
    pub shndx: u16,
    pub value: u64,
    pub size: u64,
}

impl Symbol {
    pub fn bind(&self) -> u8 {
        self.info >> 4
    }
    pub fn kind(&self) -> u8 {
        self.info & 0xf
    }
    pub fn to_bytes(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.name.to_le_bytes());
        out.push(self.info);
        out.push(self.other);
        out.extend_from_slice(&self.shndx.to_le_bytes());
        out.extend_from_slice(&self.value.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
    }
}

/// A relocation with addend (`SHT_RELA`), or without (`SHT_REL`, addend 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rela {
    pub offset: u64,
    pub sym: u32,
    pub ty: u32,
    pub addend: i64,
}

impl Rela {
    pub fn to_bytes(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&(u64::from(self.sym) << 32 | u64::from(self.ty)).to_le_bytes());
        out.extend_from_slice(&self.addend.to_le_bytes());
    }
}

/// A parsed ELF file.
#[derive(Clone, Debug)]
pub struct Elf<'a> {
    pub data: &'a [u8],
    pub header: Header,
    pub sections: Vec<SectionHeader>,
    pub phdrs: Vec<ProgramHeader>,
    /// Section names, resolved through `.shstrtab`.
    pub names: Vec<String>,
}

/// Reads a NUL-terminated string at `off` of a string table.
pub fn str_at(table: &[u8], off: u32, what: &str) -> Result<String> {
    let off = off as usize;
    if off >= table.len() && !(off == 0 && table.is_empty()) {
        return err(format!(
            "{what}: string offset {off:#x} lies outside the string table ({:#x} bytes)",
            table.len()
        ));
    }
    if table.is_empty() {
        return Ok(String::new());
    }
    let end = table[off..]
        .iter()
        .position(|&b| b == 0)
        .map(|p| off + p)
        .ok_or_else(|| ElfError(format!("{what}: string at {off:#x} is not NUL-terminated")))?;
    Ok(String::from_utf8_lossy(&table[off..end]).into_owned())
}

impl<'a> Elf<'a> {
    pub fn parse(data: &'a [u8]) -> Result<Elf<'a>> {
        let r = Reader { data };
        let ident_b = r.bytes(0, 16, "ELF identification")?;
        if &ident_b[..4] != b"\x7fELF" {
            return err("not an ELF file (bad magic)");
        }
        if ident_b[4] != ELFCLASS64 || ident_b[5] != ELFDATA2LSB {
            return err("not a little-endian ELF64 file");
        }
        let mut ident = [0u8; 16];
        ident.copy_from_slice(ident_b);
        let header = Header {
            ident,
            e_type: r.u16(16, "e_type")?,
            e_machine: r.u16(18, "e_machine")?,
            e_version: r.u32(20, "e_version")?,
            e_entry: r.u64(24, "e_entry")?,
            e_phoff: r.u64(32, "e_phoff")?,
            e_shoff: r.u64(40, "e_shoff")?,
            e_flags: r.u32(48, "e_flags")?,
            e_ehsize: r.u16(52, "e_ehsize")?,
            e_phentsize: r.u16(54, "e_phentsize")?,
            e_phnum: r.u16(56, "e_phnum")?,
            e_shentsize: r.u16(58, "e_shentsize")?,
            e_shnum: r.u16(60, "e_shnum")?,
            e_shstrndx: r.u16(62, "e_shstrndx")?,
        };
        if header.e_shnum > 0 && u64::from(header.e_shentsize) != SHDR_SIZE {
            return err(format!("e_shentsize {} is not 64", header.e_shentsize));
        }
        if header.e_phnum > 0 && u64::from(header.e_phentsize) != PHDR_SIZE {
            return err(format!("e_phentsize {} is not 56", header.e_phentsize));
        }
        let mut sections = Vec::with_capacity(header.e_shnum as usize);
        for i in 0..u64::from(header.e_shnum) {
            let at = header.e_shoff + i * SHDR_SIZE;
            let what = format!("section header {i}");
            r.bytes(at, SHDR_SIZE, &what)?;
            let s = SectionHeader {
                name: r.u32(at, &what)?,
                sh_type: r.u32(at + 4, &what)?,
                flags: r.u64(at + 8, &what)?,
                addr: r.u64(at + 16, &what)?,
                offset: r.u64(at + 24, &what)?,
                size: r.u64(at + 32, &what)?,
                link: r.u32(at + 40, &what)?,
                info: r.u32(at + 44, &what)?,
                addralign: r.u64(at + 48, &what)?,
                entsize: r.u64(at + 56, &what)?,
            };
            if s.sh_type != SHT_NOBITS && s.sh_type != SHT_NULL {
                r.bytes(s.offset, s.size, &format!("contents of section {i}"))?;
            }
            sections.push(s);
        }
        let mut phdrs = Vec::with_capacity(header.e_phnum as usize);
        for i in 0..u64::from(header.e_phnum) {
            let at = header.e_phoff + i * PHDR_SIZE;
            let what = format!("program header {i}");
            r.bytes(at, PHDR_SIZE, &what)?;
            phdrs.push(ProgramHeader {
                p_type: r.u32(at, &what)?,
                flags: r.u32(at + 4, &what)?,
                offset: r.u64(at + 8, &what)?,
                vaddr: r.u64(at + 16, &what)?,
                paddr: r.u64(at + 24, &what)?,
                filesz: r.u64(at + 32, &what)?,
                memsz: r.u64(at + 40, &what)?,
                align: r.u64(at + 48, &what)?,
            });
        }
        let mut elf = Elf {
            data,
            header,
            sections,
            phdrs,
            names: Vec::new(),
        };
        let shstrndx = usize::from(elf.header.e_shstrndx);
        let names = if elf.sections.is_empty() {
            Vec::new()
        } else {
            if shstrndx >= elf.sections.len() {
                return err(format!("e_shstrndx {shstrndx} names no section"));
            }
            let table = elf.section_data(shstrndx)?;
            elf.sections
                .iter()
                .enumerate()
                .map(|(i, s)| str_at(table, s.name, &format!("name of section {i}")))
                .collect::<Result<Vec<_>>>()?
        };
        elf.names = names;
        Ok(elf)
    }

    /// The bytes of section `i` (empty for NOBITS).
    pub fn section_data(&self, i: usize) -> Result<&'a [u8]> {
        let s = self
            .sections
            .get(i)
            .ok_or_else(|| ElfError(format!("no section {i}")))?;
        if s.sh_type == SHT_NOBITS || s.sh_type == SHT_NULL {
            return Ok(&[]);
        }
        Reader { data: self.data }.bytes(s.offset, s.size, &format!("section {i}"))
    }

    /// The symbols of a `SHT_SYMTAB` section.
    pub fn symbols(&self, i: usize) -> Result<Vec<Symbol>> {
        let d = self.section_data(i)?;
        if !(d.len() as u64).is_multiple_of(SYM_SIZE) {
            return err(format!(
                "symbol table size {:#x} is not a multiple of 24",
                d.len()
            ));
        }
        let r = Reader { data: d };
        (0..d.len() as u64 / SYM_SIZE)
            .map(|k| {
                let at = k * SYM_SIZE;
                Ok(Symbol {
                    name: r.u32(at, "symbol")?,
                    info: r.u8(at + 4, "symbol")?,
                    other: r.u8(at + 5, "symbol")?,
                    shndx: r.u16(at + 6, "symbol")?,
                    value: r.u64(at + 8, "symbol")?,
                    size: r.u64(at + 16, "symbol")?,
                })
            })
            .collect()
    }

    /// The entries of a `SHT_RELA` or `SHT_REL` section.
    pub fn relocations(&self, i: usize) -> Result<Vec<Rela>> {
        let d = self.section_data(i)?;
        let rela = self.sections[i].sh_type == SHT_RELA;
        let size = if rela { RELA_SIZE } else { REL_SIZE };
        if !(d.len() as u64).is_multiple_of(size) {
            return err(format!(
                "relocation section {} size {:#x} is not a multiple of {size}",
                self.names[i],
                d.len()
            ));
        }
        let r = Reader { data: d };
        (0..d.len() as u64 / size)
            .map(|k| {
                let at = k * size;
                let info = r.u64(at + 8, "relocation")?;
                Ok(Rela {
                    offset: r.u64(at, "relocation")?,
                    sym: (info >> 32) as u32,
                    ty: info as u32,
                    addend: if rela {
                        r.u64(at + 16, "relocation")? as i64
                    } else {
                        0
                    },
                })
            })
            .collect()
    }

    /// The index of the section named `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

/// One section of an image being written.
#[derive(Clone, Debug, Default)]
pub struct OutSection {
    pub header: SectionHeader,
    /// Contents (empty for NOBITS; `header.size` is then the memory size).
    pub data: Vec<u8>,
    /// Zero bytes left after the section before the next one starts.
    pub pad_after: u64,
}

/// An image being written: sections in header order (index 0 is the null section).
#[derive(Clone, Debug)]
pub struct Image {
    pub header: Header,
    pub sections: Vec<OutSection>,
    pub phdrs: Vec<ProgramHeader>,
}

fn align_up(x: u64, a: u64) -> u64 {
    if a <= 1 { x } else { x.div_ceil(a) * a }
}

impl Image {
    /// Assigns file offsets: sections in header order from the end of the ELF header, each at
    /// its alignment (NOBITS sections take an aligned offset but no space), then the section
    /// headers at an 8-byte boundary, then `nphdrs` program headers. Returns the file size, or
    /// an error for an alignment that is not a power of two up to 64 KiB or a file above 4 GiB.
    pub fn layout(&mut self, nphdrs: usize) -> Result<u64> {
        let mut cur = EHDR_SIZE;
        for s in self.sections.iter_mut().skip(1) {
            let h = &mut s.header;
            if h.addralign > 1 && (!h.addralign.is_power_of_two() || h.addralign > 1 << 16) {
                return err(format!(
                    "section alignment {:#x} is not supported",
                    h.addralign
                ));
            }
            if h.sh_type != SHT_NOBITS {
                h.size = s.data.len() as u64;
            }
            cur = align_up(cur, h.addralign);
            h.offset = cur;
            if h.sh_type != SHT_NOBITS {
                cur += h.size;
            }
            cur += s.pad_after;
        }
        cur = align_up(cur, 8);
        self.header.e_shoff = cur;
        self.header.e_shnum = self.sections.len() as u16;
        cur += SHDR_SIZE * self.sections.len() as u64;
        self.header.e_phoff = if nphdrs > 0 { cur } else { 0 };
        self.header.e_phnum = nphdrs as u16;
        let size = cur + PHDR_SIZE * nphdrs as u64;
        if size > u64::from(u32::MAX) {
            return err(format!("a cubin of {size:#x} bytes is too large"));
        }
        Ok(size)
    }

    /// The file bytes (call [`Image::layout`] and fill `phdrs` first).
    pub fn to_bytes(&self) -> Vec<u8> {
        let h = &self.header;
        // The file's size, reserved at once: the code is most of it, and growing the vector
        // would copy it each time.
        let size = (h.e_shoff + SHDR_SIZE * self.sections.len() as u64)
            .max(h.e_phoff + PHDR_SIZE * self.phdrs.len() as u64);
        let mut out = Vec::with_capacity(size as usize);
        out.extend_from_slice(&h.ident);
        out.extend_from_slice(&h.e_type.to_le_bytes());
        out.extend_from_slice(&h.e_machine.to_le_bytes());
        out.extend_from_slice(&h.e_version.to_le_bytes());
        out.extend_from_slice(&h.e_entry.to_le_bytes());
        out.extend_from_slice(&h.e_phoff.to_le_bytes());
        out.extend_from_slice(&h.e_shoff.to_le_bytes());
        out.extend_from_slice(&h.e_flags.to_le_bytes());
        out.extend_from_slice(&h.e_ehsize.to_le_bytes());
        out.extend_from_slice(&h.e_phentsize.to_le_bytes());
        out.extend_from_slice(&h.e_phnum.to_le_bytes());
        out.extend_from_slice(&h.e_shentsize.to_le_bytes());
        out.extend_from_slice(&h.e_shnum.to_le_bytes());
        out.extend_from_slice(&h.e_shstrndx.to_le_bytes());
        for s in self.sections.iter().skip(1) {
            if s.header.sh_type == SHT_NOBITS {
                continue;
            }
            out.resize(s.header.offset as usize, 0);
            out.extend_from_slice(&s.data);
        }
        out.resize(h.e_shoff as usize, 0);
        for s in &self.sections {
            let x = &s.header;
            out.extend_from_slice(&x.name.to_le_bytes());
            out.extend_from_slice(&x.sh_type.to_le_bytes());
            out.extend_from_slice(&x.flags.to_le_bytes());
            out.extend_from_slice(&x.addr.to_le_bytes());
            out.extend_from_slice(&x.offset.to_le_bytes());
            out.extend_from_slice(&x.size.to_le_bytes());
            out.extend_from_slice(&x.link.to_le_bytes());
            out.extend_from_slice(&x.info.to_le_bytes());
            out.extend_from_slice(&x.addralign.to_le_bytes());
            out.extend_from_slice(&x.entsize.to_le_bytes());
        }
        if !self.phdrs.is_empty() {
            out.resize(h.e_phoff as usize, 0);
        }
        for p in &self.phdrs {
            out.extend_from_slice(&p.p_type.to_le_bytes());
            out.extend_from_slice(&p.flags.to_le_bytes());
            out.extend_from_slice(&p.offset.to_le_bytes());
            out.extend_from_slice(&p.vaddr.to_le_bytes());
            out.extend_from_slice(&p.paddr.to_le_bytes());
            out.extend_from_slice(&p.filesz.to_le_bytes());
            out.extend_from_slice(&p.memsz.to_le_bytes());
            out.extend_from_slice(&p.align.to_le_bytes());
        }
        out
    }
}
