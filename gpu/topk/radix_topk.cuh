#pragma once
// Deterministic radix top-k over ragged rows, one thread block per row (device code; included
// by the launchers in gpu/topk and gpu/small_topk).
//
// Keys are unsigned integers ordered like the scores (fp32 bits mapped so that larger score =
// larger key, -0 normalised to +0; level two's bf16 ordering is gpu/small_topk's order_pair). Radix select finds the k-th largest key T; then one
// pass in index order takes every key > T and the first (k - #greater) keys == T: larger score
// first, then smaller index, the reference's tie rule. Output ids come out ascending (index
// order), which is the final ascending write.
#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "gpu/common/order.cuh"

namespace dsa::gpu {

constexpr int kTopkThreads = 512;

// A row with no more than k entries: all of them in index order, then padding (the kernels below
// return right after it). kThreads: the block's size.
template <int kThreads, class Map>
__device__ __forceinline__ void take_all(const Map& map, int row, int n, int k, int32_t pad, int32_t* dst) {
  for (int i = threadIdx.x; i < k; i += kThreads) dst[i] = i < n ? map.id(row, i) : pad;
}

// Src: int len(int row) const; uint32_t key(int row, int i) const;
// Map: int32_t id(int row, int i) const (what is written for index i).
// Output row of block b: out_rows[b] when given, else b; a block whose out_rows entry is no_row
// writes nothing.
template <int kBits, class Src, class Map>
__global__ void __launch_bounds__(kTopkThreads) radix_topk_kernel(Src src, Map map, int k, int32_t pad,
                                                                   int32_t* out, const int32_t* out_rows = nullptr,
                                                                   int32_t no_row = -1) {
  using Scan = cub::BlockScan<int, kTopkThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ int hist[256];
  __shared__ uint32_t sh_prefix;
  __shared__ int sh_remaining;
  const int row = blockIdx.x, tid = threadIdx.x;
  if (out_rows && out_rows[row] == no_row) return;
  const int n = src.len(row);
  int32_t* dst = out + int64_t(out_rows ? out_rows[row] : row) * k;
  if (n <= k) return take_all<kTopkThreads>(map, row, n, k, pad, dst);
  // Radix select of the k-th largest key, 8 bits at a time from the top.
  uint32_t prefix = 0, mask = 0;
  int remaining = k;
  for (int shift = kBits - 8; shift >= 0; shift -= 8) {
    for (int b = tid; b < 256; b += kTopkThreads) hist[b] = 0;
    __syncthreads();
    for (int i = tid; i < n; i += kTopkThreads) {
      const uint32_t key = src.key(row, i);
      // Plain shared atomics: the H200 merges a warp's same-bin increments itself (2.2 cycles a
      // warp atomic whatever the spread; aggregating with __match_any_sync first cost 3-30x
      // that, bench/micro/smem_atomics.cu).
      if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1);
    }
    __syncthreads();
    if (tid < 32) {
      // Digit search in warp 0: the largest bin b whose count from b up reaches `remaining`
      // (bin 0 when none above does). Lane l holds bins 255-8l down to 248-8l; a warp prefix
      // over the lanes' sums finds the lane, a walk over its 8 bins the bin.
      const int lane = tid, top = 255 - 8 * lane;
      int local[8], lane_sum = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        local[j] = hist[top - j];
        lane_sum += local[j];
      }
      int incl = lane_sum;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(0xFFFFFFFFu, incl, o);
        if (lane >= o) incl += v;
      }
      // Bin 0 never counts as "reached" here: like the serial search, it is the fallback.
      const bool reach = lane < 31 ? incl >= remaining : incl - local[7] >= remaining;
      const unsigned ballot = __ballot_sync(0xFFFFFFFFu, reach);
      const int owner = ballot ? __ffs(ballot) - 1 : 31;
      if (lane == owner) {
        int cum = incl - lane_sum, b = 0;
        bool found = false;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (!found && top - j > 0) {
            if (cum + local[j] >= remaining) {
              b = top - j;
              found = true;
            } else {
              cum += local[j];
            }
          }
        }
        sh_prefix = prefix | (uint32_t(b) << shift);
        sh_remaining = remaining - cum;
      }
    }
    __syncthreads();
    prefix = sh_prefix;
    remaining = sh_remaining;
    mask |= 255u << shift;
    __syncthreads();
  }
  // Collect in index order: all keys > T, and the first `remaining` keys == T.
  const uint32_t T = prefix;
  int taken = 0, ties_seen = 0;
  for (int base = 0; base < n && taken < k; base += kTopkThreads) {
    const int i = base + tid;
    const uint32_t key = i < n ? src.key(row, i) : 0u;
    const bool gt = i < n && key > T;
    const bool eq = i < n && key == T;
    if (!__syncthreads_or(gt || eq)) continue;  // most tiles hold nothing to take
    int eq_before, eq_total;
    Scan(scan_storage).ExclusiveSum(eq ? 1 : 0, eq_before, eq_total);
    __syncthreads();
    const bool take = gt || (eq && ties_seen + eq_before < remaining);
    int slot, taken_here;
    Scan(scan_storage).ExclusiveSum(take ? 1 : 0, slot, taken_here);
    __syncthreads();
    if (take) dst[taken + slot] = map.id(row, i);
    taken += taken_here;
    ties_seen += eq_total;
  }
}

}  // namespace dsa::gpu
