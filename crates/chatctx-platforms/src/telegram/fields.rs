//! Every field of the Bot API `Message` object (Bot API 9.x) and what the mapping does with it, so that a new
//! field is a visible decision (`tests/it/fidelity.rs` holds this table to the reference's list).
//!
//! - `Meta`: about the message, not in it (ids, flags, reply and forward links, keyboards) — read elsewhere
//!   or not at all;
//! - `Text`: the text or caption and their entities;
//! - `Object`: content that becomes a conversational object (media, files, polls);
//! - `Content`: content the prompt shows as a short stand-in (`[sticker 😡]`, a checklist's tasks);
//! - `Service`: a service message, which becomes a `system` item with a short description.

use chatctx_core::json::{Fields, id_of};
use serde_json::{Map, Value};

/// What the mapping does with a `Message` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// About the message, not in it.
    Meta,
    /// The text or caption.
    Text,
    /// Becomes an object.
    Object,
    /// Shown as a stand-in text.
    Content,
    /// A service message.
    Service,
}

/// Every `Message` field and its role.
pub const MESSAGE_FIELDS: &[(&str, Role)] = &[
    ("message_id", Role::Meta),
    ("message_thread_id", Role::Meta),
    ("direct_messages_topic", Role::Meta),
    ("from", Role::Meta),
    ("sender_chat", Role::Meta),
    ("sender_boost_count", Role::Meta),
    ("sender_business_bot", Role::Meta),
    ("sender_tag", Role::Meta),
    ("date", Role::Meta),
    ("business_connection_id", Role::Meta),
    ("chat", Role::Meta),
    ("forward_origin", Role::Meta),
    ("is_topic_message", Role::Meta),
    ("is_automatic_forward", Role::Meta),
    ("reply_to_message", Role::Meta),
    ("external_reply", Role::Meta),
    ("quote", Role::Meta),
    ("reply_to_story", Role::Meta),
    ("reply_to_checklist_task_id", Role::Meta),
    ("via_bot", Role::Meta),
    ("edit_date", Role::Meta),
    ("has_protected_content", Role::Meta),
    ("is_from_offline", Role::Meta),
    ("is_paid_post", Role::Meta),
    ("media_group_id", Role::Meta),
    ("author_signature", Role::Meta),
    ("paid_star_count", Role::Meta),
    ("text", Role::Text),
    ("entities", Role::Text),
    ("link_preview_options", Role::Meta),
    ("suggested_post_info", Role::Meta),
    ("effect_id", Role::Meta),
    ("animation", Role::Object),
    ("audio", Role::Object),
    ("document", Role::Object),
    ("paid_media", Role::Content),
    ("photo", Role::Object),
    ("sticker", Role::Content),
    ("story", Role::Content),
    ("video", Role::Object),
    ("video_note", Role::Object),
    ("voice", Role::Object),
    ("caption", Role::Text),
    ("caption_entities", Role::Text),
    ("show_caption_above_media", Role::Meta),
    ("has_media_spoiler", Role::Meta),
    ("checklist", Role::Content),
    ("contact", Role::Content),
    ("dice", Role::Content),
    ("game", Role::Content),
    ("poll", Role::Object),
    ("venue", Role::Content),
    ("location", Role::Content),
    ("new_chat_members", Role::Service),
    ("left_chat_member", Role::Service),
    ("chat_owner_left", Role::Service),
    ("chat_owner_changed", Role::Service),
    ("new_chat_title", Role::Service),
    ("new_chat_photo", Role::Service),
    ("delete_chat_photo", Role::Service),
    ("group_chat_created", Role::Service),
    ("supergroup_chat_created", Role::Service),
    ("channel_chat_created", Role::Service),
    ("message_auto_delete_timer_changed", Role::Service),
    ("migrate_to_chat_id", Role::Service),
    ("migrate_from_chat_id", Role::Service),
    ("pinned_message", Role::Service),
    ("invoice", Role::Content),
    ("successful_payment", Role::Service),
    ("refunded_payment", Role::Service),
    ("users_shared", Role::Service),
    ("chat_shared", Role::Service),
    ("gift", Role::Service),
    ("unique_gift", Role::Service),
    ("gift_upgrade_sent", Role::Service),
    ("connected_website", Role::Service),
    ("write_access_allowed", Role::Service),
    ("passport_data", Role::Service),
    ("proximity_alert_triggered", Role::Service),
    ("boost_added", Role::Service),
    ("chat_background_set", Role::Service),
    ("checklist_tasks_done", Role::Service),
    ("checklist_tasks_added", Role::Service),
    ("direct_message_price_changed", Role::Service),
    ("forum_topic_created", Role::Service),
    ("forum_topic_edited", Role::Service),
    ("forum_topic_closed", Role::Service),
    ("forum_topic_reopened", Role::Service),
    ("general_forum_topic_hidden", Role::Service),
    ("general_forum_topic_unhidden", Role::Service),
    ("giveaway_created", Role::Service),
    ("giveaway", Role::Content),
    ("giveaway_winners", Role::Content),
    ("giveaway_completed", Role::Service),
    ("paid_message_price_changed", Role::Service),
    ("poll_option_added", Role::Service),
    ("poll_option_deleted", Role::Service),
    ("suggested_post_approved", Role::Service),
    ("suggested_post_approval_failed", Role::Service),
    ("suggested_post_declined", Role::Service),
    ("suggested_post_paid", Role::Service),
    ("suggested_post_refunded", Role::Service),
    ("video_chat_scheduled", Role::Service),
    ("video_chat_started", Role::Service),
    ("video_chat_ended", Role::Service),
    ("video_chat_participants_invited", Role::Service),
    ("web_app_data", Role::Service),
    ("reply_markup", Role::Meta),
];

/// An amount as Telegram states it: Stars (`XTR`) are whole; other currencies in their smallest unit, shown
/// with two decimals.
fn amount(total: i64, currency: &str) -> String {
    if currency == "XTR" { format!("{total} XTR") } else { format!("{:.2} {currency}", total as f64 / 100.0) }
}

fn obj<'a>(f: &Fields<'a>, key: &str) -> Option<&'a Map<String, Value>> {
    f.get(key).and_then(Value::as_object)
}

fn str_in<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn int_in(m: &Map<String, Value>, key: &str) -> Option<i64> {
    m.get(key).and_then(Value::as_i64)
}

/// The descriptions of the newer service messages that read their payload (fixed texts are in `content.rs`).
pub(super) fn newer_service_text(f: &Fields<'_>) -> Option<String> {
    if let Some(p) = obj(f, "successful_payment") {
        let currency = str_in(p, "currency").unwrap_or("");
        return Some(format!("paid {}", amount(int_in(p, "total_amount").unwrap_or(0), currency)));
    }
    if let Some(p) = obj(f, "refunded_payment") {
        let currency = str_in(p, "currency").unwrap_or("");
        return Some(format!("was refunded {}", amount(int_in(p, "total_amount").unwrap_or(0), currency)));
    }
    if let Some(g) = obj(f, "gift") {
        let emoji = g.get("gift").and_then(|g| g.get("sticker")).and_then(|s| s.get("emoji")).and_then(Value::as_str);
        return Some(match emoji {
            Some(e) => format!("sent a gift {e}"),
            None => "sent a gift".to_owned(),
        });
    }
    if let Some(g) = obj(f, "unique_gift") {
        let name = g.get("gift").and_then(|g| g.get("name").or_else(|| g.get("base_name"))).and_then(Value::as_str);
        return Some(match name {
            Some(n) => format!("sent the unique gift “{n}”"),
            None => "sent a unique gift".to_owned(),
        });
    }
    if let Some(c) = obj(f, "paid_message_price_changed") {
        return Some(format!(
            "set the price of a message to {} XTR",
            int_in(c, "paid_message_star_count").unwrap_or(0)
        ));
    }
    if let Some(c) = obj(f, "direct_message_price_changed") {
        return Some(match int_in(c, "direct_message_star_count") {
            Some(n) if c.get("are_direct_messages_enabled").and_then(Value::as_bool) != Some(false) => {
                format!("set the price of direct messages to {n} XTR")
            }
            _ => "changed direct messages to the channel".to_owned(),
        });
    }
    if let Some(t) = obj(f, "checklist_tasks_done") {
        let count = |k: &str| t.get(k).and_then(Value::as_array).map_or(0, Vec::len);
        let (done, undone) = (count("marked_as_done_task_ids"), count("marked_as_not_done_task_ids"));
        return Some(match (done, undone) {
            (d, 0) => format!("marked {d} checklist tasks done"),
            (0, u) => format!("marked {u} checklist tasks not done"),
            (d, u) => format!("marked {d} checklist tasks done and {u} not done"),
        });
    }
    if let Some(t) = obj(f, "checklist_tasks_added") {
        let tasks = task_titles(t.get("tasks"));
        return Some(format!("added checklist tasks: {}", tasks.join("; ")));
    }
    if let Some(c) = obj(f, "chat_owner_changed") {
        let who = c.get("new_owner").and_then(Value::as_object).and_then(|u| str_in(u, "first_name"));
        return Some(match who {
            Some(n) => format!("made {n} the chat owner"),
            None => "changed the chat owner".to_owned(),
        });
    }
    if f.get("chat_owner_left").is_some() {
        return Some("the chat owner left".to_owned());
    }
    if let Some(w) = f.get("connected_website").and_then(Value::as_str) {
        return Some(format!("logged in on {w}"));
    }
    if let Some(d) = obj(f, "web_app_data") {
        return Some(match str_in(d, "button_text") {
            Some(b) => format!("sent data from the Web App button “{b}”"),
            None => "sent data from a Web App".to_owned(),
        });
    }
    None
}

fn task_titles(tasks: Option<&Value>) -> Vec<String> {
    tasks
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|t| t.get("text").and_then(Value::as_str).map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The stand-ins for content Bot API 7 to 9 added: a checklist with its tasks, giveaway winners.
pub(super) fn newer_placeholder(f: &Fields<'_>) -> Option<String> {
    if let Some(c) = obj(f, "checklist") {
        let title = str_in(c, "title").unwrap_or("checklist");
        let tasks = task_titles(c.get("tasks"));
        return Some(if tasks.is_empty() {
            format!("[checklist “{title}”]")
        } else {
            format!("[checklist “{title}”: {}]", tasks.join("; "))
        });
    }
    if let Some(w) = obj(f, "giveaway_winners") {
        let n =
            int_in(w, "winner_count").or_else(|| w.get("winners").and_then(Value::as_array).map(|a| a.len() as i64));
        return Some(match n {
            Some(n) => format!("[giveaway winners: {n}]"),
            None => "[giveaway winners]".to_owned(),
        });
    }
    None
}

/// A tag that leads the text whatever else the message says: paid media, whose caption follows it.
pub(super) fn leading_tag(f: &Fields<'_>) -> Option<String> {
    let p = obj(f, "paid_media")?;
    let n = p.get("paid_media").and_then(Value::as_array).map_or(0, Vec::len);
    let stars = p.get("star_count").and_then(id_of);
    Some(match (n, stars) {
        (n, Some(s)) if n > 1 => format!("[paid media: {n} items, {s} XTR]"),
        (_, Some(s)) => format!("[paid media: {s} XTR]"),
        _ => "[paid media]".to_owned(),
    })
}
