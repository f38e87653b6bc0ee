//! `object` and `activation` events (docs/protocol.md §3.3, §3.4).

use serde::Serialize;

use super::{EV, limited};
use crate::error::Error;
use crate::json::Fields;
use crate::kinds::{Activation, ObjectKind};
use crate::time::Timestamp;

crate::vocabulary! {
    /// What an `object` event does.
    ObjectOp {
        /// Register or update.
        Upsert = "upsert",
        /// Closed (poll closed, reminder fired): listable for the close grace, then inactive.
        Close = "close",
        /// Gone for good.
        Delete = "delete",
    }
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

pub(super) fn activation(f: &Fields<'_>, key: &str) -> Result<Option<Activation>, Error> {
    Ok(f.one_of(key, Activation::NAMES)?.map(|i| Activation::ALL[i]))
}

impl ObjectEvent {
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let op: ObjectOp = f.word("op")?.ok_or_else(|| f.err("op", "is required"))?;
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
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
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
