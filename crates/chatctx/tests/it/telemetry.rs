//! `[telemetry] otlp_endpoint`: OpenTelemetry spans over OTLP/HTTP, checked with a receiver stub on loopback.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::http::{JsonBody, client, mcp_request, spawn, start_with};

/// What the receiver got: each request's path and JSON body.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// An OTLP/HTTP receiver: answers 200 to every POST and keeps each request's path and JSON body.
fn receiver() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_owned();
            keep.lock().unwrap().push((path, serde_json::from_slice(&body).unwrap_or(Value::Null)));
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}");
        }
    });
    (url, got)
}

fn spans(got: &Mutex<Vec<(String, Value)>>) -> Vec<Value> {
    got.lock()
        .unwrap()
        .iter()
        .flat_map(|(_, body)| body["resourceSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|rs| rs["scopeSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|ss| ss["spans"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"].as_array()?.iter().find(|a| a["key"] == key).map(|a| &a["value"])
}

/// One server span per request and one child span per tool call, with ids and counts but no message text,
/// posted to `{endpoint}/v1/traces`.
#[test]
fn spans_reach_an_otlp_receiver_without_message_text() {
    let (endpoint, got) = receiver();
    let server = start_with(
        "memory",
        &[("CHATCTX_TELEMETRY__OTLP_ENDPOINT", endpoint.as_str()), ("CHATCTX_TELEMETRY__SERVICE_NAME", "bot-ctx")],
    );
    let c = client();
    let post = |path: &str, body: Value| {
        c.post(format!("{}{path}", server.base)).header("content-type", "application/json").body(body.to_string())
    };
    let photo = json!({"type": "message", "chat_id": "-100500", "message_id": "501", "kind": "inbound_user",
        "sent_at": 1770970800, "sender": {"user_id": "42", "username": "alice"}, "text": "our secret new logo",
        "attachments": [{"kind": "media.image", "label": "logo.png"}]});
    let ask = json!({"type": "message", "chat_id": "-100500", "message_id": "502", "kind": "inbound_user",
        "sent_at": 1770970860, "sender": {"user_id": "43", "username": "bob"}, "text": "what about this one?",
        "reply_to_message_id": "501", "triggered_agent": true});
    assert!(post("/v1/events", json!([photo, ask])).send().unwrap().status().is_success());
    let resolved = post(
        "/v1/tools/resolve_reference_target",
        json!({"chat_id": "-100500", "current_message_id": "502", "sender_user_id": "43", "now": 1770970861}),
    )
    .send()
    .unwrap()
    .json_value();
    assert_eq!(resolved["status"], "resolved");
    let missing = post("/v1/tools/get_chat_history_context", json!({"chat_id": "-999"})).send().unwrap();
    assert_eq!(missing.status(), 404);

    // Over MCP too: the tool call's span is under the `/mcp` request's.
    let over_mcp = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "list_active_context_objects", "arguments": {"chat_id": "-100500", "now": 1770970861}}});
    assert!(mcp_request(&c, &server.base, &over_mcp).send().unwrap().status().is_success());

    let deadline = Instant::now() + Duration::from_secs(10);
    let tool_span = |name: &str| spans(&got).into_iter().find(|s| s["name"] == name);
    while (tool_span("tool resolve_reference_target").is_none()
        || tool_span("tool get_chat_history_context").is_none()
        || tool_span("tool list_active_context_objects").is_none())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let all = spans(&got);
    let resolve = tool_span("tool resolve_reference_target").expect("a span for the resolve call");
    assert_eq!(attr(&resolve, "chatctx.chat_id"), Some(&json!({"stringValue": "-100500"})));
    assert_eq!(attr(&resolve, "chatctx.tool"), Some(&json!({"stringValue": "resolve_reference_target"})));
    assert_eq!(attr(&resolve, "chatctx.status"), Some(&json!({"stringValue": "resolved"})));
    assert!(attr(&resolve, "chatctx.candidate_count").is_some_and(|v| v["intValue"] != "0"), "{resolve}");
    // Under its request's server span, in the same trace.
    let request = all
        .iter()
        .find(|s| s["spanId"] == resolve["parentSpanId"])
        .unwrap_or_else(|| panic!("no parent span for {resolve} in {all:?}"));
    assert_eq!(request["traceId"], resolve["traceId"]);
    assert_eq!(request["name"], "POST /v1/tools/{tool}");
    assert_eq!(request["kind"], 2);
    assert_eq!(attr(request, "http.response.status_code"), Some(&json!({"intValue": "200"})));
    let failed = tool_span("tool get_chat_history_context").unwrap();
    assert_eq!(attr(&failed, "chatctx.status"), Some(&json!({"stringValue": "unknown_chat"})));
    assert!(all.iter().any(|s| s["name"] == "POST /v1/events"), "the ingest request has its span");
    let listed = tool_span("tool list_active_context_objects").expect("a span for the MCP tool call");
    let carrier = all.iter().find(|s| s["spanId"] == listed["parentSpanId"]).expect("its request's span");
    assert_eq!(carrier["name"], "POST /mcp");
    assert_eq!(attr(&listed, "chatctx.count"), Some(&json!({"intValue": "1"})));
    // Never message text; the resource names the service as configured; posted to /v1/traces.
    let exported = format!("{:?}", got.lock().unwrap());
    for text in ["secret", "what about this one", "alice", "bob"] {
        assert!(!exported.contains(text), "`{text}` was exported: {exported}");
    }
    assert!(exported.contains("bot-ctx"));
    assert!(attr(request, "chatctx.request_id").is_some(), "{request}");
    assert!(got.lock().unwrap().iter().all(|(path, _)| path == "/v1/traces"));
}

/// A collector that cannot be reached costs nothing visible: requests answer as before.
#[test]
fn an_unreachable_collector_changes_no_answer() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let endpoint = format!("http://{closed}");
    let server = start_with("memory", &[("CHATCTX_TELEMETRY__OTLP_ENDPOINT", endpoint.as_str())]);
    let c = client();
    for _ in 0..20 {
        let r = c
            .post(format!("{}/v1/tools/get_chat_history_context", server.base))
            .header("content-type", "application/json")
            .body(r#"{"chat_id":"-1"}"#)
            .send()
            .unwrap();
        assert_eq!(r.status(), 404);
    }
    assert!(c.get(format!("{}/readyz", server.base)).send().unwrap().status().is_success());
}

/// Every answer names its request (`x-request-id`: the caller's when it is a plain token, else a new one), and
/// the tool call's log line carries the same id.
#[test]
fn requests_are_named_in_the_answer_and_in_the_log() {
    let (mut child, lines, base) = spawn("memory", &[]);
    let c = client();
    let call = |id: Option<&str>| {
        let r = c.post(format!("{base}/v1/tools/get_scenario")).body(r#"{"chat_id":"-7"}"#);
        let r = match id {
            Some(id) => r.header("x-request-id", id),
            None => r,
        };
        let answer = r.send().unwrap();
        assert_eq!(answer.status(), 200);
        answer.headers()["x-request-id"].to_str().unwrap().to_owned()
    };
    assert_eq!(call(Some("bot-update-4711")), "bot-update-4711");
    let made = call(None);
    assert!(made.len() == 16 && made.bytes().all(|b| b.is_ascii_hexdigit()), "{made}");
    assert_ne!(call(None), made, "a new id for every request");
    let replaced = call(Some("has spaces and \u{e9}"));
    assert!(replaced.len() == 16 && replaced != "has spaces", "{replaced}");
    let long = "x".repeat(65);
    assert_ne!(call(Some(&long)), long);
    let refused = c.get(format!("{base}/no/such/route")).send().unwrap();
    assert!(refused.headers().contains_key("x-request-id"), "errors are named too");
    child.kill().unwrap();
    child.wait().unwrap();
    let log: Vec<String> = lines.map_while(Result::ok).collect();
    let line = |id: &str| log.iter().find(|l| l.contains("call get_scenario") && l.contains(id)).cloned();
    assert!(line("bot-update-4711").is_some(), "{log:#?}");
    assert!(line(&made).is_some(), "{log:#?}");
}
