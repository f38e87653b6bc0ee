//! The wall clock, read in one place: the front ends pass it as `now` to a core that never reads a clock.

use chatctx_core::Timestamp;

/// The wall clock, to the second.
pub fn now() -> Timestamp {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    Timestamp::from_unix(i64::try_from(secs).unwrap_or(0)).unwrap_or_default()
}
