//! Slack workspace exports and DiscordChatExporter exports (tests/data/slack/export, tests/data/discord/dce_*,
//! sources in tests/data/SOURCES.md) read into events and applied: people, messages in time order, threads as
//! topics, files as objects, reactions, the bot's own messages, notes, and what is left out, counted. No
//! mutation of them panics.

use std::collections::BTreeMap;

use chatctx_core::event::{Event, MessageKind};
use chatctx_core::kinds::ObjectKind;
use chatctx_platforms::{Bot, Imported, discord, slack};
use proptest::prelude::*;
use serde_json::Value;

use super::discord_slack::{any_json, mutate};
use super::engine_with;

fn dir() -> String {
    format!("{}/tests/data", env!("CARGO_MANIFEST_DIR"))
}

/// Every JSON file of the Slack export fixture, by its path relative to the export's root.
pub fn slack_files() -> BTreeMap<String, Value> {
    let root = format!("{}/slack/export", dir());
    let mut out = BTreeMap::new();
    for sub in ["", "general/", "deploy/", "leads/", "D0PRIYABOB/"] {
        for entry in std::fs::read_dir(format!("{root}/{sub}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let name = format!("{sub}{}", path.file_name().unwrap().to_string_lossy());
                out.insert(name, serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap());
            }
        }
    }
    out
}

pub fn dce(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{}/discord/{name}", dir())).unwrap()).unwrap()
}

fn texts(e: &chatctx_core::Engine, channel: &str, chat: &str, topic: Option<&str>) -> Vec<String> {
    e.history(channel, chat, topic)
        .unwrap()
        .into_iter()
        .map(|i| format!("{}: {}", i.sender.display_ref, i.text))
        .collect()
}

fn bot(id: &str) -> Bot {
    Bot { user_id: Some(id.into()), ..Bot::default() }
}

#[test]
fn a_slack_export_reads_whole() {
    let imported = slack::export::import(&slack_files(), &bot("U0HELPER")).unwrap();
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let skipped: Vec<(&str, usize)> = imported.skipped.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    assert_eq!(
        skipped,
        [("message.huddle_thread", 1), ("message.tombstone", 1)],
        "unknown subtypes counted, not fatal"
    );
    // Everyone of users.json is a person of the team, before any message.
    let people: Vec<&str> = imported
        .events
        .iter()
        .take(5)
        .map(|e| match e {
            Event::Person(p) => {
                assert_eq!(p.workspace_id.as_deref(), Some("T0ACME"));
                p.person.user_id.as_str()
            }
            other => panic!("people first: {other:?}"),
        })
        .collect();
    assert_eq!(people, ["U0PRIYA", "U0BOB", "U0HELPER", "USLACKBOT", "U0GONE"]);
    let bot_replies: Vec<&str> = imported
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) if m.kind == MessageKind::OutboundAgent => Some(m.message_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(bot_replies, ["1770886900.000300", "1770887400.000500"], "--bot-user-id marks the bot's own");
    let titles = imported.events.iter().filter(|e| matches!(e, Event::Title(_))).count();
    let e = engine_with(imported.events);
    assert_eq!(
        texts(&e, "slack", "C0GENERAL", None),
        [
            "[Priya Raman](slack:@U0PRIYA): [Priya Raman](slack:@U0PRIYA) has joined the channel",
            "[Priya Raman](slack:@U0PRIYA): [Priya Raman](slack:@U0PRIYA) set the channel purpose: Everything the whole team needs",
            "[Priya Raman](slack:@U0PRIYA): Deploy of 4.2 starts at 14:00, [bob](slack:@U0BOB) you have the rollback plan?",
            "[bob](slack:@U0BOB): reacted :eyes: to [Priya Raman](slack:@U0PRIYA)'s message “Deploy of 4.2 starts at 14:00, [bob](slack:@U0BOB) you have…”",
            "[bob](slack:@U0BOB): reacted :rocket: to [Priya Raman](slack:@U0PRIYA)'s message “Deploy of 4.2 starts at 14:00, [bob](slack:@U0BOB) you have…”",
            "[Helper](slack:@U0HELPER): reacted :rocket: to [Priya Raman](slack:@U0PRIYA)'s message “Deploy of 4.2 starts at 14:00, [bob](slack:@U0BOB) you have…”",
            "[bob](slack:@U0BOB): [bob](slack:@U0BOB) set the channel topic: 4.2 rollout today",
            "[bob](slack:@U0BOB): rollout paused, see [incident 42](https://status.example.invalid/incidents/42)",
            "[Priya Raman](slack:@U0PRIYA): and [Former Member](slack:@U0GONE) left before the freeze",
        ],
        "users.json names every speaker and mention; notes, reactions and the final text of an edit"
    );
    let thread = "1770883500.000200";
    assert_eq!(
        texts(&e, "slack", "C0GENERAL", Some(thread)),
        [
            "[bob](slack:@U0BOB): [media.pdf: rollback-4.2.pdf] here it is",
            "[Helper](slack:@U0HELPER): Noted: rollback plan in rollback-4.2.pdf.",
        ],
        "a thread is a topic"
    );
    let pdf = e.objects("slack", "C0GENERAL").unwrap().into_iter().find(|o| o.kind == ObjectKind::MediaPdf).unwrap();
    assert_eq!(pdf.title_or_label.as_deref(), Some("rollback-4.2.pdf"));
    assert_eq!(
        texts(&e, "slack", "C0DEPLOY", None)[..2],
        [
            "[deploy-bot](slack:@B0DEPLOY): 4.2 rolled out to 10% of prod",
            "[bob](slack:@U0BOB): is prod back? [Helper](slack:@U0HELPER) can you check the error rate"
        ]
    );
    // Channel names are the chats' titles (told once each); a DM has none.
    assert_eq!(titles, 3, "general, deploy, leads");
    assert_eq!(e.title_of("slack", "C0GENERAL", None), Some("general"));
    assert_eq!(e.title_of("slack", "G0LEADS", None), Some("leads"));
    assert_eq!(e.title_of("slack", "D0PRIYABOB", None), None);
    let dm = e.history("slack", "D0PRIYABOB", None).unwrap();
    assert_eq!((dm.len(), dm[0].chat_type.as_deref()), (3, Some("im")), "the DM, with its reaction");
    assert_eq!(e.history("slack", "G0LEADS", None).unwrap()[0].chat_type.as_deref(), Some("group"));
}

#[test]
fn a_discord_chat_exporter_export_reads_whole() {
    let helper = "880000000000000099";
    let general = discord::export::import(&dce("dce_general.json"), &bot(helper)).unwrap();
    assert_eq!(general.skipped.iter().collect::<Vec<_>>(), [(&"message type AutoModerationAction".to_owned(), &1)]);
    let thread = discord::export::import(&dce("dce_thread.json"), &bot(helper)).unwrap();
    assert!(
        matches!(&thread.events[0], Event::Thread(t) if t.chat_id == "880000000000000100" && t.topic_id == "880000000000000300")
    );
    let triggered: Vec<(String, MessageKind, bool)> = general
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some((m.message_id.clone(), m.kind, m.triggered_agent)),
            _ => None,
        })
        .collect();
    assert!(triggered.contains(&("880000000000001006".into(), MessageKind::InboundUser, true)), "a mention of the bot");
    assert!(triggered.contains(&("880000000000001007".into(), MessageKind::OutboundAgent, false)), "the bot's own");
    let mut events = general.events;
    events.extend(thread.events);
    let e = engine_with(events);
    let chat = "880000000000000100";
    assert_eq!(
        texts(&e, "discord", chat, None),
        [
            "[Priya](discord:@priya.r): joined the server",
            "[Priya](discord:@priya.r): Rollout of 4.2 at 14:00 — [Bob Brown](discord:@bobb) has the rollback plan, see https://wiki.example.invalid/rollback",
            "[Bob Brown](discord:@bobb): reacted 👍 to [Priya](discord:@priya.r)'s message “Rollout of 4.2 at 14:00 — [Bob Brown](discord:@bobb) has the…”",
            "[Helper](discord:@helper): reacted 👍 to [Priya](discord:@priya.r)'s message “Rollout of 4.2 at 14:00 — [Bob Brown](discord:@bobb) has the…”",
            "[Bob Brown](discord:@bobb): [media.pdf: rollback-4.2.pdf] [media.image: graph.png] [media.image: sticker thumbs] here it is",
            "[Priya](discord:@priya.r): started a thread: 4.2 rollout",
            "[Priya](discord:@priya.r): pinned a message",
            "[Bob Brown](discord:@bobb): [Helper](discord:@helper) is prod back?",
            "[Helper](discord:@helper): Error rate is back under 0.1%.",
            "[@carol_c](discord:@carol_c): This author has no nickname: the name stands in.",
        ],
        "an author without a nickname is named by the guild's directory; the repeated message is one item"
    );
    assert_eq!(
        e.message("discord", chat, "880000000000001003").unwrap().reply_to_message_id.as_deref(),
        Some("880000000000001002")
    );
    assert_eq!(
        texts(&e, "discord", chat, Some("880000000000000300")),
        [
            "[Priya](discord:@priya.r): 10% of prod is on 4.2",
            "[Bob Brown](discord:@bobb): [Priya](discord:@priya.r) error rate spiked, pausing"
        ],
        "the thread's export is a topic of its parent channel"
    );
    assert_eq!(e.title_of("discord", chat, None), Some("general"), "the channel's name");
    assert_eq!(e.title_of("discord", chat, Some("880000000000000300")), Some("4.2 rollout"), "the thread's name");
}

#[test]
fn what_is_not_an_export_is_refused_clearly() {
    let none = BTreeMap::new();
    let e = slack::export::import(&none, &Bot::default()).unwrap_err();
    assert!(e.message.contains("users.json"), "{}", e.message);
    let mut bad = slack_files();
    bad.insert("channels.json".into(), serde_json::json!({"not": "a list"}));
    assert!(slack::export::import(&bad, &Bot::default()).unwrap_err().message.contains("channels.json"));
    let whole = slack::export::import(&slack_files(), &Bot::default()).unwrap();
    let mut odd = slack_files();
    let Some(Value::Array(users)) = odd.get_mut("users.json") else { panic!("users.json is a list") };
    users.extend([serde_json::json!("not a user"), serde_json::json!({"name": "no id"})]);
    let read = slack::export::import(&odd, &Bot::default()).unwrap();
    assert_eq!(read.skipped.get("a malformed user"), Some(&2), "{:?}", read.skipped);
    assert_eq!(read.people(), whole.people(), "the well-formed users still read");
    assert!(read.warnings.iter().any(|w| w.ends_with("skipped: expected a user object")), "{:?}", read.warnings);
    let e = discord::export::import(&serde_json::json!({"messages": []}), &Bot::default()).unwrap_err();
    assert!(e.message.contains("guild"), "{}", e.message);
    assert!(!discord::export::is_export(&serde_json::json!({"guild": {}, "channel": {}, "messages": {}})));
}

fn counted(i: &Imported) -> usize {
    i.events.len() + i.skipped.values().sum::<usize>()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// No mutation of a real export makes reading it panic: it reads (what it cannot use counted or warned of),
    /// or it is refused with a message; and what it reads applies to an engine.
    #[test]
    fn mutated_exports_never_panic(which in 0usize..3, file in 0usize..64, path in proptest::collection::vec(0usize..12, 0..6), with in any_json()) {
        let imported = if which == 0 {
            let mut files = slack_files();
            let key = files.keys().nth(file % files.len()).cloned().unwrap();
            let v = mutate(&files[&key], &path, &with);
            files.insert(key, v);
            slack::export::import(&files, &bot("U0HELPER"))
        } else {
            let v = mutate(&dce(if which == 1 { "dce_general.json" } else { "dce_thread.json" }), &path, &with);
            discord::export::import(&v, &bot("880000000000000099"))
        };
        match imported {
            Ok(i) => {
                prop_assert!(counted(&i) > 0 || i.warnings.len() + i.skipped.len() > 0 || i.events.is_empty());
                let mut e = super::engine_with(Vec::new());
                for ev in i.events {
                    let _ = e.apply(ev);
                }
            }
            Err(e) => prop_assert!(!e.message.is_empty()),
        }
    }
}
