//! Who may call the server (issue 6): bearer tokens from `server.tokens`, each optionally limited to some
//! chats, and bound scopes: short-lived tokens issued by `POST /v1/scopes` that pin one chat (and optionally
//! its topic, current message and sender), so a model in a tool loop holding one can never reach another chat.
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bound {
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

fn forbidden(chat: &str) -> Error {
    Error::new(ErrorCode::ForbiddenScope, format!("this credential may not touch chat {chat:?}"))
}

impl Access {
    /// Whether the request may touch `chat` on `channel`.
    pub fn allows(&self, channel: &str, chat: &str) -> bool {
        match self {
            Access::Open | Access::All => true,
            Access::Chats(list) => list.iter().any(|c| c == chat),
            Access::Bound(b) => b.channel == channel && b.chat_id == chat,
        }
    }

    /// Reads a tool call as the credential allows: a bound scope supplies its chat (and topic, current
    /// message, sender where the call names none) and refuses any other chat; a chat list refuses chats not
    /// on it.
    pub fn decode_call(&self, tool: &str, args: &Value) -> Result<ToolCall, Error> {
        let call = match self {
            Access::Bound(b) => ToolCall::decode_with(tool, args, Some(&b.scope()))?,
            _ => ToolCall::decode(tool, args)?,
        };
        let scope = call.scope();
        if !self.allows(&scope.channel, &scope.chat_id) {
            return Err(forbidden(&scope.chat_id));
        }
        self.topic(scope.topic_id.as_deref())?;
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
        }
    }
}

/// The server's credentials.
pub struct Auth {
    tokens: Vec<Token>,
    scopes: Mutex<HashMap<String, Bound>>,
    rng: SystemRandom,
}

/// The token of an `Authorization: Bearer …` header, whatever the case of the scheme.
fn bearer_token(header: &str) -> Option<&str> {
    header.split_once(' ').filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer")).map(|(_, t)| t.trim())
}

/// Compares secrets in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Auth {
    /// Credentials from `server.tokens`.
    pub fn new(tokens: Vec<Token>) -> Self {
        Self { tokens, scopes: Mutex::new(HashMap::new()), rng: SystemRandom::new() }
    }

    /// Whether requests need a token.
    pub fn required(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// What the `Authorization` header allows at `now`.
    pub fn check(&self, header: Option<&str>, now: Timestamp) -> Result<Access, Error> {
        let unauthorized =
            || Error::new(ErrorCode::Unauthorized, "a valid `Authorization: Bearer <token>` is required");
        // The scheme is case-insensitive (RFC 7235): `Bearer`, `bearer`, `BEARER`.
        let Some(token) = header.and_then(bearer_token) else {
            return if self.tokens.is_empty() { Ok(Access::Open) } else { Err(unauthorized()) };
        };
        if let Some(t) = self.tokens.iter().find(|t| same(&t.token, token)) {
            return Ok(if t.chats.is_empty() { Access::All } else { Access::Chats(t.chats.clone()) });
        }
        let scopes = self.scopes.lock().map_err(|_| Error::new(ErrorCode::Internal, "auth state poisoned"))?;
        // A hash lookup, not a scan: there may be a scope per conversation turn. Scoped tokens are 192 random
        // bits, so what a lookup's timing could reveal does not help guess one.
        match scopes.get(token) {
            Some(b) if now < b.expires_at => Ok(Access::Bound(b.clone())),
            Some(_) => Err(Error::new(ErrorCode::Unauthorized, "this scoped token has expired")),
            None if self.tokens.is_empty() => Ok(Access::Open),
            None => Err(unauthorized()),
        }
    }

    /// Issues a bound scope; `access` must be allowed to touch its chat (a bound scope cannot issue another).
    pub fn issue(&self, access: &Access, bound: Bound, now: Timestamp) -> Result<String, Error> {
        access.not_a_scope("issue scopes")?;
        if !access.allows(&bound.channel, &bound.chat_id) {
            return Err(forbidden(&bound.chat_id));
        }
        let mut bytes = [0u8; 24];
        self.rng.fill(&mut bytes).map_err(|_| Error::new(ErrorCode::Internal, "no randomness available"))?;
        let token: String = std::iter::once("cs_".to_owned()).chain(bytes.iter().map(|b| format!("{b:02x}"))).collect();
        let mut scopes = self.scopes.lock().map_err(|_| Error::new(ErrorCode::Internal, "auth state poisoned"))?;
        scopes.retain(|_, b| now < b.expires_at);
        scopes.insert(token.clone(), bound);
        Ok(token)
    }
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
        };
        assert_eq!(
            auth.issue(&a, Bound { chat_id: "-2".into(), ..bound.clone() }, t(0)).unwrap_err().code,
            ErrorCode::ForbiddenScope
        );
        let token = auth.issue(&a, bound, t(0)).unwrap();
        assert!(token.starts_with("cs_") && token.len() == 51);
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

    #[test]
    fn open_without_tokens() {
        assert_eq!(Auth::new(vec![]).check(None, t(0)).unwrap(), Access::Open);
    }
}
