//! The object registry of one chat (docs/protocol.md §4): typed objects from attachments, links and `object` events,
//! their activations, liveness (sliding per-kind TTL, close grace) and the indexes that keep both tools
//! bounded however large a chat grows:
//!
//! - by id, and by source message (reply targets and chains);
//! - per scope (the chat's general conversation, each forum topic): registration order, per kind, and
//!   activation time (sorted), so a tool reads the newest few entries of one scope instead of the chat.
//!
//! Objects live in a slab; indexes hold generation-checked references, so a deleted or moved object simply
//! stops matching and is compacted away later. Nothing here reads another chat's registry.

use std::collections::VecDeque;

use hashbrown::HashMap;
use schemars::JsonSchema;
use serde::Serialize;

use crate::kinds::{Activation, ObjectKind};
use crate::settings::ObjectSettings;
use crate::time::Timestamp;
use std::sync::Arc;

/// Longest `title_or_label` on the wire, in characters.
pub const MAX_LABEL_CHARS: usize = 80;
/// Longest `title_or_label` on the wire, in bytes (keeps tool answers compact in any script).
pub const MAX_LABEL_BYTES: usize = 120;

/// A typed object known in a chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct Object {
    /// Id, unique in the chat.
    pub object_id: Arc<str>,
    /// Kind.
    pub kind: ObjectKind,
    /// The message that carries it.
    pub source_message_id: Option<Arc<str>>,
    /// The topic it lives in.
    pub topic_id: Option<Arc<str>>,
    /// A short label, at most 80 characters.
    pub title_or_label: Option<Arc<str>>,
    /// Who created it.
    pub created_by_user_id: Option<Arc<str>>,
    /// Whether the bot created it.
    pub created_by_bot: bool,
    /// When it became known.
    pub created_at: Timestamp,
    /// Last change or activation.
    pub last_touched_at: Timestamp,
    /// The latest activation, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,
    /// When the latest activation happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activated_at: Option<Timestamp>,
    /// When it was closed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<Timestamp>,
    // Shared, as the strings are: a descriptor takes a count instead of a copy. (The doc comment below is the
    // OpenAPI description: keep it as is.)
    /// The platform's file reference (media, files), to send or fetch it again without a cache of one's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<Arc<crate::event::FileRef>>,
    /// The first words of the message that carries it (its caption), at most 200 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<Arc<str>>,
    /// Who posted it, as the prompt refers to them (`[Alice](tg:@alice)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<Arc<str>>,
    /// The platform's own id (a Telegram poll id).
    #[serde(skip)]
    pub external_id: Option<String>,
    /// The message whose handling caused the latest activation (for "touched in this interaction"). Shared: a
    /// listing's record takes a count of it, not a copy.
    #[serde(skip)]
    pub activated_by: Option<Arc<str>>,
}

/// Where an object stands at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Activated, within its TTL (and within the close grace if closed).
    Active {
        /// When activity ends.
        expires_at: Timestamp,
    },
    /// Known, never activated (or its activity lapsed) but still within its TTL from registration or last
    /// touch: a candidate for resolution, not listed as active.
    Known,
    /// Past its TTL: never returned as its kind.
    Expired,
}

impl Object {
    /// The object's liveness at `now`. Activity slides from the last activation; a closed object stays
    /// active for the close grace at most.
    pub fn liveness(&self, now: Timestamp, settings: &ObjectSettings) -> Liveness {
        let (ttl, grace) = (settings.ttl(self.kind), settings.close_grace);
        match live::classify(self, live::threshold(now, ttl), live::threshold(now, grace)) {
            Live::Active => match (self.closed_at, self.activated_at) {
                (Some(closed), _) => Liveness::Active { expires_at: closed.plus(grace) },
                // Active and not closed: activated (`classify` says so only then).
                (None, at) => Liveness::Active { expires_at: at.unwrap_or(now).plus(ttl) },
            },
            Live::Known => Liveness::Known,
            Live::Expired => Liveness::Expired,
        }
    }
}

/// Truncates a label to [`MAX_LABEL_CHARS`] characters and [`MAX_LABEL_BYTES`] bytes (ending in an ellipsis
/// when cut). Reads no further than the limits: a long text costs what a label does.
pub fn short_label(s: &str) -> String {
    let s = s.trim();
    // No longer in bytes than the character limit (every character is at least one byte): it fits.
    if s.len() <= MAX_LABEL_CHARS {
        return s.to_owned();
    }
    // Most texts start in ASCII, one byte a character: past the character limit, so cut after the first
    // MAX_LABEL_CHARS - 1 (well within the byte limit), without walking the characters.
    let end = if s.as_bytes().get(..=MAX_LABEL_CHARS).is_some_and(<[u8]>::is_ascii) {
        MAX_LABEL_CHARS - 1
    } else {
        // Fits both limits, or is cut; a text past the byte limit is cut without counting the rest.
        if s.len() <= MAX_LABEL_BYTES && s.chars().nth(MAX_LABEL_CHARS).is_none() {
            return s.to_owned();
        }
        let mut end = 0;
        for (n, (i, c)) in s.char_indices().enumerate() {
            if n >= MAX_LABEL_CHARS - 1 || i + c.len_utf8() > MAX_LABEL_BYTES - '…'.len_utf8() {
                break;
            }
            end = i + c.len_utf8();
        }
        end
    };
    let mut out = String::with_capacity(end + '…'.len_utf8());
    out.push_str(&s[..end]);
    out.push('…');
    out
}

/// [`short_label`] of a shared label: the same allocation when the label is its own short label already (as a
/// label cut at registration is).
pub fn short_label_shared(label: &Arc<str>) -> Arc<str> {
    if label.len() <= MAX_LABEL_CHARS && label.trim().len() == label.len() {
        label.clone()
    } else {
        short_label_arc(label)
    }
}

/// [`short_label`] as a shared string, allocated once when the text fits as it is.
pub fn short_label_arc(text: &str) -> Arc<str> {
    let trimmed = text.trim();
    if trimmed.len() <= MAX_LABEL_CHARS { trimmed.into() } else { short_label(trimmed).into() }
}

/// Whether `id` is a derived id (`"{source}:…"`, docs/protocol.md §3.6) of message `source`.
pub(crate) fn is_derived(id: &str, source: &str) -> bool {
    id.strip_prefix(source).is_some_and(|rest| rest.starts_with(':'))
}

/// A generation-checked reference to a slab slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ref {
    slot: u32,
    generation: u32,
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    obj: Option<Object>,
}

/// The indexes of one scope (the general conversation or one topic).
#[derive(Debug, Default)]
pub(crate) struct ScopeIndex {
    /// Registration order, oldest first.
    order: Vec<Ref>,
    /// Registration order per kind.
    by_kind: [Vec<Ref>; ObjectKind::ALL.len()],
    /// `(activated_at, ref)` sorted by time, oldest first; an entry counts only while it is the object's
    /// latest activation.
    active: Vec<(Timestamp, Ref)>,
    /// Entries that no longer match (deleted, moved, superseded), for compaction.
    stale: usize,
}

/// The objects of one chat.
#[derive(Debug, Default)]
pub(crate) struct Objects {
    slots: Vec<Slot>,
    free: Vec<u32>,
    by_id: HashMap<Arc<str>, Ref>,
    by_source: HashMap<String, Vec<Ref>>,
    general: ScopeIndex,
    topics: HashMap<String, ScopeIndex>,
    /// Chat-wide registration order, for eviction of the oldest.
    order: VecDeque<Ref>,
    live: usize,
    /// The newest event time seen, the clock for eviction decisions (state-derived, so deterministic).
    clock: Timestamp,
}

impl Objects {
    fn resolve(&self, r: Ref) -> Option<&Object> {
        self.slots.get(r.slot as usize).filter(|s| s.generation == r.generation).and_then(|s| s.obj.as_ref())
    }

    fn resolve_mut(&mut self, r: Ref) -> Option<&mut Object> {
        self.slots.get_mut(r.slot as usize).filter(|s| s.generation == r.generation).and_then(|s| s.obj.as_mut())
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Object> {
        self.by_id.get(id).and_then(|&r| self.resolve(r))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Object> {
        self.slots.iter().filter_map(|s| s.obj.as_ref())
    }

    /// Every object, to change what no index depends on (an author's reference).
    pub(crate) fn each_mut(&mut self) -> impl Iterator<Item = &mut Object> {
        self.slots.iter_mut().filter_map(|s| s.obj.as_mut())
    }

    /// Number of objects held.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    fn scope_mut(&mut self, topic: Option<&str>) -> &mut ScopeIndex {
        scope_in(&mut self.general, &mut self.topics, topic)
    }

    /// The index of a scope, if anything was ever registered there.
    pub(crate) fn scope(&self, topic: Option<&str>) -> Option<&ScopeIndex> {
        match topic {
            Some(t) => self.topics.get(t),
            None => Some(&self.general),
        }
    }

    /// The newest objects of a scope, newest first, skipping stale entries.
    pub(crate) fn newest<'a>(
        &'a self,
        idx: &'a ScopeIndex,
        kind: Option<ObjectKind>,
    ) -> impl Iterator<Item = &'a Object> + 'a {
        let list = match kind {
            Some(k) => &idx.by_kind[k as usize],
            None => &idx.order,
        };
        list.iter().rev().filter_map(move |&r| self.resolve(r))
    }

    /// Every object in registration order, oldest first.
    pub(crate) fn in_order(&self) -> impl Iterator<Item = &Object> + '_ {
        self.order.iter().filter_map(move |&r| self.resolve(r))
    }

    /// The newest objects of the whole chat, newest first.
    pub(crate) fn newest_in_chat(&self) -> impl Iterator<Item = &Object> + '_ {
        self.order.iter().rev().filter_map(move |&r| self.resolve(r))
    }

    /// The activations of a scope, newest first, each object once (its latest activation).
    pub(crate) fn activations<'a>(&'a self, idx: &'a ScopeIndex) -> impl Iterator<Item = &'a Object> + 'a {
        idx.active.iter().rev().filter_map(move |&(at, r)| self.resolve(r).filter(|o| o.activated_at == Some(at)))
    }

    /// Objects whose source is message `source`.
    pub(crate) fn of_source<'a>(&'a self, source: &str) -> impl Iterator<Item = &'a Object> + 'a {
        self.by_source.get(source).into_iter().flatten().filter_map(|&r| self.resolve(r))
    }

    /// Registers `obj`, or updates a known one: fields `obj` leaves empty keep their earlier value, and
    /// `created_at` and the latest activation are kept. Then enforces `max` objects in the chat.
    pub(crate) fn upsert(&mut self, mut obj: Object, max: usize, settings: &ObjectSettings) {
        self.clock = self.clock.max(obj.last_touched_at);
        if let Some(&r) = self.by_id.get(&*obj.object_id)
            && let Some(old) = self.resolve(r)
        {
            obj.created_at = old.created_at.min(obj.created_at);
            obj.last_touched_at = old.last_touched_at.max(obj.last_touched_at);
            if obj.activation.is_none() {
                obj.activation = old.activation;
                obj.activated_at = old.activated_at;
                obj.activated_by = old.activated_by.clone();
            }
            obj.closed_at = obj.closed_at.or(old.closed_at);
            obj.topic_id = obj.topic_id.or_else(|| old.topic_id.clone());
            obj.title_or_label = obj.title_or_label.or_else(|| old.title_or_label.clone());
            obj.created_by_user_id = obj.created_by_user_id.or_else(|| old.created_by_user_id.clone());
            obj.created_by_bot |= old.created_by_bot;
            obj.external_id = obj.external_id.or_else(|| old.external_id.clone());
            obj.source_message_id = obj.source_message_id.or_else(|| old.source_message_id.clone());
            if old.topic_id == obj.topic_id && old.source_message_id == obj.source_message_id && old.kind == obj.kind {
                // Same place in every index: update in place.
                if let Some(slot) = self.resolve_mut(r) {
                    *slot = obj;
                }
                return;
            }
            // It moved (topic, source or kind): re-register under a new reference.
            self.delete(&obj.object_id.clone());
        }
        self.insert(obj);
        self.enforce_cap(max, settings);
    }

    fn insert(&mut self, obj: Object) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot::default());
                u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
            }
        };
        let Some(s) = self.slots.get_mut(slot as usize) else { return };
        let r = Ref { slot, generation: s.generation };
        let (kind, activated) = (obj.kind, obj.activated_at);
        let topic = obj.topic_id.clone();
        self.by_id.insert(obj.object_id.clone(), r);
        if let Some(src) = &obj.source_message_id {
            self.by_source.entry_ref(&**src).or_default().push(r);
        }
        s.obj = Some(obj);
        self.live += 1;
        self.order.push_back(r);
        let scope = self.scope_mut(topic.as_deref());
        scope.order.push(r);
        scope.by_kind[kind as usize].push(r);
        if let Some(at) = activated {
            insert_sorted(&mut scope.active, at, r);
        }
    }

    /// Drops the oldest objects beyond `max`. An object active at the chat's clock is moved to the back
    /// once instead of being dropped, so a long-lived poll outlives a flood of links.
    fn enforce_cap(&mut self, max: usize, settings: &ObjectSettings) {
        let mut spared = 0;
        while self.live > max.max(1) {
            let Some(r) = self.order.pop_front() else { break };
            let Some(o) = self.resolve(r) else { continue };
            if spared < self.order.len() && matches!(o.liveness(self.clock, settings), Liveness::Active { .. }) {
                spared += 1;
                self.order.push_back(r);
                continue;
            }
            let id = o.object_id.clone();
            self.delete(&id);
        }
    }

    /// Records an activation by the handling of message `by`. The latest by time wins: one that arrives
    /// late with an older time only counts if there was none. The object as it stands after, if it is known.
    pub(crate) fn activate(&mut self, id: &str, act: Activation, at: Timestamp, by: Option<&str>) -> Option<&Object> {
        self.clock = self.clock.max(at);
        let &r = self.by_id.get(id)?;
        let o = self.resolve_mut(r)?;
        o.last_touched_at = o.last_touched_at.max(at);
        if o.activated_at.is_some_and(|prev| prev > at) {
            return self.resolve(r);
        }
        let same_time = o.activated_at == Some(at);
        let superseded = o.activated_at.is_some();
        o.activation = Some(act);
        o.activated_at = Some(at);
        // The same message again (a repeated resolution) keeps the string it holds.
        if o.activated_by.as_deref() != by {
            o.activated_by = by.map(Into::into);
        }
        if !same_time {
            // At the same time, its index entry already says (at, r): nothing to add.
            let topic = o.topic_id.clone();
            let scope = scope_in(&mut self.general, &mut self.topics, topic.as_deref());
            insert_sorted(&mut scope.active, at, r);
            if superseded {
                scope.stale += 1;
                compact_if_needed(scope, &self.slots);
            }
        }
        self.resolve(r)
    }

    pub(crate) fn close(&mut self, id: &str, at: Timestamp) {
        self.clock = self.clock.max(at);
        if let Some(&r) = self.by_id.get(id)
            && let Some(o) = self.resolve_mut(r)
        {
            o.closed_at = Some(at);
            o.last_touched_at = o.last_touched_at.max(at);
        }
    }

    pub(crate) fn delete(&mut self, id: &str) -> Option<Object> {
        let r = self.by_id.remove(id)?;
        let slot = self.slots.get_mut(r.slot as usize).filter(|s| s.generation == r.generation)?;
        let o = slot.obj.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(r.slot);
        self.live -= 1;
        if let Some(src) = &o.source_message_id
            && let Some(list) = self.by_source.get_mut(&**src)
        {
            list.retain(|x| *x != r);
            if list.is_empty() {
                self.by_source.remove(&**src);
            }
        }
        let scope = scope_in(&mut self.general, &mut self.topics, o.topic_id.as_deref());
        scope.stale += 2 + usize::from(o.activated_at.is_some());
        compact_if_needed(scope, &self.slots);
        if self.order.len() > 2 * self.live + 16 {
            let slots = &self.slots;
            self.order.retain(|&r| valid(slots, r));
        }
        Some(o)
    }

    /// Forgets the objects derived from an evicted message, except those that were activated (they live on
    /// until the registry's cap drops them).
    pub(crate) fn evict_derived(&mut self, source: &str) {
        let gone: Vec<Arc<str>> = self
            .of_source(source)
            .filter(|o| is_derived(&o.object_id, source) && o.activation.is_none())
            .map(|o| o.object_id.clone())
            .collect();
        for id in gone {
            self.delete(&id);
        }
    }

    /// Ids of every object whose source is message `source`.
    pub(crate) fn sourced_from(&self, source: &str) -> Vec<Arc<str>> {
        self.of_source(source).map(|o| o.object_id.clone()).collect()
    }

    /// Ids of the objects derived from message `source` that are not among `keep` (an edit dropped them), and
    /// whether objects name `source` at all (found by the same lookup; see `crate::chat::Item::objects`).
    pub(crate) fn derived_not_in(&self, source: &str, keep: &[Object]) -> (bool, Vec<Arc<str>>) {
        let Some(list) = self.by_source.get(source) else { return (false, Vec::new()) };
        let gone = list
            .iter()
            .filter_map(|&r| self.resolve(r))
            .filter(|o| is_derived(&o.object_id, source) && !keep.iter().any(|k| k.object_id == o.object_id))
            .map(|o| o.object_id.clone())
            .collect();
        (true, gone)
    }
}

/// The index of `topic`, created on first use. Takes the fields, not `Objects`, so the slab stays free to
/// borrow alongside.
fn scope_in<'a>(
    general: &'a mut ScopeIndex,
    topics: &'a mut HashMap<String, ScopeIndex>,
    topic: Option<&str>,
) -> &'a mut ScopeIndex {
    match topic {
        Some(t) => topics.entry_ref(t).or_default(),
        None => general,
    }
}

fn valid(slots: &[Slot], r: Ref) -> bool {
    slots.get(r.slot as usize).is_some_and(|s| s.generation == r.generation && s.obj.is_some())
}

fn insert_sorted(active: &mut Vec<(Timestamp, Ref)>, at: Timestamp, r: Ref) {
    if active.last().is_none_or(|(t, _)| *t <= at) {
        active.push((at, r));
    } else {
        let pos = active.partition_point(|(t, _)| *t <= at);
        active.insert(pos, (at, r));
    }
}

/// Drops stale entries of a scope once they are at least half of it.
fn compact_if_needed(scope: &mut ScopeIndex, slots: &[Slot]) {
    let total = scope.order.len() + scope.active.len();
    if scope.stale < 32 || scope.stale * 2 < total {
        return;
    }
    scope.order.retain(|&r| valid(slots, r));
    for list in &mut scope.by_kind {
        list.retain(|&r| valid(slots, r));
    }
    scope.active.dedup();
    scope.active.retain(|&(at, r)| {
        slots
            .get(r.slot as usize)
            .is_some_and(|s| s.generation == r.generation && s.obj.as_ref().is_some_and(|o| o.activated_at == Some(at)))
    });
    scope.stale = 0;
}

mod live;
#[cfg(test)]
mod tests;

pub(crate) use live::{Live, LivenessAt};
