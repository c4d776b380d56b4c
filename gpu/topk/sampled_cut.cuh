#pragma once
// Level one by a sampled cut (select_topk_stream_kernel, rows of block keys in its row buffer):
// the radix passes over all 32768 keys of a row cost about 14 instructions a key (run 140's
// profile), most of them for keys far below the cut. Here the row is first cut roughly from a
// sample: lo, the 192nd largest of every 16th column's key, which about 16 * 192 = 3072 keys
// reach (2775-3203 of them on chunk-256k's rows, host analysis). Each thread then marks its
// columns whose key reaches lo with one compare a key (no ordering: for lo above +0 the raw fp32
// bits compare as signed integers in order_f32's order), a block scan counts them, and the marked
// keys go to shared memory in column order. When more than k and at most kSampledCap keys reach
// lo, they hold every key of the row's top-k and every key tied with its k-th (all of them are at
// or above lo), in column order, so the selection over them (select_row, 8 a thread) gives the
// row's picks, ties included, and its k-th key. Otherwise (few or tied keys, a cut at or below
// +0) the row takes the full selection, whose keys the row buffer still holds.
#include <cstdint>

#include "gpu/common/order.cuh"
#include "gpu/topk/select_topk.cuh"

namespace dsa::gpu {

constexpr int kSampleStride = 16;  // every 16th column: 2048 samples of a 32768-key row
constexpr int kSampleRank = 192;   // lo: the 192nd largest sample
constexpr int kSampledPer = 8;     // candidates a thread in the selection over them
constexpr int kSampledCap = kSampledPer * kSelectThreads;
static_assert(kSampleStride * kSelectThreads * 4 == 32768, "four samples a thread cover a row of 32768 keys");

// The keys that reach lo (ordered) and their columns, in column order.
struct SampledSmem {
  alignas(16) uint32_t key[kSampledCap];
  uint16_t col[kSampledCap];
};

// The selection's map over the candidates: candidate i is column col[i].
struct CandidateColumns {
  static constexpr bool kStaged = false;
  const uint16_t* col;
  __device__ int32_t id(int, int i, const int32_t*) const { return col[i]; }
};

// lo of a row of n keys (fp32) in buf: the kSampleRank-th largest ordered key of columns
// 16 i + (t % 16) (thread t, i = t, t + 512, ...; a column past n counts as 0, the lowest).
__device__ __forceinline__ uint32_t sampled_lo(const float* buf, int n, SelectSmem& sm) {
  uint32_t s[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int col = (threadIdx.x + kSelectThreads * i) * kSampleStride + (threadIdx.x & (kSampleStride - 1));
    s[i] = col < n ? order_f32(buf[col]) : 0u;
  }
  const Cut cut = find_cut<32>(s, kSampleRank, sm);
  return cut.exact ? cut.T + 1 : cut.T;
}

// Bit c: column first + c (c < 64, first + c < n) has a key that reaches lo (> order_f32(+0)).
// The 16-byte reads start at a lane-dependent chunk as in BlockKeyRows::keys_from (banks).
__device__ __forceinline__ uint64_t reaching(const float* buf, int first, int n, uint32_t lo) {
  const int lane = threadIdx.x & 31;
  const int4* p = reinterpret_cast<const int4*>(buf + first);
  // A positive lo: key >= lo in order_f32's order iff the key's bits, as a signed integer, are
  // >= lo's float's (negatives and -0 are negative integers, +0 is 0, a positive NaN above all).
  const int lo_bits = int(lo ^ 0x80000000u);
  uint32_t m[2] = {0u, 0u};  // register order: bit 4q + e is chunk (q + lane) % 16, element e
#pragma unroll
  for (int q = 0; q < 16; ++q) {
    const int4 v = p[(q + lane) & 15];
    const uint32_t bits = uint32_t(v.x >= lo_bits) | uint32_t(v.y >= lo_bits) << 1 | uint32_t(v.z >= lo_bits) << 2 |
                          uint32_t(v.w >= lo_bits) << 3;
    m[q / 8] |= bits << (4 * (q % 8));
  }
  uint64_t cols = rotate_bits(uint64_t(m[1]) << 32 | m[0], (4 * lane) & 63);  // column order
  const int valid = min(max(n - first, 0), 64);
  if (valid < 64) cols &= (uint64_t(1) << valid) - 1;
  return cols;
}

// The row's selection through the sampled cut (n > k keys in buf, thread t's columns 64 t..):
// false, with nothing written, when the keys that reach lo do not hold the top-k (at most k of
// them) or are too many, or lo is not above +0. Else the candidates are in cs, in column order,
// the block has passed a barrier after the last read of buf, and their count is *count.
__device__ __forceinline__ bool sampled_candidates(const float* buf, int n, int k, SelectSmem& sm, SampledSmem& cs,
                                                   int* count) {
  const uint32_t lo = sampled_lo(buf, n, sm);
  if (lo <= 0x80000000u) return false;  // block-uniform: find_cut's result is shared
  const int first = threadIdx.x * 64;
  uint64_t m = reaching(buf, first, n, lo);
  int before, total;
  cub::BlockScan<int, kSelectThreads>(sm.scan).ExclusiveSum(__popcll(m), before, total);
  if (total <= k || total > kSampledCap) return false;
  for (; m != 0; m &= m - 1) {
    const int c = first + __ffsll(static_cast<long long>(m)) - 1;
    cs.key[before] = order_f32(buf[c]);
    cs.col[before] = uint16_t(c);
    ++before;
  }
  *count = total;
  __syncthreads();
  return true;
}

// Thread t's candidates 8 t .. 8 t + 7 (0 past count), for select_row<32, kSampledPer>.
__device__ __forceinline__ void candidate_keys(const SampledSmem& cs, int count, uint32_t (&key)[kSampledPer]) {
  const int first = threadIdx.x * kSampledPer;
  const uint4 a = reinterpret_cast<const uint4*>(cs.key + first)[0];
  const uint4 b = reinterpret_cast<const uint4*>(cs.key + first)[1];
  const uint32_t v[kSampledPer] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
  for (int j = 0; j < kSampledPer; ++j) key[j] = first + j < count ? v[j] : 0u;
}

}  // namespace dsa::gpu
