#pragma once
// What the micro-benchmarks share: their operand source (mix32, gpu/common/hash.cuh: never
// all-zero data) and their timer.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/common/hash.cuh"

using dsa::gpu::mix32;

// The best of `reps` timed calls of launch() after one warm-up call, in ms (CUDA events).
template <class F>
float best_ms(F launch, int reps) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  launch();
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    best = ms < best ? ms : best;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}
