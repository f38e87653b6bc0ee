//! The MCP server (issue 6): every tool of docs/protocol.md §6 over stdio (`chatctx mcp`) and streamable HTTP (`/mcp` on
//! the HTTP server), through rmcp.
//!
//! A call goes through the same [`Service::call`] as `POST /v1/tools/{tool}`: same answers, same durability,
//! same log line. A tool error (docs/protocol.md §9) is a tool result with `isError: true` and `{"code", "message"}` as its
//! structured content, so the model sees it and can correct itself; an unknown tool is a JSON-RPC error.
//! Over HTTP the bearer token of the request decides what the call may touch, exactly as on the REST routes
//! (a bound scope fills in its chat and refuses another); over stdio the caller is the local process that
//! started chatctx and may touch everything.

use std::sync::Arc;

use chatctx_core::tools::ToolCall;
use chatctx_core::{Error, ErrorCode};
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use crate::auth::{Access, Auth};
use crate::call::{RequestId, RequestSpan};
use crate::clock::now;
use crate::service::Service;

/// The MCP face of a [`Service`].
#[derive(Clone)]
pub struct Mcp {
    svc: Arc<Service>,
    /// `None` over stdio: the local caller may touch everything.
    auth: Option<Arc<Auth>>,
    /// `server.max_json_depth`, for tool arguments.
    max_json_depth: usize,
    /// Spans of tool calls, under the HTTP request's (off over stdio).
    telemetry: Arc<crate::telemetry::Telemetry>,
}

impl Mcp {
    /// Over stdio: no credentials.
    pub fn local(svc: Arc<Service>) -> Self {
        Self {
            svc,
            auth: None,
            max_json_depth: crate::config::ServerSettings::default().max_json_depth,
            telemetry: crate::telemetry::Telemetry::off(),
        }
    }

    /// The same, with tool arguments nested at most `depth` levels deep (`server.max_json_depth`).
    pub fn with_max_json_depth(self, depth: usize) -> Self {
        Self { max_json_depth: depth, ..self }
    }

    /// Tool calls traced with `telemetry` (under the span of the HTTP request that carries them).
    pub fn with_telemetry(self, telemetry: Arc<crate::telemetry::Telemetry>) -> Self {
        Self { telemetry, ..self }
    }

    /// Over HTTP: each call is checked against the request's bearer token.
    pub fn http(svc: Arc<Service>, auth: Arc<Auth>) -> Self {
        Self { auth: Some(auth), ..Self::local(svc) }
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
    // `{"code", "message"}`: an error always serializes.
    CallToolResult::structured_error(serde_json::to_value(e).unwrap_or_default()).into()
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
        if !ToolCall::NAMES.contains(&tool.as_str()) {
            return Err(ErrorData::invalid_params(format!("unknown tool {tool:?}"), None));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let depth = chatctx_core::json::value_nesting(&args);
        let call = match chatctx_core::json::check_nesting(
            depth,
            self.max_json_depth,
            "the arguments",
            ErrorCode::InvalidRequest,
        )
        .and_then(|()| self.access(&context))
        .and_then(|access| access.decode_call(&tool, &args))
        {
            Ok(call) => call,
            Err(e) => {
                crate::call::log_refused(&tool, &e);
                return Ok(error_result(&e));
            }
        };
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let parent = parts.and_then(|p| p.extensions.get::<RequestSpan>()).map(|s| s.0);
        // Over stdio there is no HTTP request to name the call: each gets an id of its own.
        let id = parts
            .and_then(|p| p.extensions.get::<RequestId>())
            .map_or_else(crate::call::new_request_id, |i| i.0.clone());
        let to_value = |a: &chatctx_core::tools::ToolResponse| {
            serde_json::to_value(a).map_err(|e| Error::new(chatctx_core::ErrorCode::Internal, e.to_string()))
        };
        let answer = crate::call::answer(&self.svc, &self.telemetry, parent, &id, call, to_value).await.and_then(|v| v);
        Ok(match answer {
            Ok(v) => CallToolResult::structured(v).into(),
            Err(e) => error_result(&e),
        })
    }
}

/// The tools with their input schemas, generated from the request types ([`ToolCall::schemas`]).
pub fn tools() -> Vec<Tool> {
    ToolCall::schemas().into_iter().map(|t| Tool::new(t.name, t.description, t.input)).collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    /// Every tool is listed once (the schemas themselves are tested against the decoders in the core).
    #[test]
    fn every_tool_is_listed() {
        let listed: Vec<String> = tools().iter().map(|t| t.name.to_string()).collect();
        assert_eq!(listed, ToolCall::NAMES);
    }
}
