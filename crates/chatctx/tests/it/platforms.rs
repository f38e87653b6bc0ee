//! Discord and Slack through the running server (docs/protocol.md §3.9, §3.10): the routes, Slack's URL
//! verification and signatures, threads filed under their parent channel (durably), and deletions.

use std::sync::Arc;

use chatctx::config::LlmSettings;
use chatctx::service::{Options, Service};
use chatctx_core::{Settings, Timestamp};
use chatctx_store::{Opened, SqliteStore};
use serde_json::{Value, json};

use crate::http::{JsonBody, client, send_as, start_with};

const OPERATOR: &str = "operator-token-0123456789";
const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

fn discord_message(id: &str, channel: &str, text: &str, author: &str) -> Value {
    json!({"op": 0, "t": "MESSAGE_CREATE", "d": {"id": id, "channel_id": channel, "guild_id": "1", "type": 0,
        "timestamp": "2026-02-13T08:20:00.000000+00:00", "content": text,
        "author": {"id": author, "username": format!("user{author}")}, "mentions": []}})
}

#[test]
fn discord_and_slack_routes() {
    let tokens = format!(r#"["{OPERATOR}"]"#);
    let s =
        start_with("memory", &[("CHATCTX_SERVER__TOKENS", tokens.as_str()), ("CHATCTX_SLACK__SIGNING_SECRET", SECRET)]);
    let c = client();
    let post = |path: &str, token: Option<&str>, body: &Value| {
        send_as(c.post(format!("{}{path}", s.base)).body(body.to_string()), token)
    };
    // Discord: the bot's id makes its own message outbound.
    let r = post("/v1/discord/events?bot_user_id=42", Some(OPERATOR), &discord_message("10", "500", "hi <@42>", "7"));
    let report = r.json_value();
    assert_eq!(
        (report["accepted"].as_u64(), report["decisions"][0]["triggered_agent"].as_bool()),
        (Some(1), Some(true))
    );
    let mine = post("/v1/discord/events?bot_user_id=42", Some(OPERATOR), &discord_message("11", "500", "hello", "42"))
        .json_value();
    assert_eq!(mine["decisions"][0]["kind"], "outbound_agent");
    let typing = json!({"op": 0, "t": "TYPING_START", "d": {"channel_id": "500"}});
    assert_eq!(post("/v1/discord/events", Some(OPERATOR), &typing).json_value()["ignored"], 1);
    assert_eq!(post("/v1/discord/events", None, &typing).status(), 401, "a bearer token is needed");
    let h = send_as(c.get(format!("{}/v1/chats/500/history?channel=discord", s.base)), Some(OPERATOR)).json_value();
    assert_eq!(h["items"].as_array().unwrap().len(), 2, "{h}");

    // Slack: the URL verification handshake, signed as Slack signs it.
    let signed = |body: &Value, ts: i64| {
        let bytes = body.to_string();
        c.post(format!("{}/v1/slack/events", s.base))
            .header("x-slack-request-timestamp", ts.to_string())
            .header("x-slack-signature", chatctx::slack::sign(SECRET, ts, bytes.as_bytes()))
            .body(bytes)
            .send()
            .unwrap()
    };
    let now = chatctx::clock::now().unix();
    let challenge = json!({"token": "t", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"});
    assert_eq!(signed(&challenge, now).json_value()["challenge"], challenge["challenge"]);
    let message = json!({"type": "event_callback", "event": {"type": "message", "channel": "C1", "user": "U1",
        "text": "hello <@U0BOT>", "ts": "1770970800.000100"}, "authorizations": [{"user_id": "U0BOT", "is_bot": true}]});
    let report = signed(&message, now).json_value();
    assert_eq!(
        (report["accepted"].as_u64(), report["decisions"][0]["triggered_agent"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(signed(&message, now - 600).status(), 401, "a replayed old request");
    let forged = c
        .post(format!("{}/v1/slack/events", s.base))
        .header("x-slack-request-timestamp", now.to_string())
        .header("x-slack-signature", "v0=00")
        .body(message.to_string());
    assert_eq!(forged.send().unwrap().status(), 401, "a wrong signature");
    assert_eq!(post("/v1/slack/events", Some(OPERATOR), &message).status(), 200, "a bot may forward with its token");
    let deleted = json!({"type": "event_callback", "event": {"type": "message", "subtype": "message_deleted",
        "channel": "C1", "ts": "1770970900.000001", "deleted_ts": "1770970800.000100"}});
    assert_eq!(signed(&deleted, now).status(), 200);
    let h = send_as(c.get(format!("{}/v1/chats/C1/history?channel=slack", s.base)), Some(OPERATOR)).json_value();
    assert_eq!(h["items"].as_array().unwrap().len(), 0, "deleted: {h}");
}

/// A thread's messages are logged under the parent channel, so a restart files them the same way.
#[test]
fn discord_threads_are_topics_of_their_channel_across_restarts() {
    let dir = chatctx_store::testing::Scratch::new("platform-threads");
    let path = dir.file("chatctx.db");
    let open = || {
        let store = Opened::Local(Arc::new(SqliteStore::open(&path).unwrap()));
        Service::open_with(Settings::default(), LlmSettings::default(), store, Options::default()).unwrap().0
    };
    let now = Timestamp::from_unix(1_770_990_000).unwrap();
    let wrap = |payload: Value| json!({"type": "discord_event", "bot": {"user_id": "42"}, "payload": payload});
    let svc = open();
    let thread =
        json!({"op": 0, "t": "THREAD_CREATE", "d": {"id": "900", "parent_id": "500", "type": 11, "name": "t"}});
    let inputs = vec![
        wrap(discord_message("10", "500", "in the channel", "7")),
        wrap(thread),
        wrap(discord_message("11", "900", "in the thread", "8")),
    ];
    assert_eq!(svc.ingest(&inputs, now).unwrap().accepted, 3);
    drop(svc);
    let svc = open();
    let (in_thread, chats) = svc.read(|e| (e.history("discord", "500", Some("900")).unwrap(), e.chat_keys())).unwrap();
    assert_eq!(in_thread.iter().map(|i| i.text.as_str()).collect::<Vec<_>>(), ["in the thread"]);
    assert_eq!(chats, [("discord".to_owned(), "500".to_owned())], "the thread is no chat of its own");
    let later = vec![wrap(discord_message("12", "900", "after the restart", "8"))];
    svc.ingest(&later, now).unwrap();
    assert_eq!(svc.read(|e| e.history("discord", "500", Some("900")).unwrap().len()).unwrap(), 2);
}

/// Issue 28, point 2: what a platform sends past the limits of a stored event (a 70 KiB Telegram text, caption
/// or quote, a 70 KiB Discord message, 10,000 Discord mentions, a bulk delete of 1,001 ids, a 70 KiB Slack
/// text) is acknowledged cut or split, and the store it went to opens again with all of it.
#[test]
fn oversized_platform_payloads_are_fitted_and_load_again() {
    let dir = chatctx_store::testing::Scratch::new("platform-oversized");
    let path = dir.file("chatctx.db");
    let open = || {
        let store = Opened::Local(Arc::new(SqliteStore::open(&path).unwrap()));
        Service::open_with(Settings::default(), LlmSettings::default(), store, Options::default()).unwrap().0
    };
    let now = Timestamp::from_unix(1_770_990_000).unwrap();
    let long = "x".repeat(70 * 1024);
    let tg = |id: u32, message: Value| json!({"type": "telegram_update", "bot": {"user_id": "42"}, "update": {"update_id": id, "message": message}});
    let tg_msg = |id: u32| {
        json!({"message_id": id, "date": 1_770_990_000, "chat": {"id": -7, "type": "group"},
                                  "from": {"id": 5, "first_name": "Eve"}})
    };
    let mut text = tg_msg(1);
    text["text"] = json!(long);
    let mut caption = tg_msg(2);
    caption["photo"] = json!([{"file_id": "p", "file_unique_id": "u", "width": 1, "height": 1}]);
    caption["caption"] = json!(long);
    let mut quoted = tg_msg(3);
    quoted["text"] = json!("see above");
    quoted["quote"] = json!({"text": long, "position": 0});
    let discord = |payload: Value| json!({"type": "discord_event", "bot": {"user_id": "42"}, "payload": payload});
    let mentions: String = (0..10_000).map(|i| format!("<@{}> ", 1_000_000 + i)).collect();
    let ids: Vec<String> = (0..1_001).map(|i| (5_000 + i).to_string()).collect();
    let bulk = json!({"op": 0, "t": "MESSAGE_DELETE_BULK", "d": {"ids": ids, "channel_id": "500", "guild_id": "1"}});
    let slack = json!({"type": "slack_event", "bot": {"user_id": "U0BOT"}, "payload": {"type": "event_callback",
        "event": {"type": "message", "channel": "C1", "user": "U1", "text": long, "ts": "1770990000.000100"}}});
    let inputs = vec![
        tg(1, text),
        tg(2, caption),
        tg(3, quoted),
        discord(discord_message("10", "500", &long, "7")),
        discord(discord_message("11", "500", &mentions, "7")),
        discord(bulk),
        slack,
    ];
    let report = open().ingest(&inputs, now).unwrap();
    assert_eq!((report.accepted, report.rejected_count), (7, 0), "{report:?}");
    // The next start reads all of it back.
    let svc = open();
    let telegram = svc.read(|e| e.history("telegram", "-7", None).unwrap()).unwrap();
    assert_eq!(telegram.len(), 3);
    for item in &telegram {
        let longest = item.text.len().max(item.quote.as_ref().map_or(0, |q| q.text.len()));
        assert!(longest <= 64 * 1024 + 64, "{}", longest);
    }
    assert!(telegram[0].text.ends_with(chatctx_core::event::CUT_MARKER));
    let discord = svc.read(|e| e.history("discord", "500", None).unwrap()).unwrap();
    assert_eq!(discord.len(), 2);
    assert!(discord.iter().all(|i| i.text.len() <= 70 * 1024), "stored within the limit, mentions rendered");
    let slack = svc.read(|e| e.history("slack", "C1", None).unwrap()).unwrap();
    assert!(slack[0].text.ends_with(chatctx_core::event::CUT_MARKER));
}

/// Issue 28, point 3: with `[slack] signing_secret`, a server without tokens refuses an unsigned forged envelope
/// and an unsigned `url_verification` (401), and stores nothing; a signed one passes.
#[test]
fn a_signing_secret_protects_the_slack_route_on_a_server_without_tokens() {
    let s = start_with("memory", &[("CHATCTX_SLACK__SIGNING_SECRET", SECRET)]);
    let c = client();
    let forged = json!({"type": "event_callback", "event": {"type": "message", "channel": "C9", "user": "U1",
        "text": "forged", "ts": "1770970800.000100"}});
    let r = c.post(format!("{}/v1/slack/events", s.base)).body(forged.to_string()).send().unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.json_value()["code"], "unauthorized");
    let challenge = json!({"type": "url_verification", "challenge": "abc"});
    assert_eq!(c.post(format!("{}/v1/slack/events", s.base)).body(challenge.to_string()).send().unwrap().status(), 401);
    // A bearer header means nothing on a server without tokens: still refused.
    let r =
        send_as(c.post(format!("{}/v1/slack/events", s.base)).body(forged.to_string()), Some("made-up-token-123456"));
    assert_eq!(r.status(), 401);
    assert_eq!(c.get(format!("{}/v1/chats/C9/history?channel=slack", s.base)).send().unwrap().status(), 404);
    let ts = chatctx::clock::now().unix();
    let bytes = forged.to_string();
    let signed = c
        .post(format!("{}/v1/slack/events", s.base))
        .header("x-slack-request-timestamp", ts.to_string())
        .header("x-slack-signature", chatctx::slack::sign(SECRET, ts, bytes.as_bytes()))
        .body(bytes);
    assert_eq!(signed.send().unwrap().status(), 200);
}

/// Issue 28, point 7: names, labels, the chat's type, actions and emoji are bounded: refused past the bound on
/// `/v1/events`, cut (ending with `…`) when a platform sends them; an earlier log holding a longer one loads.
#[test]
fn names_and_labels_are_bounded() {
    let s = start_with("memory", &[]);
    let c = client();
    let post = |path: &str, body: &Value| send_as(c.post(format!("{}{path}", s.base)).body(body.to_string()), None);
    let huge = "n".repeat(2 * 1024 * 1024);
    let msg = |id: u32| {
        json!({"type": "message", "chat_id": "-8", "message_id": id.to_string(), "kind": "inbound_user",
               "sent_at": 1_770_000_000 + id, "sender": {"user_id": "1", "username": "ann"}, "text": "hi"})
    };
    let mut named = msg(1);
    named["sender"]["display_name"] = json!(huge);
    let mut labelled = msg(2);
    labelled["attachments"] = json!([{"kind": "media.image", "label": "l".repeat(5000)}]);
    let mut acting = msg(3);
    acting["actions"] = json!(vec!["a"; 65]);
    let mut typed = msg(4);
    typed["chat_type"] = json!("t".repeat(1025));
    for (what, body) in [("name", named), ("label", labelled), ("actions", acting), ("chat_type", typed)] {
        let r = post("/v1/events", &body);
        assert_eq!(r.status(), 400, "{what}");
        assert_eq!(r.json_value()["code"], "invalid_event", "{what}");
    }
    let mut fine = msg(5);
    fine["sender"]["display_name"] = json!("d".repeat(1024));
    assert_eq!(post("/v1/events", &fine).status(), 200);
    // From a platform: cut, not refused.
    let update = json!({"update_id": 1, "message": {"message_id": 6, "date": 1_770_000_006,
        "chat": {"id": -8, "type": "group"}, "from": {"id": 5, "first_name": huge}, "text": "hello"}});
    assert_eq!(post("/v1/telegram/updates", &update).status(), 200);
    let history = c.get(format!("{}/v1/chats/-8/history", s.base)).send().unwrap();
    let bytes = history.bytes().unwrap().len();
    assert!(bytes < 16 * 1024, "the history stays small: {bytes} bytes");
    // A log written before the bounds holds a longer name: it still decodes and applies.
    let mut old = msg(7);
    old["sender"]["display_name"] = json!("o".repeat(4096));
    let mut e = chatctx_core::Engine::new(Settings::default());
    e.apply(chatctx_core::Event::decode(&old).unwrap()).unwrap();
}

/// Issue 29, points 2 and 4: `POST /v1/slack/users` takes a `users.list` answer as Slack gives it; with a signing
/// secret it needs Slack's signature or a configured bearer token (on a server without tokens too), and a name it
/// teaches shows in every chat of the team, in items stored before it arrived.
#[test]
fn slack_users_name_the_people_of_every_chat_and_need_a_signature() {
    let s = start_with("memory", &[("CHATCTX_SLACK__SIGNING_SECRET", SECRET)]);
    let c = client();
    let signed = |path: &str, body: &Value| {
        let (ts, bytes) = (chatctx::clock::now().unix(), body.to_string());
        c.post(format!("{}{path}", s.base))
            .header("x-slack-request-timestamp", ts.to_string())
            .header("x-slack-signature", chatctx::slack::sign(SECRET, ts, bytes.as_bytes()))
            .body(bytes)
            .send()
            .unwrap()
    };
    let message = json!({"type": "event_callback", "team_id": "T1", "event": {"type": "message", "channel": "C1",
        "user": "U043H11ES4V", "text": "the deploy is done, <@U0BOB>", "ts": "1770970800.000100"}});
    assert_eq!(signed("/v1/slack/events", &message).status(), 200);
    let list = json!({"ok": true, "members": [
        {"id": "U043H11ES4V", "team_id": "T1", "name": "priya", "real_name": "Priya Raman",
         "profile": {"real_name": "Priya Raman", "display_name": "", "first_name": "Priya", "last_name": "Raman"}},
        {"id": "U0BOB", "team_id": "T1", "name": "bob", "profile": {"real_name": "Bob Brown", "display_name": "bob"}},
        {"id": "USLACKBOT", "team_id": "T1", "name": "slackbot", "is_bot": false, "profile": {"real_name": "Slackbot"}}],
        "response_metadata": {"next_cursor": ""}});
    let unsigned = c.post(format!("{}/v1/slack/users", s.base)).body(list.to_string()).send().unwrap();
    assert_eq!((unsigned.status().as_u16(), unsigned.json_value()["code"].as_str()), (401, Some("unauthorized")));
    let forged = c
        .post(format!("{}/v1/slack/users", s.base))
        .header("x-slack-request-timestamp", chatctx::clock::now().unix().to_string())
        .header("x-slack-signature", "v0=00")
        .body(list.to_string());
    assert_eq!(forged.send().unwrap().status(), 401);
    let h = c.get(format!("{}/v1/chats/C1/history?channel=slack", s.base)).send().unwrap().json_value();
    assert_eq!(h["items"][0]["sender"]["display_ref"], "[@U043H11ES4V](slack:@U043H11ES4V)", "nothing learned yet");
    let report = signed("/v1/slack/users", &list).json_value();
    assert_eq!(report["accepted"], 1, "{report}");
    let h = c.get(format!("{}/v1/chats/C1/history?channel=slack", s.base)).send().unwrap().json_value();
    assert_eq!(h["items"][0]["sender"]["display_ref"], "[Priya Raman](slack:@U043H11ES4V)", "{h}");
    assert_eq!(h["items"][0]["text"], "the deploy is done, [bob](slack:@U0BOB)");
    let failed = signed("/v1/slack/users", &json!({"ok": false, "error": "missing_scope"}));
    assert_eq!(failed.status(), 400);
    assert!(failed.json_value()["message"].as_str().unwrap().contains("missing_scope"));
}
