#include "gpu/common/check.cuh"
#include "gpu/small_topk/small_topk.cuh"
#include "gpu/topk/radix_topk.cuh"
#include "core/constants.hpp"

namespace dsa::gpu {
namespace {

struct Bf16Rows {
  const uint16_t* scores;
  const int32_t* valid_len;
  __device__ int len(int row) const { return valid_len[row]; }
  __device__ uint32_t key(int row, int c) const { return order_bf16(scores[int64_t(row) * kCandidateWidth + c]); }
};

struct PageTransform {
  const int32_t* blocks;
  __device__ int32_t id(int row, int c) const {
    return blocks[int64_t(row) * kTopkBlocks + c / kBlockSize] * kBlockSize + c % kBlockSize;
  }
};

}  // namespace

void launch_small_topk(const uint16_t* scores, const int32_t* blocks, const int32_t* valid_len, int nrows,
                       int k, int32_t* out) {
  if (nrows == 0) return;
  radix_topk_kernel<16><<<nrows, kTopkThreads>>>(Bf16Rows{scores, valid_len}, PageTransform{blocks}, k, -1, out);
  DSA_LAUNCH_CHECK("radix_topk_kernel<bf16>");
}

}  // namespace dsa::gpu
