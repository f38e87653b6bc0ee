//! Scoring: each candidate's points and reason codes, from scope, kind, ownership, recency and the hints.

use super::answer::best_few;
use super::pool::{Cand, Ctx, same_id};
use super::round;
use super::{Ordinal, Ownership, Positional, Recency, ResolveReferenceTarget, Tier};
use crate::kinds::{KindSet, R, REASONS};
use crate::settings::ResolverSettings;
use crate::time::Timestamp;

pub(super) fn score(
    pool: &mut [Cand<'_>],
    ctx: &Ctx<'_>,
    req: &ResolveReferenceTarget,
    hinted: KindSet,
    reply_target: Option<&str>,
    cfg: &ResolverSettings,
) {
    let hints = &req.hints;
    let w = Weighing {
        hinted,
        // A carrier message is not the target, unless a message is asked for.
        wants_message: hints.target_kinds.iter().any(|k| k.is_message()),
        half_life: half_life(cfg),
        recency_weight: if hints.recency == Some(Recency::Recent) { 2.0 * cfg.recency } else { cfg.recency },
    };
    for c in pool.iter_mut() {
        features(c, ctx, req, cfg, &w);
    }
    by_position(pool, ctx, req, hinted, reply_target, cfg);
}

/// What every candidate's points read of the request, computed once.
struct Weighing {
    /// The set of `hints.target_kinds`.
    hinted: KindSet,
    wants_message: bool,
    half_life: f64,
    recency_weight: f64,
}

/// One candidate's own points: scope, kind, activity, recency, ownership, interaction, staleness.
fn features(c: &mut Cand<'_>, ctx: &Ctx<'_>, req: &ResolveReferenceTarget, cfg: &ResolverSettings, w: &Weighing) {
    let hints = &req.hints;
    match c.chain_depth {
        Some(0) => c.add(cfg.exact_reply_target, R::ExactReplyTarget),
        Some(_) => c.add(cfg.in_reply_chain, R::InReplyChain),
        None => {}
    }
    debug_assert!(!c.in_topic || c.topic() == ctx.topic, "found through its topic's index, in another topic");
    // A stored message carries its conversation's topic string, which is the request's when the request took its
    // topic from its current message: then told by address, without reading it.
    let same = |t: &str| c.in_topic || c.topic().is_some_and(|own| std::ptr::eq(own, t) || same_id(own, t));
    if ctx.topic.is_some_and(same) {
        c.add(cfg.same_topic, R::SameTopic);
    }
    if w.hinted.contains(c.kind) {
        c.add(cfg.kind_match, R::KindMatch);
    }
    if c.active {
        c.add(cfg.currently_active, R::CurrentlyActive);
        if hints.recency == Some(Recency::CurrentlyActive) {
            c.add(cfg.currently_active, R::CurrentlyActive);
        }
    }
    let (points, age) = recency(w.recency_weight, w.half_life, ctx.now, c.last_touched);
    c.score += points;
    if age < w.half_life {
        c.mask |= 1 << R::RecentObject as u32;
    }
    match hints.ownership {
        Some(Ownership::Mine) if c.by_user() == Some(req.sender()) => c.add(cfg.owned_by_sender, R::OwnedBySender),
        Some(Ownership::Mine) => c.score += cfg.not_owned,
        Some(Ownership::BotCreated) if c.by_bot => c.add(cfg.bot_created, R::BotCreated),
        _ => {}
    }
    if c.activated_by().is_some_and(|by| same_id(by, req.current())) {
        c.add(cfg.touched_in_interaction, R::TouchedInInteraction);
    }
    if c.carrier && !w.wants_message {
        c.add(cfg.carrier_message, R::CarrierMessage);
    }
    if c.stale {
        c.add(cfg.stale_penalty, R::StalePenalty);
    }
    if c.tier == Tier::Chat && ctx.topic.is_some() {
        c.add(cfg.weak_scope_fallback, R::WeakScopeFallback);
    }
}

/// Positional and ordinal hints count candidates (of the hinted kind) by time.
fn by_position(
    pool: &mut [Cand<'_>],
    ctx: &Ctx<'_>,
    req: &ResolveReferenceTarget,
    hinted: KindSet,
    reply_target: Option<&str>,
    cfg: &ResolverSettings,
) {
    let hints = &req.hints;
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
    let view: &[Cand<'_>] = pool;
    let counted =
        || (0..view.len()).filter(|&i| hinted.admits(view[i].kind)).filter(move |&i| view[i].mask & carrier == 0);
    // By time, then id: candidates' ids differ, so the order is total and each pick below is the one a sort of
    // all of them would give.
    let by_time =
        |a: usize, b: usize| view[a].created_at.cmp(&view[b].created_at).then_with(|| view[a].id().cmp(&view[b].id()));
    let newest =
        |n: usize, also: &dyn Fn(usize) -> bool| best_few(counted().filter(|&i| also(i)), n, |a, b| by_time(b, a));
    let oldest = |n: usize| best_few(counted(), n, by_time);
    let any = |_: usize| true;
    let chosen: Vec<usize> = match positional {
        Some(Positional::RepliedMessage) => {
            counted().filter(|&i| reply_target.is_some() && view[i].chain_depth == Some(0)).collect()
        }
        Some(Positional::Latest) => newest(1, &any),
        Some(Positional::Previous) => newest(2, &any).get(1).copied().into_iter().collect(),
        Some(Positional::Above) => {
            let cut = ctx.cutoff.map(|(t, _)| t);
            newest(1, &|i| cut.is_none_or(|t| view[i].created_at < t))
        }
        Some(Positional::CurrentTopicRecent) => newest(1, &|i| view[i].tier != Tier::Chat || ctx.topic.is_none()),
        None => Vec::new(),
    };
    let ordinal = match hints.ordinal {
        Some(Ordinal::First) => oldest(1).first().copied(),
        Some(Ordinal::Second) => oldest(2).get(1).copied(),
        Some(Ordinal::Last) => newest(1, &any).first().copied(),
        None => None,
    };
    for i in chosen {
        pool[i].add(cfg.positional_hint, R::PositionalHint);
    }
    if let Some(i) = ordinal {
        pool[i].add(cfg.ordinal_hint, R::OrdinalHint);
    }
}

/// What a resolve record keeps of the request beyond each candidate's reason bits and kind: the flags for
/// the points no reason bit tells (an ownership hint of `mine`, whose candidates without `owned_by_sender`
/// lost `not_owned`; `currently_active` counted twice; recency weighed twice).
pub(super) fn asked(req: &ResolveReferenceTarget) -> u8 {
    let hints = &req.hints;
    let mut flags = 0;
    if hints.ownership == Some(Ownership::Mine) {
        flags |= MINE;
    }
    if hints.recency == Some(Recency::CurrentlyActive) {
        flags |= ACTIVE_TWICE;
    }
    if hints.recency == Some(Recency::Recent) {
        flags |= RECENT_TWICE;
    }
    flags
}

const MINE: u8 = 1;
const ACTIVE_TWICE: u8 = 2;
const RECENT_TWICE: u8 = 4;

/// The parts of a recorded candidate's score: the same rules as [`features`] and [`by_position`], read back
/// from its kind, its reason bits and what the request [`asked`]. They add up to its score.
pub(super) fn parts(
    c: &crate::decision::CandidateVerdict,
    id: &str,
    d: &crate::decision::ResolveDecision,
) -> Vec<crate::decision::ScorePart> {
    let (cfg, now, asked) = (&d.weights, d.now, d.asked);
    let mut out: Vec<(&'static str, f64)> = Vec::with_capacity(8);
    if !c.kind.is_message() {
        out.push(("typed_object", cfg.typed_object));
    }
    for (bit, name) in REASONS.iter().enumerate() {
        if c.mask & (1 << bit) == 0 {
            continue;
        }
        let points = match bit {
            b if b == R::ExactReplyTarget as usize => cfg.exact_reply_target,
            b if b == R::InReplyChain as usize => cfg.in_reply_chain,
            b if b == R::SameTopic as usize => cfg.same_topic,
            b if b == R::KindMatch as usize => cfg.kind_match,
            b if b == R::CurrentlyActive as usize => {
                cfg.currently_active * if asked & ACTIVE_TWICE != 0 { 2.0 } else { 1.0 }
            }
            b if b == R::BotCreated as usize => cfg.bot_created,
            b if b == R::OwnedBySender as usize => cfg.owned_by_sender,
            b if b == R::TouchedInInteraction as usize => cfg.touched_in_interaction,
            b if b == R::PositionalHint as usize => cfg.positional_hint,
            b if b == R::OrdinalHint as usize => cfg.ordinal_hint,
            b if b == R::CarrierMessage as usize => cfg.carrier_message,
            b if b == R::StalePenalty as usize => cfg.stale_penalty,
            b if b == R::WeakScopeFallback as usize => cfg.weak_scope_fallback,
            _ => continue, // recent_object is a flag; its points are the recency part
        };
        out.push((name, points));
    }
    let weight = if asked & RECENT_TWICE != 0 { 2.0 * cfg.recency } else { cfg.recency };
    out.push(("recency", recency(weight, half_life(cfg), now, c.last_touched).0));
    // Under `mine`, a candidate is the sender's (`owned_by_sender`) or loses `not_owned` (see `features`).
    if asked & MINE != 0 && c.mask & (1 << R::OwnedBySender as u32) == 0 {
        out.push(("not_owned", cfg.not_owned));
    }
    debug_assert!(
        (out.iter().map(|p| p.1).sum::<f64>() - c.score).abs() < 1e-6,
        "the score parts of {} do not add up to its score",
        id
    );
    out.into_iter().map(|(part, points)| crate::decision::ScorePart { part, points: round(points, 3) }).collect()
}

/// The recency half-life in seconds (at least one).
fn half_life(cfg: &ResolverSettings) -> f64 {
    cfg.recency_half_life.secs().max(1) as f64
}

/// The recency points of something last touched at `touched`, and its age in seconds: one formula for the score and
/// for the record's parts, which must add up to it.
fn recency(weight: f64, half_life: f64, now: Timestamp, touched: Timestamp) -> (f64, f64) {
    let age = (now.unix() - touched.unix()).max(0) as f64;
    (weight * half_life / (half_life + age), age)
}
