//! What the mapping decides for the cases a bot developer notices (issue 16). The updates are written from
//! the Bot API reference (https://core.telegram.org/bots/api#message, #update, #businessconnection), field by
//! field, with the values Telegram sends.

use chatctx_core::event::MessageKind;
use serde_json::json;

use super::*;

fn the_bot() -> Value {
    json!({"id": 999, "is_bot": true, "first_name": "My Bot", "username": "my_bot"})
}

fn carol() -> Value {
    json!({"id": 77, "is_bot": false, "first_name": "Carol", "username": "carol"})
}

fn forum() -> Value {
    json!({"id": -1001900000001i64, "title": "Support", "type": "supergroup", "is_forum": true})
}

/// A topic the bot opened (per ticket): every message in it carries Telegram's implicit link to the topic's
/// creation message, which is the bot's. That link is no reply, and does not address the bot.
#[test]
fn the_implicit_topic_link_never_counts_as_a_reply() {
    let created = json!({"message_id": 300, "message_thread_id": 300, "date": 1_770_970_000, "chat": forum(),
        "from": the_bot(), "is_topic_message": true,
        "forum_topic_created": {"name": "Ticket #4411", "icon_color": 7322096}});
    let in_topic = json!({"update_id": 9001, "message": {"message_id": 301, "message_thread_id": 300,
        "date": 1_770_970_060, "chat": forum(), "from": carol(), "is_topic_message": true,
        "reply_to_message": created, "text": "my order never arrived"}});
    let m = message(&in_topic);
    assert_eq!(m.topic_id.as_deref(), Some("300"));
    assert_eq!(m.reply_to_message_id, None, "not a reply");
    assert!(!m.triggered_agent, "not addressed to the bot");
    assert!(m.quote.is_none());
    // A real reply to the bot inside the topic still addresses it.
    let answer = json!({"message_id": 302, "message_thread_id": 300, "date": 1_770_970_100, "chat": forum(),
        "from": the_bot(), "is_topic_message": true, "text": "Which order number?"});
    let reply = json!({"update_id": 9002, "message": {"message_id": 303, "message_thread_id": 300,
        "date": 1_770_970_160, "chat": forum(), "from": carol(), "is_topic_message": true,
        "reply_to_message": answer, "text": "#5521"}});
    let m = message(&reply);
    assert_eq!((m.reply_to_message_id.as_deref(), m.triggered_agent), (Some("302"), true));
}

/// A business bot answering in its owner's name: Telegram sends the owner as `from` and the bot as
/// `sender_business_bot`. It is the bot's own outbound message.
#[test]
fn a_business_bots_own_message_is_outbound() {
    let owner = json!({"id": 5000, "is_bot": false, "first_name": "Shop Owner"});
    let update = json!({"update_id": 9010, "business_message": {"message_id": 40, "date": 1_770_970_200,
        "business_connection_id": "bc-1", "chat": {"id": 6000, "type": "private", "first_name": "Client"},
        "from": owner, "sender_business_bot": the_bot(), "text": "Your parcel ships today."}});
    let m = message(&update);
    assert_eq!(m.kind, MessageKind::OutboundAgent);
    // The owner typing themselves (no sender_business_bot) stays the owner's inbound message.
    let mut by_hand = update.clone();
    by_hand["business_message"].as_object_mut().unwrap().remove("sender_business_bot");
    assert_eq!(message(&by_hand).kind, MessageKind::InboundUser);
}

/// A message with no author at all is the chat speaking only in a channel; elsewhere it is refused naming
/// the field.
#[test]
fn a_message_without_any_sender() {
    let channel = json!({"update_id": 9020, "channel_post": {"message_id": 7, "date": 1_770_970_300,
        "chat": {"id": -1001500000002i64, "title": "News", "type": "channel"}, "text": "Release 2.0 is out"}});
    let m = message(&channel);
    assert_eq!(m.sender.as_ref().and_then(|p| p.display_name.as_deref()), Some("News"));
    let group = json!({"update_id": 9021, "message": {"message_id": 8, "date": 1_770_970_300,
        "chat": {"id": -100500, "type": "supergroup", "title": "G"}, "text": "who am I?"}});
    let e = map_update(&group, &bot(), None, received()).unwrap_err();
    assert!(e.message.contains("field `update.message.from`"), "{}", e.message);
}

/// A forwarded photo without a caption: the forward marker first, then the photo, and no trailing space.
#[test]
fn a_forwarded_photo_renders_marker_first_without_a_trailing_space() {
    let update = json!({"update_id": 9030, "message": {"message_id": 50, "date": 1_770_970_400,
        "chat": {"id": 6001, "type": "private", "first_name": "Dan"}, "from": {"id": 6001, "first_name": "Dan"},
        "forward_origin": {"type": "user", "date": 1_770_960_000, "sender_user": {"id": 6002, "first_name": "Mom"}},
        "photo": [{"file_id": "AgAC-small", "file_unique_id": "AQAD-s", "width": 90, "height": 90},
                  {"file_id": "AgAC-big", "file_unique_id": "AQAD-b", "width": 1280, "height": 960}]}});
    let m = message(&update);
    assert_eq!(m.text, "[forwarded from Mom]");
    let mut engine = chatctx_core::Engine::new(chatctx_core::Settings::default());
    engine.apply_all(map(&update).events).unwrap();
    let history = engine.history("telegram", "6001", None).unwrap();
    assert_eq!(history[0].text, "[forwarded from Mom] [media.image]");
    assert!(history.iter().all(|i| !i.text.ends_with(' ')));
}

/// A `text_link`'s URL reaches the prompt, and a mention typed in another case refers to the person as
/// every other reference does.
#[test]
fn text_links_show_their_url_and_mentions_have_one_reference() {
    let chat = json!({"id": -100500, "type": "supergroup", "title": "G"});
    let alice = json!({"id": 42, "is_bot": false, "first_name": "Alice", "username": "alice"});
    let first = json!({"update_id": 1, "message": {"message_id": 1, "date": 1_770_970_800, "chat": chat, "from": alice,
        "text": "hi"}});
    // "see the docs, @ALICE": text_link over "the docs" (offset 4, length 8), mention over "@ALICE" (14, 6).
    let second = json!({"update_id": 2, "message": {"message_id": 2, "date": 1_770_970_860, "chat": chat,
        "from": {"id": 43, "is_bot": false, "first_name": "Bob"}, "text": "see the docs, @ALICE",
        "entities": [{"type": "text_link", "offset": 4, "length": 8, "url": "https://docs.example.org/setup"},
                     {"type": "mention", "offset": 14, "length": 6}]}});
    let mut engine = chatctx_core::Engine::new(chatctx_core::Settings::default());
    for u in [&first, &second] {
        engine.apply_all(map(u).events).unwrap();
    }
    let h = engine.history("telegram", "-100500", None).unwrap();
    assert_eq!(h[0].sender.display_ref, "[Alice](tg:@alice)");
    assert_eq!(h[1].text, "see [the docs](https://docs.example.org/setup), [Alice](tg:@alice)");
}

/// Joins and removals are worded by who acted; a custom emoji reaction reads as one.
#[test]
fn joins_and_removals_by_actor_and_custom_emoji() {
    let chat = json!({"id": -100500, "type": "supergroup", "title": "G"});
    let admin = json!({"id": 1, "is_bot": false, "first_name": "Admin"});
    let dave = json!({"id": 2, "is_bot": false, "first_name": "Dave"});
    let service = |id: i64, from: &Value, field: &str, value: Value| {
        let mut m = json!({"message_id": id, "date": 1_770_970_800 + id, "chat": chat, "from": from});
        m[field] = value;
        json!({"update_id": id, "message": m})
    };
    let text = |u: Value| message(&u).text;
    assert_eq!(text(service(1, &dave, "new_chat_members", json!([dave]))), "joined the chat", "by link");
    assert_eq!(text(service(2, &admin, "new_chat_members", json!([dave]))), "added Dave");
    assert_eq!(text(service(3, &admin, "left_chat_member", dave.clone())), "removed Dave");
    assert_eq!(text(service(4, &dave, "left_chat_member", dave.clone())), "left the chat");
    let reaction = json!({"update_id": 5, "message_reaction": {"chat": chat, "message_id": 1, "user": dave,
        "date": 1_770_970_900, "old_reaction": [],
        "new_reaction": [{"type": "custom_emoji", "custom_emoji_id": "5368324170671202286"}]}});
    let mapped = map(&reaction);
    let chatctx_core::Event::Reaction(r) = &mapped.events[0] else { panic!("{mapped:?}") };
    assert_eq!(r.emoji, ["[custom emoji]"]);
}
