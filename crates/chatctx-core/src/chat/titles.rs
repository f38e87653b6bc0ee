//! The names people see for a chat and its topics (`title` events, docs/protocol.md §3.12). Kept for readers (the
//! chat list, the console); no answer a tool gives depends on them.

use super::Chat;

impl Chat {
    /// The title of the chat (`topic` `None`) or of one of its topics, if known.
    pub(crate) fn title_of(&self, topic: Option<&str>) -> Option<&str> {
        match topic {
            None => self.title.as_deref(),
            Some(_) => self.conv_of(topic).and_then(|c| c.title.as_deref()),
        }
    }

    /// Gives the chat, or its topic `topic` (made on first use, within `max_topics`), the title `title`.
    pub(crate) fn set_title(&mut self, topic: Option<&str>, title: &str, max_topics: usize) {
        if self.title_of(topic) == Some(title) {
            return;
        }
        match topic {
            None => self.title = Some(title.into()),
            Some(_) => {
                let conv = self.conv_for(topic, max_topics);
                self.convs[conv as usize].title = Some(title.into());
            }
        }
    }

    /// Every topic's title, by topic id, sorted.
    pub(crate) fn topic_titles(&self) -> std::collections::BTreeMap<String, String> {
        self.convs
            .iter()
            .filter_map(|c| Some((c.topic.as_deref()?.to_owned(), c.title.as_deref()?.to_owned())))
            .collect()
    }
}
