// Micro-benchmark: shared-memory atomicAdd into a histogram, as a radix top-k's first pass does,
// under the address patterns real score rows give (many keys of a warp in one bin). Prints
// cycles per warp-wide atomic for each pattern. Build: nvcc -O3 -arch=sm_90a smem_atomics.cu
#include <cstdio>
#include <cstdint>

constexpr int kThreads = 512, kIters = 4096, kBins = 2048;

// distinct: the number of different bins among a warp's 32 lanes (1 = all lanes one bin).
template <bool kAggregate>
__global__ void hist_kernel(int distinct, int* out, long long* cycles) {
  __shared__ int hist[kBins];
  for (int b = threadIdx.x; b < kBins; b += kThreads) hist[b] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t x = 12345u + threadIdx.x * 7919u + blockIdx.x;
  const long long t0 = clock64();
  for (int i = 0; i < kIters; ++i) {
    x = x * 1664525u + 1013904223u;
    // bin: lane % distinct spread over the warp's region, moved each iteration
    const int bin = ((lane % distinct) * 37 + warp * 131 + (i & 63) * 17) & (kBins - 1);
    if (kAggregate) {
      const unsigned peers = __match_any_sync(0xFFFFFFFFu, bin);
      if ((__ffs(peers) - 1) == lane) atomicAdd(&hist[bin], __popc(peers));
    } else {
      atomicAdd(&hist[bin], 1);
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  int s = 0;
  for (int b = threadIdx.x; b < kBins; b += kThreads) s += hist[b];
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  atomicAdd(out, s);
}

// Counting by compares (the bisection's inner loop): 64 keys in registers against a probe.
__global__ void count_kernel(int* out, long long* cycles) {
  uint32_t key[64];
  for (int j = 0; j < 64; ++j) key[j] = (threadIdx.x * 64 + j) * 2654435761u;
  __shared__ int sums[2][16];
  const long long t0 = clock64();
  uint32_t lo = 0, hi = 0xFFFFFFFFu;
  for (int round = 0; lo < hi; ++round) {
    const uint32_t mid = lo + ((hi - lo) >> 1) + 1;
    int c = 0;
#pragma unroll
    for (int j = 0; j < 64; ++j) c += key[j] >= mid ? 1 : 0;
    c = __reduce_add_sync(0xFFFFFFFFu, c);
    if ((threadIdx.x & 31) == 0) sums[round & 1][threadIdx.x >> 5] = c;
    __syncthreads();
    int total = 0;
#pragma unroll
    for (int w = 0; w < 16; ++w) total += sums[round & 1][w];
    if (total >= 2048) lo = mid; else hi = mid - 1;
  }
  const long long t1 = clock64();
  if (threadIdx.x == 0) { cycles[blockIdx.x] = t1 - t0; atomicAdd(out, int(lo & 1)); }
}

int main() {
  int* out;
  long long* cyc;
  const int blocks = 132 * 2;
  cudaMalloc(&out, 4);
  cudaMalloc(&cyc, blocks * 8);
  long long h[264];
  const int pats[] = {32, 16, 8, 4, 2, 1};
  for (int agg = 0; agg < 2; ++agg)
    for (int d : pats) {
      for (int rep = 0; rep < 2; ++rep) {
        cudaEvent_t a, b;
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        cudaEventRecord(a);
        if (agg) hist_kernel<true><<<blocks, kThreads>>>(d, out, cyc);
        else hist_kernel<false><<<blocks, kThreads>>>(d, out, cyc);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        cudaMemcpy(h, cyc, blocks * 8, cudaMemcpyDeviceToHost);
        if (rep == 1) {
          const double warp_atomics_per_sm = 2.0 * 16 * kIters;  // two blocks per SM
          printf("atomics %-10s distinct bins per warp %2d: %.3f ms, %.2f SM cycles per warp atomic "
                 "(block cycles %.0f)\n",
                 agg ? "match_any" : "plain", d, ms, ms * 1e-3 * 1.98e9 / warp_atomics_per_sm, double(h[0]));
        }
      }
    }
  for (int rep = 0; rep < 2; ++rep) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a);
    count_kernel<<<blocks, kThreads>>>(out, cyc);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    cudaMemcpy(h, cyc, blocks * 8, cudaMemcpyDeviceToHost);
    if (rep == 1) printf("bisection 32 rounds x 64 keys/thread, 512 threads: %.3f ms, block cycles %.0f (%.0f per round)\n", ms, double(h[0]), double(h[0]) / 32);
  }
  return cudaDeviceSynchronize() != cudaSuccess;
}
