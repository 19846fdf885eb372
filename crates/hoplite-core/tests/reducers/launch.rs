//! Every built-in reducer (and custom ones) through `parallel_reduce` on the serial backend:
//! known data, empty ranges, ties, identity-valued data, MDRange and team policies.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hoplite_core::{
    BAnd, BOr, Custom, FirstLoc, IterationOrder, LAnd, LOr, LastLoc, MDRangePolicy, Max, MaxFirstLoc, MaxLoc,
    Min, MinFirstLoc, MinLoc, MinMax, MinMaxFirstLastLoc, MinMaxLoc, MinMaxLocScalar, MinMaxScalar, Prod,
    RangePolicy, Sum, TeamMember, TeamPolicy, TeamSize, ValLoc, parallel_reduce,
};
use hoplite_serial::Serial;

/// Minimum -1.5 at 1, 3 and 9; maximum 9 at 2, 5 and 6.
const DATA: [f64; 10] = [3.0, -1.5, 9.0, -1.5, 5.0, 9.0, 9.0, 0.5, 2.5, -1.5];
/// The same shape on integers: minimum -2 at 1, 3, 9; maximum 9 at 2, 5, 6.
const IDATA: [i32; 10] = [3, -2, 9, -2, 5, 9, 9, 0, 2, -2];

fn range(r: std::ops::Range<usize>) -> RangePolicy<Serial> {
    RangePolicy::new(Serial::default(), r)
}

#[test]
fn arithmetic_reducers_on_known_data() {
    let n = DATA.len();
    let sum = parallel_reduce("sum", range(0..n), |i, acc| *acc += DATA[*i], Sum::<f64>::new())
        .expect("sum launches");
    assert_eq!(sum, 33.5);
    let isum = parallel_reduce("isum", range(0..n), |i, acc| *acc += IDATA[*i], Sum::<i32>::new())
        .expect("isum launches");
    assert_eq!(isum, 31);
    let usum = parallel_reduce("usum", range(0..1000), |i, acc| *acc += *i, Sum::<usize>::new())
        .expect("usum launches");
    assert_eq!(usum, 499_500);

    let fact = parallel_reduce(
        "prod",
        range(1..11),
        |i, acc| *acc *= *i as u64,
        Prod::<u64>::new(),
    )
    .expect("prod launches");
    assert_eq!(fact, 3_628_800);
    let halves = parallel_reduce("fprod", range(0..4), |_, acc| *acc *= 0.5, Prod::<f64>::new())
        .expect("fprod launches");
    assert_eq!(halves, 0.0625);

    let min = parallel_reduce(
        "min",
        range(0..n),
        |i, acc: &mut f64| {
            if DATA[*i] < *acc {
                *acc = DATA[*i];
            }
        },
        Min::<f64>::new(),
    )
    .expect("min launches");
    assert_eq!(min, -1.5);
    let max = parallel_reduce(
        "max",
        range(0..n),
        |i, acc: &mut i32| *acc = (*acc).max(IDATA[*i]),
        Max::<i32>::new(),
    )
    .expect("max launches");
    assert_eq!(max, 9);

    let mm = parallel_reduce(
        "minmax",
        range(0..n),
        |i, acc| acc.update(DATA[*i]),
        MinMax::<f64>::new(),
    )
    .expect("minmax launches");
    assert_eq!(mm, MinMaxScalar { min: -1.5, max: 9.0 });
    // A sub-range that excludes the extremes at the ends.
    let mm = parallel_reduce(
        "minmax-sub",
        range(4..9),
        |i, acc| acc.update(IDATA[*i]),
        MinMax::<i32>::new(),
    )
    .expect("minmax launches");
    assert_eq!(mm, MinMaxScalar { min: 0, max: 9 });
}

#[test]
fn location_reducers_break_ties_toward_the_lowest_index() {
    let n = DATA.len();
    let min = parallel_reduce(
        "minloc",
        range(0..n),
        |i, acc: &mut ValLoc<f64>| acc.update_min(DATA[*i], *i),
        MinLoc::<f64>::new(),
    )
    .expect("minloc launches");
    assert_eq!(
        min,
        ValLoc {
            val: -1.5,
            loc: Some(1)
        }
    );
    let max = parallel_reduce(
        "maxloc",
        range(0..n),
        |i, acc: &mut ValLoc<f64>| acc.update_max(DATA[*i], *i),
        MaxLoc::<f64>::new(),
    )
    .expect("maxloc launches");
    assert_eq!(
        max,
        ValLoc {
            val: 9.0,
            loc: Some(2)
        }
    );

    let min_first = parallel_reduce(
        "minfirstloc",
        range(0..n),
        |i, acc: &mut ValLoc<i32>| acc.update_min(IDATA[*i], *i),
        MinFirstLoc::<i32>::new(),
    )
    .expect("minfirstloc launches");
    assert_eq!(
        min_first,
        ValLoc {
            val: -2,
            loc: Some(1)
        }
    );
    let max_first = parallel_reduce(
        "maxfirstloc",
        range(0..n),
        |i, acc: &mut ValLoc<i32>| acc.update_max(IDATA[*i], *i),
        MaxFirstLoc::<i32>::new(),
    )
    .expect("maxfirstloc launches");
    assert_eq!(max_first, ValLoc { val: 9, loc: Some(2) });

    // Locations are absolute indices, also for a range that does not start at 0.
    let min_sub = parallel_reduce(
        "minloc-sub",
        range(2..n),
        |i, acc: &mut ValLoc<f64>| acc.update_min(DATA[*i], *i),
        MinLoc::<f64>::new(),
    )
    .expect("minloc launches");
    assert_eq!(
        min_sub,
        ValLoc {
            val: -1.5,
            loc: Some(3)
        }
    );
    let max_sub = parallel_reduce(
        "maxloc-sub",
        range(3..n),
        |i, acc: &mut ValLoc<f64>| acc.update_max(DATA[*i], *i),
        MaxLoc::<f64>::new(),
    )
    .expect("maxloc launches");
    assert_eq!(
        max_sub,
        ValLoc {
            val: 9.0,
            loc: Some(5)
        }
    );

    let mml = parallel_reduce(
        "minmaxloc",
        range(0..n),
        |i, acc| acc.update(DATA[*i], *i),
        MinMaxLoc::<f64>::new(),
    )
    .expect("minmaxloc launches");
    assert_eq!(
        mml,
        MinMaxLocScalar {
            min_val: -1.5,
            max_val: 9.0,
            min_loc: Some(1),
            max_loc: Some(2)
        }
    );
    let mmfl = parallel_reduce(
        "minmaxfirstlastloc",
        range(0..n),
        |i, acc| acc.update_first_last(IDATA[*i], *i),
        MinMaxFirstLastLoc::<i32>::new(),
    )
    .expect("minmaxfirstlastloc launches");
    // The min side goes to the lowest index, the max side to the highest.
    assert_eq!(
        mmfl,
        MinMaxLocScalar {
            min_val: -2,
            max_val: 9,
            min_loc: Some(1),
            max_loc: Some(6)
        }
    );
}

#[test]
fn first_and_last_loc() {
    let n = DATA.len();
    let negative = |i: usize| DATA[i] < 0.0;
    let first = parallel_reduce(
        "firstloc",
        range(0..n),
        |i, acc| {
            if negative(*i) {
                FirstLoc::update(acc, *i);
            }
        },
        FirstLoc::new(),
    )
    .expect("firstloc launches");
    assert_eq!(first, Some(1));
    let last = parallel_reduce(
        "lastloc",
        range(0..n),
        |i, acc| {
            if negative(*i) {
                LastLoc::update(acc, *i);
            }
        },
        LastLoc::new(),
    )
    .expect("lastloc launches");
    assert_eq!(last, Some(9));
    // Every index qualifies: first and last of the range itself.
    let first = parallel_reduce(
        "firstloc-all",
        range(3..8),
        |i, acc| FirstLoc::update(acc, *i),
        FirstLoc::new(),
    )
    .expect("firstloc launches");
    let last = parallel_reduce(
        "lastloc-all",
        range(3..8),
        |i, acc| LastLoc::update(acc, *i),
        LastLoc::new(),
    )
    .expect("lastloc launches");
    assert_eq!((first, last), (Some(3), Some(7)));
    // No index qualifies.
    let none = parallel_reduce(
        "firstloc-none",
        range(0..n),
        |i, acc| {
            if DATA[*i] > 100.0 {
                FirstLoc::update(acc, *i);
            }
        },
        FirstLoc::new(),
    )
    .expect("firstloc launches");
    assert_eq!(none, None);
}

#[test]
fn logical_and_bitwise_reducers() {
    let n = IDATA.len();
    let all_small = parallel_reduce(
        "land-t",
        range(0..n),
        |i, acc| *acc = *acc && IDATA[*i] < 10,
        LAnd::new(),
    )
    .expect("land launches");
    let all_positive = parallel_reduce(
        "land-f",
        range(0..n),
        |i, acc| *acc = *acc && IDATA[*i] > 0,
        LAnd::new(),
    )
    .expect("land launches");
    assert!(all_small);
    assert!(!all_positive);
    let any_nine = parallel_reduce(
        "lor-t",
        range(0..n),
        |i, acc| *acc = *acc || IDATA[*i] == 9,
        LOr::new(),
    )
    .expect("lor launches");
    let any_big = parallel_reduce(
        "lor-f",
        range(0..n),
        |i, acc| *acc = *acc || IDATA[*i] > 9,
        LOr::new(),
    )
    .expect("lor launches");
    assert!(any_nine);
    assert!(!any_big);

    let bits: [u32; 4] = [0b1111_0110, 0b0111_1110, 0b1110_0111, 0b1111_1110];
    let and = parallel_reduce("band", range(0..4), |i, acc| *acc &= bits[*i], BAnd::<u32>::new())
        .expect("band launches");
    assert_eq!(and, 0b0110_0110);
    let or = parallel_reduce("bor", range(0..4), |i, acc| *acc |= bits[*i], BOr::<u32>::new())
        .expect("bor launches");
    assert_eq!(or, 0b1111_1111);
    let signed_and = parallel_reduce(
        "band-i",
        range(0..3),
        |i, acc| *acc &= -1i64 << *i,
        BAnd::<i64>::new(),
    )
    .expect("band launches");
    assert_eq!(signed_and, -4);
    let flag_or = parallel_reduce(
        "bor-bool",
        range(0..3),
        |i, acc| *acc |= *i == 2,
        BOr::<bool>::new(),
    )
    .expect("bor launches");
    assert!(flag_or);
}

#[test]
fn custom_finalize_runs_exactly_once() {
    let calls = AtomicUsize::new(0);
    let seen = Mutex::new(Vec::new());
    let mean = Custom::with_finalize(
        || (0u32, 0.0f64),
        |d: &mut (u32, f64), s: (u32, f64)| {
            d.0 += s.0;
            d.1 += s.1;
        },
        |v: &mut (u32, f64)| {
            calls.fetch_add(1, Ordering::SeqCst);
            seen.lock().expect("not poisoned").push(*v);
            if v.0 > 0 {
                v.1 /= f64::from(v.0);
            }
        },
    );
    let m = parallel_reduce(
        "mean",
        range(0..DATA.len()),
        |i, acc: &mut (u32, f64)| {
            acc.0 += 1;
            acc.1 += DATA[*i];
        },
        &mean,
    )
    .expect("mean launches");
    assert_eq!(m, (10, 3.35));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(*seen.lock().expect("not poisoned"), [(10, 33.5)]);

    // Empty range: finalize still runs once, on init().
    let empty = parallel_reduce(
        "mean-empty",
        range(5..5),
        |_, acc: &mut (u32, f64)| acc.0 += 1000,
        &mean,
    )
    .expect("empty mean launches");
    assert_eq!(empty, (0, 0.0));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(*seen.lock().expect("not poisoned"), [(10, 33.5), (0, 0.0)]);

    // A finalize that changes the value.
    let tenfold = Custom::with_finalize(|| 0i64, |d: &mut i64, s| *d += s, |v: &mut i64| *v *= 10);
    let r = parallel_reduce(
        "tenfold",
        range(0..4),
        |i, acc: &mut i64| *acc += *i as i64,
        tenfold,
    )
    .expect("tenfold launches");
    assert_eq!(r, 60);
}

#[test]
fn empty_range_gives_every_identity() {
    let e = || range(5..5);
    let never = |_: usize| -> f64 { panic!("the kernel must not run on an empty range") };
    assert_eq!(
        parallel_reduce("sum", e(), |i, a| *a += never(*i), Sum::<f64>::new()).expect("sum"),
        0.0
    );
    assert_eq!(
        parallel_reduce("prod", e(), |i, a| *a *= never(*i), Prod::<f64>::new()).expect("prod"),
        1.0
    );
    assert_eq!(
        parallel_reduce("min", e(), |i, a| *a = never(*i), Min::<f64>::new()).expect("min"),
        f64::INFINITY
    );
    assert_eq!(
        parallel_reduce("max", e(), |i, a| *a = never(*i), Max::<f64>::new()).expect("max"),
        f64::NEG_INFINITY
    );
    assert_eq!(
        parallel_reduce("imin", e(), |_, _: &mut i32| {}, Min::<i32>::new()).expect("imin"),
        i32::MAX
    );
    assert_eq!(
        parallel_reduce("imax", e(), |_, _: &mut i32| {}, Max::<i32>::new()).expect("imax"),
        i32::MIN
    );
    assert_eq!(
        parallel_reduce("minmax", e(), |i, a| a.update(never(*i)), MinMax::<f64>::new()).expect("minmax"),
        MinMaxScalar {
            min: f64::INFINITY,
            max: f64::NEG_INFINITY
        }
    );
    assert_eq!(
        parallel_reduce(
            "minloc",
            e(),
            |i, a| a.update_min(never(*i), *i),
            MinLoc::<f64>::new()
        )
        .expect("minloc"),
        ValLoc {
            val: f64::INFINITY,
            loc: None
        }
    );
    assert_eq!(
        parallel_reduce(
            "maxloc",
            e(),
            |i, a| a.update_max(never(*i), *i),
            MaxLoc::<f64>::new()
        )
        .expect("maxloc"),
        ValLoc {
            val: f64::NEG_INFINITY,
            loc: None
        }
    );
    assert_eq!(
        parallel_reduce(
            "minfirstloc",
            e(),
            |_, _: &mut ValLoc<i32>| {},
            MinFirstLoc::<i32>::new()
        )
        .expect("minfirstloc"),
        ValLoc {
            val: i32::MAX,
            loc: None
        }
    );
    assert_eq!(
        parallel_reduce(
            "maxfirstloc",
            e(),
            |_, _: &mut ValLoc<i32>| {},
            MaxFirstLoc::<i32>::new()
        )
        .expect("maxfirstloc"),
        ValLoc {
            val: i32::MIN,
            loc: None
        }
    );
    let empty_mml = MinMaxLocScalar {
        min_val: f64::INFINITY,
        max_val: f64::NEG_INFINITY,
        min_loc: None,
        max_loc: None,
    };
    assert_eq!(
        parallel_reduce(
            "minmaxloc",
            e(),
            |i, a| a.update(never(*i), *i),
            MinMaxLoc::<f64>::new()
        )
        .expect("minmaxloc"),
        empty_mml
    );
    assert_eq!(
        parallel_reduce(
            "minmaxfirstlastloc",
            e(),
            |i, a| a.update_first_last(never(*i), *i),
            MinMaxFirstLastLoc::<f64>::new()
        )
        .expect("minmaxfirstlastloc"),
        empty_mml
    );
    assert_eq!(
        parallel_reduce("firstloc", e(), |i, a| FirstLoc::update(a, *i), FirstLoc::new()).expect("firstloc"),
        None
    );
    assert_eq!(
        parallel_reduce("lastloc", e(), |i, a| LastLoc::update(a, *i), LastLoc::new()).expect("lastloc"),
        None
    );
    assert!(parallel_reduce("land", e(), |_, a| *a = false, LAnd::new()).expect("land"));
    assert!(!parallel_reduce("lor", e(), |_, a| *a = true, LOr::new()).expect("lor"));
    assert_eq!(
        parallel_reduce("band", e(), |_, a| *a = 0, BAnd::<u16>::new()).expect("band"),
        u16::MAX
    );
    assert_eq!(
        parallel_reduce("band-i", e(), |_, a| *a = 0, BAnd::<i32>::new()).expect("band"),
        -1
    );
    assert_eq!(
        parallel_reduce("bor", e(), |_, a| *a = 7, BOr::<u64>::new()).expect("bor"),
        0
    );
    let custom = Custom::new(|| vec![42usize], |d: &mut Vec<usize>, s: Vec<usize>| d.extend(s));
    assert_eq!(
        parallel_reduce("custom", e(), |i, a: &mut Vec<usize>| a.push(*i), custom).expect("custom"),
        [42]
    );
}

#[test]
fn location_reducers_over_identity_values_report_index_zero() {
    let inf = [f64::INFINITY; 6];
    let r = parallel_reduce(
        "minloc-inf",
        range(0..inf.len()),
        |i, acc: &mut ValLoc<f64>| acc.update_min(inf[*i], *i),
        MinLoc::<f64>::new(),
    )
    .expect("minloc launches");
    assert_eq!(
        r,
        ValLoc {
            val: f64::INFINITY,
            loc: Some(0)
        }
    );

    let ninf = [f64::NEG_INFINITY; 5];
    let r = parallel_reduce(
        "maxloc-ninf",
        range(0..ninf.len()),
        |i, acc: &mut ValLoc<f64>| acc.update_max(ninf[*i], *i),
        MaxLoc::<f64>::new(),
    )
    .expect("maxloc launches");
    assert_eq!(
        r,
        ValLoc {
            val: f64::NEG_INFINITY,
            loc: Some(0)
        }
    );

    let imax = [i32::MAX; 7];
    let r = parallel_reduce(
        "minloc-imax",
        range(0..imax.len()),
        |i, acc: &mut ValLoc<i32>| acc.update_min(imax[*i], *i),
        MinLoc::<i32>::new(),
    )
    .expect("minloc launches");
    assert_eq!(
        r,
        ValLoc {
            val: i32::MAX,
            loc: Some(0)
        }
    );

    let imin = [i32::MIN; 3];
    let r = parallel_reduce(
        "maxloc-imin",
        range(0..imin.len()),
        |i, acc: &mut ValLoc<i32>| acc.update_max(imin[*i], *i),
        MaxFirstLoc::<i32>::new(),
    )
    .expect("maxloc launches");
    assert_eq!(
        r,
        ValLoc {
            val: i32::MIN,
            loc: Some(0)
        }
    );

    // Starting elsewhere, the first index of the range is reported.
    let r = parallel_reduce(
        "minloc-inf-sub",
        range(2..inf.len()),
        |i, acc: &mut ValLoc<f64>| acc.update_min(inf[*i], *i),
        MinLoc::<f64>::new(),
    )
    .expect("minloc launches");
    assert_eq!(r.loc, Some(2));

    let r = parallel_reduce(
        "minmaxloc-inf",
        range(0..inf.len()),
        |i, acc| acc.update(inf[*i], *i),
        MinMaxLoc::<f64>::new(),
    )
    .expect("minmaxloc launches");
    assert_eq!((r.min_loc, r.max_loc), (Some(0), Some(0)));
    let r = parallel_reduce(
        "minmaxfirstlastloc-inf",
        range(0..inf.len()),
        |i, acc| acc.update_first_last(inf[*i], *i),
        MinMaxFirstLastLoc::<f64>::new(),
    )
    .expect("minmaxfirstlastloc launches");
    assert_eq!((r.min_loc, r.max_loc), (Some(0), Some(5)));
}

#[test]
fn reduce_over_mdrange_with_odd_tiles() {
    let (lo, hi) = ([1, 2], [12, 17]);
    let mut expected = 0usize;
    for i in lo[0]..hi[0] {
        for j in lo[1]..hi[1] {
            expected += i * 100 + j;
        }
    }
    for (outer, inner) in [
        (IterationOrder::Right, IterationOrder::Right),
        (IterationOrder::Left, IterationOrder::Right),
        (IterationOrder::Right, IterationOrder::Left),
        (IterationOrder::Left, IterationOrder::Left),
    ] {
        let p = MDRangePolicy::new(Serial::default(), lo, hi)
            .with_tiles([3, 4])
            .with_iteration(outer, inner);
        let sum = parallel_reduce(
            "md-sum",
            p,
            |ij, acc: &mut usize| {
                let [i, j] = *ij;
                *acc += i * 100 + j;
            },
            Sum::new(),
        )
        .expect("md-sum launches");
        assert_eq!(sum, expected, "{outer:?}/{inner:?}");
    }

    // MinLoc over an MDRange: the kernel chooses the location encoding (row-major offset).
    let p = MDRangePolicy::new(Serial::default(), [0, 0, 0], [4, 5, 3]).with_tiles([3, 2, 2]);
    let r = parallel_reduce(
        "md-minloc",
        p,
        |ijk, acc: &mut ValLoc<i64>| {
            let [i, j, k] = *ijk;
            let v = (i as i64 - 2).pow(2) + (j as i64 - 3).pow(2) + k as i64;
            acc.update_min(v, (i * 5 + j) * 3 + k);
        },
        MinLoc::new(),
    )
    .expect("md-minloc launches");
    assert_eq!(
        r,
        ValLoc {
            val: 0,
            loc: Some((2 * 5 + 3) * 3)
        }
    );

    // An empty box gives the identity.
    let p = MDRangePolicy::new(Serial::default(), [3, 3], [3, 9]).with_tiles([2, 2]);
    let r = parallel_reduce("md-empty", p, |_, acc: &mut f64| *acc += 1.0, Sum::<f64>::new())
        .expect("md-empty launches");
    assert_eq!(r, 0.0);
}

#[test]
fn reduce_over_team_policy() {
    let space = Serial::default();
    let n = 7;
    let sum = parallel_reduce(
        "team-sum",
        TeamPolicy::new(space.clone(), n, TeamSize::Auto),
        |m, acc: &mut usize| {
            *acc += m.league_rank() * 10 + m.team_rank() + m.league_size();
        },
        Sum::new(),
    )
    .expect("team-sum launches");
    assert_eq!(sum, (0..n).map(|r| r * 10 + n).sum::<usize>());

    let max = parallel_reduce(
        "team-maxloc",
        TeamPolicy::new(space.clone(), n, 1),
        |m, acc: &mut ValLoc<i64>| {
            let r = m.league_rank();
            acc.update_max(-((r as i64 - 4).abs()), r);
        },
        MaxLoc::new(),
    )
    .expect("team-maxloc launches");
    assert_eq!(max, ValLoc { val: 0, loc: Some(4) });

    let none = parallel_reduce(
        "team-empty",
        TeamPolicy::new(space, 0, 1),
        |_, acc: &mut Option<usize>| *acc = Some(1),
        LastLoc::new(),
    )
    .expect("team-empty launches");
    assert_eq!(none, None);
}
