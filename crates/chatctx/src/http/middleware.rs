//! What wraps every route: the guard ([`super::guard`]: size, host, origin, and the error shape), the time
//! limit, and [`observe`] (the request id, the request's log span and trace, and its metrics).

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chatctx_core::ErrorCode;

use super::{ApiError, Shared};
use crate::call::{RequestId, RequestSpan, is_request_id, new_request_id};

/// The header a request id travels in, both ways.
pub const REQUEST_ID: &str = "x-request-id";

/// The checks every request passes first ([`super::guard`]), and the documented error shape for every error.
pub async fn guarded(State(app): State<Shared>, req: Request, next: Next) -> Response {
    let uri_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if let Some(refused) = super::guard::check(&app.hosts, req.uri().path(), uri_len, req.headers()) {
        return refused;
    }
    super::guard::json_errors(next.run(req).await).await
}

/// Answers 503 `timeout` when a request runs past `server.request_timeout`. The work under way is not
/// cancelled halfway: a write that was started completes (and retrying it is safe: events are idempotent).
pub async fn time_limit(State(app): State<Shared>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(app.timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError::new(
            ErrorCode::Timeout,
            format!("the request took longer than server.request_timeout ({:?})", app.timeout),
        )
        .into_response(),
    }
}

/// A request's id: the caller's `x-request-id` when it is a plain token ([`is_request_id`]), else a new one.
/// Every log line of the request carries it (`request{id=…}`), the answer echoes it, and its spans have it as
/// `chatctx.request_id`.
fn request_id(headers: &HeaderMap) -> String {
    let given = headers.get(REQUEST_ID).and_then(|v| v.to_str().ok()).filter(|v| is_request_id(v));
    given.map_or_else(new_request_id, str::to_owned)
}

/// The method as a metric label.
fn method_label(method: &axum::http::Method) -> &'static str {
    match *method {
        axum::http::Method::GET => "GET",
        axum::http::Method::POST => "POST",
        axum::http::Method::DELETE => "DELETE",
        axum::http::Method::PUT => "PUT",
        axum::http::Method::HEAD => "HEAD",
        axum::http::Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// Names every request (`x-request-id`, and a log span around its work), counts every answer for `/metrics`
/// by route template, and traces it when `[telemetry]` is on.
pub async fn observe(State(app): State<Shared>, mut req: Request, next: Next) -> Response {
    use tracing::Instrument;
    let started = std::time::Instant::now();
    // The matched route is a cheap clone (an `Arc`).
    let matched = req.extensions().get::<axum::extract::MatchedPath>().cloned();
    let route = match &matched {
        Some(p) => p.as_str(),
        None if req.uri().path().starts_with("/mcp") => "/mcp",
        None => "unmatched",
    };
    let method = method_label(req.method());
    let id = request_id(req.headers());
    let span = tracing::info_span!("request", id = %id);
    let traced = app.telemetry.enabled().then(|| (app.telemetry.new_trace(), std::time::SystemTime::now()));
    req.extensions_mut().insert(RequestId(id.clone()));
    if let Some((context, _)) = traced {
        req.extensions_mut().insert(RequestSpan(context));
    }
    let mut r = next.run(req).instrument(span).await;
    let status = r.status();
    app.metrics.observe(route, method, status.as_u16(), started.elapsed());
    if let Some((context, wall)) = traced {
        use crate::telemetry::Attr::{Int, Str};
        app.telemetry.record(crate::telemetry::Span {
            context,
            parent: None,
            name: format!("{method} {route}"),
            kind: 2,
            start: wall,
            end: std::time::SystemTime::now(),
            attributes: vec![
                ("http.request.method".into(), Str(method.to_owned())),
                ("http.route".into(), Str(route.to_owned())),
                ("http.response.status_code".into(), Int(i64::from(status.as_u16()))),
                ("chatctx.request_id".into(), Str(id.clone())),
            ],
            error: status.is_server_error(),
        });
    }
    if let Ok(v) = axum::http::HeaderValue::from_str(&id) {
        r.headers_mut().insert(REQUEST_ID, v);
    }
    r
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use std::sync::Arc;

    use axum::Router;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::get;
    use tower::ServiceExt as _;

    use super::*;
    use crate::auth::Auth;
    use crate::http::AppState;
    use crate::service::Service;

    /// A handler slower than `server.request_timeout` is answered 503 `timeout`; a quick one is untouched.
    #[tokio::test]
    async fn slow_requests_time_out() {
        let cfg = crate::config::Config::default();
        let svc = Service::open(
            cfg.core,
            cfg.llm,
            chatctx_store::Opened::Local(std::sync::Arc::new(chatctx_store::MemoryStore::default())),
        )
        .unwrap()
        .0;
        let mut app = AppState::new(Arc::new(svc), Arc::new(Auth::new(Vec::new())));
        app.timeout = std::time::Duration::from_millis(50);
        let app = Arc::new(app);
        let router = Router::new()
            .route("/slow", get(|| async { tokio::time::sleep(std::time::Duration::from_secs(5)).await }))
            .route("/quick", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(app.clone(), time_limit))
            .with_state(app);
        let call = |path: &'static str| {
            let r = router.clone();
            async move { r.oneshot(axum::http::Request::get(path).body(Body::empty()).unwrap()).await.unwrap() }
        };
        assert_eq!(call("/quick").await.status(), StatusCode::OK);
        let slow = call("/slow").await;
        assert_eq!(slow.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = axum::body::to_bytes(slow.into_body(), 1 << 16).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["code"], "timeout");
    }
}
