//! A plain ingest loop for profilers (`perf record`, `valgrind --tool=callgrind`): warms an engine until its
//! conversations are full (cap 50), then times 200,000 more events, each of which evicts an old message.
//! Run: `cargo run --release -p chatctx-core --example ingest_profile` (instruction counts: `bench/instructions.sh`)
//!
//! The shape can be changed for a larger working set: `INGEST_CHATS` (default 100), `INGEST_CAP` (messages a
//! conversation keeps, default 50), `INGEST_WARM` (warm-up events per chat and cap, default 10) and
//! `INGEST_EVENTS` (timed events, default 200,000). `INGEST_CHATS=1000 INGEST_CAP=200` is `store_bench`'s engine:
//! the same instructions an event, but its state no longer fits the caches (docs/benchmarks-issue-32.md).
#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

// `json!` in the generator unwraps internally when it serializes plain strings and numbers, which cannot fail.
#[allow(clippy::disallowed_methods, dead_code)]
#[path = "../benches/support/synth.rs"]
mod synth;
use chatctx_core::{Engine, Event, Settings};
use synth::Synth;

fn main() {
    let mut settings = Settings::default();
    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (chats, cap) = (env("INGEST_CHATS", 100), env("INGEST_CAP", 50));
    settings.conversation.cache_max_per_conversation = cap;
    let mut engine = Engine::new(settings);
    let mut synth = Synth::new(chats as u64, 7);
    for v in synth.by_ref().take(chats * cap * env("INGEST_WARM", 10)) {
        if let Ok(e) = Event::decode(&v) {
            let _ = engine.apply(e);
        }
    }
    let events: Vec<Event> = synth.take(env("INGEST_EVENTS", 200_000)).filter_map(|v| Event::decode(&v).ok()).collect();
    let n = events.len();
    let t = std::time::Instant::now();
    steady(&mut engine, events);
    let dt = t.elapsed();
    println!("{n} events in {dt:?}: {:.0} events/s", n as f64 / dt.as_secs_f64());
}

/// The measured loop, on its own so that an instruction count can be limited to it
/// (`--toggle-collect='ingest_profile::steady'`, as `bench/instructions.sh` does).
#[inline(never)]
fn steady(engine: &mut Engine, events: Vec<Event>) {
    for e in events {
        let _ = engine.apply(e);
    }
}
