//! What the timing benchmarks share: a forum of 2,000 messages (five topics, replies, 500 attachments) and
//! alternating-round timing, so that drift of the machine falls on both sides of a comparison alike.

use std::time::Instant;

use chatctx_core::settings::{Mode, Selector};
use chatctx_core::{Engine, Event, Settings, Timestamp};
use serde_json::json;

pub const T0: i64 = 1_770_000_000;
pub const CHAT: &str = "-1009999999";
pub const ROUNDS: usize = 40;
pub const PER_ROUND: usize = 2_000;

/// The forum, in an engine with `settings` (the cap, the lexical selector and talkative mode are set here).
pub fn forum(mut settings: Settings) -> (Engine, Timestamp) {
    settings.conversation.cache_max_per_conversation = 2000;
    settings.conversation.selector = Selector::Lexical;
    settings.history.mode = Mode::Talkative;
    let mut e = Engine::new(settings);
    let kinds = ["media.image", "media.pdf", "media.voice", "poll"];
    let mut now = T0;
    for m in 1..=2000u32 {
        now = T0 + i64::from(m) * 30;
        let user = m % 20;
        let mut v = json!({"type": "message", "chat_id": CHAT, "message_id": m.to_string(),
            "kind": if m.is_multiple_of(10) { "outbound_agent" } else { "inbound_user" }, "sent_at": now,
            "sender": {"user_id": (1000 + user).to_string(), "username": format!("user{user}"), "first_name": format!("User {user}")},
            "text": format!("message {m} about the deploy, the plan and the {} release", ["alpha", "beta", "rc"][(m % 3) as usize]),
            "triggered_agent": m.is_multiple_of(3)});
        if m % 5 != 0 {
            v["topic_id"] = json!((m % 5).to_string());
        }
        if m.is_multiple_of(3) && m > 5 {
            v["reply_to_message_id"] = json!((m - 5).to_string());
        }
        if m.is_multiple_of(4) {
            v["attachments"] = json!([{"kind": kinds[(m / 4 % 4) as usize], "label": format!("file {m}")}]);
        }
        if let Ok(ev) = Event::decode(&v) {
            let _ = e.apply(ev);
        }
    }
    (e, Timestamp::from_unix(now + 60).unwrap_or_default())
}

/// The `p` quantile of `v`.
pub fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Per-call µs of `f` over `PER_ROUND` calls, one figure per round.
pub fn round(mut f: impl FnMut(usize)) -> f64 {
    let t = Instant::now();
    for i in 0..PER_ROUND {
        f(i);
    }
    t.elapsed().as_secs_f64() * 1e6 / PER_ROUND as f64
}
