// Unique tokens (Kokkos UniqueToken<Cuda>): `size` ids, one bit each in `words` (bit id % 32 of
// word id / 32), set while a thread holds the id. Every id is released before its thread exits,
// so the words are all zero between launches.
struct hl_tokens { unsigned int* words; unsigned long long size; };
#ifndef HL_HOST_CHECK
HL_DEV unsigned int hl_atomic_load(unsigned int* p) { return *(volatile unsigned int*)p; }
#endif
// The launched thread's number, x fastest (as a reduction numbers its partials).
HL_DEV unsigned long long hl_thread_number() {
    return (((unsigned long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x)
        * ((unsigned long long)blockDim.x * blockDim.y * blockDim.z)
        + ((unsigned long long)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}
// The bits of word `w` that are ids (the last word may be partial).
HL_DEV unsigned int hl_token_mask(unsigned long long size, unsigned long long w) {
    return (w + 1) * 32 <= size ? 0xffffffffu : (1u << (unsigned)(size % 32)) - 1u;
}
// An id nobody holds. A thread first tries the id of its own number (modulo the size), so with
// one id per resident thread (`Cuda::unique_token`) threads rarely meet; a taken bit sends it to
// a free bit of the same word, as `atomicOr` saw the word, and a full word to the next word.
// After a whole round of full words it pauses: all ids are held, and it waits for a release,
// as the host's `acquire` waits.
HL_DEV unsigned long long hl_token_acquire(const hl_tokens& t) {
    if (t.size == 0) hl_panic();
    const unsigned long long words = (t.size + 31) / 32;
    const unsigned long long start = hl_thread_number() % t.size;
    unsigned long long w = start / 32;
    unsigned int free = 1u << (unsigned)(start % 32);
    unsigned long long full = 0;
    for (;;) {
        if (free != 0u) {
            const unsigned int bit = free & (0u - free);
            const unsigned int old = atomicOr(&t.words[w], bit);
            if ((old & bit) == 0u) {
                // Acquire: what the previous holder did with the id happens before this.
                __threadfence();
                return w * 32 + (unsigned long long)(__ffs(bit) - 1);
            }
            free = ~old & hl_token_mask(t.size, w);
            continue;
        }
        w = w + 1 == words ? 0 : w + 1;
        if (++full == words) {
            full = 0;
#if defined(HL_HOST_CHECK) || __CUDA_ARCH__ >= 700
            __nanosleep(256);
#endif
        }
        free = ~hl_atomic_load(&t.words[w]) & hl_token_mask(t.size, w);
    }
}
// Gives `id` back: a fence so that this thread's work with the id is visible to the next
// holder, then the bit cleared. An id outside the token or not held traps (the host panics).
HL_DEV void hl_token_release(const hl_tokens& t, unsigned long long id) {
    if (id >= t.size) hl_panic();
    const unsigned int bit = 1u << (unsigned)(id % 32);
    __threadfence();
    const unsigned int old = atomicAnd(&t.words[id / 32], ~bit);
    if ((old & bit) == 0u) hl_panic();
}
// Holds one id from construction until `release()` or the end of its block, whichever comes
// first: `return`, `break` and `continue` give the id back too.
struct hl_token_guard {
    hl_tokens t;
    unsigned long long id;
    bool held;
    __device__ explicit hl_token_guard(const hl_tokens& tokens) : t(tokens), id(hl_token_acquire(tokens)), held(true) {}
    __device__ ~hl_token_guard() { if (held) hl_token_release(t, id); }
    // `tokens.release(id)`: a second release of one id traps, as the host's pool panics.
    __device__ void release() {
        if (!held) hl_panic();
        held = false;
        hl_token_release(t, id);
    }
    hl_token_guard(const hl_token_guard&) = delete;
    hl_token_guard& operator=(const hl_token_guard&) = delete;
};
// One id for a whole team (`tokens.team_guard(m)`, Kokkos' team-level acquire): team rank 0
// acquires it and every thread of the block gets it; when the block ends, a barrier (every
// thread is done with the id), then rank 0 releases it. Like any team collective, every
// thread of the team makes it, as the host's `TeamTokenGuard` requires.
struct hl_team_token_guard {
    hl_tokens t;
    unsigned long long id;
    __device__ explicit hl_team_token_guard(const hl_tokens& tokens)
        : t(tokens), id(hl_team_broadcast<unsigned long long>(threadIdx.x == 0 ? hl_token_acquire(tokens) : 0ull, 0)) {}
    __device__ ~hl_team_token_guard() {
        __syncthreads();
        if (threadIdx.x == 0) hl_token_release(t, id);
    }
    hl_team_token_guard(const hl_team_token_guard&) = delete;
    hl_team_token_guard& operator=(const hl_team_token_guard&) = delete;
};
