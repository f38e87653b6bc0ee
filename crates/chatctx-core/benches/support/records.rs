//! The requests whose decision records the `decisions` benchmark and the `records_profile` example measure: the
//! last hundred messages of the forum (`forum.rs`) as current messages, with records asked for or not.

use chatctx_core::tools::resolve::ResolveReferenceTarget;
use chatctx_core::tools::{GetChatHistoryContext, Request};
use serde_json::json;

use super::forum::CHAT;

/// `get_chat_history_context` for each of the last hundred messages.
pub fn history(explain: bool) -> Vec<GetChatHistoryContext> {
    (1901..=2000u32)
        .filter_map(|m| {
            GetChatHistoryContext::decode(
                &json!({"chat_id": CHAT, "current_message_id": m.to_string(), "explain": explain}),
            )
            .ok()
        })
        .collect()
}

/// `resolve_reference_target` for each of the last hundred messages, by one of twenty senders, with no hint, a
/// kind hint or a positional one in turn.
pub fn resolve(explain: bool) -> Vec<ResolveReferenceTarget> {
    (1901..=2000u32)
        .filter_map(|m| {
            let hint = [json!({}), json!({"target_kind_hint": "image"}), json!({"positional_hint": "latest"})];
            ResolveReferenceTarget::decode(
                &json!({"chat_id": CHAT, "current_message_id": m.to_string(), "explain": explain,
                "sender_user_id": (1000 + m % 20).to_string(), "normalized_reference_hints": hint[(m % 3) as usize]}),
            )
            .ok()
        })
        .collect()
}
