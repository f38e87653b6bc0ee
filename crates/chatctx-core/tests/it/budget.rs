//! The short way to a selection the token budget alone decides (every stored item eligible, all kept, one
//! conversation) gives the same answer as the long way, which reads every item: compared after random ingest,
//! edits, deletions, reactions, background items, replies and evictions. A recorded answer (`explain`) always
//! takes the long way; a plain one takes the short way whenever it may.

use chatctx_core::settings::{Mode, Policy, Scope as HistoryScope};
use chatctx_core::tools::summary::UpdateSummary;
use chatctx_core::tools::{GetChatHistoryContext, Request, Scope};
use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone)]
enum Op {
    /// id, topic, sender, text length, triggered, outbound, reply to, background
    Message(u8, Option<u8>, u8, usize, bool, bool, Option<u8>, bool),
    Reaction(u8, u8),
    Delete(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..60, proptest::option::of(0u8..2), 0u8..4, 0usize..300, any::<bool>(), any::<bool>(),
              proptest::option::of(0u8..60), proptest::bool::weighted(0.05))
            .prop_map(|(id, t, u, n, trig, out, reply, bg)| Op::Message(id, t, u, n, trig, out, reply, bg)),
        1 => (0u8..60, 0u8..4).prop_map(|(id, u)| Op::Reaction(id, u)),
        1 => (0u8..60).prop_map(Op::Delete),
    ]
}

fn event(op: &Op, at: i64) -> Value {
    let user = |u: u8| json!({"user_id": u.to_string(), "username": format!("u{u}")});
    match op {
        Op::Message(id, topic, u, n, triggered, outbound, reply, background) => {
            let mut v = json!({"type": "message", "chat_id": "-1", "message_id": id.to_string(),
                "kind": if *outbound { "outbound_agent" } else { "inbound_user" }, "sent_at": at, "sender": user(*u),
                "text": "w".repeat(*n), "triggered_agent": triggered});
            if let Some(t) = topic {
                v["topic_id"] = json!(t.to_string());
            }
            if let Some(r) = reply {
                v["reply_to_message_id"] = json!(r.to_string());
            }
            if *background {
                v["origin"] = json!("scheduled");
            }
            v
        }
        Op::Reaction(id, u) => {
            json!({"type": "reaction", "chat_id": "-1", "message_id": id.to_string(), "sender": user(*u), "emoji": ["🔥"], "sent_at": at})
        }
        Op::Delete(id) => json!({"type": "delete", "chat_id": "-1", "message_ids": [id.to_string()]}),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_budget_alone_chooses_the_same_items_either_way(
        ops in proptest::collection::vec(op(), 1..80),
        talkative in any::<bool>(),
        topic_scope in any::<bool>(),
        budget in 0usize..600,
        use_selection in any::<bool>(),
        lookback in 1usize..70,
        threshold in 0usize..8,
        cap in 4usize..50,
        // Most histories qualify for the short way only without these; each is in some cases.
        (with_background, with_reactions, all_triggered) in (any::<bool>(), any::<bool>(), any::<bool>()),
        summarized in proptest::option::of(0u8..60),
    ) {
        let mut s = Settings::default();
        s.history.mode = if talkative { Mode::Talkative } else { Mode::Smart };
        s.history.policy = Policy::Selection;
        s.history.scope = if topic_scope { HistoryScope::Topic } else { HistoryScope::Chat };
        s.conversation.max_context_tokens = budget;
        s.conversation.use_selection = use_selection;
        s.conversation.lookback_count = lookback;
        s.conversation.skip_selection_threshold = threshold;
        s.conversation.cache_max_per_conversation = cap;
        let mut e = Engine::new(s);
        let ops: Vec<Op> = ops
            .into_iter()
            .filter(|o| with_reactions || !matches!(o, Op::Reaction(..)))
            .map(|o| match o {
                Op::Message(id, t, u, n, trig, out, reply, bg) => {
                    Op::Message(id, t, u, n, trig || all_triggered, out, reply, bg && with_background)
                }
                o => o,
            })
            .collect();
        for (n, op) in ops.iter().enumerate() {
            // Refused events (a reaction to nothing, an edit of a deleted message) change nothing.
            if let Ok(x) = Event::decode(&event(op, T0 + n as i64 * 7)) {
                let _ = e.apply(x);
            }
        }
        // A summary covering the history up to a message, when that message is stored: selection starts after it.
        if let Some(id) = summarized {
            let args = json!({"chat_id": "-1", "text": "earlier", "covers_until_message_id": id.to_string()});
            let request = UpdateSummary::decode(&args).unwrap();
            let _ = e.update_summary(&request, Timestamp::from_unix(T0 + 10_000).unwrap());
        }
        let currents = ops.iter().filter_map(|o| match o { Op::Message(id, ..) => Some(id.to_string()), _ => None });
        for current in std::iter::once(None).chain(currents.map(Some)) {
            for topic in [None, Some("0")] {
                let scope = Scope { topic_id: topic.map(Into::into), current_message_id: current.clone(), ..Scope::chat("-1") };
                let plain = GetChatHistoryContext { scope: scope.clone(), now: None };
                let recorded = GetChatHistoryContext { scope: Scope { explain: true, ..scope }, now: None };
                let (short, long) = (e.get_chat_history_prompt(&plain), e.get_chat_history_context(&recorded));
                let (Ok(short), Ok(long)) = (short, long) else { continue };
                prop_assert_eq!(&short.selection, &long.selection);
                prop_assert_eq!(&short.prompt, &long.prompt);
                let answer = e.get_chat_history_context(&plain).unwrap();
                prop_assert_eq!(&answer.items, &long.items);
            }
        }
    }
}
