// gpu-mask: the mask path (dense fp32 logits for every layer, consumers ranked inside the
// published blocks).
#include "gpu/engine/engine.cuh"
#include "gpu/gpu_implementations.hpp"

namespace dsa::gpu {
ImplementationPtr make_gpu_mask() { return std::make_unique<GpuEngine>(PathKind::mask); }
}  // namespace dsa::gpu
