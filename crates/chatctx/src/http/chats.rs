//! What is stored for a chat: `GET /v1/chats` (the credential's chats), `DELETE /v1/chats/{chat_id}`, and the
//! chat's reads (`history`, `objects`, `scenario`). Every route under `/v1/chats/{chat_id}` takes a
//! [`ChatRoute`], so none can read a chat its caller may not touch.

use axum::extract::{Query, State};
use axum::response::Response;
use chatctx_core::Error;
use chatctx_core::tools::state::GetScenario;
use chatctx_core::tools::{Scope, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::{Caller, ChatRoute};
use super::{ApiError, AppState, Shared, blocking, json_body};
use crate::auth::{Access, Bound};
use crate::clock::now;

/// `?after=&limit=` of `GET /v1/chats`.
#[derive(Deserialize)]
pub struct ChatsQuery {
    after: Option<String>,
    limit: Option<usize>,
}

/// Chats `GET /v1/chats` lists without a `limit`, and at most with one.
const CHATS_PAGE: usize = 100;
const MAX_CHATS_PAGE: usize = 1000;

/// `GET /v1/chats`: a page of the chats this credential may read (the console's list), sorted by channel and
/// chat id; `next` is the `after` of the next page. Only the listed chats are looked into.
pub async fn get_chats(
    State(app): State<Shared>,
    Caller(a): Caller,
    Query(q): Query<ChatsQuery>,
) -> Result<Response, ApiError> {
    let limit = q.limit.unwrap_or(CHATS_PAGE);
    if limit == 0 || limit > MAX_CHATS_PAGE {
        return Err(ApiError::invalid_request(format!("`limit` must be 1..={MAX_CHATS_PAGE}")));
    }
    let svc = app.svc.clone();
    let (chats, more) = blocking(move || {
        let after = q.after.as_deref().map(|a| a.split_once(':').unwrap_or(("", a)));
        svc.read(|e| e.chat_overviews_page(&|ch, c| a.allows(ch, c), after, limit))
    })
    .await?;
    let next = more.then(|| chats.last().map(|c| format!("{}:{}", c.channel, c.chat_id))).flatten();
    #[derive(Serialize)]
    struct Chats {
        chats: Vec<chatctx_core::engine::ChatOverview>,
        #[serde(skip_serializing_if = "Option::is_none")]
        next: Option<String>,
    }
    Ok(json_body(&Chats { chats, next }))
}

#[derive(Serialize)]
struct Deleted {
    deleted: bool,
}

/// `DELETE /v1/chats/{chat_id}`: forgets the chat, in memory and in the store.
pub async fn delete_chat(State(app): State<Shared>, chat: ChatRoute) -> Result<Response, ApiError> {
    chat.access.not_a_scope("delete a chat")?;
    let svc = app.svc.clone();
    let ChatRoute { channel, chat_id, .. } = chat;
    let deleted = blocking(move || svc.delete_chat(&channel, &chat_id)).await?;
    Ok(json_body(&Deleted { deleted }))
}

/// `?…` of `GET /v1/chats/{chat_id}/history` beyond the channel and topic: a range and a page
/// (docs/protocol.md §6.5).
#[derive(Deserialize)]
pub struct HistoryQuery {
    since: Option<String>,
    until: Option<String>,
    after_message_id: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

/// `GET /v1/chats/{chat_id}/history`: a page of the stored items of a range, as `get_chat_history_range`
/// answers it (the query is read as that tool's request, so both check it alike).
pub async fn get_history(
    State(app): State<Shared>,
    chat: ChatRoute,
    Query(q): Query<HistoryQuery>,
) -> Result<Response, ApiError> {
    let ChatRoute { channel, chat_id, topic, .. } = chat;
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
async fn read_chat<T: Serialize + Send + 'static>(
    app: &AppState,
    channel: String,
    chat_id: String,
    read: impl FnOnce(&chatctx_core::Engine, &str, &str) -> Result<T, Error> + Send + 'static,
) -> Result<Response, ApiError> {
    let svc = app.svc.clone();
    let answer = blocking(move || svc.read_chat(&channel, &chat_id, |e| read(e, &channel, &chat_id))?).await?;
    Ok(json_body(&answer))
}

/// `GET /v1/chats/{chat_id}/objects`: every object of the chat (of its topic, for a scope pinned to one).
pub async fn get_objects(State(app): State<Shared>, chat: ChatRoute) -> Result<Response, ApiError> {
    let ChatRoute { access, channel, chat_id, topic } = chat;
    let pinned = matches!(access, Access::Bound(Bound { topic_id: Some(_), .. }));
    read_chat(&app, channel, chat_id, move |e, channel, chat| {
        e.objects(channel, chat).map(|all| match (pinned, topic) {
            (true, Some(t)) => all.into_iter().filter(|o| o.topic_id.as_deref() == Some(t.as_str())).collect(),
            _ => all,
        })
    })
    .await
}

/// `GET /v1/chats/{chat_id}/scenario`: the conversation state with its kept revisions.
pub async fn get_scenario(State(app): State<Shared>, chat: ChatRoute) -> Result<Response, ApiError> {
    let ChatRoute { channel, chat_id, topic, .. } = chat;
    let scope = Scope { channel, topic_id: topic, ..Scope::chat(chat_id) };
    let call = ToolCall::GetScenario(GetScenario { scope, revisions: true });
    let answer = app.svc.call_logged(&call, now()).await;
    crate::call::log_call(&call, &answer);
    let mut answer = answer?;
    // A read route, not a tool call: it keeps no record and shows none.
    answer.take_explain();
    Ok(json_body(&answer))
}
