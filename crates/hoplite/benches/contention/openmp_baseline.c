/* The OpenMP baseline of the contention benchmark (benches/contention.rs): the same empty
 * two-iteration loop and the same one-barrier team as the hoplite functions, on libgomp's
 * thread pool. The benchmark compiles this file with `cc -O2 -fopenmp -shared -fPIC` when a C
 * compiler with OpenMP is present, and loads it at run time. */
#include <omp.h>

void hoplite_omp_set_threads(int threads) { omp_set_num_threads(threads); }

int hoplite_omp_max_threads(void) { return omp_get_max_threads(); }

/* An empty `parallel for` over `n` iterations (each iteration only keeps its index alive, as
 * `black_box` does on the Rust side). */
void hoplite_omp_dispatch(long n) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        __asm__ volatile("" : : "r"(i) : "memory");
    }
}

/* One team of all threads that meets in one barrier. */
void hoplite_omp_team_barrier(void) {
#pragma omp parallel
    {
#pragma omp barrier
    }
}
