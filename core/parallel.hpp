#pragma once
// The CPU code's one threading model: OpenMP loops over independent rows (the reference, the
// metrics and the generator). Without OpenMP the loops run serially and give the same results,
// because every item writes only its own outputs.
#include <cstdint>
#include <exception>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace dsa {

// The number of threads an OpenMP loop uses here (1 without OpenMP).
inline int cpu_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Runs fn(i) for i in [0, n), one item at a time per thread. An exception cannot leave an OpenMP
// region, so each is caught and the one of the smallest failing item is rethrown afterwards:
// the error a user sees does not depend on the thread count.
template <class Fn>
void parallel_for(int64_t n, Fn fn) {
  int64_t error_item = INT64_MAX;
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) {
    try {
      fn(i);
    } catch (...) {
#pragma omp critical(dsa_parallel_for_error)
      if (i < error_item) {
        error_item = i;
        error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace dsa
