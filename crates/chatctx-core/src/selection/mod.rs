//! Prompt context selection (docs/protocol.md §6.3, seed 001): which earlier items go into the prompt.
//!
//! Over the items eligible by the write policy, in the request's scope and before the current message:
//! background items (`scheduled`, `briefing`, `subtask`, `heartbeat`) leave interactive context, except the
//! newest `previous_tasks_count` scheduled or briefing ones and any the current message replies to; the
//! newest `lookback_count` are considered; a recency window measured from the newest of them drops older
//! ones while keeping at least `context_min_messages`; at or below `skip_selection_threshold` everything is
//! kept; otherwise the newest `always_include_recent` are kept and the older ones are chosen by model triage
//! ([`Triage`]) or by the deterministic lexical ranker. The reply parent is always kept. An optional token
//! budget then drops the oldest selected items (never the reply parent).
//!
//! The core does no I/O: model triage is a [`Triage`] implementation the caller installs (the binary's is an
//! OpenAI-compatible HTTP client). Without one, triage fails open and keeps every older item.

mod budget;
mod lexical;
mod triage;

pub use triage::{TRIAGE_SYSTEM, Triage, TriageRequest, TriageSlot, parse_relevant_ids, triage_prompt};

use schemars::JsonSchema;
use serde::Serialize;

use budget::{budget_alone, fit_budget};

use crate::chat::{Chat, Item, Key, in_scope};
use crate::decision::{Budget, HistoryDecision, Reason, TriageOutcome, TriageRecord, Verdicts};
use crate::kinds::Origin;
pub use crate::kinds::SelectionMethod;

use crate::settings::{ConversationSettings, OnTriageError, Policy, Scope, Selector, Settings};

/// What selection did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct SelectionReport {
    /// The method that really ran.
    pub method: SelectionMethod,
    /// Items considered (after lookback, background rules and the recency window).
    pub considered: usize,
    /// Items kept.
    pub kept: usize,
    /// Items kept by rule rather than by choice: `reply_parent`, `previous_task`.
    pub forced: Vec<&'static str>,
}

/// The selected items, oldest first, and the report (and the record, when one was asked for).
pub(crate) struct Selected<'c> {
    pub(crate) items: Vec<&'c Item>,
    pub(crate) report: SelectionReport,
    pub(crate) decision: Option<HistoryDecision>,
}

/// A rough token count: about four bytes per token, plus a few for the message frame. Computed once per item
/// at ingest and cached; a budget needs a consistent measure more than an exact one.
pub fn estimate_tokens(text_bytes: usize) -> u32 {
    u32::try_from(text_bytes.div_ceil(4) + 4).unwrap_or(u32::MAX)
}

/// The newest items before `before` in the scope, newest first, that pass `keep`, at most `limit`.
fn newest<'c>(
    chat: &'c Chat,
    scope: Scope,
    topic: Option<&str>,
    before: Option<Key>,
    floor: Option<Key>,
    limit: usize,
    mut keep: impl FnMut(&'c Item) -> bool,
) -> Vec<&'c Item> {
    let convs = in_scope(chat, scope, topic);
    let mut out: Vec<&Item> = Vec::with_capacity(limit.min(convs.iter().map(|c| c.items.len()).sum()));
    // A plain loop over each conversation's slices, newest first: this walk is most of a long selection.
    for conv in convs {
        let stop = out.len() + limit;
        let (older, newer) = conv.before_slices(before);
        'walk: for part in [newer, older] {
            for i in part.iter().rev() {
                if out.len() == stop || floor.is_some_and(|f| i.key() <= f) {
                    break 'walk;
                }
                if keep(i) {
                    out.push(i);
                }
            }
        }
    }
    if convs.len() > 1 {
        out.sort_unstable_by_key(|i| std::cmp::Reverse(i.key()));
        out.truncate(limit);
    }
    out
}

/// Where a conversation's summary leaves selection: items at or before `floor` are covered by it, and it
/// takes `tokens` of the budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Covered {
    pub(crate) floor: Key,
    pub(crate) tokens: u64,
}

/// What selection looked at and why it kept or left out each item, gathered while it runs when a record is
/// wanted: pointers and codes only, turned into a [`HistoryDecision`] at the end.
#[derive(Default)]
struct Notes<'c> {
    verdicts: Vec<(&'c Item, Reason, Option<f64>)>,
    triage: Option<TriageRecord>,
    /// Items before the request's message, covered or not (set with a summary).
    covered: usize,
    summary_tokens: u64,
}

impl<'c> Notes<'c> {
    /// Sets the verdict of `item` (sorted by key from [`select`]'s first sort on), adding it when new.
    fn set(&mut self, item: &'c Item, reason: Reason) {
        match self.verdicts.binary_search_by_key(&item.key(), |v| v.0.key()) {
            Ok(at) => self.verdicts[at].1 = reason,
            Err(at) => self.verdicts.insert(at, (item, reason, None)),
        }
    }

    fn into_decision(
        self,
        method: SelectionMethod,
        total_before: usize,
        max_tokens: Option<u64>,
        current: Option<&Item>,
    ) -> HistoryDecision {
        let outside_lookback = total_before.saturating_sub(self.verdicts.len());
        let used = self.verdicts.iter().filter(|v| v.1.kept()).map(|v| u64::from(v.0.tokens)).sum::<u64>()
            + current.map_or(0, |c| u64::from(c.tokens))
            + self.summary_tokens;
        // The ids' lengths are in their pointers: sized exactly without reading the ids (growing the buffer
        // would copy them again).
        let id_bytes = self.verdicts.iter().filter_map(|v| v.0.message_id.as_ref()).map(|m| m.len()).sum();
        let mut items = Verdicts::with_capacity(self.verdicts.len(), id_bytes);
        for (i, reason, score) in self.verdicts {
            let score = score.map(|s| (s * 1000.0).round() / 1000.0);
            items.push(i.message_id.as_deref(), (i.kind, i.sent_at), reason, i.tokens, score);
        }
        HistoryDecision {
            method,
            items,
            outside_lookback,
            covered_by_summary: self.covered.saturating_sub(total_before),
            in_other_topics: 0,
            budget: Budget { max_tokens, used_tokens: used, summary_tokens: self.summary_tokens },
            triage: self.triage,
        }
    }
}

impl Reason {
    /// Whether an item with this verdict is in the prompt.
    pub fn kept(self) -> bool {
        !matches!(
            self,
            Reason::NotRecordedByMode
                | Reason::Background
                | Reason::OutsideRecencyWindow
                | Reason::NotChosen
                | Reason::TokenBudget
        )
    }
}

/// Where a selection runs: the topic, the message being answered (if any), and what a summary covers.
pub(crate) struct Place<'a, 'c> {
    pub(crate) topic: Option<&'a str>,
    pub(crate) current: Option<&'c Item>,
    pub(crate) covered: Option<Covered>,
}

/// Runs selection for `current` (or the scope's newest items) and returns the items, oldest first, with a
/// record of every verdict when `record` is set.
pub(crate) fn select<'c>(
    chat: &'c Chat,
    settings: &Settings,
    place: Place<'_, 'c>,
    triage: Option<&dyn Triage>,
    render_line: &dyn Fn(&Item) -> String,
    record: bool,
) -> Selected<'c> {
    let Place { topic, current, covered } = place;
    let conv = &settings.conversation;
    let mode = settings.history.mode;
    let scope = settings.history.scope;
    let before = current.map(Item::key);
    let floor = covered.map(|c| c.floor);
    let mut notes = record.then(|| Notes {
        covered: covered.map_or(0, |_| count(chat, scope, topic, before, None, |_| true)),
        summary_tokens: covered.map_or(0, |c| c.tokens),
        ..Notes::default()
    });
    let total_before = || count(chat, scope, topic, before, floor, |_| true);
    if !conv.enabled {
        let decision = notes.map(|n| n.into_decision(SelectionMethod::All, total_before(), None, current));
        return Selected {
            items: Vec::new(),
            report: SelectionReport { method: SelectionMethod::All, considered: 0, kept: 0, forced: Vec::new() },
            decision,
        };
    }
    if settings.history.policy == Policy::ModeCap {
        let mut items = newest(chat, scope, topic, before, floor, mode.cap(), |i| i.eligible(mode));
        let considered = count(chat, scope, topic, before, floor, |i| i.eligible(mode));
        items.reverse();
        let kept = items.len();
        let decision = notes.map(|mut n| {
            n.verdicts = items.iter().map(|&i| (i, Reason::ModeCap, None)).collect();
            n.into_decision(SelectionMethod::Cap, total_before(), None, current)
        });
        return Selected {
            items,
            report: SelectionReport { method: SelectionMethod::Cap, considered, kept, forced: Vec::new() },
            decision,
        };
    }
    // When every stored item is eligible and all of them are kept, only the token budget chooses: the items
    // are counted by position and read back only as far as the budget reaches (the same answer; a property
    // test compares the two ways).
    if notes.is_none()
        && let Some(selected) = budget_alone(chat, settings, Place { topic, current, covered })
    {
        return selected;
    }
    let mut forced = Vec::new();
    let list = lookback(chat, settings, topic, current, floor, &mut forced, notes.as_mut());
    let considered = list.len();
    // Oldest first from here on, and kept so: the older items picked (in order), then the recent ones.
    let (mut chosen, method) = pick_older(chat, conv, list, current, triage, render_line, notes.as_mut());
    if let Some(n) = notes.as_mut() {
        // Each item is there once and keys are unique within a chat, so an unstable sort orders them the same.
        n.verdicts.sort_unstable_by_key(|v| v.0.key());
        // A background item that is in came back as one of the previous tasks (or is the reply parent, below).
        for v in n.verdicts.iter_mut().filter(|v| v.0.origin != Origin::Interactive && v.1.kept()) {
            v.1 = Reason::PreviousTask;
        }
    }
    let parent = keep_reply_parent(chat, current, &mut chosen, &mut forced);
    if let (Some(p), Some(n)) = (parent, notes.as_mut()) {
        n.set(p, Reason::ReplyParent);
    }
    let budget = (conv.max_context_tokens > 0).then_some(conv.max_context_tokens as u64);
    if let Some(max) = budget {
        let dropped = fit_budget(
            &mut chosen,
            max.saturating_sub(covered.map_or(0, |c| c.tokens)),
            current,
            parent,
            notes.is_some(),
        );
        if let Some(n) = notes.as_mut() {
            for i in dropped {
                n.set(i, Reason::TokenBudget);
            }
        }
    }
    let kept = chosen.len();
    let decision = notes.map(|n| n.into_decision(method, total_before(), budget, current));
    Selected { items: chosen, report: SelectionReport { method, considered, kept, forced }, decision }
}

/// The eligible items of the lookback, oldest first: background items leave interactive context (the newest
/// few scheduled/briefing outputs come back), and the recency window applies, measured from the newest item
/// (not from now), keeping a minimum.
fn lookback<'c>(
    chat: &'c Chat,
    settings: &Settings,
    topic: Option<&str>,
    current: Option<&'c Item>,
    floor: Option<Key>,
    forced: &mut Vec<&'static str>,
    mut notes: Option<&mut Notes<'c>>,
) -> Vec<&'c Item> {
    let conv = &settings.conversation;
    let mode = settings.history.mode;
    let parent_id = current.and_then(|c| c.reply_to.as_deref());
    let mut tasks_left = conv.previous_tasks_count;
    let mut skipped: Vec<(&'c Item, Reason, Option<f64>)> = Vec::new();
    let recording = notes.is_some();
    let before = current.map(Item::key);
    let mut list = newest(chat, settings.history.scope, topic, before, floor, conv.lookback_count, |i| {
        let verdict = if !i.eligible(mode) {
            Err(Reason::NotRecordedByMode)
        } else {
            match i.origin {
                Origin::Interactive => Ok(()),
                _ if parent_id.is_some() && i.message_id.as_deref() == parent_id => Ok(()),
                Origin::Scheduled | Origin::Briefing if tasks_left > 0 => {
                    tasks_left -= 1;
                    Ok(())
                }
                _ => Err(Reason::Background),
            }
        };
        if let (true, Err(reason)) = (recording, verdict) {
            skipped.push((i, reason, None));
        }
        verdict.is_ok()
    });
    if tasks_left < conv.previous_tasks_count {
        forced.push("previous_task");
    }
    if conv.context_recency_hours > 0.0
        && let Some(newest) = list.first().map(|i| i.sent_at)
    {
        let window = (conv.context_recency_hours * 3600.0) as i64;
        let cutoff = newest.unix().saturating_sub(window);
        let keep = list.iter().take_while(|i| i.sent_at.unix() >= cutoff).count().max(conv.context_min_messages);
        if let Some(n) = notes.as_deref_mut() {
            let cut = list.get(keep..).unwrap_or_default();
            n.verdicts.extend(cut.iter().map(|&i| (i, Reason::OutsideRecencyWindow, None)));
        }
        list.truncate(keep);
    }
    if let Some(n) = notes {
        // Skipped items older than the lookback's oldest were passed by a walk over another topic's items
        // (a chat-wide scope walks each topic) and belong outside it.
        let oldest = if list.len() == conv.lookback_count { list.last().map(|i| i.key()) } else { None };
        n.verdicts.extend(skipped.into_iter().filter(|v| oldest.is_none_or(|o| v.0.key() > o)));
    }
    list.reverse();
    list
}

/// Keeps the recent items and chooses among the older ones (all, by the lexical selector, or by model
/// triage), oldest first.
fn pick_older<'c>(
    chat: &'c Chat,
    conv: &ConversationSettings,
    list: Vec<&'c Item>,
    current: Option<&'c Item>,
    triage: Option<&dyn Triage>,
    render_line: &dyn Fn(&Item) -> String,
    notes: Option<&mut Notes<'c>>,
) -> (Vec<&'c Item>, SelectionMethod) {
    let considered = list.len();
    if !conv.use_selection || considered <= conv.skip_selection_threshold || considered <= conv.always_include_recent {
        if let Some(n) = notes {
            n.verdicts.extend(list.iter().map(|&i| (i, Reason::AlwaysInclude, None)));
        }
        return (list, SelectionMethod::All);
    }
    let (older, recent) = list.split_at(considered - conv.always_include_recent);
    let mut triage_record = None;
    // With no model configured the deterministic selector stands in for it (and says so in `method`).
    let selector = match conv.selector {
        Selector::Model if !triage.is_some_and(|t| t.configured()) => Selector::Lexical,
        s => s,
    };
    let picked: Result<Vec<(usize, Option<f64>)>, SelectionMethod> = match selector {
        Selector::Lexical => Ok(lexical::rank(chat, older, current, conv.lexical_keep)),
        Selector::Model => ask_model(conv, older, current, triage, render_line, &mut triage_record),
    };
    let method = match (&picked, selector) {
        (Ok(_), Selector::Lexical) => SelectionMethod::Lexical,
        (Ok(_), Selector::Model) => SelectionMethod::Triage,
        (Err(m), _) => *m,
    };
    let mut chosen: Vec<&Item> = match &picked {
        Ok(ids) => {
            let mut ids: Vec<usize> = ids.iter().map(|p| p.0).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.into_iter().filter_map(|i| older.get(i).copied()).collect()
        }
        Err(SelectionMethod::FailOpen) => older.to_vec(),
        Err(_) => Vec::new(),
    };
    if let Some(n) = notes {
        // Written straight after the verdicts already there (no list of their own to copy over).
        let start = n.verdicts.len();
        n.verdicts.reserve(considered);
        let unpicked =
            if matches!(picked, Err(SelectionMethod::FailOpen)) { Reason::AlwaysInclude } else { Reason::NotChosen };
        n.verdicts.extend(older.iter().map(|&i| (i, unpicked, None)));
        if let Ok(ids) = &picked {
            let why = if method == SelectionMethod::Lexical { Reason::LexicalScore } else { Reason::ModelTriage };
            let older_verdicts = &mut n.verdicts[start..];
            for &(i, score) in ids {
                if let Some(v) = older_verdicts.get_mut(i) {
                    *v = (v.0, why, score);
                }
            }
        }
        n.verdicts.extend(recent.iter().map(|&i| (i, Reason::RecentWindow, None)));
        n.triage = triage_record;
    }
    chosen.extend_from_slice(recent);
    (chosen, method)
}

/// Model triage of the older items: the positions it keeps, or the method that stands in for it (no model
/// configured: fail open; an empty answer: recent only; an error: as `on_triage_error` says). What was asked
/// and how it ended goes to `record`.
fn ask_model(
    conv: &ConversationSettings,
    older: &[&Item],
    current: Option<&Item>,
    triage: Option<&dyn Triage>,
    render_line: &dyn Fn(&Item) -> String,
    record: &mut Option<TriageRecord>,
) -> Result<Vec<(usize, Option<f64>)>, SelectionMethod> {
    let Some(t) = triage.filter(|t| t.configured()) else { return Err(SelectionMethod::FailOpen) };
    let lines: Vec<String> = older.iter().map(|i| render_line(i)).collect();
    let request = TriageRequest {
        model: conv.selection_model.clone(),
        timeout_secs: conv.selection_timeout,
        messages: triage_prompt(&lines, current.map(render_line).as_deref()),
        count: older.len(),
    };
    let answer = t.triage(&request);
    let (outcome, error) = match &answer {
        Ok(ids) if ids.is_empty() => (TriageOutcome::Empty, None),
        Ok(_) => (TriageOutcome::Chosen, None),
        Err(e) => (TriageOutcome::Error, Some(crate::render::excerpt(e, 200))),
    };
    *record = Some(TriageRecord {
        model: request.model,
        listed: request.count,
        timeout_secs: request.timeout_secs,
        outcome,
        chosen: answer
            .as_ref()
            .map(|ids| ids.iter().filter_map(|&i| older.get(i).and_then(|o| o.message_id.clone())).collect())
            .unwrap_or_default(),
        error,
    });
    match answer {
        Ok(ids) if ids.is_empty() => Err(SelectionMethod::RecentOnly),
        Ok(ids) => Ok(ids.into_iter().map(|i| (i, None)).collect()),
        Err(_) => Err(match conv.on_triage_error {
            OnTriageError::RecentOnly => SelectionMethod::RecentOnly,
            OnTriageError::KeepAll => SelectionMethod::FailOpen,
        }),
    }
}

/// The reply parent always comes along, even when triage dropped it or it lies outside the lookback. Returns
/// it, when there is one.
fn keep_reply_parent<'c>(
    chat: &'c Chat,
    current: Option<&Item>,
    chosen: &mut Vec<&'c Item>,
    forced: &mut Vec<&'static str>,
) -> Option<&'c Item> {
    let p = reply_parent(chat, current)?;
    if let Err(at) = chosen.binary_search_by_key(&p.key(), |i| i.key()) {
        chosen.insert(at, p);
        forced.push("reply_parent");
    }
    Some(p)
}

/// The stored message `current` replies to, when it came before it.
fn reply_parent<'c>(chat: &'c Chat, current: Option<&Item>) -> Option<&'c Item> {
    let (_, p) = chat.message(current.and_then(|c| c.reply_to.as_deref())?)?;
    current.is_none_or(|c| p.key() < c.key()).then_some(p)
}

/// How many items before `before` in the scope pass `keep` (for the mode cap's report).
fn count(
    chat: &Chat,
    scope: Scope,
    topic: Option<&str>,
    before: Option<Key>,
    floor: Option<Key>,
    keep: impl Fn(&Item) -> bool,
) -> usize {
    let slices = in_scope(chat, scope, topic).iter().map(|c| c.before_slices(before));
    let after = |i: &Item| floor.is_none_or(|f| i.key() > f);
    slices.map(|(older, newer)| older.iter().chain(newer).filter(|i| after(i) && keep(i)).count()).sum()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    #[test]
    fn triage_answers_are_read_tolerantly() {
        assert_eq!(parse_relevant_ids(r#"{"relevant_ids": [1, 3]}"#, 5), Ok(vec![0, 2]));
        assert_eq!(
            parse_relevant_ids("```json\n{\"relevant_ids\": [\"2\", 2, 9, 0]}\n```", 5),
            Ok(vec![1]),
            "fenced, duplicates, out of range"
        );
        assert_eq!(
            parse_relevant_ids("Sure! Here you go: {\"relevant_ids\": [\"[4]\"]} Hope it helps {", 5),
            Ok(vec![3])
        );
        assert_eq!(
            parse_relevant_ids(r#"{"note": {"x": 1}} then {"relevant_ids": []}"#, 5),
            Ok(vec![]),
            "a valid empty list"
        );
        assert!(parse_relevant_ids("I think messages 1 and 3", 5).is_err());
        assert!(parse_relevant_ids(r#"{"ids": [1]}"#, 5).is_err());
        assert!(parse_relevant_ids("", 5).is_err());
    }

    #[test]
    fn token_estimate() {
        assert_eq!(estimate_tokens(0), 4);
        assert_eq!(estimate_tokens(400), 104);
    }
}
