//! `chatctx replay`: a deterministic offline driver. Reads JSON Lines ([`LogLine`]: events, tool calls and
//! conversation documents) and writes one line per call; a rejected line writes an `event_error` line and the
//! run goes on. Blank lines and lines starting with `#` are skipped. See docs/protocol.md, "Replay files".

use std::io::{self, BufRead, Write};

use chatctx_core::tools::ToolResponse;
use chatctx_core::{Engine, Error, ErrorCode, Timestamp};
use serde::Serialize;

use crate::logline::{Applied, BadLine, LogLine};

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
            Step::Line(Applied::Accepted(ignored)) => {
                stats.events += 1;
                stats.ignored += ignored as u64;
            }
            Step::Line(Applied::Rejected(e)) => {
                stats.rejected += 1;
                let out =
                    EventErrorLine { event_error: EventError { line: stats.lines, code: e.code, message: &e.message } };
                serde_json::to_writer(&mut buf, &out)?;
            }
            Step::Line(Applied::Answered(call, result)) => {
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

enum Step {
    /// A line applied ([`Applied`]).
    Line(Applied),
    /// A call whose arguments could not be read: answered with its error.
    Refused(String, Error),
}

fn step(engine: &mut Engine, line: &str, newest: &mut Timestamp, explain_all: bool) -> Step {
    match LogLine::parse(line) {
        Ok(LogLine::Forget) => Step::Line(Applied::Rejected(Error::invalid_event(
            "a `forget` line belongs to a store's log: it names no chat",
        ))),
        Ok(LogLine::Call(mut call)) if explain_all => {
            call.to_mut().scope_mut().explain = true;
            Step::Line(LogLine::Call(call).apply(engine, newest, true))
        }
        Ok(line) => Step::Line(line.apply(engine, newest, true)),
        Err(BadLine { call: Some(name), error }) => {
            crate::call::log_refused(&name, &error);
            Step::Refused(name, error)
        }
        Err(BadLine { call: None, error }) => Step::Line(Applied::Rejected(error)),
    }
}
