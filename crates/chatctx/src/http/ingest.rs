//! Ingest routes (docs/protocol.md §3): `/v1/events` (core events, an array, or JSON Lines) and each platform's
//! own payload (`/v1/telegram/updates`, `/v1/discord/events`, `/v1/slack/events`, `/v1/slack/users`). Every
//! route ends in
//! `ingest`, so every input passes the same checks before it is acknowledged.

use std::sync::Arc;

use axum::extract::{FromRequest, Query, Request, State};
use axum::response::Response;
use chatctx_core::{Error, ErrorCode};
use chatctx_platforms::slack::{Slack, SlackUsers};
use chatctx_platforms::{Bot, Platform};
use serde::Deserialize;
use serde_json::Value;

use super::extract::{Caller, EventsBody, JsonBody};
use super::{ApiError, AppState, Shared, json_body};
use crate::auth::Access;
use crate::clock::now;
use crate::ingest::{Decode, Input};

/// `POST /v1/events`.
pub async fn post_events(
    State(app): State<Shared>,
    Caller(a): Caller,
    EventsBody(bytes): EventsBody,
) -> Result<Response, ApiError> {
    a.not_a_scope("ingest events")?;
    let (inputs, single) = match direct(&bytes, app.limits.max_batch_items) {
        Some(read) => read,
        None => {
            let (values, single) = events_of(&bytes, app.limits.max_batch_items)?;
            (values.into_iter().map(Input::Json).collect(), single)
        }
    };
    ingest(&app, a, inputs, single).await
}

/// Ingests `inputs` durably as `a` allows. A single input that is rejected is answered with its error; a
/// batch gets the report.
async fn ingest<I: Decode>(app: &AppState, a: Access, inputs: Vec<I>, single: bool) -> Result<Response, ApiError> {
    let svc = app.svc.clone();
    let allowed = Arc::new(move |ch: &str, c: &str| a.allows(ch, c));
    let mut report = svc.ingest_async(inputs, now(), allowed).await?;
    if single && let Some(r) = report.rejected.first() {
        return Err(ApiError::new(r.code, r.message.clone()));
    }
    app.metrics.ignored(&report.ignored_kinds);
    report.cap_rejections(app.limits.max_rejections);
    Ok(json_body(&report))
}

/// Who the bot is, for a forwarded platform payload.
#[derive(Deserialize)]
pub struct BotQuery {
    bot_user_id: Option<String>,
    bot_username: Option<String>,
    triggered_agent: Option<bool>,
}

impl BotQuery {
    fn bot(self) -> Bot {
        Bot::new(self.bot_user_id, self.bot_username, self.triggered_agent)
    }
}

/// `POST /v1/telegram/updates`, `/v1/discord/events`, …: one payload of platform `P`, as the platform delivers
/// it to a bot (a Telegram webhook update, a Discord Gateway dispatch; docs/protocol.md §3.5–§3.9).
pub async fn post_payload<P: Platform + Default>(
    State(app): State<Shared>,
    Caller(a): Caller,
    Query(q): Query<BotQuery>,
    body: JsonBody,
) -> Result<Response, ApiError> {
    a.not_a_scope("ingest events")?;
    let payload = body.payload()?;
    ingest(&app, a, vec![Input::Payload(Box::new(P::default()), q.bot(), payload)], true).await
}

/// A request to `/v1/slack/events` or `/v1/slack/users`: its body, and who sent it. With `slack.signing_secret` configured, a
/// request must carry Slack's valid signature (`X-Slack-Signature`) or a valid configured bearer token, on every
/// server, one without `server.tokens` included.
pub struct SlackRequest {
    access: Access,
    body: JsonBody,
}

impl FromRequest<Shared> for SlackRequest {
    type Rejection = ApiError;

    async fn from_request(req: Request, app: &Shared) -> Result<Self, ApiError> {
        let headers = req.headers().clone();
        let body = JsonBody::from_request(req, app).await?;
        let signed = headers.contains_key("x-slack-signature");
        let bearer = headers.contains_key(axum::http::header::AUTHORIZATION);
        let access = match (&app.slack_signing_secret, signed) {
            (Some(secret), true) => {
                crate::slack::verify(secret, &headers, &body.0, now().unix())?;
                Access::All
            }
            // With a signing secret, an unsigned request needs a configured bearer token: on a server without
            // tokens nothing else would stand between a forged envelope and the store.
            (Some(_), false) if !(app.auth.required() && bearer) => {
                return Err(ApiError::new(
                    ErrorCode::Unauthorized,
                    "this route needs Slack's signature (X-Slack-Signature; [slack] signing_secret is set) or a \
                     configured bearer token",
                ));
            }
            _ => Caller::of(app, &headers)?,
        };
        Ok(Self { access, body })
    }
}

/// `POST /v1/slack/events`: one Events API envelope (docs/protocol.md §3.10); `url_verification` is answered
/// with its challenge.
pub async fn post_slack(
    State(app): State<Shared>,
    Query(q): Query<BotQuery>,
    SlackRequest { access: a, body }: SlackRequest,
) -> Result<Response, ApiError> {
    a.not_a_scope("ingest events")?;
    let payload = body.payload()?;
    if payload.get("type").and_then(Value::as_str) == Some("url_verification") {
        let challenge = payload.get("challenge").and_then(Value::as_str).unwrap_or_default();
        let mut answer = serde_json::Map::new();
        answer.insert("challenge".into(), Value::from(challenge));
        return Ok(json_body(&answer));
    }
    ingest(&app, a, vec![Input::Payload(Box::new(Slack), q.bot(), payload)], true).await
}

/// `POST /v1/slack/users`: a Web API `users.list` or `users.info` answer, as the bot got it (docs/protocol.md
/// §3.11): its members become people of their team's directory. Checked like `/v1/slack/events`.
pub async fn post_slack_users(
    State(app): State<Shared>,
    SlackRequest { access: a, body }: SlackRequest,
) -> Result<Response, ApiError> {
    a.not_a_scope("ingest people")?;
    let payload = body.payload()?;
    ingest(&app, a, vec![Input::Payload(Box::new(SlackUsers), Bot::default(), payload)], true).await
}

/// One event, a JSON array of events, or JSON Lines, each message of the common shape read straight into its
/// event ([`chatctx_core::event::fresh_message_str`]) and the rest into JSON values; `None` when the body must take
/// [`events_of`]'s way (more than `max_items` inputs, anything that is not JSON or not UTF-8), which gives the same
/// inputs or the error. The body's UTF-8 is checked once, whole, rather than string by string as it is read.
fn direct(bytes: &[u8], max_items: usize) -> Option<(Vec<Input>, bool)> {
    let text = std::str::from_utf8(bytes).ok()?;
    match text.bytes().find(|b| !b.is_ascii_whitespace())? {
        b'{' => match input(text) {
            Some(one) => Some((vec![one], true)),
            None => lines(text, max_items),
        },
        b'[' => {
            let items: Vec<&serde_json::value::RawValue> = serde_json::from_str(text).ok()?;
            if items.len() > max_items {
                return None;
            }
            let mut inputs = Vec::with_capacity(items.len());
            for raw in items {
                inputs.push(input(raw.get())?);
            }
            Some((inputs, false))
        }
        _ => None,
    }
}

/// One JSON text as an input: a message read directly, anything else as a JSON value; `None` if it is not JSON.
fn input(text: &str) -> Option<Input> {
    match chatctx_core::event::fresh_message_str(text) {
        Some(event) => Some(Input::Event(event)),
        None => serde_json::from_str(text).ok().map(Input::Json),
    }
}

/// JSON Lines (blank lines skipped), as [`direct`] reads them.
fn lines(text: &str, max_items: usize) -> Option<(Vec<Input>, bool)> {
    let mut inputs = Vec::new();
    for (_, line) in json_lines(text) {
        if inputs.len() == max_items {
            return None;
        }
        inputs.push(input(line)?);
    }
    Some((inputs, false))
}

/// The lines of a JSON Lines body that are not blank, with their index (from 0).
fn json_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty())
}

/// One event, a JSON array of events, or JSON Lines. `single` when the body was one object. More than
/// `max_items` inputs are refused before they are parsed.
fn events_of(bytes: &[u8], max_items: usize) -> Result<(Vec<Value>, bool), Error> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::invalid_event("the body is empty: send an event, an array of events or JSON Lines"));
    }
    let too_many = || {
        Error::new(
            ErrorCode::PayloadTooLarge,
            format!("more than {max_items} inputs in one request (server.max_batch_items): send them in batches"),
        )
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let over = std::cell::Cell::new(false);
    match serde::Deserializer::deserialize_any(&mut de, Batch { max_items, over: &over })
        .and_then(|b| de.end().map(|()| b))
    {
        Ok(Parsed::Many(items)) => Ok((items, false)),
        Ok(Parsed::One(v)) => Ok((vec![v], true)),
        Err(_) if over.get() => Err(too_many()),
        Err(whole) => {
            let text = std::str::from_utf8(bytes).map_err(|_| Error::invalid_event("the body is not UTF-8"))?;
            let lines: Vec<(usize, &str)> = json_lines(text).collect();
            if lines.len() > max_items {
                return Err(too_many());
            }
            let single = text.lines().count() == 1;
            let mut out = Vec::with_capacity(lines.len());
            for (i, line) in lines {
                out.push(serde_json::from_str(line).map_err(|e| {
                    Error::invalid_event(if i == 0 && single {
                        format!("the body is not JSON: {whole}")
                    } else {
                        format!("line {} is not JSON: {e}", i + 1)
                    })
                })?);
            }
            Ok((out, false))
        }
    }
}

/// Reads a body as one JSON value or an array of at most `max_items` values, stopping at the first one past
/// (and saying so in `over`).
struct Batch<'a> {
    max_items: usize,
    over: &'a std::cell::Cell<bool>,
}

enum Parsed {
    One(Value),
    Many(Vec<Value>),
}

impl<'de> serde::de::Visitor<'de> for Batch<'_> {
    type Value = Parsed;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an event object or an array of events")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Parsed, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max_items));
        while let Some(v) = seq.next_element::<Value>()? {
            if items.len() == self.max_items {
                self.over.set(true);
                return Err(serde::de::Error::custom("too many inputs"));
            }
            items.push(v);
        }
        Ok(Parsed::Many(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Parsed, A::Error> {
        serde::Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Parsed::One)
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::Bool(v)))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::from(v)))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::from(v)))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::from(v)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::from(v)))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Parsed, E> {
        Ok(Parsed::One(Value::Null))
    }
}
