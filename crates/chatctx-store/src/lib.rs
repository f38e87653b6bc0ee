//! chatctx-store: durable storage behind one [`Store`] trait.
//!
//! chatctx keeps its working state in memory (the engine) and makes it durable as an append-only log of the
//! operations that changed it, in the `replay` line format: decoded events, state-changing tool calls with
//! their time fixed, `resolved` activations, conversation imports. The engine is deterministic, so replaying
//! the log on start rebuilds exactly the state that was acknowledged. Every operation is tagged with its chat,
//! so forgetting a chat deletes its operations.
//!
//! Backends:
//! - [`SqliteStore`]: the embedded default (WAL, synchronous commits: durable before `append` returns);
//! - [`MemoryStore`]: nothing leaves the process (privacy-first bots; state is lost on exit).
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::disallowed_methods))]

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, params};

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
    /// A lock was poisoned by a panic elsewhere.
    #[error("the store is unusable after an earlier panic")]
    Poisoned,
}

/// Where acknowledged operations live.
pub trait Store: Send + Sync {
    /// Appends `ops` atomically; when this returns `Ok`, they survive a crash.
    fn append(&self, ops: &[Op]) -> Result<(), StoreError>;
    /// Calls `each` with every operation in order; returns how many.
    fn load(&self, each: &mut dyn FnMut(Op)) -> Result<u64, StoreError>;
    /// Forgets a chat: every operation of it.
    fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<u64, StoreError>;
    /// Replaces a chat's operations with `ops` (compaction: one import of its current document).
    fn rewrite_chat(&self, channel: &str, chat_id: &str, ops: &[Op]) -> Result<(), StoreError>;
}

/// Keeps everything in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    ops: Mutex<Vec<Op>>,
}

impl Store for MemoryStore {
    fn append(&self, ops: &[Op]) -> Result<(), StoreError> {
        self.ops.lock().map_err(|_| StoreError::Poisoned)?.extend_from_slice(ops);
        Ok(())
    }

    fn load(&self, each: &mut dyn FnMut(Op)) -> Result<u64, StoreError> {
        let ops = self.ops.lock().map_err(|_| StoreError::Poisoned)?;
        ops.iter().cloned().for_each(&mut *each);
        Ok(ops.len() as u64)
    }

    fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<u64, StoreError> {
        let mut ops = self.ops.lock().map_err(|_| StoreError::Poisoned)?;
        let before = ops.len();
        ops.retain(|o| !(o.channel == channel && o.chat_id == chat_id));
        Ok((before - ops.len()) as u64)
    }

    fn rewrite_chat(&self, channel: &str, chat_id: &str, new: &[Op]) -> Result<(), StoreError> {
        let mut ops = self.ops.lock().map_err(|_| StoreError::Poisoned)?;
        ops.retain(|o| !(o.channel == channel && o.chat_id == chat_id));
        ops.extend_from_slice(new);
        Ok(())
    }
}

/// SQLite, one file, WAL journal, full synchronous commits.
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

impl SqliteStore {
    /// Opens (or creates) the database at `path` and applies the schema.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a commit is on disk when it returns, so an acknowledged write survives a crash or power loss.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS ops (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 channel TEXT NOT NULL,
                 chat_id TEXT NOT NULL,
                 line TEXT NOT NULL
             );
             CREATE INDEX IF NOT EXISTS ops_by_chat ON ops (channel, chat_id);",
        )?;
        Ok(Self { conn: Mutex::new(conn) })
    }

    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
        self.conn.lock().map_err(|_| StoreError::Poisoned)
    }
}

impl Store for SqliteStore {
    fn append(&self, ops: &[Op]) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached("INSERT INTO ops (channel, chat_id, line) VALUES (?1, ?2, ?3)")?;
            for op in ops {
                insert.execute(params![op.channel, op.chat_id, op.line])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn load(&self, each: &mut dyn FnMut(Op)) -> Result<u64, StoreError> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare("SELECT channel, chat_id, line FROM ops ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            each(Op { channel: row.get(0)?, chat_id: row.get(1)?, line: row.get(2)? });
            n += 1;
        }
        Ok(n)
    }

    fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<u64, StoreError> {
        let conn = self.conn()?;
        Ok(conn.execute("DELETE FROM ops WHERE channel = ?1 AND chat_id = ?2", params![channel, chat_id])? as u64)
    }

    fn rewrite_chat(&self, channel: &str, chat_id: &str, ops: &[Op]) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute("DELETE FROM ops WHERE channel = ?1 AND chat_id = ?2", params![channel, chat_id])?;
        {
            let mut insert = tx.prepare_cached("INSERT INTO ops (channel, chat_id, line) VALUES (?1, ?2, ?3)")?;
            for op in ops {
                insert.execute(params![op.channel, op.chat_id, op.line])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

/// Opens the store a `[store] url` names: `memory`, `sqlite://PATH` (or a bare path).
pub fn open(url: &str) -> Result<Box<dyn Store>, String> {
    if url == "memory" {
        return Ok(Box::new(MemoryStore::default()));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Err("PostgreSQL storage is not built yet; use sqlite://PATH or memory".to_owned());
    }
    let path = url.strip_prefix("sqlite://").unwrap_or(url);
    SqliteStore::open(Path::new(path))
        .map(|s| Box::new(s) as Box<dyn Store>)
        .map_err(|e| format!("cannot open {path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(chat: &str, line: &str) -> Op {
        Op { channel: "telegram".into(), chat_id: chat.into(), line: line.into() }
    }

    fn suite(store: &dyn Store) {
        store.append(&[op("-1", "a"), op("-2", "b")]).unwrap();
        store.append(&[op("-1", "c")]).unwrap();
        let mut seen = Vec::new();
        assert_eq!(store.load(&mut |o| seen.push(o.line)).unwrap(), 3);
        assert_eq!(seen, ["a", "b", "c"], "in order");
        store.rewrite_chat("telegram", "-1", &[op("-1", "snapshot")]).unwrap();
        assert_eq!(store.delete_chat("telegram", "-2").unwrap(), 1);
        let mut seen = Vec::new();
        store.load(&mut |o| seen.push(o.line)).unwrap();
        assert_eq!(seen, ["snapshot"]);
    }

    #[test]
    fn memory_store() {
        suite(&MemoryStore::default());
    }

    #[test]
    fn sqlite_store_and_reopening() {
        let dir = std::env::temp_dir().join(format!("chatctx-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.db");
        let _ = std::fs::remove_file(&path);
        suite(&SqliteStore::open(&path).unwrap());
        let reopened = SqliteStore::open(&path).unwrap();
        let mut seen = Vec::new();
        reopened.load(&mut |o| seen.push(o.line)).unwrap();
        assert_eq!(seen, ["snapshot"], "survives closing and reopening");
    }
}
