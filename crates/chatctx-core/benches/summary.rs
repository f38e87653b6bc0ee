//! What a conversation summary costs `get_chat_history_context` (docs/protocol.md §6.6): the forum of 2,000
//! messages in five topics, answered for its last 100 messages by two engines alike but for one thing: in the
//! second every topic has a summary (about 1,500 characters) covering its messages up to 1,700, older than
//! anything the 25-item lookback reaches, so both select the same items and the difference is the summary's
//! lookup, floor and rendering. Once without a token budget, once with `max_context_tokens = 2000` (the summary
//! then takes its share and the history the rest). Alternating rounds (ABAB…), medians.
//! Run: `cargo bench -p chatctx-core --bench summary`

// `json!` expands to an internal `unwrap` on serializing plain values, which cannot fail.
#![allow(clippy::disallowed_methods)]

#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

use std::hint::black_box;

use chatctx_core::tools::summary::UpdateSummary;
use chatctx_core::tools::{GetChatHistoryContext, Request};
use chatctx_core::{Engine, Settings};
use serde_json::json;

#[path = "support/forum.rs"]
mod forum;

use forum::{CHAT, ROUNDS, pct, round};

fn with_summaries(e: &mut Engine, now: chatctx_core::Timestamp) {
    let text = "The team agreed to ship the beta on Friday after the load test; Alice owns the rollback plan, \
        Bob the release notes. The alpha build failed twice on the deploy step (disk quota), fixed by raising \
        the quota to 50 GB. Open: whether the rc waits for the translation pass, and who reviews the pricing \
        page. Carol asked for a poll on the launch date; it closed with Tuesday 12 votes, Wednesday 4. "
        .repeat(4);
    // The newest message of each topic up to 1,700: topics 1-4 by m % 5, the general thread for multiples of 5.
    for m in 1696..=1700u32 {
        let req =
            UpdateSummary::decode(&json!({"chat_id": CHAT, "text": text, "covers_until_message_id": m.to_string()}));
        if let Ok(req) = req {
            let _ = e.update_summary(&req, now);
        }
    }
}

fn main() {
    let requests: Vec<GetChatHistoryContext> = (1901..=2000u32)
        .filter_map(|m| {
            GetChatHistoryContext::decode(&json!({"chat_id": CHAT, "current_message_id": m.to_string()})).ok()
        })
        .collect();
    println!("{} cores", std::thread::available_parallelism().map_or(0, |n| n.get()));
    for budget in [0, 2000] {
        let mut settings = Settings::default();
        settings.conversation.max_context_tokens = budget;
        let (plain, _) = forum::forum(settings.clone());
        let (mut summarized, now) = forum::forum(settings);
        with_summaries(&mut summarized, now);
        let (a, b) = (plain.get_chat_history_context(&requests[0]), summarized.get_chat_history_context(&requests[0]));
        let kept = |h: &Result<chatctx_core::tools::HistoryContext, _>| h.as_ref().map_or(0, |h| h.items.len());
        let has = b.as_ref().is_ok_and(|h| h.summary.is_some());
        println!(
            "max_context_tokens {budget}: {} items without a summary, {} with (summary in the answer: {has})",
            kept(&a),
            kept(&b)
        );
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            off.push(round(|i| drop(black_box(plain.get_chat_history_context(&requests[i % requests.len()])))));
            on.push(round(|i| drop(black_box(summarized.get_chat_history_context(&requests[i % requests.len()])))));
        }
        let (a50, b50) = (pct(off, 0.5), pct(on, 0.5));
        println!(
            "get_chat_history_context   no summary {a50:7.2} µs   summary {b50:7.2} µs   difference {:+5.1} %   (median of {ROUNDS} rounds; target < 10 %)",
            (b50 / a50 - 1.0) * 100.0
        );
    }
}
