//! What a context shows of its history: placements, parents, DOT, timings and Chrome traces.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use hoplite_core::dot;

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
    /// [`DagError::Io`] when the file cannot be written.
    pub fn write_trace(&self, path: &Path) -> Result<()> {
        let mut out = String::from("{\"traceEvents\":[\n");
        let timings = self.timings();
        for (k, (label, device, stream, start, end)) in timings.iter().enumerate() {
            let sep = if k + 1 < timings.len() { "," } else { "" };
            let _ = writeln!(
                out,
                "{{\"name\":\"{}\",\"ph\":\"X\",\"pid\":{device},\"tid\":{stream},\"ts\":{:.3},\"dur\":{:.3}}}{sep}",
                dot::escape(label),
                start.as_secs_f64() * 1e6,
                end.saturating_sub(*start).as_secs_f64() * 1e6,
            );
        }
        out.push_str("],\"displayTimeUnit\":\"ms\"}\n");
        std::fs::write(path, out).map_err(|e| DagError::Io(format!("cannot write {}: {e}", path.display())))
    }
}
