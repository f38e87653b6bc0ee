//! Invariants over arbitrary event sequences: determinism, chat isolation, and rendering.

use chatctx_core::render;
use chatctx_core::settings::Format;
use chatctx_core::tools::Rendered;
use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone)]
struct Step {
    chat: u8,
    topic: Option<u8>,
    id: u16,
    user: u8,
    text: String,
    triggered: bool,
    outbound: bool,
    dt: i64,
}

fn step() -> impl Strategy<Value = Step> {
    (0u8..3, proptest::option::of(0u8..3), 0u16..40, 0u8..5, "[a-z @😀]{0,16}", any::<bool>(), any::<bool>(), 0i64..500)
        .prop_map(|(chat, topic, id, user, text, triggered, outbound, dt)| Step {
            chat,
            topic,
            id,
            user,
            text,
            triggered,
            outbound,
            dt,
        })
}

fn to_event(s: &Step) -> Event {
    let mut v = json!({"type": "message", "chat_id": format!("-{}", s.chat), "message_id": s.id.to_string(),
        "kind": if s.outbound { "outbound_agent" } else { "inbound_user" }, "sent_at": T0 + s.dt,
        "sender": {"user_id": s.user.to_string(), "username": format!("u{}", s.user), "first_name": format!("User {}", s.user)},
        "text": s.text, "triggered_agent": s.triggered});
    if let Some(t) = s.topic {
        v["topic_id"] = json!(t.to_string());
    }
    if let Some(at) = s.text.find('@') {
        let offset = s.text[..at].encode_utf16().count();
        v["entities"] = json!([{"type": "mention", "offset": offset, "length": 3}]);
    }
    ev(v)
}

fn answers(e: &Engine, chat: &str) -> String {
    let mut out = String::new();
    for topic in [None, Some("0"), Some("1"), Some("2")] {
        let req = chatctx_core::tools::GetChatHistoryContext {
            scope: chatctx_core::tools::Scope {
                channel: "telegram".into(),
                topic_id: topic.map(Into::into),
                current_message_id: None,
                ..chatctx_core::tools::Scope::chat(chat)
            },
            now: None,
        };
        match e.get_chat_history_context(&req) {
            Ok(h) => out.push_str(&serde_json::to_string(&h).unwrap()),
            Err(err) => out.push_str(&err.to_string()),
        }
        out.push('\n');
    }
    out.push_str(&serde_json::to_string(&e.objects("telegram", chat).unwrap_or_default()).unwrap());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The same events give byte-identical answers, in every mode and scope.
    #[test]
    fn deterministic(steps in proptest::collection::vec(step(), 0..60), talkative in any::<bool>(), chat_scope in any::<bool>()) {
        let s = settings(if talkative { Mode::Talkative } else { Mode::Smart }, if chat_scope { Scope::Chat } else { Scope::Topic });
        let a = engine(s.clone(), steps.iter().map(to_event));
        let b = engine(s, steps.iter().map(to_event));
        for chat in ["-0", "-1", "-2"] {
            prop_assert_eq!(answers(&a, chat), answers(&b, chat));
        }
    }

    /// Events in other chats never change a chat's answers, and no answer ever holds another chat's items.
    #[test]
    fn chats_are_isolated(steps in proptest::collection::vec(step(), 0..60)) {
        let s = settings(Mode::Talkative, Scope::Chat);
        let all = engine(s.clone(), steps.iter().map(to_event));
        let only_zero = engine(s, steps.iter().filter(|x| x.chat == 0).map(to_event));
        prop_assert_eq!(answers(&all, "-0"), answers(&only_zero, "-0"));
        for chat in ["-0", "-1", "-2"] {
            if let Ok(items) = all.history("telegram", chat, None) {
                prop_assert!(items.iter().all(|i| i.chat_id == chat));
            }
        }
    }

    /// The mode cap bounds the history whatever arrives.
    #[test]
    fn bounded(steps in proptest::collection::vec(step(), 0..80)) {
        let e = engine(settings(Mode::Talkative, Scope::Chat), steps.iter().map(to_event));
        for chat in ["-0", "-1", "-2"] {
            if let Ok(h) = e.get_chat_history_context(&chatctx_core::tools::GetChatHistoryContext {
        scope: chatctx_core::tools::Scope { channel: "telegram".into(), topic_id: None, current_message_id: None, ..chatctx_core::tools::Scope::chat(chat) },
        now: None,
    }) {
                prop_assert!(h.items.len() <= 16);
                prop_assert!(h.items.to_vec().windows(2).all(|w| w[0].sent_at <= w[1].sent_at), "chronological");
            }
        }
    }

    /// The prompt is rendered straight from storage, and it is exactly what the answer's own parts give:
    /// `single`'s history message is the serialized `rendered` payload, `per_item`'s messages are the items
    /// rendered one by one, and `get_chat_history_prompt` returns the same prompt and selection; whatever the
    /// text holds (quotes, backslashes, control characters, emoji), with quotes, actions and cut bot replies.
    #[test]
    fn the_prompt_is_what_the_answer_renders(
        steps in proptest::collection::vec((step(), "[a-z \"\\\\\n\t\u{1}\u{1f}\u{7f}é😀]{0,24}", any::<bool>()), 1..40),
        per_item in any::<bool>(),
        cut in 0usize..8,
    ) {
        let mut s = settings(Mode::Talkative, Scope::Chat);
        s.history.format = if per_item { Format::PerItem } else { Format::Single };
        s.conversation.context_truncation = cut;
        s.prompt.system = "sys".into();
        let events = steps.iter().map(|(step, text, extra)| {
            let mut step = step.clone();
            step.text = text.clone();
            let mut v = serde_json::to_value(to_event(&step)).unwrap();
            v.as_object_mut().unwrap().remove("entities");
            if *extra {
                if step.outbound {
                    v["actions"] = json!([format!("tool \"{}\"", step.id), "second\\step"]);
                } else {
                    v["quote"] = json!({"sender": {"user_id": "9", "username": "q", "first_name": "Q\"uoted"}, "text": format!("line\n{}", step.text)});
                }
            }
            ev(v)
        });
        let e = engine(s, events.collect::<Vec<_>>());
        let last = steps.iter().rev().find(|(x, _, _)| x.chat == 0).map(|(x, _, _)| x.id.to_string());
        for current in [None, last] {
            let req = chatctx_core::tools::GetChatHistoryContext {
        scope: chatctx_core::tools::Scope { channel: "telegram".into(), topic_id: None, current_message_id: current, ..chatctx_core::tools::Scope::chat("-0") },
        now: None,
    };
            let (Ok(h), Ok(p)) = (e.get_chat_history_context(&req), e.get_chat_history_prompt(&req)) else { continue };
            // The answer's items, stored in one block, read and serialize as the owned items they stand for.
            let owned = h.items.to_vec();
            prop_assert_eq!(serde_json::to_string(&h.items).unwrap(), serde_json::to_string(&owned).unwrap());
            prop_assert_eq!(&chatctx_core::history::HistoryItems::from_items(&owned), &h.items);
            // Each is the stored message as a single-message read shows it (a cut bot reply aside).
            for item in owned.iter().filter(|i| cut == 0 || !i.text.ends_with(render::ELLIPSIS)) {
                let Some(id) = item.message_id.as_deref() else { continue };
                let stored = e.message("telegram", "-0", id);
                prop_assert_eq!(Some(item), stored.as_ref());
            }
            prop_assert_eq!(&p.prompt, &h.prompt);
            prop_assert_eq!(&p.selection, &h.selection);
            let history = &h.prompt[1..h.prompt.len() - usize::from(req.scope.current_message_id.is_some())];
            match &h.rendered {
                Rendered::Single(payload) => {
                    prop_assert_eq!(payload.messages.len(), h.items.len());
                    prop_assert_eq!(
                        serde_json::to_string(&payload.messages).unwrap(),
                        serde_json::to_string(&payload.messages.to_vec()).unwrap()
                    );
                    prop_assert_eq!(&render::payload("telegram", &owned), payload);
                    if h.items.is_empty() {
                        prop_assert!(history.is_empty());
                    } else {
                        prop_assert_eq!(history.len(), 1);
                        prop_assert_eq!(&history[0].content, &serde_json::to_string(payload).unwrap());
                    }
                }
                Rendered::PerItem(messages) => {
                    prop_assert_eq!(messages, &render::per_item(&h.items.to_vec()));
                    prop_assert_eq!(messages.as_slice(), history);
                }
            }
        }
    }
}
