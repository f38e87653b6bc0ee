//! chatctx's global allocator: mimalloc, called the way its C interface is fastest.
//!
//! The `mimalloc` crate's allocator passes every request to mimalloc's aligned entry points. Those take a fast
//! path only for blocks of up to 1 KiB, and above that a generic path that over-allocates whenever the block's
//! size is not a power of two: a resolution's two blocks over 1 KiB cost ~500 instructions there (issue 32,
//! docs/benchmarks-issue-32.md). Here a request whose alignment a plain block already has goes to `mi_malloc`,
//! `mi_zalloc` or `mi_realloc`, as the standard library's own allocator does with `malloc`: an alignment of at
//! most 16 bytes (`MI_MAX_ALIGN_SIZE`, what a C `malloc` guarantees for blocks of 16 bytes and more) and not
//! above the size (a smaller block is aligned to its size class, a multiple of 8). Anything else keeps the
//! aligned entry points.
//!
//! ```text
//! #[global_allocator]
//! static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;
//! ```
#![no_std]
#![warn(missing_docs)]
// A global allocator is unsafe by its trait: this crate is the one place (with the memory benchmark's counting
// wrapper) where the workspace allows it.
#![allow(unsafe_code)]

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;
use libmimalloc_sys as mi;

/// The alignment every block `mi_malloc` returns has when it is at least this large (`MI_MAX_ALIGN_SIZE`).
const PLAIN_ALIGN: usize = 16;

/// mimalloc, with plain calls where a plain block is aligned enough.
pub struct Alloc;

/// Whether a plain block of `size` bytes is aligned to `align`.
#[inline(always)]
fn plain(align: usize, size: usize) -> bool {
    align <= PLAIN_ALIGN && align <= size
}

// SAFETY: each method hands the request to mimalloc, which returns null or a block of at least `size` bytes
// that stays valid until freed. A block from `mi_malloc`/`mi_zalloc`/`mi_realloc` is aligned to 16 bytes when it
// is 16 bytes or more, and to its size class (a multiple of 8) below that, so `plain` sends there only requests
// that alignment satisfies; the rest go to the `_aligned` calls, which honour any alignment. `mi_free` and
// `mi_realloc` take a block from either kind of call, so `dealloc` and `realloc` need not know which made it.
unsafe impl GlobalAlloc for Alloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain FFI calls with a size and a power-of-two alignment taken from a valid `Layout`.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller guarantees `ptr` came from this allocator and is not used again.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `ptr` came from this allocator with `layout`, and that `new_size`
        // rounded up to `layout.align()` does not overflow; the new block keeps `layout.align()`.
        unsafe {
            if plain(layout.align(), new_size) {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}
