//! Integration tests of the `chatctx` command.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

mod access;
mod compaction;
mod console;
mod damage;
mod decisions;
mod direct;
mod durability;
mod http;
mod http_kill;
mod imports;
mod instances;
mod logline;
mod mcp;
mod people;
mod platforms;
mod python_client;
mod reclaim;
mod scenarios;
mod service;
mod shared;
mod stop;
mod summary;
mod takeover;
mod telemetry;
mod titles;
mod triage;
mod typescript_client;

/// Decodes and makes a tool call through a service, as the front ends do.
pub fn call(
    svc: &chatctx::service::Service,
    tool: &str,
    args: &Value,
    now: chatctx_core::Timestamp,
) -> Result<chatctx_core::tools::ToolResponse, chatctx_core::Error> {
    svc.call(&chatctx_core::tools::ToolCall::decode(tool, args)?, now)
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_chatctx"));
    c.env("CHATCTX_LOG", "error");
    c
}

pub fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

pub fn run_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child =
        bin().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

pub fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn the_readme_example_replays_byte_identically() {
    let args = ["replay", "examples/team-chat.jsonl", "--config", "examples/team-chat.toml"];
    let a = bin().current_dir(repo("")).args(args).output().unwrap();
    let b = bin().current_dir(repo("")).args(args).output().unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert!(!a.stdout.is_empty());
    assert_eq!(a.stdout, b.stdout, "same replay file twice, byte-identical output");
    let answers = lines(&a);
    assert_eq!(answers.len(), 4);
    assert_eq!(answers[2]["result"]["best_match"]["object_id"], "503:media.image", "the screenshot Dave replied to");
    assert_eq!(answers[3]["result"]["objects"][0]["activation"], "resolved", "the resolution was recorded");
    let h = &answers[0]["result"];
    assert_eq!(h["selection"]["method"], "cap");
    let texts: Vec<&str> = h["items"].as_array().unwrap().iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert!(texts.iter().all(|t| !t.contains("lunch")), "topic 9 stays out of topic 7's history");
    assert!(texts.contains(&"Thanks! 😀 [Carol Diaz](tg:@carol) can you retry the job?"), "{texts:?}");
}

#[test]
fn bad_lines_are_reported_and_the_run_goes_on() {
    let good = |id: u32, text: &str| {
        json!({"event": {"type": "message", "chat_id": "-1", "message_id": id.to_string(), "kind": "inbound_user",
               "sent_at": 1_770_970_800 + id, "sender": {"user_id": "1", "username": "ann"}, "text": text, "triggered_agent": true}})
        .to_string()
    };
    let input = [
        good(1, "first"),
        "this is not json".to_owned(),
        json!({"event": {"type": "typing", "chat_id": "-1"}}).to_string(),
        json!({"event": {"type": "message", "chat_id": "-1", "message_id": "2", "kind": "inbound_user", "sent_at": "yesterday",
                          "sender": {"user_id": "1"}}}).to_string(),
        String::new(),
        "# a comment".to_owned(),
        json!({"hello": 1}).to_string(),
        good(3, "third"),
        json!({"call": "no_such_tool", "args": {}}).to_string(),
        json!({"call": "get_chat_history_context", "args": {"chat_id": "-1"}}).to_string(),
        json!({"call": "get_chat_history_context", "args": "-1"}).to_string(),
        json!({"call": "get_chat_history_context", "args": {"chat_id": "-404"}}).to_string(),
    ]
    .join("\n");
    let out = run_with_stdin(&["replay", "-"], &input);
    assert!(out.status.success());
    let l = lines(&out);
    let errors: Vec<(u64, &str)> = l
        .iter()
        .filter_map(|v| v.get("event_error"))
        .map(|e| (e["line"].as_u64().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert_eq!(errors, [(2, "invalid_event"), (3, "unsupported_event"), (4, "invalid_event"), (7, "invalid_event")]);
    let msg = l[2]["event_error"]["message"].as_str().unwrap();
    assert!(msg.contains("`sent_at`"), "{msg}");
    assert_eq!(l[4]["error"]["code"], "unknown_tool");
    let texts: Vec<&str> =
        l[5]["result"]["items"].as_array().unwrap().iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["first", "third"], "the bad lines damaged nothing");
    assert_eq!(l[6]["error"]["code"], "invalid_request");
    assert_eq!(l[7]["error"]["code"], "unknown_chat");
}

#[test]
fn import_then_replay() {
    let export = repo("crates/chatctx/tests/data/export_result.json");
    let out = bin().args(["import", export.to_str().unwrap(), "--bot-user-id", "900"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = lines(&out);
    assert_eq!(events.len(), 5);
    assert!(events.iter().all(|e| e["event"]["type"] == "message" && e["event"]["chat_id"] == "-1001466600123"));
    assert_eq!(events[2]["event"]["triggered_agent"], false, "no bot username given: the mention cannot be recognized");
    assert_eq!(events[3]["event"]["kind"], "outbound_agent");

    let mut replay = String::from_utf8(out.stdout).unwrap();
    replay.push_str(
        &json!({"call": "get_chat_history_context", "args": {"chat_id": "-1001466600123", "current_message_id": "14"}})
            .to_string(),
    );
    let answer = run_with_stdin(&["replay"], &replay);
    let l = lines(&answer);
    assert_eq!(l.len(), 1, "{}", String::from_utf8_lossy(&answer.stdout));
    let texts: Vec<&str> =
        l[0]["result"]["items"].as_array().unwrap().iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["[poll: Dune or Solaris?]"], "smart mode: only the bot's output is eligible");
    assert_eq!(
        l[0]["result"]["prompt"][1]["content"],
        "[2025-03-01T18:03:00Z] [Maya](tg://user?id=501): [media.image] the cover 😍"
    );
}

#[test]
fn help_explains_the_commands() {
    let out = bin().arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["replay", "import", "config", "CHATCTX_SECTION__KEY"] {
        assert!(text.contains(needle), "{needle} missing from --help:\n{text}");
    }
    let out = bin().args(["replay", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("byte-identical"));
}

#[test]
fn config_check_and_bad_configs() {
    let ok = bin().args(["config", "check", "-c", repo("chatctx.example.toml").to_str().unwrap()]).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stdout));
    let dir = chatctx_store::testing::Scratch::new("it-config");
    let unknown = dir.file("unknown.toml");
    std::fs::write(&unknown, "[history]\nmood = \"smart\"\n").unwrap();
    let out = bin().args(["config", "check", "-c", unknown.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("`history.mood`"));
    let bad = dir.file("bad.toml");
    std::fs::write(&bad, "[history]\nmode = \"loud\"\n").unwrap();
    let out = bin().args(["replay", "-c", bad.to_str().unwrap()]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("history.mode"));
    let out = bin().args(["replay", "/nonexistent/file.jsonl"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open replay file"));
    let env = bin().env("CHATCTX_HISTORY__MODE", "noisy").args(["replay"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(env.status.code(), Some(2), "environment values are validated too");
}

#[test]
fn export_import_export_gives_the_same_document() {
    let args =
        ["export", "--chat", "-1001847508954", "examples/team-chat.jsonl", "--config", "examples/team-chat.toml"];
    let first = bin().current_dir(repo("")).args(args).output().unwrap();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let dir = chatctx_store::testing::Scratch::new("it-export");
    let doc = dir.file("doc.json");
    std::fs::write(&doc, &first.stdout).unwrap();
    let line = bin().args(["import", doc.to_str().unwrap()]).output().unwrap();
    assert!(line.status.success(), "{}", String::from_utf8_lossy(&line.stderr));
    assert!(line.stdout.starts_with(b"{\"import\":"));
    let bare = bin().args(["import", doc.to_str().unwrap(), "--events"]).output().unwrap();
    assert!(
        !bare.status.success()
            && bare.stdout.is_empty()
            && String::from_utf8_lossy(&bare.stderr).contains("is a conversation document, not events"),
        "a conversation document is not events: {}",
        String::from_utf8_lossy(&bare.stderr)
    );
    let replay = dir.file("doc.jsonl");
    std::fs::write(&replay, &line.stdout).unwrap();
    let second = bin()
        .current_dir(repo(""))
        .args(["export", "--chat", "-1001847508954", replay.to_str().unwrap(), "--config", "examples/team-chat.toml"])
        .output()
        .unwrap();
    assert_eq!(first.stdout, second.stdout, "import then export gives the same document");
    let v: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(v["format"], "chatctx.conversation.v1");
    assert!(v["history"].as_array().unwrap().len() >= 9 && !v["objects"].as_array().unwrap().is_empty());
}

/// Issue 30, point 6: `chatctx serve` says at start what decides its answers.
#[test]
fn serve_says_which_preset_mode_and_selector_answer() {
    use std::io::BufRead;
    let mut child = bin()
        .args(["serve", "--listen", "127.0.0.1:0", "--store", "memory", "--preset", "group-bot"])
        .env("CHATCTX_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let lines: Vec<String> = std::io::BufReader::new(child.stderr.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .take_while(|l| !l.contains("listening on"))
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    let said = lines.iter().find(|l| l.contains("answering with")).unwrap_or_else(|| panic!("{lines:?}"));
    for part in [
        "preset group-bot",
        "history.mode talkative",
        "history.policy selection",
        "conversation.selector lexical",
        "resolver.require_reference true",
    ] {
        assert!(said.contains(part), "{part}: {said}");
    }
}
