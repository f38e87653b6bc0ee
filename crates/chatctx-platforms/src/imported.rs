//! What reading an export (a Telegram Desktop `result.json`, a Slack workspace export, a DiscordChatExporter
//! file) makes: the events, in the order a replay applies them, and what was left out and why.

use std::collections::{BTreeMap, HashMap};

use chatctx_core::Event;

/// An export, read.
#[derive(Debug, Default)]
pub struct Imported {
    /// The events: people first, then each chat's messages in time order.
    pub events: Vec<Event>,
    /// What could not be mapped, with why and where (never message text).
    pub warnings: Vec<String>,
    /// What was left out, counted by reason (`message.channel_archive`, `a malformed message`, …).
    pub skipped: BTreeMap<String, usize>,
}

impl Imported {
    /// Counts one thing left out for `reason`.
    pub fn skip(&mut self, reason: impl Into<String>) {
        *self.skipped.entry(reason.into()).or_default() += 1;
    }

    /// How many people were read (each once, however many times their names changed).
    pub fn people(&self) -> usize {
        let ids: std::collections::HashSet<(&str, &str)> = self
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Person(p) => Some((p.workspace(), p.person.user_id.as_str())),
                _ => None,
            })
            .collect();
        ids.len()
    }

    /// How many messages were read.
    pub fn messages(&self) -> usize {
        self.events.iter().filter(|e| matches!(e, Event::Message(_))).count()
    }

    /// Holds what was read to the limits of every stored event, as a platform route's input is: texts cut,
    /// large deletions split, and each event checked as a restart reads it back (one that would not load is
    /// left out and counted).
    pub(crate) fn checked(mut self) -> Self {
        // An export names a person on every message of theirs (a Slack profile, a Discord author): keep a
        // `person` only where it differs from the last one kept for that person, so that a rename back to an
        // earlier name is kept too.
        // Likewise a chat's title (Telegram's comes with every message): kept where it changes.
        let mut people = HashMap::new();
        let mut titles = HashMap::new();
        self.events.retain(|e| match e {
            Event::Person(p) => {
                let scope = p.workspace_id.clone().or_else(|| p.chat_id.clone()).unwrap_or_default();
                changes(&mut people, (p.channel.clone(), scope, p.person.user_id.clone()), &p.person)
            }
            Event::Title(t) => {
                changes(&mut titles, (t.channel.clone(), t.chat_id.clone(), t.topic_id.clone()), &t.title)
            }
            _ => true,
        });
        let (events, warnings) = Event::fit(std::mem::take(&mut self.events));
        self.warnings.extend(warnings);
        for ev in events {
            match ev.check_stored() {
                Ok(()) => self.events.push(ev),
                Err(err) => {
                    self.warnings.push(format!("an event left out: {}", err.message));
                    self.skip("an event chatctx cannot store");
                }
            }
        }
        self
    }
}

/// Whether `value` differs from the last one kept under `key` (or none was), keeping it as the last.
fn changes<K: std::hash::Hash + Eq, V: Clone + PartialEq>(last: &mut HashMap<K, V>, key: K, value: &V) -> bool {
    last.insert(key, value.clone()).is_none_or(|before| before != *value)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use chatctx_core::event::{Person, PersonEvent};

    use super::*;

    fn named(name: &str, chat: &str) -> Event {
        Event::Person(PersonEvent {
            channel: "slack".into(),
            workspace_id: Some("T1".into()),
            chat_id: Some(chat.into()),
            person: Person { user_id: "U1".into(), display_name: Some(name.into()), ..Person::default() },
        })
    }

    fn titled(title: &str, topic: Option<&str>) -> Event {
        Event::Title(chatctx_core::event::TitleEvent {
            channel: "telegram".into(),
            chat_id: "-100".into(),
            topic_id: topic.map(Into::into),
            title: title.into(),
        })
    }

    #[test]
    fn a_title_repeated_unchanged_is_kept_once_per_chat_and_topic() {
        let events =
            vec![titled("Design", None), titled("Logo", Some("4")), titled("Design", None), titled("Brand", None)];
        let kept: Vec<String> = Imported { events, ..Imported::default() }
            .checked()
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Title(t) => Some(t.title.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(kept, ["Design", "Logo", "Brand"]);
    }

    #[test]
    fn a_person_repeated_unchanged_is_kept_once_and_a_rename_back_is_kept() {
        let events = vec![named("Ann", "C1"), named("Ann", "C2"), named("Anna", "C1"), named("Ann", "C1")];
        let kept: Vec<String> = Imported { events, ..Imported::default() }
            .checked()
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Person(p) => p.person.display_name.clone(),
                _ => None,
            })
            .collect();
        assert_eq!(kept, ["Ann", "Anna", "Ann"]);
    }
}
