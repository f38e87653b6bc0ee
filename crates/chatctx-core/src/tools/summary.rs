//! `update_summary` (docs/protocol.md §6.6): the request. Writing the slot (coverage, counts, rendering) is
//! [`crate::summary`].

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::request::{Id, Request, Scope, ScopeUse, scoped_request};
use crate::error::{Error, ErrorCode};
use crate::json::{Fields, object};
use crate::summary::{SummarySource, SummaryWritten};
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
