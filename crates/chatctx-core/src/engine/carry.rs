//! What a message carries: the objects its attachments and links become (with their activations and platform
//! ids), and the `message` / `bot_message` candidate object of a stored message.

use crate::chat::Chat;
use crate::kinds::{Activation, ItemKind, ObjectKind};
use crate::objects::{Object, short_label_arc};
use std::sync::Arc;

/// The `message` / `bot_message` candidate object of a stored message, for ids `"{message_id}:message"`.
pub(crate) fn message_candidate(chat: &Chat, object_id: &str) -> Option<Object> {
    let (mid, kind) = object_id.rsplit_once(':')?;
    let kind = ObjectKind::parse(kind).filter(|k| k.is_message())?;
    let (conv, item) = chat.message(mid)?;
    let is_bot = item.kind == ItemKind::OutboundAgent;
    if is_bot != (kind == ObjectKind::BotMessage) {
        return None;
    }
    let topic = conv.topic.as_deref().map(str::to_owned);
    let mid: Arc<str> = mid.into();
    let carrier = Carrier {
        message_id: &mid,
        topic_id: &topic,
        // The message is its sender's, registered or not: "my message" reads the same before and after its
        // first resolution or activation registers it (it read as nobody's after, a defect until 2026-11-29).
        by_user: chat.people.user_id(item.sender),
        by_bot: is_bot,
        at: item.sent_at,
        caption: None,
        author: Some(chat.people.display_ref_arc(item.sender)),
    };
    // Labelled from the whole text, as its descriptor is before it is registered (`short_label` reads no further
    // than its limits): a cut of its first 200 characters read shorter when the text opened with whitespace.
    Some(carrier.object(object_id.to_owned(), kind, Some(&item.text), None))
}

/// The message that carries objects: what each object it carries records about its source.
pub(super) struct Carrier<'a> {
    pub(super) message_id: &'a Arc<str>,
    pub(super) topic_id: &'a Option<String>,
    pub(super) by_user: Option<&'a str>,
    pub(super) by_bot: bool,
    pub(super) at: crate::time::Timestamp,
    /// The message's first words, for its objects' `caption` (and their label when they have none).
    pub(super) caption: Option<Arc<str>>,
    /// Who posted it, as the prompt refers to them.
    pub(super) author: Option<Arc<str>>,
}

/// The objects a message carries, the activations they arrive with, and the platform ids they are known by.
pub(super) struct Carried {
    pub(super) objects: Vec<Object>,
    pub(super) activations: Vec<(String, Activation)>,
    pub(super) externals: Vec<(String, String)>,
}

impl Carrier<'_> {
    /// The objects of the message's attachments and links, with the derived ids of docs/protocol.md §3.6.
    pub(super) fn carried(&self, attachments: Vec<crate::event::Attachment>, links: &[String]) -> Carried {
        let message_id = self.message_id;
        let mut out = Carried {
            objects: Vec::with_capacity(attachments.len() + links.len()),
            activations: Vec::new(),
            externals: Vec::new(),
        };
        let mut seen = [0u32; ObjectKind::ALL.len()];
        for a in attachments {
            let n = &mut seen[a.kind as usize];
            let id = a.object_id.unwrap_or_else(|| match *n {
                0 => [&**message_id, ":", a.kind.as_str()].concat(),
                k => numbered(&[message_id, ":", a.kind.as_str(), ":"], k as usize),
            });
            *n += 1;
            if let Some(act) = a.activation {
                out.activations.push((id.clone(), act));
            }
            if let Some(ext) = &a.external_id {
                out.externals.push((ext.clone(), id.clone()));
            }
            // An attachment without a label of its own (a photo) is labelled by the message's caption.
            let label = a.label.as_deref().or(self.caption.as_deref());
            let mut o = self.object(id, a.kind, label, a.external_id);
            o.file = a.file.map(std::sync::Arc::new);
            out.objects.push(o);
        }
        for (n, url) in links.iter().enumerate() {
            out.objects.push(self.object(numbered(&[message_id, ":link:"], n), ObjectKind::Link, Some(url), None));
        }
        out
    }

    pub(super) fn object(
        &self,
        object_id: String,
        kind: ObjectKind,
        label: Option<&str>,
        external_id: Option<String>,
    ) -> Object {
        Object {
            object_id: object_id.into(),
            kind,
            source_message_id: Some(self.message_id.clone()),
            topic_id: self.topic_id.as_deref().map(Into::into),
            title_or_label: label.map(short_label_arc).filter(|l| !l.is_empty()),
            created_by_user_id: self.by_user.map(Into::into),
            created_by_bot: self.by_bot,
            created_at: self.at,
            last_touched_at: self.at,
            activation: None,
            activated_at: None,
            closed_at: None,
            external_id,
            activated_by: None,
            file: None,
            caption: self.caption.clone(),
            author: self.author.clone(),
        }
    }
}

/// `parts` joined, then `n` in decimal: a derived object's id (`{message}:link:{n}`), made for every link a message
/// carries. Joined rather than formatted: `format!` took ~650 instructions, the integer's own `to_string` a few
/// dozen.
fn numbered(parts: &[&str], n: usize) -> String {
    let digits = n.to_string();
    let mut id = String::with_capacity(parts.iter().map(|p| p.len()).sum::<usize>() + digits.len());
    for p in parts {
        id.push_str(p);
    }
    id.push_str(&digits);
    id
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    #[test]
    fn numbered_ids_read_as_formatted_ones() {
        for n in [0, 7, 9, 10, 42, 100, 123_456, usize::MAX] {
            assert_eq!(super::numbered(&["5", ":link:"], n), format!("5:link:{n}"));
            assert_eq!(super::numbered(&["5", ":", "media.image", ":"], n), format!("5:media.image:{n}"));
        }
        assert_eq!(super::numbered(&[], 3), "3");
    }
}
