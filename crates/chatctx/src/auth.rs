//! Who may call the server (issue 6): bearer tokens from `server.tokens`, each optionally limited to some
//! chats, and bound scopes: short-lived tokens issued by `POST /v1/scopes` that pin one chat (and optionally
//! its topic) and default the current message and sender, so a model in a tool loop holding one can never
//! reach another chat (docs/security.md).
//!
//! A scope is self-contained: `cs2.<claims>.<signature>`, the claims (base64url JSON: chat, topic, defaults,
//! expiry, a random id) signed with HMAC-SHA256 under `server.scope_key`, so every instance sharing the key
//! accepts the scopes any of them issued, with no lookup. Revoked scope ids are kept until the scope would
//! have expired, in memory and in the store, where the other instances read them from.
//!
//! With no tokens configured the server is open (it binds 127.0.0.1 unless told otherwise).

use std::collections::HashMap;
use std::sync::Mutex;

use chatctx_core::tools::{Scope, ToolCall};
use chatctx_core::{Error, ErrorCode, Timestamp};
use ring::rand::{SecureRandom, SystemRandom};
use serde::Serialize;
use serde_json::Value;

use crate::config::Token;

/// A bound scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Bound {
    /// Its id, for revocation (random; set when issued).
    #[serde(rename = "scope_id", default)]
    pub id: String,
    /// Platform.
    pub channel: String,
    /// The one chat it may touch.
    pub chat_id: String,
    /// Its topic, filled into requests that name none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The message being handled, filled in likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_message_id: Option<String>,
    /// The sender, filled in likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_user_id: Option<String>,
    /// When the token stops working.
    pub expires_at: Timestamp,
    /// Whether it may write the conversation's summary (`update_summary`); a scope reads it in any case.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub may_write_summary: bool,
}

/// What a request may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// No tokens are configured: everything.
    Open,
    /// A token without a chat list: everything.
    All,
    /// A token limited to these chats.
    Chats(Vec<String>),
    /// A bound scope.
    Bound(Bound),
}

/// Whether an entry of a token's chat list names `chat` on `channel`: `CHANNEL:CHAT` names it on that channel
/// only; a bare id names it on the platforms chatctx maps (`telegram`, `discord`, `slack`), never on a made-up
/// channel, so one chat-limited token cannot create chats on any number of channels.
fn listed(entry: &str, channel: &str, chat: &str) -> bool {
    match entry.split_once(':') {
        Some((ch, id)) => ch == channel && id == chat,
        None => entry == chat && chatctx_platforms::PLATFORMS.iter().any(|p| p.name() == channel),
    }
}

fn forbidden(chat: &str) -> Error {
    Error::new(ErrorCode::ForbiddenScope, format!("this credential may not touch chat {chat:?}"))
}

impl Access {
    /// Whether the request may touch `chat` on `channel`.
    pub fn allows(&self, channel: &str, chat: &str) -> bool {
        match self {
            Access::Open | Access::All => true,
            Access::Chats(list) => list.iter().any(|c| listed(c, channel, chat)),
            Access::Bound(b) => b.channel == channel && b.chat_id == chat,
        }
    }

    /// Reads a tool call as the credential allows: a bound scope supplies its chat (and topic, current
    /// message, sender where the call names none) and refuses any other chat; a chat list refuses chats not
    /// on it.
    pub fn decode_call(&self, tool: &str, args: &Value) -> Result<ToolCall, Error> {
        // Ids reach log lines and records: none may hold a control character.
        chatctx_core::json::check_call_ids(args).map_err(|e| Error::invalid_request(e.message))?;
        let call = match self {
            Access::Bound(b) => {
                let mut call = ToolCall::decode_with(tool, args, Some(&b.scope()))?;
                // Read from the credential, never from the request.
                call.scope_mut().pinned_topic = b.topic_id.is_some();
                call
            }
            _ => ToolCall::decode(tool, args)?,
        };
        let scope = call.scope();
        if !self.allows(&scope.channel, &scope.chat_id) {
            return Err(forbidden(&scope.chat_id));
        }
        self.topic(scope.topic_id.as_deref())?;
        if let (Access::Bound(b), ToolCall::UpdateSummary(_)) = (self, &call)
            && !b.may_write_summary
        {
            return Err(Error::new(
                ErrorCode::ForbiddenScope,
                "this scope may read the conversation's summary but not write it (the operator issues scopes that \
                 may with `may_write_summary: true`)",
            ));
        }
        Ok(call)
    }

    /// The topic a read may look at: a bound scope issued for a topic is pinned to it (no topic asked for
    /// means its topic; another topic is `forbidden_scope`); other credentials get what they ask for.
    pub fn topic(&self, asked: Option<&str>) -> Result<Option<String>, Error> {
        match self {
            Access::Bound(Bound { topic_id: Some(pinned), .. }) => match asked {
                None => Ok(Some(pinned.clone())),
                Some(t) if t == pinned => Ok(Some(pinned.clone())),
                Some(t) => Err(Error::new(
                    ErrorCode::ForbiddenScope,
                    format!("this scope is pinned to topic {pinned:?}, not {t:?}"),
                )),
            },
            _ => Ok(asked.map(str::to_owned)),
        }
    }

    /// Refuses what a bound scope may not do (`what`: "ingest events", "delete a chat", …): a scope is a
    /// capability for a model to call the tools and read its own chat, not a credential of the bot.
    pub fn not_a_scope(&self, what: &str) -> Result<(), Error> {
        match self {
            Access::Bound(_) => Err(Error::new(ErrorCode::ForbiddenScope, format!("a bound scope may not {what}"))),
            _ => Ok(()),
        }
    }
}

impl Bound {
    /// The scope it fills into calls.
    fn scope(&self) -> Scope {
        Scope {
            channel: self.channel.clone(),
            chat_id: self.chat_id.clone(),
            topic_id: self.topic_id.clone(),
            current_message_id: self.current_message_id.clone(),
            sender_user_id: self.sender_user_id.clone(),
            explain: false,
            pinned_topic: self.topic_id.is_some(),
        }
    }
}

/// The server's credentials.
pub struct Auth {
    tokens: Vec<Token>,
    key: ring::hmac::Key,
    /// Revoked scope ids, until the scope would have expired.
    revoked: Mutex<HashMap<String, Timestamp>>,
    /// The live revocations chat-limited tokens made through this instance, per chat (their expiries), so one
    /// bot token cannot fill the store with revocations ([`MAX_REVOCATIONS_PER_CHAT`]).
    revoked_by_chat: Mutex<HashMap<(String, String), Vec<Timestamp>>>,
    rng: SystemRandom,
}

/// Scopes of one chat a chat-limited token may have revoked and not yet expired, through one instance; the
/// operator token is not limited.
pub const MAX_REVOCATIONS_PER_CHAT: usize = 10_000;

/// Compares secrets in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token of an `Authorization: Bearer …` header, whatever the case of the scheme.
fn bearer_token(header: &str) -> Option<&str> {
    header.split_once(' ').filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer")).map(|(_, t)| t.trim())
}

/// The prefix of a scope token (its format's version).
const SCOPE_PREFIX: &str = "cs2.";

fn internal(why: &str) -> Error {
    Error::new(ErrorCode::Internal, why)
}

impl Auth {
    /// Credentials from `server.tokens`, with a random scope key: scopes work on this instance only.
    pub fn new(tokens: Vec<Token>) -> Self {
        let rng = SystemRandom::new();
        let key = ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &rng)
            .unwrap_or_else(|_| ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"no randomness: scopes are weak"));
        Self { tokens, key, revoked: Mutex::new(HashMap::new()), revoked_by_chat: Mutex::default(), rng }
    }

    /// Credentials from `server.tokens`, signing scopes with `scope_key` (`server.scope_key`), which every
    /// instance sharing a store should share.
    pub fn with_scope_key(tokens: Vec<Token>, scope_key: &str) -> Self {
        Self { key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, scope_key.as_bytes()), ..Self::new(tokens) }
    }

    /// Whether requests need a token.
    pub fn required(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// What the `Authorization` header allows at `now`.
    pub fn check(&self, header: Option<&str>, now: Timestamp) -> Result<Access, Error> {
        let unauthorized =
            || Error::new(ErrorCode::Unauthorized, "a valid `Authorization: Bearer <token>` is required");
        let Some(token) = header.and_then(bearer_token) else {
            return if self.tokens.is_empty() { Ok(Access::Open) } else { Err(unauthorized()) };
        };
        if let Some(t) = self.tokens.iter().find(|t| same(&t.token, token)) {
            return Ok(if t.chats.is_empty() { Access::All } else { Access::Chats(t.chats.clone()) });
        }
        if token.starts_with(SCOPE_PREFIX) {
            let bound = self.read_scope(token)?;
            if now >= bound.expires_at {
                return Err(Error::new(ErrorCode::Unauthorized, "this scoped token has expired"));
            }
            let revoked = self.revoked.lock().map_err(|_| internal("auth state poisoned"))?;
            if revoked.contains_key(&bound.id) {
                return Err(Error::new(ErrorCode::Unauthorized, "this scoped token was revoked"));
            }
            return Ok(Access::Bound(bound));
        }
        if self.tokens.is_empty() { Ok(Access::Open) } else { Err(unauthorized()) }
    }

    /// The scope a token carries, if its signature is this server's (expiry and revocation not checked).
    pub fn read_scope(&self, token: &str) -> Result<Bound, Error> {
        let bad = || Error::new(ErrorCode::Unauthorized, "this scoped token is not valid here");
        let rest = token.strip_prefix(SCOPE_PREFIX).ok_or_else(bad)?;
        let (claims, mac) = rest.split_once('.').ok_or_else(bad)?;
        let mac = base64url_decode(mac).ok_or_else(bad)?;
        ring::hmac::verify(&self.key, &token.as_bytes()[..SCOPE_PREFIX.len() + claims.len()], &mac)
            .map_err(|_| bad())?;
        let claims = base64url_decode(claims).ok_or_else(bad)?;
        serde_json::from_slice(&claims).map_err(|_| bad())
    }

    /// Issues a bound scope; `access` must be allowed to touch its chat (a bound scope cannot issue another).
    /// The scope's id is filled in.
    pub fn issue(&self, access: &Access, mut bound: Bound, now: Timestamp) -> Result<(String, Bound), Error> {
        let _ = now;
        access.not_a_scope("issue scopes")?;
        if !access.allows(&bound.channel, &bound.chat_id) {
            return Err(forbidden(&bound.chat_id));
        }
        let mut bytes = [0u8; 12];
        self.rng.fill(&mut bytes).map_err(|_| internal("no randomness available"))?;
        bound.id = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let claims = serde_json::to_vec(&bound).map_err(|e| internal(&e.to_string()))?;
        let mut token = String::from(SCOPE_PREFIX);
        token.push_str(&base64url_encode(&claims));
        let mac = ring::hmac::sign(&self.key, token.as_bytes());
        token.push('.');
        token.push_str(&base64url_encode(mac.as_ref()));
        Ok((token, bound))
    }

    /// Revokes a scope until it would have expired: the caller must hold a credential (not a scope) allowed
    /// to touch the scope's chat. The revoked scope, for the store to keep.
    pub fn revoke(&self, access: &Access, token: &str) -> Result<Bound, Error> {
        access.not_a_scope("revoke scopes")?;
        let bound = self.read_scope(token)?;
        if !access.allows(&bound.channel, &bound.chat_id) {
            return Err(forbidden(&bound.chat_id));
        }
        if matches!(access, Access::Chats(_)) {
            let mut by_chat = self.revoked_by_chat.lock().map_err(|_| internal("auth state poisoned"))?;
            let now = crate::clock::now();
            let live = by_chat.entry((bound.channel.clone(), bound.chat_id.clone())).or_default();
            live.retain(|t| *t > now);
            if live.len() >= MAX_REVOCATIONS_PER_CHAT {
                return Err(Error::invalid_request(format!(
                    "this token has {MAX_REVOCATIONS_PER_CHAT} revoked scopes of chat {:?} that have not expired yet: \
                     issue scopes with shorter lives, or revoke with the operator token",
                    bound.chat_id
                )));
            }
            live.push(bound.expires_at);
        }
        self.note_revoked(&bound.id, bound.expires_at);
        Ok(bound)
    }

    /// Notes a revoked scope id (from this instance or, through the store, another); forgets the ones past
    /// their expiry.
    pub fn note_revoked(&self, id: &str, until: Timestamp) {
        self.note_revoked_all(std::iter::once((id, until)));
    }

    /// Notes many revoked scope ids at once (the store's list, every second): the expired ones are pruned once
    /// per call, not once per id, so the work is linear in the list.
    pub fn note_revoked_all<'a>(&self, ids: impl IntoIterator<Item = (&'a str, Timestamp)>) {
        if let Ok(mut revoked) = self.revoked.lock() {
            let now = crate::clock::now();
            revoked.retain(|_, t| *t > now);
            for (id, until) in ids {
                if until > now && !revoked.contains_key(id) {
                    revoked.insert(id.to_owned(), until);
                }
            }
        }
    }
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding.
fn base64url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(BASE64URL[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// Base64url without padding; `None` on anything else.
fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = BASE64URL.iter().position(|x| *x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use serde_json::json;

    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_unix(secs).unwrap()
    }

    #[test]
    fn tokens_chat_lists_and_bound_scopes() {
        let auth = Auth::new(vec![
            Token { token: "admin".into(), chats: vec![] },
            Token { token: "bot-a".into(), chats: vec!["-1".into()] },
        ]);
        assert_eq!(auth.check(None, t(0)).unwrap_err().code, ErrorCode::Unauthorized);
        assert_eq!(auth.check(Some("Bearer nope"), t(0)).unwrap_err().code, ErrorCode::Unauthorized);
        assert_eq!(auth.check(Some("Bearer admin"), t(0)).unwrap(), Access::All);
        let a = auth.check(Some("Bearer bot-a"), t(0)).unwrap();
        assert!(a.allows("telegram", "-1") && !a.allows("telegram", "-2"));
        assert_eq!(
            a.decode_call("get_scenario", &json!({"chat_id": "-2"})).unwrap_err().code,
            ErrorCode::ForbiddenScope
        );

        let bound = Bound {
            channel: "telegram".into(),
            chat_id: "-1".into(),
            topic_id: Some("7".into()),
            current_message_id: Some("501".into()),
            sender_user_id: Some("42".into()),
            expires_at: t(100),
            id: String::new(),
            may_write_summary: false,
        };
        assert_eq!(
            auth.issue(&a, Bound { chat_id: "-2".into(), ..bound.clone() }, t(0)).unwrap_err().code,
            ErrorCode::ForbiddenScope
        );
        let (token, issued) = auth.issue(&a, bound, t(0)).unwrap();
        assert!(token.starts_with("cs2.") && issued.id.len() == 24);
        // Another server with the same key reads it; one with another key, or a changed token, does not.
        let same_key = Auth::with_scope_key(vec![], "k".repeat(32).as_str());
        let (shared, _) = same_key.issue(&Access::All, issued.clone(), t(0)).unwrap();
        let other = Auth::with_scope_key(vec![], "k".repeat(32).as_str());
        assert_eq!(other.read_scope(&shared).unwrap(), issued_with_id(&issued, &other.read_scope(&shared).unwrap().id));
        assert!(Auth::with_scope_key(vec![], "x".repeat(32).as_str()).read_scope(&shared).is_err());
        let tampered = shared.replacen("cs2.e", "cs2.f", 1);
        assert!(other.read_scope(&tampered).is_err());
        let scoped = auth.check(Some(&format!("Bearer {token}")), t(50)).unwrap();
        let call = scoped.decode_call("resolve_reference_target", &json!({"normalized_reference_hints": {}})).unwrap();
        let s = call.scope();
        assert_eq!(
            (s.chat_id.as_str(), s.topic_id.as_deref(), s.current_message_id.as_deref(), s.sender_user_id.as_deref()),
            ("-1", Some("7"), Some("501"), Some("42")),
            "the scope comes from the token"
        );
        assert_eq!(
            scoped.decode_call("get_scenario", &json!({"chat_id": "-100999"})).unwrap_err().code,
            ErrorCode::ForbiddenScope
        );
        // A scope reads the summary (it is in the history answer) but writes it only when issued to.
        let summary = json!({"text": "s", "covers_until_message_id": "501"});
        assert_eq!(scoped.decode_call("update_summary", &summary).unwrap_err().code, ErrorCode::ForbiddenScope);
        let (writer, _) = auth.issue(&a, Bound { may_write_summary: true, ..issued.clone() }, t(0)).unwrap();
        let writer = auth.check(Some(&format!("Bearer {writer}")), t(50)).unwrap();
        assert_eq!(writer.decode_call("update_summary", &summary).unwrap().scope().chat_id, "-1");
        assert!(
            a.decode_call("update_summary", &json!({"chat_id": "-1", "text": "s", "covers_until_message_id": "1"}))
                .is_ok()
        );
        // An empty channel means telegram, as the tools read it.
        let call = scoped.decode_call("get_scenario", &json!({"channel": "", "chat_id": "-1"})).unwrap();
        assert_eq!(call.scope().channel, "telegram");
        assert_eq!(
            auth.issue(
                &scoped,
                Bound {
                    expires_at: t(200),
                    ..match &scoped {
                        Access::Bound(b) => b.clone(),
                        _ => unreachable!(),
                    }
                },
                t(50)
            )
            .unwrap_err()
            .code,
            ErrorCode::ForbiddenScope,
            "a scope cannot mint another"
        );
        assert_eq!(
            auth.check(Some(&format!("Bearer {token}")), t(100)).unwrap_err().code,
            ErrorCode::Unauthorized,
            "expired"
        );
    }

    fn issued_with_id(b: &Bound, id: &str) -> Bound {
        Bound { id: id.to_owned(), ..b.clone() }
    }

    /// Issue 28, point 9: a chat-limited token may hold at most `MAX_REVOCATIONS_PER_CHAT` live revocations of
    /// one chat (through one instance); the operator token is not limited.
    #[test]
    fn revocations_per_chat_are_capped_for_limited_tokens() {
        let auth = Auth::new(vec![Token { token: "admin-0123456789abcdef".into(), chats: vec![] }]);
        let bot = Access::Chats(vec!["-1".into()]);
        let bound = |n: u32| Bound {
            channel: "telegram".into(),
            chat_id: "-1".into(),
            topic_id: None,
            current_message_id: Some(n.to_string()),
            sender_user_id: None,
            expires_at: Timestamp::from_unix(i64::from(u32::MAX)).unwrap(),
            id: String::new(),
            may_write_summary: false,
        };
        for n in 0..MAX_REVOCATIONS_PER_CHAT as u32 {
            let (token, _) = auth.issue(&bot, bound(n), t(0)).unwrap();
            auth.revoke(&bot, &token).unwrap();
        }
        let (token, _) = auth.issue(&bot, bound(u32::MAX), t(0)).unwrap();
        let e = auth.revoke(&bot, &token).unwrap_err();
        assert!(e.message.contains("not expired yet"), "{e}");
        auth.revoke(&Access::All, &token).unwrap();
    }

    /// Issue 28, point 9: the store's list is noted in one pass (pruned once, not once per id); ids already
    /// expired are not kept.
    #[test]
    fn revocations_are_noted_in_one_pass() {
        let auth = Auth::new(Vec::new());
        let far = Timestamp::from_unix(i64::from(u32::MAX)).unwrap();
        let ids: Vec<(String, Timestamp)> = (0..40_000).map(|i| (format!("s{i}"), far)).collect();
        auth.note_revoked_all(ids.iter().map(|(id, t)| (id.as_str(), *t)));
        auth.note_revoked_all(ids.iter().map(|(id, t)| (id.as_str(), *t)));
        auth.note_revoked_all([("gone", Timestamp::from_unix(1).unwrap())]);
        let revoked = auth.revoked.lock().unwrap();
        assert_eq!(revoked.len(), 40_000);
        assert!(!revoked.contains_key("gone"));
    }

    /// Issue 28, point 10: a bare chat id is bound to the platforms' channels; `CHANNEL:CHAT` to one channel.
    #[test]
    fn chat_lists_bind_channels() {
        let a = Access::Chats(vec!["600".into(), "custom:700".into()]);
        for ch in ["telegram", "discord", "slack"] {
            assert!(a.allows(ch, "600"), "{ch}");
        }
        assert!(!a.allows("made-up-1", "600") && !a.allows("made-up-2", "600"));
        assert!(a.allows("custom", "700") && !a.allows("telegram", "700") && !a.allows("custom", "600"));
    }

    #[test]
    fn revoked_scopes_stop_working() {
        let auth = Auth::new(vec![Token { token: "admin-0123456789abcdef".into(), chats: vec![] }]);
        let bound = Bound {
            channel: "telegram".into(),
            chat_id: "-1".into(),
            topic_id: None,
            current_message_id: None,
            sender_user_id: None,
            expires_at: Timestamp::from_unix(i64::from(u32::MAX)).unwrap(),
            id: String::new(),
            may_write_summary: false,
        };
        let (token, _) = auth.issue(&Access::All, bound, t(0)).unwrap();
        let header = format!("Bearer {token}");
        assert!(matches!(auth.check(Some(&header), t(10)), Ok(Access::Bound(_))));
        let limited = Access::Chats(vec!["-2".into()]);
        assert_eq!(auth.revoke(&limited, &token).unwrap_err().code, ErrorCode::ForbiddenScope);
        auth.revoke(&Access::All, &token).unwrap();
        assert_eq!(auth.check(Some(&header), t(10)).unwrap_err().code, ErrorCode::Unauthorized);
    }

    #[test]
    fn base64url_round_trips() {
        for n in 0..40u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(base64url_decode(&base64url_encode(&bytes)).unwrap(), bytes);
        }
        assert_eq!(base64url_encode(b"hi?"), "aGk_");
    }

    #[test]
    fn open_without_tokens() {
        assert_eq!(Auth::new(vec![]).check(None, t(0)).unwrap(), Access::Open);
    }
}
