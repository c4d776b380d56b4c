#pragma once
// Factories of the GPU implementations. Always available: without CUDA (or on a GPU the kernels
// were not built for) the implementation reports "not supported" instead of failing.
#include "core/implementation.hpp"

namespace dsa::gpu {

ImplementationPtr make_gpu_sparse();  // block-table path: paged sparse bf16 scores
ImplementationPtr make_gpu_mask();    // mask path: dense fp32 scores inside published blocks

// The one description of the CUDA device this process would use (model, sm, SMs, memory, L2,
// clock, driver and runtime), or why there is none: the reports' gpu_detail and the GPU notes.
std::string describe_device();

// Why this build or machine cannot run the GPU implementations ("" when it can): no CUDA in the
// build, no device, or no kernel image for the device's architecture. Launches and probes no
// kernel, so it is safe in static initializers (tests/gpu uses it to exit 77 before Catch runs).
std::string unavailable_reason();

// CUDA devices this process can see (after CUDA_VISIBLE_DEVICES); 0 without CUDA or a driver.
int device_count();

}  // namespace dsa::gpu
