//! People directories (docs/protocol.md §3.11): names learned from `person` events show in every chat of the
//! workspace, also in items stored before the name arrived; a message's own names win; workspaces stay apart.

use chatctx_core::{Engine, Event, Settings};
use serde_json::{Value, json};

use super::{T0, ev};

/// A Slack-style message: the speaker known only by id (their id is also their username), mentions as entities.
fn slack_msg(chat: &str, ws: &str, id: u32, user: &str, text: &str, mention: Option<(&str, u32)>) -> Event {
    let mut v = json!({"type": "message", "channel": "slack", "chat_id": chat, "workspace_id": ws,
        "message_id": format!("{id}.000100"), "kind": "inbound_user", "sent_at": T0 + i64::from(id),
        "sender": {"user_id": user, "username": user}, "text": text});
    if let Some((who, at)) = mention {
        v["entities"] = json!([{"type": "mention", "offset": at, "length": who.len() + 1}]);
    }
    ev(v)
}

fn person(ws: Option<&str>, chat: Option<&str>, user: &str, name: &str) -> Event {
    let mut v = json!({"type": "person", "channel": "slack", "user_id": user, "username": user, "display_name": name});
    if let Some(w) = ws {
        v["workspace_id"] = json!(w);
    }
    if let Some(c) = chat {
        v["chat_id"] = json!(c);
    }
    ev(v)
}

fn history(e: &Engine, chat: &str) -> Vec<(String, String)> {
    e.history("slack", chat, None).unwrap().into_iter().map(|i| (i.sender.display_ref, i.text)).collect()
}

fn applied(events: Vec<Event>) -> Engine {
    let mut e = Engine::new(Settings::default());
    for x in events {
        e.apply(x).unwrap();
    }
    e
}

#[test]
fn names_learned_later_show_in_items_stored_before() {
    let mut e = applied(vec![
        slack_msg("C1", "T1", 1, "U1", "deploy is done", None),
        slack_msg("C1", "T1", 2, "U2", "thanks @U1 !", Some(("U1", 7))),
    ]);
    assert_eq!(history(&e, "C1")[0].0, "[@U1](slack:@U1)", "before: only the id is known");
    assert_eq!(history(&e, "C1")[1].1, "thanks [@U1](slack:@U1) !");
    e.apply(person(Some("T1"), None, "U1", "Priya Raman")).unwrap();
    let h = history(&e, "C1");
    assert_eq!(h[0].0, "[Priya Raman](slack:@U1)", "the speaker of a message stored before");
    assert_eq!(h[1].1, "thanks [Priya Raman](slack:@U1) !", "a mention stored before");
    e.apply(person(None, Some("C1"), "U1", "Priya R.")).unwrap();
    let h = history(&e, "C1");
    assert_eq!((h[0].0.as_str(), h[1].1.as_str()), ("[Priya R.](slack:@U1)", "thanks [Priya R.](slack:@U1) !"));
    // New messages use the name at once, speaker and mention alike.
    e.apply(slack_msg("C1", "T1", 3, "U3", "@U1 ok", Some(("U1", 0)))).unwrap();
    e.apply(slack_msg("C1", "T1", 4, "U1", "sure", None)).unwrap();
    let h = history(&e, "C1");
    assert_eq!(h[2].1, "[Priya R.](slack:@U1) ok");
    assert_eq!(h[3].0, "[Priya R.](slack:@U1)");
}

#[test]
fn a_messages_own_names_win_and_workspaces_stay_apart() {
    let mut named = slack_msg("C1", "T1", 1, "U1", "hi", None);
    if let Event::Message(m) = &mut named {
        m.sender.as_mut().unwrap().display_name = Some("Pri".into());
    }
    let mut e = applied(vec![named, slack_msg("C9", "T9", 2, "U1", "hello", None)]);
    e.apply(person(Some("T1"), None, "U1", "Priya Raman")).unwrap();
    assert_eq!(history(&e, "C1")[0].0, "[Pri](slack:@U1)", "the message named its speaker itself");
    assert_eq!(history(&e, "C9")[0].0, "[@U1](slack:@U1)", "another workspace does not see T1's people");
}

#[test]
fn the_order_of_names_and_messages_does_not_matter() {
    let msgs = || {
        vec![slack_msg("C1", "T1", 1, "U1", "one", None), slack_msg("C1", "T1", 2, "U2", "@U1 two", Some(("U1", 0)))]
    };
    let mut late = msgs();
    late.push(person(Some("T1"), None, "U1", "Priya"));
    let mut early = vec![person(Some("T1"), None, "U1", "Priya")];
    early.extend(msgs());
    let (a, b) = (applied(late), applied(early));
    assert_eq!(history(&a, "C1"), history(&b, "C1"));
    let doc = |e: &Engine| serde_json::to_string(&e.export_conversation("slack", "C1").unwrap()).unwrap();
    // Only the tracked mentions differ in how they were learned; the texts and speakers are the same.
    let (da, db): (Value, Value) = (serde_json::from_str(&doc(&a)).unwrap(), serde_json::from_str(&doc(&b)).unwrap());
    assert_eq!(da["history"], db["history"]);
    assert_eq!(da["people"], db["people"]);
}

#[test]
fn a_chat_document_follows_the_directory_and_the_last_chat_orphans_it() {
    let mut e = applied(vec![
        slack_msg("C1", "T1", 1, "U1", "one", None),
        slack_msg("C1", "T1", 2, "U2", "@U1 two", Some(("U1", 0))),
        slack_msg("C2", "T1", 3, "U1", "other chat", None),
    ]);
    let doc = e.export_conversation("slack", "C1").unwrap();
    e.apply(person(Some("T1"), None, "U1", "Priya")).unwrap();
    // A document written before the name arrived shows it once loaded.
    e.import_document(&doc).unwrap();
    assert_eq!(
        history(&e, "C1"),
        [
            ("[Priya](slack:@U1)".to_owned(), "one".to_owned()),
            ("[@U2](slack:@U2)".to_owned(), "[Priya](slack:@U1) two".to_owned())
        ]
    );
    let again = e.export_conversation("slack", "C1").unwrap();
    let mut fresh = Engine::new(Settings::default());
    fresh.import_document(&again).unwrap();
    assert_eq!(history(&fresh, "C1"), history(&e, "C1"), "without the directory, the document keeps its names");
    assert_eq!(e.directories(), [("slack".to_owned(), "T1".to_owned(), 1)]);
    assert_eq!(e.orphaned_workspace("slack", "C1"), None, "C2 still belongs to T1");
    assert!(e.remove_chat("slack", "C1"));
    assert_eq!(e.orphaned_workspace("slack", "C2").as_deref(), Some("T1"), "the last chat of T1");
    assert!(e.remove_chat("slack", "C2") && e.remove_directory("slack", "T1"));
    assert!(e.directories().is_empty());
}

#[test]
fn person_events_are_checked_like_every_event() {
    let bad = [
        (json!({"type": "person", "channel": "slack"}), "`user_id`"),
        (json!({"type": "person", "user_id": "U1", "display_name": 7}), "`display_name`"),
        (json!({"type": "person", "user_id": "U1", "workspace_id": ["T1"]}), "`workspace_id`"),
    ];
    for (v, named) in bad {
        let err = Event::decode(&v).expect_err("refused");
        assert!(err.message.contains(named), "{v}: {}", err.message);
    }
    let long = json!({"type": "person", "user_id": "U1", "display_name": "x".repeat(2000)});
    assert!(chatctx_core::event::check_fresh(&long).is_err(), "names are bounded like a sender's");
    let p = Event::decode(&json!({"type": "person", "channel": "discord", "user_id": 42, "username": "@bob",
        "first_name": "Bob", "is_bot": true, "chat_id": "500"}))
    .unwrap();
    let back = serde_json::to_value(&p).unwrap();
    assert_eq!(
        back,
        json!({"type": "person", "channel": "discord", "chat_id": "500", "user_id": "42",
        "username": "bob", "first_name": "Bob", "is_bot": true})
    );
    assert_eq!(Event::decode(&back).unwrap(), p, "a person event round-trips through its log line");
}

/// Issue 30, point 4: the bot mentioned before it first spoke, and a Slack speaker known only by id before a
/// message of theirs carried a profile, each appear one way in the prompt once their name is known.
#[test]
fn one_name_per_person_in_a_prompt() {
    let mention = json!({"type": "message", "chat_id": "-100", "message_id": "1", "kind": "inbound_user",
        "sent_at": T0, "sender": {"user_id": "42", "username": "alice", "first_name": "Alice"},
        "text": "@helper_bot hi", "entities": [{"type": "mention", "offset": 0, "length": 11}], "triggered_agent": true});
    let reply = json!({"type": "message", "chat_id": "-100", "message_id": "2", "kind": "outbound_agent", "sent_at": T0 + 5,
        "sender": {"user_id": "999", "username": "helper_bot", "first_name": "Helper", "is_bot": true}, "text": "hello"});
    let again = json!({"type": "message", "chat_id": "-100", "message_id": "3", "kind": "inbound_user", "sent_at": T0 + 9,
        "sender": {"user_id": "42", "username": "alice", "first_name": "Alice"}, "text": "thanks", "triggered_agent": true});
    let e = applied(vec![ev(mention), ev(reply), ev(again)]);
    use chatctx_core::tools::Request as _;
    let call =
        chatctx_core::tools::GetChatHistoryContext::decode(&json!({"chat_id": "-100", "current_message_id": "3"}));
    let prompt = serde_json::to_string(&e.get_chat_history_context(&call.unwrap()).unwrap().prompt).unwrap();
    assert!(prompt.contains("[Helper](tg:@helper_bot) hi"), "{prompt}");
    assert!(!prompt.contains("[@helper_bot]"), "one name for the bot: {prompt}");

    // Slack: first known by id, then a message with its own profile names the speaker everywhere.
    let mut e = applied(vec![slack_msg("C1", "T1", 1, "U1", "first", None)]);
    let mut named = slack_msg("C1", "T1", 2, "U1", "second", None);
    if let Event::Message(m) = &mut named {
        m.sender.as_mut().unwrap().display_name = Some("Priya".into());
    }
    e.apply(named).unwrap();
    let speakers: Vec<String> = history(&e, "C1").into_iter().map(|(who, _)| who).collect();
    assert_eq!(speakers, ["[Priya](slack:@U1)", "[Priya](slack:@U1)"]);
}

/// A rename reaches every stored text that holds the old reference, however the item came to be stored
/// (applied, or imported from a document) and whatever else the text holds (a Markdown link has the same `](`
/// as a reference); a second rename finds the texts the first one rewrote.
#[test]
fn a_rename_reaches_every_text_holding_the_reference() {
    let msgs = vec![
        slack_msg("C1", "T1", 1, "U2", "see [docs](https://x.example) and @U1", Some(("U1", 34))),
        slack_msg("C1", "T1", 2, "U3", "@U1 plain", Some(("U1", 0))),
        slack_msg("C1", "T1", 3, "U3", "no mention, [a link](https://y.example)", None),
    ];
    let applied_engine = applied(msgs);
    let mut imported = Engine::new(Settings::default());
    imported.import_document(&applied_engine.export_conversation("slack", "C1").unwrap()).unwrap();
    for mut e in [applied_engine, imported] {
        let texts = |e: &Engine| history(e, "C1").into_iter().map(|(_, t)| t).collect::<Vec<_>>();
        assert_eq!(texts(&e)[0], "see [docs](https://x.example) and [@U1](slack:@U1)");
        e.apply(person(Some("T1"), None, "U1", "Priya")).unwrap();
        let want = ["see [docs](https://x.example) and [Priya](slack:@U1)", "[Priya](slack:@U1) plain"];
        assert_eq!(texts(&e)[..2], want);
        e.apply(person(None, Some("C1"), "U1", "Priya R.")).unwrap();
        let t = texts(&e);
        assert_eq!(t[..2], ["see [docs](https://x.example) and [Priya R.](slack:@U1)", "[Priya R.](slack:@U1) plain"]);
        assert_eq!(t[2], "no mention, [a link](https://y.example)");
    }
}

/// A person the chat already knows by name who then appears without one (a Slack reaction, a message without a
/// profile, a bare id) is shown by that name, not as `@U1` until they next speak with it; the directory's name,
/// when it has one, still comes first; a new username is someone else's look and shows as it is.
#[test]
fn a_nameless_appearance_keeps_the_name_the_chat_knows() {
    let named = |id: u32, text: &str| {
        let mut m = slack_msg("C1", "T1", id, "U1", text, None);
        if let Event::Message(m) = &mut m {
            m.sender.as_mut().unwrap().display_name = Some("Priya".into());
        }
        m
    };
    let reaction = |id: u32, to: u32, sender: Value| {
        ev(json!({"type": "reaction", "channel": "slack", "chat_id": "C1", "message_id": format!("{to}.000100"),
            "direction": "inbound", "sender": sender, "emoji": ["+1"], "sent_at": T0 + i64::from(id)}))
    };
    let mut e = applied(vec![
        named(1, "first"),
        slack_msg("C1", "T1", 2, "U1", "no profile this time", None),
        reaction(3, 1, json!({"user_id": "U1"})),
        reaction(4, 1, json!({"user_id": "U1", "username": "U1"})),
    ]);
    let speakers = |e: &Engine| history(e, "C1").into_iter().map(|(who, _)| who).collect::<Vec<_>>();
    assert_eq!(speakers(&e), ["[Priya](slack:@U1)"; 4], "one name for one person, whatever each event carried");

    // A quote's author too, named by id only: as a speaker would be shown.
    let mut quoting = slack_msg("C1", "T1", 9, "U2", "quoting", None);
    if let Event::Message(m) = &mut quoting {
        let sender =
            chatctx_core::event::Person { user_id: "U1".into(), username: Some("U1".into()), ..Default::default() };
        m.quote = Some(chatctx_core::event::Quote { sender: Some(sender), text: "first".into() });
    }
    e.apply(quoting).unwrap();
    let quote = e.message("slack", "C1", "9.000100").unwrap().quote;
    assert_eq!(quote.map(|q| q.sender_ref), Some("[Priya](slack:@U1)".to_owned()));

    // The directory's name wins over what the chat saw for a message that names no one.
    e.apply(person(Some("T1"), None, "U1", "Priya Raman")).unwrap();
    e.apply(slack_msg("C1", "T1", 10, "U1", "by id again", None)).unwrap();
    assert_eq!(speakers(&e)[5], "[Priya Raman](slack:@U1)");
    assert_eq!(
        speakers(&e)[..4],
        ["[Priya](slack:@U1)"; 4],
        "what the chat's name showed keeps it, as its source does"
    );

    // Another username is another look: shown as the event gives it.
    let mut e = applied(vec![named(1, "first")]);
    e.apply(reaction(2, 1, json!({"user_id": "U1", "username": "priya2"}))).unwrap();
    assert_eq!(speakers(&e), ["[Priya](slack:@U1)", "[@priya2](slack:@priya2)"]);
}

/// A mention entity naming a user by id and username only (a Discord user without a display name) reads as the
/// chat or the directory knows them, like a `@username` mention; unknown, it takes the name learned later.
#[test]
fn a_mention_without_names_reads_as_the_person_is_known() {
    let msg = |id: u32, sender: Value, text: &str, mentioned: Value| {
        ev(json!({"type": "message", "channel": "discord", "chat_id": "D1", "message_id": id.to_string(),
            "kind": "inbound_user", "sent_at": T0 + i64::from(id), "sender": sender, "text": text,
            "entities": [{"type": "text_mention", "offset": 3, "length": text.chars().count() - 3, "user": mentioned}]}))
    };
    let bob = json!({"user_id": "43", "username": "bob", "display_name": "Bob"});
    let mut e = applied(vec![
        ev(json!({"type": "message", "channel": "discord", "chat_id": "D1", "message_id": "1", "kind": "inbound_user",
            "sent_at": T0, "sender": {"user_id": "42", "username": "alice", "display_name": "Alice"}, "text": "hello"})),
        msg(2, bob.clone(), "hi @alice", json!({"user_id": "42", "username": "alice"})),
        msg(3, bob.clone(), "hi @zed", json!({"user_id": "77", "username": "zed"})),
        msg(4, bob, "hi @alice2", json!({"user_id": "42", "username": "alice2"})),
    ]);
    let texts =
        |e: &Engine| e.history("discord", "D1", None).unwrap().into_iter().skip(1).map(|i| i.text).collect::<Vec<_>>();
    assert_eq!(texts(&e), ["hi [Alice](discord:@alice)", "hi [@zed](discord:@zed)", "hi [@alice2](discord:@alice2)"]);
    e.apply(ev(
        json!({"type": "person", "channel": "discord", "user_id": "77", "username": "zed", "display_name": "Zed"}),
    ))
    .unwrap();
    assert_eq!(texts(&e)[1], "hi [Zed](discord:@zed)", "a name learned later replaces the reference");
}
