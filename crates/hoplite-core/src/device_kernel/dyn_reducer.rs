//! A [`Reducer`] as a trait object, for a device backend that joins a reduction it did not
//! see the reducer type of (a reduce node of a graph, stored type-erased).

use std::any::{Any, TypeId};

use crate::Reducer;
use crate::device_kernel::DeviceJoin;

/// A [`Reducer`] whose values pass as [`Any`]: what a device backend holds of a reduction
/// stored behind a trait object (a graph's reduce node) to pack the reduction's launch, join
/// its partials in the backend's fixed order and finalize the total, as an eager launch of the
/// same reducer does. Implemented for every reducer whose value is `'static`.
///
/// A backend checks [`value_type`](Self::value_type) against the value types its device
/// produces and wraps the object back into a typed reducer of that type; every method that
/// takes a value ignores one of another type (and [`init_into`](Self::init_into) leaves `out`
/// as it was), so a mismatch shows as a missing value, never as a wrong one.
///
/// ```
/// use std::any::TypeId;
/// use hoplite_core::Sum;
/// use hoplite_core::device_kernel::DynReducer;
///
/// let sum: &dyn DynReducer = &Sum::<i64>::new();
/// assert_eq!(sum.value_type(), TypeId::of::<i64>());
/// let mut total: Option<i64> = None;
/// sum.init_into(&mut total);
/// let mut total = total.unwrap_or_default();
/// for partial in [3i64, 4] {
///     sum.join_any(&mut total, &mut Some(partial));
/// }
/// assert_eq!(total, 7);
/// ```
pub trait DynReducer: Send + Sync {
    /// The name of the reducer's type, for messages.
    fn reducer_name(&self) -> &'static str;
    /// The type id of the reducer's value.
    fn value_type(&self) -> TypeId;
    /// The name of the value's type, for messages.
    fn value_name(&self) -> &'static str;
    /// [`Reducer::is_commutative`] (named apart, so that a reducer's own method stays
    /// unambiguous where both traits are in scope).
    fn commutative(&self) -> bool;
    /// [`Reducer::device_join`] (named apart, as `commutative` is).
    fn join_on_device(&self) -> Option<DeviceJoin>;
    /// Stores the identity ([`Reducer::init`]) in `out`, an `Option` of the value type.
    fn init_into(&self, out: &mut dyn Any);
    /// [`Reducer::join`]: `dst` is a value, `src` an `Option` of one, which the join takes.
    fn join_any(&self, dst: &mut dyn Any, src: &mut dyn Any);
    /// [`Reducer::finalize`] of `value`, a value of the reducer's type.
    fn finalize_any(&self, value: &mut dyn Any);
}

impl<R> DynReducer for R
where
    R: Reducer,
    R::Value: 'static,
{
    fn reducer_name(&self) -> &'static str {
        std::any::type_name::<R>()
    }

    fn value_type(&self) -> TypeId {
        TypeId::of::<R::Value>()
    }

    fn value_name(&self) -> &'static str {
        std::any::type_name::<R::Value>()
    }

    fn commutative(&self) -> bool {
        self.is_commutative()
    }

    fn join_on_device(&self) -> Option<DeviceJoin> {
        self.device_join()
    }

    fn init_into(&self, out: &mut dyn Any) {
        if let Some(out) = out.downcast_mut::<Option<R::Value>>() {
            *out = Some(self.init());
        }
    }

    fn join_any(&self, dst: &mut dyn Any, src: &mut dyn Any) {
        let (Some(dst), Some(src)) = (
            dst.downcast_mut::<R::Value>(),
            src.downcast_mut::<Option<R::Value>>(),
        ) else {
            return;
        };
        if let Some(src) = src.take() {
            self.join(dst, src);
        }
    }

    fn finalize_any(&self, value: &mut dyn Any) {
        if let Some(value) = value.downcast_mut::<R::Value>() {
            self.finalize(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MinLoc, Sum, ValLoc};

    #[test]
    fn a_dyn_reducer_joins_as_its_reducer_does() {
        let min: &dyn DynReducer = &MinLoc::<f64>::new();
        assert!(!min.commutative());
        assert_eq!(min.join_on_device(), MinLoc::<f64>::new().device_join());
        let mut acc: Option<ValLoc<f64>> = None;
        min.init_into(&mut acc);
        let mut acc = acc.expect("the identity was stored");
        min.join_any(
            &mut acc,
            &mut Some(ValLoc {
                val: 2.0,
                loc: Some(5usize),
            }),
        );
        min.join_any(
            &mut acc,
            &mut Some(ValLoc {
                val: 1.0,
                loc: Some(9usize),
            }),
        );
        min.finalize_any(&mut acc);
        assert_eq!((acc.val, acc.loc), (1.0, Some(9)));
    }

    #[test]
    fn values_of_another_type_are_ignored() {
        let sum: &dyn DynReducer = &Sum::<i64>::new();
        let mut wrong: Option<f64> = None;
        sum.init_into(&mut wrong);
        assert_eq!(wrong, None);
        let mut total = 5i64;
        sum.join_any(&mut total, &mut Some(1.0f64));
        let mut src = Some(2i64);
        sum.join_any(&mut 0.5f64, &mut src);
        assert_eq!((total, src), (5, Some(2)), "nothing was joined or taken");
        assert_eq!(sum.value_name(), "i64");
    }
}
