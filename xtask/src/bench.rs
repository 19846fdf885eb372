//! `cargo xtask bench`: runs the criterion benchmarks and pairs each hoplite measurement with
//! the baselines of the same run.
//!
//! Benchmark ids follow `<group>/<backend>-hoplite/<size>` and `<group>/<backend>-<baseline>/<size>`:
//! every `<backend>-hoplite` result is compared with each other function of the same group,
//! backend prefix and size.
//!
//! The set includes the contention benchmark (`crates/hoplite/benches/contention.rs`): it starts
//! one busy-loop thread per core itself, for a few seconds per group, and compiles its OpenMP
//! baseline with the system's C compiler when one with `-fopenmp` is present (it prints why it
//! skips the baseline otherwise). Its busy loops never run under `cargo xtask test`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::{Step, split_passthrough};

/// Short runs for `--quick`: the whole set finishes in a few minutes on 2 cores.
const QUICK: &[&str] = &[
    "--warm-up-time",
    "0.5",
    "--measurement-time",
    "1.5",
    "--sample-size",
    "10",
];

struct Measurement {
    group: String,
    function: String,
    size: String,
    median_ns: f64,
    bytes: Option<f64>,
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let (own, filter) = split_passthrough(args);
    let mut quick = false;
    for arg in own {
        match arg.as_str() {
            "--quick" => quick = true,
            other => return Err(format!("unknown option `{other}` for `bench`")),
        }
    }
    // The workspace's benchmarks include hoplite-numa's, which link the system's hwloc.
    crate::install_system_packages("hoplite-numa", crate::NUMA_SYSTEM_PACKAGES)?;
    let started = SystemTime::now();
    let mut step = Step::cargo("bench", &["bench", "--workspace", "--bench", "*", "--"]);
    if quick {
        for a in QUICK {
            step = step.arg(*a);
        }
    }
    for f in filter {
        step = step.arg(f.clone());
    }
    step.run()?;

    let root = target_dir().join("criterion");
    let mut found = Vec::new();
    collect(&root, started, &mut found)?;
    let summary = pair(&found);
    let out_dir = target_dir().join("hoplite-bench");
    fs::create_dir_all(&out_dir).map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let path = out_dir.join("summary.json");
    let text = serde_json::to_string_pretty(&Value::Array(summary.clone())).map_err(|e| e.to_string())?;
    fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    print_table(&summary);
    println!("xtask: wrote {} ({} comparisons)", path.display(), summary.len());
    Ok(())
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from)
}

/// Every `new/benchmark.json` under `dir` written since `since`, with its median.
fn collect(dir: &Path, since: SystemTime, out: &mut Vec<Measurement>) -> Result<(), String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, since, out)?;
            continue;
        }
        let is_new = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "new");
        if !is_new || path.file_name().is_none_or(|n| n != "benchmark.json") {
            continue;
        }
        let fresh = fs::metadata(&path)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since);
        if !fresh {
            continue;
        }
        let meta = read_json(&path)?;
        let estimates = read_json(&path.with_file_name("estimates.json"))?;
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        out.push(Measurement {
            group: text(&meta, "group_id"),
            function: text(&meta, "function_id"),
            size: text(&meta, "value_str"),
            median_ns: estimates
                .pointer("/median/point_estimate")
                .and_then(Value::as_f64)
                .ok_or_else(|| format!("{}: no median", path.display()))?,
            bytes: meta.pointer("/throughput/Bytes").and_then(Value::as_f64),
        });
    }
    Ok(())
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Pairs each `<backend>-hoplite` with the other functions of its group, backend and size; in
/// a group without one, each function with `<backend>-eager-closure` (launch styles).
fn pair(found: &[Measurement]) -> Vec<Value> {
    let mut by_key: BTreeMap<(String, String, String), Vec<&Measurement>> = BTreeMap::new();
    for m in found {
        let backend = m.function.split('-').next().unwrap_or_default().to_owned();
        by_key
            .entry((m.group.clone(), backend, m.size.clone()))
            .or_default()
            .push(m);
    }
    let mut out = Vec::new();
    for ((group, backend, size), ms) in &by_key {
        let style = |m: &Measurement| {
            m.function
                .strip_prefix(&format!("{backend}-"))
                .unwrap_or(&m.function)
                .to_owned()
        };
        let entry = |ours: &Measurement, base: &Measurement| {
            let mut entry = json!({
                "bench": format!("{group} ({backend})"),
                "size": size.parse::<u64>().map_or_else(|_| json!(size), |n| json!(n)),
                "hoplite_ns": ours.median_ns,
                "baseline": style(base),
                "baseline_ns": base.median_ns,
                "ratio": ours.median_ns / base.median_ns,
            });
            if let Some(bytes) = ours.bytes {
                entry["hoplite_gbps"] = json!(bytes / ours.median_ns);
                entry["baseline_gbps"] = json!(bytes / base.median_ns);
            }
            entry
        };
        if let Some(ours) = ms.iter().find(|m| m.function == format!("{backend}-hoplite")) {
            for base in ms.iter().filter(|m| m.function != ours.function) {
                out.push(entry(ours, base));
            }
        } else if let Some(base) = ms
            .iter()
            .find(|m| m.function == format!("{backend}-{STYLE_BASELINE}"))
        {
            // A launch-style group: every style against the eager closure.
            for ours in ms.iter().filter(|m| m.function != base.function) {
                let mut row = entry(ours, base);
                row["function"] = json!(style(ours));
                out.push(row);
            }
        }
    }
    out
}

/// The baseline of the launch-style groups (`kernel-styles <kernel>`): each other function of
/// such a group is a launch style of the same kernel, compared with the eager closure.
const STYLE_BASELINE: &str = "eager-closure";

fn print_table(summary: &[Value]) {
    println!("\n| bench | size | hoplite | baseline | baseline time | ratio | hoplite GB/s |");
    println!("|---|---:|---:|---|---:|---:|---:|");
    for e in summary {
        let ns = |k: &str| e.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
        let bench = match e.get("function").and_then(Value::as_str) {
            Some(style) => format!("{} {style}", e["bench"].as_str().unwrap_or_default()),
            None => e["bench"].as_str().unwrap_or_default().to_owned(),
        };
        let gbps = e
            .get("hoplite_gbps")
            .and_then(Value::as_f64)
            .map_or_else(String::new, |g| format!("{g:.1}"));
        println!(
            "| {} | {} | {} | {} | {} | {:.3} | {} |",
            bench,
            e["size"],
            human(ns("hoplite_ns")),
            e["baseline"].as_str().unwrap_or_default(),
            human(ns("baseline_ns")),
            ns("ratio"),
            gbps
        );
    }
}

fn human(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}
