//! Team collectives that take a closure: `let v = m.team_single(|| ..);` (rank 0 computes a
//! value every thread of the team gets) and `let v = m.team_broadcast_with(|x: &mut T| .., v,
//! source);` (the source thread applies the closure to its value, every thread gets the
//! result). Each closure becomes a C++ lambda defined before the call, capturing by
//! reference, so its body is translated like any other block.

use syn::spanned::Spanned;
use syn::{Expr, Pat, Stmt};

use super::Translator;
use super::types::Ty;
use crate::signature::{Scalar, ScalarSyntax};

/// How the two collectives are written in a #[kernel].
pub(super) const COLLECTIVE_USAGE: &str = "a closure collective goes into a `let` in a #[kernel]: \
     `let v = m.team_single(|| value);` or `let v = m.team_broadcast_with(|x: &mut T| *x = .., value, source);`";

/// `m.team_single(..)` or `m.team_broadcast_with(..)` on the team member: the call, if
/// `expr` is one.
pub(super) fn collective_call(expr: &Expr) -> Option<&syn::ExprMethodCall> {
    match expr {
        Expr::MethodCall(m) if m.method == "team_single" || m.method == "team_broadcast_with" => Some(m),
        _ => None,
    }
}

/// A closure argument: its parameters and body, or the usage error.
fn closure(arg: &Expr, params: usize) -> syn::Result<&syn::ExprClosure> {
    match arg {
        Expr::Closure(c) if c.inputs.len() == params && c.asyncness.is_none() => Ok(c),
        other => Err(syn::Error::new_spanned(other, COLLECTIVE_USAGE)),
    }
}

/// The statements of a closure body before its value, and the value.
fn statements_and_value(body: &Expr) -> syn::Result<(&[Stmt], &Expr)> {
    match body {
        Expr::Block(b) => match b.block.stmts.split_last() {
            Some((Stmt::Expr(value, None), before)) => Ok((before, value)),
            _ => Err(syn::Error::new_spanned(
                body,
                "the closure of `team_single` ends with the value it gives",
            )),
        },
        value => Ok((&[], value)),
    }
}

impl Translator<'_> {
    /// `let ident = m.team_single(..)` or `let ident = m.team_broadcast_with(..)`.
    pub(super) fn collective_local(
        &mut self,
        ident: &syn::Ident,
        annotated: Option<Scalar>,
        call: &syn::ExprMethodCall,
    ) -> syn::Result<()> {
        self.next_name += 1;
        let k = self.next_name;
        let args: Vec<&Expr> = call.args.iter().collect();
        if call.method == "team_single" {
            let [arg] = args[..] else {
                return Err(syn::Error::new_spanned(call, COLLECTIVE_USAGE));
            };
            let c = closure(arg, 0)?;
            let (before, value) = statements_and_value(&c.body)?;
            self.line(&format!("auto hl_single{k} = [&]() {{"));
            let s = self.scoped(|tx| {
                tx.stmts(before)?;
                let t = tx.infer(value)?;
                let s = match annotated {
                    Some(s) => {
                        tx.expect(t, s, value.span())?;
                        s
                    }
                    None => tx.scalar_of(t, value.span())?,
                };
                let v = tx.emit(value, s)?;
                tx.line(&format!("return ({})({v});", s.cuda_name()));
                Ok(s)
            })?;
            self.line("};");
            let ty = s.cuda_name();
            let c_name = self.declare(ident, Ty::Known(s));
            self.line(&format!("{ty} {c_name} = hl_team_single<{ty}>(hl_single{k});"));
            return Ok(());
        }
        let [arg, value, source] = args[..] else {
            return Err(syn::Error::new_spanned(call, COLLECTIVE_USAGE));
        };
        let c = closure(arg, 1)?;
        let (name, param_scalar) = match &c.inputs[0] {
            Pat::Type(t) => match (&*t.pat, &*t.ty) {
                (Pat::Ident(p), syn::Type::Reference(r)) if r.mutability.is_some() => {
                    (&p.ident, Scalar::from_type(&r.elem))
                }
                _ => return Err(syn::Error::new_spanned(&c.inputs[0], COLLECTIVE_USAGE)),
            },
            Pat::Ident(p) => (&p.ident, None),
            other => return Err(syn::Error::new_spanned(other, COLLECTIVE_USAGE)),
        };
        let t = self.infer(value)?;
        let s = match annotated.or(param_scalar) {
            Some(s) => {
                self.expect(t, s, value.span())?;
                s
            }
            None => self.scalar_of(t, value.span())?,
        };
        let src = self.infer(source)?;
        self.expect(src, Scalar::Usize, source.span())?;
        let ty = s.cuda_name();
        let body = &*c.body;
        self.scoped(|tx| {
            let param = tx.declare(name, Ty::Acc(s));
            tx.indent -= 1;
            tx.line(&format!("auto hl_with{k} = [&]({ty}* {param}) {{"));
            tx.indent += 1;
            match body {
                Expr::Block(b) => tx.stmts(&b.block.stmts),
                other => tx.expr_stmt(other),
            }
        })?;
        self.line("};");
        let v = self.emit(value, s)?;
        let from = self.emit(source, Scalar::Usize)?;
        let c_name = self.declare(ident, Ty::Known(s));
        self.line(&format!(
            "{ty} {c_name} = hl_team_broadcast_with<{ty}>(hl_with{k}, {v}, {from});"
        ));
        Ok(())
    }
}
