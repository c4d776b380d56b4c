#include "gpu/topk/source_select.cuh"

#include "core/constants.hpp"
#include "gpu/common/check.cuh"
#include "gpu/dense_logits/wide_row.cuh"
#include "gpu/topk/select_topk.cuh"
#include "gpu/topk/topk.cuh"
#include "gpu/topk/topk_rows.cuh"

namespace dsa::gpu {
namespace {

// Level one's 2048-th key where the own check reads it (k = 2048: out set), else nothing.
struct LevelKth {
  static constexpr bool kUsed = true;
  uint32_t* out;
  __device__ bool wanted() const { return out != nullptr; }
  __device__ void picked(int row, uint32_t kth) const {
    if (out != nullptr) out[row] = kth;
  }
  __device__ void took_all(int row) const {
    if (out != nullptr) out[row] = 0u;
  }
};

// Columns first.. of a row of n block keys from global memory, 0 from n on. Reads stop at the
// 16-byte chunk that holds column n - 1 (ld % 4 == 0: inside the row), never past the row.
template <int kPer>
__device__ __forceinline__ void load_block_keys(const float* row, int first, int n, uint32_t (&key)[kPer]) {
  const float4* p = reinterpret_cast<const float4*>(row + first);
  const int lim = n - first;
#pragma unroll
  for (int q = 0; q < kPer / 4; ++q) {
    const float4 v = 4 * q < lim ? p[q] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float f[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) key[4 * q + e] = 4 * q + e < lim ? order_f32(f[e]) : 0u;
  }
}

// Level one of one row: its block keys straight from global memory (no copy to overlap: one row
// a block), the published blocks to blocks[row].
__device__ __forceinline__ void select_blocks(const SourceSelectArgs& a, int row, SelectSmem& sm) {
  const BlockKeyRows src{a.keys, a.ld_keys, a.len};
  const int n = src.len(row);
  int32_t* dst = a.blocks + int64_t(row) * kTopkBlocks;
  const LevelKth kth{a.level_kth};
  if (n <= kTopkBlocks) {
    if (threadIdx.x == 0) kth.took_all(row);
    return take_all<kSelectThreads>(Identity{}, row, n, kTopkBlocks, kBlockPad, dst);
  }
  constexpr int kPer = BlockKeyRows::kPer;
  const int first = threadIdx.x * kPer;
  uint32_t key[kPer];
  load_block_keys(a.keys + int64_t(row) * a.ld_keys, first, n, key);
  select_row<32, kPer>(key, row, n, kTopkBlocks, first, Identity{}, kth, dst, sm);
}

// The own top-k of one row over its published candidates (launch_own_topk's selection).
__device__ __forceinline__ void select_own(const SourceSelectArgs& a, int row, SelectSmem& sm) {
  const MaskRows src{a.dense, a.ld_dense, nullptr, a.blocks, a.valid_len};
  const PageTransform map{a.blocks};
  const OwnCheck check{a.len, a.level_kth, a.list, a.nrows, a.k};
  const int n = src.len(row);
  int32_t* dst = a.picks + int64_t(row) * a.k;
  if (n <= a.k) {
    if (threadIdx.x == 0) check.took_all(row);
    return take_all<kSelectThreads>(map, row, n, a.k, -1, dst);
  }
  map.stage(row, sm.table);
  const int first = threadIdx.x * 32;
  uint32_t key[32];
  src.load(row, first, n, key);
  select_row<32, 32>(key, row, n, a.k, first, map, check, dst, sm);
}

__global__ void __launch_bounds__(kSelectThreads, 1) source_select_kernel(SourceSelectArgs a) {
  __shared__ SelectSmem sm;
  const int row = blockIdx.x;
  if (a.wide_rows != nullptr && a.wide_rows[row] != 0) {
    score_wide_row(a.wide, row, threadIdx.x >> 5, kSelectThreads / 32);
    __syncthreads();  // the row's wide scores and block keys written before level one reads them
  }
  select_blocks(a, row, sm);
  __syncthreads();  // the published blocks written before the copy and the own top-k read them
  const int tail = a.tail_of != nullptr ? a.tail_of[row] : -1;
  if (tail >= 0) {
    const int4* from = reinterpret_cast<const int4*>(a.blocks + int64_t(row) * kTopkBlocks);
    int4* to = reinterpret_cast<int4*>(a.blocks + int64_t(a.nrows + tail) * kTopkBlocks);
    for (int i = threadIdx.x; i < kTopkBlocks / 4; i += kSelectThreads) to[i] = from[i];
  }
  select_own(a, row, sm);
}

}  // namespace

void launch_source_select(const SourceSelectArgs& a) {
  if (a.nrows == 0) return;
  static_assert(kCandidateWidth == 32 * kSelectThreads, "one row of candidates fills the block's registers");
  static_assert(kSourceSelectMaxLen / kBlockSize == BlockKeyRows::kPer * kSelectThreads, "level one in registers");
  source_select_kernel<<<a.nrows, kSelectThreads>>>(a);
  DSA_LAUNCH_CHECK("source_select_kernel");
  if (a.k >= kTopkBlocks) launch_own_full_pass(a.dense, a.ld_dense, a.len, a.nrows, a.k, a.picks, a.list);
}

}  // namespace dsa::gpu
