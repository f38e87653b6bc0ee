//! Timestamps and durations.
//!
//! chatctx keeps time as whole Unix seconds (UTC). Input accepts RFC 3339 with any offset (fractions of a
//! second are truncated) or integer Unix seconds; output is always `YYYY-MM-DDTHH:MM:SSZ`. Written here rather
//! than pulled from a date crate because the core needs only these two conversions and they are hot.

use std::fmt;

use serde::{Serialize, Serializer};

/// The earliest instant chatctx accepts: 0001-01-01T00:00:00Z.
pub(crate) const MIN_UNIX: i64 = -62_135_596_800;
/// The latest instant chatctx accepts: 9999-12-31T23:59:59Z.
pub(crate) const MAX_UNIX: i64 = 253_402_300_799;

/// A point in time, in whole seconds since the Unix epoch (UTC).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

/// Why a timestamp or duration could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TimeError(&'static str);

impl Timestamp {
    /// A timestamp from Unix seconds, if it lies within years 1 to 9999.
    pub fn from_unix(secs: i64) -> Option<Self> {
        (MIN_UNIX..=MAX_UNIX).contains(&secs).then_some(Self(secs))
    }

    /// Seconds since the Unix epoch.
    pub fn unix(self) -> i64 {
        self.0
    }

    /// The last second a timestamp can hold.
    pub(crate) const LAST: Self = Self(MAX_UNIX);

    /// Whether this is the last second a timestamp can hold, which [`Timestamp::plus`] never passes.
    pub(crate) fn is_last(self) -> bool {
        self >= Self::LAST
    }

    /// This timestamp moved by `span` (saturating at the accepted range).
    pub fn plus(self, span: Span) -> Self {
        Self(self.0.saturating_add(span.0).clamp(MIN_UNIX, MAX_UNIX))
    }

    /// Parses RFC 3339 (`2026-02-13T08:20:10Z`, `2026-02-13T10:20:10.5+02:00`). `T` may also be `t` or a space.
    pub fn parse_rfc3339(s: &str) -> Result<Self, TimeError> {
        let b = s.as_bytes();
        if b.len() < 20 {
            return Err(TimeError("expected an RFC 3339 time such as 2026-02-13T08:20:10Z"));
        }
        let num = |from: usize, len: usize| -> Result<i64, TimeError> {
            let digits = b.get(from..from + len).ok_or(TimeError("truncated time"))?;
            digits.iter().try_fold(0i64, |acc, &d| {
                if d.is_ascii_digit() {
                    Ok(acc * 10 + i64::from(d - b'0'))
                } else {
                    Err(TimeError("expected a digit in the time"))
                }
            })
        };
        let sep = |at: usize, ok: &[u8]| -> Result<(), TimeError> {
            match b.get(at) {
                Some(c) if ok.contains(c) => Ok(()),
                _ => Err(TimeError("malformed RFC 3339 time")),
            }
        };
        let year = num(0, 4)?;
        sep(4, b"-")?;
        let month = num(5, 2)?;
        sep(7, b"-")?;
        let day = num(8, 2)?;
        sep(10, b"Tt ")?;
        let hour = num(11, 2)?;
        sep(13, b":")?;
        let minute = num(14, 2)?;
        sep(16, b":")?;
        let second = num(17, 2)?;
        if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
            return Err(TimeError("date out of range"));
        }
        // A leap second (60) is read as the last second of its minute.
        if hour > 23 || minute > 59 || second > 60 {
            return Err(TimeError("time of day out of range"));
        }
        let mut i = 19;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return Err(TimeError("empty fraction of a second"));
            }
        }
        let offset = match b.get(i) {
            Some(b'Z' | b'z') if i + 1 == b.len() => 0,
            Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() => {
                sep(i + 3, b":")?;
                let (oh, om) = (num(i + 1, 2)?, num(i + 4, 2)?);
                if oh > 23 || om > 59 {
                    return Err(TimeError("offset out of range"));
                }
                let off = oh * 3600 + om * 60;
                if sign == b'+' { off } else { -off }
            }
            _ => {
                return Err(TimeError("expected Z or an offset such as +02:00 at the end of the time"));
            }
        };
        let days = days_from_civil(year, month, day);
        let secs = days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset;
        Self::from_unix(secs).ok_or(TimeError("time out of range"))
    }

    /// Appends the RFC 3339 UTC form to `out`.
    pub fn write_rfc3339(self, out: &mut String) {
        TimeWriter::default().write(self, out);
    }

    /// The RFC 3339 UTC form.
    pub fn to_rfc3339(self) -> String {
        let mut s = String::with_capacity(20);
        self.write_rfc3339(&mut s);
        s
    }
}

/// Writes RFC 3339 UTC times, remembering the last date: the items of a history mostly share one, and the
/// calendar arithmetic is most of the cost.
#[derive(Debug, Default)]
pub struct TimeWriter {
    last: Option<(i64, [u8; 11])>,
}

impl TimeWriter {
    /// Appends the RFC 3339 UTC form of `t` to `out`.
    pub fn write(&mut self, t: Timestamp, out: &mut String) {
        let days = t.0.div_euclid(86_400);
        let secs = t.0.rem_euclid(86_400);
        // Every field is below 100 (the year, within 1..=9999, in two halves).
        let two = |buf: &mut [u8], at: usize, v: i64| {
            let v = u8::try_from(v).unwrap_or(0);
            buf[at] = b'0' + v / 10;
            buf[at + 1] = b'0' + v % 10;
        };
        let date = match self.last {
            Some((day, date)) if day == days => date,
            _ => {
                let (y, m, d) = civil_from_days(days);
                let mut date = *b"0000-00-00T";
                two(&mut date, 0, y / 100);
                two(&mut date, 2, y % 100);
                two(&mut date, 5, m);
                two(&mut date, 8, d);
                self.last = Some((days, date));
                date
            }
        };
        let mut all = *b"0000-00-00T00:00:00Z";
        all[..11].copy_from_slice(&date);
        two(&mut all, 11, secs / 3600);
        two(&mut all, 14, secs / 60 % 60);
        two(&mut all, 17, secs % 60);
        // Every byte is ASCII.
        out.push_str(std::str::from_utf8(&all).unwrap_or_default());
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    /// RFC 3339 (any offset) or integer Unix seconds, as everywhere on input.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        time_of(&v).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Timestamp {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    /// On input, RFC 3339 or Unix seconds; on output always RFC 3339 in UTC.
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        use crate::wire::schema;
        if generator.contract().is_deserialize() {
            schema([
                ("type", vec!["string", "integer"].into()),
                ("description", "RFC 3339 (any offset) or integer Unix seconds.".into()),
            ])
        } else {
            schema([("type", "string".into()), ("format", "date-time".into())])
        }
    }
}

/// A time from a JSON value: RFC 3339 or integer Unix seconds.
pub fn time_of(v: &serde_json::Value) -> Result<Timestamp, String> {
    match v {
        serde_json::Value::String(s) => Timestamp::parse_rfc3339(s).map_err(|e| e.to_string()),
        serde_json::Value::Number(n) => n
            .as_i64()
            .and_then(Timestamp::from_unix)
            .ok_or_else(|| "expected integer Unix seconds within years 1 to 9999".to_owned()),
        _ => Err("expected an RFC 3339 time or integer Unix seconds".to_owned()),
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A length of time in whole seconds, written in config as `"90s"`, `"30m"`, `"2h"`, `"1d"` or combinations
/// such as `"1h30m"`. A bare number is seconds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span(i64);

impl<'de> serde::Deserialize<'de> for Span {
    /// `"90s"`, `"30m"`, `"2h"`, `"1d"`, combinations such as `"1h30m"`, or a whole number of seconds.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Span::parse(&s).map_err(serde::de::Error::custom),
            serde_json::Value::Number(n) => n
                .as_i64()
                .filter(|n| *n >= 0)
                .map(Span::from_secs)
                .ok_or_else(|| serde::de::Error::custom("expected a non-negative whole number of seconds")),
            v => Err(serde::de::Error::custom(format!("expected a duration such as \"2h\", got {v}"))),
        }
    }
}

impl Span {
    /// A span of `secs` seconds.
    pub const fn from_secs(secs: i64) -> Self {
        Self(secs)
    }

    /// Whole seconds.
    pub const fn secs(self) -> i64 {
        self.0
    }

    /// Parses `"2h"`, `"30m"`, `"1h30m"`, `"45s"`, `"1d"`, or a bare number of seconds.
    pub fn parse(s: &str) -> Result<Self, TimeError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(TimeError("empty duration"));
        }
        if let Ok(n) = s.parse::<i64>() {
            return if n >= 0 { Ok(Self(n)) } else { Err(TimeError("negative duration")) };
        }
        let mut total: i64 = 0;
        let mut n: Option<i64> = None;
        for c in s.chars() {
            if let Some(d) = c.to_digit(10) {
                let v = n.unwrap_or(0).checked_mul(10).and_then(|v| v.checked_add(i64::from(d)));
                n = Some(v.ok_or(TimeError("duration too large"))?);
                continue;
            }
            let unit = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                _ => {
                    return Err(TimeError("expected a duration such as \"90s\", \"30m\", \"2h\" or \"1d\""));
                }
            };
            let v = n.take().ok_or(TimeError("a duration unit needs a number before it"))?;
            total = v.checked_mul(unit).and_then(|v| total.checked_add(v)).ok_or(TimeError("duration too large"))?;
        }
        if n.is_some() {
            return Err(TimeError("a number in a duration needs a unit (s, m, h or d)"));
        }
        Ok(Self(total))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    fn ts(s: &str) -> i64 {
        Timestamp::parse_rfc3339(s).map(Timestamp::unix).unwrap_or(i64::MIN)
    }

    #[test]
    fn parses_utc_offsets_and_fractions() {
        assert_eq!(ts("1970-01-01T00:00:00Z"), 0);
        assert_eq!(ts("2026-02-13T08:20:10Z"), 1_770_970_810);
        assert_eq!(ts("2026-02-13T10:20:10+02:00"), 1_770_970_810);
        assert_eq!(ts("2026-02-13T03:50:10.999-04:30"), 1_770_970_810);
        assert_eq!(ts("2026-02-13 08:20:10z"), 1_770_970_810);
        assert_eq!(ts("2024-02-29T00:00:00Z"), 1_709_164_800);
    }

    #[test]
    fn rejects_malformed_times() {
        for bad in [
            "",
            "2026-02-13",
            "2026-02-13T08:20:10",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-02-13T24:00:00Z",
            "2026-02-13T08:20:10+2:00",
            "2026-02-13T08:20:10.Z",
            "2026-02-13T08:20:10Zjunk",
            "２０２６-02-13T08:20:10Z",
        ] {
            assert!(Timestamp::parse_rfc3339(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn formats_round_trip() {
        for s in [
            "1970-01-01T00:00:00Z",
            "2026-02-13T08:20:10Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "1900-03-01T12:34:56Z",
        ] {
            let t = Timestamp::parse_rfc3339(s).map(|t| t.to_rfc3339());
            assert_eq!(t.as_deref(), Ok(s));
        }
        assert_eq!(Timestamp::from_unix(-1).map(|t| t.to_rfc3339()).as_deref(), Some("1969-12-31T23:59:59Z"));
        assert!(Timestamp::from_unix(MAX_UNIX + 1).is_none());
    }

    #[test]
    fn spans() {
        assert_eq!(Span::parse("2h"), Ok(Span(7200)));
        assert_eq!(Span::parse("1h30m"), Ok(Span(5400)));
        assert_eq!(Span::parse("45"), Ok(Span(45)));
        assert_eq!(Span::parse("1d"), Ok(Span(86_400)));
        assert!(Span::parse("h").is_err());
        assert!(Span::parse("5").is_ok());
        assert!(Span::parse("5x").is_err());
        assert!(Span::parse("10m5").is_err());
        assert!(Span::parse("-5").is_err());
        assert!(Span::parse("99999999999999999999d").is_err());
    }

    proptest::proptest! {
        #[test]
        fn unix_round_trips_through_rfc3339(secs in MIN_UNIX..=MAX_UNIX) {
            let t = Timestamp::from_unix(secs).unwrap_or_default();
            proptest::prop_assert_eq!(Timestamp::parse_rfc3339(&t.to_rfc3339()), Ok(t));
        }
    }
}
