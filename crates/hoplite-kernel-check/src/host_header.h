// The CUDA built-ins for the CPU, so that the CUDA C that #[kernel] generates compiles with a
// host C++ compiler and runs on the same inputs as the native kernel. This checks the
// translation (semantics, parameter layout, the grid walk); it is not a GPU.
#include <math.h>
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

struct dim3 { unsigned x, y, z; };
// Each thread of a block is a host thread in team launches, so the indices are per thread.
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
// A trap ends the thread: the launcher catches it and returns a status instead of aborting.
struct hl_trap_signal {};
// The barrier of the block that runs (team launches only; otherwise threads run one by one
// and there is nothing to wait for).
static std::barrier<>* hl_block_barrier = nullptr;

#define __global__
#define __device__
#define __forceinline__ inline
// Blocks run one after another, so one static per variable serves as each block's shared copy.
#define __shared__ static

// A block's dynamic shared memory (team scratch): the launcher gives each block a fresh one.
#define HL_HOST_CHECK
static unsigned char* hl_dynamic_smem = nullptr;
static unsigned long long hl_dynamic_smem_bytes = 0;
static unsigned char* hl_scratch_base() { return hl_dynamic_smem; }
static unsigned long long hl_scratch_capacity() { return hl_dynamic_smem_bytes; }

[[noreturn]] static void __trap() { throw hl_trap_signal{}; }
static void __syncthreads() {
    if (hl_block_barrier) hl_block_barrier->arrive_and_wait();
}

template <class T> static T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
// The lock bits of unique tokens.
static unsigned int atomicOr(unsigned int* p, unsigned int v) { return std::atomic_ref<unsigned int>(*p).fetch_or(v); }
static unsigned int atomicAnd(unsigned int* p, unsigned int v) { return std::atomic_ref<unsigned int>(*p).fetch_and(v); }
static unsigned int hl_atomic_load(unsigned int* p) { return std::atomic_ref<unsigned int>(*p).load(); }
static void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static int __ffs(unsigned int x) { return __builtin_ffs((int)x); }
// A waiting thread lets the others run (threads of a block are host threads).
static void __nanosleep(unsigned) { std::this_thread::yield(); }
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
