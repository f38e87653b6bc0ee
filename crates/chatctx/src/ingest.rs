//! One entry point for every event a client sends: docs/protocol.md §3 events and `telegram_update`, decoded into core
//! events. HTTP, MCP and `replay` all ingest through here.

use chatctx_core::{Error, Event, Timestamp};
use serde_json::Value;

/// What one input event became.
#[derive(Debug, Default)]
pub struct Decoded {
    /// Core events to apply, all or nothing.
    pub events: Vec<Event>,
    /// Telegram update kinds that were present but not used.
    pub ignored: Vec<String>,
    /// Parts that were dropped (never message text).
    pub warnings: Vec<String>,
}

/// Decodes one event. `received_at` dates Telegram updates that carry no time of their own.
pub fn decode(v: &Value, received_at: Timestamp) -> Result<Decoded, Error> {
    if Event::type_of(v)? == "telegram_update" {
        let m = chatctx_telegram::decode_update_event(v, received_at)?;
        return Ok(Decoded { events: m.events, ignored: m.ignored, warnings: m.warnings });
    }
    Ok(Decoded { events: vec![Event::decode(v)?], ..Decoded::default() })
}
