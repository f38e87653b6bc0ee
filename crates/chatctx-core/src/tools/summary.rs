//! `update_summary` (docs/protocol.md §6.6): the request. Writing the slot (coverage, counts, rendering) is
//! [`crate::summary`].

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::request::{Id, Request, Scope, ScopeUse, scoped_request};
use crate::chat::{Item, Key, slot};
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::json::{Fields, object};
use crate::render::PromptMessage;
use crate::settings::{Scope as HistoryScope, Settings};
use crate::summary::{Summary, SummaryJob, SummarySource, SummaryWritten};
use crate::time::Timestamp;

const RQ: ErrorCode = ErrorCode::InvalidRequest;

/// `update_summary`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct UpdateSummary {
    /// The chat, and the topic whose conversation it summarizes (default: the covered message's).
    #[serde(flatten)]
    pub scope: Scope,
    /// The summary (at most `summary.max_chars` characters).
    pub text: String,
    /// The last message the summary covers; it must be stored. History selection starts after it.
    #[schemars(with = "Id")]
    pub covers_until_message_id: String,
    /// Refuse with revision_conflict unless the summary is at this revision (0: none written yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<u64>,
    /// Who wrote it: `bot` (default) or `summarizer` (chatctx's background job).
    #[serde(default = "bot", skip_serializing_if = "is_bot")]
    pub source: SummarySource,
    /// The time of the write; default the server's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<Timestamp>,
}

fn bot() -> SummarySource {
    SummarySource::Bot
}

fn is_bot(s: &SummarySource) -> bool {
    *s == SummarySource::Bot
}

impl Request for UpdateSummary {
    const NAME: &'static str = "update_summary";
    const DESCRIPTION: &'static str = "Write the conversation's summary: what was said up to a message, for the \
        prompt's \"Earlier in this conversation\" block. History selection then starts after that message. A \
        stale expected_revision is refused with revision_conflict.";
    const SCOPE: ScopeUse = ScopeUse { reads: &["channel", "chat_id", "topic_id"], requires: &[] };
    type Response = SummaryWritten;

    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        Ok(Self {
            scope: Scope::decode(&f, Self::SCOPE, defaults)?,
            text: f.str("text")?.ok_or_else(|| f.err("text", "is required"))?.to_owned(),
            covers_until_message_id: f.req_id("covers_until_message_id")?,
            expected_revision: super::state::u64_field(&f, "expected_revision")?,
            source: f.word("source")?.unwrap_or_else(bot),
            now: f.time("now")?,
        })
    }

    scoped_request!(now);
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
            (HistoryScope::Topic, Some(t)) if conv.topic.as_deref() != Some(t) => {
                return Err(Error::invalid_request(format!(
                    "field `covers_until_message_id`: message {:?} is not in topic {t:?}",
                    covers
                )));
            }
            (HistoryScope::Topic, _) => conv.topic.as_deref().map(str::to_owned),
            (HistoryScope::Chat, _) => None,
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
        for conv in crate::chat::in_scope(chat, scope, topic) {
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
