//! What every tool request shares: the [`Scope`] it applies to, and the [`Request`] trait that names the tool,
//! describes it, reads it from JSON and says what it answers.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::json::Fields;
use crate::time::Timestamp;

/// Where a tool call applies: the fields every tool shares. A bound scope (a credential handed to a model)
/// pins the chat and fills in the rest where a call names none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Scope {
    /// Platform; default "telegram".
    #[serde(default = "default_channel")]
    pub channel: String,
    /// The chat (Telegram chat id, or any channel's chat id).
    #[schemars(with = "Id")]
    pub chat_id: String,
    /// Forum topic or thread, when there is no current message to take it from.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Id>")]
    pub topic_id: Option<String>,
    /// The message being handled: the one being answered, or the one that holds the reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Id>")]
    pub current_message_id: Option<String>,
    /// Who wrote the message being handled.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Id>")]
    pub sender_user_id: Option<String>,
    /// Return the answer's decision record inline, as `explain` (docs/protocol.md §6.7). Not a place, but
    /// every request has it, so it travels with the scope.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain: bool,
    /// Set by a credential pinned to `topic_id` (a bound scope issued for a topic), never read from the wire:
    /// the messages the call names (current, reply target) must then be in that topic.
    #[serde(skip)]
    #[schemars(skip)]
    pub pinned_topic: bool,
}

fn default_channel() -> String {
    crate::event::DEFAULT_CHANNEL.to_owned()
}

/// Which of the [`Scope`] fields a tool reads, and which of those it cannot go without (`chat_id` always).
#[derive(Debug, Clone, Copy)]
pub struct ScopeUse {
    /// The scope fields the tool reads; the others are accepted and ignored, and left out of its schema.
    pub reads: &'static [&'static str],
    /// The ones it requires besides `chat_id`.
    pub requires: &'static [&'static str],
}

impl Scope {
    /// The scope of a whole chat on Telegram, for building requests in code.
    pub fn chat(chat_id: impl Into<String>) -> Self {
        Self { channel: default_channel(), chat_id: chat_id.into(), ..Self::default() }
    }

    /// Reads the scope fields of a request, requiring what `used` says. A field the request leaves out is
    /// taken from `defaults` (a bound scope's) before anything is required.
    pub(crate) fn decode(f: &Fields<'_>, used: ScopeUse, defaults: Option<&Scope>) -> Result<Self, Error> {
        let id = |key: &str, default: Option<&Option<String>>| {
            let read = used.reads.contains(&key) || used.requires.contains(&key);
            let value = if read { f.id(key)?.or_else(|| default.cloned().flatten()) } else { None };
            match value {
                None if used.requires.contains(&key) || key == "chat_id" => Err(f.err(key, "is required")),
                value => Ok(value),
            }
        };
        let channel = match (f.str("channel")?.filter(|c| !c.is_empty()), defaults) {
            (None, Some(d)) => d.channel.clone(),
            _ => f.channel()?,
        };
        let chat_id = defaults.map(|d| Some(d.chat_id.clone()));
        Ok(Self {
            channel,
            chat_id: id("chat_id", chat_id.as_ref())?.unwrap_or_default(),
            topic_id: id("topic_id", defaults.map(|d| &d.topic_id))?,
            current_message_id: id("current_message_id", defaults.map(|d| &d.current_message_id))?,
            sender_user_id: id("sender_user_id", defaults.map(|d| &d.sender_user_id))?,
            explain: f.bool("explain")?.unwrap_or(false),
            pinned_topic: false,
        })
    }
}

/// An id on the wire: a non-empty string, or an integer (read as its decimal string).
pub(crate) struct Id;

impl JsonSchema for Id {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Id".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        crate::wire::schema([("type", vec!["string", "integer"].into())])
    }
}

/// A tool's request type: its name, its description for models, how it is read, and its answer type.
pub trait Request: Sized + Serialize + JsonSchema {
    /// The tool's name.
    const NAME: &'static str;
    /// What the tool does, for a model choosing it.
    const DESCRIPTION: &'static str;
    /// The scope fields it reads and requires.
    const SCOPE: ScopeUse;
    /// Its answer.
    type Response: Serialize + JsonSchema;

    /// Reads the request from JSON, naming any bad field. Scope fields it leaves out are taken from
    /// `defaults` (a bound scope's), if given, before any is required.
    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error>;
    /// Reads the request from JSON, naming any bad field.
    fn decode(v: &Value) -> Result<Self, Error> {
        Self::decode_with(v, None)
    }
    /// Where it applies.
    fn scope(&self) -> &Scope;
    /// Where it applies, for credentials that pin or fill it in.
    fn scope_mut(&mut self) -> &mut Scope;
    /// The time it names, if it takes one.
    fn now(&self) -> Option<Timestamp> {
        None
    }
    /// Sets the time where the request takes one and names none (so that a logged call means the same later).
    fn fill_now(&mut self, _now: Timestamp) {}
}

/// The [`Request`] methods that only hand out the request's `scope` field (and, with `now`, its `now` field).
macro_rules! scoped_request {
    () => {
        fn scope(&self) -> &$crate::tools::request::Scope {
            &self.scope
        }

        fn scope_mut(&mut self) -> &mut $crate::tools::request::Scope {
            &mut self.scope
        }
    };
    (now) => {
        scoped_request!();

        fn now(&self) -> Option<$crate::time::Timestamp> {
            self.now
        }

        fn fill_now(&mut self, now: $crate::time::Timestamp) {
            self.now.get_or_insert(now);
        }
    };
}
pub(crate) use scoped_request;
