//! The resolver's reason codes: each scoring rule's name, as a bit of a candidate's mask, in output order.

/// Reason codes, in output order.
pub(super) const REASONS: &[&str] = &[
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
pub(super) enum R {
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

pub(super) fn reasons_of(mask: u32) -> Vec<&'static str> {
    let mut out = Vec::with_capacity(mask.count_ones() as usize);
    out.extend(REASONS.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, r)| *r));
    out
}

pub(super) fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}
