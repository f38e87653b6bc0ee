//! What a handler takes instead of checking by hand (svix-webhooks' and atuin's pattern: the handler's
//! signature is the rule). [`Caller`] is the request's access, [`ChatRoute`] a chat route's access with its
//! channel, chat and topic checked, and [`JsonBody`] / [`EventsBody`] a body within `MAX_BODY`, nested at most
//! `server.max_json_depth` deep, and of a JSON media type. A handler that takes one cannot forget its rule.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::header;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use chatctx_core::event::DEFAULT_CHANNEL;
use chatctx_core::{Error, ErrorCode};
use serde::Deserialize;

use super::{ApiError, AppState, MAX_BODY, Shared};
use crate::auth::Access;
use crate::clock::now;

/// What the request's credentials allow (`Authorization: Bearer …`; everything on a server without tokens).
pub struct Caller(pub Access);

impl Caller {
    /// The access the `Authorization` header of `headers` gives.
    pub fn of(app: &AppState, headers: &axum::http::HeaderMap) -> Result<Access, ApiError> {
        let header = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        app.auth.check(header, now()).map_err(ApiError)
    }
}

impl FromRequestParts<Shared> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Shared) -> Result<Self, ApiError> {
        Self::of(app, &parts.headers).map(Self)
    }
}

/// `?channel=&topic_id=` of a chat route.
#[derive(Deserialize)]
struct ChannelQuery {
    channel: Option<String>,
    topic_id: Option<String>,
}

/// `{chat_id}` of a chat route (the route may have more parameters).
#[derive(Deserialize)]
struct ChatParams {
    chat_id: String,
}

/// A route under `/v1/chats/{chat_id}`: the caller may touch the chat, and `topic` is the topic a read looks at
/// (a bound scope's own, when pinned).
pub struct ChatRoute {
    /// What the credentials allow.
    pub access: Access,
    /// `?channel=`, else the default channel.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The topic the read is of.
    pub topic: Option<String>,
}

impl FromRequestParts<Shared> for ChatRoute {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &Shared) -> Result<Self, Response> {
        let Path(ChatParams { chat_id }) = Path::from_request_parts(parts, app).await.map_err(|r| r.into_response())?;
        let Query(q) = Query::<ChannelQuery>::from_request_parts(parts, app).await.map_err(|r| r.into_response())?;
        let channel = q.channel.filter(|c| !c.is_empty()).unwrap_or_else(|| DEFAULT_CHANNEL.to_owned());
        for (what, v) in [
            ("chat id", chat_id.as_str()),
            ("channel", channel.as_str()),
            ("topic_id", q.topic_id.as_deref().unwrap_or("")),
        ] {
            if v.len() > chatctx_core::json::MAX_ID_BYTES {
                let max = chatctx_core::json::MAX_ID_BYTES;
                return Err(ApiError::invalid_request(format!("the {what} is longer than {max} bytes")).into_response());
            }
            if v.chars().any(char::is_control) {
                return Err(ApiError::invalid_request(format!("the {what} holds a control character")).into_response());
            }
        }
        let access = Caller::of(app, &parts.headers).map_err(IntoResponse::into_response)?;
        if !access.allows(&channel, &chat_id) {
            let e = ApiError::new(ErrorCode::ForbiddenScope, format!("this credential may not touch chat {chat_id:?}"));
            return Err(e.into_response());
        }
        let topic = access.topic(q.topic_id.as_deref()).map_err(|e| ApiError(e).into_response())?;
        Ok(Self { access, channel, chat_id, topic })
    }
}

/// A request body for a route that takes `application/json`.
pub struct JsonBody(pub Bytes);

/// A request body for `/v1/events`, which also takes JSON Lines (`application/x-ndjson`).
pub struct EventsBody(pub Bytes);

impl FromRequest<Shared> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, app: &Shared) -> Result<Self, ApiError> {
        read(req, app, false).await.map(Self)
    }
}

impl FromRequest<Shared> for EventsBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, app: &Shared) -> Result<Self, ApiError> {
        read(req, app, true).await.map(Self)
    }
}

impl JsonBody {
    /// The body as `T`, or `invalid_request` saying it is not `what`.
    pub fn parse<T: serde::de::DeserializeOwned>(&self, what: &str) -> Result<T, ApiError> {
        serde_json::from_slice(&self.0).map_err(|e| ApiError::invalid_request(format!("{what}: {e}")))
    }

    /// A platform's payload: the body as JSON (`invalid_event` when it is not).
    pub fn payload(&self) -> Result<serde_json::Value, ApiError> {
        serde_json::from_slice(&self.0)
            .map_err(|e| ApiError(Error::invalid_event(format!("the body is not JSON: {e}"))))
    }
}

/// The body, once its media type is JSON (or JSON Lines, when `ndjson_ok`): `unsupported_media_type` (a
/// browser's cross-origin "simple" request cannot send JSON), `payload_too_large` over [`MAX_BODY`], and
/// `invalid_request` when nested deeper than `server.max_json_depth` (checked before it is parsed).
async fn read(req: Request, app: &AppState, ndjson_ok: bool) -> Result<Bytes, ApiError> {
    let media = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = media.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if !(essence == "application/json" || (ndjson_ok && essence == "application/x-ndjson")) {
        let takes = if ndjson_ok { "application/json or application/x-ndjson" } else { "application/json" };
        let got = if media.is_empty() { "no Content-Type".to_owned() } else { format!("Content-Type {media:?}") };
        return Err(ApiError::new(ErrorCode::UnsupportedMediaType, format!("this route takes {takes}, not {got}")));
    }
    let bytes = Bytes::from_request(req, app).await.map_err(|r| match r {
        BytesRejection::FailedToBufferBody(_) => {
            ApiError::new(ErrorCode::PayloadTooLarge, format!("the body is over {MAX_BODY} bytes"))
        }
        other => ApiError::invalid_request(other.body_text()),
    })?;
    let depth = chatctx_core::json::nesting(&bytes);
    chatctx_core::json::check_nesting(depth, app.limits.max_json_depth, "the body", ErrorCode::InvalidRequest)?;
    Ok(bytes)
}
