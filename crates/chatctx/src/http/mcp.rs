//! `/mcp`: the MCP server ([`crate::mcp`]) over streamable HTTP. A request needs a valid token (when tokens are
//! configured) before any JSON-RPC is read; what each tool call may touch is decided again per call from the
//! same header.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::extract::Caller;
use super::{ApiError, Shared};

/// The `/mcp` service with its credential check.
pub fn router(app: &Shared) -> Router {
    // Stateless: every MCP request stands alone, so no client can make the server hold per-session memory
    // (each session kept ~100 KB until it idled out); tool calls need nothing from a session. Hosts are
    // checked for every route alike (`guard`), so rmcp's own check is off.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(app.stop.child_token())
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts();
    let server = crate::mcp::Mcp::http(app.svc.clone(), app.auth.clone())
        .with_max_json_depth(app.limits.max_json_depth)
        .with_telemetry(app.telemetry.clone());
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config);
    Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn_with_state(app.clone(), credential))
}

/// Refuses a request without a valid credential before the MCP service reads it.
async fn credential(State(app): State<Shared>, req: Request, next: Next) -> Result<Response, ApiError> {
    Caller::of(&app, req.headers())?;
    Ok(next.run(req).await)
}
