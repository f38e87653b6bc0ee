//! One entry point for every input a client sends: docs/protocol.md §3 events, and the platforms' payloads
//! ([`chatctx_platforms::Platform`]), decoded into core events. HTTP, MCP and `replay` all ingest through here,
//! so what a platform mapping produces passes the same validation as a core event before it is acknowledged.

use chatctx_core::{Error, Event, Timestamp};
use chatctx_platforms::{Bot, Mapped, Platform};
use serde_json::Value;

/// One input, as it reached chatctx. Inputs are held one batch at a time (at most `server.max_batch_items`) and
/// most are messages read directly, so the event is not boxed (that would cost an allocation per message).
#[allow(clippy::large_enum_variant)]
pub enum Input {
    /// As `/v1/events` takes it and a replay line holds it: a core event, or a platform's payload wrapped as
    /// one (`telegram_update`, `discord_event`, `slack_event`).
    Json(Value),
    /// A platform's payload from the platform's own route, with the bot the route's query names.
    Payload(Box<dyn Platform>, Bot, Value),
    /// A core event read straight from the text a client sent ([`chatctx_core::event::fresh_message`]), with the
    /// checks of fresh input already passed.
    Event(Event),
}

/// Something that decodes into core events (a [`Mapped`]: the events, and what a platform mapping ignored and
/// dropped). `received_at` dates what carries no time of its own.
pub trait Decode: Send + Sync + 'static {
    /// The core events, and what the mapping ignored and dropped.
    fn decode(&self, received_at: Timestamp) -> Result<Mapped, Error>;

    /// [`Decode::decode`] of fresh input, at the ingest boundary: the rules that new input keeps and a log written
    /// earlier need not (ids without control characters; names, labels and lists within their bounds:
    /// [`chatctx_core::event::check_fresh`]) apply first.
    fn decode_fresh(&self, received_at: Timestamp) -> Result<Mapped, Error>;

    /// [`Decode::decode_fresh`] of an input not needed afterwards: what is decoded already is moved, not copied.
    fn into_fresh(self, received_at: Timestamp) -> Result<Mapped, Error>
    where
        Self: Sized,
    {
        self.decode_fresh(received_at)
    }
}

impl Decode for Value {
    fn decode_fresh(&self, received_at: Timestamp) -> Result<Mapped, Error> {
        let kind = Event::type_of(self)?;
        // A message is read in one typed pass when it can be (the event the general way below gives); other types
        // are not tried.
        if kind == "message"
            && let Some(event) = chatctx_core::event::fresh_message_value(self)
        {
            return Ok(Mapped { events: vec![event], ..Mapped::default() });
        }
        // A wrapped platform payload's events are checked by the mapping's own check (`map_checked`).
        if chatctx_platforms::by_event_type(kind).is_none() {
            chatctx_core::event::check_fresh(self)?;
        }
        self.decode(received_at)
    }

    /// A core event, or a platform's payload wrapped as one.
    fn decode(&self, received_at: Timestamp) -> Result<Mapped, Error> {
        let kind = Event::type_of(self)?;
        match chatctx_platforms::by_event_type(kind) {
            Some(platform) => chatctx_platforms::map_wrapped(platform, self, received_at),
            None => Ok(Mapped { events: vec![Event::decode(self)?], ..Mapped::default() }),
        }
    }
}

impl Decode for Input {
    fn decode_fresh(&self, received_at: Timestamp) -> Result<Mapped, Error> {
        match self {
            Input::Json(v) => v.decode_fresh(received_at),
            Input::Payload(..) | Input::Event(_) => self.decode(received_at),
        }
    }

    fn into_fresh(self, received_at: Timestamp) -> Result<Mapped, Error> {
        match self {
            Input::Event(e) => Ok(Mapped { events: vec![e], ..Mapped::default() }),
            other => other.decode_fresh(received_at),
        }
    }

    fn decode(&self, received_at: Timestamp) -> Result<Mapped, Error> {
        match self {
            Input::Json(v) => v.decode(received_at),
            Input::Payload(platform, bot, payload) => {
                chatctx_platforms::map_checked(&**platform, payload, bot, received_at)
            }
            Input::Event(e) => Ok(Mapped { events: vec![e.clone()], ..Mapped::default() }),
        }
    }
}

/// Decodes one event: a core event, or a platform's payload wrapped as one.
pub fn decode(v: &Value, received_at: Timestamp) -> Result<Mapped, Error> {
    v.decode(received_at)
}
