//! The built-in trace connector: every callback of the Kokkos Tools path, recorded as a Chrome
//! Trace Event Format file that ui.perfetto.dev and `chrome://tracing` open like Nsight's
//! timeline. It runs in place of a connector library, on the same callbacks, so every launch
//! style reports: eager launches, graph nodes, DAG vertices (each on its stream's instance),
//! CUDA launches, fences, deep copies, allocations, regions, sections and events.
//!
//! Rows: one per execution-space instance (its Kokkos device id: `Serial device 0 instance
//! 0`, `Cuda device 0 instance 3`), where its kernels and fences appear as complete (`X`) events with
//! their kernel ids, and one per host thread, where regions and sections nest (`B`/`E`) and
//! deep copies appear; allocations are instant events with the space, the label and the bytes,
//! and a counter of the live bytes per memory space. Names come as metadata (`M`) events.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::time::Instant;

use parking_lot::Mutex;

use super::DeviceId;
use super::ffi::{EntryPoints, SpaceHandle};
use crate::error::{Error, Result};

/// A kernel or fence that began and has not ended.
struct Open {
    name: String,
    category: &'static str,
    device: u32,
    start: f64,
}

/// What the connector has recorded.
struct Recorder {
    start: Instant,
    /// Where `kokkosp_finalize_library` writes the trace, if anywhere.
    path: Option<PathBuf>,
    /// The events, each one JSON object.
    events: Vec<String>,
    open: HashMap<u64, Open>,
    next_id: u64,
    /// The row of each host thread that reported something, in order of first report.
    threads: HashMap<std::thread::ThreadId, u64>,
    /// The rows of instances seen, by device id.
    devices: BTreeSet<u32>,
    /// Deep copies begun and not ended, per host thread: name, start and bytes.
    copies: HashMap<std::thread::ThreadId, Vec<(String, f64, u64)>>,
    /// Live bytes per memory space.
    live: HashMap<String, i64>,
    /// The names of the profile sections, by id.
    sections: Vec<String>,
    /// Each graph node run recorded, by graph, submit and node: its row, start and end, for
    /// the flow arrows of the edges to its successors.
    graph_nodes: HashMap<(u64, u64, usize), (u64, f64, f64)>,
    next_flow: u64,
}

static RECORDER: Mutex<Option<Recorder>> = Mutex::new(None);

/// Host threads' rows start here, above any instance's device id.
const HOST_ROWS: u64 = 1 << 33;

impl Recorder {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1e6
    }

    fn thread_row(&mut self) -> u64 {
        let next = HOST_ROWS + self.threads.len() as u64;
        *self.threads.entry(std::thread::current().id()).or_insert(next)
    }

    /// The trace: the names of the process and the rows, then the events.
    fn document(&self) -> String {
        let mut events =
            vec![r#"{"ph":"M","name":"process_name","pid":1,"args":{"name":"hoplite"}}"#.to_owned()];
        for &device in &self.devices {
            let id = DeviceId(device);
            let name = format!(
                "{:?} device {} instance {}",
                id.device_type(),
                id.device(),
                id.instance()
            );
            events.push(format!(
                r#"{{"ph":"M","name":"thread_name","pid":1,"tid":{device},"args":{{"name":{}}}}}"#,
                json_string(&name)
            ));
        }
        for row in self.threads.values() {
            events.push(format!(
                r#"{{"ph":"M","name":"thread_name","pid":1,"tid":{row},"args":{{"name":"host thread {}"}}}}"#,
                row - HOST_ROWS
            ));
        }
        events.extend(self.events.iter().cloned());
        format!(
            r#"{{"traceEvents":[{}],"displayTimeUnit":"ns"}}"#,
            events.join(",\n")
        )
    }
}

/// `text` as a JSON string: quoted, with `"`, `\` and the control characters escaped
/// (RFC 8259), so that any label makes valid JSON.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Runs `f` on the recorder, if one is recording.
fn with(f: impl FnOnce(&mut Recorder)) {
    if let Some(r) = RECORDER.lock().as_mut() {
        f(r);
    }
}

/// A C string of a callback, or `"?"` for a null pointer.
///
/// # Safety
///
/// `name` is null or a NUL-terminated string that lives for the call.
unsafe fn text(name: *const c_char) -> String {
    if name.is_null() {
        return "?".to_owned();
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
}

/// The name a space handle holds.
fn space_name(space: &SpaceHandle) -> String {
    let bytes: Vec<u8> = space
        .name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Starts recording, replacing what was recorded; the trace goes to `path` at finalization
/// when one is given.
pub(crate) fn start(path: Option<PathBuf>) {
    *RECORDER.lock() = Some(Recorder {
        start: Instant::now(),
        path,
        events: Vec::new(),
        open: HashMap::new(),
        next_id: 1,
        threads: HashMap::new(),
        devices: BTreeSet::new(),
        copies: HashMap::new(),
        live: HashMap::new(),
        sections: Vec::new(),
        graph_nodes: HashMap::new(),
        next_flow: 1,
    });
}

/// Whether the built-in connector is recording.
pub(crate) fn recording() -> bool {
    RECORDER.lock().is_some()
}

/// Records one run of a graph node: a complete event on the running thread's row, and a flow
/// arrow from the end of each predecessor's run in the same submit to its start.
pub(crate) fn graph_node(run: &super::GraphNodeRun<'_>) {
    with(|r| {
        let at = |t: Instant| t.saturating_duration_since(r.start).as_secs_f64() * 1e6;
        let (start, end) = (at(run.start), at(run.end).max(at(run.start)));
        let row = r.thread_row();
        r.events.push(format!(
            r#"{{"ph":"X","name":{},"cat":"graph_node","pid":1,"tid":{row},"ts":{start:.3},"dur":{:.3},"args":{{"graph":{},"submit":{},"node":{}}}}}"#,
            json_string(run.label),
            end - start,
            run.graph,
            run.submit,
            run.node
        ));
        for &pred in run.predecessors {
            let Some(&(pred_row, pred_start, pred_end)) = r.graph_nodes.get(&(run.graph, run.submit, pred))
            else {
                continue;
            };
            let flow = r.next_flow;
            r.next_flow += 1;
            // The arrow leaves inside the predecessor's slice, just before its end, and binds
            // to the enclosing slice at the successor's start.
            let from = (pred_end - 0.001).max(pred_start);
            r.events.push(format!(
                r#"{{"ph":"s","name":"graph edge","cat":"graph_edge","id":{flow},"pid":1,"tid":{pred_row},"ts":{from:.3}}}"#
            ));
            r.events.push(format!(
                r#"{{"ph":"f","bp":"e","name":"graph edge","cat":"graph_edge","id":{flow},"pid":1,"tid":{row},"ts":{start:.3}}}"#
            ));
        }
        r.graph_nodes
            .insert((run.graph, run.submit, run.node), (row, start, end));
    });
}

/// Writes what was recorded so far to `path` as Trace Event Format JSON.
pub(crate) fn write(path: &Path) -> Result<()> {
    let text = match RECORDER.lock().as_ref() {
        Some(r) => r.document(),
        None => r#"{"traceEvents":[]}"#.to_owned(),
    };
    std::fs::write(path, text + "\n").map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e.into(),
    })
}

fn begin(category: &'static str, name: *const c_char, device: u32, id: *mut u64) {
    // SAFETY: the hooks pass a NUL-terminated name that lives for the call.
    let name = unsafe { text(name) };
    with(|r| {
        let k = r.next_id;
        r.next_id += 1;
        let start = r.now();
        r.devices.insert(device);
        r.open.insert(
            k,
            Open {
                name,
                category,
                device,
                start,
            },
        );
        if !id.is_null() {
            // SAFETY: the hooks pass a pointer to a live `u64` for the id.
            unsafe { id.write(k) };
        }
    });
}

fn end(id: u64) {
    with(|r| {
        if let Some(open) = r.open.remove(&id) {
            let now = r.now();
            r.events.push(format!(
                r#"{{"ph":"X","name":{},"cat":"{}","pid":1,"tid":{},"ts":{:.3},"dur":{:.3},"args":{{"kernel_id":{id}}}}}"#,
                json_string(&open.name),
                open.category,
                open.device,
                open.start,
                now - open.start
            ));
        }
    });
}

unsafe extern "C" fn begin_for(name: *const c_char, device: u32, id: *mut u64) {
    begin("parallel_for", name, device, id);
}
unsafe extern "C" fn begin_reduce(name: *const c_char, device: u32, id: *mut u64) {
    begin("parallel_reduce", name, device, id);
}
unsafe extern "C" fn begin_scan(name: *const c_char, device: u32, id: *mut u64) {
    begin("parallel_scan", name, device, id);
}
unsafe extern "C" fn begin_fence(name: *const c_char, device: u32, id: *mut u64) {
    begin("fence", name, device, id);
}
unsafe extern "C" fn end_any(id: u64) {
    end(id);
}

unsafe extern "C" fn push_region(name: *const c_char) {
    // SAFETY: the hooks pass a NUL-terminated name that lives for the call.
    let name = unsafe { text(name) };
    with(|r| {
        let (tid, ts) = (r.thread_row(), r.now());
        r.events.push(format!(
            r#"{{"ph":"B","name":{},"cat":"region","pid":1,"tid":{tid},"ts":{ts:.3}}}"#,
            json_string(&name)
        ));
    });
}

unsafe extern "C" fn pop_region() {
    with(|r| {
        let (tid, ts) = (r.thread_row(), r.now());
        r.events
            .push(format!(r#"{{"ph":"E","pid":1,"tid":{tid},"ts":{ts:.3}}}"#));
    });
}

fn data(space: SpaceHandle, label: *const c_char, bytes: u64, sign: i64, what: &'static str) {
    // SAFETY: the hooks pass a NUL-terminated label that lives for the call.
    let label = unsafe { text(label) };
    let space = space_name(&space);
    with(|r| {
        let (tid, ts) = (r.thread_row(), r.now());
        let live = r.live.entry(space.clone()).or_insert(0);
        *live += sign * bytes as i64;
        let live = *live;
        r.events.push(format!(
            r#"{{"ph":"i","s":"t","name":{},"cat":"memory","pid":1,"tid":{tid},"ts":{ts:.3},"args":{{"space":{},"label":{},"bytes":{bytes}}}}}"#,
            json_string(&format!("{what} {label}")),
            json_string(&space),
            json_string(&label)
        ));
        r.events.push(format!(
            r#"{{"ph":"C","name":{},"pid":1,"ts":{ts:.3},"args":{{"live":{live}}}}}"#,
            json_string(&format!("{space} bytes"))
        ));
    });
}

unsafe extern "C" fn allocate(space: SpaceHandle, label: *const c_char, _ptr: *const c_void, bytes: u64) {
    data(space, label, bytes, 1, "allocate");
}

unsafe extern "C" fn deallocate(space: SpaceHandle, label: *const c_char, _ptr: *const c_void, bytes: u64) {
    data(space, label, bytes, -1, "deallocate");
}

unsafe extern "C" fn begin_deep_copy(
    dst_space: SpaceHandle,
    dst: *const c_char,
    _dst_ptr: *const c_void,
    src_space: SpaceHandle,
    src: *const c_char,
    _src_ptr: *const c_void,
    bytes: u64,
) {
    // SAFETY: the hooks pass NUL-terminated labels that live for the call.
    let (dst, src) = unsafe { (text(dst), text(src)) };
    let name = format!(
        "deep_copy {dst} ({}) <- {src} ({})",
        space_name(&dst_space),
        space_name(&src_space)
    );
    with(|r| {
        let ts = r.now();
        r.copies
            .entry(std::thread::current().id())
            .or_default()
            .push((name, ts, bytes));
    });
}

unsafe extern "C" fn end_deep_copy() {
    with(|r| {
        let tid = r.thread_row();
        let now = r.now();
        if let Some((name, start, bytes)) = r.copies.get_mut(&std::thread::current().id()).and_then(Vec::pop)
        {
            r.events.push(format!(
                r#"{{"ph":"X","name":{},"cat":"deep_copy","pid":1,"tid":{tid},"ts":{start:.3},"dur":{:.3},"args":{{"bytes":{bytes}}}}}"#,
                json_string(&name),
                now - start
            ));
        }
    });
}

unsafe extern "C" fn create_section(name: *const c_char, id: *mut u32) {
    // SAFETY: the hooks pass a NUL-terminated name that lives for the call.
    let name = unsafe { text(name) };
    with(|r| {
        let k = u32::try_from(r.sections.len()).unwrap_or(u32::MAX);
        r.sections.push(name);
        if !id.is_null() {
            // SAFETY: the hooks pass a pointer to a live `u32` for the id.
            unsafe { id.write(k) };
        }
    });
}

fn section(id: u32, phase: &'static str) {
    with(|r| {
        let name = r.sections.get(id as usize).cloned().unwrap_or_default();
        let (tid, ts) = (r.thread_row(), r.now());
        r.events.push(format!(
            r#"{{"ph":"{phase}","name":{},"cat":"section","pid":1,"tid":{tid},"ts":{ts:.3}}}"#,
            json_string(&name)
        ));
    });
}

unsafe extern "C" fn start_section(id: u32) {
    section(id, "B");
}

unsafe extern "C" fn stop_section(id: u32) {
    section(id, "E");
}

unsafe extern "C" fn profile_event(name: *const c_char) {
    // SAFETY: the hooks pass a NUL-terminated name that lives for the call.
    let name = unsafe { text(name) };
    with(|r| {
        let (tid, ts) = (r.thread_row(), r.now());
        r.events.push(format!(
            r#"{{"ph":"i","s":"t","name":{},"cat":"event","pid":1,"tid":{tid},"ts":{ts:.3}}}"#,
            json_string(&name)
        ));
    });
}

unsafe extern "C" fn finalize() {
    let path = RECORDER.lock().as_ref().and_then(|r| r.path.clone());
    if let Some(path) = path
        && let Err(e) = write(&path)
    {
        eprintln!("hoplite: the trace was not written: {e}");
    }
}

/// The connector's entry points (those it does not define stay `None`).
pub(crate) fn entry_points() -> EntryPoints {
    EntryPoints {
        finalize: Some(finalize),
        begin_parallel_for: Some(begin_for),
        begin_parallel_reduce: Some(begin_reduce),
        begin_parallel_scan: Some(begin_scan),
        end_parallel_for: Some(end_any),
        end_parallel_reduce: Some(end_any),
        end_parallel_scan: Some(end_any),
        begin_fence: Some(begin_fence),
        end_fence: Some(end_any),
        push_region: Some(push_region),
        pop_region: Some(pop_region),
        allocate_data: Some(allocate),
        deallocate_data: Some(deallocate),
        begin_deep_copy: Some(begin_deep_copy),
        end_deep_copy: Some(end_deep_copy),
        create_section: Some(create_section),
        start_section: Some(start_section),
        stop_section: Some(stop_section),
        profile_event: Some(profile_event),
    }
}

#[cfg(test)]
mod tests {
    use super::json_string;

    #[test]
    fn labels_become_json_strings_whatever_they_hold() {
        assert_eq!(json_string("plain"), r#""plain""#);
        assert_eq!(json_string("a \"quoted\" \\ label"), r#""a \"quoted\" \\ label""#);
        assert_eq!(json_string("tab\tnul\u{0}"), r#""tab\u0009nul\u0000""#);
        assert_eq!(json_string("ünï\u{2028}"), "\"ünï\u{2028}\"");
    }
}
