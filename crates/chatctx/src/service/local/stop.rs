//! Snapshots at a clean stop ([`Local::snapshot_for_restart`]): the chats whose logs have operations since their last
//! snapshot get one, so that the next start reads one line per chat instead of replaying each chat's tail.

use std::time::{Duration, Instant};

use chatctx_core::Error;
use chatctx_store::Op;

use super::Local;
use crate::service::log::{ChatKey, Counts, key};

/// Chats snapshotted in one transaction (one sync each): a few megabytes of lines at the sizes a busy chat's
/// state reaches, so a stop that runs out of time leaves little half done, and the syncs stay few.
const CHATS_PER_WRITE: usize = 64;

/// What [`Local::snapshot_for_restart`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopSnapshots {
    /// Chats snapshotted.
    pub snapshotted: usize,
    /// Chats whose tails were long enough but which the time budget left as they were (their tails are replayed
    /// at the next start, as without this).
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
    /// Writes whatever is queued, then snapshots the chats [`tails`] names, in its order, [`CHATS_PER_WRITE`] to a
    /// transaction, until `budget` has passed (checked between transactions, so one transaction may end past it).
    /// A helper thread makes each transaction's snapshots while the one before is written (making and writing took
    /// about as long as each other). Holds the writer and the engine throughout: other calls wait. A write that
    /// fails stops it; what was written stays (each chat's snapshot stands for its log).
    pub(crate) fn snapshot_for_restart(&self, budget: Duration) -> Result<StopSnapshots, Error> {
        let started = Instant::now();
        let mut c = self.commit_lock()?;
        let mut inner = self.lock()?;
        self.flush(&mut c, &mut inner)?;
        let tails = tails(&inner.since_snapshot, self.every);
        let groups = tails.chunks(CHATS_PER_WRITE).map(|g| g.iter().map(|(_, k)| k.clone()).collect::<Vec<ChatKey>>());
        let engine = &inner.engine;
        // The chats written (their lines dropped once written), and how many groups were.
        let mut written: Vec<Op> = Vec::new();
        let mut groups_written = 0;
        std::thread::scope(|s| {
            let (tx, made) = std::sync::mpsc::sync_channel::<Vec<Op>>(1);
            let maker = move || {
                for chats in groups {
                    if tx.send(super::round::snapshots(engine, chats.iter())).is_err() {
                        return; // the writer stopped
                    }
                }
            };
            let helper = std::thread::Builder::new().name("chatctx-stop".into()).spawn_scoped(s, maker);
            if let Err(e) = &helper {
                tracing::warn!("no thread to make snapshots beside the writes ({e}); the stop snapshots nothing");
            }
            for snapshots in made.iter() {
                if started.elapsed() >= budget {
                    break;
                }
                if let Err(e) = self.store.write(&[], &snapshots, false) {
                    tracing::warn!("snapshots before stopping failed ({e}); the next start replays the logs left");
                    break;
                }
                written.extend(snapshots.into_iter().map(|o| Op { line: String::new(), ..o }));
                groups_written += 1;
            }
            // The helper, told by the closed channel, stops after the group it is making.
            drop(made);
        });
        let left = tails.len().saturating_sub(groups_written * CHATS_PER_WRITE);
        let operations =
            written.iter().filter_map(|s| inner.since_snapshot.get(&key(&s.channel, &s.chat_id))).sum::<u64>();
        inner.snapshotted(&written);
        Ok(StopSnapshots { snapshotted: written.len(), left, operations })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
