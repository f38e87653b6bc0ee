//! `thread` events (docs/protocol.md §3.8): a platform thread that is a topic of a parent chat (a Discord
//! thread of a channel). Messages, reactions and deletions the platform addresses to the thread's own id are
//! filed under the parent chat, with the thread as their topic.

use serde::Serialize;

use crate::error::Error;
use crate::json::Fields;

/// A thread of a chat: from then on, events naming `topic_id` as their chat go to `chat_id`, topic `topic_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadEvent {
    /// Platform.
    pub channel: String,
    /// The parent chat.
    pub chat_id: String,
    /// The thread's own id on the platform, its topic in the parent chat.
    pub topic_id: String,
}

impl ThreadEvent {
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let t = Self { channel: f.channel()?, chat_id: f.req_id("chat_id")?, topic_id: f.req_id("topic_id")? };
        if t.chat_id == t.topic_id {
            return Err(f.err("topic_id", "a thread cannot be its own parent"));
        }
        Ok(t)
    }
}
