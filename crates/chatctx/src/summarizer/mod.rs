//! The background summarizer (`[summary] enabled`, docs/protocol.md §6.6): once a conversation holds
//! `every_n_messages` messages its summary does not cover, one worker thread asks the `[llm]` endpoint to fold
//! them into the previous summary, and writes the answer through `update_summary`, like a bot would: durable,
//! logged, and replayed from the log without a model.
//!
//! It runs off the request path: an ingest only checks whether a conversation is due and queues it (at most
//! `queue` conversations wait; each waits once). It never deletes or hides a message, and it fails open: on an
//! error or a timeout the previous summary stays and the failure is counted (`/metrics`). A run that finds the
//! summary changed meanwhile (the bot wrote one, or another instance did) is refused by `expected_revision` and
//! counted as a conflict.
//!
//! The service holds only the [`SummaryQueue`]; `main` starts the summarizer beside the service
//! ([`Summarizer::start`]), and its thread holds the service weakly, so neither owns the other.

pub mod queue;

use std::sync::{Arc, Weak};
use std::time::Duration;

use chatctx_core::ErrorCode;
use chatctx_core::summary::SummarySource;
use chatctx_core::tools::summary::UpdateSummary;
use chatctx_core::tools::{Scope, ToolCall};

pub use queue::{Conversation, Outcome, SummaryQueue};

use crate::config::{LlmSettings, SummarizerSettings};
use crate::service::Service;
use crate::triage::HttpTriage;

/// The background summarizer: its settings, the model client, and the queue it takes conversations from.
pub struct Summarizer {
    settings: SummarizerSettings,
    model: HttpTriage,
    queue: Arc<SummaryQueue>,
}

impl Summarizer {
    /// A summarizer on `model`, with a queue of its own.
    pub fn new(settings: SummarizerSettings, model: HttpTriage) -> Self {
        let queue = Arc::new(SummaryQueue::new(settings.every_n_messages, settings.queue));
        Self { settings, model, queue }
    }

    /// The summarizer `[summary]` configures on the `[llm]` endpoint, or `None` while it is off.
    pub fn from_settings(settings: SummarizerSettings, llm: &LlmSettings) -> anyhow::Result<Option<Self>> {
        if !settings.enabled {
            return Ok(None);
        }
        let model = HttpTriage::from_settings(llm)?
            .ok_or_else(|| anyhow::anyhow!("summary.enabled: the summarizer needs llm.base_url"))?;
        Ok(Some(Self::new(settings, model)))
    }

    /// The queue, for the service to fill ([`Service::with_summaries`]).
    pub fn queue(&self) -> Arc<SummaryQueue> {
        self.queue.clone()
    }

    /// Starts the worker thread on `service`. It holds the service weakly and ends when the service is dropped
    /// or the queue is stopped ([`SummaryQueue::stop`]).
    pub fn start(self, service: &Arc<Service>) -> std::io::Result<std::thread::JoinHandle<()>> {
        let service: Weak<Service> = Arc::downgrade(service);
        std::thread::Builder::new().name("chatctx-summarizer".to_owned()).spawn(move || {
            while let Some(conv) = self.queue.next(|| service.strong_count() > 0) {
                let Some(svc) = service.upgrade() else { return };
                let answered = self.run(&svc, &conv);
                self.queue.done(&conv);
                // More may have come in while the model wrote: queued again only when due.
                let (channel, chat_id, topic) = &conv;
                let every = self.settings.every_n_messages;
                if answered
                    && svc.read_chat(channel, chat_id, |e| e.summary_due(channel, chat_id, topic.as_deref(), every))
                        == Ok(true)
                {
                    self.queue.enqueue(conv);
                }
            }
        })
    }

    /// One run for `conv`: read the job, ask the model, write the answer. Whether the model answered (so more
    /// that came in meanwhile may be run at once; after a failure the next message queues it again).
    fn run(&self, svc: &Service, conv: &Conversation) -> bool {
        let (channel, chat_id, topic) = conv;
        let s = &self.settings;
        // Queued when it was due; a run since (or the bot's own summary) may have covered it meanwhile.
        let due = |e: &chatctx_core::Engine| e.summary_due(channel, chat_id, topic.as_deref(), s.every_n_messages);
        if svc.read_chat(channel, chat_id, due) != Ok(true) {
            return false;
        }
        let job = svc.read_chat(channel, chat_id, |e| {
            e.summary_job(channel, chat_id, topic.as_deref(), s.max_input_messages, &s.prompt)
        });
        let Ok(Some(job)) = job else { return false };
        let budget = Duration::from_secs(u64::try_from(s.timeout.secs()).unwrap_or(60));
        let text = match self.model.complete(&s.model, &job.prompt, Some(s.max_tokens), budget) {
            Ok(text) if !text.trim().is_empty() => text,
            Ok(_) => return self.failed(conv, "the model answered an empty summary"),
            Err(e) => return self.failed(conv, &e),
        };
        let max = svc.read(|e| e.settings().summary.max_chars).unwrap_or(8_000);
        let text: String = text.trim().chars().take(max).collect();
        let call = ToolCall::UpdateSummary(UpdateSummary {
            scope: Scope { channel: channel.clone(), topic_id: job.topic_id.clone(), ..Scope::chat(chat_id.clone()) },
            text,
            covers_until_message_id: job.covers_until_message_id,
            expected_revision: Some(job.expected_revision),
            source: SummarySource::Summarizer,
            now: None,
        });
        match svc.call(&call, crate::clock::now()) {
            Ok(chatctx_core::tools::ToolResponse::Summary(w)) if w.changed => {
                self.queue.count(Outcome::Written);
                tracing::info!(chat = %chat_id, topic = ?topic, revision = w.summary.revision,
                    covers = w.summary.message_count, "summary written");
            }
            Ok(_) => {
                self.queue.count(Outcome::Unchanged);
            }
            Err(e) if e.code == ErrorCode::RevisionConflict => {
                self.queue.count(Outcome::Conflict);
                tracing::info!(chat = %chat_id, topic = ?topic, "summary changed during the run; result dropped");
            }
            Err(e) => return self.failed(conv, &e.message),
        }
        true
    }

    /// Counts and logs a failed run; `false`, as [`Summarizer::run`] answers then.
    fn failed(&self, (_, chat_id, topic): &Conversation, why: &str) -> bool {
        self.queue.count(Outcome::Failed);
        tracing::warn!(chat = %chat_id, topic = ?topic, "summary not written, the previous one stays: {why}");
        false
    }
}
