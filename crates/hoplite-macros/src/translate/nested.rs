//! Nested team loops: `TeamThreadRange`, `TeamVectorRange` and `ThreadVectorRange` with
//! `parallel_for`, `parallel_reduce` and `parallel_scan`.

use syn::spanned::Spanned;
use syn::{Expr, Pat};

use super::Translator;
use super::reducers::{ReducerKind, reducer_kind};
use super::types::Ty;
use crate::signature::{Scalar, ScalarSyntax};

/// The nested ranges a #[kernel] translates.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum NestedLevel {
    /// `TeamThreadRange`: split over the team's threads.
    TeamThread,
    /// `ThreadVectorRange`: a loop on the calling thread.
    ThreadVector,
}

/// `TeamVectorRange::new(m, bounds).parallel_for(|j| ..)` and friends, taken apart.
pub(super) struct NestedCall<'e> {
    level: NestedLevel,
    member: &'e Expr,
    bounds: &'e Expr,
    pub(super) method: String,
    call: &'e syn::ExprMethodCall,
}

pub(super) fn nested_call(m: &syn::ExprMethodCall) -> Option<NestedCall<'_>> {
    let Expr::Call(c) = &*m.receiver else {
        return None;
    };
    let Expr::Path(p) = &*c.func else {
        return None;
    };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    if segs.len() < 2 || segs[segs.len() - 1] != "new" || c.args.len() != 2 {
        return None;
    }
    let level = match segs[segs.len() - 2].as_str() {
        // A team's vector lanes are its threads' (one lane per thread), so `TeamVectorRange`
        // splits as `TeamThreadRange` does, on the host and on the device.
        "TeamThreadRange" | "TeamVectorRange" => NestedLevel::TeamThread,
        "ThreadVectorRange" => NestedLevel::ThreadVector,
        _ => return None,
    };
    Some(NestedCall {
        level,
        member: &c.args[0],
        bounds: &c.args[1],
        method: m.method.to_string(),
        call: m,
    })
}

/// A nested loop closure's parameter: its name, and the `T` of an `&mut T` annotation.
type ClosureParam<'e> = (&'e syn::Ident, Option<Scalar>);

pub(super) const NESTED_USAGE: &str = "nested loops in a #[kernel] are `TeamThreadRange::new(m, n)`, \
     `TeamVectorRange::new(m, n)` or `ThreadVectorRange::new(m, n)` (`n` a count or `a..b`) with \
     `.parallel_for(|j| ..)` as a statement, `let s = ...parallel_reduce(|j, acc: &mut T| .., Sum::new());` or \
     `let total = ...parallel_scan(|j, partial: &mut T, is_final| ..);`; the closure uses its index as `*j`";

impl Translator<'_> {
    /// The bounds of a nested range as C code: `(begin, end)`.
    fn nested_bounds(&mut self, call: &NestedCall<'_>) -> syn::Result<(String, String)> {
        let member = self.infer_quiet(call.member)?;
        if self.norm(member) != Ty::Member {
            return Err(syn::Error::new(
                call.member.span(),
                "a nested range takes the team member of this kernel",
            ));
        }
        let (lo, hi) = match call.bounds {
            Expr::Range(r) if matches!(r.limits, syn::RangeLimits::HalfOpen(_)) => match (&r.start, &r.end) {
                (Some(a), Some(b)) => (Some(&**a), &**b),
                _ => return Err(syn::Error::new_spanned(r, NESTED_USAGE)),
            },
            Expr::Range(r) => return Err(syn::Error::new_spanned(r, NESTED_USAGE)),
            n => (None, n),
        };
        let hi_ty = self.infer(hi)?;
        self.expect(hi_ty, Scalar::Usize, hi.span())?;
        let hi = self.emit(hi, Scalar::Usize)?;
        let lo = match lo {
            Some(lo) => {
                self.expect_usize(lo)?;
                self.emit(lo, Scalar::Usize)?
            }
            None => "0ull".to_owned(),
        };
        Ok((lo, hi))
    }

    /// The closure of a nested loop: its parameters (the index, then for a reduction the
    /// accumulator with its annotated type, if any) and body.
    fn nested_closure<'e>(
        &self,
        call: &NestedCall<'e>,
        params: usize,
    ) -> syn::Result<(Vec<ClosureParam<'e>>, &'e Expr)> {
        let Some(Expr::Closure(c)) = call.call.args.first() else {
            return Err(syn::Error::new_spanned(call.call, NESTED_USAGE));
        };
        if c.inputs.len() != params || c.asyncness.is_some() || c.movability.is_some() {
            return Err(syn::Error::new_spanned(c, NESTED_USAGE));
        }
        let mut names = Vec::new();
        for input in &c.inputs {
            let (pat, ty) = match input {
                Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
                other => (other, None),
            };
            let Pat::Ident(ident) = pat else {
                return Err(syn::Error::new_spanned(input, NESTED_USAGE));
            };
            let scalar = match ty {
                Some(syn::Type::Reference(r)) if r.mutability.is_some() => Scalar::from_type(&r.elem),
                _ => None,
            };
            names.push((&ident.ident, scalar));
        }
        Ok((names, &c.body))
    }

    /// The closure's body, with `index` (C name `j`) and maybe an accumulator in scope.
    fn nested_body(
        &mut self,
        index: &syn::Ident,
        j: &str,
        acc: Option<(&syn::Ident, Scalar, String)>,
        is_final: Option<(&syn::Ident, String)>,
        body: &Expr,
    ) -> syn::Result<()> {
        self.scoped(|tx| {
            let c_name = tx.declare(index, Ty::NestedIdx);
            tx.line(&format!("const unsigned long long {c_name} = {j};"));
            if let Some((name, s, ptr)) = acc {
                let c_name = tx.declare(name, Ty::Acc(s));
                tx.line(&format!("{}* {c_name} = {ptr};", s.cuda_name()));
            }
            if let Some((name, flag)) = is_final {
                let c_name = tx.declare(name, Ty::Known(Scalar::Bool));
                tx.line(&format!("const bool {c_name} = {flag};"));
            }
            let (depth, closure) = (tx.loop_depth, tx.in_closure);
            tx.loop_depth = 0;
            tx.in_closure = true;
            let result = match body {
                Expr::Block(b) if b.label.is_none() => tx.stmts(&b.block.stmts),
                other => tx.expr_stmt(other),
            };
            tx.loop_depth = depth;
            tx.in_closure = closure;
            result
        })
    }

    /// Opens the C loops over the indices this thread runs (the caller closes two braces):
    /// for a team-level `parallel_for` the blocks `team_owner` gives this rank, for a
    /// team-level reduction this rank's contiguous share (as the host backends split it),
    /// and on one thread the whole range.
    fn open_nested_loops(&mut self, level: NestedLevel, share: bool, lo: &str, hi: &str, k: usize) -> usize {
        self.line(&format!(
            "const unsigned long long hl_lo{k} = {lo}, hl_hi{k} = {hi};"
        ));
        // The host panics on a range with begin > end.
        self.line(&format!("if (hl_lo{k} > hl_hi{k}) hl_panic();"));
        match (level, share) {
            (NestedLevel::ThreadVector, _) => {
                self.line("{");
                self.indent += 1;
                self.line(&format!(
                    "for (unsigned long long hl_j{k} = hl_lo{k}; hl_j{k} < hl_hi{k}; ++hl_j{k}) {{"
                ));
            }
            (NestedLevel::TeamThread, true) => {
                self.line("{");
                self.indent += 1;
                self.line(&format!(
                    "const unsigned long long hl_n{k} = hl_hi{k} - hl_lo{k}, hl_base{k} = hl_n{k} / blockDim.x, hl_extra{k} = hl_n{k} % blockDim.x;"
                ));
                self.line(&format!(
                    "const unsigned long long hl_from{k} = hl_lo{k} + hl_base{k} * threadIdx.x + (threadIdx.x < hl_extra{k} ? threadIdx.x : hl_extra{k});"
                ));
                self.line(&format!(
                    "const unsigned long long hl_to{k} = hl_from{k} + hl_base{k} + (threadIdx.x < hl_extra{k} ? 1 : 0);"
                ));
                self.line(&format!(
                    "for (unsigned long long hl_j{k} = hl_from{k}; hl_j{k} < hl_to{k}; ++hl_j{k}) {{"
                ));
            }
            (NestedLevel::TeamThread, false) => {
                // Blocks of 16 indices, round robin: `team_owner(j, team_size, 16)`.
                self.line(&format!(
                    "const unsigned long long hl_bfirst{k} = hl_lo{k} / 16, hl_bend{k} = hl_lo{k} < hl_hi{k} ? (hl_hi{k} - 1) / 16 + 1 : hl_bfirst{k};"
                ));
                self.line(&format!(
                    "for (unsigned long long hl_b{k} = hl_bfirst{k} + (threadIdx.x + blockDim.x - hl_bfirst{k} % blockDim.x) % blockDim.x; hl_b{k} < hl_bend{k}; hl_b{k} += blockDim.x) {{"
                ));
                self.indent += 1;
                self.line(&format!(
                    "const unsigned long long hl_from{k} = hl_b{k} * 16 > hl_lo{k} ? hl_b{k} * 16 : hl_lo{k};"
                ));
                self.line(&format!(
                    "const unsigned long long hl_to{k} = hl_hi{k} - hl_b{k} * 16 > 16 ? hl_b{k} * 16 + 16 : hl_hi{k};"
                ));
                self.line(&format!(
                    "for (unsigned long long hl_j{k} = hl_from{k}; hl_j{k} < hl_to{k}; ++hl_j{k}) {{"
                ));
            }
        }
        // Two braces are open: the index loop and a block (the loop over this rank's blocks of
        // 16 indices for a team-level `parallel_for`).
        2
    }

    /// Closes what `open_nested_loops` opened, after the body.
    fn close_nested_loops(&mut self, opened: usize) {
        self.line("}");
        for _ in 1..opened {
            self.indent -= 1;
            self.line("}");
        }
    }

    /// `TeamThreadRange::new(m, n).parallel_for(|j| ..)` (or `ThreadVectorRange`).
    pub(super) fn nested_for(&mut self, call: &NestedCall<'_>) -> syn::Result<()> {
        if call.call.args.len() != 1 {
            return Err(syn::Error::new_spanned(call.call, NESTED_USAGE));
        }
        let (params, body) = self.nested_closure(call, 1)?;
        let (lo, hi) = self.nested_bounds(call)?;
        self.next_name += 1;
        let k = self.next_name;
        self.braced(|tx| {
            let opened = tx.open_nested_loops(call.level, false, &lo, &hi, k);
            tx.nested_body(params[0].0, &format!("hl_j{k}"), None, None, body)?;
            tx.close_nested_loops(opened);
            Ok(())
        })
    }

    /// `let v = TeamThreadRange::new(m, n).parallel_reduce(|j, acc: &mut T| .., Sum::new());`
    pub(super) fn nested_reduce(
        &mut self,
        ident: &syn::Ident,
        annotated: Option<Scalar>,
        call: &NestedCall<'_>,
    ) -> syn::Result<()> {
        if call.call.args.len() != 2 {
            return Err(syn::Error::new_spanned(call.call, NESTED_USAGE));
        }
        let (params, body) = self.nested_closure(call, 2)?;
        let reducer = &call.call.args[1];
        let (kind, turbofish) = reducer_kind(reducer, false)?;
        let s = params[1].1.or(turbofish).or(annotated).ok_or_else(|| {
            syn::Error::new_spanned(
                call.call,
                "say the accumulator's type in a #[kernel]'s nested reduction: `|j, acc: &mut f64| ..`, \
                 `Sum::<f64>::new()` or `let v: f64 = ..`",
            )
        })?;
        kind.check(s, call.call.span())?;
        let (lo, hi) = self.nested_bounds(call)?;
        self.next_name += 1;
        let k = self.next_name;
        let c = s.cuda_name();
        self.line(&format!("{c} hl_p{k} = {};", kind.identity(s)));
        self.braced(|tx| {
            let opened = tx.open_nested_loops(call.level, true, &lo, &hi, k);
            tx.nested_body(
                params[0].0,
                &format!("hl_j{k}"),
                Some((params[1].0, s, format!("&hl_p{k}"))),
                None,
                body,
            )?;
            tx.close_nested_loops(opened);
            Ok(())
        })?;
        let value = match call.level {
            NestedLevel::TeamThread => format!("{}(hl_p{k})", kind.team_fn(c)),
            NestedLevel::ThreadVector => format!("hl_p{k}"),
        };
        let c_name = self.declare(ident, Ty::Known(s));
        self.line(&format!("{c} {c_name} = {value};"));
        Ok(())
    }

    /// `TeamThreadRange::new(m, n).parallel_scan(|j, partial: &mut T, is_final| ..)` (also
    /// `TeamVectorRange`, `ThreadVectorRange`), its total bound to `ident` if there is one.
    ///
    /// On one thread (`ThreadVectorRange`, or a team of one) a single final pass from zero,
    /// as the host backends run it. A team-level scan otherwise follows the core's: each thread
    /// sums the blocks of 16 indices it owns (`is_final` false), every thread learns the sums
    /// of the blocks before its own, in block order, and runs its blocks again from there
    /// (`is_final` true). The blocks go round by round, one per thread, through shared memory.
    pub(super) fn nested_scan(
        &mut self,
        ident: Option<&syn::Ident>,
        annotated: Option<Scalar>,
        call: &NestedCall<'_>,
    ) -> syn::Result<()> {
        if call.call.args.len() != 1 {
            return Err(syn::Error::new_spanned(call.call, NESTED_USAGE));
        }
        let (params, body) = self.nested_closure(call, 3)?;
        let s = params[1].1.or(annotated).ok_or_else(|| {
            syn::Error::new_spanned(
                call.call,
                "say the partial's type in a #[kernel]'s nested scan: `|j, partial: &mut f64, is_final| ..` \
                 or `let total: f64 = ..`",
            )
        })?;
        if s == Scalar::Bool {
            return Err(syn::Error::new_spanned(call.call, "a nested scan sums numbers"));
        }
        let (lo, hi) = self.nested_bounds(call)?;
        self.next_name += 1;
        let k = self.next_name;
        let c = s.cuda_name();
        let zero = ReducerKind::Sum.identity(s);
        self.line(&format!("{c} hl_total{k} = {zero};"));
        self.braced(|tx| {
            tx.line(&format!(
                "const unsigned long long hl_lo{k} = {lo}, hl_hi{k} = {hi};"
            ));
            // The host panics on a range with begin > end.
            tx.line(&format!("if (hl_lo{k} > hl_hi{k}) hl_panic();"));
            // The closure, called by both passes.
            tx.line(&format!(
                "auto hl_scan{k} = [&](unsigned long long hl_j{k}, {c}* hl_acc{k}, bool hl_fin{k}) {{"
            ));
            tx.nested_body(
                params[0].0,
                &format!("hl_j{k}"),
                Some((params[1].0, s, format!("hl_acc{k}"))),
                Some((params[2].0, format!("hl_fin{k}"))),
                body,
            )?;
            tx.line("};");
            let one_pass = format!(
                "for (unsigned long long hl_j{k} = hl_lo{k}; hl_j{k} < hl_hi{k}; ++hl_j{k}) hl_scan{k}(hl_j{k}, &hl_total{k}, true);"
            );
            match call.level {
                NestedLevel::ThreadVector => tx.line(&one_pass),
                NestedLevel::TeamThread => {
                    tx.line("if (blockDim.x == 1) {");
                    tx.scoped(|tx| {
                        tx.line(&one_pass);
                        Ok(())
                    })?;
                    tx.line("} else {");
                    tx.scoped(|tx| {
                        for line in [
                            format!(
                                "const unsigned long long hl_bfirst{k} = hl_lo{k} / 16, hl_bend{k} = hl_lo{k} < hl_hi{k} ? (hl_hi{k} - 1) / 16 + 1 : hl_bfirst{k};"
                            ),
                            format!(
                                "for (unsigned long long hl_round{k} = hl_bfirst{k}; hl_round{k} < hl_bend{k}; hl_round{k} += blockDim.x) {{"
                            ),
                            format!(
                                "    const unsigned long long hl_b{k} = hl_round{k} + (threadIdx.x + blockDim.x - hl_round{k} % blockDim.x) % blockDim.x;"
                            ),
                            format!(
                                "    const unsigned long long hl_from{k} = hl_b{k} * 16 > hl_lo{k} ? hl_b{k} * 16 : hl_lo{k};"
                            ),
                            format!(
                                "    const unsigned long long hl_to{k} = hl_b{k} >= hl_bend{k} ? hl_from{k} : hl_hi{k} - hl_b{k} * 16 > 16 ? hl_b{k} * 16 + 16 : hl_hi{k};"
                            ),
                            format!("    {c} hl_sum{k} = {zero};"),
                            format!(
                                "    for (unsigned long long hl_j{k} = hl_from{k}; hl_j{k} < hl_to{k}; ++hl_j{k}) hl_scan{k}(hl_j{k}, &hl_sum{k}, false);"
                            ),
                            format!(
                                "    {c} hl_part{k} = hl_block_prefix<{c}>(hl_sum{k}, hl_round{k}, hl_bend{k}, hl_b{k}, &hl_total{k});"
                            ),
                            format!(
                                "    for (unsigned long long hl_j{k} = hl_from{k}; hl_j{k} < hl_to{k}; ++hl_j{k}) hl_scan{k}(hl_j{k}, &hl_part{k}, true);"
                            ),
                            "}".to_owned(),
                        ] {
                            tx.line(&line);
                        }
                        Ok(())
                    })?;
                    tx.line("}");
                }
            }
            Ok(())
        })?;
        if let Some(ident) = ident {
            let c_name = self.declare(ident, Ty::Known(s));
            self.line(&format!("{c} {c_name} = hl_total{k};"));
        }
        Ok(())
    }
}
