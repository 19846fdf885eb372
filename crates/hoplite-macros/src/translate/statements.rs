//! Statements: `let`, assignments, `if`, loops, `break`/`continue`/`return`, blocks, and the
//! places they assign.

use syn::spanned::Spanned;
use syn::{BinOp, Block, Expr, Pat, Stmt, UnOp};

use super::collectives::collective_call;
use super::emission::arith;
use super::nested::{NESTED_USAGE, nested_call};
use super::tokens::token_call;
use super::types::Ty;
use super::{Translator, Var, path_name, single_name, unknown_name, unsupported};
use crate::signature::{SUPPORTED_SCALARS, Scalar, ScalarSyntax};

impl Translator<'_> {
    pub(super) fn stmts(&mut self, stmts: &[Stmt]) -> syn::Result<()> {
        for (k, stmt) in stmts.iter().enumerate() {
            self.check_release_follows(stmt, &stmts[k + 1..])?;
            self.stmt(stmt)?;
        }
        Ok(())
    }

    fn block(&mut self, block: &Block) -> syn::Result<()> {
        self.scoped(|tx| tx.stmts(&block.stmts))
    }

    fn stmt(&mut self, stmt: &Stmt) -> syn::Result<()> {
        match stmt {
            Stmt::Local(local) => self.local(local),
            Stmt::Expr(expr, _) => self.expr_stmt(expr),
            Stmt::Item(item) => Err(unsupported(
                item.span(),
                "an item (fn, struct, use, static, ...) inside a kernel",
            )),
            Stmt::Macro(m) => Err(unsupported(
                m.span(),
                &format!("the macro `{}!`", path_name(&m.mac.path)),
            )),
        }
    }

    fn local(&mut self, local: &syn::Local) -> syn::Result<()> {
        if let Pat::Tuple(t) = &local.pat {
            return self.team_scan_local(t, local);
        }
        let (ident, annotated) = match &local.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => (&p.ident, None),
            Pat::Type(t) => match &*t.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                    let Some(s) = Scalar::from_type(&t.ty) else {
                        return Err(syn::Error::new(
                            t.ty.span(),
                            format!(
                                "a #[kernel] local holds a number or bool ({SUPPORTED_SCALARS}); \
                                 `String`, references and collections cannot go to a device"
                            ),
                        ));
                    };
                    (&p.ident, Some(s))
                }
                other => return Err(unsupported(other.span(), "this pattern")),
            },
            other => return Err(unsupported(other.span(), "a destructuring pattern")),
        };
        let Some(init) = &local.init else {
            return Err(syn::Error::new(
                local.span(),
                "a #[kernel] `let` needs an initial value",
            ));
        };
        if let Some((_, diverge)) = &init.diverge {
            return Err(unsupported(diverge.span(), "`let ... else`"));
        }
        if let Some((receiver, method)) = token_call(&init.expr)
            && let Ok(Ty::Tokens(k)) = self.infer_quiet(receiver)
        {
            return self.token_local(ident, annotated, k, method, &init.expr);
        }
        if let Some(call) = collective_call(&init.expr)
            && matches!(self.infer_quiet(&call.receiver), Ok(Ty::Member))
        {
            return self.collective_local(ident, annotated, call);
        }
        if let Expr::MethodCall(m) = &*init.expr
            && let Some(call) = nested_call(m)
        {
            return match call.method.as_str() {
                "parallel_reduce" => self.nested_reduce(ident, annotated, &call),
                "parallel_scan" => self.nested_scan(Some(ident), annotated, &call),
                _ => Err(syn::Error::new_spanned(m, NESTED_USAGE)),
            };
        }
        if let Some(k) = self.team_row_of(&init.expr)? {
            if annotated.is_some() {
                return Err(syn::Error::new(
                    local.pat.span(),
                    "a team row takes its type from the writer: write `let row = ...` without a type",
                ));
            }
            let h = &self.sig.handles[k];
            let view = format!("v_{}", h.name);
            let member = format!("v_{}", self.sig.token_name);
            let c_name = self.declare(ident, Ty::TeamRow(k));
            // The host's `team_row` panics on a league rank past the first extent.
            self.line(&format!(
                "const unsigned long long {c_name} = hl_team_row({view}, {member}.league);"
            ));
            return Ok(());
        }
        if let Some((element, pad, len)) = self.scratch_alloc(&init.expr)? {
            if annotated.is_some() {
                return Err(syn::Error::new(
                    local.pat.span(),
                    "a team scratch slice takes its type from `alloc::<T>`: write `let s = ...` without a type",
                ));
            }
            self.expect_usize(len)?;
            let len = self.emit(len, Scalar::Usize)?;
            self.uses_scratch = true;
            let c = element.cuda_name();
            let c_name = self.declare(ident, Ty::Scratch(element));
            let member = format!("v_{}", self.sig.token_name);
            self.line(&format!(
                "hl_scratch<{c}> {c_name} = hl_scratch_alloc<{c}>({member}, {pad}, &hl_scratch_used[{pad}], {len});"
            ));
            return Ok(());
        }
        let ty = self.infer(&init.expr)?;
        let var_ty = match annotated {
            Some(s) => {
                self.expect(ty, s, init.expr.span())?;
                Ty::Known(s)
            }
            None => match self.norm(ty) {
                Ty::Known(s) => Ty::Known(s),
                Ty::Int(Some(slot)) => Ty::Int(Some(slot)),
                Ty::Float(Some(slot)) => Ty::Float(Some(slot)),
                Ty::Int(None) => Ty::Int(Some(self.new_slot())),
                Ty::Float(None) => Ty::Float(Some(self.new_slot())),
                _ => {
                    return Err(syn::Error::new(
                        init.expr.span(),
                        "a #[kernel] local holds a number or bool; use handles and tokens directly",
                    ));
                }
            },
        };
        let scalar = self.scalar_of(var_ty, init.expr.span())?;
        let value = self.emit(&init.expr, scalar)?;
        let c_name = self.declare(ident, var_ty);
        self.line(&format!("{} {c_name} = {value};", scalar.cuda_name()));
        Ok(())
    }

    /// `let (prefix, total) = m.team_scan(v);`, the one destructuring `let` of the subset.
    fn team_scan_local(&mut self, t: &syn::PatTuple, local: &syn::Local) -> syn::Result<()> {
        let names: Vec<&syn::Ident> = t
            .elems
            .iter()
            .filter_map(|p| match p {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
                _ => None,
            })
            .collect();
        let call = match local.init.as_ref().map(|init| (&*init.expr, &init.diverge)) {
            Some((Expr::MethodCall(m), None)) if m.method == "team_scan" => Some(m),
            _ => None,
        };
        let (Some(call), [prefix, total]) = (call, names.as_slice()) else {
            return Err(unsupported(
                t.span(),
                "a destructuring pattern other than `let (prefix, total) = m.team_scan(v);`",
            ));
        };
        let receiver = self.infer_quiet(&call.receiver)?;
        if self.norm(receiver) != Ty::Member || t.elems.len() != 2 || call.args.len() != 1 {
            return Err(syn::Error::new_spanned(
                call,
                "`team_scan` takes one value on the team member: `let (prefix, total) = m.team_scan(v);`",
            ));
        }
        let value = &call.args[0];
        let ty = self.infer(value)?;
        let s = self.scalar_of(ty, value.span())?;
        if s == Scalar::Bool {
            return Err(syn::Error::new(value.span(), "team_scan sums numbers"));
        }
        self.set_slot(ty, s);
        let v = self.emit(value, s)?;
        let c = s.cuda_name();
        let prefix = self.declare(prefix, Ty::Known(s));
        let total = self.declare(total, Ty::Known(s));
        self.line(&format!("{c} {prefix}, {total};"));
        self.line(&format!("hl_team_scan<{c}>({v}, &{prefix}, &{total});"));
        Ok(())
    }

    pub(super) fn expr_stmt(&mut self, expr: &Expr) -> syn::Result<()> {
        match expr {
            Expr::Assign(a) => {
                let (lhs, ty) = self.place(&a.left)?;
                let rhs_ty = self.infer(&a.right)?;
                let t = self.unify(ty, rhs_ty, a.span())?;
                let s = self.scalar_of(t, a.left.span())?;
                let rhs = self.emit(&a.right, s)?;
                self.line(&format!("{lhs} = {rhs};"));
                Ok(())
            }
            Expr::Binary(b) if compound_op(&b.op).is_some() => {
                let (lhs, ty) = self.place(&b.left)?;
                // The match guard saw `Some`.
                let op = compound_op(&b.op).unwrap_or(BinOp::Add(Default::default()));
                let rhs_ty = self.infer(&b.right)?;
                // A shift amount keeps its own integer type, as in Rust (`x <<= 3u32` on an i64).
                let (s, rhs) = if matches!(op, BinOp::Shl(_) | BinOp::Shr(_)) {
                    let rs = self.scalar_of(rhs_ty, b.right.span())?;
                    let s = self.scalar_of(ty, b.left.span())?;
                    (s, self.emit(&b.right, rs)?)
                } else {
                    let t = self.unify(ty, rhs_ty, b.span())?;
                    let s = self.scalar_of(t, b.left.span())?;
                    (s, self.emit(&b.right, s)?)
                };
                let value = arith(&op, s, &lhs, &rhs, b.span())?;
                self.line(&format!("{lhs} = {value};"));
                Ok(())
            }
            Expr::If(i) => self.if_stmt(i),
            Expr::While(w) => {
                if let Some(label) = &w.label {
                    return Err(unsupported(label.span(), "a loop label"));
                }
                let t = self.infer(&w.cond)?;
                self.expect(t, Scalar::Bool, w.cond.span())?;
                let cond = self.emit(&w.cond, Scalar::Bool)?;
                self.line(&format!("while ({cond}) {{"));
                self.loop_depth += 1;
                self.block(&w.body)?;
                self.loop_depth -= 1;
                self.line("}");
                Ok(())
            }
            Expr::Loop(l) => {
                if let Some(label) = &l.label {
                    return Err(unsupported(label.span(), "a loop label"));
                }
                self.line("for (;;) {");
                self.loop_depth += 1;
                self.block(&l.body)?;
                self.loop_depth -= 1;
                self.line("}");
                Ok(())
            }
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::Block(b) => {
                if let Some(label) = &b.label {
                    return Err(unsupported(label.span(), "a block label"));
                }
                self.braced(|tx| tx.stmts(&b.block.stmts))
            }
            Expr::Break(b) => {
                if let Some(label) = &b.label {
                    return Err(unsupported(label.span(), "a loop label"));
                }
                if let Some(e) = &b.expr {
                    return Err(unsupported(e.span(), "`break` with a value"));
                }
                if self.loop_depth == 0 {
                    return Err(syn::Error::new(b.span(), "`break` outside a loop"));
                }
                self.line("break;");
                Ok(())
            }
            Expr::Continue(c) => {
                if let Some(label) = &c.label {
                    return Err(unsupported(label.span(), "a loop label"));
                }
                self.line("continue;");
                Ok(())
            }
            Expr::Return(r) => {
                if self.in_closure {
                    return Err(syn::Error::new_spanned(
                        r,
                        "`return` in a nested loop's closure is not supported in a #[kernel]; use `if`/`else`",
                    ));
                }
                if let Some(e) = &r.expr {
                    return Err(syn::Error::new(
                        e.span(),
                        "a #[kernel] returns nothing: `return;` ends the iteration early",
                    ));
                }
                self.line("return;");
                Ok(())
            }
            Expr::Paren(p) => self.expr_stmt(&p.expr),
            Expr::MethodCall(m) if m.method == "join" && matches!(&*m.receiver, Expr::Call(_)) => {
                self.reducer_join(m)
            }
            Expr::MethodCall(m)
                if m.method == "release"
                    && let Ok(Ty::Tokens(k)) = self.infer_quiet(&m.receiver) =>
            {
                self.token_release(m, k)
            }
            Expr::MethodCall(m) if nested_call(m).is_some() => {
                let call = nested_call(m).ok_or_else(|| syn::Error::new_spanned(m, NESTED_USAGE))?;
                match call.method.as_str() {
                    "parallel_for" => self.nested_for(&call),
                    "parallel_scan" => self.nested_scan(None, None, &call),
                    _ => Err(syn::Error::new_spanned(m, NESTED_USAGE)),
                }
            }
            other => {
                let ty = self.infer(other)?;
                let code = match self.norm(ty) {
                    Ty::Unit => self.emit_unit(other)?,
                    t => {
                        let s = self.scalar_of(t, other.span())?;
                        self.emit(other, s)?
                    }
                };
                // A call's unused result (`fetch_add`'s old value) is dropped without a warning.
                self.line(&format!("(void)({code});"));
                Ok(())
            }
        }
    }

    fn if_stmt(&mut self, i: &syn::ExprIf) -> syn::Result<()> {
        if let Expr::Let(l) = &*i.cond {
            return self.if_single(i, l);
        }
        let t = self.infer(&i.cond)?;
        self.expect(t, Scalar::Bool, i.cond.span())?;
        let cond = self.emit(&i.cond, Scalar::Bool)?;
        self.line(&format!("if ({cond}) {{"));
        self.block(&i.then_branch)?;
        self.else_branch(i)
    }

    /// Closes the then branch of `i` and emits its `else`, if any (`else if` is an `if` in it).
    fn else_branch(&mut self, i: &syn::ExprIf) -> syn::Result<()> {
        if let Some((_, e)) = &i.else_branch {
            self.line("} else {");
            self.scoped(|tx| tx.expr_stmt(e))?;
        }
        self.line("}");
        Ok(())
    }

    /// `if let Some(l) = m.league_token().single() { .. } else { .. }`: the then branch on
    /// team rank 0 with `l` the league rank, as `LeagueToken::single` hands it out.
    fn if_single(&mut self, i: &syn::ExprIf, l: &syn::ExprLet) -> syn::Result<()> {
        const USAGE: &str =
            "the one `if let` of a #[kernel] is `if let Some(l) = m.league_token().single() { w.set(l, v) }`";
        let name = match &*l.pat {
            Pat::TupleStruct(t) if t.path.is_ident("Some") && t.elems.len() == 1 => match t.elems.first() {
                Some(Pat::Ident(p)) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
                _ => None,
            },
            _ => None,
        };
        let member = match &*l.expr {
            Expr::MethodCall(single) if single.method == "single" && single.args.is_empty() => {
                match &*single.receiver {
                    Expr::MethodCall(token) if token.method == "league_token" && token.args.is_empty() => {
                        Some(&token.receiver)
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let (Some(name), Some(member)) = (name, member) else {
            return Err(unsupported(l.span(), USAGE));
        };
        let member_ty = self.infer_quiet(member)?;
        if self.norm(member_ty) != Ty::Member {
            return Err(syn::Error::new(l.span(), USAGE));
        }
        let member = self.emit_token(member)?;
        self.line("if (threadIdx.x == 0) {");
        self.scoped(|tx| {
            let c_name = tx.declare(name, Ty::LeagueIdx);
            tx.line(&format!("const unsigned long long {c_name} = {member}.league;"));
            tx.stmts(&i.then_branch.stmts)
        })?;
        self.else_branch(i)
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> syn::Result<()> {
        if let Some(label) = &f.label {
            return Err(unsupported(label.span(), "a loop label"));
        }
        let ident = match &*f.pat {
            Pat::Ident(p) => {
                if p.mutability.is_some() || p.by_ref.is_some() {
                    return Err(unsupported(
                        p.span(),
                        "a `mut` loop variable (copy it into a `let mut`)",
                    ));
                }
                Some(&p.ident)
            }
            Pat::Wild(_) => None,
            other => {
                return Err(unsupported(
                    other.span(),
                    "this loop pattern (use a plain name or `_`)",
                ));
            }
        };
        let range = match &*f.expr {
            Expr::Range(r) => r,
            Expr::Paren(p) => match &*p.expr {
                Expr::Range(r) => r,
                other => {
                    return Err(unsupported(
                        other.span(),
                        "`for` over anything but a range `a..b` or `a..=b`",
                    ));
                }
            },
            other => {
                return Err(unsupported(
                    other.span(),
                    "`for` over anything but a range `a..b` or `a..=b`",
                ));
            }
        };
        let (Some(start), Some(end)) = (&range.start, &range.end) else {
            return Err(unsupported(range.span(), "an open range in `for`"));
        };
        let ts = self.infer(start)?;
        let te = self.infer(end)?;
        let t = self.unify(ts, te, range.span())?;
        let t = match self.norm(t) {
            Ty::Int(None) => Ty::Int(Some(self.new_slot())),
            Ty::Known(s) if s.is_integer() => Ty::Known(s),
            Ty::Int(slot) => Ty::Int(slot),
            _ => return Err(syn::Error::new(range.span(), "`for` ranges are over integers")),
        };
        // Uses of the loop variable in the body may resolve the slot; the second walk has it.
        let s = self.scalar_of(t, range.span())?;
        let (a, b) = (self.emit(start, s)?, self.emit(end, s)?);
        let c = s.cuda_name();
        self.next_name += 1;
        let k = self.next_name;
        let inclusive = matches!(range.limits, syn::RangeLimits::Closed(_));
        self.braced(|tx| {
            tx.line(&format!("{c} hl_s{k} = {a}, hl_e{k} = {b};"));
            if inclusive {
                // `a..=MAX` ends in Rust; step only while the last value has not been run.
                tx.line(&format!(
                    "for (bool hl_go{k} = hl_s{k} <= hl_e{k}; hl_go{k}; hl_go{k} = hl_s{k} != hl_e{k}, hl_s{k} = hl_go{k} ? hl_s{k} + 1 : hl_s{k}) {{"
                ));
            } else {
                tx.line(&format!("for (; hl_s{k} < hl_e{k}; ++hl_s{k}) {{"));
            }
            // The loop variable and the body's locals share the loop's C block.
            tx.scoped(|tx| {
                if let Some(ident) = ident {
                    let c_name = tx.declare(ident, t);
                    tx.line(&format!("const {c} {c_name} = hl_s{k};"));
                }
                tx.loop_depth += 1;
                let result = tx.stmts(&f.body.stmts);
                tx.loop_depth -= 1;
                result
            })?;
            tx.line("}");
            Ok(())
        })
    }

    /// An assignable place: a local or `*acc`.
    pub(super) fn place(&mut self, expr: &Expr) -> syn::Result<(String, Ty)> {
        match expr {
            Expr::Path(p) => {
                let name = single_name(&p.path).ok_or_else(|| {
                    syn::Error::new(p.span(), "only locals and `*acc` can be assigned in a #[kernel]")
                })?;
                let var = self
                    .lookup(&name)
                    .cloned()
                    .ok_or_else(|| unknown_name(p.span(), &name))?;
                match var.ty {
                    Ty::Known(_) | Ty::Int(_) | Ty::Float(_) => Ok((var.c_name, var.ty)),
                    Ty::Acc(_) => Err(syn::Error::new(
                        p.span(),
                        "assign through the accumulator with `*acc = ..` or `*acc += ..`",
                    )),
                    _ => Err(syn::Error::new(p.span(), "only number locals can be assigned")),
                }
            }
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => match &*u.expr {
                Expr::Path(p) => {
                    let name = single_name(&p.path).unwrap_or_default();
                    match self.lookup(&name).cloned() {
                        Some(Var {
                            c_name,
                            ty: Ty::Acc(s),
                        }) => Ok((format!("(*{c_name})"), Ty::Known(s))),
                        _ => Err(unsupported(
                            u.span(),
                            "dereferencing anything but the accumulator",
                        )),
                    }
                }
                other => Err(unsupported(
                    other.span(),
                    "dereferencing anything but the accumulator",
                )),
            },
            Expr::Paren(p) => self.place(&p.expr),
            other => Err(unsupported(
                other.span(),
                "assigning to this place (assign to locals or `*acc`)",
            )),
        }
    }
}

pub(super) fn compound_op(op: &BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::AddAssign(_) => BinOp::Add(Default::default()),
        BinOp::SubAssign(_) => BinOp::Sub(Default::default()),
        BinOp::MulAssign(_) => BinOp::Mul(Default::default()),
        BinOp::DivAssign(_) => BinOp::Div(Default::default()),
        BinOp::RemAssign(_) => BinOp::Rem(Default::default()),
        BinOp::BitAndAssign(_) => BinOp::BitAnd(Default::default()),
        BinOp::BitOrAssign(_) => BinOp::BitOr(Default::default()),
        BinOp::BitXorAssign(_) => BinOp::BitXor(Default::default()),
        BinOp::ShlAssign(_) => BinOp::Shl(Default::default()),
        BinOp::ShrAssign(_) => BinOp::Shr(Default::default()),
        _ => return None,
    })
}
