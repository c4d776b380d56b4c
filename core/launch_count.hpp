#pragma once
// Kernel launches made by this process: the GPU launchers bump it in DSA_LAUNCH_CHECK, and
// Implementation::run records it per layer, so `dsa-harness bench` can report launches per
// layer (at small row counts launch count and host work dominate; docs/performance.md).
#include <atomic>
#include <cstdint>

namespace dsa {

inline std::atomic<int64_t>& kernel_launches() {
  static std::atomic<int64_t> count{0};
  return count;
}

}  // namespace dsa
