//! The MCP server (issue 6): every tool of SPEC §6 over stdio (`chatctx mcp`) and streamable HTTP (`/mcp` on
//! the HTTP server), through rmcp.
//!
//! A call goes through the same [`Service::call`] as `POST /v1/tools/{tool}`: same answers, same durability,
//! same log line. A tool error (SPEC §9) is a tool result with `isError: true` and `{"code", "message"}` as its
//! structured content, so the model sees it and can correct itself; an unknown tool is a JSON-RPC error.
//! Over HTTP the bearer token of the request decides what the call may touch, exactly as on the REST routes
//! (a bound scope fills in its chat and refuses another); over stdio the caller is the local process that
//! started chatctx and may touch everything.

#![allow(clippy::disallowed_methods)] // `json!` literals below are static schemas; they cannot fail.

use std::sync::Arc;

use chatctx_core::Error;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

use crate::auth::{Access, Auth};
use crate::http::now;
use crate::service::Service;

/// The MCP face of a [`Service`].
#[derive(Clone)]
pub struct Mcp {
    svc: Arc<Service>,
    /// `None` over stdio: the local caller may touch everything.
    auth: Option<Arc<Auth>>,
}

impl Mcp {
    /// Over stdio: no credentials.
    pub fn local(svc: Arc<Service>) -> Self {
        Self { svc, auth: None }
    }

    /// Over HTTP: each call is checked against the request's bearer token.
    pub fn http(svc: Arc<Service>, auth: Arc<Auth>) -> Self {
        Self { svc, auth: Some(auth) }
    }

    fn access(&self, ctx: &RequestContext<RoleServer>) -> Result<Access, Error> {
        let Some(auth) = &self.auth else { return Ok(Access::Open) };
        let header = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get(axum::http::header::AUTHORIZATION))
            .and_then(|v| v.to_str().ok());
        auth.check(header, now())
    }
}

fn error_result(e: &Error) -> CallToolResponse {
    CallToolResult::structured_error(json!({"code": e.code, "message": e.message})).into()
}

impl ServerHandler for Mcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("chatctx", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Conversation context for a chat bot: the history that belongs in the prompt, the objects active \
                 in the conversation, what a user's reference points at, and the conversation's structured state. \
                 Pass chat_id (and current_message_id for the message being answered) to every tool.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        if !chatctx_core::tools::TOOLS.iter().any(|(name, _)| *name == tool) {
            return Err(ErrorData::invalid_params(format!("unknown tool {tool:?}"), None));
        }
        let access = match self.access(&context) {
            Ok(a) => a,
            Err(e) => return Ok(error_result(&e)),
        };
        let mut args = Value::Object(request.arguments.unwrap_or_default());
        if let Err(e) = access.bind(&mut args) {
            return Ok(error_result(&e));
        }
        let answer = self.svc.call_logged(tool, args, now()).await.and_then(|a| {
            serde_json::to_value(&a).map_err(|e| Error::new(chatctx_core::ErrorCode::Internal, e.to_string()))
        });
        Ok(match answer {
            Ok(v) => CallToolResult::structured(v).into(),
            Err(e) => error_result(&e),
        })
    }
}

/// Fields every tool takes.
fn scope_properties() -> Map<String, Value> {
    let id = |d: &str| json!({"type": ["string", "integer"], "description": d});
    let mut p = Map::new();
    p.insert("chat_id".into(), id("The chat (Telegram chat id, or any channel's chat id)."));
    p.insert("channel".into(), json!({"type": "string", "description": "Platform; default \"telegram\"."}));
    p.insert("topic_id".into(), id("Forum topic or thread, when there is no current message to take it from."));
    p
}

fn schema(extra: Value, required: &[&str]) -> Map<String, Value> {
    let mut properties = scope_properties();
    if let Value::Object(m) = extra {
        properties.extend(m);
    }
    let mut s = Map::new();
    s.insert("type".into(), json!("object"));
    s.insert("properties".into(), Value::Object(properties));
    s.insert("required".into(), json!(required));
    s
}

const KINDS: &str = "Object kinds: poll, reminder, image, video, voice, file, pdf, article, link, summary, quote, \
                     message, or any exact kind such as media_image.";

/// The tools with their input schemas, in the order of SPEC §6.
pub fn tools() -> Vec<Tool> {
    let id = |d: &str| json!({"type": ["string", "integer"], "description": d});
    let now = json!({"type": ["string", "integer"], "description": "The time the answer is for (RFC 3339 or Unix seconds); default the server's clock."});
    vec![
        Tool::new(
            "resolve_reference_target",
            "What a user's reference (\"this\", \"the poll above\", \"my photo\") points at: resolved with one target, \
             ambiguous with the candidates (never a guess), or not_found. Give the hints you read from the user's words.",
            schema(
                json!({
                    "current_message_id": id("The message that holds the reference."),
                    "reply_to_message_id": id("The message it replies to, if any (read from the store when omitted)."),
                    "sender_user_id": id("Who wrote it."),
                    "raw_user_text": {"type": "string", "description": "The user's words; never changes the outcome, only logged by length."},
                    "normalized_reference_hints": {"type": "object", "properties": {
                        "positional_hint": {"enum": ["replied_message", "latest", "previous", "above", "current_topic_recent"]},
                        "ordinal_hint": {"enum": ["first", "second", "last"]},
                        "target_kind_hint": {"type": "string", "description": KINDS},
                        "ownership_hint": {"enum": ["mine", "bot_created", "any"]},
                        "recency_hint": {"enum": ["latest", "recent", "currently_active"]}
                    }},
                    "allowed_kinds": {"type": "array", "items": {"type": "string"}, "description": KINDS},
                    "max_candidates": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
                    "now": now
                }),
                &["chat_id", "current_message_id", "sender_user_id"],
            ),
        ),
        Tool::new(
            "list_active_context_objects",
            "The conversational objects (articles, links, media, polls, reminders, summaries) active right now, \
             nearest scope first: reply chain, then topic, then chat.",
            schema(
                json!({
                    "current_message_id": id("The message being answered."),
                    "reply_to_message_id": id("The message it replies to."),
                    "kinds": {"type": "array", "items": {"type": "string"}, "description": KINDS},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
                    "now": now
                }),
                &["chat_id"],
            ),
        ),
        Tool::new(
            "get_chat_history_context",
            "The earlier messages that belong in the prompt for the message being answered, as structured items, \
             the rendered history payload and ready prompt messages (with the conversation's ACTIVE SCENARIO).",
            schema(
                json!({
                    "current_message_id": id("The message being answered: history is what came before it in its scope."),
                    "now": now
                }),
                &["chat_id"],
            ),
        ),
        Tool::new(
            "get_scenario",
            "The conversation's structured state: {revision, state, updated_at}.",
            schema(
                json!({"revisions": {"type": "boolean", "description": "Also list the kept revisions."}}),
                &["chat_id"],
            ),
        ),
        Tool::new(
            "update_scenario",
            "Patch the conversation's structured state with a JSON merge patch (RFC 7396: null deletes a key, \
             objects merge, anything else replaces). A stale expected_revision is refused with revision_conflict.",
            schema(
                json!({
                    "patch": {"type": "object", "description": "The merge patch."},
                    "expected_revision": {"type": "integer", "minimum": 0, "description": "Refuse unless the state is at this revision."}
                }),
                &["chat_id", "patch"],
            ),
        ),
        Tool::new(
            "revert_scenario",
            "Write an earlier revision's state back as a new revision.",
            schema(json!({"to_revision": {"type": "integer", "minimum": 0}}), &["chat_id", "to_revision"]),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use chatctx_core::{Engine, ErrorCode, Settings, Timestamp};

    use super::*;

    /// Every tool is listed, and the schema's `required` fields are exactly what the tool refuses to go
    /// without: dropping any one of them from a complete request gets `invalid_request` naming it.
    #[test]
    fn schemas_match_the_tools() {
        let mut listed: Vec<String> = tools().iter().map(|t| t.name.to_string()).collect();
        let mut known: Vec<&str> = chatctx_core::tools::TOOLS.iter().map(|t| t.0).collect();
        listed.sort();
        known.sort();
        assert_eq!(listed, known);
        let mut engine = Engine::new(Settings::default());
        let complete =
            json!({"chat_id": "1", "current_message_id": "1", "sender_user_id": "1", "patch": {}, "to_revision": 0});
        let at = Timestamp::from_unix(1_770_000_000).unwrap();
        for t in tools() {
            let required: Vec<&str> =
                t.input_schema["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
            for field in &required {
                let mut args = complete.clone();
                args.as_object_mut().unwrap().remove(*field);
                let err = engine.call(&t.name, &args, at).unwrap_err();
                assert_eq!(err.code, ErrorCode::InvalidRequest, "{} without {field}: {err:?}", t.name);
                assert!(err.message.contains(field), "{} without {field}: {}", t.name, err.message);
            }
        }
    }
}
