//! What a context shows of its history: placements, parents, DOT, timings and Chrome traces.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use hoplite_core::dot;
use serde_json::{Value, json};

use super::Context;
use crate::device::Device;
use crate::model::VertexId;
use crate::{DagError, Result};

impl<D: Device> Context<D> {
    /// The device and stream of every vertex so far (the last
    /// [`HISTORY_LIMIT`](crate::HISTORY_LIMIT)), in launch order.
    pub fn placements(&self) -> Vec<(usize, usize)> {
        self.state
            .lock()
            .history
            .iter()
            .map(|r| (r.device, r.stream))
            .collect()
    }

    /// The parents of every vertex so far (the last [`HISTORY_LIMIT`](crate::HISTORY_LIMIT)), in
    /// launch order.
    pub fn parents(&self) -> Vec<Vec<VertexId>> {
        self.state
            .lock()
            .history
            .iter()
            .map(|r| r.edges.iter().map(|e| e.parent).collect())
            .collect()
    }

    /// The DAG in Graphviz DOT: vertices with label, device, stream and state; edges labelled
    /// with the view that caused them.
    pub fn to_dot(&self) -> String {
        let state = self.state.lock();
        let mut out = String::from("digraph dag {\n  node [shape=box];\n");
        for r in state.history.iter() {
            let id = r.id;
            let _ = writeln!(
                out,
                "  v{id} [label=\"{}\\n{} stream {} | {}\"];",
                dot::escape(&r.label),
                dot::escape(&self.devices[r.device].name()),
                r.stream,
                r.progress(&state.live).0
            );
            for e in &r.edges {
                let _ = writeln!(
                    out,
                    "  v{} -> v{id} [label=\"{}\"];",
                    e.parent,
                    dot::escape(&e.view)
                );
            }
        }
        out.push_str("}\n");
        out
    }

    /// When and where every vertex the context remembers ran, with its parents, in launch
    /// order (vertices still queued or running are left out); times since the context was
    /// made. With the `serde` feature the list serializes (JSON through `serde_json`).
    ///
    /// ```
    /// use hoplite_core::{RangePolicy, View};
    /// use hoplite_dag::device::HostDevice;
    /// use hoplite_dag::{Context, ContextOptions};
    /// use hoplite_serial::Serial;
    /// let ctx = Context::new(vec![HostDevice::new("cpu", vec![Serial::default()])?], ContextOptions::default())?;
    /// let (x, y) = (View::<f64, 1>::new("x", [4])?, View::<f64, 1>::new("y", [4])?);
    /// let range = RangePolicy::new(Serial::default(), 0..4);
    /// // "fill" waits until "copy" is launched: an edge is only inferred to an unfinished vertex.
    /// let copy_launched = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    /// let launched = copy_launched.clone();
    /// ctx.launch("fill", (range.clone(), (x.write(),)), move |(i, (x,))| {
    ///     while !launched.load(std::sync::atomic::Ordering::Acquire) {
    ///         std::thread::yield_now();
    ///     }
    ///     x.set(i, 1.0)
    /// })?;
    /// let copy = ctx.launch("copy", (range, (y.write(), x.read())), |(i, (y, x))| y.set(i, x.get(i)));
    /// copy_launched.store(true, std::sync::atomic::Ordering::Release);
    /// copy?;
    /// ctx.synchronize()?;
    /// let t = ctx.timings();
    /// assert_eq!((t[1].label.as_str(), t[1].parents.as_slice()), ("copy", &[(0, "x".to_string())][..]));
    /// assert!(t[1].start >= t[0].end);
    /// # Ok::<(), hoplite_dag::DagError>(())
    /// ```
    pub fn timings(&self) -> Vec<VertexTiming> {
        let state = self.state.lock();
        state
            .history
            .iter()
            .filter_map(|r| {
                let (_, start, end) = r.progress(&state.live);
                let (start, end) = (start?, end?);
                Some(VertexTiming {
                    id: r.id,
                    label: r.label.to_string(),
                    device: r.device,
                    stream: r.stream,
                    start: start.saturating_duration_since(self.epoch),
                    end: end.saturating_duration_since(self.epoch),
                    parents: r.edges.iter().map(|e| (e.parent, e.view.to_string())).collect(),
                })
            })
            .collect()
    }

    /// Writes a Chrome trace (`chrome://tracing`, Perfetto) of the vertices that ran: one
    /// process per device and one row per stream, named (`M` events); each vertex a complete
    /// event with its id and its parents in `args`; and each dependency a flow arrow from the
    /// parent's end to the child's start, named after the view that caused it.
    ///
    /// # Errors
    ///
    /// [`DagError::Io`] naming the file, with the I/O error as its source, when the file
    /// cannot be written.
    pub fn write_trace(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let devices: Vec<String> = self.devices.iter().map(|d| d.name()).collect();
        let mut text = chrome_trace(&self.timings(), &devices).to_string();
        text.push('\n');
        std::fs::write(path, text).map_err(|e| DagError::Io {
            path: path.to_path_buf(),
            source: e.into(),
        })
    }
}

/// When a vertex ran, where, and after which vertices ([`Context::timings`]); what the
/// Chrome trace shows of it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VertexTiming {
    /// Its id (launch order).
    pub id: VertexId,
    /// The launch's label.
    pub label: String,
    /// The device it ran on.
    pub device: usize,
    /// The stream it ran on (the context's numbering, over all devices).
    pub stream: usize,
    /// When its kernel started, since the context was made.
    pub start: Duration,
    /// When its kernel ended, since the context was made.
    pub end: Duration,
    /// Each parent and the view through which the vertex depends on it.
    pub parents: Vec<(VertexId, String)>,
}

/// The Chrome trace of `vertices` on the devices named `devices`: a process per device and a
/// thread per stream, named with `M` events; a complete (`"X"`) event per vertex, its id and
/// its parents in `args`; and a flow (`"s"` in the parent's slice just before its end, `"f"`
/// bound to the child's slice at its start) per dependency whose parent is in the trace too,
/// named after the view, so Perfetto draws the DAG's edges as arrows. Times in microseconds;
/// serde_json writes the strings, so every label is valid JSON whatever it holds.
fn chrome_trace(vertices: &[VertexTiming], devices: &[String]) -> Value {
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let mut events = Vec::new();
    let rows: BTreeSet<(usize, usize)> = vertices.iter().map(|v| (v.device, v.stream)).collect();
    let mut named = BTreeSet::new();
    for &(device, stream) in &rows {
        if named.insert(device) {
            let name = devices
                .get(device)
                .cloned()
                .unwrap_or_else(|| format!("device {device}"));
            events.push(json!({"ph": "M", "name": "process_name", "pid": device, "args": {"name": name}}));
        }
        events.push(json!({
            "ph": "M", "name": "thread_name", "pid": device, "tid": stream,
            "args": {"name": format!("stream {stream}")},
        }));
    }
    let by_id: HashMap<VertexId, &VertexTiming> = vertices.iter().map(|v| (v.id, v)).collect();
    let mut flow = 0u64;
    for v in vertices {
        let parents: Vec<VertexId> = v.parents.iter().map(|(p, _)| *p).collect();
        events.push(json!({
            "name": v.label,
            "cat": "vertex",
            "ph": "X",
            "pid": v.device,
            "tid": v.stream,
            "ts": micros(v.start),
            "dur": micros(v.end.saturating_sub(v.start)),
            "args": {"vertex": v.id, "parents": parents},
        }));
        for (parent, view) in &v.parents {
            let Some(p) = by_id.get(parent) else { continue };
            // Inside the parent's slice, so that the arrow leaves from it.
            let leaves = micros(p.end) - micros(p.end.saturating_sub(p.start)).min(0.001);
            events.push(json!({
                "name": view, "cat": "dependency", "ph": "s", "id": flow,
                "pid": p.device, "tid": p.stream, "ts": leaves,
            }));
            events.push(json!({
                "name": view, "cat": "dependency", "ph": "f", "bp": "e", "id": flow,
                "pid": v.device, "tid": v.stream, "ts": micros(v.start),
            }));
            flow += 1;
        }
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ms" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any character, control characters and JSON's specials drawn often.
    fn label() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            3 => any::<char>(),
            2 => (0u32..0x20).prop_map(|n| char::from_u32(n).expect("a C0 control")),
            1 => (0x7fu32..0xa0).prop_map(|n| char::from_u32(n).expect("DEL or a C1 control")),
            2 => prop::sample::select(vec!['\\', '"', '/', '\u{2028}', '\u{2029}', '\u{feff}']),
        ];
        prop::collection::vec(c, 0..32).prop_map(String::from_iter)
    }

    /// Vertex `k` labelled `labels[k]` on device `k % 2`, stream `k`, 1.5 µs from `k` µs,
    /// after vertex `k - 1` through a view named after its label, and vertex 0 after one the
    /// trace does not have.
    fn chain(labels: &[String]) -> Vec<VertexTiming> {
        labels
            .iter()
            .enumerate()
            .map(|(k, l)| {
                let start = Duration::from_nanos(1_000 * k as u64 + 7);
                let parent = if k == 0 { 1_000 } else { k - 1 };
                VertexTiming {
                    id: k,
                    label: l.clone(),
                    device: k % 2,
                    stream: k,
                    start,
                    end: start + Duration::from_nanos(1_500),
                    parents: vec![(parent, format!("view {l}"))],
                }
            })
            .collect()
    }

    proptest! {
        #[test]
        fn a_trace_parses_back_with_its_labels_rows_and_edges(
            labels in prop::collection::vec(label(), 0..6),
            device in label(),
        ) {
            let vertices = chain(&labels);
            let text = chrome_trace(&vertices, std::slice::from_ref(&device)).to_string();
            let parsed: Value = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
            let events = parsed["traceEvents"].as_array().expect("an event list");
            let of = |ph: &str| events.iter().filter(|e| e["ph"] == ph).collect::<Vec<_>>();
            let slices = of("X");
            let names: Vec<&str> = slices.iter().map(|e| e["name"].as_str().expect("a name")).collect();
            prop_assert_eq!(names, labels.iter().map(String::as_str).collect::<Vec<_>>());
            for (k, e) in slices.iter().enumerate() {
                prop_assert_eq!(e["tid"].as_u64(), Some(k as u64));
                prop_assert_eq!(e["args"]["vertex"].as_u64(), Some(k as u64));
                prop_assert!((e["dur"].as_f64().expect("a duration") - 1.5).abs() < 1e-9);
            }
            // A process name per device (the second one unnamed by the caller), a thread name
            // per stream.
            let metadata = of("M");
            let process = |pid: u64| metadata.iter().find(|e| e["name"] == "process_name" && e["pid"].as_u64() == Some(pid)).map(|e| e["args"]["name"].as_str().expect("a name").to_owned());
            if !labels.is_empty() {
                prop_assert_eq!(process(0), Some(device));
            }
            if labels.len() > 1 {
                prop_assert_eq!(process(1), Some("device 1".to_owned()));
            }
            prop_assert_eq!(metadata.iter().filter(|e| e["name"] == "thread_name").count(), labels.len());
            // One flow per edge inside the trace: vertex k - 1's end to vertex k's start.
            let (starts, finishes) = (of("s"), of("f"));
            prop_assert_eq!(starts.len(), labels.len().saturating_sub(1));
            prop_assert_eq!(finishes.len(), starts.len());
            for (s, f) in starts.iter().zip(&finishes) {
                prop_assert_eq!(&s["id"], &f["id"]);
                prop_assert_eq!(&f["bp"], "e");
                let child = f["tid"].as_u64().expect("a stream") as usize;
                let parent = &slices[child - 1];
                let (ts, from, dur) = (s["ts"].as_f64().expect("a time"), parent["ts"].as_f64().expect("a time"), parent["dur"].as_f64().expect("a duration"));
                prop_assert!(ts > from && ts < from + dur, "the arrow leaves from inside its parent's slice");
                prop_assert_eq!(&f["ts"], &slices[child]["ts"]);
                let view = format!("view {}", labels[child]);
                prop_assert_eq!(f["name"].as_str(), Some(view.as_str()));
            }
        }
    }
}
