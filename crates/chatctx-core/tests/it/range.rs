//! `get_chat_history_range` (docs/protocol.md §6.5): pages that visit every stored item of a range once,
//! across topics and edits, and say when the range reaches back past what left the store.

use chatctx_core::tools::Request;
use chatctx_core::tools::range::{GetChatHistoryRange, HistoryPage};

use super::*;

fn range(e: &Engine, args: Value) -> HistoryPage {
    let mut args = args;
    args["chat_id"] = json!("-1");
    e.get_chat_history_range(&GetChatHistoryRange::decode(&args).unwrap()).unwrap()
}

fn ids(p: &HistoryPage) -> Vec<&str> {
    p.items.iter().filter_map(|i| i.message_id.as_deref()).collect()
}

/// 30 messages, a minute apart: multiples of 3 in topic 7, the next ones in topic 8, the rest in the general
/// thread.
fn forum() -> Vec<Event> {
    let topics = [Some("7"), Some("8"), None];
    (1..=30)
        .map(|i| msg("-1", topics[(i % 3) as usize], i, user("1", "Ann"), &format!("m{i}"), false, i64::from(i) * 60))
        .collect()
}

fn talkative() -> Settings {
    let mut s = Settings::default();
    s.history.mode = Mode::Talkative;
    s
}

/// Follows `next` from `args`, editing a message between pages; every id once, in time order.
fn all_pages(e: &mut Engine, args: Value, edit_between: bool) -> Vec<String> {
    let mut seen = Vec::new();
    let mut args = args;
    loop {
        let page = range(e, args.clone());
        seen.extend(ids(&page).into_iter().map(str::to_owned));
        if edit_between {
            // An edit of an already-read message keeps its place: it is not read again.
            let first = seen.first().cloned().unwrap_or_default();
            let n: u32 = first.parse().unwrap_or(1);
            let topics = [Some("7"), Some("8"), None];
            e.apply(msg("-1", topics[(n % 3) as usize], n, user("1", "Ann"), "edited", false, i64::from(n) * 60))
                .unwrap();
        }
        match page.next {
            Some(c) => args["cursor"] = json!(c),
            None => return seen,
        }
    }
}

#[test]
fn pages_visit_every_item_once_across_topics_and_edits() {
    let mut e = engine(talkative(), forum());
    let all: Vec<String> = (1..=30).map(|i| i.to_string()).collect();
    assert_eq!(all_pages(&mut e, json!({"limit": 7}), false), all, "the whole chat, time order");
    assert_eq!(all_pages(&mut e, json!({"limit": 4}), true), all, "edits between pages change nothing");
    let topic7: Vec<String> = (1..=30).filter(|i| i % 3 == 0).map(|i| i.to_string()).collect();
    assert_eq!(all_pages(&mut e, json!({"limit": 3, "topic_id": 7}), false), topic7, "one topic");
    let first = range(&e, json!({"limit": 50}));
    assert_eq!(first.items.len(), 30);
    assert!(first.next.is_none() && first.truncated.is_none());
    assert_eq!(first.items[0].text, "edited", "the edit is read in its place");
}

#[test]
fn ranges_by_time_and_by_message() {
    let e = engine(talkative(), forum());
    let p = range(&e, json!({"since": T0 + 10 * 60, "until": T0 + 12 * 60}));
    assert_eq!(ids(&p), ["10", "11", "12"], "both ends included");
    let p = range(&e, json!({"after_message_id": 27}));
    assert_eq!(ids(&p), ["28", "29", "30"], "what came after my last message");
    let p = range(&e, json!({"after_message_id": 27, "topic_id": 8}));
    assert_eq!(ids(&p), ["28"]);
    let bad = GetChatHistoryRange::decode(&json!({"chat_id": "-1", "cursor": "yesterday"})).unwrap_err();
    assert!(bad.message.contains("cursor"), "{bad:?}");
    let unknown = GetChatHistoryRange::decode(&json!({"chat_id": "-1", "after_message_id": 99})).unwrap();
    let err = e.get_chat_history_range(&unknown).unwrap_err();
    assert!(err.message.contains("after_message_id"), "{err:?}");
    for limit in [0, 501] {
        assert!(GetChatHistoryRange::decode(&json!({"chat_id": "-1", "limit": limit})).is_err(), "limit {limit}");
    }
}

#[test]
fn a_range_past_what_left_the_store_says_so() {
    let mut s = talkative();
    s.conversation.cache_max_per_conversation = 5;
    let e = engine(s, forum());
    let p = range(&e, json!({"topic_id": 7}));
    assert_eq!(ids(&p), ["18", "21", "24", "27", "30"], "the newest five of topic 7");
    let t = p.truncated.expect("topic 7 lost 3, 6, 9, 12, 15");
    assert_eq!((t.by, t.before.unix()), ("cache_max_per_conversation", T0 + 15 * 60 + 1));
    let p = range(&e, json!({"topic_id": 7, "since": T0 + 16 * 60}));
    assert!(p.truncated.is_none(), "a range after the loss is whole");

    let mut e = engine(talkative(), forum());
    e.drop_before(Timestamp::from_unix(T0 + 20 * 60).unwrap());
    let p = range(&e, json!({}));
    assert_eq!(p.items.first().and_then(|i| i.message_id.as_deref()), Some("20"));
    assert_eq!(p.truncated.map(|t| t.by), Some("max_age"));
}

/// Issue 30, point 6: a range read says each item's topic, so a reader sees which conversation (and prompt)
/// it belongs to; the general conversation's items carry none.
#[test]
fn range_items_carry_their_topic() {
    let e = engine(talkative(), forum());
    let p = range(&e, json!({"limit": 6}));
    let topics: Vec<Option<&str>> = p.items.iter().map(|i| i.topic_id.as_deref()).collect();
    assert_eq!(topics, [Some("8"), None, Some("7"), Some("8"), None, Some("7")]);
    let v = serde_json::to_value(&p.items[1]).unwrap();
    assert!(v.get("topic_id").is_none(), "absent, not null, for the general conversation");
    let ctx = e
        .get_chat_history_context(
            &chatctx_core::tools::GetChatHistoryContext::decode(&json!({"chat_id": "-1", "topic_id": 7})).unwrap(),
        )
        .unwrap();
    assert!(
        ctx.items.iter().all(|i| i.topic_id.is_none()),
        "the context answer is unchanged: its items are its topic's"
    );
}
