//! The answer: descriptors, candidates, reason codes, and the decision between resolved, ambiguous and
//! not_found.

use super::pool::{Cand, Of};
use super::{ResolveReferenceTarget, Status, Tier, round};
use crate::kinds::{ObjectKind, Reasons};
use crate::objects::{Object, short_label_arc, short_label_shared};
use crate::settings::ResolverSettings;
use crate::time::Timestamp;
use schemars::JsonSchema;
use serde::Serialize;
use std::sync::Arc;

/// A compact, safe description of an object (no raw history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Descriptor {
    /// Id.
    pub object_id: Arc<str>,
    /// Kind.
    pub kind: ObjectKind,
    /// The message that carries it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_message_id: Option<Arc<str>>,
    /// The chat.
    pub chat_id: Arc<str>,
    /// The topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<Arc<str>>,
    /// At most 80 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title_or_label: Option<Arc<str>>,
    /// Who created it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by_user_id: Option<Arc<str>>,
    /// Whether the bot created it.
    pub created_by_bot: bool,
    /// When it became known.
    pub created_at: Timestamp,
    /// Last change or activation.
    pub last_touched_at: Timestamp,
    /// Who posted it, as the prompt refers to them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<Arc<str>>,
    /// The first words of the message that carries it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<Arc<str>>,
    /// The platform's file reference (media, files): enough to send or fetch it again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<Arc<crate::event::FileRef>>,
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
    pub reasons: Reasons,
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
    pub reasons: Reasons,
    /// Where the answer was found.
    pub scope_used: Tier,
    /// For logs.
    pub diagnostics: Diagnostics,
    /// Why nothing was resolved, when the message refers to nothing: `no_reference` (docs/resolver.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<&'static str>,
    /// Whether recording this answer's `resolved` activation changed the state (not part of the answer).
    #[serde(skip)]
    pub recorded: bool,
    /// How the answer was reached (docs/protocol.md §6.7): in the answer when the request says
    /// `"explain": true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::decision::ResolveView>")]
    pub explain: Option<Box<crate::decision::ResolveDecision>>,
}

pub(super) fn decide(
    pool: &[&Cand<'_>],
    scored: usize,
    req: &ResolveReferenceTarget,
    cfg: &ResolverSettings,
    fallback: bool,
) -> Resolution {
    let top = pool.first().map_or(0.0, |c| c.score);
    let second = pool.get(1).map_or(0.0, |c| c.score.max(0.0));
    let gap = (top - second).max(0.0);
    let diagnostics = Diagnostics { candidate_count: scored, top_score_gap: round(gap, 2) };
    let widest = if fallback { Tier::Chat } else { pool.first().map_or(Tier::Chat, |c| c.tier) };
    if pool.is_empty() || top < cfg.min_score {
        let confidence = round(0.25 * (top.max(0.0) / cfg.min_score.max(1.0)).min(1.0), 3).min(0.249);
        return Resolution {
            status: Status::NotFound,
            best_match: None,
            candidates: Vec::new(),
            confidence,
            reasons: Reasons::default(),
            scope_used: widest,
            diagnostics,
            why: None,
            recorded: false,
            explain: None,
        };
    }
    // One string for the answer's descriptors, each taking a count.
    let chat_id: Arc<str> = req.scope.chat_id.as_str().into();
    let describe = |c: &Cand<'_>| describe(c, &chat_id);
    let candidate =
        |c: &Cand<'_>| Candidate { descriptor: describe(c), score: round(c.score, 2), reasons: Reasons::of(c.mask) };
    let first = pool[0];
    let reasons = Reasons::of(first.mask);
    if gap < cfg.ambiguity_gap {
        let close: Vec<Candidate> = pool
            .iter()
            .take_while(|c| top - c.score < cfg.ambiguity_gap)
            .take(req.max_candidates.max(2))
            .map(|c| candidate(c))
            .collect();
        let confidence = round(0.25 + 0.25 * (gap / cfg.ambiguity_gap.max(1e-9)).min(1.0), 3).min(0.499);
        return Resolution {
            status: Status::Ambiguous,
            best_match: None,
            candidates: close,
            confidence,
            reasons,
            scope_used: first.tier,
            diagnostics,
            why: None,
            recorded: false,
            explain: None,
        };
    }
    let strength = (top / (2.0 * cfg.min_score.max(1.0))).min(1.0);
    let margin = (gap / (3.0 * cfg.ambiguity_gap.max(1e-9))).min(1.0);
    let confidence = round(0.5 + 0.5 * strength * margin, 3);
    let candidates: Vec<Candidate> = pool.iter().take(req.max_candidates).map(|c| candidate(c)).collect();
    Resolution {
        status: Status::Resolved,
        // The first candidate's, copied rather than described again (`max_candidates` is at least 1).
        best_match: candidates.first().map(|c| c.descriptor.clone()),
        candidates,
        confidence,
        reasons,
        scope_used: first.tier,
        diagnostics,
        why: None,
        recorded: false,
        explain: None,
    }
}

/// The descriptor of a registered object, its strings shared with it (resolve's candidates and list's objects).
pub(crate) fn descriptor(chat_id: &Arc<str>, o: &Object) -> Descriptor {
    Descriptor {
        object_id: o.object_id.clone(),
        kind: o.kind,
        source_message_id: o.source_message_id.clone(),
        chat_id: chat_id.clone(),
        topic_id: o.topic_id.clone(),
        title_or_label: o.title_or_label.as_ref().map(short_label_shared).filter(|l| !l.is_empty()),
        created_by_user_id: o.created_by_user_id.clone(),
        created_by_bot: o.created_by_bot,
        created_at: o.created_at,
        last_touched_at: o.last_touched_at,
        author: o.author.clone(),
        caption: o.caption.clone(),
        file: o.file.clone(),
    }
}

/// A candidate's descriptor: a registered object's ([`descriptor`]; a candidate's times and flags are its
/// object's), or a stored message's, its strings shared with its chat (its topic, its sender's id and reference)
/// but for its id and label, which are written once each.
fn describe(c: &Cand<'_>, chat_id: &Arc<str>) -> Descriptor {
    match c.of {
        Of::Obj(o) => descriptor(chat_id, o),
        Of::Msg { chat, item, mid, topic } => Descriptor {
            object_id: c.id().shared(),
            kind: c.kind,
            source_message_id: Some(mid.clone()),
            chat_id: chat_id.clone(),
            topic_id: topic.cloned(),
            title_or_label: c.label().map(short_label_arc).filter(|l| !l.is_empty()),
            created_by_user_id: chat.people.user_id_shared(item.sender).cloned(),
            created_by_bot: c.by_bot,
            created_at: c.created_at,
            last_touched_at: c.last_touched,
            // Who posted it, as the prompt refers to them.
            author: Some(chat.people.display_ref_arc(item.sender)),
            caption: None,
            file: None,
        },
    }
}

/// The first `keep` of `items` in `order`, in that order: as sorting them all and keeping the first would give
/// (a stable sort: of equal items the earlier first), without the sort. They are kept in order as `items` are
/// read; most lose to the last kept at once, and one that wins takes the last place and moves up past those it
/// comes before (`keep` is a few: a step of insertion sort, where a search and a shifting insert cost more, most
/// of all when items come in reverse order, as the oldest of a pool gathered newest first do).
pub(super) fn best_few<T: Copy>(
    items: impl Iterator<Item = T>,
    keep: usize,
    order: impl Fn(T, T) -> std::cmp::Ordering,
) -> Vec<T> {
    let mut best: Vec<T> = Vec::with_capacity(keep);
    for item in items {
        if best.len() < keep {
            best.push(item);
        } else if let Some(last) = best.last_mut()
            && order(item, *last).is_lt()
        {
            *last = item;
        } else {
            continue;
        }
        let mut i = best.len() - 1;
        while i > 0 && order(best[i], best[i - 1]).is_lt() {
            best.swap(i, i - 1);
            i -= 1;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    proptest::proptest! {
        /// With ties (of equal items the earlier first, as a stable sort keeps them: each item carries its place,
        /// which the order does not read) and every `keep` from none to more than all.
        #[test]
        fn the_best_few_are_the_first_few_sorted(items in proptest::collection::vec(0u8..20, 0..60), keep in 0usize..70) {
            let items: Vec<(u8, usize)> = items.into_iter().zip(0..).collect();
            let few = super::best_few(items.iter().copied(), keep, |a: (u8, usize), b: (u8, usize)| a.0.cmp(&b.0));
            let mut sorted = items.clone();
            sorted.sort_by_key(|&(v, _)| v);
            sorted.truncate(keep);
            proptest::prop_assert_eq!(few, sorted);
        }
    }
}
