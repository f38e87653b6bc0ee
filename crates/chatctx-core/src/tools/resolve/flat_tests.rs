//! The flat candidate array equals what the slab gives after random ingest through the engine: messages with
//! attachments and links (in topics and not), edits that change or drop them, deletions, activations, object
//! events (registered, moved to another topic, closed, deleted), resolutions (which register message
//! candidates) and evictions (small caps on messages and objects).
#![allow(clippy::disallowed_methods)] // tests fail loudly on purpose

use crate::tools::Request;
use crate::tools::resolve::ResolveReferenceTarget;
use crate::{Engine, Event, Settings};
use proptest::prelude::{ProptestConfig, Strategy, any, prop_assert_eq, prop_oneof, proptest};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
enum Op {
    /// message id, topic, sender, attachment kinds (0 = none), a link
    Message(u8, Option<u8>, u8, u8, bool),
    Delete(u8),
    Activate(u8, u8),
    /// object id, topic, source message, close it
    Object(u8, Option<u8>, u8, bool),
    DeleteObject(u8),
    Resolve(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..30, proptest::option::of(0u8..3), 0u8..4, 0u8..4, any::<bool>())
            .prop_map(|(m, t, u, k, l)| Op::Message(m, t, u, k, l)),
        1 => (0u8..30).prop_map(Op::Delete),
        2 => (0u8..30, 0u8..4).prop_map(|(m, k)| Op::Activate(m, k)),
        2 => (0u8..6, proptest::option::of(0u8..3), 0u8..30, any::<bool>())
            .prop_map(|(o, t, m, c)| Op::Object(o, t, m, c)),
        1 => (0u8..6).prop_map(Op::DeleteObject),
        2 => (0u8..30, 0u8..4).prop_map(|(m, u)| Op::Resolve(m, u)),
    ]
}

const KINDS: [&str; 4] = ["photo", "pdf", "poll", "voice"];
const OBJECT_IDS: [&str; 4] = ["media.image", "media.pdf", "poll", "media.voice"];

fn event(op: &Op, at: i64) -> Option<Value> {
    let topic = |t: &Option<u8>| t.map(|t| Value::String(t.to_string())).unwrap_or(Value::Null);
    Some(match op {
        Op::Message(m, t, u, k, link) => {
            let mut v = json!({"type": "message", "chat_id": "-1", "message_id": m.to_string(), "kind": "inbound_user",
                "sent_at": at, "sender": {"user_id": u.to_string(), "username": format!("u{u}")},
                "text": if *link { "see https://example.org/a" } else { "plain words" }, "triggered_agent": true});
            if t.is_some() {
                v["topic_id"] = topic(t);
            }
            if *k > 0 {
                v["attachments"] = json!([{"kind": KINDS[usize::from(*k)], "label": format!("file {m}")}]);
            }
            if *link {
                v["entities"] = json!([{"type": "url", "offset": 4, "length": 21}]);
            }
            v
        }
        Op::Delete(m) => json!({"type": "delete", "chat_id": "-1", "message_ids": [m.to_string()]}),
        Op::Activate(m, k) => json!({"type": "activation", "chat_id": "-1", "at": at, "event": "described",
            "object_id": format!("{m}:{}", OBJECT_IDS[usize::from(*k)])}),
        Op::Object(o, t, m, close) if *close => json!({"type": "object", "op": "close", "at": at,
            "object": {"object_id": format!("obj-{o}"), "kind": "reminder", "chat_id": "-1", "topic_id": topic(t),
                       "source_message_id": m.to_string()}}),
        Op::Object(o, t, m, _) => json!({"type": "object", "op": "upsert", "at": at, "activation": "created",
            "object": {"object_id": format!("obj-{o}"), "kind": "reminder", "chat_id": "-1", "topic_id": topic(t),
                       "source_message_id": m.to_string(), "created_by_user_id": (o % 3).to_string()}}),
        Op::DeleteObject(o) => json!({"type": "object", "op": "delete", "at": at,
            "object": {"object_id": format!("obj-{o}"), "kind": "reminder", "chat_id": "-1"}}),
        Op::Resolve(..) => return None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_flat_array_equals_the_slab(ops in proptest::collection::vec(op(), 1..120)) {
        let mut settings = Settings::default();
        settings.conversation.cache_max_per_conversation = 8;
        settings.objects.max_per_chat = 10;
        let mut e = Engine::new(settings);
        for (i, op) in ops.iter().enumerate() {
            let at = 1_770_000_000 + i as i64 * 60;
            match event(op, at) {
                // Rejected events (an activation of an unknown object, say) change nothing.
                Some(v) => { let _ = Event::decode(&v).map(|ev| e.apply(ev)); }
                None => {
                    let Op::Resolve(m, u) = op else { continue };
                    let req = ResolveReferenceTarget::decode(&json!({"chat_id": "-1", "current_message_id": m.to_string(),
                        "sender_user_id": u.to_string(), "normalized_reference_hints": {"positional_hint": "latest"}}));
                    if let (Ok(req), Some(now)) = (req, crate::Timestamp::from_unix(at)) {
                        let _ = e.resolve_reference_target(&req, now);
                    }
                }
            }
            if let Some(chat) = e.chat("telegram", "-1") {
                prop_assert_eq!(chat.objects.check_flat(), Ok(()), "after {:?}", op);
            }
        }
    }
}
