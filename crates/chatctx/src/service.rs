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
//!
//! A shared store (PostgreSQL, [`Store::shared`]) is written by other instances too, so the engine is only a
//! cache of it, kept coherent per chat by position (docs/deployment.md):
//! - every tool call first reads what other instances appended to its chat since this one last looked (one
//!   indexed query, usually empty) and applies it, so it sees everything acknowledged before it started;
//! - a write to a chat takes that chat's lock in this process, catches up, applies its change and appends
//!   at the position it caught up to ([`Store::append_at`]). If another instance appended first, nothing is
//!   written: the chat is reloaded from the store and the change is made again on the newer state. So
//!   `update_scenario` checks `expected_revision` against every acknowledged revision, in any instance;
//! - forgetting a chat appends a tombstone that other instances apply; imports and retention append an
//!   `import` of the chat's new document. Group commit is not used: each write is its own statement.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use chatctx_core::event::{ActivationEvent, ObjectRef};
use chatctx_core::kinds::Activation;
use chatctx_core::tools::{Scope, ToolCall, ToolResponse, Writes};
use chatctx_core::transfer::ConversationDoc;
use chatctx_core::{Engine, Error, ErrorCode, Event, Settings, Timestamp};
use chatctx_store::{Op, Store};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::config::LlmSettings;
use crate::logline::{EventLine, LogLine};
use crate::triage::{Answered, Installed};
use crate::{ingest, replay};

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

/// What an ingest accepted and rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "chatctx_core::wire")]
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
    since_snapshot: HashMap<ChatKey, u64>,
    pending: Vec<Op>,
    /// How many operations were ever queued; an operation's number is its position in that sequence.
    queued: u64,
    /// Per chat, the newest log position applied to the engine (what a shared store is read after). Kept up to
    /// date only for a shared store.
    heads: HashMap<ChatKey, u64>,
}

type ChatKey = (String, String);

fn key(channel: &str, chat: &str) -> ChatKey {
    (channel.to_owned(), chat.to_owned())
}

/// How often a write to a shared store is tried again after another instance appended to the chat first.
const WRITE_ATTEMPTS: usize = 32;

/// Per-chat write locks of a shared store: a chat's writes in this process are made one at a time (chats
/// hash onto a fixed set of locks).
const WRITE_LOCKS: usize = 64;

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
    store: Arc<dyn Store>,
    settings: Settings,
    /// Model triage, when configured: asked before the engine is locked (see [`Service::call`]).
    triage: Option<Arc<Answered>>,
    /// Per-chat write locks when the store is shared (empty otherwise); lock order: write lock, then engine.
    writers: Vec<Mutex<()>>,
}

fn internal(why: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Internal, why.to_string())
}

fn new_engine(settings: &Settings, triage: Option<&Arc<Answered>>) -> Engine {
    let mut engine = Engine::new(settings.clone());
    if let Some(t) = triage {
        engine.set_triage(Box::new(Installed(t.clone())));
    }
    engine
}

/// What [`rebuild`] makes: the engine, how many operations were read, and each chat's newest position.
struct Rebuilt {
    engine: Engine,
    read: u64,
    heads: HashMap<ChatKey, u64>,
}

/// Replays the store into a fresh engine.
fn rebuild(store: &dyn Store, settings: &Settings, triage: Option<&Arc<Answered>>) -> anyhow::Result<Rebuilt> {
    let mut engine = new_engine(settings, triage);
    let mut heads = HashMap::new();
    let mut newest = Timestamp::default();
    let mut failed = 0u64;
    let read = store.load(&mut |pos, op| {
        if let Err(e) = apply_logged(&mut engine, &op.channel, &op.chat_id, &op.line, &mut newest) {
            tracing::debug!("logged operation {pos} of chat {} does not apply: {e}", op.chat_id);
            failed += 1;
        }
        let head = heads.entry((op.channel, op.chat_id)).or_default();
        *head = pos.max(*head);
    })?;
    if failed > 0 {
        tracing::warn!("{failed} of {read} logged operations no longer apply and were skipped");
    }
    Ok(Rebuilt { engine, read, heads })
}

/// Applies one logged operation of a chat.
fn apply_logged(
    engine: &mut Engine,
    channel: &str,
    chat: &str,
    line: &str,
    newest: &mut Timestamp,
) -> Result<(), Error> {
    match LogLine::parse(line).map_err(|bad| bad.error)? {
        LogLine::Forget => {
            engine.remove_chat(channel, chat);
            Ok(())
        }
        line => replay::load_line(engine, line, newest),
    }
}

/// The log line of an answered tool call, when the call changed the state.
fn logged_line(call: &ToolCall, now: Timestamp, response: &ToolResponse) -> Result<Option<String>, Error> {
    let line = match response {
        // With its time fixed, so that it means the same when the log is replayed.
        ToolResponse::Scenario(s) if s.changed == Some(true) => {
            let mut fixed = call.clone();
            fixed.fill_now(now);
            LogLine::Call(Cow::Owned(fixed)).to_line()?
        }
        // Only a recording that changed the state is logged (a repeated call for the same message is not).
        ToolResponse::Resolve(r) => match r.best_match.as_ref().filter(|_| r.recorded) {
            Some(best) => {
                let scope = call.scope();
                let event = Event::Activation(ActivationEvent {
                    channel: scope.channel.clone(),
                    target: ObjectRef::Id { chat_id: scope.chat_id.clone(), object_id: best.object_id.clone() },
                    event: Activation::Resolved,
                    at: call.now().unwrap_or(now),
                    by_user_id: None,
                    message_id: scope.current_message_id.clone(),
                    close: false,
                });
                LogLine::Event(EventLine::Decoded(&event)).to_line()?
            }
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    Ok(Some(line))
}

fn op(channel: &str, chat_id: &str, line: String) -> Op {
    Op { channel: channel.to_owned(), chat_id: chat_id.to_owned(), line }
}

/// The log operation of an event, if it names a chat (an activation of an unknown platform id does not, and
/// changes nothing).
fn event_op(e: &Event) -> Option<Result<Op, Error>> {
    let (channel, chat) = e.chat()?;
    Some(LogLine::Event(EventLine::Decoded(e)).to_line().map(|line| op(channel, chat, line)))
}

/// The log line of a chat's whole state.
fn import_line(doc: &ConversationDoc) -> Result<String, Error> {
    LogLine::Import(Cow::Borrowed(doc)).to_line()
}

/// One decoded input of an ingest batch: its events and their log operations.
type Input = Result<(Vec<Event>, Vec<Op>), Error>;

/// An input routed to its chat: its index in the batch, its events and their log operations.
type Routed = (usize, Vec<Event>, Vec<Op>);

/// Routes an input's platform-id activations to their chats, refusing chats `allowed` rejects. Cheap when
/// there are none (the common case): the engine is only read for those.
fn route(engine: &Engine, input: Input, allowed: &dyn Fn(&str, &str) -> bool) -> Input {
    let (mut events, mut ops) = input?;
    let external = |e: &Event| e.chat().is_none();
    if events.iter().any(external) {
        events.iter_mut().for_each(|e| engine.route(e));
        ops = events.iter().filter_map(event_op).collect::<Result<_, _>>()?;
    }
    if let Some(o) = ops.iter().find(|o| !allowed(&o.channel, &o.chat_id)) {
        return Err(Error::new(
            ErrorCode::ForbiddenScope,
            format!("this credential may not touch chat {:?} on {}", o.chat_id, o.channel),
        ));
    }
    Ok((events, ops))
}

impl Service {
    /// Opens the service on `store`, rebuilding the state it holds. Returns how many operations were replayed.
    pub fn open(settings: Settings, llm: LlmSettings, store: Arc<dyn Store>) -> anyhow::Result<(Self, u64)> {
        let triage = crate::triage::HttpTriage::from_settings(&llm)?.map(|t| Arc::new(Answered::new(t)));
        let Rebuilt { engine, read, heads } = rebuild(&*store, &settings, triage.as_ref())?;
        let inner = Inner { engine, since_snapshot: HashMap::new(), pending: Vec::new(), queued: 0, heads };
        let writers = if store.shared() { (0..WRITE_LOCKS).map(|_| Mutex::new(())).collect() } else { Vec::new() };
        let engine = Mutex::new(inner);
        Ok((Self { engine, commit: Mutex::default(), store, settings, triage, writers }, read))
    }

    /// Whether the store is shared with other instances (then every call catches up with it first).
    fn shared(&self) -> bool {
        !self.writers.is_empty()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        self.engine.lock().map_err(|_| internal("the engine is unusable after an earlier panic"))
    }

    /// Whether a tool call may wait on the network (model triage is configured). Then an async front end
    /// makes every call on a blocking thread.
    fn calls_out(&self) -> bool {
        self.triage.is_some()
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
        match rebuild(&*self.store, &self.settings, self.triage.as_ref()) {
            Ok(fresh) => (inner.engine, inner.heads) = (fresh.engine, fresh.heads),
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
        let Ok(line) = inner.engine.export_conversation(channel, chat).and_then(|doc| import_line(&doc)) else {
            return;
        };
        match self.store.rewrite_chat(channel, chat, &[op(channel, chat, line)]) {
            Ok(()) => {
                inner.since_snapshot.insert((channel.to_owned(), chat.to_owned()), 0);
            }
            Err(e) => tracing::warn!("snapshot of chat {chat} failed (its full log stays): {e}"),
        }
    }

    /// Ingests a batch of raw events (docs/protocol.md §3, including `telegram_update`). Each is accepted or rejected on
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
        // Decoding (JSON, the Telegram mapping) needs no state: it is done before taking the engine.
        let decoded: Vec<Input> = inputs
            .iter()
            .map(|v| {
                let d = ingest::decode(v, now)?;
                let logged: Vec<Op> = d.events.iter().filter_map(event_op).collect::<Result<_, _>>()?;
                Ok((d.events, logged))
            })
            .collect();
        if self.shared() {
            return self.ingest_shared(decoded, allowed);
        }
        let mut report = IngestReport::default();
        let mut inner = self.lock()?;
        let engine = &mut inner.engine;
        let mut ops = Vec::new();
        for (index, d) in decoded.into_iter().enumerate() {
            let result = route(engine, d, allowed)
                .and_then(|(events, logged)| engine.apply_all(events).map(|applied| (applied, logged)));
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

    /// [`Service::ingest_for`] on a shared store: the inputs of each chat are one write to that chat.
    fn ingest_shared(&self, decoded: Vec<Input>, allowed: &dyn Fn(&str, &str) -> bool) -> Result<IngestReport, Error> {
        let mut report = IngestReport::default();
        let mut reject = |index, e: Error| report.rejected.push(Rejection { index, code: e.code, message: e.message });
        // Inputs by chat, in a fixed chat order. An input that names no chat (an activation of a platform id
        // no one knows) changes nothing and is accepted as such.
        let mut by_chat: std::collections::BTreeMap<ChatKey, Vec<Routed>> = Default::default();
        let mut nowhere = 0;
        self.find_externals(&decoded)?;
        {
            let inner = self.lock()?;
            for (index, d) in decoded.into_iter().enumerate() {
                match route(&inner.engine, d, allowed) {
                    Err(e) => reject(index, e),
                    Ok((_, ops)) if ops.is_empty() => nowhere += 1,
                    Ok((_, ops))
                        if ops.iter().any(|o| (&o.channel, &o.chat_id) != (&ops[0].channel, &ops[0].chat_id)) =>
                    {
                        reject(index, Error::new(ErrorCode::InvalidEvent, "an input may write to one chat only"))
                    }
                    Ok((events, ops)) => {
                        by_chat.entry(key(&ops[0].channel, &ops[0].chat_id)).or_default().push((index, events, ops))
                    }
                }
            }
        }
        let mut accepted = nowhere;
        for ((channel, chat), inputs) in by_chat {
            let written = self.write_chat(&channel, &chat, false, |engine| {
                let (mut ok, mut refused, mut lines, mut externals) = (0, Vec::new(), Vec::new(), Vec::new());
                for (index, events, ops) in &inputs {
                    match engine.apply_all(events.clone()) {
                        Ok(applied) => {
                            applied.warnings.iter().for_each(|w| tracing::warn!("{w}"));
                            lines.extend(ops.iter().map(|o| o.line.clone()));
                            externals.extend(events.iter().flat_map(Event::external_ids).map(str::to_owned));
                            ok += 1;
                        }
                        Err(e) => refused.push((*index, e)),
                    }
                }
                Ok(((ok, refused, externals), lines))
            });
            match written {
                Ok((ok, refused, externals)) => {
                    accepted += ok;
                    refused.into_iter().for_each(|(index, e)| reject(index, e));
                    for id in externals {
                        if let Err(e) = self.store.note_external(&channel, &chat, &id) {
                            tracing::warn!(
                                "platform id {id} of chat {chat} not noted; other instances may miss its updates: {e}"
                            );
                        }
                    }
                }
                Err(e) => inputs.iter().for_each(|(index, ..)| reject(*index, e.clone())),
            }
        }
        report.accepted = accepted;
        report.rejected.sort_by_key(|r| r.index);
        Ok(report)
    }

    /// Shared store: for activations that name only a platform id this instance has never seen (a vote on a
    /// poll sent through another instance), finds the poll's chat in the store and catches up with it, so
    /// that routing finds the poll.
    fn find_externals(&self, decoded: &[Input]) -> Result<(), Error> {
        let unknown: Vec<String> = {
            let inner = self.lock()?;
            let events = decoded.iter().filter_map(|d| d.as_ref().ok()).flat_map(|(events, _)| events);
            events
                .filter_map(Event::external_target)
                .filter(|id| !inner.engine.knows_external(id))
                .map(str::to_owned)
                .collect()
        };
        for id in unknown {
            let found =
                self.store.find_external(&id).map_err(|e| internal(format!("the store cannot be read: {e}")))?;
            if let Some((channel, chat)) = found {
                self.catch_up(&channel, &chat)?;
            }
        }
        Ok(())
    }

    /// Answers a tool call; the changes it makes (state updates, recorded resolutions) are durable first.
    pub fn call(&self, call: &ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        if let Some(t) = &self.triage {
            self.ask_model_unlocked(t, call);
        }
        if self.shared() {
            return self.call_shared(call, now);
        }
        let (response, ticket) = self.call_queued(call, now)?;
        if let Some(t) = ticket {
            self.wait_durable(t)?;
        }
        Ok(response)
    }

    /// Model triage without the engine's lock: the engine names the triage the call would make, the model
    /// answers while other calls go on, and the call then finds the answer waiting. If the chat changed in
    /// between, the call asks the model again itself (with the lock held), so the answer is always the one
    /// for the state the call sees.
    fn ask_model_unlocked(&self, triage: &Answered, call: &ToolCall) {
        let ToolCall::GetChatHistoryContext(req) = call else { return };
        let pending = match self.lock() {
            Ok(inner) => inner.engine.pending_triage(req),
            Err(_) => return,
        };
        if let Ok(Some(request)) = pending {
            triage.ask(request);
        }
    }

    /// [`Service::call`] for async front ends (HTTP, MCP), logging the call. Without triage a call takes
    /// microseconds, so it runs on the caller's thread and only a wait for the disk (when the call changed
    /// something) moves to a blocking thread; with triage a call may wait on the model (without holding the
    /// engine: [`Service::call`]), so all of it runs on a blocking thread.
    pub async fn call_logged(self: &Arc<Self>, call: ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        let unfinished = |e: tokio::task::JoinError| internal(format!("the call did not finish: {e}"));
        if self.shared() && !self.calls_out() {
            // The common case on a shared store, a read of a chat no other instance changed meanwhile, waits on
            // the database without a thread of its own.
            let read = self.read_shared(&call, now).await.transpose();
            if let Some(result) = read {
                replay::log_call(&call, &result);
                return result;
            }
        }
        // Writes to a shared store (and any call of one that changed elsewhere) wait on the database holding
        // the chat's lock, so off the async threads.
        if self.calls_out() || self.shared() {
            let svc = self.clone();
            // Past `read_shared`, what is left is a write, or a read of a chat with news: the write path serves
            // both (a read appends nothing), without looking for news a second time first.
            let as_write = self.shared() && !self.calls_out();
            return tokio::task::spawn_blocking(move || {
                let r = if as_write { svc.call_as_write(&call, now) } else { svc.call(&call, now) };
                replay::log_call(&call, &r);
                r
            })
            .await
            .map_err(unfinished)?;
        }
        let result = match self.call_queued(&call, now) {
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
        replay::log_call(&call, &result);
        result
    }

    /// Shared store, from an async front end: the answer if the call only reads and the chat has nothing new
    /// since this instance last looked (one query, awaited); `None` when it must take [`Service::call`].
    async fn read_shared(&self, call: &ToolCall, now: Timestamp) -> Result<Option<ToolResponse>, Error> {
        let Scope { channel, chat_id: chat, .. } = call.scope();
        if chat.is_empty() || call.writes() == Writes::Always {
            return Ok(None);
        }
        let head = self.head(channel, chat)?;
        let Some(news) = self.store.since_async(channel, chat, head) else { return Ok(None) };
        let news = news.await.map_err(|e| internal(format!("the store cannot be read: {e}")))?;
        if news.iter().any(|(pos, _)| *pos > head) {
            return Ok(None);
        }
        self.lock()?.engine.answer_read_only(call, now)
    }

    /// The first half of [`Service::call`], which never touches the disk: the answer, and the ticket to wait
    /// on before giving it when the call changed something.
    fn call_queued(&self, call: &ToolCall, now: Timestamp) -> Result<(ToolResponse, Option<Ticket>), Error> {
        let mut inner = self.lock()?;
        let response = inner.engine.answer(call, now)?;
        let Scope { channel, chat_id, .. } = call.scope();
        let logged = logged_line(call, now, &response)?.map(|line| op(channel, chat_id, line));
        Ok((response, Self::queue(inner, logged.into_iter().collect())))
    }

    /// [`Service::call`] on a shared store: catch up with the chat, answer from the engine if the call changes
    /// nothing, and otherwise make it as a write to the chat.
    fn call_shared(&self, call: &ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        let Scope { channel, chat_id, .. } = call.scope();
        if !chat_id.is_empty() {
            self.catch_up(channel, chat_id)?;
        }
        if let Some(answer) = self.lock()?.engine.answer_read_only(call, now)? {
            return Ok(answer);
        }
        self.call_as_write(call, now)
    }

    /// Shared store: a tool call made as a write to its chat (it appends only if it changed something).
    fn call_as_write(&self, call: &ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        let Scope { channel, chat_id, .. } = call.scope();
        self.write_chat(channel, chat_id, false, |engine| {
            let answer = engine.answer(call, now)?;
            let line = logged_line(call, now, &answer)?;
            Ok((answer, line.into_iter().collect()))
        })
    }

    fn head(&self, channel: &str, chat: &str) -> Result<u64, Error> {
        Ok(self.lock()?.heads.get(&key(channel, chat)).copied().unwrap_or(0))
    }

    /// Shared store: the chat's write lock in this process.
    fn writer(&self, channel: &str, chat: &str) -> Result<MutexGuard<'_, ()>, Error> {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        (channel, chat).hash(&mut h);
        let i = (h.finish() % self.writers.len() as u64) as usize;
        self.writers[i].lock().map_err(|_| internal("a writer is unusable after an earlier panic"))
    }

    /// Shared store: what was appended to the chat after position `after`.
    fn news(&self, channel: &str, chat: &str, after: u64) -> Result<Vec<(u64, String)>, Error> {
        let mut news = Vec::new();
        self.store
            .since(channel, chat, after, &mut |pos, line| news.push((pos, line)))
            .map_err(|e| internal(format!("the store cannot be read: {e}")))?;
        Ok(news)
    }

    /// Shared store: applies what other instances appended to the chat since this one last looked, so that
    /// a call sees every change acknowledged before it started. Takes the chat's write lock only when there is
    /// something to apply (never while a write of this process to the chat is under way).
    fn catch_up(&self, channel: &str, chat: &str) -> Result<(), Error> {
        let news = self.news(channel, chat, self.head(channel, chat)?)?;
        if news.is_empty() {
            return Ok(());
        }
        let _writing = self.writer(channel, chat)?;
        self.apply_news(channel, chat, news)
    }

    /// Applies logged operations of a chat past its head, with the chat's write lock held.
    fn apply_news(&self, channel: &str, chat: &str, news: Vec<(u64, String)>) -> Result<(), Error> {
        let mut inner = self.lock()?;
        let Inner { engine, heads, .. } = &mut *inner;
        let head = heads.entry(key(channel, chat)).or_default();
        let mut newest = Timestamp::default();
        for (pos, line) in news {
            if pos <= *head {
                continue;
            }
            if let Err(e) = apply_logged(engine, channel, chat, &line, &mut newest) {
                tracing::warn!("logged operation {pos} of chat {chat} no longer applies and was skipped: {e}");
            }
            *head = pos;
        }
        Ok(())
    }

    /// Shared store: drops the chat from the engine, to be reloaded from the store on its next use.
    fn reload_later(&self, channel: &str, chat: &str) -> Result<(), Error> {
        let mut inner = self.lock()?;
        inner.engine.remove_chat(channel, chat);
        inner.heads.remove(&key(channel, chat));
        inner.since_snapshot.remove(&key(channel, chat));
        Ok(())
    }

    /// Shared store: one write to a chat. With the chat's write lock held, catches up, runs `work` on the
    /// engine, and appends the log lines it returns at the position caught up to. If another instance
    /// appended first, the chat is reloaded from the store and `work` runs again on the newer state. `work`
    /// that fails must change nothing. With `replaces`, the lines stand for the chat's whole state (an import,
    /// a tombstone) and everything before them is compacted away at once.
    fn write_chat<T>(
        &self,
        channel: &str,
        chat: &str,
        replaces: bool,
        mut work: impl FnMut(&mut Engine) -> Result<(T, Vec<String>), Error>,
    ) -> Result<T, Error> {
        let _writing = self.writer(channel, chat)?;
        for attempt in 0..WRITE_ATTEMPTS {
            self.apply_news(channel, chat, self.news(channel, chat, self.head(channel, chat)?)?)?;
            let head = self.head(channel, chat)?;
            let (out, lines) = work(&mut self.lock()?.engine)?;
            if lines.is_empty() {
                return Ok(out);
            }
            match self.store.append_at(channel, chat, head, &lines) {
                Ok(Some(new)) => {
                    self.written(channel, chat, new, &lines, replaces);
                    return Ok(out);
                }
                Ok(None) => {
                    tracing::debug!(attempt, "chat {chat} was written by another instance meanwhile; again");
                    self.reload_later(channel, chat)?;
                }
                Err(e) => {
                    self.reload_later(channel, chat)?;
                    return Err(internal(format!("the change could not be stored: {e}")));
                }
            }
        }
        Err(internal(format!("chat {chat} kept changing under this write ({WRITE_ATTEMPTS} attempts); try again")))
    }

    /// After a write to a shared store: the chat's new head, and compaction when its log grew long (with the
    /// chat's write lock still held, so the engine holds exactly the state at `head`).
    fn written(&self, channel: &str, chat: &str, head: u64, lines: &[String], replaces: bool) {
        let every = self.snapshot_every();
        let snapshot = {
            let Ok(mut inner) = self.lock() else { return };
            inner.heads.insert(key(channel, chat), head);
            let n = inner.since_snapshot.entry(key(channel, chat)).or_default();
            *n += lines.len() as u64;
            if replaces {
                lines.last().cloned()
            } else if *n >= every {
                inner.engine.export_conversation(channel, chat).and_then(|doc| import_line(&doc)).ok()
            } else {
                None
            }
        };
        if let Some(line) = snapshot {
            match self.store.compact_at(channel, chat, head, &line) {
                Ok(()) => _ = self.lock().map(|mut inner| inner.since_snapshot.insert(key(channel, chat), 0)),
                Err(e) => tracing::warn!("compaction of chat {chat} failed (its full log stays): {e}"),
            }
        }
    }

    /// Loads a conversation document (replacing that chat) durably.
    pub fn import(&self, doc: &ConversationDoc) -> Result<(), Error> {
        let (channel, chat) = (doc.channel.as_str(), doc.chat_id.as_str());
        let line = import_line(doc)?;
        if self.shared() {
            self.write_chat(channel, chat, true, |engine| {
                engine.import_document(doc)?;
                Ok(((), vec![line.clone()]))
            })?;
            // Its polls' ids, so that votes reach it through any instance.
            for id in doc.objects.iter().filter_map(|o| o.external_id.as_deref()) {
                self.store.note_external(channel, chat, id).map_err(internal)?;
            }
            return Ok(());
        }
        let mut c = self.commit_lock()?;
        let mut inner = self.lock()?;
        self.flush(&mut c, &mut inner)?;
        inner.engine.import_document(doc)?;
        // The document is the chat's whole state: it replaces the chat's log.
        if let Err(e) = self.store.rewrite_chat(channel, chat, &[op(channel, chat, line)]) {
            if let Ok(fresh) = rebuild(&*self.store, &self.settings, self.triage.as_ref()) {
                (inner.engine, inner.heads) = (fresh.engine, fresh.heads);
            }
            return Err(internal(format!("the import could not be stored: {e}")));
        }
        inner.since_snapshot.insert(key(channel, chat), 0);
        Ok(())
    }

    /// Retention by age: forgets every history item sent more than `max_age` before `now`, in memory and
    /// in the store (each changed chat's log is replaced by a snapshot of what is left). How many items.
    pub fn expire(&self, max_age: chatctx_core::time::Span, now: Timestamp) -> Result<usize, Error> {
        let cutoff = now.plus(chatctx_core::time::Span::from_secs(-max_age.secs()));
        if self.shared() {
            // Each changed chat becomes an import of what is left, which the other instances apply too.
            let mut dropped = 0;
            for (channel, chat) in self.read(Engine::chat_keys)? {
                dropped += self.write_chat(&channel, &chat, true, |engine| {
                    let n = engine.drop_chat_before(&channel, &chat, cutoff);
                    let line =
                        if n > 0 { Some(import_line(&engine.export_conversation(&channel, &chat)?)?) } else { None };
                    Ok((n, line.into_iter().collect()))
                })?;
            }
            return Ok(dropped);
        }
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
        if self.shared() {
            // A tombstone, so that every instance forgets it; compaction then drops everything before it.
            let held = self.write_chat(channel, chat_id, true, |engine| {
                let held = engine.remove_chat(channel, chat_id);
                Ok((held, if held { vec![LogLine::Forget.to_line()?] } else { Vec::new() }))
            })?;
            self.store.forget_externals(channel, chat_id).map_err(internal)?;
            return Ok(held);
        }
        let mut c = self.commit_lock()?;
        let mut inner = self.lock()?;
        self.flush(&mut c, &mut inner)?;
        let deleted = self.store.delete_chat(channel, chat_id).map_err(internal)?;
        inner.since_snapshot.remove(&(channel.to_owned(), chat_id.to_owned()));
        Ok(inner.engine.remove_chat(channel, chat_id) || deleted > 0)
    }

    /// Whether the store answers (a shared store is asked; the embedded ones always do).
    pub fn store_reachable(&self) -> Result<(), Error> {
        self.store.ping().map_err(|e| internal(format!("the store cannot be reached: {e}")))
    }

    /// Runs `f` on the engine (reads across chats: counts, listings).
    pub fn read<T>(&self, f: impl FnOnce(&Engine) -> T) -> Result<T, Error> {
        Ok(f(&self.lock()?.engine))
    }

    /// Runs `f` on the engine for one chat, first catching up with a shared store (so this may wait on it).
    pub fn read_chat<T>(&self, channel: &str, chat: &str, f: impl FnOnce(&Engine) -> T) -> Result<T, Error> {
        if self.shared() {
            self.catch_up(channel, chat)?;
        }
        self.read(f)
    }
}
