//! Selection plus rendering speed (`get_chat_history_context`), on the history written by
//! `bench/peers/compare.sh` (JSON: `{"budget": N, "messages": [{"role", "name", "text"}...]}`):
//! 1. the default 25-item lookback with the lexical selector;
//! 2. the whole 2,000-item history under the token budget (what the peers do);
//! 3. the same on a Slack-style chat whose speakers are named only by its workspace's people directory
//!    (docs/protocol.md §3.11; the names arrive after the messages), to hold that names cost nothing to answer;
//!
//! each as the whole tool answer (`get_chat_history_context`: items, rendered payload and prompt) and as the
//! prompt alone (`get_chat_history_prompt`, what a bot sends to its model).
//! Prints p50 and p99 in microseconds as JSON.
//! Run: `cargo run --release -p chatctx --example history_bench -- FILE [--telegram-only]`

// `json!` expands to an internal `unwrap` on serializing plain values, which cannot fail.
#![allow(clippy::disallowed_methods)]

#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

use std::time::Instant;

use chatctx_core::settings::{Mode, Selector, Settings};
use chatctx_core::tools::GetChatHistoryContext;
use chatctx_core::{Engine, Event};
use serde_json::{Value, json};

fn engine(messages: &[Value], settings: Settings, channel: &str) -> Engine {
    let mut e = Engine::new(settings);
    for (i, m) in messages.iter().enumerate() {
        let bot = m["role"] == "assistant";
        let v = json!({"type": "message", "channel": channel, "chat_id": "-1", "workspace_id": "T1",
            "message_id": (i + 1).to_string(),
            "kind": if bot { "outbound_agent" } else { "inbound_user" }, "sent_at": 1_770_000_000 + i as i64 * 30,
            "sender": {"user_id": m["name"], "username": m["name"], "is_bot": bot}, "text": m["text"], "triggered_agent": true});
        if let Ok(ev) = Event::decode(&v) {
            let _ = e.apply(ev);
        }
    }
    if channel != "telegram" {
        // Every speaker's name, learned from the directory after their messages were stored.
        let mut names: Vec<&str> = messages.iter().filter_map(|m| m["name"].as_str()).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let p = json!({"type": "person", "channel": channel, "workspace_id": "T1", "user_id": name,
                "display_name": format!("{name} (from the directory)")});
            if let Ok(ev) = Event::decode(&p) {
                let _ = e.apply(ev);
            }
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
fn cases(name: &str, e: &Engine, channel: &str, current: usize, runs: usize) {
    let req = GetChatHistoryContext {
        scope: chatctx_core::tools::Scope {
            channel: channel.into(),
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
    let lookback = engine(&messages, s.clone(), "telegram");
    cases("lookback 25, lexical", &lookback, "telegram", n, 2000);

    s.conversation.lookback_count = n;
    s.conversation.use_selection = false;
    s.conversation.max_context_tokens = budget;
    let budgeted = engine(&messages, s.clone(), "telegram");
    cases(&format!("{n} messages, token budget {budget}"), &budgeted, "telegram", n, 2000);
    // `--telegram-only`: the cases an earlier version has too, for instruction counts before and after.
    if std::env::args().nth(2).as_deref() != Some("--telegram-only") {
        let named = engine(&messages, s, "slack");
        cases(&format!("{n} messages, token budget {budget}, names from the directory"), &named, "slack", n, 2000);
    }
}
