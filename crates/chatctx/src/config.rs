//! Configuration (docs/protocol.md §8): built-in defaults < TOML file < `CHATCTX_SECTION__KEY` environment < CLI flags.
//!
//! The file and the environment are merged into one TOML table, then read key by key into validated
//! settings. A key chatctx does not know is reported (with where it came from), never silently ignored; a
//! known key with a bad value is an error naming the key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result, bail};
use chatctx_core::kinds::ObjectKind;
use chatctx_core::settings::{Format, Mode, OnTriageError, Policy, Scope, Selector, Settings};
use chatctx_core::time::Span;
use toml::{Table, Value};

/// The environment prefix.
pub const ENV_PREFIX: &str = "CHATCTX_";

/// Everything chatctx is configured with.
#[derive(Clone, Default)]
pub struct Config {
    /// What the engine uses.
    pub core: Settings,
    /// `[llm]`.
    pub llm: LlmSettings,
    /// `[server]`.
    pub server: ServerSettings,
    /// `[store]`.
    pub store: StoreSettings,
}

/// `[llm]`: an OpenAI-compatible endpoint. Without `base_url` no model is configured.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LlmSettings {
    /// e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Role alias → model name.
    pub models: BTreeMap<String, String>,
}

/// One bearer token and the chats it may touch (all when empty).
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    /// The secret.
    pub token: String,
    /// Allowed chats; empty = every chat.
    pub chats: Vec<String>,
}

/// `[server]`.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerSettings {
    /// Listen address.
    pub listen: String,
    /// Bearer tokens.
    pub tokens: Vec<Token>,
    /// How long a request may run before it is answered 503 `timeout` (not `/mcp` streams).
    pub request_timeout: Span,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self { listen: "127.0.0.1:7878".to_owned(), tokens: Vec::new(), request_timeout: Span::from_secs(30) }
    }
}

/// `[store]`.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreSettings {
    /// `memory`, `sqlite://PATH` or `postgres://…`.
    pub url: String,
    /// History older than this is forgotten, in memory and in the store (`0` keeps everything).
    pub max_age: Span,
    /// PostgreSQL: the most connections one instance opens.
    pub pool_size: usize,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self { url: "sqlite://chatctx.db".to_owned(), max_age: Span::from_secs(0), pool_size: 16 }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("core", &self.core)
            .field("llm.base_url", &self.llm.base_url)
            .field("llm.api_key_env", &self.llm.api_key_env)
            .field("llm.models", &self.llm.models)
            .field("server.listen", &self.server.listen)
            .field("server.request_timeout", &self.server.request_timeout)
            .field("server.tokens", &format_args!("[{} hidden]", self.server.tokens.len()))
            .field("store.url", &redact_url(&self.store.url))
            .field("store.max_age", &self.store.max_age)
            .field("store.pool_size", &self.store.pool_size)
            .finish()
    }
}

/// A URL with any password replaced by `***`.
/// `url` with its password (if any) replaced by `***`, for logs.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => match url[s + 3..at].find(':') {
            Some(c) => format!("{}:***{}", &url[..s + 3 + c], &url[at..]),
            None => url.to_owned(),
        },
        _ => url.to_owned(),
    }
}

/// A loaded configuration and the unknown keys it contained.
pub struct Loaded {
    /// The settings.
    pub config: Config,
    /// One line per unknown key, naming it and where it came from.
    pub warnings: Vec<String>,
}

/// Loads `file` (if any) and the `CHATCTX_…` variables of `env`.
pub fn load(file: Option<&Path>, env: impl IntoIterator<Item = (String, String)>) -> Result<Loaded> {
    let mut table = match file {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("cannot read config file {}", p.display()))?;
            text.parse::<Table>().with_context(|| format!("config file {} is not valid TOML", p.display()))?
        }
        None => Table::new(),
    };
    let mut from_env = Vec::new();
    for (name, raw) in env {
        let Some(rest) = name.strip_prefix(ENV_PREFIX) else { continue };
        if !rest.contains("__") {
            continue; // CHATCTX_LOG and friends are not configuration keys.
        }
        let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
        set_path(&mut table, &path, env_value(&raw)).with_context(|| format!("environment variable {name}"))?;
        from_env.push(path.join("."));
    }
    let mut warnings = Vec::new();
    let base = file.and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    let config = read(table, &base, &mut warnings)?;
    for w in &mut warnings {
        let key = w.split('`').nth(1).unwrap_or_default();
        if from_env.iter().any(|e| e == key) {
            w.push_str(" (from the environment)");
        }
    }
    Ok(Loaded { config, warnings })
}

/// An environment value as TOML when it reads as a TOML value (`50`, `true`, `["a"]`), else as a string.
fn env_value(raw: &str) -> Value {
    format!("v = {raw}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(raw.to_owned()))
}

fn set_path(table: &mut Table, path: &[String], value: Value) -> Result<()> {
    let Some((last, parents)) = path.split_last() else { bail!("empty key") };
    let mut t = table;
    for p in parents {
        let entry = t.entry(p.clone()).or_insert_with(|| Value::Table(Table::new()));
        t = match entry {
            Value::Table(inner) => inner,
            _ => bail!("`{p}` is not a section"),
        };
    }
    // `objects.ttl` keys contain dots (`media.image`); in a variable name they are written with `_`.
    let in_ttl = parents.len() == 2 && parents[0] == "objects" && parents[1] == "ttl";
    let key = match last.strip_prefix("media_") {
        Some(rest) if in_ttl => format!("media.{rest}"),
        _ => last.clone(),
    };
    t.insert(key, value);
    Ok(())
}

/// Reads one section's keys; unknown ones become warnings.
struct Section<'a> {
    name: &'a str,
    table: Table,
}

impl Section<'_> {
    fn take(&mut self, key: &str) -> Option<Value> {
        self.table.remove(key)
    }

    fn path(&self, key: &str) -> String {
        format!("{}.{key}", self.name)
    }

    fn string(&mut self, key: &str) -> Result<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => bail!("{}: expected a string, got {v}", self.path(key)),
        }
    }

    fn choice<T: Copy>(&mut self, key: &str, options: &[(&str, T)]) -> Result<Option<T>> {
        let Some(s) = self.string(key)? else { return Ok(None) };
        match options.iter().find(|(n, _)| *n == s) {
            Some((_, v)) => Ok(Some(*v)),
            None => {
                let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
                bail!("{}: expected one of {}, got {s:?}", self.path(key), names.join(", "))
            }
        }
    }

    fn count(&mut self, key: &str) -> Result<Option<usize>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Integer(n)) => {
                usize::try_from(n).map(Some).map_err(|_| anyhow::anyhow!("{}: must not be negative", self.path(key)))
            }
            Some(v) => bail!("{}: expected a whole number, got {v}", self.path(key)),
        }
    }

    fn number(&mut self, key: &str) -> Result<Option<f64>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Integer(n)) if n >= 0 => Ok(Some(n as f64)),
            Some(Value::Float(x)) if x >= 0.0 && x.is_finite() => Ok(Some(x)),
            Some(v) => bail!("{}: expected a non-negative number, got {v}", self.path(key)),
        }
    }

    fn signed(&mut self, key: &str) -> Result<Option<f64>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Integer(n)) => Ok(Some(n as f64)),
            Some(Value::Float(x)) if x.is_finite() => Ok(Some(x)),
            Some(v) => bail!("{}: expected a number, got {v}", self.path(key)),
        }
    }

    fn boolean(&mut self, key: &str) -> Result<Option<bool>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(b)),
            Some(v) => bail!("{}: expected true or false, got {v}", self.path(key)),
        }
    }

    fn span(&mut self, key: &str) -> Result<Option<Span>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Span::parse(&s).map(Some).map_err(|e| anyhow::anyhow!("{}: {e}", self.path(key))),
            Some(Value::Integer(n)) if n >= 0 => Ok(Some(Span::from_secs(n))),
            Some(v) => bail!("{}: expected a duration such as \"2h\", got {v}", self.path(key)),
        }
    }

    fn finish(self, warnings: &mut Vec<String>) {
        for key in self.table.keys() {
            warnings.push(format!("unknown configuration key `{}.{key}` is ignored", self.name));
        }
    }
}

fn section<'a>(root: &mut Table, name: &'a str) -> Result<Section<'a>> {
    match root.remove(name) {
        None => Ok(Section { name, table: Table::new() }),
        Some(Value::Table(table)) => Ok(Section { name, table }),
        Some(v) => bail!("`{name}` must be a section, got {v}"),
    }
}

/// Reads the merged table; relative file names (`state.schema_file`) are taken from `base`.
fn read(mut root: Table, base: &Path, warnings: &mut Vec<String>) -> Result<Config> {
    let mut c = Config::default();

    let mut s = section(&mut root, "history")?;
    let h = &mut c.core.history;
    if let Some(v) =
        s.choice("mode", &[("talkative", Mode::Talkative), ("smart", Mode::Smart), ("strict", Mode::Strict)])?
    {
        h.mode = v;
    }
    if let Some(v) = s.choice("policy", &[("selection", Policy::Selection), ("mode_cap", Policy::ModeCap)])? {
        h.policy = v;
    }
    if let Some(v) = s.choice("scope", &[("topic", Scope::Topic), ("chat", Scope::Chat)])? {
        h.scope = v;
    }
    if let Some(v) = s.choice("format", &[("single", Format::Single), ("per_item", Format::PerItem)])? {
        h.format = v;
    }
    s.finish(warnings);

    let mut s = section(&mut root, "conversation")?;
    let cv = &mut c.core.conversation;
    macro_rules! set {
        ($field:ident, $getter:ident) => {
            if let Some(v) = s.$getter(stringify!($field))? {
                cv.$field = v;
            }
        };
    }
    set!(enabled, boolean);
    set!(lookback_count, count);
    set!(skip_selection_threshold, count);
    set!(selection_model, string);
    set!(selection_timeout, number);
    set!(use_selection, boolean);
    set!(always_include_recent, count);
    set!(context_truncation, count);
    set!(context_recency_hours, number);
    set!(context_min_messages, count);
    set!(previous_tasks_count, count);
    set!(cache_max_per_conversation, count);
    set!(lexical_keep, count);
    set!(max_context_tokens, count);
    if let Some(v) = s.choice(
        "on_triage_error",
        &[("recent_only", OnTriageError::RecentOnly), ("keep_all", OnTriageError::KeepAll)],
    )? {
        cv.on_triage_error = v;
    }
    if let Some(v) = s.choice("selector", &[("model", Selector::Model), ("lexical", Selector::Lexical)])? {
        cv.selector = v;
    }
    if cv.cache_max_per_conversation == 0 {
        bail!("conversation.cache_max_per_conversation: must be at least 1");
    }
    s.finish(warnings);

    let mut s = section(&mut root, "llm")?;
    c.llm.base_url = s.string("base_url")?;
    c.llm.api_key_env = s.string("api_key_env")?;
    match s.take("models") {
        None => {}
        Some(Value::Table(t)) => {
            for (role, model) in t {
                match model {
                    Value::String(m) => {
                        c.llm.models.insert(role, m);
                    }
                    v => bail!("llm.models.{role}: expected a model name, got {v}"),
                }
            }
        }
        Some(v) => bail!("llm.models: expected a table such as {{ fast = \"qwen2.5:1.5b\" }}, got {v}"),
    }
    s.finish(warnings);

    let mut objects = section(&mut root, "objects")?;
    if let Some(v) = objects.count("max_per_chat")? {
        if v == 0 {
            bail!("objects.max_per_chat: must be at least 1");
        }
        c.core.objects.max_per_chat = v;
    }
    let mut ttl = match objects.take("ttl") {
        None => Section { name: "objects.ttl", table: Table::new() },
        Some(Value::Table(table)) => Section { name: "objects.ttl", table },
        Some(v) => bail!("objects.ttl must be a section, got {v}"),
    };
    objects.finish(warnings);
    for &kind in ObjectKind::ALL {
        if let Some(span) = ttl.span(kind.as_str())? {
            c.core.objects.set_ttl(kind, span);
        }
    }
    if let Some(g) = ttl.span("close_grace")? {
        c.core.objects.close_grace = g;
    }
    ttl.finish(warnings);

    let mut s = section(&mut root, "state")?;
    let st = &mut c.core.state;
    if let Some(v) = s.count("max_bytes")? {
        st.max_bytes = v;
    }
    if let Some(v) = s.count("merge_depth")? {
        st.merge_depth = u32::try_from(v).unwrap_or(u32::MAX);
    }
    if let Some(v) = s.count("keep_revisions")? {
        st.keep_revisions = v;
    }
    if let Some(file) = s.string("schema_file")? {
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
    match s.take("merge_depth_by_key") {
        None => {}
        Some(Value::Table(t)) => {
            for (k, v) in t {
                match v {
                    Value::Integer(n) if n >= 0 => {
                        st.merge_depth_by_key.insert(k, u32::try_from(n).unwrap_or(u32::MAX));
                    }
                    v => bail!("state.merge_depth_by_key.{k}: expected a whole number, got {v}"),
                }
            }
        }
        Some(v) => bail!("state.merge_depth_by_key: expected a table such as {{ household = 2 }}, got {v}"),
    }
    s.finish(warnings);

    let mut s = section(&mut root, "resolver")?;
    let r = &mut c.core.resolver;
    macro_rules! weight {
        ($($field:ident),+) => {$(
            if let Some(v) = s.signed(stringify!($field))? {
                r.$field = v;
            }
        )+};
    }
    weight!(
        exact_reply_target,
        in_reply_chain,
        same_topic,
        currently_active,
        kind_match,
        bot_created,
        owned_by_sender,
        not_owned,
        recency,
        touched_in_interaction,
        weak_scope_fallback,
        stale_penalty,
        positional_hint,
        ordinal_hint,
        typed_object,
        carrier_message,
        min_score,
        ambiguity_gap
    );
    if let Some(v) = s.span("recency_half_life")? {
        r.recency_half_life = v;
    }
    for (key, field) in [
        ("reply_chain_depth", &mut r.reply_chain_depth),
        ("scope_window", &mut r.scope_window),
        ("message_window", &mut r.message_window),
    ] {
        if let Some(v) = s.count(key)? {
            if v > 1000 {
                bail!("resolver.{key}: at most 1000 (it bounds the work of every call)");
            }
            *field = v;
        }
    }
    s.finish(warnings);

    let mut s = section(&mut root, "prompt")?;
    if let Some(v) = s.string("system")? {
        c.core.prompt.system = v;
    }
    s.finish(warnings);

    let mut s = section(&mut root, "server")?;
    if let Some(v) = s.string("listen")? {
        c.server.listen = v;
    }
    if let Some(v) = s.span("request_timeout")? {
        if v.secs() < 1 {
            bail!("server.request_timeout: at least 1s");
        }
        c.server.request_timeout = v;
    }
    match s.take("tokens") {
        None => {}
        Some(Value::Array(list)) => {
            for (i, t) in list.into_iter().enumerate() {
                c.server.tokens.push(match t {
                    Value::String(token) => Token { token, chats: Vec::new() },
                    Value::Table(mut t) => {
                        let Some(Value::String(token)) = t.remove("token") else {
                            bail!("server.tokens[{i}]: needs token = \"…\"")
                        };
                        let chats = match t.remove("chats") {
                            None => Vec::new(),
                            Some(Value::Array(a)) => a
                                .into_iter()
                                .map(|v| match v {
                                    Value::String(s) => Ok(s),
                                    Value::Integer(n) => Ok(n.to_string()),
                                    v => bail!("server.tokens[{i}].chats: expected chat ids, got {v}"),
                                })
                                .collect::<Result<_>>()?,
                            Some(v) => bail!("server.tokens[{i}].chats: expected a list of chat ids, got {v}"),
                        };
                        for k in t.keys() {
                            warnings.push(format!("unknown configuration key `server.tokens[{i}].{k}` is ignored"));
                        }
                        Token { token, chats }
                    }
                    v => bail!("server.tokens[{i}]: expected a token string or {{ token, chats }}, got {v}"),
                });
            }
        }
        Some(v) => bail!("server.tokens: expected a list, got {v}"),
    }
    s.finish(warnings);

    let mut s = section(&mut root, "store")?;
    if let Some(v) = s.string("url")? {
        c.store.url = v;
    }
    if let Some(v) = s.span("max_age")? {
        c.store.max_age = v;
    }
    if let Some(v) = s.count("pool_size")? {
        anyhow::ensure!(v >= 1, "store.pool_size: must be at least 1");
        c.store.pool_size = v;
    }
    s.finish(warnings);

    for (k, _) in root {
        warnings.push(format!("unknown configuration section or key `{k}` is ignored"));
    }
    Ok(c)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn load_str(toml: &str, env: &[(&str, &str)]) -> Result<Loaded> {
        let dir = std::env::temp_dir().join(format!("chatctx-config-{}-{}", std::process::id(), toml.len()));
        std::fs::write(&dir, toml)?;
        let r = load(Some(&dir), env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let _ = std::fs::remove_file(&dir);
        r
    }

    #[test]
    fn defaults_match_the_spec() {
        let l = load(None, Vec::new()).unwrap();
        let c = &l.config.core;
        assert_eq!(c.history.mode, Mode::Smart);
        assert_eq!(c.history.policy, Policy::Selection);
        assert_eq!(c.conversation.lookback_count, 25);
        assert_eq!(c.conversation.cache_max_per_conversation, 200);
        assert_eq!(c.objects.ttl(ObjectKind::Poll), Span::from_secs(86_400));
        assert_eq!(c.objects.ttl(ObjectKind::MediaVoice), Span::from_secs(3600));
        assert_eq!(c.state.max_bytes, 8192);
        assert_eq!(l.config.server.listen, "127.0.0.1:7878");
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn file_then_environment() {
        let l = load_str(
            "[history]\nmode = \"talkative\"\npolicy = \"mode_cap\"\n[conversation]\nlookback_count = 40\n[objects.ttl]\n\"media.image\" = \"3h\"\n",
            &[("CHATCTX_CONVERSATION__LOOKBACK_COUNT", "50"), ("CHATCTX_OBJECTS__TTL__MEDIA_VIDEO", "90m"), ("CHATCTX_LOG", "debug")],
        )
        .unwrap();
        let c = &l.config.core;
        assert_eq!(c.history.mode, Mode::Talkative);
        assert_eq!(c.history.policy, Policy::ModeCap);
        assert_eq!(c.conversation.lookback_count, 50, "the environment wins over the file");
        assert_eq!(c.objects.ttl(ObjectKind::MediaImage), Span::from_secs(3 * 3600));
        assert_eq!(c.objects.ttl(ObjectKind::MediaVideo), Span::from_secs(90 * 60));
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    }

    #[test]
    fn unknown_keys_are_reported() {
        let l = load_str("[history]\nmodee = \"smart\"\n[histroy]\nx = 1\n", &[("CHATCTX_CONVERSATION__LOOKBAK", "3")])
            .unwrap();
        let w = l.warnings.join("\n");
        assert!(w.contains("`history.modee`"), "{w}");
        assert!(w.contains("`histroy`"), "{w}");
        assert!(w.contains("`conversation.lookbak` is ignored (from the environment)"), "{w}");
    }

    #[test]
    fn bad_values_name_the_key() {
        for (toml, needle) in [
            ("[history]\nmode = \"chatty\"", "history.mode: expected one of talkative, smart, strict"),
            ("[conversation]\nlookback_count = -1", "conversation.lookback_count"),
            ("[conversation]\nselection_timeout = \"soon\"", "conversation.selection_timeout"),
            ("[objects.ttl]\npoll = \"a day\"", "objects.ttl.poll"),
            ("[server]\ntokens = [{ chats = [\"1\"] }]", "server.tokens[0]"),
            ("history = 3", "`history` must be a section"),
        ] {
            let e = format!("{:#}", load_str(toml, &[]).err().unwrap());
            assert!(e.contains(needle), "{toml}: {e}");
        }
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let l = load_str("[server]\ntokens = [\"s3cret\", { token = \"t0p\", chats = [\"-100\"] }]\n[store]\nurl = \"postgres://u:pw@db/x\"\n", &[]).unwrap();
        let d = format!("{:?}", l.config);
        assert!(!d.contains("s3cret") && !d.contains("t0p") && !d.contains(":pw@"), "{d}");
        assert_eq!(l.config.server.tokens[1].chats, ["-100"]);
    }

    #[test]
    fn the_example_file_is_valid_and_complete() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../chatctx.example.toml");
        let l = load(Some(&path), Vec::new()).unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.config.core, Settings::default(), "the example documents the defaults");
    }
}
