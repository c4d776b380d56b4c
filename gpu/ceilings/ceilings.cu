// Device ceilings (gpu/ceilings/ceilings.hpp). Each kernel is the plainest loop that reaches its
// limit: a vectorised device-to-device copy, repeated L2-only reads of a buffer half the L2's
// size, and dependent wgmma accumulation from shared memory on every SM.
#include "gpu/ceilings/ceilings.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "gpu/common/check.cuh"
#include "gpu/common/device_buffer.cuh"
#include "gpu/common/hash.cuh"
#include "gpu/common/timing.cuh"

namespace dsa::gpu {
namespace {

// wgmma exists only in the sm_90a image; elsewhere the kernels compile to nothing and the host
// reports "not supported" (the probe's flag stays 0).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DSA_WGMMA 1
#include "gpu/ceilings/wgmma_ops.inc"
#else
#define DSA_WGMMA 0
#endif

constexpr int kCopyThreads = 512;
constexpr int kL2Passes = 64;           // the first pass comes from HBM (L2 flushed): <= 2 % low
constexpr int kWgmmaIters = 8192;       // m64n256k32 instructions per warpgroup and launch
constexpr int kWgmmaBatch = 16;         // instructions per commit group (one wait per group)
constexpr size_t kCopyBytes = size_t(1) << 30;  // per buffer: far beyond the L2

__global__ void hbm_copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

// Reads the buffer kL2Passes times with ld.global.cg (L2 only, never L1), so every load after the
// first pass is an L2 hit; the XOR keeps the loads alive.
__global__ void l2_read_kernel(const int4* __restrict__ src, size_t n, int passes, uint32_t* sink) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  for (int p = 0; p < passes; ++p)
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
      const int4 v = __ldcg(src + i);
      acc ^= uint32_t(v.x) ^ uint32_t(v.y) ^ uint32_t(v.z) ^ uint32_t(v.w);
    }
  if (acc == 0x9E3779B9u) sink[0] = acc;  // practically never; the compiler cannot know
}

#if DSA_WGMMA
// Shared memory matrix descriptor in the 128-byte swizzled K-major layout the project's kernels
// use (gpu/dense_logits/dense_wgmma.cu): rows of 128 bytes, 8-row atoms 1024 bytes apart (stride
// byte offset), 1024-aligned. The no-swizzle layout reads shared memory with bank conflicts and
// measured far below the tensor rate (bench/results/h200.md, run 17), so it would understate the
// ceiling.
__device__ uint64_t smem_descriptor(const void* smem) {
  const uint32_t addr = uint32_t(__cvta_generic_to_shared(smem));
  return uint64_t((addr >> 4) & 0x3FFF) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
#endif

// kWgmmaIters dependent m64n256k32 wgmmas per warpgroup on operands in shared memory (A 64 and
// B 256 rows of 128 swizzled bytes, of which each instruction reads 32; nonzero). Sets *ran on
// the image that has wgmma. kRandom: int8 operands of random bytes (mix32; the sustained ceiling), which
// draw more power than the small repeating values.
template <bool kFp8, bool kRandom = false>
__global__ void __launch_bounds__(128) wgmma_loop_kernel(int iters, uint32_t* sink, int* ran) {
#if DSA_WGMMA
  static_assert(!(kFp8 && kRandom), "random bytes are not all finite e4m3 values");
  __shared__ __align__(1024) uint8_t a[64 * 128];
  __shared__ __align__(1024) uint8_t b[256 * 128];
  // Small values: int8 1..3 (sums wrap harmlessly), e4m3 0.5..0.625 (no overflow in the loop).
  for (int i = threadIdx.x; i < 64 * 128; i += blockDim.x)
    a[i] = kRandom ? uint8_t(mix32(i + 977u * blockIdx.x)) : kFp8 ? uint8_t(0x30 + i % 3) : uint8_t(1 + i % 3);
  for (int i = threadIdx.x; i < 256 * 128; i += blockDim.x)
    b[i] = kRandom ? uint8_t(mix32(i + 65536u + 977u * blockIdx.x)) : kFp8 ? uint8_t(0x30 + i % 5) : uint8_t(1 + i % 5);
  // Generic-proxy writes must be visible to the async proxy that wgmma reads through.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  const uint64_t da = smem_descriptor(a), db = smem_descriptor(b);
  using Acc = typename std::conditional<kFp8, float, uint32_t>::type;
  Acc d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = Acc(i);  // distinct: equal constants would share one register
  // One group in flight at a time: keeping a second group in flight on the same accumulators
  // makes ptxas serialise the fp8 loop (C7514); the resident CTAs of the SM fill the gap.
#pragma unroll 1
  for (int it = 0; it < iters; it += kWgmmaBatch) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int j = 0; j < kWgmmaBatch; ++j) {
      if constexpr (kFp8) wgmma_fp8(d, da, db);
      else wgmma_int8(d, da, db);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  uint32_t sum = 0;
#pragma unroll
  for (int i = 0; i < 128; ++i) {
    if constexpr (kFp8) sum ^= __float_as_uint(d[i]);
    else sum += d[i];
  }
  sink[size_t(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
  if (blockIdx.x == 0 && threadIdx.x == 0) *ran = 1;
#else
  (void)iters, (void)sink, (void)ran;
#endif
}

struct Device {
  int sms = 0, l2 = 0, major = 0, minor = 0;
};

Device current_device() {
  Device d;
  int dev = 0;
  DSA_CUDA_CHECK(cudaGetDevice(&dev));
  DSA_CUDA_CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev));
  DSA_CUDA_CHECK(cudaDeviceGetAttribute(&d.l2, cudaDevAttrL2CacheSize, dev));
  DSA_CUDA_CHECK(cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev));
  DSA_CUDA_CHECK(cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, dev));
  return d;
}

KernelTiming time_hbm_copy(KernelTimer& timer, const Device& dev) {
  const size_t n = kCopyBytes / sizeof(int4);
  DeviceBuffer<int4> src(n), dst(n);
  src.fill_bytes(0x3C, n);  // nonzero data
  const unsigned grid = unsigned(dev.sms) * 4;
  auto launch = [&] {
    hbm_copy_kernel<<<grid, kCopyThreads>>>(src.get(), dst.get(), n);
    DSA_LAUNCH_CHECK("hbm_copy_kernel");
  };
  return timer.measure(kCeilingHbmCopy, "all", 0, 2.0 * double(kCopyBytes), launch);
}

KernelTiming time_l2_read(KernelTimer& timer, const Device& dev) {
  // Half the L2 (the H200's 50-60 MB: 25-30 MB), so the whole buffer stays resident.
  const size_t bytes = std::max<size_t>(size_t(dev.l2) / 2, 1 << 20) / 256 * 256;
  const size_t n = bytes / sizeof(int4);
  DeviceBuffer<int4> src(n);
  DeviceBuffer<uint32_t> sink(1);
  src.fill_bytes(0x5B, n);
  const unsigned grid = unsigned(dev.sms) * 4;
  auto launch = [&] {
    l2_read_kernel<<<grid, kCopyThreads>>>(src.get(), n, kL2Passes, sink.get());
    DSA_LAUNCH_CHECK("l2_read_kernel");
  };
  return timer.measure(kCeilingL2Read, "all", 0, double(kL2Passes) * double(bytes), launch);
}

// Times one wgmma loop on every SM (as many resident CTAs as fit), or says why it cannot run.
// launches: kernel launches back to back a sample (the sustained ceiling's); the record gives one
// launch's time and work.
template <bool kFp8, bool kRandom = false>
bool time_wgmma(KernelTimer& timer, const Device& dev, const char* name, CeilingRun& out, int launches = 1) {
  if (dev.major != 9 || dev.minor != 0) {
    out.not_supported.push_back(std::string(name) + ": wgmma needs sm_90a (this GPU is sm_" +
                                std::to_string(dev.major * 10 + dev.minor) + ")");
    return false;
  }
  auto kernel = wgmma_loop_kernel<kFp8, kRandom>;
  int per_sm = 0;
  DSA_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 128, 0));
  const unsigned grid = unsigned(dev.sms) * unsigned(std::max(per_sm, 1));
  DeviceBuffer<uint32_t> sink(size_t(grid) * 128);
  DeviceBuffer<int> ran(1);
  ran.fill_bytes(0, 1);
  kernel<<<1, 128>>>(kWgmmaBatch, sink.get(), ran.get());
  DSA_LAUNCH_CHECK("wgmma_loop_kernel (probe)");
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  if (ran.to_host(1)[0] != 1) {
    out.not_supported.push_back(std::string(name) + ": this binary has no sm_90a image of the wgmma loop");
    return false;
  }
  auto launch = [&] {
    for (int i = 0; i < launches; ++i) kernel<<<grid, 128>>>(kWgmmaIters, sink.get(), ran.get());
    DSA_LAUNCH_CHECK("wgmma_loop_kernel");
  };
  const double ops = double(grid) * kWgmmaIters * 2.0 * 64 * 256 * 32;
  KernelTiming t = timer.measure(name, "all", ops * launches, 0, launch);
  t.median_ms /= launches;
  t.min_ms /= launches;
  t.max_ms /= launches;
  t.flops = ops;
  out.timings.push_back(t);
  return true;
}

// The sustained ceiling: the int8 loop on random operands, each sample kSustainedLaunches
// launches back to back (about 0.1 s, long enough for the board's power limit to lower the
// clock). A kernel running tens of milliseconds sees this rate, not the burst of one launch
// (bench/results/h200.md, session 27: about 1750 MHz under the dense kernel, against 1980 in a
// burst; the loop itself held 99 % of its burst rate in run 164).
constexpr int kSustainedLaunches = 64;

}  // namespace

CeilingRun measure_ceilings(int samples) {
  const Device dev = current_device();
  KernelTimer timer(samples);
  CeilingRun out;
  out.timings.push_back(time_hbm_copy(timer, dev));
  out.timings.push_back(time_l2_read(timer, dev));
  time_wgmma<false>(timer, dev, kCeilingInt8Wgmma, out);
  time_wgmma<true>(timer, dev, kCeilingFp8Wgmma, out);
  time_wgmma<false, true>(timer, dev, kCeilingInt8WgmmaSustained, out, kSustainedLaunches);
  return out;
}

}  // namespace dsa::gpu
