//! The borrows the context holds for its vertices' handles, one per allocation, elements and
//! access kind, and the launch-time hook (`LaunchSlots`) through which handles take them.

use hoplite_core::held::HeldBorrows;
use hoplite_core::held::{AllocationKey, BorrowGroup, HeldBorrow};
use hoplite_core::{AccessKind, Footprint};
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;

use super::vertex::VertexStatus;
use crate::sync_prims::Arc;

/// How many held borrows the context keeps before it ends those whose vertices have all
/// ended at a launch.
const HELD_LIMIT: usize = 64;

/// The borrows the context holds for the handles of its vertices: one per allocation,
/// elements and access kind, whatever the number of vertices that use it. A launch's handles
/// rely on them (`RecordedArgs::into_held`) instead of borrowing their views for the vertex, so a
/// view many pending launches use is borrowed once, and a vertex's end, on its stream's
/// thread, touches no borrow table (where the launching thread's next borrow of the same view
/// met it on the table's lock, one lock per handle per vertex on each side).
///
/// A borrow ends once every vertex that used it has ended, when the host sees one finished
/// (`Vertex::wait`, `Vertex::state`, `Pending::get`, `read`, `write`, `synchronize`), when
/// its views are all gone, or past `HELD_LIMIT` borrows; not at every vertex's end, which
/// would end and take again the borrows of a chain of launches whose stream keeps up with
/// them.
pub(super) struct HeldSlots {
    index: HashMap<(AllocationKey, AccessKind, Footprint), u32>,
    /// The slots in use of each allocation: a second one moves the others into the group.
    by_allocation: HashMap<AllocationKey, SmallVec<[u32; 2]>>,
    pub(super) slots: Vec<Slot>,
    free: Vec<u32>,
    /// Past how many slots in use a launch ends the borrows no unfinished vertex uses.
    sweep_at: usize,
    /// The slot each handle of the last launch took, by position: launches in a loop take
    /// the same ones, found by comparing one key instead of hashing it.
    hints: Vec<u32>,
}

/// One held borrow and the vertices that rely on it.
pub(super) struct Slot {
    /// The borrow's allocation, kind and elements; `None` while the slot is free.
    key: Option<(AllocationKey, AccessKind, Footprint)>,
    pub(super) held: Option<HeldBorrow>,
    /// The latest vertex to use it on each stream: a stream ends its vertices in order, so
    /// once these have ended every user has.
    users: SmallVec<[(usize, Arc<VertexStatus>); 1]>,
}

impl Default for HeldSlots {
    fn default() -> Self {
        HeldSlots {
            index: HashMap::default(),
            by_allocation: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            sweep_at: HELD_LIMIT,
            hints: Vec::new(),
        }
    }
}

impl HeldSlots {
    /// Whether every vertex that used slot `k` has ended: their handles are gone (a vertex's
    /// work drops them before it ends, and `has_ended` acquires what the work did).
    fn unused(&self, k: u32) -> bool {
        let slot = &self.slots[k as usize];
        slot.key.is_some() && slot.users.iter().all(|(_, status)| status.has_ended())
    }

    /// Ends slot `k`'s borrow and frees the slot, if no unfinished vertex uses it.
    pub(super) fn release_if_unused(&mut self, k: u32) {
        if !self.unused(k) {
            return;
        }
        let slot = &mut self.slots[k as usize];
        if let Some(key) = slot.key.take() {
            self.index.remove(&key);
            if let Some(others) = self.by_allocation.get_mut(&key.0) {
                others.retain(|o| *o != k);
                if others.is_empty() {
                    self.by_allocation.remove(&key.0);
                }
            }
        }
        slot.users.clear();
        // Ends the borrow.
        slot.held = None;
        self.free.push(k);
    }

    /// At a vertex's retirement: ends slot `k`'s borrow if no unfinished vertex uses it and
    /// nobody can ask for the view again (see `HeldBorrow::has_views`), so that dropping a
    /// view frees its memory once its vertices ran.
    pub(super) fn release_if_orphaned(&mut self, k: u32) {
        let orphaned = self.slots[k as usize]
            .held
            .as_ref()
            .is_some_and(|h| !h.has_views());
        if orphaned {
            self.release_if_unused(k);
        }
    }

    /// Ends every borrow no unfinished vertex uses.
    pub(super) fn sweep(&mut self) {
        for k in 0..self.slots.len() {
            self.release_if_unused(k as u32);
        }
    }

    /// At a launch: sweeps once the slots in use pass `sweep_at`, which then becomes twice
    /// what is left (so that many live borrows are not scanned at every launch).
    pub(super) fn bound(&mut self) {
        if self.slots.len() - self.free.len() > self.sweep_at {
            self.sweep();
            self.sweep_at = HELD_LIMIT.max(2 * (self.slots.len() - self.free.len()));
        }
    }

    /// Records the vertex of `status`, on `stream`, as a user of slot `k`.
    pub(super) fn use_slot(&mut self, k: u32, stream: usize, status: &Arc<VertexStatus>) {
        let users = &mut self.slots[k as usize].users;
        match users.iter_mut().find(|(s, _)| *s == stream) {
            Some(user) => user.1 = status.clone(),
            None => users.push((stream, status.clone())),
        }
    }
}

impl Drop for HeldSlots {
    fn drop(&mut self) {
        // The context drops its streams first, which run what they were given. A borrow a
        // vertex that never ran would rely on is left in place: an allocation that stays
        // borrowed is never unsound, a borrow ended under a handle would be.
        self.sweep();
        for slot in &mut self.slots {
            if let Some(held) = slot.held.take() {
                std::mem::forget(held);
            }
        }
    }
}

/// The held-borrow slots of one launch: the context's slots, lent to the launch's handles
/// while they take their borrows (`RecordedArgs::into_held`), and which of them they took.
pub(super) struct LaunchSlots<'a> {
    pub(super) slots: &'a mut HeldSlots,
    pub(super) group: &'a BorrowGroup,
    pub(super) used: SmallVec<[u32; 4]>,
    /// How many handles asked for a slot.
    pub(super) asked: usize,
}

impl HeldBorrows for LaunchSlots<'_> {
    fn slot(
        &mut self,
        allocation: AllocationKey,
        kind: AccessKind,
        footprint: &Footprint,
    ) -> &mut Option<HeldBorrow> {
        let HeldSlots {
            index,
            by_allocation,
            slots,
            free,
            hints,
            ..
        } = &mut *self.slots;
        let position = self.asked;
        self.asked += 1;
        if let Some(&k) = hints.get(position)
            && let Some((a, b, f)) = &slots[k as usize].key
            && (*a, *b) == (allocation, kind)
            && f == footprint
        {
            if !self.used.contains(&k) {
                self.used.push(k);
            }
            return &mut slots[k as usize].held;
        }
        let group = self.group;
        let k = *index
            .entry((allocation, kind, footprint.clone()))
            .or_insert_with(|| {
                // The allocation's other held borrows go into the group, where this one's
                // elements or kind do not conflict with them (the context orders the vertices
                // that use them); outside it, they would refuse it.
                let others = by_allocation.entry(allocation).or_default();
                for &o in others.iter() {
                    if let Some(other) = slots[o as usize].held.as_mut() {
                        // SAFETY: the context orders the handles of its group (see `take_borrows`),
                        // those relying on held borrows among them.
                        let moved = unsafe { other.into_group(group) };
                        // The allocation keeps a held borrow until it is dropped, so the move
                        // cannot fail; were it to, the handles relying on the borrow would be
                        // unprotected: stop here rather than go on.
                        moved.expect("a held borrow is known to its allocation");
                    }
                }
                let key = Some((allocation, kind, footprint.clone()));
                let k = match free.pop() {
                    Some(k) => {
                        slots[k as usize].key = key;
                        k
                    }
                    None => {
                        slots.push(Slot {
                            key,
                            held: None,
                            users: SmallVec::new(),
                        });
                        (slots.len() - 1) as u32
                    }
                };
                others.push(k);
                k
            });
        if !self.used.contains(&k) {
            self.used.push(k);
        }
        match hints.get_mut(position) {
            Some(hint) => *hint = k,
            None => hints.push(k),
        }
        &mut slots[k as usize].held
    }
}
