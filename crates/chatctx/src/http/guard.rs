//! What every HTTP request passes before a route sees it (docs/security.md): the `Host` and any `Origin` must be
//! names this server answers for (DNS rebinding, cross-site pages), the request line and headers must be of
//! sane size, and whatever error comes back — from a route, from the router, from the MCP service — has the
//! documented `{"code", "message"}` shape.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chatctx_core::{Error, ErrorCode};

use super::ApiError;

/// The longest request target accepted, in bytes.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// The most header bytes accepted in one request.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// The host names (with or without a port) the server answers for; `*` answers for any.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    names: Vec<String>,
    any: bool,
}

impl Hosts {
    /// `server.allowed_hosts`, or when it is empty the loopback names of `listen` (`127.0.0.1`, `localhost`,
    /// `[::1]`, and the listen address's own host).
    pub fn new(configured: &[String], listen: &str) -> Self {
        if configured.iter().any(|h| h == "*") {
            return Self { names: Vec::new(), any: true };
        }
        let mut names: Vec<String> = configured.iter().map(|h| h.to_ascii_lowercase()).collect();
        if names.is_empty() {
            names = ["127.0.0.1", "localhost", "[::1]", "::1"].map(str::to_owned).to_vec();
            if let Some((host, _)) = listen.rsplit_once(':') {
                names.push(host.to_ascii_lowercase());
            }
        }
        Self { names, any: false }
    }

    /// Whether `authority` (`host` or `host:port`) is one of the names.
    pub fn allows(&self, authority: &str) -> bool {
        if self.any {
            return true;
        }
        let host = match authority.rsplit_once(':') {
            // `[::1]:7878`, `localhost:7878`; a bare IPv6 literal has colons but no brackets.
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) && (h.starts_with('[') || !h.contains(':')) => {
                h
            }
            _ => authority,
        };
        // The names are kept in lower case; a request's are compared without copying them.
        self.names.iter().any(|n| n.eq_ignore_ascii_case(authority) || n.eq_ignore_ascii_case(host))
    }
}

fn refuse(code: ErrorCode, message: impl Into<String>) -> Response {
    ApiError(Error::new(code, message)).into_response()
}

/// Checks the request's size, `Host` and `Origin`. (A body's media type is its extractor's rule:
/// [`super::extract::JsonBody`].)
pub fn check(hosts: &Hosts, path: &str, uri_len: usize, headers: &HeaderMap) -> Option<Response> {
    if uri_len > MAX_URI_BYTES {
        let e = Error::new(ErrorCode::RequestTooLarge, format!("the request target is over {MAX_URI_BYTES} bytes"));
        return Some((StatusCode::URI_TOO_LONG, axum::Json(e)).into_response());
    }
    let header_bytes: usize = headers.iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum();
    if header_bytes > MAX_HEADER_BYTES {
        return Some(refuse(ErrorCode::RequestTooLarge, format!("the headers are over {MAX_HEADER_BYTES} bytes")));
    }
    // The probes reveal nothing and are often asked by address (a load balancer's health check).
    if matches!(path, "/healthz" | "/readyz") {
        return None;
    }
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !hosts.allows(host) {
        return Some(refuse(
            ErrorCode::ForbiddenHost,
            format!("this server does not answer for host {host:?} (server.allowed_hosts)"),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let authority = origin.split_once("://").map(|(_, rest)| rest.trim_end_matches('/')).unwrap_or("");
        if authority.is_empty() || !hosts.allows(authority) {
            return Some(refuse(
                ErrorCode::ForbiddenHost,
                format!("requests from origin {origin:?} are refused (server.allowed_hosts)"),
            ));
        }
    }
    None
}

/// The error code of an HTTP status, for errors that come back without the documented body.
fn code_of(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::FORBIDDEN => ErrorCode::ForbiddenHost,
        StatusCode::NOT_FOUND => ErrorCode::UnknownTool,
        StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
        StatusCode::URI_TOO_LONG | StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => ErrorCode::RequestTooLarge,
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT => ErrorCode::Timeout,
        s if s.is_server_error() => ErrorCode::Internal,
        _ => ErrorCode::InvalidRequest,
    }
}

/// Gives an error answer that is not JSON (from the router, an extractor or the MCP service) the documented
/// shape, keeping its status and, as the message, its text.
pub async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.map(|b| String::from_utf8_lossy(&b).trim().to_owned());
    let message = match text {
        Ok(t) if !t.is_empty() => t,
        _ => status.canonical_reason().unwrap_or("error").to_owned(),
    };
    let mut out = (status, axum::Json(Error::new(code_of(status), message))).into_response();
    for (k, v) in parts.headers.iter().filter(|(k, _)| *k == header::ALLOW || *k == header::WWW_AUTHENTICATE) {
        out.headers_mut().insert(k, v.clone());
    }
    out
}

/// A response built from nothing, for tests of [`json_errors`].
#[cfg(test)]
fn plain(status: StatusCode, text: &str) -> Response {
    Response::builder().status(status).body(axum::body::Body::from(text.to_owned())).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let h = Hosts::new(&[], "127.0.0.1:7878");
        for ok in ["127.0.0.1:7878", "localhost", "LOCALHOST:99", "[::1]:7878", "127.0.0.1"] {
            assert!(h.allows(ok), "{ok}");
        }
        for bad in ["evil.example", "evil.example:7878", "127.0.0.1.evil.example", ""] {
            assert!(!h.allows(bad), "{bad}");
        }
        let h = Hosts::new(&["chatctx.internal".to_owned()], "0.0.0.0:7878");
        assert!(h.allows("chatctx.internal:7878") && !h.allows("localhost"));
        assert!(Hosts::new(&["*".to_owned()], "0.0.0.0:1").allows("anything"));
    }

    #[tokio::test]
    async fn plain_errors_become_json() {
        let r = json_errors(plain(StatusCode::METHOD_NOT_ALLOWED, "")).await;
        assert_eq!(r.status(), 405);
        let body = axum::body::to_bytes(r.into_body(), 4096).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["code"], "method_not_allowed");
    }
}
