//! A message text assembled piece by piece, with entities at UTF-16 offsets (as the core reads them): what
//! Discord's `<@id>` and Slack's `<@U…>` / `<https://…|label>` markup become.

use chatctx_core::event::{Entity, EntityKind, Person};

/// A text and its entities, built in order.
#[derive(Debug, Default)]
pub struct Built {
    /// The plain text.
    pub text: String,
    /// Its entities.
    pub entities: Vec<Entity>,
    units: u32,
}

fn units(s: &str) -> u32 {
    u32::try_from(s.encode_utf16().count()).unwrap_or(u32::MAX)
}

impl Built {
    /// Appends plain text.
    pub fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.units = self.units.saturating_add(units(s));
    }

    fn entity(&mut self, shown: &str, kind: EntityKind, user: Option<Person>, url: Option<String>) {
        let length = units(shown);
        self.entities.push(Entity { kind, offset: self.units, length, user, url });
        self.push(shown);
    }

    /// Appends a mention of `person`, shown as `shown` (rendered as the person's reference).
    pub fn mention(&mut self, shown: &str, person: Person) {
        self.entity(shown, EntityKind::TextMention, Some(person), None);
    }

    /// Appends an `@username` mention (rendered as the person's reference when the chat knows them).
    pub fn username_mention(&mut self, username: &str) {
        self.entity(&format!("@{username}"), EntityKind::Mention, None, None);
    }

    /// Appends `label` linked to `url` (a bare URL when they are the same).
    pub fn link(&mut self, label: &str, url: &str) {
        if label == url {
            self.entity(url, EntityKind::Url, None, None);
        } else {
            self.entity(label, EntityKind::TextLink, None, Some(url.to_owned()));
        }
    }

    /// Appends text in which bare `http://` / `https://` URLs become links.
    pub fn push_with_urls(&mut self, s: &str) {
        let mut rest = s;
        while let Some(at) = find_url(rest) {
            self.push(&rest[..at]);
            let url_len = rest[at..]
                .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | ')' | ']'))
                .unwrap_or(rest.len() - at);
            let url = &rest[at..at + url_len];
            // Trailing punctuation ends a sentence, not the URL.
            let url = url.trim_end_matches(['.', ',', ';', ':', '!', '?']);
            self.link(url, url);
            rest = &rest[at + url.len()..];
        }
        self.push(rest);
    }
}

fn find_url(s: &str) -> Option<usize> {
    let a = s.find("https://");
    let b = s.find("http://");
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_utf16_and_urls_stop_at_punctuation() {
        let mut b = Built::default();
        b.push("😀 see ");
        b.push_with_urls("https://example.org/a, or http://x.io.");
        assert_eq!(b.text, "😀 see https://example.org/a, or http://x.io.");
        let spans: Vec<(u32, u32)> = b.entities.iter().map(|e| (e.offset, e.length)).collect();
        assert_eq!(spans, [(7, 21), (33, 11)], "the emoji is two UTF-16 units");
    }
}
