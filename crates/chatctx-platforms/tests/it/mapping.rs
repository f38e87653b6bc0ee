//! Trigger inference, the bot's own messages, polls, edits and robustness.

use chatctx_core::ErrorCode;
use chatctx_core::event::{Event, MessageKind};
use chatctx_core::kinds::{Activation, ObjectKind};
use chatctx_platforms::map_wrapped;
use chatctx_platforms::telegram::Telegram;
use proptest::prelude::*;
use serde_json::json;

use super::*;

fn group_msg(id: i64, from: Value, text: &str) -> Value {
    json!({"message_id": id, "date": 1_770_970_800 + id, "chat": {"id": -100500, "type": "supergroup", "title": "G"},
           "from": from, "text": text})
}

fn alice() -> Value {
    json!({"id": 42, "is_bot": false, "first_name": "Alice", "username": "alice"})
}

fn the_bot() -> Value {
    json!({"id": 999, "is_bot": true, "first_name": "My Bot", "username": "my_bot"})
}

#[test]
fn trigger_inference() {
    let plain = group_msg(1, alice(), "hello everyone");
    assert!(!message(&as_update(plain)).triggered_agent);

    let mut mention = group_msg(2, alice(), "hey @My_Bot, help");
    mention["entities"] = json!([{"type": "mention", "offset": 4, "length": 7}]);
    assert!(message(&as_update(mention)).triggered_agent, "mention by entity, any case");

    assert!(message(&as_update(group_msg(3, alice(), "ping @my_bot"))).triggered_agent, "@username in text");
    assert!(
        !message(&as_update(group_msg(4, alice(), "ping @my_bot_fan"))).triggered_agent,
        "a longer username is someone else"
    );

    let mut tm = group_msg(5, alice(), "Bot, help");
    tm["entities"] = json!([{"type": "text_mention", "offset": 0, "length": 3, "user": the_bot()}]);
    assert!(message(&as_update(tm)).triggered_agent, "text_mention of the bot");

    let mut reply = group_msg(6, alice(), "and then?");
    reply["reply_to_message"] = group_msg(5, the_bot(), "earlier answer");
    assert!(message(&as_update(reply)).triggered_agent, "a reply to the bot");

    let mut reply_other = group_msg(7, alice(), "and then?");
    reply_other["reply_to_message"] = group_msg(5, json!({"id": 43, "first_name": "Bob"}), "x");
    assert!(!message(&as_update(reply_other)).triggered_agent);

    // The bot's own decision wins.
    let ev = json!({"type": "telegram_update", "bot": {"user_id": "999", "username": "my_bot"}, "triggered_agent": true,
                    "update": as_update(group_msg(8, alice(), "no mention"))});
    let Event::Message(m) = map_wrapped(&Telegram, &ev, received()).unwrap().events.remove(0) else { panic!() };
    assert!(m.triggered_agent);
}

#[test]
fn the_bots_own_messages_are_outbound() {
    let m = message(&as_update(group_msg(10, the_bot(), "Here is the summary.")));
    assert_eq!(m.kind, MessageKind::OutboundAgent);
    assert!(m.triggered_agent);
    // Identified by username alone too.
    let m = map_update(
        &as_update(group_msg(11, the_bot(), "x")),
        &Bot { user_id: None, username: Some("MY_BOT".into()), triggered_agent: None },
        received(),
    )
    .unwrap();
    assert!(matches!(&m.events[0], Event::Message(m) if m.kind == MessageKind::OutboundAgent));
    // Without a bot identity nobody is the bot.
    let m = map_update(&as_update(group_msg(12, the_bot(), "x")), &Bot::default(), received()).unwrap();
    assert!(matches!(&m.events[0], Event::Message(m) if m.kind == MessageKind::InboundUser));
}

#[test]
fn bot_poll_is_created_and_answers_are_votes() {
    let mut poll_msg = group_msg(20, the_bot(), "");
    poll_msg.as_object_mut().unwrap().remove("text");
    poll_msg["poll"] = json!({"id": "5800", "question": "Lunch at 12 or 13?", "options": [], "is_closed": false});
    let m = message(&as_update(poll_msg));
    assert_eq!(m.attachments[0].kind, ObjectKind::Poll);
    assert_eq!(m.attachments[0].activation, Some(Activation::Created));
    let mut engine = engine_with(vec![Event::Message(m)]);
    let poll = engine.objects("telegram", "-100500").unwrap().remove(0);
    assert_eq!((&*poll.object_id, poll.activation), ("20:poll", Some(Activation::Created)));
    assert_eq!(poll.title_or_label.as_deref(), Some("Lunch at 12 or 13?"));

    let answer = json!({"update_id": 3, "poll_answer": {"poll_id": "5800", "user": alice(), "option_ids": [0]}});
    engine.apply_all(map(&answer).events).unwrap();
    let poll = engine.objects("telegram", "-100500").unwrap().remove(0);
    assert_eq!(poll.activation, Some(Activation::Voted));
    assert_eq!(poll.activated_at, Some(received()), "poll_answer has no date: the receive time stands in");

    let stopped = json!({"update_id": 4, "poll": {"id": "5800", "question": "Lunch at 12 or 13?", "options": [], "is_closed": true}});
    engine.apply_all(map(&stopped).events).unwrap();
    assert!(engine.objects("telegram", "-100500").unwrap()[0].closed_at.is_some());

    // An answer to a poll chatctx never saw is accepted and ignored, with a warning.
    let unknown = json!({"update_id": 5, "poll_answer": {"poll_id": "nope", "user": alice(), "option_ids": [1]}});
    let applied = engine.apply_all(map(&unknown).events).unwrap();
    assert_eq!(applied.warnings.len(), 1);
}

#[test]
fn edited_message_replaces_the_original() {
    let original = as_update(group_msg(30, alice(), "first version"));
    let edited = json!({"update_id": 2, "edited_message": group_msg(30, alice(), "second version")});
    let mut e = engine_with(map(&original).events);
    e.apply_all(map(&edited).events).unwrap();
    let h = e.history("telegram", "-100500", None).unwrap();
    assert_eq!(h.len(), 1, "an edit is not a duplicate");
    assert_eq!(h[0].text, "second version");
}

#[test]
fn malformed_known_updates_name_the_field() {
    let no_chat = json!({"update_id": 1, "message": {"message_id": 1, "date": 0, "text": "x"}});
    let e = map_update(&no_chat, &bot(), received()).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidEvent);
    assert!(e.message.contains("`update.message.chat`"), "{}", e.message);
    let bad_date = as_update(json!({"message_id": 1, "date": "yesterday", "chat": {"id": 1, "type": "private"}}));
    assert!(map_update(&bad_date, &bot(), received()).unwrap_err().message.contains("`update.message.date`"));
    assert!(map_update(&json!([1]), &bot(), received()).is_err());
    // A broken entity is dropped with a warning; the message still maps.
    let mut m = group_msg(1, alice(), "hi");
    m["entities"] = json!([{"type": "mention"}, "junk", {"type": "spoiler", "offset": 0, "length": 2}]);
    let mapped = map(&as_update(m));
    assert_eq!(mapped.warnings.len(), 2);
    assert!(matches!(mapped.events.as_slice(), [Event::Message(_), Event::Title(_)]), "{:?}", mapped.events);
}

#[test]
fn unknown_update_kinds_are_ignored() {
    for kind in
        ["inline_query", "callback_query", "chat_member", "my_chat_member", "chat_join_request", "some_future_kind"]
    {
        let m = map(&json!({"update_id": 1, kind: {"id": "1", "anything": [1, 2, {"x": null}]}}));
        assert!(m.events.is_empty());
        assert_eq!(m.ignored, [kind]);
    }
}

proptest! {
    /// Arbitrary JSON in every position of an update never panics the mapping.
    #[test]
    fn arbitrary_updates_never_panic(v in arb_json(3)) {
        let _ = map_update(&v, &bot(), received());
        let _ = map_update(&json!({"update_id": 1, "message": v.clone()}), &bot(), received());
        let mut msg = group_msg(1, alice(), "hello @bob 😀");
        if let Value::Object(extra) = &v {
            for (k, val) in extra { msg[k] = val.clone(); }
        }
        let _ = map_update(&as_update(msg), &bot(), received());
    }
}

fn arb_json(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u32..70000).prop_map(Value::from),
        "[a-z_@😀 ]{0,12}".prop_map(Value::from),
    ];
    let keys = prop_oneof![
        Just("message_id"),
        Just("date"),
        Just("chat"),
        Just("from"),
        Just("text"),
        Just("entities"),
        Just("offset"),
        Just("length"),
        Just("type"),
        Just("id"),
        Just("photo"),
        Just("poll"),
        Just("reply_to_message"),
        Just("quote"),
        Just("is_topic_message"),
        Just("message_thread_id"),
        Just("sender_chat"),
        Just("user"),
        Just("caption"),
        Just("forward_origin"),
        Just("document"),
        Just("new_chat_members"),
        Just("message"),
        Just("external_reply"),
    ];
    leaf.prop_recursive(depth, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::vec((keys.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

/// A business account's deleted messages become one `delete` event of that chat (Bot API 7.2,
/// `BusinessMessagesDeleted`).
#[test]
fn deleted_business_messages_are_a_delete() {
    let update = json!({"update_id": 9, "deleted_business_messages": {"business_connection_id": "bc-1",
        "chat": {"id": 4242, "type": "private", "first_name": "Client"}, "message_ids": [17, 18]}});
    let m = map(&update);
    assert!(m.ignored.is_empty());
    let [Event::Delete(d)] = m.events.as_slice() else { panic!("{:?}", m.events) };
    assert_eq!((d.chat_id.as_str(), d.message_ids.clone()), ("4242", vec!["17".to_owned(), "18".to_owned()]));
}
