//! Scale-out under faults (issue 28, point 17): two `chatctx serve` instances on one PostgreSQL database (one
//! directly, one through PgBouncer in transaction mode), under continuous ingest and tool load, while the
//! database's backends are killed, PostgreSQL is stopped and started again, and PgBouncer restarts. Every write
//! acknowledged before, during and after is stored and seen by both, both answer alike once the database is
//! back, and `/readyz` says not ready while it is gone and ready again without restarting chatctx.
//!
//! It restarts the PostgreSQL and PgBouncer every other PostgreSQL test uses, so it is a test binary of its
//! own: cargo runs test binaries one after another, never beside this one. It needs, beside
//! `CHATCTX_TEST_POSTGRES` and `CHATCTX_TEST_PGBOUNCER`, three scripts that `.ci/run` writes:
//! `CHATCTX_TEST_POSTGRES_STOP`, `CHATCTX_TEST_POSTGRES_START` and `CHATCTX_TEST_PGBOUNCER_RESTART`.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "support/server.rs"]
mod server;
use server::{Server, client, start_with};

fn start(url: &str) -> Server {
    start_with(url, &[("CHATCTX_STORE__POOL_SIZE", "4")])
}

fn env(var: &str) -> Option<String> {
    chatctx_store::testing::test_env(var, "a script (.ci/run writes it)", "faults")
}

/// Runs one of the fault scripts.
fn run(script: &str) {
    let status = Command::new("bash").arg(script).status().unwrap();
    assert!(status.success(), "{script} failed");
}

fn msg(id: u64) -> Value {
    json!({"type": "message", "chat_id": "-1", "message_id": id.to_string(), "kind": "inbound_user",
           "sent_at": 1_770_000_000 + id, "sender": {"user_id": "1", "username": "ann"}, "text": format!("m{id}"),
           "triggered_agent": true})
}

/// Every stored message of chat -1, as id → text, read page by page.
fn stored(c: &reqwest::blocking::Client, base: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let r = c.get(format!("{base}/v1/chats/-1/history?limit=500{cursor}")).send().unwrap();
        let page: Value = serde_json::from_slice(&r.bytes().unwrap()).unwrap();
        for i in page["items"].as_array().unwrap() {
            out.push((i["message_id"].as_str().unwrap().to_owned(), i["text"].as_str().unwrap().to_owned()));
        }
        match page["next"].as_str() {
            Some(n) => cursor = format!("&cursor={n}"),
            None => return out,
        }
    }
}

/// Waits until `/readyz` of `base` answers `status` (at most `within`); whether it did.
fn ready_becomes(c: &reqwest::blocking::Client, base: &str, status: u16, within: Duration) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if c.get(format!("{base}/readyz")).send().is_ok_and(|r| r.status().as_u16() == status) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn two_instances_lose_nothing_and_agree_across_database_faults() {
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_faults") else { return };
    let (Some(bouncer), Some(stop), Some(start_db), Some(restart_bouncer)) = (
        env("CHATCTX_TEST_PGBOUNCER"),
        env("CHATCTX_TEST_POSTGRES_STOP"),
        env("CHATCTX_TEST_POSTGRES_START"),
        env("CHATCTX_TEST_PGBOUNCER_RESTART"),
    ) else {
        return;
    };
    // The same database through PgBouncer: postgres://USER@HOST:PORT/DB → postgres://USER@BOUNCER/DB.
    let at = url.rfind('@').unwrap() + 1;
    let slash = at + url[at..].find('/').unwrap();
    let through_bouncer = format!("{}{bouncer}{}", &url[..at], &url[slash..]);
    let (a, b) = (start(&url), start(&through_bouncer));
    let c = client();
    let acked: Arc<Mutex<BTreeSet<u64>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = [(a.base.clone(), 1u64), (b.base.clone(), 2), (a.base.clone(), 3), (b.base.clone(), 4)]
        .into_iter()
        .map(|(base, lane)| {
            let (acked, done) = (acked.clone(), done.clone());
            std::thread::spawn(move || {
                let c = client();
                let mut n = 0u64;
                while !done.load(Ordering::SeqCst) {
                    let ids: Vec<u64> = (0..5).map(|k| lane * 1_000_000 + n * 5 + k).collect();
                    n += 1;
                    let body = Value::Array(ids.iter().map(|i| msg(*i)).collect()).to_string();
                    match c.post(format!("{base}/v1/events")).body(body).send() {
                        Ok(r) if r.status() == 200 => {
                            // A batch is answered with a report: the inputs it rejected were not stored.
                            let report: Value = serde_json::from_slice(&r.bytes().unwrap()).unwrap();
                            let rejected: BTreeSet<u64> = report["rejected"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|r| r["index"].as_u64().unwrap())
                                .collect();
                            let kept = ids.iter().enumerate().filter(|(i, _)| !rejected.contains(&(*i as u64)));
                            acked.lock().unwrap().extend(kept.map(|(_, id)| *id));
                        }
                        _ => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
            })
        })
        .collect();
    let tools = {
        let (base, done) = (a.base.clone(), done.clone());
        std::thread::spawn(move || {
            let c = client();
            while !done.load(Ordering::SeqCst) {
                let body = json!({"chat_id": "-1", "now": 1_770_999_999}).to_string();
                let _ = c.post(format!("{base}/v1/tools/get_chat_history_context")).body(body).send();
            }
        })
    };
    let admin = std::env::var("CHATCTX_TEST_POSTGRES").unwrap();
    let db = url.rsplit('/').next().unwrap().to_owned();
    std::thread::sleep(Duration::from_millis(700));
    // 1. Every backend of the database is killed.
    let kill = format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db}'");
    let status = Command::new("psql").args([admin.as_str(), "-qAtc", &kill]).stdout(Stdio::null()).status().unwrap();
    assert!(status.success());
    std::thread::sleep(Duration::from_millis(700));
    // 2. PostgreSQL stops: both instances say they are not ready; it starts again: both are ready again.
    run(&stop);
    for s in [&a, &b] {
        assert!(ready_becomes(&c, &s.base, 503, Duration::from_secs(10)), "not ready while the database is gone");
    }
    std::thread::sleep(Duration::from_millis(500));
    run(&start_db);
    for s in [&a, &b] {
        assert!(ready_becomes(&c, &s.base, 200, Duration::from_secs(30)), "ready again without a restart");
    }
    std::thread::sleep(Duration::from_millis(700));
    // 3. PgBouncer restarts.
    run(&restart_bouncer);
    assert!(ready_becomes(&c, &b.base, 200, Duration::from_secs(30)), "ready again through the new PgBouncer");
    std::thread::sleep(Duration::from_millis(700));
    done.store(true, Ordering::SeqCst);
    writers.into_iter().for_each(|w| w.join().unwrap());
    tools.join().unwrap();
    // Everything acknowledged is stored, on both, and both answer alike.
    let acked = acked.lock().unwrap();
    assert!(acked.len() >= 100, "the test sent real traffic ({} acknowledged)", acked.len());
    let (on_a, on_b) = (stored(&c, &a.base), stored(&c, &b.base));
    assert_eq!(on_a, on_b, "both instances answer alike");
    let ids: BTreeSet<u64> = on_a.iter().map(|(id, _)| id.parse().unwrap()).collect();
    let lost: Vec<_> = acked.difference(&ids).take(5).collect();
    assert!(lost.is_empty(), "acknowledged but not stored: {lost:?}");
    assert_eq!(ids.len(), on_a.len(), "each message stored once");
}
