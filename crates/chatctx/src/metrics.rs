//! `/metrics` in the Prometheus text format: requests and their latency per route, method and status, and
//! how long the server has been up. Hand-rolled: a handful of counters needs no metrics crate.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 12] = [0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5];

#[derive(Default)]
struct Series {
    count: u64,
    sum: f64,
    /// Per bucket, non-cumulative; rendered cumulatively.
    buckets: [u64; BUCKETS.len()],
}

/// One route's series by (method, status).
type ByStatus = BTreeMap<(&'static str, u16), Series>;

/// The server's counters.
pub struct Metrics {
    started: Instant,
    /// By route, then (method, status). Nested so that counting a request allocates nothing once its route
    /// has been seen.
    requests: Mutex<BTreeMap<String, ByStatus>>,
    /// Telegram updates received and ignored, by kind (the Bot API's update fields; anything else is `other`).
    ignored: Mutex<BTreeMap<&'static str, u64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self { started: Instant::now(), requests: Mutex::new(BTreeMap::new()), ignored: Mutex::new(BTreeMap::new()) }
    }
}

/// Escapes a label value.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Metrics {
    /// Counts one answered request. `route` is the matched route template (`/v1/tools/{tool}`), never the
    /// raw path, so chat ids do not become label values.
    pub fn observe(&self, route: &str, method: &'static str, status: u16, took: Duration) {
        let secs = took.as_secs_f64();
        let Ok(mut map) = self.requests.lock() else { return };
        if !map.contains_key(route) {
            map.insert(route.to_owned(), BTreeMap::new());
        }
        let Some(by_status) = map.get_mut(route) else { return };
        let s = by_status.entry((method, status)).or_default();
        s.count += 1;
        s.sum += secs;
        if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
            s.buckets[i] += 1;
        }
    }

    /// Counts ignored Telegram updates by kind.
    pub fn ignored<'a>(&self, kinds: impl IntoIterator<Item = (&'a String, &'a usize)>) {
        let Ok(mut map) = self.ignored.lock() else { return };
        for (kind, n) in kinds {
            let label =
                chatctx_platforms::telegram::IGNORED_KINDS.iter().copied().find(|k| *k == kind).unwrap_or("other");
            *map.entry(label).or_default() += *n as u64;
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# HELP chatctx_uptime_seconds Seconds since the server started.");
        let _ = writeln!(out, "# TYPE chatctx_uptime_seconds gauge");
        let _ = writeln!(out, "chatctx_uptime_seconds {:.3}", self.started.elapsed().as_secs_f64());
        if let Ok(ignored) = self.ignored.lock() {
            let _ =
                writeln!(out, "# HELP chatctx_ignored_updates_total Telegram updates received and ignored, by kind.");
            let _ = writeln!(out, "# TYPE chatctx_ignored_updates_total counter");
            for (kind, n) in ignored.iter() {
                let _ = writeln!(out, "chatctx_ignored_updates_total{{kind=\"{kind}\"}} {n}");
            }
        }
        let Ok(map) = self.requests.lock() else { return out };
        let _ =
            writeln!(out, "# HELP chatctx_http_requests_total HTTP requests answered, by route, method and status.");
        let _ = writeln!(out, "# TYPE chatctx_http_requests_total counter");
        for (route, method, status, s) in
            map.iter().flat_map(|(r, m)| m.iter().map(move |((me, st), s)| (r, me, st, s)))
        {
            let _ = writeln!(
                out,
                "chatctx_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {}",
                label(route),
                s.count
            );
        }
        let _ = writeln!(out, "# HELP chatctx_http_request_duration_seconds Time to answer, by route and method.");
        let _ = writeln!(out, "# TYPE chatctx_http_request_duration_seconds histogram");
        let mut by_route: BTreeMap<(&str, &str), Series> = BTreeMap::new();
        for (route, method, s) in map.iter().flat_map(|(r, m)| m.iter().map(move |((me, _), s)| (r.as_str(), *me, s))) {
            let t = by_route.entry((route, method)).or_default();
            t.count += s.count;
            t.sum += s.sum;
            for (a, b) in t.buckets.iter_mut().zip(s.buckets) {
                *a += b;
            }
        }
        for ((route, method), s) in by_route {
            let labels = format!("route=\"{}\",method=\"{method}\"", label(route));
            let mut cumulative = 0;
            for (bound, n) in BUCKETS.iter().zip(s.buckets) {
                cumulative += n;
                let _ = writeln!(
                    out,
                    "chatctx_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(out, "chatctx_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}", s.count);
            let _ = writeln!(out, "chatctx_http_request_duration_seconds_sum{{{labels}}} {}", s.sum);
            let _ = writeln!(out, "chatctx_http_request_duration_seconds_count{{{labels}}} {}", s.count);
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    #[test]
    fn counts_and_cumulative_buckets() {
        let m = Metrics::default();
        m.observe("/v1/tools/{tool}", "POST", 200, Duration::from_micros(80));
        m.observe("/v1/tools/{tool}", "POST", 404, Duration::from_millis(3));
        m.observe("/v1/events", "POST", 200, Duration::from_secs(10));
        let text = m.render();
        assert!(
            text.contains("chatctx_http_requests_total{route=\"/v1/tools/{tool}\",method=\"POST\",status=\"404\"} 1")
        );
        let tool = "route=\"/v1/tools/{tool}\",method=\"POST\"";
        assert!(text.contains(&format!("chatctx_http_request_duration_seconds_bucket{{{tool},le=\"0.0001\"}} 1")));
        assert!(text.contains(&format!("chatctx_http_request_duration_seconds_bucket{{{tool},le=\"0.005\"}} 2")));
        assert!(text.contains(&format!("chatctx_http_request_duration_seconds_count{{{tool}}} 2")));
        // Slower than the last bucket: only in +Inf.
        let events = "route=\"/v1/events\",method=\"POST\"";
        assert!(text.contains(&format!("chatctx_http_request_duration_seconds_bucket{{{events},le=\"2.5\"}} 0")));
        assert!(text.contains(&format!("chatctx_http_request_duration_seconds_bucket{{{events},le=\"+Inf\"}} 1")));
    }
}
