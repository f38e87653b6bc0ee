//! The bounds of the short strings an event carries (names, labels, the chat's type, actions, emoji), so that no
//! client can grow every answer of a chat by sending one huge name: fresh input over them is refused
//! ([`check_fresh`]); what a platform mapping builds is cut to them ([`Event::fit_bounds`]). A log written
//! before the bounds still loads: decoding does not apply them.

use serde_json::Value;

use super::{Event, Person};
use crate::error::Error;
use crate::render::ELLIPSIS;

/// The longest name (`username`, `display_name`, `first_name`, `last_name`), `chat_type`, `forwarded_from`,
/// action or emoji, in bytes.
pub const MAX_NAME_BYTES: usize = 1024;
/// The longest attachment label, in bytes (as an object's label).
pub const MAX_LABEL_BYTES: usize = 4096;
/// The most actions and emoji one event carries.
pub const MAX_LIST_ITEMS: usize = 64;

/// The fields of `e` the bounds apply to, each with its limit.
fn bounded(e: &mut Event, mut each: impl FnMut(&mut String, usize)) {
    let person = |p: &mut Person, each: &mut dyn FnMut(&mut String, usize)| {
        for v in [&mut p.username, &mut p.display_name, &mut p.first_name, &mut p.last_name].into_iter().flatten() {
            each(v, MAX_NAME_BYTES);
        }
    };
    match e {
        Event::Message(m) => {
            if let Some(p) = m.sender.as_mut() {
                person(p, &mut each);
            }
            if let Some(p) = m.quote.as_mut().and_then(|q| q.sender.as_mut()) {
                person(p, &mut each);
            }
            for p in m.entities.iter_mut().filter_map(|en| en.user.as_mut()) {
                person(p, &mut each);
            }
            for v in [&mut m.chat_type, &mut m.forwarded_from].into_iter().flatten() {
                each(v, MAX_NAME_BYTES);
            }
            for l in m.attachments.iter_mut().filter_map(|a| a.label.as_mut()) {
                each(l, MAX_LABEL_BYTES);
            }
            for a in &mut m.actions {
                each(a, MAX_NAME_BYTES);
            }
        }
        Event::Reaction(r) => {
            if let Some(p) = r.sender.as_mut() {
                person(p, &mut each);
            }
            for em in &mut r.emoji {
                each(em, MAX_NAME_BYTES);
            }
        }
        Event::Person(p) => person(&mut p.person, &mut each),
        Event::Title(t) => each(&mut t.title, MAX_NAME_BYTES),
        _ => {}
    }
}

impl Event {
    /// Cuts what a platform mapping built to the bounds (a cut string ends with `…`); whether anything was cut.
    pub fn fit_bounds(&mut self) -> bool {
        let mut cut = false;
        if let Event::Message(m) = self {
            cut |= m.actions.len() > MAX_LIST_ITEMS;
            m.actions.truncate(MAX_LIST_ITEMS);
        }
        if let Event::Reaction(r) = self {
            cut |= r.emoji.len() > MAX_LIST_ITEMS;
            r.emoji.truncate(MAX_LIST_ITEMS);
        }
        bounded(self, |v, max| {
            if v.len() > max {
                let mut at = max - ELLIPSIS.len();
                while !v.is_char_boundary(at) {
                    at -= 1;
                }
                v.truncate(at);
                v.push_str(ELLIPSIS);
                cut = true;
            }
        });
        cut
    }
}

/// The bound of a string under `key` in an event's JSON, if it has one.
fn bound_of(key: &str) -> Option<usize> {
    match key {
        "username" | "display_name" | "first_name" | "last_name" | "chat_type" | "forwarded_from" | "title" => {
            Some(MAX_NAME_BYTES)
        }
        "label" => Some(MAX_LABEL_BYTES),
        _ => None,
    }
}

/// What is wrong with field `key` holding `v` past the bounds, if anything.
fn bound_problem(key: &str, v: &Value) -> Option<String> {
    match v {
        Value::String(s) => bound_of(key).filter(|max| s.len() > *max).map(|max| format!("longer than {max} bytes")),
        Value::Array(a) if key == "actions" || key == "emoji" => {
            if a.len() > MAX_LIST_ITEMS {
                Some(format!("at most {MAX_LIST_ITEMS} entries"))
            } else {
                a.iter()
                    .any(|x| x.as_str().is_some_and(|s| s.len() > MAX_NAME_BYTES))
                    .then(|| format!("an entry longer than {MAX_NAME_BYTES} bytes"))
            }
        }
        _ => None,
    }
}

/// Checks an event's JSON as fresh input must be (`invalid_event`, naming the field), in one pass: names,
/// labels and lists within their bounds, and ids without control characters ([`crate::json::check_ids`]).
/// Applied to what a client sends to `/v1/events` and to every platform mapping's output once cut, never to
/// what a store logged earlier.
pub fn check_fresh(v: &Value) -> Result<(), Error> {
    crate::json::visit_fields(v, usize::MAX, &mut |key, v| {
        crate::json::id_problem(key, v).or_else(|| bound_problem(key, v))
    })
}
