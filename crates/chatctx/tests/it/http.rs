//! The HTTP server, as a real process on 127.0.0.1:0: routes, errors, limits and logs (durability under
//! SIGKILL: `http_kill.rs`).

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};

/// The body of an answer as JSON.
pub trait JsonBody {
    fn json_value(self) -> Value;
}

impl JsonBody for reqwest::blocking::Response {
    fn json_value(self) -> Value {
        serde_json::from_slice(&self.bytes().unwrap()).unwrap()
    }
}

#[path = "../support/server.rs"]
mod server;
pub use server::{Server, client, spawn, spawn_logged, start_with};

pub(crate) fn start(store: &str) -> Server {
    start_with(store, &[])
}

/// Sends `r`, with `token` as its bearer when one is given.
pub fn send_as(r: reqwest::blocking::RequestBuilder, token: Option<&str>) -> reqwest::blocking::Response {
    match token {
        Some(t) => r.bearer_auth(t),
        None => r,
    }
    .send()
    .unwrap()
}

/// A JSON-RPC request to `/mcp` as an MCP client posts it.
pub fn mcp_request(c: &reqwest::blocking::Client, base: &str, body: &Value) -> reqwest::blocking::RequestBuilder {
    c.post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string())
}

pub(crate) fn msg(id: u64) -> Value {
    json!({"type": "message", "chat_id": "-1", "message_id": id.to_string(), "kind": "inbound_user", "sent_at": 1_770_000_000 + id,
           "sender": {"user_id": "1", "username": "ann"}, "text": format!("m{id}"), "triggered_agent": true})
}

pub(crate) fn stored_ids(c: &reqwest::blocking::Client, base: &str) -> HashSet<String> {
    all_pages(c, &format!("{base}/v1/chats/-1/history"))
        .iter()
        .filter_map(|i| i["message_id"].as_str().map(str::to_owned))
        .collect()
}

/// Every item of a history range, page after page (none for an unknown chat).
pub fn all_pages(c: &reqwest::blocking::Client, url: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if url.contains('?') { '&' } else { '?' };
        let page_url = match &cursor {
            Some(next) => format!("{url}{sep}limit=500&cursor={next}"),
            None => format!("{url}{sep}limit=500"),
        };
        let r = c.get(page_url).send().unwrap();
        if r.status() == 404 {
            return items;
        }
        let page = r.json_value();
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return items,
        }
    }
}

/// A fresh SQLite store URL in a scratch directory (removed when the first value is dropped).
pub(crate) fn db(name: &str) -> (chatctx_store::testing::Scratch, String) {
    let dir = chatctx_store::testing::Scratch::new(&format!("http-{name}"));
    let url = format!("sqlite://{}", dir.file("chatctx.db").display());
    (dir, url)
}

#[test]
fn routes_and_errors() {
    let s = start("memory");
    let c = client();
    let post = |path: &str, body: String| c.post(format!("{}{path}", s.base)).body(body).send().unwrap();
    let ok = post("/v1/events", msg(1).to_string());
    assert_eq!(ok.status(), 200);
    assert_eq!(
        ok.json_value(),
        json!({"accepted": 1, "decisions": [{"index": 0, "message_id": "1", "kind": "inbound_user", "triggered_agent": true}],
               "ignored": 0, "rejected": [], "rejected_count": 0})
    );
    // A JSON array and JSON Lines, with one bad event each: the rest is accepted, the bad one reported.
    let batch = post("/v1/events", json!([msg(2), {"type": "message"}, msg(3)]).to_string()).json_value();
    assert_eq!((batch["accepted"].as_u64(), batch["rejected"][0]["index"].as_u64()), (Some(2), Some(1)));
    let lines = format!("{}\n{}\n", msg(4), json!({"type": "typing"}));
    let batch = post("/v1/events", lines).json_value();
    assert_eq!(
        (batch["accepted"].as_u64(), batch["rejected"][0]["code"].as_str()),
        (Some(1), Some("unsupported_event"))
    );
    // Bad input: a 4xx with its code, and nothing changes.
    let before = stored_ids(&c, &s.base);
    for (path, body, status, code) in [
        ("/v1/events", "{not json".to_owned(), 400, "invalid_event"),
        ("/v1/events", json!({"type": "message", "chat_id": 1}).to_string(), 400, "invalid_event"),
        ("/v1/events", json!({"type": "message", "chat_id": "-1", "message_id": 9, "kind": "inbound_user", "sent_at": "soon", "sender": {"user_id": 1}}).to_string(), 400, "invalid_event"),
        ("/v1/tools/no_such_tool", "{}".to_owned(), 404, "unknown_tool"),
        ("/v1/tools/get_chat_history_context", json!({"chat_id": "-404"}).to_string(), 404, "unknown_chat"),
        ("/v1/tools/get_chat_history_context", "[1]".to_owned(), 400, "invalid_request"),
        ("/v1/tools/update_scenario", json!({"chat_id": "-1", "patch": "x"}).to_string(), 400, "invalid_patch"),
        ("/v1/telegram/updates", "[]".to_owned(), 400, "invalid_event"),
    ] {
        let r = post(path, body);
        assert_eq!(r.status().as_u16(), status, "{path}");
        assert_eq!(r.json_value()["code"], code, "{path}");
    }
    // A body that is not UTF-8 is refused whole, whichever shape it has (its bytes are checked once, whole, and the
    // messages in it are then read as text), while one whose text is UTF-8 beyond ASCII is taken.
    let mut bad_line = msg(5).to_string().into_bytes();
    bad_line.extend_from_slice(b"\n{\"type\":\"message\",\"text\":\"\xff\"}\n");
    for body in
        [b"{\"type\":\"message\",\"text\":\"\xff\"}".to_vec(), b"[{\"type\":\"message\"},\"\xc3\"]".to_vec(), bad_line]
    {
        let r = c.post(format!("{}/v1/events", s.base)).body(body).send().unwrap();
        assert_eq!(r.status().as_u16(), 400);
        let v = r.json_value();
        assert_eq!((v["code"].as_str(), v["message"].as_str()), (Some("invalid_event"), Some("the body is not UTF-8")));
    }
    // An oversized body: the server stops reading at the limit and answers 413. Raw HTTP, so the answer is
    // read even though the server never takes the rest of the body.
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    let head = format!(
        "POST /v1/events HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        5 * 1024 * 1024
    );
    std::io::Write::write_all(&mut stream, head.as_bytes()).unwrap();
    // More than the limit (the server reads up to it), ignoring write errors once it stops reading.
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..(4 * 1024 * 1024 / chunk.len() + 4) {
        if std::io::Write::write_all(&mut stream, &chunk).is_err() {
            break;
        }
    }
    // Read what arrives within a second (the rest of the declared body is never sent).
    stream.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = std::io::Read::read(&mut stream, &mut buf) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        if answer.windows(17).any(|w| w == b"payload_too_large") {
            break;
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");
    assert_eq!(stored_ids(&c, &s.base), before, "rejected input changed nothing");
    // Text beyond ASCII, in an array and in JSON Lines, is read as it was sent (in a chat of its own).
    let wide = |id: u64, text: &str| {
        let mut m = msg(id);
        m["chat_id"] = json!("-2");
        m["text"] = json!(text);
        m
    };
    assert_eq!(post("/v1/events", json!([wide(7, "ок 日本 😀")]).to_string()).json_value()["accepted"], 1);
    let lines = format!("{}\n{}\n", wide(8, "ещё 🚀"), wide(9, "plain"));
    assert_eq!(post("/v1/events", lines).json_value()["accepted"], 2);
    let texts: Vec<Value> =
        all_pages(&c, &format!("{}/v1/chats/-2/history", s.base)).iter().map(|i| i["text"].clone()).collect();
    assert_eq!(texts, [json!("ок 日本 😀"), json!("ещё 🚀"), json!("plain")]);
    // Tools, a Telegram webhook update, the state, forgetting the chat.
    let update = json!({"update_id": 1, "message": {"message_id": 10, "date": 1_770_000_010, "chat": {"id": -1, "type": "group"},
                        "from": {"id": 2, "first_name": "Bo", "username": "bo"}, "text": "@my_bot hi", "entities": [{"type": "mention", "offset": 0, "length": 7}]}});
    assert_eq!(post("/v1/telegram/updates?bot_username=my_bot", update.to_string()).status(), 200);
    let h =
        post("/v1/tools/get_chat_history_context", json!({"chat_id": "-1", "current_message_id": "10"}).to_string())
            .json_value();
    assert_eq!(h["items"].as_array().unwrap().len(), 4);
    let s1 = post("/v1/tools/update_scenario", json!({"chat_id": "-1", "patch": {"plan": 1}}).to_string()).json_value();
    assert_eq!(s1["revision"], 1);
    let conflict = post(
        "/v1/tools/update_scenario",
        json!({"chat_id": "-1", "patch": {"plan": 2}, "expected_revision": 0}).to_string(),
    );
    assert_eq!(conflict.status(), 409);
    let sc = c.get(format!("{}/v1/chats/-1/scenario", s.base)).send().unwrap().json_value();
    assert_eq!(sc["state"], json!({"plan": 1}));
    assert_eq!(c.get(format!("{}/healthz", s.base)).send().unwrap().status(), 200);
    // Every answer above is counted by route template (chat ids never become labels).
    let metrics = c.get(format!("{}/metrics", s.base)).send().unwrap().text().unwrap();
    assert!(
        metrics.contains(r#"chatctx_http_requests_total{route="/v1/tools/{tool}",method="POST",status="409"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"chatctx_http_requests_total{route="/v1/events",method="POST",status="413"} 1"#),
        "{metrics}"
    );
    assert!(!metrics.contains("-404"), "{metrics}");
    let d = c.delete(format!("{}/v1/chats/-1", s.base)).send().unwrap().json_value();
    assert_eq!(d["deleted"], true);
    assert!(stored_ids(&c, &s.base).is_empty());
}

#[test]
fn the_server_survives_its_log_pipe_closing() {
    let (mut child, lines, base) = spawn("memory", &[]);
    drop(lines); // nobody reads the logs any more
    let c = client();
    for _ in 0..3 {
        let r = c.post(format!("{base}/v1/tools/no_such_tool")).body("{}").send().unwrap();
        assert_eq!(r.status(), 404, "answered, with a log line that cannot be written");
    }
    assert_eq!(c.get(format!("{base}/healthz")).send().unwrap().status(), 200);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn tokens_chat_lists_and_bound_scopes() {
    let s = start_with(
        "memory",
        &[(
            "CHATCTX_SERVER__TOKENS",
            r#"["admin-token-0123456789", {token = "bot-a-token-0123456789", chats = ["-1"]}]"#,
        )],
    );
    let c = client();
    let post = |path: &str, token: Option<&str>, body: Value| {
        send_as(c.post(format!("{}{path}", s.base)).body(body.to_string()), token)
    };
    let get = |path: &str, token: &str| send_as(c.get(format!("{}{path}", s.base)), Some(token));
    let mut other = msg(1);
    other["chat_id"] = json!("-2");
    // No token, or a wrong one: 401, and nothing is stored.
    for token in [None, Some("nope")] {
        let r = post("/v1/events", token, msg(1));
        assert_eq!(r.status(), 401);
        assert_eq!(r.json_value()["code"], "unauthorized");
    }
    assert_eq!(
        get("/v1/chats/-1/history", "admin-token-0123456789").status(),
        404,
        "the unauthorized events were not stored"
    );
    assert_eq!(c.get(format!("{}/healthz", s.base)).send().unwrap().status(), 200, "probes need no token");
    // A token limited to chat -1: its own chat works; chat -2 is refused on every route, even inside a batch.
    assert_eq!(post("/v1/events", Some("bot-a-token-0123456789"), msg(1)).status(), 200);
    assert_eq!(post("/v1/events", Some("admin-token-0123456789"), other.clone()).status(), 200);
    let batch = post("/v1/events", Some("bot-a-token-0123456789"), json!([msg(2), other])).json_value();
    assert_eq!((batch["accepted"].as_u64(), batch["rejected"][0]["code"].as_str()), (Some(1), Some("forbidden_scope")));
    for r in [
        post("/v1/tools/get_chat_history_context", Some("bot-a-token-0123456789"), json!({"chat_id": "-2"})),
        post("/v1/scopes", Some("bot-a-token-0123456789"), json!({"chat_id": "-2"})),
        get("/v1/chats/-2/history", "bot-a-token-0123456789"),
        get("/v1/chats/-2/scenario", "bot-a-token-0123456789"),
        c.delete(format!("{}/v1/chats/-2", s.base)).bearer_auth("bot-a-token-0123456789").send().unwrap(),
    ] {
        assert_eq!(r.status(), 403);
        assert_eq!(r.json_value()["code"], "forbidden_scope");
    }
    assert_eq!(
        get("/v1/chats/-2/history", "admin-token-0123456789").json_value()["items"].as_array().unwrap().len(),
        1,
        "chat -2 untouched"
    );
    // A bound scope: the tool call names no chat and no current message, the scope supplies both.
    let issued = post(
        "/v1/scopes",
        Some("bot-a-token-0123456789"),
        json!({"chat_id": "-1", "current_message_id": "2", "ttl_seconds": 60}),
    )
    .json_value();
    let scoped = issued["token"].as_str().unwrap().to_owned();
    assert_eq!((issued["chat_id"].as_str(), issued["current_message_id"].as_str()), (Some("-1"), Some("2")));
    let h = post("/v1/tools/get_chat_history_context", Some(&scoped), json!({})).json_value();
    assert!(h["prompt"][1]["content"].as_str().unwrap().ends_with(": m2"), "message 2 is the current one: {h}");
    assert_eq!(h["items"].as_array().unwrap().len(), 1, "message 1 is the history before message 2: {h}");
    // It may not reach chat -2, may not write events elsewhere, and may not issue more scopes.
    let r = post("/v1/tools/get_chat_history_context", Some(&scoped), json!({"chat_id": "-2"}));
    assert_eq!(r.status(), 403);
    assert_eq!(post("/v1/scopes", Some(&scoped), json!({"chat_id": "-1"})).status(), 403);
    assert_eq!(get("/v1/chats/-2/objects", &scoped).status(), 403);
    assert_eq!(get("/v1/chats/-1/objects", &scoped).status(), 200);
    // Bad scope requests are 400s.
    let r = post("/v1/scopes", Some("admin-token-0123456789"), json!({"chat_id": "-1", "ttl_seconds": 0}));
    assert_eq!(
        (r.status().as_u16(), r.json_value()["code"].as_str().map(str::to_owned)),
        (400, Some("invalid_request".into()))
    );
}

/// Tool calls that change state (answered on the async worker, the disk wait on a blocking thread) are
/// durable once answered: each acknowledged scenario revision survives SIGKILL.
/// What one request may ask for is bounded, and hitting a bound says which setting it is.
#[test]
fn request_limits_are_enforced_with_clear_errors() {
    let s = start_with(
        "memory",
        &[
            ("CHATCTX_SERVER__MAX_JSON_DEPTH", "16"),
            ("CHATCTX_SERVER__MAX_BATCH_ITEMS", "50"),
            ("CHATCTX_SERVER__MAX_REJECTIONS", "3"),
        ],
    );
    let c = client();
    let post = |path: &str, body: String| c.post(format!("{}{path}", s.base)).body(body).send().unwrap();
    // Nesting: refused before it is parsed, on every JSON route, and nothing is stored.
    let deep = (0..20).fold(json!(1), |v, _| json!([v]));
    for path in ["/v1/events", "/v1/telegram/updates", "/v1/tools/update_scenario", "/v1/scopes"] {
        let body = json!({"chat_id": "-1", "patch": {"a": deep}, "update_id": 1}).to_string();
        let r = post(path, body);
        assert_eq!(r.status(), 400, "{path}");
        let e = r.json_value();
        assert_eq!(e["code"], "invalid_request", "{path}");
        assert!(e["message"].as_str().unwrap().contains("server.max_json_depth"), "{e}");
    }
    let state = c.get(format!("{}/v1/chats/-1/scenario", s.base)).send().unwrap().json_value();
    assert_eq!(state["revision"], 0);
    // Items per request: an array or JSON Lines past the cap is refused whole, before anything is applied.
    let many: Vec<Value> = (1..=51).map(msg).collect();
    let r = post("/v1/events", serde_json::to_string(&many).unwrap());
    assert_eq!(r.status(), 413);
    assert!(r.json_value()["message"].as_str().unwrap().contains("server.max_batch_items"));
    let lines: String = many.iter().map(|m| format!("{m}\n")).collect();
    assert_eq!(post("/v1/events", lines).status(), 413);
    assert!(stored_ids(&c, &s.base).is_empty());
    // Rejections: the first few listed, all counted.
    let bad: Vec<Value> = (0..50).map(|_| json!({"type": "bogus"})).collect();
    let report = post("/v1/events", serde_json::to_string(&bad).unwrap()).json_value();
    assert_eq!((report["rejected"].as_array().unwrap().len(), report["rejected_count"].as_u64()), (3, Some(50)));
}

/// Slow clients cannot hold the server: a connection that does not finish its headers is closed after
/// `server.header_read_timeout`, at most `server.max_connections` are open, and the open-files limit is raised.
#[test]
fn slow_clients_cannot_hold_the_server() {
    use std::io::{Read, Write};
    let s = start_with(
        "memory",
        &[("CHATCTX_SERVER__HEADER_READ_TIMEOUT", "1s"), ("CHATCTX_SERVER__MAX_CONNECTIONS", "4")],
    );
    let addr = s.base.trim_start_matches("http://").to_owned();
    // Eight connections that start a request and never finish its headers: twice the cap.
    let mut slow: Vec<std::net::TcpStream> = (0..8)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(&addr).unwrap();
            c.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").unwrap();
            c
        })
        .collect();
    let started = std::time::Instant::now();
    let r = client().get(format!("{}/healthz", s.base)).send().unwrap();
    assert_eq!(r.status(), 200);
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(8), "served after {waited:?}");
    // The slow ones were closed by the server.
    let mut closed = 0;
    for c in &mut slow {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 256];
        match c.read(&mut buf) {
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            // End of stream, a 408 answer, or a reset: the server let go of it.
            _ => closed += 1,
        }
    }
    assert_eq!(closed, 8);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", s.child.id())).unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap().to_owned();
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers[0], numbers[1], "soft limit raised to the hard one: {line}");
}

/// MCP over HTTP keeps no session: `initialize` leaves nothing behind for a client to pile up.
#[test]
fn mcp_over_http_keeps_no_sessions() {
    let s = start("memory");
    let c = client();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}});
    for _ in 0..3 {
        let r = send_as(mcp_request(&c, &s.base, &init), None);
        assert_eq!(r.status(), 200);
        assert!(r.headers().get("mcp-session-id").is_none(), "{:?}", r.headers());
    }
    // A tool call needs no session.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let r = send_as(mcp_request(&c, &s.base, &list), None);
    assert_eq!(r.status(), 200);
    assert!(r.text().unwrap().contains("resolve_reference_target"));
}

/// Message text, tool arguments and state never reach the log, at info or debug, over REST and MCP.
#[test]
fn payloads_never_reach_the_log() {
    for level in ["info", "debug"] {
        let (mut child, lines, base) = spawn("memory", &[("CHATCTX_LOG", level)]);
        let collected = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<String>>());
        let c = client();
        let post = |path: &str, body: Value| {
            c.post(format!("{base}{path}"))
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .unwrap()
        };
        let mut m = msg(1);
        m["text"] = json!("SECRET-TEXT-MARKER look at this");
        assert_eq!(post("/v1/events", m).status(), 200);
        post("/v1/tools/update_scenario", json!({"chat_id": "-1", "patch": {"plan": "SECRET-STATE-MARKER"}}));
        post("/v1/tools/get_chat_history_context", json!({"chat_id": "-1", "query": "SECRET-ARG-MARKER"}));
        post(
            "/v1/tools/resolve_reference_target",
            json!({"chat_id": "-1", "current_message_id": "1",
            "reference_text": "SECRET-ARG-MARKER", "sender_user_id": "1"}),
        );
        let mcp = |body: Value| send_as(mcp_request(&c, &base, &body), None).text().unwrap();
        mcp(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}));
        let answer = mcp(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "get_chat_history_context", "arguments": {"chat_id": "-1", "query": "SECRET-ARG-MARKER"}}}));
        assert!(answer.contains("SECRET-TEXT-MARKER"), "the answer itself carries the text: {answer}");
        mcp(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "nope", "arguments": {"x": "SECRET-ARG-MARKER"}}}));
        let _ = child.kill();
        let _ = child.wait();
        let log = collected.join().unwrap().join("\n");
        assert!(log.contains("call get_chat_history_context"), "{level}: the calls were logged: {log}");
        for marker in ["SECRET-TEXT-MARKER", "SECRET-STATE-MARKER", "SECRET-ARG-MARKER"] {
            assert!(!log.contains(marker), "{level}: {marker} in the log:\n{log}");
        }
    }
}

/// The ingest answer says what the mapping decided: per message its kind and whether it triggers the bot,
/// and how many update kinds were ignored (also counted by kind in /metrics, with a bounded label set).
#[test]
fn ingest_answers_say_what_the_mapping_decided() {
    let s = start("memory");
    let c = client();
    let post = |path: &str, body: Value| c.post(format!("{}{path}", s.base)).body(body.to_string()).send().unwrap();
    let group = |id: i64, text: &str| {
        json!({"update_id": id, "message": {"message_id": id, "date": 1_770_970_800, "text": text,
            "chat": {"id": -100500, "type": "supergroup", "title": "G"}, "from": {"id": 42, "first_name": "Ann"}}})
    };
    let r = post("/v1/telegram/updates?bot_username=my_bot", group(1, "hello all")).json_value();
    assert_eq!(
        r["decisions"],
        json!([{"index": 0, "message_id": "1", "kind": "inbound_user", "triggered_agent": false}])
    );
    let r = post("/v1/telegram/updates?bot_username=my_bot", group(2, "@my_bot help")).json_value();
    assert_eq!(r["decisions"][0]["triggered_agent"], true);
    let callback = json!({"update_id": 3, "callback_query": {"id": "cb1", "from": {"id": 42, "first_name": "Ann"},
        "chat_instance": "ci", "data": "yes"}});
    let r = post("/v1/telegram/updates", callback).json_value();
    assert_eq!((r["accepted"].as_u64(), r["ignored"].as_u64(), r["decisions"].clone()), (Some(1), Some(1), json!([])));
    post("/v1/telegram/updates", json!({"update_id": 4, "made_up_kind_1": {"x": 1}}));
    post("/v1/telegram/updates", json!({"update_id": 5, "made_up_kind_2": {"x": 1}}));
    let metrics = c.get(format!("{}/metrics", s.base)).send().unwrap().text().unwrap();
    assert!(metrics.contains("chatctx_ignored_updates_total{kind=\"callback_query\"} 1"), "{metrics}");
    assert!(metrics.contains("chatctx_ignored_updates_total{kind=\"other\"} 2"), "{metrics}");
}

/// `GET /v1/chats/{id}/history` pages a range (docs/protocol.md §6.5), and the same read is the tool
/// `get_chat_history_range`.
#[test]
fn history_reads_are_paged_ranges() {
    let s = start("memory");
    let c = client();
    let events: Vec<Value> = (1..=12).map(msg).collect();
    assert_eq!(
        c.post(format!("{}/v1/events", s.base)).body(Value::from(events).to_string()).send().unwrap().status(),
        200
    );
    let page = c.get(format!("{}/v1/chats/-1/history?limit=5", s.base)).send().unwrap().json_value();
    assert_eq!(page["items"].as_array().unwrap().len(), 5);
    let next = page["next"].as_str().unwrap().to_owned();
    let rest = c.get(format!("{}/v1/chats/-1/history?limit=50&cursor={next}", s.base)).send().unwrap().json_value();
    assert_eq!(rest["items"].as_array().unwrap().len(), 7);
    assert!(rest.get("next").is_none(), "the last page has no next");
    assert_eq!(all_pages(&c, &format!("{}/v1/chats/-1/history", s.base)).len(), 12);
    let after = c.get(format!("{}/v1/chats/-1/history?after_message_id=10", s.base)).send().unwrap().json_value();
    let ids: Vec<&str> = after["items"].as_array().unwrap().iter().filter_map(|i| i["message_id"].as_str()).collect();
    assert_eq!(ids, ["11", "12"]);
    for bad in ["limit=0", "limit=many", "cursor=x", "since=yesterday"] {
        let r = c.get(format!("{}/v1/chats/-1/history?{bad}", s.base)).send().unwrap();
        assert_eq!(r.status(), 400, "{bad}");
        assert_eq!(r.json_value()["code"], "invalid_request", "{bad}");
    }
    let tool = c
        .post(format!("{}/v1/tools/get_chat_history_range", s.base))
        .body(json!({"chat_id": "-1", "after_message_id": "10"}).to_string())
        .send()
        .unwrap()
        .json_value();
    assert_eq!(tool, after, "the tool answers as the route does");
}

/// Issue 28, point 15: a slow-header flood (more connections than `server.max_connections`, each trickling a
/// request head) does not keep a normal client waiting: the oldest connection without a whole head is closed to
/// make room, and the client is answered within a second.
#[test]
fn a_slow_header_flood_does_not_starve_a_normal_client() {
    use std::io::Write as _;
    let s = start_with(
        "memory",
        &[("CHATCTX_SERVER__MAX_CONNECTIONS", "16"), ("CHATCTX_SERVER__HEADER_READ_TIMEOUT", "60s")],
    );
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut slow = Vec::new();
    for _ in 0..64 {
        let mut conn = std::net::TcpStream::connect(&addr).unwrap();
        conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").unwrap();
        slow.push(conn);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let r = client().get(format!("{}/healthz", s.base)).timeout(std::time::Duration::from_secs(5)).send().unwrap();
    assert_eq!(r.status(), 200);
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "answered after {:?}", started.elapsed());
    drop(slow);
}
