//! The rule of [`Object::liveness`], stated once as comparisons with thresholds, and [`LivenessAt`], which computes
//! those thresholds once for many objects at one time (a resolution admits about sixty).

use super::{Liveness, Object};
use crate::kinds::ObjectKind;
use crate::settings::ObjectSettings;
use crate::time::{Span, Timestamp};

/// What [`Object::liveness`] says, without when the activity ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Live {
    Active,
    Known,
    Expired,
}

impl From<Liveness> for Live {
    fn from(l: Liveness) -> Self {
        match l {
            Liveness::Active { .. } => Live::Active,
            Liveness::Known => Live::Known,
            Liveness::Expired => Live::Expired,
        }
    }
}

/// The liveness of objects at one `now`: the thresholds of [`classify`] computed once, per kind.
pub(crate) struct LivenessAt {
    /// Per kind: a time after which its TTL has not run out.
    ttl: [i64; ObjectKind::ALL.len()],
    /// A closing time after which the close grace has not run out.
    grace: i64,
}

/// A time after which `t.plus(span)` is still later than `now`: `now < t.plus(span)` holds exactly when `t` is
/// later than `now - span`, while `now` is before the last second a timestamp can hold (which `plus` never passes;
/// from there on it holds for no `t`).
pub(super) fn threshold(now: Timestamp, span: Span) -> i64 {
    if now.is_last() { i64::MAX } else { now.unix().saturating_sub(span.secs()) }
}

/// The rule of [`Object::liveness`], given the thresholds ([`threshold`]) of the object's TTL and of the close
/// grace at `now`. Activity slides from the last activation; a closed object is known for the grace, and active
/// for it when it was ever activated (its TTL from the activation does not end activity before the grace does).
#[inline]
pub(super) fn classify(o: &Object, ttl: i64, grace: i64) -> Live {
    if let Some(closed) = o.closed_at {
        return match (closed.unix() > grace, o.activated_at) {
            (true, Some(_)) => Live::Active,
            (true, None) => Live::Known,
            (false, _) => Live::Expired,
        };
    }
    if o.activated_at.is_some_and(|at| at.unix() > ttl) {
        Live::Active
    } else if o.last_touched_at.unix() > ttl {
        Live::Known
    } else {
        Live::Expired
    }
}

impl LivenessAt {
    pub(crate) fn new(now: Timestamp, settings: &ObjectSettings) -> Self {
        let mut ttl = [i64::MAX; ObjectKind::ALL.len()];
        for &k in ObjectKind::ALL {
            ttl[k as usize] = threshold(now, settings.ttl(k));
        }
        Self { ttl, grace: threshold(now, settings.close_grace) }
    }

    /// Whether something of `kind` dated `t` is within its TTL (`now < t.plus(ttl)`).
    #[inline]
    pub(crate) fn within_ttl(&self, kind: ObjectKind, t: Timestamp) -> bool {
        t.unix() > self.ttl[kind as usize]
    }

    /// As [`Object::liveness`] at this `now` says.
    #[inline]
    pub(crate) fn of(&self, o: &Object) -> Live {
        classify(o, self.ttl[o.kind as usize], self.grace)
    }
}
