//! Chat titles and topic names through the service (docs/protocol.md §3.12): a Telegram group's title comes with
//! every message and is logged once; a title survives restart and compaction, shows in the chat list and in
//! conversation documents, and a credential limited to chats learns nothing of another chat's title.

use std::sync::Arc;

use chatctx::config::LlmSettings;
use chatctx::service::{Options, Service};
use chatctx_core::{ErrorCode, Settings, Timestamp};
use chatctx_store::{MemoryStore, Opened};
use serde_json::{Value, json};

fn now() -> Timestamp {
    Timestamp::from_unix(1_770_000_500).unwrap()
}

fn open(store: &Opened, compact_after: u64) -> Service {
    Service::open_with(Settings::default(), LlmSettings::default(), store.clone(), Options { compact_after }).unwrap().0
}

/// A forum group's message in topic 4, whose `reply_to_message` is the topic's creation.
fn update(id: u32, group: &str, topic: &str) -> Value {
    let chat = json!({"id": -1_001_500, "type": "supergroup", "is_forum": true, "title": group});
    let from = json!({"id": 42, "is_bot": false, "first_name": "Alice"});
    json!({"type": "telegram_update", "update": {"update_id": id, "message": {
        "message_id": 100 + id, "date": 1_770_000_000 + id, "chat": chat, "from": from, "text": format!("note {id}"),
        "is_topic_message": true, "message_thread_id": 4,
        "reply_to_message": {"message_id": 4, "date": 1_770_000_000, "chat": chat, "from": from,
            "is_topic_message": true, "message_thread_id": 4, "forum_topic_created": {"name": topic, "icon_color": 1}}}}})
}

fn lines(store: &Opened) -> Vec<String> {
    let Opened::Local(log) = store else { unreachable!() };
    let mut out = Vec::new();
    log.load(&mut |_, op| out.push(op.line)).unwrap();
    out
}

fn titles_logged(store: &Opened) -> usize {
    lines(store).iter().filter(|l| l.contains("\"type\":\"title\"")).count()
}

fn overview(svc: &Service) -> Value {
    let chats = svc.read(|e| e.chat_overviews_page(&|_, _| true, None, 10).0).unwrap();
    serde_json::to_value(&chats[0]).unwrap()
}

#[test]
fn a_title_is_logged_when_it_changes_and_survives_restart_and_compaction() {
    let store = Opened::Local(Arc::new(MemoryStore::default()));
    let svc = open(&store, 1_000);
    for id in 1..=3 {
        assert_eq!(svc.ingest(&[update(id, "Design team", "Logo")], now()).unwrap().accepted, 1);
    }
    assert_eq!(titles_logged(&store), 2, "the group's title and the topic's name, once each for three messages");
    let o = overview(&svc);
    assert_eq!((&o["title"], &o["topic_titles"]), (&json!("Design team"), &json!({"4": "Logo"})), "{o}");
    svc.ingest(&[update(4, "Design & brand", "Logo")], now()).unwrap();
    assert_eq!(titles_logged(&store), 3, "a rename is logged");
    drop(svc);
    let svc = open(&store, 1);
    assert_eq!(overview(&svc)["title"], "Design & brand", "after a restart");
    // A compaction writes the chat as a document, titles included.
    svc.ingest(&[update(5, "Design & brand", "Logo drafts")], now()).unwrap();
    let doc = svc.read(|e| e.export_conversation("telegram", "-1001500")).unwrap().unwrap();
    assert_eq!(
        (doc.title.as_deref(), doc.topic_titles.get("4").map(String::as_str)),
        (Some("Design & brand"), Some("Logo drafts"))
    );
    let logged = lines(&store);
    assert!(
        logged.len() == 1
            && logged[0].starts_with("{\"import\"")
            && logged[0].contains("\"topic_titles\":{\"4\":\"Logo drafts\"}"),
        "compacted into one document with its titles: {logged:?}"
    );
    drop(svc);
    let svc = open(&store, 1_000);
    assert_eq!(overview(&svc)["topic_titles"], json!({"4": "Logo drafts"}), "after compaction and restart");
}

#[test]
fn a_title_is_checked_like_any_event_and_a_limited_credential_learns_nothing_of_other_chats() {
    let store = Opened::Local(Arc::new(MemoryStore::default()));
    let svc = open(&store, 1_000);
    let title = |chat: &str, t: &str| json!({"type": "title", "channel": "slack", "chat_id": chat, "title": t});
    svc.ingest(&[title("C1", "general")], now()).unwrap();
    for bad in [
        json!({"type": "title", "chat_id": "C1", "title": "  "}),
        json!({"type": "title", "chat_id": "C1"}),
        json!({"type": "title", "chat_id": "C1", "title": "x".repeat(1025)}),
    ] {
        let r = svc.ingest(std::slice::from_ref(&bad), now()).unwrap();
        assert_eq!((r.accepted, r.rejected[0].code), (0, ErrorCode::InvalidEvent), "{bad}");
    }
    // Only C2 is allowed: a title of C1, the same as it holds or not, is refused alike.
    let only_c2 = |_: &str, chat: &str| chat == "C2";
    for t in ["general", "random"] {
        let r = svc.ingest_for(&[title("C1", t)], now(), &only_c2).unwrap();
        assert_eq!(r.rejected[0].code, ErrorCode::ForbiddenScope, "{t}");
    }
    assert_eq!(svc.ingest_for(&[title("C2", "ops")], now(), &only_c2).unwrap().accepted, 1);
    assert_eq!(svc.read(|e| e.title_of("slack", "C1", None).map(str::to_owned)).unwrap().as_deref(), Some("general"));
}
