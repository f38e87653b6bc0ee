//! [`ToolCall`]: one tool call as a typed value, decoded once at the edge. Every front end (HTTP, MCP,
//! `replay`, the service's log, credentials that bind a scope) works on it, and [`crate::Engine::answer`]
//! answers it. The tool list and each tool's JSON Schema are generated from the request types here, so what
//! a client is told a tool takes is what its decoder reads.

use schemars::{Schema, SchemaGenerator, generate::SchemaSettings};
use serde::Serialize;
use serde_json::{Map, Value};

use super::request::{Request, Scope};
use crate::error::{Error, ErrorCode};
use crate::time::Timestamp;

/// Whether answering a call changes the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// Never (history, listings, reading the state).
    Never,
    /// When it records something (a resolution records the activation of its winner).
    Sometimes,
    /// Whenever it succeeds (state updates and reverts).
    Always,
}

/// One tool's advertised contract: name, description and input schema, generated from its request type.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSchema {
    /// The tool's name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// The JSON Schema of its arguments (an object schema, subschemas inlined).
    pub input: Map<String, Value>,
}

impl ToolSchema {
    fn of<T: Request>() -> Self {
        let generator = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true).into_generator();
        let schema = generator.into_root_schema_for::<T>();
        let mut input = match schema.to_value() {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        input.remove("$schema");
        input.remove("title");
        input.remove("description");
        if let Some(Value::Object(props)) = input.get_mut("properties") {
            props.retain(|k, _| T::SCOPE.reads.contains(&k.as_str()) || !is_scope_field(k));
            // A required scope field is optional in the shared type; here it must be an id, never null.
            for key in T::SCOPE.requires {
                if let Some(Value::Object(field)) = props.get_mut(*key) {
                    field.insert("type".to_owned(), Value::from(vec!["string", "integer"]));
                }
            }
        }
        let required = input.entry("required").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = required {
            for key in T::SCOPE.requires {
                if !list.iter().any(|v| v == key) {
                    list.push(Value::from(*key));
                }
            }
        }
        Self { name: T::NAME, description: T::DESCRIPTION, input }
    }
}

fn is_scope_field(key: &str) -> bool {
    matches!(key, "channel" | "chat_id" | "topic_id" | "current_message_id" | "sender_user_id")
}

macro_rules! tool_calls {
    ($($variant:ident($ty:ty)),+ $(,)?) => {
        /// One decoded tool call. Serialized, it is the replay line `{"call": "<tool>", "args": {…}}`.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(tag = "call", content = "args", rename_all = "snake_case")]
        #[allow(clippy::large_enum_variant)]
        pub enum ToolCall {
            $(
                #[doc = concat!("`", stringify!($variant), "`.")]
                $variant($ty),
            )+
        }

        impl ToolCall {
            /// Every tool's name.
            pub const NAMES: &'static [&'static str] = &[$(<$ty as Request>::NAME),+];

            /// Reads a call of tool `name` with JSON `args`, naming any bad field.
            pub fn decode(name: &str, args: &Value) -> Result<Self, Error> {
                Self::decode_with(name, args, None)
            }

            /// [`ToolCall::decode`], taking the scope fields `args` leaves out from `defaults` (a bound
            /// scope's) before any is required.
            pub fn decode_with(name: &str, args: &Value, defaults: Option<&Scope>) -> Result<Self, Error> {
                $(if name == <$ty as Request>::NAME {
                    return <$ty as Request>::decode_with(args, defaults).map(Self::$variant);
                })+
                Err(unknown_tool(name))
            }

            /// The tool's name.
            pub fn name(&self) -> &'static str {
                match self { $(Self::$variant(_) => <$ty as Request>::NAME),+ }
            }

            /// Where the call applies.
            pub fn scope(&self) -> &Scope {
                match self { $(Self::$variant(r) => r.scope()),+ }
            }

            /// Where the call applies, for credentials that pin or fill it in.
            pub fn scope_mut(&mut self) -> &mut Scope {
                match self { $(Self::$variant(r) => r.scope_mut()),+ }
            }

            /// The time the call names, if any.
            pub fn now(&self) -> Option<Timestamp> {
                match self { $(Self::$variant(r) => r.now()),+ }
            }

            /// Sets the call's time where it takes one and names none.
            pub fn fill_now(&mut self, now: Timestamp) {
                match self { $(Self::$variant(r) => r.fill_now(now)),+ }
            }

            /// Every tool's name, description and input schema.
            pub fn schemas() -> Vec<ToolSchema> {
                vec![$(ToolSchema::of::<$ty>()),+]
            }

            /// Every tool's name and the schema of its answer, made by `generator` (whose definitions hold the
            /// types the answers share).
            pub fn response_schemas(generator: &mut SchemaGenerator) -> Vec<(&'static str, Schema)> {
                vec![$((<$ty as Request>::NAME, generator.subschema_for::<<$ty as Request>::Response>())),+]
            }
        }
    };
}

// In the order of docs/protocol.md §6, which is the order tools are listed in.
tool_calls! {
    ResolveReferenceTarget(crate::tools::resolve::ResolveReferenceTarget),
    ListActiveContextObjects(crate::tools::list::ListActiveContextObjects),
    GetChatHistoryContext(super::GetChatHistoryContext),
    GetChatHistoryRange(crate::tools::range::GetChatHistoryRange),
    GetScenario(crate::tools::state::GetScenario),
    UpdateScenario(crate::tools::state::UpdateScenario),
    RevertScenario(crate::tools::state::RevertScenario),
    UpdateSummary(crate::tools::summary::UpdateSummary),
}

impl ToolCall {
    /// Whether answering the call changes the state.
    pub fn writes(&self) -> Writes {
        match self {
            Self::UpdateScenario(_) | Self::RevertScenario(_) | Self::UpdateSummary(_) => Writes::Always,
            Self::ResolveReferenceTarget(_) => Writes::Sometimes,
            Self::GetChatHistoryContext(_)
            | Self::GetChatHistoryRange(_)
            | Self::ListActiveContextObjects(_)
            | Self::GetScenario(_) => Writes::Never,
        }
    }
}

fn unknown_tool(name: &str) -> Error {
    Error::new(ErrorCode::UnknownTool, format!("unknown tool {name:?}; tools: {}", ToolCall::NAMES.join(", ")))
}
