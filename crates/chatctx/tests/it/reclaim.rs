//! The SQLite store keeps a snapshotted chat's earlier rows until the rows before them can go as one range; a
//! chat left idle with old rows would hold them back for ever, so the service snapshots the chats the store
//! names (`Log::reclaim`), and the file stays in proportion to what is in use.

use chatctx::config::LlmSettings;
use chatctx::service::{Options, Service};
use chatctx_core::{Settings, Timestamp};
use serde_json::{Value, json};

/// Superseded rows may outweigh those in use by this much before the chats holding them back are snapshotted.
const SLACK: i64 = 256 << 10;

fn open(path: &std::path::Path) -> Service {
    let sqlite = chatctx_store::SqliteStore::open(path).unwrap().with_superseded_slack(SLACK as u64);
    let store = chatctx_store::Opened::Local(std::sync::Arc::new(sqlite));
    let options = Options { compact_after: 50 };
    Service::open_with(Settings::default(), LlmSettings::default(), store, options).unwrap().0
}

fn message(chat: &str, id: u32) -> Value {
    json!({"type": "message", "chat_id": chat, "message_id": id.to_string(), "kind": "inbound_user",
           "sent_at": 1_770_000_000 + id, "sender": {"user_id": "1", "username": "ann"}, "text": format!("m{id}")})
}

/// Bytes of superseded rows in the file, and of rows in use.
fn bytes(path: &std::path::Path) -> (i64, i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let sum = |cmp: &str| {
        let sql = format!(
            "SELECT coalesce(sum(octet_length(line)), 0) FROM ops JOIN chats USING (channel, chat_id) WHERE seq {cmp} base"
        );
        conn.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap()
    };
    (sum("<"), sum(">="))
}

#[test]
fn an_idle_chat_does_not_keep_superseded_rows_in_the_file() {
    let dir = chatctx_store::testing::Scratch::new("reclaim-idle");
    let path = dir.file("chatctx.db");
    let now = Timestamp::from_unix(1_770_100_000).unwrap();
    let svc = open(&path);
    // The idle chat's three messages are the oldest rows; it is never written to again.
    svc.ingest(&[message("-1", 1), message("-1", 2), message("-1", 3)], now).unwrap();
    let idle = |svc: &Service| svc.read(|e| e.history("telegram", "-1", None)).unwrap().unwrap().len();
    let (mut most, mut over) = (0, 0);
    for w in 0..120u32 {
        // Ten busy chats, 40 messages each per write: past `compact_after` (50) every other write, when each
        // is snapshotted and its 40 rows before are superseded.
        let batch: Vec<Value> = (0..400).map(|i| message(&format!("-{}", 10 + i % 10), 10 + w * 400 + i)).collect();
        svc.ingest(&batch, now).unwrap();
        let (superseded, live) = bytes(&path);
        most = most.max(superseded - live);
        over += i64::from(superseded - live > SLACK);
    }
    // About 6 MB of rows were written. Superseded ones wait until they outweigh those in use by the slack; then
    // the idle chat is snapshotted and everything before the busy chats' rows in use goes: one write (400
    // rows, about 120 KB) past the slack at most.
    assert!(over > 0, "the slack was reached");
    assert!(most < SLACK + 200_000, "superseded rows outweighed those in use by {most} bytes");
    let lines = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.query_row("SELECT count(*) FROM ops WHERE chat_id = '-1' AND line LIKE '{\"import\"%'", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap()
    };
    assert_eq!(lines, 1, "the idle chat was snapshotted");
    assert_eq!(idle(&svc), 3);
    drop(svc);
    assert_eq!(idle(&open(&path)), 3, "and reads back whole");
}
