//! The service's compaction: long logs replaced by snapshots without changing any answer, many chats due at once
//! (or at a start) spread over later writes, a failed write's snapshots kept due, every chat's turn under load.

use crate::call;
use crate::service::{db, message, message_in, now, open, value};
use chatctx::config::LlmSettings;
use chatctx::service::Service;
use chatctx_core::Settings;
use serde_json::{Value, json};

#[test]
fn long_logs_are_compacted_without_changing_any_answer() {
    let (_dir, path) = db("compact");
    let (svc, _) = open(&path);
    for chunk in (1..=1000u32).collect::<Vec<_>>().chunks(100) {
        let batch: Vec<Value> = chunk.iter().map(|&i| message(i, &format!("m{i}"), i % 7 == 0)).collect();
        assert_eq!(svc.ingest(&batch, now()).unwrap().accepted, 100);
    }
    call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": {"kept": true}}), now()).unwrap();
    let before = value(
        call(&svc, "get_chat_history_context", &json!({"chat_id": "-1", "current_message_id": "1000"}), now()).unwrap(),
    );
    let export_before =
        svc.read(|e| serde_json::to_string(&e.export_conversation("telegram", "-1").unwrap()).unwrap()).unwrap();
    drop(svc);
    let (svc, loaded) = open(&path);
    assert!(loaded < 500, "1,001 operations were logged; the snapshot leaves {loaded}");
    let after = value(
        call(&svc, "get_chat_history_context", &json!({"chat_id": "-1", "current_message_id": "1000"}), now()).unwrap(),
    );
    assert_eq!(before, after);
    let export_after =
        svc.read(|e| serde_json::to_string(&e.export_conversation("telegram", "-1").unwrap()).unwrap()).unwrap();
    assert_eq!(export_before, export_after, "the same conversation, exactly");
}

/// Routine compaction is spread over writes: a write that makes twenty chats due snapshots a few of them, and
/// later writes (to any chat) snapshot the rest, so no one write pays for every chat's compaction; nothing is
/// lost on the way.
#[test]
fn compaction_of_many_chats_at_once_is_spread_over_later_writes() {
    let (_dir, path) = db("spread");
    let store = chatctx_store::open(&format!("sqlite://{}", path.display()), &Default::default()).unwrap();
    let options = chatctx::service::Options { compact_after: 5 };
    let svc = Service::open_with(Settings::default(), LlmSettings::default(), store.clone(), options).unwrap().0;
    let lines_per_chat = || {
        let mut n = std::collections::BTreeMap::<String, usize>::new();
        let chatctx_store::Opened::Local(log) = &store else { panic!() };
        log.load(&mut |_, op| *n.entry(op.chat_id).or_default() += 1).unwrap();
        n
    };
    let batch: Vec<Value> =
        (0..100u32).map(|i| message_in(&format!("-{}", i % 20 + 1), i + 1, "hello", false)).collect();
    assert_eq!(svc.ingest(&batch, now()).unwrap().accepted, 100);
    let compacted =
        |n: &std::collections::BTreeMap<String, usize>| n.iter().filter(|(c, l)| *c != "-99" && **l == 1).count();
    let first = compacted(&lines_per_chat());
    assert!((1..20).contains(&first), "one write snapshots a few of the twenty due chats, not all: {first}");
    for i in 0..20u32 {
        svc.ingest(&[message_in("-99", 1000 + i, "later", false)], now()).unwrap();
    }
    let after = lines_per_chat();
    assert_eq!(compacted(&after), 20, "the rest followed with later writes: {after:?}");
    let before: Vec<usize> =
        (1..=20).map(|c| svc.read(|e| e.history("telegram", &format!("-{c}"), None)).unwrap().unwrap().len()).collect();
    drop(svc);
    let (again, _) = open(&path);
    let kept: Vec<usize> = (1..=20)
        .map(|c| again.read(|e| e.history("telegram", &format!("-{c}"), None)).unwrap().unwrap().len())
        .collect();
    assert_eq!(kept, before);
    assert!(kept.iter().all(|n| *n == 5));
}

/// Logs that grew past `store.compact_after` over earlier runs are not compacted at the start (which would make
/// the start pay for them): they wait for the writes after it, a few per write, and nothing is lost.
#[test]
fn logs_due_at_a_start_are_compacted_by_the_writes_after_it() {
    let (_dir, path) = db("due-at-start");
    let store = chatctx_store::open(&format!("sqlite://{}", path.display()), &Default::default()).unwrap();
    let open_with = |compact_after: u64| {
        let options = chatctx::service::Options { compact_after };
        Service::open_with(Settings::default(), LlmSettings::default(), store.clone(), options).unwrap()
    };
    let lines_per_chat = || {
        let mut n = std::collections::BTreeMap::<String, usize>::new();
        let chatctx_store::Opened::Local(log) = &store else { panic!() };
        log.load(&mut |_, op| *n.entry(op.chat_id).or_default() += 1).unwrap();
        n
    };
    let to = |chat: String, id: u32| message_in(&chat, id, "hello", false);
    let (svc, _) = open_with(1000);
    let batch: Vec<Value> = (0..400u32).map(|i| to(format!("-{}", i % 40 + 1), i + 1)).collect();
    assert_eq!(svc.ingest(&batch, now()).unwrap().accepted, 400);
    let history = |svc: &Service| -> Vec<usize> {
        (1..=40).map(|c| svc.read(|e| e.history("telegram", &format!("-{c}"), None)).unwrap().unwrap().len()).collect()
    };
    let before = history(&svc);
    drop(svc);
    // Forty chats of ten operations each, due once the threshold is five: starting twice compacts nothing.
    for _ in 0..2 {
        let (svc, read) = open_with(5);
        assert_eq!(read, 400, "the start replays every operation and writes nothing");
        assert_eq!(history(&svc), before);
    }
    assert!(lines_per_chat().values().all(|n| *n == 10));
    let (svc, _) = open_with(5);
    let compacted =
        |n: &std::collections::BTreeMap<String, usize>| n.iter().filter(|(c, l)| *c != "-99" && **l == 1).count();
    svc.ingest(&[to("-99".to_owned(), 1000)], now()).unwrap();
    let first = compacted(&lines_per_chat());
    assert!((1..=16).contains(&first), "one write takes a few of the forty, at most sixteen: {first}");
    for i in 1..=20u32 {
        svc.ingest(&[to("-99".to_owned(), 1000 + i)], now()).unwrap();
    }
    let after = lines_per_chat();
    assert_eq!(compacted(&after), 40, "later writes take the rest: {after:?}");
    drop(svc);
    let (again, read) = open_with(5);
    assert_eq!(history(&again), before, "nothing lost");
    assert!(read < 100, "the next start replays snapshots, not the old logs: {read}");
}

/// A write that fails gives back the snapshots it carried: the chats stay due and a later write compacts them,
/// even when nothing is written to them again.
#[test]
fn snapshots_of_a_failed_write_stay_due() {
    let inner = std::sync::Arc::new(chatctx_store::MemoryStore::default());
    let faulty = chatctx_store::testing::Faulty::new(inner.clone());
    let open_with = |compact_after: u64| {
        let options = chatctx::service::Options { compact_after };
        let store = chatctx_store::Opened::Local(faulty.clone());
        Service::open_with(Settings::default(), LlmSettings::default(), store, options).unwrap().0
    };
    let to = |chat: &str, id: u32| message_in(chat, id, "hello", false);
    let svc = open_with(1000);
    let batch: Vec<Value> = (0..400u32).map(|i| to(&format!("-{}", i % 40 + 1), i + 1)).collect();
    assert_eq!(svc.ingest(&batch, now()).unwrap().accepted, 400);
    drop(svc);
    let svc = open_with(5);
    faulty.fail(true);
    assert!(svc.ingest(&[to("-99", 1000)], now()).is_err(), "the write carrying the first snapshots fails");
    faulty.fail(false);
    for i in 1..=30u32 {
        svc.ingest(&[to("-99", 1000 + i)], now()).unwrap();
    }
    let mut lines = std::collections::BTreeMap::<String, usize>::new();
    chatctx_store::Store::load(&*inner, &mut |_, op| *lines.entry(op.chat_id).or_default() += 1).unwrap();
    let compacted = lines.iter().filter(|(c, n)| *c != "-99" && **n == 1).count();
    assert_eq!(compacted, 40, "every due chat was compacted in the end: {lines:?}");
}

/// Under a steady load that makes chats due faster than writes take them, every chat still gets its turn: the
/// waiting chats are served oldest first, so no chat's log grows without bound. (Served in key order, the first
/// chats took every turn: after 150 writes half of the twenty had 142-150 lines each.)
#[test]
fn every_chat_gets_its_turn_at_compaction_under_steady_load() {
    let inner = std::sync::Arc::new(chatctx_store::MemoryStore::default());
    let options = chatctx::service::Options { compact_after: 5 };
    let store = chatctx_store::Opened::Local(inner.clone());
    let (svc, _) = Service::open_with(Settings::default(), LlmSettings::default(), store, options).unwrap();
    let lines = || {
        let mut n = std::collections::BTreeMap::<String, usize>::new();
        chatctx_store::Store::load(&*inner, &mut |_, op| *n.entry(op.chat_id).or_default() += 1).unwrap();
        n
    };
    // Twenty chats, one message each per write: four come due per write, and a write takes about three.
    let mut longest = 0;
    for w in 0..150u32 {
        let batch: Vec<Value> =
            (0..20u32).map(|c| message_in(&format!("-{}", c + 1), w * 20 + c + 1, "hello", false)).collect();
        assert_eq!(svc.ingest(&batch, now()).unwrap().accepted, 20);
        longest = longest.max(lines().into_values().max().unwrap_or(0));
    }
    let now_lines = lines();
    assert_eq!(now_lines.len(), 20);
    assert!(longest <= 20, "a chat's log reached {longest} lines (threshold 5): {now_lines:?}");
}
