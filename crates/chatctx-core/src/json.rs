//! Reading untrusted JSON objects field by field, so that every error names the field at fault
//! (`field `sender.user_id`: expected a string or integer id`) with the error code of its boundary.

use crate::kinds::DEFAULT_CHANNEL;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode};
use crate::time::Timestamp;

/// One JSON object being read, with the dotted path that leads to it.
#[derive(Clone, Copy)]
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: &'a str,
    code: ErrorCode,
}

/// The deepest nesting of arrays and objects in a JSON text (0 for a scalar), read without parsing: brackets
/// inside strings do not count. Cheap enough to run over every input before it is parsed; on text that is not
/// JSON the answer is meaningless but finite, and the parser refuses the text anyway.
pub fn nesting(text: &[u8]) -> usize {
    let (mut depth, mut deepest, mut at) = (0usize, 0usize, 0usize);
    while let Some(&b) = text.get(at) {
        at += 1;
        match b {
            // A string is skipped to its closing quote in one search (most of a log line is string).
            b'"' => at = string_end(text, at),
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Where the string that starts before `at` ends: just past its closing quote (the text's end when unclosed).
fn string_end(text: &[u8], mut at: usize) -> usize {
    loop {
        let Some(rest) = text.get(at..) else { return text.len() };
        match rest.iter().position(|&b| b == b'"' || b == b'\\') {
            None => return text.len(),
            // An escape takes the next byte with it, whatever it is.
            Some(i) if rest[i] == b'\\' => at += i + 2,
            Some(i) => return at + i + 1,
        }
    }
}

/// The deepest nesting of arrays and objects in a parsed value (0 for a scalar), without recursion.
pub fn value_nesting(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, at)) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|c| (c, at + 1))),
            Value::Object(map) => stack.extend(map.values().map(|c| (c, at + 1))),
            _ => continue,
        }
        deepest = deepest.max(at + 1);
    }
    deepest
}

/// Refuses (`code`) a JSON input nested deeper than `max` levels of arrays and objects.
pub fn check_nesting(depth: usize, max: usize, what: &str, code: ErrorCode) -> Result<(), Error> {
    if depth > max {
        return Err(Error::new(
            code,
            format!("{what} is nested {depth} levels deep; at most {max} are accepted (server.max_json_depth)"),
        ));
    }
    Ok(())
}

/// Returns `v` as an object, or an error naming `what`.
pub fn object<'a>(v: &'a Value, what: &str, code: ErrorCode) -> Result<&'a Map<String, Value>, Error> {
    v.as_object().ok_or_else(|| Error::new(code, format!("{what} must be a JSON object")))
}

impl<'a> Fields<'a> {
    /// Reads `map`, reporting errors with `code` and field names prefixed by `path` (empty for the top).
    pub fn new(map: &'a Map<String, Value>, path: &'a str, code: ErrorCode) -> Self {
        Self { map, path, code }
    }

    /// The dotted name of `key` under this object.
    pub fn name(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) }
    }

    /// An error about `key`.
    pub fn err(&self, key: &str, what: &str) -> Error {
        Error::new(self.code, format!("field `{}`: {what}", self.name(key)))
    }

    /// The raw value, treating JSON `null` as absent.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// A required field's raw value.
    pub fn req(&self, key: &str) -> Result<&'a Value, Error> {
        self.get(key).ok_or_else(|| self.err(key, "is required"))
    }

    /// An id: a non-empty string or an integer (stringified).
    pub fn id(&self, key: &str) -> Result<Option<String>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if s.len() > MAX_ID_BYTES => Err(self.err(key, TOO_LONG)),
            Some(v) => id_of(v).map(Some).ok_or_else(|| self.err(key, "expected a non-empty string or integer id")),
        }
    }

    /// A required id.
    pub fn req_id(&self, key: &str) -> Result<String, Error> {
        self.id(key)?.ok_or_else(|| self.err(key, "is required"))
    }

    /// An optional string.
    pub fn str(&self, key: &str) -> Result<Option<&'a str>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "expected a string")),
        }
    }

    /// An optional name-like string: trimmed, `None` when absent or blank.
    pub fn text(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self.str(key)?.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned))
    }

    /// An optional boolean.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.err(key, "expected true or false")),
        }
    }

    /// An optional non-negative integer that fits in `u32`.
    pub fn u32(&self, key: &str) -> Result<Option<u32>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| self.err(key, "expected a non-negative integer")),
        }
    }

    /// A count between 1 and `max`, `default` when absent.
    pub fn count_in(&self, key: &str, default: usize, max: u32) -> Result<usize, Error> {
        match self.u32(key)? {
            None => Ok(default),
            Some(n) if (1..=max).contains(&n) => Ok(n as usize),
            Some(_) => Err(self.err(key, &format!("must be between 1 and {max}"))),
        }
    }

    /// The `channel` field: the platform, `telegram` when absent or empty.
    pub fn channel(&self) -> Result<String, Error> {
        match self.str("channel")? {
            Some(s) if s.len() > MAX_ID_BYTES => Err(self.err("channel", TOO_LONG)),
            c => Ok(c.filter(|s| !s.is_empty()).unwrap_or(DEFAULT_CHANNEL).to_owned()),
        }
    }

    /// An optional time: RFC 3339 with any offset, or integer Unix seconds.
    pub fn time(&self, key: &str) -> Result<Option<Timestamp>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => time_of(v).map(Some).map_err(|why| self.err(key, &why)),
        }
    }

    /// A required time.
    pub fn req_time(&self, key: &str) -> Result<Timestamp, Error> {
        self.time(key)?.ok_or_else(|| self.err(key, "is required"))
    }

    /// An optional nested object.
    pub fn obj(&self, key: &str) -> Result<Option<&'a Map<String, Value>>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.err(key, "expected an object")),
        }
    }

    /// An optional array.
    pub fn array(&self, key: &str) -> Result<&'a [Value], Error> {
        match self.get(key) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(self.err(key, "expected an array")),
        }
    }

    /// An optional list of strings.
    pub fn strings(&self, key: &str) -> Result<Vec<String>, Error> {
        self.array(key)?
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| self.err(key, "expected an array of strings")))
            .collect()
    }

    /// An optional word of a closed vocabulary.
    pub fn word<T: crate::kinds::Vocabulary>(&self, key: &str) -> Result<Option<T>, Error> {
        Ok(self.one_of(key, T::NAMES)?.and_then(|i| T::ALL.get(i).copied()))
    }

    /// An optional string that must be one of `allowed`, returned as its index.
    pub fn one_of(&self, key: &str, allowed: &[&str]) -> Result<Option<usize>, Error> {
        match self.str(key)? {
            None => Ok(None),
            Some(s) => allowed
                .iter()
                .position(|a| *a == s)
                .map(Some)
                .ok_or_else(|| self.err(key, &format!("expected one of {}, got {s:?}", allowed.join(", ")))),
        }
    }
}

/// The channel a request or event names (`telegram` when absent or empty), read the way the decoders read
/// it, for callers that look before decoding (credentials, the operation log).
pub fn channel_of(v: &Value) -> &str {
    v.get("channel").and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or(DEFAULT_CHANNEL)
}

/// Refuses ids with control characters anywhere in `v`: the string values of `channel`, `id`, `*_id` and
/// `message_ids` keys, at any depth (`invalid_event`, naming the field). Ids reach log lines, so a newline in
/// one could forge a line. Applied to fresh input at the ingest boundary (what a store logged earlier still
/// loads as it was).
pub fn check_ids(v: &Value) -> Result<(), Error> {
    visit_fields(v, usize::MAX, &mut |key, v| id_problem(key, v))
}

/// [`check_ids`] of a tool call's own fields only: what a call carries below them (a state patch, hints) is the
/// caller's data, not ids.
pub fn check_call_ids(v: &Value) -> Result<(), Error> {
    visit_fields(v, 1, &mut |key, v| id_problem(key, v))
}

/// What is wrong with field `key` holding `v` as an id, if it is an id field holding a control character.
pub(crate) fn id_problem(key: &str, v: &Value) -> Option<String> {
    if !(key == "channel" || key == "id" || key.ends_with("_id") || key == "message_ids") {
        return None;
    }
    let dirty = match v {
        Value::String(s) => has_control(s),
        Value::Array(a) => a.iter().any(|x| x.as_str().is_some_and(has_control)),
        _ => false,
    };
    dirty.then(|| "an id may not hold control characters".to_owned())
}

/// Whether `s` holds a control character, which no id of fresh input may (ids reach log lines).
pub(crate) fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// Calls `visit` with every field of `v` (its key and value), `depth` levels of objects down; the first problem
/// it names is the error (`invalid_event`, with the field's path). The path is built only then.
pub(crate) fn visit_fields<'a>(
    v: &'a Value,
    depth: usize,
    visit: &mut dyn FnMut(&'a str, &'a Value) -> Option<String>,
) -> Result<(), Error> {
    fn walk<'a>(
        v: &'a Value,
        depth: usize,
        path: &mut Vec<&'a str>,
        visit: &mut dyn FnMut(&'a str, &'a Value) -> Option<String>,
    ) -> Result<(), Error> {
        match v {
            Value::Object(m) if depth > 0 => {
                for (k, v) in m {
                    path.push(k);
                    if let Some(why) = visit(k, v) {
                        return Err(Error::invalid_event(format!("field `{}`: {why}", path.join("."))));
                    }
                    walk(v, depth - 1, path, visit)?;
                    path.pop();
                }
                Ok(())
            }
            Value::Array(a) => a.iter().try_for_each(|x| walk(x, depth, path, visit)),
            _ => Ok(()),
        }
    }
    walk(v, depth, &mut Vec::new(), visit)
}

/// The longest id (chat, channel, topic, message, user, object) accepted, in bytes.
pub const MAX_ID_BYTES: usize = 256;

const TOO_LONG: &str = "is longer than 256 bytes";

/// An id from a JSON value: a non-empty string of at most [`MAX_ID_BYTES`], or an integer stringified.
pub fn id_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() && s.len() <= MAX_ID_BYTES => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

pub use crate::time::time_of;

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::nesting;

    /// The plain definition: a byte at a time, strings and escapes followed.
    fn plain(text: &[u8]) -> usize {
        let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
        for &b in text {
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        deepest
    }

    #[test]
    fn skipping_strings_whole_finds_what_the_plain_walk_finds() {
        proptest::proptest!(|(text in "[\\[\\]{}\"\\\\a ]{0,60}")| {
            proptest::prop_assert_eq!(nesting(text.as_bytes()), plain(text.as_bytes()));
        });
        assert_eq!(nesting(br#"{"a": ["x]\"{", {"b": "\\"}]}"#), 3);
    }
}
