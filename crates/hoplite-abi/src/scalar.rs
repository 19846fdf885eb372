//! The scalar types of device kernels and their values.

use std::fmt;

/// A scalar type a device kernel can use, with its CUDA C spelling.
///
/// ```
/// use hoplite_abi::ScalarType;
/// assert_eq!(ScalarType::from_rust_name("usize"), Some(ScalarType::Usize));
/// assert_eq!(ScalarType::Usize.cuda_name(), "unsigned long long");
/// assert_eq!(ScalarType::Usize.to_string(), "usize");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// `bool`
    Bool,
    /// `i32` (`int`)
    I32,
    /// `i64` (`long long`)
    I64,
    /// `u32` (`unsigned int`)
    U32,
    /// `u64` (`unsigned long long`)
    U64,
    /// `usize` (`unsigned long long`; devices are 64-bit)
    Usize,
    /// `isize` (`long long`)
    Isize,
    /// `f32` (`float`)
    F32,
    /// `f64` (`double`)
    F64,
}

impl ScalarType {
    /// Every scalar type, in declaration order.
    pub const ALL: [ScalarType; 9] = [
        ScalarType::Bool,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::Usize,
        ScalarType::Isize,
        ScalarType::F32,
        ScalarType::F64,
    ];

    /// The type Rust spells `name` (`"f64"`), if it is one.
    ///
    /// ```
    /// use hoplite_abi::ScalarType;
    /// assert_eq!(ScalarType::from_rust_name("f64"), Some(ScalarType::F64));
    /// assert_eq!(ScalarType::from_rust_name("u8"), None);
    /// ```
    pub fn from_rust_name(name: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|t| t.rust_name() == name)
    }

    /// The type as CUDA C spells it.
    ///
    /// ```
    /// use hoplite_abi::ScalarType;
    /// assert_eq!(ScalarType::Usize.cuda_name(), "unsigned long long");
    /// ```
    pub const fn cuda_name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::I32 => "int",
            ScalarType::I64 | ScalarType::Isize => "long long",
            ScalarType::U32 => "unsigned int",
            ScalarType::U64 | ScalarType::Usize => "unsigned long long",
            ScalarType::F32 => "float",
            ScalarType::F64 => "double",
        }
    }

    /// The type as Rust spells it.
    ///
    /// ```
    /// use hoplite_abi::ScalarType;
    /// assert_eq!(ScalarType::F32.rust_name(), "f32");
    /// ```
    pub const fn rust_name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::Usize => "usize",
            ScalarType::Isize => "isize",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
        }
    }

    /// The size in bytes on the device.
    ///
    /// ```
    /// use hoplite_abi::ScalarType;
    /// assert_eq!(ScalarType::Usize.size(), 8);
    /// ```
    pub const fn size(self) -> usize {
        match self {
            ScalarType::Bool => 1,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            _ => 8,
        }
    }

    /// Whether the type is `f32` or `f64`.
    ///
    /// ```
    /// use hoplite_abi::ScalarType;
    /// assert!(ScalarType::F32.is_float() && !ScalarType::I32.is_float());
    /// ```
    pub const fn is_float(self) -> bool {
        matches!(self, ScalarType::F32 | ScalarType::F64)
    }

    /// Whether the type is an integer (neither a float nor `bool`).
    ///
    /// ```
    /// use hoplite_abi::ScalarType;
    /// assert!(ScalarType::Usize.is_integer() && !ScalarType::Bool.is_integer());
    /// ```
    pub const fn is_integer(self) -> bool {
        !self.is_float() && !matches!(self, ScalarType::Bool)
    }

    /// Whether the type is a signed integer.
    ///
    /// ```
    /// use hoplite_abi::ScalarType;
    /// assert!(ScalarType::Isize.is_signed() && !ScalarType::F64.is_signed());
    /// ```
    pub const fn is_signed(self) -> bool {
        matches!(self, ScalarType::I32 | ScalarType::I64 | ScalarType::Isize)
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

/// A scalar value with its type: a scalar capture of a launch, a kernel's scalar argument, a
/// reduction's identity.
///
/// ```
/// use hoplite_abi::{ScalarType, ScalarValue};
/// let v = ScalarValue::from(2.5f64);
/// assert_eq!(v.scalar_type(), ScalarType::F64);
/// assert_eq!(ScalarValue::from_device_bytes(ScalarType::F64, &v.to_device_bytes()), v);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarValue {
    /// A `bool`.
    Bool(bool),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// A `u32`.
    U32(u32),
    /// A `u64`.
    U64(u64),
    /// A `usize` (64 bits on the device).
    Usize(usize),
    /// An `isize` (64 bits on the device).
    Isize(isize),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
}

impl ScalarValue {
    /// The value's device type.
    pub const fn scalar_type(self) -> ScalarType {
        match self {
            ScalarValue::Bool(_) => ScalarType::Bool,
            ScalarValue::I32(_) => ScalarType::I32,
            ScalarValue::I64(_) => ScalarType::I64,
            ScalarValue::U32(_) => ScalarType::U32,
            ScalarValue::U64(_) => ScalarType::U64,
            ScalarValue::Usize(_) => ScalarType::Usize,
            ScalarValue::Isize(_) => ScalarType::Isize,
            ScalarValue::F32(_) => ScalarType::F32,
            ScalarValue::F64(_) => ScalarType::F64,
        }
    }

    /// The bytes the device reads: little-endian, in the low
    /// [`size`](ScalarType::size) bytes of the eight (the rest zero).
    ///
    /// ```
    /// use hoplite_abi::ScalarValue;
    /// assert_eq!(ScalarValue::I32(-2).to_device_bytes(), [0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    /// ```
    pub const fn to_device_bytes(self) -> [u8; 8] {
        let mut out = [0u8; 8];
        match self {
            ScalarValue::Bool(v) => out[0] = v as u8,
            ScalarValue::I32(v) => copy4(&mut out, v.to_le_bytes()),
            ScalarValue::U32(v) => copy4(&mut out, v.to_le_bytes()),
            ScalarValue::F32(v) => copy4(&mut out, v.to_le_bytes()),
            ScalarValue::I64(v) => out = v.to_le_bytes(),
            ScalarValue::U64(v) => out = v.to_le_bytes(),
            ScalarValue::Usize(v) => out = (v as u64).to_le_bytes(),
            ScalarValue::Isize(v) => out = (v as i64).to_le_bytes(),
            ScalarValue::F64(v) => out = v.to_le_bytes(),
        }
        out
    }

    /// The value of type `ty` in its device bytes (little-endian, the first
    /// [`size`](ScalarType::size) of `bytes`; missing bytes read as zero).
    ///
    /// ```
    /// use hoplite_abi::{ScalarType, ScalarValue};
    /// assert_eq!(ScalarValue::from_device_bytes(ScalarType::U32, &[7, 0, 0, 0]), ScalarValue::U32(7));
    /// ```
    pub fn from_device_bytes(ty: ScalarType, bytes: &[u8]) -> ScalarValue {
        let mut b = [0u8; 8];
        let n = ty.size().min(bytes.len());
        b[..n].copy_from_slice(&bytes[..n]);
        let four = [b[0], b[1], b[2], b[3]];
        match ty {
            ScalarType::Bool => ScalarValue::Bool(b[0] != 0),
            ScalarType::I32 => ScalarValue::I32(i32::from_le_bytes(four)),
            ScalarType::U32 => ScalarValue::U32(u32::from_le_bytes(four)),
            ScalarType::F32 => ScalarValue::F32(f32::from_le_bytes(four)),
            ScalarType::I64 => ScalarValue::I64(i64::from_le_bytes(b)),
            ScalarType::U64 => ScalarValue::U64(u64::from_le_bytes(b)),
            ScalarType::Usize => ScalarValue::Usize(u64::from_le_bytes(b) as usize),
            ScalarType::Isize => ScalarValue::Isize(i64::from_le_bytes(b) as isize),
            ScalarType::F64 => ScalarValue::F64(f64::from_le_bytes(b)),
        }
    }
}

const fn copy4(out: &mut [u8; 8], bytes: [u8; 4]) {
    out[0] = bytes[0];
    out[1] = bytes[1];
    out[2] = bytes[2];
    out[3] = bytes[3];
}

macro_rules! scalar_value_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for ScalarValue {
            fn from(value: $t) -> Self {
                ScalarValue::$v(value)
            }
        }
    )*};
}
scalar_value_from!(bool => Bool, i32 => I32, i64 => I64, u32 => U32, u64 => U64, usize => Usize,
    isize => Isize, f32 => F32, f64 => F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sizes_match_the_device() {
        for t in ScalarType::ALL {
            assert_eq!(ScalarType::from_rust_name(t.rust_name()), Some(t));
        }
        let sizes: Vec<usize> = ScalarType::ALL.iter().map(|t| t.size()).collect();
        assert_eq!(sizes, [1, 4, 8, 4, 8, 8, 8, 4, 8]);
    }

    #[test]
    fn device_bytes_round_trip() {
        let values = [
            ScalarValue::Bool(true),
            ScalarValue::I32(-7),
            ScalarValue::I64(i64::MIN),
            ScalarValue::U32(u32::MAX),
            ScalarValue::U64(1 << 40),
            ScalarValue::Usize(12),
            ScalarValue::Isize(-12),
            ScalarValue::F32(1.5),
            ScalarValue::F64(-0.25),
        ];
        for v in values {
            let bytes = v.to_device_bytes();
            let ty = v.scalar_type();
            assert!(bytes[ty.size()..].iter().all(|&b| b == 0), "{v:?}");
            assert_eq!(ScalarValue::from_device_bytes(ty, &bytes), v);
        }
    }
}
