//! The configuration file's shape, one typed section per `[table]`: every key optional, read by serde, then
//! laid over the defaults. A bad value is an error naming its key (`history.mode: expected one of …`); a key
//! that is not here is reported as unknown by the caller, never silently dropped.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use chatctx_core::kinds::ObjectKind;
use chatctx_core::settings::{Format, Mode, OnTriageError, Policy, Scope, Selector};
use chatctx_core::time::Span;
use serde::Deserialize;

use super::{Config, Token};

/// The deepest `server.max_json_depth` may be: well inside what the log reader accepts
/// ([`crate::logline::READ_DEPTH`]), whatever a stored line wraps around the input.
pub const MAX_JSON_DEPTH: usize = 256;

/// The whole file.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct File {
    history: History,
    conversation: Conversation,
    llm: Llm,
    objects: Objects,
    state: State,
    resolver: Resolver,
    prompt: Prompt,
    server: Server,
    store: Store,
    telemetry: Telemetry,
    decisions: Decisions,
    summary: Summary,
    slack: Slack,
}

/// `[slack]`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Slack {
    signing_secret: Option<String>,
}

/// The sections a file may have.
pub(super) const SECTIONS: &[&str] = &[
    "history",
    "conversation",
    "llm",
    "objects",
    "state",
    "resolver",
    "prompt",
    "server",
    "store",
    "telemetry",
    "decisions",
    "summary",
    "slack",
];

/// `[summary]`: the engine's use of summaries and the background summarizer.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Summary {
    enabled: Option<bool>,
    every_n_messages: Option<usize>,
    model: Option<String>,
    prompt: Option<String>,
    max_tokens: Option<u32>,
    timeout: Option<Span>,
    max_input_messages: Option<usize>,
    queue: Option<usize>,
    max_chars: Option<usize>,
    max_share: Option<f64>,
}

/// The largest `decisions.keep`: records per chat.
pub const MAX_DECISIONS_KEEP: usize = 1000;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Decisions {
    keep: Option<usize>,
    max_bytes: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Telemetry {
    otlp_endpoint: Option<String>,
    service_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct History {
    mode: Option<Mode>,
    policy: Option<Policy>,
    scope: Option<Scope>,
    format: Option<Format>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Conversation {
    enabled: Option<bool>,
    lookback_count: Option<usize>,
    skip_selection_threshold: Option<usize>,
    selection_model: Option<String>,
    selection_timeout: Option<f64>,
    use_selection: Option<bool>,
    always_include_recent: Option<usize>,
    context_truncation: Option<usize>,
    context_recency_hours: Option<f64>,
    context_min_messages: Option<usize>,
    previous_tasks_count: Option<usize>,
    cache_max_per_conversation: Option<usize>,
    max_people: Option<usize>,
    max_workspaces: Option<usize>,
    max_topics: Option<usize>,
    on_triage_error: Option<OnTriageError>,
    selector: Option<Selector>,
    lexical_keep: Option<usize>,
    max_context_tokens: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Llm {
    base_url: Option<String>,
    api_key_env: Option<String>,
    /// Role alias → model name.
    models: BTreeMap<String, String>,
    max_response_bytes: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Objects {
    max_per_chat: Option<usize>,
    /// Per kind (`"media.image" = "1h"`), and `close_grace`.
    ttl: BTreeMap<String, Span>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct State {
    max_bytes: Option<usize>,
    max_depth: Option<usize>,
    merge_depth: Option<u32>,
    merge_depth_by_key: BTreeMap<String, u32>,
    keep_revisions: Option<usize>,
    /// A JSON Schema file, relative to the configuration file.
    schema_file: Option<String>,
}

/// The resolver's weights (any number), windows (whole numbers, at most 1,000) and half-life.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Resolver {
    exact_reply_target: Option<f64>,
    in_reply_chain: Option<f64>,
    same_topic: Option<f64>,
    currently_active: Option<f64>,
    kind_match: Option<f64>,
    bot_created: Option<f64>,
    owned_by_sender: Option<f64>,
    not_owned: Option<f64>,
    recency: Option<f64>,
    touched_in_interaction: Option<f64>,
    weak_scope_fallback: Option<f64>,
    stale_penalty: Option<f64>,
    positional_hint: Option<f64>,
    ordinal_hint: Option<f64>,
    typed_object: Option<f64>,
    carrier_message: Option<f64>,
    min_score: Option<f64>,
    ambiguity_gap: Option<f64>,
    recency_half_life: Option<Span>,
    reply_chain_depth: Option<usize>,
    scope_window: Option<usize>,
    message_window: Option<usize>,
    require_reference: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Prompt {
    system: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Server {
    listen: Option<String>,
    request_timeout: Option<Span>,
    header_read_timeout: Option<Span>,
    max_connections: Option<usize>,
    max_json_depth: Option<usize>,
    max_batch_items: Option<usize>,
    max_rejections: Option<usize>,
    blocking_threads: Option<usize>,
    allowed_hosts: Option<Vec<String>>,
    public_metrics: Option<bool>,
    scope_key: Option<String>,
    tokens: Vec<TokenEntry>,
}

/// The shortest token accepted.
const MIN_TOKEN_CHARS: usize = 16;

/// A bearer token: the secret alone (every chat), or `{ token = "…", chats = [...] }`.
struct TokenEntry(Token);

impl<'de> Deserialize<'de> for TokenEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let chat = |v: toml::Value| match v {
            toml::Value::String(s) => Ok(s),
            toml::Value::Integer(n) => Ok(n.to_string()),
            v => Err(D::Error::custom(format!("expected chat ids, got {v}"))),
        };
        let secret = |token: String| {
            if token.trim() != token {
                return Err(D::Error::custom("the token has spaces around it, which no request can send"));
            }
            if token.chars().count() < MIN_TOKEN_CHARS {
                return Err(D::Error::custom(format!(
                    "a token needs at least {MIN_TOKEN_CHARS} characters (e.g. `openssl rand -hex 24`)"
                )));
            }
            Ok(token)
        };
        match toml::Value::deserialize(d)? {
            toml::Value::String(token) => Ok(Self(Token { token: secret(token)?, chats: Vec::new() })),
            toml::Value::Table(mut t) => {
                let Some(toml::Value::String(token)) = t.remove("token") else {
                    return Err(D::Error::custom("needs token = \"…\""));
                };
                let token = secret(token)?;
                let chats = match t.remove("chats") {
                    None => Vec::new(),
                    Some(toml::Value::Array(a)) if a.is_empty() => {
                        return Err(D::Error::custom(
                            "chats = [] would read as no limit: list the chats, or leave `chats` out to allow every chat",
                        ));
                    }
                    Some(toml::Value::Array(a)) => a.into_iter().map(chat).collect::<Result<_, _>>()?,
                    Some(v) => return Err(D::Error::custom(format!("chats: expected a list of chat ids, got {v}"))),
                };
                if let Some(k) = t.keys().next() {
                    return Err(D::Error::custom(format!("unknown key `{k}` (a token has `token` and `chats`)")));
                }
                Ok(Self(Token { token, chats }))
            }
            v => Err(D::Error::custom(format!("expected a token string or {{ token, chats }}, got {v}"))),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Store {
    url: Option<String>,
    max_age: Option<Span>,
    pool_size: Option<usize>,
    check_timeout: Option<Span>,
    compact_after: Option<u64>,
    stop_snapshot_timeout: Option<Span>,
}

/// Sets each `$field` of `$into` that the section `$from` names.
macro_rules! lay {
    ($from:expr => $into:expr; $($field:ident),+ $(,)?) => {$(
        if let Some(v) = $from.$field {
            $into.$field = v;
        }
    )+};
}

impl File {
    /// The file laid over the defaults, checked; relative file names (`state.schema_file`) are taken from
    /// `base`. Keys that name nothing (unknown TTL kinds) are added to `unknown`.
    pub(super) fn apply(self, base: &Path, unknown: &mut Vec<String>) -> Result<Config> {
        let mut c = Config::default();
        lay!(self.history => c.core.history; mode, policy, scope, format);
        self.conversation.apply(&mut c)?;
        c.llm.base_url = self.llm.base_url;
        c.llm.api_key_env = self.llm.api_key_env;
        c.llm.models = self.llm.models;
        if let Some(n) = self.llm.max_response_bytes {
            ensure!(n >= 1024, "llm.max_response_bytes: at least 1024 (an answer's envelope alone is more)");
            c.llm.max_response_bytes = n;
        }
        self.objects.apply(&mut c, unknown)?;
        self.state.apply(&mut c, base)?;
        self.resolver.apply(&mut c)?;
        lay!(self.prompt => c.core.prompt; system);
        self.server.apply(&mut c)?;
        lay!(self.store => c.store; url, max_age, pool_size, check_timeout, compact_after, stop_snapshot_timeout);
        ensure!(c.store.pool_size >= 1, "store.pool_size: must be at least 1");
        if let Some(url) = self.telemetry.otlp_endpoint.filter(|u| !u.is_empty()) {
            ensure!(
                url.starts_with("http://") || url.starts_with("https://"),
                "telemetry.otlp_endpoint: expected the OTLP/HTTP base URL, http://HOST:4318, got `{url}`"
            );
            c.telemetry.otlp_endpoint = Some(url.trim_end_matches('/').to_owned());
        }
        lay!(self.telemetry => c.telemetry; service_name);
        lay!(self.decisions => c.core.decisions; keep, max_bytes);
        self.summary.apply(&mut c)?;
        if let Some(s) = self.slack.signing_secret.filter(|s| !s.is_empty()) {
            ensure!(
                s.trim() == s && s.len() >= 16,
                "slack.signing_secret: the app's signing secret (Basic Information page)"
            );
            c.slack_signing_secret = Some(s);
        }
        ensure!(
            c.core.decisions.keep <= MAX_DECISIONS_KEEP,
            "decisions.keep: at most {MAX_DECISIONS_KEEP} records per chat (0 turns records off), got {}",
            c.core.decisions.keep
        );
        ensure!(!c.telemetry.service_name.is_empty(), "telemetry.service_name: must not be empty");
        Ok(c)
    }
}

impl Summary {
    fn apply(self, c: &mut Config) -> Result<()> {
        for (key, v, max) in [
            ("every_n_messages", self.every_n_messages, 10_000),
            ("max_input_messages", self.max_input_messages, 1_000),
            ("queue", self.queue, 100_000),
            ("max_chars", self.max_chars, 100_000),
        ] {
            if let Some(v) = v {
                ensure!((1..=max).contains(&v), "summary.{key}: between 1 and {max}, got {v}");
            }
        }
        if let Some(t) = self.max_tokens {
            ensure!((1..=32_768).contains(&t), "summary.max_tokens: between 1 and 32768, got {t}");
        }
        if let Some(t) = self.timeout {
            ensure!(t.secs() >= 1, "summary.timeout: at least 1s");
        }
        if let Some(x) = self.max_share {
            ensure!((0.0..=1.0).contains(&x), "summary.max_share: between 0 and 1, got {x}");
        }
        if let Some(p) = &self.prompt {
            ensure!(!p.trim().is_empty(), "summary.prompt: must not be empty (leave it out for the built-in one)");
        }
        lay!(self => c.core.summary; max_chars, max_share);
        lay!(self => c.summary; enabled, every_n_messages, model, prompt, max_tokens, timeout, max_input_messages, queue);
        ensure!(
            !c.summary.enabled || c.llm.base_url.as_deref().is_some_and(|u| !u.is_empty()),
            "summary.enabled: the summarizer calls the [llm] endpoint; set llm.base_url"
        );
        Ok(())
    }
}

impl Conversation {
    fn apply(self, c: &mut Config) -> Result<()> {
        for (key, v) in
            [("selection_timeout", self.selection_timeout), ("context_recency_hours", self.context_recency_hours)]
        {
            if let Some(x) = v {
                ensure!(x >= 0.0 && x.is_finite(), "conversation.{key}: expected a non-negative number, got {x}");
            }
        }
        let cv = &mut c.core.conversation;
        lay!(self => cv;
            enabled, lookback_count, skip_selection_threshold, selection_model, selection_timeout, use_selection,
            always_include_recent, context_truncation, context_recency_hours, context_min_messages,
            previous_tasks_count, cache_max_per_conversation, max_people, max_workspaces, max_topics, on_triage_error,
            selector, lexical_keep,
            max_context_tokens);
        ensure!(cv.cache_max_per_conversation >= 1, "conversation.cache_max_per_conversation: must be at least 1");
        ensure!(cv.max_people >= 16, "conversation.max_people: must be at least 16");
        ensure!(cv.max_topics >= 1, "conversation.max_topics: must be at least 1");
        ensure!(cv.max_workspaces >= 1, "conversation.max_workspaces: must be at least 1");
        Ok(())
    }
}

impl Objects {
    fn apply(self, c: &mut Config, unknown: &mut Vec<String>) -> Result<()> {
        if let Some(v) = self.max_per_chat {
            ensure!(v >= 1, "objects.max_per_chat: must be at least 1");
            c.core.objects.max_per_chat = v;
        }
        for (key, span) in self.ttl {
            match ObjectKind::parse(&key) {
                Some(kind) => c.core.objects.set_ttl(kind, span),
                None if key == "close_grace" => c.core.objects.close_grace = span,
                None => unknown.push(format!("objects.ttl.{key}")),
            }
        }
        Ok(())
    }
}

impl State {
    fn apply(self, c: &mut Config, base: &Path) -> Result<()> {
        let st = &mut c.core.state;
        if let Some(d) = self.max_depth {
            ensure!((1..=MAX_JSON_DEPTH).contains(&d), "state.max_depth: between 1 and {MAX_JSON_DEPTH}");
        }
        lay!(self => st; max_bytes, max_depth, merge_depth, keep_revisions);
        st.merge_depth_by_key = self.merge_depth_by_key;
        if let Some(file) = self.schema_file {
            let path = base.join(&file);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("state.schema_file: cannot read {}", path.display()))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("state.schema_file: {} is not JSON", path.display()))?;
            st.schema = Some(
                chatctx_core::schema::Schema::new(v)
                    .map_err(|e| anyhow::anyhow!("state.schema_file {}: {e}", path.display()))?,
            );
        }
        Ok(())
    }
}

impl Resolver {
    fn apply(self, c: &mut Config) -> Result<()> {
        for (key, v) in [
            ("reply_chain_depth", self.reply_chain_depth),
            ("scope_window", self.scope_window),
            ("message_window", self.message_window),
        ] {
            if v.is_some_and(|v| v > 1000) {
                bail!("resolver.{key}: at most 1000 (it bounds the work of every call)");
            }
        }
        let r = &mut c.core.resolver;
        lay!(self => r;
            exact_reply_target, in_reply_chain, same_topic, currently_active, kind_match, bot_created,
            owned_by_sender, not_owned, recency, touched_in_interaction, weak_scope_fallback, stale_penalty,
            positional_hint, ordinal_hint, typed_object, carrier_message, min_score, ambiguity_gap,
            recency_half_life, reply_chain_depth, scope_window, message_window, require_reference);
        Ok(())
    }
}

impl Server {
    fn apply(self, c: &mut Config) -> Result<()> {
        for (key, t) in [("request_timeout", self.request_timeout), ("header_read_timeout", self.header_read_timeout)] {
            if let Some(t) = t {
                ensure!(t.secs() >= 1, "server.{key}: at least 1s");
            }
        }
        if let Some(d) = self.max_json_depth {
            ensure!((8..=MAX_JSON_DEPTH).contains(&d), "server.max_json_depth: between 8 and {MAX_JSON_DEPTH}");
        }
        for (key, v) in [
            ("max_connections", self.max_connections),
            ("max_batch_items", self.max_batch_items),
            ("blocking_threads", self.blocking_threads),
        ] {
            ensure!(v != Some(0), "server.{key}: must be at least 1");
        }
        if let Some(k) = &self.scope_key {
            ensure!(
                k.trim() == k && k.chars().count() >= 32,
                "server.scope_key: at least 32 characters, no spaces around"
            );
        }
        c.server.scope_key = self.scope_key.clone();
        lay!(self => c.server;
            listen, request_timeout, header_read_timeout, max_connections, max_json_depth, max_batch_items,
            max_rejections, blocking_threads, allowed_hosts, public_metrics);
        c.server.tokens = self.tokens.into_iter().map(|t| t.0).collect();
        Ok(())
    }
}
