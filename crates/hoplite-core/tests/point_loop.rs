//! The point loops' shares: every point once, and every launch style through the same loop.

use hoplite_core::point_loop::PointSet;
use hoplite_core::{IterationOrder, MDRangePolicy, Max, RangePolicy, Sum, View, parallel_reduce};
use hoplite_serial::Serial;

#[test]
fn a_tile_share_visits_its_tiles_points_once() {
    let policy = MDRangePolicy::new(Serial::default(), [1, 2], [6, 9])
        .with_tiles([2, 3])
        .with_iteration(IterationOrder::Left, IterationOrder::Right);
    let mut seen = Vec::new();
    for part in [0..2, 2..policy.num_tiles()] {
        // SAFETY: two disjoint tile ranges of the policy, visited one after the other on this
        // thread; the tokens do not leave the closure.
        unsafe { policy.tile_share(part).visit(|p| seen.push(*p)) };
    }
    seen.sort_unstable();
    let mut all: Vec<[usize; 2]> = (1..6).flat_map(|i| (2..9).map(move |j| [i, j])).collect();
    all.sort_unstable();
    assert_eq!(seen, all);
}

#[test]
fn a_tile_share_in_lanes_visits_its_points_once_in_the_same_order() {
    for (tiles, order) in [([2, 5], IterationOrder::Right), ([3, 3], IterationOrder::Left)] {
        let policy = MDRangePolicy::new(Serial::default(), [1, 2], [6, 13])
            .with_tiles(tiles)
            .with_iteration(IterationOrder::Left, order);
        let share = || policy.tile_share(0..policy.num_tiles());
        let (mut plain, mut laned) = (Vec::new(), Vec::new());
        // SAFETY: each visit of the whole share runs alone, on this thread; the tokens do not
        // leave the closures.
        unsafe {
            share().visit(|p| plain.push(*p));
            share().visit_lanes(|p, lane| laned.push((*p, lane)));
        }
        assert_eq!(laned.iter().map(|&(p, _)| p).collect::<Vec<_>>(), plain);
        assert!(
            laned
                .iter()
                .all(|&(_, lane)| lane < hoplite_core::point_loop::LANES)
        );
        assert_eq!(plain.len(), 5 * 11);
    }
}

/// A named kernel function: no inline attribute, passed by name and by reference.
fn square_of(i: hoplite_core::Idx<'_>, acc: &mut u64) {
    *acc += (*i as u64) * (*i as u64);
}

#[test]
#[expect(
    clippy::needless_borrows_for_generic_args,
    reason = "`&fn` is one of the launch styles tested"
)]
fn reductions_in_lanes_match_the_sequential_fold() {
    // Lengths around the lane count, so that whole groups and the rest both occur.
    for n in [0usize, 1, 3, 4, 5, 8, 9, 1001] {
        let expected: u64 = (0..n as u64).map(|i| i * i).sum();
        let range = || RangePolicy::new(Serial::default(), 0..n);
        assert_eq!(
            parallel_reduce("fn", range(), square_of, Sum::new()).expect("reduce"),
            expected
        );
        assert_eq!(
            parallel_reduce("&fn", range(), &square_of, Sum::new()).expect("reduce"),
            expected
        );
        let x: View<i64, 1> = View::from_slice(
            "x",
            [n],
            &(0..n as i64).map(|i| (i * 37) % 101).collect::<Vec<_>>(),
        )
        .expect("x");
        let max = parallel_reduce(
            "max",
            (range(), (x.read(),)),
            |(i, (x,)), acc: &mut i64| *acc = (*acc).max(x.get(i)),
            Max::new(),
        )
        .expect("max");
        assert_eq!(
            max,
            (0..n as i64).map(|i| (i * 37) % 101).max().unwrap_or(i64::MIN)
        );
    }
}
