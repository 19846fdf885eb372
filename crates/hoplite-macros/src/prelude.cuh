// hoplite kernel prelude: Rust's semantics for the operations where C++ differs.
// Integers wrap (two's complement, as release Rust), shifts mask their amount, division by
// zero or MIN / -1 traps (Rust panics), float -> int casts saturate and map NaN to 0.
#define HL_DEV static __device__ __forceinline__
template <class T> struct hl_bits;
template <> struct hl_bits<int> { typedef unsigned int U; static const int N = 32; static __device__ int min() { return (int)0x80000000u; } };
template <> struct hl_bits<long long> { typedef unsigned long long U; static const int N = 64; static __device__ long long min() { return (long long)0x8000000000000000ull; } };
template <> struct hl_bits<unsigned int> { typedef unsigned int U; static const int N = 32; static __device__ unsigned int min() { return 0u; } };
template <> struct hl_bits<unsigned long long> { typedef unsigned long long U; static const int N = 64; static __device__ unsigned long long min() { return 0ull; } };
HL_DEV void hl_panic() { __trap(); }
template <class T> HL_DEV T hl_add(T a, T b) { typedef typename hl_bits<T>::U U; return (T)((U)a + (U)b); }
template <class T> HL_DEV T hl_sub(T a, T b) { typedef typename hl_bits<T>::U U; return (T)((U)a - (U)b); }
template <class T> HL_DEV T hl_mul(T a, T b) { typedef typename hl_bits<T>::U U; return (T)((U)a * (U)b); }
template <class T> HL_DEV T hl_neg(T a) { typedef typename hl_bits<T>::U U; return (T)((U)0 - (U)a); }
template <class T> HL_DEV T hl_div(T a, T b) {
    if (b == (T)0) hl_panic();
    if (hl_bits<T>::min() != (T)0 && a == hl_bits<T>::min() && b == (T)-1) hl_panic();
    return a / b;
}
template <class T> HL_DEV T hl_rem(T a, T b) {
    if (b == (T)0) hl_panic();
    if (hl_bits<T>::min() != (T)0 && a == hl_bits<T>::min() && b == (T)-1) hl_panic();
    return a % b;
}
template <class T, class S> HL_DEV T hl_shl(T a, S b) { typedef typename hl_bits<T>::U U; return (T)((U)a << ((unsigned)b & (hl_bits<T>::N - 1))); }
template <class T, class S> HL_DEV T hl_shr(T a, S b) { return (T)(a >> ((unsigned)b & (hl_bits<T>::N - 1))); }
template <class T> HL_DEV T hl_abs(T a) { return a < (T)0 ? hl_neg(a) : a; }
template <class T> HL_DEV T hl_min(T a, T b) { return b < a ? b : a; }
template <class T> HL_DEV T hl_max(T a, T b) { return a > b ? a : b; }
HL_DEV float hl_add(float a, float b) { return a + b; }
HL_DEV double hl_add(double a, double b) { return a + b; }
HL_DEV float hl_sub(float a, float b) { return a - b; }
HL_DEV double hl_sub(double a, double b) { return a - b; }
HL_DEV float hl_mul(float a, float b) { return a * b; }
HL_DEV double hl_mul(double a, double b) { return a * b; }
HL_DEV float hl_neg(float a) { return -a; }
HL_DEV double hl_neg(double a) { return -a; }
HL_DEV float hl_div(float a, float b) { return a / b; }
HL_DEV double hl_div(double a, double b) { return a / b; }
HL_DEV float hl_rem(float a, float b) { return fmodf(a, b); }
HL_DEV double hl_rem(double a, double b) { return fmod(a, b); }
// Saturating float -> integer `as`: NaN is 0, out-of-range values clamp.
template <class T, class F> HL_DEV T hl_f2i(F x, T lo, T hi) {
    if (x != x) return (T)0;
    if (x <= (F)lo) return lo;
    if (x >= (F)hi) return hi;
    return (T)x;
}
// Rust's powi: repeated squaring (compiler-rt's __powidf2), not pow().
template <class F> HL_DEV F hl_powi(F a, int b) {
    const bool recip = b < 0;
    F r = (F)1;
    for (;;) {
        if (b & 1) r *= a;
        b /= 2;
        if (b == 0) break;
        a *= a;
    }
    return recip ? (F)1 / r : r;
}
template <class T, int R> struct hl_view { T* ptr; unsigned long long ext[R]; unsigned long long str[R]; };
template <int R> struct hl_idx { unsigned long long v[R]; };
template <class T, int R> HL_DEV unsigned long long hl_offset(const hl_view<T, R>& h, const unsigned long long* at) {
    unsigned long long off = 0;
    for (int d = 0; d < R; ++d) off += at[d] * h.str[d];
    return off;
}
template <class T, int R> HL_DEV unsigned long long hl_checked(const hl_view<T, R>& h, const unsigned long long* at) {
    for (int d = 0; d < R; ++d) if (at[d] >= h.ext[d]) hl_panic();
    return hl_offset(h, at);
}
// Atomic min/max by compare-and-swap: CUDA has no 64-bit signed or float forms for every type.
template <class T> HL_DEV T hl_atomic_add(T* p, T v) { return atomicAdd(p, v); }
HL_DEV int hl_atomic_add(int* p, int v) { return atomicAdd(p, v); }
HL_DEV long long hl_atomic_add(long long* p, long long v) {
    return (long long)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
template <class T> HL_DEV T hl_atomic_min(T* p, T v) { return atomicMin(p, v); }
template <class T> HL_DEV T hl_atomic_max(T* p, T v) { return atomicMax(p, v); }
// `ValLoc<T>` of MinLoc/MaxLoc: `loc == ~0` is `None`. NaN ranks below every number; equal
// values go to the lower index (as `ValLoc::update_min`/`update_max` in Rust).
template <class T> struct hl_valloc { T val; unsigned long long loc; };
// `FirstLoc::update` and `LastLoc::update` of an `Option<usize>` (`~0` for none): the lowest
// and the highest index seen.
HL_DEV void hl_update_first_loc(unsigned long long* acc, unsigned long long i) {
    if (*acc == ~0ull || i < *acc) *acc = i;
}
HL_DEV void hl_update_last_loc(unsigned long long* acc, unsigned long long i) {
    if (*acc == ~0ull || i > *acc) *acc = i;
}
template <class T> HL_DEV void hl_update_loc(hl_valloc<T>* acc, T val, unsigned long long loc, bool min) {
    bool take;
    if (acc->loc == ~0ull) {
        take = true;
    } else {
        const bool un = val != val, uc = acc->val != acc->val;
        int rank;
        if (un && uc) rank = 0;
        else if (un) rank = 1;
        else if (uc) rank = -1;
        // NaN ranks worst in both directions: only the order of numbers turns for a maximum.
        else rank = (val < acc->val ? -1 : (val > acc->val ? 1 : 0)) * (min ? 1 : -1);
        take = rank < 0 || (rank == 0 && loc < acc->loc);
    }
    if (take) { acc->val = val; acc->loc = loc; }
}
// `MinMaxLocScalar<T>` of MinMaxLoc: the minimum's `ValLoc` then the maximum's, 32 bytes
// (`min_val` at byte 0, `min_loc` at 8, `max_val` at 16, `max_loc` at 24); `update` folds
// both sides as `MinMaxLocScalar::update` does, ties to the lowest index.
template <class T> struct hl_minmaxloc { hl_valloc<T> min; hl_valloc<T> max; };
template <class T> HL_DEV void hl_update_minmaxloc(hl_minmaxloc<T>* acc, T v, unsigned long long loc) {
    hl_update_loc(&acc->min, v, loc, true);
    hl_update_loc(&acc->max, v, loc, false);
}
// `MinMaxLocScalar::update_first_last` (MinMaxFirstLastLoc): the minimum as `update`, the
// maximum's ties to the highest index.
template <class T> HL_DEV void hl_update_minmaxloc_first_last(hl_minmaxloc<T>* acc, T v, unsigned long long loc) {
    hl_update_loc(&acc->min, v, loc, true);
    hl_valloc<T>* mx = &acc->max;
    bool take;
    if (mx->loc == ~0ull) {
        take = true;
    } else {
        const bool un = v != v, uc = mx->val != mx->val;
        int rank;
        if (un && uc) rank = 0;
        else if (un) rank = 1;
        else if (uc) rank = -1;
        else rank = v > mx->val ? -1 : (v < mx->val ? 1 : 0);
        take = rank < 0 || (rank == 0 && loc > mx->loc);
    }
    if (take) { mx->val = v; mx->loc = loc; }
}
// A team's row of a rank-2 writer: the host's `team_row` panics on a league rank past the
// first extent, and a row's `get`/`set` on a column past the second.
template <class T> HL_DEV unsigned long long hl_team_row(const hl_view<T, 2>& h, unsigned long long league) {
    if (league >= h.ext[0]) hl_panic();
    return league;
}
template <class T> HL_DEV unsigned long long hl_row_at(const hl_view<T, 2>& h, unsigned long long row, unsigned long long j) {
    if (j >= h.ext[1]) hl_panic();
    return row * h.str[0] + j * h.str[1];
}
// A thread's slot `[league rank, team rank]` of a team-slots handle, checked (the host's
// `BoundTeamSlots` panics outside the extents).
template <class T> HL_DEV unsigned long long hl_slot_at(const hl_view<T, 2>& h, unsigned long long league) {
    const unsigned long long at[2] = {league, threadIdx.x};
    return hl_checked(h, at);
}
// Teams: a block is a team. Collectives go through shared memory between barriers; the sum
// joins in rank order from rank 0's value, as the host backends' team_reduce does.
// The member carries its four scratch pads (team level 0, team level 1, this thread's level
// 0, this thread's level 1): where each starts in the block's dynamic shared memory, and its
// bytes.
struct hl_member {
    unsigned long long league, league_size, vector_length;
    unsigned char* pad[4];
    unsigned long long pad_bytes[4];
};
template <class T> HL_DEV T hl_team_broadcast(T v, unsigned long long src);
// `team_single`: rank 0 computes the value, every thread of the team gets it.
template <class T, class F> HL_DEV T hl_team_single(F f) {
    T v = T();
    if (threadIdx.x == 0) v = f();
    return hl_team_broadcast<T>(v, 0);
}
// `team_broadcast_with`: the source thread applies `f` to its value, every thread gets it.
template <class T, class F> HL_DEV T hl_team_broadcast_with(F f, T v, unsigned long long src) {
    if (threadIdx.x == src) f(&v);
    return hl_team_broadcast<T>(v, src);
}
template <class T> HL_DEV T hl_team_broadcast(T v, unsigned long long src) {
    __shared__ T hl_slot;
    __syncthreads();
    if (threadIdx.x == src) hl_slot = v;
    __syncthreads();
    T r = hl_slot;
    __syncthreads();
    return r;
}
// Max and Min keep the first of equal values, and a NaN never replaces a number (as the host's
// `Max`/`Min` reducers).
template <class T> HL_DEV void hl_keep_max(T* a, T b) { if (b > *a || (*a != *a && b == b)) *a = b; }
template <class T> HL_DEV void hl_keep_min(T* a, T b) { if (b < *a || (*a != *a && b == b)) *a = b; }
// The joins of the reducers a team reduces with, as the host's `Reducer::join`s:
// 0 Sum (wrapping integers), 1 Max, 2 Min, 3 Prod (wrapping integers), 4 BAnd, 5 BOr,
// 6 LAnd, 7 LOr. Only the called member is instantiated, so each works on its own types.
template <int OP> struct hl_op;
template <> struct hl_op<0> { template <class T> static __device__ __forceinline__ void join(T* a, T b) { *a = hl_add(*a, b); } };
template <> struct hl_op<1> { template <class T> static __device__ __forceinline__ void join(T* a, T b) { hl_keep_max(a, b); } };
template <> struct hl_op<2> { template <class T> static __device__ __forceinline__ void join(T* a, T b) { hl_keep_min(a, b); } };
template <> struct hl_op<3> { template <class T> static __device__ __forceinline__ void join(T* a, T b) { *a = hl_mul(*a, b); } };
template <> struct hl_op<4> { template <class T> static __device__ __forceinline__ void join(T* a, T b) { *a = (T)(*a & b); } };
template <> struct hl_op<5> { template <class T> static __device__ __forceinline__ void join(T* a, T b) { *a = (T)(*a | b); } };
template <> struct hl_op<6> { template <class T> static __device__ __forceinline__ void join(T* a, T b) { *a = *a && b; } };
template <> struct hl_op<7> { template <class T> static __device__ __forceinline__ void join(T* a, T b) { *a = *a || b; } };
// A launch's join chosen at run time (`DeviceJoin::code`), for the types whose host reducers
// have it: every join of integers, arithmetic and min/max of floats, bitwise, logical and
// min/max of `bool`. The host sends only codes that apply (`DeviceJoin::applies_to`).
template <class T> HL_DEV void hl_join_integer(int op, T* a, T b) {
    switch (op) {
    case 0: hl_op<0>::join(a, b); break;
    case 1: hl_op<1>::join(a, b); break;
    case 2: hl_op<2>::join(a, b); break;
    case 3: hl_op<3>::join(a, b); break;
    case 4: hl_op<4>::join(a, b); break;
    case 5: hl_op<5>::join(a, b); break;
    case 6: hl_op<6>::join(a, b); break;
    default: hl_op<7>::join(a, b); break;
    }
}
template <class T> HL_DEV void hl_join_float(int op, T* a, T b) {
    switch (op) {
    case 0: hl_op<0>::join(a, b); break;
    case 1: hl_op<1>::join(a, b); break;
    case 2: hl_op<2>::join(a, b); break;
    default: hl_op<3>::join(a, b); break;
    }
}
HL_DEV void hl_join_at(int op, int* a, int b) { hl_join_integer(op, a, b); }
HL_DEV void hl_join_at(int op, long long* a, long long b) { hl_join_integer(op, a, b); }
HL_DEV void hl_join_at(int op, unsigned int* a, unsigned int b) { hl_join_integer(op, a, b); }
HL_DEV void hl_join_at(int op, unsigned long long* a, unsigned long long b) { hl_join_integer(op, a, b); }
HL_DEV void hl_join_at(int op, float* a, float b) { hl_join_float(op, a, b); }
HL_DEV void hl_join_at(int op, double* a, double b) { hl_join_float(op, a, b); }
HL_DEV void hl_join_at(int op, bool* a, bool b) {
    switch (op) {
    case 1: hl_op<1>::join(a, b); break;
    case 2: hl_op<2>::join(a, b); break;
    case 4: case 6: *a = *a && b; break;
    default: *a = *a || b; break;
    }
}
template <class T> struct hl_joinable { static const bool value = false; };
template <> struct hl_joinable<int> { static const bool value = true; };
template <> struct hl_joinable<long long> { static const bool value = true; };
template <> struct hl_joinable<unsigned int> { static const bool value = true; };
template <> struct hl_joinable<unsigned long long> { static const bool value = true; };
template <> struct hl_joinable<float> { static const bool value = true; };
template <> struct hl_joinable<double> { static const bool value = true; };
template <> struct hl_joinable<bool> { static const bool value = true; };
// A reduce entry's share of `len` points (offsets from the first) for thread `me` of `n`:
// `walk` 0 strides by `n` from `me` (neighbouring threads, neighbouring elements); 1 takes one
// contiguous block of `ceil(len / n)` in thread order, so that partials in thread order are in
// index order, for joins that are not commutative (`hoplite_abi::ReduceWalk`).
HL_DEV void hl_share(int walk, unsigned long long len, unsigned long long me, unsigned long long n,
                     unsigned long long* lo, unsigned long long* hi, unsigned long long* step) {
    if (walk == 1) {
        const unsigned long long chunk = len / n + (len % n != 0 ? 1 : 0);
        const unsigned long long first = me * chunk < len ? me * chunk : len;
        *lo = first;
        *hi = len - first > chunk ? first + chunk : len;
        *step = 1;
    } else {
        *lo = me < len ? me : len;
        *hi = len;
        *step = n;
    }
}
// A reduce entry's last step. Without a device join (`join` < 0, or a value the device cannot
// join) each launched thread stores its value at its number `me`. With one, the block's
// values are joined in thread order by its first thread, which stores the block's partial at
// the block's number: a partial per block, not per thread, to copy back and join on the host.
// `join` is the same for every thread, so all of a block's threads reach the barrier.
template <class T> HL_DEV void hl_store_partial(T v, int join, T* partials, unsigned long long me) {
    if constexpr (hl_joinable<T>::value) {
        if (join >= 0) {
            __shared__ T hl_block_values[1024];
            const unsigned n = blockDim.x * blockDim.y * blockDim.z;
            const unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
            hl_block_values[t] = v;
            __syncthreads();
            if (t == 0) {
                T s = hl_block_values[0];
                for (unsigned k = 1; k < n; ++k) hl_join_at(join, &s, hl_block_values[k]);
                partials[((unsigned long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x] = s;
            }
            return;
        }
    }
    partials[me] = v;
}
template <class T, int OP> HL_DEV T hl_team_join(T v) {
    __shared__ T hl_values[1024];
    __shared__ T hl_total;
    __syncthreads();
    hl_values[threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        T s = hl_values[0];
        for (unsigned k = 1; k < blockDim.x; ++k) hl_op<OP>::join(&s, hl_values[k]);
        hl_total = s;
    }
    __syncthreads();
    T r = hl_total;
    __syncthreads();
    return r;
}
// `team_scan`: the sum of the lower ranks' values from zero, and the team's total from there,
// as the host backends compute them; a team of one gets (0, v).
template <class T> HL_DEV void hl_team_scan(T v, T* prefix, T* total) {
    __shared__ T hl_values[1024];
    __syncthreads();
    hl_values[threadIdx.x] = v;
    __syncthreads();
    if (blockDim.x == 1) {
        *prefix = (T)0;
        *total = v;
    } else {
        T p = (T)0;
        for (unsigned k = 0; k < threadIdx.x; ++k) p = hl_add(p, hl_values[k]);
        T t = p;
        for (unsigned k = threadIdx.x; k < blockDim.x; ++k) t = hl_add(t, hl_values[k]);
        *prefix = p;
        *total = t;
    }
    __syncthreads();
}
// One round of a team-level nested scan: the blocks of 16 indices `first .. first + blockDim.x`
// (below `end`), one per thread, block `first + i` on thread `(first + i) % blockDim.x`.
// Every thread gives its block's sum `s`; every thread gets the sum of the blocks before its
// block `mine` (from `*carry`, the sum of all earlier rounds), and `*carry` moves past the
// round: the same fold over block sums, in block order, as the core's team scan.
template <class T> HL_DEV T hl_block_prefix(T s, unsigned long long first, unsigned long long end, unsigned long long mine, T* carry) {
    __shared__ T hl_values[1024];
    __syncthreads();
    hl_values[threadIdx.x] = s;
    __syncthreads();
    T c = *carry, before = *carry;
    for (unsigned long long b = first; b < end && b < first + blockDim.x; ++b) {
        if (b == mine) before = c;
        c = hl_add(c, hl_values[b % blockDim.x]);
    }
    *carry = c;
    return before;
}
template <class T> HL_DEV T hl_team_sum(T v) { return hl_team_join<T, 0>(v); }
template <class T> HL_DEV T hl_team_max(T v) { return hl_team_join<T, 1>(v); }
template <class T> HL_DEV T hl_team_min(T v) { return hl_team_join<T, 2>(v); }
// Team and thread scratch live in the block's dynamic shared memory. An allocation beyond its
// pad, or an index past a slice, traps (Rust panics there).
template <class T> struct hl_scratch { T* ptr; unsigned long long len; };
#ifndef HL_HOST_CHECK
HL_DEV unsigned char* hl_scratch_base() {
    extern __shared__ unsigned long long hl_dynamic_smem[];
    return (unsigned char*)hl_dynamic_smem;
}
HL_DEV unsigned long long hl_scratch_capacity() {
    unsigned bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
    return bytes;
}
#endif
// The layout of the dynamic shared memory, from the policy's requests (bytes per team at
// levels 0 and 1, per thread at levels 0 and 1), each rounded up to 8 bytes as the host
// backends round them: the team's level 0, its level 1, then every thread's level 0, then
// every thread's level 1, by team rank. Traps if the launch gave less than that.
HL_DEV unsigned long long hl_round8(unsigned long long b) {
    if (b > ~0ull - 7) hl_panic();
    return (b + 7) / 8 * 8;
}
HL_DEV unsigned long long hl_sum_bytes(unsigned long long a, unsigned long long b) {
    if (b > ~0ull - a) hl_panic();
    return a + b;
}
HL_DEV unsigned long long hl_times_bytes(unsigned long long a, unsigned long long n) {
    if (n != 0 && a > ~0ull / n) hl_panic();
    return a * n;
}
HL_DEV void hl_scratch_layout(hl_member* m, unsigned long long team0, unsigned long long team1,
                              unsigned long long thread0, unsigned long long thread1) {
    const unsigned long long t0 = hl_round8(team0), t1 = hl_round8(team1);
    const unsigned long long p0 = hl_round8(thread0), p1 = hl_round8(thread1);
    const unsigned long long threads = blockDim.x;
    const unsigned long long teams = hl_sum_bytes(t0, t1);
    const unsigned long long own0 = hl_sum_bytes(teams, hl_times_bytes(p0, threadIdx.x));
    const unsigned long long all0 = hl_sum_bytes(teams, hl_times_bytes(p0, threads));
    const unsigned long long own1 = hl_sum_bytes(all0, hl_times_bytes(p1, threadIdx.x));
    const unsigned long long total = hl_sum_bytes(all0, hl_times_bytes(p1, threads));
    if (total > hl_scratch_capacity()) hl_panic();
    unsigned char* base = hl_scratch_base();
    m->pad[0] = base; m->pad_bytes[0] = t0;
    m->pad[1] = base + t0; m->pad_bytes[1] = t1;
    m->pad[2] = base + own0; m->pad_bytes[2] = p0;
    m->pad[3] = base + own1; m->pad_bytes[3] = p1;
}
// A bump allocator over one pad with each element type's alignment, like the host's
// `ScratchPad`; `used` counts the pad's bytes handed out in this team.
template <class T> HL_DEV hl_scratch<T> hl_scratch_alloc(const hl_member& m, int pad, unsigned long long* used, unsigned long long len) {
    const unsigned long long size = sizeof(T);
    const unsigned long long start = (*used + size - 1) / size * size;
    if (len > (~0ull - start) / size) hl_panic();
    const unsigned long long end = start + len * size;
    if (end > m.pad_bytes[pad]) hl_panic();
    *used = end;
    hl_scratch<T> s = {(T*)(m.pad[pad] + start), len};
    return s;
}
template <class T> HL_DEV unsigned long long hl_scratch_at(hl_scratch<T> s, unsigned long long k) {
    if (k >= s.len) hl_panic();
    return k;
}
// `MinMaxScalar<T>` of MinMax: 16 bytes, the minimum at byte 0 and the maximum at byte 8, as
// `ValLoc` has its value first. `update` keeps each side as `Min` and `Max` do.
template <class T> struct alignas(8) hl_minmax { T min; alignas(8) T max; };
template <class T> HL_DEV void hl_update_minmax(hl_minmax<T>* acc, T v) {
    hl_keep_min(&acc->min, v);
    hl_keep_max(&acc->max, v);
}
