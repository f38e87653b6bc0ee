//! Core ingest throughput: decoded message events applied to the engine, one thread.
//! Run: `cargo bench -p chatctx-core --bench ingest`
//!
//! Uses mimalloc, the allocator the `chatctx` binary ships with.

#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

// `json!` in the generator unwraps internally when it serializes plain strings and numbers, which cannot fail.
#[allow(clippy::disallowed_methods, dead_code)]
#[path = "support/synth.rs"]
mod synth;
use chatctx_core::{Engine, Event, Settings};
use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use synth::Synth;

fn main() {
    divan::main();
}

const N: usize = 10_000;

fn events(chats: u64) -> Vec<Event> {
    Synth::new(chats, 7).take(N).filter_map(|v| Event::decode(&v).ok()).collect()
}

/// 10,000 events spread over `chats` chats into a fresh engine (chat creation included).
#[divan::bench(args = [10, 1000])]
fn apply_fresh(bencher: Bencher, chats: u64) {
    let evs = events(chats);
    bencher
        .counter(ItemsCount::new(evs.len()))
        .with_inputs(|| (Engine::new(Settings::default()), evs.clone()))
        .bench_local_values(|(mut engine, evs)| {
            for e in evs {
                let _ = black_box(engine.apply(e));
            }
            engine
        });
}

/// Steady state: new events into an engine whose conversations are already full (cap 50), so every insert
/// also evicts the oldest message of its conversation. Each iteration applies events never seen before.
#[divan::bench]
fn apply_steady_state_with_eviction(bencher: Bencher) {
    let mut settings = Settings::default();
    settings.conversation.cache_max_per_conversation = 50;
    let mut synth = Synth::new(100, 3);
    let mut engine = Engine::new(settings);
    for v in synth.by_ref().take(30_000) {
        if let Ok(e) = Event::decode(&v) {
            let _ = engine.apply(e);
        }
    }
    bencher
        .counter(ItemsCount::new(N))
        .with_inputs(|| synth.by_ref().take(N).filter_map(|v| Event::decode(&v).ok()).collect::<Vec<_>>())
        .bench_local_values(|evs| {
            for e in evs {
                let _ = black_box(engine.apply(e));
            }
        });
}

/// Decoding JSON values into events (the part of ingest that `replay` and the server add).
#[divan::bench]
fn decode(bencher: Bencher) {
    let values: Vec<serde_json::Value> = Synth::new(100, 9).take(N).collect();
    bencher.counter(ItemsCount::new(values.len())).bench_local(|| {
        for v in &values {
            let _ = black_box(Event::decode(v));
        }
    });
}

/// The fresh-input checks a client's event passes before it is decoded (ids and bounds,
/// `chatctx_core::event::check_fresh`).
#[divan::bench]
fn check_fresh(bencher: Bencher) {
    let values: Vec<serde_json::Value> = Synth::new(100, 9).take(N).collect();
    bencher.counter(ItemsCount::new(values.len())).bench_local(|| {
        for v in &values {
            let _ = black_box(chatctx_core::event::check_fresh(v));
        }
    });
}
