// Micro-benchmark: level one (the top 2048 of a row's 32768 block keys) with two rows an SM in
// flight, against today's stream kernel (gpu/topk/select_topk.cuh), on the same keys.
//
// Why: today's kernel issues about 28400 warp instructions a row (run 140), which four
// schedulers could issue in about 7100 cycles, yet a row takes about 24000 (runs 140 and 169):
// its one 512-thread block an SM waits at the barriers between its passes with nothing else to
// run. A second row in flight needs registers: 32768 keys as 32-bit integers fill half the
// register file. As 16-bit prefixes of the ordered keys, a row takes 64 KB of shared memory.
//
//   two_rows: blocks of 512 threads, two an SM (64 registers a thread), persistent. A thread
//     loads its 64 keys (columns 64t..64t+63) straight from memory, keeps their 16-bit ordered
//     prefixes packed two a word in shared memory (64 KB a row, read back 16 bytes at a time), counts the prefixes' top 11 bits, then the low 5 bits of
//     those in the k-th key's bin: P, the k-th key's prefix, with G keys above it and E at it.
//     Every key above P is a pick. If G + E > k, the keys at P are re-read as 32-bit keys into
//     shared memory and the k - G largest of them taken (ties to the smaller column); rows with
//     more than kCandCap such keys are flagged (the real kernel would send them to today's).
//     The picks are written in column order, as today's kernel writes them.
//   stream: today's level-one kernel (BlockKeyRows, Identity map, no report).
// The outputs of the two are compared row by row (every pick, in order) before they are timed.
//
// Keys: 16384 rows x 32768 fp32 block keys (a chunk-256k source layer), each the maximum of 8
// draws of a sum of four uniforms, the last block +inf (the newest block), a few -0 and +0.
// Build and run on the device (repo root):
//   nvcc -std=c++17 -O3 -I. -Iinclude --expt-relaxed-constexpr -gencode arch=compute_90a,code=sm_90a \
//     bench/micro/level_one_rate.cu -o /tmp/lor && /tmp/lor
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include <cub/block/block_scan.cuh>

#include "bench/micro/micro_common.cuh"
#include "gpu/common/order.cuh"
#include "gpu/topk/id_maps.cuh"
#include "gpu/topk/select_topk.cuh"
#include "gpu/topk/topk_rows.cuh"

using namespace dsa::gpu;

constexpr int kRows = 16384;
constexpr int kKeys = 32768;     // block keys a row (262144 positions)
constexpr int kK = 2048;         // picks a row
constexpr int kThreads = 512;  // two blocks an SM: 1024 threads, 64 registers each
constexpr int kPer = kKeys / kThreads;  // 64 keys a thread
constexpr int kBinsPer = 2048 / kThreads;
constexpr int kCandCap = 1024;   // keys at P a row can refine

struct TwoRowSmem {
  // The row's 16-bit prefixes, two a word: thread t's keys 8c..8c+7 in pre[c][t] (each thread
  // reads only its own, 16 bytes a read, neighbouring threads on neighbouring banks). 64 KB: two
  // rows an SM hold their keys here, not in registers (a row's 32-bit keys would fill half the
  // register file, its prefixes a quarter, and two rows' prefixes leave 32 registers a thread).
  uint4 pre[kPer / 8][kThreads];
  cub::BlockScan<int, kThreads>::TempStorage scan;
  alignas(16) int hist[2048];
  uint32_t at_p_picked[kKeys / 32];  // columns at P that are picks
  uint32_t cand_key[kCandCap];
  int cand_col[kCandCap];
  int ncand;
  int found_bin, found_above;  // a pass's answer
};

// The bin of the `need`-th largest count among `bins` bins (bins <= 2048, hist[b] the count of
// bin b), and how many counted keys lie above it: a block scan over bins from the top.
__device__ __forceinline__ void find_bin(TwoRowSmem& sm, int bins, int need) {
  const int tid = threadIdx.x;
  int c[kBinsPer], sum = 0;
#pragma unroll
  for (int i = 0; i < kBinsPer; ++i) {
    const int b = bins - 1 - (kBinsPer * tid + i);
    c[i] = b >= 0 ? sm.hist[b] : 0;
    sum += c[i];
  }
  int above;
  cub::BlockScan<int, kThreads>(sm.scan).ExclusiveSum(sum, above);
  if (above < need && above + sum >= need) {
    int cum = above;
#pragma unroll
    for (int i = 0; i < kBinsPer; ++i) {
      if (cum + c[i] >= need) {
        sm.found_bin = bins - 1 - (kBinsPer * tid + i);
        sm.found_above = cum;
        break;
      }
      cum += c[i];
    }
  }
  __syncthreads();
}

// f(j, p) for each of this thread's keys j = 0..kPer-1 (column first + j) and its prefix p.
template <class F>
__device__ __forceinline__ void for_each_prefix(const TwoRowSmem& sm, F f) {
#pragma unroll
  for (int c = 0; c < kPer / 8; ++c) {
    const uint4 v = sm.pre[c][threadIdx.x];
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 8; ++e) f(8 * c + e, (w[e >> 1] >> (16 * (e & 1))) & 0xFFFFu);
  }
}

__global__ void __launch_bounds__(kThreads, 2)
    two_rows_kernel(const float* keys, int nrows, int32_t* out, int* flagged) {
  extern __shared__ __align__(16) unsigned char two_rows_smem[];  // 88 KB: dynamic
  TwoRowSmem& sm = *reinterpret_cast<TwoRowSmem*>(two_rows_smem);
  const int tid = threadIdx.x, first = kPer * tid;
  for (int row = blockIdx.x; row < nrows; row += gridDim.x) {
    const float* src = keys + int64_t(row) * kKeys + first;
#pragma unroll
    for (int c = 0; c < kPer / 8; ++c) {
      const float4 v0 = reinterpret_cast<const float4*>(src)[2 * c];
      const float4 v1 = reinterpret_cast<const float4*>(src)[2 * c + 1];
      sm.pre[c][tid] = make_uint4((order_f32(v0.x) >> 16) | (order_f32(v0.y) & 0xFFFF0000u),
                                  (order_f32(v0.z) >> 16) | (order_f32(v0.w) & 0xFFFF0000u),
                                  (order_f32(v1.x) >> 16) | (order_f32(v1.y) & 0xFFFF0000u),
                                  (order_f32(v1.z) >> 16) | (order_f32(v1.w) & 0xFFFF0000u));
    }
    // Pass 1: the prefixes' top 11 bits.
    reinterpret_cast<int4*>(sm.hist)[tid] = make_int4(0, 0, 0, 0);
    if (tid == 0) sm.ncand = 0;
    for (int i = tid; i < kKeys / 32; i += kThreads) sm.at_p_picked[i] = 0;
    __syncthreads();
    for_each_prefix(sm, [&](int, uint32_t p) { atomicAdd(&sm.hist[p >> 5], 1); });
    __syncthreads();
    find_bin(sm, 2048, kK);
    const uint32_t b1 = uint32_t(sm.found_bin);
    const int above1 = sm.found_above;
    // Pass 2: the low 5 bits of the prefixes in b1.
    if (tid < 32) sm.hist[tid] = 0;
    __syncthreads();
    for_each_prefix(sm, [&](int, uint32_t p) {
      if ((p >> 5) == b1) atomicAdd(&sm.hist[p & 31], 1);
    });
    __syncthreads();
    find_bin(sm, 32, kK - above1);
    const uint32_t P = (b1 << 5) | uint32_t(sm.found_bin);
    const int G = above1 + sm.found_above, E = sm.hist[sm.found_bin];
    const int need = kK - G;  // keys at P to take, 1..E
    uint64_t above = 0, at_p = 0;  // bit j: column first + j is above P / at P
    for_each_prefix(sm, [&](int j, uint32_t p) {
      above |= uint64_t(p > P) << j;
      at_p |= uint64_t(p == P) << j;
    });
    uint64_t take = above | at_p;
    if (need < E) {
      // Refine: the keys at P as 32-bit keys, the `need` largest (ties: the smaller column).
      for (uint64_t m = at_p; m != 0; m &= m - 1) {
        const int j = __ffsll(m) - 1;
        const int slot = atomicAdd(&sm.ncand, 1);
        if (slot < kCandCap) {
          sm.cand_key[slot] = order_f32(src[j]);
          sm.cand_col[slot] = first + j;
        }
      }
      __syncthreads();
      const int n = min(sm.ncand, kCandCap);
      if (sm.ncand > kCandCap && tid == 0) atomicAdd(flagged, 1);
      for (int i = tid; i < n; i += kThreads) {
        const uint32_t ki = sm.cand_key[i];
        const int ci = sm.cand_col[i];
        int rank = 0;
        for (int c = 0; c < n; ++c) {
          const uint32_t kc = sm.cand_key[c];
          rank += kc > ki || (kc == ki && sm.cand_col[c] < ci);
        }
        if (rank < need) atomicOr(&sm.at_p_picked[ci >> 5], 1u << (ci & 31));
      }
      __syncthreads();
      take = above | (at_p & ((uint64_t(sm.at_p_picked[(first >> 5) + 1]) << 32) | sm.at_p_picked[first >> 5]));
    }
    // Placement: picks in column order.
    int slot;
    cub::BlockScan<int, kThreads>(sm.scan).ExclusiveSum(__popcll(take), slot);
    int32_t* dst = out + int64_t(row) * kK;
    for (uint64_t m = take; m != 0; m &= m - 1) dst[slot++] = first + __ffsll(m) - 1;
    __syncthreads();  // sm is reused by the next row
  }
}

__global__ void fill_keys(float* keys, int nrows) {
  const size_t n = size_t(nrows) * kKeys;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float best = -INFINITY;
    for (int d = 0; d < 8; ++d) {  // a block key: the maximum of 8 scores
      float s = 0;
      for (int u = 0; u < 4; ++u) s += float(mix32(uint32_t(i * 32 + d * 4 + u)) >> 8) * 0x1p-24f;
      best = fmaxf(best, (s - 2.0f) * 3.0f);
    }
    const uint32_t h = mix32(uint32_t(i) ^ 0x9E3779B9u);
    if (h % 4096 == 0) best = (h & 0x10000u) ? -0.0f : 0.0f;
    keys[i] = i % kKeys == kKeys - 1 ? INFINITY : best;
  }
}

__global__ void fill_lengths(int32_t* L, int nrows) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nrows) L[i] = kKeys * 8;
}

int main() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  float* keys = nullptr;
  int32_t *L = nullptr, *a = nullptr, *b = nullptr;
  int* flagged = nullptr;
  cudaMalloc(&keys, size_t(kRows) * kKeys * sizeof(float));
  cudaMalloc(&L, kRows * sizeof(int32_t));
  cudaMalloc(&a, size_t(kRows) * kK * sizeof(int32_t));
  cudaMalloc(&b, size_t(kRows) * kK * sizeof(int32_t));
  cudaMalloc(&flagged, sizeof(int));
  fill_keys<<<4096, 256>>>(keys, kRows);
  fill_lengths<<<(kRows + 255) / 256, 256>>>(L, kRows);
  const BlockKeyRows src{keys, kKeys, L};
  auto stream_kernel = select_topk_stream_kernel<32, BlockKeyRows::kPer, 1, BlockKeyRows, Identity, NoKth>;
  cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, BlockKeyRows::kBufferBytes);
  const auto stream = [&] {
    stream_kernel<<<sms, kSelectThreads, BlockKeyRows::kBufferBytes>>>(src, Identity{}, NoKth{}, kRows, kK, -1, a);
  };
  cudaFuncSetAttribute(two_rows_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(TwoRowSmem)));
  const auto two = [&] { two_rows_kernel<<<2 * sms, kThreads, sizeof(TwoRowSmem)>>>(keys, kRows, b, flagged); };
  cudaMemset(flagged, 0, sizeof(int));
  stream();
  two();
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  std::vector<int32_t> ha(size_t(kRows) * kK), hb(ha.size());
  cudaMemcpy(ha.data(), a, ha.size() * sizeof(int32_t), cudaMemcpyDeviceToHost);
  cudaMemcpy(hb.data(), b, hb.size() * sizeof(int32_t), cudaMemcpyDeviceToHost);
  int hflag = 0;
  cudaMemcpy(&hflag, flagged, sizeof(int), cudaMemcpyDeviceToHost);
  long long differ = 0, first_row = -1, first_col = -1;
  for (size_t i = 0; i < ha.size(); ++i)
    if (ha[i] != hb[i]) {
      if (differ++ == 0) first_row = static_cast<long long>(i / kK), first_col = static_cast<long long>(i % kK);
    }
  std::printf("two_rows against stream: %lld of %zu picks differ", differ, ha.size());
  if (differ) std::printf(" (first: row %lld, pick %lld: %d against %d)", first_row, first_col,
                          hb[size_t(first_row) * kK + size_t(first_col)], ha[size_t(first_row) * kK + size_t(first_col)]);
  std::printf("; rows flagged (more than %d keys at P): %d\n", kCandCap, hflag);
  const float ts = best_ms(stream, 5), tt = best_ms(two, 5);
  err = cudaDeviceSynchronize();
  std::printf("%d SMs, %d rows of %d keys, top %d: stream %.3f ms, two_rows %.3f ms (%s)\n", sms, kRows, kKeys, kK, ts,
              tt, cudaGetErrorString(err));
  return 0;
}
