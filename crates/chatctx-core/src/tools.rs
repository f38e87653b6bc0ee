//! The tools of SPEC §6: one request type and one response type each. HTTP, MCP and `replay` are thin
//! adapters over [`Engine::call`].

use std::ops::Range;

use serde::Serialize;
use serde_json::Value;

use crate::chat::{Chat, Item};
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::history::ChatHistoryItem;
use crate::json::{Fields, object};
use crate::render::{self, ItemLine, PromptMessage, PromptParts};
use crate::selection::{Triage, TriageRequest};
use crate::settings::Format;
use crate::time::Timestamp;

/// The tool names of SPEC §6, and whether this build answers them.
pub const TOOLS: &[(&str, bool)] = &[
    ("get_chat_history_context", true),
    ("resolve_reference_target", true),
    ("list_active_context_objects", true),
    ("get_scenario", true),
    ("update_scenario", true),
    ("revert_scenario", true),
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
            channel: f.channel()?,
            chat_id: f.req_id("chat_id")?,
            topic_id: f.id("topic_id")?,
            current_message_id: f.id("current_message_id")?,
            now: f.time("now")?,
        })
    }
}

pub use crate::selection::{SelectionMethod, SelectionReport};

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

/// [`Engine::get_chat_history_prompt`]: the prompt alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryPrompt {
    /// What selection did.
    pub selection: SelectionReport,
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
    /// `get_scenario`, `update_scenario`, `revert_scenario`.
    Scenario(Box<crate::scenario::ScenarioState>),
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
            ToolResponse::Scenario(s) => format!(
                "revision={} changed={} bytes={}",
                s.revision,
                s.changed.map_or("-", |c| if c { "true" } else { "false" }),
                serde_json::to_string(&s.state).map_or(0, |j| j.len())
            ),
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

/// Whether a call of `tool` always changes the state when it succeeds (so [`Engine::call_read_only`] never
/// answers it): scenario updates and reverts.
pub fn always_writes(tool: &str) -> bool {
    matches!(tool, "update_scenario" | "revert_scenario")
}

fn serde_plain<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

impl Engine {
    /// Answers a call from the current state when answering changes nothing; `None` when it would change the
    /// state (a scenario update or revert, or a resolution that records an activation), which
    /// [`Engine::call`] must then make. Lets a store shared by several processes take its write path only
    /// for the calls that write.
    pub fn call_read_only(&mut self, tool: &str, args: &Value, now: Timestamp) -> Result<Option<ToolResponse>, Error> {
        match tool {
            _ if always_writes(tool) => Ok(None),
            "resolve_reference_target" => {
                let req = crate::resolve::ResolveReferenceTarget::decode(args)?;
                let at = req.now.unwrap_or(now);
                Ok(self.resolve_read_only(&req, at)?.map(|r| ToolResponse::Resolve(Box::new(r))))
            }
            _ => self.call(tool, args, now).map(Some),
        }
    }

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
            "get_scenario" => {
                let req = crate::scenario::GetScenario::decode(args)?;
                Ok(ToolResponse::Scenario(Box::new(self.get_scenario(&req))))
            }
            "update_scenario" => {
                let req = crate::scenario::UpdateScenario::decode(args)?;
                self.update_scenario(&req, now).map(|s| ToolResponse::Scenario(Box::new(s)))
            }
            "revert_scenario" => {
                let req = crate::scenario::RevertScenario::decode(args)?;
                self.revert_scenario(&req, now).map(|s| ToolResponse::Scenario(Box::new(s)))
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

    /// `get_chat_history_context` (SPEC §6.3): selection (see [`crate::selection`]), rendering and the prompt.
    pub fn get_chat_history_context(&self, req: &GetChatHistoryContext) -> Result<HistoryContext, Error> {
        let h = self.select_history(req)?;
        let cut = self.settings().conversation.context_truncation;
        let items: Vec<ChatHistoryItem> = h
            .selected
            .items
            .iter()
            .map(|i| {
                let mut v = h.chat.view(&req.channel, &req.chat_id, i);
                if let Some(at) = i.reply_cut(cut) {
                    v.text.truncate(at);
                    v.text.push_str(render::ELLIPSIS);
                }
                v
            })
            .collect();
        let (prompt, history) = self.history_prompt(&h, &req.channel);
        let rendered = match self.settings().history.format {
            Format::Single => Rendered::Single(render::payload(&req.channel, &items)),
            Format::PerItem => Rendered::PerItem(prompt[history].to_vec()),
        };
        Ok(HistoryContext { selection: h.selected.report, items, rendered, prompt })
    }

    /// The prompt of [`Engine::get_chat_history_context`] and its selection report, without the structured
    /// `items` and `rendered` parts: the same selection and byte for byte the same prompt, rendered straight
    /// from the stored items. For bots that embed the library and only send the prompt.
    pub fn get_chat_history_prompt(&self, req: &GetChatHistoryContext) -> Result<HistoryPrompt, Error> {
        let h = self.select_history(req)?;
        let (prompt, _) = self.history_prompt(&h, &req.channel);
        Ok(HistoryPrompt { selection: h.selected.report, prompt })
    }

    /// The model triage that answering `req` would make now, if any, without making it. A caller that keeps
    /// the engine behind a lock can make the model call without holding the lock, then answer the request
    /// through an installed [`Triage`] that returns that answer for an equal [`TriageRequest`].
    pub fn pending_triage(&self, req: &GetChatHistoryContext) -> Result<Option<TriageRequest>, Error> {
        if !self.triage().is_some_and(|t| t.configured()) {
            return Ok(None);
        }
        let capture = Capture(std::sync::Mutex::new(None));
        self.select_history_with(req, Some(&capture))?;
        Ok(capture.0.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The chat, the scope and the selection of a history request.
    fn select_history<'e>(&'e self, req: &'e GetChatHistoryContext) -> Result<HistorySelection<'e>, Error> {
        self.select_history_with(req, self.triage())
    }

    fn select_history_with<'e>(
        &'e self,
        req: &'e GetChatHistoryContext,
        triage: Option<&dyn Triage>,
    ) -> Result<HistorySelection<'e>, Error> {
        let chat = self.chat(&req.channel, &req.chat_id).ok_or_else(|| unknown_chat(&req.chat_id))?;
        let (topic, current): (Option<&str>, Option<&Item>) = match &req.current_message_id {
            Some(id) => {
                let (conv, item) = chat.message(id).ok_or_else(|| {
                    Error::invalid_request(format!(
                        "field `current_message_id`: message {id:?} is not stored for chat {}",
                        req.chat_id
                    ))
                })?;
                (conv.topic.as_deref(), Some(item))
            }
            None => (req.topic_id.as_deref(), None),
        };
        let line = |i: &Item| render::line(&chat.line(i, 0));
        let selected = crate::selection::select(chat, self.settings(), topic, current, triage, &line);
        Ok(HistorySelection { chat, topic, current, selected })
    }

    /// The prompt of a selection (SPEC §5.4), and where the history messages are in it.
    fn history_prompt(&self, h: &HistorySelection<'_>, channel: &str) -> (Vec<PromptMessage>, Range<usize>) {
        let settings = self.settings();
        let cut = settings.conversation.context_truncation;
        let lines: Vec<ItemLine<'_>> = h.selected.items.iter().map(|i| h.chat.line(i, cut)).collect();
        let history = match (lines.is_empty(), settings.history.format) {
            (true, _) => Vec::new(),
            (false, Format::Single) => vec![render::single_lines(channel, &lines)],
            (false, Format::PerItem) => lines.iter().map(render::line_message).collect(),
        };
        let first = usize::from(!settings.prompt.system.is_empty());
        let range = first..first + history.len();
        let prompt = render::prompt(PromptParts {
            system: &settings.prompt.system,
            history,
            state_block: h
                .chat
                .scenarios
                .get(&h.topic.map(str::to_owned))
                .filter(|s| !s.state().is_empty())
                .map(|s| render::state_block(s.state())),
            current: h.current.map(|i| h.chat.line(i, 0)),
        });
        (prompt, range)
    }
}

/// A triage that records the request it is asked and answers nothing (see [`Engine::pending_triage`]).
struct Capture(std::sync::Mutex<Option<TriageRequest>>);

impl Triage for Capture {
    fn configured(&self) -> bool {
        true
    }

    fn triage(&self, request: &TriageRequest) -> Result<Vec<usize>, String> {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(request.clone());
        }
        Err("captured, not sent".to_owned())
    }
}

/// A history request's chat, scope and selection.
struct HistorySelection<'e> {
    chat: &'e Chat,
    topic: Option<&'e str>,
    current: Option<&'e Item>,
    selected: crate::selection::Selected<'e>,
}
