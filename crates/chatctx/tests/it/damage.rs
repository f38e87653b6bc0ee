//! A damaged store stops startup and is checked and repaired by command (`chatctx store check | repair`): a
//! line that cannot be applied, an empty file, damaged index pages, unreadable rows (each reported, the rows
//! after them kept) and a store from a newer version.

use crate::bin;
use crate::durability::{message, now, open, settings};
use chatctx::config::LlmSettings;
use chatctx::service::Service;
use chatctx_store::{Log, Op, Opened, SqliteStore};
use serde_json::Value;

fn sqlite(path: &std::path::Path) -> Opened {
    chatctx_store::open(&format!("sqlite://{}", path.display()), &Default::default()).unwrap()
}

fn open_err(path: &std::path::Path) -> String {
    match chatctx_store::open(&format!("sqlite://{}", path.display()), &Default::default()) {
        Err(e) => e,
        Ok(store) => match Service::open(settings(), LlmSettings::default(), store) {
            Err(e) => format!("{e:#}"),
            Ok(_) => panic!("a damaged store opened"),
        },
    }
}

/// The ids of the messages a Telegram chat holds once the store at `path` is opened again.
fn held(path: &std::path::Path, chat: &str) -> Vec<String> {
    let svc = open(&sqlite(path), 0);
    let items = svc.read(|e| e.history("telegram", chat, None)).unwrap().unwrap();
    items.iter().filter_map(|i| i.message_id.clone()).collect()
}

fn store_command(args: &[&str]) -> (i32, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn a_line_that_cannot_be_applied_stops_startup_until_it_is_repaired() {
    let dir = chatctx_store::testing::Scratch::new("durability-bad-line");
    let path = dir.file("chatctx.db");
    {
        let svc = open(&sqlite(&path), 0);
        svc.ingest(&[message("-1", 1, "one", None), message("-2", 2, "two", None)], now()).unwrap();
        let store = SqliteStore::open(&path).unwrap();
        let bad = Op { channel: "telegram".into(), chat_id: "-2".into(), line: "{\"event\": {\"type\": \"mess".into() };
        store.append(&[bad]).unwrap();
        svc.ingest(&[message("-2", 3, "three", None)], now()).unwrap();
    }
    let why = open_err(&path);
    assert!(why.contains("logged operation 2 of chat \"-2\""), "{why}");
    assert!(why.contains("chatctx store repair --drop-damaged"), "{why}");
    let url = format!("sqlite://{}", path.display());
    let (code, out) = store_command(&["store", "check", "--store", &url]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("1 operations cannot be applied") && out.contains("chat \"-2\" (telegram) position 2"),
        "{out}"
    );
    let (code, out) = store_command(&["store", "repair", "--store", &url]);
    assert_eq!(code, 2, "a repair needs --drop-damaged: {out}");
    let (code, out) = store_command(&["store", "repair", "--drop-damaged", "--store", &url]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("kept 3 operations, dropped 1"), "{out}");
    assert_eq!(held(&path, "-2"), ["2", "3"]);
    // Positions are never reused: the next operation of chat -2 goes after the dropped one.
    let (code, out) = store_command(&["store", "check", "--store", &url]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn an_empty_store_file_is_refused() {
    let dir = chatctx_store::testing::Scratch::new("durability-empty");
    let path = dir.file("chatctx.db");
    std::fs::write(&path, b"").unwrap();
    let why = open_err(&path);
    assert!(why.contains("empty file (0 bytes)"), "{why}");
    // A new store (no file yet) opens.
    let fresh = dir.file("new.db");
    open(&sqlite(&fresh), 0);
}

#[test]
fn damaged_index_pages_are_found_at_open_and_repaired() {
    let dir = chatctx_store::testing::Scratch::new("durability-pages");
    let path = dir.file("chatctx.db");
    {
        let svc = open(&sqlite(&path), 0);
        let batch: Vec<Value> =
            (1..=400).map(|i| message(&format!("-{}", i % 7 + 1), i, "a longer text to fill pages", None)).collect();
        svc.ingest(&batch, now()).unwrap();
    }
    let (root, page_size): (i64, i64) = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "wal_checkpoint", "TRUNCATE").unwrap();
        let root = conn
            .query_row("SELECT rootpage FROM sqlite_master WHERE name = 'revoked_by_seq'", [], |r| r.get(0))
            .unwrap();
        (root, conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap())
    };
    let mut bytes = std::fs::read(&path).unwrap();
    let at = ((root - 1) * page_size) as usize;
    for (i, b) in bytes[at..at + page_size as usize].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(97).wrapping_add(13);
    }
    std::fs::write(&path, &bytes).unwrap();
    let why = open_err(&path);
    assert!(why.contains("is damaged"), "{why}");
    // The check overlaps the first load (a restart's replay); anything else waits for its verdict: a write to
    // the damaged store is refused too, and nothing is written.
    let url = format!("sqlite://{}", path.display());
    let Ok(chatctx_store::Opened::Local(log)) = chatctx_store::open(&url, &Default::default()) else { panic!() };
    let refused =
        log.append(&[chatctx_store::Op { channel: "telegram".into(), chat_id: "-1".into(), line: "{}".into() }]);
    assert!(matches!(&refused, Err(e) if e.to_string().contains("is damaged")), "{refused:?}");
    drop(log);
    let (code, out) = store_command(&["store", "repair", "--drop-damaged", "--store", &url]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("kept 400 operations, dropped 0"), "{out}");
    let svc = open(&sqlite(&path), 0);
    assert_eq!(svc.read(|e| e.history("telegram", "-1", None)).unwrap().unwrap().len(), 6);
    svc.ingest(&[message("-1", 401, "after the repair", None)], now()).unwrap();
}

/// Issue 28, point 6: a row whose `line` is not text (a BLOB of invalid UTF-8, or NULL) is reported and dropped
/// by a repair, and every row after it is kept; a store stamped with a newer schema version is refused.
#[test]
fn unreadable_rows_are_reported_and_the_rows_after_them_kept() {
    let dir = chatctx_store::testing::Scratch::new("durability-unreadable-row");
    let path = dir.file("chatctx.db");
    {
        let svc = open(&sqlite(&path), 0);
        let batch: Vec<Value> = (1..=4).map(|i| message("-1", i, "text", None)).collect();
        svc.ingest(&batch, now()).unwrap();
    }
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let seqs: Vec<i64> = conn
            .prepare("SELECT seq FROM ops ORDER BY seq")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        conn.execute("UPDATE ops SET line = X'FFFE00' WHERE seq = ?1", [seqs[0]]).unwrap();
        // A number where a line should be (the column's text affinity keeps it as "42"): read, not applied.
        conn.execute("UPDATE ops SET line = 42 WHERE seq = ?1", [seqs[1]]).unwrap();
    }
    assert!(!open_err(&path).is_empty(), "a store with unreadable rows does not start");
    let url = format!("sqlite://{}", path.display());
    let (code, out) = store_command(&["store", "check", "--store", &url]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("1 rows cannot be read") && out.contains("1 operations cannot be applied"), "{out}");
    let (code, out) = store_command(&["store", "repair", "--drop-damaged", "--store", &url]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("kept 2 operations, dropped 2"), "{out}");
    assert_eq!(held(&path, "-1"), ["3", "4"]);
    // A newer chatctx's store: refused, by the server and by the commands, and left as it is.
    rusqlite::Connection::open(&path).unwrap().pragma_update(None, "user_version", 99).unwrap();
    assert!(open_err(&path).contains("newer chatctx"), "{}", open_err(&path));
    let (code, out) = store_command(&["store", "check", "--store", &url]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("newer chatctx"), "{out}");
    let version: i64 =
        rusqlite::Connection::open(&path).unwrap().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, 99);
}
