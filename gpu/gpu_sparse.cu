// gpu-sparse: the block-table path (paged sparse bf16 logits, small top-k with page transform).
#include "gpu/engine/engine.cuh"
#include "gpu/gpu_implementations.hpp"

namespace dsa::gpu {
ImplementationPtr make_gpu_sparse() { return std::make_unique<GpuEngine>(PathKind::sparse); }
int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error that should stick
    return 0;
  }
  return count;
}
}  // namespace dsa::gpu
