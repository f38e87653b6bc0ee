//! Bot API `Update` → chatctx events (docs/protocol.md §3.5, §3.6): updates, messages, reactions, votes;
//! `content` reads what a message carries beyond its text.

use chatctx_core::Timestamp;
use chatctx_core::error::{Error, ErrorCode};
use chatctx_core::event::{
    ActivationEvent, DeleteEvent, Direction, Entity, EntityKind, Event, MessageEvent, MessageKind, ObjectRef, Person,
    Quote, ReactionEvent,
};
use chatctx_core::json::{Fields, id_of, object};
use chatctx_core::kinds::{Activation, Origin};
use serde_json::{Map, Value};

use crate::{Bot, Mapped};

mod content;
pub mod export;
pub mod fields;
mod titles;

use content::{attachments, forward_name, placeholder, service_text};

const EV: ErrorCode = ErrorCode::InvalidEvent;
/// The channel name Telegram events get.
pub const CHANNEL: &str = "telegram";
/// The account Telegram shows as the author of an anonymous admin's message.
const GROUP_ANONYMOUS_BOT_ID: &str = "1087968824";
/// The account Telegram shows as the author of posts auto-forwarded from a linked channel.
const TELEGRAM_SERVICE_ID: &str = "777000";

/// The update kinds chatctx maps, in the order they are applied.
const KNOWN_KINDS: &[&str] = &[
    "message",
    "edited_message",
    "channel_post",
    "edited_channel_post",
    "business_message",
    "edited_business_message",
    "message_reaction",
    "poll",
    "poll_answer",
    "deleted_business_messages",
];

/// The Bot API update fields the mapping receives but does not use (reported as `ignored`); also the only
/// label values of the server's ignored-updates metric, so a client's own field names cannot grow its label set.
pub const IGNORED_KINDS: &[&str] = &[
    "inline_query",
    "chosen_inline_result",
    "callback_query",
    "shipping_query",
    "pre_checkout_query",
    "purchased_paid_media",
    "my_chat_member",
    "chat_member",
    "chat_join_request",
    "chat_boost",
    "removed_chat_boost",
    "message_reaction_count",
    "business_connection",
];

/// The system note for a message that shows nothing chatctx knows (never an empty user turn).
pub const UNSHOWN: &str = "sent a message of a kind chatctx does not show";

/// Telegram, as a [`crate::Platform`]: a replay line carries an update as `{"type": "telegram_update", "bot":
/// {…}, "triggered_agent": …, "update": {…}}` (docs/protocol.md §3.5).
#[derive(Debug, Clone, Copy, Default)]
pub struct Telegram;

impl crate::Platform for Telegram {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    fn wrapped_as(&self) -> (&'static str, &'static str) {
        ("telegram_update", "update")
    }

    /// Maps one update; `received_at` stands in for the time of updates that carry none (`poll`,
    /// `poll_answer`).
    fn map(&self, payload: &Value, bot: &Bot, received_at: Timestamp) -> Result<Mapped, Error> {
        map_update(payload, bot, received_at)
    }
}

/// Whether a Telegram account is the bot: by user id, or by username (any case).
fn is_bot(bot: &Bot, user_id: &str, username: Option<&str>) -> bool {
    bot.is(user_id) || matches!((bot.username.as_deref(), username), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b))
}

/// Maps one raw Bot API `Update`.
pub fn map_update(update: &Value, bot: &Bot, received_at: Timestamp) -> Result<Mapped, Error> {
    let triggered = bot.triggered_agent;
    let map = update.as_object().ok_or_else(|| Error::invalid_event("field `update`: expected a JSON object"))?;
    let mut out = Mapped::default();
    // Known kinds in a fixed order (a real update has one; a synthetic one may have several).
    for &key in KNOWN_KINDS {
        let Some(value) = map.get(key).filter(|v| !v.is_null()) else { continue };
        let path = format!("update.{key}");
        match key {
            "message_reaction" => {
                let m = value
                    .as_object()
                    .ok_or_else(|| Error::invalid_event(format!("field `{path}`: expected an object")))?;
                out.events.push(map_reaction(Fields::new(m, &path, EV), bot)?);
            }
            "poll_answer" => {
                let f = Fields::new(object(value, &path, EV)?, &path, EV);
                let voter = f.obj("user")?.or(f.obj("voter_chat")?);
                out.events.push(Event::Activation(ActivationEvent {
                    channel: CHANNEL.to_owned(),
                    target: ObjectRef::External { external_id: f.req_id("poll_id")? },
                    event: Activation::Voted,
                    at: received_at,
                    by_user_id: voter.and_then(|u| u.get("id")).and_then(id_of),
                    message_id: None,
                    close: false,
                }));
            }
            "deleted_business_messages" => {
                // The business account's chat lost these messages: a `delete` of them.
                let f = Fields::new(object(value, &path, EV)?, &path, EV);
                let chat = f.obj("chat")?.ok_or_else(|| f.err("chat", "is required"))?;
                let chat_id = Fields::new(chat, &format!("{path}.chat"), EV).req_id("id")?;
                let message_ids = f
                    .array("message_ids")?
                    .iter()
                    .map(|v| id_of(v).ok_or_else(|| f.err("message_ids", "expected message ids")))
                    .collect::<Result<Vec<_>, _>>()?;
                if !message_ids.is_empty() {
                    out.events.push(Event::Delete(DeleteEvent {
                        channel: CHANNEL.to_owned(),
                        chat_id,
                        message_ids,
                        at: Some(received_at),
                    }));
                }
            }
            "poll" => {
                // Only the bot's own polls produce these: a vote (anonymous polls have no poll_answer) or a stop.
                let f = Fields::new(object(value, &path, EV)?, &path, EV);
                let closed = f.bool("is_closed")? == Some(true);
                out.events.push(Event::Activation(ActivationEvent {
                    channel: CHANNEL.to_owned(),
                    target: ObjectRef::External { external_id: f.req_id("id")? },
                    event: if closed { Activation::Updated } else { Activation::Voted },
                    at: received_at,
                    by_user_id: None,
                    message_id: None,
                    close: closed,
                }));
            }
            _ => {
                let m = value
                    .as_object()
                    .ok_or_else(|| Error::invalid_event(format!("field `{path}`: expected an object")))?;
                out.events.push(Event::Message(map_message(m, &path, bot, triggered, &mut out.warnings)?));
                // After the message, so that the service logs the titles after it (only those that are new).
                out.events.extend(titles::of(m));
            }
        }
    }
    out.ignored = map
        .iter()
        .filter(|(k, v)| !v.is_null() && *k != "update_id" && !KNOWN_KINDS.contains(&k.as_str()))
        .map(|(k, _)| k.clone())
        .collect();
    Ok(out)
}

fn person_from_user(u: &Map<String, Value>, path: &str) -> Result<Person, Error> {
    let f = Fields::new(u, path, EV);
    Ok(Person {
        user_id: f.req_id("id")?,
        username: f.text("username")?,
        display_name: None,
        first_name: f.text("first_name")?,
        last_name: f.text("last_name")?,
        is_bot: f.bool("is_bot")?.unwrap_or(false),
    })
}

/// A chat speaking as a person: an anonymous admin (`sender_chat` = the group), a channel posting.
fn person_from_chat(c: &Map<String, Value>, path: &str, signature: Option<&str>) -> Result<Person, Error> {
    let f = Fields::new(c, path, EV);
    let title = f.str("title")?.map(str::trim).filter(|s| !s.is_empty());
    let display_name = match (title, signature.filter(|s| !s.is_empty())) {
        (Some(t), Some(s)) => Some(format!("{t} ({s})")),
        (Some(t), None) => Some(t.to_owned()),
        (None, Some(s)) => Some(s.to_owned()),
        (None, None) => None,
    };
    Ok(Person {
        user_id: f.req_id("id")?,
        username: f.str("username")?.filter(|s| !s.is_empty()).map(str::to_owned),
        display_name,
        first_name: f.str("first_name")?.map(str::to_owned),
        last_name: f.str("last_name")?.map(str::to_owned),
        is_bot: false,
    })
}

/// The author of a message: `from`, or `sender_chat` when Telegram put a stand-in in `from`.
fn author(f: &Fields<'_>) -> Result<Option<Person>, Error> {
    let from = match f.obj("from")? {
        Some(u) => Some(person_from_user(u, &f.name("from"))?),
        None => None,
    };
    let stand_in = from.as_ref().is_none_or(|p| {
        p.user_id == GROUP_ANONYMOUS_BOT_ID
            || p.user_id == TELEGRAM_SERVICE_ID
            || p.username.as_deref() == Some("GroupAnonymousBot")
    });
    if stand_in && let Some(c) = f.obj("sender_chat")? {
        return person_from_chat(c, &f.name("sender_chat"), f.str("author_signature")?).map(Some);
    }
    Ok(from)
}

fn entities(list: &[Value], path: &str, warnings: &mut Vec<String>) -> Vec<Entity> {
    let mut out = Vec::with_capacity(list.len());
    for (i, e) in list.iter().enumerate() {
        let Some(m) = e.as_object() else {
            warnings.push(format!("{path}[{i}] is not an object; ignored"));
            continue;
        };
        let f = Fields::new(m, "", EV);
        let (Ok(Some(kind)), Ok(Some(offset)), Ok(Some(length))) = (f.str("type"), f.u32("offset"), f.u32("length"))
        else {
            warnings.push(format!("{path}[{i}] lacks type, offset or length; ignored"));
            continue;
        };
        let kind = match kind {
            "mention" => EntityKind::Mention,
            "text_mention" => EntityKind::TextMention,
            "url" => EntityKind::Url,
            "text_link" => EntityKind::TextLink,
            other => EntityKind::Other(other.to_owned()),
        };
        let user = match (&kind, f.obj("user")) {
            (EntityKind::TextMention, Ok(Some(u))) => person_from_user(u, "user").ok(),
            _ => None,
        };
        let url = match kind {
            EntityKind::TextLink => f.str("url").ok().flatten().map(str::to_owned),
            _ => None,
        };
        out.push(Entity { kind, offset, length, user, url });
    }
    out
}

/// The author of the origin of an external reply (a message in another chat).
fn origin_person(o: &Map<String, Value>, path: &str) -> Result<Option<Person>, Error> {
    let f = Fields::new(o, path, EV);
    Ok(match f.str("type")? {
        Some("user") => match f.obj("sender_user")? {
            Some(u) => Some(person_from_user(u, &f.name("sender_user"))?),
            None => None,
        },
        Some("hidden_user") => {
            f.str("sender_user_name")?.map(|n| Person { display_name: Some(n.to_owned()), ..Person::default() })
        }
        Some("chat") => match f.obj("sender_chat")? {
            Some(c) => Some(person_from_chat(c, &f.name("sender_chat"), f.str("author_signature")?)?),
            None => None,
        },
        Some("channel") => match f.obj("chat")? {
            Some(c) => Some(person_from_chat(c, &f.name("chat"), f.str("author_signature")?)?),
            None => None,
        },
        _ => None,
    })
}

/// Maps one Bot API `Message` (also an edited message or a channel post).
pub fn map_message(
    m: &Map<String, Value>,
    path: &str,
    bot: &Bot,
    triggered: Option<bool>,
    warnings: &mut Vec<String>,
) -> Result<MessageEvent, Error> {
    let f = Fields::new(m, path, EV);
    let chat_path = f.name("chat");
    let chat = Fields::new(chat_obj(&f)?, &chat_path, EV);
    let chat_id = chat.req_id("id")?;
    let chat_type = chat.str("type")?.filter(|t| !t.is_empty()).map(str::to_owned);
    let message_id = f.req_id("message_id")?;
    let sent_at = f.req_time("date")?;
    let is_topic = f.bool("is_topic_message")? == Some(true);
    let thread = f.id("message_thread_id")?;
    let topic_id = if is_topic { thread.clone() } else { None };
    let sender = author(&f)?;
    // A business bot's own message carries the business account as its author and the bot as
    // `sender_business_bot`: it is the bot speaking.
    let by_business_bot = f.obj("sender_business_bot")?.is_some_and(|u| {
        is_bot(bot, &u.get("id").and_then(id_of).unwrap_or_default(), u.get("username").and_then(Value::as_str))
    });
    let bot_authored =
        by_business_bot || sender.as_ref().is_some_and(|p| is_bot(bot, &p.user_id, p.username.as_deref()));

    // Inside a forum topic, a "reply" to the topic's creation message is Telegram's implicit link, not a
    // reply: it counts for nothing (not the reply link, not the quote, not addressing the bot).
    let reply = f.obj("reply_to_message")?.filter(|r| {
        let implicit =
            r.get("message_id").and_then(id_of).is_some_and(|rid| is_topic && thread.as_deref() == Some(rid.as_str()));
        !implicit
    });
    let reply_to_message_id = reply.and_then(|r| r.get("message_id").and_then(id_of));
    let quote = quote(&f, reply)?;

    let Body { text, entities: ents, attachments, service, forwarded_from } = body(&f, bot_authored, warnings)?;

    // A message that shows nothing (a kind this mapping does not know yet) is never an empty user turn.
    let unshown = service.is_none() && text.trim().is_empty() && attachments.is_empty() && forwarded_from.is_none();
    let text = if unshown { UNSHOWN.to_owned() } else { text };
    let kind = if service.is_some() || unshown {
        MessageKind::System
    } else if bot_authored {
        MessageKind::OutboundAgent
    } else {
        MessageKind::InboundUser
    };
    let triggered_agent = triggered.unwrap_or_else(|| match kind {
        MessageKind::OutboundAgent => true,
        MessageKind::System => false,
        MessageKind::InboundUser => {
            chat_type.as_deref() == Some("private") || mentions_bot(&text, &ents, bot) || replies_to_bot(reply, bot)
        }
    });
    let sender = match (sender, kind) {
        (Some(p), _) => Some(p),
        (None, MessageKind::System) => None,
        // A channel post without a signature is the channel speaking; anywhere else a message without an
        // author is malformed.
        (None, _) if chat_type.as_deref() == Some("channel") => {
            Some(person_from_chat(chat_obj(&f)?, &f.name("chat"), None)?)
        }
        (None, _) => return Err(f.err("from", "is required (the message has neither `from` nor `sender_chat`)")),
    };
    Ok(MessageEvent {
        channel: CHANNEL.to_owned(),
        chat_id,
        workspace_id: None,
        chat_type,
        topic_id,
        message_id,
        reply_to_message_id,
        kind,
        sent_at,
        sender,
        text,
        entities: ents,
        quote,
        attachments,
        origin: Origin::Interactive,
        triggered_agent,
        actions: Vec::new(),
        forwarded_from,
    })
}

/// The quote a message makes, spoken by the replied message's author (or, for a reply to another chat, by the
/// origin of that message).
fn quote(f: &Fields<'_>, reply: Option<&Map<String, Value>>) -> Result<Option<Quote>, Error> {
    let Some(q) = f.obj("quote")? else { return Ok(None) };
    let reply_author = match reply {
        Some(r) => author(&Fields::new(r, &f.name("reply_to_message"), EV)).ok().flatten(),
        None => None,
    };
    let text = q.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
    let sender = match (reply_author, f.obj("external_reply")?.and_then(|e| e.get("origin")).and_then(Value::as_object))
    {
        (Some(p), _) => Some(p),
        (None, Some(origin)) => origin_person(origin, &f.name("external_reply.origin"))?,
        (None, None) => None,
    };
    Ok((!text.is_empty()).then_some(Quote { sender, text }))
}

/// What a message says and carries.
struct Body {
    text: String,
    entities: Vec<chatctx_core::event::Entity>,
    attachments: Vec<chatctx_core::event::Attachment>,
    /// The description of a service message (the text then).
    service: Option<String>,
    /// Who a forward came from.
    forwarded_from: Option<String>,
}

/// The text (or caption) and its entities, the attachments, a service message's description or a placeholder
/// for content that is neither text nor an object, and who a forward came from.
fn body(f: &Fields<'_>, bot_authored: bool, warnings: &mut Vec<String>) -> Result<Body, Error> {
    let (mut text, mut ents) = match f.str("text")? {
        Some(t) => (t.to_owned(), entities(f.array("entities")?, &f.name("entities"), warnings)),
        None => (
            f.str("caption")?.unwrap_or_default().to_owned(),
            entities(f.array("caption_entities")?, &f.name("caption_entities"), warnings),
        ),
    };
    let attachments = attachments(f, bot_authored)?;
    let service = service_text(f)?;
    if let Some(s) = &service {
        text = s.clone();
        ents.clear();
    } else if text.is_empty()
        && attachments.is_empty()
        && let Some(p) = placeholder(f)?
    {
        text = p;
    } else if let Some(tag) = fields::leading_tag(f) {
        // Paid media: the tag leads its caption, whose entities move along.
        let prefix = if text.is_empty() { tag } else { format!("{tag} ") };
        let shift = u32::try_from(prefix.encode_utf16().count()).unwrap_or(0);
        for e in &mut ents {
            e.offset = e.offset.saturating_add(shift);
        }
        text.insert_str(0, &prefix);
    }
    Ok(Body { text, entities: ents, attachments, service, forwarded_from: forward_name(f)? })
}

/// Whether the replied message is the bot's.
fn replies_to_bot(reply: Option<&Map<String, Value>>, bot: &Bot) -> bool {
    reply.and_then(|r| r.get("from")).and_then(Value::as_object).is_some_and(|u| {
        let id = u.get("id").and_then(id_of).unwrap_or_default();
        is_bot(bot, &id, u.get("username").and_then(Value::as_str))
    })
}

fn chat_obj<'a>(f: &Fields<'a>) -> Result<&'a Map<String, Value>, Error> {
    f.obj("chat")?.ok_or_else(|| f.err("chat", "is required"))
}

/// Whether the text mentions the bot: a `mention` or `text_mention` entity naming it, or `@bot_username`
/// anywhere (which also covers `/command@bot_username`).
fn mentions_bot(text: &str, entities: &[Entity], bot: &Bot) -> bool {
    if entities.iter().any(|e| {
        e.kind == EntityKind::TextMention
            && e.user.as_ref().is_some_and(|u| is_bot(bot, &u.user_id, u.username.as_deref()))
    }) {
        return true;
    }
    let Some(name) = bot.username.as_deref().filter(|n| !n.is_empty()) else { return false };
    let needle = format!("@{}", name.to_ascii_lowercase());
    let hay = text.to_ascii_lowercase();
    hay.match_indices(&needle)
        .any(|(at, _)| !hay[at + needle.len()..].chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_'))
}

fn map_reaction(f: Fields<'_>, bot: &Bot) -> Result<Event, Error> {
    let chat_path = f.name("chat");
    let chat = Fields::new(chat_obj(&f)?, &chat_path, EV);
    let sender = match (f.obj("user")?, f.obj("actor_chat")?) {
        (Some(u), _) => Some(person_from_user(u, &f.name("user"))?),
        (None, Some(c)) => Some(person_from_chat(c, &f.name("actor_chat"), None)?),
        (None, None) => None,
    };
    let direction = match &sender {
        Some(p) if is_bot(bot, &p.user_id, p.username.as_deref()) => Direction::Outbound,
        _ => Direction::Inbound,
    };
    let emoji = f
        .array("new_reaction")?
        .iter()
        .filter_map(|r| {
            let r = r.as_object()?;
            match r.get("type").and_then(Value::as_str)? {
                "emoji" => r.get("emoji").and_then(Value::as_str).map(str::to_owned),
                // The id is meaningless to a model; that it was a custom emoji is not.
                "custom_emoji" => Some("[custom emoji]".to_owned()),
                "paid" => Some("⭐".to_owned()),
                _ => None,
            }
        })
        .collect();
    Ok(Event::Reaction(ReactionEvent {
        channel: CHANNEL.to_owned(),
        chat_id: chat.req_id("id")?,
        topic_id: None,
        message_id: f.req_id("message_id")?,
        direction,
        sender,
        emoji,
        sent_at: f.req_time("date")?,
    }))
}
