//! The HTTP front end (SPEC §10), thin over [`Service`]: every route decodes, calls the service, and maps an
//! error to its status and `{"code", "message"}` once.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use chatctx_core::{Error, ErrorCode, Timestamp};
use serde::Deserialize;
use serde_json::Value;

use crate::service::Service;

/// Largest accepted request body.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// An error answered with its status.
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

/// The HTTP status of an error code (SPEC §9).
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorCode::ForbiddenScope => StatusCode::FORBIDDEN,
        ErrorCode::UnknownTool | ErrorCode::UnknownChat => StatusCode::NOT_FOUND,
        ErrorCode::RevisionConflict => StatusCode::CONFLICT,
        ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (status_of(self.0.code), axum::Json(self.0)).into_response()
    }
}

fn json_body<T: serde::Serialize>(v: &T) -> Response {
    match serde_json::to_vec(v) {
        Ok(bytes) => ([(axum::http::header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => ApiError(Error::new(ErrorCode::Internal, e.to_string())).into_response(),
    }
}

fn now() -> Timestamp {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    Timestamp::from_unix(i64::try_from(secs).unwrap_or(0)).unwrap_or_default()
}

/// The body, or `payload_too_large` / `invalid_request`.
fn body(b: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    b.map_err(|r| match r {
        BytesRejection::FailedToBufferBody(_) => {
            ApiError(Error::new(ErrorCode::PayloadTooLarge, format!("the body is over {MAX_BODY} bytes")))
        }
        other => ApiError(Error::invalid_request(other.body_text())),
    })
}

/// One event, a JSON array of events, or JSON Lines. `single` when the body was one object.
fn events_of(bytes: &[u8]) -> Result<(Vec<Value>, bool), Error> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(items)) => Ok((items, false)),
        Ok(v) => Ok((vec![v], true)),
        Err(whole) => {
            let text = std::str::from_utf8(bytes).map_err(|_| Error::invalid_event("the body is not UTF-8"))?;
            let mut out = Vec::new();
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                out.push(serde_json::from_str(line).map_err(|e| {
                    Error::invalid_event(if i == 0 && text.lines().count() == 1 {
                        format!("the body is not JSON: {whole}")
                    } else {
                        format!("line {} is not JSON: {e}", i + 1)
                    })
                })?);
            }
            Ok((out, false))
        }
    }
}

/// Runs a blocking service call (a durable write waits on the disk) off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError(Error::new(ErrorCode::Internal, e.to_string())))?
        .map_err(ApiError)
}

async fn post_events(State(svc): State<Arc<Service>>, b: Result<Bytes, BytesRejection>) -> Result<Response, ApiError> {
    let (inputs, single) = events_of(&body(b)?)?;
    let report = blocking(move || svc.ingest(&inputs, now())).await?;
    if single && let Some(r) = report.rejected.first() {
        return Err(ApiError(Error::new(r.code, r.message.clone())));
    }
    Ok(json_body(&report))
}

/// Who the bot is, for a forwarded webhook update.
#[derive(Deserialize)]
struct BotQuery {
    bot_user_id: Option<String>,
    bot_username: Option<String>,
    triggered_agent: Option<bool>,
}

async fn post_telegram(
    State(svc): State<Arc<Service>>,
    Query(q): Query<BotQuery>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let update: Value = serde_json::from_slice(&body(b)?)
        .map_err(|e| ApiError(Error::invalid_event(format!("the body is not JSON: {e}"))))?;
    let mut event = serde_json::Map::new();
    event.insert("type".into(), Value::from("telegram_update"));
    let mut bot = serde_json::Map::new();
    if let Some(id) = q.bot_user_id {
        bot.insert("user_id".into(), Value::from(id));
    }
    if let Some(u) = q.bot_username {
        bot.insert("username".into(), Value::from(u));
    }
    event.insert("bot".into(), Value::Object(bot));
    if let Some(t) = q.triggered_agent {
        event.insert("triggered_agent".into(), Value::from(t));
    }
    event.insert("update".into(), update);
    let inputs = vec![Value::Object(event)];
    let report = blocking(move || svc.ingest(&inputs, now())).await?;
    if let Some(r) = report.rejected.first() {
        return Err(ApiError(Error::new(r.code, r.message.clone())));
    }
    Ok(json_body(&report))
}

async fn post_tool(
    State(svc): State<Arc<Service>>,
    Path(tool): Path<String>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let bytes = body(b)?;
    let args: Value = if bytes.is_empty() {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_slice(&bytes)
            .map_err(|e| ApiError(Error::invalid_request(format!("the body is not JSON: {e}"))))?
    };
    if !args.is_object() {
        return Err(ApiError(Error::invalid_request("the body must be a JSON object")));
    }
    let answer = blocking(move || {
        let r = svc.call(&tool, &args, now());
        crate::replay::log_call(&tool, &args, &r);
        r
    })
    .await?;
    Ok(json_body(&answer))
}

#[derive(serde::Serialize)]
struct Deleted {
    deleted: bool,
}

#[derive(serde::Serialize)]
struct Ready {
    ready: bool,
}

/// `?channel=` on chat routes.
#[derive(Deserialize)]
struct ChannelQuery {
    channel: Option<String>,
    topic_id: Option<String>,
}

async fn delete_chat(
    State(svc): State<Arc<Service>>,
    Path(chat_id): Path<String>,
    Query(q): Query<ChannelQuery>,
) -> Result<Response, ApiError> {
    let channel = q.channel.unwrap_or_else(|| "telegram".to_owned());
    let deleted = blocking(move || svc.delete_chat(&channel, &chat_id)).await?;
    Ok(json_body(&Deleted { deleted }))
}

async fn get_history(
    State(svc): State<Arc<Service>>,
    Path(chat_id): Path<String>,
    Query(q): Query<ChannelQuery>,
) -> Result<Response, ApiError> {
    let channel = q.channel.unwrap_or_else(|| "telegram".to_owned());
    let items = svc.read(|e| e.history(&channel, &chat_id, q.topic_id.as_deref()))??;
    Ok(json_body(&items))
}

async fn get_objects(
    State(svc): State<Arc<Service>>,
    Path(chat_id): Path<String>,
    Query(q): Query<ChannelQuery>,
) -> Result<Response, ApiError> {
    let channel = q.channel.unwrap_or_else(|| "telegram".to_owned());
    let objects = svc.read(|e| e.objects(&channel, &chat_id))??;
    Ok(json_body(&objects))
}

async fn get_scenario(
    State(svc): State<Arc<Service>>,
    Path(chat_id): Path<String>,
    Query(q): Query<ChannelQuery>,
) -> Result<Response, ApiError> {
    let mut args = serde_json::Map::new();
    args.insert("chat_id".into(), Value::from(chat_id));
    args.insert("channel".into(), Value::from(q.channel.unwrap_or_else(|| "telegram".to_owned())));
    if let Some(t) = q.topic_id {
        args.insert("topic_id".into(), Value::from(t));
    }
    args.insert("revisions".into(), Value::from(true));
    let answer = svc.call("get_scenario", &Value::Object(args), now())?;
    Ok(json_body(&answer))
}

/// The routes.
pub fn router(svc: Arc<Service>) -> Router {
    Router::new()
        .route("/v1/events", post(post_events))
        .route("/v1/telegram/updates", post(post_telegram))
        .route("/v1/tools/{tool}", post(post_tool))
        .route("/v1/chats/{chat_id}", delete(delete_chat))
        .route("/v1/chats/{chat_id}/history", get(get_history))
        .route("/v1/chats/{chat_id}/objects", get(get_objects))
        .route("/v1/chats/{chat_id}/scenario", get(get_scenario))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { json_body(&Ready { ready: true }) }))
        .fallback(|| async { ApiError(Error::new(ErrorCode::UnknownTool, "no such route")) })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(svc)
}

/// Serves `router` on `listener` until `shutdown` resolves, then finishes the requests under way.
pub async fn run(
    listener: tokio::net::TcpListener,
    svc: Arc<Service>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(svc)).with_graceful_shutdown(shutdown).await
}
