//! `resolve_reference_target` (docs/protocol.md §6.1): what "this", "the last poll", "the image above" point at,
//! from metadata, scope and recency only. Never a guess: `resolved` needs a clear winner, close candidates
//! are `ambiguous`, weak ones `not_found`.
//!
//! The candidate pool is bounded whatever the chat's size: the reply chain (a few messages up from the reply
//! target), the newest objects of the request's scope (overall and per hinted kind), the scope's activations
//! within the TTL horizon, the scope's newest messages, and in a forum the newest objects of the rest of the
//! chat (penalized). A message that refers to nothing is not resolved (`refers`); hints are the only input on
//! *what* is meant.
//!
//! Here: the request and the engine's entry points; `answer` holds the response types and the decision between
//! resolved, ambiguous and not_found, `pool` gathers the candidates and `score` scores them.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::chat::Chat;
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::json::{Fields, object};
use crate::kinds::{Activation, KindName, KindSet, ObjectKind};
use crate::settings::ResolverSettings;
use crate::time::Timestamp;
use crate::tools::request::Id;
use crate::tools::request::{Request, Scope, ScopeUse, scoped_request};

mod answer;
mod pool;
pub mod refers;
mod score;

pub use crate::kinds::{Reasons, Status, Tier};
pub(crate) use answer::descriptor;
pub use answer::{Candidate, Descriptor, Diagnostics, Resolution};
use answer::{best_few, decide};
pub use pool::FlatCandidate;
use pool::{Cand, Gathered, gather};
use score::score;

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
    /// The user's words, when they are not the stored current message's (the bot rewrote them, say): read
    /// only for whether they refer to anything (docs/resolver.md); hints stay the only way to say what.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_user_text: Option<String>,
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
        let hints = match f.obj("normalized_reference_hints")? {
            None => Hints::default(),
            Some(m) => Hints::decode(&Fields::new(m, "normalized_reference_hints", RQ))?,
        };
        Ok(Self {
            scope: Scope::decode(&f, Self::SCOPE, defaults)?,
            reply_to_message_id: f.id("reply_to_message_id")?,
            raw_user_text: f.str("raw_user_text")?.map(str::to_owned),
            hints,
            allowed_kinds: kinds_field(&f, "allowed_kinds")?,
            max_candidates: f.count_in("max_candidates", default_candidates(), MAX_CANDIDATES)?,
            now: f.time("now")?,
        })
    }

    scoped_request!(now);
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

    /// Where the request stands in `chat`: its current message, topic and reply target.
    pub(crate) fn scope_in<'a>(&'a self, chat: &'a Chat) -> crate::chat::RequestScope<'a> {
        chat.request_scope(self.scope.topic_id.as_deref(), Some(self.current()), self.reply_to_message_id.as_deref())
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

impl Engine {
    /// `resolve_reference_target`. A `resolved` answer is recorded as a `resolved` activation of the winner
    /// (docs/protocol.md §4), dated `now` and attributed to the current message.
    pub fn resolve_reference_target(
        &mut self,
        req: &ResolveReferenceTarget,
        now: Timestamp,
    ) -> Result<Resolution, Error> {
        // One lookup of the chat for the answer and for recording its winner.
        let (settings, chat) = self
            .with_known_chat(&req.scope.channel, &req.scope.chat_id)
            .ok_or_else(|| unknown_chat(&req.scope.chat_id))?;
        let mut resolution = resolve(chat, settings, req, now);
        if let Some(id) = winner(&resolution) {
            resolution.recorded = record_resolved(settings, chat, &id, now, req.current());
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
        let resolution = resolve(chat, self.settings(), req, now);
        Ok(match winner(&resolution) {
            Some(id) if would_record(chat, &id, now, req.current()) => None,
            _ => Some(resolution),
        })
    }
}

/// The winner of a `resolved` answer (its best match; an answer has one only then).
fn winner(resolution: &Resolution) -> Option<std::sync::Arc<str>> {
    resolution.best_match.as_ref().map(|b| b.object_id.clone())
}

/// Whether [`record_resolved`] would change anything: what it compares, computed without changing it.
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

/// Scores the pool; returns the answer (a resolved one names its winner as its best match).
fn resolve(
    chat: &Chat,
    settings: &crate::settings::Settings,
    req: &ResolveReferenceTarget,
    now: Timestamp,
) -> Resolution {
    let cfg = &settings.resolver;
    let scope = req.scope_in(chat);
    if cfg.require_reference && !refers_to_something(chat, req, scope.current) {
        let mut resolution = no_reference(req, cfg);
        if req.scope.explain || settings.decisions.keep > 0 {
            resolution.explain = Some(Box::new(crate::decision::ResolveDecision {
                status: resolution.status,
                candidates: Vec::new(),
                why: "no_reference",
                top_score_gap: 0.0,
                now,
                weights: cfg.clone(),
                asked: 0,
                kinds: Default::default(),
            }));
        }
        return resolution;
    }
    let Gathered { ctx, mut pool, reply_target, fallback } = gather(chat, settings, req, &scope, now);
    // A kind hint decides who may win: the others stay out of the answer (a reply to an image is not
    // "the poll"), so with no candidate of the hinted kind the answer is not_found rather than a guess.
    let hinted = KindSet::of(&req.hints.target_kinds);
    score(&mut pool, &ctx, req, hinted, reply_target, cfg);
    let rank = |a: &Cand<'_>, b: &Cand<'_>| {
        b.score
            .total_cmp(&a.score)
            .then(b.last_touched.cmp(&a.last_touched))
            .then(b.created_at.cmp(&a.created_at))
            .then_with(|| a.id().cmp(&b.id()))
    };
    // Only the best few are ever shown. `rank` orders candidates totally (their ids differ), so these are the
    // first few of the whole pool sorted.
    let keep = req.max_candidates.max(2) + 1;
    let eligible = pool.iter().filter(|c| hinted.admits(c.kind));
    let ranked = best_few(eligible, keep, rank);
    let mut resolution = decide(&ranked, pool.len(), req, cfg, fallback);
    if req.scope.explain || settings.decisions.keep > 0 {
        let top = ranked.first().map(|c| c.score);
        resolution.explain = Some(Box::new(record(&pool, top, hinted, &ctx, req, cfg, &resolution)));
    }
    resolution
}

/// Whether the request has anything to resolve: a reply target, a hint or a kind filter (the caller read a
/// reference), objects the current message carries, or a referring expression in its words (`raw_user_text`,
/// else the stored message's text).
fn refers_to_something(chat: &Chat, req: &ResolveReferenceTarget, current: Option<&crate::chat::Item>) -> bool {
    if req.reply_to_message_id.is_some() || !req.hints.is_empty() || req.allowed_kinds.is_some() {
        return true;
    }
    if current.is_some_and(|i| i.reply_to.is_some()) || chat.objects.of_source(req.current()).next().is_some() {
        return true;
    }
    match (&req.raw_user_text, current) {
        (Some(text), _) => refers::refers(text),
        (None, Some(item)) => refers::refers(&item.text),
        // A message chatctx does not hold: nothing says it refers to nothing.
        (None, None) => true,
    }
}

/// `not_found` for a message that refers to nothing (nothing scored, nothing recorded).
fn no_reference(req: &ResolveReferenceTarget, cfg: &ResolverSettings) -> Resolution {
    let mut r = decide(&[], 0, req, cfg, false);
    r.confidence = 0.0;
    r.why = Some("no_reference");
    r
}

/// The decision record of a resolution: every scored candidate, compact (see [`crate::decision::CandidateVerdict`]).
/// `top` is the best score among those the kind hint lets win (`hinted`).
fn record(
    pool: &[Cand<'_>],
    top: Option<f64>,
    hinted: KindSet,
    ctx: &pool::Ctx<'_>,
    req: &ResolveReferenceTarget,
    cfg: &ResolverSettings,
    resolution: &Resolution,
) -> crate::decision::ResolveDecision {
    let candidates: Vec<crate::decision::CandidateVerdict> = pool
        .iter()
        .map(|c| {
            let (id, message) = match c.of {
                pool::Of::Msg { mid, .. } => (mid.clone(), true),
                pool::Of::Obj(o) => (o.object_id.clone(), false),
            };
            crate::decision::CandidateVerdict {
                id,
                message,
                kind: c.kind,
                tier: c.tier,
                score: c.score,
                mask: c.mask,
                last_touched: c.last_touched,
                created_at: c.created_at,
            }
        })
        .collect();
    let why = match (resolution.status, top) {
        (Status::Resolved, _) => "resolved",
        (Status::Ambiguous, _) => "ambiguous",
        (Status::NotFound, _) if pool.is_empty() => "no_candidates",
        (Status::NotFound, None) => "no_candidate_of_kind",
        (Status::NotFound, Some(top)) if top < cfg.min_score => "below_min_score",
        (Status::NotFound, Some(_)) => "not_found",
    };
    crate::decision::ResolveDecision {
        status: resolution.status,
        candidates,
        why,
        top_score_gap: resolution.diagnostics.top_score_gap,
        now: ctx.now,
        weights: cfg.clone(),
        asked: score::asked(req),
        kinds: hinted,
    }
}

impl crate::decision::ResolveDecision {
    /// The record as it is written out: candidates best first, each with its score parts and rank. (Here,
    /// beside the scoring that the parts decompose, so that `decision` stays a leaf.)
    pub fn view(&self) -> crate::decision::ResolveView {
        view(self)
    }
}

impl Serialize for crate::decision::ResolveDecision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        view(self).serialize(s)
    }
}

/// A resolve record written out: candidates best first (those a kind hint excluded last), with the parts of
/// their scores, their reason codes and ranks.
fn view(d: &crate::decision::ResolveDecision) -> crate::decision::ResolveView {
    let mut order: Vec<(String, &crate::decision::CandidateVerdict)> = d.candidates_with_ids().collect();
    order.sort_by(|(a_id, a), (b_id, b)| {
        d.eligible(b)
            .cmp(&d.eligible(a))
            .then(b.score.total_cmp(&a.score))
            .then(b.last_touched.cmp(&a.last_touched))
            .then(b.created_at.cmp(&a.created_at))
            .then_with(|| a_id.cmp(b_id))
    });
    crate::decision::ResolveView {
        status: d.status,
        candidates: order
            .into_iter()
            .enumerate()
            .map(|(i, (object_id, c))| crate::decision::CandidateView {
                parts: score::parts(c, &object_id, d),
                object_id,
                kind: c.kind,
                tier: c.tier,
                score: round(c.score, 2),
                reasons: Reasons::of(c.mask),
                rank: d.eligible(c).then_some(i + 1),
            })
            .collect(),
        why: d.why,
        min_score: d.weights.min_score,
        ambiguity_gap: d.weights.ambiguity_gap,
        top_score_gap: d.top_score_gap,
    }
}

/// Records the winner's `resolved` activation, registering a message candidate first; whether that changed anything
/// (it does not when the same message already resolved to it at the same time, as in a repeated tool-loop call).
fn record_resolved(
    settings: &crate::settings::Settings,
    chat: &mut Chat,
    object_id: &str,
    now: Timestamp,
    by: &str,
) -> bool {
    // An activation sets `activated_by` to `by` or leaves it: whether it is `by` tells whether it changed.
    let state = |o: &crate::objects::Object| {
        (o.activation, o.activated_at, o.activated_by.as_deref() == Some(by), o.last_touched_at)
    };
    let before = chat.objects.get(object_id).map(state);
    if before.is_none()
        && let Some(o) = crate::engine::message_candidate(chat, object_id)
    {
        chat.register(o, settings.objects.max_per_chat, &settings.objects);
    }
    let after = chat.objects.activate(object_id, Activation::Resolved, now, Some(by)).map(state);
    before != after
}

/// `x` rounded to `places` decimals, as answers show scores.
fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}
