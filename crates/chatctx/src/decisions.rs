//! The decision records the server keeps (docs/protocol.md §6.7): the newest `[decisions] keep` per chat, in
//! memory, all chats together within `[decisions] max_bytes` (the oldest go first, whatever their chat).
//!
//! A record is the engine's account of one tool answer ([`chatctx_core::decision`]) with the request id the
//! call was logged under, where it applied, and for `get_chat_history_context` the answer's items and prompt,
//! moved out of the answer after it was sent (never copied): so a record holds no more text than its answer.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use chatctx_core::ChatHistoryItem;
use chatctx_core::decision::{Explain, HistoryDecision, ListDecision, ResolveDecision, ScenarioDecision};
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
    pub kept_items: Vec<ChatHistoryItem>,
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
            (Explain::History(decision), _) => {
                Detail::History(HistoryRecord { decision: *decision, kept_items: Vec::new(), prompt: Vec::new() })
            }
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

    /// About how many bytes the record holds (its text, plus a little per entry).
    fn weight(&self) -> usize {
        let fixed = 256 + self.request_id.len() + self.chat_id.len();
        fixed
            + match &self.detail {
                Detail::History(h) => {
                    h.decision.items.len() * 96
                        + h.prompt.iter().map(|m| m.content.len() + 32).sum::<usize>()
                        + h.kept_items.iter().map(|i| i.text.len() + 256).sum::<usize>()
                }
                Detail::Resolve(r) => r.candidates.iter().map(|c| 400 + c.object_id().len()).sum(),
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

#[derive(Default)]
struct Inner {
    /// Each chat's records, oldest first, with their number and weight.
    chats: HashMap<ChatKey, VecDeque<(u64, usize, Arc<Record>)>>,
    /// Every kept record's number, oldest first, and its chat: the order the byte budget evicts in.
    order: BTreeMap<u64, ChatKey>,
    next: u64,
    bytes: usize,
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
    /// `max_bytes`.
    pub fn push(&self, record: Record) {
        if self.keep == 0 {
            return;
        }
        let weight = record.weight();
        let key = (record.channel.clone(), record.chat_id.clone());
        let mut inner = self.inner();
        let n = inner.next;
        inner.next += 1;
        inner.bytes += weight;
        inner.order.insert(n, key.clone());
        let ring = inner.chats.entry(key).or_default();
        ring.push_back((n, weight, Arc::new(record)));
        let over = ring.len().saturating_sub(self.keep);
        let dropped: Vec<(u64, usize)> = ring.drain(..over).map(|(n, w, _)| (n, w)).collect();
        for (n, w) in dropped {
            inner.order.remove(&n);
            inner.bytes -= w;
        }
        while inner.bytes > self.max_bytes {
            let Some((n, key)) = inner.order.pop_first() else { break };
            let mut emptied = false;
            let mut freed = 0;
            if let Some(ring) = inner.chats.get_mut(&key) {
                if ring.front().is_some_and(|r| r.0 == n)
                    && let Some((_, w, _)) = ring.pop_front()
                {
                    freed = w;
                }
                emptied = ring.is_empty();
            }
            inner.bytes -= freed;
            if emptied {
                inner.chats.remove(&key);
            }
        }
    }

    /// A chat's newest records, newest first, at most `limit`.
    pub fn newest(&self, channel: &str, chat_id: &str, limit: usize) -> Vec<Arc<Record>> {
        let inner = self.inner();
        let key = (channel.to_owned(), chat_id.to_owned());
        inner.chats.get(&key).map_or_else(Vec::new, |r| r.iter().rev().take(limit).map(|e| e.2.clone()).collect())
    }

    /// The newest record of a chat with request id `request_id`.
    pub fn find(&self, channel: &str, chat_id: &str, request_id: &str) -> Option<Arc<Record>> {
        let inner = self.inner();
        let key = (channel.to_owned(), chat_id.to_owned());
        inner.chats.get(&key)?.iter().rev().find(|e| e.2.request_id == request_id).map(|e| e.2.clone())
    }

    /// Forgets a chat's records (the chat was deleted).
    pub fn forget(&self, channel: &str, chat_id: &str) {
        let mut inner = self.inner();
        let key = (channel.to_owned(), chat_id.to_owned());
        if let Some(ring) = inner.chats.remove(&key) {
            for (n, w, _) in ring {
                inner.order.remove(&n);
                inner.bytes -= w;
            }
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

    #[test]
    fn nothing_is_kept_when_records_are_off() {
        let d = Decisions::new(&DecisionSettings { keep: 0, max_bytes: 1 << 20 });
        d.push(record("a", "x", 1));
        assert_eq!(d.usage(), (0, 0));
    }
}
