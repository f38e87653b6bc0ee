//! Integration tests of the core engine.
#![allow(clippy::disallowed_methods)]

mod budget;
mod delete;
mod directory;
mod documents;
mod engine;
mod layout;
mod policy;
mod properties;
mod range;
mod render;
mod scenario;
mod schemas;
mod selection;
mod summary;
// The benchmarks' generator of synthetic conversations, tested here.
#[allow(dead_code)]
#[path = "../../benches/support/synth.rs"]
mod synth;

#[test]
fn every_synthetic_event_is_valid_and_the_stream_is_reproducible() {
    let a: Vec<Value> = synth::Synth::new(7, 1).take(2000).collect();
    let b: Vec<Value> = synth::Synth::new(7, 1).take(2000).collect();
    assert_eq!(a, b);
    for v in &a {
        assert!(Event::decode(v).is_ok(), "{v}");
    }
}
mod tools_props;

use chatctx_core::settings::{Mode, Policy, Scope};
use chatctx_core::tools::{GetChatHistoryContext, HistoryContext};
use chatctx_core::{Engine, Event, Settings, Timestamp};
use serde_json::{Value, json};

pub const T0: i64 = 1_770_970_800; // 2026-02-13T08:20:00Z

/// A message event from JSON, as a client would send it.
pub fn ev(v: Value) -> Event {
    Event::decode(&v).unwrap_or_else(|e| panic!("{e}: {v}"))
}

pub fn user(id: &str, name: &str) -> Value {
    json!({"user_id": id, "username": name.to_lowercase(), "first_name": name})
}

/// An inbound message `id` in `chat` (topic optional) from `who`, `dt` seconds after T0.
pub fn msg(chat: &str, topic: Option<&str>, id: u32, who: Value, text: &str, triggered: bool, dt: i64) -> Event {
    let mut v = json!({"type": "message", "chat_id": chat, "message_id": id.to_string(), "kind": "inbound_user",
                       "sent_at": T0 + dt, "sender": who, "text": text, "triggered_agent": triggered});
    if let Some(t) = topic {
        v["topic_id"] = json!(t);
    }
    ev(v)
}

pub fn bot_reply(chat: &str, topic: Option<&str>, id: u32, reply_to: u32, text: &str, dt: i64) -> Event {
    let mut v = json!({"type": "message", "chat_id": chat, "message_id": id.to_string(), "kind": "outbound_agent",
                       "reply_to_message_id": reply_to.to_string(), "sent_at": T0 + dt,
                       "sender": {"user_id": "999", "username": "my_bot", "display_name": "My Bot", "is_bot": true}, "text": text});
    if let Some(t) = topic {
        v["topic_id"] = json!(t);
    }
    ev(v)
}

pub fn settings(mode: Mode, scope: Scope) -> Settings {
    let mut s = Settings::default();
    s.history.mode = mode;
    s.history.policy = Policy::ModeCap;
    s.history.scope = scope;
    s
}

pub fn engine(s: Settings, events: impl IntoIterator<Item = Event>) -> Engine {
    let mut e = Engine::new(s);
    for x in events {
        e.apply(x).unwrap();
    }
    e
}

pub fn history(e: &Engine, chat: &str, topic: Option<&str>, current: Option<u32>) -> HistoryContext {
    e.get_chat_history_context(&GetChatHistoryContext {
        scope: chatctx_core::tools::Scope {
            channel: "telegram".into(),
            topic_id: topic.map(Into::into),
            current_message_id: current.map(|c| c.to_string()),
            ..chatctx_core::tools::Scope::chat(chat)
        },
        now: Timestamp::from_unix(T0 + 10_000),
    })
    .unwrap()
}

pub fn texts(h: &HistoryContext) -> Vec<&str> {
    h.items.iter().map(|i| i.text).collect()
}
