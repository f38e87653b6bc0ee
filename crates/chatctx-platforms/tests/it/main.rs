//! Integration tests of the platform mappings: every Telegram fixture of `tests/data/telegram/` (sources and
//! licences in its SOURCES.md), the trigger inference, polls, Telegram Desktop exports, and the Discord and
//! Slack payloads of `tests/data/discord` and `tests/data/slack` (`discord_slack`).
#![allow(clippy::disallowed_methods)]

mod discord_slack;
mod export;
mod exports;
mod fidelity;
mod fixtures;
mod mapping;

use chatctx_core::event::{Event, MessageEvent};
use chatctx_core::{Engine, Settings, Timestamp};
use chatctx_platforms::telegram::map_update;
use chatctx_platforms::{Bot, Mapped};
use serde_json::{Value, json};

pub fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/data/telegram/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A bare Message fixture as an Update.
pub fn as_update(message: Value) -> Value {
    json!({"update_id": 1, "message": message})
}

pub fn bot() -> Bot {
    Bot { user_id: Some("999".into()), username: Some("my_bot".into()), triggered_agent: None }
}

pub fn received() -> Timestamp {
    Timestamp::from_unix(1_800_000_000).unwrap()
}

pub fn map(update: &Value) -> Mapped {
    map_update(update, &bot(), received()).unwrap_or_else(|e| panic!("mapping failed: {e}"))
}

/// The one message event an update maps to (beside the titles it tells, which [`titles`] reads).
pub fn message(update: &Value) -> MessageEvent {
    let m = map(update);
    let mut events = m.events.into_iter().filter(|e| !matches!(e, Event::Title(_)));
    match (events.next(), events.next()) {
        (Some(Event::Message(msg)), None) => msg,
        other => panic!("expected one message, got {other:?}"),
    }
}

/// The titles an update tells, as `(chat_id, topic_id, title)`.
pub fn titles(update: &Value) -> Vec<(String, Option<String>, String)> {
    map(update)
        .events
        .into_iter()
        .filter_map(|e| match e {
            Event::Title(t) => Some((t.chat_id, t.topic_id, t.title)),
            _ => None,
        })
        .collect()
}

/// An engine in talkative mode (so every item is visible) after applying `events`.
pub fn engine_with(events: Vec<Event>) -> Engine {
    let mut s = Settings::default();
    s.history.mode = chatctx_core::settings::Mode::Talkative;
    let mut e = Engine::new(s);
    e.apply_all(events).unwrap();
    e
}
