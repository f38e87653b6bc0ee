//! Telegram Desktop exports (`result.json`) → chatctx events, through the same mapping as Bot API updates.
//!
//! Each exported message is rewritten as the Bot API message it was (ids restored to Bot API form, text
//! segments turned back into text plus UTF-16 entities, media fields restored) and then mapped by
//! [`super::map_message`]. Service messages become `system` events. Both export shapes are read: one
//! chat (`{"name", "type", "id", "messages"}`) and a whole account (`{"chats": {"list": [...]}}`).
//!
//! Forum topics: the export has no thread ids; a message replying to a `topic_created` service message is
//! in that topic (and is not a reply), and a reply inherits its parent's topic.

use std::collections::HashMap;

use chatctx_core::Timestamp;
use chatctx_core::error::Error;
use chatctx_core::event::{Event, MessageEvent, MessageKind, Person};
use chatctx_core::json::id_of;
use chatctx_core::kinds::Origin;
use serde_json::{Map, Value, json};

use super::map_message;
use crate::Bot;
pub use crate::Imported;

/// Reads an export. `bot` marks the bot's own messages as `outbound_agent`.
pub fn import(root: &Value, bot: &Bot) -> Result<Imported, Error> {
    let root = root.as_object().ok_or_else(|| Error::invalid_event("the export must be a JSON object"))?;
    if bot.user_id.is_none() && bot.username.is_some() {
        return Err(Error::invalid_event(
            "Telegram Desktop exports carry no usernames, so the bot cannot be recognised by its username: \
             pass --bot-user-id (the number before the colon in the bot's token)",
        ));
    }
    let mut out = Imported::default();
    if root.contains_key("messages") {
        import_chat(root, bot, &mut out);
    } else if let Some(list) = root.get("chats").and_then(|c| c.get("list")).and_then(Value::as_array) {
        for chat in list.iter().filter_map(Value::as_object) {
            import_chat(chat, bot, &mut out);
        }
    } else {
        return Err(Error::invalid_event("not a Telegram Desktop export: expected `messages` or `chats.list`"));
    }
    // What an export holds is held to the limits of every stored event, as a platform route's input is.
    Ok(out.checked())
}

/// The Bot API id and type of an exported chat.
fn chat_identity(chat: &Map<String, Value>) -> Option<(String, &'static str)> {
    let raw = chat.get("id").and_then(id_of)?;
    let kind = chat.get("type").and_then(Value::as_str).unwrap_or("personal_chat");
    Some(match kind {
        "private_group" | "public_group" => (format!("-{raw}"), "group"),
        "private_supergroup" | "public_supergroup" => (format!("-100{raw}"), "supergroup"),
        "private_channel" | "public_channel" => (format!("-100{raw}"), "channel"),
        _ => (raw, "private"),
    })
}

/// `"user123"` → a Bot API user id; `"channel456"` / `"chat456"` → the chat's Bot API id.
fn peer(from_id: &str) -> Option<(String, bool)> {
    if let Some(id) = from_id.strip_prefix("user") {
        return Some((id.to_owned(), false));
    }
    if let Some(id) = from_id.strip_prefix("channel") {
        return Some((format!("-100{id}"), true));
    }
    from_id.strip_prefix("chat").map(|id| (format!("-{id}"), true))
}

// `json!` expands to an internal `unwrap` on serializing plain strings and numbers, which cannot fail.
#[allow(clippy::disallowed_methods)]
/// Text and UTF-16 entities from the export's `text_entities` (or `text`, a string or a list of segments).
fn text_and_entities(m: &Map<String, Value>) -> (String, Vec<Value>) {
    let segments: Vec<Value> = match (m.get("text_entities"), m.get("text")) {
        (Some(Value::Array(a)), _) => a.clone(),
        (_, Some(Value::Array(a))) => a.clone(),
        (_, Some(Value::String(s))) => vec![Value::String(s.clone())],
        _ => Vec::new(),
    };
    let mut text = String::new();
    let mut entities = Vec::new();
    let mut at16: u64 = 0;
    for seg in segments {
        let (kind, piece, extra) = match &seg {
            Value::String(s) => ("plain", s.clone(), None),
            Value::Object(o) => (
                match o.get("type").and_then(Value::as_str) {
                    Some("mention") => "mention",
                    Some("mention_name") => "text_mention",
                    Some("link") => "url",
                    Some("text_link") => "text_link",
                    Some("plain") | None => "plain",
                    Some(_) => "other",
                },
                o.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
                Some(o),
            ),
            _ => continue,
        };
        let len16 = piece.encode_utf16().count() as u64;
        if kind != "plain" && kind != "other" && len16 > 0 {
            let mut e = json!({"type": kind, "offset": at16, "length": len16});
            if let Some(o) = extra {
                if kind == "text_link" {
                    e["url"] = o.get("href").cloned().unwrap_or(Value::Null);
                }
                if kind == "text_mention" {
                    e["user"] = json!({"id": o.get("user_id").cloned().unwrap_or(Value::Null), "first_name": piece});
                }
            }
            entities.push(e);
        }
        text.push_str(&piece);
        at16 += len16;
    }
    (text, entities)
}

fn date_of(m: &Map<String, Value>) -> Option<i64> {
    if let Some(t) = m.get("date_unixtime") {
        return t.as_str().and_then(|s| s.parse().ok()).or_else(|| t.as_i64());
    }
    // Older exports carry only local time without an offset; it is read as UTC.
    let d = m.get("date").and_then(Value::as_str)?;
    Timestamp::parse_rfc3339(&format!("{d}Z")).ok().map(Timestamp::unix)
}

fn service_text(m: &Map<String, Value>, earlier: &HashMap<String, (String, String)>) -> String {
    let action = m.get("action").and_then(Value::as_str).unwrap_or("service");
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
    let members: Vec<&str> = m
        .get("members")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let actor = s("actor");
    // Joining or leaving oneself reads as such; adding or removing someone else names them.
    let only_actor = !actor.is_empty() && members == [actor];
    match action {
        "topic_created" => format!("created the topic “{}”", s("title")),
        "topic_edit" | "topic_edited" => format!("renamed the topic to “{}”", s("new_title").max(s("title"))),
        "pin_message" => {
            let id = m.get("message_id").and_then(id_of).unwrap_or_default();
            match earlier.get(&id) {
                Some((author, words)) if !words.is_empty() => format!("pinned {author}'s message “{words}”"),
                Some((author, _)) => format!("pinned a message by {author}"),
                None => "pinned a message".to_owned(),
            }
        }
        "invite_members" if only_actor => "joined the chat".to_owned(),
        "invite_members" => format!("added {}", members.join(", ")),
        "remove_members" if only_actor => "left the chat".to_owned(),
        "remove_members" => format!("removed {}", members.join(", ")),
        "join_group_by_link" => "joined the chat by invite link".to_owned(),
        "join_group_by_request" => "joined the chat after a request".to_owned(),
        "edit_group_title" => format!("changed the chat title to “{}”", s("title")),
        "edit_group_photo" => "changed the chat photo".to_owned(),
        "delete_group_photo" => "removed the chat photo".to_owned(),
        "create_group" | "create_channel" => format!("created “{}”", s("title")),
        "migrate_to_supergroup" | "migrate_from_group" => "moved the group to a supergroup".to_owned(),
        "edit_chat_theme" => "changed the chat theme".to_owned(),
        "set_chat_wallpaper" | "set_same_chat_wallpaper" => "changed the chat wallpaper".to_owned(),
        "phone_call" => "made a call".to_owned(),
        "group_call" => "started a voice chat".to_owned(),
        "group_call_scheduled" => "scheduled a voice chat".to_owned(),
        "invite_to_group_call" => format!("invited {} to the voice chat", members.join(", ")),
        "set_messages_ttl" => "changed the auto-delete timer".to_owned(),
        "clear_history" => "cleared the history".to_owned(),
        "score_in_game" => "scored in a game".to_owned(),
        "send_payment" => "made a payment".to_owned(),
        "send_premium_gift" | "gift_code_prize" => "sent a Telegram Premium gift".to_owned(),
        "boost_apply" => "boosted the chat".to_owned(),
        "giveaway_launch" => "started a giveaway".to_owned(),
        "giveaway_results" => "announced the giveaway winners".to_owned(),
        "web_app_data_sent" => "sent data from a Web App".to_owned(),
        "attach_menu_bot_allowed" | "allow_sending_messages" => "allowed the bot to write".to_owned(),
        "requested_peer" => "shared a chat with the bot".to_owned(),
        "suggest_profile_photo" => "suggested a profile photo".to_owned(),
        "paid_messages_price_change" => "changed the price of messages".to_owned(),
        "paid_messages_refunded" => "was refunded for paid messages".to_owned(),
        "todo_completions" => "marked checklist tasks".to_owned(),
        "todo_append_tasks" => "added checklist tasks".to_owned(),
        other => other.replace('_', " "),
    }
}

fn import_chat(chat: &Map<String, Value>, bot: &Bot, out: &mut Imported) {
    let Some((chat_id, chat_type)) = chat_identity(chat) else {
        out.warnings.push("a chat without an id was skipped".to_owned());
        out.skip("a chat without an id");
        return;
    };
    let exported =
        Chat { id: &chat_id, kind: chat_type, title: chat.get("name").and_then(Value::as_str).unwrap_or_default() };
    let mut topics: HashMap<String, Option<String>> = HashMap::new();
    // Each message's author and first words, for a later pin to name it.
    let mut earlier: HashMap<String, (String, String)> = HashMap::new();
    let mut empty = 0;
    let messages = chat.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (i, m) in messages.iter().enumerate() {
        let Some(m) = m.as_object() else { continue };
        let (Some(id), Some(date)) = (m.get("id").and_then(id_of), date_of(m)) else {
            out.warnings.push(format!("chat {chat_id}: message #{i} has no id or date; skipped"));
            out.skip("a message without an id or date");
            continue;
        };
        let is_service = m.get("type").and_then(Value::as_str) == Some("service");
        let reply_to = m.get("reply_to_message_id").and_then(id_of);
        // Topic: a reply to a topic's creation message is in that topic; other replies inherit the parent's.
        let (topic, reply_to) = match reply_to {
            Some(r) => match topics.get(&r) {
                Some(Some(t)) if *t == r => (Some(r), None),
                Some(t) => (t.clone(), Some(r)),
                None => (None, Some(r)),
            },
            None => (None, None),
        };
        let is_topic_start = is_service && m.get("action").and_then(Value::as_str) == Some("topic_created");
        let topic = if is_topic_start { Some(id.clone()) } else { topic };
        topics.insert(id.clone(), topic.clone());
        let placed = Placed { id, date, topic, reply_to };
        if is_service {
            out.events.push(service_event(m, &exported, placed, &earlier));
            continue;
        }
        let (author, _) = exported_author(m, "from");
        let (words, _) = text_and_entities(m);
        earlier.insert(
            placed.id.clone(),
            (author.unwrap_or("someone").to_owned(), chatctx_core::render::excerpt(&words, 60)),
        );
        let Value::Object(msg) = as_bot_api(m, &exported, placed) else { continue };
        let mut warnings = Vec::new();
        match map_message(&msg, &format!("messages[{i}]"), bot, None, &mut warnings) {
            // A message the export keeps nothing of (an unsupported kind, an emptied one) says nothing: it is
            // not recorded as an empty turn of anyone's.
            Ok(e) if e.text == super::UNSHOWN => empty += 1,
            Ok(e) => out.events.push(Event::Message(e)),
            Err(e) => {
                out.warnings.push(format!("chat {chat_id}: message #{i} skipped: {}", e.message));
                out.skip("a message that does not map");
            }
        }
        out.warnings.extend(warnings.into_iter().map(|w| format!("chat {chat_id}: {w}")));
    }
    if empty > 0 {
        out.warnings
            .push(format!("chat {chat_id}: {empty} messages with no text or content the export keeps were skipped"));
    }
}

/// The exported chat, as Bot API messages name it.
struct Chat<'a> {
    id: &'a str,
    kind: &'a str,
    title: &'a str,
}

/// Where an exported message sits: its id and time, its topic and the message it replies to.
struct Placed {
    id: String,
    date: i64,
    topic: Option<String>,
    reply_to: Option<String>,
}

/// The author of an exported message: its name and its id, and whether that id is a chat's.
fn exported_author<'m>(m: &'m Map<String, Value>, key: &str) -> (Option<&'m str>, Option<(String, bool)>) {
    let name = m.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    (name, m.get(&format!("{key}_id")).and_then(Value::as_str).and_then(peer))
}

/// A service message as a `system` event, spoken by its actor.
fn service_event(
    m: &Map<String, Value>,
    chat: &Chat<'_>,
    at: Placed,
    earlier: &HashMap<String, (String, String)>,
) -> Event {
    let (name, id) = exported_author(m, "actor");
    Event::Message(MessageEvent {
        channel: "telegram".to_owned(),
        chat_id: chat.id.to_owned(),
        workspace_id: None,
        chat_type: Some(chat.kind.to_owned()),
        topic_id: at.topic,
        message_id: at.id,
        reply_to_message_id: None,
        kind: MessageKind::System,
        sent_at: Timestamp::from_unix(at.date).unwrap_or_default(),
        sender: id.map(|(uid, _)| Person { user_id: uid, display_name: name.map(str::to_owned), ..Person::default() }),
        text: service_text(m, earlier),
        entities: Vec::new(),
        quote: None,
        attachments: Vec::new(),
        origin: Origin::Interactive,
        triggered_agent: false,
        actions: Vec::new(),
        forwarded_from: None,
    })
}

/// An exported message rewritten as the Bot API message it was: ids in Bot API form, text segments back to
/// text plus UTF-16 entities, media fields restored.
// `json!` expands to an internal `unwrap` on serializing plain strings and numbers, which cannot fail.
#[allow(clippy::disallowed_methods)]
fn as_bot_api(m: &Map<String, Value>, chat: &Chat<'_>, at: Placed) -> Value {
    let (text, entities) = text_and_entities(m);
    let mut msg = json!({"message_id": at.id, "date": at.date, "text": text, "entities": entities,
                         "chat": {"id": chat.id, "type": chat.kind, "title": chat.title}});
    match exported_author(m, "from") {
        (name, Some((uid, true))) => msg["sender_chat"] = json!({"id": uid, "title": name}),
        (name, Some((uid, false))) => msg["from"] = json!({"id": uid, "first_name": name, "is_bot": false}),
        (_, None) => {}
    }
    if let Some(t) = &at.topic {
        msg["is_topic_message"] = json!(true);
        msg["message_thread_id"] = json!(t);
    }
    if let Some(r) = &at.reply_to {
        msg["reply_to_message"] = json!({"message_id": r});
    }
    if let Some(f) = m.get("forwarded_from").and_then(Value::as_str) {
        msg["forward_sender_name"] = json!(f);
    }
    let file = json!({"file_name": m.get("file_name").cloned().unwrap_or(Value::Null),
                      "mime_type": m.get("mime_type").cloned().unwrap_or(Value::Null)});
    if m.contains_key("photo") {
        msg["photo"] = json!([{}]);
    }
    match m.get("media_type").and_then(Value::as_str) {
        Some("sticker") => msg["sticker"] = json!({"emoji": m.get("sticker_emoji")}),
        Some("animation") => msg["animation"] = file,
        Some("video_file") => msg["video"] = file,
        Some("video_message") => msg["video_note"] = json!({}),
        Some("voice_message") => msg["voice"] = json!({}),
        Some("audio_file") => {
            msg["audio"] =
                json!({"title": m.get("title"), "performer": m.get("performer"), "file_name": m.get("file_name")})
        }
        _ if m.contains_key("file") => msg["document"] = file,
        _ => {}
    }
    if let Some(p) = m.get("poll").and_then(Value::as_object) {
        msg["poll"] = json!({"question": p.get("question")});
    }
    msg
}
