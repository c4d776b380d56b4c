#pragma once
// Top-k of rows that fit in registers (n <= kPer * 512), one thread block per row: thread t holds
// the keys of indices kPer t .. kPer t + kPer - 1. A bisection over the key space finds the k-th
// largest key T (each round: a compare-count per thread, a warp sum, one barrier; no atomics, so
// no contention when scores crowd into few values). Then one block scan places every thread's
// picks: all keys > T and the first k - #greater keys == T in index order (the reference's tie
// rule), written in index order (the ascending write). Same keys and output as
// radix_topk_kernel, which stays for longer rows. Keys are ordered integers (order_f32,
// order_bf16 in radix_topk.cuh).
#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "gpu/topk/radix_topk.cuh"

namespace dsa::gpu {

constexpr int kSelectThreads = 512;

// Src: int len(int row) const; void load(int row, int first, int n, uint32_t (&key)[kPer]) const
// (keys of indices first.., 0 from n on); Map: int32_t id(int row, int i) const.
template <int kBits, int kPer, class Src, class Map>
__global__ void __launch_bounds__(kSelectThreads) select_topk_kernel(Src src, Map map, int k, int32_t pad,
                                                                      int32_t* out) {
  using Scan = cub::BlockScan<int, kSelectThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ int sums[2][kSelectThreads / 32];
  const int row = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int n = src.len(row);
  int32_t* dst = out + int64_t(row) * k;
  if (n <= k) return take_all<kSelectThreads>(map, row, n, k, pad, dst);
  const int first = tid * kPer;
  uint32_t key[kPer];
  src.load(row, first, n, key);
  // T = the largest t with #(key >= t) >= k; #(key >= 0) = n >= k. Keys past n are 0 and never
  // counted (every probe is >= 1).
  uint32_t lo = 0, hi = kBits == 32 ? 0xFFFFFFFFu : (1u << kBits) - 1;
  for (int round = 0; lo < hi; ++round) {
    const uint32_t mid = lo + ((hi - lo) >> 1) + 1;
    int c = 0;
#pragma unroll
    for (int j = 0; j < kPer; ++j) c += key[j] >= mid ? 1 : 0;
    c = __reduce_add_sync(0xFFFFFFFFu, c);
    if (lane == 0) sums[round & 1][warp] = c;
    __syncthreads();  // two buffers: the next round writes the other one
    int total = 0;
#pragma unroll
    for (int w = 0; w < kSelectThreads / 32; ++w) total += sums[round & 1][w];
    if (total >= k)
      lo = mid;
    else
      hi = mid - 1;
  }
  const uint32_t T = lo;
  int gt = 0, eq = 0;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    gt += key[j] > T ? 1 : 0;
    eq += (key[j] == T && first + j < n) ? 1 : 0;
  }
  // One scan of both counts (each total <= n <= 32768 fits 16 bits).
  int before, total;
  Scan(scan_storage).ExclusiveSum((gt << 16) | eq, before, total);
  const int remaining = k - (total >> 16);  // ties to take, in index order
  int slot = (before >> 16) + min(before & 0xFFFF, remaining), tie = before & 0xFFFF;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (key[j] > T) {
      dst[slot++] = map.id(row, first + j);
    } else if (key[j] == T && first + j < n) {
      if (tie < remaining) dst[slot++] = map.id(row, first + j);
      ++tie;
    }
  }
}

}  // namespace dsa::gpu
