//! [`SqliteStore`]: one file, WAL journal, full synchronous commits.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use crate::{Log, Op, SharedLog, Store, StoreError, by_chat};

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
];

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
    /// Opens (or creates) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a commit is on disk when it returns, so an acknowledged write survives a crash or power loss.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let applied: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        for (i, m) in MIGRATIONS.iter().enumerate().skip(applied.max(0) as usize) {
            tx.execute_batch(m)?;
            tx.pragma_update(None, "user_version", i as i64 + 1)?;
        }
        tx.commit()?;
        Ok(Self { conn: Mutex::new(conn) })
    }

    fn conn(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.conn.lock().map_err(|_| StoreError::Poisoned)
    }
}

fn write(conn: &mut Connection) -> Result<Transaction<'_>, StoreError> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

fn head(tx: &Transaction<'_>, channel: &str, chat_id: &str) -> Result<u64, StoreError> {
    let head: Option<i64> = tx
        .prepare_cached("SELECT head FROM chats WHERE channel = ?1 AND chat_id = ?2")?
        .query_row(params![channel, chat_id], |r| r.get(0))
        .optional()?;
    Ok(head.unwrap_or(0) as u64)
}

/// Appends `lines` to a chat at its next positions; returns its new head.
fn push(tx: &Transaction<'_>, channel: &str, chat_id: &str, lines: &[&str]) -> Result<u64, StoreError> {
    let n = lines.len() as i64;
    let head: i64 = tx
        .prepare_cached(
            "INSERT INTO chats (channel, chat_id, head) VALUES (?1, ?2, ?3)
             ON CONFLICT (channel, chat_id) DO UPDATE SET head = head + ?3 RETURNING head",
        )?
        .query_row(params![channel, chat_id, n], |r| r.get(0))?;
    let mut insert = tx.prepare_cached("INSERT INTO ops (channel, chat_id, pos, line) VALUES (?1, ?2, ?3, ?4)")?;
    for (i, line) in lines.iter().enumerate() {
        insert.execute(params![channel, chat_id, head - n + 1 + i as i64, line])?;
    }
    Ok(head as u64)
}

fn delete(tx: &Transaction<'_>, channel: &str, chat_id: &str) -> Result<u64, StoreError> {
    Ok(tx.execute("DELETE FROM ops WHERE channel = ?1 AND chat_id = ?2", params![channel, chat_id])? as u64)
}

impl Store for SqliteStore {
    fn load(&self, each: &mut dyn FnMut(u64, Op)) -> Result<u64, StoreError> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare("SELECT channel, chat_id, pos, line FROM ops ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            let pos: i64 = row.get(2)?;
            each(pos as u64, Op { channel: row.get(0)?, chat_id: row.get(1)?, line: row.get(3)? });
            n += 1;
        }
        Ok(n)
    }
}

impl Log for SqliteStore {
    fn append(&self, ops: &[Op]) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let tx = write(&mut conn)?;
        for ((channel, chat), lines) in by_chat(ops) {
            push(&tx, channel, chat, &lines)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<u64, StoreError> {
        let mut conn = self.conn()?;
        let tx = write(&mut conn)?;
        let n = delete(&tx, channel, chat_id)?;
        tx.commit()?;
        Ok(n)
    }

    fn rewrite_chat(&self, channel: &str, chat_id: &str, ops: &[Op]) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let tx = write(&mut conn)?;
        delete(&tx, channel, chat_id)?;
        let lines: Vec<&str> = ops.iter().map(|o| o.line.as_str()).collect();
        push(&tx, channel, chat_id, &lines)?;
        tx.commit()?;
        Ok(())
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
        let mut stmt = conn.prepare_cached(
            "SELECT pos, line FROM ops WHERE channel = ?1 AND chat_id = ?2 AND pos > ?3 ORDER BY pos",
        )?;
        let mut rows = stmt.query(params![channel, chat_id, after as i64])?;
        while let Some(row) = rows.next()? {
            let pos: i64 = row.get(0)?;
            each(pos as u64, row.get(1)?);
        }
        Ok(())
    }

    fn append_at(&self, channel: &str, chat_id: &str, at: u64, lines: &[String]) -> Result<Option<u64>, StoreError> {
        if lines.is_empty() {
            return Ok(Some(at));
        }
        let mut conn = self.conn()?;
        let tx = write(&mut conn)?;
        if head(&tx, channel, chat_id)? != at {
            return Ok(None);
        }
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let new = push(&tx, channel, chat_id, &lines)?;
        tx.commit()?;
        Ok(Some(new))
    }

    fn compact_at(&self, channel: &str, chat_id: &str, at: u64, line: &str) -> Result<(), StoreError> {
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
}
