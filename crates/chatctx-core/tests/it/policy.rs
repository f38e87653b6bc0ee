//! The write policy and the mode cap (docs/protocol.md §5.3), per scope.

use chatctx_core::ErrorCode;
use chatctx_core::kinds::ItemKind;
use chatctx_core::tools::SelectionMethod;

use super::*;

fn twenty(triggered: bool) -> Vec<Event> {
    (1..=20).map(|i| msg("-1", None, i, user("1", "Ann"), &format!("m{i}"), triggered, i64::from(i))).collect()
}

#[test]
fn talkative_trims_20_to_16_and_smart_to_8() {
    let e = engine(settings(Mode::Talkative, Scope::Topic), twenty(true));
    let h = history(&e, "-1", None, None);
    assert_eq!(texts(&h), (5..=20).map(|i| format!("m{i}")).collect::<Vec<_>>());
    assert_eq!((h.selection.method, h.selection.considered, h.selection.kept), (SelectionMethod::Cap, 20, 16));
    for mode in [Mode::Smart, Mode::Strict] {
        let e = engine(settings(mode, Scope::Topic), twenty(true));
        let h = history(&e, "-1", None, None);
        assert_eq!(texts(&h), (13..=20).map(|i| format!("m{i}")).collect::<Vec<_>>(), "{mode:?}");
    }
}

#[test]
fn talkative_records_non_triggering_messages_smart_and_strict_do_not() {
    let e = engine(settings(Mode::Talkative, Scope::Topic), twenty(false));
    assert_eq!(history(&e, "-1", None, None).items.len(), 16);
    for mode in [Mode::Smart, Mode::Strict] {
        let mut events = twenty(false);
        events.push(msg("-1", None, 21, user("1", "Ann"), "@bot help", true, 21));
        events.push(bot_reply("-1", None, 22, 21, "here", 22));
        let e = engine(settings(mode, Scope::Topic), events);
        let h = history(&e, "-1", None, None);
        assert_eq!(texts(&h), ["@bot help", "here"], "{mode:?}: only the triggering message and the bot's reply");
        // Every message is still stored: the message index keeps them regardless of the policy.
        assert_eq!(e.history("telegram", "-1", None).unwrap().len(), 22);
    }
}

#[test]
fn reactions_and_system_notes_follow_the_policy() {
    let events = vec![
        msg("-1", None, 1, user("1", "Ann"), "q", true, 1),
        ev(
            json!({"type": "reaction", "chat_id": "-1", "message_id": "1", "direction": "inbound", "sender": user("2", "Bo"), "emoji": ["👍"], "sent_at": T0 + 2}),
        ),
        ev(
            json!({"type": "reaction", "chat_id": "-1", "message_id": "1", "direction": "outbound", "emoji": ["👀"], "sent_at": T0 + 3}),
        ),
        ev(
            json!({"type": "message", "chat_id": "-1", "message_id": "4", "kind": "system", "sent_at": T0 + 4, "text": "topic renamed"}),
        ),
        ev(
            json!({"type": "message", "chat_id": "-1", "message_id": "5", "kind": "system", "sent_at": T0 + 5, "text": "user switched language to German", "triggered_agent": true}),
        ),
    ];
    let smart = engine(settings(Mode::Smart, Scope::Topic), events.clone());
    let kinds: Vec<ItemKind> = history(&smart, "-1", None, None).items.iter().map(|i| i.kind).collect();
    assert_eq!(kinds, [ItemKind::InboundUser, ItemKind::OutboundReaction, ItemKind::System]);
    let h = history(&smart, "-1", None, None);
    assert_eq!(h.items.to_vec()[1].sender.display_ref, "assistant", "the bot's reaction without a sender");
    assert_eq!(
        h.items.to_vec()[1].text,
        "reacted 👀 to [Ann](tg:@ann)'s message “q”",
        "the target by its author and words"
    );
    let talkative = engine(settings(Mode::Talkative, Scope::Topic), events);
    assert_eq!(history(&talkative, "-1", None, None).items.len(), 5);
}

#[test]
fn scope_topic_keeps_topics_apart_and_scope_chat_merges_them() {
    let events = vec![
        msg("-1", Some("7"), 1, user("1", "Ann"), "deploy?", true, 1),
        msg("-1", Some("9"), 2, user("2", "Bo"), "lunch?", true, 2),
        msg("-1", None, 3, user("3", "Cy"), "general", true, 3),
        msg("-1", Some("7"), 4, user("2", "Bo"), "yes", true, 4),
        msg("-1", Some("7"), 5, user("1", "Ann"), "@bot status?", true, 5),
    ];
    let e = engine(settings(Mode::Smart, Scope::Topic), events.clone());
    assert_eq!(texts(&history(&e, "-1", None, Some(5))), ["deploy?", "yes"], "the current message's topic");
    assert_eq!(texts(&history(&e, "-1", Some("9"), None)), ["lunch?"]);
    assert_eq!(texts(&history(&e, "-1", None, None)), ["general"], "no topic = the General conversation");
    let e = engine(settings(Mode::Smart, Scope::Chat), events);
    assert_eq!(texts(&history(&e, "-1", None, Some(5))), ["deploy?", "lunch?", "general", "yes"]);
}

#[test]
fn history_is_what_came_before_the_current_message() {
    let e = engine(settings(Mode::Talkative, Scope::Topic), twenty(false));
    let h = history(&e, "-1", None, Some(10));
    assert_eq!(texts(&h), (1..=9).map(|i| format!("m{i}")).collect::<Vec<_>>());
    let last = h.prompt.last().unwrap();
    assert!(last.content.ends_with(": m10"), "the current message closes the prompt: {}", last.content);
}

#[test]
fn errors_for_unknown_chats_and_messages() {
    let e = engine(settings(Mode::Smart, Scope::Topic), twenty(true));
    let req = |chat: &str, cur: Option<&str>| GetChatHistoryContext {
        scope: chatctx_core::tools::Scope {
            channel: "telegram".into(),
            topic_id: None,
            current_message_id: cur.map(Into::into),
            ..chatctx_core::tools::Scope::chat(chat)
        },
        now: None,
    };
    assert_eq!(e.get_chat_history_context(&req("-2", None)).unwrap_err().code, ErrorCode::UnknownChat);
    let err = e.get_chat_history_context(&req("-1", Some("404"))).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidRequest);
    assert!(err.message.contains("current_message_id"));
    let mut other_channel = req("-1", None);
    other_channel.scope.channel = "slack".into();
    assert_eq!(
        e.get_chat_history_context(&other_channel).unwrap_err().code,
        ErrorCode::UnknownChat,
        "channels are separate"
    );
}

#[test]
fn disabled_conversation_gives_no_history() {
    let mut s = settings(Mode::Talkative, Scope::Topic);
    s.conversation.enabled = false;
    let e = engine(s, twenty(true));
    let h = history(&e, "-1", None, Some(20));
    assert!(h.items.is_empty());
    assert_eq!(h.prompt.len(), 1, "only the current message");
}
