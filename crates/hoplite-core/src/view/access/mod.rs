//! Access handles: how kernels touch view data without data races or per-element cost.
//!
//! | handle            | made by         | in a kernel                                        |
//! |-------------------|-----------------|----------------------------------------------------|
//! | [`Reader`]        | `x.read()`      | `get(i)` at any index (checked)                    |
//! | [`Writer`]        | `y.write()`     | nothing until handed to a launch, then [`BoundWriter`] |
//! | [`AtomicHandle`]  | `h.atomic()`    | `fetch_add`, `fetch_min`, ... at any index         |
//! | [`Lookup`]        | `t.lookup()`    | `get(i)` at any index, each checked; any launch range |
//! | [`TeamSlots`]     | `p.team_slots()`| rank 2, team launches: `get`/`set` at the thread's `[league, team rank]` |
//! | [`ScatterAccess`] | `ScatterView::new(&h).access()` | `add(i, v)` (or `min`, `max`, ...) at any index, into the thread's private copy; `contribute` folds the copies into `h` |
//!
//! Making a handle borrows the elements the view covers, like `RefCell` at kernel
//! granularity: one writer, or many readers, or many atomic handles. A conflicting handle is
//! made anyway but carries the conflict, and the launch it is handed to fails with
//! [`Error::BorrowConflict`](crate::Error::BorrowConflict) naming both views.
//!
//! Handles handed to a launch — `parallel_for("axpy", (n, (y.write(), x.read())), |(i, (y, x))| ..)`
//! — come back *bound* to the launch's iteration brand `'it`: a [`BoundWriter<'it, ..>`] stores
//! only at the tokens of that launch, and a [`BoundReader<'it, ..>`] reads at them without a
//! bounds check, because the launch checked the policy against every handle's extents once.

mod atomic;
mod bound;
mod handle;
mod host;
mod launch;
mod scatter;
mod team;
mod tokens;

pub use atomic::AtomicValue;
pub use bound::{
    BoundAtomic, BoundLookup, BoundReader, BoundWriter, PreparedAtomic, PreparedReader, PreparedWriter,
    RowReader,
};
pub use handle::{AtomicHandle, Lookup, Reader, TeamSlots, Writer};
pub(crate) use host::for_each_index;
pub use host::{HostRead, HostWrite};
pub use launch::{AccessibleArgs, LaunchArgs};
pub use scatter::{
    BoundScatter, PreparedScatter, ScatterAccess, ScatterMax, ScatterMin, ScatterOp, ScatterProd, ScatterSum,
    ScatterView,
};
pub use team::{BoundTeamSlots, PlaneRow, TeamPlane, TeamRow};
pub use tokens::{ReadIndex, Token, ViewIndex};
