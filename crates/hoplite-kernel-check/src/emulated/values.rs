//! The device layouts of the values a reduction or scan produces, and the conversion between a
//! launch's generic value type and the concrete type that has such a layout.
//!
//! The layouts are the device ABI's ([`value_layout`]): a scalar in its own bytes (`bool` as
//! one byte), `ValLoc<T>` as the value then the location at byte 8 (`~0` for none),
//! `MinMaxScalar<T>` as the minimum then the maximum at byte 8, `MinMaxLocScalar<T>` as two
//! `ValLoc<T>` 16 bytes apart, `Option<usize>` as 8 bytes (`~0` for none). The CUDA backend reads its partials the same way.

use hoplite_abi::{DevicePattern, ScalarType, index_from_device, index_to_device, value_layout};
use hoplite_core::{MinMaxLocScalar, MinMaxScalar, ValLoc};

/// A value a device reduction or scan produces, with its bytes in the device layout of the
/// patterns that accumulate it.
pub(super) trait DeviceValue: Copy + 'static {
    /// The pattern of a kernel reducing into this value.
    const PATTERN: DevicePattern;

    /// Whether a kernel of `pattern` accumulates this value: `pattern == PATTERN`, and for
    /// `MinMaxLocScalar<T>` also `ReduceMinMaxFirstLastLoc(T)` (the same value and layout).
    fn reduced_by(pattern: DevicePattern) -> bool {
        pattern == Self::PATTERN
    }

    /// The bytes of one value (the stride of the partials).
    fn size() -> usize {
        value_layout(Self::PATTERN).map_or(8, |l| l.size)
    }

    /// Writes the value's device bytes into `out` (`size()` long).
    fn write(&self, out: &mut [u8]);

    /// Reads a value from its device bytes.
    fn read(bytes: &[u8]) -> Self;
}

/// The first `N` bytes of `bytes`, zero-padded if it is shorter.
fn first<const N: usize>(bytes: &[u8]) -> [u8; N] {
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

/// A scalar element type with a device layout.
pub(super) trait Scalar: DeviceValue {
    /// Its scalar type.
    const SCALAR: ScalarType;
}

macro_rules! scalar {
    ($($t:ty => $s:ident),*) => {$(
        impl DeviceValue for $t {
            const PATTERN: DevicePattern = DevicePattern::Reduce(ScalarType::$s);
            fn write(&self, out: &mut [u8]) {
                put(out, &self.to_le_bytes());
            }
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(first(bytes))
            }
        }
        impl Scalar for $t {
            const SCALAR: ScalarType = ScalarType::$s;
        }
    )*};
}
scalar!(i32 => I32, i64 => I64, u32 => U32, u64 => U64, f32 => F32, f64 => F64, usize => Usize, isize => Isize);

impl DeviceValue for bool {
    const PATTERN: DevicePattern = DevicePattern::Reduce(ScalarType::Bool);
    fn write(&self, out: &mut [u8]) {
        put(out, &[u8::from(*self)]);
    }
    fn read(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|&b| b != 0)
    }
}

impl<T: Scalar> DeviceValue for ValLoc<T> {
    const PATTERN: DevicePattern = DevicePattern::ReduceValLoc(T::SCALAR);
    fn write(&self, out: &mut [u8]) {
        self.val.write(out);
        let loc = index_to_device(self.loc);
        if let Some(tail) = out.get_mut(8..) {
            put(tail, &loc.to_le_bytes());
        }
    }
    fn read(bytes: &[u8]) -> Self {
        let loc = u64::from_le_bytes(first(bytes.get(8..).unwrap_or(&[])));
        ValLoc {
            val: T::read(bytes),
            loc: index_from_device(loc),
        }
    }
}

impl DeviceValue for Option<usize> {
    const PATTERN: DevicePattern = DevicePattern::ReduceIndex;
    fn write(&self, out: &mut [u8]) {
        put(out, &index_to_device(*self).to_le_bytes());
    }
    fn read(bytes: &[u8]) -> Self {
        index_from_device(u64::from_le_bytes(first(bytes)))
    }
}

impl<T: Scalar> DeviceValue for MinMaxScalar<T> {
    const PATTERN: DevicePattern = DevicePattern::ReduceMinMax(T::SCALAR);
    fn write(&self, out: &mut [u8]) {
        self.min.write(out);
        if let Some(tail) = out.get_mut(8..) {
            self.max.write(tail);
        }
    }
    fn read(bytes: &[u8]) -> Self {
        MinMaxScalar {
            min: T::read(bytes),
            max: T::read(bytes.get(8..).unwrap_or(&[])),
        }
    }
}

impl<T: Scalar> DeviceValue for MinMaxLocScalar<T> {
    const PATTERN: DevicePattern = DevicePattern::ReduceMinMaxLoc(T::SCALAR);
    fn reduced_by(pattern: DevicePattern) -> bool {
        pattern == Self::PATTERN || pattern == DevicePattern::ReduceMinMaxFirstLastLoc(T::SCALAR)
    }
    fn write(&self, out: &mut [u8]) {
        let (low, high) = out.split_at_mut(out.len().min(16));
        ValLoc {
            val: self.min_val,
            loc: self.min_loc,
        }
        .write(low);
        ValLoc {
            val: self.max_val,
            loc: self.max_loc,
        }
        .write(high);
    }
    fn read(bytes: &[u8]) -> Self {
        let min = ValLoc::<T>::read(bytes);
        let max = ValLoc::<T>::read(bytes.get(16..).unwrap_or(&[]));
        MinMaxLocScalar {
            min_val: min.val,
            max_val: max.val,
            min_loc: min.loc,
            max_loc: max.loc,
        }
    }
}

/// Moves `value` into the type `B`, which is the same type as `A`.
///
/// # Safety
///
/// `A` and `B` are the same type (equal type ids).
pub(super) unsafe fn same<A, B>(value: A) -> B {
    debug_assert_eq!(typeid::of::<A>(), typeid::of::<B>());
    let value = std::mem::ManuallyDrop::new(value);
    // SAFETY: the caller's contract: the same type, so the same layout and validity; the
    // source is not dropped (`ManuallyDrop`), so the value moves exactly once.
    unsafe { std::mem::transmute_copy::<A, B>(&value) }
}

/// `values` in the device layout of `V`, one after another.
pub(super) fn encode<V: DeviceValue>(values: &[V]) -> Vec<u8> {
    let size = V::size();
    let mut bytes = vec![0u8; size * values.len()];
    for (v, out) in values.iter().zip(bytes.chunks_exact_mut(size)) {
        v.write(out);
    }
    bytes
}

/// The `count` values of `V` at the start of `bytes`.
pub(super) fn decode<V: DeviceValue>(bytes: &[u8], count: usize) -> Vec<V> {
    bytes.chunks_exact(V::size()).take(count).map(V::read).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_the_device_layout() {
        let locs = [
            ValLoc {
                val: 2.5f64,
                loc: Some(7),
            },
            ValLoc { val: -1.0, loc: None },
        ];
        let bytes = encode(&locs);
        assert_eq!(bytes.len(), 32);
        assert_eq!(&bytes[24..32], &[0xff; 8]);
        assert_eq!(decode::<ValLoc<f64>>(&bytes, 2), locs);
        let mml = [MinMaxLocScalar {
            min_val: -4i32,
            max_val: 6,
            min_loc: Some(3),
            max_loc: None,
        }];
        let bytes = encode(&mml);
        assert_eq!(bytes.len(), 32);
        assert_eq!(decode::<MinMaxLocScalar<i32>>(&bytes, 1), mml);
        assert!(MinMaxLocScalar::<i32>::reduced_by(
            DevicePattern::ReduceMinMaxFirstLastLoc(ScalarType::I32)
        ));
        let mm = [MinMaxScalar { min: 1u64, max: 9 }];
        assert_eq!(decode::<MinMaxScalar<u64>>(&encode(&mm), 1), mm);
        assert_eq!(decode::<bool>(&encode(&[true, false]), 2), [true, false]);
        assert_eq!(decode::<i32>(&encode(&[-3i32, 5]), 2), [-3, 5]);
    }
}
