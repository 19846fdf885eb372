// The CUDA device on the CPU: the built-ins that CUDA C kernels use, defined so that a host C++
// compiler builds them, and the run of a grid (hoplite-cuda's emulated driver and
// hoplite-kernel-check's host checks both run generated kernels under it). The caller's thread
// runs a launch's blocks one after another; a block's threads are fibers of that thread,
// switched at `__syncthreads` (a real barrier: a thread waits until every thread of the block
// that has not exited arrives) and at `__nanosleep` (a spinning thread lets the others run).
// All state is per host thread, so launches on several threads (streams) run at once.
#include <math.h>
#include <stddef.h>
#include <ucontext.h>
#include <atomic>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

struct dim3 { unsigned x, y, z; };
static thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
// A block's shared variables: one per host thread, which runs one block at a time.
#define __shared__ static thread_local
#define HL_HOST_CHECK

// A trap ends the grid: the launcher catches it and fails the launch, as a GPU does.
struct hl_trap_signal {};
[[noreturn]] static void __trap() { throw hl_trap_signal{}; }

// The block being run: its threads as fibers. On x86-64 a fiber switch is `hl_switch`, which
// saves the callee-saved registers on the current stack and moves to another (a switch costs a
// few nanoseconds, so grids of millions of threads run quickly); elsewhere it is ucontext's
// `swapcontext`.
#if defined(__x86_64__)
#define HL_FAST_SWITCH 1
extern "C" void hl_switch(void** save, void* load);
asm(R"(
    .pushsection .text
    .globl hl_switch
    .hidden hl_switch
    .type hl_switch, @function
hl_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size hl_switch, .-hl_switch
    .popsection
)");
#endif
struct hl_fiber {
#if HL_FAST_SWITCH
    void* sp;
#else
    ucontext_t context;
#endif
    dim3 index;
    // 0 runnable, 1 waiting at the barrier, 2 exited.
    int state;
};
struct hl_block_run {
#if HL_FAST_SWITCH
    void* scheduler;
#else
    ucontext_t scheduler;
#endif
    hl_fiber* fibers;
    unsigned count, current, live, arrived;
    bool trapped;
    void (*body)(void*);
    void* argument;
};
static thread_local hl_block_run* hl_run = nullptr;
static thread_local unsigned char* hl_dynamic_smem = nullptr;
static thread_local unsigned long long hl_dynamic_smem_bytes = 0;
static unsigned char* hl_scratch_base() { return hl_dynamic_smem; }
static unsigned long long hl_scratch_capacity() { return hl_dynamic_smem_bytes; }

// Leaves the running fiber for the scheduler.
static void hl_to_scheduler(hl_fiber& f) {
#if HL_FAST_SWITCH
    hl_switch(&f.sp, hl_run->scheduler);
#else
    swapcontext(&f.context, &hl_run->scheduler);
#endif
}
static void hl_suspend(int state) {
    hl_block_run* r = hl_run;
    hl_fiber& f = r->fibers[r->current];
    f.state = state;
    hl_to_scheduler(f);
}
static void __syncthreads() {
    if (hl_run) {
        hl_run->arrived++;
        hl_suspend(1);
    }
}
static void __syncwarp(unsigned = 0xffffffffu) { __syncthreads(); }
static void __nanosleep(unsigned) {
    if (hl_run) hl_suspend(0);
    else std::this_thread::yield();
}

template <class T> static T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class T> static T atomicSub(T* p, T v) { return std::atomic_ref<T>(*p).fetch_sub(v); }
template <class T> static T atomicExch(T* p, T v) { return std::atomic_ref<T>(*p).exchange(v); }
template <class T> static T atomicCAS(T* p, T expected, T desired) {
    std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
    return expected;
}
template <class T> static T atomicOr(T* p, T v) { return std::atomic_ref<T>(*p).fetch_or(v); }
template <class T> static T atomicAnd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_and(v); }
template <class T> static T atomicXor(T* p, T v) { return std::atomic_ref<T>(*p).fetch_xor(v); }
template <class T> static T atomicMin(T* p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <class T> static T atomicMax(T* p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v > old && !a.compare_exchange_weak(old, v)) {}
    return old;
}
static unsigned int hl_atomic_load(unsigned int* p) { return std::atomic_ref<unsigned int>(*p).load(); }
static void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static int __ffs(unsigned int x) { return __builtin_ffs((int)x); }
static int __popc(unsigned int x) { return __builtin_popcount(x); }
static int __clz(unsigned int x) { return x == 0 ? 32 : __builtin_clz(x); }
template <class T> static T __ldg(const T* p) { return *p; }
static float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static double rsqrt(double x) { return 1.0 / sqrt(x); }

// A fiber's stack: kernels are small functions, so 64 KiB is ample.
static const size_t hl_stack_bytes = 64 * 1024;

static void hl_fiber_main() {
    hl_block_run* r = hl_run;
    try {
        r->body(r->argument);
    } catch (hl_trap_signal&) {
        r->trapped = true;
    }
    hl_fiber& f = r->fibers[r->current];
    f.state = 2;
    r->live--;
#if HL_FAST_SWITCH
    hl_to_scheduler(f);  // never resumed
    __builtin_unreachable();
#endif
    // With ucontext, returns to the scheduler through `uc_link`.
}

// Sets fiber `f` up to start `hl_fiber_main` on `stack`.
static void hl_start_fiber(hl_fiber& f, char* stack, hl_block_run& run) {
#if HL_FAST_SWITCH
    // The frame `hl_switch` pops: r15, r14, r13, r12, rbx, rbp, then the address it returns to,
    // above which a null return address ends the fiber's stack; at entry rsp is 8 mod 16.
    unsigned long long top = ((unsigned long long)(stack + hl_stack_bytes)) & ~15ull;
    void** frame = (void**)(top - 64);
    for (int k = 0; k < 6; ++k) frame[k] = nullptr;
    frame[6] = (void*)&hl_fiber_main;
    frame[7] = nullptr;
    f.sp = frame;
    (void)run;
#else
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = stack;
    f.context.uc_stack.ss_size = hl_stack_bytes;
    f.context.uc_link = &run.scheduler;
    makecontext(&f.context, hl_fiber_main, 0);
#endif
}

// Runs one block of `blockDim` threads: every thread to its end, the barrier released once
// every live thread waits at it. Returns false when a thread trapped or the block deadlocked.
static bool hl_run_block(void (*body)(void*), void* argument) {
    static thread_local std::vector<char*> stacks;
    static thread_local std::vector<hl_fiber> fibers;
    const unsigned count = blockDim.x * blockDim.y * blockDim.z;
    while (stacks.size() < count) stacks.push_back(new char[hl_stack_bytes]);
    if (fibers.size() < count) fibers.resize(count);
    hl_block_run run{};
    run.fibers = fibers.data();
    run.count = count;
    run.live = count;
    run.body = body;
    run.argument = argument;
    unsigned k = 0;
    for (unsigned z = 0; z < blockDim.z; ++z)
        for (unsigned y = 0; y < blockDim.y; ++y)
            for (unsigned x = 0; x < blockDim.x; ++x, ++k) {
                hl_start_fiber(fibers[k], stacks[k], run);
                fibers[k].index = dim3{x, y, z};
                fibers[k].state = 0;
            }
    hl_block_run* outer = hl_run;
    hl_run = &run;
    while (run.live > 0 && !run.trapped) {
        bool progressed = false;
        for (unsigned i = 0; i < count && !run.trapped; ++i) {
            if (fibers[i].state != 0) continue;
            run.current = i;
            threadIdx = fibers[i].index;
#if HL_FAST_SWITCH
            hl_switch(&run.scheduler, fibers[i].sp);
#else
            swapcontext(&run.scheduler, &fibers[i].context);
#endif
            progressed = true;
        }
        if (run.arrived > 0 && run.arrived == run.live) {
            for (unsigned i = 0; i < count; ++i)
                if (fibers[i].state == 1) fibers[i].state = 0;
            run.arrived = 0;
        } else if (!progressed) {
            break;  // every live thread waits at a barrier some exited thread never reaches
        }
    }
    hl_run = outer;
    return !run.trapped && run.live == 0;
}

// Runs the grid: `grid` blocks of `block` threads with `shared` bytes of dynamic shared memory
// each (filled with a pattern, as a GPU does not clear it). Returns 0, or 1 when the kernel
// trapped or deadlocked at a barrier.
static int hl_run_grid(const unsigned* grid, const unsigned* block, unsigned long long shared,
                       void (*body)(void*), void* argument) {
    gridDim = dim3{grid[0], grid[1], grid[2]};
    blockDim = dim3{block[0], block[1], block[2]};
    std::vector<unsigned long long> smem(shared / 8 + 1);
    for (unsigned z = 0; z < gridDim.z; ++z)
        for (unsigned y = 0; y < gridDim.y; ++y)
            for (unsigned x = 0; x < gridDim.x; ++x) {
                for (auto& w : smem) w = 0x5a5a5a5a5a5a5a5aull;
                hl_dynamic_smem = (unsigned char*)smem.data();
                hl_dynamic_smem_bytes = shared;
                blockIdx = dim3{x, y, z};
                if (!hl_run_block(body, argument)) return 1;
            }
    return 0;
}

// The entry's parameters, unpacked from the driver's `void**` by the entry's own types.
template <class... A, size_t... I>
static void hl_call_unpacked(void (*entry)(A...), void** p, std::index_sequence<I...>) {
    entry(*static_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(p[I])...);
}
template <class... A> static void hl_call(void (*entry)(A...), void** p) {
    hl_call_unpacked(entry, p, std::index_sequence_for<A...>{});
}
// The sizes, alignments and kinds of the entry's parameters, as a driver reads them from a
// module: kind 0 is a value, 1 a pointer to const (memory the kernel reads), 2 a pointer to
// mutable memory (memory it may write), 3 a pointer to volatile (memory it updates atomically).
template <class T> static constexpr unsigned long long hl_param_kind() {
    if constexpr (std::is_pointer_v<T>) {
        if constexpr (std::is_volatile_v<std::remove_pointer_t<T>>) return 3ull;
        return std::is_const_v<std::remove_pointer_t<T>> ? 1ull : 2ull;
    } else {
        return 0ull;
    }
}
template <class... A>
static int hl_param_layout(void (*)(A...), unsigned long long* sizes, unsigned long long* aligns,
                           unsigned long long* kinds, int cap) {
    const unsigned long long s[] = {0ull, (unsigned long long)sizeof(std::remove_cv_t<std::remove_reference_t<A>>)...};
    const unsigned long long a[] = {0ull, (unsigned long long)alignof(std::remove_cv_t<std::remove_reference_t<A>>)...};
    const unsigned long long k[] = {0ull, hl_param_kind<std::remove_cv_t<std::remove_reference_t<A>>>()...};
    const int n = (int)sizeof...(A);
    for (int i = 0; i < n && i < cap; ++i) {
        sizes[i] = s[i + 1];
        aligns[i] = a[i + 1];
        kinds[i] = k[i + 1];
    }
    return n;
}
