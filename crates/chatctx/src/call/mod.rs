//! What every tool call carries, whichever front end it came by (HTTP, MCP over HTTP or stdio, `replay`): the
//! request id that names it, the span it is traced under, the decision record kept of its answer, and its one
//! log line. HTTP and MCP both answer a call through [`answer`]; neither knows the other.
//!
//! - [`id`]: request ids and the request's span.
//! - [`log`]: the call's one log line (also `replay`'s, which answers calls without a service).

pub mod id;
pub mod log;

use std::sync::Arc;

use chatctx_core::Error;
use chatctx_core::tools::{ToolCall, ToolResponse};

use crate::clock::now;
use crate::service::Service;
use crate::telemetry::{Attr, Span, SpanContext, Telemetry};

pub use id::{RequestId, RequestSpan, is_request_id, new_request_id};
pub use log::{log_call, log_refused};

/// Answers a tool call (logged), with a span under the request's when tracing is on, and writes the answer
/// with `write`: with its decision record inline when the call asked (`"explain": true`), else without.
/// The record is then kept under `request_id` (records are on unless `[decisions] keep = 0`).
pub async fn answer<T>(
    svc: &Arc<Service>,
    telemetry: &Telemetry,
    parent: Option<SpanContext>,
    request_id: &str,
    call: ToolCall,
    write: impl FnOnce(&ToolResponse) -> T,
) -> Result<T, Error> {
    let started = std::time::SystemTime::now();
    let at = now();
    let (name, scope, call_now) = (call.name(), call.scope().clone(), call.now());
    let answer = svc.call_logged(&call, at).await;
    log_call(&call, &answer);
    if let Some(parent) = parent.filter(|_| telemetry.enabled()) {
        telemetry.record(tool_span(telemetry, parent, name, scope.chat_id.clone(), started, &answer));
    }
    let mut answer = answer?;
    // The record is written inline only when the call asked; either way it is kept afterwards.
    let held_back = if scope.explain { None } else { answer.take_explain() };
    let written = write(&answer);
    let explain = held_back.or_else(|| answer.take_explain());
    if let Some(e) = explain.filter(|_| svc.decisions().enabled()) {
        let record = crate::decisions::Record::new(request_id, name, scope, call_now.unwrap_or(at), e, &mut answer);
        svc.decisions().push(record);
    }
    Ok(written)
}

/// The span of one tool call: chat, tool, outcome and counts, never text.
fn tool_span(
    t: &Telemetry,
    parent: SpanContext,
    tool: &'static str,
    chat: String,
    started: std::time::SystemTime,
    answer: &Result<ToolResponse, Error>,
) -> Span {
    use Attr::{Int, Str};
    let mut attributes = vec![("chatctx.chat_id".into(), Str(chat)), ("chatctx.tool".into(), Str(tool.to_owned()))];
    match answer {
        // The answer's summary, as its log line has it: `chatctx.status`, `chatctx.candidate_count`, …
        Ok(r) => {
            let fields = r.fields();
            if !fields.iter().any(|(k, _)| *k == "status") {
                attributes.push(("chatctx.status".into(), Str("ok".to_owned())));
            }
            attributes.extend(
                fields
                    .into_iter()
                    .map(|(k, v)| (format!("chatctx.{k}").into(), v.parse().map_or_else(|_| Str(v), Int))),
            );
        }
        Err(e) => attributes.push(("chatctx.status".into(), Str(chatctx_core::tools::serde_plain(&e.code)))),
    }
    Span {
        context: SpanContext { trace_id: parent.trace_id, span_id: t.new_span_id() },
        parent: Some(parent.span_id),
        name: format!("tool {tool}"),
        kind: 1,
        start: started,
        end: std::time::SystemTime::now(),
        attributes,
        error: answer.as_ref().is_err_and(|e| e.code.is_server_fault()),
    }
}
