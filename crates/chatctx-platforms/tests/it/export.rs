//! Telegram Desktop exports.

use chatctx_core::event::{EntityKind, Event, MessageKind};
use chatctx_core::kinds::ObjectKind;
use chatctx_platforms::telegram::export::import;
use serde_json::json;

use super::*;

fn sample() -> Value {
    json!({"name": "Dev Team", "type": "private_supergroup", "id": 789012, "messages": [
        {"id": 1, "type": "service", "date": "2025-01-10T09:00:00", "date_unixtime": "1736499600", "actor": "Alice", "actor_id": "user111", "action": "topic_created", "title": "Backend", "text": ""},
        {"id": 2, "type": "message", "date": "2025-01-10T09:05:00", "date_unixtime": "1736499900", "from": "Alice", "from_id": "user111", "reply_to_message_id": 1,
         "text": ["Let's discuss ", {"type": "mention", "text": "@bob"}, " 😀 see ", {"type": "link", "text": "https://a.org"}],
         "text_entities": [{"type": "plain", "text": "Let's discuss "}, {"type": "mention", "text": "@bob"}, {"type": "plain", "text": " 😀 see "}, {"type": "link", "text": "https://a.org"}]},
        {"id": 3, "type": "message", "date_unixtime": "1736499960", "from": "Bob", "from_id": "user222", "reply_to_message_id": 2,
         "text": "", "text_entities": [], "media_type": "voice_message", "file": "(File not included.)"},
        {"id": 4, "type": "message", "date_unixtime": "1736500000", "from": "Helper", "from_id": "user999", "text": "I can help",
         "text_entities": [{"type": "plain", "text": "I can help"}]},
        {"id": 5, "type": "message", "date_unixtime": "1736500100", "from": "News", "from_id": "channel555", "text": "",
         "photo": "(File not included.)", "text_entities": [{"type": "text_link", "text": "here", "href": "https://b.org"}]},
        {"id": 6, "type": "message", "from": "Nobody"}
    ]})
}

fn messages(events: &[Event]) -> Vec<&chatctx_core::event::MessageEvent> {
    events.iter().filter_map(|e| if let Event::Message(m) = e { Some(m) } else { None }).collect()
}

#[test]
fn single_chat_export() {
    let bot = Bot { user_id: Some("999".into()), username: None, triggered_agent: None };
    let out = import(&sample(), &bot).unwrap();
    let m = messages(&out.events);
    assert_eq!(m.len(), 5, "{:?}", out.warnings);
    assert_eq!(out.warnings.len(), 1, "message 6 has no id/date: {:?}", out.warnings);
    assert!(m.iter().all(|m| m.chat_id == "-100789012" && m.chat_type.as_deref() == Some("supergroup")));

    assert_eq!(
        (m[0].kind, m[0].topic_id.as_deref(), m[0].text.as_str()),
        (MessageKind::System, Some("1"), "created the topic “Backend”")
    );
    // In the topic, not a reply to its creation message; entities restored with UTF-16 offsets.
    assert_eq!((m[1].topic_id.as_deref(), m[1].reply_to_message_id.as_deref()), (Some("1"), None));
    assert_eq!(m[1].text, "Let's discuss @bob 😀 see https://a.org");
    assert_eq!(
        (m[1].entities[0].kind.clone(), m[1].entities[0].offset, m[1].entities[0].length),
        (EntityKind::Mention, 14, 4)
    );
    assert_eq!(
        (m[1].entities[1].kind.clone(), m[1].entities[1].offset),
        (EntityKind::Url, 26),
        "14 + 4 + \" 😀 see \" (😀 is two UTF-16 units)"
    );
    // A reply inherits its parent's topic.
    assert_eq!((m[2].topic_id.as_deref(), m[2].reply_to_message_id.as_deref()), (Some("1"), Some("2")));
    assert_eq!(m[2].attachments[0].kind, ObjectKind::MediaVoice);
    assert_eq!(m[3].kind, MessageKind::OutboundAgent, "the bot's messages by user id");
    assert_eq!(m[4].sender.as_ref().unwrap().user_id, "-100555", "a channel speaks as itself");

    let e = engine_with(out.events);
    let ids: Vec<String> =
        e.objects("telegram", "-100789012").unwrap().into_iter().map(|o| o.object_id.to_string()).collect();
    assert_eq!(ids, ["2:link:0", "3:media.voice", "5:link:0", "5:media.image"]);
    let h = e.history("telegram", "-100789012", Some("1")).unwrap();
    assert_eq!(h[1].text, "Let's discuss [@bob](tg:@bob) 😀 see https://a.org");
}

#[test]
fn account_export_and_chat_ids() {
    let v = json!({"about": "x", "chats": {"list": [
        {"name": "Ann", "type": "personal_chat", "id": 5, "messages": [{"id": 1, "type": "message", "date_unixtime": "100", "from": "Ann", "from_id": "user5", "text": "hi"}]},
        {"name": "G", "type": "private_group", "id": 6, "messages": [{"id": 1, "type": "message", "date_unixtime": "100", "from": "Ann", "from_id": "user5", "text": "hi"}]},
        {"name": "C", "type": "public_channel", "id": 7, "messages": [{"id": 1, "type": "message", "date_unixtime": "100", "from": "C", "from_id": "channel7", "text": "post"}]}
    ]}});
    let out = import(&v, &Bot::default()).unwrap();
    let chats: Vec<(&str, Option<&str>, bool)> =
        messages(&out.events).iter().map(|m| (m.chat_id.as_str(), m.chat_type.as_deref(), m.triggered_agent)).collect();
    assert_eq!(chats, [("5", Some("private"), true), ("-6", Some("group"), false), ("-1007", Some("channel"), false)]);
    assert!(import(&json!({"foo": 1}), &Bot::default()).is_err());
}

/// Exports carry no usernames: a bot named only by username is refused with the way out; an exported
/// message that keeps nothing (an unsupported kind) is skipped and counted, never an empty turn; one with no
/// author is not given one.
#[test]
fn no_invented_speakers_and_no_username_only_bot() {
    let by_name = Bot { user_id: None, username: Some("helper_bot".into()), triggered_agent: None };
    let e = import(&sample(), &by_name).unwrap_err();
    assert!(e.message.contains("--bot-user-id"), "{}", e.message);
    let export = json!({"name": "Bot chat", "type": "personal_chat", "id": 999, "messages": [
        {"id": 1, "type": "message", "date_unixtime": "1736500000", "from": "Bot", "from_id": "user999", "text": "",
         "text_entities": []},
        {"id": 2, "type": "message", "date_unixtime": "1736500010", "text": "who said this?",
         "text_entities": [{"type": "plain", "text": "who said this?"}]},
        {"id": 3, "type": "message", "date_unixtime": "1736500020", "from": "Ann", "from_id": "user5", "text": "hi",
         "text_entities": [{"type": "plain", "text": "hi"}]}
    ]});
    let out = import(&export, &Bot { user_id: Some("999".into()), username: None, triggered_agent: None }).unwrap();
    let kept = messages(&out.events);
    assert_eq!(kept.iter().map(|m| m.message_id.as_str()).collect::<Vec<_>>(), ["3"], "{:?}", out.warnings);
    assert!(out.warnings.iter().any(|w| w.contains("1 messages with no text")), "{:?}", out.warnings);
    assert!(out.warnings.iter().any(|w| w.contains("message #1 skipped") && w.contains("from")), "{:?}", out.warnings);
}

/// Desktop exports' service actions are worded as the Bot API path words them, by actor.
#[test]
fn exported_actions_are_worded() {
    let export = json!({"name": "G", "type": "private_supergroup", "id": 5, "messages": [
        {"id": 1, "type": "message", "date_unixtime": "1736500000", "from": "Ann", "from_id": "user1", "text": "lunch at noon",
         "text_entities": [{"type": "plain", "text": "lunch at noon"}]},
        {"id": 2, "type": "service", "date_unixtime": "1736500010", "actor": "Ann", "actor_id": "user1", "action": "pin_message", "message_id": 1},
        {"id": 3, "type": "service", "date_unixtime": "1736500020", "actor": "Bo", "actor_id": "user2", "action": "invite_members", "members": ["Bo"]},
        {"id": 4, "type": "service", "date_unixtime": "1736500030", "actor": "Ann", "actor_id": "user1", "action": "remove_members", "members": ["Bo"]},
        {"id": 5, "type": "service", "date_unixtime": "1736500040", "actor": "Ann", "actor_id": "user1", "action": "edit_chat_theme"},
        {"id": 6, "type": "service", "date_unixtime": "1736500050", "actor": "Ann", "actor_id": "user1", "action": "phone_call"}
    ]});
    let out = import(&export, &Bot { user_id: Some("999".into()), username: None, triggered_agent: None }).unwrap();
    let texts: Vec<&str> = messages(&out.events).iter().skip(1).map(|m| m.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "pinned Ann's message “lunch at noon”",
            "joined the chat",
            "removed Bo",
            "changed the chat theme",
            "made a call"
        ]
    );
}
