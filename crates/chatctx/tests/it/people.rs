//! People directories through the service: a learned name is durable (restart, compaction), reaches every
//! instance of a shared store, leaves with the last chat of its workspace, and only a credential not limited to
//! chats may write one.

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
    let mut s = Settings::default();
    s.history.mode = chatctx_core::settings::Mode::Talkative;
    Service::open_with(s, LlmSettings::default(), store.clone(), Options { compact_after }).unwrap().0
}

fn message(chat: &str, ws: &str, id: u32, user: &str, text: &str) -> Value {
    json!({"type": "message", "channel": "slack", "chat_id": chat, "workspace_id": ws, "message_id": format!("{id}.0001"),
        "kind": "inbound_user", "sent_at": 1_770_000_000 + id, "sender": {"user_id": user, "username": user}, "text": text})
}

fn person(ws: &str, user: &str, name: &str) -> Value {
    json!({"type": "person", "channel": "slack", "workspace_id": ws, "user_id": user, "username": user, "display_name": name})
}

fn speakers(svc: &Service, chat: &str) -> Vec<String> {
    svc.read_chat("slack", chat, |e| {
        e.history("slack", chat, None)
            .map(|h| h.into_iter().map(|i| i.sender.display_ref).collect())
            .unwrap_or_default()
    })
    .unwrap()
}

fn log_lines(store: &Opened) -> Vec<(String, String)> {
    let Opened::Local(log) = store else { unreachable!() };
    let mut out = Vec::new();
    log.load(&mut |_, op| out.push((op.chat_id, op.line))).unwrap();
    out
}

#[test]
fn a_learned_name_survives_restart_and_compaction_and_leaves_with_the_last_chat() {
    let store = Opened::Local(Arc::new(MemoryStore::default()));
    let svc = open(&store, 3);
    svc.ingest(&[message("C1", "T1", 1, "U1", "one"), message("C2", "T1", 2, "U1", "two")], now()).unwrap();
    let report = svc.ingest(&[person("T1", "U1", "Priya Raman")], now()).unwrap();
    assert_eq!(report.accepted, 1);
    // The same again changes nothing and is not logged.
    let before = log_lines(&store).len();
    svc.ingest(&[person("T1", "U1", "Priya Raman")], now()).unwrap();
    assert_eq!(log_lines(&store).len(), before, "an unchanged person is not logged again");
    assert_eq!(speakers(&svc, "C1"), ["[Priya Raman](slack:@U1)"]);
    drop(svc);
    let svc = open(&store, 3);
    assert_eq!(speakers(&svc, "C2"), ["[Priya Raman](slack:@U1)"], "after a restart");
    // Enough renames to compact the directory's log into one snapshot line.
    for name in ["P. Raman", "Priya R.", "Priya"] {
        svc.ingest(&[person("T1", "U1", name)], now()).unwrap();
    }
    let lines = log_lines(&store);
    assert!(lines.iter().any(|(_, l)| l.starts_with("{\"people\"")), "compacted: {lines:?}");
    drop(svc);
    let svc = open(&store, 3);
    assert_eq!(speakers(&svc, "C1"), ["[Priya](slack:@U1)"], "after compaction and restart");
    assert!(svc.delete_chat("slack", "C1").unwrap());
    assert!(svc.read(|e| e.directories().len()).unwrap() == 1, "C2 still shares the people");
    assert!(svc.delete_chat("slack", "C2").unwrap());
    assert!(svc.read(|e| e.directories().is_empty()).unwrap());
    assert!(log_lines(&store).iter().all(|(chat, _)| !chat.contains("people")), "the directory left the store");
    drop(svc);
    let svc = open(&store, 3);
    assert!(svc.read(|e| e.directories().is_empty()).unwrap(), "and stays gone after a restart");
}

#[test]
fn every_instance_of_a_shared_store_shows_a_name_learned_by_another() {
    let memory = Arc::new(MemoryStore::default());
    let (a, b) = (open(&Opened::Shared(memory.clone()), 100), open(&Opened::Shared(memory.clone()), 100));
    a.ingest(&[message("C1", "T1", 1, "U1", "hello")], now()).unwrap();
    assert_eq!(speakers(&b, "C1"), ["[@U1](slack:@U1)"]);
    // A person and a message in one batch: two writes, one report line each.
    let report = b.ingest(&[person("T1", "U1", "Priya"), message("C1", "T1", 2, "U2", "hi")], now()).unwrap();
    assert_eq!((report.accepted, report.rejected.len()), (2, 0));
    assert_eq!(speakers(&a, "C1"), ["[Priya](slack:@U1)", "[@U2](slack:@U2)"], "a catches up with the directory");
    let answer =
        crate::call(&a, "get_chat_history_context", &json!({"channel": "slack", "chat_id": "C1"}), now()).unwrap();
    let rendered = serde_json::to_string(&answer).unwrap();
    assert!(rendered.contains("[Priya](slack:@U1)"), "{rendered}");
    // A chat of the workspace made through `a` after `b` started: deleting C1 through `b` keeps the people.
    a.ingest(&[message("C2", "T1", 3, "U1", "elsewhere")], now()).unwrap();
    assert!(b.delete_chat("slack", "C1").unwrap());
    let c = open(&Opened::Shared(memory.clone()), 100);
    assert_eq!(speakers(&c, "C2"), ["[Priya](slack:@U1)"], "C2 still reads T1's people");
    assert!(b.delete_chat("slack", "C2").unwrap());
    let d = open(&Opened::Shared(memory), 100);
    assert!(d.read(|e| e.directories().is_empty()).unwrap(), "the last chat took the directory along");
}

#[test]
fn only_a_credential_not_limited_to_chats_writes_people() {
    let store = Opened::Local(Arc::new(MemoryStore::default()));
    let svc = open(&store, 100);
    let limited = |channel: &str, chat: &str| channel == "slack" && chat == "C1";
    let inputs = [person("T1", "U1", "Mallory's alias")];
    let report = svc.ingest_for(&inputs, now(), &limited).unwrap();
    assert_eq!(report.rejected[0].code, ErrorCode::ForbiddenScope);
    assert!(report.rejected[0].message.contains("people directory"), "{}", report.rejected[0].message);
    // Naming the credential's own chat does not help: the directory is every chat's of the workspace.
    let mixed = json!({"type": "person", "channel": "slack", "chat_id": "C1", "user_id": "U9", "display_name": "x"});
    svc.ingest_for(&[message("C1", "T1", 1, "U9", "mine")], now(), &limited).unwrap();
    let report = svc.ingest_for(&[mixed], now(), &limited).unwrap();
    assert_eq!(report.rejected.len(), 1);
    assert_eq!(speakers(&svc, "C1"), ["[@U9](slack:@U9)"]);
    // A platform payload's people beside its message: the message is stored with its own names, the person
    // is left out of the directory.
    let envelope = json!({"type": "slack_event", "payload": {"type": "event_callback", "team_id": "T1",
        "event": {"type": "message", "channel": "C1", "user": "U7", "ts": "1770000100.000100", "text": "hi",
            "user_profile": {"real_name": "Not Really The CEO"}}}});
    let report = svc.ingest_for(&[envelope], now(), &limited).unwrap();
    assert_eq!((report.accepted, report.rejected.len()), (1, 0));
    assert_eq!(speakers(&svc, "C1")[1], "[Not Really The CEO](slack:@U7)", "the message keeps its own names");
    assert!(svc.read(|e| e.directories().is_empty()).unwrap(), "nothing reached the directory");
}

/// A Slack reaction names its user by id alone: in a chat whose messages named that user (a `user_profile`, with
/// no directory entry), the reaction reads by that name, not as `@U1` — also after a restart replays the log.
#[test]
fn a_slack_reaction_reads_as_the_chat_knows_its_user() {
    let store = Opened::Local(Arc::new(MemoryStore::default()));
    let limited = |channel: &str, chat: &str| channel == "slack" && chat == "C1";
    let envelope = |event: Value| json!({"type": "slack_event", "payload": {"type": "event_callback", "team_id": "T1", "event": event}});
    let inputs = [
        envelope(
            json!({"type": "message", "channel": "C1", "user": "U1", "ts": "1770000100.000100", "text": "ship it?",
            "user_profile": {"display_name": "Priya"}}),
        ),
        envelope(json!({"type": "reaction_added", "user": "U1", "reaction": "tada", "event_ts": "1770000110.000200",
            "item": {"type": "message", "channel": "C1", "ts": "1770000100.000100"}})),
    ];
    {
        // A chat-limited credential: nothing reaches the directory, so only the chat knows the name.
        let svc = open(&store, 100);
        let report = svc.ingest_for(&inputs, now(), &limited).unwrap();
        assert_eq!((report.accepted, report.rejected.len()), (2, 0));
        assert_eq!(speakers(&svc, "C1"), ["[Priya](slack:@U1)", "[Priya](slack:@U1)"]);
    }
    assert_eq!(speakers(&open(&store, 100), "C1"), ["[Priya](slack:@U1)", "[Priya](slack:@U1)"], "after a restart");
}
