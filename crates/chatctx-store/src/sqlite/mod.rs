//! [`SqliteStore`]: one file, WAL journal, full synchronous commits.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use crate::{Log, Op, SharedLog, Store, StoreError, snapshotted};

mod checkpoint;
mod repair;
mod rows;
mod table;
use repair::verdict;
pub use repair::{Integrity, Salvaged};
pub use rows::DEFAULT_SUPERSEDED_SLACK;
use rows::{Rows, key};
use table::{gather, push, push_all, push_snapshot, read_rows, remove_chat, scan, version};

/// Schema versions, in order; `PRAGMA user_version` records how many were applied.
const MIGRATIONS: &[&str] = &[
    // 1: the log, in the order written.
    "CREATE TABLE IF NOT EXISTS ops (
         seq INTEGER PRIMARY KEY AUTOINCREMENT,
         channel TEXT NOT NULL,
         chat_id TEXT NOT NULL,
         line TEXT NOT NULL
     );
     CREATE INDEX IF NOT EXISTS ops_by_chat ON ops (channel, chat_id);",
    // 2: positions within each chat, and each chat's newest position (kept when the chat is forgotten, so
    // positions are never reused). The global order is a valid numbering of every chat, so it seeds both.
    "ALTER TABLE ops ADD COLUMN pos INTEGER NOT NULL DEFAULT 0;
     UPDATE ops SET pos = seq;
     CREATE TABLE chats (
         channel TEXT NOT NULL,
         chat_id TEXT NOT NULL,
         head INTEGER NOT NULL,
         PRIMARY KEY (channel, chat_id)
     ) WITHOUT ROWID;
     INSERT INTO chats (channel, chat_id, head) SELECT channel, chat_id, max(seq) FROM ops GROUP BY channel, chat_id;
     DROP INDEX ops_by_chat;
     CREATE UNIQUE INDEX ops_by_pos ON ops (channel, chat_id, pos);",
    // 3: one row rewritten by the readiness probe after a write failed, to learn whether writes work again.
    "CREATE TABLE probe (id INTEGER PRIMARY KEY, at INTEGER NOT NULL);",
    // 4: revoked scope ids, until the scope would have expired.
    "CREATE TABLE revoked_scopes (id TEXT PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID;",
    // 5: revocations numbered in the order written, so instances read only the new ones.
    "ALTER TABLE revoked_scopes ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
     CREATE INDEX revoked_by_seq ON revoked_scopes (seq);",
    // 6: the log is only appended to; a snapshot supersedes its chat's rows numbered below the chat's base
    // (rows.rs). Without the index by chat, many chats written at once do not cost a page each.
    "ALTER TABLE chats ADD COLUMN base INTEGER NOT NULL DEFAULT 0;
     DROP INDEX ops_by_pos;",
    // 7: `chats.head` is written when a chat is snapshotted or its rows removed, not at every append: a chat's
    // newest position is the larger of it and its rows' (rows.rs). Nothing to change in a version 6 file (its
    // heads are exact); the version keeps an older chatctx, which would trust the column alone, from opening it.
    "-- version 7: the meaning of chats.head changed; no data changes",
];

/// The page size of a new store's file, in bytes (SQLite's default is 4,096). The log is appended to in
/// batches and read in order, so fewer, larger pages mean fewer WAL frames, write calls and checkpoint copies
/// per row: with 16 KiB, HTTP ingest of 100-message batches ran 2,235-2,261 against 1,678-2,052 requests/s,
/// and `store_bench` 93,000-105,000 against 87,000-94,000 messages/s (docs/benchmarks-issue-32.md). A
/// store made with another page size keeps it.
const PAGE_SIZE: u32 = 16 * 1024;

/// SQLite, one file, WAL journal, full synchronous commits.
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// The integrity check started at open, on its own connection and thread, so that it overlaps the first
    /// [`Store::load`] (a restart's replay). That load answers with the check's verdict once it has read
    /// everything; every other use waits for the verdict first.
    check: Mutex<Check>,
    /// Where each chat's rows are in the log (rows.rs): read with the log at a start, or from the table when
    /// first needed; dropped when a write fails, to be read again. Locked after `conn`.
    placed: Mutex<Option<Rows>>,
    /// Bytes of superseded rows allowed beyond those of the rows in use ([`SqliteStore::with_superseded_slack`]).
    slack: u64,
    /// Copies the WAL into the file beside the writer (checkpoint.rs); a served store has one, the store commands'
    /// ([`SqliteStore::open_unchecked`]) do not.
    checkpointer: Option<checkpoint::Checkpointer>,
}

/// Where the integrity check started at open stands.
enum Check {
    Running(std::thread::JoinHandle<Result<(), StoreError>>),
    /// Passed, or never asked for.
    Passed,
    /// Why the store is refused.
    Failed(String),
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

/// How long the integrity check at open may take by default; a larger store is checked in part.
pub const DEFAULT_CHECK_TIME: std::time::Duration = std::time::Duration::from_secs(10);

impl SqliteStore {
    /// Opens (or creates) the database at `path`, checks its integrity for at most [`DEFAULT_CHECK_TIME`], and
    /// brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_checked(path, Some(DEFAULT_CHECK_TIME))
    }

    /// As [`SqliteStore::open`], checking integrity for at most `check` (`None`: not at all). A store that is
    /// not a database, an empty file left where a store was, or a store whose check finds damage is refused.
    /// The check runs on a thread of its own while the store is first loaded (see [`SqliteStore`]'s `check`).
    pub fn open_checked(path: &Path, check: Option<std::time::Duration>) -> Result<Self, StoreError> {
        refuse_empty(path)?;
        let mut store = Self::open_unchecked(path)?;
        store.checkpointer = checkpoint::Checkpointer::start(path);
        if let Some(limit) = check {
            let checker = Self::open_unchecked(path)?;
            let path = path.to_owned();
            let running = std::thread::Builder::new()
                .name("chatctx-store-check".to_owned())
                .spawn(move || verdict(&path, limit, checker.integrity(Some(limit))?))
                .map_err(|e| StoreError::Damaged(format!("cannot start the integrity check: {e}")))?;
            *store.check.lock().map_err(|_| StoreError::Poisoned)? = Check::Running(running);
        }
        Ok(store)
    }

    /// Waits for the integrity check started at open, if it still runs: its verdict, kept for every later call.
    fn checked(&self) -> Result<(), StoreError> {
        let mut check = self.check.lock().map_err(|_| StoreError::Poisoned)?;
        *check = match std::mem::replace(&mut *check, Check::Passed) {
            Check::Running(running) => match running.join() {
                Ok(Ok(())) => Check::Passed,
                Ok(Err(e)) => Check::Failed(e.to_string()),
                Err(_) => Check::Failed("the integrity check stopped unexpectedly".to_owned()),
            },
            settled => settled,
        };
        match &*check {
            Check::Failed(why) => Err(StoreError::Damaged(why.clone())),
            _ => Ok(()),
        }
    }

    /// Opens without the integrity check (for `chatctx store check` and `repair`, which report it themselves).
    pub fn open_unchecked(path: &Path) -> Result<Self, StoreError> {
        let mut conn = Connection::open(path)?;
        // Before anything is written: a new file takes this page size; an existing one keeps its own.
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a commit is on disk when it returns, so an acknowledged write survives a crash or power loss.
        conn.pragma_update(None, "synchronous", "FULL")?;
        // Deleted rows are overwritten, not just unlinked: a forgotten chat's text leaves the file
        // (and `forget` checkpoints the WAL, where the old pages would otherwise linger).
        conn.pragma_update(None, "secure_delete", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let applied: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let known = MIGRATIONS.len() as i64;
        if applied > known {
            return Err(StoreError::Damaged(format!(
                "{} was written by a newer chatctx (schema version {applied}; this one knows {known}): run that \
                 version, or a newer one",
                path.display()
            )));
        }
        for (i, m) in MIGRATIONS.iter().enumerate().skip(applied.max(0) as usize) {
            tx.execute_batch(m)?;
            tx.pragma_update(None, "user_version", i as i64 + 1)?;
        }
        tx.commit()?;
        Ok(Self {
            conn: Mutex::new(conn),
            check: Mutex::new(Check::Passed),
            placed: Mutex::new(None),
            slack: DEFAULT_SUPERSEDED_SLACK,
            checkpointer: None,
        })
    }

    /// How many bytes of superseded rows the file may hold beyond the bytes of the rows in use before the
    /// chats holding them back are named for a snapshot ([`Log::reclaim`]; default
    /// [`DEFAULT_SUPERSEDED_SLACK`]).
    pub fn with_superseded_slack(mut self, bytes: u64) -> Self {
        self.slack = bytes;
        self
    }

    /// The connection, once the integrity check started at open has passed.
    fn conn(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.checked()?;
        self.conn.lock().map_err(|_| StoreError::Poisoned)
    }

    /// Runs `f` in one write transaction with the chats' rows, and commits; `f` says whether to [`scrub`]
    /// after. What `f` changed in the rows is kept only if the transaction commits (otherwise they are read
    /// again from the table when next needed). If another process wrote the file since this one last did
    /// (against docs/deployment.md, but it happens: a command run against a served store), the rows are read
    /// again first, so that its rows are neither numbered over nor deleted.
    /// `bytes`: about how much the write adds to the WAL (its lines), for the checkpoints beside the writer.
    fn writing<T>(
        &self,
        bytes: u64,
        f: impl FnOnce(&Transaction<'_>, &mut Rows) -> Result<(T, bool), StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        let mut placed = self.placed.lock().map_err(|_| StoreError::Poisoned)?;
        let tx = write(&mut conn)?;
        let mut rows = current(placed.take(), &tx)?;
        let (out, erase) = f(&tx, &mut rows)?;
        tx.commit()?;
        if let Some(c) = &self.checkpointer {
            c.committed(bytes);
        }
        *placed = Some(rows);
        // Otherwise the freed pages (zeroed by `secure_delete`) reach the main file at SQLite's next automatic
        // checkpoint, and the old frames are overwritten as the WAL is reused.
        if erase {
            scrub(&conn)?;
        }
        Ok(out)
    }

    /// One write ([`Log::write`], [`Log::write_making`]): the operations of the chats not `named` first, then the
    /// snapshots `make` gives (of named chats), then the operations of the named chats it gave none of, which keep
    /// their logs. The snapshots, once committed.
    fn write_in_turn<S: std::ops::Deref<Target = [Op]>>(
        &self,
        ops: &[Op],
        named: &std::collections::HashSet<(&str, &str)>,
        make: impl FnOnce() -> S,
        erase: bool,
    ) -> Result<S, StoreError> {
        self.writing(line_bytes(ops.iter().map(|o| o.line.as_str())), |tx, placed| {
            push_all(tx, placed, ops.iter().filter(|o| !named.contains(&chat(o))))?;
            let snapshots = make();
            let made = snapshotted(&snapshots);
            if named.iter().any(|c| !made.contains(c)) {
                // A chat whose state could not be exported keeps its log, this write's part too.
                push_all(tx, placed, ops.iter().filter(|o| named.contains(&chat(o)) && !made.contains(&chat(o))))?;
            }
            for s in snapshots.iter() {
                push_snapshot(tx, placed, s, erase)?;
            }
            gather(tx, placed, ops.len() + snapshots.len())?;
            let erased = erase && !snapshots.is_empty();
            Ok((snapshots, erased))
        })
    }

    /// The numbers of a chat's rows in use, in order.
    fn in_use(&self, conn: &Connection, channel: &str, chat_id: &str) -> Result<Vec<i64>, StoreError> {
        let mut placed = self.placed.lock().map_err(|_| StoreError::Poisoned)?;
        let rows = current(placed.take(), conn)?;
        let rows = placed.insert(rows);
        let mut k = Vec::new();
        key(&mut k, channel, chat_id);
        Ok(rows.in_use(&k))
    }
}

/// Where each chat's rows are: `kept`, unless another process committed to the file since it was read (or
/// nothing is kept), then read again from the table.
fn current(kept: Option<Rows>, conn: &Connection) -> Result<Rows, StoreError> {
    match kept {
        Some(rows) if rows.version == version(conn)? => Ok(rows),
        _ => read_rows(conn),
    }
}

/// After rows were deleted (a forgotten chat, a compacted or expired log): copies the WAL into the database,
/// where `secure_delete` has zeroed the freed space, and truncates the WAL, so the deleted text is in neither
/// file. A checkpoint that cannot finish now (a reader holds an old snapshot) is not an error: the next one
/// does it.
fn scrub(conn: &Connection) -> Result<(), StoreError> {
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

/// An empty file where a store should be is refused: SQLite would take it for a new, empty store and the
/// state it once held would be silently gone. (A store killed before its first checkpoint may have an empty
/// main file and everything in its `-wal` file: that one opens.)
fn refuse_empty(path: &Path) -> Result<(), StoreError> {
    let empty = |p: &Path| std::fs::metadata(p).map(|m| m.len() == 0).ok();
    let wal = path.with_file_name(format!("{}-wal", path.file_name().and_then(|n| n.to_str()).unwrap_or_default()));
    if empty(path) == Some(true) && empty(&wal) != Some(false) {
        return Err(StoreError::Damaged(format!(
            "{} is an empty file (0 bytes), not a chatctx store: if the store was lost, restore it from a backup; \
             to start a new store, remove the file",
            path.display()
        )));
    }
    Ok(())
}

/// The bytes of `lines`: about what a write of them adds to the WAL.
fn line_bytes<'a>(lines: impl IntoIterator<Item = &'a str>) -> u64 {
    lines.into_iter().map(|l| l.len() as u64).sum()
}

/// The chat an operation belongs to, as [`snapshotted`] names it.
fn chat(o: &Op) -> (&str, &str) {
    (o.channel.as_str(), o.chat_id.as_str())
}

fn write(conn: &mut Connection) -> Result<Transaction<'_>, StoreError> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

impl Store for SqliteStore {
    fn revoke_scope(&self, id: &str, until: i64) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let tx = write(&mut conn)?;
        tx.execute("DELETE FROM revoked_scopes WHERE until < unixepoch()", [])?;
        tx.execute(
            "INSERT OR REPLACE INTO revoked_scopes (id, until, seq)
             VALUES (?1, ?2, (SELECT coalesce(max(seq), 0) + 1 FROM revoked_scopes))",
            params![id, until],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn revoked_scopes(&self, now: i64) -> Result<Vec<(String, i64)>, StoreError> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached("SELECT id, until FROM revoked_scopes WHERE until > ?1")?;
        let rows = stmt.query_map(params![now], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn revoked_since(&self, now: i64, after: u64) -> Result<(Vec<(String, i64)>, u64), StoreError> {
        let conn = self.conn()?;
        // One writer: numbers are given in commit order, so nothing below the newest seen is still to come.
        let mut stmt =
            conn.prepare_cached("SELECT id, until, seq FROM revoked_scopes WHERE (seq > ?1 OR ?1 = 0) AND until > ?2")?;
        let mut newest = after;
        let rows = stmt.query_map(params![after as i64, now], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, until, seq) = row?;
            newest = newest.max(seq as u64);
            out.push((id, until));
        }
        Ok((out, newest))
    }

    // Reads while the integrity check started at open still runs (a restart's replay overlaps it), then
    // answers with the check's verdict first: a damaged store is refused as if the check had run before.
    fn load(&self, each: &mut dyn FnMut(u64, Op)) -> Result<u64, StoreError> {
        let read = (|| {
            let conn = self.conn.lock().map_err(|_| StoreError::Poisoned)?;
            let mut n = 0;
            let placed = scan(
                &conn,
                Some(&mut |pos, op| {
                    each(pos, op);
                    n += 1;
                }),
            )?;
            *self.placed.lock().map_err(|_| StoreError::Poisoned)? = Some(placed);
            Ok(n)
        })();
        self.checked()?;
        read
    }
}

impl Log for SqliteStore {
    fn load_chat(&self, channel: &str, chat_id: &str, each: &mut dyn FnMut(u64, String)) -> Result<(), StoreError> {
        SharedLog::since(self, channel, chat_id, 0, each)
    }

    fn probe_write(&self, bytes: usize) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        // As large as asked, committed (so the pages are really taken), then made small again.
        let tx = write(&mut conn)?;
        tx.execute("INSERT OR REPLACE INTO probe (id, at) VALUES (1, zeroblob(?1))", [bytes.min(1 << 24) as i64])?;
        tx.commit()?;
        let tx = write(&mut conn)?;
        tx.execute("INSERT OR REPLACE INTO probe (id, at) VALUES (1, unixepoch())", [])?;
        tx.commit()?;
        Ok(())
    }

    fn append(&self, ops: &[Op]) -> Result<(), StoreError> {
        self.write(ops, &[], false)
    }

    fn write(&self, ops: &[Op], snapshots: &[Op], erase: bool) -> Result<(), StoreError> {
        self.write_in_turn(ops, &snapshotted(snapshots), || snapshots, erase).map(drop)
    }

    fn write_making(
        &self,
        ops: &[Op],
        chats: &[(String, String)],
        make: &mut dyn FnMut() -> Vec<Op>,
        erase: bool,
    ) -> Result<Vec<Op>, StoreError> {
        let named = chats.iter().map(|(channel, chat)| (channel.as_str(), chat.as_str())).collect();
        self.write_in_turn(ops, &named, make, erase)
    }

    fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<u64, StoreError> {
        self.writing(0, |tx, placed| {
            let n = remove_chat(tx, placed, channel, chat_id)?;
            gather(tx, placed, 0)?;
            Ok((n, true))
        })
    }

    fn rewrite_chat(&self, channel: &str, chat_id: &str, ops: &[Op]) -> Result<(), StoreError> {
        let lines: Vec<&str> = ops.iter().map(|o| o.line.as_str()).collect();
        self.writing(line_bytes(lines.iter().copied()), |tx, placed| {
            remove_chat(tx, placed, channel, chat_id)?;
            if !lines.is_empty() {
                push(tx, placed, channel, chat_id, &lines)?;
            }
            gather(tx, placed, lines.len())?;
            Ok(((), true))
        })
    }

    fn reclaim(&self, most: usize) -> Vec<(String, String)> {
        match self.placed.lock() {
            Ok(placed) => placed.as_ref().map(|rows| rows.holding_back(most, self.slack)).unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }
}

impl SharedLog for SqliteStore {
    fn since(
        &self,
        channel: &str,
        chat_id: &str,
        after: u64,
        each: &mut dyn FnMut(u64, String),
    ) -> Result<(), StoreError> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached("SELECT pos, line FROM ops WHERE seq = ?1")?;
        for seq in self.in_use(&conn, channel, chat_id)? {
            let (pos, line): (i64, String) = stmt.query_row([seq], |r| Ok((r.get(0)?, r.get(1)?)))?;
            if pos as u64 > after {
                each(pos as u64, line);
            }
        }
        Ok(())
    }

    fn append_at(&self, channel: &str, chat_id: &str, at: u64, lines: &[String]) -> Result<Option<u64>, StoreError> {
        if lines.is_empty() {
            return Ok(Some(at));
        }
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        self.writing(line_bytes(lines.iter().copied()), |tx, placed| {
            let mut k = Vec::new();
            key(&mut k, channel, chat_id);
            if placed.head(&k) != at {
                return Ok((None, false));
            }
            Ok((Some(push(tx, placed, channel, chat_id, &lines)?.0), false))
        })
    }

    fn compact_at(&self, channel: &str, chat_id: &str, at: u64, line: &str) -> Result<(), StoreError> {
        // Rare (SQLite is a shared log only in tests): the rows are found by a pass over the table, and where the
        // chats' rows are is read again afterwards.
        let mut conn = self.conn()?;
        let tx = write(&mut conn)?;
        let replaced = tx.execute(
            "UPDATE ops SET line = ?4 WHERE channel = ?1 AND chat_id = ?2 AND pos = ?3",
            params![channel, chat_id, at as i64, line],
        )?;
        if replaced > 0 {
            tx.execute(
                "DELETE FROM ops WHERE channel = ?1 AND chat_id = ?2 AND pos < ?3",
                params![channel, chat_id, at as i64],
            )?;
        }
        tx.commit()?;
        *self.placed.lock().map_err(|_| StoreError::Poisoned)? = None;
        Ok(())
    }

    // SQLite is a shared log only in tests of the position protocol (one process): it notes no platform ids.
    fn note_external(&self, _channel: &str, _chat_id: &str, _external_id: &str) -> Result<(), StoreError> {
        Ok(())
    }

    fn find_external(&self, _external_id: &str) -> Result<Option<(String, String)>, StoreError> {
        Ok(None)
    }

    fn forget_externals(&self, _channel: &str, _chat_id: &str) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    /// A database written before positions existed keeps its operations and gets valid positions and heads.
    #[test]
    fn migrates_a_first_version_database() {
        let dir = crate::testing::Scratch::new("sqlite-migrate");
        let path = dir.file("v1.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            for (chat, line) in [("a", "1"), ("b", "2"), ("a", "3")] {
                conn.execute("INSERT INTO ops (channel, chat_id, line) VALUES ('t', ?1, ?2)", params![chat, line])
                    .unwrap();
            }
        }
        let store = SqliteStore::open(&path).unwrap();
        let mut seen = Vec::new();
        store.load(&mut |pos, o| seen.push(format!("{}@{pos}={}", o.chat_id, o.line))).unwrap();
        assert_eq!(seen, ["a@1=1", "b@2=2", "a@3=3"]);
        assert_eq!(store.append_at("t", "a", 3, &["4".to_owned()]).unwrap(), Some(4));
        drop(store);
        let again = SqliteStore::open(&path).unwrap();
        assert_eq!(again.append_at("t", "a", 4, &["5".to_owned()]).unwrap(), Some(5), "migrated once only");
    }

    /// A new store takes [`PAGE_SIZE`]; a store made with SQLite's default pages (every store before) keeps its
    /// own, and is read and written as before.
    #[test]
    fn a_new_store_takes_large_pages_and_an_old_one_keeps_its_own() {
        let dir = crate::testing::Scratch::new("sqlite-pages");
        let page_size = |path: &Path| -> i64 {
            Connection::open(path).unwrap().pragma_query_value(None, "page_size", |r| r.get(0)).unwrap()
        };
        let new = dir.file("new.db");
        let store = SqliteStore::open(&new).unwrap();
        assert_eq!(store.append_at("t", "a", 0, &["1".to_owned()]).unwrap(), Some(1));
        drop(store);
        assert_eq!(page_size(&new), i64::from(PAGE_SIZE));

        let old = dir.file("old.db");
        {
            let conn = Connection::open(&old).unwrap();
            conn.pragma_update(None, "page_size", 4096).unwrap();
            conn.pragma_update(None, "journal_mode", "WAL").unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.execute("INSERT INTO ops (channel, chat_id, line) VALUES ('t', 'a', '1')", []).unwrap();
        }
        let store = SqliteStore::open(&old).unwrap();
        assert_eq!(store.append_at("t", "a", 1, &["2".to_owned()]).unwrap(), Some(2));
        drop(store);
        let store = SqliteStore::open(&old).unwrap();
        let mut seen = Vec::new();
        store.load(&mut |pos, o| seen.push(format!("{}@{pos}={}", o.chat_id, o.line))).unwrap();
        assert_eq!(seen, ["a@1=1", "a@2=2"]);
        drop(store);
        assert_eq!(page_size(&old), 4096, "an existing store keeps its pages");
    }
}
