//! `reaction` events (docs/protocol.md §3.2).

use serde::Serialize;

use super::EV;
use super::message::Person;
use crate::error::Error;
use crate::json::Fields;
use crate::time::Timestamp;

crate::vocabulary! {
    /// Who reacted.
    Direction {
        /// A user reacted.
        Inbound = "inbound",
        /// The bot reacted.
        Outbound = "outbound",
    }
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

impl ReactionEvent {
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let direction = f.word("direction")?.unwrap_or(Direction::Inbound);
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
