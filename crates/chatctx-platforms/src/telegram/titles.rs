//! The titles a Telegram message tells (docs/protocol.md §3.12): its chat's `title`, and the name of its forum
//! topic from a `forum_topic_created` / `forum_topic_edited` service message, also as the `reply_to_message` every
//! message of a topic carries when it replies to nothing else. Best effort: a title of another type is skipped.

use chatctx_core::Event;
use chatctx_core::json::id_of;
use serde_json::{Map, Value};

use super::CHANNEL;
use crate::title;

/// The titles message `m` tells, chat first.
pub(super) fn of(m: &Map<String, Value>) -> Vec<Event> {
    let Some(chat) = m.get("chat").and_then(Value::as_object) else { return Vec::new() };
    let Some(chat_id) = chat.get("id").and_then(id_of) else { return Vec::new() };
    let mut out: Vec<Event> = title(CHANNEL, chat_id.clone(), None, chat.get("title")).into_iter().collect();
    let topic = (m.get("is_topic_message").and_then(Value::as_bool) == Some(true))
        .then(|| m.get("message_thread_id").and_then(id_of))
        .flatten();
    if let Some(topic) = topic {
        let name = |msg: &Map<String, Value>| {
            ["forum_topic_edited", "forum_topic_created"].iter().find_map(|k| msg.get(*k)?.get("name").cloned())
        };
        let reply = m.get("reply_to_message").and_then(Value::as_object);
        // The message's own service part first: a rename is newer than the topic's creation it replies to.
        out.extend(title(CHANNEL, chat_id, Some(topic), name(m).or_else(|| reply.and_then(name)).as_ref()));
    }
    out
}
