//! A plain ingest loop for profilers (`perf record`, `valgrind --tool=callgrind`): warms an engine until its
//! conversations are full (cap 50), then times 200,000 more events, each of which evicts an old message.
//! Run: `cargo run --release -p chatctx-core --example ingest_profile` (instruction counts: `bench/instructions.sh`)
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
    settings.conversation.cache_max_per_conversation = 50;
    let mut engine = Engine::new(settings);
    let mut synth = Synth::new(100, 7);
    for v in synth.by_ref().take(50_000) {
        if let Ok(e) = Event::decode(&v) {
            let _ = engine.apply(e);
        }
    }
    let events: Vec<Event> = synth.take(200_000).filter_map(|v| Event::decode(&v).ok()).collect();
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
