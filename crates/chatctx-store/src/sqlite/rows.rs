//! Where each chat's rows are in the log table, kept in memory.
//!
//! The table is written in one order only: appended, whatever the chat. It has no index by chat, because with
//! many chats written at once such an index puts each new row on a page of its own (one page written per
//! message) and a compaction's deletions land on as many pages as the chat had rows. Instead:
//! - a snapshot *supersedes* its chat's earlier rows (`chats.base`: rows of the chat numbered below it are
//!   superseded) and deletes nothing, unless what it replaces must leave the file now (`erase`);
//! - rows below the oldest row still in use are all superseded, and are deleted from the front of the table,
//!   a few hundred per write ([`Rows::gatherable`]);
//! - when superseded rows outweigh the rows in use, [`Rows::holding_back`] names the chats whose old rows keep
//!   that range from growing, for the service to snapshot.
//!
//! This process alone writes the file (docs/deployment.md), so what is kept here stays true; it is rebuilt from
//! the table whenever a write fails (see `SqliteStore::placed`).

use std::collections::{BTreeMap, VecDeque};

// foldhash: a restart looks up every row's chat here.
use hashbrown::HashMap;

/// A chat as a key: its channel's length, the channel, then the chat id (no two chats share one).
pub(super) fn key(buf: &mut Vec<u8>, channel: &str, chat_id: &str) {
    buf.clear();
    buf.extend_from_slice(&(channel.len() as u32).to_le_bytes());
    buf.extend_from_slice(channel.as_bytes());
    buf.extend_from_slice(chat_id.as_bytes());
}

/// The chat a [`key`] names.
fn chat(key: &[u8]) -> Option<(String, String)> {
    let len = u32::from_le_bytes(key.get(..4)?.try_into().ok()?) as usize;
    let channel = std::str::from_utf8(key.get(4..4 + len)?).ok()?;
    let chat_id = std::str::from_utf8(key.get(4 + len..)?).ok()?;
    Some((channel.to_owned(), chat_id.to_owned()))
}

/// One chat's rows.
#[derive(Debug, Default)]
struct Placed {
    /// The numbers (`seq`) and sizes of its rows in the table, ascending; rows below [`Rows::gone_below`]
    /// may linger here until the chat is next touched.
    seqs: VecDeque<(i64, u32)>,
    /// Its rows numbered below this are superseded.
    base: i64,
    /// Its oldest row in use, if it has any (its entry in [`Rows::fronts`]).
    front: Option<i64>,
    /// Its newest position (kept when its rows are removed: positions are never reused). The table's
    /// `chats.head` is written only when a snapshot or a removal needs it; the rows' own positions say the rest.
    head: u64,
}

impl Placed {
    /// Drops the rows deleted with the range below `gone`.
    fn trim(&mut self, gone: i64) {
        while self.seqs.front().is_some_and(|&(s, _)| s < gone) {
            self.seqs.pop_front();
        }
    }

    /// Where its rows in use begin in [`Placed::seqs`].
    fn first_live(&self) -> usize {
        self.seqs.partition_point(|&(s, _)| s < self.base)
    }
}

/// Every chat's rows, and the superseded rows still in the table.
#[derive(Debug, Default)]
pub(super) struct Rows {
    chats: HashMap<Vec<u8>, Placed>,
    /// Each chat with rows in use, by its oldest such row.
    fronts: BTreeMap<i64, Box<[u8]>>,
    /// Superseded rows still in the table, with their sizes.
    superseded: BTreeMap<i64, u32>,
    /// Superseded rows [`Rows::seen`] (in order) and not yet in `superseded`: built at once by [`Rows::read`].
    seen_superseded: Vec<(i64, u32)>,
    /// Their sizes together.
    superseded_bytes: u64,
    /// The sizes of the rows in use together.
    live_bytes: u64,
    /// Every row numbered below this has been deleted.
    gone_below: i64,
    /// The newest row's number.
    newest: i64,
    /// The file's `PRAGMA data_version` when this was read: it changes when another connection commits (this
    /// one's own commits leave it), so a different value means another process wrote the file since (see
    /// `SqliteStore::writing`).
    pub(super) version: i64,
}

/// How many bytes of superseded rows the table may hold beyond the bytes of the rows in use, by default, before
/// the chats holding them back are named for a snapshot ([`crate::Log::reclaim`]).
pub const DEFAULT_SUPERSEDED_SLACK: u64 = 8 << 20;

/// A row's size as kept (a row is at most a log line, far below 4 GiB).
fn size(bytes: usize) -> u32 {
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

impl Rows {
    /// Starts from the chats' table (each chat's `base` and `head`), before their rows are [`Rows::seen`] in order.
    pub(super) fn with_chats(chats: impl IntoIterator<Item = (Vec<u8>, i64, u64)>) -> Self {
        let chats = chats.into_iter().map(|(k, base, head)| (k, Placed { base, head, ..Placed::default() })).collect();
        Rows { chats, ..Rows::default() }
    }

    /// A row read from the table (`bytes` long), in the order of their numbers: its position when it is in use
    /// (asked of `pos` only then: a superseded row's position is below its chat's snapshot's), `None` when it is
    /// superseded.
    pub(super) fn seen<E>(
        &mut self,
        key: &[u8],
        seq: i64,
        bytes: usize,
        pos: impl FnOnce() -> Result<u64, E>,
    ) -> Result<Option<u64>, E> {
        if self.newest == 0 {
            self.gone_below = seq;
        }
        self.newest = seq;
        let placed = self.chats.entry_ref(key).or_default();
        placed.seqs.push_back((seq, size(bytes)));
        if seq < placed.base {
            self.seen_superseded.push((seq, size(bytes)));
            self.superseded_bytes += bytes as u64;
            return Ok(None);
        }
        let pos = pos()?;
        placed.head = placed.head.max(pos);
        self.live_bytes += bytes as u64;
        if placed.front.is_none() {
            placed.front = Some(seq);
            self.fronts.insert(seq, key.into());
        }
        Ok(Some(pos))
    }

    /// Every row was [`Rows::seen`].
    pub(super) fn read(&mut self) {
        let seen = std::mem::take(&mut self.seen_superseded);
        if self.superseded.is_empty() {
            // In order: built in one pass.
            self.superseded = seen.into_iter().collect();
        } else {
            self.superseded.extend(seen);
        }
    }

    /// A chat's newest position (0: none yet).
    pub(super) fn head(&self, key: &[u8]) -> u64 {
        self.chats.get(key).map_or(0, |p| p.head)
    }

    /// Takes a chat's next `n` positions: its new head.
    pub(super) fn reserve(&mut self, key: &[u8], n: usize) -> u64 {
        let placed = self.chats.entry_ref(key).or_default();
        placed.head += n as u64;
        placed.head
    }

    /// Rows appended to a chat, numbered from `first`, with the sizes `bytes`.
    pub(super) fn appended(&mut self, key: &[u8], first: i64, bytes: impl IntoIterator<Item = usize>) {
        let placed = self.chats.entry_ref(key).or_default();
        let mut seq = first;
        for b in bytes {
            placed.seqs.push_back((seq, size(b)));
            self.live_bytes += b as u64;
            seq += 1;
        }
        if placed.front.is_none() && seq > first {
            placed.front = Some(first);
            self.fronts.insert(first, key.into());
        }
        self.newest = self.newest.max(seq - 1);
    }

    /// A chat's snapshot was appended as row `seq` (already [`Rows::appended`]): its rows before it are
    /// superseded. The numbers of all its rows before it still in the table.
    pub(super) fn supersede(&mut self, key: &[u8], seq: i64) -> Vec<i64> {
        let Some(placed) = self.chats.get_mut(key) else { return Vec::new() };
        placed.trim(self.gone_below);
        for &(s, b) in placed.seqs.iter().skip(placed.first_live()).take_while(|&&(s, _)| s < seq) {
            self.live_bytes -= u64::from(b);
            self.superseded.insert(s, b);
            self.superseded_bytes += u64::from(b);
        }
        placed.base = seq;
        if let Some(front) = placed.front.replace(seq) {
            self.fronts.remove(&front);
        }
        self.fronts.insert(seq, key.into());
        placed.seqs.iter().map(|&(s, _)| s).take_while(|&s| s < seq).collect()
    }

    /// Superseded rows of a chat deleted from the table (`seqs`, ascending).
    pub(super) fn deleted(&mut self, key: &[u8], seqs: &[i64]) {
        if let Some(placed) = self.chats.get_mut(key) {
            placed.seqs.retain(|(s, _)| seqs.binary_search(s).is_err());
        }
        for s in seqs {
            if let Some(b) = self.superseded.remove(s) {
                self.superseded_bytes -= u64::from(b);
            }
        }
    }

    /// A chat's rows, all of them, for deleting them (the chat keeps its head; with no rows, none is superseded).
    pub(super) fn remove(&mut self, key: &[u8]) -> Vec<i64> {
        let gone = self.gone_below;
        let Some(placed) = self.chats.get_mut(key) else { return Vec::new() };
        placed.trim(gone);
        let first_live = placed.first_live();
        placed.base = 0;
        if let Some(front) = placed.front.take() {
            self.fronts.remove(&front);
        }
        let rows = std::mem::take(&mut placed.seqs);
        self.live_bytes -= rows.iter().skip(first_live).map(|&(_, b)| u64::from(b)).sum::<u64>();
        let seqs: Vec<i64> = rows.iter().map(|&(s, _)| s).collect();
        self.deleted(key, &seqs);
        seqs
    }

    /// The numbers of a chat's rows in use, in order.
    pub(super) fn in_use(&mut self, key: &[u8]) -> Vec<i64> {
        let gone = self.gone_below;
        let Some(placed) = self.chats.get_mut(key) else { return Vec::new() };
        placed.trim(gone);
        placed.seqs.iter().skip(placed.first_live()).map(|&(s, _)| s).collect()
    }

    /// Rows below the oldest row in use are all superseded: the number below which to delete the oldest `most`
    /// of them, if any are there (a few at a time, so that no one write pays for a long range).
    pub(super) fn gatherable(&self, most: usize) -> Option<i64> {
        let front = self.front();
        let first = *self.superseded.first_key_value()?.0;
        let bound = if self.superseded.len() > most { self.superseded.keys().nth(most).copied() } else { None };
        (first < front).then_some(front.min(bound.unwrap_or(i64::MAX)))
    }

    /// The oldest row in use (none: every row is superseded).
    fn front(&self) -> i64 {
        self.fronts.first_key_value().map_or(i64::MAX, |(&s, _)| s)
    }

    /// The range below `below` was deleted.
    pub(super) fn gathered(&mut self, below: i64) {
        // Not past the newest row: rows appended later are above it (with no row in use, `below` is unbounded).
        self.gone_below = below.min(self.newest + 1);
        let kept = self.superseded.split_off(&below);
        let gone = std::mem::replace(&mut self.superseded, kept);
        self.superseded_bytes -= gone.values().map(|&b| u64::from(b)).sum::<u64>();
    }

    /// When superseded rows outweigh those in use by more than `slack` bytes: up to `most` chats whose rows in
    /// use are the oldest (begin in the older half of the table), which keep the superseded rows after them
    /// from being deleted; a snapshot of each lets them go. (By bytes: a snapshot rewrites its chat's state,
    /// so chats are snapshotted again at most once per as many bytes of superseded rows as the state holds.)
    pub(super) fn holding_back(&self, most: usize, slack: u64) -> Vec<(String, String)> {
        if self.superseded_bytes <= self.live_bytes + slack {
            return Vec::new();
        }
        // Those before every row in use go with the next writes anyway (`gatherable`).
        let going: u64 = self.superseded.range(..self.front()).map(|(_, &b)| u64::from(b)).sum();
        if self.superseded_bytes - going <= self.live_bytes + slack {
            return Vec::new();
        }
        let half = self.gone_below + (self.newest - self.gone_below) / 2;
        self.fronts.range(..half).take(most).filter_map(|(_, k)| chat(k)).collect()
    }

    /// Bytes of superseded rows in the table, and of rows in use.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> (u64, u64) {
        (self.superseded_bytes, self.live_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(chat: &str) -> Vec<u8> {
        let mut buf = Vec::new();
        key(&mut buf, "telegram", chat);
        buf
    }

    #[test]
    fn a_key_names_its_chat_back() {
        assert_eq!(chat(&k("-100")), Some(("telegram".to_owned(), "-100".to_owned())));
        let mut a = Vec::new();
        let mut b = Vec::new();
        key(&mut a, "ab", "c");
        key(&mut b, "a", "bc");
        assert_ne!(a, b, "the channel's length keeps chats apart");
    }

    #[test]
    fn superseded_rows_before_the_oldest_in_use_are_gathered() {
        let mut rows = Rows::default();
        rows.appended(&k("a"), 1, [10, 10]); // a: 1 2
        rows.appended(&k("b"), 3, [10]); // b: 3
        rows.appended(&k("a"), 4, [100]); // a: 4
        assert_eq!(rows.gatherable(100), None, "nothing superseded");
        rows.appended(&k("a"), 5, [5]);
        assert_eq!(rows.supersede(&k("a"), 5), vec![1, 2, 4]);
        rows.appended(&k("a"), 6, [1; 5]); // a: 5 6 7 8 9 10
        assert_eq!(rows.bytes(), (120, 20));
        assert_eq!(rows.gatherable(100), Some(3), "b's row 3 is the oldest in use");
        assert_eq!(rows.gatherable(1), Some(2), "one at a time");
        let b = ("telegram".to_owned(), "b".to_owned());
        assert_eq!(rows.holding_back(4, 0), [b], "b holds back row 4 (a's front is in the newer half)");
        assert!(rows.holding_back(4, 80).is_empty(), "within the slack (rows 1 and 2 go anyway)");
        rows.gathered(3);
        assert_eq!(rows.bytes(), (100, 20), "row 4 waits");
        assert_eq!(rows.in_use(&k("a")), vec![5, 6, 7, 8, 9, 10]);
        assert_eq!(rows.remove(&k("b")), vec![3]);
        assert_eq!(rows.bytes(), (100, 10));
        assert_eq!(rows.gatherable(100), Some(5));
        rows.gathered(5);
        assert_eq!(rows.bytes(), (0, 10));
        assert_eq!(rows.remove(&k("a")), vec![5, 6, 7, 8, 9, 10]);
        rows.gathered(i64::MAX);
        rows.appended(&k("c"), 11, [1]);
        assert_eq!(rows.in_use(&k("c")), vec![11], "a row after everything was deleted is kept");
    }
}
