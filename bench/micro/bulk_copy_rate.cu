// Micro-benchmark: rows streamed into shared memory by bulk copies (cp.async.bulk + mbarrier),
// as level one's stream kernel does (gpu/topk/select_topk.cuh): one block an SM copies its next
// row while it "selects" the current one (a spin of W cycles standing in for the selection).
// Level one's sampled cut (run 167) made the row's work after the copy's start smaller and the
// work before it larger, and got slower: this measures whether the copy of one 128 KB row an SM
// sets the pace, and what more bytes in flight (two half rows) or other copy sizes would give.
// Prints, per configuration, the time a row takes on each SM and the aggregate rate.
// Build and run on the device: nvcc -std=c++17 -O3 -arch=sm_90a -I. bench/micro/bulk_copy_rate.cu
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "bench/micro/micro_common.cuh"
#include "gpu/common/mbarrier.cuh"

using namespace dsa::gpu;

constexpr int kThreads = 512;
constexpr int kMaxStages = 4;

// Rows of row_bytes from src, row r = blockIdx.x + i * gridDim.x, through `stages` buffers of
// row_bytes each, each row in bulk copies of `chunk` bytes. After a row lands, every thread reads
// one word of it, the block passes a barrier, thread 0 starts the copy `stages` rows ahead, and
// the block spins for `work` cycles.
__global__ void __launch_bounds__(kThreads, 1)
    stream_rows(const char* src, int nrows, unsigned row_bytes, unsigned chunk, int stages, long long work,
                unsigned* sink) {
  extern __shared__ __align__(128) unsigned char buf[];
  __shared__ uint64_t bar[kMaxStages];
  auto fetch = [&](int r, int s) {
    mbar_expect(&bar[s], row_bytes);
    for (unsigned off = 0; off < row_bytes; off += chunk)
      bulk_copy(buf + size_t(s) * row_bytes + off, src + size_t(r) * row_bytes + off, min(chunk, row_bytes - off),
                &bar[s]);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) mbar_init(&bar[s], 1);
    for (int s = 0; s < stages; ++s)
      if (blockIdx.x + s * gridDim.x < nrows) fetch(blockIdx.x + s * gridDim.x, s);
  }
  __syncthreads();
  unsigned acc = 0;
  int i = 0;
  for (int r = blockIdx.x; r < nrows; r += gridDim.x, ++i) {
    const int s = i % stages;
    mbar_wait(&bar[s], unsigned(i / stages) & 1u);
    const unsigned words = row_bytes / 4;
    acc += reinterpret_cast<const unsigned*>(buf + size_t(s) * row_bytes)[(threadIdx.x * 61u) % words];
    __syncthreads();  // every thread is done with buffer s
    const int next = r + stages * gridDim.x;
    if (threadIdx.x == 0 && next < nrows) fetch(next, s);
    const long long t0 = clock64();
    while (clock64() - t0 < work) acc = acc * 1664525u + 1013904223u;
  }
  atomicAdd(sink, acc);
}

__global__ void fill(unsigned* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = mix32(uint32_t(i) * 2654435761u + 12345u) | 1u;  // never zero
}

int main() {
  int dev = 0, sms = 0, clock_khz = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  const size_t total = size_t(1) << 30;  // 1 GiB of rows: far more than L2, as level one's keys
  char* src = nullptr;
  unsigned* sink = nullptr;
  cudaMalloc(&src, total);
  cudaMalloc(&sink, sizeof(unsigned));
  fill<<<1024, 256>>>(reinterpret_cast<unsigned*>(src), total / 4);
  // The largest configuration below: three 64 KB half rows.
  if (cudaFuncSetAttribute(stream_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, 3 * 65536) != cudaSuccess) {
    std::printf("cannot give stream_rows 192 KB of shared memory\n");
    return 1;
  }
  struct Config {
    unsigned row_bytes, chunk;
    int stages;
  };
  const std::vector<Config> configs = {
      {131072, 16384, 1},  // level one today: a 128 KB row, 16 KB copies, one row in flight
      {131072, 4096, 1},   {131072, 65536, 1}, {131072, 131072, 1},
      {65536, 16384, 1},   {65536, 16384, 2},  // half rows: one or two in flight
      {65536, 16384, 3},   {32768, 16384, 4},
  };
  const long long works[] = {0, 4000, 10000, 20000};  // cycles of "selection" a row
  std::printf("%-10s %-8s %-6s %-8s %-6s %10s %12s %10s\n", "row_bytes", "chunk", "stages", "work", "grid",
              "ms", "us a row/SM", "GB/s");
  for (const Config& c : configs) {
    const int nrows = int(total / c.row_bytes);
    for (int grid : {1, sms}) {
      for (long long w : works) {
        if (grid == 1 && w != 0) continue;  // one SM alone: the copy's own rate
        const int rows = grid == 1 ? 64 : nrows;
        auto launch = [&] {
          stream_rows<<<grid, kThreads, size_t(c.stages) * c.row_bytes>>>(src, rows, c.row_bytes, c.chunk, c.stages,
                                                                         w, sink);
        };
        const float ms = best_ms(launch, 5);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) {
          std::printf("%-10u %-8u %-6d %-8lld %-6d error: %s\n", c.row_bytes, c.chunk, c.stages, w, grid,
                      cudaGetErrorString(err));
          continue;
        }
        const double per_sm_rows = double(rows) / grid;
        std::printf("%-10u %-8u %-6d %-8lld %-6d %10.3f %12.2f %10.1f\n", c.row_bytes, c.chunk, c.stages, w, grid, ms,
                    1000.0 * ms / per_sm_rows, double(rows) * c.row_bytes / (ms * 1e6));
      }
    }
  }
  std::printf("SM clock %d MHz: 10000 cycles = %.2f us\n", clock_khz / 1000, 10000.0 / (clock_khz / 1000.0));
  cudaFree(src);
  cudaFree(sink);
  return 0;
}
