//! Model triage against a local stub HTTP server that speaks the chat-completions API.

use crate::call;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chatctx::config::LlmSettings;
use chatctx::triage::HttpTriage;
use chatctx_core::render::{PromptMessage, Role};
use chatctx_core::selection::{Triage, TriageRequest};
use serde_json::{Value, json};

/// What the stub answers, one entry per request (the last repeats).
#[derive(Clone)]
pub(crate) enum Reply {
    /// 200 with this assistant content.
    Content(String),
    /// This status and body.
    Status(u16, String),
    /// Wait, then answer with this content.
    Slow(Duration, String),
}

pub(crate) struct Stub {
    pub(crate) url: String,
    pub(crate) requests: Arc<Mutex<Vec<Value>>>,
}

pub(crate) fn stub(replies: Vec<Reply>) -> Stub {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 2 {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            seen.lock().unwrap().push(serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null));
            let reply = replies.get(n).or(replies.last()).cloned().unwrap();
            let (status, text) = match reply {
                Reply::Content(c) => {
                    (200, json!({"choices": [{"message": {"role": "assistant", "content": c}}]}).to_string())
                }
                Reply::Status(s, b) => (s, b),
                Reply::Slow(d, c) => {
                    std::thread::sleep(d);
                    (200, json!({"choices": [{"message": {"role": "assistant", "content": c}}]}).to_string())
                }
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    Stub { url, requests }
}

fn client(url: &str) -> HttpTriage {
    let llm = LlmSettings {
        base_url: Some(url.to_owned()),
        api_key_env: None,
        models: BTreeMap::from([("fast".to_owned(), "qwen2.5:1.5b".to_owned())]),
        ..LlmSettings::default()
    };
    HttpTriage::from_settings(&llm).unwrap().unwrap()
}

fn request(timeout_secs: f64) -> TriageRequest {
    TriageRequest {
        model: "fast".into(),
        timeout_secs,
        messages: vec![PromptMessage { role: Role::User, content: "pick".into() }],
        count: 5,
    }
}

#[test]
fn valid_ids_and_the_request_it_sends() {
    let s = stub(vec![Reply::Content(r#"{"relevant_ids": [1, 3, 9]}"#.into())]);
    assert_eq!(client(&s.url).triage(&request(5.0)), Ok(vec![0, 2]), "out-of-range ids are ignored");
    let sent = &s.requests.lock().unwrap()[0];
    assert_eq!(sent["model"], "qwen2.5:1.5b", "the role alias is resolved");
    assert_eq!(sent["messages"][0]["content"], "pick");
}

#[test]
fn fenced_json_and_prose_are_tolerated() {
    let s = stub(vec![Reply::Content("Here:\n```json\n{\"relevant_ids\": [\"2\"]}\n```".into())]);
    assert_eq!(client(&s.url).triage(&request(5.0)), Ok(vec![1]));
}

#[test]
fn an_empty_list_is_a_valid_answer() {
    let s = stub(vec![Reply::Content(r#"{"relevant_ids": []}"#.into())]);
    assert_eq!(client(&s.url).triage(&request(5.0)), Ok(vec![]));
}

#[test]
fn garbage_is_an_error_without_retries() {
    let s = stub(vec![Reply::Content("I think the second one".into())]);
    assert!(client(&s.url).triage(&request(5.0)).is_err());
    let s2 = stub(vec![Reply::Status(200, "not json at all".into())]);
    assert!(client(&s2.url).triage(&request(5.0)).is_err());
    assert_eq!(s.requests.lock().unwrap().len() + s2.requests.lock().unwrap().len(), 2);
}

#[test]
fn server_errors_are_retried_within_the_budget() {
    let s = stub(vec![Reply::Status(500, "{}".into()), Reply::Content(r#"{"relevant_ids": [4]}"#.into())]);
    assert_eq!(client(&s.url).triage(&request(5.0)), Ok(vec![3]), "the second attempt succeeds");
    let s = stub(vec![Reply::Status(503, "{}".into())]);
    assert!(client(&s.url).triage(&request(5.0)).is_err());
    assert_eq!(s.requests.lock().unwrap().len(), 3, "three attempts, then the error");
    let s = stub(vec![Reply::Status(400, "{}".into())]);
    assert!(client(&s.url).triage(&request(5.0)).is_err());
    assert_eq!(s.requests.lock().unwrap().len(), 1, "a client error is final");
}

#[test]
fn the_timeout_bounds_the_whole_triage() {
    let s = stub(vec![Reply::Slow(Duration::from_secs(3), r#"{"relevant_ids": [1]}"#.into())]);
    let t = Instant::now();
    assert!(client(&s.url).triage(&request(0.5)).is_err());
    let took = t.elapsed();
    assert!(took < Duration::from_millis(1500), "retries included, it stopped after {took:?}");
}

#[test]
fn replay_uses_the_configured_endpoint() {
    let s = stub(vec![Reply::Content(r#"{"relevant_ids": [2]}"#.into())]);
    let dir = chatctx_store::testing::Scratch::new("triage");
    let cfg = dir.file("llm.toml");
    std::fs::write(
        &cfg,
        format!(
            "[history]\nmode = \"talkative\"\n[conversation]\nalways_include_recent = 2\n[llm]\nbase_url = \"{}\"\n",
            s.url
        ),
    )
    .unwrap();
    let mut input = String::new();
    for i in 1..=6 {
        input.push_str(
            &json!({"event": {"type": "message", "chat_id": "-1", "message_id": i.to_string(), "kind": "inbound_user",
            "sent_at": 1_770_000_000 + i, "sender": {"user_id": "1", "username": "ann"}, "text": format!("m{i}")}})
            .to_string(),
        );
        input.push('\n');
    }
    input.push_str(
        &json!({"call": "get_chat_history_context", "args": {"chat_id": "-1", "current_message_id": "6"}}).to_string(),
    );
    let out = super::run_with_stdin(&["replay", "-c", cfg.to_str().unwrap()], &input);
    let l = super::lines(&out);
    let h = &l[0]["result"];
    assert_eq!(h["selection"]["method"], "triage");
    let texts: Vec<&str> = h["items"].as_array().unwrap().iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["m2", "m4", "m5"], "triage picked the second older item; the two recent ones always stay");
    let prompt = s.requests.lock().unwrap()[0]["messages"][1]["content"].as_str().unwrap().to_owned();
    assert!(prompt.contains("[1] ") && prompt.contains("[3] ") && !prompt.contains("[4] "), "{prompt}");
}

/// The service asks the model without holding the engine: while one chat's triage waits on a slow model,
/// another chat's calls are answered, and the triage answer still selects the history (one model call).
#[test]
fn a_slow_model_holds_up_no_other_call() {
    use chatctx::service::Service;
    use chatctx_core::{Settings, Timestamp};

    let s = stub(vec![Reply::Slow(Duration::from_millis(1500), r#"{"relevant_ids": [2]}"#.into())]);
    let mut settings = Settings::default();
    settings.history.mode = chatctx_core::settings::Mode::Talkative;
    settings.conversation.always_include_recent = 2;
    settings.conversation.selection_timeout = 10.0;
    let llm = LlmSettings {
        base_url: Some(s.url.clone()),
        api_key_env: None,
        models: BTreeMap::new(),
        ..LlmSettings::default()
    };
    let store = chatctx_store::open("memory", &Default::default()).unwrap();
    let (svc, _) = Service::open(settings, llm, store).unwrap();
    let svc = Arc::new(svc);
    let now = Timestamp::from_unix(1_770_000_100).unwrap();
    let message = |chat: &str, i: i64| {
        json!({"type": "message", "chat_id": chat, "message_id": i.to_string(), "kind": "inbound_user",
               "sent_at": 1_770_000_000 + i, "sender": {"user_id": "1", "username": "ann"}, "text": format!("m{i}")})
    };
    let events: Vec<Value> = (1..=6).map(|i| message("-1", i)).collect();
    assert_eq!(svc.ingest(&events, now).unwrap().accepted, 6);

    let start = Instant::now();
    let history = {
        let svc = svc.clone();
        std::thread::spawn(move || {
            let r = call(&svc, "get_chat_history_context", &json!({"chat_id": "-1", "current_message_id": "6"}), now);
            (r, start.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(svc.ingest(&[message("-2", 1)], now).unwrap().accepted, 1);
    call(&svc, "update_scenario", &json!({"chat_id": "-2", "patch": {"plan": "trip"}}), now).unwrap();
    let others = start.elapsed();
    let (answer, waited) = history.join().unwrap();
    assert!(others < Duration::from_millis(1200), "other calls waited for the model: {others:?}");
    assert!(waited >= Duration::from_millis(1500), "the history call waited for the model: {waited:?}");
    let h = serde_json::to_value(answer.unwrap()).unwrap();
    assert_eq!(h["selection"]["method"], "triage");
    let texts: Vec<&str> = h["items"].as_array().unwrap().iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["m2", "m4", "m5"], "the model's answer selected the history");
    assert_eq!(s.requests.lock().unwrap().len(), 1, "one model call");
}

/// A one-shot server answering every request with `head` then `body` (no content-length unless `head` has one),
/// and counting the requests it saw.
fn raw_server(head: String, body: Vec<u8>) -> (String, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(0));
    let count = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 2 {
                line.clear();
            }
            *count.lock().unwrap() += 1;
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    (url, seen)
}

/// Issue 28, point 8: an answer over `llm.max_response_bytes` is refused without being read whole, with or
/// without a content-length; a redirect is not followed (it would re-post the chat's text elsewhere).
#[test]
fn model_answers_are_capped_and_redirects_not_followed() {
    let big = "x".repeat(2 * 1024 * 1024);
    let s = stub(vec![Reply::Content(big.clone())]);
    let e = client(&s.url).triage(&request(5.0)).unwrap_err();
    assert!(e.contains("max_response_bytes"), "{e}");
    assert_eq!(s.requests.lock().unwrap().len(), 1, "refused, not retried");
    // No content-length: read up to the cap, then refused.
    let body = json!({"choices": [{"message": {"content": big}}]}).to_string().into_bytes();
    let (url, _) =
        raw_server("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n".into(), body);
    let e = client(&url).triage(&request(5.0)).unwrap_err();
    assert!(e.contains("max_response_bytes"), "{e}");
    // A redirect to another server: not followed.
    let (elsewhere, reached) = raw_server("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n".into(), b"{}".to_vec());
    let head = format!(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: {elsewhere}/chat/completions\r\ncontent-length: 0\r\n\r\n"
    );
    let (url, _) = raw_server(head, Vec::new());
    assert!(client(&url).triage(&request(2.0)).is_err());
    assert_eq!(*reached.lock().unwrap(), 0, "the chat's text went nowhere else");
}
