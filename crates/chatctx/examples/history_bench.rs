//! Selection plus rendering speed (`get_chat_history_context`), on the history written by
//! `bench/peers/compare.sh` (JSON: `{"budget": N, "messages": [{"role", "name", "text"}...]}`):
//! 1. the default 25-item lookback with the lexical selector;
//! 2. the whole 2,000-item history under the token budget (what the peers do);
//!
//! each as the whole tool answer (`get_chat_history_context`: items, rendered payload and prompt) and as the
//! prompt alone (`get_chat_history_prompt`, what a bot sends to its model).
//! Prints p50 and p99 in microseconds as JSON.
//! Run: `cargo run --release -p chatctx --example history_bench -- FILE`

// `json!` expands to an internal `unwrap` on serializing plain values, which cannot fail.
#![allow(clippy::disallowed_methods)]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Instant;

use chatctx_core::settings::{Mode, Selector, Settings};
use chatctx_core::tools::GetChatHistoryContext;
use chatctx_core::{Engine, Event};
use serde_json::{Value, json};

fn engine(messages: &[Value], settings: Settings) -> Engine {
    let mut e = Engine::new(settings);
    for (i, m) in messages.iter().enumerate() {
        let bot = m["role"] == "assistant";
        let v = json!({"type": "message", "chat_id": "-1", "message_id": (i + 1).to_string(),
            "kind": if bot { "outbound_agent" } else { "inbound_user" }, "sent_at": 1_770_000_000 + i as i64 * 30,
            "sender": {"user_id": m["name"], "username": m["name"], "is_bot": bot}, "text": m["text"], "triggered_agent": true});
        if let Ok(ev) = Event::decode(&v) {
            let _ = e.apply(ev);
        }
    }
    e
}

/// Times `call` (which returns how many items it kept) `runs` times: p50, p99 in µs, and the items kept.
fn measure(runs: usize, mut call: impl FnMut() -> usize) -> (f64, f64, usize) {
    let mut us = Vec::with_capacity(runs);
    let mut kept = 0;
    for _ in 0..runs {
        let t = Instant::now();
        kept = call();
        us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    us.sort_by(f64::total_cmp);
    (us[runs / 2], us[(runs * 99) / 100], kept)
}

/// The full answer (items, rendered payload and prompt), then the prompt alone, for the newest message.
fn cases(name: &str, e: &Engine, current: usize, runs: usize) {
    let req = GetChatHistoryContext {
        scope: chatctx_core::tools::Scope {
            channel: "telegram".into(),
            topic_id: None,
            current_message_id: Some(current.to_string()),
            ..chatctx_core::tools::Scope::chat("-1")
        },
        now: None,
    };
    let full = measure(runs, || e.get_chat_history_context(&req).map_or(0, |h| h.items.len()));
    let prompt = measure(runs, || e.get_chat_history_prompt(&req).map_or(0, |p| p.selection.kept));
    for (what, (p50, p99, kept)) in [("get_chat_history_context", full), ("get_chat_history_prompt", prompt)] {
        println!("{}", json!({"case": format!("{name}: {what}"), "p50_us": p50, "p99_us": p99, "kept": kept}));
    }
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "bench/out/history.json".to_owned());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let messages = doc["messages"].as_array().cloned().unwrap_or_default();
    let budget = doc["budget"].as_u64().unwrap_or(2000) as usize;
    let n = messages.len();

    let mut s = Settings::default();
    s.history.mode = Mode::Talkative;
    s.conversation.cache_max_per_conversation = n + 1;
    s.conversation.selector = Selector::Lexical;
    let lookback = engine(&messages, s.clone());
    cases("lookback 25, lexical", &lookback, n, 2000);

    s.conversation.lookback_count = n;
    s.conversation.use_selection = false;
    s.conversation.max_context_tokens = budget;
    let budgeted = engine(&messages, s);
    cases(&format!("{n} messages, token budget {budget}"), &budgeted, n, 2000);
}
