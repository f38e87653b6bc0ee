//! A clean stop (`chatctx serve`, `chatctx mcp`): the chats whose logs grew since their last snapshot are
//! snapshotted, so that the next start reads one line per chat instead of replaying their tails
//! (docs/operations.md, "Stopping").

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::service::Service;

/// How [`snapshot_before_stop`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Done, or nothing to do: the process may end as usual.
    Done,
    /// A second signal came while snapshots were being written: the process should end at once (the snapshot being
    /// written is one transaction, so it is either whole at the next start or not there).
    Interrupted,
}

/// Snapshots, on a blocking thread, the chats whose logs grew since their last snapshot, for at most `budget`
/// (`store.stop_snapshot_timeout`; zero does nothing), saying in the log what it did. `again` (a second stop
/// signal) ends the wait at once.
pub async fn snapshot_before_stop(svc: Arc<Service>, budget: Duration, again: impl Future<Output = ()>) -> Stop {
    if budget.is_zero() {
        return Stop::Done;
    }
    let started = Instant::now();
    tracing::info!(
        "stopping: snapshotting the chats whose logs grew, so the next start is quick (at most {budget:.0?}; a \
         second signal stops at once)"
    );
    let work = tokio::task::spawn_blocking(move || svc.snapshot_for_restart(budget));
    tokio::select! {
        done = work => {
            match done {
                Ok(Ok(s)) if s.snapshotted == 0 && s.left == 0 => tracing::info!("no chat's log needed a snapshot"),
                Ok(Ok(s)) => {
                    let left = match s.left {
                        0 => String::new(),
                        n => format!("; {n} chats were left to replay their logs (store.stop_snapshot_timeout)"),
                    };
                    tracing::info!(
                        "snapshotted {} chats in {:.2?}: the next start replays {} fewer logged operations{left}",
                        s.snapshotted,
                        started.elapsed(),
                        s.operations
                    );
                }
                Ok(Err(e)) => tracing::warn!("snapshots before stopping failed ({}); the next start replays the logs", e.message),
                Err(e) => tracing::warn!("snapshots before stopping did not finish ({e}); the next start replays the logs"),
            }
            Stop::Done
        }
        () = again => {
            tracing::warn!("stopping at once: the chats not yet snapshotted replay their logs at the next start");
            Stop::Interrupted
        }
    }
}
