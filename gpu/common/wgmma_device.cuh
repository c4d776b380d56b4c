#pragma once
// Whether the current device runs the wgmma kernels: Hopper (sm_90), the one architecture with
// warpgroup MMA; the binaries carry those kernels in their sm_90a image only. Elsewhere (B200
// and later) every row takes the portable mma.sync kernels.
namespace dsa::gpu {

bool wgmma_device();

}  // namespace dsa::gpu
