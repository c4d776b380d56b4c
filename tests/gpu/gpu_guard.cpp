// Runs before Catch: GPU tests exit 77 (ctest SKIP_RETURN_CODE) where the build has no CUDA or
// the machine has no usable CUDA device, so CI without a GPU reports them as skipped.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gpu/gpu_implementations.hpp"

namespace {
struct SkipWithoutGpu {
  SkipWithoutGpu() {
    // Not supported(): its kernel probe must wait until the CUDA modules have registered.
    const std::string why = dsa::gpu::unavailable_reason();
    if (!why.empty()) {
      std::fprintf(stderr, "test_gpu: skipped: %s\n", why.c_str());
      std::exit(77);
    }
  }
} skip_without_gpu;
}  // namespace
