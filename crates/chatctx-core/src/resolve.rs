//! `resolve_reference_target` (SPEC §6.1): what "this", "the last poll", "the image above" point at,
//! from metadata, scope and recency only. Never a guess: `resolved` needs a clear winner, close candidates
//! are `ambiguous`, weak ones `not_found`.
//!
//! The candidate pool is bounded whatever the chat's size: the reply chain (a few messages up from the reply
//! target), the newest objects of the request's scope (overall and per hinted kind), the scope's activations
//! within the TTL horizon, the scope's newest messages, and in a forum the newest objects of the rest of the
//! chat (penalized). `raw_user_text` is never read: hints are the only language input.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::chat::{Chat, Item};
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::event::DEFAULT_CHANNEL;
use crate::json::{Fields, object};
use crate::kinds::{Activation, ItemKind, ObjectKind};
use crate::objects::{Liveness, Object, short_label};
use crate::settings::ResolverSettings;
use crate::time::Timestamp;

const RQ: ErrorCode = ErrorCode::InvalidRequest;

/// `positional_hint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positional {
    /// The message replied to.
    RepliedMessage,
    /// The newest.
    Latest,
    /// The one before the newest.
    Previous,
    /// The newest before the current message.
    Above,
    /// The newest in the current topic.
    CurrentTopicRecent,
}

/// `ordinal_hint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordinal {
    /// The earliest.
    First,
    /// The second earliest.
    Second,
    /// The newest.
    Last,
}

/// `ownership_hint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// Created by the sender.
    Mine,
    /// Created by the bot.
    BotCreated,
    /// Anyone.
    Any,
}

/// `recency_hint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recency {
    /// The newest.
    Latest,
    /// Recent ones count more.
    Recent,
    /// Active ones count more.
    CurrentlyActive,
}

/// `normalized_reference_hints`: language-neutral hints extracted by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    /// Position.
    pub positional: Option<Positional>,
    /// Ordinal.
    pub ordinal: Option<Ordinal>,
    /// The kinds a `target_kind_hint` names.
    pub target_kinds: Vec<ObjectKind>,
    /// Ownership.
    pub ownership: Option<Ownership>,
    /// Recency.
    pub recency: Option<Recency>,
}

/// The kinds a `target_kind_hint` word names: its own family (`file` is any document or PDF, `article` and
/// `link` include each other, `quote` and `message` are messages), or one exact kind.
pub fn hint_kinds(word: &str) -> Option<Vec<ObjectKind>> {
    use ObjectKind::*;
    Some(match word {
        "poll" => vec![Poll],
        "reminder" => vec![Reminder],
        "image" => vec![MediaImage],
        "video" => vec![MediaVideo],
        "voice" => vec![MediaVoice],
        "file" => vec![MediaDocument, MediaPdf],
        "pdf" => vec![MediaPdf],
        "article" => vec![Article, Link],
        "link" => vec![Link, Article],
        "summary" => vec![Summary],
        "quote" | "message" => vec![Message, BotMessage],
        other => vec![ObjectKind::parse(other)?],
    })
}

/// `resolve_reference_target` request.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveReferenceTarget {
    /// Platform.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The topic; defaults to the current message's.
    pub topic_id: Option<String>,
    /// The message being handled.
    pub current_message_id: String,
    /// The message it replies to; defaults to the stored current message's.
    pub reply_to_message_id: Option<String>,
    /// Who asks.
    pub sender_user_id: String,
    /// Hints.
    pub hints: Hints,
    /// Only these kinds.
    pub allowed_kinds: Option<Vec<ObjectKind>>,
    /// Candidates returned (1–10, default 3).
    pub max_candidates: usize,
    /// The time the answer is for.
    pub now: Option<Timestamp>,
}

impl ResolveReferenceTarget {
    /// Reads the request, naming any bad field.
    pub fn decode(v: &Value) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        let _ = f.str("raw_user_text")?; // accepted, never interpreted
        let hints = match f.obj("normalized_reference_hints")? {
            None => Hints::default(),
            Some(m) => {
                let h = Fields::new(m, "normalized_reference_hints", RQ);
                let target_kinds = match h.str("target_kind_hint")? {
                    None => Vec::new(),
                    Some(w) => hint_kinds(w).ok_or_else(|| {
                        h.err("target_kind_hint", &format!("unknown kind {w:?}; expected poll, reminder, image, video, voice, file, pdf, article, link, summary, quote, message or an exact kind"))
                    })?,
                };
                Hints {
                    positional: h
                        .one_of(
                            "positional_hint",
                            &["replied_message", "latest", "previous", "above", "current_topic_recent"],
                        )?
                        .map(|i| {
                            [
                                Positional::RepliedMessage,
                                Positional::Latest,
                                Positional::Previous,
                                Positional::Above,
                                Positional::CurrentTopicRecent,
                            ][i]
                        }),
                    ordinal: h
                        .one_of("ordinal_hint", &["first", "second", "last"])?
                        .map(|i| [Ordinal::First, Ordinal::Second, Ordinal::Last][i]),
                    target_kinds,
                    ownership: h
                        .one_of("ownership_hint", &["mine", "bot_created", "any"])?
                        .map(|i| [Ownership::Mine, Ownership::BotCreated, Ownership::Any][i]),
                    recency: h
                        .one_of("recency_hint", &["latest", "recent", "currently_active"])?
                        .map(|i| [Recency::Latest, Recency::Recent, Recency::CurrentlyActive][i]),
                }
            }
        };
        let allowed_kinds = match f.get("allowed_kinds") {
            None => None,
            Some(_) => Some(kinds_field(&f, "allowed_kinds")?),
        };
        let max_candidates = match f.u32("max_candidates")? {
            None => 3,
            Some(n @ 1..=10) => n as usize,
            Some(_) => return Err(f.err("max_candidates", "must be between 1 and 10")),
        };
        Ok(Self {
            channel: f.str("channel")?.filter(|s| !s.is_empty()).unwrap_or(DEFAULT_CHANNEL).to_owned(),
            chat_id: f.req_id("chat_id")?,
            topic_id: f.id("topic_id")?,
            current_message_id: f.req_id("current_message_id")?,
            reply_to_message_id: f.id("reply_to_message_id")?,
            sender_user_id: f.req_id("sender_user_id")?,
            hints,
            allowed_kinds,
            max_candidates,
            now: f.time("now")?,
        })
    }
}

/// Reads a list of exact object kinds.
pub(crate) fn kinds_field(f: &Fields<'_>, key: &str) -> Result<Vec<ObjectKind>, Error> {
    f.array(key)?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str().and_then(ObjectKind::parse).ok_or_else(|| {
                f.err(&format!("{key}[{i}]"), &format!("expected one of {}", ObjectKind::NAMES.join(", ")))
            })
        })
        .collect()
}

/// A compact, safe description of an object (no raw history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostics {
    /// Candidates scored.
    pub candidate_count: usize,
    /// Lead of the first over the second.
    pub top_score_gap: f64,
}

/// `resolve_reference_target` response.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// One candidate while scoring.
struct Cand<'a> {
    id: Cow<'a, str>,
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
        Some(Cand {
            id: Cow::Borrowed(&o.object_id),
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
        let id = format!("{mid}:{kind}");
        if let Some(o) = chat.objects.get(&id) {
            return self.object(o, tier, depth);
        }
        let ttl = self.settings.objects.ttl(kind);
        Some(Cand {
            id: Cow::Owned(id),
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
            score: 0.0,
            mask: 0,
        })
    }
}

impl Engine {
    /// `resolve_reference_target`. A `resolved` answer is recorded as a `resolved` activation of the winner
    /// (SPEC §4), dated `now` and attributed to the current message.
    pub fn resolve_reference_target(
        &mut self,
        req: &ResolveReferenceTarget,
        now: Timestamp,
    ) -> Result<Resolution, Error> {
        let (resolution, winner) = {
            let chat = self.chat(&req.channel, &req.chat_id).ok_or_else(|| unknown_chat(&req.chat_id))?;
            resolve(chat, self.settings(), req, now)
        };
        if let Some(id) = winner {
            self.record_resolved(&req.channel, &req.chat_id, &id, now, &req.current_message_id);
        }
        Ok(resolution)
    }
}

/// Scores the pool; returns the answer and, when resolved, the winner's id.
fn resolve(
    chat: &Chat,
    settings: &crate::settings::Settings,
    req: &ResolveReferenceTarget,
    now: Timestamp,
) -> (Resolution, Option<String>) {
    let cfg = &settings.resolver;
    let current = chat.message(&req.current_message_id);
    let topic: Option<&str> = match (&req.topic_id, current) {
        (Some(t), _) => Some(t.as_str()),
        (None, Some((conv, _))) => conv.topic.as_deref(),
        (None, None) => None,
    };
    let reply_target: Option<&str> =
        req.reply_to_message_id.as_deref().or_else(|| current.and_then(|(_, it)| it.reply_to.as_deref()));
    let ctx = Ctx {
        settings,
        now,
        cutoff: current.map(|(_, it)| it.key()),
        current_id: &req.current_message_id,
        topic,
        allowed: req.allowed_kinds.as_deref(),
    };
    let mut pool: Vec<Cand<'_>> = Vec::with_capacity(64);

    // 1. The reply chain, a few messages up from the reply target.
    let mut at = reply_target;
    for depth in 0..cfg.reply_chain_depth {
        let Some(mid) = at else { break };
        pool.extend(chat.objects.of_source(mid).filter_map(|o| ctx.object(o, Tier::ReplyChain, Some(depth))));
        let stored = chat.message(mid);
        if let Some((conv, item)) = stored {
            pool.extend(ctx.message(chat, item, conv.topic.as_deref(), Tier::ReplyChain, Some(depth)));
        }
        at = stored.and_then(|(_, it)| it.reply_to.as_deref());
    }
    // 2. The scope: objects carried by the current message, the newest objects (overall and of the kinds
    //    asked for), the activations within the TTL horizon, the newest messages.
    pool.extend(
        chat.objects
            .of_source(&req.current_message_id)
            .filter_map(|o| ctx.object(o, ctx.tier_for(o.topic_id.as_deref()), None)),
    );
    let home = ctx.tier_for(topic);
    if let Some(idx) = chat.objects.scope(topic) {
        pool.extend(chat.objects.newest(idx, None).take(cfg.scope_window).filter_map(|o| ctx.object(o, home, None)));
        let focus: &[ObjectKind] = req.allowed_kinds.as_deref().unwrap_or(&req.hints.target_kinds);
        for &k in focus {
            pool.extend(
                chat.objects.newest(idx, Some(k)).take(cfg.scope_window).filter_map(|o| ctx.object(o, home, None)),
            );
        }
        let horizon = settings.objects.horizon();
        pool.extend(
            chat.objects
                .activations(idx)
                .take_while(|o| o.activated_at.is_some_and(|a| now < a.plus(horizon)))
                .take(cfg.scope_window)
                .filter_map(|o| ctx.object(o, home, None)),
        );
    }
    if let Some(conv) = chat.conv_of(topic) {
        let before = ctx.cutoff;
        for item in conv.before(before).rev().take(cfg.message_window) {
            pool.extend(ctx.message(chat, item, topic, home, None));
        }
    }
    // 3. In a forum topic, the rest of the chat, penalized.
    let fallback = topic.is_some();
    if fallback {
        pool.extend(
            chat.objects
                .newest_in_chat()
                .filter(|o| o.topic_id.as_deref() != topic)
                .take(cfg.scope_window)
                .filter_map(|o| ctx.object(o, Tier::Chat, None)),
        );
    }

    // Each candidate once, keeping its narrowest tier and shallowest chain depth.
    pool.sort_by(|a, b| a.id.cmp(&b.id).then(a.tier.cmp(&b.tier)).then(a.chain_depth.cmp(&b.chain_depth)));
    pool.dedup_by(|later, first| later.id == first.id);

    score(&mut pool, &ctx, req, reply_target, cfg);

    pool.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.last_touched.cmp(&a.last_touched))
            .then(b.created_at.cmp(&a.created_at))
            .then(a.id.cmp(&b.id))
    });
    // A kind hint decides who may win: the others stay out of the answer (a reply to an image is not
    // "the poll"), so with no candidate of the hinted kind the answer is not_found rather than a guess.
    let scored = pool.len();
    if !req.hints.target_kinds.is_empty() {
        pool.retain(|c| req.hints.target_kinds.contains(&c.kind));
    }
    decide(pool, scored, req, cfg, fallback)
}

fn score(
    pool: &mut [Cand<'_>],
    ctx: &Ctx<'_>,
    req: &ResolveReferenceTarget,
    reply_target: Option<&str>,
    cfg: &ResolverSettings,
) {
    let hints = &req.hints;
    // Sources of typed candidates: their messages are carriers, not targets (unless a message is asked for).
    let mut carried: Vec<&str> = pool.iter().filter(|c| !c.is_message).filter_map(|c| c.source).collect();
    carried.sort_unstable();
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
            Some(Ownership::Mine) if c.by_user == Some(req.sender_user_id.as_str()) => {
                c.add(cfg.owned_by_sender, R::OwnedBySender)
            }
            Some(Ownership::Mine) => c.score += cfg.not_owned,
            Some(Ownership::BotCreated) if c.by_bot => c.add(cfg.bot_created, R::BotCreated),
            _ => {}
        }
        if c.activated_by == Some(req.current_message_id.as_str()) {
            c.add(cfg.touched_in_interaction, R::TouchedInInteraction);
        }
        if c.is_message && !wants_message && c.source.is_some_and(|s| carried.binary_search(&s).is_ok()) {
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
    order.sort_by(|&a, &b| pool[a].created_at.cmp(&pool[b].created_at).then(pool[a].id.cmp(&pool[b].id)));
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
    pool: Vec<Cand<'_>>,
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
        };
        return (resolution, None);
    }
    let chat_id = &req.chat_id;
    let describe = |c: &Cand<'_>| Descriptor {
        object_id: c.id.to_string(),
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
    let first = &pool[0];
    let reasons = reasons_of(first.mask);
    if gap < cfg.ambiguity_gap {
        let close: Vec<Candidate> = pool
            .iter()
            .take_while(|c| top - c.score < cfg.ambiguity_gap)
            .take(req.max_candidates.max(2))
            .map(candidate)
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
        };
        return (resolution, None);
    }
    let strength = (top / (2.0 * cfg.min_score.max(1.0))).min(1.0);
    let margin = (gap / (3.0 * cfg.ambiguity_gap.max(1e-9))).min(1.0);
    let confidence = round(0.5 + 0.5 * strength * margin, 3);
    let winner = first.id.to_string();
    let resolution = Resolution {
        status: Status::Resolved,
        best_match: Some(describe(first)),
        candidates: pool.iter().take(req.max_candidates).map(candidate).collect(),
        confidence,
        reasons,
        scope_used: first.tier,
        diagnostics,
    };
    (resolution, Some(winner))
}

impl Engine {
    fn record_resolved(&mut self, channel: &str, chat_id: &str, object_id: &str, now: Timestamp, by: &str) {
        let event = crate::event::ActivationEvent {
            channel: channel.to_owned(),
            target: crate::event::ObjectRef::Id { chat_id: chat_id.to_owned(), object_id: object_id.to_owned() },
            event: Activation::Resolved,
            at: now,
            by_user_id: None,
            message_id: Some(by.to_owned()),
            close: false,
        };
        // A winner that is not registered is a message candidate, which the activation registers; the
        // winner was just found in this chat, so the activation cannot be refused.
        let _ = self.apply(crate::event::Event::Activation(event));
    }
}
