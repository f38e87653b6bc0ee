//! `chatctx store check` and `chatctx store repair --drop-damaged`: what to do when a store will not start
//! (docs/operations.md, "Checking and repairing a store").
//!
//! `check` changes nothing: it runs SQLite's full integrity check and replays every logged operation, listing
//! each one that cannot be applied. `repair --drop-damaged` keeps every operation that can be read and
//! applied and drops the rest, reporting each: an SQLite store is copied into a new file (which also leaves
//! damaged pages behind), and the old file is kept beside it; a PostgreSQL store has the damaged rows deleted.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chatctx_core::Settings;
use chatctx_store::{Integrity, Op, Salvaged, SqliteStore, Store};

use crate::service::{Damaged, find_damaged};

/// What a check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Operations read.
    pub operations: usize,
    /// SQLite's integrity check (`None` for other stores).
    pub integrity: Option<Integrity>,
    /// Why reading stopped before the end, if it did.
    pub unreadable: Option<String>,
    /// Rows that could not be read (each with why), passed over; a repair drops them.
    pub unreadable_rows: Vec<String>,
    /// Operations that cannot be applied.
    pub damaged: Vec<Damaged>,
}

impl Report {
    /// Whether nothing is wrong.
    pub fn sound(&self) -> bool {
        matches!(self.integrity, None | Some(Integrity::Sound))
            && self.unreadable.is_none()
            && self.unreadable_rows.is_empty()
            && self.damaged.is_empty()
    }

    /// The report as lines for a person.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!("{} logged operations read", self.operations)];
        match &self.integrity {
            Some(Integrity::Sound) => out.push("integrity check: ok".to_owned()),
            Some(Integrity::Damaged(problems)) => {
                out.push(format!("integrity check: {} problems", problems.len()));
                out.extend(problems.iter().map(|p| format!("  {p}")));
            }
            Some(Integrity::Unfinished) => out.push("integrity check: did not finish".to_owned()),
            None => {}
        }
        if let Some(why) = &self.unreadable {
            out.push(format!("reading stopped early: {why}"));
        }
        out.push(format!("{} rows cannot be read", self.unreadable_rows.len()));
        out.extend(self.unreadable_rows.iter().map(|r| format!("  {r}")));
        out.push(format!("{} operations cannot be applied", self.damaged.len()));
        out.extend(
            self.damaged
                .iter()
                .map(|d| format!("  chat {:?} ({}) position {}: {}", d.chat_id, d.channel, d.position, d.why)),
        );
        out
    }
}

/// The path of an SQLite store URL, or `None` for other stores.
fn sqlite_path(url: &str) -> Option<&Path> {
    match chatctx_store::StoreUrl::parse(url) {
        chatctx_store::StoreUrl::Sqlite(path) => Some(path),
        _ => None,
    }
}

/// Reads a store for checking: every readable operation, the chats' newest positions, and the report so far.
fn read(url: &str, options: &chatctx_store::OpenOptions) -> Result<(Salvaged, Report)> {
    let mut report = Report::default();
    match sqlite_path(url) {
        Some(path) => {
            if !path.exists() {
                bail!("{} does not exist", path.display());
            }
            let store = SqliteStore::open_unchecked(path).with_context(|| format!("cannot open {}", path.display()))?;
            report.integrity = Some(store.integrity(None)?);
            let salvaged = store.salvage();
            report.unreadable = salvaged.stopped.as_ref().map(|e| e.to_string());
            report.unreadable_rows = salvaged.unreadable.clone();
            report.operations = salvaged.ops.len();
            Ok((salvaged, report))
        }
        None => {
            let store = open_shared(url, options)?;
            let mut ops = Vec::new();
            store.load(&mut |pos, op| ops.push((pos, op)))?;
            report.operations = ops.len();
            Ok((Salvaged { ops, heads: Vec::new(), unreadable: Vec::new(), stopped: None }, report))
        }
    }
}

fn open_shared(url: &str, options: &chatctx_store::OpenOptions) -> Result<std::sync::Arc<dyn Store>> {
    Ok(match chatctx_store::open(url, options).map_err(anyhow::Error::msg)? {
        chatctx_store::Opened::Local(s) => s as std::sync::Arc<dyn Store>,
        chatctx_store::Opened::Shared(s) => s as std::sync::Arc<dyn Store>,
    })
}

/// `chatctx store check`: changes nothing.
pub fn check(url: &str, options: &chatctx_store::OpenOptions, settings: &Settings) -> Result<Report> {
    let (salvaged, mut report) = read(url, options)?;
    report.damaged = find_damaged(settings, &salvaged.ops);
    Ok(report)
}

/// What a repair did.
#[derive(Debug)]
pub struct Repaired {
    /// What was found.
    pub report: Report,
    /// Operations kept.
    pub kept: usize,
    /// Where the damaged SQLite file was moved (`None` for other stores).
    pub kept_old_at: Option<PathBuf>,
}

/// `chatctx store repair --drop-damaged`. `stamp` names the old file kept beside the new one.
pub fn repair(url: &str, options: &chatctx_store::OpenOptions, settings: &Settings, stamp: i64) -> Result<Repaired> {
    let (Salvaged { ops, heads, .. }, mut report) = read(url, options)?;
    if let Some(why) = &report.unreadable {
        // What lies past the point reading stopped would be lost by writing what was read: change nothing.
        bail!("reading the store stopped early ({why}); nothing was written. Restore it from a backup");
    }
    report.damaged = find_damaged(settings, &ops);
    let dropped: std::collections::HashSet<(&str, &str, u64)> =
        report.damaged.iter().map(|d| (d.channel.as_str(), d.chat_id.as_str(), d.position)).collect();
    let is_dropped = |(pos, o): &&(u64, Op)| dropped.contains(&(o.channel.as_str(), o.chat_id.as_str(), *pos));
    let kept = ops.len() - dropped.len();
    let Some(path) = sqlite_path(url) else {
        let store = open_shared(url, options)?;
        for (pos, o) in ops.iter().filter(is_dropped) {
            store.remove_op(&o.channel, &o.chat_id, *pos)?;
        }
        return Ok(Repaired { report, kept, kept_old_at: None });
    };
    let keep: Vec<(u64, Op)> = ops.iter().filter(|x| !is_dropped(x)).cloned().collect();
    let fresh = beside(path, ".repairing");
    let _ = std::fs::remove_file(&fresh);
    SqliteStore::write_fresh(&fresh, &keep, &heads).with_context(|| format!("cannot write {}", fresh.display()))?;
    let old = beside(path, &format!(".damaged-{stamp}"));
    // The damaged file goes aside with its WAL and shared memory; the fresh one (closed, so checkpointed and
    // without them) takes its place.
    for suffix in ["", "-wal", "-shm"] {
        let (from, to) = (beside(path, suffix), beside(&old, suffix));
        if from.exists() {
            std::fs::rename(&from, &to).with_context(|| format!("cannot move {} aside", from.display()))?;
        }
    }
    std::fs::rename(&fresh, path).with_context(|| format!("cannot move {} into place", fresh.display()))?;
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(beside(&fresh, suffix));
    }
    Ok(Repaired { report, kept, kept_old_at: Some(old) })
}

/// `path` with `suffix` appended to its file name (`chatctx.db` → `chatctx.db-wal`).
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}
