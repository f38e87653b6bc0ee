//! `resolve_reference_target` and `list_active_context_objects` latency with 10,000 chats in memory, the
//! busiest a forum with 2,000 messages and 500 objects; total memory; and resolve side by side with a bare
//! linear pass that scores the same candidates from a flat array.
//! Run: `cargo bench -p chatctx-core --bench tools`
//! With `CHATCTX_PROFILE_RESOLVE=1` it only builds the chats and loops over resolve, for `perf record -D`
//! (400,000 calls, or `CHATCTX_PROFILE_CALLS`: fewer for callgrind, which runs ~50x slower).
//! With `EXPLAIN=1` every resolve and list request also asks for its decision record (`"explain": true`), as every
//! request does under the server's default `[decisions] keep = 32`.

// `json!` expands to an internal `unwrap` on serializing plain values, which cannot fail.
#![allow(clippy::disallowed_methods)]

#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

use std::hint::black_box;
use std::time::Instant;

use chatctx_core::kinds::ObjectKind;
use chatctx_core::settings::ResolverSettings;
use chatctx_core::tools::Request;
use chatctx_core::tools::list::ListActiveContextObjects;
use chatctx_core::tools::resolve::{FlatCandidate, ResolveReferenceTarget, hint_kinds};
use chatctx_core::{Engine, Event, Settings, Timestamp};
use serde_json::{Value, json};

const T0: i64 = 1_770_000_000;
const BUSY: &str = "-1009999999";

fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<usize>().ok()).unwrap_or(0) * 4096
}

fn apply(e: &mut Engine, v: Value) {
    if let Ok(ev) = Event::decode(&v) {
        let _ = e.apply(ev);
    }
}

fn message(chat: &str, m: u32, topic: Option<u32>, t: i64) -> Value {
    let user = m % 20;
    let mut v = json!({"type": "message", "chat_id": chat, "message_id": m.to_string(), "kind": if m.is_multiple_of(10) { "outbound_agent" } else { "inbound_user" },
        "sent_at": t, "sender": {"user_id": (1000 + user).to_string(), "username": format!("user{user}"), "first_name": format!("User {user}")},
        "text": format!("message {m} about the deploy and the plan"), "triggered_agent": m.is_multiple_of(3)});
    if let Some(tp) = topic {
        v["topic_id"] = json!(tp.to_string());
    }
    if m.is_multiple_of(3) && m > 2 {
        v["reply_to_message_id"] = json!((m - 2).to_string());
    }
    v
}

fn build() -> (Engine, Timestamp) {
    let mut settings = Settings::default();
    settings.conversation.cache_max_per_conversation = 2000;
    let mut e = Engine::new(settings);
    // 9,999 ordinary group chats: 30 messages each, a link every fifth message, some activated.
    for c in 0..9_999u32 {
        let chat = format!("-100{c}");
        for m in 1..=30u32 {
            let mut v = message(&chat, m, None, T0 + i64::from(m) * 60);
            if m % 5 == 0 {
                v["text"] = json!("see https://example.org/page");
                v["entities"] = json!([{"type": "url", "offset": 4, "length": 24}]);
            }
            apply(&mut e, v);
            if m % 10 == 0 {
                apply(
                    &mut e,
                    json!({"type": "activation", "chat_id": chat, "object_id": format!("{m}:link:0"), "event": "fetched", "at": T0 + i64::from(m) * 60}),
                );
            }
        }
    }
    // The busiest: a forum with 4 topics and General, 2,000 messages, an object on every fourth (500).
    let kinds = ["media.image", "media.pdf", "media.voice", "poll"];
    let mut now = T0;
    for m in 1..=2000u32 {
        now = T0 + i64::from(m) * 30;
        let topic = (m % 5 != 0).then_some(m % 5);
        let mut v = message(BUSY, m, topic, now);
        if m % 4 == 0 {
            v["attachments"] = json!([{"kind": kinds[(m / 4 % 4) as usize], "label": format!("file {m}")}]);
        }
        apply(&mut e, v);
        if m % 4 == 0 && m % 20 == 0 {
            let k = kinds[(m / 4 % 4) as usize];
            apply(
                &mut e,
                json!({"type": "activation", "chat_id": BUSY, "object_id": format!("{m}:{k}"), "event": "described", "at": now}),
            );
        }
    }
    (e, Timestamp::from_unix(now + 60).unwrap_or_default())
}

fn requests() -> Vec<ResolveReferenceTarget> {
    let hints = [
        json!(null),
        json!({"target_kind_hint": "image"}),
        json!({"target_kind_hint": "poll", "ordinal_hint": "first"}),
        json!({"target_kind_hint": "file", "positional_hint": "latest"}),
        json!({"ownership_hint": "mine", "recency_hint": "recent"}),
    ];
    let mut out = Vec::new();
    for m in 1901..=2000u32 {
        let mut args = json!({"chat_id": BUSY, "explain": std::env::var_os("EXPLAIN").is_some(), "current_message_id": m.to_string(), "sender_user_id": (1000 + m % 20).to_string()});
        let h = &hints[(m % 5) as usize];
        if !h.is_null() {
            args["normalized_reference_hints"] = h.clone();
        }
        if let Ok(r) = ResolveReferenceTarget::decode(&args) {
            out.push(r);
        }
    }
    out
}

/// A bare linear pass: scores flat candidates with the same weights and keeps the best three.
fn linear(flat: &[FlatCandidate], w: &ResolverSettings, kinds: &[ObjectKind]) -> [usize; 3] {
    let hl = w.recency_half_life.secs().max(1) as f64;
    let mut top = [(f64::MIN, usize::MAX); 3];
    for (i, c) in flat.iter().enumerate() {
        let mut s = if c.is_message { 0.0 } else { w.typed_object };
        s += match c.chain_depth {
            Some(0) => w.exact_reply_target,
            Some(_) => w.in_reply_chain,
            None => 0.0,
        };
        if c.same_topic {
            s += w.same_topic;
        }
        if kinds.contains(&c.kind) {
            s += w.kind_match;
        }
        if c.active {
            s += w.currently_active;
        }
        s += w.recency * hl / (hl + c.age_secs as f64);
        if c.touched {
            s += w.touched_in_interaction;
        }
        if c.stale {
            s += w.stale_penalty;
        }
        if c.fallback {
            s += w.weak_scope_fallback;
        }
        if s > top[2].0 {
            top[2] = (s, i);
            top.sort_by(|a, b| b.0.total_cmp(&a.0));
        }
    }
    [top[0].1, top[1].1, top[2].1]
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let rss0 = rss();
    let t = Instant::now();
    let (mut engine, now) = build();
    let built = t.elapsed();
    let rss1 = rss();
    println!(
        "{} chats, {} objects, built in {built:.2?}; resident memory {:.1} MiB ({} cores)",
        engine.chat_count(),
        engine.object_count(),
        (rss1 - rss0) as f64 / 1048576.0,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let reqs = requests();
    if std::env::var_os("CHATCTX_PROFILE_RESOLVE").is_some() {
        let calls: usize = std::env::var("CHATCTX_PROFILE_CALLS").ok().and_then(|c| c.parse().ok()).unwrap_or(400_000);
        let t = Instant::now();
        for i in 0..calls {
            black_box(engine.resolve_reference_target(&reqs[i % reqs.len()], now)).ok();
        }
        eprintln!("{:.2} µs per resolve", t.elapsed().as_secs_f64() * 1e6 / calls as f64);
        std::process::exit(0); // no teardown in the profile
    }
    let weights = engine.settings().resolver.clone();
    const N: usize = 50_000;

    // Resolve, against the busiest chat, cycling through 100 current messages and five hint shapes.
    let mut resolve_us = Vec::with_capacity(N);
    let mut pool_sizes = 0usize;
    for i in 0..N {
        let r = &reqs[i % reqs.len()];
        let t = Instant::now();
        let out = engine.resolve_reference_target(r, now);
        resolve_us.push(t.elapsed().as_secs_f64() * 1e6);
        if let Ok(o) = black_box(out) {
            pool_sizes += o.diagnostics.candidate_count;
        }
    }
    // The same requests' candidates, flat, scored by a bare linear pass.
    let flats: Vec<(Vec<FlatCandidate>, Vec<ObjectKind>)> =
        reqs.iter().map(|r| (engine.resolve_candidates(r, now), r.hints.target_kinds.clone())).collect();
    let mut linear_us = Vec::with_capacity(N);
    for i in 0..N {
        let (flat, kinds) = &flats[i % flats.len()];
        let t = Instant::now();
        black_box(linear(black_box(flat), &weights, kinds));
        linear_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    // Gathering alone (the pool, before scoring), for the breakdown.
    let mut gather_us = Vec::with_capacity(N);
    for i in 0..N {
        let r = &reqs[i % reqs.len()];
        let t = Instant::now();
        black_box(engine.resolve_candidates(r, now));
        gather_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    // List, same chat and messages.
    let lists: Vec<ListActiveContextObjects> = (1901..=2000u32)
        .filter_map(|m| {
            ListActiveContextObjects::decode(
                &json!({"chat_id": BUSY, "current_message_id": m.to_string(), "explain": std::env::var_os("EXPLAIN").is_some()}),
            )
            .ok()
        })
        .collect();
    let mut list_us = Vec::with_capacity(N);
    for i in 0..N {
        let t = Instant::now();
        black_box(engine.list_active_context_objects(&lists[i % lists.len()], now)).ok();
        list_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let _ = hint_kinds("image");
    let (r50, r99) = (pct(resolve_us.clone(), 0.5), pct(resolve_us, 0.99));
    let (l50, l99) = (pct(linear_us.clone(), 0.5), pct(linear_us, 0.99));
    let (s50, s99) = (pct(list_us.clone(), 0.5), pct(list_us, 0.99));
    println!("candidates per resolve (mean): {:.1}", pool_sizes as f64 / N as f64);
    println!("resolve_reference_target      p50 {r50:6.2} µs   p99 {r99:6.2} µs   (target p99 <= 20)");
    println!("bare linear pass, same pool   p50 {l50:6.2} µs   p99 {l99:6.2} µs");
    println!("resolve / linear              p50 {:5.1}x       p99 {:5.1}x    (target <= 3x)", r50 / l50, r99 / l99);
    println!("  of which gathering the pool p50 {:6.2} µs", pct(gather_us, 0.5));
    println!("list_active_context_objects   p50 {s50:6.2} µs   p99 {s99:6.2} µs   (target p99 <= 10)");
}
