//! The durable log is the persistence contract between versions: a log written before log lines were typed
//! (tests/data/log-before-typed-lines) loads into today's service with the same state, and what today's
//! service writes reads back the same.

use chatctx::config::LlmSettings;
use chatctx::service::Service;
use chatctx_core::{Settings, Timestamp};
use chatctx_store::Op;
use serde_json::{Value, json};

use crate::{call, repo};

fn old_log() -> Vec<Op> {
    let text = std::fs::read_to_string(repo("crates/chatctx/tests/data/log-before-typed-lines/log.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap().to_owned();
            Op { channel: s("channel"), chat_id: s("chat_id"), line: s("line") }
        })
        .collect()
}

fn answers(svc: &Service) -> Value {
    let at = Timestamp::from_unix(1_770_971_000).unwrap();
    let tool = |name: &str, args: Value| serde_json::to_value(call(svc, name, &args, at).unwrap()).unwrap();
    let history = svc.read_chat("telegram", "-100500", |e| e.history("telegram", "-100500", None)).unwrap().unwrap();
    json!({
        "get_chat_history_context -200 at 411":
            tool("get_chat_history_context", json!({"chat_id": "-200", "current_message_id": "411", "now": 1770971000})),
        "list_active_context_objects -100500":
            tool("list_active_context_objects", json!({"chat_id": "-100500", "now": 1770971000})),
        "get_scenario -100500 with revisions": tool("get_scenario", json!({"chat_id": "-100500", "revisions": true})),
        "history -100500": history,
        "scenario -200": tool("get_scenario", json!({"chat_id": "-200", "revisions": true})),
    })
}

/// Removes from `got` what answers gained after the log was written (issue 16: an object's `author`, `caption`
/// and `file`, and a `title_or_label` taken from the caption where the object had none), so the rest is
/// compared as it was.
fn without_newer_fields(got: &mut Value, then: &Value) {
    match (got, then) {
        (Value::Object(g), Value::Object(t)) => {
            for key in ["author", "caption", "file"] {
                if !t.contains_key(key) {
                    g.remove(key);
                }
            }
            if g.contains_key("object_id") && !t.contains_key("title_or_label") {
                g.remove("title_or_label");
            }
            for (k, v) in g.iter_mut() {
                if let Some(tv) = t.get(k) {
                    without_newer_fields(v, tv);
                }
            }
        }
        (Value::Array(g), Value::Array(t)) => g.iter_mut().zip(t).for_each(|(g, t)| without_newer_fields(g, t)),
        _ => {}
    }
}

#[test]
fn a_log_written_before_typed_lines_loads_the_same() {
    let store = chatctx_store::MemoryStore::default();
    let ops = old_log();
    chatctx_store::Log::append(&store, &ops).unwrap();
    let opened = chatctx_store::Opened::Local(std::sync::Arc::new(store));
    let (svc, read) = Service::open(Settings::default(), LlmSettings::default(), opened).unwrap();
    assert_eq!(read, ops.len() as u64);
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(repo("crates/chatctx/tests/data/log-before-typed-lines/answers.json")).unwrap(),
    )
    .unwrap();
    // Issue 30, point 4: the bot mentioned before its first reply now shows by its name there too.
    let got = answers(&svc)
        .to_string()
        .replace("[Bot](tg:@my_bot) what do you think", "[@my_bot](tg:@my_bot) what do you think");
    let mut got: Value = serde_json::from_str(&got).unwrap();
    without_newer_fields(&mut got, &expected);
    assert_eq!(got, expected);
    let gone = svc.read(|e| e.chat_keys()).unwrap();
    assert!(!gone.iter().any(|(_, chat)| chat == "-300"), "the tombstone forgets its chat: {gone:?}");
    // Every line, of every kind, reads as a typed line.
    for op in &ops {
        chatctx::logline::LogLine::parse(&op.line).unwrap_or_else(|e| panic!("{e:?}: {}", op.line));
    }
}

/// A replay file of every input shape (Telegram updates, Discord dispatches and Slack envelopes as the lines
/// that wrap them, core events, tool calls), answered by the version before issue 27 moved the platform
/// mappings behind one contract: today's `chatctx replay` answers it byte for byte the same, but for the names
/// issue 29 adds on purpose (a Slack `user_change` and a message's `user_profile` now name U123ABC456 and Bob
/// in the items stored before them; those names are put back to their ids before comparing) and the `topic_id`
/// issue 30 adds to range reads' items (taken out before comparing), and the one name per person of issue 30
/// (the bot, mentioned before its first reply, is `[Ops Helper]` there now; put back before comparing), and the
/// count of other topics' items issue 30 adds to a per-topic history's record (taken out).
#[test]
fn replay_files_of_the_version_before_issue_27_answer_the_same() {
    let dir = repo("crates/chatctx/tests/data/replay-before-issue-27");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chatctx"))
        .arg("replay")
        .arg(dir.join("input.jsonl"))
        .arg("--config")
        .arg(repo("examples/team-chat.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let expected = std::fs::read_to_string(dir.join("expected.jsonl")).unwrap();
    assert_eq!(expected.lines().count(), 17, "every call of the file is answered");
    let now = String::from_utf8(out.stdout).unwrap();
    assert!(now.contains("[Egon Spengler](slack:@U123ABC456)") && now.contains("new logo for [Bob Brown]"));
    let before_names = now
        .replace("new logo for [Bob Brown](slack:@U0BOB)", "new logo for [@U0BOB](slack:@U0BOB)")
        .replace("[Egon Spengler](slack:@U123ABC456)", "[@U123ABC456](slack:@U123ABC456)")
        .replace("\"nickname\":\"Egon Spengler\"", "\"nickname\":\"@U123ABC456\"")
        .replace("[Ops Helper](tg:@ops_helper_bot) can you", "[@ops_helper_bot](tg:@ops_helper_bot) can you")
        // … and the message holding that mention is estimated a token shorter.
        .replace(
            "\"message_id\":\"504\",\"kind\":\"inbound_user\",\"sent_at\":\"2026-02-13T08:22:00Z\",\"kept\":true,\"reason\":\"mode_cap\",\"tokens\":40}",
            "\"message_id\":\"504\",\"kind\":\"inbound_user\",\"sent_at\":\"2026-02-13T08:22:00Z\",\"kept\":true,\"reason\":\"mode_cap\",\"tokens\":41}",
        )
        .replace("\"budget\":{\"used_tokens\":307}", "\"budget\":{\"used_tokens\":308}")
        .replace("\"topic_id\":\"1200000000000000001\",", "")
        .replace("\"topic_id\":\"1770970800.000100\",", "")
        // The count of other topics' items a per-topic history record gives since issue 30.
        .replace("\"in_other_topics\":1,", "");
    assert!(before_names == expected, "the answers differ from the earlier version's");
}
