//! The translation of a kernel body to CUDA C.
//!
//! A small type checker walks the body and emits C++ with Rust's semantics: integers wrap,
//! division by zero traps, shifts mask, float -> int casts saturate. Unsuffixed literals take
//! the type their use gives them, as in Rust; a `let` of a literal whose type only a later use
//! decides gets a type slot, so the body is walked twice: once to learn the slots, once to
//! emit. Anything outside the subset is an error at its span that says what is supported.

use std::collections::HashMap;
use std::fmt::Write as _;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Block, Expr, ItemFn, Lit, Pat, Stmt, UnOp};

use crate::signature::{AccKind, HandleKind, KernelSignature, SUPPORTED_SCALARS, Scalar, TokenKind};

const PRELUDE: &str = include_str!("prelude.cuh");
/// The unique token helpers, added to the source of kernels that take a token.
const TOKEN_PRELUDE: &str = include_str!("token.cuh");

pub struct Translated {
    pub entry: String,
    pub source: String,
    /// Whether a `MinMaxLocScalar` accumulator is updated by `update_first_last`
    /// (`MinMaxFirstLastLoc`) rather than `update` (`MinMaxLoc`).
    pub first_last: bool,
}

const SUPPORTED_EXPRESSIONS: &str = "numbers and bools, arithmetic, comparisons, `as` casts, \
     `let`, `if`/`else`, `for` over ranges, `while`, `loop`, `break`, `continue`, `return`, \
     handle methods (`get`, `set`, `neighbor`, `fetch_add`, `fetch_min`, `fetch_max`) and the \
     float functions (`sqrt`, `exp`, `ln`, `sin`, `cos`, `abs`, `min`, `max`, `powi`, `powf`, `mul_add`)";

const SCRATCH_USAGE: &str = "scratch in a #[kernel] is allocated once per `let`: \
     `let s = m.team_scratch(level).alloc::<T>(len).unwrap();` (or `m.thread_scratch(level)`, or \
     `.expect(\"..\")`) with the level 0 or 1 and T one of i32, i64, u32, u64, usize, f32, f64; \
     then `s.get(k)`, `s.set(k, v)`, `s.len()`";

fn unsupported(span: Span, what: &str) -> syn::Error {
    syn::Error::new(
        span,
        format!("{what} is not supported in a #[kernel]; a kernel body may use {SUPPORTED_EXPRESSIONS}"),
    )
}

/// The type of a value in the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
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

/// The nested ranges a #[kernel] translates.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NestedLevel {
    /// `TeamThreadRange`: split over the team's threads.
    TeamThread,
    /// `ThreadVectorRange`: a loop on the calling thread.
    ThreadVector,
}

/// `TeamVectorRange::new(m, bounds).parallel_for(|j| ..)` and friends, taken apart.
struct NestedCall<'e> {
    level: NestedLevel,
    member: &'e Expr,
    bounds: &'e Expr,
    method: String,
    call: &'e syn::ExprMethodCall,
}

fn nested_call(m: &syn::ExprMethodCall) -> Option<NestedCall<'_>> {
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

const TEAM_ROW_USAGE: &str = "a team's row in a #[kernel] is `let row = w.team_row(m.league_token());` \
     for a rank-2 writer `w`; then `row.set(j, v)` and `row.get(j)` with the index `j` of a team-level \
     loop, `row.len()`, `row.row()`";

const TOKEN_USAGE: &str = "a unique token in a #[kernel] gives ids by `let id = tokens.acquire();` \
     followed in the same block by `tokens.release(id);`, by `let id = tokens.guard();` (released at \
     the end of its block; use `*id`), or in a team kernel by `let id = tokens.team_guard(m);` (one id \
     for the whole team); `tokens.size()` is the number of ids";

const NESTED_USAGE: &str = "nested loops in a #[kernel] are `TeamThreadRange::new(m, n)`, \
     `TeamVectorRange::new(m, n)` or `ThreadVectorRange::new(m, n)` (`n` a count or `a..b`) with \
     `.parallel_for(|j| ..)` as a statement, `let s = ...parallel_reduce(|j, acc: &mut T| .., Sum::new());` or \
     `let total = ...parallel_scan(|j, partial: &mut T, is_final| ..);`; the closure uses its index as `*j`";

#[derive(Clone)]
struct Var {
    c_name: String,
    ty: Ty,
}

struct Translator<'a> {
    sig: &'a KernelSignature,
    fn_name: String,
    scopes: Vec<HashMap<String, Var>>,
    /// The resolved type of every slot, kept across both walks.
    slots: Vec<Option<Scalar>>,
    next_slot: usize,
    next_name: usize,
    loop_depth: usize,
    out: String,
    indent: usize,
    /// Whether the body allocates team scratch (the entry then separates teams by a barrier).
    uses_scratch: bool,
    /// Whether the statements are a nested loop's closure body (`return` is refused there).
    in_closure: bool,
    /// How the body updates a `MinMaxLocScalar` accumulator: `Some(true)` by
    /// `update_first_last`, `Some(false)` by `update`, `None` not yet.
    first_last: Option<bool>,
    /// Ids bound by `let id = tokens.acquire();`, by their C name: the token's index and
    /// the C name of the guard object that holds the id.
    acquired: HashMap<String, (usize, String)>,
}

pub fn translate(sig: &KernelSignature, function: &ItemFn) -> syn::Result<Translated> {
    if let (Some(acc), Some(flag)) = (&sig.accumulator, &sig.scan_flag)
        && acc.acc != AccKind::Plain
    {
        return Err(syn::Error::new(
            flag.span(),
            "a #[kernel] scan sums numbers: its accumulator is `&mut T`",
        ));
    }
    let fn_name = function.sig.ident.to_string();
    let mut tx = Translator {
        sig,
        fn_name: fn_name.clone(),
        scopes: Vec::new(),
        slots: Vec::new(),
        next_slot: 0,
        next_name: 0,
        loop_depth: 0,
        out: String::new(),
        indent: 1,
        uses_scratch: false,
        in_closure: false,
        first_last: None,
        acquired: HashMap::new(),
    };
    // Walk once to learn the slots' types, then emit with them.
    tx.body(&function.block)?;
    tx.next_slot = 0;
    tx.next_name = 0;
    tx.out.clear();
    tx.body(&function.block)?;
    let body = std::mem::take(&mut tx.out);

    let mut src = String::new();
    let _ = writeln!(
        src,
        "// Generated by #[kernel] from the Rust function `{fn_name}`."
    );
    src.push_str(PRELUDE);
    if !sig.tokens.is_empty() {
        src.push_str(TOKEN_PRELUDE);
    }
    let _ = writeln!(src);
    // The body as a device function: early `return` is a return from it.
    let mut params = vec![match sig.token {
        TokenKind::Range => format!("unsigned long long v_{}", sig.token_name),
        TokenKind::MdRange(rank) => format!("hl_idx<{rank}> v_{}", sig.token_name),
        TokenKind::Team => format!("hl_member v_{}", sig.token_name),
    }];
    for p in sig.params_in_order() {
        match p {
            crate::signature::Param::Handle(h) => params.push(format!(
                "hl_view<{}, {}> v_{}",
                h.element.cuda_name(),
                h.rank,
                h.name
            )),
            crate::signature::Param::Scalar(s) => {
                params.push(format!("{} v_{}", s.scalar.cuda_name(), s.name))
            }
            crate::signature::Param::Token(t) => params.push(format!("hl_tokens v_{}", t.name)),
        }
    }
    if let Some(acc) = &sig.accumulator {
        params.push(format!("{}* v_{}", acc.cuda_type(), acc.name));
    }
    if let Some(flag) = &sig.scan_flag {
        params.push(format!("bool v_{flag}"));
    }
    let _ = writeln!(src, "HL_DEV void {fn_name}_body({}) {{", params.join(", "));
    if tx.uses_scratch {
        // Every thread of the team makes the same allocations, so gets the same slices.
        src.push_str("    unsigned long long hl_scratch_used[4] = {0, 0, 0, 0};\n");
    }
    src.push_str(&body);
    src.push_str("}\n\n");
    let entry = entry_name(sig, &fn_name);
    src.push_str(&entry_source(sig, &fn_name, &entry, tx.uses_scratch));
    Ok(Translated {
        entry,
        source: src,
        first_last: tx.first_last == Some(true),
    })
}

fn entry_name(sig: &KernelSignature, fn_name: &str) -> String {
    let pattern = match (&sig.accumulator, &sig.scan_flag) {
        (_, Some(_)) => "scan",
        (Some(_), None) => "reduce",
        (None, None) => "for",
    };
    let policy = match sig.token {
        TokenKind::Range => "range".to_owned(),
        TokenKind::MdRange(rank) => format!("mdrange{rank}"),
        TokenKind::Team => "team".to_owned(),
    };
    format!("{fn_name}_{pattern}_{policy}")
}

/// The `extern "C" __global__` entry: unpacks the parameters and walks the iteration space.
fn entry_source(sig: &KernelSignature, fn_name: &str, entry: &str, uses_scratch: bool) -> String {
    let rank = sig.token.rank();
    let mut params = Vec::new();
    if sig.token == TokenKind::Team {
        params.push("unsigned long long hl_league_size".to_owned());
        // The policy's scratch requests: per team at levels 0 and 1, per thread at 0 and 1.
        for part in ["team0", "team1", "thread0", "thread1"] {
            params.push(format!("unsigned long long hl_scratch_{part}"));
        }
    } else {
        for d in 0..rank {
            params.push(format!("unsigned long long hl_b{d}"));
        }
        for d in 0..rank {
            params.push(format!("unsigned long long hl_e{d}"));
        }
        if matches!(sig.token, TokenKind::MdRange(_)) {
            // Which index the threads' x walks: 0 the last (row-major views), 1 the first
            // (column-major views), so that neighbouring threads touch neighbouring elements.
            params.push("int hl_order".to_owned());
        }
    }
    let mut setup = String::new();
    let mut args = vec!["hl_t".to_owned()];
    for p in sig.params_in_order() {
        match p {
            crate::signature::Param::Handle(h) => {
                let t = h.element.cuda_name();
                params.push(format!("{t}* p_{}", h.name));
                let ext: Vec<String> = (0..h.rank).map(|d| format!("p_{}_e{d}", h.name)).collect();
                let str_: Vec<String> = (0..h.rank).map(|d| format!("p_{}_s{d}", h.name)).collect();
                for e in &ext {
                    params.push(format!("unsigned long long {e}"));
                }
                for s in &str_ {
                    params.push(format!("unsigned long long {s}"));
                }
                let _ = writeln!(
                    setup,
                    "    hl_view<{t}, {}> v_{} = {{p_{}, {{{}}}, {{{}}}}};",
                    h.rank,
                    h.name,
                    h.name,
                    ext.join(", "),
                    str_.join(", ")
                );
                args.push(format!("v_{}", h.name));
            }
            crate::signature::Param::Scalar(s) => {
                params.push(format!("{} p_{}", s.scalar.cuda_name(), s.name));
                args.push(format!("p_{}", s.name));
            }
            crate::signature::Param::Token(t) => {
                // The lock words, one bit per id, and the number of ids.
                params.push(format!("unsigned int* p_{}", t.name));
                params.push(format!("unsigned long long p_{}_size", t.name));
                let _ = writeln!(
                    setup,
                    "    const hl_tokens v_{0} = {{p_{0}, p_{0}_size}};",
                    t.name
                );
                args.push(format!("v_{}", t.name));
            }
        }
    }
    // The launched thread's number, x fastest.
    const THREAD: &str = "(((unsigned long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) \
         * ((unsigned long long)blockDim.x * blockDim.y * blockDim.z) \
         + ((unsigned long long)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x";
    if let Some(acc) = &sig.accumulator {
        let t = acc.cuda_type();
        if sig.scan_flag.is_none() {
            params.push("int hl_join".to_owned());
        }
        params.push(format!("{t} hl_init"));
        params.push(format!("{t}* hl_partials"));
        args.push("&hl_acc".to_owned());
        if sig.scan_flag.is_some() {
            params.push("bool hl_final".to_owned());
            args.push("hl_final".to_owned());
            let _ = writeln!(setup, "    const unsigned long long hl_me = {THREAD};");
            let _ = writeln!(setup, "    {t} hl_acc = hl_final ? hl_partials[hl_me] : hl_init;");
        } else {
            let _ = writeln!(setup, "    {t} hl_acc = hl_init;");
        }
    }
    let call = format!("{fn_name}_body({});", args.join(", "));
    let mut src = format!(
        "extern \"C\" __global__ void {entry}({}) {{\n{setup}",
        params.join(", ")
    );
    let grid_loop = |var: &str, d: usize, axis: &str| {
        format!(
            "for (unsigned long long {var} = hl_b{d} + (unsigned long long)blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis}; \
             {var} < hl_e{d}; {var} += (unsigned long long)gridDim.{axis} * blockDim.{axis})"
        )
    };
    match sig.token {
        TokenKind::Range if sig.scan_flag.is_some() => {
            // A scan: one contiguous chunk per thread, in thread order.
            for line in [
                "const unsigned long long hl_threads = (unsigned long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;",
                "const unsigned long long hl_len = hl_e0 - hl_b0;",
                "const unsigned long long hl_chunk = hl_len / hl_threads + (hl_len % hl_threads != 0 ? 1 : 0);",
                "const unsigned long long hl_off = hl_me * hl_chunk < hl_len ? hl_me * hl_chunk : hl_len;",
                "const unsigned long long hl_lo = hl_b0 + hl_off;",
                "const unsigned long long hl_hi = hl_lo + hl_chunk < hl_e0 ? hl_lo + hl_chunk : hl_e0;",
            ] {
                let _ = writeln!(src, "    {line}");
            }
            let _ = writeln!(
                src,
                "    for (unsigned long long hl_t = hl_lo; hl_t < hl_hi; ++hl_t) {{"
            );
            let _ = writeln!(src, "        {call}\n    }}");
            src.push_str("    if (!hl_final) hl_partials[hl_me] = hl_acc;\n");
        }
        TokenKind::Team => {
            // Every thread of a block runs the same leagues, so barriers line up.
            src.push_str("    hl_member hl_t;\n");
            if uses_scratch {
                // A kernel without scratch never reads the pads: no layout, no check to keep.
                src.push_str(
                    "    hl_scratch_layout(&hl_t, hl_scratch_team0, hl_scratch_team1, hl_scratch_thread0, hl_scratch_thread1);\n",
                );
            }
            src.push_str(
                "    hl_t.league_size = hl_league_size;\n\
                 \x20   for (unsigned long long hl_l = blockIdx.x; hl_l < hl_league_size; hl_l += gridDim.x) {\n\
                 \x20       hl_t.league = hl_l;\n",
            );
            if uses_scratch {
                // The next team of this block reuses the scratch: the last reads come first.
                let _ = writeln!(src, "        {call}\n        __syncthreads();\n    }}");
            } else {
                let _ = writeln!(src, "        {call}\n    }}");
            }
        }
        TokenKind::Range => {
            let _ = writeln!(src, "    {} {{", grid_loop("hl_t", 0, "x"));
            let _ = writeln!(src, "        {call}\n    }}");
        }
        TokenKind::MdRange(rank) if rank <= 3 => {
            // Dimension d walks axis `rank - 1 - d` (x for the last) in order 0, axis d (x for
            // the first) in order 1; the launch shapes the grid to match.
            let letters = ["x", "y", "z"];
            for d in 0..rank {
                let (row, col) = (letters[rank - 1 - d], letters[d]);
                let _ = writeln!(
                    src,
                    "    const unsigned long long hl_s{d} = hl_b{d} + (hl_order ? \
                     (unsigned long long)blockIdx.{col} * blockDim.{col} + threadIdx.{col} : \
                     (unsigned long long)blockIdx.{row} * blockDim.{row} + threadIdx.{row});\n\
                     \x20   const unsigned long long hl_k{d} = hl_order ? \
                     (unsigned long long)gridDim.{col} * blockDim.{col} : \
                     (unsigned long long)gridDim.{row} * blockDim.{row};"
                );
            }
            let mut close = String::new();
            for d in 0..rank {
                let _ = writeln!(
                    src,
                    "    {}for (unsigned long long hl_a{d} = hl_s{d}; hl_a{d} < hl_e{d}; hl_a{d} += hl_k{d}) {{",
                    "    ".repeat(d),
                );
                close.insert_str(0, &format!("    {}}}\n", "    ".repeat(d)));
            }
            let coords: Vec<String> = (0..rank).map(|d| format!("hl_a{d}")).collect();
            let pad = "    ".repeat(rank + 1);
            let _ = writeln!(src, "{pad}hl_idx<{rank}> hl_t = {{{{{}}}}};", coords.join(", "));
            let _ = writeln!(src, "{pad}{call}");
            src.push_str(&close);
        }
        TokenKind::MdRange(rank) => {
            // Higher ranks: one flat grid-stride loop, the last index fastest.
            let _ = writeln!(src, "    unsigned long long hl_n = 1;");
            for d in 0..rank {
                let _ = writeln!(src, "    hl_n *= hl_e{d} > hl_b{d} ? hl_e{d} - hl_b{d} : 0;");
            }
            let _ = writeln!(
                src,
                "    for (unsigned long long hl_l = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; hl_l < hl_n; \
                 hl_l += (unsigned long long)gridDim.x * blockDim.x) {{"
            );
            let _ = writeln!(
                src,
                "        hl_idx<{rank}> hl_t;\n        unsigned long long hl_r = hl_l;"
            );
            // Order 0: the last index fastest; order 1: the first.
            src.push_str("        if (hl_order) {\n");
            for d in 0..rank {
                let _ = writeln!(
                    src,
                    "            hl_t.v[{d}] = hl_b{d} + hl_r % (hl_e{d} - hl_b{d}); hl_r /= (hl_e{d} - hl_b{d});"
                );
            }
            src.push_str("        } else {\n");
            for d in (0..rank).rev() {
                let _ = writeln!(
                    src,
                    "            hl_t.v[{d}] = hl_b{d} + hl_r % (hl_e{d} - hl_b{d}); hl_r /= (hl_e{d} - hl_b{d});"
                );
            }
            src.push_str("        }\n");
            let _ = writeln!(src, "        {call}\n    }}");
        }
    }
    if sig.accumulator.is_some() && sig.scan_flag.is_none() {
        let _ = writeln!(
            src,
            "    hl_store_partial(hl_acc, hl_join, hl_partials, {THREAD});"
        );
    }
    src.push_str("}\n");
    src
}

fn float_fn(method: &str, ty: Scalar) -> Option<&'static str> {
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

fn float_arity(method: &str) -> usize {
    match method {
        "min" | "max" | "powf" | "powi" => 1,
        "mul_add" => 2,
        _ => 0,
    }
}

impl Translator<'_> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn body(&mut self, block: &Block) -> syn::Result<()> {
        // Parameters keep their names with a `v_` prefix (no clash with C keywords or helpers).
        let sig = self.sig;
        let mut params: Vec<(&syn::Ident, Ty)> = vec![(
            &sig.token_name,
            match sig.token {
                TokenKind::Range => Ty::Token,
                TokenKind::MdRange(rank) => Ty::MdToken(rank),
                TokenKind::Team => Ty::Member,
            },
        )];
        params.extend(
            sig.handles
                .iter()
                .enumerate()
                .map(|(k, h)| (&h.name, Ty::Handle(k))),
        );
        params.extend(sig.scalars.iter().map(|s| (&s.name, Ty::Known(s.scalar))));
        params.extend(
            sig.tokens
                .iter()
                .enumerate()
                .map(|(k, t)| (&t.name, Ty::Tokens(k))),
        );
        params.extend(sig.accumulator.iter().map(|a| {
            (
                &a.name,
                match a.acc {
                    AccKind::Plain => Ty::Acc(a.scalar),
                    AccKind::ValLoc => Ty::AccLoc(a.scalar),
                    AccKind::MinMax => Ty::AccMinMax(a.scalar),
                    AccKind::MinMaxLoc => Ty::AccMinMaxLoc(a.scalar),
                },
            )
        }));
        params.extend(sig.scan_flag.iter().map(|f| (f, Ty::Known(Scalar::Bool))));
        let scope = params
            .into_iter()
            .map(|(name, ty)| {
                (
                    name.to_string(),
                    Var {
                        c_name: format!("v_{name}"),
                        ty,
                    },
                )
            })
            .collect();
        self.scopes = vec![scope];
        self.loop_depth = 0;
        self.stmts(&block.stmts)
    }

    fn stmts(&mut self, stmts: &[Stmt]) -> syn::Result<()> {
        for (k, stmt) in stmts.iter().enumerate() {
            self.check_release_follows(stmt, &stmts[k + 1..])?;
            self.stmt(stmt)?;
        }
        Ok(())
    }

    /// `let id = tokens.acquire();` must be followed in its block by `tokens.release(id);`:
    /// the host backends keep an id that is never released, so a kernel that forgot one would
    /// drain the pool there. (The device releases it at the end of the block regardless, so
    /// early `return`, `break` and `continue` never leak an id there.)
    fn check_release_follows(&mut self, stmt: &Stmt, rest: &[Stmt]) -> syn::Result<()> {
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

    fn block(&mut self, block: &Block) -> syn::Result<()> {
        self.scopes.push(HashMap::new());
        self.indent += 1;
        let result = self.stmts(&block.stmts);
        self.indent -= 1;
        self.scopes.pop();
        result
    }

    fn lookup(&self, name: &str) -> Option<&Var> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn new_slot(&mut self) -> usize {
        let slot = self.next_slot;
        self.next_slot += 1;
        if self.slots.len() <= slot {
            self.slots.push(None);
        }
        slot
    }

    fn declare(&mut self, name: &syn::Ident, ty: Ty) -> String {
        self.next_name += 1;
        let c_name = format!("l_{}_{}", name, self.next_name);
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(
                name.to_string(),
                Var {
                    c_name: c_name.clone(),
                    ty,
                },
            );
        }
        c_name
    }

    /// A type with its slot resolved when it is known.
    fn norm(&self, ty: Ty) -> Ty {
        match ty {
            Ty::Int(Some(slot)) | Ty::Float(Some(slot)) => match self.slots.get(slot).copied().flatten() {
                Some(s) => Ty::Known(s),
                None => ty,
            },
            other => other,
        }
    }

    /// The scalar a value has once every use is seen: unresolved integers are `i32`, floats `f64`.
    fn finalize(&self, ty: Ty) -> Option<Scalar> {
        match self.norm(ty) {
            Ty::Known(s) => Some(s),
            Ty::Int(_) => Some(Scalar::I32),
            Ty::Float(_) => Some(Scalar::F64),
            _ => None,
        }
    }

    fn set_slot(&mut self, ty: Ty, to: Scalar) {
        if let Ty::Int(Some(slot)) | Ty::Float(Some(slot)) = ty
            && let Some(entry) = self.slots.get_mut(slot)
        {
            *entry = Some(to);
        }
    }

    /// The common type of two operands, resolving slots as Rust's inference would.
    fn unify(&mut self, a: Ty, b: Ty, span: Span) -> syn::Result<Ty> {
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
            (Ty::Known(x), other @ Ty::Int(_)) | (other @ Ty::Int(_), Ty::Known(x)) if x.is_int() => {
                self.set_slot(other, x);
                Ok(Ty::Known(x))
            }
            (Ty::Known(x), other @ Ty::Float(_)) | (other @ Ty::Float(_), Ty::Known(x)) if x.is_float() => {
                self.set_slot(other, x);
                Ok(Ty::Known(x))
            }
            (Ty::Int(s), Ty::Int(t)) => Ok(Ty::Int(s.or(t))),
            (Ty::Float(s), Ty::Float(t)) => Ok(Ty::Float(s.or(t))),
            _ => Err(mismatch()),
        }
    }

    fn expect(&mut self, ty: Ty, want: Scalar, span: Span) -> syn::Result<()> {
        self.unify(ty, Ty::Known(want), span).map(|_| ())
    }

    /// Checks that `expr` is a `usize` (an index, a length, a count).
    fn expect_usize(&mut self, expr: &Expr) -> syn::Result<()> {
        let t = self.infer(expr)?;
        self.expect(t, Scalar::Usize, expr.span())
    }

    fn scalar_of(&self, ty: Ty, span: Span) -> syn::Result<Scalar> {
        self.finalize(ty).ok_or_else(|| {
            syn::Error::new(
                span,
                "expected a number or bool here, not a handle, token or accumulator",
            )
        })
    }

    // ---- statements ----

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

    /// `let id = tokens.acquire();` or `let id = tokens.guard();`: a guard object that holds
    /// the id and releases it when its block ends, and the id as a `const` local.
    fn token_local(
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
    fn token_release(&mut self, m: &syn::ExprMethodCall, k: usize) -> syn::Result<()> {
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

    /// `Sum::new().join(&mut x, v)` (or `Max`, `Min`; `x` a local or the accumulator `acc`):
    /// the reducer's join, as the host's `Reducer::join` computes it.
    fn reducer_join(&mut self, m: &syn::ExprMethodCall) -> syn::Result<()> {
        const USAGE: &str = "a reducer's `join` in a #[kernel] is `Sum::new().join(&mut x, v)` (or `Prod`, `Max`, \
             `Min`, `BAnd`, `BOr`, `LAnd`, `LOr`) with `x` a `let mut` local, or `Sum::new().join(acc, v)` on a `&mut T` accumulator";
        let (kind, turbofish) = reducer_kind(&m.receiver, false)?;
        let args: Vec<&Expr> = m.args.iter().collect();
        arity(m, "join", &args, 2)?;
        let (dst, ty) = match args[0] {
            Expr::Reference(r) if r.mutability.is_some() => self.place(&r.expr)?,
            Expr::Path(p) => match single_name(&p.path).and_then(|n| self.lookup(&n).cloned()) {
                Some(Var {
                    c_name,
                    ty: Ty::Acc(s),
                }) => (format!("(*{c_name})"), Ty::Known(s)),
                _ => return Err(syn::Error::new(args[0].span(), USAGE)),
            },
            other => return Err(syn::Error::new(other.span(), USAGE)),
        };
        let value_ty = self.infer(args[1])?;
        let t = self.unify(ty, value_ty, m.span())?;
        if let Some(want) = turbofish {
            self.expect(t, want, m.receiver.span())?;
        }
        let s = self.scalar_of(t, m.span())?;
        kind.check(s, m.span())?;
        self.set_slot(t, s);
        let v = self.emit(args[1], s)?;
        let code = kind.join_stmt(s, &dst, &v, m.span())?;
        self.line(&code);
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

    fn expr_stmt(&mut self, expr: &Expr) -> syn::Result<()> {
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
                let op = compound_op(&b.op).unwrap_or(BinOp::Add(Default::default()));
                let rhs_ty = self.infer(&b.right)?;
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
                self.line("{");
                self.block(&b.block)?;
                self.line("}");
                Ok(())
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
        match &i.else_branch {
            None => self.line("}"),
            Some((_, e)) => {
                self.line("} else {");
                self.indent += 1;
                self.scopes.push(HashMap::new());
                let result = self.expr_stmt(e);
                self.scopes.pop();
                self.indent -= 1;
                result?;
                self.line("}");
            }
        }
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
        self.indent += 1;
        self.scopes.push(HashMap::new());
        let c_name = self.declare(name, Ty::LeagueIdx);
        self.line(&format!("const unsigned long long {c_name} = {member}.league;"));
        let result = self.stmts(&i.then_branch.stmts);
        self.scopes.pop();
        self.indent -= 1;
        result?;
        match &i.else_branch {
            None => self.line("}"),
            Some((_, e)) => {
                self.line("} else {");
                self.indent += 1;
                self.scopes.push(HashMap::new());
                let result = self.expr_stmt(e);
                self.scopes.pop();
                self.indent -= 1;
                result?;
                self.line("}");
            }
        }
        Ok(())
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
            Ty::Known(s) if s.is_int() => Ty::Known(s),
            Ty::Int(slot) => Ty::Int(slot),
            _ => return Err(syn::Error::new(range.span(), "`for` ranges are over integers")),
        };
        // Uses of the loop variable in the body may resolve the slot; the second walk has it.
        let s = self.scalar_of(t, range.span())?;
        let (a, b) = (self.emit(start, s)?, self.emit(end, s)?);
        let c = s.cuda_name();
        self.next_name += 1;
        let k = self.next_name;
        self.line("{");
        self.indent += 1;
        self.line(&format!("{c} hl_s{k} = {a}, hl_e{k} = {b};"));
        let inclusive = matches!(range.limits, syn::RangeLimits::Closed(_));
        if inclusive {
            // `a..=MAX` ends in Rust; step only while the last value has not been run.
            self.line(&format!(
                "for (bool hl_go{k} = hl_s{k} <= hl_e{k}; hl_go{k}; hl_go{k} = hl_s{k} != hl_e{k}, hl_s{k} = hl_go{k} ? hl_s{k} + 1 : hl_s{k}) {{"
            ));
        } else {
            self.line(&format!("for (; hl_s{k} < hl_e{k}; ++hl_s{k}) {{"));
        }
        self.indent += 1;
        self.scopes.push(HashMap::new());
        if let Some(ident) = ident {
            let c_name = self.declare(ident, t);
            self.line(&format!("const {c} {c_name} = hl_s{k};"));
        }
        self.loop_depth += 1;
        self.indent -= 1;
        let result = self.block(&f.body);
        self.loop_depth -= 1;
        self.scopes.pop();
        result?;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    /// An assignable place: a local or `*acc`.
    fn place(&mut self, expr: &Expr) -> syn::Result<(String, Ty)> {
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

    // ---- expressions: types ----

    fn infer(&mut self, expr: &Expr) -> syn::Result<Ty> {
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
                            && !self.finalize(r).is_some_and(Scalar::is_int)
                        {
                            return Err(syn::Error::new(b.right.span(), "a shift amount is an integer"));
                        }
                        match self.norm(l) {
                            Ty::Int(_) => Ok(l),
                            Ty::Known(s) if s.is_int() => Ok(l),
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

    fn unsupported_expr(&self, expr: &Expr) -> syn::Error {
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
    fn path_call(&self, c: &syn::ExprCall) -> syn::Result<(Scalar, String)> {
        let Expr::Path(p) = &*c.func else {
            return Err(unsupported(c.func.span(), "calling this"));
        };
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() == 1 && segs[0] == self.fn_name {
            return Err(recursion(c.span()));
        }
        if segs.len() == 2
            && let Some(s) = Scalar::from_name(&segs[0])
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
            "league_rank" | "league_size" | "team_rank" | "team_size" => {
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
        self.scopes.push(HashMap::new());
        self.indent += 1;
        let c_name = self.declare(index, Ty::NestedIdx);
        self.line(&format!("const unsigned long long {c_name} = {j};"));
        if let Some((name, s, ptr)) = acc {
            let c_name = self.declare(name, Ty::Acc(s));
            self.line(&format!("{}* {c_name} = {ptr};", s.cuda_name()));
        }
        if let Some((name, flag)) = is_final {
            let c_name = self.declare(name, Ty::Known(Scalar::Bool));
            self.line(&format!("const bool {c_name} = {flag};"));
        }
        let (depth, closure) = (self.loop_depth, self.in_closure);
        self.loop_depth = 0;
        self.in_closure = true;
        let result = match body {
            Expr::Block(b) if b.label.is_none() => self.stmts(&b.block.stmts),
            other => self.expr_stmt(other),
        };
        self.loop_depth = depth;
        self.in_closure = closure;
        self.indent -= 1;
        self.scopes.pop();
        result
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
    fn nested_for(&mut self, call: &NestedCall<'_>) -> syn::Result<()> {
        if call.call.args.len() != 1 {
            return Err(syn::Error::new_spanned(call.call, NESTED_USAGE));
        }
        let (params, body) = self.nested_closure(call, 1)?;
        let (lo, hi) = self.nested_bounds(call)?;
        self.next_name += 1;
        let k = self.next_name;
        self.line("{");
        self.indent += 1;
        let opened = self.open_nested_loops(call.level, false, &lo, &hi, k);
        self.nested_body(params[0].0, &format!("hl_j{k}"), None, None, body)?;
        self.close_nested_loops(opened);
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    /// `let v = TeamThreadRange::new(m, n).parallel_reduce(|j, acc: &mut T| .., Sum::new());`
    fn nested_reduce(
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
        self.line("{");
        self.indent += 1;
        let opened = self.open_nested_loops(call.level, true, &lo, &hi, k);
        self.nested_body(
            params[0].0,
            &format!("hl_j{k}"),
            Some((params[1].0, s, format!("&hl_p{k}"))),
            None,
            body,
        )?;
        self.close_nested_loops(opened);
        self.indent -= 1;
        self.line("}");
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
    fn nested_scan(
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
        self.line("{");
        self.indent += 1;
        self.line(&format!(
            "const unsigned long long hl_lo{k} = {lo}, hl_hi{k} = {hi};"
        ));
        // The host panics on a range with begin > end.
        self.line(&format!("if (hl_lo{k} > hl_hi{k}) hl_panic();"));
        // The closure, called by both passes.
        self.line(&format!(
            "auto hl_scan{k} = [&](unsigned long long hl_j{k}, {c}* hl_acc{k}, bool hl_fin{k}) {{"
        ));
        self.nested_body(
            params[0].0,
            &format!("hl_j{k}"),
            Some((params[1].0, s, format!("hl_acc{k}"))),
            Some((params[2].0, format!("hl_fin{k}"))),
            body,
        )?;
        self.line("};");
        let one_pass = format!(
            "for (unsigned long long hl_j{k} = hl_lo{k}; hl_j{k} < hl_hi{k}; ++hl_j{k}) hl_scan{k}(hl_j{k}, &hl_total{k}, true);"
        );
        match call.level {
            NestedLevel::ThreadVector => self.line(&one_pass),
            NestedLevel::TeamThread => {
                self.line("if (blockDim.x == 1) {");
                self.indent += 1;
                self.line(&one_pass);
                self.indent -= 1;
                self.line("} else {");
                self.indent += 1;
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
                    self.line(&line);
                }
                self.indent -= 1;
                self.line("}");
            }
        }
        self.indent -= 1;
        self.line("}");
        if let Some(ident) = ident {
            let c_name = self.declare(ident, Ty::Known(s));
            self.line(&format!("{c} {c_name} = hl_total{k};"));
        }
        Ok(())
    }

    /// `m.team_scratch(level).alloc::<T>(len).unwrap()` (or `m.thread_scratch(level)`, or
    /// `.expect("..")`): the element type, the pad (team level 0, team level 1, thread level
    /// 0, thread level 1: the order of `hl_member::pad`) and the length, or `None` when `expr`
    /// is no scratch allocation at all.
    fn scratch_alloc<'e>(&mut self, expr: &'e Expr) -> syn::Result<Option<(Scalar, usize, &'e Expr)>> {
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
    fn team_row_of(&mut self, expr: &Expr) -> syn::Result<Option<usize>> {
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

    fn team_row_method_type(
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

    fn scratch_method_type(
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
        if s.is_int() {
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

    fn infer_quiet(&mut self, arg: &Expr) -> syn::Result<Ty> {
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

    // ---- expressions: code ----

    /// The code of a unit-typed expression (a `set`).
    fn emit_unit(&mut self, expr: &Expr) -> syn::Result<String> {
        match expr {
            Expr::MethodCall(m) => self.emit_method(m, Scalar::Bool),
            Expr::Paren(p) => self.emit_unit(&p.expr),
            other => Err(self.unsupported_expr(other)),
        }
    }

    /// The code of `expr`, whose type is `s`.
    fn emit(&mut self, expr: &Expr, s: Scalar) -> syn::Result<String> {
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

    fn emit_token(&mut self, expr: &Expr) -> syn::Result<String> {
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
                    "team_rank" => Ok("((unsigned long long)threadIdx.x)".to_owned()),
                    "team_size" => Ok("((unsigned long long)blockDim.x)".to_owned()),
                    "team_barrier" => Ok("__syncthreads()".to_owned()),
                    "team_broadcast" => {
                        let v = self.emit(args[0], s)?;
                        let src = self.emit(args[1], Scalar::Usize)?;
                        Ok(format!("hl_team_broadcast<{}>({v}, {src})", s.cuda_name()))
                    }
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

/// The reducers of `team_reduce`, nested reductions and `join` statements in a #[kernel].
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReducerKind {
    Sum,
    Prod,
    Max,
    Min,
    BAnd,
    BOr,
    LAnd,
    LOr,
}

/// The reducers a #[kernel] joins with, as the compile errors name them.
const REDUCERS: &str = "`Sum`, `Prod`, `Max`, `Min`, `BAnd`, `BOr`, `LAnd` and `LOr`";

impl ReducerKind {
    /// The reducer's `init()` for `s`, as C.
    fn identity(self, s: Scalar) -> String {
        let c = s.cuda_name();
        match (self, s.is_float()) {
            (ReducerKind::Sum, _) => format!("(({c})0)"),
            (ReducerKind::Prod, _) => format!("(({c})1)"),
            (ReducerKind::Max, true) => format!("(({c})(-1.0 / 0.0))"),
            (ReducerKind::Min, true) => format!("(({c})(1.0 / 0.0))"),
            (ReducerKind::Max, false) => format!("(({c}){})", s.cuda_bounds().0),
            (ReducerKind::Min, false) => format!("(({c}){})", s.cuda_bounds().1),
            // `BitIdentity`: all bits set (`true` for `bool`), no bits set (`false`).
            (ReducerKind::BAnd, _) if s == Scalar::Bool => "true".to_owned(),
            (ReducerKind::BAnd, _) => format!("(({c})~0ull)"),
            (ReducerKind::BOr, _) if s == Scalar::Bool => "false".to_owned(),
            (ReducerKind::BOr, _) => format!("(({c})0)"),
            (ReducerKind::LAnd, _) => "true".to_owned(),
            (ReducerKind::LOr, _) => "false".to_owned(),
        }
    }

    /// The reducer's name in Rust.
    fn name(self) -> &'static str {
        match self {
            ReducerKind::Sum => "Sum",
            ReducerKind::Prod => "Prod",
            ReducerKind::Max => "Max",
            ReducerKind::Min => "Min",
            ReducerKind::BAnd => "BAnd",
            ReducerKind::BOr => "BOr",
            ReducerKind::LAnd => "LAnd",
            ReducerKind::LOr => "LOr",
        }
    }

    /// Checks that the reducer reduces values of `s`, as the host's trait bounds do: numbers
    /// for `Sum`, `Prod`, `Max` and `Min`, integers or `bool` for `BAnd` and `BOr`, `bool`
    /// for `LAnd` and `LOr`.
    fn check(self, s: Scalar, span: Span) -> syn::Result<()> {
        let ok = match self {
            ReducerKind::Sum | ReducerKind::Prod | ReducerKind::Max | ReducerKind::Min => s != Scalar::Bool,
            ReducerKind::BAnd | ReducerKind::BOr => !s.is_float(),
            ReducerKind::LAnd | ReducerKind::LOr => s == Scalar::Bool,
        };
        if ok {
            return Ok(());
        }
        let what = match self {
            ReducerKind::Sum | ReducerKind::Prod | ReducerKind::Max | ReducerKind::Min => "numbers",
            ReducerKind::BAnd | ReducerKind::BOr => "integers or `bool`",
            ReducerKind::LAnd | ReducerKind::LOr => "`bool`",
        };
        Err(syn::Error::new(
            span,
            format!("`{}` reduces {what}, not `{}`", self.name(), s.rust_name()),
        ))
    }

    /// The prelude's team join of a value of C type `c` (in rank order, from rank 0's value).
    fn team_fn(self, c: &str) -> String {
        let op = match self {
            ReducerKind::Sum => return format!("hl_team_sum<{c}>"),
            ReducerKind::Max => return format!("hl_team_max<{c}>"),
            ReducerKind::Min => return format!("hl_team_min<{c}>"),
            ReducerKind::Prod => 3,
            ReducerKind::BAnd => 4,
            ReducerKind::BOr => 5,
            ReducerKind::LAnd => 6,
            ReducerKind::LOr => 7,
        };
        format!("hl_team_join<{c}, {op}>")
    }

    /// The reducer's `join(&mut dst, v)` as a C statement, `dst` and `v` of type `s`.
    fn join_stmt(self, s: Scalar, dst: &str, v: &str, span: Span) -> syn::Result<String> {
        Ok(match self {
            ReducerKind::Sum => format!(
                "{dst} = {};",
                arith(&BinOp::Add(Default::default()), s, dst, v, span)?
            ),
            ReducerKind::Prod => format!(
                "{dst} = {};",
                arith(&BinOp::Mul(Default::default()), s, dst, v, span)?
            ),
            ReducerKind::Max => format!("hl_keep_max(&{dst}, {v});"),
            ReducerKind::Min => format!("hl_keep_min(&{dst}, {v});"),
            ReducerKind::BAnd => format!(
                "{dst} = {};",
                arith(&BinOp::BitAnd(Default::default()), s, dst, v, span)?
            ),
            ReducerKind::BOr => format!(
                "{dst} = {};",
                arith(&BinOp::BitOr(Default::default()), s, dst, v, span)?
            ),
            ReducerKind::LAnd => format!("{dst} = {dst} && {v};"),
            ReducerKind::LOr => format!("{dst} = {dst} || {v};"),
        })
    }
}

/// A reducer written as `Sum::new()`, `Max::<f64>::new()`, `LAnd::default()` (behind `&` when
/// `by_ref`): its kind and the type a turbofish names.
fn reducer_kind(arg: &Expr, by_ref: bool) -> syn::Result<(ReducerKind, Option<Scalar>)> {
    let call = match (arg, by_ref) {
        (Expr::Reference(r), true) => &*r.expr,
        (other, false) => other,
        _ => arg,
    };
    let mut named = None;
    let found = match call {
        Expr::Call(c) if c.args.is_empty() && (!by_ref || matches!(arg, Expr::Reference(_))) => {
            match &*c.func {
                Expr::Path(p) if !p.path.segments.is_empty() => {
                    let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
                    // `LAnd::new()`, `Sum::<f64>::new()`; a bare `Sum()` has no constructor.
                    let (ty_seg, ctor) = match segs.as_slice() {
                        [.., ty_seg, ctor] => (*ty_seg, *ctor),
                        _ => return Err(unknown_reducer(arg, by_ref, None)),
                    };
                    named = Some(ty_seg.ident.to_string());
                    let kind = match ty_seg.ident.to_string().as_str() {
                        "Sum" => Some(ReducerKind::Sum),
                        "Prod" => Some(ReducerKind::Prod),
                        "Max" => Some(ReducerKind::Max),
                        "Min" => Some(ReducerKind::Min),
                        "BAnd" => Some(ReducerKind::BAnd),
                        "BOr" => Some(ReducerKind::BOr),
                        "LAnd" => Some(ReducerKind::LAnd),
                        "LOr" => Some(ReducerKind::LOr),
                        _ => None,
                    };
                    let turbofish = match &ty_seg.arguments {
                        syn::PathArguments::AngleBracketed(a) => {
                            match a.args.iter().collect::<Vec<_>>().as_slice() {
                                [syn::GenericArgument::Type(t)] => Scalar::from_type(t),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    kind.filter(|_| matches!(ctor.ident.to_string().as_str(), "new" | "default"))
                        .map(|k| (k, turbofish))
                }
                _ => None,
            }
        }
        Expr::Call(c) => {
            if let Expr::Path(p) = &*c.func {
                let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
                if let [.., ty_seg, _] = segs.as_slice() {
                    named = Some(ty_seg.ident.to_string());
                }
            }
            None
        }
        Expr::Tuple(_) => {
            return Err(syn::Error::new_spanned(
                arg,
                format!(
                    "a tuple of reducers is not supported in a #[kernel]: reduce with one of {REDUCERS} at a time \
                     (one `team_reduce` or nested `parallel_reduce` per value), or write the kernel as a closure \
                     for the host backends"
                ),
            ));
        }
        _ => None,
    };
    found.ok_or_else(|| unknown_reducer(arg, by_ref, named.as_deref()))
}

/// The error for a reducer a #[kernel] cannot join with.
fn unknown_reducer(arg: &Expr, by_ref: bool, named: Option<&str>) -> syn::Error {
    let example = if by_ref {
        "`m.team_reduce(&Sum::new(), value)`"
    } else {
        "`..parallel_reduce(|j, acc: &mut f64| .., Sum::new())`"
    };
    let which = match named {
        Some(
            name @ ("MinLoc" | "MaxLoc" | "MinMax" | "MinMaxLoc" | "MinMaxFirstLastLoc" | "FirstLoc"
            | "LastLoc"),
        ) => {
            format!("`{name}` is not supported in a #[kernel]'s team or nested reductions; ")
        }
        Some("Custom") => "a `Custom` reducer's closures cannot run on a device; ".to_owned(),
        _ => String::new(),
    };
    syn::Error::new_spanned(
        arg,
        format!("{which}reductions in a #[kernel] support the {REDUCERS} reducers: {example}"),
    )
}

/// Checks that `method` got `n` arguments.
fn arity(m: &syn::ExprMethodCall, method: &str, args: &[&Expr], n: usize) -> syn::Result<()> {
    if args.len() == n {
        Ok(())
    } else {
        Err(syn::Error::new_spanned(
            m,
            format!("`{method}` takes {n} argument(s)"),
        ))
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
fn token_call(expr: &Expr) -> Option<(&Expr, &'static str)> {
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

fn describe(ty: Ty) -> &'static str {
    match ty {
        Ty::Unit => "`()`",
        Ty::Token => "the iteration token",
        Ty::MdToken(_) => "the MDRange token",
        Ty::Tokens(_) => "a unique token",
        Ty::Guard => "a token guard",
        _ => "this value",
    }
}

fn recursion(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        "recursion is not supported in a #[kernel]: a device kernel cannot call itself; write it as a loop",
    )
}

fn unknown_name(span: Span, name: &str) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "`{name}` is not a parameter or local of this #[kernel]: a device kernel sees only its parameters \
             and locals, no globals or statics; pass the value as a scalar parameter"
        ),
    )
}

fn single_name(path: &syn::Path) -> Option<String> {
    if path.leading_colon.is_none() && path.segments.len() == 1 && path.segments[0].arguments.is_none() {
        Some(path.segments[0].ident.to_string())
    } else {
        None
    }
}

fn path_name(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// `f64::MAX`, `i32::MIN`, `f32::NAN`, ...: the type and the CUDA C value.
fn type_const(path: &syn::Path) -> Option<(Scalar, String)> {
    if path.segments.len() != 2 {
        return None;
    }
    let s = Scalar::from_name(&path.segments[0].ident.to_string())?;
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
        (s, "MIN") if s.is_int() => format!("(({c}){})", s.cuda_bounds().0),
        (s, "MAX") if s.is_int() => format!("(({c}){})", s.cuda_bounds().1),
        _ => return None,
    };
    Some((s, code))
}

fn lit_type(lit: &Lit) -> syn::Result<Ty> {
    match lit {
        Lit::Int(i) => match i.suffix() {
            "" => Ok(Ty::Int(None)),
            suffix => Scalar::from_name(suffix).map(Ty::Known).ok_or_else(|| {
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

fn lit_code(lit: &Lit, s: Scalar) -> syn::Result<String> {
    match lit {
        Lit::Int(i) => {
            if s.is_float() {
                return Err(syn::Error::new(
                    i.span(),
                    "an integer literal where a float is expected",
                ));
            }
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

fn int_lit(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse().ok(),
        _ => None,
    }
}

fn compound_op(op: &BinOp) -> Option<BinOp> {
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

/// A binary arithmetic or bit operation on two values of type `s`, with Rust's semantics.
fn arith(op: &BinOp, s: Scalar, l: &str, r: &str, span: Span) -> syn::Result<String> {
    let c = s.cuda_name();
    Ok(match op {
        BinOp::Add(_) if s.is_int() => format!("hl_add<{c}>({l}, {r})"),
        BinOp::Sub(_) if s.is_int() => format!("hl_sub<{c}>({l}, {r})"),
        BinOp::Mul(_) if s.is_int() => format!("hl_mul<{c}>({l}, {r})"),
        BinOp::Div(_) if s.is_int() => format!("hl_div<{c}>({l}, {r})"),
        BinOp::Rem(_) if s.is_int() => format!("hl_rem<{c}>({l}, {r})"),
        BinOp::Add(_) => format!("({l} + {r})"),
        BinOp::Sub(_) => format!("({l} - {r})"),
        BinOp::Mul(_) => format!("({l} * {r})"),
        BinOp::Div(_) => format!("({l} / {r})"),
        BinOp::Rem(_) => format!("hl_rem({l}, {r})"),
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
    if from.is_float() && to.is_int() {
        let (lo, hi) = to.cuda_bounds();
        return Ok(format!("hl_f2i<{c}, {}>({inner}, {lo}, {hi})", from.cuda_name()));
    }
    Ok(format!("(({c})({inner}))"))
}

/// The two value branches of `if c { a } else { b }` used as a value.
fn value_branches(i: &syn::ExprIf) -> syn::Result<(&Expr, &Expr)> {
    fn only(b: &Block) -> Option<&Expr> {
        match b.stmts.as_slice() {
            [Stmt::Expr(e, None)] => Some(e),
            _ => None,
        }
    }
    let help = || {
        syn::Error::new(
            i.span(),
            "an `if` used as a value in a #[kernel] has one expression per branch: `if c { a } else { b }`",
        )
    };
    let then = only(&i.then_branch).ok_or_else(help)?;
    let other = match &i.else_branch {
        Some((_, e)) => match &**e {
            Expr::Block(b) => only(&b.block).ok_or_else(help)?,
            Expr::If(_) => e,
            _ => return Err(help()),
        },
        None => return Err(help()),
    };
    Ok((then, other))
}

#[cfg(test)]
mod tests;
