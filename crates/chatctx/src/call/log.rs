//! The one compact log line of a tool call: ids and counts, never message text (docs/protocol.md, "Logs").

use std::borrow::Cow;

use chatctx_core::Error;
use chatctx_core::tools::{ToolCall, ToolResponse};

/// The one compact log line of a tool call: ids and counts, never message text (docs/protocol.md, "Logs").
pub fn log_call(call: &ToolCall, result: &Result<ToolResponse, Error>) {
    let scope = call.scope();
    let (chat, topic, current) = (
        clean(&scope.chat_id),
        clean(scope.topic_id.as_deref().unwrap_or("-")),
        clean(scope.current_message_id.as_deref().unwrap_or("-")),
    );
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
    tracing::info!("call {} result=error code={}", clean(tool), e.code);
}

/// A field as a log line may hold it: control characters (a newline could forge a line) escaped as `\u{…}`;
/// fresh input's ids hold none, but a replay file's or a URL's may.
pub fn clean(field: &str) -> Cow<'_, str> {
    if !field.chars().any(char::is_control) {
        return Cow::Borrowed(field);
    }
    Cow::Owned(
        field.chars().map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() }).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(clean("-100500"), "-100500");
        assert_eq!(clean("1\nINFO call forged"), "1\\u{a}INFO call forged");
        assert!(matches!(clean("ünï"), Cow::Borrowed(_)));
    }
}
