//! The device ABI: the `extern "C" __global__` entry, its parameters, and the walk of the
//! iteration space that calls the body.

use std::fmt::Write as _;

use crate::signature::{HandleKind, KernelSignature, TokenKind};

pub(super) fn entry_name(sig: &KernelSignature, fn_name: &str) -> String {
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
pub(super) fn entry_source(sig: &KernelSignature, fn_name: &str, entry: &str, uses_scratch: bool) -> String {
    let rank = sig.token.rank();
    let mut params = Vec::new();
    if sig.token == TokenKind::Team {
        params.push("unsigned long long hl_league_size".to_owned());
        // The policy's scratch requests: per team at levels 0 and 1, per thread at 0 and 1.
        for part in ["team0", "team1", "thread0", "thread1"] {
            params.push(format!("unsigned long long hl_scratch_{part}"));
        }
        params.push("unsigned long long hl_vector_length".to_owned());
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
                // The parameter's qualifier says the kernel's intent to a driver and its tools
                // (and NVRTC's read-only data path): read handles point to const, atomic ones to
                // volatile (memory other threads update at once), writers to plain memory.
                let qualifier = match h.kind {
                    HandleKind::Reader | HandleKind::Lookup => "const ",
                    HandleKind::Atomic => "volatile ",
                    HandleKind::Writer | HandleKind::TeamSlots => "",
                };
                params.push(format!("{qualifier}{t}* p_{}", h.name));
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
                    "    hl_view<{t}, {}> v_{} = {{({t}*)p_{}, {{{}}}, {{{}}}}};",
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
                // The lock words, one bit per id, updated atomically (so volatile, as atomic
                // handles), and the number of ids.
                params.push(format!("volatile unsigned int* p_{}", t.name));
                params.push(format!("unsigned long long p_{}_size", t.name));
                let _ = writeln!(
                    setup,
                    "    const hl_tokens v_{0} = {{(unsigned int*)p_{0}, p_{0}_size}};",
                    t.name
                );
                args.push(format!("v_{}", t.name));
            }
        }
    }
    // The launched thread's number, x fastest, and the number of launched threads.
    const THREAD: &str = "(((unsigned long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) \
         * ((unsigned long long)blockDim.x * blockDim.y * blockDim.z) \
         + ((unsigned long long)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x";
    const THREADS: &str =
        "(unsigned long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z";
    // A reduction walks its space as `hl_walk` says (`hoplite_abi::ReduceWalk`).
    let reduce = sig.accumulator.is_some() && sig.scan_flag.is_none();
    if let Some(acc) = &sig.accumulator {
        let t = acc.cuda_type();
        if reduce {
            params.push("int hl_walk".to_owned());
            params.push("int hl_join".to_owned());
        }
        params.push(format!("{t} hl_init"));
        params.push(format!("{t}* hl_partials"));
        args.push("&hl_acc".to_owned());
        if sig.scan_flag.is_some() {
            params.push("bool hl_final".to_owned());
            args.push("hl_final".to_owned());
            let _ = writeln!(setup, "    const unsigned long long hl_me = {THREAD};");
            // The final pass starts each thread from the sum of the chunks before its own: the
            // launch turns the first pass's chunk sums into exclusive prefixes in place.
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
            src.push_str("    hl_t.league_size = hl_league_size;\n");
            src.push_str("    hl_t.vector_length = hl_vector_length;\n");
            if reduce {
                // Blocks are the threads of the league's walk: a block takes every
                // `gridDim.x`-th team, or one contiguous run of teams.
                src.push_str(
                    "    unsigned long long hl_lo, hl_hi, hl_step;\n\
                     \x20   hl_share(hl_walk, hl_league_size, blockIdx.x, gridDim.x, &hl_lo, &hl_hi, &hl_step);\n\
                     \x20   for (unsigned long long hl_l = hl_lo; hl_l < hl_hi; hl_l += hl_step) {\n",
                );
            } else {
                src.push_str(
                    "    for (unsigned long long hl_l = blockIdx.x; hl_l < hl_league_size; hl_l += gridDim.x) {\n",
                );
            }
            src.push_str("        hl_t.league = hl_l;\n");
            if uses_scratch {
                // The next team of this block reuses the scratch: the last reads come first.
                let _ = writeln!(src, "        {call}\n        __syncthreads();\n    }}");
            } else {
                let _ = writeln!(src, "        {call}\n    }}");
            }
        }
        TokenKind::Range if reduce => {
            let _ = writeln!(
                src,
                "    unsigned long long hl_lo, hl_hi, hl_step;\n\
                 \x20   hl_share(hl_walk, hl_e0 - hl_b0, {THREAD}, {THREADS}, &hl_lo, &hl_hi, &hl_step);\n\
                 \x20   for (unsigned long long hl_t = hl_b0 + hl_lo; hl_t < hl_b0 + hl_hi; hl_t += hl_step) {{"
            );
            let _ = writeln!(src, "        {call}\n    }}");
        }
        TokenKind::Range => {
            let _ = writeln!(src, "    {} {{", grid_loop("hl_t", 0, "x"));
            let _ = writeln!(src, "        {call}\n    }}");
        }
        TokenKind::MdRange(rank) if rank <= 3 => {
            let mut pad = "";
            if reduce {
                // The blocked walk: the box flattened in its index order, a block per thread.
                src.push_str("    if (hl_walk == 1) {\n");
                flat_mdrange_loop(
                    &mut src,
                    rank,
                    &call,
                    "        ",
                    &format!("hl_share(hl_walk, hl_n, {THREAD}, {THREADS}, &hl_lo, &hl_hi, &hl_step);"),
                );
                src.push_str("    } else {\n");
                pad = "    ";
            }
            // Dimension d walks axis `rank - 1 - d` (x for the last) in order 0, axis d (x for
            // the first) in order 1; the launch shapes the grid to match.
            let letters = ["x", "y", "z"];
            for d in 0..rank {
                let (row, col) = (letters[rank - 1 - d], letters[d]);
                let _ = writeln!(
                    src,
                    "{pad}    const unsigned long long hl_s{d} = hl_b{d} + (hl_order ? \
                     (unsigned long long)blockIdx.{col} * blockDim.{col} + threadIdx.{col} : \
                     (unsigned long long)blockIdx.{row} * blockDim.{row} + threadIdx.{row});\n\
                     {pad}    const unsigned long long hl_k{d} = hl_order ? \
                     (unsigned long long)gridDim.{col} * blockDim.{col} : \
                     (unsigned long long)gridDim.{row} * blockDim.{row};"
                );
            }
            let mut close = String::new();
            for d in 0..rank {
                let _ = writeln!(
                    src,
                    "{pad}    {}for (unsigned long long hl_a{d} = hl_s{d}; hl_a{d} < hl_e{d}; hl_a{d} += hl_k{d}) {{",
                    "    ".repeat(d),
                );
                close.insert_str(0, &format!("{pad}    {}}}\n", "    ".repeat(d)));
            }
            let coords: Vec<String> = (0..rank).map(|d| format!("hl_a{d}")).collect();
            let inner = format!("{pad}{}", "    ".repeat(rank + 1));
            let _ = writeln!(src, "{inner}hl_idx<{rank}> hl_t = {{{{{}}}}};", coords.join(", "));
            let _ = writeln!(src, "{inner}{call}");
            src.push_str(&close);
            if reduce {
                src.push_str("    }\n");
            }
        }
        TokenKind::MdRange(rank) if reduce => {
            // Higher ranks: one flat loop, strided or blocked.
            flat_mdrange_loop(
                &mut src,
                rank,
                &call,
                "    ",
                &format!("hl_share(hl_walk, hl_n, {THREAD}, {THREADS}, &hl_lo, &hl_hi, &hl_step);"),
            );
        }
        TokenKind::MdRange(rank) => {
            // Higher ranks: one flat grid-stride loop, the last index fastest.
            flat_mdrange_loop(
                &mut src,
                rank,
                &call,
                "    ",
                "hl_lo = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; hl_hi = hl_n; \
                 hl_step = (unsigned long long)gridDim.x * blockDim.x;",
            );
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

/// One flat loop over the box `hl_b..hl_e` of `rank` dimensions, indented by `pad`: `hl_n`
/// points, this thread's `hl_lo..hl_hi` by `hl_step` as `share` (C statements) sets them,
/// each flat number decoded into `hl_t` with the last index fastest (`hl_order` 0) or the
/// first (1), then `call`.
fn flat_mdrange_loop(src: &mut String, rank: usize, call: &str, pad: &str, share: &str) {
    let _ = writeln!(src, "{pad}unsigned long long hl_n = 1;");
    for d in 0..rank {
        let _ = writeln!(src, "{pad}hl_n *= hl_e{d} > hl_b{d} ? hl_e{d} - hl_b{d} : 0;");
    }
    let _ = writeln!(
        src,
        "{pad}unsigned long long hl_lo, hl_hi, hl_step;\n{pad}{share}"
    );
    let _ = writeln!(
        src,
        "{pad}for (unsigned long long hl_l = hl_lo; hl_l < hl_hi; hl_l += hl_step) {{"
    );
    let _ = writeln!(
        src,
        "{pad}    hl_idx<{rank}> hl_t;\n{pad}    unsigned long long hl_r = hl_l;"
    );
    // Order 0: the last index fastest; order 1: the first.
    let _ = writeln!(src, "{pad}    if (hl_order) {{");
    for d in 0..rank {
        let _ = writeln!(
            src,
            "{pad}        hl_t.v[{d}] = hl_b{d} + hl_r % (hl_e{d} - hl_b{d}); hl_r /= (hl_e{d} - hl_b{d});"
        );
    }
    let _ = writeln!(src, "{pad}    }} else {{");
    for d in (0..rank).rev() {
        let _ = writeln!(
            src,
            "{pad}        hl_t.v[{d}] = hl_b{d} + hl_r % (hl_e{d} - hl_b{d}); hl_r /= (hl_e{d} - hl_b{d});"
        );
    }
    let _ = writeln!(src, "{pad}    }}\n{pad}    {call}\n{pad}}}");
}
