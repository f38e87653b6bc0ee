//! `delete` events (docs/protocol.md §3.7): messages removed on the platform (Discord's `MESSAGE_DELETE`,
//! Slack's `message_deleted`, Telegram's `deleted_business_messages`, or a bot's own call).

use serde::Serialize;

use crate::error::Error;
use crate::json::{Fields, id_of};
use crate::time::Timestamp;

/// The most message ids one `delete` event names (Discord's bulk delete takes at most 100).
pub const MAX_DELETED: usize = 1000;

/// Messages deleted on the platform: they leave the history, their objects and the indexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeleteEvent {
    /// Platform.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The deleted messages (ids not held are ignored).
    pub message_ids: Vec<String>,
    /// When they were deleted, if the platform says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
}

impl DeleteEvent {
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let ids = f.array("message_ids")?;
        if ids.is_empty() {
            return Err(f.err("message_ids", "is required: a non-empty array of message ids"));
        }
        if ids.len() > MAX_DELETED {
            return Err(f.err("message_ids", &format!("at most {MAX_DELETED} ids in one event")));
        }
        let message_ids = ids
            .iter()
            .map(|v| id_of(v).ok_or_else(|| f.err("message_ids", "expected non-empty string or integer ids")))
            .collect::<Result<_, _>>()?;
        Ok(Self { channel: f.channel()?, chat_id: f.req_id("chat_id")?, message_ids, at: f.time("at")? })
    }
}
