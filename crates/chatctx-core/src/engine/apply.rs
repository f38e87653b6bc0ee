//! Applying events to the state: every event is checked before any of a batch is applied, then each type has
//! its own step.

use super::carry::{Carried, Carrier, message_candidate};
use super::{Applied, Engine};
use crate::chat::{Anonymous, Chat, Extra, Item};
use crate::error::Error;
use crate::event::{
    ActivationEvent, DeleteEvent, Direction, EntityKind, Event, MessageEvent, MessageKind, ObjectEvent, ObjectOp,
    ObjectRef, PersonEvent, ReactionEvent,
};
use crate::kinds::{Activation, ItemKind, Origin};
use crate::mention::{Normalized, address_leading, normalize, normalize_plain};
use crate::objects::short_label;
use crate::selection::estimate_tokens;
use std::mem::take;

impl Engine {
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

    // Inlined into `apply` and `apply_all`, so that the event is not copied on its way in.
    #[inline(always)]
    fn apply_checked(&mut self, mut event: Event) -> Applied {
        let mut out = Applied::default();
        if !self.threads.is_empty() {
            self.route(&mut event);
        }
        match event {
            // Read in place, its owned fields taken: a message event is 584 bytes, and moving it out was a copy.
            Event::Message(ref mut m) => self.apply_message(m, &mut out),
            Event::Reaction(r) => self.apply_reaction(r),
            Event::Object(o) => self.apply_object(o),
            Event::Activation(a) => self.apply_activation(a, &mut out),
            Event::Delete(d) => self.apply_delete(d, &mut out),
            Event::Person(p) => self.apply_person(p),
            Event::Title(t) => self.apply_title(t),
            Event::Thread(t) => match self.thread_conflict(&t.channel, &t.chat_id, &t.topic_id) {
                Some(why) => out.warnings.push(format!("thread event not applied: {why}")),
                None => {
                    self.with_chat(&t.channel, &t.chat_id);
                    self.add_thread(&t.channel, &t.chat_id, &t.topic_id);
                }
            },
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
                    chat.register(o, settings.objects.max_per_chat, &settings.objects);
                }
            }
            out.edited |= removed || reactions > 0;
        }
        for ext in gone_externals {
            self.external.remove(ext.as_str());
        }
    }

    #[inline(always)]
    fn apply_message(&mut self, m: &mut MessageEvent, out: &mut Applied) {
        let MessageEvent {
            channel,
            chat_id,
            workspace_id,
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
        let (kind, sent_at, origin, triggered_agent) = (*kind, *sent_at, *origin, *triggered_agent);
        let (text, attachments, actions) = (take(text), take(attachments), take(actions));
        let message_id: std::sync::Arc<str> = message_id.as_str().into(); // the item's, shared by its objects
        let (settings, dirs, chat) = self.with_chat_dir(channel, chat_id);
        let (cap, max_topics) = (settings.conversation.cache_max_per_conversation, settings.conversation.max_topics);
        chat.make_room_for_people(settings.conversation.max_people);
        if let Some(t) = chat_type.take()
            && chat.chat_type.as_deref() != Some(t.as_str())
        {
            chat.chat_type = Some(t.into());
        }
        chat.set_workspace(workspace_id.take());
        let dir = dirs.view(channel, chat.workspace());
        let sender_idx = match &sender {
            Some(p) => intern_sender(chat, channel, p, dir),
            None => chat.people.anonymous(Anonymous::System),
        };
        // What an object of this message records of it: the first words (its caption) and who posted it. Only
        // a message that can carry objects pays for them.
        let carries = carries_objects(&attachments, entities);
        let caption = carries.then(|| crate::render::excerpt(&text, 200)).filter(|c| !c.is_empty()).map(Into::into);
        let author = (carries && kind != MessageKind::System).then(|| chat.people.display_ref_arc(sender_idx));
        let Normalized { text, links, warnings, unknown } =
            message_text((chat, dir), channel, text, entities, &attachments, forwarded_from.as_deref());
        chat.note_mentions(unknown, settings.conversation.max_people);
        out.warnings.extend(warnings.into_iter().map(|w| format!("chat {chat_id} message {message_id}: {w}")));
        let quote = quote.take().map(|q| {
            let sender_ref = q.sender.as_ref().map(|p| chat.people.shown_ref(channel, p, dir)).unwrap_or_default();
            (sender_ref.into_boxed_str(), q.text.into_boxed_str())
        });
        let carrier = Carrier {
            message_id: &message_id,
            topic_id,
            by_user: sender.as_ref().map(|p| p.user_id.as_str()).filter(|u| !u.is_empty()),
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
                (chat.conv_for(topic_id.as_deref(), max_topics), seq, false)
            }
        };
        let reply_parent = reply_to_message_id.as_deref().filter(|_| kind == MessageKind::InboundUser);
        let named = store_objects(chat, &settings.objects, &message_id, (objects, activations), sent_at, reply_parent);
        let tokens = item_tokens(&text, quote.as_ref(), &actions);
        let item = Item {
            seq,
            sent_at,
            sender: sender_idx,
            kind: kind.into(),
            origin,
            triggered: triggered_agent || was_triggered,
            tokens,
            message_id: Some(message_id),
            reply_to: reply_to_message_id.take().map(String::into_boxed_str),
            refs: crate::chat::may_refer(&text),
            objects: named,
            text: text.into_boxed_str(),
            extra: Extra::boxed(quote, actions),
        };
        chat.insert(conv, item, cap);
        for (ext, id) in externals {
            self.external.insert(ext.into(), (channel.as_str().into(), chat_id.as_str().into(), id.into()));
        }
    }

    fn apply_reaction(&mut self, r: ReactionEvent) {
        let (settings, dirs, chat) = self.with_chat_dir(&r.channel, &r.chat_id);
        let (cap, max_topics) = (settings.conversation.cache_max_per_conversation, settings.conversation.max_topics);
        chat.make_room_for_people(settings.conversation.max_people);
        let dir = dirs.view(&r.channel, chat.workspace());
        let topic = match r.topic_id {
            Some(t) => Some(t),
            None => chat.message(&r.message_id).and_then(|(c, _)| c.topic.as_deref().map(str::to_owned)),
        };
        let (kind, sender) = match (r.direction, &r.sender) {
            (Direction::Inbound, Some(p)) => (ItemKind::InboundReaction, intern_sender(chat, &r.channel, p, dir)),
            (Direction::Inbound, None) => (ItemKind::InboundReaction, chat.people.anonymous(Anonymous::System)),
            (Direction::Outbound, Some(p)) => (ItemKind::OutboundReaction, intern_sender(chat, &r.channel, p, dir)),
            (Direction::Outbound, None) => (ItemKind::OutboundReaction, chat.people.anonymous(Anonymous::Bot)),
        };
        // The target as the model can use it: its author and a short excerpt (a bare id names nothing the
        // prompt shows); the id only when the message is not held.
        let target = chat.describe_message(&r.message_id).unwrap_or_else(|| format!("message {}", r.message_id));
        // Joined rather than formatted: a reaction's text is made for every reaction (~500 instructions less).
        let text = if r.emoji.is_empty() {
            ["removed their reaction to ", &target].concat()
        } else {
            ["reacted ", &r.emoji.join(" "), " to ", &target].concat()
        };
        let conv = chat.conv_for(topic.as_deref(), max_topics);
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
            refs: crate::chat::may_refer(&text),
            objects: false, // no id: nothing names it
            text: text.into_boxed_str(),
            extra: None,
        };
        chat.insert(conv, item, cap);
    }

    /// Learns a person in their workspace's directory and, when that changed their names, shows the new ones in
    /// every chat of the workspace (docs/protocol.md §3.11).
    fn apply_person(&mut self, p: PersonEvent) {
        let workspace = self.person_workspace(&p).to_owned();
        let c = &self.settings.conversation;
        let bounds = (c.max_people, c.max_workspaces);
        if self.directories.learn((&p.channel, &workspace), &p.person, bounds).is_some() {
            self.show_people(&p.channel, &workspace, Some(&p.person.user_id));
        }
    }

    /// The workspace a `person` event is learned in: its own `workspace_id`, else that of the chat it names, else
    /// the channel's own directory (`""`).
    pub fn person_workspace<'a>(&'a self, p: &'a PersonEvent) -> &'a str {
        match (&p.workspace_id, &p.chat_id) {
            (Some(w), _) => w,
            (None, Some(c)) => self.chat(&p.channel, c).map_or("", Chat::workspace),
            (None, None) => "",
        }
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
        let source: std::sync::Arc<str> = spec.source_message_id.as_deref().unwrap_or_default().into();
        let carrier = Carrier {
            message_id: &source,
            topic_id: &spec.topic_id,
            by_user: spec.created_by_user_id.as_deref(),
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
        chat.register(obj, settings.objects.max_per_chat, &settings.objects);
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
            chat.register(obj, settings.objects.max_per_chat, &settings.objects);
        }
        chat.objects.activate(&object_id, a.event, a.at, a.message_id.as_deref());
        if a.close {
            chat.objects.close(&object_id, a.at);
        }
    }
}

/// Stores the objects a message carries: those an earlier copy of it derived and this one does not are
/// deleted, the rest upserted, their activations recorded; a user's reply to `reply_parent` activates the typed
/// objects that message carries (docs/protocol.md §4, `replied_to`). Whether objects name the message now
/// ([`crate::chat::Item::objects`]: possibly some that were deleted).
fn store_objects(
    chat: &mut Chat,
    object_settings: &crate::settings::ObjectSettings,
    message_id: &str,
    (objects, activations): (Vec<crate::objects::Object>, Vec<(String, Activation)>),
    sent_at: crate::time::Timestamp,
    reply_parent: Option<&str>,
) -> bool {
    let (named, gone) = chat.objects.derived_not_in(message_id, &objects);
    for gone in gone {
        chat.objects.delete(&gone);
    }
    let named = named || !objects.is_empty();
    // Not `Chat::register`: the message is not stored now (it is stored next, knowing of these).
    for o in objects {
        chat.objects.upsert(o, object_settings.max_per_chat, object_settings);
    }
    for (id, act) in activations {
        chat.objects.activate(&id, act, sent_at, Some(message_id));
    }
    if let Some(parent) = reply_parent {
        for id in chat.objects.sourced_from(parent) {
            chat.objects.activate(&id, Activation::RepliedTo, sent_at, None);
        }
    }
    named
}

/// Whether a message can carry objects: attachments, or links (`url` and `text_link` entities; a mention
/// carries none).
fn carries_objects(attachments: &[crate::event::Attachment], entities: &[crate::event::Entity]) -> bool {
    !attachments.is_empty() || entities.iter().any(|e| matches!(e.kind, EntityKind::Url | EntityKind::TextLink))
}

/// The speaker's profile; when it is new and the message names them, what showed them by id takes the name
/// ([`Chat::adopt`]).
fn intern_sender(chat: &mut Chat, channel: &str, p: &crate::event::Person, dir: crate::directory::View<'_>) -> u32 {
    let before = chat.people.len();
    let (idx, seen) = chat.people.intern(channel, p, dir);
    if chat.people.len() > before && crate::directory::has_name(p) {
        chat.adopt(channel, idx, seen, stored_tokens);
    }
    idx
}

/// [`item_tokens`] of a stored item.
pub(crate) fn stored_tokens(item: &Item) -> u32 {
    let extra = item.extra.as_deref();
    item_tokens(&item.text, extra.and_then(|x| x.quote.as_ref()), extra.map_or(&[][..], |x| x.actions.as_slice()))
}

/// Estimated tokens of a rendered item: its text, a quote, the actions, and the speaker and time around them.
pub(crate) fn item_tokens(text: &str, quote: Option<&(Box<str>, Box<str>)>, actions: &[String]) -> u32 {
    let extra = quote.map_or(0, |q| q.0.len() + q.1.len()) + actions.iter().map(String::len).sum::<usize>();
    estimate_tokens(text.len() + extra + 40)
}

/// A message's stored text and the links in it: mentions replaced by entity (or, off Telegram, by plain
/// `@username`), then one tag per attachment; and the warnings of a bad entity.
fn message_text(
    (chat, dir): (&Chat, crate::directory::View<'_>),
    channel: &str,
    text: String,
    entities: &[crate::event::Entity],
    attachments: &[crate::event::Attachment],
    forwarded_from: Option<&str>,
) -> Normalized {
    let people = &chat.people;
    // The chat's own people first, then the workspace's directory; a person known only from the directory is
    // tracked like an unknown one, so that a later name replaces the reference.
    let from_dir = std::cell::RefCell::new(Vec::new());
    let with_dir = |u: &str| {
        people.known(u).or_else(|| {
            let p = match u.strip_prefix('#') {
                Some(id) => dir.by_id(id),
                None => dir.by_username(u),
            }?;
            let k = crate::mention::KnownPerson {
                nickname: crate::people::nickname(p).into(),
                username: p.username.as_deref(),
                user_id: &p.user_id,
                shown: None,
            };
            let key = if u.starts_with('#') { u.to_owned() } else { format!("@{}", u.to_lowercase()) };
            from_dir.borrow_mut().push((key, crate::people::display_ref(channel, &k.nickname, k.username, k.user_id)));
            Some(k)
        })
    };
    let chat_only = |u: &str| people.known(u);
    // Without a directory (Telegram, plain JSON) nothing more is asked.
    let known: crate::mention::Known<'_> = if dir.is_empty() { &chat_only } else { &with_dir };
    let mentions = |e: &crate::event::Entity| {
        matches!(e.kind, crate::event::EntityKind::Mention | crate::event::EntityKind::TextMention)
    };
    // Without mention entities, a name typed at the start addresses a known person on every platform.
    let Normalized { text, links, warnings, mut unknown } = if entities.iter().any(mentions) {
        normalize(&text, entities, channel, known)
    } else if !entities.is_empty() {
        let n = normalize(&text, entities, channel, known);
        Normalized { text: address_leading(n.text, channel, known), ..n }
    } else if channel == crate::event::DEFAULT_CHANNEL {
        // Telegram marks every `@username` with an entity: only a typed name at the start is left to find.
        Normalized { text: address_leading(text, channel, known), ..Normalized::default() }
    } else {
        Normalized { text: normalize_plain(&text, channel, known), ..Normalized::default() }
    };
    unknown.extend(from_dir.into_inner());
    Normalized { text: with_markers(text, attachments, forwarded_from), links, warnings, unknown }
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
