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

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use chatctx_core::ErrorCode;
use chatctx_core::summary::SummarySource;
use chatctx_core::tools::summary::UpdateSummary;
use chatctx_core::tools::{Scope, ToolCall};

use crate::config::SummarizerSettings;
use crate::service::Service;
use crate::triage::HttpTriage;

/// A conversation: channel, chat, and topic (as the engine names its summary slot).
pub type Conversation = (String, String, Option<String>);

/// How runs ended, for `/metrics`.
#[derive(Default)]
struct Counts {
    written: AtomicU64,
    unchanged: AtomicU64,
    failed: AtomicU64,
    conflicts: AtomicU64,
    skipped: AtomicU64,
}

/// The queue of conversations due for a run, and the model client.
pub struct Summarizer {
    settings: SummarizerSettings,
    model: HttpTriage,
    waiting: Mutex<Waiting>,
    wake: Condvar,
    counts: Counts,
}

#[derive(Default)]
struct Waiting {
    queue: VecDeque<Conversation>,
    queued: HashSet<Conversation>,
    stopped: bool,
}

impl Summarizer {
    /// A summarizer on `model`.
    pub fn new(settings: SummarizerSettings, model: HttpTriage) -> Self {
        Self { settings, model, waiting: Mutex::default(), wake: Condvar::new(), counts: Counts::default() }
    }

    /// `every_n_messages`.
    pub fn every(&self) -> usize {
        self.settings.every_n_messages
    }

    /// Queues a conversation that is due, unless it waits already; a full queue skips it (counted), and the
    /// next message in it queues it again.
    pub fn enqueue(&self, conv: Conversation) {
        let Ok(mut w) = self.waiting.lock() else { return };
        if w.queued.contains(&conv) {
            return;
        }
        if w.queue.len() >= self.settings.queue {
            self.counts.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        w.queued.insert(conv.clone());
        w.queue.push_back(conv);
        self.wake.notify_one();
    }

    /// Whether conversations wait (tests and shutdown).
    pub fn idle(&self) -> bool {
        self.waiting.lock().map(|w| w.queue.is_empty()).unwrap_or(true)
    }

    /// Stops the worker after its current run.
    pub fn stop(&self) {
        if let Ok(mut w) = self.waiting.lock() {
            w.stopped = true;
        }
        self.wake.notify_all();
    }

    /// The next conversation to run, waiting for one; `None` once stopped or once `alive` says the service is
    /// gone.
    fn next(&self, alive: impl Fn() -> bool) -> Option<Conversation> {
        let mut w = self.waiting.lock().ok()?;
        loop {
            if w.stopped || !alive() {
                return None;
            }
            if let Some(conv) = w.queue.pop_front() {
                w.queued.remove(&conv);
                return Some(conv);
            }
            w = self.wake.wait_timeout(w, Duration::from_secs(1)).ok()?.0;
        }
    }

    /// Starts the worker thread. It holds the service weakly and ends when the service is dropped or
    /// [`Summarizer::stop`] is called.
    pub fn start(self: &Arc<Self>, service: Weak<Service>) -> std::io::Result<std::thread::JoinHandle<()>> {
        let me = self.clone();
        std::thread::Builder::new().name("chatctx-summarizer".to_owned()).spawn(move || {
            while let Some(conv) = me.next(|| service.strong_count() > 0) {
                let Some(svc) = service.upgrade() else { return };
                me.run(&svc, &conv);
            }
        })
    }

    /// One run for `conv`: read the job, ask the model, write the answer.
    fn run(&self, svc: &Service, conv: &Conversation) {
        let (channel, chat_id, topic) = conv;
        let s = &self.settings;
        let job = svc.read_chat(channel, chat_id, |e| {
            e.summary_job(channel, chat_id, topic.as_deref(), s.max_input_messages, &s.prompt)
        });
        let Ok(Some(job)) = job else { return };
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
                self.counts.written.fetch_add(1, Ordering::Relaxed);
                tracing::info!(chat = %chat_id, topic = ?topic, revision = w.summary.revision,
                    covers = w.summary.message_count, "summary written");
            }
            Ok(_) => {
                self.counts.unchanged.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) if e.code == ErrorCode::RevisionConflict => {
                self.counts.conflicts.fetch_add(1, Ordering::Relaxed);
                tracing::info!(chat = %chat_id, topic = ?topic, "summary changed during the run; result dropped");
            }
            Err(e) => return self.failed(conv, &e.message),
        }
        // More may have come in while the model wrote.
        if svc.read_chat(channel, chat_id, |e| e.summary_due(channel, chat_id, topic.as_deref(), s.every_n_messages))
            == Ok(true)
        {
            self.enqueue(conv.clone());
        }
    }

    fn failed(&self, (_, chat_id, topic): &Conversation, why: &str) {
        self.counts.failed.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(chat = %chat_id, topic = ?topic, "summary not written, the previous one stays: {why}");
    }

    /// The counters in the Prometheus text format.
    pub fn metrics(&self) -> String {
        let c = &self.counts;
        let mut out = String::from(
            "# HELP chatctx_summary_runs_total Background summarizer runs, by outcome.\n\
             # TYPE chatctx_summary_runs_total counter\n",
        );
        for (outcome, n) in [
            ("written", &c.written),
            ("unchanged", &c.unchanged),
            ("failed", &c.failed),
            ("conflict", &c.conflicts),
            ("skipped_queue_full", &c.skipped),
        ] {
            out.push_str(&format!(
                "chatctx_summary_runs_total{{outcome=\"{outcome}\"}} {}\n",
                n.load(Ordering::Relaxed)
            ));
        }
        let waiting = self.waiting.lock().map(|w| w.queue.len()).unwrap_or(0);
        out.push_str(&format!(
            "# HELP chatctx_summary_queue Conversations waiting for a summarizer run.\n\
             # TYPE chatctx_summary_queue gauge\nchatctx_summary_queue {waiting}\n"
        ));
        out
    }
}
