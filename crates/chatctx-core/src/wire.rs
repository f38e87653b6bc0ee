//! What the `JsonSchema` derive of the wire types expands to (`#[schemars(crate = "crate::wire")]`): schemars
//! itself, with its `json_schema!` replaced for the one shape a derived struct asks of it. schemars builds
//! that shape with `serde_json::json!`, whose expansion unwraps (infallibly, on literals); building it here
//! keeps every `unwrap` out of this crate's code, generated or not, so the no-unwrap lint stays on everywhere.
//! Hand-written schemas use [`schema`].

#[doc(hidden)]
pub use schemars::*;
use serde_json::{Map, Value};

/// A schema from its keywords.
pub fn schema<const N: usize>(keywords: [(&str, Value); N]) -> Schema {
    Schema::from(keywords.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<String, Value>>())
}

/// The start of a derived struct's schema: an object, closed when the type denies unknown fields.
#[doc(hidden)]
pub fn object_schema(closed: bool) -> Schema {
    let mut s = schema([("type", Value::from("object"))]);
    if closed {
        s.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    s
}

#[doc(hidden)]
#[macro_export]
macro_rules! __wire_json_schema {
    ({"type": "object" $(,)?}) => {
        $crate::wire::object_schema(false)
    };
    ({"type": "object", "additionalProperties": false $(,)?}) => {
        $crate::wire::object_schema(true)
    };
}

#[doc(hidden)]
pub use crate::__wire_json_schema as json_schema;

/// Implements `JsonSchema` for a type as the schema of the type it serializes as (the same name, id and
/// definition), so that documents and generated clients do not change.
macro_rules! schema_as {
    ($t:ty => $as:ty) => {
        impl $crate::wire::JsonSchema for $t {
            fn inline_schema() -> bool {
                <$as as $crate::wire::JsonSchema>::inline_schema()
            }

            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                <$as as $crate::wire::JsonSchema>::schema_name()
            }

            fn schema_id() -> ::std::borrow::Cow<'static, str> {
                <$as as $crate::wire::JsonSchema>::schema_id()
            }

            fn json_schema(generator: &mut $crate::wire::SchemaGenerator) -> $crate::wire::Schema {
                <$as as $crate::wire::JsonSchema>::json_schema(generator)
            }
        }
    };
}
pub(crate) use schema_as;
