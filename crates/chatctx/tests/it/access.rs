//! Access control as docs/security.md states it: who holds which credential and what each may do (the table
//! there is the `CAPABILITIES` table here), what a browser page can and cannot make the server do, and the
//! error shape of every refusal.

use serde_json::{Value, json};

use crate::http::{JsonBody, client, send_as, start_with};

const OPERATOR: &str = "operator-token-0123456789";
const BOT: &str = "bot-a-token-0123456789";

/// One row per credential, one column per action: whether it is allowed (docs/security.md holds the same
/// table; this test is what keeps them true).
const CAPABILITIES: &[(&str, [bool; 12])] = &[
    // ingest, telegram, tools own chat, tools other chat, tools other topic, write the summary, read own, read
    // other topic, read other chat, delete own, issue scope, metrics+openapi
    ("operator token", [true, true, true, true, true, true, true, true, true, true, true, true]),
    ("bot token limited to chat -1", [true, true, true, false, true, true, true, true, false, true, true, true]),
    ("scope for chat -1, topic 7", [false, false, true, false, false, false, true, false, false, false, false, false]),
    ("no token", [false, false, false, false, false, false, false, false, false, false, false, false]),
];

fn event(chat: &str, id: u32, topic: &str) -> Value {
    json!({"type": "message", "chat_id": chat, "message_id": id.to_string(), "topic_id": topic, "kind": "inbound_user",
           "sent_at": 1_770_000_000 + id, "sender": {"user_id": "1", "username": "ann"}, "text": format!("m{id}"),
           "triggered_agent": true})
}

#[test]
fn each_credential_can_do_what_the_table_says() {
    let tokens = format!(r#"["{OPERATOR}", {{token = "{BOT}", chats = ["-1"]}}]"#);
    let s = start_with("memory", &[("CHATCTX_SERVER__TOKENS", tokens.as_str())]);
    let c = client();
    let post = |path: &str, token: Option<&str>, body: Value| {
        send_as(c.post(format!("{}{path}", s.base)).body(body.to_string()), token)
    };
    let get = |path: &str, token: Option<&str>| send_as(c.get(format!("{}{path}", s.base)), token);
    // Setup by the operator: chats -1 (topics 7 and 8) and -2.
    for e in [event("-1", 1, "7"), event("-1", 2, "8"), event("-2", 3, "1")] {
        assert_eq!(post("/v1/events", Some(OPERATOR), e).status(), 200);
    }
    let issued = post("/v1/scopes", Some(BOT), json!({"chat_id": "-1", "topic_id": "7", "current_message_id": "1"}));
    let scope = issued.json_value()["token"].as_str().unwrap().to_owned();
    let holders: [Option<&str>; 4] = [Some(OPERATOR), Some(BOT), Some(&scope), None];
    let mut next_id = 100;
    for ((who, expected), token) in CAPABILITIES.iter().zip(holders) {
        next_id += 10;
        let update = json!({"update_id": next_id, "message": {"message_id": next_id, "date": 1_770_000_100,
            "chat": {"id": -1, "type": "supergroup"}, "from": {"id": 5, "first_name": "Eve"}, "text": "hi"}});
        let outcomes = [
            post("/v1/events", token, event("-1", next_id, "7")).status(),
            post("/v1/telegram/updates", token, update).status(),
            post("/v1/tools/get_scenario", token, json!({"chat_id": "-1", "topic_id": "7"})).status(),
            post("/v1/tools/get_scenario", token, json!({"chat_id": "-2"})).status(),
            post(
                "/v1/tools/update_scenario",
                token,
                json!({"chat_id": "-1", "topic_id": "8", "patch": {"x": next_id}}),
            )
            .status(),
            post(
                "/v1/tools/update_summary",
                token,
                json!({"chat_id": "-1", "text": format!("so far {next_id}"), "covers_until_message_id": "1"}),
            )
            .status(),
            get("/v1/chats/-1/history?topic_id=7", token).status(),
            get("/v1/chats/-1/history?topic_id=8", token).status(),
            get("/v1/chats/-2/history", token).status(),
            // Deleting a chat: one made for the purpose (chat -1 itself for the bot token, put back after).
            {
                post("/v1/events", Some(OPERATOR), event(&format!("-9{next_id}"), next_id + 1, "7"));
                delete_status(&c, &s.base, token, next_id)
            },
            post("/v1/scopes", token, json!({"chat_id": "-1"})).status(),
            {
                let m = get("/metrics", token).status();
                let o = get("/openapi.json", token).status();
                assert_eq!(m, o, "{who}: /metrics and /openapi.json alike");
                m
            },
        ];
        let got: Vec<bool> = outcomes.iter().map(|s| s.is_success()).collect();
        assert_eq!(got, expected, "{who}: {outcomes:?}");
        for status in outcomes.iter().filter(|s| !s.is_success()) {
            assert!([401, 403].contains(&status.as_u16()), "{who}: refusals are 401 or 403: {outcomes:?}");
        }
    }
    // The scope's topic is pinned: no topic asked for means its own.
    let h = get("/v1/chats/-1/history", Some(&scope)).json_value();
    let ids: Vec<&str> = h["items"].as_array().unwrap().iter().filter_map(|i| i["message_id"].as_str()).collect();
    assert!(ids.contains(&"1") && !ids.contains(&"2"), "topic 7's messages only (2 is in topic 8): {h}");
    assert_eq!(get("/healthz", None).status(), 200);
    assert_eq!(get("/readyz", None).status(), 200);
    // A scope the operator issued to write the summary may, in its topic only.
    let issued = post("/v1/scopes", Some(BOT), json!({"chat_id": "-1", "topic_id": "7", "may_write_summary": true}))
        .json_value();
    assert_eq!(issued["may_write_summary"], true);
    let writer = issued["token"].as_str().unwrap().to_owned();
    let w = post(
        "/v1/tools/update_summary",
        Some(&writer),
        json!({"text": "by the model", "covers_until_message_id": "1"}),
    );
    assert_eq!(w.status(), 200, "{:?}", w.json_value());
    let other_topic = json!({"text": "x", "covers_until_message_id": "2", "topic_id": "8"});
    assert_eq!(post("/v1/tools/update_summary", Some(&writer), other_topic).status(), 403);
}

/// Deletes a chat made for the purpose (chat -1 for the bot token, which may touch only that one; it is
/// recreated by the next row's events).
fn delete_status(c: &reqwest::blocking::Client, base: &str, token: Option<&str>, id: u32) -> reqwest::StatusCode {
    let chat = if token == Some(BOT) { "-1".to_owned() } else { format!("-9{id}") };
    let status = send_as(c.delete(format!("{base}/v1/chats/{chat}")), token).status();
    if token == Some(BOT) && status.is_success() {
        // Put chat -1 back for the rows after this one.
        let mut e = event("-1", 1, "7");
        e["text"] = json!("m1");
        c.post(format!("{base}/v1/events")).bearer_auth(OPERATOR).body(e.to_string()).send().unwrap();
        c.post(format!("{base}/v1/events")).bearer_auth(OPERATOR).body(event("-1", 2, "8").to_string()).send().unwrap();
    }
    status
}

/// A client that sets no Content-Type of its own.
fn plain_client() -> reqwest::blocking::Client {
    chatctx::triage::install_tls_provider();
    reqwest::blocking::Client::builder().pool_max_idle_per_host(0).build().unwrap()
}

/// What a web page could make a browser send: a "simple" cross-origin POST (text/plain, a form, no type), a
/// rebinding host name, a foreign Origin. None of it reaches a route; each answer has the error shape.
#[test]
fn browser_requests_and_foreign_hosts_are_refused() {
    let s = start_with("memory", &[]);
    let c = plain_client();
    let url = |p: &str| format!("{}{p}", s.base);
    let body = event("-1", 1, "7").to_string();
    for content_type in
        [Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("multipart/form-data"), None]
    {
        for path in ["/v1/events", "/v1/tools/update_scenario", "/v1/telegram/updates", "/v1/scopes"] {
            let mut r = c.post(url(path)).body(body.clone());
            if let Some(t) = content_type {
                r = r.header("content-type", t);
            }
            let r = r.send().unwrap();
            assert_eq!(r.status(), 415, "{path} {content_type:?}");
            assert_eq!(r.json_value()["code"], "unsupported_media_type");
        }
    }
    let json = |r: reqwest::blocking::RequestBuilder| r.header("content-type", "application/json");
    // JSON Lines on the events route, with its own type; JSON with a charset.
    let lines = format!("{}\n{}\n", event("-1", 1, "7"), event("-1", 2, "7"));
    let r = c.post(url("/v1/events")).header("content-type", "application/x-ndjson").body(lines).send().unwrap();
    assert_eq!(r.json_value()["accepted"], 2);
    let r = c.post(url("/v1/tools/get_scenario")).header("content-type", "application/json; charset=utf-8");
    assert_eq!(r.body(json!({"chat_id": "-1"}).to_string()).send().unwrap().status(), 200);
    // Nothing from the refused requests was stored.
    let state = c.get(url("/v1/chats/-1/scenario")).send().unwrap().json_value();
    assert_eq!(state["revision"], 0);
    // DNS rebinding: a foreign Host reads nothing, on every route, /mcp included.
    for path in ["/v1/chats/-1/history", "/mcp", "/metrics", "/openapi.json"] {
        let r = c.get(url(path)).header("host", "evil.example").send().unwrap();
        assert_eq!(r.status(), 403, "{path}");
        assert_eq!(r.json_value()["code"], "forbidden_host");
    }
    // The probes answer whatever the host (load balancers ask by address).
    assert_eq!(c.get(url("/healthz")).header("host", "10.0.0.9:7878").send().unwrap().status(), 200);
    // A foreign Origin is refused even with JSON; the server's own origin is not.
    let r = json(c.post(url("/v1/events")).header("origin", "https://evil.example")).body(body.clone()).send().unwrap();
    assert_eq!((r.status().as_u16(), r.json_value()["code"].clone()), (403, json!("forbidden_host")));
    let own = s.base.clone();
    let r = json(c.post(url("/v1/events")).header("origin", own)).body(body).send().unwrap();
    assert_eq!(r.status(), 200);
}

/// Every error comes as `{"code", "message"}`, whoever produced it.
#[test]
fn every_error_has_the_documented_shape() {
    let s = start_with("memory", &[]);
    let c = plain_client();
    let url = |p: &str| format!("{}{p}", s.base);
    let long = format!("/v1/chats/{}/history", "1".repeat(9000));
    let cases: Vec<(reqwest::blocking::RequestBuilder, u16, &str)> = vec![
        (c.get(url("/v1/events")), 405, "method_not_allowed"),
        (c.put(url("/v1/tools/get_scenario")), 405, "method_not_allowed"),
        (c.get(url(&long)), 414, "request_too_large"),
        (c.get(url("/v1/chats/%ff/history")), 400, "invalid_request"),
        (c.get(url("/nope")), 404, "unknown_tool"),
        (c.get(url("/v1/chats/-1/history")).header("x-big", "a".repeat(40_000)), 431, "request_too_large"),
        (
            c.post(url("/mcp"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(vec![b' '; 5 * 1024 * 1024]),
            413,
            "payload_too_large",
        ),
        (c.post(url("/v1/events")).header("content-type", "application/json").body(""), 400, "invalid_event"),
        (c.get(url(&format!("/v1/chats/{}/history", "1".repeat(300)))), 400, "invalid_request"),
        (
            c.post(url("/v1/tools/get_scenario"))
                .header("content-type", "application/json")
                .body(json!({"chat_id": "1".repeat(300)}).to_string()),
            400,
            "invalid_request",
        ),
    ];
    for (request, status, code) in cases {
        let r = request.send().unwrap();
        let got = r.status().as_u16();
        let text = r.text().unwrap();
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{status} {code}: not JSON: {text:?}"));
        assert_eq!((got, v["code"].as_str().unwrap_or("")), (status, code), "{text}");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{text}");
    }
}

/// Small things: the Bearer scheme in any case; a poll answer refused for a chat-limited token does not
/// name the chat the poll lives in.
#[test]
fn bearer_in_any_case_and_refusals_name_no_other_chat() {
    let tokens = format!(r#"["{OPERATOR}", {{token = "{BOT}", chats = ["-1"]}}]"#);
    let s = start_with("memory", &[("CHATCTX_SERVER__TOKENS", tokens.as_str())]);
    let c = client();
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let r =
            c.get(format!("{}/v1/chats/-1/history", s.base)).header("authorization", format!("{scheme} {OPERATOR}"));
        assert_ne!(r.send().unwrap().status(), 401, "{scheme}");
    }
    // A poll in chat -100777, then a poll answer (which names only the poll) from the bot limited to -1.
    let poll = json!({"update_id": 1, "message": {"message_id": 5, "date": 1_770_000_000, "chat": {"id": -100777, "type": "supergroup"},
        "from": {"id": 9, "first_name": "Op"}, "poll": {"id": "poll-1", "question": "Lunch?", "options": [{"text": "yes", "voter_count": 0}],
        "total_voter_count": 0, "is_closed": false, "is_anonymous": false, "type": "regular", "allows_multiple_answers": false}}});
    let r =
        c.post(format!("{}/v1/telegram/updates", s.base)).bearer_auth(OPERATOR).body(poll.to_string()).send().unwrap();
    assert_eq!(r.status(), 200);
    let answer = json!({"update_id": 2, "poll_answer": {"poll_id": "poll-1", "user": {"id": 7, "first_name": "Al"}, "option_ids": [0]}});
    let r = c.post(format!("{}/v1/telegram/updates", s.base)).bearer_auth(BOT).body(answer.to_string()).send().unwrap();
    assert_eq!(r.status(), 403);
    let text = r.text().unwrap();
    assert!(!text.contains("100777"), "the refusal names the poll's chat: {text}");
}

/// Rebuilding from the store at start prints a summary, not a line per stored operation.
#[test]
fn a_restart_prints_no_line_per_stored_operation() {
    use std::io::BufRead;
    let dir = chatctx_store::testing::Scratch::new("access-restart-log");
    let store = format!("sqlite://{}", dir.file("chatctx.db").display());
    let start = || {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_chatctx"))
            .args(["serve", "--listen", "127.0.0.1:0", "--store", &store])
            .env("CHATCTX_LOG", "info")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut before = Vec::new();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let base = loop {
            let line = lines.next().unwrap().unwrap();
            if let Some(at) = line.find("listening on ") {
                break format!("http://{}", line[at + 13..].trim());
            }
            before.push(line);
        };
        (child, base, before)
    };
    let (mut child, base, _) = start();
    let c = client();
    for i in 0..20 {
        let r = c
            .post(format!("{base}/v1/tools/update_scenario"))
            .body(json!({"chat_id": "-1", "patch": {"n": i}}).to_string());
        assert_eq!(r.send().unwrap().status(), 200);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let (mut child, _, before) = start();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(before.iter().any(|l| l.contains("rebuilt 20 logged operations")), "{before:?}");
    assert!(!before.iter().any(|l| l.contains("call update_scenario")), "{before:?}");
}

/// A revoked scope stops working, and stays revoked after a restart.
#[test]
fn a_revoked_scope_stays_revoked() {
    let dir = chatctx_store::testing::Scratch::new("access-revoke");
    let store = format!("sqlite://{}", dir.file("chatctx.db").display());
    let env = [
        ("CHATCTX_SERVER__TOKENS", r#"["operator-token-0123456789"]"#),
        ("CHATCTX_SERVER__SCOPE_KEY", "a-scope-key-that-is-long-enough-0123"),
    ];
    let c = client();
    let scope = {
        let s = start_with(&store, &env);
        let issued =
            c.post(format!("{}/v1/scopes", s.base)).bearer_auth(OPERATOR).body(json!({"chat_id": "-1"}).to_string());
        let scope = issued.send().unwrap().json_value()["token"].as_str().unwrap().to_owned();
        let call =
            || c.post(format!("{}/v1/tools/get_scenario", s.base)).bearer_auth(&scope).body("{}").send().unwrap();
        assert_eq!(call().status(), 200);
        // A scope cannot revoke (itself or another); the operator can.
        let by_scope = c.delete(format!("{}/v1/scopes/{scope}", s.base)).bearer_auth(&scope).send().unwrap();
        assert_eq!(by_scope.status(), 403);
        let r = c.delete(format!("{}/v1/scopes/{scope}", s.base)).bearer_auth(OPERATOR).send().unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(call().status(), 401);
        scope
    };
    let s = start_with(&store, &env);
    let r = c.post(format!("{}/v1/tools/get_scenario", s.base)).bearer_auth(&scope).body("{}").send().unwrap();
    assert_eq!(r.status(), 401, "revoked across a restart");
}

/// `server.public_metrics` opens `/metrics` to scrapers, and nothing else.
#[test]
fn public_metrics_open_metrics_only() {
    let tokens = format!(r#"["{OPERATOR}"]"#);
    let s = start_with(
        "memory",
        &[("CHATCTX_SERVER__TOKENS", tokens.as_str()), ("CHATCTX_SERVER__PUBLIC_METRICS", "true")],
    );
    let c = client();
    assert_eq!(c.get(format!("{}/metrics", s.base)).send().unwrap().status(), 200);
    assert_eq!(c.get(format!("{}/openapi.json", s.base)).send().unwrap().status(), 401);
    assert_eq!(c.get(format!("{}/v1/chats/-1/history", s.base)).send().unwrap().status(), 401);
}

/// Issue 28, point 4: a scope pinned to a topic cannot read another topic by naming one of its messages as
/// the current message or the reply target, through any tool.
#[test]
fn a_pinned_scope_cannot_read_another_topic_through_a_message_id() {
    let tokens = format!(r#"["{OPERATOR}"]"#);
    let s = start_with("memory", &[("CHATCTX_SERVER__TOKENS", tokens.as_str())]);
    let c = client();
    let post = |path: &str, token: &str, body: Value| {
        send_as(c.post(format!("{}{path}", s.base)).body(body.to_string()), Some(token))
    };
    for e in [event("-1", 1, "7"), event("-1", 2, "8")] {
        assert_eq!(post("/v1/events", OPERATOR, e).status(), 200);
    }
    let issued = post("/v1/scopes", OPERATOR, json!({"chat_id": "-1", "topic_id": "7"})).json_value();
    let scope = issued["token"].as_str().unwrap().to_owned();
    let other = "2"; // in topic 8
    for (tool, args) in [
        ("get_chat_history_context", json!({"current_message_id": other})),
        ("resolve_reference_target", json!({"current_message_id": other, "sender_user_id": "1"})),
        (
            "resolve_reference_target",
            json!({"current_message_id": "1", "sender_user_id": "1", "reply_to_message_id": other}),
        ),
        ("list_active_context_objects", json!({"current_message_id": other})),
        ("list_active_context_objects", json!({"reply_to_message_id": other})),
    ] {
        let r = post(&format!("/v1/tools/{tool}"), &scope, args.clone());
        assert_eq!(r.status(), 403, "{tool} {args}");
        let body = r.json_value();
        assert_eq!(body["code"], "forbidden_scope");
        assert!(!body.to_string().contains("m2"), "no text of the other topic: {body}");
    }
    // Its own topic's messages are fine, and the operator may name any.
    let r = post("/v1/tools/get_chat_history_context", &scope, json!({"current_message_id": "1"}));
    assert_eq!(r.status(), 200);
    let r = post("/v1/tools/get_chat_history_context", OPERATOR, json!({"chat_id": "-1", "current_message_id": other}));
    assert_eq!(r.status(), 200);
}

/// Issue 28, point 12: an id with a control character (which could forge a log line) is refused on every way
/// in: an event, a platform payload, a tool call, a scope, a chat route.
#[test]
fn ids_with_control_characters_are_refused_everywhere() {
    let s = start_with("memory", &[]);
    let c = client();
    let post = |path: &str, body: Value| send_as(c.post(format!("{}{path}", s.base)).body(body.to_string()), None);
    let forged = "1\n2026-01-01T00:00:00Z INFO call forged";
    let mut e = event("-1", 1, "7");
    e["chat_id"] = json!(forged);
    assert_eq!(post("/v1/events", e).status(), 400);
    let mut e = event("-1", 1, "7");
    e["sender"]["user_id"] = json!("u\r1");
    assert_eq!(post("/v1/events", e).status(), 400);
    let discord = json!({"op": 0, "t": "MESSAGE_CREATE", "d": {"id": "10", "channel_id": "5\u{1b}[31m", "type": 0,
        "timestamp": "2026-02-13T08:20:00.000000+00:00", "content": "hi", "author": {"id": "7", "username": "u"}}});
    assert_eq!(post("/v1/discord/events", discord).status(), 400);
    assert_eq!(post("/v1/events", event("-1", 1, "7")).status(), 200);
    let r = post("/v1/tools/get_chat_history_context", json!({"chat_id": "-1", "current_message_id": forged}));
    assert_eq!((r.status().as_u16(), r.json_value()["code"].clone()), (400, json!("invalid_request")));
    assert_eq!(post("/v1/scopes", json!({"chat_id": "-1", "topic_id": "7\n"})).status(), 400);
    // A state patch is the caller's data, not ids: a key ending in `_id` may hold anything.
    let patch = json!({"chat_id": "-1", "patch": {"ticket_id": "line one\nline two"}});
    assert_eq!(post("/v1/tools/update_scenario", patch).status(), 200);
    let r = c.get(format!("{}/v1/chats/-1%0Aforged/history", s.base)).send().unwrap();
    assert_eq!(r.status(), 400);
    // Nothing of the refused inputs was stored.
    let chats = c.get(format!("{}/v1/chats", s.base)).send().unwrap().json_value();
    assert_eq!(chats["chats"].as_array().unwrap().len(), 1, "{chats}");
}

/// Issue 28, point 11: `GET /v1/chats` lists only what the credential may read, and pages the full listing.
#[test]
fn the_chat_list_is_the_credentials_and_paged() {
    let tokens = format!(r#"["{OPERATOR}", {{token = "{BOT}", chats = ["-3"]}}]"#);
    let s = start_with("memory", &[("CHATCTX_SERVER__TOKENS", tokens.as_str())]);
    let c = client();
    for i in 1..=5 {
        let r = send_as(
            c.post(format!("{}/v1/events", s.base)).body(event(&format!("-{i}"), i, "1").to_string()),
            Some(OPERATOR),
        );
        assert_eq!(r.status(), 200);
    }
    let get = |q: &str, token: &str| send_as(c.get(format!("{}/v1/chats{q}", s.base)), Some(token));
    let mine = get("", BOT).json_value();
    let ids: Vec<&str> = mine["chats"].as_array().unwrap().iter().map(|c| c["chat_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["-3"]);
    let (mut seen, mut after) = (Vec::new(), String::new());
    loop {
        let page = get(&format!("?limit=2{after}"), OPERATOR).json_value();
        seen.extend(page["chats"].as_array().unwrap().iter().map(|c| c["chat_id"].as_str().unwrap().to_owned()));
        match page["next"].as_str() {
            Some(n) => after = format!("&after={n}"),
            None => break,
        }
    }
    assert_eq!(seen, ["-1", "-2", "-3", "-4", "-5"]);
    assert_eq!(get("?limit=0", OPERATOR).status(), 400);
    assert_eq!(get("?limit=1001", OPERATOR).status(), 400);
}
