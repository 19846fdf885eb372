//! Reductions and scans on the device: the value layouts of the reduce patterns, the bounded
//! geometry that sizes the partials, the joins the device applies, the host join in a fixed
//! order and the exclusive prefix of a scan's chunk sums. Everything here is pure and tested
//! without a GPU; the reductions and scans in `launch/` (behind `parallel_reduce` and
//! `parallel_scan` on a `Cuda` policy) and a CUDA Graph's reduce nodes drive the device with
//! it.
//!
//! # The join order
//!
//! Every launched thread accumulates from the reducer's `init()`. Where the device applies the
//! launch's join itself ([`device_join_for`]: the library's `Sum`, `Max`, `Min`, `Prod`,
//! `BAnd`, `BOr`, `LAnd`, `LOr` on a plain scalar), each block's first thread joins the
//! block's values in thread order (`threadInBlock = (threadIdx.z * blockDim.y + threadIdx.y)
//! * blockDim.x + threadIdx.x`) and stores one partial at the block's number
//! `block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x`. Otherwise (a
//! location, `MinMax`, a custom reducer) each thread stores its value at its number
//! `t = block * blockThreads + threadInBlock`.
//!
//! How threads share the iteration space follows the reducer ([`walk_for`]):
//!
//! - A **commutative** join ([`Reducer::is_commutative`]: the library's `Sum`, `Prod`, `Min`,
//!   `Max`, `BAnd`, `BOr`, `LAnd`, `LOr`) takes grid-stride loops ([`ReduceWalk::Strided`]),
//!   where neighbouring threads read neighbouring elements: a partial covers every `T`-th
//!   index. The host joins the partials in [`JOIN_LANES`] lanes: lane `j` starts from `init()`
//!   and joins partials `j`, `j + 8`, `j + 16`, ... in turn; lane 0 then joins lanes 1 to 7 in
//!   turn.
//! - Any other join (the core's axiom 3: joins follow index order) takes one contiguous block
//!   of the iteration space per thread, in thread order ([`ReduceWalk::Blocked`]; an MDRange
//!   flattened in its index order, a league in contiguous runs of teams per block), so
//!   partial `t` covers lower indices than partial `t + 1`, and the host joins the partials
//!   in that order, one left fold (`dst` always the lower indices). A team reduction joins,
//!   as the host backends do, by runs of teams and within a run by team rank.
//!
//! The total is finalized once ([`join_partials`]). The geometry depends only on the
//! iteration space, the device's limits and the compiled kernel's resources, so the same
//! launch on the same device gives the same value, bit for bit.

use hoplite_core::device_kernel::{DevicePattern, ScalarType};
use hoplite_core::{MinMaxLocScalar, MinMaxScalar, Reducer, ScanValue, ValLoc};

use crate::DeviceScalar;
use crate::geometry::{DeviceLimits, LaunchGeometry, cap_grid};

/// The device layouts of reduced values and the joins the device applies: the device ABI's.
pub use hoplite_abi::{ReduceWalk, ValueLayout, device_join_for, value_layout};
use hoplite_abi::{index_from_device, index_to_device};

/// A reducer's value that a device reduction produces: which reduce pattern accumulates it,
/// and its bytes in that pattern's device layout ([`value_layout`]).
///
/// Implemented for the scalars (`Reduce`), `ValLoc<T>` (`ReduceValLoc`, `loc == !0` on the
/// device for `None`), `MinMaxScalar<T>` (`ReduceMinMax`), `MinMaxLocScalar<T>`
/// (`ReduceMinMaxLoc`) and `Option<usize>` (`ReduceIndex`, of `FirstLoc` and `LastLoc`). The launch refuses a kernel whose pattern is not [`PATTERN`](Self::PATTERN)
/// before anything reaches the device.
///
/// ```
/// use hoplite_core::ValLoc;
/// use hoplite_cuda::reduce::DeviceReduceValue;
/// let v = ValLoc { val: 2.5f32, loc: Some(7) };
/// let mut bytes = [0u8; 16];
/// v.write_device(&mut bytes);
/// assert_eq!(ValLoc::<f32>::read_device(&bytes), v);
/// ```
pub trait DeviceReduceValue: Copy + Send + 'static {
    /// The pattern of a kernel accumulating this value.
    const PATTERN: DevicePattern;

    /// Writes the device bytes into `out` (`value_layout(PATTERN).size` long).
    fn write_device(&self, out: &mut [u8]);

    /// Reads a value from its device bytes (`value_layout(PATTERN).size` of them).
    fn read_device(bytes: &[u8]) -> Self;

    /// Whether a kernel of `pattern` accumulates this value in [`PATTERN`](Self::PATTERN)'s
    /// layout: `pattern == PATTERN`, and for `MinMaxLocScalar<T>` also
    /// `ReduceMinMaxFirstLastLoc(T)` (`MinMaxFirstLastLoc` reduces the same value).
    ///
    /// ```
    /// use hoplite_core::MinMaxLocScalar;
    /// use hoplite_core::device_kernel::{DevicePattern, ScalarType};
    /// use hoplite_cuda::reduce::DeviceReduceValue;
    /// assert!(MinMaxLocScalar::<f64>::reduced_by(DevicePattern::ReduceMinMaxFirstLastLoc(ScalarType::F64)));
    /// assert!(!f64::reduced_by(DevicePattern::Reduce(ScalarType::F32)));
    /// ```
    fn reduced_by(pattern: DevicePattern) -> bool {
        pattern == Self::PATTERN
    }
}

/// The first `N` bytes of `bytes`, zero-padded if it is shorter.
#[inline]
fn first<const N: usize>(bytes: &[u8]) -> [u8; N] {
    // The usual case without a copy of variable length (a `memcpy` call per value made a
    // join of 270 000 partials take 1 ms instead of 40 µs).
    if let Some(head) = bytes.first_chunk::<N>() {
        return *head;
    }
    let mut a = [0u8; N];
    let n = N.min(bytes.len());
    a[..n].copy_from_slice(&bytes[..n]);
    a
}

/// Copies `src` to the start of `out`, as much as fits.
fn put(out: &mut [u8], src: &[u8]) {
    let n = src.len().min(out.len());
    out[..n].copy_from_slice(&src[..n]);
}

macro_rules! reduce_scalar {
    ($($t:ty => $s:ident),*) => {$(
        impl DeviceReduceValue for $t {
            const PATTERN: DevicePattern = DevicePattern::Reduce(ScalarType::$s);
            fn write_device(&self, out: &mut [u8]) {
                put(out, &self.to_le_bytes());
            }
            #[inline]
            fn read_device(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(first(bytes))
            }
        }
    )*};
}
reduce_scalar!(i32 => I32, i64 => I64, u32 => U32, u64 => U64, f32 => F32, f64 => F64);
#[cfg(target_pointer_width = "64")]
reduce_scalar!(usize => Usize, isize => Isize);

impl DeviceReduceValue for bool {
    const PATTERN: DevicePattern = DevicePattern::Reduce(ScalarType::Bool);
    fn write_device(&self, out: &mut [u8]) {
        put(out, &[u8::from(*self)]);
    }
    #[inline]
    fn read_device(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|&b| b != 0)
    }
}

impl<T: DeviceReduceValue + DeviceScalar> DeviceReduceValue for ValLoc<T> {
    const PATTERN: DevicePattern = DevicePattern::ReduceValLoc(T::SCALAR);
    fn write_device(&self, out: &mut [u8]) {
        self.val.write_device(out);
        let loc = index_to_device(self.loc);
        if let Some(tail) = out.get_mut(8..) {
            put(tail, &loc.to_le_bytes());
        }
    }
    #[inline]
    fn read_device(bytes: &[u8]) -> Self {
        let loc = u64::from_le_bytes(first(bytes.get(8..).unwrap_or(&[])));
        ValLoc {
            val: T::read_device(bytes),
            loc: index_from_device(loc),
        }
    }
}

impl DeviceReduceValue for Option<usize> {
    const PATTERN: DevicePattern = DevicePattern::ReduceIndex;
    fn write_device(&self, out: &mut [u8]) {
        put(out, &index_to_device(*self).to_le_bytes());
    }
    #[inline]
    fn read_device(bytes: &[u8]) -> Self {
        index_from_device(u64::from_le_bytes(first(bytes)))
    }
}

impl<T: DeviceReduceValue + DeviceScalar> DeviceReduceValue for MinMaxScalar<T> {
    const PATTERN: DevicePattern = DevicePattern::ReduceMinMax(T::SCALAR);
    fn write_device(&self, out: &mut [u8]) {
        self.min.write_device(out);
        if let Some(tail) = out.get_mut(8..) {
            self.max.write_device(tail);
        }
    }
    #[inline]
    fn read_device(bytes: &[u8]) -> Self {
        MinMaxScalar {
            min: T::read_device(bytes),
            max: T::read_device(bytes.get(8..).unwrap_or(&[])),
        }
    }
}

// `MinMaxLoc` and `MinMaxFirstLastLoc` reduce this one value in one layout; the kernel's
// pattern says which update it calls, the launch's reducer how the partials join.
impl<T: DeviceReduceValue + DeviceScalar> DeviceReduceValue for MinMaxLocScalar<T> {
    const PATTERN: DevicePattern = DevicePattern::ReduceMinMaxLoc(T::SCALAR);
    fn reduced_by(pattern: DevicePattern) -> bool {
        pattern == Self::PATTERN || pattern == DevicePattern::ReduceMinMaxFirstLastLoc(T::SCALAR)
    }
    fn write_device(&self, out: &mut [u8]) {
        let (low, high) = out.split_at_mut(out.len().min(16));
        ValLoc {
            val: self.min_val,
            loc: self.min_loc,
        }
        .write_device(low);
        ValLoc {
            val: self.max_val,
            loc: self.max_loc,
        }
        .write_device(high);
    }
    #[inline]
    fn read_device(bytes: &[u8]) -> Self {
        let min = ValLoc::<T>::read_device(bytes);
        let max = ValLoc::<T>::read_device(bytes.get(16..).unwrap_or(&[]));
        MinMaxLocScalar {
            min_val: min.val,
            max_val: max.val,
            min_loc: min.loc,
            max_loc: max.loc,
        }
    }
}

/// The geometry a reduction or scan launches with: `g` with its grid cut to the blocks that
/// are resident at once (`sm_count * max_threads_per_sm / blockThreads`, x kept first), so
/// the partials stay a few megabytes (a few kilobytes when the device joins each block's
/// values) whatever the length. Entries use grid-stride loops or contiguous blocks (a scan,
/// and a reduction whose join is not commutative: [`ReduceWalk::Blocked`]) sized from the
/// grid, so any grid covers the space.
///
/// ```
/// use hoplite_cuda::geometry::{range_geometry, DeviceLimits};
/// use hoplite_cuda::reduce::{partials_geometry, partials_count};
/// let limits = DeviceLimits::SM_90;
/// let g = partials_geometry(&limits, range_geometry(&limits, 1 << 30).expect("not empty"));
/// assert_eq!(partials_count(&g, false), u64::from(limits.sm_count * limits.max_threads_per_sm));
/// ```
pub fn partials_geometry(limits: &DeviceLimits, g: LaunchGeometry) -> LaunchGeometry {
    let resident_threads = u64::from(limits.sm_count.max(1)) * u64::from(limits.max_threads_per_sm.max(1));
    let budget = resident_threads / g.block_threads().max(1);
    LaunchGeometry {
        grid: cap_grid(g.grid, budget),
        ..g
    }
}

/// The number of partials a launch of `g` writes: one per block where the device joins each
/// block's values, else one per launched thread.
///
/// ```
/// use hoplite_cuda::geometry::LaunchGeometry;
/// use hoplite_cuda::reduce::partials_count;
/// let g = LaunchGeometry { grid: [4, 2, 1], block: [32, 8, 1], shared_bytes: 0 };
/// assert_eq!(partials_count(&g, false), 2048);
/// assert_eq!(partials_count(&g, true), 8);
/// ```
pub fn partials_count(g: &LaunchGeometry, joined_on_device: bool) -> u64 {
    if joined_on_device {
        g.grid.iter().map(|&e| u64::from(e)).product()
    } else {
        g.total_threads()
    }
}

/// The number of running values the host join of a commutative reducer keeps: partial `t`
/// goes to lane `t % LANES`.
/// Eight independent chains keep a core's adders busy, where one left fold waits on each
/// join's result before the next (a reduction of 270 000 partials: about 350 µs folded, under
/// 60 µs in lanes).
pub const JOIN_LANES: usize = 8;

/// How a reduction with `reducer` walks its iteration space: grid-stride loops for a
/// commutative join, one contiguous block per thread otherwise, so that the partials, in
/// order, follow index order ([module documentation](self#the-join-order)).
///
/// ```
/// use hoplite_core::{Custom, MinLoc, Sum};
/// use hoplite_cuda::reduce::{walk_for, ReduceWalk};
/// assert_eq!(walk_for(&Sum::<f64>::new()), ReduceWalk::Strided);
/// assert_eq!(walk_for(&MinLoc::<f64>::new()), ReduceWalk::Blocked);
/// assert_eq!(walk_for(&Custom::new(|| 0i64, |d: &mut i64, s: i64| *d = *d * 10 + s)), ReduceWalk::Blocked);
/// ```
pub fn walk_for<R: Reducer>(reducer: &R) -> ReduceWalk {
    ReduceWalk::for_join(reducer.is_commutative())
}

/// Joins per-thread (or per-block) partials in a fixed order and finalizes the total once.
/// For a [commutative](Reducer::is_commutative) reducer, in [`JOIN_LANES`] lanes: lane `j`
/// starts from the reducer's identity and joins partials `j`, `j + 8`, `j + 16`, ... in turn;
/// then lane 0 joins lanes 1 to 7 in turn. For any other reducer, one left fold from the
/// identity in the partials' order, which is index order under the walk [`walk_for`] gives
/// it. The order depends only on the number of partials, so the same launch gives the same
/// value, bit for bit.
///
/// ```
/// use hoplite_core::{Custom, Sum};
/// use hoplite_cuda::reduce::join_partials;
/// assert_eq!(join_partials(&Sum::<i64>::new(), [1, 2, 3]), 6);
/// // Not commutative: the partials in the order given.
/// let digits = Custom::new(|| 0u64, |d: &mut u64, s: u64| *d = *d * 10 + s);
/// assert_eq!(join_partials(&digits, 1..=9), 123_456_789);
/// ```
pub fn join_partials<R: Reducer>(reducer: &R, partials: impl IntoIterator<Item = R::Value>) -> R::Value {
    if !reducer.is_commutative() {
        let mut total = reducer.init();
        for p in partials {
            reducer.join(&mut total, p);
        }
        reducer.finalize(&mut total);
        return total;
    }
    let mut lanes: [R::Value; JOIN_LANES] = std::array::from_fn(|_| reducer.init());
    let mut partials = partials.into_iter();
    'all: loop {
        for lane in &mut lanes {
            let Some(p) = partials.next() else { break 'all };
            reducer.join(lane, p);
        }
    }
    let [mut total, rest @ ..] = lanes;
    for lane in rest {
        reducer.join(&mut total, lane);
    }
    reducer.finalize(&mut total);
    total
}

/// Replaces each thread's chunk sum with the sum of the chunks before it (an exclusive
/// prefix in thread order, from zero) and returns the total: the starting values of a scan's
/// final pass.
///
/// ```
/// use hoplite_cuda::reduce::exclusive_prefix;
/// let mut sums = [3, 1, 4];
/// assert_eq!(exclusive_prefix(&mut sums), 8);
/// assert_eq!(sums, [0, 3, 4]);
/// ```
pub fn exclusive_prefix<T: ScanValue>(sums: &mut [T]) -> T {
    let mut running = T::zero();
    for s in sums {
        let chunk = *s;
        *s = running;
        running = running + chunk;
    }
    running
}

/// Decodes `count` values of the device layout of `V::PATTERN` from `bytes`.
pub(crate) fn decode<V: DeviceReduceValue>(bytes: &[u8]) -> impl Iterator<Item = V> + '_ {
    let size = value_layout(V::PATTERN).map_or(1, |l| l.size.max(1));
    bytes.chunks_exact(size).map(V::read_device)
}

/// Encodes `values` in the device layout of `V::PATTERN`.
pub(crate) fn encode<V: DeviceReduceValue>(values: &[V]) -> Vec<u8> {
    let size = value_layout(V::PATTERN).map_or(1, |l| l.size.max(1));
    let mut bytes = vec![0u8; size * values.len()];
    for (v, out) in values.iter().zip(bytes.chunks_exact_mut(size)) {
        v.write_device(out);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{mdrange_geometry, range_geometry};
    use hoplite_core::{MaxLoc, MinLoc, MinMax, MinMaxFirstLastLoc, MinMaxLoc, Sum};

    #[test]
    fn partials_are_bounded_by_the_resident_threads() {
        for limits in [DeviceLimits::SM_70, DeviceLimits::SM_80, DeviceLimits::SM_90] {
            let resident = u64::from(limits.sm_count) * u64::from(limits.max_threads_per_sm);
            // Small ranges keep one thread per index.
            let g = partials_geometry(&limits, range_geometry(&limits, 1000).expect("not empty"));
            assert_eq!(partials_count(&g, false), 1024);
            // Long ones stop at the resident threads.
            let g = partials_geometry(&limits, range_geometry(&limits, u64::MAX).expect("not empty"));
            assert_eq!(partials_count(&g, false), resident);
            // MDRanges too, x kept first.
            let g = mdrange_geometry(&limits, &[1 << 20, 1 << 20, 1 << 20]).expect("not empty");
            let p = partials_geometry(&limits, g);
            assert!(partials_count(&p, false) <= resident, "{p:?}");
            assert_eq!(p.block, g.block);
            assert!(p.grid[0] >= p.grid[1] && p.grid[1] >= p.grid[2], "{p:?}");
            assert!(p.grid.iter().all(|&e| e >= 1));
        }
    }

    #[test]
    fn the_join_follows_the_partials_unless_commutative_and_finalizes_once() {
        // A non-commutative join shows the order: concatenation of digits (an empty partial
        // joins nothing: 0 is the identity). It is joined in the partials' order.
        let concat = hoplite_core::Custom::with_finalize(
            || 0u64,
            |d: &mut u64, s: u64| {
                if s != 0 {
                    *d = if *d == 0 {
                        s
                    } else {
                        *d * 10u64.pow(s.ilog10() + 1) + s
                    };
                }
            },
            |v: &mut u64| *v += 1_000_000_000_000,
        );
        assert!(!concat.is_commutative());
        assert_eq!(join_partials(&concat, [1, 2, 3, 4]), 1_000_000_001_234);
        assert_eq!(join_partials(&concat, []), 1_000_000_000_000);
        // Partials 1 to 10: in order, not in lanes (which would give 19 210 345 678).
        let ten: Vec<u64> = (1..=10).collect();
        assert_eq!(join_partials(&concat, ten), 1_000_000_000_000 + 12_345_678_910);
        // Floating-point sums: each lane folds left to right, then the lanes do.
        let parts: Vec<f64> = (0..20)
            .map(|k| if k % 3 == 0 { 1e16 } else { -0.75 * k as f64 })
            .collect();
        let mut lanes = [0.0f64; JOIN_LANES];
        for (k, p) in parts.iter().enumerate() {
            lanes[k % JOIN_LANES] += p;
        }
        let want = lanes.iter().fold(0.0, |a, b| a + b);
        assert_eq!(join_partials(&Sum::<f64>::new(), parts).to_bits(), want.to_bits());
    }

    /// The conformance check `reducer::custom_join_keeps_index_order` as a device runs it:
    /// every launched thread folds the indices the entry's walk gives it
    /// (`ReduceWalk::offsets`, which the host runs of the generated C check against the entry)
    /// into the run of consecutive indices it saw, from the partials geometry a launch of the
    /// range gets, and the host joins the partials with `join_partials`. With 1000 indices
    /// the launch has 1024 threads, one index each; with 2^22 the partials are cut to the
    /// resident threads and each covers many indices.
    #[test]
    fn a_custom_reducer_joins_in_index_order() {
        const NO_RUN: i64 = -1;
        const BROKEN_RUN: i64 = -2;
        const LOW: i64 = 0xffff_ffff;
        // What the check's `#[kernel]` does with index `k`.
        let extend = |acc: &mut i64, k: i64| {
            *acc = if *acc == NO_RUN {
                (k << 32) + k + 1
            } else if *acc >= 0 && (*acc & LOW) == k {
                *acc + 1
            } else {
                BROKEN_RUN
            };
        };
        // The check's join: one run if `src` starts where `dst` ends.
        let concat = hoplite_core::Custom::new(
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
        );
        assert_eq!(walk_for(&concat), ReduceWalk::Blocked);
        for limits in [DeviceLimits::SM_70, DeviceLimits::SM_80, DeviceLimits::SM_90] {
            for range in [0..1000, 3..1000, 0..1, 7..7, 0..1 << 22, 5..1_000_003] {
                let len = range.len() as u64;
                let threads = range_geometry(&limits, len)
                    .map_or(0, |g| partials_count(&partials_geometry(&limits, g), false));
                let partials = (0..threads).map(|t| {
                    let mut acc = concat.init();
                    for offset in walk_for(&concat).offsets(len, threads, t) {
                        extend(&mut acc, (range.start as u64 + offset) as i64);
                    }
                    acc
                });
                let want = if range.is_empty() {
                    NO_RUN
                } else {
                    ((range.start as i64) << 32) + range.end as i64
                };
                assert_eq!(
                    join_partials(&concat, partials),
                    want,
                    "{range:?} over {threads} threads on {}",
                    limits.arch()
                );
            }
        }
    }

    #[test]
    fn values_round_trip_through_the_device_layout() {
        let r = MinLoc::<f64>::new();
        let parts = [
            ValLoc {
                val: 3.0,
                loc: Some(4),
            },
            r.init(),
            ValLoc {
                val: -1.0,
                loc: Some(9),
            },
            ValLoc {
                val: -1.0,
                loc: Some(2),
            },
        ];
        let bytes = encode(&parts);
        assert_eq!(bytes.len(), 64);
        // `loc` at byte 8, `~0` for none.
        assert_eq!(&bytes[24..32], &[0xff; 8]);
        assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")), 4);
        let back: Vec<_> = decode::<ValLoc<f64>>(&bytes).collect();
        assert_eq!(back, parts);
        assert_eq!(
            join_partials(&r, back),
            ValLoc {
                val: -1.0,
                loc: Some(2)
            }
        );
        let m = MaxLoc::<i32>::new();
        let one = [ValLoc { val: 7, loc: Some(1) }];
        assert_eq!(join_partials(&m, decode(&encode(&one))), one[0]);

        // `FirstLoc` / `LastLoc`: 8 bytes each, `~0` for none.
        let found = [None, Some(9), Some(4), None];
        let bytes = encode(&found);
        assert_eq!((bytes.len(), &bytes[..8]), (32, &[0xff; 8][..]));
        let back: Vec<Option<usize>> = decode(&bytes).collect();
        assert_eq!(back, found);
        assert_eq!(join_partials(&hoplite_core::FirstLoc, back.clone()), Some(4));
        assert_eq!(join_partials(&hoplite_core::LastLoc, back), Some(9));

        let mm = [
            MinMaxScalar {
                min: -2.5f32,
                max: 8.0,
            },
            MinMax::<f32>::new().init(),
        ];
        let bytes = encode(&mm);
        assert_eq!(f32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")), 8.0);
        assert_eq!(decode::<MinMaxScalar<f32>>(&bytes).collect::<Vec<_>>(), mm);
        assert_eq!(
            join_partials(&MinMax::<f32>::new(), mm),
            MinMaxScalar { min: -2.5, max: 8.0 }
        );
        let mml = [
            MinMaxLocScalar {
                min_val: -4.0f64,
                max_val: 6.5,
                min_loc: Some(3),
                max_loc: Some(11),
            },
            MinMaxLoc::<f64>::new().init(),
        ];
        let bytes = encode(&mml);
        assert_eq!(bytes.len(), 64);
        // `min_val` at 0, `min_loc` at 8, `max_val` at 16, `max_loc` at 24; `~0` for none.
        assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")), 3);
        assert_eq!(
            f64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes")),
            6.5
        );
        assert_eq!(u64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes")), 11);
        assert_eq!(&bytes[40..48], &[0xff; 8]);
        assert_eq!(decode::<MinMaxLocScalar<f64>>(&bytes).collect::<Vec<_>>(), mml);
        assert_eq!(join_partials(&MinMaxLoc::<f64>::new(), mml), mml[0]);
        // `MinMaxFirstLastLoc` reduces the same value in the same layout; its join sends the
        // maximum's ties to the highest index.
        let fl = DevicePattern::ReduceMinMaxFirstLastLoc(ScalarType::I32);
        assert_eq!(value_layout(fl), Some(ValueLayout { size: 32, align: 8 }));
        assert!(MinMaxLocScalar::<i32>::reduced_by(fl));
        assert!(!MinMaxLocScalar::<i64>::reduced_by(fl));
        let tied = [
            MinMaxLocScalar {
                min_val: 1i32,
                max_val: 9,
                min_loc: Some(2),
                max_loc: Some(4),
            },
            MinMaxLocScalar {
                min_val: 1,
                max_val: 9,
                min_loc: Some(7),
                max_loc: Some(8),
            },
            MinMaxFirstLastLoc::<i32>::new().init(),
        ];
        let bytes = encode(&tied);
        assert_eq!(bytes.len(), 96);
        assert_eq!(i32::from_le_bytes(bytes[48..52].try_into().expect("4 bytes")), 9);
        assert_eq!(u64::from_le_bytes(bytes[56..64].try_into().expect("8 bytes")), 8);
        assert_eq!(decode::<MinMaxLocScalar<i32>>(&bytes).collect::<Vec<_>>(), tied);
        let joined = join_partials(&MinMaxFirstLastLoc::<i32>::new(), tied);
        assert_eq!((joined.min_loc, joined.max_loc), (Some(2), Some(8)));
        let flags = [true, false];
        assert_eq!(decode::<bool>(&encode(&flags)).collect::<Vec<_>>(), flags);
        let ints = [-3i64, 5];
        assert_eq!(decode::<i64>(&encode(&ints)).collect::<Vec<_>>(), ints);
    }

    #[test]
    fn layouts_follow_the_patterns() {
        assert_eq!(
            <f32 as DeviceReduceValue>::PATTERN,
            DevicePattern::Reduce(ScalarType::F32)
        );
        assert_eq!(
            <ValLoc<i64> as DeviceReduceValue>::PATTERN,
            DevicePattern::ReduceValLoc(ScalarType::I64)
        );
        assert_eq!(
            value_layout(DevicePattern::Scan(ScalarType::I32)),
            Some(ValueLayout { size: 4, align: 4 })
        );
        assert_eq!(
            value_layout(DevicePattern::ReduceMinMax(ScalarType::F32)),
            Some(ValueLayout { size: 16, align: 8 })
        );
    }

    #[test]
    fn prefixes_are_exclusive_in_thread_order() {
        let mut sums = [5.0, 0.0, 2.5, 1.0];
        assert_eq!(exclusive_prefix(&mut sums), 8.5);
        assert_eq!(sums, [0.0, 5.0, 5.0, 7.5]);
        let mut none: [i32; 0] = [];
        assert_eq!(exclusive_prefix(&mut none), 0);
    }
}
