//! Inference: the type of each expression, and the checks of method calls on handles, the team
//! member, accumulators and numbers.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Lit, UnOp};

use super::emission::{float_arity, float_fn};
use super::nested::NESTED_USAGE;
use super::reducers::reducer_kind;
use super::scratch::{SCRATCH_USAGE, TEAM_ROW_USAGE};
use super::statements::compound_op;
use super::tokens::TOKEN_USAGE;
use super::types::{Ty, describe, lit_type, type_const};
use super::{
    Translator, int_lit, path_name, recursion, single_name, unknown_name, unsupported, value_branches,
};
use crate::signature::{HandleKind, SUPPORTED_SCALARS, Scalar, ScalarSyntax};

impl Translator<'_> {
    pub(super) fn infer(&mut self, expr: &Expr) -> syn::Result<Ty> {
        match expr {
            Expr::Lit(l) => lit_type(&l.lit),
            Expr::Paren(p) => self.infer(&p.expr),
            Expr::Group(g) => self.infer(&g.expr),
            Expr::Path(p) => self.path_type(p),
            Expr::Unary(u) => match u.op {
                UnOp::Deref(_) => match &*u.expr {
                    Expr::Path(p) => match self.path_type(p)? {
                        Ty::Acc(s) => Ok(Ty::Known(s)),
                        Ty::Token | Ty::NestedIdx | Ty::LeagueIdx | Ty::Guard => Ok(Ty::Known(Scalar::Usize)),
                        _ => Err(unsupported(
                            u.span(),
                            "dereferencing anything but the accumulator or a range token",
                        )),
                    },
                    other => Err(unsupported(
                        other.span(),
                        "dereferencing anything but the accumulator or a range token",
                    )),
                },
                UnOp::Neg(_) => {
                    let t = self.infer(&u.expr)?;
                    match self.norm(t) {
                        Ty::Known(s) if s.is_float() || s.is_signed() => Ok(t),
                        Ty::Int(_) | Ty::Float(_) => Ok(t),
                        _ => Err(syn::Error::new(
                            u.span(),
                            "`-` applies to signed integers and floats",
                        )),
                    }
                }
                UnOp::Not(_) => {
                    let t = self.infer(&u.expr)?;
                    match self.norm(t) {
                        Ty::Known(s) if !s.is_float() => Ok(t),
                        Ty::Int(_) => Ok(t),
                        _ => Err(syn::Error::new(u.span(), "`!` applies to bools and integers")),
                    }
                }
                _ => Err(unsupported(u.span(), "this unary operator")),
            },
            Expr::Binary(b) => {
                if compound_op(&b.op).is_some() {
                    return Err(unsupported(b.span(), "a compound assignment used as a value"));
                }
                let l = self.infer(&b.left)?;
                match b.op {
                    BinOp::Shl(_) | BinOp::Shr(_) => {
                        let r = self.infer(&b.right)?;
                        if !matches!(self.norm(r), Ty::Int(_))
                            && !self.finalize(r).is_some_and(Scalar::is_integer)
                        {
                            return Err(syn::Error::new(b.right.span(), "a shift amount is an integer"));
                        }
                        match self.norm(l) {
                            Ty::Int(_) => Ok(l),
                            Ty::Known(s) if s.is_integer() => Ok(l),
                            _ => Err(syn::Error::new(b.left.span(), "shifts apply to integers")),
                        }
                    }
                    BinOp::And(_) | BinOp::Or(_) => {
                        let r = self.infer(&b.right)?;
                        self.expect(l, Scalar::Bool, b.left.span())?;
                        self.expect(r, Scalar::Bool, b.right.span())?;
                        Ok(Ty::Known(Scalar::Bool))
                    }
                    BinOp::Eq(_)
                    | BinOp::Ne(_)
                    | BinOp::Lt(_)
                    | BinOp::Le(_)
                    | BinOp::Gt(_)
                    | BinOp::Ge(_) => {
                        let r = self.infer(&b.right)?;
                        let t = self.unify(l, r, b.span())?;
                        self.scalar_of(t, b.span())?;
                        Ok(Ty::Known(Scalar::Bool))
                    }
                    _ => {
                        let r = self.infer(&b.right)?;
                        let t = self.unify(l, r, b.span())?;
                        match (self.norm(t), &b.op) {
                            (
                                Ty::Known(Scalar::Bool),
                                BinOp::BitAnd(_) | BinOp::BitOr(_) | BinOp::BitXor(_),
                            ) => Ok(t),
                            (Ty::Known(Scalar::Bool), _) => {
                                Err(syn::Error::new(b.span(), "arithmetic on bools"))
                            }
                            (Ty::Known(_) | Ty::Int(_), _) => Ok(t),
                            (Ty::Float(_), BinOp::BitAnd(_) | BinOp::BitOr(_) | BinOp::BitXor(_)) => {
                                Err(syn::Error::new(b.span(), "bit operations on floats"))
                            }
                            (Ty::Float(_), _) => Ok(t),
                            _ => Err(syn::Error::new(b.span(), "arithmetic applies to numbers")),
                        }
                    }
                }
            }
            Expr::Cast(c) => {
                let from = self.infer(&c.expr)?;
                self.scalar_of(from, c.expr.span())?;
                let to = Scalar::from_type(&c.ty).ok_or_else(|| {
                    syn::Error::new(c.ty.span(), format!("`as` casts to one of {SUPPORTED_SCALARS}"))
                })?;
                Ok(Ty::Known(to))
            }
            Expr::MethodCall(m) => self.method_type(m),
            Expr::Call(c) if index_update(c).is_some() => {
                let [acc, index] = [&c.args[0], &c.args[1]];
                let t = self.infer(acc)?;
                if self.norm(t) != Ty::AccIndex {
                    return Err(syn::Error::new(
                        acc.span(),
                        "`FirstLoc::update` and `LastLoc::update` take the kernel's `&mut Option<usize>` accumulator",
                    ));
                }
                self.expect_usize(index)?;
                Ok(Ty::Unit)
            }
            Expr::Call(c) => {
                let (ty, method) = self.path_call(c)?;
                let mut args = c.args.iter();
                let recv = args
                    .next()
                    .ok_or_else(|| syn::Error::new(c.span(), "expected an argument"))?;
                let rest: Vec<&Expr> = args.collect();
                let rt = self.infer(recv)?;
                self.expect(rt, ty, recv.span())?;
                self.math_type(ty, &method, &rest, c.span())
            }
            Expr::Index(i) => {
                let t = self.infer(&i.expr)?;
                match t {
                    Ty::MdToken(rank) => {
                        let k = int_lit(&i.index).ok_or_else(|| {
                            syn::Error::new(i.index.span(), "index an MdIdx token with a constant: `ij[0]`")
                        })?;
                        if k >= rank {
                            return Err(syn::Error::new(
                                i.index.span(),
                                format!("the token has rank {rank}"),
                            ));
                        }
                        Ok(Ty::Known(Scalar::Usize))
                    }
                    _ => Err(unsupported(
                        i.span(),
                        "indexing anything but an MdIdx token (read views with `get`)",
                    )),
                }
            }
            Expr::If(i) => {
                let c = self.infer(&i.cond)?;
                self.expect(c, Scalar::Bool, i.cond.span())?;
                let (then, other) = value_branches(i)?;
                let a = self.infer(then)?;
                let b = self.infer(other)?;
                self.unify(a, b, i.span())
            }
            other => Err(self.unsupported_expr(other)),
        }
    }

    pub(super) fn unsupported_expr(&self, expr: &Expr) -> syn::Error {
        match expr {
            Expr::Closure(c) => syn::Error::new_spanned(
                c,
                "closures cannot run on a device: a #[kernel] body cannot contain a closure other than a \
                 nested loop's (`TeamThreadRange::new(m, n).parallel_for(|j| ..)`); write the computation \
                 inline (loops, `if`, locals)",
            ),
            Expr::Lit(l) if matches!(l.lit, Lit::Str(_) | Lit::ByteStr(_) | Lit::CStr(_)) => syn::Error::new(
                l.span(),
                format!(
                    "strings (`&str`, `String`) are not supported in a #[kernel]: a kernel computes with \
                     {SUPPORTED_SCALARS}"
                ),
            ),
            Expr::Macro(m) => unsupported(m.span(), &format!("the macro `{}!`", path_name(&m.mac.path))),
            Expr::Reference(r) => unsupported(r.span(), "taking a reference"),
            Expr::Field(f) => unsupported(f.span(), "field access"),
            Expr::Match(m) => unsupported(m.span(), "`match`"),
            Expr::Array(a) => unsupported(a.span(), "an array outside a handle index (`x.get([i, j])`)"),
            Expr::Tuple(t) => unsupported(t.span(), "a tuple"),
            Expr::Struct(s) => unsupported(s.span(), "a struct literal"),
            Expr::Unsafe(u) => unsupported(u.span(), "`unsafe`"),
            Expr::Block(b) => unsupported(b.span(), "a block used as a value"),
            Expr::Range(r) => unsupported(r.span(), "a range outside `for`"),
            Expr::Try(t) => unsupported(t.span(), "`?`"),
            other => unsupported(other.span(), "this expression"),
        }
    }

    fn path_type(&mut self, p: &syn::ExprPath) -> syn::Result<Ty> {
        if let Some(name) = single_name(&p.path) {
            return match self.lookup(&name) {
                Some(var) => Ok(var.ty),
                None if name == self.fn_name => Err(recursion(p.span())),
                None => Err(unknown_name(p.span(), &name)),
            };
        }
        match type_const(&p.path) {
            Some((s, _)) => Ok(Ty::Known(s)),
            None => Err(unknown_name(p.span(), &path_name(&p.path))),
        }
    }

    /// `f64::sqrt(x)`, `f32::max(a, b)`, `usize::min(a, b)`: the receiver type and the method.
    pub(super) fn path_call(&self, c: &syn::ExprCall) -> syn::Result<(Scalar, String)> {
        let Expr::Path(p) = &*c.func else {
            return Err(unsupported(c.func.span(), "calling this"));
        };
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() == 1 && segs[0] == self.fn_name {
            return Err(recursion(c.span()));
        }
        if segs.len() == 2
            && let Some(s) = Scalar::from_rust_name(&segs[0])
        {
            return Ok((s, segs[1].clone()));
        }
        Err(syn::Error::new(
            c.func.span(),
            format!(
                "calling `{}` is not supported in a #[kernel]: a device kernel can call only the math \
                 functions of f32/f64 (`f64::sqrt(x)`, ...) and the integers' `min`/`max`/`abs`; \
                 write other helpers inline",
                path_name(&p.path)
            ),
        ))
    }

    fn method_type(&mut self, m: &syn::ExprMethodCall) -> syn::Result<Ty> {
        let method = m.method.to_string();
        // A nested range anywhere but where `expr_stmt` and `local` take it apart (or one the
        // translation lacks, `TeamVectorRange`).
        if let Expr::Call(c) = &*m.receiver
            && let Expr::Path(p) = &*c.func
            && p.path
                .segments
                .iter()
                .any(|s| s.ident.to_string().ends_with("Range"))
        {
            return Err(syn::Error::new_spanned(m, NESTED_USAGE));
        }
        if m.turbofish.is_some() {
            return Err(unsupported(m.turbofish.span(), "a turbofish"));
        }
        let recv = self.infer(&m.receiver)?;
        let args: Vec<&Expr> = m.args.iter().collect();
        match self.norm(recv) {
            Ty::Handle(k) => self.handle_method_type(k, &method, &args, m),
            Ty::Token | Ty::NestedIdx | Ty::LeagueIdx if method == "get" && args.is_empty() => {
                Ok(Ty::Known(Scalar::Usize))
            }
            Ty::Guard if method == "id" && args.is_empty() => Ok(Ty::Known(Scalar::Usize)),
            Ty::Tokens(_) if method == "size" && args.is_empty() => Ok(Ty::Known(Scalar::Usize)),
            Ty::Tokens(_) => Err(syn::Error::new(m.span(), TOKEN_USAGE)),
            Ty::Guard => Err(syn::Error::new(
                m.method.span(),
                "a token guard in a #[kernel] gives its id as `*id` or `id.id()`",
            )),
            Ty::Acc(s) => self.math_type(s, &method, &args, m.method.span()),
            Ty::Member => self.member_method_type(&method, &args, m),
            Ty::Scratch(s) => self.scratch_method_type(s, &method, &args, m),
            Ty::TeamRow(k) => self.team_row_method_type(k, &method, &args, m),
            Ty::AccMinMax(s) => {
                if method != "update" || args.len() != 1 {
                    return Err(syn::Error::new(
                        m.method.span(),
                        format!(
                            "`{method}` is not supported on a `MinMaxScalar` accumulator; supported: `acc.update(value)`"
                        ),
                    ));
                }
                let t = self.infer(args[0])?;
                self.expect(t, s, args[0].span())?;
                Ok(Ty::Unit)
            }
            Ty::AccMinMaxLoc(s) => {
                if !matches!(method.as_str(), "update" | "update_first_last") || args.len() != 2 {
                    return Err(syn::Error::new(
                        m.method.span(),
                        format!(
                            "`{method}` is not supported on a `MinMaxLocScalar` accumulator; supported: \
                             `acc.update(value, index)` (ties to the lowest index, as `MinMaxLoc` joins) or \
                             `acc.update_first_last(value, index)` (the maximum's ties to the highest index, as \
                             `MinMaxFirstLastLoc` joins)"
                        ),
                    ));
                }
                let first_last = method == "update_first_last";
                match self.first_last {
                    Some(seen) if seen != first_last => {
                        return Err(syn::Error::new(
                            m.method.span(),
                            "a #[kernel] updates its `MinMaxLocScalar` accumulator either with `update` (for \
                             `MinMaxLoc`) or with `update_first_last` (for `MinMaxFirstLastLoc`), not both: the \
                             launch joins the partials with one of the two reducers",
                        ));
                    }
                    _ => self.first_last = Some(first_last),
                }
                let t = self.infer(args[0])?;
                self.expect(t, s, args[0].span())?;
                self.expect_usize(args[1])?;
                Ok(Ty::Unit)
            }
            Ty::AccLoc(s) => {
                if method != "update_min" && method != "update_max" {
                    return Err(syn::Error::new(
                        m.method.span(),
                        format!(
                            "method `{method}` is not supported on a `ValLoc` accumulator; supported: update_min, update_max"
                        ),
                    ));
                }
                if args.len() != 2 {
                    return Err(syn::Error::new(
                        m.span(),
                        format!("`{method}` takes a value and an index"),
                    ));
                }
                let t = self.infer(args[0])?;
                self.expect(t, s, args[0].span())?;
                self.expect_usize(args[1])?;
                Ok(Ty::Unit)
            }
            Ty::Known(s) => self.math_type(s, &method, &args, m.method.span()),
            Ty::Float(_) => {
                let s = self.scalar_of(recv, m.span())?;
                self.set_slot(recv, s);
                self.math_type(s, &method, &args, m.method.span())
            }
            Ty::Int(_) => {
                // `5.min(x)`: the receiver takes the argument's type.
                let s = match args.first() {
                    Some(a) => {
                        let at = self.infer(a)?;
                        let t = self.unify(recv, at, m.span())?;
                        self.scalar_of(t, m.span())?
                    }
                    None => self.scalar_of(recv, m.span())?,
                };
                self.math_type(s, &method, &args, m.method.span())
            }
            other => Err(syn::Error::new(
                m.method.span(),
                format!(
                    "method `{method}` is not supported on {} in a #[kernel]; supported: handle methods \
                     (`get`, `set`, `neighbor`, `fetch_add`, `fetch_min`, `fetch_max`), `Idx::get`, the \
                     float functions and the integers' `min`/`max`/`abs`",
                    describe(other)
                ),
            )),
        }
    }

    fn member_method_type(
        &mut self,
        method: &str,
        args: &[&Expr],
        m: &syn::ExprMethodCall,
    ) -> syn::Result<Ty> {
        match method {
            "league_rank" | "league_size" | "team_rank" | "team_size" | "vector_length" => {
                arity(m, method, args, 0)?;
                Ok(Ty::Known(Scalar::Usize))
            }
            "team_barrier" => {
                arity(m, method, args, 0)?;
                Ok(Ty::Unit)
            }
            "team_slot" => {
                arity(m, method, args, 0)?;
                Ok(Ty::SlotToken)
            }
            "team_broadcast" => {
                arity(m, method, args, 2)?;
                let t = self.infer(args[0])?;
                let s = self.scalar_of(t, args[0].span())?;
                self.set_slot(t, s);
                let src = self.infer(args[1])?;
                self.expect(src, Scalar::Usize, args[1].span())?;
                Ok(Ty::Known(s))
            }
            "team_scratch" | "thread_scratch" => Err(syn::Error::new_spanned(m, SCRATCH_USAGE)),
            "team_single" | "team_broadcast_with" => {
                Err(syn::Error::new_spanned(m, super::collectives::COLLECTIVE_USAGE))
            }
            "league_token" => Err(syn::Error::new_spanned(
                m,
                "`league_token` in a #[kernel] goes straight into `w.team_row(m.league_token())` or \
                 `if let Some(l) = m.league_token().single() { .. }`",
            )),
            "team_scan" => Err(syn::Error::new_spanned(
                m,
                "`team_scan` gives two values in a #[kernel]: `let (prefix, total) = m.team_scan(v);`",
            )),
            "team_reduce" => {
                arity(m, method, args, 2)?;
                let (kind, turbofish) = reducer_kind(args[0], true)?;
                let t = self.infer(args[1])?;
                if let Some(want) = turbofish {
                    self.expect(t, want, args[1].span())?;
                }
                let s = self.scalar_of(t, args[1].span())?;
                kind.check(s, args[1].span())?;
                self.set_slot(t, s);
                Ok(Ty::Known(s))
            }
            _ => Err(syn::Error::new(
                m.method.span(),
                format!(
                    "method `{method}` is not supported on the team member in a #[kernel]; supported: league_rank, \
                     league_size, team_rank, team_size, team_barrier, team_broadcast, team_reduce(&r, v) with `r` a `Sum`, `Prod`, `Max`, `Min`, `BAnd`, `BOr`, `LAnd` or `LOr`, team_scan (as `let (prefix, total) = m.team_scan(v);`), team_slot, team_scratch(level), thread_scratch(level)"
                ),
            )),
        }
    }

    fn math_type(&mut self, s: Scalar, method: &str, args: &[&Expr], span: Span) -> syn::Result<Ty> {
        if s.is_float() {
            if float_fn(method, s).is_none() {
                return Err(syn::Error::new(
                    span,
                    format!(
                        "`{s}::{method}` is not supported in a #[kernel]; supported: sqrt, exp, ln, sin, cos, \
                         abs, min, max, powi, powf, mul_add",
                        s = s.rust_name()
                    ),
                ));
            }
            if args.len() != float_arity(method) {
                return Err(syn::Error::new(
                    span,
                    format!("`{method}` takes {} argument(s)", float_arity(method)),
                ));
            }
            for a in args {
                let t = self.infer(a)?;
                let want = if method == "powi" { Scalar::I32 } else { s };
                self.expect(t, want, a.span())?;
            }
            return Ok(Ty::Known(s));
        }
        if s.is_integer() {
            let arity = match method {
                "min" | "max" | "wrapping_add" | "wrapping_sub" | "wrapping_mul" => 1,
                "abs" if s.is_signed() => 0,
                _ => {
                    return Err(syn::Error::new(
                        span,
                        format!(
                            "`{}::{method}` is not supported in a #[kernel]; integers support min, max, \
                             wrapping_add, wrapping_sub, wrapping_mul and (signed) abs",
                            s.rust_name()
                        ),
                    ));
                }
            };
            if args.len() != arity {
                return Err(syn::Error::new(
                    span,
                    format!("`{method}` takes {arity} argument(s)"),
                ));
            }
            for a in args {
                let t = self.infer(a)?;
                self.expect(t, s, a.span())?;
            }
            return Ok(Ty::Known(s));
        }
        Err(syn::Error::new(
            span,
            format!("method `{method}` is not supported on bool in a #[kernel]"),
        ))
    }

    fn handle_method_type(
        &mut self,
        k: usize,
        method: &str,
        args: &[&Expr],
        m: &syn::ExprMethodCall,
    ) -> syn::Result<Ty> {
        let h = &self.sig.handles[k];
        let (kind, element, rank) = (h.kind, h.element, h.rank);
        let name = h.name.to_string();
        match (kind, method) {
            (_, "team_row") => Err(syn::Error::new_spanned(m, TEAM_ROW_USAGE)),
            (HandleKind::TeamSlots, "get" | "set") => {
                arity(m, method, args, if method == "get" { 1 } else { 2 })?;
                if self.infer(args[0])? != Ty::SlotToken {
                    return Err(syn::Error::new(
                        args[0].span(),
                        format!("team slots take this thread's slot: `{name}.{method}(m.team_slot(), ..)`"),
                    ));
                }
                if method == "get" {
                    return Ok(Ty::Known(element));
                }
                let t = self.infer(args[1])?;
                self.expect(t, element, args[1].span())?;
                Ok(Ty::Unit)
            }
            (HandleKind::Reader | HandleKind::Lookup, "get") => {
                arity(m, method, args, 1)?;
                self.index_arg(args[0], rank, true)?;
                Ok(Ty::Known(element))
            }
            (HandleKind::Reader, "neighbor") => {
                arity(m, method, args, 2)?;
                self.token_arg(args[0], rank)?;
                self.offset_arg(args[1], rank)?;
                Ok(Ty::Known(element))
            }
            (HandleKind::Writer, "get") => {
                arity(m, method, args, 1)?;
                self.token_arg(args[0], rank)?;
                Ok(Ty::Known(element))
            }
            (HandleKind::Writer, "set") => {
                arity(m, method, args, 2)?;
                self.token_arg(args[0], rank)?;
                let t = self.infer(args[1])?;
                self.expect(t, element, args[1].span())?;
                Ok(Ty::Unit)
            }
            (HandleKind::Atomic, "fetch_add" | "fetch_min" | "fetch_max") => {
                arity(m, method, args, 2)?;
                if method != "fetch_add" && element.is_float() {
                    return Err(syn::Error::new(
                        m.method.span(),
                        "atomic min/max of floats is not supported in a #[kernel]; use an integer handle",
                    ));
                }
                self.index_arg(args[0], rank, true)?;
                let t = self.infer(args[1])?;
                self.expect(t, element, args[1].span())?;
                Ok(Ty::Known(element))
            }
            _ => {
                let supported = match kind {
                    HandleKind::Reader => "`get(index)` and `neighbor(token, offsets)`",
                    HandleKind::Lookup => "`get(index)`",
                    HandleKind::Writer => "`get(token)` and `set(token, value)`",
                    HandleKind::Atomic => "`fetch_add`, `fetch_min` and `fetch_max`",
                    HandleKind::TeamSlots => "`get(m.team_slot())` and `set(m.team_slot(), value)`",
                };
                Err(syn::Error::new(
                    m.method.span(),
                    format!(
                        "method `{method}` is not supported on the handle `{name}` in a #[kernel]; supported: {supported}"
                    ),
                ))
            }
        }
    }

    /// A handle index: this launch's token, or (when `plain` is allowed) an integer for rank 1
    /// or an array `[i, j, ..]` of the handle's rank.
    fn index_arg(&mut self, arg: &Expr, rank: usize, plain: bool) -> syn::Result<()> {
        if let Ok(Ty::Token | Ty::MdToken(_)) = self.infer_quiet(arg) {
            return self.token_arg(arg, rank);
        }
        if !plain {
            return self.token_arg(arg, rank);
        }
        match arg {
            Expr::Array(a) => {
                if a.elems.len() != rank {
                    return Err(syn::Error::new(a.span(), format!("the handle has rank {rank}")));
                }
                for e in &a.elems {
                    self.expect_usize(e)?;
                }
                Ok(())
            }
            _ if rank == 1 => {
                let t = self.infer(arg)?;
                self.expect(t, Scalar::Usize, arg.span())
            }
            _ => Err(syn::Error::new(
                arg.span(),
                format!("index a rank-{rank} handle with a token or `[i, j, ..]`"),
            )),
        }
    }

    /// The type of `arg` when it is a name (a parameter or local), `Unit` otherwise: asks what a
    /// receiver or argument is (a token, handle, member) without inferring, and so without
    /// resolving slots or failing on, an expression the caller will infer or refuse itself.
    pub(super) fn infer_quiet(&mut self, arg: &Expr) -> syn::Result<Ty> {
        match arg {
            Expr::Path(p) => self.path_type(p),
            Expr::Paren(p) => self.infer_quiet(&p.expr),
            _ => Ok(Ty::Unit),
        }
    }

    fn token_arg(&mut self, arg: &Expr, rank: usize) -> syn::Result<()> {
        match self.infer_quiet(arg)? {
            Ty::Token | Ty::LeagueIdx if rank == 1 => Ok(()),
            Ty::MdToken(r) if r == rank => Ok(()),
            _ => Err(syn::Error::new(
                arg.span(),
                format!(
                    "expected this launch's iteration token of rank {rank} (the kernel's first parameter)"
                ),
            )),
        }
    }

    fn offset_arg(&mut self, arg: &Expr, rank: usize) -> syn::Result<()> {
        let Expr::Array(a) = arg else {
            return Err(syn::Error::new(
                arg.span(),
                "neighbor offsets are an array `[di, dj, ..]`",
            ));
        };
        if a.elems.len() != rank {
            return Err(syn::Error::new(a.span(), format!("the handle has rank {rank}")));
        }
        for e in &a.elems {
            let t = self.infer(e)?;
            self.expect(t, Scalar::Isize, e.span())?;
        }
        Ok(())
    }
}

/// Checks that `method` got `n` arguments.
pub(super) fn arity(m: &syn::ExprMethodCall, method: &str, args: &[&Expr], n: usize) -> syn::Result<()> {
    if args.len() == n {
        Ok(())
    } else {
        Err(syn::Error::new_spanned(
            m,
            format!("`{method}` takes {n} argument(s)"),
        ))
    }
}

/// `FirstLoc::update(acc, index)` or `LastLoc::update(acc, index)`: whether the call is one of
/// them, and `true` for `FirstLoc`.
pub(super) fn index_update(c: &syn::ExprCall) -> Option<bool> {
    let Expr::Path(p) = &*c.func else {
        return None;
    };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    let first = match segs.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [.., "FirstLoc", "update"] => true,
        [.., "LastLoc", "update"] => false,
        _ => return None,
    };
    (c.args.len() == 2).then_some(first)
}
