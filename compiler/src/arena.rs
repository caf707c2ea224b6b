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
//! * a class with an empty list takes a new block from the end of the small region of one
//!   large reservation (`mmap` with `MAP_NORESERVE`: the kernel gives it pages as they are
//!   first touched), which is never given back, as glibc's heap under
//!   `mallopt(M_TRIM_THRESHOLD)`;
//! * a larger block (up to [`MAX_LARGE`], alignment at most 4 096) belongs to a class of a
//!   power of two from 8 KiB and comes from the reservation's large region the same way; a
//!   class with an empty list first splits the smallest free block of a larger class (a vector
//!   that grew to 32 MiB and was freed serves the smaller vectors after it), and the region's
//!   last block grows in place (a growing vector is not copied);
//! * blocks beyond the classes, and everything once a region is used up, go to glibc
//!   (`System`); `dealloc` and `realloc` tell the two apart by the address.
//!
//! Memory never given out is the kernel's zero pages, so `alloc_zeroed` clears only reused
//! blocks.
//!
//! Transparent huge pages (`madvise(MADV_HUGEPAGE)` on each region past its first 4 MiB) were
//! measured on 2026-12-02 and are not used. Alone they cut page faults twelvefold (straight-line
//! 64k 26 860 → 2 141; 16k 6 848 → 2 129) and the wall time of a process run by itself
//! (straight-line 64k 191–221 → 151–174 ms, `perf stat -r 30`). But the timing tool runs each
//! ptxc after a ptxas, and there (cause not found; `compact_stall` in `/proc/vmstat` did not
//! grow) straight-line 64k took 358 ms with them against 169 ms without (and 207 ms with the glibc
//! heap before), its system time 0.03–0.24 s from run to run; with huge pages only up to 32 or
//! 64 MiB of each region, 265 and 294 ms. Straight-line 16k took 28.4 ms with them and 35.0
//! without (40.1 before). The large regions alone (this allocator, 4 KiB pages) give the
//! 64k kernel 26 558 page faults, as glibc's heap did.
//!
//! **Pages mapped ahead, on the second core.** Each first touch of a fresh 4 KiB page is a page
//! fault, and the kernel's work on it (zeroing, mapping, accounting) was 28% of the wall time of
//! the straight-line 64k kernel (`perf record`, 2026-12-02: 23 522 faults for 99 MB). For a PTX
//! text of at least [`POPULATE_MIN_SOURCE`] bytes, `cli` starts [`Arena::populate_ahead`]: a
//! thread that keeps [`POPULATE_LEAD`] bytes past each region's frontier present with
//! `madvise(MADV_POPULATE_WRITE)`, so the faults are taken on the other core while the
//! compilation runs. Measured on 2026-12-02 on the 2-core machine with nothing else running:
//! straight-line 64k 225 → 149 ms wall (`perf stat -r 15`; the compiling thread's page faults
//! 23 522 → 3 165, CPU time of both threads 212 → 215 ms); straight-line 16k median 48.9 → 38.5
//! ms (25 interleaved runs), with a lead of 8 MiB asked for in steps of 1 MiB. Every page the
//! thread maps past the compilation's last allocation is wasted work (and more for the process's
//! exit to unmap), so shorter leads were measured: over 41 interleaved runs of 16k (medians
//! 28.6, 29.1 and 30.3 ms) and 15 of 64k (88.4, 90.5 and 97.5 ms), leads of 4, 2 and 8 MiB
//! (steps of 512, 256 and 1 024 KiB). 4 MiB in steps of 512 KiB is used.
//!
//! The second core was also tried for compiling work, and is not used for it: running the
//! checker on the main thread while lowering and encoding ran on another (lowering needs only
//! the module's header from the checker) made the straight-line 16k kernel slower, median 24.4
//! → 29.6 ms over 31 interleaved runs, and 29.7 ms with the checker's allocations sent to glibc
//! so that the two threads did not share the arena's lists (64k 103 → 108 ms; 2026-12-02).
//! Nor did scanning the second half of a large text on a second thread (2026-12-07 night: the
//! second part lexed and folded from a line start after a `;`, joined to the first when the
//! first part's scan confirmed the guess, its syntax tree from a bump region of its own so
//! that the owner thread could reuse it; equal tokens and runs at every line start of the
//! corpus). The compiling thread's instructions at straight-line 64k fell 446.8M → 400.5M,
//! but the wall time did not move: median 66.4 → 65.3 ms over 41 interleaved runs, and 16k
//! 13% slower. During the frontend the second core is already busy mapping the syntax tree's
//! pages for this thread; the scanning thread took 3 200 page faults of its own there, so its
//! half took 11 ms against 8–10 ms for the compiling thread's half, which itself lost the
//! pages mapped ahead.
//!
//! A freed large block is reused only by its class or a smaller one (glibc merges neighbouring
//! free blocks; loops 64k: 110 MB in the large region against 88 MB in glibc's heap, and 135 MB
//! before free blocks were split).
//!
//! Only one thread ever uses the lists: the first that allocates (`main`'s) becomes their owner,
//! and any other thread (ptxc compiles on one) allocates from `System` and leaves an arena
//! block it frees unused. A thread knows itself by the address of a thread-local byte, which
//! costs one add; taking the lists with an atomic flag on every allocation and free, as the
//! arena did before, cost a locked exchange each time (straight-line 64k, with the cubin
//! writer's copies removed in the same step: median 67.0 → 65.0 ms over 21 interleaved runs,
//! 2026-12-07).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The small size classes' step: every small block is a multiple of it, and aligned to it.
const GRAIN: usize = 16;
/// The largest small block; larger ones are large blocks.
pub const MAX_SMALL: usize = 4096;
/// The number of small size classes.
const CLASSES: usize = MAX_SMALL / GRAIN;
/// The smallest large block (a power of two above `MAX_SMALL`).
const MIN_LARGE_SHIFT: u32 = 13;
/// The number of large size classes: blocks of 8 KiB, 16 KiB, … 256 MiB; larger ones come from
/// `System`.
const LARGE_CLASSES: usize = 16;
/// The largest large block.
pub const MAX_LARGE: usize = 1 << (MIN_LARGE_SHIFT as usize + LARGE_CLASSES - 1);
/// The largest alignment a large block has (blocks are whole pages from a page-aligned start).
const LARGE_ALIGN: usize = 4096;
/// The address space reserved for each of the two regions (small blocks, large blocks).
const REGION: usize = 1 << 30;

/// A size-class allocator over one reservation of two regions, falling back to `System` (see the module).
pub struct Arena {
    /// The thread that uses `lists` ([`this_thread`]; 0 until the first allocation).
    owner: AtomicUsize,
    /// The reservation's first address (0 until the first allocation reserves it).
    start: AtomicUsize,
    /// The reservation's end (0 before it exists; `start` too when reserving failed).
    end: AtomicUsize,
    lists: UnsafeCell<Lists>,
    /// The small region's first address not yet given out, published for the page-populating
    /// thread ([`populate_ahead`]; 0 before the reservation exists).
    frontier_small: AtomicUsize,
    /// The same for the large region.
    frontier_large: AtomicUsize,
    /// Cleared to end the populating thread ([`Arena::stop_populating`]).
    populating: AtomicBool,
    /// Set to have the populating thread give back the large region's pages and end
    /// ([`Arena::release_before_exit`]).
    releasing: AtomicBool,
}

// SAFETY: `lists` is only touched by the thread that owns it (`Arena::mine`).
unsafe impl Sync for Arena {}

/// The free lists and the unused rest of the two regions.
struct Lists {
    /// The first free block of each small class; each free block's first word points to the
    /// next.
    free: [*mut u8; CLASSES],
    /// The first free block of each large class, linked the same way.
    free_large: [*mut u8; LARGE_CLASSES],
    /// The first address of the small region not yet given out; every byte from it to the
    /// region's end is still zero (the kernel's fresh pages).
    next: usize,
    /// The first address of the large region not yet given out; every byte from it to the
    /// region's end is still zero, as in the small region (the last large block grows in
    /// place, and no block is ever shrunk in place).
    next_large: usize,
    /// The small region's end (0 when reserving failed).
    end_small: usize,
    /// The large region's end (0 when reserving failed).
    end_large: usize,
    /// Whether reserving was tried (it is tried once).
    reserved: bool,
}

/// Which of the arena's lists serves a layout.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// Small class `k`: blocks of `(k + 1) * GRAIN` bytes.
    Small(usize),
    /// Large class `k`: blocks of `1 << (MIN_LARGE_SHIFT + k)` bytes.
    Large(usize),
}

impl Class {
    /// The size of the class's blocks.
    #[inline]
    fn size(self) -> usize {
        match self {
            Class::Small(k) => (k + 1) * GRAIN,
            Class::Large(k) => 1 << (MIN_LARGE_SHIFT as usize + k),
        }
    }
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
            owner: AtomicUsize::new(0),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            lists: UnsafeCell::new(Lists {
                free: [std::ptr::null_mut(); CLASSES],
                free_large: [std::ptr::null_mut(); LARGE_CLASSES],
                next: 0,
                next_large: 0,
                end_small: 0,
                end_large: 0,
                reserved: false,
            }),
            frontier_small: AtomicUsize::new(0),
            frontier_large: AtomicUsize::new(0),
            populating: AtomicBool::new(false),
            releasing: AtomicBool::new(false),
        }
    }

    /// The class of `layout`, if the arena serves it.
    #[inline]
    fn class(layout: Layout) -> Option<Class> {
        let size = layout.size();
        if size <= MAX_SMALL && layout.align() <= GRAIN {
            return Some(Class::Small(size.max(1).div_ceil(GRAIN) - 1));
        }
        // A larger or over-aligned layout: a large block if its alignment allows.
        (layout.align() <= LARGE_ALIGN && size <= MAX_LARGE).then(|| {
            let shift = size
                .max(1 << MIN_LARGE_SHIFT)
                .next_power_of_two()
                .trailing_zeros();
            Class::Large((shift - MIN_LARGE_SHIFT) as usize)
        })
    }

    /// Whether the calling thread owns the lists, claiming them if no thread does yet.
    #[inline]
    fn mine(&self) -> bool {
        let me = this_thread();
        let owner = self.owner.load(Ordering::Relaxed);
        owner == me
            || (owner == 0
                && self
                    .owner
                    .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok())
    }

    /// Whether `ptr` is a block of the arena's reservation.
    #[inline]
    fn owns(&self, ptr: *mut u8) -> bool {
        let p = ptr as usize;
        p >= self.start.load(Ordering::Relaxed) && p < self.end.load(Ordering::Relaxed)
    }

    /// A block of class `class` and whether it is fresh (all zero), or null when the lists are
    /// taken or the region is used up.
    #[inline]
    fn take(&self, class: Class) -> (*mut u8, bool) {
        if !self.mine() {
            return (std::ptr::null_mut(), false);
        }
        // SAFETY: this thread owns the lists.
        let lists = unsafe { &mut *self.lists.get() };
        if !lists.reserved {
            self.reserve(lists);
        }
        match class {
            Class::Small(k) => self.take_small(lists, k),
            Class::Large(k) => match pop(&mut lists.free_large[k]) {
                Some(block) => (block, false),
                None => match split_larger(lists, k) {
                    Some(block) => (block, false),
                    None => {
                        let fresh = bump(&mut lists.next_large, lists.end_large, class.size());
                        self.frontier_large
                            .store(lists.next_large, Ordering::Relaxed);
                        fresh
                    }
                },
            },
        }
    }

    /// A block of small class `k` from its list, or fresh from the small region, and whether
    /// it is fresh; null when the region has no room (also before the reservation, when
    /// `next` and `end_small` are both 0). For the thread that owns `lists`.
    #[inline(always)]
    fn take_small(&self, lists: &mut Lists, k: usize) -> (*mut u8, bool) {
        match pop(&mut lists.free[k]) {
            Some(block) => (block, false),
            None => {
                let fresh = bump(&mut lists.next, lists.end_small, Class::Small(k).size());
                self.frontier_small.store(lists.next, Ordering::Relaxed);
                fresh
            }
        }
    }

    /// Reserves the address space (once; on failure the arena gives nothing): the small region,
    /// then the large one.
    #[cold]
    fn reserve(&self, lists: &mut Lists) {
        lists.reserved = true;
        let len = 2 * REGION;
        // SAFETY: an anonymous private mapping at an address the kernel chooses.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return;
        }
        let base = raw as usize;
        lists.next = base;
        lists.end_small = base + REGION;
        lists.next_large = base + REGION;
        lists.end_large = base + 2 * REGION;
        self.start.store(base, Ordering::Relaxed);
        self.end.store(base + 2 * REGION, Ordering::Relaxed);
    }

    /// Puts a block of class `class` back on its list (or leaves it unused when the lists are
    /// taken).
    #[inline]
    fn give_back(&self, block: *mut u8, class: Class) {
        if !self.mine() {
            return;
        }
        // SAFETY: this thread owns the lists; the block is the caller's and at least 16 bytes.
        unsafe {
            let lists = &mut *self.lists.get();
            let head = match class {
                Class::Small(k) => &mut lists.free[k],
                Class::Large(k) => &mut lists.free_large[k],
            };
            block.cast::<*mut u8>().write(*head);
            *head = block;
        }
    }

    /// Grows the large block `ptr` of class `from` to class `to` where it is, if it is the last
    /// block of the large region and the region has room.
    #[inline]
    fn grow_last(&self, ptr: *mut u8, from: Class, to: Class) -> bool {
        if !self.mine() {
            return false;
        }
        // SAFETY: this thread owns the lists.
        let lists = unsafe { &mut *self.lists.get() };
        let p = ptr as usize;
        let grown = p + from.size() == lists.next_large && lists.end_large - p >= to.size();
        if grown {
            lists.next_large = p + to.size();
            self.frontier_large
                .store(lists.next_large, Ordering::Relaxed);
        }
        grown
    }
}

/// How far ahead of each region's frontier the populating thread keeps pages present.
const POPULATE_LEAD: usize = 4 << 20;
/// How much the populating thread asks the kernel for at once.
const POPULATE_STEP: usize = 512 << 10;

/// The arena `main` made the process's global allocator ([`Arena::install`]), if any.
static INSTALLED: std::sync::OnceLock<&'static Arena> = std::sync::OnceLock::new();

/// The smallest PTX text worth a populating thread: below it the thread's start (about 50 us)
/// costs more than the page faults it would take off the compiling thread.
pub const POPULATE_MIN_SOURCE: usize = 128 << 10;

/// Starts [`Arena::populate_ahead`] on the installed arena; does nothing in a process whose
/// allocator is not an [`Arena`] (the library's tests).
pub fn populate_ahead() {
    if let Some(arena) = INSTALLED.get() {
        arena.populate_ahead();
    }
}

impl Arena {
    /// Records `self` as the process's global allocator, for [`populate_ahead`].
    pub fn install(&'static self) {
        let _ = INSTALLED.set(self);
    }

    /// Starts a thread that keeps the pages just past each region's frontier present
    /// (`madvise(MADV_POPULATE_WRITE)`), so that the compiling thread finds them mapped instead
    /// of taking a page fault on each first touch: on the second core, the kernel's zeroing and
    /// mapping of fresh pages overlaps the compilation (see the module documentation for the
    /// measurements). The thread waits while it is [`POPULATE_LEAD`] ahead of both frontiers and
    /// ends with the process (`main` ends it with `_exit`).
    ///
    /// Populating a page changes no byte a program can see (a present page of an anonymous
    /// private mapping reads as it did before), so the thread needs no synchronisation with the
    /// allocating thread beyond reading the frontiers; a kernel without `MADV_POPULATE_WRITE`
    /// (before Linux 5.14) refuses the first request, and the thread ends.
    pub fn populate_ahead(&'static self) {
        let start = self.start.load(Ordering::Relaxed);
        if start == 0 || self.end.load(Ordering::Relaxed) == start {
            return;
        }
        if self.populating.swap(true, Ordering::Relaxed) {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("populate".into())
            .stack_size(64 << 10)
            .spawn(move || {
                let regions = [
                    (&self.frontier_small, start, start + REGION),
                    (&self.frontier_large, start + REGION, start + 2 * REGION),
                ];
                // The first address not yet populated in each region.
                let mut done = regions.map(|(frontier, base, _)| {
                    frontier.load(Ordering::Relaxed).max(base) & !(LARGE_ALIGN - 1)
                });
                while self.populating.load(Ordering::Relaxed) {
                    if self.releasing.load(Ordering::Acquire) {
                        // Up to what this thread mapped, or what the compilation touched when
                        // this thread fell behind it.
                        let used = done[1].max(self.frontier_large.load(Ordering::Relaxed));
                        // SAFETY: the range lies in the arena's own mapping, and the process
                        // reads none of it any more (`release_before_exit`).
                        unsafe { zap(start + REGION, used) };
                        // Never return: a thread's end frees its handle and name, memory that
                        // reads as zero now. The process's `_exit` ends this thread.
                        loop {
                            // SAFETY: waits for a signal; no memory is touched.
                            unsafe { libc::pause() };
                        }
                    }
                    let mut asked = false;
                    for (i, &(frontier, _, end)) in regions.iter().enumerate() {
                        let want = (frontier.load(Ordering::Relaxed) + POPULATE_LEAD).min(end);
                        if done[i] < want {
                            let len = POPULATE_STEP.min(end - done[i]);
                            // SAFETY: the range lies in the arena's own mapping.
                            let r = unsafe {
                                libc::madvise(
                                    done[i] as *mut libc::c_void,
                                    len,
                                    libc::MADV_POPULATE_WRITE,
                                )
                            };
                            if r != 0 {
                                return;
                            }
                            done[i] += len;
                            asked = true;
                        }
                    }
                    if !asked {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                }
            });
        // Without the thread the compilation just takes its page faults itself.
        if spawned.is_err() {
            self.populating.store(false, Ordering::Relaxed);
        }
    }

    /// Gives the pages of both regions back to the kernel, the large region's on the populating
    /// thread while this thread does the small one's, when that thread runs; otherwise does
    /// nothing. For `main`, right before `_exit`: a process's exit frees its pages on one core,
    /// about 0.1 ms per MB here (a process that had populated 90 MB took 8–12 ms to exit,
    /// 40 MB 3.5–5.4 ms), and the pages freed here on two cores are not freed again. Measured
    /// on 2026-12-07 (interleaved runs, medians): straight-line 64k 68.2 → 64.8 ms and 66.9 →
    /// 62.3 ms, 16k 22.9 → 21.1 ms.
    ///
    /// # Safety
    /// Nothing may read or write memory the arena gave out after this call: the pages read as
    /// zero afterwards (the process only exits).
    pub unsafe fn release_before_exit(&self) {
        if !self.populating.load(Ordering::Relaxed) {
            return;
        }
        self.releasing.store(true, Ordering::Release);
        let start = self.start.load(Ordering::Relaxed);
        // The small region up to what the populating thread may have mapped past the frontier.
        let used = self.frontier_small.load(Ordering::Relaxed) + POPULATE_LEAD + POPULATE_STEP;
        // SAFETY: the caller's contract.
        unsafe { zap(start, used.min(start + REGION)) };
    }

    /// Ends the populating thread at its next step (the tests; `ptxc` just exits).
    pub fn stop_populating(&self) {
        self.populating.store(false, Ordering::Relaxed);
    }
}

/// Gives the pages of `from..to` (in the arena's mapping) back to the kernel
/// (`MADV_DONTNEED`; the range reads as zero afterwards).
///
/// # Safety
/// Nothing may use the range's memory afterwards.
unsafe fn zap(from: usize, to: usize) {
    let from = from & !(LARGE_ALIGN - 1);
    if to > from {
        // SAFETY: the caller's contract; a failure leaves the pages to the process's exit.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED) };
    }
}

thread_local! {
    /// A byte whose address tells the threads apart ([`this_thread`]).
    static THREAD_MARK: u8 = const { 0 };
}

/// A number that differs between threads alive at the same time: the address of the thread's
/// [`THREAD_MARK`] (no allocation, no destructor, so usable inside the allocator). A thread
/// that starts after another ended may get the same number, which is harmless: the two never
/// use the lists at once.
#[inline]
fn this_thread() -> usize {
    THREAD_MARK.with(|m| std::ptr::from_ref(m) as usize)
}

/// The first block of the list `head`, taken off it.
#[inline]
fn pop(head: &mut *mut u8) -> Option<*mut u8> {
    let block = *head;
    if block.is_null() {
        return None;
    }
    // SAFETY: a free block's first word holds the next free block of its class.
    *head = unsafe { block.cast::<*mut u8>().read() };
    Some(block)
}

/// `size` fresh bytes from the unused rest `*next..end` of a region (fresh: never given out,
/// so still the kernel's zero pages), or null when it has too few.
#[inline]
fn bump(next: &mut usize, end: usize, size: usize) -> (*mut u8, bool) {
    if end.saturating_sub(*next) < size {
        return (std::ptr::null_mut(), false);
    }
    let block = *next as *mut u8;
    *next += size;
    (block, true)
}

impl Arena {
    /// [`GlobalAlloc::alloc`] for any layout: the arena's block of its class if it has one
    /// (reserving the address space on the first call), else `System`'s.
    ///
    /// # Safety
    /// As for [`GlobalAlloc::alloc`].
    #[inline(never)]
    unsafe fn alloc_general(&self, layout: Layout) -> *mut u8 {
        if let Some(class) = Self::class(layout) {
            let (block, _) = self.take(class);
            if !block.is_null() {
                return block;
            }
        }
        // SAFETY: the caller's contract (a non-zero size).
        unsafe { System.alloc(layout) }
    }
}

/// A block of large class `k` cut from the smallest free block of a larger class: a block of
/// class `j` splits into blocks of classes `k`, `k`, `k + 1`, … `j - 1` (the first is taken, the
/// others go on their lists), so memory a large vector left behind serves smaller ones instead
/// of new pages.
#[inline]
fn split_larger(lists: &mut Lists, k: usize) -> Option<*mut u8> {
    let j = (k + 1..LARGE_CLASSES).find(|&j| !lists.free_large[j].is_null())?;
    let block = pop(&mut lists.free_large[j])?;
    for i in k..j {
        let rest = block.wrapping_add(Class::Large(i).size());
        // SAFETY: `rest` is the upper half of a free block of class `i + 1`: the arena's, at
        // least 8 KiB, and no one else's.
        unsafe { rest.cast::<*mut u8>().write(lists.free_large[i]) };
        lists.free_large[i] = rest;
    }
    Some(block)
}

// SAFETY: every block is either the arena's (a distinct range of the reservation, of its
// class's size, aligned to its layout) or `System`'s, and each is freed by whoever gave it.
unsafe impl GlobalAlloc for Arena {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // The owner's small block, from its list or fresh, in line: nearly all of a compile's
        // allocations. Through the general path (a call to `take`, the class as an enum, the
        // reservation check) they cost almost twice as much: straight-line 64k, `__rust_alloc`
        // 23.1M → 13.1M instructions, the whole process 414.1M → 404.0M (callgrind,
        // 2026-12-07).
        if layout.size() <= MAX_SMALL && layout.align() <= GRAIN && self.mine() {
            // SAFETY: this thread owns the lists.
            let lists = unsafe { &mut *self.lists.get() };
            // A layout's size is at least 1 (`GlobalAlloc::alloc`'s contract). Null before the
            // reservation: the general path makes it.
            let (block, _) = self.take_small(lists, (layout.size() - 1) / GRAIN);
            if !block.is_null() {
                return block;
            }
        }
        // SAFETY: the caller's contract.
        unsafe { self.alloc_general(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if let Some(class) = Self::class(layout) {
            let (block, fresh) = self.take(class);
            if !block.is_null() {
                // A fresh block is untouched memory, zero already.
                if !fresh {
                    // SAFETY: the block has at least `layout.size()` bytes.
                    unsafe { block.write_bytes(0, layout.size()) };
                }
                return block;
            }
        }
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.owns(ptr) {
            // An arena block always has a class: only those are given from the reservation.
            if let Some(class) = Self::class(layout) {
                self.give_back(ptr, class);
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
        let (old, new) = (Self::class(layout), Self::class(new_layout));
        if new.is_some() && new == old {
            return ptr;
        }
        if let (Some(from @ Class::Large(_)), Some(to @ Class::Large(_))) = (old, new)
            && to.size() > from.size()
            && self.grow_last(ptr, from, to)
        {
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
            // Past MAX_SMALL the block moves to the large region, contents kept, and back.
            let big = arena.realloc(grown, Layout::from_size_align(100, 8).unwrap(), 10_000);
            assert!(arena.owns(big) && (big as usize).is_multiple_of(LARGE_ALIGN));
            assert!(std::slice::from_raw_parts(big, 24).iter().all(|&x| x == 7));
            let big_layout = Layout::from_size_align(10_000, 8).unwrap();
            let back = arena.realloc(big, big_layout, 40);
            assert!(arena.owns(back) && back != big);
            assert!(std::slice::from_raw_parts(back, 24).iter().all(|&x| x == 7));
            arena.dealloc(back, Layout::from_size_align(40, 8).unwrap());
            // Over-aligned small layouts are large blocks; beyond MAX_LARGE, System's.
            let over = Layout::from_size_align(64, 64).unwrap();
            let o = arena.alloc(over);
            assert!(arena.owns(o) && (o as usize).is_multiple_of(64));
            arena.dealloc(o, over);
            let huge = Layout::from_size_align(MAX_LARGE + 1, 8).unwrap();
            let h = arena.alloc(huge);
            assert!(!h.is_null() && !arena.owns(h));
            arena.dealloc(h, huge);
            arena.dealloc(b, small);
        }
    }

    #[test]
    fn large_blocks_grow_split_and_zero() {
        let arena = Arena::new();
        let kib = |n: usize| Layout::from_size_align(n << 10, 8).unwrap();
        unsafe {
            // Classes are powers of two from 8 KiB: 5 KiB and 8 KiB share one.
            let a = arena.alloc_zeroed(kib(5));
            assert!(
                std::slice::from_raw_parts(a, 5 << 10)
                    .iter()
                    .all(|&x| x == 0)
            );
            a.write_bytes(3, 5 << 10);
            assert_eq!(arena.realloc(a, kib(5), 8 << 10), a);
            // The last block grows in place (its contents stay), up to 64 KiB.
            assert_eq!(arena.realloc(a, kib(8), 64 << 10), a);
            assert!(
                std::slice::from_raw_parts(a, 5 << 10)
                    .iter()
                    .all(|&x| x == 3)
            );
            a.write_bytes(5, 64 << 10);
            // Not the last block any more: growing moves it.
            let b = arena.alloc(kib(8));
            assert_eq!(b as usize, a as usize + (64 << 10));
            let moved = arena.realloc(a, kib(64), 100 << 10);
            assert_ne!(moved, a);
            assert!(
                std::slice::from_raw_parts(moved, 64 << 10)
                    .iter()
                    .all(|&x| x == 5)
            );
            // The freed 64 KiB block splits into 8 + 8 + 16 + 32 KiB, the first one first.
            let c = arena.alloc(kib(8));
            assert_eq!(c, a);
            assert_eq!(arena.alloc(kib(16)) as usize, a as usize + (16 << 10));
            assert_eq!(arena.alloc(kib(32)) as usize, a as usize + (32 << 10));
            // A reused block is zeroed when asked (the split one held 5s).
            let d = arena.alloc_zeroed(kib(7));
            assert_eq!(d as usize, a as usize + (8 << 10));
            assert!(
                std::slice::from_raw_parts(d, 7 << 10)
                    .iter()
                    .all(|&x| x == 0)
            );
            // A freed block is the next of its class.
            arena.dealloc(b, kib(8));
            assert_eq!(arena.alloc(kib(6)), b);
        }
    }

    #[test]
    fn other_threads_fall_back() {
        let arena = Arena::new();
        let small = Layout::from_size_align(8, 8).unwrap();
        // SAFETY: each block is freed once, with its layout.
        unsafe {
            let a = arena.alloc(small);
            assert!(arena.owns(a));
            // Another thread: its block comes from System, and an arena block it frees is
            // left unused.
            let a_addr = a as usize;
            std::thread::scope(|t| {
                t.spawn(|| {
                    let s = arena.alloc(small);
                    assert!(!arena.owns(s));
                    arena.dealloc(a_addr as *mut u8, small);
                    arena.dealloc(s, small);
                });
            });
            assert_ne!(arena.alloc(small), a);
        }
    }

    /// Whether the page at `addr` is present (`mincore`).
    fn resident(addr: usize) -> bool {
        let mut v = 0u8;
        // SAFETY: `addr` is page-aligned and mapped (the arena's reservation).
        let r = unsafe { libc::mincore(addr as *mut libc::c_void, 4096, &mut v) };
        assert_eq!(r, 0, "mincore");
        v & 1 == 1
    }

    #[test]
    fn populating_thread_maps_pages_past_the_frontiers() {
        let arena: &'static Arena = Box::leak(Box::new(Arena::new()));
        let small = Layout::from_size_align(64, 8).unwrap();
        let large = Layout::from_size_align(64 << 10, 8).unwrap();
        let (s, l) = unsafe { (arena.alloc(small), arena.alloc(large)) };
        assert!(arena.owns(s) && arena.owns(l));
        // Untouched pages past each frontier, inside the populating thread's lead.
        let page = |p: *mut u8, ahead: usize| ((p as usize + ahead) & !4095) + 4096;
        let (ps, pl) = (page(s, 1 << 20), page(l, 1 << 20));
        assert!(!resident(ps) && !resident(pl), "fresh pages start absent");
        // Far beyond the lead: never populated.
        let beyond = page(s, 2 * POPULATE_LEAD);
        arena.populate_ahead();
        let t = std::time::Instant::now();
        while !(resident(ps) && resident(pl)) {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(10),
                "the populating thread did not map the pages ahead (kernel before 5.14?)"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!resident(beyond), "pages beyond the lead stay unmapped");
        arena.stop_populating();
        // The populated pages read as zero, as fresh memory does.
        assert!(
            unsafe { std::slice::from_raw_parts(ps as *const u8, 4096) }
                .iter()
                .all(|&b| b == 0)
        );
    }

    #[test]
    fn release_before_exit_gives_back_both_regions() {
        let arena: &'static Arena = Box::leak(Box::new(Arena::new()));
        let small = Layout::from_size_align(64, 8).unwrap();
        let large = Layout::from_size_align(64 << 10, 8).unwrap();
        let (s, l) = unsafe { (arena.alloc(small), arena.alloc(large)) };
        // SAFETY: the blocks are the arena's, at least 64 bytes.
        unsafe {
            s.write(1);
            l.write(1);
        }
        let page = |p: *mut u8| p as usize & !4095;
        assert!(resident(page(s)) && resident(page(l)));
        // Without a populating thread: nothing happens.
        // SAFETY: the blocks are read again only to check that they are still there.
        unsafe { arena.release_before_exit() };
        assert!(resident(page(s)) && resident(page(l)));
        arena.populate_ahead();
        // SAFETY: the blocks are not used again.
        unsafe { arena.release_before_exit() };
        // This thread gave back the small region at once; the populating thread gives back
        // the large one at its next step.
        assert!(!resident(page(s)));
        let t = std::time::Instant::now();
        while resident(page(l)) {
            assert!(t.elapsed() < std::time::Duration::from_secs(10));
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
