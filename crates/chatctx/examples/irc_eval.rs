//! Context-selection quality on real multi-party chat: the IRC disentanglement dev set (Kummerfeld et al.,
//! ACL 2019, CC-BY-4.0) with gold reply links. Every log is replayed into an engine as chat events, twice: with
//! entities (a speaker already seen, named at the start of a line or elsewhere, becomes a mention entity, as on
//! Telegram), and as plain text, as an IRC log or a plain `message` event arrives (chatctx then finds the
//! leading `nick:` / `nick,` itself); then, for every annotated message with a gold parent,
//! `get_chat_history_context` is asked for its context with lookback 50, and we count how often a gold parent
//! is in it.
//!
//! Then reference resolution (docs/resolver.md, "Only where something refers"): each log is replayed with
//! `resolve_reference_target` asked for every annotated message as it arrives, once with
//! `resolver.require_reference` off (every message resolved, as before issue 30) and once on; the answers are
//! split by whether the message holds a referring expression, and the resolved ones checked against the gold
//! parent (a winner carried by a gold parent message). `resolver.min_score` is 10 there: IRC has no objects but
//! links and no replies, so with the default 40 no bare message ever wins, before or after.
//!
//! Run: `bench/irc_eval.sh` (or `cargo run --release -p chatctx --example irc_eval -- FILE`).

// `json!` expands to an internal `unwrap` on serializing plain values, which cannot fail.
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, HashSet};

use chatctx_core::settings::{Mode, Selector, Settings};
use chatctx_core::tools::GetChatHistoryContext;
use chatctx_core::{Engine, Event};
use serde_json::{Value, json};

struct Line {
    idx: u64,
    speaker: String,
    text: String,
    time: String,
    gold: Vec<u64>,
}

fn load(path: &str) -> BTreeMap<String, Vec<Line>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let mut files: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}"));
        if v["kind"] == "system" {
            continue; // joins, quits, topic changes: not conversation
        }
        let Some(speaker) = v["speaker"].as_str() else { continue };
        let gold = if v["annotated"] == true {
            v["gold_parents"].as_array().map(|a| a.iter().filter_map(Value::as_u64).collect()).unwrap_or_default()
        } else {
            Vec::new()
        };
        files.entry(v["file"].as_str().unwrap_or_default().to_owned()).or_default().push(Line {
            idx: v["idx"].as_u64().unwrap_or_default(),
            speaker: speaker.to_owned(),
            text: v["text"].as_str().unwrap_or_default().to_owned(),
            time: v["time"].as_str().unwrap_or("00:00").to_owned(),
            gold,
        });
    }
    files
}

/// Characters IRC allows in a nick.
fn nick_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-|^`[]{}\\".contains(c)
}

/// Mentions of known speakers, as Telegram would mark them with entities: a leading `nick:` / `nick,` /
/// `nick ` (any case), and elsewhere a known nick of four or more characters written exactly.
fn mention_spans(text: &str, known: &HashSet<String>, lower: &HashSet<String>) -> Vec<(usize, usize, String)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (nick_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let word = &text[s..i];
                let leading = s == 0;
                if (leading && lower.contains(&word.to_lowercase())) || (word.len() >= 4 && known.contains(word)) {
                    spans.push((s, i, word.to_owned()));
                }
                start = None;
            }
            _ => {}
        }
    }
    spans
}

/// The chat event of one IRC line, with its mentions as `text_mention` entities (UTF-16 offsets).
fn event(file: &str, line: &Line, known: &HashSet<String>, lower: &HashSet<String>, entities: bool) -> Event {
    let date = file.split('_').next().unwrap_or("2004-01-01");
    let mut v = json!({"type": "message", "channel": "irc", "chat_id": file, "message_id": line.idx.to_string(),
        "kind": "inbound_user", "sent_at": format!("{date}T{}:00Z", line.time), "text": line.text,
        "sender": {"user_id": line.speaker, "username": line.speaker}, "triggered_agent": true});
    let spans = if entities { mention_spans(&line.text, known, lower) } else { Vec::new() };
    let entities: Vec<Value> = spans
        .into_iter()
        .map(|(s, e, nick)| {
            let offset = line.text[..s].encode_utf16().count();
            let length = line.text[s..e].encode_utf16().count();
            json!({"type": "text_mention", "offset": offset, "length": length, "user": {"user_id": nick, "username": nick}})
        })
        .collect();
    if !entities.is_empty() {
        v["entities"] = Value::Array(entities);
    }
    Event::decode(&v).unwrap_or_else(|e| panic!("{e}"))
}

/// Share of annotated messages whose gold parent is in the selected context.
fn evaluate(files: &BTreeMap<String, Vec<Line>>, settings: &Settings, entities: bool) -> (usize, usize) {
    let (mut hits, mut total) = (0, 0);
    for (file, lines) in files {
        let mut engine = Engine::new(settings.clone());
        let (mut known, mut lower) = (HashSet::new(), HashSet::new());
        for line in lines {
            let _ = engine.apply(event(file, line, &known, &lower, entities));
            known.insert(line.speaker.clone());
            lower.insert(line.speaker.to_lowercase());
        }
        for line in lines.iter().filter(|l| !l.gold.is_empty()) {
            let req = GetChatHistoryContext {
                scope: chatctx_core::tools::Scope {
                    channel: "irc".into(),
                    topic_id: None,
                    current_message_id: Some(line.idx.to_string()),
                    ..chatctx_core::tools::Scope::chat(file.clone())
                },
                now: None,
            };
            let Ok(h) = engine.get_chat_history_context(&req) else { continue };
            total += 1;
            let selected: HashSet<&str> = h.items.iter().filter_map(|i| i.message_id).collect();
            if line.gold.iter().any(|g| selected.contains(g.to_string().as_str())) {
                hits += 1;
            }
        }
    }
    (hits, total)
}

fn settings(recent: usize, keep: Option<usize>) -> Settings {
    let mut s = Settings::default();
    s.history.mode = Mode::Talkative;
    s.conversation.cache_max_per_conversation = 10_000;
    s.conversation.skip_selection_threshold = 0;
    match keep {
        Some(k) => {
            s.conversation.lookback_count = 50;
            s.conversation.selector = Selector::Lexical;
            s.conversation.always_include_recent = recent;
            s.conversation.lexical_keep = k;
        }
        None => {
            // Recency alone: the newest `recent` items.
            s.conversation.lookback_count = recent;
            s.conversation.use_selection = false;
        }
    }
    s
}

/// Per kind of message (without / with a referring expression): how many, how many came back `resolved` or
/// `ambiguous`, and how many resolved to a gold parent's object.
#[derive(Default, Clone, Copy)]
struct Outcomes {
    asked: usize,
    answered: usize,
    gold: usize,
}

/// Each answer of a message with a referring expression: (log, line) → (status, winner).
type Answers = BTreeMap<(String, u64), (String, Option<String>)>;

/// Resolution of every annotated message as it arrives, with `require_reference` as given.
fn resolutions(files: &BTreeMap<String, Vec<Line>>, require: bool) -> ([Outcomes; 2], Answers) {
    let mut s = settings(5, Some(5));
    s.resolver.require_reference = require;
    // IRC lines carry no objects but links, and no replies: only bare messages are candidates, and with the
    // default min_score (40) none ever wins, before or after. A lower bar lets them, as objects would.
    s.resolver.min_score = 10.0;
    let mut out = [Outcomes::default(); 2];
    let mut answers = Answers::new();
    for (file, lines) in files {
        let mut engine = Engine::new(s.clone());
        let (mut known, mut lower) = (HashSet::new(), HashSet::new());
        for line in lines {
            let ev = event(file, line, &known, &lower, true);
            let now = ev.time();
            let _ = engine.apply(ev);
            known.insert(line.speaker.clone());
            lower.insert(line.speaker.to_lowercase());
            if line.gold.is_empty() {
                continue;
            }
            let args = json!({"channel": "irc", "chat_id": file, "current_message_id": line.idx.to_string(),
                "sender_user_id": line.speaker});
            let r = match engine.call("resolve_reference_target", &args, now) {
                Ok(chatctx_core::tools::ToolResponse::Resolve(r)) => r,
                other => panic!("{file} line {}: {other:?}", line.idx),
            };
            let refers = chatctx_core::tools::resolve::refers::refers(&line.text);
            if refers {
                let winner = r.best_match.as_ref().map(|b| b.object_id.to_string());
                answers.insert((file.clone(), line.idx), (format!("{:?}", r.status), winner));
            }
            let o = &mut out[usize::from(refers)];
            o.asked += 1;
            if r.status != chatctx_core::kinds::Status::NotFound {
                o.answered += 1;
            }
            let source = r.best_match.as_ref().and_then(|b| b.source_message_id.as_deref());
            if source.is_some_and(|s| line.gold.iter().any(|g| g.to_string() == s)) {
                o.gold += 1;
            }
        }
    }
    (out, answers)
}

fn main() {
    let path =
        std::env::args().nth(1).unwrap_or_else(|| "../shared/datasets/irc-disentanglement/dev.events.jsonl".to_owned());
    let files = load(&path);
    println!(
        "{} logs; lookback 50; share of annotated messages whose gold parent is in the selected context",
        files.len()
    );
    for (label, recent, keep, target) in
        [("5 items: 2 recent + 3 lexical", 2, 3, 0.90), ("10 items: 5 recent + 5 lexical", 5, 5, 0.96)]
    {
        let budget = recent + keep;
        let (bh, bt) = evaluate(&files, &settings(budget, None), true);
        let share = |h: usize, t: usize| h as f64 / t.max(1) as f64;
        for entities in [true, false] {
            let (h, t) = evaluate(&files, &settings(recent, Some(keep)), entities);
            let how = if entities { "with entities" } else { "plain text   " };
            println!(
                "{label:32} {how}  lexical {:.3} ({h}/{t}, target {target:.2})   recency alone {:.3} ({bh}/{bt})   {:+.1} points",
                share(h, t),
                share(bh, bt),
                (share(h, t) - share(bh, bt)) * 100.0
            );
        }
    }
    println!(
        "\nresolve_reference_target for every annotated message (resolved or ambiguous / resolved to a gold parent):"
    );
    let ((before, answered_before), (after, answered_after)) = (resolutions(&files, false), resolutions(&files, true));
    for (i, what) in ["without a referring expression", "with a referring expression   "].iter().enumerate() {
        let (b, a) = (before[i], after[i]);
        println!(
            "  {what} ({:5} messages): before {:5} answered ({:5.1} %), {:4} to a gold parent   after {:5} answered ({:5.1} %), {:4} to a gold parent",
            b.asked,
            b.answered,
            100.0 * b.answered as f64 / b.asked.max(1) as f64,
            b.gold,
            a.answered,
            100.0 * a.answered as f64 / a.asked.max(1) as f64,
            a.gold
        );
    }
    let same = answered_before.iter().filter(|(k, v)| answered_after.get(*k) == Some(*v)).count();
    println!(
        "  messages with a referring expression answered the same before and after: {same} of {}",
        answered_before.len()
    );
}
