//! Several instances on one shared store (PostgreSQL, or a shared memory store in one process): coherence,
//! no lost updates, forgetting and importing across instances, and writes that fail.

use crate::call;
use std::sync::Arc;

use chatctx::config::LlmSettings;
use chatctx::service::Service;
use chatctx_core::{ErrorCode, Settings, Timestamp};
use chatctx_store::Opened;
use serde_json::{Value, json};

/// Opens one more instance on the same store.
type Instances = Box<dyn Fn() -> Service>;

fn settings() -> Settings {
    let mut s = Settings::default();
    s.history.mode = chatctx_core::settings::Mode::Talkative;
    s
}

fn service(store: Opened) -> Service {
    Service::open(settings(), LlmSettings::default(), store).unwrap().0
}

/// Every shared backend this run can reach: a shared memory store always, PostgreSQL when configured.
fn backends(test: &str) -> Vec<(&'static str, Instances)> {
    let memory = Arc::new(chatctx_store::MemoryStore::default());
    let mut out: Vec<(&'static str, Instances)> =
        vec![("memory", Box::new(move || service(Opened::Shared(memory.clone()))))];
    if let Some(url) = chatctx_store::testing::test_postgres_url(test) {
        out.push(("postgres", Box::new(move || service(chatctx_store::open(&url, &Default::default()).unwrap()))));
    }
    if let Some(url) = chatctx_store::testing::test_pgbouncer_url(&format!("{test}_bouncer")) {
        out.push(("pgbouncer", Box::new(move || service(chatctx_store::open(&url, &Default::default()).unwrap()))));
    }
    out
}

fn now() -> Timestamp {
    Timestamp::from_unix(1_770_000_500).unwrap()
}

fn message(chat: &str, id: u32, text: &str, image: bool) -> Value {
    let mut v = json!({"type": "message", "chat_id": chat, "message_id": id.to_string(), "kind": "inbound_user",
                       "sent_at": 1_770_000_000 + id, "sender": {"user_id": (id % 3).to_string(), "username": "ann"},
                       "text": text});
    if image {
        v["attachments"] = json!([{"kind": "media.image", "label": format!("photo{id}.png")}]);
    }
    v
}

/// One step of a script: an ingest or a tool call, answered as JSON text.
enum Step {
    Ingest(Vec<Value>),
    Call(&'static str, Value),
    Delete(&'static str),
    Import(Value),
}

fn run(svc: &Service, step: &Step) -> String {
    match step {
        Step::Ingest(events) => match svc.ingest(events, now()) {
            Ok(r) => serde_json::to_string(&r).unwrap(),
            Err(e) => format!("error {e:?}"),
        },
        Step::Call(tool, args) => match call(svc, tool, args, now()) {
            Ok(r) => serde_json::to_string(&r).unwrap(),
            Err(e) => format!("error {:?} {}", e.code, e.message),
        },
        Step::Delete(chat) => format!("{:?}", svc.delete_chat("telegram", chat).map_err(|e| e.code)),
        Step::Import(doc) => format!(
            "{:?}",
            chatctx_core::transfer::ConversationDoc::from_value(doc).and_then(|d| svc.import(&d)).map_err(|e| e.code)
        ),
    }
}

fn script() -> Vec<Step> {
    use Step::*;
    let resolve = |chat: &str, current: u32, hint: &str| {
        json!({"chat_id": chat, "current_message_id": current.to_string(), "sender_user_id": "1",
               "normalized_reference_hints": {"target_kind_hint": hint, "positional_hint": "latest"}})
    };
    let history = |chat: &str, current: u32| {
        json!({"chat_id": chat, "current_message": {"message_id": current.to_string(), "text": "and this?",
               "sender": {"user_id": "1", "username": "ann"}}})
    };
    // A conversation moved in from elsewhere.
    let elsewhere = service(Opened::Local(Arc::new(chatctx_store::MemoryStore::default())));
    elsewhere.ingest(&[message("-9", 1, "moved here", true)], now()).unwrap();
    call(&elsewhere, "update_scenario", &json!({"chat_id": "-9", "patch": {"moved": true}}), now()).unwrap();
    let doc =
        serde_json::to_value(elsewhere.read(|e| e.export_conversation("telegram", "-9")).unwrap().unwrap()).unwrap();
    vec![
        Ingest(vec![message("-1", 1, "look at this", true), message("-2", 1, "hello", false)]),
        Call("resolve_reference_target", resolve("-1", 2, "image")),
        Ingest(vec![message("-1", 2, "what is in the photo?", false), message("-1", 3, "another", true)]),
        Call("resolve_reference_target", resolve("-1", 4, "image")),
        Call("resolve_reference_target", resolve("-1", 4, "image")),
        Call("list_active_context_objects", json!({"chat_id": "-1"})),
        Ingest(vec![message("-1", 2, "edited: what is in the picture?", false)]),
        Call("get_chat_history_context", history("-1", 5)),
        Call("update_scenario", json!({"chat_id": "-1", "patch": {"household": {"adults": 2}}})),
        Call(
            "update_scenario",
            json!({"chat_id": "-1", "patch": {"household": {"children": 1}}, "expected_revision": 1}),
        ),
        Call("update_scenario", json!({"chat_id": "-1", "patch": {"stale": true}, "expected_revision": 1})),
        Call("get_scenario", json!({"chat_id": "-1", "revisions": true})),
        Call("get_chat_history_context", history("-1", 6)),
        Call("get_chat_history_context", history("-2", 2)),
        Delete("-2"),
        Call("get_scenario", json!({"chat_id": "-2"})),
        Call("list_active_context_objects", json!({"chat_id": "-2"})),
        Ingest(vec![message("-2", 7, "back again", false)]),
        Call("get_chat_history_context", history("-2", 8)),
        Import(doc),
        Call("get_scenario", json!({"chat_id": "-9"})),
        Call("resolve_reference_target", resolve("-9", 2, "image")),
        Call("revert_scenario", json!({"chat_id": "-1", "to_revision": 1})),
        Call("get_scenario", json!({"chat_id": "-1"})),
        Ingest(vec![json!({"type": "message", "chat_id": "-1"})]),
        Call("list_active_context_objects", json!({"chat_id": "-1"})),
    ]
}

/// An interleaved script through two instances gives the same answers, byte for byte, as one instance on
/// an unshared store; a third instance started afterwards rebuilds the same state.
#[test]
fn two_instances_answer_as_one() {
    let single = service(Opened::Local(Arc::new(chatctx_store::MemoryStore::default())));
    let expected: Vec<String> = script().iter().map(|s| run(&single, s)).collect();
    for (name, open) in backends("chatctx_two_instances") {
        let (a, b) = (open(), open());
        for (i, (step, want)) in script().iter().zip(&expected).enumerate() {
            // Alternate in an irregular pattern, so that writes and reads meet on both sides.
            let on = if (i * 7 + i / 3) % 2 == 0 { &a } else { &b };
            assert_eq!(&run(on, step), want, "{name}: step {i}");
        }
        let c = open();
        let last = script().len() - 1;
        assert_eq!(run(&c, &script()[last]), expected[last], "{name}: a new instance");
        let history = |svc: &Service| svc.read_chat("telegram", "-1", |e| e.history("telegram", "-1", None)).unwrap();
        assert_eq!(history(&a), history(&c), "{name}");
    }
}

/// Two instances updating one scenario at once, each with `expected_revision` and a retry on conflict: every
/// accepted update is there, and the revision counts them exactly.
#[test]
fn concurrent_scenario_updates_across_instances_lose_nothing() {
    for (name, open) in backends("chatctx_concurrent_updates") {
        let first = open();
        first.ingest(&[message("-5", 1, "plan", false)], now()).unwrap();
        let instances = [Arc::new(first), Arc::new(open())];
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let svc = instances[w % 2].clone();
                std::thread::spawn(move || {
                    let mut conflicts = 0;
                    for i in 0..15 {
                        loop {
                            let got = call(&svc, "get_scenario", &json!({"chat_id": "-5"}), now()).unwrap();
                            let revision = serde_json::to_value(got).unwrap()["revision"].clone();
                            let patch = json!({"chat_id": "-5", "patch": {format!("w{w}_{i}"): i}, "expected_revision": revision});
                            match call(&svc, "update_scenario", &patch, now()) {
                                Ok(_) => break,
                                Err(e) if e.code == ErrorCode::RevisionConflict => conflicts += 1,
                                Err(e) => panic!("{e:?}"),
                            }
                        }
                    }
                    conflicts
                })
            })
            .collect();
        let conflicts: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
        for svc in &instances {
            let state =
                serde_json::to_value(call(svc, "get_scenario", &json!({"chat_id": "-5"}), now()).unwrap()).unwrap();
            assert_eq!(state["revision"], 60, "{name}: one revision per accepted update ({conflicts} conflicts)");
            assert_eq!(state["state"].as_object().unwrap().len(), 60, "{name}: no update lost");
        }
    }
}

/// A chat written far past its compaction point by one instance is still the same on another that last
/// looked long before, and on a fresh one; the store holds a compacted log.
#[test]
fn compaction_keeps_instances_coherent() {
    for (name, open) in backends("chatctx_compaction") {
        let (a, b) = (open(), open());
        a.ingest(&[message("-3", 1, "start", true)], now()).unwrap();
        let ids = |svc: &Service| {
            svc.read_chat("telegram", "-3", |e| e.history("telegram", "-3", None))
                .unwrap()
                .unwrap()
                .into_iter()
                .filter_map(|i| i.message_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&b).len(), 1);
        for chunk in (2..900u32).collect::<Vec<_>>().chunks(50) {
            let batch: Vec<Value> = chunk.iter().map(|&i| message("-3", i, "more", i % 10 == 0)).collect();
            a.ingest(&batch, now()).unwrap();
        }
        assert_eq!(ids(&b), ids(&a), "{name}: the instance behind converges through the snapshot");
        assert_eq!(ids(&open()), ids(&a), "{name}: so does a new one");
    }
}

/// A write the store refuses is refused to the caller and leaves neither instance changed.
#[test]
fn a_refused_shared_write_changes_nothing() {
    let inner = Arc::new(chatctx_store::MemoryStore::default());
    let faulty = chatctx_store::testing::Faulty::new(inner.clone());
    let a = service(Opened::Shared(faulty.clone()));
    let b = service(Opened::Shared(inner.clone()));
    a.ingest(&[message("-4", 1, "kept", false)], now()).unwrap();
    faulty.fail(true);
    let report = a.ingest(&[message("-4", 2, "lost", false)], now()).unwrap();
    assert_eq!((report.accepted, report.rejected[0].code), (0, ErrorCode::Internal));
    let err = call(&a, "update_scenario", &json!({"chat_id": "-4", "patch": {"x": 1}}), now()).unwrap_err();
    assert_eq!(err.code, ErrorCode::Internal);
    faulty.fail(false);
    for svc in [&a, &b] {
        let items = svc.read_chat("telegram", "-4", |e| e.history("telegram", "-4", None)).unwrap().unwrap();
        assert_eq!(items.len(), 1, "only the acknowledged message");
        let state = serde_json::to_value(call(svc, "get_scenario", &json!({"chat_id": "-4"}), now()).unwrap()).unwrap();
        assert_eq!(state["revision"], 0);
    }
}

/// A vote names only its poll. An instance that never loaded the poll's chat (it appeared after the instance
/// started, through another one) finds the chat in the store and records the vote there; deleting the chat
/// forgets the poll's id too.
#[test]
fn a_vote_reaches_a_poll_sent_through_another_instance() {
    for (name, open) in backends("chatctx_poll_votes") {
        let b = open(); // started before the chat exists
        let a = open();
        let mut poll = message("-6", 1, "lunch?", false);
        poll["attachments"] = json!([{"kind": "poll", "label": "Lunch where?", "external_id": "poll-6"}]);
        a.ingest(&[poll], now()).unwrap();
        let vote = json!({"type": "activation", "external_id": "poll-6", "event": "voted", "at": 1_770_000_400, "by_user_id": "2"});
        let report = b.ingest(&[vote], now()).unwrap();
        assert_eq!((report.accepted, report.rejected.len()), (1, 0), "{name}");
        let active =
            serde_json::to_value(call(&a, "list_active_context_objects", &json!({"chat_id": "-6"}), now()).unwrap())
                .unwrap();
        let poll = &active["objects"][0];
        assert_eq!(
            (poll["kind"].as_str(), poll["activation"].as_str()),
            (Some("poll"), Some("voted")),
            "{name}: {active}"
        );
        let doc = serde_json::to_value(a.read(|e| e.export_conversation("telegram", "-6")).unwrap().unwrap()).unwrap();
        assert!(a.delete_chat("telegram", "-6").unwrap());
        let c = open();
        let report = c
            .ingest(
                &[json!({"type": "activation", "external_id": "poll-6", "event": "voted", "at": 1_770_000_450})],
                now(),
            )
            .unwrap();
        assert_eq!(report.accepted, 1, "{name}: a vote on a forgotten poll changes nothing");
        assert!(
            c.read_chat("telegram", "-6", |e| e.objects("telegram", "-6")).unwrap().is_err(),
            "{name}: the chat stays forgotten"
        );
        // Imported back through one instance, the poll takes votes through another that never saw it.
        let d = open();
        a.import(&chatctx_core::transfer::ConversationDoc::from_value(&doc).unwrap()).unwrap();
        let vote = json!({"type": "activation", "external_id": "poll-6", "event": "voted", "at": 1_770_000_460});
        assert_eq!(d.ingest(&[vote], now()).unwrap().accepted, 1);
        let objects = c.read_chat("telegram", "-6", |e| e.objects("telegram", "-6")).unwrap().unwrap();
        assert_eq!(objects[0].activated_at, Some(Timestamp::from_unix(1_770_000_460).unwrap()), "{name}");
    }
}

/// Issue 28, point 2: a logged operation another instance wrote that does not apply here is never skipped
/// silently: the instance counts it, logs it as an error, and says it is not ready until it restarts.
#[test]
fn an_operation_that_does_not_apply_makes_the_instance_not_ready() {
    let memory = Arc::new(chatctx_store::MemoryStore::default());
    let a = service(Opened::Shared(memory.clone()));
    let b = service(Opened::Shared(memory.clone()));
    a.ingest(&[message("-6", 1, "first", false)], now()).unwrap();
    assert_eq!(b.read_chat("telegram", "-6", |e| e.history("telegram", "-6", None).unwrap().len()).unwrap(), 1);
    assert!(b.store_reachable().is_ok());
    // A line the version of `a` wrote that `b` cannot apply (here: a state patch of a tool `b` does not know).
    let mut head = 0;
    chatctx_store::SharedLog::since(&*memory, "telegram", "-6", 0, &mut |p, _| head = head.max(p)).unwrap();
    let bad = r#"{"call": "update_scenario", "args": {"chat_id": "-6", "patch": "not an object", "now": 1770000000}}"#;
    chatctx_store::SharedLog::append_at(&*memory, "telegram", "-6", head, &[bad.to_owned()]).unwrap();
    a.ingest(&[message("-6", 2, "second", false)], now()).unwrap();
    assert_eq!(b.read_chat("telegram", "-6", |e| e.history("telegram", "-6", None).unwrap().len()).unwrap(), 2);
    let (skipped, newest) = b.skipped_operations();
    assert_eq!(skipped, 1);
    assert!(newest.unwrap().contains("does not apply"));
    let e = b.store_reachable().unwrap_err();
    assert!(e.message.contains("could not be applied here"), "{e}");
    assert_eq!(a.skipped_operations().0, 1, "the other instance caught up past it too");
}
