//! Emission: the C code of expressions, with Rust's semantics (wrapping integers, trapping
//! division, masked shifts, saturating float -> int casts, checked indices).

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Lit, UnOp};

use super::reducers::reducer_kind;
use super::types::{Ty, type_const};
use super::{Translator, int_lit, path_name, single_name, unknown_name, unsupported, value_branches};
use crate::signature::{HandleKind, Scalar, ScalarSyntax};

impl Translator<'_> {
    /// The code of a unit-typed expression (a `set`).
    pub(super) fn emit_unit(&mut self, expr: &Expr) -> syn::Result<String> {
        match expr {
            // A unit method (`set`, `team_barrier`, `update`) reads no result type: any will do.
            Expr::MethodCall(m) => self.emit_method(m, Scalar::Bool),
            Expr::Call(c) if let Some(first) = super::inference::index_update(c) => {
                let acc = self.emit_token(&c.args[0])?;
                let index = self.emit(&c.args[1], Scalar::Usize)?;
                let update = if first {
                    "hl_update_first_loc"
                } else {
                    "hl_update_last_loc"
                };
                Ok(format!("{update}({acc}, {index})"))
            }
            Expr::Paren(p) => self.emit_unit(&p.expr),
            other => Err(self.unsupported_expr(other)),
        }
    }

    /// The code of `expr`, whose type is `s`.
    pub(super) fn emit(&mut self, expr: &Expr, s: Scalar) -> syn::Result<String> {
        match expr {
            Expr::Lit(l) => lit_code(&l.lit, s),
            Expr::Paren(p) => Ok(format!("({})", self.emit(&p.expr, s)?)),
            Expr::Group(g) => self.emit(&g.expr, s),
            Expr::Path(p) => {
                if let Some(name) = single_name(&p.path) {
                    let var = self
                        .lookup(&name)
                        .cloned()
                        .ok_or_else(|| unknown_name(p.span(), &name))?;
                    return match var.ty {
                        Ty::Token => Ok(var.c_name),
                        Ty::Acc(_) => Ok(format!("(*{})", var.c_name)),
                        Ty::Known(_) | Ty::Int(_) | Ty::Float(_) => Ok(var.c_name),
                        _ => Err(syn::Error::new(p.span(), "a handle or token is not a value")),
                    };
                }
                match type_const(&p.path) {
                    Some((_, code)) => Ok(code),
                    None => Err(unknown_name(p.span(), &path_name(&p.path))),
                }
            }
            Expr::Unary(u) => match u.op {
                UnOp::Deref(_) => match &*u.expr {
                    Expr::Path(p) => {
                        let name = single_name(&p.path).unwrap_or_default();
                        let var = self
                            .lookup(&name)
                            .cloned()
                            .ok_or_else(|| unknown_name(p.span(), &name))?;
                        match var.ty {
                            Ty::Acc(_) => Ok(format!("(*{})", var.c_name)),
                            _ => Ok(var.c_name),
                        }
                    }
                    other => Err(self.unsupported_expr(other)),
                },
                UnOp::Neg(_) => {
                    let inner = self.emit(&u.expr, s)?;
                    Ok(if s.is_float() {
                        format!("(-{inner})")
                    } else {
                        format!("hl_neg({inner})")
                    })
                }
                UnOp::Not(_) => {
                    let inner = self.emit(&u.expr, s)?;
                    Ok(if s == Scalar::Bool {
                        format!("(!{inner})")
                    } else {
                        format!("(({})~{inner})", s.cuda_name())
                    })
                }
                _ => Err(unsupported(u.span(), "this unary operator")),
            },
            Expr::Binary(b) => match b.op {
                BinOp::And(_) | BinOp::Or(_) => {
                    let l = self.emit(&b.left, Scalar::Bool)?;
                    let r = self.emit(&b.right, Scalar::Bool)?;
                    let op = if matches!(b.op, BinOp::And(_)) { "&&" } else { "||" };
                    Ok(format!("({l} {op} {r})"))
                }
                BinOp::Eq(_) | BinOp::Ne(_) | BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) => {
                    let lt = self.infer(&b.left)?;
                    let rt = self.infer(&b.right)?;
                    let t = self.unify(lt, rt, b.span())?;
                    let os = self.scalar_of(t, b.span())?;
                    let l = self.emit(&b.left, os)?;
                    let r = self.emit(&b.right, os)?;
                    let op = match b.op {
                        BinOp::Eq(_) => "==",
                        BinOp::Ne(_) => "!=",
                        BinOp::Lt(_) => "<",
                        BinOp::Le(_) => "<=",
                        BinOp::Gt(_) => ">",
                        _ => ">=",
                    };
                    Ok(format!("({l} {op} {r})"))
                }
                BinOp::Shl(_) | BinOp::Shr(_) => {
                    let l = self.emit(&b.left, s)?;
                    let rt = self.infer(&b.right)?;
                    let rs = self.scalar_of(rt, b.right.span())?;
                    let r = self.emit(&b.right, rs)?;
                    arith(&b.op, s, &l, &r, b.span())
                }
                _ => {
                    let l = self.emit(&b.left, s)?;
                    let r = self.emit(&b.right, s)?;
                    arith(&b.op, s, &l, &r, b.span())
                }
            },
            Expr::Cast(c) => {
                let ft = self.infer(&c.expr)?;
                let from = self.scalar_of(ft, c.expr.span())?;
                let inner = self.emit(&c.expr, from)?;
                cast(from, s, &inner, c.span())
            }
            Expr::MethodCall(m) => self.emit_method(m, s),
            Expr::Call(c) => {
                let (ty, method) = self.path_call(c)?;
                let mut args = c.args.iter();
                let recv = args
                    .next()
                    .ok_or_else(|| syn::Error::new(c.span(), "expected an argument"))?;
                let rest: Vec<&Expr> = args.collect();
                let r = self.emit(recv, ty)?;
                self.emit_math(ty, &method, &r, &rest)
            }
            Expr::Index(i) => {
                let base = self.emit_token(&i.expr)?;
                // `infer` accepted only a constant below the rank here.
                let k = int_lit(&i.index).unwrap_or(0);
                Ok(format!("{base}.v[{k}]"))
            }
            Expr::If(i) => {
                let c = self.emit(&i.cond, Scalar::Bool)?;
                let (then, other) = value_branches(i)?;
                let a = self.emit(then, s)?;
                let b = self.emit(other, s)?;
                Ok(format!("({c} ? {a} : {b})"))
            }
            other => Err(self.unsupported_expr(other)),
        }
    }

    pub(super) fn emit_token(&mut self, expr: &Expr) -> syn::Result<String> {
        match expr {
            Expr::Path(p) => {
                let name = single_name(&p.path).unwrap_or_default();
                let var = self
                    .lookup(&name)
                    .cloned()
                    .ok_or_else(|| unknown_name(p.span(), &name))?;
                Ok(var.c_name)
            }
            Expr::Paren(p) => self.emit_token(&p.expr),
            other => Err(self.unsupported_expr(other)),
        }
    }

    fn emit_math(&mut self, s: Scalar, method: &str, recv: &str, args: &[&Expr]) -> syn::Result<String> {
        let mut codes = vec![recv.to_owned()];
        for a in args {
            let want = if method == "powi" { Scalar::I32 } else { s };
            codes.push(self.emit(a, want)?);
        }
        if s.is_float() {
            // `math_type` accepted only the methods `float_fn` maps.
            let f = float_fn(method, s).unwrap_or("sqrt");
            return Ok(format!("{f}({})", codes.join(", ")));
        }
        let f = method.strip_prefix("wrapping_").unwrap_or(method);
        Ok(format!("hl_{f}<{}>({})", s.cuda_name(), codes.join(", ")))
    }

    fn emit_method(&mut self, m: &syn::ExprMethodCall, s: Scalar) -> syn::Result<String> {
        let method = m.method.to_string();
        let recv_ty = self.infer(&m.receiver)?;
        let args: Vec<&Expr> = m.args.iter().collect();
        match self.norm(recv_ty) {
            Ty::Handle(k) => self.emit_handle_method(k, &method, &args),
            Ty::Member => {
                let member = self.emit_token(&m.receiver)?;
                match method.as_str() {
                    "league_rank" => Ok(format!("{member}.league")),
                    "league_size" => Ok(format!("{member}.league_size")),
                    "vector_length" => Ok(format!("{member}.vector_length")),
                    "team_rank" => Ok("((unsigned long long)threadIdx.x)".to_owned()),
                    "team_size" => Ok("((unsigned long long)blockDim.x)".to_owned()),
                    "team_barrier" => Ok("__syncthreads()".to_owned()),
                    "team_broadcast" => {
                        let v = self.emit(args[0], s)?;
                        let src = self.emit(args[1], Scalar::Usize)?;
                        Ok(format!("hl_team_broadcast<{}>({v}, {src})", s.cuda_name()))
                    }
                    // `team_reduce`, the one other method `member_method_type` accepts.
                    _ => {
                        let (kind, _) = reducer_kind(args[0], true)?;
                        let v = self.emit(args[1], s)?;
                        Ok(format!("{}({v})", kind.team_fn(s.cuda_name())))
                    }
                }
            }
            Ty::TeamRow(k) => {
                let row = self.emit_token(&m.receiver)?;
                let h = &self.sig.handles[k];
                let view = format!("v_{}", h.name);
                match method.as_str() {
                    "get" => {
                        let j = self.emit_token(args[0])?;
                        Ok(format!("{view}.ptr[hl_row_at({view}, {row}, {j})]"))
                    }
                    "set" => {
                        let j = self.emit_token(args[0])?;
                        let v = self.emit(args[1], h.element)?;
                        Ok(format!("{view}.ptr[hl_row_at({view}, {row}, {j})] = {v}"))
                    }
                    "len" => Ok(format!("{view}.ext[1]")),
                    "row" => Ok(row),
                    _ => Ok(format!("({view}.ext[1] == 0)")),
                }
            }
            Ty::Scratch(element) => {
                let r = self.emit_token(&m.receiver)?;
                match method.as_str() {
                    "get" => {
                        let k = self.emit(args[0], Scalar::Usize)?;
                        Ok(format!("{r}.ptr[hl_scratch_at({r}, {k})]"))
                    }
                    "set" => {
                        let k = self.emit(args[0], Scalar::Usize)?;
                        let v = self.emit(args[1], element)?;
                        Ok(format!("{r}.ptr[hl_scratch_at({r}, {k})] = {v}"))
                    }
                    "len" => Ok(format!("{r}.len")),
                    _ => Ok(format!("({r}.len == 0)")),
                }
            }
            Ty::AccMinMax(s) => {
                let acc = self.emit_token(&m.receiver)?;
                let v = self.emit(args[0], s)?;
                Ok(format!("hl_update_minmax({acc}, {v})"))
            }
            Ty::AccMinMaxLoc(s) => {
                let acc = self.emit_token(&m.receiver)?;
                let v = self.emit(args[0], s)?;
                let loc = self.emit(args[1], Scalar::Usize)?;
                let update = if method == "update_first_last" {
                    "hl_update_minmaxloc_first_last"
                } else {
                    "hl_update_minmaxloc"
                };
                Ok(format!("{update}({acc}, {v}, {loc})"))
            }
            Ty::AccLoc(s) => {
                let acc = self.emit_token(&m.receiver)?;
                let v = self.emit(args[0], s)?;
                let loc = self.emit(args[1], Scalar::Usize)?;
                let dir = if method == "update_min" { "true" } else { "false" };
                Ok(format!("hl_update_loc({acc}, {v}, {loc}, {dir})"))
            }
            Ty::Token | Ty::NestedIdx | Ty::LeagueIdx | Ty::Guard => self.emit_token(&m.receiver),
            Ty::Tokens(k) => Ok(format!("v_{}.size", self.sig.tokens[k].name)),
            _ => {
                let r = self.emit(&m.receiver, s)?;
                self.emit_math(s, &method, &r, &args)
            }
        }
    }

    fn emit_index(&mut self, arg: &Expr, rank: usize, h: &str) -> syn::Result<String> {
        match self.infer_quiet(arg)? {
            Ty::Token => Ok(format!("hl_offset({h}, &{})", self.emit_token(arg)?)),
            // No launch-wide range covers the league: the host checks these accesses too.
            Ty::LeagueIdx => Ok(format!(
                "hl_checked({h}, hl_idx<1>{{{{{}}}}}.v)",
                self.emit_token(arg)?
            )),
            Ty::MdToken(_) => Ok(format!("hl_offset({h}, {}.v)", self.emit_token(arg)?)),
            _ => {
                let parts = match arg {
                    Expr::Array(a) => a
                        .elems
                        .iter()
                        .map(|e| self.emit(e, Scalar::Usize))
                        .collect::<syn::Result<Vec<_>>>()?,
                    other => vec![self.emit(other, Scalar::Usize)?],
                };
                Ok(format!(
                    "hl_checked({h}, hl_idx<{rank}>{{{{{}}}}}.v)",
                    parts.join(", ")
                ))
            }
        }
    }

    /// The offset of `arg` in handle `h`, checked against its extents whatever the index (a
    /// token of the launch or a plain index): atomic handles and lookups, whose extents no
    /// launch-wide check covers.
    fn emit_checked_index(&mut self, arg: &Expr, rank: usize, h: &str) -> syn::Result<String> {
        match self.infer_quiet(arg)? {
            Ty::Token | Ty::MdToken(_) => {
                let tok = self.emit_token(arg)?;
                let idx = if rank == 1 && matches!(self.infer_quiet(arg)?, Ty::Token) {
                    format!("hl_idx<1>{{{{{tok}}}}}.v")
                } else {
                    format!("{tok}.v")
                };
                Ok(format!("hl_checked({h}, {idx})"))
            }
            _ => self.emit_index(arg, rank, h),
        }
    }

    fn emit_handle_method(&mut self, k: usize, method: &str, args: &[&Expr]) -> syn::Result<String> {
        let h = &self.sig.handles[k];
        let (element, rank) = (h.element, h.rank);
        let hv = format!("v_{}", h.name);
        if h.kind == HandleKind::TeamSlots {
            // The thread's own `[league rank, team rank]`, checked as the host checks it.
            let at = format!("hl_slot_at({hv}, v_{}.league)", self.sig.token_name);
            return match method {
                "get" => Ok(format!("{hv}.ptr[{at}]")),
                _ => {
                    let v = self.emit(args[1], element)?;
                    Ok(format!("{hv}.ptr[{at}] = {v}"))
                }
            };
        }
        match method {
            // A lookup's range was never checked against the launch: tokens are checked too.
            "get" if h.kind == HandleKind::Lookup => {
                let at = self.emit_checked_index(args[0], rank, &hv)?;
                Ok(format!("{hv}.ptr[{at}]"))
            }
            "get" => {
                let at = self.emit_index(args[0], rank, &hv)?;
                Ok(format!("{hv}.ptr[{at}]"))
            }
            "set" => {
                let at = self.emit_index(args[0], rank, &hv)?;
                let v = self.emit(args[1], element)?;
                Ok(format!("{hv}.ptr[{at}] = {v}"))
            }
            "neighbor" => {
                let tok = self.emit_token(args[0])?;
                let Expr::Array(offsets) = args[1] else {
                    return Err(syn::Error::new(args[1].span(), "neighbor offsets are an array"));
                };
                let range_token = matches!(self.infer_quiet(args[0]), Ok(Ty::Token));
                let mut parts = Vec::new();
                for (d, o) in offsets.elems.iter().enumerate() {
                    let base = if range_token {
                        tok.clone()
                    } else {
                        format!("{tok}.v[{d}]")
                    };
                    let off = self.emit(o, Scalar::Isize)?;
                    // A negative offset wraps to the index below; one below 0 wraps past the
                    // extent, where `hl_checked` traps as Rust panics.
                    parts.push(format!("{base} + (unsigned long long)({off})"));
                }
                Ok(format!(
                    "{hv}.ptr[hl_checked({hv}, hl_idx<{rank}>{{{{{}}}}}.v)]",
                    parts.join(", ")
                ))
            }
            "fetch_add" | "fetch_min" | "fetch_max" => {
                let at = self.emit_checked_index(args[0], rank, &hv)?;
                let v = self.emit(args[1], element)?;
                // `add`, `min` or `max`: the prelude's `hl_atomic_*`.
                let f = &method[6..];
                Ok(format!(
                    "hl_atomic_{f}(&{hv}.ptr[{at}], ({}){v})",
                    element.cuda_name()
                ))
            }
            _ => Err(syn::Error::new(
                Span::call_site(),
                format!("unsupported handle method `{method}`"),
            )),
        }
    }
}

pub(super) fn float_fn(method: &str, ty: Scalar) -> Option<&'static str> {
    let f32_ = ty == Scalar::F32;
    Some(match method {
        "sqrt" => {
            if f32_ {
                "sqrtf"
            } else {
                "sqrt"
            }
        }
        "exp" => {
            if f32_ {
                "expf"
            } else {
                "exp"
            }
        }
        "ln" => {
            if f32_ {
                "logf"
            } else {
                "log"
            }
        }
        "sin" => {
            if f32_ {
                "sinf"
            } else {
                "sin"
            }
        }
        "cos" => {
            if f32_ {
                "cosf"
            } else {
                "cos"
            }
        }
        "abs" => {
            if f32_ {
                "fabsf"
            } else {
                "fabs"
            }
        }
        "min" => {
            if f32_ {
                "fminf"
            } else {
                "fmin"
            }
        }
        "max" => {
            if f32_ {
                "fmaxf"
            } else {
                "fmax"
            }
        }
        "powf" => {
            if f32_ {
                "powf"
            } else {
                "pow"
            }
        }
        "mul_add" => {
            if f32_ {
                "fmaf"
            } else {
                "fma"
            }
        }
        "powi" => "hl_powi",
        _ => return None,
    })
}

pub(super) fn float_arity(method: &str) -> usize {
    match method {
        "min" | "max" | "powf" | "powi" => 1,
        "mul_add" => 2,
        _ => 0,
    }
}

fn lit_code(lit: &Lit, s: Scalar) -> syn::Result<String> {
    match lit {
        Lit::Int(i) => {
            if s.is_float() {
                return Err(syn::Error::new(
                    i.span(),
                    "an integer literal where a float is expected",
                ));
            }
            // Unsigned in C, then converted: a literal up to `u64::MAX` is never a signed C
            // literal too large for its type, and `-1` is `hl_neg` of `1`.
            let v: u128 = i.base10_parse()?;
            Ok(format!("(({}){v}ull)", s.cuda_name()))
        }
        Lit::Float(f) => {
            let mut digits = f.base10_digits().to_owned();
            if !digits.contains(['.', 'e', 'E']) {
                digits.push_str(".0");
            }
            Ok(if s == Scalar::F32 {
                format!("{digits}f")
            } else {
                digits
            })
        }
        Lit::Bool(b) => Ok(if b.value {
            "true".to_owned()
        } else {
            "false".to_owned()
        }),
        other => Err(unsupported(other.span(), "this literal")),
    }
}

/// A binary arithmetic or bit operation on two values of type `s`, with Rust's semantics.
pub(super) fn arith(op: &BinOp, s: Scalar, l: &str, r: &str, span: Span) -> syn::Result<String> {
    let c = s.cuda_name();
    Ok(match op {
        BinOp::Add(_) if s.is_integer() => format!("hl_add<{c}>({l}, {r})"),
        BinOp::Sub(_) if s.is_integer() => format!("hl_sub<{c}>({l}, {r})"),
        BinOp::Mul(_) if s.is_integer() => format!("hl_mul<{c}>({l}, {r})"),
        BinOp::Div(_) if s.is_integer() => format!("hl_div<{c}>({l}, {r})"),
        BinOp::Rem(_) if s.is_integer() => format!("hl_rem<{c}>({l}, {r})"),
        BinOp::Add(_) => format!("({l} + {r})"),
        BinOp::Sub(_) => format!("({l} - {r})"),
        BinOp::Mul(_) => format!("({l} * {r})"),
        BinOp::Div(_) => format!("({l} / {r})"),
        BinOp::Rem(_) => format!("hl_rem({l}, {r})"),
        // C's bit operations promote `bool` to `int`: the cast brings the type back.
        BinOp::BitAnd(_) => format!("(({c})({l} & {r}))"),
        BinOp::BitOr(_) => format!("(({c})({l} | {r}))"),
        BinOp::BitXor(_) => format!("(({c})({l} ^ {r}))"),
        BinOp::Shl(_) => format!("hl_shl<{c}>({l}, {r})"),
        BinOp::Shr(_) => format!("hl_shr<{c}>({l}, {r})"),
        _ => return Err(unsupported(span, "this operator")),
    })
}

/// `inner as to`, where `inner` has type `from`, with Rust's semantics.
fn cast(from: Scalar, to: Scalar, inner: &str, span: Span) -> syn::Result<String> {
    let c = to.cuda_name();
    if from == to {
        return Ok(inner.to_owned());
    }
    if to == Scalar::Bool {
        return Err(syn::Error::new(
            span,
            "`as bool` is not Rust; compare with 0 instead",
        ));
    }
    if from.is_float() && to.is_integer() {
        let (lo, hi) = to.cuda_bounds();
        return Ok(format!("hl_f2i<{c}, {}>({inner}, {lo}, {hi})", from.cuda_name()));
    }
    Ok(format!("(({c})({inner}))"))
}
