//! Nothing acknowledged is lost: deep inputs are bounded where they are accepted and whatever is stored reads
//! back; compaction and restart give the state that was acknowledged; compaction stays due across short runs; a
//! store that refuses writes or runs out of disk loses nothing acknowledged. (A damaged store: `damage.rs`.)

use std::sync::Arc;

use crate::call;
use chatctx::config::LlmSettings;
use chatctx::service::{Options, Service};
use chatctx_core::{ErrorCode, Settings, Timestamp};
use chatctx_store::{Log, MemoryStore, Op, Opened, SqliteStore, Store};
use proptest::prelude::*;
use serde_json::{Value, json};

pub(crate) fn now() -> Timestamp {
    Timestamp::from_unix(1_770_000_500).unwrap()
}

pub(crate) fn settings() -> Settings {
    let mut s = Settings::default();
    s.history.mode = chatctx_core::settings::Mode::Talkative;
    s.conversation.cache_max_per_conversation = 6;
    s
}

pub(crate) fn open(store: &Opened, compact_after: u64) -> Service {
    Service::open_with(settings(), LlmSettings::default(), store.clone(), Options { compact_after }).unwrap().0
}

pub(crate) fn message(chat: &str, id: u32, text: &str, reply: Option<u32>) -> Value {
    let mut v = json!({"type": "message", "chat_id": chat, "message_id": id.to_string(), "kind": "inbound_user",
        "sent_at": 1_770_000_000 + id, "sender": {"user_id": (id % 3).to_string(), "username": format!("u{}", id % 3)},
        "text": text, "attachments": [{"kind": "media.image", "label": format!("{id}.png")}]});
    if let Some(r) = reply {
        v["reply_to_message_id"] = json!(r.to_string());
    }
    v
}

/// A value nested `depth` levels deep (1 = `{"k": 0}`).
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(0), |inner, _| json!({ "k": inner }))
}

/// What a restart must give back: every chat's exported document.
fn state(svc: &Service, chats: &[&str]) -> Vec<Option<String>> {
    chats
        .iter()
        .map(|c| {
            svc.read(|e| e.export_conversation("telegram", c).ok().map(|d| serde_json::to_string(&d).unwrap())).unwrap()
        })
        .collect()
}

fn ops_of(store: &dyn Store) -> Vec<(u64, Op)> {
    let mut out = Vec::new();
    store.load(&mut |pos, op| out.push((pos, op))).unwrap();
    out
}

#[test]
fn nesting_is_bounded_where_it_is_accepted_and_the_deepest_accepted_state_survives_compaction() {
    let store = Opened::Local(Arc::new(MemoryStore::default()));
    let svc = open(&store, 2);
    let max = Settings::default().state.max_depth;
    // The patch object is level 1: a value nested max - 1 deep under a key is the deepest state accepted.
    let deep = call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": {"a": nested(max)}}), now());
    let err = deep.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidPatch);
    assert!(err.message.contains("state.max_depth"), "{}", err.message);
    call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": {"a": nested(max - 1)}}), now()).unwrap();
    // Two more operations: the chat's log is compacted into a snapshot holding the deep state.
    svc.ingest(&[message("-1", 1, "one", None), message("-1", 2, "two", None)], now()).unwrap();
    let before = state(&svc, &["-1"]);
    drop(svc);
    let Opened::Local(log) = &store else { unreachable!() };
    let lines = ops_of(&**log);
    assert!(lines.iter().any(|(_, o)| o.line.starts_with("{\"import\"")), "compacted: {lines:?}");
    let again = open(&store, 2);
    assert_eq!(state(&again, &["-1"]), before);
}

#[test]
fn every_line_the_reader_is_given_up_to_twice_the_largest_input_reads() {
    use chatctx::logline::{LogLine, READ_DEPTH};
    let call_line = |depth: usize| {
        json!({"call": "update_scenario", "args": {"chat_id": "-1", "patch": {"a": nested(depth)}, "now": 1}})
            .to_string()
    };
    // Deeper than serde_json's own limit (128), and still read, on a thread with a small stack.
    let line = call_line(READ_DEPTH - 4);
    let read = std::thread::Builder::new().stack_size(1 << 20).spawn(move || LogLine::parse(&line).is_ok());
    assert!(read.unwrap().join().unwrap());
    let too_deep = LogLine::parse(&call_line(READ_DEPTH + 1)).unwrap_err();
    assert!(too_deep.error.message.contains("levels deep"), "{}", too_deep.error.message);
}

/// One acknowledged operation of the property test.
#[derive(Debug, Clone)]
enum Step {
    Message { chat: usize, reply: bool, text: u8 },
    Patch { chat: usize, key: u8, depth: usize, delete: bool },
    Resolve { chat: usize },
    Delete { chat: usize },
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..3usize, any::<bool>(), any::<u8>()).prop_map(|(chat, reply, text)| Step::Message { chat, reply, text }),
        3 => (0..3usize, 0..4u8, 0..31usize, any::<bool>())
            .prop_map(|(chat, key, depth, delete)| Step::Patch { chat, key, depth, delete }),
        2 => (0..3usize).prop_map(|chat| Step::Resolve { chat }),
        1 => (0..3usize).prop_map(|chat| Step::Delete { chat }),
        1 => Just(Step::Restart),
    ]
}

const CHATS: [&str; 3] = ["-1", "-2", "-3"];

fn apply(svc: &Service, s: &Step, id: &mut u32) {
    match s {
        Step::Message { chat, reply, text } => {
            *id += 1;
            let reply = reply.then(|| id.saturating_sub(2)).filter(|r| *r > 0);
            let text = format!("message {text} about the {} one", ["photo", "poll", "link"][*text as usize % 3]);
            let report = svc.ingest(&[message(CHATS[*chat], *id, &text, reply)], now()).unwrap();
            assert_eq!(report.accepted, 1, "{report:?}");
        }
        Step::Patch { chat, key, depth, delete } => {
            let v = if *delete { Value::Null } else { nested(*depth) };
            let patch = json!({ format!("k{key}"): v });
            call(svc, "update_scenario", &json!({"chat_id": CHATS[*chat], "patch": patch}), now()).unwrap();
        }
        Step::Resolve { chat } => {
            let args = json!({"chat_id": CHATS[*chat], "reference_text": "this photo", "current_message_id": id.to_string(),
                              "record": true});
            let _ = call(svc, "resolve_reference_target", &args, now());
        }
        Step::Delete { chat } => {
            svc.delete_chat("telegram", CHATS[*chat]).unwrap();
        }
        Step::Restart => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random acknowledged operations, with compaction every few operations and restarts in between: the
    /// state after a restart is the state that was acknowledged, byte for byte.
    #[test]
    fn acknowledged_operations_survive_compaction_and_restart(
        steps in prop::collection::vec(step(), 1..60),
        compact_after in 1u64..12,
    ) {
        let store = Opened::Local(Arc::new(MemoryStore::default()));
        let mut svc = open(&store, compact_after);
        let mut id = 0;
        for s in &steps {
            if matches!(s, Step::Restart) {
                let before = state(&svc, &CHATS);
                drop(svc);
                svc = open(&store, compact_after);
                prop_assert_eq!(state(&svc, &CHATS), before);
            } else {
                apply(&svc, s, &mut id);
            }
        }
        let before = state(&svc, &CHATS);
        drop(svc);
        prop_assert_eq!(state(&open(&store, compact_after), &CHATS), before);
    }
}

#[test]
fn compaction_stays_due_across_short_runs() {
    let store = Opened::Local(Arc::new(MemoryStore::default()));
    let Opened::Local(log) = &store else { unreachable!() };
    let mut id = 0;
    // Each run logs 30 operations, under the threshold of 50; three runs make 90.
    for _ in 0..3 {
        let svc = open(&store, 50);
        for _ in 0..30 {
            id += 1;
            svc.ingest(&[message("-1", id, "hello", None)], now()).unwrap();
        }
    }
    let lines = ops_of(&**log);
    assert!(lines.len() < 50, "compacted at the start of a run: {} lines left", lines.len());
    assert!(lines[0].1.line.starts_with("{\"import\""));
}

/// A writer that waits while many later writes fail still learns its own write's fate: it is refused, never
/// acknowledged because the failure it was dropped by is long past (a writer could wait behind 64 failures
/// and be told its dropped change was stored).
#[test]
fn a_writer_behind_many_failed_writes_is_not_acknowledged() {
    use std::future::Future;
    let FaultyService { dir: _dir, faulty, svc, .. } = faulty_service("durability-late-waiter");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let _entered = rt.enter();
    let anyone: chatctx::service::Allowed = Arc::new(|_: &str, _: &str| true);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    // The writing thread may refuse the write before its first poll returns (it runs on another core): then
    // the write was refused on its own, which is fine but not the case this test is for, so it tries again
    // in another chat, a few times at most.
    for attempt in 1..=20u32 {
        let chat = format!("-{attempt}");
        faulty.fail(true);
        // Queued and left waiting (polled once), while 100 other writes are refused.
        let mut late = Box::pin(svc.ingest_async(vec![message(&chat, 1, "late", None)], now(), anyone.clone()));
        if let std::task::Poll::Ready(outcome) = late.as_mut().poll(&mut cx) {
            assert!(outcome.is_err(), "refused at once, and said so: {outcome:?}");
            continue;
        }
        for id in 2..102 {
            assert!(svc.ingest(&[message(&chat, id, "refused", None)], now()).is_err());
        }
        faulty.fail(false);
        let outcome = rt.block_on(late);
        let held = svc.read(|e| e.history("telegram", &chat, None)).unwrap().map(|h| h.len()).unwrap_or(0);
        assert_eq!(held, 0, "nothing refused is held");
        assert!(outcome.is_err(), "the late writer is told its change was not stored: {outcome:?}");
        return;
    }
    panic!("the write was never still waiting after its first poll in 20 tries");
}

/// The store refuses writes (a full disk) again and again in the middle of a concurrent load: afterwards every
/// acknowledged write is present, no refused one is, reads were answered throughout, and readiness followed
/// the store.
#[test]
fn a_store_that_refuses_writes_mid_load_loses_nothing_acknowledged() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let FaultyService { dir: _dir, path, faulty, settings: s, svc } = faulty_service("durability-faults");
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u32)
        .map(|w| {
            let svc = svc.clone();
            std::thread::spawn(move || {
                let mut outcome = Vec::new();
                for i in 0..150u32 {
                    let id = w * 1000 + i + 1;
                    let chat = format!("-{}", id % 3 + 1);
                    let acked =
                        matches!(svc.ingest(&[message(&chat, id, "load", None)], now()), Ok(r) if r.accepted == 1);
                    outcome.push((chat, id.to_string(), acked));
                }
                outcome
            })
        })
        .collect();
    let reader = {
        let (svc, done) = (svc.clone(), done.clone());
        std::thread::spawn(move || {
            let (mut reads, mut slowest) = (0u32, std::time::Duration::ZERO);
            while !done.load(Ordering::SeqCst) {
                let started = std::time::Instant::now();
                svc.read(|e| e.history("telegram", "-1", None).map(|h| h.len())).unwrap().ok();
                slowest = slowest.max(started.elapsed());
                reads += 1;
            }
            (reads, slowest)
        })
    };
    let toggler = {
        let (faulty, done) = (faulty.clone(), done.clone());
        std::thread::spawn(move || {
            let mut on = false;
            while !done.load(Ordering::SeqCst) {
                on = !on;
                faulty.fail(on);
                std::thread::sleep(std::time::Duration::from_millis(if on { 3 } else { 7 }));
            }
            faulty.fail(false);
        })
    };
    let outcome: Vec<(String, String, bool)> = writers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    done.store(true, Ordering::SeqCst);
    toggler.join().unwrap();
    let (reads, slowest) = reader.join().unwrap();
    assert!(faulty.refused() > 0, "faults were injected");
    let acked = outcome.iter().filter(|o| o.2).count();
    assert!(acked > 0 && acked < outcome.len(), "some writes were acknowledged and some refused: {acked}");
    assert!(reads > 100, "reads went on: {reads}");
    assert!(slowest < std::time::Duration::from_secs(2), "no read waited on a rebuild: {slowest:?}");
    let present = |svc: &Service| -> std::collections::HashSet<(String, String)> {
        CHATS
            .iter()
            .flat_map(|c| {
                let items = svc.read(|e| e.history("telegram", c, None)).unwrap().unwrap_or_default();
                items.into_iter().filter_map(|i| i.message_id.map(|m| ((*c).to_owned(), m))).collect::<Vec<_>>()
            })
            .collect()
    };
    let check = |held: &std::collections::HashSet<(String, String)>, when: &str| {
        for (chat, id, ack) in &outcome {
            assert_eq!(held.contains(&(chat.clone(), id.clone())), *ack, "message {id} of {chat} {when}");
        }
    };
    check(&present(&svc), "while running");
    // Readiness follows the store: refused while it refuses writes, ready again once it takes them.
    faulty.fail(true);
    assert!(svc.ingest(&[message("-1", 9999, "refused", None)], now()).is_err());
    assert!(svc.store_reachable().is_err());
    faulty.fail(false);
    svc.store_reachable().unwrap();
    drop(svc);
    let again = Service::open_with(s, LlmSettings::default(), sqlite_at(&path), Options::default()).unwrap().0;
    check(&present(&again), "after a restart");
}

/// Large batches, whose snapshots are made on a second thread while the store writes the rest of the round, against
/// a store that refuses every third write: each acknowledged batch is whole after a restart, no refused one is
/// there, and the chats' logs were compacted along the way.
#[test]
fn large_batches_compacted_alongside_their_write_lose_nothing_acknowledged() {
    let FaultyService { dir: _dir, path, faulty, settings: s, svc } =
        faulty_service_with("durability-large-batches", Options { compact_after: 40 });
    let mut outcome = Vec::new();
    for b in 0..12u32 {
        let batch: Vec<Value> =
            (0..300u32).map(|i| message(CHATS[i as usize % 3], b * 300 + i + 1, "load", None)).collect();
        faulty.fail(b % 3 == 1);
        let acked = svc.ingest(&batch, now()).is_ok_and(|r| r.accepted == 300);
        assert_eq!(acked, b % 3 != 1, "batch {b}");
        outcome.extend((0..300u32).map(|i| (CHATS[i as usize % 3].to_owned(), (b * 300 + i + 1).to_string(), acked)));
    }
    faulty.fail(false);
    drop(svc);
    let store = SqliteStore::open(&path).unwrap();
    let mut lines = 0;
    store.load(&mut |_, _| lines += 1).unwrap();
    assert!(lines < 1000, "the logs were compacted: {lines} lines for 2,400 messages");
    drop(store);
    let again = Service::open_with(s, LlmSettings::default(), sqlite_at(&path), Options::default()).unwrap().0;
    for (chat, id, acked) in &outcome {
        let items = again.read(|e| e.history("telegram", chat, None)).unwrap().unwrap_or_default();
        let held = items.iter().any(|i| i.message_id.as_deref() == Some(id.as_str()));
        assert_eq!(held, *acked, "message {id} of {chat} after a restart");
    }
}

/// A service on an SQLite store behind [`chatctx_store::testing::Faulty`], keeping every message.
struct FaultyService {
    dir: chatctx_store::testing::Scratch,
    path: std::path::PathBuf,
    faulty: Arc<chatctx_store::testing::Faulty>,
    settings: Settings,
    svc: Arc<Service>,
}

fn faulty_service(name: &str) -> FaultyService {
    faulty_service_with(name, Options::default())
}

fn faulty_service_with(name: &str, options: Options) -> FaultyService {
    let dir = chatctx_store::testing::Scratch::new(name);
    let path = dir.file("chatctx.db");
    let sqlite: Arc<dyn Log> = Arc::new(SqliteStore::open(&path).unwrap());
    let faulty = chatctx_store::testing::Faulty::new(sqlite);
    let mut settings = settings();
    settings.conversation.cache_max_per_conversation = 100_000;
    let opened = Opened::Local(faulty.clone());
    let svc = Arc::new(Service::open_with(settings.clone(), LlmSettings::default(), opened, options).unwrap().0);
    FaultyService { dir, path, faulty, settings, svc }
}

fn sqlite_at(path: &std::path::Path) -> Opened {
    Opened::Local(Arc::new(SqliteStore::open(path).unwrap()))
}

/// Senders that come and go (and rename) do not grow a chat's people table without bound; the kept items
/// keep their speakers, and a restart (through compaction) gives the same table.
#[test]
fn the_people_table_is_bounded() {
    let mut s = settings();
    s.conversation.max_people = 16;
    let store = Opened::Local(Arc::new(MemoryStore::default()));
    let svc =
        Service::open_with(s.clone(), LlmSettings::default(), store.clone(), Options { compact_after: 7 }).unwrap().0;
    for id in 1..=500u32 {
        // Every other message comes from one person under a new name; the rest from new people.
        let (user, name) = if id % 2 == 0 {
            ("7".to_owned(), format!("Name {id}"))
        } else {
            (format!("u{id}"), format!("Person {id}"))
        };
        let mut m = message("-1", id, "hi", None);
        m["sender"] = json!({"user_id": user, "display_name": name});
        svc.ingest(&[m], now()).unwrap();
    }
    let doc: Value = serde_json::from_str(state(&svc, &["-1"])[0].as_deref().unwrap()).unwrap();
    let people = doc["people"].as_array().unwrap().len();
    assert!(people <= 16, "{people} profiles kept");
    let history = svc.read(|e| e.history("telegram", "-1", None)).unwrap().unwrap();
    let speakers: Vec<String> = history.iter().map(|i| i.sender.nickname.clone()).collect();
    assert_eq!(speakers, ["Person 495", "Name 496", "Person 497", "Name 498", "Person 499", "Name 500"]);
    let before = state(&svc, &["-1"]);
    drop(svc);
    let again = Service::open_with(s, LlmSettings::default(), store, Options { compact_after: 7 }).unwrap().0;
    assert_eq!(state(&again, &["-1"]), before);
}

/// The readers are at least as permissive as the writers: a state as deep as the configuration allows
/// (deeper than serde_json's default limit) goes through replay, export, import and replay again.
#[test]
fn the_deepest_allowed_state_goes_through_export_and_import() {
    let dir = chatctx_store::testing::Scratch::new("durability-deep-export");
    let cfg = dir.file("deep.toml");
    std::fs::write(&cfg, "[state]\nmax_depth = 200\nmax_bytes = 100000\n").unwrap();
    let cfg = cfg.to_str().unwrap();
    let replay = format!(
        "{}\n",
        json!({"call": "update_scenario", "args": {"chat_id": "-1", "patch": {"a": nested(199)}, "now": 1_770_000_000}})
    );
    let file = dir.file("deep.jsonl");
    std::fs::write(&file, &replay).unwrap();
    let out = crate::run_with_stdin(&["replay", "-c", cfg, file.to_str().unwrap()], "");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"changed\":true"), "{out:?}");
    let out = crate::run_with_stdin(&["export", "--chat", "-1", "-c", cfg, file.to_str().unwrap()], "");
    assert!(out.status.success(), "{out:?}");
    let doc = dir.file("doc.json");
    std::fs::write(&doc, &out.stdout).unwrap();
    let imported = crate::run_with_stdin(&["import", doc.to_str().unwrap()], "");
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    let lines = String::from_utf8_lossy(&imported.stdout).into_owned()
        + &json!({"call": "get_scenario", "args": {"chat_id": "-1"}}).to_string();
    let out = crate::run_with_stdin(&["replay", "-c", cfg], &lines);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"revision\":1") && !text.contains("error"), "{text}");
}

/// The same through the async path the server uses (writers waiting without a thread each, one of them
/// writing the queue): acknowledged writes are there after a restart, refused ones are not.
#[test]
fn async_writers_lose_nothing_acknowledged_when_the_store_refuses_writes() {
    let FaultyService { dir: _dir, path, faulty, settings: s, svc } = faulty_service("durability-async-faults");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outcome: Vec<(String, String, bool)> = runtime.block_on(async {
        let toggler = {
            let faulty = faulty.clone();
            tokio::spawn(async move {
                for i in 0..60 {
                    faulty.fail(i % 2 == 1);
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                faulty.fail(false);
            })
        };
        let tasks: Vec<_> = (0..64u32)
            .map(|w| {
                let svc = svc.clone();
                tokio::spawn(async move {
                    let mut out = Vec::new();
                    for i in 0..10u32 {
                        let id = w * 100 + i + 1;
                        let chat = format!("-{}", id % 3 + 1);
                        let allowed: chatctx::service::Allowed = Arc::new(|_, _| true);
                        let r = svc.ingest_async(vec![message(&chat, id, "load", None)], now(), allowed).await;
                        out.push((chat, id.to_string(), matches!(r, Ok(r) if r.accepted == 1)));
                    }
                    out
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        toggler.await.unwrap();
        all
    });
    assert!(faulty.refused() > 0);
    let acked = outcome.iter().filter(|o| o.2).count();
    assert!(acked > 0, "some writes were acknowledged");
    drop(runtime);
    drop(svc);
    let again = Service::open_with(s, LlmSettings::default(), sqlite_at(&path), Options::default()).unwrap().0;
    for (chat, id, ack) in &outcome {
        let held = again.read(|e| e.history("telegram", chat, None)).unwrap().unwrap_or_default();
        assert_eq!(held.iter().any(|i| i.message_id.as_deref() == Some(id)), *ack, "message {id} of {chat}");
    }
}

/// How many times `marker` appears in the store's files (the database, its WAL and shared memory).
fn copies_in_files(path: &std::path::Path, marker: &str) -> usize {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::read(format!("{}{suffix}", path.display())).ok())
        .map(|bytes| bytes.windows(marker.len()).filter(|w| *w == marker.as_bytes()).count())
        .sum()
}

/// Forgetting a chat, compacting a log and expiring old history leave no copy of the text in the files,
/// while the server runs and after it stops.
#[test]
fn deleted_and_expired_text_leaves_the_files() {
    let dir = chatctx_store::testing::Scratch::new("durability-scrub");
    let path = dir.file("chatctx.db");
    let mut s = settings();
    s.conversation.cache_max_per_conversation = 1000;
    let svc = Service::open_with(s.clone(), LlmSettings::default(), sqlite_at(&path), Options::default()).unwrap().0;
    let batch: Vec<Value> = (1..=300).map(|i| message("-1", i, &format!("DELETE-ME-MARKER {i}"), None)).collect();
    svc.ingest(&batch, now()).unwrap();
    svc.ingest(&[message("-2", 1000, "KEEP-ME-MARKER", None)], now()).unwrap();
    assert!(copies_in_files(&path, "DELETE-ME-MARKER") >= 300);
    assert!(svc.delete_chat("telegram", "-1").unwrap());
    assert_eq!(copies_in_files(&path, "DELETE-ME-MARKER"), 0, "while running");
    assert!(copies_in_files(&path, "KEEP-ME-MARKER") > 0, "the other chat is kept");
    // An edit: the earlier text leaves the files once the edit is stored.
    svc.ingest(&[message("-2", 1001, "EDITED-AWAY-MARKER", None)], now()).unwrap();
    svc.ingest(&[message("-2", 1001, "the corrected text", None)], now()).unwrap();
    assert_eq!(copies_in_files(&path, "EDITED-AWAY-MARKER"), 0, "the edited text is gone");
    // A message deleted on the platform: its text leaves the files once the delete is stored.
    svc.ingest(&[message("-2", 1002, "DELETED-MESSAGE-MARKER", None)], now()).unwrap();
    assert!(copies_in_files(&path, "DELETED-MESSAGE-MARKER") > 0);
    let delete = json!({"type": "delete", "chat_id": "-2", "message_ids": ["1002"]});
    assert_eq!(svc.ingest(&[delete], now()).unwrap().accepted, 1);
    assert_eq!(copies_in_files(&path, "DELETED-MESSAGE-MARKER"), 0, "the deleted text is gone");
    assert!(copies_in_files(&path, "KEEP-ME-MARKER") > 0, "the rest of the chat is kept");
    // Retention: messages older than the cutoff go, and their text with them.
    let old: Vec<Value> = (1..=50).map(|i| message("-3", i, &format!("EXPIRE-ME-MARKER {i}"), None)).collect();
    svc.ingest(&old, now()).unwrap();
    let mut fresh = message("-3", 5000, "fresh", None);
    fresh["sent_at"] = json!(1_770_100_000);
    svc.ingest(&[fresh], now()).unwrap();
    let expired =
        svc.expire(chatctx_core::time::Span::from_secs(3600), Timestamp::from_unix(1_770_100_100).unwrap()).unwrap();
    assert!(expired >= 50, "{expired}");
    assert_eq!(copies_in_files(&path, "EXPIRE-ME-MARKER"), 0, "expired text is gone");
    drop(svc);
    assert_eq!(copies_in_files(&path, "DELETE-ME-MARKER") + copies_in_files(&path, "EXPIRE-ME-MARKER"), 0);
}

/// Issue 28, point 14: on a full disk a write is answered `insufficient_storage` (507 over HTTP) rather than a
/// generic `internal`, and readiness follows the real writes: a probe that fits in a free page does not make the
/// instance ready while writes of the size that failed are refused.
#[test]
fn a_full_disk_is_reported_and_not_ready() {
    let FaultyService { dir: _dir, path: _, faulty, settings: _, svc } = faulty_service("durability-full-disk");
    svc.ingest(&[message("-1", 1, "before", None)], now()).unwrap();
    assert!(svc.store_reachable().is_ok());
    faulty.pass_probes_up_to(4096);
    faulty.fail(true);
    let report = svc.ingest(&[message("-1", 2, "refused", None)], now());
    let code = match report {
        Ok(r) => r.rejected.first().map(|r| r.code),
        Err(e) => Some(e.code),
    };
    assert_eq!(code, Some(ErrorCode::InsufficientStorage));
    assert_eq!(chatctx::http::status_of(ErrorCode::InsufficientStorage).as_u16(), 507);
    assert!(svc.store_reachable().is_err(), "a small probe fits, but the instance is not ready");
    assert!(svc.store_reachable().is_err(), "and stays so while the disk is full");
    faulty.fail(false);
    assert!(svc.store_reachable().is_ok(), "ready again once writes of that size fit");
    svc.ingest(&[message("-1", 3, "after", None)], now()).unwrap();
}
