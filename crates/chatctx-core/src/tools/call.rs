//! [`ToolCall`]: one tool call as a typed value, decoded once at the edge. Every front end (HTTP, MCP,
//! `replay`, the service's log, credentials that bind a scope) works on it, and [`crate::Engine::answer`]
//! answers it. The tool list and each tool's JSON Schema are generated from the request types here, so what
//! a client is told a tool takes is what its decoder reads.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode};
use crate::json::Fields;
use crate::time::Timestamp;

/// Where a tool call applies: the fields every tool shares. A bound scope (a credential handed to a model)
/// pins the chat and fills in the rest where a call names none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Scope {
    /// Platform; default "telegram".
    #[serde(default = "default_channel")]
    pub channel: String,
    /// The chat (Telegram chat id, or any channel's chat id).
    #[schemars(with = "Id")]
    pub chat_id: String,
    /// Forum topic or thread, when there is no current message to take it from.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Id>")]
    pub topic_id: Option<String>,
    /// The message being handled: the one being answered, or the one that holds the reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Id>")]
    pub current_message_id: Option<String>,
    /// Who wrote the message being handled.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Id>")]
    pub sender_user_id: Option<String>,
}

fn default_channel() -> String {
    crate::event::DEFAULT_CHANNEL.to_owned()
}

/// Which of the [`Scope`] fields a tool reads, and which of those it cannot go without (`chat_id` always).
#[derive(Debug, Clone, Copy)]
pub struct ScopeUse {
    /// The scope fields the tool reads; the others are accepted and ignored, and left out of its schema.
    pub reads: &'static [&'static str],
    /// The ones it requires besides `chat_id`.
    pub requires: &'static [&'static str],
}

impl Scope {
    /// The scope of a whole chat on Telegram, for building requests in code.
    pub fn chat(chat_id: impl Into<String>) -> Self {
        Self { channel: default_channel(), chat_id: chat_id.into(), ..Self::default() }
    }

    /// Reads the scope fields of a request, requiring what `used` says. A field the request leaves out is
    /// taken from `defaults` (a bound scope's) before anything is required.
    pub(crate) fn decode(f: &Fields<'_>, used: ScopeUse, defaults: Option<&Scope>) -> Result<Self, Error> {
        let id = |key: &str, default: Option<&Option<String>>| {
            let read = used.reads.contains(&key) || used.requires.contains(&key);
            let value = if read { f.id(key)?.or_else(|| default.cloned().flatten()) } else { None };
            match value {
                None if used.requires.contains(&key) || key == "chat_id" => Err(f.err(key, "is required")),
                value => Ok(value),
            }
        };
        let channel = match (f.str("channel")?.filter(|c| !c.is_empty()), defaults) {
            (None, Some(d)) => d.channel.clone(),
            _ => f.channel()?,
        };
        let chat_id = defaults.map(|d| Some(d.chat_id.clone()));
        Ok(Self {
            channel,
            chat_id: id("chat_id", chat_id.as_ref())?.unwrap_or_default(),
            topic_id: id("topic_id", defaults.map(|d| &d.topic_id))?,
            current_message_id: id("current_message_id", defaults.map(|d| &d.current_message_id))?,
            sender_user_id: id("sender_user_id", defaults.map(|d| &d.sender_user_id))?,
        })
    }
}

/// An id on the wire: a non-empty string, or an integer (read as its decimal string).
pub(crate) struct Id;

impl JsonSchema for Id {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Id".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        crate::wire::schema([("type", vec!["string", "integer"].into())])
    }
}

/// A tool's request type: its name, its description for models, how it is read, and its answer type.
pub trait Request: Sized + Serialize + JsonSchema {
    /// The tool's name.
    const NAME: &'static str;
    /// What the tool does, for a model choosing it.
    const DESCRIPTION: &'static str;
    /// The scope fields it reads and requires.
    const SCOPE: ScopeUse;
    /// Its answer.
    type Response: Serialize + JsonSchema;

    /// Reads the request from JSON, naming any bad field. Scope fields it leaves out are taken from
    /// `defaults` (a bound scope's), if given, before any is required.
    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error>;
    /// Reads the request from JSON, naming any bad field.
    fn decode(v: &Value) -> Result<Self, Error> {
        Self::decode_with(v, None)
    }
    /// Where it applies.
    fn scope(&self) -> &Scope;
    /// Where it applies, for credentials that pin or fill it in.
    fn scope_mut(&mut self) -> &mut Scope;
    /// The time it names, if it takes one.
    fn now(&self) -> Option<Timestamp> {
        None
    }
    /// Sets the time where the request takes one and names none (so that a logged call means the same later).
    fn fill_now(&mut self, _now: Timestamp) {}
}

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
    ResolveReferenceTarget(crate::resolve::ResolveReferenceTarget),
    ListActiveContextObjects(crate::active::ListActiveContextObjects),
    GetChatHistoryContext(super::GetChatHistoryContext),
    GetScenario(crate::scenario::GetScenario),
    UpdateScenario(crate::scenario::UpdateScenario),
    RevertScenario(crate::scenario::RevertScenario),
}

impl ToolCall {
    /// Whether answering the call changes the state.
    pub fn writes(&self) -> Writes {
        match self {
            Self::UpdateScenario(_) | Self::RevertScenario(_) => Writes::Always,
            Self::ResolveReferenceTarget(_) => Writes::Sometimes,
            Self::GetChatHistoryContext(_) | Self::ListActiveContextObjects(_) | Self::GetScenario(_) => Writes::Never,
        }
    }
}

fn unknown_tool(name: &str) -> Error {
    Error::new(ErrorCode::UnknownTool, format!("unknown tool {name:?}; tools: {}", ToolCall::NAMES.join(", ")))
}
