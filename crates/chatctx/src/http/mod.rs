//! The HTTP front end (docs/protocol.md §10), thin over [`Service`]. Each resource has its own file; what every
//! handler needs is an extractor, so none checks by hand:
//!
//! - [`routes`]: every route, declared once (the router and the OpenAPI document's check come from it).
//! - [`extract`]: the caller's access ([`extract::Caller`], [`extract::ChatRoute`]) and request bodies within
//!   their size, depth and media type ([`extract::JsonBody`], [`extract::EventsBody`]).
//! - [`error`]: [`ApiError`], the one mapping of an error to its status and `{"code", "message"}`.
//! - [`ingest`], [`tools`], [`scopes`], [`chats`], [`decisions`], [`console`], [`probes`], [`mcp`]: the
//!   resources.
//! - [`middleware`] and [`guard`]: what wraps every route (hosts, sizes, the error shape, the time limit,
//!   request ids, metrics and traces).
//! - [`openapi`]: the OpenAPI document.

pub mod chats;
pub mod console;
pub mod decisions;
pub mod error;
pub mod extract;
pub mod guard;
pub mod ingest;
pub mod mcp;
pub mod middleware;
pub mod openapi;
pub mod probes;
pub mod routes;
pub mod scopes;
pub mod tools;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;

pub use error::{ApiError, blocking, json_body, status_of};

use crate::auth::Auth;
use crate::service::Service;

/// Largest accepted request body.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// The service and the credentials.
#[derive(Clone)]
pub struct AppState {
    /// The engine behind its store.
    pub svc: Arc<Service>,
    /// Who may call.
    pub auth: Arc<Auth>,
    /// Cancelled on shutdown, to end the MCP sessions' open streams.
    pub stop: tokio_util::sync::CancellationToken,
    /// `server.request_timeout`.
    pub timeout: std::time::Duration,
    /// What `/metrics` reports.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// What one request may ask for.
    pub limits: Limits,
    /// The hosts the server answers for.
    pub hosts: Arc<guard::Hosts>,
    /// `server.public_metrics`.
    pub public_metrics: bool,
    /// OpenTelemetry spans (`[telemetry]`; off by default).
    pub telemetry: Arc<crate::telemetry::Telemetry>,
    /// `slack.signing_secret`: Slack's signed requests to `/v1/slack/events` need no bearer token.
    pub slack_signing_secret: Option<Arc<str>>,
}

/// What one request may ask for (`[server]`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `server.max_json_depth`.
    pub max_json_depth: usize,
    /// `server.max_batch_items`.
    pub max_batch_items: usize,
    /// `server.max_rejections`.
    pub max_rejections: usize,
}

impl Limits {
    /// The limits `[server]` sets.
    pub fn of(s: &crate::config::ServerSettings) -> Self {
        Self { max_json_depth: s.max_json_depth, max_batch_items: s.max_batch_items, max_rejections: s.max_rejections }
    }
}

impl AppState {
    /// A server state with the default timeout and fresh metrics.
    pub fn new(svc: Arc<Service>, auth: Arc<Auth>) -> Self {
        Self {
            svc,
            auth,
            stop: tokio_util::sync::CancellationToken::new(),
            timeout: std::time::Duration::from_secs(30),
            metrics: Arc::default(),
            limits: Limits::of(&crate::config::ServerSettings::default()),
            hosts: Arc::new(guard::Hosts::new(&[], "127.0.0.1:0")),
            public_metrics: false,
            telemetry: crate::telemetry::Telemetry::off(),
            slack_signing_secret: None,
        }
    }
}

/// The state every handler and middleware receives: shared, so that handing it to each layer of a request
/// costs one count taken and dropped (cloning [`AppState`] took one per field, and a lock for its
/// cancellation token, four times per request).
pub(crate) type Shared = Arc<AppState>;

/// The routes ([`routes`]) with `/mcp`, under the middleware every request passes.
pub fn router(app: AppState) -> Router {
    let app: Shared = Arc::new(app);
    routes::handled()
        .fallback(routes::fallback)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(from_fn_with_state(app.clone(), middleware::time_limit))
        .with_state(app.clone())
        .merge(mcp::router(&app))
        .layer(from_fn_with_state(app.clone(), middleware::guarded))
        .layer(from_fn_with_state(app, middleware::observe))
}

/// What a connection may hold (`[server]`).
#[derive(Debug, Clone, Copy)]
pub struct Connections {
    /// `server.max_connections`: open connections at most; past it, new ones wait in the kernel's backlog.
    pub max: usize,
    /// `server.header_read_timeout`: how long a client may take to send a request's headers.
    pub header_read_timeout: std::time::Duration,
}

impl Connections {
    /// The limits `[server]` sets.
    pub fn of(s: &crate::config::ServerSettings) -> Self {
        Self {
            max: s.max_connections,
            header_read_timeout: std::time::Duration::from_secs(s.header_read_timeout.secs().unsigned_abs()),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then finishes the requests under way. At most
/// `limits.max` connections are open at once; one that does not send its headers in time is closed. When every
/// slot is taken, the oldest connection that has not yet sent a whole request head is closed to make room, so
/// clients that trickle headers (a slow-header flood) cannot keep a normal client waiting.
pub async fn run(
    listener: tokio::net::TcpListener,
    app: AppState,
    limits: Connections,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let stop = app.stop.clone();
    let service = hyper_util::service::TowerToHyperService::new(router(app));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max));
    let waiting = Arc::new(std::sync::Mutex::new(HeadWaiters::default()));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                // Full: make room by closing the oldest connection still waiting for its request head.
                if let Ok(mut w) = waiting.lock() {
                    w.evict_oldest();
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => slot.map_err(std::io::Error::other)?,
                    () = &mut shutdown => break,
                }
            }
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors or a connection reset before it was accepted: wait a moment
                    // rather than spin; connections already open go on.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let head = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let inner = service.clone();
        let seen = head.clone();
        let svc = hyper::service::service_fn(move |req| {
            seen.store(true, std::sync::atomic::Ordering::Relaxed);
            hyper::service::Service::call(&inner, req)
        });
        let connection = http.serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
        let connection = graceful.watch(connection);
        let task = tokio::spawn(async move {
            let _ = connection.await;
            drop(slot);
        });
        if let Ok(mut w) = waiting.lock() {
            w.push(head, task.abort_handle());
        }
    }
    stop.cancel();
    // Requests under way finish; a connection that will not close is left behind after a while.
    if tokio::time::timeout(std::time::Duration::from_secs(10), graceful.shutdown()).await.is_err() {
        tracing::warn!("some connections were still open 10 s after shutdown began");
    }
    Ok(())
}

/// The open connections that may not have sent a whole request head yet, oldest first.
#[derive(Default)]
struct HeadWaiters(std::collections::VecDeque<(Arc<std::sync::atomic::AtomicBool>, tokio::task::AbortHandle)>);

impl HeadWaiters {
    fn push(&mut self, head: Arc<std::sync::atomic::AtomicBool>, task: tokio::task::AbortHandle) {
        // Those that sent a head or ended are dropped from the front as the list grows.
        while self.0.front().is_some_and(|(h, t)| h.load(std::sync::atomic::Ordering::Relaxed) || t.is_finished()) {
            self.0.pop_front();
        }
        if self.0.len() > 4 * 65_536 {
            self.0.retain(|(h, t)| !h.load(std::sync::atomic::Ordering::Relaxed) && !t.is_finished());
        }
        self.0.push_back((head, task));
    }

    /// Closes the oldest connection that has sent no request head, if any.
    fn evict_oldest(&mut self) {
        while let Some((head, task)) = self.0.pop_front() {
            if !head.load(std::sync::atomic::Ordering::Relaxed) && !task.is_finished() {
                task.abort();
                return;
            }
        }
    }
}

/// Raises the process's soft limit of open files to its hard limit (a server holds one per connection), and
/// returns the soft limit now in force.
pub fn raise_open_files() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, limit) {
            tracing::warn!("could not raise the open-files limit: {e}");
        }
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}
