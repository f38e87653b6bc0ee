//! Discord Gateway dispatches (docs/protocol.md §3.9), as a bot receives them: discord.py's raw socket events,
//! discord.js's `raw` event, or any Gateway client. `{"op": 0, "t": "MESSAGE_CREATE", "d": {…}}`, also
//! without `op`.
//!
//! The chat is the channel (`channel_id`); a thread is a topic of its parent channel, learned from
//! `THREAD_CREATE` / `THREAD_UPDATE` / `THREAD_LIST_SYNC` and from a message that started one (a `thread`
//! event each), after which the engine files the thread's messages under the parent. Every chat of a guild
//! belongs to it (`workspace_id`); members (`GUILD_MEMBER_*`, a message's author) are people of its directory.

use chatctx_core::event::{
    Attachment, DeleteEvent, Direction, Event, MessageEvent, Person, PersonEvent, ReactionEvent, ThreadEvent,
};
use chatctx_core::json::{Fields, id_of, object};
use chatctx_core::kinds::{ObjectKind, Origin};
use chatctx_core::{Error, ErrorCode, Timestamp};
use serde_json::{Map, Value};

pub mod export;

use crate::text::Built;
use crate::{Bot, Mapped, attachment, file_kind};

/// The channel name Discord events get.
pub const CHANNEL: &str = "discord";

const EV: ErrorCode = ErrorCode::InvalidEvent;

/// Dispatch types that are mapped.
pub const KNOWN: &[&str] = &[
    "MESSAGE_CREATE",
    "MESSAGE_UPDATE",
    "MESSAGE_DELETE",
    "MESSAGE_DELETE_BULK",
    "MESSAGE_REACTION_ADD",
    "MESSAGE_REACTION_REMOVE",
    "THREAD_CREATE",
    "THREAD_UPDATE",
    "THREAD_LIST_SYNC",
    "CHANNEL_CREATE",
    "CHANNEL_UPDATE",
    "GUILD_MEMBER_ADD",
    "GUILD_MEMBER_UPDATE",
    "GUILD_MEMBERS_CHUNK",
    "USER_UPDATE",
];

/// Message types that are a person (or the bot) speaking: default, reply, slash command, context menu
/// command. Every other type is a system note.
const SPOKEN: &[u64] = &[0, 19, 20, 23];

/// How many mentions of people a message does not describe become references (the rest stay `@user ID`).
const MAX_ID_MENTIONS: usize = 100;

/// The `IS_VOICE_MESSAGE` message flag.
const VOICE_FLAG: u64 = 1 << 13;

/// Discord, as a [`crate::Platform`]: a replay line carries a dispatch as `{"type": "discord_event", "bot": {…},
/// "payload": {…}}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Discord;

impl crate::Platform for Discord {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    fn wrapped_as(&self) -> (&'static str, &'static str) {
        ("discord_event", "payload")
    }

    /// Maps one dispatch; `received_at` dates what carries no time of its own (reactions, deletions).
    fn map(&self, payload: &Value, bot: &Bot, received_at: Timestamp) -> Result<Mapped, Error> {
        map_dispatch(payload, bot, received_at)
    }
}

/// Maps one Gateway dispatch.
pub fn map_dispatch(payload: &Value, bot: &Bot, received_at: Timestamp) -> Result<Mapped, Error> {
    let f = Fields::new(object(payload, "field `payload`", EV)?, "payload", EV);
    let mut out = Mapped::default();
    if f.get("op").is_some_and(|op| op.as_u64() != Some(0)) {
        // Not a dispatch (a heartbeat, a hello): nothing of the conversation.
        out.ignored.push("op".to_owned());
        return Ok(out);
    }
    let t = f.str("t")?.ok_or_else(|| f.err("t", "is required (the dispatch type, e.g. MESSAGE_CREATE)"))?;
    if !KNOWN.contains(&t) {
        out.ignored.push(t.to_owned());
        return Ok(out);
    }
    let raw = f.obj("d")?.ok_or_else(|| f.err("d", "is required"))?;
    let d = Fields::new(raw, "payload.d", EV);
    match t {
        "MESSAGE_CREATE" | "MESSAGE_UPDATE" => {
            // An update may carry only the changed fields (an embed resolved): without an author and a time it
            // cannot stand in for the message, and the stored copy stays.
            if t == "MESSAGE_UPDATE" && (d.get("author").is_none() || d.get("timestamp").is_none()) {
                out.ignored.push("MESSAGE_UPDATE (partial)".to_owned());
                return Ok(out);
            }
            if let Some(thread) = d.obj("thread")? {
                thread_event(&Fields::new(thread, "payload.d.thread", EV), &mut out)?;
            }
            let message = message(raw, bot, &mut out.warnings)?;
            // The author, as the guild knows them, for the guild's people directory.
            if let (Some(guild), Some(sender)) = (&message.workspace_id, &message.sender) {
                out.events.push(person_event(Some(guild.clone()), sender.clone()));
            }
            out.events.push(Event::Message(message));
        }
        "GUILD_MEMBER_ADD" | "GUILD_MEMBER_UPDATE" => {
            let guild = d.req_id("guild_id")?;
            out.events.push(member(raw, "payload.d", Some(guild))?);
        }
        "GUILD_MEMBERS_CHUNK" => {
            let guild = d.req_id("guild_id")?;
            for (i, m) in d.array("members")?.iter().enumerate() {
                let path = format!("payload.d.members[{i}]");
                out.events.push(member(object(m, &path, EV)?, &path, Some(guild.clone()))?);
            }
        }
        // The bot's own account changed: known in every guild (the channel's own directory).
        "USER_UPDATE" => out.events.push(person_event(None, person(&d, None)?)),
        "MESSAGE_DELETE" => out.events.push(delete(&d, vec![d.req_id("id")?], received_at)?),
        "MESSAGE_DELETE_BULK" => {
            let ids = d
                .array("ids")?
                .iter()
                .map(|v| id_of(v).ok_or_else(|| d.err("ids", "expected message ids")))
                .collect::<Result<Vec<_>, _>>()?;
            if !ids.is_empty() {
                out.events.push(delete(&d, ids, received_at)?);
            }
        }
        "MESSAGE_REACTION_ADD" | "MESSAGE_REACTION_REMOVE" => {
            out.events.push(reaction(&d, bot, t == "MESSAGE_REACTION_ADD", received_at)?);
        }
        "THREAD_CREATE" | "THREAD_UPDATE" => thread_event(&d, &mut out)?,
        // A channel's name is its chat's title (a thread's, its topic's). GUILD_CREATE's channel list is not
        // read: joining a guild would make a chat of every channel, messages or not.
        "CHANNEL_CREATE" | "CHANNEL_UPDATE" if d.id("parent_id")?.is_some() && is_thread(&d) => {
            thread_event(&d, &mut out)?;
        }
        // A category (type 4) holds no messages: no chat of it.
        "CHANNEL_CREATE" | "CHANNEL_UPDATE" if d.get("type").and_then(Value::as_u64) == Some(4) => {}
        "CHANNEL_CREATE" | "CHANNEL_UPDATE" => {
            out.events.extend(crate::title(CHANNEL, d.req_id("id")?, None, d.get("name")))
        }
        _ => {
            // THREAD_LIST_SYNC: the threads of the channels the bot gained access to.
            for (i, th) in d.array("threads")?.iter().enumerate() {
                let path = format!("payload.d.threads[{i}]");
                thread_event(&Fields::new(object(th, &path, EV)?, &path, EV), &mut out)?;
            }
        }
    }
    Ok(out)
}

fn delete(d: &Fields<'_>, message_ids: Vec<String>, at: Timestamp) -> Result<Event, Error> {
    Ok(Event::Delete(DeleteEvent {
        channel: CHANNEL.to_owned(),
        chat_id: d.req_id("channel_id")?,
        message_ids,
        at: Some(at),
    }))
}

/// Whether a channel is a thread (`type` 10, 11, 12; a thread payload without a type is taken as one).
fn is_thread(c: &Fields<'_>) -> bool {
    matches!(c.get("type").and_then(Value::as_u64), Some(10..=12) | None)
}

/// A thread channel (with a `parent_id`) as a `thread` event, and its name as its topic's title; other channels
/// are not.
fn thread_event(c: &Fields<'_>, out: &mut Mapped) -> Result<(), Error> {
    let (Some(id), Some(parent)) = (c.id("id")?, c.id("parent_id")?) else { return Ok(()) };
    if is_thread(c) && id != parent {
        let name = crate::title(CHANNEL, parent.clone(), Some(id.clone()), c.get("name"));
        out.events.push(Event::Thread(ThreadEvent { channel: CHANNEL.to_owned(), chat_id: parent, topic_id: id }));
        out.events.extend(name);
    }
    Ok(())
}

/// A `person` of `guild` (none: the channel's own directory, which every guild's chats fall back to).
fn person_event(guild: Option<String>, person: Person) -> Event {
    Event::Person(PersonEvent { channel: CHANNEL.to_owned(), workspace_id: guild, chat_id: None, person })
}

/// A guild member record (`user` inside, `nick` beside it) as a person of `guild`.
fn member(m: &Map<String, Value>, path: &str, guild: Option<String>) -> Result<Event, Error> {
    let f = Fields::new(m, path, EV);
    let user_path = format!("{path}.user");
    let user = f.obj("user")?.ok_or_else(|| f.err("user", "is required"))?;
    Ok(person_event(guild, person(&Fields::new(user, &user_path, EV), Some(m))?))
}

/// A Discord user (with their guild member record, if given) as a person.
fn person(u: &Fields<'_>, member: Option<&Map<String, Value>>) -> Result<Person, Error> {
    let nick = match member {
        Some(m) => Fields::new(m, "member", EV).text("nick")?,
        None => None,
    };
    Ok(Person {
        user_id: u.req_id("id")?,
        username: u.text("username")?,
        display_name: nick.or(u.text("global_name")?),
        first_name: None,
        last_name: None,
        is_bot: u.bool("bot")? == Some(true),
    })
}

fn message(raw: &Map<String, Value>, bot: &Bot, warnings: &mut Vec<String>) -> Result<MessageEvent, Error> {
    let d = &Fields::new(raw, "payload.d", EV);
    let author = d.obj("author")?.ok_or_else(|| d.err("author", "is required"))?;
    let sender = person(&Fields::new(author, "payload.d.author", EV), d.obj("member")?)?;
    let message_id = d.req_id("id")?;
    let kind_no = d.get("type").and_then(Value::as_u64).unwrap_or(0);
    let is_bot = bot.is(&sender.user_id);
    let reference = d.obj("message_reference")?.map(|r| Fields::new(r, "payload.d.message_reference", EV));
    // A forward (`message_reference.type` 1) carries the forwarded message in `message_snapshots`.
    let forwarded = reference.as_ref().is_some_and(|r| r.get("type").and_then(Value::as_u64) == Some(1));
    let snapshot = match d.array("message_snapshots")?.first() {
        Some(s) if forwarded => s.get("message").and_then(Value::as_object),
        _ => None,
    };
    let body = match snapshot {
        Some(m) => Fields::new(m, "payload.d.message_snapshots[0].message", EV),
        None => Fields::new(raw, "payload.d", EV),
    };
    let mentions = mentioned(d)?;
    let content = body.str("content")?.unwrap_or_default();
    let mut built = Built::default();
    render(content, &mentions, &mut built);
    let mut attachments = files(&body, d.get("flags").and_then(Value::as_u64).unwrap_or(0))?;
    for s in body.array("sticker_items")? {
        let name = s.get("name").and_then(Value::as_str).unwrap_or("sticker");
        attachments.push(attachment(ObjectKind::MediaImage, Some(format!("sticker {name}"))));
    }
    if let Some(poll) = body.obj("poll")? {
        let question = poll.get("question").and_then(|q| q.get("text")).and_then(Value::as_str);
        attachments.push(attachment(ObjectKind::Poll, question.map(str::to_owned)));
    }
    // Links the text does not show (an embed's URL) come along as link objects.
    for e in body.array("embeds")? {
        if let Some(url) = e.get("url").and_then(Value::as_str).filter(|u| !built.text.contains(*u)) {
            built.push(if built.text.is_empty() { "" } else { " " });
            built.link(url, url);
        }
    }
    let spoken = SPOKEN.contains(&kind_no);
    let text = if spoken {
        built.text.clone()
    } else {
        built.entities.clear();
        system_text(kind_no, &built.text)
    };
    // A reply names a message of this channel; a crosspost or a follow one of another: not a reply here.
    let reply_to = match &reference {
        Some(r)
            if !forwarded
                && (kind_no == 19 || r.get("channel_id").and_then(id_of) == d.get("channel_id").and_then(id_of)) =>
        {
            r.id("message_id")?
        }
        _ => None,
    };
    let replied_to_bot = d
        .obj("referenced_message")?
        .and_then(|m| m.get("author"))
        .and_then(|a| a.get("id"))
        .and_then(id_of)
        .is_some_and(|id| bot.is(&id));
    let addressed = bot.user_id.as_deref().is_some_and(|b| {
        mentions.iter().any(|m| m.0 == b)
            || content.contains(&format!("<@{b}>"))
            || content.contains(&format!("<@!{b}>"))
    });
    let direct = d.get("guild_id").is_none();
    if !spoken && text.is_empty() {
        warnings.push(format!("discord message {message_id} of type {kind_no} shows nothing"));
    }
    Ok(MessageEvent {
        channel: CHANNEL.to_owned(),
        chat_id: d.req_id("channel_id")?,
        workspace_id: d.id("guild_id")?,
        chat_type: Some(if direct { "dm" } else { "guild" }.to_owned()),
        topic_id: None,
        message_id,
        reply_to_message_id: reply_to,
        kind: crate::message_kind(is_bot, spoken),
        sent_at: d.req_time("timestamp")?,
        sender: Some(sender),
        text,
        entities: if spoken { built.entities } else { Vec::new() },
        quote: None,
        attachments,
        origin: Origin::Interactive,
        triggered_agent: !is_bot && spoken && (addressed || replied_to_bot || direct),
        actions: Vec::new(),
        forwarded_from: forwarded.then(|| "another channel".to_owned()),
    })
}

/// The people a message mentions, by id, from its `mentions` array (with their member records).
fn mentioned(d: &Fields<'_>) -> Result<Vec<(String, Person)>, Error> {
    let mut out = Vec::new();
    for (i, m) in d.array("mentions")?.iter().enumerate() {
        let path = format!("payload.d.mentions[{i}]");
        let f = Fields::new(object(m, &path, EV)?, &path, EV);
        let member = f.obj("member")?;
        let p = person(&f, member)?;
        out.push((p.user_id.clone(), p));
    }
    Ok(out)
}

/// Discord markup to text: `<@id>` / `<@!id>` of a mentioned user become a mention of them (rendered as
/// their reference), roles `<@&id>` become `@role`, channels `<#id>` `#channel`, custom emoji `<:name:id>`
/// `:name:`; `@everyone` / `@here` stay; bare URLs become links.
fn render(content: &str, mentions: &[(String, Person)], out: &mut Built) {
    let mut rest = content;
    // Mentions of people the message does not describe become references the directory fills in, up to a
    // bound (a reference is longer than `<@id>`: no message grows without limit); past it, `@user ID` as text.
    let mut by_id = 0;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>').map(|c| open + c) else { break };
        let inner = &rest[open + 1..close];
        let shown: Option<Result<(String, Person), String>> = if let Some(id) = inner
            .strip_prefix("@!")
            .or_else(|| inner.strip_prefix('@'))
            .filter(|i| i.bytes().all(|b| b.is_ascii_digit()) && !i.is_empty())
        {
            Some(Ok(match mentions.iter().find(|m| m.0 == id) {
                Some((_, p)) => {
                    (p.display_name.clone().or(p.username.clone()).unwrap_or_else(|| id.to_owned()), p.clone())
                }
                // Not described by the message: the chat or the guild's directory names them (docs/protocol.md §3.11).
                None if by_id < MAX_ID_MENTIONS => {
                    by_id += 1;
                    (format!("@user {id}"), Person { user_id: id.to_owned(), ..Person::default() })
                }
                None => {
                    out.push_with_urls(&rest[..open]);
                    out.push(&format!("@user {id}"));
                    rest = &rest[close + 1..];
                    continue;
                }
            }))
        } else if inner.starts_with("@&") {
            Some(Err("@role".to_owned()))
        } else if inner.starts_with('#') && inner[1..].bytes().all(|b| b.is_ascii_digit()) {
            Some(Err("#channel".to_owned()))
        } else if let Some(emoji) = inner.strip_prefix("a:").or_else(|| inner.strip_prefix(':')) {
            emoji.split(':').next().map(|name| Err(format!(":{name}:")))
        } else {
            None
        };
        match shown {
            Some(s) => {
                out.push_with_urls(&rest[..open]);
                match s {
                    Ok((label, person)) => out.mention(&label, person),
                    Err(plain) => out.push(&plain),
                }
            }
            // `<https://…>`: a link shown without a preview.
            None if inner.starts_with("https://") || inner.starts_with("http://") => {
                out.push_with_urls(&rest[..open]);
                out.link(inner, inner);
            }
            // A stray `<`: kept, URLs linked.
            None => out.push_with_urls(&rest[..=close]),
        }
        rest = &rest[close + 1..];
    }
    out.push_with_urls(rest);
}

/// Attachments by content type: images, video, audio (a voice message too), PDF, anything else a document.
fn files(body: &Fields<'_>, flags: u64) -> Result<Vec<Attachment>, Error> {
    let mut out = Vec::new();
    for (i, a) in body.array("attachments")?.iter().enumerate() {
        let path = format!("payload.d.attachments[{i}]");
        let f = Fields::new(object(a, &path, EV)?, &path, EV);
        let kind = file_kind(f.str("content_type")?.unwrap_or_default(), flags & VOICE_FLAG != 0);
        out.push(attachment(kind, f.str("filename")?.map(str::to_owned)));
    }
    Ok(out)
}

/// What a system message shows (Discord's message types).
pub(super) fn system_text(kind: u64, content: &str) -> String {
    let said = |what: &str| if content.is_empty() { what.to_owned() } else { format!("{what}: {content}") };
    match kind {
        1 => "added someone to the group".to_owned(),
        2 => "removed someone from the group".to_owned(),
        3 => "started a call".to_owned(),
        4 => said("renamed the channel"),
        5 => "changed the channel icon".to_owned(),
        6 => "pinned a message".to_owned(),
        7 => "joined the server".to_owned(),
        8..=11 => "boosted the server".to_owned(),
        12 => "followed a channel here".to_owned(),
        18 => said("started a thread"),
        21 => "started this thread from a message".to_owned(),
        46 => "a poll ended".to_owned(),
        n => said(&format!("sent a system message (type {n})")),
    }
}

fn reaction(d: &Fields<'_>, bot: &Bot, added: bool, at: Timestamp) -> Result<Event, Error> {
    let user_id = d.req_id("user_id")?;
    let member = d.obj("member")?;
    let sender = match member.and_then(|m| m.get("user")).and_then(Value::as_object) {
        Some(u) => person(&Fields::new(u, "payload.d.member.user", EV), member)?,
        None => Person { user_id: user_id.clone(), ..Person::default() },
    };
    let emoji = d
        .obj("emoji")?
        .and_then(|e| e.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("an emoji")
        .to_owned();
    Ok(Event::Reaction(ReactionEvent {
        channel: CHANNEL.to_owned(),
        chat_id: d.req_id("channel_id")?,
        topic_id: None,
        message_id: d.req_id("message_id")?,
        direction: if bot.is(&user_id) { Direction::Outbound } else { Direction::Inbound },
        sender: Some(sender),
        emoji: if added { vec![emoji] } else { Vec::new() },
        sent_at: at,
    }))
}
