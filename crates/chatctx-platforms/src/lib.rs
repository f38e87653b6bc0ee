//! chatctx-platforms: Discord Gateway dispatches and Slack Events API envelopes mapped to chatctx events, by
//! the rules of docs/protocol.md §3.9 and §3.10.
//!
//! Like the Telegram mapping, each reads raw JSON through a narrow, tolerant model of its own: unknown event
//! types and fields are accepted and reported as ignored, never an error; a payload that is not the shape its
//! type promises is `invalid_event` naming the field.
//!
//! Modules:
//! - [`discord`]: one Gateway dispatch (`{"op": 0, "t": …, "d": …}`) to events.
//! - [`slack`]: one Events API envelope (`event_callback`) to events.
//! - [`text`]: building a message text with UTF-16 entities, shared by both.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod discord;
pub mod slack;
pub mod text;

use chatctx_core::event::Attachment;
use chatctx_core::json::{Fields, object};
use chatctx_core::kinds::ObjectKind;
use chatctx_core::{Error, ErrorCode, Event, Timestamp};
use serde_json::Value;

const EV: ErrorCode = ErrorCode::InvalidEvent;

/// What one platform payload became.
#[derive(Debug, Default, PartialEq)]
pub struct Mapped {
    /// The events, in payload order.
    pub events: Vec<Event>,
    /// Event types (or subtypes) that were received but are not used, for the ignored count.
    pub ignored: Vec<String>,
    /// Parts that were dropped, for the log (never message text).
    pub warnings: Vec<String>,
}

/// The account a bot runs as: its own messages become `outbound_agent`, and mentions of it count as
/// addressing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bot {
    /// The bot's user id on the platform.
    pub user_id: Option<String>,
}

impl Bot {
    fn is(&self, user_id: &str) -> bool {
        self.user_id.as_deref() == Some(user_id)
    }
}

/// Decodes a replay line that carries a platform's payload (`{"type": …, "bot": {"user_id": …}, "payload":
/// {…}}`) with `map`, the platform's mapping.
fn decode_wrapped(
    v: &Value,
    received_at: Timestamp,
    map: fn(&Value, &Bot, Timestamp) -> Result<Mapped, Error>,
) -> Result<Mapped, Error> {
    let f = Fields::new(object(v, "an event", EV)?, "", EV);
    let bot = match f.obj("bot")? {
        Some(b) => Bot { user_id: Fields::new(b, "bot", EV).id("user_id")? },
        None => Bot::default(),
    };
    map(f.req("payload")?, &bot, received_at)
}

/// A file's kind by its MIME type: images, video, audio (or a voice note), PDF; anything else a document.
fn file_kind(mime: &str, voice: bool) -> ObjectKind {
    if voice || mime.starts_with("audio/") {
        ObjectKind::MediaVoice
    } else if mime.starts_with("image/") {
        ObjectKind::MediaImage
    } else if mime.starts_with("video/") {
        ObjectKind::MediaVideo
    } else if mime == "application/pdf" {
        ObjectKind::MediaPdf
    } else {
        ObjectKind::MediaDocument
    }
}

/// An attachment of `kind` labelled `label`, with nothing else known of it.
fn attachment(kind: ObjectKind, label: Option<String>) -> Attachment {
    Attachment { kind, label, object_id: None, external_id: None, activation: None, file: None }
}
