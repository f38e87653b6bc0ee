//! Decision records (docs/protocol.md §6.7) on a real server seeded with a forum chat: what each answer says
//! of how it was reached, the routes that serve the records, `explain: true`, access, and that `chatctx
//! replay` of the same events and calls gives the same records.

use std::process::Command;

use serde_json::{Value, json};

use super::http::{JsonBody, client, mcp_request, send_as, start_with};

const CHAT: &str = "-1001777000042";
const ADMIN: &str = "admin-token-0123456789";
const OTHER: &str = "other-chat-token-0123456789";
/// The selection the records are checked under: lexical, three older items chosen, five recent.
const SETTINGS: &[(&str, &str)] = &[
    ("CHATCTX_CONVERSATION__SELECTOR", "lexical"),
    ("CHATCTX_CONVERSATION__LEXICAL_KEEP", "3"),
    ("CHATCTX_CONVERSATION__LOOKBACK_COUNT", "15"),
    ("CHATCTX_HISTORY__MODE", "talkative"),
];

/// The forum chat's events, as lines of `tests/data/forum-chat.jsonl`.
pub fn forum_events() -> Vec<Value> {
    let text = include_str!("../data/forum-chat.jsonl");
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
        .collect()
}

/// The calls the test makes, each with its time: history for Bob's reply to the photo and for his question to
/// the bot, a resolution of "the photo" and the active objects.
fn calls() -> Vec<(&'static str, Value)> {
    let now = 1_779_703_300;
    vec![
        ("get_chat_history_context", json!({"chat_id": CHAT, "current_message_id": "521", "now": now})),
        ("get_chat_history_context", json!({"chat_id": CHAT, "current_message_id": "524", "now": now})),
        (
            "resolve_reference_target",
            json!({"chat_id": CHAT, "current_message_id": "524", "sender_user_id": "102", "now": now,
                   "normalized_reference_hints": {"target_kind_hint": "poll"}}),
        ),
        ("list_active_context_objects", json!({"chat_id": CHAT, "current_message_id": "524", "now": now})),
    ]
}

/// A record's tool part without what it keeps of the answer (a history answer's items and prompt): what an
/// answer's inline `explain` holds.
fn without_answer(part: &Value) -> Value {
    let mut part = part.clone();
    if let Some(m) = part.as_object_mut() {
        m.remove("kept_items");
        m.remove("prompt");
    }
    part
}

fn ids(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().filter_map(|i| i["message_id"].as_str()).collect()
}

#[test]
fn every_answer_has_a_record_that_explains_it() {
    let tokens = format!(r#"["{ADMIN}", {{token = "{OTHER}", chats = ["-100"]}}]"#);
    let mut env = SETTINGS.to_vec();
    env.push(("CHATCTX_SERVER__TOKENS", tokens.as_str()));
    let s = start_with("memory", &env);
    let c = client();
    let r = send_as(c.post(format!("{}/v1/events", s.base)).body(Value::from(forum_events()).to_string()), Some(ADMIN));
    assert_eq!(r.status(), 200);

    let mut answers = Vec::new();
    for (i, (tool, args)) in calls().into_iter().enumerate() {
        let r = send_as(
            c.post(format!("{}/v1/tools/{tool}", s.base))
                .header("x-request-id", format!("call-{i}"))
                .body(args.to_string()),
            Some(ADMIN),
        );
        assert_eq!(r.status(), 200, "{tool}");
        let answer = r.json_value();
        assert!(answer.get("explain").is_none(), "a record is not in the answer unless asked for");
        answers.push(answer);
    }

    let url = |rest: &str| format!("{}/v1/chats/{CHAT}/decisions{rest}", s.base);
    let listed = send_as(c.get(url("")), Some(ADMIN)).json_value();
    let records = listed["decisions"].as_array().unwrap();
    let order: Vec<&str> = records.iter().map(|r| r["request_id"].as_str().unwrap()).collect();
    assert_eq!(order, ["call-3", "call-2", "call-1", "call-0"], "newest first, under the logged request ids");

    // History, Bob replying to the photo (505) in the Route topic.
    let h = &records[3];
    assert_eq!(h["tool"], "get_chat_history_context");
    let history = &h["history"];
    let items = history["items"].as_array().unwrap();
    let verdict =
        |id: &str| items.iter().find(|i| i["message_id"] == id).unwrap_or_else(|| panic!("{id} in {history}"));
    assert_eq!(verdict("505")["reason"], "reply_parent");
    assert_eq!(verdict("505")["kept"], true);
    assert_eq!(verdict("519")["reason"], "recent_window", "the newest items are the recent window");
    let reasons: Vec<&str> = items.iter().map(|i| i["reason"].as_str().unwrap()).collect();
    assert!(reasons.contains(&"lexical_score") && reasons.contains(&"not_chosen"), "{reasons:?}");
    for i in items.iter().filter(|i| i["reason"] == "lexical_score") {
        assert!(i["score"].as_f64().is_some(), "a lexical pick has its score: {i}");
    }
    // Only the Route topic's items are looked at, and what is kept is exactly the answer's items.
    let gear_and_general = ["501", "508", "509", "510", "511", "512", "516", "520"];
    assert!(items.iter().all(|i| !gear_and_general.contains(&i["message_id"].as_str().unwrap())), "{history}");
    let kept: Vec<&str> = items.iter().filter(|i| i["kept"] == true).filter_map(|i| i["message_id"].as_str()).collect();
    assert_eq!(kept, ids(&answers[0]["items"]), "the kept verdicts are the answer's items, in order");
    assert_eq!(history["kept_items"], answers[0]["items"]);
    assert_eq!(history["prompt"], answers[0]["prompt"], "the record holds the exact prompt");
    assert_eq!(history["method"], "lexical");
    let used = history["budget"]["used_tokens"].as_u64().unwrap();
    assert!(used > 0 && history["budget"].get("max_tokens").is_none(), "{}", history["budget"]);
    assert_eq!(history["in_other_topics"], gear_and_general.len(), "the items of Gear and the general thread");
    // What the record names, as stored: the chat and topic by their titles, the message being handled.
    let glance = json!({"who": "Bob", "text": "Is the Zawrat descent OK with the loose scree if it's wet on Sunday morning?",
                        "topic_id": "12"});
    assert_eq!(h["stored"], json!({"chat_title": "Tatra weekend", "topic_title": "Route", "message": glance}));

    // The resolver's candidates: parts that add up, a rank, and why the answer is what it is.
    let res = &records[1]["resolve"];
    assert_eq!(res["status"], answers[2]["status"]);
    assert_eq!(res["why"], answers[2]["status"], "{res}");
    let cands = res["candidates"].as_array().unwrap();
    assert!(cands.len() >= answers[2]["candidates"].as_array().unwrap().len());
    assert_eq!(cands[0]["object_id"], "513:poll");
    assert_eq!(cands[0]["rank"], 1);
    // Each candidate still held, with who posted it and its first words (a message candidate: the message's).
    let seen = &records[1]["stored"]["candidates"];
    assert_eq!(seen.as_object().unwrap().len(), cands.len(), "every candidate is still stored: {seen}");
    assert_eq!(seen["513:poll"]["who"], "TrailMate");
    assert!(seen["513:poll"]["text"].as_str().unwrap().starts_with("Ridge day"), "{seen}");
    assert_eq!(seen["522:message"]["who"], "Carol");
    for c in cands {
        let sum: f64 = c["parts"].as_array().unwrap().iter().map(|p| p["points"].as_f64().unwrap()).sum();
        assert!((sum - c["score"].as_f64().unwrap()).abs() < 0.02, "{c}");
    }

    // The active objects: activation, TTL left, tier.
    let live = &records[0]["list"]["objects"];
    let poll = live.as_array().unwrap().iter().find(|o| o["object_id"] == "513:poll").expect("the poll is live");
    assert_eq!(poll["activation"], "resolved", "the resolution just before activated it");
    assert_eq!(poll["activated_by"], "524");
    assert!(poll["ttl_left_secs"].as_i64().unwrap() > 0, "{poll}");
    assert_eq!(poll["returned"], true);

    // One record by its id; a missing one, a bad limit, another chat's credential.
    let one = send_as(c.get(url("/call-2")), Some(ADMIN)).json_value();
    assert_eq!(one["request_id"], "call-2");
    let r = send_as(c.get(url("/nope")), Some(ADMIN));
    assert_eq!(r.status(), 404);
    assert_eq!(r.json_value()["code"], "unknown_decision");
    assert_eq!(send_as(c.get(url("?limit=0")), Some(ADMIN)).status(), 400);
    assert_eq!(send_as(c.get(url("?limit=2")), Some(ADMIN)).json_value()["decisions"].as_array().unwrap().len(), 2);
    assert_eq!(send_as(c.get(url("")), Some(OTHER)).status(), 403);
    assert_eq!(send_as(c.get(url("/call-2")), Some(OTHER)).status(), 403);
    assert_eq!(send_as(c.get(url("")), None).status(), 401);
    let chats = send_as(c.get(format!("{}/v1/chats", s.base)), Some(OTHER)).json_value();
    assert_eq!(chats["chats"], json!([]), "a credential lists only the chats it may read");
    let chats = send_as(c.get(format!("{}/v1/chats", s.base)), Some(ADMIN)).json_value();
    assert_eq!(chats["chats"][0]["chat_id"], CHAT);
    assert_eq!(chats["chats"][0]["topics"], json!(["12", "31"]));
    assert_eq!(chats["chats"][0]["title"], "Tatra weekend");
    assert_eq!(chats["chats"][0]["topic_titles"], json!({"12": "Route", "31": "Gear"}));

    // `explain: true` puts the record in the answer, over HTTP and over MCP.
    let (tool, mut args) = calls().remove(0);
    args["explain"] = json!(true);
    let r = send_as(c.post(format!("{}/v1/tools/{tool}", s.base)).body(args.to_string()), Some(ADMIN)).json_value();
    let decision = without_answer(&records[3]["history"]);
    assert_eq!(r["explain"], decision, "inline, the same record");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": tool, "arguments": args}});
    let r = mcp_request(&c, &s.base, &call).header("x-request-id", "mcp-call").bearer_auth(ADMIN).send().unwrap();
    let r = r.json_value();
    assert_eq!(r["result"]["structuredContent"]["explain"], decision, "{r}");
    let mcp = send_as(c.get(url("/mcp-call")), Some(ADMIN)).json_value();
    assert_eq!(mcp["tool"], "get_chat_history_context");

    // A deleted chat's records go with it.
    assert_eq!(send_as(c.delete(format!("{}/v1/chats/{CHAT}", s.base)), Some(ADMIN)).status(), 200);
    assert_eq!(send_as(c.get(url("")), Some(ADMIN)).json_value()["decisions"], json!([]));
}

/// `chatctx replay --explain` over the same events and calls gives the records the server gave, twice alike.
#[test]
fn replay_gives_the_same_records_as_the_server() {
    let s = start_with("memory", SETTINGS);
    let c = client();
    assert_eq!(
        c.post(format!("{}/v1/events", s.base)).body(Value::from(forum_events()).to_string()).send().unwrap().status(),
        200
    );
    let mut lines: Vec<String> = forum_events().into_iter().map(|e| json!({"event": e}).to_string()).collect();
    for (tool, args) in calls() {
        assert_eq!(c.post(format!("{}/v1/tools/{tool}", s.base)).body(args.to_string()).send().unwrap().status(), 200);
        lines.push(json!({"call": tool, "args": args}).to_string());
    }
    let records = c.get(format!("{}/v1/chats/{CHAT}/decisions", s.base)).send().unwrap().json_value();
    let dir = chatctx_store::testing::Scratch::new("decisions-replay");
    let file = dir.file("forum.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_chatctx"))
            .args(["replay", "--explain"])
            .arg(&file)
            .env("CHATCTX_CONVERSATION__CACHE_MAX_PER_CONVERSATION", "1000000")
            .envs(SETTINGS.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let first = run();
    assert_eq!(first, run(), "byte for byte the same records");
    let answers: Vec<Value> =
        String::from_utf8(first).unwrap().lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).collect();
    assert_eq!(answers.len(), 4);
    let served = records["decisions"].as_array().unwrap();
    for (answer, record) in answers.iter().zip(served.iter().rev()) {
        let explain = &answer["result"]["explain"];
        let part = ["history", "resolve", "list"].iter().find_map(|k| record.get(*k)).unwrap();
        assert_eq!(explain, &without_answer(part), "{}", record["tool"]);
    }
}

/// Issue 28, point 5: an edit or a deletion of a message drops the records that hold its text, a deleted chat
/// keeps none, and a client-chosen `x-request-id` cannot shadow another caller's record.
#[test]
fn edited_and_deleted_text_leaves_the_records_and_request_ids_stay_unique() {
    let s = start_with("memory", SETTINGS);
    let c = client();
    let post = |path: &str, body: Value| send_as(c.post(format!("{}{path}", s.base)).body(body.to_string()), None);
    let msg = |id: u32, text: &str| {
        json!({"type": "message", "chat_id": "-5", "message_id": id.to_string(), "kind": "inbound_user",
               "sent_at": 1_770_000_000 + id, "sender": {"user_id": "1", "username": "ann"}, "text": text,
               "triggered_agent": true})
    };
    for (id, text) in [(1, "the secret is swordfish"), (2, "ok"), (3, "what was it?")] {
        assert_eq!(post("/v1/events", msg(id, text)).status(), 200);
    }
    let history = json!({"chat_id": "-5", "current_message_id": "3", "now": 1_770_000_100});
    let call = |id: &str| {
        c.post(format!("{}/v1/tools/get_chat_history_context", s.base))
            .header("x-request-id", id)
            .body(history.to_string())
            .send()
            .unwrap()
    };
    assert_eq!(call("mine").status(), 200);
    assert_eq!(call("mine").status(), 200, "the same id again, as another caller might send it");
    let records = |s: &crate::http::Server| {
        c.get(format!("{}/v1/chats/-5/decisions", s.base)).send().unwrap().json_value()["decisions"].clone()
    };
    let kept = records(&s);
    let ids: Vec<&str> = kept.as_array().unwrap().iter().map(|r| r["request_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&"mine") && ids.iter().any(|i| i.starts_with("mine~")), "{ids:?}");
    let first = c.get(format!("{}/v1/chats/-5/decisions/mine", s.base)).send().unwrap().json_value();
    assert_eq!(first["request_id"], "mine", "the first record keeps its id");
    assert!(kept.to_string().contains("swordfish"));
    // An edit of message 1 drops every record holding its old text.
    assert_eq!(post("/v1/events", msg(1, "the secret is [redacted]")).status(), 200);
    assert_eq!(records(&s), json!([]), "records holding the edited text are gone");
    assert_eq!(call("after-edit").status(), 200);
    assert!(records(&s).to_string().contains("[redacted]"));
    // A deletion likewise.
    let delete = json!({"type": "delete", "chat_id": "-5", "message_ids": ["1"], "at": 1_770_000_200});
    assert_eq!(post("/v1/events", delete).status(), 200);
    assert!(!records(&s).to_string().contains("[redacted]"));
    assert_eq!(call("after-delete").status(), 200);
    assert_eq!(records(&s).as_array().unwrap().len(), 1);
    // A deleted chat keeps none.
    assert_eq!(c.delete(format!("{}/v1/chats/-5", s.base)).send().unwrap().status(), 200);
    assert_eq!(c.get(format!("{}/v1/chats/-5/decisions", s.base)).send().unwrap().json_value()["decisions"], json!([]));
}
