//! Property tests: random subview chains against a naive index-mapping model, and borrow
//! conflicts of random subviews against the sets of elements they actually cover.

use std::collections::HashSet;

use hoplite_core::{ArrayLayout, Error, LayoutLeft, LayoutRight, LayoutStride, Slice, View};
use proptest::prelude::*;

/// The model of a view of a rank-3 root: for each kept dimension the root dimension it walks
/// and the root index of its first element; fixed root indices for dropped dimensions.
#[derive(Clone, Debug)]
struct Model {
    /// Per kept dimension: (root dimension, root start, extent).
    dims: Vec<(usize, usize, usize)>,
    /// Root index of each dropped root dimension.
    fixed: [Option<usize>; 3],
}

impl Model {
    fn root(extents: [usize; 3]) -> Self {
        Model {
            dims: (0..3).map(|d| (d, 0, extents[d])).collect(),
            fixed: [None; 3],
        }
    }

    fn extents(&self) -> Vec<usize> {
        self.dims.iter().map(|d| d.2).collect()
    }

    /// Applies `slices` the naive way; `None` where the library must report an error.
    fn apply(&self, slices: &[Slice]) -> Option<Model> {
        let mut next = Model {
            dims: Vec::new(),
            fixed: self.fixed,
        };
        for (&(root, start, extent), s) in self.dims.iter().zip(slices) {
            match s {
                Slice::All => next.dims.push((root, start, extent)),
                Slice::Range(r) => {
                    if r.start > r.end || r.end > extent {
                        return None;
                    }
                    next.dims.push((root, start + r.start, r.end - r.start));
                }
                Slice::Index(i) => {
                    if *i >= extent {
                        return None;
                    }
                    next.fixed[root] = Some(start + i);
                }
            }
        }
        Some(next)
    }

    /// The root index of a multi-index of this model.
    fn to_root(&self, index: &[usize]) -> [usize; 3] {
        let mut out = [0; 3];
        for (d, f) in self.fixed.iter().enumerate() {
            if let Some(v) = f {
                out[d] = *v;
            }
        }
        for (&(root, start, _), &i) in self.dims.iter().zip(index) {
            out[root] = start + i;
        }
        out
    }

    /// Every root index this model covers.
    fn elements(&self) -> HashSet<[usize; 3]> {
        let e = self.extents();
        let total: usize = e.iter().product();
        (0..total)
            .map(|mut n| {
                let mut idx = vec![0; e.len()];
                for d in (0..e.len()).rev() {
                    idx[d] = n % e[d];
                    n /= e[d];
                }
                self.to_root(&idx)
            })
            .collect()
    }
}

/// One raw choice per dimension, interpreted against the current extent.
#[derive(Clone, Copy, Debug)]
struct Pick {
    kind: u8,
    a: usize,
    b: usize,
}

fn picks(n: usize) -> impl Strategy<Value = Vec<Pick>> {
    prop::collection::vec((0u8..20, 0usize..8, 0usize..8), n)
        .prop_map(|v| v.into_iter().map(|(kind, a, b)| Pick { kind, a, b }).collect())
}

/// A slice that keeps the dimension: mostly All or a non-empty range, now and then an empty
/// range, rarely one out of bounds.
fn keep_slice(p: Pick, extent: usize) -> Slice {
    match p.kind {
        0..=5 => Slice::All,
        6..=11 if extent > 0 => {
            let lo = p.a % extent;
            Slice::Range(lo..lo + 1 + p.b % (extent - lo))
        }
        12..=17 if extent > 1 => {
            // Trims at most one element at either end.
            let lo = p.a % 2;
            Slice::Range(lo..(extent - p.b % 2).max(lo + 1))
        }
        12..=17 => Slice::All,
        18 if p.b % 2 == 1 => Slice::All,
        6..=18 => {
            // An empty range (or, for extent 0, the only range there is).
            let lo = p.a % (extent + 1);
            Slice::Range(lo..lo)
        }
        _ => {
            if p.a.is_multiple_of(2) {
                Slice::Range(p.b..extent + 1 + p.a)
            } else {
                let lo = extent.min(p.a + 1);
                Slice::Range(lo..lo.saturating_sub(1 + p.b % 2))
            }
        }
    }
}

/// A slice that drops the dimension; out of bounds rarely (always for extent 0).
fn drop_slice(p: Pick, extent: usize) -> Slice {
    if p.kind == 19 || extent == 0 {
        Slice::Index(extent + p.a)
    } else {
        Slice::Index(p.a % extent)
    }
}

/// A subview and its model, or `None` where both agree a step fails.
type Stepped<const Q: usize> = Option<(View<i64, Q, LayoutStride>, Model)>;

/// Takes one subview step of the library and the model side by side. `Ok(None)` when both
/// agree the step is an error.
fn step<const R: usize, const Q: usize, L: ArrayLayout>(
    view: &View<i64, R, L>,
    model: &Model,
    slices: [Slice; R],
    root_strides: [usize; 3],
) -> Result<Stepped<Q>, TestCaseError> {
    let expected = model.apply(&slices);
    let got = view.subview::<Q, LayoutStride>(slices.clone());
    match (got, expected) {
        (Ok(v), Some(m)) => {
            prop_assert_eq!(&v.extents()[..], &m.extents()[..], "{:?}", slices);
            let strides: Vec<usize> = m.dims.iter().map(|&(root, _, _)| root_strides[root]).collect();
            prop_assert_eq!(&v.strides()[..], &strides[..], "{:?}", slices);
            prop_assert!(v.same_allocation(view));
            Ok(Some((v, m)))
        }
        (Err(Error::SubviewOutOfBounds { label, .. }), None) => {
            prop_assert_eq!(label, "prop");
            Ok(None)
        }
        (got, expected) => {
            let got = got.map(|v| v.extents().to_vec());
            Err(TestCaseError::fail(format!(
                "{slices:?}: library {got:?}, model {expected:?}"
            )))
        }
    }
}

/// Writes a distinct value at every index of `view` and checks that exactly the model's root
/// elements received them.
fn check_placement<const Q: usize>(
    root: &View<i64, 3, impl ArrayLayout>,
    view: &View<i64, Q, LayoutStride>,
    model: &Model,
) -> Result<(), TestCaseError> {
    root.fill_host(0)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let e = view.extents();
    let total: usize = e.iter().product();
    let mut expected = Vec::with_capacity(total);
    {
        let mut w = view
            .host_write()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        for n in 0..total {
            let mut idx = [0; Q];
            let mut rest = n;
            for d in (0..Q).rev() {
                idx[d] = rest % e[d];
                rest /= e[d];
            }
            let value = i64::try_from(n).map_err(|e| TestCaseError::fail(e.to_string()))? + 1;
            w.set(idx, value);
            expected.push((model.to_root(&idx), value));
        }
    }
    let r = root.host_read().map_err(|e| TestCaseError::fail(e.to_string()))?;
    for (at, value) in &expected {
        prop_assert_eq!(r.get(*at), *value, "root {:?}", at);
    }
    let re = root.extents();
    let mut nonzero = 0;
    for i in 0..re[0] {
        for j in 0..re[1] {
            for k in 0..re[2] {
                nonzero += usize::from(r.get([i, j, k]) != 0);
            }
        }
    }
    prop_assert_eq!(nonzero, expected.len());
    Ok(())
}

/// The chain: rank 3 (ranges) → rank 2 (an index at a random position, ranges elsewhere) →
/// rank 2 (ranges) → rank 1 (an index at a random position).
fn run_chain<L: ArrayLayout>(
    root: &View<i64, 3, L>,
    root_strides: [usize; 3],
    p: &[Pick],
) -> Result<(), TestCaseError> {
    let m0 = Model::root(root.extents());
    let e = root.extents();
    let s1: [Slice; 3] = std::array::from_fn(|d| keep_slice(p[d], e[d]));
    let Some((v1, m1)) = step::<3, 3, L>(root, &m0, s1, root_strides)? else {
        return Ok(());
    };
    check_placement(root, &v1, &m1)?;
    let e = v1.extents();
    let pos = p[3].a % 3;
    let s2: [Slice; 3] = std::array::from_fn(|d| {
        if d == pos {
            drop_slice(p[3], e[d])
        } else {
            keep_slice(p[4 + d], e[d])
        }
    });
    let Some((v2, m2)) = step::<3, 2, LayoutStride>(&v1, &m1, s2, root_strides)? else {
        return Ok(());
    };
    check_placement(root, &v2, &m2)?;
    let e = v2.extents();
    let s3: [Slice; 2] = std::array::from_fn(|d| keep_slice(p[7 + d], e[d]));
    let Some((v3, m3)) = step::<2, 2, LayoutStride>(&v2, &m2, s3, root_strides)? else {
        return Ok(());
    };
    check_placement(root, &v3, &m3)?;
    let e = v3.extents();
    let pos = p[9].a % 2;
    let s4: [Slice; 2] = std::array::from_fn(|d| {
        if d == pos {
            drop_slice(p[9], e[d])
        } else {
            keep_slice(p[10 + d], e[d])
        }
    });
    let Some((v4, m4)) = step::<2, 1, LayoutStride>(&v3, &m3, s4, root_strides)? else {
        return Ok(());
    };
    check_placement(root, &v4, &m4)
}

fn extents3() -> impl Strategy<Value = [usize; 3]> {
    (1usize..7, 1usize..7, 1usize..7).prop_map(|(a, b, c)| [a, b, c])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn subview_chains_match_the_model(e in extents3(), layout in 0u8..3, p in picks(12)) {
        match layout {
            0 => {
                let root: View<i64, 3, LayoutRight> = View::new("prop", e).expect("alloc");
                run_chain(&root, [e[1] * e[2], e[2], 1], &p)?;
            }
            1 => {
                let root: View<i64, 3, LayoutLeft> = View::new("prop", e).expect("alloc");
                run_chain(&root, [1, e[0], e[0] * e[1]], &p)?;
            }
            _ => {
                // Column-major order with padding: neither Right nor Left.
                let s = [3, 3 * e[0] + 2, (3 * e[0] + 2) * e[1] + 1];
                let root: View<i64, 3, LayoutStride> = View::with_strides("prop", e, s).expect("alloc");
                run_chain(&root, s, &p)?;
            }
        }
    }

    /// Writers of two random subviews conflict exactly when they share an element.
    #[test]
    fn writer_conflicts_match_shared_elements(e in extents3(), pa in picks(6), pb in picks(6)) {
        let root: View<i64, 3> = View::new("prop", e).expect("alloc");
        let m0 = Model::root(e);
        let make = |p: &[Pick]| -> Option<(View<i64, 2, LayoutStride>, Model)> {
            let pos = p[0].a % 3;
            let slices: [Slice; 3] = std::array::from_fn(|d| {
                if d == pos {
                    drop_slice(Pick { kind: 0, ..p[0] }, e[d])
                } else {
                    keep_slice(Pick { kind: p[1 + d].kind % 19, ..p[1 + d] }, e[d])
                }
            });
            let m = m0.apply(&slices)?;
            let v = root.subview(slices).expect("valid by construction");
            Some((v, m))
        };
        let (Some((va, ma)), Some((vb, mb))) = (make(&pa), make(&pb)) else {
            return Ok(());
        };
        let shared = !ma.elements().is_disjoint(&mb.elements());
        let wa = va.write();
        let wb = vb.write();
        prop_assert!(wa.conflict().is_none());
        prop_assert_eq!(wb.conflict().is_some(), shared, "{:?} / {:?}", ma, mb);
        drop(wb);
        // Readers never conflict with readers; a reader conflicts with the writer iff shared.
        let rb = vb.read();
        prop_assert_eq!(rb.conflict().is_some(), shared);
        drop((wa, rb));
        let (ra, rb) = (va.read(), vb.read());
        prop_assert!(ra.conflict().is_none() && rb.conflict().is_none());
    }
}
