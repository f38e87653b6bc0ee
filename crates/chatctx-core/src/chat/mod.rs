//! The state of one chat: the people seen in it, its conversations (one per forum topic) with their items in
//! time order, the message index, and its objects. Nothing here is ever shared between chats.
//!
//! - [`people`]: the speakers of a chat, each as they looked when they spoke.
//! - [`summaries`]: where a conversation's summary sits and what it covers.
//! - [`titles`]: the names people see for the chat and its topics.

mod items;
mod messages;
mod people;
mod summaries;
mod titles;
mod views;

pub use people::PersonDoc;
pub(crate) use people::{Anonymous, People};
pub(crate) use summaries::{in_scope, slot};

use std::borrow::Cow;
use std::sync::Arc;

use hashbrown::HashMap;

pub(crate) use items::Items;

use crate::history::markdown_block;
use crate::kinds::{ItemKind, Origin};
use crate::objects::Objects;
use crate::render::ItemLine;
use crate::settings::Mode;
use crate::time::Timestamp;

/// Position of an item: time first, then arrival. Unique within a chat.
pub(crate) type Key = (Timestamp, u64);

/// One stored history item. Kept small: the speaker is an index into the chat's profiles.
#[derive(Debug)]
pub(crate) struct Item {
    pub(crate) seq: u64,
    pub(crate) sent_at: Timestamp,
    pub(crate) sender: u32,
    pub(crate) kind: ItemKind,
    /// Background items (`scheduled`, …) leave interactive context in selection.
    pub(crate) origin: Origin,
    pub(crate) triggered: bool,
    /// Estimated tokens of the rendered item, computed once at ingest.
    pub(crate) tokens: u32,
    /// Shared with the message index, so the id is stored once.
    pub(crate) message_id: Option<Arc<str>>,
    pub(crate) reply_to: Option<Box<str>>,
    pub(crate) text: Box<str>,
    /// Whether `text` may hold a person reference ([`may_refer`]), so that a rename passes over the others.
    pub(crate) refs: bool,
    /// Whether a registered object may name this message as its source; when false none does, so that neither
    /// resolve (for every message it passes) nor an eviction ([`let_go`]) looks its id up among the objects'
    /// sources (most messages carry none). Set by whoever stores the message, to whether objects name it then (a
    /// message event: its own objects, or others' that named it before it came; an imported history: none yet,
    /// its objects come after it), and by [`Chat::register`] when an object naming it comes later; left set when
    /// such an object goes (a needless look is harmless).
    pub(crate) objects: bool,
    /// Quote and actions, which few items have, boxed together to keep every item small.
    pub(crate) extra: Option<Box<Extra>>,
}

// A million stored messages may be held: the flags sit in what was padding (88 bytes before `objects` too).
const _: () = assert!(std::mem::size_of::<Item>() <= 88);

/// Whether `text` may hold a person reference: every reference of someone with an id or a username
/// (`[label](scheme:…)`, see `crate::people::display_ref`) has `](`.
/// A text without it holds none, so [`Chat::rewrite`] need not search it.
pub(crate) fn may_refer(text: &str) -> bool {
    text.contains("](")
}

/// Lets go of an item that leaves the chat (evicted for room or age, or its conversation recycled): its id leaves
/// the index, and the objects derived from it alone go with it. Only a message that objects name ([`Item::objects`])
/// is looked up among their sources: most messages are named by none, and the look was ~170 instructions.
fn let_go(index: &mut HashMap<Arc<str>, Loc>, objects: &mut Objects, item: &Item) {
    if let Some(id) = &item.message_id {
        let held = index.remove(&Held(id));
        debug_assert!(held.is_some(), "message {id} left the index before its item");
        debug_assert!(item.objects || objects.of_source(id).next().is_none(), "message {id} has objects");
        if item.objects {
            objects.evict_derived(id);
        }
    }
}

/// A stored message's own id as a key of the chat's index, which holds the same shared string: told equal by
/// address before by bytes. (The index keeps the string an id was first stored under: when an imported document
/// repeats an id, the copy kept holds a string of its own, and the bytes decide.) −28 instructions an eviction.
struct Held<'a>(&'a Arc<str>);

impl std::hash::Hash for Held<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (**self.0).hash(h);
    }
}

impl hashbrown::Equivalent<Arc<str>> for Held<'_> {
    fn equivalent(&self, key: &Arc<str>) -> bool {
        Arc::ptr_eq(self.0, key) || **self.0 == **key
    }
}

/// The rarely present parts of an item.
#[derive(Debug, Default)]
pub(crate) struct Extra {
    /// `(sender_ref, text)` of a quote.
    pub(crate) quote: Option<(Box<str>, Box<str>)>,
    /// The bot's actions for this reply.
    pub(crate) actions: Vec<String>,
}

impl Extra {
    /// `None` when there is nothing to keep.
    pub(crate) fn boxed(quote: Option<(Box<str>, Box<str>)>, actions: Vec<String>) -> Option<Box<Self>> {
        (quote.is_some() || !actions.is_empty()).then(|| Box::new(Self { quote, actions }))
    }
}

impl Item {
    pub(crate) fn key(&self) -> Key {
        (self.sent_at, self.seq)
    }

    /// Where a bot reply is cut to keep `cut` characters (0 = no cut); `None` for anything else.
    pub(crate) fn reply_cut(&self, cut: usize) -> Option<usize> {
        if cut == 0 || !is_bot_reply(self.kind) {
            return None;
        }
        crate::render::cut_at(&self.text, cut)
    }

    /// Whether the write policy of `mode` records this item for the prompt (docs/protocol.md §5.3). The bot's outputs
    /// always count; inbound messages, reactions and system notes count in `talkative`, and otherwise only
    /// when they triggered the bot.
    pub(crate) fn eligible(&self, mode: Mode) -> bool {
        self.kind.is_outbound() || mode == Mode::Talkative || (self.triggered && self.kind != ItemKind::InboundReaction)
    }
}

/// The items of one topic (or of a chat without topics), oldest first.
#[derive(Debug, Default)]
pub(crate) struct Conv {
    pub(crate) topic: Option<Arc<str>>,
    /// The topic's title (a forum topic's name, a thread's), when the platform said it.
    pub(crate) title: Option<Box<str>>,
    pub(crate) items: Items,
    /// The newest item that left this conversation's store (not by an edit), and what made it leave: range
    /// reads that reach back past it say they were truncated.
    pub(crate) lost: Option<(Key, Lost)>,
}

/// What made an item leave the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Lost {
    /// `conversation.cache_max_per_conversation` evicted the oldest.
    Cap,
    /// Retention (`store.max_age`).
    MaxAge,
}

impl Lost {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Lost::Cap => "cache_max_per_conversation",
            Lost::MaxAge => "max_age",
        }
    }
}

impl Conv {
    pub(crate) fn find(&self, key: Key) -> Option<usize> {
        self.items.binary_search_by_key(&key, Item::key).ok()
    }

    /// Items strictly before `key`, oldest first.
    pub(crate) fn before(&self, key: Option<Key>) -> impl DoubleEndedIterator<Item = &Item> {
        self.items.range(..self.end_before(key))
    }

    /// [`Conv::before`] as two slices, the older first.
    pub(crate) fn before_slices(&self, key: Option<Key>) -> (&[Item], &[Item]) {
        let end = self.end_before(key);
        let (a, b) = self.items.as_slices();
        if end <= a.len() { (&a[..end], &[]) } else { (a, &b[..end - a.len()]) }
    }

    /// Items strictly after `floor` (all without one), oldest first.
    pub(crate) fn after(&self, floor: Option<Key>) -> impl DoubleEndedIterator<Item = &Item> {
        self.items.range(floor.map_or(0, |f| self.items.partition_point(|i| i.key() <= f))..)
    }

    /// Where the items strictly before `key` end (all without one).
    pub(crate) fn end_before(&self, key: Option<Key>) -> usize {
        key.map_or(self.items.len(), |k| self.items.partition_point(|i| i.key() < k))
    }
}

/// See [`Chat::request_scope`].
pub(crate) struct RequestScope<'a> {
    pub(crate) current: Option<&'a Item>,
    pub(crate) topic: Option<&'a str>,
    pub(crate) reply_target: Option<&'a str>,
}

/// Where a message lives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Loc {
    pub(crate) conv: u32,
    pub(crate) key: Key,
}

/// One chat.
#[derive(Debug, Default)]
pub(crate) struct Chat {
    pub(crate) chat_type: Option<Box<str>>,
    /// The chat's title (a group's title, a channel's name), when the platform said it.
    pub(crate) title: Option<Box<str>>,
    /// The workspace (Slack team, Discord guild) whose people directory names this chat's people; `None`: the
    /// channel's own directory.
    pub(crate) workspace: Option<Box<str>>,
    /// Mentions in stored texts of people the chat has no named profile for, by `#user_id` or `@username`
    /// (lowercased), with the reference the texts hold: a name the directory learns later replaces it.
    pub(crate) mentions: std::collections::BTreeMap<Box<str>, Box<str>>,
    pub(crate) people: People,
    pub(crate) convs: Vec<Conv>,
    general: Option<u32>,
    topics: HashMap<Box<str>, u32>,
    pub(crate) index: HashMap<Arc<str>, Loc>,
    pub(crate) next_seq: u64,
    pub(crate) objects: Objects,
    /// Conversation state per topic (`None`: the chat's own).
    pub(crate) scenarios: std::collections::BTreeMap<Option<String>, crate::scenario::Scenario>,
    /// The summary of each conversation (`None`: the chat's general one, or the whole chat's when history
    /// is per chat).
    pub(crate) summaries: std::collections::BTreeMap<Option<String>, crate::summary::Summary>,
}

impl Chat {
    /// The workspace whose directory this chat reads (`""`: the channel's own).
    pub(crate) fn workspace(&self) -> &str {
        self.workspace.as_deref().unwrap_or_default()
    }

    /// Files the chat under the workspace a message names (a message that names none leaves it as it is).
    pub(crate) fn set_workspace(&mut self, workspace: Option<String>) {
        if let Some(w) = workspace
            && self.workspace.as_deref() != Some(w.as_str())
        {
            self.workspace = Some(w.into());
        }
    }

    /// Notes the references a new text holds for people mentioned in it, so that a name learned later replaces
    /// them; at most `max` are tracked.
    pub(crate) fn note_mentions(&mut self, refs: Vec<(String, String)>, max: usize) {
        for (key, r) in refs {
            if self.mentions.len() < max || self.mentions.contains_key(key.as_str()) {
                self.mentions.insert(key.into(), r.into());
            }
        }
    }

    /// Shows the directory's `known` names wherever this chat refers to that person by the directory (a speaker
    /// without names of their own, a mention): every stored text, quote and object author holding the old
    /// reference gets the new one.
    /// `tokens` estimates a rewritten item again.
    pub(crate) fn learn(&mut self, channel: &str, known: &crate::event::Person, tokens: fn(&Item) -> u32) {
        let mut swaps = Vec::new();
        swaps.extend(self.people.learn(channel, known));
        if !self.people.has_own_name(&known.user_id) {
            let nick = crate::people::nickname(known);
            let user = (known.user_id.as_str(), known.username.as_deref());
            let new_ref = |username: Option<&str>| crate::people::display_ref(channel, &nick, username, user.0);
            self.retarget_mentions(user, new_ref, &mut swaps);
        }
        self.rewrite(swaps, tokens);
    }

    /// When a message names its speaker (profile `named`) for the first time, what showed them by id (their
    /// earlier speaker profiles without names, the mentions of them) takes that name, so a prompt shows each
    /// person one way. Only a person `seen` before (with an earlier profile) has earlier profiles to rename: for
    /// someone new, the check of every profile is skipped.
    pub(crate) fn adopt(&mut self, channel: &str, named: u32, seen: bool, tokens: fn(&Item) -> u32) {
        let mut swaps = if seen { self.people.adopt(channel, named) } else { Vec::new() };
        if let Some(user_id) = self.people.user_id(named).map(str::to_owned) {
            let username = self.people.username(named).map(str::to_owned);
            let shown: String = self.people.display_ref(named).to_owned();
            self.retarget_mentions((&user_id, username.as_deref()), |_| shown.clone(), &mut swaps);
        }
        self.rewrite(swaps, tokens);
    }

    /// The tracked mentions of a person (`#user_id`, `@username`) take the reference `new_ref` makes (given the
    /// username the mention was typed with); each change is added to `swaps`.
    fn retarget_mentions(
        &mut self,
        (user_id, username): (&str, Option<&str>),
        new_ref: impl Fn(Option<&str>) -> String,
        swaps: &mut Vec<(Box<str>, Box<str>)>,
    ) {
        let keys = [Some(format!("#{user_id}")), username.map(|u| format!("@{}", u.to_lowercase()))];
        for key in keys.into_iter().flatten() {
            let Some(old) = self.mentions.get_mut(key.as_str()) else { continue };
            let new: Box<str> = new_ref(username.or_else(|| key.strip_prefix('@'))).into();
            if *old != new {
                swaps.push((std::mem::replace(old, new.clone()), new));
            }
        }
    }

    /// Replaces each reference `old` by its `new` in every stored text, quote and object author.
    fn rewrite(&mut self, swaps: Vec<(Box<str>, Box<str>)>, tokens: fn(&Item) -> u32) {
        for (old, new) in &swaps {
            let (old, new) = (&**old, &**new);
            // A reference is found only in texts that may hold one (always so for a person's reference).
            let anywhere = !may_refer(old);
            for item in self.convs.iter_mut().flat_map(|c| c.items.iter_mut()) {
                let mut changed = false;
                if (anywhere || item.refs) && item.text.contains(old) {
                    item.text = item.text.replace(old, new).into();
                    item.refs = may_refer(&item.text);
                    changed = true;
                }
                if let Some(q) = item.extra.as_mut().and_then(|x| x.quote.as_mut()).filter(|q| &*q.0 == old) {
                    q.0 = new.into();
                    changed = true;
                }
                if changed {
                    item.tokens = tokens(item);
                }
            }
            for o in self.objects.each_mut().filter(|o| o.author.as_deref() == Some(old)) {
                o.author = Some(new.into());
            }
        }
    }

    /// Makes room in the people table before a speaker is added: once it holds `max` profiles, those no kept
    /// item refers to (people whose items were evicted, the old names of renamed people) are dropped. Keyed on
    /// the table alone, so a replayed or imported chat drops the same profiles at the same moment.
    pub(crate) fn make_room_for_people(&mut self, max: usize) {
        if self.people.len() < max {
            return;
        }
        let mut used = vec![false; self.people.len()];
        for item in self.convs.iter().flat_map(|c| c.items.iter()) {
            if let Some(u) = used.get_mut(item.sender as usize) {
                *u = true;
            }
        }
        let remap = self.people.retain(&used);
        for item in self.convs.iter_mut().flat_map(|c| c.items.iter_mut()) {
            item.sender = remap.get(item.sender as usize).copied().unwrap_or(u32::MAX);
        }
    }

    /// The conversation of `topic`, created on first use. A chat holds at most `max_topics` topics: a new one
    /// past it takes the place of the least recently active (its items, state and summary go), so no client
    /// grows a chat without bound by naming new topics.
    pub(crate) fn conv_for(&mut self, topic: Option<&str>, max_topics: usize) -> u32 {
        if let Some(i) = self.conv_index(topic) {
            return i;
        }
        if let Some(t) = topic
            && self.topics.len() >= max_topics.max(1)
            && let Some(idx) = self.least_active_topic()
        {
            self.recycle(idx, t);
            return idx;
        }
        let idx = u32::try_from(self.convs.len()).unwrap_or(u32::MAX);
        self.convs.push(Conv { topic: topic.map(Into::into), title: None, items: Items::default(), lost: None });
        match topic {
            Some(t) => {
                self.topics.insert(t.into(), idx);
            }
            None => self.general = Some(idx),
        }
        idx
    }

    /// The topic conversation whose newest item is the oldest (an empty one first; ties to the earliest made).
    fn least_active_topic(&self) -> Option<u32> {
        self.topics.values().copied().min_by_key(|i| (self.convs[*i as usize].items.back().map(Item::key), *i))
    }

    /// Empties conversation `idx` (its items leave the message index, its derived objects, state and summary go)
    /// and gives it to `topic`.
    fn recycle(&mut self, idx: u32, topic: &str) {
        let conv = &mut self.convs[idx as usize];
        let old = conv.topic.replace(topic.into());
        for item in std::mem::take(&mut conv.items).into_items() {
            let_go(&mut self.index, &mut self.objects, &item);
        }
        conv.lost = None;
        conv.title = None;
        if let Some(old) = old {
            self.topics.remove(&*old);
            self.scenarios.remove(&Some(old.to_string()));
            self.summaries.remove(&Some(old.to_string()));
        }
        self.topics.insert(topic.into(), idx);
    }

    fn conv_index(&self, topic: Option<&str>) -> Option<u32> {
        match topic {
            Some(t) => self.topics.get(t).copied(),
            None => self.general,
        }
    }

    /// The conversation of `topic`, if any item was ever recorded in it.
    pub(crate) fn conv_of(&self, topic: Option<&str>) -> Option<&Conv> {
        self.conv_index(topic).and_then(|i| self.convs.get(i as usize))
    }

    /// Where a tool request stands: its current message (if stored), its topic (the request's, else the
    /// current message's) and its reply target (the request's, else the current message's).
    pub(crate) fn request_scope<'a>(
        &'a self,
        topic: Option<&'a str>,
        current: Option<&str>,
        reply_to: Option<&'a str>,
    ) -> RequestScope<'a> {
        let current = current.and_then(|id| self.message(id));
        RequestScope {
            topic: topic.or_else(|| current.and_then(|(conv, _)| conv.topic.as_deref())),
            reply_target: reply_to.or_else(|| current.and_then(|(_, it)| it.reply_to.as_deref())),
            current: current.map(|(_, it)| it),
        }
    }

    /// The reply chain from `start` upward: up to `depth` message ids, with the stored message when there
    /// is one (the chain continues only through stored messages).
    pub(crate) fn reply_chain<'a>(
        &'a self,
        start: Option<&'a str>,
        depth: usize,
    ) -> Vec<(&'a str, Option<(&'a Conv, &'a Item)>)> {
        let mut out = Vec::with_capacity(depth);
        let mut at = start;
        while let Some(mid) = at.filter(|_| out.len() < depth) {
            let stored = self.message(mid);
            out.push((mid, stored));
            at = stored.and_then(|(_, it)| it.reply_to.as_deref());
        }
        out
    }

    /// A stored item as rendering reads it, borrowed; a bot reply is cut to `cut` characters (0 = no cut).
    pub(crate) fn line<'a>(&'a self, item: &'a Item, cut: usize) -> ItemLine<'a> {
        let (text, cut) = match item.reply_cut(cut) {
            Some(at) => (&item.text[..at], true),
            None => (&*item.text, false),
        };
        let extra = item.extra.as_deref();
        ItemLine {
            kind: item.kind,
            sent_at: item.sent_at,
            sender: self.people.display_ref(item.sender),
            text,
            cut,
            quote: extra.and_then(|x| x.quote.as_ref()).map(|q| Cow::Owned(markdown_block(&q.0, &q.1))),
            actions: extra.map_or(&[], |x| &x.actions),
        }
    }
}

/// Whether an item is the bot's own message (for reply truncation).
pub(crate) fn is_bot_reply(kind: ItemKind) -> bool {
    kind == ItemKind::OutboundAgent
}
#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    fn plain(seq: u64) -> Item {
        Item {
            seq,
            sent_at: Timestamp::from_unix(1_000 + seq as i64).unwrap_or_default(),
            sender: 0,
            kind: ItemKind::InboundUser,
            origin: Origin::Interactive,
            triggered: false,
            tokens: 1,
            message_id: None,
            reply_to: None,
            text: "".into(),
            refs: false,
            objects: false,
            extra: None,
        }
    }

    #[test]
    fn the_counts_of_a_conversations_items_follow_every_change() {
        let mut items = Items::default();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let kinds = [ItemKind::InboundUser, ItemKind::InboundReaction, ItemKind::OutboundAgent, ItemKind::System];
        let origins = [Origin::Interactive, Origin::Interactive, Origin::Scheduled, Origin::Heartbeat];
        for seq in 0..4_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pick = |n: usize, shift: u32| (x >> shift) as usize % n;
            let item = Item {
                kind: kinds[pick(4, 8)],
                origin: origins[pick(4, 12)],
                triggered: pick(2, 16) == 0,
                ..plain(seq)
            };
            match pick(6, 20) {
                0 | 1 => items.push_back(item),
                2 => items.insert(pick(items.len() + 1, 24), item),
                3 => drop(items.pop_front()),
                4 => drop(items.remove(pick(items.len().max(1), 28))),
                _ => items.retain(|i| (i.seq + seq) % 5 != 0),
            }
            assert!(items.counts_hold(), "after step {seq}");
            let eligible = |mode| items.iter().all(|i| i.origin == Origin::Interactive && i.eligible(mode));
            for mode in [Mode::Talkative, Mode::Smart] {
                assert_eq!(items.all_eligible(mode), eligible(mode), "step {seq}, {mode:?}");
            }
        }
    }

    #[test]
    fn slices_before_a_key_are_the_items_before_it_even_when_the_ring_wraps() {
        let item = plain;
        let mut conv = Conv { topic: None, title: None, items: Items::default(), lost: None };
        for seq in 0..8 {
            conv.items.push_back(item(seq));
        }
        for seq in 8..13 {
            conv.items.pop_front();
            conv.items.push_back(item(seq));
        }
        assert!(!conv.items.as_slices().1.is_empty(), "the ring wraps");
        let keys = |it: &mut dyn Iterator<Item = &Item>| it.map(|i| i.seq).collect::<Vec<_>>();
        for before in [
            None,
            Some(conv.items[0].key()),
            Some(conv.items[3].key()),
            Some(conv.items[7].key()),
            Some((Timestamp::from_unix(5_000).unwrap_or_default(), 0)),
        ] {
            let (a, b) = conv.before_slices(before);
            assert_eq!(keys(&mut a.iter().chain(b)), keys(&mut conv.before(before)), "{before:?}");
        }
    }
}
