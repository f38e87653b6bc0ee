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

/// The codes of `mask`'s bits, in output order (visiting only the bits that are set).
pub(super) fn reasons_of(mask: u32) -> Vec<&'static str> {
    let mut out = Vec::with_capacity(mask.count_ones() as usize);
    let mut rest = mask;
    while rest != 0 {
        out.extend(REASONS.get(rest.trailing_zeros() as usize));
        rest &= rest - 1;
    }
    out
}

pub(super) fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

#[cfg(test)]
mod tests {
    /// Every combination of bits: the codes of the set bits, in output order, each once.
    #[test]
    fn reasons_are_the_set_bits_in_output_order() {
        for mask in 0..1u32 << super::REASONS.len() {
            let want: Vec<&str> =
                super::REASONS.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, r)| *r).collect();
            assert_eq!(super::reasons_of(mask), want, "mask {mask:#b}");
        }
    }
}
