//! The summary slot of a conversation (docs/protocol.md §6.6): what was said before the selected window, as
//! text with its provenance. The bot writes it (`update_summary`), or the server's background summarizer does
//! through the same tool. It never hides or deletes a message: history selection only starts after the
//! message it covers, and range reads still see everything stored.
//!
//! A conversation is a topic when history is per topic (`history.scope = "topic"`), else the whole chat. The
//! slot holds the newest summary only; its revision counts the writes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::chat::{Chat, Item, Key};
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::render::PromptMessage;
use crate::settings::{Scope, Settings};
use crate::time::Timestamp;
use crate::tools::summary::UpdateSummary;

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

impl Chat {
    /// Where a summary's coverage ends: its message's position while the message is stored, else the end of
    /// the second it was sent in.
    pub(crate) fn summary_floor(&self, s: &Summary) -> Key {
        match self.message(&s.covers_until_message_id) {
            Some((_, item)) => item.key(),
            None => (s.covers_until_at, u64::MAX),
        }
    }

    /// The summary of the conversation `topic` belongs to, under `scope`.
    pub(crate) fn summary(&self, scope: Scope, topic: Option<&str>) -> Option<&Summary> {
        self.summaries.get(&slot(scope, topic))
    }

    /// The items of the conversation, oldest first, after `floor` (all without one).
    fn items_after(&self, scope: Scope, topic: Option<&str>, floor: Option<Key>) -> Vec<&Item> {
        let mut items: Vec<&Item> =
            crate::selection::in_scope(self, scope, topic).iter().flat_map(|c| c.after(floor)).collect();
        if scope == Scope::Chat {
            items.sort_by_key(|i| i.key());
        }
        items
    }
}

/// The slot key of `topic`'s conversation: the topic when history is per topic, else the chat's.
pub(crate) fn slot(scope: Scope, topic: Option<&str>) -> Option<String> {
    match scope {
        Scope::Topic => topic.map(str::to_owned),
        Scope::Chat => None,
    }
}

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

impl Engine {
    /// The summary of the conversation `topic` belongs to, if one was written.
    pub fn summary(&self, channel: &str, chat_id: &str, topic: Option<&str>) -> Option<&Summary> {
        self.chat(channel, chat_id)?.summary(self.settings().history.scope, topic)
    }

    /// `update_summary`: writes a conversation's summary. Nothing changes on any error.
    pub fn update_summary(&mut self, req: &UpdateSummary, now: Timestamp) -> Result<SummaryWritten, Error> {
        let (channel, chat_id) = (req.scope.channel.as_str(), req.scope.chat_id.as_str());
        let covers = req.covers_until_message_id.as_str();
        let settings = self.settings();
        let scope = settings.history.scope;
        let text = req.text.trim();
        if text.is_empty() {
            return Err(Error::invalid_request("field `text`: a summary must not be empty"));
        }
        let chars = text.chars().count();
        if chars > settings.summary.max_chars {
            return Err(Error::new(
                ErrorCode::PayloadTooLarge,
                format!("field `text`: {chars} characters, over summary.max_chars ({})", settings.summary.max_chars),
            ));
        }
        let chat = self.chat(channel, chat_id).ok_or_else(|| unknown_chat(chat_id))?;
        let (conv, covered) = chat.message(covers).ok_or_else(|| {
            Error::invalid_request(format!(
                "field `covers_until_message_id`: message {:?} is not stored for chat {}",
                covers, chat_id
            ))
        })?;
        let topic = match (scope, req.scope.topic_id.as_deref()) {
            (Scope::Topic, Some(t)) if conv.topic.as_deref() != Some(t) => {
                return Err(Error::invalid_request(format!(
                    "field `covers_until_message_id`: message {:?} is not in topic {t:?}",
                    covers
                )));
            }
            (Scope::Topic, _) => conv.topic.as_deref().map(str::to_owned),
            (Scope::Chat, _) => None,
        };
        let previous = chat.summaries.get(&topic);
        let revision = previous.map_or(0, |p| p.revision);
        if let Some(expected) = req.expected_revision
            && expected != revision
        {
            return Err(Error::new(
                ErrorCode::RevisionConflict,
                format!("the summary is at revision {revision}, not {expected}"),
            ));
        }
        if let Some(p) = previous
            && p.text == text
            && p.covers_until_message_id == covers
            && p.source == req.source
        {
            return Ok(SummaryWritten { summary: p.clone(), changed: false });
        }
        // Messages from the conversation's start: the previous count plus what is new since it, while the
        // coverage moves forward (older messages may have left the store since); else what is stored.
        let key = covered.key();
        let messages_after = |floor: Option<Key>| {
            let items = chat.items_after(scope, topic.as_deref(), floor);
            items.iter().filter(|i| i.message_id.is_some() && i.key() <= key).count() as u64
        };
        let message_count = match previous.map(|p| (p, chat.summary_floor(p))) {
            Some((p, floor)) if floor < key => p.message_count + messages_after(Some(floor)),
            _ => messages_after(None),
        };
        let summary = Summary {
            topic_id: topic.clone(),
            text: text.to_owned(),
            covers_until_message_id: covers.to_owned(),
            covers_until_at: covered.sent_at,
            message_count,
            written_at: req.now.unwrap_or(now),
            revision: revision + 1,
            source: req.source,
        };
        let (_, chat) = self.with_chat(channel, chat_id);
        chat.summaries.insert(topic, summary.clone());
        Ok(SummaryWritten { summary, changed: true })
    }

    /// Whether the conversation `topic` belongs to holds at least `every` messages its summary does not cover
    /// (the background summarizer's trigger).
    pub fn summary_due(&self, channel: &str, chat_id: &str, topic: Option<&str>, every: usize) -> bool {
        let Some(chat) = self.chat(channel, chat_id) else { return false };
        let scope = self.settings().history.scope;
        let floor = chat.summary(scope, topic).map(|s| chat.summary_floor(s));
        // Counted only as far as `every`: this runs after every ingest while the summarizer is on.
        let mut new = 0;
        for conv in crate::selection::in_scope(chat, scope, topic) {
            new += conv.after(floor).filter(|i| i.message_id.is_some()).take(every - new).count();
            if new >= every {
                return true;
            }
        }
        false
    }

    /// The background summarizer's next run for the conversation `topic` belongs to: the previous summary and
    /// the oldest `max_messages` messages it does not cover, or `None` when there are none. `instructions`
    /// is the system prompt.
    pub fn summary_job(
        &self,
        channel: &str,
        chat_id: &str,
        topic: Option<&str>,
        max_messages: usize,
        instructions: &str,
    ) -> Option<SummaryJob> {
        let chat = self.chat(channel, chat_id)?;
        let settings: &Settings = self.settings();
        let scope = settings.history.scope;
        let previous = chat.summary(scope, topic);
        let floor = previous.map(|s| chat.summary_floor(s));
        let mut items: Vec<&Item> =
            chat.items_after(scope, topic, floor).into_iter().take(max_messages.max(1)).collect();
        // Up to the last message, which is what the result will say it covers (a trailing reaction waits).
        let end = items.iter().rposition(|i| i.message_id.is_some())?;
        items.truncate(end + 1);
        let last = items[end].message_id.as_deref()?;
        let messages: Vec<String> = items.iter().map(|i| crate::render::line(&chat.line(i, 0))).collect();
        let mut user = String::with_capacity(messages.iter().map(|m| m.len() + 1).sum::<usize>() + 200);
        user.push_str("Previous summary:\n");
        user.push_str(previous.map_or("(none yet)", |p| p.text.as_str()));
        user.push_str("\n\nNew messages, oldest first:\n");
        for m in &messages {
            user.push_str(m);
            user.push('\n');
        }
        Some(SummaryJob {
            topic_id: slot(scope, topic),
            expected_revision: previous.map_or(0, |p| p.revision),
            previous: previous.map(|p| p.text.clone()),
            covers_until_message_id: last.to_owned(),
            prompt: vec![
                PromptMessage { role: crate::render::Role::System, content: instructions.to_owned() },
                PromptMessage { role: crate::render::Role::User, content: user },
            ],
            messages,
        })
    }
}
