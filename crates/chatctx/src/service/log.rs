//! The service's log, which both durability strategies write and read: rebuilding an engine from a store,
//! applying one logged operation, and building the line of an event, a state-changing call or a snapshot.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use chatctx_core::engine::{directory_log_key, directory_of_log_key};
use chatctx_core::event::{ActivationEvent, ObjectRef};
use chatctx_core::kinds::Activation;
use chatctx_core::tools::{ToolCall, ToolResponse};
use chatctx_core::transfer::ConversationDoc;
use chatctx_core::{Engine, Error, ErrorCode, Event, Settings, Timestamp};
use chatctx_store::{Op, Store};

use crate::logline::{EventLine, LogLine};
use crate::triage::{Answered, Installed};

/// A chat: (channel, chat id).
pub(super) type ChatKey = (String, String);

pub(super) fn key(channel: &str, chat: &str) -> ChatKey {
    (channel.to_owned(), chat.to_owned())
}

/// A chat's key borrowed from an operation, to look it up where [`ChatKey`]s are kept without making one: it
/// hashes as the owned key does (each part in turn, as a string).
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub(super) struct ChatRef<'a>(pub(super) &'a str, pub(super) &'a str);

impl<'a> ChatRef<'a> {
    pub(super) fn of(op: &'a Op) -> Self {
        Self(&op.channel, &op.chat_id)
    }
}

impl hashbrown::Equivalent<ChatKey> for ChatRef<'_> {
    fn equivalent(&self, k: &ChatKey) -> bool {
        self.0 == k.0 && self.1 == k.1
    }
}

/// Per chat, how many operations it logged since its last snapshot.
pub(super) type Counts = hashbrown::HashMap<ChatKey, u64>;

/// A chat's entry in `map`, made with the default value when the chat is new (its key is built only then).
fn entry<'a, V: Default>(map: &'a mut hashbrown::HashMap<ChatKey, V>, chat: ChatRef<'_>) -> &'a mut V {
    match map.entry_ref(&chat) {
        hashbrown::hash_map::EntryRef::Occupied(e) => e.into_mut(),
        hashbrown::hash_map::EntryRef::Vacant(e) => e.insert_with_key(key(chat.0, chat.1), V::default()),
    }
}

/// Adds `n` to a chat's count: the count.
pub(super) fn count<'a>(counts: &'a mut Counts, chat: ChatRef<'_>, n: u64) -> &'a mut u64 {
    let c = entry(counts, chat);
    *c += n;
    c
}

pub(super) fn internal(why: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Internal, why.to_string())
}

pub(super) fn new_engine(settings: &Settings, triage: Option<&Arc<Answered>>) -> Engine {
    let mut engine = Engine::new(settings.clone());
    if let Some(t) = triage {
        engine.set_triage(Box::new(Installed(t.clone())));
    }
    engine
}

/// What [`rebuild`] makes: the engine, how many operations were read, and per chat its newest position and how many
/// operations it logged since its last snapshot (so compaction stays due across restarts).
pub(super) struct Rebuilt {
    pub(super) engine: Engine,
    pub(super) read: u64,
    chats: hashbrown::HashMap<ChatKey, (u64, u64)>,
}

impl Rebuilt {
    /// The engine, and per chat its newest position and its count since its last snapshot (what instances sharing a
    /// store keep).
    pub(super) fn into_parts(self) -> (Engine, HashMap<ChatKey, u64>, Counts) {
        let heads = self.chats.iter().map(|(k, (head, _))| (k.clone(), *head)).collect();
        (self.engine, heads, counts_of(self.chats))
    }

    /// The engine, and per chat its count since its last snapshot (all a single writer keeps).
    pub(super) fn into_counts(self) -> (Engine, Counts) {
        (self.engine, counts_of(self.chats))
    }
}

/// Per chat, how many operations it logged since its last snapshot.
fn counts_of(chats: hashbrown::HashMap<ChatKey, (u64, u64)>) -> Counts {
    chats.into_iter().map(|(k, (_, since))| (k, since)).collect()
}

/// A logged operation that cannot be applied: startup stops on it rather than lose it quietly
/// (`chatctx store check` lists them, `chatctx store repair --drop-damaged` drops them).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "logged operation {position} of chat {chat_id:?} ({channel}) cannot be applied: {why}; the store is damaged or \
     was written by a newer chatctx. Nothing was changed. `chatctx store check` lists every such operation; \
     `chatctx store repair --drop-damaged` removes them (see docs/operations.md)"
)]
pub struct Damaged {
    /// Platform of the chat.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The operation's position in the chat's log.
    pub position: u64,
    /// Why it cannot be applied.
    pub why: String,
}

impl Damaged {
    fn at(position: u64, op: &Op, e: Error) -> Self {
        Self { channel: op.channel.clone(), chat_id: op.chat_id.clone(), position, why: e.message }
    }
}

/// A restart hands what it read and decoded to the applying thread in batches of this many operations (one
/// wake-up per batch, not per operation), or fewer when their lines reach [`BATCH_BYTES`] (a chat's snapshot is
/// one long line), at most [`READ_AHEAD`] batches ahead. 1,024 rather than 128: on 1,000,000 messages, ready in
/// ~0.98 s instead of ~1.18 s (medians of eight runs in turn; 4,096 measured the same as 1,024).
const BATCH: usize = 1024;
const BATCH_BYTES: usize = 1 << 20;
const READ_AHEAD: usize = 4;

/// Logged operations read and decoded, with their positions.
type Batch = Vec<(u64, Op, Result<Prepared, Error>)>;

/// Replays the store into a fresh engine; stops at the first operation that cannot be applied. One thread
/// reads and decodes the log (most of a restart's work) while this one applies it, in the order read, so the
/// state is the one a replay on one thread builds.
pub(super) fn rebuild(
    store: &dyn Store,
    settings: &Settings,
    triage: Option<&Arc<Answered>>,
) -> anyhow::Result<Rebuilt> {
    let mut engine = new_engine(settings, triage);
    // Per chat, its newest position and how many operations it logged since its last snapshot: one lookup an
    // operation for both.
    let mut chats: hashbrown::HashMap<ChatKey, (u64, u64)> = hashbrown::HashMap::new();
    let mut newest = Timestamp::default();
    let mut damaged = None;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (ahead, ready) = std::sync::mpsc::sync_channel::<Batch>(READ_AHEAD);
    let read = std::thread::scope(|scope| {
        let reader = std::thread::Builder::new().name("chatctx-replay-read".to_owned()).spawn_scoped(scope, || {
            let ahead = ahead;
            // The running time as the applying side will have it: lines are applied in this order, and a
            // line that fails to apply stops the replay.
            let mut newest = Timestamp::default();
            let mut batch = Batch::with_capacity(BATCH);
            let mut bytes = 0;
            let read = store.load(&mut |pos, mut op| {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                bytes += op.line.len();
                let prepared = prepare(&std::mem::take(&mut op.line), &mut newest);
                batch.push((pos, op, prepared));
                if batch.len() == BATCH || bytes >= BATCH_BYTES {
                    bytes = 0;
                    if ahead.send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH))).is_err() {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
            let _ = ahead.send(batch);
            read
        })?;
        for (pos, op, prepared) in ready.into_iter().flatten() {
            match prepared.and_then(|p| apply_prepared(&mut engine, &op.channel, &op.chat_id, p, &mut newest)) {
                Ok(kind) => {
                    let (head, since) = entry(&mut chats, ChatRef::of(&op));
                    *head = pos.max(*head);
                    *since = if kind == Applied::Snapshot { 0 } else { *since + 1 };
                }
                Err(e) => {
                    damaged = Some(Damaged::at(pos, &op, e));
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
            }
        }
        reader.join().map_err(|_| anyhow::anyhow!("reading the store's log stopped unexpectedly"))
    })??;
    if let Some(d) = damaged {
        return Err(d.into());
    }
    Ok(Rebuilt { engine, read, chats })
}

/// Every operation of `ops` (in the order written) that cannot be applied, replaying them all as a start
/// would: what `chatctx store check` reports and `repair --drop-damaged` drops. An operation after a damaged
/// one of the same chat is judged on the state without it, as the repaired store will hold.
pub fn find_damaged(settings: &Settings, ops: &[(u64, Op)]) -> Vec<Damaged> {
    let mut engine = Engine::new(settings.clone());
    let mut newest = Timestamp::default();
    let mut damaged = Vec::new();
    for (pos, op) in ops {
        if let Err(e) = apply_logged(&mut engine, &op.channel, &op.chat_id, &op.line, &mut newest) {
            damaged.push(Damaged::at(*pos, op, e));
        }
    }
    damaged
}

/// What kind of logged operation was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Applied {
    /// A change.
    Change,
    /// A document that stands for the chat's whole log before it (an import or a compaction).
    Snapshot,
}

/// Applies one logged operation of a chat.
pub(super) fn apply_logged(
    engine: &mut Engine,
    channel: &str,
    chat: &str,
    line: &str,
    newest: &mut Timestamp,
) -> Result<Applied, Error> {
    let mut ahead = *newest;
    let prepared = prepare(line, &mut ahead)?;
    apply_prepared(engine, channel, chat, prepared, newest)
}

/// A logged operation read and decoded: what applying it needs no engine for.
pub(super) enum Prepared {
    /// An event line's events.
    Events(Vec<Event>),
    /// A document, a call or a `forget` (boxed: most operations are events).
    Line(Box<LogLine<'static>>),
}

/// Reads and decodes a logged operation at the running time `newest`, which moves to its events' newest time
/// as applying them will move it.
pub(super) fn prepare(line: &str, newest: &mut Timestamp) -> Result<Prepared, Error> {
    let events = match LogLine::parse(line).map_err(|bad| bad.error)? {
        LogLine::Event(EventLine::Decoded(event)) => vec![event.into_owned()],
        LogLine::Event(EventLine::Raw(event)) => crate::logline::decode_events(&event, *newest)?.0,
        line => return Ok(Prepared::Line(Box::new(line))),
    };
    if let Some(t) = events.iter().map(Event::time).max() {
        *newest = (*newest).max(t);
    }
    Ok(Prepared::Events(events))
}

/// Applies a [`prepare`]d operation of a chat.
pub(super) fn apply_prepared(
    engine: &mut Engine,
    channel: &str,
    chat: &str,
    prepared: Prepared,
    newest: &mut Timestamp,
) -> Result<Applied, Error> {
    match prepared {
        Prepared::Events(events) => crate::logline::load_events(engine, events, newest).map(|()| Applied::Change),
        Prepared::Line(line) => match *line {
            LogLine::Forget => {
                forget(engine, channel, chat);
                Ok(Applied::Snapshot)
            }
            line @ (LogLine::Import(_) | LogLine::People(_)) => line.load(engine, newest).map(|()| Applied::Snapshot),
            line => line.load(engine, newest).map(|()| Applied::Change),
        },
    }
}

/// Forgets what a log key holds: a chat, or a workspace's people directory.
pub(super) fn forget(engine: &mut Engine, channel: &str, key: &str) {
    match directory_of_log_key(key) {
        Some(workspace) => {
            engine.remove_directory(channel, workspace);
        }
        None => {
            engine.remove_chat(channel, key);
        }
    }
}

/// The snapshot line of what a log key holds (a chat's document, a directory's), if it holds anything.
pub(super) fn snapshot_line(engine: &Engine, channel: &str, key: &str) -> Result<String, Error> {
    match directory_of_log_key(key) {
        Some(workspace) => {
            let doc = engine
                .export_directory(channel, workspace)
                .ok_or_else(|| Error::new(ErrorCode::UnknownChat, format!("no people directory {workspace:?}")))?;
            LogLine::People(Cow::Owned(doc)).to_line()
        }
        None => engine.conversation_view(channel, key).and_then(|view| LogLine::of_view(&view)),
    }
}

/// The log line of a state-changing call, with its time fixed so that it means the same when the log is
/// replayed.
pub(super) fn fixed_call(call: &ToolCall, now: Timestamp) -> Result<String, Error> {
    let mut fixed = call.clone();
    fixed.fill_now(now);
    LogLine::Call(Cow::Owned(fixed)).to_line()
}

/// The log line of an answered tool call, when the call changed the state.
pub(super) fn logged_line(call: &ToolCall, now: Timestamp, response: &ToolResponse) -> Result<Option<String>, Error> {
    let line = match response {
        // With its time fixed, so that it means the same when the log is replayed.
        ToolResponse::Scenario(s) if s.changed == Some(true) => fixed_call(call, now)?,
        ToolResponse::Summary(s) if s.changed => fixed_call(call, now)?,
        // Only a recording that changed the state is logged (a repeated call for the same message is not).
        ToolResponse::Resolve(r) => match r.best_match.as_ref().filter(|_| r.recorded) {
            Some(best) => {
                let scope = call.scope();
                let event = Event::Activation(ActivationEvent {
                    channel: scope.channel.clone(),
                    target: ObjectRef::Id { chat_id: scope.chat_id.clone(), object_id: best.object_id.to_string() },
                    event: Activation::Resolved,
                    at: call.now().unwrap_or(now),
                    by_user_id: None,
                    message_id: scope.current_message_id.clone(),
                    close: false,
                });
                LogLine::event(&event).to_line()?
            }
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    Ok(Some(line))
}

pub(super) fn op(channel: &str, chat_id: &str, line: String) -> Op {
    Op { channel: channel.to_owned(), chat_id: chat_id.to_owned(), line }
}

/// The log operation of an event, if it names a chat (an activation of an unknown platform id does not, and
/// changes nothing).
pub(super) fn event_op(e: &Event) -> Option<Result<Op, Error>> {
    let line = || LogLine::event(e).to_line();
    if let Some((channel, workspace)) = e.directory() {
        // A person is logged with its workspace's directory (once [`super::input::route`] filled the workspace in).
        return Some(line().map(|l| op(channel, &directory_log_key(workspace), l)));
    }
    let (channel, chat) = e.chat()?;
    Some(line().map(|line| op(channel, chat, line)))
}

/// The log line of a chat's whole state.
pub(super) fn import_line(doc: &ConversationDoc) -> Result<String, Error> {
    LogLine::Import(Cow::Borrowed(doc)).to_line()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chat counted by borrowed names is the chat its owned key names: the same entry, made once.
    #[test]
    fn a_borrowed_chat_finds_its_owned_key() {
        let mut counts = Counts::new();
        counts.insert(key("telegram", "-1"), 5);
        assert_eq!(*count(&mut counts, ChatRef("telegram", "-1"), 2), 7);
        assert_eq!(*count(&mut counts, ChatRef("telegram", "-2"), 1), 1);
        assert_eq!(*count(&mut counts, ChatRef("slack", "-1"), 3), 3);
        assert_eq!(*count(&mut counts, ChatRef("telegram", "-2"), 4), 5);
        assert_eq!(counts.len(), 3);
        assert_eq!(counts.get(&key("telegram", "-1")), Some(&7));
        assert_eq!(counts.get(&ChatRef("telegram", "-2")), Some(&5));
        // The parts are told apart, not run together.
        assert_eq!(counts.get(&ChatRef("telegram-", "1")), None);
    }
}
