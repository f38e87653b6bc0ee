//! Validation of conversation state against a JSON Schema (`state.schema_file`).
//!
//! A subset of JSON Schema (draft 2020-12 vocabulary) that covers what state schemas use: `type` (one or a
//! list), `enum`, `const`, `properties`, `required`, `additionalProperties` (boolean or schema), `items`,
//! `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`, `minItems`,
//! `maxItems`, `minProperties`, `maxProperties`, `allOf`, `anyOf`, `oneOf`, `not`, and the annotations
//! `$schema`, `$id`, `title`, `description`, `default`, `examples`. Any other keyword is refused when the
//! schema is loaded, so a schema is never enforced only in part without anyone knowing.

use serde_json::{Map, Value};

/// A loaded schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema(Value);

const KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "$schema",
    "$id",
    "title",
    "description",
    "default",
    "examples",
];

impl Schema {
    /// Checks that `v` is a schema this validator fully supports.
    pub fn new(v: Value) -> Result<Self, String> {
        check_schema(&v, "(root)")?;
        Ok(Self(v))
    }

    /// Validates `value`; the error names the first failing path (`household.children[1]`) and why.
    pub fn validate(&self, value: &Value) -> Result<(), String> {
        validate(&self.0, value, &mut String::new())
    }
}

fn check_schema(s: &Value, at: &str) -> Result<(), String> {
    let m = match s {
        Value::Bool(_) => return Ok(()),
        Value::Object(m) => m,
        _ => return Err(format!("schema at {at}: expected an object or a boolean")),
    };
    for (k, v) in m {
        if !KEYWORDS.contains(&k.as_str()) {
            return Err(format!("schema at {at}: keyword `{k}` is not supported (supported: {})", KEYWORDS.join(", ")));
        }
        match k.as_str() {
            "properties" => {
                for (p, sub) in
                    v.as_object().ok_or_else(|| format!("schema at {at}: `properties` must be an object"))?
                {
                    check_schema(sub, &format!("{at}.properties.{p}"))?;
                }
            }
            "items" | "additionalProperties" | "not" => check_schema(v, &format!("{at}.{k}"))?,
            "allOf" | "anyOf" | "oneOf" => {
                for (i, sub) in
                    v.as_array().ok_or_else(|| format!("schema at {at}: `{k}` must be an array"))?.iter().enumerate()
                {
                    check_schema(sub, &format!("{at}.{k}[{i}]"))?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    let actual = type_name(v);
    actual == t
        || (t == "number" && actual == "integer")
        || (t == "integer" && v.as_f64().is_some_and(|f| f.fract() == 0.0))
}

fn here(path: &str) -> &str {
    if path.is_empty() { "(root)" } else { path }
}

fn num(m: &Map<String, Value>, k: &str) -> Option<f64> {
    m.get(k).and_then(Value::as_f64)
}

fn validate(schema: &Value, v: &Value, path: &mut String) -> Result<(), String> {
    let m = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("at {}: no value is allowed here", here(path))),
        Value::Object(m) => m,
        _ => return Ok(()),
    };
    scalar(m, v, path)?;
    match v {
        Value::Array(items) => array(m, items, path)?,
        Value::Object(obj) => object(m, obj, path)?,
        _ => {}
    }
    combined(m, v, path)
}

fn fail(path: &str, why: String) -> Result<(), String> {
    Err(format!("at {}: {why}", here(path)))
}

/// `type`, `enum`, `const`, the numeric bounds and the string lengths.
fn scalar(m: &Map<String, Value>, v: &Value, path: &str) -> Result<(), String> {
    if let Some(t) = m.get("type") {
        let ok = match t {
            Value::String(t) => has_type(v, t),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| has_type(v, t)),
            _ => true,
        };
        if !ok {
            return fail(path, format!("expected {t}, got {}", type_name(v)));
        }
    }
    if let Some(Value::Array(options)) = m.get("enum")
        && !options.contains(v)
    {
        return fail(path, format!("expected one of {}", Value::Array(options.clone())));
    }
    if let Some(c) = m.get("const")
        && c != v
    {
        return fail(path, format!("expected {c}"));
    }
    if let Some(x) = v.as_f64() {
        if num(m, "minimum").is_some_and(|b| x < b) || num(m, "exclusiveMinimum").is_some_and(|b| x <= b) {
            return fail(path, format!("{x} is below the minimum"));
        }
        if num(m, "maximum").is_some_and(|b| x > b) || num(m, "exclusiveMaximum").is_some_and(|b| x >= b) {
            return fail(path, format!("{x} is above the maximum"));
        }
    }
    if let Value::String(s) = v {
        let n = s.chars().count() as f64;
        if num(m, "minLength").is_some_and(|b| n < b) || num(m, "maxLength").is_some_and(|b| n > b) {
            return fail(path, format!("length {n} is out of bounds"));
        }
    }
    Ok(())
}

/// `minItems`, `maxItems` and `items`.
fn array(m: &Map<String, Value>, items: &[Value], path: &mut String) -> Result<(), String> {
    let n = items.len() as f64;
    if num(m, "minItems").is_some_and(|b| n < b) || num(m, "maxItems").is_some_and(|b| n > b) {
        return fail(path, format!("{n} items is out of bounds"));
    }
    if let Some(item_schema) = m.get("items") {
        for (i, item) in items.iter().enumerate() {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            validate(item_schema, item, path)?;
            path.truncate(len);
        }
    }
    Ok(())
}

/// `minProperties`, `maxProperties`, `required`, `properties` and `additionalProperties`.
fn object(m: &Map<String, Value>, obj: &Map<String, Value>, path: &mut String) -> Result<(), String> {
    let n = obj.len() as f64;
    if num(m, "minProperties").is_some_and(|b| n < b) || num(m, "maxProperties").is_some_and(|b| n > b) {
        return fail(path, format!("{n} properties is out of bounds"));
    }
    if let Some(Value::Array(required)) = m.get("required") {
        for r in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(r) {
                let at = if path.is_empty() { r.to_owned() } else { format!("{path}.{r}") };
                return Err(format!("at {at}: is required"));
            }
        }
    }
    let props = m.get("properties").and_then(Value::as_object);
    for (k, val) in obj {
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(k);
        match (props.and_then(|p| p.get(k)), m.get("additionalProperties")) {
            (Some(s), _) => validate(s, val, path)?,
            (None, Some(extra)) => validate(extra, val, path)?,
            (None, None) => {}
        }
        path.truncate(len);
    }
    Ok(())
}

/// `allOf`, `anyOf`, `oneOf` and `not`.
fn combined(m: &Map<String, Value>, v: &Value, path: &mut String) -> Result<(), String> {
    if let Some(Value::Array(all)) = m.get("allOf") {
        for s in all {
            validate(s, v, path)?;
        }
    }
    if let Some(Value::Array(any)) = m.get("anyOf")
        && !any.iter().any(|s| validate(s, v, &mut path.clone()).is_ok())
    {
        return fail(path, "matches none of anyOf".to_owned());
    }
    if let Some(Value::Array(one)) = m.get("oneOf") {
        let n = one.iter().filter(|s| validate(s, v, &mut path.clone()).is_ok()).count();
        if n != 1 {
            return fail(path, format!("matches {n} of oneOf, not exactly one"));
        }
    }
    if let Some(not) = m.get("not")
        && validate(not, v, &mut path.clone()).is_ok()
    {
        return fail(path, "matches the schema of `not`".to_owned());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use serde_json::json;

    use super::*;

    fn household() -> Schema {
        Schema::new(json!({
            "type": "object",
            "properties": {
                "household": {"type": "object", "required": ["adults"], "properties": {
                    "adults": {"type": "integer", "minimum": 1, "maximum": 10},
                    "married": {"type": "boolean"},
                    "children": {"type": "array", "items": {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}}}
                }, "additionalProperties": false},
                "region": {"enum": ["north", "south"]}
            }
        }))
        .unwrap()
    }

    #[test]
    fn valid_states_pass() {
        let s = household();
        assert_eq!(s.validate(&json!({"household": {"adults": 2, "married": true, "children": [{"age": 4}]}, "region": "north", "other": 1})), Ok(()));
    }

    #[test]
    fn failures_name_the_path() {
        let s = household();
        let cases = [
            (json!({"household": {"adults": "two"}}), "at household.adults: expected \"integer\", got string"),
            (json!({"household": {"married": true}}), "at household.adults: is required"),
            (
                json!({"household": {"adults": 2, "children": [{"age": 3}, {"age": -1}]}}),
                "at household.children[1].age: -1 is below the minimum",
            ),
            (json!({"household": {"adults": 2, "pets": 3}}), "at household.pets: no value is allowed here"),
            (json!({"region": "east"}), "at region: expected one of [\"north\",\"south\"]"),
        ];
        for (v, want) in cases {
            assert_eq!(s.validate(&v), Err(want.to_owned()), "{v}");
        }
    }

    #[test]
    fn unsupported_keywords_are_refused_at_load() {
        let e = Schema::new(json!({"properties": {"a": {"type": "string", "pattern": "^x"}}})).unwrap_err();
        assert!(e.contains("`pattern`") && e.contains("(root).properties.a"), "{e}");
        assert!(Schema::new(json!({"$ref": "#/defs/x"})).is_err());
        assert!(Schema::new(json!(true)).is_ok());
    }
}
