// Over 800 lines: the borrow protocol beside the loom and threaded tests that check it.
//! The borrows of one allocation: which handles hold which elements, for which access.
//!
//! The rules are those of `&`/`&mut` per element: one writer, or any number of readers, or any
//! number of atomic handles. Most launches borrow whole allocations, so those borrows take a
//! lock-free path: one atomic word counts the whole-allocation readers and atomic handles and
//! marks a whole-allocation writer, and taking or ending such a borrow is one atomic operation.
//! Borrows of parts of an allocation (subviews) are kept in a list under a mutex, which also
//! sees the word.
//!
//! # Why the two paths agree
//!
//! The word has a `LISTED` bit that is set exactly while the list is not empty; only the
//! mutex's holder changes it. The fast path acts only on a word without `LISTED`, and its
//! compare-and-swap includes that bit, so it cannot succeed once the list has an entry: it
//! goes to the mutex instead. The slow path sets `LISTED` with a compare-and-swap that also
//! checks the word's whole-allocation borrows, so a whole-allocation borrow cannot appear
//! between that check and the list entry. Each path therefore sees every borrow that could
//! conflict with the one it grants.

use std::sync::PoisonError;

use smallvec::SmallVec;

use crate::sync_prims::{AtomicU64, Mutex, MutexGuard, Ordering};

use super::footprint::{AccessKind, Footprint};
use crate::error::{Error, Result};

/// Whole-allocation readers: the low 30 bits.
const READER: u64 = 1;
const READERS: u64 = (1 << 30) - 1;
/// Whole-allocation atomic handles: the next 30 bits.
const ATOMIC: u64 = 1 << 30;
const ATOMICS: u64 = ((1 << 30) - 1) << 30;
/// A whole-allocation writer.
const WRITER: u64 = 1 << 60;
/// The list of other borrows is not empty.
const LISTED: u64 = 1 << 61;

/// A live borrow. Its owner (a handle or a host guard) ends it with [`BorrowTable::release`]
/// on the table it came from; forgetting to leaves the elements borrowed, which later borrows
/// report as a conflict, and is never unsound.
#[derive(Debug)]
#[must_use = "a borrow stays registered until its owner releases it"]
pub(crate) enum BorrowId {
    /// An empty footprint: it holds no element, so nothing was registered.
    Empty,
    /// A whole-allocation borrow counted in the word.
    Whole(AccessKind),
    /// A borrow in the list.
    Listed(u64),
}

#[derive(Debug)]
struct Listed {
    id: u64,
    kind: AccessKind,
    footprint: Footprint,
    /// The borrow group the borrow belongs to (0: none). Borrows of one group are not checked
    /// against each other: the group's owner orders their uses (see `acquire_in`).
    group: u64,
    /// How many borrows the entry stands for: a group's borrows of one kind and footprint
    /// share an entry, so that a runtime with many pending launches on one view keeps the
    /// list (and every scan of it) short. Always 1 outside groups.
    count: usize,
}

#[derive(Debug, Default)]
struct List {
    next_id: u64,
    /// Inline for the first two: a view pending in a runtime usually has one or two entries
    /// (the runtime's counted one, a launch's own borrow on its way in), and kept beside the
    /// mutex they are read with the lock's cache line rather than from a separate buffer.
    entries: SmallVec<[Listed; 2]>,
}

/// The borrows of one allocation.
#[derive(Debug, Default)]
pub(crate) struct BorrowTable {
    word: AtomicU64,
    // std's mutex rather than parking_lot's: Miri runs the core's tests, and it models std's
    // futex calls but rejects parking_lot's.
    list: Mutex<List>,
}

/// The kind of a whole-allocation borrow in `word` that `kind` cannot coexist with, if any.
fn whole_conflict(word: u64, kind: AccessKind) -> Option<AccessKind> {
    let blockers = match kind {
        AccessKind::Read => WRITER | ATOMICS,
        AccessKind::Atomic => WRITER | READERS,
        AccessKind::Write => WRITER | READERS | ATOMICS,
    };
    let held = word & blockers;
    if held & WRITER != 0 {
        Some(AccessKind::Write)
    } else if held & ATOMICS != 0 {
        Some(AccessKind::Atomic)
    } else if held & READERS != 0 {
        Some(AccessKind::Read)
    } else {
        None
    }
}

/// What a whole-allocation borrow of `kind` adds to the word.
fn whole_unit(kind: AccessKind) -> u64 {
    match kind {
        AccessKind::Read => READER,
        AccessKind::Atomic => ATOMIC,
        AccessKind::Write => WRITER,
    }
}

impl BorrowTable {
    /// Locks the list. No code that can panic runs under the lock but `Vec::push`'s
    /// allocation, after which the list is still consistent, so a poisoned lock is used as is.
    fn list(&self) -> MutexGuard<'_, List> {
        self.list.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a borrow of `footprint` for `kind`, or names the kind of a live borrow it
    /// conflicts with (`label` names the allocation in the error).
    pub(crate) fn acquire(&self, kind: AccessKind, footprint: &Footprint, label: &str) -> Result<BorrowId> {
        self.try_acquire(kind, footprint).map_err(|r| r.error(label))
    }

    /// As [`acquire`](Self::acquire), with a refusal that is only the two kinds that met: a
    /// handle keeps that and makes the error when first asked for it.
    pub(crate) fn try_acquire(
        &self,
        kind: AccessKind,
        footprint: &Footprint,
    ) -> std::result::Result<BorrowId, Refused> {
        if footprint.is_empty() {
            return Ok(BorrowId::Empty);
        }
        if footprint.is_whole() {
            let mut word = self.word.load(Ordering::Relaxed);
            while word & LISTED == 0 {
                if let Some(other) = whole_conflict(word, kind) {
                    return Err(Refused { kind, other });
                }
                let full = match kind {
                    AccessKind::Read => word & READERS == READERS,
                    AccessKind::Atomic => word & ATOMICS == ATOMICS,
                    AccessKind::Write => false,
                };
                if full {
                    // A count would overflow into the next field (2^30 - 1 live handles):
                    // take the list instead, which has no limit.
                    break;
                }
                let unit = whole_unit(kind);
                // Acquire: the elements' previous owner released them with a Release
                // operation on this word (or under the mutex, which orders the same way).
                match self
                    .word
                    .compare_exchange_weak(word, word + unit, Ordering::Acquire, Ordering::Relaxed)
                {
                    Ok(_) => return Ok(BorrowId::Whole(kind)),
                    Err(now) => word = now,
                }
            }
        }
        self.acquire_listed(kind, footprint, 0)
    }

    /// As [`acquire`](Self::acquire) for a borrow of group `group` (non-zero): it is checked
    /// against every borrow outside the group and against none inside it. Group borrows are
    /// always listed, so the whole-allocation word only ever counts ungrouped borrows.
    ///
    /// The caller (an `unsafe fn` of the view API) guarantees that conflicting borrows of one
    /// group are never used at the same time.
    pub(crate) fn acquire_in(
        &self,
        kind: AccessKind,
        footprint: &Footprint,
        label: &str,
        group: u64,
    ) -> Result<BorrowId> {
        debug_assert_ne!(group, 0, "group 0 means no group");
        if footprint.is_empty() {
            return Ok(BorrowId::Empty);
        }
        self.acquire_listed(kind, footprint, group)
            .map_err(|r| r.error(label))
    }

    fn acquire_listed(
        &self,
        kind: AccessKind,
        footprint: &Footprint,
        group: u64,
    ) -> std::result::Result<BorrowId, Refused> {
        let mut list = self.list();
        if let Some(other) = list.entries.iter().find(|b| {
            (group == 0 || b.group != group) && !kind.compatible(b.kind) && b.footprint.overlaps(footprint)
        }) {
            return Err(Refused {
                kind,
                other: other.kind,
            });
        }
        // Every whole-allocation borrow overlaps this non-empty footprint. Setting LISTED in
        // the same compare-and-swap as the check keeps new ones out until the list empties.
        let mut word = self.word.load(Ordering::Relaxed);
        loop {
            if let Some(other) = whole_conflict(word, kind) {
                return Err(Refused { kind, other });
            }
            match self
                .word
                .compare_exchange_weak(word, word | LISTED, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => word = now,
            }
        }
        Ok(BorrowId::Listed(Self::push_in_group(
            &mut list, kind, footprint, group,
        )))
    }

    /// Moves a granted borrow of `kind` over `footprint` into group `group` (non-zero), in one
    /// step under the list's lock: the borrow is never absent from the table meanwhile, and
    /// it needs no new check, because it already coexists with every other borrow and joining
    /// a group only stops checks against the group's own borrows. A whole-allocation borrow
    /// leaves the word for the list; an ungrouped listed one takes the group (or joins the
    /// group's counted entry of that kind and footprint). Only a borrow the table no longer
    /// knows, which its owner would have had to end already, is acquired anew.
    ///
    /// The caller guarantees what [`acquire_in`](Self::acquire_in)'s does.
    pub(crate) fn regroup(
        &self,
        borrow: BorrowId,
        kind: AccessKind,
        footprint: &Footprint,
        label: &str,
        group: u64,
    ) -> Result<BorrowId> {
        debug_assert_ne!(group, 0, "group 0 means no group");
        match borrow {
            BorrowId::Empty => Ok(BorrowId::Empty),
            BorrowId::Whole(held) => {
                let mut list = self.list();
                // Our unit leaves the word in the same compare-and-swap that sets LISTED, and
                // the entry is pushed before the lock ends, so a borrow that could conflict
                // sees one or the other (the fast path goes to the lock once LISTED is set).
                let unit = whole_unit(held);
                let mut word = self.word.load(Ordering::Relaxed);
                loop {
                    match self.word.compare_exchange_weak(
                        word,
                        (word - unit) | LISTED,
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => break,
                        Err(now) => word = now,
                    }
                }
                Ok(BorrowId::Listed(Self::push_in_group(
                    &mut list, held, footprint, group,
                )))
            }
            BorrowId::Listed(id) => {
                let mut list = self.list();
                let Some(pos) = list.entries.iter().position(|b| b.id == id && b.group == 0) else {
                    drop(list);
                    return self
                        .acquire_listed(kind, footprint, group)
                        .map_err(|r| r.error(label));
                };
                if let Some(shared) = list
                    .entries
                    .iter()
                    .position(|b| b.group == group && b.kind == kind && b.footprint == *footprint)
                {
                    list.entries[shared].count += 1;
                    let shared_id = list.entries[shared].id;
                    list.entries.swap_remove(pos);
                    return Ok(BorrowId::Listed(shared_id));
                }
                list.entries[pos].group = group;
                Ok(BorrowId::Listed(id))
            }
        }
    }

    /// Adds a group borrow to the list (the group's counted entry of that kind and footprint
    /// if it has one; group 0, no group, always gets an entry of its own); returns the entry's
    /// id. The caller holds the lock and has set LISTED.
    fn push_in_group(list: &mut List, kind: AccessKind, footprint: &Footprint, group: u64) -> u64 {
        if group != 0
            && let Some(shared) = list
                .entries
                .iter_mut()
                .find(|b| b.group == group && b.kind == kind && b.footprint == *footprint)
        {
            shared.count += 1;
            return shared.id;
        }
        let id = list.next_id;
        list.next_id += 1;
        list.entries.push(Listed {
            id,
            kind,
            footprint: footprint.clone(),
            group,
            count: 1,
        });
        id
    }

    /// Ends a borrow taken from this table.
    pub(crate) fn release(&self, borrow: &BorrowId) {
        match *borrow {
            BorrowId::Empty => {}
            // Release: what the holder wrote happens before the next borrow's Acquire.
            BorrowId::Whole(kind) => {
                self.word.fetch_sub(whole_unit(kind), Ordering::Release);
            }
            BorrowId::Listed(id) => {
                let mut list = self.list();
                if let Some(pos) = list.entries.iter().position(|b| b.id == id) {
                    if list.entries[pos].count > 1 {
                        list.entries[pos].count -= 1;
                    } else {
                        list.entries.swap_remove(pos);
                    }
                }
                if list.entries.is_empty() {
                    self.word.fetch_and(!LISTED, Ordering::Release);
                }
            }
        }
    }
}

/// A refused borrow: what was asked for, and the kind of the live borrow it met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) kind: AccessKind,
    pub(crate) other: AccessKind,
}

impl Refused {
    /// The conflict as an error naming the allocation `label`.
    pub(crate) fn error(self, label: &str) -> Error {
        Error::BorrowConflict {
            label: label.to_owned(),
            kind: self.kind.noun(),
            other_label: label.to_owned(),
            other_kind: self.other.noun(),
        }
    }
}

/// Loom models of the two paths (`RUSTFLAGS="--cfg loom" cargo test --release -p
/// hoplite-core --lib loom`): every interleaving of two or three threads taking and ending
/// borrows. Each element range is a loom `UnsafeCell`, written under a writer's borrow and read
/// under a reader's, so loom reports two writers at once, a reader beside a writer, or a
/// borrow whose Acquire does not see the previous holder's Release.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// The table and one cell per half of an 8-element allocation.
    struct Shared {
        table: BorrowTable,
        halves: [UnsafeCell<u64>; 2],
    }

    fn shared() -> Arc<Shared> {
        Arc::new(Shared {
            table: BorrowTable::default(),
            halves: [UnsafeCell::new(0), UnsafeCell::new(0)],
        })
    }

    /// Takes a borrow of `halves` (both: the whole allocation) and, if granted, uses them.
    fn use_halves(s: &Shared, kind: AccessKind, halves: &[usize]) -> bool {
        let footprint = match halves {
            [0, 1] => Footprint::whole(&[8]),
            [0] => Footprint::from_ranges(vec![(0, 4)]),
            _ => Footprint::from_ranges(vec![(4, 8)]),
        };
        let Ok(borrow) = s.table.acquire(kind, &footprint, "buf") else {
            return false;
        };
        for &h in halves {
            match kind {
                // SAFETY: loom checks it: a writer's borrow excludes every other access.
                AccessKind::Write => s.halves[h].with_mut(|p| unsafe { *p += 1 }),
                // SAFETY: loom checks it: a reader's borrow excludes writers.
                _ => s.halves[h].with(|p| {
                    let _seen: u64 = unsafe { std::ptr::read(p) };
                }),
            }
        }
        s.table.release(&borrow);
        true
    }

    /// Exhaustive for two threads; three threads with at most two preemptions (loom's
    /// recommended bound: it finds the known bug classes at a fraction of the cost).
    fn run(threads: &[(AccessKind, &'static [usize])]) {
        let threads = threads.to_vec();
        let mut model = loom::model::Builder::new();
        if threads.len() > 2 {
            model.preemption_bound = Some(3);
        }
        model.check(move || {
            let s = shared();
            let handles: Vec<_> = threads
                .iter()
                .map(|&(kind, halves)| {
                    let s = Arc::clone(&s);
                    loom::thread::spawn(move || use_halves(&s, kind, halves))
                })
                .collect();
            for h in handles {
                h.join().expect("a model thread");
            }
            assert_eq!(s.table.word.load(Ordering::Relaxed), 0, "every borrow ended");
            assert!(s.table.list().entries.is_empty());
        });
    }

    /// One thread takes a whole writer and moves it into a group while it uses the data;
    /// another takes an outside writer of a half. The move must never let both in.
    #[test]
    fn loom_regrouped_writer_against_part_writer() {
        loom::model(|| {
            let s = shared();
            let s2 = Arc::clone(&s);
            let mover = loom::thread::spawn(move || {
                let Ok(w) = s2
                    .table
                    .acquire(AccessKind::Write, &Footprint::whole(&[8]), "buf")
                else {
                    return;
                };
                // SAFETY: loom checks it: the whole writer excludes every other access.
                s2.halves[0].with_mut(|p| unsafe { *p += 1 });
                let w = s2
                    .table
                    .regroup(w, AccessKind::Write, &Footprint::whole(&[8]), "buf", 9)
                    .expect("a granted borrow moves");
                // SAFETY: loom checks it: still exclusive after the move.
                s2.halves[0].with_mut(|p| unsafe { *p += 1 });
                s2.table.release(&w);
            });
            use_halves(&s, AccessKind::Write, &[0]);
            mover.join().expect("the mover");
            assert_eq!(s.table.word.load(Ordering::Relaxed), 0, "every borrow ended");
            assert!(s.table.list().entries.is_empty());
        });
    }

    #[test]
    fn loom_whole_writer_against_whole_writer() {
        run(&[(AccessKind::Write, &[0, 1]), (AccessKind::Write, &[0, 1])]);
    }

    #[test]
    fn loom_whole_reader_against_part_writer() {
        run(&[(AccessKind::Read, &[0, 1]), (AccessKind::Write, &[0])]);
    }

    #[test]
    fn loom_whole_writer_against_part_writers() {
        run(&[
            (AccessKind::Write, &[0, 1]),
            (AccessKind::Write, &[0]),
            (AccessKind::Write, &[1]),
        ]);
    }

    #[test]
    fn loom_whole_readers_against_part_writer() {
        run(&[
            (AccessKind::Read, &[0, 1]),
            (AccessKind::Read, &[0, 1]),
            (AccessKind::Write, &[1]),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize};

    fn whole() -> Footprint {
        Footprint::whole(&[8])
    }

    fn part(lo: usize, hi: usize) -> Footprint {
        Footprint::from_ranges(vec![(lo, hi)])
    }

    #[test]
    fn whole_borrows_follow_one_writer_or_many_readers() {
        let t = BorrowTable::default();
        let r1 = t
            .acquire(AccessKind::Read, &whole(), "buf")
            .expect("first reader");
        let r2 = t
            .acquire(AccessKind::Read, &whole(), "buf")
            .expect("second reader");
        assert!(matches!(r1, BorrowId::Whole(AccessKind::Read)), "the fast path");
        let err = t
            .acquire(AccessKind::Write, &whole(), "buf")
            .expect_err("writer beside readers");
        assert!(
            matches!(
                err,
                Error::BorrowConflict {
                    kind: "writer",
                    other_kind: "reader",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("buf"));
        assert!(t.acquire(AccessKind::Atomic, &whole(), "buf").is_err());
        t.release(&r1);
        assert!(
            t.acquire(AccessKind::Write, &whole(), "buf").is_err(),
            "one reader is left"
        );
        t.release(&r2);
        let a1 = t.acquire(AccessKind::Atomic, &whole(), "buf").expect("atomic");
        let a2 = t
            .acquire(AccessKind::Atomic, &whole(), "buf")
            .expect("atomics share");
        assert!(t.acquire(AccessKind::Read, &whole(), "buf").is_err());
        t.release(&a1);
        t.release(&a2);
        let w = t
            .acquire(AccessKind::Write, &whole(), "buf")
            .expect("all released");
        let err = t
            .acquire(AccessKind::Read, &part(0, 2), "buf")
            .expect_err("part beside whole writer");
        assert!(
            matches!(
                err,
                Error::BorrowConflict {
                    kind: "reader",
                    other_kind: "writer",
                    ..
                }
            ),
            "{err}"
        );
        t.release(&w);
        assert_eq!(t.word.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn parts_and_wholes_see_each_other() {
        let t = BorrowTable::default();
        let low = t
            .acquire(AccessKind::Write, &part(0, 4), "buf")
            .expect("low half");
        let high = t
            .acquire(AccessKind::Write, &part(4, 8), "buf")
            .expect("high half");
        assert!(matches!(low, BorrowId::Listed(_)));
        assert!(
            t.acquire(AccessKind::Write, &part(3, 5), "buf").is_err(),
            "overlaps both"
        );
        assert!(
            t.acquire(AccessKind::Read, &whole(), "buf").is_err(),
            "whole over listed writers"
        );
        t.release(&low);
        assert!(
            t.acquire(AccessKind::Read, &whole(), "buf").is_err(),
            "the high half is held"
        );
        t.release(&high);
        assert_eq!(t.word.load(Ordering::Relaxed), 0, "LISTED clears with the list");
        // A whole reader, then a part reader (compatible), then a part writer (not).
        let r = t
            .acquire(AccessKind::Read, &whole(), "buf")
            .expect("whole reader");
        let pr = t
            .acquire(AccessKind::Read, &part(2, 3), "buf")
            .expect("part reader");
        assert!(
            t.acquire(AccessKind::Write, &part(5, 6), "buf").is_err(),
            "the whole reader covers it"
        );
        // With the list non-empty, a whole reader goes through the list and still succeeds.
        let r2 = t
            .acquire(AccessKind::Read, &whole(), "buf")
            .expect("second whole reader");
        assert!(matches!(r2, BorrowId::Listed(_)));
        for b in [r, pr, r2] {
            t.release(&b);
        }
        assert_eq!(t.word.load(Ordering::Relaxed), 0);
        // Empty footprints hold nothing and conflict with nothing.
        let w = t.acquire(AccessKind::Write, &whole(), "buf").expect("writer");
        let e = t
            .acquire(AccessKind::Write, &part(3, 3), "buf")
            .expect("empty part");
        assert!(matches!(e, BorrowId::Empty));
        t.release(&e);
        t.release(&w);
    }

    #[test]
    fn a_group_sees_every_borrow_but_its_own() {
        let t = BorrowTable::default();
        let (g, h) = (7, 8);
        let w1 = t
            .acquire_in(AccessKind::Write, &whole(), "buf", g)
            .expect("group writer");
        assert!(matches!(w1, BorrowId::Listed(_)), "group borrows are listed");
        let w2 = t
            .acquire_in(AccessKind::Write, &part(0, 4), "buf", g)
            .expect("the group's own writer does not block it");
        assert!(
            t.acquire(AccessKind::Read, &whole(), "buf").is_err(),
            "an outside reader"
        );
        assert!(
            t.acquire(AccessKind::Write, &part(6, 7), "buf").is_err(),
            "an outside writer"
        );
        assert!(
            t.acquire_in(AccessKind::Read, &part(1, 2), "buf", h).is_err(),
            "another group"
        );
        t.release(&w1);
        t.release(&w2);
        assert_eq!(t.word.load(Ordering::Relaxed), 0);
        // An outside borrow blocks the group, in the word and in the list.
        let r = t
            .acquire(AccessKind::Read, &whole(), "buf")
            .expect("outside reader");
        assert!(t.acquire_in(AccessKind::Write, &part(0, 1), "buf", g).is_err());
        let gr = t
            .acquire_in(AccessKind::Read, &part(0, 1), "buf", g)
            .expect("readers share");
        let pr = t
            .acquire(AccessKind::Read, &part(2, 3), "buf")
            .expect("listed reader");
        assert!(t.acquire_in(AccessKind::Write, &part(2, 3), "buf", g).is_err());
        for b in [r, gr, pr] {
            t.release(&b);
        }
        assert_eq!(t.word.load(Ordering::Relaxed), 0);
        // A group's borrows of one kind and footprint share an entry, counted.
        let shared: Vec<BorrowId> = (0..100)
            .map(|_| {
                t.acquire_in(AccessKind::Write, &whole(), "buf", g)
                    .expect("group writer")
            })
            .collect();
        assert_eq!(t.list().entries.len(), 1);
        for b in &shared[1..] {
            t.release(b);
        }
        assert!(
            t.acquire(AccessKind::Read, &whole(), "buf").is_err(),
            "one is still held"
        );
        t.release(&shared[0]);
        assert_eq!(t.word.load(Ordering::Relaxed), 0, "the list is empty again");
    }

    #[test]
    fn a_regrouped_borrow_moves_without_a_gap_and_ends_once() {
        let t = BorrowTable::default();
        let g = 7;
        // A whole-allocation writer leaves the word for the list.
        let w = t.acquire(AccessKind::Write, &whole(), "buf").expect("writer");
        assert!(matches!(w, BorrowId::Whole(AccessKind::Write)));
        let w = t
            .regroup(w, AccessKind::Write, &whole(), "buf", g)
            .expect("regrouped");
        assert!(matches!(w, BorrowId::Listed(_)));
        assert_eq!(t.word.load(Ordering::Relaxed), LISTED, "only the list holds it");
        assert!(
            t.acquire(AccessKind::Read, &whole(), "buf").is_err(),
            "outside borrows still see it"
        );
        let w2 = t
            .acquire_in(AccessKind::Write, &whole(), "buf", g)
            .expect("the group's own writer is not checked against it");
        assert_eq!(t.list().entries.len(), 1, "one counted entry for both");
        // An ungrouped listed reader joins the group's counted entry of its kind.
        let gr = t
            .acquire_in(AccessKind::Read, &part(0, 4), "buf", g)
            .expect("group reader");
        t.release(&w);
        t.release(&w2);
        let r = t
            .acquire(AccessKind::Read, &part(0, 4), "buf")
            .expect("outside reader beside the group's");
        assert_eq!(t.list().entries.len(), 2);
        let r = t
            .regroup(r, AccessKind::Read, &part(0, 4), "buf", g)
            .expect("regrouped reader");
        assert_eq!(t.list().entries.len(), 1, "merged into the group's entry");
        assert!(t.acquire(AccessKind::Write, &part(2, 3), "buf").is_err());
        t.release(&gr);
        assert!(
            t.acquire(AccessKind::Write, &part(2, 3), "buf").is_err(),
            "the merged borrow is still held"
        );
        t.release(&r);
        assert_eq!(t.word.load(Ordering::Relaxed), 0, "nothing leaked");
        assert!(t.list().entries.is_empty());
        // Whole readers: one regrouped, one left outside; an empty footprint stays empty.
        let r1 = t.acquire(AccessKind::Read, &whole(), "buf").expect("reader");
        let r2 = t.acquire(AccessKind::Read, &whole(), "buf").expect("reader");
        let r1 = t
            .regroup(r1, AccessKind::Read, &whole(), "buf", g)
            .expect("regrouped");
        assert_eq!(t.word.load(Ordering::Relaxed), LISTED | READER);
        let e = t
            .regroup(BorrowId::Empty, AccessKind::Write, &part(3, 3), "buf", g)
            .expect("empty");
        assert!(matches!(e, BorrowId::Empty));
        t.release(&r2);
        t.release(&r1);
        assert_eq!(t.word.load(Ordering::Relaxed), 0);
        assert!(t.list().entries.is_empty());
    }

    /// Threads take and end whole and partial writers of one table; whenever one holds a
    /// writer, nobody else holds an overlapping borrow (checked with a flag per half).
    #[test]
    fn concurrent_writers_exclude_each_other() {
        let t = BorrowTable::default();
        let held = [AtomicBool::new(false), AtomicBool::new(false)];
        let rounds = if cfg!(miri) { 30 } else { 3000 };
        std::thread::scope(|s| {
            for me in 0..3usize {
                let (t, held) = (&t, &held);
                s.spawn(move || {
                    for round in 0..rounds {
                        let halves: &[usize] = match (me + round) % 3 {
                            0 => &[0, 1],
                            1 => &[0],
                            _ => &[1],
                        };
                        let footprint = match halves {
                            [0, 1] => whole(),
                            [0] => part(0, 4),
                            _ => part(4, 8),
                        };
                        if let Ok(b) = t.acquire(AccessKind::Write, &footprint, "buf") {
                            for &h in halves {
                                assert!(!held[h].swap(true, Ordering::Relaxed), "two writers of half {h}");
                            }
                            for &h in halves {
                                held[h].store(false, Ordering::Relaxed);
                            }
                            t.release(&b);
                        }
                    }
                });
            }
        });
        assert_eq!(t.word.load(Ordering::Relaxed), 0);
        assert!(t.list().entries.is_empty());
    }

    /// Readers and writers, whole and partial, from four threads: a writer of a half never
    /// meets a reader of it, and readers of one half meet each other freely. Per half, a
    /// counter holds the live readers and a high bit marks a live writer.
    #[test]
    fn concurrent_readers_and_writers_exclude_each_other() {
        const WRITER: usize = 1 << 20;
        let t = BorrowTable::default();
        let state = [AtomicUsize::new(0), AtomicUsize::new(0)];
        let rounds = if cfg!(miri) { 20 } else { 3000 };
        std::thread::scope(|s| {
            for me in 0..4usize {
                let (t, state) = (&t, &state);
                s.spawn(move || {
                    for round in 0..rounds {
                        let pick = (me * 7 + round * 3) % 6;
                        let (halves, footprint): (&[usize], Footprint) = match pick % 3 {
                            0 => (&[0, 1], whole()),
                            1 => (&[0], part(0, 4)),
                            _ => (&[1], part(4, 8)),
                        };
                        let kind = if pick < 3 {
                            AccessKind::Read
                        } else {
                            AccessKind::Write
                        };
                        let Ok(b) = t.acquire(kind, &footprint, "buf") else {
                            continue;
                        };
                        for &h in halves {
                            let before = match kind {
                                AccessKind::Write => state[h].fetch_add(WRITER, Ordering::Relaxed),
                                _ => state[h].fetch_add(1, Ordering::Relaxed),
                            };
                            match kind {
                                AccessKind::Write => {
                                    assert_eq!(before, 0, "a writer of half {h} met {before:#x}")
                                }
                                _ => assert!(before < WRITER, "a reader of half {h} met a writer"),
                            }
                        }
                        for &h in halves {
                            let unit = if kind == AccessKind::Write { WRITER } else { 1 };
                            state[h].fetch_sub(unit, Ordering::Relaxed);
                        }
                        t.release(&b);
                    }
                });
            }
        });
        assert_eq!(t.word.load(Ordering::Relaxed), 0);
        assert!(t.list().entries.is_empty());
    }
}
