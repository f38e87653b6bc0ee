//! The HTTP front end (docs/protocol.md §10), thin over [`Service`]: every route decodes, calls the service, and maps an
//! error to its status and `{"code", "message"}` once.

use chatctx_core::event::DEFAULT_CHANNEL;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use chatctx_core::tools::state::GetScenario;
use chatctx_core::tools::{Scope, ToolCall};
use chatctx_core::{Error, ErrorCode};
use serde::Deserialize;
use serde_json::Value;

use crate::auth::{Access, Auth, Bound};
use crate::clock::now;
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

/// The body, or `payload_too_large` / `invalid_request`; a body nested deeper than `server.max_json_depth` is
/// refused before it is parsed.
fn body(app: &AppState, b: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    let bytes = b.map_err(|r| match r {
        BytesRejection::FailedToBufferBody(_) => {
            ApiError(Error::new(ErrorCode::PayloadTooLarge, format!("the body is over {MAX_BODY} bytes")))
        }
        other => ApiError(Error::invalid_request(other.body_text())),
    })?;
    let depth = chatctx_core::json::nesting(&bytes);
    chatctx_core::json::check_nesting(depth, app.limits.max_json_depth, "the body", ErrorCode::InvalidRequest)?;
    Ok(bytes)
}

/// One event, a JSON array of events, or JSON Lines. `single` when the body was one object. More than
/// `max_items` inputs are refused before they are parsed.
fn events_of(bytes: &[u8], max_items: usize) -> Result<(Vec<Value>, bool), Error> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::invalid_event("the body is empty: send an event, an array of events or JSON Lines"));
    }
    let too_many = || {
        Error::new(
            ErrorCode::PayloadTooLarge,
            format!("more than {max_items} inputs in one request (server.max_batch_items): send them in batches"),
        )
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let over = std::cell::Cell::new(false);
    match serde::Deserializer::deserialize_any(&mut de, Batch { max_items, over: &over })
        .and_then(|b| de.end().map(|()| b))
    {
        Ok(Parsed::Many(items)) => Ok((items, false)),
        Ok(Parsed::One(v)) => Ok((vec![v], true)),
        Err(_) if over.get() => Err(too_many()),
        Err(whole) => {
            let text = std::str::from_utf8(bytes).map_err(|_| Error::invalid_event("the body is not UTF-8"))?;
            let lines: Vec<(usize, &str)> = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).collect();
            if lines.len() > max_items {
                return Err(too_many());
            }
            let single = text.lines().count() == 1;
            let mut out = Vec::with_capacity(lines.len());
            for (i, line) in lines {
                out.push(serde_json::from_str(line).map_err(|e| {
                    Error::invalid_event(if i == 0 && single {
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

/// Reads a body as one JSON value or an array of at most `max_items` values, stopping at the first one past
/// (and saying so in `over`).
struct Batch<'a> {
    max_items: usize,
    over: &'a std::cell::Cell<bool>,
}

enum Parsed {
    One(Value),
    Many(Vec<Value>),
}

impl<'de> serde::de::Visitor<'de> for Batch<'_> {
    type Value = Parsed;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an event object or an array of events")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Parsed, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max_items));
        while let Some(v) = seq.next_element::<Value>()? {
            if items.len() == self.max_items {
                self.over.set(true);
                return Err(serde::de::Error::custom("too many inputs"));
            }
            items.push(v);
        }
        Ok(Parsed::Many(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Parsed, A::Error> {
        serde::Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Parsed::One)
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::Bool(v)))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::from(v)))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::from(v)))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::from(v)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::from(v)))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::Null))
    }
}

/// Runs a blocking service call (a durable write waits on the disk) off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError(Error::new(ErrorCode::Internal, e.to_string())))?
        .map_err(ApiError)
}

/// The service and the credentials.
#[derive(Clone)]
pub struct AppState {
    /// The engine behind its store.
    pub svc: Arc<Service>,
    /// Who may call.
    pub auth: Arc<Auth>,
    /// Cancelled on shutdown, to end the MCP sessions' open streams.
    pub stop: tokio_util::sync::CancellationToken,
    /// `server.request_timeout`.
    pub timeout: std::time::Duration,
    /// What `/metrics` reports.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// What one request may ask for.
    pub limits: Limits,
    /// The hosts the server answers for.
    pub hosts: Arc<crate::guard::Hosts>,
    /// `server.public_metrics`.
    pub public_metrics: bool,
    /// OpenTelemetry spans (`[telemetry]`; off by default).
    pub telemetry: Arc<crate::telemetry::Telemetry>,
    /// `slack.signing_secret`: Slack's signed requests to `/v1/slack/events` need no bearer token.
    pub slack_signing_secret: Option<Arc<str>>,
}

/// The request's span, for the spans under it (only when tracing is on).
#[derive(Debug, Clone, Copy)]
pub struct RequestSpan(pub crate::telemetry::SpanContext);

/// Records `GET /v1/chats/{chat_id}/decisions` answers without a `limit`.
const DEFAULT_DECISIONS: usize = 20;

/// The request's id (`x-request-id`), as its log lines and decision records carry it.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// What one request may ask for (`[server]`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `server.max_json_depth`.
    pub max_json_depth: usize,
    /// `server.max_batch_items`.
    pub max_batch_items: usize,
    /// `server.max_rejections`.
    pub max_rejections: usize,
}

impl Limits {
    /// The limits `[server]` sets.
    pub fn of(s: &crate::config::ServerSettings) -> Self {
        Self { max_json_depth: s.max_json_depth, max_batch_items: s.max_batch_items, max_rejections: s.max_rejections }
    }
}

impl AppState {
    /// A server state with the default timeout and fresh metrics.
    pub fn new(svc: Arc<Service>, auth: Arc<Auth>) -> Self {
        Self {
            svc,
            auth,
            stop: tokio_util::sync::CancellationToken::new(),
            timeout: std::time::Duration::from_secs(30),
            metrics: Arc::default(),
            limits: Limits::of(&crate::config::ServerSettings::default()),
            hosts: Arc::new(crate::guard::Hosts::new(&[], "127.0.0.1:0")),
            public_metrics: false,
            telemetry: crate::telemetry::Telemetry::off(),
            slack_signing_secret: None,
        }
    }
}

/// What the request's credentials allow.
fn access(app: &AppState, headers: &HeaderMap) -> Result<Access, ApiError> {
    let header = headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    app.auth.check(header, now()).map_err(ApiError)
}

fn allowed(a: &Access, channel: &str, chat: &str) -> Result<(), ApiError> {
    if a.allows(channel, chat) {
        Ok(())
    } else {
        Err(ApiError(Error::new(ErrorCode::ForbiddenScope, format!("this credential may not touch chat {chat:?}"))))
    }
}

async fn post_events(
    State(app): State<AppState>,
    headers: HeaderMap,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let a = access(&app, &headers)?;
    a.not_a_scope("ingest events")?;
    let (inputs, single) = events_of(&body(&app, b)?, app.limits.max_batch_items)?;
    ingest(&app, a, inputs, single).await
}

/// Ingests `inputs` durably as `a` allows. A single input that is rejected is answered with its error; a
/// batch gets the report.
async fn ingest(app: &AppState, a: Access, inputs: Vec<Value>, single: bool) -> Result<Response, ApiError> {
    let svc = app.svc.clone();
    let allowed = Arc::new(move |ch: &str, c: &str| a.allows(ch, c));
    let mut report = svc.ingest_async(inputs, now(), allowed).await?;
    if single && let Some(r) = report.rejected.first() {
        return Err(ApiError(Error::new(r.code, r.message.clone())));
    }
    app.metrics.ignored(&report.ignored_kinds);
    report.cap_rejections(app.limits.max_rejections);
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
    State(app): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<BotQuery>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let a = access(&app, &headers)?;
    ingest_payload(&app, a, q, &body(&app, b)?, "telegram_update", "update").await
}

/// Ingests a platform's payload, the request's body, as one event of `kind` carrying it under `key`.
async fn ingest_payload(
    app: &AppState,
    a: Access,
    q: BotQuery,
    bytes: &[u8],
    kind: &str,
    key: &str,
) -> Result<Response, ApiError> {
    a.not_a_scope("ingest events")?;
    let payload = payload_of(bytes)?;
    ingest(app, a, vec![platform_event(kind, key, q, payload)], true).await
}

/// A platform's payload: the body as JSON.
fn payload_of(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError(Error::invalid_event(format!("the body is not JSON: {e}"))))
}

/// Wraps a platform's payload as the ingest event of `kind` (under `key`), with what the query says of the bot
/// (`{"type": kind, "bot": {"user_id", "username"}, "triggered_agent", key: payload}`; absent values left out).
fn platform_event(kind: &str, key: &str, q: BotQuery, payload: Value) -> Value {
    let mut bot = serde_json::Map::new();
    if let Some(id) = q.bot_user_id {
        bot.insert("user_id".into(), Value::from(id));
    }
    if let Some(u) = q.bot_username {
        bot.insert("username".into(), Value::from(u));
    }
    let mut event = serde_json::Map::new();
    event.insert("type".into(), Value::from(kind));
    event.insert("bot".into(), Value::Object(bot));
    if let Some(t) = q.triggered_agent {
        event.insert("triggered_agent".into(), Value::from(t));
    }
    event.insert(key.into(), payload);
    Value::Object(event)
}

/// `POST /v1/discord/events`: one Gateway dispatch (docs/protocol.md §3.9).
async fn post_discord(
    State(app): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<BotQuery>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let a = access(&app, &headers)?;
    ingest_payload(&app, a, q, &body(&app, b)?, "discord_event", "payload").await
}

/// `POST /v1/slack/events`: one Events API envelope (docs/protocol.md §3.10). With `slack.signing_secret`
/// configured, a request signed by Slack (`X-Slack-Signature`) needs no bearer token; `url_verification` is
/// answered with its challenge.
async fn post_slack(
    State(app): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<BotQuery>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let bytes = body(&app, b)?;
    let signed = headers.contains_key("x-slack-signature");
    let a = match (&app.slack_signing_secret, signed) {
        (Some(secret), true) => {
            crate::slack::verify(secret, &headers, &bytes, now().unix())?;
            Access::All
        }
        _ => access(&app, &headers)?,
    };
    a.not_a_scope("ingest events")?;
    let payload = payload_of(&bytes)?;
    if payload.get("type").and_then(Value::as_str) == Some("url_verification") {
        let challenge = payload.get("challenge").and_then(Value::as_str).unwrap_or_default();
        let mut answer = serde_json::Map::new();
        answer.insert("challenge".into(), Value::from(challenge));
        return Ok(json_body(&answer));
    }
    ingest(&app, a, vec![platform_event("slack_event", "payload", q, payload)], true).await
}

async fn post_tool(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(tool): Path<String>,
    span: Option<axum::Extension<RequestSpan>>,
    id: Option<axum::Extension<RequestId>>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let a = access(&app, &headers)?;
    let bytes = body(&app, b)?;
    let args: Value = if bytes.is_empty() {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_slice(&bytes)
            .map_err(|e| ApiError(Error::invalid_request(format!("the body is not JSON: {e}"))))?
    };
    if !args.is_object() {
        return Err(ApiError(Error::invalid_request("the body must be a JSON object")));
    }
    let call = a.decode_call(&tool, &args).inspect_err(|e| crate::replay::log_refused(&tool, e))?;
    let parent = span.map(|axum::Extension(RequestSpan(p))| p);
    let id = id.map(|axum::Extension(RequestId(id))| id).unwrap_or_default();
    Ok(call_traced(&app.svc, &app.telemetry, parent, &id, call, json_body).await?)
}

/// Answers a tool call (logged), with a span under the request's when tracing is on, and writes the answer
/// with `write`: with its decision record inline when the call asked (`"explain": true`), else without.
/// The record is then kept under `request_id` (records are on unless `[decisions] keep = 0`).
pub(crate) async fn call_traced<T>(
    svc: &Arc<Service>,
    telemetry: &crate::telemetry::Telemetry,
    parent: Option<crate::telemetry::SpanContext>,
    request_id: &str,
    call: chatctx_core::tools::ToolCall,
    write: impl FnOnce(&chatctx_core::tools::ToolResponse) -> T,
) -> Result<T, Error> {
    let started = std::time::SystemTime::now();
    let at = now();
    let (name, scope, call_now) = (call.name(), call.scope().clone(), call.now());
    let answer = svc.call_logged(call, at).await;
    if let Some(parent) = parent.filter(|_| telemetry.enabled()) {
        telemetry.record(tool_span(telemetry, parent, name, scope.chat_id.clone(), started, &answer));
    }
    let mut answer = answer?;
    // The record is written inline only when the call asked; either way it is kept afterwards.
    let held_back = if scope.explain { None } else { answer.take_explain() };
    let written = write(&answer);
    let explain = held_back.or_else(|| answer.take_explain());
    if let Some(e) = explain.filter(|_| svc.decisions().enabled()) {
        let record = crate::decisions::Record::new(request_id, name, scope, call_now.unwrap_or(at), e, &mut answer);
        svc.decisions().push(record);
    }
    Ok(written)
}

/// The span of one tool call: chat, tool, outcome and counts, never text.
fn tool_span(
    t: &crate::telemetry::Telemetry,
    parent: crate::telemetry::SpanContext,
    tool: &'static str,
    chat: String,
    started: std::time::SystemTime,
    answer: &Result<chatctx_core::tools::ToolResponse, Error>,
) -> crate::telemetry::Span {
    use crate::telemetry::Attr::{Int, Str};
    let mut attributes = vec![("chatctx.chat_id".into(), Str(chat)), ("chatctx.tool".into(), Str(tool.to_owned()))];
    match answer {
        // The answer's summary, as its log line has it: `chatctx.status`, `chatctx.candidate_count`, …
        Ok(r) => {
            let fields = r.fields();
            if !fields.iter().any(|(k, _)| *k == "status") {
                attributes.push(("chatctx.status".into(), Str("ok".to_owned())));
            }
            attributes.extend(
                fields
                    .into_iter()
                    .map(|(k, v)| (format!("chatctx.{k}").into(), v.parse().map_or_else(|_| Str(v), Int))),
            );
        }
        Err(e) => attributes.push(("chatctx.status".into(), Str(chatctx_core::tools::serde_plain(&e.code)))),
    }
    crate::telemetry::Span {
        context: crate::telemetry::SpanContext { trace_id: parent.trace_id, span_id: t.new_span_id() },
        parent: Some(parent.span_id),
        name: format!("tool {tool}"),
        kind: 1,
        start: started,
        end: std::time::SystemTime::now(),
        attributes,
        error: answer.as_ref().is_err_and(|e| status_of(e.code).is_server_error()),
    }
}

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

#[derive(serde::Serialize)]
struct Issued {
    token: String,
    #[serde(flatten)]
    scope: Bound,
}

async fn post_scope(
    State(app): State<AppState>,
    headers: HeaderMap,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let a = access(&app, &headers)?;
    let req: ScopeRequest = serde_json::from_slice(&body(&app, b)?)
        .map_err(|e| ApiError(Error::invalid_request(format!("not a scope request: {e}"))))?;
    let id = |v: &Value, field: &str| {
        chatctx_core::json::id_of(v)
            .ok_or_else(|| ApiError(Error::invalid_request(format!("field `{field}`: expected an id"))))
    };
    let ttl = req.ttl_seconds.unwrap_or(600);
    if ttl == 0 || ttl > 86_400 {
        return Err(ApiError(Error::invalid_request("field `ttl_seconds`: between 1 and 86400")));
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

#[derive(serde::Serialize)]
struct Revoked {
    revoked: bool,
    scope_id: String,
}

/// `DELETE /v1/scopes/{token}`: the scope stops working on every instance (within a second on the others),
/// until it would have expired anyway.
async fn delete_scope(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Result<Response, ApiError> {
    let a = access(&app, &headers)?;
    let bound = app.auth.revoke(&a, &token)?;
    let svc = app.svc.clone();
    let (id, until) = (bound.id.clone(), bound.expires_at);
    blocking(move || svc.revoke_scope(&id, until)).await?;
    Ok(json_body(&Revoked { revoked: true, scope_id: bound.id }))
}

#[derive(serde::Serialize)]
struct Deleted {
    deleted: bool,
}

#[derive(serde::Serialize)]
struct Ready {
    ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

/// `/readyz`: the state is rebuilt (it always is once the server listens), and the store answers (a shared
/// store is asked; a load balancer then stops sending requests to an instance that lost its database).
async fn ready(State(app): State<AppState>) -> Response {
    let svc = app.svc.clone();
    match tokio::task::spawn_blocking(move || svc.store_reachable()).await {
        Ok(Ok(())) => json_body(&Ready { ready: true, message: None }),
        Ok(Err(e)) => {
            let body = Ready { ready: false, message: Some(e.message) };
            (axum::http::StatusCode::SERVICE_UNAVAILABLE, json_body(&body)).into_response()
        }
        Err(e) => ApiError(Error::new(ErrorCode::Internal, e.to_string())).into_response(),
    }
}

/// `?channel=` on chat routes.
#[derive(Deserialize)]
struct ChannelQuery {
    channel: Option<String>,
    topic_id: Option<String>,
}

/// What a chat route may touch: the channel, and the topic a read looks at (a bound scope's own, when pinned).
fn chat_route(
    app: &AppState,
    headers: &HeaderMap,
    chat_id: &str,
    q: &ChannelQuery,
) -> Result<(Access, String, Option<String>), ApiError> {
    let channel = q.channel.clone().filter(|c| !c.is_empty()).unwrap_or_else(|| DEFAULT_CHANNEL.to_owned());
    for (what, v) in
        [("chat id", chat_id), ("channel", channel.as_str()), ("topic_id", q.topic_id.as_deref().unwrap_or(""))]
    {
        if v.len() > chatctx_core::json::MAX_ID_BYTES {
            let max = chatctx_core::json::MAX_ID_BYTES;
            return Err(ApiError(Error::invalid_request(format!("the {what} is longer than {max} bytes"))));
        }
    }
    let a = access(app, headers)?;
    allowed(&a, &channel, chat_id)?;
    let topic = a.topic(q.topic_id.as_deref())?;
    Ok((a, channel, topic))
}

async fn delete_chat(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(chat_id): Path<String>,
    Query(q): Query<ChannelQuery>,
) -> Result<Response, ApiError> {
    let (a, channel, _) = chat_route(&app, &headers, &chat_id, &q)?;
    a.not_a_scope("delete a chat")?;
    let svc = app.svc.clone();
    let deleted = blocking(move || svc.delete_chat(&channel, &chat_id)).await?;
    Ok(json_body(&Deleted { deleted }))
}

/// `?…` of `GET /v1/chats/{chat_id}/history`: a range and a page (docs/protocol.md §6.5).
#[derive(Deserialize)]
struct HistoryQuery {
    channel: Option<String>,
    topic_id: Option<String>,
    since: Option<String>,
    until: Option<String>,
    after_message_id: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

/// `GET /v1/chats/{chat_id}/history`: a page of the stored items of a range, as `get_chat_history_range`
/// answers it (the query is read as that tool's request, so both check it alike).
async fn get_history(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(chat_id): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> Result<Response, ApiError> {
    let cq = ChannelQuery { channel: q.channel, topic_id: q.topic_id };
    let (_, channel, topic) = chat_route(&app, &headers, &chat_id, &cq)?;
    let mut args = serde_json::Map::new();
    args.insert("chat_id".into(), Value::from(chat_id.clone()));
    args.insert("channel".into(), Value::from(channel.clone()));
    // Query values are text: numbers (times in Unix seconds, the limit) are read as numbers.
    let value = |v: String| v.parse::<i64>().map_or_else(|_| Value::from(v.clone()), Value::from);
    for (key, v) in [("topic_id", topic), ("after_message_id", q.after_message_id), ("cursor", q.cursor)] {
        if let Some(v) = v {
            args.insert(key.into(), Value::from(v));
        }
    }
    for (key, v) in [("since", q.since), ("until", q.until), ("limit", q.limit)] {
        if let Some(v) = v {
            args.insert(key.into(), value(v));
        }
    }
    let req =
        <chatctx_core::tools::range::GetChatHistoryRange as chatctx_core::tools::Request>::decode(&Value::Object(args))
            .map_err(ApiError)?;
    read_chat(&app, channel, chat_id, move |e, _, _| e.get_chat_history_range(&req)).await
}

/// Answers a read of one chat: off the async threads, since a shared store is asked for news first.
async fn read_chat<T: serde::Serialize + Send + 'static>(
    app: &AppState,
    channel: String,
    chat_id: String,
    read: impl FnOnce(&chatctx_core::Engine, &str, &str) -> Result<T, Error> + Send + 'static,
) -> Result<Response, ApiError> {
    let svc = app.svc.clone();
    let answer = blocking(move || svc.read_chat(&channel, &chat_id, |e| read(e, &channel, &chat_id))?).await?;
    Ok(json_body(&answer))
}

async fn get_objects(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(chat_id): Path<String>,
    Query(q): Query<ChannelQuery>,
) -> Result<Response, ApiError> {
    let (a, channel, topic) = chat_route(&app, &headers, &chat_id, &q)?;
    let pinned = matches!(a, Access::Bound(Bound { topic_id: Some(_), .. }));
    read_chat(&app, channel, chat_id, move |e, channel, chat| {
        // A scope pinned to a topic sees the objects of its topic only.
        e.objects(channel, chat).map(|all| match (pinned, topic) {
            (true, Some(t)) => all.into_iter().filter(|o| o.topic_id.as_deref() == Some(t.as_str())).collect(),
            _ => all,
        })
    })
    .await
}

async fn get_scenario(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(chat_id): Path<String>,
    Query(q): Query<ChannelQuery>,
) -> Result<Response, ApiError> {
    let (_, channel, topic) = chat_route(&app, &headers, &chat_id, &q)?;
    let scope = Scope { channel, topic_id: topic, ..Scope::chat(chat_id) };
    let call = ToolCall::GetScenario(GetScenario { scope, revisions: true });
    let mut answer = app.svc.call_logged(call, now()).await?;
    // A read route, not a tool call: it keeps no record and shows none.
    answer.take_explain();
    Ok(json_body(&answer))
}

/// The web console (`/console`), built into the binary: plain HTML, CSS and JavaScript, no build step. It
/// reads the GET routes with the token the user enters (kept in the browser tab's session storage).
const CONSOLE_HTML: &str = include_str!("../console/index.html");
const CONSOLE_JS: &str = include_str!("../console/app.js");
const CONSOLE_CSS: &str = include_str!("../console/app.css");

/// One of the console's files, which may run nothing but its own scripts.
fn console_asset(content_type: &'static str, body: &'static str) -> Response {
    use axum::http::header;
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

/// `GET /v1/chats`: the chats this credential may read (the console's list).
async fn get_chats(State(app): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let a = access(&app, &headers)?;
    let svc = app.svc.clone();
    let mut chats = blocking(move || svc.read(|e| e.chat_overviews())).await?;
    chats.retain(|c| a.allows(&c.channel, &c.chat_id));
    #[derive(serde::Serialize)]
    struct Chats {
        chats: Vec<chatctx_core::engine::ChatOverview>,
    }
    Ok(json_body(&Chats { chats }))
}

/// `?limit=` of `GET /v1/chats/{chat_id}/decisions`.
#[derive(Deserialize)]
struct DecisionsQuery {
    channel: Option<String>,
    topic_id: Option<String>,
    limit: Option<usize>,
}

/// The records a credential may see of a chat: a scope pinned to a topic sees that topic's calls only.
fn visible(a: &Access, topic: Option<&str>, r: &crate::decisions::Record) -> bool {
    match a {
        Access::Bound(Bound { topic_id: Some(_), .. }) => r.topic_id.as_deref() == topic,
        _ => true,
    }
}

/// `GET /v1/chats/{chat_id}/decisions?limit=N`: the chat's newest decision records, newest first.
async fn get_decisions(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(chat_id): Path<String>,
    Query(q): Query<DecisionsQuery>,
) -> Result<Response, ApiError> {
    let keep = app.svc.decisions().keep();
    let max = crate::config::MAX_DECISIONS_KEEP;
    let limit = q.limit.unwrap_or(DEFAULT_DECISIONS);
    if limit == 0 || limit > max {
        return Err(ApiError(Error::invalid_request(format!(
            "`limit` must be 1..={max}; at most [decisions] keep = {keep} records are kept per chat"
        ))));
    }
    let cq = ChannelQuery { channel: q.channel, topic_id: q.topic_id };
    let (a, channel, topic) = chat_route(&app, &headers, &chat_id, &cq)?;
    let records: Vec<_> = app
        .svc
        .decisions()
        .newest(&channel, &chat_id, keep)
        .into_iter()
        .filter(|r| visible(&a, topic.as_deref(), r))
        .take(limit)
        .collect();
    #[derive(serde::Serialize)]
    struct Records {
        decisions: Vec<Arc<crate::decisions::Record>>,
        keep: usize,
    }
    Ok(json_body(&Records { decisions: records, keep }))
}

/// `GET /v1/chats/{chat_id}/decisions/{request_id}`: one record, by the request id its call was logged under.
async fn get_decision(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path((chat_id, request_id)): Path<(String, String)>,
    Query(q): Query<ChannelQuery>,
) -> Result<Response, ApiError> {
    let (a, channel, topic) = chat_route(&app, &headers, &chat_id, &q)?;
    match app.svc.decisions().find(&channel, &chat_id, &request_id).filter(|r| visible(&a, topic.as_deref(), r)) {
        Some(r) => Ok(json_body(&*r)),
        None => Err(ApiError(Error::new(
            ErrorCode::UnknownDecision,
            format!(
                "no decision record {request_id:?} in chat {chat_id}: records are kept in memory, the newest {} \
                 per chat",
                app.svc.decisions().keep()
            ),
        ))),
    }
}

/// `/openapi.json`, built once.
static OPENAPI: std::sync::LazyLock<Value> = std::sync::LazyLock::new(crate::openapi::document);

/// The routes.
pub fn router(app: AppState) -> Router {
    // Stateless: every MCP request stands alone, so no client can make the server hold per-session memory
    // (each session kept ~100 KB until it idled out); tool calls need nothing from a session. Hosts are
    // checked for every route alike (`guard`), so rmcp's own check is off.
    let mcp_config = StreamableHttpServerConfig::default()
        .with_cancellation_token(app.stop.child_token())
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts();
    let mcp_app = crate::mcp::Mcp::http(app.svc.clone(), app.auth.clone())
        .with_max_json_depth(app.limits.max_json_depth)
        .with_telemetry(app.telemetry.clone());
    let mcp =
        StreamableHttpService::new(move || Ok(mcp_app.clone()), Arc::new(LocalSessionManager::default()), mcp_config);
    let mcp =
        Router::new().nest_service("/mcp", mcp).layer(axum::middleware::from_fn_with_state(app.clone(), mcp_auth));
    Router::new()
        .route("/v1/events", post(post_events))
        .route("/v1/telegram/updates", post(post_telegram))
        .route("/v1/discord/events", post(post_discord))
        .route("/v1/slack/events", post(post_slack))
        .route("/v1/tools/{tool}", post(post_tool))
        .route("/v1/scopes", post(post_scope))
        .route("/v1/scopes/{token}", delete(delete_scope))
        .route("/v1/chats/{chat_id}", delete(delete_chat))
        .route("/v1/chats/{chat_id}/history", get(get_history))
        .route("/v1/chats/{chat_id}/objects", get(get_objects))
        .route("/v1/chats/{chat_id}/scenario", get(get_scenario))
        .route("/v1/chats", get(get_chats))
        .route("/console", get(|| async { console_asset("text/html; charset=utf-8", CONSOLE_HTML) }))
        .route("/console/", get(|| async { console_asset("text/html; charset=utf-8", CONSOLE_HTML) }))
        .route("/console/app.js", get(|| async { console_asset("text/javascript; charset=utf-8", CONSOLE_JS) }))
        .route("/console/app.css", get(|| async { console_asset("text/css; charset=utf-8", CONSOLE_CSS) }))
        .route("/v1/chats/{chat_id}/decisions", get(get_decisions))
        .route("/v1/chats/{chat_id}/decisions/{request_id}", get(get_decision))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .route("/openapi.json", get(openapi))
        .route("/metrics", get(metrics))
        .fallback(|| async { ApiError(Error::new(ErrorCode::UnknownTool, "no such route")) })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(app.clone(), time_limit))
        .with_state(app.clone())
        .merge(mcp)
        .layer(axum::middleware::from_fn_with_state(app.clone(), guarded))
        .layer(axum::middleware::from_fn_with_state(app, observe))
}

/// `/openapi.json`: with tokens configured, for token holders only.
async fn openapi(State(app): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    access(&app, &headers)?.not_a_scope("read the server's description")?;
    Ok(json_body(&*OPENAPI))
}

/// `/metrics`: with tokens configured, for token holders only, unless `server.public_metrics`.
async fn metrics(State(app): State<AppState>, headers: HeaderMap) -> Result<String, ApiError> {
    if !app.public_metrics {
        access(&app, &headers)?.not_a_scope("read the server's metrics")?;
    }
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
    if let Some(s) = app.svc.summarizer() {
        out.push_str(&s.metrics());
    }
    Ok(out)
}

/// The checks every request passes first ([`crate::guard`]), and the documented error shape for every error.
async fn guarded(State(app): State<AppState>, req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let uri_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if let Some(refused) = crate::guard::check(&app.hosts, req.method(), req.uri().path(), uri_len, req.headers()) {
        return refused;
    }
    crate::guard::json_errors(next.run(req).await).await
}

/// Answers 503 `timeout` when a request runs past `server.request_timeout`. The work under way is not
/// cancelled halfway: a write that was started completes (and retrying it is safe: events are idempotent).
async fn time_limit(
    State(app): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match tokio::time::timeout(app.timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError(Error::new(
            ErrorCode::Timeout,
            format!("the request took longer than server.request_timeout ({:?})", app.timeout),
        ))
        .into_response(),
    }
}

/// The header a request id travels in, both ways.
pub const REQUEST_ID: &str = "x-request-id";

/// A request's id: the caller's `x-request-id` when it is a plain token (at most 64 of `A-Z a-z 0-9 . _ -`),
/// else a new one: a random per-process prefix and a counter (unique without a system call per request). Every log line of the request carries it (`request{id=…}`), the answer echoes it,
/// and its spans have it as `chatctx.request_id`.
fn request_id(headers: &HeaderMap) -> String {
    let given = headers.get(REQUEST_ID).and_then(|v| v.to_str().ok()).filter(|v| {
        !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    });
    given.map_or_else(new_request_id, str::to_owned)
}

/// A fresh request id: this process's random prefix and a counter.
pub(crate) fn new_request_id() -> String {
    static PREFIX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let prefix = PREFIX.get_or_init(|| {
        use ring::rand::SecureRandom;
        let mut b = [0u8; 4];
        let _ = ring::rand::SystemRandom::new().fill(&mut b);
        u32::from_le_bytes(b)
    });
    format!("{prefix:08x}{:08x}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// Names every request (`x-request-id`, and a log span around its work), counts every answer for `/metrics`
/// by route template, and traces it when `[telemetry]` is on.
async fn observe(State(app): State<AppState>, req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    use tracing::Instrument;
    let started = std::time::Instant::now();
    // The matched route is a cheap clone (an `Arc`).
    let matched = req.extensions().get::<axum::extract::MatchedPath>().cloned();
    let route = match &matched {
        Some(p) => p.as_str(),
        None if req.uri().path().starts_with("/mcp") => "/mcp",
        None => "unmatched",
    };
    let method = match *req.method() {
        axum::http::Method::GET => "GET",
        axum::http::Method::POST => "POST",
        axum::http::Method::DELETE => "DELETE",
        axum::http::Method::PUT => "PUT",
        axum::http::Method::HEAD => "HEAD",
        axum::http::Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    };
    let id = request_id(req.headers());
    let span = tracing::info_span!("request", id = %id);
    let traced = app.telemetry.enabled().then(|| (app.telemetry.new_trace(), std::time::SystemTime::now()));
    let mut req = req;
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

/// `/mcp` needs a valid token (when tokens are configured) before any JSON-RPC is read; what each tool
/// call may touch is decided again per call from the same header.
async fn mcp_auth(
    State(app): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Result<Response, ApiError> {
    access(&app, req.headers())?;
    Ok(next.run(req).await)
}

/// What a connection may hold (`[server]`).
#[derive(Debug, Clone, Copy)]
pub struct Connections {
    /// `server.max_connections`: open connections at most; past it, new ones wait in the kernel's backlog.
    pub max: usize,
    /// `server.header_read_timeout`: how long a client may take to send a request's headers.
    pub header_read_timeout: std::time::Duration,
}

impl Connections {
    /// The limits `[server]` sets.
    pub fn of(s: &crate::config::ServerSettings) -> Self {
        Self {
            max: s.max_connections,
            header_read_timeout: std::time::Duration::from_secs(s.header_read_timeout.secs().unsigned_abs()),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then finishes the requests under way. At most
/// `limits.max` connections are open at once; one that does not send its headers in time is closed.
pub async fn run(
    listener: tokio::net::TcpListener,
    app: AppState,
    limits: Connections,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let stop = app.stop.clone();
    let service = hyper_util::service::TowerToHyperService::new(router(app));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.map_err(std::io::Error::other)?,
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors or a connection reset before it was accepted: wait a moment
                    // rather than spin; connections already open go on.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let connection = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service.clone());
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(slot);
        });
    }
    stop.cancel();
    // Requests under way finish; a connection that will not close is left behind after a while.
    if tokio::time::timeout(std::time::Duration::from_secs(10), graceful.shutdown()).await.is_err() {
        tracing::warn!("some connections were still open 10 s after shutdown began");
    }
    Ok(())
}

/// Raises the process's soft limit of open files to its hard limit (a server holds one per connection), and
/// returns the soft limit now in force.
pub fn raise_open_files() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, limit) {
            tracing::warn!("could not raise the open-files limit: {e}");
        }
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use axum::body::Body;
    use tower::ServiceExt as _;

    use super::*;

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
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["code"], "timeout");
    }
}
