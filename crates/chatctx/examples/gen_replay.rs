//! Writes a synthetic replay file: N events (about 90% plain chatctx events, 10% raw Telegram updates)
//! across 1,000 chats, with a `get_chat_history_context` call for the latest message after every 1,000 events.
//! Run: `cargo run --release -p chatctx --example gen_replay -- 100000 > /tmp/replay.jsonl`

// `json!` expands to an internal `unwrap` on serializing plain values, which cannot fail.
#![allow(clippy::disallowed_methods)]

use std::io::{BufWriter, Write};

// `json!` in the generator unwraps internally when it serializes plain strings and numbers, which cannot fail.
#[allow(clippy::disallowed_methods, dead_code)]
#[path = "../../chatctx-core/benches/support/synth.rs"]
mod synth;
use serde_json::json;
use synth::Synth;

fn main() -> std::io::Result<()> {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut synth = Synth::new(1000, 42);
    for i in 0..n {
        let ev = synth.next_event();
        if i % 10 == 9 && ev["type"] == "message" && ev["kind"] == "inbound_user" {
            // The same message as a raw Bot API update, as a webhook would forward it.
            let update = json!({"update_id": i, "message": {
                "message_id": ev["message_id"].as_str().and_then(|s| s.parse::<i64>().ok()),
                "date": ev["sent_at"],
                "chat": {"id": ev["chat_id"].as_str().and_then(|s| s.parse::<i64>().ok()), "type": "supergroup", "title": "Synthetic"},
                "from": {"id": ev["sender"]["user_id"].as_str().and_then(|s| s.parse::<i64>().ok()), "is_bot": false,
                         "first_name": ev["sender"]["first_name"], "username": ev["sender"]["username"]},
                "text": ev["text"], "entities": ev.get("entities").cloned().unwrap_or(json!([]))}});
            writeln!(
                out,
                "{}",
                json!({"event": {"type": "telegram_update", "bot": {"user_id": "999", "username": "synth_bot"}, "update": update}})
            )?;
        } else {
            writeln!(out, "{}", json!({"event": ev}))?;
        }
        if i % 1000 == 999 {
            let mut args = json!({"chat_id": ev["chat_id"]});
            if ev["type"] == "message" {
                args["current_message_id"] = ev["message_id"].clone();
            }
            writeln!(out, "{}", json!({"call": "get_chat_history_context", "args": args}))?;
        }
    }
    out.flush()
}
