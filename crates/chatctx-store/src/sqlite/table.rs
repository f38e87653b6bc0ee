//! Reading and writing the log table's rows: appended many per statement, a chat's snapshot superseding its
//! earlier rows, superseded rows deleted (rows.rs says which and when).

use rusqlite::{Connection, Transaction, params};

use super::rows::{Rows, key};
use crate::{Op, StoreError, grouped, runs};

/// The chats' table: each chat with the number below which a snapshot superseded its rows (`chats.base`) and
/// its newest position as last written there (`chats.head`; its rows may hold newer ones).
fn chats(conn: &Connection) -> Result<Vec<(Vec<u8>, i64, u64)>, StoreError> {
    let mut stmt = conn.prepare("SELECT channel, chat_id, base, head FROM chats")?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut k = Vec::new();
        key(&mut k, text(row, 0)?, text(row, 1)?);
        out.push((k, row.get(2)?, row.get::<_, i64>(3)? as u64));
    }
    Ok(out)
}

/// Where each chat's rows are, read from the table (no row's text is read).
pub(super) fn read_rows(conn: &Connection) -> Result<Rows, StoreError> {
    scan(conn, None)
}

/// Reads the table in order: where each chat's rows are, and, given `each`, every operation in use with its
/// position (a superseded row's text is not read: its chat's snapshot stands for it; its size comes from the
/// row's header).
pub(super) fn scan(conn: &Connection, mut each: Option<&mut dyn FnMut(u64, Op)>) -> Result<Rows, StoreError> {
    // Before reading: a commit of another process during the read changes it, and the next write reads again.
    let seen_version = version(conn)?;
    let mut placed = Rows::with_chats(chats(conn)?);
    let mut stmt = conn.prepare("SELECT seq, channel, chat_id, pos, line, octet_length(line) FROM ops ORDER BY seq")?;
    let mut rows = stmt.query([])?;
    let mut k = Vec::new();
    while let Some(row) = rows.next()? {
        let (channel, chat_id) = (text(row, 1)?, text(row, 2)?);
        key(&mut k, channel, chat_id);
        // A superseded row's text is passed over, and so is its position (after the text in the row: reading
        // it reads the text's overflow pages).
        let pos = || row.get::<_, i64>(3).map(|p| p as u64);
        if let Some(pos) = placed.seen(&k, row.get(0)?, row.get::<_, i64>(5)? as usize, pos)?
            && let Some(each) = each.as_mut()
        {
            let (channel, chat_id) = (channel.to_owned(), chat_id.to_owned());
            each(pos, Op { channel, chat_id, line: row.get(4)? });
        }
    }
    placed.read();
    placed.version = seen_version;
    Ok(placed)
}

/// The file's data version as this connection sees it (`PRAGMA data_version`: moved by other connections'
/// commits only).
pub(super) fn version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.prepare_cached("PRAGMA data_version")?.query_row([], |r| r.get(0))?)
}

/// Appends `lines` (at least one) to a chat at its next positions; returns its new head and the number of
/// the first row.
pub(super) fn push(
    tx: &Transaction<'_>,
    placed: &mut Rows,
    channel: &str,
    chat_id: &str,
    lines: &[&str],
) -> Result<(u64, i64), StoreError> {
    let mut k = Vec::new();
    key(&mut k, channel, chat_id);
    let head = placed.reserve(&k, lines.len());
    let first = insert(tx, at_positions(channel, chat_id, head, lines))?;
    placed.appended(&k, first, lines.iter().map(|l| l.len()));
    Ok((head, first))
}

/// [`push`] for many chats at once: their rows go in together, many per statement, grouped by chat (a start
/// reads the table in order and applies runs of one chat: interleaved rows made it 30 % slower).
pub(super) fn push_all<'a>(
    tx: &Transaction<'_>,
    placed: &mut Rows,
    ops: impl Iterator<Item = &'a Op>,
) -> Result<(), StoreError> {
    let ops = grouped(ops);
    let mut k = Vec::new();
    let rows = runs(&ops).flat_map(|run| {
        key(&mut k, &run[0].channel, &run[0].chat_id);
        let first = placed.reserve(&k, run.len()) as i64 - run.len() as i64 + 1;
        run.iter().zip(first..).map(|(o, pos)| (o.channel.as_str(), o.chat_id.as_str(), pos, o.line.as_str()))
    });
    let mut seq = insert(tx, rows)?;
    for run in runs(&ops) {
        key(&mut k, &run[0].channel, &run[0].chat_id);
        placed.appended(&k, seq, run.iter().map(|o| o.line.len()));
        seq += run.len() as i64;
    }
    Ok(())
}

/// A chat's `lines` as rows at the positions up to `head` (reserved for them).
fn at_positions<'a>(
    channel: &'a str,
    chat_id: &'a str,
    head: u64,
    lines: &'a [&'a str],
) -> impl Iterator<Item = Row<'a>> {
    let first = head as i64 - lines.len() as i64 + 1;
    lines.iter().enumerate().map(move |(i, line)| (channel, chat_id, first + i as i64, *line))
}

/// Writes a chat's newest position and base to the chats' table.
fn note_chat(tx: &Transaction<'_>, channel: &str, chat_id: &str, head: u64, base: i64) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT INTO chats (channel, chat_id, head, base) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (channel, chat_id) DO UPDATE SET head = excluded.head, base = excluded.base",
    )?
    .execute(params![channel, chat_id, head as i64, base])?;
    Ok(())
}

/// A log row: channel, chat id, position, line.
type Row<'a> = (&'a str, &'a str, i64, &'a str);

/// Rows one `INSERT` statement takes: each run of a statement opens and seeks the table's cursor, which for
/// one row costs about as much as the row itself.
const ROWS_PER_INSERT: usize = 32;

/// `INSERT` of [`ROWS_PER_INSERT`] rows, `OR FAIL`: under SQLite's default (`ABORT`) a statement that writes several
/// rows and could stop on a constraint keeps a statement journal (a copy of every page it changes, spilled to a
/// temporary file past 64 KiB) so that it alone can be undone; that was three quarters of the store's write calls
/// (docs/benchmarks-issue-32.md, "a many-row insert without a statement journal"). Nothing here needs it: no row
/// can break a constraint (every column is given, the number is SQLite's), and a write that fails for any reason
/// is rolled back whole (`SqliteStore::writing` commits only when everything in it succeeded). A single-row
/// `INSERT` keeps no statement journal either way.
static INSERT_MANY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let rows = vec!["(?, ?, ?, ?)"; ROWS_PER_INSERT].join(", ");
    format!("INSERT OR FAIL INTO ops (channel, chat_id, pos, line) VALUES {rows}")
});

/// Inserts `rows`, numbered in turn: the number of the first. They are taken [`ROWS_PER_INSERT`] at a time
/// into a buffer on the stack (a vector of a write's rows, about 40 KB, came from freshly mapped memory nearly
/// every time: 3–5 % of `store_bench`'s samples were the kernel zeroing its pages).
fn insert<'a>(tx: &Transaction<'_>, rows: impl Iterator<Item = Row<'a>>) -> Result<i64, StoreError> {
    let mut numbered = Numbered::default();
    let mut rows = rows.fuse();
    let mut buf: [Row<'a>; ROWS_PER_INSERT] = [("", "", 0, ""); ROWS_PER_INSERT];
    let mut many = None;
    loop {
        let mut n = 0;
        for (slot, row) in buf.iter_mut().zip(rows.by_ref()) {
            *slot = row;
            n += 1;
        }
        if n < ROWS_PER_INSERT {
            let mut one = tx.prepare_cached("INSERT INTO ops (channel, chat_id, pos, line) VALUES (?1, ?2, ?3, ?4)")?;
            for (channel, chat_id, pos, line) in &buf[..n] {
                one.execute(params![channel, chat_id, pos, line])?;
                numbered.next(tx, 1)?;
            }
            return Ok(numbered.first);
        }
        // Looked up once (the cache hashes the statement's text).
        let many = match &mut many {
            Some(many) => many,
            None => many.insert(tx.prepare_cached(&INSERT_MANY)?),
        };
        for (i, (channel, chat_id, pos, line)) in buf.iter().enumerate() {
            many.raw_bind_parameter(4 * i + 1, channel)?;
            many.raw_bind_parameter(4 * i + 2, chat_id)?;
            many.raw_bind_parameter(4 * i + 3, pos)?;
            many.raw_bind_parameter(4 * i + 4, line)?;
        }
        many.raw_execute()?;
        numbered.next(tx, ROWS_PER_INSERT)?;
    }
}

/// The numbers SQLite gave the rows of an [`insert`], checked to follow each other (one writer, numbers never
/// reused: each row gets the next), since the rows' places are kept by number.
#[derive(Default)]
struct Numbered {
    first: i64,
    last: Option<i64>,
}

impl Numbered {
    /// A statement inserted `n` rows.
    fn next(&mut self, tx: &Transaction<'_>, n: usize) -> Result<(), StoreError> {
        let last = tx.last_insert_rowid();
        let first = last - n as i64 + 1;
        match self.last {
            None => self.first = first,
            Some(before) if before + 1 != first => {
                return Err(StoreError::Damaged(format!("rows were numbered {before}, then {first}: not in turn")));
            }
            Some(_) => {}
        }
        self.last = Some(last);
        Ok(())
    }
}

/// Deletes rows by number.
fn delete_rows(tx: &Transaction<'_>, seqs: &[i64]) -> Result<(), StoreError> {
    let mut stmt = tx.prepare_cached("DELETE FROM ops WHERE seq = ?1")?;
    for seq in seqs {
        stmt.execute([seq])?;
    }
    Ok(())
}

/// Appends a chat's snapshot: the chat's earlier rows are superseded (deleted now with `erase`).
pub(super) fn push_snapshot(tx: &Transaction<'_>, placed: &mut Rows, s: &Op, erase: bool) -> Result<(), StoreError> {
    let (head, seq) = push(tx, placed, &s.channel, &s.chat_id, &[&s.line])?;
    note_chat(tx, &s.channel, &s.chat_id, head, seq)?;
    let mut k = Vec::new();
    key(&mut k, &s.channel, &s.chat_id);
    let superseded = placed.supersede(&k, seq);
    if erase {
        delete_rows(tx, &superseded)?;
        placed.deleted(&k, &superseded);
    }
    Ok(())
}

/// Deletes a chat's rows, all of them: how many. Its newest position is written to the chats' table, where a
/// start finds it once no row holds it.
pub(super) fn remove_chat(
    tx: &Transaction<'_>,
    placed: &mut Rows,
    channel: &str,
    chat_id: &str,
) -> Result<u64, StoreError> {
    let mut k = Vec::new();
    key(&mut k, channel, chat_id);
    let seqs = placed.remove(&k);
    delete_rows(tx, &seqs)?;
    let head = placed.head(&k);
    if head > 0 {
        note_chat(tx, channel, chat_id, head, 0)?;
    }
    Ok(seqs.len() as u64)
}

/// Superseded rows one write deletes at least (as many as the rows it wrote and a quarter more, if more). A row
/// is superseded once at most, so this keeps up (twice the rows written made ten-chat writes slower, p99 26
/// against 24 ms), and a long range (the oldest chat's
/// snapshot lets everything up to the next chat's rows go) is spread over many writes: deleting 4,096 rows
/// at once made a write of 100 messages take 20 ms instead of 2.
const GATHER_ROWS: usize = 256;

/// Deletes the oldest superseded rows older than every row in use, if there are any: at most the larger of
/// [`GATHER_ROWS`] and `written` (the rows this write added) and a quarter.
pub(super) fn gather(tx: &Transaction<'_>, placed: &mut Rows, written: usize) -> Result<(), StoreError> {
    if let Some(below) = placed.gatherable(GATHER_ROWS.max(written + written / 4)) {
        tx.prepare_cached("DELETE FROM ops WHERE seq < ?1")?.execute([below])?;
        placed.gathered(below);
    }
    Ok(())
}

/// A text cell, borrowed from the row.
fn text<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    row.get_ref(i)?
        .as_str()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
}
