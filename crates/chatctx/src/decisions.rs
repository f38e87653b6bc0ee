//! The decision records the server keeps (docs/protocol.md §6.7): the newest `[decisions] keep` per chat, in
//! memory, all chats together within `[decisions] max_bytes` (the oldest go first, whatever their chat).
//!
//! A record is the engine's account of one tool answer ([`chatctx_core::decision`]) with the request id the
//! call was logged under, where it applied, and for `get_chat_history_context` the answer's items and prompt,
//! moved out of the answer after it was sent (never copied): so a record holds no more text than its answer.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use chatctx_core::decision::{Explain, HistoryDecision, ListDecision, ResolveDecision, ScenarioDecision};
use chatctx_core::history::{HistoryItems, ItemView};
use chatctx_core::render::PromptMessage;
use chatctx_core::settings::DecisionSettings;
use chatctx_core::time::Timestamp;
use chatctx_core::tools::{Scope, ToolResponse};
use schemars::JsonSchema;
use serde::Serialize;

/// One tool answer's record.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(crate = "chatctx_core::wire")]
pub struct Record {
    /// The request id the call was logged under (`x-request-id`).
    pub request_id: String,
    /// The tool.
    pub tool: &'static str,
    /// Where it applied.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The topic the request named, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The message being handled, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_message_id: Option<String>,
    /// The time the answer was for.
    pub now: Timestamp,
    /// The tool's own part.
    #[serde(flatten)]
    pub detail: Detail,
}

/// The tool's part of a record, under the tool's short name.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(crate = "chatctx_core::wire")]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// `get_chat_history_context`.
    History(HistoryRecord),
    /// `resolve_reference_target`.
    Resolve(#[schemars(with = "chatctx_core::decision::ResolveView")] ResolveDecision),
    /// `list_active_context_objects`.
    List(ListDecision),
    /// The state tools.
    Scenario(ScenarioDecision),
}

/// A history answer's record: the verdicts, and what the model was given.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(crate = "chatctx_core::wire")]
pub struct HistoryRecord {
    /// Every item looked at, the budget, the triage.
    #[serde(flatten)]
    pub decision: HistoryDecision,
    /// The answer's items (the kept ones), oldest first.
    pub kept_items: HistoryItems,
    /// The exact prompt of the answer.
    pub prompt: Vec<PromptMessage>,
}

impl Record {
    /// The record of an answer to a call of `tool` in `scope` for time `now`, from its decision; a history
    /// answer's items and prompt are moved out of `answer` (which has been sent).
    pub fn new(
        request_id: &str,
        tool: &'static str,
        scope: Scope,
        now: Timestamp,
        explain: Explain,
        answer: &mut ToolResponse,
    ) -> Self {
        let detail = match (explain, answer) {
            (Explain::History(decision), ToolResponse::History(h)) => Detail::History(HistoryRecord {
                decision: *decision,
                kept_items: std::mem::take(&mut h.items),
                prompt: std::mem::take(&mut h.prompt),
            }),
            (Explain::History(decision), _) => Detail::History(HistoryRecord {
                decision: *decision,
                kept_items: HistoryItems::default(),
                prompt: Vec::new(),
            }),
            (Explain::Resolve(d), _) => Detail::Resolve(*d),
            (Explain::List(d), _) => Detail::List(*d),
            (Explain::Scenario(d), _) => Detail::Scenario(*d),
        };
        Self {
            request_id: request_id.to_owned(),
            tool,
            channel: scope.channel,
            chat_id: scope.chat_id,
            topic_id: scope.topic_id,
            current_message_id: scope.current_message_id,
            now,
            detail,
        }
    }

    /// About how many bytes the record holds: every string it carries (texts, names, labels, ids), plus a
    /// little per entry. Counted from the fields rather than by writing the record out, which would cost a
    /// history call about as much again.
    fn weight(&self) -> usize {
        let opt = |s: Option<&str>| s.map_or(0, str::len);
        let owned = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let item = |i: ItemView<'_>| {
            let quote = i.quote.map_or(0, |q| q.sender_ref.len() + q.text.len() + q.markdown_block.len());
            let sender = &i.sender;
            160 + i.channel.len()
                + i.chat_id.len()
                + opt(i.chat_type)
                + opt(i.message_id)
                + opt(i.reply_to_message_id)
                + i.text.len()
                + quote
                + sender.user_id.len()
                + opt(sender.username)
                + sender.nickname.len()
                + sender.display_ref.len()
                + i.actions.iter().map(String::len).sum::<usize>()
        };
        let fixed = 256 + self.request_id.len() + self.channel.len() + self.chat_id.len();
        fixed
            + owned(&self.topic_id)
            + owned(&self.current_message_id)
            + match &self.detail {
                Detail::History(h) => {
                    h.decision.items.len() * 96
                        + h.prompt.iter().map(|m| m.content.len() + 32).sum::<usize>()
                        + h.kept_items.iter().map(item).sum::<usize>()
                }
                Detail::Resolve(r) => r.candidates.len() * 400 + r.id_bytes(),
                Detail::List(l) => l.objects.iter().map(|o| 160 + o.object_id.len()).sum(),
                Detail::Scenario(s) => s.keys_changed.iter().map(|k| k.len() + 24).sum(),
            }
    }
}

type ChatKey = (String, String);

/// The kept records.
pub struct Decisions {
    keep: usize,
    max_bytes: usize,
    inner: Mutex<Inner>,
}

/// One chat's records, oldest first (number, weight, record), and how many of them name each message (the
/// messages their text came from), so an edit or a deletion finds the records to drop without a scan.
#[derive(Default)]
struct ChatRecords {
    ring: VecDeque<(u64, usize, Arc<Record>)>,
    messages: HashMap<Box<str>, u32>,
}

impl ChatRecords {
    /// The messages whose text `r` holds: a history answer's items and its current message.
    fn message_ids(r: &Record) -> Vec<&str> {
        match &r.detail {
            Detail::History(h) => {
                h.kept_items.iter().filter_map(|i| i.message_id).chain(r.current_message_id.as_deref()).collect()
            }
            _ => Vec::new(),
        }
    }

    fn push(&mut self, entry: (u64, usize, Arc<Record>)) {
        for id in Self::message_ids(&entry.2) {
            *self.messages.entry(id.into()).or_default() += 1;
        }
        self.ring.push_back(entry);
    }

    fn unindex(&mut self, r: &Record) {
        for id in Self::message_ids(r) {
            if let Some(n) = self.messages.get_mut(id) {
                *n -= 1;
                if *n == 0 {
                    self.messages.remove(id);
                }
            }
        }
    }

    fn pop_front(&mut self) -> Option<(u64, usize, Arc<Record>)> {
        let e = self.ring.pop_front()?;
        self.unindex(&e.2);
        Some(e)
    }

    /// Removes the records `drop` picks; their numbers and weights.
    fn remove_where(&mut self, drop: impl Fn(&Record) -> bool) -> Vec<(u64, usize)> {
        let mut gone = Vec::new();
        let mut kept = VecDeque::with_capacity(self.ring.len());
        for e in std::mem::take(&mut self.ring) {
            if drop(&e.2) {
                self.unindex(&e.2);
                gone.push((e.0, e.1));
            } else {
                kept.push_back(e);
            }
        }
        self.ring = kept;
        gone
    }
}

#[derive(Default)]
struct Inner {
    /// Each chat's records, by channel and chat.
    chats: HashMap<String, HashMap<String, ChatRecords>>,
    /// Every kept record's number, oldest first, and its chat: the order the byte budget evicts in.
    order: BTreeMap<u64, ChatKey>,
    next: u64,
    bytes: usize,
}

impl Inner {
    fn chat(&self, channel: &str, chat_id: &str) -> Option<&ChatRecords> {
        self.chats.get(channel)?.get(chat_id)
    }

    /// Drops the records of a chat that `drop` picks.
    fn remove_where(&mut self, channel: &str, chat_id: &str, drop: impl Fn(&Record) -> bool) {
        let Some(chat) = self.chats.get_mut(channel).and_then(|c| c.get_mut(chat_id)) else { return };
        let gone = chat.remove_where(drop);
        let empty = chat.ring.is_empty();
        for (n, w) in gone {
            self.order.remove(&n);
            self.bytes -= w;
        }
        if empty {
            self.remove_chat(channel, chat_id);
        }
    }

    fn remove_chat(&mut self, channel: &str, chat_id: &str) -> Option<ChatRecords> {
        let chats = self.chats.get_mut(channel)?;
        let gone = chats.remove(chat_id);
        if chats.is_empty() {
            self.chats.remove(channel);
        }
        gone
    }
}

impl Decisions {
    /// Keeps what `settings` says.
    pub fn new(settings: &DecisionSettings) -> Self {
        Self { keep: settings.keep, max_bytes: settings.max_bytes, inner: Mutex::new(Inner::default()) }
    }

    /// Whether records are kept at all.
    pub fn enabled(&self) -> bool {
        self.keep > 0
    }

    /// Records kept per chat at most.
    pub fn keep(&self) -> usize {
        self.keep
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `record` as its chat's newest, dropping the chat's oldest past `keep` and the oldest of all past
    /// `max_bytes`. A request id the chat's records already use is made unique (`…~N`), so no caller can
    /// shadow another's record by choosing its `x-request-id`.
    pub fn push(&self, mut record: Record) {
        if self.keep == 0 {
            return;
        }
        let weight = record.weight();
        let (channel, chat_id) = (record.channel.clone(), record.chat_id.clone());
        let mut inner = self.inner();
        let n = inner.next;
        inner.next += 1;
        if inner.chat(&channel, &chat_id).is_some_and(|c| c.ring.iter().any(|e| e.2.request_id == record.request_id)) {
            record.request_id = format!("{}~{n}", record.request_id);
        }
        inner.bytes += weight;
        inner.order.insert(n, (channel.clone(), chat_id.clone()));
        let chat = inner.chats.entry(channel).or_default().entry(chat_id).or_default();
        chat.push((n, weight, Arc::new(record)));
        let mut dropped = Vec::new();
        while chat.ring.len() > self.keep {
            dropped.extend(chat.pop_front().map(|(n, w, _)| (n, w)));
        }
        for (n, w) in dropped {
            inner.order.remove(&n);
            inner.bytes -= w;
        }
        while inner.bytes > self.max_bytes {
            let Some((n, (channel, chat_id))) = inner.order.pop_first() else { break };
            let mut emptied = false;
            let mut freed = 0;
            if let Some(chat) = inner.chats.get_mut(&channel).and_then(|c| c.get_mut(&chat_id)) {
                if chat.ring.front().is_some_and(|r| r.0 == n)
                    && let Some((_, w, _)) = chat.pop_front()
                {
                    freed = w;
                }
                emptied = chat.ring.is_empty();
            }
            inner.bytes -= freed;
            if emptied {
                inner.remove_chat(&channel, &chat_id);
            }
        }
    }

    /// A chat's newest records, newest first, at most `limit`.
    pub fn newest(&self, channel: &str, chat_id: &str, limit: usize) -> Vec<Arc<Record>> {
        let inner = self.inner();
        inner
            .chat(channel, chat_id)
            .map_or_else(Vec::new, |c| c.ring.iter().rev().take(limit).map(|e| e.2.clone()).collect())
    }

    /// The record of a chat with request id `request_id`.
    pub fn find(&self, channel: &str, chat_id: &str, request_id: &str) -> Option<Arc<Record>> {
        let inner = self.inner();
        inner.chat(channel, chat_id)?.ring.iter().rev().find(|e| e.2.request_id == request_id).map(|e| e.2.clone())
    }

    /// Forgets a chat's records (the chat was deleted).
    pub fn forget(&self, channel: &str, chat_id: &str) {
        let mut inner = self.inner();
        if let Some(chat) = inner.remove_chat(channel, chat_id) {
            for (n, w, _) in chat.ring {
                inner.order.remove(&n);
                inner.bytes -= w;
            }
        }
    }

    /// Forgets the records that hold the text of any of `messages` (channel, chat, message id: edited or
    /// deleted), under one lock: a hash lookup per message when no record holds it, as for every new message.
    pub fn forget_messages<'a>(&self, messages: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>) {
        let mut inner = self.inner();
        if inner.order.is_empty() {
            return;
        }
        for (channel, chat_id, message_id) in messages {
            if inner.chat(channel, chat_id).is_some_and(|c| c.messages.contains_key(message_id)) {
                inner.remove_where(channel, chat_id, |r| ChatRecords::message_ids(r).contains(&message_id));
            }
        }
    }

    /// Forgets the records that hold text older than `cutoff` (retention), or were made before it.
    pub fn forget_before(&self, cutoff: Timestamp) {
        let mut inner = self.inner();
        let chats: Vec<ChatKey> =
            inner.chats.iter().flat_map(|(ch, chats)| chats.keys().map(move |c| (ch.clone(), c.clone()))).collect();
        for (channel, chat_id) in chats {
            inner.remove_where(&channel, &chat_id, |r| {
                r.now < cutoff
                    || matches!(&r.detail, Detail::History(h) if h.kept_items.iter().any(|i| i.sent_at < cutoff))
            });
        }
    }

    /// How many records and estimated bytes are kept.
    pub fn usage(&self) -> (usize, usize) {
        let inner = self.inner();
        (inner.order.len(), inner.bytes)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    fn record(chat: &str, id: &str, keys: usize) -> Record {
        Record {
            request_id: id.to_owned(),
            tool: "update_scenario",
            channel: "telegram".to_owned(),
            chat_id: chat.to_owned(),
            topic_id: None,
            current_message_id: None,
            now: Timestamp::from_unix(0).unwrap(),
            detail: Detail::Scenario(ScenarioDecision {
                revision: 1,
                changed: true,
                keys_changed: vec!["k".repeat(1000); keys],
            }),
        }
    }

    #[test]
    fn each_chat_keeps_its_newest_and_all_stay_within_the_byte_budget() {
        let d = Decisions::new(&DecisionSettings { keep: 3, max_bytes: 15_000 });
        for i in 0..5 {
            d.push(record("a", &format!("a{i}"), 1));
        }
        let ids: Vec<String> = d.newest("telegram", "a", 10).iter().map(|r| r.request_id.clone()).collect();
        assert_eq!(ids, ["a4", "a3", "a2"], "newest first, three kept");
        assert_eq!(d.usage().0, 3);
        assert!(d.find("telegram", "a", "a0").is_none());
        assert_eq!(d.find("telegram", "a", "a3").map(|r| r.request_id.clone()).as_deref(), Some("a3"));
        // Big records in another chat push the oldest of all out, whatever their chat.
        for i in 0..3 {
            d.push(record("b", &format!("b{i}"), 5));
        }
        let (count, bytes) = d.usage();
        assert!(bytes <= 15_000, "{bytes} bytes kept");
        assert!(d.newest("telegram", "a", 10).len() < 3, "chat a lost its oldest to chat b's records");
        assert_eq!(d.newest("telegram", "b", 10)[0].request_id, "b2", "the newest record stays");
        d.forget("telegram", "b");
        d.forget("telegram", "a");
        assert_eq!(d.usage(), (0, 0), "{count} records were kept");
        assert!(d.inner().chats.is_empty());
    }

    /// Retention (`store.max_age`) forgets records made before its cutoff.
    #[test]
    fn retention_forgets_older_records() {
        let d = Decisions::new(&DecisionSettings { keep: 8, max_bytes: 1 << 20 });
        let mut old = record("a", "old", 1);
        old.now = Timestamp::from_unix(100).unwrap();
        let mut new = record("a", "new", 1);
        new.now = Timestamp::from_unix(300).unwrap();
        d.push(old);
        d.push(new);
        d.forget_before(Timestamp::from_unix(200).unwrap());
        let ids: Vec<String> = d.newest("telegram", "a", 10).iter().map(|r| r.request_id.clone()).collect();
        assert_eq!(ids, ["new"]);
        assert_eq!(d.usage().0, 1);
    }

    #[test]
    fn nothing_is_kept_when_records_are_off() {
        let d = Decisions::new(&DecisionSettings { keep: 0, max_bytes: 1 << 20 });
        d.push(record("a", "x", 1));
        assert_eq!(d.usage(), (0, 0));
    }
}
