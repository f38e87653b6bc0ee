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

use chatctx_core::Event;

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
