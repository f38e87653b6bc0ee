//! An ingest's inputs, decoded and staged before the engine is taken: each input's events and their log operations, and
//! the routing of what names no chat (a poll answer) or a known thread.

use chatctx_core::engine::directory_log_key;
use chatctx_core::{Engine, Error, ErrorCode, Event, Timestamp};
use chatctx_platforms::Mapped;
use chatctx_store::Op;

use super::log::event_op;
use super::report::Note;
use crate::ingest::Decode;

/// One decoded input of an ingest batch: its events and their log operations.
pub(super) type Staged = Result<(Vec<Event>, Vec<Op>), Error>;

/// Routes an input's platform-id activations and its events addressed to known threads to their chats,
/// refusing chats `allowed` rejects. Cheap when there are none (the common case).
pub(super) fn route(engine: &Engine, input: Staged, allowed: &dyn Fn(&str, &str) -> bool) -> Staged {
    let (mut events, mut ops) = input?;
    // A thread event names two chats: the credential must be able to touch both, and the thread must be free
    // (docs/security.md: a thread cannot take over another chat).
    for e in &events {
        if let Event::Thread(t) = e {
            if !allowed(&t.channel, &t.topic_id) {
                return Err(Error::new(
                    ErrorCode::ForbiddenScope,
                    format!("this credential may not name chat {:?} as a thread: it may not touch it", t.topic_id),
                ));
            }
            if let Some(why) = engine.thread_conflict(&t.channel, &t.chat_id, &t.topic_id) {
                return Err(Error::invalid_event(format!("field `topic_id`: {why}")));
            }
        }
    }
    // Only an input that names no chat (a poll answer, a person) or a known thread's id needs routing.
    let routed = |e: &Event| e.chat().is_none_or(|(channel, chat)| engine.is_thread(channel, chat));
    let titled = events.iter().any(|e| matches!(e, Event::Title(_)));
    if events.iter().any(routed) {
        events.iter_mut().for_each(|e| engine.route(e));
        if events.iter().any(|e| matches!(e, Event::Person(_))) {
            people(engine, &mut events, allowed)?;
        }
        titles(engine, &mut events, allowed)?;
        ops = events.iter().filter_map(event_op).collect::<Result<_, _>>()?;
    } else if titled {
        // [`decode_inputs`] left titles out of the log: only those that change something go in.
        titles(engine, &mut events, allowed)?;
        for e in events.iter().filter(|e| matches!(e, Event::Title(_))) {
            ops.extend(event_op(e).transpose()?);
        }
    }
    // The chat is not named: an input may reach it only through a platform id (a poll answer), and a caller
    // must not learn which chat holds it.
    if ops.iter().any(|o| !allowed(&o.channel, &o.chat_id)) {
        return Err(Error::new(ErrorCode::ForbiddenScope, "this credential may not write to the chat of this input"));
    }
    Ok((events, ops))
}

/// Leaves out the `title` events that change nothing: a Telegram group's title comes with every message, and is
/// logged only when it is new. A title of a chat the credential may not touch is refused first, changed or not,
/// so that the answer tells nothing about another chat's title.
fn titles(engine: &Engine, events: &mut Vec<Event>, allowed: &dyn Fn(&str, &str) -> bool) -> Result<(), Error> {
    if events.iter().any(|e| matches!(e, Event::Title(t) if !allowed(&t.channel, &t.chat_id))) {
        return Err(Error::new(ErrorCode::ForbiddenScope, "this credential may not write to the chat of this input"));
    }
    events.retain(|e| !matches!(e, Event::Title(t) if !engine.title_changes(t)));
    Ok(())
}

/// Readies an input's `person` events for the log: each gets the workspace it is learned in (so that its line
/// means the same at any replay), and those that change nothing are left out. A person is shared by every chat of
/// the workspace, so only a credential not limited to chats may write one: a chat-limited credential's people are
/// left out of a platform payload that carries more (a message's author), and refused on their own.
fn people(engine: &Engine, events: &mut Vec<Event>, allowed: &dyn Fn(&str, &str) -> bool) -> Result<(), Error> {
    let alone = events.iter().all(|e| matches!(e, Event::Person(_)));
    for e in events.iter_mut() {
        if let Event::Person(p) = e {
            p.workspace_id = Some(engine.person_workspace(p).to_owned());
        }
    }
    let mut refused = None;
    events.retain(|e| match e {
        Event::Person(p) if !allowed(&p.channel, &directory_log_key(p.workspace())) => {
            refused = Some(p.workspace().to_owned());
            false
        }
        Event::Person(p) => engine.person_changes(p),
        _ => true,
    });
    match refused {
        Some(w) if alone => Err(Error::new(
            ErrorCode::ForbiddenScope,
            format!(
                "this credential is limited to chats and may not write the people directory of workspace {w:?}, \
                 which every chat of the workspace reads; use a token without a chat list"
            ),
        )),
        _ => Ok(()),
    }
}

/// What decoding every input (JSON, the platform mappings) gave, staged: this needs no state, so it is done
/// before taking the engine. With each input, what its mapping decided.
fn stage(decoded: impl Iterator<Item = Result<Mapped, Error>>) -> (Vec<Staged>, Vec<Note>) {
    decoded.map(stage_one).unzip()
}

fn stage_one(decoded: Result<Mapped, Error>) -> (Staged, Note) {
    let mut note = Note::default();
    let input = decoded.and_then(|d| {
        note.ignored = d.ignored;
        note.messages = d
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Message(m) => Some((m.message_id.clone(), m.kind, m.triggered_agent)),
                _ => None,
            })
            .collect();
        // A title is logged once [`route`] saw it changes something.
        let logged: Vec<Op> =
            d.events.iter().filter(|e| !matches!(e, Event::Title(_))).filter_map(event_op).collect::<Result<_, _>>()?;
        Ok((d.events, logged))
    });
    (input, note)
}

/// Batches of more than this many inputs are staged ahead ([`stage_and_apply`]) when the machine has a second core:
/// those the async front ends apply on a blocking thread ([`super::INLINE_INPUTS`]), so an async thread never
/// starts or waits on a helper. Starting one costs tens of microseconds, a few inputs' staging.
const STAGED_AHEAD: usize = super::INLINE_INPUTS;

/// How many inputs the helper stages before handing them over, and how many such chunks may wait.
const CHUNK: usize = 64;
const CHUNKS_WAITING: usize = 4;

/// Whether a batch of `len` inputs is staged ahead.
fn stages_ahead(len: usize) -> bool {
    len > STAGED_AHEAD && super::cores() > 1
}

/// Stages the `inputs` inputs of `decoded` and hands them to `apply` in order, on the calling thread; `each` sees
/// every staged chunk before `apply` does. What `apply` gave, and each input's note.
///
/// A large batch ([`STAGED_AHEAD`]) is staged on a helper thread, a chunk at a time, while `apply` works:
/// staging (decoding, the checks of fresh input, the log lines) needs no state, so on a second core it runs
/// alongside the engine's work instead of before it (a large batch through the service took ~30 % of its time
/// staging, docs/benchmarks-issue-32.md). The helper is one scoped thread, gone when this returns. A small batch,
/// or one whose helper cannot be started, is staged whole first.
pub(super) fn stage_and_apply<T>(
    decoded: impl Iterator<Item = Result<Mapped, Error>> + Send,
    inputs: usize,
    each: &(dyn Fn(&[Staged]) + Sync),
    apply: impl FnOnce(&mut dyn Iterator<Item = Staged>) -> T,
) -> (T, Vec<Note>) {
    let mut decoded = decoded;
    let ahead = if stages_ahead(inputs) { ahead(&mut decoded, each, apply) } else { Err(apply) };
    ahead.unwrap_or_else(|apply| {
        let (staged, notes) = stage(decoded);
        each(&staged);
        (apply(&mut staged.into_iter()), notes)
    })
}

/// [`stage_and_apply`] with a helper staging `decoded`; `apply` given back if the helper cannot be started.
fn ahead<T, A: FnOnce(&mut dyn Iterator<Item = Staged>) -> T>(
    decoded: &mut (impl Iterator<Item = Result<Mapped, Error>> + Send),
    each: &(dyn Fn(&[Staged]) + Sync),
    apply: A,
) -> Result<(T, Vec<Note>), A> {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Staged>>(CHUNKS_WAITING);
        let helper = std::thread::Builder::new().name("chatctx-stage".into()).spawn_scoped(s, move || {
            let mut notes = Vec::with_capacity(decoded.size_hint().0);
            loop {
                let (chunk, chunk_notes) = stage(decoded.by_ref().take(CHUNK));
                if chunk.is_empty() {
                    return notes;
                }
                notes.extend(chunk_notes);
                each(&chunk);
                // The receiver is gone only when `apply` stopped early (the engine was unusable): nothing more is needed.
                if tx.send(chunk).is_err() {
                    return notes;
                }
            }
        });
        let Ok(helper) = helper else { return Err(apply) };
        let applied = apply(&mut rx.into_iter().flatten());
        // A panic while staging is the caller's, as it would be on its own thread.
        let notes = helper.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        Ok((applied, notes))
    })
}

/// [`stage`] of inputs the caller keeps.
pub(super) fn decode_inputs<I: Decode>(inputs: &[I], now: Timestamp) -> (Vec<Staged>, Vec<Note>) {
    stage(inputs.iter().map(|v| v.decode_fresh(now)))
}

/// [`stage`] of inputs handed over (a decoded event is moved, not copied).
pub(super) fn take_inputs<I: Decode>(inputs: Vec<I>, now: Timestamp) -> (Vec<Staged>, Vec<Note>) {
    stage(inputs.into_iter().map(|v| v.into_fresh(now)))
}
