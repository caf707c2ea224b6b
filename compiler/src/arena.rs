//! The `ptxc` executable's memory allocator (`#[global_allocator]` in `src/main.rs`; the library
//! and the tests keep Rust's default).
//!
//! A compile is one short process that makes many small allocations: compiling
//! `zluda/vector.ptx` (45 lines) calls `malloc` 1 928 times and `free` 1 744 times, and glibc
//! spent about 110 and 100 instructions on each — 0.39M of the process's 1.93M (callgrind,
//! 2026-12-01), because its per-thread cache holds only 7 blocks of a size and the rest go
//! through its bins. [`Arena`] serves the small blocks itself:
//!
//! * a block of at most [`MAX_SMALL`] bytes (alignment at most 16) belongs to one of 256 size
//!   classes of 16 bytes; a freed block is pushed on its class's list (the `dealloc` call says
//!   the size, so blocks need no header) and the next allocation of that class pops it;
//! * a class with an empty list takes a new block from the end of one large reservation
//!   (`mmap` of 1 GiB with `MAP_NORESERVE`: the kernel gives it pages as they are first
//!   touched), which is never given back, as glibc's heap under `mallopt(M_TRIM_THRESHOLD)`;
//! * larger or more aligned blocks, and everything once the reservation is used up, go to
//!   glibc (`System`); `dealloc` and `realloc` tell the two apart by the address.
//!
//! Only one thread uses the lists at a time: a thread takes them with an atomic flag, and a
//! thread that finds them taken (ptxc compiles on one thread, so this does not happen in
//! practice) allocates from `System` instead and leaves a block it frees unused.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The size classes' step: every block the arena gives is a multiple of it, and aligned to it.
const GRAIN: usize = 16;
/// The largest block the arena gives; larger ones come from `System`.
pub const MAX_SMALL: usize = 4096;
/// The number of size classes.
const CLASSES: usize = MAX_SMALL / GRAIN;
/// The address space reserved for the arena's blocks.
const RESERVE: usize = 1 << 30;

/// A size-class allocator over one reservation, falling back to `System` (see the module).
pub struct Arena {
    /// Held while a thread uses `lists`.
    busy: AtomicBool,
    /// The reservation's first address (0 until the first small allocation reserves it).
    start: AtomicUsize,
    /// The reservation's end (0 before it exists; `start` too when reserving failed).
    end: AtomicUsize,
    lists: UnsafeCell<Lists>,
}

// SAFETY: `lists` is only touched by the thread that holds `busy`.
unsafe impl Sync for Arena {}

/// The free lists and the unused rest of the reservation.
struct Lists {
    /// The first free block of each class; each free block's first word points to the next.
    free: [*mut u8; CLASSES],
    /// The first address not yet given out.
    next: usize,
    /// Whether reserving was tried (it is tried once).
    reserved: bool,
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

impl Arena {
    /// An arena that has reserved nothing yet.
    pub const fn new() -> Self {
        Arena {
            busy: AtomicBool::new(false),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            lists: UnsafeCell::new(Lists {
                free: [std::ptr::null_mut(); CLASSES],
                next: 0,
                reserved: false,
            }),
        }
    }

    /// The size class of `layout` (class `k` holds blocks of `(k + 1) * GRAIN` bytes), if the
    /// arena serves it.
    #[inline]
    fn class(layout: Layout) -> Option<usize> {
        (layout.align() <= GRAIN && layout.size() <= MAX_SMALL)
            .then(|| layout.size().max(1).div_ceil(GRAIN) - 1)
    }

    /// Whether `ptr` is a block of the arena's reservation.
    #[inline]
    fn owns(&self, ptr: *mut u8) -> bool {
        let p = ptr as usize;
        p >= self.start.load(Ordering::Relaxed) && p < self.end.load(Ordering::Relaxed)
    }

    /// A block of class `k`, or null when the lists are taken or the reservation is used up.
    #[inline]
    fn take(&self, k: usize) -> *mut u8 {
        if self.busy.swap(true, Ordering::Acquire) {
            return std::ptr::null_mut();
        }
        // SAFETY: this thread holds `busy`.
        let lists = unsafe { &mut *self.lists.get() };
        let mut block = lists.free[k];
        if !block.is_null() {
            // SAFETY: a free block's first word holds the next free block of its class.
            lists.free[k] = unsafe { block.cast::<*mut u8>().read() };
        } else {
            if !lists.reserved {
                self.reserve(lists);
            }
            let size = (k + 1) * GRAIN;
            if self.end.load(Ordering::Relaxed) - lists.next >= size {
                block = lists.next as *mut u8;
                lists.next += size;
            }
        }
        self.busy.store(false, Ordering::Release);
        block
    }

    /// Reserves the address space (once; on failure the arena gives nothing).
    #[cold]
    fn reserve(&self, lists: &mut Lists) {
        lists.reserved = true;
        // SAFETY: an anonymous private mapping at an address the kernel chooses.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                RESERVE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base != libc::MAP_FAILED {
            let base = base as usize;
            lists.next = base;
            self.start.store(base, Ordering::Relaxed);
            self.end.store(base + RESERVE, Ordering::Relaxed);
        }
    }

    /// Puts a block of class `k` back on its list (or leaves it unused when the lists are
    /// taken).
    #[inline]
    fn give_back(&self, block: *mut u8, k: usize) {
        if self.busy.swap(true, Ordering::Acquire) {
            return;
        }
        // SAFETY: this thread holds `busy`; the block is the caller's and at least 16 bytes.
        unsafe {
            let lists = &mut *self.lists.get();
            block.cast::<*mut u8>().write(lists.free[k]);
            lists.free[k] = block;
        }
        self.busy.store(false, Ordering::Release);
    }
}

// SAFETY: every block is either the arena's (a distinct range of the reservation, of the
// layout's class size, 16-aligned) or `System`'s, and each is freed by whoever gave it.
unsafe impl GlobalAlloc for Arena {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(k) = Self::class(layout) {
            let block = self.take(k);
            if !block.is_null() {
                return block;
            }
        }
        // SAFETY: the caller's contract (a non-zero size).
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if let Some(k) = Self::class(layout) {
            let block = self.take(k);
            if !block.is_null() {
                // SAFETY: the block has at least `layout.size()` bytes.
                unsafe { block.write_bytes(0, layout.size()) };
                return block;
            }
        }
        // SAFETY: as for `alloc` (large zeroed blocks keep calloc's fresh pages).
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.owns(ptr) {
            // An arena block always has a class: only those are given from the reservation.
            if let Some(k) = Self::class(layout) {
                self.give_back(ptr, k);
            }
        } else {
            // SAFETY: `System` gave `ptr` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !self.owns(ptr) {
            // SAFETY: `System` gave `ptr` with this layout.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: the caller's contract: `new_size` rounded to `layout.align()` does not
        // overflow.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if Self::class(new_layout).is_some() && Self::class(new_layout) == Self::class(layout) {
            return ptr;
        }
        // SAFETY: as for `alloc`; the old block is valid for the smaller of the two sizes.
        unsafe {
            let block = self.alloc(new_layout);
            if !block.is_null() {
                std::ptr::copy_nonoverlapping(ptr, block, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            block
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_reuse_and_fallback() {
        let arena = Arena::new();
        let small = Layout::from_size_align(24, 8).unwrap();
        unsafe {
            let a = arena.alloc(small);
            let b = arena.alloc(small);
            assert!(arena.owns(a) && arena.owns(b) && a != b);
            assert!((a as usize).is_multiple_of(GRAIN));
            assert_eq!(
                b as usize - a as usize,
                32,
                "class 1: 32-byte blocks, one after another"
            );
            a.write_bytes(0xAB, 24);
            arena.dealloc(a, small);
            // The freed block is the next of its class.
            assert_eq!(arena.alloc(small), a);
            // Zeroed blocks are zeroed even when reused.
            arena.dealloc(a, small);
            let z = arena.alloc_zeroed(small);
            assert_eq!(z, a);
            assert!(std::slice::from_raw_parts(z, 24).iter().all(|&x| x == 0));
            // Growing within the class keeps the block; beyond it moves the contents.
            z.write_bytes(7, 24);
            assert_eq!(arena.realloc(z, small, 30), z);
            let grown = arena.realloc(z, small, 100);
            assert!(arena.owns(grown) && grown != z);
            assert!(
                std::slice::from_raw_parts(grown, 24)
                    .iter()
                    .all(|&x| x == 7)
            );
            // Past MAX_SMALL the block moves to System, contents kept, and back.
            let big = arena.realloc(grown, Layout::from_size_align(100, 8).unwrap(), 10_000);
            assert!(!arena.owns(big));
            assert!(std::slice::from_raw_parts(big, 24).iter().all(|&x| x == 7));
            let big_layout = Layout::from_size_align(10_000, 8).unwrap();
            let back = arena.realloc(big, big_layout, 40);
            assert!(std::slice::from_raw_parts(back, 24).iter().all(|&x| x == 7));
            arena.dealloc(back, Layout::from_size_align(40, 8).unwrap());
            // Large or over-aligned layouts come from System.
            let over = Layout::from_size_align(64, 64).unwrap();
            let o = arena.alloc(over);
            assert!(!arena.owns(o) && (o as usize).is_multiple_of(64));
            arena.dealloc(o, over);
            arena.dealloc(b, small);
        }
    }

    #[test]
    fn busy_lists_fall_back() {
        let arena = Arena::new();
        let small = Layout::from_size_align(8, 8).unwrap();
        unsafe {
            let a = arena.alloc(small);
            arena.busy.store(true, Ordering::Relaxed);
            // Taken lists: the block comes from System, and a freed arena block is left unused.
            let s = arena.alloc(small);
            assert!(!arena.owns(s));
            arena.dealloc(a, small);
            arena.dealloc(s, small);
            arena.busy.store(false, Ordering::Relaxed);
            assert_ne!(arena.alloc(small), a);
        }
    }
}
