//! A clean stop (`chatctx serve`, `chatctx mcp`): the chats whose logs grew since their last snapshot are
//! snapshotted, so that the next start reads one line per chat instead of replaying their tails
//! (docs/operations.md, "Stopping"). A server does most of it while it still serves ([`Stopping`]), so that the
//! pause between it and the next start is short.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::service::Service;

/// The stop signals (SIGTERM, and SIGINT: Ctrl-C) counted from the moment they are installed, so that none is lost:
/// one that comes before anything waits for it counts all the same. (Listened for only once the server was running,
/// a SIGTERM just after it started found no handler and ended the process at once, without its stop.)
#[derive(Clone)]
pub struct Signals(tokio::sync::watch::Receiver<u32>);

impl Signals {
    /// Installs the handlers; within a Tokio runtime, before the process takes requests.
    pub fn install() -> std::io::Result<Self> {
        let (count, signals) = tokio::sync::watch::channel(0u32);
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let (mut term, mut int) = (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?);
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        Some(()) = term.recv() => {}
                        Some(()) = int.recv() => {}
                        else => return,
                    }
                    count.send_modify(|n| *n += 1);
                }
            });
        }
        #[cfg(not(unix))]
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                count.send_modify(|n| *n += 1);
            }
        });
        Ok(Self(signals))
    }

    /// How many signals have come since [`Signals::install`].
    pub fn received(&self) -> u32 {
        *self.0.borrow()
    }

    /// Resolves once `n` signals have come since [`Signals::install`] (at once if they already have).
    pub fn count(&self, n: u32) -> impl Future<Output = ()> + Send + 'static {
        let mut signals = self.0.clone();
        async move {
            if signals.wait_for(|c| *c >= n).await.is_err() {
                // No more signals can come.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// How a stop's snapshots ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Done, or nothing to do: the process may end as usual.
    Done,
    /// A second signal came while snapshots were being written: the rest were skipped, and the process should end
    /// without waiting for anything more (each write is one transaction, so it is either whole at the next start
    /// or not there).
    Interrupted,
}

/// Snapshots, on a blocking thread, the chats whose logs grew since their last snapshot, for at most `budget`
/// (zero does nothing), saying in the log what it did (`what` names the pass). `again` (a second stop signal)
/// ends the wait at once, and the snapshots stop before their next write.
async fn snapshot_before_stop(
    svc: Arc<Service>,
    budget: Duration,
    what: &str,
    again: impl Future<Output = ()>,
) -> Stop {
    if budget.is_zero() {
        return Stop::Done;
    }
    let started = Instant::now();
    let cancel = Arc::new(AtomicBool::new(false));
    let cancelled = cancel.clone();
    let work = tokio::task::spawn_blocking(move || svc.snapshot_for_restart(budget, &cancelled));
    tokio::select! {
        done = work => {
            match done {
                Ok(Ok(s)) if s.snapshotted == 0 && s.left == 0 => tracing::debug!("{what}: no chat's log needed a snapshot"),
                Ok(Ok(s)) => {
                    let left = match s.left {
                        0 => String::new(),
                        n => format!("; {n} chats were left to replay their logs (store.stop_snapshot_timeout)"),
                    };
                    tracing::info!(
                        "{what}: snapshotted {} chats in {:.2?}: the next start replays {} fewer logged operations{left}",
                        s.snapshotted,
                        started.elapsed(),
                        s.operations
                    );
                }
                Ok(Err(e)) => tracing::warn!("{what}: snapshots failed ({}); the next start replays the logs", e.message),
                Err(e) => tracing::warn!("{what}: snapshots did not finish ({e}); the next start replays the logs"),
            }
            Stop::Done
        }
        () = again => {
            cancel.store(true, Ordering::Relaxed);
            tracing::warn!("a second signal: the rest of the snapshots are skipped (those chats replay their logs at the next start)");
            Stop::Interrupted
        }
    }
}

/// A stop's snapshots within one budget (`store.stop_snapshot_timeout`), none on a shared store: for a server, in
/// two passes: on the stop signal, the grown chats are snapshotted while it still answers ([`Stopping::signal`],
/// the future the server stops on); then, once it has stopped, the few that grew meanwhile ([`Stopping::finish`]).
/// `chatctx mcp`, which answers one client, takes only the second once the session is over.
pub struct Stopping {
    svc: Arc<Service>,
    budget: Duration,
    /// When the stop signal came.
    began: Arc<std::sync::OnceLock<Instant>>,
}

impl Stopping {
    /// For `svc`, with `budget` for both passes (none on a shared store, which the stop leaves as it is).
    pub fn new(svc: Arc<Service>, budget: Duration) -> Self {
        let budget = if svc.snapshots_at_stop() { budget } else { Duration::ZERO };
        Self { svc, budget, began: Arc::default() }
    }

    /// Resolves once the first of `signals` has come and the first pass is over (or cut short by a second).
    pub fn signal(&self, signals: &Signals) -> impl Future<Output = ()> + Send + 'static {
        let (svc, budget, began) = (self.svc.clone(), self.budget, self.began.clone());
        let (first, second) = (signals.count(1), signals.count(2));
        async move {
            first.await;
            let _ = began.set(Instant::now());
            if budget.is_zero() {
                return;
            }
            tracing::info!(
                "stopping: snapshotting the chats whose logs grew, while still serving, so the next start is quick \
                 (at most {budget:.0?}; a second signal skips them)"
            );
            snapshot_before_stop(svc, budget, "while serving", second).await;
        }
    }

    /// After the server stopped: the chats that grew during the first pass, within what is left of the budget; a
    /// second of `signals` skips them.
    pub async fn finish(self, signals: &Signals) -> Stop {
        // A second signal, during the first pass or the drain after it, skips the rest.
        if signals.received() >= 2 {
            return Stop::Interrupted;
        }
        let again = signals.count(2);
        let spent = self.began.get().map_or(Duration::ZERO, Instant::elapsed);
        snapshot_before_stop(self.svc, self.budget.saturating_sub(spent), "after the last request", again).await
    }
}
