//! Bytes of memory per stored message beyond its text. Ingests 100,000 messages into 100 chats (all kept)
//! and reports two figures:
//! - requested: heap bytes the engine asked for (every allocation counted at its requested size), minus
//!   the bytes of the stored texts;
//! - resident: growth of the process's resident memory under mimalloc (the allocator the binary ships
//!   with), minus the text bytes. This includes allocator size classes and slack, what a deployment sees.
//!
//! Run: `cargo bench -p chatctx-core --bench memory`
// A counting global allocator is unsafe by its trait; it only forwards to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};

// `json!` in the generator unwraps internally when it serializes plain strings and numbers, which cannot fail.
#[allow(clippy::disallowed_methods, dead_code)]
#[path = "support/synth.rs"]
mod synth;
use chatctx_core::{Engine, Event, Settings};
use synth::Synth;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);
static INNER: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

// SAFETY: every method forwards to mimalloc's allocator with the caller's own arguments, so the allocator's
// contract holds exactly as it does for mimalloc; the counters are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        COUNT.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract for `layout`; passed on unchanged.
        unsafe { INNER.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        COUNT.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by this allocator (so by `INNER`) with `layout`, as the caller guarantees.
        unsafe { INNER.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as for `dealloc`; `new_size` is non-zero and fits `isize`, as the caller guarantees.
        unsafe { INNER.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Resident set size in bytes, from /proc (Linux).
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<usize>().ok()).unwrap_or(0) * 4096
}

/// Resident bytes held in transparent huge pages, from /proc (Linux; 0 elsewhere).
fn huge() -> usize {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let kib = rollup.lines().find_map(|l| l.strip_prefix("AnonHugePages:")).and_then(|v| v.split_whitespace().next());
    kib.and_then(|k| k.parse::<usize>().ok()).unwrap_or(0) * 1024
}

fn main() {
    const N: usize = 100_000;
    let mut settings = Settings::default();
    settings.conversation.cache_max_per_conversation = N; // keep everything
    let mut engine = Engine::new(settings);
    let mut synth = Synth::new(100, 11);
    // Events are generated and applied one at a time, so the only lasting growth is the engine's state.
    let (live0, count0, rss0) = (LIVE.load(Ordering::Relaxed), COUNT.load(Ordering::Relaxed), rss());
    let mut applied = 0;
    while applied < N {
        if let Ok(e @ Event::Message(_)) = Event::decode(&synth.next_event()) {
            let _ = engine.apply(e);
            applied += 1;
        }
    }
    let (live1, count1, rss1) = (LIVE.load(Ordering::Relaxed), COUNT.load(Ordering::Relaxed), rss());
    let mut text_bytes = 0usize;
    let mut stored = 0usize;
    for chat in 0..100u64 {
        let id = format!("-100{}", 1_000_000 + chat);
        for topic in [None, Some("1"), Some("2"), Some("3")] {
            if let Ok(items) = engine.history("telegram", &id, topic) {
                stored += items.len();
                text_bytes += items.iter().map(|i| i.text.len()).sum::<usize>();
            }
        }
    }
    let per = |bytes: usize| (bytes.saturating_sub(text_bytes)) as f64 / stored as f64;
    println!("messages stored:               {stored}");
    println!(
        "message text:                  {text_bytes} bytes ({:.1} per message)",
        text_bytes as f64 / stored as f64
    );
    println!("live allocations per message:  {:.2}", (count1 - count0) as f64 / stored as f64);
    println!("requested overhead/message:    {:.1} bytes", per(live1 - live0));
    println!("resident overhead/message:     {:.1} bytes (target <= 400)", per(rss1.saturating_sub(rss0)));
    // mimalloc backs its arenas with transparent huge pages where the kernel allows them (`madvise` mode), which
    // rounds resident memory up to 2 MiB pages: ~440 bytes here instead of ~355, for ingest 8-19 % faster
    // (docs/benchmarks.md, "Memory per stored message").
    println!(
        "in transparent huge pages:     {:.1} MiB of the resident set (MIMALLOC_ALLOW_THP=0 turns them off)",
        huge() as f64 / (1 << 20) as f64
    );
}
