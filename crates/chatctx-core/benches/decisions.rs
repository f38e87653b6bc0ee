//! What decision records cost (docs/protocol.md §6.7): `get_chat_history_context` (lexical selector,
//! talkative, 25 looked at) and `resolve_reference_target` on a forum of 2,000 messages and 500 objects, with
//! records off and on. One engine answers both (records off, `[decisions] keep = 0`; the same requests with
//! `"explain": true` build the record, which is what `keep > 0` does for every request), so that the two
//! differ only by the record. They are timed in alternating rounds (ABAB…) so that drift of the machine
//! falls on both alike.
//! Run: `cargo bench -p chatctx-core --bench decisions`

// `json!` expands to an internal `unwrap` on serializing plain values, which cannot fail.
#![allow(clippy::disallowed_methods)]

#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

use chatctx_core::Settings;
use std::hint::black_box;

#[path = "support/forum.rs"]
mod forum;
#[path = "support/records.rs"]
mod records;

use forum::{ROUNDS, pct, round};

fn main() {
    let (mut e, now) = forum::forum(Settings::default());
    let (h_plain, h_explained, r_plain, r_explained) =
        (records::history(false), records::history(true), records::resolve(false), records::resolve(true));
    // The records are really built (and what they hold).
    let h = e.get_chat_history_context(&h_explained[0]).ok().and_then(|h| h.explain).map_or(0, |d| d.items.len());
    let r =
        e.resolve_reference_target(&r_explained[0], now).ok().and_then(|r| r.explain).map_or(0, |d| d.candidates.len());
    println!(
        "records on: {h} items judged per history answer, {r} candidates per resolution ({} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let (mut h_off, mut h_on, mut r_off, mut r_on) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        h_off.push(round(|i| drop(black_box(e.get_chat_history_context(&h_plain[i % h_plain.len()])))));
        h_on.push(round(|i| drop(black_box(e.get_chat_history_context(&h_explained[i % h_explained.len()])))));
        r_off.push(round(|i| drop(black_box(e.resolve_reference_target(&r_plain[i % r_plain.len()], now)))));
        r_on.push(round(|i| drop(black_box(e.resolve_reference_target(&r_explained[i % r_explained.len()], now)))));
    }
    for (name, a, b) in [("get_chat_history_context", h_off, h_on), ("resolve_reference_target", r_off, r_on)] {
        let (a50, b50) = (pct(a.clone(), 0.5), pct(b.clone(), 0.5));
        println!(
            "{name:26} records off {a50:7.2} µs   on {b50:7.2} µs   overhead {:+5.1} %   (median of {ROUNDS} rounds; issue 32: <= 5 %)",
            (b50 / a50 - 1.0) * 100.0
        );
    }
}
