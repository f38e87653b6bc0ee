//! Revoked scopes, as the server follows them: what other instances revoked is read from the store each second
//! (only what is new, and everything again every 30 s) and noted by the credentials.

use std::sync::Arc;

use crate::auth::Auth;
use crate::service::Service;

/// Follows the revocations other instances write, every second, for as long as the server runs.
pub async fn follow(svc: Arc<Service>, auth: Arc<Auth>) {
    // Only what is new each second; everything again every 30 s (on a store several instances write, a
    // revocation may be numbered below one already read and committed after it).
    let mut after = 0;
    for round in 1u64.. {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let from = if round % 30 == 0 { 0 } else { after };
        match load(&svc, &auth, from).await {
            Ok(newest) => after = newest.max(after),
            Err(e) => tracing::warn!("{e}"),
        }
    }
}

/// Notes the scopes the store says were revoked since `after` (on a blocking thread: a PostgreSQL store waits on
/// its own runtime); the number to ask with next time.
pub async fn load(svc: &Arc<Service>, auth: &Auth, after: u64) -> Result<u64, String> {
    let read = svc.clone();
    let (ids, newest) = match tokio::task::spawn_blocking(move || read.revoked_since(crate::clock::now(), after)).await
    {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => return Err(format!("reading revoked scopes failed: {}", e.message)),
        Err(e) => return Err(format!("reading revoked scopes failed: {e}")),
    };
    auth.note_revoked_all(ids.iter().map(|(id, until)| (id.as_str(), *until)));
    Ok(newest)
}
