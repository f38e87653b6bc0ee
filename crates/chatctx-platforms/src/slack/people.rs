//! Slack's people (docs/protocol.md §3.11): `user_change` / `team_join` (and `user_profile_changed` and its
//! siblings), a message's `user_profile` / `bot_profile`, and a Web API `users.list` / `users.info` answer posted
//! as is (`POST /v1/slack/users`), each a `person` of the workspace (the team).
//!
//! A Slack person's username is their user id, as for speakers (§3.10), so a `<@U…>` mention and the person's
//! reference agree; the nickname is the profile's `display_name`, else `real_name`.

use chatctx_core::event::{Event, Person, PersonEvent};
use chatctx_core::json::{Fields, object};
use chatctx_core::{Error, ErrorCode, Timestamp};
use serde_json::{Map, Value};

use super::CHANNEL;
use crate::{Bot, Mapped};

const EV: ErrorCode = ErrorCode::InvalidEvent;

/// User events that carry the whole user: each one a person.
pub(super) const USER_EVENTS: &[&str] =
    &["user_change", "team_join", "user_profile_changed", "user_status_changed", "user_huddle_changed"];

/// A Slack user object (`users.list` member, `user_change`'s `user`) as a person of `team` (else the user's own
/// `team_id`).
pub(super) fn user(m: &Map<String, Value>, path: &str, team: Option<&str>) -> Result<PersonEvent, Error> {
    let f = Fields::new(m, path, EV);
    let id = f.req_id("id")?;
    let profile_path = format!("{path}.profile");
    let profile = f.obj("profile")?.map(|p| Fields::new(p, &profile_path, EV));
    let (display, first, last) = match &profile {
        Some(p) => (
            p.text("display_name")?.or(p.text("real_name")?).or(f.text("real_name")?),
            p.text("first_name")?,
            p.text("last_name")?,
        ),
        None => (f.text("real_name")?, None, None),
    };
    // A user with no name at all (a new account) is still known by their handle.
    let display = display.or(f.text("name")?);
    Ok(PersonEvent {
        channel: CHANNEL.to_owned(),
        workspace_id: team.map(str::to_owned).or(f.id("team_id")?),
        chat_id: None,
        person: Person {
            username: Some(id.clone()),
            user_id: id,
            display_name: display,
            first_name: first,
            last_name: last,
            is_bot: f.bool("is_bot")? == Some(true),
        },
    })
}

/// The person a message's own `user_profile` (a person) or `bot_profile` (an app) describes, for the directory.
pub(super) fn of_message(
    m: &Fields<'_>,
    user: &str,
    team: Option<&str>,
    chat: &str,
) -> Result<Option<PersonEvent>, Error> {
    let (display, is_bot) = if let Some(p) = m.obj("user_profile")? {
        let p = Fields::new(p, "user_profile", EV);
        (p.text("display_name")?.or(p.text("real_name")?).or(p.text("name")?), false)
    } else if let Some(b) = m.obj("bot_profile")? {
        (Fields::new(b, "bot_profile", EV).text("name")?, true)
    } else {
        return Ok(None);
    };
    let Some(display) = display else { return Ok(None) };
    Ok(Some(PersonEvent {
        channel: CHANNEL.to_owned(),
        workspace_id: team.map(str::to_owned),
        chat_id: Some(chat.to_owned()),
        person: Person {
            user_id: user.to_owned(),
            username: Some(user.to_owned()),
            display_name: Some(display),
            is_bot,
            ..Person::default()
        },
    }))
}

/// `users.list` / `users.info` answers, posted as the Web API gave them (`POST /v1/slack/users`; a replay line
/// `{"type": "slack_users", "payload": {…}}`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SlackUsers;

impl crate::Platform for SlackUsers {
    fn name(&self) -> &'static str {
        CHANNEL
    }

    fn wrapped_as(&self) -> (&'static str, &'static str) {
        ("slack_users", "payload")
    }

    fn map(&self, payload: &Value, _bot: &Bot, _received_at: Timestamp) -> Result<Mapped, Error> {
        map_users(payload)
    }
}

/// Maps a `users.list` answer (`members`) or a `users.info` answer (`user`) to people; `ok: false` is refused
/// with Slack's own error.
pub fn map_users(answer: &Value) -> Result<Mapped, Error> {
    let f = Fields::new(object(answer, "field `payload`", EV)?, "payload", EV);
    if f.bool("ok")? == Some(false) {
        let why = f.str("error")?.unwrap_or("no error given");
        return Err(f.err("ok", &format!("the Web API answered an error ({why}); post a successful answer")));
    }
    let mut out = Mapped::default();
    let users: Vec<(String, &Value)> = match (f.get("members"), f.obj("user")?) {
        (Some(Value::Array(members)), _) => {
            members.iter().enumerate().map(|(i, m)| (format!("payload.members[{i}]"), m)).collect()
        }
        (Some(_), _) => return Err(f.err("members", "expected an array of users")),
        (None, Some(_)) => vec![("payload.user".to_owned(), f.get("user").unwrap_or(&Value::Null))],
        (None, None) => {
            return Err(
                f.err("members", "is required: post the answer of users.list (`members`) or users.info (`user`)")
            );
        }
    };
    for (path, u) in users {
        out.events.push(Event::Person(user(object(u, &path, EV)?, &path, None)?));
    }
    Ok(out)
}
