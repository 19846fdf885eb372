//! Unique tokens: `acquire`/`release`, `guard` and `team_guard`, and the check that every
//! acquired id is released in its block.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Pat, Stmt};

use super::Translator;
use super::types::Ty;
use crate::signature::Scalar;

pub(super) const TOKEN_USAGE: &str = "a unique token in a #[kernel] gives ids by `let id = tokens.acquire();` \
     followed in the same block by `tokens.release(id);`, by `let id = tokens.guard();` (released at \
     the end of its block; use `*id`), or in a team kernel by `let id = tokens.team_guard(m);` (one id \
     for the whole team); `tokens.size()` is the number of ids";

impl Translator<'_> {
    /// `let id = tokens.acquire();` must be followed in its block by `tokens.release(id);`:
    /// the host backends keep an id that is never released, so a kernel that forgot one would
    /// drain the pool there. (The device releases it at the end of the block regardless, so
    /// early `return`, `break` and `continue` never leak an id there.)
    pub(super) fn check_release_follows(&mut self, stmt: &Stmt, rest: &[Stmt]) -> syn::Result<()> {
        let Stmt::Local(local) = stmt else {
            return Ok(());
        };
        let Some((receiver, method)) = local.init.as_ref().and_then(|init| token_call(&init.expr)) else {
            return Ok(());
        };
        if method != "acquire" || !matches!(self.infer_quiet(receiver), Ok(Ty::Tokens(_))) {
            return Ok(());
        }
        let (Some(id), Some(tokens)) = (local_name(&local.pat), path_ident(receiver)) else {
            return Ok(());
        };
        let releases = |s: &Stmt| match s {
            Stmt::Expr(Expr::MethodCall(m), _) => {
                m.method == "release"
                    && path_ident(&m.receiver).is_some_and(|r| r == tokens)
                    && m.args.len() == 1
                    && path_ident(&m.args[0]).is_some_and(|a| a == id)
            }
            _ => false,
        };
        if rest.iter().any(releases) {
            return Ok(());
        }
        Err(syn::Error::new(
            local.pat.span(),
            format!(
                "the id `{id}` from `{tokens}.acquire()` is never released in this block: write \
                 `{tokens}.release({id});` after its last use in the same block, or hold it with \
                 `let {id} = {tokens}.guard();`, which releases it at the end of the block"
            ),
        ))
    }

    /// `let id = tokens.acquire();` or `let id = tokens.guard();`: a guard object that holds
    /// the id and releases it when its block ends, and the id as a `const` local.
    pub(super) fn token_local(
        &mut self,
        ident: &syn::Ident,
        annotated: Option<Scalar>,
        k: usize,
        method: &str,
        init: &Expr,
    ) -> syn::Result<()> {
        let guard = match method {
            "acquire" => false,
            "guard" | "team_guard" => true,
            _ => return Err(syn::Error::new(init.span(), TOKEN_USAGE)),
        };
        let team = method == "team_guard";
        if let Expr::MethodCall(m) = init {
            if team {
                let member = match m.args.first() {
                    Some(arg) if m.args.len() == 1 => self.infer_quiet(arg)?,
                    _ => Ty::Unit,
                };
                if self.norm(member) != Ty::Member || self.in_closure {
                    return Err(team_guard_error(m.span()));
                }
            } else if !m.args.is_empty() {
                return Err(syn::Error::new(
                    m.args.span(),
                    format!("`{method}` takes no arguments"),
                ));
            }
        }
        // An id from `acquire` may carry its type, `usize`, as in Rust; a guard is no number.
        match annotated {
            None | Some(Scalar::Usize) if !guard => {}
            None => {}
            Some(_) => {
                return Err(syn::Error::new(
                    init.span(),
                    "an id from `acquire` is a `usize`; a guard takes no type annotation",
                ));
            }
        }
        let tokens = format!("v_{}", self.sig.tokens[k].name);
        let c_name = self.declare(
            ident,
            if guard {
                Ty::Guard
            } else {
                Ty::Known(Scalar::Usize)
            },
        );
        let holder = format!("{c_name}_g");
        let kind = if team {
            "hl_team_token_guard"
        } else {
            "hl_token_guard"
        };
        self.line(&format!("{kind} {holder}({tokens});"));
        self.line(&format!("const unsigned long long {c_name} = {holder}.id;"));
        if !guard {
            self.acquired.insert(c_name, (k, holder));
        }
        Ok(())
    }

    /// `tokens.release(id);` with `id` from `let id = tokens.acquire();` of the same token.
    pub(super) fn token_release(&mut self, m: &syn::ExprMethodCall, k: usize) -> syn::Result<()> {
        let tokens = self.sig.tokens[k].name.to_string();
        let usage = || {
            syn::Error::new(
                m.span(),
                format!(
                    "`{tokens}.release(id)` in a #[kernel] releases a local bound by `let id = {tokens}.acquire();`: \
                     a device thread may give back only an id it holds"
                ),
            )
        };
        if m.args.len() != 1 {
            return Err(usage());
        }
        let holder = path_ident(&m.args[0])
            .and_then(|name| self.lookup(&name.to_string()).cloned())
            .and_then(|var| self.acquired.get(&var.c_name).cloned());
        match holder {
            Some((owner, holder)) if owner == k => {
                // Traps if the id was released already, where the host's pool panics.
                self.line(&format!("{holder}.release();"));
                Ok(())
            }
            _ => Err(usage()),
        }
    }
}

fn team_guard_error(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        "`team_guard` (one id for a whole team) in a #[kernel] is `let id = tokens.team_guard(m);` with `m` the \
         team member of a team kernel, outside nested loops' closures (it is a team collective: every thread of \
         the team makes it, and the end of its block is a team barrier); use the id as `*id`",
    )
}

/// `receiver.acquire()`, `.guard()`, `.release(..)`, ...: the receiver and the method of a
/// call that may be on a unique token.
pub(super) fn token_call(expr: &Expr) -> Option<(&Expr, &'static str)> {
    let Expr::MethodCall(m) = expr else {
        return None;
    };
    let method = ["acquire", "guard", "try_acquire", "team_guard", "release", "size"]
        .into_iter()
        .find(|name| m.method == name)?;
    Some((&m.receiver, method))
}

/// The name of a `let` that binds one name, with or without a type.
fn local_name(pat: &Pat) -> Option<&syn::Ident> {
    match pat {
        Pat::Ident(p) => Some(&p.ident),
        Pat::Type(t) => local_name(&t.pat),
        _ => None,
    }
}

/// The one name an expression is (`tokens`, `id`, `(id)`).
fn path_ident(expr: &Expr) -> Option<&syn::Ident> {
    match expr {
        Expr::Path(p)
            if p.qself.is_none() && p.path.segments.len() == 1 && p.path.leading_colon.is_none() =>
        {
            Some(&p.path.segments[0].ident)
        }
        Expr::Paren(p) => path_ident(&p.expr),
        _ => None,
    }
}
