//! The tools of SPEC §6: one request type and one response type each. HTTP, MCP and `replay` are thin
//! adapters over [`Engine::call`].

use serde::Serialize;
use serde_json::Value;

use crate::chat::{Chat, Item, Key};
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::event::DEFAULT_CHANNEL;
use crate::history::ChatHistoryItem;
use crate::json::{Fields, object};
use crate::render::{self, PromptMessage, PromptParts};
use crate::settings::{Format, Scope};
use crate::time::Timestamp;

/// The tool names of SPEC §6, and whether this build answers them.
pub const TOOLS: &[(&str, bool)] = &[
    ("get_chat_history_context", true),
    ("resolve_reference_target", true),
    ("list_active_context_objects", true),
    ("get_scenario", false),
    ("update_scenario", false),
    ("revert_scenario", false),
];

const RQ: ErrorCode = ErrorCode::InvalidRequest;

/// `get_chat_history_context` request (SPEC §6.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetChatHistoryContext {
    /// Platform, default `telegram`.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The topic, when there is no current message to take it from.
    pub topic_id: Option<String>,
    /// The message being answered: history is what came before it in its scope.
    pub current_message_id: Option<String>,
    /// The time the answer is for.
    pub now: Option<Timestamp>,
}

impl GetChatHistoryContext {
    /// Reads the request from JSON, naming any bad field.
    pub fn decode(v: &Value) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        Ok(Self {
            channel: f.str("channel")?.filter(|s| !s.is_empty()).unwrap_or(DEFAULT_CHANNEL).to_owned(),
            chat_id: f.req_id("chat_id")?,
            topic_id: f.id("topic_id")?,
            current_message_id: f.id("current_message_id")?,
            now: f.time("now")?,
        })
    }
}

/// How the history was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectionMethod {
    /// Everything eligible.
    All,
    /// The newest 16 / 8 eligible items.
    Cap,
    /// Model triage.
    Triage,
    /// Lexical ranking.
    Lexical,
    /// No model: every older item kept.
    FailOpen,
    /// Only the guaranteed recent items.
    RecentOnly,
}

/// What selection did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelectionReport {
    /// The method that really ran.
    pub method: SelectionMethod,
    /// Eligible items looked at.
    pub considered: usize,
    /// Items kept.
    pub kept: usize,
    /// Items kept by rule rather than by choice (`reply_parent`).
    pub forced: Vec<&'static str>,
}

/// The rendered history: the `single` payload or the `per_item` messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Rendered {
    /// `history.format = "single"`.
    Single(render::HistoryPayload),
    /// `history.format = "per_item"`.
    PerItem(Vec<PromptMessage>),
}

/// `get_chat_history_context` response (SPEC §6.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryContext {
    /// The selected items, oldest first.
    pub items: Vec<ChatHistoryItem>,
    /// What selection did.
    pub selection: SelectionReport,
    /// The rendered history.
    pub rendered: Rendered,
    /// The whole prompt, in the order of SPEC §5.4.
    pub prompt: Vec<PromptMessage>,
}

/// One tool's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolResponse {
    /// `get_chat_history_context`.
    History(Box<HistoryContext>),
    /// `resolve_reference_target`.
    Resolve(Box<crate::resolve::Resolution>),
    /// `list_active_context_objects`.
    List(Box<crate::active::ActiveObjects>),
}

impl ToolResponse {
    /// The compact log fields of SPEC §11 for this answer (never message text).
    pub fn log_fields(&self) -> String {
        match self {
            ToolResponse::History(h) => format!(
                "method={} considered={} kept={}",
                serde_plain(&h.selection.method),
                h.selection.considered,
                h.selection.kept
            ),
            ToolResponse::Resolve(r) => {
                let top: Vec<&str> = r.candidates.iter().map(|c| c.descriptor.object_id.as_str()).collect();
                format!(
                    "status={} candidate_count={} top={} top_score_gap={} scope_used={}",
                    serde_plain(&r.status),
                    r.diagnostics.candidate_count,
                    top.join(","),
                    r.diagnostics.top_score_gap,
                    serde_plain(&r.scope_used)
                )
            }
            ToolResponse::List(l) => {
                let top: Vec<&str> = l.objects.iter().take(3).map(|o| o.descriptor.object_id.as_str()).collect();
                format!(
                    "status={} count={} top={} truncated={}",
                    serde_plain(&l.status),
                    l.objects.len(),
                    top.join(","),
                    l.truncated
                )
            }
        }
    }
}

fn serde_plain<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

impl Engine {
    /// Answers tool `tool` with JSON `args`. `now` is used when the request carries none.
    pub fn call(&mut self, tool: &str, args: &Value, now: Timestamp) -> Result<ToolResponse, Error> {
        match tool {
            "get_chat_history_context" => {
                let mut req = GetChatHistoryContext::decode(args)?;
                req.now.get_or_insert(now);
                self.get_chat_history_context(&req).map(|h| ToolResponse::History(Box::new(h)))
            }
            "resolve_reference_target" => {
                let req = crate::resolve::ResolveReferenceTarget::decode(args)?;
                let at = req.now.unwrap_or(now);
                self.resolve_reference_target(&req, at).map(|r| ToolResponse::Resolve(Box::new(r)))
            }
            "list_active_context_objects" => {
                let req = crate::active::ListActiveContextObjects::decode(args)?;
                let at = req.now.unwrap_or(now);
                self.list_active_context_objects(&req, at).map(|l| ToolResponse::List(Box::new(l)))
            }
            other => match TOOLS.iter().find(|(name, _)| *name == other) {
                Some(_) => Err(Error::new(
                    ErrorCode::UnknownTool,
                    format!("tool {other:?} is not available in this build yet"),
                )),
                None => Err(Error::new(
                    ErrorCode::UnknownTool,
                    format!(
                        "unknown tool {other:?}; tools: {}",
                        TOOLS.iter().map(|t| t.0).collect::<Vec<_>>().join(", ")
                    ),
                )),
            },
        }
    }

    /// `get_chat_history_context` (SPEC §6.3). This build selects by the write-policy cap for both
    /// `history.policy` values; the selection algorithm of §6.3 replaces it for `"selection"`.
    pub fn get_chat_history_context(&self, req: &GetChatHistoryContext) -> Result<HistoryContext, Error> {
        let chat = self.chat(&req.channel, &req.chat_id).ok_or_else(|| unknown_chat(&req.chat_id))?;
        let (topic, before, current): (Option<&str>, Option<Key>, Option<&Item>) = match &req.current_message_id {
            Some(id) => {
                let (conv, item) = chat.message(id).ok_or_else(|| {
                    Error::invalid_request(format!(
                        "field `current_message_id`: message {id:?} is not stored for chat {}",
                        req.chat_id
                    ))
                })?;
                (conv.topic.as_deref(), Some(item.key()), Some(item))
            }
            None => (req.topic_id.as_deref(), None, None),
        };
        let settings = self.settings();
        let (picked, considered) = if settings.conversation.enabled {
            newest_eligible(chat, settings, topic, before)
        } else {
            (Vec::new(), 0)
        };
        let items: Vec<ChatHistoryItem> = picked.iter().map(|i| chat.view(&req.channel, &req.chat_id, i)).collect();
        let current = current.map(|i| chat.view(&req.channel, &req.chat_id, i));
        let (rendered, history_messages) = match settings.history.format {
            Format::Single => {
                let payload = render::payload(&req.channel, &items);
                let message = PromptMessage { role: render::Role::User, content: render::compact(&payload) };
                (Rendered::Single(payload), vec![message])
            }
            Format::PerItem => {
                let messages = render::per_item(&items);
                (Rendered::PerItem(messages.clone()), messages)
            }
        };
        let prompt = render::prompt(PromptParts {
            system: &settings.prompt.system,
            history: if items.is_empty() { Vec::new() } else { history_messages },
            state_block: None,
            current: current.as_ref(),
        });
        let method = if settings.conversation.enabled { SelectionMethod::Cap } else { SelectionMethod::All };
        Ok(HistoryContext {
            selection: SelectionReport { method, considered, kept: items.len(), forced: Vec::new() },
            items,
            rendered,
            prompt,
        })
    }
}

/// The newest `mode.cap()` eligible items before `before` in the scope of `topic`, oldest first, and how
/// many eligible items there were in all.
fn newest_eligible<'c>(
    chat: &'c Chat,
    settings: &crate::settings::Settings,
    topic: Option<&str>,
    before: Option<Key>,
) -> (Vec<&'c Item>, usize) {
    let mode = settings.history.mode;
    let cap = mode.cap();
    let mut picked: Vec<&Item> = Vec::with_capacity(cap);
    let mut considered = 0;
    match settings.history.scope {
        Scope::Topic => {
            if let Some(conv) = chat.conv_of(topic) {
                for item in conv.before(before).rev().filter(|i| i.eligible(mode)) {
                    considered += 1;
                    if picked.len() < cap {
                        picked.push(item);
                    }
                }
            }
        }
        Scope::Chat => {
            for conv in &chat.convs {
                let mut taken = 0;
                for item in conv.before(before).rev().filter(|i| i.eligible(mode)) {
                    considered += 1;
                    if taken < cap {
                        picked.push(item);
                        taken += 1;
                    }
                }
            }
            picked.sort_unstable_by_key(|i| std::cmp::Reverse(i.key()));
            picked.truncate(cap);
        }
    }
    picked.reverse();
    (picked, considered)
}
