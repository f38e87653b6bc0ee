//! The `chatctx` command.

#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use chatctx::{config, replay};
use chatctx_core::Engine;
use clap::{Args, Parser, Subcommand};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// mimalloc instead of the system allocator: ingest allocates and frees small strings at a high rate, where
/// glibc malloc more than halves throughput (see docs/benchmarks.md).
#[global_allocator]
static GLOBAL: chatctx_alloc::Alloc = chatctx_alloc::Alloc;

/// chatctx: conversation context for LLM chat bots.
///
/// Feed it every chat event; it answers which history belongs in the prompt, what "this" refers to, and what
/// the conversation has settled, deterministically.
#[derive(Parser)]
#[command(name = "chatctx", version, about, long_about = None, after_help = "Configuration: chatctx.example.toml documents every key; each key can also be set as CHATCTX_SECTION__KEY (e.g. CHATCTX_HISTORY__MODE=talkative). Logs go to stderr; CHATCTX_LOG=debug|info|warn|error sets the level.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API on the embedded store (SQLite by default): events in, tools out, durable.
    ///
    /// Binds 127.0.0.1:7878 unless told otherwise. Every acknowledged write is on disk before the answer; on
    /// start the state is rebuilt from the store. Stops cleanly on Ctrl-C or SIGTERM. With a postgres:// store,
    /// any number of instances can serve the same database behind a load balancer (docs/deployment.md).
    Serve(ServeArgs),
    /// Serve the tools over MCP on stdin/stdout, for an MCP client that starts chatctx itself.
    ///
    /// Opens the store (SQLite by default) and rebuilds the state from it, then answers tools/list and
    /// tools/call until stdin closes. Scenario updates are written to the store. The state is the store's as of
    /// start: a bot that feeds events to a running `chatctx serve` should point its MCP client at that server's
    /// /mcp instead (two processes must not share one SQLite store; a postgres:// store may be shared).
    Mcp(McpArgs),
    /// Run a replay file offline: JSON Lines of {"event": …} and {"call": "<tool>", "args": {…}}.
    ///
    /// Prints one JSON line per call ({"call", "result"} or {"call", "error"}) and one {"event_error"} line per
    /// rejected line; the run always continues. Calls without "now" use the newest event time seen. The output
    /// for the same input and configuration is byte-identical on every run.
    Replay(ReplayArgs),
    /// Turn an export into replay lines on stdout: a Slack workspace export (its folder or ZIP file), a
    /// DiscordChatExporter JSON file, a Telegram Desktop export (result.json), or a conversation document from
    /// `chatctx export`.
    ///
    /// The format is recognised from the contents and named on stderr with what was read (people, messages,
    /// and what was left out, by reason). Everything is read before a line is written: a malformed input
    /// leaves stdout empty. Pipe the output into `chatctx replay`, or post it to a server's /v1/events.
    Import(ImportArgs),
    /// Export one conversation (history, objects, state) as a JSON document, after replaying FILE.
    ///
    /// The document moves a conversation between deployments or shares it: `chatctx import DOC.json` turns it
    /// back into a replay line, and importing then exporting gives the same document.
    Export(ExportArgs),
    /// Check a store, or repair a damaged one (when `serve` refuses to start on it).
    Store {
        #[command(subcommand)]
        action: StoreAction,
    },
    /// Check configuration: report unknown keys and bad values, print the effective settings.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
}

#[derive(Args)]
struct ReplayArgs {
    #[command(flatten)]
    preset: PresetArg,
    /// Replay file; `-` or nothing reads stdin.
    file: Option<PathBuf>,
    /// Configuration file (docs/protocol.md §8 keys; see chatctx.example.toml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Write answers here instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Give every answer its decision record (`explain`: each history item's verdict and reason, each
    /// resolver candidate's score parts), as if every call said "explain": true.
    #[arg(long)]
    explain: bool,
}

#[derive(Args)]
struct ImportArgs {
    /// The export: a Slack export's folder or ZIP file, a DiscordChatExporter .json, a Telegram Desktop
    /// result.json, or a conversation document.
    #[arg(value_name = "FILE|DIR|ZIP")]
    file: PathBuf,
    /// The bot's user id (Telegram: the number before the colon in its token; Slack: its U… id; Discord: its
    /// snowflake): its messages in the export become outbound_agent.
    #[arg(long)]
    bot_user_id: Option<String>,
    /// The most JSON read from the input, in bytes (a ZIP file's entries counted unpacked).
    #[arg(long, default_value_t = 4 << 30)]
    max_bytes: u64,
    /// Write bare events, one per line, for a running server's `POST /v1/events` (Content-Type
    /// application/x-ndjson, at most server.max_batch_items lines per request), instead of replay lines.
    #[arg(long)]
    events: bool,
    /// The bot's username. Desktop exports carry no usernames, so this alone is refused: give --bot-user-id.
    #[arg(long)]
    bot_username: Option<String>,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    preset: PresetArg,
    /// Configuration file.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Listen address (overrides server.listen), e.g. 127.0.0.1:7878 or 127.0.0.1:0 for any free port.
    #[arg(long)]
    listen: Option<String>,
    /// Store (overrides store.url): sqlite://PATH, memory, or postgres://USER:PASSWORD@HOST:PORT/DATABASE.
    #[arg(long)]
    store: Option<String>,
}

#[derive(Args)]
struct McpArgs {
    #[command(flatten)]
    preset: PresetArg,
    /// Configuration file.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Store (overrides store.url): sqlite://PATH, memory, or postgres://USER:PASSWORD@HOST:PORT/DATABASE.
    #[arg(long)]
    store: Option<String>,
}

#[derive(Args)]
struct ExportArgs {
    #[command(flatten)]
    preset: PresetArg,
    /// Replay file to build the state from; `-` or nothing reads stdin.
    file: Option<PathBuf>,
    /// The chat to export (group ids are negative: `--chat -1001234567890` works).
    #[arg(long, allow_hyphen_values = true)]
    chat: String,
    /// Its channel.
    #[arg(long, default_value = "telegram")]
    channel: String,
    /// Configuration file.
    #[arg(long, short)]
    config: Option<PathBuf>,
}

#[derive(Subcommand)]
enum StoreAction {
    /// Check every page of the store (SQLite) and replay every logged operation; change nothing.
    ///
    /// Lists each operation that cannot be applied, by chat and position. Exits 0 when the store is sound,
    /// 1 when something is wrong. The server is best stopped first: this reads the whole store.
    Check(StoreArgs),
    /// Keep everything that can be read and applied; drop the rest, listing each dropped operation.
    ///
    /// SQLite: what is kept is copied into a new file, and the damaged file is kept beside it as
    /// FILE.damaged-<unix time>. PostgreSQL: the damaged rows are deleted. Stop the server first.
    Repair {
        #[command(flatten)]
        store: StoreArgs,
        /// Agree to drop what cannot be read or applied (required: a repair loses that data).
        #[arg(long)]
        drop_damaged: bool,
    },
}

#[derive(Args)]
struct StoreArgs {
    #[command(flatten)]
    preset: PresetArg,
    /// Configuration file (for store.url and the settings the log is replayed with).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Store (overrides store.url): sqlite://PATH or postgres://….
    #[arg(long)]
    store: Option<String>,
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Validate a configuration file and the CHATCTX_* environment.
    Check {
        /// Configuration file.
        #[arg(long, short)]
        config: Option<PathBuf>,
        #[command(flatten)]
        preset: PresetArg,
    },
}

/// `--preset NAME`, for every command that reads the configuration.
#[derive(Args)]
struct PresetArg {
    /// Start from a built-in preset (the file and CHATCTX_* variables override it): `group-bot` records every
    /// member's message and selects history without a model (crates/chatctx/presets/).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(config::PRESETS.iter().map(|(name, _)| *name)))]
    preset: Option<String>,
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(a) => run_serve(a),
        Command::Mcp(a) => run_mcp(a),
        Command::Replay(a) => run_replay(a),
        Command::Import(a) => run_import(a),
        Command::Export(a) => run_export(a),
        Command::Config { action: ConfigAction::Check { config, preset } } => check_config(&preset, config.as_deref()),
        Command::Store { action: StoreAction::Check(a) } => check_store(a),
        Command::Store { action: StoreAction::Repair { store, drop_damaged } } => repair_store(store, drop_damaged),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("chatctx: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn init_logging() {
    let level = match std::env::var("CHATCTX_LOG").unwrap_or_default().to_ascii_lowercase().as_str() {
        "trace" => tracing::Level::TRACE,
        "debug" => tracing::Level::DEBUG,
        "warn" => tracing::Level::WARN,
        "error" => tracing::Level::ERROR,
        _ => tracing::Level::INFO,
    };
    // chatctx's own lines never carry message text, state or tool arguments (docs/protocol.md, "Logs"); other
    // crates' may (rmcp prints whole MCP messages at debug), so they are kept to warnings and errors whatever
    // the level.
    let others = level.min(tracing::Level::WARN);
    let filter = ["chatctx", "chatctx_core", "chatctx_store", "chatctx_platforms"]
        .into_iter()
        .fold(tracing_subscriber::filter::Targets::new().with_default(others), |f, t| f.with_target(t, level));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(|| LogWriter)
        .with_ansi(io::stderr().is_terminal())
        .with_target(false);
    tracing_subscriber::registry().with(fmt).with(filter).init();
}

/// Stderr that never fails: a log line that cannot be written (the pipe reading the logs went away) is
/// dropped, instead of panicking the request that logged it or the whole server.
struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = io::stderr().flush();
        Ok(())
    }
}

fn load_config(preset: &PresetArg, path: Option<&Path>) -> Result<config::Config> {
    let loaded = config::load_with_preset(preset.preset.as_deref(), path, std::env::vars())?;
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    Ok(loaded.config)
}

/// Opens the configured store (or `store`, from the command line) and rebuilds the state it holds.
fn open_service(cfg: &chatctx::config::Config, store: Option<String>) -> Result<Opened> {
    let url = store.unwrap_or(cfg.store.url.clone());
    let shown = chatctx::config::redact_url(&url);
    let options = cfg.store.open_options();
    let store = chatctx_store::open(&url, &options).map_err(|e| anyhow::anyhow!("store.url {shown}: {e}"))?;
    let started = std::time::Instant::now();
    let options = chatctx::service::Options { compact_after: cfg.store.compact_after };
    let (service, loaded) = chatctx::service::Service::open_with(cfg.core.clone(), cfg.llm.clone(), store, options)?;
    tracing::info!("rebuilt {loaded} logged operations from {shown} in {:.2?}", started.elapsed());
    let summarizer = chatctx::summarizer::Summarizer::from_settings(cfg.summary.clone(), &cfg.llm)?;
    let service = match &summarizer {
        Some(s) => service.with_summaries(s.queue()),
        None => service,
    };
    Ok(Opened { service: std::sync::Arc::new(service), summarizer })
}

/// The service, and the background summarizer to start beside it (when `[summary] enabled`).
struct Opened {
    service: std::sync::Arc<chatctx::service::Service>,
    summarizer: Option<chatctx::summarizer::Summarizer>,
}

impl Opened {
    /// Starts the background work on the service, and returns the service.
    fn start(self) -> Result<std::sync::Arc<chatctx::service::Service>> {
        if let Some(s) = self.summarizer {
            s.start(&self.service).context("cannot start the summarizer")?;
        }
        Ok(self.service)
    }
}

/// The configuration and the store URL a `chatctx store` command works on.
fn store_target(a: StoreArgs) -> Result<(config::Config, String)> {
    let cfg = load_config(&a.preset, a.config.as_deref())?;
    let url = a.store.unwrap_or(cfg.store.url.clone());
    Ok((cfg, url))
}

fn check_store(a: StoreArgs) -> Result<ExitCode> {
    let (cfg, url) = store_target(a)?;
    let report = chatctx::repair::check(&url, &cfg.store.open_options(), &cfg.core)?;
    let mut out = io::stdout().lock();
    for line in report.lines() {
        writeln!(out, "{line}")?;
    }
    if report.sound() {
        writeln!(out, "the store is sound")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "the store is damaged: `chatctx store repair --drop-damaged` keeps what can be read and applied")?;
    Ok(ExitCode::from(1))
}

fn repair_store(a: StoreArgs, drop_damaged: bool) -> Result<ExitCode> {
    if !drop_damaged {
        anyhow::bail!(
            "a repair drops every logged operation that cannot be read or applied; run `chatctx store check` to see \
             which, then pass --drop-damaged to agree"
        );
    }
    let (cfg, url) = store_target(a)?;
    let stamp = chatctx::clock::now().unix();
    let repaired = chatctx::repair::repair(&url, &cfg.store.open_options(), &cfg.core, stamp)?;
    let mut out = io::stdout().lock();
    for line in repaired.report.lines() {
        writeln!(out, "{line}")?;
    }
    let dropped = repaired.report.damaged.len() + repaired.report.unreadable_rows.len();
    writeln!(out, "kept {} operations, dropped {dropped}", repaired.kept)?;
    if let Some(old) = &repaired.kept_old_at {
        writeln!(out, "the damaged file is kept at {}", old.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_serve(a: ServeArgs) -> Result<ExitCode> {
    let cfg = load_config(&a.preset, a.config.as_deref())?;
    tracing::info!("answering with {}", cfg.behaviour(a.preset.preset.as_deref()));
    let listen = a.listen.unwrap_or(cfg.server.listen.clone());
    let tokens = cfg.server.tokens.clone();
    let store_url = a.store.clone().unwrap_or(cfg.store.url.clone());
    let service = open_service(&cfg, a.store)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(cfg.server.blocking_threads)
        .build()
        .context("cannot start the runtime")?;
    let mut connections = chatctx::http::Connections::of(&cfg.server);
    let open_files = chatctx::http::raise_open_files();
    // Room for the store, the log and the listener beside the connections.
    let room = usize::try_from(open_files.saturating_sub(64)).unwrap_or(usize::MAX).max(1);
    if connections.max > room {
        tracing::warn!(
            "server.max_connections is {} but the process may open {open_files} files: at most {room} connections",
            connections.max
        );
        connections.max = room;
    }
    let stop = runtime.block_on(async move {
        let signals = chatctx::stop::Signals::install().context("cannot listen for stop signals")?;
        let listener =
            tokio::net::TcpListener::bind(&listen).await.with_context(|| format!("cannot listen on {listen}"))?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() && cfg.server.tokens.is_empty() {
            tracing::warn!("listening on {addr}, beyond this machine, without any server.tokens");
        }
        if !addr.ip().is_loopback() && cfg.server.allowed_hosts.is_empty() {
            tracing::warn!(
                "listening on {addr} but server.allowed_hosts is empty: only requests addressed to this machine's \
                 loopback names or {} are answered; list the names clients use",
                addr.ip()
            );
        }
        tracing::info!("listening on {addr}");
        tracing::info!("the console (what the model saw, and why): http://{addr}/console");
        let auth = match &cfg.server.scope_key {
            Some(key) => chatctx::auth::Auth::with_scope_key(tokens, key),
            None => {
                if matches!(chatctx_store::StoreUrl::parse(&store_url), chatctx_store::StoreUrl::Postgres(_)) {
                    tracing::warn!(
                        "no server.scope_key: scopes this instance issues work on it alone; give every instance the same key"
                    );
                }
                chatctx::auth::Auth::new(tokens)
            }
        };
        let mut app = chatctx::http::AppState::new(service.start()?, std::sync::Arc::new(auth));
        // Revocations are known before the first request, then followed.
        chatctx::revocations::load(&app.svc, &app.auth, 0).await.map_err(anyhow::Error::msg)?;
        tokio::spawn(chatctx::revocations::follow(app.svc.clone(), app.auth.clone()));
        app.timeout = std::time::Duration::from_secs(cfg.server.request_timeout.secs().unsigned_abs());
        app.limits = chatctx::http::Limits::of(&cfg.server);
        app.hosts = std::sync::Arc::new(chatctx::http::guard::Hosts::new(&cfg.server.allowed_hosts, &addr.to_string()));
        app.public_metrics = cfg.server.public_metrics;
        app.telemetry = chatctx::telemetry::Telemetry::start(&cfg.telemetry);
        app.slack_signing_secret = cfg.slack_signing_secret.as_deref().map(Into::into);
        if cfg.store.max_age.secs() > 0 {
            tokio::spawn(retention(app.svc.clone(), cfg.store.max_age));
        }
        let stopping = chatctx::stop::Stopping::new(app.svc.clone(), cfg.store.stop_snapshot_budget());
        chatctx::http::run(listener, app, connections, stopping.signal(&signals)).await?;
        let stop = stopping.finish(&signals).await;
        tracing::info!("stopped");
        Ok::<_, anyhow::Error>(stop)
    })?;
    Ok(stopped(stop))
}

/// The exit code after a stop; an interrupted one ends the process here, without waiting for the snapshot under way
/// (the runtime would wait for its thread).
fn stopped(stop: chatctx::stop::Stop) -> ExitCode {
    if stop == chatctx::stop::Stop::Interrupted {
        std::process::exit(130);
    }
    ExitCode::SUCCESS
}

fn run_mcp(a: McpArgs) -> Result<ExitCode> {
    let cfg = load_config(&a.preset, a.config.as_deref())?;
    let service = open_service(&cfg, a.store)?;
    tracing::info!("serving MCP on stdio");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the runtime")?;
    let stop = runtime.block_on(async move {
        use rmcp::ServiceExt;
        let signals = chatctx::stop::Signals::install().context("cannot listen for stop signals")?;
        let service = service.start()?;
        let stopping = chatctx::stop::Stopping::new(service.clone(), cfg.store.stop_snapshot_budget());
        let server = chatctx::mcp::Mcp::local(service)
            .with_max_json_depth(cfg.server.max_json_depth)
            .serve(rmcp::transport::stdio())
            .await
            .context("MCP initialization failed")?;
        tokio::select! {
            r = server.waiting() => { r.context("the MCP session failed")?; }
            () = signals.count(1) => {}
        }
        Ok::<_, anyhow::Error>(stopping.finish(&signals).await)
    })?;
    Ok(stopped(stop))
}

/// Reads the revoked scopes from the store every second, so a scope revoked on another instance stops
/// working here too (and revocations survive a restart).
/// Forgets history older than `max_age`: at start, then every tenth of the age (at least a second, at most
/// an hour).
async fn retention(svc: std::sync::Arc<chatctx::service::Service>, max_age: chatctx_core::time::Span) {
    let every = std::time::Duration::from_secs((max_age.secs().unsigned_abs() / 10).clamp(1, 3600));
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let svc = svc.clone();
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let now = chatctx_core::Timestamp::from_unix(i64::try_from(secs).unwrap_or(0)).unwrap_or_default();
        match tokio::task::spawn_blocking(move || svc.expire(max_age, now)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!("retention: forgot {n} history items older than {max_age:?}"),
            Ok(Err(e)) => tracing::warn!("retention failed: {}", e.message),
            Err(e) => tracing::warn!("retention failed: {e}"),
        }
    }
}

fn run_replay(a: ReplayArgs) -> Result<ExitCode> {
    let cfg = load_config(&a.preset, a.config.as_deref())?;
    let mut engine = Engine::new(cfg.core);
    if let Some(t) = chatctx::triage::HttpTriage::from_settings(&cfg.llm)? {
        engine.set_triage(Box::new(t));
    }
    let input: Box<dyn Read> = match a.file.as_deref() {
        None => Box::new(io::stdin().lock()),
        Some(p) if p == Path::new("-") => Box::new(io::stdin().lock()),
        Some(p) => Box::new(File::open(p).with_context(|| format!("cannot open replay file {}", p.display()))?),
    };
    let input = BufReader::with_capacity(1 << 16, input);
    let stats = match a.output {
        Some(p) => {
            let f = File::create(&p).with_context(|| format!("cannot create {}", p.display()))?;
            replay::run_explained(&mut engine, input, BufWriter::with_capacity(1 << 16, f), a.explain)
        }
        None => {
            let out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
            replay::run_explained(&mut engine, input, out, a.explain)
        }
    }
    .context("replay stopped: input or output failed")?;
    tracing::info!(
        "replay done: {} lines, {} events accepted, {} calls, {} lines rejected, {} update kinds ignored",
        stats.lines,
        stats.events,
        stats.calls,
        stats.rejected,
        stats.ignored
    );
    Ok(ExitCode::SUCCESS)
}

fn run_import(a: ImportArgs) -> Result<ExitCode> {
    let bot = chatctx_platforms::Bot::new(a.bot_user_id, a.bot_username, None);
    let read = chatctx::import::read(&a.file, &bot, a.max_bytes, a.events)?;
    for w in &read.imported.warnings {
        tracing::warn!("{w}");
    }
    let mut out = BufWriter::new(io::stdout().lock());
    for line in &read.lines {
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    eprintln!("chatctx import: {}", chatctx::import::summary(&read));
    Ok(ExitCode::SUCCESS)
}

fn run_export(a: ExportArgs) -> Result<ExitCode> {
    let cfg = load_config(&a.preset, a.config.as_deref())?;
    let mut engine = Engine::new(cfg.core);
    let input: Box<dyn Read> = match a.file.as_deref() {
        None => Box::new(io::stdin().lock()),
        Some(p) if p == Path::new("-") => Box::new(io::stdin().lock()),
        Some(p) => Box::new(File::open(p).with_context(|| format!("cannot open replay file {}", p.display()))?),
    };
    replay::run(&mut engine, BufReader::new(input), io::sink()).context("reading the replay file failed")?;
    let doc = engine.export_conversation(&a.channel, &a.chat).map_err(|e| anyhow::anyhow!("{}", e.message))?;
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &doc)?;
    out.write_all(b"\n")?;
    Ok(ExitCode::SUCCESS)
}

fn check_config(preset: &PresetArg, path: Option<&Path>) -> Result<ExitCode> {
    let loaded = config::load_with_preset(preset.preset.as_deref(), path, std::env::vars())?;
    for w in &loaded.warnings {
        println!("warning: {w}");
    }
    println!("{:#?}", loaded.config);
    println!("configuration is valid{}", if loaded.warnings.is_empty() { "" } else { " (with warnings above)" });
    Ok(if loaded.warnings.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
