//! `GET /v1/chats/{chat_id}/decisions` and `…/decisions/{request_id}`: the decision records kept of the chat's
//! tool calls (docs/protocol.md §6.7), with the same access as the chat's reads.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use chatctx_core::engine::glance::Glance;
use chatctx_core::{Engine, ErrorCode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::ChatRoute;
use super::{ApiError, AppState, Shared, blocking, json_body};
use crate::auth::{Access, Bound};
use crate::decisions::{Detail, Record};

/// One tool answer's record, as the routes show it: with a glance at what it names, as the store holds it now.
#[derive(Serialize, JsonSchema)]
#[schemars(crate = "chatctx_core::wire", rename = "Record")]
pub struct Shown {
    #[serde(flatten)]
    #[schemars(with = "Record")]
    record: Arc<Record>,
    /// What the record names, as the store holds it when the record is read (absent what is no longer stored):
    /// for the people reading records (the console), never part of the answer the record is of.
    stored: Stored,
}

/// What a record names, as the store holds it when the record is read.
#[derive(Default, Serialize, JsonSchema)]
#[schemars(crate = "chatctx_core::wire")]
pub struct Stored {
    /// The chat's title (docs/protocol.md §3.12).
    #[serde(skip_serializing_if = "Option::is_none")]
    chat_title: Option<String>,
    /// The title of the topic the call was for.
    #[serde(skip_serializing_if = "Option::is_none")]
    topic_title: Option<String>,
    /// The message being handled: who wrote it, its first words, its topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Glance>,
    /// Each resolver candidate still held, by object id: who posted it and its first words.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    candidates: BTreeMap<String, Glance>,
}

impl Shown {
    fn new(e: &Engine, record: Arc<Record>) -> Self {
        let (channel, chat) = (record.channel.as_str(), record.chat_id.as_str());
        let message = record.current_message_id.as_deref().and_then(|m| e.glance_message(channel, chat, m));
        let topic = record.topic_id.clone().or_else(|| message.as_ref().and_then(|m| m.topic_id.clone()));
        let candidates = match &record.detail {
            Detail::Resolve(r) => r
                .candidates_with_ids()
                .filter_map(|(id, _)| e.glance_object(channel, chat, &id).map(|g| (id, g)))
                .collect(),
            _ => BTreeMap::new(),
        };
        let stored = Stored {
            chat_title: e.title_of(channel, chat, None).map(str::to_owned),
            topic_title: topic.and_then(|t| e.title_of(channel, chat, Some(&t)).map(str::to_owned)),
            message,
            candidates,
        };
        Self { record, stored }
    }
}

/// The records, shown: one read of the chat for all of them.
async fn shown(
    app: &AppState,
    channel: String,
    chat_id: String,
    records: Vec<Arc<Record>>,
) -> Result<Vec<Shown>, ApiError> {
    let svc = app.svc.clone();
    blocking(move || svc.read_chat(&channel, &chat_id, |e| records.into_iter().map(|r| Shown::new(e, r)).collect()))
        .await
}

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
    State(app): State<Shared>,
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
        decisions: Vec<Shown>,
        keep: usize,
    }
    let decisions = shown(&app, channel, chat_id, records).await?;
    Ok(json_body(&Records { decisions, keep }))
}

/// `{request_id}` of `GET /v1/chats/{chat_id}/decisions/{request_id}`.
#[derive(Deserialize)]
pub struct RecordParams {
    request_id: String,
}

/// `GET /v1/chats/{chat_id}/decisions/{request_id}`: one record, by the request id its call was logged under.
pub async fn get_decision(
    State(app): State<Shared>,
    chat: ChatRoute,
    Path(RecordParams { request_id }): Path<RecordParams>,
) -> Result<Response, ApiError> {
    let ChatRoute { access, channel, chat_id, topic } = chat;
    match app.svc.decisions().find(&channel, &chat_id, &request_id).filter(|r| visible(&access, topic.as_deref(), r)) {
        Some(r) => {
            let mut one = shown(&app, channel, chat_id, vec![r]).await?;
            Ok(json_body(&one.pop()))
        }
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
