//! The id that names a request in its log lines, its decision records and its spans, and the request's span.

use crate::telemetry::SpanContext;

/// The request's id (`x-request-id`), as its log lines and decision records carry it.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// The request's span, for the spans under it (only when tracing is on).
#[derive(Debug, Clone, Copy)]
pub struct RequestSpan(pub SpanContext);

/// Whether a caller's request id may be used as given: a plain token of at most 64 of `A-Z a-z 0-9 . _ -`.
pub fn is_request_id(given: &str) -> bool {
    !given.is_empty() && given.len() <= 64 && given.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// A fresh request id: this process's random prefix and a counter (unique without a system call per request).
pub fn new_request_id() -> String {
    static PREFIX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let prefix = PREFIX.get_or_init(|| {
        use ring::rand::SecureRandom;
        let mut b = [0u8; 4];
        let _ = ring::rand::SystemRandom::new().fill(&mut b);
        u32::from_le_bytes(b)
    });
    format!("{prefix:08x}{:08x}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids() {
        for ok in ["a", "req-1.2_3", &"x".repeat(64)] {
            assert!(is_request_id(ok), "{ok}");
        }
        for bad in ["", "has space", "quote\"", &"x".repeat(65), "ünï"] {
            assert!(!is_request_id(bad), "{bad}");
        }
        let (a, b) = (new_request_id(), new_request_id());
        assert!(a != b && is_request_id(&a) && a.len() == 16, "{a} {b}");
    }
}
