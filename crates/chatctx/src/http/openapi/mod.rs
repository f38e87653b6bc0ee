//! The OpenAPI 3.1 document served at `/openapi.json`.
//!
//! Tool request bodies are the schemas generated from the core's request types ([`chatctx_core::tools::ToolCall::schemas`], the
//! same ones MCP lists), and every response body is generated from the type the route serializes, so a client
//! generated from this document reads and writes what the server does. Each tool gets its own path
//! (`/v1/tools/resolve_reference_target`, …) because one templated path could not give each tool its own body.

mod paths;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// A generator whose shared types land in `components/schemas`, for output (serialized) shapes.
fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator()
}

pub(super) fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    g.subschema_for::<T>().to_value()
}

// `json!` on literals and our own values: a static document that cannot fail.
#[allow(clippy::disallowed_methods)]
pub(super) fn error_responses(codes: &[(u16, &str)]) -> Map<String, Value> {
    let mut m = Map::new();
    for (status, what) in codes {
        m.insert(
            status.to_string(),
            json!({"description": what, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}),
        );
    }
    m
}

// `json!` on literals and our own values: a static document that cannot fail.
#[allow(clippy::disallowed_methods)]
pub(super) fn operation(id: &str, summary: &str, body: Option<Value>, ok: Value, errors: &[(u16, &str)]) -> Value {
    let mut responses = error_responses(errors);
    responses.insert("200".into(), json!({"description": "OK", "content": {"application/json": {"schema": ok}}}));
    let mut op = json!({"operationId": id, "summary": summary, "responses": responses});
    if let Some(schema) = body {
        op["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": schema}}});
    }
    op
}

pub(super) const AUTH: (u16, &str) = (401, "Missing or unknown bearer token (only when server.tokens is set).");
pub(super) const FORBIDDEN: (u16, &str) = (403, "The token may not touch this chat (`forbidden_scope`).");
pub(super) const BAD: (u16, &str) = (400, "Bad input; the code names the kind and the message names the field.");
pub(super) const TIMEOUT: (u16, &str) = (503, "Ran past server.request_timeout (`timeout`); retrying is safe.");

// `json!` on literals and our own values: a static document that cannot fail.
#[allow(clippy::disallowed_methods)]
pub(super) fn chat_path_params() -> Value {
    json!([
        {"name": "chat_id", "in": "path", "required": true, "schema": {"type": "string"}},
        {"name": "channel", "in": "query", "schema": {"type": "string", "default": "telegram"}},
        {"name": "topic_id", "in": "query", "schema": {"type": "string"}}
    ])
}

/// The document.
// `json!` on literals and our own values: a static document that cannot fail.
#[allow(clippy::disallowed_methods)]
pub fn document() -> Value {
    let mut g = generator();
    let mut paths = Map::new();
    paths::ingest(&mut g, &mut paths);
    paths::tools(&mut g, &mut paths);
    paths::chats(&mut g, &mut paths);
    paths::service(&mut paths);
    // Defines `Error`, which every error response refers to.
    let _ = g.subschema_for::<chatctx_core::Error>();
    let mut schemas = g.take_definitions(true);
    schemas.insert(
        "Event".into(),
        json!({"type": "object", "required": ["type"], "properties": {
            "type": {"enum": ["message", "reaction", "object", "activation", "delete", "thread", "person", "title", "telegram_update", "discord_event", "slack_event", "slack_users"]}},
            "description": "An input event (docs/protocol.md, \"Events\"); the fields depend on its type."}),
    );
    json!({
        "openapi": "3.1.0",
        "info": {"title": "chatctx", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Conversation context for LLM chat bots: history, active objects, reference resolution, conversation state."},
        "paths": paths,
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas
        }
    })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use chatctx_core::tools::ToolCall;

    #[test]
    fn every_tool_has_its_path_with_the_mcp_schema() {
        let doc = document();
        for tool in crate::mcp::tools() {
            let post = &doc["paths"][format!("/v1/tools/{}", tool.name)]["post"];
            let body = &post["requestBody"]["content"]["application/json"]["schema"];
            assert_eq!(body, &Value::Object((*tool.input_schema).clone()), "{}", tool.name);
            let answer = &post["responses"]["200"]["content"]["application/json"]["schema"];
            assert!(answer.get("$ref").is_some() || answer.get("properties").is_some(), "{}: {answer}", tool.name);
        }
        assert_eq!(doc["openapi"], "3.1.0");
    }

    /// Every operation has an `operationId`, unique in the document: the Python client names its methods by
    /// them (clients/python/tests/test_openapi.py holds it to that).
    #[test]
    fn every_operation_has_a_unique_id() {
        let doc = document();
        let mut ids = std::collections::BTreeSet::new();
        for (path, ops) in doc["paths"].as_object().unwrap() {
            for (method, op) in ops.as_object().unwrap() {
                let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has no operationId"));
                assert!(ids.insert(id.to_owned()), "{id} twice");
            }
        }
        assert!(ids.contains("get_chat_history_context") && ids.contains("telegram_update"), "{ids:?}");
    }

    /// The document describes exactly the routes the router serves ([`super::super::routes`]): a route added to
    /// one and not the other fails here. The tool route is one path per tool in the document.
    #[test]
    fn the_document_and_the_router_have_the_same_routes() {
        let doc = document();
        let mut documented = std::collections::BTreeSet::new();
        for (path, ops) in doc["paths"].as_object().unwrap() {
            for method in ops.as_object().unwrap().keys() {
                documented.insert((method.to_ascii_uppercase(), path.clone()));
            }
        }
        let mut served = std::collections::BTreeSet::new();
        for r in super::super::routes::all().filter(|r| r.documented) {
            match r.path.strip_suffix("{tool}") {
                Some(prefix) => {
                    served.extend(ToolCall::NAMES.iter().map(|t| (r.method.to_owned(), format!("{prefix}{t}"))))
                }
                None => _ = served.insert((r.method.to_owned(), r.path.to_owned())),
            }
        }
        assert_eq!(documented, served);
    }

    /// Every `$ref` names a schema the document defines.
    #[test]
    fn every_reference_resolves() {
        fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(r)) = m.get("$ref") {
                        out.push(r);
                    }
                    m.values().for_each(|v| refs(v, out));
                }
                Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let doc = document();
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(found.len() > 10, "responses are typed");
        for r in found {
            let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r}"));
            let defined = &doc["components"]["schemas"][name];
            assert!(defined.is_object(), "{r} is not defined");
            assert_ne!(defined.get("$ref").and_then(Value::as_str), Some(r), "{r} refers to itself");
        }
    }
}
