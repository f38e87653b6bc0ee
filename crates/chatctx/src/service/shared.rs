//! Durability for a store several instances write at once (PostgreSQL): the engine is only a cache of the
//! store, kept coherent per chat by position (docs/deployment.md).
//!
//! - Every tool call first reads what other instances appended to its chat since this one last looked (one
//!   indexed query, usually empty) and applies it, so it sees everything acknowledged before it started. A read
//!   from an async front end first reads only the chat's newest position, in a query shared with the other
//!   reads in flight ([`super::checks`]), and answers from memory when nothing is newer.
//! - A write to a chat takes that chat's lock in this process, catches up, applies its change and appends at
//!   the position it caught up to ([`SharedLog::append_at`]). If another instance appended first, nothing is
//!   written: the chat is reloaded from the store and the change is made again on the newer state. So
//!   `update_scenario` checks `expected_revision` against every acknowledged revision, in any instance.
//! - Forgetting a chat appends a tombstone that other instances apply; imports and retention append an
//!   `import` of the chat's new document. Group commit is not used: each write is its own statement.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use chatctx_core::engine::{directory_log_key, directory_of_log_key};
use chatctx_core::tools::{Scope, ToolCall, ToolResponse, Writes};
use chatctx_core::transfer::ConversationDoc;
use chatctx_core::{Engine, Error, ErrorCode, Event, Settings, Timestamp};
use chatctx_store::{Op, SharedLog, StoreError};

use super::checks::Checks;
use super::input::{Staged, route};
use super::log::{
    ChatKey, ChatRef, Counts, apply_logged, count, forget, import_line, internal, key, logged_line, rebuild,
    snapshot_line,
};
use super::report::IngestReport;
use crate::logline::LogLine;
use crate::triage::Answered;

/// How often a write to a shared store is tried again after another instance appended to the chat first.
const WRITE_ATTEMPTS: usize = 32;

/// Per-chat write locks: a chat's writes in this process are made one at a time (chats hash onto a fixed set
/// of locks).
const WRITE_LOCKS: usize = 64;

/// An input routed to its chat: its index in the batch, its events and their log operations.
type Routed = (usize, Vec<Event>, Vec<chatctx_store::Op>);

/// Some of an input's events and their log operations.
type Part = (Vec<Event>, Vec<Op>);

/// An input's `person` events and their log operations (all of one directory), apart from the rest.
fn split_people(events: Vec<Event>, ops: Vec<Op>) -> (Option<Part>, Part) {
    if !events.iter().any(|e| matches!(e, Event::Person(_))) {
        return (None, (events, ops));
    }
    let is_dir = |o: &Op| directory_of_log_key(&o.chat_id).is_some();
    let (people_ops, ops): (Vec<Op>, Vec<Op>) = ops.into_iter().partition(is_dir);
    let (people, events): (Vec<Event>, Vec<Event>) = events.into_iter().partition(|e| matches!(e, Event::Person(_)));
    ((!people_ops.is_empty()).then_some((people, people_ops)), (events, ops))
}

/// The engine, per chat how many lines were logged since its last snapshot, and per chat the newest log
/// position applied to the engine (what the store is read after).
struct Inner {
    engine: Engine,
    since_snapshot: Counts,
    heads: HashMap<ChatKey, u64>,
}

/// The engine as a per-chat coherent cache of a shared log.
pub(super) struct Shared {
    engine: Mutex<Inner>,
    store: Arc<dyn SharedLog>,
    /// Per-chat write locks; lock order: write lock, then engine.
    writers: Vec<Mutex<()>>,
    /// Operations a chat logs before its log is compacted.
    every: u64,
    /// Batched news checks for reads from async front ends, when the store reads heads over a network.
    checks: Option<Arc<Checks>>,
    /// Logged operations of other instances this one could not apply, and the newest of them: the instance's
    /// view differs from the store's, so it says it is not ready (`/readyz`) and counts them (`/metrics`).
    skipped: Mutex<(u64, Option<String>)>,
}

impl Shared {
    /// Rebuilds the state `store` holds. How many operations were replayed.
    pub(super) fn open(
        store: Arc<dyn SharedLog>,
        settings: Settings,
        triage: Option<Arc<Answered>>,
        every: u64,
    ) -> anyhow::Result<(Self, u64)> {
        let rebuilt = rebuild(&*store, &settings, triage.as_ref())?;
        // The counts carry over, so a chat's next write compacts its log when earlier runs made it long.
        let read = rebuilt.read;
        let (engine, heads, since_snapshot) = rebuilt.into_parts();
        let inner = Inner { engine, since_snapshot, heads };
        let writers = (0..WRITE_LOCKS).map(|_| Mutex::new(())).collect();
        let skipped = Mutex::new((0, None));
        let checks = store.heads_async(Vec::new()).is_some().then(|| {
            let store = store.clone();
            Checks::new(Box::new(move |keys| store.heads_async(keys)))
        });
        Ok((Self { engine: Mutex::new(inner), store, writers, every, checks, skipped }, read))
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        self.engine.lock().map_err(|_| internal("the engine is unusable after an earlier panic"))
    }

    /// Applies each decoded input that `allowed` permits: the inputs of each chat are one write to that chat.
    pub(super) fn ingest(
        &self,
        decoded: Vec<Staged>,
        allowed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<IngestReport, Error> {
        let mut report = IngestReport::default();
        // An input may be two writes (a directory's and a chat's): it is reported once, refused if either was.
        let mut refused_inputs = std::collections::BTreeSet::new();
        let mut reject = |index, e: Error| {
            if refused_inputs.insert(index) {
                report.reject(index, e);
            }
        };
        // Inputs by chat, in a fixed chat order (directories first). An input that names no chat (an activation
        // of a platform id no one knows) changes nothing and is accepted as such.
        let mut by_chat: std::collections::BTreeMap<ChatKey, Vec<Routed>> = Default::default();
        let mut ok = std::collections::BTreeSet::new();
        self.find_externals(&decoded)?;
        {
            let inner = self.lock()?;
            for (index, d) in decoded.into_iter().enumerate() {
                // A person is written to its workspace's directory, apart from the chat a payload names.
                let d = route(&inner.engine, d, allowed).map(|(events, ops)| {
                    let (people, rest) = split_people(events, ops);
                    if let Some((events, ops)) = people {
                        by_chat.entry(key(&ops[0].channel, &ops[0].chat_id)).or_default().push((index, events, ops));
                    }
                    rest
                });
                match d {
                    Err(e) => reject(index, e),
                    Ok((_, ops)) if ops.is_empty() => _ = ok.insert(index),
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
        for ((channel, chat), inputs) in by_chat {
            let written = self.write_chat(&channel, &chat, false, |engine| {
                let (mut ok, mut refused, mut lines, mut externals) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for (index, events, ops) in &inputs {
                    match engine.apply_all(events.clone()) {
                        Ok(applied) => {
                            applied.warnings.iter().for_each(|w| tracing::warn!("{w}"));
                            lines.extend(ops.iter().map(|o| o.line.clone()));
                            externals.extend(events.iter().flat_map(Event::external_ids).map(str::to_owned));
                            ok.push(*index);
                        }
                        Err(e) => refused.push((*index, e)),
                    }
                }
                Ok(((ok, refused, externals), lines))
            });
            match written {
                Ok((written, refused, externals)) => {
                    ok.extend(written);
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
        report.accepted = ok.difference(&refused_inputs).count();
        report.rejected.sort_by_key(|r| r.index);
        Ok(report)
    }

    /// Shared store: for activations that name only a platform id this instance has never seen (a vote on a
    /// poll sent through another instance), finds the poll's chat in the store and catches up with it, so
    /// that routing finds the poll.
    fn find_externals(&self, decoded: &[Staged]) -> Result<(), Error> {
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

    /// Answers a call: catch up with the chat, answer from the engine if the call changes
    /// nothing, and otherwise make it as a write to the chat.
    pub(super) fn call(&self, call: &ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        let Scope { channel, chat_id, .. } = call.scope();
        if !chat_id.is_empty() {
            self.catch_up_with_people(channel, chat_id)?;
        }
        if let Some(answer) = self.lock()?.engine.answer_read_only(call, now)? {
            return Ok(answer);
        }
        self.call_as_write(call, now)
    }

    /// Shared store: a tool call made as a write to its chat (it appends only if it changed something).
    pub(super) fn call_as_write(&self, call: &ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        let Scope { channel, chat_id, .. } = call.scope();
        self.write_chat(channel, chat_id, false, |engine| {
            let answer = engine.answer(call, now)?;
            let line = logged_line(call, now, &answer)?;
            Ok((answer, line.into_iter().collect()))
        })
    }

    /// From an async front end: the answer if the call only reads and neither the chat nor its workspace's
    /// people directory (whose names its answers show) has anything new since this instance last looked;
    /// `None` when it must take [`Shared::call_as_write`]. The check is one query shared with the other reads
    /// in flight ([`Checks`]), awaited without a thread of its own.
    pub(super) async fn read_unchanged(&self, call: &ToolCall, now: Timestamp) -> Result<Option<ToolResponse>, Error> {
        let Scope { channel, chat_id: chat, .. } = call.scope();
        let Some(checks) = self.checks.as_ref().filter(|_| !chat.is_empty() && call.writes() != Writes::Always) else {
            return Ok(None);
        };
        let keys = vec![key(channel, chat), key(channel, &self.people_of(channel, chat)?)];
        let applied: Vec<u64> = {
            let inner = self.lock()?;
            keys.iter().map(|k| inner.heads.get(k).copied().unwrap_or(0)).collect()
        };
        let heads = checks.heads(keys).await.map_err(|e| internal(format!("the store cannot be read: {e}")))?;
        if heads.iter().zip(&applied).any(|(stored, applied)| stored > applied) {
            return Ok(None);
        }
        self.lock()?.engine.answer_read_only(call, now)
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

    /// [`Shared::catch_up`] with the chat, then with its workspace's people directory, whose names its answers
    /// show.
    fn catch_up_with_people(&self, channel: &str, chat: &str) -> Result<(), Error> {
        self.catch_up(channel, chat)?;
        self.catch_up(channel, &self.people_of(channel, chat)?)
    }

    /// The log key of the people directory of the chat's workspace.
    fn people_of(&self, channel: &str, chat: &str) -> Result<String, Error> {
        self.read(|e| directory_log_key(e.workspace_of(channel, chat).unwrap_or_default()))
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
                let what = format!("logged operation {pos} of chat {chat:?} ({channel}) does not apply here: {e}");
                tracing::error!(
                    "{what}; this instance now differs from the store until it restarts (docs/operations.md)"
                );
                if let Ok(mut skipped) = self.skipped.lock() {
                    skipped.0 += 1;
                    skipped.1 = Some(what);
                }
            }
            *head = pos;
        }
        Ok(())
    }

    /// Shared store: drops the chat from the engine, to be reloaded from the store on its next use.
    fn reload_later(&self, channel: &str, chat: &str) -> Result<(), Error> {
        let mut inner = self.lock()?;
        forget(&mut inner.engine, channel, chat);
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
        let every = self.every;
        let snapshot = {
            let Ok(mut inner) = self.lock() else { return };
            inner.heads.insert(key(channel, chat), head);
            let n = count(&mut inner.since_snapshot, ChatRef(channel, chat), lines.len() as u64);
            if replaces {
                lines.last().cloned()
            } else if *n >= every {
                snapshot_line(&inner.engine, channel, chat).ok()
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

    /// Loads a conversation document (replacing that chat) as one write that replaces the chat's log.
    pub(super) fn import(&self, doc: &ConversationDoc) -> Result<(), Error> {
        let (channel, chat) = (doc.channel.as_str(), doc.chat_id.as_str());
        let line = import_line(doc)?;
        self.write_chat(channel, chat, true, |engine| {
            if let Some(why) = engine.import_conflict(doc) {
                return Err(Error::invalid_request(format!("field `threads`: {why}")));
            }
            engine.import_document(doc)?;
            Ok(((), vec![line.clone()]))
        })?;
        // Its polls' ids, so that votes reach it through any instance.
        for id in doc.objects.iter().filter_map(|o| o.external_id.as_deref()) {
            self.store.note_external(channel, chat, id).map_err(internal)?;
        }
        Ok(())
    }

    /// Forgets history sent before `cutoff`: each changed chat becomes an import of what is left, which the
    /// other instances apply too.
    pub(super) fn expire(&self, cutoff: Timestamp) -> Result<usize, Error> {
        let mut dropped = 0;
        for (channel, chat) in self.read(Engine::chat_keys)? {
            dropped += self.write_chat(&channel, &chat, true, |engine| {
                let n = engine.drop_chat_before(&channel, &chat, cutoff);
                let line = if n > 0 { Some(import_line(&engine.export_conversation(&channel, &chat)?)?) } else { None };
                Ok((n, line.into_iter().collect()))
            })?;
        }
        Ok(dropped)
    }

    /// Forgets a chat: a tombstone, so that every instance forgets it; compaction then drops everything
    /// before it.
    pub(super) fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<bool, Error> {
        // The workspace's people go with its last chat: a tombstone for the directory first. Chats other instances
        // made since this one started are loaded first, so that none of the workspace is missed.
        self.catch_up_with_people(channel, chat_id)?;
        let held: std::collections::HashSet<String> =
            self.read(|e| e.chat_keys().into_iter().filter(|(ch, _)| ch == channel).map(|(_, c)| c).collect())?;
        for other in self.store.chat_ids(channel).map_err(|e| internal(format!("the store cannot be read: {e}")))? {
            if !held.contains(&other) && directory_of_log_key(&other).is_none() {
                self.catch_up(channel, &other)?;
            }
        }
        if let Some(workspace) = self.read(|e| e.orphaned_workspace(channel, chat_id))? {
            self.write_chat(channel, &directory_log_key(&workspace), true, |engine| {
                let held = engine.remove_directory(channel, &workspace);
                Ok(((), if held { vec![LogLine::Forget.to_line()?] } else { Vec::new() }))
            })?;
        }
        let held = self.write_chat(channel, chat_id, true, |engine| {
            let held = engine.remove_chat(channel, chat_id);
            Ok((held, if held { vec![LogLine::Forget.to_line()?] } else { Vec::new() }))
        })?;
        self.store.forget_externals(channel, chat_id).map_err(internal)?;
        Ok(held)
    }

    pub(super) fn ping(&self) -> Result<(), StoreError> {
        self.store.ping()
    }

    /// How many logged operations of other instances this one could not apply, and the newest of them.
    pub(super) fn skipped(&self) -> (u64, Option<String>) {
        self.skipped.lock().map(|s| s.clone()).unwrap_or((0, None))
    }

    pub(super) fn store(&self) -> &dyn chatctx_store::Store {
        &*self.store
    }

    pub(super) fn read<T>(&self, f: impl FnOnce(&Engine) -> T) -> Result<T, Error> {
        Ok(f(&self.lock()?.engine))
    }

    /// Runs `f` on the engine for one chat, after catching up with the store.
    pub(super) fn read_chat<T>(&self, channel: &str, chat: &str, f: impl FnOnce(&Engine) -> T) -> Result<T, Error> {
        self.catch_up_with_people(channel, chat)?;
        self.read(f)
    }
}
