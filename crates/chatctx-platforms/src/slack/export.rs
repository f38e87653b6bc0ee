//! Slack workspace exports (Slack's "Export data" layout, also written by slackdump): `users.json` (or
//! `org_users.json` from an Enterprise Grid organisation),
//! `channels.json` (public), `groups.json` (private), `dms.json` (direct messages), `mpims.json` (group direct
//! messages), and one folder per conversation (named by the channel's `name`, a DM's by its `id`) holding one
//! JSON array of messages per day (`2024-01-31.json`).
//!
//! Each exported message is the Events API `message` it was, without its channel: it is mapped by the same
//! code as a live envelope ([`super::map_envelope`]), so subtypes, threads, files, mentions, profiles and the
//! bot's own messages read the same. Reactions (`reactions[].users`) become one reaction per user, dated with
//! the message. Subtypes the mapping does not use are counted, never fatal.

use std::collections::BTreeMap;

use chatctx_core::event::Event;
use chatctx_core::{Error, Timestamp};
use serde_json::{Map, Value, json};

use super::people;
use crate::{Bot, Imported};

/// The conversation lists of an export, with the `chat_type` their conversations get.
const LISTS: &[(&str, &str)] =
    &[("channels.json", "channel"), ("groups.json", "group"), ("mpims.json", "mpim"), ("dms.json", "im")];

/// Whether `files` (paths relative to the export's root) look like a Slack export.
pub fn is_export(files: &BTreeMap<String, Value>) -> bool {
    USERS.iter().chain(LISTS.iter().map(|(list, _)| list)).any(|f| files.contains_key(*f))
}

/// Where an export lists its people (`org_users.json` in an Enterprise Grid organisation's export).
const USERS: &[&str] = &["users.json", "org_users.json"];

/// One conversation of the export: its id, type, and the folder its days are in.
struct Conversation<'a> {
    id: String,
    kind: &'static str,
    folder: &'a str,
}

/// Reads an export, given every JSON file in it by its path relative to the export's root (`users.json`,
/// `general/2024-01-31.json`). `bot` marks the bot's own messages `outbound_agent`.
pub fn import(files: &BTreeMap<String, Value>, bot: &Bot) -> Result<Imported, Error> {
    if !is_export(files) {
        return Err(Error::invalid_event(
            "not a Slack export: expected users.json and channels.json (or groups.json, dms.json, mpims.json) at \
             its root",
        ));
    }
    let mut out = Imported::default();
    let users = match USERS.iter().find(|f| files.contains_key(**f)) {
        Some(f) => list(files, f)?,
        None => &[],
    };
    // The workspace: the team of the export's people, else of its messages.
    let team = users
        .iter()
        .find_map(|u| u.get("team_id").and_then(Value::as_str))
        .or_else(|| files.values().filter_map(Value::as_array).flatten().find_map(|m| m.get("team")?.as_str()))
        .map(str::to_owned);
    for (i, u) in users.iter().enumerate() {
        let path = format!("users.json[{i}]");
        let person = match u.as_object() {
            Some(m) => people::user(m, &path, team.as_deref()),
            None => Err(Error::invalid_event("expected a user object")),
        };
        match person {
            Ok(p) => out.events.push(Event::Person(p)),
            Err(e) => {
                out.warnings.push(format!("{path} skipped: {}", e.message));
                out.skip("a malformed user");
            }
        }
    }
    let mut convs = Vec::new();
    for (file, kind) in LISTS {
        for (i, c) in list(files, file)?.iter().enumerate() {
            let (Some(id), folder) = (c.get("id").and_then(Value::as_str), c.get("name").and_then(Value::as_str))
            else {
                out.warnings.push(format!("{file}[{i}] has no id; skipped"));
                out.skip("a conversation without an id");
                continue;
            };
            // A DM's folder is named by its id; a channel's by its name.
            convs.push(Conversation { id: id.to_owned(), kind, folder: folder.unwrap_or(id) });
        }
    }
    convs.sort_by(|a, b| a.id.cmp(&b.id));
    for conv in &convs {
        let before = out.events.len();
        conversation(files, conv, (team.as_deref(), bot), &mut out);
        // A channel's name is its chat's title (a DM has none), told once its messages made the chat.
        if out.events.len() > before && conv.folder != conv.id {
            out.events.extend(crate::title(super::CHANNEL, conv.id.clone(), None, Some(&Value::from(conv.folder))));
        }
    }
    Ok(out.checked())
}

/// A top-level list file (`users.json`, `channels.json`, …): empty when absent.
fn list<'a>(files: &'a BTreeMap<String, Value>, name: &str) -> Result<&'a [Value], Error> {
    match files.get(name) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(Error::invalid_event(format!("{name}: expected a JSON array"))),
    }
}

/// `"1355517523.000005"` as a sortable pair (seconds, fraction).
fn ts_key(ts: &str) -> (u64, u64) {
    let (s, f) = ts.split_once('.').unwrap_or((ts, "0"));
    (s.parse().unwrap_or(u64::MAX), f.parse().unwrap_or(0))
}

/// One conversation's messages, every day of it, in time order.
// `json!` of plain strings and of values read from JSON: serializing them cannot fail.
#[allow(clippy::disallowed_methods)]
fn conversation(
    files: &BTreeMap<String, Value>,
    conv: &Conversation<'_>,
    (team, bot): (Option<&str>, &Bot),
    out: &mut Imported,
) {
    let prefix = format!("{}/", conv.folder);
    let mut messages: Vec<(&str, usize, &Map<String, Value>)> = Vec::new();
    for (path, day) in files.range(prefix.clone()..).take_while(|(p, _)| p.starts_with(&prefix)) {
        let Some(day) = day.as_array() else {
            out.warnings.push(format!("{path}: expected a JSON array of messages; skipped"));
            out.skip("a day file that is not a list");
            continue;
        };
        for (i, m) in day.iter().enumerate() {
            match m.as_object() {
                Some(m) => messages.push((path, i, m)),
                None => {
                    out.warnings.push(format!("{path}[{i}]: expected a message object; skipped"));
                    out.skip("a malformed message");
                }
            }
        }
    }
    messages.sort_by_key(|(_, _, m)| ts_key(m.get("ts").and_then(Value::as_str).unwrap_or_default()));
    for (path, i, m) in messages {
        let mut event = m.clone();
        event.insert("channel".into(), json!(conv.id));
        event.insert("channel_type".into(), json!(conv.kind));
        event.entry("type").or_insert(json!("message"));
        let envelope = json!({"type": "event_callback", "team_id": team, "event": event});
        let ts = m.get("ts").and_then(Value::as_str).unwrap_or_default();
        match super::map_envelope(&envelope, bot, Timestamp::default()) {
            Ok(mapped) => {
                for reason in mapped.ignored {
                    out.skip(reason);
                }
                out.events.extend(mapped.events);
                reactions(m, (&conv.id, ts), (team, bot), out);
            }
            Err(e) => {
                out.warnings.push(format!("{path}[{i}] skipped: {}", e.message));
                out.skip("a malformed message");
            }
        }
    }
}

/// A message's `reactions` (`[{"name", "users", "count"}]`): one reaction per user, dated with the message.
#[allow(clippy::disallowed_methods)] // `json!` of plain strings
fn reactions(m: &Map<String, Value>, (chat, ts): (&str, &str), (team, bot): (Option<&str>, &Bot), out: &mut Imported) {
    for r in m.get("reactions").and_then(Value::as_array).into_iter().flatten() {
        let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
        for user in r.get("users").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            let added = json!({"type": "event_callback", "team_id": team, "event": {"type": "reaction_added",
                "user": user, "reaction": name, "item": {"type": "message", "channel": chat, "ts": ts}, "event_ts": ts}});
            match super::map_envelope(&added, bot, Timestamp::default()) {
                Ok(mapped) => out.events.extend(mapped.events),
                Err(_) => out.skip("a malformed reaction"),
            }
        }
    }
}
