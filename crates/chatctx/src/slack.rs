//! Slack's request signatures (docs/protocol.md §3.10): `X-Slack-Signature: v0=HEX` is HMAC-SHA256 of
//! `v0:{X-Slack-Request-Timestamp}:{body}` under the app's signing secret; a timestamp more than five minutes
//! from now is refused, so a captured request cannot be replayed later.

use axum::http::HeaderMap;
use chatctx_core::{Error, ErrorCode};

/// How far a request's timestamp may be from now, in seconds.
pub const MAX_SKEW: i64 = 300;

fn refused(why: &str) -> Error {
    Error::new(ErrorCode::Unauthorized, format!("the Slack signature does not verify: {why}"))
}

/// Checks a request Slack signed with `secret`, at `now` (Unix seconds).
pub fn verify(secret: &str, headers: &HeaderMap, body: &[u8], now: i64) -> Result<(), Error> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let ts = header("x-slack-request-timestamp").ok_or_else(|| refused("no X-Slack-Request-Timestamp"))?;
    let at: i64 = ts.parse().map_err(|_| refused("X-Slack-Request-Timestamp is not Unix seconds"))?;
    // Widened, so no timestamp (`-9223372036854775808` included) can overflow the difference.
    if (i128::from(now) - i128::from(at)).abs() > i128::from(MAX_SKEW) {
        return Err(refused("the request is more than five minutes old (or from the future)"));
    }
    let sig =
        header("x-slack-signature").and_then(|s| s.strip_prefix("v0=")).ok_or_else(|| refused("no v0= signature"))?;
    let expected = hex(sig).ok_or_else(|| refused("the signature is not hex"))?;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let mut signed = Vec::with_capacity(body.len() + ts.len() + 4);
    signed.extend_from_slice(b"v0:");
    signed.extend_from_slice(ts.as_bytes());
    signed.push(b':');
    signed.extend_from_slice(body);
    ring::hmac::verify(&key, &signed, &expected).map_err(|_| refused("wrong signature"))
}

/// The signature header value of `body` at `ts` under `secret` (for tests and clients that forward).
pub fn sign(secret: &str, ts: i64, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let mut signed = format!("v0:{ts}:").into_bytes();
    signed.extend_from_slice(body);
    let tag = ring::hmac::sign(&key, &signed);
    let mut out = String::from("v0=");
    for b in tag.as_ref() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    /// Issue 28, point 13: timestamps at the ends of `i64` are refused as old, never overflow.
    #[test]
    fn extreme_timestamps_do_not_overflow() {
        for at in [i64::MIN, i64::MAX, i64::MIN + 1] {
            let mut h = HeaderMap::new();
            h.insert("x-slack-request-timestamp", at.to_string().parse().unwrap());
            h.insert("x-slack-signature", "v0=00".parse().unwrap());
            for now in [0, i64::MAX, i64::MIN] {
                let e = verify("secret", &h, b"{}", now).unwrap_err();
                assert_eq!(e.code, ErrorCode::Unauthorized);
            }
        }
    }

    fn headers(ts: i64, sig: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-slack-request-timestamp", ts.to_string().parse().unwrap());
        h.insert("x-slack-signature", sig.parse().unwrap());
        h
    }

    /// Slack's documented example: secret, timestamp, body and signature from "Verifying requests from
    /// Slack" (api.slack.com/authentication/verifying-requests-from-slack).
    #[test]
    fn slacks_documented_example_verifies() {
        let secret = "8f742231b10e8888abcd99yyyzzz85a5";
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let ts = 1_531_420_618;
        let sig = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(sign(secret, ts, body), sig);
        assert!(verify(secret, &headers(ts, sig), body, ts + 10).is_ok());
        assert_eq!(verify(secret, &headers(ts, sig), b"tampered", ts).unwrap_err().code, ErrorCode::Unauthorized);
        assert!(verify(secret, &headers(ts, sig), body, ts + MAX_SKEW + 1).is_err(), "too old");
        assert!(verify("another secret", &headers(ts, sig), body, ts).is_err());
    }
}
