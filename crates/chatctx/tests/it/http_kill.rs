//! The HTTP server killed (SIGKILL) while it writes: nothing it acknowledged is lost, events, state updates and
//! a batch larger than one async thread takes alike.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{JsonBody, all_pages, client, db, msg, start, stored_ids};

#[test]
fn nothing_acknowledged_is_lost_when_the_server_is_killed() {
    let (_dir, store) = db("kill");
    let c = client();
    let acked: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut next_id = 1u64;
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for cycle in 0..20 {
        let s = start(&store);
        let present = stored_ids(&c, &s.base);
        let missing: Vec<String> = acked.lock().unwrap().difference(&present).cloned().collect();
        assert!(missing.is_empty(), "cycle {cycle}: acknowledged but lost: {missing:?}");
        // Send batches until killed; remember what was acknowledged.
        let (base, acked2, first) = (s.base.clone(), acked.clone(), next_id);
        let sender = std::thread::spawn(move || {
            let c = client();
            let mut id = first;
            loop {
                let batch: Vec<Value> = (id..id + 10).map(msg).collect();
                match c.post(format!("{base}/v1/events")).body(Value::Array(batch).to_string()).send() {
                    Ok(r) if r.status() == 200 => {
                        let mut a = acked2.lock().unwrap();
                        a.extend((id..id + 10).map(|i| i.to_string()));
                    }
                    _ => return id,
                }
                id += 10;
            }
        });
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(20 + rng % 150));
        drop(s); // SIGKILL, mid-batch at some point
        next_id = sender.join().unwrap() + 10;
    }
    let s = start(&store);
    let present = stored_ids(&c, &s.base);
    let acked = acked.lock().unwrap();
    assert!(acked.len() >= 100, "the test sent real traffic ({} acknowledged)", acked.len());
    assert!(acked.is_subset(&present), "{} acknowledged events lost", acked.difference(&present).count());
}

#[test]
fn acknowledged_state_updates_survive_sigkill() {
    let (_dir, store) = db("kill-state");
    let c = client();
    let mut acked = 0u64;
    for cycle in 0..3u64 {
        let s = start(&store);
        let state = c
            .post(format!("{}/v1/tools/get_scenario", s.base))
            .body(json!({"chat_id": "-1"}).to_string())
            .send()
            .unwrap();
        assert_eq!(state.json_value()["revision"], acked, "cycle {cycle}");
        for i in 0..20u64 {
            let r = c
                .post(format!("{}/v1/tools/update_scenario", s.base))
                .body(json!({"chat_id": "-1", "patch": {"n": cycle * 100 + i}}).to_string())
                .send()
                .unwrap();
            assert_eq!(r.status(), 200);
            acked += 1;
        }
        drop(s); // SIGKILL right after the last answer
    }
}

/// A batch past the 256 inputs the server applies on its async threads is staged on a helper thread while a
/// blocking thread applies it: acknowledged whole, each input at its own position, and on disk when answered.
#[test]
fn a_large_batch_is_acknowledged_whole_and_survives_a_kill() {
    let (_dir, store) = db("large-batch");
    let c = client();
    let s = start(&store);
    let batch: Vec<Value> = (1..=700u64)
        .map(|i| {
            if i % 50 == 0 {
                return json!({"type": "bogus"});
            }
            let mut m = msg(i);
            m["chat_id"] = json!(format!("-{}", i % 10 + 1));
            m
        })
        .collect();
    let r = c.post(format!("{}/v1/events", s.base)).body(Value::Array(batch).to_string()).send().unwrap();
    assert_eq!(r.status(), 200);
    let report = r.json_value();
    assert_eq!(report["accepted"], 686);
    let rejected: Vec<u64> =
        report["rejected"].as_array().unwrap().iter().map(|x| x["index"].as_u64().unwrap()).collect();
    assert_eq!(rejected, (1..=14).map(|k| k * 50 - 1).collect::<Vec<_>>());
    let decided: Vec<u64> =
        report["decisions"].as_array().unwrap().iter().map(|d| d["index"].as_u64().unwrap()).collect();
    assert_eq!(decided, (0..700).filter(|i| (i + 1) % 50 != 0).collect::<Vec<_>>());
    let held = |base: &str| -> Vec<usize> {
        (1..=10).map(|chat| all_pages(&c, &format!("{base}/v1/chats/-{chat}/history")).len()).collect()
    };
    let before = held(&s.base);
    assert_eq!(before.iter().sum::<usize>(), 686);
    drop(s); // SIGKILL
    let s = start(&store);
    assert_eq!(held(&s.base), before);
}
