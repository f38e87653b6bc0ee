//! The web console (`/console`), built into the binary: plain HTML, CSS and JavaScript, no build step. It reads
//! the GET routes with the token the user enters (kept in the browser tab's session storage).

use axum::http::header;
use axum::response::{IntoResponse, Response};

const HTML: &str = include_str!("../../console/index.html");
const JS: &str = include_str!("../../console/app.js");
const CSS: &str = include_str!("../../console/app.css");

/// One of the console's files, which may run nothing but its own scripts.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// `GET /console`: the page.
pub async fn page() -> Response {
    asset("text/html; charset=utf-8", HTML)
}

/// `GET /console/app.js`.
pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", JS)
}

/// `GET /console/app.css`.
pub async fn style() -> Response {
    asset("text/css; charset=utf-8", CSS)
}
