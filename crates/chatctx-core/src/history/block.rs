//! [`HistoryItems`]: the items of one `get_chat_history_context` answer, stored once for the answer's
//! `items` and its rendered `single` payload (issue 32, point 1).
//!
//! Every string of the answer is written one after another into a single buffer, and each item keeps where
//! its strings are; a speaker's fields are written once per answer, however many items they spoke. So an
//! answer costs one buffer and one small record per item, instead of ten or so strings per item for `items`
//! and four more for the payload; the payload shares the block (one reference count). Items are read as
//! borrowed [`ItemView`]s, which serialize exactly as [`ChatHistoryItem`] does (and the payload's
//! `PayloadView`s, in `crate::render`, as its `PayloadMessage`), so the wire and the schemas do not change;
//! tests hold both.

use std::sync::Arc;

use serde::{Serialize, Serializer};

use super::{ChatHistoryItem, HistoryQuote, Sender};
use crate::kinds::ItemKind;
use crate::time::Timestamp;

/// Where a string is in the block's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct At {
    start: usize,
    end: usize,
}

/// A speaker, written once per answer.
#[derive(Debug, PartialEq, Eq)]
struct SenderAt {
    user_id: At,
    username: Option<At>,
    nickname: At,
    is_bot: bool,
    display_ref: At,
}

/// One item: its own values, and where its strings are.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    channel: At,
    kind: ItemKind,
    chat_id: At,
    topic_id: Option<At>,
    chat_type: Option<At>,
    message_id: Option<At>,
    reply_to: Option<At>,
    sent_at: Timestamp,
    sender: usize,
    text: At,
    /// `(sender_ref, text, markdown_block)`.
    quote: Option<(At, At, At)>,
    actions: Vec<String>,
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Block {
    strings: String,
    senders: Vec<SenderAt>,
    entries: Vec<Entry>,
}

impl Block {
    fn str(&self, at: At) -> &str {
        self.strings.get(at.start..at.end).unwrap_or_default()
    }

    fn view<'a>(&'a self, e: &'a Entry) -> ItemView<'a> {
        let s = |at: At| self.str(at);
        let sender = self.senders.get(e.sender).map_or(SenderView::UNKNOWN, |p| SenderView {
            user_id: s(p.user_id),
            username: p.username.map(s),
            nickname: s(p.nickname),
            is_bot: p.is_bot,
            display_ref: s(p.display_ref),
        });
        ItemView {
            channel: s(e.channel),
            kind: e.kind,
            chat_id: s(e.chat_id),
            topic_id: e.topic_id.map(s),
            chat_type: e.chat_type.map(s),
            message_id: e.message_id.map(s),
            reply_to_message_id: e.reply_to.map(s),
            sent_at: e.sent_at,
            sender,
            text: s(e.text),
            quote: e.quote.map(|(r, t, m)| QuoteView { sender_ref: s(r), text: s(t), markdown_block: s(m) }),
            actions: &e.actions,
        }
    }
}

/// The items of one answer, oldest first (see the module's documentation). Cheap to clone: the block is
/// shared.
#[derive(Clone, Default)]
pub struct HistoryItems(Arc<Block>);

impl HistoryItems {
    /// How many items.
    pub fn len(&self) -> usize {
        self.0.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.entries.is_empty()
    }

    /// The item at `i`.
    pub fn get(&self, i: usize) -> Option<ItemView<'_>> {
        self.0.entries.get(i).map(|e| self.0.view(e))
    }

    /// The first item.
    pub fn first(&self) -> Option<ItemView<'_>> {
        self.get(0)
    }

    /// The last item.
    pub fn last(&self) -> Option<ItemView<'_>> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The items, oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = ItemView<'_>> + '_ {
        self.0.entries.iter().map(|e| self.0.view(e))
    }

    /// The items as owned [`ChatHistoryItem`]s.
    pub fn to_vec(&self) -> Vec<ChatHistoryItem> {
        self.iter().map(|v| v.to_owned()).collect()
    }

    /// The same items, stored in a block.
    pub fn from_items(items: &[ChatHistoryItem]) -> Self {
        let mut b = Builder::with_capacity(items.len(), items.iter().map(|i| i.text.len() + 64).sum());
        for i in items {
            let sender = b.sender_owned(&i.sender);
            let channel = b.str(&i.channel);
            let chat_id = b.str(&i.chat_id);
            let topic_id = i.topic_id.as_deref().map(|t| b.str(t));
            let chat_type = i.chat_type.as_deref().map(|t| b.str(t));
            let message_id = i.message_id.as_deref().map(|m| b.str(m));
            let reply_to = i.reply_to_message_id.as_deref().map(|m| b.str(m));
            let text = b.str(&i.text);
            let quote = i.quote.as_ref().map(|q| (b.str(&q.sender_ref), b.str(&q.text), b.str(&q.markdown_block)));
            b.block.entries.push(Entry {
                channel,
                kind: i.kind,
                chat_id,
                topic_id,
                chat_type,
                message_id,
                reply_to,
                sent_at: i.sent_at,
                sender,
                text,
                quote,
                actions: i.actions.clone(),
            });
        }
        b.finish()
    }
}

impl PartialEq for HistoryItems {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.iter().eq(other.iter())
    }
}

impl Eq for HistoryItems {}

impl std::fmt::Debug for HistoryItems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for HistoryItems {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

crate::wire::schema_as!(HistoryItems => Vec<ChatHistoryItem>);

/// Writes a [`HistoryItems`] block: strings once each, speakers once per answer.
pub(crate) struct Builder {
    block: Block,
    /// Per speaker written: the caller's key for it (a chat's profile index), parallel to `block.senders`.
    sender_keys: Vec<u32>,
    /// The same keys by value, once there are more than [`SCAN_SENDERS`] (a long history of a busy channel).
    sender_map: Option<hashbrown::HashMap<u32, usize>>,
}

/// Up to this many speakers, a speaker is found by scanning `sender_keys`.
const SCAN_SENDERS: usize = 16;

/// Where a speaker's key is unknown (owned items): never matched.
const NO_KEY: u32 = u32::MAX;

impl Builder {
    /// A builder for `items` items whose strings take about `bytes`.
    pub(crate) fn with_capacity(items: usize, bytes: usize) -> Self {
        let block =
            Block { strings: String::with_capacity(bytes), senders: Vec::new(), entries: Vec::with_capacity(items) };
        Self { block, sender_keys: Vec::new(), sender_map: None }
    }

    /// Writes `s`; where it is.
    pub(crate) fn str(&mut self, s: &str) -> At {
        let start = self.block.strings.len();
        self.block.strings.push_str(s);
        At { start, end: self.block.strings.len() }
    }

    /// Writes what `write` appends; where it is.
    fn written(&mut self, write: impl FnOnce(&mut String)) -> At {
        let start = self.block.strings.len();
        write(&mut self.block.strings);
        At { start, end: self.block.strings.len() }
    }

    /// The speaker known to the caller as `key` (a chat's profile index), written the first time it is asked
    /// for.
    pub(crate) fn sender<'v>(&mut self, key: u32, view: impl FnOnce() -> SenderView<'v>) -> usize {
        // Few speakers per answer: a scan of a compact array beats hashing, until there are many.
        let known = match &self.sender_map {
            Some(map) => map.get(&key).copied(),
            None => self.sender_keys.iter().position(|&k| k == key),
        };
        if let Some(at) = known {
            return at;
        }
        let at = self.push_sender(key, &view());
        if let Some(map) = &mut self.sender_map {
            map.insert(key, at);
        } else if self.sender_keys.len() > SCAN_SENDERS {
            self.sender_map = Some(self.sender_keys.iter().enumerate().map(|(at, &k)| (k, at)).collect());
        }
        at
    }

    fn sender_owned(&mut self, s: &Sender) -> usize {
        let view = SenderView {
            user_id: &s.user_id,
            username: s.username.as_deref(),
            nickname: &s.nickname,
            is_bot: s.is_bot,
            display_ref: &s.display_ref,
        };
        self.push_sender(NO_KEY, &view)
    }

    fn push_sender(&mut self, key: u32, v: &SenderView<'_>) -> usize {
        let p = SenderAt {
            user_id: self.str(v.user_id),
            username: v.username.map(|u| self.str(u)),
            nickname: self.str(v.nickname),
            is_bot: v.is_bot,
            display_ref: self.str(v.display_ref),
        };
        self.block.senders.push(p);
        self.sender_keys.push(key);
        self.block.senders.len() - 1
    }

    /// Adds an item of a chat: `channel`, `chat_id` and `chat_type` as written once by the caller, its text
    /// written by `text` (a cut reply with its ellipsis), its quote as `(sender_ref, text)`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push(
        &mut self,
        (channel, chat_id, chat_type): (At, At, Option<At>),
        kind: ItemKind,
        (message_id, reply_to): (Option<&str>, Option<&str>),
        sent_at: Timestamp,
        sender: usize,
        text: impl FnOnce(&mut String),
        quote: Option<(&str, &str)>,
        actions: &[String],
    ) {
        let message_id = message_id.map(|m| self.str(m));
        let reply_to = reply_to.map(|m| self.str(m));
        let text = self.written(text);
        let quote = quote.map(|(r, t)| {
            let (r_at, t_at) = (self.str(r), self.str(t));
            (r_at, t_at, self.written(|out| super::push_markdown_block(out, r, t)))
        });
        self.block.entries.push(Entry {
            channel,
            kind,
            chat_id,
            topic_id: None,
            chat_type,
            message_id,
            reply_to,
            sent_at,
            sender,
            text,
            quote,
            actions: actions.to_vec(),
        });
    }

    pub(crate) fn finish(self) -> HistoryItems {
        HistoryItems(Arc::new(self.block))
    }
}

/// One item of [`HistoryItems`], borrowed; serialized exactly as the [`ChatHistoryItem`] it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ItemView<'a> {
    /// Platform.
    pub channel: &'a str,
    /// Who produced it.
    pub kind: ItemKind,
    /// The chat.
    pub chat_id: &'a str,
    /// The forum topic (range reads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<&'a str>,
    /// `private`, `group`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_type: Option<&'a str>,
    /// The message id (absent for reactions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<&'a str>,
    /// The message replied or reacted to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_message_id: Option<&'a str>,
    /// When, UTC.
    pub sent_at: Timestamp,
    /// The speaker.
    pub sender: SenderView<'a>,
    /// The text, mentions normalized.
    pub text: &'a str,
    /// A quoted passage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<QuoteView<'a>>,
    /// On the bot's items: the tools it used (not serialized).
    #[serde(skip)]
    pub actions: &'a [String],
}

/// The speaker of an [`ItemView`] ([`Sender`], borrowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SenderView<'a> {
    /// Platform user id.
    pub user_id: &'a str,
    /// Username without `@`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<&'a str>,
    /// Display name.
    pub nickname: &'a str,
    /// Whether a bot spoke.
    pub is_bot: bool,
    /// `[nickname](tg:@username)`.
    pub display_ref: &'a str,
}

impl SenderView<'static> {
    /// A speaker the chat has no profile for.
    pub(crate) const UNKNOWN: Self =
        SenderView { user_id: "", username: None, nickname: "unknown", is_bot: false, display_ref: "unknown" };
}

impl SenderView<'_> {
    /// The owned [`Sender`].
    pub fn to_owned(&self) -> Sender {
        Sender {
            user_id: self.user_id.to_owned(),
            username: self.username.map(str::to_owned),
            nickname: self.nickname.to_owned(),
            is_bot: self.is_bot,
            display_ref: self.display_ref.to_owned(),
        }
    }
}

/// The quote of an [`ItemView`] ([`HistoryQuote`], borrowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QuoteView<'a> {
    /// The quoted author's reference.
    pub sender_ref: &'a str,
    /// The quoted text.
    pub text: &'a str,
    /// The quote as a Markdown block quote.
    pub markdown_block: &'a str,
}

impl ItemView<'_> {
    /// The owned [`ChatHistoryItem`].
    pub fn to_owned(&self) -> ChatHistoryItem {
        ChatHistoryItem {
            channel: self.channel.to_owned(),
            kind: self.kind,
            chat_id: self.chat_id.to_owned(),
            topic_id: self.topic_id.map(str::to_owned),
            chat_type: self.chat_type.map(str::to_owned),
            message_id: self.message_id.map(str::to_owned),
            reply_to_message_id: self.reply_to_message_id.map(str::to_owned),
            sent_at: self.sent_at,
            sender: self.sender.to_owned(),
            text: self.text.to_owned(),
            quote: self.quote.map(|q| HistoryQuote {
                sender_ref: q.sender_ref.to_owned(),
                text: q.text.to_owned(),
                markdown_block: q.markdown_block.to_owned(),
            }),
            actions: self.actions.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_speaker_is_written_once_however_many_there_are() {
        let mut b = Builder::with_capacity(0, 0);
        let names: Vec<String> = (0..100).map(|i| format!("user {i}")).collect();
        let view = |i: usize| SenderView {
            user_id: &names[i],
            username: None,
            nickname: &names[i],
            is_bot: false,
            display_ref: &names[i],
        };
        // Keys in a scattered order, each asked for several times, past the point where the scan gives way.
        let order: Vec<usize> = (0..400).map(|n| (n * 37) % 100).collect();
        let slots: Vec<usize> = order.iter().map(|&i| b.sender(i as u32 * 3, || view(i))).collect();
        assert_eq!(b.block.senders.len(), 100, "one record per speaker");
        for (&i, &slot) in order.iter().zip(&slots) {
            assert_eq!(b.block.str(b.block.senders[slot].user_id), names[i], "speaker {i}");
        }
    }
}
