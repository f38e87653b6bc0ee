//! The service core shared by the HTTP and MCP front ends: one engine, and a store that makes every
//! acknowledged change durable before the answer.
//!
//! Writes are logged as replay lines ([`LogLine`]): decoded events, `update_scenario` / `revert_scenario` calls
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

mod local;
mod shared;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use chatctx_core::event::{ActivationEvent, ObjectRef};
use chatctx_core::kinds::Activation;
use chatctx_core::settings::Scope;
use chatctx_core::tools::{ToolCall, ToolResponse};
use chatctx_core::transfer::ConversationDoc;
use chatctx_core::{Engine, Error, ErrorCode, Event, Settings, Timestamp};
use chatctx_store::{Op, Opened, Store};
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
    fn reject(&mut self, index: usize, e: Error) {
        self.rejected_count += 1;
        self.rejected.push(Rejection { index, code: e.code, message: e.message });
    }

    /// Keeps the first `max` rejections listed (the count stays whole).
    pub fn cap_rejections(&mut self, max: usize) {
        self.rejected.truncate(max);
    }

    /// Adds what the mapping decided for the inputs that were accepted.
    fn note(&mut self, notes: Vec<Note>) {
        let rejected: std::collections::HashSet<usize> = self.rejected.iter().map(|r| r.index).collect();
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
struct Note {
    ignored: Vec<String>,
    messages: Vec<(String, chatctx_core::event::MessageKind, bool)>,
}

type ChatKey = (String, String);

fn key(channel: &str, chat: &str) -> ChatKey {
    (channel.to_owned(), chat.to_owned())
}

/// The running service.
pub struct Service {
    durability: Durability,
    /// The decision records of recent answers (`[decisions]`).
    decisions: crate::decisions::Decisions,
    /// Model triage, when configured: asked before the engine is locked (see [`Service::call`]).
    triage: Option<Arc<Answered>>,
    /// The background summarizer, when `[summary] enabled` ([`Service::with_summarizer`]).
    summarizer: Option<Arc<crate::summarizer::Summarizer>>,
}

/// How changes become durable: chosen once, from the store the service was opened on.
#[allow(clippy::large_enum_variant)] // one per process
enum Durability {
    /// A store this process alone writes.
    Local(local::Local),
    /// A store other instances write too.
    Shared(shared::Shared),
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

/// What [`rebuild`] makes: the engine, how many operations were read, each chat's newest position, and per
/// chat how many operations were logged since its last snapshot (so compaction stays due across restarts).
struct Rebuilt {
    engine: Engine,
    read: u64,
    heads: HashMap<ChatKey, u64>,
    since_snapshot: HashMap<ChatKey, u64>,
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

/// Replays the store into a fresh engine; stops at the first operation that cannot be applied.
fn rebuild(store: &dyn Store, settings: &Settings, triage: Option<&Arc<Answered>>) -> anyhow::Result<Rebuilt> {
    let mut engine = new_engine(settings, triage);
    let mut heads = HashMap::new();
    let mut since_snapshot: HashMap<ChatKey, u64> = HashMap::new();
    let mut newest = Timestamp::default();
    let mut damaged = None;
    let read = store.load(&mut |pos, op| {
        if damaged.is_some() {
            return;
        }
        match apply_logged(&mut engine, &op.channel, &op.chat_id, &op.line, &mut newest) {
            Ok(kind) => {
                let count = since_snapshot.entry(key(&op.channel, &op.chat_id)).or_default();
                *count = if kind == Applied::Snapshot { 0 } else { *count + 1 };
            }
            Err(e) => damaged = Some(Damaged::at(pos, &op, e)),
        }
        let head = heads.entry((op.channel, op.chat_id)).or_default();
        *head = pos.max(*head);
    })?;
    if let Some(d) = damaged {
        return Err(d.into());
    }
    Ok(Rebuilt { engine, read, heads, since_snapshot })
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
enum Applied {
    /// A change.
    Change,
    /// A document that stands for the chat's whole log before it (an import or a compaction).
    Snapshot,
}

/// Applies one logged operation of a chat.
fn apply_logged(
    engine: &mut Engine,
    channel: &str,
    chat: &str,
    line: &str,
    newest: &mut Timestamp,
) -> Result<Applied, Error> {
    match LogLine::parse(line).map_err(|bad| bad.error)? {
        LogLine::Forget => {
            engine.remove_chat(channel, chat);
            Ok(Applied::Snapshot)
        }
        line @ LogLine::Import(_) => replay::load_line(engine, line, newest).map(|()| Applied::Snapshot),
        line => replay::load_line(engine, line, newest).map(|()| Applied::Change),
    }
}

/// The log line of a state-changing call, with its time fixed so that it means the same when the log is
/// replayed.
fn fixed_call(call: &ToolCall, now: Timestamp) -> Result<String, Error> {
    let mut fixed = call.clone();
    fixed.fill_now(now);
    LogLine::Call(Cow::Owned(fixed)).to_line()
}

/// The log line of an answered tool call, when the call changed the state.
fn logged_line(call: &ToolCall, now: Timestamp, response: &ToolResponse) -> Result<Option<String>, Error> {
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

/// Routes an input's platform-id activations and its events addressed to known threads to their chats,
/// refusing chats `allowed` rejects. Cheap when there are none (the common case).
fn route(engine: &Engine, input: Input, allowed: &dyn Fn(&str, &str) -> bool) -> Input {
    let (mut events, mut ops) = input?;
    // Only an input that names no chat (a poll answer) or a known thread's id needs routing.
    let routed = |e: &Event| e.chat().is_none_or(|(channel, chat)| engine.is_thread(channel, chat));
    if events.iter().any(routed) {
        events.iter_mut().for_each(|e| engine.route(e));
        ops = events.iter().filter_map(event_op).collect::<Result<_, _>>()?;
    }
    // The chat is not named: an input may reach it only through a platform id (a poll answer), and a caller
    // must not learn which chat holds it.
    if ops.iter().any(|o| !allowed(&o.channel, &o.chat_id)) {
        return Err(Error::new(ErrorCode::ForbiddenScope, "this credential may not write to the chat of this input"));
    }
    Ok((events, ops))
}

/// Which chats (channel, chat id) a credential may write, shared with the thread that applies its inputs.
pub type Allowed = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// Ingest batches up to this many inputs are applied on the async caller's thread (microseconds each); larger
/// ones on a blocking thread.
const INLINE_INPUTS: usize = 16;

/// Operations a chat may log before its log is replaced by a snapshot: twice what one of its conversations
/// holds (at least 400), so the log stays proportional to the live state. With 1,000 chats and 1,000,000
/// messages ingested, restart replays about 200,000 operations (docs/benchmarks.md).
fn snapshot_every(settings: &Settings, options: &Options) -> u64 {
    match options.compact_after {
        0 => (settings.conversation.cache_max_per_conversation as u64 * 2).max(400),
        n => n,
    }
}

/// How the service keeps its store, beyond the engine's settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `store.compact_after`: operations a chat may log before its log is replaced by a snapshot; 0 chooses
    /// twice what one of its conversations holds, at least 400.
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
                (Durability::Local(local), read)
            }
            Opened::Shared(log) => {
                let (shared, read) = shared::Shared::open(log, settings, triage.clone(), every)?;
                (Durability::Shared(shared), read)
            }
        };
        Ok((Self { durability, triage, decisions, summarizer: None }, read))
    }

    /// Adds the background summarizer when `settings.enabled` (on the `[llm]` endpoint). It runs once
    /// [`Service::start_background`] is called on the shared service.
    pub fn with_summarizer(
        mut self,
        settings: crate::config::SummarizerSettings,
        llm: &LlmSettings,
    ) -> anyhow::Result<Self> {
        if settings.enabled {
            let model = crate::triage::HttpTriage::from_settings(llm)?
                .ok_or_else(|| anyhow::anyhow!("summary.enabled: the summarizer needs llm.base_url"))?;
            self.summarizer = Some(Arc::new(crate::summarizer::Summarizer::new(settings, model)));
        }
        Ok(self)
    }

    /// Starts the background work (the summarizer, when configured). Its thread holds the service weakly and
    /// ends with it.
    pub fn start_background(self: &Arc<Self>) -> anyhow::Result<()> {
        if let Some(s) = &self.summarizer {
            s.start(Arc::downgrade(self))?;
        }
        Ok(())
    }

    /// The background summarizer, when configured.
    pub fn summarizer(&self) -> Option<&crate::summarizer::Summarizer> {
        self.summarizer.as_deref()
    }

    /// The conversations an ingest's messages went to, for the summarizer (nothing without one).
    fn conversations(&self, decoded: &[Input]) -> Vec<(String, String, Option<String>)> {
        if self.summarizer.is_none() {
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
        let Some(s) = &self.summarizer else { return };
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
    pub fn ingest_for(
        &self,
        inputs: &[Value],
        now: Timestamp,
        allowed: &dyn Fn(&str, &str) -> bool,
    ) -> Result<IngestReport, Error> {
        let (decoded, notes) = Self::decode_inputs(inputs, now);
        let convs = self.conversations(&decoded);
        let mut report = match &self.durability {
            Durability::Local(l) => l.ingest(decoded, allowed),
            Durability::Shared(s) => s.ingest(decoded, allowed),
        }?;
        report.note(notes);
        self.queue_due(convs);
        Ok(report)
    }

    /// Decoding (JSON, the Telegram mapping) needs no state: it is done before taking the engine. With each
    /// input, what its mapping decided.
    fn decode_inputs(inputs: &[Value], now: Timestamp) -> (Vec<Input>, Vec<Note>) {
        inputs
            .iter()
            .map(|v| {
                let mut note = Note::default();
                let input = ingest::decode(v, now).and_then(|d| {
                    note.ignored = d.ignored;
                    note.messages = d
                        .events
                        .iter()
                        .filter_map(|e| match e {
                            Event::Message(m) => Some((m.message_id.clone(), m.kind, m.triggered_agent)),
                            _ => None,
                        })
                        .collect();
                    let logged: Vec<Op> = d.events.iter().filter_map(event_op).collect::<Result<_, _>>()?;
                    Ok((d.events, logged))
                });
                (input, note)
            })
            .unzip()
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
                    let svc = self.clone();
                    let call = call.clone();
                    tokio::task::spawn_blocking(move || match &svc.durability {
                        Durability::Shared(shared) => shared.call_as_write(&call, now),
                        Durability::Local(local) => local.call(&call, now),
                    })
                    .await
                    .map_err(unfinished)
                    .and_then(|r| r)
                }
            },
            Durability::Local(local) => match local.call_queued(call, now) {
                Ok((answer, None)) => Ok(answer),
                Ok((answer, Some(ticket))) => local::Local::durable(self, ticket).await.map(|()| answer),
                Err(e) => Err(e),
            },
        }
    }

    /// [`Service::ingest_for`] for async front ends: on a local store the inputs are applied on the caller's
    /// thread (a large batch on a blocking one) and the wait for the disk takes no thread of its own, so a
    /// burst of writers shares few threads and each write takes in everything queued meanwhile.
    pub async fn ingest_async(
        self: &Arc<Self>,
        inputs: Vec<Value>,
        now: Timestamp,
        allowed: Allowed,
    ) -> Result<IngestReport, Error> {
        let local = match self.local() {
            Some(local) if inputs.len() <= INLINE_INPUTS => local,
            _ => {
                let svc = self.clone();
                return tokio::task::spawn_blocking(move || svc.ingest_for(&inputs, now, &*allowed))
                    .await
                    .map_err(|e| internal(format!("the ingest did not finish: {e}")))?;
            }
        };
        let (decoded, notes) = Self::decode_inputs(&inputs, now);
        let convs = self.conversations(&decoded);
        let (mut report, ticket) = local.ingest_queued(decoded, &*allowed)?;
        if let Some(t) = ticket {
            local::Local::durable(self, t).await?;
        }
        report.note(notes);
        self.queue_due(convs);
        Ok(report)
    }

    fn local(&self) -> Option<&local::Local> {
        match &self.durability {
            Durability::Local(l) => Some(l),
            Durability::Shared(_) => None,
        }
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
        match &self.durability {
            Durability::Local(l) => l.expire(cutoff),
            Durability::Shared(s) => s.expire(cutoff),
        }
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
        answer.map_err(|e| internal(format!("the store cannot be reached: {e}")))
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

    /// The scope ids revoked and not expired at `now`, with their expiry.
    pub fn revoked_scopes(&self, now: Timestamp) -> Result<Vec<(String, Timestamp)>, Error> {
        let ids = self.store().revoked_scopes(now.unix()).map_err(internal)?;
        Ok(ids.into_iter().filter_map(|(id, t)| Timestamp::from_unix(t).map(|t| (id, t))).collect())
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
