//! The parts of the SQLite store that judge and rescue a file: the integrity check, reading what can still be
//! read, and writing it into a fresh file (`chatctx store check` and `repair`).

use std::path::Path;

use rusqlite::params;

use super::{SqliteStore, write};
use crate::{Op, StoreError};

/// What an integrity check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Integrity {
    /// Every page checked is sound.
    Sound,
    /// The problems SQLite reported (the first hundred).
    Damaged(Vec<String>),
    /// The check ran out of time before it finished (nothing wrong was found in the part it read).
    Unfinished,
}

/// What [`SqliteStore::salvage`] could read.
#[derive(Debug)]
pub struct Salvaged {
    /// The operations with their positions, in the order written.
    pub ops: Vec<(u64, Op)>,
    /// Each chat's newest position as recorded.
    pub heads: Vec<((String, String), u64)>,
    /// Rows that could not be read (each said why), passed over.
    pub unreadable: Vec<String>,
    /// Why reading stopped before the end, if it did.
    pub stopped: Option<StoreError>,
}

impl SqliteStore {
    /// SQLite's `quick_check` of every page, for at most `limit` (`None`: to the end).
    pub fn integrity(&self, limit: Option<std::time::Duration>) -> Result<Integrity, StoreError> {
        let conn = self.conn()?;
        let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        if let Some(limit) = limit {
            let deadline = std::time::Instant::now() + limit;
            let flag = stopped.clone();
            conn.progress_handler(
                10_000,
                Some(move || {
                    let late = std::time::Instant::now() > deadline;
                    flag.store(late, std::sync::atomic::Ordering::Relaxed);
                    late
                }),
            )?;
        }
        let found = (|| {
            let mut stmt = conn.prepare("PRAGMA quick_check(100)")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<Result<Vec<String>, _>>()
        })();
        conn.progress_handler(0, None::<fn() -> bool>)?;
        match found {
            Err(_) if stopped.load(std::sync::atomic::Ordering::Relaxed) => Ok(Integrity::Unfinished),
            Err(e) if is_damage(&e) => Ok(Integrity::Damaged(vec![e.to_string()])),
            Err(e) => Err(e.into()),
            Ok(lines) if lines == ["ok"] => Ok(Integrity::Sound),
            Ok(lines) => Ok(Integrity::Damaged(lines)),
        }
    }

    /// Every operation that can still be read and is in use (not superseded by its chat's snapshot), in the
    /// order written, with each chat's newest position as recorded (positions are never reused, so a repaired
    /// store keeps them). Reading stops at the first row that cannot be read, keeping what was read before it.
    /// If the chats' table cannot be read, superseded rows are kept too (a snapshot replaces its chat whole
    /// when replayed, so they change nothing).
    pub fn salvage(&self) -> Salvaged {
        let mut ops = Vec::new();
        let mut heads = Vec::new();
        let mut unreadable = Vec::new();
        let conn = match self.conn() {
            Ok(c) => c,
            Err(e) => return Salvaged { ops, heads, unreadable, stopped: Some(e) },
        };
        let mut bases = std::collections::HashMap::new();
        let read_heads = (|| -> Result<(), StoreError> {
            let mut stmt = conn.prepare("SELECT channel, chat_id, head, base FROM chats")?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let head: i64 = row.get(2)?;
                let chat: (String, String) = (row.get(0)?, row.get(1)?);
                bases.insert(chat.clone(), row.get::<_, i64>(3)?);
                heads.push((chat, head as u64));
            }
            Ok(())
        })();
        // Row by row: a row whose cells are not what they should be (a `line` that is a BLOB of invalid UTF-8,
        // or NULL) is reported and passed over; only a failure of the read itself (a damaged page) stops it,
        // keeping what was read before.
        let read_ops = (|| -> Result<(), StoreError> {
            let mut stmt = conn.prepare("SELECT channel, chat_id, pos, line, seq FROM ops ORDER BY seq")?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let chat = (row.get::<_, String>(0), row.get::<_, String>(1));
                if let (Ok(channel), Ok(chat_id), Ok(seq)) = (chat.0, chat.1, row.get::<_, i64>(4))
                    && bases.get(&(channel, chat_id)).is_some_and(|&base| seq < base)
                {
                    continue;
                }
                let cells = (|| -> Result<(u64, Op), rusqlite::Error> {
                    let pos: i64 = row.get(2)?;
                    Ok((pos as u64, Op { channel: row.get(0)?, chat_id: row.get(1)?, line: row.get(3)? }))
                })();
                match cells {
                    Ok(op) => ops.push(op),
                    Err(e) => {
                        let seq: i64 = row.get(4).unwrap_or(-1);
                        unreadable.push(format!("row {seq} of the log cannot be read: {e}"));
                    }
                }
            }
            Ok(())
        })();
        Salvaged { ops, heads, unreadable, stopped: read_ops.err().or(read_heads.err()) }
    }

    /// Writes a new store at `path` (which must not exist) holding `ops` at their positions, with each chat's
    /// newest position the larger of `heads` and its operations'.
    pub fn write_fresh(path: &Path, ops: &[(u64, Op)], heads: &[((String, String), u64)]) -> Result<(), StoreError> {
        if path.exists() {
            return Err(StoreError::Damaged(format!("{} exists already", path.display())));
        }
        let store = Self::open_unchecked(path)?;
        let mut conn = store.conn()?;
        let tx = write(&mut conn)?;
        let mut newest: std::collections::HashMap<(&str, &str), u64> = std::collections::HashMap::new();
        for ((channel, chat), head) in heads {
            newest.insert((channel, chat), *head);
        }
        {
            let mut insert = tx.prepare("INSERT INTO ops (channel, chat_id, pos, line) VALUES (?1, ?2, ?3, ?4)")?;
            for (pos, o) in ops {
                insert.execute(params![o.channel, o.chat_id, *pos as i64, o.line])?;
                let head = newest.entry((&o.channel, &o.chat_id)).or_default();
                *head = (*head).max(*pos);
            }
            let mut chat = tx.prepare("INSERT INTO chats (channel, chat_id, head) VALUES (?1, ?2, ?3)")?;
            for ((channel, chat_id), head) in newest {
                chat.execute(params![channel, chat_id, head as i64])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

/// What the integrity check at open decided: a store found damaged is refused, one the check could not finish
/// in `limit` is taken with a warning.
pub(super) fn verdict(path: &Path, limit: std::time::Duration, found: Integrity) -> Result<(), StoreError> {
    match found {
        Integrity::Sound => Ok(()),
        Integrity::Unfinished => {
            tracing_free_warning(limit);
            Ok(())
        }
        Integrity::Damaged(problems) => Err(StoreError::Damaged(format!(
            "{} is damaged ({}); `chatctx store repair --drop-damaged` copies what can be read into a new file and \
             keeps this one beside it",
            path.display(),
            problems.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
        ))),
    }
}

/// Whether a SQLite error says the file is damaged (rather than busy, full or unreadable).
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase))
}

/// The integrity check ran out of time: said on stderr, since this crate does not log.
fn tracing_free_warning(limit: std::time::Duration) {
    eprintln!(
        "warning: the store's integrity check stopped after {limit:?} (store.check_timeout) with nothing wrong found \
         so far; `chatctx store check` checks all of it"
    );
}
