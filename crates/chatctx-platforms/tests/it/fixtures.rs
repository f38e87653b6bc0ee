//! One test per fixture file.

use chatctx_core::event::{Direction, EntityKind, Event, MessageKind};
use chatctx_core::kinds::{ItemKind, ObjectKind};
use serde_json::json;

use super::*;

fn object_ids(e: &Engine, chat: &str) -> Vec<(String, ObjectKind)> {
    e.objects("telegram", chat).unwrap().into_iter().map(|o| (o.object_id.to_string(), o.kind)).collect()
}

#[test]
fn document_pdf_in_a_private_chat() {
    let m = message(&fixture("homeassistant__update_document_pdf.json"));
    assert_eq!((m.chat_id.as_str(), m.chat_type.as_deref(), m.message_id.as_str()), ("1111111", Some("private"), "2"));
    let s = m.sender.as_ref().unwrap();
    assert_eq!((s.user_id.as_str(), s.username.as_deref()), ("12345678", Some("Testusername")));
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(m.attachments[0].kind, ObjectKind::MediaPdf);
    assert!(m.triggered_agent, "a private chat always addresses the bot");
    let e = engine_with(vec![Event::Message(m)]);
    assert_eq!(object_ids(&e, "1111111"), [("2:media.pdf".to_owned(), ObjectKind::MediaPdf)]);
    assert_eq!(e.message("telegram", "1111111", "2").unwrap().text, "[media.pdf]");
}

#[test]
fn text_mention_without_username_and_a_url() {
    let m = message(&fixture("real__update_group_text_mention_url.json"));
    assert_eq!(m.chat_id, "-5251554348");
    assert_eq!(m.entities[0].kind, EntityKind::TextMention);
    assert_eq!(m.entities[0].user.as_ref().unwrap().first_name.as_deref(), Some("Cù Kim"));
    let e = engine_with(vec![Event::Message(m)]);
    let item = e.message("telegram", "-5251554348", "471").unwrap();
    assert!(item.text.starts_with("F Ngoc Cu Kim https://github.com/"), "no username: text left as is: {}", item.text);
    let objects = e.objects("telegram", "-5251554348").unwrap();
    assert_eq!(objects.len(), 1);
    assert_eq!(&*objects[0].object_id, "471:link:0");
    assert_eq!(objects[0].kind, ObjectKind::Link);
    let label = objects[0].title_or_label.as_deref().unwrap();
    assert_eq!(label.chars().count(), 80, "labels are cut to 80 characters");
    assert!(label.starts_with("https://github.com/badpaybad/"));
}

#[test]
fn synthetic_multi_kind_update_maps_what_it_can() {
    let m = map(&fixture("rubenlagus__update_multi_kind_synthetic.json"));
    assert_eq!(m.ignored, ["callback_query", "chosen_inline_result", "inline_query"]);
    let titles = m.events.iter().filter(|e| matches!(e, Event::Title(_))).count();
    assert_eq!(m.events.len() - titles, 2, "message and edited_message");
    let Event::Message(msg) = &m.events[0] else { panic!() };
    let msg_id = msg.message_id.clone();
    assert_eq!(msg.reply_to_message_id.as_deref(), Some("1334"));
    assert_eq!(
        (msg.forwarded_from.as_deref(), msg.text.as_str()),
        (Some("ForwardFirstname ForwardLastname"), "Bold and italics")
    );
    assert_eq!(msg.entities.len(), 2, "bold and italic are kept, on the text as sent");
    assert_eq!(msg.entities[0].offset, 9);
    let kinds: Vec<ObjectKind> = msg.attachments.iter().map(|a| a.kind).collect();
    assert_eq!(kinds, [ObjectKind::MediaVoice, ObjectKind::MediaVoice, ObjectKind::MediaPdf]);
    let Event::Message(edit) = &m.events[1] else { panic!() };
    assert_eq!((edit.chat_id.as_str(), edit.chat_type.as_deref()), ("-10000000000", Some("channel")));
    let e = engine_with(m.events);
    let shown = &e.message("telegram", "1111111", &msg_id).unwrap().text;
    assert!(
        shown.starts_with("[forwarded from ForwardFirstname ForwardLastname] [media.voice")
            && shown.ends_with("] Bold and italics"),
        "the forward marker leads the attachment tags and the text: {shown}"
    );
    assert_eq!(
        object_ids(&e, "1111111"),
        [
            ("1365:media.pdf".to_owned(), ObjectKind::MediaPdf),
            ("1365:media.voice".to_owned(), ObjectKind::MediaVoice),
            ("1365:media.voice:1".to_owned(), ObjectKind::MediaVoice)
        ],
        "a second object of the same kind gets :1"
    );
}

#[test]
fn explicit_nulls_are_absent_values() {
    let m = message(&as_update(fixture("telegrambot_net__message_document_explicit_nulls.json")));
    assert_eq!(m.kind, MessageKind::InboundUser, "false/0 service fields do not make a service message");
    assert_eq!(m.text, "Test Document Description");
    assert_eq!(m.attachments[0].kind, ObjectKind::MediaDocument);
    assert_eq!(m.attachments[0].label.as_deref(), Some("test_file.txt"));
    assert!(m.reply_to_message_id.is_none() && m.quote.is_none());
    assert!(!m.triggered_agent);
}

#[test]
fn anonymous_admin_speaks_as_the_group() {
    let m = message(&as_update(fixture("teloxide__message_anonymous_admin_sender_chat_forward_origin_chat.json")));
    let s = m.sender.as_ref().unwrap();
    assert_eq!(s.user_id, "-1001160242915");
    assert_eq!(s.display_name.as_deref(), Some("a (TITLE2)"));
    assert!(!s.is_bot);
    assert_eq!((m.forwarded_from.as_deref(), m.text.as_str()), (Some("a"), "text"));
    let e = engine_with(vec![Event::Message(m)]);
    let item = e.message("telegram", "-1001160242915", "1").unwrap();
    assert_eq!(item.text, "[forwarded from a] text");
    assert_eq!(item.sender.display_ref, "[a (TITLE2)](tg://user?id=-1001160242915)");
}

#[test]
fn forum_topic_service_messages() {
    let created = message(&as_update(fixture("teloxide__message_forum_topic_created.json")));
    assert_eq!(created.kind, MessageKind::System);
    assert_eq!(created.topic_id.as_deref(), Some("4"));
    assert_eq!(created.text, "created the topic “???”");
    let closed = message(&as_update(fixture("teloxide__message_forum_topic_closed.json")));
    assert_eq!(closed.kind, MessageKind::System);
    assert_eq!(closed.text, "closed the topic");
    assert_eq!(closed.topic_id, None, "no is_topic_message: not in a topic");
}

#[test]
fn chat_titles_and_topic_names_come_with_messages() {
    let chat = "-1001847508954";
    let t = |topic: Option<&str>, title: &str| (chat.to_owned(), topic.map(str::to_owned), title.to_owned());
    // The topic's creation names it; every later message of the topic carries that creation as its reply.
    let created = titles(&as_update(fixture("teloxide__message_forum_topic_created.json")));
    assert_eq!(created, [t(None, "twest"), t(Some("4"), "???")]);
    let reply = titles(&as_update(fixture("teloxide__message_forum_topic_message_reply.json")));
    assert_eq!(reply, [t(None, "twest"), t(Some("4"), "???")]);
    // A rename in the topic wins over the creation it replies to.
    let mut renamed = fixture("teloxide__message_forum_topic_message_reply.json");
    renamed["forum_topic_edited"] = json!({"name": "  Logo drafts "});
    assert_eq!(titles(&as_update(renamed)), [t(None, "twest"), t(Some("4"), "Logo drafts")]);
    // No topic without is_topic_message; no title of a private chat; a blank or odd title is skipped.
    let closed = titles(&as_update(fixture("teloxide__message_forum_topic_closed.json")));
    assert!(closed.iter().all(|(_, topic, _)| topic.is_none()), "{closed:?}");
    let from = json!({"id": 7, "is_bot": false, "first_name": "A"});
    let private = json!({"message_id": 1, "date": 0, "text": "hi", "from": from, "chat": {"id": 7, "type": "private", "first_name": "A"}});
    assert!(titles(&as_update(private)).is_empty());
    let odd =
        json!({"message_id": 1, "date": 0, "text": "hi", "from": from, "chat": {"id": 7, "type": "group", "title": 5}});
    assert!(titles(&as_update(odd)).is_empty());
}

#[test]
fn topic_message_replying_to_the_topic_start_is_not_a_reply() {
    let m = message(&as_update(fixture("teloxide__message_forum_topic_message_reply.json")));
    assert_eq!(m.topic_id.as_deref(), Some("4"));
    assert_eq!(m.reply_to_message_id, None, "the implicit link to the creation message is not a reply");
    assert_eq!(m.text, "blah");
}

#[test]
fn reply_thread_in_an_ordinary_group_is_not_a_topic() {
    let m = message(&fixture("teloxide__update_reply_thread_non_forum_bot_command.json"));
    assert_eq!(m.topic_id, None, "message_thread_id without is_topic_message");
    assert_eq!(m.reply_to_message_id.as_deref(), Some("134545"), "a real reply");
    assert_eq!(m.text, "/report");
    assert_eq!(m.entities[0].kind, EntityKind::Other("bot_command".into()));
    assert!(!m.triggered_agent, "a bare command in a group does not name this bot");
    let mut u = fixture("teloxide__update_reply_thread_non_forum_bot_command.json");
    u["message"]["text"] = json!("/report@my_bot");
    assert!(message(&u).triggered_agent, "a command addressed to the bot triggers it");
}

#[test]
fn media_kinds() {
    for (file, kind) in [
        ("teloxide__message_media_group_video.json", ObjectKind::MediaVideo),
        ("teloxide__message_video_forwarded.json", ObjectKind::MediaVideo),
        ("teloxide__message_photo.json", ObjectKind::MediaImage),
    ] {
        let m = message(&as_update(fixture(file)));
        assert_eq!(m.attachments.iter().map(|a| a.kind).collect::<Vec<_>>(), [kind], "{file}");
    }
    let m = message(&as_update(fixture("teloxide__message_photo.json")));
    let e = engine_with(vec![Event::Message(m)]);
    assert_eq!(e.message("telegram", "250918540", "199791").unwrap().text, "[media.image]");
}

#[test]
fn caption_entities_make_links() {
    let m = message(&as_update(fixture("teloxide__message_photo_caption_entities_url.json")));
    assert_eq!(m.text, "www.example.com");
    let e = engine_with(vec![Event::Message(m)]);
    let objects = e.objects("telegram", "27433968").unwrap();
    let ids: Vec<(&str, Option<&str>)> = objects.iter().map(|o| (&*o.object_id, o.title_or_label.as_deref())).collect();
    assert_eq!(ids, [("3460:link:0", Some("www.example.com")), ("3460:media.image", Some("www.example.com"))]);
}

#[test]
fn content_without_an_object_gets_a_placeholder() {
    assert_eq!(message(&as_update(fixture("teloxide__message_sticker.json"))).text, "[sticker 😡]");
    assert_eq!(message(&fixture("teloxide__update_dice.json")).text, "[dice 🎲 2]");
    assert_eq!(message(&fixture("teloxide__update_supergroup_story_message.json")).text, "[story]");
    let m = message(&fixture("teloxide__update_private_text.json"));
    assert_eq!(m.text, "4");
    assert!(m.triggered_agent);
}

#[test]
fn pinned_message_is_a_system_note() {
    let m = message(&fixture("teloxide__update_pinned_message.json"));
    assert_eq!(m.kind, MessageKind::System);
    assert_eq!(
        m.text, "pinned [Hirrolot](tg:@hirrolot)'s message “Faster than a bullet”",
        "by its author and first words, not its id"
    );
    assert!(!m.triggered_agent);
}

#[test]
fn reactions() {
    let Event::Reaction(r) = map(&fixture("teloxide__update_message_reaction_user_emoji.json")).events.remove(0) else {
        panic!()
    };
    assert_eq!((r.chat_id.as_str(), r.message_id.as_str(), r.direction), ("-1002184233434", "35", Direction::Inbound));
    assert_eq!(r.emoji, ["🌭"]);
    assert_eq!(r.sender.as_ref().unwrap().username.as_deref(), Some("shdwchn10"));

    let Event::Reaction(r) =
        map(&fixture("teloxide__update_message_reaction_actor_chat_removed.json")).events.remove(0)
    else {
        panic!()
    };
    assert!(r.emoji.is_empty());
    assert_eq!(r.sender.as_ref().unwrap().user_id, "-1002199793788", "the anonymous actor chat reacts");
    let e = engine_with(vec![Event::Reaction(r)]);
    let h = e.history("telegram", "-1002199793788", None).unwrap();
    assert_eq!((h[0].kind, h[0].text.as_str()), (ItemKind::InboundReaction, "removed their reaction to message 2"));

    let m = map(&fixture("teloxide__update_message_reaction_count_channel.json"));
    assert!(m.events.is_empty());
    assert_eq!(m.ignored, ["message_reaction_count"], "anonymous counts are accepted and ignored");
}

#[test]
fn external_reply_keeps_its_quote_but_is_never_a_reply_target() {
    let mut msg = fixture("teloxide__update_private_text.json")["message"].clone();
    msg["external_reply"] = fixture("tgbot__externalreplyinfo_photo_snapshot.json");
    msg["quote"] = json!({"text": "quoted words", "position": 0});
    let m = message(&as_update(msg.clone()));
    assert_eq!(m.reply_to_message_id, None);
    let q = m.quote.as_ref().unwrap();
    assert_eq!(
        (q.text.as_str(), q.sender.as_ref().and_then(|s| s.display_name.as_deref())),
        ("quoted words", Some("test"))
    );
    assert!(m.attachments.is_empty(), "the other chat's photo is not an object here");
    let e = engine_with(vec![Event::Message(m)]);
    assert_eq!(
        e.message("telegram", "408258968", "154").unwrap().quote.unwrap().markdown_block,
        "> test: quoted words"
    );

    msg["external_reply"] = fixture("tgbot__externalreplyinfo_poll_snapshot.json");
    msg.as_object_mut().unwrap().remove("quote");
    let m = message(&as_update(msg));
    assert!(m.quote.is_none() && m.reply_to_message_id.is_none() && m.attachments.is_empty());
}

#[test]
fn text_quote_of_a_replied_message() {
    let mut msg = fixture("teloxide__update_private_text.json")["message"].clone();
    msg["reply_to_message"] = json!({"message_id": 150, "date": 1581448800, "chat": msg["chat"].clone(),
        "from": {"id": 7, "is_bot": false, "first_name": "Carol", "username": "carol"}, "text": "this is a test of quotes"});
    msg["quote"] = fixture("tgbot__textquote_entities_manual_snapshot.json");
    let m = message(&as_update(msg));
    assert_eq!(m.reply_to_message_id.as_deref(), Some("150"));
    let q = m.quote.as_ref().unwrap();
    assert_eq!(q.text, "test");
    assert_eq!(q.sender.as_ref().unwrap().username.as_deref(), Some("carol"));
    let e = engine_with(vec![Event::Message(m)]);
    assert_eq!(
        e.message("telegram", "408258968", "154").unwrap().quote.unwrap().markdown_block,
        "> [Carol](tg:@carol): test"
    );
}

#[test]
fn every_fixture_maps_without_error_or_panic() {
    let dir = format!("{}/tests/data/telegram", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // Bare messages are wrapped; bare ExternalReplyInfo / TextQuote objects map as updates with no known kind.
        let update = if v.get("message_id").is_some() { as_update(v) } else { v };
        let m = chatctx_platforms::map_checked(&chatctx_platforms::telegram::Telegram, &update, &bot(), received())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for ev in &m.events {
            let read = chatctx_core::Event::decode(&serde_json::to_value(ev).unwrap());
            assert_eq!(read.as_ref(), Ok(ev), "{name}: written and read back the same");
        }
        let mut engine = engine_with(Vec::new());
        engine.apply_all(m.events).unwrap_or_else(|e| panic!("{name}: {e}"));
        n += 1;
    }
    assert_eq!(n, 24, "every fixture is covered");
}
