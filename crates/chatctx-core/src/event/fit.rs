//! Fitting events built by a platform mapping (not decoded from a client's JSON) into the limits every event
//! must keep, so that what a platform sends is stored rather than refused and, once stored, loads again: a
//! text or quote over [`MAX_TEXT_BYTES`] is cut with a marker (entities past the cut dropped), a deletion of
//! more than [`MAX_DELETED`] messages is split. [`Event::check_stored`] then holds the result to the same
//! validation as a client's event, by the same path a log line takes at restart.

use serde_json::Value;

use super::{Event, MAX_DELETED, MAX_TEXT_BYTES};
use crate::error::Error;

/// What a cut text ends with.
pub const CUT_MARKER: &str = "… [cut: over 64 KiB]";

/// `text` cut to at most `max` bytes, at a character boundary, ending with [`CUT_MARKER`]; `None` when it fits.
fn cut(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let mut at = max.saturating_sub(CUT_MARKER.len()).min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    Some(format!("{}{CUT_MARKER}", &text[..at]))
}

/// The length of `s` in UTF-16 code units, as entity offsets count.
fn utf16_len(s: &str) -> u32 {
    u32::try_from(s.encode_utf16().count()).unwrap_or(u32::MAX)
}

impl Event {
    /// Fits mapped events into the limits: long texts cut, large deletions split. Returns the warnings (never
    /// message text).
    pub fn fit(events: Vec<Event>) -> (Vec<Event>, Vec<String>) {
        let mut out = Vec::with_capacity(events.len());
        let mut warnings = Vec::new();
        for e in events {
            let mut e = e;
            if e.fit_bounds() {
                warnings.push("a name, label or list over its bound was cut".to_owned());
            }
            match e {
                Event::Message(mut m) => {
                    if let Some(text) = cut(&m.text, MAX_TEXT_BYTES) {
                        let kept = utf16_len(text.strip_suffix(CUT_MARKER).unwrap_or(&text));
                        m.entities.retain(|en| en.offset.saturating_add(en.length) <= kept);
                        warnings.push(format!("message {}: text over {MAX_TEXT_BYTES} bytes, cut", m.message_id));
                        m.text = text;
                    }
                    if let Some(q) = m.quote.as_mut()
                        && let Some(text) = cut(&q.text, MAX_TEXT_BYTES)
                    {
                        warnings.push(format!("message {}: quote over {MAX_TEXT_BYTES} bytes, cut", m.message_id));
                        q.text = text;
                    }
                    out.push(Event::Message(m));
                }
                Event::Delete(d) if d.message_ids.len() > MAX_DELETED => {
                    for ids in d.message_ids.chunks(MAX_DELETED) {
                        out.push(Event::Delete(super::DeleteEvent { message_ids: ids.to_vec(), ..d.clone() }));
                    }
                }
                other => out.push(other),
            }
        }
        (out, warnings)
    }

    /// Checks the event as it will be stored: written as its log line's JSON and decoded back as a client's
    /// event is, which is what a restart does, with the fresh-input rules on top ([`super::check_fresh`]). An
    /// event that fails cannot be acknowledged.
    pub fn check_stored(&self) -> Result<(), Error> {
        let v: Value = serde_json::to_value(self)
            .map_err(|e| Error::invalid_event(format!("the event cannot be written: {e}")))?;
        Event::decode(&v)?;
        super::check_fresh(&v)
    }
}
