//! chatctx: the binary's library half: configuration, event ingest, and the `replay` and `import`
//! commands. The engine itself lives in `chatctx-core`; these are thin adapters over it.
//!
//! Modules:
//! - [`auth`]: bearer tokens and bound scopes.
//! - [`call`]: what every tool call carries (request id, span, decision record, log line), for HTTP and MCP.
//! - [`clock`]: the wall clock, read in one place.
//! - [`config`]: TOML file and `CHATCTX_SECTION__KEY` environment into validated settings.
//! - [`decisions`]: the decision records the server keeps per chat.
//! - [`http`]: the HTTP front end (axum): one file per resource, routes declared once, access and bodies as
//!   extractors.
//! - [`mcp`]: the MCP front end (rmcp), over stdio and streamable HTTP.
//! - [`metrics`]: what `/metrics` reports.
//! - [`ingest`]: any input event (including `telegram_update`) into core events.
//! - [`logline`]: the replay and durable-log line, with its one writer and one reader.
//! - [`replay`]: the deterministic JSON Lines driver.
//! - [`revocations`]: following the scopes other instances revoked.
//! - [`service`]: the engine behind a durable store, shared by the server front ends.
//! - [`slack`]: Slack's request signatures.
//! - [`summarizer`]: the background summarizer on the `[llm]` endpoint.
//! - [`triage`]: model triage over an OpenAI-compatible endpoint.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod call;
pub mod clock;
pub mod config;
pub mod decisions;
pub mod http;
pub mod import;
pub mod ingest;
pub mod logline;
pub mod mcp;
pub mod metrics;
pub mod repair;
pub mod replay;
pub mod revocations;
pub mod service;
pub mod slack;
pub mod stop;
pub mod summarizer;
pub mod telemetry;
pub mod triage;
