//! The token budget (`max_context_tokens`): dropping the oldest selected items that do not fit, and the short
//! way to a selection the budget alone decides.

use super::{Place, Selected, SelectionMethod, SelectionReport, keep_reply_parent, reply_parent};
use crate::chat::{Chat, Item, in_scope};
use crate::settings::Settings;

/// The selection when it would keep every item it considers and only the budget chooses — one conversation
/// in scope, every stored item in it eligible (no background item, nothing the mode leaves out), no recency
/// window, and the method `all` (no selector, or no more items than its thresholds): the considered items
/// are counted by position, and only those a budget could keep are read — the newest that fit, and the reply
/// parent when it is among the considered ones (as the full list would have it). `None` when the long way
/// must run.
pub(super) fn budget_alone<'c>(chat: &'c Chat, settings: &Settings, place: Place<'_, 'c>) -> Option<Selected<'c>> {
    let conv = &settings.conversation;
    if conv.max_context_tokens == 0 || conv.context_recency_hours > 0.0 {
        return None;
    }
    let [c] = in_scope(chat, settings.history.scope, place.topic) else { return None };
    if !c.items.all_eligible(settings.history.mode) {
        return None;
    }
    let end = c.end_before(place.current.map(Item::key));
    let start = place.covered.map_or(0, |f| c.items.partition_point(|i| i.key() <= f.floor)).min(end);
    let considered = (end - start).min(conv.lookback_count);
    if conv.use_selection && considered > conv.skip_selection_threshold && considered > conv.always_include_recent {
        return None;
    }
    let parent = reply_parent(chat, place.current);
    let is_parent = |i: &Item| parent.is_some_and(|p| std::ptr::eq(i, p));
    let budget = (conv.max_context_tokens as u64).saturating_sub(place.covered.map_or(0, |c| c.tokens));
    let mut total = place.current.map_or(0, |c| u64::from(c.tokens)) + parent.map_or(0, |p| u64::from(p.tokens));
    let mut list = Vec::with_capacity(considered.min(128));
    let mut walk = c.items.range(end - considered..end).rev();
    for i in walk.by_ref() {
        if !is_parent(i) {
            if total + u64::from(i.tokens) > budget {
                break;
            }
            total += u64::from(i.tokens);
        }
        list.push(i);
    }
    // The parent further back, among the considered items: the full list has it too.
    if let Some(p) = walk.find(|i| is_parent(i)) {
        list.push(p);
    }
    list.reverse();
    let mut forced = Vec::new();
    keep_reply_parent(chat, place.current, &mut list, &mut forced);
    fit_budget(&mut list, budget, place.current, parent, false);
    let report = SelectionReport { method: SelectionMethod::All, considered, kept: list.len(), forced };
    Some(Selected { items: list, report, decision: None })
}

/// The token budget drops the oldest selected items first, never the reply parent: one pass from the newest
/// finds how far back the budget reaches. Returns the items it dropped when `report` is set (for a record;
/// a long history drops most of its items, and nothing else wants them).
pub(super) fn fit_budget<'c>(
    chosen: &mut Vec<&'c Item>,
    budget: u64,
    current: Option<&Item>,
    parent: Option<&'c Item>,
    report: bool,
) -> Vec<&'c Item> {
    let is_parent = |i: &Item| parent.is_some_and(|p| std::ptr::eq(i, p));
    let mut total: u64 = current.map_or(0, |c| u64::from(c.tokens)) + parent.map_or(0, |p| u64::from(p.tokens));
    let mut start = chosen.len();
    while start > 0 {
        let i = chosen[start - 1];
        if !is_parent(i) {
            if total + u64::from(i.tokens) > budget {
                break;
            }
            total += u64::from(i.tokens);
        }
        start -= 1;
    }
    // The parent, when it is older than the budget reaches, stays first.
    let older_parent = parent.filter(|p| chosen[..start].binary_search_by_key(&p.key(), |i| i.key()).is_ok());
    let dropped: Vec<&Item> = match report {
        true => chosen.drain(..start).filter(|i| !is_parent(i)).collect(),
        false => {
            chosen.drain(..start);
            Vec::new()
        }
    };
    if let Some(p) = older_parent {
        chosen.insert(0, p);
    }
    dropped
}
