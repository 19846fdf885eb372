//! Device views as the handles of a hoplite-dag vertex: [`DeviceViews`] records the reads and
//! writes of device views so that a DAG context orders a `#[kernel]` launch on a CUDA stream
//! exactly as it orders a host launch with the same handles, and [`device_task`] launches it.

use hoplite_core::view::access::IndexBounds;
use hoplite_core::view::graph_support::BorrowGroup;
use hoplite_core::view::{AccessKind, LaunchArgs};
use hoplite_core::{ArrayLayout, Reader, View, Writer};
use hoplite_dag::{Context, DagError, Vertex};
use hoplite_graph::{Access, GraphArgs};

use crate::dag::CudaDevice;
use crate::{Cuda, CudaError, DeviceAccessibleSpace, DeviceArg, DeviceScalar};

/// The borrow an entry holds: none once detached (a graph keeps views, not borrows).
enum Borrow<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace> {
    Detached,
    Read(Reader<T, R, L, S>),
    Write(Writer<T, R, L, S>),
}

/// One device view and its intent.
struct Held<T: DeviceScalar, const R: usize, L: ArrayLayout, S: DeviceAccessibleSpace> {
    view: View<T, R, L, S>,
    write: bool,
    borrow: Borrow<T, R, L, S>,
}

/// What [`DeviceViews`] needs of an entry, whatever its element type, rank, layout and space.
trait Entry: Send + Sync {
    fn access(&self) -> Access;
    fn arg(&self) -> DeviceArg;
    fn conflict(&self) -> Option<&hoplite_core::Error>;
    fn detached(&self) -> Box<dyn Entry>;
    fn attached(&self) -> Box<dyn Entry>;
    /// # Safety
    ///
    /// As for [`View::read_in`].
    unsafe fn attached_in(&self, group: &BorrowGroup) -> Box<dyn Entry>;
    /// # Safety
    ///
    /// As for [`View::read_in`].
    unsafe fn into_group(self: Box<Self>, group: &BorrowGroup) -> Box<dyn Entry>;
}

impl<T, const R: usize, L, S> Held<T, R, L, S>
where
    T: DeviceScalar,
    L: ArrayLayout + 'static,
    S: DeviceAccessibleSpace,
{
    fn with(&self, borrow: Borrow<T, R, L, S>) -> Box<dyn Entry> {
        Box::new(Held {
            view: self.view.clone(),
            write: self.write,
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
            kind: if self.write {
                AccessKind::Write
            } else {
                AccessKind::Read
            },
            view: self.view.shared_label(),
            bytes: self.view.len().saturating_mul(size_of::<T>()),
        }
    }

    fn arg(&self) -> DeviceArg {
        if self.write {
            DeviceArg::write(&self.view)
        } else {
            DeviceArg::read(&self.view)
        }
    }

    fn conflict(&self) -> Option<&hoplite_core::Error> {
        match &self.borrow {
            Borrow::Detached => None,
            Borrow::Read(r) => r.conflict(),
            Borrow::Write(w) => w.conflict(),
        }
    }

    fn detached(&self) -> Box<dyn Entry> {
        self.with(Borrow::Detached)
    }

    fn attached(&self) -> Box<dyn Entry> {
        self.with(if self.write {
            Borrow::Write(self.view.write())
        } else {
            Borrow::Read(self.view.read())
        })
    }

    unsafe fn attached_in(&self, group: &BorrowGroup) -> Box<dyn Entry> {
        // SAFETY: the caller's contract is that of `View::read_in` / `write_in`.
        let borrow = unsafe {
            if self.write {
                Borrow::Write(self.view.write_in(group))
            } else {
                Borrow::Read(self.view.read_in(group))
            }
        };
        self.with(borrow)
    }

    unsafe fn into_group(self: Box<Self>, group: &BorrowGroup) -> Box<dyn Entry> {
        let Held { view, write, borrow } = *self;
        // SAFETY: the caller's contract is that of `View::read_in` / `write_in`, which
        // `into_group` of a handle shares.
        let borrow = unsafe {
            match borrow {
                Borrow::Read(r) => Borrow::Read(r.into_group(group)),
                Borrow::Write(w) => Borrow::Write(w.into_group(group)),
                Borrow::Detached if write => Borrow::Write(view.write_in(group)),
                Borrow::Detached => Borrow::Read(view.read_in(group)),
            }
        };
        Box::new(Held { view, write, borrow })
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

    fn push<T, const R: usize, L, S>(mut self, view: &View<T, R, L, S>, write: bool) -> DeviceViews
    where
        T: DeviceScalar,
        L: ArrayLayout + 'static,
        S: DeviceAccessibleSpace,
    {
        let held = Held {
            view: view.clone(),
            write,
            borrow: Borrow::Detached,
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
        self.push(view, false)
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
        self.push(view, true)
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
            // SAFETY: the caller's contract is that of `View::read_in`, passed on.
            entries: views
                .entries
                .iter()
                .map(|e| unsafe { e.attached_in(group) })
                .collect(),
        }
    }

    unsafe fn into_group(self, group: &BorrowGroup) -> Self {
        DeviceViews {
            // SAFETY: the caller's contract is that of `View::read_in`, passed on.
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

/// Adds a vertex to `ctx` that runs device work on the CUDA stream the context picks for it,
/// ordered by `views` as a host launch with the same handles is: `launch` gets the stream's
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
    ctx.task_on(label, views, move |cuda: &Cuda, views: &DeviceViews| {
        launch(cuda, views.args())?;
        hoplite_core::ExecutionSpace::fence(cuda)
    })
}
