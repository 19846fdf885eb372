//! Team storage: team and thread scratch slices (`team_scratch`, `thread_scratch`), and a team's
//! row of a rank-2 writer (`team_row`).

use syn::spanned::Spanned;
use syn::{Expr, Lit};

use super::inference::arity;
use super::types::Ty;
use super::{Translator, int_lit};
use crate::signature::{HandleKind, Scalar, ScalarSyntax};

pub(super) const SCRATCH_USAGE: &str = "scratch in a #[kernel] is allocated once per `let`: \
     `let s = m.team_scratch(level).alloc::<T>(len).unwrap();` (or `m.thread_scratch(level)`, or \
     `.expect(\"..\")`) with the level 0 or 1 and T one of i32, i64, u32, u64, usize, f32, f64; \
     then `s.get(k)`, `s.set(k, v)`, `s.len()`";

pub(super) const TEAM_ROW_USAGE: &str = "a team's row in a #[kernel] is `let row = w.team_row(m.league_token());` \
     for a rank-2 writer `w`; then `row.set(j, v)` and `row.get(j)` with the index `j` of a team-level \
     loop, `row.len()`, `row.row()`";

impl Translator<'_> {
    /// `m.team_scratch(level).alloc::<T>(len).unwrap()` (or `m.thread_scratch(level)`, or
    /// `.expect("..")`): the element type, the pad (team level 0, team level 1, thread level
    /// 0, thread level 1: the order of `hl_member::pad`) and the length, or `None` when `expr`
    /// is no scratch allocation at all.
    pub(super) fn scratch_alloc<'e>(
        &mut self,
        expr: &'e Expr,
    ) -> syn::Result<Option<(Scalar, usize, &'e Expr)>> {
        let Expr::MethodCall(outer) = expr else {
            return Ok(None);
        };
        let Expr::MethodCall(alloc) = &*outer.receiver else {
            return Ok(None);
        };
        let Expr::MethodCall(pad) = &*alloc.receiver else {
            return Ok(None);
        };
        let receiver = self.infer_quiet(&pad.receiver)?;
        let first_pad = match pad.method.to_string().as_str() {
            "team_scratch" => 0,
            "thread_scratch" => 2,
            _ => return Ok(None),
        };
        if self.norm(receiver) != Ty::Member {
            return Ok(None);
        }
        let unwrapped = match outer.method.to_string().as_str() {
            "unwrap" => outer.args.is_empty(),
            "expect" => matches!(
                outer.args.iter().collect::<Vec<_>>().as_slice(),
                [Expr::Lit(syn::ExprLit { lit: Lit::Str(_), .. })]
            ),
            _ => false,
        };
        // The host panics on any other level.
        let level = match pad.args.iter().collect::<Vec<_>>().as_slice() {
            [arg] => int_lit(arg).filter(|&l| l < 2),
            _ => None,
        };
        let element =
            alloc
                .turbofish
                .as_ref()
                .and_then(|t| match t.args.iter().collect::<Vec<_>>().as_slice() {
                    [syn::GenericArgument::Type(ty)] => Scalar::from_type(ty),
                    _ => None,
                });
        let element = element.filter(|s| !matches!(s, Scalar::Bool | Scalar::Isize));
        match (
            unwrapped,
            level,
            alloc.method == "alloc",
            element,
            alloc.args.first(),
        ) {
            (true, Some(level), true, Some(element), Some(len)) if alloc.args.len() == 1 => {
                Ok(Some((element, first_pad + level, len)))
            }
            _ => Err(syn::Error::new_spanned(expr, SCRATCH_USAGE)),
        }
    }

    /// `w.team_row(m.league_token())` for a rank-2 writer `w`: the writer's handle index, or
    /// `None` when `expr` is no `team_row` call at all.
    pub(super) fn team_row_of(&mut self, expr: &Expr) -> syn::Result<Option<usize>> {
        let Expr::MethodCall(call) = expr else {
            return Ok(None);
        };
        if call.method != "team_row" {
            return Ok(None);
        }
        let receiver = self.infer_quiet(&call.receiver)?;
        let Ty::Handle(k) = self.norm(receiver) else {
            return Err(syn::Error::new_spanned(call, TEAM_ROW_USAGE));
        };
        let h = &self.sig.handles[k];
        if h.kind != HandleKind::Writer || h.rank != 2 {
            return Err(syn::Error::new_spanned(call, TEAM_ROW_USAGE));
        }
        let token = match call.args.iter().collect::<Vec<_>>().as_slice() {
            [Expr::MethodCall(t)] if t.method == "league_token" && t.args.is_empty() => Some(t),
            _ => None,
        };
        let Some(token) = token else {
            return Err(syn::Error::new_spanned(call, TEAM_ROW_USAGE));
        };
        let member = self.infer_quiet(&token.receiver)?;
        if self.norm(member) != Ty::Member {
            return Err(syn::Error::new_spanned(call, TEAM_ROW_USAGE));
        }
        Ok(Some(k))
    }

    pub(super) fn team_row_method_type(
        &mut self,
        k: usize,
        method: &str,
        args: &[&Expr],
        m: &syn::ExprMethodCall,
    ) -> syn::Result<Ty> {
        let element = self.sig.handles[k].element;
        let column = |tx: &mut Self, arg: &Expr| -> syn::Result<()> {
            if matches!(tx.infer_quiet(arg), Ok(Ty::NestedIdx)) {
                Ok(())
            } else {
                Err(syn::Error::new(
                    arg.span(),
                    "a team row stores at the index of a team-level loop: \
                     `TeamThreadRange::new(m, n).parallel_for(|j| row.set(j, v))`",
                ))
            }
        };
        match method {
            "get" => {
                arity(m, method, args, 1)?;
                column(self, args[0])?;
                Ok(Ty::Known(element))
            }
            "set" => {
                arity(m, method, args, 2)?;
                column(self, args[0])?;
                let t = self.infer(args[1])?;
                self.expect(t, element, args[1].span())?;
                Ok(Ty::Unit)
            }
            "len" | "row" => {
                arity(m, method, args, 0)?;
                Ok(Ty::Known(Scalar::Usize))
            }
            "is_empty" => {
                arity(m, method, args, 0)?;
                Ok(Ty::Known(Scalar::Bool))
            }
            _ => Err(syn::Error::new(
                m.method.span(),
                format!(
                    "method `{method}` is not supported on a team row in a #[kernel]; supported: get, set, len, is_empty, row"
                ),
            )),
        }
    }

    pub(super) fn scratch_method_type(
        &mut self,
        element: Scalar,
        method: &str,
        args: &[&Expr],
        m: &syn::ExprMethodCall,
    ) -> syn::Result<Ty> {
        match method {
            "get" => {
                arity(m, method, args, 1)?;
                self.expect_usize(args[0])?;
                Ok(Ty::Known(element))
            }
            "set" => {
                arity(m, method, args, 2)?;
                self.expect_usize(args[0])?;
                let t = self.infer(args[1])?;
                self.expect(t, element, args[1].span())?;
                Ok(Ty::Unit)
            }
            "len" => {
                arity(m, method, args, 0)?;
                Ok(Ty::Known(Scalar::Usize))
            }
            "is_empty" => {
                arity(m, method, args, 0)?;
                Ok(Ty::Known(Scalar::Bool))
            }
            _ => Err(syn::Error::new(
                m.method.span(),
                format!(
                    "method `{method}` is not supported on team scratch in a #[kernel]; supported: get, set, len, is_empty"
                ),
            )),
        }
    }
}
