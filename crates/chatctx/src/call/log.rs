//! The one compact log line of a tool call: ids and counts, never message text (docs/protocol.md, "Logs").

use chatctx_core::Error;
use chatctx_core::tools::{ToolCall, ToolResponse};

/// The one compact log line of a tool call: ids and counts, never message text (docs/protocol.md, "Logs").
pub fn log_call(call: &ToolCall, result: &Result<ToolResponse, Error>) {
    let scope = call.scope();
    let (chat, topic, current) =
        (&scope.chat_id, scope.topic_id.as_deref().unwrap_or("-"), scope.current_message_id.as_deref().unwrap_or("-"));
    let tool = call.name();
    match result {
        Ok(r) => tracing::info!(
            "call {tool} chat_id={chat} topic_id={topic} current_message_id={current} result=ok {}",
            r.log_fields()
        ),
        Err(e) => {
            tracing::info!(
                "call {tool} chat_id={chat} topic_id={topic} current_message_id={current} result=error code={}",
                e.code
            )
        }
    }
}

/// The log line of a call refused before it could be read (its arguments are wrong).
pub fn log_refused(tool: &str, e: &Error) {
    tracing::info!("call {tool} result=error code={}", e.code);
}
