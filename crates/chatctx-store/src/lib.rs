//! chatctx-store: durable storage: a [`Store`] is read back whole on start; a [`Log`] is written by one process,
//! a [`SharedLog`] by many ([`open`] says which a URL opens).
//!
//! chatctx keeps its working state in memory (the engine) and makes it durable as an append-only log of the
//! operations that changed it, in the `replay` line format: decoded events, state-changing tool calls with
//! their time fixed, `resolved` activations, conversation imports. The engine is deterministic, so replaying
//! the log on start rebuilds exactly the state that was acknowledged. Every operation is tagged with its chat,
//! so forgetting a chat deletes its operations.
//!
//! Each chat's log is numbered: every operation has a position, and positions grow by one per appended
//! operation and are never reused, even after the chat is forgotten or compacted. That is what lets several
//! processes share one log (PostgreSQL): a process that has applied a chat up to position `p` reads what
//! others appended with [`SharedLog::since`], and writes with [`SharedLog::append_at`], which refuses if
//! anyone appended after the position it last saw. Compaction ([`SharedLog::compact_at`]) replaces the
//! operations up to a position with one that stands for all of them, so a reader behind it still converges.
//!
//! Backends:
//! - [`SqliteStore`]: the embedded default (WAL, synchronous commits: durable before `append` returns);
//! - [`MemoryStore`]: nothing leaves the process (privacy-first bots; state is lost on exit);
//! - `PgStore` (cargo feature `postgres`): PostgreSQL 13 or later, shared by many chatctx instances.
//!
//! Test helpers (scratch directories, test databases) are in `testing`, behind the `testing` feature.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{PgStore, create_database};
pub use sqlite::{DEFAULT_CHECK_TIME, DEFAULT_SUPERSEDED_SLACK, Integrity, Salvaged, SqliteStore};

use std::sync::Arc;

/// One logged operation: the chat it belongs to and one `replay` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// Platform.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The operation, as one JSON line of the replay format.
    pub line: String,
}

/// Storage failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The SQLite database failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The PostgreSQL database failed (or could not be reached).
    #[error("postgres: {0}")]
    Postgres(String),
    /// A lock was poisoned by a panic elsewhere.
    #[error("the store is unusable after an earlier panic")]
    Poisoned,
    /// The store is damaged, or a file is where a store should be that is not one.
    #[error("{0}")]
    Damaged(String),
}

impl StoreError {
    /// Whether the store refused the write for want of space (SQLite's `SQLITE_FULL`, PostgreSQL's `disk_full`
    /// or an out-of-space I/O error): the client is told `insufficient_storage` (507) rather than `internal`.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StoreError::Sqlite(e) => e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull),
            StoreError::Postgres(m) | StoreError::Damaged(m) => {
                let m = m.to_ascii_lowercase();
                m.contains("53100") || m.contains("no space left on device") || m.contains("disk is full")
            }
            StoreError::Poisoned => false,
        }
    }
}

/// A boxed future that may move between threads.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Chats' newest positions, in the order asked ([`SharedLog::heads_async`]).
pub type Heads = Result<Vec<u64>, StoreError>;

/// What every store does: give back everything logged (the service rebuilds from it on start) and say
/// whether it answers.
pub trait Store: Send + Sync {
    /// Calls `each` with every operation and its position, in order within each chat (chats may interleave);
    /// returns how many.
    fn load(&self, each: &mut dyn FnMut(u64, Op)) -> Result<u64, StoreError>;
    /// Checks that the store answers (for readiness probes). The embedded stores always do.
    fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Records that the scope `id` is revoked until `until` (Unix seconds), for every instance to read. (The
    /// default keeps nothing: for test doubles; every real store keeps them.)
    fn revoke_scope(&self, id: &str, until: i64) -> Result<(), StoreError> {
        let _ = (id, until);
        Ok(())
    }
    /// The scope ids revoked and not yet expired at `now` (Unix seconds), with their expiry.
    fn revoked_scopes(&self, now: i64) -> Result<Vec<(String, i64)>, StoreError> {
        let _ = now;
        Ok(Vec::new())
    }
    /// The scope ids revoked since `after` (a number this call returned before; 0 for all), not yet expired at
    /// `now`, and the number to ask with next time: what an instance that already knows the earlier ones needs
    /// each second. A store without numbers answers them all (`after` is then ignored).
    fn revoked_since(&self, now: i64, after: u64) -> Result<(Vec<(String, i64)>, u64), StoreError> {
        let _ = after;
        Ok((self.revoked_scopes(now)?, 0))
    }
    /// Removes one operation (`chatctx store repair --drop-damaged` on a store that is repaired in place).
    fn remove_op(&self, channel: &str, chat_id: &str, pos: u64) -> Result<(), StoreError> {
        let _ = (channel, chat_id, pos);
        Err(StoreError::Damaged("this store cannot remove single operations".to_owned()))
    }
}

/// A log this process alone writes (SQLite, memory): operations appended in batches (one transaction each),
/// and a chat's operations deleted or replaced whole.
pub trait Log: Store {
    /// Appends `ops` atomically, each at the next position of its chat; when this returns `Ok`, they survive
    /// a crash.
    fn append(&self, ops: &[Op]) -> Result<(), StoreError>;
    /// Forgets a chat: every operation of it (its positions are not reused). How many operations.
    fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<u64, StoreError>;
    /// Replaces a chat's operations with `ops`, appended at its next positions.
    fn rewrite_chat(&self, channel: &str, chat_id: &str, ops: &[Op]) -> Result<(), StoreError>;
    /// Appends `ops` and replaces the log of each chat in `snapshots` by that one line (which stands for the
    /// chat's whole log, its operations in `ops` included: those are not written). When this returns `Ok`,
    /// all of it survives a crash. The embedded stores write it in one transaction (one sync): a failure
    /// writes none of it. (The default, for stores nothing can crash under, writes the parts in turn.)
    /// `erase`: the text the snapshots replace must leave the store's files now (an edit, expired history),
    /// not only when the store next reuses the space; otherwise a routine compaction costs no extra sync.
    fn write(&self, ops: &[Op], snapshots: &[Op], erase: bool) -> Result<(), StoreError> {
        let _ = erase; // rewrite_chat erases always
        let replaced = snapshotted(snapshots);
        let kept: Vec<Op> =
            ops.iter().filter(|o| !replaced.contains(&(o.channel.as_str(), o.chat_id.as_str()))).cloned().collect();
        self.append(&kept)?;
        for s in snapshots {
            self.rewrite_chat(&s.channel, &s.chat_id, std::slice::from_ref(s))?;
        }
        Ok(())
    }
    /// [`Log::write`] with the snapshots made while `ops` are written: `chats` are the chats `make` gives
    /// snapshots of, which it is asked for once, after the operations of every other chat are in the transaction
    /// (so a caller can make them on another core meanwhile). A chat of `chats` that `make` gives no snapshot of
    /// keeps its log: its operations are written after all. The snapshots written, when this returns `Ok`. (The
    /// default makes them first, then writes as [`Log::write`] does.)
    fn write_making(
        &self,
        ops: &[Op],
        chats: &[(String, String)],
        make: &mut dyn FnMut() -> Vec<Op>,
        erase: bool,
    ) -> Result<Vec<Op>, StoreError> {
        let _ = chats;
        let snapshots = make();
        self.write(ops, &snapshots, erase).map(|()| snapshots)
    }
    /// Up to `most` chats whose snapshot would let the store give back space: a store that keeps superseded
    /// operations for a while (SQLite) names, when they pile up, the chats whose older operations hold them
    /// back. The service takes them with its routine snapshots. (The default: none.)
    fn reclaim(&self, most: usize) -> Vec<(String, String)> {
        let _ = most;
        Vec::new()
    }
    /// Calls `each` with every operation of one chat and its position, in order (to reload that chat alone).
    fn load_chat(&self, channel: &str, chat_id: &str, each: &mut dyn FnMut(u64, String)) -> Result<(), StoreError>;
    /// Checks that the store takes writes now, with a write of about `bytes` bytes that changes nothing
    /// chatctx reads (readiness, after a write failed: as large as the write that failed, so a nearly full disk
    /// is not reported ready by a probe that fits in a free page). The memory store always does.
    fn probe_write(&self, bytes: usize) -> Result<(), StoreError> {
        let _ = bytes;
        Ok(())
    }
}

/// A log several processes write at once (PostgreSQL): each chat's operations are numbered, a process reads
/// what others appended after the position it last saw, appends only at that position, and compacts at a
/// position, so every process converges on the same log.
pub trait SharedLog: Store {
    /// Calls `each` with every operation of the chat after position `after`, in order.
    fn since(
        &self,
        channel: &str,
        chat_id: &str,
        after: u64,
        each: &mut dyn FnMut(u64, String),
    ) -> Result<(), StoreError>;
    /// Appends `lines` to the chat at positions `head + 1 ..` if `head` is still the chat's newest position
    /// (0 for a chat never written). The new newest position, or `None` (nothing written) if another writer
    /// appended first. Durable when it returns `Ok`. With no lines there is nothing to write or check:
    /// `Some(head)`.
    fn append_at(&self, channel: &str, chat_id: &str, head: u64, lines: &[String]) -> Result<Option<u64>, StoreError>;
    /// Compaction: drops the chat's operations before position `at` and puts `line` (which must stand for
    /// all of them and the one at `at`) in place of the one at `at`. Nothing happens if `at` is gone already.
    fn compact_at(&self, channel: &str, chat_id: &str, at: u64, line: &str) -> Result<(), StoreError>;
    /// The newest position of each chat of `keys` (`(channel, chat_id)`; 0 for a chat never written), read
    /// in one round trip, as a future that owns what it needs: for stores that wait on a network (PostgreSQL),
    /// so that an async server checks the chats of many concurrent reads for news at once, without tying up a
    /// thread. `None` for stores that answer at once. A chat's head moves in the same transaction that
    /// writes its operations, so a head past the one a reader applied means there is news.
    fn heads_async(&self, keys: Vec<(String, String)>) -> Option<BoxFuture<'static, Heads>> {
        let _ = keys;
        None
    }
    /// Notes that a chat holds an object known by a platform id (a Telegram poll id), so that an instance
    /// that never loaded the chat can route updates naming only that id ([`SharedLog::find_external`]).
    fn note_external(&self, channel: &str, chat_id: &str, external_id: &str) -> Result<(), StoreError>;
    /// The `(channel, chat_id)` noted for a platform id.
    fn find_external(&self, external_id: &str) -> Result<Option<(String, String)>, StoreError>;
    /// Forgets the platform ids noted for a chat (when the chat is forgotten).
    fn forget_externals(&self, channel: &str, chat_id: &str) -> Result<(), StoreError>;
    /// Every chat id of `channel` the log holds (a forgotten chat's tombstone included), for a decision that
    /// must see chats this process never loaded (whether a workspace has chats left). Reads the whole log
    /// unless a store keeps a list.
    fn chat_ids(&self, channel: &str) -> Result<Vec<String>, StoreError> {
        let mut ids = std::collections::BTreeSet::new();
        self.load(&mut |_, op| {
            if op.channel == channel {
                ids.insert(op.chat_id);
            }
        })?;
        Ok(ids.into_iter().collect())
    }
}

/// An opened store, as the service must keep it durable: written by this process alone, or shared with
/// other instances.
#[derive(Clone)]
pub enum Opened {
    /// A store this process alone writes: SQLite or memory.
    Local(Arc<dyn Log>),
    /// A store other instances write too: PostgreSQL.
    Shared(Arc<dyn SharedLog>),
}

/// Options for opening a store beyond its URL.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// PostgreSQL: the most connections this process holds.
    pub pool_size: usize,
    /// SQLite: how long the integrity check at open may take (`None`: no check).
    pub check_time: Option<std::time::Duration>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self { pool_size: 16, check_time: Some(DEFAULT_CHECK_TIME) }
    }
}

/// What a `[store] url` names: `memory`, `sqlite://PATH` (or a bare path), or `postgres://…` /
/// `postgresql://…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreUrl<'a> {
    /// Nothing leaves the process.
    Memory,
    /// An SQLite file.
    Sqlite(&'a std::path::Path),
    /// A PostgreSQL connection URL.
    Postgres(&'a str),
    /// A `scheme://…` of no store chatctx knows (`redis://`, a typo): refused, never taken for a file name.
    Unknown(&'a str),
}

impl<'a> StoreUrl<'a> {
    /// Reads a store URL.
    pub fn parse(url: &'a str) -> Self {
        if matches!(url, "memory" | "memory:" | "memory://") {
            Self::Memory
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Self::Postgres(url)
        } else if let Some(path) = url.strip_prefix("sqlite://") {
            Self::Sqlite(std::path::Path::new(path))
        } else if url.split_once("://").is_some_and(|(scheme, _)| {
            !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }) {
            Self::Unknown(url)
        } else {
            Self::Sqlite(std::path::Path::new(url))
        }
    }
}

/// Opens the store a `[store] url` names ([`StoreUrl`]; PostgreSQL with the `postgres` feature).
pub fn open(url: &str, options: &OpenOptions) -> Result<Opened, String> {
    match StoreUrl::parse(url) {
        StoreUrl::Memory => Ok(Opened::Local(Arc::new(MemoryStore::default()))),
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url) => {
            PgStore::open(url, options.pool_size).map(|s| Opened::Shared(Arc::new(s))).map_err(|e| e.to_string())
        }
        #[cfg(not(feature = "postgres"))]
        StoreUrl::Postgres(_) => Err("this build has no PostgreSQL support (cargo feature `postgres`)".to_owned()),
        StoreUrl::Unknown(url) => Err(format!(
            "unknown store URL scheme `{}://`: use memory, sqlite://PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE",
            url.split_once("://").map_or(url, |(scheme, _)| scheme)
        )),
        StoreUrl::Sqlite(path) => SqliteStore::open_checked(path, options.check_time)
            .map(|s| Opened::Local(Arc::new(s)))
            .map_err(|e| format!("cannot open {}: {e}", path.display())),
    }
}

/// The chats [`Log::write`] replaces by a snapshot.
pub(crate) fn snapshotted(snapshots: &[Op]) -> std::collections::HashSet<(&str, &str)> {
    snapshots.iter().map(|s| (s.channel.as_str(), s.chat_id.as_str())).collect()
}

/// `ops` grouped by chat: chats in the order they first appear, each chat's operations in their order. A
/// counting sort, with no vector per chat (those vectors were 6 % of an SQLite write, most of it fresh pages).
pub(crate) fn grouped<'a>(ops: impl Iterator<Item = &'a Op>) -> Vec<&'a Op> {
    let ops: Vec<&Op> = ops.collect();
    let mut groups: hashbrown::HashMap<(&str, &str), usize> = hashbrown::HashMap::new();
    let mut starts: Vec<usize> = Vec::new();
    let of: Vec<usize> = ops
        .iter()
        .map(|o| {
            let next = groups.len();
            let g = *groups.entry((o.channel.as_str(), o.chat_id.as_str())).or_insert(next);
            if g == starts.len() {
                starts.push(0);
            }
            starts[g] += 1;
            g
        })
        .collect();
    let mut at = 0;
    for start in &mut starts {
        (*start, at) = (at, at + *start);
    }
    let mut out = ops.clone();
    for (o, g) in ops.into_iter().zip(of) {
        out[starts[g]] = o;
        starts[g] += 1;
    }
    out
}

/// [`grouped`] operations as runs of one chat each.
pub(crate) fn runs<'g, 'a>(grouped: &'g [&'a Op]) -> impl Iterator<Item = &'g [&'a Op]> + Clone {
    grouped.chunk_by(|a, b| a.channel == b.channel && a.chat_id == b.chat_id)
}

/// `ops` by chat, as [`grouped`]: each chat with its lines.
pub(crate) fn by_chat(ops: &[Op]) -> Vec<((&str, &str), Vec<&str>)> {
    let ops = grouped(ops.iter());
    runs(&ops)
        .map(|run| ((run[0].channel.as_str(), run[0].chat_id.as_str()), run.iter().map(|o| o.line.as_str()).collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{Op, StoreUrl, grouped};

    #[test]
    fn operations_are_grouped_by_chat_in_order_of_first_appearance() {
        let op = |chat: &str, line: &str| Op { channel: "t".into(), chat_id: chat.into(), line: line.into() };
        let ops = [op("b", "1"), op("a", "2"), op("b", "3"), op("c", "4"), op("a", "5"), op("b", "6")];
        let lines: Vec<&str> = grouped(ops.iter()).iter().map(|o| o.line.as_str()).collect();
        assert_eq!(lines, ["1", "3", "6", "2", "5", "4"]);
        assert!(grouped([].iter()).is_empty());
    }

    /// `memory://` is the memory store and an unknown scheme is refused: neither becomes an SQLite file named
    /// after the URL in the working directory.
    #[test]
    fn store_urls_are_read_by_scheme() {
        for memory in ["memory", "memory:", "memory://"] {
            assert_eq!(StoreUrl::parse(memory), StoreUrl::Memory, "{memory}");
        }
        assert_eq!(StoreUrl::parse("sqlite://data/c.db"), StoreUrl::Sqlite(Path::new("data/c.db")));
        assert_eq!(StoreUrl::parse("./c.db"), StoreUrl::Sqlite(Path::new("./c.db")));
        assert_eq!(StoreUrl::parse("postgresql://u@h/d"), StoreUrl::Postgres("postgresql://u@h/d"));
        assert_eq!(StoreUrl::parse("redis://u:secret@h"), StoreUrl::Unknown("redis://u:secret@h"));
        let Err(e) = super::open("sqlit://c.db", &super::OpenOptions::default()) else { panic!("opened") };
        assert!(e.contains("unknown store URL scheme `sqlit://`"), "{e}");
        let Err(e) = super::open("redis://u:secret@h", &super::OpenOptions::default()) else { panic!("opened") };
        assert!(!e.contains("secret"), "{e}");
    }
}
