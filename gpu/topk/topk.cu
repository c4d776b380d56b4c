#include "gpu/common/check.cuh"
#include "gpu/topk/own_narrow.cuh"
#include "gpu/topk/radix_topk.cuh"
#include "gpu/topk/select_topk.cuh"
#include "gpu/topk/topk.cuh"
#include "gpu/topk/topk_rows.cuh"
#include "core/constants.hpp"

namespace dsa::gpu {
namespace {

// Level one's report where the radix kernel selected (rows past the registers): unknown, so the
// own top-k's check sends those rows to the full pass.
__global__ void unknown_kth_kernel(uint32_t* kth, int nrows) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < nrows) kth[row] = 0xFFFFFFFFu;
}

}  // namespace

void launch_topk_dense(const float* dense, int64_t ld, const int32_t* len, int nrows, int k, int32_t* out) {
  if (nrows == 0) return;
  radix_topk_kernel<32><<<nrows, kTopkThreads>>>(DenseRows{dense, ld, len}, Identity{}, k, -1, out);
  DSA_LAUNCH_CHECK("radix_topk_kernel<dense>");
}

void launch_own_topk(const float* dense, int64_t ld, const int32_t* len, int nrows, int k,
                     const uint32_t* level_kth, const int32_t* blocks, const int32_t* valid_len, int32_t* out,
                     int32_t* list, const uint32_t* pick_keys) {
  if (nrows == 0) return;
  if (pick_keys != nullptr && k < kTopkBlocks) {
    own_narrow_kernel<<<nrows, kSelectThreads>>>(
        OwnNarrowArgs{MaskRows{dense, ld, nullptr, blocks, valid_len}, len, pick_keys, k, out, list, nrows});
    DSA_LAUNCH_CHECK("own_narrow_kernel");
    return;
  }
  static_assert(kCandidateWidth == 32 * kSelectThreads, "one row of candidates fills the block's registers");
  select_topk_kernel<32, 32><<<nrows, kSelectThreads>>>(MaskRows{dense, ld, nullptr, blocks, valid_len},
                                                        PageTransform{blocks}, k, -1, out,
                                                        OwnCheck{len, level_kth, list, nrows, k});
  DSA_LAUNCH_CHECK("select_topk_kernel<own>");
  if (k >= kTopkBlocks) launch_own_full_pass(dense, ld, len, nrows, k, out, list);
}

void launch_own_full_pass(const float* dense, int64_t ld, const int32_t* len, int nrows, int k, int32_t* out,
                          const int32_t* list) {
  if (nrows == 0) return;
  // Every row gets a block; those the check passed exit at once and write nothing. No count comes
  // back to the host, so the step has no synchronisation here and can be captured in a graph.
  radix_topk_kernel<32><<<nrows, kTopkThreads>>>(DenseRowsListed{dense, ld, len, list, nrows}, Identity{}, k, -1,
                                                  out, list, nrows);
  DSA_LAUNCH_CHECK("radix_topk_kernel<dense rows>");
}

int own_topk_full_rows(const std::vector<int32_t>& list) {
  const int nrows = int(list.size());
  int n = 0;
  for (int32_t r : list) n += r != nrows;
  return n;
}

bool block_topk_in_registers(int max_len) {
  return (int64_t(max_len) + 7) / 8 <= int64_t(BlockKeyRows::kPer) * kSelectThreads;
}

void launch_block_topk(const float* keys, int64_t ld, const int32_t* len, int nrows, int max_len,
                       int32_t* blocks, uint32_t* kth, uint32_t* pick_keys) {
  if (nrows == 0) return;
  if (block_topk_in_registers(max_len)) {
    const BlockKeyRows src{keys, ld, len};
    constexpr int kPer = BlockKeyRows::kPer;
    const char* name = "select_topk_stream_kernel<blocks>";
    launch_select_stream<32, kPer, 1>(name, src, Identity{}, nrows, kTopkBlocks, kBlockPad, blocks,
                                      LevelOneReport{kth, pick_keys});
  } else {
    if (kth) {
      unknown_kth_kernel<<<(nrows + 255) / 256, 256>>>(kth, nrows);
      DSA_LAUNCH_CHECK("unknown_kth_kernel");
    }
    radix_topk_kernel<32><<<nrows, kTopkThreads>>>(BlockKeyRows{keys, ld, len}, Identity{}, kTopkBlocks,
                                                    kBlockPad, blocks);
    DSA_LAUNCH_CHECK("radix_topk_kernel<blocks>");
  }
}

void launch_topk_mask(const float* dense, int64_t ld, const int32_t* dense_row, const int32_t* blocks,
                      const int32_t* valid_len, int nrows, int k, int32_t* out) {
  if (nrows == 0) return;
  static_assert(kCandidateWidth == 32 * kSelectThreads, "one row of candidates fills the block's registers");
  select_topk_kernel<32, 32><<<nrows, kSelectThreads>>>(MaskRows{dense, ld, dense_row, blocks, valid_len},
                                                        PageTransform{blocks}, k, -1, out);
  DSA_LAUNCH_CHECK("select_topk_kernel<mask>");
}

}  // namespace dsa::gpu
