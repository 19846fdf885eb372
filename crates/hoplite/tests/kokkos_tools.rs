//! The Kokkos Tools interface end to end: a connector written in C (`connector/recorder.c`,
//! built with the system C compiler) is loaded through `KOKKOS_TOOLS_LIBS` and records every
//! callback; each test runs a program in a child process (the connector's state is
//! process-global) and checks the sequence and the payloads.

use hoplite::dag::device::HostDevice;
use hoplite::dag::{Context, ContextOptions};
use hoplite::graph::create_graph;
use hoplite::prelude::*;
use hoplite::profiling::{self, ScopedRegion, Section, mark_event};
use hoplite::{RayonSpace, Serial};

mod connector;

use connector::{Run, connector, run_child};

/// The child side: runs the scenario `HOPLITE_TOOLS_CHILD` names (and nothing in an ordinary
/// test run).
#[test]
fn child() {
    let Ok(scenario) = std::env::var("HOPLITE_TOOLS_CHILD") else {
        return;
    };
    let outcome = match scenario.as_str() {
        "program" => program(),
        "explicit" => explicit(),
        "bad_path" => bad_path(),
        "lazy_bad_path" => lazy_bad_path(),
        "kernels_only" => kernels_only(),
        "no_tool" => no_tool(),
        "concurrent" => concurrent(),
        other => panic!("no scenario `{other}`"),
    };
    if let Err(e) = outcome {
        panic!("scenario `{scenario}`: {e}");
    }
}

type Outcome = Result<(), Box<dyn std::error::Error>>;

/// One of each: region, allocations, deep copy, for, reduce, scan, fence, section, event, an
/// explicit graph submit and a DAG vertex. The connector is loaded at the first event (the
/// region) and finalized at exit.
fn program() -> Outcome {
    let serial = Serial::default();
    let range = RangePolicy::new(serial.clone(), 0..4);
    profiling::push_region("program");
    let x = View::<f64, 1>::from_slice("x", [4], &[1.0, 2.0, 3.0, 4.0])?;
    let y = View::<f64, 1>::new("y", [4])?;
    deep_copy(&y, &x)?;
    parallel_for("scale", (range.clone(), (y.write(),)), |(i, (y,))| {
        y.set(i, 2.0 * y.get(i))
    })?;
    let sum = parallel_reduce(
        "sum",
        (range.clone(), (y.read(),)),
        |(i, (y,)), acc| *acc += y.get(i),
        Sum::<f64>::new(),
    )?;
    assert_eq!(sum, 20.0);
    let total: f64 = parallel_scan("prefix", (range.clone(), (x.read(),)), |(i, (x,)), partial, _| {
        *partial += x.get(i)
    })?;
    assert_eq!(total, 10.0);
    serial.fence()?;
    let section = Section::new("section");
    section.start();
    section.stop();
    drop(section);
    mark_event("event");
    let mut graph = create_graph(&serial, |g| {
        g.parallel_for("graph node", (range.clone(), (x.write(),)), |(i, (x,))| {
            x.set(i, 1.0)
        });
    })?;
    graph.submit()?;
    let ctx = Context::new(
        vec![HostDevice::new("cpu", vec![serial.clone()])?],
        ContextOptions::default(),
    )?;
    ctx.launch("dag vertex", (range.clone(), (y.write(),)), |(i, (y,))| {
        y.set(i, 0.0)
    })?;
    ctx.synchronize()?;
    drop(ctx);
    drop(graph);
    profiling::pop_region();
    drop((x, y));
    Ok(())
}

/// `hoplite::initialize`, arguments, metadata, a fence the connector asks for, a rayon launch,
/// an unlabelled launch, `hoplite::finalize`, then nothing more reaches the connector.
fn explicit() -> Outcome {
    hoplite::initialize()?;
    assert!(profiling::tools_loaded());
    profiling::declare_metadata("grid", "4 x 4");
    {
        let _region = ScopedRegion::new("scoped");
        mark_event("tool fence");
        let pool = RayonSpace::with_threads(2)?;
        parallel_for("on rayon", RangePolicy::new(pool.clone(), 0..4), |_i| {})?;
        parallel_for("", RangePolicy::new(Serial::default(), 0..4), |_i| {})?;
        let panicked = parallel_for("boom", RangePolicy::new(Serial::default(), 0..1), |_i| {
            panic!("boom")
        });
        assert!(matches!(panicked, Err(Error::KernelPanicked { .. })));
        let a = View::<i32, 1>::new("a", [4])?;
        let b = View::<i32, 1>::new("b", [4])?;
        deep_copy_fill(&a, 7)?;
        deep_copy_on(&Serial::default(), &b, &a)?;
        assert_eq!(b.to_vec()?, [7; 4]);
    }
    hoplite::finalize();
    assert!(!profiling::tools_loaded());
    parallel_for(
        "after finalize",
        RangePolicy::new(Serial::default(), 0..4),
        |_i| {},
    )?;
    let _v = View::<u8, 1>::new("after finalize", [8])?;
    assert_eq!(hoplite::initialize(), Err(Error::ToolsFinalized));
    Ok(())
}

/// A path that does not load is the typed error of `initialize`; the program runs on.
fn bad_path() -> Outcome {
    let err = hoplite::initialize().expect_err("a missing connector is an error");
    let Error::ToolLoad { path, reason } = &err else {
        panic!("expected Error::ToolLoad, got {err:?}");
    };
    assert_eq!(path, "/nonexistent/libkp_missing.so");
    assert!(!reason.is_empty());
    assert!(err.to_string().contains("/nonexistent/libkp_missing.so"), "{err}");
    // The same error again: the outcome of the load is kept.
    assert_eq!(hoplite::initialize(), Err(err));
    assert!(!profiling::tools_loaded());
    parallel_for("still runs", 4, |_i| {})?;
    Ok(())
}

/// Without `initialize`, a connector that does not load is reported on standard error at the
/// first use, and the program runs on.
fn lazy_bad_path() -> Outcome {
    parallel_for("still runs", RangePolicy::new(Serial::default(), 0..4), |_i| {})?;
    assert!(!profiling::tools_loaded());
    Ok(())
}

/// A connector that defines only init, finalize and the parallel_for pair gets only those.
fn kernels_only() -> Outcome {
    let _region = ScopedRegion::new("region");
    let x = View::<i32, 1>::new("x", [4])?;
    parallel_for("for", RangePolicy::new(Serial::default(), 0..4), |_i| {})?;
    parallel_reduce(
        "reduce",
        RangePolicy::new(Serial::default(), 0..4),
        |_i, _acc| {},
        Sum::<i32>::new(),
    )?;
    Serial::default().fence()?;
    deep_copy_fill(&x, 3)?;
    Section::new("section").start();
    mark_event("event");
    Ok(())
}

/// No connector named: nothing loads and launches run.
fn no_tool() -> Outcome {
    assert!(!profiling::tools_loaded());
    parallel_for("plain", 4, |_i| {})?;
    hoplite::initialize()?;
    assert!(!profiling::tools_loaded());
    Ok(())
}

/// Kernels that could run at once: independent DAG vertices on two streams of a rayon pool,
/// and independent graph nodes on a rayon pool (a wave).
fn concurrent() -> Outcome {
    let pool = RayonSpace::with_threads(2)?;
    let ctx = Context::new(
        vec![HostDevice::partitioned("cpu", &pool, 2)?],
        ContextOptions::default(),
    )?;
    let views: Vec<View<f64, 1>> = (0..6)
        .map(|k| View::new(&format!("v{k}"), [1 << 12]))
        .collect::<Result<_>>()?;
    // Kernels long enough that two streams would run them at the same time.
    let slow = |i: Idx<'_>| {
        if *i == 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    for (k, v) in views.iter().enumerate() {
        ctx.launch(
            &format!("vertex {k}"),
            (v.len(), (v.write(),)),
            move |(i, (v,))| {
                slow(i);
                v.set(i, *i as f64)
            },
        )?;
    }
    ctx.synchronize()?;
    // Six nodes of 1024 iterations: one wave whose nodes share the pool's threads.
    let range = RangePolicy::new(pool.clone(), 0..1024);
    let mut graph = create_graph(&pool, |g| {
        for (k, v) in views.iter().enumerate() {
            g.parallel_for(
                &format!("node {k}"),
                (range.clone(), (v.write(),)),
                move |(i, (v,))| {
                    slow(i);
                    v.set(i, 1.0)
                },
            );
        }
    })?;
    graph.submit()?;
    Ok(())
}

/// The recording connector, or `None` (the test prints that it skips).
fn recorder(kernels_only: bool) -> Option<String> {
    connector(kernels_only).map(|p| p.to_string_lossy().into_owned())
}

/// The log with each address replaced by `@label` of the allocation reported at it (so that
/// an allocation, its copies and its free must name the same address), one string per line.
fn normalized(run: &Run) -> Vec<String> {
    let mut at = std::collections::HashMap::new();
    for line in run.lines("allocate_data") {
        at.insert(line[3].clone(), format!("@{}", line[2]));
    }
    run.log
        .iter()
        .map(|line| {
            line.iter()
                .map(|field| at.get(field).cloned().unwrap_or_else(|| field.clone()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn a_program_reports_every_event_to_the_connector() {
    let Some(lib) = recorder(false) else { return };
    // Only the first library of the list is loaded; the rest is for connectors that chain.
    let libs = format!("{lib};/nonexistent/libkp_next.so");
    let run = run_child("program", Some(&libs), &[("KOKKOS_TOOLS_ARGS", "--verbose  2")]);
    let serial = "0x00000001"; // Kokkos' Serial device type 0, device 0, instance 1
    let expected = [
        // Loaded at the first event, with Kokkos' handshakes.
        "init_library 0 20240906 0 null".to_owned(),
        "request_tool_settings 1 1".to_owned(),
        "provide_tool_programming_interface 1 fence".to_owned(),
        "parse_args --verbose 2".to_owned(),
        "push_profile_region program".to_owned(),
        "allocate_data Host x @x 32".to_owned(),
        "allocate_data Host y @y 32".to_owned(),
        "begin_deep_copy Host y @y Host x @x 32".to_owned(),
        "end_deep_copy".to_owned(),
        format!("begin_parallel_for scale {serial} 1"),
        "end_parallel_for 1".to_owned(),
        format!("begin_parallel_reduce sum {serial} 2"),
        "end_parallel_reduce 2".to_owned(),
        format!("begin_parallel_scan prefix {serial} 3"),
        "end_parallel_scan 3".to_owned(),
        format!("begin_fence hoplite::Serial::fence: Unnamed Instance Fence {serial} 4"),
        "end_fence 4".to_owned(),
        "create_profile_section section 1".to_owned(),
        "start_profile_section 1".to_owned(),
        "stop_profile_section 1".to_owned(),
        "destroy_profile_section 1".to_owned(),
        "profile_event event".to_owned(),
        // The graph's node and the DAG's vertex launch through the core like eager launches.
        format!("begin_parallel_for graph node {serial} 5"),
        "end_parallel_for 5".to_owned(),
        format!("begin_parallel_for dag vertex {serial} 6"),
        "end_parallel_for 6".to_owned(),
        "pop_profile_region".to_owned(),
        "deallocate_data Host x @x 32".to_owned(),
        "deallocate_data Host y @y 32".to_owned(),
        // Finalized at exit: the program never called `hoplite::finalize`.
        "finalize_library".to_owned(),
    ];
    assert_eq!(normalized(&run), expected, "stderr:\n{}", run.stderr());
    assert_ne!(run.lines("allocate_data")[0][3], "(nil)");
}

#[test]
fn initialize_and_finalize_bracket_the_connector() {
    let Some(lib) = recorder(false) else { return };
    let run = run_child("explicit", Some(&lib), &[("HOPLITE_TOOL_FENCING", "1")]);
    let launches = kernels(&run, "begin_parallel_for", "end_parallel_for");
    // A rayon pool is Kokkos' Threads device type (6) with an instance of its own.
    assert_eq!(launches[0].0, "on rayon");
    let rayon = u32::from_str_radix(launches[0].1.trim_start_matches("0x"), 16).expect("a device id");
    assert_eq!((rayon >> 24, (rayon >> 17) & 0x7f), (6, 0));
    assert!(rayon & 0x1ffff >= 1, "{rayon:#x}");
    // An unlabelled launch is named by its kernel's type, as Kokkos names it by the functor's.
    assert!(launches[1].0.contains("{{closure}}"), "{launches:?}");
    let lines: Vec<String> = normalized(&run)
        .into_iter()
        .map(|line| {
            let mut fields: Vec<&str> = line.split(' ').collect();
            match fields[..] {
                ["begin_parallel_for", "on", "rayon", ..] => fields[3] = "<rayon>",
                ["begin_parallel_for", name, ..] if name == launches[1].0 => fields[1] = "<closure>",
                ["begin_deep_copy", _, _, _, _, "Scalar", ..] => fields[6] = "<value>",
                _ => {}
            }
            fields.join(" ")
        })
        .collect();
    let serial = "0x00000001";
    let rayon_default = "0x06000001"; // the default pool: the first one made
    let expected = [
        "init_library 0 20240906 0 null".to_owned(),
        "request_tool_settings 1 1".to_owned(),
        "provide_tool_programming_interface 1 fence".to_owned(),
        "declare_metadata grid 4 x 4".to_owned(),
        "push_profile_region scoped".to_owned(),
        // The connector's fence request fences the default instances of the facade's backends.
        "profile_event tool fence".to_owned(),
        format!("begin_fence hoplite::Serial::fence: Unnamed Instance Fence {serial} 1"),
        "end_fence 1".to_owned(),
        format!("begin_fence hoplite::Rayon::fence: Unnamed Instance Fence {rayon_default} 2"),
        "end_fence 2".to_owned(),
        "tool_fence_returned".to_owned(),
        // Host launches finish when they return: no fence around them though the connector
        // asked for fencing.
        "begin_parallel_for on rayon <rayon> 3".to_owned(),
        "end_parallel_for 3".to_owned(),
        format!("begin_parallel_for <closure> {serial} 4"),
        "end_parallel_for 4".to_owned(),
        // A kernel that panics ends too.
        format!("begin_parallel_for boom {serial} 5"),
        "end_parallel_for 5".to_owned(),
        "allocate_data Host a @a 16".to_owned(),
        "allocate_data Host b @b 16".to_owned(),
        // A fill is a copy from a host scalar, as in Kokkos.
        "begin_deep_copy Host a @a Host Scalar <value> 16".to_owned(),
        "end_deep_copy".to_owned(),
        // A copy on an instance is a copy with its launch inside.
        "begin_deep_copy Host b @b Host a @a 16".to_owned(),
        format!("begin_parallel_for deep_copy_on(b <- a) {serial} 6"),
        "end_parallel_for 6".to_owned(),
        "end_deep_copy".to_owned(),
        "deallocate_data Host b @b 16".to_owned(),
        "deallocate_data Host a @a 16".to_owned(),
        "pop_profile_region".to_owned(),
        // `hoplite::finalize`; nothing after it (a launch and an allocation) is reported.
        "finalize_library".to_owned(),
    ];
    assert_eq!(lines, expected, "stderr:\n{}", run.stderr());
}

#[test]
fn kernels_that_could_overlap_reach_the_connector_one_at_a_time() {
    let Some(lib) = recorder(false) else { return };
    let run = run_child("concurrent", Some(&lib), &[]);
    let launches: Vec<&Vec<String>> = run
        .log
        .iter()
        .filter(|l| l[0].starts_with("begin_parallel") || l[0].starts_with("end_parallel"))
        .collect();
    // Each kernel's end comes right after its begin: connectors that keep one stack of kernels
    // (space-time-stack) need that, and would stop the program otherwise.
    assert_eq!(launches.len(), 24, "{:?}", run.log);
    for pair in launches.chunks(2) {
        assert_eq!(pair[0][0], "begin_parallel_for", "{pair:?}");
        assert_eq!(pair[1][0], "end_parallel_for", "{pair:?}");
        assert_eq!(pair[0][3], pair[1][1], "{pair:?}");
    }
    let mut names: Vec<&str> = launches.iter().step_by(2).map(|l| l[1].as_str()).collect();
    names.sort_unstable();
    let mut expected: Vec<String> = (0..6)
        .flat_map(|k| [format!("node {k}"), format!("vertex {k}")])
        .collect();
    expected.sort_unstable();
    assert_eq!(names, expected);
    // The two streams are two instances (partitions) of Kokkos' Threads device type.
    let mut streams: Vec<&str> = launches
        .iter()
        .filter(|l| l[0] == "begin_parallel_for" && l[1].starts_with("vertex"))
        .map(|l| l[2].as_str())
        .collect();
    streams.sort_unstable();
    streams.dedup();
    assert_eq!(streams.len(), 2, "{:?}", run.log);
    assert!(streams.iter().all(|d| d.starts_with("0x06")), "{streams:?}");
}

#[test]
fn a_connector_that_does_not_load_is_a_typed_error_of_initialize() {
    if recorder(false).is_none() {
        return;
    }
    let run = run_child("bad_path", Some("/nonexistent/libkp_missing.so;x.so"), &[]);
    assert!(run.log.is_empty(), "{:?}", run.log);
    assert!(!run.stderr().contains("could not be loaded"), "{}", run.stderr());
}

#[test]
fn a_connector_that_does_not_load_at_first_use_is_reported_once_on_stderr() {
    if recorder(false).is_none() {
        return;
    }
    let run = run_child("lazy_bad_path", Some("/nonexistent/libkp_missing.so"), &[]);
    assert!(run.log.is_empty(), "{:?}", run.log);
    let stderr = run.stderr();
    assert_eq!(
        stderr
            .matches(
                "`/nonexistent/libkp_missing.so` (the first library of KOKKOS_TOOLS_LIBS) could not be loaded"
            )
            .count(),
        1,
        "{stderr}"
    );
}

#[test]
fn a_connector_gets_only_the_entry_points_it_defines() {
    let Some(lib) = recorder(true) else { return };
    let run = run_child("kernels_only", Some(&lib), &[]);
    assert_eq!(
        normalized(&run),
        [
            "init_library 0 20240906 0 null",
            "begin_parallel_for for 0x00000001 1",
            "end_parallel_for 1",
            "finalize_library",
        ]
    );
}

#[test]
fn without_a_connector_nothing_is_loaded() {
    if recorder(false).is_none() {
        return;
    }
    let run = run_child("no_tool", None, &[]);
    assert!(run.log.is_empty(), "{:?}", run.log);
    assert!(!run.stderr().contains("could not be loaded"), "{}", run.stderr());
}

/// Checks that every end line of `begin`/`end` carries the id its begin line got, in nesting
/// order, and returns the begin lines' names with their device ids.
fn kernels(run: &Run, begin: &str, end: &str) -> Vec<(String, String)> {
    let mut open: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    for line in &run.log {
        if line[0] == begin {
            open.push(line[3].clone());
            seen.push((line[1].clone(), line[2].clone()));
        } else if line[0] == end {
            assert_eq!(
                open.pop().as_ref(),
                Some(&line[1]),
                "{begin}/{end} out of order: {:?}",
                run.log
            );
        }
    }
    assert!(open.is_empty(), "{begin} without {end}: {:?}", run.log);
    seen
}
