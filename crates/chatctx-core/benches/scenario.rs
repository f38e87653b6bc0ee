//! `update_scenario` latency on an 8 KB state, in process: each update changes one nested field (so every
//! call merges, checks the size, and writes a revision with its snapshot).
//! Run: `cargo bench -p chatctx-core --bench scenario`

// `json!` expands to an internal `unwrap` on serializing plain values, which cannot fail.
#![allow(clippy::disallowed_methods)]

#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

use std::hint::black_box;
use std::time::Instant;

use chatctx_core::tools::Request;
use chatctx_core::tools::state::UpdateScenario;
use chatctx_core::{Engine, Settings, Timestamp};
use serde_json::{Map, Value, json};

fn main() {
    let mut settings = Settings::default();
    settings.state.merge_depth = 1;
    settings.state.merge_depth_by_key.insert("household".into(), 2);
    let mut engine = Engine::new(settings);
    let now = Timestamp::from_unix(1_770_000_000).unwrap_or_default();
    // A state of about 8 KB: a household, a reform, and 60 notes.
    let mut state = Map::new();
    state.insert("household".into(), json!({"adults": 2, "married": false, "children": [{"age": 4}, {"age": 7}], "region": "north", "income": 52000}));
    state.insert("reform".into(), json!({"child_benefit": 25, "rate": 0.2, "bands": [12570, 50270, 125140]}));
    for i in 0..60 {
        state.insert(format!("note_{i:02}"), json!({"text": "a note the conversation settled earlier, kept for later turns", "turn": i, "tags": ["plan", "budget"]}));
    }
    let size = serde_json::to_string(&state).map(|s| s.len()).unwrap_or(0);
    let first = UpdateScenario::decode(&json!({"chat_id": "-1", "patch": Value::Object(state)})).unwrap();
    engine.update_scenario(&first, now).unwrap();
    const N: usize = 50_000;
    let patches: Vec<UpdateScenario> = (0..N)
        .map(|i| {
            UpdateScenario::decode(&json!({"chat_id": "-1", "patch": {"household": {"income": 50_000 + i}}})).unwrap()
        })
        .collect();
    let mut us = Vec::with_capacity(N);
    for p in &patches {
        let t = Instant::now();
        black_box(engine.update_scenario(p, now)).ok();
        us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    us.sort_by(f64::total_cmp);
    let revision = engine
        .get_scenario(&chatctx_core::tools::state::GetScenario::decode(&json!({"chat_id": "-1"})).unwrap())
        .revision;
    println!(
        "state {size} bytes, {N} updates (revision {revision}), {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("update_scenario p50 {:.2} µs  p99 {:.2} µs  (target p99 <= 20)", us[N / 2], us[N * 99 / 100]);
}
