//! People directories (docs/protocol.md §3.11): who is who in each workspace of a platform (a Slack team, a
//! Discord guild; Telegram and plain JSON have one directory per channel, workspace `""`), learned from
//! `person` events. Every chat of the workspace shows a person by the directory's names unless the message
//! itself carried names of its own.
//!
//! Bounded: a directory holds at most `conversation.max_people` people (past it the one learned or renamed
//! longest ago leaves), and at most `conversation.max_workspaces` directories are held (past it the one
//! written longest ago leaves). Both are deterministic, so a replayed log drops the same people.

use std::collections::BTreeMap;

use hashbrown::HashMap;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode};
use crate::event::Person;
use crate::json::{Fields, object};

/// Whether `p` carries a name of its own (not only an id and a username).
pub(crate) fn has_name(p: &Person) -> bool {
    p.display_name.is_some() || p.first_name.is_some() || p.last_name.is_some()
}

/// `base` (its id, username and bot flag) with the names of `names`; the username falls back to `names`'s.
pub(crate) fn with_names(base: &Person, names: &Person) -> Person {
    Person {
        user_id: base.user_id.clone(),
        username: base.username.clone().or_else(|| names.username.clone()),
        display_name: names.display_name.clone(),
        first_name: names.first_name.clone(),
        last_name: names.last_name.clone(),
        is_bot: base.is_bot,
    }
}

/// One workspace's people.
#[derive(Debug, Default)]
pub(crate) struct Directory {
    people: HashMap<Box<str>, (Person, u64)>,
    /// Lowercased username → user id.
    by_username: HashMap<Box<str>, Box<str>>,
    /// Learn order: stamp → user id (the oldest leaves first).
    order: BTreeMap<u64, Box<str>>,
    /// When the directory was last written (for the workspace bound).
    touched: u64,
}

impl Directory {
    /// The person with `user_id`.
    pub(crate) fn by_id(&self, user_id: &str) -> Option<&Person> {
        self.people.get(user_id).map(|(p, _)| p)
    }

    /// The person with `username` (any case).
    pub(crate) fn by_username(&self, username: &str) -> Option<&Person> {
        let id = self.by_username.get(username.to_ascii_lowercase().as_str())?;
        self.by_id(id)
    }

    /// How many people are held.
    pub(crate) fn len(&self) -> usize {
        self.people.len()
    }

    /// `p` merged over what is known of them: a later event's names replace the earlier ones; an event without
    /// names (only an id and a username) keeps them. `None` when that changes nothing.
    fn merged(&self, p: &Person) -> Option<Person> {
        let Some((old, _)) = self.people.get(p.user_id.as_str()) else { return Some(p.clone()) };
        let names = if has_name(p) { p } else { old };
        let same = old.is_bot == p.is_bot
            && p.username.as_ref().is_none_or(|u| old.username.as_ref() == Some(u))
            && names.display_name == old.display_name
            && names.first_name == old.first_name
            && names.last_name == old.last_name;
        if same {
            return None;
        }
        let mut m = with_names(p, names);
        if m.username.is_none() {
            m.username.clone_from(&old.username);
        }
        Some(m)
    }

    fn insert(&mut self, p: Person, stamp: u64, max_people: usize) {
        if let Some((old, old_stamp)) = self.people.remove(p.user_id.as_str()) {
            self.order.remove(&old_stamp);
            if let Some(u) = &old.username {
                self.by_username.remove(u.to_ascii_lowercase().as_str());
            }
        }
        let id: Box<str> = p.user_id.as_str().into();
        if let Some(u) = &p.username {
            self.by_username.insert(u.to_ascii_lowercase().into(), id.clone());
        }
        self.order.insert(stamp, id.clone());
        self.people.insert(id, (p, stamp));
        self.touched = stamp;
        while self.people.len() > max_people.max(1) {
            let Some((_, gone)) = self.order.pop_first() else { break };
            if let Some((old, _)) = self.people.remove(&gone)
                && let Some(u) = &old.username
                && self.by_username.get(u.to_ascii_lowercase().as_str()) == Some(&gone)
            {
                self.by_username.remove(u.to_ascii_lowercase().as_str());
            }
        }
    }

    /// Everyone, in learn order.
    pub(crate) fn everyone(&self) -> impl Iterator<Item = &Person> {
        self.order.values().filter_map(|id| self.by_id(id))
    }
}

/// What one chat reads: its workspace's directory, then the channel's own (workspace `""`: people learned without
/// a workspace, such as a Discord `USER_UPDATE`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct View<'a> {
    own: Option<&'a Directory>,
    channel: Option<&'a Directory>,
}

impl<'a> View<'a> {
    /// Whether neither directory exists (the common case off Slack and Discord: nothing to look up).
    pub(crate) fn is_empty(&self) -> bool {
        self.own.is_none() && self.channel.is_none()
    }

    /// The person with `user_id`.
    pub(crate) fn by_id(&self, user_id: &str) -> Option<&'a Person> {
        self.own.and_then(|d| d.by_id(user_id)).or_else(|| self.channel.and_then(|d| d.by_id(user_id)))
    }

    /// The person with `username` (any case).
    pub(crate) fn by_username(&self, username: &str) -> Option<&'a Person> {
        self.own.and_then(|d| d.by_username(username)).or_else(|| self.channel.and_then(|d| d.by_username(username)))
    }

    /// Everyone the chat can see, each once (the workspace's entry wins), in a fixed order.
    pub(crate) fn everyone(&self) -> Vec<&'a Person> {
        let mut out: Vec<&Person> = self.own.map(|d| d.everyone().collect()).unwrap_or_default();
        if let Some(c) = self.channel {
            out.extend(c.everyone().filter(|p| self.own.is_none_or(|o| o.by_id(&p.user_id).is_none())));
        }
        out
    }
}

/// Every directory, by channel and workspace (nested, so that a lookup by `&str` allocates nothing).
#[derive(Debug, Default)]
pub(crate) struct Directories {
    dirs: HashMap<Box<str>, HashMap<Box<str>, Directory>>,
    clock: u64,
}

/// The JSON key of a directory document in a log line, and its format tag.
pub const DIRECTORY_FORMAT: &str = "chatctx.people.v1";

/// A workspace's whole directory, as a log snapshot and `chatctx export` write it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirectoryDoc {
    /// Always [`DIRECTORY_FORMAT`].
    pub format: String,
    /// Platform.
    pub channel: String,
    /// The workspace (`""`: the channel's own directory).
    pub workspace_id: String,
    /// The people, oldest learned first.
    pub people: Vec<Person>,
}

const EV: ErrorCode = ErrorCode::InvalidRequest;

impl DirectoryDoc {
    /// Reads a directory document.
    pub fn from_value(v: &Value) -> Result<Self, Error> {
        let f = Fields::new(object(v, "a people directory", EV)?, "", EV);
        let format = f.str("format")?.unwrap_or_default();
        if format != DIRECTORY_FORMAT {
            return Err(f.err("format", &format!("expected {DIRECTORY_FORMAT:?}, got {format:?}")));
        }
        let mut people = Vec::new();
        for (i, p) in f.array("people")?.iter().enumerate() {
            let path = format!("people[{i}]");
            people.push(Person::decode(Fields::new(object(p, &path, EV)?, &path, EV), true)?);
        }
        Ok(Self {
            format: DIRECTORY_FORMAT.to_owned(),
            channel: f.channel()?,
            workspace_id: f.id("workspace_id")?.unwrap_or_default(),
            people,
        })
    }
}

impl Directories {
    /// The directory of `(channel, workspace)`, if any.
    pub(crate) fn get(&self, channel: &str, workspace: &str) -> Option<&Directory> {
        self.dirs.get(channel)?.get(workspace)
    }

    /// What a chat of `(channel, workspace)` reads.
    pub(crate) fn view(&self, channel: &str, workspace: &str) -> View<'_> {
        let Some(of_channel) = self.dirs.get(channel) else { return View::default() };
        let fallback = if workspace.is_empty() { None } else { of_channel.get("") };
        View { own: of_channel.get(workspace), channel: fallback }
    }

    /// Whether `p` would change their entry in `(channel, workspace)`.
    pub(crate) fn would_change(&self, channel: &str, workspace: &str, p: &Person) -> bool {
        self.get(channel, workspace).is_none_or(|d| d.merged(p).is_some())
    }

    /// Learns `p` in `(channel, workspace)`; the entry as it now stands when it changed.
    pub(crate) fn learn(
        &mut self,
        (channel, workspace): (&str, &str),
        p: &Person,
        (max_people, max_workspaces): (usize, usize),
    ) -> Option<Person> {
        let merged = match self.get(channel, workspace) {
            Some(d) => d.merged(p)?,
            None => p.clone(),
        };
        self.clock += 1;
        let stamp = self.clock;
        if self.get(channel, workspace).is_none() && self.count() >= max_workspaces.max(1) {
            // The directory written longest ago leaves (stamps are unique: no tie to break).
            let oldest = self
                .dirs
                .iter()
                .flat_map(|(c, ws)| ws.iter().map(move |(w, d)| (d.touched, c.clone(), w.clone())))
                .min();
            if let Some((_, c, w)) = oldest {
                self.remove(&c, &w);
            }
        }
        let dir = self.dirs.entry(Box::from(channel)).or_default().entry(Box::from(workspace)).or_default();
        dir.insert(merged.clone(), stamp, max_people);
        Some(merged)
    }

    fn count(&self) -> usize {
        self.dirs.values().map(HashMap::len).sum()
    }

    /// Forgets a directory; whether it was held.
    pub(crate) fn remove(&mut self, channel: &str, workspace: &str) -> bool {
        let Some(of_channel) = self.dirs.get_mut(channel) else { return false };
        let held = of_channel.remove(workspace).is_some();
        if of_channel.is_empty() {
            self.dirs.remove(channel);
        }
        held
    }

    /// The directory as a document.
    pub(crate) fn export(&self, channel: &str, workspace: &str) -> Option<DirectoryDoc> {
        let d = self.get(channel, workspace)?;
        Some(DirectoryDoc {
            format: DIRECTORY_FORMAT.to_owned(),
            channel: channel.to_owned(),
            workspace_id: workspace.to_owned(),
            people: d.everyone().cloned().collect(),
        })
    }

    /// Replaces a directory with a document's people (in its order).
    pub(crate) fn import(&mut self, doc: &DirectoryDoc, max_people: usize) {
        let mut d = Directory::default();
        for p in &doc.people {
            self.clock += 1;
            d.insert(p.clone(), self.clock, max_people.max(doc.people.len()));
        }
        self.dirs.entry(Box::from(doc.channel.as_str())).or_default().insert(doc.workspace_id.as_str().into(), d);
    }

    /// Every directory held, as `(channel, workspace, people)`, sorted.
    pub(crate) fn list(&self) -> Vec<(String, String, usize)> {
        let mut v: Vec<_> = self
            .dirs
            .iter()
            .flat_map(|(c, ws)| ws.iter().map(move |(w, d)| (c.to_string(), w.to_string(), d.len())))
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn person(id: &str, user: Option<&str>, name: Option<&str>) -> Person {
        Person {
            user_id: id.into(),
            username: user.map(Into::into),
            display_name: name.map(Into::into),
            ..Person::default()
        }
    }

    #[test]
    fn later_names_replace_earlier_and_nameless_events_keep_them() {
        let mut d = Directories::default();
        let ws = ("slack", "T1");
        assert!(d.learn(ws, &person("U1", Some("U1"), Some("Priya")), (10, 10)).is_some());
        assert!(d.learn(ws, &person("U1", Some("U1"), Some("Priya")), (10, 10)).is_none(), "unchanged");
        let kept = d.learn(ws, &person("U1", None, None), (10, 10));
        assert!(kept.is_none(), "no names: nothing changes");
        let renamed = d.learn(ws, &person("U1", None, Some("Priya Raman")), (10, 10)).unwrap();
        assert_eq!(renamed.username.as_deref(), Some("U1"), "the username stays");
        assert_eq!(
            d.get("slack", "T1").unwrap().by_username("u1").unwrap().display_name.as_deref(),
            Some("Priya Raman")
        );
        assert!(d.get("slack", "T2").is_none(), "workspaces are apart");
    }

    #[test]
    fn bounds_drop_the_oldest_deterministically() {
        let mut d = Directories::default();
        for i in 0..5 {
            d.learn(("discord", "G"), &person(&format!("{i}"), Some(&format!("u{i}")), Some("x")), (3, 2));
        }
        let g = d.get("discord", "G").unwrap();
        assert_eq!(g.len(), 3);
        assert!(g.by_id("1").is_none() && g.by_id("4").is_some());
        assert!(g.by_username("u1").is_none());
        d.learn(("discord", "H"), &person("1", None, Some("a")), (3, 2));
        d.learn(("discord", "G"), &person("9", None, Some("a")), (3, 2));
        d.learn(("discord", "I"), &person("1", None, Some("a")), (3, 2));
        assert!(d.get("discord", "H").is_none(), "the directory written longest ago left");
        assert!(d.get("discord", "G").is_some() && d.get("discord", "I").is_some());
        let doc = d.export("discord", "G").unwrap();
        let mut again = Directories::default();
        again.import(&DirectoryDoc::from_value(&serde_json::to_value(&doc).unwrap()).unwrap(), 3);
        assert_eq!(again.export("discord", "G").unwrap(), doc, "a directory document round-trips");
    }
}
