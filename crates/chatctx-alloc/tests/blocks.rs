//! The allocator's blocks: aligned as asked, as large as asked, zeroed when asked, and keeping their bytes when
//! resized, for every size and alignment mix (and as the test binary's own global allocator meanwhile).
#![allow(unsafe_code)]
#![allow(clippy::disallowed_methods)] // tests fail loudly on purpose

use std::alloc::{GlobalAlloc, Layout};

use chatctx_alloc::Alloc;
use proptest::prelude::*;

#[global_allocator]
static GLOBAL: Alloc = Alloc;

fn fill(p: *mut u8, n: usize, seed: u8) {
    for i in 0..n {
        // SAFETY: `p` is a live block of at least `n` bytes.
        unsafe { p.add(i).write(seed.wrapping_add(i as u8)) }
    }
}

fn holds(p: *const u8, n: usize, seed: u8) -> bool {
    // SAFETY: `p` is a live block of at least `n` bytes, all written.
    (0..n).all(|i| unsafe { p.add(i).read() } == seed.wrapping_add(i as u8))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn blocks_are_aligned_sized_zeroed_and_kept(
        size in 1usize..20_000,
        align_log in 0u32..13,
        grow in 1usize..40_000,
        zeroed in any::<bool>(),
        seed in any::<u8>(),
    ) {
        let align = 1usize << align_log;
        let layout = Layout::from_size_align(size, align).unwrap();
        // SAFETY: `layout` has a non-zero size; every block is freed once, with its layout.
        unsafe {
            let p = if zeroed { Alloc.alloc_zeroed(layout) } else { Alloc.alloc(layout) };
            prop_assert!(!p.is_null());
            prop_assert_eq!(p as usize % align, 0, "size {} align {}", size, align);
            if zeroed {
                prop_assert!((0..size).all(|i| p.add(i).read() == 0));
            }
            fill(p, size, seed);
            let q = Alloc.realloc(p, layout, grow);
            prop_assert!(!q.is_null());
            prop_assert_eq!(q as usize % align, 0, "resized to {} align {}", grow, align);
            prop_assert!(holds(q, size.min(grow), seed));
            fill(q, grow, seed ^ 0x5a);
            prop_assert!(holds(q, grow, seed ^ 0x5a));
            Alloc.dealloc(q, Layout::from_size_align(grow, align).unwrap());
        }
    }
}

/// Ordinary collections on top of it (it is this binary's allocator): many live blocks of mixed sizes at once.
#[test]
fn collections_live_side_by_side() {
    let mut blocks: Vec<Vec<u64>> = (0..2_000).map(|i| (0..(i * 7) % 700).map(|j| (i * j) as u64).collect()).collect();
    for (i, b) in blocks.iter_mut().enumerate() {
        b.extend((0..i % 300).map(|j| j as u64));
        b.shrink_to_fit();
    }
    for (i, b) in blocks.iter().enumerate() {
        let head = (i * 7) % 700;
        assert!(b[..head].iter().enumerate().all(|(j, &x)| x == (i * j) as u64), "block {i}");
        assert_eq!(b.len(), head + i % 300);
    }
}
