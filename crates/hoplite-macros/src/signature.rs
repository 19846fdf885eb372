//! The kernel's signature: which parameter is the token, which are handles, scalars and the
//! accumulator.

use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, Ident, Pat, PathArguments, Signature, Type};

// A scalar type of the subset: the device ABI's `ScalarType`, which is what the generated
// `DeviceParam`s name. (A doc comment with a link here makes rustdoc 1.95 crash on a
// proc-macro crate: "no resolutions for a doc link".)
pub use hoplite_abi::ScalarType as Scalar;

pub const SUPPORTED_SCALARS: &str = "bool, i32, i64, u32, u64, usize, isize, f32, f64";

/// What the translator needs of a scalar type beyond the ABI: reading it from Rust syntax and
/// its bounds as CUDA C.
pub trait ScalarSyntax: Sized {
    /// The scalar type `ty` names (`f64`, `(usize)`), if it is one.
    fn from_type(ty: &Type) -> Option<Self>;

    /// The CUDA C expressions of the type's smallest and largest values (empty for `bool`
    /// and the floats).
    fn cuda_bounds(self) -> (&'static str, &'static str);
}

impl ScalarSyntax for Scalar {
    fn from_type(ty: &Type) -> Option<Scalar> {
        match ty {
            Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let seg = &p.path.segments[0];
                if !matches!(seg.arguments, PathArguments::None) {
                    return None;
                }
                Scalar::from_rust_name(&seg.ident.to_string())
            }
            Type::Paren(p) => Scalar::from_type(&p.elem),
            _ => None,
        }
    }

    fn cuda_bounds(self) -> (&'static str, &'static str) {
        match self {
            Scalar::I32 => ("(int)0x80000000u", "0x7fffffff"),
            Scalar::I64 | Scalar::Isize => ("(long long)0x8000000000000000ull", "0x7fffffffffffffffll"),
            Scalar::U32 => ("0u", "0xffffffffu"),
            Scalar::U64 | Scalar::Usize => ("0ull", "0xffffffffffffffffull"),
            Scalar::Bool | Scalar::F32 | Scalar::F64 => ("", ""),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    Range,
    MdRange(usize),
    /// `&impl TeamMember`: a team kernel.
    Team,
}

impl TokenKind {
    pub fn rank(self) -> usize {
        match self {
            TokenKind::Range | TokenKind::Team => 1,
            TokenKind::MdRange(rank) => rank,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleKind {
    Reader,
    /// A lookup handle (`BoundLookup`): loads at any index, tokens included, each checked.
    Lookup,
    Writer,
    Atomic,
    /// A team-slots handle (`BoundTeamSlots`, rank 2): each team thread at its own
    /// `[league rank, team rank]`, each access checked.
    TeamSlots,
}

pub struct Handle {
    pub name: Ident,
    pub kind: HandleKind,
    pub element: Scalar,
    pub rank: usize,
    pub layout: Option<Type>,
}

pub struct ScalarParam {
    pub name: Ident,
    pub ty: Type,
    pub scalar: Scalar,
    /// What an accumulator holds of `scalar` (`Plain` for scalar parameters).
    pub acc: AccKind,
}

/// The value type of a reduction's accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccKind {
    /// `&mut T`.
    Plain,
    /// `&mut ValLoc<T>` (MinLoc, MaxLoc).
    ValLoc,
    /// `&mut MinMaxScalar<T>` (MinMax).
    MinMax,
    /// `&mut MinMaxLocScalar<T>` (MinMaxLoc).
    MinMaxLoc,
    /// `&mut Option<usize>` (FirstLoc, LastLoc): an index or none.
    Index,
}

impl ScalarParam {
    /// The accumulator's CUDA C type.
    pub fn cuda_type(&self) -> String {
        let t = self.scalar.cuda_name();
        match self.acc {
            AccKind::Plain => t.to_owned(),
            AccKind::ValLoc => format!("hl_valloc<{t}>"),
            AccKind::MinMax => format!("hl_minmax<{t}>"),
            AccKind::MinMaxLoc => format!("hl_minmaxloc<{t}>"),
            AccKind::Index => "unsigned long long".to_owned(),
        }
    }
}

/// A unique token parameter: `tokens: &impl UniqueToken`.
pub struct TokenParam {
    pub name: Ident,
    pub ty: Type,
}

pub enum Param<'a> {
    Handle(&'a Handle),
    Scalar(&'a ScalarParam),
    Token(&'a TokenParam),
}

/// A handle, scalar or token parameter: its index in `handles`, `scalars` or `tokens`.
#[derive(Clone, Copy)]
enum Slot {
    Handle(usize),
    Scalar(usize),
    Token(usize),
}

pub struct KernelSignature {
    pub token: TokenKind,
    pub token_name: Ident,
    pub handles: Vec<Handle>,
    pub scalars: Vec<ScalarParam>,
    /// Unique tokens (`&impl UniqueToken`), captured like scalars.
    pub tokens: Vec<TokenParam>,
    pub accumulator: Option<ScalarParam>,
    /// A scan's `is_final: bool`, after the accumulator.
    pub scan_flag: Option<Ident>,
    /// Handle, scalar and token parameters in declaration order.
    order: Vec<Slot>,
    /// The layout parameters (`<L: ArrayLayout>`) the kernel is generic over: handles take any
    /// layout, and the CUDA C, which indexes with the views' strides, is the same for all.
    pub layouts: Vec<Ident>,
}

const SIGNATURE_HELP: &str = "a #[kernel] takes the iteration token (`Idx<'_>`, `MdIdx<'_, R>`, or \
     `&impl TeamMember` for a team kernel), \
     then bound view handles (`BoundReader<'_, T, R>`, `BoundLookup<'_, T, R>`, `BoundWriter<'_, T, R>`, \
     `BoundAtomic<'_, T, R>`), \
     then scalar captures and unique tokens (`tokens: &impl UniqueToken`), then for a reduction the accumulator `&mut T`, and for a scan the \
     accumulator and `is_final: bool`";

impl KernelSignature {
    pub fn parse(sig: &Signature) -> syn::Result<KernelSignature> {
        if let Some(asyncness) = &sig.asyncness {
            return Err(syn::Error::new(asyncness.span(), "a #[kernel] cannot be async"));
        }
        let layouts = layout_generics(&sig.generics)?;
        if let syn::ReturnType::Type(_, ty) = &sig.output {
            return Err(syn::Error::new_spanned(
                ty,
                "a #[kernel] returns nothing: it stores through writers or adds to its accumulator",
            ));
        }
        let mut inputs = sig.inputs.iter();
        let Some(first) = inputs.next() else {
            return Err(syn::Error::new(sig.span(), SIGNATURE_HELP));
        };
        let (token_name, token_ty) = typed_param(first)?;
        let token = token_kind(token_ty).ok_or_else(|| {
            syn::Error::new(
                token_ty.span(),
                format!("expected the iteration token: {SIGNATURE_HELP}"),
            )
        })?;
        let mut signature = KernelSignature {
            token,
            token_name,
            handles: Vec::new(),
            scalars: Vec::new(),
            tokens: Vec::new(),
            accumulator: None,
            scan_flag: None,
            order: Vec::new(),
            layouts,
        };
        for input in inputs {
            let (name, ty) = typed_param(input)?;
            if signature.accumulator.is_some() {
                if signature.scan_flag.is_none() && Scalar::from_type(ty) == Some(Scalar::Bool) {
                    if signature.token != TokenKind::Range {
                        return Err(syn::Error::new_spanned(
                            ty,
                            "scans run over a range: the token is `Idx<'_>`",
                        ));
                    }
                    if signature
                        .accumulator
                        .as_ref()
                        .is_some_and(|a| a.scalar == Scalar::Bool)
                    {
                        return Err(syn::Error::new_spanned(
                            ty,
                            "a scan sums numbers: its accumulator is `&mut T` with T a number type",
                        ));
                    }
                    signature.scan_flag = Some(name);
                    continue;
                }
                return Err(syn::Error::new(
                    input.span(),
                    "the accumulator `&mut T` comes last in a reduction, followed only by \
                     `is_final: bool` in a scan",
                ));
            }
            if let Some(handle) = handle(&name, ty)? {
                if !signature.scalars.is_empty() || !signature.tokens.is_empty() {
                    return Err(syn::Error::new_spanned(
                        ty,
                        format!("handles come before scalars and tokens: {SIGNATURE_HELP}"),
                    ));
                }
                signature.order.push(Slot::Handle(signature.handles.len()));
                signature.handles.push(handle);
            } else if is_unique_token(ty) {
                signature.order.push(Slot::Token(signature.tokens.len()));
                signature.tokens.push(TokenParam { name, ty: ty.clone() });
            } else if let Type::Reference(reference) = ty {
                if let Type::Tuple(_) = &*reference.elem {
                    return Err(syn::Error::new_spanned(
                        ty,
                        "a tuple accumulator (a tuple of reducers such as `(Sum::new(), Max::new())`) is not \
                         supported in a #[kernel]: reduce one value per launch, or write the kernel as a closure \
                         for the host backends",
                    ));
                }
                let wrapped = [
                    ("ValLoc", AccKind::ValLoc),
                    ("MinMaxScalar", AccKind::MinMax),
                    ("MinMaxLocScalar", AccKind::MinMaxLoc),
                    ("Option", AccKind::Index),
                ]
                .into_iter()
                .find_map(|(wrapper, acc)| wrapped_element(&reference.elem, wrapper).map(|s| (s, acc)));
                let (scalar, acc) = match (
                    &reference.mutability,
                    wrapped.or_else(|| Scalar::from_type(&reference.elem).map(|s| (s, AccKind::Plain))),
                ) {
                    // `&mut bool` accumulates `LAnd`, `LOr`, `BAnd<bool>` or `BOr<bool>`.
                    (Some(_), Some((scalar, acc)))
                        if (scalar != Scalar::Bool || acc == AccKind::Plain)
                            && (acc != AccKind::Index || scalar == Scalar::Usize) =>
                    {
                        (scalar, acc)
                    }
                    _ => {
                        return Err(syn::Error::new_spanned(
                            ty,
                            format!(
                                "a reference parameter is the reduction's accumulator: `&mut T`, `&mut ValLoc<T>`, \
                                 `&mut MinMaxScalar<T>` or `&mut MinMaxLocScalar<T>` with T one of i32, i64, u32, u64, \
                                 usize, isize, f32, f64 (and `&mut bool` for `LAnd`, `LOr`, `&mut Option<usize>` for \
                                 `FirstLoc`, `LastLoc`) ({SIGNATURE_HELP})"
                            ),
                        ));
                    }
                };
                if matches!(acc, AccKind::ValLoc | AccKind::MinMaxLoc | AccKind::Index)
                    && signature.token != TokenKind::Range
                {
                    return Err(syn::Error::new_spanned(
                        ty,
                        "accumulators with locations (`ValLoc`, `MinMaxLocScalar`, `Option<usize>`) reduce over a range: the token is `Idx<'_>`",
                    ));
                }
                signature.accumulator = Some(ScalarParam {
                    name,
                    ty: (*reference.elem).clone(),
                    scalar,
                    acc,
                });
            } else if let Some(scalar) = Scalar::from_type(ty) {
                signature.order.push(Slot::Scalar(signature.scalars.len()));
                signature.scalars.push(ScalarParam {
                    name,
                    ty: ty.clone(),
                    scalar,
                    acc: AccKind::Plain,
                });
            } else {
                return Err(syn::Error::new_spanned(
                    ty,
                    format!(
                        "unsupported parameter type in a #[kernel]: scalars are {SUPPORTED_SCALARS} \
                         (a `String` or other heap data cannot go to a device); {SIGNATURE_HELP}"
                    ),
                ));
            }
        }
        Ok(signature)
    }

    pub fn params_in_order(&self) -> Vec<Param<'_>> {
        self.order
            .iter()
            .map(|&slot| match slot {
                Slot::Handle(k) => Param::Handle(&self.handles[k]),
                Slot::Scalar(k) => Param::Scalar(&self.scalars[k]),
                Slot::Token(k) => Param::Token(&self.tokens[k]),
            })
            .collect()
    }

    /// The scalar and token parameters in declaration order, as names and written types:
    /// what `with(..)` takes.
    pub fn captures(&self) -> Vec<(&Ident, &Type)> {
        self.order
            .iter()
            .filter_map(|&slot| match slot {
                Slot::Handle(_) => None,
                Slot::Scalar(k) => Some((&self.scalars[k].name, &self.scalars[k].ty)),
                Slot::Token(k) => Some((&self.tokens[k].name, &self.tokens[k].ty)),
            })
            .collect()
    }
}

fn typed_param(arg: &FnArg) -> syn::Result<(Ident, &Type)> {
    match arg {
        FnArg::Receiver(r) => Err(syn::Error::new(
            r.span(),
            "a #[kernel] is a free function, not a method",
        )),
        FnArg::Typed(typed) => match &*typed.pat {
            Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                if ident.mutability.is_some() {
                    return Err(syn::Error::new(
                        ident.span(),
                        "#[kernel] parameters cannot be `mut`: copy into a `let mut` local",
                    ));
                }
                Ok((ident.ident.clone(), &typed.ty))
            }
            other => Err(syn::Error::new(
                other.span(),
                "#[kernel] parameters must be plain names (no patterns)",
            )),
        },
    }
}

/// `&impl UniqueToken` (any path ending in `UniqueToken`): a unique token parameter.
fn is_unique_token(ty: &Type) -> bool {
    let Type::Reference(r) = ty else {
        return false;
    };
    let Type::ImplTrait(bounds) = &*r.elem else {
        return false;
    };
    r.mutability.is_none()
        && bounds.bounds.iter().any(|b| {
            matches!(b, syn::TypeParamBound::Trait(t) if t.path.segments.last().is_some_and(|s| s.ident == "UniqueToken"))
        })
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

fn token_kind(ty: &Type) -> Option<TokenKind> {
    if let Type::Reference(r) = ty
        && r.mutability.is_none()
        && let Type::ImplTrait(bounds) = &*r.elem
    {
        let team = bounds.bounds.iter().any(|b| {
            matches!(b, syn::TypeParamBound::Trait(t) if t.path.segments.last().is_some_and(|s| s.ident == "TeamMember"))
        });
        return team.then_some(TokenKind::Team);
    }
    let seg = last_segment(ty)?;
    match seg.ident.to_string().as_str() {
        "Idx" => Some(TokenKind::Range),
        "MdIdx" => {
            let PathArguments::AngleBracketed(args) = &seg.arguments else {
                return None;
            };
            args.args.iter().find_map(|a| match a {
                GenericArgument::Const(e) => int_literal(e).map(TokenKind::MdRange),
                _ => None,
            })
        }
        _ => None,
    }
}

/// `T` of a `wrapper<T>` type: `ValLoc<T>` (the value of `MinLoc` and `MaxLoc`),
/// `MinMaxScalar<T>` (the value of `MinMax`), `MinMaxLocScalar<T>` (of `MinMaxLoc`).
fn wrapped_element(ty: &Type, wrapper: &str) -> Option<Scalar> {
    let seg = last_segment(ty)?;
    if seg.ident != wrapper {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    match args.args.first() {
        Some(GenericArgument::Type(t)) if args.args.len() == 1 => Scalar::from_type(t),
        _ => None,
    }
}

fn int_literal(e: &syn::Expr) -> Option<usize> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(e, None) => int_literal(e),
            _ => None,
        },
        _ => None,
    }
}

fn handle(name: &Ident, ty: &Type) -> syn::Result<Option<Handle>> {
    let Some(seg) = last_segment(ty) else {
        return Ok(None);
    };
    let kind = match seg.ident.to_string().as_str() {
        "BoundReader" => HandleKind::Reader,
        "BoundLookup" => HandleKind::Lookup,
        "BoundWriter" => HandleKind::Writer,
        "BoundAtomic" => HandleKind::Atomic,
        "BoundTeamSlots" => HandleKind::TeamSlots,
        _ => return Ok(None),
    };
    let usage = || {
        syn::Error::new_spanned(
            ty,
            format!(
                "write a handle as `{}<'_, T, R>` (optionally `, Layout`): T one of {SUPPORTED_SCALARS}, R a number",
                seg.ident
            ),
        )
    };
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return Err(usage());
    };
    let mut types = Vec::new();
    let mut rank = None;
    for arg in &args.args {
        match arg {
            GenericArgument::Lifetime(_) => {}
            GenericArgument::Type(t) => types.push(t.clone()),
            GenericArgument::Const(e) => rank = int_literal(e),
            _ => return Err(usage()),
        }
    }
    let Some(element) = types.first().and_then(Scalar::from_type) else {
        return Err(usage());
    };
    // Team slots are rank 2 by type: `BoundTeamSlots<'_, T>` (optionally `, Layout`).
    let rank = match (kind, rank) {
        (HandleKind::TeamSlots, None) => 2,
        (HandleKind::TeamSlots, Some(_)) => {
            return Err(syn::Error::new_spanned(
                ty,
                "write team slots as `BoundTeamSlots<'_, T>` (optionally `, Layout`): they are rank 2",
            ));
        }
        (_, Some(rank)) => rank,
        (_, None) => return Err(usage()),
    };
    if rank == 0 {
        return Err(syn::Error::new_spanned(ty, "a handle has rank 1 or more"));
    }
    if types.len() > 2 {
        return Err(syn::Error::new_spanned(
            ty,
            "a kernel's handle names no memory space: write `Bound*<'_, T, R>`, optionally `, Layout`; the same kernel takes handles of host and device views",
        ));
    }
    if kind == HandleKind::Atomic && element == Scalar::Bool {
        return Err(syn::Error::new_spanned(
            ty,
            "atomic handles hold numbers, not bool",
        ));
    }
    Ok(Some(Handle {
        name: name.clone(),
        kind,
        element,
        rank,
        layout: types.get(1).cloned(),
    }))
}

/// The kernel's generic parameters, which may only be layouts (`<L: ArrayLayout>`, as many as
/// its handles need): element types and ranks go into the CUDA C, layouts do not (it indexes
/// with the views' strides).
fn layout_generics(generics: &syn::Generics) -> syn::Result<Vec<Ident>> {
    let refuse = |spanned: &dyn quote::ToTokens| {
        syn::Error::new_spanned(
            spanned,
            "a #[kernel] is generic only over layouts (`fn k<L: ArrayLayout>(.., y: BoundWriter<'_, f64, 1, L>)`): \
             the CUDA C needs concrete element types and ranks",
        )
    };
    if let Some(clause) = &generics.where_clause {
        return Err(refuse(clause));
    }
    generics
        .params
        .iter()
        .map(|param| match param {
            syn::GenericParam::Type(t)
                if t.default.is_none()
                    && t.bounds.len() == 1
                    && matches!(&t.bounds[0], syn::TypeParamBound::Trait(b)
                        if b.path.segments.last().is_some_and(|s| s.ident == "ArrayLayout")) =>
            {
                Ok(t.ident.clone())
            }
            other => Err(refuse(other)),
        })
        .collect()
}
