//! The summary slot (docs/protocol.md §6.6): `update_summary`, the "Earlier in this conversation" block, selection
//! after the covered message, the budget share, export/import, and the background summarizer's job.

use chatctx_core::ErrorCode;
use chatctx_core::render::Role;
use chatctx_core::summary::SummaryWritten;
use chatctx_core::tools::Request;
use chatctx_core::tools::summary::UpdateSummary;

use super::*;

/// Twelve messages a minute apart in topic 7 and, interleaved, three in topic 8; talkative, per topic.
fn forum() -> Engine {
    let mut s = Settings::default();
    s.history.mode = Mode::Talkative;
    s.history.scope = Scope::Topic;
    let mut events: Vec<Event> = (1..=12)
        .map(|i| msg("-1", Some("7"), i, user("1", "Ann"), &format!("seven {i}"), false, i64::from(i) * 60))
        .collect();
    events.extend(
        (101..=103).map(|i| msg("-1", Some("8"), i, user("2", "Bob"), &format!("eight {i}"), false, i64::from(i))),
    );
    engine(s, events)
}

fn write(e: &mut Engine, args: Value) -> Result<SummaryWritten, chatctx_core::Error> {
    let mut args = args;
    args["chat_id"] = json!("-1");
    e.update_summary(&UpdateSummary::decode(&args)?, Timestamp::from_unix(T0 + 5_000).unwrap())
}

#[test]
fn the_summary_opens_the_prompt_and_selection_starts_after_what_it_covers() {
    let mut e = forum();
    let before = history(&e, "-1", None, Some(12));
    assert!(before.summary.is_none());
    assert_eq!(before.items.len(), 11);

    let w = write(&mut e, json!({"text": "Ann counted to six.", "covers_until_message_id": 6})).unwrap();
    assert!(w.changed);
    let s = &w.summary;
    assert_eq!(
        (s.topic_id.as_deref(), s.revision, s.message_count, s.covers_until_message_id.as_str()),
        (Some("7"), 1, 6, "6"),
        "the topic is the covered message's; six messages of topic 7 (not topic 8's) up to it"
    );
    assert_eq!(s.covers_until_at, Timestamp::from_unix(T0 + 360).unwrap());

    let h = history(&e, "-1", None, Some(12));
    assert_eq!(h.summary.as_ref(), Some(s));
    assert_eq!(texts(&h), ["seven 7", "seven 8", "seven 9", "seven 10", "seven 11"], "only after message 6");
    let block = &h.prompt[0];
    assert_eq!(block.role, Role::System);
    assert_eq!(
        block.content,
        "Earlier in this conversation (a summary of 6 messages, up to message 6 sent 2026-02-13T08:26:00Z):\n\
         Ann counted to six."
    );
    assert!(h.prompt[1].content.contains("seven 7"), "the history follows the summary");
    assert_eq!(h.prompt.last().unwrap().role, Role::User);

    // Another topic has its own slot, empty.
    assert!(history(&e, "-1", None, Some(103)).summary.is_none());
    // A summary that covers the message being answered is not used for it.
    let old = history(&e, "-1", None, Some(5));
    assert!(old.summary.is_none() && old.items.len() == 4);
    // Range reads still see every message.
    let all = e
        .get_chat_history_range(
            &chatctx_core::tools::range::GetChatHistoryRange::decode(&json!({"chat_id": "-1", "topic_id": "7"}))
                .unwrap(),
        )
        .unwrap();
    assert_eq!(all.items.len(), 12);
}

#[test]
fn writes_are_checked_counted_and_refused_whole() {
    let mut e = forum();
    let first = write(&mut e, json!({"text": "up to four", "covers_until_message_id": "4"})).unwrap().summary;
    let same = write(&mut e, json!({"text": " up to four ", "covers_until_message_id": "4"})).unwrap();
    assert!(!same.changed && same.summary == first, "the same text and coverage again changes nothing");

    let stale =
        write(&mut e, json!({"text": "x", "covers_until_message_id": "9", "expected_revision": 0})).unwrap_err();
    assert_eq!(stale.code, ErrorCode::RevisionConflict, "{}", stale.message);
    let next = write(&mut e, json!({"text": "up to nine", "covers_until_message_id": 9, "expected_revision": 1}))
        .unwrap()
        .summary;
    assert_eq!((next.revision, next.message_count), (2, 9), "4 covered before, 5 more");

    for (args, code) in [
        (json!({"text": "", "covers_until_message_id": "9"}), ErrorCode::InvalidRequest),
        (json!({"text": "x", "covers_until_message_id": "999"}), ErrorCode::InvalidRequest),
        (json!({"text": "x", "covers_until_message_id": "9", "topic_id": "8"}), ErrorCode::InvalidRequest),
        (json!({"text": "x".repeat(8_001), "covers_until_message_id": "9"}), ErrorCode::PayloadTooLarge),
        (json!({"text": "x", "covers_until_message_id": "9", "source": "someone"}), ErrorCode::InvalidRequest),
        (json!({"covers_until_message_id": "9"}), ErrorCode::InvalidRequest),
    ] {
        assert_eq!(write(&mut e, args.clone()).unwrap_err().code, code, "{args}");
    }
    let mut other = args_for("-2");
    other["text"] = json!("x");
    assert_eq!(
        e.update_summary(&UpdateSummary::decode(&other).unwrap(), Timestamp::from_unix(T0).unwrap()).unwrap_err().code,
        ErrorCode::UnknownChat
    );
    assert_eq!(e.summary("telegram", "-1", Some("7")), Some(&next), "no refused write changed anything");
}

fn args_for(chat: &str) -> Value {
    json!({"chat_id": chat, "covers_until_message_id": "1"})
}

#[test]
fn under_a_token_budget_the_summary_takes_at_most_its_share() {
    let mut e = forum();
    let mut s = e.settings().clone();
    s.conversation.max_context_tokens = 200;
    s.summary.max_share = 0.25;
    let long = "word ".repeat(1_000);
    write(&mut e, json!({"text": long, "covers_until_message_id": "3"})).unwrap();
    let doc = e.export_conversation("telegram", "-1").unwrap();
    let mut cut = Engine::new(s);
    cut.import_document(&doc).unwrap();
    let mut req = GetChatHistoryContext {
        scope: chatctx_core::tools::Scope {
            current_message_id: Some("12".into()),
            ..chatctx_core::tools::Scope::chat("-1")
        },
        now: None,
    };
    req.scope.explain = true;
    let h = cut.get_chat_history_context(&req).unwrap();
    let block = &h.prompt[0].content;
    assert!(block.starts_with("Earlier in this conversation") && block.ends_with('…'), "{block}");
    let tokens = chatctx_core::selection::estimate_tokens(block.len());
    assert!(tokens <= 50, "{tokens} tokens, over a quarter of 200");
    let budget = &h.explain.as_ref().unwrap().budget;
    assert_eq!(budget.summary_tokens, u64::from(tokens));
    assert!(budget.used_tokens <= 200, "{budget:?}");
    assert!(!h.items.is_empty(), "the rest of the budget goes to the history");
    assert_eq!(h.explain.as_ref().unwrap().covered_by_summary, 3);
}

#[test]
fn export_and_import_carry_the_summary() {
    let mut e = forum();
    write(&mut e, json!({"text": "so far", "covers_until_message_id": "5", "source": "summarizer"})).unwrap();
    let doc = e.export_conversation("telegram", "-1").unwrap();
    assert_eq!(doc.summaries.len(), 1);
    let mut again = Engine::new(e.settings().clone());
    again.import_document(&doc).unwrap();
    assert_eq!(again.export_conversation("telegram", "-1").unwrap(), doc);
    assert_eq!(history(&again, "-1", None, Some(12)), history(&e, "-1", None, Some(12)));
    // A document without summaries (written before they existed) reads as before.
    let v = serde_json::to_value(e.export_conversation("telegram", "-1").unwrap()).unwrap();
    let mut old = v.clone();
    old.as_object_mut().unwrap().remove("summaries");
    assert!(chatctx_core::transfer::ConversationDoc::from_value(&old).unwrap().summaries.is_empty());
    assert!(e.remove_chat("telegram", "-1"));
    assert!(e.summary("telegram", "-1", Some("7")).is_none(), "forgetting the chat forgets its summary");
}

#[test]
fn the_summarizer_job_folds_the_previous_summary_and_only_new_messages() {
    let mut e = forum();
    assert!(e.summary_due("telegram", "-1", Some("7"), 12) && !e.summary_due("telegram", "-1", Some("7"), 13));
    let job = e.summary_job("telegram", "-1", Some("7"), 100, "INSTRUCTIONS").unwrap();
    assert_eq!((job.expected_revision, job.previous.as_deref(), job.messages.len()), (0, None, 12));
    assert_eq!(job.prompt[0].content, "INSTRUCTIONS");
    assert!(job.prompt[1].content.contains("(none yet)"));

    write(&mut e, json!({"text": "PREVIOUS", "covers_until_message_id": "8"})).unwrap();
    assert!(e.summary_due("telegram", "-1", Some("7"), 4) && !e.summary_due("telegram", "-1", Some("7"), 5));
    let job = e.summary_job("telegram", "-1", Some("7"), 3, "I").unwrap();
    assert_eq!((job.expected_revision, job.previous.as_deref()), (1, Some("PREVIOUS")));
    assert_eq!(job.covers_until_message_id, "11", "at most 3 messages, oldest first");
    let user_part = &job.prompt[1].content;
    assert!(user_part.contains("PREVIOUS") && user_part.contains("seven 9") && user_part.contains("seven 11"));
    assert!(!user_part.contains("seven 8") && !user_part.contains("seven 12") && !user_part.contains("eight"));

    write(&mut e, json!({"text": "ALL", "covers_until_message_id": "12"})).unwrap();
    assert!(e.summary_job("telegram", "-1", Some("7"), 100, "I").is_none(), "nothing new");
}

#[test]
fn with_history_per_chat_one_summary_covers_every_topic() {
    let mut e = forum();
    let mut s = e.settings().clone();
    s.history.scope = Scope::Chat;
    let doc = e.export_conversation("telegram", "-1").unwrap();
    e = Engine::new(s);
    e.import_document(&doc).unwrap();
    let w = write(&mut e, json!({"text": "both", "covers_until_message_id": "4", "topic_id": "8"})).unwrap();
    assert_eq!(w.summary.topic_id, None, "the chat's slot");
    assert_eq!(w.summary.message_count, 7, "messages 1-4 and 101-103 were sent before message 4");
    assert_eq!(e.summary("telegram", "-1", Some("8")), e.summary("telegram", "-1", None));
}
