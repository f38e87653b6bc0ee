//! The `single` payload (`chat_history_context`): its messages are read from the answer's
//! [`HistoryItems`] block, shared with the answer's `items` ([`crate::history::block`]).

use schemars::JsonSchema;
use serde::{Serialize, Serializer};

use super::HISTORY_NOTE;
use crate::history::{ChatHistoryItem, HistoryItems};
use crate::kinds::ItemKind;
use crate::time::Timestamp;

/// The `chat_history_context` payload, fields in the seed's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct HistoryPayload {
    /// Always `chat_history_context`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Platform.
    pub channel: String,
    /// [`HISTORY_NOTE`].
    pub note: &'static str,
    /// The items, oldest first.
    // Read from the answer's `HistoryItems` block; the comment above is the field's description in the OpenAPI
    // document, which must not change.
    pub messages: PayloadMessages,
}

/// One entry of the payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct PayloadMessage {
    /// Item kind.
    pub kind: ItemKind,
    /// RFC 3339 UTC.
    pub time: String,
    /// The speaker's reference.
    pub sender: String,
    /// The text.
    pub text: String,
    /// The quote as a block quote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// The tools the bot used for this reply (an extension: present only on bot items that have actions).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
}

/// The payload for `items`.
pub fn payload(channel: &str, items: &[ChatHistoryItem]) -> HistoryPayload {
    payload_of(channel, &HistoryItems::from_items(items))
}

/// The payload for an answer's items (sharing them).
pub fn payload_of(channel: &str, items: &HistoryItems) -> HistoryPayload {
    HistoryPayload {
        kind: "chat_history_context",
        channel: channel.to_owned(),
        note: HISTORY_NOTE,
        messages: PayloadMessages::of(items),
    }
}

/// The `messages` of a `single` payload: the answer's items as the payload shows them, read from the same
/// block as `items`.
#[derive(Clone, Default)]
pub struct PayloadMessages(HistoryItems);

impl PartialEq for PayloadMessages {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for PayloadMessages {}

impl PayloadMessages {
    /// The payload messages of `items` (shares their block).
    pub fn of(items: &HistoryItems) -> Self {
        Self(items.clone())
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The messages, oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = PayloadView<'_>> + '_ {
        self.0.iter().map(|i| PayloadView {
            kind: i.kind,
            time: i.sent_at,
            sender: i.sender.display_ref,
            text: i.text,
            quote: i.quote.map(|q| q.markdown_block),
            actions: i.actions,
        })
    }

    /// The messages as owned [`PayloadMessage`]s.
    pub fn to_vec(&self) -> Vec<PayloadMessage> {
        self.iter()
            .map(|m| PayloadMessage {
                kind: m.kind,
                time: m.time.to_rfc3339(),
                sender: m.sender.to_owned(),
                text: m.text.to_owned(),
                quote: m.quote.map(str::to_owned),
                actions: m.actions.to_vec(),
            })
            .collect()
    }
}

impl std::fmt::Debug for PayloadMessages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for PayloadMessages {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

crate::wire::schema_as!(PayloadMessages => Vec<PayloadMessage>);

/// One payload message, borrowed; serialized exactly as the [`PayloadMessage`] it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PayloadView<'a> {
    /// Item kind.
    pub kind: ItemKind,
    /// RFC 3339 UTC.
    pub time: Timestamp,
    /// The speaker's reference.
    pub sender: &'a str,
    /// The text.
    pub text: &'a str,
    /// The quote as a block quote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<&'a str>,
    /// The tools the bot used for this reply.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub actions: &'a [String],
}
