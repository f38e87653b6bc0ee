//! chatctx-telegram: Telegram Bot API updates and Telegram Desktop exports, mapped to chatctx events by the
//! rules of docs/protocol.md §3.6.
//!
//! The mapping reads raw JSON through a narrow, tolerant model of its own rather than a typed Bot API crate:
//! unknown update kinds, unknown entity types and explicit `null`s are kept or ignored, never an error.
//!
//! Modules:
//! - [`update`]: one Bot API `Update` (or the `telegram_update` event) to events.
//! - [`export`]: a Telegram Desktop `result.json` to events.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod export;
pub mod update;

pub use update::{Bot, Mapped, decode_update_event, map_update};
