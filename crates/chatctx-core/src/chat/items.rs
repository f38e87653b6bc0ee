//! [`Items`]: a conversation's stored items, oldest first, with counts kept as items come and go of those
//! that selection cannot take without looking at them (background items; items the quieter modes leave out).
//! When there are none, every item before the message being answered is eligible, so a history answer counts
//! them by position and walks back only as far as its token budget reaches (issue 32, point 1) instead of
//! reading every stored item.

use std::collections::VecDeque;
use std::ops::Deref;

use super::Item;
use crate::kinds::{ItemKind, Origin};
use crate::settings::Mode;

/// A conversation's items (read through `Deref`; changed only through the methods below, which keep the
/// counts).
#[derive(Debug, Default)]
pub(crate) struct Items {
    ring: VecDeque<Item>,
    /// Items whose origin is not interactive.
    background: usize,
    /// Items the modes other than `talkative` do not record (inbound ones that did not trigger the bot, and
    /// reactions).
    quiet: usize,
}

/// What an item adds to the counts: `(background, quiet)`.
fn weight(i: &Item) -> (usize, usize) {
    let quiet = !(i.kind.is_outbound() || (i.triggered && i.kind != ItemKind::InboundReaction));
    (usize::from(i.origin != Origin::Interactive), usize::from(quiet))
}

impl Deref for Items {
    type Target = VecDeque<Item>;

    fn deref(&self) -> &VecDeque<Item> {
        &self.ring
    }
}

impl Items {
    fn count(&mut self, i: &Item) {
        let (b, q) = weight(i);
        self.background += b;
        self.quiet += q;
    }

    fn uncount(&mut self, i: &Item) {
        let (b, q) = weight(i);
        self.background -= b;
        self.quiet -= q;
    }

    /// Whether selection in `mode` would take every item it walks past: no background item is stored, and
    /// the mode records every kind stored.
    pub(crate) fn all_eligible(&self, mode: Mode) -> bool {
        self.background == 0 && (mode == Mode::Talkative || self.quiet == 0)
    }

    pub(crate) fn push_back(&mut self, item: Item) {
        self.count(&item);
        self.ring.push_back(item);
    }

    pub(crate) fn insert(&mut self, at: usize, item: Item) {
        self.count(&item);
        self.ring.insert(at, item);
    }

    pub(crate) fn pop_front(&mut self) -> Option<Item> {
        let item = self.ring.pop_front()?;
        self.uncount(&item);
        Some(item)
    }

    pub(crate) fn remove(&mut self, at: usize) -> Option<Item> {
        let item = self.ring.remove(at)?;
        self.uncount(&item);
        Some(item)
    }

    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Item) -> bool) {
        let (mut background, mut quiet) = (0, 0);
        self.ring.retain(|i| {
            let kept = keep(i);
            if kept {
                let (b, q) = weight(i);
                background += b;
                quiet += q;
            }
            kept
        });
        (self.background, self.quiet) = (background, quiet);
    }

    /// Notes that objects name item `at` as their source ([`Item::objects`]; not counted).
    pub(crate) fn note_objects(&mut self, at: usize) {
        if let Some(i) = self.ring.get_mut(at) {
            i.objects = true;
        }
    }

    /// The items, taken out.
    pub(crate) fn into_items(self) -> VecDeque<Item> {
        self.ring
    }

    /// The items, to change their texts, quotes, token counts or speakers. Their kind, origin and trigger
    /// must not change (the counts would be wrong; `counts_hold` checks them in tests).
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Item> {
        self.ring.iter_mut()
    }

    /// Whether the counts are those of the items (for tests).
    #[cfg(test)]
    pub(crate) fn counts_hold(&self) -> bool {
        let (b, q) = self.ring.iter().map(weight).fold((0, 0), |(b, q), (x, y)| (b + x, q + y));
        (b, q) == (self.background, self.quiet)
    }
}
