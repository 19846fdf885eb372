//! Bad input to serial launches: each is a typed error that names the launch, the offending
//! value and the limit, and the kernel never runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{
    Error, ExecutionPolicy, MDRangePolicy, PerTeam, PerThread, RangePolicy, Sum, TeamPolicy, TeamSize,
    parallel_for, parallel_reduce, parallel_scan,
};
use hoplite_serial::{MAX_SCRATCH_LEVEL0, MAX_SCRATCH_LEVEL1, Serial};

/// A kernel for any policy: counts its calls.
type CountingKernel<P> = Box<dyn for<'it> Fn(<P as ExecutionPolicy>::Item<'it>) + Send + Sync>;

/// Launches `policy` as a `parallel_for` that counts its iterations; returns the error and
/// checks that no iteration ran.
fn for_error<P>(label: &str, policy: P) -> Error
where
    P: ExecutionPolicy<Space = Serial>,
    Serial: hoplite_core::ParallelFor<P>,
{
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let kernel: CountingKernel<P> = Box::new(move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    });
    let err = parallel_for(label, policy, kernel).expect_err("the launch must be rejected");
    assert_eq!(
        runs.load(Ordering::Relaxed),
        0,
        "no iteration runs for a rejected launch"
    );
    err
}

fn assert_mentions(err: &Error, parts: &[&str]) {
    let msg = err.to_string();
    for part in parts {
        assert!(msg.contains(part), "`{msg}` should mention `{part}`");
    }
}

#[test]
#[expect(
    clippy::reversed_empty_ranges,
    reason = "a reversed range is the bad input under test"
)]
fn range_begin_after_end() {
    let err = for_error("axpy", RangePolicy::new(Serial::default(), 5..3));
    assert!(
        matches!(&err, Error::InvalidRange { label, dim: None, begin: 5, end: 3 } if label == "axpy"),
        "{err:?}"
    );
    assert_mentions(&err, &["`axpy`", "begin 5", "end 3", "begin <= end"]);

    // The same check guards reductions and scans.
    let err = parallel_reduce(
        "dot",
        RangePolicy::new(Serial::default(), 9..2),
        |_, a: &mut f64| *a += 1.0,
        Sum::new(),
    )
    .expect_err("9..2 is rejected");
    assert!(
        matches!(&err, Error::InvalidRange { begin: 9, end: 2, .. }),
        "{err:?}"
    );
    assert_mentions(&err, &["`dot`", "begin 9", "end 2"]);
    let err = parallel_scan(
        "prefix",
        RangePolicy::new(Serial::default(), 4..1),
        |_, p: &mut i64, _| *p += 1,
    )
    .expect_err("4..1 is rejected");
    assert!(
        matches!(&err, Error::InvalidRange { begin: 4, end: 1, .. }),
        "{err:?}"
    );
    assert_mentions(&err, &["`prefix`", "begin 4", "end 1"]);
}

#[test]
fn mdrange_begin_after_end_in_one_dimension() {
    let err = for_error(
        "stencil",
        MDRangePolicy::new(Serial::default(), [0, 8, 1], [4, 6, 5]),
    );
    assert!(
        matches!(&err, Error::InvalidRange { label, dim: Some(1), begin: 8, end: 6 } if label == "stencil"),
        "{err:?}"
    );
    assert_mentions(&err, &["`stencil`", "begin 8", "end 6", "dimension 1"]);
}

#[test]
fn zero_tile() {
    let p = MDRangePolicy::new(Serial::default(), [0, 0, 0], [4, 4, 4]).with_tiles([2, 2, 0]);
    let err = for_error("tiled", p);
    assert!(
        matches!(&err, Error::ZeroTile { label, dim: 2 } if label == "tiled"),
        "{err:?}"
    );
    assert_mentions(&err, &["`tiled`", "tile extent 0", "dimension 2", "at least 1"]);

    // A chunk of zero on a range becomes a zero tile when converted.
    let md = MDRangePolicy::<_, 1>::from(RangePolicy::new(Serial::default(), 0..4).with_chunk_size(0));
    let err = for_error("converted", md);
    assert!(matches!(&err, Error::ZeroTile { dim: 0, .. }), "{err:?}");
}

#[test]
fn zero_chunk() {
    let err = for_error(
        "chunked",
        RangePolicy::new(Serial::default(), 0..10).with_chunk_size(0),
    );
    assert!(
        matches!(&err, Error::ZeroChunk { label } if label == "chunked"),
        "{err:?}"
    );
    assert_mentions(&err, &["`chunked`", "chunk size 0", "at least 1"]);

    let err = for_error(
        "team-chunked",
        TeamPolicy::new(Serial::default(), 3, 1).with_chunk_size(0),
    );
    assert!(
        matches!(&err, Error::ZeroChunk { label } if label == "team-chunked"),
        "{err:?}"
    );
    assert_mentions(&err, &["`team-chunked`", "chunk size 0"]);
}

#[test]
fn rank_mismatch() {
    let err = MDRangePolicy::<Serial, 3>::from_slices(Serial::default(), &[0, 0], &[1, 1, 1])
        .expect_err("two begins for rank 3");
    assert!(
        matches!(&err, Error::RankMismatch { what, expected: 3, found: 2 } if what.contains("begin")),
        "{err:?}"
    );
    assert_mentions(&err, &["MDRangePolicy begin", "expected 3", "got 2"]);

    let err = MDRangePolicy::new(Serial::default(), [0; 4], [2; 4])
        .try_with_tiles(&[1, 2, 3, 4, 5])
        .expect_err("five tiles for rank 4");
    assert!(
        matches!(
            &err,
            Error::RankMismatch {
                expected: 4,
                found: 5,
                ..
            }
        ),
        "{err:?}"
    );
    assert_mentions(&err, &["MDRangePolicy tiles", "expected 4", "got 5"]);
}

#[test]
fn team_size_above_the_limit() {
    let err = for_error("league", TeamPolicy::new(Serial::default(), 4, 2));
    assert!(
        matches!(&err, Error::TeamSizeTooLarge { label, requested: 2, max: 1, space: "Serial" } if label == "league"),
        "{err:?}"
    );
    assert_mentions(
        &err,
        &["`league`", "team size 2", "maximum team size 1", "`Serial`"],
    );

    let err = for_error("huge-team", TeamPolicy::new(Serial::default(), 1, 1024));
    assert!(
        matches!(
            &err,
            Error::TeamSizeTooLarge {
                requested: 1024,
                max: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert_mentions(&err, &["`huge-team`", "1024"]);

    // Auto picks the maximum, which is accepted.
    let ran = AtomicUsize::new(0);
    parallel_for(
        "auto",
        TeamPolicy::new(Serial::default(), 4, TeamSize::Auto),
        |_| {
            ran.fetch_add(1, Ordering::Relaxed);
        },
    )
    .expect("Auto is always valid");
    assert_eq!(ran.into_inner(), 4);
}

#[test]
fn team_size_zero() {
    let err = for_error("empty-team", TeamPolicy::new(Serial::default(), 4, 0));
    assert!(
        matches!(&err, Error::ZeroTeamSize { label } if label == "empty-team"),
        "{err:?}"
    );
    assert_mentions(&err, &["`empty-team`", "team size 0", "at least one thread"]);
}

#[test]
fn vector_length_not_supported() {
    for (requested, label) in [(3, "vl3"), (2, "vl2"), (0, "vl0"), (64, "vl64")] {
        let err = for_error(
            label,
            TeamPolicy::new(Serial::default(), 2, 1).with_vector_length(requested),
        );
        assert!(
            matches!(&err, Error::InvalidVectorLength { label: l, requested: r, max: 1, space: "Serial" }
                if l == label && *r == requested),
            "{err:?}"
        );
        assert_mentions(
            &err,
            &[
                &format!("`{label}`"),
                &format!("vector length {requested}"),
                "no larger than 1",
                "`Serial`",
            ],
        );
    }
    // Vector length 1 is fine.
    let ok = parallel_reduce(
        "vl1",
        TeamPolicy::new(Serial::default(), 3, 1).with_vector_length(1),
        |_, a: &mut u32| *a += 1,
        Sum::new(),
    )
    .expect("vector length 1 is valid");
    assert_eq!(ok, 3);
}

#[test]
fn scratch_above_the_limit() {
    let p = TeamPolicy::new(Serial::default(), 2, 1).with_scratch_size(
        0,
        PerTeam(MAX_SCRATCH_LEVEL0),
        PerThread(1),
    );
    let err = for_error("scratchy", p);
    let requested = MAX_SCRATCH_LEVEL0 + 1;
    assert!(
        matches!(&err, Error::ScratchTooLarge { label, level: 0, requested: r, max: MAX_SCRATCH_LEVEL0 }
            if label == "scratchy" && *r == requested),
        "{err:?}"
    );
    assert_mentions(
        &err,
        &[
            "`scratchy`",
            &format!("{requested} bytes"),
            "level-0",
            &format!("limit of {MAX_SCRATCH_LEVEL0} bytes"),
        ],
    );

    let p = TeamPolicy::new(Serial::default(), 2, 1).with_scratch_size(
        1,
        PerTeam(MAX_SCRATCH_LEVEL1 * 2),
        PerThread(0),
    );
    let err = for_error("scratchy1", p);
    let requested = MAX_SCRATCH_LEVEL1 * 2;
    assert!(
        matches!(&err, Error::ScratchTooLarge { level: 1, requested: r, max: MAX_SCRATCH_LEVEL1, .. } if *r == requested),
        "{err:?}"
    );
    assert_mentions(
        &err,
        &[
            "`scratchy1`",
            &requested.to_string(),
            &MAX_SCRATCH_LEVEL1.to_string(),
        ],
    );
}

#[test]
fn scratch_at_level_two() {
    let p = TeamPolicy::new(Serial::default(), 2, 1).with_scratch_size(2, PerTeam(8), PerThread(0));
    assert_eq!(p.scratch_size(2), (0, 0));
    let err = for_error("level2", p);
    assert!(
        matches!(&err, Error::InvalidScratchLevel { label, level: 2 } if label == "level2"),
        "{err:?}"
    );
    assert_mentions(&err, &["`level2`", "scratch level 2", "levels are 0", "1"]);
}

#[test]
fn valid_policies_pass_validation() {
    let space = Serial::default();
    assert!(RangePolicy::new(space.clone(), 3..3).validate("ok").is_ok());
    assert!(
        RangePolicy::new(space.clone(), 0..3)
            .with_chunk_size(1)
            .validate("ok")
            .is_ok()
    );
    assert!(
        MDRangePolicy::new(space.clone(), [2, 2], [2, 2])
            .with_tiles([1, 1])
            .validate("ok")
            .is_ok()
    );
    let team = TeamPolicy::new(space, 0, 1)
        .with_vector_length(1)
        .with_scratch_size(0, PerTeam(MAX_SCRATCH_LEVEL0 - 8), PerThread(8))
        .with_scratch_size(1, PerTeam(MAX_SCRATCH_LEVEL1), PerThread(0));
    assert!(team.validate("ok").is_ok());
}
