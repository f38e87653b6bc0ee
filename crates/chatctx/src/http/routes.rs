//! Every route, declared once: the router is built from this table, and `/openapi.json` is held to it (a test
//! fails when a route is in one and not the other). A new route is one line here plus its handler in its
//! resource's file.

use axum::Router;
use axum::routing::{delete, get, post};
use chatctx_core::ErrorCode;
use chatctx_platforms::discord::Discord;
use chatctx_platforms::telegram::Telegram;

use super::{ApiError, Shared, chats, console, decisions, ingest, probes, scopes, tools};

/// One route of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The path template, as axum and OpenAPI write it (`/v1/chats/{chat_id}`).
    pub path: &'static str,
    /// Whether `/openapi.json` describes it (the console's assets and its trailing-slash alias are not API).
    pub documented: bool,
}

/// Declares the table and the router it builds, in one list: `METHOD "path" => handler` (`, hidden` for a
/// route the document leaves out).
macro_rules! routes {
    ($($method:ident $path:literal => $handler:expr $(, $hidden:ident)?;)*) => {
        /// Every route served by handlers of this module's siblings, in declaration order (`/mcp` is
        /// [`MCP`]).
        pub const HANDLED: &[Route] = &[$(Route {
            method: routes!(@upper $method),
            path: $path,
            documented: routes!(@documented $($hidden)?),
        }),*];

        /// The router of [`HANDLED`].
        pub fn handled() -> Router<Shared> {
            Router::new()$(.route($path, $method($handler)))*
        }
    };
    (@upper get) => { "GET" };
    (@upper post) => { "POST" };
    (@upper delete) => { "DELETE" };
    (@documented hidden) => { false };
    (@documented) => { true };
}

routes! {
    post "/v1/events" => ingest::post_events;
    post "/v1/telegram/updates" => ingest::post_payload::<Telegram>;
    post "/v1/discord/events" => ingest::post_payload::<Discord>;
    post "/v1/slack/events" => ingest::post_slack;
    post "/v1/slack/users" => ingest::post_slack_users;
    post "/v1/tools/{tool}" => tools::post_tool;
    post "/v1/scopes" => scopes::post_scope;
    delete "/v1/scopes/{token}" => scopes::delete_scope;
    get "/v1/chats" => chats::get_chats;
    delete "/v1/chats/{chat_id}" => chats::delete_chat;
    get "/v1/chats/{chat_id}/history" => chats::get_history;
    get "/v1/chats/{chat_id}/objects" => chats::get_objects;
    get "/v1/chats/{chat_id}/scenario" => chats::get_scenario;
    get "/v1/chats/{chat_id}/decisions" => decisions::get_decisions;
    get "/v1/chats/{chat_id}/decisions/{request_id}" => decisions::get_decision;
    get "/console" => console::page;
    get "/console/" => console::page, hidden;
    get "/console/app.js" => console::script, hidden;
    get "/console/app.css" => console::style, hidden;
    get "/healthz" => probes::health;
    get "/readyz" => probes::ready;
    get "/openapi.json" => probes::openapi;
    get "/metrics" => probes::metrics;
}

/// `/mcp`, the MCP service mounted beside the handled routes ([`super::mcp`]).
pub const MCP: Route = Route { method: "POST", path: "/mcp", documented: true };

/// Every route, `/mcp` included.
pub fn all() -> impl Iterator<Item = Route> {
    HANDLED.iter().copied().chain(std::iter::once(MCP))
}

/// What answers a path no route has.
pub async fn fallback() -> ApiError {
    ApiError::new(ErrorCode::UnknownTool, "no such route")
}
