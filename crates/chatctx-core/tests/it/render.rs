//! Rendering (docs/protocol.md §5.4): the seed's payload exactly, per_item, the prompt order, the addressing input.

use chatctx_core::render::{self, Role};
use chatctx_core::settings::Format;
use chatctx_core::tools::Rendered;

use super::*;

/// The seed's example conversation: Alice asks to review Bob's update, quoting Carol; the bot answers.
fn seed_conversation(format: Format) -> Engine {
    let mut s = settings(Mode::Smart, Scope::Topic);
    s.history.format = format;
    s.prompt.system = "You are MisterMorph.".into();
    engine(
        s,
        [
            ev(
                json!({"type": "message", "chat_id": "-100500", "chat_type": "supergroup", "message_id": "40", "kind": "inbound_user",
                  "sent_at": "2026-02-13T08:19:00Z", "sender": {"user_id": "43", "username": "bob", "first_name": "Bob"}, "text": "my update is up"}),
            ),
            ev(
                json!({"type": "message", "chat_id": "-100500", "chat_type": "supergroup", "message_id": "41", "kind": "inbound_user",
                  "sent_at": "2026-02-13T08:20:10Z", "sender": {"user_id": "42", "username": "alice", "first_name": "Alice"},
                  "text": "Please review @bob's update.", "entities": [{"type": "mention", "offset": 14, "length": 4}],
                  "quote": {"sender": {"user_id": "44", "username": "carol", "first_name": "Carol"}, "text": "I will add details tomorrow."},
                  "triggered_agent": true}),
            ),
            ev(
                json!({"type": "message", "chat_id": "-100500", "message_id": "42", "reply_to_message_id": "41", "kind": "outbound_agent",
                  "sent_at": "2026-02-13T08:20:15Z", "sender": {"user_id": "999", "username": "mistermorph_bot", "display_name": "MisterMorph", "is_bot": true},
                  "text": "Got it, I will organize it first.", "actions": ["fetch_pr 17"]}),
            ),
            ev(
                json!({"type": "message", "chat_id": "-100500", "message_id": "43", "reply_to_message_id": "42", "kind": "inbound_user",
                  "sent_at": "2026-02-13T08:25:00Z", "sender": {"user_id": "44", "username": "carol", "first_name": "Carol"},
                  "text": "@mistermorph_bot any news?", "entities": [{"type": "mention", "offset": 0, "length": 16}], "triggered_agent": true}),
            ),
        ],
    )
}

#[test]
fn single_is_the_seeds_payload_exactly() {
    let e = seed_conversation(Format::Single);
    let h = history(&e, "-100500", None, Some(43));
    let expected = concat!(
        r#"{"type":"chat_history_context","channel":"telegram","note":"Historical messages only. Do not treat as the current user request.","#,
        r#""messages":[{"kind":"inbound_user","time":"2026-02-13T08:20:10Z","sender":"[Alice](tg:@alice)","text":"Please review [Bob](tg:@bob)'s update.","quote":"> [Carol](tg:@carol): I will add details tomorrow."},"#,
        r#"{"kind":"outbound_agent","time":"2026-02-13T08:20:15Z","sender":"[MisterMorph](tg:@mistermorph_bot)","text":"Got it, I will organize it first.","actions":["fetch_pr 17"]}]}"#
    );
    assert_eq!(serde_json::to_string(&h.rendered).unwrap(), expected);
    // The prompt: system, history as one user message holding the same JSON, then the current message.
    let roles: Vec<Role> = h.prompt.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::User]);
    assert_eq!(h.prompt[1].content, expected);
    assert_eq!(
        h.prompt[2].content,
        "[2026-02-13T08:25:00Z] [Carol](tg:@carol): [MisterMorph](tg:@mistermorph_bot) any news?"
    );
    insta::assert_json_snapshot!("seed_items", h.items);
}

#[test]
fn per_item_gives_one_message_per_item() {
    let e = seed_conversation(Format::PerItem);
    let h = history(&e, "-100500", None, Some(43));
    let Rendered::PerItem(messages) = &h.rendered else { panic!("per_item") };
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].role, Role::Assistant, "the bot's own item");
    insta::assert_json_snapshot!("per_item_prompt", h.prompt);
}

#[test]
fn stable_rendering_across_calls_and_engines() {
    let a = serde_json::to_string(&history(&seed_conversation(Format::Single), "-100500", None, Some(43))).unwrap();
    let b = serde_json::to_string(&history(&seed_conversation(Format::Single), "-100500", None, Some(43))).unwrap();
    assert_eq!(a, b);
}

#[test]
fn addressing_input_carries_history_and_the_current_speaker() {
    let e = seed_conversation(Format::Single);
    let h = history(&e, "-100500", None, Some(43));
    let current = e.message("telegram", "-100500", "43").unwrap();
    let typed = render::addressing_input(
        "mistermorph_bot",
        &["morph".to_owned(), "MM".to_owned()],
        &current,
        &h.items.to_vec(),
    );
    let input = serde_json::to_value(&typed).unwrap();
    assert_eq!(input["bot_username"], "mistermorph_bot");
    assert_eq!(input["aliases"], json!(["morph", "MM"]));
    assert_eq!(input["current_message"]["sender"]["display_ref"], "[Carol](tg:@carol)");
    assert_eq!(input["current_message"]["sender"]["user_id"], "44");
    assert_eq!(input["current_message"]["reply_to_message_id"], "42");
    assert_eq!(input["chat_history_context"]["type"], "chat_history_context");
    assert_eq!(input["chat_history_context"]["messages"].as_array().unwrap().len(), 2);
    insta::assert_json_snapshot!("addressing_input", typed);
}

#[test]
fn empty_history_renders_no_history_message() {
    let e = seed_conversation(Format::Single);
    let h = history(&e, "-100500", None, Some(40));
    assert!(h.items.is_empty());
    assert_eq!(h.prompt.iter().map(|m| m.role).collect::<Vec<_>>(), [Role::System, Role::User]);
}
