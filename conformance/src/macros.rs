//! The macros the check modules are written with.

/// The path of the enclosing check function (`hoplite_conformance::concept::axiom`): the
/// name its failures carry, through [`check`](crate::check).
macro_rules! axiom {
    () => {{
        fn here() {}
        let path = ::std::any::type_name_of_val(&here);
        path.strip_suffix("::here").unwrap_or(path)
    }};
}

/// Fails the enclosing check with a formatted message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::Failure::msg(format!($($fmt)+)));
        }
    };
}

/// Fails the enclosing check unless `left == right`, showing both and a formatted context.
macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($fmt:tt)+) => {{
        let (left, right) = (&$left, &$right);
        if left != right {
            return Err($crate::Failure::msg(format!(
                "{}: got {:?}, expected {:?}",
                format!($($fmt)+),
                left,
                right
            )));
        }
    }};
}
