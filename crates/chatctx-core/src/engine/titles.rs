//! Titles of chats and topics (`title` events, docs/protocol.md §3.12): the engine's side.

use super::Engine;
use crate::event::TitleEvent;

impl Engine {
    /// Whether a `title` event would change anything (an unchanged one need not be logged: a Telegram group's
    /// title comes with every message).
    pub fn title_changes(&self, t: &TitleEvent) -> bool {
        self.chat(&t.channel, &t.chat_id).is_none_or(|c| c.title_of(t.topic_id.as_deref()) != Some(t.title.as_str()))
    }

    /// The title of a chat (`topic` `None`) or of one of its topics, if known.
    pub fn title_of(&self, channel: &str, chat_id: &str, topic: Option<&str>) -> Option<&str> {
        self.chat(channel, chat_id)?.title_of(topic)
    }

    pub(super) fn apply_title(&mut self, t: TitleEvent) {
        let (settings, chat) = self.with_chat(&t.channel, &t.chat_id);
        let max_topics = settings.conversation.max_topics;
        chat.set_title(t.topic_id.as_deref(), &t.title, max_topics);
    }
}
