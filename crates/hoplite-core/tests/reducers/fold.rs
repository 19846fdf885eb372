//! Unit tests of the reducers' values, identities and joins, without a launch.

use hoplite_core::*;
use std::fmt::Debug;

const DATA: [i32; 8] = [3, -1, 4, -1, 5, 9, -2, 6];

fn data_f64() -> [f64; 8] {
    DATA.map(f64::from)
}

/// Folds `lo..hi` sequentially from `init`.
fn fold_range<R: Reducer>(r: &R, lo: usize, hi: usize, f: &impl Fn(&mut R::Value, usize)) -> R::Value {
    let mut acc = r.init();
    for i in lo..hi {
        f(&mut acc, i);
    }
    acc
}

/// Chunks of `chunk` indices, each folded from `init`, joined in index
/// order into a fresh `init` (so the first chunk is joined as `src` into an
/// identity `dst`).
fn fold_chunked<R: Reducer>(r: &R, n: usize, chunk: usize, f: &impl Fn(&mut R::Value, usize)) -> R::Value {
    let mut total = r.init();
    let mut lo = 0;
    while lo < n {
        let hi = (lo + chunk).min(n);
        r.join(&mut total, fold_range(r, lo, hi, f));
        lo = hi;
    }
    total
}

/// Chunks folded separately, then joined so that the first chunk is the
/// `dst` of every join.
fn fold_chunked_first_dst<R: Reducer>(
    r: &R,
    n: usize,
    chunk: usize,
    f: &impl Fn(&mut R::Value, usize),
) -> R::Value {
    let mut parts = Vec::new();
    let mut lo = 0;
    while lo < n {
        let hi = (lo + chunk).min(n);
        parts.push(fold_range(r, lo, hi, f));
        lo = hi;
    }
    let mut parts = parts.into_iter();
    let mut total = parts.next().unwrap_or_else(|| r.init());
    for p in parts {
        r.join(&mut total, p);
    }
    total
}

/// Recursive halving: left half is `dst`, right half is `src`.
fn fold_tree<R: Reducer>(r: &R, lo: usize, hi: usize, f: &impl Fn(&mut R::Value, usize)) -> R::Value {
    if hi - lo <= 1 {
        return fold_range(r, lo, hi, f);
    }
    let mid = lo + (hi - lo) / 2;
    let mut left = fold_tree(r, lo, mid, f);
    let right = fold_tree(r, mid, hi, f);
    r.join(&mut left, right);
    left
}

/// Reduces `0..n` sequentially, in chunks of several sizes (joined both
/// ways), and as a tree; asserts all agree and returns the finalized total.
fn reduce_all<R>(r: &R, n: usize, f: impl Fn(&mut R::Value, usize)) -> R::Value
where
    R: Reducer,
    R::Value: PartialEq + Debug,
{
    let finish = |mut v: R::Value| {
        r.finalize(&mut v);
        v
    };
    let seq = finish(fold_range(r, 0, n, &f));
    for chunk in [1, 2, 3, 5, n.max(1)] {
        assert_eq!(finish(fold_chunked(r, n, chunk, &f)), seq, "chunk {chunk}");
        assert_eq!(
            finish(fold_chunked_first_dst(r, n, chunk, &f)),
            seq,
            "chunk {chunk} (first as dst)"
        );
    }
    assert_eq!(finish(fold_tree(r, 0, n, &f)), seq, "tree");
    seq
}

/// Joins chunks in reverse index order (not required by the axioms; the
/// `*Loc` reducers compare indices, so they still agree).
fn fold_chunked_reversed<R: Reducer>(
    r: &R,
    n: usize,
    chunk: usize,
    f: &impl Fn(&mut R::Value, usize),
) -> R::Value {
    let mut parts = Vec::new();
    let mut lo = 0;
    while lo < n {
        let hi = (lo + chunk).min(n);
        parts.push(fold_range(r, lo, hi, f));
        lo = hi;
    }
    let mut total = r.init();
    for p in parts.into_iter().rev() {
        r.join(&mut total, p);
    }
    total
}

/// Both identity laws for `v`.
fn check_identity<R>(r: &R, v: R::Value)
where
    R: Reducer,
    R::Value: Clone + PartialEq + Debug,
{
    let mut right = v.clone();
    r.join(&mut right, r.init());
    assert_eq!(right, v, "join(v, init)");
    let mut left = r.init();
    r.join(&mut left, v.clone());
    assert_eq!(left, v, "join(init, v)");
}

// --- identities ---------------------------------------------------------

#[test]
fn identity_values() {
    assert_eq!(<i8 as ReductionIdentity>::min(), i8::MAX);
    assert_eq!(<u128 as ReductionIdentity>::max(), 0);
    assert_eq!(<isize as ReductionIdentity>::max(), isize::MIN);
    assert_eq!(<f32 as ReductionIdentity>::min(), f32::INFINITY);
    assert_eq!(<f64 as ReductionIdentity>::max(), f64::NEG_INFINITY);
    assert_eq!(<f64 as ReductionIdentity>::sum(), 0.0);
    assert_eq!(<u16 as ReductionIdentity>::prod(), 1);
    assert_eq!(u8::band(), 0xff);
    assert_eq!(i16::band(), -1);
    assert_eq!(usize::bor(), 0);
    assert!(bool::band());
    assert!(!bool::bor());
}

#[test]
fn identity_laws_arithmetic() {
    for v in [0, 1, -7, i64::MAX, i64::MIN] {
        check_identity(&Sum::<i64>::new(), v);
        check_identity(&Prod::<i64>::new(), v);
        check_identity(&Min::<i64>::new(), v);
        check_identity(&Max::<i64>::new(), v);
    }
    for v in [0.0, -0.5, 3.25, f64::INFINITY, f64::NEG_INFINITY] {
        check_identity(&Prod::<f64>::new(), v);
        check_identity(&Min::<f64>::new(), v);
        check_identity(&Max::<f64>::new(), v);
    }
    for v in [0.0, -0.5, 3.25, 1e300] {
        check_identity(&Sum::<f64>::new(), v);
    }
    for v in [0u8, 1, 255] {
        check_identity(&Sum::<u8>::new(), v);
        check_identity(&Min::<u8>::new(), v);
        check_identity(&Max::<u8>::new(), v);
    }
}

#[test]
fn identity_laws_minmax_and_loc() {
    check_identity(&MinMax::<i32>::new(), MinMaxScalar { min: -3, max: 8 });
    check_identity(&MinMax::<f64>::new(), MinMaxScalar { min: -0.5, max: 2.0 });
    {
        let r = MinLoc::<i32>::new();
        check_identity(&r, ValLoc { val: 4, loc: Some(2) });
        check_identity(
            &r,
            ValLoc {
                val: i32::MAX,
                loc: Some(0),
            },
        );
        check_identity(&r, r.init());
    }
    check_identity(
        &MaxLoc::<i32>::new(),
        ValLoc {
            val: i32::MIN,
            loc: Some(5),
        },
    );
    check_identity(
        &MinLoc::<f64>::new(),
        ValLoc {
            val: f64::INFINITY,
            loc: Some(1),
        },
    );
    check_identity(
        &MaxLoc::<f64>::new(),
        ValLoc {
            val: -2.5,
            loc: Some(7),
        },
    );
    let mml = MinMaxLocScalar {
        min_val: -1.0,
        max_val: 9.0,
        min_loc: Some(1),
        max_loc: Some(5),
    };
    check_identity(&MinMaxLoc::<f64>::new(), mml);
    check_identity(&MinMaxFirstLastLoc::<f64>::new(), mml);
    let mmi = MinMaxLocScalar {
        min_val: i32::MAX,
        max_val: i32::MIN,
        min_loc: Some(0),
        max_loc: Some(0),
    };
    check_identity(&MinMaxLoc::<i32>::new(), mmi);
    check_identity(&MinMaxFirstLastLoc::<i32>::new(), mmi);
}

#[test]
fn identity_laws_logical_bitwise_locs() {
    for v in [true, false] {
        check_identity(&LAnd::new(), v);
        check_identity(&LOr::new(), v);
        check_identity(&BAnd::<bool>::new(), v);
        check_identity(&BOr::<bool>::new(), v);
    }
    for v in [0u32, 1, 0xdead_beef, u32::MAX] {
        check_identity(&BAnd::<u32>::new(), v);
        check_identity(&BOr::<u32>::new(), v);
    }
    for v in [-1i64, 0, 42] {
        check_identity(&BAnd::<i64>::new(), v);
        check_identity(&BOr::<i64>::new(), v);
    }
    for v in [None, Some(0), Some(17)] {
        check_identity(&FirstLoc::new(), v);
        check_identity(&LastLoc::new(), v);
    }
}

// --- arithmetic ---------------------------------------------------------

#[test]
fn sum_prod_min_max_fold() {
    let d = DATA;
    let n = d.len();
    assert_eq!(reduce_all(&Sum::<i32>::new(), n, |a, i| *a += d[i]), 23);
    assert_eq!(
        reduce_all(&Prod::<i64>::new(), n, |a, i| *a *= i64::from(d[i])),
        -6480
    );
    assert_eq!(
        reduce_all(&Min::<i32>::new(), n, |a, i| Min::new().join(a, d[i])),
        -2
    );
    assert_eq!(
        reduce_all(&Max::<i32>::new(), n, |a, i| Max::new().join(a, d[i])),
        9
    );

    let f = data_f64();
    assert_eq!(reduce_all(&Sum::<f64>::new(), n, |a, i| *a += f[i]), 23.0);
    assert_eq!(
        reduce_all(&Min::<f64>::new(), n, |a, i| if f[i] < *a {
            *a = f[i];
        }),
        -2.0
    );
    assert_eq!(
        reduce_all(&Max::<f64>::new(), n, |a, i| if f[i] > *a {
            *a = f[i];
        }),
        9.0
    );
}

#[test]
fn min_max_nan_is_ignored() {
    let min = Min::<f64>::new();
    let max = Max::<f64>::new();

    let mut a = 1.0;
    min.join(&mut a, f64::NAN);
    assert_eq!(a, 1.0);
    let mut a = f64::NAN;
    min.join(&mut a, 1.0);
    assert_eq!(a, 1.0);
    let mut a = 1.0;
    max.join(&mut a, f64::NAN);
    assert_eq!(a, 1.0);
    let mut a = f64::NAN;
    max.join(&mut a, -1.0);
    assert_eq!(a, -1.0);

    let x = [f64::NAN, 2.0, f64::NAN, -3.0, 7.0, f64::NAN];
    let r = reduce_all(&Min::<f64>::new(), x.len(), |a, i| min.join(a, x[i]));
    assert_eq!(r, -3.0);
    let r = reduce_all(&Max::<f64>::new(), x.len(), |a, i| max.join(a, x[i]));
    assert_eq!(r, 7.0);

    // All NaN: the identity.
    let mut a = min.init();
    min.join(&mut a, f64::NAN);
    min.join(&mut a, f64::NAN);
    assert_eq!(a, f64::INFINITY);

    let mm = MinMax::<f64>::new();
    let r = reduce_all(&mm, x.len(), |a, i| a.update(x[i]));
    assert_eq!(r, MinMaxScalar { min: -3.0, max: 7.0 });
}

#[test]
fn minmax_fold() {
    let d = DATA;
    let r = reduce_all(&MinMax::<i32>::new(), d.len(), |a, i| a.update(d[i]));
    assert_eq!(r, MinMaxScalar { min: -2, max: 9 });
    let f = data_f64();
    let r = reduce_all(&MinMax::<f64>::new(), f.len(), |a, i| a.update(f[i]));
    assert_eq!(r, MinMaxScalar { min: -2.0, max: 9.0 });
}

// --- locations ----------------------------------------------------------

#[test]
fn min_loc_max_loc_fold() {
    let d = DATA;
    let n = d.len();
    let r = reduce_all(&MinLoc::<i32>::new(), n, |a, i| a.update_min(d[i], i));
    assert_eq!(
        r,
        ValLoc {
            val: -2,
            loc: Some(6)
        }
    );
    let r = reduce_all(&MaxLoc::<i32>::new(), n, |a, i| a.update_max(d[i], i));
    assert_eq!(r, ValLoc { val: 9, loc: Some(5) });
    let f = data_f64();
    let r = reduce_all(&MinLoc::<f64>::new(), n, |a, i| a.update_min(f[i], i));
    assert_eq!(
        r,
        ValLoc {
            val: -2.0,
            loc: Some(6)
        }
    );
    let r = reduce_all(&MaxFirstLoc::<f64>::new(), n, |a, i| a.update_max(f[i], i));
    assert_eq!(
        r,
        ValLoc {
            val: 9.0,
            loc: Some(5)
        }
    );
}

#[test]
fn loc_ties_go_to_lowest_index() {
    // Minimum -1 at 1 and 3; maximum 5 at 2, 4 and 7.
    let d = [3, -1, 5, -1, 5, 0, 2, 5];
    let n = d.len();
    let min_k = |a: &mut ValLoc<i32>, i: usize| a.update_min(d[i], i);
    let max_k = |a: &mut ValLoc<i32>, i: usize| a.update_max(d[i], i);
    let minr = MinLoc::<i32>::new();
    let maxr = MaxLoc::<i32>::new();
    assert_eq!(
        reduce_all(&minr, n, min_k),
        ValLoc {
            val: -1,
            loc: Some(1)
        }
    );
    assert_eq!(reduce_all(&maxr, n, max_k), ValLoc { val: 5, loc: Some(2) });
    // Even if a backend joined right-to-left, the stored indices decide.
    for chunk in [1, 2, 3] {
        assert_eq!(
            fold_chunked_reversed(&minr, n, chunk, &min_k),
            ValLoc {
                val: -1,
                loc: Some(1)
            }
        );
        assert_eq!(
            fold_chunked_reversed(&maxr, n, chunk, &max_k),
            ValLoc { val: 5, loc: Some(2) }
        );
    }
    // Updates arriving in reverse index order inside one accumulator.
    let mut acc = minr.init();
    for i in (0..n).rev() {
        min_k(&mut acc, i);
    }
    assert_eq!(
        acc,
        ValLoc {
            val: -1,
            loc: Some(1)
        }
    );
    // Direct joins with equal values, lower index on either side.
    let lo = ValLoc { val: 7, loc: Some(3) };
    let hi = ValLoc { val: 7, loc: Some(9) };
    {
        let r = MinLoc::<i32>::new();
        let mut a = lo;
        r.join(&mut a, hi);
        assert_eq!(a, lo);
        let mut a = hi;
        r.join(&mut a, lo);
        assert_eq!(a, lo);
    }
    let mut a = hi;
    MaxLoc::<i32>::new().join(&mut a, lo);
    assert_eq!(a, lo);
}

#[test]
fn loc_over_identity_values_reports_an_index() {
    let inf = [f64::INFINITY; 5];
    let r = reduce_all(&MinLoc::<f64>::new(), inf.len(), |a, i| a.update_min(inf[i], i));
    assert_eq!(
        r,
        ValLoc {
            val: f64::INFINITY,
            loc: Some(0)
        }
    );

    let imax = [i32::MAX; 6];
    let r = reduce_all(&MinLoc::<i32>::new(), imax.len(), |a, i| {
        a.update_min(imax[i], i);
    });
    assert_eq!(
        r,
        ValLoc {
            val: i32::MAX,
            loc: Some(0)
        }
    );

    let imin = [i32::MIN; 4];
    let r = reduce_all(&MaxLoc::<i32>::new(), imin.len(), |a, i| {
        a.update_max(imin[i], i);
    });
    assert_eq!(
        r,
        ValLoc {
            val: i32::MIN,
            loc: Some(0)
        }
    );

    let r = reduce_all(&MinMaxLoc::<f64>::new(), inf.len(), |a, i| a.update(inf[i], i));
    assert_eq!((r.min_loc, r.max_loc), (Some(0), Some(0)));
    let r = reduce_all(&MinMaxFirstLastLoc::<f64>::new(), inf.len(), |a, i| {
        a.update_first_last(inf[i], i);
    });
    assert_eq!((r.min_loc, r.max_loc), (Some(0), Some(4)));
}

#[test]
fn loc_nan_loses_to_numbers() {
    let x = [f64::NAN, 3.0, f64::NAN, 1.0, f64::NAN];
    let r = MinLoc::<f64>::new();
    let mut seq = r.init();
    for (i, &v) in x.iter().enumerate() {
        seq.update_min(v, i);
    }
    assert_eq!(
        seq,
        ValLoc {
            val: 1.0,
            loc: Some(3)
        }
    );
    let tree = fold_tree(&r, 0, x.len(), &|a: &mut ValLoc<f64>, i| a.update_min(x[i], i));
    assert_eq!(tree, seq);

    let mut mx = MaxLoc::<f64>::new().init();
    for (i, &v) in x.iter().enumerate() {
        mx.update_max(v, i);
    }
    assert_eq!(
        mx,
        ValLoc {
            val: 3.0,
            loc: Some(1)
        }
    );

    // Only NaNs: a NaN at the lowest index.
    let nan = [f64::NAN; 4];
    let all = fold_tree(&r, 0, nan.len(), &|a: &mut ValLoc<f64>, i| {
        a.update_min(nan[i], i)
    });
    assert!(all.val.is_nan());
    assert_eq!(all.loc, Some(0));
}

#[test]
fn min_max_loc_fold_and_ties() {
    // min -1 at 1, 3; max 9 at 2, 5, 6.
    let d = [3, -1, 9, -1, 5, 9, 9, 0];
    let n = d.len();
    let r = reduce_all(&MinMaxLoc::<i32>::new(), n, |a, i| a.update(d[i], i));
    assert_eq!(
        r,
        MinMaxLocScalar {
            min_val: -1,
            max_val: 9,
            min_loc: Some(1),
            max_loc: Some(2),
        }
    );
    let r = reduce_all(&MinMaxFirstLastLoc::<i32>::new(), n, |a, i| {
        a.update_first_last(d[i], i);
    });
    assert_eq!(
        r,
        MinMaxLocScalar {
            min_val: -1,
            max_val: 9,
            min_loc: Some(1),
            max_loc: Some(6),
        }
    );
    // Reverse join order still agrees.
    for chunk in [1, 2, 3] {
        let k = |a: &mut MinMaxLocScalar<i32>, i: usize| a.update_first_last(d[i], i);
        let rev = fold_chunked_reversed(&MinMaxFirstLastLoc::<i32>::new(), n, chunk, &k);
        assert_eq!((rev.min_loc, rev.max_loc), (Some(1), Some(6)));
        let k = |a: &mut MinMaxLocScalar<i32>, i: usize| a.update(d[i], i);
        let rev = fold_chunked_reversed(&MinMaxLoc::<i32>::new(), n, chunk, &k);
        assert_eq!((rev.min_loc, rev.max_loc), (Some(1), Some(2)));
    }
    let f = data_f64();
    let r = reduce_all(&MinMaxLoc::<f64>::new(), f.len(), |a, i| a.update(f[i], i));
    assert_eq!(
        r,
        MinMaxLocScalar {
            min_val: -2.0,
            max_val: 9.0,
            min_loc: Some(6),
            max_loc: Some(5),
        }
    );
}

#[test]
fn first_loc_last_loc() {
    let d = DATA;
    let n = d.len();
    // Negative values at 1, 3, 6.
    let neg = |i: usize| d[i] < 0;
    let first = reduce_all(&FirstLoc::new(), n, |a, i| {
        if neg(i) {
            FirstLoc::update(a, i);
        }
    });
    assert_eq!(first, Some(1));
    let last = reduce_all(&LastLoc::new(), n, |a, i| {
        if neg(i) {
            LastLoc::update(a, i);
        }
    });
    assert_eq!(last, Some(6));
    let none = reduce_all(&FirstLoc::new(), n, |a, i| {
        if d[i] > 100 {
            FirstLoc::update(a, i);
        }
    });
    assert_eq!(none, None);
    let none = reduce_all(&LastLoc::new(), n, |a, i| {
        if d[i] > 100 {
            LastLoc::update(a, i);
        }
    });
    assert_eq!(none, None);

    let mut a = Some(4);
    FirstLoc::new().join(&mut a, Some(2));
    assert_eq!(a, Some(2));
    let mut a = Some(4);
    LastLoc::new().join(&mut a, Some(2));
    assert_eq!(a, Some(4));
}

// --- logical / bitwise --------------------------------------------------

#[test]
fn logical_and_bitwise() {
    let d = DATA;
    let n = d.len();
    assert!(!reduce_all(&LAnd::new(), n, |a, i| *a = *a && d[i] > 0));
    assert!(reduce_all(&LAnd::new(), n, |a, i| *a = *a && d[i] > -5));
    assert!(reduce_all(&LOr::new(), n, |a, i| *a = *a || d[i] == 9));
    assert!(!reduce_all(&LOr::new(), n, |a, i| *a = *a || d[i] > 9));

    let bits: [u32; 4] = [0b1111_0110, 0b0111_1110, 0b1110_0111, 0b1111_1110];
    assert_eq!(
        reduce_all(&BAnd::<u32>::new(), bits.len(), |a, i| *a &= bits[i]),
        0b0110_0110
    );
    assert_eq!(
        reduce_all(&BOr::<u32>::new(), bits.len(), |a, i| *a |= bits[i]),
        0b1111_1111
    );
    let flags = [true, true, false];
    assert!(!reduce_all(&BAnd::<bool>::new(), 3, |a, i| *a &= flags[i]));
    assert!(reduce_all(&BOr::<bool>::new(), 3, |a, i| *a |= flags[i]));
}

// --- custom -------------------------------------------------------------

#[test]
fn custom_concatenation_keeps_index_order() {
    let r = Custom::new(Vec::new, |dst: &mut Vec<usize>, src| dst.extend(src));
    let d = DATA;
    let odd = reduce_all(&r, d.len(), |a, i| {
        if d[i] % 2 != 0 {
            a.push(i);
        }
    });
    assert_eq!(odd, [0, 1, 3, 4, 5]);
    check_identity(&r, vec![4, 2]);
    let copy = r;
    assert_eq!(copy.init(), Vec::<usize>::new());
}

#[test]
fn custom_mean_with_finalize() {
    let r = Custom::with_finalize(
        || (0u32, 0.0f64),
        |d: &mut (u32, f64), s| {
            d.0 += s.0;
            d.1 += s.1;
        },
        |v: &mut (u32, f64)| {
            if v.0 > 0 {
                v.1 /= f64::from(v.0);
            }
        },
    );
    let f = data_f64();
    let mean = reduce_all(&r, f.len(), |a, i| {
        a.0 += 1;
        a.1 += f[i];
    });
    assert_eq!(mean, (8, 23.0 / 8.0));
    check_identity(&r, (3, 1.5));
    // Finalize also runs on the identity of an empty range.
    assert_eq!(reduce_all(&r, 0, |_, _| {}), (0, 0.0));
}

#[test]
fn custom_finalize_runs_once() {
    let r = Custom::with_finalize(|| 0i64, |d: &mut i64, s| *d += s, |v: &mut i64| *v *= 10);
    assert_eq!(reduce_all(&r, 4, |a, i| *a += i as i64), 60);
    assert_eq!(reduce_all(&r, 0, |_, _| {}), 0);
    // Without finalize nothing happens at the end.
    let plain = Custom::new(|| 0i64, |d: &mut i64, s| *d += s);
    let mut v = 5;
    plain.finalize(&mut v);
    assert_eq!(v, 5);
}

// --- misc ---------------------------------------------------------------

fn total_via_ref<R: Reducer>(r: R, xs: &[R::Value]) -> R::Value
where
    R::Value: Copy,
{
    let mut a = r.init();
    for &x in xs {
        r.join(&mut a, x);
    }
    r.finalize(&mut a);
    a
}

#[test]
fn reducers_by_reference() {
    let s = Sum::<i32>::new();
    assert_eq!(total_via_ref(&s, &DATA), 23);
    assert_eq!(total_via_ref(&&s, &DATA), 23);
    let dynr: &dyn Reducer<Value = i32> = &Max::<i32>::new();
    assert_eq!(total_via_ref(dynr, &DATA), 9);
    let fin = Custom::with_finalize(|| 0i32, |d: &mut i32, s| *d += s, |v: &mut i32| *v = -*v);
    assert_eq!(total_via_ref(&fin, &DATA), -23);
}

#[test]
fn send_sync_debug_default() {
    fn assert_send_sync<T: Send + Sync + Copy + Default + Debug>() {}
    // PhantomData<fn() -> T>: no bounds on T for these traits.
    assert_send_sync::<Sum<std::rc::Rc<i32>>>();
    assert_send_sync::<MinLoc<std::cell::Cell<u8>>>();
    assert_send_sync::<FirstLoc>();
    assert_send_sync::<LAnd>();
    assert_eq!(format!("{:?}", Sum::<f64>::new()), "Sum<f64>");
    assert_eq!(
        format!("{:?}", MinMaxFirstLastLoc::<i32>::default()),
        "MinMaxFirstLastLoc<i32, usize>"
    );
    assert_eq!(format!("{:?}", LOr::new()), "LOr");
    let c = Custom::new(|| 1u8, |_: &mut u8, _| {});
    assert_eq!(format!("{c:?}"), "Custom<u8>");
}
