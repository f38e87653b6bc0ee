//! Durability for a store this process alone writes (SQLite, memory): group commit.
//!
//! A writer applies its change to the engine and queues its log lines under the engine lock, then waits on the
//! commit lock. Whoever holds the commit lock writes everything queued so far in one transaction (one fsync),
//! so concurrent writers share a sync instead of queueing behind one each, and the engine is never locked
//! during disk I/O. A writer answers only once its lines are durable. If a write fails (a full disk), every
//! change not yet durable is undone by reloading just the chats it touched from the store, each writer whose
//! change was dropped gets `internal` (`insufficient_storage` on a full disk), however long it waited, and
//! readiness reports the store as refusing writes until a write (or the readiness probe's own write) succeeds
//! again. Readers may see a change a moment before it is durable.

use std::sync::{Arc, Mutex, MutexGuard};

use chatctx_core::engine::directory_log_key;
use chatctx_core::tools::{Scope, ToolCall, ToolResponse};
use chatctx_core::transfer::ConversationDoc;
use chatctx_core::{Engine, Error, ErrorCode, Settings, Timestamp};
use chatctx_store::{Log, Op, StoreError};

use super::input::{Staged, route};
use super::log::{ChatKey, Counts, apply_logged, forget, import_line, internal, key, logged_line, op, rebuild};
use super::overdue::Overdue;
use super::report::IngestReport;
use crate::triage::Answered;
use round::{SNAPSHOTS_ALONGSIDE, snapshots};

mod round;
mod stop;

pub use stop::StopSnapshots;

/// The engine, per chat how many operations were logged since its last snapshot, and the operations applied
/// to the engine but not yet written.
struct Inner {
    engine: Engine,
    since_snapshot: Counts,
    pending: Vec<Op>,
    /// The fates of the changes whose operations are in `pending`, told once they are written or dropped.
    waiting: Vec<Fate>,
    /// How many operations were ever queued; an operation's number is its position in that sequence.
    queued: u64,
    /// Chats where a message was edited: compacted once written, so the earlier text leaves the store.
    edited: std::collections::BTreeSet<ChatKey>,
    /// Chats past `store.compact_after` whose snapshot waits for a later write (`round::SNAPSHOTS_PER_WRITE`).
    overdue: Overdue,
}

/// What the commit lock guards (async waiters are told it after each write).
#[derive(Debug, Clone, Copy, Default)]
struct Commit {
    /// Operations up to this number are settled: written, or dropped by a failed write.
    settled: u64,
}

/// Whether a queued change was written, told by whoever settles it: each change holds its own, so a writer
/// that waited behind any number of failed writes still learns its own fate, and nothing outlives the waiter.
type Fate = Arc<std::sync::OnceLock<Result<(), Error>>>;

/// What the writers of changes dropped by a failed write are told.
fn refused(disk_full: bool) -> Error {
    if disk_full {
        Error::new(
            ErrorCode::InsufficientStorage,
            "the store's disk is full: the change was not stored (retrying once space is freed is safe)",
        )
    } else {
        internal("the change could not be stored")
    }
}

/// Tells every change of `fates` how its write went.
fn settle(fates: Vec<Fate>, outcome: &Result<(), Error>) {
    for f in fates {
        let _ = f.set(outcome.clone());
    }
}

/// A change applied to the engine whose durability is still to be waited for ([`Local::wait_durable`]).
#[derive(Debug)]
#[must_use = "a change is acknowledged only once it is durable"]
pub(super) struct Ticket(Fate);

/// Group commit over a single-writer log.
pub(super) struct Local {
    engine: Mutex<Inner>,
    /// Held while writing; lock order is always commit, then engine.
    commit: Mutex<Commit>,
    store: Arc<dyn Log>,
    settings: Settings,
    /// Installed in engines rebuilt after a failed write.
    triage: Option<Arc<Answered>>,
    /// Operations a chat logs before its log is compacted.
    every: u64,
    /// Why the store refused the latest write, until one succeeds again (readiness).
    failing: Mutex<Option<(String, usize)>>,
    /// What is settled, for writers that wait without a thread of their own ([`Local::durable`]).
    settled: tokio::sync::watch::Sender<Commit>,
    /// Whether a writer is writing the queue for the async waiters (at most one at a time).
    writing: std::sync::atomic::AtomicBool,
}

impl Inner {
    /// After `snapshots` were written: their chats' logs start again from them, and none waits for one.
    fn snapshotted(&mut self, snapshots: &[Op]) {
        let chats: Vec<ChatKey> = snapshots.iter().map(|s| key(&s.channel, &s.chat_id)).collect();
        self.overdue.remove_all(&chats);
        for k in chats {
            self.since_snapshot.insert(k, 0);
        }
    }
}

impl Local {
    /// Rebuilds the state `store` holds. How many operations were replayed.
    pub(super) fn open(
        store: Arc<dyn Log>,
        settings: Settings,
        triage: Option<Arc<Answered>>,
        every: u64,
    ) -> anyhow::Result<(Self, u64)> {
        let rebuilt = rebuild(&*store, &settings, triage.as_ref())?;
        let read = rebuilt.read;
        let (engine, since_snapshot) = rebuilt.into_counts();
        // Chats whose logs grew long over earlier runs wait for their snapshots like any chat past
        // `store.compact_after`: the writes after the start take them a few at a time, so the start does not pay
        // for them (nor does one write). A run without writes leaves the logs as they are, and they do not grow.
        let mut due: Vec<&ChatKey> = since_snapshot.iter().filter(|(_, n)| **n >= every).map(|(k, _)| k).collect();
        due.sort_unstable();
        let overdue: Overdue = due.into_iter().cloned().collect();
        if !overdue.is_empty() {
            tracing::info!("{} chats' logs are due for compaction; the next writes compact them", overdue.len());
        }
        let inner = Inner {
            engine,
            since_snapshot,
            pending: Vec::new(),
            waiting: Vec::new(),
            queued: 0,
            edited: Default::default(),
            overdue,
        };
        let local = Self {
            engine: Mutex::new(inner),
            commit: Mutex::default(),
            store,
            settings,
            triage,
            every,
            failing: Mutex::new(None),
            settled: tokio::sync::watch::Sender::new(Commit::default()),
            writing: false.into(),
        };
        Ok((local, read))
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        self.engine.lock().map_err(|_| internal("the engine is unusable after an earlier panic"))
    }

    fn commit_lock(&self) -> Result<MutexGuard<'_, Commit>, Error> {
        self.commit.lock().map_err(|_| internal("the writer is unusable after an earlier panic"))
    }

    /// Queues `ops` (already applied to the engine held by `inner`) and releases the engine. The ticket to
    /// wait on, if there was anything to write.
    fn queue(mut inner: MutexGuard<'_, Inner>, ops: Vec<Op>) -> Option<Ticket> {
        if ops.is_empty() {
            return None;
        }
        inner.queued += ops.len() as u64;
        inner.pending.extend(ops);
        let fate = Fate::default();
        inner.waiting.push(fate.clone());
        Some(Ticket(fate))
    }

    /// Returns once the operations of `ticket` are durable (writing them, with everything else queued, unless
    /// another writer already has), or refuses if their write failed. Blocks on disk I/O.
    pub(super) fn wait_durable(&self, ticket: Ticket) -> Result<(), Error> {
        let mut c = self.commit_lock()?;
        if ticket.0.get().is_none() {
            self.write_queued(&mut c, true)?;
        }
        // Queued before the commit lock was taken, so written (or dropped) by now.
        ticket.0.get().cloned().unwrap_or_else(|| Err(internal("the change was not settled")))
    }

    /// Writes everything queued, with the commit lock held (the engine is not locked meanwhile), and tells
    /// the async waiters. A failed write is told to each change it dropped, through its ticket. `helped`: a
    /// large round may have its snapshots made on a helper thread ([`Local::write_alongside`]): for a caller
    /// that waits on its own thread (a library's ingest), not for the server's writes, whose requests keep
    /// the cores busy under load (a helper there cost HTTP ingest about 4 % of its rate in alternating pairs).
    fn write_queued(&self, c: &mut Commit, helped: bool) -> Result<(), Error> {
        // The engine is locked to look only when a helper could be used at all.
        let large = helped && super::cores() > 1 && self.lock()?.pending.len() >= SNAPSHOTS_ALONGSIDE;
        let alongside = if large { self.write_alongside() } else { None };
        let (round, written) = match alongside {
            Some(done) => done?,
            None => {
                let round = self.take_round_whole(&mut *self.lock()?, &[]);
                let written = self.store.write(&round.batch, &round.snapshots, round.erase);
                (round, written)
            }
        };
        let _told_through_tickets = self.settle_round(c, &mut *self.lock()?, round, written);
        self.publish(c);
        Ok(())
    }

    fn publish(&self, c: &Commit) {
        self.settled.send_replace(*c);
    }

    /// [`Local::wait_durable`] for async callers, without a thread per waiter: one waiter at a time writes
    /// the whole queue on a blocking thread (so a write takes in every change queued meanwhile) and the rest
    /// wait for it to say what it settled.
    pub(super) async fn durable(self: &Arc<Self>, ticket: Ticket) -> Result<(), Error> {
        let local = self;
        let mut settled = local.settled.subscribe();
        loop {
            settled.borrow_and_update();
            // Told before the settlement is published, so a waiter that missed it finds it here.
            if let Some(outcome) = ticket.0.get() {
                return outcome.clone();
            }
            if !local.writing.swap(true, std::sync::atomic::Ordering::AcqRel) {
                let local = self.clone();
                let wrote = tokio::task::spawn_blocking(move || {
                    let mut c = local.commit_lock();
                    let written = match &mut c {
                        Ok(c) if c.settled < local.queued_upto() => local.write_queued(c, false),
                        Ok(_) => Ok(()),
                        Err(e) => Err(e.clone()),
                    };
                    // Cleared before the outcome is published (again, after a write that had nothing to do),
                    // so a waiter woken by it can lead the next write.
                    local.writing.store(false, std::sync::atomic::Ordering::Release);
                    if let Ok(c) = &c {
                        local.publish(c);
                    }
                    written
                })
                .await;
                wrote.map_err(|e| internal(format!("the write did not finish: {e}")))??;
                continue;
            }
            if settled.changed().await.is_err() {
                return Err(internal("the writer stopped"));
            }
        }
    }

    fn queued_upto(&self) -> u64 {
        self.lock().map(|i| i.queued).unwrap_or(0)
    }

    /// After a failed write: every queued operation is dropped (their writers get an error), and the chats
    /// they touched are reloaded from the store alone, so the engine again holds exactly what is durable.
    /// Other chats, and readers, are not held up by a rebuild of everything.
    fn drop_unwritten(&self, c: &mut Commit, inner: &mut Inner, batch: &[Op], mut fates: Vec<Fate>, e: &StoreError) {
        tracing::error!("store append failed: {e}; the changes not yet stored are undone");
        let bytes = batch.iter().chain(&inner.pending).map(|o| o.line.len() + 64).sum();
        self.note_failure(e, bytes);
        let mut chats: Vec<ChatKey> = batch.iter().chain(&inner.pending).map(|o| key(&o.channel, &o.chat_id)).collect();
        chats.sort();
        chats.dedup();
        inner.pending.clear();
        fates.append(&mut inner.waiting);
        if let Err(r) = self.reload(inner, &chats) {
            tracing::error!("reloading {} chats failed ({r}); rebuilding everything from the store", chats.len());
            match rebuild(&*self.store, &self.settings, self.triage.as_ref()) {
                Ok(fresh) => inner.engine = fresh.engine,
                Err(r) => tracing::error!("rebuild failed too: {r}"),
            }
        }
        c.settled = inner.queued;
        settle(fates, &Err(refused(e.is_disk_full())));
    }

    /// Replaces `chats` in the engine with what the store holds for them.
    fn reload(&self, inner: &mut Inner, chats: &[ChatKey]) -> Result<(), Error> {
        for (channel, chat) in chats {
            let mut lines = Vec::new();
            self.store.load_chat(channel, chat, &mut |_, line| lines.push(line)).map_err(internal)?;
            forget(&mut inner.engine, channel, chat);
            let mut newest = Timestamp::default();
            for line in &lines {
                apply_logged(&mut inner.engine, channel, chat, line, &mut newest)?;
            }
        }
        Ok(())
    }

    /// Remembers that the store refused a write: readiness says so until a write succeeds again.
    fn note_failure(&self, e: &dyn std::fmt::Display, bytes: usize) {
        if let Ok(mut f) = self.failing.lock() {
            *f = Some((e.to_string(), bytes));
        }
    }

    fn note_success(&self) {
        if let Ok(mut f) = self.failing.lock()
            && f.is_some()
        {
            tracing::info!("the store takes writes again");
            *f = None;
        }
    }

    /// Writes whatever is queued, with both locks held: for the operations that replace a chat's log, which
    /// must come after everything applied before them.
    fn flush(&self, c: &mut Commit, inner: &mut Inner) -> Result<(), Error> {
        if inner.pending.is_empty() {
            return Ok(());
        }
        let round = self.take_round_whole(inner, &[]);
        let written = self.store.write(&round.batch, &round.snapshots, round.erase);
        let settled = self.settle_round(c, inner, round, written);
        self.publish(c);
        settled
    }

    /// Replaces the logs of `chats` with snapshots of their state, in one transaction (nothing may be queued
    /// for them); with `erase`, what they replace leaves the store's files at once. A failure only leaves the
    /// longer logs.
    fn snapshot(&self, inner: &mut Inner, chats: &[ChatKey], erase: bool) {
        let snapshots = snapshots(&inner.engine, chats.iter());
        match self.store.write(&[], &snapshots, erase) {
            Ok(()) => inner.snapshotted(&snapshots),
            Err(e) => tracing::warn!("snapshots of {} chats failed (their full logs stay): {e}", snapshots.len()),
        }
    }

    /// Applies each decoded input that `allowed` permits and queues the accepted ones' lines, without touching
    /// the disk: the report, and the ticket to wait on ([`Local::wait_durable`], [`Local::durable`]) before
    /// giving it when anything was accepted.
    ///
    /// `decoded` may still be staged meanwhile ([`super::input::stage_and_apply`]): the engine is taken once its first
    /// input is ready. `inputs` is how many it holds, to size what is queued.
    pub(super) fn ingest_queued(
        &self,
        decoded: impl Iterator<Item = Staged>,
        inputs: usize,
        allowed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<(IngestReport, Option<Ticket>), Error> {
        let mut report = IngestReport::default();
        let mut decoded = decoded.peekable();
        decoded.peek();
        let mut inner = self.lock()?;
        let Inner { engine, edited, .. } = &mut *inner;
        // About one operation per input: grown from nothing, a batch's vector was copied ten times.
        let mut ops = Vec::with_capacity(inputs);
        for (index, d) in decoded.enumerate() {
            let result = route(engine, d, allowed)
                .and_then(|(events, logged)| engine.apply_all(events).map(|applied| (applied, logged)));
            match result {
                Ok((applied, logged)) => {
                    for w in applied.warnings {
                        tracing::warn!("{w}");
                    }
                    if applied.edited {
                        edited.extend(logged.iter().map(|o| key(&o.channel, &o.chat_id)));
                    }
                    ops.extend(logged);
                    report.accepted += 1;
                }
                Err(e) => report.reject(index, e),
            }
        }
        Ok((report, Self::queue(inner, ops)))
    }

    /// Answers a call, durably.
    pub(super) fn call(&self, call: &ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        let (response, ticket) = self.call_queued(call, now)?;
        if let Some(t) = ticket {
            self.wait_durable(t)?;
        }
        Ok(response)
    }

    /// The first half of [`Local::call`], which never touches the disk: the answer, and the ticket to wait
    /// on before giving it when the call changed something.
    pub(super) fn call_queued(&self, call: &ToolCall, now: Timestamp) -> Result<(ToolResponse, Option<Ticket>), Error> {
        let mut inner = self.lock()?;
        let response = inner.engine.answer(call, now)?;
        let Scope { channel, chat_id, .. } = call.scope();
        let logged = logged_line(call, now, &response)?.map(|line| op(channel, chat_id, line));
        Ok((response, Self::queue(inner, logged.into_iter().collect())))
    }

    /// Loads a conversation document, replacing that chat's state and its log.
    pub(super) fn import(&self, doc: &ConversationDoc) -> Result<(), Error> {
        let (channel, chat) = (doc.channel.as_str(), doc.chat_id.as_str());
        let line = import_line(doc)?;
        let mut c = self.commit_lock()?;
        let mut inner = self.lock()?;
        self.flush(&mut c, &mut inner)?;
        if let Some(why) = inner.engine.import_conflict(doc) {
            return Err(Error::invalid_request(format!("field `threads`: {why}")));
        }
        inner.engine.import_document(doc)?;
        // The document is the chat's whole state: it replaces the chat's log.
        let size = line.len() + 64;
        let snapshot = [op(channel, chat, line)];
        if let Err(e) = self.store.rewrite_chat(channel, chat, &snapshot) {
            self.note_failure(&e, size);
            if self.reload(&mut inner, &[key(channel, chat)]).is_err()
                && let Ok(fresh) = rebuild(&*self.store, &self.settings, self.triage.as_ref())
            {
                inner.engine = fresh.engine;
            }
            return Err(internal(format!("the import could not be stored: {e}")));
        }
        inner.snapshotted(&snapshot);
        Ok(())
    }

    /// Forgets history sent before `cutoff`; each changed chat's log becomes a snapshot of what is left.
    pub(super) fn expire(&self, cutoff: Timestamp) -> Result<usize, Error> {
        let mut c = self.commit_lock()?;
        let mut inner = self.lock()?;
        self.flush(&mut c, &mut inner)?;
        let changed = inner.engine.drop_before(cutoff);
        let dropped = changed.iter().map(|(_, _, n)| n).sum();
        let chats: Vec<ChatKey> = changed.into_iter().map(|(channel, chat, _)| (channel, chat)).collect();
        // Expired history leaves the files now, as a forgotten chat does.
        self.snapshot(&mut inner, &chats, true);
        Ok(dropped)
    }

    /// Forgets a chat, in memory and in the store.
    pub(super) fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<bool, Error> {
        let mut c = self.commit_lock()?;
        let mut inner = self.lock()?;
        self.flush(&mut c, &mut inner)?;
        // The workspace's people go with its last chat.
        if let Some(workspace) = inner.engine.orphaned_workspace(channel, chat_id) {
            let dir = directory_log_key(&workspace);
            self.store.delete_chat(channel, &dir).map_err(internal)?;
            inner.since_snapshot.remove(&key(channel, &dir));
            inner.overdue.remove(&key(channel, &dir));
            inner.engine.remove_directory(channel, &workspace);
        }
        let deleted = self.store.delete_chat(channel, chat_id).map_err(internal)?;
        inner.since_snapshot.remove(&key(channel, chat_id));
        inner.overdue.remove(&key(channel, chat_id));
        Ok(inner.engine.remove_chat(channel, chat_id) || deleted > 0)
    }

    /// Whether the store takes writes: after a refused write, a probe write tells whether it does again.
    pub(super) fn ping(&self) -> Result<(), StoreError> {
        self.store.ping()?;
        let failing = self.failing.lock().map_err(|_| StoreError::Poisoned)?.clone();
        if let Some((why, bytes)) = failing {
            // As large as the write that failed: a small probe fits in a free page of a nearly full disk.
            self.store
                .probe_write(bytes.max(64 * 1024))
                .map_err(|e| StoreError::Damaged(format!("the store refuses writes ({why}); probing again: {e}")))?;
            self.note_success();
        }
        Ok(())
    }

    pub(super) fn store(&self) -> &dyn chatctx_store::Store {
        &*self.store
    }

    pub(super) fn read<T>(&self, f: impl FnOnce(&Engine) -> T) -> Result<T, Error> {
        Ok(f(&self.lock()?.engine))
    }
}
