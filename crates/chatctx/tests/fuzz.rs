//! Fuzzing every decoder of untrusted input on stable Rust (proptest as the engine): event JSON (people too),
//! Telegram updates, Discord dispatches, Slack envelopes and users.list answers, tool requests, log lines,
//! configuration, and Telegram Desktop, Slack and DiscordChatExporter exports. Inputs are real samples
//! (the fixtures in the repository) mutated at random (a node replaced, removed or nested deeper, strings made
//! odd), and raw bytes. Whatever decodes is also applied to an engine and answered, where panics would hide.
//! The property is only "never panics, never hangs": an input may be refused with an error.
//!
//! `.ci/run` runs the default bounded number of cases; a longer run (docs/operations.md):
//! `CHATCTX_FUZZ_CASES=200000 cargo test --release -p chatctx --test fuzz`. A panic proptest finds is shrunk
//! and printed; add it to `regressions` below.
#![allow(clippy::disallowed_methods)] // tests fail loudly on purpose

use chatctx::logline::{EventLine, LogLine};
use chatctx_core::tools::ToolCall;
use chatctx_core::{Engine, Settings, Timestamp};
use proptest::prelude::*;
use serde_json::{Value, json};

fn cases(default: u32) -> u32 {
    std::env::var("CHATCTX_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn now() -> Timestamp {
    Timestamp::from_unix(1_770_000_000).unwrap()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// Real samples of every input shape, as JSON values.
fn seeds() -> Vec<Value> {
    let mut out = Vec::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../chatctx-platforms/tests/data/telegram");
    let mut names: Vec<_> = std::fs::read_dir(&fixtures).unwrap().flatten().map(|e| e.path()).collect();
    names.sort();
    for path in names.iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
        let update: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        out.push(json!({"type": "telegram_update", "bot": {"user_id": "42", "username": "bot"}, "update": update}));
    }
    // Discord dispatches and Slack envelopes, as the replay lines that carry them.
    let platforms = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../chatctx-platforms/tests/data");
    for (dir, kind) in [("discord", "discord_event"), ("slack", "slack_event")] {
        let mut files: Vec<_> = std::fs::read_dir(platforms.join(dir)).unwrap().flatten().map(|e| e.path()).collect();
        files.sort();
        // Exports (a folder, DiscordChatExporter files) are seeds of their own below.
        files.retain(|p| p.is_file() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("dce_")));
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let payloads: Vec<Value> = if path.extension().is_some_and(|e| e == "jsonl") {
                text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
            } else {
                vec![serde_json::from_str(&text).unwrap()]
            };
            out.extend(
                payloads
                    .into_iter()
                    .map(|p| json!({"type": kind, "bot": {"user_id": "700000000000000999"}, "payload": p})),
            );
        }
    }
    // Issue 29's formats: DiscordChatExporter files, a Slack export (as one object of its files by path), a
    // users.list answer and a person event.
    for name in ["dce_general.json", "dce_thread.json"] {
        out.push(
            serde_json::from_str(&std::fs::read_to_string(platforms.join("discord").join(name)).unwrap()).unwrap(),
        );
    }
    let export = platforms.join("slack/export");
    let mut files = serde_json::Map::new();
    let mut stack = vec![export.clone()];
    while let Some(dir) = stack.pop() {
        for path in std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()) {
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(&export).unwrap().to_string_lossy().replace('\\', "/");
                files.insert(rel, serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap());
            }
        }
    }
    let users = files["users.json"].clone();
    out.push(Value::Object(files));
    out.push(json!({"type": "slack_users", "payload": {"ok": true, "members": users}}));
    out.push(json!({"type": "person", "channel": "slack", "workspace_id": "T0ACME", "chat_id": "C0GENERAL",
        "user_id": "U0PRIYA", "username": "U0PRIYA", "display_name": "Priya Raman"}));
    out.push(
        json!({"type": "title", "channel": "telegram", "chat_id": "-1001500", "topic_id": "4", "title": "Logo drafts"}),
    );
    out.push(json!({"type": "discord_event", "payload": {"op": 0, "t": "THREAD_CREATE",
        "d": {"id": "300", "type": 11, "parent_id": "100", "name": "4.2 rollout"}}}));
    let mut scenario_files: Vec<_> =
        std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
    scenario_files.sort();
    scenario_files
        .push(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/log-before-typed-lines/log.jsonl"));
    out.push(serde_json::from_str(&read("tests/data/export_result.json")).unwrap());
    for path in scenario_files {
        for line in std::fs::read_to_string(path).unwrap().lines() {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                out.push(v);
            }
        }
    }
    out
}

/// A random JSON value of bounded size, with the values decoders trip on.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(4_294_967_296u64)),
        ".{0,12}".prop_map(Value::from),
        Just(json!("\u{0}\u{202e}\u{1F600}e\u{301}")),
        Just(json!("2026-02-30T25:61:61Z")),
        Just(json!("9999999999999999999999")),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One change at a random place of a value.
#[derive(Debug, Clone)]
enum Mutation {
    Replace(Value),
    Remove,
    Wrap,
    Stringify,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => value().prop_map(Mutation::Replace),
        2 => Just(Mutation::Remove),
        1 => Just(Mutation::Wrap),
        1 => Just(Mutation::Stringify),
    ]
}

/// Applies `m` at the `at`-th node (in a walk of the tree).
fn mutate(v: &mut Value, at: &mut usize, m: &Mutation) -> bool {
    if *at == 0 {
        match m {
            Mutation::Replace(new) => *v = new.clone(),
            Mutation::Remove => *v = Value::Null,
            Mutation::Wrap => *v = json!([v.clone()]),
            Mutation::Stringify => *v = Value::from(v.to_string()),
        }
        return true;
    }
    *at -= 1;
    match v {
        Value::Array(items) => items.iter_mut().any(|c| mutate(c, at, m)),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if *at == 0 && matches!(m, Mutation::Remove) {
                    map.remove(&k);
                    return true;
                }
                if map.get_mut(&k).is_some_and(|c| mutate(c, at, m)) {
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

/// Feeds one value to every JSON decoder, and applies or answers what decodes.
fn exercise(v: &Value) {
    let mut engine = Engine::new(Settings::default());
    if let Ok(decoded) = chatctx::ingest::decode(v, now()) {
        let _ = engine.apply_all(decoded.events);
    }
    // Whatever fresh input is accepted loads again: each event's log line reads back as the same event.
    if let Ok(decoded) = chatctx::ingest::Decode::decode_fresh(v, now()) {
        for e in &decoded.events {
            let line = LogLine::event(e).to_line().unwrap();
            let back = match LogLine::parse(&line) {
                Ok(LogLine::Event(EventLine::Raw(raw))) => chatctx::ingest::decode(&raw, now()).map(|d| d.events),
                Ok(LogLine::Event(EventLine::Decoded(read))) => Ok(vec![read.into_owned()]),
                other => panic!("{line} reads back as {other:?}"),
            };
            assert_eq!(back.as_deref().ok(), Some(std::slice::from_ref(e)), "{line} reads back as {back:?}");
        }
    }
    let bot = chatctx_platforms::Bot::default();
    let _ = chatctx_platforms::telegram::export::import(v, &bot);
    if let Ok(i) = chatctx_platforms::discord::export::import(v, &bot) {
        let _ = engine.apply_all(i.events);
    }
    if let Some(map) = v.as_object() {
        let files: std::collections::BTreeMap<String, Value> =
            map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        if let Ok(i) = chatctx_platforms::slack::export::import(&files, &bot) {
            let _ = engine.apply_all(i.events);
        }
    }
    if let Some(args) = v.get("args").or(Some(v)) {
        for name in ToolCall::NAMES {
            if let Ok(call) = ToolCall::decode(name, args) {
                let _ = engine.answer(&call, now());
            }
        }
    }
    let line = v.to_string();
    if let Ok(parsed) = LogLine::parse(&line) {
        let mut newest = now();
        let _ = parsed.load(&mut engine, &mut newest);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(3000), failure_persistence: None, ..ProptestConfig::default() })]

    /// Real inputs with random changes: every decoder refuses or accepts them without panicking.
    #[test]
    fn mutated_real_inputs(seed in any::<prop::sample::Index>(), mutations in prop::collection::vec((any::<usize>(), mutation()), 1..4)) {
        let seeds = SEEDS.with(Clone::clone);
        let mut v = seeds[seed.index(seeds.len())].clone();
        for (at, m) in &mutations {
            let mut at = at % 64;
            mutate(&mut v, &mut at, m);
        }
        exercise(&v);
    }

    /// Random values of any shape.
    #[test]
    fn random_values(v in value()) {
        exercise(&v);
    }

    /// Raw text as a log line, a replay file and a configuration file.
    #[test]
    fn raw_text(text in prop_oneof![".{0,200}", "[\\[\\]{}\",:0-9a-z\\\\ ]{0,200}"]) {
        let _ = LogLine::parse(&text);
        let mut engine = Engine::new(Settings::default());
        let mut out = Vec::new();
        chatctx::replay::run(&mut engine, text.as_bytes(), &mut out).unwrap();
        let dir = SCRATCH.with(|d| d.path().to_path_buf());
        let file = dir.join("fuzz.toml");
        std::fs::write(&file, &text).unwrap();
        let _ = chatctx::config::load(Some(&file), Vec::new());
    }

    /// Configuration from the environment, key by key.
    #[test]
    fn config_values(section in "[a-z]{2,12}", key in "[a-z_]{2,24}", raw in ".{0,40}") {
        for section in [section.as_str(), "history", "conversation", "server", "store", "state", "resolver", "objects"] {
            let _ = chatctx::config::load(None, vec![(format!("CHATCTX_{section}__{key}").to_uppercase(), raw.clone())]);
        }
    }
}

thread_local! {
    static SEEDS: Vec<Value> = seeds();
    static SCRATCH: chatctx_store::testing::Scratch = chatctx_store::testing::Scratch::new(&format!("fuzz-{:?}", std::thread::current().id()).replace(['(', ')'], ""));
}

/// Inputs the fuzzer once found a problem with (none yet): kept so that they stay fixed.
#[test]
fn regressions() {
    let found = [
        json!({"type": "telegram_update", "update": {"message": {"chat": {"id": []}}}}),
        json!({"name": "x", "type": "personal_chat", "id": 1, "messages": [{"id": 1, "type": "message", "text": [[]]}]}),
    ];
    for v in &found {
        exercise(v);
    }
}
