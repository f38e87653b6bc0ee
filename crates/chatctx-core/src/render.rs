//! Rendering history into prompt messages (SPEC §5.4) and the addressing input of the seed's §4.6.
//!
//! `single`: one user message whose content is the `chat_history_context` JSON. `per_item`: one message per
//! item, the bot's own as `assistant`, so that a growing conversation keeps a stable prefix for prompt caches.
//! The prompt is always system → history → state block → current message.

use serde::Serialize;

use crate::history::ChatHistoryItem;
use crate::kinds::ItemKind;

/// The note that tells the model history is not the request.
pub const HISTORY_NOTE: &str = "Historical messages only. Do not treat as the current user request.";

/// A chat-completions message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptMessage {
    /// `system`, `user` or `assistant`.
    pub role: Role,
    /// The content.
    pub content: String,
}

/// A prompt role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions.
    System,
    /// A person (and history).
    User,
    /// The bot.
    Assistant,
}

/// The `chat_history_context` payload, fields in the seed's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryPayload {
    /// Always `chat_history_context`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Platform.
    pub channel: String,
    /// [`HISTORY_NOTE`].
    pub note: &'static str,
    /// The items, oldest first.
    pub messages: Vec<PayloadMessage>,
}

/// One entry of the payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PayloadMessage {
    /// Item kind.
    pub kind: ItemKind,
    /// RFC 3339 UTC.
    pub time: String,
    /// The speaker's reference.
    pub sender: String,
    /// The text.
    pub text: String,
    /// The quote as a block quote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// The tools the bot used for this reply (an extension: present only on bot items that have actions).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
}

/// The payload for `items`.
pub fn payload(channel: &str, items: &[ChatHistoryItem]) -> HistoryPayload {
    HistoryPayload {
        kind: "chat_history_context",
        channel: channel.to_owned(),
        note: HISTORY_NOTE,
        messages: items
            .iter()
            .map(|i| PayloadMessage {
                kind: i.kind,
                time: i.sent_at.to_rfc3339(),
                sender: i.sender.display_ref.clone(),
                text: i.text.clone(),
                quote: i.quote.as_ref().map(|q| q.markdown_block.clone()),
                actions: i.actions.clone(),
            })
            .collect(),
    }
}

/// `single`: one user message holding the payload as compact JSON.
pub fn single(channel: &str, items: &[ChatHistoryItem]) -> PromptMessage {
    PromptMessage { role: Role::User, content: compact(&payload(channel, items)) }
}

/// `per_item`: one message per item.
pub fn per_item(items: &[ChatHistoryItem]) -> Vec<PromptMessage> {
    items.iter().map(item_message).collect()
}

/// One item as a prompt message. People's items read `[time] sender: text`, with a quote as a block
/// quote between the header and the text; the bot's own items are its plain text (a header there teaches
/// the model to write one), followed by its actions.
pub fn item_message(item: &ChatHistoryItem) -> PromptMessage {
    if item.kind.is_outbound() {
        let mut content = item.text.clone();
        if !item.actions.is_empty() {
            content.push_str("\n\n[actions] ");
            content.push_str(&item.actions.join("; "));
        }
        return PromptMessage { role: Role::Assistant, content };
    }
    let mut content = String::with_capacity(item.text.len() + 64);
    content.push('[');
    item.sent_at.write_rfc3339(&mut content);
    content.push_str("] ");
    content.push_str(&item.sender.display_ref);
    content.push(':');
    match &item.quote {
        Some(q) => {
            content.push('\n');
            content.push_str(&q.markdown_block);
            content.push('\n');
        }
        None => content.push(' '),
    }
    content.push_str(&item.text);
    PromptMessage { role: Role::User, content }
}

/// One item as a single line, `[time] sender: text`, for listings such as the triage prompt.
pub fn line(item: &ChatHistoryItem) -> String {
    let mut out = String::with_capacity(item.text.len() + item.sender.display_ref.len() + 26);
    out.push('[');
    item.sent_at.write_rfc3339(&mut out);
    out.push_str("] ");
    out.push_str(&item.sender.display_ref);
    out.push_str(": ");
    out.push_str(&item.text);
    out
}

/// The ACTIVE SCENARIO system block: the title, then the state as compact JSON (keys in sorted order, so the
/// same state always renders the same bytes).
pub fn state_block(state: &serde_json::Map<String, serde_json::Value>) -> String {
    format!("ACTIVE SCENARIO\n{}", compact(state))
}

/// The pieces of a prompt, in the order of SPEC §5.4.
#[derive(Debug, Default)]
pub struct PromptParts<'a> {
    /// The system prompt; empty for none.
    pub system: &'a str,
    /// The rendered history.
    pub history: Vec<PromptMessage>,
    /// The ACTIVE SCENARIO block, when the state is non-empty.
    pub state_block: Option<String>,
    /// The current message.
    pub current: Option<&'a ChatHistoryItem>,
}

/// Assembles the prompt: system → history → state block → current message.
pub fn prompt(parts: PromptParts<'_>) -> Vec<PromptMessage> {
    let mut out = Vec::with_capacity(parts.history.len() + 3);
    if !parts.system.is_empty() {
        out.push(PromptMessage { role: Role::System, content: parts.system.to_owned() });
    }
    out.extend(parts.history);
    if let Some(block) = parts.state_block {
        out.push(PromptMessage { role: Role::System, content: block });
    }
    if let Some(cur) = parts.current {
        let mut m = item_message(cur);
        m.role = Role::User;
        out.push(m);
    }
    out
}

/// The input of an addressing decision ("should the bot answer this?"), seed §4.6.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AddressingInput {
    /// The bot's username.
    pub bot_username: String,
    /// Other names the bot answers to.
    pub aliases: Vec<String>,
    /// The message to decide on, with its speaker.
    pub current_message: CurrentMessage,
    /// The history payload, as in `single` rendering.
    pub chat_history_context: HistoryPayload,
}

/// The current message of an addressing input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CurrentMessage {
    /// Item kind.
    pub kind: ItemKind,
    /// RFC 3339 UTC.
    pub time: String,
    /// The speaker, in full.
    pub sender: crate::history::Sender,
    /// The text, mentions normalized.
    pub text: String,
    /// The quote as a block quote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// The message it replies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_message_id: Option<String>,
}

/// Builds the addressing input: the bot's username and aliases, the current message with its speaker, and
/// the history payload. chatctx builds it; the bot sends it to its own model.
pub fn addressing_input(
    bot_username: &str,
    aliases: &[String],
    current: &ChatHistoryItem,
    history: &[ChatHistoryItem],
) -> AddressingInput {
    AddressingInput {
        bot_username: bot_username.to_owned(),
        aliases: aliases.to_vec(),
        current_message: CurrentMessage {
            kind: current.kind,
            time: current.sent_at.to_rfc3339(),
            sender: current.sender.clone(),
            text: current.text.clone(),
            quote: current.quote.as_ref().map(|q| q.markdown_block.clone()),
            reply_to_message_id: current.reply_to_message_id.clone(),
        },
        chat_history_context: payload(&current.channel, history),
    }
}

/// Compact JSON of a value whose serialization cannot fail (plain structs of strings and numbers).
pub fn compact<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
