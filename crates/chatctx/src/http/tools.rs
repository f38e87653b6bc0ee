//! `POST /v1/tools/{tool}` (docs/protocol.md §6): a tool call decoded once, as the caller's access fills and
//! limits it, and answered through [`crate::call::answer`], the same way MCP answers it.

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::Value;

use super::extract::{Caller, JsonBody};
use super::{ApiError, Shared, json_body};
use crate::call::{RequestId, RequestSpan};

/// `POST /v1/tools/{tool}`: the body is the tool's arguments (an empty body is `{}`).
pub async fn post_tool(
    State(app): State<Shared>,
    Caller(a): Caller,
    Path(tool): Path<String>,
    span: Option<Extension<RequestSpan>>,
    id: Option<Extension<RequestId>>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    let args: Value =
        if body.0.is_empty() { Value::Object(serde_json::Map::new()) } else { body.parse("the body is not JSON")? };
    if !args.is_object() {
        return Err(ApiError::invalid_request("the body must be a JSON object"));
    }
    let call = a.decode_call(&tool, &args).inspect_err(|e| crate::call::log_refused(&tool, e))?;
    let parent = span.map(|Extension(RequestSpan(p))| p);
    let id = id.map(|Extension(RequestId(id))| id).unwrap_or_default();
    Ok(crate::call::answer(&app.svc, &app.telemetry, parent, &id, call, json_body).await?)
}
