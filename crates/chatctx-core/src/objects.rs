//! The object registry of one chat: typed objects from attachments, links and `object` events, with their
//! activation stamps. Issue 3 builds activation TTLs and the ranked tools on top of this.

use hashbrown::HashMap;

use serde::Serialize;

use crate::kinds::{Activation, ObjectKind};
use crate::time::Timestamp;

/// Longest `title_or_label` on the wire, in characters.
pub const MAX_LABEL_CHARS: usize = 80;

/// A typed object known in a chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Object {
    /// Id, unique in the chat.
    pub object_id: String,
    /// Kind.
    pub kind: ObjectKind,
    /// The message that carries it.
    pub source_message_id: Option<String>,
    /// The topic it lives in.
    pub topic_id: Option<String>,
    /// A short label, at most 80 characters.
    pub title_or_label: Option<String>,
    /// Who created it.
    pub created_by_user_id: Option<String>,
    /// Whether the bot created it.
    pub created_by_bot: bool,
    /// When it became known.
    pub created_at: Timestamp,
    /// Last change or activation.
    pub last_touched_at: Timestamp,
    /// The latest activation, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
    /// When the latest activation happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activated_at: Option<Timestamp>,
    /// When it was closed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<Timestamp>,
    /// The platform's own id (a Telegram poll id).
    #[serde(skip)]
    pub external_id: Option<String>,
}

/// Truncates a label to [`MAX_LABEL_CHARS`] characters (the last one an ellipsis when cut).
pub fn short_label(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(MAX_LABEL_CHARS - 1) {
        Some((cut, _)) if s[cut..].chars().nth(1).is_some() => format!("{}…", &s[..cut]),
        _ => s.to_owned(),
    }
}

/// Whether `id` is a derived id (`"{source}:…"`, SPEC §3.6) of message `source`.
fn is_derived(id: &str, source: &str) -> bool {
    id.strip_prefix(source).is_some_and(|rest| rest.starts_with(':'))
}

/// The objects of one chat.
#[derive(Debug, Default)]
pub(crate) struct Objects {
    by_id: HashMap<Box<str>, Object>,
    by_source: HashMap<String, Vec<Box<str>>>,
}

impl Objects {
    pub(crate) fn get(&self, id: &str) -> Option<&Object> {
        self.by_id.get(id)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Object> {
        self.by_id.values()
    }

    /// Registers `obj`, or updates a known one: fields `obj` leaves empty keep their earlier value, and
    /// `created_at` and the latest activation are kept.
    pub(crate) fn upsert(&mut self, mut obj: Object) {
        if let Some(old) = self.by_id.get(obj.object_id.as_str()) {
            obj.created_at = old.created_at.min(obj.created_at);
            obj.last_touched_at = old.last_touched_at.max(obj.last_touched_at);
            if obj.activation.is_none() {
                obj.activation = old.activation;
                obj.activated_at = old.activated_at;
            }
            obj.closed_at = obj.closed_at.or(old.closed_at);
            obj.topic_id = obj.topic_id.or_else(|| old.topic_id.clone());
            obj.title_or_label = obj.title_or_label.or_else(|| old.title_or_label.clone());
            obj.created_by_user_id = obj.created_by_user_id.or_else(|| old.created_by_user_id.clone());
            obj.created_by_bot |= old.created_by_bot;
            obj.external_id = obj.external_id.or_else(|| old.external_id.clone());
            obj.source_message_id = obj.source_message_id.or_else(|| old.source_message_id.clone());
            if old.source_message_id != obj.source_message_id {
                self.unlink(old.source_message_id.clone(), &obj.object_id);
            }
        }
        if let Some(src) = &obj.source_message_id {
            let list = self.by_source.entry_ref(src.as_str()).or_default();
            if !list.iter().any(|i| **i == *obj.object_id) {
                list.push(obj.object_id.as_str().into());
            }
        }
        self.by_id.insert(obj.object_id.as_str().into(), obj);
    }

    fn unlink(&mut self, source: Option<String>, id: &str) {
        if let Some(src) = source
            && let Some(list) = self.by_source.get_mut(src.as_str())
        {
            list.retain(|i| **i != *id);
            if list.is_empty() {
                self.by_source.remove(src.as_str());
            }
        }
    }

    /// Records an activation. The latest by time wins: one that arrives late with an older time only
    /// counts if there was none.
    pub(crate) fn activate(&mut self, id: &str, act: Activation, at: Timestamp) -> bool {
        match self.by_id.get_mut(id) {
            Some(o) => {
                if o.activated_at.is_none_or(|prev| prev <= at) {
                    o.activation = Some(act);
                    o.activated_at = Some(at);
                }
                o.last_touched_at = o.last_touched_at.max(at);
                true
            }
            None => false,
        }
    }

    pub(crate) fn close(&mut self, id: &str, at: Timestamp) {
        if let Some(o) = self.by_id.get_mut(id) {
            o.closed_at = Some(at);
            o.last_touched_at = o.last_touched_at.max(at);
        }
    }

    pub(crate) fn delete(&mut self, id: &str) -> Option<Object> {
        let o = self.by_id.remove(id)?;
        self.unlink(o.source_message_id.clone(), id);
        Some(o)
    }

    /// Forgets the objects derived from an evicted message, except those that were activated (they live on
    /// until the registry's own limits drop them).
    pub(crate) fn evict_derived(&mut self, source: &str) {
        let Some(ids) = self.by_source.get(source) else { return };
        let gone: Vec<Box<str>> = ids
            .iter()
            .filter(|id| is_derived(id, source) && self.by_id.get(&***id).is_some_and(|o| o.activation.is_none()))
            .cloned()
            .collect();
        for id in gone {
            self.delete(&id);
        }
    }

    /// Ids of every object whose source is message `source`.
    pub(crate) fn sourced_from(&self, source: &str) -> Vec<String> {
        self.by_source.get(source).map(|ids| ids.iter().map(|i| i.to_string()).collect()).unwrap_or_default()
    }

    /// Ids of the objects derived from message `source` that are not in `keep` (an edit dropped them).
    pub(crate) fn derived_not_in(&self, source: &str, keep: &[String]) -> Vec<String> {
        self.by_source
            .get(source)
            .map(|ids| {
                ids.iter()
                    .filter(|id| is_derived(id, source) && !keep.iter().any(|k| **k == ***id))
                    .map(|id| id.to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_need_the_separator() {
        assert!(is_derived("5:media.image", "5"));
        assert!(is_derived("5:link:0", "5"));
        assert!(!is_derived("50:poll", "5"));
        assert!(!is_derived("5x", "5"));
        assert!(!is_derived("rem-1", "5"));
    }

    #[test]
    fn labels_are_cut_at_80_characters() {
        assert_eq!(short_label("  short  "), "short");
        let exact: String = "é".repeat(80);
        assert_eq!(short_label(&exact), exact);
        let long: String = "日".repeat(81);
        let cut = short_label(&long);
        assert_eq!(cut.chars().count(), 80);
        assert!(cut.ends_with('…'));
    }
}
