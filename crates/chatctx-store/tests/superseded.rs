//! The SQLite log supersedes a chat's rows at a snapshot instead of deleting them, deletes superseded rows
//! later as one range, and keeps where each chat's rows are in memory: checked against the memory store
//! through random writes, snapshots (erasing or not), rewrites, forgets and restarts.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;

use chatctx_store::testing::Scratch;
use chatctx_store::{Log, MemoryStore, Op, SharedLog, SqliteStore, Store};

/// A small deterministic generator (the same runs every time).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn op(chat: u64, line: String) -> Op {
    Op { channel: "telegram".into(), chat_id: format!("-{chat}"), line }
}

/// Every chat's operations with their positions, as a restart reads them.
fn by_chat(store: &dyn Store) -> BTreeMap<String, Vec<(u64, String)>> {
    let mut out: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    store.load(&mut |pos, o| out.entry(o.chat_id).or_default().push((pos, o.line))).unwrap();
    out
}

/// Rows of `chat` in the file that its snapshot superseded.
fn superseded(path: &std::path::Path, chat: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        "SELECT count(*) FROM ops JOIN chats USING (channel, chat_id) WHERE chat_id = ?1 AND seq < base",
        [chat],
        |r| r.get(0),
    )
    .unwrap()
}

/// Superseded rows older than every row in use (which the store deletes as it goes).
fn left_behind(path: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        // A chat never snapshotted may have no row in `chats`: nothing of it is superseded.
        "SELECT count(*) FROM ops LEFT JOIN chats USING (channel, chat_id) WHERE seq < coalesce(base, 0) AND seq <
             (SELECT coalesce(min(seq), 1 << 62) FROM ops LEFT JOIN chats USING (channel, chat_id)
              WHERE seq >= coalesce(base, 0))",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

fn rows_in_file(path: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("SELECT count(*) FROM ops", [], |r| r.get(0)).unwrap()
}

#[test]
fn the_sqlite_log_reads_back_what_the_memory_log_holds() {
    for seed in 1..=12u64 {
        let dir = Scratch::new(&format!("superseded-{seed}"));
        let path = dir.file("log.db");
        let model = MemoryStore::default();
        let mut store = SqliteStore::open(&path).unwrap();
        let mut rng = Rng(seed);
        let mut n = 0;
        for step in 0..300 {
            n += 1;
            match rng.below(20) {
                // Appends over a few chats, in one write (with a snapshot of some chat now and then).
                0..=11 => {
                    let ops: Vec<Op> = (0..1 + rng.below(6)).map(|i| op(rng.below(6), format!("e{n}.{i}"))).collect();
                    let snaps: Vec<Op> =
                        if rng.below(3) == 0 { vec![op(rng.below(6), format!("snap{n}"))] } else { Vec::new() };
                    let erase = rng.below(4) == 0;
                    model.write(&ops, &snaps, erase).unwrap();
                    store.write(&ops, &snaps, erase).unwrap();
                    if erase && let Some(s) = snaps.first() {
                        assert_eq!(superseded(&path, &s.chat_id), 0, "seed {seed} step {step}: erased at once");
                    }
                }
                12..=14 => {
                    let chat = rng.below(6);
                    let snaps = [op(chat, format!("snap{n}"))];
                    model.write(&[], &snaps, false).unwrap();
                    store.write(&[], &snaps, false).unwrap();
                }
                15 => {
                    let chat = format!("-{}", rng.below(6));
                    model.delete_chat("telegram", &chat).unwrap();
                    store.delete_chat("telegram", &chat).unwrap();
                    assert_eq!(superseded(&path, &chat), 0);
                }
                16 => {
                    let chat = rng.below(6);
                    let ops = [op(chat, format!("import{n}")), op(chat, format!("after{n}"))];
                    model.rewrite_chat("telegram", &format!("-{chat}"), &ops).unwrap();
                    store.rewrite_chat("telegram", &format!("-{chat}"), &ops).unwrap();
                }
                // A restart: everything is read back from the file.
                17 => {
                    drop(store);
                    store = SqliteStore::open(&path).unwrap();
                    assert_eq!(by_chat(&store), by_chat(&model), "seed {seed} step {step}: after a restart");
                }
                _ => {
                    let chat = format!("-{}", rng.below(6));
                    let read = |s: &dyn SharedLog| {
                        let mut v = Vec::new();
                        s.since("telegram", &chat, 0, &mut |p, l| v.push((p, l))).unwrap();
                        v
                    };
                    assert_eq!(read(&store), read(&model), "seed {seed} step {step}: chat {chat} alone");
                }
            }
            assert_eq!(left_behind(&path), 0, "seed {seed} step {step}: superseded rows left behind");
        }
        assert_eq!(by_chat(&store), by_chat(&model), "seed {seed}");
        let live: usize = by_chat(&model).values().map(Vec::len).sum();
        // Superseded rows older than every row in use are gone; others wait (for a snapshot the service takes).
        assert!(rows_in_file(&path) as usize >= live);
        drop(store);
        let reopened = SqliteStore::open(&path).unwrap();
        assert_eq!(by_chat(&reopened), by_chat(&model), "seed {seed}: the last restart");
    }
}

/// Two processes writing one file (against docs/deployment.md, but a command run against a served store does
/// it): each notices the other's rows at its next write, so no position is given twice and the other's rows are
/// not deleted as superseded.
#[test]
fn a_second_writer_on_the_file_is_noticed() {
    let dir = Scratch::new("superseded-two-writers");
    let path = dir.file("log.db");
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap();
    a.write(&[op(1, "a1".into()), op(2, "x1".into())], &[], false).unwrap();
    b.write(&[op(1, "b2".into())], &[], false).unwrap();
    a.write(&[op(1, "a3".into())], &[], false).unwrap();
    b.write(&[op(3, "y1".into())], &[], false).unwrap();
    // Everything before a's snapshots is superseded, except b's row of chat -3.
    a.write(&[], &[op(1, "snap1".into()), op(2, "snap2".into())], false).unwrap();
    a.write(&[op(1, "a5".into())], &[], false).unwrap();
    b.delete_chat("telegram", "-2").unwrap();
    // A deletion moves no row counter; a still sees it (its rows of -2 were read again).
    let mut left = Vec::new();
    a.since("telegram", "-2", 0, &mut |p, l| left.push((p, l))).unwrap();
    assert!(left.is_empty(), "{left:?}");
    a.write(&[op(2, "x3".into())], &[], false).unwrap();
    drop((a, b));
    let store = SqliteStore::open(&path).unwrap();
    let s = |v: &[(u64, &str)]| v.iter().map(|&(p, l)| (p, l.to_owned())).collect::<Vec<_>>();
    let want = BTreeMap::from([
        ("-1".to_owned(), s(&[(4, "snap1"), (5, "a5")])),
        ("-2".to_owned(), s(&[(3, "x3")])),
        ("-3".to_owned(), s(&[(1, "y1")])),
    ]);
    assert_eq!(by_chat(&store), want);
}

/// Once superseded rows outweigh those in use (by more than the slack), the store names the chats holding them
/// back, oldest first; a snapshot of each lets the rows before them go.
#[test]
fn chats_holding_back_superseded_rows_are_named_and_their_snapshot_frees_them() {
    let dir = Scratch::new("superseded-reclaim");
    let path = dir.file("log.db");
    // No slack: chats are named as soon as superseded rows outweigh those in use.
    let store = SqliteStore::open(&path).unwrap().with_superseded_slack(0);
    store.write(&[op(1, "idle".into())], &[], false).unwrap();
    assert!(store.reclaim(4).is_empty());
    // A busy chat, snapshotted after every 50 rows: its old rows are superseded but sit after the idle one's.
    for round in 0..500u64 {
        let ops: Vec<Op> = (0..50).map(|i| op(2, format!("busy{round}.{i}"))).collect();
        store.write(&ops, &[], false).unwrap();
        store.write(&[], &[op(2, format!("snap{round}"))], false).unwrap();
    }
    assert_eq!(rows_in_file(&path), 1 + 500 * 50 + 500, "nothing superseded is before the idle chat's row");
    assert_eq!(store.reclaim(4), [("telegram".to_owned(), "-1".to_owned())], "the idle chat holds them back");
    store.write(&[], &[op(1, "idle, snapshotted".into())], false).unwrap();
    assert_eq!(rows_in_file(&path), 25_502 - 256, "a write deletes 256 superseded rows at most");
    for _ in 0..100 {
        store.write(&[], &[], false).unwrap();
    }
    assert_eq!(rows_in_file(&path), 2, "only the two snapshots are left");
    assert!(store.reclaim(4).is_empty());
    drop(store);
    let reopened = SqliteStore::open(&path).unwrap();
    let read = by_chat(&reopened);
    assert_eq!(read["-1"], [(2, "idle, snapshotted".to_owned())]);
    assert_eq!(read["-2"], [(25_500, "snap499".to_owned())]);
}
