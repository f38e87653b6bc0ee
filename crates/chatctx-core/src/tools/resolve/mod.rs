//! `resolve_reference_target` (docs/protocol.md §6.1): what "this", "the last poll", "the image above" point at,
//! from metadata, scope and recency only. Never a guess: `resolved` needs a clear winner, close candidates
//! are `ambiguous`, weak ones `not_found`.
//!
//! The candidate pool is bounded whatever the chat's size: the reply chain (a few messages up from the reply
//! target), the newest objects of the request's scope (overall and per hinted kind), the scope's activations
//! within the TTL horizon, the scope's newest messages, and in a forum the newest objects of the rest of the
//! chat (penalized). `raw_user_text` is never read: hints are the only language input.

use std::cmp::Ordering;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::chat::{Chat, Item};
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::json::{Fields, object};
use crate::kinds::{Activation, ItemKind, KindName, ObjectKind};
use crate::objects::{Liveness, Object, short_label};
use crate::settings::ResolverSettings;
use crate::time::Timestamp;
use crate::tools::request::Id;
use crate::tools::request::{Request, Scope, ScopeUse};

const RQ: ErrorCode = ErrorCode::InvalidRequest;

crate::vocabulary! {
    /// `positional_hint`.
    Positional {
        /// The message replied to.
        RepliedMessage = "replied_message",
        /// The newest.
        Latest = "latest",
        /// The one before the newest.
        Previous = "previous",
        /// The newest before the current message.
        Above = "above",
        /// The newest in the current topic.
        CurrentTopicRecent = "current_topic_recent",
    }
}

crate::vocabulary! {
    /// `ordinal_hint`.
    Ordinal {
        /// The earliest.
        First = "first",
        /// The second earliest.
        Second = "second",
        /// The newest.
        Last = "last",
    }
}

crate::vocabulary! {
    /// `ownership_hint`.
    Ownership {
        /// Created by the sender.
        Mine = "mine",
        /// Created by the bot.
        BotCreated = "bot_created",
        /// Anyone.
        Any = "any",
    }
}

crate::vocabulary! {
    /// `recency_hint`.
    Recency {
        /// The newest.
        Latest = "latest",
        /// Recent ones count more.
        Recent = "recent",
        /// Active ones count more.
        CurrentlyActive = "currently_active",
    }
}

/// `normalized_reference_hints`: language-neutral hints the caller read from the user's words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Hints {
    /// Where the target is: the replied message, the newest, the one before, the newest above the current
    /// message, the newest in the current topic.
    #[serde(rename = "positional_hint", skip_serializing_if = "Option::is_none")]
    pub positional: Option<Positional>,
    /// Which of several, by time.
    #[serde(rename = "ordinal_hint", skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<Ordinal>,
    /// What kind of thing it is: an exact kind or a short name such as `image`, `photo`, `file`, `quote`.
    #[serde(rename = "target_kind_hint", skip_serializing_if = "Option::is_none")]
    pub target_kind: Option<KindName>,
    /// The kinds [`Hints::target_kind`] names, preferred first ([`KindName::hint_kinds`]).
    #[serde(skip)]
    pub target_kinds: Vec<ObjectKind>,
    /// Whose it is: the sender's, the bot's, anyone's.
    #[serde(rename = "ownership_hint", skip_serializing_if = "Option::is_none")]
    pub ownership: Option<Ownership>,
    /// How recent.
    #[serde(rename = "recency_hint", skip_serializing_if = "Option::is_none")]
    pub recency: Option<Recency>,
}

impl Hints {
    fn decode(f: &Fields<'_>) -> Result<Self, Error> {
        let target_kind = f.word::<KindName>("target_kind_hint")?;
        Ok(Self {
            positional: f.word("positional_hint")?,
            ordinal: f.word("ordinal_hint")?,
            target_kind,
            target_kinds: target_kind.map(|k| k.hint_kinds().to_vec()).unwrap_or_default(),
            ownership: f.word("ownership_hint")?,
            recency: f.word("recency_hint")?,
        })
    }

    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The kinds a `target_kind_hint` word names, preferred first ([`KindName::hint_kinds`]).
pub fn hint_kinds(word: &str) -> Option<Vec<ObjectKind>> {
    KindName::parse(word).map(|k| k.hint_kinds().to_vec())
}

/// Most candidates an answer lists, and how many when the request names no `max_candidates`.
pub const MAX_CANDIDATES: u32 = 10;
const DEFAULT_CANDIDATES: u32 = 3;

fn default_candidates() -> usize {
    DEFAULT_CANDIDATES as usize
}

/// `resolve_reference_target` request.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ResolveReferenceTarget {
    /// Where: the chat, the message that holds the reference, and who wrote it.
    #[serde(flatten)]
    pub scope: Scope,
    /// The message it replies to, if any; read from the store when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Id>")]
    pub reply_to_message_id: Option<String>,
    /// The user's words: accepted and never read, so they never change the outcome (hints are the only
    /// language input).
    #[serde(skip_serializing)]
    #[schemars(with = "Option<String>")]
    pub raw_user_text: (),
    /// Hints read from the user's words.
    #[serde(rename = "normalized_reference_hints", default, skip_serializing_if = "Hints::is_empty")]
    pub hints: Hints,
    /// Only objects of these kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<KindName>>")]
    pub allowed_kinds: Option<Vec<ObjectKind>>,
    /// How many candidates to list.
    #[serde(default = "default_candidates")]
    #[schemars(range(min = 1, max = MAX_CANDIDATES))]
    pub max_candidates: usize,
    /// The time the answer is for; default the server's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<Timestamp>,
}

impl Request for ResolveReferenceTarget {
    const NAME: &'static str = "resolve_reference_target";
    const DESCRIPTION: &'static str = "What a user's reference (\"this\", \"the poll above\", \"my photo\") points \
        at: resolved with one target, ambiguous with the candidates (never a guess), or not_found. Give the hints \
        you read from the user's words.";
    const SCOPE: ScopeUse = ScopeUse {
        reads: &["channel", "chat_id", "topic_id", "current_message_id", "sender_user_id"],
        requires: &["current_message_id", "sender_user_id"],
    };
    type Response = Resolution;

    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        let _ = f.str("raw_user_text")?; // accepted, never interpreted
        let hints = match f.obj("normalized_reference_hints")? {
            None => Hints::default(),
            Some(m) => Hints::decode(&Fields::new(m, "normalized_reference_hints", RQ))?,
        };
        Ok(Self {
            scope: Scope::decode(&f, Self::SCOPE, defaults)?,
            reply_to_message_id: f.id("reply_to_message_id")?,
            raw_user_text: (),
            hints,
            allowed_kinds: kinds_field(&f, "allowed_kinds")?,
            max_candidates: f.count_in("max_candidates", default_candidates(), MAX_CANDIDATES)?,
            now: f.time("now")?,
        })
    }

    fn scope(&self) -> &Scope {
        &self.scope
    }

    fn scope_mut(&mut self) -> &mut Scope {
        &mut self.scope
    }

    fn now(&self) -> Option<Timestamp> {
        self.now
    }

    fn fill_now(&mut self, now: Timestamp) {
        self.now.get_or_insert(now);
    }
}

impl ResolveReferenceTarget {
    /// The message that holds the reference (required, so always present once decoded).
    pub fn current(&self) -> &str {
        self.scope.current_message_id.as_deref().unwrap_or_default()
    }

    /// Who wrote it (required likewise).
    pub fn sender(&self) -> &str {
        self.scope.sender_user_id.as_deref().unwrap_or_default()
    }
}

/// Reads an optional list of kind words ([`KindName`]) as the kinds they name in a filter.
pub(crate) fn kinds_field(f: &Fields<'_>, key: &str) -> Result<Option<Vec<ObjectKind>>, Error> {
    if f.get(key).is_none() {
        return Ok(None);
    }
    let mut kinds = Vec::new();
    for (i, v) in f.array(key)?.iter().enumerate() {
        let word = v
            .as_str()
            .and_then(KindName::parse)
            .ok_or_else(|| f.err(&format!("{key}[{i}]"), &format!("expected one of {}", KindName::NAMES.join(", "))))?;
        for kind in word.kinds() {
            if !kinds.contains(kind) {
                kinds.push(*kind);
            }
        }
    }
    Ok(Some(kinds))
}

/// A compact, safe description of an object (no raw history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Descriptor {
    /// Id.
    pub object_id: String,
    /// Kind.
    pub kind: ObjectKind,
    /// The message that carries it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_message_id: Option<String>,
    /// The chat.
    pub chat_id: String,
    /// The topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// At most 80 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title_or_label: Option<String>,
    /// Who created it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by_user_id: Option<String>,
    /// Whether the bot created it.
    pub created_by_bot: bool,
    /// When it became known.
    pub created_at: Timestamp,
    /// Last change or activation.
    pub last_touched_at: Timestamp,
}

/// A scored candidate.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Candidate {
    /// The object.
    #[serde(flatten)]
    pub descriptor: Descriptor,
    /// Its score (points, two decimals).
    pub score: f64,
    /// Why.
    pub reasons: Vec<&'static str>,
}

/// `resolved` | `ambiguous` | `not_found`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// One clear winner.
    Resolved,
    /// Close candidates; no guess.
    Ambiguous,
    /// Nothing plausible.
    NotFound,
}

/// Where the answer was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// The reply target and its ancestors.
    ReplyChain,
    /// The request's topic.
    Topic,
    /// The chat (a chat without topics, or the fallback to the rest of a forum).
    Chat,
}

/// Scoring details for logs.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Diagnostics {
    /// Candidates scored.
    pub candidate_count: usize,
    /// Lead of the first over the second.
    pub top_score_gap: f64,
}

/// `resolve_reference_target` response.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Resolution {
    /// Outcome.
    pub status: Status,
    /// The winner when resolved.
    pub best_match: Option<Descriptor>,
    /// The top candidates (none when not found).
    pub candidates: Vec<Candidate>,
    /// In [0, 1]: resolved ≥ 0.5, ambiguous 0.25–0.5, not found < 0.25.
    pub confidence: f64,
    /// The reasons of the best (or top) candidate.
    pub reasons: Vec<&'static str>,
    /// Where the answer was found.
    pub scope_used: Tier,
    /// For logs.
    pub diagnostics: Diagnostics,
    /// Whether recording this answer's `resolved` activation changed the state (not part of the answer).
    #[serde(skip)]
    pub recorded: bool,
}

/// Reason codes, in output order.
const REASONS: &[&str] = &[
    "exact_reply_target",
    "in_reply_chain",
    "same_topic",
    "kind_match",
    "currently_active",
    "recent_object",
    "bot_created",
    "owned_by_sender",
    "touched_in_interaction",
    "positional_hint",
    "ordinal_hint",
    "carrier_message",
    "stale_penalty",
    "weak_scope_fallback",
];

#[derive(Clone, Copy)]
enum R {
    ExactReplyTarget = 0,
    InReplyChain,
    SameTopic,
    KindMatch,
    CurrentlyActive,
    RecentObject,
    BotCreated,
    OwnedBySender,
    TouchedInInteraction,
    PositionalHint,
    OrdinalHint,
    CarrierMessage,
    StalePenalty,
    WeakScopeFallback,
}

fn reasons_of(mask: u32) -> Vec<&'static str> {
    REASONS.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, r)| *r).collect()
}

/// A candidate's id without allocating: an object's own id, or a message's `"{message_id}:{kind}"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CandId<'a> {
    Obj(&'a str),
    Msg(&'a str, ObjectKind),
}

impl CandId<'_> {
    fn parts(&self) -> (&str, &str, &str) {
        match self {
            CandId::Obj(id) => (id, "", ""),
            CandId::Msg(mid, kind) => (mid, ":", kind.as_str()),
        }
    }

    fn render(&self) -> String {
        let (a, b, c) = self.parts();
        [a, b, c].concat()
    }

    /// Orders as the rendered ids would.
    fn cmp(&self, other: &Self) -> Ordering {
        let (a1, a2, a3) = self.parts();
        let (b1, b2, b3) = other.parts();
        a1.bytes().chain(a2.bytes()).chain(a3.bytes()).cmp(b1.bytes().chain(b2.bytes()).chain(b3.bytes()))
    }
}

/// One candidate while scoring.
struct Cand<'a> {
    id: CandId<'a>,
    /// Identity for de-duplication: the address of the object or stored message.
    key: usize,
    kind: ObjectKind,
    source: Option<&'a str>,
    topic: Option<&'a str>,
    created_at: Timestamp,
    last_touched: Timestamp,
    by_user: Option<&'a str>,
    by_bot: bool,
    label: Option<&'a str>,
    active: bool,
    stale: bool,
    activated_by: Option<&'a str>,
    tier: Tier,
    chain_depth: Option<usize>,
    is_message: bool,
    /// A message whose live typed objects are candidates in their own right.
    carrier: bool,
    score: f64,
    mask: u32,
}

impl Cand<'_> {
    fn add(&mut self, points: f64, reason: R) {
        self.score += points;
        self.mask |= 1 << reason as u32;
    }
}

/// What the pool is built for.
struct Ctx<'a> {
    settings: &'a crate::settings::Settings,
    now: Timestamp,
    /// Candidates newer than this (the current message) are not offered.
    cutoff: Option<(Timestamp, u64)>,
    current_id: &'a str,
    topic: Option<&'a str>,
    allowed: Option<&'a [ObjectKind]>,
}

impl<'a> Ctx<'a> {
    fn allowed(&self, kind: ObjectKind) -> bool {
        self.allowed.is_none_or(|a| a.contains(&kind))
    }

    fn tier_for(&self, topic: Option<&str>) -> Tier {
        match self.topic {
            Some(t) if topic == Some(t) => Tier::Topic,
            _ => Tier::Chat,
        }
    }

    fn object(&self, o: &'a Object, tier: Tier, depth: Option<usize>) -> Option<Cand<'a>> {
        if !self.allowed(o.kind) || self.cutoff.is_some_and(|(t, _)| o.created_at > t) {
            return None;
        }
        let (active, stale) = match o.liveness(self.now, &self.settings.objects) {
            Liveness::Expired if !matches!(o.kind, ObjectKind::Message | ObjectKind::BotMessage) => return None,
            Liveness::Expired => (false, true),
            Liveness::Active { .. } => (true, o.closed_at.is_some()),
            Liveness::Known => (false, o.closed_at.is_some()),
        };
        let is_message = matches!(o.kind, ObjectKind::Message | ObjectKind::BotMessage);
        if is_message && o.source_message_id.as_deref() == Some(self.current_id) {
            return None; // the current message is the request, not a candidate
        }
        Some(Cand {
            id: CandId::Obj(&o.object_id),
            key: o as *const Object as usize,
            kind: o.kind,
            source: o.source_message_id.as_deref(),
            topic: o.topic_id.as_deref(),
            created_at: o.created_at,
            last_touched: o.last_touched_at,
            by_user: o.created_by_user_id.as_deref(),
            by_bot: o.created_by_bot,
            label: o.title_or_label.as_deref(),
            active,
            stale,
            activated_by: o.activated_by.as_deref(),
            tier,
            chain_depth: depth,
            is_message,
            carrier: false,
            score: if is_message { 0.0 } else { self.settings.resolver.typed_object },
            mask: 0,
        })
    }

    /// The `message` / `bot_message` candidate of a stored message (or its registry entry, which carries
    /// its activations).
    fn message(
        &self,
        chat: &'a Chat,
        item: &'a Item,
        topic: Option<&'a str>,
        tier: Tier,
        depth: Option<usize>,
    ) -> Option<Cand<'a>> {
        let mid = item.message_id.as_deref()?;
        if mid == self.current_id || self.cutoff.is_some_and(|c| item.key() > c) {
            return None;
        }
        let kind = if item.kind == ItemKind::OutboundAgent { ObjectKind::BotMessage } else { ObjectKind::Message };
        if !self.allowed(kind) || item.kind == ItemKind::System {
            return None;
        }
        // One look at the message's objects: a message candidate that was activated before is registered
        // (its entry carries the activation), and a message carrying live typed objects is their carrier.
        let mut registered = None;
        let mut carrier = false;
        for o in chat.objects.of_source(mid) {
            if o.kind == kind {
                registered = Some(o);
            } else if !matches!(o.kind, ObjectKind::Message | ObjectKind::BotMessage)
                && self.allowed(o.kind)
                && o.liveness(self.now, &self.settings.objects) != Liveness::Expired
            {
                carrier = true;
            }
        }
        if let Some(o) = registered {
            return self.object(o, tier, depth).map(|c| Cand { carrier, ..c });
        }
        let ttl = self.settings.objects.ttl(kind);
        Some(Cand {
            id: CandId::Msg(mid, kind),
            key: item as *const Item as usize,
            kind,
            source: Some(mid),
            topic,
            created_at: item.sent_at,
            last_touched: item.sent_at,
            by_user: chat.people.user_id(item.sender),
            by_bot: item.kind == ItemKind::OutboundAgent,
            label: Some(&item.text),
            active: false,
            stale: self.now >= item.sent_at.plus(ttl),
            activated_by: None,
            tier,
            chain_depth: depth,
            is_message: true,
            carrier,
            score: 0.0,
            mask: 0,
        })
    }
}

impl Engine {
    /// `resolve_reference_target`. A `resolved` answer is recorded as a `resolved` activation of the winner
    /// (docs/protocol.md §4), dated `now` and attributed to the current message.
    pub fn resolve_reference_target(
        &mut self,
        req: &ResolveReferenceTarget,
        now: Timestamp,
    ) -> Result<Resolution, Error> {
        let (mut resolution, winner) = {
            let chat =
                self.chat(&req.scope.channel, &req.scope.chat_id).ok_or_else(|| unknown_chat(&req.scope.chat_id))?;
            resolve(chat, self.settings(), req, now)
        };
        if let Some(id) = winner {
            resolution.recorded = self.record_resolved(&req.scope.channel, &req.scope.chat_id, &id, now, req.current());
        }
        Ok(resolution)
    }

    /// The answer of `resolve_reference_target` if giving it changes nothing: `None` when it would record an
    /// activation (then [`Engine::resolve_reference_target`] must give it, as a write).
    pub(crate) fn resolve_read_only(
        &self,
        req: &ResolveReferenceTarget,
        now: Timestamp,
    ) -> Result<Option<Resolution>, Error> {
        let chat = self.chat(&req.scope.channel, &req.scope.chat_id).ok_or_else(|| unknown_chat(&req.scope.chat_id))?;
        let (resolution, winner) = resolve(chat, self.settings(), req, now);
        Ok(match winner {
            Some(id) if would_record(chat, &id, now, req.current()) => None,
            _ => Some(resolution),
        })
    }
}

/// Whether [`Engine::record_resolved`] would change anything: what it compares, computed without changing it.
fn would_record(chat: &Chat, object_id: &str, now: Timestamp, by: &str) -> bool {
    let Some(o) = chat.objects.get(object_id) else {
        return crate::engine::message_candidate(chat, object_id).is_some();
    };
    if o.last_touched_at < now {
        return true;
    }
    if o.activated_at.is_some_and(|prev| prev > now) {
        return false;
    }
    !(o.activation == Some(Activation::Resolved)
        && o.activated_at == Some(now)
        && o.activated_by.as_deref() == Some(by))
}

/// Scores the pool; returns the answer and, when resolved, the winner's id.
/// A set of candidate keys (addresses, never 0) for one call: open addressing with linear probing, sized
/// to the call, so de-duplication costs a multiply and a probe or two per reference.
struct Seen {
    slots: Vec<usize>,
    mask: usize,
}

impl Seen {
    fn with_capacity(n: usize) -> Self {
        let size = n.max(16).next_power_of_two();
        Self { slots: vec![0; size], mask: size - 1 }
    }

    /// Inserts `key`; false when it was already there.
    fn insert(&mut self, key: usize) -> bool {
        // Fibonacci hashing of the address; its low bits are alignment, so shift them out first.
        let mut i = ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) & self.mask;
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = key;
                    return true;
                }
                k if k == key => return false,
                _ => i = (i + 1) & self.mask,
            }
        }
    }
}

/// Where a raw reference points.
#[derive(Clone, Copy)]
enum Src<'a> {
    Obj(&'a Object),
    Msg(&'a Item, Option<&'a str>),
}

/// A candidate before de-duplication: identity, tier and where to build it from.
#[derive(Clone, Copy)]
struct Raw<'a> {
    key: usize,
    tier: Tier,
    depth: Option<usize>,
    src: Src<'a>,
}

/// The candidate pool of a request, before scoring, with what scoring needs to know about the request.
struct Gathered<'a> {
    ctx: Ctx<'a>,
    pool: Vec<Cand<'a>>,
    reply_target: Option<&'a str>,
    fallback: bool,
}

fn resolve(
    chat: &Chat,
    settings: &crate::settings::Settings,
    req: &ResolveReferenceTarget,
    now: Timestamp,
) -> (Resolution, Option<String>) {
    let Gathered { ctx, mut pool, reply_target, fallback } = gather(chat, settings, req, now);
    let cfg = &settings.resolver;
    score(&mut pool, &ctx, req, reply_target, cfg);
    let rank = |a: &Cand<'_>, b: &Cand<'_>| {
        b.score
            .total_cmp(&a.score)
            .then(b.last_touched.cmp(&a.last_touched))
            .then(b.created_at.cmp(&a.created_at))
            .then_with(|| a.id.cmp(&b.id))
    };
    // A kind hint decides who may win: the others stay out of the answer (a reply to an image is not
    // "the poll"), so with no candidate of the hinted kind the answer is not_found rather than a guess.
    let kinds = &req.hints.target_kinds;
    let mut order: Vec<usize> =
        (0..pool.len()).filter(|&i| kinds.is_empty() || kinds.contains(&pool[i].kind)).collect();
    // Only the best few are ever shown: select them, then order them.
    let keep = req.max_candidates.max(2) + 1;
    if order.len() > keep {
        order.select_nth_unstable_by(keep - 1, |&a, &b| rank(&pool[a], &pool[b]));
        order.truncate(keep);
    }
    order.sort_by(|&a, &b| rank(&pool[a], &pool[b]));
    let ranked: Vec<&Cand<'_>> = order.iter().map(|&i| &pool[i]).collect();
    decide(&ranked, pool.len(), req, cfg, fallback)
}

/// Builds the bounded candidate pool: reply chain, scope, chat fallback; each candidate once.
fn gather<'a>(
    chat: &'a Chat,
    settings: &'a crate::settings::Settings,
    req: &'a ResolveReferenceTarget,
    now: Timestamp,
) -> Gathered<'a> {
    let cfg = &settings.resolver;
    let scope =
        chat.request_scope(req.scope.topic_id.as_deref(), Some(req.current()), req.reply_to_message_id.as_deref());
    let (topic, reply_target) = (scope.topic, scope.reply_target);
    let ctx = Ctx {
        settings,
        now,
        cutoff: scope.current.map(Item::key),
        current_id: req.current(),
        topic,
        allowed: req.allowed_kinds.as_deref(),
    };
    // Raw references first (cheap, with duplicates), full candidates only for the survivors.
    let mut raw: Vec<Raw<'_>> = Vec::with_capacity(128);
    let push_obj = |raw: &mut Vec<Raw<'a>>, o: &'a Object, tier: Tier, depth: Option<usize>| {
        if ctx.allowed(o.kind) && ctx.cutoff.is_none_or(|(t, _)| o.created_at <= t) {
            raw.push(Raw { key: o as *const Object as usize, tier, depth, src: Src::Obj(o) });
        }
    };
    let push_msg =
        |raw: &mut Vec<Raw<'a>>, item: &'a Item, topic: Option<&'a str>, tier: Tier, depth: Option<usize>| {
            raw.push(Raw { key: item as *const Item as usize, tier, depth, src: Src::Msg(item, topic) });
        };

    // 1. The reply chain, a few messages up from the reply target.
    for (depth, (mid, stored)) in chat.reply_chain(reply_target, cfg.reply_chain_depth).into_iter().enumerate() {
        for o in chat.objects.of_source(mid) {
            push_obj(&mut raw, o, Tier::ReplyChain, Some(depth));
        }
        if let Some((conv, item)) = stored {
            push_msg(&mut raw, item, conv.topic.as_deref(), Tier::ReplyChain, Some(depth));
        }
    }
    // 2. The scope: objects carried by the current message, the newest objects (overall and of the kinds
    //    asked for), the activations within the TTL horizon, the newest messages.
    for o in chat.objects.of_source(req.current()) {
        push_obj(&mut raw, o, ctx.tier_for(o.topic_id.as_deref()), None);
    }
    let home = ctx.tier_for(topic);
    if let Some(idx) = chat.objects.scope(topic) {
        for o in chat.objects.newest(idx, None).take(cfg.scope_window) {
            push_obj(&mut raw, o, home, None);
        }
        let focus: &[ObjectKind] = req.allowed_kinds.as_deref().unwrap_or(&req.hints.target_kinds);
        for &k in focus {
            for o in chat.objects.newest(idx, Some(k)).take(cfg.scope_window) {
                push_obj(&mut raw, o, home, None);
            }
        }
        let horizon = settings.objects.horizon();
        let recent =
            chat.objects.activations(idx).take_while(|o| o.activated_at.is_some_and(|a| now < a.plus(horizon)));
        for o in recent.take(cfg.scope_window) {
            push_obj(&mut raw, o, home, None);
        }
    }
    if let Some(conv) = chat.conv_of(topic) {
        for item in conv.before(ctx.cutoff).rev().take(cfg.message_window) {
            push_msg(&mut raw, item, topic, home, None);
        }
    }
    // 3. In a forum topic, the rest of the chat, penalized.
    let fallback = topic.is_some();
    if fallback {
        // A last resort, penalized anyway: a quarter of the window is enough.
        let fallback_window = cfg.scope_window.div_ceil(4);
        for o in chat.objects.newest_in_chat().filter(|o| o.topic_id.as_deref() != topic).take(fallback_window) {
            push_obj(&mut raw, o, Tier::Chat, None);
        }
    }

    // Each candidate once. References were pushed narrowest tier (and shallowest chain depth) first, so the
    // first occurrence is the one to keep. A registered message candidate can arrive both as a message and
    // as an object: its built candidate's key is the object's, checked as well.
    // At most two inserts per reference: four slots each keep the load at or below half.
    let mut seen = Seen::with_capacity(raw.len() * 4);
    let mut pool: Vec<Cand<'_>> = Vec::with_capacity(raw.len());
    for r in &raw {
        if !seen.insert(r.key) {
            continue;
        }
        let built = match r.src {
            Src::Obj(o) => ctx.object(o, r.tier, r.depth),
            Src::Msg(item, topic) => ctx.message(chat, item, topic, r.tier, r.depth),
        };
        if let Some(c) = built
            && (c.key == r.key || seen.insert(c.key))
        {
            pool.push(c);
        }
    }
    Gathered { ctx, pool, reply_target, fallback }
}

/// The scoring inputs of one gathered candidate, flat (for the side-by-side benchmark against a bare
/// linear pass; not part of the contract).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct FlatCandidate {
    /// Kind.
    pub kind: ObjectKind,
    /// 0 = the reply target.
    pub chain_depth: Option<usize>,
    /// Same topic as the request.
    pub same_topic: bool,
    /// Found in the chat fallback.
    pub fallback: bool,
    /// Active.
    pub active: bool,
    /// Closed or past TTL.
    pub stale: bool,
    /// Created by the sender.
    pub owned: bool,
    /// Created by the bot.
    pub by_bot: bool,
    /// A message candidate.
    pub is_message: bool,
    /// Activated while handling the current message.
    pub touched: bool,
    /// Seconds since the last touch.
    pub age_secs: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
}

impl Engine {
    /// The candidates `resolve_reference_target` would score for `req`, flat. For benchmarks.
    #[doc(hidden)]
    pub fn resolve_candidates(&self, req: &ResolveReferenceTarget, now: Timestamp) -> Vec<FlatCandidate> {
        let Some(chat) = self.chat(&req.scope.channel, &req.scope.chat_id) else { return Vec::new() };
        let g = gather(chat, self.settings(), req, now);
        g.pool
            .iter()
            .map(|c| FlatCandidate {
                kind: c.kind,
                chain_depth: c.chain_depth,
                same_topic: g.ctx.topic.is_some() && c.topic == g.ctx.topic,
                fallback: c.tier == Tier::Chat && g.ctx.topic.is_some(),
                active: c.active,
                stale: c.stale,
                owned: c.by_user == Some(req.sender()),
                by_bot: c.by_bot,
                is_message: c.is_message,
                touched: c.activated_by == Some(req.current()),
                age_secs: (now.unix() - c.last_touched.unix()).max(0),
                created_at: c.created_at.unix(),
            })
            .collect()
    }
}

fn score(
    pool: &mut [Cand<'_>],
    ctx: &Ctx<'_>,
    req: &ResolveReferenceTarget,
    reply_target: Option<&str>,
    cfg: &ResolverSettings,
) {
    let hints = &req.hints;
    // A carrier message is not the target, unless a message is asked for.
    let wants_message = hints.target_kinds.iter().any(|k| matches!(k, ObjectKind::Message | ObjectKind::BotMessage));
    let half_life = cfg.recency_half_life.secs().max(1) as f64;
    let recency_weight = if hints.recency == Some(Recency::Recent) { 2.0 * cfg.recency } else { cfg.recency };
    for c in pool.iter_mut() {
        match c.chain_depth {
            Some(0) => c.add(cfg.exact_reply_target, R::ExactReplyTarget),
            Some(_) => c.add(cfg.in_reply_chain, R::InReplyChain),
            None => {}
        }
        if ctx.topic.is_some() && c.topic == ctx.topic {
            c.add(cfg.same_topic, R::SameTopic);
        }
        if hints.target_kinds.contains(&c.kind) {
            c.add(cfg.kind_match, R::KindMatch);
        }
        if c.active {
            c.add(cfg.currently_active, R::CurrentlyActive);
            if hints.recency == Some(Recency::CurrentlyActive) {
                c.add(cfg.currently_active, R::CurrentlyActive);
            }
        }
        let age = (ctx.now.unix() - c.last_touched.unix()).max(0) as f64;
        c.score += recency_weight * half_life / (half_life + age);
        if age < half_life {
            c.mask |= 1 << R::RecentObject as u32;
        }
        match hints.ownership {
            Some(Ownership::Mine) if c.by_user == Some(req.sender()) => c.add(cfg.owned_by_sender, R::OwnedBySender),
            Some(Ownership::Mine) => c.score += cfg.not_owned,
            Some(Ownership::BotCreated) if c.by_bot => c.add(cfg.bot_created, R::BotCreated),
            _ => {}
        }
        if c.activated_by == Some(req.current()) {
            c.add(cfg.touched_in_interaction, R::TouchedInInteraction);
        }
        if c.carrier && !wants_message {
            c.add(cfg.carrier_message, R::CarrierMessage);
        }
        if c.stale {
            c.add(cfg.stale_penalty, R::StalePenalty);
        }
        if c.tier == Tier::Chat && ctx.topic.is_some() {
            c.add(cfg.weak_scope_fallback, R::WeakScopeFallback);
        }
    }

    // Positional and ordinal hints count candidates (of the hinted kind) by time.
    let positional = match (hints.positional, hints.recency) {
        (Some(p), _) => Some(p),
        (None, Some(Recency::Latest)) => Some(Positional::Latest),
        _ => None,
    };
    if positional.is_none() && hints.ordinal.is_none() {
        return;
    }
    // Carrier messages are not counted: "the newest" is the photo, not the message that carried it.
    let carrier = 1 << R::CarrierMessage as u32;
    let mut order: Vec<usize> = (0..pool.len())
        .filter(|&i| hints.target_kinds.is_empty() || hints.target_kinds.contains(&pool[i].kind))
        .filter(|&i| pool[i].mask & carrier == 0)
        .collect();
    order.sort_by(|&a, &b| pool[a].created_at.cmp(&pool[b].created_at).then_with(|| pool[a].id.cmp(&pool[b].id)));
    let newest = order.last().copied();
    let pick = |from_end: usize| order.len().checked_sub(1 + from_end).and_then(|i| order.get(i)).copied();
    let chosen: Vec<usize> = match positional {
        Some(Positional::RepliedMessage) => {
            order.iter().copied().filter(|&i| reply_target.is_some() && pool[i].chain_depth == Some(0)).collect()
        }
        Some(Positional::Latest) => newest.into_iter().collect(),
        Some(Positional::Previous) => pick(1).into_iter().collect(),
        Some(Positional::Above) => {
            let cut = ctx.cutoff.map(|(t, _)| t);
            order.iter().rev().copied().find(|&i| cut.is_none_or(|t| pool[i].created_at < t)).into_iter().collect()
        }
        Some(Positional::CurrentTopicRecent) => order
            .iter()
            .rev()
            .copied()
            .find(|&i| pool[i].tier != Tier::Chat || ctx.topic.is_none())
            .into_iter()
            .collect(),
        None => Vec::new(),
    };
    for i in chosen {
        pool[i].add(cfg.positional_hint, R::PositionalHint);
    }
    let ordinal = match hints.ordinal {
        Some(Ordinal::First) => order.first().copied(),
        Some(Ordinal::Second) => order.get(1).copied(),
        Some(Ordinal::Last) => newest,
        None => None,
    };
    if let Some(i) = ordinal {
        pool[i].add(cfg.ordinal_hint, R::OrdinalHint);
    }
}

fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

fn decide(
    pool: &[&Cand<'_>],
    scored: usize,
    req: &ResolveReferenceTarget,
    cfg: &ResolverSettings,
    fallback: bool,
) -> (Resolution, Option<String>) {
    let top = pool.first().map_or(0.0, |c| c.score);
    let second = pool.get(1).map_or(0.0, |c| c.score.max(0.0));
    let gap = (top - second).max(0.0);
    let diagnostics = Diagnostics { candidate_count: scored, top_score_gap: round(gap, 2) };
    let widest = if fallback { Tier::Chat } else { pool.first().map_or(Tier::Chat, |c| c.tier) };
    if pool.is_empty() || top < cfg.min_score {
        let confidence = round(0.25 * (top.max(0.0) / cfg.min_score.max(1.0)).min(1.0), 3).min(0.249);
        let resolution = Resolution {
            status: Status::NotFound,
            best_match: None,
            candidates: Vec::new(),
            confidence,
            reasons: Vec::new(),
            scope_used: widest,
            diagnostics,
            recorded: false,
        };
        return (resolution, None);
    }
    let chat_id = &req.scope.chat_id;
    let describe = |c: &Cand<'_>| Descriptor {
        object_id: c.id.render(),
        kind: c.kind,
        source_message_id: c.source.map(str::to_owned),
        chat_id: chat_id.clone(),
        topic_id: c.topic.map(str::to_owned),
        title_or_label: c.label.map(short_label).filter(|l| !l.is_empty()),
        created_by_user_id: c.by_user.map(str::to_owned),
        created_by_bot: c.by_bot,
        created_at: c.created_at,
        last_touched_at: c.last_touched,
    };
    let candidate =
        |c: &Cand<'_>| Candidate { descriptor: describe(c), score: round(c.score, 2), reasons: reasons_of(c.mask) };
    let first = pool[0];
    let reasons = reasons_of(first.mask);
    if gap < cfg.ambiguity_gap {
        let close: Vec<Candidate> = pool
            .iter()
            .take_while(|c| top - c.score < cfg.ambiguity_gap)
            .take(req.max_candidates.max(2))
            .map(|c| candidate(c))
            .collect();
        let confidence = round(0.25 + 0.25 * (gap / cfg.ambiguity_gap.max(1e-9)).min(1.0), 3).min(0.499);
        let resolution = Resolution {
            status: Status::Ambiguous,
            best_match: None,
            candidates: close,
            confidence,
            reasons,
            scope_used: first.tier,
            diagnostics,
            recorded: false,
        };
        return (resolution, None);
    }
    let strength = (top / (2.0 * cfg.min_score.max(1.0))).min(1.0);
    let margin = (gap / (3.0 * cfg.ambiguity_gap.max(1e-9))).min(1.0);
    let confidence = round(0.5 + 0.5 * strength * margin, 3);
    let winner = first.id.render();
    let resolution = Resolution {
        status: Status::Resolved,
        best_match: Some(describe(first)),
        candidates: pool.iter().take(req.max_candidates).map(|c| candidate(c)).collect(),
        confidence,
        reasons,
        scope_used: first.tier,
        diagnostics,
        recorded: false,
    };
    (resolution, Some(winner))
}

impl Engine {
    /// Records the winner's `resolved` activation, registering a message candidate first.
    /// Records the winner's activation; whether that changed anything (it does not when the same message
    /// already resolved to it at the same time, as in a repeated tool-loop call).
    fn record_resolved(&mut self, channel: &str, chat_id: &str, object_id: &str, now: Timestamp, by: &str) -> bool {
        let (settings, chat) = self.with_chat(channel, chat_id);
        let before = chat
            .objects
            .get(object_id)
            .map(|o| (o.activation, o.activated_at, o.activated_by.clone(), o.last_touched_at));
        if before.is_none()
            && let Some(o) = crate::engine::message_candidate(chat, object_id)
        {
            chat.objects.upsert(o, settings.objects.max_per_chat, &settings.objects);
        }
        chat.objects.activate(object_id, Activation::Resolved, now, Some(by));
        let after = chat
            .objects
            .get(object_id)
            .map(|o| (o.activation, o.activated_at, o.activated_by.clone(), o.last_touched_at));
        before != after
    }
}
