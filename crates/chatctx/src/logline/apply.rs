//! Applying a line to an engine: the one way a replay file and a store's log are read into state.

use chatctx_core::tools::ToolResponse;
use chatctx_core::{Engine, Error, Timestamp};

use super::{EventLine, LogLine};

/// What applying a line did.
pub enum Applied {
    /// Applied; with how many platform update kinds it ignored.
    Accepted(usize),
    /// Refused; nothing changed.
    Rejected(Error),
    /// A call, answered.
    Answered(&'static str, Result<ToolResponse, Error>),
}

impl Applied {
    /// Whether the line changed the state as it should (a refused line or a call answered with an error did
    /// not), the answer left aside.
    fn loaded(self) -> Result<(), Error> {
        match self {
            Applied::Accepted(_) | Applied::Answered(_, Ok(_)) => Ok(()),
            Applied::Rejected(e) | Applied::Answered(_, Err(e)) => Err(e),
        }
    }
}

impl LogLine<'_> {
    /// Applies the line without writing an answer: how a server rebuilds its state from its log. `newest` is
    /// the running "now" for calls without one.
    pub fn load(self, engine: &mut Engine, newest: &mut Timestamp) -> Result<(), Error> {
        self.apply(engine, newest, false).loaded()
    }
}

impl LogLine<'_> {
    /// Applies the line to `engine`, as `chatctx replay` and a server rebuilding from its log both do.
    /// `newest` is the running "now" for calls without one. A `forget` line is the caller's to apply (it names
    /// no chat of its own). `narrate`: log each call's line (a replay run does; a server rebuilding its state
    /// from its log does not, or every stored operation would print a line at start).
    pub fn apply(self, engine: &mut Engine, newest: &mut Timestamp, narrate: bool) -> Applied {
        match self {
            // A conversation document (`chatctx export`): replaces that chat whole.
            LogLine::Import(doc) => match engine.import_document(&doc) {
                Ok(()) => Applied::Accepted(0),
                Err(e) => Applied::Rejected(e),
            },
            // A workspace's people directory (a compacted directory log): replaces it whole.
            LogLine::People(doc) => {
                engine.import_directory(&doc);
                Applied::Accepted(0)
            }
            LogLine::Event(EventLine::Decoded(event)) => apply_events(engine, vec![event.into_owned()], newest),
            LogLine::Event(EventLine::Raw(event)) => {
                let (events, ignored) = match decode_events(&event, *newest) {
                    Ok(d) => d,
                    Err(e) => return Applied::Rejected(e),
                };
                match apply_events(engine, events, newest) {
                    Applied::Accepted(_) => Applied::Accepted(ignored),
                    other => other,
                }
            }
            LogLine::Call(call) => {
                let mut result = engine.answer(&call, *newest);
                if let (false, Ok(answer)) = (call.scope().explain, result.as_mut()) {
                    answer.take_explain();
                }
                if narrate {
                    crate::call::log::log_call(&call, &result);
                }
                Applied::Answered(call.name(), result)
            }
            LogLine::Forget => Applied::Accepted(0),
        }
    }
}

/// An event line's events, decoded at the running time `newest` (the part of applying it that needs no
/// engine, so that a restart can do it on another thread), and how many platform update kinds it ignored.
/// Its warnings are logged.
pub fn decode_events(event: &serde_json::Value, newest: Timestamp) -> Result<(Vec<chatctx_core::Event>, usize), Error> {
    let decoded = crate::ingest::decode(event, newest)?;
    for w in &decoded.warnings {
        tracing::warn!("{w}");
    }
    if !decoded.ignored.is_empty() {
        tracing::debug!(kinds = ?decoded.ignored, "telegram update kinds ignored");
    }
    Ok((decoded.events, decoded.ignored.len()))
}

/// Applies events [`decode_events`] gave, all or nothing, moving `newest` to the newest of their times.
pub fn load_events(engine: &mut Engine, events: Vec<chatctx_core::Event>, newest: &mut Timestamp) -> Result<(), Error> {
    apply_events(engine, events, newest).loaded()
}

/// Applies a line's events, all or nothing, moving `newest` to the newest of their times.
fn apply_events(engine: &mut Engine, events: Vec<chatctx_core::Event>, newest: &mut Timestamp) -> Applied {
    let latest = events.iter().map(|e| e.time()).max();
    match engine.apply_all(events) {
        Ok(applied) => {
            for w in applied.warnings {
                tracing::warn!("{w}");
            }
            if let Some(t) = latest {
                *newest = (*newest).max(t);
            }
            Applied::Accepted(0)
        }
        Err(e) => Applied::Rejected(e),
    }
}
