//! DiscordChatExporter JSON exports (one channel per file: `guild`, `channel`, `messages[]`, as its JSON format
//! writes them, and as chat-analytics and DiscordChatExporter-frontend read them).
//!
//! The chat is `channel.id`, in the guild's workspace (`guild.id`; `"0"` is DiscordChatExporter's "Direct
//! Messages" pseudo-guild: no workspace). A thread's export (`channel.type` `Guild…Thread`) names its parent
//! channel as its `categoryId`: its messages become a topic of the parent (a `thread` event first). Authors and
//! mentioned users are people of the guild (nickname, else name). The content shows mentions as `@name`, which
//! become the person's reference; `reference` is the reply; attachments, stickers and embeds' links are
//! objects; system messages (`GuildMemberJoin`, `ThreadCreated`, `ChannelPinnedMessage`, …) are notes;
//! `reactions` with their `users` become reactions dated with the message.

use chatctx_core::event::{
    Attachment, Direction, Event, MessageEvent, Person, PersonEvent, ReactionEvent, ThreadEvent,
};
use chatctx_core::json::{Fields, object};
use chatctx_core::kinds::{ObjectKind, Origin};
use chatctx_core::{Error, ErrorCode};
use serde_json::{Map, Value};

use super::{CHANNEL, system_text};
use crate::text::Built;
use crate::{Bot, Imported, attachment};

const EV: ErrorCode = ErrorCode::InvalidEvent;

/// Whether `v` looks like a DiscordChatExporter export (its `guild`, `channel` and `messages`).
pub fn is_export(v: &Value) -> bool {
    v.get("guild").is_some_and(Value::is_object)
        && v.get("channel").is_some_and(Value::is_object)
        && v.get("messages").is_some_and(Value::is_array)
}

/// DiscordChatExporter's message type names, as Discord's numbers (docs of the Message resource).
fn type_number(name: &str) -> Option<u64> {
    Some(match name {
        "Default" => 0,
        "RecipientAdd" => 1,
        "RecipientRemove" => 2,
        "Call" => 3,
        "ChannelNameChange" => 4,
        "ChannelIconChange" => 5,
        "ChannelPinnedMessage" => 6,
        "GuildMemberJoin" => 7,
        "ThreadCreated" => 18,
        "Reply" => 19,
        "ChatInputCommand" | "ApplicationCommand" => 20,
        "ThreadStarterMessage" => 21,
        "ContextMenuCommand" => 23,
        _ => return None,
    })
}

/// Reads one channel's export. `bot` marks the bot's own messages `outbound_agent`.
pub fn import(v: &Value, bot: &Bot) -> Result<Imported, Error> {
    if !is_export(v) {
        return Err(Error::invalid_event(
            "not a DiscordChatExporter export: expected `guild`, `channel` and `messages`",
        ));
    }
    let f = Fields::new(object(v, "the export", EV)?, "", EV);
    let guild = Fields::new(f.obj("guild")?.unwrap_or(&Map::new()), "guild", EV).id("id")?.filter(|g| g != "0");
    let channel = f.obj("channel")?.ok_or_else(|| f.err("channel", "is required"))?;
    let c = Fields::new(channel, "channel", EV);
    let chat = c.req_id("id")?;
    let kind = c.str("type")?.unwrap_or_default();
    let mut out = Imported::default();
    // A thread's export: its messages are a topic of the parent channel (its `categoryId`); its name is the
    // topic's title. A channel's name is its chat's title.
    let parent = c.id("categoryId")?.filter(|p| kind.contains("Thread") && *p != chat && p != "0");
    let title = match &parent {
        Some(p) => crate::title(CHANNEL, p.clone(), Some(chat.clone()), c.get("name")),
        None => crate::title(CHANNEL, chat.clone(), None, c.get("name")),
    };
    if let Some(parent) = parent {
        out.events.push(Event::Thread(ThreadEvent {
            channel: CHANNEL.to_owned(),
            chat_id: parent,
            topic_id: chat.clone(),
        }));
    }
    let chat_type = if guild.is_some() { "guild" } else { "dm" };
    for (i, m) in f.array("messages")?.iter().enumerate() {
        let path = format!("messages[{i}]");
        match message(m, &path, (&chat, chat_type, guild.as_deref()), bot, &mut out) {
            Ok(Some((message, people))) => {
                out.events.extend(people.into_iter().map(Event::Person));
                let reactions = reactions(m, &message, bot);
                out.events.push(Event::Message(message));
                out.events.extend(reactions);
            }
            Ok(None) => {}
            Err(e) => {
                out.warnings.push(format!("{path} skipped: {}", e.message));
                out.skip("a malformed message");
            }
        }
    }
    out.events.extend(title);
    Ok(out.checked())
}

/// An exported user (`author`, a `mentions` entry) as a person: nickname, else name.
fn person(u: &Fields<'_>) -> Result<Person, Error> {
    let name = u.text("name")?;
    Ok(Person {
        user_id: u.req_id("id")?,
        display_name: u.text("nickname")?,
        username: name,
        is_bot: u.bool("isBot")? == Some(true),
        ..Person::default()
    })
}

type Read = Option<(MessageEvent, Vec<PersonEvent>)>;

/// One exported message and the people it names; `None` for one of a type left out (counted).
fn message(
    v: &Value,
    path: &str,
    (chat, chat_type, guild): (&str, &str, Option<&str>),
    bot: &Bot,
    out: &mut Imported,
) -> Result<Read, Error> {
    let m = Fields::new(object(v, path, EV)?, path, EV);
    let type_name = m.str("type")?.unwrap_or("Default");
    let Some(kind_no) = type_number(type_name) else {
        out.skip(format!("message type {type_name}"));
        return Ok(None);
    };
    let author_path = format!("{path}.author");
    let author = m.obj("author")?.ok_or_else(|| m.err("author", "is required"))?;
    let sender = person(&Fields::new(author, &author_path, EV))?;
    let mut mentioned = Vec::new();
    for (i, u) in m.array("mentions")?.iter().enumerate() {
        let p = format!("{path}.mentions[{i}]");
        mentioned.push(person(&Fields::new(object(u, &p, EV)?, &p, EV))?);
    }
    let content = m.str("content")?.unwrap_or_default();
    let spoken = matches!(kind_no, 0 | 19 | 20 | 23);
    let mut built = Built::default();
    if spoken {
        render(content, &mentioned, &mut built);
    } else {
        built.push(&system_text(kind_no, content));
    }
    let attachments = files(&m, path, &mut built)?;
    let is_bot = bot.is(&sender.user_id);
    let reply_to = match m.obj("reference")? {
        Some(r) if spoken => {
            let r = Fields::new(r, "reference", EV);
            r.id("messageId")?.filter(|_| r.id("channelId").ok().flatten().is_none_or(|c| c == chat))
        }
        _ => None,
    };
    let addressed = bot.user_id.as_deref().is_some_and(|b| mentioned.iter().any(|p| p.user_id == b));
    let people: Vec<PersonEvent> = match guild {
        Some(g) => std::iter::once(&sender)
            .chain(&mentioned)
            .map(|p| PersonEvent {
                channel: CHANNEL.to_owned(),
                workspace_id: Some(g.to_owned()),
                chat_id: None,
                person: p.clone(),
            })
            .collect(),
        None => Vec::new(),
    };
    let message = MessageEvent {
        channel: CHANNEL.to_owned(),
        chat_id: chat.to_owned(),
        workspace_id: guild.map(str::to_owned),
        chat_type: Some(chat_type.to_owned()),
        topic_id: None,
        message_id: m.req_id("id")?,
        reply_to_message_id: reply_to,
        kind: crate::message_kind(is_bot, spoken),
        sent_at: m.req_time("timestamp")?,
        sender: Some(sender),
        text: built.text,
        entities: if spoken { built.entities } else { Vec::new() },
        quote: None,
        attachments,
        origin: Origin::Interactive,
        triggered_agent: !is_bot && spoken && (addressed || chat_type == "dm"),
        actions: Vec::new(),
        forwarded_from: None,
    };
    Ok(Some((message, people)))
}

/// The content, with each `@name` / `@nickname` of a mentioned user a mention of them, and bare URLs links.
fn render(content: &str, mentioned: &[Person], out: &mut Built) {
    let mut rest = content;
    while let Some(at) = rest.find('@') {
        let after = &rest[at + 1..];
        // The longest name that follows, so `@Ann Lee` wins over `@Ann`.
        let hit = mentioned
            .iter()
            .flat_map(|p| p.display_name.iter().chain(&p.username).map(move |n| (n, p)))
            .filter(|(n, _)| after.starts_with(n.as_str()))
            .max_by_key(|(n, _)| n.len());
        match hit {
            Some((name, p)) => {
                out.push_with_urls(&rest[..at]);
                out.mention(&format!("@{name}"), p.clone());
                rest = &after[name.len()..];
            }
            None => {
                out.push_with_urls(&rest[..=at]);
                rest = after;
            }
        }
    }
    out.push_with_urls(rest);
}

/// Attachments by file name, stickers, and embeds' links the text does not show.
fn files(m: &Fields<'_>, path: &str, built: &mut Built) -> Result<Vec<Attachment>, Error> {
    let mut out = Vec::new();
    for (i, a) in m.array("attachments")?.iter().enumerate() {
        let p = format!("{path}.attachments[{i}]");
        let name = Fields::new(object(a, &p, EV)?, &p, EV).str("fileName")?.map(str::to_owned);
        out.push(attachment(kind_of(name.as_deref().unwrap_or_default()), name));
    }
    for s in m.array("stickers")? {
        let name = s.get("name").and_then(Value::as_str).unwrap_or("sticker");
        out.push(attachment(ObjectKind::MediaImage, Some(format!("sticker {name}"))));
    }
    for e in m.array("embeds")? {
        if let Some(url) = e.get("url").and_then(Value::as_str).filter(|u| !built.text.contains(*u)) {
            built.push(if built.text.is_empty() { "" } else { " " });
            built.link(url, url);
        }
    }
    Ok(out)
}

/// A file's kind by its extension (an export carries no content type).
fn kind_of(file_name: &str) -> ObjectKind {
    let ext = file_name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "png" | "jpg" | "jpeg" | "gif" | "webp" | "bmp" | "heic" => ObjectKind::MediaImage,
        "mp4" | "mov" | "webm" | "mkv" | "avi" => ObjectKind::MediaVideo,
        "mp3" | "ogg" | "oga" | "wav" | "m4a" | "flac" | "opus" => ObjectKind::MediaVoice,
        "pdf" => ObjectKind::MediaPdf,
        _ => ObjectKind::MediaDocument,
    }
}

/// `reactions[]` with their `users`: one reaction per user, dated with the message (an export without users
/// has only counts, which say nothing of who).
fn reactions(v: &Value, message: &MessageEvent, bot: &Bot) -> Vec<Event> {
    let mut out = Vec::new();
    for r in v.get("reactions").and_then(Value::as_array).into_iter().flatten() {
        let emoji = r.get("emoji").and_then(|e| e.get("name")).and_then(Value::as_str).unwrap_or("an emoji");
        for u in r.get("users").and_then(Value::as_array).into_iter().flatten() {
            let Some(user) = u.as_object().map(|o| Fields::new(o, "user", EV)) else { continue };
            let Ok(sender) = person(&user) else { continue };
            out.push(Event::Reaction(ReactionEvent {
                channel: CHANNEL.to_owned(),
                chat_id: message.chat_id.clone(),
                topic_id: None,
                message_id: message.message_id.clone(),
                direction: if bot.is(&sender.user_id) { Direction::Outbound } else { Direction::Inbound },
                sender: Some(sender),
                emoji: vec![emoji.to_owned()],
                sent_at: message.sent_at,
            }));
        }
    }
    out
}
