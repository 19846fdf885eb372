//! What the runtime keeps of unfinished vertices, by id.
//!
//! Ids are handed out in launch order and vertices mostly finish in about that order, so the
//! recent ones sit in a ring indexed by `id - base`: a launch and a retirement each cost an
//! index instead of a hash-table insert and remove (which were a tenth of a launch's time). A
//! vertex that stays unfinished while many later ones come and go (a long kernel on one stream
//! beside short ones on others) leaves the ring for a side table once the ring is full, so
//! memory stays bounded by the number of unfinished vertices plus the ring.

use rustc_hash::FxHashMap as HashMap;

use crate::model::VertexId;

/// The most ids the ring spans (a power of two).
const RING_LIMIT: usize = 4096;

/// A map from vertex ids to `T` for ids given out in increasing order.
///
/// The ring is a vector used circularly rather than a `VecDeque`: entries leave its front by
/// moving the head, where popping a deque would copy each (large, already empty) slot out.
#[derive(Clone, Debug)]
pub(crate) struct VertexTable<T> {
    /// The id at the head of the ring.
    base: VertexId,
    /// The slots; the length is the capacity, a power of two (or 0).
    ring: Vec<Option<T>>,
    /// Where `base` sits in `ring`.
    head: usize,
    /// How many ids from `base` on the ring spans.
    span: usize,
    /// Entries older than `base`, moved out of a full ring.
    old: HashMap<VertexId, T>,
    len: usize,
}

impl<T> Default for VertexTable<T> {
    fn default() -> Self {
        VertexTable {
            base: 0,
            ring: Vec::new(),
            head: 0,
            span: 0,
            old: HashMap::default(),
            len: 0,
        }
    }
}

impl<T> VertexTable<T> {
    fn slot(&self, offset: usize) -> usize {
        (self.head + offset) & (self.ring.len() - 1)
    }

    /// The slot of `id`, if the ring spans it.
    fn ring_slot(&self, id: VertexId) -> Option<usize> {
        let offset = id.checked_sub(self.base)?;
        (offset < self.span).then(|| self.slot(offset))
    }

    /// Moves the ring's first entry aside (or drops its empty slot).
    fn advance(&mut self) {
        let head = self.head;
        if let Some(oldest) = self.ring[head].take() {
            self.old.insert(self.base, oldest);
        }
        self.head = self.slot(1);
        self.base += 1;
        self.span -= 1;
    }

    /// Doubles the ring, keeping the entries in order.
    fn grow(&mut self) {
        let capacity = (2 * self.ring.len()).max(16);
        let mut ring: Vec<Option<T>> = Vec::with_capacity(capacity);
        for offset in 0..self.span {
            let slot = self.slot(offset);
            ring.push(self.ring[slot].take());
        }
        ring.resize_with(capacity, || None);
        self.ring = ring;
        self.head = 0;
    }

    /// Adds (or replaces) the entry of `id`.
    pub(crate) fn insert(&mut self, id: VertexId, value: T) {
        if id < self.base {
            if self.old.insert(id, value).is_none() {
                self.len += 1;
            }
            return;
        }
        if self.span == 0 {
            // Nothing in the ring: start it at `id`, whatever came before.
            self.base = id;
        }
        let offset = id - self.base;
        if offset >= RING_LIMIT {
            // Keep the ring within its bound: the oldest entries still there move aside.
            while self.span > 0 && id - self.base >= RING_LIMIT {
                self.advance();
            }
            if self.span == 0 {
                self.base = id;
            }
        }
        let offset = id - self.base;
        while offset >= self.ring.len() {
            self.grow();
        }
        self.span = self.span.max(offset + 1);
        let slot = self.slot(offset);
        if self.ring[slot].replace(value).is_none() {
            self.len += 1;
        }
    }

    pub(crate) fn get(&self, id: VertexId) -> Option<&T> {
        match self.ring_slot(id) {
            Some(slot) => self.ring[slot].as_ref(),
            None if id < self.base => self.old.get(&id),
            None => None,
        }
    }

    pub(crate) fn get_mut(&mut self, id: VertexId) -> Option<&mut T> {
        match self.ring_slot(id) {
            Some(slot) => self.ring[slot].as_mut(),
            None if id < self.base => self.old.get_mut(&id),
            None => None,
        }
    }

    pub(crate) fn contains(&self, id: VertexId) -> bool {
        self.get(id).is_some()
    }

    /// Takes the entry of `id` out.
    pub(crate) fn remove(&mut self, id: VertexId) -> Option<T> {
        let value = match self.ring_slot(id) {
            Some(slot) => self.ring[slot].take(),
            None if id < self.base => self.old.remove(&id),
            None => None,
        };
        if value.is_some() {
            self.len -= 1;
            self.trim();
        }
        value
    }

    /// Empty slots at the front leave, so the ring spans only what may be live.
    fn trim(&mut self) {
        while self.span > 0 && self.ring[self.head].is_none() {
            self.head = self.slot(1);
            self.base += 1;
            self.span -= 1;
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Every entry with its id, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (VertexId, &T)> {
        let base = self.base;
        self.old.iter().map(|(&id, v)| (id, v)).chain(
            (0..self.span)
                .filter_map(move |offset| self.ring[self.slot(offset)].as_ref().map(|v| (base + offset, v))),
        )
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.iter().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_in_the_ring_and_after_they_left_it() {
        let mut table = VertexTable::default();
        table.insert(0, "long");
        for id in 1..3 * RING_LIMIT {
            table.insert(id, "short");
            if id % 3 != 0 {
                assert_eq!(table.remove(id), Some("short"));
            }
        }
        assert_eq!(table.get(0), Some(&"long"), "moved aside, still there");
        assert_eq!(table.len(), 1 + (3 * RING_LIMIT - 1) / 3);
        assert!(table.span <= RING_LIMIT);
        let mut ids: Vec<VertexId> = table.iter().map(|(id, _)| id).collect();
        ids.sort_unstable();
        assert_eq!(ids[0], 0);
        assert!(ids[1..].iter().all(|id| id % 3 == 0));
        assert_eq!(table.remove(0), Some("long"));
        assert_eq!(table.remove(0), None, "removed once");
        for id in (3..3 * RING_LIMIT).step_by(3) {
            assert_eq!(table.remove(id), Some("short"));
        }
        assert_eq!(table.len(), 0);
        assert!(table.span == 0 && table.old.is_empty());
    }

    #[test]
    fn replacing_and_missing_ids() {
        let mut table = VertexTable::default();
        table.insert(5, 1);
        table.insert(5, 2);
        assert_eq!(table.len(), 1);
        assert_eq!(table.get(5), Some(&2));
        assert_eq!(table.get(4), None);
        assert_eq!(table.get(6), None);
        assert!(!table.contains(7));
        *table.get_mut(5).expect("there") += 1;
        assert_eq!(table.remove(5), Some(3));
        assert_eq!(table.remove(5), None);
        table.insert(9, 9);
        assert_eq!(table.get(9), Some(&9), "a new start after the ring emptied");
    }
}
