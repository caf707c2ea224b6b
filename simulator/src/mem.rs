//! Memories: global memory (buffers at fake 64-bit addresses), constant banks, shared memory
//! and per-thread local memory, and the generic address space that maps onto them.
//!
//! # The address map
//!
//! | space | addresses |
//! |---|---|
//! | global | buffers from [`GLOBAL_BASE`] up, each 4 KiB aligned with a 4 KiB gap |
//! | shared (generic) | `SR_SWINHI << 32` = [`SHARED_WINDOW`], plus the 32-bit shared address |
//! | local (generic) | [`LOCAL_WINDOW`] (`c[0x0][0x20]`) plus the 24-bit local offset |
//!
//! A 32-bit shared address holds the CTA rank in bits \[31:24\] (0 in a one-CTA launch) and the
//! offset in bits \[23:0\]; user data starts at 0x400 after the reserved 1 KiB. Local memory is
//! private to each thread; the stack pointer R1 starts at [`STACK_TOP`] (`c[0x0][0x28]`) and
//! grows down. Every access outside the defined memory is an error, never a silent zero.

use crate::SimError;
use std::collections::BTreeMap;

/// Where global buffers start.
pub const GLOBAL_BASE: u64 = 0x0000_7f40_0000_0000;
/// The generic address of shared offset 0 (`SR_SWINHI` = its high word).
pub const SHARED_WINDOW: u64 = 0x0000_7ffe_0000_0000;
/// The generic address of local offset 0 (`c[0x0][0x20]`/`c[0x0][0x24]`).
pub const LOCAL_WINDOW: u64 = 0x0000_7ffd_0000_0000;
/// Size of the local window (local offsets are below this).
pub const LOCAL_SIZE: u64 = 1 << 24;
/// The initial stack pointer (`c[0x0][0x28]`).
pub const STACK_TOP: u32 = 0x0001_0000;

/// A global-memory buffer.
#[derive(Clone, Debug)]
pub struct Region {
    pub name: String,
    pub base: u64,
    pub data: Vec<u8>,
}

/// Global memory: a set of buffers at fake 64-bit addresses.
#[derive(Clone, Debug, Default)]
pub struct Global {
    regions: Vec<Region>,
    next: u64,
}

impl Global {
    pub fn new() -> Global {
        Global {
            regions: Vec::new(),
            next: GLOBAL_BASE,
        }
    }

    /// Allocates a buffer holding `data`; returns its address.
    pub fn alloc(&mut self, name: &str, data: Vec<u8>) -> u64 {
        if self.next == 0 {
            self.next = GLOBAL_BASE;
        }
        let base = self.next;
        let len = data.len().max(1) as u64;
        self.next = base + len.div_ceil(0x1000) * 0x1000 + 0x1000;
        self.regions.push(Region {
            name: name.to_string(),
            base,
            data,
        });
        base
    }

    /// The buffer at `base`.
    pub fn region(&self, base: u64) -> Option<&Region> {
        self.regions.iter().find(|r| r.base == base)
    }

    /// Every buffer.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    fn find(&mut self, addr: u64, len: usize) -> Result<&mut [u8], SimError> {
        for r in &mut self.regions {
            if addr >= r.base && addr - r.base < r.data.len() as u64 {
                let off = (addr - r.base) as usize;
                if off + len > r.data.len() {
                    return Err(SimError::Memory(format!(
                        "global access of {len} bytes at 0x{addr:x} runs past the end of `{}` (0x{:x}, {} bytes)",
                        r.name,
                        r.base,
                        r.data.len()
                    )));
                }
                return Ok(&mut r.data[off..off + len]);
            }
        }
        Err(SimError::Memory(format!(
            "global access of {len} bytes at 0x{addr:x}: no buffer there"
        )))
    }

    pub fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), SimError> {
        let s = self.find(addr, out.len())?;
        out.copy_from_slice(s);
        Ok(())
    }

    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), SimError> {
        let s = self.find(addr, data.len())?;
        s.copy_from_slice(data);
        Ok(())
    }
}

/// A constant bank: bytes with a record of which ones are defined.
#[derive(Clone, Debug, Default)]
pub struct Bank {
    data: Vec<u8>,
    defined: Vec<bool>,
}

impl Bank {
    pub fn set(&mut self, off: usize, bytes: &[u8]) {
        let end = off + bytes.len();
        if self.data.len() < end {
            self.data.resize(end, 0);
            self.defined.resize(end, false);
        }
        self.data[off..end].copy_from_slice(bytes);
        self.defined[off..end].iter_mut().for_each(|d| *d = true);
    }
    pub fn set_u32(&mut self, off: usize, v: u32) {
        self.set(off, &v.to_le_bytes());
    }
    pub fn set_u64(&mut self, off: usize, v: u64) {
        self.set(off, &v.to_le_bytes());
    }
    /// Reads `out.len()` bytes; an undefined byte is an error.
    pub fn read(&self, bank: u32, off: i64, out: &mut [u8]) -> Result<(), SimError> {
        let ok = off >= 0
            && (off as usize)
                .checked_add(out.len())
                .is_some_and(|end| end <= self.data.len())
            && self.defined[off as usize..off as usize + out.len()]
                .iter()
                .all(|d| *d);
        if !ok {
            return Err(SimError::Memory(format!(
                "read of {} bytes of c[0x{bank:x}][0x{off:x}]: not defined by the launch or the cubin",
                out.len()
            )));
        }
        out.copy_from_slice(&self.data[off as usize..off as usize + out.len()]);
        Ok(())
    }
}

/// Sparse byte storage in 4 KiB pages (per-thread local memory).
#[derive(Clone, Debug, Default)]
pub struct Sparse {
    pages: BTreeMap<u64, Box<[u8; 4096]>>,
}

impl Sparse {
    pub fn read(&self, addr: u64, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            let a = addr + i as u64;
            *b = self
                .pages
                .get(&(a >> 12))
                .map_or(0, |p| p[(a & 0xfff) as usize]);
        }
    }
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        for (i, b) in data.iter().enumerate() {
            let a = addr + i as u64;
            self.pages
                .entry(a >> 12)
                .or_insert_with(|| Box::new([0; 4096]))[(a & 0xfff) as usize] = *b;
        }
    }
}

/// The memory spaces an access can go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    Local,
}

/// Splits a generic address into its space and the address within it.
pub fn resolve_generic(addr: u64) -> (Space, u64) {
    if addr >> 32 == SHARED_WINDOW >> 32 {
        (Space::Shared, addr & 0xffff_ffff)
    } else if (LOCAL_WINDOW..LOCAL_WINDOW + (1 << 32)).contains(&addr) {
        (Space::Local, addr - LOCAL_WINDOW)
    } else {
        (Space::Global, addr)
    }
}

/// Shared memory of the CTA.
#[derive(Clone, Debug)]
pub struct Shared {
    pub data: Vec<u8>,
}

impl Shared {
    /// The offset of a 32-bit shared address (rank in \[31:24\] must be 0: the own CTA).
    fn offset(&self, addr: u64, len: usize) -> Result<usize, SimError> {
        let a = addr & 0xffff_ffff;
        if addr >> 32 != 0 || a >> 24 != 0 {
            return Err(SimError::Memory(format!(
                "shared access at 0x{addr:x}: CTA rank {} is not this CTA (one-CTA launch)",
                a >> 24
            )));
        }
        let off = (a & 0xff_ffff) as usize;
        if off + len > self.data.len() {
            return Err(SimError::Memory(format!(
                "shared access of {len} bytes at 0x{off:x}: outside the {} bytes of shared memory",
                self.data.len()
            )));
        }
        Ok(off)
    }
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), SimError> {
        let o = self.offset(addr, out.len())?;
        out.copy_from_slice(&self.data[o..o + out.len()]);
        Ok(())
    }
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), SimError> {
        let o = self.offset(addr, data.len())?;
        self.data[o..o + data.len()].copy_from_slice(data);
        Ok(())
    }
}

/// Checks a local offset.
pub fn local_check(off: u64, len: usize) -> Result<(), SimError> {
    if off + len as u64 > LOCAL_SIZE {
        return Err(SimError::Memory(format!(
            "local access of {len} bytes at offset 0x{off:x}: outside the local window"
        )));
    }
    Ok(())
}
