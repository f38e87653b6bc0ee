//! `title` events (docs/protocol.md §3.12): the name people see for a chat (a Telegram group's title, a Discord
//! channel's or a Slack channel's name) or for one of its topics (a forum topic, a thread). The console and the
//! chat list show it; prompts do not change with it.

use serde::Serialize;

use super::bounds::MAX_NAME_BYTES;
use super::limited;
use crate::error::Error;
use crate::json::Fields;

/// The title of chat `chat_id`, or of its topic `topic_id` when one is named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TitleEvent {
    /// Platform.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The topic the title names; absent: the chat's own title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The title, trimmed (at most 1,024 bytes).
    pub title: String,
}

impl TitleEvent {
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let title = f.text("title")?.ok_or_else(|| f.err("title", "is required (a non-blank string)"))?;
        limited(&f, "title", &title, MAX_NAME_BYTES)?;
        Ok(Self { channel: f.channel()?, chat_id: f.req_id("chat_id")?, topic_id: f.id("topic_id")?, title })
    }

    /// Whether `title` is one a `title` event may carry as it is: trimmed, not empty, within the bound.
    pub fn fits(title: &str) -> bool {
        !title.is_empty() && title.trim() == title && title.len() <= MAX_NAME_BYTES
    }
}
