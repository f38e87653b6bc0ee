//! [`LogLine`]: one line of a replay file, and of the service's durable log, which is the same format (the
//! log is replayed into a fresh engine at start). This type is the persistence contract between versions:
//! [`LogLine::to_line`] is the one writer and [`LogLine::parse`] the one reader, and every line an earlier
//! version wrote still parses (tests/data/log-before-typed-lines.jsonl).
//!
//! The shapes, one JSON object per line (docs/protocol.md, "Replay files"):
//! - `{"event": {…}}`: an input event, as ingested (a `telegram_update` may stand for several events);
//! - `{"call": "<tool>", "args": {…}}`: a tool call (the log holds only the calls that changed the state, with
//!   their time fixed);
//! - `{"import": {…}}`: a conversation document (`chatctx export`), replacing its chat;
//! - `{"people": {…}}`: a workspace's people directory, replacing it (the compacted log of a directory);
//! - `{"forget": true}`: the chat the line is stored under is forgotten (shared stores only).

mod apply;

pub use apply::{Applied, decode_events, load_events};

use std::borrow::Cow;

use chatctx_core::directory::DirectoryDoc;
use chatctx_core::engine::ConversationView;
use chatctx_core::tools::ToolCall;
use chatctx_core::transfer::ConversationDoc;
use chatctx_core::{Error, ErrorCode, Event};
use serde::Serialize;
use serde_json::Value;

/// One replay or log line. Written lines borrow what they write; read lines own it (`LogLine<'static>`). Lines
/// are read and applied one at a time, never held in bulk (a restart's batches hold events, and other lines
/// boxed), so a message read into its event is not boxed: that would cost an allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum LogLine<'a> {
    /// An input event.
    Event(EventLine<'a>),
    /// A tool call.
    Call(Cow<'a, ToolCall>),
    /// A conversation document that replaces its chat.
    Import(Cow<'a, ConversationDoc>),
    /// A people directory that replaces its workspace's.
    People(Cow<'a, DirectoryDoc>),
    /// The chat the line is stored under is forgotten.
    Forget,
}

/// An event line's event: a decoded core event when written (borrowed) or when a message line is read straight
/// into its event (owned); otherwise the raw JSON as read (it is decoded when applied, because one Telegram
/// update may stand for several events). Not boxed, as [`LogLine`].
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EventLine<'a> {
    /// A core event.
    Decoded(Cow<'a, Event>),
    /// An event as read: a core event or a `telegram_update`.
    Raw(Value),
}

/// A line that cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    /// The tool, when the line is a call of a known shape whose arguments are wrong (a replay answers it with
    /// an error line for that call).
    pub call: Option<String>,
    /// What is wrong.
    pub error: Error,
}

impl BadLine {
    fn line(error: Error) -> Self {
        Self { call: None, error }
    }
}

const NEEDS: &str = "a replay line needs `event`, `call` or `import`";

#[derive(Serialize)]
struct EventShape<'a, T: Serialize> {
    event: &'a T,
}

#[derive(Serialize)]
struct ImportShape<'a> {
    import: &'a ConversationDoc,
}

#[derive(Serialize)]
struct PeopleShape<'a> {
    people: &'a DirectoryDoc,
}

#[derive(Serialize)]
struct ForgetShape {
    forget: bool,
}

impl<'a> LogLine<'a> {
    /// The line of an event, to write.
    pub fn event(e: &'a Event) -> Self {
        LogLine::Event(EventLine::Decoded(Cow::Borrowed(e)))
    }
}

impl LogLine<'_> {
    /// The line as written: one JSON object, no newline.
    pub fn to_line(&self) -> Result<String, Error> {
        if let LogLine::Event(EventLine::Decoded(e)) = self
            && let Event::Message(m) = &**e
        {
            // Most lines are messages, written directly (the same bytes serde_json writes, tested in the core).
            let mut line = String::from("{\"event\":");
            chatctx_core::event::write_message_json(m, &mut line);
            line.push('}');
            return Ok(line);
        }
        let written = match self {
            LogLine::Event(EventLine::Decoded(e)) => serde_json::to_string(&EventShape { event: &**e }),
            LogLine::Event(EventLine::Raw(v)) => serde_json::to_string(&EventShape { event: v }),
            LogLine::Call(call) => serde_json::to_string(&**call),
            LogLine::Import(doc) => serde_json::to_string(&ImportShape { import: doc }),
            LogLine::People(doc) => serde_json::to_string(&PeopleShape { people: doc }),
            LogLine::Forget => serde_json::to_string(&ForgetShape { forget: true }),
        };
        let line =
            written.map_err(|e| Error::new(ErrorCode::Internal, format!("a log line could not be written: {e}")))?;
        match self {
            LogLine::Import(doc) => readable(line, doc.nesting_bound()),
            _ => Ok(line),
        }
    }

    /// The import line of a chat's document borrowed from the engine (a snapshot): the bytes
    /// `LogLine::Import(doc).to_line()` gives for the document it stands for, without copying the history first.
    pub fn of_view(view: &ConversationView<'_>) -> Result<String, Error> {
        #[derive(Serialize)]
        struct Shape<'v, 'a> {
            import: &'v ConversationView<'a>,
        }
        let line = serde_json::to_string(&Shape { import: view })
            .map_err(|e| Error::new(ErrorCode::Internal, format!("a log line could not be written: {e}")))?;
        readable(line, view.nesting_bound())
    }
}

/// `line`, a document's import line, if it can be read back. Nothing is stored that could not be. Events and calls
/// are bounded far below [`READ_DEPTH`] where they are accepted (server.max_json_depth, state.max_depth); only an
/// imported document could reach it, and only through its states, so only a document whose states are deep enough
/// (`bound`, [`ConversationDoc::nesting_bound`]) pays for a scan of the line (which wraps it in one more level).
fn readable(line: String, bound: usize) -> Result<String, Error> {
    let depth = if 1 + bound > READ_DEPTH { chatctx_core::json::nesting(line.as_bytes()) } else { 0 };
    if depth > READ_DEPTH {
        let why = format!("it would be stored nested {depth} levels deep; at most {READ_DEPTH} can be read back");
        return Err(Error::invalid_request(why));
    }
    Ok(line)
}

/// The deepest nesting of arrays and objects a line may have to be read: twice what any input may have
/// ([`crate::config::MAX_JSON_DEPTH`]), so that whatever a writer wraps around an input (an event in its line,
/// a state in a snapshot's document) always reads back. serde_json's own limit (128) is lower than some lines
/// the server may write, so lines are checked against this instead.
pub const READ_DEPTH: usize = 2 * crate::config::MAX_JSON_DEPTH;

/// Parses JSON that chatctx wrote (a log line, an exported document) as deep as [`READ_DEPTH`]: what any
/// writer of chatctx's may produce. The error says what is wrong, to follow "the line …" or "the file …".
pub fn read_json(text: &str) -> Result<Value, String> {
    read_as(text)
}

/// [`read_json`] straight into a type. Most text is far shallower than serde_json's own limit (128 levels),
/// which bounds the recursion by itself: it is read at once. Only text that does not read so (deeper, or not
/// JSON) is measured first and read again as deep as [`READ_DEPTH`], so the answer is the same either way and
/// a restart does not scan every line twice.
fn read_as<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    if let Ok(v) = serde_json::from_str(text) {
        return Ok(v);
    }
    let depth = chatctx_core::json::nesting(text.as_bytes());
    if depth > READ_DEPTH {
        return Err(format!("is nested {depth} levels deep; at most {READ_DEPTH} can be read"));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    // Bounded by the check above, at a depth whose recursion fits any thread's stack.
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de)
        .and_then(|v: T| de.end().map(|()| v))
        .map_err(|e| format!("is not valid JSON: {e}"))
}

/// An `{"import": document}` line read without building a JSON value first.
fn read_import(line: &str) -> Option<ConversationDoc> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Shape {
        import: ConversationDoc,
    }
    read_as::<Shape>(line).ok().map(|s| s.import)
}

/// An `{"event": message}` line read straight into its event ([`chatctx_core::event::fresh_message_str`]), when
/// its message has the common shape; `None` for any other line. What it reads is what the general way reads from
/// the same line (tested in the core, and by `tests/it/direct.rs` through restarts).
fn read_message(line: &str) -> Option<Event> {
    let inner = line.strip_prefix("{\"event\":")?.strip_suffix('}')?;
    chatctx_core::event::fresh_message_str(inner)
}

impl LogLine<'static> {
    /// Reads one line (any version's).
    pub fn parse(line: &str) -> Result<Self, BadLine> {
        // A chat's compacted document, most of a log's bytes, is read straight into its type; anything that does
        // not read so takes the general way below, which says what is wrong.
        if line.starts_with("{\"import\":")
            && let Some(doc) = read_import(line)
        {
            return Ok(LogLine::Import(Cow::Owned(doc)));
        }
        // So is a message (most event lines).
        if let Some(event) = read_message(line) {
            return Ok(LogLine::Event(EventLine::Decoded(Cow::Owned(event))));
        }
        let v = read_json(line).map_err(|why| BadLine::line(Error::invalid_event(format!("the line {why}"))))?;
        Self::from_value(v)
    }

    /// Reads one line already parsed as JSON.
    pub fn from_value(mut v: Value) -> Result<Self, BadLine> {
        let Some(map) = v.as_object_mut() else {
            return Err(BadLine::line(Error::invalid_event(NEEDS)));
        };
        if let Some(doc) = map.get("import") {
            return ConversationDoc::from_value(doc).map(|d| LogLine::Import(Cow::Owned(d))).map_err(BadLine::line);
        }
        if let Some(doc) = map.get("people") {
            return DirectoryDoc::from_value(doc).map(|d| LogLine::People(Cow::Owned(d))).map_err(BadLine::line);
        }
        if let Some(event) = map.remove("event") {
            return Ok(LogLine::Event(EventLine::Raw(event)));
        }
        match map.get("call") {
            Some(Value::String(name)) => {
                let name = name.clone();
                let args = map.remove("args").unwrap_or_else(|| Value::Object(serde_json::Map::new()));
                let call = if args.is_object() {
                    ToolCall::decode(&name, &args)
                } else {
                    Err(Error::invalid_request("field `args`: expected an object"))
                };
                call.map(|c| LogLine::Call(Cow::Owned(c))).map_err(|error| BadLine { call: Some(name), error })
            }
            Some(_) => Err(BadLine::line(Error::invalid_request("field `call`: expected a tool name"))),
            None if map.get("forget") == Some(&Value::Bool(true)) => Ok(LogLine::Forget),
            None => Err(BadLine::line(Error::invalid_event(NEEDS))),
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    /// Whatever is written reads back as the same line (an event's line is tested below and in the fuzz test).
    #[test]
    fn written_lines_read_back() {
        let call = ToolCall::decode(
            "update_scenario",
            &serde_json::json!({"chat_id": -5, "topic_id": 7, "patch": {"a": {"b": null}}, "expected_revision": 2, "now": 1770000000}),
        )
        .unwrap();
        let mut engine = chatctx_core::Engine::new(chatctx_core::Settings::default());
        engine
            .call("update_scenario", &serde_json::json!({"chat_id": "-5", "patch": {"a": 1}}), call.now().unwrap())
            .unwrap();
        let doc = engine.export_conversation("telegram", "-5").unwrap();
        engine
            .apply(
                chatctx_core::Event::decode(&serde_json::json!({"type": "person", "channel": "slack",
                "workspace_id": "T1", "user_id": "U1", "display_name": "Priya"}))
                .unwrap(),
            )
            .unwrap();
        let people = engine.export_directory("slack", "T1").unwrap();
        for line in [
            LogLine::Call(Cow::Owned(call)),
            LogLine::Import(Cow::Owned(doc)),
            LogLine::People(Cow::Owned(people)),
            LogLine::Forget,
        ] {
            assert_eq!(LogLine::parse(&line.to_line().unwrap()).unwrap(), line);
        }
        assert_eq!(LogLine::Forget.to_line().unwrap(), r#"{"forget":true}"#, "as earlier versions wrote it");
    }

    /// A compacted document reads the same straight into its type as through a JSON value, and a line the
    /// straight way refuses (a key beside `import`, a document that is not one) reads as it always did.
    #[test]
    fn an_import_line_reads_the_same_either_way() {
        let mut engine = chatctx_core::Engine::new(chatctx_core::Settings::default());
        let message = serde_json::json!({"type": "message", "chat_id": "-5", "message_id": "1", "kind": "inbound_user",
            "sent_at": 1_770_000_000, "sender": {"user_id": "1", "username": "ann", "first_name": "Ann"},
            "text": "a \"quoted\" [bracket] {brace}", "topic_id": "7"});
        engine.apply(chatctx_core::Event::decode(&message).unwrap()).unwrap();
        let doc = engine.export_conversation("telegram", "-5").unwrap();
        let line = LogLine::Import(Cow::Owned(doc.clone())).to_line().unwrap();
        assert_eq!(read_import(&line), Some(doc.clone()));
        let through_value = LogLine::from_value(read_json(&line).unwrap()).unwrap();
        assert_eq!(LogLine::parse(&line).unwrap(), through_value);
        let beside = line.replacen('{', "{\"x\":1,", 1);
        assert!(read_import(&beside).is_none());
        assert_eq!(LogLine::parse(&beside).unwrap(), through_value, "the general way ignores the extra key, as before");
        let not_a_doc = r#"{"import": {"format": "nope"}}"#;
        assert!(read_import(not_a_doc).is_none());
        assert_eq!(LogLine::parse(not_a_doc).unwrap_err().error.code, ErrorCode::InvalidRequest);
    }

    /// A document whose states would nest its line deeper than can be read back is refused, whichever way its
    /// depth is told (the bound from its states, or the scan when the bound is near the limit), and one just within
    /// the limit is written.
    #[test]
    fn a_snapshot_too_deep_to_read_back_is_refused() {
        let mut engine = chatctx_core::Engine::new(chatctx_core::Settings::default());
        let now = chatctx_core::Timestamp::from_unix(1_770_000_000).unwrap();
        engine.call("update_scenario", &serde_json::json!({"chat_id": "-5", "patch": {"a": 1}}), now).unwrap();
        let doc = engine.export_conversation("telegram", "-5").unwrap();
        // The state's value `levels` deep: the line nests it in the state (5 levels with the line's own).
        let line_of = |levels: usize| {
            let mut d = doc.clone();
            let value = (0..levels).fold(serde_json::json!(1), |v, _| serde_json::json!([v]));
            d.scenarios[0].state.insert("deep".into(), value);
            LogLine::Import(Cow::Owned(d)).to_line()
        };
        let within = line_of(READ_DEPTH - 5).unwrap();
        assert_eq!(chatctx_core::json::nesting(within.as_bytes()), READ_DEPTH);
        let refused = line_of(READ_DEPTH - 4).unwrap_err();
        assert!(refused.message.contains(&format!("nested {} levels deep", READ_DEPTH + 1)), "{}", refused.message);
        assert!(line_of(3 * READ_DEPTH).is_err());
    }

    #[test]
    fn bad_lines_say_why() {
        assert_eq!(LogLine::parse("[1]").unwrap_err().error.code, ErrorCode::InvalidEvent);
        assert_eq!(LogLine::parse("{}").unwrap_err().error.code, ErrorCode::InvalidEvent);
        let bad = LogLine::parse(r#"{"call": "get_scenario", "args": {}}"#).unwrap_err();
        assert_eq!((bad.call.as_deref(), bad.error.code), (Some("get_scenario"), ErrorCode::InvalidRequest));
        let bad = LogLine::parse(r#"{"call": "get_scenario", "args": 5}"#).unwrap_err();
        assert_eq!(bad.error.message, "field `args`: expected an object");
    }

    /// A message line as written reads straight into the event it was written from, as the general way reads
    /// it; other lines are left to the general way.
    #[test]
    fn a_message_line_reads_the_same_either_way() {
        let general = |line: &str| match LogLine::from_value(read_json(line).unwrap()).unwrap() {
            LogLine::Event(EventLine::Raw(v)) => chatctx_core::Event::decode(&v).unwrap(),
            other => panic!("{other:?}"),
        };
        let parsed = |line: &str| match LogLine::parse(line).unwrap() {
            LogLine::Event(EventLine::Decoded(e)) => e.into_owned(),
            LogLine::Event(EventLine::Raw(v)) => chatctx_core::Event::decode(&v).unwrap(),
            other => panic!("{other:?}"),
        };
        let message = serde_json::json!({"type": "message", "chat_id": "-5", "message_id": "1", "kind": "inbound_user",
            "sent_at": 1_770_000_000, "sender": {"user_id": "1", "username": "ann"}, "topic_id": "7",
            "text": "a \"quoted\" {brace}\n@ann", "entities": [{"type": "mention", "offset": 19, "length": 4}]});
        let event = chatctx_core::Event::decode(&message).unwrap();
        let line = LogLine::event(&event).to_line().unwrap();
        assert_eq!(read_message(&line).as_ref(), Some(&event));
        assert_eq!(general(&line), event);
        assert_eq!(parsed(&line), event);
        // A name past the bound fresh input keeps (an older log's) loads, the general way.
        let mut long = message.clone();
        long["sender"]["first_name"] = serde_json::json!("x".repeat(2_000));
        let long = chatctx_core::Event::decode(&long).unwrap();
        let line = LogLine::event(&long).to_line().unwrap();
        assert_eq!(read_message(&line), None, "left to the general way");
        assert_eq!(general(&line), long);
        assert_eq!(parsed(&line), long);
        for other in [r#"{"event":{"type":"message"},"x":1}"#, r#"{"forget":true}"#, "{\"event\":"] {
            assert_eq!(read_message(other), None, "{other}");
        }
    }
}
