//! The one error shape of the wire contract: a stable snake_case code and a message (docs/protocol.md,
//! "Errors").

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Stable error codes. Adapters map each to an HTTP status once.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// An event failed validation; the message names the field.
    InvalidEvent,
    /// An event `type` chatctx does not know.
    UnsupportedEvent,
    /// A tool request failed validation.
    InvalidRequest,
    /// A tool name chatctx does not know.
    UnknownTool,
    /// A chat chatctx holds nothing for.
    UnknownChat,
    /// `expected_revision` was stale.
    RevisionConflict,
    /// A state patch was rejected.
    InvalidPatch,
    /// A body or value over its size limit.
    PayloadTooLarge,
    /// Missing or wrong credentials.
    Unauthorized,
    /// A scoped credential named another chat.
    ForbiddenScope,
    /// A fault inside chatctx.
    Internal,
    /// The request ran past `server.request_timeout` (an extension of docs/protocol.md §9; HTTP 503). Writes are
    /// idempotent, so retrying is safe.
    Timeout,
    /// A request body that is not JSON by its `Content-Type` (HTTP 415).
    UnsupportedMediaType,
    /// A `Host` or `Origin` the server does not answer for (`server.allowed_hosts`; HTTP 403).
    ForbiddenHost,
    /// A route that does not take this method (HTTP 405).
    MethodNotAllowed,
    /// A request line or headers over the server's limits (HTTP 414 or 431).
    RequestTooLarge,
    /// No decision record with that request id is kept for the chat (HTTP 404).
    UnknownDecision,
    /// The store's disk is full: the change was not stored (HTTP 507). Retrying once space is freed is safe.
    InsufficientStorage,
}

impl ErrorCode {
    /// The wire name, e.g. `invalid_event`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidEvent => "invalid_event",
            Self::UnsupportedEvent => "unsupported_event",
            Self::InvalidRequest => "invalid_request",
            Self::UnknownTool => "unknown_tool",
            Self::UnknownChat => "unknown_chat",
            Self::RevisionConflict => "revision_conflict",
            Self::InvalidPatch => "invalid_patch",
            Self::PayloadTooLarge => "payload_too_large",
            Self::Unauthorized => "unauthorized",
            Self::ForbiddenScope => "forbidden_scope",
            Self::Internal => "internal",
            Self::Timeout => "timeout",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::ForbiddenHost => "forbidden_host",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::RequestTooLarge => "request_too_large",
            Self::UnknownDecision => "unknown_decision",
            Self::InsufficientStorage => "insufficient_storage",
        }
    }

    /// Whether the fault is chatctx's rather than the caller's (HTTP answers these with a 5xx status; a trace
    /// marks their spans as errors).
    pub fn is_server_fault(self) -> bool {
        matches!(self, Self::Internal | Self::Timeout | Self::InsufficientStorage)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `{"code": "…", "message": "…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema, thiserror::Error)]
#[schemars(crate = "crate::wire")]
#[error("{code}: {message}")]
pub struct Error {
    /// The stable code.
    pub code: ErrorCode,
    /// What went wrong, for a person; names the field when one is at fault.
    pub message: String,
}

impl Error {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }

    /// `invalid_event`.
    pub fn invalid_event(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidEvent, message)
    }

    /// `invalid_request`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }
}
