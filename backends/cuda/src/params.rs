//! The parameter buffer of a kernel launch: the device ABI's packer ([`hoplite_abi`]), with
//! its errors as [`CudaError::InvalidLaunch`] and the reduction's identity from the launch's
//! reducer value.
//!
//! The packing itself (the order and layout `hoplite_abi` documents, each parameter at an
//! offset aligned to its size as the CUDA ABI places kernel parameters) lives in `hoplite_abi`,
//! which `hoplite-kernel-check` also packs its host launches of the generated C with: those
//! runs prove the very parameter block a GPU launch gets. The types are re-exported here under
//! their established names.

use hoplite_core::device_kernel::{DeviceJoin, DeviceKernel, DeviceKernelInfo, DevicePattern, ScalarType};

/// A scalar argument with its type: the device ABI's [`ScalarValue`](hoplite_abi::ScalarValue)
/// (the same type as `hoplite_core::device_kernel::ScalarValue`).
///
/// ```
/// use hoplite_cuda::params::ScalarArg;
/// use hoplite_core::device_kernel::ScalarType;
/// assert_eq!(ScalarArg::F64(2.0).scalar_type(), ScalarType::F64);
/// ```
pub use hoplite_abi::ScalarValue as ScalarArg;
pub use hoplite_abi::{HandleArg, IterationArgs, KernelArg, MAX_PARAM_BYTES, ParamBuffer, TokenArg};

use crate::CudaError;
use crate::reduce::{DeviceReduceValue, ReduceWalk, ValueLayout, value_layout};

/// The abi packer's error as the launch error it is.
fn invalid(e: hoplite_abi::PackError) -> CudaError {
    CudaError::InvalidLaunch {
        kernel: e.kernel,
        reason: e.reason,
    }
}

/// Packs the parameters of `K`'s entry for a `parallel_for` launch: the iteration space,
/// then each handle (pointer, extents, strides) and scalar in `K::params()` order
/// ([`hoplite_abi::pack_for`]).
///
/// ```
/// use hoplite_core::device_kernel::{DeviceIteration, DeviceKernel, DevicePattern, DeviceParam, ScalarType};
/// use hoplite_cuda::params::{pack_for, IterationArgs, KernelArg, ScalarArg};
///
/// struct Scale;
/// // SAFETY: the entry touches no memory.
/// unsafe impl DeviceKernel for Scale {
///     const NAME: &'static str = "scale";
///     const ENTRY: &'static str = "scale_for";
///     const ITERATION: DeviceIteration = DeviceIteration::Range;
///     const PATTERN: DevicePattern = DevicePattern::For;
///     fn params() -> &'static [DeviceParam] {
///         &[DeviceParam::Scalar { name: "a", ty: ScalarType::F32 }]
///     }
///     fn cuda_source() -> &'static str { "" }
/// }
/// let p = pack_for::<Scale>(&IterationArgs::Range { begin: 0, end: 10 }, &[KernelArg::Scalar(ScalarArg::F32(2.0))])?;
/// assert_eq!(p.offsets(), [0, 8, 16]);
/// assert_eq!(p.len(), 20);
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// [`CudaError::InvalidLaunch`] when the kernel is not a `parallel_for`, the iteration space
/// is not the kernel's, the arguments do not match `K::params()` in number, kind, element
/// type, rank or scalar type, or the parameters exceed [`MAX_PARAM_BYTES`].
pub fn pack_for<K: DeviceKernel>(
    iteration: &IterationArgs,
    args: &[KernelArg],
) -> Result<ParamBuffer, CudaError> {
    pack_for_args_info(&DeviceKernelInfo::of::<K>(), iteration, args)
}

/// [`pack_for`] for the kernel `k` (found at run time by a launch), of a launch's own
/// arguments, which hold their [`KernelArg`]s.
pub(crate) fn pack_for_args_info(
    k: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, CudaError> {
    hoplite_abi::pack_for(k, iteration, args).map_err(invalid)
}

/// Packs the parameters of `K`'s entry for a reduction: the `parallel_for` parameters, then
/// the code of `walk` (how threads share the iteration space:
/// [`ReduceWalk::for_join`](crate::reduce::ReduceWalk::for_join) of the reducer's
/// commutativity), the code of the join the device applies to each block's values (`join`
/// where [`device_join_for`](crate::reduce::device_join_for) keeps it, else -1: a partial per
/// thread), the reducer's identity in the device layout of `V` and the partials pointer (0
/// here; the launch sets it once the partials are allocated) ([`hoplite_abi::pack_reduce`]).
///
/// ```
/// use hoplite_core::device_kernel::{DeviceIteration, DeviceKernel, DevicePattern, DeviceParam, ScalarType};
/// use hoplite_core::ValLoc;
/// use hoplite_cuda::params::{pack_reduce, IterationArgs};
/// use hoplite_cuda::reduce::ReduceWalk;
///
/// struct ArgMin;
/// // SAFETY: never launched.
/// unsafe impl DeviceKernel for ArgMin {
///     const NAME: &'static str = "argmin";
///     const ENTRY: &'static str = "argmin_reduce_range";
///     const ITERATION: DeviceIteration = DeviceIteration::Range;
///     const PATTERN: DevicePattern = DevicePattern::ReduceValLoc(ScalarType::F32);
///     fn params() -> &'static [DeviceParam] { &[] }
///     fn cuda_source() -> &'static str { "" }
/// }
/// let identity = ValLoc { val: f32::MAX, loc: None };
/// let range = IterationArgs::Range { begin: 0, end: 10 };
/// let p = pack_reduce::<ArgMin, _>(&range, &[], &identity, None, ReduceWalk::Strided)?;
/// // begin, end, the walk, the device join (-1: none for a location), the 16-byte identity
/// // (8-byte aligned), the partials pointer.
/// assert_eq!(p.offsets(), [0, 8, 16, 20, 24, 40]);
/// # Ok::<(), hoplite_cuda::CudaError>(())
/// ```
///
/// # Errors
///
/// As for [`pack_for`], and [`CudaError::InvalidLaunch`] when the kernel's pattern is not
/// the reduction of `V` (a `Sum<f64>` reducer for a kernel accumulating `f32`, a `MinLoc`
/// reducer for a plain `f64` accumulator).
pub fn pack_reduce<K: DeviceKernel, V: DeviceReduceValue>(
    iteration: &IterationArgs,
    args: &[KernelArg],
    identity: &V,
    join: Option<DeviceJoin>,
    walk: ReduceWalk,
) -> Result<ParamBuffer, CudaError> {
    pack_reduce_args::<K, V>(iteration, args, identity, join, walk)
}

/// [`pack_reduce`] of a launch's own arguments, which hold their [`KernelArg`]s.
pub(crate) fn pack_reduce_args<K: DeviceKernel, V: DeviceReduceValue>(
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
    identity: &V,
    join: Option<DeviceJoin>,
    walk: ReduceWalk,
) -> Result<ParamBuffer, CudaError> {
    pack_reduce_args_info::<V>(
        &DeviceKernelInfo::of::<K>(),
        iteration,
        args,
        identity,
        join,
        walk,
    )
}

/// The parameters of a reduction of `k` with `reducer`, as every device reduction (eager
/// launch or graph node) packs them: the reducer's identity, the join the device applies
/// where it has one ([`device_join_for`](crate::reduce::device_join_for)), and the walk its
/// commutativity asks for ([`walk_for`](crate::reduce::walk_for): one block per thread for a
/// join that is not commutative, so that its partials join in index order).
pub(crate) fn pack_reduction<R>(
    k: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
    reducer: &R,
) -> Result<(ParamBuffer, Option<DeviceJoin>), CudaError>
where
    R: hoplite_core::Reducer,
    R::Value: DeviceReduceValue,
{
    let join = crate::reduce::device_join_for(k.pattern, reducer.device_join());
    let walk = crate::reduce::walk_for(reducer);
    let params = pack_reduce_args_info::<R::Value>(k, iteration, args, &reducer.init(), join, walk)?;
    Ok((params, join))
}

/// [`pack_reduce_args`] for the kernel `k`, which a launch found at run time.
pub(crate) fn pack_reduce_args_info<V: DeviceReduceValue>(
    k: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
    identity: &V,
    join: Option<DeviceJoin>,
    walk: ReduceWalk,
) -> Result<ParamBuffer, CudaError> {
    check_reduce_pattern::<V>(k)?;
    hoplite_abi::pack_reduce(k, iteration, args, &device_bytes(identity), join, walk).map_err(invalid)
}

/// Packs the parameters of `K`'s scan entry: the `parallel_for` parameters, the identity
/// (zero), the per-thread values pointer (0 here) and the final-pass flag (`false`)
/// ([`hoplite_abi::pack_scan`]).
///
/// # Errors
///
/// As for [`pack_for`], and [`CudaError::InvalidLaunch`] when `K` is not a scan of `T`.
pub fn pack_scan<K: DeviceKernel, T: DeviceReduceValue + hoplite_core::ScanValue>(
    iteration: &IterationArgs,
    args: &[KernelArg],
) -> Result<ParamBuffer, CudaError> {
    pack_scan_args::<K, T>(iteration, args)
}

/// [`pack_scan`] of a launch's own arguments, which hold their [`KernelArg`]s.
pub(crate) fn pack_scan_args<K: DeviceKernel, T: DeviceReduceValue + hoplite_core::ScanValue>(
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, CudaError> {
    pack_scan_args_info::<T>(&DeviceKernelInfo::of::<K>(), iteration, args)
}

/// [`pack_scan_args`] for the kernel `k`, which a launch found at run time.
pub(crate) fn pack_scan_args_info<T: DeviceReduceValue + hoplite_core::ScanValue>(
    k: &DeviceKernelInfo,
    iteration: &IterationArgs,
    args: &[impl AsRef<KernelArg>],
) -> Result<ParamBuffer, CudaError> {
    if !matches!((k.pattern, plain_scalar(T::PATTERN)), (DevicePattern::Scan(s), Some(t)) if s == t) {
        return Err(CudaError::InvalidLaunch {
            kernel: k.name,
            reason: format!(
                "the kernel computes {:?}, but the scan accumulates {}; scan with the kernel's value type",
                k.pattern,
                std::any::type_name::<T>()
            ),
        });
    }
    hoplite_abi::pack_scan(k, iteration, args, &device_bytes(&T::zero())).map_err(invalid)
}

/// The scalar type of a plain value (`Reduce(s)`), which is what a scan sums.
fn plain_scalar(pattern: DevicePattern) -> Option<ScalarType> {
    match pattern {
        DevicePattern::Reduce(s) => Some(s),
        _ => None,
    }
}

/// `value`'s bytes in the device layout of its pattern.
fn device_bytes<V: DeviceReduceValue>(value: &V) -> Vec<u8> {
    let layout = value_layout(V::PATTERN).unwrap_or(ValueLayout { size: 0, align: 1 });
    let mut bytes = vec![0u8; layout.size];
    value.write_device(&mut bytes);
    bytes
}

/// Refuses a kernel whose pattern is not the reduction `expected`.
fn check_reduce_pattern<V: DeviceReduceValue>(k: &DeviceKernelInfo) -> Result<(), CudaError> {
    let expected = V::PATTERN;
    if V::reduced_by(k.pattern)
        && value_layout(expected).is_some()
        && !matches!(expected, DevicePattern::Scan(_))
    {
        return Ok(());
    }
    Err(CudaError::InvalidLaunch {
        kernel: k.name,
        reason: format!(
            "the kernel computes {:?}, but the reducer's value is reduced as {expected:?}; use the reducer the kernel's accumulator was written for",
            k.pattern
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{IndexOrder, TeamScratch};
    use hoplite_core::device_kernel::{DeviceIteration, DeviceParam, HandleAccess};

    struct Md;
    // SAFETY: test-only; never launched.
    unsafe impl DeviceKernel for Md {
        const NAME: &'static str = "md";
        const ENTRY: &'static str = "md_for";
        const ITERATION: DeviceIteration = DeviceIteration::MdRange(2);
        const PATTERN: DevicePattern = DevicePattern::For;
        fn params() -> &'static [DeviceParam] {
            &[
                DeviceParam::Scalar {
                    name: "flag",
                    ty: ScalarType::Bool,
                },
                DeviceParam::Handle {
                    name: "x",
                    access: HandleAccess::Read,
                    element: ScalarType::F64,
                    rank: 2,
                },
                DeviceParam::Scalar {
                    name: "n",
                    ty: ScalarType::I32,
                },
                DeviceParam::Scalar {
                    name: "a",
                    ty: ScalarType::F64,
                },
            ]
        }
        fn cuda_source() -> &'static str {
            ""
        }
    }

    fn md_args() -> Vec<KernelArg> {
        vec![
            KernelArg::Scalar(ScalarArg::Bool(true)),
            KernelArg::Handle(HandleArg {
                ptr: 0xdead_beef_0000,
                access: HandleAccess::Read,
                element: ScalarType::F64,
                extents: vec![3, 4],
                strides: vec![4, 1],
            }),
            KernelArg::Scalar(ScalarArg::I32(-7)),
            KernelArg::Scalar(ScalarArg::F64(1.5)),
        ]
    }

    /// Every device reduction packs through `pack_reduction`: the walk follows the reducer's
    /// commutativity (one block per thread, so that partials join in index order, for a join
    /// that is not commutative), the device join its `device_join`.
    #[test]
    fn reductions_pack_the_walk_their_reducer_needs() {
        use hoplite_core::{Custom, MinLoc, Sum};

        let info = |pattern| DeviceKernelInfo {
            name: "r",
            entry: "r_reduce_range",
            iteration: DeviceIteration::Range,
            pattern,
            params: &[],
            cuda_source: "",
            source_hash: 0,
        };
        let range = IterationArgs::Range { begin: 0, end: 10 };
        let none: [KernelArg; 0] = [];
        // The walk and the join are the two `int`s after the iteration: at 16 and 20.
        let codes = |p: &ParamBuffer| {
            let b = p.bytes();
            let int = |at: usize| i32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
            (int(p.offsets()[2]), int(p.offsets()[3]))
        };
        let i64s = info(DevicePattern::Reduce(ScalarType::I64));
        let (p, join) = pack_reduction(&i64s, &range, &none, &Sum::<i64>::new()).expect("sum");
        assert_eq!((codes(&p), join), ((0, 0), Some(DeviceJoin::Sum)));
        let concat = Custom::new(|| 0i64, |d: &mut i64, s: i64| *d = *d * 10 + s);
        let (p, join) = pack_reduction(&i64s, &range, &none, &concat).expect("custom");
        assert_eq!((codes(&p), join), ((1, -1), None));
        let locs = info(DevicePattern::ReduceValLoc(ScalarType::F64));
        let (p, _) = pack_reduction(&locs, &range, &none, &MinLoc::<f64>::new()).expect("min loc");
        assert_eq!(codes(&p), (1, -1));
        let e = pack_reduction(&locs, &range, &none, &Sum::<f64>::new()).expect_err("a sum of ValLoc");
        assert!(e.to_string().contains("ReduceValLoc"), "{e}");
    }

    #[test]
    fn offsets_follow_the_abi_alignment() {
        let it = IterationArgs::MdRange {
            begins: vec![1, 2],
            ends: vec![3, 4],
            order: IndexOrder::FirstFastest,
        };
        let mut p = pack_for::<Md>(&it, &md_args()).expect("matching arguments");
        // 4 bounds (0..32), the order (an int) at 32, bool at 36, handle pointer aligned up
        // to 40, 2 extents, 2 strides (48..80), i32 at 80, f64 aligned up to 88.
        assert_eq!(p.offsets(), [0, 8, 16, 24, 32, 36, 40, 48, 56, 64, 72, 80, 88]);
        assert_eq!(p.len(), 96);
        let bytes = p.bytes();
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        assert_eq!([word(0), word(8), word(16), word(24)], [1, 2, 3, 4]);
        assert_eq!(i32::from_le_bytes(bytes[32..36].try_into().expect("4 bytes")), 1);
        assert_eq!(bytes[36], 1);
        assert_eq!(&bytes[37..40], &[0; 3]);
        assert_eq!(word(40), 0xdead_beef_0000);
        assert_eq!([word(48), word(56), word(64), word(72)], [3, 4, 4, 1]);
        assert_eq!(i32::from_le_bytes(bytes[80..84].try_into().expect("4 bytes")), -7);
        assert_eq!(f64::from_bits(word(88)), 1.5);
        // The pointers point at the offsets, each aligned to its parameter's size.
        let ptrs = p.pointers();
        let base = ptrs[0] as usize;
        for (ptr, off) in ptrs
            .iter()
            .zip([0, 8, 16, 24, 32, 36, 40, 48, 56, 64, 72, 80, 88])
        {
            assert_eq!(*ptr as usize - base, off);
        }
        assert_eq!(base % 8, 0);
    }

    struct Teams;
    // SAFETY: test-only; never launched.
    unsafe impl DeviceKernel for Teams {
        const NAME: &'static str = "teams";
        const ENTRY: &'static str = "teams_for_team";
        const ITERATION: DeviceIteration = DeviceIteration::Team;
        const PATTERN: DevicePattern = DevicePattern::For;
        fn params() -> &'static [DeviceParam] {
            &[DeviceParam::Scalar {
                name: "n",
                ty: ScalarType::U32,
            }]
        }
        fn cuda_source() -> &'static str {
            ""
        }
    }

    #[test]
    fn team_entries_get_the_league_then_the_four_scratch_requests_then_the_vector_length() {
        let it = IterationArgs::Team {
            league_size: 12,
            scratch: TeamScratch {
                per_team: 100,
                per_thread: 8,
                level1_per_team: 4096,
                level1_per_thread: 24,
            },
            vector_length: 4,
        };
        let mut p = pack_for::<Teams>(&it, &[KernelArg::Scalar(ScalarArg::U32(5))]).expect("matching");
        assert_eq!(p.offsets(), [0, 8, 16, 24, 32, 40, 48]);
        let bytes = p.bytes();
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        // The league, then per team at levels 0 and 1, then per thread at levels 0 and 1, then
        // the vector length.
        assert_eq!(
            [word(0), word(8), word(16), word(24), word(32), word(40)],
            [12, 100, 4096, 8, 24, 4]
        );
        assert_eq!(u32::from_le_bytes(bytes[48..52].try_into().expect("4 bytes")), 5);
        assert_eq!(p.pointers().len(), 7);
    }

    #[test]
    fn mismatches_are_typed_errors() {
        let it = IterationArgs::MdRange {
            begins: vec![0, 0],
            ends: vec![3, 4],
            order: IndexOrder::LastFastest,
        };
        let mut args = md_args();
        args.pop();
        let e = pack_for::<Md>(&it, &args).expect_err("too few");
        assert!(e.to_string().contains("3 arguments for 4 parameters"), "{e}");

        let mut args = md_args();
        args[3] = KernelArg::Scalar(ScalarArg::F32(1.5));
        let e = pack_for::<Md>(&it, &args).expect_err("wrong scalar type");
        assert!(e.to_string().contains("`a` is f64"), "{e}");

        let mut args = md_args();
        args[1] = KernelArg::Handle(HandleArg {
            ptr: 0,
            access: HandleAccess::Read,
            element: ScalarType::F64,
            extents: vec![12],
            strides: vec![1],
        });
        let e = pack_for::<Md>(&it, &args).expect_err("wrong rank");
        assert!(e.to_string().contains("rank-2 view of f64"), "{e}");

        // A writer where the kernel takes a reader (or the reverse) is refused: the launch's
        // writer checks depend on the kinds matching.
        let mut args = md_args();
        if let KernelArg::Handle(h) = &mut args[1] {
            h.access = HandleAccess::Write;
        }
        let e = pack_for::<Md>(&it, &args).expect_err("wrong access");
        assert!(e.to_string().contains("`x` is a Read handle"), "{e}");

        let mut args = md_args();
        args.swap(0, 1);
        assert!(pack_for::<Md>(&it, &args).is_err());

        let e =
            pack_for::<Md>(&IterationArgs::Range { begin: 0, end: 1 }, &md_args()).expect_err("wrong policy");
        assert!(e.to_string().contains("MdRange(2)"), "{e}");
        let short = IterationArgs::MdRange {
            begins: vec![0],
            ends: vec![3],
            order: IndexOrder::LastFastest,
        };
        assert!(pack_for::<Md>(&short, &md_args()).is_err());
    }

    struct Wide;
    // SAFETY: test-only; never launched.
    unsafe impl DeviceKernel for Wide {
        const NAME: &'static str = "wide";
        const ENTRY: &'static str = "wide_for";
        const ITERATION: DeviceIteration = DeviceIteration::Range;
        const PATTERN: DevicePattern = DevicePattern::For;
        fn params() -> &'static [DeviceParam] {
            const P: DeviceParam = DeviceParam::Scalar {
                name: "s",
                ty: ScalarType::U64,
            };
            &[P; 600]
        }
        fn cuda_source() -> &'static str {
            ""
        }
    }

    #[test]
    fn too_many_parameter_bytes() {
        let args = vec![KernelArg::Scalar(ScalarArg::U64(1)); 600];
        let e = pack_for::<Wide>(&IterationArgs::Range { begin: 0, end: 1 }, &args).expect_err("4816 bytes");
        assert!(e.to_string().contains("4816 bytes"), "{e}");
    }
}
