// gpu-sparse: the block-table path (paged sparse bf16 logits, small top-k with page transform).
#include "gpu/engine/engine.cuh"
#include "gpu/gpu_implementations.hpp"

namespace dsa::gpu {
ImplementationPtr make_gpu_sparse() { return std::make_unique<GpuEngine>(Path::sparse); }
std::string describe_device() { return device_description(); }
}  // namespace dsa::gpu
