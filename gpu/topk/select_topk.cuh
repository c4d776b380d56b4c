#pragma once
// Top-k of rows that fit in registers (n <= kPer * 512), one thread block per row (or a persistent
// block per SM slot that streams its rows: select_topk_stream_kernel below): thread t holds
// the keys of indices kPer t .. kPer t + kPer - 1. A radix select over those registers finds the
// k-th largest key T, 11 bits at a time from the top: each pass counts the keys that match the
// digits found so far into a 2048-bin shared histogram (plain shared atomics: on the H200 a warp's
// atomic costs the same 2.2 SM cycles whether its lanes hit one bin or 32, bench/micro), and one
// block scan over the bins, largest first, finds the bin that holds the k-th key. When that bin's
// keys are exactly the ones still needed, the search stops there (no ties to break). Then one
// block scan places every thread's picks: all keys > T and the first k - #greater keys == T in
// index order (the reference's tie rule), written in index order (the ascending write). Same keys
// and output as radix_topk_kernel, which stays for longer rows. Keys are ordered integers
// (order_f32 in radix_topk.cuh); level two's bf16 rows have their own kernel (gpu/small_topk).
//
// Instructions per key are what this kernel spends (bench/results/h200.md, runs 45-51): the
// passes are unrolled at compile time, the first counts every key unconditionally, later ones
// through a predicated shared reduction (no branch per key); the placement keeps a bit mask of
// each thread's picks so that only those are visited, and a page-transform table is staged in
// shared memory while the passes run. When no tie is split (every key equal to T is taken: the
// usual case for fp32 keys, and every row whose search stopped on an exact bin), the placement
// compares each key once (key >= T, or > T) instead of twice (run 124: block_topk 9 %
// faster, the own top-k and mask_topk 2 %).
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "gpu/common/check.cuh"
#include "gpu/common/mbarrier.cuh"
#include "gpu/topk/id_maps.cuh"
#include "gpu/topk/radix_topk.cuh"

namespace dsa::gpu {

constexpr int kSelectThreads = 512;
constexpr int kDigitBits = 11;
constexpr int kSelectBins = 1 << kDigitBits;
static_assert(kSelectBins == 4 * kSelectThreads, "each thread scans four bins");

struct SelectState {
  uint32_t prefix;  // the digits of T found so far
  int remaining;    // how many keys with those digits are still to be taken
  int bin_count;    // how many keys share the digits found by the last pass
};

// hist[bin] += 1 where `take`, without a branch (a predicated shared reduction).
__device__ __forceinline__ void count_if(uint32_t hist_addr, uint32_t bin, bool take) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %2, 0;\n\t@p red.shared.add.u32 [%0], %1;\n\t}" ::"r"(hist_addr + 4 * bin),
      "r"(1), "r"(uint32_t(take))
      : "memory");
}

// The bin of the k-th key among this pass's counts: thread t scans bins 2047 - 4t down to
// 2044 - 4t, a block scan counts the keys above them. Bin 0 is never chosen by count, only when no
// bin above reaches `remaining`: keys past a row's end are 0 and land in it, so its count is not
// trusted.
template <class Scan>
__device__ __forceinline__ SelectState find_bin(const int* hist, SelectState s, int shift,
                                                typename Scan::TempStorage& scan_storage, SelectState& shared) {
  const int tid = threadIdx.x;
  const int4 c4 = reinterpret_cast<const int4*>(hist)[kSelectThreads - 1 - tid];
  const int c[4] = {c4.w, c4.z, c4.y, c4.x};
  const int sum = c4.x + c4.y + c4.z + c4.w;
  int above;
  Scan(scan_storage).ExclusiveSum(sum, above);
  if (above < s.remaining && (above + sum >= s.remaining || tid == kSelectThreads - 1)) {
    int cum = above;
    bool found = false;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int bin = kSelectBins - 1 - 4 * tid - i;
      if (!found && (bin == 0 || cum + c[i] >= s.remaining)) {
        shared = {s.prefix | (uint32_t(bin) << shift), s.remaining - cum, c[i]};
        found = true;
      }
      if (!found) cum += c[i];
    }
  }
  __syncthreads();
  return shared;
}

// One pass of the radix select: the digit of T at bits [kShift, kTop) among the keys that match
// `prefix` on the bits above kTop (all keys in the first pass).
template <int kBits, int kTop, int kShift, int kPer, class Scan>
__device__ __forceinline__ SelectState select_digit(const uint32_t (&key)[kPer], SelectState s, int* hist,
                                                    typename Scan::TempStorage& scan_storage, SelectState& shared) {
  reinterpret_cast<int4*>(hist)[threadIdx.x] = make_int4(0, 0, 0, 0);
  __syncthreads();
  if constexpr (kTop == kBits) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) atomicAdd(&hist[key[j] >> kShift], 1);
  } else {
    const uint32_t hist_addr = uint32_t(__cvta_generic_to_shared(hist));
    constexpr uint32_t kDigitMask = (1u << (kTop - kShift)) - 1;
#pragma unroll
    for (int j = 0; j < kPer; ++j)
      count_if(hist_addr, (key[j] >> kShift) & kDigitMask, ((key[j] ^ s.prefix) >> kTop) == 0);
  }
  __syncthreads();
  return find_bin<Scan>(hist, s, kShift, scan_storage, shared);
}

// The lowest `t` set bits of m (t <= popcount(m)).
__device__ __forceinline__ uint32_t lowest_bits(uint32_t m, int t) {
  return t == 0 ? 0u : m & ((2u << __fns(m, 0, t)) - 1u);
}
__device__ __forceinline__ uint64_t lowest_bits(uint64_t m, int t) {
  const uint32_t lo = uint32_t(m), hi = uint32_t(m >> 32);
  const int nlo = __popc(lo);
  return t <= nlo ? lowest_bits(lo, t) : (uint64_t(lowest_bits(hi, t - nlo)) << 32) | lo;
}

// Writes the map ids of the set bits of m (column base + bit) at dst[slot], dst[slot + 1]...
template <class Map>
__device__ __forceinline__ int write_picks(uint32_t m, int base, const Map& map, int row, const int32_t* table,
                                           int32_t* dst, int slot) {
  for (; m != 0; m &= m - 1) dst[slot++] = map.id(row, base + __ffs(m) - 1, table);
  return slot;
}

// The shared memory of one row's selection.
struct SelectSmem {
  typename cub::BlockScan<int, kSelectThreads>::TempStorage scan;
  alignas(16) int hist[kSelectBins];
  alignas(16) int32_t table[kTopkBlocks];  // a staged map's table
  SelectState state;
  uint32_t warp_extreme[kSelectThreads / 32];  // block_extreme's per-warp results
};

// What a selection reports besides its picks: the k-th largest key of each row it selected
// (kUsed), through picked(row, kth) on thread 0, and took_all(row) on thread 0 for a row of at
// most k keys. NoKth reports nothing.
struct NoKth {
  static constexpr bool kUsed = false;
  __device__ bool wanted() const { return false; }
  __device__ void picked(int, uint32_t) const {}
  __device__ void took_all(int) const {}
};

// The block's min (kMax false) or max of one value a thread: a warp reduction, then each warp's
// result through shared memory behind one barrier; every thread gets it.
template <bool kMax>
__device__ __forceinline__ uint32_t block_extreme(uint32_t v, SelectSmem& sm) {
  v = kMax ? __reduce_max_sync(0xFFFFFFFFu, v) : __reduce_min_sync(0xFFFFFFFFu, v);
  if ((threadIdx.x & 31) == 0) sm.warp_extreme[threadIdx.x >> 5] = v;
  __syncthreads();
#pragma unroll
  for (int w = 0; w < kSelectThreads / 32; ++w) v = kMax ? max(v, sm.warp_extreme[w]) : min(v, sm.warp_extreme[w]);
  return v;
}

// The k-th largest key of a selected row: T itself, unless the search stopped on an exact bin
// (then T is one below that bin and the k-th key is the smallest key above T).
template <int kPer>
__device__ __forceinline__ uint32_t kth_key(const uint32_t (&key)[kPer], uint32_t T, bool exact, SelectSmem& sm) {
  if (!exact) return T;
  uint32_t m = 0xFFFFFFFFu;
#pragma unroll
  for (int j = 0; j < kPer; ++j) m = min(m, key[j] > T ? key[j] : 0xFFFFFFFFu);
  return block_extreme<false>(m, sm);
}

// Bit j of m moved to bit (j + r) % width (r in [0, width)).
__device__ __forceinline__ uint32_t rotate_bits(uint32_t m, int r) { return __funnelshift_l(m, m, r); }
__device__ __forceinline__ uint64_t rotate_bits(uint64_t m, int r) { return r == 0 ? m : (m << r) | (m >> (64 - r)); }

// Where the k largest keys of a row held in the block's registers end (n > k): T, the largest
// key with #(keys >= T) >= k, unless the search stopped on a bin that holds exactly the keys still
// needed (exact: every key >= the bin's smallest value is taken and none is a tie, T = that value
// - 1); all_ties: every key equal to T is taken (then one comparison a key places the picks).
struct Cut {
  uint32_t T;
  bool exact, all_ties;
};

template <int kBits, int kPer>
__device__ __forceinline__ Cut find_cut(const uint32_t (&key)[kPer], int k, SelectSmem& sm) {
  static_assert(kBits > kDigitBits && kBits <= 3 * kDigitBits && kPer <= 64, "two or three passes, 64 keys a thread");
  using Scan = cub::BlockScan<int, kSelectThreads>;
  constexpr int kTop2 = kBits - kDigitBits, kTop3 = kTop2 > kDigitBits ? kTop2 - kDigitBits : 0;
  SelectState s = select_digit<kBits, kBits, kTop2, kPer, Scan>(key, SelectState{0u, k, 0}, sm.hist, sm.scan, sm.state);
  bool exact = s.bin_count == s.remaining && s.prefix != 0;
  if (!exact) {
    s = select_digit<kBits, kTop2, kTop3, kPer, Scan>(key, s, sm.hist, sm.scan, sm.state);
    if constexpr (kTop3 > 0) {
      exact = s.bin_count == s.remaining && s.prefix != 0;
      if (!exact) s = select_digit<kBits, kTop3, 0, kPer, Scan>(key, s, sm.hist, sm.scan, sm.state);
    }
  }
  const uint32_t T = exact ? s.prefix - 1 : s.prefix;
  // The last pass's bin is T itself and its count the number of such keys (not for T = 0, whose
  // count holds the padding). 32-bit keys only: bf16 rows split ties at nearly every cut (run 124).
  const bool all_ties = kBits == 32 && (exact || (s.bin_count == s.remaining && T != 0));
  return {T, exact, all_ties};
}

// The top-k of one row whose keys (ordered integers, 0 past n) sit in the block's registers,
// thread t holding columns first = kPer t ... kPer t + kPer - 1, key[j] column first + (j + rot) %
// kPer (rot: how the loads were rotated to spare shared-memory banks; 0 in order); n > k. Ids go
// to dst in column order.
template <int kBits, int kPer, class Map, class Kth>
__device__ __forceinline__ void select_row(const uint32_t (&key)[kPer], int row, int n, int k, int first,
                                           const Map& map, const Kth& kth, int32_t* dst, SelectSmem& sm,
                                           int rot = 0) {
  using Scan = cub::BlockScan<int, kSelectThreads>;
  using Mask = std::conditional_t<(kPer > 32), uint64_t, uint32_t>;
  const Cut cut = find_cut<kBits>(key, k, sm);
  const uint32_t T = cut.T;
  const bool exact = cut.exact, all_ties = cut.all_ties;
  if constexpr (Kth::kUsed) {
    // kth_key costs a pass over the keys and a barrier on exact rows: only when the report wants it.
    const uint32_t kth_value = kth.wanted() ? kth_key(key, T, exact, sm) : T;
    if (threadIdx.x == 0) kth.picked(row, kth_value);
  }
  // Placement: bit c of `greater` / `tie` says column first + c is > T / == T (ties only below n).
  const int valid = min(max(n - first, 0), kPer);
  Mask greater = 0, tie = 0;
  if (all_ties) {  // one comparison a key: the picks are the keys >= least (no tie to split)
    const uint32_t least = exact ? T + 1 : T;
#pragma unroll
    for (int j = 0; j < kPer; ++j) greater |= Mask(key[j] >= least) << j;
  } else {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      greater |= Mask(key[j] > T) << j;
      tie |= Mask(key[j] == T) << j;
    }
  }
  greater = rotate_bits(greater, rot);
  tie = rotate_bits(tie, rot);
  if (valid < kPer) tie &= (Mask(1) << valid) - 1;
  const int gt = __popcll(uint64_t(greater)), eq = __popcll(uint64_t(tie));
  // One scan of both counts (each total <= n <= 32768 fits 16 bits); the ties go in column order.
  int before, total;
  Scan(sm.scan).ExclusiveSum((gt << 16) | eq, before, total);
  const int ties_wanted = k - (total >> 16), ties_before = before & 0xFFFF;
  const int my_ties = min(max(ties_wanted - ties_before, 0), eq);
  if (my_ties < eq) tie = lowest_bits(tie, my_ties);
  const Mask take = greater | tie;
  int slot = (before >> 16) + min(ties_before, ties_wanted);
  if constexpr (Map::kStaged) {
    cp_async_wait<0>();
    __syncthreads();
  }
  slot = write_picks(uint32_t(take), first, map, row, sm.table, dst, slot);
  if constexpr (kPer > 32) write_picks(uint32_t(uint64_t(take) >> 32), first + 32, map, row, sm.table, dst, slot);
}

// Src: int len(int row) const; void load(int row, int first, int n, uint32_t (&key)[kPer]) const
// (keys of indices first.., 0 from n on); Map: id_maps.cuh; Kth: NoKth or another report. Rows of
// 32 keys a thread run two blocks an SM (64 registers), so one row's loads overlap the other's
// passes.
template <int kBits, int kPer, class Src, class Map, class Kth = NoKth>
__global__ void __launch_bounds__(kSelectThreads, kPer <= 32 ? 2 : 1)
    select_topk_kernel(Src src, Map map, int k, int32_t pad, int32_t* out, Kth kth = Kth{}) {
  __shared__ SelectSmem sm;
  const int row = blockIdx.x;
  const int n = src.len(row);
  int32_t* dst = out + int64_t(row) * k;
  if (n <= k) {
    if (threadIdx.x == 0) kth.took_all(row);
    return take_all<kSelectThreads>(map, row, n, k, pad, dst);
  }
  map.stage(row, sm.table);
  const int first = threadIdx.x * kPer;
  uint32_t key[kPer];
  src.load(row, first, n, key);
  select_row<kBits, kPer>(key, row, n, k, first, map, kth, dst, sm);
}

// Rows stored contiguously, one persistent block per SM slot: while the block selects one row
// from its registers, a bulk copy (cp.async.bulk + mbarrier) brings its next row into shared
// memory, so a row's HBM read overlaps the passes over the previous one (the loads of a plain
// launch stall every warp of a block at once, and one or two blocks an SM do not hide that).
// Src, besides len(): const void* row_data(int row); unsigned row_bytes(int n) (a multiple of 16,
// at most kBufferBytes); int keys_from(const void* buf, int first, int n, uint32_t (&key)[kPer])
// (keys of columns first.. from the copied row, 0 from n on; returns rot: key[j] holds column
// first + (j + rot) % kPer, select_row's rotation); static kBufferBytes.
constexpr unsigned kBulkChunk = 16384;  // bytes per bulk copy

// A report that also wants the keys of the picks (level one's, for the own top-k's narrowing):
// bool wants_pick_keys() const; void store_pick_keys(const Src&, int row, const int32_t* picks)
// const, called by every thread of the block once the row's picks are written.
template <class K, class = void>
struct HasPickKeys : std::false_type {};
template <class K>
struct HasPickKeys<K, std::void_t<decltype(std::declval<const K&>().wants_pick_keys())>> : std::true_type {};

template <int kBits, int kPer, int kMinBlocks, class Src, class Map, class Kth>
__global__ void __launch_bounds__(kSelectThreads, kMinBlocks)
    select_topk_stream_kernel(Src src, Map map, Kth kth, int nrows, int k, int32_t pad, int32_t* out) {
  extern __shared__ __align__(128) unsigned char stream_buffer[];
  __shared__ SelectSmem sm;
  __shared__ uint64_t bar;
  // Thread 0 starts the copy of row r when r will be selected from keys (more than k of them).
  auto fetch = [&](int r) {
    if (r >= nrows) return;
    const int n = src.len(r);
    if (n <= k) return;
    const unsigned bytes = src.row_bytes(n);
    const char* from = static_cast<const char*>(src.row_data(r));
    mbar_expect(&bar, bytes);
    for (unsigned off = 0; off < bytes; off += kBulkChunk)
      bulk_copy(stream_buffer + off, from + off, min(kBulkChunk, bytes - off), &bar);
  };
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    fetch(blockIdx.x);
  }
  __syncthreads();
  unsigned parity = 0;
  const int first = threadIdx.x * kPer;
  for (int row = blockIdx.x; row < nrows; row += gridDim.x) {
    const int n = src.len(row);
    int32_t* dst = out + int64_t(row) * k;
    if (n <= k) {  // no copy was started for this row: the buffer is free
      if (threadIdx.x == 0) {
        fetch(row + gridDim.x);
        kth.took_all(row);
      }
      take_all<kSelectThreads>(map, row, n, k, pad, dst);
      continue;
    }
    mbar_wait(&bar, parity);
    parity ^= 1;
    uint32_t key[kPer];
    const int rot = src.keys_from(stream_buffer, first, n, key);
    __syncthreads();  // every thread holds its keys and is done with the last row's table
    if (threadIdx.x == 0) fetch(row + gridDim.x);
    map.stage(row, sm.table);
    select_row<kBits, kPer>(key, row, n, k, first, map, kth, dst, sm, rot);
    if constexpr (HasPickKeys<Kth>::value) {
      if (kth.wants_pick_keys()) {
        __syncthreads();  // every pick of the row is in dst
        kth.store_pick_keys(src, row, dst);
      }
    }
  }
}

// kMinBlocks blocks an SM, each with Src::kBufferBytes of dynamic shared memory for the row copy.
// name: the launch check's name for this use.
template <int kBits, int kPer, int kMinBlocks, class Src, class Map, class Kth = NoKth>
void launch_select_stream(const char* name, const Src& src, const Map& map, int nrows, int k, int32_t pad,
                          int32_t* out, const Kth& kth = Kth{}) {
  auto kernel = select_topk_stream_kernel<kBits, kPer, kMinBlocks, Src, Map, Kth>;
  const int sms = current_device_sms();
  DSA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Src::kBufferBytes));
  kernel<<<std::min(nrows, kMinBlocks * sms), kSelectThreads, Src::kBufferBytes>>>(src, map, kth, nrows, k, pad, out);
  DSA_LAUNCH_CHECK(name);
}

}  // namespace dsa::gpu
