//! `get_chat_history_context`: the earlier messages that belong in the prompt for the message being answered
//! (selection, see [`crate::selection`]), rendered, and the whole prompt.

use std::ops::Range;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::request::{Request, Scope, ScopeUse, scoped_request};
use crate::chat::{Chat, Item};
use crate::decision::HistoryDecision;
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::history::HistoryItems;
use crate::json::{Fields, object};
use crate::render::{self, PromptMessage};
use crate::selection::{SelectionReport, Triage, TriageRequest};
use crate::settings::Format;
use crate::summary::Summary;
use crate::time::Timestamp;

const RQ: ErrorCode = ErrorCode::InvalidRequest;

/// `get_chat_history_context` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct GetChatHistoryContext {
    /// Where: the chat, and the message being answered (history is what came before it in its scope) or,
    /// without one, the topic.
    #[serde(flatten)]
    pub scope: Scope,
    /// The time the answer is for; default the server's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<Timestamp>,
}

impl Request for GetChatHistoryContext {
    const NAME: &'static str = "get_chat_history_context";
    const DESCRIPTION: &'static str = "The earlier messages that belong in the prompt for the message being \
        answered, as structured items, the rendered history payload and ready prompt messages (with the \
        conversation's ACTIVE SCENARIO).";
    const SCOPE: ScopeUse =
        ScopeUse { reads: &["channel", "chat_id", "topic_id", "current_message_id"], requires: &[] };
    type Response = HistoryContext;

    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        Ok(Self { scope: Scope::decode(&f, Self::SCOPE, defaults)?, now: f.time("now")? })
    }

    scoped_request!(now);
}

/// The rendered history: the `single` payload or the `per_item` messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(untagged)]
pub enum Rendered {
    /// `history.format = "single"`.
    Single(render::HistoryPayload),
    /// `history.format = "per_item"`.
    PerItem(Vec<PromptMessage>),
}

/// `get_chat_history_context` response (docs/protocol.md §6.3).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct HistoryContext {
    /// The conversation's summary (docs/protocol.md §6.6), when one covers messages before the selected
    /// ones; the prompt then opens with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// The selected items, oldest first (after the message the summary covers).
    // One block shared with the `single` payload's messages ([`HistoryItems`]); the comment above is the
    // field's description in the OpenAPI document, which must not change.
    pub items: HistoryItems,
    /// What selection did.
    pub selection: SelectionReport,
    /// The rendered history.
    pub rendered: Rendered,
    /// The whole prompt, in the order of docs/protocol.md §5.4.
    pub prompt: Vec<PromptMessage>,
    /// How the items were chosen (docs/protocol.md §6.7): in the answer when the request says
    /// `"explain": true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Box<HistoryDecision>>,
}

/// [`Engine::get_chat_history_prompt`]: the prompt alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct HistoryPrompt {
    /// What selection did.
    pub selection: SelectionReport,
    /// The whole prompt, in the order of docs/protocol.md §5.4.
    pub prompt: Vec<PromptMessage>,
}

impl Engine {
    /// `get_chat_history_context` (docs/protocol.md §6.3): selection (see [`crate::selection`]), rendering and the prompt.
    pub fn get_chat_history_context(&self, req: &GetChatHistoryContext) -> Result<HistoryContext, Error> {
        let mut h = self.select_history(req, self.records(&req.scope))?;
        let explain = h.selected.decision.take().map(Box::new);
        let cut = self.settings().conversation.context_truncation;
        let items = h.chat.history_items(&req.scope.channel, &req.scope.chat_id, &h.selected.items, cut);
        let (prompt, history) = self.history_prompt(&mut h, &req.scope.channel);
        let rendered = match self.settings().history.format {
            Format::Single => Rendered::Single(render::payload_of(&req.scope.channel, &items)),
            Format::PerItem => Rendered::PerItem(prompt[history].to_vec()),
        };
        let summary = h.summary.map(|(s, _)| s.clone());
        Ok(HistoryContext { selection: h.selected.report, summary, items, rendered, prompt, explain })
    }

    /// The prompt of [`Engine::get_chat_history_context`] and its selection report, without the structured
    /// `items` and `rendered` parts: the same selection and byte for byte the same prompt, rendered straight
    /// from the stored items. For bots that embed the library and only send the prompt.
    pub fn get_chat_history_prompt(&self, req: &GetChatHistoryContext) -> Result<HistoryPrompt, Error> {
        let mut h = self.select_history(req, false)?;
        let (prompt, _) = self.history_prompt(&mut h, &req.scope.channel);
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
        self.select_history_with(req, Some(&capture), false)?;
        Ok(capture.0.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The chat, the scope and the selection of a history request.
    fn select_history<'e>(
        &'e self,
        req: &'e GetChatHistoryContext,
        record: bool,
    ) -> Result<HistorySelection<'e>, Error> {
        self.select_history_with(req, self.triage(), record)
    }

    fn select_history_with<'e>(
        &'e self,
        req: &'e GetChatHistoryContext,
        triage: Option<&dyn Triage>,
        record: bool,
    ) -> Result<HistorySelection<'e>, Error> {
        let chat = self.chat(&req.scope.channel, &req.scope.chat_id).ok_or_else(|| unknown_chat(&req.scope.chat_id))?;
        let (topic, current): (Option<&str>, Option<&Item>) = match &req.scope.current_message_id {
            Some(id) => {
                let (conv, item) = chat.message(id).ok_or_else(|| {
                    Error::invalid_request(format!(
                        "field `current_message_id`: message {id:?} is not stored for chat {}",
                        req.scope.chat_id
                    ))
                })?;
                (conv.topic.as_deref(), Some(item))
            }
            None => (req.scope.topic_id.as_deref(), None),
        };
        let line = |i: &Item| render::line(&chat.line(i, 0));
        let settings = self.settings();
        // The summary of the conversation, unless it covers the message being answered.
        let summary = chat
            .summary(settings.history.scope, topic)
            .map(|s| (s, chat.summary_floor(s)))
            .filter(|(_, floor)| current.is_none_or(|c| *floor < c.key()))
            .map(|(s, floor)| {
                let max = settings.conversation.max_context_tokens;
                let share = (max > 0).then(|| (max as f64 * settings.summary.max_share.clamp(0.0, 1.0)) as u64);
                let block = crate::summary::summary_block(s, share);
                let tokens = u64::from(crate::selection::estimate_tokens(block.len()));
                (s, block, crate::selection::Covered { floor, tokens })
            });
        let covered = summary.as_ref().map(|s| s.2);
        let place = crate::selection::Place { topic, current, covered };
        let mut selected = crate::selection::select(chat, settings, place, triage, &line, record);
        if let Some(d) = selected.decision.as_mut()
            && settings.history.scope == crate::settings::Scope::Topic
        {
            let all: usize = chat.convs.iter().map(|c| c.items.len()).sum();
            d.in_other_topics = all - chat.conv_of(topic).map_or(0, |c| c.items.len());
        }
        let summary = summary.map(|(s, block, _)| (s, block));
        Ok(HistorySelection { chat, topic, current, selected, summary })
    }

    /// The prompt of a selection (docs/protocol.md §5.4), and where the history messages are in it.
    /// The summary's block is moved into the prompt.
    fn history_prompt(&self, h: &mut HistorySelection<'_>, channel: &str) -> (Vec<PromptMessage>, Range<usize>) {
        let settings = self.settings();
        let cut = settings.conversation.context_truncation;
        let items = &h.selected.items;
        let lines = items.iter().map(|i| h.chat.line(i, cut));
        let history = match (items.is_empty(), settings.history.format) {
            (true, _) => Vec::new(),
            (false, Format::Single) => {
                let size = items.iter().map(|i| i.text.len() + 120).sum();
                vec![render::single_from(channel, size, lines)]
            }
            (false, Format::PerItem) => lines.map(|l| render::line_message(&l)).collect(),
        };
        let first = usize::from(!settings.prompt.system.is_empty()) + usize::from(h.summary.is_some());
        let range = first..first + history.len();
        let prompt = render::prompt(render::PromptParts {
            system: &settings.prompt.system,
            summary_block: h.summary.as_mut().map(|s| std::mem::take(&mut s.1)),
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
    /// The conversation's summary and its rendered block, when the prompt carries it.
    summary: Option<(&'e Summary, String)>,
}
