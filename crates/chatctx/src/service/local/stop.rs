//! Snapshots at a clean stop ([`Local::snapshot_for_restart`]): the chats whose logs have operations since their last
//! snapshot get one, so that the next start reads one line per chat instead of replaying each chat's tail.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chatctx_core::Error;

use super::Local;
use crate::service::log::{ChatKey, Counts};

/// Chats snapshotted in one write: with a busy chat's state at ~70 KB, about a megabyte of lines, whose making holds
/// the engine for ~5 ms (the requests a server still answers meanwhile wait that long) and whose write is one sync.
const CHATS_PER_WRITE: usize = 16;

/// What [`Service::snapshot_for_restart`](crate::service::Service::snapshot_for_restart) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopSnapshots {
    /// Chats snapshotted.
    pub snapshotted: usize,
    /// Chats whose tails were long enough but which were left as they were (the time given ran out, the stop was cut
    /// short, or a write failed): their tails are replayed at the next start, as without this.
    pub left: usize,
    /// Operations the next start will not replay.
    pub operations: u64,
}

/// The chats a stop snapshots, in turn: those with at least an eighth of `store.compact_after` (`every`) operations
/// logged since their last snapshot (25 by default), longest tails first, then by key (the same order for the same
/// state, whatever the map's). A snapshot rewrites the chat's whole state to spare the next start its tail, so a chat
/// with only a few operations since its last snapshot is left to replay them.
fn tails(since_snapshot: &Counts, every: u64) -> Vec<(u64, ChatKey)> {
    let min = (every / 8).max(1);
    let mut tails: Vec<(u64, ChatKey)> =
        since_snapshot.iter().filter(|(_, n)| **n >= min).map(|(k, n)| (*n, k.clone())).collect();
    tails.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    tails
}

impl Local {
    /// Snapshots the chats [`tails`] names, in its order, [`CHATS_PER_WRITE`] to a write, until `budget` has passed
    /// (checked between writes, so one may end past it). Each write is a round of the group commit, these chats
    /// added to those it snapshots ([`Local::take_round`]), with whatever is queued: so the service
    /// keeps answering meanwhile (a server runs this while it still serves, docs/operations.md), and a chat written
    /// to meanwhile is snapshotted with what it holds then. A chat deleted, or snapshotted by a routine compaction,
    /// meanwhile is passed over. A write that fails stops it (its queued changes are refused as any failed write's
    /// are), as does `cancel` set (looked at between writes); what was written stays.
    pub(crate) fn snapshot_for_restart(&self, budget: Duration, cancel: &AtomicBool) -> Result<StopSnapshots, Error> {
        let started = Instant::now();
        let tails = tails(&self.lock()?.since_snapshot, self.every);
        let mut done = StopSnapshots::default();
        for (i, group) in tails.chunks(CHATS_PER_WRITE).enumerate() {
            if started.elapsed() >= budget || cancel.load(Ordering::Relaxed) {
                done.left = tails.len() - i * CHATS_PER_WRITE;
                break;
            }
            let mut c = self.commit_lock()?;
            let (round, wanted, operations) = {
                let mut inner = self.lock()?;
                let since = |k: &ChatKey| inner.since_snapshot.get(k).copied().unwrap_or(0);
                let wanted: Vec<ChatKey> = group.iter().map(|(_, k)| k).filter(|k| since(k) > 0).cloned().collect();
                let operations: u64 = wanted.iter().map(since).sum();
                (self.take_round_whole(&mut inner, &wanted), wanted, operations)
            };
            let written = self.store.write(&round.batch, &round.snapshots, round.erase);
            let made = round.snapshots.iter().filter(|s| wanted.iter().any(|k| k.0 == s.channel && k.1 == s.chat_id));
            let made = made.count();
            let failed = written.as_ref().err().map(ToString::to_string);
            let _told_through_tickets = self.settle_round(&mut c, &mut *self.lock()?, round, written);
            self.publish(&c);
            if let Some(e) = failed {
                tracing::warn!("snapshots before stopping failed ({e}); the next start replays the logs left");
                done.left = tails.len() - i * CHATS_PER_WRITE;
                break;
            }
            done.snapshotted += made;
            done.operations += operations;
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::log::key;

    #[test]
    fn the_longest_tails_go_first_and_short_ones_stay() {
        let counts: Counts =
            [("a", 30), ("b", 4), ("c", 200), ("d", 30), ("e", 5)].map(|(c, n)| (key("telegram", c), n)).into();
        let order: Vec<(u64, String)> = tails(&counts, 40).into_iter().map(|(n, k)| (n, k.1)).collect();
        // An eighth of 40 is 5: "b" keeps its four operations; ties go by key.
        assert_eq!(order, [(200, "c"), (30, "a"), (30, "d"), (5, "e")].map(|(n, c)| (n, c.to_owned())));
        // However small `store.compact_after`, a chat with one operation may be snapshotted, and none without.
        let one: Counts = [(key("telegram", "x"), 1), (key("telegram", "y"), 0)].into();
        assert_eq!(tails(&one, 3).len(), 1);
    }
}
