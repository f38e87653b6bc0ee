//! Conversation documents as JSON: [`ConversationDoc::nesting_bound`] is never below how deeply the document's JSON
//! nests (a writer trusts it to skip the scan of a snapshot line), and never more than a few levels above it; a
//! chat's document borrowed from the engine ([`chatctx_core::engine::ConversationView`]) serializes to the bytes of
//! the document exported.

use chatctx_core::Settings;
use chatctx_core::json::nesting;
use chatctx_core::transfer::ConversationDoc;
use serde_json::{Value, json};

/// A value `depth` levels deep (0: a scalar), arrays and objects in turn.
fn deep(depth: usize) -> Value {
    (0..depth).fold(json!("leaf"), |inner, level| if level % 2 == 0 { json!([inner]) } else { json!({"k": inner}) })
}

fn map(depth: usize) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("plan".into(), deep(depth.saturating_sub(1)));
    m
}

/// A document with every part of its shape: a quote, a bot's actions, an object with a file, people, a state with
/// revisions (whose deltas are the deepest part of the shape).
fn doc() -> ConversationDoc {
    let mut e = super::engine(
        Settings::default(),
        [
            super::ev(json!({"type": "message", "chat_id": "7", "message_id": "1", "kind": "inbound_user",
                "sent_at": super::T0, "sender": super::user("1", "Ann"), "text": "look",
                "quote": {"sender": {"user_id": "2"}, "text": "earlier"},
                "attachments": [{"kind": "media.image", "label": "a.png", "file": {"file_id": "F", "file_unique_id": "U"}}]})),
            super::ev(json!({"type": "message", "chat_id": "7", "message_id": "2", "kind": "outbound_agent",
                "sent_at": super::T0 + 5, "sender": {"user_id": "999", "is_bot": true}, "text": "done",
                "actions": ["sent_photo"]})),
        ],
    );
    let now = chatctx_core::Timestamp::from_unix(super::T0 + 10).unwrap();
    for patch in [json!({"a": 1}), json!({"b": {"c": [1]}})] {
        e.call("update_scenario", &json!({"chat_id": "7", "patch": patch}), now).unwrap();
    }
    e.export_conversation("telegram", "7").unwrap()
}

#[test]
fn the_bound_holds_for_states_and_patches_of_any_depth() {
    let base = doc();
    assert!(!base.scenarios[0].revisions.is_empty() && base.history[0].quote.is_some());
    let mut checked = 0;
    let shapes =
        [(0, 0, 0, 0), (1, 1, 1, 0), (3, 0, 7, 2), (40, 2, 1, 0), (1, 90, 3, 5), (2, 1, 130, 1), (0, 0, 1, 150)];
    for (state, old, patch, delta) in shapes.into_iter().chain([(200, 199, 201, 202)]) {
        let mut d = base.clone();
        d.scenarios[0].state = map(state);
        d.scenarios[0].base = map(old);
        for r in &mut d.scenarios[0].revisions {
            r.patch = deep(patch);
            r.delta = vec![("k".into(), Some(deep(delta))), ("gone".into(), None)];
        }
        let actual = nesting(serde_json::to_string(&d).unwrap().as_bytes());
        let bound = d.nesting_bound();
        let case = format!("state {state}, base {old}, patch {patch}, delta {delta}: nests {actual}, bound {bound}");
        assert!(actual <= bound, "{case}");
        assert!(bound <= actual + 4, "{case}");
        checked += 1;
    }
    assert_eq!(checked, 8);
    // No state at all: the shape alone.
    let mut bare = base;
    bare.scenarios.clear();
    let actual = nesting(serde_json::to_string(&bare).unwrap().as_bytes());
    assert!(actual <= bare.nesting_bound() && bare.nesting_bound() <= actual + 4);
}

/// Every part a document may have, each present: a chat type, titles, a workspace, topics, a summary, mentions,
/// threads; besides `doc()`'s quote, actions, file and state.
fn full() -> chatctx_core::Engine {
    let mut v = serde_json::to_value(doc()).unwrap();
    v["chat_type"] = json!("supergroup");
    v["title"] = json!("Tea club");
    v["topic_titles"] = json!({"5": "Cakes"});
    v["workspace_id"] = json!("W1");
    v["history"][1]["topic_id"] = json!("5");
    v["mentions"] = json!({"@ann": "[Ann](tg:@ann)"});
    v["threads"] = json!(["7:t1"]);
    v["summaries"] = json!([{"text": "they met", "covers_until_message_id": "1", "covers_until_at": super::T0,
        "message_count": 1, "written_at": super::T0 + 9, "revision": 1, "source": "bot"}]);
    let mut e = chatctx_core::Engine::new(Settings::default());
    e.import_conversation(&v).unwrap();
    e
}

#[test]
fn a_borrowed_document_writes_the_exported_bytes() {
    let mut busy = chatctx_core::Engine::new(Settings::default());
    let mut chats = std::collections::BTreeSet::new();
    for v in super::synth::Synth::new(5, 3).take(3_000) {
        chats.insert(v["chat_id"].as_str().unwrap().to_owned());
        busy.apply(super::ev(v)).unwrap();
    }
    let engines = [(full(), vec!["7".to_owned()]), (busy, chats.into_iter().collect())];
    let mut compared = 0;
    for (e, chats) in &engines {
        for chat in chats {
            let exported = e.export_conversation("telegram", chat).unwrap();
            let view = e.conversation_view("telegram", chat).unwrap();
            assert_eq!(serde_json::to_string(&view).unwrap(), serde_json::to_string(&exported).unwrap(), "chat {chat}");
            assert_eq!(view.nesting_bound(), exported.nesting_bound());
            assert_eq!(view.into_doc(), exported);
            compared += 1;
        }
    }
    assert!(compared >= 6, "{compared} chats");
    // Every optional part was there to compare.
    let doc = serde_json::to_value(engines[0].0.export_conversation("telegram", "7").unwrap()).unwrap();
    for part in ["chat_type", "title", "topic_titles", "workspace_id", "mentions", "threads", "summaries"] {
        assert!(doc.get(part).is_some(), "{part} missing from {doc}");
    }
    assert!(
        doc["history"].as_array().unwrap().iter().any(|i| i.get("topic_id").is_some() && i.get("actions").is_some())
    );
}
