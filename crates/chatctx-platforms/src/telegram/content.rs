//! What a message carries beyond its text: attachments (media, files, polls), placeholders for content that is
//! neither text nor an object, the descriptions of service messages, and who a forward came from.

use chatctx_core::error::Error;
use chatctx_core::event::{Attachment, FileRef};
use chatctx_core::json::{Fields, id_of};
use chatctx_core::kinds::{Activation, ObjectKind};
use serde_json::{Map, Value};

use super::EV;

fn file_label(m: &Map<String, Value>) -> Option<String> {
    m.get("file_name").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned)
}

/// The file reference of a Bot API file object (`PhotoSize`, `Video`, `Document`, …).
fn file_ref(m: &Map<String, Value>) -> Option<FileRef> {
    let file_id = m.get("file_id").and_then(id_of)?;
    Some(FileRef { file_id, file_unique_id: m.get("file_unique_id").and_then(id_of) })
}

pub(super) fn attachments(f: &Fields<'_>, bot_authored: bool) -> Result<Vec<Attachment>, Error> {
    let mut out = Vec::new();
    let mut add = |kind, label: Option<String>, file: Option<FileRef>| {
        out.push(Attachment { kind, label, object_id: None, external_id: None, activation: None, file })
    };
    // The largest size of a photo is the one worth sending again.
    if let Some(largest) = f.array("photo")?.last() {
        add(ObjectKind::MediaImage, None, largest.as_object().and_then(file_ref));
    }
    // An animation also arrives as `document` for old clients; it is one object.
    let animation = f.obj("animation")?;
    for key in ["video", "video_note"] {
        if let Some(v) = f.obj(key)? {
            add(
                ObjectKind::MediaVideo,
                file_label(v).or_else(|| (key == "video_note").then(|| "video note".to_owned())),
                file_ref(v),
            );
        }
    }
    if let Some(a) = animation {
        add(ObjectKind::MediaVideo, file_label(a).or_else(|| Some("animation".to_owned())), file_ref(a));
    }
    if let Some(v) = f.obj("voice")? {
        add(ObjectKind::MediaVoice, Some("voice message".to_owned()), file_ref(v));
    }
    if let Some(a) = f.obj("audio")? {
        let title = a.get("title").and_then(Value::as_str);
        let performer = a.get("performer").and_then(Value::as_str);
        let label = match (performer, title) {
            (Some(p), Some(t)) => Some(format!("{p} – {t}")),
            (None, Some(t)) => Some(t.to_owned()),
            _ => file_label(a),
        };
        add(ObjectKind::MediaVoice, label, file_ref(a));
    }
    if animation.is_none()
        && let Some(d) = f.obj("document")?
    {
        let pdf = d.get("mime_type").and_then(Value::as_str).is_some_and(|m| m.eq_ignore_ascii_case("application/pdf"));
        add(if pdf { ObjectKind::MediaPdf } else { ObjectKind::MediaDocument }, file_label(d), file_ref(d));
    }
    if let Some(p) = f.obj("poll")? {
        let pf = Fields::new(p, "", EV);
        out.push(Attachment {
            kind: ObjectKind::Poll,
            label: pf.str("question")?.map(str::to_owned),
            object_id: None,
            external_id: pf.id("id")?,
            activation: bot_authored.then_some(Activation::Created),
            file: None,
        });
    }
    Ok(out)
}

/// A short stand-in text for content that is neither text nor an object (`[sticker 😡]`).
pub(super) fn placeholder(f: &Fields<'_>) -> Result<Option<String>, Error> {
    if let Some(s) = f.obj("sticker")? {
        return Ok(Some(match s.get("emoji").and_then(Value::as_str) {
            Some(e) => format!("[sticker {e}]"),
            None => "[sticker]".to_owned(),
        }));
    }
    if let Some(d) = f.obj("dice")? {
        let emoji = d.get("emoji").and_then(Value::as_str).unwrap_or("🎲");
        return Ok(Some(match d.get("value").and_then(Value::as_i64) {
            Some(v) => format!("[dice {emoji} {v}]"),
            None => format!("[dice {emoji}]"),
        }));
    }
    let named = |key: &str, field: &str, tag: &str| -> Option<String> {
        let o = f.get(key)?.as_object()?;
        Some(match o.get(field).and_then(Value::as_str) {
            Some(v) => format!("[{tag}: {v}]"),
            None => format!("[{tag}]"),
        })
    };
    Ok(named("venue", "title", "venue")
        .or_else(|| named("contact", "first_name", "contact"))
        .or_else(|| named("game", "title", "game"))
        .or_else(|| named("invoice", "title", "invoice"))
        .or_else(|| f.get("location").map(|_| "[location]".to_owned()))
        .or_else(|| f.get("story").map(|_| "[story]".to_owned()))
        .or_else(|| f.get("giveaway").map(|_| "[giveaway]".to_owned()))
        .or_else(|| super::fields::newer_placeholder(f)))
}

/// Service messages worded the same whatever they hold: the field that marks one, and its text.
const SIMPLE_SERVICE: &[(&str, &str)] = &[
    ("forum_topic_closed", "closed the topic"),
    ("forum_topic_reopened", "reopened the topic"),
    ("general_forum_topic_hidden", "hid the General topic"),
    ("general_forum_topic_unhidden", "showed the General topic"),
    ("new_chat_photo", "changed the chat photo"),
    ("delete_chat_photo", "removed the chat photo"),
    ("group_chat_created", "created the group"),
    ("supergroup_chat_created", "created the supergroup"),
    ("channel_chat_created", "created the channel"),
    ("migrate_to_chat_id", "moved the group to a supergroup"),
    ("migrate_from_chat_id", "moved the group here from a basic group"),
    ("message_auto_delete_timer_changed", "changed the auto-delete timer"),
    ("video_chat_scheduled", "scheduled a video chat"),
    ("video_chat_started", "started a video chat"),
    ("video_chat_ended", "ended the video chat"),
    ("video_chat_participants_invited", "invited people to the video chat"),
    ("boost_added", "boosted the chat"),
    ("chat_background_set", "changed the chat background"),
    ("write_access_allowed", "allowed the bot to write"),
    ("users_shared", "shared users with the bot"),
    ("chat_shared", "shared a chat with the bot"),
    ("proximity_alert_triggered", "triggered a proximity alert"),
    ("giveaway_created", "started a giveaway"),
    ("giveaway_completed", "completed a giveaway"),
    ("gift_upgrade_sent", "upgraded a gift"),
    ("passport_data", "shared Telegram Passport data"),
    ("poll_option_added", "added a poll option"),
    ("poll_option_deleted", "deleted a poll option"),
    ("suggested_post_approved", "suggested post approved"),
    ("suggested_post_approval_failed", "suggested post approval failed"),
    ("suggested_post_declined", "suggested post declined"),
    ("suggested_post_paid", "suggested post paid"),
    ("suggested_post_refunded", "suggested post refunded"),
];

/// The text of a pin: the pinned message is in the update, so it is named by its author (as every other
/// reference to them reads, `[Alice](tg:@alice)`) and its first words, not its id.
fn pinned_text(p: &Map<String, Value>) -> String {
    let author = match (p.get("from").and_then(Value::as_object), p.get("sender_chat").and_then(Value::as_object)) {
        (Some(u), _) => super::person_from_user(u, "pinned_message.from")
            .ok()
            .map(|person| chatctx_core::people::person_ref("telegram", &person)),
        (None, Some(c)) => c.get("title").and_then(Value::as_str).map(str::to_owned),
        (None, None) => None,
    };
    let words = p
        .get("text")
        .or_else(|| p.get("caption"))
        .and_then(Value::as_str)
        .map(|t| chatctx_core::render::excerpt(t, 60));
    match (author, words) {
        (Some(a), Some(w)) if !w.is_empty() => format!("pinned {a}'s message “{w}”"),
        (Some(a), _) => format!("pinned a message by {a}"),
        (None, Some(w)) if !w.is_empty() => format!("pinned the message “{w}”"),
        _ => "pinned a message".to_owned(),
    }
}

/// The text of a service message, which becomes a `system` item; `None` for an ordinary message.
pub(super) fn service_text(f: &Fields<'_>) -> Result<Option<String>, Error> {
    let name_of = |u: &Value| -> String {
        let m = u.as_object();
        let get = |k: &str| m.and_then(|m| m.get(k)).and_then(Value::as_str);
        match (get("first_name"), get("last_name"), get("username")) {
            (Some(f), Some(l), _) => format!("{f} {l}"),
            (Some(f), None, _) => f.to_owned(),
            (None, _, Some(u)) => format!("@{u}"),
            _ => "someone".to_owned(),
        }
    };
    let truthy = |k: &str| f.get(k).is_some_and(|v| v.as_bool() != Some(false) && v.as_i64() != Some(0));
    if let Some(t) = f.obj("forum_topic_created")? {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("");
        return Ok(Some(format!("created the topic “{name}”")));
    }
    if let Some(t) = f.obj("forum_topic_edited")? {
        return Ok(Some(match t.get("name").and_then(Value::as_str) {
            Some(n) => format!("renamed the topic to “{n}”"),
            None => "edited the topic".to_owned(),
        }));
    }
    if let Some(p) = f.obj("pinned_message")? {
        return Ok(Some(pinned_text(p)));
    }
    // Joins and removals are worded by who acted (`from`): joining or leaving oneself, or adding or removing
    // someone else.
    let actor = f.obj("from")?.and_then(|u| u.get("id")).and_then(id_of);
    let is_actor = |u: &Value| actor.is_some() && u.get("id").and_then(id_of) == actor;
    let members = f.array("new_chat_members")?;
    if !members.is_empty() {
        let others: Vec<String> = members.iter().filter(|u| !is_actor(u)).map(name_of).collect();
        return Ok(Some(match (others.is_empty(), members.len() > others.len()) {
            (true, _) => "joined the chat".to_owned(),
            (false, true) => format!("joined the chat and added {}", others.join(", ")),
            (false, false) => format!("added {}", others.join(", ")),
        }));
    }
    if let Some(u) = f.get("left_chat_member") {
        return Ok(Some(if is_actor(u) { "left the chat".to_owned() } else { format!("removed {}", name_of(u)) }));
    }
    if let Some(t) = f.str("new_chat_title")? {
        return Ok(Some(format!("changed the chat title to “{t}”")));
    }
    Ok(SIMPLE_SERVICE
        .iter()
        .find(|(k, _)| truthy(k))
        .map(|(_, t)| (*t).to_owned())
        .or_else(|| super::fields::newer_service_text(f)))
}

pub(super) fn forward_name(f: &Fields<'_>) -> Result<Option<String>, Error> {
    let name = |m: &Map<String, Value>| -> Option<String> {
        let get = |k: &str| m.get(k).and_then(Value::as_str);
        get("title").map(str::to_owned).or_else(|| match (get("first_name"), get("last_name")) {
            (Some(a), Some(b)) => Some(format!("{a} {b}")),
            (Some(a), None) => Some(a.to_owned()),
            _ => get("username").map(|u| format!("@{u}")),
        })
    };
    if let Some(o) = f.obj("forward_origin")? {
        let of = Fields::new(o, "", EV);
        let who = match of.str("type")? {
            Some("user") => of.obj("sender_user")?.and_then(name),
            Some("hidden_user") => of.str("sender_user_name")?.map(str::to_owned),
            Some("chat") => of.obj("sender_chat")?.and_then(name),
            Some("channel") => of.obj("chat")?.and_then(name),
            _ => None,
        };
        return Ok(Some(who.unwrap_or_else(|| "someone".to_owned())));
    }
    if let Some(u) = f.obj("forward_from")?.or(f.obj("forward_from_chat")?) {
        return Ok(Some(name(u).unwrap_or_else(|| "someone".to_owned())));
    }
    Ok(f.str("forward_sender_name")?.map(str::to_owned))
}
