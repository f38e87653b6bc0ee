//! A clean stop (`chatctx serve`, `chatctx mcp`): the chats whose logs grew since their last snapshot are
//! snapshotted, so that the next start reads one line per chat instead of replaying their tails
//! (docs/operations.md, "Stopping"). A server does most of it while it still serves ([`Stopping`]), so that the
//! pause between it and the next start is short.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::service::Service;

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
pub async fn snapshot_before_stop(
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

/// A server's stop in two passes within one budget (`store.stop_snapshot_timeout`): on the stop signal, the grown
/// chats are snapshotted while the server still answers ([`Stopping::signal`], the future the server stops on);
/// then, once it has stopped, the few that grew meanwhile ([`Stopping::finish`]).
pub struct Stopping {
    svc: Arc<Service>,
    budget: Duration,
    /// When the stop signal came.
    began: Arc<std::sync::OnceLock<Instant>>,
    interrupted: Arc<AtomicBool>,
}

impl Stopping {
    /// For `svc`, with `budget` for both passes (none on a shared store, which the stop leaves as it is).
    pub fn new(svc: Arc<Service>, budget: Duration) -> Self {
        let budget = if svc.snapshots_at_stop() { budget } else { Duration::ZERO };
        Self { svc, budget, began: Arc::default(), interrupted: Arc::default() }
    }

    /// Resolves once `signal()` has resolved and the first pass is over (or cut short by a second `signal()`).
    pub fn signal<F: Future<Output = ()> + Send + 'static>(
        &self,
        signal: impl Fn() -> F + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let (svc, budget, began, interrupted) =
            (self.svc.clone(), self.budget, self.began.clone(), self.interrupted.clone());
        async move {
            signal().await;
            let _ = began.set(Instant::now());
            if budget.is_zero() {
                return;
            }
            tracing::info!(
                "stopping: snapshotting the chats whose logs grew, while still serving, so the next start is quick \
                 (at most {budget:.0?}; a second signal skips them)"
            );
            if snapshot_before_stop(svc, budget, "while serving", signal()).await == Stop::Interrupted {
                interrupted.store(true, Ordering::SeqCst);
            }
        }
    }

    /// After the server stopped: the chats that grew during the first pass, within what is left of the budget.
    pub async fn finish(self, again: impl Future<Output = ()>) -> Stop {
        if self.interrupted.load(Ordering::SeqCst) {
            return Stop::Interrupted;
        }
        let spent = self.began.get().map_or(Duration::ZERO, Instant::elapsed);
        snapshot_before_stop(self.svc, self.budget.saturating_sub(spent), "after the last request", again).await
    }
}
