//! Each rule of docs/protocol.md §6.3 / seed 001.

use std::sync::{Arc, Mutex};

use chatctx_core::selection::{SelectionMethod, Triage, TriageRequest};
use chatctx_core::settings::{OnTriageError, Selector};

use super::*;

fn sel_settings() -> Settings {
    let mut s = Settings::default();
    s.history.mode = Mode::Talkative;
    s
}

fn msgs(n: u32, spacing: i64) -> Vec<Event> {
    (1..=n)
        .map(|i| msg("-1", None, i, user(&(i % 3).to_string(), "U"), &format!("m{i}"), false, i64::from(i) * spacing))
        .collect()
}

fn with(origin: &str, id: u32, dt: i64, reply: Option<u32>) -> Event {
    let mut v = json!({"type": "message", "chat_id": "-1", "message_id": id.to_string(), "kind": "outbound_agent", "origin": origin,
                       "sent_at": T0 + dt, "sender": {"user_id": "999", "username": "bot", "is_bot": true}, "text": format!("{origin} {id}")});
    if let Some(r) = reply {
        v["reply_to_message_id"] = json!(r.to_string());
    }
    ev(v)
}

/// A triage stub: answers with fixed ids (or an error) and records what it was asked.
struct Stub {
    answer: Result<Vec<usize>, String>,
    asked: Mutex<Vec<TriageRequest>>,
}

impl Triage for Stub {
    fn configured(&self) -> bool {
        true
    }
    fn triage(&self, request: &TriageRequest) -> Result<Vec<usize>, String> {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

/// The engine owns its triage; the test keeps a second handle to read what was asked.
struct Shared(Arc<Stub>);

impl Triage for Shared {
    fn configured(&self) -> bool {
        self.0.configured()
    }
    fn triage(&self, request: &TriageRequest) -> Result<Vec<usize>, String> {
        self.0.triage(request)
    }
}

fn stub(answer: Result<Vec<usize>, String>) -> (Box<Shared>, Arc<Stub>) {
    let s = Arc::new(Stub { answer, asked: Mutex::new(Vec::new()) });
    (Box::new(Shared(s.clone())), s)
}

#[test]
fn lookback_and_the_lexical_selector_without_a_model() {
    let e = engine(sel_settings(), msgs(30, 60));
    let h = history(&e, "-1", None, None);
    // `selector = "model"` (the default) with no model configured: the lexical selector picks, and says so.
    let s = sel_settings();
    let kept = s.conversation.always_include_recent + s.conversation.lexical_keep;
    assert_eq!((h.selection.method, h.selection.considered, h.selection.kept), (SelectionMethod::Lexical, 25, kept));
    assert_eq!(h.items.last().unwrap().text, "m30", "the newest is always there");
    let mut lexical = sel_settings();
    lexical.conversation.selector = chatctx_core::settings::Selector::Lexical;
    assert_eq!(history(&engine(lexical, msgs(30, 60)), "-1", None, None), h, "exactly what the lexical selector does");
}

#[test]
fn skip_threshold_and_selection_off_keep_everything() {
    let e = engine(sel_settings(), msgs(3, 60));
    let h = history(&e, "-1", None, None);
    assert_eq!((h.selection.method, h.selection.kept), (SelectionMethod::All, 3));
    let mut s = sel_settings();
    s.conversation.use_selection = false;
    let e = engine(s, msgs(12, 60));
    assert_eq!(history(&e, "-1", None, None).selection.method, SelectionMethod::All);
}

#[test]
fn the_recency_window_is_measured_from_the_newest_item_not_from_now() {
    let mut s = sel_settings();
    s.conversation.context_recency_hours = 3.0;
    s.conversation.context_min_messages = 2;
    s.conversation.use_selection = false;
    let e = engine(s.clone(), msgs(10, 3600)); // hourly, m10 newest
    let h = history(&e, "-1", None, None);
    assert_eq!(texts(&h), ["m7", "m8", "m9", "m10"], "within 3 h of m10, however late `now` is");
    s.conversation.context_min_messages = 6;
    let e = engine(s, msgs(10, 3600));
    assert_eq!(history(&e, "-1", None, None).items.len(), 6, "at least context_min_messages");
}

#[test]
fn lexical_keeps_recent_plus_the_best_older_in_time_order() {
    let mut s = sel_settings();
    s.conversation.selector = Selector::Lexical;
    s.conversation.always_include_recent = 2;
    s.conversation.lexical_keep = 1;
    let mut events = msgs(10, 60);
    events[2] = msg("-1", None, 3, user("7", "Zed"), "how do I resize an ext4 partition", false, 180);
    events.push(msg("-1", None, 11, user("8", "Amy"), "resize the ext4 partition with resize2fs", false, 700));
    let e = engine(s, events);
    let h = history(&e, "-1", None, Some(11));
    assert_eq!(h.selection.method, SelectionMethod::Lexical);
    assert_eq!(
        texts(&h),
        ["how do I resize an ext4 partition", "m9", "m10"],
        "the shared-terms item, then the recent two"
    );
}

#[test]
fn triage_answers_and_failures() {
    type Case = (Result<Vec<usize>, String>, OnTriageError, SelectionMethod, usize);
    let cases: Vec<Case> = vec![
        (Ok(vec![0, 2]), OnTriageError::RecentOnly, SelectionMethod::Triage, 7),
        (Ok(vec![]), OnTriageError::KeepAll, SelectionMethod::RecentOnly, 5),
        (Err("timeout".into()), OnTriageError::RecentOnly, SelectionMethod::RecentOnly, 5),
        (Err("500".into()), OnTriageError::KeepAll, SelectionMethod::FailOpen, 12),
    ];
    for (answer, on_error, method, kept) in cases {
        let mut s = sel_settings();
        s.conversation.on_triage_error = on_error;
        let mut e = engine(s, msgs(12, 60));
        let (t, handle) = stub(answer.clone());
        e.set_triage(t);
        let h = history(&e, "-1", None, None);
        assert_eq!((h.selection.method, h.selection.kept), (method, kept), "{answer:?} {on_error:?}");
        let asked = handle.asked.lock().unwrap();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].count, 7, "the older items are listed, the recent five are not");
        assert!(
            asked[0].messages[1].content.contains("[7] [2026-02-13T08:27:00Z]"),
            "{}",
            asked[0].messages[1].content
        );
    }
}

#[test]
fn the_pending_triage_is_the_one_the_call_makes() {
    let mut e = engine(sel_settings(), msgs(12, 60));
    let req = GetChatHistoryContext {
        scope: chatctx_core::tools::Scope {
            channel: "telegram".into(),
            topic_id: None,
            current_message_id: Some("12".into()),
            ..chatctx_core::tools::Scope::chat("-1")
        },
        now: None,
    };
    assert_eq!(e.pending_triage(&req).unwrap(), None, "no model, no triage");
    let (t, handle) = stub(Ok(vec![1]));
    e.set_triage(t);
    let pending = e.pending_triage(&req).unwrap().expect("a triage is due");
    assert!(handle.asked.lock().unwrap().is_empty(), "naming the triage does not make it");
    e.get_chat_history_context(&req).unwrap();
    assert_eq!(handle.asked.lock().unwrap().as_slice(), [pending], "the call asks exactly that");
    let few = GetChatHistoryContext {
        scope: chatctx_core::tools::Scope { current_message_id: Some("3".into()), ..req.scope.clone() },
        ..req.clone()
    };
    assert_eq!(e.pending_triage(&few).unwrap(), None, "too few items for a triage");
    let unknown = GetChatHistoryContext {
        scope: chatctx_core::tools::Scope { chat_id: "-9".into(), ..req.scope.clone() },
        ..req
    };
    assert_eq!(e.pending_triage(&unknown).unwrap_err().code, chatctx_core::ErrorCode::UnknownChat);
}

#[test]
fn the_reply_parent_survives_triage_and_the_lookback() {
    let mut s = sel_settings();
    s.conversation.lookback_count = 8;
    let mut events = msgs(20, 60);
    events.push(msg("-1", None, 21, user("1", "Ann"), "about m2?", true, 2000));
    let mut v = serde_json::to_value(&events[20]).unwrap();
    v["reply_to_message_id"] = json!("2");
    events[20] = ev(v);
    let mut e = engine(s, events);
    e.set_triage(stub(Ok(vec![0])).0);
    let h = history(&e, "-1", None, Some(21));
    assert_eq!(h.selection.forced, ["reply_parent"]);
    assert_eq!(h.items.first().unwrap().text, "m2", "m2 is far outside the lookback, yet first");
    assert_eq!(h.selection.method, SelectionMethod::Triage);
}

#[test]
fn background_items_leave_and_the_newest_tasks_come_back() {
    let mut s = sel_settings();
    s.conversation.previous_tasks_count = 2;
    s.conversation.use_selection = false;
    let events = vec![
        with("scheduled", 1, 10, None),
        with("briefing", 2, 20, None),
        with("heartbeat", 3, 30, None),
        with("subtask", 4, 40, None),
        with("scheduled", 5, 50, None),
        msg("-1", None, 6, user("1", "Ann"), "hi", true, 60),
        with("heartbeat", 7, 70, None),
        msg("-1", None, 8, user("1", "Ann"), "about the heartbeat", true, 80),
    ];
    let mut events2 = events.clone();
    let mut v = serde_json::to_value(&events2[7]).unwrap();
    v["reply_to_message_id"] = json!("7");
    events2[7] = ev(v);
    let e = engine(s.clone(), events);
    let h = history(&e, "-1", None, Some(8));
    assert_eq!(
        texts(&h),
        ["briefing 2", "scheduled 5", "hi"],
        "newest two scheduled/briefing back; heartbeats and subtasks out"
    );
    assert_eq!(h.selection.forced, ["previous_task"]);
    let e = engine(s, events2);
    let h = history(&e, "-1", None, Some(8));
    assert!(
        texts(&h).contains(&"heartbeat 7"),
        "a background item the current message replies to stays: {:?}",
        texts(&h)
    );
}

#[test]
fn bot_replies_are_truncated_and_followed_by_their_actions() {
    let mut s = sel_settings();
    s.conversation.context_truncation = 10;
    s.history.format = chatctx_core::settings::Format::PerItem;
    let reply = ev(
        json!({"type": "message", "chat_id": "-1", "message_id": "2", "kind": "outbound_agent", "sent_at": T0 + 2,
        "sender": {"user_id": "999", "username": "bot", "is_bot": true}, "text": "A very long answer that goes on and on", "actions": ["search_web rust"]}),
    );
    let e = engine(
        s,
        [
            msg("-1", None, 1, user("1", "Ann"), "question", true, 1),
            reply,
            msg("-1", None, 3, user("1", "Ann"), "thanks", true, 3),
        ],
    );
    let h = history(&e, "-1", None, Some(3));
    assert_eq!(h.items.to_vec()[1].text, "A very lon…");
    assert_eq!(h.prompt[1].content, "A very lon…\n\n[actions] search_web rust");
}

#[test]
fn the_token_budget_drops_the_oldest_first_but_never_the_reply_parent() {
    let mut s = sel_settings();
    s.conversation.use_selection = false;
    s.conversation.max_context_tokens = 60; // each short item is about 15 tokens
    let mut events = msgs(10, 60);
    let mut v = serde_json::to_value(msg("-1", None, 11, user("1", "Ann"), "re m1", true, 700)).unwrap();
    v["reply_to_message_id"] = json!("1");
    events.push(ev(v));
    let e = engine(s, events);
    let h = history(&e, "-1", None, Some(11));
    let t = texts(&h);
    assert_eq!(t.first(), Some(&"m1"), "the reply parent stays: {t:?}");
    assert_eq!(t.last(), Some(&"m10"), "the newest stay: {t:?}");
    assert!(t.len() < 11 && t.len() >= 2, "{t:?}");
    assert!(!t.contains(&"m2"), "the oldest non-parent went first: {t:?}");
}

#[test]
fn mode_cap_still_reports_cap() {
    let e = engine(settings(Mode::Talkative, Scope::Topic), msgs(20, 60));
    let h = history(&e, "-1", None, None);
    assert_eq!((h.selection.method, h.selection.kept, h.selection.considered), (SelectionMethod::Cap, 16, 20));
}

/// History for `current` with its decision record, checked to agree with the answer: the kept verdicts are
/// the answer's items, in order.
fn explained(e: &Engine, current: u32) -> (HistoryContext, chatctx_core::decision::HistoryDecision) {
    let mut scope = chatctx_core::tools::Scope::chat("-1");
    scope.current_message_id = Some(current.to_string());
    scope.explain = true;
    let mut h = e.get_chat_history_context(&GetChatHistoryContext { scope, now: None }).unwrap();
    let d = *h.explain.take().expect("asked for");
    let kept: Vec<Option<&str>> = d.items.iter().filter(|i| i.kept).map(|i| i.message_id).collect();
    let answered: Vec<Option<&str>> = h.items.iter().map(|i| i.message_id).collect();
    assert_eq!(kept, answered, "the kept verdicts are the answer's items: {d:?}");
    assert_eq!(d.method, h.selection.method);
    (h, d)
}

fn reason_of(d: &chatctx_core::decision::HistoryDecision, id: &str) -> Reason {
    d.items.iter().find(|i| i.message_id == Some(id)).unwrap_or_else(|| panic!("{id} in {d:?}")).reason
}

use chatctx_core::decision::Reason;

#[test]
fn records_give_each_item_its_verdict() {
    // The budget: the reply parent kept, the oldest dropped for tokens, the newest kept.
    let mut s = sel_settings();
    s.conversation.use_selection = false;
    s.conversation.max_context_tokens = 60;
    let mut events = msgs(10, 60);
    let mut v = serde_json::to_value(msg("-1", None, 11, user("1", "Ann"), "re m1", true, 700)).unwrap();
    v["reply_to_message_id"] = json!("1");
    events.push(ev(v));
    let (_, d) = explained(&engine(s, events), 11);
    assert_eq!(reason_of(&d, "1"), Reason::ReplyParent);
    assert_eq!(reason_of(&d, "2"), Reason::TokenBudget);
    assert_eq!(reason_of(&d, "10"), Reason::AlwaysInclude);
    assert_eq!(d.budget.max_tokens, Some(60));
    assert!(d.budget.used_tokens <= 60 && d.budget.used_tokens > 0, "{:?}", d.budget);

    // Lookback and recency window.
    let mut s = sel_settings();
    s.conversation.context_recency_hours = 3.0;
    s.conversation.context_min_messages = 2;
    s.conversation.use_selection = false;
    s.conversation.lookback_count = 8;
    let (_, d) = explained(&engine(s, msgs(12, 3600)), 12);
    assert_eq!(reason_of(&d, "7"), Reason::OutsideRecencyWindow, "more than 3 h before m11");
    assert_eq!(reason_of(&d, "8"), Reason::AlwaysInclude, "3 h before m11: in");
    assert_eq!(d.items.len(), 8, "the lookback's eight");
    assert_eq!(d.outside_lookback, 3, "m1..m3 were never looked at");

    // Smart mode: what the write policy does not record for the prompt.
    let mut s = sel_settings();
    s.history.mode = Mode::Smart;
    let events = vec![
        msg("-1", None, 1, user("1", "Ann"), "chatter", false, 10),
        msg("-1", None, 2, user("1", "Ann"), "@bot help", true, 20),
        msg("-1", None, 3, user("1", "Ann"), "@bot again", true, 30),
    ];
    let (_, d) = explained(&engine(s, events), 3);
    assert_eq!(reason_of(&d, "1"), Reason::NotRecordedByMode);
    assert_eq!(reason_of(&d, "2"), Reason::AlwaysInclude);

    // Background items, and the previous tasks that come back.
    let mut s = sel_settings();
    s.conversation.previous_tasks_count = 1;
    s.conversation.use_selection = false;
    let events = vec![
        with("scheduled", 1, 10, None),
        with("heartbeat", 2, 20, None),
        with("scheduled", 3, 30, None),
        msg("-1", None, 4, user("1", "Ann"), "hi", true, 40),
    ];
    let (_, d) = explained(&engine(s, events), 4);
    assert_eq!(reason_of(&d, "1"), Reason::Background, "beyond previous_tasks_count");
    assert_eq!(reason_of(&d, "2"), Reason::Background);
    assert_eq!(reason_of(&d, "3"), Reason::PreviousTask);
}

#[test]
fn records_tell_what_triage_was_asked_and_answered() {
    let mut s = sel_settings();
    s.conversation.selector = Selector::Model;
    s.conversation.always_include_recent = 2;
    let mut e = engine(s.clone(), msgs(8, 60));
    let (triage, _) = stub(Ok(vec![1]));
    e.set_triage(triage);
    let (_, d) = explained(&e, 8);
    let t = d.triage.as_ref().expect("a model was asked");
    assert_eq!((t.listed, t.outcome), (5, chatctx_core::decision::TriageOutcome::Chosen));
    assert_eq!(t.chosen.iter().map(|c| &**c).collect::<Vec<_>>(), ["2"]);
    assert_eq!(reason_of(&d, "2"), Reason::ModelTriage);
    assert_eq!(reason_of(&d, "1"), Reason::NotChosen);
    assert_eq!(reason_of(&d, "7"), Reason::RecentWindow);

    let mut e = engine(s, msgs(8, 60));
    let (triage, _) = stub(Err("timed out after 30 s".to_owned()));
    e.set_triage(triage);
    let (h, d) = explained(&e, 8);
    let t = d.triage.as_ref().unwrap();
    assert_eq!(t.outcome, chatctx_core::decision::TriageOutcome::Error);
    assert_eq!(t.error.as_deref(), Some("timed out after 30 s"));
    assert_eq!(h.selection.method, SelectionMethod::RecentOnly);
    assert_eq!(reason_of(&d, "1"), Reason::NotChosen);

    // Without `explain` and with records off, nothing is built.
    let e = engine(sel_settings(), msgs(8, 60));
    assert!(history(&e, "-1", None, Some(8)).explain.is_none());
}

/// Without mention entities (an IRC log, a plain event), a leading `nick:` addressing someone who spoke is
/// found by chatctx: rendered as their reference, and the lexical selector brings their message back.
#[test]
fn a_typed_name_addresses_a_participant_without_entities() {
    let plain = |id: u32, who: &str, text: &str, dt: i64| {
        ev(json!({"type": "message", "channel": "irc", "chat_id": "#ubuntu", "message_id": id.to_string(),
            "kind": "inbound_user", "sent_at": T0 + dt, "sender": {"user_id": who, "username": who}, "text": text}))
    };
    let mut s = sel_settings();
    s.conversation.selector = chatctx_core::settings::Selector::Lexical;
    s.conversation.always_include_recent = 1;
    s.conversation.lexical_keep = 1;
    s.conversation.skip_selection_threshold = 0;
    let mut events = vec![plain(1, "Matt|", "my partition table is gone after the install", 0)];
    for i in 2..=6 {
        events.push(plain(i, "zed", &format!("anyone seen the new kernel {i}?"), i64::from(i) * 10));
    }
    events.push(plain(7, "ann", "matt|, boot a live cd and run testdisk", 100));
    let e = engine(s, events);
    let current = e.message("irc", "#ubuntu", "7").unwrap();
    assert_eq!(current.text, "[@Matt|](irc:@Matt|), boot a live cd and run testdisk", "a username and nothing more");
    let h = e
        .get_chat_history_context(&GetChatHistoryContext {
            scope: chatctx_core::tools::Scope {
                channel: "irc".into(),
                current_message_id: Some("7".into()),
                ..chatctx_core::tools::Scope::chat("#ubuntu")
            },
            now: None,
        })
        .unwrap();
    let ids: Vec<&str> = h.items.iter().filter_map(|i| i.message_id).collect();
    assert_eq!(ids, ["1", "6"], "Matt's message, addressed by name, and the newest");
}
