#pragma once
// The source's own top-k narrowed by level one's keys (launch_own_topk, k <= 2047). Of a row's
// 2048 published blocks only those whose key reaches the (k+1)-th largest published key can hold
// one of the row's k best positions (docs/semantics.md, "The own top-k lies in the published
// blocks"); with distinct keys they are k + 1 blocks, so the selection gathers 8 (k + 1) scores
// instead of 16384 and selects from 16 registers a thread instead of 32. Rows of at most 2048
// blocks, and rows with more than kNarrowBlocks such blocks (ties at that key), select from all
// their candidates as select_topk_kernel does.
#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "core/constants.hpp"
#include "gpu/topk/id_maps.cuh"
#include "gpu/topk/radix_topk.cuh"
#include "gpu/topk/select_topk.cuh"
#include "gpu/topk/topk_rows.cuh"

namespace dsa::gpu {

constexpr int kNarrowPer = 16;                                             // candidates a thread
constexpr int kNarrowBlocks = kNarrowPer * kSelectThreads / kBlockSize;  // 1024

struct OwnNarrowArgs {
  MaskRows src;               // the published candidates over the dense rows
  const int32_t* len;         // [rows] L
  const uint32_t* pick_keys;  // [rows][2048] the published blocks' keys (launch_block_topk)
  int k;
  int32_t* out;               // [rows][k]
  int32_t* list;              // [rows]: nrows (no row needs launch_own_full_pass below k = 2048)
  int nrows;
};

// The published blocks whose key is at least the (k+1)-th largest published key (*least), in
// table order (ascending ids), into sm.table; returns how many, or 0 when more than kNarrowBlocks
// (the same on every thread).
__device__ __forceinline__ int narrow_blocks(const OwnNarrowArgs& a, int row, SelectSmem& sm, uint32_t* least_out) {
  static_assert(kTopkBlocks == 4 * kSelectThreads, "four published blocks a thread");
  const uint4 kv = reinterpret_cast<const uint4*>(a.pick_keys + int64_t(row) * kTopkBlocks)[threadIdx.x];
  const uint32_t key[4] = {kv.x, kv.y, kv.z, kv.w};
  const Cut cut = find_cut<32>(key, a.k + 1, sm);
  const uint32_t least = kth_key(key, cut.T, cut.exact, sm);
  *least_out = least;
  int mine = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) mine += int(key[j] >= least);
  int slot, total;
  cub::BlockScan<int, kSelectThreads>(sm.scan).ExclusiveSum(mine, slot, total);
  if (total > kNarrowBlocks) return 0;
  const int4 ids = reinterpret_cast<const int4*>(a.src.blocks + int64_t(row) * kTopkBlocks)[threadIdx.x];
  const int id[4] = {ids.x, ids.y, ids.z, ids.w};
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (key[j] >= least) sm.table[slot++] = id[j];
  __syncthreads();
  return total;
}

// Thread t's candidates 16t.. of the narrowed row: the scores of its blocks 2t and 2t + 1 (every
// load first, block 0 standing in past m), 0 past the row's end and past the m blocks.
__device__ __forceinline__ void narrow_load(const OwnNarrowArgs& a, int row, int m, const SelectSmem& sm,
                                            uint32_t (&key)[kNarrowPer]) {
  const int L = a.len[row];
  int pos[2];
#pragma unroll
  for (int g = 0; g < 2; ++g) {
    const int b = 2 * int(threadIdx.x) + g;
    pos[g] = b < m ? sm.table[b] * kBlockSize : 0;
  }
  load_blocks<2>(a.src.dense + int64_t(row) * a.src.ld, [&](int g) { return pos[g]; },
                 [&](int g, int e) { return 2 * int(threadIdx.x) + g < m && pos[g] + e < L; }, key);
}

// One row a block, three blocks an SM (40 registers): 0.58 against 0.62-0.63 ms at two (run 162,
// chunk-256k, H100). The fallback, rare (ties at the cut) and select_topk_kernel<32, 32>'s work,
// spills at that count.
__global__ void __launch_bounds__(kSelectThreads, 3) own_narrow_kernel(OwnNarrowArgs a) {
  __shared__ SelectSmem sm;
  const int row = blockIdx.x, n = a.src.len(row);
  int32_t* dst = a.out + int64_t(row) * a.k;
  const PageTransform map{a.src.blocks};
  if (threadIdx.x == 0) a.list[row] = a.nrows;
  if (n <= a.k) return take_all<kSelectThreads>(map, row, n, a.k, -1, dst);
  const bool narrowed = (a.len[row] + kBlockSize - 1) / kBlockSize > kTopkBlocks;
  uint32_t least = 0;  // every block's scores read
  if (narrowed) {
    const int m = narrow_blocks(a, row, sm, &least);
    if (m > 0) {  // sm.table holds the m blocks: candidate c is position table[c / 8] * 8 + c % 8
      uint32_t key[kNarrowPer];
      narrow_load(a, row, m, sm, key);
      return select_row<32, kNarrowPer>(key, row, kBlockSize * m, a.k, kNarrowPer * int(threadIdx.x), map, NoKth{},
                                        dst, sm);
    }
  }
  map.stage(row, sm.table);
  uint32_t key[32];
  a.src.load(row, 32 * int(threadIdx.x), n, key);
  // Ties at the cut (more than kNarrowBlocks blocks reach it): a block below it holds no top-k
  // score (every score there is below the k + 1 blocks' maxima at or above it), and the dense
  // kernel may have left its scores unstored (dense_wgmma.cuh, "Stores skipped"): they rank last.
  if (narrowed) {
    const uint4 kv = reinterpret_cast<const uint4*>(a.pick_keys + int64_t(row) * kTopkBlocks)[threadIdx.x];
    const uint32_t bk[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
    for (int j = 0; j < 32; ++j)
      if (bk[j / 8] < least) key[j] = 0;
  }
  select_row<32, 32>(key, row, n, a.k, 32 * int(threadIdx.x), map, NoKth{}, dst, sm);
}

}  // namespace dsa::gpu
