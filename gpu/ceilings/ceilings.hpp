#pragma once
// The device's ceilings, measured in the same run as the kernels they judge
// (docs/performance.md): HBM copy bandwidth, L2 read bandwidth, and the rates of an int8 wgmma
// loop (`.s32.s8.s8`, the exact route's tensor floor) and of an fp8 e4m3 wgmma loop, each a
// short burst at full clock, and the int8 loop's rate sustained on random operands. Plain C++:
// harness/bench includes it without nvcc; without CUDA every ceiling is "not supported".
#include <string>
#include <vector>

#include "core/results.hpp"

namespace dsa::gpu {

// Kernel names of the ceilings (KernelTiming::kernel): bytes-per-second ceilings carry bytes,
// operation-rate ceilings carry flops (int8 operations count like flops: 2 per multiply-add).
inline const char* const kCeilingHbmCopy = "ceilings/hbm_copy";
inline const char* const kCeilingL2Read = "ceilings/l2_read";
inline const char* const kCeilingInt8Wgmma = "ceilings/int8_wgmma";
inline const char* const kCeilingFp8Wgmma = "ceilings/fp8_wgmma";
// The int8 loop on random operands, launched back to back for about 0.1 s a sample: the rate the
// board's power limit lets a long kernel hold (information only: floors use the burst rate).
inline const char* const kCeilingInt8WgmmaSustained = "ceilings/int8_wgmma_sustained";

struct CeilingRun {
  std::vector<KernelTiming> timings;        // the ceilings measured
  std::vector<std::string> not_supported;   // "ceilings/int8_wgmma: needs sm_90a (this GPU is sm_100)"
};

// Measures every ceiling this device supports, `samples` timed launches each (>= 20).
// Throws std::runtime_error on a CUDA error.
CeilingRun measure_ceilings(int samples);

}  // namespace dsa::gpu
