//! Where a conversation's summary sits in its chat, and which items it covers.

use super::{Chat, Conv, Item, Key};
use crate::settings::Scope;
use crate::summary::Summary;

/// The conversations of a scope: the topic's, or all of the chat's.
pub(crate) fn in_scope<'c>(chat: &'c Chat, scope: Scope, topic: Option<&str>) -> &'c [Conv] {
    match scope {
        Scope::Topic => chat.conv_of(topic).map_or(&[], std::slice::from_ref),
        Scope::Chat => &chat.convs,
    }
}

impl Chat {
    /// Where a summary's coverage ends: its message's position while the message is stored, else the end of
    /// the second it was sent in.
    pub(crate) fn summary_floor(&self, s: &Summary) -> Key {
        match self.message(&s.covers_until_message_id) {
            Some((_, item)) => item.key(),
            None => (s.covers_until_at, u64::MAX),
        }
    }

    /// The summary of the conversation `topic` belongs to, under `scope`.
    pub(crate) fn summary(&self, scope: Scope, topic: Option<&str>) -> Option<&Summary> {
        self.summaries.get(&slot(scope, topic))
    }

    /// The items of the conversation, oldest first, after `floor` (all without one).
    pub(crate) fn items_after(&self, scope: Scope, topic: Option<&str>, floor: Option<Key>) -> Vec<&Item> {
        let mut items: Vec<&Item> = in_scope(self, scope, topic).iter().flat_map(|c| c.after(floor)).collect();
        if scope == Scope::Chat {
            items.sort_by_key(|i| i.key());
        }
        items
    }
}

/// The slot key of `topic`'s conversation: the topic when history is per topic, else the chat's.
pub(crate) fn slot(scope: Scope, topic: Option<&str>) -> Option<String> {
    match scope {
        Scope::Topic => topic.map(str::to_owned),
        Scope::Chat => None,
    }
}
