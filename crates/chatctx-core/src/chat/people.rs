//! The people of one chat: a profile per look (a rename makes a new one; old items keep theirs), found by user
//! id, username and nickname.

use hashbrown::HashMap;
use std::sync::Arc;

use crate::directory::{View, has_name, with_names};
use crate::event::Person;
use crate::history::{Sender, SenderView};
use crate::people::{display_ref, nickname, person_ref};

/// `p` as a chat shows them: with their own names when they carry any, else with the directory's.
fn as_shown(p: &Person, dir: View<'_>) -> Person {
    match Some(dir).filter(|_| !has_name(p)).and_then(|d| d.by_id(&p.user_id)) {
        Some(known) => with_names(p, known),
        None => p.clone(),
    }
}

/// Whether `nickname` is what [`nickname`] makes of a person with no name (`@username`, `user ID`).
fn is_fallback(nickname: &str, username: Option<&str>, user_id: &str) -> bool {
    username.is_some_and(|u| nickname.strip_prefix('@') == Some(u))
        || nickname.strip_prefix("user ") == Some(user_id)
        || nickname == "unknown"
}

/// How a speaker looked when they spoke. A person's later renames make a new profile; old items keep theirs.
#[derive(Debug)]
pub(crate) struct Profile {
    /// Shared, as are `display_ref`: an answer's descriptor takes a count instead of a copy.
    user_id: Arc<str>,
    username: Option<Box<str>>,
    nickname: Box<str>,
    is_bot: bool,
    display_ref: Arc<str>,
    /// The message gave the speaker a name of its own (it wins over the directory's); otherwise the nickname is
    /// the directory's (or a fallback) and follows the directory (docs/protocol.md §3.11).
    own_name: bool,
}

/// The people of one chat.
#[derive(Debug, Default)]
pub(crate) struct People {
    profiles: Vec<Profile>,
    /// Keyed by the profile's own id string (shared, not copied).
    by_user: HashMap<Arc<str>, u32>,
    by_username: HashMap<Box<str>, u32>,
    /// Lowercased one-word nicknames of real people (not the placeholders), for names typed without a
    /// mention entity (`alice: …`).
    by_nick: HashMap<Box<str>, u32>,
    /// Each person's profiles without names of their own, so that [`People::adopt`] looks at those alone rather
    /// than at every profile of the chat.
    unnamed: HashMap<Arc<str>, Vec<u32>>,
}

/// Whether `nickname(p) == nick`, without building the nickname.
fn nickname_is(p: &Person, nick: &str) -> bool {
    if let Some(d) = &p.display_name {
        return d == nick;
    }
    match (&p.first_name, &p.last_name) {
        (Some(f), Some(l)) => {
            nick.len() == f.len() + 1 + l.len()
                && nick.starts_with(f.as_str())
                && nick.ends_with(l.as_str())
                && nick.as_bytes()[f.len()] == b' '
        }
        (Some(n), None) | (None, Some(n)) => n == nick,
        (None, None) => nickname(p) == nick,
    }
}

/// Whether a person named neither by the event nor by the directory (a Slack reaction, a bare id) is shown as
/// profile `old`, the chat's latest of them: unless the username says it is another look now. An appearance
/// without names is not a rename.
fn shows_as(old: &Profile, p: &Person) -> bool {
    !has_name(p) && old.is_bot == p.is_bot && p.username.as_deref().is_none_or(|u| old.username.as_deref() == Some(u))
}

/// Who spoke when the event did not say: a system note, or the bot reacting.
#[derive(Clone, Copy)]
pub(crate) enum Anonymous {
    System,
    Bot,
}

impl People {
    /// The profile index for `p` as it looks now, adding a profile when the person is new or changed, and
    /// whether the person was known before (had a profile under their user id). A person without names of
    /// their own gets the directory's (`dir`).
    pub(crate) fn intern(&mut self, channel: &str, p: &Person, dir: View<'_>) -> (u32, bool) {
        let own_name = has_name(p);
        let shown;
        let p = if own_name || dir.is_empty() {
            p
        } else {
            shown = as_shown(p, dir);
            &shown
        };
        let seen = self.by_user.get(p.user_id.as_str()).copied();
        if let Some(i) = seen {
            // The same look, or no names to make another one.
            let old = &self.profiles[i as usize];
            let same = old.username.as_deref() == p.username.as_deref()
                && old.is_bot == p.is_bot
                && old.own_name == own_name
                && nickname_is(p, &old.nickname);
            if same || shows_as(old, p) {
                return (i, true);
            }
        }
        let nick = nickname(p);
        let profile = Profile {
            display_ref: display_ref(channel, &nick, p.username.as_deref(), &p.user_id).into(),
            user_id: p.user_id.as_str().into(),
            username: p.username.as_deref().map(Into::into),
            nickname: nick.into(),
            is_bot: p.is_bot,
            own_name,
        };
        (self.push(profile), seen.is_some())
    }

    /// How a person the message shows without making them a speaker (a quote's author) reads: as a speaker would,
    /// by their own names, else the directory's, else the name the chat last showed them by, else the fallback.
    pub(crate) fn shown_ref(&self, channel: &str, p: &Person, dir: View<'_>) -> String {
        if has_name(p) || p.user_id.is_empty() {
            return person_ref(channel, p);
        }
        let shown = as_shown(p, dir);
        if has_name(&shown) {
            return person_ref(channel, &shown);
        }
        match self.by_user.get(p.user_id.as_str()).map(|&i| &self.profiles[i as usize]) {
            Some(old) if shows_as(old, p) => old.display_ref.to_string(),
            _ => person_ref(channel, p),
        }
    }

    /// Shows the directory's `known` names on the person's latest profile, when that profile has no names of its
    /// own: the old and new reference when it changed (items holding the old one are rewritten by the caller).
    pub(crate) fn learn(&mut self, channel: &str, known: &Person) -> Option<(Box<str>, Box<str>)> {
        let &i = self.by_user.get(known.user_id.as_str())?;
        let old = &self.profiles[i as usize];
        if old.own_name {
            return None;
        }
        let base = Person {
            user_id: known.user_id.clone(),
            username: old.username.as_deref().map(str::to_owned),
            is_bot: old.is_bot,
            ..Person::default()
        };
        let shown = with_names(&base, known);
        let nick = nickname(&shown);
        self.rename(channel, i, nick, shown.username)
    }

    /// Gives profile `i` another nickname (and username): the old and new reference when that changed it.
    fn rename(
        &mut self,
        channel: &str,
        i: u32,
        nick: String,
        username: Option<String>,
    ) -> Option<(Box<str>, Box<str>)> {
        let p = &self.profiles[i as usize];
        let new_ref: Box<str> = display_ref(channel, &nick, username.as_deref(), &p.user_id).into();
        if *new_ref == *p.display_ref {
            return None;
        }
        if !p.nickname.contains(char::is_whitespace) {
            let key = p.nickname.to_lowercase();
            if self.by_nick.get(key.as_str()) == Some(&i) {
                self.by_nick.remove(key.as_str());
            }
        }
        if !nick.contains(char::is_whitespace) && !p.user_id.is_empty() {
            self.by_nick.insert(nick.to_lowercase().into(), i);
        }
        let p = &mut self.profiles[i as usize];
        p.username = username.map(Into::into);
        p.nickname = nick.into();
        let old_ref = std::mem::replace(&mut p.display_ref, Arc::from(&*new_ref));
        Some((Box::from(&*old_ref), new_ref))
    }

    /// When a message names its speaker for the first time (profile `named`, with names of their own), the same
    /// person's profiles without names (speakers known only by id, before) take that name: every reference to the
    /// person then reads the same. The references that changed, old and new.
    pub(crate) fn adopt(&mut self, channel: &str, named: u32) -> Vec<(Box<str>, Box<str>)> {
        let Some(n) = self.profiles.get(named as usize).filter(|p| p.own_name && !p.user_id.is_empty()) else {
            return Vec::new();
        };
        let (user, nick, username) =
            (n.user_id.clone(), n.nickname.to_string(), n.username.as_deref().map(str::to_owned));
        let Some(unnamed) = self.unnamed.get(&*user) else { return Vec::new() };
        let unnamed: Vec<u32> = unnamed.iter().copied().filter(|&j| j != named).collect();
        unnamed.into_iter().filter_map(|j| self.rename(channel, j, nick.clone(), username.clone())).collect()
    }

    /// Whether the person's latest profile carries names of their own (the directory does not rename them).
    pub(crate) fn has_own_name(&self, user_id: &str) -> bool {
        self.by_user.get(user_id).is_some_and(|&i| self.profiles[i as usize].own_name)
    }

    fn push(&mut self, profile: Profile) -> u32 {
        let idx = u32::try_from(self.profiles.len()).unwrap_or(u32::MAX);
        if !profile.user_id.is_empty() {
            self.by_user.insert(profile.user_id.clone(), idx);
        }
        if let Some(u) = &profile.username {
            self.by_username.insert(u.to_ascii_lowercase().into(), idx);
        }
        if !profile.user_id.is_empty() && !profile.nickname.contains(char::is_whitespace) {
            self.by_nick.insert(profile.nickname.to_lowercase().into(), idx);
        }
        if !profile.user_id.is_empty() && !profile.own_name {
            self.unnamed.entry(profile.user_id.clone()).or_default().push(idx);
        }
        self.profiles.push(profile);
        idx
    }

    /// How many profiles are held.
    pub(crate) fn len(&self) -> usize {
        self.profiles.len()
    }

    /// Keeps the profiles `used` marks, in order; returns each old index's new one (`u32::MAX` for dropped).
    /// The lookups are rebuilt as pushing the kept profiles in order would make them.
    pub(super) fn retain(&mut self, used: &[bool]) -> Vec<u32> {
        let roles: Vec<(Arc<str>, u32)> =
            self.by_user.iter().filter(|(k, _)| k.starts_with('\u{0}')).map(|(k, v)| (k.clone(), *v)).collect();
        let old = std::mem::take(&mut self.profiles);
        self.by_user.clear();
        self.by_username.clear();
        self.by_nick.clear();
        self.unnamed.clear();
        let mut remap = vec![u32::MAX; old.len()];
        for (i, p) in old.into_iter().enumerate() {
            if used.get(i).copied().unwrap_or(false) {
                remap[i] = self.push(p);
            }
        }
        for (role, i) in roles {
            if let Some(&new) = remap.get(i as usize).filter(|n| **n != u32::MAX) {
                self.by_user.insert(role, new);
            }
        }
        remap
    }

    /// The profile for a speaker the event did not name.
    pub(crate) fn anonymous(&mut self, who: Anonymous) -> u32 {
        let (key, nick, is_bot) = match who {
            Anonymous::System => ("\u{0}system", "system", false),
            Anonymous::Bot => ("\u{0}bot", "assistant", true),
        };
        if let Some(&i) = self.by_user.get(key) {
            return i;
        }
        let idx = self.push(Profile {
            user_id: "".into(),
            username: None,
            nickname: nick.into(),
            is_bot,
            display_ref: nick.into(),
            own_name: true,
        });
        self.by_user.insert(key.into(), idx);
        idx
    }

    /// Every profile in order, with the anonymous role (`system`, `bot`) of the placeholder ones.
    pub(crate) fn export(&self) -> Vec<PersonDoc> {
        let role = |i: u32| {
            ["system", "bot"]
                .into_iter()
                .find(|r| self.by_user.get(format!("\u{0}{r}").as_str()) == Some(&i))
                .map(str::to_owned)
        };
        self.profiles
            .iter()
            .enumerate()
            .map(|(i, p)| PersonDoc {
                user_id: p.user_id.to_string(),
                username: p.username.as_deref().map(str::to_owned),
                nickname: p.nickname.to_string(),
                is_bot: p.is_bot,
                display_ref: p.display_ref.to_string(),
                anonymous: role(u32::try_from(i).unwrap_or(u32::MAX)),
                directory_name: !p.own_name && !is_fallback(&p.nickname, p.username.as_deref(), &p.user_id),
            })
            .collect()
    }

    /// Adds a profile exactly as exported.
    pub(crate) fn import(&mut self, d: &PersonDoc) {
        let idx = self.push(Profile {
            user_id: d.user_id.as_str().into(),
            username: d.username.as_deref().map(Into::into),
            nickname: d.nickname.as_str().into(),
            is_bot: d.is_bot,
            display_ref: d.display_ref.as_str().into(),
            own_name: d.anonymous.is_some()
                || !(d.directory_name || is_fallback(&d.nickname, d.username.as_deref(), &d.user_id)),
        });
        if let Some(role) = &d.anonymous {
            self.by_user.insert(format!("\u{0}{role}").into(), idx);
        }
    }

    /// The member with `username` (case-insensitive), else with that one-word nickname (any case), if seen:
    /// their current nickname, username as the platform spells it, and id.
    pub(crate) fn known(&self, username: &str) -> Option<crate::mention::KnownPerson<'_>> {
        if let Some(id) = username.strip_prefix('#') {
            return self.by_user.get(id).map(|&i| self.known_at(i));
        }
        let key = username.to_ascii_lowercase();
        let idx = match self.by_username.get(key.as_str()) {
            Some(&i) => i,
            None => *self.by_nick.get(username.to_lowercase().as_str())?,
        };
        Some(self.known_at(idx))
    }

    fn known_at(&self, idx: u32) -> crate::mention::KnownPerson<'_> {
        let p = &self.profiles[idx as usize];
        crate::mention::KnownPerson {
            nickname: (&*p.nickname).into(),
            username: p.username.as_deref(),
            user_id: &p.user_id,
            shown: Some(&p.display_ref),
        }
    }

    /// The username of a profile, if it has one.
    pub(crate) fn username(&self, idx: u32) -> Option<&str> {
        self.profiles.get(idx as usize).and_then(|p| p.username.as_deref())
    }

    /// The user id of a profile (none for anonymous speakers).
    pub(crate) fn user_id(&self, idx: u32) -> Option<&str> {
        self.user_id_shared(idx).map(|u| &**u)
    }

    /// [`People::user_id`], shared.
    pub(crate) fn user_id_shared(&self, idx: u32) -> Option<&Arc<str>> {
        self.profiles.get(idx as usize).map(|p| &p.user_id).filter(|u| !u.is_empty())
    }

    /// [`People::display_ref`], shared: a count on the profile's string, not a copy (an object's `author`, a
    /// descriptor's).
    pub(crate) fn display_ref_arc(&self, idx: u32) -> Arc<str> {
        self.profiles.get(idx as usize).map_or_else(|| "unknown".into(), |p| p.display_ref.clone())
    }

    /// The name a profile shows (`unknown` for none).
    pub(crate) fn nickname(&self, idx: u32) -> &str {
        self.profiles.get(idx as usize).map_or("unknown", |p| &p.nickname)
    }

    /// The display reference of a profile.
    pub(crate) fn display_ref(&self, idx: u32) -> &str {
        self.profiles.get(idx as usize).map_or("unknown", |p| &p.display_ref)
    }

    pub(super) fn sender(&self, idx: u32) -> Sender {
        self.sender_view(idx).to_owned()
    }

    /// A profile as an answer's speaker, borrowed.
    pub(crate) fn sender_view(&self, idx: u32) -> SenderView<'_> {
        self.profiles.get(idx as usize).map_or(SenderView::UNKNOWN, |p| SenderView {
            user_id: &p.user_id,
            username: p.username.as_deref(),
            nickname: &p.nickname,
            is_bot: p.is_bot,
            display_ref: &p.display_ref,
        })
    }
}

/// One speaker profile.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonDoc {
    /// Platform user id (empty for placeholders).
    pub user_id: String,
    /// Username.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Nickname.
    pub nickname: String,
    /// A bot account.
    pub is_bot: bool,
    /// The reference.
    pub display_ref: String,
    /// `system` or `bot` for the placeholder speakers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anonymous: Option<String>,
    /// The nickname is the people directory's, not the message's own (so a later directory name replaces it).
    /// A nickname that is only `@username` or `user ID` is taken as the directory's without it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub directory_name: bool,
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    #[test]
    fn renamed_people_get_a_new_profile_and_old_items_keep_theirs() {
        let mut people = People::default();
        let mut p = Person {
            user_id: "1".into(),
            username: Some("Bob".into()),
            first_name: Some("Bob".into()),
            ..Person::default()
        };
        let (a, seen) = people.intern("telegram", &p, View::default());
        assert!(!seen, "a new person was not known");
        assert_eq!(people.intern("telegram", &p, View::default()), (a, true), "unchanged person, same profile");
        p.first_name = Some("Robert".into());
        let (b, seen) = people.intern("telegram", &p, View::default());
        assert!(seen, "a renamed person was known");
        assert_ne!(a, b);
        assert_eq!(people.sender(a).nickname, "Bob");
        assert_eq!(people.sender(b).display_ref, "[Robert](tg:@Bob)");
        let k = people.known("bob").unwrap();
        assert_eq!(
            (&*k.nickname, k.username),
            ("Robert", Some("Bob")),
            "usernames match case-insensitively; the platform's spelling is kept"
        );
        assert_eq!(people.known("ROBERT").map(|k| k.user_id), Some("1"), "a one-word nickname, any case");
        assert_eq!(people.known("nobody"), None);
    }
}
