//! OpenTelemetry spans over OTLP/HTTP (the JSON encoding), off unless `[telemetry] otlp_endpoint` is set.
//!
//! One server span per HTTP request (method, route template, status) and one child span per tool call (chat,
//! tool, outcome, candidate and item counts). Attributes are ids, names and counts, never message text. Spans
//! wait in a bounded queue ([`QUEUE`]); when it is full (the collector is down or slow) new spans are dropped
//! and counted, so tracing can neither grow memory nor slow a request. An exporter task posts batches of at
//! most [`BATCH`] spans to `{otlp_endpoint}/v1/traces` at least once a second.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::config::TelemetrySettings;

/// Spans waiting for the exporter at most.
pub const QUEUE: usize = 4096;
/// Spans in one export request at most.
pub const BATCH: usize = 512;

/// A trace and span id pair: a request's, handed to the spans under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    /// 16 random bytes.
    pub trace_id: [u8; 16],
    /// 8 random bytes.
    pub span_id: [u8; 8],
}

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    /// A string (ids, names, codes).
    Str(String),
    /// A count or a status.
    Int(i64),
}

/// One finished span.
#[derive(Debug, Clone)]
pub struct Span {
    /// Its ids.
    pub context: SpanContext,
    /// The span it is under, in the same trace.
    pub parent: Option<[u8; 8]>,
    /// `POST /v1/tools/{tool}`, `tool resolve_reference_target`, …
    pub name: String,
    /// OTLP's SpanKind: 1 internal, 2 server.
    pub kind: u8,
    /// When it began.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// Its attributes (names are mostly fixed; a tool answer's summary fields are named at run time).
    pub attributes: Vec<(Cow<'static, str>, Attr)>,
    /// Whether it failed (OTLP status ERROR; else OK).
    pub error: bool,
}

/// The span sink: a no-op when tracing is off.
pub struct Telemetry {
    queue: Option<mpsc::Sender<Span>>,
    random: SystemRandom,
    dropped: AtomicU64,
}

impl Telemetry {
    /// Tracing off: nothing is recorded, and asking costs a branch.
    pub fn off() -> Arc<Self> {
        Arc::new(Self { queue: None, random: SystemRandom::new(), dropped: AtomicU64::new(0) })
    }

    /// Tracing as `settings` say; with an endpoint, the exporter task starts on the current tokio runtime.
    pub fn start(settings: &TelemetrySettings) -> Arc<Self> {
        let Some(endpoint) = &settings.otlp_endpoint else { return Self::off() };
        let (tx, rx) = mpsc::channel(QUEUE);
        let url = format!("{endpoint}/v1/traces");
        tracing::info!("exporting OpenTelemetry spans to {}", crate::config::redact_url(&url));
        tokio::spawn(export(rx, url, settings.service_name.clone()));
        Arc::new(Self { queue: Some(tx), random: SystemRandom::new(), dropped: AtomicU64::new(0) })
    }

    /// Whether spans are recorded.
    pub fn enabled(&self) -> bool {
        self.queue.is_some()
    }

    /// Fresh ids for a new trace.
    pub fn new_trace(&self) -> SpanContext {
        let mut trace_id = [0u8; 16];
        let _ = self.random.fill(&mut trace_id);
        SpanContext { trace_id, span_id: self.new_span_id() }
    }

    /// A fresh span id.
    pub fn new_span_id(&self) -> [u8; 8] {
        let mut id = [0u8; 8];
        let _ = self.random.fill(&mut id);
        id
    }

    /// Queues a finished span; dropped (and counted) when the queue is full.
    pub fn record(&self, span: Span) {
        if let Some(q) = &self.queue
            && q.try_send(span).is_err()
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Spans dropped because the queue was full (for `/metrics`).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The exporter: batches spans and posts them; a failed post is logged (at most once a minute) and its batch
/// dropped.
async fn export(mut rx: mpsc::Receiver<Span>, url: String, service: String) {
    crate::triage::install_tls_provider();
    let client = match reqwest::Client::builder().timeout(Duration::from_secs(5)).build() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("telemetry is off: cannot build the OTLP client: {e}");
            return;
        }
    };
    let mut last_warning: Option<std::time::Instant> = None;
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        while batch.len() < BATCH {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(span)) => batch.push(span),
                Ok(None) | Err(_) => break,
            }
        }
        let body = otlp_json(&service, &batch).to_string();
        let sent = client.post(&url).header("content-type", "application/json").body(body).send().await;
        let failure = match sent {
            Ok(r) if r.status().is_success() => None,
            Ok(r) => Some(format!("HTTP {}", r.status())),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = failure
            && last_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(60))
        {
            tracing::warn!("could not export {} spans to the OTLP endpoint: {why}", batch.len());
            last_warning = Some(std::time::Instant::now());
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn nanos(t: SystemTime) -> String {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()).to_string()
}

/// The OTLP/JSON `ExportTraceServiceRequest` for `spans` (ids in hex, 64-bit integers as strings).
// `json!` on our own values: cannot fail.
#[allow(clippy::disallowed_methods)]
pub fn otlp_json(service: &str, spans: &[Span]) -> Value {
    let spans: Vec<Value> = spans
        .iter()
        .map(|s| {
            let attributes: Vec<Value> = s
                .attributes
                .iter()
                .map(|(k, v)| match v {
                    Attr::Str(x) => json!({"key": k, "value": {"stringValue": x}}),
                    Attr::Int(n) => json!({"key": k, "value": {"intValue": n.to_string()}}),
                })
                .collect();
            let mut span = json!({
                "traceId": hex(&s.context.trace_id),
                "spanId": hex(&s.context.span_id),
                "name": s.name,
                "kind": s.kind,
                "startTimeUnixNano": nanos(s.start),
                "endTimeUnixNano": nanos(s.end),
                "attributes": attributes,
                "status": {"code": if s.error { 2 } else { 1 }},
            });
            if let Some(p) = s.parent {
                span["parentSpanId"] = json!(hex(&p));
            }
            span
        })
        .collect();
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"scope": {"name": "chatctx", "version": env!("CARGO_PKG_VERSION")}, "spans": spans}]
    }]})
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_encoded_as_otlp_json() {
        let start = UNIX_EPOCH + Duration::from_nanos(1_700_000_000_000_000_001);
        let span = Span {
            context: SpanContext { trace_id: [0xab; 16], span_id: [1; 8] },
            parent: Some([2; 8]),
            name: "tool get_scenario".into(),
            kind: 1,
            start,
            end: start + Duration::from_micros(15),
            attributes: vec![
                ("chatctx.tool".into(), Attr::Str("get_scenario".into())),
                ("chatctx.revision".into(), Attr::Int(3)),
            ],
            error: false,
        };
        let doc = otlp_json("chatctx-test", &[span]);
        let s = &doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(s["traceId"], "ab".repeat(16));
        assert_eq!(s["spanId"], "0101010101010101");
        assert_eq!(s["parentSpanId"], "0202020202020202");
        assert_eq!(s["startTimeUnixNano"], "1700000000000000001");
        assert_eq!(s["endTimeUnixNano"], "1700000000000015001");
        assert_eq!(s["attributes"][1], json!({"key": "chatctx.revision", "value": {"intValue": "3"}}));
        assert_eq!(s["status"]["code"], 1);
        assert_eq!(doc["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"], "chatctx-test");
    }

    #[test]
    fn off_records_nothing_and_a_full_queue_drops_and_counts() {
        let off = Telemetry::off();
        assert!(!off.enabled());
        let (tx, _rx) = mpsc::channel(1);
        let t = Telemetry { queue: Some(tx), random: SystemRandom::new(), dropped: AtomicU64::new(0) };
        let span = |n: &str| Span {
            context: t.new_trace(),
            parent: None,
            name: n.into(),
            kind: 2,
            start: SystemTime::now(),
            end: SystemTime::now(),
            attributes: Vec::new(),
            error: false,
        };
        t.record(span("a"));
        t.record(span("b"));
        t.record(span("c"));
        assert_eq!(t.dropped(), 2);
        assert_ne!(t.new_trace().trace_id, t.new_trace().trace_id);
    }
}
