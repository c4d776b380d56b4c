// Runs before Catch: test_gpu_devices exits 77 (ctest SKIP_RETURN_CODE) on a machine with fewer
// than two GPUs, so a one-GPU box and CI report it as skipped, never as passed.
#include <cstdio>
#include <cstdlib>

#include "gpu/gpu_implementations.hpp"

namespace {
struct SkipWithoutTwoGpus {
  SkipWithoutTwoGpus() {
    const int count = dsa::gpu::device_count();
    if (count < 2) {
      std::fprintf(stderr, "test_gpu_devices: skipped: needs two GPUs, this process sees %d\n", count);
      std::exit(77);
    }
  }
} skip_without_two_gpus;
}  // namespace
