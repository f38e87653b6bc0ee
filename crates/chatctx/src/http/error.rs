//! The one error type of the HTTP layer: every [`Error`] is answered with its status (docs/protocol.md §9) and
//! `{"code", "message"}`, here and nowhere else; and the one way an answer body is written.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chatctx_core::{Error, ErrorCode};

/// An error answered with its status.
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

impl ApiError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self(Error::new(code, message))
    }

    /// `invalid_request`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self(Error::invalid_request(message))
    }

    /// `internal`, for what failed inside the server.
    pub fn internal(why: impl std::fmt::Display) -> Self {
        Self::new(ErrorCode::Internal, why.to_string())
    }
}

/// The HTTP status of an error code (docs/protocol.md §9).
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorCode::ForbiddenScope => StatusCode::FORBIDDEN,
        ErrorCode::UnknownTool | ErrorCode::UnknownChat | ErrorCode::UnknownDecision => StatusCode::NOT_FOUND,
        ErrorCode::RevisionConflict => StatusCode::CONFLICT,
        ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::Timeout => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ErrorCode::ForbiddenHost => StatusCode::FORBIDDEN,
        ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::RequestTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        ErrorCode::InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
        _ => StatusCode::BAD_REQUEST,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (status_of(self.0.code), axum::Json(self.0)).into_response()
    }
}

/// An answer's body as JSON.
pub fn json_body<T: serde::Serialize>(v: &T) -> Response {
    match serde_json::to_vec(v) {
        Ok(bytes) => ([(axum::http::header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => ApiError::internal(e).into_response(),
    }
}

/// Runs a blocking service call (a durable write waits on the disk) off the async workers.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(ApiError::internal)?.map_err(ApiError)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    /// A trace marks a call as failed exactly when HTTP would answer it with a server error: every code the
    /// contract's schema lists (one `const` per code).
    #[test]
    fn server_faults_are_the_5xx_codes() {
        let schema = serde_json::to_value(schemars::schema_for!(ErrorCode)).unwrap();
        let codes = schema["oneOf"].as_array().expect("one schema per code");
        assert!(codes.len() >= 18, "the schema lists every code: {schema}");
        for c in codes {
            let code: ErrorCode = serde_json::from_value(c["const"].clone()).unwrap();
            assert_eq!(status_of(code).is_server_error(), code.is_server_fault(), "{code}");
        }
    }
}
