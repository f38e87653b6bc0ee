//! A clean stop snapshots the chats whose logs grew (`Service::snapshot_for_restart`, `store.stop_snapshot_timeout`):
//! the next start reads one line for each of them instead of their tails, and nothing any answer shows changes.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::call;
use crate::service::{db, message_in, now, value};
use chatctx::config::LlmSettings;
use chatctx::service::{Options, Service, StopSnapshots};
use chatctx_core::Settings;
use serde_json::{Value, json};

/// Never set: the stops of these tests are not cut short.
static GO: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The service on `path`, compacting every 40 operations (so a stop snapshots chats with at least 5).
fn open(path: &std::path::Path) -> (Service, u64) {
    let store = chatctx_store::open(&format!("sqlite://{}", path.display()), &Default::default()).unwrap();
    Service::open_with(Settings::default(), LlmSettings::default(), store, Options { compact_after: 40 }).unwrap()
}

/// Lines per chat in the store at `path`.
fn lines(path: &std::path::Path) -> BTreeMap<String, usize> {
    let store = chatctx_store::open(&format!("sqlite://{}", path.display()), &Default::default()).unwrap();
    let chatctx_store::Opened::Local(log) = store else { panic!("SQLite is a local store") };
    let mut n = BTreeMap::new();
    log.load(&mut |_, op| *n.entry(op.chat_id).or_default() += 1).unwrap();
    n
}

/// Chats -1, -2 and -3 with 30, 12 (and a state update) and 3 messages.
fn fill(svc: &Service) {
    for (chat, count) in [("-1", 30u32), ("-2", 12), ("-3", 3)] {
        let batch: Vec<Value> =
            (1..=count).map(|i| message_in(chat, i, &format!("{chat} says {i}"), i % 4 == 0)).collect();
        assert_eq!(svc.ingest(&batch, now()).unwrap().accepted, count as usize);
    }
    call(svc, "update_scenario", &json!({"chat_id": "-2", "patch": {"plan": "tea"}}), now()).unwrap();
}

/// What each chat holds and what a history call answers, byte for byte.
fn seen(svc: &Service) -> Vec<String> {
    ["-1", "-2", "-3"]
        .iter()
        .flat_map(|chat| {
            let doc = svc.read(|e| serde_json::to_string(&e.export_conversation("telegram", chat).unwrap()).unwrap());
            let args = json!({"chat_id": chat, "current_message_id": "3", "explain": true});
            let history = value(call(svc, "get_chat_history_context", &args, now()).unwrap());
            [doc.unwrap(), history.to_string()]
        })
        .collect()
}

#[test]
fn a_clean_stop_snapshots_the_grown_chats_and_changes_no_answer() {
    let (_dir, path) = db("stop");
    let (svc, _) = open(&path);
    fill(&svc);
    let before = seen(&svc);
    let stop = svc.snapshot_for_restart(Duration::from_secs(60), &GO).unwrap();
    // -1 (30) and -2 (13) have at least an eighth of 40 operations since their last snapshot; -3 (3) does not.
    assert_eq!(stop, StopSnapshots { snapshotted: 2, left: 0, operations: 43 });
    // The service goes on as before, and a second stop finds nothing that grew.
    assert_eq!(seen(&svc), before);
    assert_eq!(svc.snapshot_for_restart(Duration::from_secs(60), &GO).unwrap(), StopSnapshots::default());
    drop(svc);
    assert_eq!(lines(&path), BTreeMap::from([("-1".into(), 1), ("-2".into(), 1), ("-3".into(), 3)]));
    let (svc, loaded) = open(&path);
    assert_eq!(loaded, 5, "one line each for -1 and -2, and -3's three");
    assert_eq!(seen(&svc), before, "the same state after the start, exactly");
}

#[test]
fn a_stop_without_time_or_cut_short_snapshots_nothing() {
    let (_dir, path) = db("stop-none");
    let (svc, _) = open(&path);
    fill(&svc);
    let before = lines(&path);
    assert_eq!(
        svc.snapshot_for_restart(Duration::ZERO, &GO).unwrap(),
        StopSnapshots { snapshotted: 0, left: 2, operations: 0 }
    );
    // Cut short before its first write, as a second signal does: the same.
    let cut = std::sync::atomic::AtomicBool::new(true);
    assert_eq!(svc.snapshot_for_restart(Duration::from_secs(60), &cut).unwrap().left, 2);
    drop(svc);
    assert_eq!(lines(&path), before);
    assert_eq!(open(&path).1, 46);
}

/// `chatctx serve` stopped by SIGTERM snapshots before it exits, and the next start says how little it replayed.
#[test]
fn serve_snapshots_when_it_is_stopped() {
    let (_dir, store) = crate::http::db("stop-serve");
    let c = crate::http::client();
    let env = [("CHATCTX_STORE__COMPACT_AFTER", "400")];
    let rebuilt = |said: &[String]| {
        said.iter().find_map(|l| l.split("rebuilt ").nth(1).and_then(|r| r.split(' ').next()?.parse::<u64>().ok()))
    };
    let history = |base: &str| c.get(format!("{base}/v1/chats/-1/history")).send().unwrap().text().unwrap();
    let (mut child, _, log, base) = crate::http::spawn_logged(&store, &env);
    let batch: Vec<Value> = (1..=120).map(crate::http::msg).collect();
    let r = c.post(format!("{base}/v1/events")).body(Value::Array(batch).to_string()).send().unwrap();
    assert_eq!(r.status(), 200);
    let before = history(&base);
    let term = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(term.success());
    let said: Vec<String> = log.map_while(Result::ok).collect();
    assert!(child.wait().unwrap().success(), "a clean stop exits 0: {said:?}");
    assert!(
        said.iter().any(|l| l.contains("snapshotted 1 chats") && l.contains("120 fewer logged operations")),
        "the stop says what it did: {said:?}"
    );
    let (child, said, _, base) = crate::http::spawn_logged(&store, &env);
    let running = crate::http::Server { child, base };
    assert_eq!(rebuilt(&said), Some(1), "one snapshot line: {said:?}");
    assert_eq!(history(&running.base), before);
}

/// Many chats go in several transactions, their snapshots made beside the writes; a store that refuses the writes
/// leaves every log as it was, and the stop says how many chats it left.
#[test]
fn many_chats_are_snapshotted_in_turn_and_a_refused_write_leaves_the_logs() {
    let inner = std::sync::Arc::new(chatctx_store::MemoryStore::default());
    let faulty = chatctx_store::testing::Faulty::new(inner.clone());
    let open = || {
        let store = chatctx_store::Opened::Local(faulty.clone());
        Service::open_with(Settings::default(), LlmSettings::default(), store, Options { compact_after: 40 }).unwrap()
    };
    let (svc, _) = open();
    let batch: Vec<Value> =
        (0..900u32).map(|i| message_in(&format!("-{}", i % 150 + 1), i + 1, "hello", false)).collect();
    assert_eq!(svc.ingest(&batch, now()).unwrap().accepted, 900);
    faulty.fail(true);
    assert_eq!(
        svc.snapshot_for_restart(Duration::from_secs(60), &GO).unwrap(),
        StopSnapshots { left: 150, ..Default::default() }
    );
    faulty.fail(false);
    assert_eq!(open().1, 900, "every log as it was");
    let stop = svc.snapshot_for_restart(Duration::from_secs(60), &GO).unwrap();
    assert_eq!(stop, StopSnapshots { snapshotted: 150, left: 0, operations: 900 });
    drop(svc);
    let (again, loaded) = open();
    assert_eq!(loaded, 150, "one line a chat");
    let held = (1..=150).map(|c| again.read(|e| e.history("telegram", &format!("-{c}"), None)).unwrap().unwrap().len());
    assert!(held.clone().all(|n| n == 6), "{:?}", held.collect::<Vec<_>>());
}

/// The server snapshots while it still answers: writes that come meanwhile, to the chats being snapshotted and to
/// others, are neither lost nor applied twice at the next start (each is written after the snapshot that does not
/// hold it, or before the one that does).
#[test]
fn writes_during_the_stop_snapshots_are_kept_exactly() {
    let (_dir, path) = db("stop-busy");
    let (svc, _) = open(&path);
    let to = |chat: u32, id: u32| message_in(&format!("-{chat}"), id, &format!("{chat}/{id}"), id.is_multiple_of(5));
    let batch: Vec<Value> = (0..3_000u32).map(|i| to(i % 100 + 1, i + 1)).collect();
    assert_eq!(svc.ingest(&batch, now()).unwrap().accepted, 3_000);
    let svc = std::sync::Arc::new(svc);
    let writer = {
        let svc = svc.clone();
        std::thread::spawn(move || {
            for i in 0..200u32 {
                svc.ingest(&[to(i % 120 + 1, 10_000 + i), to(i % 7 + 1, 20_000 + i)], now()).unwrap();
                // A state update is not idempotent: replayed twice, its revision would count twice.
                let patch = json!({"chat_id": format!("-{}", i % 9 + 1), "patch": {"n": i}});
                call(&svc, "update_scenario", &patch, now()).unwrap();
            }
        })
    };
    let stop = svc.snapshot_for_restart(Duration::from_secs(60), &GO).unwrap();
    writer.join().unwrap();
    assert_eq!(stop.left, 0);
    assert!(stop.snapshotted >= 100, "{stop:?}");
    let export = |svc: &Service| -> Vec<String> {
        (1..=120)
            .map(|c| svc.read(|e| serde_json::to_string(&e.export_conversation("telegram", &format!("-{c}")).unwrap())))
            .map(|d| d.unwrap().unwrap())
            .collect()
    };
    let before = export(&svc);
    drop(svc);
    let (again, _) = open(&path);
    assert_eq!(export(&again), before);
}

/// A stop signal that comes as soon as the server says where it listens is not lost: the server stops as it
/// should (and exits 0), rather than being ended by the signal's default action or ignoring it. Several times,
/// since it is about timing.
#[test]
fn a_stop_signal_right_after_the_start_is_honoured() {
    for round in 0..5 {
        let (_dir, store) = crate::http::db(&format!("stop-early-{round}"));
        let (mut child, _, log, _) = crate::http::spawn_logged(&store, &[]);
        let term = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        assert!(term.success());
        let said: Vec<String> = log.map_while(Result::ok).collect();
        let status = child.wait().unwrap();
        assert!(status.success(), "round {round}: {status:?}, {said:?}");
        assert!(said.iter().any(|l| l.contains("stopped")), "round {round}: {said:?}");
    }
}
