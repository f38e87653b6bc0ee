//! Configuration (docs/protocol.md §8): built-in defaults < TOML file < `CHATCTX_SECTION__KEY` environment < CLI flags.
//!
//! The file and the environment are merged into one TOML table, then read into typed sections (`file`) and
//! laid over the defaults. A key chatctx does not know is reported (with where it came from), never silently
//! ignored; a known key with a bad value is an error naming the key.

mod file;

pub use file::{MAX_DECISIONS_KEEP, MAX_JSON_DEPTH};

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result, bail};
use chatctx_core::settings::Settings;
use chatctx_core::time::Span;
use toml::{Table, Value};

/// The environment prefix.
pub const ENV_PREFIX: &str = "CHATCTX_";

/// Everything chatctx is configured with.
#[derive(Clone)]
pub struct Config {
    /// What the engine uses.
    pub core: Settings,
    /// `[llm]`.
    pub llm: LlmSettings,
    /// `[server]`.
    pub server: ServerSettings,
    /// `[store]`.
    pub store: StoreSettings,
    /// `[telemetry]`.
    pub telemetry: TelemetrySettings,
    /// `[summary]`: the background summarizer (what the engine does with summaries is in `core.summary`).
    pub summary: SummarizerSettings,
    /// `[slack] signing_secret`: Slack's signed requests need no bearer token.
    pub slack_signing_secret: Option<String>,
}

impl Default for Config {
    /// The engine's defaults, with the server's: decision records on (32 per chat).
    fn default() -> Self {
        let mut core = Settings::default();
        core.decisions.keep = 32;
        Self {
            core,
            llm: LlmSettings::default(),
            server: ServerSettings::default(),
            store: StoreSettings::default(),
            telemetry: TelemetrySettings::default(),
            summary: SummarizerSettings::default(),
            slack_signing_secret: None,
        }
    }
}

impl Config {
    /// What decides the answers, for the start of a server's log: the preset, history mode, policy and scope,
    /// the selector and its lookback, and whether resolution needs a reference.
    pub fn behaviour(&self, preset: Option<&str>) -> String {
        use chatctx_core::tools::serde_plain as plain;
        let c = &self.core;
        format!(
            "preset {}, history.mode {}, history.policy {}, history.scope {}, conversation.selector {} (lookback {}), \
             resolver.require_reference {}",
            preset.unwrap_or("none"),
            plain(&c.history.mode),
            plain(&c.history.policy),
            plain(&c.history.scope),
            plain(&c.conversation.selector),
            c.conversation.lookback_count,
            c.resolver.require_reference
        )
    }
}

/// `[summary]`: the optional background summarizer, on the `[llm]` endpoint (docs/protocol.md §6.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummarizerSettings {
    /// Off unless set; needs `[llm] base_url`.
    pub enabled: bool,
    /// A conversation is summarized once this many of its messages are not covered yet.
    pub every_n_messages: usize,
    /// The model role (a key of `[llm] models`, else the model's own name), as `selection_model`.
    pub model: String,
    /// The instructions sent as the system message.
    pub prompt: String,
    /// `max_tokens` of the model's answer.
    pub max_tokens: u32,
    /// How long one model call may take (retries included).
    pub timeout: Span,
    /// The most messages one run folds in (the oldest not covered); the next run takes the rest.
    pub max_input_messages: usize,
    /// Conversations waiting for a run at most; past it new ones are skipped (and counted) until there is room.
    pub queue: usize,
}

impl Default for SummarizerSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            every_n_messages: 50,
            model: "fast".to_owned(),
            prompt: chatctx_core::summary::DEFAULT_PROMPT.to_owned(),
            max_tokens: 512,
            timeout: Span::from_secs(60),
            max_input_messages: 200,
            queue: 1024,
        }
    }
}

/// `[telemetry]`: OpenTelemetry spans over OTLP/HTTP, off unless `otlp_endpoint` is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TelemetrySettings {
    /// The OTLP/HTTP base URL (`http://host:4318`); spans go to its `/v1/traces`.
    pub otlp_endpoint: Option<String>,
    /// The `service.name` resource attribute.
    pub service_name: String,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self { otlp_endpoint: None, service_name: "chatctx".to_owned() }
    }
}

/// `[llm]`: an OpenAI-compatible endpoint. Without `base_url` no model is configured.
#[derive(Clone, PartialEq, Eq)]
pub struct LlmSettings {
    /// e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Role alias → model name.
    pub models: BTreeMap<String, String>,
    /// `llm.max_response_bytes`: the largest answer read from the endpoint; a longer one is an error (the
    /// triage or summary fails open), so a misbehaving endpoint cannot grow the server's memory.
    pub max_response_bytes: usize,
}

/// `llm.max_response_bytes` unless configured: 1 MiB, far above any chat completion chatctx asks for.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1024 * 1024;

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            base_url: None,
            api_key_env: None,
            models: BTreeMap::new(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
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
    /// How long a client may take to send a request's headers before its connection is closed.
    pub header_read_timeout: Span,
    /// Open connections at most; past it, new connections wait in the kernel's backlog.
    pub max_connections: usize,
    /// Deepest nesting of arrays and objects accepted in any JSON input (8–256).
    pub max_json_depth: usize,
    /// Inputs (events, updates) accepted in one ingest request.
    pub max_batch_items: usize,
    /// Rejections listed one by one in an ingest report; past it only their count is given.
    pub max_rejections: usize,
    /// Threads for blocking work (waiting on the disk, model triage); requests beyond it queue.
    pub blocking_threads: usize,
    /// Host names the server answers for (`Host`, `Origin`); empty: the loopback names of `listen`.
    pub allowed_hosts: Vec<String>,
    /// Whether `/metrics` answers without a token (for scrapers) when tokens are configured.
    pub public_metrics: bool,
    /// The key bound scopes are signed with; instances that share a store share it. `None`: a random key per
    /// process (scopes work on the instance that issued them only).
    pub scope_key: Option<String>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:7878".to_owned(),
            tokens: Vec::new(),
            request_timeout: Span::from_secs(30),
            header_read_timeout: Span::from_secs(10),
            max_connections: 1024,
            max_json_depth: 64,
            max_batch_items: 10_000,
            max_rejections: 100,
            blocking_threads: 16,
            allowed_hosts: Vec::new(),
            public_metrics: false,
            scope_key: None,
        }
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
    /// SQLite: how long the integrity check at start may take (`0` skips it).
    pub check_timeout: Span,
    /// Operations a chat may log before its log is compacted into one snapshot (`0`: what one of its
    /// conversations holds, at least 200).
    pub compact_after: u64,
    /// How long a clean stop may spend snapshotting the chats whose logs grew since their last snapshot, so that
    /// the next start reads one line per chat instead of replaying their tails (`0` turns it off).
    pub stop_snapshot_timeout: Span,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            url: "sqlite://chatctx.db".to_owned(),
            max_age: Span::from_secs(0),
            pool_size: 16,
            check_timeout: Span::from_secs(10),
            compact_after: 0,
            stop_snapshot_timeout: Span::from_secs(10),
        }
    }
}

impl StoreSettings {
    /// `stop_snapshot_timeout` as a duration.
    pub fn stop_snapshot_budget(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.stop_snapshot_timeout.secs().unsigned_abs())
    }

    /// How the store is opened.
    pub fn open_options(&self) -> chatctx_store::OpenOptions {
        let secs = self.check_timeout.secs().unsigned_abs();
        chatctx_store::OpenOptions {
            pool_size: self.pool_size,
            check_time: (secs > 0).then(|| std::time::Duration::from_secs(secs)),
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("core", &self.core)
            .field("llm.base_url", &self.llm.base_url)
            .field("llm.api_key_env", &self.llm.api_key_env)
            .field("llm.models", &self.llm.models)
            .field("llm.max_response_bytes", &self.llm.max_response_bytes)
            .field("server.listen", &self.server.listen)
            .field("server.request_timeout", &self.server.request_timeout)
            .field("server.header_read_timeout", &self.server.header_read_timeout)
            .field("server.max_connections", &self.server.max_connections)
            .field("server.max_json_depth", &self.server.max_json_depth)
            .field("server.max_batch_items", &self.server.max_batch_items)
            .field("server.max_rejections", &self.server.max_rejections)
            .field("server.blocking_threads", &self.server.blocking_threads)
            .field("server.allowed_hosts", &self.server.allowed_hosts)
            .field("server.public_metrics", &self.server.public_metrics)
            .field("server.tokens", &format_args!("[{} hidden]", self.server.tokens.len()))
            .field("server.scope_key", &self.server.scope_key.as_ref().map(|_| "hidden"))
            .field("store.url", &redact_url(&self.store.url))
            .field("store.max_age", &self.store.max_age)
            .field("store.pool_size", &self.store.pool_size)
            .field("store.check_timeout", &self.store.check_timeout)
            .field("store.compact_after", &self.store.compact_after)
            .field("store.stop_snapshot_timeout", &self.store.stop_snapshot_timeout)
            .field("telemetry.otlp_endpoint", &self.telemetry.otlp_endpoint.as_deref().map(redact_url))
            .field("telemetry.service_name", &self.telemetry.service_name)
            .field("summary", &self.summary)
            .field("slack.signing_secret", &self.slack_signing_secret.as_ref().map(|_| "***"))
            .field("summary.max_chars", &self.core.summary.max_chars)
            .field("summary.max_share", &self.core.summary.max_share)
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

/// Built-in starting points, by name (`--preset NAME`): laid under the file and the environment.
pub const PRESETS: &[(&str, &str)] = &[("group-bot", include_str!("../../presets/group-bot.toml"))];

/// Loads `file` (if any) and the `CHATCTX_…` variables of `env`.
pub fn load(file: Option<&Path>, env: impl IntoIterator<Item = (String, String)>) -> Result<Loaded> {
    load_with_preset(None, file, env)
}

/// Loads the preset named `preset` (one of [`PRESETS`]), then `file` over it, then the environment.
pub fn load_with_preset(
    preset: Option<&str>,
    file: Option<&Path>,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Loaded> {
    let mut table = match preset {
        Some(name) => {
            let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
                let known: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
                bail!("unknown preset `{name}` (known: {})", known.join(", "));
            };
            text.parse::<Table>().with_context(|| format!("preset {name}"))?
        }
        None => Table::new(),
    };
    if let Some(p) = file {
        let text = std::fs::read_to_string(p).with_context(|| format!("cannot read config file {}", p.display()))?;
        let over = text.parse::<Table>().with_context(|| format!("config file {} is not valid TOML", p.display()))?;
        lay_over(&mut table, over);
    }
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

/// Lays `over` onto `under`, section by section: a key in both takes `over`'s value.
fn lay_over(under: &mut Table, over: Table) {
    for (key, value) in over {
        match (under.get_mut(&key), value) {
            (Some(Value::Table(inner)), Value::Table(value)) => lay_over(inner, value),
            (_, value) => {
                under.insert(key, value);
            }
        }
    }
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

/// Reads the merged table into typed sections ([`file::File`]) laid over the defaults. Unknown sections and
/// keys become warnings; relative file names (`state.schema_file`) are taken from `base`.
fn read(root: Table, base: &Path, warnings: &mut Vec<String>) -> Result<Config> {
    for name in file::SECTIONS {
        if let Some(v) = root.get(*name).filter(|v| !v.is_table()) {
            bail!("`{name}` must be a section, got {v}");
        }
    }
    let mut unknown = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
    let ignoring = serde_ignored::Deserializer::new(Value::Table(root), &mut note);
    let typed: file::File = serde_path_to_error::deserialize(ignoring)
        .map_err(|e| anyhow::anyhow!("{}: {}", e.path(), e.inner().message()))?;
    let config = typed.apply(base, &mut unknown)?;
    for key in unknown {
        let what = if key.contains('.') { "key" } else { "section or key" };
        warnings.push(format!("unknown configuration {what} `{key}` is ignored"));
    }
    Ok(config)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use chatctx_core::kinds::ObjectKind;
    use chatctx_core::settings::{Mode, Policy};

    fn load_str(toml: &str, env: &[(&str, &str)]) -> Result<Loaded> {
        let dir = std::env::temp_dir().join(format!("chatctx-config-{}-{}", std::process::id(), toml.len()));
        std::fs::write(&dir, toml)?;
        let r = load(Some(&dir), env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let _ = std::fs::remove_file(&dir);
        r
    }

    #[test]
    fn the_summarizer_is_off_by_default_and_needs_a_model_endpoint() {
        let l = load(None, Vec::new()).unwrap();
        assert_eq!(l.config.summary, SummarizerSettings::default());
        assert!(!l.config.summary.enabled);
        let e = load_str("[summary]\nenabled = true\n", &[]).err().unwrap().to_string();
        assert!(e.contains("summary.enabled") && e.contains("llm.base_url"), "{e}");
        let l = load_str(
            "[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\n[summary]\nenabled = true\nevery_n_messages = 5\nmax_share = 0.5\n",
            &[("CHATCTX_SUMMARY__MODEL", "big")],
        )
        .unwrap();
        assert_eq!((l.config.summary.every_n_messages, l.config.summary.model.as_str()), (5, "big"));
        assert_eq!(l.config.core.summary.max_share, 0.5);
        for (bad, key) in [
            ("every_n_messages = 0", "summary.every_n_messages"),
            ("max_share = 1.5", "summary.max_share"),
            ("max_tokens = 0", "summary.max_tokens"),
            ("prompt = \" \"", "summary.prompt"),
        ] {
            let e = load_str(&format!("[summary]\n{bad}\n"), &[]).err().unwrap().to_string();
            assert!(e.contains(key), "{bad}: {e}");
        }
    }

    #[test]
    fn telemetry_is_off_by_default_and_takes_only_an_http_endpoint() {
        let l = load(None, Vec::new()).unwrap();
        assert_eq!(l.config.telemetry, TelemetrySettings::default());
        let l = load_str("[telemetry]\notlp_endpoint = \"http://collector:4318/\"\n", &[]).unwrap();
        assert_eq!(l.config.telemetry.otlp_endpoint.as_deref(), Some("http://collector:4318"));
        let e = load_str("[telemetry]\notlp_endpoint = \"collector:4317\"\n", &[]).err().unwrap().to_string();
        assert!(e.contains("telemetry.otlp_endpoint") && e.contains("http://HOST:4318"), "{e}");
        let e = load_str("[telemetry]\nservice_name = \"\"\n", &[]).err().unwrap().to_string();
        assert!(e.contains("telemetry.service_name"), "{e}");
    }

    #[test]
    fn the_group_bot_preset_records_the_room_and_selects_without_a_model_under_file_and_environment() {
        use chatctx_core::settings::{Scope, Selector};
        let l = load_with_preset(Some("group-bot"), None, Vec::new()).unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.config.core.history.mode, Mode::Talkative);
        assert_eq!(l.config.core.history.scope, Scope::Topic);
        assert_eq!(l.config.core.conversation.selector, Selector::Lexical);
        // A file overrides one key of a preset's section and leaves its others alone; the environment wins.
        let dir = std::env::temp_dir().join(format!("chatctx-preset-{}", std::process::id()));
        std::fs::write(&dir, "[history]\nscope = \"chat\"\n").unwrap();
        let env = vec![("CHATCTX_CONVERSATION__SELECTOR".to_owned(), "model".to_owned())];
        let l = load_with_preset(Some("group-bot"), Some(&dir), env).unwrap();
        let _ = std::fs::remove_file(&dir);
        assert_eq!(l.config.core.history.mode, Mode::Talkative);
        assert_eq!(l.config.core.history.scope, Scope::Chat);
        assert_eq!(l.config.core.conversation.selector, Selector::Model);
        let e = load_with_preset(Some("groupbot"), None, Vec::new()).err().unwrap().to_string();
        assert!(e.contains("unknown preset `groupbot`") && e.contains("group-bot"), "{e}");
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
            // Token foot-guns: an empty chat list, spaces that no request can send, short secrets.
            ("[server]\ntokens = [{ token = \"0123456789abcdef\", chats = [] }]", "server.tokens[0]: chats = []"),
            ("[server]\ntokens = [\" 0123456789abcdef\"]", "server.tokens[0]: the token has spaces"),
            ("[server]\ntokens = [\"\"]", "server.tokens[0]: a token needs at least 16"),
            ("[server]\ntokens = [\"ok-token-0123456789\", { token = \"short\" }]", "server.tokens[1]: a token needs"),
            ("history = 3", "`history` must be a section"),
        ] {
            let e = format!("{:#}", load_str(toml, &[]).err().unwrap());
            assert!(e.contains(needle), "{toml}: {e}");
        }
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let l = load_str("[server]\ntokens = [\"s3cret-0123456789abc\", { token = \"t0p-secret-0123456789\", chats = [\"-100\"] }]\n[store]\nurl = \"postgres://u:pw@db/x\"\n", &[]).unwrap();
        let d = format!("{:?}", l.config);
        assert!(!d.contains("s3cret") && !d.contains("t0p") && !d.contains(":pw@"), "{d}");
        assert_eq!(l.config.server.tokens[1].chats, ["-100"]);
    }

    #[test]
    fn the_example_file_is_valid_and_complete() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../chatctx.example.toml");
        let l = load(Some(&path), Vec::new()).unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.config.core, Config::default().core, "the example documents the defaults");
    }
}
