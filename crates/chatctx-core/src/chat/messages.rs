//! A chat's stored messages by id: inserting, evicting and removing them, with the id index kept one entry per
//! stored message.

use super::{Chat, Conv, Item, Loc, Lost, let_go};
use crate::kinds::ItemKind;
use crate::objects::Object;
use crate::settings::ObjectSettings;
use crate::time::Timestamp;

impl Chat {
    /// Inserts `item` into conversation `conv` in time order, then drops the oldest items beyond `cap`.
    /// A message id names one stored message: inserting one the chat holds already (an imported document that
    /// repeats it) replaces the earlier copy, as an edit does. `item.objects` says whether objects name it now.
    pub(crate) fn insert(&mut self, conv: u32, item: Item, cap: usize) {
        if conv as usize >= self.convs.len() {
            return;
        }
        let key = item.key();
        if let Some(id) = &item.message_id
            && let Some(earlier) = self.index.insert(id.clone(), Loc { conv, key })
            && let Some(c) = self.convs.get_mut(earlier.conv as usize)
            && let Some(at) = c.find(earlier.key)
        {
            c.items.remove(at);
        }
        let Some(c) = self.convs.get_mut(conv as usize) else {
            return;
        };
        if c.items.back().is_none_or(|last| last.key() < key) {
            c.items.push_back(item);
        } else {
            let at = c.items.partition_point(|i| i.key() < key);
            c.items.insert(at, item);
        }
        while c.items.len() > cap.max(1) {
            if let Some(old) = c.items.pop_front() {
                c.lost = c.lost.max(Some((old.key(), Lost::Cap)));
                let_go(&mut self.index, &mut self.objects, &old);
            }
        }
    }

    /// Registers `obj` ([`crate::objects::Objects::upsert`]), noting on its source message, when stored, that an
    /// object names it ([`Item::objects`]). Every registration of an object that names a stored message goes
    /// through here; a message's own objects are registered just before it is stored, and its item says so.
    pub(crate) fn register(&mut self, obj: Object, max: usize, settings: &ObjectSettings) {
        if let Some(source) = &obj.source_message_id
            && let Some((conv, at)) = self.position(source)
            && let Some(c) = self.convs.get_mut(conv)
        {
            c.items.note_objects(at);
        }
        self.objects.upsert(obj, max, settings);
    }

    /// The first stored message that objects name as their source while its item says none does.
    pub(crate) fn unnoted_source(&self) -> Option<String> {
        let mut items = self.convs.iter().flat_map(|c| c.items.iter());
        items
            .find_map(|i| i.message_id.as_ref().filter(|id| !i.objects && self.objects.of_source(id).next().is_some()))
            .map(|id| id.to_string())
    }

    /// Drops every item sent before `cutoff`, with the objects derived from those messages. How many.
    pub(crate) fn drop_before(&mut self, cutoff: Timestamp) -> usize {
        let mut dropped = 0;
        for c in &mut self.convs {
            while c.items.front().is_some_and(|i| i.sent_at < cutoff) {
                if let Some(old) = c.items.pop_front() {
                    dropped += 1;
                    c.lost = c.lost.max(Some((old.key(), Lost::MaxAge)));
                    let_go(&mut self.index, &mut self.objects, &old);
                }
            }
        }
        dropped
    }

    /// Removes the message `id`, returning it.
    pub(crate) fn remove_message(&mut self, id: &str) -> Option<(u32, Item)> {
        let loc = self.index.remove(id)?;
        let conv = self.convs.get_mut(loc.conv as usize)?;
        let at = conv.find(loc.key)?;
        conv.items.remove(at).map(|i| (loc.conv, i))
    }

    /// Removes the reactions to message `id` (they quote it); how many.
    pub(crate) fn remove_reactions_to(&mut self, id: &str) -> usize {
        let mut n = 0;
        for conv in &mut self.convs {
            let before = conv.items.len();
            conv.items.retain(|i| {
                !(i.message_id.is_none()
                    && i.reply_to.as_deref() == Some(id)
                    && matches!(i.kind, ItemKind::InboundReaction | ItemKind::OutboundReaction))
            });
            n += before - conv.items.len();
        }
        n
    }

    /// The stored message `id`.
    pub(crate) fn message(&self, id: &str) -> Option<(&Conv, &Item)> {
        let (conv, at) = self.position(id)?;
        let conv = self.convs.get(conv)?;
        conv.items.get(at).map(|i| (conv, i))
    }

    /// Where the stored message `id` is: its conversation and its place there.
    fn position(&self, id: &str) -> Option<(usize, usize)> {
        let loc = self.index.get(id)?;
        let at = self.convs.get(loc.conv as usize)?.find(loc.key)?;
        Some((loc.conv as usize, at))
    }

    /// A held message as a reaction or a pin names it: `[Alice](tg:@alice)'s message “the first words…”`.
    pub(crate) fn describe_message(&self, id: &str) -> Option<String> {
        let (_, item) = self.message(id)?;
        let words = crate::render::excerpt(&item.text, 60);
        Some([self.people.display_ref(item.sender), "'s message “", &words, "”"].concat())
    }
}
