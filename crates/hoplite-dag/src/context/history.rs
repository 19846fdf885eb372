//! What the context remembers of its latest vertices, for DOT, traces and
//! [`Context::parents`](crate::Context::parents): a bounded ring of records.

use std::sync::Arc;
use std::time::Instant;

use super::state::UnfinishedVertex;
use crate::device::Stream;
use crate::model::{Edges, VertexId};
use crate::vertex_table::VertexTable;

/// How many vertices the context remembers for DOT, traces and
/// [`Context::parents`](crate::Context::parents): the
/// most recent ones, so that a long-running context keeps bounded memory.
pub const HISTORY_LIMIT: usize = 1 << 16;

/// What the context remembers of a vertex for DOT and traces.
pub(super) struct Record {
    pub(super) id: VertexId,
    pub(super) label: Arc<str>,
    pub(super) device: usize,
    pub(super) stream: usize,
    pub(super) edges: Edges,
    /// How it ended, copied from its status when it retires; `None` while it is live (its
    /// status is then in `State::live`). The history keeps no status: dropping the oldest
    /// record at each launch would otherwise free a status made `HISTORY_LIMIT` launches ago,
    /// a cache miss or two on every launch.
    pub(super) ended: Option<Ended>,
}

/// The last [`HISTORY_LIMIT`] records, in a ring that, once full, overwrites its oldest record
/// where it is: a launch neither copies a record out of a queue's front nor shifts one in.
#[derive(Default)]
pub(super) struct History {
    records: Vec<Record>,
    /// Where the oldest record is (0 until the ring is full).
    head: usize,
}

impl History {
    pub(super) fn push(&mut self, record: Record) {
        if self.records.len() < HISTORY_LIMIT {
            self.records.push(record);
        } else {
            self.records[self.head] = record;
            self.head = (self.head + 1) % HISTORY_LIMIT;
        }
    }

    /// Oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Record> {
        let (newer, older) = self.records.split_at(self.head);
        older.iter().chain(newer)
    }

    /// The record of vertex `id`, if it is still kept (records have consecutive ids).
    pub(super) fn get_mut(&mut self, id: VertexId) -> Option<&mut Record> {
        let oldest = self.records.get(self.head)?.id;
        let k = id.checked_sub(oldest).filter(|&k| k < self.records.len())?;
        let at = (self.head + k) % self.records.len();
        self.records.get_mut(at)
    }
}

/// The end of a retired vertex, for DOT and traces.
pub(super) struct Ended {
    pub(super) state: &'static str,
    pub(super) start: Option<Instant>,
    pub(super) end: Option<Instant>,
}

impl Record {
    /// Its state's name and its start and end, from the copy or from the live status.
    pub(super) fn progress<T: Stream>(
        &self,
        live: &VertexTable<UnfinishedVertex<T>>,
    ) -> (&'static str, Option<Instant>, Option<Instant>) {
        match (&self.ended, live.get(self.id)) {
            (Some(e), _) => (e.state, e.start, e.end),
            (None, Some(l)) => {
                let p = l.status.progress.lock();
                (p.state.name(), p.start, p.end)
            }
            // Retired before its record was made: cannot happen (a vertex's record is made in
            // the launch that makes it); show it as done rather than fail.
            (None, None) => ("done", None, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: VertexId) -> Record {
        Record {
            id,
            label: Arc::from("v"),
            device: 0,
            stream: id % 3,
            edges: Edges::new(),
            ended: None,
        }
    }

    #[test]
    fn the_history_keeps_the_latest_records_in_order_and_finds_them_by_id() {
        let mut history = History::default();
        assert!(history.get_mut(0).is_none(), "empty");
        for id in 0..10 {
            history.push(record(id));
        }
        assert_eq!(
            history.iter().map(|r| r.id).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        assert_eq!(history.get_mut(7).map(|r| r.stream), Some(1));
        assert!(history.get_mut(10).is_none());
        // Past the limit the oldest records are overwritten where they are.
        let total = HISTORY_LIMIT + 5;
        for id in 10..total {
            history.push(record(id));
        }
        assert_eq!(history.records.len(), HISTORY_LIMIT);
        let ids: Vec<VertexId> = history.iter().map(|r| r.id).collect();
        assert_eq!(ids.first(), Some(&5), "the five oldest are gone");
        assert_eq!(ids.last(), Some(&(total - 1)));
        assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "in launch order");
        assert!(history.get_mut(4).is_none(), "overwritten");
        for id in [5, 6, HISTORY_LIMIT, total - 1] {
            assert_eq!(history.get_mut(id).map(|r| r.id), Some(id));
        }
        assert!(history.get_mut(total).is_none());
    }
}
