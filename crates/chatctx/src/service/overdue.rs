//! The chats waiting for a routine snapshot, served in the order they became due.

use std::collections::{HashSet, VecDeque};

use super::log::ChatKey;

/// Chats past `store.compact_after` waiting for a routine snapshot, oldest first. A write takes a few from the
/// front; a chat made due again after its snapshot goes to the back. So when a steady load makes chats due
/// faster than writes take them, each still gets its turn within a bounded number of writes. (Until issue 32
/// they were served in key order: the first few chats took every turn while the others' logs grew without
/// bound.)
#[derive(Debug, Default)]
pub(super) struct Overdue {
    order: VecDeque<ChatKey>,
    members: HashSet<ChatKey>,
}

impl Overdue {
    /// Puts `chat` at the back, unless it already waits.
    pub(super) fn insert(&mut self, chat: &ChatKey) {
        if self.members.insert(chat.clone()) {
            self.order.push_back(chat.clone());
        }
    }

    pub(super) fn len(&self) -> usize {
        self.order.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The `n` that have waited longest, passing over those `skip` names. They stay on the list until removed.
    pub(super) fn first(&self, n: usize, skip: impl Fn(&ChatKey) -> bool) -> Vec<ChatKey> {
        self.order.iter().filter(|k| !skip(k)).take(n).cloned().collect()
    }

    /// Takes `chats` off the list (those not on it are ignored).
    pub(super) fn remove_all<'a>(&mut self, chats: impl IntoIterator<Item = &'a ChatKey>) {
        let mut removed = false;
        for k in chats {
            removed |= self.members.remove(k);
        }
        if removed {
            let members = &self.members;
            self.order.retain(|k| members.contains(k));
        }
    }

    pub(super) fn remove(&mut self, chat: &ChatKey) {
        self.remove_all([chat]);
    }
}

impl FromIterator<ChatKey> for Overdue {
    fn from_iter<T: IntoIterator<Item = ChatKey>>(chats: T) -> Self {
        let mut out = Self::default();
        for k in chats {
            out.insert(&k);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(chat: &str) -> ChatKey {
        ("t".to_owned(), chat.to_owned())
    }

    /// Served oldest first; a chat that comes back waits behind those already waiting.
    #[test]
    fn oldest_first_and_back_of_the_line_again() {
        let mut o: Overdue = ["c", "a", "b"].into_iter().map(k).collect();
        o.insert(&k("a"));
        assert_eq!(o.len(), 3, "a chat waits once");
        assert_eq!(o.first(2, |_| false), [k("c"), k("a")]);
        assert_eq!(o.first(2, |x| *x == k("a")), [k("c"), k("b")], "skipped, not counted");
        o.remove_all(&[k("c"), k("a")]);
        o.insert(&k("c"));
        assert_eq!(o.first(5, |_| false), [k("b"), k("c")]);
        o.remove(&k("zz"));
        o.remove(&k("b"));
        o.remove(&k("c"));
        assert!(o.is_empty());
    }
}
