//! The DOT exports of a DAG context and of an explicit graph, with labels of any Unicode
//! (control characters, quotes, backslashes, braces), are accepted by Graphviz's own `dot`
//! (installed by `cargo xtask test`; without it the test says it is skipped).

use std::io::Write;
use std::process::{Command, Stdio};

use hoplite_core::RangePolicy;
use hoplite_dag::device::HostDevice;
use hoplite_dag::{Context, ContextOptions};
use hoplite_serial::Serial;
use proptest::prelude::*;

/// Whether `dot` parses `source` (it renders to its canonical DOT and exits 0).
fn dot_accepts(source: &str) -> Result<bool, String> {
    let mut child = match Command::new("dot")
        .arg("-Tcanon")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return Err(format!("Graphviz's `dot` is not installed ({e})")),
    };
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(source.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        eprintln!("dot refused:\n{source}\n{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(out.status.success())
}

fn dot_installed() -> bool {
    Command::new("dot")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn exports_with_any_labels_are_accepted_by_graphviz(labels in prop::collection::vec(any::<String>(), 1..4)) {
        if !dot_installed() {
            println!("skipped: Graphviz's `dot` is not installed (cargo xtask test installs it)");
            return Ok(());
        }
        let device = HostDevice::new("host", vec![Serial::default()]).expect("device");
        let ctx = Context::new(vec![device], ContextOptions::default()).expect("context");
        for label in &labels {
            ctx.launch(label, RangePolicy::new(Serial::default(), 0..1), |_i| {}).expect("submitted");
        }
        ctx.synchronize().expect("ran");
        prop_assert_eq!(dot_accepts(&ctx.to_dot()), Ok(true));

        let graph = hoplite_graph::create_graph(&Serial::default(), |g| {
            let mut node = g.root().then_host(&labels[0], || {}).erase();
            for label in &labels[1..] {
                node = node.then_host(label, || {}).erase();
            }
        })
        .expect("a graph");
        prop_assert_eq!(dot_accepts(&graph.to_dot()), Ok(true));
    }
}
