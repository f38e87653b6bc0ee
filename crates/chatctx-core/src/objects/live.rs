//! [`Object::liveness`] for many objects at one time: a resolution admits about sixty, each with a TTL looked up
//! by kind and two or three saturating additions. Here the comparisons' thresholds are computed once.

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

/// The liveness of objects at one `now`. `now < t.plus(span)` holds exactly when `t` is later than
/// `now - span`, while `now` is before the last second a timestamp can hold (which `plus` never passes; from there
/// on it holds for no `t`): so each comparison with a TTL or the close grace is one with a threshold.
pub(crate) struct LivenessAt {
    /// Per kind: a time after which its TTL has not run out.
    ttl: [i64; ObjectKind::ALL.len()],
    /// A closing time after which the close grace has not run out.
    grace: i64,
}

fn threshold(now: Timestamp, span: Span) -> i64 {
    if now.is_last() { i64::MAX } else { now.unix().saturating_sub(span.secs()) }
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
        if let Some(closed) = o.closed_at {
            // Within the grace, an activated object is active: its TTL from the activation, whatever it is, does not
            // end activity before the grace does.
            return match (closed.unix() > self.grace, o.activated_at) {
                (true, Some(_)) => Live::Active,
                (true, None) => Live::Known,
                (false, _) => Live::Expired,
            };
        }
        if o.activated_at.is_some_and(|at| self.within_ttl(o.kind, at)) {
            Live::Active
        } else if self.within_ttl(o.kind, o.last_touched_at) {
            Live::Known
        } else {
            Live::Expired
        }
    }
}
