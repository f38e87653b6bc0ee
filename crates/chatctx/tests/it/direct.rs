//! `/v1/events` reads the common message shape straight into events (`chatctx_core::event::fresh_message`); an
//! event with a field that shape does not know (here `"via"`, which the general way ignores) takes the general way
//! (parse, check, decode). The same events sent both ways must be answered, stored and read back after a restart
//! byte for byte alike.

use serde_json::{Value, json};

use crate::http::{JsonBody, client, start_with};

/// Messages of the common shape (with what the general way normalizes: integer ids, names to trim, `@`), a quote
/// and attachments, messages it leaves to the general way (an unknown field, a key twice), other events, and
/// events either way refuses.
fn lines() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in 1..=6u64 {
        out.push(
            json!({"type": "message", "chat_id": "-1", "message_id": i.to_string(), "kind": "inbound_user",
                   "sent_at": 1_770_000_000 + i, "sender": {"user_id": "7", "username": "ann"}, "text": format!("line {i}\nnext"),
                   "triggered_agent": i % 2 == 0})
            .to_string(),
        );
    }
    out.extend([
        r#"{"type":"message","chat_id":-1,"message_id":7,"kind":"outbound_agent","sent_at":"2026-02-13T08:20:10+03:00","sender":{"user_id":99,"username":" @bot ","first_name":"  Bot  ","is_bot":true},"text":"@ann see https://example.org","entities":[{"type":"mention","offset":0,"length":4},{"type":"url","offset":9,"length":19,"url":"ignored"}],"actions":["searched"],"chat_type":"supergroup","topic_id":"3","reply_to_message_id":"2"}"#.to_owned(),
        r#"{"type":"message","chat_id":"-1","message_id":"8","kind":"inbound_user","sent_at":1770000100,"sender":{"user_id":"8","display_name":"Bob"},"text":"quoting","quote":{"sender":{"first_name":" Ann "},"text":"line 1"}}"#.to_owned(),
        r#"{"type":"message","chat_id":"-1","message_id":"15","kind":"inbound_user","sent_at":1770000100,"sender":{"user_id":"8"},"text":"a photo","attachments":[{"kind":"media.image","label":"cat.jpg"}]}"#.to_owned(),
        r#"{"type":"message","chat_id":"-1","message_id":"9","kind":"inbound_user","sent_at":1770000101,"sender":{"user_id":"8"},"text":"extra","mood":"fine"}"#.to_owned(),
        r#"{"type":"message","chat_id":"-1","message_id":"10","kind":"inbound_user","sent_at":1770000102,"sender":{"user_id":"8"},"text":"first","text":"second"}"#.to_owned(),
        r#"{"type":"reaction","chat_id":"-1","message_id":"1","sent_at":1770000103,"sender":{"user_id":"8"},"emoji":["👍"]}"#.to_owned(),
        r#"{"type":"message","chat_id":"-2","message_id":"1","kind":"system","sent_at":1770000104,"text":"created"}"#.to_owned(),
        // A quote from a hidden author (no user id): stored, and read back at the restart.
        r#"{"type":"telegram_update","update":{"update_id":1,"message":{"message_id":20,"date":1770000200,"chat":{"id":-1,"type":"supergroup"},"from":{"id":8,"is_bot":false,"first_name":"Bob"},"text":"about that","quote":{"text":"quoted words","position":0},"external_reply":{"origin":{"type":"hidden_user","sender_user_name":"Hidden Ann","date":1769990000},"chat":{"id":-5,"type":"supergroup"}}}}}"#.to_owned(),
        r#"{"type":"message","chat_id":"-1","message_id":"21","kind":"inbound_user","sent_at":1770000201,"sender":{"user_id":"8"},"text":"hidden","quote":{"sender":{"user_id":"","first_name":"Hidden"},"text":"words"}}"#.to_owned(),
        // Refused, either way.
        r#"{"type":"message","chat_id":"-1","message_id":"11","kind":"inbound_user","sent_at":1770000105,"text":"no sender"}"#.to_owned(),
        r#"{"type":"message","chat_id":"-1\u0007","message_id":"12","kind":"inbound_user","sent_at":1770000106,"sender":{"user_id":"8"}}"#.to_owned(),
        format!(r#"{{"type":"message","chat_id":"-1","message_id":"13","kind":"inbound_user","sent_at":1770000107,"sender":{{"user_id":"8","first_name":"{}"}}}}"#, "x".repeat(1025)),
        r#"{"type":"message","chat_id":"-1","message_id":"14","kind":"inbound_user","sent_at":"soon","sender":{"user_id":"8"}}"#.to_owned(),
        r#"{"type":"message","chat_id":"-1","message_id":"","kind":"inbound_user","sent_at":1770000108,"sender":{"user_id":"8"}}"#.to_owned(),
    ]);
    out
}

/// The same event, for the general way: it ignores a field it does not know; the direct reading does not take it.
fn general(line: &str) -> String {
    format!("{{\"via\":\"general\",{}", &line[1..])
}

fn history(c: &reqwest::blocking::Client, base: &str, chat: &str) -> String {
    let r = c.get(format!("{base}/v1/chats/{chat}/history?limit=100")).send().unwrap();
    r.text().unwrap()
}

#[test]
fn messages_read_directly_are_answered_stored_and_reloaded_as_the_general_way_does() {
    let dir = chatctx_store::testing::Scratch::new("http-direct");
    let c = client();
    let lines = lines();
    let bodies = [
        ("array", format!("[{}]", lines.join(","))),
        ("lines", lines.join("\n\n")),
        ("general", format!("[{}]", lines.iter().map(|l| general(l)).collect::<Vec<_>>().join(","))),
    ];
    let (mut reports, mut histories) = (Vec::new(), Vec::new());
    for (name, body) in &bodies {
        let url = format!("sqlite://{}", dir.file(&format!("{name}.db")).display());
        let s = start_with(&url, &[]);
        let report = c
            .post(format!("{}/v1/events", s.base))
            .header("content-type", if *name == "lines" { "application/x-ndjson" } else { "application/json" })
            .body(body.clone())
            .send()
            .unwrap()
            .json_value();
        reports.push(report);
        let before = [history(&c, &s.base, "-1"), history(&c, &s.base, "-2")];
        drop(s);
        // What was acknowledged loads again.
        let s = start_with(&url, &[]);
        let after = [history(&c, &s.base, "-1"), history(&c, &s.base, "-2")];
        assert_eq!(before, after, "{name}: the same after a restart");
        histories.push(after);
    }
    assert_eq!(reports[0], reports[2]);
    assert_eq!(reports[1], reports[2]);
    assert_eq!(reports[0]["accepted"], 15, "{}", reports[0]);
    assert_eq!(reports[0]["rejected_count"], 5, "{}", reports[0]);
    assert_eq!(histories[0], histories[2]);
    assert_eq!(histories[1], histories[2]);
    let h: Value = serde_json::from_str(&histories[0][0]).unwrap();
    assert!(h["items"].as_array().is_some_and(|i| i.len() >= 9), "{h}");
}

#[test]
fn a_single_event_is_answered_alike_either_way() {
    let (direct, general_way) = (start_with("memory", &[]), start_with("memory", &[]));
    let c = client();
    for (i, line) in lines().iter().enumerate() {
        let one = c.post(format!("{}/v1/events", direct.base)).body(line.clone()).send().unwrap();
        let other = c.post(format!("{}/v1/events", general_way.base)).body(general(line)).send().unwrap();
        assert_eq!(one.status(), other.status(), "{i}");
        assert_eq!(one.text().unwrap(), other.text().unwrap(), "{i}");
    }
}
