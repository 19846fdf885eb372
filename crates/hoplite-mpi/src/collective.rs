//! Collectives over views and scalars, with hoplite's reducers as MPI operations.
//!
//! Every collective first checks, with one small `MPI_Allreduce`, that all ranks pass the same
//! element count and element type; a mismatch is [`Error::CollectiveMismatch`] on every rank
//! (instead of a truncation, garbage or a hang).

use std::ffi::c_int;
use std::ops::{BitAndAssign, BitOrAssign};
use std::panic::{AssertUnwindSafe, catch_unwind};

use hoplite_core::{
    ArrayLayout, BAnd, BOr, BitIdentity, Custom, HostAccessibleSpace, LAnd, LOr, Location, Max, MaxLoc, Min,
    MinLoc, MinMaxValue, Prod, ProdValue, Reducer, Sum, SumValue, ValLoc, View, ViewValue,
};
use mpi::collective::{SystemOperation, UserOperation};
use mpi::datatype::{DynBuffer, DynBufferMut};
use mpi::ffi;
use mpi::raw::AsRaw;
use parking_lot::Mutex;

use crate::comm::Comm;
use crate::datatype::{MpiValue, element_datatype, type_fingerprint, view_layout};
use crate::error::{Error, Result, check};

/// A hoplite reducer that MPI can apply across ranks, so that `parallel_reduce` on each rank
/// and [`Comm::all_reduce`] across ranks use one reducer type.
///
/// `Sum`, `Prod`, `Min`, `Max`, `LAnd`, `LOr`, `BAnd` and `BOr` of values with an MPI datatype
/// map to MPI's built-in operations. Every other reducer — `MinLoc`, `MaxLoc`, `Custom`, your
/// own (`impl MpiReducer for MyReducer {}`) — becomes a user-defined MPI operation that calls
/// its `join`, lower ranks first (so a non-commutative join keeps rank order).
///
/// ```no_run
/// use hoplite_core::{RangePolicy, Sum, parallel_reduce};
/// # use hoplite_serial::Serial;
/// let mpi = hoplite_mpi::Mpi::init()?;
/// let world = mpi.world();
/// let local: f64 = parallel_reduce("part", RangePolicy::new(Serial::default(), 0..100), |i, acc: &mut f64| *acc += *i as f64, Sum::new())?;
/// let total = world.all_reduce(local, &Sum::<f64>::new())?;
/// # Ok::<(), hoplite_mpi::Error>(())
/// ```
pub trait MpiReducer: Reducer<Value: MpiValue> {
    /// The built-in MPI operation equal to `join` on the value's MPI datatype, if there is one.
    fn system_operation(&self) -> Option<SystemOperation> {
        None
    }

    /// Whether `join` is commutative (MPI may then combine ranks in any order).
    fn commutative(&self) -> bool {
        false
    }
}

macro_rules! system_reducer {
    ($name:ident, $bound:path, $op:ident) => {
        impl<T: $bound + MpiValue> MpiReducer for $name<T> {
            fn system_operation(&self) -> Option<SystemOperation> {
                Some(SystemOperation::$op())
            }
            fn commutative(&self) -> bool {
                true
            }
        }
    };
}
system_reducer!(Sum, SumValue, sum);
system_reducer!(Prod, ProdValue, product);
system_reducer!(Min, MinMaxValue, min);
system_reducer!(Max, MinMaxValue, max);

impl<T: BitIdentity + Copy + Send + BitAndAssign + MpiValue> MpiReducer for BAnd<T> {
    fn system_operation(&self) -> Option<SystemOperation> {
        Some(SystemOperation::bitwise_and())
    }
    fn commutative(&self) -> bool {
        true
    }
}

impl<T: BitIdentity + Copy + Send + BitOrAssign + MpiValue> MpiReducer for BOr<T> {
    fn system_operation(&self) -> Option<SystemOperation> {
        Some(SystemOperation::bitwise_or())
    }
    fn commutative(&self) -> bool {
        true
    }
}

impl MpiReducer for LAnd {
    fn system_operation(&self) -> Option<SystemOperation> {
        Some(SystemOperation::logical_and())
    }
    fn commutative(&self) -> bool {
        true
    }
}

impl MpiReducer for LOr {
    fn system_operation(&self) -> Option<SystemOperation> {
        Some(SystemOperation::logical_or())
    }
    fn commutative(&self) -> bool {
        true
    }
}

// Location reducers: the join keeps the lower location on ties, which the rank order of a
// non-commutative user operation preserves.
impl<T, I: Location + MpiValue> MpiReducer for MinLoc<T, I>
where
    MinLoc<T, I>: Reducer<Value = ValLoc<T, I>>,
    T: MpiValue,
{
}

impl<T, I: Location + MpiValue> MpiReducer for MaxLoc<T, I>
where
    MaxLoc<T, I>: Reducer<Value = ValLoc<T, I>>,
    T: MpiValue,
{
}

impl<V, I, J, F> MpiReducer for Custom<V, I, J, F>
where
    V: MpiValue,
    I: Fn() -> V + Send + Sync,
    J: Fn(&mut V, V) + Send + Sync,
    F: Fn(&mut V) + Send + Sync,
{
}

/// Where a reduction's result goes.
#[derive(Clone, Copy)]
enum Target {
    All,
    Root(c_int),
}

impl Comm {
    /// Checks that every rank passes `len` elements of `T`.
    fn agree<T>(&self, op: &'static str, label: &str, len: usize) -> Result<()> {
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        let fingerprint = type_fingerprint::<T>();
        let send = [len, -len, fingerprint, -fingerprint];
        let mut recv = [0i64; 4];
        let i64_type = i64::native_datatype().ok_or_else(|| Error::BadExtent {
            op,
            label: label.to_owned(),
            reason: "no MPI datatype for i64".to_owned(),
        })?;
        // SAFETY: two arrays of four i64, described as four MPI_INT64_T.
        let rc = unsafe {
            ffi::MPI_Allreduce(
                send.as_ptr().cast(),
                recv.as_mut_ptr().cast(),
                4,
                i64_type,
                SystemOperation::max().as_raw(),
                self.raw(),
            )
        };
        check(rc, op, label)?;
        let [max_len, neg_min_len, max_fp, neg_min_fp] = recv;
        if max_fp != -neg_min_fp {
            return Err(Error::CollectiveMismatch {
                op,
                label: label.to_owned(),
                what: "element type",
                local: fingerprint,
                min: -neg_min_fp,
                max: max_fp,
            });
        }
        if max_len != -neg_min_len {
            return Err(Error::CollectiveMismatch {
                op,
                label: label.to_owned(),
                what: "element count",
                local: len,
                min: -neg_min_len,
                max: max_len,
            });
        }
        Ok(())
    }

    /// Combines `send` of every rank element-wise with `reducer` into `recv` (on every rank, or
    /// on the root only).
    fn reduce_slices<R: MpiReducer>(
        &self,
        op_name: &'static str,
        label: &str,
        reducer: &R,
        send: &[R::Value],
        recv: &mut [R::Value],
        target: Target,
    ) -> Result<()> {
        let count = c_int::try_from(send.len()).map_err(|_| Error::BadExtent {
            op: op_name,
            label: label.to_owned(),
            reason: format!("{} elements exceed MPI's count limit {}", send.len(), c_int::MAX),
        })?;
        let datatype = element_datatype::<R::Value>()?;
        let panicked: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
        let join = |lower: DynBuffer<'_>, mut upper: DynBufferMut<'_>| {
            let n = upper.len().min(lower.len());
            let src = lower.as_ptr().cast::<R::Value>();
            let dst = upper.as_mut_ptr().cast::<R::Value>();
            let result = catch_unwind(AssertUnwindSafe(|| {
                for k in 0..n {
                    // SAFETY: MPI hands `n` values of the operation's datatype, which is
                    // `R::Value`'s (its own or its bytes); they came from valid values on some
                    // rank (`MpiValue`'s contract). Unaligned access: MPI's buffers need not be
                    // aligned for `R::Value`.
                    unsafe {
                        let mut acc = src.add(k).read_unaligned();
                        reducer.join(&mut acc, dst.add(k).read_unaligned());
                        dst.add(k).write_unaligned(acc);
                    }
                }
            }));
            if let Err(payload) = result {
                // A panic must not unwind into MPI's C code: kept, and reported after the call.
                *panicked.lock() = Some(payload);
            }
        };
        let user;
        let op = match (reducer.system_operation(), R::Value::native_datatype()) {
            (Some(system), Some(_)) => system.as_raw(),
            _ => {
                user = UserOperation::new(reducer.commutative(), join);
                user.as_raw()
            }
        };
        // SAFETY: `send` and `recv` hold `count` values of `datatype` (a root-only reduce
        // writes `recv` on the root only, whose length the caller made equal); `op` lives until
        // the call returns.
        let rc = unsafe {
            match target {
                Target::All => ffi::MPI_Allreduce(
                    send.as_ptr().cast(),
                    recv.as_mut_ptr().cast(),
                    count,
                    datatype.raw(),
                    op,
                    self.raw(),
                ),
                Target::Root(root) => ffi::MPI_Reduce(
                    send.as_ptr().cast(),
                    recv.as_mut_ptr().cast(),
                    count,
                    datatype.raw(),
                    op,
                    root,
                    self.raw(),
                ),
            }
        };
        if let Some(payload) = panicked.lock().take() {
            return Err(hoplite_core::Error::from_panic(label, payload).into());
        }
        check(rc, op_name, label)
    }

    /// Combines `value` of every rank with `reducer`; every rank gets the result.
    ///
    /// # Errors
    ///
    /// [`Error::CollectiveMismatch`] when ranks pass different value types, [`Error::View`]
    /// with `KernelPanicked` when the reducer's join panicked, [`Error::Mpi`].
    ///
    /// ```no_run
    /// use hoplite_core::{MaxLoc, ValLoc};
    /// let mpi = hoplite_mpi::Mpi::init()?;
    /// let world = mpi.world();
    /// let mine = ValLoc { val: world.rank() as f64, loc: Some(world.rank() as usize) };
    /// let best = world.all_reduce(mine, &MaxLoc::<f64>::new())?;
    /// assert_eq!(best.loc, Some(world.size() as usize - 1));
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn all_reduce<R: MpiReducer>(&self, value: R::Value, reducer: &R) -> Result<R::Value> {
        let _region = crate::region("hoplite-mpi all_reduce");
        self.agree::<R::Value>("all_reduce", "scalar", 1)?;
        let mut out = [reducer.init()];
        self.reduce_slices("all_reduce", "scalar", reducer, &[value], &mut out, Target::All)?;
        let [out] = out;
        Ok(out)
    }

    /// Combines `value` of every rank with `reducer` on rank `root`: `Some(result)` there,
    /// `None` elsewhere.
    ///
    /// # Errors
    ///
    /// As for [`all_reduce`](Self::all_reduce), and [`Error::RankOutOfRange`].
    ///
    /// ```no_run
    /// use hoplite_core::Sum;
    /// let mpi = hoplite_mpi::Mpi::init()?;
    /// let world = mpi.world();
    /// let total = world.reduce(1u64, &Sum::<u64>::new(), 0)?;
    /// if world.rank() == 0 {
    ///     assert_eq!(total, Some(world.size() as u64));
    /// }
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn reduce<R: MpiReducer>(&self, value: R::Value, reducer: &R, root: i32) -> Result<Option<R::Value>> {
        let _region = crate::region("hoplite-mpi reduce");
        let root = self.check_rank("reduce", "scalar", root)?;
        self.agree::<R::Value>("reduce", "scalar", 1)?;
        let mut out = [reducer.init()];
        self.reduce_slices(
            "reduce",
            "scalar",
            reducer,
            &[value],
            &mut out,
            Target::Root(root),
        )?;
        let [out] = out;
        Ok((self.rank() == root).then_some(out))
    }

    /// Combines `view` of every rank element-wise with `reducer`, in place: afterwards every
    /// rank's view holds the result.
    ///
    /// # Errors
    ///
    /// [`Error::CollectiveMismatch`] when ranks pass views of different lengths or element
    /// types, [`Error::View`] when the view is borrowed elsewhere, [`Error::Mpi`].
    ///
    /// ```no_run
    /// use hoplite_core::{Max, View};
    /// let mpi = hoplite_mpi::Mpi::init()?;
    /// let world = mpi.world();
    /// let v: View<i32, 2> = View::new("v", [3, 3])?;
    /// v.fill_host(world.rank())?;
    /// world.all_reduce_view(&v, &Max::<i32>::new())?;
    /// assert_eq!(v.to_vec()?, vec![world.size() - 1; 9]);
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn all_reduce_view<T, const RANK: usize, L, S, R>(
        &self,
        view: &View<T, RANK, L, S>,
        reducer: &R,
    ) -> Result<()>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
        R: MpiReducer<Value = T>,
    {
        let _region = crate::region("hoplite-mpi all_reduce_view");
        let mut guard = view.host_write()?;
        self.agree::<T>("all_reduce_view", view.label(), view.len())?;
        let send = to_row_major(view, |idx| guard.get(idx));
        let mut recv = send.clone();
        self.reduce_slices(
            "all_reduce_view",
            view.label(),
            reducer,
            &send,
            &mut recv,
            Target::All,
        )?;
        for_each_row_major(view.extents(), |k, idx| guard.set(idx, recv[k]));
        Ok(())
    }

    /// Copies `view` of rank `root` into `view` of every other rank.
    ///
    /// # Errors
    ///
    /// [`Error::RankOutOfRange`], [`Error::CollectiveMismatch`], [`Error::View`] when the view
    /// is borrowed elsewhere, [`Error::Mpi`].
    ///
    /// ```no_run
    /// use hoplite_core::View;
    /// let mpi = hoplite_mpi::Mpi::init()?;
    /// let world = mpi.world();
    /// let v: View<f64, 1> = View::new("v", [4])?;
    /// if world.rank() == 0 {
    ///     v.fill_host(3.0)?;
    /// }
    /// world.broadcast_view(&v, 0)?;
    /// assert_eq!(v.to_vec()?, vec![3.0; 4]);
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn broadcast_view<T, const R: usize, L, S>(&self, view: &View<T, R, L, S>, root: i32) -> Result<()>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let _region = crate::region("hoplite-mpi broadcast_view");
        let root = self.check_rank("broadcast", view.label(), root)?;
        // Writers on every rank: simpler than a reader on the root, and the root's view is
        // not changed by MPI either way.
        let writer = view.write();
        if let Some(e) = writer.conflict() {
            return Err(e.clone().into());
        }
        self.agree::<T>("broadcast", view.label(), view.len())?;
        let layout = view_layout("broadcast", view)?;
        // SAFETY: `layout` describes exactly the view's elements from `data()`; the writer
        // excludes every other access while MPI reads (root) or writes (others) them; any
        // bytes from a valid value are valid (`MpiValue`).
        let rc = unsafe {
            ffi::MPI_Bcast(
                view.data().cast_mut().cast(),
                layout.count,
                layout.datatype.raw(),
                root,
                self.raw(),
            )
        };
        drop(writer);
        check(rc, "broadcast", view.label())
    }

    /// Rank `root`'s `value`, on every rank.
    ///
    /// # Errors
    ///
    /// [`Error::RankOutOfRange`], [`Error::CollectiveMismatch`], [`Error::Mpi`].
    ///
    /// ```no_run
    /// let mpi = hoplite_mpi::Mpi::init()?;
    /// let world = mpi.world();
    /// let dt = world.broadcast(if world.rank() == 0 { 0.5 } else { 0.0 }, 0)?;
    /// assert_eq!(dt, 0.5);
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn broadcast<V: MpiValue>(&self, value: V, root: i32) -> Result<V> {
        let _region = crate::region("hoplite-mpi broadcast");
        let root = self.check_rank("broadcast", "scalar", root)?;
        self.agree::<V>("broadcast", "scalar", 1)?;
        let datatype = element_datatype::<V>()?;
        let mut buf = [value];
        // SAFETY: one value of `V`'s datatype; bytes from a valid `V` are a valid `V`.
        let rc = unsafe { ffi::MPI_Bcast(buf.as_mut_ptr().cast(), 1, datatype.raw(), root, self.raw()) };
        check(rc, "broadcast", "scalar")?;
        let [value] = buf;
        Ok(value)
    }

    /// Gathers `local` of every rank, in rank order, into `target` on rank `root`: rank `r`'s
    /// elements (row-major) land at `r * local.len()..`. `target` is read only on the root
    /// (pass `None` elsewhere) and must be contiguous with `size * local.len()` elements. A bad
    /// target is found before any communication: the root gets the error and can call again
    /// with a good one while the other ranks wait in the gather.
    ///
    /// # Errors
    ///
    /// [`Error::BadExtent`] for a missing or wrongly sized target on the root,
    /// [`Error::CollectiveMismatch`], [`Error::RankOutOfRange`], [`Error::View`], [`Error::Mpi`].
    ///
    /// ```no_run
    /// use hoplite_core::View;
    /// let mpi = hoplite_mpi::Mpi::init()?;
    /// let world = mpi.world();
    /// let mine: View<i32, 1> = View::new("mine", [2])?;
    /// mine.fill_host(world.rank())?;
    /// let all: View<i32, 1> = View::new("all", [2 * world.size() as usize])?;
    /// world.gather_view(&mine, (world.rank() == 0).then_some(&all), 0)?;
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn gather_view<T, const R: usize, L, S, L2, S2>(
        &self,
        local: &View<T, R, L, S>,
        target: Option<&View<T, 1, L2, S2>>,
        root: i32,
    ) -> Result<()>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
        L2: ArrayLayout,
        S2: HostAccessibleSpace,
    {
        let _region = crate::region("hoplite-mpi gather_view");
        let root = self.check_rank("gather", local.label(), root)?;
        let reader = local.read();
        if let Some(e) = reader.conflict() {
            return Err(e.clone().into());
        }
        let size = usize::try_from(self.size()).unwrap_or(0);
        let needed = size * local.len();
        let mut target_guard = None;
        if self.rank() == root {
            let bad = |reason: String| Error::BadExtent {
                op: "gather",
                label: target.map_or_else(|| local.label().to_owned(), |t| t.label().to_owned()),
                reason,
            };
            let Some(t) = target else {
                return Err(bad(format!(
                    "the root needs a target view of {needed} elements; pass Some(&view) on rank {root}"
                )));
            };
            if t.len() != needed || !t.is_contiguous() {
                return Err(bad(format!(
                    "the target has {} elements (contiguous: {}), it needs {needed} contiguous ones ({size} ranks x {})",
                    t.len(),
                    t.is_contiguous(),
                    local.len()
                )));
            }
            let w = t.write();
            if let Some(e) = w.conflict() {
                return Err(e.clone().into());
            }
            target_guard = Some(w);
        }
        // After the root's own checks: a root that returns early has not entered any
        // collective, so calling again with a good target still matches the other ranks.
        self.agree::<T>("gather", local.label(), local.len())?;
        let layout = view_layout("gather", local)?;
        let element = element_datatype::<T>()?;
        let per_rank = c_int::try_from(local.len()).unwrap_or(c_int::MAX);
        let recv = target.map_or(std::ptr::null_mut(), |t| t.data().cast_mut().cast());
        // SAFETY: the send side is exactly `local`'s elements (its layout), kept by a reader;
        // on the root the receive side is the contiguous target of `size * len` elements of
        // `T`, kept by a writer (checked above); elsewhere MPI ignores the receive buffer.
        let rc = unsafe {
            ffi::MPI_Gather(
                local.data().cast(),
                layout.count,
                layout.datatype.raw(),
                recv,
                per_rank,
                element.raw(),
                root,
                self.raw(),
            )
        };
        drop(target_guard);
        drop(reader);
        check(rc, "gather", local.label())
    }
}

/// Calls `f(k, index)` for every index of `extents` in row-major order, `k` counting from 0.
pub(crate) fn for_each_row_major<const R: usize>(extents: [usize; R], mut f: impl FnMut(usize, [usize; R])) {
    let len: usize = extents.iter().product();
    let mut idx = [0usize; R];
    for k in 0..len {
        f(k, idx);
        for d in (0..R).rev() {
            idx[d] += 1;
            if idx[d] < extents[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The view's elements in row-major index order.
fn to_row_major<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace>(
    view: &View<T, R, L, S>,
    get: impl Fn([usize; R]) -> T,
) -> Vec<T> {
    let mut out = Vec::with_capacity(view.len());
    for_each_row_major(view.extents(), |_, idx| out.push(get(idx)));
    out
}
