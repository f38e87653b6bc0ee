//! The conversations waiting for a summarizer run: bounded (`[summary] queue`), each waiting once, and the
//! counts of how runs ended. The service holds it and queues what is due after an ingest; the summarizer's
//! thread takes from it. It knows neither.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// A conversation: channel, chat, and topic (as the engine names its summary slot).
pub type Conversation = (String, String, Option<String>);

/// How a run ended, for `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A new summary was written.
    Written,
    /// The model's summary was the one already kept.
    Unchanged,
    /// The model failed or answered nothing; the previous summary stays.
    Failed,
    /// The summary changed during the run; the result was dropped.
    Conflict,
}

/// How runs ended, for `/metrics`.
#[derive(Default)]
struct Counts {
    written: AtomicU64,
    unchanged: AtomicU64,
    failed: AtomicU64,
    conflicts: AtomicU64,
    skipped: AtomicU64,
}

#[derive(Default)]
struct Waiting {
    queue: VecDeque<Conversation>,
    /// Waiting or running: a conversation is queued once, and not again while its run is under way (the run
    /// looks again when it ends).
    queued: HashSet<Conversation>,
    stopped: bool,
}

/// The queue of conversations due for a summary.
pub struct SummaryQueue {
    every: usize,
    capacity: usize,
    waiting: Mutex<Waiting>,
    wake: Condvar,
    counts: Counts,
}

impl SummaryQueue {
    /// A queue of at most `capacity` conversations, each due once it holds `every` messages its summary does not
    /// cover.
    pub fn new(every: usize, capacity: usize) -> Self {
        Self { every, capacity, waiting: Mutex::default(), wake: Condvar::new(), counts: Counts::default() }
    }

    /// `every_n_messages`.
    pub fn every(&self) -> usize {
        self.every
    }

    /// Queues a conversation that is due, unless it waits already; a full queue skips it (counted), and the
    /// next message in it queues it again.
    pub fn enqueue(&self, conv: Conversation) {
        let Ok(mut w) = self.waiting.lock() else { return };
        if w.queued.contains(&conv) {
            return;
        }
        if w.queue.len() >= self.capacity {
            self.counts.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        w.queued.insert(conv.clone());
        w.queue.push_back(conv);
        self.wake.notify_one();
    }

    /// Whether no conversation waits (tests and shutdown).
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
    pub fn next(&self, alive: impl Fn() -> bool) -> Option<Conversation> {
        let mut w = self.waiting.lock().ok()?;
        loop {
            if w.stopped || !alive() {
                return None;
            }
            if let Some(conv) = w.queue.pop_front() {
                return Some(conv);
            }
            w = self.wake.wait_timeout(w, Duration::from_secs(1)).ok()?.0;
        }
    }

    /// Ends `conv`'s run: it may be queued again.
    pub fn done(&self, conv: &Conversation) {
        if let Ok(mut w) = self.waiting.lock() {
            w.queued.remove(conv);
        }
    }

    /// Counts a run's outcome.
    pub fn count(&self, outcome: Outcome) {
        let c = &self.counts;
        let n = match outcome {
            Outcome::Written => &c.written,
            Outcome::Unchanged => &c.unchanged,
            Outcome::Failed => &c.failed,
            Outcome::Conflict => &c.conflicts,
        };
        n.fetch_add(1, Ordering::Relaxed);
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
