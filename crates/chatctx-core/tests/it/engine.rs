//! Applying events: edits, atomic rejection, eviction, ordering, people, objects.

use chatctx_core::ErrorCode;
use chatctx_core::kinds::{Activation, ObjectKind};

use super::*;

fn snapshot(e: &Engine, chat: &str) -> String {
    let items = e.history("telegram", chat, None).unwrap_or_default();
    let objects = e.objects("telegram", chat).unwrap_or_default();
    format!("{}|{}", serde_json::to_string(&items).unwrap(), serde_json::to_string(&objects).unwrap())
}

#[test]
fn the_same_message_again_is_an_edit() {
    let mut e = engine(
        settings(Mode::Talkative, Scope::Topic),
        [
            msg("-1", None, 1, user("1", "Ann"), "first", false, 1),
            msg("-1", None, 2, user("2", "Bo"), "second", false, 2),
        ],
    );
    e.apply(msg("-1", None, 1, user("1", "Ann"), "first, edited", false, 1)).unwrap();
    assert_eq!(texts(&history(&e, "-1", None, None)), ["first, edited", "second"], "same place, no duplicate");
}

#[test]
fn an_edit_keeps_a_message_that_triggered_the_bot_eligible() {
    let mut e =
        engine(settings(Mode::Smart, Scope::Topic), [msg("-1", None, 1, user("1", "Ann"), "@bot do x", true, 1)]);
    e.apply(msg("-1", None, 1, user("1", "Ann"), "do x (mention removed)", false, 1)).unwrap();
    assert_eq!(texts(&history(&e, "-1", None, None)), ["do x (mention removed)"]);
}

#[test]
fn a_rejected_event_changes_nothing() {
    let mut e =
        engine(settings(Mode::Talkative, Scope::Topic), [msg("-1", None, 1, user("1", "Ann"), "see the pic", true, 1)]);
    let before = snapshot(&e, "-1");
    let bad =
        ev(json!({"type": "activation", "chat_id": "-1", "object_id": "nope", "event": "described", "at": T0 + 5}));
    let err = e.apply(bad.clone()).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidEvent);
    assert!(err.message.contains("`object_id`"), "{}", err.message);
    // A batch with one bad event is refused whole.
    let good = msg("-1", None, 2, user("2", "Bo"), "more", true, 2);
    assert!(e.apply_all(vec![good, bad]).is_err());
    assert_eq!(snapshot(&e, "-1"), before);
}

#[test]
fn the_oldest_messages_are_evicted_per_conversation() {
    let mut s = settings(Mode::Talkative, Scope::Topic);
    s.conversation.cache_max_per_conversation = 5;
    let mut events: Vec<Event> =
        (1..=8).map(|i| msg("-1", Some("7"), i, user("1", "Ann"), &format!("t7-{i}"), false, i64::from(i))).collect();
    events.push(msg("-1", Some("9"), 100, user("1", "Ann"), "t9", false, 100));
    let e = engine(s, events);
    assert_eq!(texts(&history(&e, "-1", Some("7"), None)), ["t7-4", "t7-5", "t7-6", "t7-7", "t7-8"]);
    assert!(e.message("telegram", "-1", "3").is_none(), "an evicted message leaves the index");
    assert_eq!(texts(&history(&e, "-1", Some("9"), None)), ["t9"], "a busy topic does not evict a quiet one");
}

/// A message that leaves the chat (evicted for room, dropped for age, or its topic's conversation recycled) takes
/// the objects derived from it alone along: not an explicit id, not an activated one. The objects come every way
/// an object names a stored message: the message's own attachments and a later object event.
#[test]
fn a_message_that_leaves_takes_its_derived_objects_along() {
    let photo = |id: u32, topic: &str, dt: i64| {
        ev(json!({"type": "message", "chat_id": "-1", "topic_id": topic, "message_id": id.to_string(),
                  "kind": "inbound_user", "sent_at": T0 + dt, "sender": user("1", "Ann"), "text": "look",
                  "attachments": [{"kind": "media.image"}, {"kind": "reminder", "object_id": format!("rem-{id}")}]}))
    };
    let poll = |id: u32, topic: &str, dt: i64| {
        ev(json!({"type": "object", "op": "upsert", "at": T0 + dt, "object": {"chat_id": "-1", "topic_id": topic,
                  "object_id": format!("{id}:poll"), "kind": "poll", "source_message_id": id.to_string()}}))
    };
    let ids = |e: &Engine| {
        let mut ids: Vec<String> =
            e.objects("telegram", "-1").unwrap().into_iter().map(|o| o.object_id.to_string()).collect();
        ids.sort();
        ids
    };
    let mut s = settings(Mode::Talkative, Scope::Topic);
    s.conversation.cache_max_per_conversation = 2;
    s.conversation.max_topics = 2;
    let mut e = engine(s, [photo(1, "7", 1), msg("-1", Some("7"), 2, user("1", "Ann"), "plain", false, 2)]);
    e.apply(poll(2, "7", 3)).unwrap();
    // 3 replies to 1, which activates 1's objects; 4 evicts 1 (kept: its objects are active) and 2 (its poll goes).
    e.apply(ev(
        json!({"type": "message", "chat_id": "-1", "topic_id": "7", "message_id": "3", "reply_to_message_id": "1",
                      "kind": "inbound_user", "sent_at": T0 + 4, "sender": user("2", "Bo"), "text": "nice"}),
    ))
    .unwrap();
    e.apply(photo(4, "7", 5)).unwrap();
    assert_eq!(ids(&e), ["1:media.image", "4:media.image", "rem-1", "rem-4"], "evicted for room");

    // Dropped for age.
    e.apply(poll(3, "7", 6)).unwrap();
    assert_eq!(e.drop_before(Timestamp::from_unix(T0 + 5).unwrap()).len(), 1);
    assert_eq!(ids(&e), ["1:media.image", "4:media.image", "rem-1", "rem-4"], "3's poll went with it");

    // Topic 9 then topic 8: the third topic recycles the quietest conversation (7), and its messages leave.
    e.apply(photo(9, "9", 7)).unwrap();
    e.apply(msg("-1", Some("8"), 8, user("1", "Ann"), "new topic", false, 8)).unwrap();
    assert!(e.message("telegram", "-1", "4").is_none(), "topic 7 was recycled");
    assert_eq!(ids(&e), ["1:media.image", "9:media.image", "rem-1", "rem-4", "rem-9"], "4's image went with it");
}

#[test]
fn late_arrivals_are_placed_by_time() {
    let e = engine(
        settings(Mode::Talkative, Scope::Topic),
        [
            msg("-1", None, 1, user("1", "Ann"), "a", false, 10),
            msg("-1", None, 3, user("1", "Ann"), "c", false, 30),
            msg("-1", None, 2, user("2", "Bo"), "b", false, 20),
        ],
    );
    assert_eq!(texts(&history(&e, "-1", None, None)), ["a", "b", "c"]);
}

#[test]
fn mentions_use_the_nickname_of_a_known_member() {
    let bob = json!({"user_id": "2", "username": "Bob", "display_name": "Bob the Builder", "first_name": "Bob"});
    let mention = |id: u32, text: &str, offset: u32| {
        ev(
            json!({"type": "message", "chat_id": "-1", "message_id": id.to_string(), "kind": "inbound_user", "sent_at": T0 + i64::from(id),
                  "sender": user("1", "Ann"), "text": text, "entities": [{"type": "mention", "offset": offset, "length": 4}]}),
        )
    };
    let e = engine(
        settings(Mode::Talkative, Scope::Topic),
        [mention(1, "hi @bob", 3), msg("-1", None, 2, bob, "hello", false, 2), mention(3, "👋🏽 @bob again", 5)],
    );
    let h = history(&e, "-1", None, None);
    assert_eq!(
        h.items.to_vec()[0].text,
        "hi [Bob the Builder](tg:@Bob)",
        "mentioned before he spoke: the reference took his name when his first message named him (issue 30, point 4)"
    );
    assert_eq!(h.items.to_vec()[1].sender.display_ref, "[Bob the Builder](tg:@Bob)", "display_name first");
    assert_eq!(
        h.items.to_vec()[2].text,
        "👋🏽 [Bob the Builder](tg:@Bob) again",
        "seen: the member's nickname, and one reference per person whatever case the mention was typed in"
    );
}

#[test]
fn a_renamed_person_keeps_old_references_on_old_items() {
    let e = engine(
        settings(Mode::Talkative, Scope::Topic),
        [
            msg("-1", None, 1, json!({"user_id": "1", "username": "ann", "first_name": "Ann"}), "before", false, 1),
            msg("-1", None, 2, json!({"user_id": "1", "username": "ann", "first_name": "Annie"}), "after", false, 2),
        ],
    );
    let refs: Vec<String> =
        history(&e, "-1", None, None).items.to_vec().into_iter().map(|i| i.sender.display_ref).collect();
    assert_eq!(refs, ["[Ann](tg:@ann)", "[Annie](tg:@ann)"]);
}

#[test]
fn plain_mentions_on_other_channels() {
    let mut v = json!({"type": "message", "channel": "talk", "chat_id": "room", "message_id": "1", "kind": "inbound_user",
                       "sent_at": T0, "sender": {"user_id": "u2", "username": "bob", "display_name": "Bob"}, "text": "hi"});
    let first = ev(v.clone());
    v["message_id"] = json!("2");
    v["sender"] = json!({"user_id": "u1", "username": "ann", "display_name": "Ann"});
    v["text"] = json!("@bob and @zed, mail bob@example.org");
    let mut e = Engine::new(settings(Mode::Talkative, Scope::Topic));
    e.apply(first).unwrap();
    e.apply(ev(v)).unwrap();
    let item = e.message("talk", "room", "2").unwrap();
    assert_eq!(item.text, "[Bob](talk:@bob) and @zed, mail bob@example.org");
    assert_eq!(item.sender.display_ref, "[Ann](talk:@ann)");
}

#[test]
fn attachments_links_and_derived_ids() {
    let v = json!({"type": "message", "chat_id": "-1", "message_id": "501", "kind": "inbound_user", "sent_at": T0,
                   "sender": user("1", "Ann"), "text": "look https://a.org and this",
                   "entities": [{"type": "url", "offset": 5, "length": 13}, {"type": "text_link", "offset": 23, "length": 4, "url": "https://b.org"}],
                   "attachments": [{"kind": "media.image", "label": "cat.jpg"}, {"kind": "media.image"}, {"kind": "reminder", "object_id": "rem-1"}]});
    let mut e = engine(settings(Mode::Talkative, Scope::Topic), [ev(v.clone())]);
    let ids: Vec<(String, ObjectKind)> =
        e.objects("telegram", "-1").unwrap().into_iter().map(|o| (o.object_id.to_string(), o.kind)).collect();
    assert_eq!(
        ids,
        [
            ("501:link:0".to_owned(), ObjectKind::Link),
            ("501:link:1".to_owned(), ObjectKind::Link),
            ("501:media.image".to_owned(), ObjectKind::MediaImage),
            ("501:media.image:1".to_owned(), ObjectKind::MediaImage),
            ("rem-1".to_owned(), ObjectKind::Reminder),
        ]
    );
    assert_eq!(
        e.message("telegram", "-1", "501").unwrap().text,
        "[media.image: cat.jpg] [media.image] [reminder] look https://a.org and [this](https://b.org)"
    );
    assert!(e.objects("telegram", "-1").unwrap().iter().all(|o| o.activation.is_none()), "known, not active");

    // A user replying to the message activates its typed objects (replied_to), not by mention.
    e.apply(ev(json!({"type": "message", "chat_id": "-1", "message_id": "502", "reply_to_message_id": "501", "kind": "inbound_user",
                      "sent_at": T0 + 60, "sender": user("2", "Bo"), "text": "nice cat"}))).unwrap();
    let o = e.objects("telegram", "-1").unwrap();
    assert!(o.iter().filter(|o| o.object_id.starts_with("501:")).all(|o| o.activation == Some(Activation::RepliedTo)));

    // An edit that drops the second image and the links removes their objects.
    let mut edited = v;
    edited["text"] = json!("just the cat");
    edited["entities"] = json!([]);
    edited["attachments"] = json!([{"kind": "media.image", "label": "cat.jpg"}]);
    e.apply(ev(edited)).unwrap();
    let ids: Vec<String> = e.objects("telegram", "-1").unwrap().into_iter().map(|o| o.object_id.to_string()).collect();
    assert_eq!(ids, ["501:media.image", "rem-1"], "an explicit id is not derived from the message");
    let kept = e.objects("telegram", "-1").unwrap().into_iter().find(|o| &*o.object_id == "501:media.image");
    assert_eq!(kept.and_then(|o| o.activation), Some(Activation::RepliedTo), "what the edit keeps keeps its state");

    // A link alone (a `url` or a `text_link` entity) is carried like an attachment: with the message's first
    // words and who posted it.
    for (n, entity) in [
        (503, json!({"type": "url", "offset": 5, "length": 13})),
        (504, json!({"type": "text_link", "offset": 0, "length": 4, "url": "https://c.org"})),
    ] {
        e.apply(ev(json!({"type": "message", "chat_id": "-1", "message_id": n.to_string(), "kind": "inbound_user",
                          "sent_at": T0 + 90, "sender": user("2", "Bo"), "text": "read https://a.org please",
                          "entities": [entity]})))
            .unwrap();
        let link = e.objects("telegram", "-1").unwrap().into_iter().find(|o| *o.object_id == format!("{n}:link:0"));
        let link = link.unwrap_or_else(|| panic!("message {n} registers its link"));
        assert!(link.caption.as_deref().is_some_and(|c| c.ends_with("please")), "{n}: {:?}", link.caption);
        assert_eq!(link.author.as_deref(), Some("[Bo](tg:@bo)"), "{n}");
    }
}

#[test]
fn object_and_activation_events() {
    let mut e = engine(
        settings(Mode::Smart, Scope::Topic),
        [msg("-1", Some("7"), 502, user("1", "Ann"), "remind me", true, 1)],
    );
    e.apply(ev(json!({"type": "object", "op": "upsert", "at": T0 + 15,
        "object": {"object_id": "rem-9", "kind": "reminder", "chat_id": "-1", "topic_id": "7", "source_message_id": "502",
                   "title_or_label": "Call mom at 18:00", "created_by_user_id": "1", "created_by_bot": true},
        "activation": "created"}))).unwrap();
    e.apply(ev(
        json!({"type": "activation", "chat_id": "-1", "object_id": "rem-9", "event": "listed", "at": T0 + 100}),
    ))
    .unwrap();
    let o = e.objects("telegram", "-1").unwrap().remove(0);
    assert_eq!((o.activation, o.activated_at.map(|t| t.unix())), (Some(Activation::Listed), Some(T0 + 100)));
    assert_eq!(o.created_at.unix(), T0 + 15);
    // The message itself can be activated as a candidate.
    e.apply(ev(
        json!({"type": "activation", "chat_id": "-1", "object_id": "502:message", "event": "resolved", "at": T0 + 120}),
    ))
    .unwrap();
    assert!(
        e.objects("telegram", "-1")
            .unwrap()
            .iter()
            .any(|o| &*o.object_id == "502:message" && o.kind == ObjectKind::Message)
    );
    assert!(e.apply(ev(json!({"type": "activation", "chat_id": "-1", "object_id": "502:bot_message", "event": "resolved", "at": T0}))).is_err(),
        "502 is not the bot's message");
    e.apply(ev(json!({"type": "object", "op": "close", "at": T0 + 200, "object": {"object_id": "rem-9", "kind": "reminder", "chat_id": "-1"}}))).unwrap();
    assert_eq!(
        e.objects("telegram", "-1")
            .unwrap()
            .iter()
            .find(|o| &*o.object_id == "rem-9")
            .unwrap()
            .closed_at
            .map(|t| t.unix()),
        Some(T0 + 200)
    );
    e.apply(ev(json!({"type": "object", "op": "delete", "at": T0 + 300, "object": {"object_id": "rem-9", "kind": "reminder", "chat_id": "-1"}}))).unwrap();
    assert!(e.objects("telegram", "-1").unwrap().iter().all(|o| &*o.object_id != "rem-9"));
}

#[test]
fn replies_activate_registered_objects_and_late_activations_do_not_go_back_in_time() {
    let mut e =
        engine(settings(Mode::Smart, Scope::Topic), [msg("-1", None, 502, user("1", "Ann"), "remind me", true, 1)]);
    e.apply(ev(json!({"type": "object", "op": "upsert", "at": T0 + 15, "activation": "created",
        "object": {"object_id": "rem-9", "kind": "reminder", "chat_id": "-1", "source_message_id": "502", "created_by_bot": true}})))
    .unwrap();
    e.apply(ev(
        json!({"type": "activation", "chat_id": "-1", "object_id": "rem-9", "event": "listed", "at": T0 + 100}),
    ))
    .unwrap();
    let reply = |id: &str, dt: i64| {
        ev(
            json!({"type": "message", "chat_id": "-1", "message_id": id, "reply_to_message_id": "502", "kind": "inbound_user",
                  "sent_at": T0 + dt, "sender": user("2", "Bo"), "text": "make it 19:00"}),
        )
    };
    // A reply that arrives late, dated before the listing, does not displace it.
    e.apply(reply("503", 90)).unwrap();
    let o = e.objects("telegram", "-1").unwrap().remove(0);
    assert_eq!((o.activation, o.activated_at.map(|t| t.unix())), (Some(Activation::Listed), Some(T0 + 100)));
    // A later reply to the reminder's source message activates it, though its id is not derived from 502.
    e.apply(reply("504", 150)).unwrap();
    let o = e.objects("telegram", "-1").unwrap().remove(0);
    assert_eq!((o.activation, o.activated_at.map(|t| t.unix())), (Some(Activation::RepliedTo), Some(T0 + 150)));
}

/// Issue 28, point 10: a chat keeps at most `conversation.max_topics` topics; a new one past it takes the place
/// of the least recently active, whose items go with it.
#[test]
fn topics_per_chat_are_capped_least_recently_active_first() {
    use chatctx_core::settings::{Mode, Scope};
    let mut s = crate::settings(Mode::Talkative, Scope::Topic);
    s.conversation.max_topics = 3;
    let ann = crate::user("1", "Ann");
    let mut e = crate::engine(s, []);
    for (id, topic) in [(1, "a"), (2, "b"), (3, "c"), (4, "a"), (5, "d")] {
        e.apply(crate::msg("-1", Some(topic), id, ann.clone(), &format!("m{id}"), false, i64::from(id))).unwrap();
    }
    // "b" was the least recently active when "d" came: it went, with its message.
    assert!(e.history("telegram", "-1", Some("b")).unwrap().is_empty());
    assert!(e.message("telegram", "-1", "2").is_none());
    for (topic, ids) in [("a", vec!["1", "4"]), ("c", vec!["3"]), ("d", vec!["5"])] {
        let h = e.history("telegram", "-1", Some(topic)).unwrap();
        assert_eq!(h.iter().filter_map(|i| i.message_id.as_deref()).collect::<Vec<_>>(), ids, "{topic}");
    }
    let overview = e.chat_overview("telegram", "-1").unwrap();
    assert_eq!(overview.topics, ["a", "c", "d"]);
}

/// Issue 30, point 3: a message that refers to nothing is `not_found` with `why: no_reference` and records
/// nothing; its words can come from `raw_user_text`; `resolver.require_reference = false` scores it as before.
#[test]
fn only_a_message_that_refers_is_resolved() {
    use chatctx_core::tools::ToolResponse;
    let events = || {
        vec![
            super::ev(serde_json::json!({"type": "message", "chat_id": "7", "message_id": "1", "kind": "inbound_user",
                "sent_at": super::T0, "sender": super::user("1", "Ann"), "text": "draft",
                "attachments": [{"kind": "media.image", "label": "draft.png"}]})),
            super::msg("7", None, 2, super::user("2", "Bob"), "is prod back?", true, 60),
        ]
    };
    let ask = |e: &mut Engine, extra: serde_json::Value| {
        let mut args = serde_json::json!({"chat_id": "7", "current_message_id": "2", "sender_user_id": "2"});
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let now = chatctx_core::Timestamp::from_unix(super::T0 + 61).unwrap();
        match e.call("resolve_reference_target", &args, now).unwrap() {
            ToolResponse::Resolve(r) => serde_json::to_value(&r).unwrap(),
            other => panic!("{other:?}"),
        }
    };
    let mut e = super::engine(Settings::default(), events());
    let r = ask(&mut e, serde_json::json!({}));
    assert_eq!(
        (r["status"].as_str(), r["why"].as_str(), r["confidence"].as_f64()),
        (Some("not_found"), Some("no_reference"), Some(0.0))
    );
    assert_eq!(r, ask(&mut e, serde_json::json!({})), "the same answer again, byte for byte");
    let r = ask(&mut e, serde_json::json!({"raw_user_text": "is the photo above the final one?"}));
    assert_eq!((r["status"].as_str(), r["why"].as_str()), (Some("not_found"), None), "scored: nothing over min_score");
    let r = ask(
        &mut e,
        serde_json::json!({"raw_user_text": "это фото?", "normalized_reference_hints": {"target_kind_hint": "image"}}),
    );
    assert_eq!(r["best_match"]["object_id"], "1:media.image");
    let mut off = Settings::default();
    off.resolver.require_reference = false;
    let mut e = super::engine(off, events());
    let r = ask(&mut e, serde_json::json!({}));
    assert!(r.get("why").is_none(), "scored as before issue 30: {r}");
}

/// An answer's descriptors share the chat's strings instead of copying them (issue 32): message candidates' topic,
/// sender id and reference are the chat's own (one string for every candidate that names them); an object's file
/// reference is the registry's; a resolved answer's best match is its first candidate's, string for string.
#[test]
fn descriptors_share_the_chats_strings() {
    use chatctx_core::tools::Request;
    use std::sync::Arc;
    let image = super::ev(serde_json::json!({"type": "message", "chat_id": "7", "topic_id": "t", "message_id": "1",
        "kind": "inbound_user", "sent_at": super::T0, "sender": super::user("1", "Ann"), "text": "draft",
        "attachments": [{"kind": "media.image", "label": "draft.png", "file": {"file_id": "AgAD", "file_unique_id": "u1"}}]}));
    let mut e = super::engine(
        Settings::default(),
        [
            image,
            super::msg("7", Some("t"), 2, super::user("2", "Bob"), "shipped the fix", false, 30),
            super::msg("7", Some("t"), 3, super::user("2", "Bob"), "and the docs", false, 40),
            super::msg("7", Some("t"), 4, super::user("1", "Ann"), "does this work?", true, 60),
        ],
    );
    let now = chatctx_core::Timestamp::from_unix(super::T0 + 61).unwrap();
    let args = serde_json::json!({"chat_id": "7", "topic_id": "t", "current_message_id": "4", "sender_user_id": "1",
        "reply_to_message_id": "3", "max_candidates": 10});
    let req = chatctx_core::tools::resolve::ResolveReferenceTarget::decode(&args).unwrap();
    let r = e.resolve_reference_target(&req, now).unwrap();
    let found = |id: &str| {
        r.candidates
            .iter()
            .map(|c| &c.descriptor)
            .find(|d| &*d.object_id == id)
            .unwrap_or_else(|| panic!("{id}: {r:?}"))
    };
    let (m3, m2, m1) = (found("3:message"), found("2:message"), found("1:message"));
    assert_eq!((m3.author.as_deref(), m1.author.as_deref()), (Some("[Bob](tg:@bob)"), Some("[Ann](tg:@ann)")));
    let same = |x: &Option<Arc<str>>, y: &Option<Arc<str>>| Arc::ptr_eq(x.as_ref().unwrap(), y.as_ref().unwrap());
    assert!(same(&m3.topic_id, &m2.topic_id) && same(&m3.topic_id, &m1.topic_id), "the conversation's topic");
    assert!(same(&m3.created_by_user_id, &m2.created_by_user_id), "the profile's user id");
    assert!(same(&m3.author, &m2.author), "the profile's reference");
    assert!(Arc::ptr_eq(&m3.chat_id, &m1.chat_id), "one chat id for the answer");
    // The best match is the first candidate's descriptor, shared.
    let (best, first) = (r.best_match.as_ref().expect("resolved"), &r.candidates[0].descriptor);
    assert_eq!(&*best.object_id, "3:message");
    assert!(Arc::ptr_eq(&best.chat_id, &first.chat_id) && Arc::ptr_eq(&best.object_id, &first.object_id));
    assert!(same(&best.author, &first.author) && same(&best.title_or_label, &first.title_or_label));
    // An object's file reference is the registry's.
    let d = found("1:media.image");
    let registered =
        e.objects("telegram", "7").unwrap().into_iter().find(|o| &*o.object_id == "1:media.image").unwrap();
    assert_eq!(d.file.as_deref().map(|f| f.file_id.as_str()), Some("AgAD"));
    assert!(Arc::ptr_eq(d.file.as_ref().unwrap(), registered.file.as_ref().unwrap()));
}

/// A stored message is its sender's whether or not it was registered as an object: its first `resolved`
/// activation registers it, and it used to lose its sender then, so that asking again for "my message" scored
/// it `not_owned` and its descriptor lost `created_by_user_id`. An `activation` event registers it the same way.
#[test]
fn a_message_keeps_its_sender_once_registered() {
    use chatctx_core::tools::Request;
    let mut e = super::engine(
        Settings::default(),
        [
            super::msg("7", None, 1, super::user("1", "Ann"), "my plan for friday", false, 0),
            super::msg("7", None, 2, super::user("2", "Bob"), "sounds good", false, 30),
            super::msg("7", None, 3, super::user("1", "Ann"), "what do you think of my message?", true, 60),
        ],
    );
    let args = serde_json::json!({"chat_id": "7", "current_message_id": "3", "sender_user_id": "1",
        "normalized_reference_hints": {"ownership_hint": "mine"}});
    let req = chatctx_core::tools::resolve::ResolveReferenceTarget::decode(&args).unwrap();
    for (dt, registered_before) in [(61, false), (62, true)] {
        let now = chatctx_core::Timestamp::from_unix(super::T0 + dt).unwrap();
        let r = e.resolve_reference_target(&req, now).unwrap();
        let best = r.best_match.as_ref().expect("resolved");
        assert_eq!((&*best.object_id, best.created_by_user_id.as_deref()), ("1:message", Some("1")), "{dt}");
        assert!(r.candidates[0].reasons.contains("owned_by_sender"), "registered before: {registered_before}: {r:?}");
    }
    let registered = |e: &Engine, id: &str| {
        e.objects("telegram", "7").unwrap().into_iter().find(|o| &*o.object_id == id).map(|o| o.created_by_user_id)
    };
    assert_eq!(registered(&e, "1:message"), Some(Some("1".into())));
    e.apply(super::ev(serde_json::json!({"type": "activation", "chat_id": "7", "object_id": "2:message",
        "event": "described", "at": super::T0 + 63})))
        .unwrap();
    assert_eq!(registered(&e, "2:message"), Some(Some("2".into())), "registered by an activation event");
}

/// A stored message's descriptor reads the same before and after its first resolution registers it as an object
/// (only `last_touched_at` moves: the resolution touched it). Its label was cut from its first 200 characters
/// once registered, so a text opening with a long run of whitespace lost its ellipsis and most of its words.
#[test]
fn a_message_reads_the_same_once_registered() {
    use chatctx_core::tools::Request;
    let indented = format!("{}{}", " ".repeat(150), "word ".repeat(20));
    let chat = || {
        super::engine(
            Settings::default(),
            [
                super::msg("7", Some("t"), 1, super::user("1", "Ann"), &indented, false, 0),
                super::bot_reply("7", Some("t"), 2, 1, "a reply from the bot", 30),
                super::msg("7", Some("t"), 3, super::user("2", "Bob"), "what?", true, 60),
            ],
        )
    };
    for target in ["1", "2"] {
        let mut e = chat();
        let args = serde_json::json!({"chat_id": "7", "current_message_id": "3", "sender_user_id": "2",
            "reply_to_message_id": target});
        let req = chatctx_core::tools::resolve::ResolveReferenceTarget::decode(&args).unwrap();
        let mut seen = Vec::new();
        for dt in [61, 62] {
            let now = chatctx_core::Timestamp::from_unix(super::T0 + dt).unwrap();
            let r = e.resolve_reference_target(&req, now).unwrap();
            let mut best = r.best_match.clone().unwrap_or_else(|| panic!("{target} at {dt}: {r:?}"));
            best.last_touched_at = chatctx_core::Timestamp::from_unix(0).unwrap();
            seen.push(best);
        }
        assert_eq!(seen[0], seen[1], "message {target}: before and after it was registered");
    }
}

/// Resolve and list describe a registered object alike (one function): an empty label, which only an imported
/// document can hold, is left out of both.
#[test]
fn resolve_and_list_describe_an_object_alike() {
    let mut e = super::engine(
        Settings::default(),
        [
            super::ev(serde_json::json!({"type": "message", "chat_id": "7", "message_id": "1", "kind": "inbound_user",
                "sent_at": super::T0, "sender": super::user("1", "Ann"), "text": "draft",
                "attachments": [{"kind": "media.image", "label": "draft.png", "activation": "created"}]})),
            super::msg("7", None, 2, super::user("2", "Bob"), "the image?", true, 30),
        ],
    );
    let mut doc = serde_json::to_value(e.export_conversation("telegram", "7").unwrap()).unwrap();
    let image = doc["objects"].as_array_mut().unwrap().iter_mut().find(|o| o["object_id"] == "1:media.image").unwrap();
    image["title_or_label"] = serde_json::json!("");
    e.import_conversation(&doc).unwrap();
    let now = chatctx_core::Timestamp::from_unix(super::T0 + 31).unwrap();
    let ask = |e: &mut Engine, tool: &str, args: serde_json::Value| {
        serde_json::to_value(e.call(tool, &args, now).unwrap()).unwrap()
    };
    let listed =
        ask(&mut e, "list_active_context_objects", serde_json::json!({"chat_id": "7", "current_message_id": "2"}));
    let resolved = ask(
        &mut e,
        "resolve_reference_target",
        serde_json::json!({"chat_id": "7", "current_message_id": "2", "sender_user_id": "2",
            "normalized_reference_hints": {"target_kind_hint": "image"}}),
    );
    let (l, r) = (&listed["objects"][0], &resolved["best_match"]);
    assert_eq!(
        (&l["object_id"], &r["object_id"]),
        (&serde_json::json!("1:media.image"), &serde_json::json!("1:media.image"))
    );
    assert!(l.get("title_or_label").is_none() && r.get("title_or_label").is_none(), "{l} {r}");
    for key in ["source_message_id", "chat_id", "created_by_user_id", "created_at", "author", "caption"] {
        assert_eq!(l[key], r[key], "{key}");
    }
}
