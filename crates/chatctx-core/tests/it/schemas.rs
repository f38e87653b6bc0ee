//! The tool schemas are generated from the request types; these tests hold them to what the decoders read,
//! so a schema cannot promise a field, a value or a range its decoder refuses, or the other way round.

use chatctx_core::ErrorCode;
use chatctx_core::kinds::{KindName, ObjectKind};
use chatctx_core::tools::{ToolCall, ToolSchema};
use serde_json::{Map, Value, json};

/// A request every tool accepts: each one's required fields, and nothing else.
fn complete() -> Value {
    json!({"chat_id": "1", "current_message_id": "1", "sender_user_id": "1", "patch": {}, "to_revision": 0,
           "text": "so far", "covers_until_message_id": "1"})
}

fn props(schema: &Map<String, Value>) -> &Map<String, Value> {
    schema["properties"].as_object().expect("an object schema lists its properties")
}

fn types(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Sets `path` (dotted) in `args` to `v`.
fn with(args: &Value, path: &[&str], v: Value) -> Value {
    let mut args = args.clone();
    let mut at = &mut args;
    for (i, key) in path.iter().enumerate() {
        let map = at.as_object_mut().unwrap();
        if i + 1 == path.len() {
            map.insert((*key).to_owned(), v);
            break;
        }
        at = map.entry(*key).or_insert_with(|| json!({}));
    }
    args
}

fn decode(t: &ToolSchema, args: &Value) -> Result<ToolCall, chatctx_core::Error> {
    ToolCall::decode(t.name, args)
}

/// Every property of `schema` (under `path`) is read by the decoder: a value of the wrong type is refused
/// with an error naming the field. Each enum value is accepted and any other refused; each range's ends are
/// accepted and the values past them refused.
fn check_properties(t: &ToolSchema, schema: &Map<String, Value>, path: &[&str]) {
    for (key, p) in props(schema) {
        let mut at: Vec<&str> = path.to_vec();
        at.push(key);
        let name = at.join(".");
        let wrong = if types(p).contains(&"object") { json!("text") } else { json!({"wrong": true}) };
        let err = decode(t, &with(&complete(), &at, wrong)).expect_err(&format!("{} {name}: wrong type", t.name));
        assert!(err.message.contains(&format!("`{name}")), "{} {name}: {}", t.name, err.message);

        let words = p["enum"].as_array().or_else(|| p["items"]["enum"].as_array());
        if let Some(words) = words {
            let list = p.get("items").is_some();
            let as_value = |w: Value| if list { json!([w]) } else { w };
            for w in words {
                decode(t, &with(&complete(), &at, as_value(w.clone())))
                    .unwrap_or_else(|e| panic!("{} {name}: {w} is advertised but refused: {e}", t.name));
            }
            let err = decode(t, &with(&complete(), &at, as_value(json!("no-such-word")))).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRequest, "{} {name}", t.name);
        }
        if let (Some(min), Some(max)) = (p["minimum"].as_i64(), p["maximum"].as_i64()) {
            for ok in [min, max] {
                decode(t, &with(&complete(), &at, json!(ok))).unwrap_or_else(|e| panic!("{} {name}={ok}: {e}", t.name));
            }
            for bad in [min - 1, max + 1] {
                assert!(decode(t, &with(&complete(), &at, json!(bad))).is_err(), "{} {name}={bad}", t.name);
            }
        }
        if types(p) == ["object"] && p.get("properties").is_some() {
            check_properties(t, p.as_object().unwrap(), &at);
        }
    }
}

#[test]
fn every_advertised_field_is_read_as_advertised() {
    let schemas = ToolCall::schemas();
    assert_eq!(schemas.iter().map(|t| t.name).collect::<Vec<_>>(), ToolCall::NAMES);
    for t in &schemas {
        assert_eq!(t.input["type"], "object", "{}", t.name);
        check_properties(t, &t.input, &[]);
    }
}

/// The schema's `required` fields are exactly what the tool refuses to go without.
#[test]
fn required_fields_are_exactly_the_ones_refused_when_missing() {
    for t in ToolCall::schemas() {
        let required: Vec<&str> = t.input["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let mine: Map<String, Value> = complete()
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| required.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        decode(&t, &Value::Object(mine.clone()))
            .unwrap_or_else(|e| panic!("{} with only its required fields: {e}", t.name));
        for field in &required {
            let mut args = mine.clone();
            args.remove(*field);
            let err = decode(&t, &Value::Object(args)).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRequest, "{} without {field}: {err:?}", t.name);
            assert!(err.message.contains(field), "{} without {field}: {}", t.name, err.message);
        }
    }
}

/// A decoded call written out (as the service logs it) reads back the same, with only advertised fields.
#[test]
fn calls_round_trip_through_their_written_form() {
    let full = json!({
        "chat_id": -100, "channel": "slack", "topic_id": 7, "current_message_id": "9", "sender_user_id": 42,
        "reply_to_message_id": "8", "raw_user_text": "that one", "now": "2026-02-13T08:20:00+03:00",
        "normalized_reference_hints": {"positional_hint": "above", "ordinal_hint": "last", "target_kind_hint": "photo",
                                       "ownership_hint": "mine", "recency_hint": "recent"},
        "allowed_kinds": ["file", "poll"], "kinds": ["image"], "max_candidates": 4, "limit": 2,
        "revisions": true, "patch": {"a": {"b": null}}, "expected_revision": 3, "to_revision": 1,
        "text": "so far", "covers_until_message_id": 8, "source": "summarizer"
    });
    for t in ToolCall::schemas() {
        let call = decode(&t, &full).unwrap();
        let written = serde_json::to_value(&call).unwrap();
        assert_eq!(written["call"], t.name);
        let args = &written["args"];
        for key in args.as_object().unwrap().keys() {
            assert!(props(&t.input).contains_key(key), "{} writes {key}, which its schema does not list", t.name);
        }
        assert_eq!(decode(&t, args).unwrap(), call, "{}", t.name);
        assert_eq!(call.scope().chat_id, "-100");
    }
}

/// The kind words are the same everywhere a request names kinds, and each means what it says.
#[test]
fn one_kind_vocabulary_everywhere() {
    let schemas = ToolCall::schemas();
    let find = |tool: &str| schemas.iter().find(|t| t.name == tool).unwrap().input.clone();
    let resolve = find("resolve_reference_target");
    let list = find("list_active_context_objects");
    let names: Vec<Value> = KindName::NAMES.iter().map(|n| json!(n)).collect();
    assert_eq!(props(&resolve)["allowed_kinds"]["items"]["enum"].as_array().unwrap(), &names);
    assert_eq!(props(&list)["kinds"]["items"]["enum"].as_array().unwrap(), &names);
    let hints = props(&resolve)["normalized_reference_hints"].as_object().unwrap();
    let hint: Vec<Value> =
        props(hints)["target_kind_hint"]["enum"].as_array().unwrap().iter().filter(|v| !v.is_null()).cloned().collect();
    assert_eq!(hint, names, "the same words (null: absent)");
    for word in ["image", "photo", "media.image"] {
        let args = with(&complete(), &["allowed_kinds"], json!([word]));
        let Ok(ToolCall::ResolveReferenceTarget(r)) = ToolCall::decode("resolve_reference_target", &args) else {
            panic!("{word} refused")
        };
        assert_eq!(r.allowed_kinds, Some(vec![ObjectKind::MediaImage]), "{word}");
    }
    assert!(
        ToolCall::decode("list_active_context_objects", &json!({"chat_id": "1", "kinds": ["media_image"]})).is_err()
    );
}

/// A bound scope's fields fill in what a call leaves out, before anything is required.
#[test]
fn defaults_fill_the_scope_before_it_is_checked() {
    let bound = chatctx_core::tools::Scope {
        current_message_id: Some("5".into()),
        sender_user_id: Some("42".into()),
        topic_id: Some("7".into()),
        ..chatctx_core::tools::Scope::chat("-1")
    };
    let call = ToolCall::decode_with("resolve_reference_target", &json!({}), Some(&bound)).unwrap();
    assert_eq!(call.scope(), &bound);
    let call = ToolCall::decode_with("get_scenario", &json!({"topic_id": 8}), Some(&bound)).unwrap();
    assert_eq!(call.scope().topic_id.as_deref(), Some("8"), "what the call names wins");
    assert_eq!(call.scope().current_message_id, None, "a field the tool does not read stays empty");
}
