//! Device views as the handles of a hoplite-dag vertex: [`DeviceViews`] records the reads and
//! writes of device views so that a DAG context orders a `#[kernel]` launch on a CUDA stream
//! exactly as it orders a host launch with the same handles, and [`device_task`] launches it.

use hoplite_core::index::IndexBounds;
use hoplite_core::view::held::{BorrowGroup, GroupedHandle};
use hoplite_core::view::{AccessKind, LaunchArgs};
use hoplite_core::{ArrayLayout, AtomicHandle, AtomicValue, Reader, TeamSlots, View, Writer};
use hoplite_dag::{Context, DagError, Vertex};
use hoplite_graph::{Access, GraphArgs};

use crate::dag::CudaDevice;
use crate::{Cuda, CudaError, DeviceAccessibleSpace, DeviceArg, DeviceScalar};

/// The host handle that holds an entry's borrow: a reader, writer, atomic or team-slots
/// handle, whatever its element type.
trait HostBorrow: Send + Sync {
    fn conflict(&self) -> Option<&hoplite_core::Error>;
    /// # Safety
    ///
    /// As for [`GroupedHandle::new_in`].
    unsafe fn into_group(self: Box<Self>, group: &BorrowGroup) -> Box<dyn HostBorrow>;
}

macro_rules! host_borrow {
    ($handle:ident, $bound:ident) => {
        impl<T: $bound, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace> HostBorrow
            for $handle<T, R, L, S>
        {
            fn conflict(&self) -> Option<&hoplite_core::Error> {
                $handle::conflict(self)
            }
            unsafe fn into_group(self: Box<Self>, group: &BorrowGroup) -> Box<dyn HostBorrow> {
                // SAFETY: the caller's contract is that of `GroupedHandle::new_in`, which the
                // handles' `into_group` shares.
                Box::new(unsafe { GroupedHandle::into_group(*self, group) })
            }
        }
    };
}

host_borrow!(Reader, DeviceScalar);
host_borrow!(Writer, DeviceScalar);
host_borrow!(AtomicHandle, AtomicValue);

impl<T: DeviceScalar, L: ArrayLayout, S: DeviceAccessibleSpace> HostBorrow for TeamSlots<T, L, S> {
    fn conflict(&self) -> Option<&hoplite_core::Error> {
        TeamSlots::conflict(self)
    }
    unsafe fn into_group(self: Box<Self>, group: &BorrowGroup) -> Box<dyn HostBorrow> {
        // SAFETY: as above.
        Box::new(unsafe { GroupedHandle::into_group(*self, group) })
    }
}

/// Makes the host handle of `view` in `group`.
///
/// # Safety
///
/// As for [`GroupedHandle::new_in`].
type BorrowIn<T, const R: usize, L, S> = unsafe fn(&View<T, R, L, S>, &BorrowGroup) -> Box<dyn HostBorrow>;

/// How an entry uses its view: its kind for the DAG, its launch argument, and the host handle
/// that borrows it (made outside any group, or in one).
struct Intent<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace> {
    kind: AccessKind,
    arg: fn(&View<T, R, L, S>) -> DeviceArg,
    borrow: fn(&View<T, R, L, S>) -> Box<dyn HostBorrow>,
    borrow_in: BorrowIn<T, R, L, S>,
}

// Not derived: a derive would ask `T`, `L` and `S` to be `Clone`/`Copy` too.
impl<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace> Clone for Intent<T, R, L, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace> Copy for Intent<T, R, L, S> {}

/// One device view, its intent and (unless detached) its borrow.
struct Held<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace> {
    view: View<T, R, L, S>,
    intent: Intent<T, R, L, S>,
    borrow: Option<Box<dyn HostBorrow>>,
}

/// What [`DeviceViews`] needs of an entry, whatever its element type, rank, layout and space.
trait Entry: Send + Sync {
    fn access(&self) -> Access;
    fn arg(&self) -> DeviceArg;
    fn conflict(&self) -> Option<&hoplite_core::Error>;
    /// The GPU whose memory the view is.
    fn device(&self) -> usize;
    fn detached(&self) -> Box<dyn Entry>;
    fn attached(&self) -> Box<dyn Entry>;
    /// # Safety
    ///
    /// As for [`GroupedHandle::new_in`].
    unsafe fn attached_in(&self, group: &BorrowGroup) -> Box<dyn Entry>;
    /// # Safety
    ///
    /// As for [`GroupedHandle::new_in`].
    unsafe fn into_group(self: Box<Self>, group: &BorrowGroup) -> Box<dyn Entry>;
}

impl<T, const R: usize, L, S> Held<T, R, L, S>
where
    T: DeviceScalar,
    L: ArrayLayout + 'static,
    S: DeviceAccessibleSpace,
{
    fn with(&self, borrow: Option<Box<dyn HostBorrow>>) -> Box<dyn Entry> {
        Box::new(Held {
            view: self.view.clone(),
            intent: self.intent,
            borrow,
        })
    }
}

impl<T, const R: usize, L, S> Entry for Held<T, R, L, S>
where
    T: DeviceScalar,
    L: ArrayLayout + 'static,
    S: DeviceAccessibleSpace,
{
    fn access(&self) -> Access {
        Access {
            allocation: self.view.allocation_key(),
            footprint: self.view.footprint(),
            kind: self.intent.kind,
            view: self.view.shared_label(),
            bytes: self.view.len().saturating_mul(size_of::<T>()),
            location: Some(self.view.space().device_ordinal()),
        }
    }

    fn arg(&self) -> DeviceArg {
        (self.intent.arg)(&self.view)
    }

    fn conflict(&self) -> Option<&hoplite_core::Error> {
        self.borrow.as_ref().and_then(|b| b.conflict())
    }

    fn device(&self) -> usize {
        self.view.space().device_ordinal()
    }

    fn detached(&self) -> Box<dyn Entry> {
        self.with(None)
    }

    fn attached(&self) -> Box<dyn Entry> {
        self.with(Some((self.intent.borrow)(&self.view)))
    }

    unsafe fn attached_in(&self, group: &BorrowGroup) -> Box<dyn Entry> {
        // SAFETY: the caller's contract is that of `GroupedHandle::new_in`, which makes every
        // entry's handle in the group.
        self.with(Some(unsafe { (self.intent.borrow_in)(&self.view, group) }))
    }

    unsafe fn into_group(self: Box<Self>, group: &BorrowGroup) -> Box<dyn Entry> {
        let Held { view, intent, borrow } = *self;
        // SAFETY: the caller's contract is that of `GroupedHandle::new_in`, which the
        // handles' `into_group` shares.
        let borrow = unsafe {
            match borrow {
                Some(b) => b.into_group(group),
                None => (intent.borrow_in)(&view, group),
            }
        };
        Box::new(Held {
            view,
            intent,
            borrow: Some(borrow),
        })
    }
}

/// The device views a DAG vertex reads and writes, in the order of the kernel's view
/// parameters: what [`device_task`] (or `Context::task_on` over [`CudaDevice`]s) records as the
/// vertex's accesses, so that the context infers its dependencies from them as it does from
/// a host launch's handles (a writer waits for earlier readers and writers of the elements it
/// covers, readers wait for earlier writers). Each entry holds the view's borrow, a reader or
/// a writer, like a handle of a host launch; [`args`](Self::args) turns them into the
/// [`DeviceArg`]s of a launch.
///
/// ```
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::CudaSpace;
/// use hoplite_cuda::dag::DeviceViews;
///
/// let x: View<f64, 1, LayoutLeft, CudaSpace> = View::without_initializing("x", [0])?;
/// let y: View<f64, 1, LayoutLeft, CudaSpace> = View::without_initializing("y", [0])?;
/// let views = DeviceViews::new().write(&y).read(&x);
/// assert_eq!(views.len(), 2);
/// assert_eq!(views.args().len(), 2);
/// assert!(format!("{views:?}").contains("writer y"), "{views:?}");
/// # Ok::<(), hoplite_core::Error>(())
/// ```
#[derive(Default)]
pub struct DeviceViews {
    entries: Vec<Box<dyn Entry>>,
}

impl std::fmt::Debug for DeviceViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let views: Vec<String> = self
            .entries
            .iter()
            .map(|e| {
                let a = e.access();
                format!("{} {}", a.kind.noun(), a.view)
            })
            .collect();
        f.debug_struct("DeviceViews").field("views", &views).finish()
    }
}

impl DeviceViews {
    /// No views yet.
    ///
    /// ```
    /// assert!(hoplite_cuda::dag::DeviceViews::new().is_empty());
    /// ```
    pub fn new() -> DeviceViews {
        DeviceViews::default()
    }

    fn push<T, const R: usize, L, S>(
        mut self,
        view: &View<T, R, L, S>,
        intent: Intent<T, R, L, S>,
    ) -> DeviceViews
    where
        T: DeviceScalar,
        L: ArrayLayout + 'static,
        S: DeviceAccessibleSpace,
    {
        let held = Held {
            view: view.clone(),
            intent,
            borrow: None,
        };
        self.entries.push(held.attached());
        self
    }

    /// Adds a reader of `view` (the launch's [`DeviceArg::read`]).
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::CudaSpace;
    /// let x: View<f32, 2, LayoutLeft, CudaSpace> = View::default();
    /// assert_eq!(hoplite_cuda::dag::DeviceViews::new().read(&x).read(&x).len(), 2);
    /// ```
    pub fn read<T, const R: usize, L, S>(self, view: &View<T, R, L, S>) -> DeviceViews
    where
        T: DeviceScalar,
        L: ArrayLayout + 'static,
        S: DeviceAccessibleSpace,
    {
        let intent = Intent {
            kind: AccessKind::Read,
            arg: DeviceArg::read,
            borrow: |v| Box::new(v.read()),
            // SAFETY: the caller of `borrow_in` takes on `GroupedHandle::new_in`'s contract.
            borrow_in: |v, group| Box::new(unsafe { Reader::new_in(v, group) }),
        };
        self.push(view, intent)
    }

    /// Adds a writer of `view` (the launch's [`DeviceArg::write`]).
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::CudaSpace;
    /// let y: View<i64, 1, LayoutLeft, CudaSpace> = View::default();
    /// assert_eq!(hoplite_cuda::dag::DeviceViews::new().write(&y).len(), 1);
    /// ```
    pub fn write<T, const R: usize, L, S>(self, view: &View<T, R, L, S>) -> DeviceViews
    where
        T: DeviceScalar,
        L: ArrayLayout + 'static,
        S: DeviceAccessibleSpace,
    {
        let intent = Intent {
            kind: AccessKind::Write,
            arg: DeviceArg::write,
            borrow: |v| Box::new(v.write()),
            // SAFETY: the caller of `borrow_in` takes on `GroupedHandle::new_in`'s contract.
            borrow_in: |v, group| Box::new(unsafe { Writer::new_in(v, group) }),
        };
        self.push(view, intent)
    }

    /// Adds an atomic handle of `view` (the launch's [`DeviceArg::atomic`]): vertices that
    /// update the view atomically are not ordered among themselves, and are ordered after
    /// earlier readers and writers of it and before later ones, as host atomic handles are.
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::CudaSpace;
    /// let bins: View<u32, 1, LayoutLeft, CudaSpace> = View::default();
    /// let views = hoplite_cuda::dag::DeviceViews::new().atomic(&bins).atomic(&bins);
    /// assert!(views.conflict().is_none(), "atomic handles share the view");
    /// ```
    pub fn atomic<T, const R: usize, L, S>(self, view: &View<T, R, L, S>) -> DeviceViews
    where
        T: DeviceScalar + AtomicValue,
        L: ArrayLayout + 'static,
        S: DeviceAccessibleSpace,
    {
        let intent = Intent {
            kind: AccessKind::Atomic,
            arg: DeviceArg::atomic,
            borrow: |v| Box::new(v.atomic()),
            // SAFETY: the caller of `borrow_in` takes on `GroupedHandle::new_in`'s contract.
            borrow_in: |v, group| Box::new(unsafe { AtomicHandle::new_in(v, group) }),
        };
        self.push(view, intent)
    }

    /// Adds a team-slots handle of the rank-2 `view` (the launch's
    /// [`DeviceArg::team_slots`]): each thread of a team kernel owns its
    /// `[league rank, team rank]`, so the vertex writes the view.
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::CudaSpace;
    /// let slots: View<f64, 2, LayoutLeft, CudaSpace> = View::default();
    /// assert_eq!(hoplite_cuda::dag::DeviceViews::new().team_slots(&slots).len(), 1);
    /// ```
    pub fn team_slots<T, L, S>(self, view: &View<T, 2, L, S>) -> DeviceViews
    where
        T: DeviceScalar,
        L: ArrayLayout + 'static,
        S: DeviceAccessibleSpace,
    {
        let intent = Intent {
            kind: AccessKind::Write,
            arg: DeviceArg::team_slots,
            borrow: |v| Box::new(v.team_slots()),
            // SAFETY: the caller of `borrow_in` takes on `GroupedHandle::new_in`'s contract.
            borrow_in: |v, group| Box::new(unsafe { TeamSlots::new_in(v, group) }),
        };
        self.push(view, intent)
    }

    /// The number of views.
    ///
    /// ```
    /// assert_eq!(hoplite_cuda::dag::DeviceViews::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no views.
    ///
    /// ```
    /// assert!(hoplite_cuda::dag::DeviceViews::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The launch arguments of the views, in the order they were added: a
    /// [`DeviceArg::read`] or [`DeviceArg::write`] each. Append the scalars.
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::{CudaSpace, DeviceArg};
    /// let y: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    /// let mut args = hoplite_cuda::dag::DeviceViews::new().write(&y).args();
    /// args.push(DeviceArg::scalar(2.0));
    /// assert_eq!(args.len(), 2);
    /// ```
    pub fn args(&self) -> Vec<DeviceArg> {
        self.entries.iter().map(|e| e.arg()).collect()
    }

    /// The GPU whose memory every view is, if they share one (`None` for no views, or views
    /// of several GPUs, which no launch can take).
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::CudaSpace;
    /// let x: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    /// assert_eq!(hoplite_cuda::dag::DeviceViews::new().device(), None);
    /// assert_eq!(hoplite_cuda::dag::DeviceViews::new().read(&x).device(), Some(0));
    /// ```
    pub fn device(&self) -> Option<usize> {
        let first = self.entries.first()?.device();
        self.entries.iter().all(|e| e.device() == first).then_some(first)
    }

    /// The GPU a launch over the views runs on: the one they share, else the first view's
    /// (whose kernels reach the others' memory once peer access is enabled).
    fn home(&self) -> Option<usize> {
        self.device().or_else(|| self.entries.first().map(|e| e.device()))
    }

    /// The first borrow conflict among the views (a view written elsewhere, or written and
    /// read here), if any.
    ///
    /// ```
    /// use hoplite_core::{LayoutLeft, View};
    /// use hoplite_cuda::CudaSpace;
    /// let y: View<f64, 1, LayoutLeft, CudaSpace> = View::default();
    /// assert!(hoplite_cuda::dag::DeviceViews::new().write(&y).conflict().is_none());
    /// ```
    pub fn conflict(&self) -> Option<&hoplite_core::Error> {
        self.entries.iter().find_map(|e| e.conflict())
    }
}

impl LaunchArgs for DeviceViews {
    type Prepared = ();
    type Bound<'it> = ();

    /// Device views bind to nothing on the host: only the conflict check runs.
    fn prepare(&self, _label: &str, _bounds: &IndexBounds) -> hoplite_core::Result<()> {
        match self.conflict() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    unsafe fn bind<'it>(_prepared: &()) -> Self::Bound<'it> {}
}

// SAFETY: device views bind to `()`: no space's kernels get an address of them through a
// launch (the task's work hands them to device launches itself).
unsafe impl<E: hoplite_core::ExecutionSpace> hoplite_core::AccessibleArgs<E> for DeviceViews {}

/// The views of a [`DeviceViews`] without their borrows: what a graph node keeps between
/// runs ([`GraphArgs::Views`]).
pub struct DetachedViews {
    entries: Vec<Box<dyn Entry>>,
}

impl std::fmt::Debug for DetachedViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DetachedViews")
            .field("len", &self.entries.len())
            .finish()
    }
}

impl GraphArgs for DeviceViews {
    type Views = DetachedViews;

    fn detach(self) -> Self::Views {
        DetachedViews {
            entries: self.entries.iter().map(|e| e.detached()).collect(),
        }
    }

    fn attach(views: &Self::Views) -> Self {
        DeviceViews {
            entries: views.entries.iter().map(|e| e.attached()).collect(),
        }
    }

    fn record(views: &Self::Views, out: &mut Vec<Access>) {
        out.extend(views.entries.iter().map(|e| e.access()));
    }

    unsafe fn attach_in(views: &Self::Views, group: &BorrowGroup) -> Self {
        DeviceViews {
            // SAFETY: the caller's contract is that of `GroupedHandle::new_in`, passed on.
            entries: views
                .entries
                .iter()
                .map(|e| unsafe { e.attached_in(group) })
                .collect(),
        }
    }

    unsafe fn into_group(self, group: &BorrowGroup) -> Self {
        DeviceViews {
            // SAFETY: the caller's contract is that of `GroupedHandle::new_in`, passed on.
            entries: self
                .entries
                .into_iter()
                .map(|e| unsafe { e.into_group(group) })
                .collect(),
        }
    }

    fn conflict(&self) -> Option<&hoplite_core::Error> {
        DeviceViews::conflict(self)
    }

    fn record_handles(&self, out: &mut Vec<Access>) {
        out.extend(self.entries.iter().map(|e| e.access()));
    }
}

/// Adds a vertex to `ctx` that runs device work on a CUDA stream of the GPU its views are on
/// (the context's device of that ordinal; for views of several GPUs, the first view's, whose
/// kernels reach the others' views once [`Cuda::enable_peer_access`] allowed it, and fail
/// with [`CudaError::WrongDevice`] otherwise; for views of a GPU the context lacks, the stream
/// the context picks), ordered by `views` as a host launch with the same handles is: `launch` gets the stream's
/// [`Cuda`] instance and the views' [`DeviceArg`]s (in the order they were added) and issues
/// the launches (`cuda.launch_range::<K>(range, &args)` and its siblings); then the vertex
/// waits for the device (a fence of the instance), because a DAG vertex is finished when its
/// work returns and later conflicting vertices on other streams are then no longer ordered
/// after it. Streams still run concurrently: each waits on a host thread of its own.
///
/// ```
/// use hoplite::prelude::*;
/// use hoplite::{BoundReader, BoundWriter, kernel};
/// use hoplite_core::{LayoutLeft, View};
/// use hoplite_cuda::dag::{CudaDevice, DeviceViews, device_task};
/// use hoplite_cuda::{CudaSpace, DeviceArg};
/// use hoplite_dag::{Context, ContextOptions};
///
/// #[kernel]
/// fn scale(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, x: BoundReader<'_, f64, 1>, a: f64) {
///     y.set(i, a * x.get(i));
/// }
///
/// let run = || -> Result<(), Box<dyn std::error::Error>> {
///     let ctx = Context::new(vec![CudaDevice::new(0, 2)?], ContextOptions::default())?;
///     let n = 1000;
///     let x = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("x", [n])?;
///     let y = View::<f64, 1, LayoutLeft, CudaSpace>::without_initializing("y", [n])?;
///     device_task(&ctx, "scale", DeviceViews::new().write(&y).read(&x), move |cuda, mut args| {
///         args.push(DeviceArg::scalar(2.0));
///         cuda.launch_range::<scale>(0..n, &args)
///     })?;
///     ctx.synchronize()?;
///     Ok(())
/// };
/// if let Err(e) = run() {
///     println!("{e}"); // no device here
/// }
/// ```
///
/// # Errors
///
/// As for `Context::task_on`: a view borrowed outside the context or two conflicting views
/// of `views`, a stream the device could not make; the launch's error fails the vertex (and
/// is returned in sync mode, and by the context's `synchronize`).
pub fn device_task<F>(
    ctx: &Context<CudaDevice>,
    label: &str,
    views: DeviceViews,
    launch: F,
) -> Result<Vertex, DagError>
where
    F: FnOnce(&Cuda, Vec<DeviceArg>) -> Result<(), CudaError> + Send + 'static,
{
    let work = move |cuda: &Cuda, views: &DeviceViews| {
        launch(cuda, views.args())?;
        hoplite_core::ExecutionSpace::fence(cuda)
    };
    // Placed with its data: a kernel takes views of its own GPU only.
    let home = views
        .home()
        .and_then(|ordinal| ctx.devices().iter().position(|d| d.ordinal() == ordinal));
    match home {
        Some(device) => ctx.task_on_device(label, device, views, work),
        None => ctx.task_on(label, views, work),
    }
}
