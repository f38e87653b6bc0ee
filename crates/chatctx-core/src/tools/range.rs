//! `get_chat_history_range` (docs/protocol.md §6.5): every stored item of a time range, oldest first, a page
//! at a time — what a bot needs to answer "what did I miss?". Also `GET /v1/chats/{chat_id}/history`.
//!
//! A page ends with a `next` cursor while the range holds more; the cursor is the position of the page's last
//! item, so the pages visit every stored item of the range once, across topics and edits (an edit keeps its
//! message's place). Every message is stored, whatever `history.mode` says of prompts; what a read cannot see
//! is what left the store, by `conversation.cache_max_per_conversation` or by `store.max_age`, and the page
//! says so (`truncated`) when the range reaches back past it.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::request::{Id, Request, Scope, ScopeUse, scoped_request};
use crate::chat::{Item, Key};
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::history::ChatHistoryItem;
use crate::json::{Fields, object};
use crate::time::Timestamp;

const RQ: ErrorCode = ErrorCode::InvalidRequest;

/// Items a page holds when the request says no `limit`.
pub const DEFAULT_PAGE: u32 = 50;
/// The most items a page may hold.
pub const MAX_PAGE: u32 = 500;

/// `get_chat_history_range` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct GetChatHistoryRange {
    /// The chat, and the topic to read (without one, every topic of the chat, merged in time order).
    #[serde(flatten)]
    pub scope: Scope,
    /// Items sent at or after this time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
    /// Items sent at or before this time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<Timestamp>,
    /// Items after this stored message ("since my last message").
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Id>")]
    pub after_message_id: Option<String>,
    /// The `next` of the previous page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Items per page, 1–500 (default 50).
    #[serde(default = "default_page")]
    #[schemars(range(min = 1, max = MAX_PAGE))]
    pub limit: usize,
}

fn default_page() -> usize {
    DEFAULT_PAGE as usize
}

impl Request for GetChatHistoryRange {
    const NAME: &'static str = "get_chat_history_range";
    const DESCRIPTION: &'static str = "Every stored message of a time range, oldest first, a page at a time \
        (follow `next`): for catching up on what was said since a time or since a message. Says when the \
        range reaches back past what the store still holds.";
    const SCOPE: ScopeUse = ScopeUse { reads: &["channel", "chat_id", "topic_id"], requires: &[] };
    type Response = HistoryPage;

    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        let req = Self {
            scope: Scope::decode(&f, Self::SCOPE, defaults)?,
            since: f.time("since")?,
            until: f.time("until")?,
            after_message_id: f.id("after_message_id")?,
            cursor: f.str("cursor")?.map(str::to_owned),
            limit: f.count_in("limit", default_page(), MAX_PAGE)?,
        };
        if let Some(c) = &req.cursor {
            parse_cursor(c).ok_or_else(|| f.err("cursor", "is not a cursor this server gave (use a page's `next`)"))?;
        }
        Ok(req)
    }

    scoped_request!();
}

/// What a range read could not see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Truncation {
    /// Items of the range sent before this time may have left the store.
    pub before: Timestamp,
    /// Why: `cache_max_per_conversation` (the per-topic cap evicted the oldest) or `max_age` (retention).
    pub by: &'static str,
}

/// `get_chat_history_range` response (and `GET /v1/chats/{chat_id}/history`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct HistoryPage {
    /// The page's items, oldest first.
    pub items: Vec<ChatHistoryItem>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Present when the range reaches back past items that left the store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
}

fn cursor_of(key: Key) -> String {
    format!("{}.{}", key.0.unix(), key.1)
}

fn parse_cursor(c: &str) -> Option<Key> {
    let (t, seq) = c.split_once('.')?;
    Some((Timestamp::from_unix(t.parse().ok()?)?, seq.parse().ok()?))
}

impl Engine {
    /// `get_chat_history_range` (docs/protocol.md §6.5).
    pub fn get_chat_history_range(&self, req: &GetChatHistoryRange) -> Result<HistoryPage, Error> {
        let (channel, chat_id) = (&req.scope.channel, &req.scope.chat_id);
        let chat = self.chat(channel, chat_id).ok_or_else(|| unknown_chat(chat_id))?;
        // Where the range starts: strictly after a cursor or a message, at or after `since`.
        let mut after: Option<Key> = req.cursor.as_deref().and_then(parse_cursor);
        if let Some(id) = &req.after_message_id {
            let (_, m) = chat.message(id).ok_or_else(|| {
                Error::invalid_request(format!(
                    "field `after_message_id`: message {id:?} is not stored for chat {chat_id} (it may have left \
                     the store; read by `since` instead)"
                ))
            })?;
            after = after.max(Some(m.key()));
        }
        let from = |i: &Item| after.is_none_or(|a| i.key() > a) && req.since.is_none_or(|s| i.sent_at >= s);
        let to = |i: &Item| req.until.is_none_or(|u| i.sent_at <= u);
        let topic = req.scope.topic_id.as_deref();
        let convs: Vec<&crate::chat::Conv> = match topic {
            Some(t) => chat.conv_of(Some(t)).into_iter().collect(),
            None => chat.convs.iter().collect(),
        };
        // Each conversation is in key order: take from each the first `limit + 1` of the range, then merge.
        // Each item with its topic, so that a reader sees which conversation (and prompt) it belongs to.
        let mut picked: Vec<(&Item, Option<&str>)> = Vec::new();
        for conv in &convs {
            let start = conv.items.partition_point(|i| !from(i));
            let items = conv.items.range(start..).take_while(|i| to(i)).take(req.limit + 1);
            picked.extend(items.map(|i| (i, conv.topic.as_deref())));
        }
        picked.sort_unstable_by_key(|(i, _)| i.key());
        let more = picked.len() > req.limit;
        picked.truncate(req.limit);
        let next = if more { picked.last().map(|(i, _)| cursor_of(i.key())) } else { None };
        let items = picked
            .iter()
            .map(|(i, topic)| ChatHistoryItem { topic_id: topic.map(str::to_owned), ..chat.view(channel, chat_id, i) })
            .collect();
        Ok(HistoryPage { items, next, truncated: truncation(&convs, after, req.since) })
    }
}

/// Whether the range starts before what some of its conversations lost: the newest item that left, per
/// conversation, against where the range starts.
fn truncation(convs: &[&crate::chat::Conv], after: Option<Key>, since: Option<Timestamp>) -> Option<Truncation> {
    convs
        .iter()
        .filter_map(|c| c.lost)
        .filter(|(key, _)| after.is_none_or(|a| *key > a) && since.is_none_or(|s| key.0 >= s))
        .max_by_key(|(key, _)| *key)
        .map(|(key, by)| Truncation { before: key.0.plus(crate::time::Span::from_secs(1)), by: by.name() })
}
