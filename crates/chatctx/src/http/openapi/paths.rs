//! The document's paths, by resource.

use chatctx_core::tools::ToolCall;
use schemars::SchemaGenerator;
use serde_json::{Map, Value, json};

use super::{AUTH, BAD, FORBIDDEN, TIMEOUT, chat_path_params, operation, schema_of};

/// `/v1/events`, `/v1/discord/events`, `/v1/slack/events`, `/v1/slack/users` and `/v1/telegram/updates`.
// `json!` on literals and our own values: a static document that cannot fail.
#[allow(clippy::disallowed_methods)]
pub(super) fn ingest(g: &mut SchemaGenerator, paths: &mut Map<String, Value>) {
    let report = schema_of::<crate::service::IngestReport>(g);
    paths.insert(
        "/v1/events".into(),
        json!({"post": operation(
            "ingest",
            "Ingest one event, a JSON array of events, or JSON Lines (docs/protocol.md §3). Each is durable before the answer.",
            Some(json!({"oneOf": [{"$ref": "#/components/schemas/Event"}, {"type": "array", "items": {"$ref": "#/components/schemas/Event"}}]})),
            report.clone(),
            &[BAD, AUTH, FORBIDDEN, (413, "Body over 4 MiB (`payload_too_large`)."), TIMEOUT],
        )}),
    );
    let bot_id = json!([{"name": "bot_user_id", "in": "query", "schema": {"type": "string"},
        "description": "The bot's user id, so its own messages become outbound_agent and mentions of it trigger it."}]);
    let mut discord = operation(
        "discord_event",
        "Ingest one Discord Gateway dispatch ({\"op\": 0, \"t\": \"MESSAGE_CREATE\", \"d\": {…}}), as a bot receives it (docs/protocol.md §3.9).",
        Some(platform_body("A Gateway dispatch payload.")),
        report.clone(),
        &[BAD, AUTH, FORBIDDEN, TIMEOUT],
    );
    discord["parameters"] = bot_id.clone();
    paths.insert("/v1/discord/events".into(), json!({"post": discord}));
    let mut slack = operation(
        "slack_event",
        "Ingest one Slack Events API envelope (docs/protocol.md §3.10); answers url_verification with its challenge. With slack.signing_secret, Slack's signed requests need no bearer token.",
        Some(platform_body("An Events API envelope (event_callback or url_verification).")),
        report.clone(),
        &[BAD, AUTH, FORBIDDEN, TIMEOUT],
    );
    slack["parameters"] = bot_id;
    paths.insert("/v1/slack/events".into(), json!({"post": slack}));
    let users = operation(
        "slack_users",
        "Ingest a Slack Web API users.list or users.info answer as it came (docs/protocol.md §3.11): each member becomes a person of their team's people directory, whose names every chat of the team shows. Checked like slack_event (Slack's signature or a bearer token).",
        Some(platform_body("A users.list answer (`members`) or a users.info answer (`user`).")),
        report.clone(),
        &[BAD, AUTH, FORBIDDEN, TIMEOUT],
    );
    paths.insert("/v1/slack/users".into(), json!({"post": users}));
    let mut telegram = operation(
        "telegram_update",
        "Ingest one raw Telegram Bot API update, as a webhook delivers it.",
        Some(platform_body("A Bot API Update.")),
        report,
        &[BAD, AUTH, FORBIDDEN, TIMEOUT],
    );
    telegram["parameters"] = json!([
        {"name": "bot_username", "in": "query", "schema": {"type": "string"}, "description": "The bot, so its own messages become outbound_agent."},
        {"name": "bot_user_id", "in": "query", "schema": {"type": "string"}},
        {"name": "triggered_agent", "in": "query", "schema": {"type": "boolean"}}
    ]);
    paths.insert("/v1/telegram/updates".into(), json!({"post": telegram}));
}

/// A platform's own payload, taken as it came: an open object, so that a generated client accepts the platform
/// library's own type for it (a grammY `Update`, a discord.js packet) rather than an empty one.
// `json!` on literals and a string: cannot fail.
#[allow(clippy::disallowed_methods)]
fn platform_body(what: &str) -> Value {
    json!({"type": "object", "additionalProperties": true, "description": what})
}

/// `/v1/tools/{tool}`, one path per tool, and `/v1/scopes`.
// `json!` on literals and our own values: a static document that cannot fail.
#[allow(clippy::disallowed_methods)]
pub(super) fn tools(g: &mut SchemaGenerator, paths: &mut Map<String, Value>) {
    let responses: Map<String, Value> =
        ToolCall::response_schemas(g).into_iter().map(|(name, s)| (name.to_owned(), s.to_value())).collect();
    for tool in ToolCall::schemas() {
        paths.insert(
            format!("/v1/tools/{}", tool.name),
            json!({"post": operation(
                tool.name,
                tool.description,
                Some(Value::Object(tool.input)),
                responses.get(tool.name).cloned().unwrap_or_default(),
                &[BAD, AUTH, FORBIDDEN, (404, "Unknown chat (`unknown_chat`)."), (409, "Stale expected_revision (`revision_conflict`)."), TIMEOUT],
            )}),
        );
    }
    paths.insert(
        "/v1/scopes".into(),
        json!({"post": operation(
            "create_scope",
            "Issue a short-lived token bound to one chat (and optionally topic, current message, sender) for a model's tool loop.",
            Some(json!({"type": "object", "required": ["chat_id"], "properties": {
                "chat_id": {"type": ["string", "integer"]}, "channel": {"type": "string"},
                "topic_id": {"type": ["string", "integer"]}, "current_message_id": {"type": ["string", "integer"]},
                "sender_user_id": {"type": ["string", "integer"]},
                "ttl_seconds": {"type": "integer", "minimum": 1, "maximum": 86400, "default": 600},
                "may_write_summary": {"type": "boolean", "default": false,
                    "description": "Whether the scope may call update_summary (it reads the summary in any case)."}}})),
            json!({"type": "object", "required": ["token", "scope_id", "chat_id", "channel", "expires_at"], "properties": {
                "token": {"type": "string"}, "scope_id": {"type": "string"}, "chat_id": {"type": "string"}, "channel": {"type": "string"},
                "topic_id": {"type": "string"}, "current_message_id": {"type": "string"}, "sender_user_id": {"type": "string"},
                "expires_at": {"type": "string", "format": "date-time"}, "may_write_summary": {"type": "boolean"}}}),
            &[BAD, AUTH, FORBIDDEN],
        )}),
    );
    let mut revoke = operation(
        "revoke_scope",
        "Revoke a scope: it stops working on every instance (within a second on the others) until it would have expired.",
        None,
        json!({"type": "object", "properties": {"revoked": {"type": "boolean"}, "scope_id": {"type": "string"}}}),
        &[AUTH, FORBIDDEN],
    );
    revoke["parameters"] = json!([{"name": "token", "in": "path", "required": true, "schema": {"type": "string"},
        "description": "The scope's token, as issued."}]);
    paths.insert("/v1/scopes/{token}".into(), json!({"delete": revoke}));
}

/// `/v1/chats/{chat_id}` and what is stored for it.
// `json!` on literals and our own values: a static document that cannot fail.
#[allow(clippy::disallowed_methods)]
pub(super) fn chats(g: &mut SchemaGenerator, paths: &mut Map<String, Value>) {
    let mut delete = operation(
        "delete_chat",
        "Forget a chat completely, in memory and in the store.",
        None,
        json!({"type": "object", "properties": {"deleted": {"type": "boolean"}}}),
        &[AUTH, FORBIDDEN],
    );
    delete["parameters"] = chat_path_params();
    paths.insert("/v1/chats/{chat_id}".into(), json!({"delete": delete}));
    let mut history = operation(
        "history",
        "A page of the stored items of a range, oldest first (as get_chat_history_range answers).",
        None,
        schema_of::<chatctx_core::tools::range::HistoryPage>(g),
        &[AUTH, FORBIDDEN, BAD, (404, "Unknown chat (`unknown_chat`).")],
    );
    let mut params = chat_path_params();
    if let Some(a) = params.as_array_mut() {
        for (name, schema, what) in [
            (
                "since",
                json!({"type": ["string", "integer"]}),
                "Items sent at or after this time (RFC 3339 or Unix seconds).",
            ),
            ("until", json!({"type": ["string", "integer"]}), "Items sent at or before this time."),
            ("after_message_id", json!({"type": "string"}), "Items after this stored message."),
            ("cursor", json!({"type": "string"}), "The `next` of the previous page."),
            ("limit", json!({"type": "integer", "minimum": 1, "maximum": 500, "default": 50}), "Items per page."),
        ] {
            a.push(json!({"name": name, "in": "query", "schema": schema, "description": what}));
        }
    }
    history["parameters"] = params;
    paths.insert("/v1/chats/{chat_id}/history".into(), json!({"get": history}));
    for (what, summary, schema) in [
        ("objects", "Every object of the chat.", schema_of::<Vec<chatctx_core::objects::Object>>(g)),
        (
            "scenario",
            "The conversation state with its kept revisions.",
            schema_of::<chatctx_core::scenario::ScenarioState>(g),
        ),
    ] {
        let mut op =
            operation(what, summary, None, schema, &[AUTH, FORBIDDEN, (404, "Unknown chat (`unknown_chat`).")]);
        op["parameters"] = chat_path_params();
        paths.insert(format!("/v1/chats/{{chat_id}}/{what}"), json!({"get": op}));
    }
    let mut chats = operation(
        "chats",
        "A page of the chats this credential may read, one line each, by channel and chat id (the console's list).",
        None,
        json!({"type": "object", "required": ["chats"],
               "properties": {"chats": {"type": "array", "items": schema_of::<chatctx_core::engine::ChatOverview>(g)},
                              "next": {"type": "string", "description": "The `after` of the next page, when there is one."}}}),
        &[AUTH, BAD],
    );
    chats["parameters"] = json!([
        {"name": "after", "in": "query", "schema": {"type": "string"}, "description": "The `next` of the previous page (`channel:chat_id`)."},
        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}}
    ]);
    paths.insert("/v1/chats".into(), json!({"get": chats}));
    let record = schema_of::<crate::http::decisions::Shown>(g);
    let mut list = operation(
        "decisions",
        "The chat's newest decision records, newest first: how each tool answer was reached (kept in memory).",
        None,
        json!({"type": "object", "required": ["decisions", "keep"],
               "properties": {"decisions": {"type": "array", "items": record.clone()},
                              "keep": {"type": "integer", "description": "Records kept per chat ([decisions] keep)."}}}),
        &[AUTH, FORBIDDEN, BAD],
    );
    let mut params = chat_path_params();
    if let Some(a) = params.as_array_mut() {
        a.push(json!({"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "default": 20},
                      "description": "At most this many (at most [decisions] keep)."}));
    }
    list["parameters"] = params;
    paths.insert("/v1/chats/{chat_id}/decisions".into(), json!({"get": list}));
    let mut one = operation(
        "decision",
        "One decision record, by the request id its tool call was logged under (`x-request-id`).",
        None,
        record,
        &[AUTH, FORBIDDEN, (404, "No such record is kept (`unknown_decision`).")],
    );
    let mut params = chat_path_params();
    if let Some(a) = params.as_array_mut() {
        a.insert(1, json!({"name": "request_id", "in": "path", "required": true, "schema": {"type": "string"}}));
    }
    one["parameters"] = params;
    paths.insert("/v1/chats/{chat_id}/decisions/{request_id}".into(), json!({"get": one}));
}

/// The probes, the metrics, this document and `/mcp`.
// `json!` on literals and our own values: a static document that cannot fail.
#[allow(clippy::disallowed_methods)]
pub(super) fn service(paths: &mut Map<String, Value>) {
    paths.insert(
        "/healthz".into(),
        json!({"get": {"operationId": "health", "summary": "Liveness.", "security": [], "responses": {"200": {"description": "ok"}}}}),
    );
    paths.insert(
        "/readyz".into(),
        json!({"get": {"operationId": "ready", "summary": "Readiness: the state is rebuilt and the store answers.", "security": [], "responses": {"200": {"description": "ready"}, "503": {"description": "the store cannot be reached"}}}}),
    );
    paths.insert(
        "/metrics".into(),
        json!({"get": {"operationId": "metrics", "summary": "Prometheus metrics.", "security": [], "responses": {"200": {"description": "text/plain exposition", "content": {"text/plain": {"schema": {"type": "string"}}}}}}}),
    );
    paths.insert(
        "/openapi.json".into(),
        json!({"get": {"operationId": "openapi", "summary": "This document.", "security": [], "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {"schema": {"type": "object"}}}}}}}),
    );
    paths.insert(
        "/console".into(),
        json!({"get": {"operationId": "console", "summary": "The web console: chats, history, what the model saw and why.", "security": [], "responses": {"200": {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}}}}}),
    );
    paths.insert(
        "/mcp".into(),
        json!({"post": {"operationId": "mcp", "summary": "MCP streamable HTTP (JSON-RPC); the same tools as /v1/tools.", "responses": {"200": {"description": "JSON-RPC answer, as JSON or an event stream"}}}}),
    );
}
