//! The format of `.nv_debug_info_reg_sass` and `.nv_debug_info_reg_type`, the two sections in
//! which ptxas 13.1 tells a debugger where each PTX register lives in a debug build: a reader
//! and a writer, byte-exact on ptxas's sections. ptxc does not generate their content yet (it
//! does not keep the PTX register a value came from through allocation); see `docs/cubin.md`
//! ("Register locations").
//!
//! Layout, decoded from `tests/sass-probes/ptx/debug_regs.ptx` and
//! `tests/kernels/debug_line_info.ptx` (`ptxas -arch sm_90a -g`, `readelf -x`; `cuobjdump -elf`
//! decodes both sections and agrees, `tests/tests/debug_sections.rs`), all integers
//! little-endian, no padding:
//!
//! * both sections are one block per function, in `.text` section order (the kernel, then
//!   the `.func`s it calls: `tests/kernels/device_calls.ptx`): the NUL-terminated function
//!   name, then a `u32` record count (0 for a function without registers: ZLUDA
//!   `mov_address.ptx`);
//! * a `.nv_debug_info_reg_sass` record: `u32` part (which 32-bit word of a `.b64` register,
//!   which element of a vector register; 0 otherwise), the NUL-terminated PTX register name
//!   (`%r1`; ZLUDA's `result`), the `u32` register in ptxas's DWARF numbering (the one of
//!   the debug CIE, `model::DWARF_R1`: file << 24 | number; `cuobjdump -elf` prints it as
//!   `(reg: %r1) 0x5000000, 0x80, 0x130`): file 2 predicate `P` (`debug_line_info.ptx` `%p1`
//!   in P0 = 0x2000000), 4 a 16-bit half with number 2 × R + half (`debug_regs.ptx` `%hs1` =
//!   0x400001e where ptxas's code writes R15), 5 a 32-bit `R`; then the `u32` start and end
//!   addresses of the range in which the register is there (the
//!   end is exclusive: `%p1` [0x1d0, 0x1e0), defined at 0x1d0, overwritten by `%p2` at 0x1e0;
//!   ptxas also writes empty [0, 0) ranges);
//! * a `.nv_debug_info_reg_type` record is one byte, the PTX type of the register of the
//!   `.nv_debug_info_reg_sass` record with the same index ([`RegType`]).
//!
//! Records are sorted by register file, then register number, then start address.

/// One record: where one part of a PTX register lives over one address range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegLocation {
    /// The 32-bit word of a wide register, the element of a vector one.
    pub part: u32,
    /// The PTX register's name, as declared (`%r1`).
    pub name: String,
    /// The register number in its file (for [`RegFile::Half`], 2 × R + half; 24 bits).
    pub reg: u32,
    pub file: RegFile,
    /// The address range `[start, end)` in the function's code.
    pub start: u32,
    pub end: u32,
    /// The type byte of `.nv_debug_info_reg_type` ([`RegType`]).
    pub ty: u8,
}

/// The register file byte of a record (values seen in every `-g` build of the project kernels
/// and the ZLUDA corpus: only these three).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegFile {
    /// A predicate register, `P<n>` (`debug_line_info.ptx`, `%p1` in P0).
    Pred,
    /// A 16-bit half of `R<n/2>` (`debug_regs.ptx`, `%h1` = 8: R4, `%hs1` = 30: R15).
    Half,
    /// A 32-bit register `R<n>`.
    Reg,
}

impl RegFile {
    pub fn code(self) -> u8 {
        match self {
            RegFile::Pred => 2,
            RegFile::Half => 4,
            RegFile::Reg => 5,
        }
    }

    /// ptxas's DWARF register number of register `reg` of this file.
    pub fn dwarf(self, reg: u32) -> u32 {
        (self.code() as u32) << 24 | reg
    }

    pub fn from_code(c: u8) -> Option<RegFile> {
        Some(match c {
            2 => RegFile::Pred,
            4 => RegFile::Half,
            5 => RegFile::Reg,
            _ => return None,
        })
    }
}

/// The type byte of `.nv_debug_info_reg_type`: a PTX scalar type in the low 6 bits
/// (`debug_regs.ptx`, kernel `typed`: `.b16` 1, `.b32` 2, `.b64` 3, `.u16` 5, `.u32` 6, `.u64` 7,
/// `.s16` 9, `.s32` 10, `.s64` 11, `.f16` 12, `.f32` 14, `.f64` 15, `.pred` 16; ZLUDA `tid.ptx`:
/// `.u8` 4; `cvt_f16x2_f32.ptx`: `.f16x2` 13), plus 0x40 for a `.v2` register and 0x80 for a
/// `.v4` one (ZLUDA `vector.ptx` `.v2.u32` 0x46, `vector4.ptx` `.v4.u32` 0x86,
/// `default_reg_b32_reg_v2_b16.ptx` `.v2.b16` 0x41).
pub struct RegType;

impl RegType {
    pub const B16: u8 = 1;
    pub const B32: u8 = 2;
    pub const B64: u8 = 3;
    pub const U8: u8 = 4;
    pub const U16: u8 = 5;
    pub const U32: u8 = 6;
    pub const U64: u8 = 7;
    pub const S16: u8 = 9;
    pub const S32: u8 = 10;
    pub const S64: u8 = 11;
    pub const F16: u8 = 12;
    pub const F16X2: u8 = 13;
    pub const F32: u8 = 14;
    pub const F64: u8 = 15;
    pub const PRED: u8 = 16;
    pub const V2: u8 = 0x40;
    pub const V4: u8 = 0x80;
}

/// The records of one function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionRegs {
    pub function: String,
    pub locations: Vec<RegLocation>,
}

/// The two sections' bytes for `functions` (`.nv_debug_info_reg_sass`,
/// `.nv_debug_info_reg_type`).
pub fn write(functions: &[FunctionRegs]) -> (Vec<u8>, Vec<u8>) {
    let mut sass = Vec::new();
    let mut types = Vec::new();
    for f in functions {
        for out in [&mut sass, &mut types] {
            out.extend_from_slice(f.function.as_bytes());
            out.push(0);
            out.extend_from_slice(&(f.locations.len() as u32).to_le_bytes());
        }
        for l in &f.locations {
            sass.extend_from_slice(&l.part.to_le_bytes());
            sass.extend_from_slice(l.name.as_bytes());
            sass.push(0);
            sass.extend_from_slice(&l.file.dwarf(l.reg).to_le_bytes());
            sass.extend_from_slice(&l.start.to_le_bytes());
            sass.extend_from_slice(&l.end.to_le_bytes());
            types.push(l.ty);
        }
    }
    (sass, types)
}

struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| format!("{}: truncated at offset {:#x}", self.what, self.at))?;
        let b = &self.data[self.at..end];
        self.at = end;
        Ok(b)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.bytes(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().unwrap()))
    }

    fn cstr(&mut self) -> Result<String, String> {
        let rest = &self.data[self.at.min(self.data.len())..];
        let n = rest.iter().position(|&b| b == 0).ok_or_else(|| {
            format!(
                "{}: unterminated string at offset {:#x}",
                self.what, self.at
            )
        })?;
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.at += n + 1;
        Ok(s)
    }
}

/// Reads the two sections back (the inverse of [`write`]); an error names what is malformed.
pub fn read(sass: &[u8], types: &[u8]) -> Result<Vec<FunctionRegs>, String> {
    let mut s = Cursor {
        data: sass,
        at: 0,
        what: ".nv_debug_info_reg_sass",
    };
    let mut t = Cursor {
        data: types,
        at: 0,
        what: ".nv_debug_info_reg_type",
    };
    let mut out = Vec::new();
    while !s.done() {
        let function = s.cstr()?;
        let count = s.u32()?;
        let (tf, tcount) = (t.cstr()?, t.u32()?);
        if tf != function || tcount != count {
            return Err(format!(
                "the sections disagree: {function} with {count} records, {tf} with {tcount} types"
            ));
        }
        let mut locations = Vec::new();
        for _ in 0..count {
            let part = s.u32()?;
            let name = s.cstr()?;
            let dwarf = s.u32()?;
            let file = RegFile::from_code((dwarf >> 24) as u8).ok_or_else(|| {
                format!("{function}: {name}: unknown register file in {dwarf:#x}")
            })?;
            let reg = dwarf & 0xff_ffff;
            let start = s.u32()?;
            let end = s.u32()?;
            locations.push(RegLocation {
                part,
                name,
                reg,
                file,
                start,
                end,
                ty: t.u8()?,
            });
        }
        out.push(FunctionRegs {
            function,
            locations,
        });
    }
    if !t.done() {
        return Err(format!(
            ".nv_debug_info_reg_type: {} bytes after the last function",
            types.len() - t.at
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read() {
        let f = FunctionRegs {
            function: "k".into(),
            locations: vec![RegLocation {
                part: 1,
                name: "%rd1".into(),
                reg: 3,
                file: RegFile::Reg,
                start: 0x60,
                end: 0xc0,
                ty: RegType::B64,
            }],
        };
        let (s, t) = write(std::slice::from_ref(&f));
        assert_eq!(t, b"k\0\x01\0\0\0\x03");
        assert_eq!(read(&s, &t).unwrap(), vec![f]);
        assert!(read(&s[..s.len() - 1], &t).is_err());
        assert!(read(&s, &t[..t.len() - 1]).is_err());
    }
}
