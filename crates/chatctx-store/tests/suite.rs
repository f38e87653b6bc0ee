//! One suite for every backend: what the service relies on from a store (a [`Log`] and a [`SharedLog`]),
//! checked on memory, SQLite and PostgreSQL alike (PostgreSQL when `CHATCTX_TEST_POSTGRES` names a server; `.ci/run` starts one).
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;

use chatctx_store::testing::Scratch;
use chatctx_store::{Log, MemoryStore, Op, SharedLog, SqliteStore, Store};

/// A backend under test: every backend is both kinds of log.
trait Both: Log + SharedLog {}
impl<T: Log + SharedLog> Both for T {}

fn op(chat: &str, line: &str) -> Op {
    Op { channel: "telegram".into(), chat_id: chat.into(), line: line.into() }
}

fn since(store: &dyn SharedLog, chat: &str, after: u64) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    store.since("telegram", chat, after, &mut |pos, line| out.push((pos, line))).unwrap();
    out
}

fn lines(v: &[(u64, String)]) -> Vec<&str> {
    v.iter().map(|(_, l)| l.as_str()).collect()
}

fn all(store: &dyn Store) -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    store.load(&mut |pos, o| out.push((pos, o.chat_id, o.line))).unwrap();
    out
}

/// Appends, loads, positions, catch-up reads, compare-and-append, compaction, rewriting, forgetting.
fn contract(store: &dyn Both) {
    store.append(&[op("-1", "a"), op("-2", "b")]).unwrap();
    store.append(&[op("-1", "c")]).unwrap();
    let loaded = all(store);
    assert_eq!(loaded.len(), 3);
    let chat1: Vec<_> = loaded.iter().filter(|(_, c, _)| c == "-1").map(|(p, _, l)| (*p, l.as_str())).collect();
    assert_eq!(chat1, [(1, "a"), (2, "c")], "positions count per chat, in order");

    // Catch-up reads.
    assert_eq!(since(store, "-1", 0), [(1, "a".to_owned()), (2, "c".to_owned())]);
    assert_eq!(since(store, "-1", 1), [(2, "c".to_owned())]);
    assert!(since(store, "-1", 2).is_empty());
    assert!(since(store, "-9", 0).is_empty(), "an unknown chat has nothing");

    // Compare-and-append: only at the current head.
    let two = |a: &str, b: &str| vec![a.to_owned(), b.to_owned()];
    assert_eq!(store.append_at("telegram", "-1", 2, &two("d", "e")).unwrap(), Some(4));
    assert_eq!(store.append_at("telegram", "-1", 2, &two("stale", "x")).unwrap(), None, "stale head refused");
    assert_eq!(lines(&since(store, "-1", 0)), ["a", "c", "d", "e"], "a refused append writes nothing");
    assert_eq!(store.append_at("telegram", "-3", 0, &["first".to_owned()]).unwrap(), Some(1), "a new chat");
    assert_eq!(store.append_at("telegram", "-3", 0, &["again".to_owned()]).unwrap(), None);

    // Compaction: everything up to a position becomes the line at it; later ones stay.
    store.compact_at("telegram", "-1", 3, "snapshot@3").unwrap();
    assert_eq!(since(store, "-1", 0), [(3, "snapshot@3".to_owned()), (4, "e".to_owned())]);
    assert_eq!(lines(&since(store, "-1", 1)), ["snapshot@3", "e"], "a reader behind sees the snapshot first");
    store.compact_at("telegram", "-1", 2, "too old").unwrap();
    assert_eq!(lines(&since(store, "-1", 0)), ["snapshot@3", "e"], "compacting at a position gone is nothing");
    assert_eq!(lines(&since(store, "-2", 0)), ["b"], "other chats untouched");

    // Rewriting and forgetting never reuse a position.
    store.rewrite_chat("telegram", "-1", &[op("-1", "import")]).unwrap();
    assert_eq!(since(store, "-1", 0), [(5, "import".to_owned())]);
    assert_eq!(store.delete_chat("telegram", "-2").unwrap(), 1);
    assert!(since(store, "-2", 0).is_empty());
    assert_eq!(store.append_at("telegram", "-2", 0, &["reborn".to_owned()]).unwrap(), None, "the head survives");
    assert_eq!(store.append_at("telegram", "-2", 1, &["reborn".to_owned()]).unwrap(), Some(2));
    assert_eq!(store.append_at("telegram", "-2", 2, &[]).unwrap(), Some(2), "nothing to append");

    // One write: appends, and replaces each snapshotted chat's log by its line (its appends in the same
    // write are not kept: the snapshot stands for them); nothing else of the chat is touched.
    store
        .write(&[op("-3", "second"), op("-4", "x"), op("-4", "y"), op("-3", "third")], &[op("-4", "snap-4")], false)
        .unwrap();
    assert_eq!(since(store, "-3", 0), [(1, "first".to_owned()), (2, "second".to_owned()), (3, "third".to_owned())]);
    assert_eq!(lines(&since(store, "-4", 0)), ["snap-4"]);
    store.write(&[], &[op("-3", "snap-3")], true).unwrap();
    assert_eq!(since(store, "-3", 0), [(4, "snap-3".to_owned())], "a snapshot takes the chat's next position");
    store.write(&[op("-3", "after")], &[], false).unwrap();
    assert_eq!(lines(&since(store, "-3", 0)), ["snap-3", "after"]);
    store.write(&[], &[op("-3", "first")], false).unwrap();
    store.delete_chat("telegram", "-4").unwrap();

    // A write whose snapshots are made while it runs: they are asked for once, after the other chats'
    // operations are written; a chat named but given no snapshot keeps its log, this write's operations too.
    let mut asked = 0;
    let named = [("telegram".to_owned(), "-5".to_owned()), ("telegram".to_owned(), "-6".to_owned())];
    let made = store
        .write_making(
            &[op("-5", "p"), op("-6", "q"), op("-7", "r"), op("-6", "s"), op("-5", "t")],
            &named,
            &mut || {
                asked += 1;
                vec![op("-5", "snap-5")]
            },
            false,
        )
        .unwrap();
    assert_eq!((asked, made.len()), (1, 1));
    assert_eq!(since(store, "-5", 0), [(1, "snap-5".to_owned())], "the snapshot stands for the chat's operations");
    assert_eq!(since(store, "-6", 0), [(1, "q".to_owned()), (2, "s".to_owned())], "no snapshot: the log stays");
    assert_eq!(since(store, "-7", 0), [(1, "r".to_owned())]);
    for chat in ["-5", "-6", "-7"] {
        store.delete_chat("telegram", chat).unwrap();
    }

    let mut left: Vec<_> = all(store).into_iter().map(|(p, c, l)| format!("{c}@{p}={l}")).collect();
    left.sort();
    assert_eq!(left, ["-1@5=import", "-2@2=reborn", "-3@6=first"]);
}

/// Writers on threads racing on one chat with compare-and-append and retry: every write lands exactly once,
/// at consecutive positions.
fn racing_writers(store: Arc<dyn SharedLog>) {
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    loop {
                        let head = since(&*store, "race", 0).last().map_or(0, |(p, _)| *p);
                        if store.append_at("telegram", "race", head, &[format!("{t}-{i}")]).unwrap().is_some() {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let got = since(&*store, "race", 0);
    assert_eq!(got.iter().map(|(p, _)| *p).collect::<Vec<_>>(), (1..=100).collect::<Vec<_>>());
    let mut written: Vec<_> = lines(&got).into_iter().map(str::to_owned).collect();
    written.sort();
    written.dedup();
    assert_eq!(written.len(), 100, "no write lost or doubled");
}

/// Platform ids noted by chat, found, and forgotten with their chat.
fn externals(store: &dyn SharedLog) {
    store.note_external("telegram", "-1", "poll-1").unwrap();
    store.note_external("telegram", "-2", "poll-2").unwrap();
    assert_eq!(store.find_external("poll-1").unwrap(), Some(("telegram".to_owned(), "-1".to_owned())));
    assert_eq!(store.find_external("nope").unwrap(), None);
    store.forget_externals("telegram", "-1").unwrap();
    assert_eq!(store.find_external("poll-1").unwrap(), None);
    assert!(store.find_external("poll-2").unwrap().is_some(), "other chats keep theirs");
}

/// Revoked scope ids are kept until they expire, and read back by anyone.
fn revocations(store: &dyn Store) {
    store.revoke_scope("old", 100).unwrap();
    store.revoke_scope("live", 2_000_000_000).unwrap();
    let mut ids = store.revoked_scopes(1_000).unwrap();
    ids.sort();
    assert_eq!(ids, [("live".to_owned(), 2_000_000_000)], "expired ones are not listed");
    // Read since a number: all at first (0), then only what came after (a store without numbers answers all).
    let (all, first) = store.revoked_since(1_000, 0).unwrap();
    assert_eq!(all, [("live".to_owned(), 2_000_000_000)]);
    store.revoke_scope("later", 2_000_000_000).unwrap();
    let (new, next) = store.revoked_since(1_000, first).unwrap();
    if first > 0 {
        assert_eq!(new, [("later".to_owned(), 2_000_000_000)], "only the new one");
        assert!(next > first);
        assert_eq!(store.revoked_since(1_000, next).unwrap().0, [], "nothing new");
    } else {
        assert_eq!(new.len(), 2);
    }
}

#[test]
fn memory() {
    revocations(&MemoryStore::default());
    contract(&MemoryStore::default());
    racing_writers(Arc::new(MemoryStore::default()));
    externals(&MemoryStore::default());
}

fn temp_db(name: &str) -> (Scratch, std::path::PathBuf) {
    let dir = Scratch::new(&format!("store-suite-{name}"));
    let path = dir.file(name);
    (dir, path)
}

#[test]
fn sqlite() {
    let (_dir, path) = temp_db("contract.db");
    contract(&SqliteStore::open(&path).unwrap());
    revocations(&SqliteStore::open(&path).unwrap());
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(all(&reopened).len(), 3, "survives closing and reopening");
    assert_eq!(reopened.append_at("telegram", "-1", 5, &["after".to_owned()]).unwrap(), Some(6), "heads survive");
    let (_race_dir, race) = temp_db("race.db");
    racing_writers(Arc::new(SqliteStore::open(&race).unwrap()));
}

#[cfg(feature = "postgres")]
#[test]
fn postgres() {
    use chatctx_store::PgStore;
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_store_suite") else { return };
    let store = PgStore::open(&url, 4).unwrap();
    assert!(matches!(chatctx_store::open(&url, &Default::default()), Ok(chatctx_store::Opened::Shared(_))));
    contract(&store);
    let reopened = PgStore::open(&url, 4).unwrap();
    assert_eq!(reopened.schema_versions().unwrap(), [1, 2, 3, 4], "migrations are applied once");
    externals(&reopened);
    revocations(&reopened);
    assert_eq!(all(&reopened).len(), 3, "survives closing and reopening");
    assert_eq!(reopened.append_at("telegram", "-1", 5, &["after".to_owned()]).unwrap(), Some(6), "heads survive");
    racing_writers(Arc::new(PgStore::open(&url, 8).unwrap()));
}

/// PgBouncer in transaction mode hands each transaction to any server connection: the store must not rely
/// on anything kept between them (named prepared statements, session settings).
#[cfg(feature = "postgres")]
#[test]
fn postgres_through_pgbouncer_in_transaction_mode() {
    use chatctx_store::PgStore;
    let Some(url) = chatctx_store::testing::test_pgbouncer_url("chatctx_store_bouncer") else { return };
    contract(&PgStore::open(&url, 4).unwrap());
    racing_writers(Arc::new(PgStore::open(&url, 8).unwrap()));
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_instances_migrating_at_once() {
    use chatctx_store::PgStore;
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_store_migrate") else { return };
    let starts: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PgStore::open(&url, 1).map(|s| s.schema_versions().unwrap()))
        })
        .collect();
    for s in starts {
        assert_eq!(s.join().unwrap().unwrap(), [1, 2, 3, 4]);
    }
}

/// Issue 28, point 6: a database a newer chatctx migrated (a schema version this one does not know) is refused.
#[cfg(feature = "postgres")]
#[test]
fn postgres_refuses_a_newer_schema() {
    use chatctx_store::PgStore;
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_store_newer") else { return };
    drop(PgStore::open(&url, 1).unwrap());
    let psql = std::process::Command::new("psql")
        .args([url.as_str(), "-qAtc", "INSERT INTO chatctx_schema (version) VALUES (999)"])
        .output()
        .expect("psql is installed beside the test server");
    assert!(psql.status.success(), "{}", String::from_utf8_lossy(&psql.stderr));
    let Err(e) = PgStore::open(&url, 1) else { panic!("a newer schema is refused") };
    let e = e.to_string();
    assert!(e.contains("newer chatctx"), "{e}");
}
