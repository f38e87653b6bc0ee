//! `chatctx replay`: a deterministic offline driver. Reads JSON Lines ([`LogLine`]: events, tool calls and
//! conversation documents) and writes one line per call; a rejected line writes an `event_error` line and the
//! run goes on. Blank lines and lines starting with `#` are skipped. See docs/protocol.md, "Replay files".

use std::io::{self, BufRead, Write};

use chatctx_core::tools::ToolResponse;
use chatctx_core::{Engine, Error, ErrorCode, Timestamp};
use serde::Serialize;

use crate::ingest;
use crate::logline::{BadLine, EventLine, LogLine};

/// Counts of one run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Lines read (including blank ones).
    pub lines: u64,
    /// Events accepted.
    pub events: u64,
    /// Tool calls answered (with a result or an error).
    pub calls: u64,
    /// `event_error` lines written.
    pub rejected: u64,
    /// Telegram update kinds received and ignored (inline queries, callback queries, …).
    pub ignored: u64,
}

#[derive(Serialize)]
struct CallLine<'a> {
    call: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a ToolResponse>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a Error>,
}

#[derive(Serialize)]
struct EventErrorLine<'a> {
    event_error: EventError<'a>,
}

#[derive(Serialize)]
struct EventError<'a> {
    line: u64,
    code: ErrorCode,
    message: &'a str,
}

/// Runs `input` against `engine`, writing answers to `output`. Only an I/O error stops the run.
pub fn run(engine: &mut Engine, input: impl BufRead, output: impl Write) -> io::Result<Stats> {
    run_explained(engine, input, output, false)
}

/// [`run`], where every answer carries its decision record (`explain`) when `explain_all` is set, and
/// otherwise only the answers of calls that asked (`"explain": true`). Records depend only on the state and
/// the call, so replaying a log gives the records the server gave.
pub fn run_explained(
    engine: &mut Engine,
    input: impl BufRead,
    mut output: impl Write,
    explain_all: bool,
) -> io::Result<Stats> {
    let mut stats = Stats::default();
    // `now` for calls that carry none: the newest event time seen so far.
    let mut newest = Timestamp::default();
    let mut buf = Vec::with_capacity(256);
    for line in input.lines() {
        let line = line?;
        stats.lines += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        buf.clear();
        match step(engine, trimmed, &mut newest, explain_all) {
            Step::Accepted(ignored) => {
                stats.events += 1;
                stats.ignored += ignored as u64;
            }
            Step::Rejected(e) => {
                stats.rejected += 1;
                let out =
                    EventErrorLine { event_error: EventError { line: stats.lines, code: e.code, message: &e.message } };
                serde_json::to_writer(&mut buf, &out)?;
            }
            Step::Answered(call, result) => {
                stats.calls += 1;
                let out = match &result {
                    Ok(r) => CallLine { call, result: Some(r), error: None },
                    Err(e) => CallLine { call, result: None, error: Some(e) },
                };
                serde_json::to_writer(&mut buf, &out)?;
            }
            Step::Refused(call, e) => {
                stats.calls += 1;
                serde_json::to_writer(&mut buf, &CallLine { call: &call, result: None, error: Some(&e) })?;
            }
        }
        if !buf.is_empty() {
            buf.push(b'\n');
            output.write_all(&buf)?;
        }
    }
    output.flush()?;
    Ok(stats)
}

/// Applies one replay line to `engine` without writing an answer: how a server rebuilds its state from its
/// log. `newest` is the running "now" for calls without one.
pub fn load_line(engine: &mut Engine, line: LogLine<'_>, newest: &mut Timestamp) -> Result<(), Error> {
    match apply(engine, line, newest, false) {
        Step::Accepted(_) | Step::Answered(_, Ok(_)) => Ok(()),
        Step::Rejected(e) | Step::Answered(_, Err(e)) | Step::Refused(_, e) => Err(e),
    }
}

enum Step {
    /// Applied; with how many Telegram update kinds it ignored.
    Accepted(usize),
    Rejected(Error),
    Answered(&'static str, Result<ToolResponse, Error>),
    /// A call whose arguments could not be read: answered with its error.
    Refused(String, Error),
}

fn step(engine: &mut Engine, line: &str, newest: &mut Timestamp, explain_all: bool) -> Step {
    match LogLine::parse(line) {
        Ok(LogLine::Forget) => {
            Step::Rejected(Error::invalid_event("a `forget` line belongs to a store's log: it names no chat"))
        }
        Ok(LogLine::Call(mut call)) if explain_all => {
            call.to_mut().scope_mut().explain = true;
            apply(engine, LogLine::Call(call), newest, true)
        }
        Ok(line) => apply(engine, line, newest, true),
        Err(BadLine { call: Some(name), error }) => {
            crate::call::log_refused(&name, &error);
            Step::Refused(name, error)
        }
        Err(BadLine { call: None, error }) => Step::Rejected(error),
    }
}

/// Applies one line. A `forget` line is the caller's to apply (it names no chat of its own).
/// `narrate`: log each call's line (a replay run does; a server rebuilding its state from its log does not,
/// or every stored operation would print a line at start).
fn apply(engine: &mut Engine, line: LogLine<'_>, newest: &mut Timestamp, narrate: bool) -> Step {
    match line {
        // A conversation document (`chatctx export`): replaces that chat whole.
        LogLine::Import(doc) => match engine.import_document(&doc) {
            Ok(()) => Step::Accepted(0),
            Err(e) => Step::Rejected(e),
        },
        LogLine::Event(EventLine::Decoded(event)) => apply_events(engine, vec![event.clone()], newest),
        LogLine::Event(EventLine::Raw(event)) => {
            let decoded = match ingest::decode(&event, *newest) {
                Ok(d) => d,
                Err(e) => return Step::Rejected(e),
            };
            for w in &decoded.warnings {
                tracing::warn!("{w}");
            }
            if !decoded.ignored.is_empty() {
                tracing::debug!(kinds = ?decoded.ignored, "telegram update kinds ignored");
            }
            match apply_events(engine, decoded.events, newest) {
                Step::Accepted(_) => Step::Accepted(decoded.ignored.len()),
                other => other,
            }
        }
        LogLine::Call(call) => {
            let mut result = engine.answer(&call, *newest);
            if let (false, Ok(answer)) = (call.scope().explain, result.as_mut()) {
                answer.take_explain();
            }
            if narrate {
                crate::call::log_call(&call, &result);
            }
            Step::Answered(call.name(), result)
        }
        LogLine::Forget => Step::Accepted(0),
    }
}

fn apply_events(engine: &mut Engine, events: Vec<chatctx_core::Event>, newest: &mut Timestamp) -> Step {
    let latest = events.iter().map(|e| e.time()).max();
    match engine.apply_all(events) {
        Ok(applied) => {
            for w in applied.warnings {
                tracing::warn!("{w}");
            }
            if let Some(t) = latest {
                *newest = (*newest).max(t);
            }
            Step::Accepted(0)
        }
        Err(e) => Step::Rejected(e),
    }
}
