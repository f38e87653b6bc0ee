//! The deterministic lexical selector (`conversation.selector = "lexical"`): ranks older history items by
//! relevance to the current message without a model.
//!
//! Signals, all language-neutral:
//! - addressing: the current message mentions the item's author, or the item mentions the current speaker
//!   (mentions are read from the normalized `[nick](scheme:@user)` references in the text);
//! - reply links: the item is the message the current one replies to, or replies to the current speaker;
//! - the same speaker continuing;
//!
//! Each relation counts most for the newest message that has it (the newest message by the person the
//! current one addresses is far likelier its parent than their older ones): the k-th newest gets `0.5^k` of
//! the weight.
//! - shared terms, weighted by rarity within the window (IDF), so common words of any language count little
//!   without a stopword list;
//! - recency, as a tie-breaker.

use hashbrown::HashMap;

use crate::chat::{Chat, Item};

/// Weights of the lexical score.
const ADDRESSED: f64 = 3.0;
const ADDRESSES_SPEAKER: f64 = 2.5;
const REPLY_PARENT: f64 = 5.0;
const REPLIES_TO_SPEAKER: f64 = 1.5;
const SAME_SPEAKER: f64 = 2.0;
const TERMS: f64 = 2.0;
const RECENCY: f64 = 1.0;

/// FNV-1a over the lowercased characters of a word: terms and usernames are compared as these hashes, so
/// ranking allocates nothing per word (64 bits make collisions negligible within one window).
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const START: Fnv = Fnv(0xcbf2_9ce4_8422_2325);

    fn push(&mut self, c: char) {
        if c.is_ascii() {
            self.0 = (self.0 ^ u64::from(c.to_ascii_lowercase() as u8)).wrapping_mul(0x0100_0000_01b3);
            return;
        }
        for l in c.to_lowercase() {
            let mut buf = [0u8; 4];
            for b in l.encode_utf8(&mut buf).bytes() {
                self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
}

fn hash_lower(s: &str) -> u64 {
    let mut h = Fnv::START;
    s.chars().for_each(|c| h.push(c));
    h.0
}

/// Usernames mentioned through normalized references (`](tg:@bob)`), as lowercase hashes.
fn mentions(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(close) = after.find(')') else { break };
        if let Some(pos) = after[..close].find(":@") {
            out.push(hash_lower(&after[pos + 2..close]));
        }
        rest = &after[close..];
    }
    out
}

/// Words of at least two characters, as lowercase hashes (sorted, unique), with the link targets of
/// references left out.
fn terms(text: &str) -> Vec<u64> {
    let mut out = Vec::with_capacity(16);
    let (mut h, mut len) = (Fnv::START, 0usize);
    let mut in_target = false;
    let mut prev = '\0';
    for c in text.chars() {
        if in_target {
            in_target = c != ')';
            prev = c;
            continue;
        }
        if c == '(' && prev == ']' {
            in_target = true;
        }
        if c.is_alphanumeric() {
            h.push(c);
            len += 1;
        } else {
            if len >= 2 {
                out.push(h.0);
            }
            (h, len) = (Fnv::START, 0);
        }
        prev = c;
    }
    if len >= 2 {
        out.push(h.0);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Indexes into `older` (oldest first) of the `keep` most relevant items for `current`, best first, with
/// their scores (none when there was nothing to rank: few items, or no current message).
pub(crate) fn rank(chat: &Chat, older: &[&Item], current: Option<&Item>, keep: usize) -> Vec<(usize, Option<f64>)> {
    if older.len() <= keep {
        return (0..older.len()).map(|i| (i, None)).collect();
    }
    let Some(q) = current else {
        // Nothing to compare with: the newest ones.
        return (older.len() - keep..older.len()).rev().map(|i| (i, None)).collect();
    };
    let q_terms = terms(&q.text);
    let q_mentions = mentions(&q.text);
    let q_user = chat.people.username(q.sender).map(hash_lower);
    let q_id = chat.people.user_id(q.sender);
    let c_terms: Vec<Vec<u64>> = older.iter().map(|i| terms(&i.text)).collect();
    // Document frequency over the window (older items and the current message).
    let mut df: HashMap<u64, f64> = HashMap::with_capacity(256);
    for &t in c_terms.iter().flatten().chain(q_terms.iter()) {
        *df.entry(t).or_default() += 1.0;
    }
    // Each term's weight once: frequencies become IDF weights in place.
    let n = (older.len() + 1) as f64;
    for w in df.values_mut() {
        *w = (1.0 + n / *w).ln();
    }
    let idf = |t: u64| df.get(&t).copied().unwrap_or(0.0);
    let q_norm: f64 = q_terms.iter().map(|&t| idf(t)).sum::<f64>().sqrt();

    // Relations, newest first, so each can decay with its rank among the items that have it.
    let (mut n_addressed, mut n_addresses, mut n_replies, mut n_same) = (0i32, 0i32, 0i32, 0i32);
    let mut scored: Vec<(f64, usize)> = Vec::with_capacity(older.len());
    for (idx, c) in older.iter().enumerate().rev() {
        let mut s = 0.0;
        let decayed = |n: &mut i32, w: f64| {
            let v = w * 0.5f64.powi(*n);
            *n += 1;
            v
        };
        let author = chat.people.username(c.sender).map(hash_lower);
        if author.as_ref().is_some_and(|a| q_mentions.contains(a)) {
            s += decayed(&mut n_addressed, ADDRESSED);
        }
        if q_user.as_ref().is_some_and(|u| mentions(&c.text).contains(u)) {
            s += decayed(&mut n_addresses, ADDRESSES_SPEAKER);
        }
        if q.reply_to.is_some() && q.reply_to.as_deref() == c.message_id.as_deref() {
            s += REPLY_PARENT;
        }
        if let Some(parent) = c.reply_to.as_deref()
            && let Some((_, p)) = chat.message(parent)
            && q_id.is_some()
            && chat.people.user_id(p.sender) == q_id
        {
            s += decayed(&mut n_replies, REPLIES_TO_SPEAKER);
        }
        if q_id.is_some() && chat.people.user_id(c.sender) == q_id {
            s += decayed(&mut n_same, SAME_SPEAKER);
        }
        let shared: f64 = c_terms[idx].iter().filter(|t| q_terms.binary_search(t).is_ok()).map(|&t| idf(t)).sum();
        let c_norm: f64 = c_terms[idx].iter().map(|&t| idf(t)).sum::<f64>().sqrt();
        if shared > 0.0 && q_norm > 0.0 && c_norm > 0.0 {
            s += TERMS * shared / (q_norm * c_norm);
        }
        let distance = (older.len() - idx) as f64;
        s += RECENCY / (1.0 + distance / 4.0);
        scored.push((s, idx));
    }
    // Best first; on equal scores the newer item.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    scored.into_iter().take(keep).map(|(s, i)| (i, Some(s))).collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    #[test]
    fn mentions_come_from_references() {
        assert_eq!(
            mentions("[Bob](tg:@Bob) and [Al](irc:@al|x) but not [x](https://e.org)"),
            [hash_lower("bob"), hash_lower("AL|X")]
        );
        assert!(mentions("no refs @here").is_empty());
    }

    #[test]
    fn terms_skip_link_targets_and_single_characters() {
        let mut want: Vec<u64> =
            ["about", "apt", "ask", "bob", "get", "ÜNÏCODE", "日本"].iter().map(|w| hash_lower(w)).collect();
        want.sort_unstable();
        assert_eq!(terms("Ask [Bob](tg:@bob) about apt-get: a b Ünïcode 日本"), want, "lowercased, targets skipped");
    }
}
