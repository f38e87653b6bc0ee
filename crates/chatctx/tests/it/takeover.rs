//! A thread cannot take over another chat (issue 28, point 1): a credential may name as a thread only a chat it
//! may touch, a chat with history of its own or another chat's thread is never re-parented, a deleted chat's
//! thread mapping goes with it, and imports obey the same rule. A log written before the rule still loads.

use chatctx::config::LlmSettings;
use chatctx::service::Service;
use chatctx_core::transfer::ConversationDoc;
use chatctx_core::{Engine, Event, Settings, Timestamp};
use serde_json::{Value, json};

use crate::http::{JsonBody, client, send_as, start_with};

const OPERATOR: &str = "operator-token-0123456789";
const LIMITED: &str = "limited-token-0123456789";

fn message(channel: &str, chat: &str, id: u32, text: &str) -> Value {
    json!({"type": "message", "channel": channel, "chat_id": chat, "message_id": id.to_string(),
           "kind": "inbound_user", "sent_at": 1_770_000_000 + id, "sender": {"user_id": "1", "username": "ann"},
           "text": text})
}

fn thread(channel: &str, parent: &str, thread: &str) -> Value {
    json!({"type": "thread", "channel": channel, "chat_id": parent, "topic_id": thread})
}

#[test]
fn a_limited_token_cannot_declare_another_chat_its_thread() {
    let tokens = format!(r#"["{OPERATOR}", {{token = "{LIMITED}", chats = ["600"]}}]"#);
    let s = start_with("memory", &[("CHATCTX_SERVER__TOKENS", tokens.as_str())]);
    let c = client();
    let post = |path: &str, token: &str, body: Value| {
        send_as(c.post(format!("{}{path}", s.base)).body(body.to_string()), Some(token))
    };
    // The victim's chats on three platforms, as their own bots feed them (through the operator token here).
    for (channel, chat) in [("discord", "500"), ("telegram", "-100500"), ("slack", "C500")] {
        assert_eq!(post("/v1/events", OPERATOR, message(channel, chat, 1, "victim's own")).status(), 200);
    }
    // The attacker's token may touch chat 600 only: naming 500 as its thread is refused, by every route.
    for (channel, victim) in [("discord", "500"), ("telegram", "-100500"), ("slack", "C500"), ("discord", "501")] {
        let r = post("/v1/events", LIMITED, thread(channel, "600", victim));
        assert_eq!(r.status(), 403, "{channel} {victim}");
        assert_eq!(r.json_value()["code"], "forbidden_scope");
    }
    let create =
        json!({"op": 0, "t": "THREAD_CREATE", "d": {"id": "500", "parent_id": "600", "type": 11, "name": "x"}});
    assert_eq!(post("/v1/discord/events", LIMITED, create.clone()).status(), 403);
    // Even the operator cannot make a chat with history, or another chat's thread, a thread.
    let r = post("/v1/discord/events", OPERATOR, create);
    assert_eq!(r.status(), 400);
    assert!(r.json_value()["message"].as_str().unwrap().contains("history of its own"));
    assert_eq!(post("/v1/events", OPERATOR, thread("discord", "600", "700")).status(), 200);
    assert_eq!(
        post("/v1/events", OPERATOR, thread("discord", "600", "700")).status(),
        200,
        "declared again: same parent"
    );
    let r = post("/v1/events", OPERATOR, thread("discord", "800", "700"));
    assert_eq!((r.status().as_u16(), r.json_value()["code"].clone()), (400, json!("invalid_event")));
    // The victim's next message still lands in the victim's chat, which its token still reads.
    assert_eq!(post("/v1/events", OPERATOR, message("discord", "500", 2, "still mine")).status(), 200);
    let history =
        send_as(c.get(format!("{}/v1/chats/500/history?channel=discord", s.base)), Some(OPERATOR)).json_value();
    assert_eq!(history["items"].as_array().unwrap().len(), 2, "{history}");
    let attacker = send_as(c.get(format!("{}/v1/chats/600/history?channel=discord", s.base)), Some(LIMITED));
    assert_eq!(attacker.json_value()["items"], json!([]), "nothing reached the attacker's chat");
}

#[test]
fn deleting_a_thread_or_its_parent_forgets_the_mapping() {
    let mut e = Engine::new(Settings::default());
    let ev = |v: Value| Event::decode(&v).unwrap();
    e.apply(ev(thread("discord", "600", "700"))).unwrap();
    e.apply(ev(thread("discord", "601", "701"))).unwrap();
    assert!(e.is_thread("discord", "700") && e.is_thread("discord", "701"));
    assert!(!e.remove_chat("discord", "700"), "no chat of its own, but the mapping goes");
    assert!(!e.is_thread("discord", "700"));
    e.remove_chat("discord", "601");
    assert!(!e.is_thread("discord", "701"));
}

/// A log written before the rule may hold a thread event the rule refuses: it loads, without the mapping.
#[test]
fn an_old_log_with_a_takeover_still_loads_without_it() {
    let mut e = Engine::new(Settings::default());
    let ev = |v: Value| Event::decode(&v).unwrap();
    let applied = e.apply_all(vec![ev(message("discord", "500", 1, "victim")), ev(thread("discord", "600", "500"))]);
    let applied = applied.unwrap();
    assert!(applied.warnings.iter().any(|w| w.contains("thread event not applied")), "{:?}", applied.warnings);
    assert!(!e.is_thread("discord", "500"));
}

#[test]
fn an_import_cannot_claim_another_chat_as_its_thread() {
    let store = chatctx_store::Opened::Local(std::sync::Arc::new(chatctx_store::MemoryStore::default()));
    let svc = Service::open(Settings::default(), LlmSettings::default(), store).unwrap().0;
    let now = Timestamp::from_unix(1_770_000_100).unwrap();
    svc.ingest(&[message("discord", "500", 1, "victim"), message("discord", "600", 2, "mine")], now).unwrap();
    let mut doc: ConversationDoc = svc.read(|e| e.export_conversation("discord", "600")).unwrap().unwrap();
    doc.threads = vec!["500".into()];
    let e = svc.import(&doc).unwrap_err();
    assert!(e.message.contains("history of its own"), "{e}");
    assert!(!svc.read(|e| e.is_thread("discord", "500")).unwrap());
    // Offline, the engine leaves such a thread out rather than take the chat.
    let mut engine = Engine::new(Settings::default());
    engine.apply(Event::decode(&message("discord", "500", 1, "victim")).unwrap()).unwrap();
    engine.import_document(&doc).unwrap();
    assert!(!engine.is_thread("discord", "500"));
}
