#include "gpu/common/timing.cuh"

#include <algorithm>

namespace dsa::gpu {

KernelTimer::KernelTimer(int samples) : samples_(std::max(samples, 20)) {
  int device = 0, l2 = 0;
  DSA_CUDA_CHECK(cudaGetDevice(&device));
  DSA_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  flush_.resize(size_t(std::max(l2, 1 << 20)) * 2);
  DSA_CUDA_CHECK(cudaEventCreate(&start_));
  DSA_CUDA_CHECK(cudaEventCreate(&stop_));
}

KernelTimer::~KernelTimer() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}

void KernelTimer::flush_l2() { flush_.fill_bytes(0x5A, flush_.size()); }

KernelTiming KernelTimer::measure(const std::string& kernel, const std::string& layer, double flops,
                                  double bytes, const std::function<void()>& launch, int calls) {
  for (int i = 0; i < 2; ++i) launch();  // warm-up: module load, first-touch
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> ms;
  for (int i = 0; i < samples_; ++i) {
    flush_l2();
    DSA_CUDA_CHECK(cudaEventRecord(start_));
    launch();
    DSA_CUDA_CHECK(cudaEventRecord(stop_));
    DSA_CUDA_CHECK(cudaEventSynchronize(stop_));
    float t = 0;
    DSA_CUDA_CHECK(cudaEventElapsedTime(&t, start_, stop_));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  KernelTiming k;
  k.kernel = kernel;
  k.layer = layer;
  k.calls = calls;
  k.samples = int(ms.size());
  k.median_ms = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  k.min_ms = ms.front();
  k.max_ms = ms.back();
  k.flops = flops;
  k.bytes = bytes;
  return k;
}

}  // namespace dsa::gpu
