//! What a context shows of its history: placements, parents, DOT, timings and Chrome traces.

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

    /// Start and end of every vertex that ran, since the context was made: `(label, device,
    /// stream, start, end)` in launch order.
    pub fn timings(&self) -> Vec<(String, usize, usize, Duration, Duration)> {
        let state = self.state.lock();
        state
            .history
            .iter()
            .filter_map(|r| {
                let (_, start, end) = r.progress(&state.live);
                let (start, end) = (start?, end?);
                Some((
                    r.label.to_string(),
                    r.device,
                    r.stream,
                    start.saturating_duration_since(self.epoch),
                    end.saturating_duration_since(self.epoch),
                ))
            })
            .collect()
    }

    /// Writes a Chrome trace (`chrome://tracing`, Perfetto) of the vertices that ran: one
    /// process per device, one row per stream.
    ///
    /// # Errors
    ///
    /// [`DagError::Io`] naming the file, with the I/O error as its source, when the file
    /// cannot be written.
    pub fn write_trace(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let mut text = chrome_trace(&self.timings()).to_string();
        text.push('\n');
        std::fs::write(path, text).map_err(|e| DagError::Io {
            path: path.to_path_buf(),
            source: e.into(),
        })
    }
}

/// The Chrome trace of `timings` (as [`Context::timings`] gives them): one complete (`"X"`)
/// event per vertex, its device as the process and its stream as the thread, times in
/// microseconds. serde_json writes the strings, so every label is valid JSON whatever it holds.
fn chrome_trace(timings: &[(String, usize, usize, Duration, Duration)]) -> Value {
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let events: Vec<Value> = timings
        .iter()
        .map(|(label, device, stream, start, end)| {
            json!({
                "name": label,
                "ph": "X",
                "pid": device,
                "tid": stream,
                "ts": micros(*start),
                "dur": micros(end.saturating_sub(*start)),
            })
        })
        .collect();
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

    proptest! {
        #[test]
        fn a_trace_parses_back_with_its_labels(labels in prop::collection::vec(label(), 0..6)) {
            let timings: Vec<_> = labels
                .iter()
                .enumerate()
                .map(|(k, l)| {
                    let start = Duration::from_nanos(1_000 * k as u64 + 7);
                    (l.clone(), k % 2, k, start, start + Duration::from_nanos(1_500))
                })
                .collect();
            let text = chrome_trace(&timings).to_string();
            let parsed: Value = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
            let events = parsed["traceEvents"].as_array().expect("an event list");
            let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().expect("a name")).collect();
            prop_assert_eq!(names, labels.iter().map(String::as_str).collect::<Vec<_>>());
            for (k, e) in events.iter().enumerate() {
                prop_assert_eq!(&e["ph"], "X");
                prop_assert_eq!(e["tid"].as_u64(), Some(k as u64));
                prop_assert!((e["dur"].as_f64().expect("a duration") - 1.5).abs() < 1e-9);
            }
        }
    }
}
