// Micro-benchmark: the int8 tensor rate the paged sparse logits kernel can reach with its shape
// (32 heads x a few keys per instruction, keys gathered per row so A or B comes from registers):
//   * mma.sync m16n8k32 s8 (the kernel's instruction today), with 1-8 independent accumulators
//     per warp and 4-16 warps per block;
//   * wgmma m64n32k32 s8 with A (the keys) in registers and B (one row's 32 heads) in shared
//     memory, 1-4 accumulator sets in flight per warpgroup;
//   * wgmma m64n32k32 s8 with both operands in shared memory, as the sparse wgmma kernel runs it
//     (a ring of four 8 KB A tiles, three k-steps into one accumulator and one into another a
//     step), without and with each thread copying its 64 bytes of the tile three steps ahead by
//     cp.async (the kernel's shared-memory writes). At N = 32 an SS instruction reads 3 KB of
//     shared memory for 131072 ops, more bytes per op than any other shape here. Run 112: RS
//     1.92 POPS, SS 1.28 (the shared reads bound it), SS with the copies 0.21 (each step waits for
//     copies issued two steps before: L2 latency, not bandwidth); the sparse wgmma kernel has
//     taken A from registers since.
// Prints TOPS and int8 ops per SM cycle (clock 1980 MHz) for each. Operands are random bytes.
// Build (repo root): nvcc -O3 -I. -gencode arch=compute_90a,code=sm_90a bench/micro/mma_rate.cu
#include <cstdint>
#include <cstdio>

#include "bench/micro/micro_common.cuh"
#include "gpu/common/fp4_mma.cuh"  // mma_s8: the sparse kernels' mma.sync

using dsa::gpu::mma_s8;

constexpr int kIters = 2048;
constexpr int kSms = 132;


template <int kChains>
__global__ void imma_kernel(int* sink) {
  uint32_t a[4];
  for (int i = 0; i < 4; ++i) a[i] = mix32(threadIdx.x * 4 + i + blockIdx.x * 977);
  const uint32_t b0 = mix32(threadIdx.x + 7), b1 = mix32(threadIdx.x + 11);
  int c[kChains][4] = {};
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int k = 0; k < kChains; ++k) mma_s8(c[k], a, b0 + k, b1);
  }
  int s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s += c[k][0] ^ c[k][1] ^ c[k][2] ^ c[k][3];
  if (s == 0x12345678) sink[0] = s;  // keeps the work
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HAVE_WGMMA 1
#endif

// A shared-memory matrix descriptor: 128-byte swizzle, 1024-byte stride between 8-row groups.
__device__ __forceinline__ uint64_t smem_desc(unsigned addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

__device__ __forceinline__ void wgmma_rs(int (&d)[16], const uint32_t (&a)[4], uint64_t db) {
#ifdef HAVE_WGMMA
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
      "%13, %14, %15}, {%16, %17, %18, %19}, %20, 1;\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
#endif
}

template <int kSets>
__global__ void __launch_bounds__(128) wgmma_rs_kernel(int* sink) {
#ifdef HAVE_WGMMA
  __shared__ __align__(1024) uint8_t b[32 * 128];
  for (int i = threadIdx.x; i < 32 * 128 / 4; i += 128) reinterpret_cast<uint32_t*>(b)[i] = mix32(i + blockIdx.x);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint64_t db = smem_desc(unsigned(__cvta_generic_to_shared(b)));
  uint32_t a[4];
  for (int i = 0; i < 4; ++i) a[i] = mix32(threadIdx.x * 4 + i + blockIdx.x * 977);
  int d[kSets][16] = {};
  for (int it = 0; it < kIters; ++it) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int s = 0; s < kSets; ++s) wgmma_rs(d[s], a, db + 2 * k);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  int s = 0;
#pragma unroll
  for (int k = 0; k < kSets; ++k)
#pragma unroll
    for (int i = 0; i < 16; ++i) s ^= d[k][i];
  if (s == 0x12345678) sink[0] = s;
#endif
}

constexpr int kSsTileBytes = 8192;  // A: 64 keys x 128 bytes, the kernel's step tile

// d += A * B, both by descriptor.
__device__ __forceinline__ void wgmma_ss(int (&d)[16], uint64_t da, uint64_t db) {
#ifdef HAVE_WGMMA
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
      "%13, %14, %15}, %16, %17, 1;\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
      : "l"(da), "l"(db));
#endif
}

// src: kSrcWords random uint4 in global memory (L2-resident), the copies' source.
constexpr int kSrcWords = 1 << 20;  // 16 MB

template <bool kCopies>
__global__ void __launch_bounds__(128) wgmma_ss_kernel(const uint4* src, int* sink) {
#ifdef HAVE_WGMMA
  extern __shared__ __align__(1024) uint8_t raw[];
  const unsigned raw_addr = unsigned(__cvta_generic_to_shared(raw));
  uint8_t* base = raw + ((1024 - (raw_addr & 1023)) & 1023);
  uint8_t* b = base;            // B: 32 heads x 128 bytes
  uint8_t* tiles = base + 4096; // A: four step tiles
  for (int i = threadIdx.x; i < (4096 + 4 * kSsTileBytes) / 4; i += 128)
    reinterpret_cast<uint32_t*>(base)[i] = mix32(i + blockIdx.x * 7919);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint64_t db = smem_desc(unsigned(__cvta_generic_to_shared(b)));
  const unsigned tiles_addr = unsigned(__cvta_generic_to_shared(tiles));
  const uint64_t da = smem_desc(tiles_addr);
  int d0[16] = {}, d1[16] = {};
  for (int it = 0; it < kIters; ++it) {
    if (kCopies) {  // this thread's 64 bytes of the tile three steps ahead (the one step it - 1 read)
      const unsigned dst = tiles_addr + unsigned((it + 3) & 3) * kSsTileBytes + threadIdx.x * 64;
      const uint4* s = src + ((unsigned(blockIdx.x) * 4099u + unsigned(it) * 512u + threadIdx.x * 4u) & (kSrcWords - 4));
#pragma unroll
      for (int k = 0; k < 4; ++k)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + 16 * k), "l"(s + k) : "memory");
      asm volatile("cp.async.commit_group;" ::: "memory");
      asm volatile("cp.async.wait_group 2;" ::: "memory");
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    const uint64_t a = da + uint64_t((it & 3) * (kSsTileBytes / 16));
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    wgmma_ss(d0, a, db);
    wgmma_ss(d0, a + 2, db + 2);
    wgmma_ss(d0, a + 4, db + 4);
    wgmma_ss(d1, a + 6, db + 6);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  if (kCopies) asm volatile("cp.async.wait_group 0;" ::: "memory");
  int s = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) s ^= d0[i] ^ d1[i];
  if (s == 0x12345678) sink[0] = s;
#endif
}

__global__ void fill_kernel(uint32_t* p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = mix32(i) | 0x01010101u;
}

void report(const char* what, double ops, double ms) {
  const double tops = ops / (ms * 1e-3) / 1e12;
  printf("%-52s %8.3f ms %7.0f TOPS %6.0f ops/SM-cycle\n", what, ms, tops, ops / (ms * 1e-3) / kSms / 1.98e9);
}

template <int kChains>
void run_imma(int warps, int per_sm, int* sink) {
  const int blocks = kSms * per_sm;
  const double ms = best_ms([&] { imma_kernel<kChains><<<blocks, warps * 32>>>(sink); }, 1);
  char name[96];
  snprintf(name, sizeof name, "mma.sync m16n8k32: %d chains, %d warps x %d blocks/SM", kChains, warps, per_sm);
  report(name, 2.0 * 16 * 8 * 32 * kChains * double(kIters) * warps * blocks, ms);
}

template <int kSets>
void run_wgmma(int per_sm, int* sink) {
  const int blocks = kSms * per_sm;
  const double ms = best_ms([&] { wgmma_rs_kernel<kSets><<<blocks, 128>>>(sink); }, 1);
  char name[96];
  snprintf(name, sizeof name, "wgmma m64n32k32 RS: %d sets, %d warpgroups/SM", kSets, per_sm);
  report(name, 2.0 * 64 * 32 * 32 * 4 * kSets * double(kIters) * blocks, ms);
}

template <bool kCopies>
void run_wgmma_ss(int per_sm, const uint4* src, int* sink) {
  const int blocks = kSms * per_sm;
  const int smem = 4096 + 4 * kSsTileBytes + 1024;
  cudaFuncSetAttribute(wgmma_ss_kernel<kCopies>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  const double ms = best_ms([&] { wgmma_ss_kernel<kCopies><<<blocks, 128, smem>>>(src, sink); }, 1);
  char name[96];
  snprintf(name, sizeof name, "wgmma m64n32k32 SS%s: %d warpgroups/SM", kCopies ? " + cp.async" : "", per_sm);
  report(name, 2.0 * 64 * 32 * 32 * 4 * double(kIters) * blocks, ms);
}

int main() {
  int* sink;
  cudaMalloc(&sink, 4);
  uint4* src;
  cudaMalloc(&src, sizeof(uint4) * kSrcWords);
  fill_kernel<<<264, 256>>>(reinterpret_cast<uint32_t*>(src), 4 * kSrcWords);
  run_imma<1>(8, 2, sink);
  run_imma<2>(8, 2, sink);
  run_imma<4>(8, 2, sink);
  run_imma<8>(8, 2, sink);
  run_imma<2>(16, 1, sink);
  run_imma<4>(16, 1, sink);
  run_imma<4>(4, 4, sink);
  run_imma<8>(16, 2, sink);
  run_wgmma<1>(4, sink);
  run_wgmma<2>(4, sink);
  run_wgmma<4>(4, sink);
  run_wgmma<2>(8, sink);
  run_wgmma<4>(2, sink);
  run_wgmma_ss<false>(4, src, sink);
  run_wgmma_ss<true>(4, src, sink);
  run_wgmma_ss<false>(2, src, sink);
  run_wgmma_ss<true>(2, src, sink);
  return cudaDeviceSynchronize() != cudaSuccess;
}
