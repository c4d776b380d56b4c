// Runs before Catch: GPU tests exit 77 (ctest SKIP_RETURN_CODE) where the build has no CUDA or
// the machine has no usable CUDA device, so CI without a GPU reports them as skipped.
#include <cstdio>
#include <cstdlib>

#include "gpu/gpu_implementations.hpp"

namespace {
struct SkipWithoutGpu {
  SkipWithoutGpu() {
    const dsa::Support s = dsa::gpu::make_gpu_sparse()->supported();
    if (!s.ok) {
      std::fprintf(stderr, "test_gpu: skipped: %s\n", s.reason.c_str());
      std::exit(77);
    }
  }
} skip_without_gpu;
}  // namespace
