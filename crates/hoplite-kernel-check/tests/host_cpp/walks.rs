//! The walks of reduce entries (`ReduceWalk`): under the blocked walk, which hoplite-cuda
//! launches for a reducer whose join is not commutative, each thread's partial covers the
//! contiguous block `ReduceWalk::offsets` gives it (ranges, MDRanges of ranks 2 to 4 in both
//! index orders, leagues), and hoplite-cuda's host join of the partials in thread order
//! (`reduce::join_partials`) gives the whole space in index order; under the strided walk a
//! partial covers every `T`-th index, which a non-commutative join cannot take.

use hoplite::Custom;
use hoplite_cuda::reduce::{ReduceWalk, join_partials};

use super::*;

const NO_RUN: i64 = -1;
const BROKEN_RUN: i64 = -2;
const LOW: i64 = 0xffff_ffff;

/// The run the kernels keep for the numbers `seen`, in order.
fn run_of(seen: impl IntoIterator<Item = u64>) -> i64 {
    let mut run = NO_RUN;
    for k in seen {
        let k = k as i64;
        run = if run == NO_RUN {
            (k << 32) + k + 1
        } else if run >= 0 && run & LOW == k {
            run + 1
        } else {
            BROKEN_RUN
        };
    }
    run
}

/// The conformance check's join of two runs, `dst` before `src`: not commutative.
fn concat() -> impl hoplite::Reducer<Value = i64> {
    Custom::new(
        || NO_RUN,
        |dst: &mut i64, src: i64| {
            *dst = if src == NO_RUN {
                *dst
            } else if *dst == NO_RUN {
                src
            } else if *dst >= 0 && src >= 0 && *dst & LOW == src >> 32 {
                (*dst >> 32 << 32) + (src & LOW)
            } else {
                BROKEN_RUN
            };
        },
    )
}

fn as_i64(partials: Vec<Value>) -> Vec<i64> {
    partials
        .into_iter()
        .map(|p| match p {
            Value::I64(v) => v,
            other => panic!("unexpected partial {other:?}"),
        })
        .collect()
}

/// Launches `m` over `begin..end` (or a league of `end[0]` teams) with `walk` and returns the
/// partials, one per launched thread in thread order.
fn walked(
    m: &HostModule,
    grid: Grid,
    range: (&[usize], &[usize]),
    arrays: &mut [HostArray<'_>],
    walk: ReduceWalk,
) -> Vec<i64> {
    let (outcome, partials) = m
        .launch_reduce_walk(grid, range, arrays, &[], Value::I64(NO_RUN), walk)
        .expect("arguments match");
    assert_eq!(outcome, Outcome::Completed);
    as_i64(partials)
}

/// Checks the partials of a walk over `len` points numbered `first + offset`: each thread's
/// is the run of its offsets; joined in order, the blocked walk's give `first..first + len`.
fn check_partials(partials: &[i64], walk: ReduceWalk, first: u64, len: u64, what: &str) {
    let threads = partials.len() as u64;
    for (t, &got) in partials.iter().enumerate() {
        let want = run_of(walk.offsets(len, threads, t as u64).map(|o| first + o));
        assert_eq!(got, want, "{what}, {walk:?}: thread {t} of {threads}");
    }
    let joined = join_partials(&concat(), partials.iter().copied());
    let whole = if len == 0 {
        NO_RUN
    } else {
        ((first as i64) << 32) + (first + len) as i64
    };
    match walk {
        ReduceWalk::Blocked => assert_eq!(joined, whole, "{what}: joined in index order"),
        // More points than threads, and more than one thread: thread 0 skips indices.
        ReduceWalk::Strided if len > threads && threads > 1 => assert_eq!(joined, BROKEN_RUN, "{what}"),
        ReduceWalk::Strided => {}
    }
}

const WALKS: [ReduceWalk; 2] = [ReduceWalk::Blocked, ReduceWalk::Strided];

#[test]
fn blocked_ranges_join_in_index_order() -> Result<()> {
    let Some(m) = module::<index_run>() else {
        return Ok(());
    };
    for grid in [ONE_BLOCK, GRID_1D, GRID_2D, GRID_3D] {
        for range in [0..0, 0..1, 5..40, 0..12, 3..100, 0..37, 7..8] {
            for walk in WALKS {
                let partials = walked(&m, grid, (&[range.start], &[range.end]), &mut [], walk);
                assert_eq!(partials.len(), grid.thread_count());
                let what = format!("{range:?} on {grid:?}");
                check_partials(&partials, walk, range.start as u64, range.len() as u64, &what);
            }
        }
    }
    Ok(())
}

/// The number of each point of the box `begin..end` of an array of `extents`, flattened with
/// the last index fastest (`column_major`: the first), at the array's storage order.
fn numbers<const R: usize>(
    extents: [usize; R],
    begin: [usize; R],
    end: [usize; R],
    column_major: bool,
) -> Vec<i64> {
    let len = |d: usize| end[d] - begin[d];
    let total: usize = extents.iter().product();
    let mut out = vec![-100; total];
    for (storage, slot) in out.iter_mut().enumerate() {
        // The array index at `storage`.
        let mut idx = [0; R];
        let mut rest = storage;
        let dims: Vec<usize> = if column_major {
            (0..R).collect()
        } else {
            (0..R).rev().collect()
        };
        for &d in &dims {
            idx[d] = rest % extents[d];
            rest /= extents[d];
        }
        if (0..R).all(|d| (begin[d]..end[d]).contains(&idx[d])) {
            let mut number = 0;
            for &d in dims.iter().rev() {
                number = number * len(d) + (idx[d] - begin[d]);
            }
            *slot = number as i64;
        }
    }
    out
}

fn check_box<K: DeviceKernel, const R: usize>(
    grid: Grid,
    extents: [usize; R],
    begin: [usize; R],
    end: [usize; R],
) {
    let Some(m) = module::<K>() else {
        return;
    };
    let len: usize = (0..R).map(|d| end[d] - begin[d]).product();
    for column_major in [false, true] {
        // The order the launch walks in follows the array's layout: the entry's `hl_order`.
        let mut number = numbers(extents, begin, end, column_major);
        for walk in WALKS {
            // Ranks up to 3 stride each dimension on an axis of its own: no flat offsets.
            if walk == ReduceWalk::Strided && R <= 3 {
                continue;
            }
            let array = if column_major {
                HostArray::column_major(&mut number, &extents)
            } else {
                HostArray::new(&mut number, &extents)
            };
            let partials = walked(&m, grid, (&begin, &end), &mut [array], walk);
            let what = format!("{begin:?}..{end:?}, column-major {column_major}, on {grid:?}");
            check_partials(&partials, walk, 0, len as u64, &what);
        }
    }
}

#[test]
fn blocked_mdranges_join_in_index_order() -> Result<()> {
    check_box::<point_run_2, 2>(GRID_2D, [6, 10], [1, 2], [5, 9]);
    check_box::<point_run_2, 2>(GRID_1D, [6, 10], [0, 0], [6, 10]);
    check_box::<point_run_2, 2>(GRID_3D, [6, 10], [2, 3], [2, 9]);
    check_box::<point_run_3, 3>(GRID_3D, [3, 4, 5], [0, 1, 0], [3, 4, 5]);
    check_box::<point_run_3, 3>(GRID_2D, [3, 4, 5], [1, 0, 2], [3, 4, 4]);
    check_box::<point_run_4, 4>(GRID_1D, [2, 3, 2, 3], [0, 0, 0, 0], [2, 3, 2, 3]);
    check_box::<point_run_4, 4>(GRID_2D, [2, 3, 2, 3], [1, 0, 1, 1], [2, 3, 2, 3]);
    Ok(())
}

#[test]
fn blocked_leagues_join_by_runs_of_teams() -> Result<()> {
    let Some(m) = module::<league_run>() else {
        return Ok(());
    };
    for league in [0, 1, 2, 7, 10, 31] {
        for walk in WALKS {
            // One thread a team: the partials are the blocks', in block order.
            let partials = walked(&m, team_grid(3, 1), (&[0], &[league]), &mut [], walk);
            check_partials(&partials, walk, 0, league as u64, &format!("{league} teams"));
            // Teams of 2: both threads of a block run the block's teams.
            let partials = walked(&m, team_grid(3, 2), (&[0], &[league]), &mut [], walk);
            for (t, &got) in partials.iter().enumerate() {
                let want = run_of(walk.offsets(league as u64, 3, t as u64 / 2));
                assert_eq!(got, want, "{league} teams of 2, {walk:?}: thread {t}");
            }
        }
    }
    Ok(())
}

/// The conformance check `reducer::custom_join_keeps_index_order` as Cuda runs it, on the
/// CPU: its own `#[kernel]` (`extend_run`), the grid a launch of 1000 indices gets (4 blocks
/// of 256 threads, one partial each), the blocked walk the check's non-commutative reducer
/// asks for, and hoplite-cuda's host join.
#[test]
fn the_index_order_check_passes_with_the_blocked_walk() -> Result<()> {
    let Some(m) = module::<hoplite_conformance::reducer::extend_run>() else {
        return Ok(());
    };
    let grid = Grid {
        blocks: [4, 1, 1],
        threads: [256, 1, 1],
    };
    for range in [0..1000, 3..1000, 0..1, 7..7] {
        for walk in WALKS {
            let partials = walked(&m, grid, (&[range.start], &[range.end]), &mut [], walk);
            let what = format!("the check's {range:?}");
            check_partials(&partials, walk, range.start as u64, range.len() as u64, &what);
        }
    }
    Ok(())
}
