//! What the mapping decides for the cases a bot developer notices (issue 16). The updates are written from
//! the Bot API reference (https://core.telegram.org/bots/api#message, #update, #businessconnection), field by
//! field, with the values Telegram sends.

use chatctx_core::event::MessageKind;
use serde_json::json;

use super::*;

fn the_bot() -> Value {
    json!({"id": 999, "is_bot": true, "first_name": "My Bot", "username": "my_bot"})
}

fn carol() -> Value {
    json!({"id": 77, "is_bot": false, "first_name": "Carol", "username": "carol"})
}

fn forum() -> Value {
    json!({"id": -1001900000001i64, "title": "Support", "type": "supergroup", "is_forum": true})
}

/// A topic the bot opened (per ticket): every message in it carries Telegram's implicit link to the topic's
/// creation message, which is the bot's. That link is no reply, and does not address the bot.
#[test]
fn the_implicit_topic_link_never_counts_as_a_reply() {
    let created = json!({"message_id": 300, "message_thread_id": 300, "date": 1_770_970_000, "chat": forum(),
        "from": the_bot(), "is_topic_message": true,
        "forum_topic_created": {"name": "Ticket #4411", "icon_color": 7322096}});
    let in_topic = json!({"update_id": 9001, "message": {"message_id": 301, "message_thread_id": 300,
        "date": 1_770_970_060, "chat": forum(), "from": carol(), "is_topic_message": true,
        "reply_to_message": created, "text": "my order never arrived"}});
    let m = message(&in_topic);
    assert_eq!(m.topic_id.as_deref(), Some("300"));
    assert_eq!(m.reply_to_message_id, None, "not a reply");
    assert!(!m.triggered_agent, "not addressed to the bot");
    assert!(m.quote.is_none());
    // A real reply to the bot inside the topic still addresses it.
    let answer = json!({"message_id": 302, "message_thread_id": 300, "date": 1_770_970_100, "chat": forum(),
        "from": the_bot(), "is_topic_message": true, "text": "Which order number?"});
    let reply = json!({"update_id": 9002, "message": {"message_id": 303, "message_thread_id": 300,
        "date": 1_770_970_160, "chat": forum(), "from": carol(), "is_topic_message": true,
        "reply_to_message": answer, "text": "#5521"}});
    let m = message(&reply);
    assert_eq!((m.reply_to_message_id.as_deref(), m.triggered_agent), (Some("302"), true));
}

/// A business bot answering in its owner's name: Telegram sends the owner as `from` and the bot as
/// `sender_business_bot`. It is the bot's own outbound message.
#[test]
fn a_business_bots_own_message_is_outbound() {
    let owner = json!({"id": 5000, "is_bot": false, "first_name": "Shop Owner"});
    let update = json!({"update_id": 9010, "business_message": {"message_id": 40, "date": 1_770_970_200,
        "business_connection_id": "bc-1", "chat": {"id": 6000, "type": "private", "first_name": "Client"},
        "from": owner, "sender_business_bot": the_bot(), "text": "Your parcel ships today."}});
    let m = message(&update);
    assert_eq!(m.kind, MessageKind::OutboundAgent);
    // The owner typing themselves (no sender_business_bot) stays the owner's inbound message.
    let mut by_hand = update.clone();
    by_hand["business_message"].as_object_mut().unwrap().remove("sender_business_bot");
    assert_eq!(message(&by_hand).kind, MessageKind::InboundUser);
}

/// A message with no author at all is the chat speaking only in a channel; elsewhere it is refused naming
/// the field.
#[test]
fn a_message_without_any_sender() {
    let channel = json!({"update_id": 9020, "channel_post": {"message_id": 7, "date": 1_770_970_300,
        "chat": {"id": -1001500000002i64, "title": "News", "type": "channel"}, "text": "Release 2.0 is out"}});
    let m = message(&channel);
    assert_eq!(m.sender.as_ref().and_then(|p| p.display_name.as_deref()), Some("News"));
    let group = json!({"update_id": 9021, "message": {"message_id": 8, "date": 1_770_970_300,
        "chat": {"id": -100500, "type": "supergroup", "title": "G"}, "text": "who am I?"}});
    let e = map_update(&group, &bot(), received()).unwrap_err();
    assert!(e.message.contains("field `update.message.from`"), "{}", e.message);
}

/// A forwarded photo without a caption: the forward marker first, then the photo, and no trailing space.
#[test]
fn a_forwarded_photo_renders_marker_first_without_a_trailing_space() {
    let update = json!({"update_id": 9030, "message": {"message_id": 50, "date": 1_770_970_400,
        "chat": {"id": 6001, "type": "private", "first_name": "Dan"}, "from": {"id": 6001, "first_name": "Dan"},
        "forward_origin": {"type": "user", "date": 1_770_960_000, "sender_user": {"id": 6002, "first_name": "Mom"}},
        "photo": [{"file_id": "AgAC-small", "file_unique_id": "AQAD-s", "width": 90, "height": 90},
                  {"file_id": "AgAC-big", "file_unique_id": "AQAD-b", "width": 1280, "height": 960}]}});
    let m = message(&update);
    assert_eq!((m.forwarded_from.as_deref(), m.text.as_str()), (Some("Mom"), ""));
    let mut engine = chatctx_core::Engine::new(chatctx_core::Settings::default());
    engine.apply_all(map(&update).events).unwrap();
    let history = engine.history("telegram", "6001", None).unwrap();
    assert_eq!(history[0].text, "[forwarded from Mom] [media.image]");
    assert!(history.iter().all(|i| !i.text.ends_with(' ')));
}

/// A `text_link`'s URL reaches the prompt, and a mention typed in another case refers to the person as
/// every other reference does.
#[test]
fn text_links_show_their_url_and_mentions_have_one_reference() {
    let chat = json!({"id": -100500, "type": "supergroup", "title": "G"});
    let alice = json!({"id": 42, "is_bot": false, "first_name": "Alice", "username": "alice"});
    let first = json!({"update_id": 1, "message": {"message_id": 1, "date": 1_770_970_800, "chat": chat, "from": alice,
        "text": "hi"}});
    // "see the docs, @ALICE": text_link over "the docs" (offset 4, length 8), mention over "@ALICE" (14, 6).
    let second = json!({"update_id": 2, "message": {"message_id": 2, "date": 1_770_970_860, "chat": chat,
        "from": {"id": 43, "is_bot": false, "first_name": "Bob"}, "text": "see the docs, @ALICE",
        "entities": [{"type": "text_link", "offset": 4, "length": 8, "url": "https://docs.example.org/setup"},
                     {"type": "mention", "offset": 14, "length": 6}]}});
    let mut engine = chatctx_core::Engine::new(chatctx_core::Settings::default());
    for u in [&first, &second] {
        engine.apply_all(map(u).events).unwrap();
    }
    let h = engine.history("telegram", "-100500", None).unwrap();
    assert_eq!(h[0].sender.display_ref, "[Alice](tg:@alice)");
    assert_eq!(h[1].text, "see [the docs](https://docs.example.org/setup), [Alice](tg:@alice)");
}

/// Joins and removals are worded by who acted; a custom emoji reaction reads as one.
#[test]
fn joins_and_removals_by_actor_and_custom_emoji() {
    let chat = json!({"id": -100500, "type": "supergroup", "title": "G"});
    let admin = json!({"id": 1, "is_bot": false, "first_name": "Admin"});
    let dave = json!({"id": 2, "is_bot": false, "first_name": "Dave"});
    let service = |id: i64, from: &Value, field: &str, value: Value| {
        let mut m = json!({"message_id": id, "date": 1_770_970_800 + id, "chat": chat, "from": from});
        m[field] = value;
        json!({"update_id": id, "message": m})
    };
    let text = |u: Value| message(&u).text;
    assert_eq!(text(service(1, &dave, "new_chat_members", json!([dave]))), "joined the chat", "by link");
    assert_eq!(text(service(2, &admin, "new_chat_members", json!([dave]))), "added Dave");
    assert_eq!(text(service(3, &admin, "left_chat_member", dave.clone())), "removed Dave");
    assert_eq!(text(service(4, &dave, "left_chat_member", dave.clone())), "left the chat");
    let reaction = json!({"update_id": 5, "message_reaction": {"chat": chat, "message_id": 1, "user": dave,
        "date": 1_770_970_900, "old_reaction": [],
        "new_reaction": [{"type": "custom_emoji", "custom_emoji_id": "5368324170671202286"}]}});
    let mapped = map(&reaction);
    let chatctx_core::Event::Reaction(r) = &mapped.events[0] else { panic!("{mapped:?}") };
    assert_eq!(r.emoji, ["[custom emoji]"]);
}

/// The Bot API `Message` fields, as the reference lists them (Bot API 9.x): the mapping's table must decide
/// every one, so a field added to the reference and here fails until the table says what it becomes.
const REFERENCE_FIELDS: &[&str] = &[
    "message_id",
    "message_thread_id",
    "direct_messages_topic",
    "from",
    "sender_chat",
    "sender_boost_count",
    "sender_business_bot",
    "sender_tag",
    "date",
    "business_connection_id",
    "chat",
    "forward_origin",
    "is_topic_message",
    "is_automatic_forward",
    "reply_to_message",
    "external_reply",
    "quote",
    "reply_to_story",
    "reply_to_checklist_task_id",
    "via_bot",
    "edit_date",
    "has_protected_content",
    "is_from_offline",
    "is_paid_post",
    "media_group_id",
    "author_signature",
    "paid_star_count",
    "text",
    "entities",
    "link_preview_options",
    "suggested_post_info",
    "effect_id",
    "animation",
    "audio",
    "document",
    "paid_media",
    "photo",
    "sticker",
    "story",
    "video",
    "video_note",
    "voice",
    "caption",
    "caption_entities",
    "show_caption_above_media",
    "has_media_spoiler",
    "checklist",
    "contact",
    "dice",
    "game",
    "poll",
    "venue",
    "location",
    "new_chat_members",
    "left_chat_member",
    "chat_owner_left",
    "chat_owner_changed",
    "new_chat_title",
    "new_chat_photo",
    "delete_chat_photo",
    "group_chat_created",
    "supergroup_chat_created",
    "channel_chat_created",
    "message_auto_delete_timer_changed",
    "migrate_to_chat_id",
    "migrate_from_chat_id",
    "pinned_message",
    "invoice",
    "successful_payment",
    "refunded_payment",
    "users_shared",
    "chat_shared",
    "gift",
    "unique_gift",
    "gift_upgrade_sent",
    "connected_website",
    "write_access_allowed",
    "passport_data",
    "proximity_alert_triggered",
    "boost_added",
    "chat_background_set",
    "checklist_tasks_done",
    "checklist_tasks_added",
    "direct_message_price_changed",
    "forum_topic_created",
    "forum_topic_edited",
    "forum_topic_closed",
    "forum_topic_reopened",
    "general_forum_topic_hidden",
    "general_forum_topic_unhidden",
    "giveaway_created",
    "giveaway",
    "giveaway_winners",
    "giveaway_completed",
    "paid_message_price_changed",
    "poll_option_added",
    "poll_option_deleted",
    "suggested_post_approved",
    "suggested_post_approval_failed",
    "suggested_post_declined",
    "suggested_post_paid",
    "suggested_post_refunded",
    "video_chat_scheduled",
    "video_chat_started",
    "video_chat_ended",
    "video_chat_participants_invited",
    "web_app_data",
    "reply_markup",
];

/// A value for each content and service field, shaped as the reference describes it.
fn sample_value(field: &str) -> Value {
    let user = json!({"id": 5, "is_bot": false, "first_name": "Eve"});
    let photo = json!([{"file_id": "AgAC", "file_unique_id": "AQAD", "width": 90, "height": 90}]);
    match field {
        "animation" | "video" => {
            json!({"file_id": "BAAC", "file_unique_id": "AgAD", "width": 1, "height": 1, "duration": 1})
        }
        "audio" | "voice" | "video_note" => json!({"file_id": "AwAC", "file_unique_id": "AgAD", "duration": 3}),
        "document" => {
            json!({"file_id": "BQAC", "file_unique_id": "AgAD", "file_name": "spec.pdf", "mime_type": "application/pdf"})
        }
        "photo" | "new_chat_photo" => photo,
        "paid_media" => json!({"star_count": 100, "paid_media": [{"type": "photo", "photo": photo}]}),
        "sticker" => {
            json!({"file_id": "CAAC", "file_unique_id": "AgAD", "type": "regular", "width": 512, "height": 512,
                            "is_animated": false, "is_video": false, "emoji": "😡"})
        }
        "story" => json!({"chat": {"id": 1, "type": "private"}, "id": 7}),
        "checklist" => json!({"title": "Trip", "tasks": [{"id": 1, "text": "tickets"}, {"id": 2, "text": "hotel"}]}),
        "contact" => json!({"phone_number": "+100", "first_name": "Zoe"}),
        "dice" => json!({"emoji": "🎲", "value": 4}),
        "game" => json!({"title": "Chess", "description": "d", "photo": photo}),
        "poll" => json!({"id": "p1", "question": "Lunch?", "options": [], "total_voter_count": 0, "is_closed": false,
                         "is_anonymous": true, "type": "regular", "allows_multiple_answers": false}),
        "venue" => json!({"location": {"latitude": 1.0, "longitude": 2.0}, "title": "Cafe", "address": "Main St"}),
        "location" => json!({"latitude": 1.0, "longitude": 2.0}),
        "new_chat_members" => json!([user]),
        "left_chat_member" => user,
        "new_chat_title" => json!("New name"),
        "migrate_to_chat_id" | "migrate_from_chat_id" => json!(-1001),
        "pinned_message" => {
            json!({"message_id": 3, "date": 1, "chat": {"id": -100500, "type": "supergroup"}, "text": "hi"})
        }
        "invoice" => {
            json!({"title": "Pro plan", "description": "d", "start_parameter": "s", "currency": "XTR", "total_amount": 100})
        }
        "successful_payment" => json!({"currency": "XTR", "total_amount": 100, "invoice_payload": "p",
                                       "telegram_payment_charge_id": "c", "provider_payment_charge_id": "c"}),
        "refunded_payment" => {
            json!({"currency": "XTR", "total_amount": 100, "invoice_payload": "p", "telegram_payment_charge_id": "c"})
        }
        "gift" => json!({"gift": {"id": "g", "sticker": {"emoji": "🎁"}, "star_count": 10}}),
        "unique_gift" => json!({"gift": {"base_name": "Cake", "name": "Cake-12", "number": 12}, "origin": "upgrade"}),
        "connected_website" => json!("example.org"),
        "checklist_tasks_done" => json!({"marked_as_done_task_ids": [1, 2]}),
        "checklist_tasks_added" => json!({"tasks": [{"id": 3, "text": "visa"}]}),
        "direct_message_price_changed" => json!({"are_direct_messages_enabled": true, "direct_message_star_count": 5}),
        "paid_message_price_changed" => json!({"paid_message_star_count": 20}),
        "chat_owner_changed" => json!({"new_owner": user}),
        "forum_topic_created" => json!({"name": "Ideas", "icon_color": 7322096}),
        "forum_topic_edited" => json!({"name": "Ideas 2"}),
        "giveaway" => json!({"chats": [], "winners_selection_date": 1, "winner_count": 3}),
        "giveaway_winners" => json!({"chat": {"id": 1, "type": "channel"}, "giveaway_message_id": 1,
                                     "winners_selection_date": 1, "winner_count": 2, "winners": [user, user]}),
        "web_app_data" => json!({"data": "{}", "button_text": "Order"}),
        "message_auto_delete_timer_changed" => json!({"message_auto_delete_time": 86400}),
        "delete_chat_photo" | "group_chat_created" | "supergroup_chat_created" | "channel_chat_created" => json!(true),
        _ => json!({}),
    }
}

#[test]
fn every_bot_api_message_field_is_a_decision() {
    use chatctx_platforms::telegram::fields::{MESSAGE_FIELDS, Role};
    let table: Vec<&str> = MESSAGE_FIELDS.iter().map(|(f, _)| *f).collect();
    for f in REFERENCE_FIELDS {
        assert!(table.contains(f), "Bot API field `{f}` has no row in update::fields::MESSAGE_FIELDS");
    }
    for f in &table {
        assert!(REFERENCE_FIELDS.contains(f), "`{f}` is in the table but not in the reference list here");
    }
    for (field, role) in
        MESSAGE_FIELDS.iter().filter(|(_, r)| matches!(r, Role::Service | Role::Content | Role::Object))
    {
        let mut m = json!({"message_id": 1, "date": 1_770_970_800, "chat": {"id": 6001, "type": "private", "first_name": "Eve"},
                           "from": {"id": 6001, "is_bot": false, "first_name": "Eve"}});
        m[*field] = sample_value(field);
        let mapped = message(&json!({"update_id": 1, "message": m}));
        let shown = !mapped.text.trim().is_empty() || !mapped.attachments.is_empty();
        assert!(shown, "`{field}` maps to an empty item: {mapped:?}");
        assert_ne!(mapped.text, chatctx_platforms::telegram::UNSHOWN, "`{field}` is not described");
        match role {
            Role::Service => {
                assert_eq!(mapped.kind, MessageKind::System, "`{field}` is a service message");
                assert!(!mapped.triggered_agent, "`{field}` does not trigger the bot");
            }
            _ => assert_eq!(mapped.kind, MessageKind::InboundUser, "`{field}` is content"),
        }
    }
}

/// A few of the newer kinds, word for word.
#[test]
fn newer_kinds_are_described() {
    let text = |field: &str, caption: Option<&str>| {
        let mut m = json!({"message_id": 1, "date": 1_770_970_800, "chat": {"id": 6001, "type": "private", "first_name": "Eve"},
                           "from": {"id": 6001, "is_bot": false, "first_name": "Eve"}});
        m[field] = sample_value(field);
        if let Some(c) = caption {
            m["caption"] = json!(c);
        }
        message(&json!({"update_id": 1, "message": m})).text
    };
    assert_eq!(text("successful_payment", None), "paid 100 XTR");
    assert_eq!(text("suggested_post_approved", None), "suggested post approved");
    assert_eq!(text("checklist", None), "[checklist “Trip”: tickets; hotel]");
    assert_eq!(text("checklist_tasks_done", None), "marked 2 checklist tasks done");
    assert_eq!(text("paid_media", Some("behind the scenes")), "[paid media: 100 XTR] behind the scenes");
    assert_eq!(text("giveaway_winners", None), "[giveaway winners: 2]");
    assert_eq!(text("gift", None), "sent a gift 🎁");
    // An unknown kind is a system note, never an empty turn of the user's.
    let m = message(&json!({"update_id": 1, "message": {"message_id": 1, "date": 1_770_970_800,
        "chat": {"id": 6001, "type": "private", "first_name": "Eve"}, "from": {"id": 6001, "first_name": "Eve"},
        "some_future_field": {"x": 1}}}));
    assert_eq!(
        (m.kind, m.text.as_str(), m.triggered_agent),
        (MessageKind::System, chatctx_platforms::telegram::UNSHOWN, false)
    );
}

/// A resolved photo says what it is and who posted it, and carries Telegram's file reference, so the bot can
/// act on it (send it again, download it) without a cache of its own or another call.
#[test]
fn objects_carry_what_a_bot_needs_to_act_on_them() {
    let chat = json!({"id": -100500, "type": "supergroup", "title": "G"});
    let photo = json!({"update_id": 1, "message": {"message_id": 501, "date": 1_770_970_800, "chat": chat,
        "from": {"id": 42, "is_bot": false, "first_name": "Alice", "username": "alice"},
        "photo": [{"file_id": "AgACAgIAAx0-small", "file_unique_id": "AQADsmall", "width": 90, "height": 68},
                  {"file_id": "AgACAgIAAx0-large", "file_unique_id": "AQADlarge", "width": 1280, "height": 960}],
        "caption": "our new logo, second draft"}});
    let ask = json!({"update_id": 2, "message": {"message_id": 502, "date": 1_770_970_860, "chat": chat,
        "from": {"id": 43, "is_bot": false, "first_name": "Bob"}, "text": "@my_bot what do you think of this?",
        "reply_to_message": {"message_id": 501, "date": 1_770_970_800, "chat": chat}}});
    let mut engine = chatctx_core::Engine::new(chatctx_core::Settings::default());
    for u in [&photo, &ask] {
        engine.apply_all(map(u).events).unwrap();
    }
    let now = chatctx_core::Timestamp::from_unix(1_770_970_861).unwrap();
    let answer = engine
        .call(
            "resolve_reference_target",
            &json!({"chat_id": "-100500", "current_message_id": "502", "sender_user_id": "43"}),
            now,
        )
        .unwrap();
    let v = serde_json::to_value(&answer).unwrap();
    let best = &v["best_match"];
    assert_eq!(best["object_id"], "501:media.image", "{v}");
    assert_eq!(best["title_or_label"], "our new logo, second draft");
    assert_eq!(best["caption"], "our new logo, second draft");
    assert_eq!(best["author"], "[Alice](tg:@alice)");
    assert_eq!(best["file"], json!({"file_id": "AgACAgIAAx0-large", "file_unique_id": "AQADlarge"}));
    let listed =
        engine.call("list_active_context_objects", &json!({"chat_id": "-100500", "current_message_id": "502"}), now);
    let listed = serde_json::to_value(listed.unwrap()).unwrap();
    let photo = listed["objects"].as_array().unwrap().iter().find(|o| o["object_id"] == "501:media.image").cloned();
    assert_eq!(photo.map(|p| p["file"]["file_id"].clone()), Some(json!("AgACAgIAAx0-large")), "{listed}");
}

/// The rendered history of a support group with a bot, as the model reads it (per item): the classes above
/// together. Any change to it is a visible diff.
#[test]
fn rendered_history_of_a_support_forum() {
    let chat = forum();
    let bot = the_bot();
    let ann = json!({"id": 42, "is_bot": false, "first_name": "Ann", "username": "ann"});
    let msg = |id: i64, from: &Value, extra: Value| {
        let mut m = json!({"message_id": id, "date": 1_770_970_000 + id * 60, "chat": chat, "from": from,
                           "message_thread_id": 300, "is_topic_message": true});
        for (k, v) in extra.as_object().unwrap() {
            m[k] = v.clone();
        }
        json!({"update_id": id, "message": m})
    };
    let created = json!({"message_id": 300, "date": 1_770_970_000, "chat": chat, "from": bot,
        "message_thread_id": 300, "is_topic_message": true, "forum_topic_created": {"name": "Ticket #4411", "icon_color": 1}});
    let updates = vec![
        json!({"update_id": 300, "message": created.clone()}),
        msg(301, &ann, json!({"new_chat_members": [ann]})),
        msg(
            302,
            &ann,
            json!({"reply_to_message": created, "text": "my order never arrived, see the tracking page",
            "entities": [{"type": "text_link", "offset": 32, "length": 13, "url": "https://track.example/AB12"}]}),
        ),
        msg(
            303,
            &ann,
            json!({"forward_origin": {"type": "user", "date": 1, "sender_user": {"id": 9, "first_name": "Courier"}},
            "photo": [{"file_id": "AgAC-1", "file_unique_id": "AQAD-1", "width": 800, "height": 600}]}),
        ),
        msg(304, &bot, json!({"text": "Sorry about that, Ann. I have reopened the delivery."})),
        msg(
            305,
            &ann,
            json!({"successful_payment": {"currency": "XTR", "total_amount": 50, "invoice_payload": "tip",
            "telegram_payment_charge_id": "c", "provider_payment_charge_id": "c"}}),
        ),
        msg(
            306,
            &ann,
            json!({"pinned_message": {"message_id": 304, "date": 1, "chat": chat, "from": bot,
            "text": "Sorry about that, Ann. I have reopened the delivery."}}),
        ),
        json!({"update_id": 307, "message_reaction": {"chat": chat, "message_id": 304, "user": ann, "date": 1_770_990_000,
            "old_reaction": [], "new_reaction": [{"type": "emoji", "emoji": "🙏"}]}}),
    ];
    let mut settings = chatctx_core::Settings::default();
    settings.history.mode = chatctx_core::settings::Mode::Talkative;
    let mut engine = chatctx_core::Engine::new(settings);
    for u in &updates {
        engine.apply_all(map(u).events).unwrap();
    }
    let items = engine.history("telegram", "-1001900000001", Some("300")).unwrap();
    let rendered: Vec<String> =
        chatctx_core::render::per_item(&items).into_iter().map(|m| format!("{:?}: {}", m.role, m.content)).collect();
    insta::assert_snapshot!(rendered.join("\n"));
}
