//! The service: durable writes, rebuild on start, partial batches, forgetting a chat (its compaction:
//! `compaction.rs`).

use crate::call;
use chatctx::config::LlmSettings;
use chatctx::service::Service;
use chatctx_core::tools::ToolResponse;
use chatctx_core::{ErrorCode, Settings, Timestamp};
use serde_json::{Value, json};

/// A fresh SQLite file in a scratch directory (removed when the first value is dropped).
pub(crate) fn db(name: &str) -> (chatctx_store::testing::Scratch, std::path::PathBuf) {
    let dir = chatctx_store::testing::Scratch::new(&format!("svc-{name}"));
    let path = dir.file("chatctx.db");
    (dir, path)
}

pub(crate) fn open(path: &std::path::Path) -> (Service, u64) {
    open_keeping(path, 0)
}

/// [`open`], keeping `records` decision records per chat.
fn open_keeping(path: &std::path::Path, records: usize) -> (Service, u64) {
    let store = chatctx_store::open(&format!("sqlite://{}", path.display()), &Default::default()).unwrap();
    let mut s = Settings::default();
    s.history.mode = chatctx_core::settings::Mode::Talkative;
    s.decisions.keep = records;
    Service::open(s, LlmSettings::default(), store).unwrap()
}

pub(crate) fn message(id: u32, text: &str, att: bool) -> Value {
    let mut v = json!({"type": "message", "chat_id": "-1", "message_id": id.to_string(), "kind": "inbound_user",
                       "sent_at": 1_770_000_000 + id, "sender": {"user_id": "1", "username": "ann"}, "text": text});
    if att {
        v["attachments"] = json!([{"kind": "media.image", "label": "x.png"}]);
    }
    v
}

/// [`message`] in chat `chat`.
pub(crate) fn message_in(chat: &str, id: u32, text: &str, att: bool) -> Value {
    let mut m = message(id, text, att);
    m["chat_id"] = json!(chat);
    m
}

pub(crate) fn now() -> Timestamp {
    Timestamp::from_unix(1_770_000_100).unwrap()
}

/// The message ids stored for chat -1, oldest first.
fn ids(svc: &Service) -> Vec<String> {
    svc.read(|e| e.history("telegram", "-1", None)).unwrap().unwrap().into_iter().filter_map(|i| i.message_id).collect()
}

/// The exported documents of `chats`, as JSON text.
fn exports(svc: &Service, chats: &[String]) -> Vec<String> {
    chats
        .iter()
        .map(|c| svc.read(|e| serde_json::to_string(&e.export_conversation("telegram", c).unwrap()).unwrap()).unwrap())
        .collect()
}

pub(crate) fn value(r: ToolResponse) -> Value {
    serde_json::to_value(r).unwrap()
}

#[test]
fn everything_acknowledged_survives_a_restart() {
    let (_dir, path) = db("restart");
    let (svc, loaded) = open(&path);
    assert_eq!(loaded, 0);
    let report = svc
        .ingest(&[message(1, "look", true), json!({"type": "bogus"}), message(2, "what is it?", false)], now())
        .unwrap();
    assert_eq!(report.accepted, 2);
    assert_eq!((report.rejected[0].index, report.rejected[0].code), (1, ErrorCode::UnsupportedEvent));
    call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": {"plan": "trip"}}), now()).unwrap();
    let r = value(
        call(
            &svc,
            "resolve_reference_target",
            &json!({"chat_id": "-1", "current_message_id": "2", "sender_user_id": "1",
        "normalized_reference_hints": {"target_kind_hint": "image"}}),
            now(),
        )
        .unwrap(),
    );
    assert_eq!(r["status"], "resolved");
    // The same call again (a tool loop asking twice) changes nothing, so it logs nothing.
    let again = value(
        call(
            &svc,
            "resolve_reference_target",
            &json!({"chat_id": "-1", "current_message_id": "2", "sender_user_id": "1",
        "normalized_reference_hints": {"target_kind_hint": "image"}, "now": now().unix()}),
            now(),
        )
        .unwrap(),
    );
    assert_eq!(again["status"], "resolved");
    let before = value(
        call(&svc, "get_chat_history_context", &json!({"chat_id": "-1", "current_message_id": "2"}), now()).unwrap(),
    );
    let objects_before = svc.read(|e| serde_json::to_string(&e.objects("telegram", "-1").unwrap()).unwrap()).unwrap();
    drop(svc);

    let (svc, loaded) = open(&path);
    assert_eq!(loaded, 4, "two events, one state update, one recorded resolution");
    let after = value(
        call(&svc, "get_chat_history_context", &json!({"chat_id": "-1", "current_message_id": "2"}), now()).unwrap(),
    );
    assert_eq!(before, after, "the same answer after the restart");
    let objects_after = svc.read(|e| serde_json::to_string(&e.objects("telegram", "-1").unwrap()).unwrap()).unwrap();
    assert_eq!(objects_before, objects_after, "the resolution's activation too");
    let s = value(call(&svc, "get_scenario", &json!({"chat_id": "-1"}), now()).unwrap());
    assert_eq!((s["revision"].as_u64(), &s["state"]), (Some(1), &json!({"plan": "trip"})));
}

#[test]
fn reads_and_rejections_write_nothing() {
    let (_dir, path) = db("reads");
    let (svc, _) = open(&path);
    svc.ingest(&[message(1, "hi", false)], now()).unwrap();
    call(&svc, "get_chat_history_context", &json!({"chat_id": "-1"}), now()).unwrap();
    call(&svc, "list_active_context_objects", &json!({"chat_id": "-1"}), now()).unwrap();
    call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": {}}), now()).unwrap();
    assert!(call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": [1]}), now()).is_err());
    assert_eq!(svc.ingest(&[json!({"type": "message"})], now()).unwrap().accepted, 0);
    drop(svc);
    assert_eq!(open(&path).1, 1, "only the one accepted event was logged");
}

#[test]
fn forgetting_a_chat_is_complete_and_lasting() {
    let (_dir, path) = db("forget");
    let (svc, _) = open(&path);
    svc.ingest(&[message(1, "secret", false)], now()).unwrap();
    call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": {"pin": 1234}}), now()).unwrap();
    assert!(svc.delete_chat("telegram", "-1").unwrap());
    let err = call(&svc, "get_chat_history_context", &json!({"chat_id": "-1"}), now()).unwrap_err();
    assert_eq!(err.code, ErrorCode::UnknownChat);
    drop(svc);
    let (svc, loaded) = open(&path);
    assert_eq!(loaded, 0);
    assert_eq!(value(call(&svc, "get_scenario", &json!({"chat_id": "-1"}), now()).unwrap())["revision"], 0);
}

#[test]
fn an_import_replaces_the_chats_log() {
    let (_dir, path) = db("import");
    let (svc, _) = open(&path);
    svc.ingest(&[message(1, "a", false), message(2, "b", false)], now()).unwrap();
    let doc = svc.read(|e| serde_json::to_value(e.export_conversation("telegram", "-1").unwrap()).unwrap()).unwrap();
    svc.ingest(&[message(3, "c", false)], now()).unwrap();
    svc.import(&chatctx_core::transfer::ConversationDoc::from_value(&doc).unwrap()).unwrap();
    drop(svc);
    let (svc, loaded) = open(&path);
    assert_eq!(loaded, 1, "one import line stands for the chat");
    let h = value(call(&svc, "get_chat_history_context", &json!({"chat_id": "-1"}), now()).unwrap());
    let texts: Vec<&str> = h["items"].as_array().unwrap().iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["a", "b"]);
}

#[test]
fn retention_by_age_forgets_old_history_lastingly() {
    let (_dir, path) = db("retention");
    let (svc, _) = open(&path);
    // Messages at +1..+5 s; message 2 carries an image object; the state stays whatever the age.
    let batch: Vec<Value> = (1..=5).map(|i| message(i, &format!("m{i}"), i == 2)).collect();
    svc.ingest(&batch, now()).unwrap();
    call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": {"plan": 1}}), now()).unwrap();
    // Keep 97 s back from +100 s: messages sent before +3 s go.
    let age = chatctx_core::time::Span::from_secs(97);
    assert_eq!(svc.expire(age, now()).unwrap(), 2);
    assert_eq!(ids(&svc), ["3", "4", "5"]);
    let objects = svc.read(|e| e.objects("telegram", "-1")).unwrap().unwrap();
    assert!(objects.iter().all(|o| o.source_message_id.as_deref() != Some("2")), "{objects:?}");
    assert_eq!(svc.expire(age, now()).unwrap(), 0, "nothing more to forget");
    drop(svc);
    // Gone from the store too; the state survives.
    let (svc, _) = open(&path);
    assert_eq!(ids(&svc), ["3", "4", "5"]);
    assert_eq!(
        value(call(&svc, "get_scenario", &json!({"chat_id": "-1"}), now()).unwrap())["state"],
        json!({"plan": 1})
    );
}

#[test]
fn a_failed_write_is_refused_and_leaves_no_trace() {
    let inner = std::sync::Arc::new(chatctx_store::MemoryStore::default());
    let faulty = chatctx_store::testing::Faulty::new(inner.clone());
    let mut s = Settings::default();
    s.history.mode = chatctx_core::settings::Mode::Talkative;
    let (svc, _) = Service::open(s, LlmSettings::default(), chatctx_store::Opened::Local(faulty.clone())).unwrap();
    svc.ingest(&[message(1, "kept", false)], now()).unwrap();
    faulty.fail(true);
    // The injected fault is a full disk: the writer is told so (507 over HTTP).
    let err = svc.ingest(&[message(2, "lost", false)], now()).unwrap_err();
    assert_eq!(err.code, ErrorCode::InsufficientStorage);
    let err = call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": {"a": 1}}), now()).unwrap_err();
    assert_eq!(err.code, ErrorCode::InsufficientStorage);
    assert_eq!(ids(&svc), ["1"], "the refused message is not in memory either");
    faulty.fail(false);
    svc.ingest(&[message(3, "kept", false)], now()).unwrap();
    assert_eq!(ids(&svc), ["1", "3"]);
    assert_eq!(value(call(&svc, "get_scenario", &json!({"chat_id": "-1"}), now()).unwrap())["revision"], 0);
    let mut logged = 0;
    chatctx_store::Store::load(&*inner, &mut |_, _| logged += 1).unwrap();
    assert_eq!(logged, 2, "only the acknowledged messages are in the store");
}

/// Concurrent writers share commits; every acknowledged message is durable and each is stored once.
#[test]
fn concurrent_writers_are_all_durable() {
    let (_dir, path) = db("concurrent");
    let (svc, _) = open(&path);
    let svc = std::sync::Arc::new(svc);
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let svc = svc.clone();
            std::thread::spawn(move || {
                // 160 messages in all: under the conversation cap (200), so every one stays.
                for i in 0..40u32 {
                    let id = 1000 + t * 100 + i;
                    svc.ingest(&[message(id, "x", false)], now()).unwrap();
                    if i % 10 == 0 {
                        call(&svc, "update_scenario", &json!({"chat_id": "-1", "patch": {format!("t{t}"): i}}), now())
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let before = svc.read(|e| e.history("telegram", "-1", None)).unwrap().unwrap();
    let state = value(call(&svc, "get_scenario", &json!({"chat_id": "-1"}), now()).unwrap());
    drop(svc);
    let (svc, _) = open(&path);
    let after = svc.read(|e| e.history("telegram", "-1", None)).unwrap().unwrap();
    assert_eq!(after.len(), 160);
    assert_eq!(after, before);
    assert_eq!(value(call(&svc, "get_scenario", &json!({"chat_id": "-1"}), now()).unwrap()), state);
}

/// A restart reads and decodes the log on one thread while it applies it on another, in batches: a log of
/// several batches (messages over five chats, state patches and resolutions, whose lines take their time from
/// the log) rebuilds the state the server held, byte for byte; an operation that cannot be applied deep in it
/// still stops the start, named by its chat and position.
#[test]
fn a_long_log_rebuilds_the_same_state_and_stops_at_a_damaged_operation() {
    let (_dir, path) = db("long-log");
    // Twenty chats of about 120 operations each: past two batches of the replay, short of compaction.
    let chats: Vec<String> = (1..=20).map(|c| format!("-{c}")).collect();
    let (svc, _) = open(&path);
    for i in 1..=2_200u32 {
        let chat = chats[i as usize % 20].as_str();
        let mut m = message(i, &format!("message {i} about the photo"), i % 4 == 0);
        m["chat_id"] = json!(chat);
        assert_eq!(svc.ingest(&[m], now()).unwrap().accepted, 1);
        if i % 13 == 0 {
            call(&svc, "update_scenario", &json!({"chat_id": chat, "patch": {"step": i}}), now()).unwrap();
        }
        if i % 17 == 0 {
            let args = json!({"chat_id": chat, "current_message_id": i.to_string(), "sender_user_id": "1",
                              "normalized_reference_hints": {"target_kind_hint": "image"}});
            call(&svc, "resolve_reference_target", &args, now()).unwrap();
        }
    }
    let export = |svc: &Service| exports(svc, &chats);
    let before = export(&svc);
    drop(svc);
    let (again, loaded) = open(&path);
    assert!(loaded > 2_048, "{loaded} operations: several batches");
    assert_eq!(export(&again), before);
    drop(again);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let (chat, pos): (String, i64) = conn
        .query_row("SELECT chat_id, pos FROM ops ORDER BY seq LIMIT 1 OFFSET 1500", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    conn.execute(
        "UPDATE ops SET line = '{\"event\": {\"type\": \"message\"}}' WHERE chat_id = ?1 AND pos = ?2",
        rusqlite::params![chat, pos],
    )
    .unwrap();
    drop(conn);
    let store = chatctx_store::open(&format!("sqlite://{}", path.display()), &Default::default()).unwrap();
    let why = format!("{:#}", Service::open(Settings::default(), LlmSettings::default(), store).err().unwrap());
    assert!(why.contains(&format!("logged operation {pos} of chat \"{chat}\"")), "{why}");
}

/// Batches of every size sent at once (small ones applied on the async threads, those past 256 inputs on at
/// most one blocking thread per core) are each whole and durable when answered: a restart holds all of them.
#[test]
fn concurrent_batches_of_every_size_are_durable_when_answered() {
    let (_dir, path) = db("concurrent-batches");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let svc = std::sync::Arc::new(open(&path).0);
    let sizes = [1u32, 100, 256, 257, 1000, 3, 600, 300, 999, 50];
    let last = |chat: u32, svc: &Service| {
        let items = svc.read(|e| e.history("telegram", &format!("-{chat}"), None)).unwrap().unwrap();
        (items.len(), items.last().and_then(|i| i.message_id.clone()))
    };
    rt.block_on(async {
        let sent: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(c, &n)| {
                let batch: Vec<Value> = (1..=n)
                    .map(|i| {
                        let mut m = message(i, "hello", false);
                        m["chat_id"] = json!(format!("-{}", c + 1));
                        m
                    })
                    .collect();
                let svc = svc.clone();
                tokio::spawn(async move { svc.ingest_async(batch, now(), std::sync::Arc::new(|_, _| true)).await })
            })
            .collect();
        for (task, n) in sent.into_iter().zip(sizes) {
            assert_eq!(task.await.unwrap().unwrap().accepted, n as usize);
        }
    });
    let answered: Vec<_> = (1..=sizes.len() as u32).map(|c| last(c, &svc)).collect();
    drop(svc);
    let (again, _) = open(&path);
    for (c, &n) in sizes.iter().enumerate() {
        let want = (n.min(200) as usize, Some(n.to_string()));
        assert_eq!(answered[c], want, "chat -{} as answered", c + 1);
        assert_eq!(last(c as u32 + 1, &again), want, "chat -{} after a restart", c + 1);
    }
}

/// A batch large enough to be staged on a second thread while the engine applies it (`service::input`) answers,
/// stores and reloads exactly as the same inputs sent in batches small enough to be staged first: the same
/// acceptances, rejections and decisions at the same positions, the same conversations, the same log.
#[test]
fn a_large_batch_staged_alongside_its_application_answers_as_small_batches_do() {
    let tg = |id: u32, chat: &str, text: &str| {
        json!({"type": "telegram_update", "bot": {"user_id": "42"}, "update": {"update_id": id, "message": {
            "message_id": id, "date": 1_770_000_000 + id, "chat": {"id": chat.parse::<i64>().unwrap(), "type": "supergroup"},
            "from": {"id": 7, "is_bot": false, "first_name": "Bo"}, "text": text}}})
    };
    let mut inputs = Vec::new();
    for i in 1..=900u32 {
        let chat = format!("-{}", i % 5 + 1);
        let mut m = message(i, &format!("message {i} about the photo"), i % 4 == 0);
        m["chat_id"] = json!(chat);
        inputs.push(match i {
            _ if i % 37 == 0 => json!({"type": "bogus"}),
            _ if i % 41 == 0 => json!({"type": "message", "chat_id": chat, "message_id": "x", "sent_at": "soon"}),
            _ if i % 29 == 0 => tg(10_000 + i, &chat, "via the platform @bot"),
            _ if i % 31 == 0 => json!({"type": "telegram_update", "bot": {"user_id": "42"},
                                       "update": {"update_id": 20_000 + i, "callback_query": {"id": "q"}}}),
            _ if i % 53 == 0 => {
                // An edit of an earlier message of the same chat.
                let mut edit = message(i - 5, "the corrected text", false);
                edit["chat_id"] = json!(chat);
                edit
            }
            _ if i % 61 == 0 => json!({"type": "delete", "chat_id": chat, "message_ids": [(i - 10).to_string()]}),
            _ => m,
        });
    }
    inputs.extend(inputs[100..140].to_vec()); // redelivered
    // A decision record holding a message's text is dropped by the message's edit, however the batch is staged.
    let mut secret = message(1000, "the secret is swordfish", false);
    secret["chat_id"] = json!("-2");
    let mut redacted = secret.clone();
    redacted["text"] = json!("the secret is [redacted]");
    inputs.insert(500, redacted);
    let remember = |svc: &Service| {
        assert_eq!(svc.ingest(std::slice::from_ref(&secret), now()).unwrap().accepted, 1);
        let c = chatctx_core::tools::ToolCall::decode(
            "get_chat_history_context",
            &json!({"chat_id": "-2", "explain": true}),
        )
        .unwrap();
        let mut answer = svc.call(&c, now()).unwrap();
        let explain = answer.take_explain().unwrap();
        let record = chatctx::decisions::Record::new("r", c.name(), c.scope().clone(), now(), explain, &mut answer);
        svc.decisions().push(record);
        assert_eq!(svc.decisions().newest("telegram", "-2", 10).len(), 1);
    };
    let chats: Vec<String> = (1..=5).map(|c| format!("-{c}")).collect();
    let state = |svc: &Service| exports(svc, &chats);

    let (_large_dir, large_path) = db("staged-ahead");
    let (large, _) = open_keeping(&large_path, 8);
    remember(&large);
    let whole = large.ingest(&inputs, now()).unwrap();
    let (_small_dir, small_path) = db("staged-first");
    let (small, _) = open_keeping(&small_path, 8);
    remember(&small);
    let mut parts = chatctx::service::IngestReport::default();
    for (k, batch) in inputs.chunks(100).enumerate() {
        let mut r = small.ingest(batch, now()).unwrap();
        r.rejected.iter_mut().for_each(|x| x.index += k * 100);
        r.decisions.iter_mut().for_each(|d| d.index += k * 100);
        parts.accepted += r.accepted;
        parts.ignored += r.ignored;
        parts.rejected_count += r.rejected_count;
        parts.rejected.extend(r.rejected);
        parts.decisions.extend(r.decisions);
        for (kind, n) in r.ignored_kinds {
            *parts.ignored_kinds.entry(kind).or_default() += n;
        }
    }
    assert!(whole.rejected_count >= 40 && whole.ignored > 20 && whole.decisions.len() > 700, "{whole:?}");
    assert_eq!(whole, parts);
    assert!(large.decisions().newest("telegram", "-2", 10).is_empty());
    assert!(small.decisions().newest("telegram", "-2", 10).is_empty());
    let before = state(&large);
    assert_eq!(before, state(&small));
    drop((large, small));
    let (large, _) = open(&large_path);
    let (small, _) = open(&small_path);
    assert_eq!(state(&large), before);
    assert_eq!(state(&small), before);
}
