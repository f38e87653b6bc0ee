//! The set of objects (or stored messages) a call has seen, so each is taken once: a resolution's candidates, a
//! listing's objects.

/// A set of candidate keys (addresses, never 0) for one call: open addressing with linear probing, kept at most
/// half full, so de-duplication costs a multiply and a probe or two per reference.
pub(crate) struct Seen {
    slots: Vec<usize>,
    mask: usize,
    len: usize,
}

thread_local! {
    /// The table of this thread's last [`Seen`], kept for its next: a fresh table of 2 KB costs an allocation on
    /// the allocator's slow path (blocks over 1 KB) and a free each resolution; a kept one is only cleared.
    static SLOTS: std::cell::Cell<Vec<usize>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Seen {
    pub(crate) fn with_capacity(n: usize) -> Self {
        let size = (2 * n).max(16).next_power_of_two();
        let mut slots = SLOTS.take();
        slots.clear();
        slots.resize(size, 0);
        Self { slots, mask: size - 1, len: 0 }
    }

    /// Inserts `key`; false when it was already there.
    #[inline]
    pub(crate) fn insert(&mut self, key: usize) -> bool {
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let mut i = self.slot_of(key);
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = key;
                    self.len += 1;
                    return true;
                }
                k if k == key => return false,
                _ => i = (i + 1) & self.mask,
            }
        }
    }

    fn slot_of(&self, key: usize) -> usize {
        // Fibonacci hashing of the address; its low bits are alignment, so shift them out first.
        ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) & self.mask
    }

    #[cold]
    fn grow(&mut self) {
        let old = std::mem::replace(&mut self.slots, vec![0; 2 * (self.mask + 1)]);
        self.mask = self.slots.len() - 1;
        self.len = 0;
        for key in old.into_iter().filter(|&k| k != 0) {
            self.insert(key);
        }
    }
}

impl Drop for Seen {
    fn drop(&mut self) {
        SLOTS.set(std::mem::take(&mut self.slots));
    }
}

#[cfg(test)]
mod tests {
    proptest::proptest! {
        /// Whatever it grows through, the set answers as a `HashSet` of the same keys would.
        #[test]
        fn seen_is_a_set(keys in proptest::collection::vec(1usize..400, 0..700), start in 0usize..40) {
            let mut seen = super::Seen::with_capacity(start);
            let mut set = std::collections::HashSet::new();
            for k in keys {
                // Addresses are aligned: the low bits the hash shifts out are zero.
                proptest::prop_assert_eq!(seen.insert(k << 3), set.insert(k));
            }
        }
    }
}
