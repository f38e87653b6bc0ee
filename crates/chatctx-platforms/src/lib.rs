//! chatctx-platforms: each platform's payloads mapped to chatctx events behind one contract, [`Platform`]:
//! Telegram Bot API updates (and Telegram Desktop exports), Discord Gateway dispatches and Slack Events API
//! envelopes, by the rules of docs/protocol.md §3.5–§3.10.
//!
//! Every mapping reads raw JSON through a narrow, tolerant model of its own rather than a typed client crate:
//! unknown update and event types, unknown fields and explicit `null`s are accepted and reported as ignored,
//! never an error; a payload that is not the shape its type promises is `invalid_event` naming the field.
//! Whatever a mapping produces is then validated by the core like any event before it is acknowledged.
//!
//! A platform is one file (or folder) here implementing [`Platform`], one line in [`PLATFORMS`], and one route
//! line in the server.
//!
//! Modules:
//! - [`telegram`]: one Bot API `Update` to events; [`telegram::export`], a Telegram Desktop `result.json`.
//! - [`discord`]: one Gateway dispatch (`{"op": 0, "t": …, "d": …}`) to events.
//! - [`slack`]: one Events API envelope (`event_callback`) to events; a `users.list` / `users.info` answer to
//!   people.
//! - [`text`]: building a message text with UTF-16 entities, shared by Discord and Slack.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod discord;
mod imported;
pub mod slack;
pub mod telegram;
pub mod text;

pub use imported::Imported;

use chatctx_core::event::Attachment;
use chatctx_core::json::{Fields, object};
use chatctx_core::kinds::ObjectKind;
use chatctx_core::{Error, ErrorCode, Event, Timestamp};
use serde_json::Value;

const EV: ErrorCode = ErrorCode::InvalidEvent;

/// One platform: the payloads it delivers to a bot, mapped to core events.
pub trait Platform: Send + Sync + 'static {
    /// The platform's name, which is also the `channel` of its events (`telegram`, `discord`, `slack`).
    fn name(&self) -> &'static str;
    /// How a replay line carries one of its payloads: the line's event `type` and the key the payload is under
    /// (`{"type": "telegram_update", "bot": {…}, "update": {…}}`).
    fn wrapped_as(&self) -> (&'static str, &'static str);
    /// Maps one payload, as the platform delivers it. `received_at` dates what carries no time of its own.
    fn map(&self, payload: &Value, bot: &Bot, received_at: Timestamp) -> Result<Mapped, Error>;
}

/// Every platform.
pub const PLATFORMS: &[&dyn Platform] = &[&telegram::Telegram, &discord::Discord, &slack::Slack, &slack::SlackUsers];

/// The platform whose payloads a replay line of event type `event_type` carries.
pub fn by_event_type(event_type: &str) -> Option<&'static dyn Platform> {
    PLATFORMS.iter().copied().find(|p| p.wrapped_as().0 == event_type)
}

/// Maps a payload with `platform` and holds what comes out to the limits every stored event keeps: texts over
/// the limit cut with a marker, large deletions split ([`Event::fit`]), and each event checked as a restart will
/// read it back ([`Event::check_stored`]). Every platform input goes through here, so whatever is acknowledged
/// loads again.
pub fn map_checked(
    platform: &dyn Platform,
    payload: &Value,
    bot: &Bot,
    received_at: Timestamp,
) -> Result<Mapped, Error> {
    let mut mapped = platform.map(payload, bot, received_at)?;
    let (events, warnings) = Event::fit(std::mem::take(&mut mapped.events));
    for e in &events {
        e.check_stored().map_err(|e| {
            Error::invalid_event(format!("the payload maps to an event chatctx cannot store: {}", e.message))
        })?;
    }
    mapped.events = events;
    mapped.warnings.extend(warnings);
    Ok(mapped)
}

/// Maps a replay line that carries a payload of `platform` (`{"type": …, "bot": {"user_id", "username"},
/// "triggered_agent": …, KEY: {…}}`), as the platform's route would have.
pub fn map_wrapped(platform: &dyn Platform, v: &Value, received_at: Timestamp) -> Result<Mapped, Error> {
    let f = Fields::new(object(v, "an event", EV)?, "", EV);
    let (user_id, username) = match f.obj("bot")? {
        Some(b) => {
            let b = Fields::new(b, "bot", EV);
            (b.id("user_id")?, b.str("username")?.map(str::to_owned))
        }
        None => (None, None),
    };
    let bot = Bot::new(user_id, username, f.bool("triggered_agent")?);
    map_checked(platform, f.req(platform.wrapped_as().1)?, &bot, received_at)
}

/// What one platform payload became.
#[derive(Debug, Default, PartialEq)]
pub struct Mapped {
    /// The events, in payload order.
    pub events: Vec<Event>,
    /// Update or event types (or subtypes) that were received but are not used, for the ignored count.
    pub ignored: Vec<String>,
    /// Parts that were dropped, for the log (never message text).
    pub warnings: Vec<String>,
}

/// The account a bot runs as (its own messages become `outbound_agent`, and mentions of it or replies to it
/// count as addressing it), and what the bot's own code says of a payload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bot {
    /// The bot's user id on the platform.
    pub user_id: Option<String>,
    /// The bot's username, without `@` (Telegram).
    pub username: Option<String>,
    /// Whether the payload addresses the bot, when the bot decided it itself (Telegram; otherwise inferred).
    pub triggered_agent: Option<bool>,
}

impl Bot {
    /// A bot; a leading `@` of the username is dropped.
    pub fn new(user_id: Option<String>, username: Option<String>, triggered_agent: Option<bool>) -> Self {
        let username = username.map(|u| u.trim_start_matches('@').to_owned());
        Self { user_id, username, triggered_agent }
    }

    /// Whether `user_id` is the bot's.
    pub fn is(&self, user_id: &str) -> bool {
        self.user_id.as_deref() == Some(user_id)
    }
}

/// What a platform's message is: the bot's own, a person speaking, or a system note.
fn message_kind(by_bot: bool, spoken: bool) -> chatctx_core::event::MessageKind {
    use chatctx_core::event::MessageKind;
    if by_bot {
        MessageKind::OutboundAgent
    } else if spoken {
        MessageKind::InboundUser
    } else {
        MessageKind::System
    }
}

/// A file's kind by its MIME type: images, video, audio (or a voice note), PDF; anything else a document.
fn file_kind(mime: &str, voice: bool) -> ObjectKind {
    if voice || mime.starts_with("audio/") {
        ObjectKind::MediaVoice
    } else if mime.starts_with("image/") {
        ObjectKind::MediaImage
    } else if mime.starts_with("video/") {
        ObjectKind::MediaVideo
    } else if mime == "application/pdf" {
        ObjectKind::MediaPdf
    } else {
        ObjectKind::MediaDocument
    }
}

/// An attachment of `kind` labelled `label`, with nothing else known of it.
fn attachment(kind: ObjectKind, label: Option<String>) -> Attachment {
    Attachment { kind, label, object_id: None, external_id: None, activation: None, file: None }
}

/// A `title` event of `channel`'s chat (or its `topic`) when `title` is a non-blank string (a platform's name of a
/// chat, trimmed); `None` otherwise: a title is best effort, never a reason to refuse a payload.
fn title(channel: &str, chat_id: String, topic_id: Option<String>, title: Option<&Value>) -> Option<Event> {
    let t = title?.as_str()?.trim();
    (!t.is_empty()).then(|| {
        Event::Title(chatctx_core::event::TitleEvent {
            channel: channel.to_owned(),
            chat_id,
            topic_id,
            title: t.to_owned(),
        })
    })
}
