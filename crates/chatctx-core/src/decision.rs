//! Decision records: how a tool answer was reached, item by item (docs/protocol.md §6.7).
//!
//! A record holds ids, codes, numbers and times, never message text: for `get_chat_history_context` every item
//! that selection looked at with its verdict and reason, the token budget and the model triage; for
//! `resolve_reference_target` every scored candidate with its score parts; for `list_active_context_objects`
//! each live object's activation and TTL. The engine builds one when `[decisions] keep` is above 0 or the
//! request says `"explain": true`, and hands it out with the answer (the answer's `explain` field); the
//! server keeps the newest per chat and serves them. Built from the same state and request, a record is the
//! same, byte for byte, so a replay of a log reproduces its records.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use crate::kinds::{Activation, ItemKind, ObjectKind, SelectionMethod, Status, Tier};
use crate::time::Timestamp;

crate::vocabulary! {
    /// Why an item was kept in the prompt or left out of it.
    Reason {
        /// Kept: one of the newest `always_include_recent` items, kept whatever selection chose.
        RecentWindow = "recent_window",
        /// Kept: the message being answered replies to it.
        ReplyParent = "reply_parent",
        /// Kept: the lexical selector ranked it among the best `lexical_keep` (its `score` is given).
        LexicalScore = "lexical_score",
        /// Kept: model triage chose it.
        ModelTriage = "model_triage",
        /// Kept: everything considered was kept (selection off, history at or below
        /// `skip_selection_threshold`, or a triage that failed open); `method` says which.
        AlwaysInclude = "always_include",
        /// Kept: one of the newest items under `history.policy = "mode_cap"`.
        ModeCap = "mode_cap",
        /// Kept: one of the newest `previous_tasks_count` scheduled or briefing outputs.
        PreviousTask = "previous_task",
        /// Left out: the write policy of the mode does not record it for the prompt (an inbound message that
        /// did not trigger the bot in `smart` or `strict` mode, or a reaction).
        NotRecordedByMode = "not_recorded_by_mode",
        /// Left out: a background item (scheduled, briefing, subtask, heartbeat) beyond the previous tasks.
        Background = "background",
        /// Left out: older than `context_recency_hours` before the newest item considered.
        OutsideRecencyWindow = "outside_recency_window",
        /// Left out: older than the items the recent window, the lexical selector or triage kept.
        NotChosen = "not_chosen",
        /// Left out: the token budget (`max_context_tokens`) was spent on newer items.
        TokenBudget = "token_budget",
    }
}

// Borrowed from its record's `Verdicts`. (The doc comment below is the OpenAPI description: keep it as is.)
/// One item selection looked at.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ItemVerdict<'a> {
    /// The message id (items without one, such as reactions, are named by `sent_at` and `kind`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub message_id: Option<&'a str>,
    /// The item's kind.
    pub kind: ItemKind,
    /// When it was sent.
    pub sent_at: Timestamp,
    /// Whether it is in the prompt.
    pub kept: bool,
    /// Why.
    pub reason: Reason,
    /// Its estimated tokens (the measure `max_context_tokens` is counted in).
    pub tokens: u32,
    /// The lexical selector's score, when it ranked the item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// The items a history record looked at, oldest first, as [`ItemVerdict`]s; their message ids share one
/// buffer. A record is written for every answer while records are on, and one allocation for all the ids
/// costs less than a shared pointer's count taken and dropped per item. Serialized and described exactly as a
/// list of [`ItemVerdict`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdicts {
    ids: Ids,
    items: Vec<Verdict>,
}

/// An [`ItemVerdict`] as [`Verdicts`] keeps it: its message id as a range of the shared buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Verdict {
    id: Option<IdAt>,
    kind: ItemKind,
    sent_at: Timestamp,
    reason: Reason,
    tokens: u32,
    score: Option<f64>,
}

impl Verdicts {
    /// Room for `n` items whose ids take `id_bytes` in all.
    pub(crate) fn with_capacity(n: usize, id_bytes: usize) -> Self {
        Self { ids: Ids::with_capacity(id_bytes), items: Vec::with_capacity(n) }
    }

    /// Adds an item's verdict (after those already there).
    pub(crate) fn push(
        &mut self,
        message_id: Option<&str>,
        (kind, sent_at): (ItemKind, Timestamp),
        reason: Reason,
        tokens: u32,
        score: Option<f64>,
    ) {
        let id = message_id.map(|m| self.ids.push(m));
        self.items.push(Verdict { id, kind, sent_at, reason, tokens, score });
    }

    /// How many items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items, oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = ItemVerdict<'_>> + '_ {
        self.items.iter().map(|v| ItemVerdict {
            message_id: v.id.map(|at| self.ids.get(at)),
            kind: v.kind,
            sent_at: v.sent_at,
            kept: v.reason.kept(),
            reason: v.reason,
            tokens: v.tokens,
            score: v.score,
        })
    }
}

impl Serialize for Verdicts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

crate::wire::schema_as!(Verdicts => Vec<ItemVerdict<'static>>);

/// A history record's ids, back to back in one string (one allocation per record, however many ids it keeps).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Ids(String);

/// Where one id is in its record's [`Ids`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IdAt(u32, u32);

impl Ids {
    fn with_capacity(bytes: usize) -> Self {
        Self(String::with_capacity(bytes))
    }

    /// Adds `id`; where it is.
    fn push(&mut self, id: &str) -> IdAt {
        // A record's ids never reach 4 GiB.
        let offset = |s: &str| u32::try_from(s.len()).unwrap_or(u32::MAX);
        let start = offset(&self.0);
        self.0.push_str(id);
        IdAt(start, offset(&self.0))
    }

    /// The id at `at`.
    fn get(&self, at: IdAt) -> &str {
        self.0.get(at.0 as usize..at.1 as usize).unwrap_or_default()
    }
}

/// The token budget and what the prompt's history cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Budget {
    /// `max_context_tokens` (absent when there is no budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Estimated tokens of the kept items, the current message and the summary.
    pub used_tokens: u64,
    /// Estimated tokens of the conversation's summary block (absent without one).
    #[serde(skip_serializing_if = "is_zero")]
    pub summary_tokens: u64,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

crate::vocabulary! {
    /// How a model triage ended.
    TriageOutcome {
        /// The model chose some items.
        Chosen = "chosen",
        /// The model answered that none is relevant.
        Empty = "empty",
        /// The call failed (transport, timeout, status or an unreadable answer).
        Error = "error",
    }
}

/// The model triage of a history request, when a model was asked.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct TriageRecord {
    /// The role alias asked (`conversation.selection_model`).
    pub model: String,
    /// How many older items were listed to it.
    pub listed: usize,
    /// Its time budget, retries included.
    pub timeout_secs: f64,
    /// How it ended.
    pub outcome: TriageOutcome,
    /// The message ids it chose.
    #[schemars(with = "Vec<String>")]
    pub chosen: Vec<Arc<str>>,
    /// The failure, when it failed (never the model's text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How `get_chat_history_context` chose its items.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct HistoryDecision {
    /// The method that ran.
    pub method: SelectionMethod,
    /// Every item looked at, oldest first, with its verdict.
    pub items: Verdicts,
    /// Older items of the scope that selection did not look at (beyond `lookback_count` or the mode's cap).
    pub outside_lookback: usize,
    /// Older items the conversation's summary covers, which selection does not look at.
    #[serde(skip_serializing_if = "is_zero")]
    pub covered_by_summary: usize,
    /// Items of the chat's other topics, which a per-topic history (`history.scope = "topic"`) does not look at.
    #[serde(skip_serializing_if = "is_zero")]
    pub in_other_topics: usize,
    /// The budget and its use.
    pub budget: Budget,
    /// The model triage, when a model was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triage: Option<TriageRecord>,
}

/// One part of a candidate's score.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ScorePart {
    /// What it is for: a reason code, or `typed_object`, `recency`, `not_owned`.
    pub part: &'static str,
    /// Its points (rounded to 3 places).
    pub points: f64,
}

/// One scored candidate as the record keeps it: its id (shared with the chat's, a count taken rather than the
/// bytes copied) and what its score was made of, in a few numbers. Its parts, reason codes and rank are worked
/// out when the record is written out ([`ResolveView`]), so that keeping a record costs a resolution little.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateVerdict {
    /// A message candidate's message id, or an object's id (shared with the chat's).
    pub(crate) id: Arc<str>,
    /// A message candidate: its object id is `"{message_id}:{kind}"`.
    pub(crate) message: bool,
    /// Its kind.
    pub kind: ObjectKind,
    /// How near the request it is.
    pub tier: Tier,
    /// The total.
    pub score: f64,
    /// Its reason bits (the resolver's reason codes).
    pub(crate) mask: u32,
    // In the order the pool's candidate holds them, so that they are copied as one block (−20 instructions a record).
    pub(crate) created_at: Timestamp,
    pub(crate) last_touched: Timestamp,
}

/// How `resolve_reference_target` decided: every candidate scored, and the weights they were scored with.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveDecision {
    /// The answer's status.
    pub status: Status,
    /// Every candidate scored, in the order they were gathered.
    pub candidates: Vec<CandidateVerdict>,
    /// Why the answer is what it is (see [`ResolveView::why`]).
    pub why: &'static str,
    /// The lead of the best over the runner-up.
    pub top_score_gap: f64,
    /// The time the candidates were scored at.
    pub(crate) now: Timestamp,
    /// The weights in force.
    pub(crate) weights: crate::settings::ResolverSettings,
    /// What the request asked that the candidates' points depend on beyond their reason bits: an ownership
    /// hint of `mine`, `currently_active` counted twice (a `currently_active` recency hint) or recency weighed
    /// twice (a `recent` one). The same for every candidate, so kept once.
    pub(crate) asked: u8,
    /// The kinds a kind hint allows to win (empty: no kind hint, all may win).
    pub(crate) kinds: crate::kinds::KindSet,
}

impl ResolveDecision {
    /// The object id of one of its candidates.
    pub fn object_id(&self, c: &CandidateVerdict) -> String {
        let id = &*c.id;
        if c.message { [id, ":", c.kind.as_str()].concat() } else { id.to_owned() }
    }

    /// How many bytes its candidates' ids take (for the records' memory accounting).
    pub fn id_bytes(&self) -> usize {
        self.candidates.iter().map(|c| c.id.len()).sum()
    }

    /// Whether `c` may win (no kind hint, or of the hinted kind).
    pub(crate) fn eligible(&self, c: &CandidateVerdict) -> bool {
        self.kinds.admits(c.kind)
    }

    /// Its candidates with their object ids.
    pub fn candidates_with_ids(&self) -> impl Iterator<Item = (String, &CandidateVerdict)> {
        self.candidates.iter().map(|c| (self.object_id(c), c))
    }
}

/// One candidate of a written-out resolve record.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct CandidateView {
    /// The object id.
    pub object_id: String,
    /// Its kind.
    pub kind: ObjectKind,
    /// How near the request it is.
    pub tier: Tier,
    /// The total (rounded to 2 places, as answers show it).
    pub score: f64,
    /// The parts of the score, which add up to it.
    pub parts: Vec<ScorePart>,
    /// Reason codes.
    pub reasons: crate::kinds::Reasons,
    /// Its rank among the candidates that may win (1 = the best), absent when a kind hint excluded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<usize>,
}

/// A resolve record as written out.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ResolveView {
    /// The answer's status.
    pub status: Status,
    /// Every candidate scored, best first (those a kind hint excluded last).
    pub candidates: Vec<CandidateView>,
    /// Why the answer is what it is: `resolved` (the winner leads by at least `ambiguity_gap`),
    /// `ambiguous` (the runner-up is within it), `below_min_score`, `no_candidates`, `no_candidate_of_kind`,
    /// `no_reference` (the message refers to nothing; nothing was scored).
    pub why: &'static str,
    /// `resolver.min_score`.
    pub min_score: f64,
    /// `resolver.ambiguity_gap`.
    pub ambiguity_gap: f64,
    /// The lead of the best over the runner-up.
    pub top_score_gap: f64,
}

/// One live object as `list_active_context_objects` found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ObjectLiveness {
    /// The object id.
    pub object_id: std::sync::Arc<str>,
    /// Its kind.
    pub kind: ObjectKind,
    /// The scope tier it was found in.
    pub tier: Tier,
    /// How it was activated.
    pub activation: Activation,
    /// When.
    pub activated_at: Timestamp,
    /// By which message, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activated_by: Option<std::sync::Arc<str>>,
    /// When it stops being active.
    pub expires_at: Timestamp,
    /// Seconds of its TTL left at the request's `now`.
    pub ttl_left_secs: i64,
    /// Whether it is in the answer (`false`: beyond `limit`).
    pub returned: bool,
}

/// How `list_active_context_objects` found its objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ListDecision {
    /// The time liveness was judged at.
    pub now: Timestamp,
    /// Every live object found, in answer order.
    pub objects: Vec<ObjectLiveness>,
}

/// What a state tool did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ScenarioDecision {
    /// The revision after the call.
    pub revision: u64,
    /// Whether the call wrote a revision.
    pub changed: bool,
    /// The top-level keys whose values differ from the revision before (sorted).
    pub keys_changed: Vec<String>,
}

/// One answer's record, whichever tool gave it ([`crate::tools::ToolResponse::take_explain`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Explain {
    /// `get_chat_history_context`.
    History(Box<HistoryDecision>),
    /// `resolve_reference_target`.
    Resolve(Box<ResolveDecision>),
    /// `list_active_context_objects`.
    List(Box<ListDecision>),
    /// The state tools.
    Scenario(Box<ScenarioDecision>),
}
