//! A chat's stored items as answers show them: owned [`ChatHistoryItem`]s (range reads, single messages) and
//! a `get_chat_history_context` answer's [`HistoryItems`].

use super::{Chat, Item};
use crate::history::block::Builder;
use crate::history::{ChatHistoryItem, HistoryItems, HistoryQuote};
use crate::render::ELLIPSIS;

impl Chat {
    /// The history item view of a stored item.
    pub(crate) fn view(&self, channel: &str, chat_id: &str, item: &Item) -> ChatHistoryItem {
        ChatHistoryItem {
            channel: channel.to_owned(),
            kind: item.kind,
            chat_id: chat_id.to_owned(),
            topic_id: None,
            chat_type: self.chat_type.as_deref().map(str::to_owned),
            message_id: item.message_id.as_deref().map(str::to_owned),
            reply_to_message_id: item.reply_to.as_deref().map(str::to_owned),
            sent_at: item.sent_at,
            sender: self.people.sender(item.sender),
            text: item.text.to_string(),
            quote: item
                .extra
                .as_ref()
                .and_then(|x| x.quote.as_ref())
                .map(|q| HistoryQuote::new(q.0.to_string(), q.1.to_string())),
            actions: item.extra.as_ref().map(|x| x.actions.clone()).unwrap_or_default(),
        }
    }

    /// The stored `items` of `chat` as an answer's items; a bot reply longer than `cut` characters is cut, with
    /// an ellipsis.
    pub(crate) fn history_items(&self, channel: &str, chat_id: &str, items: &[&Item], cut: usize) -> HistoryItems {
        let mut b = Builder::with_capacity(items.len(), items.iter().map(|i| i.text.len() + 48).sum());
        let chat_at = (b.str(channel), b.str(chat_id), self.chat_type.as_deref().map(|t| b.str(t)));
        for i in items {
            let sender = b.sender(i.sender, || self.people.sender_view(i.sender));
            let extra = i.extra.as_deref();
            let text = |out: &mut String| match i.reply_cut(cut) {
                Some(at) => {
                    out.push_str(&i.text[..at]);
                    out.push_str(ELLIPSIS);
                }
                None => out.push_str(&i.text),
            };
            b.push(
                chat_at,
                i.kind,
                (i.message_id.as_deref(), i.reply_to.as_deref()),
                i.sent_at,
                sender,
                text,
                extra.and_then(|x| x.quote.as_ref()).map(|q| (&*q.0, &*q.1)),
                extra.map_or(&[], |x| &x.actions),
            );
        }
        b.finish()
    }
}
