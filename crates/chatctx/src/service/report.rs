//! What an ingest answers: the inputs accepted (with what the mapping decided of each message) and rejected.

use chatctx_core::{Error, ErrorCode};
use schemars::JsonSchema;
use serde::Serialize;

/// One rejected input of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "chatctx_core::wire")]
pub struct Rejection {
    /// Position in the batch, from 0.
    pub index: usize,
    /// The error code.
    pub code: ErrorCode,
    /// What was wrong.
    pub message: String,
}

/// What the mapping decided for one accepted input that holds a message.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "chatctx_core::wire")]
pub struct Decision {
    /// Position in the batch, from 0.
    pub index: usize,
    /// The message's id.
    pub message_id: String,
    /// `inbound_user`, `outbound_agent` or `system`.
    #[schemars(with = "String")]
    pub kind: chatctx_core::event::MessageKind,
    /// Whether it addresses the bot (so a bot may use this decision instead of making its own).
    pub triggered_agent: bool,
}

/// What an ingest accepted and rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "chatctx_core::wire")]
pub struct IngestReport {
    /// Inputs accepted (and durable).
    pub accepted: usize,
    /// For each accepted input that holds a message: its kind and whether it triggers the bot.
    pub decisions: Vec<Decision>,
    /// Telegram update kinds that were received but have no meaning here (inline queries, callback queries,
    /// …), counted: accepted, and nothing stored.
    pub ignored: usize,
    /// The ignored kinds and how often (for metrics; not in the answer).
    #[serde(skip)]
    #[schemars(skip)]
    pub ignored_kinds: std::collections::BTreeMap<String, usize>,
    /// The rejected inputs, the first `server.max_rejections` of them.
    pub rejected: Vec<Rejection>,
    /// How many inputs were rejected in all (more than `rejected` lists when the list was cut).
    pub rejected_count: usize,
}

impl IngestReport {
    pub(super) fn reject(&mut self, index: usize, e: Error) {
        self.rejected_count += 1;
        self.rejected.push(Rejection { index, code: e.code, message: e.message });
    }

    /// Keeps the first `max` rejections listed (the count stays whole).
    pub fn cap_rejections(&mut self, max: usize) {
        self.rejected.truncate(max);
    }

    /// Adds what the mapping decided for the inputs that were accepted.
    pub(super) fn note(&mut self, notes: Vec<Note>) {
        let rejected: std::collections::HashSet<usize> = self.rejected.iter().map(|r| r.index).collect();
        self.decisions.reserve(notes.iter().map(|n| n.messages.len()).sum());
        for (index, note) in notes.into_iter().enumerate().filter(|(i, _)| !rejected.contains(i)) {
            for kind in note.ignored {
                self.ignored += 1;
                *self.ignored_kinds.entry(kind).or_default() += 1;
            }
            self.decisions.extend(note.messages.into_iter().map(|(message_id, kind, triggered_agent)| Decision {
                index,
                message_id,
                kind,
                triggered_agent,
            }));
        }
    }
}

/// What decoding one input decided, reported once it is accepted.
#[derive(Debug, Default)]
pub(super) struct Note {
    pub(super) ignored: Vec<String>,
    pub(super) messages: Vec<(String, chatctx_core::event::MessageKind, bool)>,
}
