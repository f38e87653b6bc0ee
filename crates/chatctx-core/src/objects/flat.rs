//! The flat candidate array: what resolution reads of each object to choose its candidates (kind, times,
//! activation, whether the bot made it, its scope), one small entry per slab slot, kept beside the slab and
//! rewritten by every change to the object in that slot (registration, update, activation, close, deletion),
//! so choosing candidates reads these entries and not the objects, and each survivor's object once. Nothing
//! reads a stale entry: an entry carries its slot's generation, and a reference from an index matches it only
//! while the object it was made for lives.

use super::{Liveness, Object, Ref};
use crate::kinds::ObjectKind;
use crate::settings::ObjectSettings;
use crate::time::Timestamp;

/// One slot's entry: what decides whether an object is a candidate, and how live it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flat {
    /// The slot's generation when this entry was written.
    pub(crate) generation: u32,
    /// Whether the slot holds an object.
    pub(crate) live: bool,
    pub(crate) kind: ObjectKind,
    pub(crate) created_at: Timestamp,
    pub(crate) last_touched: Timestamp,
    pub(crate) activated_at: Option<Timestamp>,
    pub(crate) closed_at: Option<Timestamp>,
    pub(crate) by_bot: bool,
    /// The scope it is registered in ([`super::ScopeIndex::id`]): whether it is in a topic is one comparison.
    pub(crate) scope: u32,
}

impl Flat {
    /// An empty slot's entry.
    pub(crate) const EMPTY: Flat = Flat {
        generation: 0,
        live: false,
        kind: ObjectKind::Message,
        created_at: Timestamp::EPOCH,
        last_touched: Timestamp::EPOCH,
        activated_at: None,
        closed_at: None,
        by_bot: false,
        scope: 0,
    };

    /// The entry of `obj`, held in a slot of generation `generation` and registered in scope `scope` (empty
    /// for `None`).
    pub(crate) fn of(obj: Option<&Object>, generation: u32, scope: u32) -> Flat {
        match obj {
            None => Flat { generation, ..Flat::EMPTY },
            Some(o) => Flat {
                generation,
                live: true,
                kind: o.kind,
                created_at: o.created_at,
                last_touched: o.last_touched_at,
                activated_at: o.activated_at,
                closed_at: o.closed_at,
                by_bot: o.created_by_bot,
                scope,
            },
        }
    }

    /// Whether `r` names the object this entry was written for.
    pub(crate) fn matches(&self, r: Ref) -> bool {
        self.live && self.generation == r.generation
    }

    /// The object's liveness at `now` ([`Object::liveness`], from the entry alone).
    pub(crate) fn liveness(&self, now: Timestamp, settings: &ObjectSettings) -> Liveness {
        liveness(self.kind, self.closed_at, self.activated_at, self.last_touched, now, settings)
    }

    /// Whether the object is one of the message kinds (a message registered as a candidate).
    pub(crate) fn is_message(&self) -> bool {
        matches!(self.kind, ObjectKind::Message | ObjectKind::BotMessage)
    }
}

/// Liveness from the fields that decide it (shared by [`Object::liveness`] and [`Flat::liveness`]).
/// Activity slides from the last activation; a closed object stays active for the close grace at most.
pub(super) fn liveness(
    kind: ObjectKind,
    closed_at: Option<Timestamp>,
    activated_at: Option<Timestamp>,
    last_touched: Timestamp,
    now: Timestamp,
    settings: &ObjectSettings,
) -> Liveness {
    let ttl = settings.ttl(kind);
    if let Some(closed) = closed_at {
        let until = closed.plus(settings.close_grace);
        return match activated_at {
            Some(at) if now < until && now < at.plus(ttl).max(until) => Liveness::Active { expires_at: until },
            _ if now < until => Liveness::Known,
            _ => Liveness::Expired,
        };
    }
    if let Some(at) = activated_at {
        let until = at.plus(ttl);
        if now < until {
            return Liveness::Active { expires_at: until };
        }
    }
    if now < last_touched.plus(ttl) { Liveness::Known } else { Liveness::Expired }
}
