//! The summary slot of a conversation (docs/protocol.md §6.6): what was said before the selected window, as
//! text with its provenance. The bot writes it (`update_summary`), or the server's background summarizer does
//! through the same tool. It never hides or deletes a message: history selection only starts after the
//! message it covers, and range reads still see everything stored.
//!
//! A conversation is a topic when history is per topic (`history.scope = "topic"`), else the whole chat. The
//! slot holds the newest summary only; its revision counts the writes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::render::PromptMessage;
use crate::time::Timestamp;

crate::vocabulary! {
    /// Who wrote a summary.
    SummarySource {
        /// The bot, through `update_summary`.
        Bot = "bot",
        /// chatctx's background summarizer (`[summary] enabled`).
        Summarizer = "summarizer",
    }
}

/// A conversation's summary and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// The topic whose conversation it summarizes (none: the chat's general conversation, or the whole chat
    /// when history is per chat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The summary.
    pub text: String,
    /// The last message it covers: history selection starts after it.
    pub covers_until_message_id: String,
    /// When that message was sent.
    pub covers_until_at: Timestamp,
    /// How many messages it covers, from the conversation's start.
    pub message_count: u64,
    /// When it was written.
    pub written_at: Timestamp,
    /// Counts the writes to this slot, from 1.
    pub revision: u64,
    /// Who wrote it.
    pub source: SummarySource,
}

/// What `update_summary` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct SummaryWritten {
    /// The summary now in the slot.
    pub summary: Summary,
    /// Whether the call changed it (writing the same text and coverage again changes nothing).
    pub changed: bool,
}

/// What the background summarizer needs for one run: the previous summary, the messages it has not covered
/// yet (rendered, oldest first), the prompt made of them, and what the result will cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryJob {
    /// The conversation's topic (as `update_summary` names it).
    pub topic_id: Option<String>,
    /// The revision the result must find (0: no summary yet).
    pub expected_revision: u64,
    /// The previous summary's text, if any.
    pub previous: Option<String>,
    /// The new messages, rendered as the prompt shows them.
    pub messages: Vec<String>,
    /// The last of them: what the new summary covers up to.
    pub covers_until_message_id: String,
    /// The chat-completions messages to send.
    pub prompt: Vec<PromptMessage>,
}

/// The summarizer's default instructions (`[summary] prompt` replaces them).
pub const DEFAULT_PROMPT: &str = "You keep the running summary of a group chat for an assistant that takes part \
    in it. Fold the new messages into the previous summary and answer with the new summary only: who said \
    what that still matters, what was decided, what is still open, names and numbers exactly as written. Drop \
    small talk. Write plain sentences, at most 200 words.";

/// The system block a summary is rendered as, before the history; the text is cut to `max_tokens`
/// (estimated) when that is set.
pub fn summary_block(s: &Summary, max_tokens: Option<u64>) -> String {
    let mut head = String::with_capacity(s.text.len() + 120);
    head.push_str("Earlier in this conversation (a summary of ");
    head.push_str(&s.message_count.to_string());
    head.push_str(if s.message_count == 1 { " message" } else { " messages" });
    head.push_str(", up to message ");
    head.push_str(&s.covers_until_message_id);
    head.push_str(" sent ");
    s.covers_until_at.write_rfc3339(&mut head);
    head.push_str("):\n");
    // About four bytes per token, less the frame `estimate_tokens` counts.
    let room = max_tokens.map(|max| {
        let bytes = usize::try_from(max.saturating_sub(4).saturating_mul(4)).unwrap_or(usize::MAX);
        bytes.saturating_sub(head.len() + crate::render::ELLIPSIS.len())
    });
    match room {
        Some(room) if s.text.len() > room + crate::render::ELLIPSIS.len() => {
            let mut at = room.min(s.text.len());
            while !s.text.is_char_boundary(at) {
                at -= 1;
            }
            head.push_str(s.text[..at].trim_end());
            head.push_str(crate::render::ELLIPSIS);
        }
        _ => head.push_str(&s.text),
    }
    head
}
