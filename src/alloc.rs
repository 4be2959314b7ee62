//! vf's global allocator: the C library's `malloc` for every command, and
//! mimalloc for the projector's bulk work once a command asks for it
//! ([`use_bulk_allocator`], `vf replay`).
//!
//! Why two: mimalloc makes replay ~15% faster (it builds and drops a JSON
//! value per frame), but using it costs every short command ~0.3 ms of start
//! and page faults (a fresh page per size class, a heap per thread), which is
//! a tenth of what `vf dispatch` may add over the engine. A block is always
//! freed or grown by the allocator that made it: mimalloc knows its own
//! blocks (`mi_is_in_heap_region`, a lookup in its arena list and segment
//! map), and everything else came from `malloc`. mimalloc's own start-up runs
//! only then too ([`use_bulk_allocator`]).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

use mimalloc::MiMalloc;

/// See the module documentation.
pub struct VfAlloc;

static BULK: AtomicBool = AtomicBool::new(false);

/// From now on new blocks come from mimalloc (for the rest of the process).
pub fn use_bulk_allocator() {
    start_mimalloc();
    BULK.store(true, Ordering::Relaxed);
}

/// mimalloc's process set-up, which its C constructor would run at every
/// start: the build leaves the constructor out (`MI_PRIM_HAS_PROCESS_ATTACH`
/// in `.cargo/config.toml`), so only a command that uses mimalloc pays for
/// it (~0.1 ms: options read from the environment, OS and heap set-up).
/// Where the constructor did run (a build without that flag), nothing to do.
fn start_mimalloc() {
    unsafe extern "C" {
        static _mi_process_is_initialized: bool;
        fn _mi_auto_process_init();
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: mimalloc's flag is only written by its own set-up, which
        // has either run before `main` or runs here, once.
        if unsafe { !_mi_process_is_initialized } {
            // SAFETY: what the constructor would have called, before the first
            // mimalloc block of the process.
            unsafe { _mi_auto_process_init() }
        }
    });
}

fn is_mimallocs(p: *mut u8) -> bool {
    // SAFETY: a lookup of the address only; any pointer may be asked about.
    unsafe { libmimalloc_sys::mi_is_in_heap_region(p.cast()) }
}

// SAFETY: each block goes back to (or is grown by) the allocator that made
// it, and both allocators uphold the `GlobalAlloc` contract.
unsafe impl GlobalAlloc for VfAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if BULK.load(Ordering::Relaxed) {
            unsafe { MiMalloc.alloc(layout) }
        } else {
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if BULK.load(Ordering::Relaxed) {
            unsafe { MiMalloc.alloc_zeroed(layout) }
        } else {
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_mimallocs(ptr) {
            unsafe { MiMalloc.dealloc(ptr, layout) }
        } else {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if is_mimallocs(ptr) {
            unsafe { MiMalloc.realloc(ptr, layout, new_size) }
        } else {
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of both allocators, freed and grown across the switch.
    #[test]
    fn blocks_go_back_to_the_allocator_that_made_them() {
        let a = VfAlloc;
        let small = Layout::from_size_align(24, 8).unwrap();
        let big = Layout::from_size_align(1 << 20, 64).unwrap();
        unsafe {
            let before = a.alloc(small);
            assert!(!before.is_null() && !is_mimallocs(before));
            start_mimalloc();
            BULK.store(true, Ordering::Relaxed);
            let after = a.alloc_zeroed(big);
            assert!(!after.is_null() && is_mimallocs(after));
            assert_eq!(*after.add(12345), 0);
            // A malloc block grown after the switch stays a malloc block.
            before.write_bytes(7, 24);
            let grown = a.realloc(before, small, 4096);
            assert!(!is_mimallocs(grown) && *grown.add(23) == 7);
            let moved = a.realloc(after, big, 2 << 20);
            assert!(is_mimallocs(moved));
            a.dealloc(grown, Layout::from_size_align(4096, 8).unwrap());
            a.dealloc(moved, Layout::from_size_align(2 << 20, 64).unwrap());
            BULK.store(false, Ordering::Relaxed);
        }
    }
}
