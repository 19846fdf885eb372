// Over 800 lines: the one catalogue of `#[kernel]`s that every kernel-check test binary uses.
//! The kernels the checks run through both paths: native Rust and the generated CUDA C.

#![allow(dead_code, reason = "each test binary uses some of the kernels")]

use hoplite::prelude::*;
use hoplite::{BoundLookup, BoundReader, BoundTeamSlots, BoundWriter, kernel};
use hoplite_core::BoundAtomic;
use hoplite_core::ValLoc;

#[kernel]
pub fn triad(
    i: Idx<'_>,
    a: BoundWriter<'_, f64, 1>,
    b: BoundReader<'_, f64, 1>,
    c: BoundReader<'_, f64, 1>,
    s: f64,
) {
    a.set(i, b.get(i) + s * c.get(i));
}

#[kernel]
pub fn dot(i: Idx<'_>, x: BoundReader<'_, f64, 1>, y: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc += x.get(i) * y.get(i);
}

#[kernel]
pub fn laplace(ij: MdIdx<'_, 2>, out: BoundWriter<'_, f64, 2>, u: BoundReader<'_, f64, 2>) {
    let sum =
        u.neighbor(ij, [-1, 0]) + u.neighbor(ij, [1, 0]) + u.neighbor(ij, [0, -1]) + u.neighbor(ij, [0, 1]);
    out.set(ij, sum - 4.0 * u.get(ij));
}

#[kernel]
pub fn index_code(ijk: MdIdx<'_, 3>, out: BoundWriter<'_, i64, 3>, scale: i64) {
    let v = (ijk[0] * 100 + ijk[1] * 10 + ijk[2]) as i64;
    out.set(ijk, v * scale);
}

/// Rank 4: flattened onto the grid's x.
#[kernel]
pub fn index_code4(t: MdIdx<'_, 4>, out: BoundWriter<'_, u32, 4>) {
    out.set(t, (t[0] * 1000 + t[1] * 100 + t[2] * 10 + t[3]) as u32);
}

#[kernel]
#[allow(
    clippy::manual_is_multiple_of,
    reason = "the kernel subset has `%`, not `is_multiple_of`"
)]
pub fn collatz_steps(i: Idx<'_>, acc: &mut u64) {
    let mut n = *i as u64 + 1;
    let mut steps = 0;
    while n != 1 {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    *acc += steps;
}

/// Integer semantics where C differs from Rust: wrapping, signed `/` and `%`, masked shifts.
#[kernel]
pub fn int_ops(
    i: Idx<'_>,
    out: BoundWriter<'_, i32, 1>,
    a: BoundReader<'_, i32, 1>,
    b: BoundReader<'_, i32, 1>,
) {
    let x = a.get(i);
    let y = b.get(i);
    let mut r = x.wrapping_mul(1);
    r = r * y + x - y;
    r ^= x << (y & 63);
    r = r.wrapping_add(x >> (y as u32));
    if y != 0 && !(x == i32::MIN && y == -1) {
        r += x / y + x % y;
    }
    out.set(i, r);
}

/// Unsigned and 64-bit arithmetic, and `usize` from a token.
#[kernel]
pub fn wide_ops(i: Idx<'_>, out: BoundWriter<'_, u64, 1>, a: BoundReader<'_, u64, 1>) {
    let x = a.get(i);
    let k = *i;
    let mut h = x * 0x9e37_79b9_7f4a_7c15 + k as u64;
    h ^= h >> 29;
    h = h - (x << 63) - 1;
    let small = (h as u32) / 7 + (x as u32) % 11;
    out.set(i, h ^ small as u64);
}

/// `as` casts: float -> int saturates, NaN is 0; int -> int truncates; int -> float rounds.
#[kernel]
pub fn casts(i: Idx<'_>, out: BoundWriter<'_, i64, 1>, x: BoundReader<'_, f64, 1>) {
    let v = x.get(i);
    let a = v as i32 as i64;
    let b = v as u32 as i64;
    let c = (v as f32) as i64;
    let d = v as u64 as i32;
    out.set(i, a * 3 + b * 5 + c * 7 + d as i64);
}

/// Floats: the math functions, NaN and infinities.
#[kernel]
pub fn float_math(
    i: Idx<'_>,
    out: BoundWriter<'_, f64, 1>,
    x: BoundReader<'_, f64, 1>,
    y: BoundReader<'_, f32, 1>,
) {
    let v = x.get(i);
    let w = y.get(i);
    let a = v.abs().sqrt() + v.exp().ln() + v.sin() * v.cos();
    let b = v.max(1.5) + v.min(f64::MAX) * 0.5 + f64::powi(v, 3) + v.abs().powf(0.5) + v.mul_add(2.0, 1.0);
    let c = (w.sqrt() + w.max(0.25) * w.powi(2)) as f64;
    out.set(i, a + b + c % 3.0);
}

/// The maximum, skipping NaN like `f64::max`.
#[kernel]
pub fn max_of(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut f64) {
    *acc = acc.max(x.get(i));
}

/// Loops, `break`, `continue`, inclusive ranges to the type's end, early return.
#[kernel]
pub fn control(i: Idx<'_>, out: BoundWriter<'_, i64, 1>, limit: u32) {
    let k = *i;
    if k == 3 {
        out.set(i, -1);
        return;
    }
    let mut total = 0i64;
    for j in 0..k {
        if j % 3 == 1 {
            continue;
        }
        if j > 40 {
            break;
        }
        total += j as i64;
    }
    let mut count = 0;
    for v in u32::MAX - 2..=u32::MAX {
        count += (v - (u32::MAX - 2)) as i64;
    }
    for _ in 5..=limit {
        count += 1;
    }
    let mut m = 0u32;
    loop {
        m += 1;
        if m >= 4 {
            break;
        }
    }
    out.set(i, total * 100 + count * 10 + m as i64);
}

/// Division by zero: the native kernel panics, the device traps.
#[kernel]
pub fn divide(i: Idx<'_>, out: BoundWriter<'_, i32, 1>, by: i32) {
    out.set(i, *i as i32 / by);
}

/// Atomic scatter-add: a histogram.
#[kernel]
pub fn histogram(i: Idx<'_>, bins: BoundAtomic<'_, u64, 1>, x: BoundReader<'_, u32, 1>, nbins: usize) {
    bins.fetch_add(x.get(i) as usize % nbins, 1);
}

/// A sum of `i32` that overflows and wraps.
#[kernel]
pub fn wrapping_sum(i: Idx<'_>, x: BoundReader<'_, i32, 1>, acc: &mut i32) {
    *acc += x.get(i) * 3;
}

/// Reads with plain indices (checked) and a reader of rank 2 with `[i, j]`.
#[kernel]
pub fn transpose_sum(
    ij: MdIdx<'_, 2>,
    out: BoundWriter<'_, f32, 2>,
    m: BoundReader<'_, f32, 2>,
    v: BoundReader<'_, f32, 1>,
) {
    let r = ij[0];
    let c = ij[1];
    out.set(ij, m.get([c, r]) + v.get(r) * 2.0f32 - v.get(c));
}

/// An exclusive prefix sum (store, then add).
#[kernel]
pub fn exclusive_prefix(
    i: Idx<'_>,
    out: BoundWriter<'_, i64, 1>,
    x: BoundReader<'_, i64, 1>,
    partial: &mut i64,
    is_final: bool,
) {
    if is_final {
        out.set(i, *partial);
    }
    *partial += x.get(i);
}

/// An inclusive prefix sum of floats (add, then store).
#[kernel]
pub fn inclusive_prefix(
    i: Idx<'_>,
    out: BoundWriter<'_, f64, 1>,
    x: BoundReader<'_, f64, 1>,
    partial: &mut f64,
    is_final: bool,
) {
    *partial += x.get(i);
    if is_final {
        out.set(i, *partial);
    }
}

/// The minimum and its index; ties go to the lowest index.
#[kernel]
pub fn argmin(i: Idx<'_>, x: BoundReader<'_, f64, 1>, acc: &mut ValLoc<f64>) {
    acc.update_min(x.get(i), *i);
}

/// The maximum of `|x - shift|` and its index, in integers.
#[kernel]
pub fn argmax_distance(i: Idx<'_>, x: BoundReader<'_, i32, 1>, shift: i32, acc: &mut ValLoc<i32>) {
    acc.update_max((x.get(i) - shift).abs(), *i);
}

/// Row sums by teams: each thread sums a strided part of its team's row, the team adds the
/// parts, and rank 0 stores the total (and rank 0's own part, broadcast) through an atomic.
#[kernel]
pub fn row_sums(m: &impl TeamMember, sums: BoundAtomic<'_, i64, 1>, a: BoundReader<'_, i64, 2>, cols: usize) {
    let row = m.league_rank();
    let mut part = 0i64;
    let mut j = m.team_rank();
    while j < cols {
        part += a.get([row, j]);
        j += m.team_size();
    }
    let total = m.team_reduce(&Sum::new(), part);
    let first = m.team_broadcast(part, 0);
    m.team_barrier();
    if m.team_rank() == 0 {
        sums.fetch_add(row, total * 1000 + first);
    }
}

/// The squared Frobenius norm by teams: a team reduces its row, rank 0 adds it.
#[kernel]
pub fn team_norm(m: &impl TeamMember, a: BoundReader<'_, f64, 2>, cols: usize, acc: &mut f64) {
    let row = m.league_rank();
    let mut part = 0.0;
    let mut j = m.team_rank();
    while j < cols {
        let v = a.get([row, j]);
        part += v * v;
        j += m.team_size();
    }
    let total = m.team_reduce(&Sum::new(), part);
    if m.team_rank() == 0 {
        *acc += total;
    }
}

/// A lookup table read at computed indices in a launch wider than the table.
#[kernel]
pub fn poly_lookup(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, coef: BoundLookup<'_, f64, 1>) {
    let x = *i as f64;
    y.set(
        i,
        coef.get(0) + coef.get(1) * x + coef.get(2) * x * x + coef.get(*i % 3),
    );
}

/// A gather through a lookup at the launch's own tokens: checked, since the lookup's extent
/// was never checked against the launch.
#[kernel]
pub fn gather_lookup(i: Idx<'_>, y: BoundWriter<'_, f64, 1>, table: BoundLookup<'_, f64, 1>) {
    y.set(i, table.get(i));
}

/// Reverses each row through team scratch: the team stores its row in shared memory, meets at
/// a barrier, and every thread reads mirrored elements. A slice of another type, allocated
/// first, makes the `f64` slice start at its alignment past it.
#[kernel]
pub fn reverse_rows(
    m: &impl TeamMember,
    out: BoundAtomic<'_, i64, 2>,
    a: BoundReader<'_, f64, 2>,
    cols: usize,
) {
    let row = m.league_rank();
    let tags = m
        .team_scratch(0)
        .alloc::<i32>(3)
        .expect("the launch asks for the tags");
    let s = m
        .team_scratch(0)
        .alloc::<f64>(cols)
        .expect("the launch asks for a row");
    if m.team_rank() == 0 {
        tags.set(0, row as i32);
        tags.set(1, tags.len() as i32);
    }
    let mut j = m.team_rank();
    while j < cols {
        s.set(j, a.get([row, j]));
        j += m.team_size();
    }
    m.team_barrier();
    let mut k = m.team_rank();
    while k < s.len() {
        let v = s.get(s.len() - 1 - k) * 4.0;
        out.fetch_add(
            [row, k],
            v as i64 * 100 + tags.get(0) as i64 * 10 + tags.get(1) as i64,
        );
        k += m.team_size();
    }
}

/// Team-level nested loops: each column goes to the thread `team_owner` names (the stored
/// value records the rank that ran it), and each thread sums a few of the row's values in a
/// per-thread loop first.
#[kernel]
pub fn nested_rows(
    m: &impl TeamMember,
    out: BoundAtomic<'_, f64, 2>,
    a: BoundReader<'_, f64, 2>,
    cols: usize,
    skip: usize,
) {
    let row = m.league_rank();
    TeamThreadRange::new(m, skip..cols).parallel_for(|j| {
        let mut near = 0.0;
        ThreadVectorRange::new(m, 3).parallel_for(|d| {
            near += a.get([row, (*j + *d) % cols]);
        });
        out.fetch_add([row, *j], near * 0.5 + (m.team_rank() * 1000) as f64);
    });
}

/// Nested reductions (a team-level sum and maximum, a per-thread minimum) and `team_reduce`
/// with `Max` and `Min`; rank 0 stores the row's results.
#[kernel]
pub fn nested_reductions(
    m: &impl TeamMember,
    out: BoundAtomic<'_, f64, 2>,
    a: BoundReader<'_, f64, 2>,
    cols: usize,
) {
    let row = m.league_rank();
    let sum = TeamThreadRange::new(m, cols).parallel_reduce(
        |j, part: &mut f64| {
            *part += a.get([row, *j]) * 0.1;
        },
        Sum::new(),
    );
    let top: f64 = TeamThreadRange::new(m, 1..cols).parallel_reduce(
        |j, best| {
            let v = a.get([row, *j]);
            if v > *best {
                *best = v;
            }
        },
        Max::new(),
    );
    let low = ThreadVectorRange::new(m, cols).parallel_reduce(
        |j, least: &mut i64| {
            let v = (a.get([row, *j]) * 8.0) as i64 - m.team_rank() as i64;
            if v < *least {
                *least = v;
            }
        },
        Min::new(),
    );
    let most = m.team_reduce(&Max::new(), low);
    let fewest = m.team_reduce(&Min::<i64>::new(), low);
    if m.team_rank() == 0 {
        out.fetch_add([row, 0], sum);
        out.fetch_add([row, 1], top);
        out.fetch_add([row, 2], (most * 3 - fewest) as f64);
    }
}

/// The smallest and largest of `x * scale` (`MinMax`); NaN never replaces a number.
#[kernel]
pub fn extremes(i: Idx<'_>, x: BoundReader<'_, f64, 1>, scale: f64, acc: &mut MinMaxScalar<f64>) {
    acc.update(x.get(i) * scale);
}

/// The smallest and largest of every row minus the team rank that reads it, by teams.
#[kernel]
pub fn team_extremes(
    m: &impl TeamMember,
    a: BoundReader<'_, i32, 2>,
    cols: usize,
    acc: &mut MinMaxScalar<i32>,
) {
    let row = m.league_rank();
    TeamThreadRange::new(m, cols).parallel_for(|j| {
        acc.update(a.get([row, *j]) - m.team_rank() as i32);
    });
}

/// `team_reduce` with `Max` and `Min` over one value per thread, NaN among them.
#[kernel]
pub fn team_max_min(m: &impl TeamMember, out: BoundAtomic<'_, f64, 2>, a: BoundReader<'_, f64, 2>) {
    let row = m.league_rank();
    let v = a.get([row, m.team_rank()]);
    let big = m.team_reduce(&Max::new(), v);
    let small = m.team_reduce(&Min::<f64>::new(), v);
    if m.team_rank() == 0 {
        out.fetch_add([row, 0], big);
        out.fetch_add([row, 1], small);
    }
}

/// Scratch at both levels, per team and per thread: the team gathers its row (scaled by a
/// per-thread weight) in level-1 team scratch, each thread lists the columns it gathered in
/// its own level-0 scratch and keeps its weights in its level-1 scratch, the threads' sums
/// meet in level-0 team scratch; after a barrier every thread adds a mirrored element and the
/// sums of the lower ranks.
#[kernel]
pub fn scratch_levels(
    m: &impl TeamMember,
    out: BoundAtomic<'_, f64, 2>,
    a: BoundReader<'_, f64, 2>,
    cols: usize,
) {
    let row = m.league_rank();
    let sums = m
        .team_scratch(0)
        .alloc::<f64>(m.team_size())
        .expect("a sum per thread");
    let line = m.team_scratch(1).alloc::<f64>(cols).expect("the row");
    let mine = m
        .thread_scratch(0)
        .alloc::<u32>(cols)
        .expect("this thread's columns");
    let weights = m.thread_scratch(1).alloc::<f64>(2).expect("two weights");
    weights.set(0, (m.team_rank() + 1) as f64);
    weights.set(1, 0.5);
    let mut count = 0;
    let mut j = m.team_rank();
    while j < cols {
        line.set(j, a.get([row, j]) * weights.get(1));
        mine.set(count, j as u32);
        count += 1;
        j += m.team_size();
    }
    let mut part = 0.0;
    for k in 0..count {
        part += line.get(mine.get(k) as usize) * weights.get(0);
    }
    sums.set(m.team_rank(), part);
    m.team_barrier();
    let mut k = m.team_rank();
    while k < cols {
        let mut lower = 0.0;
        for r in 0..m.team_rank() {
            lower += sums.get(r);
        }
        out.fetch_add([row, k], line.get(cols - 1 - k) + lower);
        k += m.team_size();
    }
}

/// Nested scans and `TeamVectorRange`: an exclusive scan of the row over the team's threads
/// (each index on the thread that owns it, which the stored value records), `TeamVectorRange`
/// loops and a scan of integers, a per-thread scan, and `team_scan` over the threads (each
/// thread's prefix in a column of its own, from 5).
#[kernel]
pub fn nested_scans(
    m: &impl TeamMember,
    out: BoundAtomic<'_, f64, 2>,
    totals: BoundAtomic<'_, f64, 2>,
    a: BoundReader<'_, f64, 2>,
    cols: usize,
    skip: usize,
) {
    let row = m.league_rank();
    let total = TeamThreadRange::new(m, skip..cols).parallel_scan(|j, partial: &mut f64, is_final| {
        if is_final {
            out.fetch_add([row, *j], *partial + (m.team_rank() * 1000) as f64);
        }
        *partial += a.get([row, *j]);
    });
    m.team_barrier();
    TeamVectorRange::new(m, cols).parallel_for(|j| {
        out.fetch_add([row, *j], 0.25);
    });
    let squares: i64 = TeamVectorRange::new(m, cols).parallel_scan(|j, partial, is_final| {
        *partial += (a.get([row, *j]) * 4.0) as i64 * (*j as i64);
        if is_final && *j + 1 == cols {
            totals.fetch_add([row, 1], *partial as f64);
        }
    });
    let top = TeamVectorRange::new(m, cols)
        .parallel_reduce(|j, acc: &mut f64| *acc = acc.max(a.get([row, *j])), Max::new());
    let mine = ThreadVectorRange::new(m, 0..3).parallel_scan(|k, partial: &mut u64, is_final| {
        if is_final && *k == 2 {
            totals.fetch_add([row, 2], *partial as f64);
        }
        *partial += (*k as u64 + 1) * (m.team_rank() as u64 + 1);
    });
    let (before, all) = m.team_scan(m.team_rank() as f64 * 0.5 + mine as f64 + a.get([row, 0]));
    totals.fetch_add([row, 5 + m.team_rank()], before);
    if m.team_rank() == 0 {
        totals.fetch_add([row, 0], total);
        totals.fetch_add([row, 4], squares as f64 + top + all);
    }
}

/// A team's row of a writer: a team-level scan stores the row's exclusive prefix sums at its
/// tokens, then a `TeamVectorRange` loop rewrites each column on its owner (which the value
/// records), with no barrier: a column never changes threads.
#[kernel]
pub fn row_offsets(m: &impl TeamMember, out: BoundWriter<'_, f64, 2>, a: BoundReader<'_, f64, 2>) {
    let row = out.team_row(m.league_token());
    let cols = row.len();
    let total = TeamThreadRange::new(m, cols).parallel_scan(|j, partial: &mut f64, is_final| {
        if is_final {
            row.set(j, *partial);
        }
        *partial += a.get([row.row(), *j]);
    });
    TeamVectorRange::new(m, cols).parallel_for(|j| {
        row.set(j, row.get(j) * 2.0 + total + (m.team_rank() * 100) as f64);
    });
}

/// The smallest and largest of `x * scale` with their indices (`MinMaxLoc`): ties to the
/// lowest index, NaN below every number.
#[kernel]
pub fn extremes_at(i: Idx<'_>, x: BoundReader<'_, f64, 1>, scale: f64, acc: &mut MinMaxLocScalar<f64>) {
    acc.update(x.get(i) * scale, *i);
}

/// Reducers' `join` in a body: a row's sum (of its numbers), largest value (NaN skipped) and
/// smallest quadruple folded into locals, then joined into the accumulator.
#[kernel]
pub fn row_joins(i: Idx<'_>, x: BoundReader<'_, f64, 2>, cols: usize, acc: &mut f64) {
    let mut sum = 0.0;
    let mut top = f64::NEG_INFINITY;
    let mut low = i64::MAX;
    for j in 0..cols {
        let v = x.get([*i, j]);
        if v > f64::NEG_INFINITY {
            Sum::new().join(&mut sum, v);
        }
        Max::new().join(&mut top, v);
        Min::<i64>::new().join(&mut low, (v * 4.0) as i64);
    }
    Sum::new().join(acc, sum + top * 100.0 + low as f64 * 10000.0);
}

/// Team slots: each thread stores the sum of its share of the row at its own
/// `[league rank, team rank]`, reads it back and stores it again, doubled and tagged.
#[kernel]
pub fn slot_sums(
    m: &impl TeamMember,
    partial: BoundTeamSlots<'_, f64>,
    a: BoundReader<'_, f64, 2>,
    cols: usize,
) {
    let row = m.league_rank();
    let mut sum = 0.0;
    let mut j = m.team_rank();
    while j < cols {
        sum += a.get([row, j]);
        j += m.team_size();
    }
    partial.set(m.team_slot(), sum);
    let back = partial.get(m.team_slot());
    partial.set(m.team_slot(), back * 2.0 + m.team_rank() as f64);
}

/// `LeagueToken::single`: team rank 0 stores the team's row sum at the league rank of a
/// rank-1 writer (a checked access), then reads it back and stores it again, tagged.
#[kernel]
pub fn league_totals(
    m: &impl TeamMember,
    totals: BoundWriter<'_, f64, 1>,
    a: BoundReader<'_, f64, 2>,
    cols: usize,
) {
    let row = m.league_rank();
    let sum = TeamThreadRange::new(m, cols)
        .parallel_reduce(|j, acc: &mut f64| *acc += a.get([row, *j]), Sum::new());
    if let Some(l) = m.league_token().single() {
        totals.set(l, sum);
        totals.set(l, totals.get(l) * 2.0 + l.get() as f64);
    }
}

/// `team_reduce`, nested reductions and `join` statements with `Prod`, `BAnd`, `BOr`, `LAnd`
/// and `LOr`: a wrapping product on one thread, float products whose rounding depends on the
/// join order, NaN, ties of bits, and empty ranges (the identities). Every rank adds its
/// results to its row: integers to `out`, floats to `fout`.
#[kernel]
pub fn team_logic(
    m: &impl TeamMember,
    out: BoundAtomic<'_, u64, 2>,
    fout: BoundAtomic<'_, f64, 2>,
    a: BoundReader<'_, i64, 2>,
    x: BoundReader<'_, f64, 2>,
    cols: usize,
) {
    let row = m.league_rank();
    let r = m.team_rank();
    let v = a.get([row, r % cols]);
    let w = x.get([row, r % cols]);
    let prod = m.team_reduce(&Prod::new(), v);
    let fprod = m.team_reduce(&Prod::<f64>::new(), w);
    let all_bits = m.team_reduce(&BAnd::new(), v as u32);
    let any_bits = m.team_reduce(&BOr::<u32>::new(), v as u32);
    let all_pos = m.team_reduce(&LAnd::new(), v > 0);
    let any_neg = m.team_reduce(&LOr::new(), w < 0.0);
    let all_num = m.team_reduce(&BAnd::<bool>::new(), w.abs() >= 0.0);
    let any_zero = m.team_reduce(&BOr::new(), v == 0);
    let nprod = TeamThreadRange::new(m, cols)
        .parallel_reduce(|j, acc: &mut i64| *acc *= a.get([row, *j]), Prod::new());
    let nfprod: f64 =
        TeamVectorRange::new(m, 1..cols).parallel_reduce(|j, acc| *acc *= x.get([row, *j]), Prod::new());
    // Wraps: the thread multiplies its row 40 times over.
    let wrapped = ThreadVectorRange::new(m, 40 * cols).parallel_reduce(
        |j, acc: &mut i64| {
            *acc *= a.get([row, *j % cols]) * 7 + 3;
        },
        Prod::new(),
    );
    let nall = TeamThreadRange::new(m, cols).parallel_reduce(
        |j, acc: &mut bool| *acc = *acc && x.get([row, *j]) > -1.0,
        LAnd::new(),
    );
    let nany = TeamVectorRange::new(m, cols).parallel_reduce(
        |j, acc: &mut bool| LOr::new().join(acc, a.get([row, *j]) == 0),
        LOr::new(),
    );
    let nand = ThreadVectorRange::new(m, cols).parallel_reduce(
        |j, acc: &mut u64| *acc &= a.get([row, *j]) as u64 | r as u64,
        BAnd::new(),
    );
    let nor = TeamThreadRange::new(m, cols).parallel_reduce(
        |j, acc: &mut i32| BOr::new().join(acc, (a.get([row, *j]) as i32) << (*j % 31)),
        BOr::new(),
    );
    let empty_and = TeamThreadRange::new(m, cols..cols)
        .parallel_reduce(|j, acc: &mut u32| *acc &= *j as u32, BAnd::new());
    let empty_all =
        TeamVectorRange::new(m, 0..0).parallel_reduce(|j, acc: &mut bool| *acc = *acc && *j > 5, LAnd::new());
    let empty_any =
        TeamThreadRange::new(m, 3..3).parallel_reduce(|j, acc: &mut bool| *acc = *acc || *j > 5, LOr::new());
    let empty_prod: f64 =
        ThreadVectorRange::new(m, 0).parallel_reduce(|j, acc| *acc *= *j as f64, Prod::new());
    let mut joined = v;
    Prod::new().join(&mut joined, prod);
    BOr::new().join(&mut joined, r as i64);
    let mut flag = all_pos;
    LAnd::new().join(&mut flag, nall);
    LOr::new().join(&mut flag, any_zero);
    let mut mask = all_bits;
    BAnd::<u32>::new().join(&mut mask, any_bits);
    let bools = (all_pos as u64)
        | (any_neg as u64) << 1
        | (all_num as u64) << 2
        | (any_zero as u64) << 3
        | (nall as u64) << 4
        | (nany as u64) << 5
        | (empty_all as u64) << 6
        | (empty_any as u64) << 7
        | (flag as u64) << 8;
    out.fetch_add([row, 0], prod as u64);
    out.fetch_add([row, 1], all_bits as u64 | (any_bits as u64) << 32);
    out.fetch_add([row, 2], bools << (9 * r % 63));
    out.fetch_add([row, 3], nprod as u64);
    out.fetch_add([row, 4], wrapped as u64);
    out.fetch_add([row, 5], nand);
    out.fetch_add([row, 6], nor as u32 as u64 ^ (empty_and as u64) << 32);
    out.fetch_add([row, 7], joined as u64 ^ (mask as u64) << 40);
    fout.fetch_add([row, 0], fprod);
    fout.fetch_add([row, 1], nfprod);
    fout.fetch_add([row, 2], empty_prod);
}

/// `LAnd` as a launch's reducer: whether every `x` is below `limit` (NaN is not).
#[kernel]
pub fn all_below(i: Idx<'_>, x: BoundReader<'_, f64, 1>, limit: f64, acc: &mut bool) {
    LAnd::new().join(acc, x.get(i) < limit);
}

/// `LOr` as a launch's reducer: whether some `x` is a multiple of `k`.
#[kernel]
pub fn any_multiple(i: Idx<'_>, x: BoundReader<'_, u32, 1>, k: u32, acc: &mut bool) {
    *acc = *acc || x.get(i) % k < 1;
}

/// `Prod` and `BOr` as a launch's reducers: wrapping products, and the bits of every value.
#[kernel]
pub fn wrapping_product(i: Idx<'_>, x: BoundReader<'_, i64, 1>, acc: &mut i64) {
    Prod::new().join(acc, x.get(i) * 3 + 1);
}

/// The smallest of `x * scale` at its first index and the largest at its last
/// (`MinMaxFirstLastLoc`, `update_first_last`).
#[kernel]
pub fn extremes_first_last(
    i: Idx<'_>,
    x: BoundReader<'_, f64, 1>,
    scale: f64,
    acc: &mut MinMaxLocScalar<f64>,
) {
    acc.update_first_last(x.get(i) * scale, *i);
}

/// A histogram with one private row of `nbins` counters per token id: each iteration holds an
/// id while it adds to its row (`Kokkos::Experimental::UniqueToken`'s use case), released by
/// the guard at the end of the body.
#[kernel]
pub fn token_histogram(
    i: Idx<'_>,
    rows: BoundAtomic<'_, u64, 1>,
    x: BoundReader<'_, u32, 1>,
    tokens: &impl UniqueToken,
    nbins: usize,
) {
    let id = tokens.guard();
    rows.fetch_add(*id * nbins + x.get(i) as usize % nbins, 1);
}

/// Explicit `acquire` and `release`, with an early `return` that leaves the id held on the
/// device until the end of the block (the guard object) and released before it on the host.
#[kernel]
pub fn token_claims(
    i: Idx<'_>,
    owners: BoundAtomic<'_, i64, 1>,
    clashes: BoundAtomic<'_, u64, 1>,
    uses: BoundAtomic<'_, u64, 1>,
    tokens: &impl UniqueToken,
    skip: usize,
) {
    let id = tokens.acquire();
    if owners.fetch_add(id, 1) != 0 {
        clashes.fetch_add(0, 1);
    }
    uses.fetch_add(id, 1);
    owners.fetch_add(id, -1);
    if *i % skip == 1 {
        tokens.release(id);
        return;
    }
    uses.fetch_add(id.min(tokens.size() - 1), 0);
    tokens.release(id);
}

/// Every thread of every team takes ids `rounds` times: while it holds one it marks the id's
/// owner count, and a count that was not zero is a clash (two holders of one id). Threads of a
/// team run at once in the host check, and a barrier starts every round on all of them
/// together, so the ids are contended for real.
#[kernel]
pub fn team_token_claims(
    m: &impl TeamMember,
    owners: BoundAtomic<'_, i64, 1>,
    clashes: BoundAtomic<'_, u64, 1>,
    uses: BoundAtomic<'_, u64, 1>,
    tokens: &impl UniqueToken,
    rounds: usize,
) {
    for r in 0..rounds {
        m.team_barrier();
        let id = tokens.guard();
        if owners.fetch_add(*id, 1) != 0 {
            clashes.fetch_add(0, 1);
        }
        // Hold the id a while, so other threads ask while it is taken.
        for _ in 0..64 {
            uses.fetch_add(id.id(), 0);
        }
        uses.fetch_add(*id, 1);
        owners.fetch_add(*id, -1);
        if (r + m.team_rank()) % 5 == 4 {
            continue; // the guard gives the id back here too
        }
    }
}

/// A reduction that holds an id per iteration: counts the iterations whose id was in range
/// (all of them) and adds `x`, so its value does not depend on which ids the threads got.
#[kernel]
pub fn token_sum(
    i: Idx<'_>,
    x: BoundReader<'_, i64, 1>,
    tokens: &impl UniqueToken,
    bonus: i64,
    acc: &mut i64,
) {
    let id = tokens.acquire();
    *acc += x.get(i);
    if id < tokens.size() {
        *acc += bonus;
    }
    tokens.release(id);
}

/// One id per team (`team_guard`): every thread of a team stores the team's id in its slot,
/// and the team counts one use of it.
#[kernel]
pub fn team_token_slots(
    m: &impl TeamMember,
    ids: BoundTeamSlots<'_, u64>,
    uses: BoundAtomic<'_, u64, 1>,
    tokens: &impl UniqueToken,
) {
    let id = tokens.team_guard(m);
    ids.set(m.team_slot(), *id as u64);
    if m.team_rank() == 0 {
        uses.fetch_add(*id, 1);
    }
}

/// The run of consecutive indices a thread saw, in the order it saw them, as
/// `(lo << 32) + hi`: -1 before the first index, -2 once an index does not continue the run
/// (the conformance check `reducer::custom_join_keeps_index_order` keeps its concatenation
/// so).
#[kernel]
pub fn index_run(i: Idx<'_>, acc: &mut i64) {
    let k = *i as i64;
    if *acc == -1 {
        *acc = (k << 32) + k + 1;
    } else if *acc >= 0 && (*acc & 0xffff_ffff) == k {
        *acc += 1;
    } else {
        *acc = -2;
    }
}

/// [`index_run()`] over a rank-2 MDRange, the point's number read from `number`.
#[kernel]
pub fn point_run_2(p: MdIdx<'_, 2>, number: BoundReader<'_, i64, 2>, acc: &mut i64) {
    let k = number.get(p);
    if *acc == -1 {
        *acc = (k << 32) + k + 1;
    } else if *acc >= 0 && (*acc & 0xffff_ffff) == k {
        *acc += 1;
    } else {
        *acc = -2;
    }
}

/// [`index_run()`] over a rank-3 MDRange, the point's number read from `number`.
#[kernel]
pub fn point_run_3(p: MdIdx<'_, 3>, number: BoundReader<'_, i64, 3>, acc: &mut i64) {
    let k = number.get(p);
    if *acc == -1 {
        *acc = (k << 32) + k + 1;
    } else if *acc >= 0 && (*acc & 0xffff_ffff) == k {
        *acc += 1;
    } else {
        *acc = -2;
    }
}

/// [`index_run()`] over a rank-4 MDRange (one flat loop), the point's number read from
/// `number`.
#[kernel]
pub fn point_run_4(p: MdIdx<'_, 4>, number: BoundReader<'_, i64, 4>, acc: &mut i64) {
    let k = number.get(p);
    if *acc == -1 {
        *acc = (k << 32) + k + 1;
    } else if *acc >= 0 && (*acc & 0xffff_ffff) == k {
        *acc += 1;
    } else {
        *acc = -2;
    }
}

/// [`index_run()`] of the league ranks a team thread runs.
#[kernel]
pub fn league_run(m: &impl TeamMember, acc: &mut i64) {
    let k = m.league_rank() as i64;
    if *acc == -1 {
        *acc = (k << 32) + k + 1;
    } else if *acc >= 0 && (*acc & 0xffff_ffff) == k {
        *acc += 1;
    } else {
        *acc = -2;
    }
}
