//! One write of the group commit ([`Local`]): the round it takes (everything queued, and the chats it makes due
//! for a snapshot), the snapshots, made in the same hold of the engine (on a helper thread while the store
//! writes the rest, for a large round a caller waits for on its own thread), and what it settles.

use chatctx_core::{Engine, Error};
use chatctx_store::{Op, StoreError};
use hashbrown::Equivalent;

use super::{Commit, Fate, Inner, Local, settle};
use crate::service::log::{ChatKey, ChatRef, count, internal, key, op, snapshot_line};

/// Routine snapshots (chats past `store.compact_after`) one write takes at least; an eighth of those waiting is
/// added (up to [`MAX_SNAPSHOTS_PER_WRITE`] in all), so a backlog shrinks. Spreading them keeps one write from
/// paying for many chats' compaction at once (each rewrites pages all over the file), which every writer
/// waiting on it would feel. An edited chat is snapshotted in the write that stores the edit, whatever the
/// count.
const SNAPSHOTS_PER_WRITE: usize = 1;

/// The most routine snapshots one write takes, however long the backlog (a store written with a larger
/// `store.compact_after`, or logs grown over earlier runs, can leave hundreds due at a start).
const MAX_SNAPSHOTS_PER_WRITE: usize = 16;

/// Rounds of at least this many operations have their snapshots made on a helper thread while the store writes
/// the rest ([`Local::write_alongside`]), on a machine with a second core: starting a thread costs tens of
/// microseconds, about what writing a few dozen rows does.
pub(super) const SNAPSHOTS_ALONGSIDE: usize = 256;

/// Snapshots one write takes, besides the others, of chats the store names as holding back space
/// ([`chatctx_store::Log::reclaim`]; asked only when superseded operations outnumber those in use).
const RECLAIMS_PER_WRITE: usize = 2;

/// One write: everything queued when it was taken, with its changes' fates, how many operations it
/// settles, per chat how many it writes, and the snapshots that replace the logs of the chats it made due.
pub(super) struct Round {
    pub(super) batch: Vec<Op>,
    pub(super) fates: Vec<Fate>,
    pub(super) upto: u64,
    /// Per chat it writes to: the index of one of its operations in `batch`, and how many it writes.
    pub(super) counts: Vec<(usize, u64)>,
    pub(super) snapshots: Vec<Op>,
    /// The chats it snapshots: they leave the waiting list once the snapshots are written, not before.
    pub(super) taken: Vec<ChatKey>,
    /// Whether a snapshot replaces an edited message's earlier text, which must leave the store's files now.
    pub(super) erase: bool,
}

/// A round, and how the store took it.
pub(super) type Written = (Round, Result<(), StoreError>);

/// Snapshots of `chats`, each a line that replaces its whole log (a chat whose state cannot be exported keeps
/// its log, said in the server log).
pub(super) fn snapshots<'a>(engine: &Engine, chats: impl Iterator<Item = &'a ChatKey>) -> Vec<Op> {
    chats
        .filter_map(|(channel, chat)| match snapshot_line(engine, channel, chat) {
            Ok(line) => Some(op(channel, chat, line)),
            Err(e) => {
                tracing::warn!("chat {chat} could not be snapshotted (its full log stays): {e}");
                None
            }
        })
        .collect()
}

impl Local {
    /// A round whose snapshots are made on a helper thread while the store writes its other chats' operations
    /// (inserting the rows and making the snapshots' lines took about 17 % and 9 % of a large batch's time, one
    /// after the other). The helper takes the round and makes its snapshots in one hold of the engine, as
    /// [`Local::take_round`] requires; SQLite's work stays on this thread (moving it between cores cost more than
    /// it saved, docs/benchmarks-issue-32.md). `None` when no helper could be started: nothing was taken.
    pub(super) fn write_alongside(&self) -> Option<Result<Written, Error>> {
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            let helper = std::thread::Builder::new()
                .name("chatctx-snapshots".into())
                .spawn_scoped(s, move || {
                    let Ok(mut inner) = self.lock() else { return Vec::new() };
                    let round = self.take_round(&mut inner, &[]);
                    let chats = round.taken.clone();
                    if tx.send(round).is_err() {
                        return Vec::new();
                    }
                    snapshots(&inner.engine, chats.iter())
                })
                .ok()?;
            let Ok(mut round) = rx.recv() else {
                return Some(Err(internal("the engine is unusable after an earlier panic")));
            };
            let mut helper = Some(helper);
            // A helper that failed gives no snapshots: its chats keep their logs, this write's operations included.
            let mut made = || helper.take().and_then(|h| h.join().ok()).unwrap_or_default();
            let written = self.store.write_making(&round.batch, &round.taken, &mut made, round.erase);
            let written = written.map(|snapshots| round.snapshots = snapshots);
            Some(Ok((round, written)))
        })
    }

    /// [`Local::take_round`] with its snapshots, made in the same hold of the engine.
    pub(super) fn take_round_whole(&self, inner: &mut Inner, also: &[ChatKey]) -> Round {
        let mut round = self.take_round(inner, also);
        round.snapshots = snapshots(&inner.engine, round.taken.iter());
        round
    }

    /// Takes everything queued, and the chats it makes due for a snapshot (past `store.compact_after`, or
    /// edited) with `also` (a stop's, [`Local::snapshot_for_restart`]), for one transaction; their snapshots are to
    /// be made before the engine is released. The engine holds exactly what was written before and what is queued,
    /// so a snapshot taken then stands for the chat's log with this batch and nothing after it.
    pub(super) fn take_round(&self, inner: &mut Inner, also: &[ChatKey]) -> Round {
        let batch = std::mem::take(&mut inner.pending);
        // By borrowed keys: a write's thousand chats cost no allocation here or when counted after it.
        let mut per_chat: hashbrown::HashMap<ChatRef<'_>, (usize, u64)> = hashbrown::HashMap::new();
        for (i, o) in batch.iter().enumerate().filter(|(_, o)| !o.chat_id.is_empty()) {
            per_chat.entry(ChatRef::of(o)).or_insert((i, 0)).1 += 1;
        }
        let mut due = std::mem::take(&mut inner.edited);
        let erase = !due.is_empty();
        for (k, &(_, n)) in &per_chat {
            // An edited chat is snapshotted in this write anyway: it takes no place of the routine ones.
            if inner.since_snapshot.get(k).copied().unwrap_or(0) + n >= self.every
                && !due.iter().any(|d| k.equivalent(d))
            {
                inner.overdue.insert(&key(k.0, k.1));
            }
        }
        let counts: Vec<(usize, u64)> = per_chat.into_values().collect();
        let budget = (SNAPSHOTS_PER_WRITE + inner.overdue.len() / 8).min(MAX_SNAPSHOTS_PER_WRITE);
        let routine = inner.overdue.first(budget, |k| due.contains(k));
        due.extend(routine);
        // Chats whose old operations keep the store from giving back the space of superseded ones.
        due.extend(self.store.reclaim(RECLAIMS_PER_WRITE).iter().map(|(channel, chat)| key(channel, chat)));
        due.extend(also.iter().cloned());
        let fates = std::mem::take(&mut inner.waiting);
        Round {
            fates,
            upto: inner.queued,
            batch,
            counts,
            snapshots: Vec::new(),
            taken: due.into_iter().collect(),
            erase,
        }
    }

    /// After a round's write: counts what it wrote per chat (from nothing for the chats it snapshotted) and
    /// tells its changes; or, when it failed, undoes everything not durable.
    pub(super) fn settle_round(
        &self,
        c: &mut Commit,
        inner: &mut Inner,
        round: Round,
        written: Result<(), StoreError>,
    ) -> Result<(), Error> {
        match written {
            Ok(()) => {
                self.note_success();
                c.settled = round.upto;
                settle(round.fates, &Ok(()));
                for (i, n) in round.counts {
                    count(&mut inner.since_snapshot, ChatRef::of(&round.batch[i]), n);
                }
                inner.snapshotted(&round.snapshots);
                // Also those it took that had no snapshot to write (a chat forgotten meanwhile).
                inner.overdue.remove_all(&round.taken);
                Ok(())
            }
            Err(e) => {
                // The chats it would have snapshotted stay on the waiting list for the next write.
                self.drop_unwritten(c, inner, &round.batch, round.fates, &e);
                Err(internal(format!("earlier changes could not be stored: {e}")))
            }
        }
    }
}
