//! A fresh `message` event read straight from its JSON text, without a `serde_json::Value` in between: what bots
//! send (a message with its sender, text, entities, quote, attachments and actions) costs a third of the general
//! way (parse into a value, [`check_fresh`](super::check_fresh), then [`Event::decode`]).
//!
//! It answers only when it is sure: anything it does not take (another event type, a field it does not know, a
//! duplicate key, a string past its bound, an id with a control character, a value of an unexpected type) makes
//! it answer `None`, and the caller takes the general way, which gives the event or the error. Whatever it
//! answers equals what the general way decodes from the same text (property-tested below), so the errors a client
//! sees come from one place.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use super::{
    Attachment, Entity, EntityKind, Event, FileRef, MAX_LABEL_BYTES, MAX_LIST_ITEMS, MAX_NAME_BYTES, MAX_TEXT_BYTES,
    MessageEvent, MessageKind, Person, Quote,
};
use crate::json::{MAX_ID_BYTES, has_control};
use crate::kinds::{Activation, DEFAULT_CHANNEL, ObjectKind, Origin};
use crate::time::Timestamp;

/// A fresh core `message` event read from `text` (one JSON object), or `None` when the general way must decide.
/// Its UTF-8 is checked once, whole ([`fresh_message_str`]): JSON that is not UTF-8 is not JSON.
pub fn fresh_message(text: &[u8]) -> Option<Event> {
    fresh_message_str(std::str::from_utf8(text).ok()?)
}

/// [`fresh_message`] of text already known to be UTF-8 (a stored log line, an item of a JSON array or a line of
/// JSON Lines read as a whole first). Reading text rather than bytes spares serde_json checking each string's
/// UTF-8 as it goes (about a fifth of the instructions reading a stored message line took).
pub fn fresh_message_str(text: &str) -> Option<Event> {
    let raw: Raw<'_> = serde_json::from_str(text).ok()?;
    raw.event().map(Event::Message)
}

/// [`fresh_message`] of a JSON value already parsed (the library's and MCP's input): one typed pass over it instead
/// of the general way's check and field-by-field lookups; `None` when the general way must decide.
pub fn fresh_message_value(v: &serde_json::Value) -> Option<Event> {
    let raw = Raw::deserialize(v).ok()?;
    raw.event().map(Event::Message)
}

/// A string, borrowed from the text when it holds no escape.
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

impl Str<'_> {
    /// Within `max` bytes (the bound fresh input keeps).
    fn within(&self, max: usize) -> Option<&str> {
        (self.0.len() <= max).then_some(&*self.0)
    }
}

/// An id as the general way takes it: a non-empty string of at most [`MAX_ID_BYTES`] without control characters,
/// or an integer, written out.
struct Id(String);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an id")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Id, E> {
                if s.is_empty() || s.len() > MAX_ID_BYTES || has_control(s) {
                    return Err(E::custom("not an id fresh input may carry"));
                }
                Ok(Id(s.to_owned()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Id, E> {
                Ok(Id(n.to_string()))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Id, E> {
                Ok(Id(n.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A time as the general way takes it: RFC 3339, or integer Unix seconds within years 1 to 9999.
struct Time(Timestamp);

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Time;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a time")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Time, E> {
                Timestamp::parse_rfc3339(s).map(Time).map_err(|_| E::custom("not a time"))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Time, E> {
                Timestamp::from_unix(n).map(Time).ok_or_else(|| E::custom("not a time"))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Time, E> {
                i64::try_from(n).ok().and_then(Timestamp::from_unix).map(Time).ok_or_else(|| E::custom("not a time"))
            }
        }
        d.deserialize_any(V)
    }
}

/// The fields taken, as they stand in the text. `Option` is also what the general way makes of `null`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw<'a> {
    #[serde(rename = "type", borrow)]
    type_: Str<'a>,
    #[serde(borrow)]
    channel: Option<Str<'a>>,
    chat_id: Option<Id>,
    workspace_id: Option<Id>,
    #[serde(borrow)]
    chat_type: Option<Str<'a>>,
    topic_id: Option<Id>,
    message_id: Option<Id>,
    reply_to_message_id: Option<Id>,
    #[serde(borrow)]
    kind: Option<Str<'a>>,
    sent_at: Option<Time>,
    #[serde(borrow)]
    sender: Option<RawPerson<'a>>,
    text: Option<String>,
    #[serde(borrow)]
    entities: Option<Vec<RawEntity<'a>>>,
    #[serde(borrow)]
    quote: Option<RawQuote<'a>>,
    #[serde(borrow)]
    attachments: Option<Vec<RawAttachment<'a>>>,
    #[serde(borrow)]
    origin: Option<Str<'a>>,
    triggered_agent: Option<bool>,
    #[serde(borrow)]
    actions: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    forwarded_from: Option<Str<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPerson<'a> {
    user_id: Option<Id>,
    #[serde(borrow)]
    username: Option<Str<'a>>,
    #[serde(borrow)]
    display_name: Option<Str<'a>>,
    #[serde(borrow)]
    first_name: Option<Str<'a>>,
    #[serde(borrow)]
    last_name: Option<Str<'a>>,
    is_bot: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuote<'a> {
    #[serde(borrow)]
    sender: Option<RawPerson<'a>>,
    text: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAttachment<'a> {
    #[serde(borrow)]
    kind: Option<Str<'a>>,
    #[serde(borrow)]
    label: Option<Str<'a>>,
    object_id: Option<Id>,
    external_id: Option<Id>,
    #[serde(borrow)]
    activation: Option<Str<'a>>,
    file: Option<RawFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    file_id: Option<Id>,
    file_unique_id: Option<Id>,
}

impl RawAttachment<'_> {
    fn attachment(self) -> Option<Attachment> {
        let kind = match ObjectKind::parse(&self.kind?.0)? {
            ObjectKind::Message | ObjectKind::BotMessage => return None,
            k => k,
        };
        Some(Attachment {
            kind,
            label: opt(self.label, |l| l.within(MAX_LABEL_BYTES).map(str::to_owned))?,
            object_id: self.object_id.map(|i| i.0),
            external_id: self.external_id.map(|i| i.0),
            activation: opt(self.activation, |a| Activation::parse(&a.0))?,
            file: opt(self.file, |f| {
                Some(FileRef { file_id: f.file_id?.0, file_unique_id: f.file_unique_id.map(|i| i.0) })
            })?,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntity<'a> {
    #[serde(rename = "type", borrow)]
    type_: Option<Str<'a>>,
    offset: Option<u32>,
    length: Option<u32>,
    #[serde(borrow)]
    user: Option<RawPerson<'a>>,
    url: Option<String>,
}

/// A name as the general way keeps it: trimmed, absent when blank; `None` (outer) past its bound.
fn name(s: Option<Str<'_>>) -> Option<Option<String>> {
    opt(s, |s| s.within(MAX_NAME_BYTES).map(|s| s.trim().to_owned())).map(|n| n.filter(|n| !n.is_empty()))
}

/// An optional field read by `read`: `None` (leave it to the general way) when it is there and `read` refuses it.
fn opt<T, U>(v: Option<T>, read: impl FnOnce(T) -> Option<U>) -> Option<Option<U>> {
    match v {
        Some(v) => read(v).map(Some),
        None => Some(None),
    }
}

impl RawPerson<'_> {
    /// The person, whose `user_id` is required when `need_id` (a quote's author may be hidden).
    fn person(self, need_id: bool) -> Option<Person> {
        let user_id = match self.user_id {
            Some(id) => id.0,
            None if need_id => return None,
            None => String::new(),
        };
        let username = name(self.username)?.map(|u| u.trim_start_matches('@').to_owned()).filter(|u| !u.is_empty());
        Some(Person {
            user_id,
            username,
            display_name: name(self.display_name)?,
            first_name: name(self.first_name)?,
            last_name: name(self.last_name)?,
            is_bot: self.is_bot.unwrap_or(false),
        })
    }
}

impl RawEntity<'_> {
    fn entity(self) -> Option<Entity> {
        let kind = match &*self.type_?.0 {
            "mention" => EntityKind::Mention,
            "text_mention" => EntityKind::TextMention,
            "url" => EntityKind::Url,
            "text_link" => EntityKind::TextLink,
            other => EntityKind::Other(other.to_owned()),
        };
        let user = match (&kind, self.user) {
            (EntityKind::TextMention, Some(u)) => Some(u.person(true)?),
            (_, None) => None,
            // The general way ignores it but still checks its ids and names: let it.
            (_, Some(_)) => return None,
        };
        let url = match kind {
            EntityKind::TextLink => self.url,
            _ => None,
        };
        Some(Entity { kind, offset: self.offset?, length: self.length?, user, url })
    }
}

impl Raw<'_> {
    fn event(self) -> Option<MessageEvent> {
        if self.type_.0 != "message" {
            return None;
        }
        let kind = MessageKind::parse(&self.kind?.0)?;
        let sender = match self.sender {
            Some(p) => Some(p.person(true)?),
            None if kind == MessageKind::System => None,
            None => return None,
        };
        let text = self.text.unwrap_or_default();
        if text.len() > MAX_TEXT_BYTES {
            return None;
        }
        let entities = self.entities.unwrap_or_default().into_iter().map(RawEntity::entity).collect::<Option<_>>()?;
        let quote = opt(self.quote, |q| {
            Some(Quote {
                sender: opt(q.sender, |p| p.person(false))?,
                text: q.text.filter(|t| t.len() <= MAX_TEXT_BYTES)?,
            })
        })?;
        let attachments =
            self.attachments.unwrap_or_default().into_iter().map(RawAttachment::attachment).collect::<Option<_>>()?;
        let origin = match self.origin {
            Some(o) => Origin::parse(&o.0)?,
            None => Origin::Interactive,
        };
        let actions = self.actions.unwrap_or_default();
        if actions.len() > MAX_LIST_ITEMS {
            return None;
        }
        let actions =
            actions.into_iter().map(|a| a.within(MAX_NAME_BYTES).map(str::to_owned)).collect::<Option<_>>()?;
        let channel = match self.channel {
            Some(c) if c.0.len() > MAX_ID_BYTES || has_control(&c.0) => return None,
            Some(c) if !c.0.is_empty() => c.0.into_owned(),
            _ => DEFAULT_CHANNEL.to_owned(),
        };
        let chat_type = opt(self.chat_type, |t| t.within(MAX_NAME_BYTES).map(str::to_owned))?.filter(|t| !t.is_empty());
        Some(MessageEvent {
            channel,
            chat_id: self.chat_id?.0,
            workspace_id: self.workspace_id.map(|i| i.0),
            chat_type,
            topic_id: self.topic_id.map(|i| i.0),
            message_id: self.message_id?.0,
            reply_to_message_id: self.reply_to_message_id.map(|i| i.0),
            kind,
            sent_at: self.sent_at?.0,
            sender,
            text,
            entities,
            quote,
            attachments,
            origin,
            triggered_agent: self.triggered_agent.unwrap_or(kind == MessageKind::OutboundAgent),
            actions,
            forwarded_from: name(self.forwarded_from)?,
        })
    }
}

#[cfg(test)]
#[path = "direct_tests.rs"]
pub(super) mod tests;
