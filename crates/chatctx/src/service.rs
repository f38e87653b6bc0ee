//! The service core shared by the HTTP and MCP front ends: one engine, and a [`Store`] that makes every
//! acknowledged change durable before the answer.
//!
//! Writes are logged as replay lines (see `chatctx-store`): decoded events, `update_scenario` /
//! `revert_scenario` calls with their time fixed, the `resolved` activations that resolution records, and
//! conversation imports. On start the log is replayed into a fresh engine. The engine lock is held across
//! apply and append, so no reader ever sees a change that is not yet durable; if the append fails, the engine is
//! rebuilt from the store (dropping the unacknowledged change) and the caller gets `internal`.
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

/// The engine and, per chat, how many operations were logged since its last snapshot.
struct Inner {
    engine: Engine,
    since_snapshot: std::collections::HashMap<(String, String), u64>,
}

/// The running service.
pub struct Service {
    engine: Mutex<Inner>,
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
        let inner = Inner { engine, since_snapshot: std::collections::HashMap::new() };
        Ok((Self { engine: Mutex::new(inner), store, settings, llm }, n))
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        self.engine.lock().map_err(|_| internal("the engine is unusable after an earlier panic"))
    }

    /// Operations a chat may log before its log is replaced by a snapshot: twice what one of its
    /// conversations holds (at least 400), so the log stays proportional to the live state. With 1,000 chats
    /// and 1,000,000 messages ingested, restart replays about 200,000 operations (docs/benchmarks.md).
    fn snapshot_every(&self) -> u64 {
        (self.settings.conversation.cache_max_per_conversation as u64 * 2).max(400)
    }

    /// Makes `ops` durable; on failure puts the engine back to what the store holds. Then snapshots the chats
    /// whose logs grew long: their operations are replaced by one import of their current document.
    fn persist(&self, inner: &mut Inner, ops: &[Op]) -> Result<(), Error> {
        if ops.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.store.append(ops) {
            tracing::error!("store append failed: {e}; rebuilding from the store");
            match rebuild(&*self.store, &self.settings, &self.llm) {
                Ok((fresh, _)) => inner.engine = fresh,
                Err(r) => tracing::error!("rebuild failed too: {r}"),
            }
            return Err(internal(format!("the change could not be stored: {e}")));
        }
        let every = self.snapshot_every();
        let mut due = Vec::new();
        for o in ops.iter().filter(|o| !o.chat_id.is_empty()) {
            let n = inner.since_snapshot.entry((o.channel.clone(), o.chat_id.clone())).or_default();
            *n += 1;
            if *n == every {
                due.push((o.channel.clone(), o.chat_id.clone()));
            }
        }
        for (channel, chat) in due {
            self.snapshot(inner, &channel, &chat);
        }
        Ok(())
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
        let mut inner = self.lock()?;
        let engine = &mut inner.engine;
        let mut ops = Vec::new();
        for (index, v) in inputs.iter().enumerate() {
            let result = ingest::decode(v, now).and_then(|d| {
                if let Some((channel, chat)) = d.events.iter().filter_map(Event::chat).find(|(ch, c)| !allowed(ch, c)) {
                    return Err(Error::new(
                        ErrorCode::ForbiddenScope,
                        format!("this credential may not touch chat {chat:?} on {channel}"),
                    ));
                }
                let logged: Vec<Op> = d.events.iter().map(event_op).collect();
                engine.apply_all(d.events).map(|applied| (applied, logged))
            });
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
        self.persist(&mut inner, &ops)?;
        Ok(report)
    }

    /// Answers a tool call; the changes it makes (state updates, recorded resolutions) are durable first.
    pub fn call(&self, tool: &str, args: &Value, now: Timestamp) -> Result<ToolResponse, Error> {
        let mut inner = self.lock()?;
        let response = inner.engine.call(tool, args, now)?;
        let channel = args.get("channel").and_then(Value::as_str).unwrap_or("telegram");
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
        self.persist(&mut inner, logged.as_slice())?;
        Ok(response)
    }

    /// Loads a conversation document (replacing that chat) durably.
    pub fn import(&self, doc: &Value) -> Result<(), Error> {
        let mut inner = self.lock()?;
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
        let mut inner = self.lock()?;
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
        let mut inner = self.lock()?;
        let deleted = self.store.delete_chat(channel, chat_id).map_err(internal)?;
        inner.since_snapshot.remove(&(channel.to_owned(), chat_id.to_owned()));
        Ok(inner.engine.remove_chat(channel, chat_id) || deleted > 0)
    }

    /// Runs `f` on the engine (reads).
    pub fn read<T>(&self, f: impl FnOnce(&Engine) -> T) -> Result<T, Error> {
        Ok(f(&self.lock()?.engine))
    }
}
