//! Events, the input of chatctx (docs/protocol.md §3), with their validation.
//!
//! Events are decoded from untrusted JSON by [`Event::decode`]; every rejection is `invalid_event` (or
//! `unsupported_event` for an unknown `type`) naming the field. A decoded event is valid by construction,
//! so applying it cannot fail halfway. Events serialize back to the same JSON shape (the importer and the
//! Telegram mapping write them out).
//!
//! The event types by kind: `message` (with its sender, entities, quote, attachments), `reaction`, and
//! `object` (with `activation`); all are re-exported here.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode};
use crate::json::{Fields, object};
use crate::time::Timestamp;

mod bounds;
mod delete;
mod direct;
mod fit;
mod line;
mod message;
mod object;
mod person;
mod reaction;
mod thread;
mod title;

pub use bounds::{MAX_LABEL_BYTES, MAX_LIST_ITEMS, MAX_NAME_BYTES, check_fresh};
pub use delete::{DeleteEvent, MAX_DELETED};
pub use direct::{fresh_message, fresh_message_str, fresh_message_value};
pub use fit::CUT_MARKER;
pub use line::write_message_json;
pub use message::{Attachment, Entity, EntityKind, FileRef, MessageEvent, MessageKind, Person, Quote};
pub use object::{ActivationEvent, ObjectEvent, ObjectOp, ObjectRef, ObjectSpec};
pub use person::PersonEvent;
pub use reaction::{Direction, ReactionEvent};
pub use thread::ThreadEvent;
pub use title::TitleEvent;

/// The default `channel`.
pub use crate::kinds::DEFAULT_CHANNEL;

/// One input event. Events are applied as soon as they are decoded, never held in bulk, so the message
/// variant is not boxed (that would cost an allocation per message on the hot path).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A message (docs/protocol.md §3.1).
    Message(MessageEvent),
    /// A reaction (docs/protocol.md §3.2).
    Reaction(ReactionEvent),
    /// A typed object registered, closed or deleted (docs/protocol.md §3.3).
    Object(ObjectEvent),
    /// An activation of a known object (docs/protocol.md §3.4).
    Activation(ActivationEvent),
    /// Messages deleted on the platform (docs/protocol.md §3.7).
    Delete(DeleteEvent),
    /// A platform thread that is a topic of a parent chat (docs/protocol.md §3.8).
    Thread(ThreadEvent),
    /// A person of a workspace, for its people directory (docs/protocol.md §3.11).
    Person(PersonEvent),
    /// The title of a chat or of one of its topics (docs/protocol.md §3.12).
    Title(TitleEvent),
}

impl Event {
    /// The `type` of a raw event, or the error for a missing or non-string one.
    pub fn type_of(v: &Value) -> Result<&str, Error> {
        let map = object(v, "an event", EV)?;
        Fields::new(map, "", EV).str("type")?.ok_or_else(|| Error::invalid_event("field `type`: is required"))
    }

    /// Decodes one event of docs/protocol.md §3.1–3.4. `telegram_update` is not decoded here: it is mapped by the
    /// Telegram crate into these events.
    pub fn decode(v: &Value) -> Result<Self, Error> {
        let map = object(v, "an event", EV)?;
        let f = Fields::new(map, "", EV);
        match Self::type_of(v)? {
            "message" => MessageEvent::decode(f).map(Event::Message),
            "reaction" => ReactionEvent::decode(f).map(Event::Reaction),
            "object" => ObjectEvent::decode(f).map(Event::Object),
            "activation" => ActivationEvent::decode(f).map(Event::Activation),
            "delete" => DeleteEvent::decode(f).map(Event::Delete),
            "thread" => ThreadEvent::decode(f).map(Event::Thread),
            "person" => PersonEvent::decode(f).map(Event::Person),
            "title" => TitleEvent::decode(f).map(Event::Title),
            other => Err(Error::new(
                ErrorCode::UnsupportedEvent,
                format!(
                    "unsupported event type {other:?}; expected message, reaction, object, activation, delete, \
                     thread, person, title, telegram_update, discord_event, slack_event or slack_users"
                ),
            )),
        }
    }

    /// When the event happened.
    pub fn time(&self) -> Timestamp {
        match self {
            Event::Message(m) => m.sent_at,
            Event::Reaction(r) => r.sent_at,
            Event::Object(o) => o.at,
            Event::Activation(a) => a.at,
            Event::Delete(d) => d.at.unwrap_or_default(),
            Event::Thread(_) | Event::Person(_) | Event::Title(_) => Timestamp::default(),
        }
    }

    /// The platform id an activation names instead of a chat and object (a Telegram `poll_answer`).
    pub fn external_target(&self) -> Option<&str> {
        match self {
            Event::Activation(ActivationEvent { target: ObjectRef::External { external_id }, .. }) => Some(external_id),
            _ => None,
        }
    }

    /// The platform ids of the objects this event carries (a Telegram poll).
    pub fn external_ids(&self) -> impl Iterator<Item = &str> {
        let attachments = match self {
            Event::Message(m) => m.attachments.as_slice(),
            _ => &[],
        };
        attachments.iter().filter_map(|a| a.external_id.as_deref())
    }

    /// The `(channel, chat_id)` this event writes to, when it names one.
    pub fn chat(&self) -> Option<(&str, &str)> {
        match self {
            Event::Message(m) => Some((&m.channel, &m.chat_id)),
            Event::Reaction(r) => Some((&r.channel, &r.chat_id)),
            Event::Object(o) => Some((&o.channel, &o.object.chat_id)),
            Event::Activation(a) => match &a.target {
                ObjectRef::Id { chat_id, .. } => Some((&a.channel, chat_id)),
                ObjectRef::External { .. } => None,
            },
            Event::Delete(d) => Some((&d.channel, &d.chat_id)),
            Event::Thread(t) => Some((&t.channel, &t.chat_id)),
            Event::Title(t) => Some((&t.channel, &t.chat_id)),
            // A person belongs to a workspace's directory, not to a chat (see [`Event::directory`]).
            Event::Person(_) => None,
        }
    }
}

impl Event {
    /// The `(channel, workspace)` directory a `person` event writes to, once its workspace is filled in.
    pub fn directory(&self) -> Option<(&str, &str)> {
        match self {
            Event::Person(p) => Some((&p.channel, p.workspace())),
            _ => None,
        }
    }
}

/// The error code of every event rejection but an unknown type.
pub(crate) const EV: ErrorCode = ErrorCode::InvalidEvent;

pub(crate) fn limited(f: &Fields<'_>, key: &str, s: &str, max: usize) -> Result<(), Error> {
    if s.len() > max { Err(f.err(key, &format!("longer than {max} bytes"))) } else { Ok(()) }
}

/// The longest message text chatctx accepts (Telegram's own limit is 4096 characters).
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::kinds::{ObjectKind, Origin};

    fn spec_message() -> Value {
        json!({"type": "message", "channel": "telegram", "chat_id": "-100500", "chat_type": "supergroup",
         "topic_id": "7", "message_id": "501", "reply_to_message_id": "500",
         "kind": "inbound_user", "sent_at": "2026-02-13T08:20:10Z",
         "sender": {"user_id": "42", "username": "alice", "display_name": "Alice A.", "first_name": "Alice",
                    "last_name": "A.", "is_bot": false},
         "text": "@bob look at this https://example.org/a",
         "entities": [{"type": "mention", "offset": 0, "length": 4},
                      {"type": "url", "offset": 18, "length": 21}],
         "quote": {"sender": {"user_id": "43", "username": "carol", "first_name": "Carol"}, "text": "I will add details tomorrow."},
         "attachments": [{"kind": "media.image", "label": "cat.jpg"}],
         "origin": "interactive", "triggered_agent": true, "actions": []})
    }

    fn err_of(v: Value) -> Error {
        Event::decode(&v).expect_err("should be rejected")
    }

    #[test]
    fn decodes_the_spec_example() {
        let Event::Message(m) = Event::decode(&spec_message()).unwrap() else { panic!("not a message") };
        assert_eq!(m.chat_id, "-100500");
        assert_eq!(m.topic_id.as_deref(), Some("7"));
        assert_eq!(m.entities.len(), 2);
        assert_eq!(m.attachments[0].kind, ObjectKind::MediaImage);
        assert_eq!(m.quote.as_ref().and_then(|q| q.sender.as_ref()).and_then(|s| s.username.as_deref()), Some("carol"));
        assert!(m.triggered_agent);
    }

    #[test]
    fn numeric_ids_are_stringified_and_unix_times_accepted() {
        let mut v = spec_message();
        v["chat_id"] = json!(-1001234567890i64);
        v["message_id"] = json!(501);
        v["sent_at"] = json!(1_770_970_810);
        let Event::Message(m) = Event::decode(&v).unwrap() else { panic!() };
        assert_eq!(m.chat_id, "-1001234567890");
        assert_eq!(m.message_id, "501");
        assert_eq!(m.sent_at.to_rfc3339(), "2026-02-13T08:20:10Z");
    }

    #[test]
    fn every_required_field_is_named_when_missing() {
        for field in ["chat_id", "message_id", "kind", "sent_at", "sender"] {
            let mut v = spec_message();
            v.as_object_mut().unwrap().remove(field);
            let e = err_of(v);
            assert_eq!(e.code, ErrorCode::InvalidEvent);
            assert!(e.message.contains(&format!("`{field}`")), "{field}: {}", e.message);
        }
        let mut v = spec_message();
        v["sender"].as_object_mut().unwrap().remove("user_id");
        assert!(err_of(v).message.contains("`sender.user_id`"));
    }

    #[test]
    fn wrong_types_name_the_field() {
        let cases = [
            ("sent_at", json!("yesterday"), "`sent_at`"),
            ("chat_id", json!(1.5), "`chat_id`"),
            ("chat_id", json!(""), "`chat_id`"),
            ("kind", json!("outbound"), "`kind`"),
            ("entities", json!([{"type": "mention", "offset": -1, "length": 4}]), "`entities[0].offset`"),
            ("attachments", json!([{"kind": "media.gif"}]), "`attachments[0].kind`"),
            ("triggered_agent", json!("yes"), "`triggered_agent`"),
            ("origin", json!("cron"), "`origin`"),
        ];
        for (field, value, named) in cases {
            let mut v = spec_message();
            v[field] = value;
            let e = err_of(v);
            assert!(e.message.contains(named), "{field}: {}", e.message);
        }
    }

    #[test]
    fn system_messages_need_no_sender_and_defaults_apply() {
        let v = json!({"type": "message", "chat_id": 1, "message_id": 2, "kind": "system", "sent_at": 0});
        let Event::Message(m) = Event::decode(&v).unwrap() else { panic!() };
        assert_eq!(m.channel, "telegram");
        assert!(!m.triggered_agent);
        assert_eq!(m.origin, Origin::Interactive);
        let v = json!({"type": "message", "chat_id": 1, "message_id": 2, "kind": "outbound_agent", "sent_at": 0,
                       "sender": {"user_id": 9}});
        let Event::Message(m) = Event::decode(&v).unwrap() else { panic!() };
        assert!(m.triggered_agent, "outbound defaults to triggered");
    }

    #[test]
    fn unknown_types_and_fields() {
        assert_eq!(err_of(json!({"type": "typing", "chat_id": 1})).code, ErrorCode::UnsupportedEvent);
        assert_eq!(err_of(json!({"chat_id": 1})).code, ErrorCode::InvalidEvent);
        assert_eq!(err_of(json!([1, 2])).code, ErrorCode::InvalidEvent);
        let mut v = spec_message();
        v["some_future_field"] = json!({"x": 1});
        assert!(Event::decode(&v).is_ok(), "unknown fields are ignored");
    }

    #[test]
    fn other_event_types_decode() {
        let r = json!({"type": "reaction", "chat_id": "-100500", "topic_id": "7", "message_id": "501", "direction": "inbound",
         "sender": {"user_id": "43", "username": "carol"}, "emoji": ["👍"], "sent_at": "2026-02-13T08:21:00Z"});
        assert!(matches!(Event::decode(&r), Ok(Event::Reaction(_))));
        let o = json!({"type": "object", "op": "upsert", "at": "2026-02-13T08:20:15Z",
         "object": {"object_id": "rem-9", "kind": "reminder", "chat_id": "-100500", "topic_id": "7",
                    "source_message_id": "502", "title_or_label": "Call mom at 18:00",
                    "created_by_user_id": "42", "created_by_bot": true},
         "activation": "created"});
        assert!(matches!(Event::decode(&o), Ok(Event::Object(_))));
        let a = json!({"type": "activation", "chat_id": "-100500", "object_id": "rem-9", "event": "listed",
         "at": "2026-02-13T09:00:00Z", "by_user_id": "42", "message_id": "530"});
        assert!(matches!(Event::decode(&a), Ok(Event::Activation(_))));
        let mut bad = a.clone();
        bad["event"] = json!("mentioned");
        assert!(err_of(bad).message.contains("`event`"));
        let mut bad = o.clone();
        bad["object"]["kind"] = json!("meme");
        assert!(err_of(bad).message.contains("`object.kind`"));
    }

    #[test]
    fn events_round_trip_through_json() {
        let activation = json!({"type": "activation", "chat_id": "-100500", "object_id": "rem-9", "event": "listed",
         "at": "2026-02-13T09:00:00Z", "by_user_id": "42", "message_id": "530"});
        let external = json!({"type": "activation", "external_id": "poll-7", "event": "voted", "at": 1_770_000_000, "close": true});
        for v in [spec_message(), activation, external] {
            let e = Event::decode(&v).unwrap();
            assert_eq!(Event::decode(&serde_json::to_value(&e).unwrap()).unwrap(), e);
        }
    }
}
