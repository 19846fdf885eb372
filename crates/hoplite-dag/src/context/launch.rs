//! The launch entry points of a context: kernels (`launch`, `reduce`, `scan`) and host work
//! (`task`, `task_on`, `task_on_device`), all funnelled into `submit`. While a Kokkos Tools
//! connector is loaded, the streams run kernel vertices one at a time
//! (`profiling::order_kernels`), so that connectors that keep one stack of kernels see each
//! begin and end together; host work is not ordered (it may wait for another vertex).

use std::sync::Arc;

use hoplite_core::held::RecordedArgs;
use hoplite_core::profiling;
use hoplite_core::{
    ExecutionPolicy, IntoLaunch, LaunchSpec, ParallelFor, ParallelReduce, ParallelScan, RangePolicy, Reducer,
    ScanValue, parallel_for_validated, parallel_reduce_validated, parallel_scan_validated,
};
use hoplite_graph::GraphLaunch;

use super::vertex::end_finished_borrows;
use super::{Context, Pending, SpaceOf, Vertex};
use crate::Result;
use crate::device::Device;
use crate::sync_prims::{self, Mutex};

impl<D: Device> Context<D> {
    /// Launches a `parallel_for` as a vertex: `(policy, (y.write(), x.read()))` and the other
    /// shapes of eager launches. Returns at once in async mode.
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, Sum, View};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default(); 2])?], ContextOptions::default())?;
    /// let (x, y) = (View::<i64, 1>::new("x", [100])?, View::<i64, 1>::new("y", [100])?);
    /// let range = RangePolicy::new(Serial::default(), 0..100);
    /// let fill = ctx.launch("fill", (range.clone(), (x.write(),)), |(i, (x,))| x.set(i, 1))?;
    /// ctx.launch("copy", (range, (y.write(), x.read())), |(i, (y, x))| y.set(i, x.get(i)))?;
    /// fill.wait()?; // this vertex only
    /// ctx.synchronize()?; // every vertex
    /// assert_eq!(y.to_vec()?, [1; 100]);
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// An invalid policy, a handle whose view is borrowed outside the context (a host guard,
    /// a handle kept elsewhere), or a stream the device could not make. In sync mode also the
    /// kernel's failure.
    pub fn launch<L, F>(&self, label: &str, launch_spec: L, kernel: F) -> Result<Vertex>
    where
        L: IntoLaunch<SpaceOf<D>>,
        L::Launch: GraphLaunch<SpaceOf<D>> + 'static,
        SpaceOf<D>: ParallelFor<<L::Launch as LaunchSpec>::Policy>,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>) + Send + Sync + 'static,
    {
        let (policy, args) = launch_spec.into_launch().into_parts();
        self.submit::<L::Launch, _>(label, policy, args, move |label, policy, args| {
            let _in_order = profiling::order_kernels();
            parallel_for_validated::<L::Launch, _>(label, policy, args, &kernel)
        })
    }

    /// Launches a `parallel_reduce` as a vertex; the result's [`Pending::get`] waits for that
    /// vertex only.
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, Sum, View};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default(); 2])?], ContextOptions::default())?;
    /// let (x, y) = (View::<i64, 1>::new("x", [100])?, View::<i64, 1>::new("y", [100])?);
    /// let range = RangePolicy::new(Serial::default(), 0..100);
    /// ctx.launch("fill", (range.clone(), (x.write(),)), |(i, (x,))| x.set(i, 2))?;
    /// let total = ctx.reduce("sum", (range, (x.read(),)), |(i, (x,)), acc: &mut i64| *acc += x.get(i), Sum::new())?;
    /// assert_eq!(total.get()?, 200);
    /// # let _ = &y;
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`launch`](Self::launch).
    pub fn reduce<L, F, R>(
        &self,
        label: &str,
        launch_spec: L,
        kernel: F,
        reducer: R,
    ) -> Result<Pending<R::Value>>
    where
        L: IntoLaunch<SpaceOf<D>>,
        L::Launch: GraphLaunch<SpaceOf<D>> + 'static,
        SpaceOf<D>: ParallelReduce<<L::Launch as LaunchSpec>::Policy>,
        R: Reducer + Send + Sync + 'static,
        R::Value: Send + 'static,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut R::Value) + Send + Sync + 'static,
    {
        let value = sync_prims::Arc::new(Mutex::new(None));
        let out = value.clone();
        let (policy, args) = launch_spec.into_launch().into_parts();
        let vertex = self.submit::<L::Launch, _>(label, policy, args, move |label, policy, args| {
            let _in_order = profiling::order_kernels();
            let v = parallel_reduce_validated::<L::Launch, _, _>(label, policy, args, &kernel, &reducer)?;
            *out.lock() = Some(v);
            Ok(())
        })?;
        Ok(Pending { vertex, value })
    }

    /// Launches a `parallel_scan` as a vertex (Kokkos scan kernel `(i, partial, is_final)`);
    /// the result's [`Pending::get`] gives the total.
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, Sum, View};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default(); 2])?], ContextOptions::default())?;
    /// let (x, y) = (View::<i64, 1>::new("x", [100])?, View::<i64, 1>::new("y", [100])?);
    /// let range = RangePolicy::new(Serial::default(), 0..100);
    /// ctx.launch("ones", (range.clone(), (x.write(),)), |(i, (x,))| x.set(i, 1))?;
    /// // An exclusive prefix sum of `x` into `y`.
    /// let total = ctx.scan("prefix", (range, (y.write(), x.read())), |(i, (y, x)), partial: &mut i64, last| {
    ///     if last {
    ///         y.set(i, *partial);
    ///     }
    ///     *partial += x.get(i);
    /// })?;
    /// assert_eq!(total.get()?, 100);
    /// assert_eq!(ctx.read(&y)?.get([10]), 10);
    /// # let _ = Sum::<i64>::new();
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for [`launch`](Self::launch).
    pub fn scan<L, F, T>(&self, label: &str, launch_spec: L, kernel: F) -> Result<Pending<T>>
    where
        L: IntoLaunch<SpaceOf<D>>,
        L::Launch: GraphLaunch<SpaceOf<D>> + 'static,
        SpaceOf<D>: ParallelScan<<L::Launch as LaunchSpec>::Policy>,
        T: ScanValue + Send + 'static,
        F: for<'it> Fn(<L::Launch as LaunchSpec>::Item<'it>, &mut T, bool) + Send + Sync + 'static,
    {
        let value = sync_prims::Arc::new(Mutex::new(None));
        let out = value.clone();
        let (policy, args) = launch_spec.into_launch().into_parts();
        let vertex = self.submit::<L::Launch, _>(label, policy, args, move |label, policy, args| {
            let _in_order = profiling::order_kernels();
            let total: T = parallel_scan_validated::<L::Launch, _, _>(label, policy, args, &kernel)?;
            *out.lock() = Some(total);
            Ok(())
        })?;
        Ok(Pending { vertex, value })
    }

    /// Adds a vertex that runs host work instead of a kernel — a message send or receive, a
    /// halo exchange, I/O — ordered by the views of `args` exactly like a launch with the same
    /// handles: it waits for the vertices whose accesses conflict with its own, and later
    /// vertices that touch those views wait for it. `work` runs once, on a stream's worker
    /// thread, with the handles (their borrows held by the context, so that, as for a kernel,
    /// nothing outside the context touches the views meanwhile; the borrows of finished
    /// vertices end before it starts, so it may borrow its parents' views on the host). An
    /// `Err` or a panic fails the vertex and poisons its descendants, as a failed kernel does.
    ///
    /// # Errors
    ///
    /// A handle whose view is borrowed outside the context, or a stream the device could not
    /// make; in sync mode also the work's failure.
    ///
    /// ```
    /// use hoplite_core::View;
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    ///
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default()])?], ContextOptions::default())?;
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// let saved = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    /// let out = saved.clone();
    /// ctx.task("save", (x.read(),), move |(x,)| {
    ///     out.lock().push(x.view().len());
    ///     Ok(())
    /// })?;
    /// ctx.synchronize()?;
    /// assert_eq!(*saved.lock(), vec![4]);
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    pub fn task<A, F>(&self, label: &str, args: A, work: F) -> Result<Vertex>
    where
        A: RecordedArgs + hoplite_core::LaunchArgs + 'static,
        (RangePolicy<SpaceOf<D>>, A): GraphLaunch<SpaceOf<D>, Policy = RangePolicy<SpaceOf<D>>, Args = A>,
        F: FnOnce(&A) -> hoplite_core::Result<()> + Send + 'static,
    {
        self.task_at(label, None, args, move |_, handles| work(handles))
    }

    /// [`task`](Self::task) whose work also gets the execution space instance of the stream
    /// the context picked for it: the way to issue device work (a kernel launch on a CUDA
    /// stream's instance, say) ordered by `args` like any launch. The vertex is finished when
    /// `work` returns, and a later vertex that conflicts with a finished one gets no edge to
    /// it, so work that queues asynchronous device work waits for it (a fence of the
    /// instance) before it returns.
    ///
    /// # Errors
    ///
    /// As for [`task`](Self::task).
    ///
    /// ```
    /// use hoplite_core::{ExecutionSpace, View};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    ///
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default()])?], ContextOptions::default())?;
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// ctx.task_on("fence", (x.read(),), |space: &Serial, (x,)| {
    ///     assert_eq!(x.view().len(), 4);
    ///     space.fence()
    /// })?;
    /// ctx.synchronize()?;
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    pub fn task_on<A, F>(&self, label: &str, args: A, work: F) -> Result<Vertex>
    where
        A: RecordedArgs + hoplite_core::LaunchArgs + 'static,
        (RangePolicy<SpaceOf<D>>, A): GraphLaunch<SpaceOf<D>, Policy = RangePolicy<SpaceOf<D>>, Args = A>,
        F: FnOnce(&SpaceOf<D>, &A) -> hoplite_core::Result<()> + Send + 'static,
    {
        self.task_at(label, None, args, work)
    }

    /// [`task_on`](Self::task_on) on device `device` of the context (an index into
    /// [`devices`](Self::devices)), whatever the device-selection policy would pick: for work
    /// that must run where its data is, such as a kernel launch on views of one GPU. The
    /// vertex takes a parent's stream if the parent-stream policy picks one on that device,
    /// else a free or new stream of the device.
    ///
    /// # Errors
    ///
    /// [`DagError::NoSuchDevice`](crate::DagError::NoSuchDevice) for an index past the devices;
    /// otherwise as for [`task`](Self::task).
    ///
    /// ```
    /// use hoplite_core::{ExecutionSpace, View};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    ///
    /// let devices = vec![HostDevice::new("a", vec![Serial::default()])?, HostDevice::new("b", vec![Serial::default()])?];
    /// let ctx = Context::new(devices, ContextOptions::default())?;
    /// let x: View<f64, 1> = View::new("x", [4])?;
    /// for _ in 0..3 {
    ///     ctx.task_on_device("on b", 1, (x.read(),), |space: &Serial, _| space.fence())?;
    /// }
    /// assert!(ctx.placements().iter().all(|&(device, _)| device == 1));
    /// assert!(ctx.task_on_device("nowhere", 2, (x.read(),), |_: &Serial, _| Ok(())).is_err());
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    pub fn task_on_device<A, F>(&self, label: &str, device: usize, args: A, work: F) -> Result<Vertex>
    where
        A: RecordedArgs + hoplite_core::LaunchArgs + 'static,
        (RangePolicy<SpaceOf<D>>, A): GraphLaunch<SpaceOf<D>, Policy = RangePolicy<SpaceOf<D>>, Args = A>,
        F: FnOnce(&SpaceOf<D>, &A) -> hoplite_core::Result<()> + Send + 'static,
    {
        self.task_at(label, Some(device), args, work)
    }

    /// The common path of the tasks: host work on the instance of the stream picked (on
    /// device `pin`, if given).
    fn task_at<A, F>(&self, label: &str, pin: Option<usize>, args: A, work: F) -> Result<Vertex>
    where
        A: RecordedArgs + hoplite_core::LaunchArgs + 'static,
        (RangePolicy<SpaceOf<D>>, A): GraphLaunch<SpaceOf<D>, Policy = RangePolicy<SpaceOf<D>>, Args = A>,
        F: FnOnce(&SpaceOf<D>, &A) -> hoplite_core::Result<()> + Send + 'static,
    {
        // A one-point policy stands in for the kernel's: the work runs once, on the host;
        // `submit_on` moves the policy onto the picked stream's instance.
        let policy = RangePolicy::new(SpaceOf::<D>::default(), 0..1);
        let held = Arc::downgrade(&self.held);
        self.submit_on::<(RangePolicy<SpaceOf<D>>, A), _>(
            label,
            super::submit::Placement::On(pin),
            policy,
            args,
            move |_, policy, handles| {
                // Host work may borrow its views on the host (`x.view().to_vec()`): the borrows
                // of its finished parents end first, as they would have with their kernels.
                end_finished_borrows(&held);
                work(policy.policy().space(), handles)
            },
        )
    }
}
