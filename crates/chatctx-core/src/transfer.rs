//! Export and import of one conversation (one chat: its people, history, objects and state) as one JSON
//! document, so a conversation can be shared or moved. The document is exact: importing it and exporting
//! again gives the same bytes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::chat::PersonDoc;
use crate::error::Error;
use crate::kinds::{Activation, ItemKind, ObjectKind, Origin};
pub use crate::scenario::{RevisionDoc, ScenarioDoc};
use crate::time::Timestamp;

/// The format tag of a conversation document.
pub const FORMAT: &str = "chatctx.conversation.v1";

/// One conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationDoc {
    /// Always [`FORMAT`].
    pub format: String,
    /// Platform.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// `private`, `group`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_type: Option<String>,
    /// The chat's title (docs/protocol.md §3.12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The titles of its topics, by topic id.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub topic_titles: std::collections::BTreeMap<String, String>,
    /// The workspace whose people directory names the chat's people (docs/protocol.md §3.11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// Speakers as they were when they spoke (history items refer to them by position).
    pub people: Vec<PersonDoc>,
    /// Every stored item, oldest first.
    pub history: Vec<ItemDoc>,
    /// Every object, in registration order.
    pub objects: Vec<ObjectDoc>,
    /// The state of each conversation scope.
    pub scenarios: Vec<ScenarioDoc>,
    /// The summary of each conversation that has one (docs/protocol.md §6.6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<crate::summary::Summary>,
    /// Platform threads that are topics of this chat (docs/protocol.md §3.8), by their ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<String>,
    /// Mentions of people the chat names by the directory, by `#user_id` or `@username`, with the reference the
    /// texts hold (a name the directory learns later replaces it).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mentions: std::collections::BTreeMap<String, String>,
}

/// One history item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemDoc {
    /// Its topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// Who produced it.
    pub kind: ItemKind,
    /// Message id (none for reactions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Reply target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to_message_id: Option<String>,
    /// When.
    pub sent_at: Timestamp,
    /// Position of the speaker in `people`.
    pub sender: u32,
    /// Normalized text.
    pub text: String,
    /// `[sender_ref, text]` of a quote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<(String, String)>,
    /// The bot's actions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
    /// Why it exists.
    pub origin: Origin,
    /// Whether it made the bot run.
    pub triggered_agent: bool,
}

/// One object, every field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectDoc {
    /// Id.
    pub object_id: std::sync::Arc<str>,
    /// Kind.
    pub kind: ObjectKind,
    /// Source message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_message_id: Option<std::sync::Arc<str>>,
    /// Topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<std::sync::Arc<str>>,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_or_label: Option<std::sync::Arc<str>>,
    /// Creator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by_user_id: Option<std::sync::Arc<str>>,
    /// Bot-created.
    pub created_by_bot: bool,
    /// Registered.
    pub created_at: Timestamp,
    /// Last touched.
    pub last_touched_at: Timestamp,
    /// Latest activation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
    /// Its time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activated_at: Option<Timestamp>,
    /// The message whose handling caused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activated_by: Option<String>,
    /// Closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<Timestamp>,
    /// Platform id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// The platform's file reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<crate::event::FileRef>,
    /// The carrier message's first words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<std::sync::Arc<str>>,
    /// Who posted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<std::sync::Arc<str>>,
}

/// How deep in a document the free-form values of its states may sit: a value of a revision's `delta` is in the
/// eighth level (`scenarios[].revisions[].delta[][1]`), a patch in the sixth, a state or base is the fourth. Deeper
/// than anything else in its shape (a quote's or a file's fields are in the fourth), so a document nests at most
/// this plus its deepest free-form value.
const SHAPE_DEPTH: usize = 7;

impl ConversationDoc {
    /// Reads a document from JSON (its content is checked when it is imported).
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        Self::deserialize(v).map_err(|e| Error::invalid_request(format!("not a conversation document: {e}")))
    }

    /// At least how deeply its JSON nests arrays and objects ([`crate::json::nesting`] of it), at most a few levels
    /// more: its shape's depth plus that of its deepest state, base or patch. Reads only those values, which are
    /// small, so a writer can tell a document is within a depth limit without scanning its text.
    pub fn nesting_bound(&self) -> usize {
        let map =
            |m: &serde_json::Map<String, Value>| 1 + m.values().map(crate::json::value_nesting).max().unwrap_or(0);
        let free = self.scenarios.iter().flat_map(|s| {
            let revisions = s.revisions.iter().flat_map(|r| {
                let changed = r.delta.iter().filter_map(|(_, v)| v.as_ref());
                std::iter::once(&r.patch).chain(changed).map(crate::json::value_nesting)
            });
            [map(&s.state), map(&s.base)].into_iter().chain(revisions)
        });
        SHAPE_DEPTH + free.max().unwrap_or(0)
    }
}
