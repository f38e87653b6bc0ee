//! Durable store figures, in process: ingest N synthetic messages through the service into SQLite in
//! batches of 1,000 (durable per batch; only `Service::ingest` is timed, not making its input), then time a
//! restart (a fresh `Service::open` replaying the log). Every 100,000 messages it prints the rate so far and since
//! the previous line (stderr), which shows how the cost grows with the store and the engine's state.
//! It also prints the batches' median, p90 and p99 times; with `STORE_BENCH_BATCHES=FILE` each batch's time is
//! written there too (`messages-so-far microseconds` a line), which shows where compaction waves fall
//! (docs/benchmarks-issue-32.md, "where `store_bench`'s time goes, batch by batch").
//! Before the restart it stops as `chatctx serve` does (`Service::snapshot_for_restart`, timed on its own); with
//! `STORE_BENCH_CRASH=1` it drops the service without that, as a crash would leave the store.
//! Run: `cargo run --release -p chatctx --example store_bench -- [N] [DB]`
//! `store_bench restart DB` times only the restart of a store written before, which a profiler or
//! `valgrind --tool=callgrind` can take alone (a start of a store of this schema writes nothing to it, so one file
//! serves every run).

#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

use std::time::Instant;

use chatctx::config::LlmSettings;
use chatctx::service::Service;
// `json!` in the generator unwraps internally when it serializes plain strings and numbers, which cannot fail.
#[allow(clippy::disallowed_methods, dead_code)]
#[path = "../../chatctx-core/benches/support/synth.rs"]
mod synth;
use chatctx_core::{Settings, Timestamp};
use synth::Synth;

fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("restart") {
        let path = std::env::args().nth(2).ok_or_else(|| anyhow::anyhow!("usage: store_bench restart DB"))?;
        return restart(&format!("sqlite://{path}"));
    }
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let path = std::env::args().nth(2).unwrap_or_else(|| "bench/out/store_bench.db".to_owned());
    let _ = std::fs::remove_file(&path);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
    let url = format!("sqlite://{path}");
    let (svc, _) = Service::open(
        Settings::default(),
        LlmSettings::default(),
        chatctx_store::open(&url, &Default::default()).map_err(anyhow::Error::msg)?,
    )?;
    let now = Timestamp::from_unix(1_780_000_000).unwrap_or_default();
    let mut synth = Synth::new(1000, 5);
    // Only the service's work is timed: each batch is generated with the clock stopped (generating the JSON took
    // about a seventh of the run when it was timed too, before 2026-11-27).
    let mut ingest = std::time::Duration::ZERO;
    let mut done = 0;
    let (mut mark, mut mark_done) = (std::time::Duration::ZERO, 0);
    let mut batches: Vec<(usize, std::time::Duration)> = Vec::new();
    while done < n {
        let batch: Vec<serde_json::Value> =
            synth.by_ref().filter(|v| v["type"] == "message").take(1000.min(n - done)).collect();
        let t = Instant::now();
        let report = svc.ingest(&batch, now).map_err(|e| anyhow::anyhow!("{e}"))?;
        let took = t.elapsed();
        ingest += took;
        let before = done;
        done += report.accepted;
        batches.push((done, took));
        if done / 100_000 != before / 100_000 {
            // Progress, and how the rate changes as the store and the engine's state grow.
            eprintln!(
                "  {done} messages: {:.0} messages/s so far, {:.0} since the last line",
                done as f64 / ingest.as_secs_f64(),
                (done - mark_done) as f64 / (ingest - mark).as_secs_f64()
            );
            (mark, mark_done) = (ingest, done);
        }
    }
    if std::env::var_os("STORE_BENCH_CRASH").is_none() {
        let t = Instant::now();
        let stop = svc
            .snapshot_for_restart(std::time::Duration::from_secs(60), &Default::default())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let snapshotted = t.elapsed();
        drop(svc);
        println!(
            "stop: {} chats snapshotted ({} operations the start will not replay) in {snapshotted:.2?}, the store closed {:.2?} later",
            stop.snapshotted,
            stop.operations,
            t.elapsed() - snapshotted
        );
    } else {
        let t = Instant::now();
        drop(svc);
        println!("stop without snapshots: the store closed in {:.2?}", t.elapsed());
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(format!("{path}-wal")).map(|m| m.len()).unwrap_or(0);
    println!(
        "{done} messages ingested durably in batches of 1,000: {:.0} messages/s ({:.1} MiB on disk)",
        done as f64 / ingest.as_secs_f64(),
        size as f64 / 1048576.0
    );
    report_batches(&batches)?;
    restart(&url)
}

/// Opens the store at `url` as a start does (integrity check and replay) and prints how long it took.
fn restart(url: &str) -> anyhow::Result<()> {
    let t = Instant::now();
    let (_svc, loaded) = Service::open(
        Settings::default(),
        LlmSettings::default(),
        chatctx_store::open(url, &Default::default()).map_err(anyhow::Error::msg)?,
    )?;
    println!("restart: {loaded} logged operations replayed in {:.2?} (issue 32: <= 1 s)", t.elapsed());
    Ok(())
}

/// The batches' median, p90 and p99 times, and each batch's time in `STORE_BENCH_BATCHES` when it names a file.
fn report_batches(batches: &[(usize, std::time::Duration)]) -> anyhow::Result<()> {
    let mut took: Vec<std::time::Duration> = batches.iter().map(|b| b.1).collect();
    took.sort_unstable();
    let at = |q: usize| took.get((took.len() * q / 100).min(took.len().saturating_sub(1))).copied().unwrap_or_default();
    println!("batches: median {:.1?}, p90 {:.1?}, p99 {:.1?} ({} batches)", at(50), at(90), at(99), took.len());
    if let Some(file) = std::env::var_os("STORE_BENCH_BATCHES") {
        let lines: String = batches.iter().map(|(done, t)| format!("{done} {}\n", t.as_micros())).collect();
        std::fs::write(&file, lines)?;
        println!("each batch's time: {}", std::path::Path::new(&file).display());
    }
    Ok(())
}
