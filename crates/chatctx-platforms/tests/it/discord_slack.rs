//! Discord and Slack payloads (tests/data, sources in tests/data/SOURCES.md) through the mappings and into an
//! engine: what is stored, how it renders, what is ignored, and that no payload, however mutated, panics.

use chatctx_core::event::{Event, MessageKind};
use chatctx_core::kinds::ObjectKind;
use chatctx_core::settings::Mode;
use chatctx_core::{Engine, Settings, Timestamp};
use chatctx_platforms::{Bot, Mapped, discord, slack};
use proptest::prelude::*;
use serde_json::{Value, json};

fn data(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    if path.ends_with(".jsonl") {
        text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
    } else {
        vec![serde_json::from_str(&text).unwrap()]
    }
}

fn received() -> Timestamp {
    Timestamp::from_unix(1_770_990_000).unwrap()
}

fn talkative() -> Engine {
    let mut s = Settings::default();
    s.history.mode = Mode::Talkative;
    Engine::new(s)
}

fn apply(e: &mut Engine, m: Mapped) -> Vec<String> {
    for ev in m.events {
        e.apply(ev).unwrap();
    }
    m.ignored
}

fn texts(e: &Engine, channel: &str, chat: &str, topic: Option<&str>) -> Vec<String> {
    e.history(channel, chat, topic)
        .unwrap()
        .into_iter()
        .map(|i| format!("{}: {}", i.sender.display_ref, i.text))
        .collect()
}

const HELPER: &str = "700000000000000999";

#[test]
fn discords_documented_example_message() {
    let m = discord::map_dispatch(&data("discord/docs_example_message.json")[0], &Bot::default(), received()).unwrap();
    let [Event::Message(msg)] = m.events.as_slice() else { panic!("{:?}", m.events) };
    assert_eq!((msg.chat_id.as_str(), msg.message_id.as_str()), ("290926798999357250", "334385199974967042"));
    assert_eq!(msg.sent_at.to_rfc3339(), "2017-07-11T17:27:07Z");
    assert_eq!((msg.text.as_str(), msg.kind), ("Supa Hot", MessageKind::InboundUser));
    assert_eq!(msg.chat_type.as_deref(), Some("dm"), "no guild_id");
    assert!(msg.triggered_agent, "a direct message addresses the bot");
}

#[test]
fn a_discord_guild_conversation() {
    let bot = Bot { user_id: Some(HELPER.into()), ..Bot::default() };
    let mut e = talkative();
    let mut ignored = Vec::new();
    let mut mapped = Vec::new();
    for p in data("discord/guild_conversation.jsonl") {
        let m = discord::map_dispatch(&p, &bot, received()).unwrap();
        mapped.extend(m.events.iter().filter_map(|ev| match ev {
            Event::Message(m) => Some((m.message_id.clone(), m.kind, m.triggered_agent)),
            _ => None,
        }));
        ignored.extend(apply(&mut e, m));
    }
    assert_eq!(ignored, ["MESSAGE_UPDATE (partial)", "TYPING_START", "op"], "accepted, counted, nothing stored");
    assert_eq!(
        mapped,
        [
            ("1100000000000000001".into(), MessageKind::InboundUser, false),
            ("1100000000000000002".into(), MessageKind::InboundUser, true),
            ("1100000000000000003".into(), MessageKind::OutboundAgent, false),
            ("1200000000000000002".into(), MessageKind::InboundUser, false),
            ("1100000000000000004".into(), MessageKind::System, false),
        ],
        "mentioning the bot triggers it; the bot's own message is outbound; a member join is a system note"
    );
    let chat = "900000000000000001";
    assert_eq!(
        texts(&e, "discord", chat, None),
        [
            "[Alice (design)](discord:@alice.w): [media.image: logo-v2.png] here is the draft https://example.org/draft for [Bob](discord:@bob_b)",
            "[Bob](discord:@bob_b): [Helper](discord:@helper) what do you think of this? :blobthink:",
            "[Helper](discord:@helper): Looks good: the colours work, the kerning needs a pass.",
            "[Carol](discord:@carol): reacted 🔥 to [Alice (design)](discord:@alice.w)'s message “[media.image: logo-v2.png] here is the draft https://example…”",
        ],
        "the deleted join note is gone; the reaction is dated when it was received"
    );
    let reply = e.message("discord", chat, "1100000000000000002").unwrap();
    assert_eq!(reply.reply_to_message_id.as_deref(), Some("1100000000000000001"));
    // The thread is a topic of its parent channel.
    assert_eq!(
        texts(&e, "discord", chat, Some("1200000000000000001")),
        ["[Carol](discord:@carol): [media.pdf: spec.pdf] can we try a darker blue? https://example.org/palette"]
    );
    assert!(e.chat_keys().iter().all(|(_, c)| c != "1200000000000000001"), "no chat of its own");
    let objects: Vec<(String, ObjectKind)> =
        e.objects("discord", chat).unwrap().into_iter().map(|o| (o.object_id.to_string(), o.kind)).collect();
    assert!(objects.contains(&("1100000000000000001:media.image".into(), ObjectKind::MediaImage)), "{objects:?}");
    assert!(objects.contains(&("1100000000000000001:link:0".into(), ObjectKind::Link)), "{objects:?}");
    assert!(objects.contains(&("1200000000000000002:media.pdf".into(), ObjectKind::MediaPdf)), "{objects:?}");
    assert!(objects.contains(&("1200000000000000002:link:0".into(), ObjectKind::Link)), "the embed's URL: {objects:?}");
    // The thread survives export and import (the log's snapshots).
    let doc = e.export_conversation("discord", chat).unwrap();
    assert_eq!(doc.threads, ["1200000000000000001"]);
    let mut again = talkative();
    again.import_document(&doc).unwrap();
    let late = json!({"t": "MESSAGE_CREATE", "d": {"id": "1200000000000000009", "channel_id": "1200000000000000001",
        "guild_id": "800000000000000001", "timestamp": "2026-02-13T09:00:00Z", "content": "later", "author": {"id": "7", "username": "eve"}}});
    apply(&mut again, discord::map_dispatch(&late, &bot, received()).unwrap());
    assert_eq!(texts(&again, "discord", chat, Some("1200000000000000001")).len(), 2);
}

#[test]
fn discord_forwards_bulk_deletes_and_bad_payloads() {
    let bot = Bot::default();
    let forward = json!({"op": 0, "t": "MESSAGE_CREATE", "d": {"id": "5", "channel_id": "1", "guild_id": "2", "type": 0,
        "timestamp": "2026-02-13T08:00:00Z", "content": "", "author": {"id": "3", "username": "ann"},
        "message_reference": {"type": 1, "message_id": "4", "channel_id": "99"},
        "message_snapshots": [{"message": {"content": "the original words", "timestamp": "2026-02-13T07:00:00Z",
            "attachments": [{"filename": "a.mp4", "content_type": "video/mp4"}]}}]}});
    let m = discord::map_dispatch(&forward, &bot, received()).unwrap();
    let [Event::Person(author), Event::Message(f)] = m.events.as_slice() else { panic!("{:?}", m.events) };
    assert_eq!(
        (author.workspace_id.as_deref(), author.person.user_id.as_str()),
        (Some("2"), "3"),
        "the guild's member"
    );
    assert_eq!(
        (f.text.as_str(), f.forwarded_from.as_deref(), f.reply_to_message_id.as_deref()),
        ("the original words", Some("another channel"), None)
    );
    assert_eq!(f.attachments[0].kind, ObjectKind::MediaVideo);
    let bulk = json!({"t": "MESSAGE_DELETE_BULK", "d": {"ids": ["1", 2], "channel_id": "9"}});
    let m = discord::map_dispatch(&bulk, &bot, received()).unwrap();
    let [Event::Delete(d)] = m.events.as_slice() else { panic!() };
    assert_eq!(d.message_ids, ["1", "2"]);
    for (bad, field) in [
        (json!({"op": 0, "d": {}}), "`payload.t`"),
        (json!({"t": "MESSAGE_CREATE"}), "`payload.d`"),
        (
            json!({"t": "MESSAGE_CREATE", "d": {"id": "1", "channel_id": "2", "timestamp": "2026-02-13T08:00:00Z"}}),
            "`payload.d.author`",
        ),
        (
            json!({"t": "MESSAGE_CREATE", "d": {"id": "1", "channel_id": "2", "author": {"id": "3"}, "timestamp": "soon"}}),
            "`payload.d.timestamp`",
        ),
    ] {
        let e = discord::map_dispatch(&bad, &bot, received()).unwrap_err();
        assert!(e.message.contains(field), "{bad}: {}", e.message);
    }
}

#[test]
fn slacks_documented_examples() {
    let mut e = talkative();
    let mut ignored = Vec::new();
    let mut triggered = Vec::new();
    for p in data("slack/docs_examples.jsonl") {
        let m = slack::map_envelope(&p, &Bot::default(), received()).unwrap();
        triggered.extend(m.events.iter().filter_map(|ev| match ev {
            Event::Message(m) => Some((m.message_id.clone(), m.triggered_agent)),
            _ => None,
        }));
        ignored.extend(apply(&mut e, m));
    }
    assert_eq!(ignored, ["url_verification"], "user_change names a person of the team");
    assert_eq!(
        triggered,
        [
            ("1355517523.000005".into(), false),
            ("1515449522.000016".into(), true),
            ("1355517524.000006".into(), false),
            ("1355517523.000005".into(), false),
        ],
        "the app mention triggers the bot (named by the envelope's authorizations)"
    );
    assert_eq!(
        texts(&e, "slack", "C123ABC456", None),
        [
            "[Egon Spengler](slack:@U123ABC456): Hello, world!",
            "[Egon Spengler](slack:@U123ABC456): reacted :thumbsup: to [Egon Spengler](slack:@U123ABC456)'s message “Hello world”",
            "[@U061F7AUR](slack:@U061F7AUR): [@U0LAN0Z89](slack:@U0LAN0Z89) is it everything a river should be?",
        ],
        "the edit replaced the first message; the thread reply was deleted; user_change named U123ABC456 in every \
         item, those stored before it too"
    );
    assert!(texts(&e, "slack", "C123ABC456", Some("1355517523.000005")).is_empty(), "the deleted reply");
}

#[test]
fn a_slack_channel_with_files_links_threads_and_the_bot() {
    let bot = Bot { user_id: Some("U0HELPER".into()), ..Bot::default() };
    let mut e = talkative();
    let mut ignored = Vec::new();
    let mut kinds = Vec::new();
    for p in data("slack/channel_with_files_and_links.jsonl") {
        let m = slack::map_envelope(&p, &bot, received()).unwrap();
        kinds.extend(m.events.iter().filter_map(|ev| match ev {
            Event::Message(m) => Some((m.kind, m.triggered_agent)),
            _ => None,
        }));
        ignored.extend(apply(&mut e, m));
    }
    assert_eq!(ignored, ["message.channel_archive"]);
    assert_eq!(
        kinds,
        [
            (MessageKind::InboundUser, false),
            (MessageKind::InboundUser, true),
            (MessageKind::OutboundAgent, false),
            (MessageKind::System, false)
        ]
    );
    assert_eq!(
        texts(&e, "slack", "C0DESIGN", None),
        [
            "[Alice](slack:@U0ALICE): [media.image: logo-v2.png] new logo for [Bob Brown](slack:@U0BOB), see [the brief](https://example.org/brief) & #general",
            "[@U0DAVE](slack:@U0DAVE): [@U0DAVE](slack:@U0DAVE) has joined the channel",
        ],
        "a mention of someone not seen yet is named once their own message's profile named them; Dave's join is a \
         note in the channel"
    );
    let thread = "1770970800.000100";
    assert_eq!(
        texts(&e, "slack", "C0DESIGN", Some(thread)),
        [
            "[Bob Brown](slack:@U0BOB): @here [@U0HELPER](slack:@U0HELPER) what do you think of this?",
            "[@U0HELPER](slack:@U0HELPER): The colours work; the kerning needs a pass.",
        ]
    );
    let reply = e.message("slack", "C0DESIGN", "1770970860.000200").unwrap();
    assert_eq!(reply.reply_to_message_id.as_deref(), Some(thread), "a thread reply replies to the thread's start");
    let objects: Vec<String> =
        e.objects("slack", "C0DESIGN").unwrap().into_iter().map(|o| o.object_id.to_string()).collect();
    assert!(
        objects.contains(&"1770970800.000100:media.image".to_owned())
            && objects.contains(&"1770970800.000100:link:0".to_owned())
    );
}

pub fn mutate(v: &Value, path: &[usize], with: &Value) -> Value {
    let mut v = v.clone();
    set_at(&mut v, path, with);
    v
}

fn set_at(at: &mut Value, path: &[usize], with: &Value) {
    let Some((&i, rest)) = path.split_first() else {
        *at = with.clone();
        return;
    };
    match at {
        Value::Object(m) if !m.is_empty() => {
            let k = m.keys().nth(i % m.len()).cloned().unwrap_or_default();
            if let Some(next) = m.get_mut(&k) {
                set_at(next, rest, with);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let n = a.len();
            set_at(&mut a[i % n], rest, with);
        }
        _ => *at = with.clone(),
    }
}

pub fn any_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        Just(json!([])),
        Just(json!({})),
        Just(json!("<@")),
        Just(json!("<@!1> <#> <:x> <https://a|b> &amp;")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    /// No mutation of a real payload makes a mapping panic: it maps, or it is refused naming a field; and what
    /// it maps to is stored and read back as the same events.
    #[test]
    fn mutated_payloads_never_panic(which in 0usize..64, path in proptest::collection::vec(0usize..12, 0..5), with in any_json()) {
        let mut all = data("discord/guild_conversation.jsonl");
        all.extend(data("discord/docs_example_message.json"));
        let slack_start = all.len();
        all.extend(data("slack/docs_examples.jsonl"));
        all.extend(data("slack/channel_with_files_and_links.jsonl"));
        let i = which % all.len();
        let v = mutate(&all[i], &path, &with);
        let bot = Bot { user_id: Some(HELPER.into()), ..Bot::default() };
        let platform: &dyn chatctx_platforms::Platform = if i < slack_start { &discord::Discord } else { &slack::Slack };
        let mapped = chatctx_platforms::map_checked(platform, &v, &bot, received());
        if let Ok(m) = mapped {
            // What is acknowledged survives write → read → decode: a restart reads back the same events.
            for ev in &m.events {
                let read = Event::decode(&serde_json::to_value(ev).unwrap());
                prop_assert_eq!(read.as_ref(), Ok(ev));
            }
            let mut e = talkative();
            for ev in m.events {
                let _ = e.apply(ev);
            }
        }
    }
}

/// Issue 29, point 3: guild member dispatches (shaped as Discord's Gateway documentation gives them) and every
/// message's author are people of the guild; a mention of someone the message does not describe is named by
/// them, in the items stored before too; `USER_UPDATE` (the bot's own account) names it in every guild.
#[test]
fn discord_members_name_the_people_of_the_guild() {
    let bot = Bot { user_id: Some("900".into()), ..Bot::default() };
    let mut e = talkative();
    let before = json!({"op": 0, "t": "MESSAGE_CREATE", "d": {"id": "1", "channel_id": "500", "guild_id": "77", "type": 0,
        "timestamp": "2026-02-13T08:00:00.000000+00:00", "content": "ask <@301> and <@900>",
        "author": {"id": "300", "username": "ann", "global_name": "Ann"}, "member": {"nick": "Annie", "roles": []}, "mentions": []}});
    let m = discord::map_dispatch(&before, &bot, received()).unwrap();
    let [Event::Person(author), Event::Message(_)] = m.events.as_slice() else { panic!("{:?}", m.events) };
    assert_eq!(
        (author.workspace_id.as_deref(), author.person.display_name.as_deref()),
        (Some("77"), Some("Annie")),
        "the author as the guild knows them: nick first"
    );
    apply(&mut e, m);
    assert_eq!(
        texts(&e, "discord", "500", None),
        ["[Annie](discord:@ann): ask [user 301](discord:id/301) and [user 900](discord:id/900)"]
    );
    let add = json!({"op": 0, "t": "GUILD_MEMBER_ADD", "d": {"guild_id": "77", "roles": [], "joined_at": "2026-02-13T07:00:00.000000+00:00",
        "deaf": false, "mute": false, "nick": null, "user": {"id": "301", "username": "bob_b", "global_name": "Bob", "avatar": null}}});
    let chunk = json!({"op": 0, "t": "GUILD_MEMBERS_CHUNK", "d": {"guild_id": "77", "chunk_index": 0, "chunk_count": 1,
        "members": [{"user": {"id": "302", "username": "carol"}, "nick": "Carol C.", "roles": []},
                    {"user": {"id": "303", "username": "dan", "global_name": null}, "nick": null, "roles": []}]}});
    let me = json!({"op": 0, "t": "USER_UPDATE", "d": {"id": "900", "username": "helper", "global_name": "Helper", "bot": true}});
    for dispatch in [add, chunk, me] {
        let m = discord::map_dispatch(&dispatch, &bot, received()).unwrap();
        assert!(m.events.iter().all(|ev| matches!(ev, Event::Person(_))), "{:?}", m.events);
        apply(&mut e, m);
    }
    assert_eq!(
        texts(&e, "discord", "500", None),
        ["[Annie](discord:@ann): ask [Bob](discord:@bob_b) and [Helper](discord:@helper)"],
        "the guild member and the bot, named in what was stored before"
    );
    let update = json!({"op": 0, "t": "GUILD_MEMBER_UPDATE", "d": {"guild_id": "77", "roles": [], "nick": "Robert",
        "user": {"id": "301", "username": "bob_b", "global_name": "Bob"}}});
    apply(&mut e, discord::map_dispatch(&update, &bot, received()).unwrap());
    assert_eq!(
        texts(&e, "discord", "500", None),
        ["[Annie](discord:@ann): ask [Robert](discord:@bob_b) and [Helper](discord:@helper)"]
    );
    let e2 = discord::map_dispatch(&json!({"t": "GUILD_MEMBERS_CHUNK", "d": {"members": []}}), &bot, received())
        .unwrap_err();
    assert!(e2.message.contains("`payload.d.guild_id`"), "{}", e2.message);
}

#[test]
fn channel_and_thread_names_are_titles() {
    let bot = Bot::default();
    let dispatch =
        |t: &str, d: Value| discord::map_dispatch(&json!({"op": 0, "t": t, "d": d}), &bot, received()).unwrap();
    let mut e = talkative();
    apply(&mut e, dispatch("CHANNEL_CREATE", json!({"id": "100", "type": 0, "parent_id": "50", "name": "general"})));
    apply(&mut e, dispatch("CHANNEL_UPDATE", json!({"id": "100", "type": 0, "parent_id": "50", "name": " releases "})));
    apply(
        &mut e,
        dispatch("THREAD_CREATE", json!({"id": "300", "type": 11, "parent_id": "100", "name": "4.2 rollout"})),
    );
    apply(&mut e, dispatch("CHANNEL_UPDATE", json!({"id": "300", "type": 11, "parent_id": "100", "name": "4.2 done"})));
    assert_eq!(e.title_of("discord", "100", None), Some("releases"), "a category is not a thread");
    assert_eq!(e.title_of("discord", "100", Some("300")), Some("4.2 done"), "a thread's name is its topic's");
    assert_eq!(e.title_of("discord", "300", None), None, "a thread is not a chat of its own");
    let unnamed = dispatch("CHANNEL_CREATE", json!({"id": "101", "type": 0, "name": 7}));
    assert!(unnamed.events.is_empty(), "a name of another type is skipped: {:?}", unnamed.events);
    let category = dispatch("CHANNEL_CREATE", json!({"id": "50", "type": 4, "name": "Text Channels"}));
    assert!(category.events.is_empty(), "a category holds no messages, so no chat: {:?}", category.events);

    let envelope = |event: Value| json!({"type": "event_callback", "team_id": "T0ACME", "event": event});
    let renamed =
        envelope(json!({"type": "channel_rename", "channel": {"id": "C0GENERAL", "name": "ops", "created": 1}}));
    apply(&mut e, slack::map_envelope(&renamed, &bot, received()).unwrap());
    assert_eq!(e.title_of("slack", "C0GENERAL", None), Some("ops"));
    let broken = envelope(json!({"type": "channel_created"}));
    let err = slack::map_envelope(&broken, &bot, received()).unwrap_err();
    assert!(err.message.contains("payload.event.channel"), "{}", err.message);
}
