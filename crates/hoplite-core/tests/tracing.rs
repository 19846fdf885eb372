//! The profiling hooks of the `tracing` feature: a span per launch (label, pattern, space),
//! entered for the launch's duration, and an event per allocation and free.
//!
//! Runs only with the feature (`cargo test -p hoplite-core --features tracing --test
//! tracing`, which `cargo xtask test` does).
#![cfg(feature = "tracing")]

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use hoplite_core::{
    RangePolicy, Sum, ValidatedPolicy, View, parallel_for, parallel_for_validated, parallel_reduce,
    parallel_scan,
};
use hoplite_serial::Serial;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A subscriber that writes one line per span opening, span exit and event.
#[derive(Clone, Default)]
struct Recorder {
    lines: Arc<Mutex<Vec<String>>>,
    next_id: Arc<AtomicU64>,
}

impl Recorder {
    fn push(&self, line: String) {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The fields of a span or event as `name=value` pairs.
#[derive(Default)]
struct Fields(Vec<String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push(format!("{}={value}", field.name()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.push(format!("{}={value}", field.name()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("hoplite")
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.push(format!(
            "open {} {} {}",
            attrs.metadata().target(),
            attrs.metadata().name(),
            fields.0.join(" ")
        ));
        Id::from_u64(id)
    }
    fn record(&self, _span: &Id, _values: &Record<'_>) {}
    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        self.push(format!(
            "event {} {}",
            event.metadata().target(),
            fields.0.join(" ")
        ));
    }
    fn enter(&self, _span: &Id) {}
    fn exit(&self, _span: &Id) {
        self.push("exit".to_owned());
    }
}

#[test]
fn launches_are_spans_and_allocations_are_events() {
    let recorder = Recorder::default();
    let result = tracing::subscriber::with_default(recorder.clone(), || -> hoplite_core::Result<i64> {
        let space = Serial::default();
        let y: View<i64, 1> = View::new("traced y", [100])?;
        parallel_for(
            "fill",
            (RangePolicy::new(space.clone(), 0..100), (y.write(),)),
            |(i, (y,))| y.set(i, *i as i64),
        )?;
        let sum = parallel_reduce(
            "sum",
            (RangePolicy::new(space.clone(), 0..100), (y.read(),)),
            |(i, (y,)), acc: &mut i64| *acc += y.get(i),
            Sum::new(),
        )?;
        let _: i64 = parallel_scan("count", RangePolicy::new(space.clone(), 0..3), |_i, p, _| *p += 1)?;
        let policy = ValidatedPolicy::new("replayed", RangePolicy::new(space, 0..4))?;
        parallel_for_validated::<RangePolicy<Serial>, _>("replayed", &policy, &(), &|_i| {})?;
        // An invalid launch is refused before it starts: no span.
        #[expect(clippy::reversed_empty_ranges, reason = "an invalid range on purpose")]
        let refused = parallel_for("refused", RangePolicy::new(Serial::default(), 5..1), |_i| {});
        assert!(refused.is_err());
        drop(y);
        Ok(sum)
    });
    assert_eq!(result.expect("launches"), 4950);
    let lines = recorder.lines();
    let expected = [
        "event hoplite::alloc message=allocate label=traced y bytes=800 space=HostSpace",
        "open hoplite::launch launch label=fill pattern=parallel_for space=Serial",
        "exit",
        "open hoplite::launch launch label=sum pattern=parallel_reduce space=Serial",
        "exit",
        "open hoplite::launch launch label=count pattern=parallel_scan space=Serial",
        "exit",
        "open hoplite::launch launch label=replayed pattern=parallel_for space=Serial",
        "exit",
        "event hoplite::alloc message=free label=traced y bytes=800 space=HostSpace",
    ];
    assert_eq!(lines, expected, "{lines:#?}");
}
