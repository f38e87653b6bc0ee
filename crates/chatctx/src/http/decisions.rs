//! `GET /v1/chats/{chat_id}/decisions` and `…/decisions/{request_id}`: the decision records kept of the chat's
//! tool calls (docs/protocol.md §6.7), with the same access as the chat's reads.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use chatctx_core::ErrorCode;
use serde::{Deserialize, Serialize};

use super::extract::ChatRoute;
use super::{ApiError, AppState, json_body};
use crate::auth::{Access, Bound};
use crate::decisions::Record;

/// Records `GET /v1/chats/{chat_id}/decisions` answers without a `limit`.
const DEFAULT_DECISIONS: usize = 20;

/// `?limit=` of `GET /v1/chats/{chat_id}/decisions`.
#[derive(Deserialize)]
pub struct DecisionsQuery {
    limit: Option<usize>,
}

/// The records a credential may see of a chat: a scope pinned to a topic sees that topic's calls only.
fn visible(a: &Access, topic: Option<&str>, r: &Record) -> bool {
    match a {
        Access::Bound(Bound { topic_id: Some(_), .. }) => r.topic_id.as_deref() == topic,
        _ => true,
    }
}

/// `GET /v1/chats/{chat_id}/decisions?limit=N`: the chat's newest decision records, newest first.
pub async fn get_decisions(
    State(app): State<AppState>,
    chat: ChatRoute,
    Query(q): Query<DecisionsQuery>,
) -> Result<Response, ApiError> {
    let keep = app.svc.decisions().keep();
    let max = crate::config::MAX_DECISIONS_KEEP;
    let limit = q.limit.unwrap_or(DEFAULT_DECISIONS);
    if limit == 0 || limit > max {
        return Err(ApiError::invalid_request(format!(
            "`limit` must be 1..={max}; at most [decisions] keep = {keep} records are kept per chat"
        )));
    }
    let ChatRoute { access, channel, chat_id, topic } = chat;
    let records: Vec<_> = app
        .svc
        .decisions()
        .newest(&channel, &chat_id, keep)
        .into_iter()
        .filter(|r| visible(&access, topic.as_deref(), r))
        .take(limit)
        .collect();
    #[derive(Serialize)]
    struct Records {
        decisions: Vec<Arc<Record>>,
        keep: usize,
    }
    Ok(json_body(&Records { decisions: records, keep }))
}

/// `{request_id}` of `GET /v1/chats/{chat_id}/decisions/{request_id}`.
#[derive(Deserialize)]
pub struct RecordParams {
    request_id: String,
}

/// `GET /v1/chats/{chat_id}/decisions/{request_id}`: one record, by the request id its call was logged under.
pub async fn get_decision(
    State(app): State<AppState>,
    chat: ChatRoute,
    Path(RecordParams { request_id }): Path<RecordParams>,
) -> Result<Response, ApiError> {
    let ChatRoute { access, channel, chat_id, topic } = chat;
    match app.svc.decisions().find(&channel, &chat_id, &request_id).filter(|r| visible(&access, topic.as_deref(), r)) {
        Some(r) => Ok(json_body(&*r)),
        None => Err(ApiError::new(
            ErrorCode::UnknownDecision,
            format!(
                "no decision record {request_id:?} in chat {chat_id}: records are kept in memory, the newest {} \
                 per chat",
                app.svc.decisions().keep()
            ),
        )),
    }
}
