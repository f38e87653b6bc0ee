//! The engine: applies events to per-chat state and answers the tools. It owns no clock and does no I/O;
//! callers pass `now` and do the logging.
//!
//! - this file: the state, its chats and threads, and the reads of it;
//! - `apply`: applying events (`apply`, `apply_all`), one function per event type;
//! - `carry`: the objects a message carries (attachments, links) and the message's own candidate object;
//! - `transfer`: a chat exported as a conversation document, and imported from one;
//! - `view`: a chat's document with its history borrowed, for writing it out without copying it first;
//! - `directory`: people directories: their log keys, documents, and the chats that follow them.

mod apply;
mod carry;
mod directory;
pub mod glance;
mod titles;
mod transfer;
mod view;

pub(crate) use apply::item_tokens;
pub(crate) use carry::message_candidate;
pub use directory::{directory_log_key, directory_of_log_key};
pub use view::ConversationView;

use hashbrown::HashMap;

use crate::chat::{Chat, Item};
use crate::error::{Error, ErrorCode};
use crate::event::{Event, ObjectRef};
use crate::history::ChatHistoryItem;
use crate::objects::Object;
use crate::settings::{Scope, Settings};

/// What applying an event produced besides the state change.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Things that could not be applied in full, for the log (never message text).
    pub warnings: Vec<String>,
    /// Whether a stored message was replaced (an edit) or deleted: its earlier text is still in the store's log
    /// until the chat's log is compacted.
    pub edited: bool,
}

/// One chat, as `GET /v1/chats` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ChatOverview {
    /// The platform.
    pub channel: String,
    /// The chat id.
    pub chat_id: String,
    /// The chat's type as the platform names it (`supergroup`, …), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_type: Option<String>,
    /// The chat's title (a group's title, a channel's name), when the platform told it (docs/protocol.md §3.12).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The titles of its topics that the platform told, by topic id.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub topic_titles: std::collections::BTreeMap<String, String>,
    /// History items held.
    pub items: usize,
    /// The forum topics (threads) with history, sorted (the general thread is not listed).
    pub topics: Vec<String>,
    /// Objects held.
    pub objects: usize,
    /// People known.
    pub people: usize,
    /// When the newest item was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_at: Option<crate::time::Timestamp>,
}

/// `(channel, chat_id, object_id)` of an object known by a platform id.
type ExternalRef = (Box<str>, Box<str>, Box<str>);

/// The whole in-memory state: every chat, keyed by channel and chat id.
#[derive(Debug, Default)]
pub struct Engine {
    settings: Settings,
    chats: HashMap<String, HashMap<String, Chat>>,
    /// Platform object ids (Telegram poll ids) to (channel, chat, object). Telegram's `poll_answer` names only
    /// the poll, so it is routed here; the answer touches only that chat.
    external: HashMap<Box<str>, ExternalRef>,
    /// Model triage for history selection, when the caller installed one.
    triage: crate::selection::TriageSlot,
    /// Platform threads that are topics of a parent chat (`thread` events): (channel, thread id) → parent.
    threads: HashMap<(Box<str>, Box<str>), Box<str>>,
    /// The people directory of each workspace (`person` events).
    pub(crate) directories: crate::directory::Directories,
}

impl Engine {
    /// An empty engine.
    pub fn new(settings: Settings) -> Self {
        Self { settings, ..Self::default() }
    }

    /// Installs model triage for history selection (docs/protocol.md §6.3). Without one, triage fails open.
    pub fn set_triage(&mut self, triage: Box<dyn crate::selection::Triage>) {
        self.triage = crate::selection::TriageSlot(Some(triage));
    }

    pub(crate) fn triage(&self) -> Option<&dyn crate::selection::Triage> {
        self.triage.0.as_deref()
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub(crate) fn chat(&self, channel: &str, chat_id: &str) -> Option<&Chat> {
        self.chats.get(channel)?.get(chat_id)
    }

    fn chat_mut(&mut self, channel: &str, chat_id: &str) -> &mut Chat {
        slot(slot(&mut self.chats, channel), chat_id)
    }

    /// The settings and one chat that exists, borrowed together (none is made).
    pub(crate) fn with_known_chat(&mut self, channel: &str, chat_id: &str) -> Option<(&Settings, &mut Chat)> {
        let chat = self.chats.get_mut(channel)?.get_mut(chat_id)?;
        Some((&self.settings, chat))
    }

    /// The settings and one chat, borrowed together.
    pub(crate) fn with_chat(&mut self, channel: &str, chat_id: &str) -> (&Settings, &mut Chat) {
        (&self.settings, slot(slot(&mut self.chats, channel), chat_id))
    }

    /// The settings, the people directories and one chat, borrowed together.
    pub(crate) fn with_chat_dir(
        &mut self,
        channel: &str,
        chat_id: &str,
    ) -> (&Settings, &crate::directory::Directories, &mut Chat) {
        (&self.settings, &self.directories, slot(slot(&mut self.chats, channel), chat_id))
    }

    /// Puts `chat` in place of whatever was held for (channel, chat_id), with its platform object ids.
    pub(crate) fn replace_chat(&mut self, channel: &str, chat_id: &str, chat: Chat, externals: Vec<(String, String)>) {
        self.external.retain(|_, (ch, c, _)| !(&**ch == channel && &**c == chat_id));
        // The chat's threads, and the chat's own place as a thread, go with it.
        self.threads
            .retain(|(ch, thread), parent| !(&**ch == channel && (&**parent == chat_id || &**thread == chat_id)));
        for (ext, id) in externals {
            self.external.insert(ext.into(), (channel.into(), chat_id.into(), id.into()));
        }
        *self.chat_mut(channel, chat_id) = chat;
    }

    /// Forgets a chat completely: history, people, objects, state, its threads. Whether it was held. Its
    /// workspace's people directory stays: see [`Engine::orphaned_workspace`].
    pub fn remove_chat(&mut self, channel: &str, chat_id: &str) -> bool {
        self.external.retain(|_, (ch, c, _)| !(&**ch == channel && &**c == chat_id));
        // The chat's threads, and the chat's own place as a thread, go with it.
        self.threads
            .retain(|(ch, thread), parent| !(&**ch == channel && (&**parent == chat_id || &**thread == chat_id)));
        self.chats.get_mut(channel).is_some_and(|chats| chats.remove(chat_id).is_some())
    }

    /// Retention by age: drops every history item sent before `cutoff` (with the objects derived from those
    /// messages) in every chat. Returns the chats that changed, sorted, with how many items each lost.
    /// People, explicit objects (which expire by their TTLs) and conversation state stay.
    pub fn drop_before(&mut self, cutoff: crate::time::Timestamp) -> Vec<(String, String, usize)> {
        let mut changed = Vec::new();
        for (channel, chats) in &mut self.chats {
            for (chat_id, chat) in chats.iter_mut() {
                let n = chat.drop_before(cutoff);
                if n > 0 {
                    changed.push((channel.clone(), chat_id.clone(), n));
                }
            }
        }
        changed.sort();
        changed
    }

    /// Retention by age in one chat: as [`Engine::drop_before`]; how many items it lost.
    pub fn drop_chat_before(&mut self, channel: &str, chat_id: &str, cutoff: crate::time::Timestamp) -> usize {
        self.chats.get_mut(channel).and_then(|c| c.get_mut(chat_id)).map_or(0, |c| c.drop_before(cutoff))
    }

    /// Every chat held, as `(channel, chat_id)`, sorted.
    pub fn chat_keys(&self) -> Vec<(String, String)> {
        let mut keys: Vec<_> =
            self.chats.iter().flat_map(|(ch, chats)| chats.keys().map(|c| (ch.clone(), c.clone()))).collect();
        keys.sort();
        keys
    }

    /// Every chat's overview, sorted by channel and chat id.
    pub fn chat_overviews(&self) -> Vec<ChatOverview> {
        self.chat_overviews_page(&|_, _| true, None, usize::MAX).0
    }

    /// A page of the overviews of the chats `allowed` lets through, sorted by channel and chat id, after
    /// `after` (exclusive), at most `limit`; and whether more follow. Only the page's chats are looked into.
    pub fn chat_overviews_page(
        &self,
        allowed: &dyn Fn(&str, &str) -> bool,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> (Vec<ChatOverview>, bool) {
        let mut keys: Vec<(&str, &str)> = self
            .chats
            .iter()
            .flat_map(|(channel, chats)| chats.keys().map(move |c| (channel.as_str(), c.as_str())))
            .filter(|k| after.is_none_or(|a| *k > a) && allowed(k.0, k.1))
            .collect();
        keys.sort_unstable();
        let more = keys.len() > limit;
        keys.truncate(limit);
        let page = keys.into_iter().filter_map(|(channel, chat_id)| self.chat_overview(channel, chat_id)).collect();
        (page, more)
    }

    /// One chat's overview.
    pub fn chat_overview(&self, channel: &str, chat_id: &str) -> Option<ChatOverview> {
        let c = self.chat(channel, chat_id)?;
        let mut topics: Vec<String> = c.convs.iter().filter_map(|v| v.topic.as_deref().map(str::to_owned)).collect();
        topics.sort();
        Some(ChatOverview {
            channel: channel.to_owned(),
            chat_id: chat_id.to_owned(),
            chat_type: c.chat_type.as_deref().map(str::to_owned),
            title: c.title.as_deref().map(str::to_owned),
            topic_titles: c.topic_titles(),
            items: c.convs.iter().map(|v| v.items.len()).sum(),
            topics,
            objects: c.objects.len(),
            people: c.people.len(),
            last_at: c.convs.iter().filter_map(|v| v.items.back().map(|i| i.sent_at)).max(),
        })
    }

    /// Whether a platform id (a Telegram poll id) names an object this engine holds.
    pub fn knows_external(&self, external_id: &str) -> bool {
        self.external.contains_key(external_id)
    }

    /// Whether `chat_id` is the id of a known thread of another chat (its events are routed there).
    pub fn is_thread(&self, channel: &str, chat_id: &str) -> bool {
        self.thread_parent(channel, chat_id).is_some()
    }

    /// The parent chat of thread `chat_id`, if it is a known thread.
    fn thread_parent(&self, channel: &str, chat_id: &str) -> Option<&str> {
        if self.threads.is_empty() {
            return None;
        }
        self.threads.get(&(Box::from(channel), Box::from(chat_id))).map(|p| &**p)
    }

    /// The threads of a chat (their topic ids), sorted.
    pub(crate) fn threads_of(&self, channel: &str, chat_id: &str) -> Vec<String> {
        let mut t: Vec<String> = self
            .threads
            .iter()
            .filter(|((ch, _), parent)| &**ch == channel && &***parent == chat_id)
            .map(|((_, thread), _)| thread.to_string())
            .collect();
        t.sort();
        t
    }

    /// Registers `thread` as a topic of `parent` (what a `thread` event does).
    /// Why `thread` cannot become a thread of `parent` on `channel`, if it cannot: a chat with history of its
    /// own is never re-parented, nor a thread of another chat, and a thread has no threads. (The ingest
    /// boundary refuses such an event; applying one from a log skips it, so an old log still loads.)
    pub fn thread_conflict(&self, channel: &str, parent: &str, thread: &str) -> Option<String> {
        if let Some(p) = self.thread_parent(channel, parent) {
            return Some(format!("chat {parent:?} is itself a thread of chat {p:?}"));
        }
        if self.chat(channel, thread).is_some() {
            return Some(format!(
                "chat {thread:?} has history of its own: it cannot become a thread of chat {parent:?}"
            ));
        }
        match self.thread_parent(channel, thread) {
            Some(p) if p != parent => Some(format!("{thread:?} is already a thread of chat {p:?}")),
            _ => None,
        }
    }

    pub(crate) fn add_thread(&mut self, channel: &str, parent: &str, thread: &str) {
        self.threads.insert((channel.into(), thread.into()), parent.into());
    }

    /// Points an event at the chat it belongs to, so that it can be logged and shared with that chat: an
    /// activation that names a platform id (a Telegram `poll_answer`) at its chat and object, and a message,
    /// reaction or deletion addressed to a known thread's own id at the thread's parent chat, with the thread
    /// as its topic. Unknown platform ids are left as they are (applying them is a no-op with a warning).
    pub fn route(&self, event: &mut Event) {
        let (channel, chat, topic) = match event {
            Event::Message(m) => (&m.channel, &mut m.chat_id, Some(&mut m.topic_id)),
            Event::Reaction(r) => (&r.channel, &mut r.chat_id, Some(&mut r.topic_id)),
            Event::Delete(d) => (&d.channel, &mut d.chat_id, None),
            Event::Activation(a) => {
                if let ObjectRef::External { external_id } = &a.target
                    && let Some((channel, chat_id, object_id)) = self.external.get(external_id.as_str())
                {
                    a.channel = channel.to_string();
                    a.target = ObjectRef::Id { chat_id: chat_id.to_string(), object_id: object_id.to_string() };
                }
                return;
            }
            Event::Person(p) => {
                // A thread's id names its parent's workspace.
                if let Some(c) = p.chat_id.as_mut()
                    && let Some(parent) = self.thread_parent(&p.channel, c)
                {
                    *c = parent.to_owned();
                }
                return;
            }
            Event::Title(t) => (&t.channel, &mut t.chat_id, Some(&mut t.topic_id)),
            Event::Object(_) | Event::Thread(_) => return,
        };
        if let Some(parent) = self.thread_parent(channel, chat) {
            let thread = std::mem::replace(chat, parent.to_owned());
            if let Some(topic) = topic {
                *topic = Some(thread);
            }
        }
    }

    /// Number of objects held in all chats.
    pub fn object_count(&self) -> usize {
        self.chats.values().flat_map(HashMap::values).map(|c| c.objects.len()).sum()
    }

    /// Number of chats held.
    pub fn chat_count(&self) -> usize {
        self.chats.values().map(HashMap::len).sum()
    }

    /// The first stored message that objects name as their source without its knowing it (for tests: resolve
    /// skips the objects of a message whose item says it has none).
    #[doc(hidden)]
    pub fn unnoted_source(&self) -> Option<String> {
        self.chats.values().flat_map(HashMap::values).find_map(Chat::unnoted_source)
    }

    /// Every history item of a chat in one scope (`topic` under `history.scope = "topic"`), oldest first.
    pub fn history(&self, channel: &str, chat_id: &str, topic_id: Option<&str>) -> Result<Vec<ChatHistoryItem>, Error> {
        let chat = self.chat(channel, chat_id).ok_or_else(|| unknown_chat(chat_id))?;
        let mut items: Vec<&Item> = match self.settings.history.scope {
            Scope::Topic => chat.conv_of(topic_id).map(|c| c.items.iter().collect()).unwrap_or_default(),
            Scope::Chat => chat.convs.iter().flat_map(|c| c.items.iter()).collect(),
        };
        items.sort_by_key(|i| i.key());
        Ok(items.into_iter().map(|i| chat.view(channel, chat_id, i)).collect())
    }

    /// The objects of a chat, by id.
    pub fn objects(&self, channel: &str, chat_id: &str) -> Result<Vec<Object>, Error> {
        let chat = self.chat(channel, chat_id).ok_or_else(|| unknown_chat(chat_id))?;
        let mut v: Vec<Object> = chat.objects.iter().cloned().collect();
        v.sort_by(|a, b| a.object_id.cmp(&b.object_id));
        Ok(v)
    }

    /// The stored message `message_id` as a history item.
    pub fn message(&self, channel: &str, chat_id: &str, message_id: &str) -> Option<ChatHistoryItem> {
        let chat = self.chat(channel, chat_id)?;
        chat.message(message_id).map(|(_, i)| chat.view(channel, chat_id, i))
    }
}

/// The value under `key`, inserted as default when missing. A hit hashes once and allocates nothing.
fn slot<'m, V: Default>(map: &'m mut HashMap<String, V>, key: &str) -> &'m mut V {
    map.entry_ref(key).or_default()
}

pub(crate) fn unknown_chat(chat_id: &str) -> Error {
    Error::new(ErrorCode::UnknownChat, format!("no chat {chat_id:?} is known"))
}
