//! Reducers: `Sum`, `Prod`, `Max`, `Min`, `BAnd`, `BOr`, `LAnd`, `LOr` in `team_reduce`, nested
//! reductions and `join` statements.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Expr};

use super::emission::arith;
use super::inference::arity;
use super::types::Ty;
use super::{Translator, Var, single_name};
use crate::signature::{Scalar, ScalarSyntax};

/// The reducers of `team_reduce`, nested reductions and `join` statements in a #[kernel].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ReducerKind {
    Sum,
    Prod,
    Max,
    Min,
    BAnd,
    BOr,
    LAnd,
    LOr,
}

/// The reducers a #[kernel] joins with, as the compile errors name them.
const REDUCERS: &str = "`Sum`, `Prod`, `Max`, `Min`, `BAnd`, `BOr`, `LAnd` and `LOr`";

impl ReducerKind {
    /// The reducer's `init()` for `s`, as C.
    pub(super) fn identity(self, s: Scalar) -> String {
        let c = s.cuda_name();
        match (self, s.is_float()) {
            (ReducerKind::Sum, _) => format!("(({c})0)"),
            (ReducerKind::Prod, _) => format!("(({c})1)"),
            (ReducerKind::Max, true) => format!("(({c})(-1.0 / 0.0))"),
            (ReducerKind::Min, true) => format!("(({c})(1.0 / 0.0))"),
            (ReducerKind::Max, false) => format!("(({c}){})", s.cuda_bounds().0),
            (ReducerKind::Min, false) => format!("(({c}){})", s.cuda_bounds().1),
            // `BitIdentity`: all bits set (`true` for `bool`), no bits set (`false`).
            (ReducerKind::BAnd, _) if s == Scalar::Bool => "true".to_owned(),
            (ReducerKind::BAnd, _) => format!("(({c})~0ull)"),
            (ReducerKind::BOr, _) if s == Scalar::Bool => "false".to_owned(),
            (ReducerKind::BOr, _) => format!("(({c})0)"),
            (ReducerKind::LAnd, _) => "true".to_owned(),
            (ReducerKind::LOr, _) => "false".to_owned(),
        }
    }

    /// The reducer's name in Rust.
    fn name(self) -> &'static str {
        match self {
            ReducerKind::Sum => "Sum",
            ReducerKind::Prod => "Prod",
            ReducerKind::Max => "Max",
            ReducerKind::Min => "Min",
            ReducerKind::BAnd => "BAnd",
            ReducerKind::BOr => "BOr",
            ReducerKind::LAnd => "LAnd",
            ReducerKind::LOr => "LOr",
        }
    }

    /// Checks that the reducer reduces values of `s`, as the host's trait bounds do: numbers
    /// for `Sum`, `Prod`, `Max` and `Min`, integers or `bool` for `BAnd` and `BOr`, `bool`
    /// for `LAnd` and `LOr`.
    pub(super) fn check(self, s: Scalar, span: Span) -> syn::Result<()> {
        let ok = match self {
            ReducerKind::Sum | ReducerKind::Prod | ReducerKind::Max | ReducerKind::Min => s != Scalar::Bool,
            ReducerKind::BAnd | ReducerKind::BOr => !s.is_float(),
            ReducerKind::LAnd | ReducerKind::LOr => s == Scalar::Bool,
        };
        if ok {
            return Ok(());
        }
        let what = match self {
            ReducerKind::Sum | ReducerKind::Prod | ReducerKind::Max | ReducerKind::Min => "numbers",
            ReducerKind::BAnd | ReducerKind::BOr => "integers or `bool`",
            ReducerKind::LAnd | ReducerKind::LOr => "`bool`",
        };
        Err(syn::Error::new(
            span,
            format!("`{}` reduces {what}, not `{}`", self.name(), s.rust_name()),
        ))
    }

    /// The prelude's team join of a value of C type `c` (in rank order, from rank 0's value).
    pub(super) fn team_fn(self, c: &str) -> String {
        let op = match self {
            ReducerKind::Sum => return format!("hl_team_sum<{c}>"),
            ReducerKind::Max => return format!("hl_team_max<{c}>"),
            ReducerKind::Min => return format!("hl_team_min<{c}>"),
            // The prelude's `hl_op<OP>` numbers (0 to 2 are the sum, maximum and minimum).
            ReducerKind::Prod => 3,
            ReducerKind::BAnd => 4,
            ReducerKind::BOr => 5,
            ReducerKind::LAnd => 6,
            ReducerKind::LOr => 7,
        };
        format!("hl_team_join<{c}, {op}>")
    }

    /// The reducer's `join(&mut dst, v)` as a C statement, `dst` and `v` of type `s`.
    fn join_stmt(self, s: Scalar, dst: &str, v: &str, span: Span) -> syn::Result<String> {
        Ok(match self {
            ReducerKind::Sum => format!(
                "{dst} = {};",
                arith(&BinOp::Add(Default::default()), s, dst, v, span)?
            ),
            ReducerKind::Prod => format!(
                "{dst} = {};",
                arith(&BinOp::Mul(Default::default()), s, dst, v, span)?
            ),
            ReducerKind::Max => format!("hl_keep_max(&{dst}, {v});"),
            ReducerKind::Min => format!("hl_keep_min(&{dst}, {v});"),
            ReducerKind::BAnd => format!(
                "{dst} = {};",
                arith(&BinOp::BitAnd(Default::default()), s, dst, v, span)?
            ),
            ReducerKind::BOr => format!(
                "{dst} = {};",
                arith(&BinOp::BitOr(Default::default()), s, dst, v, span)?
            ),
            ReducerKind::LAnd => format!("{dst} = {dst} && {v};"),
            ReducerKind::LOr => format!("{dst} = {dst} || {v};"),
        })
    }
}

impl Translator<'_> {
    /// `Sum::new().join(&mut x, v)` (or `Max`, `Min`; `x` a local or the accumulator `acc`):
    /// the reducer's join, as the host's `Reducer::join` computes it.
    pub(super) fn reducer_join(&mut self, m: &syn::ExprMethodCall) -> syn::Result<()> {
        const USAGE: &str = "a reducer's `join` in a #[kernel] is `Sum::new().join(&mut x, v)` (or `Prod`, `Max`, \
             `Min`, `BAnd`, `BOr`, `LAnd`, `LOr`) with `x` a `let mut` local, or `Sum::new().join(acc, v)` on a `&mut T` accumulator";
        let (kind, turbofish) = reducer_kind(&m.receiver, false)?;
        let args: Vec<&Expr> = m.args.iter().collect();
        arity(m, "join", &args, 2)?;
        let (dst, ty) = match args[0] {
            Expr::Reference(r) if r.mutability.is_some() => self.place(&r.expr)?,
            Expr::Path(p) => match single_name(&p.path).and_then(|n| self.lookup(&n).cloned()) {
                Some(Var {
                    c_name,
                    ty: Ty::Acc(s),
                }) => (format!("(*{c_name})"), Ty::Known(s)),
                _ => return Err(syn::Error::new(args[0].span(), USAGE)),
            },
            other => return Err(syn::Error::new(other.span(), USAGE)),
        };
        let value_ty = self.infer(args[1])?;
        let t = self.unify(ty, value_ty, m.span())?;
        if let Some(want) = turbofish {
            self.expect(t, want, m.receiver.span())?;
        }
        let s = self.scalar_of(t, m.span())?;
        kind.check(s, m.span())?;
        self.set_slot(t, s);
        let v = self.emit(args[1], s)?;
        let code = kind.join_stmt(s, &dst, &v, m.span())?;
        self.line(&code);
        Ok(())
    }
}

/// A reducer written as `Sum::new()`, `Max::<f64>::new()`, `LAnd::default()` (behind `&` when
/// `by_ref`): its kind and the type a turbofish names.
pub(super) fn reducer_kind(arg: &Expr, by_ref: bool) -> syn::Result<(ReducerKind, Option<Scalar>)> {
    let call = match (arg, by_ref) {
        (Expr::Reference(r), true) => &*r.expr,
        (other, false) => other,
        _ => arg,
    };
    let mut named = None;
    let found = match call {
        Expr::Call(c) if c.args.is_empty() && (!by_ref || matches!(arg, Expr::Reference(_))) => {
            match &*c.func {
                Expr::Path(p) if !p.path.segments.is_empty() => {
                    let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
                    // `LAnd::new()`, `Sum::<f64>::new()`; a bare `Sum()` has no constructor.
                    let (ty_seg, ctor) = match segs.as_slice() {
                        [.., ty_seg, ctor] => (*ty_seg, *ctor),
                        _ => return Err(unknown_reducer(arg, by_ref, None)),
                    };
                    named = Some(ty_seg.ident.to_string());
                    let kind = match ty_seg.ident.to_string().as_str() {
                        "Sum" => Some(ReducerKind::Sum),
                        "Prod" => Some(ReducerKind::Prod),
                        "Max" => Some(ReducerKind::Max),
                        "Min" => Some(ReducerKind::Min),
                        "BAnd" => Some(ReducerKind::BAnd),
                        "BOr" => Some(ReducerKind::BOr),
                        "LAnd" => Some(ReducerKind::LAnd),
                        "LOr" => Some(ReducerKind::LOr),
                        _ => None,
                    };
                    let turbofish = match &ty_seg.arguments {
                        syn::PathArguments::AngleBracketed(a) => {
                            match a.args.iter().collect::<Vec<_>>().as_slice() {
                                [syn::GenericArgument::Type(t)] => Scalar::from_type(t),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    kind.filter(|_| matches!(ctor.ident.to_string().as_str(), "new" | "default"))
                        .map(|k| (k, turbofish))
                }
                _ => None,
            }
        }
        Expr::Call(c) => {
            if let Expr::Path(p) = &*c.func {
                let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
                if let [.., ty_seg, _] = segs.as_slice() {
                    named = Some(ty_seg.ident.to_string());
                }
            }
            None
        }
        Expr::Tuple(_) => {
            return Err(syn::Error::new_spanned(
                arg,
                format!(
                    "a tuple of reducers is not supported in a #[kernel]: reduce with one of {REDUCERS} at a time \
                     (one `team_reduce` or nested `parallel_reduce` per value), or write the kernel as a closure \
                     for the host backends"
                ),
            ));
        }
        _ => None,
    };
    found.ok_or_else(|| unknown_reducer(arg, by_ref, named.as_deref()))
}

/// The error for a reducer a #[kernel] cannot join with.
fn unknown_reducer(arg: &Expr, by_ref: bool, named: Option<&str>) -> syn::Error {
    let example = if by_ref {
        "`m.team_reduce(&Sum::new(), value)`"
    } else {
        "`..parallel_reduce(|j, acc: &mut f64| .., Sum::new())`"
    };
    let which = match named {
        Some(
            name @ ("MinLoc" | "MaxLoc" | "MinMax" | "MinMaxLoc" | "MinMaxFirstLastLoc" | "FirstLoc"
            | "LastLoc"),
        ) => {
            format!("`{name}` is not supported in a #[kernel]'s team or nested reductions; ")
        }
        Some("Custom") => "a `Custom` reducer's closures cannot run on a device; ".to_owned(),
        _ => String::new(),
    };
    syn::Error::new_spanned(
        arg,
        format!("{which}reductions in a #[kernel] support the {REDUCERS} reducers: {example}"),
    )
}
