//! chatctx-core: the pure conversation-context engine.
//!
//! Events go in ([`event`]), structured history and objects are kept per chat ([`engine`], and the private
//! `chat` module), and the tools answer from that state ([`tools`]). Nothing here reads a clock, a file or the
//! network: the caller passes `now`, so every answer is reproducible.
//!
//! Modules:
//! - [`time`]: timestamps (RFC 3339 / Unix seconds) and durations.
//! - [`error`]: the error shape of the contract.
//! - [`json`]: field-by-field reading of untrusted JSON, naming the bad field.
//! - [`kinds`]: object kinds, activations, item kinds, origins.
//! - [`event`]: the input events and their validation.
//! - [`people`]: nicknames and the one `display_ref` formatter.
//! - [`directory`]: the people directory of each workspace (`person` events).
//! - [`mention`]: mention normalization by UTF-16 entity offsets; link extraction.
//! - [`history`]: `ChatHistoryItem` and its validation.
//! - [`objects`]: typed objects of a chat.
//! - [`scenario`]: conversation state: merge patches, revisions, limits (the tools are in [`tools::state`]).
//! - [`schema`]: the JSON Schema subset that state can be checked against.
//! - [`render`]: `single` / `per_item` rendering, prompt assembly, the addressing input.
//! - [`decision`]: decision records, how each answer was reached.
//! - [`selection`]: which history items go into the prompt (lookback, recency, triage, lexical).
//! - [`settings`]: validated configuration.
//! - [`engine`]: applying events.
//! - [`tools`]: the tools, each request type beside the code that answers it, and [`tools::ToolCall`].
//! - [`transfer`]: export and import of one conversation as a document.
//! - `wire`: what the JSON Schema derive of the wire types expands to (hidden).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod chat;
pub mod decision;
pub mod directory;
pub mod engine;
pub mod error;
pub mod event;
pub mod history;
pub mod json;
pub mod kinds;
pub mod mention;
pub mod objects;
pub mod people;
pub mod render;
pub mod scenario;
pub mod schema;
pub mod selection;
pub mod settings;
pub mod summary;
pub mod time;
pub mod tools;
pub mod transfer;
#[doc(hidden)]
pub mod wire;

#[doc(hidden)]
pub mod __private {
    //! What [`vocabulary!`](crate::vocabulary) expands to needs, for crates that use the macro.
    pub use schemars;
    pub use serde;
}

pub use engine::{Applied, Engine};
pub use error::{Error, ErrorCode};
pub use event::Event;
pub use history::ChatHistoryItem;
pub use settings::Settings;
pub use time::{Span, Timestamp};
