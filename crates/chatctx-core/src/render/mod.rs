//! Rendering history into prompt messages (docs/protocol.md §5.4) and the addressing input of the seed's §4.6.
//!
//! `single`: one user message whose content is the `chat_history_context` JSON. `per_item`: one message per
//! item, the bot's own as `assistant`, so that a growing conversation keeps a stable prefix for prompt caches.
//! The prompt is always system → history → state block → current message.

mod payload;

pub use payload::{HistoryPayload, PayloadMessage, PayloadMessages, PayloadView, payload, payload_of};

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::Serialize;

use crate::history::ChatHistoryItem;
use crate::kinds::ItemKind;
use crate::time::{TimeWriter, Timestamp};

/// The note that tells the model history is not the request.
pub const HISTORY_NOTE: &str = "Historical messages only. Do not treat as the current user request.";

/// A chat-completions message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct PromptMessage {
    /// `system`, `user` or `assistant`.
    pub role: Role,
    /// The content.
    pub content: String,
}

/// A prompt role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions.
    System,
    /// A person (and history).
    User,
    /// The bot.
    Assistant,
}

/// What rendering reads of one history item, borrowed: from an owned [`ChatHistoryItem`], or straight from
/// the engine's stored items, so that a prompt is rendered without first copying the items out.
#[derive(Debug, Clone)]
pub struct ItemLine<'a> {
    /// Item kind.
    pub kind: ItemKind,
    /// When.
    pub sent_at: Timestamp,
    /// The speaker's reference.
    pub sender: &'a str,
    /// The text (for a cut bot reply, the part kept).
    pub text: &'a str,
    /// Whether the text was cut (an ellipsis follows it).
    pub cut: bool,
    /// The quote as a Markdown block quote.
    pub quote: Option<Cow<'a, str>>,
    /// The bot's actions for this reply.
    pub actions: &'a [String],
}

impl<'a> From<&'a ChatHistoryItem> for ItemLine<'a> {
    fn from(i: &'a ChatHistoryItem) -> Self {
        ItemLine {
            kind: i.kind,
            sent_at: i.sent_at,
            sender: &i.sender.display_ref,
            text: &i.text,
            cut: false,
            quote: i.quote.as_ref().map(|q| Cow::Borrowed(q.markdown_block.as_str())),
            actions: &i.actions,
        }
    }
}

/// The ellipsis that ends a cut bot reply.
pub const ELLIPSIS: &str = "…";

/// Where `text` is cut to keep `max` characters; `None` when it is not longer than that.
pub fn cut_at(text: &str, max: usize) -> Option<usize> {
    text.char_indices().nth(max).map(|(at, _)| at)
}

/// `single`: one user message holding the payload as compact JSON.
pub fn single(channel: &str, items: &[ChatHistoryItem]) -> PromptMessage {
    single_lines(channel, &items.iter().map(ItemLine::from).collect::<Vec<_>>())
}

/// `single` from borrowed lines. The JSON is written directly, byte for byte what serializing
/// [`payload()`] gives (tested), without building the payload first.
pub fn single_lines(channel: &str, lines: &[ItemLine<'_>]) -> PromptMessage {
    let size: usize =
        lines.iter().map(|l| l.text.len() + l.sender.len() + l.quote.as_ref().map_or(0, |q| q.len()) + 80).sum();
    single_from(channel, size, lines.iter().cloned())
}

/// [`single_lines`] from lines made as they are written, in about `size` bytes (a hint: the buffer grows past
/// it if need be).
pub fn single_from<'a>(channel: &str, size: usize, lines: impl Iterator<Item = ItemLine<'a>>) -> PromptMessage {
    let mut out = String::with_capacity(size + channel.len() + HISTORY_NOTE.len() + 80);
    out.push_str(r#"{"type":"chat_history_context","channel":"#);
    push_json_str(&mut out, channel);
    out.push_str(r#","note":"#);
    push_json_str(&mut out, HISTORY_NOTE);
    out.push_str(r#","messages":["#);
    let mut times = TimeWriter::default();
    for (n, l) in lines.enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(r#"{"kind":""#);
        out.push_str(l.kind.as_str());
        out.push_str(r#"","time":""#);
        times.write(l.sent_at, &mut out);
        out.push_str(r#"","sender":"#);
        push_json_str(&mut out, l.sender);
        out.push_str(r#","text":"#);
        if l.cut {
            out.push('"');
            push_json_contents(&mut out, l.text);
            out.push_str(ELLIPSIS);
            out.push('"');
        } else {
            push_json_str(&mut out, l.text);
        }
        if let Some(q) = &l.quote {
            out.push_str(r#","quote":"#);
            push_json_str(&mut out, q);
        }
        if !l.actions.is_empty() {
            out.push_str(r#","actions":["#);
            for (k, a) in l.actions.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                push_json_str(&mut out, a);
            }
            out.push(']');
        }
        out.push('}');
    }
    out.push_str("]}");
    PromptMessage { role: Role::User, content: out }
}

/// Appends `s` as a JSON string, escaped exactly as serde_json escapes it.
pub fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    push_json_contents(out, s);
    out.push('"');
}

/// Appends the escaped contents of a JSON string. Blocks of 32 bytes are checked for anything to escape (a
/// control character, `"` or `\\`) without branching inside the block, which the compiler turns into vector
/// compares, so plain text is copied in runs at about the speed of a copy.
fn push_json_contents(out: &mut String, s: &str) {
    const BLOCK: usize = 32;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let needs_escape = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    let bytes = s.as_bytes();
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        let end = (i + BLOCK).min(bytes.len());
        // A whole block as a fixed-size array: the check is unrolled into a few vector compares.
        let clean = match <&[u8; BLOCK]>::try_from(&bytes[i..end]) {
            Ok(block) => !block.iter().fold(false, |any, &b| any | needs_escape(b)),
            Err(_) => !bytes[i..end].iter().fold(false, |any, &b| any | needs_escape(b)),
        };
        if clean {
            i = end;
            continue;
        }
        // A block with something to escape, byte by byte.
        for at in i..end {
            let b = bytes[at];
            let escape: &str = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                0..0x20 => "",
                _ => continue,
            };
            out.push_str(&s[run..at]);
            if escape.is_empty() {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            } else {
                out.push_str(escape);
            }
            run = at + 1;
        }
        i = end;
    }
    out.push_str(&s[run..]);
}

/// `per_item`: one message per item.
pub fn per_item(items: &[ChatHistoryItem]) -> Vec<PromptMessage> {
    items.iter().map(item_message).collect()
}

/// One item as a prompt message. People's items read `[time] sender: text`, with a quote as a block
/// quote between the header and the text; the bot's own items are its plain text (a header there teaches
/// the model to write one), followed by its actions.
pub fn item_message(item: &ChatHistoryItem) -> PromptMessage {
    line_message(&ItemLine::from(item))
}

/// [`item_message`] from a borrowed line.
pub fn line_message(item: &ItemLine<'_>) -> PromptMessage {
    if item.kind.is_outbound() {
        let mut content = String::with_capacity(item.text.len() + 4);
        content.push_str(item.text);
        if item.cut {
            content.push_str(ELLIPSIS);
        }
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
    // A system note (a join, a pin, a payment) is marked as one, so it never reads as something typed:
    // `[time] [system] [Dave](tg://user?id=2) joined the chat`.
    if item.kind == ItemKind::System {
        content.push_str("[system] ");
        if item.sender != "system" {
            content.push_str(item.sender);
            content.push(' ');
        }
        content.push_str(item.text);
        if item.cut {
            content.push_str(ELLIPSIS);
        }
        return PromptMessage { role: Role::User, content };
    }
    content.push_str(item.sender);
    content.push(':');
    match &item.quote {
        Some(q) => {
            content.push('\n');
            content.push_str(q);
            content.push('\n');
        }
        None => content.push(' '),
    }
    content.push_str(item.text);
    if item.cut {
        content.push_str(ELLIPSIS);
    }
    PromptMessage { role: Role::User, content }
}

/// One item as a single line, `[time] sender: text`, for listings such as the triage prompt.
pub fn line(item: &ItemLine<'_>) -> String {
    let mut out = String::with_capacity(item.text.len() + item.sender.len() + 26);
    out.push('[');
    item.sent_at.write_rfc3339(&mut out);
    out.push_str("] ");
    out.push_str(item.sender);
    out.push_str(": ");
    out.push_str(item.text);
    if item.cut {
        out.push_str(ELLIPSIS);
    }
    out
}

/// The ACTIVE SCENARIO system block: the title, then the state as compact JSON (keys in sorted order, so the
/// same state always renders the same bytes).
pub fn state_block(state: &serde_json::Map<String, serde_json::Value>) -> String {
    format!("ACTIVE SCENARIO\n{}", compact(state))
}

/// The pieces of a prompt, in the order of docs/protocol.md §5.4.
#[derive(Debug, Default)]
pub struct PromptParts<'a> {
    /// The system prompt; empty for none.
    pub system: &'a str,
    /// The conversation's summary block ("Earlier in this conversation …"), when it has one.
    pub summary_block: Option<String>,
    /// The rendered history.
    pub history: Vec<PromptMessage>,
    /// The ACTIVE SCENARIO block, when the state is non-empty.
    pub state_block: Option<String>,
    /// The current message.
    pub current: Option<ItemLine<'a>>,
}

/// Assembles the prompt: system → summary → history → state block → current message.
pub fn prompt(parts: PromptParts<'_>) -> Vec<PromptMessage> {
    let mut out = Vec::with_capacity(parts.history.len() + 4);
    if !parts.system.is_empty() {
        out.push(PromptMessage { role: Role::System, content: parts.system.to_owned() });
    }
    if let Some(block) = parts.summary_block {
        out.push(PromptMessage { role: Role::System, content: block });
    }
    out.extend(parts.history);
    if let Some(block) = parts.state_block {
        out.push(PromptMessage { role: Role::System, content: block });
    }
    if let Some(cur) = &parts.current {
        let mut m = line_message(cur);
        m.role = Role::User;
        out.push(m);
    }
    out
}

/// The input of an addressing decision ("should the bot answer this?"), seed §4.6.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
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

/// The first `max` characters of `text` on one line, with `…` when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    if let Some(cut) = flat_cut(text, max) {
        return cut;
    }
    if text.is_ascii() {
        // A character per byte, and the words found by bytes: what `split_whitespace` finds in ASCII text.
        let bytes = text.as_bytes();
        let mut at = 0;
        let words = std::iter::from_fn(|| {
            let start = at + bytes.get(at..)?.iter().position(|b| !is_space(*b))?;
            at = start + bytes[start..].iter().position(|b| is_space(*b)).unwrap_or(bytes.len() - start);
            text.get(start..at)
        });
        return excerpt_of(words, text.len(), max, str::len);
    }
    excerpt_of(text.split_whitespace(), text.len(), max, |w| w.chars().count())
}

/// [`excerpt`] of a text whose first `max` characters are already words joined by single spaces, nothing before
/// them (most texts): they are the start of the flattened text, so it is cut there without walking its words.
/// `None` for any other text.
fn flat_cut(text: &str, max: usize) -> Option<String> {
    // Where the `max`-th character starts: no further than the end (a character is a byte or more), and at byte
    // `max` when the bytes before it are ASCII.
    let end = if text.len() <= max || text.as_bytes()[..max].is_ascii() {
        text.len().min(max)
    } else {
        text.char_indices().nth(max).map_or(text.len(), |(at, _)| at)
    };
    let (head, rest) = text.split_at(end);
    let bytes = head.as_bytes();
    // Whitespace other than a space, or the first byte of a character that may be Unicode whitespace (U+0085,
    // U+00A0, U+1680, U+2000–U+205F, U+3000: their UTF-8 starts with one of these); then a space first or
    // doubled. Folded without stopping early, so that the compiler checks many bytes at a time.
    let odd = |b: u8| (b != b' ' && is_space(b)) || matches!(b, 0xC2 | 0xE1 | 0xE2 | 0xE3);
    let odd = bytes.iter().fold(false, |seen, &b| seen | odd(b));
    let next = bytes.get(1..).unwrap_or_default();
    let doubled = bytes.iter().zip(next).fold(false, |seen, (a, b)| seen | ((*a == b' ') & (*b == b' ')));
    if odd || doubled || bytes.first() == Some(&b' ') {
        return None;
    }
    let kept = head.trim_end_matches(' ');
    // Cut (`…`) when a word follows; trailing whitespace alone flattens away.
    if rest.chars().all(char::is_whitespace) { Some(kept.to_owned()) } else { Some([kept, "…"].concat()) }
}

/// Whether an ASCII byte is what `char::is_whitespace` calls whitespace (the vertical tab included).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

/// [`excerpt`] of the words of a text of `len` bytes; `count` is a word's length in characters.
fn excerpt_of<'a>(words: impl Iterator<Item = &'a str>, len: usize, max: usize, count: fn(&str) -> usize) -> String {
    let mut out = String::with_capacity(len.min(max * 4));
    let mut chars = 0;
    for word in words {
        if chars > 0 {
            if chars == max {
                out.push('…');
                return out;
            }
            out.push(' ');
            chars += 1;
        }
        // A word that fits goes in whole; only the one the cut falls in is walked character by character.
        let n = count(word);
        if chars + n <= max {
            out.push_str(word);
            chars += n;
            continue;
        }
        for c in word.chars() {
            if chars == max {
                let kept = out.trim_end().len();
                out.truncate(kept);
                out.push('…');
                return out;
            }
            out.push(c);
            chars += 1;
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    /// The excerpt in one pass equals the plain definition: words joined by single spaces, cut at `max`
    /// characters (trailing space dropped) with `…`.
    #[test]
    fn excerpt_is_the_flattened_text_cut() {
        let plain = |text: &str, max: usize| {
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            match flat.char_indices().nth(max) {
                Some((cut, _)) => format!("{}…", flat[..cut].trim_end()),
                None => flat,
            }
        };
        // Texts whose start is already flat, cut before, at, and after trailing whitespace (random texts seldom
        // end in whitespace alone after a flat start).
        let cases = ["ab", "ab ", "ab  ", "ab \t", "ab cd", "ab  cd", "ab\ncd", " ab", "", "  ", "ab cd ", "ab cd  x"];
        let wide = ["日本 ок", "ок\u{a0}да", "😀 😀  ", "ок \u{3000}", "да “ok”", "é é\u{2009}é"];
        for text in cases.into_iter().chain(wide) {
            for max in 0..8 {
                assert_eq!(excerpt(text, max), plain(text, max), "{text:?} cut at {max}");
            }
        }
        proptest::proptest!(|(text in "[ a-zé\\n\\t\\u{b}\\u{a0}🙂]{0,40}|[ a-z\\n\\t\\u{b}]{0,40}", max in 0usize..20)| {
            proptest::prop_assert_eq!(excerpt(&text, max), plain(&text, max));
        });
    }

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        for s in [
            "",
            "plain",
            "a\"b\\c",
            "\u{0}\u{8}\u{c}\n\r\t\u{1f}\u{7f}",
            "8 bytes!\"",
            "é😀 \u{1b}[0m",
            "0123456789abcdef\\",
        ] {
            let mut out = String::new();
            push_json_str(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap_or_default(), "{s:?}");
        }
    }

    proptest! {
        #[test]
        fn any_string_is_escaped_as_serde_json_escapes_it(s in any::<String>(), t in "[ -~\u{0}-\u{1f}é]{0,40}") {
            for s in [s, t] {
                let mut out = String::new();
                push_json_str(&mut out, &s);
                prop_assert_eq!(out, serde_json::to_string(&s).unwrap_or_default());
            }
        }
    }
}
