//! The tools: one request type and one response type each ([`Request`]), and [`ToolCall`], the typed call
//! that HTTP, MCP, `replay` and the service's log decode once and [`Engine::answer`] answers.
//!
//! - [`request`] holds what every request shares: the [`Scope`] and the [`Request`] trait;
//! - [`call`] holds [`ToolCall`], the one typed call over every tool, and the generated schemas;
//! - [`history`] answers `get_chat_history_context`.
//!
//! `resolve_reference_target` lives in [`crate::tools::resolve`], `list_active_context_objects` in
//! [`crate::tools::list`], and the state tools in [`crate::scenario`].

pub mod call;
pub mod history;
pub mod list;
pub mod range;
pub mod request;
pub mod resolve;
mod seen;
pub mod state;
pub mod summary;

use serde::Serialize;
use serde_json::Value;

pub use crate::selection::{SelectionMethod, SelectionReport};
pub use call::{ToolCall, ToolSchema, Writes};
pub use history::{GetChatHistoryContext, HistoryContext, HistoryPrompt, Rendered};
pub use request::{Request, Scope, ScopeUse};

use crate::decision::Explain;
use crate::engine::Engine;
use crate::error::Error;
use crate::time::Timestamp;

/// One tool's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolResponse {
    /// `get_chat_history_context`.
    History(Box<HistoryContext>),
    /// `resolve_reference_target`.
    Resolve(Box<crate::tools::resolve::Resolution>),
    /// `list_active_context_objects`.
    List(Box<crate::tools::list::ActiveObjects>),
    /// `get_scenario`, `update_scenario`, `revert_scenario`.
    Scenario(Box<crate::scenario::ScenarioState>),
    /// `get_chat_history_range`.
    Range(Box<crate::tools::range::HistoryPage>),
    /// `update_summary`.
    Summary(Box<crate::summary::SummaryWritten>),
}

impl ToolResponse {
    /// The compact summary of this answer, as `(name, value)` pairs: ids, codes and counts, never message text.
    /// The tool call's log line ([`ToolResponse::log_fields`]) and its trace span are made of it.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        match self {
            ToolResponse::History(h) => vec![
                ("method", serde_plain(&h.selection.method)),
                ("considered", h.selection.considered.to_string()),
                ("kept", h.selection.kept.to_string()),
            ],
            ToolResponse::Resolve(r) => {
                let top: Vec<&str> = r.candidates.iter().map(|c| &*c.descriptor.object_id).collect();
                vec![
                    ("status", serde_plain(&r.status)),
                    ("candidate_count", r.diagnostics.candidate_count.to_string()),
                    ("top", top.join(",")),
                    ("top_score_gap", r.diagnostics.top_score_gap.to_string()),
                    ("scope_used", serde_plain(&r.scope_used)),
                ]
            }
            ToolResponse::Scenario(s) => vec![
                ("revision", s.revision.to_string()),
                ("changed", s.changed.map_or("-", |c| if c { "true" } else { "false" }).to_owned()),
                ("bytes", serde_json::to_string(&s.state).map_or(0, |j| j.len()).to_string()),
            ],
            ToolResponse::Range(p) => vec![
                ("count", p.items.len().to_string()),
                ("more", p.next.is_some().to_string()),
                ("truncated", p.truncated.as_ref().map_or("-", |t| t.by).to_owned()),
            ],
            ToolResponse::Summary(s) => vec![
                ("revision", s.summary.revision.to_string()),
                ("changed", s.changed.to_string()),
                ("covers", s.summary.message_count.to_string()),
            ],
            ToolResponse::List(l) => {
                let top: Vec<&str> = l.objects.iter().take(3).map(|o| &*o.descriptor.object_id).collect();
                vec![
                    ("status", serde_plain(&l.status)),
                    ("count", l.objects.len().to_string()),
                    ("top", top.join(",")),
                    ("truncated", l.truncated.to_string()),
                ]
            }
        }
    }

    /// Takes the answer's decision record out of it (the answer then serializes without `explain`).
    pub fn take_explain(&mut self) -> Option<Explain> {
        match self {
            ToolResponse::History(h) => h.explain.take().map(Explain::History),
            ToolResponse::Resolve(r) => r.explain.take().map(Explain::Resolve),
            ToolResponse::List(l) => l.explain.take().map(Explain::List),
            ToolResponse::Scenario(s) => s.explain.take().map(Explain::Scenario),
            ToolResponse::Range(_) | ToolResponse::Summary(_) => None,
        }
    }

    /// The compact log fields of this answer (never message text), `name=value` by [`ToolResponse::fields`];
    /// see docs/protocol.md.
    pub fn log_fields(&self) -> String {
        let fields: Vec<String> = self.fields().into_iter().map(|(k, v)| format!("{k}={v}")).collect();
        fields.join(" ")
    }
}

/// A unit enum's serde name (`resolved`, `lexical`, `unknown_chat`), as logs and spans show it.
pub fn serde_plain<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

impl Engine {
    /// Whether an answer for `scope` carries its decision record: records are on (`[decisions] keep`), or
    /// the request asked for it.
    pub(crate) fn records(&self, scope: &Scope) -> bool {
        scope.explain || self.settings().decisions.keep > 0
    }

    /// Answers `call`. `now` is used when the call names no time.
    pub fn answer(&mut self, call: &ToolCall, now: Timestamp) -> Result<ToolResponse, Error> {
        self.check_pinned(call)?;
        let at = call.now().unwrap_or(now);
        match call {
            // History does not depend on the time: its `now` is only carried.
            ToolCall::GetChatHistoryContext(req) => {
                self.get_chat_history_context(req).map(|h| ToolResponse::History(Box::new(h)))
            }
            ToolCall::ResolveReferenceTarget(req) => {
                self.resolve_reference_target(req, at).map(|r| ToolResponse::Resolve(Box::new(r)))
            }
            ToolCall::ListActiveContextObjects(req) => {
                self.list_active_context_objects(req, at).map(|l| ToolResponse::List(Box::new(l)))
            }
            ToolCall::GetChatHistoryRange(req) => {
                self.get_chat_history_range(req).map(|p| ToolResponse::Range(Box::new(p)))
            }
            ToolCall::GetScenario(req) => Ok(ToolResponse::Scenario(Box::new(self.get_scenario(req)))),
            ToolCall::UpdateScenario(req) => self.update_scenario(req, at).map(|s| ToolResponse::Scenario(Box::new(s))),
            ToolCall::RevertScenario(req) => self.revert_scenario(req, at).map(|s| ToolResponse::Scenario(Box::new(s))),
            ToolCall::UpdateSummary(req) => self.update_summary(req, at).map(|s| ToolResponse::Summary(Box::new(s))),
        }
    }

    /// A call of a credential pinned to a topic may name only messages of that topic: its current message and
    /// its reply target, when stored, must be in it (`forbidden_scope`), so a scope cannot read another topic's
    /// text through them.
    fn check_pinned(&self, call: &ToolCall) -> Result<(), Error> {
        let s = call.scope();
        let (true, Some(topic)) = (s.pinned_topic, s.topic_id.as_deref()) else { return Ok(()) };
        let Some(chat) = self.chat(&s.channel, &s.chat_id) else { return Ok(()) };
        let reply = match call {
            ToolCall::ResolveReferenceTarget(r) => r.reply_to_message_id.as_deref(),
            ToolCall::ListActiveContextObjects(r) => r.reply_to_message_id.as_deref(),
            _ => None,
        };
        for id in [s.current_message_id.as_deref(), reply].into_iter().flatten() {
            if let Some((conv, _)) = chat.message(id)
                && conv.topic.as_deref() != Some(topic)
            {
                return Err(Error::new(
                    crate::error::ErrorCode::ForbiddenScope,
                    format!("message {id:?} is not in topic {topic:?}, which this scope is pinned to"),
                ));
            }
        }
        Ok(())
    }

    /// Answers `call` from the current state when answering changes nothing; `None` when it would change the
    /// state (a scenario update or revert, or a resolution that records an activation), which
    /// [`Engine::answer`] must then make. Lets a store shared by several processes take its write path only
    /// for the calls that write.
    pub fn answer_read_only(&mut self, call: &ToolCall, now: Timestamp) -> Result<Option<ToolResponse>, Error> {
        match call {
            _ if call.writes() == Writes::Always => Ok(None),
            ToolCall::ResolveReferenceTarget(req) => {
                self.check_pinned(call)?;
                let at = req.now.unwrap_or(now);
                Ok(self.resolve_read_only(req, at)?.map(|r| ToolResponse::Resolve(Box::new(r))))
            }
            _ => self.answer(call, now).map(Some),
        }
    }

    /// Decodes and answers a call of tool `tool` with JSON `args` ([`ToolCall::decode`], then
    /// [`Engine::answer`]).
    pub fn call(&mut self, tool: &str, args: &Value, now: Timestamp) -> Result<ToolResponse, Error> {
        self.answer(&ToolCall::decode(tool, args)?, now)
    }

    /// [`Engine::answer_read_only`] of a call given as JSON.
    pub fn call_read_only(&mut self, tool: &str, args: &Value, now: Timestamp) -> Result<Option<ToolResponse>, Error> {
        self.answer_read_only(&ToolCall::decode(tool, args)?, now)
    }
}
