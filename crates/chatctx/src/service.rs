//! The service core shared by the HTTP and MCP front ends: one engine, and a [`Store`] that makes every
//! acknowledged change durable before the answer.
//!
//! Writes are logged as replay lines (see `chatctx-store`): decoded events, `update_scenario` /
//! `revert_scenario` calls with their time fixed, the `resolved` activations that resolution records, and
//! conversation imports. On start the log is replayed into a fresh engine.
//!
//! Group commit: a writer applies its change to the engine and queues its operations under the engine lock,
//! then waits on the commit lock. Whoever holds the commit lock writes everything queued so far in one
//! transaction (one fsync), so concurrent writers share a sync instead of queueing behind one each, and the
//! engine is never locked during disk I/O. A writer answers only once its operations are durable. If a write
//! fails, the engine is rebuilt from the store (dropping every change not yet durable) and each writer whose
//! change was dropped gets `internal`. Readers may see a change a moment before it is durable.
//!
//! The log stays proportional to the live state: once a chat has logged twice what its history holds, its
//! operations are replaced by one `import` of its exported document (exact, so nothing changes on restart).

// `json!` here only wraps values of our own types, whose serialization cannot fail.
#![allow(clippy::disallowed_methods)]

use std::sync::{Mutex, MutexGuard};

use chatctx_core::tools::ToolResponse;
use chatctx_core::{Engine, Error, ErrorCode, Event, Settings, Timestamp};
use chatctx_store::{Op, Store};
use serde::Serialize;
use serde_json::{Value, json};

use crate::config::LlmSettings;
use crate::{ingest, replay};

/// One rejected input of a batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    /// Position in the batch, from 0.
    pub index: usize,
    /// The error code.
    pub code: ErrorCode,
    /// What was wrong.
    pub message: String,
}

/// What an ingest accepted and rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IngestReport {
    /// Inputs accepted (and durable).
    pub accepted: usize,
    /// Each rejected input.
    pub rejected: Vec<Rejection>,
}

/// The engine, per chat how many operations were logged since its last snapshot, and the operations applied
/// to the engine but not yet written.
struct Inner {
    engine: Engine,
    since_snapshot: std::collections::HashMap<(String, String), u64>,
    pending: Vec<Op>,
    /// How many operations were ever queued; an operation's number is its position in that sequence.
    queued: u64,
}

/// What the writers learn from the commit lock.
#[derive(Default)]
struct Commit {
    /// Operations up to this number are settled: written, or dropped by a failure below.
    settled: u64,
    /// Ranges of operation numbers dropped by failed writes (the latest few).
    failed: std::collections::VecDeque<(u64, u64)>,
}

/// A change applied to the engine whose durability is still to be waited for ([`Service::wait_durable`]).
#[derive(Debug)]
#[must_use = "a change is acknowledged only once it is durable"]
struct Ticket(u64);

/// The running service.
pub struct Service {
    engine: Mutex<Inner>,
    /// Held while writing; lock order is always commit, then engine.
    commit: Mutex<Commit>,
    store: Box<dyn Store>,
    settings: Settings,
    llm: LlmSettings,
}

fn internal(why: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Internal, why.to_string())
}

fn new_engine(settings: &Settings, llm: &LlmSettings) -> anyhow::Result<Engine> {
    let mut engine = Engine::new(settings.clone());
    if let Some(t) = crate::triage::HttpTriage::from_settings(llm)? {
        engine.set_triage(Box::new(t));
    }
    Ok(engine)
}

/// Replays the store into a fresh engine; returns it and how many operations were read.
fn rebuild(store: &dyn Store, settings: &Settings, llm: &LlmSettings) -> anyhow::Result<(Engine, u64)> {
    let mut engine = new_engine(settings, llm)?;
    let mut newest = Timestamp::default();
    let mut failed = 0u64;
    let n = store.load(&mut |op| {
        if replay::load_line(&mut engine, &op.line, &mut newest).is_err() {
            failed += 1;
        }
    })?;
    if failed > 0 {
        tracing::warn!("{failed} of {n} logged operations no longer apply and were skipped");
    }
    Ok((engine, n))
}

fn op(channel: &str, chat_id: &str, line: String) -> Op {
    Op { channel: channel.to_owned(), chat_id: chat_id.to_owned(), line }
}

fn event_op(e: &Event) -> Op {
    let (channel, chat) = e.chat().unwrap_or(("", ""));
    op(channel, chat, json!({"event": e}).to_string())
}

impl Service {
    /// Opens the service on `store`, rebuilding the state it holds. Returns how many operations were replayed.
    pub fn open(settings: Settings, llm: LlmSettings, store: Box<dyn Store>) -> anyhow::Result<(Self, u64)> {
        let (engine, n) = rebuild(&*store, &settings, &llm)?;
        let inner = Inner { engine, since_snapshot: std::collections::HashMap::new(), pending: Vec::new(), queued: 0 };
        Ok((Self { engine: Mutex::new(inner), commit: Mutex::default(), store, settings, llm }, n))
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        self.engine.lock().map_err(|_| internal("the engine is unusable after an earlier panic"))
    }

    /// Whether a tool call may wait on the network (model triage is configured), holding the engine while it
    /// does. Then an async front end must make every call on a blocking thread.
    fn calls_out(&self) -> bool {
        self.llm.base_url.as_deref().is_some_and(|b| !b.is_empty())
    }

    fn commit_lock(&self) -> Result<MutexGuard<'_, Commit>, Error> {
        self.commit.lock().map_err(|_| internal("the writer is unusable after an earlier panic"))
    }

    /// Operations a chat may log before its log is replaced by a snapshot: twice what one of its
    /// conversations holds (at least 400), so the log stays proportional to the live state. With 1,000 chats
    /// and 1,000,000 messages ingested, restart replays about 200,000 operations (docs/benchmarks.md).
    fn snapshot_every(&self) -> u64 {
        (self.settings.conversation.cache_max_per_conversation as u64 * 2).max(400)
    }

    /// Queues `ops` (already applied to the engine held by `inner`), releases the engine and returns once
    /// they are durable, writing them itself along with everything else queued unless another writer already
    /// has. Then snapshots the chats whose logs grew long.
    fn persist(&self, inner: MutexGuard<'_, Inner>, ops: Vec<Op>) -> Result<(), Error> {
        match Self::queue(inner, ops) {
            Some(ticket) => self.wait_durable(ticket),
            None => Ok(()),
        }
    }

    /// Queues `ops` (already applied to the engine held by `inner`) and releases the engine. The ticket to
    /// wait on, if there was anything to write.
    fn queue(mut inner: MutexGuard<'_, Inner>, ops: Vec<Op>) -> Option<Ticket> {
        if ops.is_empty() {
            return None;
        }
        inner.queued += ops.len() as u64;
        inner.pending.extend(ops);
        Some(Ticket(inner.queued))
    }

    /// Returns once the operations of `ticket` are durable (writing them, with everything else queued, unless
    /// another writer already has), or refuses if their write failed. Blocks on disk I/O.
    fn wait_durable(&self, ticket: Ticket) -> Result<(), Error> {
        let mine = ticket.0;
        let mut c = self.commit_lock()?;
        if c.settled < mine {
            let (batch, upto) = {
                let mut inner = self.lock()?;
                (std::mem::take(&mut inner.pending), inner.queued)
            };
            match self.store.append(&batch) {
                Ok(()) => {
                    c.settled = upto;
                    let mut inner = self.lock()?;
                    self.count_and_snapshot(&mut inner, &batch);
                }
                Err(e) => {
                    let mut inner = self.lock()?;
                    self.drop_unwritten(&mut c, &mut inner, &e);
                }
            }
        }
        if c.failed.iter().any(|(lo, hi)| (*lo..=*hi).contains(&mine)) {
            return Err(internal("the change could not be stored"));
        }
        Ok(())
    }

    /// After a failed write: rebuilds the engine from the store, dropping every queued operation, and
    /// records their numbers as failed for the writers waiting on them.
    fn drop_unwritten(&self, c: &mut Commit, inner: &mut Inner, e: &dyn std::fmt::Display) {
        tracing::error!("store append failed: {e}; rebuilding from the store");
        match rebuild(&*self.store, &self.settings, &self.llm) {
            Ok((fresh, _)) => inner.engine = fresh,
            Err(r) => tracing::error!("rebuild failed too: {r}"),
        }
        inner.pending.clear();
        c.failed.push_back((c.settled + 1, inner.queued));
        if c.failed.len() > 64 {
            c.failed.pop_front();
        }
        c.settled = inner.queued;
    }

    /// Writes whatever is queued, with both locks held: for the operations that replace a chat's log, which
    /// must come after everything applied before them.
    fn flush(&self, c: &mut Commit, inner: &mut Inner) -> Result<(), Error> {
        if inner.pending.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut inner.pending);
        match self.store.append(&batch) {
            Ok(()) => {
                c.settled = inner.queued;
                self.count_and_snapshot(inner, &batch);
                Ok(())
            }
            Err(e) => {
                self.drop_unwritten(c, inner, &e);
                Err(internal(format!("earlier changes could not be stored: {e}")))
            }
        }
    }

    /// Counts written operations per chat and snapshots the chats past [`Service::snapshot_every`] that have
    /// nothing queued (a snapshot of a chat with queued operations would be followed by them again).
    fn count_and_snapshot(&self, inner: &mut Inner, written: &[Op]) {
        let every = self.snapshot_every();
        let mut due = Vec::new();
        for o in written.iter().filter(|o| !o.chat_id.is_empty()) {
            let n = inner.since_snapshot.entry((o.channel.clone(), o.chat_id.clone())).or_default();
            *n += 1;
            if *n >= every {
                due.push((o.channel.clone(), o.chat_id.clone()));
            }
        }
        due.sort();
        due.dedup();
        for (channel, chat) in due {
            if !inner.pending.iter().any(|o| o.channel == channel && o.chat_id == chat) {
                self.snapshot(inner, &channel, &chat);
            }
        }
    }

    /// Replaces a chat's log with one import of its exported document. A failure only leaves the longer log.
    fn snapshot(&self, inner: &mut Inner, channel: &str, chat: &str) {
        let Ok(doc) = inner.engine.export_conversation(channel, chat) else { return };
        let line = json!({"import": doc}).to_string();
        match self.store.rewrite_chat(channel, chat, &[op(channel, chat, line)]) {
            Ok(()) => {
                inner.since_snapshot.insert((channel.to_owned(), chat.to_owned()), 0);
            }
            Err(e) => tracing::warn!("snapshot of chat {chat} failed (its full log stays): {e}"),
        }
    }

    /// Ingests a batch of raw events (SPEC §3, including `telegram_update`). Each is accepted or rejected on
    /// its own; the accepted ones are durable when this returns.
    pub fn ingest(&self, inputs: &[Value], now: Timestamp) -> Result<IngestReport, Error> {
        self.ingest_for(inputs, now, &|_, _| true)
    }

    /// As [`Service::ingest`], refusing (`forbidden_scope`) inputs that touch a chat `allowed` rejects.
    pub fn ingest_for(
        &self,
        inputs: &[Value],
        now: Timestamp,
        allowed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<IngestReport, Error> {
        let mut report = IngestReport::default();
        // Decoding (JSON, the Telegram mapping) needs no state: it is done before taking the engine.
        let decoded: Vec<_> = inputs
            .iter()
            .map(|v| {
                let d = ingest::decode(v, now)?;
                if let Some((channel, chat)) = d.events.iter().filter_map(Event::chat).find(|(ch, c)| !allowed(ch, c)) {
                    return Err(Error::new(
                        ErrorCode::ForbiddenScope,
                        format!("this credential may not touch chat {chat:?} on {channel}"),
                    ));
                }
                let logged: Vec<Op> = d.events.iter().map(event_op).collect();
                Ok((d, logged))
            })
            .collect();
        let mut inner = self.lock()?;
        let engine = &mut inner.engine;
        let mut ops = Vec::new();
        for (index, d) in decoded.into_iter().enumerate() {
            let result = d.and_then(|(d, logged)| engine.apply_all(d.events).map(|applied| (applied, logged)));
            match result {
                Ok((applied, logged)) => {
                    for w in applied.warnings {
                        tracing::warn!("{w}");
                    }
                    ops.extend(logged);
                    report.accepted += 1;
                }
                Err(e) => report.rejected.push(Rejection { index, code: e.code, message: e.message }),
            }
        }
        self.persist(inner, ops)?;
        Ok(report)
    }

    /// Answers a tool call; the changes it makes (state updates, recorded resolutions) are durable first.
    pub fn call(&self, tool: &str, args: &Value, now: Timestamp) -> Result<ToolResponse, Error> {
        let (response, ticket) = self.call_queued(tool, args, now)?;
        if let Some(t) = ticket {
            self.wait_durable(t)?;
        }
        Ok(response)
    }

    /// [`Service::call`] for async front ends (HTTP, MCP), logging the call. Without triage a call takes
    /// microseconds, so it runs on the caller's thread and only a wait for the disk (when the call changed
    /// something) moves to a blocking thread; with triage a call may wait on the model while holding the
    /// engine, so all of it runs on a blocking thread.
    pub async fn call_logged(
        self: &std::sync::Arc<Self>,
        tool: String,
        args: Value,
        now: Timestamp,
    ) -> Result<ToolResponse, Error> {
        let unfinished = |e: tokio::task::JoinError| internal(format!("the call did not finish: {e}"));
        if self.calls_out() {
            let svc = self.clone();
            return tokio::task::spawn_blocking(move || {
                let r = svc.call(&tool, &args, now);
                replay::log_call(&tool, &args, &r);
                r
            })
            .await
            .map_err(unfinished)?;
        }
        let result = match self.call_queued(&tool, &args, now) {
            Ok((answer, None)) => Ok(answer),
            Ok((answer, Some(ticket))) => {
                let svc = self.clone();
                tokio::task::spawn_blocking(move || svc.wait_durable(ticket))
                    .await
                    .map_err(unfinished)
                    .and_then(|durable| durable.map(|()| answer))
            }
            Err(e) => Err(e),
        };
        replay::log_call(&tool, &args, &result);
        result
    }

    /// The first half of [`Service::call`], which never touches the disk: the answer, and the ticket to wait
    /// on before giving it when the call changed something.
    fn call_queued(&self, tool: &str, args: &Value, now: Timestamp) -> Result<(ToolResponse, Option<Ticket>), Error> {
        let mut inner = self.lock()?;
        let response = inner.engine.call(tool, args, now)?;
        let channel = chatctx_core::json::channel_of(args);
        let chat = args.get("chat_id").and_then(chatctx_core::json::id_of).unwrap_or_default();
        let logged = match &response {
            ToolResponse::Scenario(s) if s.changed == Some(true) => {
                let mut fixed = args.clone();
                fixed["now"] = json!(args.get("now").cloned().unwrap_or_else(|| json!(now.unix())));
                Some(op(channel, &chat, json!({"call": tool, "args": fixed}).to_string()))
            }
            // Only a recording that changed the state is logged (a repeated call for the same message is not).
            ToolResponse::Resolve(r) => r.best_match.as_ref().filter(|_| r.recorded).map(|b| {
                let at = args.get("now").and_then(|v| chatctx_core::json::time_of(v).ok()).unwrap_or(now);
                let current = args.get("current_message_id").and_then(chatctx_core::json::id_of);
                let event = json!({"type": "activation", "channel": channel, "chat_id": chat, "object_id": b.object_id,
                                   "event": "resolved", "at": at.unix(), "message_id": current});
                op(channel, &chat, json!({"event": event}).to_string())
            }),
            _ => None,
        };
        Ok((response, Self::queue(inner, logged.into_iter().collect())))
    }

    /// Loads a conversation document (replacing that chat) durably.
    pub fn import(&self, doc: &Value) -> Result<(), Error> {
        let mut c = self.commit_lock()?;
        let mut inner = self.lock()?;
        self.flush(&mut c, &mut inner)?;
        inner.engine.import_conversation(doc)?;
        let channel = doc["channel"].as_str().unwrap_or_default().to_owned();
        let chat = doc["chat_id"].as_str().unwrap_or_default().to_owned();
        let line = json!({"import": doc}).to_string();
        // The document is the chat's whole state: it replaces the chat's log.
        if let Err(e) = self.store.rewrite_chat(&channel, &chat, &[op(&channel, &chat, line)]) {
            if let Ok((fresh, _)) = rebuild(&*self.store, &self.settings, &self.llm) {
                inner.engine = fresh;
            }
            return Err(internal(format!("the import could not be stored: {e}")));
        }
        inner.since_snapshot.insert((channel, chat), 0);
        Ok(())
    }

    /// Retention by age: forgets every history item sent more than `max_age` before `now`, in memory and
    /// in the store (each changed chat's log is replaced by a snapshot of what is left). How many items.
    pub fn expire(&self, max_age: chatctx_core::time::Span, now: Timestamp) -> Result<usize, Error> {
        let cutoff = now.plus(chatctx_core::time::Span::from_secs(-max_age.secs()));
        let mut c = self.commit_lock()?;
        let mut inner = self.lock()?;
        self.flush(&mut c, &mut inner)?;
        let changed = inner.engine.drop_before(cutoff);
        let mut dropped = 0;
        for (channel, chat, n) in changed {
            self.snapshot(&mut inner, &channel, &chat);
            dropped += n;
        }
        Ok(dropped)
    }

    /// Forgets a chat completely, in memory and in the store. Whether anything was held.
    pub fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<bool, Error> {
        let mut c = self.commit_lock()?;
        let mut inner = self.lock()?;
        self.flush(&mut c, &mut inner)?;
        let deleted = self.store.delete_chat(channel, chat_id).map_err(internal)?;
        inner.since_snapshot.remove(&(channel.to_owned(), chat_id.to_owned()));
        Ok(inner.engine.remove_chat(channel, chat_id) || deleted > 0)
    }

    /// Runs `f` on the engine (reads).
    pub fn read<T>(&self, f: impl FnOnce(&Engine) -> T) -> Result<T, Error> {
        Ok(f(&self.lock()?.engine))
    }
}
