//! `message` events (docs/protocol.md §3.1): the message, its sender, entities, quote and attachments.

use serde::Serialize;

use super::object::activation;
use super::{EV, MAX_TEXT_BYTES, limited};
use crate::error::Error;
use crate::json::Fields;
use crate::kinds::{Activation, ObjectKind, Origin};
use crate::time::Timestamp;

crate::vocabulary! {
    /// The kind of a message event.
    MessageKind {
        /// A user wrote it.
        InboundUser = "inbound_user",
        /// The bot wrote it.
        OutboundAgent = "outbound_agent",
        /// A system note.
        System = "system",
    }
}

impl From<MessageKind> for crate::kinds::ItemKind {
    /// The history item a message of this kind is stored as.
    fn from(kind: MessageKind) -> Self {
        match kind {
            MessageKind::InboundUser => Self::InboundUser,
            MessageKind::OutboundAgent => Self::OutboundAgent,
            MessageKind::System => Self::System,
        }
    }
}

/// A message (docs/protocol.md §3.1). The same `(channel, chat_id, message_id)` again is an edit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageEvent {
    /// Platform, default `telegram`.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The workspace the chat belongs to (a Slack team, a Discord guild): its people directory names the chat's
    /// people (docs/protocol.md §3.11). Absent: the channel's own directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
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
    /// Who a forwarded message came from: rendered `[forwarded from …]` ahead of everything it carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forwarded_from: Option<String>,
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
    pub(super) fn name(&self) -> &str {
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

/// The platform's reference to a file (Telegram: `file_id` to send or download it again, `file_unique_id`
/// to recognise the same file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct FileRef {
    /// What the platform's API takes to send or fetch the file.
    pub file_id: String,
    /// The same for every copy of the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_unique_id: Option<String>,
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
    /// The platform's file reference, for media and files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<FileRef>,
}

impl MessageEvent {
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let kind: MessageKind = f.word("kind")?.ok_or_else(|| f.err("kind", "is required"))?;
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
            workspace_id: f.id("workspace_id")?,
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
            forwarded_from: f.text("forwarded_from")?,
        })
    }
}

impl Person {
    /// Decodes a person; `user_id` is required when `need_id`.
    pub fn decode(f: Fields<'_>, need_id: bool) -> Result<Self, Error> {
        let user_id = match f.get("user_id") {
            // A hidden author (a quote's) is written with an empty id, and reads back so.
            Some(serde_json::Value::String(s)) if s.is_empty() && !need_id => String::new(),
            _ if need_id => f.req_id("user_id")?,
            _ => f.id("user_id")?.unwrap_or_default(),
        };
        Ok(Self {
            user_id,
            username: f.text("username")?.map(|u| u.trim_start_matches('@').to_owned()).filter(|u| !u.is_empty()),
            display_name: f.text("display_name")?,
            first_name: f.text("first_name")?,
            last_name: f.text("last_name")?,
            is_bot: f.bool("is_bot")?.unwrap_or(false),
        })
    }
}

impl Entity {
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
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
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
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
            file: match f.obj("file")? {
                Some(m) => {
                    let path = f.name("file");
                    let ff = Fields::new(m, &path, EV);
                    Some(FileRef { file_id: ff.req_id("file_id")?, file_unique_id: ff.id("file_unique_id")? })
                }
                None => None,
            },
        })
    }
}
