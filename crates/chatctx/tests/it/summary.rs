//! The background summarizer (docs/protocol.md §6.6) against the chat-completions stub: it runs after N
//! messages with the previous summary and only the new messages, fails open, and its result is in the durable
//! log, so a restart or a `chatctx replay` with no model gives the same answers byte for byte.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chatctx::config::{LlmSettings, SummarizerSettings};
use chatctx::service::{Options, Service};
use chatctx_core::time::Span;
use chatctx_core::{Settings, Timestamp};
use chatctx_store::Opened;
use chatctx_store::{SqliteStore, Store};
use serde_json::{Value, json};

use crate::call;
use crate::triage::{Reply, stub};

const T0: i64 = 1_770_000_000;

fn settings() -> Settings {
    let mut s = Settings::default();
    s.history.mode = chatctx_core::settings::Mode::Talkative;
    // The model is the summarizer's alone here (no triage of history).
    s.conversation.selector = chatctx_core::settings::Selector::Lexical;
    s
}

fn message(i: i64) -> Value {
    json!({"type": "message", "chat_id": "-1", "message_id": i.to_string(), "kind": "inbound_user",
           "sent_at": T0 + i * 60, "sender": {"user_id": "1", "username": "ann", "first_name": "Ann"},
           "text": format!("note-{i:02}")})
}

fn sqlite(path: &std::path::Path) -> Opened {
    Opened::Local(Arc::new(SqliteStore::open(path).unwrap()))
}

/// A service on `store` whose summarizer (every `every` messages, `timeout`) talks to `url`.
fn service(store: Opened, url: &str, every: usize, timeout: i64) -> Arc<Service> {
    let llm = LlmSettings {
        base_url: Some(url.to_owned()),
        api_key_env: None,
        models: BTreeMap::new(),
        ..LlmSettings::default()
    };
    let summary = SummarizerSettings {
        enabled: true,
        every_n_messages: every,
        timeout: Span::from_secs(timeout),
        ..SummarizerSettings::default()
    };
    let svc = Service::open_with(settings(), llm.clone(), store, Options::default()).unwrap().0;
    let summarizer = chatctx::summarizer::Summarizer::from_settings(summary, &llm).unwrap().unwrap();
    let svc = Arc::new(svc.with_summaries(summarizer.queue()));
    summarizer.start(&svc).unwrap();
    svc
}

fn now() -> Timestamp {
    Timestamp::from_unix(T0 + 10_000).unwrap()
}

fn summary(svc: &Service) -> Option<chatctx_core::summary::Summary> {
    svc.read(|e| e.summary("telegram", "-1", None).cloned()).unwrap()
}

/// Waits (at most 10 s) until `done` holds.
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "waited 10 s for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn metric(svc: &Service, outcome: &str) -> u64 {
    let text = svc.summary_queue().unwrap().metrics();
    let key = format!("chatctx_summary_runs_total{{outcome=\"{outcome}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&key)).unwrap().parse().unwrap()
}

fn history(svc: &Service, current: i64) -> String {
    let args = json!({"chat_id": "-1", "current_message_id": current.to_string()});
    serde_json::to_string(&call(svc, "get_chat_history_context", &args, now()).unwrap()).unwrap()
}

#[test]
fn the_summarizer_folds_new_messages_into_the_previous_summary_and_replays_without_a_model() {
    let model = stub(vec![Reply::Content("FIRST: Ann took notes 1-5.".into()), Reply::Content("SECOND".into())]);
    let dir = chatctx_store::testing::Scratch::new("summarizer");
    let path = dir.file("chatctx.db");
    let svc = service(sqlite(&path), &model.url, 5, 10);

    let events: Vec<Value> = (1..=4).map(message).collect();
    svc.ingest(&events, now()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(model.requests.lock().unwrap().is_empty(), "four messages are not enough");
    svc.ingest(&[message(5)], now()).unwrap();
    wait_for("the first summary", || summary(&svc).is_some());
    let first = summary(&svc).unwrap();
    assert_eq!(first.text, "FIRST: Ann took notes 1-5.");
    assert_eq!((first.revision, first.message_count, first.covers_until_message_id.as_str()), (1, 5, "5"));
    assert_eq!(first.source, chatctx_core::summary::SummarySource::Summarizer);
    {
        let sent = model.requests.lock().unwrap();
        let user = sent[0]["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("(none yet)") && user.contains("note-01") && user.contains("note-05"), "{user}");
        assert_eq!(sent[0]["max_tokens"], 512);
    }

    let events: Vec<Value> = (6..=10).map(message).collect();
    svc.ingest(&events, now()).unwrap();
    wait_for("the second summary", || summary(&svc).is_some_and(|s| s.revision == 2));
    let second = summary(&svc).unwrap();
    assert_eq!(
        (second.text.as_str(), second.message_count, second.covers_until_message_id.as_str()),
        ("SECOND", 10, "10")
    );
    {
        let sent = model.requests.lock().unwrap();
        assert_eq!(sent.len(), 2);
        let user = sent[1]["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("FIRST: Ann took notes 1-5."), "the previous summary is folded in: {user}");
        assert!(user.contains("note-06") && user.contains("note-10"), "{user}");
        for old in 1..=5 {
            assert!(!user.contains(&format!("note-{old:02}")), "message {old} was covered already: {user}");
        }
    }
    svc.ingest(&[message(11)], now()).unwrap();
    let answer = history(&svc, 11);
    assert!(answer.contains("Earlier in this conversation (a summary of 10 messages"), "{answer}");
    assert!(!answer.contains("note-10"), "selection starts after the covered message: {answer}");
    let paged = call(&svc, "get_chat_history_range", &json!({"chat_id": "-1"}), now()).unwrap();
    assert_eq!(serde_json::to_value(paged).unwrap()["items"].as_array().unwrap().len(), 11, "nothing is hidden");
    svc.summary_queue().unwrap().stop();
    drop(svc);

    // Restart with no model: the summaries come back from the log.
    let llm = LlmSettings::default();
    let again = Service::open_with(settings(), llm, sqlite(&path), Options::default()).unwrap().0;
    assert_eq!(history(&again, 11), answer, "the restarted service answers byte for byte the same");

    // And `chatctx replay` of the log's lines, with no model configured, too.
    let mut input = String::new();
    SqliteStore::open(&path)
        .unwrap()
        .load(&mut |_, op| {
            input.push_str(&op.line);
            input.push('\n');
        })
        .unwrap();
    assert!(input.contains("\"update_summary\"") && input.contains("\"summarizer\""), "{input}");
    input.push_str(
        &json!({"call": "get_chat_history_context", "args": {"chat_id": "-1", "current_message_id": "11",
                "now": "2026-02-02T04:53:20Z"}})
        .to_string(),
    );
    let cfg = dir.file("talkative.toml");
    std::fs::write(&cfg, "[history]\nmode = \"talkative\"\n[conversation]\nselector = \"lexical\"\n").unwrap();
    let out = crate::run_with_stdin(&["replay", "-c", cfg.to_str().unwrap()], &input);
    let last = crate::lines(&out).pop().unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(last["result"], answer, "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_failing_or_slow_model_leaves_the_summary_and_the_calls_alone() {
    let failing = stub(vec![Reply::Status(500, "{}".into())]);
    let svc = service(Opened::Local(Arc::new(chatctx_store::MemoryStore::default())), &failing.url, 3, 2);
    svc.ingest(&[message(1), message(2)], now()).unwrap();
    call(
        &svc,
        "update_summary",
        &json!({"chat_id": "-1", "text": "by the bot", "covers_until_message_id": "1"}),
        now(),
    )
    .unwrap();
    let events: Vec<Value> = (3..=6).map(message).collect();
    svc.ingest(&events, now()).unwrap();
    wait_for("the failure to be counted", || metric(&svc, "failed") >= 1);
    assert_eq!(failing.requests.lock().unwrap().len(), 3, "retried within the timeout, then given up");
    let kept = summary(&svc).unwrap();
    assert_eq!((kept.text.as_str(), kept.revision), ("by the bot", 1), "the old summary stays");
    assert_eq!(metric(&svc, "written"), 0);

    let slow = stub(vec![Reply::Slow(Duration::from_secs(4), "too late".into())]);
    let svc = service(Opened::Local(Arc::new(chatctx_store::MemoryStore::default())), &slow.url, 3, 1);
    let events: Vec<Value> = (1..=3).map(message).collect();
    svc.ingest(&events, now()).unwrap();
    wait_for("the model to be asked", || !slow.requests.lock().unwrap().is_empty());
    // While the model takes its time, the bot's calls and ingests go on at their usual pace.
    let start = Instant::now();
    for i in 4..=8 {
        svc.ingest(&[message(i)], now()).unwrap();
        history(&svc, i);
    }
    assert!(start.elapsed() < Duration::from_millis(500), "calls waited on the model: {:?}", start.elapsed());
    wait_for("the timeout to be counted", || metric(&svc, "failed") >= 1);
    assert!(summary(&svc).is_none(), "a timed-out run writes nothing");
}

/// Issue 28, point 16: six messages posted one by one with `every_n_messages = 5`, while the model is slow,
/// make one model call: the conversation is not queued again while its run is under way, and a run that finds
/// fewer than five uncovered messages does not ask the model.
#[test]
fn six_quick_messages_make_one_model_call() {
    let model = stub(vec![Reply::Slow(Duration::from_millis(400), "Ann asked about the deploy.".into())]);
    let svc = service(Opened::Local(Arc::new(chatctx_store::MemoryStore::default())), &model.url, 5, 10);
    for i in 1..=6 {
        svc.ingest(&[message(i)], now()).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
    wait_for("a summary", || summary(&svc).is_some());
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(model.requests.lock().unwrap().len(), 1, "one model call");
    assert_eq!(metric(&svc, "written"), 1);
    svc.summary_queue().unwrap().stop();
}
