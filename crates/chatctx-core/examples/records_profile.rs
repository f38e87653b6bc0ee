//! A plain loop of tool calls for profilers and instruction counts (`valgrind --tool=callgrind`): the forum of
//! the `decisions` benchmark (2,000 messages, 500 objects), then `resolve_reference_target` 2,000 times or
//! `get_chat_history_context` 500 times, with decision records off or on (`"explain": true` builds the record
//! that `[decisions] keep > 0` keeps). `bench/instructions.sh` counts each; the difference is what a record costs.
//! Run: `cargo run --release -p chatctx-core --example records_profile -- resolve|history off|on`

#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

use chatctx_core::Settings;
use std::hint::black_box;

// The generators' `json!` unwraps internally when it serializes plain values, which cannot fail.
#[allow(clippy::disallowed_methods, dead_code)]
#[path = "../benches/support/forum.rs"]
mod forum;
#[allow(clippy::disallowed_methods)]
#[path = "../benches/support/records.rs"]
mod records;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (tool, explain) = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [tool @ ("resolve" | "history"), records @ ("off" | "on")] => (tool.to_owned(), records == "on"),
        _ => {
            eprintln!("usage: records_profile resolve|history off|on");
            std::process::exit(2);
        }
    };
    let (mut e, now) = forum::forum(Settings::default());
    if tool == "history" {
        history(&mut e, &records::history(explain));
    } else {
        resolve(&mut e, &records::resolve(explain), now);
    }
}

// The measured loops, each a function of its own so that a count can be limited to it whatever the compiler
// inlines (`--toggle-collect='records_profile::resolve'`; with `--profile dist` the engine's entry points are
// inlined here). They include dropping each answer, record and all.

#[inline(never)]
fn history(e: &mut chatctx_core::Engine, reqs: &[chatctx_core::tools::GetChatHistoryContext]) {
    for _ in 0..5 {
        for r in reqs {
            drop(black_box(e.get_chat_history_context(r)));
        }
    }
}

#[inline(never)]
fn resolve(
    e: &mut chatctx_core::Engine,
    reqs: &[chatctx_core::tools::resolve::ResolveReferenceTarget],
    now: chatctx_core::Timestamp,
) {
    for _ in 0..20 {
        for r in reqs {
            drop(black_box(e.resolve_reference_target(r, now)));
        }
    }
}
