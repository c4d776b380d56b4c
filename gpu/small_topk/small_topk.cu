// Level two's top-k: one table row of bf16 candidate scores a block of 256 threads, the row in
// shared memory.
//
// Why this shape: the row's selection is a short chain of block-wide steps (the row's largest
// key, a histogram, the bin of the k-th key, a scan of each thread's picks), and a block spends
// most of its time waiting at the barriers between them (run 126's profile of the register-
// resident kernel this replaced, 512 threads and two blocks an SM: barrier 29 % of the stalls,
// issue slots 27 % busy). With the row in shared memory a block needs few registers, so five rows
// are selected at once on an SM (42 KB each), and one row's bulk copy (cp.async.bulk, no
// registers) lands while the others compute.
//
// The selection: in the sparse path's rows the k-th key lies 49-120 values under the row's
// largest (run 125's host analysis of chunk-256k), so one histogram of the kBins (256) values
// under the largest finds the k-th key T at full resolution. When the largest score is positive
// and T lies in that window, the row's bf16 bits are read as they are, as signed 16-bit integers
// (the order of positive values; every negative value and -0 falls below the window): no pass
// orders the row (run 165: 3 % faster). Other rows are ordered in place (order_pair's 16-bit
// integers, 0 past the row's end: no value orders to 0) and counted again in the window under
// the largest ordered key, then, where T lies lower, by two 8-bit digit passes. The picks are
// the keys > T and the first k - #(> T) keys == T in column order (the reference's tie rule),
// written in column order through the page transform.
#include <cstdint>
#include <type_traits>

#include "core/constants.hpp"
#include "gpu/common/check.cuh"
#include "gpu/common/mbarrier.cuh"
#include "gpu/small_topk/small_topk.cuh"
#include "gpu/topk/id_maps.cuh"
#include "gpu/topk/radix_topk.cuh"
#include "gpu/topk/select_topk.cuh"

namespace dsa::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kChunks = kCandidateWidth / 8;  // 16-byte chunks of a row
constexpr int kPer = kChunks / kThreads;      // chunks a thread: columns 64 t .. 64 t + 63
constexpr int kBins = 256;                    // the window's values, and a digit's
static_assert(kPer == 8 && kBins == kThreads, "eight chunks (a 64-bit pick mask) and one bin a thread");

struct RowSmem {
  uint4 keys[kChunks];         // the row's bf16 scores as copied, then their ordered keys
  int32_t table[kTopkBlocks];  // the row's blocks: column c is position table[c / 8] * 8 + c % 8
  // under[3], bin -1 of hist: the window's count of the keys under it, never read.
  alignas(16) int under[4];
  int hist[kBins + 4];
  uint32_t warp_value[kWarps];
  uint32_t found_bin;  // find_bin's answer: the bin, or kBins when the counts fall short
  int found_above;     // how many counted keys lie in the bins above it
  uint64_t bar;
};

// Chunk j of thread t: the thread's eight chunks in a rotated order, so the eight threads of a
// 16-byte shared access phase read eight different bank groups.
__device__ __forceinline__ int chunk_of(int j) { return kPer * threadIdx.x + ((j + threadIdx.x) & (kPer - 1)); }

__device__ __forceinline__ uint32_t max_u16x2(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("max.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ uint32_t max_s16x2(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("max.s16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
// A bf16's bits as a signed 16-bit integer order every positive value (NaN above +inf) as the
// reference does and put every negative value and -0 below +0; flipping both sign bits turns
// that order into the unsigned one pick_masks compares in.
constexpr uint32_t kSignBits = 0x80008000u;

// Thread 0 starts the copies of the row's full chunks and of its table's used entries.
__device__ __forceinline__ void fetch_row(RowSmem& sm, const uint16_t* scores, const int32_t* blocks, int n) {
  const unsigned key_bytes = unsigned(n / 8) * 16u;
  const unsigned table_bytes = unsigned((n + kBlockSize - 1) / kBlockSize + 3) / 4u * 16u;
  mbar_expect(&sm.bar, key_bytes + table_bytes);
  for (unsigned off = 0; off < key_bytes; off += kBulkChunk)
    bulk_copy(reinterpret_cast<char*>(sm.keys) + off, reinterpret_cast<const char*>(scores) + off,
              min(kBulkChunk, key_bytes - off), &sm.bar);
  bulk_copy(sm.table, blocks, table_bytes, &sm.bar);
}

// Both bf16 halves of w as ordered 16-bit integers in four instructions (order_bf16x2 takes
// seven; run 135's profile: the ordering pass was 17 % of the kernel's instructions): a positive
// half (+0 too) gets its sign bit set, a negative half becomes 0x10000 minus its bits. So -0
// orders as +0 (the reference ranks them equal), and no value orders to 0, the padding's key.
__device__ __forceinline__ uint32_t order_pair(uint32_t w) {
  uint32_t neg;  // 0xFFFF in each half whose sign is set: prmt replicates bytes 1 and 3's sign bits
  asm("prmt.b32 %0, %1, 0, 0xBB99;" : "=r"(neg) : "r"(w));
  return (w ^ (neg | 0x80008000u)) + (neg & 0x00010001u);  // a negative half's +1 never carries
}

// The ordered keys of chunk c (n: the row's length; the copy holds chunks below n / 8).
__device__ __forceinline__ uint4 ordered_chunk(const RowSmem& sm, const uint16_t* scores, int c, int n) {
  if (8 * c + 8 <= n) {
    const uint4 v = sm.keys[c];
    return make_uint4(order_pair(v.x), order_pair(v.y), order_pair(v.z), order_pair(v.w));
  }
  uint32_t w[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int col = 8 * c + 2 * q;
    const uint32_t lo = col < n ? order_pair(scores[col]) : 0u;
    const uint32_t hi = col + 1 < n ? order_pair(scores[col + 1]) : 0u;
    w[q] = (lo & 0xFFFFu) | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// The block's largest v (int or uint32_t; every thread), through one barrier; clears the
// histogram on the way (the first pass's job in both forms).
template <class T>
__device__ __forceinline__ T block_max(RowSmem& sm, T v) {
  sm.hist[threadIdx.x] = 0;
  const T m = __reduce_max_sync(0xFFFFFFFFu, v);
  if ((threadIdx.x & 31) == 0) sm.warp_value[threadIdx.x >> 5] = uint32_t(m);
  __syncthreads();
  T r = std::is_signed_v<T> ? m : T(0);  // 0 is the least unsigned key; signed rows can be all negative
#pragma unroll
  for (int w = 0; w < kWarps; ++w) r = max(r, T(sm.warp_value[w]));
  return r;
}

// Orders the row in place and returns its largest key (every thread); clears the histogram.
__device__ __forceinline__ uint32_t order_row(RowSmem& sm, const uint16_t* scores, int n) {
  uint32_t m2 = 0;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int c = chunk_of(j);
    const uint4 v = ordered_chunk(sm, scores, c, n);
    sm.keys[c] = v;
    m2 = max_u16x2(m2, max_u16x2(max_u16x2(v.x, v.y), max_u16x2(v.z, v.w)));
  }
  return block_max(sm, max(m2 & 0xFFFFu, m2 >> 16));
}

// The row's largest score as its bits read as a signed 16-bit integer (every thread), without
// ordering the row: the copy stays as it is, and a chunk the copy does not hold whole is written
// with -0 (0x8000, below every positive value) past n. Clears the histogram.
__device__ __forceinline__ int raw_row_max(RowSmem& sm, const uint16_t* scores, int n) {
  uint32_t m2 = kSignBits;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int c = chunk_of(j);
    uint4 v;
    if (8 * c + 8 <= n) {
      v = sm.keys[c];
    } else {
      uint32_t w[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int col = 8 * c + 2 * q;
        w[q] = (col < n ? uint32_t(scores[col]) : 0x8000u) |
               (col + 1 < n ? uint32_t(scores[col + 1]) << 16 : 0x80000000u);
      }
      v = make_uint4(w[0], w[1], w[2], w[3]);
      sm.keys[c] = v;
    }
    m2 = max_s16x2(m2, max_s16x2(max_s16x2(v.x, v.y), max_s16x2(v.z, v.w)));
  }
  return block_max(sm, max(int(m2 << 16) >> 16, int(m2) >> 16));
}

// hist[bin(key)] += 1 for every key with take(key); a barrier after.
template <class Bin, class Take>
__device__ __forceinline__ void count_keys(RowSmem& sm, Bin bin, Take take) {
  const uint32_t hist = uint32_t(__cvta_generic_to_shared(sm.hist));
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const uint4 v = sm.keys[chunk_of(j)];
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t lo = w[q] & 0xFFFFu, hi = w[q] >> 16;
      count_if(hist, bin(lo), take(lo));
      count_if(hist, bin(hi), take(hi));
    }
  }
  __syncthreads();
}

// hist[key - base] += 1 for the keys in the window, hist[-1] (sm.under) for the others: each key
// clamped from below to base - 1 (a packed max a pair) and its bin's address one shift-add from
// the key itself, no predicate. kRaw: the row holds raw bits (signed order, base >= 1).
template <bool kRaw>
__device__ __forceinline__ void count_window(RowSmem& sm, uint32_t base) {
  const uint32_t at = uint32_t(__cvta_generic_to_shared(sm.hist)) - 4u * base;  // hist[key - base] is at + 4 key
  const uint32_t floor2 = (base - 1u) * 0x10001u;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const uint4 v = sm.keys[chunk_of(j)];
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t c = kRaw ? max_s16x2(w[q], floor2) : max_u16x2(w[q], floor2);
      asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(at + 4u * (c & 0xFFFFu)) : "memory");
      asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(at + 4u * (c >> 16)) : "memory");
    }
  }
  __syncthreads();
}

// Warp 0 finds the bin, from the top, that holds the remaining-th counted key, and how many
// counted keys lie above it; kBins when the counts sum to less. Clears the histogram for the next
// pass; a barrier after.
__device__ __forceinline__ void find_bin(RowSmem& sm, int remaining) {
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    const int top = kBins - 1 - 8 * lane;  // the lane's bins top .. top - 7
    const int4 a = reinterpret_cast<const int4*>(sm.hist)[top / 4];
    const int4 b = reinterpret_cast<const int4*>(sm.hist)[top / 4 - 1];
    const int c[8] = {a.w, a.z, a.y, a.x, b.w, b.z, b.y, b.x};
    int sum = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) sum += c[i];
    int incl = sum;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int o = __shfl_up_sync(0xFFFFFFFFu, incl, d);
      if (lane >= d) incl += o;
    }
    const int above = incl - sum;
    if (lane == 31 && incl < remaining) sm.found_bin = kBins;
    if (above < remaining && incl >= remaining) {
      int cum = above, at = -1;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        if (at < 0 && cum + c[i] >= remaining) at = i;
        if (at < 0) cum += c[i];
      }
      sm.found_bin = uint32_t(top - at);
      sm.found_above = cum;
    }
    __syncwarp();
    reinterpret_cast<int4*>(sm.hist)[lane * 2] = make_int4(0, 0, 0, 0);
    reinterpret_cast<int4*>(sm.hist)[lane * 2 + 1] = make_int4(0, 0, 0, 0);
  }
  __syncthreads();
}

// The bin of the k-th largest key among the kBins values from base up (the key is base + bin),
// or kBins when it lies lower, by one count of the window; a barrier after.
template <bool kRaw>
__device__ __forceinline__ uint32_t window_bin(RowSmem& sm, uint32_t base, int k) {
  count_window<kRaw>(sm, base);
  find_bin(sm, k);
  return sm.found_bin;
}

// The k-th largest key of the row (n > k keys; m: the largest).
__device__ __forceinline__ uint32_t kth_key(RowSmem& sm, uint32_t m, int k) {
  const uint32_t base = m > uint32_t(kBins) ? m - uint32_t(kBins - 1) : 1u;  // never the padding's 0
  const uint32_t bin = window_bin<false>(sm, base, k);
  if (bin < kBins) return base + bin;
  // Under the window: the high byte, then the low byte among the keys with that high byte.
  count_keys(sm, [](uint32_t key) { return key >> 8; }, [](uint32_t key) { return key != 0; });
  find_bin(sm, k);
  const uint32_t high = sm.found_bin;
  const int remaining = k - sm.found_above;
  count_keys(sm, [](uint32_t key) { return key & 0xFFu; },
             [&](uint32_t key) { return key != 0 && (key >> 8) == high; });
  find_bin(sm, remaining);
  return (high << 8) | sm.found_bin;
}

// Bits of the thread's columns (bit i: column 64 t + i) whose keys are > T and == T. About 3 % of
// a row's keys are >= T, so a first look (a packed max a chunk) finds the chunks that hold any,
// and only those are compared key by key (run 135's profile: comparing every key was a third of
// the kernel's instructions).
// kRaw: the row holds raw bits and T is a positive value's (raw_row_max).
template <bool kRaw>
__device__ __forceinline__ void pick_masks(const RowSmem& sm, uint32_t T, uint64_t& greater, uint64_t& tie) {
  if constexpr (kRaw) T ^= 0x8000u;
  uint32_t hit = 0;  // bit p: the thread's chunk p holds a key >= T
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const uint4 v = sm.keys[chunk_of(j)];
    const uint32_t m = kRaw ? max_s16x2(max_s16x2(v.x, v.y), max_s16x2(v.z, v.w)) ^ kSignBits
                            : max_u16x2(max_u16x2(v.x, v.y), max_u16x2(v.z, v.w));
    hit |= uint32_t(m >= (T << 16) || (m & 0xFFFFu) >= T) << ((j + threadIdx.x) & (kPer - 1));
  }
  greater = 0;
  tie = 0;
  for (; hit != 0; hit &= hit - 1) {
    const int p = __ffs(hit) - 1;
    const uint4 v = sm.keys[kPer * threadIdx.x + p];
    const uint32_t flip = kRaw ? kSignBits : 0u;
    const uint32_t w[4] = {v.x ^ flip, v.y ^ flip, v.z ^ flip, v.w ^ flip};
    uint32_t g = 0, e = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t lo = w[q] & 0xFFFFu, hi = w[q] >> 16;
      g |= uint32_t(lo > T) << (2 * q) | uint32_t(hi > T) << (2 * q + 1);
      e |= uint32_t(lo == T) << (2 * q) | uint32_t(hi == T) << (2 * q + 1);
    }
    greater |= uint64_t(g) << (8 * p);
    tie |= uint64_t(e) << (8 * p);
  }
}

// Exclusive scan of one value a thread over the block; total: the sum of all.
__device__ __forceinline__ int block_exclusive_sum(RowSmem& sm, int v, int& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int incl = v;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int o = __shfl_up_sync(0xFFFFFFFFu, incl, d);
    if (lane >= d) incl += o;
  }
  if (lane == 31) sm.warp_value[warp] = uint32_t(incl);
  __syncthreads();
  int before = 0;
  total = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const int s = int(sm.warp_value[w]);
    before += w < warp ? s : 0;
    total += s;
  }
  return before + incl - v;
}

__global__ void __launch_bounds__(kThreads, 5)
    small_topk_kernel(const uint16_t* scores, const int32_t* blocks, const int32_t* valid_len, int k, int32_t* out) {
  __shared__ __align__(128) RowSmem sm;
  const int row = blockIdx.x;
  const int n = valid_len[row];
  const PageTransform map{blocks};
  int32_t* dst = out + int64_t(row) * k;
  if (n <= k) return take_all<kThreads>(map, row, n, k, kPositionPad, dst);
  const uint16_t* src = scores + int64_t(row) * kCandidateWidth;
  if (threadIdx.x == 0) {
    mbar_init(&sm.bar, 1);
    fetch_row(sm, src, blocks + int64_t(row) * kTopkBlocks, n);
  }
  __syncthreads();  // the barrier is initialised before anyone waits on it
  mbar_wait(&sm.bar, 0);
  // Most rows: the row's largest score is positive and the k-th lies in the window of the 256
  // raw values under it (all positive), so the row is never ordered. Else the ordered passes.
  const int top = raw_row_max(sm, src, n);
  bool raw = false;
  uint32_t T = 0;
  if (top >= kBins) {
    const uint32_t base = uint32_t(top - (kBins - 1));  // >= 1: +0 and every negative fall below
    const uint32_t bin = window_bin<true>(sm, base, k);
    raw = bin < kBins;
    T = base + bin;
  }
  if (!raw) T = kth_key(sm, order_row(sm, src, n), k);
  uint64_t greater, tie;
  if (raw)
    pick_masks<true>(sm, T, greater, tie);
  else
    pick_masks<false>(sm, T, greater, tie);
  const int gt = __popcll(greater), eq = __popcll(tie);
  // Both counts in one scan (each total <= 16384 fits 16 bits); the ties go in column order.
  int total;
  const int before = block_exclusive_sum(sm, (gt << 16) | eq, total);
  const int ties_wanted = k - (total >> 16), ties_before = before & 0xFFFF;
  const int my_ties = min(max(ties_wanted - ties_before, 0), eq);
  if (my_ties < eq) tie = lowest_bits(tie, my_ties);
  const uint64_t take = greater | tie;
  const int first = 64 * threadIdx.x;
  int slot = (before >> 16) + min(ties_before, ties_wanted);
  slot = write_picks(uint32_t(take), first, map, row, sm.table, dst, slot);
  write_picks(uint32_t(take >> 32), first + 32, map, row, sm.table, dst, slot);
}

}  // namespace

void launch_small_topk(const uint16_t* scores, const int32_t* blocks, const int32_t* valid_len, int nrows,
                       int k, int32_t* out) {
  if (nrows == 0) return;
  small_topk_kernel<<<nrows, kThreads>>>(scores, blocks, valid_len, k, out);
  DSA_LAUNCH_CHECK("small_topk_kernel");
}

}  // namespace dsa::gpu
