//! The types of values in a kernel body, the slots of literals whose type a later use decides,
//! and their unification.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Lit};

use super::{Translator, unsupported};
use crate::signature::{SUPPORTED_SCALARS, Scalar, ScalarSyntax};

/// The type of a value in the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ty {
    Known(Scalar),
    /// An integer of a type not known yet: an unsuffixed literal, or a local of a slot.
    Int(Option<usize>),
    /// A float of a type not known yet.
    Float(Option<usize>),
    Unit,
    Token,
    MdToken(usize),
    Handle(usize),
    Acc(Scalar),
    /// A `&mut ValLoc<T>` accumulator: only `update_min` and `update_max`.
    AccLoc(Scalar),
    /// A `&mut MinMaxScalar<T>` accumulator: only `update`.
    AccMinMax(Scalar),
    /// A `&mut MinMaxLocScalar<T>` accumulator: only `update(value, index)`.
    AccMinMaxLoc(Scalar),
    /// A `&mut Option<usize>` accumulator: only `FirstLoc::update(acc, index)` and
    /// `LastLoc::update(acc, index)`.
    AccIndex,
    /// The team member of a team kernel.
    Member,
    /// A slice of team scratch (shared memory) of this element type.
    Scratch(Scalar),
    /// The index of a nested loop's closure (`*j`, `j.get()`).
    NestedIdx,
    /// The team's row of the rank-2 writer of this handle index (`w.team_row(m.league_token())`).
    TeamRow(usize),
    /// `m.team_slot()`: this thread's `[league rank, team rank]`, for a team-slots handle.
    SlotToken,
    /// The league rank as a write token, bound by `if let Some(l) = m.league_token().single()`
    /// on team rank 0: a rank-1 writer stores at it, checked.
    LeagueIdx,
    /// A unique token parameter (index into the signature's tokens).
    Tokens(usize),
    /// An id held by `let id = tokens.guard();`: `*id` or `id.id()` is the id.
    Guard,
}

impl Translator<'_> {
    pub(super) fn new_slot(&mut self) -> usize {
        let slot = self.next_slot;
        self.next_slot += 1;
        if self.slots.len() <= slot {
            self.slots.push(None);
            self.slot_links.push(slot);
        }
        slot
    }

    /// The slot that stands for `slot` and every slot unified with it.
    fn root(&self, mut slot: usize) -> usize {
        while let Some(&next) = self.slot_links.get(slot) {
            if next == slot {
                break;
            }
            slot = next;
        }
        slot
    }

    /// Makes slots `a` and `b` one (both unresolved): returns the root that stands for both.
    fn link(&mut self, a: usize, b: usize) -> usize {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra != rb
            && let Some(link) = self.slot_links.get_mut(rb)
        {
            *link = ra;
        }
        ra
    }

    /// A type with its slot resolved when it is known.
    pub(super) fn norm(&self, ty: Ty) -> Ty {
        match ty {
            Ty::Int(Some(slot)) | Ty::Float(Some(slot)) => {
                match self.slots.get(self.root(slot)).copied().flatten() {
                    Some(s) => Ty::Known(s),
                    None => ty,
                }
            }
            other => other,
        }
    }

    /// The scalar a value has once every use is seen: unresolved integers are `i32`, floats `f64`.
    pub(super) fn finalize(&self, ty: Ty) -> Option<Scalar> {
        match self.norm(ty) {
            Ty::Known(s) => Some(s),
            Ty::Int(_) => Some(Scalar::I32),
            Ty::Float(_) => Some(Scalar::F64),
            _ => None,
        }
    }

    pub(super) fn set_slot(&mut self, ty: Ty, to: Scalar) {
        if let Ty::Int(Some(slot)) | Ty::Float(Some(slot)) = ty
            && let root = self.root(slot)
            && let Some(entry) = self.slots.get_mut(root)
        {
            *entry = Some(to);
        }
    }

    /// The common type of two operands, resolving slots as Rust's inference would.
    pub(super) fn unify(&mut self, a: Ty, b: Ty, span: Span) -> syn::Result<Ty> {
        let (a, b) = (self.norm(a), self.norm(b));
        let mismatch = || syn::Error::new(span, format!("mismatched types in a #[kernel]: {a:?} and {b:?}"));
        match (a, b) {
            (Ty::Known(x), Ty::Known(y)) => {
                if x == y {
                    Ok(a)
                } else {
                    Err(mismatch())
                }
            }
            (Ty::Known(x), other @ Ty::Int(_)) | (other @ Ty::Int(_), Ty::Known(x)) if x.is_integer() => {
                self.set_slot(other, x);
                Ok(Ty::Known(x))
            }
            (Ty::Known(x), other @ Ty::Float(_)) | (other @ Ty::Float(_), Ty::Known(x)) if x.is_float() => {
                self.set_slot(other, x);
                Ok(Ty::Known(x))
            }
            // Both unresolved (`norm` resolved known slots): one type for both from now on, as
            // Rust infers one type for the operands of `a + b`.
            (Ty::Int(Some(s)), Ty::Int(Some(t))) => Ok(Ty::Int(Some(self.link(s, t)))),
            (Ty::Float(Some(s)), Ty::Float(Some(t))) => Ok(Ty::Float(Some(self.link(s, t)))),
            (Ty::Int(s), Ty::Int(t)) => Ok(Ty::Int(s.or(t))),
            (Ty::Float(s), Ty::Float(t)) => Ok(Ty::Float(s.or(t))),
            _ => Err(mismatch()),
        }
    }

    pub(super) fn expect(&mut self, ty: Ty, want: Scalar, span: Span) -> syn::Result<()> {
        self.unify(ty, Ty::Known(want), span).map(|_| ())
    }

    /// Checks that `expr` is a `usize` (an index, a length, a count).
    pub(super) fn expect_usize(&mut self, expr: &Expr) -> syn::Result<()> {
        let t = self.infer(expr)?;
        self.expect(t, Scalar::Usize, expr.span())
    }

    pub(super) fn scalar_of(&self, ty: Ty, span: Span) -> syn::Result<Scalar> {
        self.finalize(ty).ok_or_else(|| {
            syn::Error::new(
                span,
                "expected a number or bool here, not a handle, token or accumulator",
            )
        })
    }
}

pub(super) fn describe(ty: Ty) -> &'static str {
    match ty {
        Ty::Unit => "`()`",
        Ty::Token => "the iteration token",
        Ty::MdToken(_) => "the MDRange token",
        Ty::Tokens(_) => "a unique token",
        Ty::Guard => "a token guard",
        _ => "this value",
    }
}

/// `f64::MAX`, `i32::MIN`, `f32::NAN`, ...: the type and the CUDA C value.
pub(super) fn type_const(path: &syn::Path) -> Option<(Scalar, String)> {
    if path.segments.len() != 2 {
        return None;
    }
    let s = Scalar::from_rust_name(&path.segments[0].ident.to_string())?;
    let name = path.segments[1].ident.to_string();
    let c = s.cuda_name();
    let code = match (s, name.as_str()) {
        (Scalar::F64, "MAX") => "1.7976931348623157e308".to_owned(),
        (Scalar::F64, "MIN") => "(-1.7976931348623157e308)".to_owned(),
        (Scalar::F64, "EPSILON") => "2.220446049250313e-16".to_owned(),
        (Scalar::F32, "MAX") => "3.40282347e38f".to_owned(),
        (Scalar::F32, "MIN") => "(-3.40282347e38f)".to_owned(),
        (Scalar::F32, "EPSILON") => "1.1920929e-7f".to_owned(),
        (Scalar::F64 | Scalar::F32, "INFINITY") => format!("(({c})(1.0 / 0.0))"),
        (Scalar::F64 | Scalar::F32, "NEG_INFINITY") => format!("(({c})(-1.0 / 0.0))"),
        (Scalar::F64 | Scalar::F32, "NAN") => format!("(({c})(0.0 / 0.0))"),
        (s, "MIN") if s.is_integer() => format!("(({c}){})", s.cuda_bounds().0),
        (s, "MAX") if s.is_integer() => format!("(({c}){})", s.cuda_bounds().1),
        _ => return None,
    };
    Some((s, code))
}

pub(super) fn lit_type(lit: &Lit) -> syn::Result<Ty> {
    match lit {
        Lit::Int(i) => match i.suffix() {
            "" => Ok(Ty::Int(None)),
            suffix => Scalar::from_rust_name(suffix).map(Ty::Known).ok_or_else(|| {
                syn::Error::new(i.span(), format!("integer suffix `{suffix}` is not supported"))
            }),
        },
        Lit::Float(f) => match f.suffix() {
            "" => Ok(Ty::Float(None)),
            "f32" => Ok(Ty::Known(Scalar::F32)),
            "f64" => Ok(Ty::Known(Scalar::F64)),
            suffix => Err(syn::Error::new(
                f.span(),
                format!("float suffix `{suffix}` is not supported"),
            )),
        },
        Lit::Bool(_) => Ok(Ty::Known(Scalar::Bool)),
        Lit::Str(s) => Err(syn::Error::new(
            s.span(),
            format!(
                "strings (`&str`, `String`) are not supported in a #[kernel]: a kernel computes with {SUPPORTED_SCALARS}"
            ),
        )),
        other => Err(unsupported(other.span(), "this literal")),
    }
}
