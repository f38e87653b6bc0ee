//! The service core shared by the HTTP and MCP front ends: one engine, and a store that makes every
//! acknowledged change durable before the answer.
//!
//! Writes are logged as replay lines ([`crate::logline::LogLine`]): decoded events, `update_scenario` / `revert_scenario` calls
//! with their time fixed, the `resolved` activations that resolution records, and conversation imports. On
//! start the log is replayed into a fresh engine. The log stays proportional to the live state: once a chat
//! has logged twice what its history holds, its lines are replaced by one `import` of its exported document
//! (exact, so nothing changes on restart).
//!
//! How a change becomes durable depends on the store, and is decided once, when the service opens it:
//! - `local`: a store this process alone writes (SQLite, memory), through group commit;
//! - `shared`: a store several instances write at once (PostgreSQL), whose engine is a cache kept coherent
//!   per chat by position.
//!
//! This module is the facade both share: the public entry points, and the pieces of a write that do not
//! depend on the strategy (decoding inputs, the log lines of calls and events, rebuilding from the store).

mod checks;
mod input;
mod local;
mod log;
mod overdue;
mod report;
mod shared;

pub use local::StopSnapshots;
pub use log::{Damaged, find_damaged};
pub use report::{Decision, IngestReport, Rejection};

use std::sync::Arc;

use chatctx_core::settings::Scope;
use chatctx_core::tools::{ToolCall, ToolResponse};
use chatctx_core::transfer::ConversationDoc;
use chatctx_core::{Engine, Error, Event, Settings, Timestamp};
use chatctx_store::Opened;
use serde_json::Value;

use crate::config::LlmSettings;
use crate::ingest::Decode;
use crate::summarizer::queue::SummaryQueue;
use crate::triage::Answered;

use input::Staged;
use log::internal;

/// The running service.
pub struct Service {
    durability: Durability,
    /// The decision records of recent answers (`[decisions]`).
    decisions: crate::decisions::Decisions,
    /// Model triage, when configured: asked before the engine is locked (see [`Service::call`]).
    triage: Option<Arc<Answered>>,
    /// The conversations due for a summary, when the background summarizer is on ([`Service::with_summaries`]).
    summaries: Option<Arc<SummaryQueue>>,
    /// Large ingest batches applied at once, off the async threads: one per core ([`Service::ingest_async`]).
    appliers: Arc<tokio::sync::Semaphore>,
}

/// How changes become durable: chosen once, from the store the service was opened on.
#[allow(clippy::large_enum_variant)] // one per process
enum Durability {
    /// A store this process alone writes.
    Local(Arc<local::Local>),
    /// A store other instances write too (shared with the blocking threads a call or an ingest moves to).
    Shared(Arc<shared::Shared>),
}

/// Which chats (channel, chat id) a credential may write, shared with the thread that applies its inputs.
pub type Allowed = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// An ingest on a local store, applied and queued but not yet durable.
struct Queued {
    report: IngestReport,
    /// What to wait on before answering, when anything was accepted.
    ticket: Option<local::Ticket>,
    notes: Vec<report::Note>,
    /// The conversations it wrote to, which may be due a summary once it is durable.
    convs: Vec<(String, String, Option<String>)>,
}

/// Ingest batches up to this many inputs are applied on the async caller's thread (a few microseconds each, so
/// about a millisecond at most); larger ones on a blocking thread, at most one per core at a time. On a few
/// cores, more threads applying batches than cores took turns with the one writing to the store: with 16
/// clients sending 100 events each (then all on blocking threads) the writer was on a core for only about half
/// of the time it was busy, and durable ingest was ~20 % slower (docs/benchmarks-issue-32.md).
const INLINE_INPUTS: usize = 256;

/// The cores this process may use, asked once: the answer reads the process's CPU quota from files.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Operations a chat may log before its log is replaced by a snapshot: what one of its conversations holds
/// (at least 200), so the log stays proportional to the live state. Twice that (the default before issue 32)
/// made each compaction delete twice as many rows at once, a longer write for the requests it carries, for no
/// gain in ingest rate, a larger file and a longer restart (docs/benchmarks-issue-32.md). With 1,000 chats and
/// 1,000,000 messages ingested, restart replays about 140,000 operations.
fn snapshot_every(settings: &Settings, options: &Options) -> u64 {
    match options.compact_after {
        0 => (settings.conversation.cache_max_per_conversation as u64).max(200),
        n => n,
    }
}

/// How the service keeps its store, beyond the engine's settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `store.compact_after`: operations a chat may log before its log is replaced by a snapshot; 0 chooses
    /// what one of its conversations holds, at least 200.
    pub compact_after: u64,
}

impl Service {
    /// Opens the service on `store`, rebuilding the state it holds. Returns how many operations were replayed.
    pub fn open(settings: Settings, llm: LlmSettings, store: Opened) -> anyhow::Result<(Self, u64)> {
        Self::open_with(settings, llm, store, Options::default())
    }

    /// As [`Service::open`], with `options`.
    pub fn open_with(
        settings: Settings,
        llm: LlmSettings,
        store: Opened,
        options: Options,
    ) -> anyhow::Result<(Self, u64)> {
        let every = snapshot_every(&settings, &options);
        let decisions = crate::decisions::Decisions::new(&settings.decisions);
        let triage = crate::triage::HttpTriage::from_settings(&llm)?.map(|t| Arc::new(Answered::new(t)));
        let (durability, read) = match store {
            Opened::Local(log) => {
                let (local, read) = local::Local::open(log, settings, triage.clone(), every)?;
                (Durability::Local(Arc::new(local)), read)
            }
            Opened::Shared(log) => {
                let (shared, read) = shared::Shared::open(log, settings, triage.clone(), every)?;
                (Durability::Shared(Arc::new(shared)), read)
            }
        };
        let appliers = Arc::new(tokio::sync::Semaphore::new(cores()));
        Ok((Self { durability, triage, decisions, summaries: None, appliers }, read))
    }

    /// Queues the conversations due for a summary after each ingest, for the background summarizer
    /// ([`crate::summarizer::Summarizer`]) to take.
    pub fn with_summaries(mut self, queue: Arc<SummaryQueue>) -> Self {
        self.summaries = Some(queue);
        self
    }

    /// The summary queue, when the summarizer is on.
    pub fn summary_queue(&self) -> Option<&SummaryQueue> {
        self.summaries.as_deref()
    }

    /// The conversations an ingest's messages went to, for the summarizer (nothing without one).
    fn conversations(&self, decoded: &[Staged]) -> Vec<(String, String, Option<String>)> {
        if self.summaries.is_none() {
            return Vec::new();
        }
        let mut out: Vec<_> = decoded
            .iter()
            .filter_map(|i| i.as_ref().ok())
            .flat_map(|(events, _)| events.iter())
            .filter_map(|e| match e {
                Event::Message(m) => Some((m.channel.clone(), m.chat_id.clone(), m.topic_id.clone())),
                _ => None,
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Queues the conversations of `convs` that are due for a summary (off the request path: the run itself
    /// happens on the summarizer's thread).
    fn queue_due(&self, convs: Vec<(String, String, Option<String>)>) {
        let Some(s) = &self.summaries else { return };
        if convs.is_empty() {
            return;
        }
        let due = self.read(|e| {
            let scope = e.settings().history.scope;
            convs
                .into_iter()
                .filter(|(ch, chat, topic)| e.summary_due(ch, chat, topic.as_deref(), s.every()))
                .map(|(ch, chat, topic)| (ch, chat, if scope == Scope::Topic { topic } else { None }))
                .collect::<Vec<_>>()
        });
        for conv in due.unwrap_or_default() {
            s.enqueue(conv);
        }
    }

    /// Ingests a batch of raw events (docs/protocol.md §3, including `telegram_update`). Each is accepted or
    /// rejected on its own; the accepted ones are durable when this returns.
    pub fn ingest(&self, inputs: &[Value], now: Timestamp) -> Result<IngestReport, Error> {
        self.ingest_for(inputs, now, &|_, _| true)
    }

    /// As [`Service::ingest`], refusing (`forbidden_scope`) inputs that touch a chat `allowed` rejects.
    pub fn ingest_for<I: Decode>(
        &self,
        inputs: &[I],
        now: Timestamp,
        allowed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<IngestReport, Error> {
        let local = match &self.durability {
            Durability::Local(local) => local,
            Durability::Shared(shared) => {
                return self.ingest_shared(shared, input::decode_inputs(inputs, now), allowed);
            }
        };
        let mut queued =
            self.ingest_queued(local, inputs.iter().map(|v| v.decode_fresh(now)), inputs.len(), allowed)?;
        if let Some(t) = queued.ticket.take() {
            local.wait_durable(t)?;
        }
        Ok(self.ingested(queued))
    }

    /// Ingests decoded inputs into a shared store; the accepted ones are durable when this returns.
    fn ingest_shared(
        &self,
        shared: &shared::Shared,
        (decoded, notes): (Vec<input::Staged>, Vec<report::Note>),
        allowed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<IngestReport, Error> {
        self.forget_records_of(&decoded);
        let convs = self.conversations(&decoded);
        let report = shared.ingest(decoded, allowed)?;
        Ok(self.ingested(Queued { report, ticket: None, notes, convs }))
    }

    /// Answers a tool call; the changes it makes (state updates, recorded resolutions) are durable first.
    pub fn call(&self, call: &ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        if let Some(t) = &self.triage {
            self.ask_model_unlocked(t, call);
        }
        match &self.durability {
            Durability::Local(l) => l.call(call, now),
            Durability::Shared(s) => s.call(call, now),
        }
    }

    /// Model triage without the engine's lock: the engine names the triage the call would make, the model
    /// answers while other calls go on, and the call then finds the answer waiting. If the chat changed in
    /// between, the call asks the model again itself (with the lock held), so the answer is always the one
    /// for the state the call sees.
    fn ask_model_unlocked(&self, triage: &Answered, call: &ToolCall) {
        let ToolCall::GetChatHistoryContext(req) = call else { return };
        if let Ok(Ok(Some(request))) = self.read(|engine| engine.pending_triage(req)) {
            triage.ask(request);
        }
    }

    /// [`Service::call`] for async front ends (HTTP, MCP): the call is durable in the store's log before it is
    /// answered (its log line is the front end's: [`crate::call::log_call`]). Without triage a call takes
    /// microseconds, so it runs on the caller's thread and only a wait for the disk (when the call changed
    /// something) moves to a blocking thread; with triage a call may wait on the model (without holding the
    /// engine: [`Service::call`]), so all of it runs on a blocking thread. On a shared store, a read of a chat
    /// no other instance changed meanwhile waits on the database without a thread of its own; anything else
    /// waits on it holding the chat's lock, so off the async threads.
    pub async fn call_logged(self: &Arc<Self>, call: &ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        let unfinished = |e: tokio::task::JoinError| internal(format!("the call did not finish: {e}"));
        match &self.durability {
            _ if self.triage.is_some() => {
                let svc = self.clone();
                let call = call.clone();
                tokio::task::spawn_blocking(move || svc.call(&call, now)).await.map_err(unfinished).and_then(|r| r)
            }
            Durability::Shared(shared) => match shared.read_unchanged(call, now).await.transpose() {
                Some(read) => read,
                None => {
                    // What is left is a write, or a read of a chat with news: the write path serves both (a read
                    // appends nothing), without looking for news a second time first.
                    let (shared, call) = (shared.clone(), call.clone());
                    tokio::task::spawn_blocking(move || shared.call_as_write(&call, now))
                        .await
                        .map_err(unfinished)
                        .and_then(|r| r)
                }
            },
            Durability::Local(local) => match local.call_queued(call, now) {
                Ok((answer, None)) => Ok(answer),
                Ok((answer, Some(ticket))) => local.durable(ticket).await.map(|()| answer),
                Err(e) => Err(e),
            },
        }
    }

    /// [`Service::ingest_for`] for async front ends: on a local store the inputs are applied on the caller's
    /// thread (a batch past `INLINE_INPUTS` on a blocking one, one per core at a time) and the wait for the
    /// disk takes no thread of its own, so a burst of writers shares few threads and each write takes in
    /// everything queued meanwhile.
    pub async fn ingest_async<I: Decode>(
        self: &Arc<Self>,
        inputs: Vec<I>,
        now: Timestamp,
        allowed: Allowed,
    ) -> Result<IngestReport, Error> {
        let local = match &self.durability {
            Durability::Local(local) => local,
            Durability::Shared(shared) => {
                let (svc, shared) = (self.clone(), shared.clone());
                return tokio::task::spawn_blocking(move || {
                    svc.ingest_shared(&shared, input::take_inputs(inputs, now), &*allowed)
                })
                .await
                .map_err(|e| internal(format!("the ingest did not finish: {e}")))?;
            }
        };
        let len = inputs.len();
        let mut queued = if len <= INLINE_INPUTS {
            self.ingest_queued(local, inputs.into_iter().map(|v| v.into_fresh(now)), len, &*allowed)?
        } else {
            // Held by the work itself, so a request given up meanwhile does not free its place early.
            let slot = self.appliers.clone().acquire_owned().await.map_err(|_| internal("the service is closing"))?;
            let (svc, local) = (self.clone(), local.clone());
            tokio::task::spawn_blocking(move || {
                let queued = svc.ingest_queued(&local, inputs.into_iter().map(|v| v.into_fresh(now)), len, &*allowed);
                drop(slot);
                queued
            })
            .await
            .map_err(|e| internal(format!("the ingest did not finish: {e}")))??
        };
        if let Some(t) = queued.ticket.take() {
            local.durable(t).await?;
        }
        Ok(self.ingested(queued))
    }

    /// An ingest's report once it is durable; its conversations due a summary are queued for one.
    fn ingested(&self, queued: Queued) -> IngestReport {
        let Queued { mut report, notes, convs, .. } = queued;
        report.note(notes);
        self.queue_due(convs);
        report
    }

    /// The first half of an ingest on a local store: inputs decoded and applied, their lines queued for the next
    /// write. A large batch is staged on a second core as the engine applies it ([`input::stage_and_apply`]).
    fn ingest_queued(
        &self,
        local: &local::Local,
        decoded: impl Iterator<Item = Result<chatctx_platforms::Mapped, Error>> + Send,
        inputs: usize,
        allowed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<Queued, Error> {
        let convs = std::sync::Mutex::new(Vec::new());
        let each = |chunk: &[Staged]| {
            self.forget_records_of(chunk);
            let mut mine = self.conversations(chunk);
            if let Ok(mut all) = convs.lock() {
                all.append(&mut mine);
            }
        };
        let (applied, notes) =
            input::stage_and_apply(decoded, inputs, &each, |staged| local.ingest_queued(staged, inputs, allowed));
        let (report, ticket) = applied?;
        let mut convs = convs.into_inner().unwrap_or_default();
        convs.sort();
        convs.dedup();
        Ok(Queued { report, ticket, notes, convs })
    }

    /// Loads a conversation document (replacing that chat) durably.
    pub fn import(&self, doc: &ConversationDoc) -> Result<(), Error> {
        match &self.durability {
            Durability::Local(l) => l.import(doc),
            Durability::Shared(s) => s.import(doc),
        }
    }

    /// Retention by age: forgets every history item sent more than `max_age` before `now`, in memory and
    /// in the store (each changed chat's log is replaced by a snapshot of what is left). How many items.
    pub fn expire(&self, max_age: chatctx_core::time::Span, now: Timestamp) -> Result<usize, Error> {
        let cutoff = now.plus(chatctx_core::time::Span::from_secs(-max_age.secs()));
        self.decisions.forget_before(cutoff);
        match &self.durability {
            Durability::Local(l) => l.expire(cutoff),
            Durability::Shared(s) => s.expire(cutoff),
        }
    }

    /// Decision records hold the text of the messages they were answered from: an edit or a deletion of one
    /// drops the records that hold it (a lookup per message, nothing when none does).
    fn forget_records_of(&self, staged: &[input::Staged]) {
        if !self.decisions.enabled() {
            return;
        }
        let events = staged.iter().filter_map(|s| s.as_ref().ok()).flat_map(|(events, _)| events);
        let messages = events.clone().filter_map(|e| match e {
            Event::Message(m) => Some((&*m.channel, &*m.chat_id, &*m.message_id)),
            _ => None,
        });
        let deleted = events
            .filter_map(|e| match e {
                Event::Delete(d) => Some(d),
                _ => None,
            })
            .flat_map(|d| d.message_ids.iter().map(move |id| (&*d.channel, &*d.chat_id, id.as_str())));
        self.decisions.forget_messages(messages.chain(deleted));
    }

    /// Before a clean stop: snapshots the chats whose logs have grown since their last snapshot (longest first,
    /// those with at least an eighth of `store.compact_after` operations), until `budget` has passed, so that the
    /// next start reads each of them as one line instead of replaying its tail. It may run while other threads use
    /// the service (a write at a time, 16 chats to it, holds the engine while it makes their snapshots). Setting
    /// `cancel` (another thread may) stops it before its next write. A store several instances share (PostgreSQL) is
    /// left as it is: the other instances keep writing to it.
    pub fn snapshot_for_restart(
        &self,
        budget: std::time::Duration,
        cancel: &std::sync::atomic::AtomicBool,
    ) -> Result<StopSnapshots, Error> {
        match &self.durability {
            Durability::Local(l) => l.snapshot_for_restart(budget, cancel),
            Durability::Shared(_) => Ok(StopSnapshots::default()),
        }
    }

    /// Whether [`Service::snapshot_for_restart`] does anything: a store this process alone writes (SQLite, memory).
    pub fn snapshots_at_stop(&self) -> bool {
        matches!(self.durability, Durability::Local(_))
    }

    /// Forgets a chat completely, in memory and in the store. Whether anything was held.
    pub fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<bool, Error> {
        let deleted = match &self.durability {
            Durability::Local(l) => l.delete_chat(channel, chat_id),
            Durability::Shared(s) => s.delete_chat(channel, chat_id),
        };
        self.decisions.forget(channel, chat_id);
        deleted
    }

    /// The decision records of recent answers.
    pub fn decisions(&self) -> &crate::decisions::Decisions {
        &self.decisions
    }

    /// Whether the store answers (a shared store is asked; the embedded ones always do).
    pub fn store_reachable(&self) -> Result<(), Error> {
        let answer = match &self.durability {
            Durability::Local(l) => l.ping(),
            Durability::Shared(s) => s.ping(),
        };
        answer.map_err(|e| internal(format!("the store cannot be reached: {e}")))?;
        match self.skipped_operations() {
            (0, _) => Ok(()),
            (n, newest) => Err(internal(format!(
                "{n} logged operation(s) of other instances could not be applied here, so this instance answers \
                 differently from the store; restart it (the newest: {})",
                newest.unwrap_or_default()
            ))),
        }
    }

    /// On a shared store: how many logged operations of other instances this instance could not apply, and the
    /// newest of them (always none on a local store, which stops at start instead).
    pub fn skipped_operations(&self) -> (u64, Option<String>) {
        match &self.durability {
            Durability::Local(_) => (0, None),
            Durability::Shared(s) => s.skipped(),
        }
    }

    fn store(&self) -> &dyn chatctx_store::Store {
        match &self.durability {
            Durability::Local(l) => l.store(),
            Durability::Shared(s) => s.store(),
        }
    }

    /// Records a revoked scope in the store, for every instance (docs/security.md).
    pub fn revoke_scope(&self, id: &str, until: Timestamp) -> Result<(), Error> {
        self.store().revoke_scope(id, until.unix()).map_err(internal)
    }

    /// The scope ids revoked since `after` (0: all), not yet expired at `now`, and the number to ask with next
    /// time (`chatctx_store::Store::revoked_since`).
    pub fn revoked_since(&self, now: Timestamp, after: u64) -> Result<(Vec<(String, Timestamp)>, u64), Error> {
        let (ids, newest) = self.store().revoked_since(now.unix(), after).map_err(internal)?;
        Ok((ids.into_iter().filter_map(|(id, t)| Timestamp::from_unix(t).map(|t| (id, t))).collect(), newest))
    }

    /// Runs `f` on the engine (reads across chats: counts, listings).
    pub fn read<T>(&self, f: impl FnOnce(&Engine) -> T) -> Result<T, Error> {
        match &self.durability {
            Durability::Local(l) => l.read(f),
            Durability::Shared(s) => s.read(f),
        }
    }

    /// Runs `f` on the engine for one chat, first catching up with a shared store (so this may wait on it).
    pub fn read_chat<T>(&self, channel: &str, chat: &str, f: impl FnOnce(&Engine) -> T) -> Result<T, Error> {
        match &self.durability {
            Durability::Local(l) => l.read(f),
            Durability::Shared(s) => s.read_chat(channel, chat, f),
        }
    }
}
