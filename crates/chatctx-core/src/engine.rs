//! The engine: applies events to per-chat state and answers the tools. It owns no clock and does no I/O;
//! callers pass `now` and do the logging.

use hashbrown::HashMap;

use crate::chat::{Anonymous, Chat, Extra, Item};
use crate::error::{Error, ErrorCode};
use crate::event::{
    ActivationEvent, DeleteEvent, Direction, Event, MessageEvent, MessageKind, ObjectEvent, ObjectOp, ObjectRef,
    ReactionEvent,
};
use crate::history::ChatHistoryItem;
use crate::kinds::{Activation, ItemKind, ObjectKind, Origin};
use crate::mention::{Normalized, address_leading, normalize, normalize_plain};
use crate::objects::{Object, short_label};
use crate::people::person_ref;
use crate::selection::estimate_tokens;
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

    /// The settings and one chat, borrowed together.
    pub(crate) fn with_chat(&mut self, channel: &str, chat_id: &str) -> (&Settings, &mut Chat) {
        (&self.settings, slot(slot(&mut self.chats, channel), chat_id))
    }

    /// Puts `chat` in place of whatever was held for (channel, chat_id), with its platform object ids.
    pub(crate) fn replace_chat(&mut self, channel: &str, chat_id: &str, chat: Chat, externals: Vec<(String, String)>) {
        self.external.retain(|_, (ch, c, _)| !(&**ch == channel && &**c == chat_id));
        self.threads.retain(|(ch, _), parent| !(&**ch == channel && &**parent == chat_id));
        for (ext, id) in externals {
            self.external.insert(ext.into(), (channel.into(), chat_id.into(), id.into()));
        }
        *self.chat_mut(channel, chat_id) = chat;
    }

    /// Forgets a chat completely: history, people, objects, state, its threads. Whether it was held.
    pub fn remove_chat(&mut self, channel: &str, chat_id: &str) -> bool {
        self.external.retain(|_, (ch, c, _)| !(&**ch == channel && &**c == chat_id));
        self.threads.retain(|(ch, _), parent| !(&**ch == channel && &**parent == chat_id));
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

    /// One line per chat held, sorted by channel and chat id, for listings (the console's chat list).
    pub fn chat_overviews(&self) -> Vec<ChatOverview> {
        let mut out: Vec<ChatOverview> = self
            .chats
            .iter()
            .flat_map(|(channel, chats)| {
                chats.iter().map(move |(chat_id, c)| ChatOverview {
                    channel: channel.clone(),
                    chat_id: chat_id.clone(),
                    chat_type: c.chat_type.as_deref().map(str::to_owned),
                    items: c.convs.iter().map(|v| v.items.len()).sum(),
                    topics: {
                        let mut t: Vec<String> =
                            c.convs.iter().filter_map(|v| v.topic.as_deref().map(str::to_owned)).collect();
                        t.sort();
                        t
                    },
                    objects: c.objects.len(),
                    people: c.people.len(),
                    last_at: c.convs.iter().filter_map(|v| v.items.back().map(|i| i.sent_at)).max(),
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.channel, &a.chat_id).cmp(&(&b.channel, &b.chat_id)));
        out
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

    /// Checks what only the current state can tell (an activation of an unknown object), so that a batch
    /// can be refused before any of it is applied.
    pub fn check(&self, event: &Event) -> Result<(), Error> {
        if let Event::Activation(ActivationEvent { channel, target: ObjectRef::Id { chat_id, object_id }, .. }) = event
        {
            let known = self
                .chat(channel, chat_id)
                .is_some_and(|c| c.objects.get(object_id).is_some() || message_candidate(c, object_id).is_some());
            if !known {
                return Err(Error::invalid_event(format!(
                    "field `object_id`: no object {object_id:?} in chat {chat_id}"
                )));
            }
        }
        Ok(())
    }

    /// Applies one validated event.
    pub fn apply(&mut self, event: Event) -> Result<Applied, Error> {
        self.check(&event)?;
        Ok(self.apply_checked(event))
    }

    /// Applies a batch all or nothing: every event is checked before any is applied.
    pub fn apply_all(&mut self, events: Vec<Event>) -> Result<Applied, Error> {
        for e in &events {
            self.check(e)?;
        }
        let mut out = Applied::default();
        for e in events {
            let one = self.apply_checked(e);
            out.warnings.extend(one.warnings);
            out.edited |= one.edited;
        }
        Ok(out)
    }

    fn apply_checked(&mut self, mut event: Event) -> Applied {
        let mut out = Applied::default();
        if !self.threads.is_empty() {
            self.route(&mut event);
        }
        match event {
            Event::Message(m) => self.apply_message(m, &mut out),
            Event::Reaction(r) => self.apply_reaction(r),
            Event::Object(o) => self.apply_object(o),
            Event::Activation(a) => self.apply_activation(a, &mut out),
            Event::Delete(d) => self.apply_delete(d, &mut out),
            Event::Thread(t) => {
                self.with_chat(&t.channel, &t.chat_id);
                self.add_thread(&t.channel, &t.chat_id, &t.topic_id);
            }
        }
        out
    }

    /// Removes deleted messages: their history items, the objects they carried (an object registered with one
    /// as its source stays, without the source and its caption), the reactions to them (which quote them), and
    /// their index entries. Counted as an edit, so that the text leaves the store's log with the next
    /// compaction. Ids not held are ignored; a chat not held is not created.
    fn apply_delete(&mut self, d: DeleteEvent, out: &mut Applied) {
        let Some(chat) = self.chats.get_mut(&d.channel).and_then(|c| c.get_mut(&d.chat_id)) else { return };
        let settings = &self.settings;
        let mut gone_externals = Vec::new();
        for id in &d.message_ids {
            let removed = chat.remove_message(id).is_some();
            let reactions = chat.remove_reactions_to(id);
            for obj in chat.objects.sourced_from(id) {
                let Some(mut o) = chat.objects.delete(&obj) else { continue };
                if crate::objects::is_derived(&o.object_id, id) {
                    gone_externals.extend(o.external_id.take());
                } else {
                    o.source_message_id = None;
                    o.caption = None;
                    chat.objects.upsert(o, settings.objects.max_per_chat, &settings.objects);
                }
            }
            out.edited |= removed || reactions > 0;
        }
        for ext in gone_externals {
            self.external.remove(ext.as_str());
        }
    }

    fn apply_message(&mut self, m: MessageEvent, out: &mut Applied) {
        let MessageEvent {
            channel,
            chat_id,
            chat_type,
            topic_id,
            message_id,
            reply_to_message_id,
            kind,
            sent_at,
            sender,
            text,
            entities,
            quote,
            attachments,
            origin,
            triggered_agent,
            actions,
            forwarded_from,
        } = m;
        let (settings, chat) = self.with_chat(&channel, &chat_id);
        let cap = settings.conversation.cache_max_per_conversation;
        let (max_objects, object_settings) = (settings.objects.max_per_chat, &settings.objects);
        chat.make_room_for_people(settings.conversation.max_people);
        if let Some(t) = chat_type
            && chat.chat_type.as_deref() != Some(t.as_str())
        {
            chat.chat_type = Some(t.into());
        }
        let sender_idx = match &sender {
            Some(p) => chat.people.intern(&channel, p),
            None => chat.people.anonymous(Anonymous::System),
        };
        // What an object of this message records of it: the first words (its caption) and who posted it. Only
        // a message that can carry objects (attachments, or links, which come from entities) pays for them.
        let carries = !attachments.is_empty() || !entities.is_empty();
        let caption = carries.then(|| crate::render::excerpt(&text, 200)).filter(|c| !c.is_empty());
        let author = (carries && kind != MessageKind::System).then(|| chat.people.display_ref(sender_idx).to_owned());
        let Normalized { text, links, warnings } =
            message_text(chat, &channel, text, &entities, &attachments, forwarded_from.as_deref());
        out.warnings.extend(warnings.into_iter().map(|w| format!("chat {chat_id} message {message_id}: {w}")));
        let item_kind = match kind {
            MessageKind::InboundUser => ItemKind::InboundUser,
            MessageKind::OutboundAgent => ItemKind::OutboundAgent,
            MessageKind::System => ItemKind::System,
        };
        let quote = quote.map(|q| {
            let sender_ref = q.sender.as_ref().map(|p| person_ref(&channel, p)).unwrap_or_default();
            (sender_ref.into_boxed_str(), q.text.into_boxed_str())
        });

        let carrier = Carrier {
            message_id: &message_id,
            topic_id: &topic_id,
            by_user: sender.as_ref().map(|p| p.user_id.clone()).filter(|u| !u.is_empty()),
            by_bot: kind == MessageKind::OutboundAgent,
            at: sent_at,
            caption,
            author,
        };
        let Carried { objects, activations, externals } = carrier.carried(attachments, &links);

        // An edit replaces the earlier copy in place: same position, same conversation.
        let (conv, seq, was_triggered) = match chat.remove_message(&message_id) {
            Some((conv, old)) => {
                out.edited = true;
                (conv, old.seq, old.triggered)
            }
            None => {
                let seq = chat.next_seq;
                chat.next_seq += 1;
                (chat.conv_for(topic_id.as_deref()), seq, false)
            }
        };
        let ids: Vec<String> = objects.iter().map(|o| o.object_id.clone()).collect();
        for gone in chat.objects.derived_not_in(&message_id, &ids) {
            chat.objects.delete(&gone);
        }
        for o in objects {
            chat.objects.upsert(o, max_objects, object_settings);
        }
        for (id, act) in activations {
            chat.objects.activate(&id, act, sent_at, Some(&message_id));
        }
        // A user replying to a message activates the typed objects it carries (docs/protocol.md §4, `replied_to`).
        if kind == MessageKind::InboundUser
            && let Some(parent) = &reply_to_message_id
        {
            for id in chat.objects.sourced_from(parent) {
                chat.objects.activate(&id, Activation::RepliedTo, sent_at, None);
            }
        }
        let tokens = item_tokens(&text, quote.as_ref(), &actions);
        let item = Item {
            seq,
            sent_at,
            sender: sender_idx,
            kind: item_kind,
            origin,
            triggered: triggered_agent || was_triggered,
            tokens,
            message_id: Some(message_id.into()),
            reply_to: reply_to_message_id.map(String::into_boxed_str),
            text: text.into_boxed_str(),
            extra: Extra::boxed(quote, actions),
        };
        chat.insert(conv, item, cap);
        for (ext, id) in externals {
            self.external.insert(ext.into(), (channel.as_str().into(), chat_id.as_str().into(), id.into()));
        }
    }

    fn apply_reaction(&mut self, r: ReactionEvent) {
        let cap = self.settings.conversation.cache_max_per_conversation;
        let max_people = self.settings.conversation.max_people;
        let chat = self.chat_mut(&r.channel, &r.chat_id);
        chat.make_room_for_people(max_people);
        let topic = match r.topic_id {
            Some(t) => Some(t),
            None => chat.message(&r.message_id).and_then(|(c, _)| c.topic.as_deref().map(str::to_owned)),
        };
        let (kind, sender) = match (r.direction, &r.sender) {
            (Direction::Inbound, Some(p)) => (ItemKind::InboundReaction, chat.people.intern(&r.channel, p)),
            (Direction::Inbound, None) => (ItemKind::InboundReaction, chat.people.anonymous(Anonymous::System)),
            (Direction::Outbound, Some(p)) => (ItemKind::OutboundReaction, chat.people.intern(&r.channel, p)),
            (Direction::Outbound, None) => (ItemKind::OutboundReaction, chat.people.anonymous(Anonymous::Bot)),
        };
        // The target as the model can use it: its author and a short excerpt (a bare id names nothing the
        // prompt shows); the id only when the message is not held.
        let target = chat.describe_message(&r.message_id).unwrap_or_else(|| format!("message {}", r.message_id));
        let text = if r.emoji.is_empty() {
            format!("removed their reaction to {target}")
        } else {
            format!("reacted {} to {target}", r.emoji.join(" "))
        };
        let conv = chat.conv_for(topic.as_deref());
        let seq = chat.next_seq;
        chat.next_seq += 1;
        let item = Item {
            seq,
            sent_at: r.sent_at,
            sender,
            kind,
            origin: Origin::Interactive,
            triggered: false,
            tokens: estimate_tokens(text.len()),
            message_id: None,
            reply_to: Some(r.message_id.into_boxed_str()),
            text: text.into_boxed_str(),
            extra: None,
        };
        chat.insert(conv, item, cap);
    }

    fn apply_object(&mut self, o: ObjectEvent) {
        let ObjectEvent { channel, op, at, object: spec, activation } = o;
        let (settings, chat) = self.with_chat(&channel, &spec.chat_id);
        if op == ObjectOp::Delete {
            if let Some(gone) = chat.objects.delete(&spec.object_id)
                && let Some(ext) = gone.external_id
            {
                self.external.remove(ext.as_str());
            }
            return;
        }
        let source = spec.source_message_id.clone().unwrap_or_default();
        let carrier = Carrier {
            message_id: &source,
            topic_id: &spec.topic_id,
            by_user: spec.created_by_user_id.clone(),
            by_bot: spec.created_by_bot,
            at,
            caption: None,
            author: None,
        };
        let mut obj = carrier.object(spec.object_id, spec.kind, spec.title_or_label.as_deref(), None);
        if spec.source_message_id.is_none() {
            obj.source_message_id = None;
        }
        let id = obj.object_id.clone();
        chat.objects.upsert(obj, settings.objects.max_per_chat, &settings.objects);
        if let Some(act) = activation {
            chat.objects.activate(&id, act, at, None);
        }
        if op == ObjectOp::Close {
            chat.objects.close(&id, at);
        }
    }

    fn apply_activation(&mut self, a: ActivationEvent, out: &mut Applied) {
        let (channel, chat_id, object_id) = match a.target {
            ObjectRef::Id { chat_id, object_id } => (a.channel, chat_id, object_id),
            ObjectRef::External { external_id } => match self.external.get(external_id.as_str()) {
                Some((ch, chat, obj)) => (ch.to_string(), chat.to_string(), obj.to_string()),
                None => {
                    out.warnings
                        .push(format!("activation {} for unknown external object {external_id}; ignored", a.event));
                    return;
                }
            },
        };
        let (settings, chat) = self.with_chat(&channel, &chat_id);
        if chat.objects.get(&object_id).is_none()
            && let Some(obj) = message_candidate(chat, &object_id)
        {
            chat.objects.upsert(obj, settings.objects.max_per_chat, &settings.objects);
        }
        chat.objects.activate(&object_id, a.event, a.at, a.message_id.as_deref());
        if a.close {
            chat.objects.close(&object_id, a.at);
        }
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

/// Estimated tokens of a rendered item: its text, a quote, the actions, and the speaker and time around them.
pub(crate) fn item_tokens(text: &str, quote: Option<&(Box<str>, Box<str>)>, actions: &[String]) -> u32 {
    let extra = quote.map_or(0, |q| q.0.len() + q.1.len()) + actions.iter().map(String::len).sum::<usize>();
    estimate_tokens(text.len() + extra + 40)
}

/// The value under `key`, inserted as default when missing. A hit hashes once and allocates nothing.
fn slot<'m, V: Default>(map: &'m mut HashMap<String, V>, key: &str) -> &'m mut V {
    map.entry_ref(key).or_default()
}

pub(crate) fn unknown_chat(chat_id: &str) -> Error {
    Error::new(ErrorCode::UnknownChat, format!("no chat {chat_id:?} is known"))
}

/// The `message` / `bot_message` candidate object of a stored message, for ids `"{message_id}:message"`.
pub(crate) fn message_candidate(chat: &Chat, object_id: &str) -> Option<Object> {
    let (mid, kind) = object_id.rsplit_once(':')?;
    let kind = ObjectKind::parse(kind).filter(|k| matches!(k, ObjectKind::Message | ObjectKind::BotMessage))?;
    let (conv, item) = chat.message(mid)?;
    let is_bot = item.kind == ItemKind::OutboundAgent;
    if is_bot != (kind == ObjectKind::BotMessage) {
        return None;
    }
    let label: String = item.text.chars().take(200).collect();
    let topic = conv.topic.as_deref().map(str::to_owned);
    let carrier = Carrier {
        message_id: mid,
        topic_id: &topic,
        by_user: None,
        by_bot: is_bot,
        at: item.sent_at,
        caption: None,
        author: Some(chat.people.display_ref(item.sender).to_owned()),
    };
    Some(carrier.object(object_id.to_owned(), kind, Some(&label), None))
}

/// The message that carries objects: what each object it carries records about its source.
struct Carrier<'a> {
    message_id: &'a str,
    topic_id: &'a Option<String>,
    by_user: Option<String>,
    by_bot: bool,
    at: crate::time::Timestamp,
    /// The message's first words, for its objects' `caption` (and their label when they have none).
    caption: Option<String>,
    /// Who posted it, as the prompt refers to them.
    author: Option<String>,
}

/// The objects a message carries, the activations they arrive with, and the platform ids they are known by.
struct Carried {
    objects: Vec<Object>,
    activations: Vec<(String, Activation)>,
    externals: Vec<(String, String)>,
}

impl Carrier<'_> {
    /// The objects of the message's attachments and links, with the derived ids of docs/protocol.md §3.6.
    fn carried(&self, attachments: Vec<crate::event::Attachment>, links: &[String]) -> Carried {
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
                0 => format!("{message_id}:{}", a.kind),
                k => format!("{message_id}:{}:{k}", a.kind),
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
            o.file = a.file;
            out.objects.push(o);
        }
        for (n, url) in links.iter().enumerate() {
            out.objects.push(self.object(format!("{message_id}:link:{n}"), ObjectKind::Link, Some(url), None));
        }
        out
    }

    fn object(&self, object_id: String, kind: ObjectKind, label: Option<&str>, external_id: Option<String>) -> Object {
        Object {
            object_id,
            kind,
            source_message_id: Some(self.message_id.to_owned()),
            topic_id: self.topic_id.clone(),
            title_or_label: label.map(short_label).filter(|l| !l.is_empty()),
            created_by_user_id: self.by_user.clone(),
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

/// A message's stored text and the links in it: mentions replaced by entity (or, off Telegram, by plain
/// `@username`), then one tag per attachment; and the warnings of a bad entity.
fn message_text(
    chat: &Chat,
    channel: &str,
    text: String,
    entities: &[crate::event::Entity],
    attachments: &[crate::event::Attachment],
    forwarded_from: Option<&str>,
) -> Normalized {
    let people = &chat.people;
    let known = |u: &str| people.known(u);
    let mentions = |e: &crate::event::Entity| {
        matches!(e.kind, crate::event::EntityKind::Mention | crate::event::EntityKind::TextMention)
    };
    // Without mention entities, a name typed at the start addresses a known person on every platform.
    let Normalized { text, links, warnings } = if entities.iter().any(mentions) {
        normalize(&text, entities, channel, &known)
    } else if !entities.is_empty() {
        let n = normalize(&text, entities, channel, &known);
        Normalized { text: address_leading(n.text, channel, &known), ..n }
    } else if channel == crate::event::DEFAULT_CHANNEL {
        // Telegram marks every `@username` with an entity: only a typed name at the start is left to find.
        Normalized { text: address_leading(text, channel, &known), ..Normalized::default() }
    } else {
        Normalized { text: normalize_plain(&text, channel, &known), ..Normalized::default() }
    };
    Normalized { text: with_markers(text, attachments, forwarded_from), links, warnings }
}

/// Prefixes the text with where a forward came from and one tag per attachment
/// (`[forwarded from Mom] [media.image: cat.jpg] caption`), so the model sees whose the message is and what it
/// carried even when it has no caption. Markers are separated by single spaces; nothing trails.
fn with_markers(text: String, attachments: &[crate::event::Attachment], forwarded_from: Option<&str>) -> String {
    if attachments.is_empty() && forwarded_from.is_none() {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 24 * (attachments.len() + 1));
    if let Some(from) = forwarded_from {
        out.push_str("[forwarded from ");
        out.push_str(from);
        out.push(']');
    }
    for a in attachments {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push('[');
        out.push_str(a.kind.as_str());
        if let Some(l) = a.label.as_deref().map(str::trim).filter(|l| !l.is_empty()) {
            out.push_str(": ");
            out.push_str(&short_label(l));
        }
        out.push(']');
    }
    if !text.is_empty() {
        out.push(' ');
        out.push_str(&text);
    }
    out
}
