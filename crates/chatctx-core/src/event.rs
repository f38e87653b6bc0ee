//! Events, the input of chatctx (docs/protocol.md §3), with their validation.
//!
//! Events are decoded from untrusted JSON by [`Event::decode`]; every rejection is `invalid_event` (or
//! `unsupported_event` for an unknown `type`) naming the field. A decoded event is valid by construction,
//! so applying it cannot fail halfway. Events serialize back to the same JSON shape (the importer and the
//! Telegram mapping write them out).

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode};
use crate::json::{Fields, object};
use crate::kinds::{Activation, ObjectKind, Origin};
use crate::time::Timestamp;

/// The default `channel`.
pub use crate::kinds::DEFAULT_CHANNEL;

/// One input event. Events are applied as soon as they are decoded, never held in bulk, so the message
/// variant is not boxed (that would cost an allocation per message on the hot path).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A message (docs/protocol.md §3.1).
    Message(MessageEvent),
    /// A reaction (docs/protocol.md §3.2).
    Reaction(ReactionEvent),
    /// A typed object registered, closed or deleted (docs/protocol.md §3.3).
    Object(ObjectEvent),
    /// An activation of a known object (docs/protocol.md §3.4).
    Activation(ActivationEvent),
}

/// The kind of a message event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// A user wrote it.
    InboundUser,
    /// The bot wrote it.
    OutboundAgent,
    /// A system note.
    System,
}

/// A message (docs/protocol.md §3.1). The same `(channel, chat_id, message_id)` again is an edit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageEvent {
    /// Platform, default `telegram`.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// `private`, `group`, `supergroup`, `channel`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_type: Option<String>,
    /// The forum topic, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The message id, unique in the chat.
    pub message_id: String,
    /// The message this one replies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_message_id: Option<String>,
    /// Who produced it.
    pub kind: MessageKind,
    /// When it was sent.
    pub sent_at: Timestamp,
    /// The author; may be absent only for `system`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<Person>,
    /// The text (or caption), raw.
    pub text: String,
    /// Telegram-style entities over `text`, in UTF-16 code units.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<Entity>,
    /// A quoted passage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<Quote>,
    /// Media and other objects carried by the message.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// Why the message exists.
    pub origin: Origin,
    /// Whether this message made the bot run.
    pub triggered_agent: bool,
    /// On the bot's messages: short descriptions of the tools it used.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
}

/// A person (or a chat speaking as one, such as an anonymous admin).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Person {
    /// Platform user id; empty only where the platform hides it (a quote from a hidden user).
    pub user_id: String,
    /// Username without `@`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Preferred display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// First name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    /// Last name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
    /// Whether this is a bot account.
    pub is_bot: bool,
}

/// The entity types chatctx acts on; all others are kept as `Other` and ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntityKind {
    /// `@username`.
    Mention,
    /// A mention of a user by name, carrying the user.
    TextMention,
    /// A URL in the text.
    Url,
    /// Text linked to a URL.
    TextLink,
    /// Any other type, by name.
    Other(String),
}

impl EntityKind {
    fn name(&self) -> &str {
        match self {
            Self::Mention => "mention",
            Self::TextMention => "text_mention",
            Self::Url => "url",
            Self::TextLink => "text_link",
            Self::Other(s) => s,
        }
    }
}

impl Serialize for EntityKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A Telegram-style entity: `offset` and `length` in UTF-16 code units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entity {
    /// What it is.
    #[serde(rename = "type")]
    pub kind: EntityKind,
    /// Start, in UTF-16 code units.
    pub offset: u32,
    /// Length, in UTF-16 code units.
    pub length: u32,
    /// The user of a `text_mention`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<Person>,
    /// The target of a `text_link`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A quoted passage and who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Quote {
    /// The quoted author, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<Person>,
    /// The quoted text.
    pub text: String,
}

/// An object carried by a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attachment {
    /// Its kind.
    pub kind: ObjectKind,
    /// A short label (file name, poll question).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// An explicit id; otherwise the derived id of docs/protocol.md §3.6.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
    /// The platform's own id for it (a Telegram poll id), used to route `poll_answer` updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Activates the object as it is registered (an extension: a poll the bot sent is `created`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
}

/// Who reacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// A user reacted.
    Inbound,
    /// The bot reacted.
    Outbound,
}

/// A reaction to a message (docs/protocol.md §3.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReactionEvent {
    /// Platform.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The topic; when absent, the topic of the message reacted to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The message reacted to.
    pub message_id: String,
    /// Who reacted.
    pub direction: Direction,
    /// The reacting person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<Person>,
    /// The reaction now in place; empty when it was removed.
    pub emoji: Vec<String>,
    /// When.
    pub sent_at: Timestamp,
}

/// What an `object` event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectOp {
    /// Register or update.
    Upsert,
    /// Closed (poll closed, reminder fired): listable for the close grace, then inactive.
    Close,
    /// Gone for good.
    Delete,
}

/// A typed object, as the bot describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectSpec {
    /// Its id, unique in the chat.
    pub object_id: String,
    /// Its kind.
    pub kind: ObjectKind,
    /// The chat.
    pub chat_id: String,
    /// The topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The message that carries it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_message_id: Option<String>,
    /// A short label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title_or_label: Option<String>,
    /// Who created it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by_user_id: Option<String>,
    /// Whether the bot created it.
    pub created_by_bot: bool,
}

/// Registers, closes or deletes a typed object (docs/protocol.md §3.3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectEvent {
    /// Platform.
    pub channel: String,
    /// What to do.
    pub op: ObjectOp,
    /// When.
    pub at: Timestamp,
    /// The object.
    pub object: ObjectSpec,
    /// An activation at `at`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
}

/// How an activation names its object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ObjectRef {
    /// By `object_id` in a chat.
    Id {
        /// The chat.
        chat_id: String,
        /// The object.
        object_id: String,
    },
    /// By the platform's own id (a Telegram `poll_answer` names only the poll).
    External {
        /// The platform id.
        external_id: String,
    },
}

/// An explicit activation of a known object (docs/protocol.md §3.4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActivationEvent {
    /// Platform.
    pub channel: String,
    /// Which object.
    #[serde(flatten)]
    pub target: ObjectRef,
    /// Which activation.
    pub event: Activation,
    /// When.
    pub at: Timestamp,
    /// Who caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_user_id: Option<String>,
    /// The message that caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Also closes the object (an extension: a Telegram poll that was stopped).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub close: bool,
}

const EV: ErrorCode = ErrorCode::InvalidEvent;

impl Event {
    /// The `type` of a raw event, or the error for a missing or non-string one.
    pub fn type_of(v: &Value) -> Result<&str, Error> {
        let map = object(v, "an event", EV)?;
        Fields::new(map, "", EV).str("type")?.ok_or_else(|| Error::invalid_event("field `type`: is required"))
    }

    /// Decodes one event of docs/protocol.md §3.1–3.4. `telegram_update` is not decoded here: it is mapped by the
    /// Telegram crate into these events.
    pub fn decode(v: &Value) -> Result<Self, Error> {
        let map = object(v, "an event", EV)?;
        let f = Fields::new(map, "", EV);
        match Self::type_of(v)? {
            "message" => MessageEvent::decode(f).map(Event::Message),
            "reaction" => ReactionEvent::decode(f).map(Event::Reaction),
            "object" => ObjectEvent::decode(f).map(Event::Object),
            "activation" => ActivationEvent::decode(f).map(Event::Activation),
            other => Err(Error::new(
                ErrorCode::UnsupportedEvent,
                format!(
                    "unsupported event type {other:?}; expected message, reaction, object, activation or telegram_update"
                ),
            )),
        }
    }

    /// When the event happened.
    pub fn time(&self) -> Timestamp {
        match self {
            Event::Message(m) => m.sent_at,
            Event::Reaction(r) => r.sent_at,
            Event::Object(o) => o.at,
            Event::Activation(a) => a.at,
        }
    }

    /// The platform id an activation names instead of a chat and object (a Telegram `poll_answer`).
    pub fn external_target(&self) -> Option<&str> {
        match self {
            Event::Activation(ActivationEvent { target: ObjectRef::External { external_id }, .. }) => Some(external_id),
            _ => None,
        }
    }

    /// The platform ids of the objects this event carries (a Telegram poll).
    pub fn external_ids(&self) -> impl Iterator<Item = &str> {
        let attachments = match self {
            Event::Message(m) => m.attachments.as_slice(),
            _ => &[],
        };
        attachments.iter().filter_map(|a| a.external_id.as_deref())
    }

    /// The `(channel, chat_id)` this event writes to, when it names one.
    pub fn chat(&self) -> Option<(&str, &str)> {
        match self {
            Event::Message(m) => Some((&m.channel, &m.chat_id)),
            Event::Reaction(r) => Some((&r.channel, &r.chat_id)),
            Event::Object(o) => Some((&o.channel, &o.object.chat_id)),
            Event::Activation(a) => match &a.target {
                ObjectRef::Id { chat_id, .. } => Some((&a.channel, chat_id)),
                ObjectRef::External { .. } => None,
            },
        }
    }
}

fn limited(f: &Fields<'_>, key: &str, s: &str, max: usize) -> Result<(), Error> {
    if s.len() > max { Err(f.err(key, &format!("longer than {max} bytes"))) } else { Ok(()) }
}

/// The longest message text chatctx accepts (Telegram's own limit is 4096 characters).
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

impl MessageEvent {
    fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let kind = match f.one_of("kind", &["inbound_user", "outbound_agent", "system"])? {
            Some(0) => MessageKind::InboundUser,
            Some(1) => MessageKind::OutboundAgent,
            Some(_) => MessageKind::System,
            None => return Err(f.err("kind", "is required")),
        };
        let chat_id = f.req_id("chat_id")?;
        let message_id = f.req_id("message_id")?;
        let sent_at = f.req_time("sent_at")?;
        let sender = match f.obj("sender")? {
            Some(m) => Some(Person::decode(Fields::new(m, "sender", EV), true)?),
            None if kind == MessageKind::System => None,
            None => return Err(f.err("sender", "is required")),
        };
        let text = f.str("text")?.unwrap_or_default().to_owned();
        limited(&f, "text", &text, MAX_TEXT_BYTES)?;
        let mut entities = Vec::new();
        for (i, e) in f.array("entities")?.iter().enumerate() {
            let path = format!("entities[{i}]");
            let m = e.as_object().ok_or_else(|| f.err(&path, "expected an object"))?;
            entities.push(Entity::decode(Fields::new(m, &path, EV))?);
        }
        let quote = match f.obj("quote")? {
            Some(m) => {
                let q = Fields::new(m, "quote", EV);
                let sender = match q.obj("sender")? {
                    Some(s) => Some(Person::decode(Fields::new(s, "quote.sender", EV), false)?),
                    None => None,
                };
                let text = q.str("text")?.ok_or_else(|| q.err("text", "is required"))?.to_owned();
                limited(&q, "text", &text, MAX_TEXT_BYTES)?;
                Some(Quote { sender, text })
            }
            None => None,
        };
        let mut attachments = Vec::new();
        for (i, a) in f.array("attachments")?.iter().enumerate() {
            let path = format!("attachments[{i}]");
            let m = a.as_object().ok_or_else(|| f.err(&path, "expected an object"))?;
            attachments.push(Attachment::decode(Fields::new(m, &path, EV))?);
        }
        let origin = match f.one_of("origin", Origin::NAMES)? {
            Some(i) => Origin::ALL[i],
            None => Origin::Interactive,
        };
        let triggered_agent = f.bool("triggered_agent")?.unwrap_or(kind == MessageKind::OutboundAgent);
        Ok(Self {
            channel: f.channel()?,
            chat_id,
            chat_type: f.str("chat_type")?.filter(|s| !s.is_empty()).map(str::to_owned),
            topic_id: f.id("topic_id")?,
            message_id,
            reply_to_message_id: f.id("reply_to_message_id")?,
            kind,
            sent_at,
            sender,
            text,
            entities,
            quote,
            attachments,
            origin,
            triggered_agent,
            actions: f.strings("actions")?,
        })
    }
}

impl Person {
    /// Decodes a person; `user_id` is required when `need_id`.
    pub fn decode(f: Fields<'_>, need_id: bool) -> Result<Self, Error> {
        let user_id = if need_id { f.req_id("user_id")? } else { f.id("user_id")?.unwrap_or_default() };
        let text = |k: &str| -> Result<Option<String>, Error> {
            Ok(f.str(k)?.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned))
        };
        Ok(Self {
            user_id,
            username: text("username")?.map(|u| u.trim_start_matches('@').to_owned()).filter(|u| !u.is_empty()),
            display_name: text("display_name")?,
            first_name: text("first_name")?,
            last_name: text("last_name")?,
            is_bot: f.bool("is_bot")?.unwrap_or(false),
        })
    }
}

impl Entity {
    fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let kind = match f.str("type")?.ok_or_else(|| f.err("type", "is required"))? {
            "mention" => EntityKind::Mention,
            "text_mention" => EntityKind::TextMention,
            "url" => EntityKind::Url,
            "text_link" => EntityKind::TextLink,
            other => EntityKind::Other(other.to_owned()),
        };
        let offset = f.u32("offset")?.ok_or_else(|| f.err("offset", "is required"))?;
        let length = f.u32("length")?.ok_or_else(|| f.err("length", "is required"))?;
        let user = match (&kind, f.obj("user")?) {
            (EntityKind::TextMention, Some(u)) => Some(Person::decode(Fields::new(u, &f.name("user"), EV), true)?),
            _ => None,
        };
        let url = match kind {
            EntityKind::TextLink => f.str("url")?.map(str::to_owned),
            _ => None,
        };
        Ok(Self { kind, offset, length, user, url })
    }
}

impl Attachment {
    fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let kind = f.str("kind")?.ok_or_else(|| f.err("kind", "is required"))?;
        let kind = match ObjectKind::parse(kind) {
            Some(ObjectKind::Message | ObjectKind::BotMessage) | None => {
                return Err(f.err("kind", &format!("{kind:?} is not an attachment kind")));
            }
            Some(k) => k,
        };
        Ok(Self {
            kind,
            label: f.str("label")?.map(str::to_owned),
            object_id: f.id("object_id")?,
            external_id: f.id("external_id")?,
            activation: activation(&f, "activation")?,
        })
    }
}

impl ReactionEvent {
    fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let direction = match f.one_of("direction", &["inbound", "outbound"])? {
            Some(1) => Direction::Outbound,
            _ => Direction::Inbound,
        };
        let sender = match f.obj("sender")? {
            Some(m) => Some(Person::decode(Fields::new(m, "sender", EV), true)?),
            None if direction == Direction::Outbound => None,
            None => return Err(f.err("sender", "is required for an inbound reaction")),
        };
        Ok(Self {
            channel: f.channel()?,
            chat_id: f.req_id("chat_id")?,
            topic_id: f.id("topic_id")?,
            message_id: f.req_id("message_id")?,
            direction,
            sender,
            emoji: f.strings("emoji")?,
            sent_at: f.req_time("sent_at")?,
        })
    }
}

fn activation(f: &Fields<'_>, key: &str) -> Result<Option<Activation>, Error> {
    Ok(f.one_of(key, Activation::NAMES)?.map(|i| Activation::ALL[i]))
}

impl ObjectEvent {
    fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let op = match f.one_of("op", &["upsert", "close", "delete"])? {
            Some(1) => ObjectOp::Close,
            Some(2) => ObjectOp::Delete,
            Some(_) => ObjectOp::Upsert,
            None => return Err(f.err("op", "is required")),
        };
        let m = f.obj("object")?.ok_or_else(|| f.err("object", "is required"))?;
        let o = Fields::new(m, "object", EV);
        let kind = o.str("kind")?.ok_or_else(|| o.err("kind", "is required"))?;
        let kind = ObjectKind::parse(kind).ok_or_else(|| {
            o.err("kind", &format!("unknown object kind {kind:?}; expected one of {}", ObjectKind::NAMES.join(", ")))
        })?;
        let title = o.str("title_or_label")?.map(str::to_owned);
        if let Some(t) = &title {
            limited(&o, "title_or_label", t, 4096)?;
        }
        let object = ObjectSpec {
            object_id: o.req_id("object_id")?,
            kind,
            chat_id: o.req_id("chat_id")?,
            topic_id: o.id("topic_id")?,
            source_message_id: o.id("source_message_id")?,
            title_or_label: title,
            created_by_user_id: o.id("created_by_user_id")?,
            created_by_bot: o.bool("created_by_bot")?.unwrap_or(false),
        };
        Ok(Self { channel: f.channel()?, op, at: f.req_time("at")?, object, activation: activation(&f, "activation")? })
    }
}

impl ActivationEvent {
    fn decode(f: Fields<'_>) -> Result<Self, Error> {
        Ok(Self {
            channel: f.channel()?,
            // By id in a chat, or (as the Telegram mapping writes for poll answers) by the platform's own id.
            target: match (f.id("object_id")?, f.id("external_id")?) {
                (None, Some(external_id)) => ObjectRef::External { external_id },
                (object_id, _) => ObjectRef::Id {
                    chat_id: f.req_id("chat_id")?,
                    object_id: object_id.ok_or_else(|| f.err("object_id", "is required"))?,
                },
            },
            event: activation(&f, "event")?.ok_or_else(|| f.err("event", "is required"))?,
            at: f.req_time("at")?,
            by_user_id: f.id("by_user_id")?,
            message_id: f.id("message_id")?,
            close: f.bool("close")?.unwrap_or(false),
        })
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec_message() -> Value {
        json!({"type": "message", "channel": "telegram", "chat_id": "-100500", "chat_type": "supergroup",
         "topic_id": "7", "message_id": "501", "reply_to_message_id": "500",
         "kind": "inbound_user", "sent_at": "2026-02-13T08:20:10Z",
         "sender": {"user_id": "42", "username": "alice", "display_name": "Alice A.", "first_name": "Alice",
                    "last_name": "A.", "is_bot": false},
         "text": "@bob look at this https://example.org/a",
         "entities": [{"type": "mention", "offset": 0, "length": 4},
                      {"type": "url", "offset": 18, "length": 21}],
         "quote": {"sender": {"user_id": "43", "username": "carol", "first_name": "Carol"}, "text": "I will add details tomorrow."},
         "attachments": [{"kind": "media.image", "label": "cat.jpg"}],
         "origin": "interactive", "triggered_agent": true, "actions": []})
    }

    fn err_of(v: Value) -> Error {
        Event::decode(&v).expect_err("should be rejected")
    }

    #[test]
    fn decodes_the_spec_example() {
        let Event::Message(m) = Event::decode(&spec_message()).unwrap() else { panic!("not a message") };
        assert_eq!(m.chat_id, "-100500");
        assert_eq!(m.topic_id.as_deref(), Some("7"));
        assert_eq!(m.entities.len(), 2);
        assert_eq!(m.attachments[0].kind, ObjectKind::MediaImage);
        assert_eq!(m.quote.as_ref().and_then(|q| q.sender.as_ref()).and_then(|s| s.username.as_deref()), Some("carol"));
        assert!(m.triggered_agent);
    }

    #[test]
    fn numeric_ids_are_stringified_and_unix_times_accepted() {
        let mut v = spec_message();
        v["chat_id"] = json!(-1001234567890i64);
        v["message_id"] = json!(501);
        v["sent_at"] = json!(1_770_970_810);
        let Event::Message(m) = Event::decode(&v).unwrap() else { panic!() };
        assert_eq!(m.chat_id, "-1001234567890");
        assert_eq!(m.message_id, "501");
        assert_eq!(m.sent_at.to_rfc3339(), "2026-02-13T08:20:10Z");
    }

    #[test]
    fn every_required_field_is_named_when_missing() {
        for field in ["chat_id", "message_id", "kind", "sent_at", "sender"] {
            let mut v = spec_message();
            v.as_object_mut().unwrap().remove(field);
            let e = err_of(v);
            assert_eq!(e.code, ErrorCode::InvalidEvent);
            assert!(e.message.contains(&format!("`{field}`")), "{field}: {}", e.message);
        }
        let mut v = spec_message();
        v["sender"].as_object_mut().unwrap().remove("user_id");
        assert!(err_of(v).message.contains("`sender.user_id`"));
    }

    #[test]
    fn wrong_types_name_the_field() {
        let cases = [
            ("sent_at", json!("yesterday"), "`sent_at`"),
            ("chat_id", json!(1.5), "`chat_id`"),
            ("chat_id", json!(""), "`chat_id`"),
            ("kind", json!("outbound"), "`kind`"),
            ("entities", json!([{"type": "mention", "offset": -1, "length": 4}]), "`entities[0].offset`"),
            ("attachments", json!([{"kind": "media.gif"}]), "`attachments[0].kind`"),
            ("triggered_agent", json!("yes"), "`triggered_agent`"),
            ("origin", json!("cron"), "`origin`"),
        ];
        for (field, value, named) in cases {
            let mut v = spec_message();
            v[field] = value;
            let e = err_of(v);
            assert!(e.message.contains(named), "{field}: {}", e.message);
        }
    }

    #[test]
    fn system_messages_need_no_sender_and_defaults_apply() {
        let v = json!({"type": "message", "chat_id": 1, "message_id": 2, "kind": "system", "sent_at": 0});
        let Event::Message(m) = Event::decode(&v).unwrap() else { panic!() };
        assert_eq!(m.channel, "telegram");
        assert!(!m.triggered_agent);
        assert_eq!(m.origin, Origin::Interactive);
        let v = json!({"type": "message", "chat_id": 1, "message_id": 2, "kind": "outbound_agent", "sent_at": 0,
                       "sender": {"user_id": 9}});
        let Event::Message(m) = Event::decode(&v).unwrap() else { panic!() };
        assert!(m.triggered_agent, "outbound defaults to triggered");
    }

    #[test]
    fn unknown_types_and_fields() {
        assert_eq!(err_of(json!({"type": "typing", "chat_id": 1})).code, ErrorCode::UnsupportedEvent);
        assert_eq!(err_of(json!({"chat_id": 1})).code, ErrorCode::InvalidEvent);
        assert_eq!(err_of(json!([1, 2])).code, ErrorCode::InvalidEvent);
        let mut v = spec_message();
        v["some_future_field"] = json!({"x": 1});
        assert!(Event::decode(&v).is_ok(), "unknown fields are ignored");
    }

    #[test]
    fn other_event_types_decode() {
        let r = json!({"type": "reaction", "chat_id": "-100500", "topic_id": "7", "message_id": "501", "direction": "inbound",
         "sender": {"user_id": "43", "username": "carol"}, "emoji": ["👍"], "sent_at": "2026-02-13T08:21:00Z"});
        assert!(matches!(Event::decode(&r), Ok(Event::Reaction(_))));
        let o = json!({"type": "object", "op": "upsert", "at": "2026-02-13T08:20:15Z",
         "object": {"object_id": "rem-9", "kind": "reminder", "chat_id": "-100500", "topic_id": "7",
                    "source_message_id": "502", "title_or_label": "Call mom at 18:00",
                    "created_by_user_id": "42", "created_by_bot": true},
         "activation": "created"});
        assert!(matches!(Event::decode(&o), Ok(Event::Object(_))));
        let a = json!({"type": "activation", "chat_id": "-100500", "object_id": "rem-9", "event": "listed",
         "at": "2026-02-13T09:00:00Z", "by_user_id": "42", "message_id": "530"});
        assert!(matches!(Event::decode(&a), Ok(Event::Activation(_))));
        let mut bad = a.clone();
        bad["event"] = json!("mentioned");
        assert!(err_of(bad).message.contains("`event`"));
        let mut bad = o.clone();
        bad["object"]["kind"] = json!("meme");
        assert!(err_of(bad).message.contains("`object.kind`"));
    }

    #[test]
    fn events_round_trip_through_json() {
        let activation = json!({"type": "activation", "chat_id": "-100500", "object_id": "rem-9", "event": "listed",
         "at": "2026-02-13T09:00:00Z", "by_user_id": "42", "message_id": "530"});
        let external = json!({"type": "activation", "external_id": "poll-7", "event": "voted", "at": 1_770_000_000, "close": true});
        for v in [spec_message(), activation, external] {
            let e = Event::decode(&v).unwrap();
            assert_eq!(Event::decode(&serde_json::to_value(&e).unwrap()).unwrap(), e);
        }
    }
}
