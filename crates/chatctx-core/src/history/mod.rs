//! `ChatHistoryItem`, exactly as docs/protocol.md §5.1, with field-completeness validation, and
//! [`HistoryItems`], the items of one answer stored together.

pub(crate) mod block;

pub use block::{HistoryItems, ItemView, QuoteView, SenderView};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode};
use crate::json::{Fields, object};
use crate::kinds::ItemKind;
use crate::time::Timestamp;

/// One recorded event as the prompt sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ChatHistoryItem {
    /// Platform.
    pub channel: String,
    /// Who produced it.
    pub kind: ItemKind,
    /// The chat.
    pub chat_id: String,
    /// The forum topic (thread) the item belongs to: given by range reads (`get_chat_history_range`,
    /// `GET /v1/chats/{chat_id}/history`), so a reader sees which conversation, and so which prompt, it is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// `private`, `group`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_type: Option<String>,
    /// The message id (absent for reactions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The message replied or reacted to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_message_id: Option<String>,
    /// When, UTC.
    pub sent_at: Timestamp,
    /// The speaker.
    pub sender: Sender,
    /// The text, mentions normalized.
    pub text: String,
    /// A quoted passage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<HistoryQuote>,
    /// On the bot's items: the tools it used. Not part of the item's JSON; rendering shows them after the reply.
    #[serde(skip)]
    pub actions: Vec<String>,
}

/// The speaker of a history item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Sender {
    /// Platform user id.
    pub user_id: String,
    /// Username without `@`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Display name by the priority of docs/protocol.md §5.2.
    pub nickname: String,
    /// Whether a bot spoke.
    pub is_bot: bool,
    /// `[nickname](tg:@username)`.
    pub display_ref: String,
}

/// A quote inside a history item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct HistoryQuote {
    /// The quoted author's reference (empty when the platform hid the author).
    pub sender_ref: String,
    /// The quoted text.
    pub text: String,
    /// The quote as a Markdown block quote.
    pub markdown_block: String,
}

impl HistoryQuote {
    /// A quote with its Markdown block: `> [Carol](tg:@carol): I will add details tomorrow.`; every further
    /// line of a multi-line quote is prefixed with `> ` too.
    pub fn new(sender_ref: String, text: String) -> Self {
        let markdown_block = markdown_block(&sender_ref, &text);
        Self { sender_ref, text, markdown_block }
    }
}

/// The Markdown block quote of `text` by `sender_ref`.
pub fn markdown_block(sender_ref: &str, text: &str) -> String {
    let mut out = String::with_capacity(text.len() + sender_ref.len() + 8);
    push_markdown_block(&mut out, sender_ref, text);
    out
}

/// Appends [`markdown_block`] to `out`.
pub(crate) fn push_markdown_block(out: &mut String, sender_ref: &str, text: &str) {
    out.push_str("> ");
    if !sender_ref.is_empty() {
        out.push_str(sender_ref);
        out.push_str(": ");
    }
    let mut lines = text.lines();
    out.push_str(lines.next().unwrap_or_default());
    for line in lines {
        out.push_str("\n> ");
        out.push_str(line);
    }
}

const EV: ErrorCode = ErrorCode::InvalidEvent;

impl ChatHistoryItem {
    /// Checks that every required field of docs/protocol.md §5.1 is present and non-empty.
    pub fn validate(&self) -> Result<(), Error> {
        let missing = |f: &str| Err(Error::invalid_event(format!("field `{f}`: is required")));
        if self.channel.is_empty() {
            return missing("channel");
        }
        if self.chat_id.is_empty() {
            return missing("chat_id");
        }
        if self.sender.user_id.is_empty() && self.kind != ItemKind::System {
            return missing("sender.user_id");
        }
        if self.sender.nickname.is_empty() {
            return missing("sender.nickname");
        }
        if self.sender.display_ref.is_empty() {
            return missing("sender.display_ref");
        }
        Ok(())
    }

    /// Reads an item from JSON (a bot importing history it kept elsewhere), naming any missing or
    /// malformed field.
    pub fn decode(v: &Value) -> Result<Self, Error> {
        let f = Fields::new(object(v, "a history item", EV)?, "", EV);
        let kind =
            f.one_of("kind", ItemKind::NAMES)?.map(|i| ItemKind::ALL[i]).ok_or_else(|| f.err("kind", "is required"))?;
        let s = Fields::new(f.obj("sender")?.ok_or_else(|| f.err("sender", "is required"))?, "sender", EV);
        let req_str = |g: &Fields<'_>, k: &str| -> Result<String, Error> {
            g.str(k)?.filter(|x| !x.is_empty()).map(str::to_owned).ok_or_else(|| g.err(k, "is required"))
        };
        let sender = Sender {
            user_id: if kind == ItemKind::System { s.id("user_id")?.unwrap_or_default() } else { s.req_id("user_id")? },
            username: s.str("username")?.map(str::to_owned),
            nickname: req_str(&s, "nickname")?,
            is_bot: s.bool("is_bot")?.ok_or_else(|| s.err("is_bot", "is required"))?,
            display_ref: req_str(&s, "display_ref")?,
        };
        let quote = match f.obj("quote")? {
            Some(m) => {
                let q = Fields::new(m, "quote", EV);
                let sender_ref = q.str("sender_ref")?.ok_or_else(|| q.err("sender_ref", "is required"))?.to_owned();
                let text = q.str("text")?.ok_or_else(|| q.err("text", "is required"))?.to_owned();
                Some(HistoryQuote::new(sender_ref, text))
            }
            None => None,
        };
        let item = Self {
            channel: req_str(&f, "channel")?,
            kind,
            chat_id: f.req_id("chat_id")?,
            topic_id: f.id("topic_id")?,
            chat_type: f.str("chat_type")?.map(str::to_owned),
            message_id: f.id("message_id")?,
            reply_to_message_id: f.id("reply_to_message_id")?,
            sent_at: f.req_time("sent_at")?,
            sender,
            text: f.str("text")?.ok_or_else(|| f.err("text", "is required"))?.to_owned(),
            quote,
            actions: f.strings("actions")?,
        };
        item.validate()?;
        Ok(item)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use serde_json::json;

    use super::*;

    fn full() -> Value {
        json!({"channel": "telegram", "kind": "inbound_user", "chat_id": "-100500", "chat_type": "supergroup",
               "message_id": "501", "reply_to_message_id": "500", "sent_at": "2026-02-13T08:20:10Z",
               "sender": {"user_id": "42", "username": "alice", "nickname": "Alice", "is_bot": false, "display_ref": "[Alice](tg:@alice)"},
               "text": "hello", "quote": {"sender_ref": "[Carol](tg:@carol)", "text": "I will add details tomorrow."}})
    }

    #[test]
    fn a_complete_item_round_trips() {
        let item = ChatHistoryItem::decode(&full()).unwrap();
        assert_eq!(item.quote.as_ref().unwrap().markdown_block, "> [Carol](tg:@carol): I will add details tomorrow.");
        let back = serde_json::to_value(&item).unwrap();
        let mut expected = full();
        expected["quote"]["markdown_block"] = json!("> [Carol](tg:@carol): I will add details tomorrow.");
        assert_eq!(back, expected);
    }

    #[test]
    fn each_required_field_is_named() {
        for path in [
            "channel",
            "kind",
            "chat_id",
            "sent_at",
            "sender",
            "text",
            "sender.user_id",
            "sender.nickname",
            "sender.is_bot",
            "sender.display_ref",
        ] {
            let mut v = full();
            match path.split_once('.') {
                Some((a, b)) => v[a].as_object_mut().unwrap().remove(b),
                None => v.as_object_mut().unwrap().remove(path),
            };
            let e = ChatHistoryItem::decode(&v).expect_err(path);
            assert_eq!(e.code, ErrorCode::InvalidEvent);
            assert!(e.message.contains(&format!("`{path}`")), "{path}: {}", e.message);
        }
        // Optional fields may go.
        for path in ["chat_type", "message_id", "reply_to_message_id", "quote"] {
            let mut v = full();
            v.as_object_mut().unwrap().remove(path);
            assert!(ChatHistoryItem::decode(&v).is_ok(), "{path} is optional");
        }
    }

    #[test]
    fn quotes_render_as_block_quotes() {
        assert_eq!(
            markdown_block("[Carol](tg:@carol)", "I will add details tomorrow."),
            "> [Carol](tg:@carol): I will add details tomorrow."
        );
        assert_eq!(markdown_block("[Bo](tg:@bo)", "line one\nline two"), "> [Bo](tg:@bo): line one\n> line two");
        assert_eq!(markdown_block("", "anonymous words"), "> anonymous words");
    }
}
