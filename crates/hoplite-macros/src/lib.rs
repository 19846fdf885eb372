//! `#[kernel]`: one Rust function, two compilations.
//!
//! The attribute keeps the function as ordinary Rust for the host backends and translates its
//! body — a documented subset of Rust — to CUDA C, exposed through
//! `hoplite_core::device_kernel::DeviceKernel`. Use it through the facade, `hoplite::kernel`;
//! `docs/kernels.md` lists the subset and the mapping.
//!
//! The example on `hoplite::kernel` runs as a doctest of the facade (this crate cannot depend
//! on the crates its output names).

mod signature;
mod translate;

use hoplite_abi::stable_hash;
use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::{ItemFn, Path, Token};

use signature::{AccKind, Handle, HandleKind, KernelSignature, TokenKind};

/// Compiles a function to a native hoplite kernel and translates it to CUDA C.
///
/// The function's parameters are, in order: the iteration token (`Idx<'_>` for a range,
/// `MdIdx<'_, R>` for an MDRange, `&impl TeamMember` for teams), the bound view handles the launch hands over
/// (`BoundReader<'_, T, R>`, `BoundLookup<'_, T, R>`, `BoundWriter<'_, T, R>`,
/// `BoundAtomic<'_, T, R>`), plain scalar
/// captures (`f64`, `usize`, ...) and unique tokens (`tokens: &impl UniqueToken`, with
/// `let id = tokens.acquire();` .. `tokens.release(id);`, `let id = tokens.guard();` or, in a
/// team kernel, `let id = tokens.team_guard(m);`), and
/// for a reduction the accumulator `&mut T` (or
/// `&mut bool` for `LAnd`/`LOr`, `&mut ValLoc<T>`, `&mut MinMaxScalar<T>`,
/// `&mut MinMaxLocScalar<T>` updated by `update` or `update_first_last`, `&mut Option<usize>`
/// updated by `FirstLoc::update` or `LastLoc::update`) last; a scan adds `is_final: bool`
/// after it. The function may be generic over its handles' layouts (`<L: ArrayLayout>`) and
/// nothing else.
/// Team kernels may use `let v = m.team_single(|| ..);`, `let v = m.team_broadcast_with(..);`,
/// `m.vector_length()`, team and thread scratch of levels 0 and 1, `team_scan` and the nested loops
/// `TeamThreadRange`, `TeamVectorRange` and
/// `ThreadVectorRange` (`docs/kernels.md` lists the forms).
///
/// The function stays as written. Beside it the macro defines a type of the same name with
/// `with(captures...)` (scalars and tokens in declaration order), which gives the closure a launch takes
/// (`parallel_for("axpy", (n, (y.write(), x.read())), axpy::with(a))`), and `cuda_source()`,
/// the generated CUDA C; the type implements `DeviceKernel`. A team kernel's `with` names the
/// space: `with::<Space>(..)` (`with::<Space, _>(..)` with a layout parameter). Unique tokens
/// go to `with` by reference, of any `KernelToken` type: a host pool, or a device's token.
///
/// `#[kernel(crate = hoplite_core)]` names the crate the generated code refers to (default
/// `::hoplite`), for crates that depend on `hoplite-core` rather than the facade.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let options = match syn::parse::<Options>(attr) {
        Ok(options) => options,
        Err(e) => return e.to_compile_error().into(),
    };
    let function = match syn::parse::<ItemFn>(item) {
        Ok(function) => function,
        Err(e) => return e.to_compile_error().into(),
    };
    match expand(&options, function) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The attribute's arguments.
struct Options {
    krate: Path,
}

impl Parse for Options {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut krate: Path = syn::parse_quote!(::hoplite);
        while !input.is_empty() {
            let key: syn::Ident = if input.peek(Token![crate]) {
                let k: Token![crate] = input.parse()?;
                syn::Ident::new("crate", k.span)
            } else {
                input.parse()?
            };
            if key != "crate" {
                return Err(syn::Error::new(
                    key.span(),
                    "unknown #[kernel] option; the only option is `crate = path`",
                ));
            }
            input.parse::<Token![=]>()?;
            krate = input.parse()?;
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(Options { krate })
    }
}

fn expand(options: &Options, function: ItemFn) -> syn::Result<TokenStream2> {
    let krate = &options.krate;
    let signature = KernelSignature::parse(&function.sig)?;
    // The native function is emitted even when the translation fails, so that the error at the
    // construct is the only one and the function is still checked as Rust.
    let translated = match translate::translate(&signature, &function) {
        Ok(translated) => translated,
        Err(error) => {
            let native = native_function(krate, &signature, function);
            let error = error.to_compile_error();
            return Ok(quote!(#native #error));
        }
    };
    let name = &function.sig.ident.clone();
    let vis = &function.vis.clone();
    let name_str = name.to_string();
    let entry = translated.entry.clone();
    let source = translated.source;
    // Hashed here rather than at each launch: FNV-1a over a 16 KiB prelude costs about 20 µs.
    let source_hash = stable_hash(&[entry.as_bytes(), source.as_bytes()]);

    // The closure type the launch takes: `for<'it> Fn(item[, &mut acc])`.
    let token_ty = token_type(krate, signature.token);
    let handle_tys: Vec<TokenStream2> = signature.handles.iter().map(|h| bound_type(krate, h)).collect();
    let handle_names: Vec<&syn::Ident> = signature.handles.iter().map(|h| &h.name).collect();
    let token_name = &signature.token_name;
    let (item_ty, item_pat) = if signature.handles.is_empty() {
        (token_ty, quote!(#token_name))
    } else {
        (
            quote!((#token_ty, (#(#handle_tys,)*))),
            quote!((#token_name, (#(#handle_names,)*))),
        )
    };
    // Scalars and unique tokens, in declaration order: what `with` captures.
    let captures = signature.captures();
    let scalar_names: Vec<&syn::Ident> = captures.iter().map(|(name, _)| *name).collect();
    let scalar_tys: Vec<&syn::Type> = captures.iter().map(|(_, ty)| *ty).collect();
    // A team member's type depends on the space: `with::<Space>(..)` names it. Layout
    // parameters follow (inferred from the launch's handles).
    let layouts = &signature.layouts;
    let team = signature.token == TokenKind::Team;
    let space_param = if team {
        quote!(S: #krate::ExecutionSpace,)
    } else {
        quote!()
    };
    let space_arg = if team { quote!(S,) } else { quote!() };
    let with_generics = if team || !layouts.is_empty() {
        quote!(<#space_param #(#layouts: #krate::ArrayLayout),*>)
    } else {
        quote!()
    };
    // The closure's parameters after the item, its return type's bound and the native call's
    // trailing arguments, per pattern.
    let (extra_params, closure_ty, extra_args, doc_line) = match &signature.accumulator {
        None => (
            quote!(),
            quote!(for<'it> Fn(#item_ty)),
            quote!(),
            "The native kernel with these scalar captures, for a `parallel_for` launch.",
        ),
        Some(acc) => {
            let acc_ty = &acc.ty;
            let acc_name = &acc.name;
            match &signature.scan_flag {
                None => (
                    quote!(, #acc_name: &mut #acc_ty),
                    quote!(for<'it> Fn(#item_ty, &mut #acc_ty)),
                    quote!(#acc_name),
                    "The native kernel with these scalar captures, for a `parallel_reduce` launch.",
                ),
                Some(flag) => (
                    quote!(, #acc_name: &mut #acc_ty, #flag: bool),
                    quote!(for<'it> Fn(#item_ty, &mut #acc_ty, bool)),
                    quote!(#acc_name, #flag),
                    "The native kernel with these scalar captures, for a `parallel_scan` launch.",
                ),
            }
        }
    };
    let hr_generics = quote!(<#space_param #(#layouts: #krate::ArrayLayout,)* F: #closure_ty>);
    let hr_args = quote!(#space_arg #(#layouts,)*);
    let with_fn = if signature.tokens.is_empty() {
        // Device launches find the kernel and its scalars through the closure type (see
        // `hoplite_core::device_kernel`'s launch protocol): the closure captures one
        // `Captures` value as a whole and its type is registered with a reader of it.
        let register = if team || !layouts.is_empty() {
            // `with::<S>` makes one closure type per space (and per layout); a static here
            // would be shared by all of them, so each call registers (a lookup once its type
            // is known).
            quote! {
                // SAFETY: `kernel` captures `captures` (a `Captures`) whole and nothing else,
                // and runs this kernel with it.
                unsafe { #krate::device_kernel::register_with_closure(&kernel, &WITH) };
            }
        } else {
            quote! {
                static REGISTERED: ::std::sync::Once = ::std::sync::Once::new();
                REGISTERED.call_once(|| {
                    // SAFETY: `kernel` captures `captures` (a `Captures`) whole and nothing
                    // else, and runs this kernel with it.
                    unsafe { #krate::device_kernel::register_with_closure(&kernel, &WITH) };
                });
            }
        };
        quote! {
            #[doc = #doc_line]
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            #vis fn with #with_generics (#(#scalar_names: #scalar_tys),*)
                -> impl #closure_ty + Copy + Send + Sync
            {
                #[derive(Clone, Copy)]
                struct Captures {
                    #(#scalar_names: #scalar_tys,)*
                }
                /// Lists the scalars of the `Captures` at `p`, in declaration order.
                ///
                /// # Safety
                ///
                /// `p` holds a `Captures` (possibly unaligned).
                unsafe fn read_scalars(p: *const u8) -> ::std::vec::Vec<#krate::device_kernel::ScalarValue> {
                    // SAFETY: the caller's contract.
                    let _captures = unsafe { p.cast::<Captures>().read_unaligned() };
                    ::std::vec![#(#krate::device_kernel::ScalarValue::from(_captures.#scalar_names)),*]
                }
                static WITH: #krate::device_kernel::WithClosure = #krate::device_kernel::WithClosure {
                    kernel: #krate::device_kernel::DeviceKernelInfo::of::<#name>,
                    captures_size: ::std::mem::size_of::<Captures>(),
                    read_scalars,
                    read_tokens: #krate::device_kernel::no_tokens,
                };
                // Gives the closure its higher-ranked signature (a closure bound by `let` has
                // none of its own).
                #[inline(always)]
                fn higher_ranked #hr_generics (kernel: F) -> F {
                    kernel
                }
                let captures = Captures { #(#scalar_names),* };
                let kernel = higher_ranked::<#hr_args _>(move |#item_pat #extra_params| {
                    // A use of the whole place, so that the closure captures `captures` whole.
                    let whole: Captures = captures;
                    let Captures { #(#scalar_names),* } = whole;
                    #name(#token_name, #(#handle_names,)* #(#scalar_names,)* #extra_args)
                });
                #register
                kernel
            }
        }
    } else {
        // Unique tokens are captured by reference, of any `KernelToken` type: the captures
        // struct, its readers and so the registered entry are generic over the token types,
        // so each `with` call registers its closure type (a lookup once it is known). The
        // host compilation acquires from the token's host side; a device token has none,
        // which the launch on host threads reports (`device_token_on_host`).
        let token_generics: Vec<syn::Ident> = (0..signature.tokens.len())
            .map(|k| quote::format_ident!("HlToken{}", k))
            .collect();
        let token_names: Vec<&syn::Ident> = signature.tokens.iter().map(|t| &t.name).collect();
        let is_token: Vec<bool> = captures
            .iter()
            .map(|(name, _)| signature.tokens.iter().any(|t| &t.name == *name))
            .collect();
        let mut next_token = token_generics.iter();
        let field_tys: Vec<TokenStream2> = captures
            .iter()
            .zip(&is_token)
            .map(|((_, ty), &token)| match token {
                true => {
                    let generic = next_token.next();
                    quote!(&'tok #generic)
                }
                false => quote!(#ty),
            })
            .collect();
        let with_param_tys: Vec<TokenStream2> = captures
            .iter()
            .zip(&is_token)
            .map(|((_, ty), &token)| match token {
                true => quote!(&impl #krate::KernelToken),
                false => quote!(#ty),
            })
            .collect();
        let plain_scalars: Vec<&syn::Ident> = captures
            .iter()
            .zip(&is_token)
            .filter(|(_, token)| !**token)
            .map(|((name, _), _)| *name)
            .collect();
        let token_name_strs: Vec<String> = token_names.iter().map(|n| n.to_string()).collect();
        let space_generic = quote!(#space_param #(#layouts: #krate::ArrayLayout,)*);
        let space_arg = quote!(#space_arg #(#layouts,)*);
        let inferred = token_generics.iter().map(|_| quote!(_));
        quote! {
            #[doc = #doc_line]
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            #vis fn with #with_generics (#(#scalar_names: #with_param_tys),*)
                -> impl #closure_ty + Copy + Send + Sync
            {
                struct Captures<'tok, #(#token_generics: #krate::KernelToken),*> {
                    #(#scalar_names: #field_tys,)*
                }
                impl<'tok, #(#token_generics: #krate::KernelToken),*> Clone for Captures<'tok, #(#token_generics),*> {
                    fn clone(&self) -> Self {
                        *self
                    }
                }
                impl<'tok, #(#token_generics: #krate::KernelToken),*> Copy for Captures<'tok, #(#token_generics),*> {}
                /// Lists the scalars of the `Captures` at `p`, in declaration order.
                ///
                /// # Safety
                ///
                /// `p` holds a `Captures` (possibly unaligned).
                unsafe fn read_scalars<#(#token_generics: #krate::KernelToken),*>(p: *const u8) -> ::std::vec::Vec<#krate::device_kernel::ScalarValue> {
                    // SAFETY: the caller's contract.
                    let _captures = unsafe { p.cast::<Captures<'_, #(#token_generics),*>>().read_unaligned() };
                    ::std::vec![#(#krate::device_kernel::ScalarValue::from(_captures.#plain_scalars)),*]
                }
                /// Lists the unique tokens of the `Captures` at `p`, in declaration order.
                ///
                /// # Safety
                ///
                /// `p` holds a `Captures` (possibly unaligned) whose references are live.
                unsafe fn read_tokens<#(#token_generics: #krate::KernelToken),*>(p: *const u8) -> ::std::vec::Vec<#krate::device_kernel::DeviceTokenArg> {
                    // SAFETY: the caller's contract.
                    let captures = unsafe { p.cast::<Captures<'_, #(#token_generics),*>>().read_unaligned() };
                    ::std::vec![#(#krate::device_kernel::DeviceTokenArg {
                        type_name: ::std::any::type_name::<#token_generics>(),
                        token: #krate::KernelToken::device_token(captures.#token_names),
                    }),*]
                }
                fn entry<#(#token_generics: #krate::KernelToken),*>() -> #krate::device_kernel::WithClosure {
                    #krate::device_kernel::WithClosure {
                        kernel: #krate::device_kernel::DeviceKernelInfo::of::<#name>,
                        captures_size: ::std::mem::size_of::<Captures<'_, #(#token_generics),*>>(),
                        read_scalars: read_scalars::<#(#token_generics),*>,
                        read_tokens: read_tokens::<#(#token_generics),*>,
                    }
                }
                // Gives the closure its higher-ranked signature (a closure bound by `let` has
                // none of its own).
                #[inline(always)]
                fn higher_ranked #hr_generics (kernel: F) -> F {
                    kernel
                }
                #[inline(always)]
                fn build<'tok, #space_generic #(#token_generics: #krate::KernelToken),*>(
                    captures: Captures<'tok, #(#token_generics),*>,
                ) -> impl #closure_ty + Copy + Send + Sync {
                    let kernel = higher_ranked::<#hr_args _>(move |#item_pat #extra_params| {
                        // A use of the whole place, so that the closure captures `captures` whole.
                        let whole: Captures<'tok, #(#token_generics),*> = captures;
                        let Captures { #(#scalar_names),* } = whole;
                        #(
                            let #token_names = match #krate::KernelToken::host_token(#token_names) {
                                ::std::option::Option::Some(host) => host,
                                ::std::option::Option::None => #krate::device_token_on_host(#name_str, #token_name_strs),
                            };
                        )*
                        #name(#token_name, #(#handle_names,)* #(#scalar_names,)* #extra_args)
                    });
                    // SAFETY: `kernel` captures `captures` (a `Captures`) whole and nothing
                    // else, and runs this kernel with it.
                    unsafe { #krate::device_kernel::register_generic_with_closure(&kernel, entry::<#(#token_generics),*>) };
                    kernel
                }
                build::<#space_arg #(#inferred),*>(Captures { #(#scalar_names),* })
            }
        }
    };

    let iteration = match signature.token {
        TokenKind::Range => quote!(#krate::device_kernel::DeviceIteration::Range),
        TokenKind::MdRange(rank) => quote!(#krate::device_kernel::DeviceIteration::MdRange(#rank)),
        TokenKind::Team => quote!(#krate::device_kernel::DeviceIteration::Team),
    };
    let pattern = match &signature.accumulator {
        None => quote!(#krate::device_kernel::DevicePattern::For),
        Some(acc) => {
            let ty = scalar_type_tokens(krate, acc.scalar);
            if signature.scan_flag.is_some() {
                quote!(#krate::device_kernel::DevicePattern::Scan(#ty))
            } else {
                match acc.acc {
                    AccKind::Plain => quote!(#krate::device_kernel::DevicePattern::Reduce(#ty)),
                    AccKind::ValLoc => quote!(#krate::device_kernel::DevicePattern::ReduceValLoc(#ty)),
                    AccKind::MinMax => quote!(#krate::device_kernel::DevicePattern::ReduceMinMax(#ty)),
                    AccKind::MinMaxLoc if translated.first_last => {
                        quote!(#krate::device_kernel::DevicePattern::ReduceMinMaxFirstLastLoc(#ty))
                    }
                    AccKind::MinMaxLoc => quote!(#krate::device_kernel::DevicePattern::ReduceMinMaxLoc(#ty)),
                    AccKind::Index => quote!(#krate::device_kernel::DevicePattern::ReduceIndex),
                }
            }
        }
    };
    let params: Vec<TokenStream2> = signature
        .params_in_order()
        .into_iter()
        .map(|p| match p {
            signature::Param::Handle(h) => {
                let name = h.name.to_string();
                let access = match h.kind {
                    HandleKind::Reader | HandleKind::Lookup => quote!(Read),
                    HandleKind::Writer => quote!(Write),
                    HandleKind::Atomic => quote!(Atomic),
                    HandleKind::TeamSlots => quote!(TeamSlots),
                };
                let element = scalar_type_tokens(krate, h.element);
                let rank = h.rank;
                quote!(#krate::device_kernel::DeviceParam::Handle {
                    name: #name,
                    access: #krate::device_kernel::HandleAccess::#access,
                    element: #element,
                    rank: #rank,
                })
            }
            signature::Param::Scalar(s) => {
                let name = s.name.to_string();
                let ty = scalar_type_tokens(krate, s.scalar);
                quote!(#krate::device_kernel::DeviceParam::Scalar { name: #name, ty: #ty })
            }
            signature::Param::Token(t) => {
                let name = t.name.to_string();
                quote!(#krate::device_kernel::DeviceParam::TokenBits { name: #name })
            }
        })
        .collect();

    let doc = format!(
        "The `#[kernel]` `{name_str}`: `{name_str}::with(..)` is its native kernel for a launch, \
         `{name_str}::cuda_source()` its CUDA C (entry `{entry}`)."
    );
    let function = native_function(krate, &signature, function);
    Ok(quote! {
        #function

        #[doc = #doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {}

        #[allow(dead_code)]
        impl #name {
            #with_fn

            /// The CUDA C source of this kernel (a self-contained translation unit).
            #vis fn cuda_source() -> &'static str {
                <Self as #krate::device_kernel::DeviceKernel>::cuda_source()
            }
        }

        // SAFETY: the entry is generated from the function by `#[kernel]`, which emits
        // unchecked accesses only at the launch's tokens (in bounds by the launch's extent
        // check), stores to partials only at the thread's own slot, and checks every other
        // index against the extents passed in (trapping when outside). Unique tokens' lock
        // words are touched only by the prelude's acquire and release (atomics at words below
        // `ceil(size / 32)`), each acquired id is held by a guard object whose destructor
        // releases it, so every id is released before the thread exits.
        unsafe impl #krate::device_kernel::DeviceKernel for #name {
            const NAME: &'static str = #name_str;
            const ENTRY: &'static str = #entry;
            const ITERATION: #krate::device_kernel::DeviceIteration = #iteration;
            const PATTERN: #krate::device_kernel::DevicePattern = #pattern;

            fn params() -> &'static [#krate::device_kernel::DeviceParam] {
                &[#(#params),*]
            }

            fn cuda_source() -> &'static str {
                #source
            }

            fn source_hash() -> u64 {
                #source_hash
            }
        }
    })
}

/// The function as written, with `#[inline(always)]` and its token and handles sharing the
/// brand `'it`.
fn native_function(krate: &Path, signature: &KernelSignature, mut function: ItemFn) -> ItemFn {
    function.attrs.push(syn::parse_quote!(#[inline(always)]));
    // The brand `'it` is named even where one parameter alone uses it (a team kernel
    // without handles), which clippy would call needless.
    function
        .attrs
        .push(syn::parse_quote!(#[allow(clippy::too_many_arguments, clippy::needless_lifetimes)]));
    // The token and handles as full types sharing one brand `'it` (the layout defaults to
    // `LayoutRight`, as views do), so the function is the kernel a launch calls.
    function.sig.generics.params.insert(0, syn::parse_quote!('it));
    for (k, input) in function.sig.inputs.iter_mut().enumerate() {
        if let syn::FnArg::Typed(typed) = input
            && let syn::Pat::Ident(ident) = &*typed.pat
        {
            let handle = signature.handles.iter().find(|h| h.name == ident.ident);
            if k == 0
                && signature.token == TokenKind::Team
                && let syn::Type::Reference(r) = &mut *typed.ty
            {
                // The member's borrow is the launch's brand too: its league token selects a
                // writer's row (`team_row`), and its team loops' tokens index that row.
                r.lifetime = Some(syn::Lifetime::new("'it", r.and_token.span));
                continue;
            }
            if (k == 0 && signature.token != TokenKind::Team) || handle.is_some() {
                let mut missing = Vec::new();
                if handle.is_some_and(|h| h.layout.is_none()) {
                    missing.push(quote!(#krate::LayoutRight));
                }
                brand_type(&mut typed.ty, &missing);
            }
        }
    }
    function
}

/// Gives the token or handle type written in the signature the brand `'it`, and a handle
/// the default it leaves out (`LayoutRight`), keeping the path the user wrote (and so their
/// imports).
fn brand_type(ty: &mut syn::Type, missing: &[TokenStream2]) {
    let syn::Type::Path(path) = ty else {
        return;
    };
    let Some(last) = path.path.segments.last_mut() else {
        return;
    };
    if matches!(last.arguments, syn::PathArguments::None) {
        last.arguments = syn::PathArguments::AngleBracketed(syn::parse_quote!(<'it>));
    }
    if let syn::PathArguments::AngleBracketed(args) = &mut last.arguments {
        for arg in args.args.iter_mut() {
            if let syn::GenericArgument::Lifetime(lifetime) = arg {
                *lifetime = syn::Lifetime::new("'it", lifetime.span());
            }
        }
        if !args
            .args
            .iter()
            .any(|a| matches!(a, syn::GenericArgument::Lifetime(_)))
        {
            args.args.insert(0, syn::parse_quote!('it));
        }
        for arg in missing {
            args.args.push(syn::parse_quote!(#arg));
        }
    }
}

fn token_type(krate: &Path, token: TokenKind) -> TokenStream2 {
    match token {
        TokenKind::Range => quote!(#krate::Idx<'it>),
        TokenKind::MdRange(rank) => quote!(#krate::MdIdx<'it, #rank>),
        TokenKind::Team => quote!(&'it <S as #krate::ExecutionSpace>::TeamMember<'it>),
    }
}

fn bound_type(krate: &Path, handle: &Handle) -> TokenStream2 {
    let element = format_ident!("{}", handle.element.rust_name());
    let rank = handle.rank;
    let layout = match &handle.layout {
        Some(layout) => quote!(#layout),
        None => quote!(#krate::LayoutRight),
    };
    match handle.kind {
        HandleKind::Reader => quote!(#krate::BoundReader<'it, #element, #rank, #layout>),
        HandleKind::Lookup => quote!(#krate::BoundLookup<'it, #element, #rank, #layout>),
        HandleKind::Writer => quote!(#krate::BoundWriter<'it, #element, #rank, #layout>),
        HandleKind::TeamSlots => quote!(#krate::BoundTeamSlots<'it, #element, #layout>),
        HandleKind::Atomic => quote!(#krate::BoundAtomic<'it, #element, #rank, #layout>),
    }
}

fn scalar_type_tokens(krate: &Path, scalar: signature::Scalar) -> TokenStream2 {
    // The variant's name is its `Debug` form (`F64`).
    let variant = format_ident!("{scalar:?}");
    quote!(#krate::device_kernel::ScalarType::#variant)
}
