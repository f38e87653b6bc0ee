//! `person` events (docs/protocol.md §3.11): a person of a platform's workspace learned without a message (a Slack
//! `user_change`, a Discord `GUILD_MEMBER_UPDATE`, a `users.list` answer). The people directory of the workspace
//! keeps their names; every chat of the workspace shows them by those names, also in items stored before.

use serde::Serialize;

use super::Person;
use crate::error::Error;
use crate::json::Fields;

/// A person of `channel`'s workspace `workspace_id` (or of the workspace of chat `chat_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PersonEvent {
    /// Platform.
    pub channel: String,
    /// The workspace (Slack team, Discord guild) the person belongs to. Absent: the workspace of `chat_id`'s
    /// chat, else the channel's own directory (Telegram, plain JSON). The service logs it filled in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// A chat the person was seen in; it names the workspace when `workspace_id` does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// Who, and the names they go by.
    #[serde(flatten)]
    pub person: Person,
}

impl PersonEvent {
    pub(super) fn decode(f: Fields<'_>) -> Result<Self, Error> {
        let person = Person::decode(f, true)?;
        Ok(Self { channel: f.channel()?, workspace_id: f.id("workspace_id")?, chat_id: f.id("chat_id")?, person })
    }

    /// The workspace the event names itself, `""` for the channel's own directory.
    pub fn workspace(&self) -> &str {
        self.workspace_id.as_deref().unwrap_or_default()
    }
}
