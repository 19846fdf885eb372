/* The C baselines of the `dot` benchmark (benches/patterns.rs): a dot product as C compilers
 * vectorize it when told the reduction may be reordered (`omp simd reduction`), on one thread
 * and on OpenMP's threads. The benchmark compiles this file with `cc -O2 -fopenmp -shared
 * -fPIC` when a C compiler with OpenMP is present, and loads it at run time. */
#include <omp.h>

void hoplite_c_set_threads(int threads) { omp_set_num_threads(threads); }

double hoplite_c_dot_simd(const double *x, const double *y, long n) {
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (long i = 0; i < n; i++) {
        s += x[i] * y[i];
    }
    return s;
}

double hoplite_c_dot_omp_simd(const double *x, const double *y, long n) {
    double s = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
    for (long i = 0; i < n; i++) {
        s += x[i] * y[i];
    }
    return s;
}
