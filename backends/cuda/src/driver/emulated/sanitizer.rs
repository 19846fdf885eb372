//! The emulated driver's sanitizer (`HOPLITE_CUDA_SANITIZER=on`), which reports what
//! `compute-sanitizer` reports on a GPU, at the driver call that would queue the offending work:
//!
//! - **(a) memory freed in use**: device memory freed while work queued on a stream that may
//!   still use it has not been waited for (by the host, or, for a stream-ordered free, by the
//!   freeing stream);
//! - **(b) races between streams**: two pieces of work on different streams (or a stream and
//!   the host) touching the same allocation, one of them writing, with no ordering between
//!   them: neither stream order, nor an event recorded and waited for, nor a host
//!   synchronization;
//! - **(c) host reads of device memory**: device allocations live in an arena that is mapped
//!   readable only while device work (a kernel, a copy) runs; a host access at any other time
//!   faults, which the sanitizer's signal handler records and reports at the next driver call.
//!
//! Orderings are vector clocks, one entry per stream and one for the host (the host's threads
//! meet at the driver's lock, so they count as one). What a kernel touches is what its pointer
//! parameters point into, read-only for pointers to `const` (`#[kernel]` entries pass read
//! handles so), at the granularity of allocations. A seeded schedule
//! (`HOPLITE_CUDA_SCHEDULE_SEED`, else a seed from the clock) delays the streams' work, so
//! that a missing ordering shows up as a finding (or a wrong value) rather than passing by
//! luck; every finding names the seed.

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::CudaError;

/// The environment setting that turns the sanitizer on (`on`; default `off`).
pub const SANITIZER_ENV: &str = "HOPLITE_CUDA_SANITIZER";
/// The environment setting with the seed of the streams' schedule.
pub const SCHEDULE_SEED_ENV: &str = "HOPLITE_CUDA_SCHEDULE_SEED";

/// The host's entry in a vector clock (streams use their handles, which start at 1).
const HOST: usize = 0;

/// A vector clock: for each actor, the last of its steps known to have happened before.
type Clock = HashMap<usize, u64>;

fn join(into: &mut Clock, from: &Clock) {
    for (&actor, &step) in from {
        let at = into.entry(actor).or_insert(0);
        *at = (*at).max(step);
    }
}

fn known(clock: &Clock, actor: usize) -> u64 {
    clock.get(&actor).copied().unwrap_or(0)
}

/// One actor's last access of an allocation.
#[derive(Clone)]
struct Record {
    step: u64,
    what: String,
}

/// The accesses of one allocation: each actor's last read, last write and last atomic update.
#[derive(Default)]
struct Accesses {
    reads: HashMap<usize, Record>,
    writes: HashMap<usize, Record>,
    atomics: HashMap<usize, Record>,
}

/// How work touches an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// Loads only (a pointer to const).
    Read,
    /// Loads and stores.
    Write,
    /// Atomic updates only (a pointer to volatile): they do not race with each other.
    Atomic,
}

impl Access {
    /// Both accesses of one piece of work: the same, or a write.
    pub(super) fn and(self, other: Access) -> Access {
        if self == other { self } else { Access::Write }
    }

    fn verb(self) -> &'static str {
        match self {
            Access::Read => "reads",
            Access::Write => "may write",
            Access::Atomic => "updates atomically",
        }
    }
}

/// An access of work: the allocation (its start and size) and how it is touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Touch {
    pub(super) start: u64,
    pub(super) bytes: usize,
    pub(super) access: Access,
}

#[derive(Default)]
struct State {
    host: Clock,
    streams: HashMap<usize, Clock>,
    events: HashMap<usize, Clock>,
    memory: HashMap<u64, Accesses>,
}

/// The sanitizer: off unless asked for.
pub(super) struct Sanitizer {
    enabled: bool,
    seed: u64,
    state: Mutex<State>,
    /// A finding to report at the next driver call.
    deferred: Mutex<Option<CudaError>>,
}

/// Names an actor for a finding.
fn actor_name(actor: usize) -> String {
    if actor == HOST {
        "the host".to_owned()
    } else {
        format!("stream {actor}")
    }
}

impl Sanitizer {
    /// The sanitizer the environment asks for.
    pub(super) fn from_env() -> Sanitizer {
        let enabled = crate::switch_setting(
            SANITIZER_ENV,
            std::env::var(SANITIZER_ENV).ok().as_deref(),
            ["on", "off"],
            "the emulated driver runs without its sanitizer",
        );
        Sanitizer::new(enabled, schedule_seed())
    }

    pub(super) fn new(enabled: bool, seed: u64) -> Sanitizer {
        if enabled {
            // Past a test harness's capture: every run shows the seed it can be rerun with.
            let _ = writeln!(
                std::io::stderr(),
                "hoplite-cuda: the emulated driver's sanitizer is on; schedule seed {seed} ({SCHEDULE_SEED_ENV})"
            );
        }
        Sanitizer {
            enabled,
            seed,
            state: Mutex::new(State::default()),
            deferred: Mutex::new(None),
        }
    }

    pub(super) fn enabled(&self) -> bool {
        self.enabled
    }

    /// The seed of the streams' schedule (0: no delays).
    pub(super) fn seed(&self) -> u64 {
        if self.enabled { self.seed } else { 0 }
    }

    fn finding(&self, finding: String) -> CudaError {
        eprintln!("hoplite-cuda sanitizer: {finding} (schedule seed {})", self.seed);
        CudaError::Sanitizer {
            finding,
            seed: self.seed,
        }
    }

    /// A finding not yet reported: a host read of device memory the signal handler saw, or a
    /// finding of a call whose caller could not report it (a free in a drop); taken once.
    pub(super) fn unreported(&self) -> Result<(), CudaError> {
        if !self.enabled {
            return Ok(());
        }
        if let Some(e) = self.deferred.lock().take() {
            return Err(e);
        }
        match HOST_READ.swap(0, Ordering::SeqCst) {
            0 => Ok(()),
            address => Err(self.finding(format!(
                "a host read of device memory at {address:#x}: the host reaches device memory only through the driver's copies"
            ))),
        }
    }

    pub(super) fn stream_created(&self, stream: usize) {
        if self.enabled {
            let mut s = self.state.lock();
            let clock = s.host.clone();
            s.streams.insert(stream, clock);
        }
    }

    /// Work `what`, touching `touches`, queued on `stream` by `enqueue`: its step in the
    /// stream's order, checked against every access it is not ordered after, then queued in
    /// one step with the check (so a host's wait sees either both or neither).
    pub(super) fn queue(
        &self,
        stream: usize,
        touches: &[Touch],
        what: &str,
        enqueue: impl FnOnce(),
    ) -> Result<(), CudaError> {
        if !self.enabled {
            enqueue();
            return Ok(());
        }
        self.unreported()?;
        let mut s = self.state.lock();
        let mut clock = s.streams.get(&stream).cloned().unwrap_or_default();
        let host = s.host.clone();
        join(&mut clock, &host);
        let step = known(&clock, stream) + 1;
        clock.insert(stream, step);
        let what = format!("{what} on {}", actor_name(stream));
        self.check_and_record(&mut s, stream, &clock, step, touches, &what)?;
        s.streams.insert(stream, clock);
        enqueue();
        Ok(())
    }

    /// Host work `what` (a synchronous copy or memset) touching `touches`.
    pub(super) fn host_work(&self, touches: &[Touch], what: &str) -> Result<(), CudaError> {
        if !self.enabled {
            return Ok(());
        }
        self.unreported()?;
        let mut s = self.state.lock();
        let mut clock = s.host.clone();
        let step = known(&clock, HOST) + 1;
        clock.insert(HOST, step);
        self.check_and_record(
            &mut s,
            HOST,
            &clock,
            step,
            touches,
            &format!("{what} by the host"),
        )?;
        s.host = clock;
        Ok(())
    }

    fn check_and_record(
        &self,
        s: &mut State,
        me: usize,
        clock: &Clock,
        step: u64,
        touches: &[Touch],
        what: &str,
    ) -> Result<(), CudaError> {
        for t in touches {
            let Some(acc) = s.memory.get(&t.start) else {
                continue;
            };
            let unordered = |records: &HashMap<usize, Record>| {
                records
                    .iter()
                    .find(|&(&actor, r)| actor != me && known(clock, actor) < r.step)
                    .map(|(_, r)| r.what.clone())
            };
            // Reads race with writes and atomics, atomics with reads and writes, writes with all.
            let [reads, writes, atomics] = match t.access {
                Access::Read => [false, true, true],
                Access::Atomic => [true, true, false],
                Access::Write => [true, true, true],
            };
            let clash = [
                (writes, &acc.writes, Access::Write),
                (atomics, &acc.atomics, Access::Atomic),
                (reads, &acc.reads, Access::Read),
            ]
            .into_iter()
            .filter(|(checked, ..)| *checked)
            .find_map(|(_, records, access)| unordered(records).map(|other| (other, access)));
            if let Some((other, access)) = clash {
                return Err(self.finding(format!(
                    "a race on device memory at {:#x} ({} bytes): {what} {} it, and {other} {} it, with no ordering between them (no stream order, event or synchronization)",
                    t.start,
                    t.bytes,
                    t.access.verb(),
                    access.verb(),
                )));
            }
        }
        for t in touches {
            let acc = s.memory.entry(t.start).or_default();
            let record = Record {
                step,
                what: what.to_owned(),
            };
            match t.access {
                Access::Read => acc.reads.insert(me, record),
                Access::Write => acc.writes.insert(me, record),
                Access::Atomic => acc.atomics.insert(me, record),
            };
        }
        Ok(())
    }

    /// `event` recorded on `stream` by `record`: it stands for the stream's work so far.
    pub(super) fn record_event(&self, event: usize, stream: usize, record: impl FnOnce()) {
        if !self.enabled {
            return record();
        }
        let mut s = self.state.lock();
        let clock = s.streams.get(&stream).cloned().unwrap_or_default();
        s.events.insert(event, clock);
        record();
    }

    /// `stream` made to wait by `wait` for `event`'s last record, which `wait` reads.
    pub(super) fn wait_event<T>(&self, stream: usize, event: usize, wait: impl FnOnce() -> T) -> T {
        if !self.enabled {
            return wait();
        }
        let mut s = self.state.lock();
        let from = s.events.get(&event).cloned().unwrap_or_default();
        join(s.streams.entry(stream).or_default(), &from);
        wait()
    }

    /// The point the host will have reached once it has waited for what `read` says (a
    /// stream's queue position, an event's record), read in one step with the point: the
    /// clocks of `streams` and `events` now.
    pub(super) fn point<T>(
        &self,
        streams: &[usize],
        events: &[usize],
        read: impl FnOnce() -> T,
    ) -> (Point, T) {
        if !self.enabled {
            return (Point(None), read());
        }
        let s = self.state.lock();
        let mut clock = Clock::new();
        for stream in streams {
            join(&mut clock, s.streams.get(stream).unwrap_or(&Clock::new()));
        }
        for event in events {
            join(&mut clock, s.events.get(event).unwrap_or(&Clock::new()));
        }
        (Point(Some(clock)), read())
    }

    /// The host has waited for `point`: what it covers happened before the host's later work.
    pub(super) fn reached(&self, point: Point) {
        if let Point(Some(clock)) = point {
            join(&mut self.state.lock().host, &clock);
        }
    }

    /// Allocation `start` (of `bytes` bytes) about to be freed by the host, or, stream-ordered,
    /// by `stream`: every access to it must be ordered before the free.
    pub(super) fn free(&self, start: u64, bytes: usize, stream: Option<usize>) -> Result<(), CudaError> {
        if !self.enabled {
            return Ok(());
        }
        self.unreported()?;
        let mut s = self.state.lock();
        let me = stream.unwrap_or(HOST);
        let clock = match stream {
            Some(stream) => s.streams.get(&stream).cloned().unwrap_or_default(),
            None => s.host.clone(),
        };
        if let Some(acc) = s.memory.get(&start) {
            let in_use = acc
                .writes
                .iter()
                .chain(&acc.reads)
                .chain(&acc.atomics)
                .find(|&(&actor, r)| actor != me && known(&clock, actor) < r.step);
            if let Some((_, r)) = in_use {
                let e = self.finding(format!(
                    "device memory at {start:#x} ({bytes} bytes) freed by {} while {} may still use it (not waited for before the free)",
                    actor_name(me),
                    r.what
                ));
                // A free's error is often dropped (memory is freed in drops): the next driver
                // call reports it too. The memory stays allocated, so nothing reads freed bytes.
                self.deferred.lock().get_or_insert(e.clone());
                return Err(e);
            }
        }
        s.memory.remove(&start);
        Ok(())
    }
}

/// What the host will know has completed once a wait returns ([`Sanitizer::point`]).
pub(super) struct Point(Option<Clock>);

/// The schedule's seed: `HOPLITE_CUDA_SCHEDULE_SEED`, else one from the clock.
fn schedule_seed() -> u64 {
    std::env::var(SCHEDULE_SEED_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        })
}

/// A delay before the `item`-th work of `stream` under the schedule `seed` (none for seed 0):
/// a quarter of the items wait up to half a millisecond, the rest yield.
pub(super) fn schedule_delay(seed: u64, stream: usize, item: u64) {
    if seed == 0 {
        return;
    }
    // splitmix64 of the three: a different, reproducible delay for every item.
    let mut x = seed ^ (stream as u64).rotate_left(32) ^ item.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    if x.is_multiple_of(4) {
        std::thread::sleep(std::time::Duration::from_micros((x >> 8) % 500));
    } else {
        std::thread::yield_now();
    }
}

/// The address of a host read of device memory the signal handler saw (0: none).
static HOST_READ: AtomicUsize = AtomicUsize::new(0);
/// The arena of device memory: its base and size (0 until it is made).
static ARENA_BASE: AtomicUsize = AtomicUsize::new(0);
static ARENA_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Device memory while the sanitizer is on: one reserved range, readable only while device
/// work runs, with a first-fit allocator over it.
pub(super) struct Arena {
    base: usize,
    bytes: usize,
    /// Free blocks by start: their sizes.
    free: Mutex<BTreeMap<usize, usize>>,
    /// Device work running now (kernels, copies, the driver's own fills); the arena is
    /// readable while it is above 0.
    open: Mutex<usize>,
}

/// The arena's reservation: 16 GiB of address space, committed only where used.
const ARENA_BYTES_RESERVED: usize = 16 << 30;
/// The arena's allocation granule (as `cuMemAlloc`'s alignment).
const GRANULE: usize = 256;

impl Arena {
    /// The process's arena, reserved at the first use; `None` where it cannot be.
    pub(super) fn get() -> Option<&'static Arena> {
        static ARENA: OnceLock<Option<Arena>> = OnceLock::new();
        ARENA.get_or_init(Arena::reserve).as_ref()
    }

    fn reserve() -> Option<Arena> {
        // SAFETY: a fresh anonymous private mapping with no access; the kernel picks the
        // address. MAP_NORESERVE: nothing is committed until pages are written.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ARENA_BYTES_RESERVED,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        let base = p as usize;
        ARENA_BASE.store(base, Ordering::SeqCst);
        ARENA_BYTES.store(ARENA_BYTES_RESERVED, Ordering::SeqCst);
        install_handler();
        Some(Arena {
            base,
            bytes: ARENA_BYTES_RESERVED,
            free: Mutex::new(BTreeMap::from([(base, ARENA_BYTES_RESERVED)])),
            open: Mutex::new(0),
        })
    }

    /// `bytes` bytes (rounded up to the granule), or `None` when the arena is full.
    pub(super) fn allocate(&self, bytes: usize) -> Option<u64> {
        let bytes = bytes.div_ceil(GRANULE).checked_mul(GRANULE)?;
        let mut free = self.free.lock();
        let (&start, &size) = free.iter().find(|&(_, &size)| size >= bytes)?;
        free.remove(&start);
        if size > bytes {
            free.insert(start + bytes, size - bytes);
        }
        Some(start as u64)
    }

    /// Gives `bytes` bytes at `start` back, joined with free neighbours.
    pub(super) fn release(&self, start: u64, bytes: usize) {
        let (mut start, mut bytes) = (start as usize, bytes.div_ceil(GRANULE) * GRANULE);
        let mut free = self.free.lock();
        if let Some((&next, &size)) = free.range(start + bytes..).next()
            && next == start + bytes
        {
            free.remove(&next);
            bytes += size;
        }
        if let Some((&previous, &size)) = free.range(..start).next_back()
            && previous + size == start
        {
            free.remove(&previous);
            start = previous;
            bytes += size;
        }
        free.insert(start, bytes);
    }

    /// Runs device work `work` with the arena readable.
    pub(super) fn with_device_access<T>(&self, work: impl FnOnce() -> T) -> T {
        self.protect(1);
        let result = work();
        self.protect(-1);
        result
    }

    fn protect(&self, change: isize) {
        let mut open = self.open.lock();
        let was = *open;
        *open = was.saturating_add_signed(change);
        let access = match (was, *open) {
            (0, 1..) => libc::PROT_READ | libc::PROT_WRITE,
            (1.., 0) => libc::PROT_NONE,
            _ => return,
        };
        // SAFETY: the arena's own reservation, whole; only its protection changes.
        unsafe { libc::mprotect(self.base as *mut libc::c_void, self.bytes, access) };
    }
}

/// The signal handler that was installed before the sanitizer's, for faults elsewhere.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Installs the handler of faults in the arena (once), keeping the previous one for others.
fn install_handler() {
    PREVIOUS.get_or_init(|| {
        // SAFETY: zeroed `sigaction`s are valid empty values; `sigaction` fills `previous` and
        // installs `on_fault` (an `extern "C"` function of the SA_SIGINFO signature) for
        // SIGSEGV, on the alternate stack where a thread has one (as std's handler runs).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fault as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGSEGV, &action, &mut previous);
            previous
        }
    });
}

/// A fault: in the arena, a host access of device memory, recorded and let through (the arena
/// is opened, so the access completes); elsewhere, the previous handler's business.
extern "C" fn on_fault(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `siginfo_t` to an SA_SIGINFO handler.
    let address = unsafe { (*info).si_addr() } as usize;
    let (base, bytes) = (
        ARENA_BASE.load(Ordering::SeqCst),
        ARENA_BYTES.load(Ordering::SeqCst),
    );
    if bytes != 0 && address.wrapping_sub(base) < bytes {
        let _ = HOST_READ.compare_exchange(0, address, Ordering::SeqCst, Ordering::SeqCst);
        // SAFETY: the arena's own reservation; opening it lets the faulting access complete
        // (mprotect is async-signal-safe).
        unsafe {
            libc::mprotect(
                base as *mut libc::c_void,
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        return;
    }
    let Some(previous) = PREVIOUS.get() else { return };
    match previous.sa_sigaction {
        libc::SIG_DFL | libc::SIG_IGN => {
            // SAFETY: restores the previous disposition; returning re-runs the faulting access,
            // which then takes it (the default: the process ends with the signal).
            unsafe { libc::sigaction(libc::SIGSEGV, previous, std::ptr::null_mut()) };
        }
        handler if previous.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the previous handler was installed with SA_SIGINFO, so it has this
            // signature; it gets the arguments the kernel gave this one.
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(handler) };
            handler(signal, info, context);
        }
        handler => {
            // SAFETY: installed without SA_SIGINFO: the one-argument signature.
            let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
            handler(signal);
        }
    }
}
