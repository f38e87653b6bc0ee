//! A plain loop of tool calls for profilers and instruction counts (`valgrind --tool=callgrind`): the forum of
//! the `decisions` benchmark (2,000 messages, 500 objects), then `resolve_reference_target` 2,000 times or
//! `get_chat_history_context` 500 times, with decision records off or on (`"explain": true` builds the record
//! that `[decisions] keep > 0` keeps). `bench/instructions.sh` counts each; the difference is what a record costs.
//! Run: `cargo run --release -p chatctx-core --example records_profile -- resolve|history off|on`

// `json!` expands to an internal `unwrap` on serializing plain values, which cannot fail.
#![allow(clippy::disallowed_methods)]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use chatctx_core::Settings;
use chatctx_core::tools::resolve::ResolveReferenceTarget;
use chatctx_core::tools::{GetChatHistoryContext, Request};
use serde_json::json;
use std::hint::black_box;

#[allow(dead_code)]
#[path = "../benches/support/forum.rs"]
mod forum;

use forum::CHAT;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (tool, explain) = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [tool @ ("resolve" | "history"), records @ ("off" | "on")] => (tool.to_owned(), records == "on"),
        _ => {
            eprintln!("usage: records_profile resolve|history off|on");
            std::process::exit(2);
        }
    };
    let (mut e, now) = forum::forum(Settings::default());
    let messages = 1901..=2000u32;
    if tool == "history" {
        let reqs: Vec<GetChatHistoryContext> = messages
            .filter_map(|m| {
                GetChatHistoryContext::decode(
                    &json!({"chat_id": CHAT, "current_message_id": m.to_string(), "explain": explain}),
                )
                .ok()
            })
            .collect();
        for _ in 0..5 {
            for r in &reqs {
                drop(black_box(e.get_chat_history_context(r)));
            }
        }
    } else {
        let hint = [json!({}), json!({"target_kind_hint": "image"}), json!({"positional_hint": "latest"})];
        let reqs: Vec<ResolveReferenceTarget> = messages
            .filter_map(|m| {
                ResolveReferenceTarget::decode(&json!({"chat_id": CHAT, "current_message_id": m.to_string(),
                    "explain": explain, "sender_user_id": (1000 + m % 20).to_string(),
                    "normalized_reference_hints": hint[(m % 3) as usize]}))
                .ok()
            })
            .collect();
        for _ in 0..20 {
            for r in &reqs {
                drop(black_box(e.resolve_reference_target(r, now)));
            }
        }
    }
}
