//! Point-to-point transfers of views.
//!
//! A transfer holds a hoplite handle of the view for as long as MPI may touch its memory: a
//! [`Reader`] for a send, a [`Writer`] for a receive. The handle keeps the allocation alive and
//! borrowed (a receive excludes every other handle and host guard, so nothing reads
//! half-received data), and is released only after `MPI_Wait` returned. A request dropped
//! without `wait` waits in its destructor.

use std::ffi::c_int;
use std::mem::MaybeUninit;

use hoplite_core::{ArrayLayout, HostAccessibleSpace, Reader, View, ViewValue, Writer};
use mpi::ffi;

use crate::comm::Comm;
use crate::datatype::{Datatype, MpiValue, view_layout};
use crate::error::{Error, Result, check, error_class};

pub(crate) fn check_tag(op: &'static str, label: &str, tag: i32) -> Result<()> {
    if tag < 0 {
        return Err(Error::InvalidTag {
            op,
            label: label.to_owned(),
            tag,
        });
    }
    Ok(())
}

/// A send under way; [`wait`](Self::wait) completes it. Holds a reader of the view.
#[must_use = "a send completes only when waited for (dropping the request waits)"]
pub struct SendRequest<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> {
    raw: ffi::MPI_Request,
    label: String,
    // Kept until MPI is done with the memory.
    _datatype: Datatype,
    _reader: Reader<T, R, L, S>,
    done: bool,
}

/// A receive under way; [`wait`](Self::wait) completes it. Holds a writer of the view, so
/// nothing else can read or write the view until then.
#[must_use = "a receive completes only when waited for (dropping the request waits)"]
pub struct RecvRequest<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> {
    raw: ffi::MPI_Request,
    label: String,
    source: i32,
    tag: i32,
    expected: usize,
    len: usize,
    _datatype: Datatype,
    _writer: Writer<T, R, L, S>,
    done: bool,
}

// SAFETY: the raw request is used only through `&mut self`/drop, and MPI (thread level
// Multiple) completes it from any thread; the other fields are Send.
unsafe impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> Send
    for SendRequest<T, R, L, S>
{
}
// SAFETY: as for SendRequest.
unsafe impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> Send
    for RecvRequest<T, R, L, S>
{
}

/// The null request, a placeholder for an out-parameter.
fn null_request() -> ffi::MPI_Request {
    // SAFETY: reads a constant handle that rsmpi's C shim defines once.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

fn wait_raw(raw: &mut ffi::MPI_Request) -> (c_int, ffi::MPI_Status) {
    let mut status = MaybeUninit::<ffi::MPI_Status>::zeroed();
    // SAFETY: `raw` is an active request (or MPI_REQUEST_NULL after completion) and `status` a
    // place for the status.
    let rc = unsafe { ffi::MPI_Wait(raw, status.as_mut_ptr()) };
    // SAFETY: zeroed is a valid MPI_Status (plain integers), and MPI_Wait filled it in.
    (rc, unsafe { status.assume_init() })
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> SendRequest<T, R, L, S> {
    /// Waits until the view's memory may be reused (the message is on its way or received).
    ///
    /// # Errors
    ///
    /// [`Error::Mpi`] when MPI fails.
    pub fn wait(mut self) -> Result<()> {
        self.done = true;
        let (rc, _) = wait_raw(&mut self.raw);
        check(rc, "send", &self.label)
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> Drop for SendRequest<T, R, L, S> {
    fn drop(&mut self) {
        if !self.done {
            // The reader must outlive MPI's use of the memory.
            let _ = wait_raw(&mut self.raw);
        }
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> RecvRequest<T, R, L, S> {
    /// Waits until the whole message is in the view; then the view's writer is released.
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] when the message was not exactly the view's size (the view's
    /// contents are then unspecified), [`Error::Mpi`] when MPI fails.
    pub fn wait(mut self) -> Result<()> {
        self.done = true;
        let (rc, status) = wait_raw(&mut self.raw);
        let mismatch = |received: usize| Error::SizeMismatch {
            label: self.label.clone(),
            from_rank: self.source,
            tag: self.tag,
            received,
            expected: self.expected,
            len: self.len,
            element_bytes: size_of::<T>(),
        };
        if rc != ffi::MPI_SUCCESS as c_int {
            if error_class(rc) == ffi::MPI_ERR_TRUNCATE as c_int {
                return Err(mismatch(self.expected + 1));
            }
            return check(rc, "receive", &self.label);
        }
        let received = received_bytes(&status);
        if received != self.expected {
            return Err(mismatch(received));
        }
        Ok(())
    }
}

impl<T: ViewValue, const R: usize, L: ArrayLayout, S: HostAccessibleSpace> Drop for RecvRequest<T, R, L, S> {
    fn drop(&mut self) {
        if !self.done {
            // The writer must outlive MPI's use of the memory.
            let _ = wait_raw(&mut self.raw);
        }
    }
}

fn received_bytes(status: &ffi::MPI_Status) -> usize {
    let mut count: c_int = 0;
    // SAFETY: a status filled in by MPI; MPI_UINT8_T counts bytes.
    unsafe { ffi::MPI_Get_count(status, ffi::RSMPI_UINT8_T, &mut count) };
    usize::try_from(count).unwrap_or(0)
}

/// A started transfer that is not tied to a handle: the caller keeps the view's borrow (a DAG
/// vertex's handles) until [`RawTransfer::wait`] returns.
pub(crate) struct RawTransfer {
    raw: ffi::MPI_Request,
    _datatype: Datatype,
    label: String,
    source: i32,
    tag: i32,
    expected: usize,
    len: usize,
    element_bytes: usize,
    receive: bool,
}

impl RawTransfer {
    /// Waits for the transfer; a receive checks the message's size.
    pub(crate) fn wait(mut self) -> Result<()> {
        let (rc, status) = wait_raw(&mut self.raw);
        let op = if self.receive { "receive" } else { "send" };
        let mismatch = |received: usize| Error::SizeMismatch {
            label: self.label.clone(),
            from_rank: self.source,
            tag: self.tag,
            received,
            expected: self.expected,
            len: self.len,
            element_bytes: self.element_bytes,
        };
        if rc != ffi::MPI_SUCCESS as c_int {
            if self.receive && error_class(rc) == ffi::MPI_ERR_TRUNCATE as c_int {
                return Err(mismatch(self.expected + 1));
            }
            return check(rc, op, &self.label);
        }
        if self.receive {
            let received = received_bytes(&status);
            if received != self.expected {
                return Err(mismatch(received));
            }
        }
        Ok(())
    }
}

impl Comm {
    /// Starts a send of `view` without borrowing it.
    ///
    /// # Safety
    ///
    /// Until the returned request completes, the view's allocation stays alive and no one
    /// writes its elements (the caller holds a reader or an equivalent borrow).
    pub(crate) unsafe fn start_send<T, const R: usize, L, S>(
        &self,
        view: &View<T, R, L, S>,
        dest: i32,
        tag: i32,
    ) -> Result<(ffi::MPI_Request, Datatype)>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let layout = view_layout("send", view)?;
        let mut raw = null_request();
        // SAFETY: `layout` describes exactly the view's elements from `data()` on; the caller
        // keeps the memory alive and unchanged until the request completes.
        let rc = unsafe {
            ffi::MPI_Isend(
                view.data().cast(),
                layout.count,
                layout.datatype.raw(),
                dest,
                tag,
                self.raw(),
                &mut raw,
            )
        };
        check(rc, "send", view.label())?;
        Ok((raw, layout.datatype))
    }

    /// Starts a receive into `view` without borrowing it.
    ///
    /// # Safety
    ///
    /// Until the returned request completes, the view's allocation stays alive and no one else
    /// reads or writes its elements (the caller holds a writer or an equivalent borrow).
    pub(crate) unsafe fn start_recv<T, const R: usize, L, S>(
        &self,
        view: &View<T, R, L, S>,
        source: i32,
        tag: i32,
    ) -> Result<(ffi::MPI_Request, Datatype)>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let layout = view_layout("receive", view)?;
        let mut raw = null_request();
        // SAFETY: `layout` describes exactly the view's elements from `data()` on (MPI writes
        // no other byte, and reports a longer message as truncation); the caller keeps the
        // memory alive and to itself until the request completes. Any bytes are a valid
        // element (`MpiValue`'s contract, and `ViewValue: Zeroable` for partial writes).
        let rc = unsafe {
            ffi::MPI_Irecv(
                view.data().cast_mut().cast(),
                layout.count,
                layout.datatype.raw(),
                source,
                tag,
                self.raw(),
                &mut raw,
            )
        };
        check(rc, "receive", view.label())?;
        Ok((raw, layout.datatype))
    }

    /// Starts a send whose borrow the caller holds (see [`start_send`](Self::start_send)).
    ///
    /// # Safety
    ///
    /// As for `start_send`.
    pub(crate) unsafe fn raw_send<T, const R: usize, L, S>(
        &self,
        view: &View<T, R, L, S>,
        dest: i32,
        tag: i32,
    ) -> Result<RawTransfer>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        // SAFETY: the caller's contract.
        let (raw, datatype) = unsafe { self.start_send(view, dest, tag)? };
        Ok(RawTransfer {
            raw,
            _datatype: datatype,
            label: view.label().to_owned(),
            source: self.rank(),
            tag,
            expected: view.len() * size_of::<T>(),
            len: view.len(),
            element_bytes: size_of::<T>(),
            receive: false,
        })
    }

    /// Starts a receive whose borrow the caller holds (see [`start_recv`](Self::start_recv)).
    ///
    /// # Safety
    ///
    /// As for `start_recv`.
    pub(crate) unsafe fn raw_recv<T, const R: usize, L, S>(
        &self,
        view: &View<T, R, L, S>,
        source: i32,
        tag: i32,
    ) -> Result<RawTransfer>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        // SAFETY: the caller's contract.
        let (raw, datatype) = unsafe { self.start_recv(view, source, tag)? };
        Ok(RawTransfer {
            raw,
            _datatype: datatype,
            label: view.label().to_owned(),
            source,
            tag,
            expected: view.len() * size_of::<T>(),
            len: view.len(),
            element_bytes: size_of::<T>(),
            receive: true,
        })
    }

    /// Starts sending `view` to rank `dest` with `tag`; the returned request holds a reader of
    /// the view until it completes.
    ///
    /// Elements travel in row-major index order. A contiguous row-major view is sent from its
    /// memory; any other through a derived datatype of its strides (no copy either).
    ///
    /// # Errors
    ///
    /// [`Error::RankOutOfRange`], [`Error::InvalidTag`], [`Error::View`] when the view is
    /// borrowed as a writer elsewhere, [`Error::Mpi`] when MPI fails.
    ///
    /// ```no_run
    /// # use hoplite_core::View;
    /// # let mpi = hoplite_mpi::Mpi::init()?;
    /// # let world = mpi.world();
    /// let x: View<f64, 1> = View::new("x", [8])?;
    /// let request = world.isend(&x, 1, 0)?;
    /// // ... compute on other views ...
    /// request.wait()?;
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn isend<T, const R: usize, L, S>(
        &self,
        view: &View<T, R, L, S>,
        dest: i32,
        tag: i32,
    ) -> Result<SendRequest<T, R, L, S>>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let _region = crate::region("hoplite-mpi isend");
        let dest = self.check_rank("send", view.label(), dest)?;
        check_tag("send", view.label(), tag)?;
        let reader = view.read();
        if let Some(e) = reader.conflict() {
            return Err(e.clone().into());
        }
        // SAFETY: the reader, kept in the request until MPI_Wait returns, keeps the allocation
        // alive and excludes writers.
        let (raw, datatype) = unsafe { self.start_send(view, dest, tag)? };
        Ok(SendRequest {
            raw,
            label: view.label().to_owned(),
            _datatype: datatype,
            _reader: reader,
            done: false,
        })
    }

    /// Starts receiving into `view` from rank `source` with `tag`; the returned request holds a
    /// writer of the view until it completes.
    ///
    /// # Errors
    ///
    /// [`Error::RankOutOfRange`], [`Error::InvalidTag`], [`Error::View`] when the view is
    /// borrowed elsewhere (a host guard, a handle, a running launch), [`Error::Mpi`].
    ///
    /// ```no_run
    /// # use hoplite_core::View;
    /// # let mpi = hoplite_mpi::Mpi::init()?;
    /// # let world = mpi.world();
    /// let x: View<f64, 1> = View::new("x", [8])?;
    /// let request = world.irecv(&x, 0, 0)?;
    /// assert!(x.host_read().is_err(), "no reads of half-received data");
    /// request.wait()?;
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn irecv<T, const R: usize, L, S>(
        &self,
        view: &View<T, R, L, S>,
        source: i32,
        tag: i32,
    ) -> Result<RecvRequest<T, R, L, S>>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let _region = crate::region("hoplite-mpi irecv");
        let source = self.check_rank("receive", view.label(), source)?;
        check_tag("receive", view.label(), tag)?;
        let writer = view.write();
        if let Some(e) = writer.conflict() {
            return Err(e.clone().into());
        }
        // SAFETY: the writer, kept in the request until MPI_Wait returns, keeps the allocation
        // alive and excludes every other handle and guard.
        let (raw, datatype) = unsafe { self.start_recv(view, source, tag)? };
        Ok(RecvRequest {
            raw,
            label: view.label().to_owned(),
            source,
            tag,
            expected: view.len() * size_of::<T>(),
            len: view.len(),
            _datatype: datatype,
            _writer: writer,
            done: false,
        })
    }

    /// Sends `view` to rank `dest` with `tag` and waits until its memory may be reused.
    ///
    /// # Errors
    ///
    /// As for [`isend`](Self::isend).
    ///
    /// ```no_run
    /// # use hoplite_core::View;
    /// # let mpi = hoplite_mpi::Mpi::init()?;
    /// # let world = mpi.world();
    /// let x: View<f64, 1> = View::new("x", [8])?;
    /// world.send(&x, 1, 0)?;
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn send<T, const R: usize, L, S>(&self, view: &View<T, R, L, S>, dest: i32, tag: i32) -> Result<()>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let _region = crate::region("hoplite-mpi send");
        self.isend(view, dest, tag)?.wait()
    }

    /// Receives into `view` from rank `source` with `tag`, waiting for the whole message.
    ///
    /// # Errors
    ///
    /// As for [`irecv`](Self::irecv), and [`Error::SizeMismatch`] when the message is not the
    /// view's size.
    ///
    /// ```no_run
    /// # use hoplite_core::View;
    /// # let mpi = hoplite_mpi::Mpi::init()?;
    /// # let world = mpi.world();
    /// let x: View<f64, 1> = View::new("x", [8])?;
    /// world.recv(&x, 0, 0)?;
    /// # Ok::<(), hoplite_mpi::Error>(())
    /// ```
    pub fn recv<T, const R: usize, L, S>(&self, view: &View<T, R, L, S>, source: i32, tag: i32) -> Result<()>
    where
        T: ViewValue + MpiValue,
        L: ArrayLayout,
        S: HostAccessibleSpace,
    {
        let _region = crate::region("hoplite-mpi recv");
        self.irecv(view, source, tag)?.wait()
    }
}
