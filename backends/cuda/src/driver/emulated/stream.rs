//! Emulated streams and events, as CUDA documents them: a stream runs its queued work in
//! order, one item at a time, on a thread of its own (the driver's thread, on which host
//! nodes run too); an event records a point of a stream and is reached when the work queued
//! before it has completed; a stream or the host may wait for the last record of an event.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::sanitizer::{Arena, schedule_delay};

/// A failure of device work (a trapped kernel, an illegal address): CUDA's code and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fault {
    pub(super) code: u32,
    pub(super) name: &'static str,
    pub(super) description: &'static str,
}

/// `CUDA_ERROR_LAUNCH_FAILED`: what a trapped kernel leaves in its context.
pub(super) const LAUNCH_FAILED: Fault = Fault {
    code: 719,
    name: "CUDA_ERROR_LAUNCH_FAILED",
    description: "unspecified launch failure",
};

/// Work queued on a stream; it runs on the stream's thread.
pub(super) type Work = Box<dyn FnOnce() -> Result<(), Fault> + Send>;

/// How a stream's thread runs its work under the sanitizer: the schedule's seed (0: no
/// delays), the stream's handle, and the arena of device memory to open around each item.
#[derive(Clone, Copy)]
pub(super) struct Schedule {
    pub(super) seed: u64,
    pub(super) stream: usize,
    pub(super) arena: Option<&'static Arena>,
}

/// What a stream has queued and done.
struct Queue {
    work: VecDeque<Work>,
    /// Items queued since the stream was made, and items completed.
    submitted: u64,
    completed: u64,
    /// Destroyed: the thread ends once the queue is empty.
    closed: bool,
}

/// A stream: its queue and the condition its thread and its waiters meet at.
pub(super) struct EmuStream {
    pub(super) device: usize,
    queue: Mutex<Queue>,
    changed: Condvar,
}

impl EmuStream {
    /// A stream of `device` whose thread reports a failed item to `fault` (the device's
    /// sticky error) and skips work once the device has failed, as a GPU's context does.
    pub(super) fn spawn(
        device: usize,
        fault: &'static Mutex<Option<Fault>>,
        schedule: Schedule,
    ) -> std::io::Result<Arc<EmuStream>> {
        let stream = Arc::new(EmuStream {
            device,
            queue: Mutex::new(Queue {
                work: VecDeque::new(),
                submitted: 0,
                completed: 0,
                closed: false,
            }),
            changed: Condvar::new(),
        });
        let worker = stream.clone();
        std::thread::Builder::new()
            .name(format!("emulated CUDA stream (device {device})"))
            .spawn(move || worker.run(fault, schedule))?;
        Ok(stream)
    }

    fn run(&self, fault: &Mutex<Option<Fault>>, schedule: Schedule) {
        let mut item = 0u64;
        loop {
            let work = {
                let mut q = self.queue.lock();
                loop {
                    if let Some(w) = q.work.pop_front() {
                        break w;
                    }
                    if q.closed {
                        return;
                    }
                    self.changed.wait(&mut q);
                }
            };
            item += 1;
            schedule_delay(schedule.seed, schedule.stream, item);
            if fault.lock().is_none() {
                let outcome = match schedule.arena {
                    Some(arena) => arena.with_device_access(work),
                    None => work(),
                };
                if let Err(f) = outcome {
                    fault.lock().get_or_insert(f);
                }
            }
            let mut q = self.queue.lock();
            q.completed += 1;
            self.changed.notify_all();
        }
    }

    /// Queues `work` after everything queued so far; returns its position (1-based).
    pub(super) fn enqueue(&self, work: Work) -> u64 {
        let mut q = self.queue.lock();
        q.work.push_back(work);
        q.submitted += 1;
        self.changed.notify_all();
        q.submitted
    }

    /// How many items were queued so far.
    pub(super) fn submitted(&self) -> u64 {
        self.queue.lock().submitted
    }

    /// Waits until the first `position` items completed.
    pub(super) fn wait_for(&self, position: u64) {
        let mut q = self.queue.lock();
        while q.completed < position {
            self.changed.wait(&mut q);
        }
    }

    /// Whether everything queued so far completed.
    pub(super) fn is_idle(&self) -> bool {
        let q = self.queue.lock();
        q.completed == q.submitted
    }

    /// Ends the stream: its thread finishes what is queued, then exits.
    pub(super) fn close(&self) {
        self.queue.lock().closed = true;
        self.changed.notify_all();
    }
}

/// An event's records: how many were made, how many were reached, and when the last was.
#[derive(Default)]
struct Records {
    recorded: u64,
    reached: u64,
    at: Option<Instant>,
}

/// An event.
pub(super) struct EmuEvent {
    pub(super) device: usize,
    pub(super) timing: bool,
    records: Mutex<Records>,
    changed: Condvar,
}

impl EmuEvent {
    pub(super) fn new(device: usize, timing: bool) -> EmuEvent {
        EmuEvent {
            device,
            timing,
            records: Mutex::new(Records::default()),
            changed: Condvar::new(),
        }
    }

    /// Records the event on `stream`: a new record, reached when the stream gets there.
    pub(super) fn record(self: &Arc<EmuEvent>, stream: &EmuStream) {
        let record = {
            let mut r = self.records.lock();
            r.recorded += 1;
            r.recorded
        };
        let event = self.clone();
        stream.enqueue(Box::new(move || {
            let mut r = event.records.lock();
            if record > r.reached {
                r.reached = record;
                r.at = Some(Instant::now());
            }
            event.changed.notify_all();
            Ok(())
        }));
    }

    /// The last record so far (0 when never recorded).
    pub(super) fn last_record(&self) -> u64 {
        self.records.lock().recorded
    }

    /// Whether record `record` was reached.
    pub(super) fn reached(&self, record: u64) -> bool {
        self.records.lock().reached >= record
    }

    /// Waits until record `record` was reached.
    pub(super) fn wait_for(&self, record: u64) {
        let mut r = self.records.lock();
        while r.reached < record {
            self.changed.wait(&mut r);
        }
    }

    /// When the last record was reached, if it was.
    pub(super) fn reached_at(&self) -> Option<Instant> {
        let r = self.records.lock();
        if r.recorded > 0 && r.reached >= r.recorded {
            r.at
        } else {
            None
        }
    }
}
