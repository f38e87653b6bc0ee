//! Checkpoints off the writer's path: a thread with a connection of its own copies the WAL into the database
//! file once about [`CHECKPOINT_EVERY`] bytes were committed, so the copy and the database file's sync (tens of
//! milliseconds when a thousand pages are due) happen while the writer acknowledges and takes its next batch,
//! instead of inside one writer's commit.
//!
//! SQLite's automatic checkpoint stays on for the writer. It bounds the WAL as before: a WAL starts again from
//! its beginning only when a writer finds it wholly copied, which a checkpoint running beside a writer that never
//! pauses cannot promise (checkpoints on a timer with the automatic ones off let a WAL grow to 1.4 GB,
//! docs/benchmarks-issue-32.md). When it runs, it finds most frames already copied and the database file
//! already synced, so it costs the writer only the last frames.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use rusqlite::Connection;

/// Bytes of operations' log lines committed between two checkpoints of the thread (the snapshots a write makes are
/// not counted: an estimate of what the WAL took, not its size). Each checkpoint syncs the database file,
/// and each copies every page changed since the one before: after every commit, the 256-connection mixed load
/// lost 12-16 % of its requests (its commits are small and touch the same pages); at a mebibyte it gained, as did
/// in-process ingest (docs/benchmarks-issue-32.md).
pub(super) const CHECKPOINT_EVERY: u64 = 1 << 20;

/// The thread, and how it is woken.
pub(super) struct Checkpointer {
    wake: Arc<Wake>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Wake {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    /// Bytes committed since the last checkpoint began: one is due once they reach [`CHECKPOINT_EVERY`].
    pending: u64,
    stop: bool,
}

impl Checkpointer {
    /// Starts the thread on its own connection to `path`; `None` when either cannot be had (the writer's
    /// automatic checkpoints then do all the copying, as they would anyway).
    pub(super) fn start(path: &Path) -> Option<Self> {
        let conn = connect(path)?;
        let wake = Arc::new(Wake::default());
        let woken = wake.clone();
        let thread =
            std::thread::Builder::new().name("chatctx-checkpoint".to_owned()).spawn(move || run(&conn, &woken)).ok()?;
        Some(Self { wake, thread: Some(thread) })
    }

    /// Says a commit of about `bytes` happened: once [`CHECKPOINT_EVERY`] were committed, a checkpoint follows
    /// (unless one is already waiting to start).
    pub(super) fn committed(&self, bytes: u64) {
        if let Ok(mut s) = self.wake.state.lock() {
            s.pending += bytes;
            if s.pending >= CHECKPOINT_EVERY {
                self.wake.ready.notify_one();
            }
        }
    }
}

/// The thread's connection. A checkpoint syncs by its own connection's setting: without the sync of the file after
/// the copy, the writer could start the WAL over while the copied pages were still only in the page cache, and a
/// power loss would take acknowledged writes with it.
fn connect(path: &Path) -> Option<Connection> {
    let conn = Connection::open(path).ok()?;
    conn.pragma_update(None, "synchronous", "FULL").ok()?;
    Some(conn)
}

fn run(conn: &Connection, wake: &Wake) {
    loop {
        {
            let Ok(mut s) = wake.state.lock() else { return };
            while s.pending < CHECKPOINT_EVERY && !s.stop {
                s = match wake.ready.wait(s) {
                    Ok(s) => s,
                    Err(_) => return,
                };
            }
            if s.stop {
                return;
            }
            // What was committed until now is copied by this checkpoint.
            s.pending = 0;
        }
        // PASSIVE: copies what no reader still needs and waits for nobody. A checkpoint lock held elsewhere (the
        // writer's automatic checkpoint, a scrub) skips this one; a failure (a full disk) leaves the copying to
        // the writer's automatic checkpoint, whose commit reports it.
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        if let Ok(mut s) = self.wake.state.lock() {
            s.stop = true;
            self.wake.ready.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::CHECKPOINT_EVERY;
    use crate::sqlite::SqliteStore;
    use crate::{Log, Op, Store};
    use std::path::Path;

    /// Pages the database file holds, as its header says (bytes 28-31, big-endian): what checkpoints copied
    /// into it, whatever the WAL holds beyond.
    fn pages_in_file(path: &Path) -> u32 {
        let bytes = std::fs::read(path).unwrap();
        u32::from_be_bytes(bytes[28..32].try_into().unwrap())
    }

    /// Writes of `chats` chats, each a 16 KiB line, to `store`, `rounds` times.
    fn write(store: &SqliteStore, rounds: usize, chats: usize) {
        for _ in 0..rounds {
            let ops: Vec<Op> = (0..chats)
                .map(|c| Op { channel: "t".into(), chat_id: format!("c{c}"), line: "x".repeat(16 * 1024) })
                .collect();
            store.write(&ops, &[], false).unwrap();
        }
    }

    /// The thread's checkpoints sync the file (`synchronous` FULL, 2), whatever SQLite's build defaults to.
    #[test]
    fn the_thread_syncs_what_it_copies() {
        let dir = crate::testing::Scratch::new("sqlite-checkpointer-sync");
        let path = dir.file("s.db");
        drop(SqliteStore::open_checked(&path, None).unwrap());
        let conn = super::connect(&path).unwrap();
        let level: i64 = conn.pragma_query_value(None, "synchronous", |r| r.get(0)).unwrap();
        assert_eq!(level, 2);
    }

    /// Past [`CHECKPOINT_EVERY`] bytes, the thread copies the commits into the database file, where the writer's
    /// own automatic checkpoint (at 1,000 pages) would not have yet: the store opened without the thread
    /// (`open_unchecked`) keeps them in the WAL alone.
    #[test]
    fn commits_reach_the_database_file_before_the_writer_would_copy_them() {
        let dir = crate::testing::Scratch::new("sqlite-checkpointer");
        // Twice the threshold, in writes of 16 lines of 16 KiB: ~130 pages, far below the automatic checkpoint's.
        let rounds = (2 * CHECKPOINT_EVERY as usize).div_ceil(16 * 16 * 1024);
        for (name, threaded) in [("with.db", true), ("without.db", false)] {
            let path = dir.file(name);
            let store =
                if threaded { SqliteStore::open_checked(&path, None) } else { SqliteStore::open_unchecked(&path) };
            let store = store.unwrap();
            assert_eq!(store.checkpointer.is_some(), threaded);
            let before = pages_in_file(&path);
            write(&store, rounds, 16);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let mut after = pages_in_file(&path);
            while threaded && after < before + 100 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
                after = pages_in_file(&path);
            }
            if threaded {
                assert!(after >= before + 100, "the thread copied the commits: {before} -> {after} pages");
            } else {
                assert_eq!(after, before, "without the thread the commits stay in the WAL");
            }
        }
    }

    /// A writer that never pauses still finds the WAL wholly copied now and then, so the WAL starts over instead
    /// of growing with everything written (the failure of checkpoints running beside it with the automatic ones
    /// off): 64 MiB written, the WAL stays well under that.
    #[test]
    fn the_wal_stays_bounded_under_a_writer_that_never_pauses() {
        let dir = crate::testing::Scratch::new("sqlite-wal-bound");
        let path = dir.file("busy.db");
        let wal = dir.file("busy.db-wal");
        let store = SqliteStore::open_checked(&path, None).unwrap();
        let mut largest = 0;
        for _ in 0..64 {
            write(&store, 4, 16); // 1 MiB
            largest = largest.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
        }
        assert!(largest < 40 << 20, "the WAL grew to {largest} bytes");
        let mut n = 0;
        drop(store);
        SqliteStore::open_checked(&path, None).unwrap().load(&mut |_, _| n += 1).unwrap();
        assert_eq!(n, 64 * 4 * 16, "every line is there after a restart");
    }
}
