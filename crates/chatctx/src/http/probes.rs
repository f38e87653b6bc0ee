//! What operators and tooling ask of the server itself: `/healthz`, `/readyz`, `/metrics` and `/openapi.json`.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

use super::extract::Caller;
use super::{ApiError, Shared, json_body};

/// `GET /healthz`: the process answers.
pub async fn health() -> &'static str {
    "ok"
}

#[derive(Serialize)]
struct Ready {
    ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

/// `/readyz`: the state is rebuilt (it always is once the server listens), and the store answers (a shared
/// store is asked; a load balancer then stops sending requests to an instance that lost its database).
pub async fn ready(State(app): State<Shared>) -> Response {
    let svc = app.svc.clone();
    match tokio::task::spawn_blocking(move || svc.store_reachable()).await {
        Ok(Ok(())) => json_body(&Ready { ready: true, message: None }),
        Ok(Err(e)) => {
            let body = Ready { ready: false, message: Some(e.message) };
            (axum::http::StatusCode::SERVICE_UNAVAILABLE, json_body(&body)).into_response()
        }
        Err(e) => ApiError::internal(e).into_response(),
    }
}

/// `/openapi.json`, built once.
static OPENAPI: std::sync::LazyLock<Value> = std::sync::LazyLock::new(super::openapi::document);

/// `/openapi.json`: with tokens configured, for token holders only.
pub async fn openapi(Caller(a): Caller) -> Result<Response, ApiError> {
    a.not_a_scope("read the server's description")?;
    Ok(json_body(&*OPENAPI))
}

/// Who may read `/metrics`: with tokens configured, token holders (not scopes), unless
/// `server.public_metrics`.
pub struct MetricsReader;

impl FromRequestParts<Shared> for MetricsReader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Shared) -> Result<Self, ApiError> {
        if !app.public_metrics {
            Caller::of(app, &parts.headers)?.not_a_scope("read the server's metrics")?;
        }
        Ok(Self)
    }
}

/// `/metrics`: the Prometheus exposition.
pub async fn metrics(State(app): State<Shared>, _: MetricsReader) -> String {
    let mut out = app.metrics.render();
    if app.telemetry.enabled() {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "# HELP chatctx_telemetry_spans_dropped_total Spans dropped because the export queue was full."
        );
        let _ = writeln!(out, "# TYPE chatctx_telemetry_spans_dropped_total counter");
        let _ = writeln!(out, "chatctx_telemetry_spans_dropped_total {}", app.telemetry.dropped());
    }
    {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "# HELP chatctx_store_skipped_operations_total Logged operations of other instances this one could not \
             apply (it then reports not ready).\n# TYPE chatctx_store_skipped_operations_total counter\n\
             chatctx_store_skipped_operations_total {}",
            app.svc.skipped_operations().0
        );
    }
    if let Some(s) = app.svc.summary_queue() {
        out.push_str(&s.metrics());
    }
    out
}
