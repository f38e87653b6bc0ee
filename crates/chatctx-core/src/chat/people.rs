//! The people of one chat: a profile per look (a rename makes a new one; old items keep theirs), found by user
//! id, username and nickname.

use hashbrown::HashMap;

use crate::event::Person;
use crate::history::Sender;
use crate::people::{display_ref, nickname};

/// How a speaker looked when they spoke. A person's later renames make a new profile; old items keep theirs.
#[derive(Debug)]
pub(crate) struct Profile {
    user_id: Box<str>,
    username: Option<Box<str>>,
    nickname: Box<str>,
    is_bot: bool,
    display_ref: Box<str>,
}

/// The people of one chat.
#[derive(Debug, Default)]
pub(crate) struct People {
    profiles: Vec<Profile>,
    by_user: HashMap<Box<str>, u32>,
    by_username: HashMap<Box<str>, u32>,
    /// Lowercased one-word nicknames of real people (not the placeholders), for names typed without a
    /// mention entity (`alice: …`).
    by_nick: HashMap<Box<str>, u32>,
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

/// Who spoke when the event did not say: a system note, or the bot reacting.
#[derive(Clone, Copy)]
pub(crate) enum Anonymous {
    System,
    Bot,
}

impl People {
    /// The profile index for `p` as it looks now, adding a profile when the person is new or changed.
    pub(crate) fn intern(&mut self, channel: &str, p: &Person) -> u32 {
        if let Some(&i) = self.by_user.get(p.user_id.as_str()) {
            let old = &self.profiles[i as usize];
            if old.username.as_deref() == p.username.as_deref()
                && old.is_bot == p.is_bot
                && nickname_is(p, &old.nickname)
            {
                return i;
            }
        }
        let nick = nickname(p);
        let profile = Profile {
            display_ref: display_ref(channel, &nick, p.username.as_deref(), &p.user_id).into(),
            user_id: p.user_id.as_str().into(),
            username: p.username.as_deref().map(Into::into),
            nickname: nick.into(),
            is_bot: p.is_bot,
        };
        self.push(profile)
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
        let roles: Vec<(Box<str>, u32)> =
            self.by_user.iter().filter(|(k, _)| k.starts_with('\u{0}')).map(|(k, v)| (k.clone(), *v)).collect();
        let old = std::mem::take(&mut self.profiles);
        self.by_user.clear();
        self.by_username.clear();
        self.by_nick.clear();
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
        });
        if let Some(role) = &d.anonymous {
            self.by_user.insert(format!("\u{0}{role}").into(), idx);
        }
    }

    /// The member with `username` (case-insensitive), else with that one-word nickname (any case), if seen:
    /// their current nickname, username as the platform spells it, and id.
    pub(crate) fn known(&self, username: &str) -> Option<crate::mention::KnownPerson> {
        let key = username.to_ascii_lowercase();
        let idx = match self.by_username.get(key.as_str()) {
            Some(&i) => i,
            None => *self.by_nick.get(username.to_lowercase().as_str())?,
        };
        let p = &self.profiles[idx as usize];
        Some(crate::mention::KnownPerson {
            nickname: p.nickname.to_string(),
            username: p.username.as_deref().map(str::to_owned),
            user_id: p.user_id.to_string(),
        })
    }

    /// The username of a profile, if it has one.
    pub(crate) fn username(&self, idx: u32) -> Option<&str> {
        self.profiles.get(idx as usize).and_then(|p| p.username.as_deref())
    }

    /// The user id of a profile (none for anonymous speakers).
    pub(crate) fn user_id(&self, idx: u32) -> Option<&str> {
        self.profiles.get(idx as usize).map(|p| &*p.user_id).filter(|u| !u.is_empty())
    }

    /// The display reference of a profile.
    pub(crate) fn display_ref(&self, idx: u32) -> &str {
        self.profiles.get(idx as usize).map_or("unknown", |p| &p.display_ref)
    }

    pub(super) fn sender(&self, idx: u32) -> Sender {
        match self.profiles.get(idx as usize) {
            Some(p) => Sender {
                user_id: p.user_id.to_string(),
                username: p.username.as_deref().map(str::to_owned),
                nickname: p.nickname.to_string(),
                is_bot: p.is_bot,
                display_ref: p.display_ref.to_string(),
            },
            None => Sender {
                user_id: String::new(),
                username: None,
                nickname: "unknown".into(),
                is_bot: false,
                display_ref: "unknown".into(),
            },
        }
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
        let a = people.intern("telegram", &p);
        assert_eq!(people.intern("telegram", &p), a, "unchanged person, same profile");
        p.first_name = Some("Robert".into());
        let b = people.intern("telegram", &p);
        assert_ne!(a, b);
        assert_eq!(people.sender(a).nickname, "Bob");
        assert_eq!(people.sender(b).display_ref, "[Robert](tg:@Bob)");
        let k = people.known("bob").unwrap();
        assert_eq!(
            (k.nickname.as_str(), k.username.as_deref()),
            ("Robert", Some("Bob")),
            "usernames match case-insensitively; the platform's spelling is kept"
        );
        assert_eq!(people.known("ROBERT").map(|k| k.user_id), Some("1".to_owned()), "a one-word nickname, any case");
        assert_eq!(people.known("nobody"), None);
    }
}
