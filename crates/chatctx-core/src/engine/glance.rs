//! A glance at what a decision record names, for the people reading it (the console): who wrote a message or
//! posted an object, and its first words, as the store holds them now. Read when a record is shown, never while
//! answering, so keeping records costs a tool call nothing more.

use schemars::JsonSchema;
use serde::Serialize;

use super::Engine;
use super::carry::message_candidate;
use crate::chat::Chat;
use crate::render::excerpt;

/// How many characters of text a glance shows.
pub const GLANCE_CHARS: usize = 120;

/// Who and a few words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Glance {
    /// The author's name, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub who: Option<String>,
    /// The first words (at most 120 characters, `…` when cut).
    pub text: String,
    /// The topic it is in, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
}

impl Engine {
    /// A glance at stored message `message_id`, if it is held.
    pub fn glance_message(&self, channel: &str, chat_id: &str, message_id: &str) -> Option<Glance> {
        glance_message(self.chat(channel, chat_id)?, message_id)
    }

    /// A glance at an object (or a message candidate, `{message_id}:{kind}`), if it is held: its label, caption or
    /// source message's words, and who posted it (the source message's speaker, else its creator as the chat knows
    /// them).
    pub fn glance_object(&self, channel: &str, chat_id: &str, object_id: &str) -> Option<Glance> {
        let chat = self.chat(channel, chat_id)?;
        let candidate;
        let o = match chat.objects.get(object_id) {
            Some(o) => o,
            None => {
                candidate = message_candidate(chat, object_id)?;
                &candidate
            }
        };
        let source = o.source_message_id.as_deref().and_then(|m| glance_message(chat, m));
        let text = o.title_or_label.as_deref().or(o.caption.as_deref()).map(|t| excerpt(t, GLANCE_CHARS));
        let creator =
            || chat.people.known(&format!("#{}", o.created_by_user_id.as_deref()?)).map(|k| k.nickname.into_owned());
        Some(Glance {
            who: source.as_ref().and_then(|s| s.who.clone()).or_else(creator),
            text: text.or_else(|| source.map(|s| s.text)).unwrap_or_default(),
            topic_id: o.topic_id.as_deref().map(str::to_owned),
        })
    }
}

fn glance_message(chat: &Chat, message_id: &str) -> Option<Glance> {
    let (conv, item) = chat.message(message_id)?;
    Some(Glance {
        who: Some(chat.people.nickname(item.sender).to_owned()),
        text: excerpt(&item.text, GLANCE_CHARS),
        topic_id: conv.topic.as_deref().map(str::to_owned),
    })
}
