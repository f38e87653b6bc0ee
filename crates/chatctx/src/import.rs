//! `chatctx import`: an export of another tool's, read whole into replay lines. The format is recognised from
//! the input, never from its name:
//!
//! - a directory, or a ZIP file, holding `users.json` / `channels.json` (at its root or in one folder): a Slack
//!   workspace export ([`chatctx_platforms::slack::export`]);
//! - a JSON file with `guild`, `channel` and `messages`: a DiscordChatExporter export
//!   ([`chatctx_platforms::discord::export`]);
//! - a JSON file with `format: "chatctx.conversation.v1"`: a conversation document (`chatctx export`);
//! - a JSON file with `messages` or `chats.list`: a Telegram Desktop export ([`chatctx_platforms::telegram::export`]).
//!
//! The whole input is read and mapped before any line is written, so a failure leaves stdout empty.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use chatctx_core::Event;
use chatctx_platforms::{Bot, Imported};
use serde_json::Value;

/// What was read, for the summary on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A Telegram Desktop export.
    Telegram,
    /// A conversation document of `chatctx export`.
    Conversation,
    /// A Slack workspace export.
    Slack,
    /// A DiscordChatExporter export.
    Discord,
}

impl Format {
    /// The format's name, as the summary says it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Telegram => "a Telegram Desktop export",
            Format::Conversation => "a chatctx conversation document",
            Format::Slack => "a Slack workspace export",
            Format::Discord => "a DiscordChatExporter export",
        }
    }
}

/// An input read whole: its format, the replay lines, and the counts.
pub struct Loaded {
    /// What the input was.
    pub format: Format,
    /// The lines to write, in order, without newlines: replay lines, or bare events when read `bare`.
    pub lines: Vec<String>,
    /// People, messages, what was left out and the warnings.
    pub imported: Imported,
}

/// Reads `path` (a file, a directory or a ZIP file), reading at most `max_bytes` of JSON from a directory or ZIP.
/// Its events become replay lines, or bare events (for a server's `POST /v1/events`) when `bare`; a conversation
/// document is not events, and is refused `bare`.
pub fn read(path: &Path, bot: &Bot, max_bytes: u64, bare: bool) -> Result<Loaded> {
    let loaded = read_any(path, bot, max_bytes, bare)?;
    if bare && loaded.format == Format::Conversation {
        bail!("{} is a conversation document, not events: replay it, or import it into a server", path.display());
    }
    Ok(loaded)
}

fn read_any(path: &Path, bot: &Bot, max_bytes: u64, bare: bool) -> Result<Loaded> {
    let shown = path.display();
    if path.is_dir() {
        let files = dir_files(path, max_bytes)?;
        return slack(files, bot, bare).with_context(|| format!("{shown} is a directory but not a Slack export"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {shown}"))?;
    if bytes.len() as u64 > max_bytes {
        bail!("{shown} is larger than {max_bytes} bytes (--max-bytes)");
    }
    if bytes.starts_with(b"PK\x03\x04") {
        let files =
            zip_files(&bytes, max_bytes).with_context(|| format!("{shown} is a ZIP file that cannot be read"))?;
        return slack(files, bot, bare).with_context(|| format!("{shown} is a ZIP file but not a Slack export"));
    }
    let text =
        std::str::from_utf8(&bytes).map_err(|_| anyhow!("{shown} is neither JSON, a ZIP file nor a directory"))?;
    let root = crate::logline::read_json(text).map_err(|why| anyhow!("{shown} {why}"))?;
    json_file(&root, bot, bare).with_context(|| format!("{shown} could not be imported"))
}

/// A JSON file, by what it holds.
fn json_file(root: &Value, bot: &Bot, bare: bool) -> Result<Loaded> {
    if root.get("format").and_then(Value::as_str) == Some(chatctx_core::transfer::FORMAT) {
        // Checked by loading it, then handed to replay as one line.
        chatctx_core::Engine::new(Default::default())
            .import_conversation(root)
            .map_err(|e| anyhow!("{}", e.message))?;
        let mut line = String::from("{\"import\":");
        line.push_str(&serde_json::to_string(root)?);
        line.push('}');
        let imported = Imported::default();
        return Ok(Loaded { format: Format::Conversation, lines: vec![line], imported });
    }
    if chatctx_platforms::discord::export::is_export(root) {
        let imported = chatctx_platforms::discord::export::import(root, bot).map_err(|e| anyhow!("{}", e.message))?;
        return lines(Format::Discord, imported, bare);
    }
    let telegram = root.get("messages").is_some_and(Value::is_array)
        || root.get("chats").and_then(|c| c.get("list")).is_some_and(Value::is_array);
    if telegram {
        let imported = chatctx_platforms::telegram::export::import(root, bot).map_err(|e| anyhow!("{}", e.message))?;
        return lines(Format::Telegram, imported, bare);
    }
    bail!(
        "not a format chatctx imports: expected a Telegram Desktop export (`messages` or `chats.list`), a \
         DiscordChatExporter JSON export (`guild`, `channel`, `messages`), a conversation document (`format`: \
         {:?}), or a Slack export (a directory or ZIP file with users.json and channels.json)",
        chatctx_core::transfer::FORMAT
    )
}

fn slack(files: BTreeMap<String, Value>, bot: &Bot, bare: bool) -> Result<Loaded> {
    let imported = chatctx_platforms::slack::export::import(&files, bot).map_err(|e| anyhow!("{}", e.message))?;
    lines(Format::Slack, imported, bare)
}

/// The line of every event: its replay line, or the bare event.
fn lines(format: Format, imported: Imported, bare: bool) -> Result<Loaded> {
    let line = |e: &Event| -> Result<String> {
        if bare {
            return Ok(serde_json::to_string(e)?);
        }
        let line = crate::logline::LogLine::event(e).to_line();
        line.map_err(|e| anyhow!("{}", e.message))
    };
    let lines = imported.events.iter().map(line).collect::<Result<Vec<_>>>()?;
    Ok(Loaded { format, lines, imported })
}

/// The summary for stderr: what was read, the counts, and what was left out by reason.
pub fn summary(r: &Loaded) -> String {
    let mut s = format!("read {}", r.format.name());
    if r.format != Format::Conversation {
        let (people, messages) = (r.imported.people(), r.imported.messages());
        let _ = write!(s, ": {people} people, {messages} messages, {} lines", r.lines.len());
        if !r.imported.skipped.is_empty() {
            let why: Vec<String> = r.imported.skipped.iter().map(|(k, n)| format!("{n} × {k}")).collect();
            let _ = write!(s, "; skipped: {}", why.join(", "));
        }
    }
    s
}

/// Every `.json` file under `root`, by its path relative to it (`/`-separated).
fn dir_files(root: &Path, max_bytes: u64) -> Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    let mut total = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let rel: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            total += text.len() as u64;
            if total > max_bytes {
                bail!("the export holds more than {max_bytes} bytes of JSON (--max-bytes)");
            }
            out.insert(rel.join("/"), parsed(&path.display().to_string(), &text)?);
        }
    }
    Ok(out)
}

/// Every `.json` entry of a ZIP file, by its path relative to the folder holding `users.json` /
/// `channels.json` (an export zipped with its folder reads the same as one zipped from inside it).
fn zip_files(bytes: &[u8], max_bytes: u64) -> Result<BTreeMap<String, Value>> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))?;
    let names: Vec<String> = zip.file_names().map(|n| n.map(|n| n.into_owned())).collect::<Result<_, _>>()?;
    let root = names
        .iter()
        .filter_map(|n| n.strip_suffix("users.json").or_else(|| n.strip_suffix("channels.json")))
        .map(|p| p.strip_suffix("org_").unwrap_or(p))
        .filter(|prefix| prefix.is_empty() || prefix.ends_with('/'))
        .min_by_key(|prefix| prefix.len())
        .unwrap_or_default()
        .to_owned();
    let mut out = BTreeMap::new();
    let mut total = 0u64;
    for name in names {
        let Some(rel) = name.strip_prefix(&root).filter(|r| r.ends_with(".json")) else { continue };
        let mut entry = zip.by_name(&name)?;
        let mut text = String::new();
        // Read through a bound, whatever size the entry claims.
        let left = max_bytes.saturating_sub(total);
        (&mut entry).take(left.saturating_add(1)).read_to_string(&mut text).with_context(|| format!("entry {name}"))?;
        total += text.len() as u64;
        if total > max_bytes {
            bail!("the export holds more than {max_bytes} bytes of JSON once unpacked (--max-bytes)");
        }
        out.insert(rel.to_owned(), parsed(&name, &text)?);
    }
    Ok(out)
}

fn parsed(name: &str, text: &str) -> Result<Value> {
    crate::logline::read_json(text).map_err(|why| anyhow!("{name} {why}"))
}
