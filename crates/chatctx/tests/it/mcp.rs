//! MCP through the official Python SDK client (`tests/mcp/client.py`), over stdio and streamable HTTP; the
//! OpenAPI document through `openapi-spec-validator`.
//!
//! These need a Python with the `mcp` and `openapi-spec-validator` packages: `CHATCTX_TEST_PYTHON` names it (`.ci/run` makes a venv
//! and sets it). Under CI a missing interpreter fails the test; elsewhere the test says it was skipped.

use std::path::Path;
use std::process::Command;

use chatctx_core::tools::ToolCall;
use serde_json::json;

use super::http::{client, start_with};

/// The external program named by `var`; under CI its absence fails the test.
pub(crate) fn external(var: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => Some(p),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("CI needs {var}: {what} (see .ci/run)"),
        _ => {
            eprintln!("SKIPPED: set {var} to {what} to run this test");
            None
        }
    }
}

fn python() -> Option<String> {
    external("CHATCTX_TEST_PYTHON", "a Python with the `mcp` and `openapi-spec-validator` packages")
}

/// Runs the MCP Inspector CLI; its stdout as JSON.
fn inspector(bin: &str, target: &[&str], method: &[&str]) -> serde_json::Value {
    let out = Command::new(bin).arg("--cli").args(target).args(["--method"]).args(method).output().unwrap();
    assert!(out.status.success(), "the Inspector failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The MCP Inspector CLI (which numbers its first request 0) over stdio and over HTTP.
#[test]
fn mcp_inspector_cli_over_both_transports() {
    let Some(bin) = external("CHATCTX_TEST_INSPECTOR", "the MCP Inspector's `mcp-inspector` binary") else { return };
    let exe = env!("CARGO_BIN_EXE_chatctx");
    let stdio = [exe, "mcp", "--store", "memory"];
    let listed = inspector(&bin, &stdio, &["tools/list"]);
    assert_eq!(listed["tools"].as_array().unwrap().len(), ToolCall::NAMES.len(), "{listed}");
    let updated = inspector(
        &bin,
        &stdio,
        &["tools/call", "--tool-name", "update_scenario", "--tool-arg", "chat_id=-1", r#"patch={"a":1}"#],
    );
    assert_eq!(updated["structuredContent"]["revision"], 1, "{updated}");
    let s = start_with("memory", &[]);
    let url = format!("{}/mcp", s.base);
    let http = [url.as_str(), "--transport", "http"];
    let listed = inspector(&bin, &http, &["tools/list"]);
    assert_eq!(listed["tools"].as_array().unwrap().len(), ToolCall::NAMES.len(), "{listed}");
    let missing = inspector(&bin, &http, &["tools/call", "--tool-name", "get_scenario", "--tool-arg", "chat_id=-404"]);
    assert_eq!(missing["structuredContent"]["revision"], 0, "{missing}");
}

/// Raw JSON-RPC on stdio: `server/discover` without the new protocol's `_meta` is a JSON-RPC error (so a
/// newer client falls back), then `initialize` with `id: 0` and a call work.
#[test]
fn stdio_discover_falls_back_and_id_zero_works() {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_chatctx"))
        .args(["mcp", "--store", "memory"])
        .env("CHATCTX_LOG", "error")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |msg: serde_json::Value| -> serde_json::Value {
        writeln!(stdin, "{msg}").unwrap();
        if msg.get("id").is_none() {
            return serde_json::Value::Null;
        }
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    let discover = ask(json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}}));
    assert!(discover["error"]["code"].is_i64(), "{discover}");
    let init =
        ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                          "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
    assert_eq!(
        (init["id"].as_i64(), init["result"]["serverInfo"]["name"].as_str()),
        (Some(0), Some("chatctx")),
        "{init}"
    );
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = ask(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_scenario", "arguments": {"chat_id": "-1"}}}),
    );
    assert_eq!(call["result"]["structuredContent"]["revision"], 0, "{call}");
    let unknown =
        ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    drop(stdin);
    assert!(child.wait().unwrap().success(), "chatctx mcp exits cleanly when stdin closes");
}

fn run_client(python: &str, args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let out = Command::new(python).arg(&script).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "the MCP client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn python_sdk_client_over_stdio() {
    let Some(py) = python() else { return };
    run_client(&py, &["stdio", env!("CARGO_BIN_EXE_chatctx")]);
}

#[test]
fn python_sdk_client_over_streamable_http() {
    let Some(py) = python() else { return };
    let s = start_with("memory", &[]);
    let c = client();
    let m = |id: u64, text: &str, reply: Option<&str>| {
        json!({"type": "message", "chat_id": "-7", "message_id": id.to_string(), "kind": "inbound_user",
               "sent_at": 1_770_000_000 + id, "sender": {"user_id": "5", "username": "eve"}, "text": text,
               "reply_to_message_id": reply, "triggered_agent": true})
    };
    let r = c
        .post(format!("{}/v1/events", s.base))
        .body(json!([m(1, "read this", None), m(2, "thoughts?", Some("1"))]).to_string());
    assert_eq!(r.send().unwrap().status(), 200);
    run_client(&py, &["http", &format!("{}/mcp", s.base)]);
}

/// Over `/mcp` a token limited to one chat and a bound scope behave as on the REST routes.
#[test]
fn python_sdk_client_with_tokens_and_a_bound_scope() {
    let Some(py) = python() else { return };
    let s =
        start_with("memory", &[("CHATCTX_SERVER__TOKENS", r#"[{token = "bot-a-token-0123456789", chats = ["-7"]}]"#)]);
    let c = client();
    let m = |id: u64| {
        json!({"type": "message", "chat_id": "-7", "message_id": id.to_string(), "kind": "inbound_user",
               "sent_at": 1_770_000_000 + id, "sender": {"user_id": "5", "username": "eve"}, "text": format!("m{id}"),
               "triggered_agent": true})
    };
    let r = c
        .post(format!("{}/v1/events", s.base))
        .bearer_auth("bot-a-token-0123456789")
        .body(json!([m(1), m(2)]).to_string());
    assert_eq!(r.send().unwrap().status(), 200);
    let scope = c
        .post(format!("{}/v1/scopes", s.base))
        .bearer_auth("bot-a-token-0123456789")
        .body(json!({"chat_id": "-7", "current_message_id": "2"}).to_string())
        .send()
        .unwrap();
    let scoped: serde_json::Value = serde_json::from_str(&scope.text().unwrap()).unwrap();
    run_client(
        &py,
        &["http-tokens", &format!("{}/mcp", s.base), "bot-a-token-0123456789", scoped["token"].as_str().unwrap()],
    );
}

/// With tokens configured, `/mcp` answers 401 before reading any JSON-RPC, like every other route.
#[test]
fn mcp_over_http_needs_a_token() {
    let s = start_with("memory", &[("CHATCTX_SERVER__TOKENS", r#"["admin-token-0123456789"]"#)]);
    let c = client();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                      "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |token: Option<&str>| crate::http::send_as(crate::http::mcp_request(&c, &s.base, &init), token);
    assert_eq!(post(None).status(), 401);
    assert_eq!(post(Some("wrong")).status(), 401);
    let ok = post(Some("admin-token-0123456789"));
    assert_eq!(ok.status(), 200);
    assert!(ok.text().unwrap().contains("\"serverInfo\""));
}

/// `/openapi.json` lists every route and passes `openapi-spec-validator` (installed beside `mcp`).
#[test]
fn openapi_document_is_valid_and_complete() {
    let s = start_with("memory", &[]);
    let doc: serde_json::Value =
        serde_json::from_str(&client().get(format!("{}/openapi.json", s.base)).send().unwrap().text().unwrap())
            .unwrap();
    // The served document has every route of the router's table (the unit test in `http::openapi` holds the
    // document to the table both ways).
    for route in chatctx::http::routes::all().filter(|r| r.documented) {
        let path = route.path.replace("{tool}", "get_chat_history_context");
        let op = &doc["paths"][&path][route.method.to_ascii_lowercase()];
        assert!(op.is_object(), "{} {path} is missing from /openapi.json", route.method);
    }
    let Some(py) = python() else { return };
    let dir = chatctx_store::testing::Scratch::new("openapi");
    let file = dir.file("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = Command::new(py)
        .args([
            "-c",
            "import json, sys; from openapi_spec_validator import validate; validate(json.load(open(sys.argv[1])))",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `chatctx mcp` on SQLite snapshots the chats whose logs grew when its client goes away, and the next start reads
/// one line for the chat instead of its thirty state updates.
#[test]
fn stdio_snapshots_when_the_client_goes_away() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = chatctx_store::testing::Scratch::new("mcp-stop");
    let store = format!("sqlite://{}", dir.file("chatctx.db").display());
    let run = |calls: u32| -> String {
        let mut child = Command::new(env!("CARGO_BIN_EXE_chatctx"))
            .args(["mcp", "--store", &store])
            .env("CHATCTX_LOG", "info")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut ask = |msg: serde_json::Value| {
            writeln!(stdin, "{msg}").unwrap();
            if msg.get("id").is_some() {
                lines.next().unwrap().unwrap();
            }
        };
        ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
        ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        for i in 0..calls {
            ask(json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "update_scenario",
                "arguments": {"chat_id": "-1", "patch": {"step": i}}}}));
        }
        drop(stdin);
        let mut log = String::new();
        child.stderr.take().unwrap().read_to_string(&mut log).unwrap();
        assert!(child.wait().unwrap().success(), "{log}");
        log
    };
    let first = run(30);
    assert!(first.contains("snapshotted 1 chats") && first.contains("30 fewer logged operations"), "{first}");
    let second = run(0);
    assert!(second.contains("rebuilt 1 logged operations"), "{second}");
}
