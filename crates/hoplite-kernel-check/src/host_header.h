// The CUDA built-ins for the CPU, so that the CUDA C that #[kernel] generates compiles with a
// host C++ compiler and runs on the same inputs as the native kernel. This checks the
// translation (semantics, parameter layout, the grid walk); it is not a GPU.
#include <math.h>
#include <atomic>
#include <csetjmp>

struct dim3 { unsigned x, y, z; };
static dim3 threadIdx, blockIdx, blockDim, gridDim;
// A trap ends the launch: the launcher returns a status instead of aborting the process.
static std::jmp_buf hl_trap_point;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

[[noreturn]] static void __trap() { std::longjmp(hl_trap_point, 1); }

template <class T> static T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
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
