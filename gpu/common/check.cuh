#pragma once
// Every CUDA call is checked: a failure throws with the call, file and line (never ignored).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "core/launch_count.hpp"

namespace dsa::gpu {

// grid.y holds at most 65535 blocks: a launch of one grid row per table row runs in pieces.
// launch(first, n) launches rows [first, first + n).
constexpr int kMaxGridRows = 65535;
template <class Launch>
void for_row_pieces(int nrows, const Launch& launch) {
  for (int first = 0; first < nrows; first += kMaxGridRows)
    launch(first, nrows - first < kMaxGridRows ? nrows - first : kMaxGridRows);
}

inline void cuda_check(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                             cudaGetErrorString(err) + ") in " + what + " at " + file + ":" +
                             std::to_string(line));
}

// The current device's SM count (sizes grids that fill the device once).
inline int current_device_sms() {
  int device = 0, sms = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice", __FILE__, __LINE__);
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute", __FILE__,
             __LINE__);
  return sms;
}

}  // namespace dsa::gpu

#define DSA_CUDA_CHECK(call) ::dsa::gpu::cuda_check((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors now, execution errors at the next sync.
// Every launcher calls it once per launch, so it also counts the launches (core/launch_count.hpp).
#define DSA_LAUNCH_CHECK(name) \
  (::dsa::kernel_launches()++, ::dsa::gpu::cuda_check(cudaGetLastError(), name, __FILE__, __LINE__))
