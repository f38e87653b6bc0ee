//! Two `chatctx serve` processes on one PostgreSQL database, behind no load balancer but the test itself:
//! the same answers as one server, no lost scenario update, and nothing acknowledged lost when one is killed.
//! They run when `CHATCTX_TEST_POSTGRES` names a server (`.ci/run` starts one; in CI they never skip).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{JsonBody, Server, client, start_with};

fn start(url: &str) -> Server {
    start_with(url, &[("CHATCTX_STORE__POOL_SIZE", "4")])
}

fn msg(chat: &str, id: u64, image: bool) -> Value {
    let mut v = json!({"type": "message", "chat_id": chat, "message_id": id.to_string(), "kind": "inbound_user",
                       "sent_at": 1_770_000_000 + id, "sender": {"user_id": (id % 3).to_string(), "username": "ann"},
                       "text": format!("m{id}"), "triggered_agent": true});
    if image {
        v["attachments"] = json!([{"kind": "media.image", "label": format!("p{id}.png")}]);
    }
    v
}

/// A request: method, path, body.
type Request = (&'static str, String, Option<Value>);

fn script() -> Vec<Request> {
    let tool = |t: &str, args: Value| ("POST", format!("/v1/tools/{t}"), Some(args));
    let events = |v: Vec<Value>| ("POST", "/v1/events".to_owned(), Some(Value::Array(v)));
    let resolve = |current: u64| {
        json!({"chat_id": "-1", "current_message_id": current.to_string(), "sender_user_id": "1", "now": 1_770_000_900,
               "normalized_reference_hints": {"target_kind_hint": "image", "positional_hint": "latest"}})
    };
    vec![
        events(vec![msg("-1", 1, true), msg("-2", 1, false)]),
        tool("resolve_reference_target", resolve(2)),
        events(vec![msg("-1", 2, false), msg("-1", 3, true)]),
        tool("resolve_reference_target", resolve(4)),
        tool("list_active_context_objects", json!({"chat_id": "-1", "now": 1_770_000_900})),
        tool("update_scenario", json!({"chat_id": "-1", "patch": {"plan": "trip"}, "now": 1_770_000_900})),
        tool(
            "update_scenario",
            json!({"chat_id": "-1", "patch": {"who": 2}, "expected_revision": 0, "now": 1_770_000_900}),
        ),
        ("GET", "/v1/chats/-1/scenario".to_owned(), None),
        ("GET", "/v1/chats/-1/history".to_owned(), None),
        ("GET", "/v1/chats/-2/objects".to_owned(), None),
        ("DELETE", "/v1/chats/-2".to_owned(), None),
        ("GET", "/v1/chats/-2/history".to_owned(), None),
        tool(
            "get_chat_history_context",
            json!({"chat_id": "-1", "now": 1_770_000_900,
             "current_message": {"message_id": "9", "text": "so?", "sender": {"user_id": "1"}}}),
        ),
    ]
}

fn send(c: &reqwest::blocking::Client, base: &str, (method, path, body): &Request) -> String {
    let url = format!("{base}{path}");
    let req = match *method {
        "GET" => c.get(url),
        "DELETE" => c.delete(url),
        _ => c.post(url).body(body.as_ref().map(Value::to_string).unwrap_or_default()),
    };
    let r = req.send().unwrap();
    format!("{} {}", r.status().as_u16(), r.text().unwrap())
}

#[test]
fn two_servers_on_one_database_answer_as_one() {
    let (Some(shared), Some(alone)) = (
        chatctx_store::testing::test_postgres_url("chatctx_two_servers"),
        chatctx_store::testing::test_postgres_url("chatctx_one_server"),
    ) else {
        return;
    };
    let c = client();
    let one = start(&alone);
    let expected: Vec<String> = script().iter().map(|r| send(&c, &one.base, r)).collect();
    let (a, b) = (start(&shared), start(&shared));
    for (i, (r, want)) in script().iter().zip(&expected).enumerate() {
        let on = if i % 3 == 1 {
            &a
        } else if i % 2 == 0 {
            &b
        } else {
            &a
        };
        assert_eq!(&send(&c, &on.base, r), want, "step {i}: {} {}", r.0, r.1);
    }
}

#[test]
fn concurrent_scenario_updates_through_two_servers_lose_nothing() {
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_two_servers_updates") else { return };
    let (a, b) = (start(&url), start(&url));
    let c = client();
    assert!(send(&c, &a.base, &("POST", "/v1/events".to_owned(), Some(msg("-7", 1, false)))).starts_with("200"));
    let bases = [a.base.clone(), b.base.clone()];
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let base = bases[w % 2].clone();
            std::thread::spawn(move || {
                let c = client();
                for i in 0..10 {
                    loop {
                        let state = c.get(format!("{base}/v1/chats/-7/scenario")).send().unwrap().text().unwrap();
                        let revision = serde_json::from_str::<Value>(&state).unwrap()["revision"].clone();
                        let body = json!({"chat_id": "-7", "patch": {format!("w{w}_{i}"): true}, "expected_revision": revision});
                        let r = c.post(format!("{base}/v1/tools/update_scenario")).body(body.to_string()).send().unwrap();
                        match r.status().as_u16() {
                            200 => break,
                            409 => continue,
                            s => panic!("{s}: {}", r.text().unwrap()),
                        }
                    }
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    for base in &bases {
        let state: Value =
            serde_json::from_str(&c.get(format!("{base}/v1/chats/-7/scenario")).send().unwrap().text().unwrap())
                .unwrap();
        assert_eq!(state["revision"], 40);
        assert_eq!(state["state"].as_object().unwrap().len(), 40);
    }
}

fn stored(c: &reqwest::blocking::Client, base: &str) -> HashSet<String> {
    super::http::all_pages(c, &format!("{base}/v1/chats/-1/history"))
        .iter()
        .filter_map(|i| i["message_id"].as_str().map(str::to_owned))
        .collect()
}

/// One instance is SIGKILLed mid-batch, again and again, while the other keeps serving the same chat: every
/// event either acknowledged, by either, is there on the survivor and on the restarted one.
#[test]
fn killing_one_instance_mid_batch_loses_nothing_acknowledged() {
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_kill_one") else { return };
    let survivor = start(&url);
    let c = client();
    let acked: Arc<Mutex<HashSet<String>>> = Arc::default();
    let sender = |base: String, first: u64, step: u64| {
        let acked = acked.clone();
        std::thread::spawn(move || {
            let c = client();
            let mut id = first;
            loop {
                let batch: Vec<Value> = (id..id + 20).step_by(step as usize).map(|i| msg("-1", i, false)).collect();
                let ids: Vec<String> = (id..id + 20).step_by(step as usize).map(|i| i.to_string()).collect();
                match c.post(format!("{base}/v1/events")).body(Value::Array(batch).to_string()).send() {
                    Ok(r) if r.status() == 200 => acked.lock().unwrap().extend(ids),
                    _ => return,
                }
                id += 20 * 1_000;
                if id > first + 20 * 1_000 * 400 {
                    return;
                }
            }
        })
    };
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    for cycle in 0..8u64 {
        let victim = start(&url);
        let a = sender(victim.base.clone(), cycle * 20 + 1, 1);
        let b = sender(survivor.base.clone(), 10_000_000 + cycle * 20 + 1, 2);
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(30 + rng % 120));
        drop(victim); // SIGKILL, mid-batch at some point
        a.join().unwrap();
        b.join().unwrap();
        let present = stored(&c, &survivor.base);
        let acked = acked.lock().unwrap();
        let lost: Vec<_> = acked.difference(&present).take(5).collect();
        assert!(lost.is_empty(), "cycle {cycle}: acknowledged but missing on the survivor: {lost:?}");
    }
    let restarted = start(&url);
    let acked = acked.lock().unwrap();
    assert!(acked.len() >= 100, "the test sent real traffic ({} acknowledged)", acked.len());
    assert!(acked.is_subset(&stored(&c, &restarted.base)), "a restarted instance sees everything acknowledged");
}

/// `/readyz` asks the database, so that a load balancer stops sending requests to an instance that lost it;
/// requests then fail with `internal`, never with a wrong answer.
#[test]
fn readiness_follows_the_database() {
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_readiness") else { return };
    let s = start(&url);
    let c = client();
    assert!(send(&c, &s.base, &("GET", "/readyz".to_owned(), None)).starts_with("200"));
    assert!(send(&c, &s.base, &("POST", "/v1/events".to_owned(), Some(msg("-1", 1, false)))).starts_with("200"));
    let admin = std::env::var("CHATCTX_TEST_POSTGRES").unwrap();
    let name = url.rsplit('/').next().unwrap();
    let dropped = std::process::Command::new("psql")
        .args([admin.as_str(), "-qc", &format!("DROP DATABASE {name} WITH (FORCE)")])
        .status()
        .unwrap();
    assert!(dropped.success());
    let ready = send(&c, &s.base, &("GET", "/readyz".to_owned(), None));
    assert!(ready.starts_with("503") && ready.contains("\"ready\":false"), "{ready}");
    let history = send(&c, &s.base, &("GET", "/v1/chats/-1/history".to_owned(), None));
    assert!(history.starts_with("500") && history.contains("\"code\":\"internal\""), "{history}");
}

/// `sslmode=require` connects with TLS and checks the server's certificate: the test cluster admits the role
/// `chatctx_tls` over TLS only, with a certificate from a private CA (`CHATCTX_TEST_POSTGRES_TLS` names its
/// file; `.ci/run` makes both). Trusting that CA (`SSL_CERT_FILE`), a server starts and works; without it,
/// it refuses to start, naming the certificate.
#[test]
fn tls_to_the_database_is_verified() {
    let Some(ca) = chatctx_store::testing::test_env("CHATCTX_TEST_POSTGRES_TLS", "the test cluster's CA file", "tls")
    else {
        return;
    };
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_tls") else { return };
    // postgres://postgres@127.0.0.1:PORT/DB → the TLS-only role, by the certificate's host name.
    let at = url.find('@').unwrap();
    let tls_url =
        format!("postgres://chatctx_tls@localhost{}?sslmode=require", &url[url[at..].find(':').unwrap() + at..]);
    let s = start_with(&tls_url, &[("SSL_CERT_FILE", &ca)]);
    let c = client();
    assert!(send(&c, &s.base, &("POST", "/v1/events".to_owned(), Some(msg("-1", 1, false)))).starts_with("200"));
    assert!(send(&c, &s.base, &("GET", "/readyz".to_owned(), None)).starts_with("200"));
    drop(s);
    for (label, store, cert_file) in [
        ("an untrusted certificate", tls_url.as_str(), "/dev/null"),
        ("no TLS for a TLS-only role", &tls_url.replace("?sslmode=require", ""), ca.as_str()),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_chatctx"))
            .args(["serve", "--listen", "127.0.0.1:0", "--store", store])
            .env("SSL_CERT_FILE", cert_file)
            .env("CHATCTX_LOG", "error")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{label}: the server must not start");
        assert!(err.contains("certificate") || err.contains("pg_hba"), "{label}: {err}");
    }
}

/// A scope issued by one instance works on the other (they share `server.scope_key`), and a scope revoked on
/// one stops working on the other within moments.
#[test]
fn scopes_work_and_are_revoked_across_instances() {
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_scopes_across") else { return };
    let env = [
        ("CHATCTX_STORE__POOL_SIZE", "4"),
        ("CHATCTX_SERVER__TOKENS", r#"["operator-token-0123456789"]"#),
        ("CHATCTX_SERVER__SCOPE_KEY", "a-shared-scope-key-0123456789abcdef"),
    ];
    let (a, b) = (start_with(&url, &env), start_with(&url, &env));
    let c = client();
    let op = "operator-token-0123456789";
    let r =
        c.post(format!("{}/v1/events", a.base)).bearer_auth(op).body(msg("-5", 1, true).to_string()).send().unwrap();
    assert_eq!(r.status(), 200);
    let issued =
        c.post(format!("{}/v1/scopes", a.base)).body(json!({"chat_id": "-5", "current_message_id": "1"}).to_string());
    let issued = crate::http::send_as(issued, Some(op)).json_value();
    let scope = issued["token"].as_str().unwrap().to_owned();
    let call = |base: &str| {
        c.post(format!("{base}/v1/tools/get_scenario")).bearer_auth(&scope).body("{}").send().unwrap().status().as_u16()
    };
    assert_eq!((call(&a.base), call(&b.base)), (200, 200), "the scope works on both instances");
    let r = c.delete(format!("{}/v1/scopes/{scope}", a.base)).bearer_auth(op).send().unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(call(&a.base), 401, "revoked where it was revoked");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while call(&b.base) != 401 {
        assert!(std::time::Instant::now() < deadline, "still accepted on the other instance after 5 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Reads on one instance while another writes: each read, however many run at once (their news checks share
/// queries), sees every message the other instance acknowledged before the read began.
#[test]
fn concurrent_reads_see_every_write_acknowledged_before_they_began() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let Some(url) = chatctx_store::testing::test_postgres_url("chatctx_fresh_reads") else { return };
    let (writer, reader) = (start(&url), start(&url));
    let c = client();
    assert!(send(&c, &writer.base, &("POST", "/v1/events".to_owned(), Some(msg("-4", 1, false)))).starts_with("200"));
    let acked = Arc::new(AtomicU64::new(1));
    let readers: Vec<_> = (0..6)
        .map(|_| {
            let (acked, base) = (acked.clone(), reader.base.clone());
            std::thread::spawn(move || {
                let c = client();
                let body = json!({"chat_id": "-4", "now": 1_770_000_900}).to_string();
                let mut reads = 0;
                while acked.load(Ordering::SeqCst) < 120 {
                    let before = acked.load(Ordering::SeqCst);
                    let r =
                        c.post(format!("{base}/v1/tools/get_chat_history_context")).body(body.clone()).send().unwrap();
                    let (status, text) = (r.status(), r.text().unwrap());
                    assert_eq!(status, 200, "a read begun after message {before} was acknowledged: {text}");
                    let answer: Value = serde_json::from_str(&text).unwrap();
                    let newest = answer["items"].as_array().and_then(|i| i.last()).map(|i| i["message_id"].clone());
                    let newest: u64 = newest.and_then(|m| m.as_str()?.parse().ok()).unwrap_or(0);
                    assert!(newest >= before, "a read begun after message {before} was acknowledged saw only {newest}");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for id in 2..=120 {
        let r = send(&c, &writer.base, &("POST", "/v1/events".to_owned(), Some(msg("-4", id, false))));
        assert!(r.starts_with("200"), "{r}");
        acked.store(id, Ordering::SeqCst);
    }
    let reads: u32 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads >= 60, "the readers ran alongside the writes ({reads} reads)");
}
