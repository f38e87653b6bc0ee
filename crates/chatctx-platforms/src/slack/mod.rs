//! Slack Events API envelopes (docs/protocol.md §3.10): `event_callback` with `message` (and its subtypes),
//! `app_mention`, `reaction_added` / `reaction_removed`, and the user events that name people (`people`,
//! §3.11). (`url_verification` is answered by the server's route.) Every chat belongs to the envelope's team,
//! whose people directory names its speakers.
//!
//! The chat is the Slack channel id; a thread (`thread_ts`) is a topic, and its replies reply to the thread's
//! first message. A message's id is its `ts`. A person's username is their Slack user id (`U…`): that is what
//! `<@U…>` mentions name, so a mention of someone who spoke renders as their reference.

use chatctx_core::event::{
    Attachment, DeleteEvent, Direction, Event, MessageEvent, Person, PersonEvent, ReactionEvent,
};
use chatctx_core::json::{Fields, object};
use chatctx_core::kinds::Origin;
use chatctx_core::{Error, ErrorCode, Timestamp};
use serde_json::{Map, Value};

use crate::text::Built;
use crate::{Bot, Mapped, attachment, file_kind};

pub mod export;
mod people;

pub use people::{SlackUsers, map_users};

/// The channel name Slack events get.
pub const CHANNEL: &str = "slack";

const EV: ErrorCode = ErrorCode::InvalidEvent;

/// `message` subtypes that are someone speaking.
const SPOKEN: &[&str] = &["", "thread_broadcast", "file_share", "bot_message", "me_message"];
/// `message` subtypes that are system notes.
const NOTES: &[&str] =
    &["channel_join", "channel_leave", "channel_topic", "channel_purpose", "channel_name", "pinned_item"];

/// Slack, as a [`crate::Platform`]: a replay line carries an envelope as `{"type": "slack_event", "bot": {…},
/// "payload": {…}}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Slack;

impl crate::Platform for Slack {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    fn wrapped_as(&self) -> (&'static str, &'static str) {
        ("slack_event", "payload")
    }

    fn map(&self, payload: &Value, bot: &Bot, received_at: Timestamp) -> Result<Mapped, Error> {
        map_envelope(payload, bot, received_at)
    }
}

/// The bot's user id an envelope names (`authorizations[].user_id` of a bot), for when none is configured.
pub fn bot_of(envelope: &Value) -> Option<String> {
    envelope.get("authorizations")?.as_array()?.iter().find_map(|a| {
        (a.get("is_bot").and_then(Value::as_bool) == Some(true))
            .then(|| a.get("user_id").and_then(Value::as_str).map(str::to_owned))
            .flatten()
    })
}

/// Maps one Events API envelope.
pub fn map_envelope(envelope: &Value, bot: &Bot, received_at: Timestamp) -> Result<Mapped, Error> {
    let f = Fields::new(object(envelope, "field `payload`", EV)?, "payload", EV);
    let mut out = Mapped::default();
    let kind = f.str("type")?.ok_or_else(|| f.err("type", "is required (event_callback, url_verification, …)"))?;
    if kind != "event_callback" {
        out.ignored.push(kind.to_owned());
        return Ok(out);
    }
    let bot = match &bot.user_id {
        Some(_) => bot.clone(),
        None => Bot { user_id: bot_of(envelope), ..bot.clone() },
    };
    let e = f.obj("event")?.ok_or_else(|| f.err("event", "is required"))?;
    let ef = Fields::new(e, "payload.event", EV);
    let event_type = ef.str("type")?.ok_or_else(|| ef.err("type", "is required"))?;
    // The workspace: the envelope's team, else the one the event names.
    let team = f.id("team_id")?.or(ef.id("team")?);
    let team = team.as_deref();
    let mut spoken = |m, path, channel: &str, mentioned| -> Result<(), Error> {
        let (message, person) = message(m, path, channel, (&ef, team), &bot, mentioned)?;
        out.events.extend(person.map(Event::Person));
        out.events.push(Event::Message(message));
        Ok(())
    };
    match event_type {
        "message" => {
            let subtype = ef.str("subtype")?.unwrap_or_default();
            match subtype {
                "message_changed" => {
                    let m = ef.obj("message")?.ok_or_else(|| ef.err("message", "is required"))?;
                    spoken(m, "payload.event.message", &ef.req_id("channel")?, false)?;
                }
                "message_deleted" => out.events.push(Event::Delete(DeleteEvent {
                    channel: CHANNEL.to_owned(),
                    chat_id: ef.req_id("channel")?,
                    message_ids: vec![ef.req_id("deleted_ts")?],
                    at: Some(received_at),
                })),
                s if SPOKEN.contains(&s) || NOTES.contains(&s) => {
                    spoken(e, "payload.event", &ef.req_id("channel")?, false)?;
                }
                other => out.ignored.push(format!("message.{other}")),
            }
        }
        "app_mention" => spoken(e, "payload.event", &ef.req_id("channel")?, true)?,
        // A channel's name is its chat's title.
        "channel_created" | "channel_rename" | "group_rename" => {
            let c = ef.obj("channel")?.ok_or_else(|| ef.err("channel", "is required"))?;
            let c = Fields::new(c, "payload.event.channel", EV);
            out.events.extend(crate::title(CHANNEL, c.req_id("id")?, None, c.get("name")));
        }
        t if people::USER_EVENTS.contains(&t) => {
            let user = ef.obj("user")?.ok_or_else(|| ef.err("user", "is required"))?;
            out.events.push(Event::Person(people::user(user, "payload.event.user", team)?));
        }
        "reaction_added" | "reaction_removed" => {
            let item = ef.obj("item")?.ok_or_else(|| ef.err("item", "is required"))?;
            let item = Fields::new(item, "payload.event.item", EV);
            if item.str("type")? != Some("message") {
                out.ignored.push(format!("{event_type} (not on a message)"));
                return Ok(out);
            }
            let user = ef.req_id("user")?;
            let name = ef.str("reaction")?.unwrap_or("an emoji");
            out.events.push(Event::Reaction(ReactionEvent {
                channel: CHANNEL.to_owned(),
                chat_id: item.req_id("channel")?,
                topic_id: None,
                message_id: item.req_id("ts")?,
                direction: if bot.is(&user) { Direction::Outbound } else { Direction::Inbound },
                sender: Some(Person { user_id: user.clone(), username: Some(user), ..Person::default() }),
                emoji: if event_type == "reaction_added" { vec![format!(":{name}:")] } else { Vec::new() },
                sent_at: ts_time(ef.str("event_ts")?).unwrap_or(received_at),
            }));
        }
        other => out.ignored.push(other.to_owned()),
    }
    Ok(out)
}

/// `"1355517523.000005"` → the second it names.
fn ts_time(ts: Option<&str>) -> Option<Timestamp> {
    let secs = ts?.split('.').next()?.parse::<i64>().ok()?;
    Timestamp::from_unix(secs)
}

/// A message, and the person its own profile describes (for the directory).
fn message(
    m: &Map<String, Value>,
    path: &str,
    channel: &str,
    (event, team): (&Fields<'_>, Option<&str>),
    bot: &Bot,
    mentioned: bool,
) -> Result<(MessageEvent, Option<PersonEvent>), Error> {
    let f = Fields::new(m, path, EV);
    let subtype = f.str("subtype")?.unwrap_or_default();
    let ts = f.req_id("ts")?;
    let sent_at = ts_time(Some(&ts)).ok_or_else(|| f.err("ts", "expected a Slack timestamp like 1355517523.000005"))?;
    let user = f.id("user")?.or(f.id("bot_id")?).ok_or_else(|| f.err("user", "is required"))?;
    let profile = f.obj("user_profile")?.map(|p| Fields::new(p, "user_profile", EV));
    let display = match &profile {
        Some(p) => p.str("display_name")?.filter(|s| !s.is_empty()).or(p.str("real_name")?).map(str::to_owned),
        None => f.str("username")?.map(str::to_owned),
    };
    let person = people::of_message(&f, &user, team, channel)?;
    let is_bot_account = f.get("bot_id").is_some();
    let sender = Person {
        user_id: user.clone(),
        username: Some(user.clone()),
        display_name: display,
        is_bot: is_bot_account,
        ..Person::default()
    };
    let mut built = Built::default();
    let mentions = render(f.str("text")?.unwrap_or_default(), &mut built);
    let attachments = files(&f)?;
    let thread = f.id("thread_ts")?.filter(|t| *t != ts);
    let is_bot = bot.is(&user);
    let note = NOTES.contains(&subtype);
    let im = event.str("channel_type")? == Some("im") || f.str("channel_type")? == Some("im");
    let addressed = bot.user_id.as_deref().is_some_and(|b| mentions.iter().any(|m| m == b));
    let message = MessageEvent {
        channel: CHANNEL.to_owned(),
        chat_id: channel.to_owned(),
        workspace_id: team.map(str::to_owned),
        chat_type: event.str("channel_type")?.or(f.str("channel_type")?).filter(|t| !t.is_empty()).map(str::to_owned),
        topic_id: thread.clone(),
        message_id: ts,
        reply_to_message_id: thread,
        kind: crate::message_kind(is_bot, !note),
        sent_at,
        sender: Some(sender),
        text: built.text,
        entities: built.entities,
        quote: None,
        attachments,
        origin: Origin::Interactive,
        triggered_agent: !is_bot && !note && (mentioned || addressed || im),
        actions: Vec::new(),
        forwarded_from: None,
    };
    Ok((message, person))
}

/// Slack's markup to text: `<@U…>` / `<@U…|name>` a mention of the user, `<#C…|name>` `#name`, `<!here>`
/// `@here`, `<!subteam^S…|@team>` `@team`, `<url|label>` a link, `<url>` a URL; `&amp;` `&lt;` `&gt;`
/// unescaped. Returns the user ids mentioned.
fn render(text: &str, out: &mut Built) -> Vec<String> {
    let mut mentions = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>').map(|c| open + c) else { break };
        out.push_with_urls(&unescape(&rest[..open]));
        let inner = &rest[open + 1..close];
        let (target, label) = match inner.split_once('|') {
            Some((t, l)) => (t, Some(unescape(l))),
            None => (inner, None),
        };
        if let Some(user) = target.strip_prefix('@') {
            out.username_mention(user);
            mentions.push(user.to_owned());
        } else if let Some(ch) = target.strip_prefix('#') {
            out.push(&format!("#{}", label.as_deref().unwrap_or(ch)));
        } else if let Some(special) = target.strip_prefix('!') {
            let word = special.split('^').next().unwrap_or(special);
            out.push(&label.unwrap_or_else(|| format!("@{word}")));
        } else {
            let url = unescape(target);
            out.link(label.as_deref().unwrap_or(&url), &url);
        }
        rest = &rest[close + 1..];
    }
    out.push_with_urls(&unescape(rest));
    mentions
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// Files by MIME type, labelled by their name.
fn files(f: &Fields<'_>) -> Result<Vec<Attachment>, Error> {
    let mut out = Vec::new();
    for (i, file) in f.array("files")?.iter().enumerate() {
        let path = format!("payload.event.files[{i}]");
        let ff = Fields::new(object(file, &path, EV)?, &path, EV);
        let kind = file_kind(ff.str("mimetype")?.unwrap_or_default(), ff.str("subtype")? == Some("slack_audio"));
        let label = ff.str("name")?.or(ff.str("title")?).map(str::to_owned);
        out.push(attachment(kind, label));
    }
    Ok(out)
}
