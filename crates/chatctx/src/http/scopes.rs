//! `POST /v1/scopes` and `DELETE /v1/scopes/{token}`: short-lived tokens bound to one chat, for a model's tool
//! loop (docs/security.md).

use axum::extract::{Path, State};
use axum::response::Response;
use chatctx_core::event::DEFAULT_CHANNEL;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::{Caller, JsonBody};
use super::{ApiError, Shared, blocking, json_body};
use crate::auth::Bound;
use crate::clock::now;

/// `POST /v1/scopes`.
#[derive(Deserialize)]
struct ScopeRequest {
    chat_id: Value,
    channel: Option<String>,
    topic_id: Option<Value>,
    current_message_id: Option<Value>,
    sender_user_id: Option<Value>,
    /// Lifetime in seconds (default 600, at most 86,400).
    ttl_seconds: Option<u64>,
    /// Whether the scope may write the conversation's summary.
    #[serde(default)]
    may_write_summary: bool,
}

#[derive(Serialize)]
struct Issued {
    token: String,
    #[serde(flatten)]
    scope: Bound,
}

/// `POST /v1/scopes`: a token bound to one chat (and optionally topic, current message, sender).
pub async fn post_scope(State(app): State<Shared>, Caller(a): Caller, body: JsonBody) -> Result<Response, ApiError> {
    let raw: Value = body.parse("not a scope request")?;
    chatctx_core::json::check_ids(&raw).map_err(|e| ApiError::invalid_request(e.message))?;
    let req: ScopeRequest =
        serde_json::from_value(raw).map_err(|e| ApiError::invalid_request(format!("not a scope request: {e}")))?;
    let id = |v: &Value, field: &str| {
        chatctx_core::json::id_of(v)
            .ok_or_else(|| ApiError::invalid_request(format!("field `{field}`: expected an id")))
    };
    let ttl = req.ttl_seconds.unwrap_or(600);
    if ttl == 0 || ttl > 86_400 {
        return Err(ApiError::invalid_request("field `ttl_seconds`: between 1 and 86400"));
    }
    let scope = Bound {
        channel: req.channel.filter(|c| !c.is_empty()).unwrap_or_else(|| DEFAULT_CHANNEL.to_owned()),
        chat_id: id(&req.chat_id, "chat_id")?,
        topic_id: req.topic_id.as_ref().map(|v| id(v, "topic_id")).transpose()?,
        current_message_id: req.current_message_id.as_ref().map(|v| id(v, "current_message_id")).transpose()?,
        sender_user_id: req.sender_user_id.as_ref().map(|v| id(v, "sender_user_id")).transpose()?,
        expires_at: now().plus(chatctx_core::Span::from_secs(i64::try_from(ttl).unwrap_or(600))),
        id: String::new(),
        may_write_summary: req.may_write_summary,
    };
    let (token, scope) = app.auth.issue(&a, scope, now())?;
    Ok(json_body(&Issued { token, scope }))
}

#[derive(Serialize)]
struct Revoked {
    revoked: bool,
    scope_id: String,
}

/// `DELETE /v1/scopes/{token}`: the scope stops working on every instance (within a second on the others),
/// until it would have expired anyway.
pub async fn delete_scope(
    State(app): State<Shared>,
    Caller(a): Caller,
    Path(token): Path<String>,
) -> Result<Response, ApiError> {
    let bound = app.auth.revoke(&a, &token)?;
    let svc = app.svc.clone();
    let (id, until) = (bound.id.clone(), bound.expires_at);
    blocking(move || svc.revoke_scope(&id, until)).await?;
    Ok(json_body(&Revoked { revoked: true, scope_id: bound.id }))
}
