//! One entry point for every event a client sends: docs/protocol.md §3 events and the platforms' payloads, decoded into core
//! events. HTTP, MCP and `replay` all ingest through here.

use chatctx_core::{Error, Event, Timestamp};
use serde_json::Value;

/// What one input event became.
#[derive(Debug, Default)]
pub struct Decoded {
    /// Core events to apply, all or nothing.
    pub events: Vec<Event>,
    /// Platform update or event kinds that were present but not used.
    pub ignored: Vec<String>,
    /// Parts that were dropped (never message text).
    pub warnings: Vec<String>,
}

/// Decodes one event: a core event, or a platform's payload (`telegram_update`, `discord_event`,
/// `slack_event`). `received_at` dates what carries no time of its own.
pub fn decode(v: &Value, received_at: Timestamp) -> Result<Decoded, Error> {
    let m = match Event::type_of(v)? {
        "telegram_update" => {
            let m = chatctx_telegram::decode_update_event(v, received_at)?;
            return Ok(Decoded { events: m.events, ignored: m.ignored, warnings: m.warnings });
        }
        "discord_event" => chatctx_platforms::discord::decode_event(v, received_at)?,
        "slack_event" => chatctx_platforms::slack::decode_event(v, received_at)?,
        _ => return Ok(Decoded { events: vec![Event::decode(v)?], ..Decoded::default() }),
    };
    Ok(Decoded { events: m.events, ignored: m.ignored, warnings: m.warnings })
}
