#pragma once
// Kernel timing with CUDA events (docs/performance.md): warm-up launches, then `samples` timed
// launches, each preceded by a memset over twice the L2 so no sample starts with warm caches.
#include <functional>
#include <string>
#include <vector>

#include "gpu/common/device_buffer.cuh"
#include "core/results.hpp"

namespace dsa::gpu {

class KernelTimer {
 public:
  explicit KernelTimer(int samples);
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

  // Times `launch` (which must be idempotent) and returns the record; `flops`/`bytes` describe
  // one launch. `calls` is how many such launches one run of the implementation makes.
  KernelTiming measure(const std::string& kernel, const std::string& layer, double flops,
                       double bytes, const std::function<void()>& launch, int calls = 1);

 private:
  void flush_l2();
  int samples_;
  DeviceBuffer<char> flush_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace dsa::gpu
