//! `delete` events (docs/protocol.md §3.7): a deleted message leaves the history, its objects, the reactions
//! that quote it and the indexes; nothing else changes.

use chatctx_core::ErrorCode;
use chatctx_core::tools::Request;
use chatctx_core::tools::range::GetChatHistoryRange;

use super::*;

fn talkative() -> Settings {
    let mut s = Settings::default();
    s.history.mode = Mode::Talkative;
    s
}

fn with_photo() -> Engine {
    let photo = ev(json!({"type": "message", "chat_id": "-1", "message_id": "1", "kind": "inbound_user",
        "sent_at": T0, "sender": user("1", "Ann"), "text": "SECRET caption",
        "attachments": [{"kind": "media.image", "label": "cat.jpg"}]}));
    let reaction = ev(json!({"type": "reaction", "chat_id": "-1", "message_id": "1", "sender": user("2", "Bob"),
        "emoji": ["🔥"], "sent_at": T0 + 5}));
    let reminder = ev(json!({"type": "object", "op": "upsert", "at": T0 + 6, "object": {"chat_id": "-1",
        "object_id": "r1", "kind": "reminder", "title_or_label": "call mom", "source_message_id": "1"}}));
    let after = msg("-1", None, 2, user("2", "Bob"), "nice", false, 10);
    engine(talkative(), [photo, reaction, reminder, after])
}

fn delete(ids: Value) -> Event {
    ev(json!({"type": "delete", "chat_id": "-1", "message_ids": ids}))
}

#[test]
fn a_deleted_message_leaves_history_objects_reactions_and_indexes() {
    let mut e = with_photo();
    assert_eq!(e.history("telegram", "-1", None).unwrap().len(), 3, "photo, reaction, reply");
    assert!(e.objects("telegram", "-1").unwrap().iter().any(|o| &*o.object_id == "1:media.image"));

    let applied = e.apply(delete(json!([1, "404"]))).unwrap();
    assert!(applied.edited, "counted as a text change, so the log is compacted");
    let left: Vec<String> = e.history("telegram", "-1", None).unwrap().into_iter().map(|i| i.text).collect();
    assert_eq!(left, ["nice"], "the message and the reaction quoting it are gone");
    assert!(e.message("telegram", "-1", "1").is_none());
    let objects = e.objects("telegram", "-1").unwrap();
    assert!(objects.iter().all(|o| &*o.object_id != "1:media.image"), "its photo is gone");
    let reminder = objects.iter().find(|o| &*o.object_id == "r1").expect("an explicit object stays");
    assert_eq!((reminder.source_message_id.as_deref(), reminder.caption.as_deref()), (None, None));
    let page = e.get_chat_history_range(&GetChatHistoryRange::decode(&json!({"chat_id": "-1"})).unwrap()).unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(page.truncated.is_none(), "a deletion is not a truncation");
    let doc = serde_json::to_string(&e.export_conversation("telegram", "-1").unwrap()).unwrap();
    assert!(!doc.contains("SECRET"), "the text is nowhere in the chat's document: {doc}");
    assert!(!e.apply(delete(json!(["1"]))).unwrap().edited, "deleting it again changes nothing");
}

#[test]
fn deleting_in_a_chat_not_held_creates_nothing_and_bad_events_are_named() {
    let mut e = Engine::new(talkative());
    e.apply(delete(json!(["1"]))).unwrap();
    assert_eq!(e.chat_count(), 0);
    for (v, field) in [
        (json!({"type": "delete", "chat_id": "-1"}), "message_ids"),
        (json!({"type": "delete", "chat_id": "-1", "message_ids": []}), "message_ids"),
        (json!({"type": "delete", "chat_id": "-1", "message_ids": [1.5]}), "message_ids"),
        (json!({"type": "delete", "message_ids": ["1"]}), "chat_id"),
        (json!({"type": "delete", "chat_id": "-1", "message_ids": vec!["1"; 1001]}), "message_ids"),
    ] {
        let err = Event::decode(&v).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidEvent);
        assert!(err.message.contains(&format!("`{field}`")), "{v}: {}", err.message);
    }
}

#[test]
fn replaying_the_same_events_with_a_delete_gives_the_same_state() {
    let events = || {
        let mut e = with_photo();
        e.apply(delete(json!(["1"]))).unwrap();
        e.apply(msg("-1", None, 3, user("1", "Ann"), "again", false, 20)).unwrap();
        serde_json::to_string(&e.export_conversation("telegram", "-1").unwrap()).unwrap()
    };
    assert_eq!(events(), events());
}
