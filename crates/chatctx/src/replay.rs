//! `chatctx replay` (SPEC §7): a deterministic offline driver. Reads JSON Lines of
//! `{"event": …}`, `{"call": "…", "args": …}` and `{"import": <conversation document>}` (an extension: loads
//! a conversation exported by `chatctx export`) and writes one line per call; a rejected line writes an
//! `event_error` line and the run goes on. Blank lines and lines starting with `#` are skipped.

use std::io::{self, BufRead, Write};

use chatctx_core::tools::ToolResponse;
use chatctx_core::{Engine, Error, ErrorCode, Timestamp};
use serde::Serialize;
use serde_json::Value;

use crate::ingest;

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
pub fn run(engine: &mut Engine, input: impl BufRead, mut output: impl Write) -> io::Result<Stats> {
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
        match step(engine, trimmed, &mut newest) {
            Step::Accepted => stats.events += 1,
            Step::Rejected(e) => {
                stats.rejected += 1;
                let out =
                    EventErrorLine { event_error: EventError { line: stats.lines, code: e.code, message: &e.message } };
                serde_json::to_writer(&mut buf, &out)?;
            }
            Step::Answered(call, result) => {
                stats.calls += 1;
                let out = match &result {
                    Ok(r) => CallLine { call: &call, result: Some(r), error: None },
                    Err(e) => CallLine { call: &call, result: None, error: Some(e) },
                };
                serde_json::to_writer(&mut buf, &out)?;
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
pub fn load_line(engine: &mut Engine, line: &str, newest: &mut Timestamp) -> Result<(), Error> {
    match step(engine, line, newest) {
        Step::Accepted | Step::Answered(_, Ok(_)) => Ok(()),
        Step::Rejected(e) | Step::Answered(_, Err(e)) => Err(e),
    }
}

enum Step {
    Accepted,
    Rejected(Error),
    Answered(String, Result<ToolResponse, Error>),
}

fn step(engine: &mut Engine, line: &str, newest: &mut Timestamp) -> Step {
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Step::Rejected(Error::invalid_event(format!("the line is not valid JSON: {e}"))),
    };
    if let Some(doc) = v.get("import") {
        // A conversation document (`chatctx export`): replaces that chat whole.
        return match engine.import_conversation(doc) {
            Ok(()) => Step::Accepted,
            Err(e) => Step::Rejected(e),
        };
    }
    if let Some(event) = v.get("event") {
        let decoded = match ingest::decode(event, *newest) {
            Ok(d) => d,
            Err(e) => return Step::Rejected(e),
        };
        for w in &decoded.warnings {
            tracing::warn!("{w}");
        }
        if !decoded.ignored.is_empty() {
            tracing::debug!(kinds = ?decoded.ignored, "telegram update kinds ignored");
        }
        let latest = decoded.events.iter().map(|e| e.time()).max();
        return match engine.apply_all(decoded.events) {
            Ok(applied) => {
                for w in applied.warnings {
                    tracing::warn!("{w}");
                }
                if let Some(t) = latest {
                    *newest = (*newest).max(t);
                }
                Step::Accepted
            }
            Err(e) => Step::Rejected(e),
        };
    }
    match v.get("call") {
        Some(Value::String(name)) => {
            let empty = Value::Object(serde_json::Map::new());
            let args = v.get("args").unwrap_or(&empty);
            let result = if args.is_object() {
                engine.call(name, args, *newest)
            } else {
                Err(Error::invalid_request("field `args`: expected an object"))
            };
            log_call(name, args, &result);
            Step::Answered(name.clone(), result)
        }
        Some(_) => Step::Rejected(Error::invalid_request("field `call`: expected a tool name")),
        None => Step::Rejected(Error::invalid_event("a replay line needs `event`, `call` or `import`")),
    }
}

/// The one compact log line of a tool call (SPEC §11): ids and counts, never message text.
pub fn log_call(tool: &str, args: &Value, result: &Result<ToolResponse, Error>) {
    let id = |k: &str| args.get(k).map(|v| v.to_string()).unwrap_or_else(|| "-".to_owned());
    match result {
        Ok(r) => tracing::info!(
            "call {tool} chat_id={} topic_id={} current_message_id={} result=ok {}",
            id("chat_id"),
            id("topic_id"),
            id("current_message_id"),
            r.log_fields()
        ),
        Err(e) => tracing::info!(
            "call {tool} chat_id={} topic_id={} current_message_id={} result=error code={}",
            id("chat_id"),
            id("topic_id"),
            id("current_message_id"),
            e.code
        ),
    }
}
